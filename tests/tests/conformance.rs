//! Cross-ORM conformance: every script runs through Diesel, diesel-async and SeaORM on each
//! engine, from fresh tables; both must leave identical rows (id, parent, position) and
//! return the same typed errors, step by step.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use diesel::connection::SimpleConnection;
use ordered_conformance::{Numbers, PageFrom, Schema, Step, scripts};
use ordered_core::adapter::{Reply, Returns, Statement, Wire, sql};
use ordered_core::migration::{create_parent_table, create_requests_table, create_table};
use ordered_core::{
    Changes, Concurrency, Cursor, Dialect, Fractional, Gapped, Id, KeyType, Numeric, Position,
    PositionStrategy, Request, Row, ScopeColumn, Spec,
};
use sea_orm::{ConnectionTrait, Database, TransactionTrait};

static TIGHT: Gapped = Gapped::new(4);
/// The further scope column of the split scripts: lists per `(parent_id, status)`.
static STATUS: [ScopeColumn; 1] = [ScopeColumn::text("status")];
/// Floats whose gaps fill after a few halvings.
static TIGHT_FLOATS: Numeric = Numeric::float(8.0).with_min_gap(1.0 / 16.0);
/// `NUMERIC(9, 2)` one unit apart: a gap of 100 hundredths halves six times.
static DECIMALS: Numeric = Numeric::decimal(9, 2).with_spacing(1.0);
static SHORT_KEYS: Fractional = Fractional::new(ordered_core::key::Alphabet::BASE62, 10);

/// What one step returned: the item's final position and the changes it reported, or
/// the typed refusal.
type Outcome = Result<(Option<Position>, Changes), ordered_core::Error>;

/// Relabels of more rows than this are summarised: small enough that the hot-gap
/// script's relabels are both listed and summarised.
const CHANGES_LIMIT: u64 = 6;

/// Checks one step against the database: a refused step changed nothing; a successful
/// one reported every row that changed (new, moved or relabelled: in `changes.rows` at
/// its new place, or inside a summarised range; deleted: in `changes.removed`), and
/// nothing it reports contradicts the rows as they are now.
fn check_step(tag: &str, name: &str, i: usize, before: &[Row], after: &[Row], r: &Outcome) {
    use std::collections::HashMap;
    let map = |rows: &[Row]| -> HashMap<Id, (Id, Position)> {
        rows.iter()
            .map(|r| (r.id, (r.parent, r.position.clone())))
            .collect()
    };
    let (b, a) = (map(before), map(after));
    let Ok((_, c)) = r else {
        assert_eq!(b, a, "{tag} {name} step {i}: a refused step changed rows");
        return;
    };
    for (id, now) in &a {
        if b.get(id) == Some(now) {
            continue;
        }
        let listed = c
            .rows
            .iter()
            .any(|x| x.id == *id && (x.parent, &x.position) == (now.0, &now.1));
        let summarised = c
            .relabelled
            .iter()
            .any(|g| g.parent == now.0 && g.first <= now.1 && now.1 <= g.last);
        assert!(
            listed || summarised,
            "{tag} {name} step {i}: row {id} changed to {now:?} but the changes do not say so: {c:?}"
        );
    }
    for id in b.keys().filter(|id| !a.contains_key(id)) {
        assert!(
            c.removed.contains(id),
            "{tag} {name} step {i}: row {id} was deleted but not reported: {c:?}"
        );
    }
    for x in &c.rows {
        assert_eq!(
            a.get(&x.id),
            Some(&(x.parent, x.position.clone())),
            "{tag} {name} step {i}: a reported change is not what the row holds"
        );
    }
    for id in &c.removed {
        assert!(
            !a.contains_key(id),
            "{tag} {name} step {i}: {id} is reported removed"
        );
    }
    for v in &c.versions {
        assert!(v.version > 0, "{tag} {name} step {i}: version {v:?}");
    }
}

/// The records table, and no record of an earlier run of the script's table.
fn records_ddl(d: Dialect, s: &Spec) -> Vec<String> {
    let mut out = create_requests_table(d).up;
    out.push(format!(
        "DELETE FROM {} WHERE {} = '{}'",
        sql::quote(d, ordered_core::requests::TABLE),
        sql::quote(d, "table_name"),
        s.table
    ));
    out
}

/// A step and the handle it runs through: under a request key (and tenant) for a
/// [`Step::Keyed`], the inner step. A macro: each front has its own handle type.
macro_rules! keyed {
    ($o:expr, $whole:expr) => {
        match $whole {
            Step::Keyed(k, t, inner) => {
                let h = $o.clone().request_key((*k).to_owned());
                (
                    match t {
                        Some(t) => h.tenant(*t),
                        None => h,
                    },
                    &**inner,
                )
            }
            other => ($o.clone(), other),
        }
    };
}

/// Where a step ran: the front's tag, the script, the step's index.
struct Check<'a> {
    tag: &'a str,
    name: &'a str,
    i: usize,
}

impl Check<'_> {
    /// A step (as the script wrote it, and without its key) against the rows before and
    /// after it: [`keyed_check`], then [`check_any`] unless it was a replay (which wrote
    /// nothing, and whose changes are the first call's).
    fn step(
        &self,
        keys: &mut Keys,
        (whole, step): (&Step, &Step),
        (before, after): (Option<Vec<Row>>, Option<Vec<Row>>),
        r: &Outcome,
        replayed: bool,
    ) {
        let Check { tag, name, i } = *self;
        if std::env::var("ORDERED_DEBUG").is_ok() {
            eprintln!("{tag} {name} {i} {r:?}");
        }
        let at = format!("{tag} {name} step {i}");
        keyed_check(keys, &at, whole, (&before, &after), r, replayed);
        if !replayed {
            check_any(tag, name, i, step, before, after, r);
        }
    }
}

/// The outcome of `purge_requests`: how many records it deleted, as the position.
fn purged(n: u64) -> (Option<Position>, Changes) {
    (Some(Position::Int(n as i64)), Changes::default())
}

