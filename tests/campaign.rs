//! Campaigns through the library: the real SQLite engine gives no violation over
//! thousands of generated cases; fault-injected engines are caught.

use txfuzz::campaign::{run_campaign, CampaignConfig, Summary};
use txfuzz::engine::fault::{Fault, FaultyEngine};
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::Engine;

fn campaign(fault: Option<Fault>, seed: u64, tests: u64) -> (Summary, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let base: Box<dyn Engine> = Box::new(SqliteEngine::open(None).unwrap());
    let mut engine: Box<dyn Engine> = match fault {
        Some(f) => Box::new(FaultyEngine::new(base, f)),
        None => base,
    };
    let cfg = CampaignConfig {
        shadow: if fault.is_some() {
            0.0
        } else {
            txfuzz::campaign::DEFAULT_SHADOW
        },
        ..CampaignConfig::new(seed, tests, out.path())
    };
    (run_campaign(engine.as_mut(), &cfg).unwrap(), out)
}

#[test]
fn sqlite_campaign_of_2000_cases_has_no_violation() {
    let (s, out) = campaign(None, 11, 2000);
    assert_eq!(s.cases, 2000);
    assert_eq!(s.violations, 0, "{}", s.render());
    // The default share of cases ran a shadow, and none differed.
    assert_eq!(s.fidelity, 0, "{}", s.render());
    let shadows = &s.oracle_counts["fidelity"];
    assert!(shadows.checked + shadows.undecided > 100, "{}", s.render());
    assert!(std::fs::read_dir(out.path().join("findings"))
        .unwrap()
        .next()
        .is_none());
    // The campaign really exercised concurrency control.
    assert!(s.blocked_events > 50, "{}", s.render());
    assert!(s.aborts > 10, "{}", s.render());
    assert!(s.replays >= 3000, "{}", s.render());
}

#[test]
fn lose_write_campaign_is_caught() {
    let (s, out) = campaign(Some(Fault::LoseWrite), 5, 300);
    assert!(s.violations > 0, "{}", s.render());
    assert!(s.findings["wss"].keys().any(|k| k.ends_with("final-state")));
    assert!(out.path().join("findings").read_dir().unwrap().count() >= 2);
}

#[test]
fn stale_update_campaign_is_caught() {
    let (s, _out) = campaign(Some(Fault::StaleUpdate), 5, 300);
    assert!(s.violations > 0, "{}", s.render());
}
