//! `#[derive(Ordered)]` for `ordered-diesel`. Not intended to be used directly: depend
//! on `ordered-diesel`, which re-exports it.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::parse::Parse as _;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitInt, LitStr, Path, Type};

/// Implements `ordered_diesel::Ordered` for a Diesel model. See the `ordered-diesel`
/// documentation for the attributes.
#[proc_macro_derive(Ordered, attributes(ordered, diesel))]
pub fn derive_ordered(input: TokenStream) -> TokenStream {
    derive_inner(input.into()).into()
}

const FORMAT: &str = "the correct format looks like `#[ordered(scope = playlist_id, parent = playlists, position = position, strategy = gapped)]`";
const KEYS: &str = "scope, parent, parent_key, position, id, version, strategy, spacing, max_len, precision, scale, policy, removal, unique, filter, table";

fn derive_inner(input: TokenStream2) -> TokenStream2 {
    let ast: DeriveInput = match syn::parse2(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    match parse(&ast).and_then(|a| expand(&ast, a)) {
        Ok(ts) => ts,
        Err(e) => {
            // a fallback impl keeps the rest of the user's code from erroring too
            let name = &ast.ident;
            let err = e.to_compile_error();
            quote! {
                #err
                const _: () = {
                    impl ::ordered_diesel::Ordered for #name {
                        type Key = ::ordered_diesel::Id;
                        type Scope = ::ordered_diesel::Id;
                        const SPEC: ::ordered_diesel::Spec = ::ordered_diesel::__private::FALLBACK_SPEC;
                    }
                };
            }
        }
    }
}

/// One `key = value` with the key's span.
struct Val<T> {
    key: Ident,
    value: T,
}

#[derive(Default)]
struct Attrs {
    table: Option<Path>,
    table_name: Option<Val<LitStr>>,
    /// The scope column, or `(parent column, further columns...)`.
    scope: Option<Val<Vec<Ident>>>,
    parent: Option<Val<Path>>,
    parent_key: Option<Val<Ident>>,
    position: Option<Val<Ident>>,
    id: Option<Val<Ident>>,
    /// `id = (playlist_id, track_id)`: an association table's key, the scope
    /// column(s) first (kept to check them against `scope`); `id` is then the last.
    link_key: Option<Vec<Ident>>,
    version: Option<Val<Ident>>,
    strategy: Option<Val<Path>>,
    spacing: Option<Val<LitInt>>,
    max_len: Option<Val<LitInt>>,
    precision: Option<Val<LitInt>>,
    scale: Option<Val<LitInt>>,
    policy: Option<Val<Ident>>,
    removal: Option<Val<Ident>>,
    unique: Option<Val<LitStr>>,
    filter: Option<Val<LitStr>>,
}

fn set<T>(slot: &mut Option<Val<T>>, key: &Ident, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            key.span(),
            format!("duplicate `{key}` in #[ordered(...)]; give it once"),
        ));
    }
    *slot = Some(Val {
        key: key.clone(),
        value,
    });
    Ok(())
}

