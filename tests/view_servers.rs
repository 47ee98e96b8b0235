//! The `view` oracle's visibility rules, checked on the real servers
//! (`TXFUZZ_MYSQL_URL`, `TXFUZZ_PG_URL`; the tests are skipped, loudly, when they are unset).
//! Each test runs a scripted interleaving that tells the rule apart from its
//! alternatives, asserts what the server returned, and asserts that the oracle
//! decided the case without a finding: had the rule table said otherwise
//! (e.g. an InnoDB snapshot at BEGIN), the oracle would report a violation here.
//! Each test opens its own engine (own database or schema), so they run in parallel.

mod common;

use txfuzz::campaign::run_case;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{ErrorClass, EventKind, History, Isolation, StmtRef, TestCase, Value};
use txfuzz::oracle::{CheckStats, Finding, OracleCounts, OracleKind};
use txfuzz::testkit::*;

fn at(txn: u32, index: u32) -> StmtRef {
    StmtRef { txn, index }
}

/// Runs `case` at `iso` with the `view` oracle; asserts it decided the case
/// without a finding.
fn decided_clean(mut e: Box<dyn Engine>, case: &TestCase, iso: Isolation) -> History {
    let mut case = case.clone();
    case.isolation = iso;
    let mut stats = CheckStats::default();
    let (h, findings): (History, Vec<Finding>) = run_case(
        e.as_mut(),
        &case,
        &[OracleKind::View],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    let counts: OracleCounts = stats.oracle("view").clone();
    assert!(findings.is_empty(), "{iso}: {findings:#?}\n{h:#?}");
    assert_eq!(counts.checked, 1, "{iso}: {counts:?}\n{h:#?}");
    h
}

/// The `v` a `SELECT k, v ... WHERE k = ?` returned.
fn v_read(h: &History, r: StmtRef) -> Option<Value> {
    h.outcome(r)?.rows.first()?.get(1).cloned()
}

fn blocked(h: &History, r: StmtRef) -> bool {
    h.events
        .iter()
        .any(|e| e.stmt == r && matches!(e.kind, EventKind::Blocked { .. }))
}

/// T1 begins; T2 commits v=5; T1 reads (its snapshot); T2 commits v=6; T1 reads again.
fn snapshot_after_begin() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), select("t", Some(1))]),
            autocommit(vec![set("t", 1, 5), set("t", 1, 6)]),
        ],
        "1 2 1 2 1 1",
    )
}

/// T1 begins and writes another row; T2 commits v=5 on k=1; T1 reads k=1.
fn write_before_first_read() -> TestCase {
    kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![set("t", 2, 21), select("t", Some(1))]),
            autocommit(vec![set("t", 1, 5)]),
        ],
        "1 1 2 1 1",
    )
}

/// T1 reads (snapshot), T2 commits v=v+5, T1 increments and reads its own version.
fn update_after_concurrent_commit() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![
                select("t", Some(1)),
                add("t", 1, 1),
                select("t", Some(1)),
            ]),
            autocommit(vec![add("t", 1, 5)]),
        ],
        "1 1 2 1 1 1",
    )
}

/// T1 holds an uncommitted v=5; T2 reads inside a transaction.
fn read_of_uncommitted_write() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            (
                false,
                vec![
                    txfuzz::model::Stmt::begin(),
                    set("t", 1, 5),
                    txfuzz::model::Stmt::Rollback,
                ],
            ),
            committed(vec![select("t", Some(1))]),
        ],
        "1 1 2 2 2 1",
    )
}

/// T1 reads k=1 inside a transaction; T2 (autocommit) writes k=1 before T1 commits.
fn write_after_read_in_txn() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1))]),
            autocommit(vec![set("t", 1, 5), select("t", Some(1))]),
        ],
        "1 1 2 1 2",
    )
}

/// Two transactions update k=1; the second waits for the first.
fn two_writers() -> TestCase {
    kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 5), select("t", Some(1))]),
        ],
        "1 1 2 2 1 2 2",
    )
}

// ---------------------------------------------------------------- MariaDB

#[test]
fn mariadb_repeatable_read_snapshot_is_taken_at_the_first_read_not_at_begin() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &snapshot_after_begin(),
        Isolation::RepeatableRead,
    );
    assert_eq!(v_read(&h, at(1, 1)), Some(Value::Int(5)), "{h:#?}");
    assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(5)), "{h:#?}");
}

