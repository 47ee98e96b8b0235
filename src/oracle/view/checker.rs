//! Walking the actual schedule: transaction control maintains the version
//! history and the lock table; data statements are predicted and compared by
//! [`super::statement`].

use super::commit_keys::{self, KeyConflict};
use super::locks::LockTable;
use super::scratch::Scratch;
use super::state::{undecided, Checker, Stop, TxnState};
use super::undecided::Undecided;
use super::versions::{Pos, VersionStore, Writer};
use super::visibility::Rule;
use super::Conclusion;
use crate::engine::profile::{Conflict, SnapshotPoint};
use crate::engine::{Engine, EngineError};
use crate::instrument::{prepare_case, Prepared};
use crate::model::compare::state_diff;
use crate::model::{EventKind, History, Stmt, StmtKind, StmtRef, TestCase};
use crate::oracle::Finding;
use serde_json::json;
use std::collections::{HashMap, HashSet};

/// Runs the oracle on one executed case.
pub fn run(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
) -> Result<Conclusion, EngineError> {
    let mut scratch = match Scratch::open(engine, &case.replay_schema(), case.isolation)? {
        Ok(s) => s,
        Err(_) => return Ok(undecided_case(Undecided::ScratchSetup)),
    };
    let Some(histories) = super::orders::candidate_histories(history) else {
        return Ok(undecided_case(Undecided::TooManyResumeOrders));
    };
    let profile = engine.profile();
    let mut rules = HashMap::new();
    for t in &case.txns {
        let Some(rule) = profile.rule_of(case, t.id) else {
            return Ok(undecided_case(Undecided::NoRuleForLevel));
        };
        rules.insert(t.id, rule);
    }
    // One database write lock beside row-level conflicts without lock
    // waits (turso MVCC with DEFERRED/IMMEDIATE transactions next to
    // CONCURRENT ones): `Checker::mixed_conflicts`.
    let single_writer = |r: &Rule| matches!(r.conflict, Conflict::SingleWriter);
    let row_conflicts = |r: &Rule| matches!(r.conflict, Conflict::Abort(_));
    let mixed_conflicts = !profile.lock_waits
        && rules.values().any(single_writer)
        && rules.values().any(row_conflicts);
    let setup = Setup {
        rules,
        mixed_conflicts,
        scratch_foreign_keys: profile.temporary_foreign_keys,
        savepoint_releases_locks: profile.savepoint_rollback_releases_locks,
        insert_conflicts_per_row: profile.insert_conflicts_decided_per_row.is_some(),
        lock_waits: profile.lock_waits,
        own_writes_hide_same_key: profile.own_writes_hide_same_key,
        prepared: prepare_case(engine.target(), case),
    };
    // A violation only if every possible order violates; decided if one
    // matches. Of the violations, the first that a rule of the engine's
    // behaviour explains (a claim: a row inserted behind the scan position,
    // say) is reported before one that nothing explains: in the order where
    // the rule explains it, the rest of the walk agreed. Among equally
    // explained ones, the order that agreed with more of the history before
    // it stopped is reported: the likelier schedule (case 1798 of seed 5:
    // in the recorded order a locking read resumed first and missed a row a
    // DELETE resumed by the same release removed; in the other order that
    // read agreed, and the walk stopped 20 events later at a known engine
    // bug).
    let mut first: Option<Conclusion> = None;
    let mut undecided_reason = None;
    for h in &histories {
        let c = walk_one(&setup, &mut scratch, case, h);
        if let Some(e) = scratch.server_failure() {
            return Err(e);
        }
        match (&c.undecided, c.violation) {
            // Decided: its findings, if any, claim documented behaviour.
            (None, false) => return Ok(c),
            (Some(r), false) => {
                undecided_reason.get_or_insert(*r);
            }
            _ => {}
        }
        let explained = |c: &Conclusion| c.findings.last().is_some_and(|f| f.claim.is_some());
        let rank = |c: &Conclusion| (explained(c), c.walked);
        if c.violation && first.as_ref().is_none_or(|f| rank(&c) > rank(f)) {
            first = Some(c);
        }
    }
    Ok(match (undecided_reason, first) {
        (None, Some(c)) => c,
        (Some(r), _) => undecided_case(r),
        (None, None) => undecided_case(Undecided::NoOrder),
    })
}

fn undecided_case(reason: Undecided) -> Conclusion {
    Conclusion {
        findings: Vec::new(),
        undecided: Some(reason),
        violation: false,
        walked: 0,
    }
}

/// What stays the same across the candidate orders.
struct Setup {
    rules: HashMap<u32, Rule>,
    mixed_conflicts: bool,
    scratch_foreign_keys: bool,
    savepoint_releases_locks: bool,
    insert_conflicts_per_row: bool,
    lock_waits: bool,
    own_writes_hide_same_key: bool,
    prepared: HashMap<StmtRef, Prepared>,
}

