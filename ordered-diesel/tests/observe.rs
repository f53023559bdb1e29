//! The tracing span and the metrics of every operation (a test binary of their own: a
//! scoped subscriber sees every span only when no other test thread runs operations).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::*;
use ordered_diesel::{Placement, RebalancePolicy};

/// The span of every operation and its fields, as a subscriber records them.
#[test]
fn every_operation_runs_in_a_span() {
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt};

    /// The `ordered.operation` spans by id, in creation order, with their fields.
    #[derive(Default, Clone)]
    struct Spans(Arc<Mutex<Vec<(u64, Recorded)>>>);
    type Recorded = Vec<(String, String)>;
    struct Fields<'a>(&'a mut Vec<(String, String)>);
    impl Visit for Fields<'_> {
        fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
            self.0.push((f.name().to_owned(), format!("{v:?}")));
        }
        fn record_str(&mut self, f: &Field, v: &str) {
            self.0.push((f.name().to_owned(), v.to_owned()));
        }
    }
    impl<S> tracing_subscriber::Layer<S> for Spans
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        fn on_new_span(
            &self,
            a: &tracing::span::Attributes<'_>,
            id: &tracing::span::Id,
            _: Context<'_, S>,
        ) {
            if a.metadata().name() == "ordered.operation" {
                let mut fields = Vec::new();
                a.record(&mut Fields(&mut fields));
                self.0.lock().unwrap().push((id.into_u64(), fields));
            }
        }
        fn on_record(
            &self,
            id: &tracing::span::Id,
            v: &tracing::span::Record<'_>,
            _: Context<'_, S>,
        ) {
            let mut spans = self.0.lock().unwrap();
            if let Some((_, fields)) = spans.iter_mut().find(|(i, _)| *i == id.into_u64()) {
                v.record(&mut Fields(fields));
            }
        }
    }
    let spans = Spans::default();
    // the global subscriber of this test binary (a scoped one can miss the spans of
    // callsites another test thread reached first); the other test's spans are left out
    // by table name
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let (mut c, t) = setup::<diesel::SqliteConnection>(
        "live_span",
        &GAPPED,
        RebalancePolicy::Window,
        &[ordered_diesel::Id::Int(1)],
    );
    let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
    ord(&t).move_before(&mut c, a, 999_999).unwrap_err();
    drop_tables(&mut c, &t);
    let table = format!("{:?}", t.items);
    let spans: Vec<Vec<(String, String)>> = spans
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, f)| {
            f.iter()
                .any(|(n, v)| n == "table" && (v == t.items || *v == table))
        })
        .map(|(_, f)| f.clone())
        .collect();
    let get = |i: usize, k: &str| {
        spans[i]
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(spans.len(), 2);
    assert_eq!(
        (get(0, "operation").as_str(), get(0, "scope").as_str()),
        ("insert", "1")
    );
    assert_eq!(get(0, "outcome"), "ok");
    assert_eq!(get(0, "rows_written"), "1");
    assert_eq!(get(0, "attempts"), "1");
    assert!(get(0, "table").ends_with("_i"), "{:?}", spans[0]);
    assert_eq!(
        (get(1, "operation").as_str(), get(1, "outcome").as_str()),
        ("move", "not_found")
    );
}

/// The metrics of a run, through a recorder installed for this thread.
#[cfg(feature = "metrics")]
#[test]
fn operations_report_metrics() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let (mut c, t) = setup::<diesel::SqliteConnection>(
            "live_metrics",
            &TIGHT,
            RebalancePolicy::Window,
            &[ordered_diesel::Id::Int(1)],
        );
        let a = add(&mut c, &t, ordered_diesel::Id::Int(1), Placement::Last, "a");
        for _ in 0..4 {
            add(
                &mut c,
                &t,
                ordered_diesel::Id::Int(1),
                Placement::After(a),
                "x",
            );
        }
        ord(&t).move_before(&mut c, a, 999_999).unwrap_err();
        drop_tables(&mut c, &t);
    });
    let mut ok = 0;
    let mut refused = 0;
    let mut relabels = 0;
    let mut rows_written = 0;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let label = |n: &str| {
            key.labels()
                .find(|l| l.key() == n)
                .map(|l| l.value().to_owned())
        };
        match (key.name(), value) {
            ("ordered_operations_total", DebugValue::Counter(n)) => {
                match label("outcome").as_deref() {
                    Some("ok") => ok += n,
                    Some("not_found") => refused += n,
                    other => panic!("outcome {other:?}"),
                }
            }
            ("ordered_relabels_total", DebugValue::Counter(n)) => relabels += n,
            ("ordered_rows_written", DebugValue::Histogram(v)) => rows_written += v.len(),
            _ => {}
        }
    }
    assert_eq!((ok, refused), (5, 1));
    assert!(relabels >= 1, "four inserts into a gap of 4 relabel");
    assert_eq!(rows_written, 5);
}
