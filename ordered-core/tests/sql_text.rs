//! The SQL text per engine, asserted exactly by calling the builders.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ordered_core::Id;
use ordered_core::adapter::sql::{self, Arg, Dialect, Returns};
use ordered_core::migration::{self, Backfill};
use ordered_core::plan::{RangeRead, Read};
use ordered_core::{Fractional, Passes, Position, Spec, Write};

const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists").with_version("version");

const CARDS: Spec = Spec::new("cards", "column_id", "columns")
    .with_position("rank")
    .with_unique("cards_rank_uq")
    .with_strategy(&Fractional::DEFAULT);

#[test]
fn parent_lock_per_engine() {
    let pg = sql::lock_parent(Dialect::Postgres, &TRACKS, Id::Int(7), true);
    assert_eq!(pg.len(), 1);
    assert_eq!(
        pg[0].sql,
        r#"UPDATE "playlists" SET "version" = "version" + 1 WHERE "id" = $1 RETURNING CAST("id" AS BIGINT) AS o_id, CAST("version" - 1 AS BIGINT) AS o_version"#
    );
    assert_eq!(pg[0].args, vec![Arg::I64(7)]);
    assert_eq!(pg[0].returns, Returns::Parent);

    let pg_nov = sql::lock_parent(Dialect::Postgres, &CARDS, Id::Int(7), true);
    assert_eq!(
        pg_nov[0].sql,
        r#"UPDATE "columns" SET "id" = "id" WHERE "id" = $1 RETURNING CAST("id" AS BIGINT) AS o_id, CAST(0 AS BIGINT) AS o_version"#
    );

    let my = sql::lock_parent(Dialect::Mysql, &TRACKS, Id::Int(7), true);
    assert_eq!(
        my[0].sql,
        "SELECT CAST(`id` AS SIGNED) AS o_id, CAST(`version` AS SIGNED) AS o_version FROM `playlists` WHERE `id` = ? FOR UPDATE"
    );
    assert_eq!(
        my[1].sql,
        "UPDATE `playlists` SET `version` = `version` + 1 WHERE `id` = ?"
    );

    // SQLite: BEGIN IMMEDIATE is the lock, the bump answers the row in one statement
    let lite = sql::lock_parent(Dialect::Sqlite, &TRACKS, Id::Int(7), true);
    assert_eq!(lite.len(), 1);
    assert_eq!(
        lite[0].sql,
        r#"UPDATE "playlists" SET "version" = "version" + 1 WHERE "id" = ? RETURNING "id" AS o_id, "version" - 1 AS o_version"#
    );
    // without a version column there is nothing to write: a read
    let lite_nov = sql::lock_parent(Dialect::Sqlite, &CARDS, Id::Int(7), true);
    assert_eq!(
        lite_nov[0].sql,
        r#"SELECT "id" AS o_id, 0 AS o_version FROM "columns" WHERE "id" = ?"#
    );
    assert_eq!(lite_nov.len(), 1);
    // the negative control on SQLite: a plain read, no bump
    let lite_nobump = sql::lock_parent(Dialect::Sqlite, &TRACKS, Id::Int(7), false);
    assert_eq!(lite_nobump.len(), 1);
    assert!(lite_nobump[0].sql.starts_with("SELECT "));
    // the negative control: a plain lock with no bump
    let my_nobump = sql::lock_parent(Dialect::Mysql, &TRACKS, Id::Int(7), false);
    assert_eq!(my_nobump.len(), 1);
}

