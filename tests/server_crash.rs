//! Crash detection against a private MariaDB instance that the test starts and
//! then kills (SIGKILL) mid-campaign: txfuzz must report a crash finding with a
//! replayable case, exit cleanly, and keep every finding it had already written.
//! The private instance needs root and MariaDB's binaries
//! (tests/common/private.rs); without them the test is skipped, loudly.

mod common;

use common::private::{Kind, Private};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn findings(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("findings"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}

#[test]
fn killed_server_gives_a_crash_finding_and_keeps_earlier_findings() {
    let Some(mut server) = Private::start(Kind::Mariadb) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    // The lose-write fault makes findings appear before the crash.
    let mut txfuzz = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args([
            "run",
            "--fault",
            "lose-write",
            "--time",
            "120s",
            "--seed",
            "9",
            "--quiet",
        ])
        .args(["--isolation", "serializable", "--recover-wait", "2s"])
        .arg("--db")
        .arg(server.url())
        .arg("--out")
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while findings(out.path()).len() < 2 {
        assert!(Instant::now() < deadline, "no finding before the crash");
        assert!(txfuzz.try_wait().unwrap().is_none(), "txfuzz ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = findings(out.path());
    server.kill(); // SIGKILL

    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = txfuzz.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "txfuzz did not stop after the crash"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let out_text = txfuzz.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out_text.stderr);
    assert_eq!(status.code(), Some(1), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let after = findings(out.path());
    for f in &before {
        assert!(after.contains(f), "{} vanished", f.display());
    }
    let crash: Vec<&PathBuf> = after
        .iter()
        .filter(|p| p.to_string_lossy().contains("-crash-"))
        .collect();
    assert!(!crash.is_empty(), "no crash finding among {after:?}");
    for f in &after {
        txfuzz::finding::load_case_file(f).unwrap_or_else(|e| panic!("{e}"));
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap())
            .unwrap();
    assert!(summary["stopped"]
        .as_str()
        .unwrap()
        .contains("did not come back"));
    assert!(summary["findings"]["crash"].is_object(), "{summary}");
}
