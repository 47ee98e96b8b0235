//! Converting an executed txfuzz case into a checker history: its
//! transactions (autocommit statements and explicit transactions), the
//! writes undone by ROLLBACK TO SAVEPOINT, and the final state.

use super::*;
use crate::model::{CaseStmt, Outcome, Schema, Txn};

/// The outcome of each executed statement, by statement.
pub(super) type Outcomes<'h> = std::collections::HashMap<StmtRef, &'h Outcome>;

/// The statements of `t` that ran (index, statement, outcome), in order.
fn executed<'a>(
    t: &'a Txn,
    outcomes: &'a Outcomes<'a>,
) -> impl Iterator<Item = (usize, &'a CaseStmt, &'a Outcome)> + 'a {
    t.stmts.iter().enumerate().filter_map(move |(i, cs)| {
        let r = StmtRef {
            txn: t.id,
            index: i as u32,
        };
        outcomes.get(&r).map(|&out| (i, cs, out))
    })
}

/// Appends one transaction per executed statement of autocommit session `t`
/// (its session is the autocommit session), numbered from `next_id` on.
pub(super) fn autocommit_txns(
    t: &Txn,
    schema: &Schema,
    outcomes: &Outcomes,
    next_id: &mut u64,
    txns: &mut Vec<CheckTxn>,
) {
    for (i, cs, out) in executed(t, outcomes) {
        let committed = out.autocommit_committed();
        let mut ops = Vec::new();
        push_ops(&mut ops, schema, cs, out, out.error.is_some());
        txns.push(CheckTxn {
            id: *next_id,
            session: t.id as u64,
            status: if committed {
                TxnStatus::Committed
            } else {
                TxnStatus::Aborted
            },
            label: Some(autocommit_label(t.id, i)),
            savepoint_rollback: false,
            ops,
        });
        *next_id += 1;
    }
}

/// Explicit transaction `t` as transaction `id` of its own session: the ops
/// of its data statements, with writes undone by ROLLBACK TO SAVEPOINT marked.
pub(super) fn explicit_txn(
    t: &Txn,
    schema: &Schema,
    history: &History,
    outcomes: &Outcomes,
    id: u64,
) -> CheckTxn {
    let status = match history.txn_end(t.id) {
        Some(TxnEnd::Committed) => TxnStatus::Committed,
        _ => TxnStatus::Aborted,
    };
    let mut ops: Vec<Op> = Vec::new();
    let mut savepoints: Vec<(String, usize)> = Vec::new();
    let mut rolled_back = false;
    for (_, cs, out) in executed(t, outcomes) {
        if out.ok() && savepoint_step(&cs.stmt, &mut ops, &mut savepoints) {
            rolled_back = true;
        }
        if matches!(
            cs.stmt.kind(),
            StmtKind::Select | StmtKind::Insert | StmtKind::Update | StmtKind::Delete
        ) {
            push_ops(&mut ops, schema, cs, out, out.error.is_some());
        }
    }
    CheckTxn {
        id,
        session: t.id as u64,
        status,
        label: Some(txn_label(t.id)),
        savepoint_rollback: rolled_back,
        ops,
    }
}

/// Applies a successful SAVEPOINT or ROLLBACK TO SAVEPOINT to the savepoint
/// stack (ops index at each savepoint); whether writes were rolled back
/// (marked undone).
fn savepoint_step(stmt: &Stmt, ops: &mut [Op], savepoints: &mut Vec<(String, usize)>) -> bool {
    match stmt {
        Stmt::Savepoint(name) => {
            savepoints.retain(|(n, _)| n != name);
            savepoints.push((name.clone(), ops.len()));
            false
        }
        Stmt::Release(name) => {
            if let Some(p) = savepoints.iter().rposition(|(n, _)| n == name) {
                savepoints.truncate(p);
            }
            false
        }
        Stmt::RollbackTo(name) => {
            let Some(p) = savepoints.iter().position(|(n, _)| n == name) else {
                return false;
            };
            let start = savepoints[p].1;
            savepoints.truncate(p + 1);
            for op in &mut ops[start..] {
                if let Op::Write { undone, .. } | Op::UnobservedWrite { undone, .. } = op {
                    *undone = true;
                }
            }
            true
        }
        _ => false,
    }
}

/// The final state's rows; `None` (unknown) when it could not be read or
/// lacks its instrumentation columns.
pub(super) fn final_rows(history: &History) -> Option<Vec<FinalRow>> {
    if history.final_state_error.is_some() {
        return None;
    }
    history
        .final_versions()
        .map(|vs| {
            vs.into_iter()
                .map(|v| FinalRow {
                    table: v.table.into(),
                    rid: v.rid,
                    wl: v.wl,
                })
                .collect()
        })
        .map_err(|e| {
            // Unknown, not partial: no row is left out silently.
            tracing::warn!("final state without instrumentation columns: {e}");
        })
        .ok()
}
