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
