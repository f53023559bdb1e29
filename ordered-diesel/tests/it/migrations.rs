//! Generated migrations, applied and reverted on every engine: ordering added to an
//! existing table with rows (expand and contract with a backfill in creation order),
//! written in Diesel's layout and run from the files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::*;
use ordered_diesel::migrations::{self, Backfill};
use ordered_diesel::{Dialect, Id, Placement, RebalancePolicy};

fn run_file<C: TestConn>(conn: &mut C, path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    for stmt in text.split(";\n").map(str::trim).filter(|s| !s.is_empty()) {
        conn.exec(stmt);
    }
}

/// A legacy schema on `C`: a parents table (no version column) with parents 1 and 2,
/// and an items table with the given columns after its key and parent.
fn legacy_tables<C: TestConn>(c: &mut C, t: &Tables, columns: &str) {
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    drop_tables(c, t);
    let (pk, engine) = match d {
        Dialect::Postgres => ("BIGSERIAL PRIMARY KEY", ""),
        Dialect::Mysql => (
            "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
            " ENGINE=InnoDB",
        ),
        Dialect::Sqlite => ("INTEGER PRIMARY KEY AUTOINCREMENT", ""),
    };
    c.exec(&format!(
        "CREATE TABLE {} ({} {pk}, {} VARCHAR(20)){engine}",
        q(t.parents),
        q("id"),
        q("name")
    ));
    c.exec(&format!(
        "CREATE TABLE {} ({} {pk}, {} BIGINT NOT NULL, {columns}, FOREIGN KEY ({}) REFERENCES {} ({})){engine}",
        q(t.items), q("id"), q("parent_id"), q("parent_id"), q(t.parents), q("id")
    ));
    for p in [1, 2] {
        c.exec(&format!(
            "INSERT INTO {} ({}, {}) VALUES ({p}, 'p')",
            q(t.parents),
            q("id"),
            q("name")
        ));
    }
}

fn expand_and_contract<C: TestConn>(_: ()) {
    for (sname, strategy) in strategies() {
        let test = format!("mig_{sname}");
        let db = format!("{test}_{}", C::name());
        let mut c = C::connect(&db);
        let t = tables(&test, strategy, RebalancePolicy::Window, db);
        let d = C::DIALECT;
        let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
        // a legacy schema: no version column, no position column
        legacy_tables(
            &mut c,
            &t,
            &format!(
                "{} VARCHAR(100) NOT NULL, {} BIGINT NOT NULL DEFAULT 0",
                q("title"),
                q("created_at")
            ),
        );
        // ids 1..=6; creation order differs from id order
        // fresh tables number these 1..=6 on every engine
        for (id, parent, created) in [
            (1, 1, 30),
            (2, 1, 10),
            (3, 2, 5),
            (4, 1, 20),
            (5, 2, 1),
            (6, 1, 20),
        ] {
            c.exec(&format!(
                "INSERT INTO {} ({}, {}, {}) VALUES ({parent}, 't{id}', {created})",
                q(t.items),
                q("parent_id"),
                q("title"),
                q("created_at")
            ));
        }
        let m = migrations::add_ordering(d, &t.spec, Backfill::By(&["created_at", "id"]));
        let dir = std::env::temp_dir().join(format!("ordered-migrations-{}", t.db));
        let _ = std::fs::remove_dir_all(&dir);
        let folder = migrations::write(&dir, "add_ordering", &m).unwrap();
        assert!(
            folder
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .ends_with("_add_ordering")
        );
        // up, down, up: the down migration restores a schema the up migration accepts
        run_file(&mut c, &folder.join("up.sql"));
        run_file(&mut c, &folder.join("down.sql"));
        run_file(&mut c, &folder.join("up.sql"));
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [2, 4, 6, 1],
            "{} {sname}: backfilled in creation order",
            C::name()
        );
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [5, 3]);
        sound(&mut c, &t, ordered_diesel::Id::Int(1));
        sound(&mut c, &t, ordered_diesel::Id::Int(2));
        // the library works on the migrated table, and the version column exists
        let v = version(&mut c, &t, ordered_diesel::Id::Int(1));
        ord(&t).move_to_start(&mut c, 1).unwrap();
        let n = add(
            &mut c,
            &t,
            ordered_diesel::Id::Int(1),
            Placement::After(ordered_diesel::Id::Int(2)),
            "new",
        );
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [Id::Int(1), Id::Int(2), n, Id::Int(4), Id::Int(6)]
        );
        assert_eq!(version(&mut c, &t, ordered_diesel::Id::Int(1)), v + 2);
        // the unique constraint is there: a duplicate position is refused
        let rows = ord(&t).list(&mut c, 1).unwrap();
        let dup = match &rows[0].position {
            ordered_diesel::Position::Int(p) => p.to_string(),
            ordered_diesel::Position::Key(k) => format!("'{k}'"),
            ordered_diesel::Position::Num(n) => n.to_string(),
        };
        let res = c.batch_execute(&format!(
            "UPDATE {} SET {} = {dup} WHERE {} = {}",
            q(t.items),
            q("position"),
            q("id"),
            rows[1].id
        ));
        assert!(
            res.is_err(),
            "{} {sname}: a duplicate position was accepted",
            C::name()
        );
        // and down removes it all
        run_file(&mut c, &folder.join("down.sql"));
        // qualified: SQLite reads an unknown bare "name" as a string literal
        let gone = c.batch_execute(&format!(
            "SELECT {}.{} FROM {}",
            q(t.items),
            q("position"),
            q(t.items)
        ));
        assert!(
            gone.is_err(),
            "{}: the position column survived the down migration",
            C::name()
        );
        // a newest-first backfill: a direction per column
        let newest =
            migrations::add_ordering(d, &t.spec, Backfill::By(&["created_at DESC", "id desc"]));
        for stmt in &newest.up {
            c.exec(stmt);
        }
        // `n`, inserted through the library, has the default created_at (0): oldest
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [Id::Int(1), Id::Int(6), Id::Int(4), Id::Int(2), n],
            "{} {sname}: newest first",
            C::name()
        );
        assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [3, 5]);
        // a misspelt column is an error on every engine, SQLite included (no silent
        // order by a string constant)
        let misspelt = migrations::backfill_sql(d, &t.spec, &["created_att"]);
        let refused = c.batch_execute(&misspelt);
        assert!(
            refused.is_err(),
            "{} {sname}: {misspelt} was accepted",
            C::name()
        );
        assert_eq!(
            ids(&mut c, &t, ordered_diesel::Id::Int(1)),
            [Id::Int(1), Id::Int(6), Id::Int(4), Id::Int(2), n]
        );
        let _ = std::fs::remove_dir_all(&dir);
        drop_tables(&mut c, &t);
    }
}

