//! Findings as the engines' own regression tests (`txfuzz export`).
//!
//! An export replays the finding's observed schedule with the plain
//! statements (no hidden `rid`/`wl` columns) in the engine's own test
//! format, and expects what a correct engine does ([`Correction`]): the
//! observed outputs except the judged statement's, which gets the oracle's
//! prediction; or, for a finding about the end of the schedule or one
//! statement that must run, that alone, the other outputs not compared; for
//! a shadow-run difference (`fidelity`), every output and the final state of
//! the judged run. So the test fails while the bug lives and passes once it
//! is fixed.
//!
//! Formats: [`mtr`] (MariaDB's mysql-test-run: a `.test` and its `.result`),
//! [`isolation`] (PostgreSQL's isolationtester: a `.spec` and its `.out`),
//! [`script`] (SQLite and turso: a Python program on the engine's module).

mod columns;
mod correction;
pub mod invariants;
pub mod isolation;
pub mod mtr;
pub mod script;

use crate::finding::FindingRecord;
use crate::model::{StmtRef, Value};
pub use correction::{correction, judged_note, Correction, TableRows};

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// MariaDB mysql-test-run: `NAME.test` and `NAME.result`.
    Mtr,
    /// PostgreSQL isolationtester: `NAME.spec` and `NAME.out`.
    Isolation,
    /// SQLite and turso: `NAME.py`, a Python program on the engine's own
    /// module (`sqlite3`, `turso` from PyPI's pyturso).
    Script,
}

impl Format {
    /// The format of an engine's own test runner, if txfuzz writes one.
    pub fn for_engine(name: &str) -> Option<Format> {
        match name {
            "mariadb" | "mysql" => Some(Format::Mtr),
            "postgres" => Some(Format::Isolation),
            "sqlite" | "turso" => Some(Format::Script),
            _ => None,
        }
    }
}

