//! What happened when a case ran: the actual schedule, each statement's outcome,
//! how each transaction ended, and the final database state.

use super::case::{Isolation, StmtRef};
use super::value::Value;
use super::write_list::WriteList;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Error classes, decided by engine error codes (never by message text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The engine refused to wait for a lock (SQLite BUSY outside the busy handler,
    /// BUSY_SNAPSHOT): deadlock avoidance.
    Busy,
    Deadlock,
    LockWaitTimeout,
    /// SQLSTATE 40001 and friends.
    SerializationFailure,
    /// MariaDB 1020 (snapshot isolation write conflict).
    SnapshotConflict,
    /// The transaction is already aborted (PostgreSQL 25P02).
    TransactionAborted,
    /// Cancelled by txfuzz (interrupt, KILL QUERY, cancel token).
    Cancelled,
    DuplicateKey,
    NotNullViolation,
    CheckViolation,
    ForeignKeyViolation,
    /// Type/range/cast errors on data values.
    DataError,
    /// A write in a READ ONLY transaction (MariaDB 1792, PostgreSQL 25006).
    ReadOnlyTransaction,
    Syntax,
    /// Connection lost or server gone.
    ConnectionLost,
    Internal,
    Other,
}

impl ErrorClass {
    /// An error that comes from the transaction around the statement (its
    /// concurrency control, or its READ ONLY access mode), which the statement
    /// replayed outside that transaction does not reproduce. Such a
    /// statement had no effect.
    pub fn from_transaction(self) -> bool {
        self.is_concurrency() || self == ErrorClass::ReadOnlyTransaction
    }
    /// A declared constraint refused the write (unique or primary key,
    /// foreign key, CHECK, NOT NULL).
    pub fn is_constraint(self) -> bool {
        matches!(
            self,
            ErrorClass::DuplicateKey
                | ErrorClass::ForeignKeyViolation
                | ErrorClass::CheckViolation
                | ErrorClass::NotNullViolation
        )
    }
    /// Errors that a transaction test is expected to produce from concurrency
    /// control, as opposed to data errors that any serial run produces too.
    pub fn is_concurrency(self) -> bool {
        matches!(
            self,
            ErrorClass::Busy
                | ErrorClass::Deadlock
                | ErrorClass::LockWaitTimeout
                | ErrorClass::SerializationFailure
                | ErrorClass::SnapshotConflict
                | ErrorClass::TransactionAborted
                | ErrorClass::Cancelled
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StmtError {
    pub class: ErrorClass,
    /// The engine's own code (`SQLITE_BUSY`, `1213`, `40001`, ...).
    pub code: String,
    pub message: String,
}

/// A row version: the row id and its write list as read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RowVersion {
    pub table: String,
    pub rid: i64,
    pub wl: WriteList,
}

/// One row written by a statement: the version it replaced (`None` for a new row)
/// and the version it produced (`None` when the row was deleted).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RowWrite {
    pub table: String,
    pub rid: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<WriteList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<WriteList>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StmtError>,
    /// The user-visible result rows of a SELECT (instrumentation columns removed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Vec<Value>>,
    /// Row versions the statement read (observed through `rid`/`wl`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<RowVersion>,
    /// False when the statement read rows that instrumentation cannot observe
    /// (aggregates, subqueries, predicate evaluation of writes).
    #[serde(default)]
    pub reads_complete: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<RowWrite>,
    /// False when the statement wrote rows instrumentation cannot observe
    /// (rows deleted by REPLACE on engines without a pre-image read).
    #[serde(default)]
    pub writes_complete: bool,
    /// Rows an UPDATE matched but left as they were (the version it matched):
    /// no new row version (InnoDB writes none when no value changes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<RowVersion>,
    /// Rows affected as reported by the engine (writes) or returned (reads).
    #[serde(default)]
    pub affected: u64,
    /// A cursor step (or, once the executor gathered its steps, a cursor's
    /// open: `model::cursor::settle`) that reached the end of the SELECT's
    /// result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exhausted: bool,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
    /// For an autocommit statement: whether its transaction committed. A data
    /// error (duplicate key, ...) still commits a no-op; a concurrency error
    /// (deadlock, busy, cancelled, ...) aborts it.
    pub fn autocommit_committed(&self) -> bool {
        self.error
            .as_ref()
            .is_none_or(|e| !e.class.is_concurrency())
    }

    pub fn failed(err: StmtError) -> Outcome {
        Outcome {
            error: Some(err),
            ..Outcome::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum EventKind {
    /// The statement was sent to its session.
    Submitted,
    /// The engine confirmed the statement waits for a lock (blocker if known).
    Blocked {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocker: Option<u32>,
    },
    /// The statement finished (successfully or with an error; see its outcome).
    /// `resumed`: it had been blocked. Consecutive resumed completions were
    /// released together, so their relative order is not known exactly.
    Completed {
        ok: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        resumed: bool,
    },
    /// The transaction was rolled back because this statement's error aborts it
    /// (txfuzz issued ROLLBACK where the engine requires it).
    Aborted,
    /// The statement was not run because its transaction had ended.
    Skipped,
    /// The statement was still running or waiting at the fallback timeout and was cancelled.
    TimedOut,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub stmt: StmtRef,
    #[serde(flatten)]
    pub kind: EventKind,
    /// Microseconds since the execution started.
    #[serde(default)]
    pub at_us: u64,
}

/// How a transaction (or one autocommit statement) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnEnd {
    Committed,
    /// Its own ROLLBACK.
    RolledBack,
    /// Rolled back by an error (deadlock, conflict, ...).
    Aborted,
}

/// The contents of every table: rows as `[rid, wl, columns...]`, sorted.
pub type DbState = BTreeMap<String, Vec<Vec<Value>>>;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// `sqlite`, `mariadb`, `mysql`, `postgres`.
    pub name: String,
    pub version: String,
    /// The connection URL with any password redacted.
    pub url: String,
    /// Settings that change transaction semantics.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StmtOutcome {
    pub stmt: StmtRef,
    pub op: u32,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnOutcome {
    pub txn: u32,
    /// For an explicit transaction: how it ended. Autocommit sessions: `None`
    /// (each statement is its own transaction; see its outcome).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<TxnEnd>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub isolation: Isolation,
    pub events: Vec<Event>,
    /// Outcomes of the statements that ran, in completion order.
    pub outcomes: Vec<StmtOutcome>,
    pub txns: Vec<TxnOutcome>,
    pub final_state: DbState,
    /// Why the final state could not be read (the server went away).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_state_error: Option<String>,
}

impl History {
    /// The row versions of the final state, table by table: every row must
    /// start with its `rid, wl` (the instrumented layout); an error names the
    /// first that does not, so no row is left out silently.
    pub fn final_versions(&self) -> Result<Vec<RowVersion>, String> {
        let mut out = Vec::new();
        for (table, rows) in &self.final_state {
            for r in rows {
                let rid = match r.first() {
                    Some(Value::Int(i)) => *i,
                    Some(Value::Text(s)) => s
                        .parse()
                        .map_err(|_| format!("{table}: rid '{s}' is no row id"))?,
                    other => return Err(format!("{table}: a row without a rid ({other:?})")),
                };
                let wl = r
                    .get(1)
                    .map(WriteList::from_value)
                    .transpose()?
                    .flatten()
                    .ok_or_else(|| format!("{table}: row {rid} without a write list"))?;
                out.push(RowVersion {
                    table: table.clone(),
                    rid,
                    wl,
                });
            }
        }
        Ok(out)
    }

    pub fn outcome(&self, r: StmtRef) -> Option<&Outcome> {
        self.outcomes
            .iter()
            .find(|o| o.stmt == r)
            .map(|o| &o.outcome)
    }
    pub fn txn_end(&self, txn: u32) -> Option<TxnEnd> {
        self.txns.iter().find(|t| t.txn == txn).and_then(|t| t.end)
    }
    /// Whether statement `r` waited for a lock (the engine reported it).
    pub fn was_blocked(&self, r: StmtRef) -> bool {
        self.events
            .iter()
            .any(|e| e.stmt == r && matches!(e.kind, EventKind::Blocked { .. }))
    }
    pub fn blocked_events(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Blocked { .. }))
            .count()
    }
    /// Whether a statement lost its connection (the server crashed or went away).
    pub fn lost_connection(&self) -> bool {
        self.final_state_error.is_some()
            || self.outcomes.iter().any(|o| {
                o.outcome
                    .error
                    .as_ref()
                    .is_some_and(|e| e.class == ErrorClass::ConnectionLost)
            })
    }

    /// Whether a statement met an engine's internal error (a panic, a
    /// corrupt database, SQLSTATE XX000).
    pub fn internal_error(&self) -> bool {
        self.outcomes.iter().any(|o| {
            o.outcome
                .error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::Internal)
        })
    }

    pub fn aborts(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.kind == EventKind::Aborted)
            .count()
    }
}
