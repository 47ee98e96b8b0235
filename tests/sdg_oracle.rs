//! The `sdg` oracle against real engines: on SQLite, MariaDB and PostgreSQL
//! the TxCheck Figure 1 shape (transaction graph cyclic, statement graph not)
//! is checked, never discarded; scripted Hermitage interleavings at every level
//! never produce an `sdg` violation (whatever anomaly the level permits), and
//! every case is accounted for as checked, undecided or discarded. The
//! fault-injected stale read is caught (unit tests in `src/oracle/sdg`).

mod common;

use txfuzz::campaign::run_case;
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::{Isolation, TestCase};
use txfuzz::oracle::{CheckStats, Finding, OracleCounts, OracleKind, Verdict};
use txfuzz::testkit::{hermitage, txcheck_figure1};

fn sdg(engine: &mut dyn Engine, case: &TestCase) -> (Vec<Finding>, OracleCounts) {
    let mut stats = CheckStats::default();
    let (_, findings) = run_case(
        engine,
        case,
        &[OracleKind::Sdg],
        &ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (
        findings,
        stats.per_oracle.get("sdg").cloned().unwrap_or_default(),
    )
}

fn at(mut case: TestCase, iso: Isolation) -> TestCase {
    case.isolation = iso;
    case
}

/// Runs Figure 1 and every Hermitage case at `levels`; returns how many were checked.
fn no_violations(engine: &mut dyn Engine, levels: &[Isolation]) -> u64 {
    let mut checked = 0;
    for &iso in levels {
        let mut cases = vec![("figure1", txcheck_figure1())];
        cases.extend(hermitage::all());
        for (name, case) in cases {
            let (findings, counts) = sdg(engine, &at(case, iso));
            let bad: Vec<&Finding> = findings
                .iter()
                .filter(|f| f.verdict == Verdict::Violation)
                .collect();
            assert!(bad.is_empty(), "{name} at {iso}: {bad:#?}");
            let accounted =
                counts.checked + counts.undecided + counts.discarded.values().sum::<u64>();
            assert_eq!(accounted, 1, "{name} at {iso}: {counts:?}");
            checked += counts.checked;
        }
    }
    checked
}

fn assert_figure1_checked(engine: &mut dyn Engine, iso: Isolation) {
    let (findings, counts) = sdg(engine, &at(txcheck_figure1(), iso));
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(
        counts.checked, 1,
        "figure 1 at {iso} must be checked: {counts:?}"
    );
}

#[test]
fn sqlite_figure1_and_hermitage() {
    let mut e = SqliteEngine::open(None).unwrap();
    assert_figure1_checked(&mut e, Isolation::Serializable);
    assert!(no_violations(&mut e, &[Isolation::Serializable]) >= 6);
}

const LEVELS: [Isolation; 3] = [
    Isolation::ReadCommitted,
    Isolation::RepeatableRead,
    Isolation::Serializable,
];

#[test]
fn postgres_figure1_and_hermitage() {
    let Some(url) = common::pg_url() else {
        return;
    };
    let mut e = common::postgres(&url);
    assert_figure1_checked(&mut e, Isolation::RepeatableRead);
    assert!(no_violations(&mut e, &LEVELS) >= 12);
}

#[test]
fn mariadb_figure1_and_hermitage() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let mut e = common::mariadb(&url);
    assert_figure1_checked(&mut e, Isolation::RepeatableRead);
    assert!(no_violations(&mut e, &LEVELS) >= 12);
}

/// InnoDB READ COMMITTED: T1 holds row k=1 (its committed v = 0, T1's own
/// v = 1); T2's autocommit `UPDATE ... WHERE v = 1` judges the row on its
/// committed version, which does not match, and goes on without waiting
/// (semi-consistent read). `sdg`'s version-set reads must not change that: a
/// locking VSR would wait for T1's lock and let the UPDATE see T1's row.
#[test]
fn mariadb_read_committed_vsrs_leave_semi_consistent_updates_alone() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    use txfuzz::exec::execute;
    use txfuzz::model::{EventKind, History};
    use txfuzz::oracle::sdg::vsr;
    use txfuzz::testkit::{autocommit, committed, kv_case, set, set_where_v};
    let case = at(
        kv_case(
            &[(1, 0)],
            vec![
                committed(vec![set("t", 1, 1)]),
                autocommit(vec![set_where_v("t", 1, 7)]),
            ],
            "1 1 2 1",
        ),
        Isolation::ReadCommitted,
    );
    let blocked = |h: &History| {
        h.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Blocked { .. }))
    };
    let mut e = common::mariadb(&url);
    e.load(&case).unwrap();
    // Without VSRs, the UPDATE does not wait and writes nothing.
    let plain = execute(&mut e, &case, &ExecOptions::default()).unwrap();
    assert!(!blocked(&plain), "{plain:#?}");
    // With sdg's VSRs (as the profile says), the same.
    let rule = e.profile().rule(Isolation::ReadCommitted);
    let with_vsrs = vsr::instrument(&case, |_| rule);
    e.reset().unwrap();
    let h = execute(&mut e, &with_vsrs.case, &ExecOptions::default()).unwrap();
    assert!(!blocked(&h), "{h:#?}");
    // The locking VSRs of before would wait.
    let locking = vsr::instrument(&case, |_| None);
    e.reset().unwrap();
    let h = execute(&mut e, &locking.case, &ExecOptions::default()).unwrap();
    assert!(blocked(&h), "{h:#?}");
    let (findings, counts) = sdg(&mut e, &case);
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(counts.checked, 1, "{counts:?}");
}
