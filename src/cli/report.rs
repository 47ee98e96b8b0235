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
    let path = crate::report::write_report(&args.out).map_err(UsageError)?;
    println!("wrote {}", path.display());
    let s = &merged.summary;
    if let Some(inc) = &s.incomplete {
        // Exit 3 whatever the shards found: the campaign is not all here.
        eprintln!("txfuzz: incomplete merge: {}", inc.sentence());
        return Ok(ExitCode::from(3));
    }
    Ok(if s.violations + s.fidelity + s.query_bugs > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