#[test]
fn neighbour_reads_lock_on_mysql_only() {
    let r = Read::Range(RangeRead {
        parent: Id::Int(3),
        above: Some(Position::Int(2048)),
        below: None,
        desc: false,
        limit: Some(1),
        offset: 0,
        exclude: Some(Id::Int(9)),
        visible: false,
    });
    assert_eq!(
        sql::read(Dialect::Postgres, &TRACKS, &r, true).sql,
        r#"SELECT CAST("id" AS BIGINT) AS o_id, CAST("playlist_id" AS BIGINT) AS o_parent, CAST("position" AS BIGINT) AS o_pos FROM "tracks" WHERE "playlist_id" = $1 AND "position" > $2 AND "id" <> $3 ORDER BY "position" LIMIT 1"#
    );
    assert_eq!(
        sql::read(Dialect::Mysql, &TRACKS, &r, true).sql,
        "SELECT CAST(`id` AS SIGNED) AS o_id, CAST(`playlist_id` AS SIGNED) AS o_parent, CAST(`position` AS SIGNED) AS o_pos FROM `tracks` WHERE `playlist_id` = ? AND `position` > ? AND `id` <> ? ORDER BY `position` LIMIT 1 FOR UPDATE"
    );
    assert_eq!(
        sql::read(Dialect::Sqlite, &TRACKS, &r, true).sql,
        r#"SELECT "id" AS o_id, "playlist_id" AS o_parent, "position" AS o_pos FROM "tracks" WHERE "playlist_id" = ? AND "position" > ? AND "id" <> ? ORDER BY "position" LIMIT 1"#
    );
    let keys = sql::read(
        Dialect::Mysql,
        &CARDS,
        &Read::Item { id: Id::Int(4) },
        false,
    );
    assert_eq!(
        keys.sql,
        "SELECT CAST(`id` AS SIGNED) AS o_id, CAST(`column_id` AS SIGNED) AS o_parent, CAST(`rank` AS CHAR) AS o_pos FROM `cards` WHERE `id` = ?"
    );
    let desc = Read::Range(RangeRead {
        parent: Id::Int(3),
        above: None,
        below: Some(Position::Key("a1".into())),
        desc: true,
        limit: Some(2),
        offset: 5,
        exclude: None,
        visible: false,
    });
    let s = sql::read(Dialect::Postgres, &CARDS, &desc, false);
    assert_eq!(
        s.sql,
        r#"SELECT CAST("id" AS BIGINT) AS o_id, CAST("column_id" AS BIGINT) AS o_parent, "rank" AS o_pos FROM "cards" WHERE "column_id" = $1 AND "rank" < $2 ORDER BY "rank" DESC LIMIT 2 OFFSET $3"#
    );
    assert_eq!(
        s.args,
        vec![Arg::I64(3), Arg::Text("a1".into()), Arg::I64(5)]
    );
}

#[test]
fn full_reads_keep_the_id_tiebreak() {
    let all = sql::list(Dialect::Sqlite, &TRACKS, Id::Int(1));
    assert_eq!(
        all.sql,
        r#"SELECT "id" AS o_id, "playlist_id" AS o_parent, "position" AS o_pos FROM "tracks" WHERE "playlist_id" = ? ORDER BY "position", "id""#
    );
}