/// What each request key of a script answered first: the step and its outcome.
type Keys = std::collections::HashMap<(&'static str, Option<i64>), (String, Outcome)>;

/// A step under a request key against the first step under the same key (and tenant):
/// the same step returns the same outcome, marked replayed, and writes nothing (an
/// insert: `already_applied` with the row it made); another step is
/// `idempotency_key_reused`. A refused step records nothing, and a purge of every
/// record frees every key.
fn keyed_check(
    seen: &mut Keys,
    at: &str,
    step: &Step,
    (before, after): (&Option<Vec<Row>>, &Option<Vec<Row>>),
    r: &Outcome,
    replayed: bool,
) {
    let (k, t, inner) = match step {
        Step::Keyed(k, t, inner) => (*k, *t, inner),
        Step::PurgeRequests(0, _) => {
            seen.clear();
            return;
        }
        _ => {
            assert!(!replayed, "{at}: a step without a key was replayed");
            return;
        }
    };
    let what = format!("{inner:?}");
    match seen.get(&(k, t)) {
        None => {
            assert!(!replayed, "{at}: the first step under {k} was replayed");
            if r.is_ok() {
                seen.insert((k, t), (what, r.clone()));
            }
        }
        Some((first, o)) if *first == what => {
            assert_eq!(before, after, "{at}: a repeat under {k} wrote");
            match (&**inner, r) {
                (Step::Insert(..), Err(ordered_core::Error::AlreadyApplied { id, .. })) => {
                    let made = o
                        .as_ref()
                        .expect("recorded")
                        .1
                        .rows
                        .iter()
                        .any(|c| c.id == *id);
                    assert!(made, "{at}: the repeated insert names another row: {id}");
                }
                _ => {
                    assert!(replayed, "{at}: the repeat under {k} ran again: {r:?}");
                    assert_eq!(r, o, "{at}: the repeat under {k} answered otherwise");
                }
            }
        }
        Some(_) => assert!(
            matches!(r, Err(ordered_core::Error::IdempotencyKeyReused { .. })),
            "{at}: another request under {k}: {r:?}"
        ),
    }
}

/// The end of a run: the versioned read returns the same rows as the plain one, and its
/// version (as a last pseudo-step, so that the ORMs' versions are compared too).
/// The cursor a [`Step::Page`] starts from, sent as the string a client keeps (the
/// resume flag is the caller's, not part of it).
fn page_from(cursor: &Option<Cursor>, from: PageFrom) -> Option<Cursor> {
    let sent = |c: &Cursor| {
        let back: Cursor = c.to_string().parse().expect("the cursor's own string");
        assert_eq!(
            back,
            Cursor {
                resume: false,
                ..c.clone()
            },
            "{c}"
        );
        back
    };
    match from {
        PageFrom::Start => None,
        PageFrom::Next => cursor.as_ref().map(sent),
        PageFrom::Resume => cursor.as_ref().map(sent).map(Cursor::resume),
    }
}

/// What a [`Step::Page`] read, checked against the whole list read just before it:
/// the rows after the cursor's `(position, id)`, at most `limit` (at least one), and a
/// next cursor exactly when rows are left. Keeps that cursor for the next page step;
/// the outcome holds the page's rows (as changes) and their number (as position).
fn page_step(
    full: &[Row],
    after: Option<&Cursor>,
    limit: u32,
    cursor: &mut Option<Cursor>,
    page: ordered_core::Page,
) -> (Option<Position>, Changes) {
    let rest: Vec<&Row> = full
        .iter()
        .filter(|r| after.is_none_or(|c| (&r.position, r.id) > (&c.position, c.id)))
        .collect();
    let want = &rest[..rest.len().min(limit.max(1) as usize)];
    let got: Vec<&Row> = page.rows.iter().collect();
    assert_eq!(
        got, want,
        "the page is not the list's rows after the cursor"
    );
    assert_eq!(
        page.next.is_some(),
        rest.len() > want.len(),
        "a next cursor exactly when rows are left: {:?}",
        page.next
    );
    if let Some(next) = &page.next {
        let last = want.last().expect("a page with a next cursor has rows");
        assert_eq!((&next.position, next.id), (&last.position, last.id));
        assert_eq!(next.version, page.version);
    }
    cursor.clone_from(&page.next);
    let parent = full.first().map(|r| r.parent);
    (
        Some(Position::Int(page.rows.len() as i64)),
        Changes {
            rows: page
                .rows
                .iter()
                .map(|r| ordered_core::changes::Change {
                    id: r.id,
                    parent: r.parent,
                    position: r.position.clone(),
                })
                .collect(),
            versions: parent
                .zip(page.version)
                .map(|(parent, version)| ordered_core::changes::ScopeVersion { parent, version })
                .into_iter()
                .collect(),
            ..Changes::default()
        },
    )
}

fn versioned_step(rows: &[Row], parent: Id, listing: ordered_core::Listing) -> Outcome {
    let of_1: Vec<Row> = rows
        .iter()
        .filter(|r| r.parent == parent)
        .cloned()
        .collect();
    assert_eq!(listing.rows, of_1, "the versioned read lists other rows");
    let version = listing.version.expect("a version column");
    Ok((
        None,
        Changes {
            versions: vec![ordered_core::changes::ScopeVersion { parent, version }],
            ..Changes::default()
        },
    ))
}

/// An item row of the scripts' tables as the application reads it (`list_models`).
#[derive(Debug, diesel::QueryableByName, sea_orm::FromQueryResult)]
struct AppRow {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    id: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    parent_id: i64,
    #[diesel(sql_type = diesel::sql_types::Text)]
    title: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    position: i64,
}

/// A `list_models` read against the library's own versioned read of the same list: the
/// same ids, collection and positions in the same order, and the same version (as a
/// pseudo-step, so that the ORMs' versions are compared too).
fn models_step(
    parent: Id,
    plain: Result<ordered_core::Listing, ordered_core::Error>,
    models: ordered_core::Listing<AppRow>,
) -> (Option<Position>, Changes) {
    let plain = plain.expect("the library's read of a list the application's read found");
    let got: Vec<(Id, Id, Position)> = models
        .rows
        .iter()
        .map(|r| (r.id.into(), r.parent_id.into(), Position::Int(r.position)))
        .collect();
    let want: Vec<(Id, Id, Position)> = plain
        .rows
        .iter()
        .map(|r| (r.id, r.parent, r.position.clone()))
        .collect();
    assert_eq!(
        got, want,
        "the application's rows differ from the library's"
    );
    assert!(
        models.rows.iter().all(|r| r.title.is_empty()),
        "{:?}",
        models.rows
    );
    assert_eq!(models.version, plain.version);
    let version = models.version.expect("a version column");
    (
        None,
        Changes {
            versions: vec![ordered_core::changes::ScopeVersion { parent, version }],
            ..Changes::default()
        },
    )
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn spec(script: &str, orm: &str, schema: Schema) -> Spec {
    let strategy: &'static dyn PositionStrategy = match schema.numbers {
        Numbers::Float => &TIGHT_FLOATS,
        Numbers::Decimal => &DECIMALS,
        Numbers::Trello => &Numeric::FLOAT,
        Numbers::No if schema.keys => &SHORT_KEYS,
        Numbers::No => &TIGHT,
    };
    let s = Spec::new(
        leak(format!("k_{script}_{orm}_i")),
        "parent_id",
        leak(format!("k_{script}_{orm}_p")),
    )
    .with_id_type(schema.id)
    .with_parent_type(schema.parent)
    .with_split_by(if schema.split { &STATUS } else { &[] })
    .with_version("version")
    .with_strategy(strategy);
    let s = if schema.hidden {
        s.with_filter("archived = 0")
    } else {
        s
    };
    if schema.link {
        return s.with_link(true);
    }
    if schema.tree {
        let tree = Spec::tree(s.table, s.parent)
            .with_id_type(schema.id)
            .with_strategy(strategy);
        return match s.filter {
            Some(f) => tree.with_filter(f),
            None => tree,
        };
    }
    if schema.no_parent || schema.global {
        let base = if schema.global {
            Spec::global(s.table)
        } else {
            Spec::without_parent(s.table, s.parent)
        };
        let base = base
            .with_id_type(s.id_type)
            .with_parent_type(s.parent_type)
            .with_split_by(s.split_by)
            .with_strategy(strategy);
        return match s.filter {
            Some(f) => base.with_filter(f),
            None => base,
        };
    }
    s
}

/// A key as an SQL literal, for the parent rows the DDL inserts.
fn key_literal(d: Dialect, id: Id, ty: KeyType) -> String {
    match (id, ty, d) {
        (Id::Int(v), ..) => v.to_string(),
        (Id::Uuid(u), KeyType::Uuid, Dialect::Mysql | Dialect::Sqlite) => {
            format!("X'{}'", u.simple())
        }
        _ => format!("'{id}'"),
    }
}

fn ddl(d: Dialect, s: &Spec, schema: Schema) -> Vec<String> {
    let q = |x: &str| sql::quote(d, x);
    let mut out = vec![format!("DROP TABLE IF EXISTS {}", q(s.table))];
    if s.locks_rows() {
        // the lock table is shared: only this table's rows of it go
        out.extend(create_parent_table(d, s, &[]).up);
        out.push(format!(
            "DELETE FROM {} WHERE {} = '{}'",
            q(ordered_core::spec::LOCK_TABLE),
            q("table_name"),
            s.table
        ));
    } else {
        out.push(format!("DROP TABLE IF EXISTS {}", q(s.parent_table)));
        // an app's own parent table has no version column yet: the adoption adds it
        let parent =
            if (schema.adopt || schema.own || schema.linked.is_some()) && !schema.parent_version {
                s.without_version()
            } else {
                *s
            };
        out.extend(create_parent_table(d, &parent, &[]).up);
    }
    let mut cols = vec![("title", "VARCHAR(20) NOT NULL DEFAULT ''")];
    if schema.hidden {
        cols.push(("archived", "INTEGER NOT NULL DEFAULT 0"));
    }
    if let Some((link, seeds)) = schema.linked {
        out.extend(linked_table(d, s, link, seeds));
    } else if schema.adopt || schema.own {
        out.extend(app_table(d, s, schema.adopt, schema.numbers));
    } else {
        let mut table = create_table(d, s, &cols).up;
        for stmt in &mut table {
            if schema.int32_position {
                // the app's 32-bit column (SQLite's INTEGER is the one integer type)
                *stmt = stmt.replace(
                    &format!("{} BIGINT NOT NULL", q(s.position)),
                    &format!("{} INTEGER NOT NULL", q(s.position)),
                );
            }
            if schema.set_null {
                *stmt = stmt.replace("ON DELETE CASCADE", "ON DELETE SET NULL");
            }
        }
        out.extend(table);
    }
    if schema.unique_title {
        // the app's own constraint: every insert of the scripts has the same title
        out.push(format!(
            "CREATE UNIQUE INDEX {} ON {} ({})",
            q(&format!("{}_title_key", s.table)),
            q(s.table),
            q("title")
        ));
    }
    if schema.int32 {
        // 32-bit keys: SERIAL / INT columns (SQLite's INTEGER is already the one type)
        for stmt in &mut out {
            *stmt = stmt
                .replace("BIGSERIAL PRIMARY KEY", "SERIAL PRIMARY KEY")
                .replace(
                    "BIGINT NOT NULL AUTO_INCREMENT",
                    "INT NOT NULL AUTO_INCREMENT",
                )
                .replace(
                    &format!("{} BIGINT NOT NULL", q(s.parent)),
                    &format!("{} INTEGER NOT NULL", q(s.parent)),
                );
        }
    }
    // a parent row per parent key (two lists of a split table share one)
    let mut parents: Vec<Id> = schema
        .collections()
        .into_iter()
        .map(|p| s.lock_key(schema.parent(p)))
        .collect();
    parents.dedup();
    if s.locks_rows() {
        parents.clear();
    }
    for p in parents {
        out.push(format!(
            "INSERT INTO {} ({}) VALUES ({})",
            q(s.parent_table),
            q("id"),
            key_literal(d, p, schema.parent)
        ));
    }
    if schema.parent_version {
        out.push(format!(
            "UPDATE {} SET {} = 41",
            q(s.parent_table),
            q("version")
        ));
    }
    out
}

/// An app's own table before it adopts the library ([`Schema::adopt`]): a nullable
/// integer position it ordered by itself, five rows (ids in insertion order), then the
/// adoption migration.
fn app_table(d: Dialect, s: &Spec, adopt: bool, numbers: Numbers) -> Vec<String> {
    let q = |x: &str| sql::quote(d, x);
    // the app's column: a nullable integer, or a Trello-style float
    let (column, seeds): (&str, &[(i64, &str)]) = if numbers == Numbers::Trello {
        (
            match d {
                Dialect::Postgres => "DOUBLE PRECISION",
                Dialect::Mysql => "DOUBLE",
                Dialect::Sqlite => "REAL",
            },
            &[
                (1, "65535"),
                (1, "131070"),
                (1, "98302.5"),
                (1, "114686.25"),
                (1, "196605"),
                (2, "65535"),
                (2, "65535"),
                (2, "-1"),
                (2, "NULL"),
            ],
        )
    } else {
        (
            "INTEGER",
            &[(1, "5"), (1, "5"), (1, "NULL"), (1, "0"), (2, "3")],
        )
    };
    let mut out = vec![format!(
        "CREATE TABLE {} ({} {}, {} BIGINT NOT NULL, {} VARCHAR(20) NOT NULL DEFAULT '', {} {column} NULL)",
        q(s.table),
        q("id"),
        ordered_core::migration::serial_primary_key(d),
        q("parent_id"),
        q("title"),
        q("position")
    )];
    for (parent, position) in seeds {
        out.push(format!(
            "INSERT INTO {} ({}, {}) VALUES ({parent}, {position})",
            q(s.table),
            q("parent_id"),
            q("position")
        ));
    }
    if adopt {
        out.extend(
            ordered_core::migration::adopt_ordering(d, s, &[])
                .expect("an integer strategy")
                .up,
        );
    }
    out
}

/// An app's own table kept as a linked list ([`Schema::linked`]): its link column
/// (`prev_id` or `next_id`), the seeded rows with their explicit ids, then the expand
/// step the app deployed first (`add_position_column`: the nullable position column
/// and the parent's version column).
fn linked_table(
    d: Dialect,
    s: &Spec,
    link: ordered_core::linked::Link,
    seeds: ordered_conformance::Linked,
) -> Vec<String> {
    let q = |x: &str| sql::quote(d, x);
    let column = link_column(link);
    let mut out = vec![format!(
        "CREATE TABLE {} ({} {}, {} BIGINT NOT NULL, {} VARCHAR(20) NOT NULL DEFAULT '', {} BIGINT NULL)",
        q(s.table),
        q("id"),
        ordered_core::migration::serial_primary_key(d),
        q("parent_id"),
        q("title"),
        q(column)
    )];
    let rows = seeds.rows();
    for &(id, list, prev) in &rows {
        let to = match link {
            ordered_core::linked::Link::Prev => prev,
            // the row whose previous row this one is
            ordered_core::linked::Link::Next => rows
                .iter()
                .find(|r| r.2 == Some(id) && r.1 == list)
                .map(|r| r.0),
        };
        out.push(format!(
            "INSERT INTO {} ({}, {}, {}) VALUES ({id}, {list}, {})",
            q(s.table),
            q("id"),
            q("parent_id"),
            q(column),
            to.map_or("NULL".to_owned(), |v| v.to_string())
        ));
    }
    out.extend(ordered_core::migration::add_position_column(d, s).up);
    out
}

fn link_column(link: ordered_core::linked::Link) -> &'static str {
    match link {
        ordered_core::linked::Link::Prev => "prev_id",
        ordered_core::linked::Link::Next => "next_id",
    }
}

/// A survey or a conversion as the outcome's position: what the ORMs must agree on.
fn linked_outcome(lists: usize, rows: u64, broken: &[ordered_core::linked::Broken]) -> Outcome {
    Ok((
        Some(Position::Key(format!(
            "lists={lists} rows={rows} broken={broken:?}"
        ))),
        Changes::default(),
    ))
}

/// The statements that read the smallest and the largest id of an app's own table
/// ([`Schema::own`]), whose rows cannot be read as the library's before the adoption
/// (NULL positions).
fn id_bounds(d: Dialect, s: &Spec) -> [Statement; 2] {
    ["MIN", "MAX"].map(|f| Statement {
        sql: format!(
            "SELECT {f}({}) AS o_count FROM {}",
            sql::quote(d, "id"),
            sql::quote(d, s.table)
        ),
        args: Vec::new(),
        returns: Returns::Count,
    })
}

/// The five seeded ids between those bounds (an auto-increment steps evenly: by 1, or
/// on a Galera cluster by its size).
fn own_ids(bounds: [Reply; 2], schema: Schema) -> Vec<Id> {
    let [Reply::Count(lo), Reply::Count(hi)] = bounds else {
        panic!("{bounds:?}")
    };
    let n = if schema.numbers == Numbers::Trello {
        9
    } else {
        5
    };
    (0..n)
        .map(|k| Id::Int(lo + k * (hi - lo) / (n - 1)))
        .collect()
}

/// What [`Step::DropUnique`] runs: SeaORM 2.0's schema sync dropping the constraint.
fn drop_unique(d: Dialect, s: &Spec) -> String {
    let (t, u) = (sql::quote(d, s.table), sql::quote(d, &s.unique_name()));
    match d {
        Dialect::Postgres => format!("ALTER TABLE {t} DROP CONSTRAINT {u}"),
        Dialect::Mysql => format!("DROP INDEX {u} ON {t}"),
        Dialect::Sqlite => format!("DROP INDEX {u}"),
    }
}

/// What [`Step::WriteAround`] runs: the app sets a position itself.
fn write_around(d: Dialect, s: &Spec, id: Id, value: Option<i64>) -> String {
    format!(
        "UPDATE {} SET {} = {} WHERE {} = {}",
        sql::quote(d, s.table),
        sql::quote(d, s.position),
        value.map_or("NULL".to_owned(), |v| v.to_string()),
        sql::quote(d, "id"),
        key_literal(d, id, s.id_type)
    )
}

/// The outcome of [`Step::WriteAround`]: the database took the write, or refused it.
fn around<E: std::fmt::Display>(r: Result<(), E>) -> Outcome {
    match r {
        Ok(()) => Ok((None, Changes::default())),
        Err(_) => Err(ordered_core::Error::InvalidRequest(
            "the database refused a write around the library",
        )),
    }
}

/// The outcome of `ensure_ordering` or `adopt_ordering`: the mask of what it added.
/// The rows a numeric adoption renumbered go above bit 24.
fn ensured(e: ordered_core::migration::Ensured) -> (Option<Position>, Changes) {
    let renumbered = i64::try_from(e.renumbered).unwrap_or(0) << 24;
    (
        Some(Position::Int(
            ordered_conformance::fixes_mask(&e) + renumbered,
        )),
        Changes::default(),
    )
}

