//! The `txfuzz` binary end to end: exit codes, output files, determinism, replay.

use std::path::Path;
use std::process::{Command, Output};

fn txfuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(args)
        .output()
        .expect("run txfuzz")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn run_500_cases_twice_gives_identical_cases_and_no_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let mut digests = Vec::new();
    for run in ["a", "b"] {
        let out = tmp.path().join(run);
        let o = txfuzz(&[
            "run",
            "--tests",
            "500",
            "--seed",
            "7",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(
            code(&o),
            0,
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(&o)
        );
        let s = summary(&out);
        assert_eq!(s["cases"], 500);
        assert_eq!(s["violations"], 0);
        assert!(s["statements"].as_u64().unwrap() > 500);
        assert!(s["replays"].as_u64().unwrap() >= 500);
        digests.push(s["case_digest"].as_str().unwrap().to_string());
    }
    assert_eq!(digests[0], digests[1]);
    // A different seed gives different cases.
    let out = tmp.path().join("c");
    let o = txfuzz(&[
        "run",
        "--tests",
        "20",
        "--seed",
        "8",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0);
    let first20 = tmp.path().join("d");
    txfuzz(&[
        "run",
        "--tests",
        "20",
        "--seed",
        "7",
        "--quiet",
        "--out",
        first20.to_str().unwrap(),
    ]);
    assert_ne!(
        summary(&out)["case_digest"],
        summary(&first20)["case_digest"]
    );
}

#[test]
fn unreachable_server_exits_2_with_one_line() {
    let o = txfuzz(&[
        "run",
        "--db",
        "mysql://nobody@127.0.0.1:1/x",
        "--tests",
        "1",
    ]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
}

#[test]
fn missing_and_malformed_case_files_exit_2() {
    let o = txfuzz(&["replay", "missing.json"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.json"));

    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"format\": 1, \"txns\": 3}").unwrap();
    let o = txfuzz(&["replay", bad.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    std::fs::write(&bad, "not json").unwrap();
    let o = txfuzz(&["replay", bad.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(!stderr(&o).contains("panicked"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["run", "--isolation", "read-committed", "--tests", "1"][..],
        &["run", "--isolation", "snapshot"][..],
        &["run", "--oracle", "bogus"][..],
        &["run", "--time", "soon"][..],
        &["run", "--db", "oracle://x/y"][..],
        &["run", "--tests", "1", "--time", "1s"][..],
        &["run", "--tests", "1", "--shadow", "2"][..],
        &["run", "--tests", "1", "--shadow", "NaN"][..],
    ] {
        let o = txfuzz(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
    }
}

#[test]
fn injected_fault_is_found_stored_and_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("f");
    let o = txfuzz(&[
        "run",
        "--fault",
        "lose-write",
        "--tests",
        "300",
        "--seed",
        "3",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = summary(&out);
    assert!(s["violations"].as_u64().unwrap() > 0);
    assert!(s["findings"]["wss"].is_object(), "{s}");
    let files = s["finding_files"].as_array().unwrap();
    // The first `wss` finding (a shadow run may also report the fault) whose
    // schedule the engine serves one way only: where two statements waited
    // at once, SQLite's busy handler picks which goes first, and a replay
    // may take a few attempts (`replay` retries those).
    let first = files
        .iter()
        .filter_map(|f| f.as_str())
        .filter(|f| f.contains("-wss-"))
        .map(Path::new)
        .find(|f| !has_serving_race(f))
        .unwrap();
    assert!(first.exists());
    assert!(first.with_extension("sql").exists());
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first).unwrap()).unwrap();
    for key in ["finding", "engine", "case", "history", "replay"] {
        assert!(rec.get(key).is_some(), "finding file lacks {key}");
    }
    assert_eq!(rec["engine"]["settings"]["fault"], "lose-write");
    let o = txfuzz(&["replay", first.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("reproduced:"));
}

/// Whether the finding's recorded history has a serving race (two
/// statements waiting at once, or resumed together).
fn has_serving_race(finding: &Path) -> bool {
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(finding).unwrap()).unwrap();
    let h: txfuzz::model::History = serde_json::from_value(rec["history"].clone()).unwrap();
    txfuzz::oracle::fidelity::race(&h).is_some()
}

#[test]
fn time_limited_run_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t");
    let o = txfuzz(&[
        "run",
        "--time",
        "1s",
        "--seed",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = summary(&out);
    assert!(s["cases"].as_u64().unwrap() > 0);
    assert!(s["elapsed_s"].as_f64().unwrap() < 5.0);
}

/// Instrumentation that takes extra locks (`--fault extra-lock`) is caught by
/// the shadow run: `fidelity` findings, counted apart, failing the run, and
/// reproduced by `replay`.
#[test]
fn the_shadow_run_reports_instrumentation_that_changes_the_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s");
    let o = txfuzz(&[
        "run",
        "--fault",
        "extra-lock",
        "--oracle",
        "crash",
        "--shadow",
        "1",
        "--tests",
        "100",
        "--seed",
        "3",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = summary(&out);
    assert_eq!(s["violations"], 0, "{s}");
    assert!(s["fidelity"].as_u64().unwrap() > 0, "{s}");
    assert!(s["oracle_counts"]["fidelity"]["checked"].as_u64().unwrap() > 0);
    let first = s["finding_files"][0].as_str().unwrap().to_string();
    assert!(first.contains("-fidelity-"), "{first}");
    let o = txfuzz(&["replay", &first]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 1, "{stdout}");
    assert!(stdout.contains("reproduced: fidelity:"), "{stdout}");
    assert!(
        stdout.contains("shadow run without instrumentation: differs"),
        "{stdout}"
    );
}
