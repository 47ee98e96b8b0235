//! The `txfuzz` command line (docs/design.md §6). Exit codes: 0 no violation,
//! 1 violations found (or reproduced), 2 usage or connection errors.

mod bench;
pub mod check;
mod export;
mod reduce;
mod replay;
mod report;
mod run;
mod stress;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "txfuzz",
    version,
    about = "Finds transaction bugs in SQL database engines"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a campaign: generate cases, execute them, check them with the oracles.
    Run(run::RunArgs),
    /// Re-execute a stored finding (or case) and re-check it.
    Replay(replay::ReplayArgs),
    /// Shrink a finding's case while it keeps its signature.
    Reduce(reduce::ReduceArgs),
    /// Write a finding as the engine's own regression test (mysql-test-run,
    /// isolationtester, a Python program).
    Export(export::ExportArgs),
    /// Write DIR/report.html for a campaign output directory.
    Report(report::ReportArgs),
    /// Join the output directories of a campaign's shards into one (summary.json,
    /// findings, report.html).
    Merge(report::MergeArgs),
    /// Measure lock-wait detection latency and reset time on an engine.
    Bench(bench::BenchArgs),
    /// Free-running concurrent sessions for a duration; check the one long history.
    Stress(stress::StressArgs),
    /// Check a recorded history offline with the dependency-graph checker.
    Check(check::CheckArgs),
    /// Time the dependency-graph checker on a synthetic history.
    BenchCheck(check::BenchCheckArgs),
}

/// Known engine bugs (`known-issues.toml` plus the user's files).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KnownArgs {
    /// A known-issues file (TOML, docs/known-issues.md) added to the shipped
    /// list; repeatable. Matching violations are reported as `known`.
    #[arg(long = "known", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Exit 1 on known violations too (default: only new violations fail).
    #[arg(long)]
    pub fail_on_known: bool,
}

impl KnownArgs {
    pub fn load(&self) -> Result<crate::finding::known::KnownIssues, UsageError> {
        crate::finding::known::KnownIssues::load(&self.files).map_err(UsageError)
    }
    /// Whether these counts make the command exit 1.
    pub fn fails(&self, violations: u64, known: u64) -> bool {
        violations > 0 || (self.fail_on_known && known > 0)
    }
}

/// An error that ends the command with exit code 2 and a one-line message.
#[derive(Debug)]
pub struct UsageError(pub String);

impl<E: std::fmt::Display> From<E> for UsageError {
    fn from(e: E) -> Self {
        UsageError(e.to_string())
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: the full text, exit 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, as for every other usage error.
            let text = e.to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ");
            eprintln!("txfuzz: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    init_tracing(matches!(&cli.command, Command::Run(a) if a.quiet));
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Replay(a) => replay::replay(a),
        Command::Reduce(a) => reduce::reduce_cmd(a),
        Command::Export(a) => export::export_cmd(a),
        Command::Report(a) => report::report(a),
        Command::Merge(a) => report::merge(a),
        Command::Bench(a) => bench::bench(a),
        Command::Stress(a) => stress::stress(a),
        Command::Check(a) => check::check(a),
        Command::BenchCheck(a) => check::bench_check(a),
    };
    match result {
        Ok(code) => code,
        Err(UsageError(msg)) => {
            eprintln!("txfuzz: {}", msg.lines().next().unwrap_or("error"));
            ExitCode::from(2)
        }
    }
}

/// Log lines go to stderr: warnings by default, errors only with `-q`
/// (`TXFUZZ_LOG` overrides both), in colour only on a terminal.
fn init_tracing(quiet: bool) {
    use std::io::IsTerminal;
    let default = if quiet { "error" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TXFUZZ_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

/// Options shared by commands that talk to an engine.
#[derive(clap::Args, Debug, Clone)]
pub struct EngineArgs {
    /// Database URL: sqlite:PATH (default: a temporary SQLite database),
    /// mysql://user@host:port/db, postgres://user@host:port/db.
    #[arg(long)]
    pub db: Option<String>,
    /// Self-test: wrap the engine in a fault injector (lose-write, stale-update,
    /// stale-read, dirty-read, missed-own-write, extra-lock, orphan,
    /// duplicate-key, null-value, check-violation, cursor-repeat).
    #[arg(long, hide = true)]
    pub fault: Option<String>,
}

impl EngineArgs {
    pub fn open(&self, fault: Option<&str>) -> Result<Box<dyn crate::engine::Engine>, UsageError> {
        self.open_for_job(fault, 0)
    }

    /// The engine of campaign worker `job` (see [`crate::engine::open_for_job`]).
    pub fn open_for_job(
        &self,
        fault: Option<&str>,
        job: usize,
    ) -> Result<Box<dyn crate::engine::Engine>, UsageError> {
        let engine = crate::engine::open_for_job(self.db.as_deref(), job)?;
        match fault.or(self.fault.as_deref()) {
            None => Ok(engine),
            Some(f) => {
                let fault: crate::engine::fault::Fault = f.parse()?;
                Ok(Box::new(crate::engine::fault::FaultyEngine::new(
                    engine, fault,
                )))
            }
        }
    }
}

/// Parses a comma-separated list with `FromStr`; an empty list or entry is
/// an error (`--isolation ,` must not mean "no level").
pub fn parse_list<T: std::str::FromStr<Err = String>>(s: &str) -> Result<Vec<T>, String> {
    if s.split(',').any(|x| x.trim().is_empty()) {
        return Err(format!(
            "'{s}' has an empty entry (expected a comma list of names)"
        ));
    }
    s.split(',').map(|x| x.trim().parse()).collect()
}

/// A duration flag (`90s`, `10m`, `1h`) no longer than `max`: larger values
/// would overflow the clock arithmetic and mean nothing for a campaign.
pub fn parse_duration(
    flag: &str,
    text: &str,
    max: std::time::Duration,
) -> Result<std::time::Duration, UsageError> {
    let d = humantime::parse_duration(text).map_err(|e| {
        UsageError(format!(
            "invalid {flag} '{text}': {e} (examples: 90s, 10m, 1h)"
        ))
    })?;
    if d > max {
        return Err(UsageError(format!(
            "invalid {flag} '{text}': at most {}",
            humantime::format_duration(max)
        )));
    }
    Ok(d)
}

/// One day, one week, one year: bounds of the duration flags.
pub const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);
pub const WEEK: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);
pub const YEAR: std::time::Duration = std::time::Duration::from_secs(366 * 86_400);

pub fn default_out() -> PathBuf {
    PathBuf::from("txfuzz-out")
}
