//! Hand-written histories for the statement-dependency graph, and scripted
//! SQLite executions through the whole refinement loop.

use super::deps::{self, DepKind};
use super::vsr::{self, VsrCase};
use super::*;
use crate::engine::sqlite::SqliteEngine;
use crate::model::{
    DbState, Outcome, RowVersion, RowWrite, Stmt, StmtOutcome, StmtRef, TxnEnd, TxnOutcome, Value,
};
use crate::oracle::Verdict;
use crate::testkit::*;

/// Hand-written outcome of the statement with operation id `op`.
struct Obs {
    op: u32,
    reads: Vec<(&'static str, i64, &'static str)>,
    writes: Vec<(
        &'static str,
        i64,
        Option<&'static str>,
        Option<&'static str>,
    )>,
}

fn rv(t: &str, rid: i64, wl: &str) -> RowVersion {
    RowVersion {
        table: t.into(),
        rid,
        wl: wl.parse().unwrap(),
    }
}

/// A history of `v.case` where every statement succeeded with the given
/// observations, each VSR saw `view` (table, rid, wl) and transactions ended
/// as `ends` says (committed by default).
fn history(
    v: &VsrCase,
    obs: &[Obs],
    view: &[(&str, i64, &str)],
    ends: &[(u32, TxnEnd)],
    final_state: DbState,
) -> History {
    let mut outcomes = Vec::new();
    for t in &v.case.txns {
        for (i, s) in t.stmts.iter().enumerate() {
            let mut o = Outcome {
                reads_complete: true,
                writes_complete: true,
                ..Outcome::default()
            };
            if v.is_vsr(s.op) {
                let Stmt::Select(q) = &s.stmt else { panic!() };
                let table = &q.from[0].table;
                o.reads = view
                    .iter()
                    .filter(|(tb, _, _)| tb == table)
                    .map(|(tb, rid, wl)| rv(tb, *rid, wl))
                    .collect();
            }
            if let Some(ob) = obs.iter().find(|ob| ob.op == s.op) {
                o.reads = ob.reads.iter().map(|(t, r, w)| rv(t, *r, w)).collect();
                o.writes = ob
                    .writes
                    .iter()
                    .map(|(t, rid, b, a)| RowWrite {
                        table: (*t).into(),
                        rid: *rid,
                        before: b.map(|x| x.parse().unwrap()),
                        after: a.map(|x| x.parse().unwrap()),
                    })
                    .collect();
            }
            outcomes.push(StmtOutcome {
                stmt: StmtRef {
                    txn: t.id,
                    index: i as u32,
                },
                op: s.op,
                outcome: o,
            });
        }
    }
    History {
        isolation: v.case.isolation,
        events: Vec::new(),
        outcomes,
        txns: v
            .case
            .txns
            .iter()
            .map(|t| TxnOutcome {
                txn: t.id,
                end: (!t.autocommit).then(|| {
                    ends.iter()
                        .find(|(id, _)| *id == t.id)
                        .map(|(_, e)| *e)
                        .unwrap_or(TxnEnd::Committed)
                }),
            })
            .collect(),
        final_state,
        final_state_error: None,
    }
}

fn row(rid: i64, wl: &str, k: i64, v: i64) -> Vec<Value> {
    vec![
        Value::Int(rid),
        Value::Text(wl.into()),
        Value::Int(k),
        Value::Int(v),
    ]
}

#[test]
fn figure1_statement_graph_is_acyclic_though_transactions_form_a_cycle() {
    let case = txcheck_figure1();
    case.validate().unwrap();
    let v = vsr::instrument(&case, |_| None);
    // Ops: T1 = 1 BEGIN, 2 UPDATE t, 3 SELECT u, 4 COMMIT; T2 = 5 .. 8.
    let h = history(
        &v,
        &[
            Obs {
                op: 2,
                reads: vec![("t", 1, "0")],
                writes: vec![("t", 1, Some("0"), Some("0,2"))],
            },
            Obs {
                op: 3,
                reads: vec![("u", 2, "0")],
                writes: vec![],
            },
            Obs {
                op: 6,
                reads: vec![("t", 1, "0")],
                writes: vec![],
            },
            Obs {
                op: 7,
                reads: vec![("u", 2, "0")],
                writes: vec![("u", 2, Some("0"), Some("0,7"))],
            },
        ],
        &[("t", 1, "0"), ("u", 2, "0")],
        &[],
        DbState::from([
            ("t".to_string(), vec![row(1, "0,2", 1, 162)]),
            ("u".to_string(), vec![row(2, "0,7", 2, 63)]),
        ]),
    );
    let g = deps::build(&v, &h).unwrap();
    assert_eq!(g.nodes, vec![2, 3, 6, 7]);
    let has = |from, to, kind| {
        g.deps
            .iter()
            .any(|d| d.from == from && d.to == to && d.kind == kind)
    };
    assert!(
        has(6, 2, DepKind::Anti),
        "T2's read of t precedes T1's update: {g:?}"
    );
    assert!(
        has(3, 7, DepKind::Anti),
        "T1's read of u precedes T2's update: {g:?}"
    );
    assert!(order::cyclic_nodes(&g).is_empty(), "{g:?}");
    // Projected onto transactions, the same dependencies form a cycle.
    let txn_of = |op: u32| if op <= 4 { 1 } else { 2 };
    let txn_edges: std::collections::BTreeSet<(u32, u32)> = g
        .deps
        .iter()
        .map(|d| (txn_of(d.from), txn_of(d.to)))
        .filter(|(a, b)| a != b)
        .collect();
    assert!(txn_edges.contains(&(1, 2)) && txn_edges.contains(&(2, 1)));
    // The replay order is a topological order: both reads before both updates' successors.
    let order = order::random_topological(&g, &mut Rng::new(7, 0)).unwrap();
    let pos = |op| order.iter().position(|&o| o == op).unwrap();
    assert!(pos(6) < pos(2) && pos(3) < pos(7));
}

