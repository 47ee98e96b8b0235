//! Findings on disk: each one is written the moment it is made, as a
//! self-contained JSON case file plus a `.sql` script a person can paste into
//! sessions. `txfuzz replay` reads the JSON back.

pub mod known;
mod script;
pub mod signature;

pub use script::render_script;
pub use signature::{data_stmts, note_distinct, signature, Distinct, Signature};

use crate::model::{EngineInfo, History, TestCase};
use crate::oracle::Finding;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FINDING_FORMAT: u32 = 1;

/// Everything needed to understand and reproduce one finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingRecord {
    pub format: u32,
    pub txfuzz_version: String,
    pub finding: Finding,
    pub engine: EngineInfo,
    pub case: TestCase,
    /// The observed schedule and outcomes.
    pub history: History,
    /// Command that re-executes and re-checks this case.
    pub replay: String,
}

impl FindingRecord {
    /// A record for `finding` on `case` (its replay command is filled in when
    /// the record is written by a [`FindingStore`]).
    pub fn new(finding: Finding, engine: EngineInfo, case: TestCase, history: History) -> Self {
        FindingRecord {
            format: FINDING_FORMAT,
            txfuzz_version: env!("CARGO_PKG_VERSION").into(),
            finding,
            engine,
            case,
            history,
            replay: String::new(),
        }
    }
}

/// What a case file may hold: a finding record or a bare test case.
pub enum CaseFile {
    Finding(Box<FindingRecord>),
    Case(Box<TestCase>),
}

impl CaseFile {
    pub fn case(&self) -> &TestCase {
        match self {
            CaseFile::Finding(r) => &r.case,
            CaseFile::Case(c) => c,
        }
    }
}

/// Reads a finding record or a bare case; the error is one line for the user.
pub fn load_case_file(path: &Path) -> Result<CaseFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read case file {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let file = if value.get("finding").is_some() {
        serde_json::from_value::<FindingRecord>(value)
            .map(|r| CaseFile::Finding(Box::new(r)))
            .map_err(|e| format!("{} is not a txfuzz finding file: {e}", path.display()))?
    } else {
        serde_json::from_value::<TestCase>(value)
            .map(|c| CaseFile::Case(Box::new(c)))
            .map_err(|e| format!("{} is not a txfuzz case file: {e}", path.display()))?
    };
    file.case()
        .validate()
        .map_err(|e| format!("{}: invalid case: {e}", path.display()))?;
    Ok(file)
}

/// Writes findings under `DIR/findings/`.
pub struct FindingStore {
    dir: PathBuf,
    written: usize,
}

impl FindingStore {
    pub fn create(out: &Path) -> std::io::Result<FindingStore> {
        let dir = out.join("findings");
        std::fs::create_dir_all(&dir)?;
        let written = std::fs::read_dir(&dir)?.count();
        Ok(FindingStore { dir, written })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `rec` as `NNNN-case<i>-<oracle>-<kind>.json` (atomically, via
    /// rename) with its replay command filled in, and its `.sql` script; returns
    /// the JSON path.
    pub fn write(&mut self, mut rec: FindingRecord, script: &str) -> std::io::Result<PathBuf> {
        self.written += 1;
        let stem = format!(
            "{:04}-case{}-{}-{}",
            self.written, rec.case.index, rec.finding.oracle, rec.finding.kind
        );
        let json_path = self.dir.join(format!("{stem}.json"));
        rec.replay = replay_command(&rec.engine, &json_path);
        write_atomic(&self.dir.join(format!("{stem}.sql")), script.as_bytes())?;
        let json = serde_json::to_vec_pretty(&rec).map_err(std::io::Error::other)?;
        write_atomic(&json_path, &json)?;
        Ok(json_path)
    }
}

/// The command that replays the finding at `path`: an embedded engine needs
/// no URL (the case creates its own database), a server needs `--db`.
pub fn replay_command(engine: &EngineInfo, path: &Path) -> String {
    let embedded = crate::engine::registry::profile_of(engine).is_ok_and(|p| p.embedded);
    if embedded {
        format!("txfuzz replay {}", path.display())
    } else {
        format!("txfuzz replay {} --db '{}'", path.display(), engine.url)
    }
}

/// Writes to a temporary sibling, syncs, and renames over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}
