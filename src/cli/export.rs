//! `txfuzz export FINDING.json --format mtr|isolation|script --out DIR`: a finding
//! as the engine's own regression test (`crate::export`).

use super::UsageError;
use crate::export::{export, stem_of, Format};
use crate::finding::read_record;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// A finding JSON written by `txfuzz run` or `txfuzz reduce`.
    pub finding: PathBuf,
    /// The test format: `mtr` (MariaDB mysql-test-run `.test` + `.result`),
    /// `isolation` (PostgreSQL isolationtester `.spec` + expected `.out`),
    /// `script` (SQLite and turso: a Python program, `.py`).
    #[arg(long, value_enum)]
    pub format: Format,
    /// The test's name (letters, digits, `_`; default: `txfuzz_` and the
    /// finding file's name).
    #[arg(long)]
    pub name: Option<String>,
    /// The directory to write the files to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn export_cmd(args: ExportArgs) -> Result<ExitCode, UsageError> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| UsageError(format!("{}: {e}", args.out.display())))?;
    let rec = read_record(&args.finding).map_err(UsageError)?;
    let file_stem = args
        .finding
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("finding");
    let stem = match &args.name {
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            n.clone()
        }
        Some(n) => {
            return Err(UsageError(format!(
                "--name {n:?}: a test name has letters, digits and '_' only"
            )))
        }
        None => stem_of(file_stem),
    };
    let files = export(&rec, args.format, &stem)
        .map_err(|e| UsageError(format!("{}: {e}", args.finding.display())))?;
    for f in files {
        let path = args.out.join(&f.name);
        std::fs::write(&path, f.contents)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
