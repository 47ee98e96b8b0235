//! The `wss` oracle (WriteCheck, PVLDB'25): write-specific serializability.
//!
//! From the actual schedule, build the serial order in which transactions
//! committed or rolled back first ("first commit/rollback, first scheduled");
//! replay it on a reset database at transaction level (each committed transaction
//! whole) and at statement level (each statement of a committed transaction as an
//! autocommit statement), then compare the final states and whether each write
//! succeeded. At SERIALIZABLE, every read of a committed transaction is compared
//! too (as bags), where the engine serialises readers in that order.
//!
//! Refinement over the paper: engines whose profile says so serialise a
//! transaction that wrote nothing at its snapshot (first statement), not at its
//! commit (SQLite WAL readers keep their snapshot while writers commit).
//!
//! Soundness: the commit-order replay is a valid oracle where the engine
//! identifies every write-write conflict and serialises writers in commit
//! order (profile `write_conflicts_detected`); elsewhere only cases whose
//! writes each saw exactly the units committed before their own, by the
//! level's documented write rule, are judged ([`super::commit_order`]);
//! the others are undecided with the reason. Every difference is a violation, except
//! one the verdict policy permits: a multi-row unique-key UPDATE whose
//! duplicate-key error differs, scoped by [`unique_order`].

use super::resumed::{permutations, resumed_runs, MAX_ORDERS};
use super::unique_order::{self, Scope};
use super::verdict::Claim;
use super::{CheckStats, Finding};
use crate::engine::{Engine, EngineError, EngineProfile};
use crate::exec::{execute_replay, ExecOptions};
use crate::model::compare::{same_bag, state_diff};
use crate::model::{
    ErrorClass, EventKind, History, Isolation, Outcome, Stmt, StmtKind, StmtRef, TestCase, Txn,
    TxnEnd,
};
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};

mod findings;

use findings::{final_state_finding, read_result_finding, write_outcome_finding, Explainer};

/// One unit of the serial order: a whole explicit transaction, or one autocommit statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Txn(u32),
    Autocommit(StmtRef),
}

impl Unit {
    pub fn label(&self) -> String {
        match self {
            Unit::Txn(t) => format!("T{t}"),
            Unit::Autocommit(r) => format!("T{}#{}", r.txn, r.index),
        }
    }
}

/// The committed units of `history` in WSS serial order.
pub fn serial_order(case: &TestCase, history: &History, profile: &EngineProfile) -> Vec<Unit> {
    keyed_units(case, history, profile)
        .into_iter()
        .map(|(_, u)| u)
        .collect()
}

/// The serial orders consistent with what the executor observed: the first is
/// [`serial_order`]; the others permute units whose serialisation points are
/// completions resumed by the same lock release (their relative order is not
/// observable from the client). `None` when there are more than
/// [`MAX_ORDERS`] (the case is then undecided: a violation needs every order).
pub fn candidate_orders(
    case: &TestCase,
    history: &History,
    profile: &EngineProfile,
) -> Option<Vec<Vec<Unit>>> {
    let keyed = keyed_units(case, history, profile);
    // Event index -> run of resumed completions it belongs to.
    let run_of: HashMap<usize, usize> = resumed_runs(history)
        .into_iter()
        .enumerate()
        .flat_map(|(run, events)| events.into_iter().map(move |i| (i, run)))
        .collect();
    let units: Vec<Unit> = keyed.iter().map(|(_, u)| *u).collect();
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut i = 0;
    while i < keyed.len() {
        let r = run_of.get(&keyed[i].0);
        let mut j = i + 1;
        while r.is_some() && j < keyed.len() && run_of.get(&keyed[j].0) == r {
            j += 1;
        }
        if j - i >= 2 {
            groups.push(i..j);
        }
        i = j;
    }
    let mut orders = vec![units];
    for g in groups {
        let mut next = Vec::new();
        for base in &orders {
            for perm in permutations(&base[g.clone()]) {
                let mut o = base.clone();
                o.splice(g.clone(), perm);
                next.push(o);
                if next.len() > MAX_ORDERS {
                    return None;
                }
            }
        }
        orders = next;
    }
    Some(orders)
}

