//! The `wss` oracle both ways: fault-injected engines must be caught, the real
//! SQLite engine on the same scripted interleavings must not be reported.

use txfuzz::campaign::run_case;
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::{Engine, EngineError, EngineProfile};
use txfuzz::exec::{execute, ExecOptions};
use txfuzz::model::{Stmt, StmtRef, TestCase};
use txfuzz::oracle::wss::{serial_order, Unit};
use txfuzz::oracle::{CheckStats, Finding, OracleKind, Verdict};
use txfuzz::testkit::*;

fn engine(fault: Option<Fault>) -> Box<dyn Engine> {
    let e: Box<dyn Engine> = Box::new(SqliteEngine::open(None).unwrap());
    match fault {
        Some(f) => Box::new(FaultyEngine::new(e, f)),
        None => e,
    }
}

fn wss(fault: Option<Fault>, case: &TestCase) -> Vec<Finding> {
    let mut e = engine(fault);
    let mut stats = CheckStats::default();
    let (_, findings) = run_case(
        e.as_mut(),
        case,
        &[OracleKind::Wss],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert_eq!(stats.replays, 2);
    findings
}

fn kinds(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.kind.as_str()).collect()
}

/// T1 and T2 overlap; T1 updates k=1, T2 updates k=1 after T1 committed.
fn overlapping_updates() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 5), select("t", None)]),
        ],
        "1 2 1 1 2 2 2",
    )
}

/// T1 begins, T2 updates and commits, then T1's first statement updates the same row.
fn update_after_concurrent_commit() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1), select("t", None)]),
            committed(vec![add("t", 1, 5)]),
        ],
        "1 2 2 2 1 1 1",
    )
}

#[test]
fn clean_sqlite_has_no_findings() {
    assert!(wss(None, &overlapping_updates()).is_empty());
    assert!(wss(None, &update_after_concurrent_commit()).is_empty());
}

#[test]
fn lost_write_is_found() {
    let f = wss(Some(Fault::LoseWrite), &overlapping_updates());
    let k = kinds(&f);
    assert!(k.contains(&"tx-final-state"), "{f:#?}");
    assert!(k.contains(&"stmt-final-state"), "{f:#?}");
    // T2's SELECT at SERIALIZABLE saw the state without T1's write.
    assert!(k.contains(&"tx-read-result"), "{f:#?}");
    assert!(f
        .iter()
        .all(|f| f.oracle == "wss" && f.verdict == Verdict::Violation));
}

#[test]
fn stale_update_is_found() {
    let f = wss(Some(Fault::StaleUpdate), &update_after_concurrent_commit());
    assert!(kinds(&f).contains(&"tx-final-state"), "{f:#?}");
    let diff = &f[0].evidence["tables"]["t"];
    assert!(diff["only_in_actual"].to_string().contains("11"), "{diff}");
    assert!(
        diff["only_in_expected"].to_string().contains("16"),
        "{diff}"
    );
}

#[test]
fn serial_order_is_commit_order_with_readers_at_their_snapshot() {
    // T1 reads first, T2 writes and commits, T1 reads again and commits last.
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", None), select("t", None)]),
            committed(vec![add("t", 1, 1)]),
        ],
        "1 1 2 2 2 1 1",
    );
    let mut e = engine(None);
    e.load(&case).unwrap();
    let h = execute(e.as_mut(), &case, &ExecOptions::default()).unwrap();
    let sqlite = txfuzz::engine::sqlite::profile(&Default::default());
    assert_eq!(
        serial_order(&case, &h, &sqlite),
        vec![Unit::Txn(1), Unit::Txn(2)]
    );
    let commit_order = EngineProfile {
        read_only_at_snapshot: false,
        ..sqlite
    };
    assert_eq!(
        serial_order(&case, &h, &commit_order),
        vec![Unit::Txn(2), Unit::Txn(1)]
    );
    // And the oracle agrees with the engine: no finding.
    assert!(wss(None, &case).is_empty());
}

#[test]
fn rollbacks_and_autocommit_statements_take_their_place() {
    let case = kv_case(
        &[(1, 10)],
        vec![
            (false, vec![Stmt::begin(), set("t", 1, 99), Stmt::Rollback]),
            autocommit(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 2)]),
        ],
        "1 1 2 1 3 3 3",
    );
    let mut e = engine(None);
    e.load(&case).unwrap();
    let h = execute(e.as_mut(), &case, &ExecOptions::default()).unwrap();
    let order = serial_order(
        &case,
        &h,
        &txfuzz::engine::sqlite::profile(&Default::default()),
    );
    assert_eq!(
        order,
        vec![Unit::Autocommit(StmtRef { txn: 2, index: 0 }), Unit::Txn(3)]
    );
    assert!(wss(None, &case).is_empty());
}

