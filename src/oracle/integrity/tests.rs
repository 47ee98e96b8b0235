//! The integrity checks, both ways per kind: a SQLite run of a concurrent
//! parent delete / child insert (consistent: no finding), the same history
//! changed by hand in each way that breaks a constraint (found), and reads
//! that return a key twice.

use super::*;
use crate::engine::sqlite::SqliteEngine;
use crate::exec::{execute, ExecOptions};
use crate::model::{Outcome, RowVersion, Stmt, StmtOutcome, WriteList};
use crate::testkit::constraints::*;
use crate::testkit::*;

/// T1 deletes parent 1 while T2 inserts a child of parent 1: SQLite runs
/// them one after the other, so T2's insert fails its foreign-key check.
fn delete_vs_insert() -> TestCase {
    parent_child_case(
        &[(1, 10), (2, 20)],
        &[(5, 2)],
        vec![
            committed(vec![delete_parent(1)]),
            committed(vec![insert_child(102, 6, 1)]),
        ],
        "1 2 1 2 1 2",
    )
}

fn sqlite_run(case: &TestCase) -> (SqliteEngine, History) {
    let mut e = SqliteEngine::open(None).unwrap();
    e.load(case).unwrap();
    let h = execute(&mut e, case, &ExecOptions::default()).unwrap();
    (e, h)
}

fn rules() -> KeyRules {
    KeyRules {
        nulls_distinct: true,
        one_snapshot: true,
    }
}

fn findings(e: &mut SqliteEngine, case: &TestCase, h: &History) -> Vec<Finding> {
    check(Some(e), rules(), case, h).findings
}

fn kinds(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.kind.as_str()).collect()
}

fn evidence(f: &Finding) -> Evidence {
    serde_json::from_value(f.evidence.clone()).unwrap()
}

/// A final-state row `[rid, wl, values...]`.
fn row(rid: i64, wl: &str, values: &[Value]) -> Vec<Value> {
    let mut r = vec![Value::Int(rid), Value::Text(wl.into())];
    r.extend_from_slice(values);
    r
}

fn i(v: i64) -> Value {
    Value::Int(v)
}

const N: Value = Value::Null;

#[test]
fn a_serialised_delete_and_insert_leave_no_finding() {
    let case = delete_vs_insert();
    let (mut e, h) = sqlite_run(&case);
    let insert = h.outcome(StmtRef { txn: 2, index: 1 }).unwrap();
    assert_eq!(
        insert.error.as_ref().map(|e| e.class),
        Some(crate::model::ErrorClass::ForeignKeyViolation),
        "{h:#?}"
    );
    assert_eq!(findings(&mut e, &case, &h), vec![]);
}

#[test]
fn an_orphan_child_names_its_writer_and_the_parent_delete() {
    let case = delete_vs_insert();
    let (mut e, mut h) = sqlite_run(&case);
    // As if T2's insert (op 5) had passed its check: the row is committed.
    h.final_state
        .get_mut("c")
        .unwrap()
        .push(row(102, "5", &[i(6), i(1), N]));
    h.outcomes
        .iter_mut()
        .find(|o| o.op == 5)
        .unwrap()
        .outcome
        .error = None;
    let f = findings(&mut e, &case, &h);
    assert_eq!(kinds(&f), ["foreign-key"], "{f:#?}");
    let ev = evidence(&f[0]);
    assert_eq!(ev.missing_parent_keys, vec![vec![i(1)]]);
    assert_eq!(ev.rows.len(), 1);
    assert_eq!(
        ev.rows[0].writers[0].stmt,
        Some(StmtRef { txn: 2, index: 1 })
    );
    assert!(ev.rows[0].writers[0].committed);
    let delete = StmtRef { txn: 1, index: 1 };
    assert_eq!(
        ev.parent_removed_by
            .iter()
            .map(|w| w.stmt)
            .collect::<Vec<_>>(),
        [Some(delete)]
    );
    assert!(
        f[0].summary
            .contains("parent key removed (or possibly removed) by T1#1"),
        "{}",
        f[0].summary
    );
    assert!(f[0].involved.contains(&delete));
}

#[test]
fn a_case_whose_initial_rows_break_a_key_is_not_judged() {
    let mut case = delete_vs_insert();
    let (mut e, mut h) = sqlite_run(&case);
    h.final_state
        .get_mut("c")
        .unwrap()
        .push(row(103, "0", &[i(7), i(9), N]));
    assert_eq!(kinds(&findings(&mut e, &case, &h)), ["foreign-key"]);
    // The same orphan in the initial rows (a loader without checks took it).
    case.data[1].rows.push(crate::model::Row {
        rid: 103,
        values: vec![i(7), i(9), N],
    });
    let out = check(Some(&mut e), rules(), &case, &h);
    assert!(out.initial_state_broken);
    assert_eq!(out.findings, vec![]);
}

