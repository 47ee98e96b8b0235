//! The driver loop of the execution protocol.

use super::deadline::Deadline;
use super::worker::{Cmd, Reply, Worker};
use super::ExecOptions;
use crate::engine::profile::rules::Access;
use crate::engine::{Cancel, Engine, EngineError, EngineProfile, ErrorScope, WaitSignal};
use crate::instrument::Prepared;
use crate::model::{
    ErrorClass, Event, EventKind, History, Outcome, StmtError, StmtKind, StmtOutcome, StmtRef,
    TestCase, TxnEnd, TxnOutcome,
};
use crate::sql;
use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(1);
/// How long [`Driver::grace`] takes replies in flight.
const GRACE: Duration = Duration::from_millis(2);

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Idle,
    Running {
        stmt: StmtRef,
        ticks0: u64,
        since: Instant,
    },
    Blocked {
        stmt: StmtRef,
        since: Instant,
    },
    RollingBack,
    Ended,
    /// The session thread is stuck in the engine and was abandoned.
    Dead,
}

impl State {
    fn name(&self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Running { .. } => "running",
            State::Blocked { .. } => "blocked",
            State::RollingBack => "rolling-back",
            State::Ended => "ended",
            State::Dead => "dead",
        }
    }
}

pub(super) struct Driver<'a> {
    case: &'a TestCase,
    prepared: &'a HashMap<StmtRef, Prepared>,
    profile: EngineProfile,
    opts: &'a ExecOptions,
    workers: HashMap<u32, Worker>,
    state: HashMap<u32, State>,
    next: HashMap<u32, u32>,
    replies: Receiver<Reply>,
    start: Instant,
    events: Vec<Event>,
    outcomes: Vec<StmtOutcome>,
    ends: HashMap<u32, TxnEnd>,
    pending_rollback: Vec<u32>,
    need_settle: bool,
    /// Replies of waiting statements may be in flight (`grace`).
    need_grace: bool,
    /// Completions of resumed statements that arrived while another statement
    /// was still running (see [`Driver::pump`]).
    deferred: Vec<(u32, Outcome)>,
    /// A cancel could not reach the server: every session is stuck with it.
    server_unreachable: bool,
}

