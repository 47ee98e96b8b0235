//! `txfuzz reduce CASE.json --out DIR`: shrink a finding's case while it keeps
//! its signature; writes `DIR/reduced.json` and `DIR/reduced.sql`.

use super::replay::open_for;
use super::{EngineArgs, UsageError};
use crate::finding::{load_case_file, CaseFile};
use crate::reduce::files::write_reduced;
use crate::reduce::{reduce, ReduceConfig, ReduceError};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReduceArgs {
    /// A finding JSON written by `txfuzz run` (or a reduced one).
    pub case: PathBuf,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Output directory for reduced.json and reduced.sql.
    #[arg(long, default_value = "txfuzz-reduced")]
    pub out: PathBuf,
    /// Most executions of candidate cases.
    #[arg(long, default_value_t = 400)]
    pub max_runs: u32,
    /// Executions per candidate before it counts as not reproducing.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Also keep the statement kinds and clauses of the signature (default:
    /// only oracle, kind, verdict, engine and level).
    #[arg(long)]
    pub keep_features: bool,
    /// Time budget: 90s, 10m.
    #[arg(long, default_value = "5m")]
    pub max_time: String,
    /// A known-issues file added to the shipped list (repeatable): a known
    /// violation must stay that known issue while it is reduced.
    #[arg(long = "known", value_name = "FILE")]
    pub known: Vec<PathBuf>,
}

pub fn reduce_cmd(args: ReduceArgs) -> Result<ExitCode, UsageError> {
    let mut file = load_case_file(&args.case).map_err(UsageError)?;
    let bare = || {
        UsageError(format!(
            "{} is a bare case: reduction needs a finding file (its signature is what is kept)",
            args.case.display()
        ))
    };
    if matches!(file, CaseFile::Case(_)) {
        return Err(bare());
    }
    // Before the (long) reduction: the output directory must be usable.
    std::fs::create_dir_all(&args.out).map_err(|e| {
        UsageError(format!(
            "cannot create the output directory {}: {e}",
            args.out.display()
        ))
    })?;
    let mut engine = open_for(&args.engine, &mut file)?;
    let CaseFile::Finding(rec) = &file else {
        return Err(bare());
    };
    let cfg = ReduceConfig {
        max_runs: args.max_runs.max(1),
        repeats: args.repeats.max(1),
        keep_features: args.keep_features,
        max_time: super::parse_duration("--max-time", &args.max_time, super::WEEK)?,
        known: crate::finding::known::KnownIssues::load(&args.known).map_err(UsageError)?,
        ..ReduceConfig::default()
    };
    let r = match reduce(engine.as_mut(), rec, &cfg) {
        Ok(r) => r,
        Err(ReduceError::Usage(e)) => return Err(UsageError(e)),
        Err(ReduceError::Engine(e)) => return Err(UsageError(e.to_string())),
    };
    let json = args.out.join("reduced.json");
    write_reduced(engine.as_ref(), &r, &json)?;
    println!("signature: {}", r.signature.key());
    println!(
        "before: {} transaction(s), {} data statement(s)\nafter:  {} transaction(s), {} data statement(s)",
        r.txns_before, r.stmts_before, r.txns_after, r.stmts_after
    );
    println!(
        "{} run(s), {} candidate(s) kept{}",
        r.runs,
        r.accepted,
        if r.exhausted {
            " (budget exhausted)"
        } else {
            ""
        }
    );
    if let Some(shadow) = r.record.finding.evidence.get("shadow") {
        println!("shadow run without instrumentation: {shadow}");
    }
    println!(
        "wrote {} and {}",
        json.display(),
        json.with_extension("sql").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `txfuzz run --reduce`: reduce each distinct signature's smallest example.
pub(super) fn after_campaign(
    engine: &mut dyn crate::engine::Engine,
    summary: &crate::campaign::Summary,
    exec: &crate::exec::ExecOptions,
    known: &crate::finding::known::KnownIssues,
) -> Result<(), UsageError> {
    let cfg = ReduceConfig {
        exec: exec.clone(),
        known: known.clone(),
        ..ReduceConfig::default()
    };
    for line in crate::reduce::files::reduce_distinct(engine, &summary.distinct, &cfg)? {
        println!("reduced {line}");
    }
    Ok(())
}
