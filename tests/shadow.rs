//! The shadow run (`fidelity`) on the real servers (`TXFUZZ_MYSQL_URL`,
//! `TXFUZZ_PG_URL`; the tests are skipped, loudly, when they are unset): scripted schedules
//! where the instrumented and the plain statements must agree, and a fault
//! that perturbs the instrumentation, which the shadow run must catch.

mod common;

use txfuzz::campaign::run_case;
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{History, Isolation, StmtRef, TestCase, Value};
use txfuzz::oracle::{CheckStats, Finding, OracleKind};
use txfuzz::testkit::*;

/// The case and its shadow only.
fn shadowed(e: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>, CheckStats) {
    let mut stats = CheckStats::default();
    let (h, f) = run_case(
        e,
        case,
        &[OracleKind::Fidelity],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (h, f, stats)
}

/// The case of a finding kept in `tests/fixtures/replays/`, run on MariaDB
/// with one oracle.
fn replay_fixture(url: &str, name: &str, oracle: OracleKind) -> (Vec<Finding>, CheckStats) {
    let case = common::replay_case(name);
    let mut stats = CheckStats::default();
    let (_, findings) = run_case(
        common::open(url).as_mut(),
        &case,
        &[oracle],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (findings, stats)
}

/// A fixture's case run with `oracle`: no finding, and the case decided.
/// A run whose schedule had two waiters at once (the server picks which
/// goes first: `concurrent-waiters`, undecided by design) is run again, up
/// to three times; every run must be free of findings.
fn fixture_is_clean(url: &str, name: &str, oracle: OracleKind) {
    for attempt in 1..=3 {
        let (findings, stats) = replay_fixture(url, name, oracle);
        assert!(findings.is_empty(), "{oracle}: {findings:#?}");
        let counts = &stats.per_oracle[&oracle.to_string()];
        let raced = counts
            .undecided_by
            .keys()
            .all(|k| k == "concurrent-waiters");
        if counts.checked == 1 || !raced || attempt == 3 {
            assert_eq!(counts.checked, 1, "{oracle} (attempt {attempt}): {stats:?}");
            return;
        }
    }
}

/// A fixture's case run with `view`: no finding, and the case undecided
/// for `reason`.
fn fixture_is_undecided(url: &str, name: &str, reason: &str) {
    let (findings, stats) = replay_fixture(url, name, OracleKind::View);
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(
        stats.per_oracle["view"].undecided_by.get(reason),
        Some(&1),
        "{stats:?}"
    );
}

fn waited(h: &History, r: StmtRef) -> bool {
    h.events
        .iter()
        .any(|e| e.stmt == r && matches!(e.kind, txfuzz::model::EventKind::Blocked { .. }))
}

/// t = {(1,2), (2,1)}. T1 changes row 1 to v=1 and row 2 to v=3 (both
/// uncommitted). T2 at READ COMMITTED runs `UPDATE t SET v = 9 WHERE v = 1`:
/// InnoDB's semi-consistent read skips row 1 (its committed version v=2 does
/// not match) and waits for row 2 (committed v=1 matches); after T1 commits
/// it re-reads row 2 (v=3, no match) and changes nothing. A locking read of
/// the rows before the UPDATE would wait for row 1 as well and then see it.
#[test]
fn a_read_committed_update_waits_where_the_committed_version_matches_with_or_without_instrumentation(
) {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 2), (2, 1)],
        vec![
            committed(vec![set("t", 1, 1), set("t", 2, 3)]),
            committed(vec![set_where_v("t", 1, 9)]),
        ],
        "1 1 1 2 2 1 2",
    );
    case.isolation = Isolation::ReadCommitted;
    let (h, findings, stats) = shadowed(common::open(&url).as_mut(), &case);
    let update = StmtRef { txn: 2, index: 1 };
    assert!(waited(&h, update), "{h:#?}");
    assert_eq!(h.outcome(update).unwrap().affected, 0, "{h:#?}");
    assert_eq!(stats.per_oracle["fidelity"].checked, 1, "{stats:?}");
    assert!(findings.is_empty(), "{findings:#?}");
}

