//! TxCheck's oracle check: the committed statements of a refined case run
//! without transactions, in a random topological order of its statement-
//! dependency graph, and must give the same result, error class and written
//! rows each, and the same final state.

use super::vsr::VsrCase;
use super::{deps, order, undecided, Refined, NAME};
use crate::engine::{Engine, EngineError};
use crate::exec::{execute, ExecOptions};
use crate::model::compare::{same_bag, state_diff};
use crate::model::{
    CaseStmt, ErrorClass, History, Outcome, Stmt, StmtRef, TestCase, Txn, WriteList,
};
use crate::oracle::unique_order::{self, Scope};
use crate::oracle::verdict::Claim;
use crate::oracle::{CheckStats, Finding};
use crate::rng::Rng;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod findings;

/// The statements of `order` as one autocommit session; a cursor runs as
/// its SELECT limited to the rows its steps returned in `history` (the
/// refined run's).
pub fn replay_case(v: &VsrCase, history: &History, order: &[u32]) -> TestCase {
    let limited = crate::model::cursor::with_limits(&v.case, history);
    let source = limited.as_ref().unwrap_or(&v.case);
    let by_op: HashMap<u32, &CaseStmt> = source
        .txns
        .iter()
        .flat_map(|t| t.stmts.iter().map(|s| (s.op, s)))
        .collect();
    // A cursor runs whole, as its SELECT (limited to the rows its steps
    // returned: `model::cursor::with_limits`); its steps are no statements
    // of their own here.
    let stmts: Vec<CaseStmt> = order
        .iter()
        .filter_map(|op| by_op.get(op).map(|s| (*s).clone()))
        .filter(|s| !matches!(s.stmt, Stmt::Fetch(_) | Stmt::Close(_)))
        .map(|mut s| {
            crate::model::cursor::run_whole(&mut s.stmt);
            s
        })
        .collect();
    let submit_order = (0..stmts.len() as u32)
        .map(|index| StmtRef { txn: 1, index })
        .collect();
    TestCase {
        txns: vec![Txn {
            id: 1,
            autocommit: true,
            isolation: None,
            settings: Default::default(),
            stmts,
        }],
        submit_order,
        ..v.case.clone()
    }
}

fn outcome_by_op<'a>(case: &TestCase, h: &'a History) -> HashMap<u32, &'a Outcome> {
    h.outcomes
        .iter()
        .filter_map(|o| case.stmt(o.stmt).map(|s| (s.op, &o.outcome)))
        .collect()
}

fn class(o: &Outcome) -> Option<ErrorClass> {
    o.error.as_ref().map(|e| e.class)
}

fn describe(o: &Outcome) -> serde_json::Value {
    json!({
        "error": o.error.as_ref().map(|e| json!({"class": e.class, "code": e.code})),
        "rows": o.rows,
        "affected": o.affected,
        "written": o.writes.iter().map(|w| format!("{}:{}", w.table, w.rid)).collect::<Vec<_>>(),
    })
}

/// Why one statement's replayed outcome differs from its transactional one.
fn mismatch(stmt: &Stmt, txn: &Outcome, rep: &Outcome) -> Option<&'static str> {
    if class(txn) != class(rep) {
        return Some("error");
    }
    if let Stmt::Select(q) = stmt {
        // A LIMIT that cut the result keeps tied rows by physical order.
        let cut = q.limit.is_some_and(|l| txn.rows.len() as u64 >= l);
        if !cut && !same_bag(&txn.rows, &rep.rows) {
            return Some("rows");
        }
    }
    let written = |o: &Outcome| {
        let mut w: Vec<(String, i64, Option<WriteList>)> = o
            .writes
            .iter()
            .map(|w| (w.table.clone(), w.rid, w.after.clone()))
            .collect();
        w.sort();
        w
    };
    if stmt.kind().is_write() && written(txn) != written(rep) {
        return Some("written rows");
    }
    None
}

/// The original statement reference of each operation id.
fn labels(case: &TestCase) -> HashMap<u32, String> {
    case.txns
        .iter()
        .flat_map(|t| {
            t.stmts
                .iter()
                .enumerate()
                .map(move |(i, s)| (s.op, format!("T{}#{}", t.id, i)))
        })
        .collect()
}

