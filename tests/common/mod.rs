//! Helpers shared by the integration tests: each test file that needs them
//! includes this module (`mod common;`) and uses part of it.
//!
//! A test that needs something plain `cargo test` cannot count on — the suite's
//! MariaDB or PostgreSQL server (`TXFUZZ_MYSQL_URL`, `TXFUZZ_PG_URL`, which
//! `eval "$(scripts/provision.sh)"` exports), headless Chromium, or private
//! server instances ([`private`]) — asks for it first:
//!
//! ```ignore
//! let Some(url) = common::mysql_url() else { return };
//! ```
//!
//! When it is missing the test prints one line on stderr,
//! `SKIPPED <file>::<test>: <what is missing>`, and passes. Under
//! `TXFUZZ_REQUIRE_SERVERS=1` (scripts/test.sh exports it) it panics with the
//! same message instead: there a skip is a failure.
//!
//! - [`hermitage`]: the Hermitage check of `tests/hermitage.rs` and
//!   `tests/hermitage_si.rs`.
//! - [`private`]: private MariaDB and PostgreSQL instances that tests start,
//!   kill and restart themselves.

// Each test crate uses part of this module.
#![allow(dead_code)]

pub mod hermitage;
pub mod isolation;
pub mod mtr;
pub mod private;

use std::io::Write;
use std::path::PathBuf;
use txfuzz::engine::mysql::MysqlEngine;
use txfuzz::engine::postgres::PgEngine;
use txfuzz::engine::Engine;

/// Where the missing servers come from.
const PROVISION: &str =
    "run scripts/test.sh, or eval \"$(scripts/provision.sh)\", to provision the servers";

/// The suite's MariaDB server (`TXFUZZ_MYSQL_URL`), or `None` after a
/// SKIPPED line.
#[track_caller]
/// Runs `case` on `e` with the default oracles: the history, the findings
/// and `view`'s counts.
pub fn run_defaults(
    e: &mut dyn Engine,
    case: &txfuzz::model::TestCase,
) -> (
    txfuzz::model::History,
    Vec<txfuzz::oracle::Finding>,
    txfuzz::oracle::OracleCounts,
) {
    let mut stats = txfuzz::oracle::CheckStats::default();
    let (h, f) = txfuzz::campaign::run_case(
        e,
        case,
        &txfuzz::oracle::OracleKind::defaults(),
        &txfuzz::exec::ExecOptions::default(),
        &mut stats,
    )
    .unwrap();
    (h, f, stats.oracle("view").clone())
}

pub fn mysql_url() -> Option<String> {
    server_url("TXFUZZ_MYSQL_URL")
}

/// The suite's PostgreSQL server (`TXFUZZ_PG_URL`), or `None` after a
/// SKIPPED line.
#[track_caller]
pub fn pg_url() -> Option<String> {
    server_url("TXFUZZ_PG_URL")
}

/// A current server's URL (`TXFUZZ_MARIADB118_URL`, `TXFUZZ_MYSQL97_URL`,
/// `TXFUZZ_PG18_URL`), or `None` after a SKIPPED line.
#[track_caller]
pub fn current_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => skip(&format!(
            "{var} is not set (eval \"$(scripts/provision-current.sh)\" provisions it)"
        )),
    }
}

#[track_caller]
fn server_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => skip(&format!("{var} is not set ({PROVISION})")),
    }
}

/// Headless Chromium (`chromium` on PATH), or `None` after a SKIPPED line.
#[track_caller]
pub fn chromium() -> Option<PathBuf> {
    match find_tool("chromium") {
        Some(path) => Some(path),
        None => skip(
            "chromium is not on PATH, so the HTML report is not rendered \
             (run scripts/install-chromium.sh; scripts/test.sh does)",
        ),
    }
}

/// The current test cannot run here because of `reason`: prints
/// `SKIPPED <file>::<test>: <reason>` and returns `None`, or panics with that
/// message under `TXFUZZ_REQUIRE_SERVERS=1` (at the test's line that asked).
#[track_caller]
pub fn skip<T>(reason: &str) -> Option<T> {
    let test = test_name();
    if std::env::var("TXFUZZ_REQUIRE_SERVERS").is_ok_and(|v| !v.is_empty() && v != "0") {
        panic!("{test}: {reason} [TXFUZZ_REQUIRE_SERVERS is set: this skip is a failure]");
    }
    // Straight to stderr, past the harness's capture of `eprintln!`, so that
    // plain `cargo test` shows the line too; in one write, so that it is not
    // torn by the harness's own output.
    let _ = std::io::stderr().write_all(format!("SKIPPED {test}: {reason}\n").as_bytes());
    None
}

/// `<test file>::<test>`: the harness names each test's thread after the test.
pub fn test_name() -> String {
    let file = env!("CARGO_CRATE_NAME");
    match std::thread::current().name() {
        Some(test) if test != "main" => format!("{file}::{test}"),
        _ => format!("{file}::?"),
    }
}

/// An executable `name` on PATH, or in an sbin directory (not on a normal
/// user's PATH; `mariadbd` lives in /usr/sbin).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// An engine on `url` (in a private database or schema of its own).
pub fn open(url: &str) -> Box<dyn Engine> {
    txfuzz::engine::open(Some(url)).unwrap_or_else(|e| panic!("{e}"))
}

/// A MariaDB engine on `url` (in a private database of its own).
pub fn mariadb(url: &str) -> MysqlEngine {
    MysqlEngine::connect(url).unwrap_or_else(|e| panic!("{e}"))
}

/// A PostgreSQL engine on `url` (in a private schema of its own).
pub fn postgres(url: &str) -> PgEngine {
    PgEngine::connect(url).unwrap_or_else(|e| panic!("{e}"))
}

