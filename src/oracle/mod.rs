//! Oracles: each answers one question about an executed case, independently.
//! A [`Finding`] is a verdict with evidence; infrastructure failures are
//! [`EngineError`]s, never findings.

pub mod cascade;
pub mod commit_order;
pub mod crash;
pub mod fidelity;
pub mod graph;
pub mod integrity;
pub mod pattern;
pub mod registry;
pub mod resumed;
pub mod sdg;
pub mod unique_order;
pub mod verdict;
pub mod view;
pub mod wss;

pub use registry::{CheckContext, Oracle, OracleKind};

use crate::engine::{Engine, EngineError};
use crate::exec::ExecOptions;
use crate::model::{History, StmtRef, TestCase};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Whether a finding is a bug or behaviour the engine documents as permitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Violation,
    Permitted,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The oracle that found it.
    pub oracle: OracleKind,
    /// What kind of discrepancy, e.g. `tx-final-state`, `hang`.
    pub kind: String,
    pub verdict: Verdict,
    /// One line a person reads first.
    pub summary: String,
    /// Machine-readable details (diffs, serial order, statements involved).
    pub evidence: serde_json::Value,
    /// The documented behaviour the oracle says explains the finding; only
    /// the verdict policy ([`verdict::apply`]) turns it into `permitted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<verdict::Claim>,
    /// The profile fact, with its source, that permits the finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permitted_by: Option<verdict::Permit>,
    /// The known engine bug a violation matches (`finding::known`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<verdict::KnownMatch>,
    /// The statements the finding is about (its signature's features come
    /// from them); empty: the whole case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub involved: Vec<StmtRef>,
}

impl Finding {
    /// A violation found by `oracle` (no claim, not known yet).
    pub fn new(
        oracle: OracleKind,
        kind: &str,
        summary: String,
        evidence: serde_json::Value,
    ) -> Finding {
        Finding {
            oracle,
            kind: kind.into(),
            verdict: Verdict::Violation,
            summary,
            evidence,
            claim: None,
            permitted_by: None,
            known: None,
            involved: Vec::new(),
        }
    }
    /// The finding, about the statements `refs` (sorted, without duplicates).
    pub fn about(mut self, refs: impl IntoIterator<Item = StmtRef>) -> Finding {
        let mut refs: Vec<StmtRef> = refs.into_iter().collect();
        refs.sort();
        refs.dedup();
        self.involved = refs;
        self
    }
    /// A violation that matches no known issue.
    pub fn is_new_violation(&self) -> bool {
        self.verdict == Verdict::Violation && self.known.is_none()
    }
    /// A violation that matches a known issue.
    pub fn is_known_violation(&self) -> bool {
        self.verdict == Verdict::Violation && self.known.is_some()
    }
    /// The verdict in words: `violation`, `known violation (id)` or
    /// `permitted (by fact)`.
    pub fn verdict_text(&self) -> String {
        match (&self.known, self.verdict) {
            (Some(k), _) => format!("known violation ({})", k.id),
            (None, Verdict::Violation) => "violation".into(),
            (None, Verdict::Permitted) => format!(
                "permitted (by {})",
                self.permitted_by.as_ref().map_or("?", |p| p.fact.as_str())
            ),
        }
    }
}

/// Statistics an oracle run contributes to the campaign summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckStats {
    /// Re-executions of the case (serial replays).
    pub replays: u64,
    /// Checks that could not be decided soundly (e.g. stmt-level with ROLLBACK TO).
    pub undecided: u64,
    /// Per-oracle counts (`sdg`, `view`): cases checked, undecided, discarded by reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_oracle: BTreeMap<String, OracleCounts>,
    /// Seconds by phase (`execute`, each oracle by name): where the case's
    /// time went (`summary.json` `phase_s`). Not serialised: it differs from
    /// run to run.
    #[serde(skip)]
    pub seconds: BTreeMap<String, f64>,
}

/// What one oracle did with the cases it saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OracleCounts {
    /// Cases the oracle decided (violation or not).
    pub checked: u64,
    /// Cases it could not compare soundly (counted, never reported as violations).
    pub undecided: u64,
    /// Undecided cases by reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub undecided_by: BTreeMap<String, u64>,
    /// Cases it dropped before checking, by reason (`decycling`, `blocking`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub discarded: BTreeMap<String, u64>,
}

impl OracleCounts {
    pub fn add(&mut self, other: &OracleCounts) {
        self.checked += other.checked;
        self.undecided += other.undecided;
        for (k, v) in &other.discarded {
            *self.discarded.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.undecided_by {
            *self.undecided_by.entry(k.clone()).or_default() += v;
        }
    }
}

impl CheckStats {
    /// Adds the time since `since` to `phase`.
    pub fn time(&mut self, phase: &str, since: std::time::Instant) {
        *self.seconds.entry(phase.to_string()).or_default() += since.elapsed().as_secs_f64();
    }

    /// The counts of oracle `name`, created on first use.
    pub fn oracle(&mut self, name: &str) -> &mut OracleCounts {
        self.per_oracle.entry(name.to_string()).or_default()
    }
}

/// Runs one oracle on an executed case, then the verdict policy. Oracles
/// that re-execute reset `engine`; `Fidelity` loads the case again without
/// instrumentation, so it runs last.
pub fn check(
    kind: OracleKind,
    engine: &mut dyn Engine,
    case: &TestCase,
    history: &History,
    opts: &ExecOptions,
    stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    // A cursor is judged as its SELECT limited to the rows its steps
    // returned; the shadow run replays the case as it ran.
    let limited = match kind {
        OracleKind::Fidelity => None,
        _ => crate::model::cursor::with_limits(case, history),
    };
    let case = limited.as_ref().unwrap_or(case);
    if history.internal_error() && !kind.oracle().judges_after_internal_errors() {
        let counts = stats.oracle(kind.name());
        counts.undecided += 1;
        *counts
            .undecided_by
            .entry("internal-error".into())
            .or_default() += 1;
        return Ok(Vec::new());
    }
    let cx = CheckContext {
        engine: &mut *engine,
        case,
        history,
        opts,
        stats,
    };
    let mut findings = kind.oracle().check(cx)?;
    verdict::apply_to_case(&mut findings, engine.profile(), case);
    Ok(findings)
}
