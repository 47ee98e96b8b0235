//! The `sdg` oracle against real engines: on SQLite, MariaDB and PostgreSQL
//! the TxCheck Figure 1 shape (transaction graph cyclic, statement graph not)
//! is checked, never discarded; scripted Hermitage interleavings at every level
//! never produce an `sdg` violation (whatever anomaly the level permits), and
//! every case is accounted for as checked, undecided or discarded. The
//! fault-injected stale read is caught (unit tests in `src/oracle/sdg`).

use txfuzz::campaign::run_case;
use txfuzz::engine::mysql::MysqlEngine;
use txfuzz::engine::postgres::PgEngine;
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

fn pg() -> PgEngine {
    let url = std::env::var("TXFUZZ_PG_URL")
        .expect("TXFUZZ_PG_URL is not set: scripts/test.sh provisions PostgreSQL and exports it");
    PgEngine::connect(&url).unwrap()
}

fn mariadb() -> MysqlEngine {
    let url = std::env::var("TXFUZZ_MYSQL_URL")
        .expect("TXFUZZ_MYSQL_URL is not set: scripts/test.sh provisions MariaDB and exports it");
    MysqlEngine::connect(&url).unwrap()
}

const LEVELS: [Isolation; 3] = [
    Isolation::ReadCommitted,
    Isolation::RepeatableRead,
    Isolation::Serializable,
];

#[test]
fn postgres_figure1_and_hermitage() {
    let mut e = pg();
    assert_figure1_checked(&mut e, Isolation::RepeatableRead);
    assert!(no_violations(&mut e, &LEVELS) >= 12);
}

#[test]
fn mariadb_figure1_and_hermitage() {
    let mut e = mariadb();
    assert_figure1_checked(&mut e, Isolation::RepeatableRead);
    assert!(no_violations(&mut e, &LEVELS) >= 12);
}
