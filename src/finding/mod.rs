//! Findings on disk: each one is written the moment it is made, as a
//! self-contained JSON case file plus a `.sql` script a person can paste into
//! sessions. `txfuzz replay` reads the JSON back.

pub mod known;
mod script;
pub mod signature;

pub use script::{render_script, render_script_in};
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
    /// The releases it was replayed on (`txfuzz replay FILE --db URL1 --db
    /// URL2 ...`): where it reproduces and where it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases: Option<Releases>,
}

/// On which servers (engine and version) a finding reproduces.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Releases {
    pub reproduces: Vec<String>,
    pub does_not: Vec<String>,
}

impl Releases {
    /// `reproduces on: mariadb 11.8.9; not on: mariadb 10.11.19`.
    pub fn summary(&self) -> String {
        let list = |v: &[String]| match v {
            [] => "none".to_string(),
            v => v.join(", "),
        };
        format!(
            "reproduces on: {}; not on: {}",
            list(&self.reproduces),
            list(&self.does_not)
        )
    }
}

impl FindingRecord {
    /// Whether the finding reproduces without txfuzz's instrumentation: its
    /// shadow run (by `txfuzz reduce`) agrees.
    pub fn plain_reproduces(&self) -> bool {
        self.finding.evidence.get("shadow").and_then(|v| v.as_str()) == Some("agrees")
    }

    /// The comment that opens the finding's `.sql` script.
    pub fn script_header(&self) -> String {
        format!(
            "txfuzz finding: {} [{}:{}]\nengine: {} {}\nseed {} case {}",
            self.finding.summary,
            self.finding.oracle,
            self.finding.kind,
            self.engine.name,
            self.engine.version,
            self.case.seed,
            self.case.index
        )
    }

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
            releases: None,
        }
    }
}

/// Reads a finding file through the same checks as [`load_case_file`]
/// (formats, names and numbers, structure, history): `export`, `report` and
/// `merge` read findings here.
pub fn read_record(path: &Path) -> Result<FindingRecord, String> {
    let rec: FindingRecord =
        crate::input::read_json(path, crate::input::CASE_FILE_LIMIT, "a finding file")?;
    admit_record(path, rec)
}

/// A finding record's formats, upgraded case, structure and history checked.
fn admit_record(path: &Path, mut rec: FindingRecord) -> Result<FindingRecord, String> {
    check_formats(path, Some(rec.format), &rec.case)?;
    // A format-1 BEGIN meant the recorded engine's first start mode.
    if let Ok(profile) = crate::engine::registry::profile_of(&rec.engine) {
        rec.case.upgrade(profile.features.start_modes[0]);
    }
    validate_case(path, &rec.case)?;
    check_history(&rec.case, &rec.history)
        .map_err(|e| format!("{}: invalid history: {e}", path.display()))?;
    Ok(rec)
}

/// The formats of a finding (`finding`: its own, if the file is one) and
/// of its case are ones this txfuzz reads (the case's before its upgrade).
pub(crate) fn check_formats(
    path: &Path,
    finding: Option<u32>,
    case: &TestCase,
) -> Result<(), String> {
    if let Some(f) = finding {
        check_format(path, "finding", f.into(), FINDING_FORMAT)?;
    }
    let case_format = u64::from(case.format);
    check_format(path, "case", case_format, crate::model::CASE_FORMAT)
}

/// The case's structure ([`TestCase::validate`]; its names and numbers were
/// checked as it was read: [`crate::model::ident`], [`crate::model::Value`]).
pub(crate) fn validate_case(path: &Path, case: &TestCase) -> Result<(), String> {
    case.validate()
        .map_err(|e| format!("{}: invalid case: {e}", path.display()))
}

/// `format` is one this txfuzz reads (1 to `newest`).
fn check_format(path: &Path, what: &str, format: u64, newest: u32) -> Result<(), String> {
    if (1..=u64::from(newest)).contains(&format) {
        return Ok(());
    }
    Err(unsupported_format(path, what, &format, newest))
}

