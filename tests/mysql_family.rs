//! What must hold on every MySQL-family server `TXFUZZ_MYSQL_URL` names:
//! MariaDB 10.11 in the suite, MySQL 9.7 and MariaDB 11.8 in
//! `scripts/test-current.sh`. The write capture does not depend on the
//! order in which the server makes an UPDATE's SET assignments, and the
//! lock-wait monitor reports a wait of a transaction that has written
//! nothing (MySQL leaves it out of `SHOW ENGINE INNODB STATUS`), with its
//! blocker, and no wait where nothing conflicts.

mod common;

use txfuzz::campaign::run_case;
use txfuzz::exec::{execute, ExecOptions};
use txfuzz::finding::load_case_file;
use txfuzz::model::{EventKind, History, Isolation, StmtRef, Value};
use txfuzz::oracle::{CheckStats, OracleKind};
use txfuzz::testkit::*;

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

/// `UPDATE t SET a = a + 1, b = a WHERE k IN (SELECT k FROM s)`, then a
/// no-op `UPDATE t SET b = b` of the same rows, then a read. MySQL 9.7.4 and
/// MariaDB 11.8.9 run the UPDATE as a semi-join and make both assignments
/// on the old row (`b` gets the old `a`); MariaDB 10.11.19 makes them left
/// to right (the new `a`). Either way the capture must report exactly the
/// rows written, the no-op as matched and unchanged, and the oracles,
/// the shadow run included, must find nothing.
#[test]
fn an_update_reports_its_writes_whatever_order_the_server_assigns_in() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/assignment-order.json");
    let case = load_case_file(&path).unwrap().case().clone();
    let mut e = common::open(&url);
    let mut stats = CheckStats::default();
    let oracles = [
        OracleKind::View,
        OracleKind::Graph,
        OracleKind::Integrity,
        OracleKind::Fidelity,
    ];
    let (h, findings) = run_case(
        e.as_mut(),
        &case,
        &oracles,
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert!(findings.is_empty(), "{findings:#?}");
    let b_of_row_1 = &h.final_state["t"][0][4];
    eprintln!(
        "{} {}: b of row 1 after the UPDATE is {b_of_row_1:?} (1: every assignment on the old row; 2: left to right)",
        e.info().name,
        e.info().version
    );
    let update = h.outcome(at(1, 0)).unwrap();
    let mut written: Vec<i64> = update.writes.iter().map(|w| w.rid).collect();
    written.sort();
    assert_eq!(written, vec![1, 2], "{update:#?}");
    assert!(update.writes_complete, "{update:#?}");
    let no_op = h.outcome(at(1, 1)).unwrap();
    assert!(no_op.writes.is_empty(), "{no_op:#?}");
    assert_eq!(no_op.unchanged.len(), 2, "{no_op:#?}");
    // A list of one entry reads back as a number.
    let lists: Vec<String> = h.final_state["t"]
        .iter()
        .map(|r| match &r[1] {
            Value::Text(s) => s.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(lists, vec!["0,1", "0,1", "Int(0)"]);
}

fn run(url: &str, case: &txfuzz::model::TestCase) -> History {
    let mut e = common::open(url);
    e.load(case).unwrap();
    execute(e.as_mut(), case, &ExecOptions::default()).unwrap()
}

/// T1 holds row 1's lock; T2, which has written nothing, waits for it in a
/// locking read: reported blocked, by T1.
#[test]
fn a_locking_read_that_waits_before_any_write_names_its_blocker() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![lock_where_v("t", 10)]),
        ],
        "1 1 2 2 1 2",
    );
    case.isolation = Isolation::RepeatableRead;
    let h = run(&url, &case);
    let blocked = h
        .events
        .iter()
        .find(|e| e.stmt == at(2, 1) && matches!(e.kind, EventKind::Blocked { .. }))
        .unwrap_or_else(|| panic!("T2's locking read must be reported blocked: {h:#?}"));
    assert_eq!(blocked.kind, EventKind::Blocked { blocker: Some(1) });
}

/// Statements on different rows never wait: no blocked event at all.
#[test]
fn statements_on_different_rows_are_never_reported_waiting() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1), select("t", None)]),
            committed(vec![add("t", 2, 1), select("t", Some(1))]),
        ],
        "1 2 1 2 1 2 1 2",
    );
    case.isolation = Isolation::RepeatableRead;
    let h = run(&url, &case);
    assert_eq!(h.blocked_events(), 0, "{:#?}", h.events);
    assert_eq!(h.aborts(), 0);
}

/// T1 share-locks row 1 (and only it); T2's UPDATE of it waits; T1 then
/// updates the row itself (an exclusive lock over its shared one while
/// T2's request waits). MySQL 9.7 re-creates T2's waiting lock in T1's
/// session then, and lists T2's wait under T1's thread. T3 commits
/// elsewhere, and the executor asks the monitor to re-confirm T2's wait; a
/// monitor that finds sessions by the thread that created a lock never
/// does, and the case stalls for the whole hang timeout. Both ways:
/// T2 is reported blocked by T1, and the case ends well inside the timeout
/// (MariaDB 10.11 takes T1's upgrade behind T2's request for a deadlock and
/// rolls one back; MySQL 9.7 and MariaDB 11.8 grant it).
#[test]
fn a_wait_on_a_row_its_holder_rewrites_is_still_reported() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![share_key("t", 1), set_null("t", 1)]),
            committed(vec![add("t", 1, 5)]),
            committed(vec![add("t", 2, 1)]),
        ],
        "1 1 2 2 1 3 3 3 1 2",
    );
    case.isolation = Isolation::RepeatableRead;
    let mut e = common::open(&url);
    e.load(&case).unwrap();
    let opts = ExecOptions {
        hang_timeout: std::time::Duration::from_secs(20),
        ..ExecOptions::default()
    };
    let started = std::time::Instant::now();
    let h = execute(e.as_mut(), &case, &opts).unwrap();
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(8), "took {took:?}");
    let blocked = h
        .events
        .iter()
        .find(|e| e.stmt == at(2, 1) && matches!(e.kind, EventKind::Blocked { .. }))
        .unwrap_or_else(|| panic!("T2's UPDATE must be reported blocked: {h:#?}"));
    assert_eq!(blocked.kind, EventKind::Blocked { blocker: Some(1) });
}

/// `SELECT k, v FROM t WHERE k = key FOR SHARE`
fn share_key(t: &str, key: i64) -> txfuzz::model::Stmt {
    let mut s = select(t, Some(key));
    if let txfuzz::model::Stmt::Select(sel) = &mut s {
        sel.lock = Some(txfuzz::model::LockMode::ForShare);
    }
    s
}

/// `UPDATE t SET v = NULL WHERE k = key`
fn set_null(t: &str, key: i64) -> txfuzz::model::Stmt {
    let mut s = set(t, key, 0);
    if let txfuzz::model::Stmt::Update(u) = &mut s {
        u.assignments[0].value = txfuzz::model::Expr::Lit(Value::Null);
    }
    s
}
