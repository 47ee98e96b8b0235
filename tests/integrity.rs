//! The `integrity` oracle on every engine, with scripted schedules of a
//! parent delete and a child insert of that parent, in both orders, at every
//! level the engine implements: MariaDB and PostgreSQL make the second
//! statement wait and then fail its foreign-key check (or the transaction);
//! SQLite serialises the two. Whatever an engine does, the oracle's verdict
//! must match the final state, checked here independently. Each integrity
//! fault is caught on every engine (`orphan` deletes a parent behind the
//! server's back).

use txfuzz::campaign::run_case;
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{ErrorClass, EventKind, History, Isolation, StmtRef, TestCase, Value};
use txfuzz::oracle::{CheckStats, Finding, OracleKind};
use txfuzz::testkit::constraints::*;
use txfuzz::testkit::*;

mod common;

/// T1 deletes parent 1; T2 inserts a child of parent 1. `parent_first`:
/// T1's DELETE runs first, else T2's INSERT.
pub fn delete_vs_insert(isolation: Isolation, parent_first: bool) -> TestCase {
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
            committed(vec![insert_child(102, 6, 1)]),
        ],
        order,
    );
    case.isolation = isolation;
    case
}

fn run(e: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>) {
    let mut stats = CheckStats::default();
    let case = &in_default_mode(case, e);
    run_case(
        e,
        case,
        &[OracleKind::Integrity],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap()
}

/// Child keys of the final state that no parent has.
fn orphans(h: &History) -> Vec<Value> {
    let parents: Vec<&Value> = h.final_state["p"].iter().map(|r| &r[2]).collect();
    h.final_state["c"]
        .iter()
        .map(|r| r[3].clone())
        .filter(|k| !k.is_null() && !parents.contains(&k))
        .collect()
}

/// The oracle reports a `foreign-key` finding exactly when the final state
/// has an orphan; returns whether it has one.
fn verdict_matches_state(h: &History, f: &[Finding]) -> bool {
    let orphaned = !orphans(h).is_empty();
    let found = f.iter().any(|f| f.kind == "foreign-key");
    assert_eq!(found, orphaned, "orphans {:?}: {f:#?}\n{h:#?}", orphans(h));
    orphaned
}

fn blocked(h: &History, r: StmtRef) -> bool {
    h.events
        .iter()
        .any(|e| e.stmt == r && matches!(e.kind, EventKind::Blocked { .. }))
}

/// A server: the second of the two statements waits for the first's
/// transaction, then fails (its foreign-key check, or a serialization
/// failure); no orphan, no finding.
fn server_blocks_and_fails(open: impl Fn() -> Box<dyn Engine>) {
    let mut e = open();
    let levels = e.profile().isolations.clone();
    for level in levels {
        for parent_first in [true, false] {
            let case = delete_vs_insert(level, parent_first);
            let (h, f) = run(e.as_mut(), &case);
            let second = if parent_first {
                StmtRef { txn: 2, index: 1 }
            } else {
                StmtRef { txn: 1, index: 1 }
            };
            assert!(blocked(&h, second), "{level} {parent_first}: {h:#?}");
            let err = h.outcome(second).and_then(|o| o.error.as_ref());
            assert!(
                err.is_some_and(|e| matches!(
                    e.class,
                    ErrorClass::ForeignKeyViolation | ErrorClass::SerializationFailure
                )),
                "{level} {parent_first}: {err:?}"
            );
            assert!(!verdict_matches_state(&h, &f), "{level}: an orphan");
            assert!(f.is_empty(), "{level}: {f:#?}");
        }
    }
}

/// Each integrity fault breaks its constraint; the oracle names its kind.
fn faults_are_caught(open: impl Fn() -> Box<dyn Engine>) {
    let mut case = parent_child_case(
        &[(1, 10), (2, 20), (3, 30)],
        &[(5, 2), (6, 3)],
        vec![committed(vec![delete_parent(1)])],
        "1 1 1",
    );
    case.isolation = open().profile().isolations[0];
    for (fault, kind) in [
        (Fault::Orphan, "foreign-key"),
        (Fault::DuplicateKey, "unique"),
        (Fault::NullValue, "not-null"),
        (Fault::CheckViolation, "check"),
    ] {
        let mut e = FaultyEngine::new(open(), fault);
        let (h, f) = run(&mut e, &case);
        let kinds: Vec<&str> = f.iter().map(|f| f.kind.as_str()).collect();
        assert!(kinds.contains(&kind), "{}: {f:#?}\n{h:#?}", fault.name());
        if fault == Fault::Orphan {
            assert!(verdict_matches_state(&h, &f));
        }
    }
}

#[test]
fn sqlite_serialises_a_parent_delete_and_a_child_insert() {
    for parent_first in [true, false] {
        let mut e = SqliteEngine::open(None).unwrap();
        let case = delete_vs_insert(Isolation::Serializable, parent_first);
        let (h, f) = run(&mut e, &case);
        assert!(!verdict_matches_state(&h, &f), "{h:#?}");
        assert!(f.is_empty(), "{f:#?}");
        // One of the two failed its foreign-key check.
        let fk_errors = h
            .outcomes
            .iter()
            .filter(|o| {
                o.outcome
                    .error
                    .as_ref()
                    .is_some_and(|e| e.class == ErrorClass::ForeignKeyViolation)
            })
            .count();
        assert_eq!(fk_errors, 1, "{h:#?}");
    }
}

/// The measure of concurrent parent/child writes (`summary.json`
/// `parent_child_conflicts`, the known-issue trait): the overlapping delete
/// and insert conflict, the same two run one after the other do not, nor do
/// two child inserts.
#[test]
fn overlapping_parent_and_child_writes_are_a_conflict_serial_ones_are_not() {
    use txfuzz::model::fk_conflict::parent_child_conflict;
    let conflict = |case: &TestCase| {
        let mut e = SqliteEngine::open(None).unwrap();
        let (h, _) = run(&mut e, case);
        parent_child_conflict(case, &h)
    };
    let txns = || {
        vec![
            committed(vec![delete_parent(1)]),
            committed(vec![insert_child(102, 6, 1)]),
        ]
    };
    assert!(conflict(&parent_child_case(
        &[(1, 10)],
        &[],
        txns(),
        "1 2 1 2 1 2"
    )));
    assert!(!conflict(&parent_child_case(
        &[(1, 10)],
        &[],
        txns(),
        "1 1 1 2 2 2"
    )));
    let children = vec![
        committed(vec![insert_child(102, 6, 1)]),
        committed(vec![insert_child(103, 7, 1)]),
    ];
    assert!(!conflict(&parent_child_case(
        &[(1, 10)],
        &[],
        children,
        "1 2 1 2 1 2"
    )));
}

/// Every default oracle on a SQLite run: the history, findings and counts.
fn run_all(case: &TestCase) -> (History, Vec<Finding>, CheckStats) {
    let mut e = SqliteEngine::open(None).unwrap();
    let mut stats = CheckStats::default();
    let oracles = OracleKind::defaults();
    let (h, f) = run_case(&mut e, case, &oracles, &ExecOptions::default(), &mut stats).unwrap();
    (h, f, stats)
}

fn undecided(stats: &CheckStats, oracle: &str, reason: &str) -> u64 {
    stats
        .per_oracle
        .get(oracle)
        .and_then(|c| c.undecided_by.get(reason).copied())
        .unwrap_or(0)
}

/// ON DELETE CASCADE: T1's parent delete removes a child no statement
/// reports writing, while T2 reads the children. The oracles that follow
/// row versions stop there (`cascade-unobserved`) instead of reporting the
/// vanished child; `integrity` and `wss` judge the case; no finding.
#[test]
fn a_cascade_is_judged_by_integrity_and_left_undecided_by_view_and_sdg() {
    let mut case = parent_child_case(
        &[(1, 10), (2, 20)],
        &[(5, 1), (6, 2)],
        vec![
            committed(vec![delete_parent(1)]),
            committed(vec![select_children(), select_children()]),
        ],
        "2 2 1 1 1 2 2",
    );
    case.schema.tables[1].foreign_keys[0].on_delete = txfuzz::model::FkAction::Cascade;
    let (h, f, stats) = run_all(&case);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(h.final_state["c"].len(), 1, "{h:#?}");
    assert_eq!(
        undecided(&stats, "view", "cascade-unobserved"),
        1,
        "{stats:?}"
    );
    assert_eq!(
        undecided(&stats, "sdg", "cascade-unobserved"),
        1,
        "{stats:?}"
    );
    assert_eq!(stats.per_oracle["integrity"].checked, 1);
    assert_eq!(stats.per_oracle["wss"].undecided, 0, "{stats:?}");
}

/// DEFERRABLE INITIALLY DEFERRED: T1 inserts a child before its parent and
/// commits (checked at COMMIT); a second case commits the orphan, and the
/// COMMIT fails. No finding either way; `sdg`, whose replay has no
/// transactions, leaves both undecided (`deferred-constraint`).
#[test]
fn a_deferred_key_is_checked_at_commit_and_no_oracle_misreads_it() {
    for (stmts, commits) in [
        (vec![insert_child(102, 7, 3), insert_parent(3, 3, 30)], true),
        (vec![insert_child(102, 7, 3)], false),
    ] {
        let mut case = parent_child_case(
            &[(1, 10)],
            &[(5, 1)],
            vec![committed(stmts), committed(vec![select_children()])],
            "1 2 1 2 2 1 1 2",
        );
        let known = case.clone();
        case.submit_order.retain(|r| known.stmt(*r).is_some());
        case.schema.tables[1].foreign_keys[0].deferrable =
            Some(txfuzz::model::Deferral::InitiallyDeferred);
        case.validate().unwrap();
        let (h, f, stats) = run_all(&case);
        assert!(f.is_empty(), "{f:#?}");
        let end = h.txn_end(1);
        let want = if commits {
            txfuzz::model::TxnEnd::Committed
        } else {
            txfuzz::model::TxnEnd::Aborted
        };
        assert_eq!(end, Some(want), "{h:#?}");
        assert!(orphans(&h).is_empty(), "{h:#?}");
        assert_eq!(
            undecided(&stats, "sdg", "deferred-constraint"),
            1,
            "{stats:?}"
        );
    }
}

/// A parent DELETE whose ON DELETE CASCADE reaches a grandchild's RESTRICT
/// fails while the grandchild table has a referencing row; `sdg` once ordered
/// it after the transaction's own insert into the grandchild table (its
/// version-set reads missed the table two keys away) and reported a false
/// `sdg:stmt-result` on SQLite (a reduced 20-minute-campaign finding).
#[test]
fn sdg_reads_the_tables_a_cascade_reaches() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sdg-restrict-below-cascade.json");
    let file = txfuzz::finding::load_case_file(&path).unwrap();
    let case = file.case().clone();
    let mut e = SqliteEngine::open(None).unwrap();
    let mut stats = CheckStats::default();
    let (h, f) = run_case(
        &mut e,
        &case,
        &[OracleKind::Sdg],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    let delete = StmtRef { txn: 3, index: 1 };
    let err = h
        .outcome(delete)
        .and_then(|o| o.error.as_ref())
        .map(|e| e.class);
    assert_eq!(err, Some(ErrorClass::ForeignKeyViolation), "{h:#?}");
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(stats.per_oracle["sdg"].checked, 1, "{stats:?}");
}

#[test]
fn sqlite_integrity_faults_are_caught() {
    faults_are_caught(|| Box::new(SqliteEngine::open(None).unwrap()));
}

#[test]
fn mariadb_blocks_then_fails_the_second_of_a_parent_delete_and_a_child_insert() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    server_blocks_and_fails(|| common::open(&url));
}

