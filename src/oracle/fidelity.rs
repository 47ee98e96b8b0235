//! The shadow run: does txfuzz's instrumentation change what the engine does?
//!
//! The case runs again on a `Plain` load (no `rid`/`wl` columns), in the same
//! submit order, with every statement as generated (no RETURNING, no capture,
//! no extra reads), and what a user can see is compared with the instrumented
//! run the other oracles judged: each statement's error, result rows (as a
//! bag) and affected count, which statements waited for a lock, how each
//! transaction ended, and the final state on the case's own columns. A
//! difference is a `fidelity` finding: txfuzz changed the engine's behaviour,
//! a txfuzz bug until shown otherwise (summary: `fidelity`, counted apart).
//!
//! Some differences the client cannot attribute to the instrumentation; the
//! case is undecided then, with the reason (after up to three shadows for
//! the races, any of which may agree): a statement cancelled by the hang
//! or stall timeout (`timed-out`), two statements waiting at once
//! (`concurrent-waiters`: which one the engine serves first after a release
//! is its choice, and may differ between any two runs), statements resumed
//! together by one lock release (`resumed-order`: likewise their order), an
//! unreadable final state (`final-state-unread`), a serialization failure the
//! engine may raise anywhere at the level, whose false positives depend on
//! the plan (`plan-dependent-abort`, PostgreSQL SERIALIZABLE), a difference
//! that the judged run and its shadow, run again, do not show
//! (`not-reproduced`: the engine's own timing, such as when purge removes a
//! delete-marked record, cannot be told from the instrumentation's effect
//! by one pair of runs), equal outcomes from runs whose statements completed
//! in another order (`completion-order`: two schedules that happen to agree
//! are no reproduction).
//!
//! The shadow leaves the engine loaded in the plain layout: it runs after the
//! other oracles of a case.

use crate::engine::{Engine, EngineError};
use crate::exec::{execute_prepared, ExecOptions};
use crate::instrument;
use crate::instrument::prepare_case;
use crate::model::{ErrorClass, EventKind, History, Outcome, StmtRef, TestCase, Value};
use crate::oracle::{resumed, CheckStats, Finding};
use crate::sql::{Dialect, Layout};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

mod differences;

use differences::{plan_dependent, stmt_differences, txn_end_differences};

pub const NAME: &str = "fidelity";

/// Shadow runs of a case whose comparison is undecided for a race, until
/// one agrees.
const RACE_TRIES: usize = 3;

/// Runs the shadow of `case` and compares it with `history`.
pub fn check(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    opts: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    // Where the engine chose between racing waiters, another shadow may
    // happen to make the same choices: a few tries can still show agreement.
    let mut comparison = shadow(engine, case, history, opts)?;
    stats.replays += 1;
    for _ in 1..RACE_TRIES {
        if !matches!(
            comparison,
            Comparison::Undecided(
                Undecided::ConcurrentWaiters | Undecided::ResumedOrder | Undecided::CompletionOrder
            )
        ) {
            break;
        }
        let again = shadow(engine, case, history, opts)?;
        stats.replays += 1;
        if again == Comparison::Agree {
            comparison = again;
        }
    }
    // A difference must reproduce: the judged run and its shadow run again,
    // and only a second difference makes it a finding. A one-off is the
    // engine's own timing (a purge that had not run yet, a lock released
    // within the monitor's poll), which txfuzz cannot attribute.
    if matches!(comparison, Comparison::Differ(_)) {
        let again = rerun(engine, case, opts)?;
        let confirmed = shadow(engine, case, &again, opts)?;
        stats.replays += 2;
        if !matches!(confirmed, Comparison::Differ(_)) {
            comparison = Comparison::Undecided(Undecided::NotReproduced);
        }
    }
    let counts = stats.oracle(NAME);
    match comparison {
        Comparison::Agree => {
            counts.checked += 1;
            Ok(Vec::new())
        }
        Comparison::Undecided(reason) => {
            counts.undecided += 1;
            *counts.undecided_by.entry(reason.key().into()).or_default() += 1;
            Ok(Vec::new())
        }
        Comparison::Differ(diffs) => {
            counts.checked += 1;
            Ok(vec![finding(case, &diffs)])
        }
    }
}

/// The judged run of `case` again, on a fresh instrumented load.
fn rerun(
    engine: &mut dyn Engine,
    case: &TestCase,
    opts: &ExecOptions,
) -> Result<History, EngineError> {
    engine.load_as(case, Layout::Instrumented)?;
    crate::exec::execute_checked(engine, case, opts)
}