/// Checks a step against the rows before and after it (`None`: the table could not be
/// read as the library's, before an adoption). A schema step changes no row unless it
/// renumbered; a write around the library must have been refused.
fn check_any(
    tag: &str,
    name: &str,
    i: usize,
    step: &Step,
    before: Option<Vec<Row>>,
    after: Option<Vec<Row>>,
    r: &Outcome,
) {
    match step {
        // archiving is the app's own write: the row leaves the shown list
        Step::Archive(_) => {}
        // the app's own write of a number the database takes
        Step::WriteNumber(..) => {
            assert!(r.is_ok(), "{tag} {name} step {i}: {r:?}");
        }
        // a conversion writes the positions of the lists it converted
        Step::ConvertLinked => {}
        Step::VerifyLinked => {
            assert_eq!(before, after, "{tag} {name} step {i}: a survey wrote");
        }
        Step::Ensure | Step::Adopt | Step::CheckSchema | Step::DropUnique => {
            let renumbered = matches!(r, Ok((Some(Position::Int(m)), _)) if m & 8 != 0);
            if !renumbered {
                assert_eq!(
                    before, after,
                    "{tag} {name} step {i}: a schema step moved rows"
                );
            }
        }
        // a read, or the records' purge: no row written
        Step::Page(..) | Step::PurgeRequests(..) => {
            assert_eq!(before, after, "{tag} {name} step {i}: a page read wrote");
        }
        Step::WriteAround(..) => {
            assert!(
                r.is_err(),
                "{tag} {name} step {i}: the write around the library was taken"
            );
            assert_eq!(before, after, "{tag} {name} step {i}");
        }
        _ => {
            let before = before.unwrap_or_else(|| panic!("{tag} {name} step {i}: unreadable rows"));
            let after = after.unwrap_or_else(|| panic!("{tag} {name} step {i}: unreadable rows"));
            check_step(tag, name, i, &before, &after, r);
        }
    }
}

/// The seeded rows of an adopted table, in insertion order (their ids ascending).
fn seeded(mut rows: Vec<Row>) -> Vec<Id> {
    rows.sort_unstable_by_key(|r| r.id);
    rows.into_iter().map(|r| r.id).collect()
}

/// What `Step::Archive` runs: the app archives a row behind the library's back.
fn archive(d: Dialect, s: &Spec, id: Id) -> String {
    format!(
        "UPDATE {} SET archived = 1 WHERE {} = {}",
        sql::quote(d, s.table),
        sql::quote(d, "id"),
        key_literal(d, id, s.id_type)
    )
}

/// Every row of both collections, the ones the row filter leaves out included: what a
/// step's changes are checked against.
fn all_rows<C: ordered_diesel::OrderedConnection>(c: &mut C, s: &Spec, schema: Schema) -> Vec<Row> {
    try_all_rows(c, s, schema).expect("the rows")
}

fn try_all_rows<C: ordered_diesel::OrderedConnection>(
    c: &mut C,
    s: &Spec,
    schema: Schema,
) -> Option<Vec<Row>> {
    let mut out = Vec::new();
    for p in schema.collections() {
        let stmt = sql::list_all(C::DIALECT, s, schema.parent(p));
        match c.run(&stmt, Wire::of(s)).ok()? {
            Reply::Rows(rows) => out.extend(rows),
            other => panic!("{other:?}"),
        }
    }
    Some(out)
}

async fn all_rows_async<C: ordered_diesel::async_diesel::AsyncOrderedConnection>(
    c: &mut C,
    s: &Spec,
    schema: Schema,
) -> Vec<Row> {
    try_all_rows_async(c, s, schema).await.expect("the rows")
}

async fn try_all_rows_async<C: ordered_diesel::async_diesel::AsyncOrderedConnection>(
    c: &mut C,
    s: &Spec,
    schema: Schema,
) -> Option<Vec<Row>> {
    let mut out = Vec::new();
    for p in schema.collections() {
        let stmt = sql::list_all(C::DIALECT, s, schema.parent(p));
        match c.run(&stmt, Wire::of(s)).await.ok()? {
            Reply::Rows(rows) => out.extend(rows),
            other => panic!("{other:?}"),
        }
    }
    Some(out)
}

async fn all_rows_seaorm(db: &sea_orm::DatabaseConnection, s: &Spec, schema: Schema) -> Vec<Row> {
    try_all_rows_seaorm(db, s, schema).await.expect("the rows")
}

async fn try_all_rows_seaorm(
    db: &sea_orm::DatabaseConnection,
    s: &Spec,
    schema: Schema,
) -> Option<Vec<Row>> {
    let d = ordered_seaorm::dialect(db.get_database_backend()).unwrap();
    let mut out = Vec::new();
    for p in schema.collections() {
        let stmt = sql::list_all(d, s, schema.parent(p));
        match ordered_seaorm::__private::run(db, &stmt, Wire::of(s))
            .await
            .ok()?
        {
            Reply::Rows(rows) => out.extend(rows),
            other => panic!("{other:?}"),
        }
    }
    Some(out)
}

/// Every collection is sound, the rows the filter leaves out included.
fn assert_sound(tag: &str, name: &str, reports: Vec<ordered_core::Report>) {
    for r in reports {
        assert!(r.is_ok(), "{tag} {name}: {r:?}");
    }
}

/// The insert statements. With `id` (a key the application chooses) one insert that
/// names it; without, the last statement returns the new id as `o_count`.
fn insert(d: Dialect, s: &Spec, id: Option<Id>, scope: Id, pos: &Position) -> Vec<Statement> {
    let q = |x: &str| sql::quote(d, x);
    let arg: ordered_core::adapter::Arg = pos.into();
    let ph = |n: usize| match d {
        Dialect::Postgres => format!("${n}"),
        _ => "?".to_owned(),
    };
    // a split table: the parent key, then the status
    let mut parts = scope.parts();
    let parent = parts.next().unwrap_or(Id::GLOBAL);
    if let Some(id) = id
        && s.nullable()
        && parent == Id::ROOT
    {
        // the root list: a NULL scope
        let (id_ph, id_arg) = sql::key_param(d, s.id_type, id, 1);
        return vec![Statement {
            sql: format!(
                "INSERT INTO {} ({}, {}, {}) VALUES ({id_ph}, NULL, {})",
                q(s.table),
                q("id"),
                q("parent_id"),
                q("position"),
                ph(2)
            ),
            args: vec![id_arg, arg],
            returns: Returns::Nothing,
        }];
    }
    if let Some(id) = id {
        let (id_ph, id_arg) = sql::key_param(d, s.id_type, id, 1);
        let (p_ph, p_arg) = sql::key_param(d, s.parent_type, parent, 2);
        let mut args = vec![id_arg, p_arg, arg];
        let (status_col, status_ph) = match parts.next() {
            Some(status) => {
                let (ph4, a) = sql::key_param(d, KeyType::Text, status, 4);
                args.push(a);
                (format!(", {}", q("status")), format!(", {ph4}"))
            }
            None => (String::new(), String::new()),
        };
        return vec![Statement {
            sql: format!(
                "INSERT INTO {} ({}, {}, {}{status_col}) VALUES ({id_ph}, {p_ph}, {}{status_ph})",
                q(s.table),
                q("id"),
                q("parent_id"),
                q("position"),
                ph(3)
            ),
            args,
            returns: Returns::Nothing,
        }];
    }
    assert!(parts.next().is_none(), "the split scripts choose their ids");
    let (cols, p_ph, args) = if s.is_global() {
        // no scope column: the position alone
        (
            format!("{} ({})", q(s.table), q("position")),
            None,
            vec![arg],
        )
    } else {
        let (p_ph, p_arg) = sql::key_param(d, s.parent_type, parent, 1);
        (
            format!("{} ({}, {})", q(s.table), q("parent_id"), q("position")),
            Some(p_ph),
            vec![p_arg, arg],
        )
    };
    let values = match (&p_ph, d) {
        (Some(p), Dialect::Postgres) => format!("{p}, $2"),
        (Some(p), _) => format!("{p}, ?"),
        (None, Dialect::Postgres) => "$1".to_owned(),
        (None, _) => "?".to_owned(),
    };
    match d {
        Dialect::Postgres => vec![Statement {
            sql: format!(
                "INSERT INTO {cols} VALUES ({values}) RETURNING CAST({} AS BIGINT) AS o_count",
                q("id")
            ),
            args,
            returns: Returns::Count,
        }],
        Dialect::Sqlite => vec![Statement {
            sql: format!(
                "INSERT INTO {cols} VALUES ({values}) RETURNING {} AS o_count",
                q("id")
            ),
            args,
            returns: Returns::Count,
        }],
        Dialect::Mysql => vec![
            Statement {
                sql: format!("INSERT INTO {cols} VALUES ({values})"),
                args,
                returns: Returns::Nothing,
            },
            Statement {
                sql: "SELECT CAST(LAST_INSERT_ID() AS SIGNED) AS o_count".into(),
                args: vec![],
                returns: Returns::Count,
            },
        ],
    }
}

/// The new row's id: the one chosen, or the one the last insert statement returned.
fn counted(s: &Spec, parent: Id, chosen: Option<Id>, r: Reply) -> Id {
    match (chosen, r) {
        // an association row: named by its list and its own key
        (Some(id), _) if s.is_link() => Id::tuple([parent, id]).unwrap(),
        (Some(id), _) => id,
        (None, Reply::Count(n)) => Id::Int(n),
        (None, other) => panic!("expected an id, got {other:?}"),
    }
}

fn diesel_outcome<T>(
    r: Result<T, ordered_diesel::Error>,
    pos: impl FnOnce(T) -> (Option<Position>, Changes),
) -> Outcome {
    match r {
        Ok(v) => Ok(pos(v)),
        Err(ordered_diesel::Error::Ordering(e)) => Err(e),
        Err(e) => panic!("diesel: unexpected error {e}"),
    }
}

fn seaorm_outcome<T>(
    r: Result<T, ordered_seaorm::Error>,
    pos: impl FnOnce(T) -> (Option<Position>, Changes),
) -> Outcome {
    match r {
        Ok(v) => Ok(pos(v)),
        Err(ordered_seaorm::Error::Ordering(e)) => Err(e),
        Err(e) => panic!("seaorm: unexpected error {e}"),
    }
}