/// Committed units with the index of the event that serialises them, in order.
fn keyed_units(case: &TestCase, history: &History, profile: &EngineProfile) -> Vec<(usize, Unit)> {
    let completed: HashMap<StmtRef, usize> = history
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, EventKind::Completed { .. }))
        .map(|(i, e)| (e.stmt, i))
        .collect();
    let mut keyed: Vec<(usize, Unit)> = Vec::new();
    for t in &case.txns {
        if t.autocommit {
            for (i, _) in t.stmts.iter().enumerate() {
                let r = StmtRef {
                    txn: t.id,
                    index: i as u32,
                };
                let committed = history
                    .outcome(r)
                    .is_some_and(Outcome::autocommit_committed);
                if let (true, Some(&at)) = (committed, completed.get(&r)) {
                    keyed.push((at, Unit::Autocommit(r)));
                }
            }
            continue;
        }
        if history.txn_end(t.id) != Some(TxnEnd::Committed) {
            continue;
        }
        let refs = (0..t.stmts.len() as u32).map(|index| StmtRef { txn: t.id, index });
        let commit_at = refs
            .clone()
            .filter_map(|r| completed.get(&r))
            .max()
            .copied();
        let wrote = t.stmts.iter().any(|s| s.stmt.kind().is_write());
        let first_data_at = refs
            .filter(|r| case.stmt(*r).is_some_and(|s| s.stmt.kind().is_data()))
            .filter_map(|r| completed.get(&r))
            .min()
            .copied();
        let at = match (profile.read_only_at_snapshot && !wrote, first_data_at) {
            (true, Some(first)) => first,
            _ => commit_at.unwrap_or(usize::MAX),
        };
        keyed.push((at, Unit::Txn(t.id)));
    }
    keyed.sort_by_key(|(at, _)| *at);
    keyed
}

/// A replay case and, for each of its statements, the original statement.
struct Replay {
    case: TestCase,
    origin: HashMap<StmtRef, StmtRef>,
}

impl Replay {
    fn new(case: &TestCase) -> Replay {
        let mut c = case.clone();
        c.txns.clear();
        c.submit_order.clear();
        Replay {
            case: c,
            origin: HashMap::new(),
        }
    }

    fn push(&mut self, autocommit: bool, stmts: &[(StmtRef, &crate::model::CaseStmt)]) {
        let id = self.case.txns.len() as u32 + 1;
        let mut txn = Txn {
            id,
            autocommit,
            isolation: None,
            settings: Default::default(),
            stmts: Vec::new(),
        };
        for (i, (orig, cs)) in stmts.iter().enumerate() {
            let r = StmtRef {
                txn: id,
                index: i as u32,
            };
            self.origin.insert(r, *orig);
            self.case.submit_order.push(r);
            let mut cs = (*cs).clone();
            if autocommit {
                // Its own transaction: a cursor runs whole, as its SELECT.
                crate::model::cursor::run_whole(&mut cs.stmt);
            }
            txn.stmts.push(cs);
        }
        self.case.txns.push(txn);
    }
}

