//! `txfuzz run`.

use super::{parse_list, EngineArgs, UsageError};
use crate::campaign::{run_campaign_jobs, CampaignConfig, Limit, Shard};
use crate::exec::ExecOptions;
use crate::model::{Isolation, LevelChoice};
use crate::oracle::OracleKind;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Campaign seed (default: derived from the clock; printed in the summary).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Number of cases to run (default 100 unless --time is given).
    #[arg(long, conflicts_with = "time")]
    pub tests: Option<u64>,
    /// Run for a duration: 90s, 10m, 1h.
    #[arg(long)]
    pub time: Option<String>,
    /// Comma list: read-uncommitted, read-committed, repeatable-read,
    /// serializable, mixed (each transaction draws its own level from the
    /// others named, or from all the engine supports) (default: all the
    /// engine supports, one per case).
    #[arg(long)]
    pub isolation: Option<String>,
    /// NAME=V1,V2 (repeatable): each session sets NAME to one of the values,
    /// drawn per session (`SET SESSION`), e.g.
    /// `--setting innodb_snapshot_isolation=ON,OFF` on MariaDB; only
    /// settings the engine's profile models.
    #[arg(long = "setting", value_name = "NAME=V1,V2")]
    pub settings: Vec<String>,
    /// Comma list of oracles (default: all that apply): wss, graph, sdg, view,
    /// crash.
    #[arg(long)]
    pub oracle: Option<String>,
    /// Case generator: random, pattern (APTrans anomaly patterns) or mixed
    /// (alternating).
    #[arg(long, default_value = "random")]
    pub generator: String,
    /// With --generator pattern|mixed: a built-in pattern name (or comma list)
    /// or a file of `name: pattern` lines (default: every built-in).
    #[arg(long)]
    pub pattern: Option<String>,
    /// Output directory for findings and summary.json.
    #[arg(long, default_value_os_t = super::default_out())]
    pub out: PathBuf,
    /// Seconds a statement may run without finishing or waiting on a lock.
    #[arg(long, default_value_t = 10)]
    pub hang_timeout: u64,
    /// After the server went away: how long to wait for it to come back.
    #[arg(long, default_value = "60s")]
    pub recover_wait: String,
    /// After the campaign, reduce each distinct finding's smallest example
    /// (writes `*-reduced.json` / `*-reduced.sql` next to it).
    #[arg(long)]
    pub reduce: bool,
    /// Share of cases (0 to 1) that also run without any instrumentation (no
    /// hidden columns, RETURNING or extra reads) to check that txfuzz does not
    /// change what the engine does: differences are `fidelity` findings.
    #[arg(long, default_value_t = crate::campaign::DEFAULT_SHADOW)]
    pub shadow: f64,
    /// Workers running cases at once, each with its own sessions and its own
    /// database (default: the number of cores; twice that, at most 8,
    /// against a server). The cases of a seed and count do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only shard I of N: the case indexes i with i % N == I (e.g. 0/4);
    /// `txfuzz merge` joins the shards' output directories.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// Let the system move workers between cores (default: each worker and
    /// its session threads stay on one core, which makes hand-offs between
    /// them cheaper).
    #[arg(long)]
    pub no_pin: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub known: super::KnownArgs,
    /// Stop once each of these known issues was found (a comma list of ids,
    /// or `all`: every entry for this engine and version whose settings the
    /// engine has or --setting draws); --time or --tests still bounds the
    /// run. summary.json keeps when each was first found (`known_first`).
    #[arg(long, value_name = "all|ID,ID")]
    pub until_known: Option<crate::campaign::UntilKnown>,
}

/// The most workers `--jobs` takes (each holds a few connections).
const MAX_JOBS: usize = 256;

/// The most workers a server campaign runs without `--jobs`: each holds up
/// to about ten connections (admin, monitor, the sessions of a case, kept
/// for the next), and PostgreSQL's default `max_connections` is 100.
const MAX_DEFAULT_SERVER_JOBS: usize = 8;

