//! `txfuzz stress`: free-running concurrent sessions for a duration, one long
//! history checked by the oracles that need no re-execution.

use super::{parse_list, EngineArgs, UsageError};
use crate::campaign::resolve_isolations;
use crate::engine::Engine;
use crate::exec::ExecOptions;
use crate::finding::known::KnownIssues;
use crate::finding::{render_script, write_atomic, FindingRecord, FindingStore};
use crate::gen::{generate_workload, GenConfig};
use crate::model::{History, Isolation, TestCase, TxnEnd};
use crate::oracle::{self, CheckStats, OracleKind};
use crate::stress::{run_stress, StressConfig};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct StressArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long the sessions run: 90s, 10m, 1h.
    #[arg(long, default_value = "30s")]
    pub time: String,
    /// Concurrent sessions.
    #[arg(long, default_value_t = 4)]
    pub sessions: usize,
    /// One isolation level (default: the strongest the engine supports).
    #[arg(long)]
    pub isolation: Option<String>,
    /// Oracles that check a history without re-executing it (default: all of them).
    #[arg(long)]
    pub oracle: Option<String>,
    #[arg(long, default_value_os_t = super::default_out())]
    pub out: PathBuf,
    #[command(flatten)]
    pub known: super::KnownArgs,
}

pub fn stress(args: StressArgs) -> Result<ExitCode, UsageError> {
    let duration = super::parse_duration("--time", &args.time, super::YEAR)?;
    let oracles = stress_oracles(args.oracle.as_deref())?;
    let mut engine = args.engine.open(None)?;
    let level = stress_level(engine.as_ref(), args.isolation.as_deref())?;
    let gen = GenConfig {
        isolations: vec![level],
        features: engine.profile().features,
        ..GenConfig::default()
    };
    // Enough transactions for the duration at a generous rate (the run ends
    // early if the workload runs out).
    let txns = (duration.as_secs_f64() * 5000.0).clamp(200.0, 2_000_000.0) as usize;
    let workload = generate_workload(args.seed, &gen, txns);
    let cfg = StressConfig {
        sessions: args.sessions.max(1),
        duration,
    };
    let (case, history) = run_stress(engine.as_mut(), &workload, &cfg)?;
    std::fs::create_dir_all(&args.out)?;
    let record = serde_json::json!({ "engine": engine.info(), "case": &case, "history": &history });
    write_atomic(
        &args.out.join("stress-history.json"),
        &serde_json::to_vec(&record)?,
    )?;
    let mut store = FindingStore::create(&args.out)?;
    let known = args.known.load()?;
    let (violations, known_violations) = check_history(
        &oracles,
        engine.as_mut(),
        &case,
        &history,
        &mut store,
        &known,
    )?;
    let ended = |how| history.txns.iter().filter(|t| t.end == Some(how)).count();
    println!(
        "stress on {} {} at {level}: {} sessions, {:?}, {} transactions ({} committed, {} rolled back, {} aborted, {} autocommit sessions), {} statements; {} violation(s), {} known",
        engine.info().name,
        engine.info().version,
        cfg.sessions,
        duration,
        case.txns.len(),
        ended(TxnEnd::Committed),
        ended(TxnEnd::RolledBack),
        ended(TxnEnd::Aborted),
        case.txns.iter().filter(|t| t.autocommit).count(),
        history.outcomes.len(),
        violations,
        known_violations
    );
    println!(
        "history: {}",
        args.out.join("stress-history.json").display()
    );
    Ok(if args.known.fails(violations, known_violations) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The oracles to run on the history (`--oracle`, default: every default
/// oracle that does not re-execute cases); an error for one that does.
fn stress_oracles(list: Option<&str>) -> Result<Vec<OracleKind>, UsageError> {
    let oracles: Vec<OracleKind> = match list {
        Some(list) => parse_list(list)?,
        None => OracleKind::defaults()
            .into_iter()
            .filter(|o| !o.replays())
            .collect(),
    };
    if let Some(o) = oracles.iter().find(|o| o.replays()) {
        return Err(UsageError(format!(
            "oracle {o} re-executes cases and cannot check a free-running history"
        )));
    }
    Ok(oracles)
}

/// The level the workload runs at: the highest of the requested (or
/// supported) levels, SERIALIZABLE if none.
fn stress_level(engine: &dyn Engine, isolation: Option<&str>) -> Result<Isolation, UsageError> {
    let requested = isolation.map(str::parse::<Isolation>).transpose()?;
    let levels = resolve_isolations(engine, requested.as_ref().map(std::slice::from_ref))
        .map_err(UsageError)?;
    Ok(levels.into_iter().max().unwrap_or(Isolation::Serializable))
}

/// Runs each oracle on the history, prints and stores its findings (marked
/// with the known issues): the new and the known violations.
fn check_history(
    oracles: &[OracleKind],
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    store: &mut FindingStore,
    known: &KnownIssues,
) -> Result<(u64, u64), UsageError> {
    let mut stats = CheckStats::default();
    let (mut violations, mut known_violations) = (0, 0);
    for o in oracles {
        let mut found = oracle::check(
            *o,
            engine,
            case,
            history,
            &ExecOptions::default(),
            &mut stats,
        )?;
        known.mark(&mut found, case, history, engine.info());
        for f in found {
            violations += u64::from(f.is_new_violation());
            known_violations += u64::from(f.is_known_violation());
            let tag = f.known.as_ref().map(|k| format!(" (known: {})", k.id));
            println!(
                "  [{}:{}] {:?}{}: {}",
                f.oracle,
                f.kind,
                f.verdict,
                tag.unwrap_or_default(),
                f.summary
            );
            let rec = FindingRecord::new(f, engine.info().clone(), case.clone(), history.clone());
            let script = render_script(
                engine.dialect(),
                case,
                Some(history),
                "txfuzz stress finding",
            );
            store.write(rec, &script)?;
        }
    }
    Ok((violations, known_violations))
}