/// T1 and T2 update different rows: neither waits. With `extra-lock`, each
/// instrumented UPDATE first locks the whole table, so T2 waits for T1: the
/// shadow run, which runs the plain statements, must report it.
#[test]
fn the_shadow_run_catches_instrumentation_that_takes_extra_locks() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 1), (2, 2)],
        vec![
            committed(vec![set("t", 1, 5)]),
            committed(vec![set("t", 2, 6)]),
        ],
        "1 1 2 2 1 2",
    );
    case.isolation = Isolation::RepeatableRead;
    let update = StmtRef { txn: 2, index: 1 };
    let (h, findings, _) = shadowed(common::open(&url).as_mut(), &case);
    assert!(!waited(&h, update) && findings.is_empty(), "{findings:#?}");

    let mut faulty = FaultyEngine::new(common::open(&url), Fault::ExtraLock);
    let (h, findings, _) = shadowed(&mut faulty, &case);
    assert!(waited(&h, update), "{h:#?}");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].oracle, "fidelity");
    assert_eq!(findings[0].kind, "wait");
    assert_eq!(findings[0].evidence["differences"][0]["op"], 5);
}

/// PostgreSQL: no difference on a SERIALIZABLE write conflict (T2 waits for
/// T1, then fails), and the extra lock caught.
#[test]
fn the_shadow_run_agrees_on_postgres_and_catches_the_extra_lock() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 1), (2, 2)],
        vec![
            committed(vec![set("t", 1, 5)]),
            committed(vec![set("t", 1, 6)]),
        ],
        "1 1 2 2 1 2",
    );
    case.isolation = Isolation::Serializable;
    let (h, findings, stats) = shadowed(common::open(&url).as_mut(), &case);
    let update = StmtRef { txn: 2, index: 1 };
    assert!(waited(&h, update), "{h:#?}");
    assert!(h.outcome(update).unwrap().error.is_some(), "{h:#?}");
    assert_eq!(stats.per_oracle["fidelity"].checked, 1, "{stats:?}");
    assert!(findings.is_empty(), "{findings:#?}");

    // At READ COMMITTED (at SERIALIZABLE the waiting read would then fail
    // with a serialization failure, which the shadow leaves undecided: SSI's
    // aborts depend on the plan).
    case.txns[1].stmts[1].stmt = set("t", 2, 6);
    case.isolation = Isolation::ReadCommitted;
    let mut faulty = FaultyEngine::new(common::open(&url), Fault::ExtraLock);
    let (_, findings, _) = shadowed(&mut faulty, &case);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].kind, "wait");
}

/// `SELECT k, v FROM t ORDER BY v [LOCK IN SHARE MODE]` over an index on
/// `(v, k)`: as written, InnoDB reads (and locks) only the covering index;
/// projecting `rid, wl` would read the clustered records too. The locking
/// read runs as written, its result observed and its row versions not; the
/// plain read (which locks nothing) stays instrumented.
#[test]
fn a_locking_read_whose_plan_instrumentation_would_change_runs_as_written() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    use txfuzz::model::{Index, LockMode, OrderBy, Stmt};
    let read = |lock: Option<LockMode>| {
        let Stmt::Select(mut s) = select("t", None) else {
            unreachable!()
        };
        s.order_by = vec![OrderBy {
            expr: txfuzz::model::Expr::col("v"),
            desc: false,
        }];
        s.lock = lock;
        Stmt::Select(s)
    };
    let mut case = kv_case(
        &[(1, 2), (2, 1)],
        vec![committed(vec![read(Some(LockMode::ForShare)), read(None)])],
        "1 1 1 1",
    );
    case.isolation = Isolation::RepeatableRead;
    case.schema.tables[0].indexes.push(Index {
        name: "i_v".into(),
        columns: vec!["v".into(), "k".into()],
        unique: false,
    });
    let (h, findings, stats) = shadowed(common::open(&url).as_mut(), &case);
    let locking = h.outcome(StmtRef { txn: 1, index: 1 }).unwrap();
    let plain = h.outcome(StmtRef { txn: 1, index: 2 }).unwrap();
    assert_eq!(locking.rows, plain.rows);
    assert_eq!(locking.rows.len(), 2);
    assert!(
        !locking.reads_complete && locking.reads.is_empty(),
        "{locking:#?}"
    );
    assert!(plain.reads_complete && plain.reads.len() == 2, "{plain:#?}");
    assert_eq!(stats.per_oracle["fidelity"].checked, 1, "{stats:?}");
    assert!(findings.is_empty(), "{findings:#?}");
}

