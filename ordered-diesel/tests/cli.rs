//! The `ordered-diesel-migration` command writes a folder whose SQL SQLite accepts.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use diesel::connection::SimpleConnection;
use diesel::prelude::*;

#[test]
fn the_command_writes_a_migration_that_applies() {
    let dir = std::env::temp_dir().join("ordered-cli-test");
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ordered-diesel-migration"))
        .args([
            "--engine", "sqlite", "--table", "steps", "--scope", "list_id", "--parent", "lists",
        ])
        .args([
            "--version-column",
            "version",
            "--backfill",
            "id",
            "--request-records",
        ])
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert!(folder.ends_with(folder.file_name().unwrap()));
    assert!(
        folder
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("_add_ordering_to_steps")
    );
    let mut c = SqliteConnection::establish(":memory:").unwrap();
    c.batch_execute(
        "CREATE TABLE lists (id INTEGER PRIMARY KEY); CREATE TABLE steps (id INTEGER PRIMARY KEY, list_id INTEGER NOT NULL);
         INSERT INTO lists VALUES (1); INSERT INTO steps (list_id) VALUES (1), (1), (1);",
    )
    .unwrap();
    c.batch_execute(&std::fs::read_to_string(folder.join("up.sql")).unwrap())
        .unwrap();
    // the records table of --request-records is there, and the down keeps it
    c.batch_execute("SELECT digest, outcome, created_at FROM ordered_requests")
        .unwrap();
    c.batch_execute(&std::fs::read_to_string(folder.join("down.sql")).unwrap())
        .unwrap();
    c.batch_execute("SELECT digest FROM ordered_requests")
        .unwrap();
    // a bad engine name is refused with a usage error
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_ordered-diesel-migration"))
        .args([
            "--engine", "oracle", "--table", "t", "--scope", "s", "--parent", "p",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_command_adopts_an_existing_column_and_refuses_a_key_column() {
    let dir = std::env::temp_dir().join("ordered-cli-adopt");
    let _ = std::fs::remove_dir_all(&dir);
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ordered-diesel-migration"))
            .args([
                "--engine", "sqlite", "--table", "steps", "--scope", "list_id", "--parent",
                "lists", "--adopt", "--dir",
            ])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let mut c = SqliteConnection::establish(":memory:").unwrap();
    c.batch_execute(
        "CREATE TABLE lists (id INTEGER PRIMARY KEY); CREATE TABLE steps (id INTEGER PRIMARY KEY, list_id INTEGER NOT NULL, position INTEGER);
         INSERT INTO lists VALUES (1); INSERT INTO steps (list_id, position) VALUES (1, 2), (1, 0), (1, 1);",
    )
    .unwrap();
    c.batch_execute(&std::fs::read_to_string(folder.join("up.sql")).unwrap())
        .unwrap();
    #[derive(QueryableByName)]
    struct Pos {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let order: Vec<i64> = diesel::sql_query("SELECT id FROM steps ORDER BY position")
        .load::<Pos>(&mut c)
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(order, [2, 3, 1], "the app's order is kept");
    // a key column is not renumbered: refused, with the reason
    let keys = run(&["--strategy", "fractional", "--name", "keys"]);
    assert!(!keys.status.success());
    assert!(
        String::from_utf8_lossy(&keys.stderr).contains("key column"),
        "{}",
        String::from_utf8_lossy(&keys.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tree (`--nullable-scope` with `--parent` naming the table) and an association
/// table (`--link`) on SQLite: the backfill numbers each list apart, the root list and
/// each link's list included, and the unique indexes keep the root list unique.
#[test]
fn the_command_writes_tree_and_association_migrations() {
    let run = |name: &str, args: &[&str]| {
        let dir = std::env::temp_dir().join(format!("ordered-cli-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ordered-diesel-migration"))
            .args(["--engine", "sqlite", "--dir"])
            .arg(&dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let folder = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        std::fs::read_to_string(folder.join("up.sql")).unwrap()
    };
    #[derive(QueryableByName, Debug, PartialEq)]
    struct P {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        position: i64,
    }
    let positions = |c: &mut SqliteConnection, sql: &str| -> Vec<i64> {
        diesel::sql_query(sql)
            .load::<P>(c)
            .unwrap()
            .into_iter()
            .map(|p| p.position)
            .collect()
    };

    let up = run(
        "tree",
        &[
            "--table",
            "folders",
            "--scope",
            "parent_id",
            "--parent",
            "folders",
            "--nullable-scope",
            "--backfill",
            "id",
        ],
    );
    let mut c = SqliteConnection::establish(":memory:").unwrap();
    c.batch_execute(
        "CREATE TABLE folders (id INTEGER PRIMARY KEY, parent_id INTEGER NULL REFERENCES folders (id));
         INSERT INTO folders VALUES (1, NULL), (2, NULL), (3, 1), (4, 1);",
    )
    .unwrap();
    c.batch_execute(&up).unwrap();
    assert_eq!(
        positions(
            &mut c,
            "SELECT position FROM folders WHERE parent_id IS NULL ORDER BY id"
        ),
        [1024, 2048]
    );
    assert_eq!(
        positions(
            &mut c,
            "SELECT position FROM folders WHERE parent_id = 1 ORDER BY id"
        ),
        [1024, 2048]
    );
    // a second root row at a taken position: refused (NULLs are one list)
    assert!(
        c.batch_execute("INSERT INTO folders (id, parent_id, position) VALUES (5, NULL, 1024)")
            .is_err()
    );

    let up = run(
        "link",
        &[
            "--table",
            "entries",
            "--scope",
            "playlist_id",
            "--parent",
            "playlists",
            "--id",
            "track_id",
            "--link",
            "--backfill",
            "track_id",
        ],
    );
    let mut c = SqliteConnection::establish(":memory:").unwrap();
    c.batch_execute(
        "CREATE TABLE playlists (id INTEGER PRIMARY KEY);
         CREATE TABLE entries (playlist_id INTEGER NOT NULL, track_id INTEGER NOT NULL, PRIMARY KEY (playlist_id, track_id));
         INSERT INTO playlists VALUES (1), (2);
         INSERT INTO entries VALUES (1, 30), (1, 10), (2, 10), (2, 20);",
    )
    .unwrap();
    c.batch_execute(&up).unwrap();
    // each playlist numbered by track, the same track apart in each
    assert_eq!(
        positions(
            &mut c,
            "SELECT position FROM entries ORDER BY playlist_id, track_id"
        ),
        [1024, 2048, 1024, 2048]
    );
    // --link needs a parent table
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_ordered-diesel-migration"))
        .args([
            "--engine", "sqlite", "--table", "t", "--scope", "s", "--link",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

#[test]
fn the_command_converts_a_linked_list_and_reports_the_broken_lists() {
    let dir = std::env::temp_dir().join("ordered-cli-linked");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("app.db");
    let url = db.to_str().unwrap().to_owned();
    let mut c = SqliteConnection::establish(&url).unwrap();
    // list 1: 3 -> 1 -> 2; list 2: a cycle 4 <-> 5
    c.batch_execute(
        "CREATE TABLE lists (id INTEGER PRIMARY KEY); INSERT INTO lists VALUES (1), (2);
         CREATE TABLE steps (id INTEGER PRIMARY KEY, list_id INTEGER NOT NULL, prev_id INTEGER NULL);
         INSERT INTO steps VALUES (1, 1, 3), (2, 1, 1), (3, 1, NULL), (4, 2, 5), (5, 2, 4);",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ordered-diesel-migration"))
            .args([
                "--engine",
                "sqlite",
                "--table",
                "steps",
                "--scope",
                "list_id",
                "--parent",
                "lists",
                "--version-column",
                "version",
                "--dir",
            ])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    // the expand step: a migration folder
    let out = run(&["--position-column-only"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    c.batch_execute(&std::fs::read_to_string(folder.join("up.sql")).unwrap())
        .unwrap();
    // a survey writes nothing and names the cycle
    let out = run(&["--verify-linked", "prev_id", "--database-url", &url]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("2 lists (5 rows); 1 not one chain"), "{text}");
    assert!(text.contains("a cycle through 4, 5"), "{text}");
    let positioned: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "(SELECT COUNT(*) FROM steps WHERE position IS NOT NULL)",
    ))
    .get_result(&mut c)
    .unwrap();
    assert_eq!(positioned, 0);
    // the conversion converts list 1 in chain order and leaves list 2 alone
    let out = run(&["--convert-linked", "prev_id", "--database-url", &url]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("converted 1 lists (3 rows); 1 refused"),
        "{text}"
    );
    #[derive(QueryableByName)]
    struct R {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let order: Vec<i64> =
        diesel::sql_query("SELECT id FROM steps WHERE list_id = 1 ORDER BY position")
            .load::<R>(&mut c)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
    assert_eq!(order, [3, 1, 2]);
    // repaired, the rest converts: exit status 0
    c.batch_execute("UPDATE steps SET prev_id = NULL WHERE id = 4")
        .unwrap();
    let out = run(&["--convert-linked", "prev_id", "--database-url", &url]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("converted 2 lists (5 rows); 0 refused"),
        "{text}"
    );
    // without a database the run modes are refused
    let out = run(&["--convert-linked", "prev_id"]);
    assert!(!out.status.success());
    // a decimal strategy needs its precision and scale
    let out = run(&["--strategy", "decimal", "--precision", "12"]);
    assert!(!out.status.success());
    let out = run(&[
        "--strategy",
        "decimal",
        "--precision",
        "12",
        "--scale",
        "4",
        "--name",
        "dec",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let up = std::fs::read_to_string(folder.join("up.sql")).unwrap();
    assert!(up.contains("NUMERIC(12, 4)"), "{up}");
    let _ = std::fs::remove_dir_all(&dir);
}