#[test]
fn rollback_to_savepoint_skips_statement_level() {
    let case = kv_case(
        &[(1, 10)],
        vec![(
            false,
            vec![
                Stmt::begin(),
                Stmt::Savepoint("sp1".into()),
                add("t", 1, 1),
                Stmt::RollbackTo("sp1".into()),
                Stmt::Commit,
            ],
        )],
        "1 1 1 1 1",
    );
    let mut e = engine(None);
    let mut stats = CheckStats::default();
    let (h, f) = run_case(
        e.as_mut(),
        &case,
        &[OracleKind::Wss],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!((stats.replays, stats.undecided), (1, 1));
    assert_eq!(
        value_of(&h.final_state, "t", 1),
        Some(txfuzz::model::Value::Int(10))
    );
}

#[test]
fn statements_resumed_by_one_release_may_serialise_in_either_order() {
    use txfuzz::model::{EventKind, History, Isolation, StmtOutcome, TxnOutcome};
    use txfuzz::oracle::wss::candidate_orders;
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1)]),
            autocommit(vec![add("t", 1, 2)]),
            autocommit(vec![add("t", 1, 3)]),
        ],
        "1 1 2 3 1",
    );
    let r = |txn, index| StmtRef { txn, index };
    let ev = |stmt, kind| txfuzz::model::Event {
        stmt,
        kind,
        at_us: 0,
    };
    let done = |resumed| EventKind::Completed { ok: true, resumed };
    let events = vec![
        ev(r(1, 0), EventKind::Submitted),
        ev(r(1, 0), done(false)),
        ev(r(1, 1), EventKind::Submitted),
        ev(r(1, 1), done(false)),
        ev(r(2, 0), EventKind::Submitted),
        ev(r(2, 0), EventKind::Blocked { blocker: Some(1) }),
        ev(r(3, 0), EventKind::Submitted),
        ev(r(3, 0), EventKind::Blocked { blocker: Some(1) }),
        ev(r(1, 2), EventKind::Submitted),
        ev(r(1, 2), done(false)),
        ev(r(2, 0), done(true)),
        ev(r(3, 0), done(true)),
    ];
    let outcomes = [r(1, 0), r(1, 1), r(1, 2), r(2, 0), r(3, 0)]
        .iter()
        .map(|&stmt| StmtOutcome {
            stmt,
            op: 0,
            outcome: Default::default(),
        })
        .collect();
    let h = History {
        isolation: Isolation::Serializable,
        events,
        outcomes,
        txns: vec![
            TxnOutcome {
                txn: 1,
                end: Some(txfuzz::model::TxnEnd::Committed),
            },
            TxnOutcome { txn: 2, end: None },
            TxnOutcome { txn: 3, end: None },
        ],
        final_state: Default::default(),
        final_state_error: None,
    };
    let (a, b) = (Unit::Autocommit(r(2, 0)), Unit::Autocommit(r(3, 0)));
    let orders = candidate_orders(
        &case,
        &h,
        &txfuzz::engine::sqlite::profile(&Default::default()),
    )
    .unwrap();
    assert_eq!(
        orders,
        vec![vec![Unit::Txn(1), a, b], vec![Unit::Txn(1), b, a]]
    );
    // A submission between the two completions orders them.
    let mut h2 = h.clone();
    h2.events.insert(11, ev(r(1, 2), EventKind::Submitted));
    assert_eq!(
        candidate_orders(
            &case,
            &h2,
            &txfuzz::engine::sqlite::profile(&Default::default())
        )
        .map(|o| o.len()),
        Some(1)
    );
}