#[test]
fn mariadb_repeatable_read_a_write_does_not_take_the_snapshot() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &write_before_first_read(),
        Isolation::RepeatableRead,
    );
    assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(5)), "{h:#?}");
}

#[test]
fn mariadb_repeatable_read_update_reads_the_latest_committed_version() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &update_after_concurrent_commit(),
        Isolation::RepeatableRead,
    );
    assert_eq!(v_read(&h, at(1, 1)), Some(Value::Int(10)), "{h:#?}");
    // 10 + 5 (T2, committed after T1's snapshot) + 1, and T1 sees its own version.
    assert_eq!(v_read(&h, at(1, 3)), Some(Value::Int(16)), "{h:#?}");
}

#[test]
fn mariadb_read_committed_reads_take_a_snapshot_per_statement() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &snapshot_after_begin(),
        Isolation::ReadCommitted,
    );
    assert_eq!(v_read(&h, at(1, 1)), Some(Value::Int(5)), "{h:#?}");
    assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(6)), "{h:#?}");
}

#[test]
fn mariadb_read_uncommitted_reads_uncommitted_versions() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &read_of_uncommitted_write(),
        Isolation::ReadUncommitted,
    );
    assert_eq!(v_read(&h, at(2, 1)), Some(Value::Int(5)), "{h:#?}");
}

#[test]
fn mariadb_read_committed_does_not_read_uncommitted_versions() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &read_of_uncommitted_write(),
        Isolation::ReadCommitted,
    );
    assert_eq!(v_read(&h, at(2, 1)), Some(Value::Int(10)), "{h:#?}");
}

#[test]
fn mariadb_serializable_plain_reads_in_transactions_lock() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &write_after_read_in_txn(),
        Isolation::Serializable,
    );
    assert!(blocked(&h, at(2, 0)), "{h:#?}");
    assert_eq!(v_read(&h, at(2, 1)), Some(Value::Int(5)), "{h:#?}");
}

#[test]
fn mariadb_repeatable_read_plain_reads_do_not_lock() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &write_after_read_in_txn(),
        Isolation::RepeatableRead,
    );
    assert!(!blocked(&h, at(2, 0)), "{h:#?}");
}

/// (At READ COMMITTED/UNCOMMITTED a write that waited is undecided: InnoDB's
/// scan without gap locks may have passed rows committed while it waited.)
#[test]
fn mariadb_writers_of_one_row_block() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
        let h = decided_clean(common::open(&url), &two_writers(), iso);
        assert!(blocked(&h, at(2, 1)), "{iso}: {h:#?}");
        assert_eq!(v_read(&h, at(2, 2)), Some(Value::Int(16)), "{iso}: {h:#?}");
    }
}

// ------------------------------------------------------------- PostgreSQL

#[test]
fn postgres_snapshot_is_taken_at_the_first_statement_not_at_begin() {
    let Some(url) = common::pg_url() else {
        return;
    };
    for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
        let h = decided_clean(common::open(&url), &snapshot_after_begin(), iso);
        assert_eq!(v_read(&h, at(1, 1)), Some(Value::Int(5)), "{iso}: {h:#?}");
        assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(5)), "{iso}: {h:#?}");
    }
}

#[test]
fn postgres_a_write_takes_the_snapshot() {
    let Some(url) = common::pg_url() else {
        return;
    };
    // Unlike InnoDB, T1's first statement (a write) fixes its snapshot.
    let h = decided_clean(
        common::open(&url),
        &write_before_first_read(),
        Isolation::RepeatableRead,
    );
    assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(10)), "{h:#?}");
}

#[test]
fn postgres_read_committed_reads_take_a_snapshot_per_statement() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &snapshot_after_begin(),
        Isolation::ReadCommitted,
    );
    assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(6)), "{h:#?}");
}

#[test]
fn postgres_repeatable_read_write_conflict_aborts() {
    let Some(url) = common::pg_url() else {
        return;
    };
    for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
        let h = decided_clean(common::open(&url), &update_after_concurrent_commit(), iso);
        let err = h
            .outcome(at(1, 2))
            .and_then(|o| o.error.as_ref())
            .map(|e| e.class);
        assert_eq!(err, Some(ErrorClass::SerializationFailure), "{iso}: {h:#?}");
    }
}

#[test]
fn postgres_read_committed_update_reads_the_latest_committed_version() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &update_after_concurrent_commit(),
        Isolation::ReadCommitted,
    );
    assert_eq!(v_read(&h, at(1, 3)), Some(Value::Int(16)), "{h:#?}");
}

