//! On which releases does a finding reproduce? `txfuzz replay FINDING --db
//! URL1 --db URL2` replays it on each server and records, in the finding
//! file, the versions it reproduces on and those it does not; exports and
//! the report print them.

mod common;

use std::process::Command;
use txfuzz::finding::{read_record, FindingRecord};
use txfuzz::model::Isolation;
use txfuzz::oracle::OracleKind;
use txfuzz::testkit::finding_record;

/// Hermitage's lost update (P4) at REPEATABLE READ, as a `graph`
/// `lost-update` finding recorded on MariaDB 10.11 at `url`.
fn lost_update_finding(url: &str) -> FindingRecord {
    let mut case = txfuzz::testkit::hermitage::p4();
    case.isolation = Isolation::RepeatableRead;
    let engine = ("mariadb", "10.11");
    finding_record(OracleKind::Graph, "lost-update", engine, url, case)
}

/// MariaDB 10.11 (snapshot isolation OFF by default) lets P4 lose the
/// update; 11.8 (ON by default) fails T2's write with 1020 instead. Both
/// ways in one replay: reproduces on 10.11, not on 11.8, and the file, the
/// output and the exit code say so (the exports' header: `export` tests).
#[test]
fn a_lost_update_reproduces_on_mariadb_10_11_and_not_on_11_8() {
    let Some(old) = common::mysql_url() else {
        return;
    };
    let Some(new) = common::current_url("TXFUZZ_MARIADB118_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finding.json");
    let rec = lost_update_finding(&old);
    std::fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(["replay", path.to_str().unwrap(), "--db", &old, "--db", &new])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let releases = read_record(&path)
        .unwrap()
        .releases
        .expect("releases recorded");
    assert_eq!(releases.reproduces.len(), 1, "{releases:?}");
    assert!(
        releases.reproduces[0].starts_with("mariadb 10.11"),
        "{releases:?}"
    );
    assert_eq!(releases.does_not.len(), 1, "{releases:?}");
    assert!(
        releases.does_not[0].starts_with("mariadb 11.8"),
        "{releases:?}"
    );
    assert!(out.contains(&releases.summary()), "{out}");
}
