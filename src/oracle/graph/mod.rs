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
//! is reported only when the checked level forbids it. Each finding claims its
//! anomaly ([`Claim::Anomaly`]); the verdict policy makes it permitted when the
//! engine profile's documentation permits that anomaly at that level.
//! Reads the history only — no re-execution.

pub mod anomaly;
pub mod check;
pub mod history;

use super::verdict::Claim;
use super::Finding;
use crate::model::anomaly::{level_forbids, si_forbids, weakest_level};
use crate::model::{Isolation, StmtRef};
pub use check::{analyse, Analysis, FoundAnomaly, Stats};
pub use history::{CheckHistory, CheckTxn, FinalRow, Op, TxnStatus};
use serde_json::json;
use std::collections::BTreeMap;

/// Checks a history at `level`: the anomalies the level forbids, each a
/// violation claiming its anomaly (apply [`crate::oracle::verdict::apply`]
/// with the engine's profile for the verdict).
pub fn findings(h: &CheckHistory, level: Isolation) -> Vec<Finding> {
    let a = analyse(h);
    to_findings(&a, level)
}

pub fn to_findings(a: &Analysis, level: Isolation) -> Vec<Finding> {
    to_findings_about(a, level, &BTreeMap::new())
}

/// [`to_findings`], each finding about the statements of the transactions
/// it names (`statements`: by transaction label).
fn to_findings_about(
    a: &Analysis,
    level: Isolation,
    statements: &BTreeMap<String, Vec<StmtRef>>,
) -> Vec<Finding> {
    let note = (a.stats.unobserved_reads > 0).then(|| {
        format!(
            "{} statement(s) read rows that were not observed (predicate evaluation, aggregates, subqueries): predicate (G2) anomalies are not detected there, and no edges are invented for them",
            a.stats.unobserved_reads
        )
    });
    let mut out = Vec::new();
    for an in &a.anomalies {
        if !level_forbids(level, an.name) {
            continue;
        }
        let (weakest, adya) = weakest_level(an.name);
        let base = an.name.class();
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
        let mut f = Finding::new(
            crate::oracle::OracleKind::Graph,
            an.name.name(),
            summary,
            json!({
                "anomaly": an.name,
                "class": base,
                "weakest_violated_level": weakest.name(),
                "adya": adya,
                "checked_level": level.name(),
                "snapshot_isolation": if si_forbids(an.name) { "forbidden" } else { "permitted" },
                "transactions": an.txns,
                "explanation": an.explanation,
                "dot": an.dot,
                "edges": an.edges,
                "unobserved_reads": note,
            }),
        );
        f.claim = Some(Claim::Anomaly { anomaly: an.name });
        f = f.about(
            an.txns
                .iter()
                .filter_map(|l| statements.get(l))
                .flatten()
                .copied(),
        );
        out.push(f);
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
    let statements = history::statements_by_label(case);
    to_findings_about(&analyse(&h), case.isolation, &statements)
}

/// The `graph` oracle in the registry ([`crate::oracle::registry`]).
pub struct GraphOracle;

impl crate::oracle::Oracle for GraphOracle {
    fn replays(&self) -> bool {
        false
    }
    fn check(
        &self,
        cx: crate::oracle::CheckContext<'_>,
    ) -> Result<Vec<Finding>, crate::engine::EngineError> {
        Ok(check(cx.engine, cx.case, cx.history))
    }
}
