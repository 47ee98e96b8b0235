//! `DIR/report.md` and one bug report per root cause of new violations,
//! `DIR/reports/NN-<oracle>-<kind>.md`: what needs a person first.
//!
//! Findings are grouped by root cause — oracle, kind, and the known issue
//! or documented fact that explains them — not by the statement kinds of
//! their cases: one engine behaviour met by many statement mixes is one
//! problem. New violations come first, then known engine bugs, then
//! fidelity findings (txfuzz changed what the engine did); permitted
//! behaviour is a table of counts per documented fact with an example.

use super::{Group, Report};
use crate::export::{correction, export, stem_of, Format};
use crate::finding::{render_script_in, FindingRecord};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Why a group of findings is one problem.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// A violation no known issue explains: needs a person.
    New { oracle: String, kind: String },
    /// A known engine bug.
    Known { id: String },
    /// txfuzz's instrumentation changed what the engine did.
    Fidelity { kind: String },
    /// Behaviour the engine documents.
    Permitted { fact: String },
}

/// The root cause of a group.
pub fn cause(g: &Group) -> Cause {
    let f = &g.shown.finding;
    if let Some(k) = &f.known {
        return Cause::Known { id: k.id.clone() };
    }
    if f.oracle == "fidelity" {
        return Cause::Fidelity {
            kind: f.kind.clone(),
        };
    }
    match &f.permitted_by {
        Some(p) => Cause::Permitted {
            fact: p.fact.clone(),
        },
        None => Cause::New {
            oracle: f.oracle.to_string(),
            kind: f.kind.clone(),
        },
    }
}

/// The groups of each root cause, in report order.
pub fn by_cause(r: &Report) -> BTreeMap<Cause, Vec<&Group>> {
    let mut out: BTreeMap<Cause, Vec<&Group>> = BTreeMap::new();
    for g in &r.groups {
        out.entry(cause(g)).or_default().push(g);
    }
    out
}

/// One file of the markdown report: its path under the campaign directory.
pub struct Page {
    pub path: String,
    pub text: String,
}

/// `report.md` and the bug reports it links.
pub fn render(r: &Report) -> Vec<Page> {
    let causes = by_cause(r);
    let mut pages = Vec::new();
    let mut s = String::new();
    let engine = r
        .groups
        .first()
        .map(|g| format!("{} {}", g.shown.engine.name, g.shown.engine.version));
    let _ = writeln!(
        s,
        "# txfuzz report{}\n",
        engine.map(|e| format!(": {e}")).unwrap_or_default()
    );
    if let Some(sm) = &r.summary {
        let levels: Vec<String> = sm.isolations.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(
            s,
            "{} cases, {} transactions at {}, seed {}, {:.0} s ({:.1} cases/s).\n",
            sm.cases,
            sm.transactions,
            levels.join(", "),
            sm.seed,
            sm.elapsed_s,
            sm.cases_per_s
        );
    }
    let count = |gs: &[&Group]| gs.iter().map(|g| g.count).sum::<usize>();
    let levels = |gs: &[&Group]| {
        let mut l: Vec<&str> = gs.iter().map(|g| g.signature.isolation.as_str()).collect();
        l.sort_unstable();
        l.dedup();
        l.join(", ")
    };
    let new: Vec<(&Cause, &Vec<&Group>)> = causes
        .iter()
        .filter(|(c, _)| matches!(c, Cause::New { .. }))
        .collect();
    let _ = writeln!(s, "## Needs a person: {} new violation(s)\n", new.len());
    if new.is_empty() {
        s.push_str("No violation without a known cause.\n\n");
    } else {
        s.push_str("| # | root cause | levels | findings | statement mixes | bug report |\n|---|---|---|---|---|---|\n");
    }
    for (i, (c, gs)) in new.iter().enumerate() {
        let Cause::New { oracle, kind } = c else {
            continue;
        };
        let path = format!("reports/{:02}-{oracle}-{kind}.md", i + 1);
        let _ = writeln!(
            s,
            "| {} | `{oracle}:{kind}` | {} | {} | {} | [{path}]({path}) |",
            i + 1,
            levels(gs),
            count(gs),
            gs.len()
        );
        pages.push(Page {
            text: bug_report(r, oracle, kind, gs),
            path,
        });
    }
    let known: Vec<_> = causes
        .iter()
        .filter(|(c, _)| matches!(c, Cause::Known { .. }))
        .collect();
    let _ = writeln!(s, "\n## Known engine bugs: {}\n", known.len());
    if !known.is_empty() {
        s.push_str("| known issue | oracle:kind | levels | findings | reference |\n|---|---|---|---|---|\n");
    }
    for (c, gs) in &known {
        let Cause::Known { id } = c else { continue };
        let g = gs[0];
        let reference = g
            .shown
            .finding
            .known
            .as_ref()
            .map_or(String::new(), |k| k.reference.clone());
        let _ = writeln!(
            s,
            "| `{id}` | `{}:{}` | {} | {} | {} |",
            g.signature.oracle,
            g.signature.kind,
            levels(gs),
            count(gs),
            cell(&reference)
        );
    }
    let fidelity: Vec<_> = causes
        .iter()
        .filter(|(c, _)| matches!(c, Cause::Fidelity { .. }))
        .collect();
    let _ = writeln!(
        s,
        "\n## Fidelity: {} (txfuzz's instrumentation changed what the engine did)\n",
        fidelity.iter().map(|(_, gs)| count(gs)).sum::<usize>()
    );
    if !fidelity.is_empty() {
        s.push_str("| kind | levels | findings | example |\n|---|---|---|---|\n");
    }
    for (c, gs) in &fidelity {
        let Cause::Fidelity { kind } = c else {
            continue;
        };
        let _ = writeln!(
            s,
            "| `{kind}` | {} | {} | `{}` |",
            levels(gs),
            count(gs),
            gs[0].example.display()
        );
    }
    let permitted: Vec<_> = causes
        .iter()
        .filter(|(c, _)| matches!(c, Cause::Permitted { .. }))
        .collect();
    let _ = writeln!(
        s,
        "\n## Permitted behaviour: {} finding(s), documented\n",
        permitted.iter().map(|(_, gs)| count(gs)).sum::<usize>()
    );
    if !permitted.is_empty() {
        s.push_str("| documented fact | findings | documentation | example |\n|---|---|---|---|\n");
    }
    for (c, gs) in &permitted {
        let Cause::Permitted { fact } = c else {
            continue;
        };
        let doc = gs[0]
            .shown
            .finding
            .permitted_by
            .as_ref()
            .map_or(String::new(), |p| p.doc.clone());
        let _ = writeln!(
            s,
            "| `{fact}` | {} | {} | `{}` |",
            count(gs),
            cell(&doc),
            gs[0].example.display()
        );
    }
    pages.insert(
        0,
        Page {
            path: "report.md".into(),
            text: s,
        },
    );
    pages
}