/// Exports `rec` in its engine's format next to `finding` (a finding file:
/// `DIR/X.json` gives `DIR/txfuzz_X.*`): the paths written, or why none.
pub fn export_next_to(
    rec: &FindingRecord,
    finding: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, String> {
    let format = Format::for_engine(&rec.engine.name)
        .ok_or_else(|| format!("no test format for {}", rec.engine.name))?;
    let stem = finding
        .file_stem()
        .and_then(|s| s.to_str())
        .map(stem_of)
        .ok_or("a finding file without a name")?;
    let dir = finding.parent().unwrap_or(std::path::Path::new("."));
    let mut written = Vec::new();
    for f in export(rec, format, &stem)? {
        let path = dir.join(&f.name);
        crate::finding::write_atomic(&path, f.contents.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// One file of an export: its name (no directory) and contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportFile {
    pub name: String,
    pub contents: String,
}

/// The files of `rec` exported in `format`, named after `stem`.
pub fn export(rec: &FindingRecord, format: Format, stem: &str) -> Result<Vec<ExportFile>, String> {
    use crate::sql::Dialect;
    let (engines, runner, extensions, d) = match format {
        Format::Mtr => (
            &["mariadb", "mysql"][..],
            "mtr",
            ["test", "result"],
            Dialect::Mysql,
        ),
        Format::Isolation => (
            &["postgres"][..],
            "isolation",
            ["spec", "out"],
            Dialect::Postgres,
        ),
        Format::Script => (
            &["sqlite", "turso"][..],
            "script",
            ["py", ""],
            Dialect::Sqlite,
        ),
    };
    if !engines.contains(&rec.engine.name.as_str()) {
        return Err(format!(
            "{runner} exports {} findings; this one is from {}",
            engines.join("/"),
            rec.engine.name
        ));
    }
    let fix = correction(rec, d)?;
    let waits = fix.must_wait_for.is_some() && format != Format::Mtr;
    let fails = fix.must_fail.is_some() && format == Format::Isolation;
    if waits || fails {
        return Err(format!(
            "a statement that must wait for a lock ({}:{}) is exported for mysql-test-run \
             only, one that must fail for mysql-test-run and scripts",
            rec.finding.oracle, rec.finding.kind
        ));
    }
    let header = header(rec);
    let (test, expected) = match format {
        Format::Mtr => mtr::render(&rec.case, &rec.history, Some(&fix), &header)?,
        Format::Isolation => isolation::render(&rec.case, &rec.history, Some(&fix), &header)?,
        Format::Script => {
            let target = script::Target::of(&rec.engine)?;
            let program = script::render(target, &rec.case, &rec.history, Some(&fix), &header)?;
            (program, String::new())
        }
    };
    Ok(extensions
        .iter()
        .zip([test, expected])
        .filter(|(ext, _)| !ext.is_empty())
        .map(|(ext, contents)| ExportFile {
            name: format!("{stem}.{ext}"),
            contents,
        })
        .collect())
}

/// `SELECT <columns> FROM table`: the read of a table's final state.
fn read_table(case: &crate::model::TestCase, table: &str) -> Option<crate::model::Select> {
    use crate::model::{Expr, Select};
    let t = case.schema.table(table)?;
    let items = t.columns.iter().map(|c| Expr::col(&c.name)).collect();
    Some(Select::plain(&t.name, &t.name, items))
}

/// Whether every statement of `case` can be written in `d` (the case may
/// come from another engine).
fn supported(d: crate::sql::Dialect, case: &crate::model::TestCase) -> Result<(), String> {
    match case
        .txns
        .iter()
        .flat_map(|t| &t.stmts)
        .find_map(|s| crate::sql::unsupported(d, &s.stmt))
    {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// The rows a statement's run prints: the correction's for the judged
/// statement, else the observed ones.
fn rows_of<'a>(
    r: StmtRef,
    outcome: Option<&'a crate::model::Outcome>,
    fix: Option<&'a Correction>,
) -> &'a [Vec<Value>] {
    match fix {
        Some(f) if f.stmt == Some(r) => &f.rows,
        _ => outcome.map_or(&[], |o| o.rows.as_slice()),
    }
}

/// The comment lines that open an exported test: the finding, the engine,
/// where it came from, its known issue and how to replay it.
fn header(rec: &FindingRecord) -> Vec<String> {
    let f = &rec.finding;
    let mut lines = vec![
        format!("txfuzz finding: {} [{}:{}]", f.summary, f.oracle, f.kind),
        format!("engine: {} {}", rec.engine.name, rec.engine.version),
        format!("seed {} case {}", rec.case.seed, rec.case.index),
    ];
    if let Some(k) = &f.known {
        lines.push(format!("known issue {}: {}", k.id, k.reference));
    }
    if let Some(r) = &rec.releases {
        lines.push(r.summary());
    }
    if !rec.replay.is_empty() {
        lines.push(format!("replay: {}", rec.replay));
    }
    lines
}

/// A file stem from a finding file's name: letters, digits and `_` only (a
/// mysql-test-run test name).
pub fn stem_of(file_stem: &str) -> String {
    let s: String = file_stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("txfuzz_{s}")
}

#[cfg(test)]
mod tests {
    use crate::finding::Releases;
    use crate::oracle::OracleKind;

    /// An exported test's header says on which releases the finding
    /// reproduces once `replay` with several `--db` recorded them, and
    /// nothing of the kind before.
    #[test]
    fn the_header_names_the_releases_replay_recorded() {
        use crate::testkit::{add, committed, finding_record, kv_case};
        let case = kv_case(&[(1, 10)], vec![committed(vec![add("t", 1, 1)])], "1 1 1");
        let engine = ("mariadb", "10.11.19");
        let mut rec = finding_record(OracleKind::View, "result", engine, "", case);
        assert!(!super::header(&rec)
            .iter()
            .any(|l| l.contains("reproduces on")));
        rec.releases = Some(Releases {
            reproduces: vec!["mariadb 10.11.19".into()],
            does_not: vec!["mariadb 11.8.9".into()],
        });
        let want = "reproduces on: mariadb 10.11.19; not on: mariadb 11.8.9";
        let header = super::header(&rec);
        assert!(header.iter().any(|l| l == want), "{header:?}");
    }
}
