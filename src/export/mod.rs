//! Findings as the engines' own regression tests (`txfuzz export`).
//!
//! An export replays the finding's observed schedule with the plain
//! statements (no hidden `rid`/`wl` columns) in the engine's own test
//! format, and expects what a correct engine returns: the observed outputs,
//! except the judged statement's, which gets the oracle's prediction. So the
//! test fails while the bug lives and passes once it is fixed.
//!
//! Formats: [`mtr`] (MariaDB's mysql-test-run: a `.test` and its `.result`),
//! [`isolation`] (PostgreSQL's isolationtester: a `.spec` and its `.out`).

mod columns;
pub mod isolation;
pub mod mtr;

use crate::finding::FindingRecord;
use crate::model::{StmtRef, Value};

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// MariaDB mysql-test-run: `NAME.test` and `NAME.result`.
    Mtr,
    /// PostgreSQL isolationtester: `NAME.spec` and `NAME.out`.
    Isolation,
}

/// One file of an export: its name (no directory) and contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportFile {
    pub name: String,
    pub contents: String,
}

/// What a correct engine returns where the finding says the observed
/// output was wrong: the judged statement and its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Correction {
    pub stmt: StmtRef,
    pub rows: Vec<Vec<Value>>,
    /// The rows the engine returned, for the test's comment.
    pub observed: Vec<Vec<Value>>,
    /// Why: the finding's summary and rule.
    pub why: String,
}

/// The correction a finding gives, or why it gives none that one test can
/// assert.
pub fn correction(rec: &FindingRecord) -> Result<Correction, String> {
    let f = &rec.finding;
    let unsupported = || {
        format!(
            "an export of a {}:{} finding is not built yet: only findings whose correct \
             output is one result (view:result) are exported",
            f.oracle, f.kind
        )
    };
    if f.oracle != "view" || f.kind != "result" {
        return Err(unsupported());
    }
    let stmt = *f.involved.first().ok_or_else(unsupported)?;
    let rows_at = |side: &str| -> Result<Vec<Vec<Value>>, String> {
        let v = f
            .evidence
            .get(side)
            .and_then(|o| o.get("rows"))
            .cloned()
            .unwrap_or(serde_json::Value::Array(Vec::new()));
        serde_json::from_value(v).map_err(|e| format!("the finding's {side} rows: {e}"))
    };
    let error_at = |side: &str| {
        f.evidence
            .get(side)
            .and_then(|o| o.get("error"))
            .is_some_and(|e| !e.is_null())
    };
    if error_at("expected") || error_at("actual") {
        return Err(
            "an export of a result finding with an error on either side is not built yet".into(),
        );
    }
    Ok(Correction {
        stmt,
        rows: rows_at("expected")?,
        observed: rows_at("actual")?,
        why: f.summary.clone(),
    })
}

/// The files of `rec` exported in `format`, named after `stem`.
pub fn export(rec: &FindingRecord, format: Format, stem: &str) -> Result<Vec<ExportFile>, String> {
    let (engines, runner, extensions) = match format {
        Format::Mtr => (&["mariadb", "mysql"][..], "mtr", ["test", "result"]),
        Format::Isolation => (&["postgres"][..], "isolation", ["spec", "out"]),
    };
    if !engines.contains(&rec.engine.name.as_str()) {
        return Err(format!(
            "{runner} exports {} findings; this one is from {}",
            engines.join("/"),
            rec.engine.name
        ));
    }
    let fix = correction(rec)?;
    let header = header(rec);
    let (test, expected) = match format {
        Format::Mtr => mtr::render(&rec.case, &rec.history, Some(&fix), &header)?,
        Format::Isolation => isolation::render(&rec.case, &rec.history, Some(&fix), &header)?,
    };
    Ok(vec![
        ExportFile {
            name: format!("{stem}.{}", extensions[0]),
            contents: test,
        },
        ExportFile {
            name: format!("{stem}.{}", extensions[1]),
            contents: expected,
        },
    ])
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
        Some(f) if f.stmt == r => &f.rows,
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
    if !rec.replay.is_empty() {
        lines.push(format!("replay: {}", rec.replay));
    }
    lines
}

/// The sentence that names the judged statement and both outputs.
fn judged_note(fix: &Correction) -> String {
    format!(
        "T{}#{} is judged: {}. Observed rows: {}. A correct engine returns: {}.",
        fix.stmt.txn,
        fix.stmt.index,
        fix.why,
        rows_note(&fix.observed),
        rows_note(&fix.rows)
    )
}

fn rows_note(rows: &[Vec<Value>]) -> String {
    if rows.is_empty() {
        return "none".into();
    }
    let shown: Vec<String> = rows
        .iter()
        .map(|r| {
            let vals: Vec<String> = r
                .iter()
                .map(|v| crate::sql::render_value(crate::sql::Dialect::Postgres, v))
                .collect();
            format!("({})", vals.join(", "))
        })
        .collect();
    shown.join(" ")
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
