//! The `view` oracle on SQLite and on hand-edited histories: correct runs give
//! no finding, fault-injected engines and tampered histories are caught, and a
//! schedule the model did not predict is undecided, never a violation.

use txfuzz::campaign::run_case;
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::{execute, ExecOptions};
use txfuzz::model::{ErrorClass, EventKind, History, OnConflict, Stmt, StmtRef, TestCase, Value};
use txfuzz::oracle::{view, CheckStats, Finding, OracleCounts, OracleKind, Verdict};
use txfuzz::testkit::*;

fn engine(fault: Option<Fault>) -> Box<dyn Engine> {
    let e: Box<dyn Engine> = Box::new(SqliteEngine::open(None).unwrap());
    match fault {
        Some(f) => Box::new(FaultyEngine::new(e, f)),
        None => e,
    }
}

/// Runs `case` and the `view` oracle; returns the history, findings and counts.
fn run_view(fault: Option<Fault>, case: &TestCase) -> (History, Vec<Finding>, OracleCounts) {
    let mut e = engine(fault);
    let mut stats = CheckStats::default();
    let (h, findings) = run_case(
        e.as_mut(),
        case,
        &[OracleKind::View],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (h, findings, stats.oracle("view").clone())
}

/// Runs `case`, lets `edit` change the history, then runs the oracle on it.
fn check_edited(case: &TestCase, edit: impl FnOnce(&mut History)) -> (Vec<Finding>, OracleCounts) {
    let mut e = engine(None);
    e.load(case).unwrap();
    let mut h = execute(e.as_mut(), case, &ExecOptions::default()).unwrap();
    edit(&mut h);
    let mut stats = CheckStats::default();
    let f = view::check(e.as_mut(), case, &h, &ExecOptions::default(), &mut stats).unwrap();
    (f, stats.oracle("view").clone())
}

fn kinds(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.kind.as_str()).collect()
}

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

/// T1 reads, T2 updates and commits, T1 reads again (snapshot: same rows), T1 commits.
fn repeatable_reads() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![select("t", None), select("t", None)]),
            committed(vec![add("t", 1, 5)]),
        ],
        "1 1 2 2 2 1 1",
    )
}

/// T1 writes and reads its own write while T2 (open) reads: own writes are
/// visible, others' uncommitted ones are not.
fn own_and_foreign_writes() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![
                add("t", 1, 1),
                select("t", None),
                insert("t", 3, 3, 30),
            ]),
            committed(vec![select("t", None), select("t", Some(1))]),
        ],
        "1 2 2 1 2 1 1 2 1 2",
    )
}

/// T1 reads (snapshot), T2 writes and commits, T1 writes: SQLite refuses the
/// stale writer (BUSY_SNAPSHOT), which the model predicts.
fn stale_writer() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", None), add("t", 1, 1)]),
            committed(vec![add("t", 1, 5)]),
        ],
        "1 1 2 2 2 1 1",
    )
}

/// T1 writes; T2 (autocommit) writes the same row while T1 is open: it waits
/// for T1's write lock, then runs on T1's committed version.
fn blocked_autocommit_writer() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1), select("t", None)]),
            autocommit(vec![add("t", 1, 5), select("t", None)]),
        ],
        "1 1 2 1 1 2",
    )
}

/// Savepoints, deletes, inserts and a rollback.
fn savepoints_and_rollbacks() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20), (3, 30)],
        vec![
            committed(vec![
                delete("t", 2),
                Stmt::Savepoint("s1".into()),
                set("t", 1, 99),
                insert("t", 4, 4, 40),
                Stmt::RollbackTo("s1".into()),
                select("t", None),
            ]),
            (
                false,
                vec![
                    Stmt::begin(),
                    add("t", 3, 1),
                    select("t", None),
                    Stmt::Rollback,
                ],
            ),
            autocommit(vec![select("t", None)]),
        ],
        "1 1 1 1 1 1 1 1 2 2 3 2 2",
    )
}