/// Replays a refined case in a random topological order and compares.
pub fn check_refined(
    engine: &mut dyn Engine,
    case: &TestCase,
    r: &Refined,
    opts: &ExecOptions,
    rng: &mut Rng,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    let profile = engine.profile().clone();
    let txn_out = outcome_by_op(&r.vsr.case, &r.history);
    let (order, replayed, rep_hist) = match replay(engine, case, r, &txn_out, opts, rng, stats)? {
        Replayed::Ran(ran) => *ran,
        Replayed::Stopped(findings) => return Ok(findings),
    };
    let rep_out = outcome_by_op(&replayed, &rep_hist);
    let names = labels(case);
    let label = |op: &u32| names.get(op).cloned().unwrap_or_else(|| format!("op{op}"));
    let stmt_of: HashMap<u32, &Stmt> = r
        .vsr
        .case
        .txns
        .iter()
        .flat_map(|t| t.stmts.iter().map(|s| (s.op, &s.stmt)))
        .collect();
    // Only an engine whose profile permits order-dependent unique checks gets
    // them explained; elsewhere such a difference is a plain violation.
    let unique_permitted = profile.unique_checked_per_row.is_some();
    let m = mismatches(
        case,
        &order,
        &txn_out,
        &rep_out,
        &stmt_of,
        unique_permitted,
        &label,
    );
    let state = state_diff(&r.history.final_state, &rep_hist.final_state);
    if m.rows.is_empty() && state.is_none() {
        return Ok(Vec::new());
    }
    let claims = findings::claims(r, &order, &m, state.as_ref(), &stmt_of);
    let order_labels: Vec<String> = order.iter().map(label).collect();
    let out = findings::replay_findings(r, &order_labels, &label, &m, state, &claims);
    // A comparison whose every difference was dropped is undecided, not checked.
    if let (Some(reason), true) = (claims.undecided, out.is_empty()) {
        let counts = stats.oracle(NAME);
        *counts.undecided_by.entry(reason.into()).or_default() += 1;
        counts.checked = counts.checked.saturating_sub(1);
        counts.undecided += 1;
    }
    Ok(out)
}

/// The non-transactional replay of a refined case, or why there is none.
enum Replayed {
    /// The dependency order it ran in, the replayed case and its history.
    Ran(Box<(Vec<u32>, TestCase, History)>),
    /// No comparison: undecided, or the crash findings of a lost connection.
    Stopped(Vec<Finding>),
}

/// Replays the refined case in a random topological order (counted as
/// checked), unless the comparison could not be sound.
fn replay(
    engine: &mut dyn Engine,
    case: &TestCase,
    r: &Refined,
    txn_out: &HashMap<u32, &Outcome>,
    opts: &ExecOptions,
    rng: &mut Rng,
    stats: &mut CheckStats,
) -> Result<Replayed, EngineError> {
    let profile = engine.profile().clone();
    // Constraint checks that see rows outside the statement's snapshot.
    if profile
        .constraint_checks_outside_snapshot
        .contains(&case.isolation)
        && r.graph.nodes.iter().any(|op| {
            txn_out.get(op).is_some_and(|o| {
                matches!(
                    class(o),
                    Some(ErrorClass::DuplicateKey | ErrorClass::ForeignKeyViolation)
                )
            })
        })
    {
        return Ok(Replayed::Stopped(undecided(
            stats,
            case,
            "constraint-outside-snapshot",
            "a constraint error may come from a row outside the statement's snapshot",
        )));
    }
    let Some(order) = order::random_topological(&r.graph, rng) else {
        return Ok(Replayed::Stopped(undecided(
            stats,
            case,
            "cyclic",
            "the refined graph has a cycle",
        )));
    };
    let replay = replay_case(&r.vsr, &r.history, &order);
    engine.reset()?;
    let rep_hist = execute(engine, &replay, opts)?;
    stats.replays += 1;
    if rep_hist.lost_connection() {
        return Ok(Replayed::Stopped(crate::oracle::crash::check(&rep_hist)));
    }
    let rep_out = outcome_by_op(&replay, &rep_hist);
    if rep_out
        .values()
        .any(|o| class(o).is_some_and(ErrorClass::is_concurrency))
    {
        return Ok(Replayed::Stopped(undecided(
            stats,
            case,
            "replay-concurrency-error",
            "the replay hit a concurrency error",
        )));
    }
    stats.oracle(NAME).checked += 1;
    Ok(Replayed::Ran(Box::new((order, replay, rep_hist))))
}

/// The statements whose transactional and replayed outcomes differ.
#[derive(Default)]
struct Mismatches {
    /// One evidence entry per differing statement.
    rows: Vec<serde_json::Value>,
    /// Order-dependent unique-key UPDATEs, and their tables.
    unique: BTreeSet<u32>,
    targets: BTreeSet<String>,
    /// The rows those UPDATEs wrote (`None`: not all observed).
    explained: Option<unique_order::ExplainedRows>,
    /// The other differing statements.
    other_ops: Vec<u32>,
}

