//! The report page: plain HTML with inline CSS and SVG. Every text that comes
//! from a case or an engine (SQL strings included) is escaped.

use super::escape::esc;
use super::{svg, Group, Report};
use crate::finding::render_script;
use crate::sql::Dialect;
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1100px}\
h1{font-size:26px}h2{font-size:20px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:28px}\
h3{font-size:17px;margin:0 0 6px}table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:3px 10px;text-align:left}\
th{background:#f6f8fa}section.finding{border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;margin:14px 0}\
.violation{color:#d1242f}.permitted{color:#9a6700}.known{color:#8250df}code.sig{font-size:12px;background:#f6f8fa;padding:2px 4px}\
pre{background:#f6f8fa;padding:10px;overflow-x:auto;font-size:12px;white-space:pre-wrap}.muted{color:#59636e}";

/// The SQL dialect of the engine a finding was recorded on (the registry's;
/// SQLite's for an engine txfuzz does not know, as the script is only shown).
fn dialect_of(engine: &str) -> Dialect {
    crate::engine::registry::dialect_of(engine).unwrap_or(Dialect::Sqlite)
}

pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>txfuzz report: {}</title><style>{STYLE}</style></head><body>\n<h1>txfuzz report</h1>\n<p class=\"muted\">{}</p>\n",
        esc(&r.dir.display().to_string()),
        esc(&r.dir.display().to_string())
    );
    causes(&mut s, r);
    summary(&mut s, r);
    let _ = writeln!(
        s,
        "<h2 id=\"findings\">Findings by signature: {} signature(s), {} finding(s)</h2>",
        r.groups.len(),
        r.groups.iter().map(|g| g.count).sum::<usize>()
    );
    if r.groups.is_empty() {
        s.push_str("<p>No findings.</p>\n");
    }
    for g in &r.groups {
        group(&mut s, g);
    }
    s.push_str("</body></html>\n");
    s
}

/// The anchor of a group's section.
fn anchor(g: &Group) -> String {
    match &g.shown.finding.known {
        // Known and new violations of one signature are separate groups.
        Some(k) => format!("{}-{}", g.signature.id(), k.id),
        None => g.signature.id(),
    }
}

/// What needs a person first: the root causes (`markdown::cause`), new
/// violations first, each linked to its first signature below.
fn causes(s: &mut String, r: &Report) {
    use super::markdown::{by_cause, Cause};
    let causes = by_cause(r);
    let new = causes
        .keys()
        .filter(|c| matches!(c, Cause::New { .. }))
        .count();
    let _ = writeln!(
        s,
        "<h2 id=\"causes\">Needs a person: {new} new violation(s); {} root cause(s) in all</h2>",
        causes.len()
    );
    if causes.is_empty() {
        s.push_str("<p>No findings.</p>\n");
        return;
    }
    s.push_str("<table id=\"causes-table\"><tr><th>class</th><th>root cause</th><th>findings</th><th>statement mixes</th><th>first</th></tr>\n");
    for (c, gs) in &causes {
        let (class, css, what) = match c {
            Cause::New { oracle, kind } => {
                ("new violation", "violation", format!("{oracle}:{kind}"))
            }
            Cause::Known { id } => ("known engine bug", "known", id.clone()),
            Cause::Fidelity { kind } => ("fidelity", "permitted", format!("fidelity:{kind}")),
            Cause::Permitted { fact } => ("permitted (documented)", "permitted", fact.clone()),
        };
        let _ = writeln!(
            s,
            "<tr><td class=\"{css}\">{class}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td><a href=\"#sig-{}\">{}</a></td></tr>",
            esc(&what),
            gs.iter().map(|g| g.count).sum::<usize>(),
            gs.len(),
            esc(&anchor(gs[0])),
            esc(&gs[0].signature.isolation)
        );
    }
    s.push_str("</table>\n<p class=\"muted\">report.md has the same table and a bug report per new violation (reports/).</p>\n");
}

/// `a: 3, b: 1`, or `-`.
fn counts(map: &std::collections::BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    parts.join(", ")
}

fn summary(s: &mut String, r: &Report) {
    s.push_str("<h2 id=\"summary\">Campaign summary</h2>\n");
    let Some(sm) = &r.summary else {
        s.push_str("<p>No summary.json in this directory.</p>\n");
        return;
    };
    let levels: Vec<&str> = sm.isolations.iter().map(|i| i.name()).collect();
    let rows: Vec<(&str, String)> = vec![
        (
            "engine",
            format!("{} {}", sm.engine.name, sm.engine.version),
        ),
        ("seed", sm.seed.to_string()),
        ("isolation levels", levels.join(", ")),
        ("oracles", sm.oracles.join(", ")),
        ("cases", sm.cases.to_string()),
        ("transactions", sm.transactions.to_string()),
        ("statements", sm.statements.to_string()),
        ("blocked events", sm.blocked_events.to_string()),
        ("aborts", sm.aborts.to_string()),
        ("replays", sm.replays.to_string()),
        ("violations", sm.violations.to_string()),
        (
            "query bugs (a statement alone answers wrongly)",
            sm.query_bugs.to_string(),
        ),
        ("known violations", sm.known_violations.to_string()),
        ("permitted", sm.permitted.to_string()),
        (
            "fidelity (txfuzz changed the engine's behaviour)",
            sm.fidelity.to_string(),
        ),
        (
            "undecided cases (all oracles)",
            sm.undecided_cases().to_string(),
        ),
        ("known violations by issue", counts(&sm.known_by)),
        ("permitted by profile fact", counts(&sm.permitted_by)),
        ("distinct problems", r.groups.len().to_string()),
        ("elapsed", format!("{:.1} s", sm.elapsed_s)),
        ("cases/s", format!("{:.1}", sm.cases_per_s)),
        (
            "transactions/hour",
            format!("{:.0}", sm.transactions_per_hour),
        ),
    ];
    s.push_str("<table id=\"summary-table\">\n");
    for (k, v) in rows {
        let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    s.push_str("</table>\n");
    if let Some(why) = &sm.stopped {
        let _ = writeln!(s, "<p class=\"violation\">Stopped early: {}</p>", esc(why));
    }
    if let Some(inc) = &sm.incomplete {
        let _ = writeln!(
            s,
            "<p class=\"violation\" id=\"incomplete\">Incomplete merge: {}</p>",
            esc(&inc.sentence())
        );
    }
    s.push_str("<h2 id=\"throughput\">Throughput over time</h2>\n");
    s.push_str(&svg::throughput(&sm.timeline));
    s.push('\n');
}

fn group(s: &mut String, g: &Group) {
    let sig = &g.signature;
    let rec = &g.shown;
    let _ = write!(
        s,
        "<section class=\"finding\" id=\"sig-{}\">\n<h3><span class=\"{}\">{}</span> {}:{} on {} at {} &mdash; {} finding(s)</h3>\n<p><code class=\"sig\">{}</code></p>\n<p>{}</p>\n",
        esc(&anchor(g)),
        esc(&sig.verdict),
        esc(&sig.verdict),
        esc(&sig.oracle),
        esc(&sig.kind),
        esc(&sig.engine),
        esc(&sig.isolation),
        g.count,
        esc(&sig.key()),
        esc(&rec.finding.summary)
    );
    known_and_permitted(s, g);
    let _ = write!(
        s,
        "<p class=\"muted\">smallest example: {}",
        esc(&g.example.display().to_string())
    );
    match g.reduced {
        Some((b, a)) => {
            let _ = write!(
                s,
                "; reduced from {b} to {a} data statement(s), {} transaction(s)",
                rec.case.txns.len()
            );
        }
        None => s.push_str("; not reduced"),
    }
    s.push_str("</p>\n");
    explanation(s, g);
    let header = format!(
        "txfuzz finding: {} [{}:{}]\nengine: {} {}",
        rec.finding.summary,
        rec.finding.oracle,
        rec.finding.kind,
        rec.engine.name,
        rec.engine.version
    );
    let script = render_script(
        dialect_of(&rec.engine.name),
        &rec.case,
        Some(&rec.history),
        &header,
    );
    let _ = write!(s, "<pre class=\"sql\">{}</pre>\n</section>\n", esc(&script));
}

/// The known issue a group's finding matches and the fact that permits it,
/// where there are.
fn known_and_permitted(s: &mut String, g: &Group) {
    let rec = &g.shown;
    if let Some(k) = &rec.finding.known {
        let _ = writeln!(
            s,
            "<p class=\"known\">known issue <b>{}</b>: {} ({})</p>",
            esc(&k.id),
            esc(&k.description),
            esc(&k.reference)
        );
    }
    if let Some(p) = &rec.finding.permitted_by {
        let _ = writeln!(
            s,
            "<p class=\"permitted\">permitted by <b>{}</b>: {} (shown by {})</p>",
            esc(&p.fact),
            esc(&p.doc),
            esc(&p.test)
        );
    }
}

/// The explanation of a group's finding as a list, and its cycle as SVG,
/// where the evidence has them.
fn explanation(s: &mut String, g: &Group) {
    let rec = &g.shown;
    if let Some(ex) = rec
        .finding
        .evidence
        .get("explanation")
        .and_then(|e| e.as_array())
    {
        s.push_str("<ol class=\"explanation\">\n");
        for line in ex.iter().filter_map(|l| l.as_str()) {
            let _ = writeln!(s, "<li>{}</li>", esc(line));
        }
        s.push_str("</ol>\n");
    }
    if let Some(edges) = rec.finding.evidence.get("edges") {
        if let Some(svg) = svg::cycle(edges) {
            s.push_str(&svg);
            s.push('\n');
        }
    }
}
