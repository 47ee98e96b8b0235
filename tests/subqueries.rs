//! How InnoDB reads the subqueries of locking reads and writes (profile rules
//! `locking_read_subqueries`, `write_subqueries`), on the real MariaDB server
//! (`TXFUZZ_MYSQL_URL`; the tests are skipped, loudly, when it is unset).
//!
//! The schedule: T1 opens its read view (a plain read of `t`), T2 inserts
//! `u.k = 2` and commits, then T1 runs a statement over `t` whose WHERE is
//! `t.k IN (SELECT u.k FROM u)`. Sources (MySQL 8.0 Reference Manual):
//! 17.7.2.4 "Locking Reads": "A locking read clause in an outer statement does
//! not lock the rows of a table in a nested subquery" (a consistent read in
//! the read view); 17.7.3 "Locks Set by Different SQL Statements": the selects
//! of `UPDATE t ... WHERE col IN (SELECT ... FROM s ...)` and `INSERT ...
//! SELECT` take shared next-key locks (current reads), except at READ
//! COMMITTED, where 17.7.2.3 makes them consistent reads.
//!
//! Each test asserts what the server returned or wrote, that `view` and `sdg`
//! decide the case without a finding, and that the rule mutated makes them
//! report or give up.

mod common;

use txfuzz::campaign::run_case;
use txfuzz::engine::profile::SubqueryRead;
use txfuzz::engine::{Engine, EngineProfile};
use txfuzz::exec::ExecOptions;
use txfuzz::model::{
    Expr, History, Isolation, LockMode, Row, SelectItem, Stmt, StmtRef, TableData, TestCase, Value,
};
use txfuzz::oracle::{CheckStats, Finding, OracleKind};
use txfuzz::testkit::*;

/// `t.k IN (SELECT u.k FROM u)`
fn in_u() -> Expr {
    let Stmt::Select(mut sub) = select("u", None) else {
        unreachable!()
    };
    sub.items = vec![SelectItem {
        expr: Expr::qcol("u", "k"),
        alias: None,
    }];
    Expr::InSubquery {
        expr: Box::new(Expr::qcol("t", "k")),
        query: Box::new(sub),
        negated: false,
    }
}

/// `SELECT k, v FROM t WHERE t.k IN (SELECT u.k FROM u) FOR UPDATE`
fn locking_read() -> Stmt {
    let Stmt::Select(mut s) = select("t", None) else {
        unreachable!()
    };
    s.where_ = Some(in_u());
    s.lock = Some(LockMode::ForUpdate);
    Stmt::Select(s)
}

/// `UPDATE t SET v = v + 1 WHERE t.k IN (SELECT u.k FROM u)`
fn update() -> Stmt {
    let Stmt::Update(mut u) = add("t", 0, 1) else {
        unreachable!()
    };
    u.where_ = Some(in_u());
    Stmt::Update(u)
}

/// t = {(1,10), (2,20)}, u = {(1,0)}; T1: BEGIN, read t, `stmt`, COMMIT;
/// T2 (autocommit): INSERT u (2,0) after T1's read.
fn case(stmt: Stmt, iso: Isolation) -> TestCase {
    let mut c = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![select("t", None), stmt]),
            autocommit(vec![insert("u", 10, 2, 0)]),
        ],
        "1 1 2 1 1",
    );
    with_u(&mut c);
    c.isolation = iso;
    c
}

/// Adds table u = {(1,0)} (row id 3).
fn with_u(c: &mut TestCase) {
    c.schema.tables.push(kv_table("u"));
    c.data.push(TableData {
        table: "u".into(),
        rows: vec![Row {
            rid: 3,
            values: vec![Value::Int(1), Value::Int(0)],
        }],
    });
}

const STMT: StmtRef = StmtRef { txn: 1, index: 2 };

struct Run {
    history: History,
    findings: Vec<Finding>,
    stats: CheckStats,
}

fn run(e: &mut dyn Engine, case: &TestCase) -> Run {
    let mut stats = CheckStats::default();
    let (history, findings) = run_case(
        e,
        case,
        &[OracleKind::View, OracleKind::Sdg],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    Run {
        history,
        findings,
        stats,
    }
}

/// Keys of the rows `STMT` returned or wrote.
fn keys_met(r: &Run) -> Vec<i64> {
    let o = r.history.outcome(STMT).unwrap();
    let mut keys: Vec<i64> = if o.rows.is_empty() {
        o.writes.iter().map(|w| w.rid).collect()
    } else {
        o.rows
            .iter()
            .filter_map(|row| match row.first() {
                Some(Value::Int(k)) => Some(*k),
                _ => None,
            })
            .collect()
    };
    keys.sort();
    keys
}

fn assert_decided_clean(r: &Run, what: &str) {
    assert!(r.findings.is_empty(), "{what}: {:#?}", r.findings);
    for oracle in ["view", "sdg"] {
        let c = r.stats.per_oracle.get(oracle).cloned().unwrap_or_default();
        assert_eq!(c.checked, 1, "{what}: {oracle} {c:?}\n{:#?}", r.history);
    }
}

fn mutated(url: &str, change: impl FnOnce(&mut EngineProfile)) -> WithProfile {
    WithProfile::new(common::open(url), change)
}

fn set_rule(p: &mut EngineProfile, iso: Isolation, f: impl Fn(&mut txfuzz::engine::profile::Rule)) {
    for (l, r) in &mut p.rules {
        if *l == iso {
            f(r);
        }
    }
}

#[test]
fn subqueries_of_writes_and_locking_reads_per_level() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    // (statement, level, keys the statement meets on the server)
    let expected: [(&str, Stmt, Isolation, Vec<i64>); 4] = [
        // The subquery reads T1's read view: u.k = 2 is not there.
        (
            "locking read RR",
            locking_read(),
            Isolation::RepeatableRead,
            vec![1],
        ),
        // A new read view per statement: T2's row is there.
        (
            "locking read RC",
            locking_read(),
            Isolation::ReadCommitted,
            vec![1, 2],
        ),
        // Current (locking) reads of u: T2's row is there (rids 1, 2 of t).
        ("update RR", update(), Isolation::RepeatableRead, vec![1, 2]),
        ("update RC", update(), Isolation::ReadCommitted, vec![1, 2]),
    ];
    for (what, stmt, iso, keys) in expected {
        let r = run(common::open(&url).as_mut(), &case(stmt, iso));
        assert_eq!(keys_met(&r), keys, "{what}: {:#?}", r.history.outcome(STMT));
        assert_decided_clean(&r, what);
    }
}

