//! The `integrity` oracle: do the declared constraints hold in every state the
//! case shows? No isolation level, on any engine, permits a committed state
//! that breaks a declared constraint, so the final state (committed by every
//! transaction of the case) is judged without a model of the level. The row
//! set each single-table SELECT returned is checked too; where a read may
//! show a state no transaction committed (another transaction's uncommitted
//! rows, or the reader's snapshot next to its own writes) the finding claims
//! that behaviour and the profile decides (`reads.rs`).
//!
//! Kinds, one finding per broken constraint and state:
//! - `foreign-key`: a child row whose non-NULL key matches no parent row
//!   (MATCH SIMPLE: a key with a NULL is not checked), in the final state
//!   or in one transaction's snapshot (a child row one plain SELECT
//!   returned, and a read of the whole parent table without its key);
//! - `unique`: two rows with the same primary or unique key (NULLs distinct,
//!   as the profile says), or a read that returned one row (one `rid`) twice;
//! - `not-null`: a NULL in a column declared NOT NULL;
//! - `check`: a row for which the engine itself evaluates a CHECK
//!   expression to false (`checks.rs`).
//!
//! Each finding names the rows, the statements that wrote them (their write
//! lists) and whether those statements' transactions committed; a foreign-key
//! finding also names the statements that removed the missing parent key.

mod checks;
mod keys;
mod provenance;
mod reads;
mod state;

#[cfg(test)]
mod tests;

use super::{Finding, OracleKind};
use crate::engine::{Engine, EngineError, EngineProfile};
use crate::model::{History, StmtRef, TestCase, Value};
use provenance::Provenance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use provenance::Writer;
pub use state::StateRow;

/// Which state broke the constraint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum StateRef {
    /// The final state, after every transaction of the case ended.
    Final,
    /// The rows one SELECT returned.
    Read { stmt: StmtRef },
    /// The rows several plain SELECTs of one transaction returned from its
    /// one snapshot ([`KeyRules::one_snapshot`]).
    Snapshot { txn: u32, reads: Vec<StmtRef> },
}

/// One row of the evidence: where it is, its values, who wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowEvidence {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rid: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wl: Option<String>,
    /// Column name to value (the columns the finding is about).
    pub values: BTreeMap<String, Value>,
    /// The statements in the row's write list, oldest first (`op` 0: the
    /// initial data).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writers: Vec<Writer>,
}

impl RowEvidence {
    /// A row version a statement read (its values are not known).
    pub(crate) fn version(v: &crate::model::RowVersion, prov: &Provenance) -> RowEvidence {
        RowEvidence {
            rid: Some(v.rid),
            wl: Some(v.wl.to_string()),
            values: BTreeMap::new(),
            writers: prov.writers(Some(&v.wl)),
        }
    }
}

/// The evidence of an `integrity` finding (typed; stored as its JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    #[serde(flatten)]
    pub state: StateRef,
    pub table: String,
    /// The constraint as declared, e.g. `FOREIGN KEY (c1) REFERENCES t0 (c0)`.
    pub constraint: String,
    /// The rows that break it (for `unique`: the rows sharing a key, group
    /// after group).
    pub rows: Vec<RowEvidence>,
    /// `foreign-key`: the parent key values no parent row has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_parent_keys: Vec<Vec<Value>>,
    /// `foreign-key`: the committed statements that deleted a parent row
    /// holding a missing key, or may have removed one (key UPDATEs, writes
    /// not observed, foreign-key actions); empty: no statement of the case
    /// touched such a row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parent_removed_by: Vec<Writer>,
}

impl Evidence {
    /// The evidence of a broken constraint other than a foreign key.
    pub(crate) fn of(
        state: &StateRef,
        table: &str,
        constraint: String,
        rows: Vec<RowEvidence>,
    ) -> Evidence {
        Evidence {
            state: state.clone(),
            table: table.to_string(),
            constraint,
            rows,
            missing_parent_keys: Vec::new(),
            parent_removed_by: Vec::new(),
        }
    }

    /// Every statement the evidence names (the finding's `involved`).
    fn statements(&self) -> Vec<StmtRef> {
        let mut out: Vec<StmtRef> = self
            .rows
            .iter()
            .flat_map(|r| r.writers.iter())
            .chain(&self.parent_removed_by)
            .filter_map(|w| w.stmt)
            .collect();
        match &self.state {
            StateRef::Read { stmt } => out.push(*stmt),
            StateRef::Snapshot { reads, .. } => out.extend(reads),
            StateRef::Final => {}
        }
        out
    }
}

/// The profile's key semantics the checks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRules {
    /// NULLs are distinct in a UNIQUE key ([`EngineProfile::unique_nulls_distinct`]).
    pub nulls_distinct: bool,
    /// At the case's level, the plain SELECTs of a transaction all read one
    /// snapshot (the profile's rule: snapshot reads, taken once per
    /// transaction, not turned into locking reads): SQLite, turso, MariaDB
    /// REPEATABLE READ, PostgreSQL REPEATABLE READ and SERIALIZABLE.
    pub one_snapshot: bool,
}

