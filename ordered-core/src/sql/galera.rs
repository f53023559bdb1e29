use super::{Returns, Statement};

/// `o_count` is 1 on a Galera node (`@@wsrep_on`), 0 on a MariaDB server without a
/// cluster. Run with `wsrep_sync_wait = 1`, so on a node it first waits until the
/// node has applied the cluster's committed writes. On MySQL, or a MariaDB built
/// without wsrep, it fails: see [`is_not_galera`].
pub fn probe() -> Statement {
    Statement {
        sql: "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT CAST(@@wsrep_on AS SIGNED) AS o_count"
            .into(),
        args: Vec::new(),
        returns: Returns::Count,
    }
}

/// Whether the probe's error message says the server has no Galera support (MySQL
/// has no `SET STATEMENT`; a MariaDB built without wsrep has no such variable).
pub fn is_not_galera(msg: &str) -> bool {
    msg.contains("Unknown system variable") || msg.contains("error in your SQL syntax")
}

/// The first statement of a transaction on a node: remembers the GTID of this
/// session's last replicated write in a session variable.
pub fn mark() -> Statement {
    Statement {
        sql: "SET @ordered_gtid = WSREP_LAST_WRITTEN_GTID()".into(),
        args: Vec::new(),
        returns: Returns::Nothing,
    }
}

/// `o_count` is 1 while this session has replicated nothing since [`mark`]. Before
/// `COMMIT` it must be 1: a transaction's writes replicate only at its commit, so a
/// new GTID means statements ran outside the transaction. After `COMMIT` it must be
/// 0: a commit that wrote nothing leaves it at 1.
pub fn unchanged() -> Statement {
    Statement {
        sql: "SELECT CAST(WSREP_LAST_WRITTEN_GTID() <=> @ordered_gtid AS SIGNED) AS o_count".into(),
        args: Vec::new(),
        returns: Returns::Count,
    }
}

/// The check before `COMMIT`: `o_count` is 1 while this session has replicated
/// nothing since [`mark`] *and* is still inside its transaction. A node that aborted
/// the transaction may run the statements that follow outside it, one by one
/// (writes among them escape); the GTID alone has been seen to miss that once in a
/// few dozen runs of eight writers on three nodes, `@@in_transaction` does not:
/// a transaction that is gone before its `COMMIT` is never reported a success.
pub fn intact() -> Statement {
    Statement {
        sql: "SELECT CAST((WSREP_LAST_WRITTEN_GTID() <=> @ordered_gtid) AND @@in_transaction = 1 AS SIGNED) AS o_count"
            .into(),
        args: Vec::new(),
        returns: Returns::Count,
    }
}

/// `stmt` (a read outside the library's transactions: `list`, `index_of`, `verify`)
/// as a causal read: on a Galera node it waits until the node has applied the
/// cluster's committed writes, so a client that wrote through another node reads its
/// own write. Where it fails with [`is_not_galera`], run `stmt` as it is.
pub fn causal(stmt: &Statement) -> Statement {
    Statement {
        sql: format!("SET STATEMENT wsrep_sync_wait = 1 FOR {}", stmt.sql),
        args: stmt.args.clone(),
        returns: stmt.returns,
    }
}

/// The check before the `ROLLBACK` of a failed attempt: `unchanged` is the reply to
/// [`unchanged`] (`None` if it could not run), `locked` the first collection the
/// attempt locked. A new GTID since the mark means statements escaped the
/// transaction before it failed, so the failure is [`crate::Error::PartiallyApplied`]
/// (a retry would apply the operation on top of part of itself). Before the first
/// lock the mark may not have run in this attempt, and nothing was written.
pub fn check_escaped(unchanged: Option<i64>, locked: Option<crate::Id>) -> Option<crate::Error> {
    match (unchanged, locked) {
        (Some(0), Some(parent)) => Some(crate::Error::PartiallyApplied { parent }),
        _ => None,
    }
}

/// The check after `COMMIT`: the reply to [`unchanged`], run on the same
/// connection right after the commit succeeded.
pub fn check_committed(unchanged: i64) -> Result<(), crate::Error> {
    if unchanged == 1 {
        Err(crate::Error::CommitDropped)
    } else {
        Ok(())
    }
}
