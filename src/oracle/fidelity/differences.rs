//! The differences between the instrumented run and the shadow run, per
//! statement and per transaction end, and whether they may depend on the
//! plan.

use super::*;

/// Adds to `diffs` how each statement differs between `history` and
/// `shadow`: wait, ran, error and, where both succeeded, result and
/// affected rows (data statements only).
pub(super) fn stmt_differences(
    d: Dialect,
    case: &TestCase,
    history: &History,
    shadow: &History,
    diffs: &mut Vec<Difference>,
) {
    for r in case.all_refs() {
        let (a, b) = (seen(history, r), seen(shadow, r));
        let mut differ = |what, x: serde_json::Value, y: serde_json::Value| {
            if x != y {
                diffs.push(Difference {
                    what,
                    stmt: Some(r),
                    instrumented: x,
                    plain: y,
                });
            }
        };
        differ("wait", json!(a.waited), json!(b.waited));
        differ("ran", json!(a.ran), json!(b.ran));
        let (Some(x), Some(y)) = (a.outcome, b.outcome) else {
            continue;
        };
        differ("error", error_of(x), error_of(y));
        // Control statements report whatever count the session had last.
        let Some(cs) = case.stmt(r).filter(|cs| cs.stmt.kind().is_data()) else {
            continue;
        };
        if x.ok() && y.ok() {
            differ("result", bag(&x.rows), bag(&y.rows));
            if instrument::reports_affected(d, &cs.stmt) {
                differ("affected", json!(x.affected), json!(y.affected));
            }
        }
    }
}

/// Adds to `diffs` each transaction that ended otherwise in the two runs.
pub(super) fn txn_end_differences(
    case: &TestCase,
    history: &History,
    shadow: &History,
    diffs: &mut Vec<Difference>,
) {
    for t in &case.txns {
        let (x, y) = (history.txn_end(t.id), shadow.txn_end(t.id));
        if x != y {
            diffs.push(Difference {
                what: "txn-end",
                stmt: None,
                instrumented: json!({ "txn": t.id, "end": x }),
                plain: json!({ "txn": t.id, "end": y }),
            });
        }
    }
}

/// Whether an error difference involves the conflict the engine may raise
/// anywhere (`aborts_anywhere`), which can depend on the plan.
pub(super) fn plan_dependent(
    aborts_anywhere: Option<ErrorClass>,
    diffs: &[Difference],
    history: &History,
    shadow: &History,
) -> bool {
    let class_of =
        |h: &History, r: StmtRef| h.outcome(r).and_then(|o| o.error.as_ref()).map(|e| e.class);
    aborts_anywhere.is_some()
        && diffs.iter().any(|d| {
            d.what == "error"
                && d.stmt.is_some_and(|r| {
                    class_of(history, r) == aborts_anywhere
                        || class_of(shadow, r) == aborts_anywhere
                })
        })
}
