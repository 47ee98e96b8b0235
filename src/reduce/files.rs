//! Writing reduced cases next to findings, and reducing a campaign's distinct
//! findings (`txfuzz run --reduce`), each exported as its engine's own test
//! where it can be (`crate::export`).

use super::{reduce, ReduceConfig, ReduceError, Reduced};
use crate::engine::Engine;
use crate::finding::{load_case_file, render_script_in, write_atomic, CaseFile, Distinct};
use std::path::{Path, PathBuf};

/// Writes the reduced record as `json` (with its replay command) and its `.sql`
/// script next to it.
pub fn write_reduced(engine: &dyn Engine, r: &Reduced, json: &Path) -> std::io::Result<()> {
    let mut rec = r.record.clone();
    rec.replay = crate::finding::replay_command(&rec.engine, json);
    let header = format!(
        "txfuzz reduced finding: {} [{}:{}]\nengine: {} {}\nsignature: {}\nreduced from {} to {} data statement(s), {} to {} transaction(s) in {} run(s)",
        rec.finding.summary,
        rec.finding.oracle,
        rec.finding.kind,
        rec.engine.name,
        rec.engine.version,
        r.signature.key(),
        r.stmts_before,
        r.stmts_after,
        r.txns_before,
        r.txns_after,
        r.runs
    );
    let layout = match rec.plain_reproduces() {
        true => crate::sql::Layout::Plain,
        false => crate::sql::Layout::Instrumented,
    };
    let script = render_script_in(
        engine.dialect(),
        &rec.case,
        Some(&rec.history),
        &header,
        layout,
    );
    let bytes = serde_json::to_vec_pretty(&rec).map_err(std::io::Error::other)?;
    write_atomic(json, &bytes)?;
    write_atomic(&json.with_extension("sql"), script.as_bytes())
}

/// `X.json` -> `X-reduced.json`.
pub fn reduced_path(finding: &Path) -> PathBuf {
    crate::report::reduced_path(finding)
}

/// Reduces the example of every distinct signature that is not permitted and writes
/// `<example>-reduced.json/.sql`. Returns one line per signature for the user;
/// only engine failures stop it.
pub fn reduce_distinct(
    engine: &mut dyn Engine,
    distinct: &[Distinct],
    cfg: &ReduceConfig,
) -> Result<Vec<String>, crate::engine::EngineError> {
    let mut lines = Vec::new();
    // A permitted finding is the engine's documented behaviour: nothing to
    // report upstream, so nothing to reduce (a turso MVCC campaign has a
    // write-skew signature per statement mix).
    for d in distinct.iter().filter(|d| d.permitted_by.is_none()) {
        let path = Path::new(&d.example);
        let rec = match load_case_file(path) {
            Ok(CaseFile::Finding(rec)) => rec,
            Ok(CaseFile::Case(_)) => continue,
            Err(e) => {
                lines.push(format!("{}: {e}", d.signature));
                continue;
            }
        };
        match reduce(engine, &rec, cfg) {
            Ok(r) => {
                let out = reduced_path(path);
                let note = match write_reduced(engine, &r, &out) {
                    Ok(()) => match crate::export::export_next_to(&r.record, &out) {
                        Ok(files) => {
                            let names: Vec<String> =
                                files.iter().map(|f| f.display().to_string()).collect();
                            format!("{} (exported: {})", out.display(), names.join(", "))
                        }
                        Err(why) => format!("{} (not exported: {why})", out.display()),
                    },
                    Err(e) => format!("cannot write {}: {e}", out.display()),
                };
                lines.push(format!(
                    "{}: {} -> {} data statement(s), {} -> {} transaction(s) ({} runs): {note}",
                    d.signature, r.stmts_before, r.stmts_after, r.txns_before, r.txns_after, r.runs
                ));
            }
            Err(ReduceError::Usage(e)) => lines.push(format!("{}: not reduced: {e}", d.signature)),
            Err(ReduceError::Engine(e)) => return Err(e),
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distinct(example: &str, permitted_by: Option<&str>) -> Distinct {
        Distinct {
            signature: "graph/write-skew/x".into(),
            id: "1".into(),
            count: 1,
            example: example.into(),
            statements: 2,
            known: None,
            permitted_by: permitted_by.map(Into::into),
        }
    }

    /// A permitted signature is skipped; any other is attempted (here its
    /// example is missing, which yields a line saying so).
    #[test]
    fn permitted_signatures_are_not_reduced() {
        let mut engine = crate::engine::sqlite::SqliteEngine::open(None).unwrap();
        let missing = "/nonexistent/txfuzz/finding.json";
        let cfg = ReduceConfig::default();
        let permitted = [distinct(
            missing,
            Some("permitted_anomalies[repeatable-read]"),
        )];
        assert!(reduce_distinct(&mut engine, &permitted, &cfg)
            .unwrap()
            .is_empty());
        let violation = [distinct(missing, None)];
        assert_eq!(
            reduce_distinct(&mut engine, &violation, &cfg)
                .unwrap()
                .len(),
            1
        );
    }
}