/// Runs a script through Diesel on `conn`; the final lists are read through `reader`
/// (another node of a cluster) when given, else through `conn`.
fn run_diesel<C>(
    mut conn: C,
    reader: Option<C>,
    tag: &str,
    name: &str,
    schema: Schema,
    steps: &[Step],
) -> (Vec<Outcome>, Vec<Row>)
where
    C: ordered_diesel::OrderedConnection + SimpleConnection,
    AppRow: diesel::QueryableByName<C::Backend>,
{
    use ordered_conformance::Step::*;
    let s = spec(name, tag, schema);
    for stmt in ddl(C::DIALECT, &s, schema) {
        conn.batch_execute(&stmt)
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    if steps.iter().any(Step::is_keyed) {
        for st in records_ddl(C::DIALECT, &s) {
            conn.batch_execute(&st)
                .unwrap_or_else(|e| panic!("{st}: {e}"));
        }
    }
    let o = ordered_diesel::OrderedTable::new(s).changes_limit(CHANGES_LIMIT);
    // the cursor the last page step returned
    let mut cursor: Option<Cursor> = None;
    let mut ids: Vec<Id> = if let Some((_, seeds)) = schema.linked {
        (0..seeds.rows().len() as i64)
            .map(|k| Id::Int(101 + k))
            .collect()
    } else if schema.own {
        own_ids(
            id_bounds(C::DIALECT, &s).map(|st| conn.run(&st, Wire::PLAIN).unwrap()),
            schema,
        )
    } else if schema.adopt {
        seeded(all_rows(&mut conn, &s, schema))
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    let mut keys = Keys::default();
    let lists = |conn: &mut C| {
        let mut rows = Vec::new();
        for p in schema.settled() {
            rows.extend(o.list(conn, schema.parent(p)).unwrap());
        }
        rows
    };
    for (i, whole) in steps.iter().enumerate() {
        // a step under a request key: the same step through a handle with the key
        let (o, step) = keyed!(o, whole);
        let replayed = std::cell::Cell::new(false);
        let before = try_all_rows(&mut conn, &s, schema);
        let pos = |x: ordered_core::Outcome| {
            replayed.set(x.replayed);
            (x.position, x.changes)
        };
        let r = match step {
            Insert(parent, at) | InsertAs(parent, at, _) => {
                let at = at.resolve(&ids, schema.missing());
                // the key the app chooses: a new one, or item i's again
                let chosen = match step {
                    InsertAs(.., i) => schema.item(*i),
                    _ => schema.item(ids.len()),
                };
                let f = |c: &mut C, slot: ordered_diesel::Slot| {
                    let mut last = Reply::None;
                    for st in insert(C::DIALECT, &s, chosen, slot.parent, &slot.position) {
                        last = c.run(&st, Wire::PLAIN)?;
                    }
                    Ok(counted(&s, slot.parent, chosen, last))
                };
                let r = o.insert(&mut conn, schema.parent(*parent), at, f);
                diesel_outcome(r, |ins| {
                    ids.push(ins.value);
                    (ins.outcome.position, ins.outcome.changes)
                })
            }
            Move(i, at) => {
                // through the hook, which must see the outcome's changes
                let mut seen = None;
                let req = Request::Move {
                    item: ids[*i],
                    at: at.resolve(&ids, schema.missing()),
                };
                let r = o.apply(&mut conn, req, |_, c| {
                    seen = Some(c.clone());
                    Ok(())
                });
                if let Ok(x) = &r {
                    // a move that changes nothing runs no hook, nor does a replay
                    let want = (!x.unchanged && !x.replayed).then_some(&x.changes);
                    assert_eq!(seen.as_ref(), want, "the hook's changes");
                }
                diesel_outcome(r, pos)
            }
            MoveTo(i, p, at) => diesel_outcome(
                o.move_to_parent(
                    &mut conn,
                    ids[*i],
                    schema.parent(*p),
                    at.resolve(&ids, schema.missing()),
                ),
                pos,
            ),
            MoveExpecting(i, at, v) => diesel_outcome(
                o.clone().expect_version(*v).move_to(
                    &mut conn,
                    ids[*i],
                    at.resolve(&ids, schema.missing()),
                ),
                pos,
            ),
            Swap(a, b) => diesel_outcome(o.swap(&mut conn, ids[*a], ids[*b]), pos),
            Remove(i) => diesel_outcome(o.remove(&mut conn, ids[*i]), pos),
            RemoveWith(i, r) => {
                diesel_outcome(o.clone().removal(*r).remove(&mut conn, ids[*i]), pos)
            }
            Reorder(p, order) => {
                let want: Vec<Id> = order.iter().map(|i| ids[*i]).collect();
                diesel_outcome(o.reorder(&mut conn, schema.parent(*p), &want), pos)
            }
            Rebalance(p) => diesel_outcome(o.rebalance(&mut conn, schema.parent(*p)), pos),
            MoveAfterWrongKey(i) => diesel_outcome(
                o.move_to(
                    &mut conn,
                    ids[*i],
                    ordered_core::Placement::After(schema.wrong()),
                ),
                pos,
            ),
            Archive(i) => {
                conn.batch_execute(&archive(C::DIALECT, &s, ids[*i]))
                    .unwrap();
                Ok((None, Changes::default()))
            }
            Ensure => diesel_outcome(o.ensure_ordering(&mut conn), ensured),
            VerifyLinked => {
                let (link, _) = schema.linked.expect("a linked table");
                match o.verify_linked(&mut conn, link_column(link), link) {
                    Ok(v) => linked_outcome(v.lists.len(), v.rows, &v.broken),
                    Err(e) => diesel_outcome(Err::<(), _>(e), |()| (None, Changes::default())),
                }
            }
            ConvertLinked => {
                let (link, _) = schema.linked.expect("a linked table");
                match o.convert_linked(&mut conn, link_column(link), link) {
                    Ok(v) => linked_outcome(v.lists as usize, v.rows, &v.broken),
                    Err(e) => diesel_outcome(Err::<(), _>(e), |()| (None, Changes::default())),
                }
            }
            Adopt => diesel_outcome(o.adopt_ordering(&mut conn, &[]), ensured),
            CheckSchema => {
                diesel_outcome(o.check_schema(&mut conn), |()| (None, Changes::default()))
            }
            DropUnique => {
                conn.batch_execute(&drop_unique(C::DIALECT, &s)).unwrap();
                Ok((None, Changes::default()))
            }
            WriteAround(i, v) => {
                around(conn.batch_execute(&write_around(C::DIALECT, &s, ids[*i], *v)))
            }
            WriteNumber(i, v) => {
                around(conn.batch_execute(&write_around(C::DIALECT, &s, ids[*i], Some(*v))))
            }
            MoveUp(i) => diesel_outcome(o.move_up(&mut conn, ids[*i]), pos),
            MoveToWrongScope(i) => diesel_outcome(
                o.move_to_parent(
                    &mut conn,
                    ids[*i],
                    schema.wrong_scope(),
                    ordered_core::Placement::Last,
                ),
                pos,
            ),
            MoveWithin(i, at, l) => diesel_outcome(
                o.clone().within(schema.parent(*l)).move_to(
                    &mut conn,
                    ids[*i],
                    at.resolve(&ids, schema.missing()),
                ),
                pos,
            ),
            MoveToWithin(i, p, at, l) => diesel_outcome(
                o.clone().within(schema.parent(*l)).move_to_parent(
                    &mut conn,
                    ids[*i],
                    schema.parent(*p),
                    at.resolve(&ids, schema.missing()),
                ),
                pos,
            ),
            RemoveWithin(i, l) => diesel_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .remove(&mut conn, ids[*i]),
                pos,
            ),
            MoveVersionOrNeighbours(i, at, v) => diesel_outcome(
                o.clone()
                    .concurrency(Concurrency::VersionOrNeighbours(*v))
                    .move_to(&mut conn, ids[*i], at.resolve(&ids, schema.missing())),
                pos,
            ),
            ListModels(p) => {
                let parent = schema.parent(*p);
                let plain = o.list_versioned(&mut conn, parent).map_err(|e| {
                    e.refusal()
                        .cloned()
                        .unwrap_or(ordered_core::Error::Exhausted)
                });
                diesel_outcome(o.list_models::<AppRow, _>(&mut conn, parent), |m| {
                    models_step(parent, plain, m)
                })
            }
            PurgeRequests(age, batch) => {
                // a record made in this millisecond is not older than 0 s yet
                std::thread::sleep(std::time::Duration::from_millis(3));
                diesel_outcome(
                    o.purge_requests(&mut conn, std::time::Duration::from_secs(*age), *batch),
                    purged,
                )
            }
            Keyed(..) => panic!("a key inside a key"),
            Page(p, limit, from) => {
                let parent = schema.parent(*p);
                let after = page_from(&cursor, *from);
                let full = o.list(&mut conn, parent).unwrap_or_default();
                diesel_outcome(o.page(&mut conn, parent, after.as_ref(), *limit), |pg| {
                    page_step(&full, after.as_ref(), *limit, &mut cursor, pg)
                })
            }
        };
        if let MoveAfterWrongKey(_) = step {
            assert!(
                matches!(
                    r,
                    Err(ordered_core::Error::WrongKeyType { .. }
                        | ordered_core::Error::WrongLinkKey { .. })
                ),
                "{tag} {name} step {i}: {r:?}"
            );
        }
        if let MoveToWrongScope(_) = step {
            assert!(
                matches!(r, Err(ordered_core::Error::WrongScope { .. })),
                "{tag} {name} step {i}: {r:?}"
            );
        }
        // archiving is the app's own write: the row leaves the shown list
        let after = try_all_rows(&mut conn, &s, schema);
        let at = Check { tag, name, i };
        at.step(
            &mut keys,
            (whole, step),
            (before, after),
            &r,
            replayed.get(),
        );
        out.push(r);
    }
    let mut reader = reader.unwrap_or(conn);
    let rows = lists(&mut reader);
    assert_sound(
        tag,
        name,
        schema
            .settled()
            .into_iter()
            .map(|p| o.verify(&mut reader, schema.parent(p)).unwrap())
            .collect(),
    );
    out.push(versioned_step(
        &rows,
        schema.parent(schema.settled()[0]),
        o.list_versioned(&mut reader, schema.parent(schema.settled()[0]))
            .unwrap(),
    ));
    (out, rows)
}

fn async_inserter<C>(
    d: Dialect,
    s: Spec,
    chosen: Option<Id>,
) -> impl for<'a> FnMut(
    &'a mut C,
    ordered_diesel::Slot,
) -> ordered_diesel::async_diesel::InsertFuture<'a, Id>
+ Send
where
    C: ordered_diesel::async_diesel::AsyncOrderedConnection,
{
    move |c, slot| {
        Box::pin(async move {
            let mut last = Reply::None;
            for st in insert(d, &s, chosen, slot.parent, &slot.position) {
                last = c.run(&st, Wire::PLAIN).await?;
            }
            Ok(counted(&s, slot.parent, chosen, last))
        })
    }
}

/// Runs a script through diesel-async on `conn`; the final lists are read through
/// `reader` when given.
async fn run_diesel_async<C>(
    mut conn: C,
    reader: Option<C>,
    tag: &str,
    name: &str,
    schema: Schema,
    steps: &[Step],
) -> (Vec<Outcome>, Vec<Row>)
where
    C: ordered_diesel::async_diesel::AsyncOrderedConnection + diesel_async::SimpleAsyncConnection,
    AppRow: diesel::QueryableByName<C::Backend>,
{
    use ordered_conformance::Step::*;
    let d = C::DIALECT;
    let s = spec(name, tag, schema);
    for stmt in ddl(d, &s, schema) {
        conn.batch_execute(&stmt)
            .await
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    if steps.iter().any(Step::is_keyed) {
        for st in records_ddl(d, &s) {
            conn.batch_execute(&st)
                .await
                .unwrap_or_else(|e| panic!("{st}: {e}"));
        }
    }
    let o = ordered_diesel::async_diesel::OrderedTable::new(s).changes_limit(CHANGES_LIMIT);
    // the cursor the last page step returned
    let mut cursor: Option<Cursor> = None;
    let mut ids: Vec<Id> = if let Some((_, seeds)) = schema.linked {
        (0..seeds.rows().len() as i64)
            .map(|k| Id::Int(101 + k))
            .collect()
    } else if schema.own {
        let [lo, hi] = id_bounds(d, &s);
        own_ids(
            [
                conn.run(&lo, Wire::PLAIN).await.unwrap(),
                conn.run(&hi, Wire::PLAIN).await.unwrap(),
            ],
            schema,
        )
    } else if schema.adopt {
        seeded(all_rows_async(&mut conn, &s, schema).await)
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    let mut keys = Keys::default();
    async fn lists<C: ordered_diesel::async_diesel::AsyncOrderedConnection>(
        o: &ordered_diesel::async_diesel::OrderedTable,
        conn: &mut C,
        schema: Schema,
    ) -> Vec<Row> {
        let mut rows = Vec::new();
        for p in schema.settled() {
            rows.extend(o.list(conn, schema.parent(p)).await.unwrap());
        }
        rows
    }
    for (i, whole) in steps.iter().enumerate() {
        // a step under a request key: the same step through a handle with the key
        let (o, step) = keyed!(o, whole);
        let replayed = std::cell::Cell::new(false);
        let before = try_all_rows_async(&mut conn, &s, schema).await;
        let pos = |x: ordered_core::Outcome| {
            replayed.set(x.replayed);
            (x.position, x.changes)
        };
        let r = match step {
            Insert(parent, at) | InsertAs(parent, at, _) => {
                let at = at.resolve(&ids, schema.missing());
                // the key the app chooses: a new one, or item i's again
                let chosen = match step {
                    InsertAs(.., i) => schema.item(*i),
                    _ => schema.item(ids.len()),
                };
                let r = o
                    .insert(
                        &mut conn,
                        schema.parent(*parent),
                        at,
                        async_inserter::<C>(d, s, chosen),
                    )
                    .await;
                diesel_outcome(r, |ins| {
                    ids.push(ins.value);
                    (ins.outcome.position, ins.outcome.changes)
                })
            }
            Move(i, at) => {
                let mut seen = None;
                let req = Request::Move {
                    item: ids[*i],
                    at: at.resolve(&ids, schema.missing()),
                };
                let r = o
                    .apply(&mut conn, req, |_, c| {
                        seen = Some(c.clone());
                        Box::pin(async { Ok(()) })
                    })
                    .await;
                if let Ok(x) = &r {
                    // a move that changes nothing runs no hook, nor does a replay
                    let want = (!x.unchanged && !x.replayed).then_some(&x.changes);
                    assert_eq!(seen.as_ref(), want, "the hook's changes");
                }
                diesel_outcome(r, pos)
            }
            MoveTo(i, p, at) => diesel_outcome(
                o.move_to_parent(
                    &mut conn,
                    ids[*i],
                    schema.parent(*p),
                    at.resolve(&ids, schema.missing()),
                )
                .await,
                pos,
            ),
            MoveExpecting(i, at, v) => diesel_outcome(
                o.clone()
                    .expect_version(*v)
                    .move_to(&mut conn, ids[*i], at.resolve(&ids, schema.missing()))
                    .await,
                pos,
            ),
            Swap(a, b) => diesel_outcome(o.swap(&mut conn, ids[*a], ids[*b]).await, pos),
            Remove(i) => diesel_outcome(o.remove(&mut conn, ids[*i]).await, pos),
            RemoveWith(i, r) => {
                diesel_outcome(o.clone().removal(*r).remove(&mut conn, ids[*i]).await, pos)
            }
            Reorder(p, order) => {
                let want: Vec<Id> = order.iter().map(|i| ids[*i]).collect();
                diesel_outcome(o.reorder(&mut conn, schema.parent(*p), &want).await, pos)
            }
            Rebalance(p) => diesel_outcome(o.rebalance(&mut conn, schema.parent(*p)).await, pos),
            MoveAfterWrongKey(i) => diesel_outcome(
                o.move_to(
                    &mut conn,
                    ids[*i],
                    ordered_core::Placement::After(schema.wrong()),
                )
                .await,
                pos,
            ),
            Archive(i) => {
                conn.batch_execute(&archive(d, &s, ids[*i])).await.unwrap();
                Ok((None, Changes::default()))
            }
            Ensure => diesel_outcome(o.ensure_ordering(&mut conn).await, ensured),
            VerifyLinked => {
                let (link, _) = schema.linked.expect("a linked table");
                match o.verify_linked(&mut conn, link_column(link), link).await {
                    Ok(v) => linked_outcome(v.lists.len(), v.rows, &v.broken),
                    Err(e) => diesel_outcome(Err::<(), _>(e), |()| (None, Changes::default())),
                }
            }
            ConvertLinked => {
                let (link, _) = schema.linked.expect("a linked table");
                match o.convert_linked(&mut conn, link_column(link), link).await {
                    Ok(v) => linked_outcome(v.lists as usize, v.rows, &v.broken),
                    Err(e) => diesel_outcome(Err::<(), _>(e), |()| (None, Changes::default())),
                }
            }
            Adopt => diesel_outcome(o.adopt_ordering(&mut conn, &[]).await, ensured),
            CheckSchema => diesel_outcome(o.check_schema(&mut conn).await, |()| {
                (None, Changes::default())
            }),
            DropUnique => {
                conn.batch_execute(&drop_unique(d, &s)).await.unwrap();
                Ok((None, Changes::default()))
            }
            WriteAround(i, v) => {
                around(conn.batch_execute(&write_around(d, &s, ids[*i], *v)).await)
            }
            WriteNumber(i, v) => around(
                conn.batch_execute(&write_around(d, &s, ids[*i], Some(*v)))
                    .await,
            ),
            MoveUp(i) => diesel_outcome(o.move_up(&mut conn, ids[*i]).await, pos),
            MoveToWrongScope(i) => diesel_outcome(
                o.move_to_parent(
                    &mut conn,
                    ids[*i],
                    schema.wrong_scope(),
                    ordered_core::Placement::Last,
                )
                .await,
                pos,
            ),
            MoveWithin(i, at, l) => diesel_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .move_to(&mut conn, ids[*i], at.resolve(&ids, schema.missing()))
                    .await,
                pos,
            ),
            MoveToWithin(i, p, at, l) => diesel_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .move_to_parent(
                        &mut conn,
                        ids[*i],
                        schema.parent(*p),
                        at.resolve(&ids, schema.missing()),
                    )
                    .await,
                pos,
            ),
            RemoveWithin(i, l) => diesel_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .remove(&mut conn, ids[*i])
                    .await,
                pos,
            ),
            MoveVersionOrNeighbours(i, at, v) => diesel_outcome(
                o.clone()
                    .concurrency(Concurrency::VersionOrNeighbours(*v))
                    .move_to(&mut conn, ids[*i], at.resolve(&ids, schema.missing()))
                    .await,
                pos,
            ),
            ListModels(p) => {
                let parent = schema.parent(*p);
                let plain = o.list_versioned(&mut conn, parent).await.map_err(|e| {
                    e.refusal()
                        .cloned()
                        .unwrap_or(ordered_core::Error::Exhausted)
                });
                diesel_outcome(o.list_models::<AppRow, _>(&mut conn, parent).await, |m| {
                    models_step(parent, plain, m)
                })
            }
            PurgeRequests(age, batch) => {
                tokio::time::sleep(std::time::Duration::from_millis(3)).await;
                diesel_outcome(
                    o.purge_requests(&mut conn, std::time::Duration::from_secs(*age), *batch)
                        .await,
                    purged,
                )
            }
            Keyed(..) => panic!("a key inside a key"),
            Page(p, limit, from) => {
                let parent = schema.parent(*p);
                let after = page_from(&cursor, *from);
                let full = o.list(&mut conn, parent).await.unwrap_or_default();
                diesel_outcome(
                    o.page(&mut conn, parent, after.as_ref(), *limit).await,
                    |pg| page_step(&full, after.as_ref(), *limit, &mut cursor, pg),
                )
            }
        };
        let after = try_all_rows_async(&mut conn, &s, schema).await;
        let at = Check { tag, name, i };
        at.step(
            &mut keys,
            (whole, step),
            (before, after),
            &r,
            replayed.get(),
        );
        out.push(r);
    }
    let mut reader = reader.unwrap_or(conn);
    let rows = lists(&o, &mut reader, schema).await;
    let mut reports = Vec::new();
    for p in schema.settled() {
        reports.push(o.verify(&mut reader, schema.parent(p)).await.unwrap());
    }
    assert_sound(tag, name, reports);
    out.push(versioned_step(
        &rows,
        schema.parent(schema.settled()[0]),
        o.list_versioned(&mut reader, schema.parent(schema.settled()[0]))
            .await
            .unwrap(),
    ));
    (out, rows)
}