#[test]
fn relabel_is_one_statement_on_postgres_and_two_elsewhere() {
    let w = Write::Renumber {
        parent: Id::Int(1),
        above: 1024,
        below: 2048,
        first: 1100,
        step: 100,
        hole_after: 2,
        rows: 8,
        passes: Passes::Two { temp_offset: 5 },
    };
    let pg = sql::write(Dialect::Postgres, &TRACKS, &w);
    assert_eq!(pg.len(), 1);
    assert_eq!(
        pg[0].sql,
        r#"UPDATE "tracks" AS o_t SET "position" = $1 + (o_r.o_rn - 1 + CASE WHEN o_r.o_rn > $2 THEN 1 ELSE 0 END) * $3 FROM (SELECT "id" AS o_rid, ROW_NUMBER() OVER (ORDER BY "position") AS o_rn FROM "tracks" WHERE "playlist_id" = $4 AND "position" > $5 AND "position" < $6) AS o_r WHERE o_t."id" = o_r.o_rid"#
    );
    assert_eq!(
        pg[0].args,
        [1100, 2, 100, 1, 1024, 2048].map(Arg::I64).to_vec()
    );
    let my = sql::write(Dialect::Mysql, &TRACKS, &w);
    assert_eq!(my.len(), 2);
    assert_eq!(
        my[0].sql,
        "UPDATE `tracks` AS o_t JOIN (SELECT `id` AS o_rid, ROW_NUMBER() OVER (ORDER BY `position`) AS o_rn FROM `tracks` WHERE `playlist_id` = ? AND `position` > ? AND `position` < ?) AS o_r ON o_t.`id` = o_r.o_rid SET o_t.`position` = -(? + (o_r.o_rn - 1 + CASE WHEN o_r.o_rn > ? THEN 1 ELSE 0 END) * ? + ?)"
    );
    // below what rows already in the temporary range hold: -(new + 5), then back
    assert_eq!(
        my[0].args,
        [1, 1024, 2048, 1100, 2, 100, 5].map(Arg::I64).to_vec()
    );
    assert_eq!(
        my[1].sql,
        "UPDATE `tracks` SET `position` = -`position` - ? WHERE `playlist_id` = ? AND `position` < 0 AND `position` > ?"
    );
    assert_eq!(my[1].args[0], Arg::I64(5));
    let lite = sql::write(Dialect::Sqlite, &TRACKS, &w);
    assert_eq!(
        lite[0].sql,
        r#"UPDATE "tracks" SET "position" = -(? + (o_r.o_rn - 1 + CASE WHEN o_r.o_rn > ? THEN 1 ELSE 0 END) * ? + ?) FROM (SELECT "id" AS o_rid, ROW_NUMBER() OVER (ORDER BY "position") AS o_rn FROM "tracks" WHERE "playlist_id" = ? AND "position" > ? AND "position" < ?) AS o_r WHERE "tracks"."id" = o_r.o_rid"#
    );
}

