//! `INSERT ... SELECT` on every engine, through every default oracle: a child
//! inserted from the parent row a query finds, against a concurrent delete of
//! that parent, and two concurrent "next key" inserts (`COALESCE(MAX(k), 0) +
//! 1`), in both orders at every level. Whatever the engine does, the statement
//! runs (or fails with a concurrency or constraint error), its one row is
//! reported exactly when the final state has it, the declared constraints
//! hold (`integrity`), and no oracle reports a new violation.

use txfuzz::campaign::run_case;
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::finding::known::KnownIssues;
use txfuzz::model::{ErrorClass, History, Isolation, StmtRef, TestCase, Value};
use txfuzz::oracle::{CheckStats, Finding, OracleKind, Verdict};
use txfuzz::testkit::constraints::*;
use txfuzz::testkit::*;

mod common;

/// T1 deletes parent 1; T2 inserts child 6 of the parent its query finds
/// with key 1. `parent_first`: T1's DELETE runs first.
fn delete_vs_insert_select(isolation: Isolation, parent_first: bool) -> TestCase {
    let order = if parent_first {
        "1 2 1 2 1 2"
    } else {
        "1 2 2 1 2 1"
    };
    let mut case = parent_child_case(
        &[(1, 10), (2, 20)],
        &[(5, 2)],
        vec![
            committed(vec![delete_parent(1)]),
            committed(vec![insert_child_of_found_parent(102, 6, 1)]),
        ],
        order,
    );
    case.isolation = isolation;
    case
}

/// T1 and T2 each insert the next parent key, interleaved statement by
/// statement (`first`: whose INSERT runs first).
fn concurrent_next_keys(isolation: Isolation, first: u32) -> TestCase {
    let order = if first == 1 {
        "1 2 1 2 1 2"
    } else {
        "1 2 2 1 2 1"
    };
    let mut case = parent_child_case(
        &[(1, 10), (2, 20)],
        &[],
        vec![
            committed(vec![insert_next_parent(11, 100)]),
            committed(vec![insert_next_parent(12, 200)]),
        ],
        order,
    );
    case.isolation = isolation;
    case
}

/// Every default oracle, known issues marked.
fn run_all(e: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>) {
    let mut stats = CheckStats::default();
    let oracles = OracleKind::defaults();
    let case = &txfuzz::testkit::in_default_mode(case, e);
    let (h, mut f) = run_case(e, case, &oracles, &ExecOptions::default(), &mut stats).unwrap();
    KnownIssues::builtin().mark(&mut f, case, &h, e.info());
    (h, f)
}

/// The INSERT ... SELECT `r` (row id `rid` into `table`, key column at
/// final-state index 2 equal to `key` when given) ran or failed with a
/// concurrency or constraint error; it reported its row exactly when the
/// final state holds that row id.
fn insert_select_reported(h: &History, r: StmtRef, table: &str, rid: i64) {
    let o = h.outcome(r).unwrap_or_else(|| panic!("no outcome: {h:#?}"));
    if let Some(err) = &o.error {
        assert!(
            err.class.is_concurrency()
                || matches!(
                    err.class,
                    ErrorClass::ForeignKeyViolation | ErrorClass::DuplicateKey
                ),
            "{err:?}\n{h:#?}"
        );
    }
    let reported = o.writes.iter().any(|w| w.table == table && w.rid == rid);
    let stored = h.final_state[table]
        .iter()
        .any(|row| row[0] == Value::Int(rid));
    let committed = h.txn_end(r.txn) == Some(txfuzz::model::TxnEnd::Committed);
    assert_eq!(reported && committed, stored, "{h:#?}");
}

fn new_violations(f: &[Finding]) -> Vec<&Finding> {
    f.iter()
        .filter(|f| f.verdict == Verdict::Violation && f.known.is_none())
        .collect()
}

fn no_new_violation_anywhere(open: impl Fn() -> Box<dyn Engine>) {
    let levels = open().profile().isolations.clone();
    for level in levels {
        for parent_first in [true, false] {
            let case = delete_vs_insert_select(level, parent_first);
            let (h, f) = run_all(open().as_mut(), &case);
            insert_select_reported(&h, StmtRef { txn: 2, index: 1 }, "c", 102);
            let new = new_violations(&f);
            assert!(new.is_empty(), "{level} {parent_first}: {new:#?}\n{h:#?}");
        }
        for first in [1, 2] {
            let case = concurrent_next_keys(level, first);
            let (h, f) = run_all(open().as_mut(), &case);
            for (txn, rid) in [(1, 11), (2, 12)] {
                insert_select_reported(&h, StmtRef { txn, index: 1 }, "p", rid);
            }
            let new = new_violations(&f);
            assert!(new.is_empty(), "{level} {first}: {new:#?}\n{h:#?}");
        }
    }
}

/// SQLite, serial: the child copies the key the query found; the next key
/// is the maximum plus one. Both forms are checked by value here.
#[test]
fn sqlite_inserts_the_row_its_query_returns() {
    let mut case = parent_child_case(
        &[(1, 10), (2, 20)],
        &[],
        vec![committed(vec![
            insert_child_of_found_parent(102, 6, 2),
            insert_child_of_found_parent(103, 7, 9),
            insert_next_parent(11, 100),
        ])],
        "1 1 1 1 1",
    );
    case.isolation = Isolation::Serializable;
    let (h, f) = run_all(&mut SqliteEngine::open(None).unwrap(), &case);
    assert!(f.is_empty(), "{f:#?}");
    // Final-state rows: rid, wl, then the user columns.
    let children: Vec<(Value, Value)> = h.final_state["c"]
        .iter()
        .map(|r| (r[2].clone(), r[3].clone()))
        .collect();
    assert_eq!(children, [(Value::Int(6), Value::Int(2))], "{h:#?}");
    let parents: Vec<&Value> = h.final_state["p"].iter().map(|r| &r[2]).collect();
    assert_eq!(parents, [&Value::Int(1), &Value::Int(2), &Value::Int(3)]);
    let none = h.outcome(StmtRef { txn: 1, index: 2 }).unwrap();
    assert!(none.error.is_none() && none.writes.is_empty(), "{h:#?}");
}

#[test]
fn sqlite_insert_select_against_concurrent_writers() {
    no_new_violation_anywhere(|| Box::new(SqliteEngine::open(None).unwrap()));
}

#[test]
fn mariadb_insert_select_against_concurrent_writers() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    no_new_violation_anywhere(|| common::open(&url));
}

#[test]
fn postgres_insert_select_against_concurrent_writers() {
    let Some(url) = common::pg_url() else {
        return;
    };
    no_new_violation_anywhere(|| common::open(&url));
}

#[cfg(feature = "turso")]
#[test]
fn turso_insert_select_against_concurrent_writers() {
    use txfuzz::engine::turso::TursoEngine;
    for mvcc in [false, true] {
        no_new_violation_anywhere(|| Box::new(TursoEngine::open(None, mvcc).unwrap()));
    }
}