fn parse(ast: &DeriveInput) -> syn::Result<Attrs> {
    let mut a = Attrs::default();
    match &ast.data {
        Data::Struct(s) if matches!(s.fields, Fields::Named(_)) => {}
        _ => {
            return Err(syn::Error::new(
                ast.ident.span(),
                "#[derive(Ordered)] needs a struct with named fields (a Diesel model)",
            ));
        }
    }
    let mut saw_ordered = false;
    for attr in &ast.attrs {
        if attr.path().is_ident("diesel") {
            // only `table_name` matters here; other diesel keys are Diesel's business
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("table_name") {
                    a.table = Some(meta.value()?.parse()?);
                } else if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                } else if meta.input.peek(syn::token::Paren) {
                    let _content;
                    syn::parenthesized!(_content in meta.input);
                    let _: TokenStream2 = _content.parse()?;
                }
                Ok(())
            });
        }
        if !attr.path().is_ident("ordered") {
            continue;
        }
        saw_ordered = true;
        attr.parse_nested_meta(|meta| {
            let Some(key) = meta.path.get_ident().cloned() else {
                return Err(meta.error(format!("unknown attribute, expected one of: {KEYS}")));
            };
            let help = |e: syn::Error| {
                let mut e2 =
                    syn::Error::new(key.span(), format!("`{key}` needs a value: {FORMAT}"));
                e2.combine(e);
                e2
            };
            let value = || meta.value().map_err(help);
            match key.to_string().as_str() {
                "scope" => {
                    let input = value()?;
                    let columns = if input.peek(syn::token::Paren) {
                        // `scope = (board_id, status)`: a list per several columns
                        let content;
                        syn::parenthesized!(content in input);
                        let list = content
                            .parse_terminated(Ident::parse, syn::Token![,])
                            .map_err(|e| bad(&key, "a column name or a tuple of them", e))?;
                        list.into_iter().collect::<Vec<_>>()
                    } else {
                        vec![
                            input
                                .parse()
                                .map_err(|e| bad(&key, "a column name or a tuple of them", e))?,
                        ]
                    };
                    if columns.is_empty() {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("`scope` names at least one column; {FORMAT}"),
                        ));
                    }
                    if let Some(dup) = columns
                        .iter()
                        .enumerate()
                        .find_map(|(i, c)| columns[..i].contains(c).then_some(c))
                    {
                        return Err(syn::Error::new(
                            dup.span(),
                            format!("`{dup}` is named twice in `scope`"),
                        ));
                    }
                    set(&mut a.scope, &key, columns)
                }
                "parent" => set(
                    &mut a.parent,
                    &key,
                    value()?.parse().map_err(|e| bad(&key, "a table name", e))?,
                ),
                "parent_key" => set(
                    &mut a.parent_key,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "a column name", e))?,
                ),
                "position" => set(
                    &mut a.position,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "a column name", e))?,
                ),
                "id" => {
                    let input = value()?;
                    let what = "a column name, or the tuple of an association table's key";
                    if input.peek(syn::token::Paren) {
                        // `id = (playlist_id, track_id)`: keyed by the list and its own key
                        let content;
                        syn::parenthesized!(content in input);
                        let list: Vec<Ident> = content
                            .parse_terminated(Ident::parse, syn::Token![,])
                            .map_err(|e| bad(&key, what, e))?
                            .into_iter()
                            .collect();
                        let Some(last) = list.last().cloned() else {
                            return Err(syn::Error::new(
                                key.span(),
                                format!("`id` names at least one column; {FORMAT}"),
                            ));
                        };
                        set(&mut a.id, &key, last)?;
                        if list.len() > 1 {
                            a.link_key = Some(list);
                        }
                        Ok(())
                    } else {
                        set(
                            &mut a.id,
                            &key,
                            input.parse().map_err(|e| bad(&key, what, e))?,
                        )
                    }
                }
                "version" => set(
                    &mut a.version,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "a column name of the parent table", e))?,
                ),
                "strategy" => set(
                    &mut a.strategy,
                    &key,
                    value()?.parse().map_err(|e| {
                        bad(
                            &key,
                            "`gapped`, `dense`, `fractional` or a path to a strategy const",
                            e,
                        )
                    })?,
                ),
                "spacing" => set(
                    &mut a.spacing,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "an integer literal", e))?,
                ),
                "max_len" => set(
                    &mut a.max_len,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "an integer literal", e))?,
                ),
                "precision" => set(
                    &mut a.precision,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "an integer literal", e))?,
                ),
                "scale" => set(
                    &mut a.scale,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "an integer literal", e))?,
                ),
                "policy" => set(
                    &mut a.policy,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "`window`, `whole` or `never`", e))?,
                ),
                "removal" => set(
                    &mut a.removal,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "`cascade`, `refuse` or `lift`", e))?,
                ),
                "filter" => set(
                    &mut a.filter,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "a string literal (an SQL predicate)", e))?,
                ),
                "unique" => set(
                    &mut a.unique,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "a string literal (the constraint name)", e))?,
                ),
                "table" => set(
                    &mut a.table_name,
                    &key,
                    value()?
                        .parse()
                        .map_err(|e| bad(&key, "a string literal (the SQL table name)", e))?,
                ),
                _ => Err(syn::Error::new(
                    key.span(),
                    format!("unknown attribute `{key}`, expected one of: {KEYS}"),
                )),
            }
        })?;
    }
    if !saw_ordered {
        return Err(syn::Error::new(
            ast.ident.span(),
            format!("#[derive(Ordered)] needs an #[ordered(...)] attribute; {FORMAT}"),
        ));
    }
    Ok(a)
}

