//! The `graph` oracle both ways, on hand-written checker histories: each
//! anomaly present is found and named; absent, nothing is reported. Then end to
//! end on SQLite: clean campaigns give no graph finding, fault-injected engines
//! are caught.

use txfuzz::campaign::{run_campaign, CampaignConfig, Summary};
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{Isolation, WriteList};
use txfuzz::oracle::graph::{findings, CheckHistory, CheckTxn, FinalRow, Op, TxnStatus};
use txfuzz::oracle::{Finding, OracleKind, Verdict};

fn r(rid: i64, wl: &str) -> Op {
    Op::Read {
        table: "t".into(),
        rid,
        wl: wl.parse().unwrap(),
        op: None,
    }
}

fn w(op: u32, rid: i64, before: Option<&str>, after: Option<&str>) -> Op {
    Op::Write {
        op,
        table: "t".into(),
        rid,
        before: before.map(|x| x.parse().unwrap()),
        after: after.map(|x| x.parse().unwrap()),
        undone: false,
    }
}

fn upd(op: u32, rid: i64, before: &str) -> Op {
    w(op, rid, Some(before), Some(&format!("{before},{op}")))
}

fn txn(id: u64, session: u64, committed: bool, ops: Vec<Op>) -> CheckTxn {
    CheckTxn {
        id,
        session,
        status: if committed {
            TxnStatus::Committed
        } else {
            TxnStatus::Aborted
        },
        label: None,
        savepoint_rollback: false,
        ops,
    }
}

/// Each transaction its own session.
fn hist(txns: Vec<(bool, Vec<Op>)>) -> CheckHistory {
    CheckHistory {
        format: 1,
        isolation: None,
        engine: None,
        txns: txns
            .into_iter()
            .enumerate()
            .map(|(i, (c, ops))| txn(i as u64 + 1, i as u64 + 1, c, ops))
            .collect(),
        final_state: None,
    }
}

fn check(h: &CheckHistory) -> Vec<Finding> {
    findings(h, Isolation::Serializable)
}

fn kinds(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.kind.as_str()).collect()
}

fn assert_only(f: &[Finding], kind: &str) {
    assert!(!f.is_empty(), "expected {kind}, found nothing");
    assert!(f.iter().all(|x| x.kind == kind), "{:#?}", f);
}

#[test]
fn g0_write_cycle() {
    let h = hist(vec![
        (true, vec![upd(1, 1, "0"), upd(4, 2, "0,3")]),
        (true, vec![upd(2, 1, "0,1"), upd(3, 2, "0")]),
    ]);
    let f = check(&h);
    assert_only(&f, "G0");
    assert_eq!(f[0].evidence["weakest_violated_level"], "read-uncommitted");
    assert!(f[0].summary.contains("G0"));
    // Found at read uncommitted too.
    assert_eq!(findings(&h, Isolation::ReadUncommitted).len(), 1);
    let ok = hist(vec![
        (true, vec![upd(1, 1, "0"), upd(4, 2, "0")]),
        (true, vec![upd(2, 1, "0,1"), upd(3, 2, "0,4")]),
    ]);
    assert!(check(&ok).is_empty(), "{:#?}", check(&ok));
}

#[test]
fn g1c_circular_information_flow() {
    let h = hist(vec![
        (true, vec![upd(1, 1, "0"), r(2, "0,2")]),
        (true, vec![upd(2, 2, "0"), r(1, "0,1")]),
    ]);
    let f = check(&h);
    assert_only(&f, "G1c");
    assert_eq!(f[0].evidence["weakest_violated_level"], "read-committed");
    let expl = f[0].evidence["explanation"].as_array().unwrap();
    assert_eq!(expl.len(), 2);
    assert!(expl.iter().any(|s| s
        .as_str()
        .unwrap()
        .contains("T2 read t row 1 version 0,1 written by T1's UPDATE (op 1) (wr)")));
    assert!(f[0].evidence["dot"]
        .as_str()
        .unwrap()
        .starts_with("digraph"));
    assert_eq!(f[0].evidence["edges"].as_array().unwrap().len(), 2);
    let ok = hist(vec![
        (true, vec![upd(1, 1, "0"), r(2, "0")]),
        (true, vec![upd(2, 2, "0"), r(1, "0,1")]),
    ]);
    assert!(check(&ok).is_empty());
}

