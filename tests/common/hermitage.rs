//! The Hermitage check shared by `tests/hermitage.rs` and `tests/hermitage_si.rs`.

use txfuzz::campaign::run_case;
use txfuzz::engine::Engine;
use txfuzz::exec::ExecOptions;
use txfuzz::model::Isolation;
use txfuzz::oracle::{CheckStats, OracleKind, Verdict};
use txfuzz::testkit::hermitage;

/// Whether `level` forbids the anomaly named `name`.
fn level_forbids(level: Isolation, name: &str) -> bool {
    let a = txfuzz::model::Anomaly::from_name(name).expect("a known anomaly name");
    txfuzz::model::anomaly::level_forbids(level, a)
}

/// Names the graph oracle may give to each Hermitage anomaly.
pub fn names(anomaly: &str) -> &'static [&'static str] {
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
/// (the anomalies docs/engine-facts.md marks A for this engine and level): an allowed
/// anomaly that the level forbids is found and permitted; any other is absent.
pub fn check_level(engine: &mut dyn Engine, level: Isolation, allowed: &[&str]) {
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
        let case = txfuzz::testkit::in_default_mode(&case, engine);
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
            let by = hit
                .permitted_by
                .as_ref()
                .expect("a permission names its source");
            assert!(
                by.test.contains(&format!("{level}").replace('-', "_")),
                "{what}: {by:?}"
            );
        } else {
            assert!(hit.is_none(), "{what}: expected no {anomaly}, got {hit:#?}");
        }
        // Whatever else the schedule produced, a correct engine never violates
        // its own documented design.
        let violation = findings.iter().find(|f| f.verdict == Verdict::Violation);
        assert!(violation.is_none(), "{what}: {violation:#?}");
    }
}
