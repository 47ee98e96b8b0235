//! Fault injection: an engine wrapper that deliberately misbehaves, to prove the
//! oracles catch what they claim. Each fault fires at most once per execution and
//! only while another explicit transaction is open, so serial replays (which the
//! oracles compare against) run correctly.
//!
//! - `lose-write`: an UPDATE or DELETE inside a transaction reports success but is
//!   silently not applied: it runs inside a savepoint that is rolled back, so
//!   it still takes the locks it would (MariaDB, SQLite; PostgreSQL releases
//!   a rolled-back savepoint's row locks) and a schedule exported from the
//!   finding waits where the faulty run waited.
//! - `stale-update`: an UPDATE computes its new values from the row versions as
//!   they were when its transaction began (a lost update), not from the latest.
//! - `stale-read`: a SELECT with a WHERE clause returns the column values the
//!   rows had when its transaction began, while reporting (`rid`, `wl`) the
//!   versions it should have read — a statement that reads a stale version
//!   inside a transaction but not outside.
//! - `dirty-read`, `missed-own-write`: see [`reads`].
//! - `extra-lock`: perturbs the *instrumentation*, not the engine: before each
//!   instrumented UPDATE or DELETE a locking read of the whole table (MariaDB,
//!   PostgreSQL), before each instrumented SELECT in a transaction a write that
//!   changes nothing (SQLite: it takes the write lock). What `sdg`'s locking
//!   version-set reads once did; the shadow run must catch it.
//!
//! - `orphan`, `duplicate-key`, `null-value`, `check-violation`: a declared
//!   constraint broken in the final state (see [`broken`]).
//!
//! Faults act on instrumented runs only: after a `Plain` load (the shadow run)
//! every statement runs as it is, so a shadow run of a faulty engine shows the
//! fault as a difference.

mod broken;
mod reads;

use super::{Canceller, Engine, EngineError, EngineProfile, QueryResult, Session, WaitSignal};
use crate::engine::run_prepared;
use crate::instrument::Prepared;
use crate::model::{
    DbState, EngineInfo, Isolation, Outcome, RowVersion, Schema, Stmt, StmtError, StmtKind,
    TestCase, Value,
};
use crate::sql::{self, Dialect, Layout};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    LoseWrite,
    StaleUpdate,
    StaleRead,
    DirtyRead,
    MissedOwnWrite,
    ExtraLock,
    Orphan,
    DuplicateKey,
    NullValue,
    CheckViolation,
    CursorRepeat,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::LoseWrite => "lose-write",
            Fault::StaleUpdate => "stale-update",
            Fault::StaleRead => "stale-read",
            Fault::DirtyRead => "dirty-read",
            Fault::MissedOwnWrite => "missed-own-write",
            Fault::ExtraLock => "extra-lock",
            Fault::Orphan => "orphan",
            Fault::DuplicateKey => "duplicate-key",
            Fault::NullValue => "null-value",
            Fault::CheckViolation => "check-violation",
            Fault::CursorRepeat => "cursor-repeat",
        }
    }
}

impl FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "lose-write" => Ok(Fault::LoseWrite),
            "stale-update" => Ok(Fault::StaleUpdate),
            "stale-read" => Ok(Fault::StaleRead),
            "dirty-read" => Ok(Fault::DirtyRead),
            "missed-own-write" => Ok(Fault::MissedOwnWrite),
            "extra-lock" => Ok(Fault::ExtraLock),
            "orphan" => Ok(Fault::Orphan),
            "duplicate-key" => Ok(Fault::DuplicateKey),
            "null-value" => Ok(Fault::NullValue),
            "check-violation" => Ok(Fault::CheckViolation),
            "cursor-repeat" => Ok(Fault::CursorRepeat),
            _ => Err(format!(
                "unknown fault '{s}' (lose-write, stale-update, stale-read, dirty-read, missed-own-write, extra-lock, orphan, duplicate-key, null-value, check-violation, cursor-repeat)"
            )),
        }
    }
}

#[derive(Default)]
struct Shared {
    /// Sessions inside an explicit transaction.
    open: usize,
    /// Commits (and autocommit writes) so far in this execution.
    commits: u64,
    fired: bool,
    schema: Schema,
    /// The level of the loaded case (`orphan` opens a session at it).
    isolation: Option<Isolation>,
    uncommitted: reads::Uncommitted,
    /// The layout of the last load, `Plain` for a run the fault sits out
    /// ([`FaultyEngine::first_runs`]): faults act on `Instrumented` runs only.
    layout: Layout,
}

