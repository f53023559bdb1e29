//! `#[derive(DeriveOrdered)]` for `ordered-seaorm`. Not intended to be used directly:
//! depend on `ordered-seaorm`, which re-exports it.

use heck::ToUpperCamelCase;
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Ident, LitInt, LitStr};

/// Implements `ordered_seaorm::OrderedEntity` for the `Entity` of a SeaORM `Model`.
#[proc_macro_derive(DeriveOrdered, attributes(ordered))]
pub fn derive_ordered(input: TokenStream) -> TokenStream {
    derive_inner(input.into()).into()
}

const FORMAT: &str = "the correct format looks like `#[ordered(parent_table = \"playlists\", strategy = \"gapped\")]` on the Model, and `#[ordered(scope)]` / `#[ordered(position)]` on its fields";
const KEYS: &str = "parent_table, parent_key, version, strategy, spacing, max_len, precision, scale, policy, removal, unique, filter";

fn derive_inner(input: TokenStream2) -> TokenStream2 {
    let ast: DeriveInput = match syn::parse2(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    // SeaORM 2.0's `#[sea_orm::model]` copies the derives onto `ModelEx`: the impl
    // belongs to the Model alone
    if ast.ident == "ModelEx" {
        return TokenStream2::new();
    }
    match expand(&ast) {
        Ok(ts) => ts,
        Err(e) => e.to_compile_error(),
    }
}

#[derive(Default)]
struct Container {
    parent_table: Option<LitStr>,
    parent_key: Option<LitStr>,
    version: Option<LitStr>,
    strategy: Option<LitStr>,
    spacing: Option<LitInt>,
    max_len: Option<LitInt>,
    precision: Option<LitInt>,
    scale: Option<LitInt>,
    policy: Option<LitStr>,
    removal: Option<LitStr>,
    unique: Option<LitStr>,
    filter: Option<LitStr>,
}

fn once<T>(slot: &mut Option<T>, key: &Ident, v: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            key.span(),
            format!("duplicate `{key}`; give it once"),
        ));
    }
    *slot = Some(v);
    Ok(())
}

/// The key type of a key field, from its Rust type (`ordered_seaorm::KeyField`), spanned
/// on the type so that an unsupported one is reported there.
fn key_type(ty: &syn::Type) -> TokenStream2 {
    quote::quote_spanned!(syn::spanned::Spanned::span(ty)=> <#ty as ::ordered_seaorm::KeyField>::TYPE)
}

fn column_variant(field: &syn::Field) -> syn::Result<Ident> {
    // `#[sea_orm(enum_name = "...")]` overrides the variant name
    for attr in &field.attrs {
        if attr.path().is_ident("sea_orm") {
            let mut name = None;
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("enum_name") {
                    let s: LitStr = meta.value()?.parse()?;
                    name = Some(s.value());
                } else if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                }
                Ok(())
            });
            if let Some(n) = name {
                return Ok(Ident::new(&n, Span::call_site()));
            }
        }
    }
    let ident = field
        .ident
        .as_ref()
        .ok_or_else(|| syn::Error::new(Span::call_site(), "a named field"))?;
    let raw = ident.to_string();
    let name = raw.trim_start_matches("r#").to_upper_camel_case();
    Ok(format_ident!("{}", name))
}

fn is_primary_key(field: &syn::Field) -> bool {
    field.attrs.iter().any(|attr| {
        let mut pk = false;
        if attr.path().is_ident("sea_orm") {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("primary_key") {
                    pk = true;
                } else if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                }
                Ok(())
            });
        }
        pk
    })
}