#[test]
fn a_null_foreign_key_is_not_checked() {
    let case = delete_vs_insert();
    let (mut e, mut h) = sqlite_run(&case);
    h.final_state
        .get_mut("c")
        .unwrap()
        .push(row(103, "0", &[i(7), N, N]));
    assert_eq!(findings(&mut e, &case, &h), vec![]);
}

#[test]
fn rows_sharing_a_key_are_a_unique_finding_unless_the_key_has_a_null() {
    let case = delete_vs_insert();
    let (mut e, mut h) = sqlite_run(&case);
    let c = h.final_state.get_mut("c").unwrap();
    c.push(row(103, "0", &[i(7), i(2), N]));
    c.push(row(104, "0", &[i(8), i(2), N]));
    assert_eq!(findings(&mut e, &case, &h), vec![], "NULLs are distinct");
    let c = h.final_state.get_mut("c").unwrap();
    c[1][4] = i(3);
    c[2][4] = i(3);
    c.push(row(105, "0", &[i(7), i(2), N]));
    let f = findings(&mut e, &case, &h);
    assert_eq!(kinds(&f), ["unique", "unique"], "{f:#?}");
    assert_eq!(evidence(&f[0]).constraint, "PRIMARY KEY (k)");
    assert_eq!(evidence(&f[1]).constraint, "UNIQUE (u)");
    assert_eq!(evidence(&f[1]).rows.len(), 2);
    // With NULLs equal (no engine txfuzz targets), the NULL keys clash too.
    c_nulls_equal(&case, &h);
}

fn c_nulls_equal(case: &TestCase, h: &History) {
    let mut h = h.clone();
    let c = h.final_state.get_mut("c").unwrap();
    c.retain(|r| r[0] != i(105));
    c[1][4] = N;
    c[2][4] = N;
    let f = check(
        None,
        KeyRules {
            nulls_distinct: false,
            ..rules()
        },
        case,
        &h,
    )
    .findings;
    assert_eq!(kinds(&f), ["unique"], "{f:#?}");
}

#[test]
fn a_null_in_a_not_null_column_is_found() {
    let case = delete_vs_insert();
    let (mut e, mut h) = sqlite_run(&case);
    h.final_state.get_mut("p").unwrap()[0][2] = N;
    let f = findings(&mut e, &case, &h);
    // The child of parent 2 lost its parent too.
    assert_eq!(kinds(&f), ["not-null", "foreign-key"], "{f:#?}");
    assert_eq!(evidence(&f[0]).constraint, "k NOT NULL");
}

#[test]
fn the_engine_evaluates_check_constraints() {
    let case = delete_vs_insert();
    let (mut e, mut h) = sqlite_run(&case);
    h.final_state.get_mut("p").unwrap()[0][3] = N;
    assert_eq!(findings(&mut e, &case, &h), vec![], "NULL passes a CHECK");
    h.final_state.get_mut("p").unwrap()[0][3] = i(-1000);
    let f = findings(&mut e, &case, &h);
    assert_eq!(kinds(&f), ["check"], "{f:#?}");
    assert_eq!(evidence(&f[0]).constraint, "CHECK (v > -1000)");
    assert_eq!(evidence(&f[0]).rows[0].values["v"], i(-1000));
    h.final_state.get_mut("p").unwrap()[0][3] = i(-999);
    assert_eq!(findings(&mut e, &case, &h), vec![]);
}

/// A history of one SELECT of `c` that returned `rows` with `reads`.
fn read_history(rows: Vec<Vec<Value>>, reads: Vec<(i64, &str)>) -> (TestCase, History) {
    let case = parent_child_case(&[], &[], vec![autocommit(vec![select_children()])], "1");
    let outcome = Outcome {
        rows,
        reads: reads
            .into_iter()
            .map(|(rid, wl)| RowVersion {
                table: "c".into(),
                rid,
                wl: WriteList::parse(wl).unwrap(),
            })
            .collect(),
        reads_complete: true,
        writes_complete: true,
        ..Outcome::default()
    };
    let h = History {
        isolation: case.isolation,
        events: vec![],
        outcomes: vec![StmtOutcome {
            stmt: StmtRef { txn: 1, index: 0 },
            op: 1,
            outcome,
        }],
        txns: vec![],
        final_state: Default::default(),
        final_state_error: None,
    };
    (case, h)
}

#[test]
fn a_read_returning_a_key_twice_is_found() {
    let (case, h) = read_history(
        vec![vec![i(1), i(1), N], vec![i(2), i(1), N]],
        vec![(101, "0"), (102, "0")],
    );
    assert_eq!(check(None, rules(), &case, &h).findings, vec![]);
    let (case, h) = read_history(
        vec![vec![i(1), i(1), N], vec![i(1), i(2), N]],
        vec![(101, "0"), (102, "0")],
    );
    let f = check(None, rules(), &case, &h).findings;
    assert_eq!(kinds(&f), ["unique"], "{f:#?}");
    let ev = evidence(&f[0]);
    assert_eq!(
        ev.state,
        StateRef::Read {
            stmt: StmtRef { txn: 1, index: 0 }
        }
    );
    assert_eq!(ev.constraint, "PRIMARY KEY (k)");
}

