//! Crash detection against a private MariaDB instance that the test starts and
//! then kills (SIGKILL) mid-campaign: txfuzz must report a crash finding with a
//! replayable case, exit cleanly, and keep every finding it had already written.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct PrivateServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start_private_mariadb() -> PrivateServer {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let status = Command::new("mariadb-install-db")
        .args(["--no-defaults", "--user=root"])
        .arg(format!("--datadir={}", data.display()))
        // A private tmpdir: concurrent bootstraps sharing /tmp collide on
        // their temporary tables ("Unknown table 'mysql.tmp_user_sys'").
        .arg(format!("--tmpdir={}", tmp.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("mariadb-install-db is installed (scripts/provision.sh installs mariadb-server)");
    assert!(status.success(), "mariadb-install-db failed");
    let port = free_port();
    let child = Command::new("mariadbd")
        .args([
            "--no-defaults",
            "--user=root",
            "--skip-grant-tables",
            "--bind-address=127.0.0.1",
        ])
        .arg("--innodb-buffer-pool-size=32M")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--port={port}"))
        .arg(format!("--socket={}", dir.path().join("sock").display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .arg(format!(
            "--log-error={}",
            dir.path().join("error.log").display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .or_else(|_| {
            Command::new("/usr/sbin/mariadbd")
                .args(["--no-defaults", "--user=root", "--skip-grant-tables"])
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--port={port}"))
                .arg(format!("--socket={}", dir.path().join("sock").display()))
                .spawn()
        })
        .expect("mariadbd starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "private MariaDB did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    PrivateServer {
        child,
        port,
        _dir: dir,
    }
}

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
    let mut server = start_private_mariadb();
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
        .arg(format!("mysql://root@127.0.0.1:{}/test", server.port))
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
    server.child.kill().unwrap(); // SIGKILL
    server.child.wait().unwrap();

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