impl KeyRules {
    /// The rules of `case` on `profile`; with levels or start modes mixed,
    /// `one_snapshot` only where every transaction's rule has it.
    pub fn of(profile: &EngineProfile, case: &crate::model::TestCase) -> KeyRules {
        use crate::engine::profile::{SnapshotPoint, ViewRule};
        let one_snapshot = case.txns.iter().all(|t| {
            profile.rule_of(case, t.id).is_some_and(|r| {
                r.plain_read == ViewRule::Snapshot
                    && r.snapshot != SnapshotPoint::EachStatement
                    && !r.plain_read_is_locking
            })
        });
        KeyRules {
            nulls_distinct: profile.unique_nulls_distinct,
            one_snapshot,
        }
    }
}

/// A broken constraint before it becomes a finding.
pub(crate) struct Broken {
    pub kind: &'static str,
    pub summary: String,
    pub evidence: Evidence,
    /// The documented behaviour that may explain it (only the verdict
    /// policy decides).
    pub claim: Option<super::verdict::Claim>,
}

impl Broken {
    fn into_finding(self) -> Finding {
        let involved = self.evidence.statements();
        let evidence = serde_json::to_value(&self.evidence).unwrap_or_default();
        let mut f =
            Finding::new(OracleKind::Integrity, self.kind, self.summary, evidence).about(involved);
        f.claim = self.claim;
        f
    }
}

/// Every broken constraint of the case: in its final state (CHECKs evaluated
/// by `engine`, when given) and in the rows its SELECTs returned.
pub fn check(
    engine: Option<&mut dyn Engine>,
    rules: KeyRules,
    case: &TestCase,
    history: &History,
) -> Checked {
    let prov = Provenance::new(case, history);
    // A case whose initial rows already break a key (a hand-written or
    // reduced case: the loader turns foreign-key checks off) says nothing
    // about the engine.
    let initial = state::initial_rows(case);
    let initially_broken = !keys::not_null(case, &initial, &prov, &StateRef::Final).is_empty()
        || !keys::unique(case, rules, &initial, &prov, &StateRef::Final).is_empty()
        || !keys::foreign_keys(case, &initial, &prov).is_empty();
    if initially_broken {
        return Checked {
            findings: Vec::new(),
            checks_unevaluated: false,
            initial_state_broken: true,
            server_failure: None,
        };
    }
    let mut broken = Vec::new();
    let mut unevaluated = false;
    let mut server_failure = None;
    if history.final_state_error.is_none() {
        let rows = state::final_rows(case, history);
        broken.extend(keys::not_null(case, &rows, &prov, &StateRef::Final));
        broken.extend(keys::unique(case, rules, &rows, &prov, &StateRef::Final));
        broken.extend(keys::foreign_keys(case, &rows, &prov));
        if let Some(engine) = engine {
            match checks::check_constraints(engine, case, &rows, &prov) {
                Ok(b) => broken.extend(b),
                // A server that stopped answering is the case's crash
                // finding, not this oracle's blind spot.
                Err(e) if e.is_server_failure() => server_failure = Some(e),
                // The other findings need no engine: keep them, and count
                // the CHECKs that could not be evaluated.
                Err(e) => {
                    tracing::warn!("integrity: CHECK constraints not evaluated: {e}");
                    unevaluated = true;
                }
            }
        }
    }
    broken.extend(reads::duplicates(case, rules, history, &prov));
    broken.extend(reads::orphans_in_snapshot(case, rules, history, &prov));
    Checked {
        findings: broken.into_iter().map(Broken::into_finding).collect(),
        checks_unevaluated: unevaluated,
        initial_state_broken: false,
        server_failure,
    }
}

/// What [`check`] found, and why part of it could not be judged (each
/// counted undecided with its reason).
pub struct Checked {
    pub findings: Vec<Finding>,
    pub checks_unevaluated: bool,
    /// The case's initial rows break a key: nothing judged
    /// (`initial-state-broken`).
    pub initial_state_broken: bool,
    /// The server did not answer (or went away) while a CHECK was being
    /// evaluated: the oracle adds the crash finding to the others.
    pub server_failure: Option<EngineError>,
}

/// The `integrity` oracle in the registry ([`crate::oracle::registry`]).
pub struct IntegrityOracle;

impl super::Oracle for IntegrityOracle {
    fn replays(&self) -> bool {
        false
    }
    fn check(&self, cx: super::CheckContext<'_>) -> Result<Vec<Finding>, EngineError> {
        let rules = KeyRules::of(cx.engine.profile(), cx.case);
        let mut out = check(Some(cx.engine), rules, cx.case, cx.history);
        if let Some(e) = &out.server_failure {
            out.findings.push(super::crash::server_failure(e));
            return Ok(out.findings);
        }
        let counts = cx.stats.oracle(OracleKind::Integrity.name());
        let reason = if out.initial_state_broken {
            Some("initial-state-broken")
        } else if out.checks_unevaluated {
            Some("check-unevaluated")
        } else {
            None
        };
        match reason {
            Some(r) => {
                counts.undecided += 1;
                *counts.undecided_by.entry(r.into()).or_default() += 1;
            }
            None => counts.checked += 1,
        }
        Ok(out.findings)
    }
}