/// Five statements resumed by one release have 120 orders: more than are
/// tried, so the case is undecided rather than judged on the first 24.
#[test]
fn too_many_resume_orders_leave_the_case_undecided() {
    use txfuzz::model::{EventKind, History, Isolation, StmtOutcome, TxnEnd, TxnOutcome};
    use txfuzz::oracle::wss::candidate_orders;
    let mut txns = vec![committed(vec![add("t", 1, 1)])];
    txns.extend((0..5).map(|i| autocommit(vec![add("t", 1, i + 2)])));
    let case = kv_case(&[(1, 10)], txns, "1 1 2 3 4 5 6 1");
    let r = |txn, index| StmtRef { txn, index };
    let ev = |stmt, kind| txfuzz::model::Event {
        stmt,
        kind,
        at_us: 0,
    };
    let done = |resumed| EventKind::Completed { ok: true, resumed };
    let mut events = vec![
        ev(r(1, 0), EventKind::Submitted),
        ev(r(1, 0), done(false)),
        ev(r(1, 1), EventKind::Submitted),
        ev(r(1, 1), done(false)),
    ];
    for t in 2..=6 {
        events.push(ev(r(t, 0), EventKind::Submitted));
        events.push(ev(r(t, 0), EventKind::Blocked { blocker: Some(1) }));
    }
    events.push(ev(r(1, 2), EventKind::Submitted));
    events.push(ev(r(1, 2), done(false)));
    events.extend((2..=6).map(|t| ev(r(t, 0), done(true))));
    let mut refs = vec![r(1, 0), r(1, 1), r(1, 2)];
    refs.extend((2..=6).map(|t| r(t, 0)));
    let h = History {
        isolation: Isolation::Serializable,
        events,
        outcomes: refs
            .into_iter()
            .map(|stmt| StmtOutcome {
                stmt,
                op: 0,
                outcome: Default::default(),
            })
            .collect(),
        txns: std::iter::once(TxnOutcome {
            txn: 1,
            end: Some(TxnEnd::Committed),
        })
        .chain((2..=6).map(|txn| TxnOutcome { txn, end: None }))
        .collect(),
        final_state: Default::default(),
        final_state_error: None,
    };
    let profile = txfuzz::engine::sqlite::profile(&Default::default());
    assert_eq!(candidate_orders(&case, &h, &profile), None);
    // Four resumed statements (24 orders) are still judged.
    let mut four = h.clone();
    four.events.pop();
    assert_eq!(
        candidate_orders(&case, &four, &profile).map(|o| o.len()),
        Some(24)
    );
}

/// SQLite whose final-state read after the judged run's (the first after a
/// load) fails as a server that stopped answering does: a replay's.
struct UnreadReplayState {
    inner: SqliteEngine,
    reads_since_load: u32,
}

impl Engine for UnreadReplayState {
    fn info(&self) -> &txfuzz::model::EngineInfo {
        self.inner.info()
    }
    fn dialect(&self) -> txfuzz::sql::Dialect {
        self.inner.dialect()
    }
    fn profile(&self) -> &EngineProfile {
        self.inner.profile()
    }
    fn load_as(&mut self, case: &TestCase, layout: txfuzz::sql::Layout) -> Result<(), EngineError> {
        self.reads_since_load = 0;
        self.inner.load_as(case, layout)
    }
    fn reset(&mut self) -> Result<(), EngineError> {
        self.inner.reset()
    }
    fn open_session(
        &mut self,
        isolation: txfuzz::model::Isolation,
        signal: std::sync::Arc<txfuzz::engine::WaitSignal>,
    ) -> Result<Box<dyn txfuzz::engine::Session>, EngineError> {
        self.inner.open_session(isolation, signal)
    }
    fn final_state(
        &mut self,
        schema: &txfuzz::model::Schema,
    ) -> Result<txfuzz::model::DbState, EngineError> {
        self.reads_since_load += 1;
        if self.reads_since_load > 1 {
            return Err(EngineError::Hung("no answer within 2s (deadline)".into()));
        }
        self.inner.final_state(schema)
    }
}

/// A replay whose final state could not be read (the server stopped
/// answering) is the server's failure, the case's `crash:hang` finding, not
/// a comparison: its final state, empty, used to differ from the actual one
/// (`wss:stmt-final-state` on PostgreSQL while `server_faults` stopped the
/// admin connection's backend).
#[test]
fn a_replay_whose_final_state_is_unread_is_the_servers_failure_not_a_finding() {
    let mut e = UnreadReplayState {
        inner: SqliteEngine::open(None).unwrap(),
        reads_since_load: 0,
    };
    let (_, findings) = run_case(
        &mut e,
        &overlapping_updates(),
        &[OracleKind::Wss],
        &ExecOptions::default(),
        &mut CheckStats::default(),
    )
    .unwrap();
    let kinds: Vec<String> = findings
        .iter()
        .map(|f| format!("{}:{}", f.oracle, f.kind))
        .collect();
    assert_eq!(kinds, ["crash:hang"], "{findings:#?}");
}