fn unsupported_format(
    path: &Path,
    what: &str,
    shown: &dyn std::fmt::Display,
    newest: u32,
) -> String {
    format!(
        "{}: unsupported {what} format {shown} (this txfuzz reads {what} formats 1 to {newest})",
        path.display()
    )
}

/// The readable findings of `files`, each with its path; an unreadable one
/// (a run killed mid-write by an older txfuzz, a hand edit) is skipped with
/// a warning, so that it does not hide the others.
pub fn readable_records(files: Vec<PathBuf>) -> impl Iterator<Item = (PathBuf, FindingRecord)> {
    files
        .into_iter()
        .filter_map(|path| match read_record(&path) {
            Ok(rec) => Some((path, rec)),
            Err(e) => {
                eprintln!("txfuzz: skipping {e}");
                None
            }
        })
}

/// The number a finding file's name starts with (`0012-case3-...json`).
pub fn file_number(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The finding files of `DIR/findings` (not the reduced ones), sorted; none
/// when there is no such directory.
pub fn finding_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir.join("findings")) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                name.is_some_and(|n| n.ends_with(".json") && !n.ends_with("-reduced.json"))
            })
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    files.sort();
    Ok(files)
}

/// What a case file may hold: a finding record or a bare test case.
#[derive(Clone)]
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
    pub fn case_mut(&mut self) -> &mut TestCase {
        match self {
            CaseFile::Finding(r) => &mut r.case,
            CaseFile::Case(c) => c,
        }
    }
}

/// Reads a finding record or a bare case; the error is one line for the user.
pub fn load_case_file(path: &Path) -> Result<CaseFile, String> {
    use crate::input::{Skip, Source, CASE_FILE_LIMIT};
    /// What the file is, read without keeping its contents.
    #[derive(serde::Deserialize)]
    struct Probe {
        format: Option<serde_json::Value>,
        finding: Option<Skip>,
    }
    let (probe, source): (Probe, Source) = Source::probe(path, CASE_FILE_LIMIT, "a JSON object")?;
    // A finding record's format, or a bare case's own (older case formats
    // are upgraded when they load), before the rest is read.
    let (what, newest) = match probe.finding {
        Some(_) => ("finding", FINDING_FORMAT),
        None => ("case", crate::model::CASE_FORMAT),
    };
    match probe.format.as_ref().map(|v| (v, v.as_u64())) {
        Some((_, Some(f))) => check_format(path, what, f, newest)?,
        Some((v, None)) => return Err(unsupported_format(path, what, v, newest)),
        None => {}
    }
    if probe.finding.is_some() {
        let rec = source.json("a txfuzz finding file")?;
        return Ok(CaseFile::Finding(Box::new(admit_record(path, rec)?)));
    }
    let case: TestCase = source.json("a txfuzz case file")?;
    check_formats(path, None, &case)?;
    validate_case(path, &case)?;
    Ok(CaseFile::Case(Box::new(case)))
}

/// A recorded history refers only to the case's transactions and statements.
fn check_history(case: &TestCase, h: &History) -> Result<(), String> {
    let known = |r: &crate::model::StmtRef| {
        case.txn(r.txn)
            .is_some_and(|t| (r.index as usize) < t.stmts.len())
    };
    if let Some(o) = h.outcomes.iter().find(|o| !known(&o.stmt)) {
        return Err(format!(
            "an outcome for {:?}, which the case does not have",
            o.stmt
        ));
    }
    if let Some(e) = h.events.iter().find(|e| !known(&e.stmt)) {
        return Err(format!(
            "an event for {:?}, which the case does not have",
            e.stmt
        ));
    }
    if let Some(t) = h.txns.iter().find(|t| case.txn(t.txn).is_none()) {
        return Err(format!(
            "an outcome for transaction T{}, which the case does not have",
            t.txn
        ));
    }
    Ok(())
}

/// Writes findings under `DIR/findings/`. It holds a lock on `DIR`
/// (`DIR/.txfuzz.lock`) for as long as it lives, so two campaigns never
/// write into one directory; leftovers of an interrupted write (`*.tmp`) are
/// removed when it is created.
pub struct FindingStore {
    dir: PathBuf,
    next: usize,
    _lock: std::fs::File,
}