pub struct FaultyEngine {
    inner: Box<dyn Engine>,
    fault: Fault,
    info: EngineInfo,
    shared: Arc<Mutex<Shared>>,
    /// Instrumented runs the fault still acts on (`None`: every one).
    runs_left: Option<usize>,
}

impl FaultyEngine {
    pub fn new(inner: Box<dyn Engine>, fault: Fault) -> FaultyEngine {
        let mut info = inner.info().clone();
        info.settings.insert("fault".into(), fault.name().into());
        FaultyEngine {
            inner,
            fault,
            info,
            shared: Arc::default(),
            runs_left: None,
        }
    }

    /// The fault acts on the first `n` instrumented runs only (a one-off
    /// misbehaviour, which a second run does not show).
    pub fn first_runs(mut self, n: usize) -> FaultyEngine {
        self.runs_left = Some(n);
        self
    }

    fn rearm(&self) {
        if let Ok(mut s) = self.shared.lock() {
            s.fired = false;
            s.open = 0;
            s.commits = 0;
            s.uncommitted.clear();
        }
    }
}

impl Engine for FaultyEngine {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }
    fn target(&self) -> crate::instrument::Target {
        self.inner.target()
    }
    fn scratch_database(
        &mut self,
        schema: &crate::model::Schema,
    ) -> Result<Option<(String, bool)>, EngineError> {
        self.inner.scratch_database(schema)
    }
    fn profile(&self) -> &EngineProfile {
        self.inner.profile()
    }
    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError> {
        self.inner.load_as(case, layout)?;
        let mut faulted = layout;
        if let (true, Some(left)) = (layout.instrumented(), self.runs_left.as_mut()) {
            if *left == 0 {
                faulted = Layout::Plain;
            }
            *left = left.saturating_sub(1);
        }
        if let Ok(mut s) = self.shared.lock() {
            s.schema = case.schema.clone();
            s.isolation = Some(case.isolation);
            s.layout = faulted;
        }
        self.rearm();
        Ok(())
    }
    fn reset(&mut self) -> Result<(), EngineError> {
        self.inner.reset()?;
        self.rearm();
        Ok(())
    }
    fn open_bounded_session(
        &mut self,
        isolation: Isolation,
    ) -> Result<Box<dyn Session>, EngineError> {
        self.inner.open_bounded_session(isolation)
    }
    fn open_session(
        &mut self,
        isolation: Isolation,
        signal: Arc<WaitSignal>,
    ) -> Result<Box<dyn Session>, EngineError> {
        Ok(Box::new(FaultySession {
            inner: self.inner.open_session(isolation, signal)?,
            fault: self.fault,
            dialect: self.inner.dialect(),
            shared: self.shared.clone(),
            in_txn: false,
            began_at: 0,
            reads: reads::SessionReads::default(),
            cursor_rows: Default::default(),
        }))
    }
    fn keep_plans(
        &mut self,
        case: &TestCase,
        prepared: &mut std::collections::HashMap<crate::model::StmtRef, Prepared>,
    ) -> Result<(), EngineError> {
        self.inner.keep_plans(case, prepared)
    }
    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError> {
        let (armed, isolation) = match self.shared.lock() {
            Ok(s) => (
                s.layout.instrumented() && !s.fired,
                s.isolation.unwrap_or(Isolation::Serializable),
            ),
            Err(_) => (false, Isolation::Serializable),
        };
        let mut fired = false;
        if armed && self.fault == Fault::Orphan {
            fired = broken::orphan(self.inner.as_mut(), schema, isolation)?;
        }
        let mut state = self.inner.final_state(schema)?;
        if armed
            && matches!(
                self.fault,
                Fault::DuplicateKey | Fault::NullValue | Fault::CheckViolation
            )
        {
            fired = broken::corrupt(self.fault, schema, &mut state);
        }
        if fired {
            if let Ok(mut s) = self.shared.lock() {
                s.fired = true;
            }
        }
        Ok(state)
    }
    fn recover(
        &mut self,
        wait: std::time::Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Result<(), EngineError> {
        self.inner.recover(wait, give_up)
    }
    fn server_log_tail(&self) -> Result<String, String> {
        self.inner.server_log_tail()
    }
    fn set_deadline(&mut self, d: std::time::Duration) {
        self.inner.set_deadline(d)
    }
}