fn walk_one(
    setup: &Setup,
    scratch: &mut Scratch,
    case: &TestCase,
    history: &History,
) -> Conclusion {
    let mut ck = Checker {
        case,
        history,
        rules: setup.rules.clone(),
        mixed_conflicts: setup.mixed_conflicts,
        scratch_foreign_keys: setup.scratch_foreign_keys,
        savepoint_releases_locks: setup.savepoint_releases_locks,
        insert_conflicts_per_row: setup.insert_conflicts_per_row,
        lock_waits: setup.lock_waits,
        own_writes_hide_same_key: setup.own_writes_hide_same_key,
        scratch,
        prepared: setup.prepared.clone(),
        store: VersionStore::initial(case),
        locks: LockTable::default(),
        txns: case
            .txns
            .iter()
            .map(|t| {
                (
                    t.id,
                    TxnState {
                        autocommit: t.autocommit,
                        ..TxnState::default()
                    },
                )
            })
            .collect(),
        submitted_at: HashMap::new(),
        holder_at_submit: HashMap::new(),
        blocked: history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Blocked { .. }))
            .map(|e| e.stmt)
            .collect(),
        doomed_txns: HashSet::new(),
        undecided_instead: None,
        subquery_sight: None,
        waiting: HashSet::new(),
        findings: Vec::new(),
        walked: 0,
    };
    let stop = ck.walk().err();
    if stop.is_none() {
        ck.walked = history.events.len();
    }
    Conclusion {
        findings: ck.findings,
        undecided: match stop {
            Some(Stop::Undecided(r)) => Some(r),
            _ => None,
        },
        violation: matches!(stop, Some(Stop::Violation)),
        walked: ck.walked,
    }
}

/// Statements that waited and then failed with a concurrency error (deadlock
/// victims, timeouts, cancellations).
fn doomed_waits(history: &History) -> HashSet<StmtRef> {
    history
        .outcomes
        .iter()
        .filter(|o| {
            o.outcome
                .error
                .as_ref()
                .is_some_and(|e| e.class.is_concurrency())
        })
        .map(|o| o.stmt)
        .collect()
}

