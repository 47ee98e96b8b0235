//! Scripted interleavings on embedded SQLite: where blocking must occur, where it
//! must not, deadlock avoidance, resumption and cancellation.

use super::*;
use crate::engine::sqlite::SqliteEngine;
use crate::engine::{Engine, WaitSignal};
use crate::model::{ErrorClass, EventKind, History, StmtRef, TxnEnd, Value};
use crate::testkit::*;

fn run(case: &crate::model::TestCase) -> History {
    let mut e = SqliteEngine::open(None).unwrap();
    e.load(case).unwrap();
    execute(&mut e, case, &ExecOptions::default()).unwrap()
}

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

fn position(h: &History, r: StmtRef, pred: impl Fn(&EventKind) -> bool) -> Option<usize> {
    h.events.iter().position(|e| e.stmt == r && pred(&e.kind))
}

fn completed(h: &History, r: StmtRef) -> Option<usize> {
    position(h, r, |k| matches!(k, EventKind::Completed { .. }))
}

#[test]
fn second_writer_blocks_until_first_commits() {
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 2, 5)]),
        ],
        "1 1 2 2 1 2",
    );
    let h = run(&case);
    let blocked = position(&h, at(2, 1), |k| matches!(k, EventKind::Blocked { .. }))
        .expect("T2's UPDATE must be reported blocked");
    let t1_commit = completed(&h, at(1, 2)).unwrap();
    let t2_update = completed(&h, at(2, 1)).unwrap();
    assert!(
        blocked < t1_commit && t1_commit < t2_update,
        "{:#?}",
        h.events
    );
    assert_eq!(h.txn_end(1), Some(TxnEnd::Committed));
    assert_eq!(h.txn_end(2), Some(TxnEnd::Committed));
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(11)));
    assert_eq!(value_of(&h.final_state, "t", 2), Some(Value::Int(25)));
    // The write list records the writing operation (op 2 = T1's UPDATE).
    let row1 = &h.final_state["t"][0];
    assert_eq!(row1[1], Value::Text("0,2".into()));
}

#[test]
fn readers_and_a_writer_never_block_in_wal() {
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), select("t", None)]),
            committed(vec![add("t", 1, 1)]),
            committed(vec![select("t", None)]),
        ],
        "1 1 2 2 3 3 1 2 3 3 1",
    );
    let h = run(&case);
    assert_eq!(h.blocked_events(), 0, "{:#?}", h.events);
    assert_eq!(h.aborts(), 0);
    // T1 keeps its snapshot: both reads see v = 10 and version "0".
    let o = h.outcome(at(1, 2)).unwrap();
    assert_eq!(o.rows, vec![vec![Value::Int(1), Value::Int(10)]]);
    assert_eq!(o.reads[0].wl, "0");
    assert!(o.reads_complete);
}

#[test]
fn lock_upgrade_after_a_read_is_refused_and_aborts() {
    // T1 reads (holds a read snapshot), T2 takes the write lock, T1 tries to
    // write: SQLite refuses at once with SQLITE_BUSY instead of deadlocking.
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), add("t", 1, 1)]),
            committed(vec![add("t", 1, 100)]),
        ],
        "1 1 2 2 1 2 1",
    );
    let h = run(&case);
    let err = h
        .outcome(at(1, 2))
        .unwrap()
        .error
        .clone()
        .expect("T1's UPDATE fails");
    assert_eq!(err.class, ErrorClass::Busy, "{err:?}");
    assert_eq!(h.txn_end(1), Some(TxnEnd::Aborted));
    assert!(position(&h, at(1, 3), |k| *k == EventKind::Skipped).is_some());
    assert_eq!(h.txn_end(2), Some(TxnEnd::Committed));
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(110)));
}