fn seaorm_inserter(
    d: Dialect,
    s: Spec,
    chosen: Option<Id>,
) -> impl for<'a> FnMut(
    &'a sea_orm::DatabaseTransaction,
    ordered_seaorm::Slot,
) -> ordered_seaorm::InsertFuture<'a, Id>
+ Send {
    move |txn, slot| {
        Box::pin(async move {
            let mut last = Reply::None;
            for st in insert(d, &s, chosen, slot.parent, &slot.position) {
                last = ordered_seaorm::__private::run(txn, &st, Wire::PLAIN).await?;
            }
            Ok(counted(&s, slot.parent, chosen, last))
        })
    }
}

/// Runs a script through SeaORM at `url`; the final lists are read at `read_url` when
/// given.
async fn run_seaorm(
    url: &str,
    read_url: Option<&str>,
    tag: &str,
    name: &str,
    schema: Schema,
    steps: &[Step],
) -> (Vec<Outcome>, Vec<Row>) {
    use ordered_conformance::Step::*;
    let db = Database::connect(url).await.unwrap();
    let d = ordered_seaorm::dialect(db.get_database_backend()).unwrap();
    let s = spec(name, tag, schema);
    // one connection of the pool for the whole script: the MySQL adoption migration
    // keeps a statement in a session variable between its statements
    let one = db.begin().await.unwrap();
    for stmt in ddl(d, &s, schema) {
        one.execute_unprepared(&stmt)
            .await
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    one.commit().await.unwrap();
    if steps.iter().any(Step::is_keyed) {
        for st in records_ddl(d, &s) {
            db.execute_unprepared(&st)
                .await
                .unwrap_or_else(|e| panic!("{st}: {e}"));
        }
    }
    let o = ordered_seaorm::OrderedTable::new(s).changes_limit(CHANGES_LIMIT);
    // the cursor the last page step returned
    let mut cursor: Option<Cursor> = None;
    let mut ids: Vec<Id> = if let Some((_, seeds)) = schema.linked {
        (0..seeds.rows().len() as i64)
            .map(|k| Id::Int(101 + k))
            .collect()
    } else if schema.own {
        let [lo, hi] = id_bounds(d, &s);
        own_ids(
            [
                ordered_seaorm::__private::run(&db, &lo, Wire::PLAIN)
                    .await
                    .unwrap(),
                ordered_seaorm::__private::run(&db, &hi, Wire::PLAIN)
                    .await
                    .unwrap(),
            ],
            schema,
        )
    } else if schema.adopt {
        seeded(all_rows_seaorm(&db, &s, schema).await)
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    let mut keys = Keys::default();
    async fn lists(
        o: &ordered_seaorm::OrderedTable,
        db: &sea_orm::DatabaseConnection,
        schema: Schema,
    ) -> Vec<Row> {
        let mut rows = Vec::new();
        for p in schema.settled() {
            rows.extend(o.list(db, schema.parent(p)).await.unwrap());
        }
        rows
    }
    for (i, whole) in steps.iter().enumerate() {
        // a step under a request key: the same step through a handle with the key
        let (o, step) = keyed!(o, whole);
        let replayed = std::cell::Cell::new(false);
        let before = try_all_rows_seaorm(&db, &s, schema).await;
        let pos = |x: ordered_core::Outcome| {
            replayed.set(x.replayed);
            (x.position, x.changes)
        };
        let r = match step {
            Insert(parent, at) | InsertAs(parent, at, _) => {
                let at = at.resolve(&ids, schema.missing());
                // the key the app chooses: a new one, or item i's again
                let chosen = match step {
                    InsertAs(.., i) => schema.item(*i),
                    _ => schema.item(ids.len()),
                };
                let f = seaorm_inserter(d, s, chosen);
                let r = o.insert(&db, schema.parent(*parent), at, f).await;
                seaorm_outcome(r, |ins| {
                    ids.push(ins.value);
                    (ins.outcome.position, ins.outcome.changes)
                })
            }
            Move(i, at) => {
                let mut seen = None;
                let req = Request::Move {
                    item: ids[*i],
                    at: at.resolve(&ids, schema.missing()),
                };
                let r = o
                    .apply(&db, req, |_, c| {
                        seen = Some(c.clone());
                        Box::pin(async { Ok(()) })
                    })
                    .await;
                if let Ok(x) = &r {
                    // a move that changes nothing runs no hook, nor does a replay
                    let want = (!x.unchanged && !x.replayed).then_some(&x.changes);
                    assert_eq!(seen.as_ref(), want, "the hook's changes");
                }
                seaorm_outcome(r, pos)
            }
            MoveTo(i, p, at) => seaorm_outcome(
                o.move_to_parent(
                    &db,
                    ids[*i],
                    schema.parent(*p),
                    at.resolve(&ids, schema.missing()),
                )
                .await,
                pos,
            ),
            MoveExpecting(i, at, v) => seaorm_outcome(
                o.clone()
                    .expect_version(*v)
                    .move_to(&db, ids[*i], at.resolve(&ids, schema.missing()))
                    .await,
                pos,
            ),
            Swap(a, b) => seaorm_outcome(o.swap(&db, ids[*a], ids[*b]).await, pos),
            Remove(i) => seaorm_outcome(o.remove(&db, ids[*i]).await, pos),
            RemoveWith(i, r) => {
                seaorm_outcome(o.clone().removal(*r).remove(&db, ids[*i]).await, pos)
            }
            Reorder(p, order) => {
                let want: Vec<Id> = order.iter().map(|i| ids[*i]).collect();
                seaorm_outcome(o.reorder(&db, schema.parent(*p), &want).await, pos)
            }
            Rebalance(p) => seaorm_outcome(o.rebalance(&db, schema.parent(*p)).await, pos),
            MoveAfterWrongKey(i) => seaorm_outcome(
                o.move_to(&db, ids[*i], ordered_core::Placement::After(schema.wrong()))
                    .await,
                pos,
            ),
            Archive(i) => {
                db.execute_unprepared(&archive(d, &s, ids[*i]))
                    .await
                    .unwrap();
                Ok((None, Changes::default()))
            }
            Ensure => seaorm_outcome(o.ensure_ordering(&db).await, ensured),
            VerifyLinked => {
                let (link, _) = schema.linked.expect("a linked table");
                match o.verify_linked(&db, link_column(link), link).await {
                    Ok(v) => linked_outcome(v.lists.len(), v.rows, &v.broken),
                    Err(e) => seaorm_outcome(Err::<(), _>(e), |()| (None, Changes::default())),
                }
            }
            ConvertLinked => {
                let (link, _) = schema.linked.expect("a linked table");
                match o.convert_linked(&db, link_column(link), link).await {
                    Ok(v) => linked_outcome(v.lists as usize, v.rows, &v.broken),
                    Err(e) => seaorm_outcome(Err::<(), _>(e), |()| (None, Changes::default())),
                }
            }
            Adopt => seaorm_outcome(o.adopt_ordering(&db, &[]).await, ensured),
            CheckSchema => {
                seaorm_outcome(o.check_schema(&db).await, |()| (None, Changes::default()))
            }
            DropUnique => {
                db.execute_unprepared(&drop_unique(d, &s)).await.unwrap();
                Ok((None, Changes::default()))
            }
            WriteAround(i, v) => around(
                db.execute_unprepared(&write_around(d, &s, ids[*i], *v))
                    .await
                    .map(|_| ()),
            ),
            WriteNumber(i, v) => around(
                db.execute_unprepared(&write_around(d, &s, ids[*i], Some(*v)))
                    .await
                    .map(|_| ()),
            ),
            MoveUp(i) => seaorm_outcome(o.move_up(&db, ids[*i]).await, pos),
            MoveToWrongScope(i) => seaorm_outcome(
                o.move_to_parent(
                    &db,
                    ids[*i],
                    schema.wrong_scope(),
                    ordered_core::Placement::Last,
                )
                .await,
                pos,
            ),
            MoveWithin(i, at, l) => seaorm_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .move_to(&db, ids[*i], at.resolve(&ids, schema.missing()))
                    .await,
                pos,
            ),
            MoveToWithin(i, p, at, l) => seaorm_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .move_to_parent(
                        &db,
                        ids[*i],
                        schema.parent(*p),
                        at.resolve(&ids, schema.missing()),
                    )
                    .await,
                pos,
            ),
            RemoveWithin(i, l) => seaorm_outcome(
                o.clone()
                    .within(schema.parent(*l))
                    .remove(&db, ids[*i])
                    .await,
                pos,
            ),
            MoveVersionOrNeighbours(i, at, v) => seaorm_outcome(
                o.clone()
                    .concurrency(Concurrency::VersionOrNeighbours(*v))
                    .move_to(&db, ids[*i], at.resolve(&ids, schema.missing()))
                    .await,
                pos,
            ),
            ListModels(p) => {
                let parent = schema.parent(*p);
                let plain = o.list_versioned(&db, parent).await.map_err(|e| {
                    e.refusal()
                        .cloned()
                        .unwrap_or(ordered_core::Error::Exhausted)
                });
                seaorm_outcome(o.list_models::<AppRow, _>(&db, parent).await, |m| {
                    models_step(parent, plain, m)
                })
            }
            PurgeRequests(age, batch) => {
                tokio::time::sleep(std::time::Duration::from_millis(3)).await;
                seaorm_outcome(
                    o.purge_requests(&db, std::time::Duration::from_secs(*age), *batch)
                        .await,
                    purged,
                )
            }
            Keyed(..) => panic!("a key inside a key"),
            Page(p, limit, from) => {
                let parent = schema.parent(*p);
                let after = page_from(&cursor, *from);
                let full = o.list(&db, parent).await.unwrap_or_default();
                seaorm_outcome(o.page(&db, parent, after.as_ref(), *limit).await, |pg| {
                    page_step(&full, after.as_ref(), *limit, &mut cursor, pg)
                })
            }
        };
        // archiving is the app's own write: the row leaves the shown list
        let after = try_all_rows_seaorm(&db, &s, schema).await;
        let at = Check { tag, name, i };
        at.step(
            &mut keys,
            (whole, step),
            (before, after),
            &r,
            replayed.get(),
        );
        out.push(r);
    }
    let reader = match read_url {
        Some(u) => Database::connect(u).await.unwrap(),
        None => db,
    };
    let rows = lists(&o, &reader, schema).await;
    let mut reports = Vec::new();
    for p in schema.settled() {
        reports.push(o.verify(&reader, schema.parent(p)).await.unwrap());
    }
    assert_sound(tag, name, reports);
    out.push(versioned_step(
        &rows,
        schema.parent(schema.settled()[0]),
        o.list_versioned(&reader, schema.parent(schema.settled()[0]))
            .await
            .unwrap(),
    ));
    (out, rows)
}

