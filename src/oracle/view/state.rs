//! The state of the walk over the actual schedule that [`super::checker`]
//! drives and [`super::statement`] judges statements in.

use super::locks::LockTable;
use super::scratch::Scratch;
use super::undecided::Undecided;
use super::versions::{Pos, Sight, Version, VersionStore, Writer};
use super::visibility::Rule;
use crate::engine::profile::Conflict;
use crate::instrument::Prepared;
use crate::model::{History, StmtRef, TestCase};
use crate::oracle::Finding;
use std::collections::{HashMap, HashSet};

/// Why the walk stopped early.
#[derive(Debug)]
pub enum Stop {
    /// The model cannot compare the rest soundly.
    Undecided(Undecided),
    /// A violation was recorded; the actual state has left the predicted one.
    Violation,
}

pub fn undecided(reason: Undecided) -> Stop {
    Stop::Undecided(reason)
}

#[derive(Debug, Default)]
pub struct TxnState {
    pub autocommit: bool,
    /// Where the transaction's snapshot (read view) was taken.
    pub snapshot: Option<Pos>,
    /// InnoDB: a consistent read that read no row may not have touched the
    /// table (the optimizer answers an impossible WHERE without InnoDB), so it
    /// may or may not have created the read view; where it ran.
    pub tentative_snapshot: Option<Pos>,
    pub savepoints: Vec<(String, Pos)>,
}

impl Checker<'_> {
    /// Whether the writes of `txn` are row versions others must not write
    /// over (row locks, or row versions beside a single write lock).
    pub fn row_locks_of(&self, txn: u32) -> bool {
        let rule = self.rule_of(txn);
        rule.row_locks || (self.mixed_conflicts && matches!(rule.conflict, Conflict::SingleWriter))
    }
    /// The rows of `table` that `reader` sees through `sight` (the
    /// versions' rows, with the profile's record identity).
    pub fn view_of(&self, table: &str, reader: Writer, sight: Sight) -> Vec<&Version> {
        let records: Option<Vec<usize>> = self
            .own_writes_hide_same_key
            .then(|| self.case.schema.table(table))
            .flatten()
            .map(|t| {
                t.clustered_key()
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|k| t.columns.iter().position(|c| &c.name == k))
                    .map(|i| i + 2)
                    .collect()
            });
        self.store.view(table, reader, sight, records.as_deref())
    }
    /// The rules of transaction `txn` (every transaction of the case has one:
    /// the walk does not start otherwise).
    pub fn rule_of(&self, txn: u32) -> Rule {
        self.rules
            .get(&txn)
            .copied()
            .expect("the view walk starts only with a rule per transaction")
    }
}

pub struct Checker<'a> {
    pub case: &'a TestCase,
    pub history: &'a History,
    /// Each transaction's rules (its level and BEGIN: `EngineProfile::txn_rule`).
    pub rules: HashMap<u32, Rule>,
    /// Transactions with one database write lock run beside transactions
    /// with row-level conflicts and no lock waits (turso MVCC: DEFERRED or
    /// IMMEDIATE next to CONCURRENT). Then the single-writer transactions'
    /// writes are row versions the others conflict with, their writes
    /// conflict with the others' uncommitted rows, an autocommit write needs
    /// the write lock, and a row-conflict transaction cannot COMMIT while
    /// another holds the write lock (turso "Transactions": other connections
    /// "cannot write until the transaction completes").
    pub mixed_conflicts: bool,
    /// The scratch tables enforce foreign keys (profile `temporary_foreign_keys`).
    pub scratch_foreign_keys: bool,
    /// ROLLBACK TO SAVEPOINT releases row locks taken after the savepoint.
    pub savepoint_releases_locks: bool,
    /// A conflict-handling INSERT decides each row at its turn (profile
    /// `insert_conflicts_decided_per_row`).
    pub insert_conflicts_per_row: bool,
    /// The engine waits for locks; else a statement that would wait fails at
    /// once (profile `lock_waits`).
    pub lock_waits: bool,
    /// A transaction's own version of a primary key hides the other rows
    /// with that key from its reads (profile `own_writes_hide_same_key`).
    pub own_writes_hide_same_key: bool,
    pub scratch: &'a mut Scratch,
    pub prepared: HashMap<StmtRef, Prepared>,
    pub store: VersionStore,
    pub locks: LockTable,
    pub txns: HashMap<u32, TxnState>,
    pub submitted_at: HashMap<StmtRef, Pos>,
    /// The transaction holding the database write lock when a statement
    /// was submitted (a BEGIN IMMEDIATE may fail for it).
    pub holder_at_submit: HashMap<StmtRef, u32>,
    /// Statements the engine reported as waiting for a lock.
    pub blocked: HashSet<StmtRef>,
    /// Statements waiting for a lock now (they may have written part of their rows).
    pub waiting: HashSet<StmtRef>,
    /// Transactions whose lock wait ends in an error: their locks are ignored.
    pub doomed_txns: HashSet<u32>,
    /// Set while judging a statement whose view may legitimately hold more
    /// than the model enumerates (READ UNCOMMITTED with a waiting write's
    /// partial rows or a deadlock victim's rows that may already be gone): a
    /// difference then makes the case undecided for this reason, agreement
    /// decides it.
    pub undecided_instead: Option<Undecided>,
    /// Set while judging a current read whose subqueries alone read some
    /// tables, as plain reads in an earlier read view (InnoDB): those tables
    /// and the view they are materialised in.
    pub subquery_sight: Option<(std::collections::BTreeSet<String>, Sight)>,
    pub findings: Vec<Finding>,
    /// The index of the event being walked (the history's length once the
    /// walk ended without a stop): [`super::Conclusion::walked`].
    pub walked: usize,
}
