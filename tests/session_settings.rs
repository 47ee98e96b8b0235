//! Per-session settings (issue 33, `--setting NAME=V1,V2`): each session of
//! a case sets its own values when it opens, and the oracles judge each
//! transaction by its session's profile. MariaDB's
//! `innodb_snapshot_isolation` is the setting txfuzz models: ON, a write of
//! a row changed since the read view fails with 1020 (REPEATABLE READ is
//! snapshot isolation), and READ COMMITTED has no semi-consistent read.

use txfuzz::campaign::{run_campaign, CampaignConfig};
use txfuzz::engine::Engine;
use txfuzz::gen::SettingChoice;
use txfuzz::model::{ErrorClass, History, Isolation, StmtRef, TestCase};
use txfuzz::oracle::{verdict, Finding, OracleKind, Verdict};
use txfuzz::testkit::*;

mod common;

const SI: &str = "innodb_snapshot_isolation";

fn run(e: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>) {
    let (h, f, _) = common::run_defaults(e, case);
    (h, f)
}

/// [`run`] with `view`'s counts (checked, undecided).
fn run_counted(e: &mut dyn Engine, case: &TestCase) -> (History, Vec<Finding>, (u64, u64)) {
    let (h, f, view) = common::run_defaults(e, case);
    (h, f, (view.checked, view.undecided))
}

fn with_si(mut case: TestCase, per_txn: &[&str]) -> TestCase {
    for (t, v) in case.txns.iter_mut().zip(per_txn) {
        t.settings.insert(SI.into(), v.to_string());
    }
    case
}

/// Lost update at REPEATABLE READ: T1 reads row 1, T2 overwrites it and
/// commits, T1 writes it from its read.
fn lost_update() -> TestCase {
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![select("t", Some(1)), add("t", 1, 1)]),
            committed(vec![set("t", 1, 20)]),
        ],
        "1 1 2 2 2 1 1",
    );
    case.isolation = Isolation::RepeatableRead;
    case
}

fn error_of(h: &History, r: StmtRef) -> Option<ErrorClass> {
    h.outcome(r).and_then(|o| o.error.as_ref()).map(|e| e.class)
}

/// The overwriting session (T1) decides: with snapshot isolation ON there,
/// its write fails with 1020 and nothing is found; with it ON only in T2's
/// session, T1's lost update happens and is permitted, citing T1's session.
/// The session settings reach the server (the server's own value is OFF).
#[test]
fn mariadb_sessions_run_with_their_own_snapshot_isolation() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    assert_eq!(
        e.info().settings.get(SI).map(String::as_str),
        Some("OFF"),
        "the server's default (10.11)"
    );
    let write = StmtRef { txn: 1, index: 2 };
    let (h, f, view) = run_counted(e.as_mut(), &with_si(lost_update(), &["ON", "OFF"]));
    assert_eq!(
        error_of(&h, write),
        Some(ErrorClass::SnapshotConflict),
        "{h:#?}"
    );
    assert!(f.iter().all(|f| !f.is_new_violation()), "{f:#?}");
    // `view` predicted the 1020 from T1's session's rule; without session
    // profiles (the server's rule for every session) it cannot.
    assert_eq!(view, (1, 0), "{f:#?}");
    let mut server_rules = WithProfile::new(common::open(&url), |p| p.session_settings = None);
    let (_, f, view) = run_counted(&mut server_rules, &with_si(lost_update(), &["ON", "OFF"]));
    assert!(
        view != (1, 0) || f.iter().any(|f| f.oracle == OracleKind::View),
        "judged clean with the server's rule: {f:#?}"
    );

    let (h, f) = run(e.as_mut(), &with_si(lost_update(), &["OFF", "ON"]));
    assert_eq!(error_of(&h, write), None, "{h:#?}");
    let lost = f
        .iter()
        .find(|f| f.oracle == OracleKind::Graph && f.kind == "lost-update")
        .unwrap_or_else(|| panic!("no lost update: {f:#?}"));
    assert_eq!(lost.verdict, Verdict::Permitted, "{lost:#?}");
    let permit = lost.permitted_by.as_ref().unwrap();
    assert!(
        permit.fact.contains("reader T1") && permit.fact.contains("=OFF"),
        "{permit:?}"
    );
    assert!(f.iter().all(|f| !f.is_new_violation()), "{f:#?}");
}