#[test]
fn mariadb_integrity_faults_are_caught() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    faults_are_caught(|| common::open(&url));
}

#[test]
fn postgres_blocks_then_fails_the_second_of_a_parent_delete_and_a_child_insert() {
    let Some(url) = common::pg_url() else { return };
    server_blocks_and_fails(|| common::open(&url));
}

#[test]
fn postgres_integrity_faults_are_caught() {
    let Some(url) = common::pg_url() else { return };
    faults_are_caught(|| common::open(&url));
}

#[cfg(feature = "turso")]
mod turso {
    use super::*;
    use txfuzz::engine::turso::TursoEngine;

    fn open(mvcc: bool) -> Box<dyn Engine> {
        Box::new(TursoEngine::open(None, mvcc).unwrap())
    }

    /// Whatever turso does with the two statements, the oracle's verdict
    /// matches the final state.
    #[test]
    fn turso_verdicts_match_the_final_state_in_both_modes() {
        for mvcc in [false, true] {
            for parent_first in [true, false] {
                let mut e = open(mvcc);
                let level = e.profile().isolations[0];
                let case = delete_vs_insert(level, parent_first);
                let (h, mut f) = run(e.as_mut(), &case);
                txfuzz::finding::known::KnownIssues::builtin().mark(&mut f, &case, &h, e.info());
                let orphaned = verdict_matches_state(&h, &f);
                // WAL: one writer at a time, the second fails (BUSY). MVCC:
                // both commit and leave an orphan (docs/bugs.md,
                // turso#5955), a violation marked known.
                assert_eq!(orphaned, mvcc, "{h:#?}");
                if mvcc {
                    assert!(f[0].is_known_violation(), "{f:#?}");
                }
            }
        }
    }