#[test]
fn a_duplicate_key_read_after_an_own_write_claims_the_snapshot_mix() {
    use crate::oracle::verdict::Claim;
    let dup = vec![vec![i(1), i(1), N], vec![i(1), i(2), N]];
    let reads = vec![(101, "0"), (102, "0")];
    // Autocommit: no own write.
    let (case, h) = read_history(dup.clone(), reads.clone());
    assert_eq!(check(None, rules(), &case, &h).findings[0].claim, None);
    // BEGIN; INSERT INTO c; SELECT c: the read mixes snapshot and own rows.
    let (mut case, mut h) = read_history(dup, reads);
    case.txns[0].autocommit = false;
    case.txns[0].stmts.insert(
        0,
        crate::model::CaseStmt {
            op: 2,
            stmt: insert_child(103, 9, 1),
        },
    );
    let mut insert = h.outcomes[0].clone();
    insert.op = 2;
    insert.outcome = Outcome::default();
    h.outcomes[0].stmt.index = 1;
    h.outcomes.insert(0, insert);
    let f = check(None, rules(), &case, &h).findings;
    assert!(
        matches!(f[0].claim, Some(Claim::OwnWritesOverSnapshot { .. })),
        "{f:#?}"
    );
}

/// A duplicate-key read whose row versions were not observed: at READ
/// UNCOMMITTED it claims a dirty read when another transaction had a write
/// of the table submitted and not committed when the read completed, and
/// nothing otherwise; at a level that reads no uncommitted rows, nothing.
#[test]
fn an_unobserved_read_next_to_an_open_writer_claims_a_dirty_read() {
    use crate::model::{Event, EventKind};
    use crate::oracle::verdict::Claim;
    let (mut case, mut h) = read_history(vec![vec![i(1), i(1), N], vec![i(1), i(2), N]], vec![]);
    case.isolation = crate::model::Isolation::ReadUncommitted;
    h.outcomes[0].outcome.reads_complete = false;
    case.txns.push(crate::model::Txn {
        id: 2,
        autocommit: false,
        isolation: None,
        settings: Default::default(),
        stmts: vec![
            crate::model::CaseStmt {
                op: 2,
                stmt: Stmt::begin(),
            },
            crate::model::CaseStmt {
                op: 3,
                stmt: insert_child(103, 1, 1),
            },
            crate::model::CaseStmt {
                op: 4,
                stmt: Stmt::Rollback,
            },
        ],
    });
    let ev = |txn, index, kind| Event {
        stmt: StmtRef { txn, index },
        kind,
        at_us: 0,
    };
    let done = || EventKind::Completed {
        ok: true,
        resumed: false,
    };
    // T2 begins and submits its insert (it waits); T1 reads; T2 rolls back.
    h.events = vec![
        ev(2, 0, EventKind::Submitted),
        ev(2, 0, done()),
        ev(2, 1, EventKind::Submitted),
        ev(1, 0, EventKind::Submitted),
        ev(1, 0, done()),
        ev(2, 2, EventKind::Submitted),
        ev(2, 2, done()),
    ];
    let f = check(None, rules(), &case, &h).findings;
    assert_eq!(f[0].claim, Some(Claim::UncommittedRead), "{f:#?}");
    let mut serializable = case.clone();
    serializable.isolation = crate::model::Isolation::Serializable;
    let f = check(None, rules(), &serializable, &h).findings;
    assert_eq!(f[0].claim, None, "{f:#?}");
    // The insert submitted after the read: no writer was open.
    h.events = vec![
        ev(2, 0, EventKind::Submitted),
        ev(2, 0, done()),
        ev(1, 0, EventKind::Submitted),
        ev(1, 0, done()),
        ev(2, 1, EventKind::Submitted),
        ev(2, 2, EventKind::Submitted),
        ev(2, 2, done()),
    ];
    let f = check(None, rules(), &case, &h).findings;
    assert_eq!(f[0].claim, None, "{f:#?}");
}

#[test]
fn a_read_returning_one_row_twice_is_found() {
    // Two versions of row 101.
    let (case, h) = read_history(
        vec![vec![i(1), i(1), N], vec![i(2), i(1), N]],
        vec![(101, "0"), (101, "0,1")],
    );
    let f = check(None, rules(), &case, &h).findings;
    assert_eq!(kinds(&f), ["unique"], "{f:#?}");
    assert!(f[0].summary.contains("two versions"), "{}", f[0].summary);
    // The same version twice: more rows than versions.
    let (case, h) = read_history(
        vec![vec![i(1), i(1), N], vec![i(1), i(1), N]],
        vec![(101, "0")],
    );
    let f = check(None, rules(), &case, &h).findings;
    assert_eq!(kinds(&f), ["unique", "unique"], "{f:#?}");
}