/// The fault: a history in which T1's session had snapshot isolation ON
/// and its lost update still committed (the engine ignored the setting) is
/// a violation, judged by T1's session's profile.
#[test]
fn mariadb_a_lost_update_in_a_snapshot_isolation_session_is_a_violation() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::open(&url);
    let (h, _) = run(e.as_mut(), &with_si(lost_update(), &["OFF", "OFF"]));
    let tampered = with_si(lost_update(), &["ON", "OFF"]);
    let mut f = txfuzz::oracle::graph::check(e.as_ref(), &tampered, &h);
    verdict::apply_to_case(&mut f, e.profile(), &tampered);
    let lost = f
        .iter()
        .find(|f| f.kind == "lost-update")
        .unwrap_or_else(|| panic!("{f:#?}"));
    assert_eq!(lost.verdict, Verdict::Violation, "{lost:#?}");
    // The same history with T1's session at the server's value is permitted.
    let plain = with_si(lost_update(), &["OFF", "ON"]);
    let mut f = txfuzz::oracle::graph::check(e.as_ref(), &plain, &h);
    verdict::apply_to_case(&mut f, e.profile(), &plain);
    assert!(f.iter().all(|f| f.verdict == Verdict::Permitted), "{f:#?}");
}

/// READ COMMITTED: T1 updates row 1 (v 10 → 11) and holds it; T2 updates
/// the rows whose v is 11. OFF, T2's semi-consistent read skips row 1 (its
/// committed version, 10, does not match) without waiting; ON, T2 waits
/// for T1's lock and then updates the row T1 committed. `view` decides both
/// clean, each with its session's rule.
#[test]
fn mariadb_read_committed_update_waits_with_snapshot_isolation() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = |t2: &str| {
        let mut case = kv_case(
            &[(1, 10)],
            vec![
                committed(vec![set("t", 1, 11)]),
                committed(vec![set_where_v("t", 11, 30)]),
            ],
            "1 1 2 2 1 2",
        );
        case.isolation = Isolation::ReadCommitted;
        with_si(case, &["OFF", t2])
    };
    let t2_update = StmtRef { txn: 2, index: 1 };
    let mut e = common::open(&url);
    let (h, f) = run(e.as_mut(), &case("OFF"));
    assert!(!h.was_blocked(t2_update), "{h:#?}");
    assert!(f.iter().all(|f| !f.is_new_violation()), "{f:#?}");
    let final_v = |h: &History| value_of(&h.final_state, "t", 1);
    assert_eq!(final_v(&h), Some(txfuzz::model::Value::Int(11)));

    let (h, f) = run(e.as_mut(), &case("ON"));
    assert!(h.was_blocked(t2_update), "{h:#?}");
    assert!(f.iter().all(|f| !f.is_new_violation()), "{f:#?}");
    assert_eq!(final_v(&h), Some(txfuzz::model::Value::Int(30)));
}

/// `--setting innodb_snapshot_isolation=ON,OFF`: every session draws a
/// value, the summary counts cases and sessions per value, and a setting
/// the profile does not model is refused before anything runs.
#[test]
fn mariadb_campaign_draws_session_settings() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let mut cfg = CampaignConfig::new(9, 30, out.path());
    cfg.settings = vec![format!("{SI}=ON,OFF").parse::<SettingChoice>().unwrap()];
    let mut e = common::open(&url);
    let s = run_campaign(e.as_mut(), &cfg).unwrap();
    let cases = |v: &str| s.cases_per_setting.get(&format!("{SI}={v}")).copied();
    assert!(cases("mixed").unwrap_or(0) > 0, "{:?}", s.cases_per_setting);
    assert_eq!(
        s.cases_per_setting.values().sum::<u64>(),
        s.cases,
        "{:?}",
        s.cases_per_setting
    );
    for v in ["ON", "OFF"] {
        assert!(
            s.sessions_per_setting[&format!("{SI}={v}")] > 0,
            "{:?}",
            s.sessions_per_setting
        );
    }
    assert_eq!(s.violations, 0, "{s:#?}");

    let mut bad = CampaignConfig::new(9, 1, out.path());
    bad.settings = vec!["innodb_lock_wait_timeout=5".parse().unwrap()];
    let err = run_campaign(e.as_mut(), &bad).unwrap_err().to_string();
    assert!(err.contains("no session setting"), "{err}");
    bad.settings = vec![format!("{SI}=MAYBE").parse().unwrap()];
    let err = run_campaign(e.as_mut(), &bad).unwrap_err().to_string();
    assert!(err.contains("ON, OFF"), "{err}");
}

