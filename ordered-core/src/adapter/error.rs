//! An adapter's `Error` type, written once.

/// Defines an adapter's `Error` (the variants every adapter has, and any of its own),
/// its `Result`, its `code`, `status`, `is_retryable` and `ordering`, and its conversions
/// from the client's error and from a [`Failure`](crate::adapter::Failure). The
/// conversions into the client's error stay the adapter's (orphan rules).
///
/// `client`: the client's error type; `db`: the adapter's [`DbFailure`] newtype
/// over it; `retryable` and `lost`: how a client error is classified outside the
/// protocol; `deferred`: the variant a [`Failure::SqliteDeferred`] becomes.
///
/// [`DbFailure`]: crate::adapter::DbFailure
/// [`Failure::SqliteDeferred`]: crate::adapter::Failure::SqliteDeferred
#[doc(hidden)]
#[macro_export]
macro_rules! adapter_error {
    (
        client: $e:ty, db: $db:ident;
        retryable: $retryable:expr;
        lost: $lost:expr;
        deferred: $deferred:ident;
        extra: { $($(#[$vm:meta])* $xv:ident($xt:ty) => $xk:ident,)* }
    ) => {
        /// The result type of this crate.
        pub type Result<T, E = Error> = ::std::result::Result<T, E>;

        /// Why an ordered operation failed. In every case the collection is as it was
        /// before the call (the library's transaction, or savepoint, was rolled back),
        /// except [`Error::CommitUnknown`], where the commit itself may or may not have
        /// happened.
        #[derive(Debug, ::thiserror::Error)]
        #[non_exhaustive]
        pub enum Error {
            /// The request was refused: stale neighbours, a version conflict, a missing
            /// item... Match on the [`ordered_core::Error`] to tell the user what to do.
            #[error(transparent)]
            Ordering(#[from] $crate::Error),
            /// The database failed. [`Error::is_retryable`] tells whether a new attempt
            /// may succeed (deadlock, serialization failure, lock timeout, `SQLITE_BUSY`).
            #[error("database error: {0}")]
            Database($e),
            /// Every attempt failed with a retryable error; the last one is kept.
            #[error("gave up after {attempts} attempts: {last}")]
            RetriesExhausted {
                /// Attempts made.
                attempts: u32,
                /// The last error.
                last: $e,
            },
            /// The connection failed while committing: the operation may or may not have
            /// been applied. Made with a request key (`request_key`), repeat it with the
            /// same key: it returns the recorded outcome if the first one committed and
            /// applies it if not ([`requests`]($crate::requests)). Without one, re-read
            /// the collection before repeating it (a blind retry could apply a relative
            /// move twice).
            #[error(
                "the commit outcome is unknown ({0}): repeat the request with its request key, which returns the outcome if it was applied and applies it if not, or re-read the collection before retrying"
            )]
            CommitUnknown($e),
            /// The connection failed before the commit (killed, network cut, server
            /// restart): the server rolled the transaction back, so nothing was applied.
            /// Retry on a new connection ([`Error::is_retryable`] is true).
            #[error(
                "the connection was lost before the commit ({0}); nothing was applied: reconnect and retry"
            )]
            ConnectionLost($e),
            $($(#[$vm])* $xv($xt),)*
        }

        impl Error {
            fn kind(&self) -> $crate::adapter::Kind<'_> {
                use $crate::adapter::Kind;
                match self {
                    Error::Ordering(e) => Kind::Refused(e),
                    Error::Database(e) => Kind::Database { retryable: ($retryable)(e) },
                    Error::RetriesExhausted { .. } => Kind::RetriesExhausted,
                    Error::CommitUnknown(_) => Kind::CommitUnknown,
                    Error::ConnectionLost(_) => Kind::ConnectionLost,
                    $(Error::$xv(_) => Kind::$xk,)*
                }
            }

            /// Whether running the whole operation again may succeed. Inside your own
            /// transaction the library does not retry (it cannot restart a transaction it
            /// does not own): roll back and retry the transaction yourself when this is
            /// true.
            pub fn is_retryable(&self) -> bool {
                self.kind().is_retryable()
            }

            /// The ordering refusal, if that is what this is.
            pub fn refusal(&self) -> Option<&$crate::Error> {
                match self {
                    Error::Ordering(e) => Some(e),
                    _ => None,
                }
            }

            /// The application's constraint the database refused its row for (a
            /// duplicate slug in the insert closure: map it to 409), from
            /// [`ordered_core::Error::Constraint`].
            pub fn constraint(&self) -> Option<&$crate::constraint::Constraint> {
                self.refusal().and_then($crate::Error::constraint)
            }

            /// A stable machine-readable code, the same in every adapter: the refusal's
            /// [`code`](ordered_core::Error::code) (`stale_neighbours`,
            /// `version_conflict`, `not_found`, ...), or for a database failure
            /// `database_busy` (retryable), `database_error`, `retries_exhausted`,
            /// `commit_unknown`, `connection_lost`, `sqlite_deferred`.
            pub fn code(&self) -> &'static str {
                self.kind().code()
            }

            /// What the failure means for the client ([`Status::http`] maps it to
            /// HTTP): a refusal's own status; `RetryLater` for a busy database,
            /// exhausted retries and a lost connection; `Conflict` for an unknown commit
            /// outcome (the client re-reads the list before repeating the gesture);
            /// `Internal` for any other database error.
            pub fn status(&self) -> $crate::error::Status {
                self.kind().status()
            }
        }

        /// A client error as this crate reports it: a lost connection is
        /// [`Error::ConnectionLost`], anything else [`Error::Database`].
        impl From<$e> for Error {
            fn from(e: $e) -> Self {
                if ($lost)(&e) {
                    Error::ConnectionLost(e)
                } else {
                    Error::Database(e)
                }
            }
        }

        impl From<$crate::adapter::Failure<$db>> for Error {
            fn from(f: $crate::adapter::Failure<$db>) -> Self {
                use $crate::adapter::Failure;
                match f {
                    Failure::Refused(e) => Error::Ordering(e),
                    Failure::Database($db(e)) => Error::Database(e),
                    Failure::RetriesExhausted { attempts, last: $db(last) } => {
                        Error::RetriesExhausted { attempts, last }
                    }
                    Failure::CommitUnknown($db(e)) => Error::CommitUnknown(e),
                    Failure::ConnectionLost($db(e)) => Error::ConnectionLost(e),
                    Failure::SqliteDeferred($db(e)) => Error::$deferred(e),
                }
            }
        }

        /// The client's error as the core's protocol sees it.
        #[derive(Debug)]
        pub(crate) struct $db(pub(crate) $e);

        impl ::std::fmt::Display for $db {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}
