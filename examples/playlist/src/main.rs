//! The seeds' playlist, end to end: `cargo run -p playlist`.
//!
//! Embedded SQLite by default; `DATABASE_URL=postgres://...` (or `mysql://...` with
//! `--features mysql`) runs the same steps on a server.

// Diesel's `table!` generates undocumented modules and items.
#![allow(missing_docs)]

use std::fmt::Write as _;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use ordered_diesel::migrations::{create_parent_table, create_table};
use ordered_diesel::{Ordered, OrderedConnection, OrderedDsl, OrderingError, Slot};

diesel::table! {
    demo_playlists (id) {
        id -> BigInt,
        name -> Text,
        version -> BigInt,
    }
}

diesel::table! {
    demo_tracks (id) {
        id -> BigInt,
        playlist_id -> BigInt,
        title -> Text,
        position -> BigInt,
    }
}

/// A playlist track, ordered within its playlist.
#[derive(Queryable, Selectable, Ordered)]
#[diesel(table_name = demo_tracks)]
#[ordered(scope = playlist_id, parent = demo_playlists, version = version)]
struct Track {
    id: i64,
    #[allow(dead_code)] // selected with the row; the demo shows one playlist
    playlist_id: i64,
    title: String,
    position: i64,
}

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// What the demo needs from a connection besides the library's trait.
trait DemoConn: OrderedConnection + SimpleConnection + Send + 'static {
    fn connect(url: &str) -> Res<Self>;
    fn add(&mut self, slot: Slot, title: &str) -> QueryResult<i64>;
    fn titles(&mut self) -> QueryResult<Vec<Track>>;
    fn create_playlist(&mut self) -> QueryResult<usize>;
}

macro_rules! demo_conn {
    ($conn:ty, $returning:expr) => {
        impl DemoConn for $conn {
            fn connect(url: &str) -> Res<Self> {
                Ok(<$conn>::establish(url)?)
            }
            fn add(&mut self, slot: Slot, title: &str) -> QueryResult<i64> {
                let values = (
                    demo_tracks::playlist_id.eq(slot.scope::<i64>()?),
                    demo_tracks::title.eq(title.to_owned()),
                    demo_tracks::position.eq(slot.int()?),
                );
                $returning(self, values)
            }
            fn create_playlist(&mut self) -> QueryResult<usize> {
                diesel::insert_into(demo_playlists::table)
                    .values((
                        demo_playlists::id.eq(1),
                        demo_playlists::name.eq("Launch"),
                        demo_playlists::version.eq(0),
                    ))
                    .execute(self)
            }
            fn titles(&mut self) -> QueryResult<Vec<Track>> {
                demo_tracks::table
                    .filter(demo_tracks::playlist_id.eq(1))
                    .order((demo_tracks::position, demo_tracks::id))
                    .select(Track::as_select())
                    .load(self)
            }
        }
    };
}

demo_conn!(SqliteConnection, |c: &mut SqliteConnection, v| {
    diesel::insert_into(demo_tracks::table)
        .values(v)
        .returning(demo_tracks::id)
        .get_result(c)
});
demo_conn!(PgConnection, |c: &mut PgConnection, v| diesel::insert_into(
    demo_tracks::table
)
.values(v)
.returning(demo_tracks::id)
.get_result(c));
#[cfg(feature = "mysql")]
demo_conn!(MysqlConnection, |c: &mut MysqlConnection, v| {
    diesel::insert_into(demo_tracks::table)
        .values(v)
        .execute(c)?;
    diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "CAST(LAST_INSERT_ID() AS SIGNED)",
    ))
    .get_result(c)
});

fn show<C: DemoConn>(conn: &mut C, step: &str) -> Res<()> {
    let mut out = format!("\n{step}\n");
    for (i, t) in conn.titles()?.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:>2}. {:<10} position {:>6}   (id {})",
            i + 1,
            t.title,
            t.position,
            t.id
        );
    }
    print!("{out}");
    Ok(())
}

fn id_of<C: DemoConn>(conn: &mut C, title: &str) -> Res<i64> {
    Ok(conn
        .titles()?
        .into_iter()
        .find(|t| t.title == title)
        .map(|t| t.id)
        .ok_or("missing track")?)
}

