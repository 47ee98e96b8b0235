//! The `graph` oracle (Elle, IsoRel, APTrans): the dependency graph of committed
//! transactions, recovered exactly from write lists, and the anomalies in it.
//!
//! - [`history`]: the checker history format (`txfuzz check` input) and the
//!   conversion from an executed txfuzz case.
//! - [`anomaly`]: anomaly specs and the consistency-model table, as data.
//! - [`check`]: version chains, non-cycle anomalies (G1a, G1b, never-existed
//!   versions, incompatible version orders, own writes), graph, SCCs, cycles.
//!
//! A finding names the anomaly and the weakest isolation level it violates; it
//! is reported only when the checked level forbids it, and it is
//! [`Verdict::Permitted`] when the engine profile permits it at that level.
//! Reads the history only — no re-execution.

pub mod anomaly;
pub mod check;
pub mod history;

use super::{Finding, Verdict};
use crate::model::Isolation;
pub use check::{analyse, Analysis, Anomaly, Stats};
pub use history::{CheckHistory, CheckTxn, FinalRow, Op, TxnStatus};
use serde_json::json;

/// Checks a history at `level`; `permitted` lists anomalies the engine's
/// design permits there (names or classes, see [`anomaly::base_of`]).
pub fn findings(h: &CheckHistory, level: Isolation, permitted: &[&str]) -> Vec<Finding> {
    let a = analyse(h);
    to_findings(&a, level, permitted)
}

pub fn to_findings(a: &Analysis, level: Isolation, permitted: &[&str]) -> Vec<Finding> {
    let note = (a.stats.unobserved_reads > 0).then(|| {
        format!(
            "{} statement(s) read rows that were not observed (predicate evaluation, aggregates, subqueries): predicate (G2) anomalies are not detected there, and no edges are invented for them",
            a.stats.unobserved_reads
        )
    });
    let mut out = Vec::new();
    for an in &a.anomalies {
        if !anomaly::level_forbids(level, an.name) {
            continue;
        }
        let (weakest, adya) = anomaly::weakest_level(an.name);
        let base = anomaly::base_of(an.name);
        let verdict = if permitted.contains(&an.name) || permitted.contains(&base) {
            Verdict::Permitted
        } else {
            Verdict::Violation
        };
        let title = if base != an.name {
            format!("{} ({base})", an.name)
        } else {
            an.name.to_string()
        };
        let summary = format!(
            "{title} among {}: violates {weakest} ({adya}) and stronger; {}",
            an.txns.join(", "),
            an.explanation.first().cloned().unwrap_or_default()
        );
        out.push(Finding {
            oracle: "graph".into(),
            kind: an.name.to_string(),
            verdict,
            summary,
            evidence: json!({
                "anomaly": an.name,
                "class": base,
                "weakest_violated_level": weakest.name(),
                "adya": adya,
                "checked_level": level.name(),
                "snapshot_isolation": if anomaly::si_forbids(an.name) { "forbidden" } else { "permitted" },
                "transactions": an.txns,
                "explanation": an.explanation,
                "dot": an.dot,
                "edges": an.edges,
                "unobserved_reads": note,
            }),
        });
    }
    if a.stats.suppressed > 0 {
        if let Some(f) = out.last_mut() {
            f.evidence["suppressed"] = json!(a.stats.suppressed);
        }
    }
    out
}

/// The oracle entry point for an executed case.
pub fn check(
    engine: &dyn crate::engine::Engine,
    case: &crate::model::TestCase,
    history: &crate::model::History,
) -> Vec<Finding> {
    let name = engine.info().name.clone();
    let h = CheckHistory::from_case(case, history, Some(&name));
    let level = case.isolation;
    let profile = engine.profile();
    let permitted: Vec<&str> = profile
        .permitted_anomalies
        .iter()
        .filter(|(l, _)| *l == level)
        .flat_map(|(_, list)| list.iter().map(String::as_str))
        .collect();
    let mut out = findings(&h, level, &permitted);
    if profile.savepoint_rollback_releases_locks {
        let rolled_back: Vec<String> = h
            .txns
            .iter()
            .filter(|t| t.savepoint_rollback)
            .map(|t| t.label.clone().unwrap_or_else(|| format!("T{}", t.id)))
            .collect();
        for f in &mut out {
            let involved = f.evidence["transactions"].as_array().is_some_and(|ts| {
                ts.iter().any(|t| {
                    t.as_str()
                        .is_some_and(|t| rolled_back.iter().any(|r| r == t))
                })
            });
            if involved && f.verdict == Verdict::Violation {
                f.verdict = Verdict::Permitted;
                f.evidence["note"] = SAVEPOINT_NOTE.into();
            }
        }
    }
    out
}

/// Why findings resting on a savepoint rollback are permitted on some engines.
pub const SAVEPOINT_NOTE: &str = "permitted: a transaction involved rolled back to a savepoint, and this engine releases the locks taken after the savepoint (engine profile savepoint_rollback_releases_locks)";
