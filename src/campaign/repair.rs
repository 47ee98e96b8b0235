//! Completing the output of a campaign that was killed (SIGKILL, a power
//! cut): its findings are all on disk, each written the moment it was made,
//! but `summary.json` is rewritten every 2 s and may miss the last few, and a
//! finding's `.sql` is written just after its `.json`. `txfuzz report DIR`
//! calls [`complete`] first: the summary gets the findings it does not list
//! (their counts, files and distinct signatures), a `.json` without its
//! `.sql` gets the script again, and `stopped` says what happened. A
//! directory a campaign is still writing to (it holds the lock) is left alone.

use super::{write_summary, Summary};
use crate::finding::{file_number, finding_files, lock_dir, note_distinct, read_record};
use std::collections::BTreeSet;
use std::path::Path;

/// What [`complete`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Completed {
    /// Findings added to the summary.
    pub findings: usize,
    /// Scripts written again.
    pub scripts: usize,
}

/// Completes `dir`'s summary and scripts from its finding files; nothing to
/// do without a summary or while a campaign holds the directory.
pub fn complete(dir: &Path) -> Result<Completed, String> {
    let mut done = Completed::default();
    let path = dir.join("summary.json");
    if !path.exists() {
        return Ok(done);
    }
    let Ok(_lock) = lock_dir(dir) else {
        return Ok(done); // a campaign is writing here: its summary is live
    };
    let text = crate::input::read_text(&path, crate::input::SUMMARY_LIMIT)?;
    let mut summary: Summary =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let listed: BTreeSet<String> = summary
        .finding_files
        .iter()
        .filter_map(|f| Path::new(f).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    let files = finding_files(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for f in files {
        if file_number(&f).is_none_or(|n| n < summary.first_finding) {
            continue; // an earlier campaign's
        }
        let Ok(rec) = read_record(&f) else {
            continue; // the report names it
        };
        let sql = f.with_extension("sql");
        if !sql.exists() {
            let dialect = crate::engine::registry::dialect_of(&rec.engine.name)?;
            let script = crate::finding::render_script(
                dialect,
                &rec.case,
                Some(&rec.history),
                &rec.script_header(),
            );
            crate::finding::write_atomic(&sql, script.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", sql.display()))?;
            done.scripts += 1;
        }
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.is_some_and(|n| listed.contains(&n)) {
            continue;
        }
        summary.note_finding(&rec.finding, &f);
        note_distinct(
            &mut summary.distinct,
            &rec.finding,
            &rec.case,
            &rec.engine,
            &f,
        );
        done.findings += 1;
    }
    if done.findings > 0 {
        summary.stopped.get_or_insert_with(|| {
            "the campaign ended without writing its last summary (killed?)".into()
        });
        summary.completed_from_files = done.findings;
        write_summary(dir, &summary).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(done)
}