fn clean_cases() -> Vec<(&'static str, TestCase)> {
    let mut ignore = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![
                insert("t", 2, 1, 11),
                insert("t", 3, 2, 12),
                select("t", None),
            ]),
            autocommit(vec![select("t", None)]),
        ],
        "1 1 1 1 1 2",
    );
    if let Stmt::Insert(i) = &mut ignore.txns[0].stmts[1].stmt {
        i.on_conflict = OnConflict::Ignore;
    }
    vec![
        ("repeatable_reads", repeatable_reads()),
        ("own_and_foreign_writes", own_and_foreign_writes()),
        ("stale_writer", stale_writer()),
        ("blocked_autocommit_writer", blocked_autocommit_writer()),
        ("savepoints_and_rollbacks", savepoints_and_rollbacks()),
        ("duplicate_key_and_ignore", ignore),
    ]
}

#[test]
fn correct_sqlite_runs_have_no_findings_and_are_decided() {
    for (name, case) in clean_cases() {
        let (h, f, counts) = run_view(None, &case);
        assert!(f.is_empty(), "{name}: {f:#?}\n{h:#?}");
        assert_eq!(counts.checked, 1, "{name}: {counts:?}\n{h:#?}");
        assert_eq!(counts.undecided, 0, "{name}: {counts:?}");
    }
}

#[test]
fn the_stale_writer_is_refused_as_predicted() {
    let (h, _, _) = run_view(None, &stale_writer());
    let err = h.outcome(at(1, 2)).and_then(|o| o.error.clone());
    assert_eq!(err.map(|e| e.class), Some(ErrorClass::Busy), "{h:#?}");
}

#[test]
fn single_transaction_cases_are_discarded() {
    let case = kv_case(
        &[(1, 10)],
        vec![committed(vec![select("t", None)])],
        "1 1 1",
    );
    let (_, f, counts) = run_view(None, &case);
    assert!(f.is_empty());
    assert_eq!(counts.discarded.get("single-transaction"), Some(&1));
}

#[test]
fn a_wrong_result_is_a_violation() {
    let (f, _) = check_edited(&repeatable_reads(), |h| {
        // T1's second SELECT "sees" T2's committed update: a non-repeatable read.
        let o = h.outcomes.iter_mut().find(|o| o.stmt == at(1, 2)).unwrap();
        o.outcome.rows[0][1] = Value::Int(15);
    });
    assert_eq!(kinds(&f), vec!["result"], "{f:#?}");
    assert_eq!(f[0].verdict, Verdict::Violation);
}

#[test]
fn a_wrong_final_state_is_a_violation() {
    let (f, _) = check_edited(&own_and_foreign_writes(), |h| {
        h.final_state.get_mut("t").unwrap()[0][3] = Value::Int(12345);
    });
    assert_eq!(kinds(&f), vec!["final-state"], "{f:#?}");
}

#[test]
fn a_missed_abort_is_a_violation() {
    // SQLite refused T1's stale write; pretend it succeeded (a lost update).
    let (f, _) = check_edited(&stale_writer(), |h| {
        let o = h.outcomes.iter_mut().find(|o| o.stmt == at(1, 2)).unwrap();
        o.outcome.error = None;
    });
    assert_eq!(kinds(&f), vec!["missed-abort"], "{f:#?}");
}

#[test]
fn a_missed_block_is_a_violation() {
    // T2's autocommit write waited for T1's write lock; pretend it did not wait
    // and completed before T1 committed.
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1), select("t", None)]),
            autocommit(vec![add("t", 2, 5)]),
        ],
        "1 1 2 1 1",
    );
    let (f, _) = check_edited(&case, |h| {
        assert!(h
            .events
            .iter()
            .any(|e| e.stmt == at(2, 0) && matches!(e.kind, EventKind::Blocked { .. })));
        // Move T2's completion right after its submission, unblocked.
        let done = h
            .events
            .iter()
            .position(|e| e.stmt == at(2, 0) && matches!(e.kind, EventKind::Completed { .. }))
            .unwrap();
        let mut ev = h.events.remove(done);
        ev.kind = EventKind::Completed {
            ok: true,
            resumed: false,
        };
        h.events
            .retain(|e| !(e.stmt == at(2, 0) && matches!(e.kind, EventKind::Blocked { .. })));
        let sub = h
            .events
            .iter()
            .position(|e| e.stmt == at(2, 0) && e.kind == EventKind::Submitted)
            .unwrap();
        h.events.insert(sub + 1, ev);
    });
    assert_eq!(kinds(&f), vec!["missed-block"], "{f:#?}");
}

