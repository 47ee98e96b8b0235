//! `txfuzz bench`: lock-wait detection latency and reset time on an engine.

use super::{parse_list, EngineArgs, UsageError};
use crate::bench::{blocked_latency, reset_time};
use crate::campaign::resolve_isolations;
use crate::gen::GenConfig;
use crate::model::Isolation;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Scripted lock-wait cases per isolation level.
    #[arg(long, default_value_t = 200)]
    pub rounds: usize,
    /// Isolation levels for the lock-wait benchmark (default: all supported).
    #[arg(long)]
    pub isolation: Option<String>,
}

pub fn bench(args: BenchArgs) -> Result<ExitCode, UsageError> {
    let mut engine = args.engine.open(None)?;
    let requested = args
        .isolation
        .as_deref()
        .map(parse_list::<Isolation>)
        .transpose()?;
    let levels = resolve_isolations(engine.as_ref(), requested.as_deref()).map_err(UsageError)?;
    let info = engine.info().clone();
    let mut report = serde_json::json!({ "engine": info.name, "version": info.version });
    for iso in levels {
        let (d, missed) = blocked_latency(engine.as_mut(), iso, args.rounds)?;
        println!(
            "{} {iso}: lock wait detected in median {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples, {missed} missed; timeout-based tools wait 2000 ms)",
            info.name,
            d.median_us / 1e3,
            d.p99_us / 1e3,
            d.max_us / 1e3,
            d.samples
        );
        report["blocked"][iso.name()] = serde_json::to_value(&d)?;
        report["missed"][iso.name()] = missed.into();
    }
    let gen = GenConfig {
        features: engine.profile().features,
        ..GenConfig::default()
    };
    let r = reset_time(engine.as_mut(), &gen, 20, args.rounds.div_ceil(20).max(5))?;
    println!(
        "{} reset: median {:.2} ms, p99 {:.2} ms ({} samples)",
        info.name,
        r.median_us / 1e3,
        r.p99_us / 1e3,
        r.samples
    );
    report["reset"] = serde_json::to_value(&r)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}