/// Fidelity regression (a 20-minute READ COMMITTED campaign, case 812,
/// reduced by `txfuzz reduce`): t0 has a PRIMARY KEY on `c0` and an index on
/// `(c0, c1)`. T1 deletes the row `c0 = 20`; T3's `UPDATE t0 SET c1 = 'bb'
/// WHERE c0 = 20` waits; T1 inserts `(20, 'abc')` and commits. On the plain
/// table InnoDB runs the UPDATE on the PRIMARY KEY and updates the new row;
/// the hidden `rid, wl` columns widen the clustered records, and on the
/// instrumented table it chose the `(c0, c1)` index, where the new entry
/// sorts before the deleted one it waited on: it updated nothing (view:
/// `resumed-missed-insert`; the shadow run: affected 0 vs 1). The judged
/// UPDATE now carries the plain twin's plan (`FORCE INDEX (PRIMARY)`).
#[test]
fn an_update_keeps_the_plan_of_the_plain_table() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for oracle in [OracleKind::Fidelity, OracleKind::View] {
        fixture_is_clean(
            &url,
            "read-committed-case812-update-plan-reinserted-row.json",
            oracle,
        );
    }
}

/// The DELETE form of case 812: T3's `DELETE FROM t0 WHERE c0 = 20` waits
/// for T1, which deleted the row and inserted the key again. On the plain
/// table InnoDB runs the DELETE on the PRIMARY KEY and deletes the new row.
/// MariaDB's single-table DELETE takes no index hint, so the instrumented
/// table must not move the plan: fixed-length hidden columns (a `BIGINT`
/// `rid`, a single-byte `CHAR(255)` `wl`) raised InnoDB's minimum record
/// length, lowered its estimate of the table's rows, and the optimizer chose
/// the `(c0, c1)` index, where the new entry sorts before the one it waited
/// on (the DELETE then deletes nothing). Hidden columns stored as
/// variable-length (`CHAR` in `utf8mb4`, `sql::Layout`) keep the plain plan.
#[test]
fn a_delete_keeps_the_plan_of_the_plain_table() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/replays/read-committed-case812-update-plan-reinserted-row.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut case = file["case"].clone();
    let update = case["txns"][1]["stmts"][1]["stmt"]["update"].clone();
    case["txns"][1]["stmts"][1]["stmt"] =
        serde_json::json!({"delete": {"table": "t0", "where_": update["where_"]}});
    let case: TestCase = serde_json::from_value(case).unwrap();
    let mut engine = common::open(&url);
    for oracle in [OracleKind::Fidelity, OracleKind::View] {
        let mut stats = CheckStats::default();
        let (h, findings) = run_case(
            engine.as_mut(),
            &case,
            &[oracle],
            &ExecOptions::default(),
            &mut stats,
        )
        .unwrap();
        let delete = h.outcome(StmtRef { txn: 3, index: 1 }).unwrap();
        assert_eq!(delete.affected, 1, "{oracle}: {delete:#?}");
        assert!(findings.is_empty(), "{oracle}: {findings:#?}");
        assert_eq!(
            stats.per_oracle[&oracle.to_string()].checked,
            1,
            "{stats:?}"
        );
    }
}

/// Fidelity regression (a 12-minute campaign at every level, every case
/// shadowed, case 1411, reduced by `txfuzz reduce`): at SERIALIZABLE, T1's
/// `SELECT a0.c1 FROM t1 AS a0` is a locking read. On the plain table
/// InnoDB scans the PRIMARY KEY and locks the clustered records, so T3's
/// `UPDATE t1 SET c0 = 'ab'` waits for T1; on the instrumented table (wider
/// clustered records) it scans the covering index on `c0` and locks only
/// its entries, and T3's UPDATE, which changes no `c0`, went through. The
/// judged read now carries the plain twin's plan (`FORCE INDEX (PRIMARY)`).
/// The case reduced again once that was fixed: the same read with a
/// `NOT IN (subquery)` (a plan of two tables): each table of the read and
/// its subqueries gets the plain plan's index.
#[test]
fn a_serializable_read_locks_what_the_plain_read_locks() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for fixture in [
        "serializable-case1411-fidelity-covering-index-lock.json",
        "serializable-case1411-fidelity-subquery-covering-index-lock.json",
    ] {
        fixture_is_clean(&url, fixture, OracleKind::Fidelity);
    }
}

