//! The verdict policy end to end: no level-wide permission (wss is undecided
//! where the engine does not detect write conflicts), MariaDB's savepoint bug
//! comes out as a known violation (and the documented behaviour as nothing),
//! `--known` / `--fail-on-known`, and `txfuzz check` re-derives the verdict a
//! campaign recorded.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use txfuzz::campaign::run_case;
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::finding::known::KnownIssues;
use txfuzz::model::{Isolation, Stmt, TestCase};
use txfuzz::oracle::{CheckStats, Finding, OracleKind, Verdict};
use txfuzz::testkit::*;

fn txfuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(args)
        .output()
        .expect("run txfuzz")
}

fn run_all(e: &mut dyn Engine, case: &TestCase) -> (Vec<Finding>, CheckStats) {
    let mut stats = CheckStats::default();
    let (h, mut f) = run_case(
        e,
        case,
        &OracleKind::defaults(),
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    KnownIssues::builtin().mark(&mut f, case, &h, e.info());
    (f, stats)
}

/// T1 reads row 1 after a savepoint and rolls back to it; T2 updates rows 1
/// and 2 and commits; T1 then reads row 2. With `first` statements before the
/// savepoint. InnoDB keeps T1's lock on row 1 (SERIALIZABLE: a shared lock),
/// so T2 waits for T1's commit: serial. MariaDB releases it when the savepoint
/// came before T1's first InnoDB statement: T1 read row 1 before T2 and row 2
/// after T2, a G-single cycle.
fn savepoint_case(first: Vec<Stmt>) -> TestCase {
    let mut t1 = vec![Stmt::begin()];
    t1.extend(first.iter().cloned());
    t1.extend([
        Stmt::Savepoint("sp1".into()),
        select("t", Some(1)),
        Stmt::RollbackTo("sp1".into()),
        select("t", Some(2)),
        Stmt::Commit,
    ]);
    let before = "1 ".repeat(first.len());
    let mut case = kv_case(
        &[(1, 10), (2, 20), (3, 30)],
        vec![(false, t1), committed(vec![add("t", 1, 5), add("t", 2, 5)])],
        &format!("1 {before}1 1 2 2 1 2 2 1 1"),
    );
    case.isolation = Isolation::Serializable;
    case
}

#[test]
fn mariadb_savepoint_before_the_first_statement_is_a_known_violation() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    let (f, _) = run_all(e.as_mut(), &savepoint_case(vec![]));
    assert!(!f.is_empty(), "the savepoint bug must be found");
    for x in &f {
        assert_eq!(x.verdict, Verdict::Violation, "{x:#?}");
        let k = x
            .known
            .as_ref()
            .unwrap_or_else(|| panic!("not known: {x:#?}"));
        assert_eq!(k.id, "mariadb-savepoint-before-first-statement");
    }
    // A user's file with no entries changes nothing; --fail-on-known is the
    // CLI's business (below).
    assert!(f.iter().any(|x| x.oracle == "graph"), "{f:#?}");
}

#[test]
fn mariadb_savepoint_after_the_first_statement_keeps_its_lock_and_nothing_is_found() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    let (f, _) = run_all(e.as_mut(), &savepoint_case(vec![select("t", Some(3))]));
    assert!(f.is_empty(), "{f:#?}");
}

/// At READ COMMITTED / READ UNCOMMITTED InnoDB does not detect every write
/// conflict, so `wss` judges a case only when each write saw exactly the
/// units committed before its own (`oracle::commit_order`): a write that
/// waited is left to `view` (`write-waited`); REPEATABLE READ is judged.
#[test]
fn wss_judges_only_sound_cases_where_the_engine_does_not_detect_write_conflicts() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), add("t", 1, 1)]),
            committed(vec![add("t", 1, 2)]),
        ],
        "1 1 1 2 2 2 1 1",
    );
    for (level, undecided) in [
        (Isolation::ReadCommitted, true),
        (Isolation::ReadUncommitted, true),
        (Isolation::RepeatableRead, false),
    ] {
        case.isolation = level;
        let (f, stats) = run_all(e.as_mut(), &case);
        let wss = stats.per_oracle.get("wss").cloned().unwrap_or_default();
        assert_eq!(
            wss.undecided_by.get("write-waited").copied().unwrap_or(0),
            u64::from(undecided),
            "{level}: {wss:?}"
        );
        assert_eq!(wss.checked, u64::from(!undecided), "{level}: {wss:?}");
        // Nothing is permitted without a documented permission.
        for x in &f {
            if x.verdict == Verdict::Permitted {
                assert!(x.permitted_by.is_some(), "{x:#?}");
                assert_ne!(x.oracle, "wss", "{x:#?}");
            }
        }
    }
}