#[test]
fn add_ordering_to_an_existing_table_up_down_up() {
    each_engine!(expand_and_contract);
}

/// An app that kept its own order in an integer column (0-based, a duplicate, a NULL):
/// the migration takes the column over and keeps that order, through an existing unique
/// index the app had on another pair of columns.
fn adopt<C: TestConn>(_: ()) {
    let test = "mig_adopt";
    let db = format!("{test}_{}", C::name());
    let mut c = C::connect(&db);
    let t = tables(test, &GAPPED, RebalancePolicy::Window, db);
    let d = C::DIALECT;
    let q = |s: &str| ordered_core::adapter::sql::quote(d, s);
    // the app's own column: a 32-bit integer, nullable
    legacy_tables(
        &mut c,
        &t,
        &format!(
            "{} VARCHAR(100) NOT NULL, {} INTEGER NULL",
            q("title"),
            q("position")
        ),
    );
    for (parent, position) in ["0", "2", "1", "NULL", "2"]
        .iter()
        .map(|p| (1, *p))
        .chain([(2, "5")])
    {
        c.exec(&format!(
            "INSERT INTO {} ({}, {}, {}) VALUES ({parent}, 't', {position})",
            q(t.items),
            q("parent_id"),
            q("title"),
            q("position")
        ));
    }
    let m = migrations::adopt_ordering(d, &t.spec, &[]).unwrap();
    for stmt in &m.up {
        c.exec(stmt);
    }
    // the app's order: by position, ties by id, NULLs last; spaced as the library spaces
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [1, 3, 2, 5, 4],
        "{}",
        C::name()
    );
    assert_eq!(ids(&mut c, &t, ordered_diesel::Id::Int(2)), [6]);
    let positions: Vec<i64> = sound(&mut c, &t, ordered_diesel::Id::Int(1))
        .iter()
        .filter_map(|r| r.position.as_int())
        .collect();
    assert_eq!(positions, [1024, 2048, 3072, 4096, 5120], "{}", C::name());
    // SQLite cannot add the CHECK to an existing column: the adoption's triggers stand
    // in for it, and check_schema accepts them
    ord(&t).check_schema(&mut c).unwrap();
    // the library writes it from here on
    let n = add(
        &mut c,
        &t,
        ordered_diesel::Id::Int(1),
        Placement::Between {
            prev: Some(ordered_diesel::Id::Int(3)),
            next: Some(ordered_diesel::Id::Int(2)),
        },
        "n",
    );
    ord(&t).move_to_start(&mut c, 4).unwrap();
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [
            Id::Int(4),
            Id::Int(1),
            Id::Int(3),
            n,
            Id::Int(2),
            Id::Int(5)
        ],
        "{}",
        C::name()
    );
    // down removes what it added and keeps the column and its values
    for stmt in &m.down {
        c.exec(stmt);
    }
    assert_eq!(
        ids(&mut c, &t, ordered_diesel::Id::Int(1)),
        [
            Id::Int(4),
            Id::Int(1),
            Id::Int(3),
            n,
            Id::Int(2),
            Id::Int(5)
        ]
    );
    drop_tables(&mut c, &t);
}

#[test]
fn adopt_an_existing_position_column() {
    each_engine!(adopt);
}