/// Locking-read subqueries read current (the rule mutated): both oracles
/// then expect T2's row and report the locking read at REPEATABLE READ.
#[test]
fn locking_read_subqueries_read_as_current_would_be_reported() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let iso = Isolation::RepeatableRead;
    let mut e = mutated(&url, |p| {
        set_rule(p, iso, |r| {
            r.locking_read_subqueries = SubqueryRead::AsOuter
        })
    });
    let r = run(&mut e, &case(locking_read(), iso));
    assert_eq!(keys_met(&r), vec![1]);
    let oracles: Vec<&str> = r.findings.iter().map(|f| f.oracle.name()).collect();
    assert!(oracles.contains(&"view"), "{:#?}", r.findings);
    assert!(oracles.contains(&"sdg"), "{:#?}", r.findings);
}

/// Write subqueries read plain at REPEATABLE READ (the rule mutated): both
/// oracles then expect the UPDATE to miss T2's row and report it.
#[test]
fn write_subqueries_read_plain_would_be_reported() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let iso = Isolation::RepeatableRead;
    let mut e = mutated(&url, |p| {
        set_rule(p, iso, |r| r.write_subqueries = SubqueryRead::Plain)
    });
    let r = run(&mut e, &case(update(), iso));
    assert_eq!(keys_met(&r), vec![1, 2]);
    let oracles: Vec<&str> = r.findings.iter().map(|f| f.oracle.name()).collect();
    assert!(oracles.contains(&"view"), "{:#?}", r.findings);
    assert!(oracles.contains(&"sdg"), "{:#?}", r.findings);
}

/// The server fact behind `write_subqueries` at READ COMMITTED: the
/// subquery of an UPDATE is a consistent read that takes no lock, so an
/// uncommitted change of the subquery's row by T2 does not make it wait; at
/// REPEATABLE READ it takes shared locks and waits. (At READ COMMITTED a
/// statement that does not wait reads the same rows either way, so the
/// oracles' verdicts depend on this rule only for statements that waited,
/// which `view` leaves undecided when a commit fell inside the wait.)
#[test]
fn an_update_subquery_takes_no_lock_at_read_committed_only() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for (iso, waits) in [
        (Isolation::ReadCommitted, false),
        (Isolation::RepeatableRead, true),
    ] {
        let mut c = kv_case(
            &[(1, 10), (2, 20)],
            vec![autocommit(vec![update()]), committed(vec![add("u", 1, 1)])],
            "2 2 1 2",
        );
        with_u(&mut c);
        c.isolation = iso;
        let r = run(common::open(&url).as_mut(), &c);
        let t1 = StmtRef { txn: 1, index: 0 };
        let waited =
            r.history.events.iter().any(|e| {
                e.stmt == t1 && matches!(e.kind, txfuzz::model::EventKind::Blocked { .. })
            });
        assert_eq!(waited, waits, "{iso}: {:#?}", r.history.events);
        assert!(r.findings.is_empty(), "{iso}: {:#?}", r.findings);
    }
}

/// T1's first read has an impossible WHERE and never reaches InnoDB, so
/// whether T1 has a read view when its locking read's subquery runs is not
/// known: after T2's commit the subquery may see T2's row (on 10.11 it does).
/// `view` must not pick a point: undecided, no finding.
#[test]
fn a_tentative_read_view_leaves_a_plain_subquery_undecided() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let Stmt::Select(mut nothing) = select("t", None) else {
        unreachable!()
    };
    nothing.where_ = Some(Expr::eq(Expr::Lit(Value::Int(1)), Expr::Lit(Value::Int(0))));
    let mut c = case(locking_read(), Isolation::RepeatableRead);
    c.txns[0].stmts[1].stmt = Stmt::Select(nothing);
    let r = run(common::open(&url).as_mut(), &c);
    assert_eq!(keys_met(&r), vec![1, 2], "{:#?}", r.history.outcome(STMT));
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    let view = r.stats.per_oracle.get("view").cloned().unwrap_or_default();
    assert_eq!(
        view.undecided_by.get("read-view-point-uncertain"),
        Some(&1),
        "{view:?}"
    );
}
