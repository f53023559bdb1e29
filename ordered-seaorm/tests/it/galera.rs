//! MariaDB Galera Cluster through SeaORM (`.ci/galera.sh start`, then
//! `ORDERED_GALERA_URLS=$(.ci/galera.sh urls)`; without it these tests say they skipped,
//! `ORDERED_REQUIRE_GALERA=1` makes them fail instead): a versionless spec refused,
//! causal reads through another node, and several writer nodes on one hot collection,
//! where no transaction the cluster dropped may be reported as a success. SeaORM's
//! pool gives the connection back at commit, so on a node the library sends COMMIT
//! itself and checks the GTID on that session first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::common::*;
use ordered_core::adapter::sql::Returns;
use ordered_seaorm::__private::{Request, Statement as CoreStatement};
use ordered_seaorm::{
    Dialect, Error, Id, OrderedTable, OrderingError, Placement, RebalancePolicy, Spec,
};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};

fn nodes() -> Option<Vec<String>> {
    match std::env::var("ORDERED_GALERA_URLS") {
        Ok(v) if !v.is_empty() => Some(v.split(',').map(str::to_owned).collect()),
        _ if std::env::var("ORDERED_REQUIRE_GALERA").is_ok_and(|v| v == "1") => {
            panic!("ORDERED_REQUIRE_GALERA=1 but ORDERED_GALERA_URLS is not set")
        }
        _ => {
            eprintln!(
                "skipped: ORDERED_GALERA_URLS is not set (start a cluster with .ci/galera.sh)"
            );
            None
        }
    }
}

async fn node(url: &str) -> DatabaseConnection {
    let mut opts = sea_orm::ConnectOptions::new(url.to_owned());
    opts.max_connections(4);
    Database::connect(opts).await.unwrap()
}