/// Executor regression (a 20-minute campaign at every level, case 7893, a
/// `wss:tx-final-state` at SERIALIZABLE, reduced by `txfuzz reduce`): T1's
/// UPDATE closes a deadlock with T4, and InnoDB rolls T4 back inside it;
/// T2's autocommit DELETE, waiting on T4's lock, resumes and commits before
/// T1's UPDATE finishes. The executor re-checked waiting statements only
/// after a COMMIT, ROLLBACK or abort it submitted, so it recorded the
/// DELETE after T1's COMMIT and `wss` serialised T1 first (1 run in 2 to 7
/// found it). After a lock-taking statement of a transaction that another
/// waits for, the executor now takes the waiters' replies in flight first.
#[test]
fn a_deadlock_resolved_inside_a_statement_settles_the_waiters() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    for _ in 0..7 {
        let (findings, _) = replay_fixture(
            &url,
            "serializable-case7893-wss-deadlock-resolved-inside-a-statement.json",
            OracleKind::Wss,
        );
        assert!(findings.is_empty(), "{findings:#?}");
    }
}

/// Fidelity regression (20-minute READ COMMITTED and UNCOMMITTED campaigns,
/// case 513, reduced): T2's failed key change, T1's share-mode read waiting
/// for T2, T2's `UPDATE t0 SET c1 = c1 + 3 WHERE c0 = 10` and a full-table
/// UPDATE that closes a deadlock. InnoDB picks T1 as the victim on the plain
/// table; when the instrumented UPDATE appended to a `TEXT` `wl`, the record
/// grew, InnoDB moved it (and its locks) within the page, and picked T2. A
/// fixed-size `wl` (MariaDB: `CHAR(255)`, `sql::Layout`) keeps the update in
/// place: both runs pick the same victim.
#[test]
fn the_deadlock_victim_is_the_plain_runs() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_clean(
        &url,
        "read-committed-case513-fidelity-deadlock-victim.json",
        OracleKind::Fidelity,
    );
}

/// Model regression (a 20-minute READ UNCOMMITTED campaign, case 11001,
/// reduced): T2's `UPDATE t0 SET c0 = 'c' WHERE c0 = 'bb'` cascades to its
/// child row (ON UPDATE CASCADE) and then waits for T4's lock on the key
/// 'c'; T4 reads the child at READ UNCOMMITTED and sees the cascaded value
/// of the waiting statement, which later fails (duplicate key) and is
/// undone. A waiting write's foreign-key actions are partial writes too: the
/// read is undecided (`partial-write-visible`), not a `result` violation.
#[test]
fn a_read_uncommitted_read_of_a_waiting_cascade_is_undecided() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_undecided(
        &url,
        "read-uncommitted-case11001-view-waiting-cascade.json",
        "partial-write-visible",
    );
}

/// Fidelity regression (a 20-minute READ UNCOMMITTED campaign, case 3088,
/// reduced by `txfuzz reduce`): T2's failed UPDATE of parent t0 keeps its
/// lock; T3's `INSERT INTO t1` of a child waits on its foreign-key check
/// after putting in its clustered record; T1's autocommit join of t0 and t1
/// reads t1 through the foreign key's index as written (no new entry there
/// yet: 1 row) but through the clustered index when `rid, wl` are projected
/// (the half-inserted row too: 2 rows). At READ UNCOMMITTED the plan decides
/// what a plain read sees: such a read runs as written (`keep_plans`).
#[test]
fn a_read_uncommitted_read_whose_plan_instrumentation_would_change_runs_as_written() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_clean(
        &url,
        "read-uncommitted-case3088-fidelity-half-inserted-row.json",
        OracleKind::Fidelity,
    );
}

