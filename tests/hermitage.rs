//! Engine profiles checked against the real servers (Hermitage sequences, as in
//! ENGINE-FACTS.md): where the engine lets an anomaly happen that the isolation
//! level (Adya) forbids, the `graph` oracle must find it and classify it as
//! permitted by the engine's design; where the engine prevents it, or the level
//! itself allows it, the oracle must report nothing.

use txfuzz::campaign::run_case;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::Isolation::{self, *};
use txfuzz::oracle::graph::anomaly::level_forbids;
use txfuzz::oracle::{CheckStats, OracleKind, Verdict};
use txfuzz::testkit::hermitage;

fn url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: scripts/test.sh provisions the servers and exports it")
    })
}

/// Names the graph oracle may give to each Hermitage anomaly.
fn names(anomaly: &str) -> &'static [&'static str] {
    match anomaly {
        "G0" => &["G0"],
        "G1a" => &["G1a"],
        "G1b" => &["G1b"],
        "G1c" => &["G1c"],
        "P4" => &["lost-update"],
        "G-single" => &["G-single", "read-skew"],
        "G2-item" => &["G2-item", "write-skew"],
        other => panic!("unknown anomaly {other}"),
    }
}

/// Runs every Hermitage sequence at `level` and compares with `allowed`
/// (the anomalies ENGINE-FACTS.md marks A for this engine and level): an allowed
/// anomaly that the level forbids is found and permitted; any other is absent.
fn check_level(engine: &mut dyn Engine, level: Isolation, allowed: &[&str]) {
    for (anomaly, mut case) in hermitage::all() {
        case.isolation = level;
        let mut stats = CheckStats::default();
        let (_, findings) = run_case(
            engine,
            &case,
            &[OracleKind::Graph],
            &ExecOptions::default(),
            &mut stats,
        )
        .unwrap();
        let what = format!("{} {level} {anomaly}", engine.info().name);
        let hit = findings
            .iter()
            .find(|f| names(anomaly).contains(&f.kind.as_str()));
        let forbidden = names(anomaly).iter().any(|n| level_forbids(level, n));
        if allowed.contains(&anomaly) && forbidden {
            let hit =
                hit.unwrap_or_else(|| panic!("{what}: expected the anomaly, got {findings:#?}"));
            assert_eq!(hit.verdict, Verdict::Permitted, "{what}: {hit:#?}");
        } else {
            assert!(hit.is_none(), "{what}: expected no {anomaly}, got {hit:#?}");
        }
        // Whatever else the schedule produced, a correct engine never violates
        // its own documented design.
        let violation = findings.iter().find(|f| f.verdict == Verdict::Violation);
        assert!(violation.is_none(), "{what}: {violation:#?}");
    }
}

#[test]
fn mariadb_profile_matches_the_engine() {
    let mut e = txfuzz::engine::open(Some(&url("TXFUZZ_MYSQL_URL"))).unwrap();
    check_level(
        e.as_mut(),
        ReadUncommitted,
        &["G1a", "G1b", "G1c", "P4", "G-single", "G2-item"],
    );
    check_level(e.as_mut(), ReadCommitted, &["P4", "G-single", "G2-item"]);
    check_level(e.as_mut(), RepeatableRead, &["P4", "G2-item"]);
    check_level(e.as_mut(), Serializable, &[]);
}

#[test]
fn postgres_profile_matches_the_engine() {
    let mut e = txfuzz::engine::open(Some(&url("TXFUZZ_PG_URL"))).unwrap();
    check_level(e.as_mut(), ReadCommitted, &["P4", "G-single", "G2-item"]);
    check_level(e.as_mut(), RepeatableRead, &["G2-item"]);
    check_level(e.as_mut(), Serializable, &[]);
}

#[test]
fn sqlite_prevents_every_anomaly() {
    let mut e = txfuzz::engine::open(None).unwrap();
    check_level(e.as_mut(), Serializable, &[]);
}