async fn count(db: &DatabaseConnection, sql: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_without_a_version_column_is_refused_on_a_node() {
    let Some(urls) = nodes() else { return };
    let db = node(&urls[0]).await;
    let spec = spec_for("gal_nover", &GAPPED, RebalancePolicy::Window);
    reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
    let bare = spec.without_version();
    let err = OrderedTable::new(bare)
        .insert_last(&db, ordered_seaorm::Id::Int(1), inserter(bare, "a".into()))
        .await
        .unwrap_err();
    assert_eq!(
        err.refusal(),
        Some(&OrderingError::VersionColumnRequired {
            table: "s_gal_nover_i".into()
        }),
        "{err}"
    );
    assert!(ids(&db, spec, ordered_seaorm::Id::Int(1)).await.is_empty());
    // with its version column the same table runs, and lists at once on another node
    let id = add(&db, spec, ordered_seaorm::Id::Int(1), Placement::Last, "a").await;
    let other = node(&urls[1]).await;
    assert_eq!(ids(&other, spec, ordered_seaorm::Id::Int(1)).await, [id]);
}

fn log_version(_: Dialect, _: &Spec, _: &Request) -> CoreStatement {
    CoreStatement {
        sql: "INSERT INTO s_gal_log (v, in_tx) SELECT version, @@in_transaction FROM s_gal_multi_p WHERE id = 1".into(),
        args: vec![],
        returns: Returns::Nothing,
    }
}

/// As the Diesel suite's: 3 nodes x 4 tasks x 60 operations on one collection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_writer_nodes_never_report_a_dropped_transaction_as_a_success() {
    let Some(urls) = nodes() else { return };
    let db = node(&urls[0]).await;
    let spec = spec_for("gal_multi", &GAPPED, RebalancePolicy::Window);
    reset(&db, &spec, &[ordered_seaorm::Id::Int(1)]).await;
    exec(&db, "DROP TABLE IF EXISTS s_gal_log").await;
    exec(&db, "CREATE TABLE s_gal_log (op BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v BIGINT NOT NULL, in_tx INT NOT NULL)").await;
    let mut seeded = Vec::new();
    for i in 0..32 {
        seeded.push(
            add(
                &db,
                spec,
                ordered_seaorm::Id::Int(1),
                Placement::Last,
                &format!("s{i}"),
            )
            .await,
        );
    }
    let v0 = count(
        &db,
        "SELECT CAST(version AS SIGNED) AS n FROM s_gal_multi_p WHERE id = 1",
    )
    .await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..urls.len() * 4 {
        let url = urls[w % urls.len()].clone();
        let seeded = seeded.clone();
        tasks.push(tokio::spawn(async move {
            let db = node(&url).await;
            let o = OrderedTable::new(spec).with_final_statement(log_version);
            let mut rng = 0x2545_F491_4F6C_DD1D_u64 ^ (w as u64 + 7);
            let mut ok = Vec::new();
            let mut errors: BTreeMap<String, usize> = BTreeMap::new();
            for _ in 0..60 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let a = (rng % 32) as usize;
                let anchor = seeded[a];
                let r = if rng % 5 < 2 {
                    o.insert_after(
                        &db,
                        ordered_seaorm::Id::Int(1),
                        anchor,
                        inserter(spec, "w".into()),
                    )
                    .await
                    .map(|i| {
                        (
                            i.outcome.version.unwrap(),
                            Some(i.value),
                            i.outcome.attempts,
                            false,
                        )
                    })
                } else {
                    let item = seeded[(a + 1 + (rng >> 8) as usize % 31) % 32];
                    o.move_before(&db, item, anchor)
                        .await
                        .map(|o| (o.version.unwrap(), None, o.attempts, o.unchanged))
                };
                match r {
                    // a move to where the item already was: nothing committed
                    Ok((_, _, _, true)) => {}
                    Ok((v, id, attempts, false)) => ok.push((v, id, attempts)),
                    Err(e) => {
                        let key = match &e {
                            Error::Ordering(o) => format!("{o:?}")
                                .split([' ', '{', '('])
                                .next()
                                .unwrap()
                                .to_owned(),
                            Error::RetriesExhausted { .. } => "RetriesExhausted".into(),
                            other => other.to_string(),
                        };
                        *errors.entry(key).or_default() += 1;
                    }
                }
            }
            (ok, errors)
        }));
    }
    let mut ok = Vec::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for t in tasks {
        let (o, e) = t.await.unwrap();
        ok.extend(o);
        for (k, n) in e {
            *errors.entry(k).or_default() += n;
        }
    }
    let elapsed = started.elapsed();
    let rows = OrderedTable::new(spec).list(&db, 1).await.unwrap();
    let present: BTreeSet<Id> = rows.iter().map(|r| r.id).collect();
    let final_version = count(
        &db,
        "SELECT CAST(version AS SIGNED) AS n FROM s_gal_multi_p WHERE id = 1",
    )
    .await;
    let mut versions = BTreeSet::new();
    for (v, id, _) in &ok {
        assert!(versions.insert(*v), "version {v} reported by two successes");
        assert!(*v > v0 && *v <= final_version);
        if let Some(id) = id {
            assert!(
                present.contains(id),
                "the insert at version {v} (id {id}) is missing"
            );
        }
    }
    let mut logged: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for r in db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT CAST(v AS SIGNED) AS v, CAST(in_tx AS SIGNED) AS t FROM s_gal_log",
        ))
        .await
        .unwrap()
    {
        logged
            .entry(r.try_get("", "v").unwrap())
            .or_default()
            .push(r.try_get::<i64>("", "t").unwrap());
    }
    for (v, _, _) in &ok {
        assert!(
            logged.get(v).is_some_and(|t| t.contains(&1)),
            "the success at version {v} has no log row inside its transaction: {:?}",
            logged.get(v)
        );
    }
    let escaped = logged.values().flatten().filter(|t| **t == 0).count();
    let partial = errors.get("PartiallyApplied").copied().unwrap_or(0);
    assert!(escaped <= partial, "{escaped} escaped, {partial} reported");
    if partial > 0 {
        OrderedTable::new(spec)
            .rebalance(&db, ordered_seaorm::Id::Int(1))
            .await
            .unwrap();
    }
    let report = OrderedTable::new(spec).verify(&db, 1).await.unwrap();
    assert!(report.is_ok(), "{report:?}");
    let retried = ok.iter().filter(|o| o.2 > 1).count();
    let most = ok.iter().map(|o| o.2).max().unwrap_or(0);
    eprintln!(
        "seaorm galera multi-writer: {} nodes x 4 tasks x 60 ops in {:.1} s: {} ok ({retried} after retries, up to {most} attempts), errors {errors:?}; log rows outside a transaction: {escaped}",
        urls.len(),
        elapsed.as_secs_f64(),
        ok.len()
    );
    assert!(!ok.is_empty());
    exec(&db, "DROP TABLE IF EXISTS s_gal_log").await;
}