#[test]
fn aborted_and_rolled_back_statements_are_not_nodes() {
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![select("t", None)]),
        ],
        "1 1 2 2 1 2",
    );
    let v = vsr::instrument(&case, |_| None);
    let h = history(
        &v,
        &[
            Obs {
                op: 2,
                reads: vec![("t", 1, "0")],
                writes: vec![("t", 1, Some("0"), Some("0,2"))],
            },
            Obs {
                op: 5,
                reads: vec![("t", 1, "0")],
                writes: vec![],
            },
        ],
        &[("t", 1, "0")],
        &[(1, TxnEnd::Aborted)],
        DbState::from([("t".to_string(), vec![row(1, "0", 1, 10)])]),
    );
    let g = deps::build(&v, &h).unwrap();
    assert_eq!(g.nodes, vec![5], "only the committed read takes part");
    assert!(g.deps.is_empty());
    // A committed statement that saw the aborted write cannot be replayed.
    let dirty = history(
        &v,
        &[Obs {
            op: 5,
            reads: vec![("t", 1, "0,2")],
            writes: vec![],
        }],
        &[("t", 1, "0,2")],
        &[(1, TxnEnd::Aborted)],
        DbState::from([("t".to_string(), vec![row(1, "0", 1, 10)])]),
    );
    let err = deps::build(&v, &dirty).unwrap_err();
    assert!(err.detail.contains("did not commit"), "{err:?}");
}

#[test]
fn views_give_predicate_dependencies_and_item_reads_override_them() {
    // T1 updates row 1; T2 (later) reads only row 2 but its VSR saw row 1's new version.
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            autocommit(vec![set("t", 1, 11)]),
            autocommit(vec![select("t", Some(2))]),
        ],
        "1 2",
    );
    let v = vsr::instrument(&case, |_| None);
    let h = history(
        &v,
        &[
            Obs {
                op: 1,
                reads: vec![("t", 1, "0")],
                writes: vec![("t", 1, Some("0"), Some("0,1"))],
            },
            Obs {
                op: 2,
                reads: vec![("t", 2, "0")],
                writes: vec![],
            },
        ],
        &[("t", 1, "0,1"), ("t", 2, "0")],
        &[],
        DbState::from([(
            "t".to_string(),
            vec![row(1, "0,1", 1, 11), row(2, "0", 2, 20)],
        )]),
    );
    let g = deps::build(&v, &h).unwrap();
    let pred: Vec<_> = g.deps.iter().filter(|d| !d.item).collect();
    assert_eq!(pred.len(), 1, "{g:?}");
    assert_eq!(
        (pred[0].from, pred[0].to, pred[0].kind),
        (1, 2, DepKind::Read)
    );
    assert!(g.deps.iter().all(|d| d.rid == 1), "row 2 was never written");
}

fn sqlite() -> SqliteEngine {
    SqliteEngine::open(None).unwrap()
}

fn sdg(engine: &mut dyn Engine, case: &TestCase) -> (Vec<Finding>, CheckStats) {
    engine.load(case).unwrap();
    let opts = ExecOptions::default();
    let h = execute(engine, case, &opts).unwrap();
    let mut stats = CheckStats::default();
    let f = check(engine, case, &h, &opts, &mut stats).unwrap();
    (f, stats)
}

#[test]
fn a_spurious_predicate_dependency_never_makes_a_violation() {
    // T2's read of k=2 gets a predicate dependency on T1's write of k=1
    // (its VSR saw that row); the replay honours it and agrees.
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            autocommit(vec![set("t", 1, 11)]),
            committed(vec![select("t", Some(2)), add("t", 2, 1)]),
        ],
        "2 1 2 2 2",
    );
    let mut e = sqlite();
    let (findings, stats) = sdg(&mut e, &case);
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(stats.per_oracle["sdg"].checked, 1, "{stats:?}");
}

