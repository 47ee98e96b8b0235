//! `txfuzz report DIR`: writes `DIR/report.html`.

use super::UsageError;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A campaign output directory (summary.json, findings/).
    pub dir: PathBuf,
}

pub fn report(args: ReportArgs) -> Result<ExitCode, UsageError> {
    let path = crate::report::write_report(&args.dir).map_err(UsageError)?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The merged output directory (new, or without findings).
    #[arg(long)]
    pub out: PathBuf,
    /// The campaigns' output directories (e.g. one per `--shard I/N`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

/// `txfuzz merge --out OUT DIR...`: one summary, one findings directory and
/// one report from several shards of a campaign.
pub fn merge(args: MergeArgs) -> Result<ExitCode, UsageError> {
    let merged = crate::campaign::merge::merge(&args.out, &args.dirs).map_err(UsageError)?;
    print!("{}", merged.summary.render());
    let shards: Vec<String> = merged.shards.iter().map(|s| s.to_string()).collect();
    println!("merged shard(s) {}", shards.join(", "));
    if !merged.missing.is_empty() {
        let missing: Vec<String> = merged.missing.iter().map(|s| s.to_string()).collect();
        println!(
            "warning: shard(s) {} are missing: the summary covers part of the campaign",
            missing.join(", ")
        );
    }
    let path = crate::report::write_report(&args.out).map_err(UsageError)?;
    println!("wrote {}", path.display());
    let s = &merged.summary;
    Ok(if s.violations + s.fidelity + s.query_bugs > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