fn run<C: DemoConn>(url: &str) -> Res<()> {
    let conn = &mut C::connect(url)?;
    if C::DIALECT == ordered_diesel::Dialect::Sqlite {
        conn.batch_execute("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL;")?;
    }
    // the schema, from the generated migrations
    let spec = <Track as Ordered>::SPEC;
    conn.batch_execute("DROP TABLE IF EXISTS demo_tracks; DROP TABLE IF EXISTS demo_playlists;")?;
    for m in [
        create_parent_table(C::DIALECT, &spec, &[("name", "VARCHAR(100) NOT NULL")]),
        create_table(C::DIALECT, &spec, &[("title", "VARCHAR(100) NOT NULL")]),
    ] {
        for stmt in &m.up {
            conn.batch_execute(stmt)?;
        }
    }
    conn.create_playlist()?;
    println!(
        "schema created from the generated migration ({:?})",
        C::DIALECT
    );

    for title in ["Intro", "Demo", "Credits"] {
        Track::insert_last(conn, 1, |c, slot| c.add(slot, title))?;
    }
    show(conn, "1. Intro, Demo, Credits appended")?;

    let (intro, demo, credits) = (
        id_of(conn, "Intro")?,
        id_of(conn, "Demo")?,
        id_of(conn, "Credits")?,
    );
    let moved = Track::move_before(conn, credits, demo)?;
    show(
        conn,
        &format!(
            "2. Credits moved before Demo ({} row written)",
            moved.rows_written
        ),
    )?;

    Track::insert_between(conn, 1, Some(credits), Some(demo), |c, slot| {
        c.add(slot, "Setup")
    })?;
    show(conn, "3. Setup inserted between Credits and Demo")?;

    // 4. keep inserting right after Intro until the 1024-wide gap runs out
    let mut relabels = 0;
    for i in 1..=12 {
        let r = Track::insert_after(conn, 1, intro, |c, slot| c.add(slot, &format!("Bonus {i}")))?;
        if r.outcome.relabelled > 0 {
            relabels += 1;
            println!(
                "\n   Bonus {i}: no integer left in the gap, relabelled {} neighbouring rows (not the whole list)",
                r.outcome.relabelled
            );
        }
    }
    show(
        conn,
        &format!("4. 12 inserts into one gap: {relabels} relabel(s), order intact"),
    )?;
    let report = Track::verify(conn, 1)?;
    println!(
        "   verify: {} items, duplicates {}, invalid {}",
        report.items,
        report.duplicates.len(),
        report.invalid.len()
    );

    // 5. two editors drag into the same gap at once, each from the version it read
    let version = Track::ordered()
        .move_to_end(conn, intro)?
        .version
        .ok_or("no version")?;
    show(
        conn,
        &format!("5. Intro moved to the end (playlist version is now {version})"),
    )?;
    let (b1, b2, setup) = (
        id_of(conn, "Bonus 1")?,
        id_of(conn, "Bonus 2")?,
        id_of(conn, "Setup")?,
    );
    let results: Vec<String> = std::thread::scope(|s| {
        let editors: Vec<_> = [("Alice", b1), ("Bob", b2)]
            .into_iter()
            .map(|(who, item)| {
                s.spawn(move || -> String {
                    let mut c = match C::connect(url) {
                        Ok(c) => c,
                        Err(e) => return format!("{who}: cannot connect: {e}"),
                    };
                    if C::DIALECT == ordered_diesel::Dialect::Sqlite {
                        let _ = c.batch_execute("PRAGMA busy_timeout = 5000;");
                    }
                    match Track::ordered().expect_version(version).move_between(
                        &mut c,
                        item,
                        Some(credits),
                        Some(setup),
                    ) {
                        Ok(o) => format!(
                            "{who}: moved, playlist now at version {}",
                            o.version.unwrap_or(0)
                        ),
                        Err(e) => format!("{who}: refused: {e}"),
                    }
                })
            })
            .collect();
        editors
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| "editor panicked".into()))
            .collect()
    });
    for r in &results {
        println!("   {r}");
    }
    show(
        conn,
        "6. two editors, same gap, same expected version: one lands, the other is told to re-read",
    )?;

    // 7. a client that still shows Credits next to Setup asks for a move between them
    let bonus3 = id_of(conn, "Bonus 3")?;
    match Track::move_between(conn, bonus3, Some(credits), Some(setup)) {
        Err(e) if matches!(e.refusal(), Some(OrderingError::StaleNeighbours { .. })) => {
            println!("\n7. stale move rejected with a typed error: {e}");
        }
        Ok(_) => println!("\n7. Credits and Setup were still adjacent: the move went through"),
        Err(e) => return Err(e.into()),
    }
    Track::rebalance(conn, 1)?;
    show(conn, "8. rebalanced: same order, even spacing")?;
    Ok(())
}

fn main() -> Res<()> {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| {
        std::env::temp_dir()
            .join("ordered-playlist-demo.db")
            .display()
            .to_string()
    });
    if url.starts_with("postgres") {
        run::<PgConnection>(&url)
    } else if url.starts_with("mysql") {
        #[cfg(feature = "mysql")]
        return run::<MysqlConnection>(&url);
        #[cfg(not(feature = "mysql"))]
        return Err("MySQL needs `cargo run -p playlist --features mysql`".into());
    } else {
        let path = url.trim_start_matches("sqlite://");
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{ext}"));
        }
        run::<SqliteConnection>(path)
    }
}