#[test]
fn read_skew_is_g_single() {
    let h = hist(vec![
        (true, vec![r(1, "0"), r(2, "0,3")]),
        (true, vec![upd(2, 1, "0"), upd(3, 2, "0")]),
    ]);
    let f = check(&h);
    assert_only(&f, "read-skew");
    assert_eq!(f[0].evidence["class"], "G-single");
    assert_eq!(f[0].evidence["weakest_violated_level"], "repeatable-read");
    assert_eq!(f[0].evidence["snapshot_isolation"], "forbidden");
    let e = f[0].evidence["explanation"].to_string();
    assert!(
        e.contains("T2's UPDATE (op 2) overwrote t row 1 version 0 that T1 read (rw)"),
        "{e}"
    );
    // Read committed permits it: not reported.
    assert!(findings(&h, Isolation::ReadCommitted).is_empty());
    let ok = hist(vec![
        (true, vec![r(1, "0"), r(2, "0")]),
        (true, vec![upd(2, 1, "0"), upd(3, 2, "0")]),
    ]);
    assert!(check(&ok).is_empty());
}

fn lost_update() -> CheckHistory {
    hist(vec![
        (true, vec![r(1, "0"), upd(3, 1, "0")]),
        (true, vec![r(1, "0"), upd(4, 1, "0,3")]),
    ])
}

/// The findings at `level` with the verdict policy of `engine`'s profile.
fn judged(h: &CheckHistory, level: Isolation, engine: &str) -> Vec<txfuzz::oracle::Finding> {
    let mut f = findings(h, level);
    let kind = txfuzz::engine::registry::kind(engine).unwrap();
    let profile = (kind.profile)(&Default::default());
    txfuzz::oracle::verdict::apply(&mut f, &profile, level);
    f
}

#[test]
fn lost_update_is_found_and_permitted_where_the_engine_says_so() {
    let f = check(&lost_update());
    assert_only(&f, "lost-update");
    assert_eq!(f[0].verdict, Verdict::Violation);
    let f = judged(&lost_update(), Isolation::RepeatableRead, "mariadb");
    assert_eq!(f[0].verdict, Verdict::Permitted);
    let by = f[0].permitted_by.as_ref().unwrap();
    assert_eq!(by.fact, "permitted_anomalies[repeatable-read]");
    let f = judged(&lost_update(), Isolation::RepeatableRead, "postgres");
    assert_eq!(f[0].verdict, Verdict::Violation);
    // Serial version: T2 read T1's write.
    let ok = hist(vec![
        (true, vec![r(1, "0"), upd(3, 1, "0")]),
        (true, vec![r(1, "0,3"), upd(4, 1, "0,3")]),
    ]);
    assert!(check(&ok).is_empty());
}

#[test]
fn write_skew_is_g2_item() {
    let h = hist(vec![
        (true, vec![r(1, "0"), r(2, "0"), upd(5, 1, "0")]),
        (true, vec![r(1, "0"), r(2, "0"), upd(6, 2, "0")]),
    ]);
    let f = check(&h);
    assert_only(&f, "write-skew");
    assert_eq!(f[0].evidence["class"], "G2-item");
    assert_eq!(f[0].evidence["snapshot_isolation"], "permitted");
    assert_eq!(
        judged(&h, Isolation::RepeatableRead, "postgres")[0].verdict,
        Verdict::Permitted
    );
    let ok = hist(vec![
        (true, vec![r(1, "0"), r(2, "0"), upd(5, 1, "0")]),
        (true, vec![r(1, "0,5"), r(2, "0"), upd(6, 2, "0")]),
    ]);
    assert!(check(&ok).is_empty());
}

#[test]
fn g2_item_over_three_transactions() {
    let h = hist(vec![
        (true, vec![r(1, "0"), upd(7, 2, "0")]),
        (true, vec![r(2, "0"), upd(8, 3, "0")]),
        (true, vec![r(3, "0"), upd(9, 1, "0")]),
    ]);
    assert_only(&check(&h), "G2-item");
}

