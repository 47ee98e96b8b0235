//! InnoDB keeps a row as one clustered-index record per primary-key value.
//! A key deleted and inserted again (two statements, or a REPLACE that runs
//! as an update) is one record, and a transaction that writes it reads its
//! own version only: the old row from its read view is gone. txfuzz gives
//! the new row a new row id; the profile fact `own_writes_hide_same_key`
//! makes `view` predict what InnoDB does (before it, the predicted view
//! held the key twice and the case was undecided, or a `view:result`).
//! On the real MariaDB server (`TXFUZZ_MYSQL_URL`).

mod common;

use txfuzz::campaign::run_case;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{History, Isolation, OnConflict, Stmt, StmtRef, TestCase, Value};
use txfuzz::oracle::{CheckStats, Finding, OracleKind, Verdict};
use txfuzz::testkit::*;

const LAST_READ: StmtRef = StmtRef { txn: 1, index: 3 };

fn replace(rid: i64, k: i64, v: i64) -> Stmt {
    let Stmt::Insert(mut i) = insert("t", rid, k, v) else {
        unreachable!("insert builds an INSERT")
    };
    i.on_conflict = OnConflict::Replace;
    Stmt::Insert(i)
}

/// t = {(1,10), (2,20)} at REPEATABLE READ. T1 opens its read view, T2
/// (autocommit) runs `t2`, then T1 runs `write` and reads the table.
fn case(t2: Vec<Stmt>, write: Stmt) -> TestCase {
    let order = format!("1 1 {} 1 1 1", vec!["2"; t2.len()].join(" "));
    let mut c = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![select("t", None), write, select("t", None)]),
            autocommit(t2),
        ],
        &order,
    );
    c.isolation = Isolation::RepeatableRead;
    c
}

/// REPLACE of key 1 (a conflict on the primary key alone: InnoDB updates
/// the record), then T1 updates the new row.
fn replaced_then_updated() -> TestCase {
    case(vec![replace(101, 1, 11)], set_where_v("t", 11, 99))
}

/// DELETE of key 1 and an INSERT of it again, then T1 updates the new row.
fn reinserted_then_updated() -> TestCase {
    case(
        vec![delete("t", 1), insert("t", 101, 1, 11)],
        set_where_v("t", 11, 99),
    )
}

/// DELETE of key 1; T1 inserts key 1 itself.
fn deleted_then_inserted_by_reader() -> TestCase {
    case(vec![delete("t", 1)], insert("t", 201, 1, 99))
}

fn kv(k: i64, v: i64) -> Vec<Value> {
    vec![Value::Int(k), Value::Int(v)]
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort();
    rows
}

fn run_all(e: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>, CheckStats) {
    let mut stats = CheckStats::default();
    let mut oracles = OracleKind::defaults();
    oracles.push(OracleKind::Fidelity);
    let (h, f) = run_case(e, case, &oracles, &ExecOptions::default(), &mut stats).unwrap();
    (h, f, stats)
}

fn view_check(e: &mut dyn Engine, case: &TestCase, h: &History) -> (Vec<Finding>, CheckStats) {
    e.load(case).unwrap();
    let mut stats = CheckStats::default();
    let f = txfuzz::oracle::check(
        OracleKind::View,
        e,
        case,
        h,
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (f, stats)
}

fn view_undecided(stats: &CheckStats) -> Vec<String> {
    stats
        .per_oracle
        .get("view")
        .map(|c| c.undecided_by.keys().cloned().collect())
        .unwrap_or_default()
}

/// The writer reads one row for key 1, its own; every oracle agrees, and
/// `view` decides the case.
#[test]
fn a_key_written_again_is_one_record_for_its_writer() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    for case in [
        replaced_then_updated(),
        reinserted_then_updated(),
        deleted_then_inserted_by_reader(),
    ] {
        let (h, f, stats) = run_all(e.as_mut(), &case);
        assert_eq!(
            sorted(h.outcome(LAST_READ).unwrap().rows.clone()),
            vec![kv(1, 99), kv(2, 20)],
            "{h:#?}"
        );
        assert!(f.iter().all(|f| f.verdict != Verdict::Violation), "{f:#?}");
        assert_eq!(view_undecided(&stats), Vec::<String>::new(), "{stats:#?}");
        assert_eq!(stats.per_oracle["view"].checked, 1, "{stats:#?}");
    }
}

/// Without the fact, the predicted view holds key 1 twice (the read view's
/// old row and the writer's own): the case is undecided, as it was.
#[test]
fn without_the_fact_the_key_is_twice_in_the_view() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = replaced_then_updated();
    let (h, _, _) = run_all(common::open(&url).as_mut(), &case);
    let mut rowwise = WithProfile::new(common::open(&url), |p| {
        p.own_writes_hide_same_key = false;
    });
    let (f, stats) = view_check(&mut rowwise, &case, &h);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(
        view_undecided(&stats),
        vec!["view-not-materialisable".to_string()],
        "{stats:#?}"
    );
}

/// The fact hides the old row only: a read that shows it (next to the
/// writer's row, or instead of it) is still a `view:result` violation.
#[test]
fn a_read_that_shows_the_old_record_is_found() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    for case in [replaced_then_updated(), reinserted_then_updated()] {
        let (h, _, _) = run_all(e.as_mut(), &case);
        for shown in [
            vec![kv(1, 10), kv(1, 99), kv(2, 20)],
            vec![kv(1, 10), kv(2, 20)],
        ] {
            let mut tampered = h.clone();
            let read = tampered
                .outcomes
                .iter_mut()
                .find(|o| o.stmt == LAST_READ)
                .unwrap();
            read.outcome.rows = shown.clone();
            let (f, _) = view_check(e.as_mut(), &case, &tampered);
            assert!(
                f.iter()
                    .any(|f| f.kind == "result" && f.verdict == Verdict::Violation),
                "{shown:?}: {f:#?}"
            );
        }
    }
}

/// Model regression (a 20-minute campaign at every level, case 2836,
/// reduced by `txfuzz reduce`): `t0(c0 BIGINT NOT NULL)` has no primary key
/// and a UNIQUE index on `c0`, so InnoDB keys its records by `c0` (MySQL
/// 17.6.2.1: the first UNIQUE index whose columns are all NOT NULL is the
/// clustered index). T3 (its read view open) deletes key 0 after waiting
/// for T1, which deleted it and inserted it again; T3's own deletion hides
/// the key from its read. `view` took the record identity from the primary
/// key alone, predicted the read view's row, and reported a `view:result`.
#[test]
fn a_unique_not_null_key_without_a_primary_key_is_the_record_identity() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = common::replay_case("repeatable-read-case2836-view-unique-clustered-key.json");
    let mut stats = CheckStats::default();
    let (_, findings) = run_case(
        common::open(&url).as_mut(),
        &case,
        &[OracleKind::View],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(stats.per_oracle["view"].checked, 1, "{stats:?}");
}