/// Harness regression (found by the 10-minute READ UNCOMMITTED campaign of
/// BENCHMARKS.md): `keep_plans` once ran in every execution, so `sdg`'s
/// locking version-set reads (`SELECT 1, rid, wl FROM t FOR UPDATE`, whose
/// plan differs from `SELECT 1 ...`) lost their observed rows and `sdg`
/// reported violations. Only the judged run keeps plans now.
#[test]
fn sdg_keeps_its_version_set_reads_observed() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_clean(
        &url,
        "read-uncommitted-case259-sdg-keep-plans.json",
        OracleKind::Sdg,
    );
}

/// Model regression (a 5-minute MariaDB campaign with `--jobs 2`, reduced):
/// T1's UPDATE leaves t1's one row as it was (`c1 = -2` already) and holds
/// its clustered record; T2's `SELECT c0 FROM t1 LOCK IN SHARE MODE` at READ
/// UNCOMMITTED runs as written from the index InnoDB made for t1's FOREIGN
/// KEY (covering: `c0` is the primary key) and does not wait. A foreign
/// key's index is a secondary index like a declared one: the case is
/// undecided, not a missed block.
#[test]
fn a_share_read_from_a_foreign_key_index_past_a_clustered_lock_is_undecided() {
    assert_undecided_covering_read("read-uncommitted-case3746-view-foreign-key-index.json");
}

/// Model regression (10-minute SERIALIZABLE campaign of BENCHMARKS.md): a
/// share-mode read that runs as written (`keep_plans`) from a covering
/// secondary index does not wait for a writer's lock on the clustered
/// record alone (T1's UPDATE left the index's columns as they were). `view`
/// once predicted a block there; it cannot see index records, so the case
/// is undecided now.
#[test]
fn a_covering_index_share_read_past_a_clustered_lock_is_undecided_not_a_missed_block() {
    assert_undecided_covering_read("serializable-case2106-view-covering-index.json");
}

/// `view` on the fixture's case: no finding, and undecided as
/// `covering-index-read`.
fn assert_undecided_covering_read(fixture: &str) {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_undecided(&url, fixture, "covering-index-read");
}

/// SQLite (and turso) write nothing for a row whose record stays the same:
/// T3 reads in a deferred transaction, T1's autocommit upsert matches row 1
/// and sets `v` to the value it has, T3 writes. The upsert changed nothing,
/// so T3's snapshot is still current and its write succeeds, in the plain
/// run and in the instrumented one (whose update arm appends to `wl` only
/// where a value changes; an unconditional append made the arm a write and
/// T3's write fail with BUSY_SNAPSHOT in the judged run only: found by the
/// 20-minute SQLite campaign of issue 33). With a changing arm, T3's write
/// fails in both runs.
#[test]
fn a_noop_upsert_arm_stays_a_noop_in_the_judged_run() {
    let upsert = |v: i64| {
        txfuzz::model::Stmt::Insert(txfuzz::model::Insert {
            table: "t".into(),
            columns: vec!["k".into(), "v".into()],
            rows: vec![vec![
                txfuzz::model::Expr::Lit(txfuzz::model::Value::Int(1)),
                txfuzz::model::Expr::Lit(txfuzz::model::Value::Int(99)),
            ]],
            rids: vec![100],
            select: None,
            on_conflict: txfuzz::model::OnConflict::Update {
                target: vec!["k".into()],
                assignments: vec![txfuzz::model::Assignment {
                    column: "v".into(),
                    value: txfuzz::model::Expr::Lit(txfuzz::model::Value::Int(v)),
                }],
            },
        })
    };
    let case = |v: i64| {
        kv_case(
            &[(1, 10)],
            vec![
                autocommit(vec![upsert(v)]),
                committed(vec![select("t", Some(1)), insert("t", 101, 2, 5)]),
            ],
            "2 2 1 2 2",
        )
    };
    let write = StmtRef { txn: 2, index: 2 };
    #[cfg_attr(not(feature = "turso"), allow(unused_mut))]
    let mut engines: Vec<Box<dyn Engine>> = vec![Box::new(
        txfuzz::engine::sqlite::SqliteEngine::open(None).unwrap(),
    )];
    #[cfg(feature = "turso")]
    engines.push(Box::new(
        txfuzz::engine::turso::TursoEngine::open(None, false).unwrap(),
    ));
    for mut e in engines {
        let name = e.info().name.clone();
        let (h, f, mut stats) = shadowed(e.as_mut(), &case(10));
        assert!(f.is_empty(), "{name}: {f:#?}");
        assert_eq!(stats.oracle("fidelity").checked, 1, "{name}");
        assert!(h.outcome(write).unwrap().ok(), "{name}: {h:#?}");
        let (h, f, _) = shadowed(e.as_mut(), &case(11));
        assert!(f.is_empty(), "{name}: {f:#?}");
        assert!(!h.outcome(write).unwrap().ok(), "{name}: {h:#?}");
    }
}