#[test]
fn cycle_through_session_order() {
    // T1 and T2 run in one session, T1 first; T1 read T2's write.
    let mk = |same_session: bool| {
        let mut h = hist(vec![
            (true, vec![r(1, "0,2")]),
            (true, vec![upd(2, 1, "0")]),
        ]);
        if same_session {
            h.txns[1].session = h.txns[0].session;
        }
        h
    };
    let f = check(&mk(true));
    assert_only(&f, "G1c");
    assert!(f[0].evidence["explanation"]
        .to_string()
        .contains("T1 ran before T2 in session 1 (so)"));
    assert!(check(&mk(false)).is_empty());
}

#[test]
fn g1a_aborted_read_and_surviving_write() {
    let h = hist(vec![
        (false, vec![upd(1, 1, "0")]),
        (true, vec![r(1, "0,1")]),
    ]);
    let f = check(&h);
    assert_only(&f, "G1a");
    assert!(
        f[0].summary.contains("aborted transaction T1"),
        "{}",
        f[0].summary
    );
    assert!(findings(&h, Isolation::ReadUncommitted).is_empty());
    let mut s = hist(vec![(false, vec![upd(1, 1, "0")]), (true, vec![r(1, "0")])]);
    assert!(check(&s).is_empty());
    s.final_state = Some(vec![FinalRow {
        table: "t".into(),
        rid: 1,
        wl: "0,1".parse().unwrap(),
    }]);
    assert_only(&check(&s), "aborted-write-survives");
}

#[test]
fn g1b_intermediate_read() {
    let h = hist(vec![
        (true, vec![upd(1, 1, "0"), upd(2, 1, "0,1")]),
        (true, vec![r(1, "0,1")]),
    ]);
    let f = check(&h);
    assert!(kinds(&f).contains(&"G1b"), "{f:#?}");
    assert!(f.iter().all(|f| f.kind == "G1b"), "{f:#?}");
    let ok = hist(vec![
        (true, vec![upd(1, 1, "0"), upd(2, 1, "0,1")]),
        (true, vec![r(1, "0,1,2")]),
    ]);
    assert!(check(&ok).is_empty());
}

#[test]
fn versions_that_never_existed() {
    let h = hist(vec![
        (true, vec![upd(2, 2, "0")]),
        (true, vec![r(1, "0,9")]),
    ]);
    let f = check(&h);
    assert_only(&f, "never-existed");
    assert!(f[0].summary.contains("op 9"));
    let h = hist(vec![
        (true, vec![upd(2, 2, "0")]),
        (true, vec![r(1, "0,2")]),
    ]);
    let f = check(&h);
    assert_only(&f, "never-existed");
    assert!(
        f[0].summary.contains("did not write this row"),
        "{}",
        f[0].summary
    );
    // A list that is not one of operation ids cannot be built at all: a
    // history file holding one is refused when it is read.
    let bad = r#"{"txns": [{"id": 1, "session": 1, "status": "committed",
        "ops": [{"type": "read", "table": "t", "rid": 1, "wl": "0,x"}]}]}"#;
    let e = CheckHistory::from_json(bad).unwrap_err();
    assert!(e.contains("write list"), "{e}");
}

#[test]
fn incompatible_version_orders() {
    let h = hist(vec![
        (true, vec![upd(1, 1, "0")]),
        (true, vec![upd(2, 1, "0")]),
    ]);
    let f = check(&h);
    assert!(kinds(&f).contains(&"incompatible-order"), "{f:#?}");
    assert_eq!(f[0].evidence["weakest_violated_level"], "read-uncommitted");
    // A write after a delete.
    let h = hist(vec![
        (true, vec![w(1, 1, Some("0"), None)]),
        (true, vec![upd(2, 1, "0")]),
    ]);
    assert!(kinds(&check(&h)).contains(&"incompatible-order"));
}

#[test]
fn delete_ends_the_chain_with_rw() {
    // T1 reads row 1; T2 deletes it; T1 then reads row 2 written by T2.
    let h = hist(vec![
        (true, vec![r(1, "0"), r(2, "0,3")]),
        (true, vec![w(2, 1, Some("0"), None), upd(3, 2, "0")]),
    ]);
    let f = check(&h);
    assert_only(&f, "read-skew");
    assert!(f[0].evidence["explanation"]
        .to_string()
        .contains("T2's DELETE (op 2) overwrote t row 1 version 0 that T1 read (rw)"));
}

