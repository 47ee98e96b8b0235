//! The findings of one comparison of a replay with the actual run: each kind
//! of difference kept with its claim, or dropped as undecided where the
//! order-dependent unique-key UPDATEs may explain it but cannot be shown to.

use super::*;

/// What the order-dependent unique-key UPDATEs of a replay may explain.
pub(super) struct Explainer<'a> {
    pub(super) case: &'a TestCase,
    /// The UPDATEs' tables, and the rows they wrote (`None`: not observed).
    pub(super) targets: BTreeSet<String>,
    pub(super) explained: Option<unique_order::ExplainedRows>,
    /// The statements after any of the UPDATEs, and their data statements.
    pub(super) later: BTreeSet<StmtRef>,
    pub(super) later_stmts: Vec<&'a Stmt>,
    /// Why a difference was dropped as undecided.
    pub(super) dropped: Option<Undecided>,
}

impl Explainer<'_> {
    /// `Some(claim)` keeps a finding; `None` drops it as undecided (and says why).
    fn decide(&mut self, scope: Scope, rows_ok: Option<bool>) -> Option<Option<Claim>> {
        match (scope, rows_ok) {
            (Scope::Explained, Some(true)) => Some(Some(Claim::UniqueCheckOrder)),
            (Scope::Explained, None) => {
                self.dropped = Some(Undecided::UniqueOrderUnobservedRows);
                None
            }
            (Scope::Cascade, _) => {
                self.dropped = Some(Undecided::UniqueOrderCascade);
                None
            }
            _ => Some(None),
        }
    }

    /// How far the UPDATEs explain differing statements `refs`: differing
    /// statements other than the UPDATEs are never explained by them; one
    /// that ran after them may be their cascade.
    fn effects(&self, refs: &mut dyn Iterator<Item = StmtRef>) -> Option<Scope> {
        let case = self.case;
        unique_order::combine(refs.filter_map(|r| Some((r, &case.stmt(r)?.stmt))).map(
            |(r, stmt)| {
                unique_order::effect_scope(
                    &self.targets,
                    stmt,
                    &self.later_stmts,
                    self.later.contains(&r),
                )
            },
        ))
    }
}

/// The finding for a final state that differs from the replay's (`diff`).
pub(super) fn final_state_finding(
    ex: &mut Explainer,
    level: &str,
    serial: &[String],
    diff: serde_json::Value,
) -> Option<Finding> {
    let scope = unique_order::scope(
        &ex.targets,
        &unique_order::diff_tables(&diff),
        &ex.later_stmts,
    );
    // Beyond the tables: only rows the UPDATEs wrote are explained.
    let rows_ok = unique_order::rows_explained(ex.explained.as_ref(), &diff);
    let claim = ex.decide(scope, rows_ok)?;
    let case = ex.case;
    let mut f = Finding::new(
        crate::oracle::OracleKind::Wss,
        &format!("{level}-final-state"),
        format!(
            "final state differs from the {level}-level serial replay in order {}",
            serial.join(" -> ")
        ),
        json!({ "serial_order": serial, "tables": diff }),
    )
    // Only writes change a final state.
    .about(
        case.all_refs()
            .filter(|r| case.stmt(*r).is_some_and(|cs| cs.stmt.kind().is_write())),
    );
    f.claim = claim;
    Some(f)
}

/// The finding for writes that succeeded or failed otherwise than in the
/// replay.
pub(super) fn write_outcome_finding(
    ex: &mut Explainer,
    level: &str,
    serial: &[String],
    writes: &[(StmtRef, bool, serde_json::Value)],
) -> Option<Finding> {
    let others = ex.effects(&mut writes.iter().filter(|w| !w.1).map(|w| w.0));
    let claim = match others {
        None => Some(Some(Claim::UniqueCheckOrder)),
        Some(scope) => ex.decide(scope, Some(false)),
    }?;
    let mut f = Finding::new(
        crate::oracle::OracleKind::Wss,
        &format!("{level}-write-outcome"),
        format!(
            "{} write(s) succeeded or failed differently than in the {level}-level serial replay",
            writes.len()
        ),
        json!({
            "serial_order": serial,
            "writes": writes.iter().map(|w| w.2.clone()).collect::<Vec<_>>(),
        }),
    )
    .about(writes.iter().map(|w| w.0));
    f.claim = claim;
    Some(f)
}

/// The finding for reads that returned other rows than in the replay.
pub(super) fn read_result_finding(
    ex: &mut Explainer,
    level: &str,
    serial: &[String],
    reads: &[(StmtRef, serde_json::Value)],
) -> Option<Finding> {
    let scope = ex
        .effects(&mut reads.iter().map(|r| r.0))
        .unwrap_or(Scope::Unexplained);
    let claim = ex.decide(scope, Some(false))?;
    let mut f = Finding::new(
        crate::oracle::OracleKind::Wss,
        &format!("{level}-read-result"),
        format!(
            "{} read(s) at SERIALIZABLE returned other rows than in the serial replay",
            reads.len()
        ),
        json!({
            "serial_order": serial,
            "reads": reads.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
        }),
    )
    .about(reads.iter().map(|r| r.0));
    f.claim = claim;
    Some(f)
}
