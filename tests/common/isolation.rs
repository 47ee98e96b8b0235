//! PostgreSQL's isolation test runner, `pg_isolation_regress` (with
//! `isolationtester`, from Debian's `postgresql-client-15`), on exported
//! specs, against the suite's server (`TXFUZZ_PG_URL`) in a database of
//! its own that the runner creates and the run drops.

use std::path::PathBuf;
use std::process::Command;

/// A spec to run: its name, the `.spec` and the expected `.out`.
pub struct IsoTest {
    pub name: String,
    pub spec: String,
    pub expected: String,
}

/// What pg_isolation_regress said.
pub struct IsoRun {
    pub passed: Vec<String>,
    pub failed: Vec<String>,
    /// Its output and the diffs of failing tests.
    pub log: String,
    /// Each failing test's output.
    pub results: std::collections::BTreeMap<String, String>,
}

/// pg_isolation_regress, or `None` after a SKIPPED line (a failure under
/// `TXFUZZ_REQUIRE_SERVERS`).
#[track_caller]
pub fn runner() -> Option<PathBuf> {
    let found = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|d| {
        d.flatten()
            .map(|e| {
                e.path()
                    .join("lib/pgxs/src/test/isolation/pg_isolation_regress")
            })
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => Some(p),
        None => super::skip(
            "pg_isolation_regress is not installed (Debian package postgresql-client-15; \
             scripts/provision.sh installs it)",
        ),
    }
}

/// Runs `tests` with `runner` against the server of `url`.
pub fn run(runner: &PathBuf, url: &str, tests: &[IsoTest]) -> IsoRun {
    let cfg: tokio_postgres::Config = url.parse().expect("a PostgreSQL URL");
    let host = match cfg.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let user = cfg.get_user().unwrap_or("postgres").to_string();
    let password = cfg
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("specs")).unwrap();
    std::fs::create_dir_all(dir.path().join("expected")).unwrap();
    for t in tests {
        std::fs::write(
            dir.path().join("specs").join(format!("{}.spec", t.name)),
            &t.spec,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("expected").join(format!("{}.out", t.name)),
            &t.expected,
        )
        .unwrap();
    }
    let out = dir.path().join("out");
    let db = format!(
        "txfuzz_iso_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            % 1_000_000_000
    );
    let o = Command::new(runner)
        .arg(format!("--host={host}"))
        .arg(format!("--port={port}"))
        .arg(format!("--user={user}"))
        .arg(format!("--dbname={db}"))
        .arg(format!("--inputdir={}", dir.path().display()))
        .arg(format!("--outputdir={}", out.display()))
        .args(tests.iter().map(|t| t.name.clone()))
        .env("PGPASSWORD", &password)
        .output()
        .expect("pg_isolation_regress runs");
    let _ = Command::new("psql")
        .args([
            "-h",
            &host,
            "-p",
            &port.to_string(),
            "-U",
            &user,
            "-d",
            "postgres",
            "-qc",
        ])
        .arg(format!("DROP DATABASE IF EXISTS {db}"))
        .env("PGPASSWORD", &password)
        .output();
    let log = format!(
        "{}{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_to_string(out.join("regression.diffs")).unwrap_or_default()
    );
    let mut run = IsoRun {
        passed: Vec::new(),
        failed: Vec::new(),
        log,
        results: Default::default(),
    };
    for t in tests {
        let line = run
            .log
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(t.name.as_str()))
            .unwrap_or("");
        if line.contains(" ok ") || line.trim_end().ends_with(" ok") {
            run.passed.push(t.name.clone());
        } else {
            run.failed.push(t.name.clone());
            if let Ok(text) =
                std::fs::read_to_string(out.join("results").join(format!("{}.out", t.name)))
            {
                run.results.insert(t.name.clone(), text);
            }
        }
    }
    run
}