fn limit(args: &RunArgs) -> Result<Limit, UsageError> {
    match (&args.tests, &args.time) {
        (Some(n), _) => Ok(Limit::Tests(*n)),
        (None, Some(t)) => super::parse_duration("--time", t, super::YEAR).map(Limit::Time),
        (None, None) => Ok(Limit::Tests(100)),
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode, UsageError> {
    let generation = crate::gen::pattern::Generation::from_args(
        args.generator.parse().map_err(UsageError)?,
        args.pattern.as_deref(),
    )
    .map_err(UsageError)?;
    let cfg = config(&args)?;
    // Another campaign writing to --out is said before any server is
    // touched (opening an engine connects and may change a global setting);
    // the campaign takes the lock for good when it starts (`FindingStore`).
    if let Err(e) = crate::finding::lock_dir(&args.out) {
        if e.kind() == std::io::ErrorKind::ResourceBusy {
            return Err(UsageError(e.to_string()));
        }
    }
    let mut engines = (0..jobs(&args)?)
        .map(|job| args.engine.open_for_job(None, job))
        .collect::<Result<Vec<_>, _>>()?;
    // Ctrl-C (or SIGTERM) stops after the current case, with a summary and
    // the engine's database dropped; a second one exits at once.
    crate::interrupt::install()
        .map_err(|e| UsageError(format!("cannot install signal handlers: {e}")))?;
    let workers: Vec<&mut dyn crate::engine::Engine> =
        engines.iter_mut().map(|e| &mut **e as _).collect();
    let summary = run_campaign_jobs(workers, &cfg, &generation)?;
    print!("{}", summary.render());
    let interrupted = crate::interrupt::requested();
    if args.reduce && interrupted.is_none() {
        super::reduce::after_campaign(engines[0].as_mut(), &summary, &cfg.exec, &cfg.known)?;
    }
    println!("summary: {}", args.out.join("summary.json").display());
    drop(engines); // drops the engines' databases/schemas before exiting
    if let Some(sig) = interrupted {
        return Ok(ExitCode::from(crate::interrupt::exit_code(sig)));
    }
    Ok(
        if args.known.fails(
            summary.violations + summary.fidelity + summary.query_bugs,
            summary.known_violations,
        ) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// The campaign the flags describe, checked before any engine is opened.
fn config(args: &RunArgs) -> Result<CampaignConfig, UsageError> {
    let choices = args
        .isolation
        .as_deref()
        .map(parse_list::<LevelChoice>)
        .transpose()
        .map_err(|e| UsageError(format!("--isolation {e}")))?;
    let mixed = choices.iter().flatten().any(|c| *c == LevelChoice::Mixed);
    let isolations = choices
        .map(|list| {
            list.into_iter()
                .filter_map(|c| match c {
                    LevelChoice::Level(l) => Some(l),
                    LevelChoice::Mixed => None,
                })
                .collect::<Vec<Isolation>>()
        })
        .filter(|levels| !levels.is_empty());
    let oracles = match args.oracle.as_deref() {
        Some(list) => {
            parse_list::<OracleKind>(list).map_err(|e| UsageError(format!("--oracle {e}")))?
        }
        None => OracleKind::defaults(),
    };
    if oracles.is_empty() {
        return Err(UsageError("--oracle names no oracle".into()));
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    });
    if !(1..=super::DAY.as_secs()).contains(&args.hang_timeout) {
        return Err(UsageError(format!(
            "invalid --hang-timeout {}: seconds from 1 to {} (one day)",
            args.hang_timeout,
            super::DAY.as_secs()
        )));
    }
    if !(0.0..=1.0).contains(&args.shadow) {
        return Err(UsageError(format!(
            "invalid --shadow {}: a share of cases from 0 to 1",
            args.shadow
        )));
    }
    let settings = args
        .settings
        .iter()
        .map(|s| s.parse::<crate::gen::SettingChoice>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| UsageError(format!("--setting {e}")))?;
    Ok(CampaignConfig {
        seed,
        settings,
        until_known: args.until_known.clone(),
        limit: limit(args)?,
        isolations,
        mixed,
        oracles,
        out: args.out.clone(),
        exec: ExecOptions {
            hang_timeout: std::time::Duration::from_secs(args.hang_timeout),
            ..ExecOptions::default()
        },
        progress: !args.quiet,
        recover_wait: super::parse_duration("--recover-wait", &args.recover_wait, super::WEEK)?,
        known: args.known.load()?,
        shadow: args.shadow,
        shard: args.shard.unwrap_or(Shard::WHOLE),
        pin: !args.no_pin,
    })
}

/// `--jobs`, or the number of cores (twice that, at most
/// [`MAX_DEFAULT_SERVER_JOBS`], against a server: a server
/// campaign's worker spends most of a case waiting for round trips, so one
/// worker per core leaves the cores idle; BENCHMARKS.md, "Server throughput:
/// connections and deadlock checks").
fn jobs(args: &RunArgs) -> Result<usize, UsageError> {
    match args.jobs {
        Some(0) => Err(UsageError("invalid --jobs 0: at least one worker".into())),
        Some(n) if n > MAX_JOBS => Err(UsageError(format!(
            "invalid --jobs {n}: at most {MAX_JOBS}"
        ))),
        Some(n) => Ok(n),
        None => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let server = matches!(
                crate::engine::url::parse(args.engine.db.as_deref()),
                Ok(crate::engine::url::DbUrl::Server { .. })
            );
            Ok(if server {
                (2 * cores).min(MAX_DEFAULT_SERVER_JOBS)
            } else {
                cores
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn run_args(argv: &[&str]) -> RunArgs {
        let cli = super::super::Cli::try_parse_from(["txfuzz", "run"].iter().chain(argv))
            .expect("arguments parse");
        match cli.command {
            super::super::Command::Run(a) => a,
            other => panic!("not a run: {other:?}"),
        }
    }

    #[test]
    fn a_server_campaign_runs_two_workers_per_core_by_default() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(jobs(&run_args(&[])).unwrap(), cores);
        assert_eq!(
            jobs(&run_args(&["--db", "sqlite:/tmp/x.db"])).unwrap(),
            cores
        );
        let mysql = run_args(&["--db", "mysql://root@127.0.0.1:3306/test"]);
        let server = (2 * cores).min(MAX_DEFAULT_SERVER_JOBS);
        assert_eq!(jobs(&mysql).unwrap(), server);
        let pg = run_args(&["--db", "postgres://postgres@127.0.0.1:5432/test"]);
        assert_eq!(jobs(&pg).unwrap(), server);
        let explicit = run_args(&["--db", "mysql://root@127.0.0.1:3306/test", "--jobs", "3"]);
        assert_eq!(jobs(&explicit).unwrap(), 3);
    }
}
