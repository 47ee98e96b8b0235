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
    to_findings_about(a, level, &BTreeMap::new(), None)
}

/// The levels at which `an` is judged in a case of mixed levels (`level_of`
/// a transaction label): its readers' (a read edge counts at its reader's
/// level, Adya's mixed serialization graph), else, for a cycle of write
/// dependencies or a version anomaly, the strongest level involved.
fn judged_at(an: &FoundAnomaly, level_of: &dyn Fn(&str) -> Isolation) -> Vec<Isolation> {
    let mut levels: Vec<Isolation> = an.readers.iter().map(|r| level_of(r)).collect();
    if levels.is_empty() {
        levels.extend(an.txns.iter().map(|t| level_of(t)).max());
    }
    levels.sort();
    levels.dedup();
    levels
}

/// [`to_findings`], each finding about the statements of the transactions
/// it names (`statements`: by transaction label). With `level_of` (a case
/// of mixed levels), an anomaly is judged at its readers' levels
/// ([`judged_at`]): reported when one of them forbids it, and permitted
/// when one of them permits it.
fn to_findings_about(
    a: &Analysis,
    level: Isolation,
    statements: &BTreeMap<String, Vec<StmtRef>>,
    level_of: Option<&dyn Fn(&str) -> Isolation>,
) -> Vec<Finding> {
    let note = (a.stats.unobserved_reads > 0).then(|| {
        format!(
            "{} statement(s) read rows that were not observed (predicate evaluation, aggregates, subqueries): predicate (G2) anomalies are not detected there, and no edges are invented for them",
            a.stats.unobserved_reads
        )
    });
    let mut out = Vec::new();
    for an in &a.anomalies {
        let at = match level_of {
            Some(f) => judged_at(an, f),
            None => vec![level],
        };
        if !at.iter().any(|l| level_forbids(*l, an.name)) {
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
                "judged_at": level_of.map(|_| at.iter().map(|l| l.name()).collect::<Vec<_>>()),
                "snapshot_isolation": if si_forbids(an.name) { "forbidden" } else { "permitted" },
                "transactions": an.txns,
                "explanation": an.explanation,
                "dot": an.dot,
                "edges": an.edges,
                "unobserved_reads": note,
            }),
        );
        f.claim = Some(Claim::Anomaly {
            anomaly: an.name,
            at: match level_of {
                Some(_) => crate::model::LevelSet::of(at),
                None => Default::default(),
            },
            readers: crate::model::TxnSet::of(
                an.readers.iter().filter_map(|r| history::txn_of_label(r)),
            ),
        });
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
    of_case(&analyse(&h), case)
}

/// The findings of `a`, the analysis of an execution of `case`: about the
/// case's statements, and in a case of mixed levels judged at its readers'
/// levels.
pub fn of_case(a: &Analysis, case: &crate::model::TestCase) -> Vec<Finding> {
    let statements = history::statements_by_label(case);
    let level_of = |label: &str| match history::txn_of_label(label) {
        Some(id) => case.level_of(id),
        None => case.isolation,
    };
    let mixed: Option<&dyn Fn(&str) -> Isolation> = match case.mixed_levels() {
        true => Some(&level_of),
        false => None,
    };
    to_findings_about(a, case.isolation, &statements, mixed)
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

#[cfg(test)]
mod mixed_tests {
    //! Cases of mixed levels judged as Adya's mixed serialization graph: a
    //! read edge counts at its reader's level.
    use super::*;
    use crate::engine::registry;
    use crate::model::Anomaly;
    use crate::oracle::Verdict;

    fn cycle(name: Anomaly, txns: &[&str], readers: &[&str]) -> Analysis {
        Analysis {
            anomalies: vec![FoundAnomaly {
                name,
                txns: txns.iter().map(|s| s.to_string()).collect(),
                explanation: vec!["x".into()],
                dot: None,
                edges: json!([]),
                readers: readers.iter().map(|s| s.to_string()).collect(),
            }],
            stats: Default::default(),
        }
    }

    /// The verdict of `a` on `engine` with T1 at `t1` and T2 at `t2`:
    /// `None` when nothing is reported.
    fn verdict(engine: &str, a: &Analysis, t1: Isolation, t2: Isolation) -> Option<&'static str> {
        let level_of = |label: &str| match label {
            "T1" => t1,
            _ => t2,
        };
        let mut f = to_findings_about(a, t1, &BTreeMap::new(), Some(&level_of));
        let profile = (registry::kind(engine).unwrap().profile)(&Default::default());
        crate::oracle::verdict::apply(&mut f, &profile, t1);
        assert!(f.len() <= 1);
        f.first().map(|f| match f.verdict {
            Verdict::Violation => "violation",
            _ => "permitted",
        })
    }

    use Isolation::*;

    #[test]
    fn write_skew_is_permitted_when_one_reader_runs_where_it_is_documented() {
        // PostgreSQL: write skew (two rw edges, each read by its source).
        let ws = cycle(Anomaly::WriteSkew, &["T1", "T2"], &["T1", "T2"]);
        assert_eq!(
            verdict("postgres", &ws, Serializable, RepeatableRead),
            Some("permitted")
        );
        assert_eq!(
            verdict("postgres", &ws, Serializable, Serializable),
            Some("violation")
        );
    }

    #[test]
    fn a_lost_update_counts_at_its_readers_level_only() {
        // T1 read the row T2 then overwrote (T1 -rw-> T2), T2 -ww-> T1:
        // the one read edge is T1's.
        let lu = cycle(Anomaly::LostUpdate, &["T1", "T2"], &["T1"]);
        // T1 at SERIALIZABLE: the cycle stands, whatever T2's level.
        assert_eq!(
            verdict("postgres", &lu, Serializable, ReadCommitted),
            Some("violation")
        );
        // T1 at READ COMMITTED, which forbids no G-single: not reported,
        // although T2 runs at SERIALIZABLE.
        assert_eq!(verdict("postgres", &lu, ReadCommitted, Serializable), None);
        // T1 at MariaDB REPEATABLE READ, which documents lost updates:
        // permitted, with T2 at SERIALIZABLE.
        assert_eq!(
            verdict("mariadb", &lu, RepeatableRead, Serializable),
            Some("permitted")
        );
        assert_eq!(
            verdict("mariadb", &lu, Serializable, RepeatableRead),
            Some("violation")
        );
    }

    #[test]
    fn a_cycle_that_no_readers_level_forbids_is_not_reported() {
        // MariaDB READ UNCOMMITTED permits dirty reads: G1c whose only read
        // edge is an RU transaction's is not a finding at all.
        let g1c = cycle(Anomaly::G1c, &["T1", "T2"], &["T2"]);
        assert_eq!(
            verdict("mariadb", &g1c, Serializable, ReadUncommitted),
            None
        );
        assert_eq!(
            verdict("mariadb", &g1c, ReadUncommitted, Serializable),
            Some("violation")
        );
    }

    #[test]
    fn a_write_cycle_is_judged_at_the_strongest_level() {
        let g0 = cycle(Anomaly::G0, &["T1", "T2"], &[]);
        assert_eq!(
            verdict("mariadb", &g0, ReadUncommitted, Serializable),
            Some("violation")
        );
    }
}