#[test]
fn a_rebalance_with_few_rows_in_the_way_is_one_ranked_pass() {
    let w = |parks: Vec<Id>| Write::Renumber {
        parent: Id::Int(1),
        above: ordered_core::position::PARK_POSITION - 1,
        below: i64::MAX,
        first: 1024,
        step: 1024,
        hole_after: u64::MAX,
        rows: 3,
        passes: Passes::One { parks },
    };
    // nothing in the way: the final values directly
    let my = sql::write(Dialect::Mysql, &TRACKS, &w(vec![]));
    assert_eq!(my.len(), 1);
    // positions are unique in a list: ranked by the position alone, in index order
    assert!(
        my[0].sql.contains("OVER (ORDER BY `position`) AS o_rn"),
        "{}",
        my[0].sql
    );
    assert!(
        my[0].sql.ends_with(
            "SET o_t.`position` = ? + (o_r.o_rn - 1 + CASE WHEN o_r.o_rn > ? THEN 1 ELSE 0 END) * ?"
        ),
        "{}",
        my[0].sql
    );
    // two rows in the way: first to their negations, ranked where they were
    let lite = sql::write(Dialect::Sqlite, &TRACKS, &w(vec![Id::Int(7), Id::Int(9)]));
    assert_eq!(lite.len(), 2);
    assert_eq!(
        lite[0].sql,
        r#"UPDATE "tracks" SET "position" = -"position" WHERE "playlist_id" = ? AND ("id" = ? OR "id" = ?)"#
    );
    assert_eq!(lite[0].args, [1, 7, 9].map(Arg::I64).to_vec());
    assert!(
        lite[1]
            .sql
            .starts_with(r#"UPDATE "tracks" SET "position" = ? + "#)
            && lite[1].sql.contains(
                r#"ORDER BY CASE WHEN "position" < 0 THEN -"position" ELSE "position" END, "id""#
            ),
        "{}",
        lite[1].sql
    );
    // PostgreSQL: its one statement either way
    assert_eq!(
        sql::write(Dialect::Postgres, &TRACKS, &w(vec![Id::Int(7)])).len(),
        1
    );
}

#[test]
fn key_assign_parks_in_a_prefix_outside_the_alphabet() {
    let w = Write::Assign {
        parent: Id::Int(2),
        rows: vec![
            (Id::Int(10), Position::Key("a1".into())),
            (Id::Int(11), Position::Key("a2".into())),
        ],
    };
    let pg = sql::write(Dialect::Postgres, &CARDS, &w);
    assert_eq!(pg.len(), 1);
    assert_eq!(
        pg[0].sql,
        r#"UPDATE "cards" SET "rank" = CASE "id" WHEN $1 THEN CAST($2 AS TEXT) WHEN $3 THEN CAST($4 AS TEXT) END WHERE "column_id" = $5 AND "id" IN ($6, $7)"#
    );
    let my = sql::write(Dialect::Mysql, &CARDS, &w);
    assert_eq!(
        my[0].sql,
        "UPDATE `cards` SET `rank` = CONCAT(?, `rank`) WHERE `column_id` = ? AND `id` IN (?, ?)"
    );
    assert_eq!(my[0].args[0], Arg::Text("\u{1}".into()));
    let lite = sql::write(Dialect::Sqlite, &CARDS, &w);
    assert_eq!(
        lite[0].sql,
        r#"UPDATE "cards" SET "rank" = ? || "rank" WHERE "column_id" = ? AND "id" IN (?, ?)"#
    );
    // large relabels on PostgreSQL defer the constraint across chunks, then check it
    let big = Write::Assign {
        parent: Id::Int(2),
        rows: (0..450)
            .map(|i| (Id::Int(i), Position::Key(format!("a{i}"))))
            .collect(),
    };
    let stmts = sql::write(Dialect::Postgres, &CARDS, &big);
    assert_eq!(stmts.len(), 5);
    assert_eq!(stmts[0].sql, r#"SET CONSTRAINTS "cards_rank_uq" DEFERRED"#);
    assert_eq!(stmts[4].sql, r#"SET CONSTRAINTS "cards_rank_uq" IMMEDIATE"#);
    assert!(stmts.iter().all(|s| !s.sql.contains("ON CONFLICT")));
}

#[test]
fn identifiers_are_quoted() {
    assert_eq!(sql::quote(Dialect::Postgres, r#"we"ird"#), r#""we""ird""#);
    assert_eq!(sql::quote(Dialect::Mysql, "we`ird"), "`we``ird`");
}

#[test]
fn backfill_orders_take_a_direction_and_qualified_names() {
    let sql = migration::backfill_sql(
        Dialect::Sqlite,
        &TRACKS,
        &["created_at DESC", "id asc", "title"],
    );
    assert!(
        sql.contains(r#"ORDER BY o_s."created_at" DESC, o_s."id" ASC, o_s."title")"#),
        "{sql}"
    );
    // anything else is one quoted name, which the engine refuses as an unknown column
    let odd = migration::backfill_sql(Dialect::Postgres, &TRACKS, &["created_at; DROP"]);
    assert!(odd.contains(r#"ORDER BY o_s."created_at; DROP")"#), "{odd}");
}

#[test]
fn migrations_per_engine() {
    let pg = migration::add_ordering(
        Dialect::Postgres,
        &TRACKS,
        Backfill::By(&["created_at", "id"]),
    );
    assert_eq!(
        pg.up,
        vec![
            r#"ALTER TABLE "playlists" ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0"#,
            r#"ALTER TABLE "tracks" ADD COLUMN "position" BIGINT NULL"#,
            r#"UPDATE "tracks" AS o_t SET "position" = o_r.o_rn * 1024 FROM (SELECT o_s."id" AS o_rid, ROW_NUMBER() OVER (PARTITION BY o_s."playlist_id" ORDER BY o_s."created_at", o_s."id") AS o_rn FROM "tracks" AS o_s) AS o_r WHERE o_t."id" = o_r.o_rid"#,
            r#"ALTER TABLE "tracks" ALTER COLUMN "position" SET NOT NULL"#,
            r#"ALTER TABLE "tracks" ADD CONSTRAINT "tracks_position_domain" CHECK ("position" BETWEEN -4611686018427387904 AND 4611686018427387903)"#,
            r#"ALTER TABLE "tracks" ADD CONSTRAINT "tracks_playlist_id_position_key" UNIQUE ("playlist_id", "position") DEFERRABLE INITIALLY IMMEDIATE"#,
        ]
    );
    assert_eq!(
        pg.down,
        vec![
            r#"ALTER TABLE "tracks" DROP CONSTRAINT "tracks_playlist_id_position_key""#,
            r#"ALTER TABLE "tracks" DROP CONSTRAINT "tracks_position_domain""#,
            r#"ALTER TABLE "tracks" DROP COLUMN "position""#,
            r#"ALTER TABLE "playlists" DROP COLUMN "version""#,
        ]
    );
    let my = migration::add_ordering(Dialect::Mysql, &CARDS, Backfill::None);
    assert_eq!(
        my.up,
        vec![
            "ALTER TABLE `cards` ADD COLUMN `rank` VARBINARY(65) NOT NULL",
            "ALTER TABLE `cards` ADD CONSTRAINT `cards_rank_domain` CHECK (`rank` <> '')",
            "SET @ordered_ddl = IF((SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'cards' AND index_name = 'cards_column_id_idx') = 0, 'CREATE INDEX `cards_column_id_idx` ON `cards` (`column_id`)', 'DO 0')",
            "PREPARE ordered_stmt FROM @ordered_ddl",
            "EXECUTE ordered_stmt",
            "DEALLOCATE PREPARE ordered_stmt",
            "CREATE UNIQUE INDEX `cards_rank_uq` ON `cards` (`column_id`, `rank`)",
        ]
    );
    let lite = migration::add_ordering(Dialect::Sqlite, &TRACKS, Backfill::None);
    // no default an insert around the library could silently take: the column is
    // nullable, triggers refuse a row without a position, and the migration itself fails
    // on a table with rows that nothing numbered
    assert_eq!(
        lite.up[1..5],
        [
            r#"ALTER TABLE "tracks" ADD COLUMN "position" INTEGER CHECK ("position" IS NULL OR (typeof("position") = 'integer' AND "position" BETWEEN -4611686018427387904 AND 4611686018427387903))"#,
            r#"CREATE TRIGGER "tracks_position_required_insert" BEFORE INSERT ON "tracks" FOR EACH ROW WHEN NEW."position" IS NULL BEGIN SELECT RAISE(ABORT, 'tracks.position is required: insert rows through the ordering library, or give each existing row a position (a backfill)'); END"#,
            r#"CREATE TRIGGER "tracks_position_required_update" BEFORE UPDATE OF "position" ON "tracks" FOR EACH ROW WHEN NEW."position" IS NULL BEGIN SELECT RAISE(ABORT, 'tracks.position is required: insert rows through the ordering library, or give each existing row a position (a backfill)'); END"#,
            r#"UPDATE "tracks" SET "position" = "position" WHERE "position" IS NULL"#,
        ]
    );
    assert!(
        lite.down.iter().any(|s| s.starts_with("DROP TRIGGER")),
        "{:?}",
        lite.down
    );
    let pgk = migration::create_table(Dialect::Postgres, &CARDS, &[("title", "TEXT NOT NULL")]);
    assert!(pgk.up[0].contains(r#""rank" VARCHAR(65) COLLATE "C" NOT NULL"#));
    let keys = migration::backfill_sql(Dialect::Sqlite, &CARDS, &[]);
    assert!(keys.starts_with(r#"UPDATE "cards" SET "rank" = 'e' || SUBSTR("#));
}