fn txn_stmts(case: &TestCase, id: u32) -> Vec<(StmtRef, &crate::model::CaseStmt)> {
    case.txn(id)
        .map(|t| {
            t.stmts
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        StmtRef {
                            txn: id,
                            index: i as u32,
                        },
                        s,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn tx_level(case: &TestCase, order: &[Unit]) -> Replay {
    let mut rp = Replay::new(case);
    for u in order {
        match u {
            Unit::Txn(id) => rp.push(false, &txn_stmts(case, *id)),
            Unit::Autocommit(r) => {
                if let Some(cs) = case.stmt(*r) {
                    rp.push(true, &[(*r, cs)]);
                }
            }
        }
    }
    rp
}

/// `None` when a committed transaction rolls back to a savepoint, or a
/// statement writes a table of a foreign key checked at COMMIT by default
/// (`DEFERRABLE INITIALLY DEFERRED`): its statements cannot be replayed as
/// autocommit statements.
fn stmt_level(case: &TestCase, history: &History, order: &[Unit]) -> Option<Replay> {
    if super::cascade::writes_deferred_key(case, history) {
        return None;
    }
    let mut all = Vec::new();
    for u in order {
        match u {
            Unit::Txn(id) => {
                let stmts = txn_stmts(case, *id);
                if stmts
                    .iter()
                    .any(|(_, s)| s.stmt.kind() == StmtKind::RollbackTo)
                {
                    return None;
                }
                // A statement its READ ONLY transaction refused had no
                // effect; on its own it would run.
                let refused = |r: &StmtRef| {
                    history
                        .outcome(*r)
                        .and_then(|o| o.error.as_ref())
                        .is_some_and(|e| e.class == crate::model::ErrorClass::ReadOnlyTransaction)
                };
                all.extend(
                    stmts
                        .into_iter()
                        .filter(|(r, s)| s.stmt.kind().is_data() && !refused(r)),
                );
            }
            Unit::Autocommit(r) => all.extend(case.stmt(*r).map(|cs| (*r, cs))),
        }
    }
    let mut rp = Replay::new(case);
    if !all.is_empty() {
        rp.push(true, &all);
    }
    Some(rp)
}

fn describe(o: Option<&Outcome>) -> serde_json::Value {
    match o {
        None => json!("not run"),
        Some(o) => match &o.error {
            None => json!({ "ok": true, "affected": o.affected }),
            Some(e) => json!({ "ok": false, "class": e.class, "code": e.code }),
        },
    }
}

/// The actual execution that replays are compared with.
struct Actual<'a> {
    case: &'a TestCase,
    history: &'a History,
    serial: Vec<String>,
    /// The profile permits order-dependent unique checks.
    unique_permitted: bool,
}

/// The oracle's name in findings and counts.
const NAME: &str = "wss";

/// What one comparison of a replay with the actual run gave.
#[derive(Debug, Default)]
struct Compared {
    findings: Vec<Finding>,
    /// Why a difference was dropped as undecided (a possible cascade of an
    /// order-dependent UPDATE, or rows that were not observed).
    dropped: Option<Undecided>,
}

/// How a replay differs from the actual run, statement by statement.
#[derive(Default)]
struct Differences {
    /// Differing writes: statement, order-dependent, evidence.
    writes: Vec<(StmtRef, bool, serde_json::Value)>,
    /// Differing reads: statement, evidence.
    reads: Vec<(StmtRef, serde_json::Value)>,
    /// Order-dependent unique-key UPDATEs (in replay order), their tables
    /// and the rows they wrote where they succeeded (`None`: not observed).
    unique: Vec<StmtRef>,
    targets: BTreeSet<String>,
    explained: Option<unique_order::ExplainedRows>,
    /// A write failed in both runs, on different constraints.
    other_constraint: bool,
}

impl Actual<'_> {
    /// Statements after `first` (an order-dependent UPDATE): completed after it
    /// in the actual run, resumed by the same lock release (their order is not
    /// observable), or after it in the replay.
    fn later(&self, rp: &Replay, first: StmtRef) -> BTreeSet<StmtRef> {
        let done = |h: &History, r: StmtRef| {
            h.events
                .iter()
                .position(|e| e.stmt == r && matches!(e.kind, EventKind::Completed { .. }))
        };
        let actual_at = done(self.history, first);
        let peers: Vec<usize> = resumed_runs(self.history)
            .into_iter()
            .find(|run| actual_at.is_some_and(|a| run.contains(&a)))
            .unwrap_or_default();
        let replay_at = rp
            .case
            .submit_order
            .iter()
            .position(|r| rp.origin.get(r) == Some(&first));
        let mut later = BTreeSet::new();
        for (pos, r) in rp.case.submit_order.iter().enumerate() {
            let Some(orig) = rp.origin.get(r) else {
                continue;
            };
            let after_in_replay = replay_at.is_some_and(|at| pos > at);
            let after_in_actual = match (actual_at, done(self.history, *orig)) {
                (Some(a), Some(b)) => b > a || peers.contains(&b),
                _ => false,
            };
            if *orig != first && (after_in_replay || after_in_actual) {
                later.insert(*orig);
            }
        }
        later
    }

    /// The writes whose outcome and (with `compare_reads`) the reads whose
    /// rows differ between the actual run and the replay, and the
    /// order-dependent unique-key UPDATEs among the writes.
    fn differences(
        &self,
        rp: &Replay,
        replayed: &History,
        compare_reads: bool,
        stats: &mut CheckStats,
    ) -> Differences {
        let (case, actual) = (self.case, self.history);
        let mut d = Differences {
            explained: Some(Default::default()),
            ..Default::default()
        };
        for o in &replayed.outcomes {
            let Some(orig) = rp.origin.get(&o.stmt) else {
                continue;
            };
            let Some(stmt) = case.stmt(*orig).map(|s| &s.stmt) else {
                continue;
            };
            let kind = stmt.kind();
            let act = actual.outcome(*orig);
            if o.outcome
                .error
                .as_ref()
                .is_some_and(|e| e.class.is_concurrency())
            {
                stats.undecided += 1; // the serial replay itself hit a concurrency error
                continue;
            }
            if kind.is_write() {
                let a_class = act.and_then(|a| a.error.as_ref().map(|e| e.class));
                let r_class = o.outcome.error.as_ref().map(|e| e.class);
                let constraint = |c: Option<ErrorClass>| c.is_some_and(ErrorClass::is_constraint);
                if a_class != r_class && constraint(a_class) && constraint(r_class) {
                    // Failed both ways, on another constraint: undecided
                    // (`Undecided::FailedOnAnotherConstraint`).
                    d.other_constraint = true;
                    continue;
                }
                if act.is_none() || a_class != r_class {
                    // Only where the profile permits order-dependent
                    // unique checks; elsewhere it is a plain difference.
                    let order_dependent = self.unique_permitted
                        && act.is_some_and(|a| {
                            unique_order::order_dependent(case, stmt, a, &o.outcome)
                        });
                    if let (true, Some(a), Stmt::Update(u)) = (order_dependent, act, stmt) {
                        d.unique.push(*orig);
                        d.targets.insert(u.table.clone());
                        d.explained = match (
                            d.explained.take(),
                            unique_order::explained_rows(a, &o.outcome),
                        ) {
                            (Some(mut all), Some(rows)) => {
                                all.extend(rows);
                                Some(all)
                            }
                            _ => None,
                        };
                    }
                    d.writes.push((
                        *orig,
                        order_dependent,
                        json!({
                            "stmt": orig, "op": o.op,
                            "actual": describe(act), "serial": describe(Some(&o.outcome)),
                            "unique_order": order_dependent,
                        }),
                    ));
                }
            } else if compare_reads && kind == StmtKind::Select {
                if let Some(a) = act {
                    if a.ok() != o.outcome.ok() || !same_bag(&a.rows, &o.outcome.rows) {
                        d.reads.push((
                            *orig,
                            json!({
                                "stmt": orig, "op": o.op,
                                "actual": a.rows, "serial": o.outcome.rows,
                                "actual_error": a.error, "serial_error": o.outcome.error,
                            }),
                        ));
                    }
                }
            }
        }
        d
    }

    /// Compares one replay with the actual history; findings are tagged `level`.
    fn compare(
        &self,
        level: &str,
        rp: &Replay,
        replayed: &History,
        compare_reads: bool,
        stats: &mut CheckStats,
    ) -> Compared {
        let (case, actual, serial) = (self.case, self.history, &self.serial);
        let Differences {
            writes,
            reads,
            unique,
            targets,
            explained,
            other_constraint,
        } = self.differences(rp, replayed, compare_reads, stats);
        // After any of the order-dependent UPDATEs.
        let later: BTreeSet<StmtRef> = unique
            .iter()
            .flat_map(|u| self.later(rp, *u))
            .filter(|r| !unique.contains(r))
            .collect();
        let later_stmts: Vec<&Stmt> = later
            .iter()
            .filter_map(|r| case.stmt(*r).map(|s| &s.stmt))
            .filter(|s| s.kind().is_data())
            .collect();
        let mut ex = Explainer {
            case,
            targets,
            explained,
            later,
            later_stmts,
            dropped: None,
        };
        let mut findings = Vec::new();
        if let Some(diff) = state_diff(&actual.final_state, &replayed.final_state) {
            findings.extend(final_state_finding(&mut ex, level, serial, diff));
        }
        if !writes.is_empty() {
            findings.extend(write_outcome_finding(&mut ex, level, serial, &writes));
        }
        if !reads.is_empty() {
            findings.extend(read_result_finding(&mut ex, level, serial, &reads));
        }
        Compared {
            findings,
            dropped: ex
                .dropped
                .or(other_constraint.then_some(Undecided::FailedOnAnotherConstraint)),
        }
    }
}

/// Why `wss` could not decide a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecided {
    /// The commit-order replay is not sound for the case.
    Unsound(super::commit_order::Unsound),
    /// More serial orders than are tried ([`MAX_ORDERS`]).
    TooManyResumeOrders,
    /// A difference the unique-check order may explain, in rows it did not
    /// observe.
    UniqueOrderUnobservedRows,
    /// A difference that may cascade from a unique-check order.
    UniqueOrderCascade,
    /// A write failed in the run and in the replay, on different
    /// constraints. Which constraint a failing statement meets first depends
    /// on the rows it reached before it failed, and a failed statement's
    /// tentative writes are undone at once, so nothing orders its error by
    /// commit: case 4104 of seed 5 on MariaDB, SERIALIZABLE, where a
    /// key-changing UPDATE inserted key 5, met a foreign key and was undone
    /// before another transaction inserted key 5 and committed first; in the
    /// commit-order replay it met key 5 (duplicate key) instead of the
    /// foreign key. Neither run wrote anything with it.
    FailedOnAnotherConstraint,
}