#[test]
fn postgres_read_committed_blocked_update_rechecks_the_new_version() {
    let Some(url) = common::pg_url() else {
        return;
    };
    // T1 sets v=5; T2's UPDATE ... WHERE v = 10 matched k=1 in its snapshot,
    // waits for T1, then re-checks the committed v=5 and updates nothing.
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![set("t", 1, 5)]),
            committed(vec![
                txfuzz::model::Stmt::Update(txfuzz::model::Update {
                    table: "t".into(),
                    assignments: vec![txfuzz::model::Assignment {
                        column: "v".into(),
                        value: txfuzz::model::Expr::Lit(Value::Int(99)),
                    }],
                    where_: Some(txfuzz::model::Expr::eq(
                        txfuzz::model::Expr::col("v"),
                        txfuzz::model::Expr::Lit(Value::Int(10)),
                    )),
                }),
                select("t", Some(1)),
            ]),
        ],
        "1 1 2 2 1 2 2",
    );
    case.isolation = Isolation::ReadCommitted;
    let h = decided_clean(common::open(&url), &case, Isolation::ReadCommitted);
    assert!(blocked(&h, at(2, 1)), "{h:#?}");
    assert!(
        h.outcome(at(2, 1)).is_some_and(|o| o.writes.is_empty()),
        "{h:#?}"
    );
    assert_eq!(v_read(&h, at(2, 2)), Some(Value::Int(5)), "{h:#?}");
}

#[test]
fn postgres_writers_of_one_row_block() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let h = decided_clean(common::open(&url), &two_writers(), Isolation::ReadCommitted);
    assert!(blocked(&h, at(2, 1)), "{h:#?}");
    assert_eq!(v_read(&h, at(2, 2)), Some(Value::Int(16)), "{h:#?}");
}

#[test]
fn postgres_does_not_read_uncommitted_versions() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let h = decided_clean(
        common::open(&url),
        &read_of_uncommitted_write(),
        Isolation::ReadUncommitted,
    );
    assert_eq!(v_read(&h, at(2, 1)), Some(Value::Int(10)), "{h:#?}");
}

/// Runs `case` at `iso` with the `view` oracle; returns findings and counts.
fn view_counts(
    mut e: Box<dyn Engine>,
    case: &TestCase,
    iso: Isolation,
) -> (History, Vec<Finding>, OracleCounts) {
    let mut case = case.clone();
    case.isolation = iso;
    let mut stats = CheckStats::default();
    let (h, findings) = run_case(
        e.as_mut(),
        &case,
        &[OracleKind::View],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (h, findings, stats.oracle("view").clone())
}

#[test]
fn mariadb_read_view_starts_at_the_first_read_that_reaches_innodb() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    // T2 commits v=5; T1's first SELECT has an impossible WHERE, which MariaDB
    // answers without InnoDB, so no read view exists yet; T2 commits v=6;
    // T1's next SELECT creates the read view and sees 6 (not 5).
    let mut case = snapshot_after_begin();
    if let txfuzz::model::Stmt::Select(s) = &mut case.txns[0].stmts[1].stmt {
        s.where_ = Some(txfuzz::model::Expr::Between {
            expr: Box::new(txfuzz::model::Expr::col("k")),
            low: Box::new(txfuzz::model::Expr::Lit(Value::Int(15))),
            high: Box::new(txfuzz::model::Expr::Lit(Value::Int(-4))),
        });
    }
    let (h, f, counts) = view_counts(common::open(&url), &case, Isolation::RepeatableRead);
    assert_eq!(h.outcome(at(1, 1)).map(|o| o.rows.len()), Some(0), "{h:#?}");
    assert_eq!(v_read(&h, at(1, 2)), Some(Value::Int(6)), "{h:#?}");
    // Where the read view began is not observable: undecided, not a violation.
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(
        counts.undecided_by.get("read-view-point-uncertain"),
        Some(&1),
        "{counts:?}"
    );
}