/// Each integrity fault breaks its constraint in the final state of a
/// SQLite run; the oracle names the kind.
#[test]
fn each_integrity_fault_is_caught() {
    use crate::engine::fault::{Fault, FaultyEngine};
    let case = parent_child_case(
        &[(1, 10), (2, 20), (3, 30)],
        &[(5, 2), (6, 3)],
        vec![committed(vec![delete_parent(1)])],
        "1 1 1",
    );
    for (fault, kind) in [
        (Fault::Orphan, "foreign-key"),
        (Fault::DuplicateKey, "unique"),
        (Fault::NullValue, "not-null"),
        (Fault::CheckViolation, "check"),
    ] {
        let mut e = FaultyEngine::new(Box::new(SqliteEngine::open(None).unwrap()), fault);
        e.load(&case).unwrap();
        let h = execute(&mut e, &case, &ExecOptions::default()).unwrap();
        let f = check(Some(&mut e), rules(), &case, &h).findings;
        assert!(kinds(&f).contains(&kind), "{}: {f:#?}", fault.name());
        if fault == Fault::Orphan {
            assert!(
                f[0].summary
                    .contains("no statement of the case removed the parent key"),
                "{}",
                f[0].summary
            );
        }
    }
}

/// T1 (explicit) reads the children, then the whole parent table, with
/// `children` and `parents` returned; `write_first`: T1 first inserts a
/// parent (its reads then mix its snapshot with its own write).
fn snapshot_history(
    children: Vec<Vec<Value>>,
    parents: Vec<Vec<Value>>,
    write_first: bool,
) -> (TestCase, History) {
    let mut body = vec![select_children(), select_parents()];
    if write_first {
        body.insert(0, insert_parent(9, 9, 90));
    }
    let case = parent_child_case(&[(1, 10)], &[], vec![committed(body)], "1 1 1 1 1");
    let reads = |rows: &Vec<Vec<Value>>, table: &str, base: i64| Outcome {
        rows: rows.clone(),
        reads: (0..rows.len() as i64)
            .map(|k| RowVersion {
                table: table.into(),
                rid: base + k,
                wl: WriteList::parse("0").unwrap(),
            })
            .collect(),
        reads_complete: true,
        writes_complete: true,
        ..Outcome::default()
    };
    let mut outcomes = vec![reads(&children, "c", 101), reads(&parents, "p", 1)];
    if write_first {
        outcomes.insert(0, Outcome::default());
    }
    let h = History {
        isolation: case.isolation,
        events: vec![],
        outcomes: outcomes
            .into_iter()
            .enumerate()
            .map(|(k, outcome)| StmtOutcome {
                stmt: StmtRef {
                    txn: 1,
                    index: 1 + k as u32,
                },
                op: 2 + k as u32,
                outcome,
            })
            .collect(),
        txns: vec![],
        final_state: Default::default(),
        final_state_error: None,
    };
    (case, h)
}

#[test]
fn a_snapshot_with_a_child_and_no_parent_is_found() {
    let child = vec![vec![i(5), i(2), N]];
    // Parent 2 read: consistent.
    let (case, h) = snapshot_history(
        child.clone(),
        vec![vec![i(1), i(10)], vec![i(2), i(20)]],
        false,
    );
    assert_eq!(check(None, rules(), &case, &h).findings, vec![]);
    // Parent 2 missing from the whole-table read: a finding.
    let (case, h) = snapshot_history(child.clone(), vec![vec![i(1), i(10)]], false);
    let f = check(None, rules(), &case, &h).findings;
    assert_eq!(kinds(&f), ["foreign-key"], "{f:#?}");
    let ev = evidence(&f[0]);
    assert_eq!(ev.missing_parent_keys, vec![vec![i(2)]]);
    assert_eq!(
        ev.state,
        StateRef::Snapshot {
            txn: 1,
            reads: vec![StmtRef { txn: 1, index: 1 }, StmtRef { txn: 1, index: 2 }]
        }
    );
    assert_eq!(ev.rows[0].rid, Some(101));
    // Not at a level whose statements read different snapshots.
    let each_statement = KeyRules {
        one_snapshot: false,
        ..rules()
    };
    assert_eq!(check(None, each_statement, &case, &h).findings, vec![]);
    // Not after the transaction's own write of the parent table.
    let (case, h) = snapshot_history(child, vec![vec![i(1), i(10)]], true);
    assert_eq!(check(None, rules(), &case, &h).findings, vec![]);
}