impl<'a> Driver<'a> {
    pub(super) fn start(
        engine: &mut dyn Engine,
        case: &'a TestCase,
        prepared: &'a HashMap<StmtRef, Prepared>,
        opts: &'a ExecOptions,
    ) -> Result<Driver<'a>, EngineError> {
        let (tx, rx) = channel();
        let mut workers = HashMap::new();
        for t in &case.txns {
            let waker = tx.clone();
            let signal = WaitSignal::with_waker(t.id, move || {
                let _ = waker.send(Reply::Tick);
            });
            let mut session = engine.open_session(case.level_of(t.id), signal.clone())?;
            for set in sql::session_settings(engine.dialect(), &t.settings) {
                session.query(&set).map_err(|e| {
                    EngineError::Setup(format!("session T{}: {set}: {}", t.id, e.message))
                })?;
            }
            workers.insert(t.id, Worker::spawn(t.id, session, signal, tx.clone())?);
        }
        Ok(Driver {
            case,
            prepared,
            profile: engine.profile().clone(),
            opts,
            state: case.txns.iter().map(|t| (t.id, State::Idle)).collect(),
            next: case.txns.iter().map(|t| (t.id, 0)).collect(),
            workers,
            replies: rx,
            start: Instant::now(),
            events: Vec::new(),
            outcomes: Vec::new(),
            ends: HashMap::new(),
            pending_rollback: Vec::new(),
            need_settle: false,
            need_grace: false,
            deferred: Vec::new(),
            server_unreachable: false,
        })
    }

    pub(super) fn run(mut self, engine: &mut dyn Engine) -> Result<History, EngineError> {
        loop {
            if self.server_unreachable {
                self.abandon_all();
                break;
            }
            if let Some(txn) = self.pending_rollback.pop() {
                self.rollback(txn);
                continue;
            }
            if self.need_grace && !self.need_settle {
                self.need_grace = false;
                self.grace();
            }
            if self.need_settle {
                self.need_settle = false;
                self.need_grace = false;
                self.settle();
                continue;
            }
            if let Some(r) = self.candidate() {
                self.submit(r);
                self.wait_running(r.txn);
                continue;
            }
            if self.any(|s| matches!(s, State::Blocked { .. })) {
                self.resolve_stall();
                continue;
            }
            break;
        }
        for (_, w) in self.workers.drain() {
            // A session stuck in the engine is left behind rather than
            // joined; so is every session once the server is unreachable
            // (closing one hands its connection back with a reset, which
            // would wait out a deadline of its own).
            let alive = !self.server_unreachable && self.state.get(&w.txn) != Some(&State::Dead);
            w.close(alive);
        }
        // A server that went away mid-case still leaves a history (crash
        // evidence). One that a cancel could not reach is not asked again:
        // the read would only wait out another deadline.
        let (final_state, final_state_error) = if self.server_unreachable {
            let e = EngineError::Hung(
                "final state not read: a cancel could not reach the server".into(),
            );
            (Default::default(), Some(e.to_string()))
        } else {
            match engine.final_state(&self.case.schema) {
                Ok(s) => (s, None),
                Err(e) if e.is_server_failure() => (Default::default(), Some(e.to_string())),
                Err(e) => return Err(e),
            }
        };
        Ok(History {
            isolation: self.case.isolation,
            events: self.events,
            outcomes: self.outcomes,
            txns: self
                .case
                .txns
                .iter()
                .map(|t| TxnOutcome {
                    txn: t.id,
                    end: if t.autocommit {
                        None
                    } else {
                        self.ends.get(&t.id).copied()
                    },
                })
                .collect(),
            final_state,
            final_state_error,
        })
    }

    fn any(&self, f: impl Fn(&State) -> bool) -> bool {
        self.state.values().any(f)
    }

    fn event(&mut self, stmt: StmtRef, kind: EventKind) {
        let at_us = self.start.elapsed().as_micros() as u64;
        self.events.push(Event { stmt, kind, at_us });
    }

    fn signal_ticks(&self, txn: u32) -> u64 {
        self.workers.get(&txn).map_or(0, |w| w.signal.ticks())
    }

    /// The first statement in submit order whose session is idle and due.
    fn candidate(&self) -> Option<StmtRef> {
        self.case.submit_order.iter().copied().find(|r| {
            self.state.get(&r.txn) == Some(&State::Idle) && self.next.get(&r.txn) == Some(&r.index)
        })
    }

    fn submit(&mut self, r: StmtRef) {
        let ticks0 = self.signal_ticks(r.txn);
        self.event(r, EventKind::Submitted);
        self.state.insert(
            r.txn,
            State::Running {
                stmt: r,
                ticks0,
                since: Instant::now(),
            },
        );
        let sent = match (self.prepared.get(&r), self.workers.get(&r.txn)) {
            (Some(p), Some(w)) => w.send(Cmd::Run(Box::new(p.clone()))),
            _ => false,
        };
        if !sent {
            self.on_done(
                r.txn,
                Outcome::failed(StmtError {
                    class: ErrorClass::ConnectionLost,
                    code: "session".into(),
                    message: "the session is gone".into(),
                }),
            );
        }
    }

    /// Receives at most one reply and notices newly blocked statements.
    ///
    /// A blocked statement resumes because the statement running now released a
    /// lock (earlier releases were settled before it was submitted). Its reply
    /// can still arrive first, when the releasing session's thread is slow to
    /// report; such completions are held back until no statement is running, so
    /// the history lists them after their cause.
    fn pump(&mut self, timeout: Duration) {
        self.flush_deferred();
        match self.replies.recv_timeout(timeout) {
            Ok(Reply::Done { txn, outcome }) => {
                let resumed = matches!(self.state.get(&txn), Some(State::Blocked { .. }));
                if resumed && self.any(|s| matches!(s, State::Running { .. })) {
                    self.deferred.push((txn, outcome));
                } else {
                    self.on_done(txn, outcome);
                }
            }
            Ok(Reply::RolledBack { txn }) => self.on_rolled_back(txn),
            Ok(Reply::Tick) => {}
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {}
        }
        let newly: Vec<(u32, StmtRef)> = self
            .state
            .iter()
            .filter_map(|(&txn, s)| match *s {
                State::Running { stmt, ticks0, .. } if self.signal_ticks(txn) > ticks0 => {
                    Some((txn, stmt))
                }
                _ => None,
            })
            .collect();
        for (txn, stmt) in newly {
            let blocker = self.workers.get(&txn).and_then(|w| w.signal.blocker());
            self.state.insert(
                txn,
                State::Blocked {
                    stmt,
                    since: Instant::now(),
                },
            );
            self.event(stmt, EventKind::Blocked { blocker });
        }
        self.flush_deferred();
    }

    fn flush_deferred(&mut self) {
        if self.deferred.is_empty() || self.any(|s| matches!(s, State::Running { .. })) {
            return;
        }
        for (txn, outcome) in std::mem::take(&mut self.deferred) {
            self.on_done(txn, outcome);
        }
    }

    /// Waits until `txn`'s running statement completes or blocks; a statement that
    /// does neither within the hang timeout is cancelled.
    fn wait_running(&mut self, txn: u32) {
        let mut deadline = Deadline::after(self.opts.hang_timeout);
        while matches!(self.state.get(&txn), Some(State::Running { .. })) {
            if deadline.passed() {
                self.cancel_hung(txn);
                return;
            }
            self.pump(POLL);
        }
    }

    fn cancel_hung(&mut self, txn: u32) {
        let Some(State::Running { stmt, .. }) = self.state.get(&txn).copied() else {
            return;
        };
        self.event(stmt, EventKind::TimedOut);
        if let Some(w) = self.workers.get(&txn) {
            self.server_unreachable |= w.canceller.cancel() == Cancel::Unreachable;
        }
        if self.server_unreachable {
            self.state.insert(txn, State::Dead);
            self.ends.insert(txn, TxnEnd::Aborted);
            self.skip_rest(txn);
            return;
        }
        self.wait_or_abandon(txn, |s| {
            matches!(s, State::Running { .. } | State::Blocked { .. })
        });
    }

    /// The server took no connection to cancel on: it is gone or frozen, so
    /// waiting for the other sessions, one hang timeout after another, would
    /// only delay the crash finding. Every session still in a statement
    /// times out with it; every unfinished transaction is abandoned.
    fn abandon_all(&mut self) {
        let mut txns: Vec<u32> = self.state.keys().copied().collect();
        txns.sort_unstable();
        for txn in txns {
            match self.state.get(&txn).copied() {
                Some(State::Running { stmt, .. } | State::Blocked { stmt, .. }) => {
                    self.event(stmt, EventKind::TimedOut);
                }
                Some(State::Idle | State::RollingBack) => {}
                _ => continue,
            }
            self.state.insert(txn, State::Dead);
            self.ends.entry(txn).or_insert(TxnEnd::Aborted);
            self.skip_rest(txn);
        }
    }

    /// Waits while `txn`'s state satisfies `busy`; a session still busy after
    /// the hang timeout is stuck in the engine and abandoned (its transaction
    /// counts as aborted).
    fn wait_or_abandon(&mut self, txn: u32, busy: fn(&State) -> bool) {
        let mut deadline = Deadline::after(self.opts.hang_timeout);
        while self.state.get(&txn).is_some_and(busy) {
            if deadline.passed() {
                self.state.insert(txn, State::Dead);
                self.ends.insert(txn, TxnEnd::Aborted);
                self.skip_rest(txn);
                return;
            }
            self.pump(POLL);
        }
    }

    fn on_done(&mut self, txn: u32, outcome: Outcome) {
        let (stmt, resumed) = match self.state.get(&txn) {
            Some(State::Running { stmt, .. }) => (*stmt, false),
            Some(State::Blocked { stmt, .. }) => (*stmt, true),
            // An abandoned session's statement that finished after all: its
            // outcome is no longer part of the history.
            Some(State::Dead) => {
                tracing::debug!(txn, "late completion of an abandoned session ignored");
                return;
            }
            other => {
                tracing::warn!(txn, state = ?other.map(State::name), "a completion from a session that runs no statement ignored");
                return;
            }
        };
        let ok = outcome.ok();
        self.event(stmt, EventKind::Completed { ok, resumed });
        let kind = self.prepared.get(&stmt).map(|p| p.kind);
        let op = self.prepared.get(&stmt).map_or(0, |p| p.op);
        let error_class = outcome.error.as_ref().map(|e| e.class);
        self.outcomes.push(StmtOutcome { stmt, op, outcome });
        self.next.insert(txn, stmt.index + 1);
        let autocommit = self.case.txn(txn).is_some_and(|t| t.autocommit);
        let releases = autocommit
            || matches!(
                kind,
                Some(StmtKind::Commit | StmtKind::Rollback | StmtKind::RollbackTo)
            );
        // A statement that takes locks can close a deadlock cycle with a
        // transaction that waits for its own: the engine then rolls back a
        // waiting victim inside it, and the victim's locks let other waiters
        // go, which finished before this statement did. Their replies are on
        // their way: they belong before the next statement (a waiting
        // autocommit write committed then).
        self.need_grace |= !releases && self.waited_for(txn) && self.takes_locks(stmt);
        self.need_settle |= releases;
        let next_state = match (error_class, kind) {
            _ if autocommit => State::Idle,
            (None, Some(StmtKind::Commit)) => self.end(txn, TxnEnd::Committed),
            (_, Some(StmtKind::Rollback)) => self.end(txn, TxnEnd::RolledBack),
            (Some(class), k)
                if matches!(k, Some(StmtKind::Commit | StmtKind::Begin))
                    || self.profile.error_scope(class) == ErrorScope::Transaction =>
            {
                self.pending_rollback.push(txn);
                State::RollingBack
            }
            _ => State::Idle,
        };
        self.state.insert(txn, next_state);
    }

    /// Whether a blocked statement waits for `txn`'s lock (the engine's
    /// last report).
    fn waited_for(&self, txn: u32) -> bool {
        self.state.iter().any(|(t, s)| {
            matches!(s, State::Blocked { .. })
                && self
                    .workers
                    .get(t)
                    .and_then(|w| w.signal.blocker())
                    .is_some_and(|b| b == txn)
        })
    }

    /// Whether `stmt` takes row locks, by its transaction's profile rule: a
    /// write, or a locking read (a plain read in a transaction too where the
    /// level makes it one).
    fn takes_locks(&self, stmt: StmtRef) -> bool {
        let (Some(cs), Some(rule)) = (
            self.case.stmt(stmt),
            self.profile.rule_of(self.case, stmt.txn),
        ) else {
            return false;
        };
        let in_txn = self.case.txn(stmt.txn).is_some_and(|t| !t.autocommit);
        Access::of(&cs.stmt).is_some_and(|a| rule.lock_of(a, in_txn).is_some())
    }

    fn end(&mut self, txn: u32, how: TxnEnd) -> State {
        self.ends.insert(txn, how);
        self.skip_rest(txn);
        State::Ended
    }

    fn skip_rest(&mut self, txn: u32) {
        let from = self.next.get(&txn).copied().unwrap_or(0);
        let len = self.case.txn(txn).map_or(0, |t| t.stmts.len() as u32);
        for index in from..len {
            self.event(StmtRef { txn, index }, EventKind::Skipped);
        }
        self.next.insert(txn, len);
    }

    /// Rolls back a transaction whose statement failed with an aborting error.
    fn rollback(&mut self, txn: u32) {
        let sent = self
            .workers
            .get(&txn)
            .is_some_and(|w| w.send(Cmd::Rollback));
        if !sent {
            self.on_rolled_back(txn);
            return;
        }
        self.wait_or_abandon(txn, |s| *s == State::RollingBack);
    }

    fn on_rolled_back(&mut self, txn: u32) {
        let index = self.next.get(&txn).copied().unwrap_or(1).saturating_sub(1);
        self.event(StmtRef { txn, index }, EventKind::Aborted);
        let s = self.end(txn, TxnEnd::Aborted);
        self.state.insert(txn, s);
        self.need_settle = true;
    }

    /// After a statement that may have resolved a deadlock inside it: the
    /// replies of waiters it let go are on their way (they finished before
    /// it did); take those that come within a short grace, without waiting
    /// for the engine to re-confirm every wait (`settle`, which costs a
    /// third of a MariaDB campaign's throughput when done this often).
    fn grace(&mut self) {
        let start = Instant::now();
        while let Some(left) = GRACE.checked_sub(start.elapsed()) {
            if !self.any(|s| matches!(s, State::Blocked { .. })) {
                return;
            }
            self.pump(left.min(POLL));
        }
    }

    /// After locks may have been released: wait until each blocked statement has
    /// resumed (completed) or its engine re-confirmed the wait twice.
    fn settle(&mut self) {
        let marks: Vec<(u32, u64)> = self
            .state
            .iter()
            .filter(|(_, s)| matches!(s, State::Blocked { .. }))
            .map(|(&t, _)| (t, self.signal_ticks(t)))
            .collect();
        if marks.is_empty() {
            return;
        }
        let mut deadline = Deadline::after(self.opts.hang_timeout);
        loop {
            let unresolved = marks.iter().any(|&(t, m)| {
                matches!(self.state.get(&t), Some(State::Blocked { .. }))
                    && self.signal_ticks(t) < m + 2
            });
            if !unresolved {
                return;
            }
            if deadline.passed() {
                tracing::warn!(
                    "settle: blocked statements neither resumed nor re-confirmed waiting"
                );
                return;
            }
            self.pump(POLL);
        }
    }

    /// Every remaining statement waits on a lock: give the engine time to resolve
    /// it (deadlock detection, lock wait timeout), then cancel the most recently
    /// blocked statement so its transaction aborts.
    fn resolve_stall(&mut self) {
        let mut deadline = Deadline::after(self.opts.stall_timeout);
        let before = self.events.len();
        while !deadline.passed() && self.events.len() == before {
            self.pump(POLL);
        }
        if self.events.len() != before {
            return;
        }
        let youngest = self
            .state
            .iter()
            .filter_map(|(&t, s)| match s {
                State::Blocked { since, .. } => Some((*since, t)),
                _ => None,
            })
            .max();
        if let Some((_, txn)) = youngest {
            tracing::debug!("stall: every remaining statement waits; cancelling T{txn}'s");
            if let Some(w) = self.workers.get(&txn) {
                self.server_unreachable |= w.canceller.cancel() == Cancel::Unreachable;
            }
            if self.server_unreachable {
                return;
            }
            self.wait_or_abandon(txn, |s| matches!(s, State::Blocked { .. }));
        }
    }
}