/// Runs the shadow of `case` (on a `Plain` load, which it leaves behind) and
/// compares it with `history`.
pub fn shadow(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    opts: &ExecOptions,
) -> Result<Comparison, EngineError> {
    engine.load_as(case, Layout::Plain)?;
    let prepared = prepare_case(engine.target(), case)
        .into_iter()
        .map(|(r, p)| (r, p.uninstrumented()))
        .collect();
    let shadow = execute_prepared(engine, case, &prepared, opts)?;
    // A shadow the server failed during (its final state unread) says
    // nothing about the instrumentation: the server's failure is the case's
    // crash finding, and no further round trip waits on it.
    if shadow.final_state_error.is_some() {
        if let Some(e) = crate::exec::server_failure(&shadow) {
            return Err(e);
        }
    }
    let anywhere = case
        .txns
        .iter()
        .find_map(|t| engine.profile().rule_of(case, t.id)?.aborts_anywhere);
    Ok(compare(engine.dialect(), anywhere, case, history, &shadow))
}

impl Comparison {
    /// For evidence: `"agrees"`, `{"undecided": reason}` or
    /// `{"differs": [what, ...]}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Comparison::Agree => json!("agrees"),
            Comparison::Undecided(r) => json!({ "undecided": r.key() }),
            Comparison::Differ(d) => {
                json!({ "differs": d.iter().map(|d| d.what).collect::<Vec<_>>() })
            }
        }
    }
}

/// What the shadow run says about a case.
#[derive(Debug, PartialEq)]
pub enum Comparison {
    Agree,
    Undecided(Undecided),
    Differ(Vec<Difference>),
}

/// Why the shadow run could not be compared with the judged run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecided {
    /// Two statements waited at once: which one a release lets go first is
    /// the engine's choice.
    ConcurrentWaiters,
    /// Completions were resumed together, in an order the client cannot see.
    ResumedOrder,
    /// A statement timed out in one of the runs.
    TimedOut,
    /// A final state could not be read.
    FinalStateUnread,
    /// A serialization failure that depends on the plan (PostgreSQL SSI).
    PlanDependentAbort,
    /// The runs differed once, and the judged run and its shadow run again
    /// agreed.
    NotReproduced,
    /// The outcomes agree, but statements completed in another order (a
    /// lock released to the waiters in another order, or observed later).
    CompletionOrder,
}

impl Undecided {
    /// The key counted in `summary.json` (`oracle_counts.fidelity.undecided_by`).
    pub fn key(self) -> &'static str {
        match self {
            Undecided::ConcurrentWaiters => "concurrent-waiters",
            Undecided::ResumedOrder => "resumed-order",
            Undecided::TimedOut => "timed-out",
            Undecided::FinalStateUnread => "final-state-unread",
            Undecided::PlanDependentAbort => "plan-dependent-abort",
            Undecided::NotReproduced => "not-reproduced",
            Undecided::CompletionOrder => "completion-order",
        }
    }
}

/// One thing a user sees differently in the two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// `wait`, `error`, `result`, `affected`, `ran`, `txn-end`, `final-state`.
    pub what: &'static str,
    pub stmt: Option<StmtRef>,
    pub instrumented: serde_json::Value,
    pub plain: serde_json::Value,
}

/// Compares what users see in the instrumented `history` and the `shadow`.
///
/// `aborts_anywhere`: the error the engine may raise at this level without a
/// conflict the client can see (PostgreSQL SERIALIZABLE's serialization
/// failures: SSI's predicate locks "depend on the plan used by the query",
/// PostgreSQL manual 13.2.3, so whether a false positive fires can change
/// with the projection). A difference in it is undecided
/// (`plan-dependent-abort`).
pub fn compare(
    d: Dialect,
    aborts_anywhere: Option<ErrorClass>,
    case: &TestCase,
    history: &History,
    shadow: &History,
) -> Comparison {
    let timed_out = |h: &History| {
        h.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimedOut))
    };
    if timed_out(history) || timed_out(shadow) {
        return Comparison::Undecided(Undecided::TimedOut);
    }
    let mut diffs = Vec::new();
    stmt_differences(d, case, history, shadow, &mut diffs);
    txn_end_differences(case, history, shadow, &mut diffs);
    if history.final_state_error.is_some() || shadow.final_state_error.is_some() {
        return undecided_or(diffs, Undecided::FinalStateUnread, history, shadow);
    }
    let projected = user_columns(history);
    let plain = sorted(&shadow.final_state);
    if projected != plain {
        diffs.push(Difference {
            what: "final-state",
            stmt: None,
            instrumented: state_json(&projected),
            plain: state_json(&plain),
        });
    }
    if diffs.is_empty() {
        // Equal outcomes from runs that served the waiters in another order
        // are two schedules that happen to agree, not a reproduction (a
        // write lost in the judged run, done in the shadow after the rows
        // it wrote were deleted by a waiter served first, looks the same).
        if completion_order(history) != completion_order(shadow) {
            return Comparison::Undecided(
                race(history)
                    .or_else(|| race(shadow))
                    .unwrap_or(Undecided::CompletionOrder),
            );
        }
        return Comparison::Agree;
    }
    if let Some(reason) = race(history).or_else(|| race(shadow)) {
        return Comparison::Undecided(reason);
    }
    if plan_dependent(aborts_anywhere, &diffs, history, shadow) {
        return Comparison::Undecided(Undecided::PlanDependentAbort);
    }
    Comparison::Differ(diffs)
}