#[test]
fn an_unpredicted_block_is_undecided_not_a_violation() {
    // Claim that T1's first SELECT waited for a lock (SQLite readers never wait).
    let (f, counts) = check_edited(&repeatable_reads(), |h| {
        let sub = h
            .events
            .iter()
            .position(|e| e.stmt == at(1, 1) && e.kind == EventKind::Submitted)
            .unwrap();
        let mut ev = h.events[sub].clone();
        ev.kind = EventKind::Blocked { blocker: Some(2) };
        h.events.insert(sub + 1, ev);
    });
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(counts.undecided, 1);
    assert_eq!(counts.undecided_by.get("unpredicted-block"), Some(&1));
}

#[test]
fn an_unpredicted_abort_is_undecided_not_a_violation() {
    let (f, counts) = check_edited(&repeatable_reads(), |h| {
        let o = h.outcomes.iter_mut().find(|o| o.stmt == at(2, 1)).unwrap();
        o.outcome.error = Some(txfuzz::model::StmtError {
            class: ErrorClass::Busy,
            code: "SQLITE_BUSY".into(),
            message: "database is locked".into(),
        });
    });
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(counts.undecided, 1);
    assert_eq!(counts.undecided_by.get("unpredicted-busy"), Some(&1));
}

/// T1 updates k=1 and stays open while T2 reads it; T1 then reads its own write.
fn concurrent_write_and_reads() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![
                select("t", None),
                add("t", 1, 5),
                select("t", Some(1)),
            ]),
            committed(vec![select("t", None), select("t", Some(1))]),
        ],
        "1 2 1 2 1 2 1 1 2 2",
    )
}

#[test]
fn a_dirty_read_is_found() {
    let case = concurrent_write_and_reads();
    let (h, f, _) = run_view(Some(Fault::DirtyRead), &case);
    assert_eq!(kinds(&f), vec!["result"], "{f:#?}\n{h:#?}");
    assert!(f[0].evidence["stmt"] == "T2#2", "{f:#?}");
    let (_, clean, counts) = run_view(None, &case);
    assert!(clean.is_empty(), "{clean:#?}");
    assert_eq!(counts.checked, 1);
}

/// A statement of a transaction that later rolls back is judged too.
#[test]
fn a_dirty_read_in_a_transaction_that_rolls_back_is_found() {
    let mut case = concurrent_write_and_reads();
    let t2 = &mut case.txns[1];
    let last = t2.stmts.len() - 1;
    t2.stmts[last].stmt = Stmt::Rollback;
    let (h, f, _) = run_view(Some(Fault::DirtyRead), &case);
    assert_eq!(kinds(&f), vec!["result"], "{f:#?}\n{h:#?}");
    assert!(f[0].evidence["stmt"] == "T2#2", "{f:#?}");
    let (_, clean, counts) = run_view(None, &case);
    assert!(clean.is_empty(), "{clean:#?}");
    assert_eq!(counts.checked, 1);
}

#[test]
fn a_missed_own_write_is_found() {
    let case = concurrent_write_and_reads();
    let (h, f, _) = run_view(Some(Fault::MissedOwnWrite), &case);
    assert_eq!(kinds(&f), vec!["result"], "{f:#?}\n{h:#?}");
    assert!(f[0].evidence["stmt"] == "T1#3", "{f:#?}");
}

#[test]
fn sqlite_snapshot_is_taken_at_the_first_statement_not_at_begin() {
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), select("t", Some(1))]),
            autocommit(vec![set("t", 1, 5), set("t", 1, 6)]),
        ],
        "1 2 1 2 1 1",
    );
    let (h, f, counts) = run_view(None, &case);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(counts.checked, 1);
    let v = |i| {
        h.outcome(at(1, i))
            .and_then(|o| o.rows.first()?.get(1).cloned())
    };
    assert_eq!(v(1), Some(Value::Int(5)), "{h:#?}");
    assert_eq!(v(2), Some(Value::Int(5)), "{h:#?}");
}