    /// MVCC: the orphan of the concurrent parent delete and child insert
    /// (turso#5955) is read by a later transaction and then deleted: the
    /// final state is clean, the reader's snapshot is not. `integrity`
    /// finds it there (marked known); WAL mode has no orphan to find.
    #[test]
    fn turso_an_orphan_seen_in_a_snapshot_and_deleted_later_is_found() {
        for mvcc in [false, true] {
            let mut e = open(mvcc);
            let mut case = parent_child_case(
                &[(1, 10), (2, 20)],
                &[(5, 2)],
                vec![
                    committed(vec![delete_parent(1)]),
                    committed(vec![insert_child(102, 6, 1)]),
                    committed(vec![select_children(), select_parents()]),
                    autocommit(vec![delete_child(6)]),
                ],
                "1 2 1 2 1 2 3 3 3 3 4",
            );
            case.isolation = e.profile().isolations[0];
            let (h, mut f) = run(e.as_mut(), &case);
            txfuzz::finding::known::KnownIssues::builtin().mark(&mut f, &case, &h, e.info());
            assert!(orphans(&h).is_empty(), "{h:#?}");
            let snapshot: Vec<&Finding> = f
                .iter()
                .filter(|f| f.kind == "foreign-key" && f.evidence["state"] == "snapshot")
                .collect();
            assert_eq!(snapshot.len(), usize::from(mvcc), "{f:#?}\n{h:#?}");
            assert!(f.iter().all(|f| f.is_known_violation()), "{f:#?}");
        }
    }