/// The scripts to run: all, or the ones `ORDERED_SCRIPTS` names (comma-separated), to
/// work on one.
fn selected() -> Vec<(&'static str, Schema, Vec<Step>)> {
    let only = std::env::var("ORDERED_SCRIPTS")
        .ok()
        .filter(|v| !v.is_empty());
    scripts()
        .into_iter()
        .filter(|(name, ..)| {
            only.as_ref()
                .is_none_or(|v| v.split(',').any(|n| n.trim() == *name))
        })
        .collect()
}

fn required() -> bool {
    std::env::var("ORDERED_REQUIRE_DBS").is_ok_and(|v| v == "1")
}

fn url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(u) if !u.is_empty() => Some(u),
        _ if required() => panic!("ORDERED_REQUIRE_DBS=1 but {var} is not set"),
        _ => {
            eprintln!("skipped: {var} is not set");
            None
        }
    }
}

type Run = (Vec<Outcome>, Vec<Row>);

/// Diesel (sync), diesel-async and SeaORM: the same outcome at every step, the same rows.
/// What some scripts must do, beyond the ORMs agreeing.
fn expected(engine: &str, name: &str, d: &Run) {
    use ordered_core::Error::IndexOutOfRange;
    let ok = |i: usize| match &d.0[i] {
        Ok((_, c)) => c.clone(),
        Err(e) => panic!("{engine} {name} step {i}: {e}"),
    };
    let ids = |rows: &[Row]| -> Vec<Id> { rows.iter().map(|r| r.id).collect() };
    // step i was refused with this code
    let refused = |i: usize, code: &str| {
        assert_eq!(
            d.0[i].as_ref().err().map(ordered_core::Error::code),
            Some(code),
            "{engine} {name} step {i}: {:?}",
            d.0[i]
        );
    };
    // what ensure_ordering / adopt_ordering added (ordered_conformance::fixes_mask)
    let added = |i: usize| -> i64 {
        match &d.0[i] {
            Ok((Some(Position::Int(m)), _)) => *m,
            other => panic!("{engine} {name} step {i}: {other:?}"),
        }
    };
    let passed = |i: usize| {
        assert!(d.0[i].is_ok(), "{engine} {name} step {i}: {:?}", d.0[i]);
    };
    // VersionColumn 2, Widened 4, Renumbered 8, NotNull 16, Check 32, DomainTriggers
    // 64, ParentIndex 128, Unique 256
    let adopted = match engine {
        "sqlite" => 2 + 8 + 64 + 256,
        "postgres" => 2 + 4 + 8 + 16 + 32 + 256,
        _ => 2 + 4 + 8 + 16 + 32 + 128 + 256,
    };
    if name.starts_with("idempotent_every_operation") {
        // the repeats are checked against the first calls step by step (keyed_check);
        // here: what the first calls were, and what stale or refused ones say
        refused(5, "already_applied");
        for i in (6..=19).chain([20, 22, 23, 24, 26]) {
            passed(i);
        }
        refused(25, "version_conflict");
        // the list as the steps say: 4 0 1 | 2, the row removed gone
        let order = |p: i64| -> Vec<Id> {
            let mut rows: Vec<&Row> = d.1.iter().filter(|r| r.parent == Id::Int(p)).collect();
            rows.sort_by(|a, b| a.position.cmp(&b.position));
            rows.iter().map(|r| r.id).collect()
        };
        let made: Vec<Id> = {
            let mut ids: Vec<Id> = d.1.iter().map(|r| r.id).collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(made.len(), 4, "{engine} {name}: {made:?}");
        // item k is the k-th smallest id; item 3 is the one removed
        let item = |k: usize| made[if k > 3 { k - 1 } else { k }];
        assert_eq!(order(1), [item(1), item(4), item(0)], "{engine} {name}");
        assert_eq!(order(2), [item(2)], "{engine} {name}");
    }
    if name == "idempotency_key_reused" {
        for i in [4, 5, 6] {
            refused(i, "idempotency_key_reused");
        }
        refused(7, "not_found");
        for i in [3, 8, 9, 10, 11, 12] {
            passed(i);
        }
    }
    if name == "idempotency_purge" {
        let purged = |i: usize| match &d.0[i] {
            Ok((Some(Position::Int(n)), _)) => *n,
            other => panic!("{engine} {name} step {i}: {other:?}"),
        };
        assert_eq!(
            [purged(6), purged(8), purged(9)],
            [0, 4, 0],
            "{engine} {name}"
        );
        for i in [2, 3, 4, 5, 7, 10] {
            passed(i);
        }
    }
    if name == "keyset_pages" || name == "keyset_pages_keys" {
        // a page's rows (their ids) and how many
        let page = |i: usize| {
            ids(&ok(i)
                .rows
                .iter()
                .map(|c| Row {
                    id: c.id,
                    parent: c.parent,
                    position: c.position.clone(),
                })
                .collect::<Vec<_>>())
        };
        let (first, second, third) = (page(7), page(8), page(9));
        assert_eq!(
            [first.len(), second.len(), third.len()],
            [3, 3, 1],
            "{engine} {name}"
        );
        assert_eq!(page(10), first, "{engine} {name}");
        refused(12, "list_changed");
        // resumed after item 2's place: 3 4 6 (5 moved to the front, behind the cursor)
        assert_eq!(
            page(13),
            [second[0], second[1], third[0]],
            "{engine} {name}"
        );
        assert_eq!(page(14), [second[2]], "{engine} {name}: one row at least");
        assert!(page(15).is_empty(), "{engine} {name}");
        refused(16, "parent_not_found");
        assert_eq!(page(18), [third[0]], "{engine} {name}");
    }
    if name == "index_placements" || name == "index_placements_keys" {
        for i in [7, 10, 13] {
            refused(i, "index_out_of_range");
        }
        // item k is the k-th inserted: the k-th smallest id (the ids step by the
        // server's auto_increment_increment, 3 on a Galera cluster); none was removed
        let mut created: Vec<Id> = d.1.iter().map(|r| r.id).collect();
        created.sort_unstable();
        let order = |p: i64| -> Vec<Id> {
            d.1.iter()
                .filter(|r| r.parent == Id::Int(p))
                .map(|r| r.id)
                .collect()
        };
        let item = |ks: &[usize]| -> Vec<Id> { ks.iter().map(|&k| created[k]).collect() };
        assert_eq!(order(1), item(&[6, 5, 1, 3, 4]), "{engine} {name}");
        assert_eq!(order(2), item(&[0, 2]), "{engine} {name}");
    }
    if name == "keyset_pages_shown" {
        let n = |i: usize| ok(i).rows.len();
        assert_eq!([n(6), n(7), n(8)], [2, 1, 1], "{engine} {name}");
    }
    if name == "entity_first_sync" {
        refused(4, "schema_mismatch");
        assert_eq!(
            added(5),
            256,
            "{engine} {name}: the unique constraint alone"
        );
        passed(6);
        assert_eq!(added(7), 0, "{engine} {name}: a second call adds nothing");
    }
    if name == "adopt_twice" {
        refused(0, "schema_mismatch");
        // duplicates and a NULL: refused before any change (check_any: no row moved)
        refused(1, "schema_mismatch");
        assert_eq!(added(2), adopted, "{engine} {name}");
        // the re-run: nothing added, and (check_any) every position as it was
        assert_eq!(added(3), 0, "{engine} {name}");
        passed(4);
        assert_eq!(added(5), 0, "{engine} {name}");
        // adopted as 3 0 1 2 (NULLs last, ties by id); 2 moved first (a cluster
        // steps its ids otherwise)
        if engine != "galera" {
            let list: Vec<Id> =
                d.1.iter()
                    .filter(|r| r.parent == Id::Int(1))
                    .map(|r| r.id)
                    .collect();
            let seeded = |n: i64| Id::Int(n + 1);
            assert_eq!(
                list,
                vec![seeded(2), seeded(3), Id::Int(6), seeded(0), seeded(1)],
                "{engine} {name}"
            );
        }
    }
    if name == "adopt_existing_version" {
        // the version column kept, with its values
        assert_eq!(added(0), adopted - 2, "{engine} {name}");
        passed(1);
        assert_eq!(ok(2).versions[0].version, 42, "{engine} {name}");
    }
    if name == "int32_positions" {
        if engine == "sqlite" {
            passed(2);
            assert_eq!(added(3), 0, "{engine} {name}");
        } else {
            refused(2, "schema_mismatch");
            assert_eq!(added(3), 4, "{engine} {name}: widened");
        }
        passed(4);
    }
    if name == "sqlite_check_rebuild" {
        assert_eq!(added(0), adopted, "{engine} {name}");
        passed(1);
        for i in 2..=4 {
            refused(i, "invalid_request");
        }
    }
    if name == "tree_remove_policies" {
        let id = |i: usize| ok(i).rows[0].id;
        refused(7, "has_children");
        assert!(ok(8).removed.contains(&id(0)), "{engine} {name}: A goes");
        refused(9, "has_children");
        assert_eq!(ok(10).removed, vec![id(6)], "{engine} {name}: a leaf");
        assert!(ok(12).removed.contains(&id(2)), "{engine} {name}");
        let mut taken = ok(14).removed;
        taken.sort_unstable();
        let mut want = vec![id(3), id(13)];
        want.sort_unstable();
        assert_eq!(taken, want, "{engine} {name}: the cascade reports both");
        // the children took their parents' places, in their order
        let root: Vec<Id> =
            d.1.iter()
                .filter(|r| r.parent == Id::ROOT)
                .map(|r| r.id)
                .collect();
        assert_eq!(root, vec![id(11), id(4), id(5), id(1)], "{engine} {name}");
    }
    if name == "tree_set_null" {
        for i in 4..=6 {
            refused(i, "schema_mismatch");
        }
        passed(7);
    }
    if name == "typed_rows" {
        let read = ok(4);
        let after = ok(6);
        // the list's version: the one of the last write to it
        assert!(after.versions[0].version > 0, "{engine} {name}");
        assert_eq!(read.versions.len(), 1, "{engine} {name}");
        refused(7, "parent_not_found");
    }
    if name == "app_constraint" {
        let _ = ok(0);
        refused(1, "constraint_violation");
        let c = d.0[1]
            .as_ref()
            .err()
            .and_then(ordered_core::Error::constraint);
        let c = c.unwrap_or_else(|| panic!("{engine} {name}: {:?}", d.0[1]));
        assert_eq!(
            c.kind,
            ordered_core::constraint::ConstraintKind::Unique,
            "{engine}"
        );
        // the index's name, or on SQLite its column: never the row's values
        assert!(c.name.contains("title"), "{engine} {name}: {c:?}");
        let e = d.0[1]
            .as_ref()
            .err()
            .map(|e| (e.status().http(), e.to_string()));
        assert_eq!(e.as_ref().map(|x| x.0), Some(409), "{engine} {name}");
        assert!(
            !e.is_some_and(|x| x.1.contains("duplicate key") || x.1.contains("Duplicate entry"))
        );
        let _ = ok(2);
    }
    if name == "link_twice" {
        for i in [0, 1, 2] {
            let _ = ok(i);
        }
        // the same track filed again in its own playlist: typed, naming that playlist
        refused(3, "already_in_list");
        assert!(
            matches!(&d.0[3], Err(ordered_core::Error::AlreadyInList { parent }) if *parent == 1),
            "{engine} {name}: {:?}",
            d.0[3]
        );
        // and in the other playlist it is a new link
        let _ = ok(4);
    }
    if name == "cascade_remove" {
        // the root 0, with 1 and 3 below it and 2 below 1: four rows go
        let schema = scripts()
            .into_iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, schema, _)| schema)
            .expect("the script");
        let key = |i: usize| schema.item(i).expect("a chosen key");
        let mut removed = ok(5).removed;
        removed.sort_unstable();
        let mut want: Vec<Id> = (0..4).map(key).collect();
        want.sort_unstable();
        assert_eq!(removed, want, "{engine} {name}");
        // only item 4 is left, at the root
        assert_eq!(ids(&d.1), [key(4)], "{engine} {name}");
    }
    if name == "within_list" {
        // each refusal names only list 1, the one the request named
        for i in [4, 5, 6, 7] {
            refused(i, "not_in_collection");
            match &d.0[i] {
                Err(ordered_core::Error::NotInCollection { parent, .. }) => {
                    assert_eq!(*parent, 1, "{engine} {name} step {i}")
                }
                other => panic!("{engine} {name} step {i}: {other:?}"),
            }
            assert_eq!(
                ordered_core::Error::NotInCollection {
                    id: 1.into(),
                    parent: 1.into()
                }
                .status()
                .http(),
                404
            );
        }
        for i in [8, 9, 10] {
            let _ = ok(i);
        }
        if engine != "galera" {
            // 0 in list 1 (1 removed); 3 2 in list 2
            assert_eq!(ids(&d.1), [1, 4, 3], "{engine} {name}");
        }
    }
    if name == "unchanged_move" {
        let before = ok(2);
        for i in 3..=8 {
            let c = ok(i);
            assert!(
                c.rows.is_empty() && c.removed.is_empty(),
                "{engine} {name} step {i}: {c:?}"
            );
            // the version stays the one the last write left
            assert_eq!(c.versions, before.versions, "{engine} {name} step {i}");
        }
        let moved = ok(9);
        assert_eq!(moved.rows.len(), 1, "{engine} {name}");
        assert_eq!(
            moved.versions[0].version,
            before.versions[0].version + 1,
            "{engine} {name}: the next write takes the next version"
        );
    }
    // the position a step returned, as a number
    let num = |i: usize| -> f64 {
        match &d.0[i] {
            Ok((Some(p), _)) => p
                .as_num()
                .unwrap_or_else(|| panic!("{engine} {name} step {i}: {p:?}")),
            other => panic!("{engine} {name} step {i}: {other:?}"),
        }
    };
    // a list's positions in order
    let positions = |p: i64| -> Vec<f64> {
        let mut v: Vec<f64> =
            d.1.iter()
                .filter(|r| r.parent == Id::Int(p))
                .filter_map(|r| r.position.as_num())
                .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    if name == "numeric_positions" {
        // midpoints into one gap until the next would be closer than 1/16 to item 0
        let got: Vec<f64> = (0..=10).map(num).collect();
        assert_eq!(
            got,
            [
                8.0, 16.0, 24.0, 8.0, 12.0, 10.0, 9.0, 8.5, 8.25, 8.125, 8.0625
            ],
            "{engine} {name}"
        );
        // then a relabel of a window, the rest of the list untouched
        let relabel = ok(11);
        assert!(
            (2..=8).contains(&relabel.rows.len()),
            "{engine} {name}: {relabel:?}"
        );
        assert!(num(12) < 8.0 && num(13) < num(12), "{engine} {name}");
        for (i, code) in [
            (17, "stale_neighbours"),
            (18, "not_found"),
            (19, "self_reference"),
            (20, "not_in_collection"),
            (21, "version_conflict"),
            (22, "parent_not_found"),
            (23, "wrong_key_type"),
            // the app's -1 is refused where it is read, and the rebalance heals it
            (25, "invalid_position"),
        ] {
            refused(i, code);
        }
        let _ = ok(24);
        let healed = ok(26);
        assert_eq!(healed.rows.len(), 9, "{engine} {name}: {healed:?}");
        assert_eq!(
            positions(1),
            [4.0, 8.0, 16.0, 24.0, 32.0, 40.0, 48.0, 56.0, 64.0],
            "{engine} {name}"
        );
    }
    if name == "numeric_decimal" {
        let got: Vec<f64> = (3..=9).map(num).collect();
        assert_eq!(
            got,
            [1.5, 1.25, 1.13, 1.07, 1.04, 1.02, 1.01],
            "{engine} {name}"
        );
        assert!(ok(10).rows.len() > 1, "{engine} {name}: a relabel");
        refused(17, "not_found");
        refused(19, "stale_neighbours");
        // every value is a decimal of the column's scale, read back as it was written
        for r in &d.1 {
            let v = r.position.as_num().expect("a number");
            assert_eq!((v * 100.0).round() / 100.0, v, "{engine} {name}: {r:?}");
        }
        assert_eq!(
            positions(1),
            (1..=10).map(f64::from).collect::<Vec<_>>(),
            "{engine} {name}"
        );
    }
    if name == "float_column_adopted" {
        refused(0, "schema_mismatch");
        // list 2's four rows renumbered, list 1 kept as it was
        let first = added(1);
        assert_eq!(first >> 24, 4, "{engine} {name}: {first}");
        assert_ne!(first & 8, 0, "{engine} {name}: Renumbered");
        assert_eq!(
            added(2),
            0,
            "{engine} {name}: a second adoption changes nothing"
        );
        passed(3);
        assert_eq!(
            num(4),
            106_494.375,
            "{engine} {name}: the midpoint of two kept values"
        );
        assert_eq!(num(5), 32_767.5, "{engine} {name}");
        assert_eq!(
            positions(1),
            [
                32_767.5,
                65_535.0,
                98_302.5,
                106_494.375,
                114_686.25,
                131_070.0
            ],
            "{engine} {name}"
        );
        assert_eq!(
            positions(2),
            [65_535.0, 131_070.0, 196_605.0, 262_140.0, 327_675.0],
            "{engine} {name}"
        );
        if engine != "galera" {
            // list 2 in the order the adoption gave it: -1, the shared 65535 by id, the
            // NULL; item 8 moved after the first
            let mut two: Vec<&Row> = d.1.iter().filter(|r| r.parent == Id::Int(2)).collect();
            two.sort_by(|a, b| a.position.cmp(&b.position));
            let order: Vec<Id> = two.iter().map(|r| r.id).collect();
            assert_eq!(order, [8, 9, 6, 7, 11].map(Id::Int), "{engine} {name}");
        }
    }
    // a survey's or a conversion's text
    let text = |i: usize| -> String {
        match &d.0[i] {
            Ok((Some(Position::Key(k)), _)) => k.clone(),
            other => panic!("{engine} {name} step {i}: {other:?}"),
        }
    };
    if name == "linked_list_converted" || name == "linked_list_next" {
        assert_eq!(text(0), "lists=3 rows=8 broken=[]", "{engine} {name}");
        assert_eq!(text(1), "lists=3 rows=8 broken=[]", "{engine} {name}");
        // the chain order 103 101 105 102 104, then the moves: the seeded rows of list 1
        // in the order the steps say (the row inserted at step 5 left out: its id is the
        // engine's)
        let mut one: Vec<&Row> = d.1.iter().filter(|r| r.parent == Id::Int(1)).collect();
        one.sort_by(|a, b| a.position.cmp(&b.position));
        let seeded: Vec<Id> = one
            .iter()
            .map(|r| r.id)
            .filter(|id| matches!(id, Id::Int(101..=108)))
            .collect();
        assert_eq!(
            seeded,
            [107, 101, 105, 102, 104, 103].map(Id::Int),
            "{engine} {name}"
        );
        assert_eq!(one.len(), 7, "{engine} {name}");
    }
    if name == "linked_list_refused" {
        use ordered_core::linked::Broken;
        let broken = vec![
            Broken {
                list: Id::Int(1),
                heads: vec![Id::Int(101)],
                cycle: vec![Id::Int(103), Id::Int(104)],
                unreachable: vec![Id::Int(106)],
                dangling: vec![(Id::Int(105), Id::Int(998))],
                shared: vec![],
            },
            Broken {
                list: Id::Int(2),
                heads: vec![Id::Int(107), Id::Int(108)],
                cycle: vec![],
                unreachable: vec![],
                dangling: vec![],
                shared: vec![],
            },
        ];
        assert_eq!(
            text(0),
            format!("lists=3 rows=11 broken={broken:?}"),
            "{engine} {name}"
        );
        // only list 3 converted; the broken ones reported, nothing written to them
        assert_eq!(
            text(1),
            format!("lists=1 rows=2 broken={broken:?}"),
            "{engine} {name}"
        );
        refused(2, "schema_mismatch");
        let why = d.0[2]
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(why.contains("9 such rows"), "{engine} {name}: {why}");
        assert_eq!(text(3), text(1), "{engine} {name}");
        assert_eq!(
            text(4),
            text(0),
            "{engine} {name}: the broken lists untouched"
        );
        let three: Vec<(Id, Position)> = d.1.iter().map(|r| (r.id, r.position.clone())).collect();
        assert_eq!(
            three,
            [
                (Id::Int(110), Position::Int(4)),
                (Id::Int(111), Position::Int(8))
            ],
            "{engine} {name}"
        );
    }
    if name == "version_or_neighbours" {
        let _ = ok(3);
        refused(4, "version_conflict");
        refused(5, "stale_neighbours");
        let _ = ok(6);
        refused(7, "version_conflict");
    }
    if name == "adopt_existing_column" {
        for i in [0, 1, 2, 3, 4, 6] {
            let _ = ok(i);
        }
        refused(5, "stale_neighbours");
        if engine != "galera" {
            // the seeds are ids 1 to 5, the inserts 6 to 8; the app's order kept: 0 1
            assert_eq!(ids(&d.1), [3, 8, 7, 4, 6, 5, 1, 2], "{engine} {name}");
        }
    }
    if name == "scope_without_parent" {
        // a collection never written: its lock row starts at version 1
        let first = ok(9);
        assert_eq!(first.versions.len(), 1, "{engine} {name}");
        assert_eq!(first.versions[0].version, 1, "{engine} {name}: {first:?}");
        assert_eq!(ok(8).versions.len(), 2, "{engine} {name}");
        assert_eq!(ok(10).versions.len(), 2, "{engine} {name}");
        refused(11, "not_in_collection");
        refused(12, "version_conflict");
        let _ = ok(17);
        if engine != "galera" {
            // fresh tables: item n has id n + 1
            assert_eq!(ids(&d.1), [2, 7, 5, 3, 1, 4, 8, 9], "{engine} {name}");
        }
    }
    if name == "association_table" {
        for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 18, 19, 20, 21] {
            let _ = ok(i);
        }
        refused(13, "invalid_request");
        refused(14, "not_in_collection");
        refused(15, "stale_neighbours");
        refused(16, "version_conflict");
        refused(17, "wrong_link_key");
        // the tight gap relabelled playlist 1 only: every change names a link of it
        let relabel = ok(12);
        assert!(relabel.rows.len() > 1, "{engine} {name}: {relabel:?}");
        assert!(
            relabel.rows.iter().all(|c| c.parent == Id::Int(1)),
            "{engine} {name}: {relabel:?}"
        );
        // each link named by (playlist, track): track 5 left playlist 1 only
        let link = |p: i64, t: i64| Id::from((p, t));
        let want = [
            link(1, 3),
            link(1, 2),
            link(1, 6),
            link(1, 4),
            link(1, 1),
            link(2, 1),
            link(2, 2),
            link(2, 3),
            link(2, 4),
            link(2, 5),
        ];
        assert_eq!(ids(&d.1), want, "{engine} {name}");
    }
    if name == "tree_cycle" {
        for i in [0, 1, 2, 3, 4, 5, 6, 9, 10, 12, 16, 17, 18, 19, 20] {
            let _ = ok(i);
        }
        for i in [7, 8, 11] {
            refused(i, "would_cycle");
        }
        for i in [13, 14] {
            refused(i, "parent_not_found");
        }
        refused(15, "version_conflict");
        // a move between two lists below the root also takes the root's lock, but
        // neither bumps nor reports its version
        assert_eq!(ok(17).versions.len(), 2, "{engine} {name}: {:?}", d.0[17]);
        // a move out of the root list reports (and bumps) it
        assert_eq!(ok(6).versions.len(), 2, "{engine} {name}");
        let schema = Schema {
            id: KeyType::Uuid,
            parent: KeyType::Uuid,
            tree: true,
            ..Schema::INTS
        };
        let item = |n: usize| schema.item(n).unwrap();
        // root 2 6; 0's children 1; 2's children 4 0; 6's children 3
        let want = [
            (item(2), Id::ROOT),
            (item(6), Id::ROOT),
            (item(1), item(0)),
            (item(4), item(2)),
            (item(0), item(2)),
            (item(3), item(6)),
        ];
        let got: Vec<(Id, Id)> = d.1.iter().map(|r| (r.id, r.parent)).collect();
        assert_eq!(got, want, "{engine} {name}");
    }
    if name == "global_list" {
        refused(9, "stale_neighbours");
        refused(10, "version_conflict");
        refused(11, "not_found");
        for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 15, 16] {
            let _ = ok(i);
        }
        assert!(
            d.1.iter().all(|r| r.parent == Id::GLOBAL),
            "{engine} {name}"
        );
        if engine != "galera" {
            assert_eq!(ids(&d.1), [1, 2, 3, 6, 5, 7], "{engine} {name}");
        }
    }
    if name == "composite_no_parent" {
        // each list has its own lock row: a move between two lists of a board locks two
        for i in [9, 10, 11] {
            assert_eq!(ok(i).versions.len(), 2, "{engine} {name} step {i}");
        }
        refused(12, "not_in_collection");
        refused(13, "stale_neighbours");
        refused(14, "version_conflict");
        // any value names a list: nothing is "not found"
        let _ = ok(15);
    }
    if name == "composite_scope" {
        let locked = |i: usize| match &d.0[i] {
            Ok((_, c)) => c.versions.len(),
            Err(e) => panic!("{engine} {name} step {i}: {e}"),
        };
        // a move to another list of the same board locks (and versions) one row; a
        // move to another board both
        assert_eq!(locked(9), 1, "{engine} {name}: {:?}", d.0[9]);
        assert_eq!(locked(10), 2, "{engine} {name}: {:?}", d.0[10]);
        assert_eq!(locked(11), 2, "{engine} {name}: {:?}", d.0[11]);
        refused(12, "not_in_collection");
        refused(13, "stale_neighbours");
        refused(14, "version_conflict");
        refused(15, "parent_not_found");
        let ok = [0, 1, 2, 3, 4, 5, 6, 7, 8, 17, 18, 19, 20, 21];
        for i in ok {
            assert!(d.0[i].is_ok(), "{engine} {name} step {i}: {:?}", d.0[i]);
        }
        // (b1, todo), (b1, done), (b2, todo), in order, each row with its whole scope
        let schema = Schema {
            id: KeyType::Uuid,
            parent: KeyType::Uuid,
            split: true,
            ..Schema::INTS
        };
        let mut want: Vec<(Id, Id)> = Vec::new();
        for (p, items) in [(1, &[4, 1, 7, 6, 2][..]), (2, &[8, 0]), (3, &[3])] {
            for &n in items {
                want.push((schema.item(n).unwrap(), schema.parent(p)));
            }
        }
        let got: Vec<(Id, Id)> = d.1.iter().map(|r| (r.id, r.parent)).collect();
        assert_eq!(got, want, "{engine} {name}");
    }
    if name == "hidden_prev" {
        for i in [5, 7, 8] {
            refused(i, "stale_neighbours");
        }
        assert!(d.0[9].is_ok() && d.0[10].is_ok(), "{engine} {name}");
        // items 1 and 0 and the new one shown; 2 and 3 archived
        assert_eq!(d.1.len(), 3, "{engine} {name}: {:?}", d.1);
        if engine != "galera" {
            assert_eq!(ids(&d.1[..2]), [2, 1], "{engine} {name}");
        }
    }
    if name == "hidden_rows" {
        // neighbours adjacent as shown, across an archived row: no false conflict
        assert!(
            d.0[5].is_ok() && d.0[6].is_ok(),
            "{engine} {name}: {:?}",
            &d.0[5..7]
        );
        // an index counts the shown rows
        assert!(
            d.0[7].is_ok() && d.0[8].is_ok(),
            "{engine} {name}: {:?}",
            &d.0[7..9]
        );
        refused(12, "stale_neighbours");
        assert!(
            matches!(d.0[13], Err(IndexOutOfRange { index: 99 })),
            "{engine} {name}"
        );
        // 10 inserted, one archived (not listed): 7 shown in list 1, 1 in list 2
        assert_eq!(d.1.len(), 8, "{engine} {name}: {:?}", d.1);
        if engine != "galera" {
            // fresh tables: item n has id n + 1; moved up past the archived item 1
            let shown: Vec<Id> = d.1.iter().take(7).map(|r| r.id).collect();
            assert_eq!(shown, [4, 5, 9, 8, 1, 7, 3], "{engine} {name}");
        }
    }
}