fn mismatches(
    case: &TestCase,
    order: &[u32],
    txn_out: &HashMap<u32, &Outcome>,
    rep_out: &HashMap<u32, &Outcome>,
    stmt_of: &HashMap<u32, &Stmt>,
    unique_permitted: bool,
    label: &dyn Fn(&u32) -> String,
) -> Mismatches {
    let mut m = Mismatches {
        explained: Some(Default::default()),
        ..Default::default()
    };
    for op in order {
        let (Some(t), Some(p), Some(stmt)) = (txn_out.get(op), rep_out.get(op), stmt_of.get(op))
        else {
            continue;
        };
        let Some(what) = mismatch(stmt, t, p) else {
            continue;
        };
        let order_dependent =
            unique_permitted && what == "error" && unique_order::order_dependent(case, stmt, t, p);
        if let (true, Stmt::Update(u)) = (order_dependent, stmt) {
            m.unique.insert(*op);
            m.targets.insert(u.table.clone());
            m.explained = match (m.explained.take(), unique_order::explained_rows(t, p)) {
                (Some(mut all), Some(rows)) => {
                    all.extend(rows);
                    Some(all)
                }
                _ => None,
            };
        } else {
            m.other_ops.push(*op);
        }
        m.rows.push(json!({
            "stmt": label(op), "op": op, "differs_in": what,
            "transactional": describe(t), "replayed": describe(p),
            "unique_order": order_dependent,
        }));
    }
    m
}

/// Statements after an order-dependent UPDATE, in the replay order, in the
/// transactional run's completion order, or resumed by the same lock
/// release (no observable order): they may carry its divergence on.
fn after_unique_updates(r: &Refined, order: &[u32], unique: &BTreeSet<u32>) -> BTreeSet<u32> {
    let completed: Vec<u32> = r.history.outcomes.iter().map(|o| o.op).collect();
    let op_of: HashMap<StmtRef, u32> = r.history.outcomes.iter().map(|o| (o.stmt, o.op)).collect();
    let runs: Vec<Vec<u32>> = crate::oracle::resumed::resumed_runs(&r.history)
        .into_iter()
        .map(|run| {
            run.iter()
                .filter_map(|i| r.history.events.get(*i).and_then(|e| op_of.get(&e.stmt)))
                .copied()
                .collect()
        })
        .collect();
    let at = |list: &[u32], op: &u32| list.iter().position(|x| x == op);
    order
        .iter()
        .filter(|op| !unique.contains(op))
        .filter(|op| {
            unique.iter().any(|u| {
                let after = |list: &[u32]| match (at(list, u), at(list, op)) {
                    (Some(f), Some(p)) => p > f,
                    _ => false,
                };
                let peers = runs.iter().any(|run| run.contains(u) && run.contains(op));
                after(order) || after(&completed) || peers
            })
        })
        .copied()
        .collect()
}

/// The evidence of an `sdg` finding: the replay order, the statements the
/// refinement removed, the dependencies, the version-set reads and the
/// refined case and history, plus `extra`.
fn replay_evidence(
    r: &Refined,
    order_labels: &[String],
    label: &dyn Fn(&u32) -> String,
    extra: serde_json::Value,
) -> serde_json::Value {
    let removed: Vec<serde_json::Value> = r
        .removed
        .iter()
        .map(|(op, why)| json!({"stmt": label(op), "op": op, "by": why}))
        .collect();
    let deps: Vec<String> = r
        .graph
        .deps
        .iter()
        .map(|d| {
            format!(
                "{} -{}{}-> {} ({}:{})",
                label(&d.from),
                match d.kind {
                    deps::DepKind::Write => "ww",
                    deps::DepKind::Read => "wr",
                    deps::DepKind::Anti => "rw",
                },
                if d.item { "" } else { "/pred" },
                label(&d.to),
                d.table,
                d.rid
            )
        })
        .collect();
    let vsrs: BTreeMap<String, Vec<u32>> = r
        .vsr
        .vsrs
        .iter()
        .map(|(t, v)| (label(t), v.clone()))
        .collect();
    let mut e = json!({
        "replay_order": order_labels,
        "removed": removed,
        "dependencies": deps,
        "vsrs": vsrs,
        "refined_case": r.vsr.case,
        "refined_history": r.history,
    });
    if let (Some(obj), serde_json::Value::Object(x)) = (e.as_object_mut(), extra) {
        obj.extend(x);
    }
    e
}