/// A SQLite campaign of 30 cases (seed 4) with the `lose-write` fault
/// injected, writing to `out`: it has findings (exit 1).
pub fn faulty_run(out: &std::path::Path) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args([
            "run",
            "--fault",
            "lose-write",
            "--tests",
            "30",
            "--seed",
            "4",
            "-q",
            "--out",
        ])
        .arg(out)
        .output()
        .expect("run txfuzz");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Generated cases of `seed` (indexes `0..count`) run on `e`, with their
/// histories, where one expected output exists for the plain statements:
/// no two statements waited at once (the engine chooses which it serves
/// first) and the shadow run without instrumentation agrees.
pub fn plain_schedules(
    e: &mut dyn Engine,
    seed: u64,
    count: u64,
) -> Vec<(u64, txfuzz::model::TestCase, txfuzz::model::History)> {
    use txfuzz::oracle::{fidelity, CheckStats, OracleKind};
    let gen = txfuzz::gen::GenConfig {
        isolations: e.profile().isolations.clone(),
        features: e.profile().features,
        ..txfuzz::gen::GenConfig::default()
    };
    let mut out = Vec::new();
    for index in 0..count {
        let case = txfuzz::gen::generate_case(seed, index, &gen);
        let mut stats = CheckStats::default();
        let (h, shadow) = txfuzz::campaign::run_case(
            e,
            &case,
            &[OracleKind::Fidelity],
            &txfuzz::exec::ExecOptions::default(),
            &mut stats,
        )
        .unwrap();
        if fidelity::race(&h).is_none() && shadow.is_empty() {
            out.push((index, case, h));
        }
    }
    out
}

/// The lines of `a` that `b` lacks (as a multiset).
pub fn lines_only_in(a: &str, b: &str) -> Vec<String> {
    let mut rest: Vec<&str> = b.lines().collect();
    a.lines()
        .filter(|l| match rest.iter().position(|r| r == l) {
            Some(i) => {
                rest.remove(i);
                false
            }
            None => true,
        })
        .map(String::from)
        .collect()
}

/// `python3` (its `sqlite3` module runs exported SQLite scripts), or `None`
/// after a SKIPPED line.
#[track_caller]
pub fn python3() -> Option<PathBuf> {
    match find_tool("python3") {
        Some(p) => Some(p),
        None => skip("python3 is not on PATH (scripts/install-pyturso.sh installs it)"),
    }
}

/// The Python interpreter with turso's module (`TXFUZZ_PYTURSO`, which
/// `eval "$(scripts/install-pyturso.sh)"` exports), or `None` after a
/// SKIPPED line.
#[track_caller]
pub fn pyturso() -> Option<PathBuf> {
    match std::env::var("TXFUZZ_PYTURSO") {
        Ok(p) if !p.trim().is_empty() => Some(PathBuf::from(p)),
        _ => skip("TXFUZZ_PYTURSO is not set (eval \"$(scripts/install-pyturso.sh)\")"),
    }
}

/// The first finding of `kind` in generated cases of `seed` run on `e`
/// (up to `count` cases, every default oracle), as a finding record that
/// `txfuzz export` writes in `format`.
pub fn exportable_finding(
    e: &mut dyn Engine,
    seed: u64,
    count: u64,
    kind: &str,
    format: txfuzz::export::Format,
) -> txfuzz::finding::FindingRecord {
    let gen = txfuzz::gen::GenConfig {
        isolations: e.profile().isolations.clone(),
        features: e.profile().features,
        ..txfuzz::gen::GenConfig::default()
    };
    for index in 0..count {
        let case = txfuzz::gen::generate_case(seed, index, &gen);
        let mut stats = txfuzz::oracle::CheckStats::default();
        let (h, findings) = txfuzz::campaign::run_case(
            e,
            &case,
            &txfuzz::oracle::OracleKind::defaults(),
            &txfuzz::exec::ExecOptions::default(),
            &mut stats,
        )
        .unwrap();
        for f in findings.into_iter().filter(|f| f.kind == kind) {
            let rec =
                txfuzz::finding::FindingRecord::new(f, e.info().clone(), case.clone(), h.clone());
            if txfuzz::export::export(&rec, format, "probe").is_ok() {
                return rec;
            }
        }
    }
    panic!("no exportable {kind} finding in {count} cases of seed {seed}");
}

/// Asserts that at most a fifth of `total` exported tests failed, showing
/// each failure (`shown`) on stderr either way: the engine's own timing can
/// change a plain schedule's outcome (exported tests of generated cases; 1
/// of about 27 on MariaDB here), while a wrong format fails nearly all.
#[track_caller]
pub fn assert_mostly_pass(shown: &[String], total: usize, log: &str) {
    eprintln!("{}", shown.join("\n"));
    assert!(
        shown.len() * 5 <= total,
        "{} of {total} failed:\n{}\n{log}",
        shown.len(),
        shown.join("\n")
    );
}

/// The case of a file kept in `tests/fixtures/replays/` (a finding, a
/// reduced finding or a bare case).
pub fn replay_case(name: &str) -> txfuzz::model::TestCase {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/replays")
        .join(name);
    txfuzz::finding::load_case_file(&path)
        .unwrap_or_else(|e| panic!("{e}"))
        .case()
        .clone()
}

/// Waits until the engine has reported `signal`'s session waiting for a
/// lock; panics with `what` after 5 s.
#[track_caller]
pub fn wait_for_tick(signal: &txfuzz::engine::WaitSignal, what: &str) {
    let start = std::time::Instant::now();
    while signal.ticks() == 0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