/// A write that waited for a holder that rolled back read an unchanged
/// committed state: judged at READ COMMITTED.
#[test]
fn wss_judges_a_write_that_waited_for_a_rolled_back_holder() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            (false, vec![Stmt::begin(), add("t", 1, 1), Stmt::Rollback]),
            committed(vec![add("t", 1, 2)]),
        ],
        "1 1 2 2 1 2",
    );
    case.isolation = Isolation::ReadCommitted;
    let mut stats = CheckStats::default();
    let (h, f) = run_case(
        common::open(&url).as_mut(),
        &case,
        &OracleKind::defaults(),
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    let t2_update = txfuzz::model::StmtRef { txn: 2, index: 1 };
    assert!(
        h.events
            .iter()
            .any(|e| e.stmt == t2_update
                && matches!(e.kind, txfuzz::model::EventKind::Blocked { .. })),
        "T2's UPDATE must wait for T1: {h:#?}"
    );
    assert!(f.is_empty(), "{f:#?}");
    let wss = &stats.per_oracle["wss"];
    assert_eq!(wss.checked, 1, "{wss:?}");
}

/// T1 begins, T2 updates k=1 and commits, then T1 updates k=1: at READ
/// COMMITTED T1's UPDATE reads T2's committed row (its view point is its own
/// start), so the commit-order replay is sound and `wss` judges the case; a
/// fault that evaluates T1's UPDATE on the state at its BEGIN is found, the
/// real engine is not reported.
#[test]
fn wss_finds_a_stale_update_at_read_committed() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![add("t", 1, 1), select("t", None)]),
            committed(vec![add("t", 1, 5)]),
        ],
        "1 2 2 2 1 1 1",
    );
    for level in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        case.isolation = level;
        let (f, stats) = run_all(common::open(&url).as_mut(), &case);
        assert!(f.is_empty(), "{level}: {f:#?}");
        assert_eq!(stats.per_oracle["wss"].checked, 1, "{level}: {stats:?}");
        let mut faulty = FaultyEngine::new(common::open(&url), Fault::StaleUpdate);
        let (f, _) = run_all(&mut faulty, &case);
        assert!(
            f.iter()
                .any(|x| x.oracle == "wss" && x.kind == "tx-final-state"),
            "{level}: {f:#?}"
        );
    }
}

fn check_agrees(file: &Path) {
    let o = txfuzz(&["check", file.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("(agrees)"),
        "{}: {out}\n{}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Findings of a fault campaign (violations of every kind `wss`, `graph`,
/// `view`, `sdg` make) get the same verdict from `txfuzz check`.
#[test]
fn check_gives_the_verdict_of_the_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let o = txfuzz(&[
        "run",
        "--tests",
        "60",
        "--seed",
        "3",
        "--fault",
        "lose-write",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut files: Vec<_> = std::fs::read_dir(out.join("findings"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    for f in files.iter().take(12) {
        check_agrees(f);
    }
}

/// Finding files kept from the MariaDB campaigns of BENCHMARKS.md (known
/// violations, permitted findings and violations of several oracles).
#[test]
fn check_gives_the_recorded_verdict_for_kept_server_findings() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/findings");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "json") {
            check_agrees(&e.path());
            n += 1;
        }
    }
    assert!(n >= 5, "only {n} fixture findings in {}", dir.display());
}

#[test]
fn known_violations_do_not_fail_a_run_unless_asked() {
    let tmp = tempfile::tempdir().unwrap();
    // Every lose-write violation on SQLite, declared known by a user file.
    let known = tmp.path().join("known.toml");
    std::fs::write(
        &known,
        "[[issue]]\nid = \"test-lost-writes\"\nengines = [\"sqlite\"]\nsignature = \"*\"\nreference = \"self-test\"\ndescription = \"the fault injector loses writes\"\n",
    )
    .unwrap();
    let run = |extra: &[&str], out: &str| {
        let out = tmp.path().join(out);
        let mut args = vec![
            "run",
            "--tests",
            "40",
            "--seed",
            "3",
            "--fault",
            "lose-write",
            // The shadow run would report the fault itself (fidelity).
            "--shadow",
            "0",
            "--quiet",
            "--known",
            known.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = txfuzz(&args);
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        (o.status.code(), s)
    };
    let (code, s) = run(&[], "a");
    assert_eq!(code, Some(0), "{s:#}");
    assert_eq!(s["violations"], 0);
    assert!(s["known_violations"].as_u64().unwrap() > 0, "{s:#}");
    assert!(s["known_by"]["test-lost-writes"].as_u64().unwrap() > 0);
    let (code, _) = run(&["--fail-on-known"], "b");
    assert_eq!(code, Some(1));
    // A malformed file is a one-line usage error.
    std::fs::write(&known, "[[issue]]\nid = 3\n").unwrap();
    let o = txfuzz(&["run", "--tests", "1", "--known", known.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a valid known-issues file"), "{err}");
}