/// Text for a table cell: one line, no `|`.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The bug report of one new root cause: its smallest example.
fn bug_report(r: &Report, oracle: &str, kind: &str, gs: &[&Group]) -> String {
    let g = gs
        .iter()
        .min_by_key(|g| crate::finding::data_stmts(&g.shown.case))
        .copied()
        .unwrap_or(gs[0]);
    let rec = &g.shown;
    let mut s = String::new();
    let level = rec
        .history
        .isolation
        .to_string()
        .to_uppercase()
        .replace('-', " ");
    let _ = writeln!(
        s,
        "# {} {}, {level}: {}\n",
        rec.engine.name, rec.engine.version, rec.finding.summary
    );
    let settings: Vec<String> = rec
        .engine
        .settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let _ = writeln!(s, "- Engine: {} {}", rec.engine.name, rec.engine.version);
    if !settings.is_empty() {
        let _ = writeln!(s, "- Settings: {}", settings.join(", "));
    }
    let _ = writeln!(s, "- Isolation level: {level}");
    let _ = writeln!(
        s,
        "- Found by: txfuzz {}, oracle `{oracle}`, finding kind `{kind}`; seed {} case {}",
        rec.txfuzz_version, rec.case.seed, rec.case.index
    );
    if let Some(sm) = &r.summary {
        let _ = writeln!(
            s,
            "- Campaign: {} cases, seed {}; this root cause: {} finding(s) in {} statement mix(es)",
            sm.cases,
            sm.seed,
            gs.iter().map(|g| g.count).sum::<usize>(),
            gs.len()
        );
    }
    if let Some((before, after)) = g.reduced {
        let _ = writeln!(s, "- Reduced from {before} to {after} data statement(s)");
    }
    if let Some(r) = &rec.releases {
        let _ = writeln!(s, "- Releases: {}", r.summary());
    }
    if !rec.replay.is_empty() {
        let _ = writeln!(s, "- Replay: `{}`", rec.replay);
    }
    let _ = writeln!(s, "\n## Observed and expected\n\n{}\n", rec.finding.summary);
    if let Ok(fix) = correction(rec, dialect(rec)) {
        let _ = writeln!(s, "{}\n", crate::export::judged_note(&fix));
    }
    if let Some(rule) = rec
        .finding
        .evidence
        .pointer("/details/rule")
        .and_then(|v| v.as_str())
    {
        let _ = writeln!(s, "Rule: {rule}\n");
    }
    reproduction(&mut s, rec);
    let evidence = serde_json::to_string_pretty(&rec.finding.evidence).unwrap_or_default();
    let _ = writeln!(s, "## Evidence\n\n```json\n{evidence}\n```");
    s
}

fn dialect(rec: &FindingRecord) -> crate::sql::Dialect {
    crate::engine::registry::dialect_of(&rec.engine.name).unwrap_or(crate::sql::Dialect::Sqlite)
}

/// The reproduction: the engine's own regression test where txfuzz writes
/// one (plain statements), else the finding's script (with the hidden
/// instrumentation columns).
fn reproduction(s: &mut String, rec: &FindingRecord) {
    let format = Format::for_engine(&rec.engine.name);
    let stem = stem_of(&format!("case{}", rec.case.index));
    if let Some(files) = format.and_then(|f| export(rec, f, &stem).ok()) {
        let _ = writeln!(
            s,
            "## Reproduce\n\nAs the engine's own regression test (what a correct engine prints is \
             the expected output; the test fails while the bug lives):\n"
        );
        for f in files {
            let lang = match f.name.rsplit('.').next() {
                Some("py") => "python",
                _ => "",
            };
            let _ = writeln!(s, "`{}`:\n\n```{lang}\n{}```\n", f.name, f.contents);
        }
        return;
    }
    let layout = match rec.plain_reproduces() {
        true => crate::sql::Layout::Plain,
        false => crate::sql::Layout::Instrumented,
    };
    let script = render_script_in(dialect(rec), &rec.case, Some(&rec.history), "", layout);
    let _ = writeln!(
        s,
        "## Reproduce\n\nThe statements in the order the engine ran them, one session per \
         `T<n>`:\n\n```sql\n{script}```\n"
    );
}
