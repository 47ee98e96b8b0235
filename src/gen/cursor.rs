//! Open cursors in generated cases (`Features::cursors`): a plain
//! single-table SELECT of an explicit transaction becomes a cursor ordered
//! by its table's primary key, stepped by one or two FETCHes while other
//! statements (its own session's and others') run, and closed before the
//! transaction ends or undoes to a savepoint. Drawn on a stream of its own
//! after the rest of the case, so the case is otherwise the one the same
//! seed and index gave before cursors existed.

use crate::model::{
    CaseStmt, CursorOpen, Expr, Features, OrderBy, Select, Stmt, StmtRef, TestCase,
};
use crate::rng::Rng;

/// Mixed into the seed of the cursor stream.
const STREAM: u64 = 0x4355_5253_4f52_5321; // "CURSORS!"

/// One transaction in three that has a suitable SELECT gets a cursor.
pub fn draw_cursors(seed: u64, index: u64, features: &Features, case: &mut TestCase) {
    if !features.cursors {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    for ti in 0..case.txns.len() {
        if case.txns[ti].autocommit || !rng.chance(1, 3) {
            continue;
        }
        let candidates: Vec<usize> = case.txns[ti]
            .stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(&s.stmt, Stmt::Select(q) if suitable(case, q)))
            .map(|(i, _)| i)
            .collect();
        let Some(&open) = rng.try_pick(&candidates) else {
            continue;
        };
        // The cursor closes before the first statement that ends the
        // transaction or starts or undoes to a savepoint.
        let stmts = &case.txns[ti].stmts;
        let Some(end) = (open + 1..stmts.len()).find(|&i| {
            matches!(
                stmts[i].stmt,
                Stmt::Commit
                    | Stmt::Rollback
                    | Stmt::Savepoint(_)
                    | Stmt::RollbackTo(_)
                    | Stmt::Release(_)
            )
        }) else {
            continue;
        };
        let name = "c1".to_string();
        if let Stmt::Select(q) = &mut case.txns[ti].stmts[open].stmt {
            order_by_key(case_schema_pk(&case.schema, q), q);
            q.cursor = Some(CursorOpen {
                name: name.clone(),
                rows: rng.range(1, 2) as u32,
            });
        }
        // Gaps: a statement inserted in gap g runs before the statement now
        // at index g.
        let fetches = rng.range(1, 2) as usize;
        let mut gaps: Vec<usize> = (0..fetches)
            .map(|_| rng.range(open as i64 + 1, end as i64) as usize)
            .collect();
        gaps.sort_unstable();
        let close_gap = rng.range(*gaps.last().unwrap_or(&end) as i64, end as i64) as usize;
        let mut inserts: Vec<(usize, Stmt)> = gaps
            .into_iter()
            .map(|g| {
                (
                    g,
                    Stmt::Fetch(crate::model::Fetch {
                        cursor: name.clone(),
                        rows: rng.range(1, 2) as u32,
                    }),
                )
            })
            .collect();
        inserts.push((close_gap, Stmt::Close(name)));
        insert(case, ti, inserts, &mut rng);
    }
    // Op ids in transaction order, as generated cases have them.
    for (op, s) in (1..).zip(case.txns.iter_mut().flat_map(|t| t.stmts.iter_mut())) {
        s.op = op;
    }
}

/// A SELECT a cursor can be: one table with a primary key, no join,
/// aggregate, DISTINCT or locking clause.
fn suitable(case: &TestCase, q: &Select) -> bool {
    let [from] = q.from.as_slice() else {
        return false;
    };
    from.join.is_none()
        && q.lock.is_none()
        && !q.distinct
        && !q.is_aggregate()
        && q.cursor.is_none()
        && case
            .schema
            .table(&from.table)
            .is_some_and(|t| !t.primary_key.is_empty())
}

fn case_schema_pk(schema: &crate::model::Schema, q: &Select) -> Vec<String> {
    schema
        .table(&q.from[0].table)
        .map(|t| t.primary_key.clone())
        .unwrap_or_default()
}

/// Orders `q` by its table's full primary key, last (a leading column it
/// was already ordered by stays).
fn order_by_key(pk: Vec<String>, q: &mut Select) {
    let alias = q.from[0].alias.clone();
    let keys: Vec<OrderBy> = pk
        .iter()
        .map(|k| OrderBy {
            expr: Expr::qcol(&alias, k),
            desc: false,
        })
        .collect();
    let n = q.order_by.len();
    let ends_with_key = n >= keys.len() && q.order_by[n - keys.len()..] == keys[..];
    if !ends_with_key {
        q.order_by
            .retain(|o| !keys.iter().any(|k| k.expr == o.expr));
        q.order_by.truncate(1);
        q.order_by.extend(keys);
    }
}

/// Inserts `inserts` (gap, statement; gaps ascending) into transaction
/// `ti` (op ids are renumbered after), each submitted somewhere after the statement
/// before its gap and before the one after it.
fn insert(case: &mut TestCase, ti: usize, inserts: Vec<(usize, Stmt)>, rng: &mut Rng) {
    let id = case.txns[ti].id;
    // Positions in the submit order of the transaction's statements.
    let pos: Vec<usize> = case
        .submit_order
        .iter()
        .enumerate()
        .filter(|(_, r)| r.txn == id)
        .map(|(i, _)| i)
        .collect();
    let mut before: Vec<usize> = vec![0; case.submit_order.len()];
    for (g, _) in &inserts {
        let lo = pos[*g - 1] + 1;
        let at = rng.range(lo as i64, pos[*g] as i64) as usize;
        before[at] += 1;
    }
    let mut order: Vec<u32> = Vec::new();
    for (i, r) in case.submit_order.iter().enumerate() {
        order.extend(std::iter::repeat_n(id, before[i]));
        order.push(r.txn);
    }
    let stmts = &mut case.txns[ti].stmts;
    for (g, stmt) in inserts.into_iter().rev() {
        stmts.insert(g, CaseStmt { op: 0, stmt });
    }
    let mut count: std::collections::HashMap<u32, u32> = Default::default();
    case.submit_order = order
        .into_iter()
        .map(|txn| {
            let c = count.entry(txn).or_default();
            *c += 1;
            StmtRef { txn, index: *c - 1 }
        })
        .collect();
}