/// Refuses `parent_key` and `version` (columns of a parent table) on a table whose
/// lists are locked in the lock table, with `message(attribute)`.
fn no_parent_columns(a: &Attrs, message: impl Fn(&str) -> String) -> syn::Result<()> {
    for (v, name) in [
        (a.parent_key.as_ref().map(|v| &v.key), "parent_key"),
        (a.version.as_ref().map(|v| &v.key), "version"),
    ] {
        if let Some(k) = v {
            return Err(syn::Error::new(k.span(), message(name)));
        }
    }
    Ok(())
}

fn bad(key: &Ident, what: &str, e: syn::Error) -> syn::Error {
    let mut err = syn::Error::new(key.span(), format!("`{key}` takes {what}; {FORMAT}"));
    err.combine(e);
    err
}

fn last_ident(p: &Path) -> String {
    p.segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

fn expand(ast: &DeriveInput, a: Attrs) -> syn::Result<TokenStream2> {
    // no `parent`: the lock table stands in for it; no `scope` either: one global list
    if a.scope.is_none()
        && let Some(p) = &a.parent
    {
        return Err(syn::Error::new(
            p.key.span(),
            "a table with a parent table needs `scope`, the column that names the parent row; leave both out for one global list",
        ));
    }
    if a.parent.is_none() {
        no_parent_columns(&a, |name| {
            format!(
                "`{name}` names a column of the parent table; without `parent` the collections are locked and versioned in the lock table (`ordered_locks`)"
            )
        })?;
    }
    let name = &ast.ident;
    let table: Path = match &a.table {
        Some(t) => t.clone(),
        None => {
            // Diesel's inference: snake_case of the struct name plus `s`
            let mut s = String::new();
            for (i, ch) in name.to_string().chars().enumerate() {
                if ch.is_uppercase() {
                    if i > 0 {
                        s.push('_');
                    }
                    s.extend(ch.to_lowercase());
                } else {
                    s.push(ch);
                }
            }
            s.push('s');
            syn::parse_str(&s)?
        }
    };
    let table_sql = match &a.table_name {
        Some(v) => v.value.value(),
        None => last_ident(&table),
    };
    let col = |c: &Ident| quote_spanned!(c.span()=> <#table::#c as ::ordered_diesel::__private::diesel::Column>::NAME);
    let id_ident =
        a.id.as_ref()
            .map_or_else(|| Ident::new("id", Span::call_site()), |v| v.value.clone());
    let pos_ident = a.position.as_ref().map_or_else(
        || Ident::new("position", Span::call_site()),
        |v| v.value.clone(),
    );
    let scopes = a
        .scope
        .as_ref()
        .map(|v| v.value.clone())
        .unwrap_or_default();
    let global = scopes.is_empty();
    // the first scope column names the parent row; the others split its lists
    let scope = scopes
        .first()
        .cloned()
        .unwrap_or_else(|| Ident::new("id", Span::call_site()));
    let split = if global { &[][..] } else { &scopes[1..] };
    // an association table: its key is the scope columns, in order, and its own
    if let Some(key) = &a.link_key {
        let span = a.id.as_ref().map_or_else(Span::call_site, |v| v.key.span());
        if key[..key.len() - 1] != scopes[..] {
            return Err(syn::Error::new(
                span,
                "an association table's key is its scope column(s), in order, then its own key column: `id = (playlist_id, track_id)` with `scope = playlist_id`",
            ));
        }
    }
    let link = a.link_key.is_some();
    // a scope field of type `Option<_>`: NULL is the root list; `parent` naming the
    // model's own table: a tree
    let scope_field = match &ast.data {
        Data::Struct(s) if !global => s.fields.iter().find(|f| f.ident.as_ref() == Some(&scope)),
        _ => None,
    };
    let nullable = scope_field.is_some_and(|f| type_name(&f.ty).as_deref() == Some("Option"));
    let tree = a
        .parent
        .as_ref()
        .is_some_and(|p| last_ident(&p.value) == last_ident(&table));
    if let (Some(p), true) = (&a.parent, tree) {
        if !nullable {
            return Err(syn::Error::new(
                p.value.span(),
                "a tree's parent column is nullable (NULL: the root list): make the scope field `Option<_>` and its column `Nullable<_>`",
            ));
        }
        // (a scope of several columns is refused below, as for any nullable scope)
        no_parent_columns(&a, |name| {
            format!(
                "`{name}` does not apply to a tree: its lists are locked and versioned in the lock table (`ordered_locks`), the root list included"
            )
        })?;
    }
    check_combination(
        ast,
        ordered_core::spec::Shape {
            global,
            nullable,
            tree,
            locks_rows: a.parent.is_none() || tree,
            link,
            split: !split.is_empty(),
        },
    )?;
    let null_scope = match (nullable, tree) {
        (false, _) => quote!(::ordered_diesel::NullScope::Refused),
        (true, false) => quote!(::ordered_diesel::NullScope::Root),
        (true, true) => quote!(::ordered_diesel::NullScope::Tree),
    };
    let parent = a.parent.as_ref().map(|v| v.value.clone()).filter(|_| !tree);
    let parent_key = a
        .parent_key
        .as_ref()
        .map_or_else(|| Ident::new("id", Span::call_site()), |v| v.value.clone());
    let id_col = col(&id_ident);
    let scope_col = if global { quote!("") } else { col(&scope) };
    let pos_col = col(&pos_ident);
    let (parent_sql, pk_col, version) = match &parent {
        Some(parent) => {
            let parent_sql = last_ident(parent);
            let pk_col = quote_spanned!(parent_key.span()=> <#parent::#parent_key as ::ordered_diesel::__private::diesel::Column>::NAME);
            let version = match &a.version {
                Some(v) => {
                    let c = &v.value;
                    quote_spanned!(c.span()=> ::core::option::Option::Some(<#parent::#c as ::ordered_diesel::__private::diesel::Column>::NAME))
                }
                None => quote!(::core::option::Option::None),
            };
            (quote!(#parent_sql), pk_col, version)
        }
        // the lock table's row per collection holds the lock and the version
        None => (
            quote!(::ordered_diesel::__private::LOCK_TABLE),
            quote!("scope_key"),
            quote!(::core::option::Option::Some("version")),
        ),
    };
    let filter = match &a.filter {
        Some(v) => {
            let s = &v.value;
            quote!(::core::option::Option::Some(#s))
        }
        None => quote!(::core::option::Option::None),
    };
    let unique = match &a.unique {
        Some(v) => {
            let s = &v.value;
            quote!(::core::option::Option::Some(#s))
        }
        None => quote!(::core::option::Option::None),
    };

    // strategy
    enum Kind {
        Int,
        Key,
        Float,
        Decimal,
        Custom,
    }
    if !matches!(
        a.strategy
            .as_ref()
            .and_then(|v| v.value.get_ident())
            .map(Ident::to_string)
            .as_deref(),
        Some("decimal")
    ) {
        no_option(&a.precision, "precision", "decimal")?;
        no_option(&a.scale, "scale", "decimal")?;
    }
    let (strategy, kind) = match &a.strategy {
        None => (gapped(&a)?, Kind::Int),
        Some(v) => match v.value.get_ident().map(Ident::to_string).as_deref() {
            Some("gapped") => (gapped(&a)?, Kind::Int),
            Some("dense") => {
                no_option(&a.spacing, "spacing", "gapped")?;
                no_option(&a.max_len, "max_len", "fractional")?;
                (quote!(&::ordered_diesel::Dense), Kind::Int)
            }
            Some("fractional") => {
                no_option(&a.spacing, "spacing", "gapped")?;
                let max = match &a.max_len {
                    Some(m) => {
                        let n: usize = m.value.base10_parse()?;
                        if !(8..=255).contains(&n) {
                            return Err(syn::Error::new(
                                m.value.span(),
                                "`max_len` must be between 8 and 255",
                            ));
                        }
                        quote!(#n)
                    }
                    None => quote!(64usize),
                };
                (
                    quote!(&::ordered_diesel::Fractional::new(::ordered_diesel::__private::Alphabet::BASE62, #max)),
                    Kind::Key,
                )
            }
            Some("numeric") => {
                no_option(&a.max_len, "max_len", "fractional")?;
                let spacing: f64 = match &a.spacing {
                    Some(s) => s.value.base10_parse::<u32>()?.into(),
                    None => 65_535.0,
                };
                (
                    quote!(&::ordered_diesel::Numeric::float(#spacing)),
                    Kind::Float,
                )
            }
            Some("decimal") => {
                no_option(&a.max_len, "max_len", "fractional")?;
                let (Some(p), Some(sc)) = (&a.precision, &a.scale) else {
                    return Err(syn::Error::new(
                        v.value.span(),
                        "`strategy = decimal` needs the column's `precision` and `scale` (NUMERIC(precision, scale))",
                    ));
                };
                let (precision, scale): (u8, u8) =
                    (p.value.base10_parse()?, sc.value.base10_parse()?);
                if !(2..=15).contains(&precision) || scale >= precision {
                    return Err(syn::Error::new(
                        p.value.span(),
                        "`precision` must be between 2 and 15 (every value then is exact as an f64) and `scale` below it",
                    ));
                }
                let spacing = match &a.spacing {
                    Some(s) => {
                        let v: f64 = s.value.base10_parse::<u32>()?.into();
                        quote!(.with_spacing(#v))
                    }
                    None => quote!(),
                };
                (
                    quote!(&::ordered_diesel::Numeric::decimal(#precision, #scale)#spacing),
                    Kind::Decimal,
                )
            }
            Some(other) if !other.chars().next().is_some_and(char::is_uppercase) => {
                return Err(syn::Error::new(
                    v.value.span(),
                    format!(
                        "unknown strategy `{other}`, expected `gapped`, `dense`, `fractional`, `numeric`, `decimal` or a path to a const implementing `PositionStrategy`"
                    ),
                ));
            }
            _ => {
                let p = &v.value;
                (quote_spanned!(p.span()=> &#p), Kind::Custom)
            }
        },
    };
    let policy = match &a.policy {
        None => quote!(::ordered_diesel::RebalancePolicy::Window),
        Some(v) => match v.value.to_string().as_str() {
            "window" => quote!(::ordered_diesel::RebalancePolicy::Window),
            "whole" => quote!(::ordered_diesel::RebalancePolicy::Whole),
            "never" => quote!(::ordered_diesel::RebalancePolicy::Never),
            other => {
                return Err(syn::Error::new(
                    v.value.span(),
                    format!("unknown policy `{other}`, expected `window`, `whole` or `never`"),
                ));
            }
        },
    };

    let removal = match &a.removal {
        None => quote!(::ordered_diesel::Removal::Cascade),
        Some(v) => match v.value.to_string().as_str() {
            "cascade" => quote!(::ordered_diesel::Removal::Cascade),
            "refuse" => quote!(::ordered_diesel::Removal::Refuse),
            "lift" => quote!(::ordered_diesel::Removal::Lift),
            other => {
                return Err(syn::Error::new(
                    v.value.span(),
                    format!("unknown removal `{other}`, expected `cascade`, `refuse` or `lift`"),
                ));
            }
        },
    };

    // the position field's type must fit the strategy
    if let Data::Struct(s) = &ast.data {
        for f in &s.fields {
            if f.ident.as_ref() == Some(&pos_ident) {
                let ty = type_name(&f.ty);
                if matches!(kind, Kind::Int) && matches!(ty.as_deref(), Some("i32" | "i16")) {
                    return Err(syn::Error::new(
                        f.ty.span(),
                        format!(
                            "the position field `{pos_ident}` must be `i64`: gapped positions step by 1024 and a relabel parks rows at -2^62, so a 32-bit position overflows (one list after about two million appends); make the column BIGINT (`OrderedTable::ensure_ordering` widens it) and the field `i64`"
                        ),
                    ));
                }
                let ok = match kind {
                    Kind::Int => matches!(ty.as_deref(), Some("i64")),
                    Kind::Key => matches!(ty.as_deref(), Some("String")),
                    Kind::Float => matches!(ty.as_deref(), Some("f64")),
                    Kind::Decimal => matches!(ty.as_deref(), Some("BigDecimal")),
                    Kind::Custom => true,
                };
                if !ok {
                    let want = match kind {
                        Kind::Key => "`String` (a fractional key)",
                        Kind::Float => {
                            "`f64` (a `DOUBLE PRECISION` position; `f32` loses the midpoints)"
                        }
                        Kind::Decimal => {
                            "`BigDecimal` (a `NUMERIC` position, Diesel's `numeric` feature)"
                        }
                        _ => "`i64` (an integer position)",
                    };
                    return Err(syn::Error::new(
                        f.ty.span(),
                        format!(
                            "the position field `{pos_ident}` must be {want} for this strategy"
                        ),
                    ));
                }
            }
        }
    }

    // the key types come from the `table!` columns; the fields must read them
    let sql_type = |t: &Path, c: &Ident| quote_spanned!(c.span()=> <#t::#c as ::ordered_diesel::__private::diesel::Expression>::SqlType);
    let id_st = sql_type(&table, &id_ident);
    let scope_st = sql_type(&table, &scope);
    let split_st: Vec<TokenStream2> = split.iter().map(|c| sql_type(&table, c)).collect();
    let mut checks = Vec::new();
    if let Data::Struct(s) = &ast.data {
        for f in &s.fields {
            let st = if f.ident.as_ref() == Some(&id_ident) {
                &id_st
            } else if !global && f.ident.as_ref() == Some(&scope) {
                &scope_st
            } else if let Some(i) = split.iter().position(|c| f.ident.as_ref() == Some(c)) {
                &split_st[i]
            } else {
                continue;
            };
            let ty = &f.ty;
            checks.push(quote_spanned!(ty.span()=> key_field::<<#ty as ::ordered_diesel::KeyField>::Sql, #st>();));
        }
    }
    // the scope column holds the parent's keys (no parent table: nothing to match; a
    // tree: the model's own keys)
    let same_key = match &parent {
        Some(parent) => {
            let pk_st = sql_type(parent, &parent_key);
            quote_spanned!(scope.span()=> same_key::<#scope_st, #pk_st>();)
        }
        None if tree => {
            quote_spanned!(scope.span()=> same_key::<#scope_st, ::ordered_diesel::__private::diesel::sql_types::Nullable<#id_st>>();)
        }
        None => quote!(),
    };
    let key_type = |st: &TokenStream2, span: Span| quote_spanned!(span=> <#st as ::ordered_diesel::KeyColumn>::TYPE);
    let id_type = key_type(&id_st, id_ident.span());
    let parent_type = if global {
        quote!(::ordered_diesel::KeyType::Int)
    } else {
        key_type(&scope_st, scope.span())
    };
    let split_by = split.iter().zip(&split_st).map(|(c, st)| {
        let name = col(c);
        let ty = key_type(st, c.span());
        quote!(::ordered_diesel::ScopeColumn { name: #name, ty: #ty })
    });

    // the keys in the model's own types: the fields' (an association table's key: its
    // scope fields and its own, a pair or triple; a table that is one list: `()`); a
    // column the model does not read is an `Id`
    let field_ty = |c: &Ident| -> Option<TokenStream2> {
        match &ast.data {
            Data::Struct(s) => s
                .fields
                .iter()
                .find(|f| f.ident.as_ref() == Some(c))
                .map(|f| {
                    let ty = &f.ty;
                    quote!(#ty)
                }),
            _ => None,
        }
    };
    // a key of several columns: the tuple of their fields' types, or `Id` when the model
    // does not read one of them
    let tuple_ty = |cols: &[Ident]| -> TokenStream2 {
        match cols.iter().map(field_ty).collect::<Option<Vec<_>>>() {
            Some(tys) => quote!((#(#tys),*)),
            None => quote!(::ordered_diesel::Id),
        }
    };
    let key_ty = match &a.link_key {
        Some(cols) => tuple_ty(cols),
        None => field_ty(&id_ident).unwrap_or_else(|| quote!(::ordered_diesel::Id)),
    };
    let scope_ty = if global {
        quote!(())
    } else if split.is_empty() {
        field_ty(&scope).unwrap_or_else(|| quote!(::ordered_diesel::Id))
    } else {
        tuple_ty(&scopes)
    };

    let (impl_g, ty_g, where_c) = ast.generics.split_for_impl();
    Ok(quote! {
        const _: () = {
            impl #impl_g ::ordered_diesel::Ordered for #name #ty_g #where_c {
                type Key = #key_ty;
                type Scope = #scope_ty;
                const SPEC: ::ordered_diesel::Spec = {
                    let s = ::ordered_diesel::Spec::new(#table_sql, #scope_col, #parent_sql)
                        .with_id(#id_col)
                        .with_position(#pos_col)
                        .with_parent_id(#pk_col)
                        .with_id_type(#id_type)
                        .with_parent_type(#parent_type)
                        .with_split_by(&[#(#split_by),*])
                        .with_null_scope(#null_scope)
                        .with_link(#link)
                        .with_strategy(#strategy)
                        .with_policy(#policy)
                        .with_removal(#removal);
                    let s = match #filter { ::core::option::Option::Some(f) => s.with_filter(f), ::core::option::Option::None => s };
                    let s = match #version { ::core::option::Option::Some(v) => s.with_version(v), ::core::option::Option::None => s };
                    let s = match #unique { ::core::option::Option::Some(u) => s.with_unique(u), ::core::option::Option::None => s };
                    // an invalid combination is a compile error with the core's message
                    s.valid()
                };
            }
            #[allow(dead_code)]
            fn check_keys() {
                fn key_field<F: ::ordered_diesel::keys::ReadsColumn<ST>, ST>() {}
                fn same_key<A: ::ordered_diesel::keys::SameKey<B>, B>() {}
                #(#checks)*
                #same_key
            }
        };
    })
}

fn gapped(a: &Attrs) -> syn::Result<TokenStream2> {
    no_option(&a.max_len, "max_len", "fractional")?;
    Ok(match &a.spacing {
        Some(s) => {
            let n: i64 = s.value.base10_parse()?;
            if !(2..=(1 << 40)).contains(&n) {
                return Err(syn::Error::new(
                    s.value.span(),
                    "`spacing` must be between 2 and 2^40",
                ));
            }
            quote!(&::ordered_diesel::Gapped::new(#n))
        }
        None => quote!(&::ordered_diesel::Gapped::DEFAULT),
    })
}

fn no_option<T>(v: &Option<Val<T>>, name: &str, for_strategy: &str) -> syn::Result<()> {
    match v {
        Some(v) => Err(syn::Error::new(
            v.key.span(),
            format!("`{name}` only applies to `strategy = {for_strategy}`"),
        )),
        None => Ok(()),
    }
}

fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
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