#[test]
fn own_write_must_be_seen() {
    let h = hist(vec![(true, vec![upd(1, 1, "0"), r(1, "0")])]);
    assert_only(&check(&h), "own-write");
    let mut sp = h.clone();
    sp.txns[0].savepoint_rollback = true;
    assert!(check(&sp).is_empty());
    let ok = hist(vec![(true, vec![upd(1, 1, "0"), r(1, "0,1")])]);
    assert!(check(&ok).is_empty());
}

#[test]
fn unobserved_reads_are_noted_never_invented() {
    let mut h = lost_update();
    h.txns[0].ops.push(Op::UnobservedRead { op: 3 });
    let f = check(&h);
    assert!(f[0].evidence["unobserved_reads"]
        .as_str()
        .unwrap()
        .contains("predicate (G2) anomalies are not detected"));
}

#[test]
fn malformed_histories_give_one_line_errors() {
    for bad in [
        "",
        "{",
        "[]",
        r#"{"txns": 3}"#,
        r#"{"txns": [{"id": 1, "session": 1, "status": "maybe", "ops": []}]}"#,
        r#"{"txns": [{"id": 1, "session": 1, "status": "committed"}, {"id": 1, "session": 2, "status": "committed"}]}"#,
        r#"{"txns": [{"id": 1, "session": 1, "status": "committed", "ops": [{"type": "write", "op": 1, "table": "t", "rid": 1}]}]}"#,
        r#"{"format": 9, "txns": []}"#,
    ] {
        let e = CheckHistory::from_json(bad).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
    }
    let good = serde_json::to_string(&lost_update()).unwrap();
    assert_eq!(CheckHistory::from_json(&good).unwrap(), lost_update());
}

fn campaign(fault: Option<Fault>, seed: u64, tests: u64) -> Summary {
    let out = tempfile::tempdir().unwrap();
    let base: Box<dyn Engine> = Box::new(SqliteEngine::open(None).unwrap());
    let mut engine: Box<dyn Engine> = match fault {
        Some(f) => Box::new(FaultyEngine::new(base, f)),
        None => base,
    };
    let cfg = CampaignConfig {
        oracles: vec![OracleKind::Graph],
        shadow: 0.0,
        ..CampaignConfig::new(seed, tests, out.path())
    };
    run_campaign(engine.as_mut(), &cfg).unwrap()
}

#[test]
fn sqlite_campaign_has_no_graph_finding() {
    let s = campaign(None, 23, 300);
    assert_eq!(s.cases, 300);
    assert_eq!(s.violations, 0, "{}", s.render());
    assert!(
        s.findings.get("graph").is_none_or(|m| m.is_empty()),
        "{}",
        s.render()
    );
}

/// The fault-injected engines (`lose-write` reports an UPDATE as matching no
/// row; `stale-update` rewrites value columns only) leave every write list
/// consistent, so the graph oracle cannot see them (the `wss` oracle does, by
/// replay). A lost write that the write lists do show is caught: run a real
/// SQLite case, then make its final state lose T2's committed write.
#[test]
fn lost_write_in_a_real_sqlite_history_is_caught() {
    use txfuzz::campaign::run_case;
    use txfuzz::model::Value;
    use txfuzz::oracle::CheckStats;
    use txfuzz::testkit::*;
    let case = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![add("t", 1, 1)]),
            committed(vec![add("t", 1, 5), select("t", None)]),
        ],
        "1 2 1 1 2 2 2",
    );
    let mut e: Box<dyn Engine> = Box::new(SqliteEngine::open(None).unwrap());
    let mut stats = CheckStats::default();
    let (mut history, f) = run_case(
        e.as_mut(),
        &case,
        &[OracleKind::Graph],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    assert!(f.is_empty(), "{f:#?}");
    let h = CheckHistory::from_case(&case, &history, Some("sqlite"));
    assert!(check(&h).is_empty());
    // Row 1's final version loses its last write.
    let row = history
        .final_state
        .get_mut("t")
        .unwrap()
        .iter_mut()
        .find(|r| r[0] == Value::Int(1))
        .unwrap();
    let Value::Text(wl) = &row[1] else {
        panic!("{row:?}")
    };
    let shorter = wl.rsplit_once(',').unwrap().0.to_string();
    row[1] = Value::Text(shorter);
    let h = CheckHistory::from_case(&case, &history, Some("sqlite"));
    let f = check(&h);
    assert_only(&f, "incompatible-order");
    assert!(f[0].summary.contains("lost"), "{}", f[0].summary);
}