struct FaultySession {
    inner: Box<dyn Session>,
    fault: Fault,
    dialect: Dialect,
    shared: Arc<Mutex<Shared>>,
    in_txn: bool,
    /// `Shared::commits` when this session's transaction began.
    began_at: u64,
    reads: reads::SessionReads,
    /// `cursor-repeat`: the last row (and row version) each open cursor
    /// returned.
    cursor_rows: std::collections::HashMap<String, (Vec<Value>, Option<RowVersion>)>,
}

impl FaultySession {
    fn set_in_txn(&mut self, open: bool) {
        if open == self.in_txn {
            return;
        }
        self.in_txn = open;
        if let Ok(mut s) = self.shared.lock() {
            if open {
                s.open += 1;
                self.began_at = s.commits;
            } else {
                s.open = s.open.saturating_sub(1);
                self.reads.end_txn(&mut s.uncommitted);
            }
        }
    }

    /// Claims the fault if this session's transaction runs concurrently with
    /// another: for `lose-write`, another is open now; for `stale-update`,
    /// another committed since this one began (so its BEGIN snapshot is stale).
    /// `cursor-repeat`: the first FETCH after a step that returned rows
    /// returns that step's last row again before the engine's rows (a
    /// cursor that lost its position and re-reads the row it stood on).
    fn repeat_cursor_row(&mut self, p: &Prepared, out: &mut Outcome) {
        use crate::instrument::CursorStep;
        let name = match &p.cursor {
            Some(CursorStep::Open { name, .. } | CursorStep::Fetch { name, .. }) => name,
            _ => return,
        };
        let previous = self.cursor_rows.get(name).cloned();
        if let (Some((row, read)), Some(CursorStep::Fetch { .. }), true) =
            (previous, &p.cursor, out.ok())
        {
            let first = self
                .shared
                .lock()
                .is_ok_and(|mut s| !std::mem::replace(&mut s.fired, true));
            if first {
                out.rows.insert(0, row);
                if let Some(v) = read {
                    out.reads.insert(0, v);
                }
                out.affected += 1;
            }
        }
        if let Some(last) = out.rows.last() {
            let read = out.reads.last().cloned();
            self.cursor_rows.insert(name.clone(), (last.clone(), read));
        }
    }

    /// `lose-write`: runs the write inside a savepoint and rolls back to it,
    /// so the write takes its locks (InnoDB keeps the row locks of a
    /// statement rolled back to a savepoint; SQLite keeps its write lock)
    /// and its effect is lost; the outcome says it succeeded and wrote
    /// nothing. A write that fails or writes no row is the engine's own
    /// outcome, and the fault has not fired (a lost write of no row is no
    /// fault). Where savepoints fail, the write is not sent.
    fn lose_write(&mut self, p: &Prepared) -> Outcome {
        let lost = Outcome {
            reads_complete: false,
            writes_complete: true,
            ..Outcome::default()
        };
        if self.inner.query("SAVEPOINT txfuzz_lost_write").is_err() {
            return if self.claim() {
                lost
            } else {
                run_prepared(self.inner.as_mut(), p)
            };
        }
        let out = run_prepared(self.inner.as_mut(), p);
        let fired = out.ok() && !out.writes.is_empty() && self.claim();
        if fired {
            let _ = self.inner.query("ROLLBACK TO SAVEPOINT txfuzz_lost_write");
        }
        // PostgreSQL: after an error only a rollback to the savepoint ends
        // the failed state; the statement's own error stays its outcome.
        if !out.ok() && self.dialect == Dialect::Postgres {
            let _ = self.inner.query("ROLLBACK TO SAVEPOINT txfuzz_lost_write");
        }
        let _ = self.inner.query("RELEASE SAVEPOINT txfuzz_lost_write");
        if fired {
            lost
        } else {
            out
        }
    }

    /// Whether the fault could fire now (without firing it).
    fn claimable(&self) -> bool {
        self.in_txn
            && self
                .shared
                .lock()
                .is_ok_and(|s| !s.fired && self.concurrent(&s))
    }