/// Settings parse as NAME=V1,V2 and refuse what could not be a setting.
#[test]
fn setting_choices_parse_and_refuse_bad_input() {
    let c: SettingChoice = "innodb_snapshot_isolation=ON,OFF".parse().unwrap();
    assert_eq!(c.values, vec!["ON", "OFF"]);
    for bad in ["noequals", "=ON", "a b=ON", "x=ON;DROP", "x=", "1x=ON"] {
        assert!(bad.parse::<SettingChoice>().is_err(), "{bad}");
    }
}

/// REPEATABLE READ with snapshot isolation ON in T1's session: T1 starts
/// WITH CONSISTENT SNAPSHOT; T2 updates row 1 to `value` and commits; T1
/// writes row 1. When T2's UPDATE changed nothing (the row already held
/// `value`), InnoDB wrote no new version and T1's write succeeds; when it
/// changed the row, T1's write fails with 1020. `view` decides both clean
/// (a row matched without change is not a change to conflict with).
#[test]
fn mariadb_a_row_matched_without_change_is_no_snapshot_conflict() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = |value: i64| {
        let mut case = kv_case(
            &[(1, 10)],
            vec![
                committed(vec![add("t", 1, 1)]),
                committed(vec![set("t", 1, value)]),
            ],
            "1 2 2 2 1 1",
        );
        case.isolation = Isolation::RepeatableRead;
        case.txns[0].stmts[0].stmt = txfuzz::model::Stmt::Begin(txfuzz::model::Begin::with_mode(
            txfuzz::model::StartMode::ConsistentSnapshot,
        ));
        with_si(case, &["ON", "OFF"])
    };
    let write = StmtRef { txn: 1, index: 1 };
    let mut e = common::open(&url);
    for (value, error) in [(10, None), (20, Some(ErrorClass::SnapshotConflict))] {
        let (h, f, view) = run_counted(e.as_mut(), &case(value));
        assert_eq!(error_of(&h, write), error, "T2 set {value}: {h:#?}");
        assert!(f.iter().all(|f| !f.is_new_violation()), "{f:#?}");
        assert_eq!(view, (1, 0), "T2 set {value}: {f:#?}");
    }
}

/// REPEATABLE READ, snapshot isolation ON in T1's session: T1 starts WITH
/// CONSISTENT SNAPSHOT; T2 changes row 2 in autocommit; T1's
/// `UPDATE t SET v = 11 WHERE v = 10` matches row 1 only, but scans and
/// locks row 2 too and fails with 1020. `view` explains the error (a row of
/// the table changed after T1's read view; which rows a statement locks is
/// its plan's) and decides the case; without T2's change nobody fails.
#[test]
fn mariadb_a_snapshot_conflict_on_a_scanned_row_is_explained() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let case = |t2_writes: bool| {
        let t2 = match t2_writes {
            true => set("t", 2, 21),
            false => select("t", Some(2)),
        };
        let mut case = kv_case(
            &[(1, 10), (2, 20)],
            vec![
                committed(vec![set_where_v("t", 10, 11)]),
                autocommit(vec![t2]),
            ],
            "1 2 1 1",
        );
        case.isolation = Isolation::RepeatableRead;
        case.txns[0].stmts[0].stmt = txfuzz::model::Stmt::Begin(txfuzz::model::Begin::with_mode(
            txfuzz::model::StartMode::ConsistentSnapshot,
        ));
        with_si(case, &["ON", "OFF"])
    };
    let update = StmtRef { txn: 1, index: 1 };
    let mut e = common::open(&url);
    for (t2_writes, error) in [(true, Some(ErrorClass::SnapshotConflict)), (false, None)] {
        let (h, f, view) = run_counted(e.as_mut(), &case(t2_writes));
        assert_eq!(error_of(&h, update), error, "{h:#?}");
        assert!(f.iter().all(|f| !f.is_new_violation()), "{f:#?}");
        assert_eq!(view, (1, 0), "T2 writes: {t2_writes}: {f:#?}");
    }
}
