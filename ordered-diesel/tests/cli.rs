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
        .args(["--version-column", "version", "--backfill", "id", "--dir"])
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
    c.batch_execute(&std::fs::read_to_string(folder.join("down.sql")).unwrap())
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