fn expand(ast: &DeriveInput) -> syn::Result<TokenStream2> {
    if ast.ident != "Model" {
        return Err(syn::Error::new(
            ast.ident.span(),
            "#[derive(DeriveOrdered)] goes on the SeaORM `Model` struct (beside DeriveEntityModel)",
        ));
    }
    let Data::Struct(s) = &ast.data else {
        return Err(syn::Error::new(
            ast.ident.span(),
            "#[derive(DeriveOrdered)] needs a struct",
        ));
    };
    let Fields::Named(fields) = &s.fields else {
        return Err(syn::Error::new(
            ast.ident.span(),
            "#[derive(DeriveOrdered)] needs named fields",
        ));
    };
    let mut c = Container::default();
    for attr in &ast.attrs {
        if !attr.path().is_ident("ordered") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            let Some(key) = meta.path.get_ident().cloned() else {
                return Err(meta.error(format!("unknown attribute, expected one of: {KEYS}")));
            };
            let bad = |e: syn::Error, what: &str| {
                let mut err =
                    syn::Error::new(key.span(), format!("`{key}` takes {what}; {FORMAT}"));
                err.combine(e);
                err
            };
            let value = meta.value().map_err(|e| bad(e, "a value"))?;
            match key.to_string().as_str() {
                "parent_table" => once(
                    &mut c.parent_table,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "parent_key" => once(
                    &mut c.parent_key,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "version" => once(
                    &mut c.version,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "strategy" => once(
                    &mut c.strategy,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "spacing" => once(
                    &mut c.spacing,
                    &key,
                    value.parse().map_err(|e| bad(e, "an integer"))?,
                ),
                "max_len" => once(
                    &mut c.max_len,
                    &key,
                    value.parse().map_err(|e| bad(e, "an integer"))?,
                ),
                "precision" => once(
                    &mut c.precision,
                    &key,
                    value.parse().map_err(|e| bad(e, "an integer"))?,
                ),
                "scale" => once(
                    &mut c.scale,
                    &key,
                    value.parse().map_err(|e| bad(e, "an integer"))?,
                ),
                "policy" => once(
                    &mut c.policy,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "removal" => once(
                    &mut c.removal,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "filter" => once(
                    &mut c.filter,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                "unique" => once(
                    &mut c.unique,
                    &key,
                    value.parse().map_err(|e| bad(e, "a string literal"))?,
                ),
                _ => Err(syn::Error::new(
                    key.span(),
                    format!("unknown attribute `{key}`, expected one of: {KEYS}"),
                )),
            }
        })?;
    }
    // every `#[ordered(scope)]` field, in field order: the first names the parent row,
    // the others split its lists (cards per `(board_id, status)`)
    let mut scopes: Vec<(Ident, syn::Type)> = Vec::new();
    let mut position: Option<(Ident, syn::Type)> = None;
    let mut keys: Vec<(Ident, syn::Type)> = Vec::new();
    for f in &fields.named {
        if is_primary_key(f) {
            keys.push((column_variant(f)?, f.ty.clone()));
        }
        for attr in &f.attrs {
            if !attr.path().is_ident("ordered") {
                continue;
            }
            attr.parse_nested_meta(|meta| {
                let Some(key) = meta.path.get_ident().cloned() else {
                    return Err(meta.error("expected `scope` or `position`"));
                };
                match key.to_string().as_str() {
                    "scope" => {
                        scopes.push((column_variant(f)?, f.ty.clone()));
                        Ok(())
                    }
                    "position" => once(&mut position, &key, (column_variant(f)?, f.ty.clone())),
                    _ => Err(syn::Error::new(
                        key.span(),
                        format!("unknown field marker `{key}`, expected `scope` or `position`"),
                    )),
                }
            })?;
        }
    }
    let need = |what: &str| syn::Error::new(ast.ident.span(), format!("missing {what}; {FORMAT}"));
    // no scope field: one global list, locked in the lock table
    let global = scopes.is_empty();
    if global && let Some(p) = &c.parent_table {
        return Err(syn::Error::new(
            p.span(),
            "a table with a parent table needs an `#[ordered(scope)]` field, the column that names the parent row; leave `parent_table` out for one global list",
        ));
    }
    let (scope, scope_ty) = scopes
        .first()
        .cloned()
        .unwrap_or_else(|| (Ident::new("Id", Span::call_site()), syn::parse_quote!(i64)));
    // a primary key of the scope field(s) and one more: an association table, keyed
    // by its list and its own key (`(playlist_id, track_id)`)
    let in_scope = |k: &Ident| scopes.iter().any(|(s, _)| s == k);
    let link = keys.len() > 1 && !global && keys.iter().any(|(k, _)| in_scope(k));
    let id = if link {
        let own: Vec<&(Ident, syn::Type)> = keys.iter().filter(|(k, _)| !in_scope(k)).collect();
        let every_scope_in_key = scopes.iter().all(|(s, _)| keys.iter().any(|(k, _)| k == s));
        match own.as_slice() {
            [one] if every_scope_in_key => Some((*one).clone()),
            _ => {
                return Err(syn::Error::new(
                    ast.ident.span(),
                    "an association table's primary key is its `#[ordered(scope)]` field(s) and one more field, its own key (`playlist_id` and `track_id`)",
                ));
            }
        }
    } else {
        keys.first().cloned()
    };
    let split = if global { &[][..] } else { &scopes[1..] };
    let split_n = split.len();
    let split_cols: Vec<&Ident> = split.iter().map(|(c, _)| c).collect();
    let split_types: Vec<TokenStream2> = split.iter().map(|(_, ty)| key_type(ty)).collect();
    let (position, pos_ty) = position.ok_or_else(|| need("an `#[ordered(position)]` field"))?;
    // no parent table: the lock table's row per collection holds the lock and version
    if c.parent_table.is_none()
        && let Some(v) = c.parent_key.as_ref().or(c.version.as_ref())
    {
        return Err(syn::Error::new(
            v.span(),
            "`parent_key` and `version` name columns of the parent table; without `parent_table` the collections are locked and versioned in the lock table (`ordered_locks`)",
        ));
    }
    // the entity's own table (`#[sea_orm(table_name = "...")]`): a parent table of
    // that name makes a tree
    let mut own_table = None;
    for attr in &ast.attrs {
        if attr.path().is_ident("sea_orm") {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("table_name") {
                    let v: LitStr = meta.value()?.parse()?;
                    own_table = Some(v.value());
                } else if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                }
                Ok(())
            });
        }
    }
    let is_option = |ty: &syn::Type| match ty {
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Option"),
        _ => false,
    };
    let nullable = !global && is_option(&scope_ty);
    let tree = c
        .parent_table
        .as_ref()
        .is_some_and(|p| own_table.as_deref() == Some(p.value().as_str()));
    if let Some(p) = c.parent_table.as_ref().filter(|_| tree) {
        if !nullable {
            return Err(syn::Error::new(
                p.span(),
                "a tree's parent column is nullable (NULL: the root list): make the scope field `Option<_>`",
            ));
        }
        if let Some(v) = c.parent_key.as_ref().or(c.version.as_ref()) {
            return Err(syn::Error::new(
                v.span(),
                "`parent_key` and `version` do not apply to a tree: its lists are locked and versioned in the lock table (`ordered_locks`), the root list included",
            ));
        }
    }
    let null_scope = match (nullable, tree) {
        (false, _) => quote!(::ordered_seaorm::NullScope::Refused),
        (true, false) => quote!(::ordered_seaorm::NullScope::Root),
        (true, true) => quote!(::ordered_seaorm::NullScope::Tree),
    };
    let locks_rows = c.parent_table.is_none() || tree;
    check_combination(
        ast,
        ordered_core::spec::Shape {
            global,
            nullable,
            tree,
            locks_rows,
            link,
            split: !split.is_empty(),
        },
    )?;
    let parent_table = match c.parent_table.as_ref().filter(|_| !tree) {
        None => quote!(::ordered_seaorm::__private::LOCK_TABLE),
        Some(p) => quote!(#p),
    };
    // the keys in the model's own types: an association row's is its list's and its
    // own; a table that is one list has `()` for its list
    // (a field of another type is refused by the `KeyField` check on that field; the
    // keys are then `Id`, so that it is the one error)
    let known = |ty: &syn::Type| {
        let syn::Type::Path(p) = ty else { return false };
        let Some(last) = p.path.segments.last() else {
            return false;
        };
        match last.ident.to_string().as_str() {
            "i64" | "i32" | "i16" | "String" | "Uuid" => true,
            "Option" => match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().all(|g| {
                    matches!(g, syn::GenericArgument::Type(syn::Type::Path(t))
                        if t.path.segments.last().is_some_and(|s| {
                            matches!(s.ident.to_string().as_str(), "i64" | "i32" | "i16" | "String" | "Uuid")
                        }))
                }),
                _ => false,
            },
            _ => false,
        }
    };
    let keys_of = |tys: Vec<&syn::Type>| -> TokenStream2 {
        if !tys.iter().all(|t| known(t)) {
            return quote!(::ordered_seaorm::Id);
        }
        match tys.as_slice() {
            [one] => quote!(#one),
            many => quote!((#(#many),*)),
        }
    };
    let key_ty = match (&id, link) {
        (Some((_, own)), true) => keys_of(scopes.iter().map(|(_, t)| t).chain([own]).collect()),
        (Some((_, ty)), false) => keys_of(vec![ty]),
        (None, _) => quote!(::ordered_seaorm::Id),
    };
    let scope_key_ty = match scopes.as_slice() {
        [] => quote!(()),
        many => keys_of(many.iter().map(|(_, t)| t).collect()),
    };
    let (id, id_type) = match id {
        Some((v, ty)) => (v, key_type(&ty)),
        None => (
            Ident::new("Id", Span::call_site()),
            quote!(::ordered_seaorm::KeyType::Int),
        ),
    };
    let parent_type = key_type(&scope_ty);
    let parent_key = match (&c.parent_key, locks_rows) {
        (_, true) => quote!("scope_key"),
        (Some(k), false) => quote!(#k),
        (None, false) => quote!("id"),
    };
    let version = match (&c.version, locks_rows) {
        (_, true) => quote!(::core::option::Option::Some("version")),
        (Some(v), false) => quote!(::core::option::Option::Some(#v)),
        (None, false) => quote!(::core::option::Option::None),
    };
    // a global list has no scope column: the trait's scope column is then the key's,
    // which insert_model leaves alone (it sets no scope for a global list)
    let scope_variant = if global { id.clone() } else { scope.clone() };
    let scope_name = if global {
        quote!("")
    } else {
        quote!(Column::#scope.as_str())
    };
    let filter = c.filter.map_or_else(
        || quote!(::core::option::Option::None),
        |v| quote!(::core::option::Option::Some(#v)),
    );
    let unique = c.unique.map_or_else(
        || quote!(::core::option::Option::None),
        |v| quote!(::core::option::Option::Some(#v)),
    );

    let strategy_name = c
        .strategy
        .as_ref()
        .map_or_else(|| "gapped".to_owned(), LitStr::value);
    let ty_name = match &pos_ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let (strategy_ty, strategy_expr, want) = match strategy_name.as_str() {
        "gapped" | "dense" if c.max_len.is_some() => {
            return Err(syn::Error::new(
                c.max_len.as_ref().map_or(Span::call_site(), LitInt::span),
                "`max_len` only applies to strategy = \"fractional\"",
            ));
        }
        "gapped" => {
            let spacing: i64 = match &c.spacing {
                Some(s) => s.base10_parse()?,
                None => 1024,
            };
            (
                quote!(::ordered_seaorm::Gapped),
                quote!(::ordered_seaorm::Gapped::new(#spacing)),
                "i64",
            )
        }
        "dense" => (
            quote!(::ordered_seaorm::Dense),
            quote!(::ordered_seaorm::Dense),
            "i64",
        ),
        "fractional" => {
            if let Some(s) = &c.spacing {
                return Err(syn::Error::new(
                    s.span(),
                    "`spacing` only applies to strategy = \"gapped\", \"numeric\" or \"decimal\"",
                ));
            }
            let max: usize = match &c.max_len {
                Some(m) => m.base10_parse()?,
                None => 64,
            };
            (
                quote!(::ordered_seaorm::Fractional),
                quote!(::ordered_seaorm::Fractional::new(::ordered_seaorm::__private::Alphabet::BASE62, #max)),
                "String",
            )
        }
        "numeric" | "decimal" if c.max_len.is_some() => {
            return Err(syn::Error::new(
                c.max_len.as_ref().map_or(Span::call_site(), LitInt::span),
                "`max_len` only applies to strategy = \"fractional\"",
            ));
        }
        "numeric" => {
            if let Some(p) = c.precision.as_ref().or(c.scale.as_ref()) {
                return Err(syn::Error::new(
                    p.span(),
                    "`precision` and `scale` only apply to strategy = \"decimal\"",
                ));
            }
            let spacing: f64 = match &c.spacing {
                Some(s) => s.base10_parse::<u32>()?.into(),
                None => 65_535.0,
            };
            (
                quote!(::ordered_seaorm::Numeric),
                quote!(::ordered_seaorm::Numeric::float(#spacing)),
                "f64",
            )
        }
        "decimal" => {
            let (Some(p), Some(sc)) = (&c.precision, &c.scale) else {
                return Err(syn::Error::new(
                    c.strategy.as_ref().map_or(Span::call_site(), LitStr::span),
                    "strategy = \"decimal\" needs the column's `precision` and `scale` (NUMERIC(precision, scale))",
                ));
            };
            let (precision, scale): (u8, u8) = (p.base10_parse()?, sc.base10_parse()?);
            if !(2..=15).contains(&precision) || scale >= precision {
                return Err(syn::Error::new(
                    p.span(),
                    "`precision` must be between 2 and 15 (every value then is exact as an f64) and `scale` below it",
                ));
            }
            let spacing = match &c.spacing {
                Some(s) => {
                    let v: f64 = s.base10_parse::<u32>()?.into();
                    quote!(.with_spacing(#v))
                }
                None => quote!(),
            };
            (
                quote!(::ordered_seaorm::Numeric),
                quote!(::ordered_seaorm::Numeric::decimal(#precision, #scale)#spacing),
                "Decimal",
            )
        }
        other => {
            let span = c.strategy.as_ref().map_or(Span::call_site(), LitStr::span);
            return Err(syn::Error::new(
                span,
                format!(
                    "unknown strategy \"{other}\", expected \"gapped\", \"dense\", \"fractional\", \"numeric\" or \"decimal\""
                ),
            ));
        }
    };
    if strategy_name != "decimal"
        && strategy_name != "numeric"
        && let Some(p) = c.precision.as_ref().or(c.scale.as_ref())
    {
        return Err(syn::Error::new(
            p.span(),
            "`precision` and `scale` only apply to strategy = \"decimal\"",
        ));
    }
    if want == "i64" && matches!(ty_name.as_str(), "i32" | "i16") {
        return Err(syn::Error::new_spanned(
            &pos_ty,
            "the position field must be `i64`: gapped positions step by 1024 and a relabel parks rows at -2^62, so a 32-bit position overflows (one list after about two million appends); make the column BIGINT (`OrderedTable::ensure_ordering` widens it) and the field `i64`",
        ));
    }
    // a decimal column's field is SeaORM's `Decimal` (rust_decimal) or `BigDecimal`
    if ty_name != want && !(want == "Decimal" && ty_name == "BigDecimal") {
        return Err(syn::Error::new_spanned(
            &pos_ty,
            format!("the position field must be `{want}` for strategy \"{strategy_name}\""),
        ));
    }
    let policy = match c.policy.as_ref().map(LitStr::value).as_deref() {
        None | Some("window") => quote!(::ordered_seaorm::RebalancePolicy::Window),
        Some("whole") => quote!(::ordered_seaorm::RebalancePolicy::Whole),
        Some("never") => quote!(::ordered_seaorm::RebalancePolicy::Never),
        Some(other) => {
            let span = c.policy.as_ref().map_or(Span::call_site(), LitStr::span);
            return Err(syn::Error::new(
                span,
                format!("unknown policy \"{other}\", expected \"window\", \"whole\" or \"never\""),
            ));
        }
    };
    let removal = match c.removal.as_ref().map(LitStr::value).as_deref() {
        None | Some("cascade") => quote!(::ordered_seaorm::Removal::Cascade),
        Some("refuse") => quote!(::ordered_seaorm::Removal::Refuse),
        Some("lift") => quote!(::ordered_seaorm::Removal::Lift),
        Some(other) => {
            let span = c.removal.as_ref().map_or(Span::call_site(), LitStr::span);
            return Err(syn::Error::new(
                span,
                format!(
                    "unknown removal \"{other}\", expected \"cascade\", \"refuse\" or \"lift\""
                ),
            ));
        }
    };
    Ok(quote! {
        const _: () = {
            use ::ordered_seaorm::__private::sea_orm::{EntityName as _, IdenStatic as _};
            impl ::ordered_seaorm::OrderedEntity for Entity {
                type Key = #key_ty;
                type Scope = #scope_key_ty;
                fn spec() -> ::ordered_seaorm::Spec {
                    const STRATEGY: #strategy_ty = #strategy_expr;
                    // the further scope columns' names come from the entity's Column
                    static SPLIT: ::std::sync::OnceLock<[::ordered_seaorm::ScopeColumn; #split_n]> =
                        ::std::sync::OnceLock::new();
                    let s = ::ordered_seaorm::Spec::new(Entity.table_name(), #scope_name, #parent_table)
                        .with_id(Column::#id.as_str())
                        .with_position(Column::#position.as_str())
                        .with_parent_id(#parent_key)
                        .with_id_type(#id_type)
                        .with_parent_type(#parent_type)
                        .with_split_by(SPLIT.get_or_init(|| {
                            [#(::ordered_seaorm::ScopeColumn::new(Column::#split_cols.as_str(), #split_types)),*]
                        }))
                        .with_null_scope(#null_scope)
                        .with_link(#link)
                        .with_strategy(&STRATEGY)
                        .with_policy(#policy)
                        .with_removal(#removal);
                    let s = match #filter { ::core::option::Option::Some(f) => s.with_filter(f), ::core::option::Option::None => s };
                    let s = match #version { ::core::option::Option::Some(v) => s.with_version(v), ::core::option::Option::None => s };
                    match #unique { ::core::option::Option::Some(u) => s.with_unique(u), ::core::option::Option::None => s }
                }
                fn scope_column() -> Column {
                    Column::#scope_variant
                }
                fn split_columns() -> ::std::vec::Vec<Column> {
                    ::std::vec![#(Column::#split_cols),*]
                }
                fn position_column() -> Column {
                    Column::#position
                }
            }
        };
    })
}

/// The combination of choices, refused by the core's one rule ([`Spec::checked`]) at
/// expansion time, with its message, spanned on the `#[ordered(...)]` attribute.
///
/// [`Spec::checked`]: ordered_core::Spec::checked
fn check_combination(ast: &DeriveInput, shape: ordered_core::spec::Shape) -> syn::Result<()> {
    let why = match shape.check() {
        Ok(()) => return Ok(()),
        Err(why) => why,
    };
    match ast.attrs.iter().find(|a| a.path().is_ident("ordered")) {
        Some(attr) => Err(syn::Error::new_spanned(attr, why)),
        None => Err(syn::Error::new(ast.ident.span(), why)),
    }
}