impl FindingStore {
    pub fn create(out: &Path) -> std::io::Result<FindingStore> {
        let lock = lock_dir(out)?;
        let dir = out.join("findings");
        std::fs::create_dir_all(&dir)?;
        remove_tmp_files(out)?;
        remove_tmp_files(&dir)?;
        // After the highest number present: earlier runs' findings stay.
        let mut last = 0;
        for e in std::fs::read_dir(&dir)? {
            last = last.max(file_number(&e?.path()).unwrap_or(0));
        }
        Ok(FindingStore {
            dir,
            next: last + 1,
            _lock: lock,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The number the next finding file gets (earlier runs' files have
    /// lower ones).
    pub fn next_number(&self) -> usize {
        self.next
    }

    /// Writes `rec` as `NNNN-case<i>-<oracle>-<kind>.json` (atomically, via
    /// rename) with its replay command filled in, then its `.sql` script
    /// (the JSON is the finding; the script is derived from it); returns
    /// the JSON path.
    pub fn write(&mut self, mut rec: FindingRecord, script: &str) -> std::io::Result<PathBuf> {
        let stem = format!(
            "{:04}-case{}-{}-{}",
            self.next, rec.case.index, rec.finding.oracle, rec.finding.kind
        );
        self.next += 1;
        let json_path = self.dir.join(format!("{stem}.json"));
        rec.replay = replay_command(&rec.engine, &json_path);
        let json = serde_json::to_vec_pretty(&rec).map_err(std::io::Error::other)?;
        write_atomic(&json_path, &json)?;
        write_atomic(&self.dir.join(format!("{stem}.sql")), script.as_bytes())?;
        Ok(json_path)
    }
}

/// Takes the lock of an output directory (creating it), or says who has it.
pub fn lock_dir(out: &Path) -> std::io::Result<std::fs::File> {
    std::fs::create_dir_all(out)?;
    let path = out.join(".txfuzz.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::new(
            std::io::ErrorKind::ResourceBusy,
            format!(
                "another txfuzz campaign is writing to {} (it holds {}); use another --out",
                out.display(),
                path.display()
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Removes `*.tmp` files directly in `dir` (a write cut short).
fn remove_tmp_files(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "tmp") && p.is_file() {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(())
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

/// Writes to a temporary sibling (`NAME.tmp`), syncs, and renames over
/// `path`; a failed write (a full disk) removes the temporary file. Errors
/// name the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        std::io::Error::new(e.kind(), format!("writing {}: {e}", path.display()))
    })
}

#[cfg(test)]
mod store_tests {
    use super::*;

    #[test]
    fn a_store_cleans_interrupted_writes_and_numbers_after_earlier_findings() {
        let out = tempfile::tempdir().unwrap();
        let findings = out.path().join("findings");
        std::fs::create_dir_all(&findings).unwrap();
        std::fs::write(findings.join("0007-case3-wss-x.json"), "{}").unwrap();
        std::fs::write(findings.join("0008-case4-wss-x.json.tmp"), "{").unwrap();
        std::fs::write(out.path().join("summary.json.tmp"), "{").unwrap();
        let store = FindingStore::create(out.path()).unwrap();
        assert_eq!(store.next, 8);
        assert!(!findings.join("0008-case4-wss-x.json.tmp").exists());
        assert!(!out.path().join("summary.json.tmp").exists());
        // A second store on the same directory is refused while the first lives.
        let err = FindingStore::create(out.path()).err().unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::ResourceBusy);
        assert!(err.to_string().contains(&out.path().display().to_string()));
        drop(store);
        assert!(FindingStore::create(out.path()).is_ok());
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a directory: the rename fails after the write.
        let target = dir.path().join("taken");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("x"), "x").unwrap();
        let err = write_atomic(&target, b"data").unwrap_err();
        assert!(err.to_string().contains("taken"), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("taken")]);
    }
}
