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
    finding_by(e, case, &OracleKind::defaults(), kind).0
}

/// The finding of `kind` of `case` on `e` checked by `oracles`, marked with
/// its known issue, and every finding of the case.
fn finding_by(
    e: &mut dyn Engine,
    case: &TestCase,
    oracles: &[OracleKind],
    kind: &str,
) -> (FindingRecord, Vec<txfuzz::oracle::Finding>) {
    let mut stats = CheckStats::default();
    let (h, mut findings) =
        run_case(e, case, oracles, &ExecOptions::default(), &mut stats).unwrap();
    KnownIssues::builtin().mark(&mut findings, case, &h, e.info());
    let f = findings
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} finding: {findings:#?}"))
        .clone();
    let rec = FindingRecord::new(f, e.info().clone(), case.clone(), h);
    (rec, findings)
}

/// A case file of `tests/fixtures`.
#[cfg(feature = "turso")]
fn fixture(name: &str) -> txfuzz::finding::CaseFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    txfuzz::finding::load_case_file(&path).unwrap()
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
        let file = fixture("turso-replace-two-parents.json");
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

    /// The turso known issue `turso-savepoint-takes-the-read-snapshot`: T1
    /// begins (DEFERRED), sets a savepoint, T2 commits a change, T1 reads
    /// the row: the SAVEPOINT took the snapshot, so T1 reads the old value.
    /// In WAL and MVCC mode the exported program expects the new one, and
    /// fails on pyturso.
    #[test]
    fn the_turso_savepoint_bug_exported_fails_under_pyturso() {
        use txfuzz::model::{Begin, StartMode};
        let Some(python) = common::pyturso() else {
            return;
        };
        for mvcc in [false, true] {
            let mut e = TursoEngine::open(None, mvcc).unwrap();
            let mut case = txfuzz::testkit::kv_case(
                &[(1, 10)],
                vec![
                    committed(vec![
                        Stmt::Savepoint("sp1".into()),
                        txfuzz::testkit::select("t", Some(1)),
                    ]),
                    txfuzz::testkit::autocommit(vec![txfuzz::testkit::set("t", 1, 20)]),
                ],
                "1 1 2 1 1",
            );
            case.txns[0].stmts[0].stmt = Stmt::Begin(Begin::with_mode(StartMode::Deferred));
            case.isolation = e.profile().isolations[0];
            let rec = finding_of(&mut e, &case, "result");
            assert_eq!(
                rec.finding.known.as_ref().map(|k| k.id.as_str()),
                Some("turso-savepoint-takes-the-read-snapshot"),
                "mvcc {mvcc}"
            );
            let source = program(&rec);
            let (code, out) = run_python(&python, &source);
            assert_eq!(code, Some(1), "mvcc {mvcc}: {out}\n{source}");
            assert!(
                out.contains("returned [(1, 10)]; a correct engine returns [(1, 20)]"),
                "mvcc {mvcc}: {out}"
            );
        }
    }

    /// A column of type `ty` (txfuzz's case format).
    fn col(name: &str, ty: &str, not_null: bool) -> serde_json::Value {
        serde_json::json!({"name": name, "ty": ty, "not_null": not_null})
    }

    fn int(v: i64) -> serde_json::Value {
        serde_json::json!({"lit": {"int": v}})
    }

    /// A case of one table pair and transactions (`txns`, `order`), read
    /// from txfuzz's case format.
    fn case_of(
        tables: serde_json::Value,
        data: serde_json::Value,
        txns: serde_json::Value,
        order: &[(u32, u32)],
    ) -> TestCase {
        let submit: Vec<_> = order
            .iter()
            .map(|&(txn, index)| serde_json::json!({"txn": txn, "index": index}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "format": 1, "seed": 0, "index": 0, "isolation": "serializable",
            "schema": {"tables": tables}, "data": data, "txns": txns,
            "submit_order": submit,
        }))
        .unwrap()
    }

    /// One transaction: BEGIN, `stmts`, COMMIT, submitted in order.
    fn one_txn(stmts: Vec<serde_json::Value>) -> (serde_json::Value, Vec<(u32, u32)>) {
        let mut all = vec![serde_json::json!({"op": 1, "stmt": "begin"})];
        for (i, s) in stmts.into_iter().enumerate() {
            all.push(serde_json::json!({"op": i + 2, "stmt": s}));
        }
        let n = all.len() as u32;
        all.push(serde_json::json!({"op": n + 1, "stmt": "commit"}));
        let order = (0..=n).map(|i| (1, i)).collect();
        (
            serde_json::json!([{"id": 1, "autocommit": false, "stmts": all}]),
            order,
        )
    }

    /// The reduced cases of the turso integrity bugs of docs/bugs.md, in
    /// txfuzz's case format (docs/bugs.md; the standalone tests in
    /// tests/turso_bugs.rs), with the mode each needs (`true`: MVCC).
    fn integrity_bug_cases() -> Vec<(&'static str, bool, TestCase)> {
        let p = serde_json::json!({"name": "p", "columns": [col("k", "int", true)],
            "primary_key": ["k"]});
        let deferred_child = |action: serde_json::Value| {
            let mut fk = serde_json::json!({"columns": ["pk"], "ref_table": "p",
                "ref_columns": ["k"], "deferrable": "initially-deferred"});
            fk.as_object_mut()
                .unwrap()
                .extend(action.as_object().unwrap().clone());
            serde_json::json!({"name": "c", "columns": [col("k", "int", true), col("pk", "int", false)],
                "primary_key": ["k"], "foreign_keys": [fk]})
        };
        let insert = |table: &str, cols: &[&str], vals: &[i64], rid: i64| {
            serde_json::json!({"insert": {"table": table, "columns": cols,
                "rows": [vals.iter().map(|&v| int(v)).collect::<Vec<_>>()],
                "rids": [rid], "on_conflict": "error"}})
        };
        let rows = |table: &str, rows: &[&[i64]], first_rid: i64| {
            serde_json::json!({"table": table, "rows": rows.iter().enumerate().map(|(i, r)|
                serde_json::json!({"rid": first_rid + i as i64,
                    "values": r.iter().map(|&v| serde_json::json!({"int": v})).collect::<Vec<_>>()}))
                .collect::<Vec<_>>()})
        };
        let mut out = Vec::new();

        // A child of a missing parent, then a parent key update cascaded
        // to another child: COMMIT succeeds.
        let (txns, order) = one_txn(vec![
            insert("c", &["k", "pk"], &[2, 3], 201),
            serde_json::json!({"update": {"table": "p", "assignments": [{"column": "k",
                "value": {"bin": {"op": "sub", "left": {"col": {"name": "k"}}, "right": int(2)}}}]}}),
        ]);
        out.push((
            "turso-deferred-key-cascade-clears-violation",
            false,
            case_of(
                serde_json::json!([
                    p,
                    deferred_child(serde_json::json!({"on_update": "cascade"}))
                ]),
                serde_json::json!([rows("p", &[&[-3]], 1), rows("c", &[&[1, -3]], 101)]),
                txns,
                &order,
            ),
        ));

        // A child of a missing parent, then a parent delete whose action
        // sets another child's key to NULL: COMMIT succeeds.
        let (txns, order) = one_txn(vec![
            insert("c", &["k", "pk"], &[2, 14], 201),
            serde_json::json!({"delete": {"table": "p"}}),
        ]);
        out.push((
            "turso-deferred-key-delete-action-clears-violation",
            false,
            case_of(
                serde_json::json!([
                    p,
                    deferred_child(serde_json::json!({"on_delete": "set-null"}))
                ]),
                serde_json::json!([rows("p", &[&[20]], 1), rows("c", &[&[1, 20]], 101)]),
                txns,
                &order,
            ),
        ));

        // A REPLACE into the parent that deletes a row (UNIQUE conflict)
        // whose children reference it through an indexed column.
        let t0 = serde_json::json!({"name": "t0", "columns": [col("c0", "bigint", true),
            col("c1", "decimal", false)], "primary_key": ["c0"], "uniques": [["c1"]]});
        let t1 = serde_json::json!({"name": "t1", "columns": [
            {"name": "c0", "ty": "int", "not_null": true, "auto_key": true},
            col("c1", "bigint", false)], "primary_key": ["c0"],
            "indexes": [{"name": "i_t1_0", "columns": ["c1"], "unique": false}],
            "foreign_keys": [{"columns": ["c1"], "ref_table": "t0", "ref_columns": ["c0"]}]});
        let replace = serde_json::json!({"insert": {"table": "t0", "columns": ["c0", "c1"],
            "rows": [[int(9), {"lit": {"real": "6.25"}}]], "rids": [201], "on_conflict": "replace"}});
        let (txns, order) = one_txn(vec![replace]);
        let t0_rows = serde_json::json!({"table": "t0", "rows": [
            {"rid": 1, "values": [{"int": 1}, {"real": "6.25"}]},
            {"rid": 2, "values": [{"int": 9}, "null"]}]});
        out.push((
            "turso-replace-orphans-an-indexed-child",
            false,
            case_of(
                serde_json::json!([t0, t1]),
                serde_json::json!([t0_rows, rows("t1", &[&[14, 9], &[-1, 9], &[19, 1]], 101)]),
                txns,
                &order,
            ),
        ));

        // A REPLACE into the parent that deletes the parent of a child (the
        // UNIQUE conflict) under an ON UPDATE CASCADE deferred key.
        let t1 = serde_json::json!({"name": "t1", "columns": [col("c0", "int", false),
            col("c1", "int", true)], "primary_key": ["c1"], "uniques": [["c0"]]});
        let t2 = serde_json::json!({"name": "t2", "columns": [col("c0", "int", true),
            col("c1", "int", true)], "primary_key": ["c1", "c0"],
            "indexes": [{"name": "i_t2_0", "columns": ["c1"], "unique": false}],
            "foreign_keys": [{"columns": ["c1"], "ref_table": "t1", "ref_columns": ["c1"],
                "on_update": "cascade", "deferrable": "initially-deferred"}]});
        let replace = serde_json::json!({"insert": {"table": "t1", "columns": ["c0", "c1"],
            "rows": [[int(1), int(18)]], "rids": [201], "on_conflict": "replace"}});
        let (txns, order) = one_txn(vec![replace]);
        out.push((
            "turso-deferred-key-cascade-clears-violation",
            false,
            case_of(
                serde_json::json!([t1, t2]),
                serde_json::json!([
                    rows("t1", &[&[1, 2], &[-2, 18]], 1),
                    rows("t2", &[&[16, 18], &[0, 18], &[-4, 2]], 101)
                ]),
                txns,
                &order,
            ),
        ));

        // DELETE of two parents, INSERT OR IGNORE of one again: the other's
        // child is an orphan.
        let dec = |v: &str| serde_json::json!({"real": v});
        let t0 = serde_json::json!({"name": "t0", "columns": [col("c0", "decimal", true),
            col("c1", "bool", false)], "primary_key": ["c0"]});
        let t1 = serde_json::json!({"name": "t1", "columns": [col("c0", "decimal", false),
            col("c1", "bigint", true), col("c3", "decimal", true)], "primary_key": ["c3", "c1"],
            "indexes": [{"name": "i_t1_0", "columns": ["c3"], "unique": false}],
            "foreign_keys": [{"columns": ["c3"], "ref_table": "t0", "ref_columns": ["c0"],
                "on_update": "restrict", "deferrable": "initially-deferred"}]});
        let reinsert = serde_json::json!({"insert": {"table": "t0", "columns": ["c0", "c1"],
            "rows": [[{"lit": dec("9.25")}, {"lit": {"bool": true}}]], "rids": [201],
            "on_conflict": "ignore"}});
        let (txns, order) = one_txn(vec![
            serde_json::json!({"delete": {"table": "t0"}}),
            reinsert,
        ]);
        let data = serde_json::json!([
            {"table": "t0", "rows": [
                {"rid": 1, "values": [dec("10.75"), "null"]},
                {"rid": 2, "values": [dec("9.25"), {"bool": true}]}]},
            {"table": "t1", "rows": [
                {"rid": 101, "values": [dec("12.25"), {"int": 7}, dec("10.75")]},
                {"rid": 102, "values": [dec("19.75"), {"int": 1}, dec("9.25")]},
                {"rid": 103, "values": [dec("20.75"), {"int": 4}, dec("9.25")]}]}]);
        out.push((
            "turso-deferred-key-reinsert-repays-other-violations",
            false,
            case_of(serde_json::json!([t0, t1]), data, txns, &order),
        ));

        // MVCC: T1 deletes parent 1 while T2 inserts a child of it; both
        // commit.
        let c = serde_json::json!({"name": "c", "columns": [col("k", "int", true), col("pk", "int", false)],
            "primary_key": ["k"], "foreign_keys": [{"columns": ["pk"], "ref_table": "p", "ref_columns": ["k"]}]});
        let txns = serde_json::json!([
            {"id": 1, "autocommit": false, "stmts": [{"op": 1, "stmt": "begin"},
                {"op": 2, "stmt": {"delete": {"table": "p", "where_": {"bin": {"op": "eq",
                    "left": {"col": {"name": "k"}}, "right": int(1)}}}}},
                {"op": 3, "stmt": "commit"}]},
            {"id": 2, "autocommit": false, "stmts": [{"op": 4, "stmt": "begin"},
                {"op": 5, "stmt": insert("c", &["k", "pk"], &[6, 1], 201)},
                {"op": 6, "stmt": "commit"}]}]);
        out.push((
            "turso-mvcc-foreign-key-across-concurrent-transactions",
            true,
            case_of(
                serde_json::json!([p, c]),
                serde_json::json!([rows("p", &[&[1], &[2]], 1), rows("c", &[&[5, 2]], 101)]),
                txns,
                &[(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)],
            ),
        ));
        out
    }

    /// The turso integrity bugs of docs/bugs.md, each as a txfuzz case: the
    /// case gives its `integrity:foreign-key` finding, marked with the
    /// issue, whose export counts the orphan on pyturso and fails.
    #[test]
    fn the_turso_integrity_bugs_exported_fail_under_pyturso() {
        let Some(python) = common::pyturso() else {
            return;
        };
        for (id, mvcc, case) in integrity_bug_cases() {
            let mut e = TursoEngine::open(None, mvcc).unwrap();
            let mut case = txfuzz::testkit::in_default_mode(&case, &e);
            case.isolation = e.profile().isolations[0];
            let rec = finding_of(&mut e, &case, "foreign-key");
            assert_eq!(rec.finding.known.as_ref().map(|k| k.id.as_str()), Some(id));
            let source = program(&rec);
            let (code, out) = run_python(&python, &source);
            assert_eq!(code, Some(1), "{id}: {out}\n{source}");
            assert!(out.contains("FAILED: FOREIGN KEY"), "{id}: {out}");
        }
    }

    /// The turso bugs txfuzz meets as shadow-run differences (docs/bugs.md:
    /// a failed multi-row UPDATE of a rowid alias keeps the rows it
    /// rewrote; a multi-row UNIQUE UPDATE not checked row by row in rowid
    /// order), each as a case whose instrumented run does what SQLite does
    /// and whose plain run does not. The `fidelity` finding's export expects
    /// the judged run's outputs and final state, so it fails on pyturso
    /// while the bug lives, in both modes.
    #[test]
    fn the_turso_bugs_seen_by_the_shadow_run_exported_fail_under_pyturso() {
        let Some(python) = common::pyturso() else {
            return;
        };
        for (name, kind, failure) in [
            (
                "turso-failed-rowid-update-keeps-rows.json",
                "final-state",
                "FAILED: the final state of t returned [(13,), (6,)]; a correct engine returns [(2,), (6,)]",
            ),
            (
                "turso-unique-update-not-checked-in-rowid-order.json",
                "error",
                "FAILED: T1#1 (op 2) succeeded; it failed in the finding's run",
            ),
        ] {
            let file = fixture(name);
            for mvcc in [false, true] {
                let mut e = TursoEngine::open(None, mvcc).unwrap();
                let mut case = file.case().clone();
                case.isolation = e.profile().isolations[0];
                let rec = shadow_finding_of(&mut e, &case, kind);
                // Which statements waited is no one output: not exported.
                let mut wait = rec.clone();
                wait.finding.kind = "wait".into();
                let refused = export(&wait, Format::Script, "finding").unwrap_err();
                assert!(refused.contains("fidelity:wait"), "{refused}");
                let source = program(&rec);
                assert!(!source.contains("rid"), "the plain statements: {source}");
                let (code, out) = run_python(&python, &source);
                assert_eq!(code, Some(1), "{name} mvcc {mvcc}: {out}\n{source}");
                assert!(out.contains(failure), "{name} mvcc {mvcc}: {out}\n{source}");
                // The control: SQLite runs the same program (WAL mode's) and
                // passes, as the bug's fix would.
                if let (false, Some(python3)) = (mvcc, common::python3()) {
                    let on_sqlite = source.replace("import turso as db", "import sqlite3 as db");
                    let (code, out) = run_python(&python3, &on_sqlite);
                    assert_eq!(code, Some(0), "{name} on sqlite3: {out}\n{on_sqlite}");
                }
            }
        }
    }

    /// docs/bugs.md's turso MVCC upsert after a checkpoint: the case asks
    /// for a checkpoint after its set-up (`checkpoint: true`) and gives the
    /// `view:missed-abort` finding; without the checkpoint, a fresh database,
    /// it gives none. The export checkpoints too, and fails under pyturso
    /// while the bug lives.
    #[test]
    fn the_turso_upsert_after_a_checkpoint_exported_fails_under_pyturso() {
        let Some(python) = common::pyturso() else {
            return;
        };
        let file = fixture("turso-mvcc-upsert-after-checkpoint.json");
        let mut e = TursoEngine::open(None, true).unwrap();
        let case = txfuzz::testkit::in_default_mode(file.case(), &e);
        assert!(case.checkpoint);
        let rec = finding_of(&mut e, &case, "missed-abort");
        assert_eq!(
            rec.finding.known.as_ref().map(|k| k.id.as_str()),
            Some("turso-mvcc-upsert-after-checkpoint-skips-write-conflict")
        );
        let source = program(&rec);
        assert!(
            source.contains("PRAGMA wal_checkpoint(TRUNCATE)"),
            "{source}"
        );
        let (code, out) = run_python(&python, &source);
        assert_eq!(code, Some(1), "{out}\n{source}");
        assert!(
            out.contains("FAILED: T1#1 (op 4) succeeded; a correct engine fails it"),
            "{out}\n{source}"
        );
        let mut fresh = case.clone();
        fresh.checkpoint = false;
        let mut stats = CheckStats::default();
        let (_, findings) = run_case(
            &mut e,
            &fresh,
            &OracleKind::defaults(),
            &ExecOptions::default(),
            &mut stats,
        )
        .unwrap();
        assert!(findings.is_empty(), "{findings:#?}");
    }

    /// The `fidelity:kind` finding of `case` on `e` (the default oracles
    /// and the shadow run).
    fn shadow_finding_of(e: &mut dyn Engine, case: &TestCase, kind: &str) -> FindingRecord {
        let mut oracles = OracleKind::defaults();
        oracles.push(OracleKind::Fidelity);
        let (rec, findings) = finding_by(e, case, &oracles, kind);
        assert!(
            findings.iter().all(|f| f.oracle == "fidelity"),
            "the judged run passes every other oracle: {findings:#?}"
        );
        rec
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
                // A panic of the instrumented statement (the LEFT JOIN shape,
                // gen/outer_join.rs) need not happen to the plain one the
                // script runs: such a run is observed only under txfuzz's
                // instrumentation (its `fidelity`), and the panic's own
                // export is the_turso_panic_exported_fails_under_pyturso.
                if h.internal_error() {
                    continue;
                }
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
