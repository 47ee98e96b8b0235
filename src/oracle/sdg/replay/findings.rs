//! The findings of a replay comparison: what its differences claim where
//! order-dependent unique-key UPDATEs may explain them, and the findings
//! that keep them.

use super::*;

/// What the differences of a replay claim: per kind (statement results, final
/// state), `None` where order-dependent unique checks may explain them but
/// cannot be shown to, else the finding's claim; and why such a difference
/// leaves the comparison undecided.
pub(super) struct Claims {
    pub(super) stmt: Option<Option<Claim>>,
    pub(super) state: Option<Option<Claim>>,
    pub(super) undecided: Option<&'static str>,
}

/// The claims of the differences `m` and `state`: those explained by the
/// order-dependent unique-key UPDATEs (and what they may cascade to).
pub(super) fn claims(
    r: &Refined,
    order: &[u32],
    m: &Mismatches,
    state: Option<&serde_json::Value>,
    stmt_of: &HashMap<u32, &Stmt>,
) -> Claims {
    let later_ops = after_unique_updates(r, order, &m.unique);
    let later: Vec<&Stmt> = later_ops
        .iter()
        .filter_map(|op| stmt_of.get(op).copied())
        .collect();
    let mut undecided_by_cascade = false;
    let mut rows_unobserved = false;
    // Differing statements other than the UPDATEs are never explained by
    // them; one that ran after them may be their cascade.
    let stmt_scope = unique_order::combine(
        m.other_ops
            .iter()
            .filter_map(|op| Some((op, *stmt_of.get(op)?)))
            .map(|(op, stmt)| {
                unique_order::effect_scope(&m.targets, stmt, &later, later_ops.contains(op))
            }),
    );
    let stmt_claim = match (m.unique.is_empty(), stmt_scope) {
        (true, _) => Some(None),
        (false, None) => Some(Some(Claim::UniqueCheckOrder)),
        (false, Some(Scope::Cascade)) => {
            undecided_by_cascade = true;
            None
        }
        (false, Some(_)) => Some(None),
    };
    let state_claim = state.and_then(|d| {
        let scope = unique_order::scope(&m.targets, &unique_order::diff_tables(d), &later);
        // Beyond the tables: only rows the UPDATEs wrote are explained.
        match (scope, unique_order::rows_explained(m.explained.as_ref(), d)) {
            (Scope::Explained, Some(true)) => Some(Some(Claim::UniqueCheckOrder)),
            (Scope::Explained, None) => {
                rows_unobserved = true;
                None
            }
            (Scope::Cascade, _) => {
                undecided_by_cascade = true;
                None
            }
            _ => Some(None),
        }
    });
    let undecided = match (undecided_by_cascade, rows_unobserved) {
        (true, _) => Some("unique-order-cascade"),
        (false, true) => Some("unique-order-unobserved-rows"),
        _ => None,
    };
    Claims {
        stmt: stmt_claim,
        state: state_claim,
        undecided,
    }
}

/// The findings of the differing statements (`m`) and final state
/// (`state`) that `claims` keeps.
pub(super) fn replay_findings(
    r: &Refined,
    order_labels: &[String],
    label: &dyn Fn(&u32) -> String,
    m: &Mismatches,
    state: Option<serde_json::Value>,
    claims: &Claims,
) -> Vec<Finding> {
    let evidence = |extra: serde_json::Value| replay_evidence(r, order_labels, label, extra);
    let mut out = Vec::new();
    if let (false, Some(claim)) = (m.rows.is_empty(), claims.stmt) {
        let mut f = Finding::new(
            crate::oracle::OracleKind::Sdg,
            "stmt-result",
            format!(
                "{} statement(s) gave other results without transactions, in dependency order {}",
                m.rows.len(),
                order_labels.join(" -> ")
            ),
            evidence(json!({ "statements": m.rows })),
        );
        f.claim = claim;
        out.push(f);
    }
    if let (Some(diff), Some(claim)) = (state, claims.state) {
        let mut f = Finding::new(
            crate::oracle::OracleKind::Sdg,
            "final-state",
            format!(
                "final state differs from the non-transactional replay in dependency order {}",
                order_labels.join(" -> ")
            ),
            evidence(json!({ "tables": diff })),
        );
        f.claim = claim;
        out.push(f);
    }
    out
}
