//! Sessions at different isolation levels in one case (issue 33,
//! `--isolation mixed`): each session runs at its own level on the server,
//! the oracles apply each transaction's rule, and campaigns draw mixed cases
//! and count them.

use txfuzz::campaign::{run_campaign, run_case, CampaignConfig};
use txfuzz::exec::ExecOptions;
use txfuzz::model::{Isolation, StmtRef};
use txfuzz::oracle::{CheckStats, OracleKind};
use txfuzz::testkit::*;

mod common;

use common::run_defaults as run;

/// T1 reads row 1 inside its transaction, T2 updates it in autocommit, T1
/// commits. InnoDB SERIALIZABLE turns T1's read into a share-mode locking
/// read, so T2 waits; at READ COMMITTED it does not. With T1 alone at
/// SERIALIZABLE in a READ COMMITTED case, T2 waits: the level is T1's
/// session's, and `view` (T1's rule: a locking read) decides it clean.
#[test]
fn mariadb_each_session_runs_at_its_own_level() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let base = || {
        let mut case = kv_case(
            &[(1, 10)],
            vec![
                committed(vec![select("t", Some(1))]),
                autocommit(vec![set("t", 1, 20)]),
            ],
            "1 1 2 1",
        );
        case.isolation = Isolation::ReadCommitted;
        case
    };
    let mut e = common::open(&url);
    let (h, f, counts) = run(e.as_mut(), &base());
    assert!(f.is_empty() && counts.checked == 1, "{f:#?} {counts:?}");
    assert!(!h.was_blocked(StmtRef { txn: 2, index: 0 }), "{h:#?}");
    let mut mixed = base();
    mixed.txns[0].isolation = Some(Isolation::Serializable);
    assert!(mixed.mixed_levels());
    let (h, f, counts) = run(e.as_mut(), &mixed);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!((counts.checked, counts.undecided), (1, 0), "{counts:?}");
    assert!(h.was_blocked(StmtRef { txn: 2, index: 0 }), "{h:#?}");
}

/// T1 reads row 1 twice with T2's autocommit update committed in between.
/// In a READ COMMITTED case with T1 alone at REPEATABLE READ, T1's second
/// read still returns its snapshot's 10; `view` decides it clean with T1's
/// rule, and not with READ COMMITTED's rule in its place.
#[test]
fn mariadb_view_judges_each_transaction_by_its_own_level() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), select("t", Some(1))]),
            autocommit(vec![set("t", 1, 20)]),
        ],
        "1 1 2 1 1",
    );
    case.isolation = Isolation::ReadCommitted;
    case.txns[0].isolation = Some(Isolation::RepeatableRead);
    let (h, f, counts) = run(common::open(&url).as_mut(), &case);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!((counts.checked, counts.undecided), (1, 0), "{counts:?}");
    let second = h.outcome(StmtRef { txn: 1, index: 2 }).unwrap();
    assert_eq!(second.rows[0][1], txfuzz::model::Value::Int(10), "{h:#?}");
    let mut wrong = WithProfile::new(common::open(&url), |p| {
        let rc = p.rule(Isolation::ReadCommitted).unwrap();
        for (level, rule) in &mut p.rules {
            if *level == Isolation::RepeatableRead {
                *rule = rc;
            }
        }
    });
    let (_, f, counts) = run(&mut wrong, &case);
    assert!(
        f.iter().any(|f| f.oracle == OracleKind::View) || counts.checked == 0,
        "judged clean without T1's own rule: {f:#?} {counts:?}"
    );
}

/// `--isolation mixed` on MariaDB: every case draws a level per session,
/// the summary counts them, and the findings name the case `mixed`.
#[test]
fn mariadb_mixed_campaign_counts_its_levels() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let mut cfg = CampaignConfig::new(5, 40, out.path());
    cfg.mixed = true;
    let mut e = common::open(&url);
    let s = run_campaign(e.as_mut(), &cfg).unwrap();
    let mixed = s.cases_per_isolation.get("mixed").copied().unwrap_or(0);
    assert!(mixed > 20, "{:?}", s.cases_per_isolation);
    assert!(
        s.mixed_txns_per_isolation.len() >= 3,
        "{:?}",
        s.mixed_txns_per_isolation
    );
    let json = std::fs::read_to_string(out.path().join("summary.json")).unwrap();
    assert!(json.contains("mixed_txns_per_isolation"), "{json}");
}

/// A lost update whose only read edge is T1's, at REPEATABLE READ (which
/// MariaDB documents), in a SERIALIZABLE case: permitted in the campaign,
/// and `txfuzz check` of the finding file judges it the same way (at its
/// reader's level, not the case's).
#[test]
fn mariadb_check_judges_a_mixed_finding_at_its_readers_level() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), add("t", 1, 1)]),
            autocommit(vec![set("t", 1, 20)]),
        ],
        "1 1 2 1 1",
    );
    case.isolation = Isolation::Serializable;
    case.txns[0].isolation = Some(Isolation::RepeatableRead);
    let mut e = common::open(&url);
    let mut stats = CheckStats::default();
    let (h, f) = run_case(
        e.as_mut(),
        &case,
        &[OracleKind::Graph],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    let lost = f
        .iter()
        .find(|f| f.kind == "lost-update")
        .unwrap_or_else(|| panic!("{f:#?}\n{h:#?}"));
    assert_eq!(
        lost.verdict,
        txfuzz::oracle::Verdict::Permitted,
        "{lost:#?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lost.json");
    let record = txfuzz::finding::FindingRecord::new(
        lost.clone(),
        e.info().clone(),
        case.clone(),
        h.clone(),
    );
    std::fs::write(&path, serde_json::to_string(&record).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("lost-update"), "{stdout}");
}