    /// The reduced case of the issue-34 chaos campaign: one REPLACE deletes
    /// two parents of a deferred key and inserts one again; COMMIT succeeds
    /// with an orphan (tests/turso_bugs.rs). `integrity` finds it in both
    /// modes, marked as the known reinsert imbalance (it was a new violation:
    /// the trait knew only a DELETE followed by an INSERT).
    #[test]
    fn turso_a_replace_of_two_parents_is_the_known_reinsert_imbalance() {
        fixture_is_the_known_issue(
            "turso-replace-two-parents.json",
            "turso-deferred-key-reinsert-repays-other-violations",
        );
    }

    /// In both modes, `integrity` finds foreign-key violations in the case of
    /// `fixture` (tests/fixtures), each marked as known issue `id`.
    fn fixture_is_the_known_issue(fixture: &str, id: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(fixture);
        let file = txfuzz::finding::load_case_file(&path).unwrap();
        for mvcc in [false, true] {
            let mut e = open(mvcc);
            let mut case = file.case().clone();
            case.isolation = e.profile().isolations[0];
            let (h, mut f) = run(e.as_mut(), &case);
            txfuzz::finding::known::KnownIssues::builtin().mark(&mut f, &case, &h, e.info());
            let fk: Vec<&Finding> = f.iter().filter(|f| f.kind == "foreign-key").collect();
            assert!(!fk.is_empty(), "mvcc {mvcc}: {f:#?}\n{h:#?}");
            for f in fk {
                assert_eq!(f.known.as_ref().map(|k| k.id.as_str()), Some(id), "{f:#?}");
            }
        }
    }

    /// The reduced case of issue 32's turso WAL campaign (seed 2, case
    /// 21050): one transaction points both children at parent -4 (indexed
    /// child column), deletes every parent, then sets one child's key to
    /// NULL; COMMIT succeeds with the other child an orphan
    /// (tests/turso_bugs.rs). `integrity` finds it in both modes, marked as
    /// the known issue of the indexed parent-side count.
    #[test]
    fn turso_a_child_written_after_its_parent_was_deleted_is_the_known_indexed_count() {
        fixture_is_the_known_issue(
            "turso-indexed-parent-delete-child-write.json",
            "turso-deferred-key-indexed-parent-delete-counts-one-violation",
        );
    }

