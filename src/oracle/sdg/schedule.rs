//! Blocking scheduling (TxCheck §4): a lock wait separates a statement from
//! its version-set reads (another session's statements run in between), so
//! the reads no longer describe what the statement saw. The case is then
//! re-executed in the order the engine actually produced, without the
//! separated statements, until an execution runs without blocking.

use super::vsr::VsrCase;
use crate::model::edit::remove_ops;
use crate::model::{EventKind, History, StmtRef};
use std::collections::HashSet;

/// An execution in which no statement waited for a lock or timed out.
pub fn stable(h: &History) -> bool {
    !h.events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Blocked { .. } | EventKind::TimedOut))
}

/// The statements in the order they finished (completed, skipped or timed
/// out), then any that never did, in submit order.
pub fn recorded_order(v: &VsrCase, h: &History) -> Vec<StmtRef> {
    let mut seen = HashSet::new();
    let mut order = Vec::new();
    for e in &h.events {
        let done = matches!(
            e.kind,
            EventKind::Completed { .. } | EventKind::Skipped | EventKind::TimedOut
        );
        if done && seen.insert(e.stmt) {
            order.push(e.stmt);
        }
    }
    for r in &v.case.submit_order {
        if seen.insert(*r) {
            order.push(*r);
        }
    }
    order
}

/// The case to run next: the recorded order, minus every statement (with its
/// VSRs) that another session's statement separated from its VSRs. Returns the
/// dropped target operation ids too. `None` when nothing data-bearing is left.
pub fn reschedule(v: &VsrCase, h: &History) -> Option<(VsrCase, Vec<u32>)> {
    let order = recorded_order(v, h);
    let op_at = |r: &StmtRef| v.case.stmt(*r).map(|s| s.op);
    let ops: Vec<Option<u32>> = order.iter().map(op_at).collect();
    let mut dropped = Vec::new();
    for (target, vsrs) in &v.vsrs {
        let positions: Vec<usize> = std::iter::once(target)
            .chain(vsrs.iter())
            .filter_map(|op| ops.iter().position(|o| *o == Some(*op)))
            .collect();
        let (Some(lo), Some(hi)) = (positions.iter().min(), positions.iter().max()) else {
            continue;
        };
        if hi - lo + 1 != positions.len() {
            dropped.push(*target);
        }
    }
    let mut case = v.case.clone();
    case.submit_order = order;
    let mut vsrs = v.vsrs.clone();
    if !dropped.is_empty() {
        let mut remove: Vec<u32> = dropped.clone();
        for t in &dropped {
            remove.extend(vsrs.remove(t).unwrap_or_default());
        }
        case = remove_ops(&case, &remove)?;
    }
    if vsrs.is_empty() {
        return None;
    }
    Some((VsrCase { case, vsrs }, dropped))
}