impl Undecided {
    /// The key counted in `summary.json` (`oracle_counts.wss.undecided_by`).
    pub fn key(self) -> &'static str {
        match self {
            Undecided::Unsound(u) => u.key(),
            Undecided::TooManyResumeOrders => "too-many-resume-orders",
            Undecided::UniqueOrderUnobservedRows => "unique-order-unobserved-rows",
            Undecided::UniqueOrderCascade => "unique-order-cascade",
            Undecided::FailedOnAnotherConstraint => "failed-on-another-constraint",
        }
    }
}

/// How one candidate serial order compared.
enum OrderResult {
    Clean,
    Findings(Vec<Finding>),
    /// Differences that could not be judged (reason).
    Undecided(Undecided),
}

pub fn check(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    opts: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    let profile = engine.profile().clone();
    let detected = |l: &Isolation| profile.write_conflicts_detected.contains(l);
    if !case.levels().iter().all(detected) {
        if let Some(reason) = super::commit_order::unsound_reason(case, history, &profile) {
            undecided_case(stats, Undecided::Unsound(reason));
            return Ok(Vec::new());
        }
    }
    let Some(orders) = candidate_orders(case, history, &profile) else {
        undecided_case(stats, Undecided::TooManyResumeOrders);
        return Ok(Vec::new());
    };
    // A violation only if every order violates; clean if one order matches;
    // otherwise (some order could not be judged) undecided.
    let mut first = None;
    let mut documented_order = None;
    let mut undecided_reason = None;
    for order in &orders {
        match check_order(engine, case, history, opts, &profile, order, stats)? {
            OrderResult::Clean => {
                stats.oracle(NAME).checked += 1;
                return Ok(Vec::new());
            }
            OrderResult::Findings(f) => {
                // An order whose every difference the profile documents
                // explains the case: report that one (permitted), not another
                // order's violations.
                let documented = f.iter().all(|x| {
                    x.claim.is_some_and(|c| {
                        super::verdict::permit(&profile, case.isolation, c).is_some()
                    })
                });
                if documented {
                    documented_order.get_or_insert(f);
                } else {
                    first.get_or_insert(f);
                }
            }
            OrderResult::Undecided(r) => {
                undecided_reason.get_or_insert(r);
            }
        }
    }
    if let (Some(reason), None) = (undecided_reason, &documented_order) {
        undecided_case(stats, reason);
        return Ok(Vec::new());
    }
    stats.oracle(NAME).checked += 1;
    let mut findings = documented_order.or(first).unwrap_or_default();
    if orders.len() > 1 {
        for f in &mut findings {
            f.evidence["orders_tried"] = orders.len().into();
        }
    }
    Ok(findings)
}