#[test]
fn blocking_scheduling_drops_separated_statements_and_reruns_stably() {
    // T2's autocommit UPDATE waits for T1's write lock: its VSR ran before T1
    // committed, the UPDATE after, so the pair is dropped and the rest re-run.
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1)]),
            autocommit(vec![add("t", 1, 5)]),
        ],
        "1 1 2 1",
    );
    let mut e = sqlite();
    let mut stats = CheckStats::default();
    e.load(&case).unwrap();
    let opts = ExecOptions::default();
    let mut rng = Rng::new(1, 1);
    let Refinement::Done(r) = refine(&mut e, &case, &opts, &mut rng, &mut stats).unwrap() else {
        panic!("not refined");
    };
    // Ops: T1 = 1 BEGIN, 2 UPDATE, 3 COMMIT; T2's UPDATE is op 4 (VSRs get 5, 6).
    assert_eq!(r.removed, vec![(4, "blocking")]);
    assert!(schedule::stable(&r.history));
    assert_eq!(stats.replays, 2);
    assert_eq!(r.graph.nodes, vec![2]);
}

/// T1 begins; T2 commits an update of k=1; T1 then reads k=1 (SQLite takes
/// T1's snapshot at that first read, so it must see T2's value).
fn read_after_concurrent_commit() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![select("t", Some(1)), add("t", 2, 1)]),
            autocommit(vec![set("t", 1, 99)]),
        ],
        "1 2 1 1 1",
    )
}

#[test]
fn a_stale_read_inside_a_transaction_is_caught() {
    use crate::engine::fault::{Fault, FaultyEngine};
    let case = read_after_concurrent_commit();
    let (clean, stats) = sdg(&mut sqlite(), &case);
    assert!(clean.is_empty(), "{clean:?}");
    assert_eq!(stats.per_oracle["sdg"].checked, 1);

    let mut faulty = FaultyEngine::new(Box::new(sqlite()), Fault::StaleRead);
    let (found, _) = sdg(&mut faulty, &case);
    let f = found
        .iter()
        .find(|f| f.kind == "stmt-result")
        .unwrap_or_else(|| panic!("stale read not caught: {found:?}"));
    assert_eq!(f.verdict, Verdict::Violation);
    assert_eq!(f.evidence["statements"][0]["stmt"], "T1#1");
}

#[test]
fn rows_seen_only_in_the_final_state_still_order_their_readers() {
    // An upsert's inserted row is not returned (MariaDB ON DUPLICATE KEY UPDATE)
    // and a one-entry write list reads back as a number: the final state alone
    // must place the earlier SELECT before the INSERT.
    let case = kv_case(
        &[(1, 10)],
        vec![
            autocommit(vec![select("t", None)]),
            autocommit(vec![insert("t", 3, 3, 30)]),
        ],
        "1 2",
    );
    let v = vsr::instrument(&case, |_| None);
    let h = history(
        &v,
        &[Obs {
            op: 1,
            reads: vec![("t", 1, "0")],
            writes: vec![],
        }],
        &[("t", 1, "0")],
        &[],
        DbState::from([(
            "t".to_string(),
            vec![
                vec![Value::Int(1), Value::Int(0), Value::Int(1), Value::Int(10)],
                vec![Value::Int(3), Value::Int(2), Value::Int(3), Value::Int(30)],
            ],
        )]),
    );
    let g = deps::build(&v, &h).unwrap();
    assert!(
        g.deps
            .iter()
            .any(|d| d.from == 1 && d.to == 2 && d.kind == DepKind::Anti && d.rid == 3),
        "{g:?}"
    );
}

#[test]
fn a_statement_that_saw_one_row_twice_is_undecided() {
    // MariaDB REPEATABLE READ: T1's snapshot still shows row 1 under its old key
    // while T1's own update of the newer version is visible too.
    let case = kv_case(
        &[(1, 10)],
        vec![committed(vec![add("t", 1, 1), select("t", None)])],
        "1 1 1 1",
    );
    let v = vsr::instrument(&case, |_| None);
    let h = history(
        &v,
        &[Obs {
            op: 2,
            reads: vec![("t", 1, "0")],
            writes: vec![("t", 1, Some("0"), Some("0,2"))],
        }],
        &[("t", 1, "0"), ("t", 1, "0,2")],
        &[],
        DbState::from([("t".to_string(), vec![row(1, "0,2", 1, 11)])]),
    );
    let err = deps::build(&v, &h).unwrap_err();
    assert!(err.detail.contains("two versions"), "{err:?}");
}