#[test]
fn check_command_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, text: &str, extra: &[&str]| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_txfuzz"))
            .arg("check")
            .arg(&p)
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let lost = serde_json::to_string(&lost_update()).unwrap();
    let (code, out, _) = run("lost.json", &lost, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("lost-update"), "{out}");
    let (code, _, _) = run("lost.json", &lost, &["--isolation", "read-committed"]);
    assert_eq!(code, 0);
    let o = dir.path().join("out");
    let (code, _, _) = run("lost.json", &lost, &["--out", o.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(std::fs::read_dir(&o).unwrap().count(), 1);
    let (code, _, err) = run("bad.json", "{\"txns\": 1}", &[]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn unobserved_writes_are_accepted_not_invented() {
    let unobserved = |op| Op::UnobservedWrite {
        op,
        table: "t".into(),
        undone: false,
    };
    // Op 5 inserted row 7 without the history showing it (a MariaDB upsert);
    // T2 updates that row: no "never existed", and the chain gives a ww edge.
    let h = hist(vec![
        (true, vec![unobserved(5)]),
        (true, vec![w(6, 7, Some("5"), Some("5,6"))]),
    ]);
    assert!(check(&h).is_empty(), "{:#?}", check(&h));
    // A multi-row upsert that inserted row 7 and then updated it in the same
    // statement shows only the update (before = its own insert).
    let h = hist(vec![(
        true,
        vec![unobserved(5), w(5, 7, Some("5"), Some("5,5"))],
    )]);
    assert!(check(&h).is_empty(), "{:#?}", check(&h));
    // Still an op of another table, or an unknown op, never existed.
    let h = hist(vec![
        (
            true,
            vec![Op::UnobservedWrite {
                op: 5,
                table: "other".into(),
                undone: false,
            }],
        ),
        (true, vec![w(6, 7, Some("5"), Some("5,6"))]),
    ]);
    assert_only(&check(&h), "never-existed");
    // An unobserved write of an aborted transaction that someone read is G1a.
    let h = hist(vec![(false, vec![unobserved(5)]), (true, vec![r(7, "5")])]);
    assert!(kinds(&check(&h)).contains(&"G1a"), "{:#?}", check(&h));
}

/// T1's autocommit INSERT IGNORE skips row 10 (a conflict on a secondary
/// unique key, after InnoDB inserted its clustered record) while T2 reads it
/// at version `1`: a read of an undone write (G1a, permitted at READ
/// UNCOMMITTED), not of a version that never existed.
#[test]
fn a_row_an_insert_ignore_skipped_is_an_undone_write() {
    use txfuzz::model::{
        Event, EventKind, History, OnConflict, Outcome, RowVersion, Stmt, StmtOutcome, StmtRef,
        TxnOutcome,
    };
    use txfuzz::testkit::{autocommit, committed, insert, kv_case, select};
    let mut ins = insert("t", 10, 5, 50);
    if let Stmt::Insert(i) = &mut ins {
        i.on_conflict = OnConflict::Ignore;
    }
    let case = kv_case(
        &[(1, 10)],
        vec![autocommit(vec![ins]), committed(vec![select("t", None)])],
        "2 1 2 2",
    );
    let at = |txn, index| StmtRef { txn, index };
    let read = Outcome {
        reads: vec![RowVersion {
            table: "t".into(),
            rid: 10,
            wl: "1".parse().unwrap(),
        }],
        reads_complete: true,
        ..Outcome::default()
    };
    let skipped = Outcome {
        writes_complete: true,
        ..Outcome::default()
    };
    let mut events = Vec::new();
    let mut outcomes = Vec::new();
    for (r, o) in [
        (at(2, 0), Outcome::default()),
        (at(1, 0), skipped),
        (at(2, 1), read),
        (at(2, 2), Outcome::default()),
    ] {
        for kind in [
            EventKind::Submitted,
            EventKind::Completed {
                ok: true,
                resumed: false,
            },
        ] {
            events.push(Event {
                stmt: r,
                kind,
                at_us: 0,
            });
        }
        let op = case.stmt(r).unwrap().op;
        outcomes.push(StmtOutcome {
            stmt: r,
            op,
            outcome: o,
        });
    }
    let history = History {
        isolation: Isolation::ReadCommitted,
        events,
        outcomes,
        txns: vec![
            TxnOutcome { txn: 1, end: None },
            TxnOutcome {
                txn: 2,
                end: Some(txfuzz::model::TxnEnd::Committed),
            },
        ],
        final_state: Default::default(),
        final_state_error: None,
    };
    let h = CheckHistory::from_case(&case, &history, None);
    assert_only(&findings(&h, Isolation::ReadCommitted), "G1a");
    assert!(findings(&h, Isolation::ReadUncommitted).is_empty());
}

/// Every write list of `h` parsed again on its own: equal versions become
/// separate nodes, as in a history built without sharing.
fn unshared(h: &CheckHistory) -> CheckHistory {
    let again = |wl: &WriteList| -> WriteList { wl.to_string().parse().unwrap() };
    let mut h = h.clone();
    for t in &mut h.txns {
        for op in &mut t.ops {
            match op {
                Op::Read { wl, .. } => *wl = again(wl),
                Op::Write { before, after, .. } => {
                    *before = before.as_ref().map(again);
                    *after = after.as_ref().map(again);
                }
                Op::UnobservedRead { .. } | Op::UnobservedWrite { .. } => {}
            }
        }
    }
    for r in h.final_state.iter_mut().flatten() {
        r.wl = again(&r.wl);
    }
    h
}

/// A synthetic serialisable history (as `bench-check` makes) with faults:
/// an aborted writer others read, a stale read of an older version still on
/// its chain, and a write over an older version (a lost update).
fn synthetic_with_faults() -> CheckHistory {
    let mut h = txfuzz::cli::check::synthetic(3_000, 7);
    h.txns[100].status = TxnStatus::Aborted;
    if let Op::Read { wl, .. } = &mut h.txns[2_500].ops[0] {
        *wl = wl.previous().expect("a row written before");
    }
    let Op::Write {
        op, before, after, ..
    } = &mut h.txns[2_800].ops[3]
    else {
        panic!("the fourth op of a synthetic transaction is a write");
    };
    let older = before.as_ref().and_then(|b| b.previous()).expect("older");
    *after = Some(older.then(*op));
    *before = Some(older);
    h
}

/// The checker takes short ways for versions that are shared nodes (a
/// history built in a campaign, read by `txfuzz check`, or made by
/// `bench-check`): the last version of a row's chain, one written over it,
/// an older one at its position. They must find exactly what the long way
/// finds for the same lists held in separate nodes.
#[test]
fn shared_and_separate_versions_give_the_same_findings() {
    let histories = [
        ("lost update", lost_update()),
        ("synthetic with faults", synthetic_with_faults()),
        (
            "aborted read and write",
            hist(vec![
                (false, vec![upd(1, 1, "0")]),
                (true, vec![r(1, "0,1"), upd(2, 1, "0,1")]),
            ]),
        ),
        (
            "intermediate read",
            hist(vec![
                (true, vec![upd(1, 1, "0"), upd(2, 1, "0,1")]),
                (true, vec![r(1, "0,1")]),
            ]),
        ),
        (
            "write after a delete",
            hist(vec![
                (true, vec![w(1, 1, Some("0"), None)]),
                (true, vec![upd(2, 1, "0")]),
            ]),
        ),
    ];
    let described = |h: &CheckHistory| -> Vec<String> {
        check(h)
            .iter()
            .map(|f| format!("{}: {} {}", f.kind, f.summary, f.evidence))
            .collect()
    };
    for (name, h) in histories {
        let shared = CheckHistory::from_json(&serde_json::to_string(&h).unwrap()).unwrap();
        let separate = unshared(&h);
        let found = described(&shared);
        assert!(!found.is_empty(), "{name}: nothing found");
        assert_eq!(found, described(&separate), "{name}");
    }
    // The faults of the synthetic history are each found.
    let kinds_found = kinds(&check(&synthetic_with_faults()))
        .into_iter()
        .map(str::to_string)
        .collect::<std::collections::BTreeSet<_>>();
    for kind in ["G1a", "incompatible-order"] {
        assert!(kinds_found.contains(kind), "{kind}: {kinds_found:?}");
    }
    // Without them it is serialisable, in both forms.
    let clean = txfuzz::cli::check::synthetic(3_000, 7);
    assert!(check(&clean).is_empty());
    assert!(check(&unshared(&clean)).is_empty());
}