    fn concurrent(&self, s: &Shared) -> bool {
        match self.fault {
            Fault::LoseWrite => s.open >= 2,
            Fault::StaleUpdate | Fault::StaleRead => s.commits > self.began_at,
            Fault::DirtyRead | Fault::MissedOwnWrite => s.open >= 2,
            Fault::ExtraLock
            | Fault::Orphan
            | Fault::DuplicateKey
            | Fault::NullValue
            | Fault::CheckViolation
            | Fault::CursorRepeat => false,
        }
    }

    fn claim(&self) -> bool {
        let Ok(mut s) = self.shared.lock() else {
            return false;
        };
        if self.in_txn && self.concurrent(&s) && !s.fired {
            s.fired = true;
            return true;
        }
        false
    }

    /// Copies every table into a TEMP table (outside the transaction).
    fn snapshot_tables(&mut self) {
        let tables: Vec<String> = match self.shared.lock() {
            Ok(s) => s.schema.tables.iter().map(|t| t.name.clone()).collect(),
            Err(_) => return,
        };
        for t in tables {
            let (drop, create) = match self.dialect {
                Dialect::Sqlite => ("DROP TABLE IF EXISTS", "CREATE TEMP TABLE"),
                Dialect::Mysql => ("DROP TEMPORARY TABLE IF EXISTS", "CREATE TEMPORARY TABLE"),
                Dialect::Postgres => ("DROP TABLE IF EXISTS", "CREATE TEMPORARY TABLE"),
            };
            let stale = stale_table(self.dialect, &t);
            let _ = self.inner.query(&format!("{drop} {stale}"));
            let _ = self.inner.query(&format!(
                "{create} stale_{t} AS SELECT * FROM {}",
                base_table(self.dialect, &t)
            ));
        }
    }

    /// Re-applies the UPDATE's assignments to the rows it wrote, computed from the
    /// snapshot taken at BEGIN.
    fn apply_stale(&mut self, p: &Prepared, out: &Outcome) {
        let Stmt::Update(u) = &p.ir else { return };
        let rids: Vec<String> = out.writes.iter().map(|w| w.rid.to_string()).collect();
        if rids.is_empty() {
            return;
        }
        let sets: Vec<String> = u
            .assignments
            .iter()
            .map(|a| {
                format!(
                    "{c} = (SELECT {e} FROM {s} WHERE stale_{t}.rid = {t}.rid)",
                    c = a.column,
                    e = sql::render_expr(self.dialect, &a.value),
                    s = stale_table(self.dialect, &u.table),
                    t = u.table
                )
            })
            .collect();
        let _ = self.inner.query(&format!(
            "UPDATE {t} SET {} WHERE rid IN ({}) AND rid IN (SELECT rid FROM {s})",
            sets.join(", "),
            rids.join(", "),
            s = stale_table(self.dialect, &u.table),
            t = u.table
        ));
    }
}

impl FaultySession {
    /// Replaces a filtered SELECT's result rows by the same query over the
    /// copies taken at BEGIN, when they differ (the fault fires once).
    fn apply_stale_read(&mut self, p: &Prepared, out: &mut Outcome) {
        let Stmt::Select(q) = &p.ir else { return };
        if q.where_.is_none() || !self.in_txn || p.cursor.is_some() {
            return;
        }
        let mut stale = q.clone();
        for f in &mut stale.from {
            f.table = stale_table(self.dialect, &f.table);
        }
        let Ok(res) = self.inner.query(&sql::render_select(self.dialect, &stale)) else {
            return;
        };
        if crate::model::compare::same_bag(&res.rows, &out.rows) || !self.claim() {
            return;
        }
        out.rows = res.rows;
    }

    /// `dirty-read` / `missed-own-write` inside a transaction (see [`reads`]).
    fn run_with_read_fault(&mut self, p: &Prepared) -> Outcome {
        let dirty = self.fault == Fault::DirtyRead;
        let schema = match self.shared.lock() {
            Ok(s) => s.schema.clone(),
            Err(_) => return run_prepared(self.inner.as_mut(), p),
        };
        if p.kind == StmtKind::Select && self.dialect == Dialect::Sqlite {
            let images = match self.shared.lock() {
                Ok(s) => self.reads.faulty_images(dirty, &s.uncommitted),
                Err(_) => Vec::new(),
            };
            if !images.is_empty() && self.claim() {
                return reads::run_shadowed(self.inner.as_mut(), self.dialect, p, &images);
            }
        }
        self.reads
            .before_write(self.inner.as_mut(), &schema, self.dialect, p);
        let out = run_prepared(self.inner.as_mut(), p);
        let mut unc = reads::Uncommitted::default();
        self.reads.after(
            self.inner.as_mut(),
            &schema,
            self.dialect,
            &out,
            dirty.then_some(&mut unc),
        );
        if let Ok(mut s) = self.shared.lock() {
            s.uncommitted.merge(unc);
        }
        match p.kind {
            StmtKind::Commit | StmtKind::Rollback => self.set_in_txn(false),
            _ => {}
        }
        out
    }
}

