//! Engine profiles checked against the real servers (Hermitage sequences, as in
//! docs/engine-facts.md): where the engine lets an anomaly happen that the
//! isolation level (Adya) forbids, the `graph` oracle must find it and the
//! verdict policy must permit it through the profile's documented permission
//! for that level; where the engine prevents it, or the level itself allows it,
//! the oracle must report nothing. Each test also checks that the profile
//! permits exactly the anomalies the engine shows, so a wrong permission fails.

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
    for (anomaly, _) in hermitage::all() {
        let name = names(anomaly)[0];
        if !level_forbids(level, name) {
            continue;
        }
        let class = |n: &str| txfuzz::model::Anomaly::from_name(n).unwrap().class();
        let a = txfuzz::model::Anomaly::from_name(name).unwrap();
        let permitted = engine.profile().anomaly_permission(level, a).is_some();
        // The profile permits what the engine shows, and nothing else unless
        // a shown anomaly of the same class (lost update for G-single) needs it.
        let shown_in_class = allowed
            .iter()
            .any(|s| class(names(s)[0]) == a.class() && level_forbids(level, names(s)[0]));
        assert!(
            permitted == allowed.contains(&anomaly) || (permitted && shown_in_class),
            "{} {level}: the profile's permission for {anomaly} ({permitted}) disagrees with the engine",
            engine.info().name
        );
    }
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
            let by = hit.permitted_by.as_ref().expect("a permission names its source");
            assert!(by.test.contains(&format!("{level}").replace('-', "_")), "{what}: {by:?}");
        } else {
            assert!(hit.is_none(), "{what}: expected no {anomaly}, got {hit:#?}");
        }
        // Whatever else the schedule produced, a correct engine never violates
        // its own documented design.
        let violation = findings.iter().find(|f| f.verdict == Verdict::Violation);
        assert!(violation.is_none(), "{what}: {violation:#?}");
    }
}

fn mariadb() -> Box<dyn Engine> {
    txfuzz::engine::open(Some(&url("TXFUZZ_MYSQL_URL"))).unwrap()
}

fn postgres() -> Box<dyn Engine> {
    txfuzz::engine::open(Some(&url("TXFUZZ_PG_URL"))).unwrap()
}

#[test]
fn mariadb_read_uncommitted_permits_what_its_manual_says() {
    check_level(
        mariadb().as_mut(),
        ReadUncommitted,
        &["G1a", "G1b", "G1c", "P4", "G-single", "G2-item"],
    );
}

#[test]
fn mariadb_read_committed_permits_what_its_manual_says() {
    check_level(
        mariadb().as_mut(),
        ReadCommitted,
        &["P4", "G-single", "G2-item"],
    );
}

#[test]
fn mariadb_repeatable_read_permits_what_its_manual_says() {
    check_level(mariadb().as_mut(), RepeatableRead, &["P4", "G2-item"]);
}

#[test]
fn mariadb_serializable_prevents_every_anomaly() {
    check_level(mariadb().as_mut(), Serializable, &[]);
}

#[test]
fn postgres_read_committed_permits_what_its_manual_says() {
    check_level(
        postgres().as_mut(),
        ReadCommitted,
        &["P4", "G-single", "G2-item"],
    );
}

#[test]
fn postgres_repeatable_read_permits_what_its_manual_says() {
    check_level(postgres().as_mut(), RepeatableRead, &["G2-item"]);
}

#[test]
fn postgres_serializable_prevents_every_anomaly() {
    check_level(postgres().as_mut(), Serializable, &[]);
}

#[test]
fn sqlite_prevents_every_anomaly() {
    let mut e = txfuzz::engine::open(None).unwrap();
    check_level(e.as_mut(), Serializable, &[]);
}
