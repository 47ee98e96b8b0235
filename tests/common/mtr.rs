//! MariaDB's own test runner, mysql-test-run (Debian package `mariadb-test`,
//! which `scripts/provision.sh` installs), on exported tests. It starts a
//! private server of its own (the system's `mariadbd`), runs the tests of a
//! suite and compares each output with its `.result`.
//!
//! mysql-test-run takes tests only from a `mysql-test` tree and finds the
//! server's files relative to it, so each run gets a tree of symbolic links
//! to the installed one with a suite `txfuzz` of its own.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The installed mysql-test directory.
const INSTALLED: &str = "/usr/share/mysql/mysql-test";

/// A test to run: its name and the contents of its `.test` and `.result`.
pub struct MtrTest {
    pub name: String,
    pub test: String,
    pub result: String,
}

/// What mysql-test-run said.
pub struct MtrRun {
    pub passed: Vec<String>,
    pub failed: Vec<String>,
    /// Its whole output (diffs of failing tests included).
    pub log: String,
    /// Each failing test's output (`.reject`).
    pub rejects: std::collections::BTreeMap<String, String>,
}

/// mysql-test-run, or `None` after a SKIPPED line (a failure under
/// `TXFUZZ_REQUIRE_SERVERS`).
#[track_caller]
pub fn available() -> Option<()> {
    if Path::new(INSTALLED).join("mariadb-test-run.pl").is_file() {
        Some(())
    } else {
        super::skip(
            "mysql-test-run is not installed (Debian package mariadb-test; \
             scripts/provision.sh installs it)",
        )
    }
}

/// Runs `tests` in one mysql-test-run invocation (one private server).
pub fn run(tests: &[MtrTest]) -> MtrRun {
    let root = tempfile::tempdir().unwrap();
    let tree = tree(root.path());
    let suite = tree.join("suite/txfuzz");
    std::fs::create_dir_all(suite.join("t")).unwrap();
    std::fs::create_dir_all(suite.join("r")).unwrap();
    for t in tests {
        std::fs::write(suite.join("t").join(format!("{}.test", t.name)), &t.test).unwrap();
        std::fs::write(
            suite.join("r").join(format!("{}.result", t.name)),
            &t.result,
        )
        .unwrap();
    }
    let vardir = root.path().join("var");
    let out = Command::new("perl")
        .arg(tree.join("mariadb-test-run.pl"))
        .arg("--suite=txfuzz")
        .arg(format!("--vardir={}", vardir.display()))
        .arg("--force")
        .arg("--max-test-fail=0")
        // A replay that waits where the finding's run did not fails after
        // 5 s instead of InnoDB's default 50.
        .arg("--mysqld=--innodb-lock-wait-timeout=5")
        .args(tests.iter().map(|t| t.name.clone()))
        .current_dir(&tree)
        .output()
        .expect("perl runs mariadb-test-run.pl");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = MtrRun {
        passed: Vec::new(),
        failed: Vec::new(),
        log,
        rejects: Default::default(),
    };
    for t in tests {
        let line = run
            .log
            .lines()
            .find(|l| l.starts_with(&format!("txfuzz.{} ", t.name)))
            .unwrap_or("");
        if line.contains("[ pass ]") {
            run.passed.push(t.name.clone());
        } else {
            run.failed.push(t.name.clone());
            let reject = suite.join("r").join(format!("{}.reject", t.name));
            if let Ok(text) = std::fs::read_to_string(reject) {
                run.rejects.insert(t.name.clone(), text);
            }
        }
    }
    run
}

/// A `mysql-test` tree under `root` whose entries link to the installed
/// ones, beside links to the server's other files (`bin`, `sbin`, `lib`,
/// `share/mysql/*`), as mysql-test-run looks for them.
fn tree(root: &Path) -> PathBuf {
    use std::os::unix::fs::symlink;
    for dir in ["bin", "sbin", "lib"] {
        symlink(Path::new("/usr").join(dir), root.join(dir)).unwrap();
    }
    let share = root.join("share/mysql");
    std::fs::create_dir_all(&share).unwrap();
    for e in std::fs::read_dir("/usr/share/mysql").unwrap() {
        let e = e.unwrap();
        if e.file_name() != "mysql-test" {
            symlink(e.path(), share.join(e.file_name())).unwrap();
        }
    }
    let tree = share.join("mysql-test");
    std::fs::create_dir_all(tree.join("suite")).unwrap();
    for e in std::fs::read_dir(INSTALLED).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "suite" {
            symlink(e.path(), tree.join(e.file_name())).unwrap();
        }
    }
    for e in std::fs::read_dir(Path::new(INSTALLED).join("suite")).unwrap() {
        let e = e.unwrap();
        symlink(e.path(), tree.join("suite").join(e.file_name())).unwrap();
    }
    tree
}