/// Each table of `sql`'s plan, in the order InnoDB joins them, with the
/// index it reads (`EXPLAIN`'s `table` and `key`).
fn plan(e: &mut dyn Engine, sql: &str) -> Vec<(Value, Value)> {
    let mut s = e
        .open_session(Isolation::Serializable, txfuzz::engine::WaitSignal::new())
        .unwrap();
    let r = s.query(&format!("EXPLAIN {sql}")).unwrap();
    r.rows
        .iter()
        .map(|row| (row[2].clone(), row[5].clone()))
        .collect()
}

/// A join's plan (a 90-second SERIALIZABLE campaign, case 337): on the
/// instrumented table InnoDB read `a0` from the covering secondary index
/// `i_t0_0` (or, with fresh statistics, scanned both tables), where the
/// plain table's plan reads the PRIMARY KEY, so a locking read locked other
/// records. Each table of a join now gets the plain plan's index, and an
/// inner join keeps the plain plan's order (`STRAIGHT_JOIN`; the rewriting
/// of the order is `engine::mysql::plans::tests`). The plain twin tables
/// are analyzed as the run's tables are, so their plan is the plain run's.
#[test]
fn a_join_reads_the_indexes_of_the_plain_plan() {
    use txfuzz::instrument::prepare_case;
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = &common::replay_case("serializable-case337-join-plan.json");
    let read = StmtRef { txn: 1, index: 1 };
    let mut e = common::open(&url);
    e.load(case).unwrap();
    let mut prepared = prepare_case(e.target(), case);
    let unhinted = plan(e.as_mut(), &prepared[&read].sql);
    e.keep_plans(case, &mut prepared).unwrap();
    let judged = plan(e.as_mut(), &prepared[&read].sql);
    e.load_as(case, txfuzz::sql::Layout::Plain).unwrap();
    let plain = plan(e.as_mut(), &prepared[&read].plain);
    assert_ne!(
        unhinted, plain,
        "the fixture no longer shows a plan difference"
    );
    assert_eq!(judged, plain, "{}", prepared[&read].sql);
}

/// Fidelity regression (a 20-minute campaign at every level, case 336, READ
/// UNCOMMITTED, reduced by `txfuzz reduce`): T1's REPLACE of a row identical
/// to the stored one changes nothing in the plain run (no undo record); when
/// T1 and T2 then deadlock, InnoDB rolls back the lighter transaction, T1.
/// The instrumented REPLACE used to change `rid` and `wl` (one undo record),
/// so T2 was rolled back instead (`fidelity:deadlock-victim`). On a table
/// whose key is its only unique one InnoDB runs a REPLACE as an update in
/// place, and the instrumented statement is the upsert that keeps a row with
/// the same values as it is: both runs roll back T1.
#[test]
fn a_no_op_replace_leaves_the_deadlock_victim_the_plain_runs() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let name = "read-uncommitted-case336-fidelity-deadlock-victim-noop-replace.json";
    fixture_is_clean(&url, name, OracleKind::Fidelity);
    let case = common::replay_case(name);
    let mut e = common::open(&url);
    e.load(&case).unwrap();
    let h = txfuzz::exec::execute(e.as_mut(), &case, &ExecOptions::default()).unwrap();
    assert_eq!(h.txn_end(1), Some(txfuzz::model::TxnEnd::Aborted), "{h:#?}");
}

