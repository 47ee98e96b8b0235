//! `txfuzz report DIR`: one self-contained static HTML page, `DIR/report.html`
//! (inline CSS and SVG, no scripts, no external resources): the campaign
//! summary, throughput over time, and the findings grouped by signature, each
//! with its (reduced, when `run --reduce` or `txfuzz reduce` wrote one) case as
//! a SQL script, the explanation and the dependency cycle; `DIR/report.md`
//! (`markdown.rs`) groups them by root cause, new violations first, with a
//! bug report per new one.

mod escape;
pub mod html;
pub mod markdown;
pub mod svg;

use crate::campaign::Summary;
use crate::finding::{
    data_stmts, finding_files, read_record, readable_records, signature, FindingRecord, Signature,
};
use std::path::{Path, PathBuf};

/// Findings that share a signature.
pub struct Group {
    pub signature: Signature,
    pub count: usize,
    /// The smallest finding file of the group (fewest data statements).
    pub example: PathBuf,
    /// What the page shows: the reduced record if one exists, else the example.
    pub shown: FindingRecord,
    /// `(data statements before, after)` when `shown` is a reduced case.
    pub reduced: Option<(usize, usize)>,
}

pub struct Report {
    pub dir: PathBuf,
    pub summary: Option<Summary>,
    pub groups: Vec<Group>,
}

/// The reduced sibling of a finding file: `X.json` -> `X-reduced.json`.
pub fn reduced_path(finding: &Path) -> PathBuf {
    let stem = finding
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    finding.with_file_name(format!("{stem}-reduced.json"))
}

/// Reads `DIR/summary.json` (if any) and every finding under `DIR/findings/`.
pub fn load(dir: &Path) -> Result<Report, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let summary =
        match crate::input::read_text(&dir.join("summary.json"), crate::input::SUMMARY_LIMIT) {
            Ok(text) => Some(
                serde_json::from_str::<Summary>(&text)
                    .map_err(|e| format!("{}/summary.json: {e}", dir.display()))?,
            ),
            Err(_) => None,
        };
    let mut groups = group_findings(finding_files(dir).unwrap_or_default());
    for g in &mut groups {
        // Prefer a reduced case of any member; the example's own first.
        let red = reduced_path(&g.example);
        if let Ok(r) = read_record(&red) {
            g.reduced = Some((data_stmts(&g.shown.case), data_stmts(&r.case)));
            g.shown = r;
        }
    }
    // New violations first, then known ones, then permitted; then by count.
    let rank = |g: &Group| match (g.signature.verdict.as_str(), &g.shown.finding.known) {
        ("violation", None) => 0,
        ("violation", Some(_)) => 1,
        _ => 2,
    };
    groups.sort_by(|a, b| {
        (rank(a), std::cmp::Reverse(a.count), a.signature.key()).cmp(&(
            rank(b),
            std::cmp::Reverse(b.count),
            b.signature.key(),
        ))
    });
    Ok(Report {
        dir: dir.to_path_buf(),
        summary,
        groups,
    })
}

/// The findings of `files` grouped by signature (known and new violations
/// apart), each shown by its smallest case; unreadable files are skipped.
fn group_findings(files: Vec<PathBuf>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (path, rec) in readable_records(files) {
        let sig = signature(&rec.finding, &rec.case, &rec.engine);
        let n = data_stmts(&rec.case);
        // Known and new violations of one signature are separate problems.
        let known = |r: &FindingRecord| r.finding.known.as_ref().map(|k| k.id.clone());
        let id = known(&rec);
        match groups
            .iter_mut()
            .find(|g| g.signature == sig && known(&g.shown) == id)
        {
            Some(g) => {
                g.count += 1;
                if n < data_stmts(&g.shown.case) {
                    g.example = path;
                    g.shown = rec;
                }
            }
            None => groups.push(Group {
                signature: sig,
                count: 1,
                example: path,
                shown: rec,
                reduced: None,
            }),
        }
    }
    groups
}

/// Writes `DIR/report.html`, `DIR/report.md` and a bug report per new root
/// cause (`DIR/reports/`); returns the page's path.
pub fn write_report(dir: &Path) -> Result<PathBuf, String> {
    let done = crate::campaign::repair::complete(dir)?;
    if done.findings + done.scripts > 0 {
        eprintln!(
            "txfuzz: {} finding(s) added to summary.json and {} script(s) written again: the campaign did not finish writing them (killed?)",
            done.findings, done.scripts
        );
    }
    let report = load(dir)?;
    let page = html::render(&report);
    let path = dir.join("report.html");
    crate::finding::write_atomic(&path, page.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    for md in markdown::render(&report) {
        let p = dir.join(&md.path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        crate::finding::write_atomic(&p, md.text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(path)
}