#[test]
fn autocommit_write_waits_for_the_open_writer() {
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            autocommit(vec![add("t", 2, 2), insert("t", 50, 3, 30)]),
        ],
        "1 1 2 2 1",
    );
    let h = run(&case);
    assert!(position(&h, at(2, 0), |k| matches!(k, EventKind::Blocked { .. })).is_some());
    // The insert of the same session is queued behind the blocked update.
    assert!(completed(&h, at(1, 2)).unwrap() < completed(&h, at(2, 1)).unwrap());
    let ins = h.outcome(at(2, 1)).unwrap();
    assert_eq!(ins.writes.len(), 1);
    assert_eq!(ins.writes[0].before, None);
    assert_eq!(ins.writes[0].after, Some("5".parse().unwrap()));
    assert_eq!(h.final_state["t"].len(), 3);
}

#[test]
fn rolled_back_writes_vanish_and_unblock_waiters() {
    let case = kv_case(
        &[(1, 10)],
        vec![
            (
                false,
                vec![
                    crate::model::Stmt::begin(),
                    set("t", 1, 99),
                    crate::model::Stmt::Rollback,
                ],
            ),
            committed(vec![add("t", 1, 1)]),
        ],
        "1 1 2 2 1 2",
    );
    let h = run(&case);
    assert_eq!(h.txn_end(1), Some(TxnEnd::RolledBack));
    assert_eq!(h.blocked_events(), 1);
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(11)));
    // T2's update overwrote the initial version, not T1's rolled-back one.
    let w = &h.outcome(at(2, 1)).unwrap().writes[0];
    assert_eq!(w.before, Some("0".parse().unwrap()));
}

#[test]
fn duplicate_key_fails_the_statement_only() {
    let case = kv_case(
        &[(1, 10)],
        vec![committed(vec![insert("t", 100, 1, 5), add("t", 1, 1)])],
        "1 1 1 1",
    );
    let h = run(&case);
    let err = h.outcome(at(1, 1)).unwrap().error.clone().unwrap();
    assert_eq!(err.class, ErrorClass::DuplicateKey);
    assert_eq!(h.txn_end(1), Some(TxnEnd::Committed));
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(11)));
}

#[test]
fn a_cancelled_blocked_statement_never_runs_later() {
    let case = kv_case(&[(1, 10)], vec![], "");
    let mut e = SqliteEngine::open(None).unwrap();
    e.load(&case).unwrap();
    let iso = crate::model::Isolation::Serializable;
    let mut holder = e.open_session(iso, WaitSignal::new()).unwrap();
    holder.query("BEGIN").unwrap();
    holder.query("UPDATE t SET v = 1 WHERE k = 1").unwrap();
    let signal = WaitSignal::new();
    let mut waiter = e.open_session(iso, signal.clone()).unwrap();
    let canceller = waiter.canceller();
    let worker = std::thread::spawn(move || waiter.query("UPDATE t SET v = 777 WHERE k = 1"));
    while signal.ticks() == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    canceller.cancel();
    let err = worker.join().unwrap().unwrap_err();
    assert_eq!(err.class, ErrorClass::Busy, "{err:?}");
    holder.query("COMMIT").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let state = e.final_state(&case.schema).unwrap();
    assert_eq!(value_of(&state, "t", 1), Some(Value::Int(1)));
}

#[test]
fn blocked_detection_is_fast() {
    let case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 2)]),
        ],
        "1 1 2 2 1 2",
    );
    let h = run(&case);
    let sub = h
        .events
        .iter()
        .find(|e| e.stmt == at(2, 1) && e.kind == EventKind::Submitted);
    let blk = h
        .events
        .iter()
        .find(|e| e.stmt == at(2, 1) && matches!(e.kind, EventKind::Blocked { .. }));
    let (sub, blk) = (sub.unwrap(), blk.unwrap());
    // Generous bound: detection is ~1 ms; this only guards against timer-based guessing.
    assert!(
        blk.at_us - sub.at_us < 200_000,
        "{} us",
        blk.at_us - sub.at_us
    );
    assert_eq!(value_of(&h.final_state, "t", 1), Some(Value::Int(13)));
}
