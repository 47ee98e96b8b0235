//! Version-set reads (TxCheck's VSR statements): before every data statement,
//! one read per table the statement's result can depend on, returning the
//! `rid, wl` of every row of that table the statement could see.
//!
//! A VSR reads the way its target reads: a plain read before a plain SELECT
//! (same snapshot), a locking read (`FOR UPDATE`/`FOR SHARE`) before a locking
//! SELECT or a write (current read: MariaDB's UPDATE and locking reads see the
//! latest committed version, not the snapshot). SQLite has no locking clause;
//! its writers always hold the latest snapshot. A VSR therefore takes at least
//! the locks of its target, over the whole table: it can add blocking, which
//! blocking scheduling then removes. At InnoDB READ COMMITTED (semi-consistent
//! reads) the VSRs of writes and locking reads are plain reads instead, which
//! lock nothing and see the newest committed versions. Where the engine reads a statement's
//! subqueries as plain reads (InnoDB locking reads; writes at READ COMMITTED
//! and below), the tables of its subqueries get plain VSRs.

use crate::engine::profile::{Access, Rule, SubqueryRead, ViewRule};
use crate::model::{
    walk, CaseStmt, Expr, FromItem, LockMode, Schema, Select, SelectItem, Stmt, StmtKind, StmtRef,
    TestCase, Value,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A case with VSR statements inserted, and which VSRs belong to which target.
#[derive(Clone, Debug, PartialEq)]
pub struct VsrCase {
    pub case: TestCase,
    /// Target operation id -> the operation ids of its VSR statements.
    pub vsrs: BTreeMap<u32, Vec<u32>>,
}

impl VsrCase {
    /// Whether `op` is a VSR statement.
    pub fn is_vsr(&self, op: u32) -> bool {
        self.vsrs.values().any(|v| v.contains(&op))
    }
}

/// Tables whose rows can change a statement's result or effect: the tables it
/// mentions, and for a write, tables linked to its target by a foreign key.
pub fn view_tables(stmt: &Stmt, schema: &Schema) -> BTreeSet<String> {
    let mut out = walk::tables(stmt);
    if stmt.kind().is_write() {
        out = walk::fk_reach(stmt, &out, schema);
    }
    out.retain(|t| schema.tables.iter().any(|s| &s.name == t));
    out
}

/// The read modes of the VSRs of `table` for `stmt`: its own mode, except
/// where the engine reads the statement's subqueries as plain reads
/// ([`Rule::subqueries`]): a table only its subqueries read gets a plain VSR,
/// one read both ways gets both (`deps` leaves the statement undecided if
/// they differ).
fn vsr_modes(
    stmt: &Stmt,
    table: &str,
    schema: &Schema,
    rule: Option<&Rule>,
) -> Vec<Option<LockMode>> {
    let lock = match rule {
        // Semi-consistent current reads (InnoDB READ COMMITTED): a write or
        // locking read judges each row on its newest committed version and
        // locks (waits for) only the rows that match. A locking VSR of the
        // whole table would lock and wait for every row, and the statement
        // would then see everything: the behaviour under test gone. A plain
        // read at this level reads the newest committed versions, without a
        // lock: what the statement judges when it does not wait (one that
        // waits is separated from its VSRs and rescheduled). Not at READ
        // UNCOMMITTED, where a plain read sees uncommitted versions.
        Some(r) if r.resumed_scan.is_some() && r.plain_read != ViewRule::Uncommitted => None,
        // A READ ONLY transaction refuses locking reads the profile lists:
        // its VSRs read plainly (its writes fail before reading anything).
        Some(r)
            if r.read_only_error.is_some()
                && vsr_lock(stmt).is_some_and(|m| {
                    stmt.kind().is_write() || r.read_only_refused_locks.contains(&m)
                }) =>
        {
            None
        }
        _ => vsr_lock(stmt),
    };
    let plain_subqueries = rule
        .zip(Access::of(stmt))
        .is_some_and(|(r, a)| r.subqueries(a) == SubqueryRead::Plain);
    if lock.is_none() || !plain_subqueries || !walk::subquery_tables(stmt).contains(table) {
        return vec![lock];
    }
    let mut outer = walk::outer_tables(stmt);
    if stmt.kind().is_write() {
        outer = walk::fk_reach(stmt, &outer, schema);
    }
    if outer.contains(table) {
        vec![lock, None]
    } else {
        vec![None]
    }
}

/// The read mode a VSR needs so it sees what its target sees.
fn vsr_lock(stmt: &Stmt) -> Option<LockMode> {
    match stmt {
        Stmt::Select(s) => s.lock,
        s if s.kind().is_write() => Some(LockMode::ForUpdate),
        _ => None,
    }
}

/// `SELECT 1 FROM table [locking]`; instrumentation adds `rid, wl`.
pub fn vsr_select(table: &str, lock: Option<LockMode>) -> Stmt {
    Stmt::Select(Select {
        distinct: false,
        items: vec![SelectItem {
            expr: Expr::Lit(Value::Int(1)),
            alias: None,
        }],
        from: vec![FromItem {
            table: table.to_string(),
            alias: table.to_string(),
            join: None,
        }],
        where_: None,
        group_by: Vec::new(),
        order_by: Vec::new(),
        limit: None,
        lock,
        cursor: None,
    })
}

/// Inserts VSRs before every data statement of `case`, immediately before it
/// in its transaction and in the submit order.
pub fn instrument(case: &TestCase, rule_of: impl Fn(u32) -> Option<Rule>) -> VsrCase {
    let mut next_op = case
        .txns
        .iter()
        .flat_map(|t| t.stmts.iter().map(|s| s.op))
        .max()
        .unwrap_or(0)
        + 1;
    let mut out = case.clone();
    let mut vsrs: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    // Old reference -> new references (VSRs first, then the statement).
    let mut remap: HashMap<StmtRef, Vec<StmtRef>> = HashMap::new();
    for t in &mut out.txns {
        let rule = rule_of(t.id);
        let rule = rule.as_ref();
        let mut stmts: Vec<CaseStmt> = Vec::new();
        for (i, s) in t.stmts.drain(..).enumerate() {
            let mut refs = Vec::new();
            if s.stmt.kind().is_data() {
                for table in view_tables(&s.stmt, &case.schema) {
                    for lock in vsr_modes(&s.stmt, &table, &case.schema, rule) {
                        let op = next_op;
                        next_op += 1;
                        vsrs.entry(s.op).or_default().push(op);
                        refs.push(StmtRef {
                            txn: t.id,
                            index: stmts.len() as u32,
                        });
                        stmts.push(CaseStmt {
                            op,
                            stmt: vsr_select(&table, lock),
                        });
                    }
                }
            }
            refs.push(StmtRef {
                txn: t.id,
                index: stmts.len() as u32,
            });
            stmts.push(s);
            remap.insert(
                StmtRef {
                    txn: t.id,
                    index: i as u32,
                },
                refs,
            );
        }
        t.stmts = stmts;
    }
    out.submit_order = case
        .submit_order
        .iter()
        .flat_map(|r| remap.get(r).cloned().unwrap_or_default())
        .collect();
    VsrCase { case: out, vsrs }
}

/// Kind of the statement with operation id `op`.
pub fn kind_of(case: &TestCase, op: u32) -> Option<StmtKind> {
    case.txns
        .iter()
        .flat_map(|t| t.stmts.iter())
        .find(|s| s.op == op)
        .map(|s| s.stmt.kind())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::hermitage;

    #[test]
    fn every_data_statement_gets_adjacent_vsrs() {
        let case = hermitage::g_single();
        let v = instrument(&case, |_| None);
        v.case.validate().unwrap();
        let data = case
            .txns
            .iter()
            .flat_map(|t| &t.stmts)
            .filter(|s| s.stmt.kind().is_data())
            .count();
        assert_eq!(v.vsrs.len(), data);
        // In the submit order, each target is preceded by its own VSRs.
        let ops: Vec<u32> = v
            .case
            .submit_order
            .iter()
            .map(|r| v.case.stmt(*r).unwrap().op)
            .collect();
        for (target, vs) in &v.vsrs {
            let at = ops.iter().position(|o| o == target).unwrap();
            assert_eq!(&ops[at - vs.len()..at], vs.as_slice());
        }
    }
}