/// PostgreSQL SERIALIZABLE write skew: SSI refuses one of the two
/// transactions (40001 at its write or COMMIT) without any conflict the view
/// model can see. The profile rule `aborts_anywhere` (13.2.3: "applications
/// using this level must be prepared to retry transactions due to
/// serialization failures") lets `view` accept it and decide the case; with
/// the rule removed the case is undecided.
#[test]
fn postgres_serializable_ssi_failure_is_accepted_anywhere() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let mut case = txfuzz::testkit::hermitage::g2_item();
    case.isolation = Isolation::Serializable;
    let h = decided_clean(common::open(&url), &case, Isolation::Serializable);
    let failed = h.outcomes.iter().any(|o| {
        o.outcome
            .error
            .as_ref()
            .is_some_and(|e| e.class == ErrorClass::SerializationFailure)
    });
    assert!(failed, "SSI refused neither transaction: {h:#?}");
    let mut mutated = WithProfile::new(common::open(&url), |p| {
        for (_, rule) in p.rules.iter_mut() {
            rule.aborts_anywhere = None;
        }
    });
    let mut stats = CheckStats::default();
    let findings = txfuzz::oracle::check(
        OracleKind::View,
        &mut mutated,
        &case,
        &h,
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert!(findings.is_empty(), "{findings:#?}");
    let counts = stats.oracle("view").clone();
    assert_eq!(counts.undecided, 1, "{counts:?}");
}

/// Case 1702 of a SERIALIZABLE campaign: T1's REPLACE of key 17 and T3's
/// autocommit upsert of key 17 wait for one gap lock and resume together
/// when its holder commits. The server lets T3 insert and commit first, and
/// T1's REPLACE then replaces T3's row; the client may read T1's reply
/// first. Either recorded order of the two completions is decided without a
/// finding (`view` tries both, the final state too), and a final state that
/// neither order predicts stays a violation.
#[test]
fn mariadb_statements_resumed_together_are_judged_in_either_order() {
    use txfuzz::exec::execute;
    use txfuzz::oracle::resumed::resumed_runs;
    use txfuzz::oracle::view;
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = &common::replay_case("serializable-case1702-view-resumed-replace-upsert.json");
    let together = [at(1, 1), at(3, 0)];
    for _ in 0..30 {
        let mut e = common::open(&url);
        e.load(case).unwrap();
        let h = execute(e.as_mut(), case, &ExecOptions::default()).unwrap();
        let runs = resumed_runs(&h);
        let Some(run) = runs
            .iter()
            .find(|r| r.len() == 2 && r.iter().all(|&i| together.contains(&h.events[i].stmt)))
        else {
            continue; // T1's REPLACE waited for T3's insert until after it committed
        };
        let check = |h: &History| {
            let mut stats = CheckStats::default();
            let mut e = common::open(&url);
            e.load(case).unwrap();
            let f = view::check(e.as_mut(), case, h, &ExecOptions::default(), &mut stats).unwrap();
            (f, stats.oracle("view").clone())
        };
        let mut swapped = h.clone();
        swapped.events.swap(run[0], run[1]);
        for h in [&h, &swapped] {
            let (f, counts) = check(h);
            assert!(f.is_empty(), "{f:#?}\n{h:#?}");
            assert_eq!(counts.checked, 1, "{counts:?}\n{h:#?}");
            // Without T3's row -4 no order predicts the state.
            let mut tampered = h.clone();
            for rows in tampered.final_state.values_mut() {
                rows.retain(|r| r.get(2) != Some(&Value::Int(-4)));
            }
            let (f, _) = check(&tampered);
            assert!(f.iter().any(|f| f.kind == "final-state"), "{f:#?}");
        }
        return;
    }
    panic!("T1's REPLACE and T3's upsert never resumed together in 30 runs");
}

