//! `txfuzz export --format script`: SQLite and turso findings as Python
//! programs on the engine's own module (`sqlite3`; `turso` from PyPI's
//! pyturso, the engine's version, which scripts/install-pyturso.sh puts in
//! a virtual environment). A live known bug's program fails on what the
//! finding judged; generated cases exported as observed pass.

mod common;

use std::path::Path;
use std::process::Command;
use txfuzz::campaign::run_case;
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::export::{export, script, Format};
use txfuzz::finding::known::KnownIssues;
use txfuzz::finding::FindingRecord;
use txfuzz::model::{ConstraintTiming, Deferral, Isolation, Stmt, TestCase};
use txfuzz::oracle::{CheckStats, OracleKind};
use txfuzz::testkit::committed;
use txfuzz::testkit::constraints::*;

/// Runs the program `source` with `python`: its exit code and output.
fn run_python(python: &Path, source: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("finding.py");
    std::fs::write(&file, source).unwrap();
    let o = Command::new(python)
        .arg(&file)
        .output()
        .expect("python runs");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), out)
}

/// The finding of `oracle:kind` of `case` on `e`, marked with its known issue.
fn finding_of(e: &mut dyn Engine, case: &TestCase, kind: &str) -> FindingRecord {
    let mut stats = CheckStats::default();
    let (h, mut findings) = run_case(
        e,
        case,
        &OracleKind::defaults(),
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    KnownIssues::builtin().mark(&mut findings, case, &h, e.info());
    let f = findings
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} finding: {findings:#?}"))
        .clone();
    FindingRecord::new(f, e.info().clone(), case.clone(), h)
}

fn program(rec: &FindingRecord) -> String {
    let files = export(rec, Format::Script, "finding").unwrap();
    assert_eq!(files.len(), 1);
    files[0].contents.clone()
}

/// The SQLite known issue `sqlite-defer-foreign-keys-off-forgets-pending-violations`:
/// `PRAGMA defer_foreign_keys = ON`, an orphan child, `= OFF`, COMMIT
/// succeeds. The exported program counts the orphans after the schedule.
#[test]
fn the_sqlite_known_bug_exported_fails_under_python_sqlite3() {
    let mut case = parent_child_case(
        &[(1, 10), (2, 20)],
        &[(5, 2)],
        vec![committed(vec![
            Stmt::SetConstraints(ConstraintTiming::Deferred),
            insert_child(102, 7, 3),
            Stmt::SetConstraints(ConstraintTiming::Immediate),
        ])],
        "1 1 1 1 1",
    );
    case.schema.tables[1].foreign_keys[0].deferrable = Some(Deferral::InitiallyImmediate);
    case.isolation = Isolation::Serializable;
    let mut e = SqliteEngine::open(None).unwrap();
    let rec = finding_of(&mut e, &case, "foreign-key");
    assert_eq!(
        rec.finding.known.as_ref().map(|k| k.id.as_str()),
        Some("sqlite-defer-foreign-keys-off-forgets-pending-violations")
    );
    let source = program(&rec);
    let Some(python) = common::python3() else {
        return;
    };
    let (code, out) = run_python(&python, &source);
    assert_eq!(code, Some(1), "{out}\n{source}");
    assert!(
        out.contains(
            "FAILED: FOREIGN KEY (pk) REFERENCES p (k) of c: rows that break it returned [(1,)]"
        ),
        "{out}"
    );
}

/// Generated SQLite cases without lock waits, exported with their observed
/// outputs, pass under Python's sqlite3.
#[test]
fn generated_sqlite_cases_exported_as_observed_pass() {
    let Some(python) = common::python3() else {
        return;
    };
    let mut e = SqliteEngine::open(None).unwrap();
    let mut passed = 0;
    let mut failed = Vec::new();
    for (index, case, h) in common::plain_schedules(&mut e, 37, 100) {
        let Ok(source) = script::render(script::Target::Sqlite, &case, &h, None, &[]) else {
            continue;
        };
        match run_python(&python, &source) {
            (Some(0), _) => passed += 1,
            (_, out) => failed.push(format!("case {index}: {out}")),
        }
    }
    assert!(passed >= 30, "{passed} passed; failed: {failed:#?}");
    assert!(failed.is_empty(), "{failed:#?}");
}

#[cfg(feature = "turso")]
mod turso {
    use super::*;
    use txfuzz::engine::turso::TursoEngine;
    use txfuzz::model::{Expr, Value};

    /// The turso known issue `turso-deferred-key-reinsert-repays-other-violations`
    /// (a REPLACE of two parents of a deferred key that inserts one again
    /// commits an orphan), exported and run on pyturso of the same version,
    /// in WAL and MVCC mode: the program counts the orphan.
    #[test]
    fn the_turso_known_bug_exported_fails_under_pyturso() {
        let Some(python) = common::pyturso() else {
            return;
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/turso-replace-two-parents.json");
        let file = txfuzz::finding::load_case_file(&path).unwrap();
        for mvcc in [false, true] {
            let mut e = TursoEngine::open(None, mvcc).unwrap();
            let mut case = txfuzz::testkit::in_default_mode(file.case(), &e);
            case.isolation = e.profile().isolations[0];
            let rec = finding_of(&mut e, &case, "foreign-key");
            assert_eq!(
                rec.finding.known.as_ref().map(|k| k.id.as_str()),
                Some("turso-deferred-key-reinsert-repays-other-violations")
            );
            let source = program(&rec);
            assert_eq!(source.contains("journal_mode = 'mvcc'"), mvcc);
            let (code, out) = run_python(&python, &source);
            assert_eq!(code, Some(1), "mvcc {mvcc}: {out}\n{source}");
            assert!(out.contains("FAILED: FOREIGN KEY"), "mvcc {mvcc}: {out}");
        }
    }

    /// The turso bug txfuzz found in issue 33
    /// (`turso-failed-statement-ends-open-cursors`): a cursor over `t` steps
    /// 2 of its 4 rows, an INSERT into `u` fails on its second row (after it
    /// wrote the first), and the cursor's next step returns nothing. The
    /// exported program expects rows 3 and 4 from that step, so it fails on
    /// pyturso while the bug lives (WAL mode: in MVCC mode this schedule's
    /// INSERT fails before it writes, and the cursor steps on).
    #[test]
    fn the_turso_cursor_bug_exported_fails_under_pyturso() {
        let Some(python) = common::pyturso() else {
            return;
        };
        let failing_insert = Stmt::Insert(txfuzz::model::Insert {
            table: "u".into(),
            columns: vec!["k".into(), "v".into()],
            rows: vec![
                vec![Expr::Lit(Value::Int(7)), Expr::Lit(Value::Int(0))],
                vec![Expr::Lit(Value::Int(7)), Expr::Lit(Value::Int(0))],
            ],
            rids: vec![201, 202],
            select: None,
            on_conflict: txfuzz::model::OnConflict::Error,
        });
        {
            let mvcc = false;
            let mut e = TursoEngine::open(None, mvcc).unwrap();
            let mut case = txfuzz::testkit::kv_case(
                &[(1, 10), (2, 20), (3, 30), (4, 40)],
                vec![
                    committed(vec![
                        txfuzz::testkit::open_cursor("t", "c1", 2),
                        failing_insert.clone(),
                        txfuzz::testkit::fetch("c1", 5),
                        Stmt::Close("c1".into()),
                    ]),
                    // `view` judges cases of two transactions or more.
                    txfuzz::testkit::autocommit(vec![txfuzz::testkit::select("u", None)]),
                ],
                "1 1 1 1 1 1 2",
            );
            case.schema.tables.push(txfuzz::testkit::kv_table("u"));
            let mut case = txfuzz::testkit::in_default_mode(&case, &e);
            case.isolation = e.profile().isolations[0];
            let rec = finding_of(&mut e, &case, "result");
            assert_eq!(
                rec.finding.known.as_ref().map(|k| k.id.as_str()),
                Some("turso-failed-statement-ends-open-cursors"),
                "mvcc {mvcc}"
            );
            let source = program(&rec);
            let (code, out) = run_python(&python, &source);
            assert_eq!(code, Some(1), "mvcc {mvcc}: {out}\n{source}");
            assert!(
                out.contains("returned []; a correct engine returns [(3, 30), (4, 40)]"),
                "mvcc {mvcc}: {out}"
            );
        }
    }

    /// Generated turso cases (WAL and MVCC), exported with their observed
    /// outputs, pass under pyturso: the Python module runs the same engine.
    #[test]
    fn generated_turso_cases_exported_as_observed_pass() {
        let Some(python) = common::pyturso() else {
            return;
        };
        for mvcc in [false, true] {
            let mut e = TursoEngine::open(None, mvcc).unwrap();
            let target = script::Target::Turso { mvcc };
            let mut passed = 0;
            let mut failed = Vec::new();
            for (index, case, h) in common::plain_schedules(&mut e, 41, 40) {
                let Ok(source) = script::render(target, &case, &h, None, &[]) else {
                    continue;
                };
                match run_python(&python, &source) {
                    (Some(0), _) => passed += 1,
                    (_, out) => failed.push(format!("case {index}: {out}")),
                }
            }
            assert!(
                passed >= 20,
                "mvcc {mvcc}: {passed} passed; failed: {failed:#?}"
            );
            assert!(failed.is_empty(), "mvcc {mvcc}: {failed:#?}");
        }
    }
}

/// A final-state finding (a write lost by a fault) is exported with reads
/// of the final state a correct engine leaves; SQLite itself loses no
/// write, so the program passes: the expected state is SQLite's.
#[test]
fn a_final_state_finding_exports_the_state_sqlite_leaves() {
    let Some(python) = common::python3() else {
        return;
    };
    let mut e = txfuzz::engine::fault::FaultyEngine::new(
        Box::new(SqliteEngine::open(None).unwrap()),
        txfuzz::engine::fault::Fault::LoseWrite,
    );
    for kind in ["tx-final-state", "final-state"] {
        let rec = common::exportable_finding(&mut e, 5, 200, kind, Format::Script);
        let source = program(&rec);
        assert!(source.contains("the final state of"), "{source}");
        let (code, out) = run_python(&python, &source);
        assert_eq!(code, Some(0), "{kind}: {out}\n{source}");
    }
}

#[cfg(feature = "turso")]
mod turso_panic {
    use super::*;

    /// The turso known issue `turso-left-join-index-cursor-panic` (a LEFT
    /// JOIN with a correlated EXISTS panics on the null-extended row), from
    /// a campaign's finding: the exported program expects the statement to
    /// run, so it fails on pyturso while the panic lives (the panic aborts
    /// the interpreter).
    #[test]
    fn the_turso_panic_exported_fails_under_pyturso() {
        let Some(python) = common::pyturso() else {
            return;
        };
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/turso-left-join-panic.json");
        let rec = txfuzz::finding::read_record(&path).unwrap();
        let source = program(&rec);
        assert!(
            source.contains("A correct engine runs it without an error"),
            "{source}"
        );
        // The panic crosses pyturso's FFI boundary and aborts the Python
        // process: no `FAILED` line, a signal instead of exit code 1.
        let (code, out) = run_python(&python, &source);
        assert_ne!(code, Some(0), "{out}\n{source}");
        assert!(out.contains("index cursor should have a record"), "{out}");
        // Control: the same program on SQLite, which runs the statement.
        let Some(sqlite) = common::python3() else {
            return;
        };
        let on_sqlite = source.replace("import turso as db", "import sqlite3 as db");
        let (code, out) = run_python(&sqlite, &on_sqlite);
        assert_eq!(code, Some(0), "{out}\n{on_sqlite}");
    }
}
