//! Open cursors (issue 33 item 5): a SELECT stepped part-way while other
//! sessions commit and its own session runs other statements. The oracles
//! judge a cursor as its SELECT on the state its open saw (`model::cursor`):
//! a scripted schedule where SQLite keeps the cursor on its snapshot is
//! clean, and a cursor that repeats a row (fault injection) or shows a
//! later commit (a tampered history) is found.

use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{History, Stmt, StmtRef, TestCase, Value};
use txfuzz::oracle::{CheckStats, Finding, OracleKind};
use txfuzz::testkit::*;

mod common;

fn sqlite() -> Box<dyn Engine> {
    Box::new(SqliteEngine::open(None).unwrap())
}

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

fn ints(rows: &[Vec<Value>]) -> Vec<(i64, i64)> {
    rows.iter()
        .map(|r| match (&r[0], &r[1]) {
            (Value::Int(k), Value::Int(v)) => (*k, *v),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// T1 opens a cursor over `t` (one row), T2 commits an update, an insert
/// and a delete, then T1 steps on `steps` times (2 rows each) and closes it.
fn cursor_across_commits(steps: usize) -> TestCase {
    let mut t1 = vec![open_cursor("t", "c1", 1)];
    t1.extend((0..steps).map(|_| fetch("c1", 2)));
    t1.push(Stmt::Close("c1".into()));
    let order = format!("1 1 2 2 2 {}", "1 ".repeat(steps + 2));
    kv_case(
        &[(1, 10), (2, 20), (3, 30)],
        vec![
            committed(t1),
            autocommit(vec![set("t", 2, 99), insert("t", 4, 4, 40), delete("t", 3)]),
        ],
        &order,
    )
}

fn kinds(f: &[Finding]) -> Vec<String> {
    f.iter()
        .map(|f| format!("{}:{}", f.oracle, f.kind))
        .collect()
}

#[test]
fn a_cursor_keeps_the_snapshot_of_its_open_while_others_commit() {
    // Stepped to the end: the whole result on T1's snapshot.
    let case = cursor_across_commits(2);
    case.validate().unwrap();
    let (h, f, view) = common::run_defaults(sqlite().as_mut(), &case);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!((view.checked, view.undecided), (1, 0), "{view:?}");
    let open = h.outcome(at(1, 1)).unwrap();
    assert_eq!(ints(&open.rows), [(1, 10), (2, 20), (3, 30)]);
    assert!(open.exhausted);
    // Each step kept its own rows.
    assert_eq!(ints(&h.outcome(at(1, 2)).unwrap().rows), [(2, 20), (3, 30)]);
    assert!(h.outcome(at(1, 3)).unwrap().rows.is_empty());

    // Closed part-way: judged as the first rows of the result.
    let case = cursor_across_commits(1);
    let (h, f, view) = common::run_defaults(sqlite().as_mut(), &case);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!((view.checked, view.undecided), (1, 0), "{view:?}");
    let open = h.outcome(at(1, 1)).unwrap();
    assert_eq!(ints(&open.rows), [(1, 10), (2, 20), (3, 30)]);
    assert!(!open.exhausted, "three rows stepped, the end not reached");
}

/// `case` on `e` (a `cursor-repeat` fault injector) gives a `view:result`.
fn a_repeated_row_is_found(e: &mut FaultyEngine, case: &TestCase, label: &str) {
    let (_, f, _) = common::run_defaults(e, case);
    assert!(
        kinds(&f).contains(&"view:result".to_string()),
        "{label}: {:?}",
        kinds(&f)
    );
}

#[test]
fn a_cursor_that_repeats_a_row_is_found() {
    let case = cursor_across_commits(2);
    let mut e = FaultyEngine::new(sqlite(), Fault::CursorRepeat);
    let (h, f, _) = common::run_defaults(&mut e, &case);
    let found = kinds(&f);
    assert!(found.contains(&"view:result".to_string()), "{found:?}");
    assert!(found.contains(&"integrity:unique".to_string()), "{found:?}");
    assert_eq!(ints(&h.outcome(at(1, 1)).unwrap().rows).len(), 4);
}

/// The history of `case` with the cursor's row 2 shown at T2's committed
/// value: a cursor that saw a commit made after its open.
fn seeing_a_later_commit(case: &TestCase) -> History {
    let mut e = sqlite();
    e.load(case).unwrap();
    let mut h = txfuzz::exec::execute(e.as_mut(), case, &ExecOptions::default()).unwrap();
    let open = h.outcomes.iter_mut().find(|o| o.stmt == at(1, 1)).unwrap();
    open.outcome.rows[1][1] = Value::Int(99);
    h
}

#[test]
fn a_cursor_that_sees_a_later_commit_is_found() {
    // Stepped to the end, and closed part-way (judged as a prefix).
    for steps in [2, 1] {
        let case = cursor_across_commits(steps);
        let h = seeing_a_later_commit(&case);
        let mut e = sqlite();
        e.load(&case).unwrap();
        let mut stats = CheckStats::default();
        let f = txfuzz::oracle::check(
            OracleKind::View,
            e.as_mut(),
            &case,
            &h,
            &ExecOptions::default(),
            &mut stats,
        )
        .unwrap();
        assert_eq!(kinds(&f), ["view:result"], "steps {steps}: {f:#?}");
    }
}

/// Rows stepped after the session wrote the cursor's table are left
/// undefined by SQLite: not judged, while the write itself is.
#[test]
fn rows_stepped_after_the_sessions_own_write_are_not_judged() {
    let case = kv_case(
        &[(1, 10), (2, 20), (3, 30)],
        vec![committed(vec![
            open_cursor("t", "c1", 1),
            set("t", 3, 33),
            fetch("c1", 5),
            Stmt::Close("c1".into()),
        ])],
        "1 1 1 1 1 1",
    );
    let cursors = txfuzz::model::cursor::cursors(&case);
    assert_eq!(cursors[0].judged, []);
    assert_eq!(cursors[0].unjudged, [at(1, 3)]);
    let (h, f, _) = common::run_defaults(sqlite().as_mut(), &case);
    assert!(f.is_empty(), "{f:#?}");
    // The open is judged on its own step only.
    assert_eq!(ints(&h.outcome(at(1, 1)).unwrap().rows), [(1, 10)]);
    assert_eq!(ints(&h.outcome(at(1, 3)).unwrap().rows).len(), 2);
}

#[test]
fn malformed_cursor_cases_are_refused_with_a_sentence() {
    let bad = |stmts: Vec<Stmt>| {
        kv_case(&[(1, 1)], vec![committed(stmts)], "1 1 1 1 1")
            .validate()
            .unwrap_err()
    };
    let e = bad(vec![fetch("c1", 1), select("t", None), select("t", None)]);
    assert!(e.contains("not open"), "{e}");
    let e = bad(vec![
        open_cursor("t", "c1", 1),
        fetch("c1", 1),
        select("t", None),
    ]);
    assert!(
        e.contains("still open") || e.contains("never closed"),
        "{e}"
    );
    let e = bad(vec![
        Stmt::Select(match open_cursor("t", "c1", 1) {
            Stmt::Select(mut q) => {
                q.order_by.clear();
                q
            }
            _ => unreachable!(),
        }),
        fetch("c1", 1),
        Stmt::Close("c1".into()),
    ]);
    assert!(e.contains("primary key"), "{e}");
    let auto = kv_case(
        &[(1, 1)],
        vec![autocommit(vec![open_cursor("t", "c1", 1)])],
        "1",
    );
    assert!(auto
        .validate()
        .unwrap_err()
        .contains("explicit transaction"));
}

/// turso (WAL and MVCC): the same schedule, its cursor held by the turso
/// API's `Rows` between steps.
#[cfg(feature = "turso")]
#[test]
fn turso_cursors_keep_the_snapshot_of_their_open() {
    use txfuzz::engine::turso::TursoEngine;
    for mvcc in [false, true] {
        for steps in [1, 2] {
            let mut e = TursoEngine::open(None, mvcc).unwrap();
            let mut case = in_default_mode(&cursor_across_commits(steps), &e);
            case.isolation = e.profile().isolations[0];
            let (h, f, view) = common::run_defaults(&mut e, &case);
            assert!(f.is_empty(), "mvcc {mvcc}: {f:#?}");
            assert_eq!(
                (view.checked, view.undecided),
                (1, 0),
                "mvcc {mvcc}: {view:?}"
            );
            let open = h.outcome(at(1, 1)).unwrap();
            assert_eq!(ints(&open.rows), [(1, 10), (2, 20), (3, 30)], "mvcc {mvcc}");
            assert_eq!(open.exhausted, steps == 2, "mvcc {mvcc}");
        }
        // A cursor that repeats a row is found here too.
        let mut e = FaultyEngine::new(
            Box::new(TursoEngine::open(None, mvcc).unwrap()),
            Fault::CursorRepeat,
        );
        let mut case = in_default_mode(&cursor_across_commits(2), &e);
        case.isolation = e.profile().isolations[0];
        a_repeated_row_is_found(&mut e, &case, &format!("mvcc {mvcc}"));
    }
}

/// Reduction and `sdg` remove statements by op: a cursor's steps go with
/// its open, so the case stays valid.
#[test]
fn removing_a_cursors_open_removes_its_steps() {
    let case = cursor_across_commits(2);
    let open_op = case.stmt(at(1, 1)).unwrap().op;
    let smaller = txfuzz::model::edit::remove_ops(&case, &[open_op]).unwrap();
    smaller.validate().unwrap();
    let t1 = smaller.txn(1).unwrap();
    assert_eq!(t1.stmts.len(), 2, "{:?}", t1.stmts);
    assert!(txfuzz::model::cursor::cursors(&smaller).is_empty());
}

/// PostgreSQL SQL cursors (DECLARE / FETCH / CLOSE) at every level: other
/// sessions' commits between the steps do not show, and neither does the
/// transaction's own later write ("DECLARE": "In PostgreSQL, all cursors
/// are insensitive"), so those rows are judged too.
#[test]
fn postgres_cursors_are_insensitive_and_keep_their_snapshot() {
    use txfuzz::model::Isolation;
    let Some(url) = common::pg_url() else { return };
    let own_write = kv_case(
        &[(1, 10), (2, 20), (3, 30)],
        vec![committed(vec![
            open_cursor("t", "c1", 1),
            set("t", 3, 33),
            fetch("c1", 5),
            Stmt::Close("c1".into()),
        ])],
        "1 1 1 1 1 1",
    );
    for level in [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ] {
        for steps in [1, 2] {
            let mut case = cursor_across_commits(steps);
            case.isolation = level;
            let mut e = common::open(&url);
            let (h, f, view) = common::run_defaults(e.as_mut(), &case);
            assert!(f.is_empty(), "{level:?}: {f:#?}");
            assert_eq!(
                (view.checked, view.undecided),
                (1, 0),
                "{level:?}: {view:?}"
            );
            let open = h.outcome(at(1, 1)).unwrap();
            assert_eq!(ints(&open.rows), [(1, 10), (2, 20), (3, 30)], "{level:?}");
            assert_eq!(open.exhausted, steps == 2, "{level:?}");
        }
        let mut case = own_write.clone();
        case.isolation = level;
        let mut e = common::open(&url);
        let (h, f, _) = common::run_defaults(e.as_mut(), &case);
        assert!(f.is_empty(), "{level:?}: {f:#?}");
        // The step after the write is judged with the open: the row it
        // wrote shows its value before.
        let open = h.outcome(at(1, 1)).unwrap();
        assert_eq!(ints(&open.rows), [(1, 10), (2, 20), (3, 30)], "{level:?}");
        // A cursor that repeats a row is found.
        let mut case = cursor_across_commits(2);
        case.isolation = level;
        let mut e = FaultyEngine::new(common::open(&url), Fault::CursorRepeat);
        a_repeated_row_is_found(&mut e, &case, &format!("{level:?}"));
    }
}

/// MariaDB has no client cursors: a case that opens one is refused there
/// (`txfuzz replay` says why), and the profile draws none.
#[test]
fn mariadb_refuses_cursors_with_a_reason() {
    use txfuzz::sql::{unsupported, Dialect};
    for s in [
        open_cursor("t", "c1", 1),
        fetch("c1", 1),
        Stmt::Close("c1".into()),
    ] {
        let why = unsupported(Dialect::Mysql, &s).unwrap();
        assert!(why.contains("stored programs"), "{why}");
        assert_eq!(unsupported(Dialect::Sqlite, &s), None);
        assert_eq!(unsupported(Dialect::Postgres, &s), None);
    }
    assert!(!txfuzz::model::Features::mysql().cursors);
}

/// A write to a table only the cursor's subquery reads counts as a write
/// to the cursor's tables too (a SQLite campaign found the gap: the NOT IN
/// list was read again after the session deleted from its table).
#[test]
fn a_write_to_a_subquerys_table_leaves_later_steps_unjudged() {
    use txfuzz::model::Expr;
    let Stmt::Select(mut q) = open_cursor("t", "c1", 1) else {
        unreachable!()
    };
    let Stmt::Select(sub) = select("u", None) else {
        unreachable!()
    };
    q.where_ = Some(Expr::InSubquery {
        expr: Box::new(Expr::col("k")),
        query: Box::new(sub),
        negated: true,
    });
    let mut case = kv_case(
        &[(1, 10)],
        vec![committed(vec![
            Stmt::Select(q),
            delete("u", 1),
            fetch("c1", 1),
            Stmt::Close("c1".into()),
        ])],
        "1 1 1 1 1 1",
    );
    case.schema.tables.push(kv_table("u"));
    let cursors = txfuzz::model::cursor::cursors(&case);
    assert!(cursors[0].tables.contains("u"), "{cursors:?}");
    assert_eq!(cursors[0].unjudged, [at(1, 3)]);
}