/// The same class through `REPLACE ... SELECT` (a 20-minute campaign at
/// every level, case 2071, READ UNCOMMITTED, reduced): T1's `REPLACE INTO
/// t1 (c0) SELECT 7 FROM t1 AS a0 ...` meets the stored row 7 with its own
/// values (no undo record); T2 and T1 then deadlock, and InnoDB rolls back
/// the lighter T1. The instrumented REPLACE used to write the row, and T2
/// was rolled back instead; now both runs roll back T1.
#[test]
fn a_no_op_replace_select_leaves_the_deadlock_victim_the_plain_runs() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_clean(
        &url,
        "read-uncommitted-case2071-fidelity-deadlock-victim-noop-replace-select.json",
        OracleKind::Fidelity,
    );
}

/// Fidelity regression (a 20-minute campaign at every level, case 10258,
/// REPEATABLE READ): T3's `SELECT ... FROM t0 AS a0 INNER JOIN t1 AS a1 ...
/// LOCK IN SHARE MODE` names only columns of `t0` that its UNIQUE index
/// `(c1, c0)` holds. At load both `EXPLAIN`s read `a0` by the PRIMARY KEY;
/// after T4 deleted half of `t0`, the plain join read it through that index
/// alone (share-locking only its entries, so T2's UPDATE of the deleted key
/// waited for them), while the instrumented one, which needs `rid, wl`,
/// scanned the clustered index and T2 did not wait. A read that a secondary
/// index could answer alone now runs as written in the judged run.
#[test]
fn a_read_a_secondary_index_could_answer_alone_keeps_the_plain_plan_space() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    fixture_is_clean(
        &url,
        "repeatable-read-case10258-fidelity-wait-index-only-join.json",
        OracleKind::Fidelity,
    );
}

/// Purge during a run (a 20-minute campaign at every level, case 2272,
/// SERIALIZABLE, a `fidelity:wait` reduced by `txfuzz reduce`): T3 deletes
/// row 13 and commits while T2's UPDATE of every row waits for it; T2 then
/// locks the delete-marked record, and T1's locking read of the table
/// waits for T2 while the record is there. Once InnoDB's purge removed it,
/// the lock is on a gap and the read goes through, so whether T1 waited
/// depended on the purge threads (the old engine: 4 of 8 runs did not
/// wait). The engine's purge guard keeps the record for the run: T1 waits
/// in every run.
#[test]
fn a_locking_read_meets_the_delete_marked_record_in_every_run() {
    use txfuzz::exec::execute;
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = &common::replay_case("serializable-case2272-fidelity-purge-delete-marked.json");
    let read = StmtRef { txn: 1, index: 1 };
    let mut e = common::open(&url);
    for run in 0..8 {
        e.load(case).unwrap();
        let h = execute(e.as_mut(), case, &ExecOptions::default()).unwrap();
        let waited = h.events.iter().any(|ev| {
            ev.stmt == read && matches!(ev.kind, txfuzz::model::EventKind::Blocked { .. })
        });
        assert!(waited, "run {run}: {h:#?}");
    }
}

/// Model regression (seed 5 of a default MariaDB campaign, case 4104,
/// SERIALIZABLE): T3's key-changing `UPDATE t0 SET c0 = 5 ... WHERE c0 = 6
/// OR c0 = 9` inserts key 5 for row 6, meets a child of row 9 (foreign key)
/// and is undone; T1's `REPLACE INTO t0 (c0) VALUES (0), (5)` then inserts
/// key 5 without waiting and commits before T3. In the commit-order replay
/// T3's UPDATE meets key 5 first and fails on the primary key instead. It
/// failed both ways and wrote nothing: `wss` leaves the case undecided
/// (`failed-on-another-constraint`), where it reported a write-outcome
/// violation.
#[test]
fn a_write_that_fails_on_another_constraint_in_the_replay_is_undecided() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let name = "serializable-case4104-wss-failed-on-another-constraint.json";
    let (findings, stats) = replay_fixture(&url, name, OracleKind::Wss);
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(
        stats.per_oracle["wss"]
            .undecided_by
            .get("failed-on-another-constraint"),
        Some(&1),
        "{stats:?}"
    );
}