/// Why the order in which the engine served waiting statements may differ
/// between two runs of the same schedule: two statements waited at once
/// (which one a release lets go first is the engine's choice, e.g. SQLite's
/// busy-handler retries), or completions were resumed together.
pub fn race(h: &History) -> Option<Undecided> {
    let mut waiting = BTreeSet::new();
    for e in &h.events {
        match e.kind {
            EventKind::Blocked { .. } => {
                waiting.insert(e.stmt);
                if waiting.len() >= 2 {
                    return Some(Undecided::ConcurrentWaiters);
                }
            }
            EventKind::Completed { .. } | EventKind::TimedOut | EventKind::Aborted => {
                waiting.remove(&e.stmt);
            }
            _ => {}
        }
    }
    (!resumed::resumed_runs(h).is_empty()).then_some(Undecided::ResumedOrder)
}

/// The statements in the order they completed.
fn completion_order(h: &History) -> Vec<StmtRef> {
    h.events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Completed { .. }))
        .map(|e| e.stmt)
        .collect()
}

/// Undecided for `reason` when there is nothing else to report.
fn undecided_or(
    diffs: Vec<Difference>,
    reason: Undecided,
    history: &History,
    shadow: &History,
) -> Comparison {
    if diffs.is_empty() || race(history).is_some() || race(shadow).is_some() {
        Comparison::Undecided(reason)
    } else {
        Comparison::Differ(diffs)
    }
}

struct Seen<'a> {
    waited: bool,
    ran: bool,
    outcome: Option<&'a Outcome>,
}

fn seen(h: &History, r: StmtRef) -> Seen<'_> {
    let events = h.events.iter().filter(|e| e.stmt == r);
    let mut s = Seen {
        waited: false,
        ran: false,
        outcome: h.outcome(r),
    };
    for e in events {
        match e.kind {
            EventKind::Blocked { .. } => s.waited = true,
            EventKind::Completed { .. } => s.ran = true,
            _ => {}
        }
    }
    s
}

/// The error a user sees: its class and code (messages name internal ids).
fn error_of(o: &Outcome) -> serde_json::Value {
    match &o.error {
        None => serde_json::Value::Null,
        Some(e) => json!({ "class": e.class, "code": e.code }),
    }
}

fn bag(rows: &[Vec<Value>]) -> serde_json::Value {
    let mut rows = rows.to_vec();
    rows.sort();
    json!(rows)
}

/// The instrumented final state without `rid` and `wl`, rows sorted.
fn user_columns(h: &History) -> BTreeMap<String, Vec<Vec<Value>>> {
    h.final_state
        .iter()
        .map(|(t, rows)| {
            let mut rows: Vec<Vec<Value>> = rows
                .iter()
                .map(|r| r.iter().skip(2).cloned().collect())
                .collect();
            rows.sort();
            (t.clone(), rows)
        })
        .collect()
}

fn sorted(state: &BTreeMap<String, Vec<Vec<Value>>>) -> BTreeMap<String, Vec<Vec<Value>>> {
    state
        .iter()
        .map(|(t, rows)| {
            let mut rows = rows.clone();
            rows.sort();
            (t.clone(), rows)
        })
        .collect()
}

fn state_json(state: &BTreeMap<String, Vec<Vec<Value>>>) -> serde_json::Value {
    json!(state)
}