    #[test]
    fn turso_integrity_faults_are_caught_in_both_modes() {
        faults_are_caught(|| open(false));
        faults_are_caught(|| open(true));
    }
}

/// T1 reads `c` (its snapshot), an autocommit T2 deletes the child with
/// `u = 5`, T1 inserts another child with `u = 5` (no conflict in the latest
/// state) and reads `c` again: its snapshot's row and its own row.
fn own_insert_over_deleted_snapshot_row(isolation: Isolation) -> TestCase {
    let mut case = parent_child_case(
        &[(1, 10)],
        &[(5, 1)],
        vec![
            committed(vec![
                select_children(),
                insert_child_u(102, 6, 5),
                select_children(),
            ]),
            autocommit(vec![delete_child_u(5)]),
        ],
        "1 1 2 1 1 1",
    );
    case.data[1].rows[0].values[2] = Value::Int(5);
    case.isolation = isolation;
    case
}

/// At `permitted_at`, the second read returns the deleted snapshot row and
/// the transaction's own row, which share `u = 5`: a `unique` finding the
/// profile permits there (with its source); no finding at other levels.
fn own_insert_over_snapshot(mut e: Box<dyn Engine>, permitted_at: Isolation) {
    for level in e.profile().isolations.clone() {
        let case = own_insert_over_deleted_snapshot_row(level);
        let (h, f) = run(e.as_mut(), &case);
        let read = h.outcome(StmtRef { txn: 1, index: 3 });
        if level != permitted_at {
            assert!(f.is_empty(), "{level}: {f:#?}");
            continue;
        }
        assert_eq!(read.map(|o| o.rows.len()), Some(2), "{level}: {h:#?}");
        assert_eq!(f.len(), 1, "{level}: {f:#?}");
        assert_eq!(f[0].kind, "unique");
        let by = f[0].permitted_by.as_ref().expect("permitted");
        assert_eq!(by.fact, format!("own_writes_over_snapshot[{level}]"));
    }
}

/// T1 locks the child with `u = 5`; T2 inserts another child with `u = 5`,
/// which waits for T1's lock in its unique check after InnoDB placed the new
/// row; an autocommit T3 at READ UNCOMMITTED reads both rows; T1 commits and
/// T2's insert fails (duplicate key).
fn dirty_read_of_a_waiting_insert() -> TestCase {
    let lock = txfuzz::model::Stmt::Update(txfuzz::model::Update {
        table: "c".into(),
        assignments: vec![txfuzz::model::Assignment {
            column: "pk".into(),
            value: txfuzz::model::Expr::Lit(Value::Null),
        }],
        where_: Some(txfuzz::model::Expr::eq(
            txfuzz::model::Expr::col("u"),
            txfuzz::model::Expr::Lit(Value::Int(5)),
        )),
    });
    let mut case = parent_child_case(
        &[(1, 10)],
        &[(5, 1)],
        vec![
            committed(vec![lock]),
            committed(vec![insert_child_u(102, 6, 5)]),
            autocommit(vec![select_children()]),
        ],
        "1 1 2 2 3 1 2",
    );
    case.data[1].rows[0].values[2] = Value::Int(5);
    case.isolation = Isolation::ReadUncommitted;
    case
}

#[test]
fn mariadb_read_uncommitted_reads_a_waiting_insert_next_to_the_row_it_duplicates() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    let case = dirty_read_of_a_waiting_insert();
    let (h, f) = run(e.as_mut(), &case);
    let insert = StmtRef { txn: 2, index: 1 };
    assert!(blocked(&h, insert), "{h:#?}");
    let err = h
        .outcome(insert)
        .and_then(|o| o.error.as_ref())
        .map(|e| e.class);
    assert_eq!(err, Some(ErrorClass::DuplicateKey), "{h:#?}");
    let read = h.outcome(StmtRef { txn: 3, index: 0 }).unwrap();
    assert_eq!(read.rows.len(), 2, "{h:#?}");
    assert_eq!(f.len(), 1, "{f:#?}");
    let by = f[0].permitted_by.as_ref().expect("permitted");
    assert_eq!(by.fact, "uncommitted_reads_inconsistent[read-uncommitted]");
    // The same read at READ COMMITTED sees one row: no finding.
    let mut rc = dirty_read_of_a_waiting_insert();
    rc.isolation = Isolation::ReadCommitted;
    let (h, f) = run(e.as_mut(), &rc);
    assert_eq!(
        h.outcome(StmtRef { txn: 3, index: 0 }).unwrap().rows.len(),
        1
    );
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn mariadb_repeatable_read_reads_its_own_insert_next_to_a_deleted_snapshot_row() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    own_insert_over_snapshot(common::open(&url), Isolation::RepeatableRead);
}

