//! What every operation reports: a `tracing` span, and (feature `metrics`) counters and
//! histograms through the [`metrics`](https://docs.rs/metrics) facade, so that an
//! application's existing exporter (Prometheus, StatsD, ...) shows them. The adapters
//! call these functions; an application only installs its subscriber or recorder.
//!
//! # The span
//! `ordered.operation`, at `INFO`, with the fields `table`, `operation` (see
//! [`Request::name`]), `scope` (the collection the request names, if any), and, once
//! it ends, `attempts`, `rows_written`, `relabelled`, `statements` and `outcome` (`ok`
//! or the refusal's [`Error::code`](crate::Error::code)). Each retry is a `DEBUG`
//! event inside it.
//!
//! # The metrics (feature `metrics`)
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `ordered_operations_total` | counter | `table`, `operation`, `outcome` | operations ended (`outcome`: `ok` or the error code) |
//! | `ordered_retries_total` | counter | `table`, `operation`, `class` | attempts retried, by [`retry::reason`](crate::retry::reason) |
//! | `ordered_relabels_total` | counter | `table` | operations that relabelled neighbours |
//! | `ordered_rows_written` | histogram | `table`, `operation` | rows written per operation |
//! | `ordered_relabelled_rows` | histogram | `table` | neighbours relabelled per relabel |
//! | `ordered_statements` | histogram | `table`, `operation` | statements per attempt |
//! | `ordered_key_length` | histogram | `table` | the longest fractional key an operation wrote, in bytes |
//!
//! ```
//! use ordered_core::adapter::observe;
//! use ordered_core::{Outcome, Placement, Request, Spec};
//!
//! const TRACKS: Spec = Spec::new("tracks", "playlist_id", "playlists");
//! let req = Request::Insert { parent: 1.into(), at: Placement::Last };
//! let span = observe::span(&TRACKS, &req);
//! observe::finished(&span, &TRACKS, &req, Ok(&Outcome::default()));
//! ```

use tracing::field::Empty;

use crate::engine::Outcome;
use crate::plan::Request;
use crate::spec::Spec;

/// The span an operation runs in (see the module docs).
pub fn span(spec: &Spec, req: &Request) -> tracing::Span {
    tracing::info_span!(
        "ordered.operation",
        table = spec.table,
        operation = req.name(),
        scope = req.scope().map(tracing::field::display),
        attempts = Empty,
        rows_written = Empty,
        relabelled = Empty,
        statements = Empty,
        outcome = Empty,
    )
}

/// A failed attempt that will be retried: a `DEBUG` event and
/// `ordered_retries_total`.
pub fn retried(spec: &Spec, req: &Request, attempt: u32, error: &dyn std::fmt::Display) {
    let message = error.to_string();
    let class = crate::retry::reason(&message);
    tracing::debug!(table = spec.table, attempt, class, error = %message, "ordered: retrying");
    #[cfg(feature = "metrics")]
    metrics::counter!(
        "ordered_retries_total",
        "table" => spec.table,
        "operation" => req.name(),
        "class" => class,
    )
    .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = req;
}

/// The end of an operation: the span's last fields, an `INFO` event for a relabel, and
/// the metrics. `result` is the outcome, or the code of the error returned
/// ([`crate::Error::code`], or the adapter's own code for a database failure).
pub fn finished(
    span: &tracing::Span,
    spec: &Spec,
    req: &Request,
    result: Result<&Outcome, &'static str>,
) {
    let code = match result {
        Ok(o) => {
            span.record("attempts", o.attempts);
            span.record("rows_written", o.rows_written);
            span.record("relabelled", o.relabelled);
            span.record("statements", o.statements);
            if o.relabelled > 0 {
                tracing::info!(
                    parent: span,
                    table = spec.table,
                    relabelled = o.relabelled,
                    attempts = o.attempts,
                    "ordered: relabelled"
                );
            }
            "ok"
        }
        Err(code) => code,
    };
    span.record("outcome", code);
    #[cfg(feature = "metrics")]
    {
        let (table, operation) = (spec.table, req.name());
        metrics::counter!(
            "ordered_operations_total",
            "table" => table, "operation" => operation, "outcome" => code,
        )
        .increment(1);
        if let Ok(o) = result {
            metrics::histogram!("ordered_rows_written", "table" => table, "operation" => operation)
                .record(o.rows_written as f64);
            metrics::histogram!("ordered_statements", "table" => table, "operation" => operation)
                .record(f64::from(o.statements));
            if o.relabelled > 0 {
                metrics::counter!("ordered_relabels_total", "table" => table).increment(1);
                metrics::histogram!("ordered_relabelled_rows", "table" => table)
                    .record(o.relabelled as f64);
            }
            let longest = o
                .changes
                .rows
                .iter()
                .filter_map(|c| c.position.as_key().map(str::len))
                .max();
            if let Some(len) = longest {
                metrics::histogram!("ordered_key_length", "table" => table).record(len as f64);
            }
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = req;
}
