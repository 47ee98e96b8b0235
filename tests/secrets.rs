//! Passwords given in a URL or through PGPASSWORD / MYSQL_PWD never appear in
//! output, logs, findings or summaries.

use std::path::Path;
use std::process::Command;

fn pg_url() -> String {
    std::env::var("TXFUZZ_PG_URL")
        .expect("TXFUZZ_PG_URL is not set: scripts/test.sh provisions PostgreSQL and exports it")
}

/// Every file below `dir`, read as text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    out
}

#[test]
fn url_password_never_leaks() {
    let url = pg_url();
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, p)| p.to_string())
        .expect("the provisioned PostgreSQL URL carries a password");
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args([
            "run",
            "--fault",
            "lose-write",
            "--tests",
            "40",
            "--seed",
            "2",
            "--quiet",
        ])
        .args(["--db", &url, "--out"])
        .arg(out.path())
        .env("TXFUZZ_LOG", "debug")
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let files = all_text(out.path());
    assert!(files.contains("***"), "the redacted URL is recorded");
    for (what, text) in [
        ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(&o.stderr).into_owned()),
        ("output files", files),
    ] {
        assert!(!text.contains(&password), "password leaked into {what}");
    }
}

#[test]
fn failed_connections_do_not_print_passwords() {
    for (env, url) in [
        (None, "postgres://postgres:Sekrit-Wombat-3@127.0.0.1:1/x"),
        (None, "mysql://root:Sekrit-Wombat-3@127.0.0.1:1/x"),
        (
            Some(("PGPASSWORD", "Sekrit-Wombat-3")),
            "postgres://postgres@127.0.0.1:1/x",
        ),
        (
            Some(("MYSQL_PWD", "Sekrit-Wombat-3")),
            "mysql://root@127.0.0.1:1/x",
        ),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_txfuzz"));
        cmd.args(["run", "--tests", "1", "--db", url])
            .env("TXFUZZ_LOG", "debug");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!text.contains("Sekrit-Wombat-3"), "{url}: {text}");
        assert!(text.contains("127.0.0.1:1"), "{url}: {text}");
    }
}