/// The transactions each run rolled back as a deadlock victim, when the
/// two runs chose different ones (`(plain, instrumented)`): InnoDB rolls
/// back the transaction of least weight, its undo records and locks
/// (MySQL 17.7.5.2 "Deadlock Detection": "InnoDB tries to pick small
/// transactions to roll back, where the size of a transaction is
/// determined by the number of rows inserted, updated, or deleted"), and an
/// instrumented write always changes `wl` where the plain one may change
/// nothing (a REPLACE of an identical row writes no undo record).
fn deadlock_victims(diffs: &[Difference]) -> Option<(u32, u32)> {
    let deadlock =
        |v: &serde_json::Value| v.get("class").and_then(|c| c.as_str()) == Some("deadlock");
    let victim = |plain: bool| {
        diffs.iter().find_map(|d| {
            let (mine, other) = if plain {
                (&d.plain, &d.instrumented)
            } else {
                (&d.instrumented, &d.plain)
            };
            (d.what == "error" && deadlock(mine) && !deadlock(other)).then_some(d.stmt?.txn)
        })
    };
    match (victim(true), victim(false)) {
        (Some(p), Some(i)) if p != i => Some((p, i)),
        _ => None,
    }
}

fn finding(case: &TestCase, diffs: &[Difference]) -> Finding {
    let first = &diffs[0];
    let op = |r: StmtRef| case.stmt(r).map(|cs| cs.op);
    let statements: BTreeSet<StmtRef> = diffs.iter().filter_map(|d| d.stmt).collect();
    let victims = deadlock_victims(diffs);
    let summary = match victims {
        Some((plain, inst)) => format!(
            "instrumentation changed which transaction a deadlock rolled back: T{plain} without it, \
             T{inst} with it ({} difference(s))",
            diffs.len()
        ),
        None => difference_summary(first, first.stmt.and_then(op), diffs.len()),
    };
    let kind = if victims.is_some() {
        "deadlock-victim"
    } else {
        first.what
    };
    let mut evidence = json!({
        "statements": statements,
        "differences": diffs.iter().map(|d| json!({
            "what": d.what,
            "stmt": d.stmt,
            "op": d.stmt.and_then(op),
            "instrumented": d.instrumented,
            "plain": d.plain,
        })).collect::<Vec<_>>(),
    });
    if let Some((plain, inst)) = victims {
        evidence["deadlock_victims"] = json!({ "plain": plain, "instrumented": inst });
    }
    Finding::new(crate::oracle::OracleKind::Fidelity, kind, summary, evidence).about(statements)
}

/// The summary of a finding led by the difference `first` (of operation
/// `op`, when it is about a statement).
fn difference_summary(first: &Difference, op: Option<u32>, n: usize) -> String {
    match (first.stmt, op) {
        (Some(_), op) => format!(
            "instrumentation changed what the engine did: op {} {} differs without it ({n} difference(s))",
            op.map_or("?".into(), |o| o.to_string()),
            describe(first.what),
        ),
        (None, _) => format!(
            "instrumentation changed what the engine did: the {} differs without it ({n} difference(s))",
            describe(first.what),
        ),
    }
}

fn describe(what: &str) -> &'static str {
    match what {
        "wait" => "whether it waited for a lock",
        "ran" => "whether it ran",
        "error" => "its error",
        "result" => "its result rows",
        "affected" => "its affected-row count",
        "txn-end" => "how a transaction ended",
        _ => "final state",
    }
}

/// Whether case `index` of a campaign with `seed` gets a shadow run at `rate`
/// (0..=1): a fixed hash, so a campaign's choice is reproducible.
pub fn sampled(seed: u64, index: u64, rate: f64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let mut h = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h as f64 / u64::MAX as f64) < rate
}

/// The `fidelity` oracle in the registry ([`crate::oracle::registry`]).
pub struct FidelityOracle;

impl crate::oracle::Oracle for FidelityOracle {
    fn replays(&self) -> bool {
        true
    }
    /// A panic of the instrumented run that the plain run does not meet is
    /// the engine's bug, reported by `crash`; what follows it differs by
    /// construction. (A plain run that fails where the judged run did not
    /// is still compared.)
    fn judges_after_internal_errors(&self) -> bool {
        false
    }
    fn check(
        &self,
        cx: crate::oracle::CheckContext<'_>,
    ) -> Result<Vec<Finding>, crate::engine::EngineError> {
        check(cx.engine, cx.case, cx.history, cx.opts, cx.stats)
    }
}

#[cfg(test)]
mod tests;