impl Checker<'_> {
    fn walk(&mut self) -> Result<(), Stop> {
        self.normalise_initial_rows()?;
        let doomed = doomed_waits(self.history);
        for (i, e) in self.history.events.iter().enumerate() {
            self.walked = i;
            // Position 0 is the initial data, committed before every event.
            let pos = i + 1;
            match e.kind {
                EventKind::Submitted => {
                    self.submitted_at.insert(e.stmt, pos);
                    if let Some(h) = self.locks.database_holder(e.stmt.txn) {
                        self.holder_at_submit.insert(e.stmt, h);
                    }
                    if self.blocked.contains(&e.stmt) {
                        super::statement::on_blocked_submit(self, e.stmt, pos)?;
                    }
                }
                EventKind::Blocked { .. } if doomed.contains(&e.stmt) => {
                    // Its engine may have rolled the transaction back at any
                    // point from here on (a deadlock victim's error can be
                    // reported late): its locks no longer count, and at READ
                    // UNCOMMITTED its writes may or may not be visible.
                    self.locks.release(e.stmt.txn);
                    self.doomed_txns.insert(e.stmt.txn);
                    self.waiting.insert(e.stmt);
                }
                EventKind::Blocked { .. } => {
                    self.waiting.insert(e.stmt);
                }
                EventKind::Skipped => {}
                EventKind::Completed { .. } => {
                    self.waiting.remove(&e.stmt);
                    self.on_complete(e.stmt, pos)?;
                }
                EventKind::Aborted => self.end_txn(e.stmt.txn, None),
                EventKind::TimedOut => return Err(undecided(Undecided::TimedOut)),
            }
        }
        self.compare_final_state()
    }

    /// Replaces the initial rows (case literals) by what the engine stores for
    /// them, so they compare with rows the engine returns.
    fn normalise_initial_rows(&mut self) -> Result<(), Stop> {
        let state = self.store.committed_state();
        let mut normal = std::collections::BTreeMap::new();
        for (table, rows) in &state {
            self.scratch
                .fill(table, rows)
                .map_err(|_| undecided(Undecided::ScratchInitialRows))?;
            let read = self
                .scratch
                .read(table)
                .map_err(|_| undecided(Undecided::ScratchInitialRows))?;
            normal.insert(table.clone(), read);
        }
        self.store.replace_initial(&normal);
        Ok(())
    }

    fn on_complete(&mut self, r: StmtRef, pos: Pos) -> Result<(), Stop> {
        let Some(cs) = self.case.stmt(r) else {
            return Err(undecided(Undecided::UnknownStatement));
        };
        let ok = self
            .history
            .outcome(r)
            .is_some_and(crate::model::Outcome::ok);
        let txn = r.txn;
        let writer = Writer::Txn(txn);
        // `RELEASE` of a transaction's outermost savepoint is its COMMIT.
        let stmt = match cs.stmt.kind() {
            StmtKind::Commit => &Stmt::Commit,
            _ => &cs.stmt,
        };
        match stmt {
            Stmt::Begin(_) if self.rule_of(txn).write_lock_at_begin => {
                self.begin_taking_write_lock(r, pos, ok)
            }
            Stmt::Begin(_) if ok => {
                // A snapshot taken at BEGIN (turso's BEGIN CONCURRENT,
                // InnoDB's WITH CONSISTENT SNAPSHOT at REPEATABLE READ).
                if self.rule_of(txn).snapshot == SnapshotPoint::Begin {
                    if let Some(t) = self.txns.get_mut(&txn) {
                        t.snapshot = Some(pos);
                    }
                }
                Ok(())
            }
            Stmt::Savepoint(name) if ok => {
                if let Some(t) = self.txns.get_mut(&txn) {
                    t.savepoints.push((name.clone(), pos));
                }
                Ok(())
            }
            Stmt::RollbackTo(name) if ok => {
                let Some(t) = self.txns.get_mut(&txn) else {
                    return Err(undecided(Undecided::UnknownTransaction));
                };
                let Some(i) = t.savepoints.iter().rposition(|(n, _)| n == name) else {
                    return Err(undecided(Undecided::UnknownSavepoint));
                };
                let from = t.savepoints[i].1;
                t.savepoints.truncate(i + 1);
                self.store.rollback(writer, from);
                if self.savepoint_releases_locks {
                    self.locks.release_from(txn, from, false);
                } else {
                    // The undo removes the entries inserted since, with their
                    // (implicit) locks; the other locks stay.
                    self.locks.release_inserted_from(txn, from);
                }
                Ok(())
            }
            Stmt::Release(name) if ok => {
                if let Some(t) = self.txns.get_mut(&txn) {
                    if let Some(i) = t.savepoints.iter().rposition(|(n, _)| n == name) {
                        t.savepoints.truncate(i);
                    }
                }
                Ok(())
            }
            Stmt::Commit if self.rule_of(txn).keys_checked_at_commit => {
                self.commit_checking_keys(r, pos)
            }
            Stmt::Commit if ok => {
                self.end_txn(txn, Some(pos));
                Ok(())
            }
            Stmt::Rollback if ok => {
                self.end_txn(txn, None);
                Ok(())
            }
            // A COMMIT the engine may refuse at any time (SSI) rolls back.
            Stmt::Commit
                if self.rule_of(txn).aborts_anywhere.is_some()
                    && self.error_class(r) == self.rule_of(txn).aborts_anywhere =>
            {
                self.end_txn(txn, None);
                Ok(())
            }
            Stmt::Commit => Err(undecided(Undecided::CommitFailed)),
            // The scratch tables have no foreign key a case with this
            // statement may defer (`TestCase::replay_schema`).
            Stmt::SetConstraints(_) if ok => Ok(()),
            // A cursor's steps are judged with its open, which the executor
            // gave their rows (`model::cursor::settle`).
            Stmt::Fetch(_) | Stmt::Close(_) => Ok(()),
            Stmt::Begin(_)
            | Stmt::Savepoint(_)
            | Stmt::RollbackTo(_)
            | Stmt::Release(_)
            | Stmt::Rollback
            | Stmt::SetConstraints(_) => Err(undecided(Undecided::ControlStatementFailed)),
            Stmt::Select(_) | Stmt::Insert(_) | Stmt::Update(_) | Stmt::Delete(_) => {
                super::statement::on_complete(self, r, pos)
            }
        }
    }

    /// A COMMIT where the engine checks unique keys (turso MVCC): it must
    /// fail when a key the transaction wrote was committed by another since
    /// its snapshot, and may fail only with the conflict error when such a
    /// key's history is ambiguous.
    fn commit_checking_keys(&mut self, r: StmtRef, pos: Pos) -> Result<(), Stop> {
        let txn = r.txn;
        let ok = self
            .history
            .outcome(r)
            .is_some_and(crate::model::Outcome::ok);
        let conflict_error = match self.rule_of(txn).conflict {
            Conflict::Abort(class) => Some(class),
            _ => None,
        };
        // Beside single-writer transactions: no COMMIT of changes while
        // another holds the write lock.
        if let Some(h) = self.locks.database_holder(txn).filter(|_| {
            self.mixed_conflicts && self.store.has_uncommitted_changes(Writer::Txn(txn))
        }) {
            if !ok && self.error_class(r).is_some_and(|c| c.is_concurrency()) {
                self.end_txn(txn, None);
                return Ok(());
            }
            if ok {
                self.findings.push(
                    Finding::new(
                        crate::oracle::OracleKind::View,
                        "missed-commit-conflict",
                        format!(
                            "T{txn}'s COMMIT of its changes must fail (T{h} holds the write lock) but succeeded"
                        ),
                        json!({
                            "stmt": format!("T{}#{}", r.txn, r.index),
                            "isolation": self.history.isolation,
                            "holder": h,
                        }),
                    )
                    .about([r]),
                );
                return Err(Stop::Violation);
            }
        }
        match (ok, commit_keys::conflict(self, txn)) {
            (true, KeyConflict::Must(evidence)) => {
                self.findings.push(
                    Finding::new(
                        crate::oracle::OracleKind::View,
                        "missed-commit-conflict",
                        format!(
                            "T{txn}'s COMMIT must fail (a unique key it wrote was committed by \
                             another transaction after its snapshot) but succeeded"
                        ),
                        json!({
                            "stmt": format!("T{}#{}", r.txn, r.index),
                            "isolation": self.history.isolation,
                            "details": evidence,
                        }),
                    )
                    .about([r]),
                );
                Err(Stop::Violation)
            }
            (true, _) => {
                self.end_txn(txn, Some(pos));
                Ok(())
            }
            (false, KeyConflict::Must(_) | KeyConflict::May)
                if conflict_error.is_some() && self.error_class(r) == conflict_error =>
            {
                self.end_txn(txn, None);
                Ok(())
            }
            (false, _) => Err(undecided(Undecided::CommitFailed)),
        }
    }

    /// A BEGIN that takes the database write lock (SQLite and turso
    /// IMMEDIATE / EXCLUSIVE): it must not start while another transaction
    /// holds the lock; started, it holds the lock and its snapshot from here.
    /// It may fail with a concurrency error only while another holds it.
    fn begin_taking_write_lock(&mut self, r: StmtRef, pos: Pos, ok: bool) -> Result<(), Stop> {
        let txn = r.txn;
        let holder = self.locks.database_holder(txn);
        let held_at_submit = self.holder_at_submit.get(&r).copied();
        match (ok, holder) {
            (true, Some(h)) => {
                let mode = self
                    .case
                    .txn(txn)
                    .map(|t| t.begin().mode.to_string())
                    .unwrap_or_default();
                self.findings.push(
                    Finding::new(
                        crate::oracle::OracleKind::View,
                        "missed-block",
                        format!(
                            "T{txn}'s BEGIN ({mode}) takes the write lock, which T{h} holds, \
                             but started without waiting"
                        ),
                        json!({
                            "stmt": format!("T{}#{}", r.txn, r.index),
                            "isolation": self.history.isolation,
                            "holder": h,
                        }),
                    )
                    .about([r]),
                );
                Err(Stop::Violation)
            }
            (true, None) => {
                self.locks.lock_database(txn, pos);
                if let Some(t) = self.txns.get_mut(&txn) {
                    t.snapshot = Some(pos);
                }
                Ok(())
            }
            (false, _)
                if (holder.is_some() || held_at_submit.is_some())
                    && self.error_class(r).is_some_and(|c| c.is_concurrency()) =>
            {
                self.end_txn(txn, None);
                Ok(())
            }
            (false, _) => Err(undecided(Undecided::ControlStatementFailed)),
        }
    }

    fn error_class(&self, r: StmtRef) -> Option<crate::model::ErrorClass> {
        self.history.outcome(r)?.error.as_ref().map(|e| e.class)
    }

    /// Commits (`Some(position)`) or rolls back `txn`, releasing its locks.
    fn end_txn(&mut self, txn: u32, commit_at: Option<Pos>) {
        match commit_at {
            Some(at) => self.store.commit(Writer::Txn(txn), at),
            None => self.store.rollback(Writer::Txn(txn), 0),
        }
        self.locks.release(txn);
        self.doomed_txns.remove(&txn);
        if let Some(t) = self.txns.get_mut(&txn) {
            t.snapshot = None;
            t.tentative_snapshot = None;
            t.savepoints.clear();
        }
    }

    fn compare_final_state(&mut self) -> Result<(), Stop> {
        if self.history.final_state_error.is_some() {
            return Err(undecided(Undecided::NoFinalState));
        }
        let expected = self.store.committed_state();
        if let Some(diff) = state_diff(&self.history.final_state, &expected) {
            self.findings.push(Finding::new(
                crate::oracle::OracleKind::View,
                "final-state",
                "the final state differs from the one the version history predicts".into(),
                json!({ "diff": diff, "expected": expected }),
            ));
            // A violation of this order: another order of statements
            // resumed together may still predict the state.
            return Err(Stop::Violation);
        }
        Ok(())
    }
}
