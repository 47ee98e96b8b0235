//! Writes of foreign-key actions (`ON DELETE` / `ON UPDATE` `CASCADE`,
//! `SET NULL`): the engine changes child rows that no statement reports, so
//! the instrumentation cannot observe them. The oracles that follow row
//! versions (`graph`, `view`, `sdg`) mark them: `graph` as unobserved writes
//! of the child tables, `view` and `sdg` by leaving the case undecided
//! (`cascade-unobserved`). `integrity`, `wss` and the shadow run judge such
//! cases in full (the engine runs the actions in every run alike).

use crate::model::{walk, History, Outcome, Schema, Stmt, StmtRef, TestCase};

/// The child tables whose rows the executed statement may have written
/// through an action: empty unless it succeeded and wrote (or may have
/// written, unobserved) rows of a table whose foreign keys act.
pub fn written_by_action(stmt: &Stmt, out: &Outcome, schema: &Schema) -> Vec<String> {
    if !out.ok() {
        return Vec::new();
    }
    let targets = walk::cascade_targets(stmt, schema);
    if targets.is_empty() || (out.writes.is_empty() && out.writes_complete) {
        return Vec::new();
    }
    targets.into_iter().collect()
}

/// Whether a statement of `case` that ran writes a table on either side of
/// a foreign key checked at COMMIT by default: replays that run statements
/// on their own would check that key after the statement instead.
pub fn writes_deferred_key(case: &TestCase, history: &History) -> bool {
    let tables = case.deferred_key_tables();
    !tables.is_empty()
        && history.outcomes.iter().any(|o| {
            case.stmt(o.stmt).is_some_and(|cs| {
                cs.stmt.kind().is_write()
                    && walk::outer_tables(&cs.stmt)
                        .iter()
                        .any(|t| tables.contains(t))
            })
        })
}

/// The first statement (in completion order) whose action may have written
/// child rows, if any.
pub fn first_action_write(case: &TestCase, history: &History) -> Option<StmtRef> {
    history.outcomes.iter().find_map(|o| {
        let cs = case.stmt(o.stmt)?;
        (!written_by_action(&cs.stmt, &o.outcome, &case.schema).is_empty()).then_some(o.stmt)
    })
}