/// A step's outcome with the ORM's tag taken out of a constraint's name (each ORM's
/// tables are named `k_<script>_<orm>_i`).
fn untagged(o: &Outcome, script: &str) -> Outcome {
    match o {
        Err(ordered_core::Error::Constraint { constraint }) => {
            let mut c = constraint.clone();
            let prefix = format!("k_{script}_");
            if let Some(at) = c.name.find(&prefix) {
                let rest = &c.name[at + prefix.len()..];
                if let Some(end) = rest.find("_i") {
                    c.name = format!("{}{prefix}*{}", &c.name[..at], &rest[end..]);
                }
            }
            Err(ordered_core::Error::Constraint { constraint: c })
        }
        // the tables are named per ORM: k_<script>_<orm>_i, k_<script>_<orm>_p
        Err(ordered_core::Error::SchemaMismatch {
            table,
            problem,
            fix,
        }) => {
            // k_<script>_<tag>_ becomes k_<script>_*_, whatever the tag (d, a, s, gd, ...)
            let scrub = |t: &str| {
                let prefix = format!("k_{script}_");
                let mut out = String::new();
                let mut rest = t;
                while let Some(at) = rest.find(&prefix) {
                    let after = &rest[at + prefix.len()..];
                    let tag = after.find('_').unwrap_or(after.len());
                    out.push_str(&rest[..at]);
                    out.push_str(&prefix);
                    out.push('*');
                    rest = &after[tag..];
                }
                out.push_str(rest);
                out
            };
            Err(ordered_core::Error::SchemaMismatch {
                table: scrub(table),
                problem,
                fix: scrub(fix),
            })
        }
        other => other.clone(),
    }
}