/// Seed 5 case 6890, reduced: `t0 (c0 NOT NULL, c1 NULL UNIQUE, c2 NOT
/// NULL, PRIMARY KEY (c2, c0))` holds (15, 6, 8) and (-5, 7, 1); T1
/// upserts (-1, 6, 1), which duplicates the first row on `c1` and the second
/// on `c2`. `late_index`: the key on `c2` is a later `CREATE UNIQUE INDEX`
/// (InnoDB checks it last and updates the first row), else it is declared in
/// CREATE TABLE (MariaDB sorts NOT NULL keys first: the second row).
fn upsert_two_duplicates(late_index: bool) -> TestCase {
    let (uniques, indexes) = if late_index {
        (
            serde_json::json!([["c1"]]),
            serde_json::json!([{"name": "i_t0_0", "columns": ["c2"], "unique": true}]),
        )
    } else {
        (serde_json::json!([["c1"], ["c2"]]), serde_json::json!([]))
    };
    let int = |v: i64| serde_json::json!({ "int": v });
    serde_json::from_value(serde_json::json!({
        "format": 2, "isolation": "read-committed",
        "schema": {"tables": [{"name": "t0",
            "columns": [{"name": "c0", "ty": "int", "not_null": true},
                        {"name": "c1", "ty": "int", "not_null": false},
                        {"name": "c2", "ty": "int", "not_null": true}],
            "primary_key": ["c2", "c0"], "uniques": uniques, "checks": [],
            "indexes": indexes, "foreign_keys": []}]},
        "data": [{"table": "t0", "rows": [
            {"rid": 1, "values": [int(15), int(6), int(8)]},
            {"rid": 2, "values": [int(-5), int(7), int(1)]}]}],
        "txns": [
            {"id": 1, "autocommit": false, "stmts": [
                {"op": 1, "stmt": "begin"},
                {"op": 2, "stmt": {"insert": {"table": "t0", "columns": ["c0", "c1", "c2"],
                    "rows": [[{"lit": int(-1)}, {"lit": int(6)}, {"lit": int(1)}]],
                    "rids": [1000],
                    "on_conflict": {"update": {"target": ["c2", "c0"], "assignments": [
                        {"column": "c1", "value": {"bin": {"op": "add",
                            "left": {"col": {"table": "t0", "name": "c1"}},
                            "right": {"lit": int(3)}}}}]}}}}},
                {"op": 3, "stmt": "commit"}]},
            {"id": 2, "autocommit": false, "stmts": [
                {"op": 4, "stmt": "begin"},
                {"op": 5, "stmt": {"select": {"distinct": false,
                    "items": [{"expr": {"col": {"table": "a0", "name": "c1"}}}],
                    "from": [{"table": "t0", "alias": "a0"}]}}},
                {"op": 6, "stmt": "commit"}]}],
        "submit_order": [
            {"txn": 1, "index": 0}, {"txn": 1, "index": 1}, {"txn": 1, "index": 2},
            {"txn": 2, "index": 0}, {"txn": 2, "index": 1}, {"txn": 2, "index": 2}]
    }))
    .unwrap()
}

/// The rows the upsert was seen writing.
fn upsert_written(h: &History) -> Vec<i64> {
    h.outcome(at(1, 1))
        .unwrap()
        .writes
        .iter()
        .map(|w| w.rid)
        .collect()
}

/// Which of two duplicated rows an `INSERT ... ON DUPLICATE KEY UPDATE`
/// updates is not specified (MariaDB KB: "If more than one unique index is
/// matched, only the first is updated"), and InnoDB's choice follows the
/// order its indexes were made, which the scratch tables cannot copy: where
/// a key came from a later CREATE UNIQUE INDEX, a difference is undecided
/// (`upsert-key-order`); with every key in CREATE TABLE the scratch run
/// makes the engine's choice and the case is decided. A recorded write of a
/// row the view did not predict is a violation, even when the final state
/// agrees (a fault: the upsert's write moved to the other row).
#[test]
fn mariadb_upsert_of_two_duplicated_rows_follows_the_index_order() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let late = upsert_two_duplicates(true);
    let (h, f, counts) = view_counts(common::open(&url), &late, Isolation::ReadCommitted);
    assert_eq!(upsert_written(&h), vec![1], "the c1 key first: {h:#?}");
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(
        counts.undecided_by.get("upsert-key-order"),
        Some(&1),
        "{counts:?}"
    );

    let declared = upsert_two_duplicates(false);
    let mut e = common::open(&url);
    let h = decided_clean(common::open(&url), &declared, Isolation::ReadCommitted);
    assert_eq!(
        upsert_written(&h),
        vec![2],
        "the NOT NULL c2 key first: {h:#?}"
    );

    // The fault: the upsert's recorded write names the other row.
    let mut faulty = h.clone();
    let o = faulty
        .outcomes
        .iter_mut()
        .find(|o| o.stmt == at(1, 1))
        .unwrap();
    o.outcome.writes[0].rid = 1;
    let mut stats = CheckStats::default();
    let mut case = declared.clone();
    case.isolation = Isolation::ReadCommitted;
    e.load(&case).unwrap();
    let f = txfuzz::oracle::view::check(
        e.as_mut(),
        &case,
        &faulty,
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert!(
        f.iter()
            .any(|x| x.verdict == txfuzz::oracle::Verdict::Violation && x.kind == "write-set"),
        "{f:#?}"
    );
}