impl Session for FaultySession {
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        let r = self.inner.query(sql);
        if sql.trim().eq_ignore_ascii_case("ROLLBACK") {
            self.set_in_txn(false);
        }
        r
    }

    fn run(&mut self, p: &Prepared) -> Outcome {
        let plain = self.shared.lock().is_ok_and(|s| s.layout == Layout::Plain);
        if plain {
            return run_prepared(self.inner.as_mut(), p);
        }
        if self.fault == Fault::ExtraLock {
            if let Some(extra) = extra_lock(self.dialect, p, self.in_txn) {
                if let Err(e) = self.inner.query(&extra) {
                    return Outcome::failed(e);
                }
            }
        }
        // A cursor's steps go to the engine: the read faults rewrite whole
        // SELECTs.
        if matches!(self.fault, Fault::DirtyRead | Fault::MissedOwnWrite)
            && self.in_txn
            && p.cursor.is_none()
        {
            return self.run_with_read_fault(p);
        }
        if p.kind == StmtKind::Begin && matches!(self.fault, Fault::StaleUpdate | Fault::StaleRead)
        {
            self.snapshot_tables();
        }
        let lose = self.fault == Fault::LoseWrite
            && matches!(p.kind, StmtKind::Update | StmtKind::Delete)
            && self.claimable();
        let out = if lose {
            self.lose_write(p)
        } else {
            let mut out = run_prepared(self.inner.as_mut(), p);
            if self.fault == Fault::StaleRead && out.ok() {
                self.apply_stale_read(p, &mut out);
            }
            if self.fault == Fault::StaleUpdate
                && p.kind == StmtKind::Update
                && out.ok()
                && self.claim()
            {
                self.apply_stale(p, &out);
            }
            out
        };
        let mut out = out;
        if self.fault == Fault::CursorRepeat {
            self.repeat_cursor_row(p, &mut out);
        }
        let committed =
            out.ok() && (p.kind == StmtKind::Commit || (!self.in_txn && p.kind.is_write()));
        if committed {
            if let Ok(mut s) = self.shared.lock() {
                s.commits += 1;
            }
        }
        match p.kind {
            StmtKind::Begin if out.ok() => self.set_in_txn(true),
            StmtKind::Commit | StmtKind::Rollback => self.set_in_txn(false),
            _ => {}
        }
        out
    }

    fn canceller(&self) -> Arc<dyn Canceller> {
        self.inner.canceller()
    }
}

/// `extra-lock`: the statement run before `p` that changes its locking.
fn extra_lock(dialect: Dialect, p: &Prepared, in_txn: bool) -> Option<String> {
    match (dialect, &p.ir) {
        (Dialect::Mysql | Dialect::Postgres, Stmt::Update(u)) => {
            Some(format!("SELECT rid FROM {} FOR UPDATE", u.table))
        }
        (Dialect::Mysql | Dialect::Postgres, Stmt::Delete(d)) => {
            Some(format!("SELECT rid FROM {} FOR UPDATE", d.table))
        }
        (Dialect::Sqlite, Stmt::Select(s)) if in_txn => s
            .from
            .first()
            .map(|f| format!("UPDATE {t} SET wl = wl WHERE 1 = 0", t = f.table)),
        _ => None,
    }
}

/// The copy `stale_<table>` of `table` taken at BEGIN (a temporary table of
/// the session), as the dialect names it.
fn stale_table(dialect: Dialect, table: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("temp.stale_{table}"),
        Dialect::Mysql => format!("stale_{table}"),
        Dialect::Postgres => format!("pg_temp.stale_{table}"),
    }
}

/// A base table of the case, as the dialect names it next to temporary ones.
fn base_table(dialect: Dialect, table: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("main.{table}"),
        Dialect::Mysql | Dialect::Postgres => table.to_string(),
    }
}