fn compare(engine: &str, name: &str, d: Run, a: Run, s: Run) {
    expected(engine, name, &d);
    for (other, label) in [(&a, "diesel-async"), (&s, "SeaORM")] {
        assert_eq!(d.0.len(), other.0.len());
        for (i, (x, y)) in d.0.iter().zip(&other.0).enumerate() {
            assert_eq!(
                untagged(x, name),
                untagged(y, name),
                "{engine} {name}: step {i} differs between Diesel and {label}"
            );
        }
        assert_eq!(
            d.1, other.1,
            "{engine} {name}: Diesel and {label} left different rows"
        );
    }
    assert!(!d.1.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diesel_and_seaorm_agree_on_every_engine() {
    use diesel::Connection;
    let mut checked = 0;
    let (mut listed_relabels, mut summaries) = (0, 0);
    let chosen = selected();
    let all = chosen.len() == scripts().len();
    for (name, schema, steps) in chosen {
        // SQLite: one file per ORM
        let path = |orm: &str| std::env::temp_dir().join(format!("ordered-conf-{name}-{orm}.db"));
        for orm in ["d", "a", "s"] {
            let _ = std::fs::remove_file(path(orm));
        }
        // foreign keys enforced, as SeaORM's SQLite connections have them
        let mut dconn = diesel::SqliteConnection::establish(path("d").to_str().unwrap()).unwrap();
        dconn.batch_execute("PRAGMA foreign_keys = ON").unwrap();
        let d = run_diesel(dconn, None, "d", name, schema, &steps);
        let mut aconn = <diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
            diesel::SqliteConnection,
        > as diesel_async::AsyncConnection>::establish(
            path("a").to_str().unwrap()
        )
        .await
        .unwrap();
        diesel_async::SimpleAsyncConnection::batch_execute(&mut aconn, "PRAGMA foreign_keys = ON")
            .await
            .unwrap();
        let a = run_diesel_async(aconn, None, "a", name, schema, &steps).await;
        let s = run_seaorm(
            &format!("sqlite://{}?mode=rwc", path("s").display()),
            None,
            "s",
            name,
            schema,
            &steps,
        )
        .await;
        for (_, c) in d.0.iter().flatten() {
            listed_relabels += usize::from(c.rows.len() > 2);
            summaries += usize::from(c.is_summarised());
        }
        compare("sqlite", name, d, a, s);
        checked += 1;
        if let Some(u) = url("ORDERED_PG_URL") {
            let d = run_diesel(
                diesel::PgConnection::establish(&u).unwrap(),
                None,
                "d",
                name,
                schema,
                &steps,
            );
            let a = run_diesel_async(
                <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&u)
                    .await
                    .unwrap(),
                None,
                "a",
                name,
                schema,
                &steps,
            )
            .await;
            let s = run_seaorm(&u, None, "s", name, schema, &steps).await;
            compare("postgres", name, d, a, s);
            checked += 1;
        }
        #[cfg(feature = "mysql")]
        if let Some(u) = url("ORDERED_MYSQL_URL") {
            let d = run_diesel(
                diesel::MysqlConnection::establish(&u).unwrap(),
                None,
                "d",
                name,
                schema,
                &steps,
            );
            let a = run_diesel_async(
                <diesel_async::AsyncMysqlConnection as diesel_async::AsyncConnection>::establish(
                    &u,
                )
                .await
                .unwrap(),
                None,
                "a",
                name,
                schema,
                &steps,
            )
            .await;
            let s = run_seaorm(&u, None, "s", name, schema, &steps).await;
            compare("mysql", name, d, a, s);
            checked += 1;
        }
        #[cfg(not(feature = "mysql"))]
        if required() {
            panic!("ORDERED_REQUIRE_DBS=1 needs the `mysql` feature (cargo test --all-features)");
        }
    }
    assert!(checked >= 1);
    // the scripts relabel both below and above the changes limit
    assert!(
        !all || (listed_relabels > 0 && summaries > 0),
        "{listed_relabels} {summaries}"
    );
}

/// The scripts on a MariaDB Galera Cluster (`ORDERED_GALERA_URLS`, from
/// `.ci/galera.sh urls`): every write through node 1, the final lists read through node
/// 2 at once (the library's causal read), Diesel and SeaORM identical. The positions
/// must also equal a single server's run of the same script: ids differ (a cluster
/// steps them by its size), positions and errors do not.
#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diesel_and_seaorm_agree_on_a_galera_cluster() {
    use diesel::Connection;
    let urls: Vec<String> = match std::env::var("ORDERED_GALERA_URLS") {
        Ok(v) if !v.is_empty() => v.split(',').map(str::to_owned).collect(),
        _ if std::env::var("ORDERED_REQUIRE_GALERA").is_ok_and(|v| v == "1") => {
            panic!("ORDERED_REQUIRE_GALERA=1 but ORDERED_GALERA_URLS is not set")
        }
        _ => {
            eprintln!(
                "skipped: ORDERED_GALERA_URLS is not set (start a cluster with .ci/galera.sh)"
            );
            return;
        }
    };
    let (writer, reader) = (&urls[0], &urls[1]);
    let single = std::env::var("ORDERED_MYSQL_URL")
        .ok()
        .filter(|u| !u.is_empty());
    for (name, schema, steps) in selected() {
        let conn = |u: &str| diesel::MysqlConnection::establish(u).unwrap();
        let d = run_diesel(conn(writer), Some(conn(reader)), "gd", name, schema, &steps);
        let s = run_seaorm(writer, Some(reader), "gs", name, schema, &steps).await;
        let aconn = |u: &str| {
            let u = u.to_owned();
            async move {
                <diesel_async::AsyncMysqlConnection as diesel_async::AsyncConnection>::establish(&u)
                    .await
                    .unwrap()
            }
        };
        let a = run_diesel_async(
            aconn(writer).await,
            Some(aconn(reader).await),
            "ga",
            name,
            schema,
            &steps,
        )
        .await;
        let positions = |r: &(Vec<Outcome>, Vec<Row>)| -> Vec<(Id, Position)> {
            r.1.iter().map(|x| (x.parent, x.position.clone())).collect()
        };
        if let Some(u) = &single {
            let one = run_diesel(conn(u), None, "g1", name, schema, &steps);
            assert_eq!(
                positions(&one),
                positions(&d),
                "galera {name}: positions differ from a single server's"
            );
            assert_eq!(
                one.0.iter().map(Result::is_ok).collect::<Vec<_>>(),
                d.0.iter().map(Result::is_ok).collect::<Vec<_>>(),
                "galera {name}: outcomes differ from a single server's"
            );
        }
        compare("galera", name, d, a, s);
    }
}

/// The newer shapes under load through every adapter, with the oracle.
#[path = "conformance/shapes.rs"]
mod shapes;