/// A case `wss` cannot judge, counted with its reason.
fn undecided_case(stats: &mut CheckStats, reason: Undecided) {
    let counts = stats.oracle(NAME);
    counts.undecided += 1;
    *counts
        .undecided_by
        .entry(reason.key().to_string())
        .or_default() += 1;
}

/// Replays `order` at transaction and statement level and compares.
fn check_order(
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    opts: &ExecOptions,
    profile: &EngineProfile,
    order: &[Unit],
    stats: &mut CheckStats,
) -> Result<OrderResult, EngineError> {
    let compare_reads =
        case.levels() == [Isolation::Serializable] && profile.serializable_reads_in_commit_order;
    let actual = Actual {
        case,
        history,
        serial: order.iter().map(Unit::label).collect(),
        unique_permitted: profile.unique_checked_per_row.is_some(),
    };
    let tx = tx_level(case, order);
    engine.reset()?;
    let tx_hist = execute_replay(engine, &tx.case, opts)?;
    stats.replays += 1;
    let mut results = vec![actual.compare("tx", &tx, &tx_hist, compare_reads, stats)];
    match stmt_level(case, history, order) {
        Some(st) => {
            engine.reset()?;
            let st_hist = execute_replay(engine, &st.case, opts)?;
            stats.replays += 1;
            results.push(actual.compare("stmt", &st, &st_hist, false, stats));
        }
        None => stats.undecided += 1, // statement level not replayable (savepoints, deferred keys)
    }
    let dropped = results.iter().find_map(|c| c.dropped);
    let findings: Vec<Finding> = results.into_iter().flat_map(|c| c.findings).collect();
    Ok(match (findings.is_empty(), dropped) {
        (false, _) => OrderResult::Findings(findings),
        (true, Some(reason)) => OrderResult::Undecided(reason),
        (true, None) => OrderResult::Clean,
    })
}

/// The `wss` oracle in the registry ([`crate::oracle::registry`]).
pub struct WssOracle;

impl crate::oracle::Oracle for WssOracle {
    fn replays(&self) -> bool {
        true
    }
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