#[test]
fn postgres_repeatable_read_reads_its_own_insert_next_to_a_deleted_snapshot_row() {
    let Some(url) = common::pg_url() else { return };
    own_insert_over_snapshot(common::open(&url), Isolation::RepeatableRead);
}

/// PostgreSQL SERIALIZABLE: T1 reads the children, inserts one with
/// `u = 5`, which a READ COMMITTED session deleted meanwhile, and reads them
/// again: its snapshot's row next to its own share `u = 5`. T1 then rolls
/// back: a transaction's reads count only once it has committed (13.2.3),
/// so the read is permitted by `reads_valid_after_commit`; the same finding
/// of a transaction that committed, beside no weaker writer, is not.
#[test]
fn postgres_serializable_reads_count_only_once_committed() {
    let Some(url) = common::pg_url() else { return };
    let mut case = own_insert_over_deleted_snapshot_row(Isolation::Serializable);
    case.txns[1].isolation = Some(Isolation::ReadCommitted);
    let t1 = &mut case.txns[0].stmts;
    let last = t1.len() - 1;
    t1[last].stmt = txfuzz::model::Stmt::Rollback;
    let mut e = common::open(&url);
    let (h, f) = run(e.as_mut(), &case);
    let read = h.outcome(StmtRef { txn: 1, index: 3 });
    assert_eq!(read.map(|o| o.rows.len()), Some(2), "{h:#?}");
    assert_eq!(f.len(), 1, "{f:#?}");
    let by = f[0].permitted_by.as_ref().expect("permitted");
    assert_eq!(by.fact, "reads_valid_after_commit[serializable]");
    let mut committed = f.clone();
    committed[0].claim = Some(txfuzz::oracle::verdict::Claim::OwnWritesOverSnapshot {
        committed: true,
        beside_weaker_writer: false,
    });
    txfuzz::oracle::verdict::apply(&mut committed, e.profile(), Isolation::Serializable);
    assert_eq!(committed[0].verdict, txfuzz::oracle::Verdict::Violation);
}

/// PostgreSQL SERIALIZABLE: the same schedule with T1 committing. With the
/// deleter at READ COMMITTED PostgreSQL lets T1 commit (its guarantee covers
/// serializable transactions among themselves), and the read is permitted
/// by `guarantee_among_own_level_only`; with both SERIALIZABLE, T1's INSERT
/// fails with 40001 instead and there is no read to judge.
#[test]
fn postgres_serializable_reads_beside_a_weaker_writer_are_not_covered() {
    let Some(url) = common::pg_url() else { return };
    let mut e = common::open(&url);
    let mut case = own_insert_over_deleted_snapshot_row(Isolation::Serializable);
    case.txns[1].isolation = Some(Isolation::ReadCommitted);
    let (h, f) = run(e.as_mut(), &case);
    assert_eq!(
        h.txn_end(1),
        Some(txfuzz::model::TxnEnd::Committed),
        "{h:#?}"
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    let by = f[0].permitted_by.as_ref().expect("permitted");
    assert_eq!(by.fact, "guarantee_among_own_level_only[serializable]");
    let (h, f) = run(
        e.as_mut(),
        &own_insert_over_deleted_snapshot_row(Isolation::Serializable),
    );
    let insert = h.outcome(StmtRef { txn: 1, index: 2 }).unwrap();
    assert_eq!(
        insert.error.as_ref().map(|e| e.class),
        Some(ErrorClass::SerializationFailure),
        "{h:#?}"
    );
    assert!(f.is_empty(), "{f:#?}");
}
