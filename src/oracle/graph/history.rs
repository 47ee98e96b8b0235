//! The checker history format: what `txfuzz check` reads and what the `graph`
//! oracle checks. It is engine-neutral, so histories recorded by other tools can
//! be checked too (see `docs/history-format.md`).
//!
//! ```json
//! {
//!   "isolation": "serializable",
//!   "engine": "sqlite",
//!   "txns": [
//!     {"id": 1, "session": 1, "status": "committed", "ops": [
//!       {"type": "read",  "table": "t", "rid": 1, "wl": "0"},
//!       {"type": "write", "op": 3, "table": "t", "rid": 1, "before": "0", "after": "0,3"}
//!     ]},
//!     {"id": 2, "session": 2, "status": "aborted", "ops": [
//!       {"type": "write", "op": 5, "table": "t", "rid": 2, "before": "0", "after": "0,5"},
//!       {"type": "unobserved-read", "op": 6}
//!     ]}
//!   ],
//!   "final_state": [{"table": "t", "rid": 1, "wl": "0,3"}]
//! }
//! ```
//!
//! - A transaction is `committed` or `aborted`; transactions of one `session`
//!   are listed in session order.
//! - `wl` is a row's write list: `0` is the initial version, each later entry is
//!   the id of the write operation that produced the next version.
//! - `write` ops: `before` absent = INSERT, `after` absent = DELETE; `undone`
//!   marks a write rolled back by ROLLBACK TO SAVEPOINT or a failed statement.
//! - `unobserved-read`: operation `op` read rows the history does not show
//!   (predicate evaluation, aggregates, subqueries).
//! - `savepoint_rollback`: the transaction rolled back to a savepoint.

use crate::model::{
    History, Isolation, OnConflict, Stmt, StmtKind, StmtRef, TestCase, TxnEnd, WriteList,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod from_case;
mod table_name;

pub use table_name::TableName;

pub const CHECK_FORMAT: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnStatus {
    Committed,
    Aborted,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum Op {
    /// Row `rid` of `table` was read at version `wl`.
    Read {
        table: TableName,
        rid: i64,
        wl: WriteList,
        /// The statement that read it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op: Option<u32>,
    },
    /// Write operation `op` replaced version `before` by `after`.
    Write {
        op: u32,
        table: TableName,
        rid: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<WriteList>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<WriteList>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        undone: bool,
    },
    /// Operation `op` read rows that were not observed.
    UnobservedRead { op: u32 },
    /// Operation `op` may have written rows of `table` that were not observed
    /// (e.g. rows a MariaDB upsert inserted, rows SQLite's REPLACE deleted):
    /// versions naming it are accepted as its writes, never invented.
    UnobservedWrite {
        op: u32,
        table: TableName,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        undone: bool,
    },
}

/// The label of transaction `id` of a case.
fn txn_label(id: u32) -> String {
    format!("T{id}")
}

/// The label of autocommit statement `index` (0-based) of session `id`.
fn autocommit_label(id: u32, index: usize) -> String {
    format!("T{id}#{}", index + 1)
}

/// The case transaction a label of [`txn_label`] or [`autocommit_label`]
/// names.
pub fn txn_of_label(label: &str) -> Option<u32> {
    label.strip_prefix('T')?.split('#').next()?.parse().ok()
}

/// The statements of a case behind each label [`CheckHistory::from_case`]
/// gives: a transaction's statements, or one autocommit statement.
pub fn statements_by_label(case: &TestCase) -> BTreeMap<String, Vec<StmtRef>> {
    let mut out = BTreeMap::new();
    for t in &case.txns {
        let refs = (0..t.stmts.len() as u32).map(|index| StmtRef { txn: t.id, index });
        if t.autocommit {
            for r in refs {
                out.insert(autocommit_label(t.id, r.index as usize), vec![r]);
            }
        } else {
            out.insert(txn_label(t.id), refs.collect());
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckTxn {
    pub id: u64,
    pub session: u64,
    pub status: TxnStatus,
    /// Display name (`T2`, `T3#1` for an autocommit statement); default `T{id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub savepoint_rollback: bool,
    #[serde(default)]
    pub ops: Vec<Op>,
}

impl CheckTxn {
    pub fn label(&self) -> String {
        self.label
            .clone()
            .unwrap_or_else(|| format!("T{}", self.id))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalRow {
    pub table: TableName,
    pub rid: i64,
    pub wl: WriteList,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckHistory {
    #[serde(default = "default_format")]
    pub format: u32,
    /// The level the history ran at (`txfuzz check --isolation` overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// `sqlite`, `mariadb`, `postgres`: selects the anomalies the engine permits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    pub txns: Vec<CheckTxn>,
    /// The final state's row versions, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_state: Option<Vec<FinalRow>>,
}

fn default_format() -> u32 {
    CHECK_FORMAT
}

impl CheckHistory {
    /// Parses and validates a checker history; the error is one line.
    pub fn from_json(text: &str) -> Result<CheckHistory, String> {
        // Versions shared as when the history is built in memory.
        let h: CheckHistory = WriteList::sharing(|| serde_json::from_str(text))
            .map_err(|e| format!("not a checker history: {e}"))?;
        h.validate()?;
        Ok(h)
    }

    /// Structural checks: unique transaction ids, write op ids not shared
    /// between transactions, no empty write lists.
    pub fn validate(&self) -> Result<(), String> {
        if self.format != CHECK_FORMAT {
            return Err(format!(
                "unsupported checker history format {} (expected {CHECK_FORMAT})",
                self.format
            ));
        }
        let mut ids = std::collections::HashSet::new();
        let mut owner = std::collections::HashMap::new();
        for t in &self.txns {
            if !ids.insert(t.id) {
                return Err(format!("duplicate transaction id {}", t.id));
            }
            for op in &t.ops {
                // Write lists are valid once parsed ([`WriteList`]).
                let wop = match op {
                    Op::Write {
                        op, before, after, ..
                    } => {
                        if before.is_none() && after.is_none() {
                            return Err(format!("write op {op} has neither before nor after"));
                        }
                        Some(*op)
                    }
                    Op::Read { .. } | Op::UnobservedRead { .. } | Op::UnobservedWrite { .. } => {
                        None
                    }
                };
                if let Some(o) = wop {
                    if o == 0 {
                        return Err("write op id 0 is reserved for initial versions".into());
                    }
                    if let Some(prev) = owner.insert(o, t.id) {
                        if prev != t.id {
                            return Err(format!(
                                "write op {o} appears in transactions {prev} and {}",
                                t.id
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Converts an executed txfuzz case: each autocommit statement is its own
    /// transaction (its session is the autocommit session); an explicit
    /// transaction is its own session. Writes of failed statements and writes
    /// undone by ROLLBACK TO SAVEPOINT are marked `undone`.
    pub fn from_case(case: &TestCase, history: &History, engine: Option<&str>) -> CheckHistory {
        let mut txns = Vec::new();
        let mut next_id = 1u64;
        // One index instead of a linear `History::outcome` per statement: stress
        // histories hold tens of thousands of statements.
        let outcomes: from_case::Outcomes = history
            .outcomes
            .iter()
            .map(|o| (o.stmt, &o.outcome))
            .collect();
        for t in &case.txns {
            if t.autocommit {
                from_case::autocommit_txns(t, &case.schema, &outcomes, &mut next_id, &mut txns);
            } else {
                txns.push(from_case::explicit_txn(
                    t,
                    &case.schema,
                    history,
                    &outcomes,
                    next_id,
                ));
                next_id += 1;
            }
        }
        // Sessions are the case's transaction/session ids (unique per case).
        let final_state = from_case::final_rows(history);
        CheckHistory {
            format: CHECK_FORMAT,
            isolation: Some(case.isolation),
            engine: engine.map(str::to_string),
            txns,
            final_state,
        }
    }
}

fn push_ops(
    ops: &mut Vec<Op>,
    schema: &crate::model::Schema,
    cs: &crate::model::CaseStmt,
    out: &crate::model::Outcome,
    failed: bool,
) {
    let op = cs.op;
    // Child rows a foreign-key action wrote: no statement reports them.
    for table in crate::oracle::cascade::written_by_action(&cs.stmt, out, schema) {
        ops.push(Op::UnobservedWrite {
            op,
            table: table.into(),
            undone: false,
        });
    }
    let written_table = match &cs.stmt {
        Stmt::Insert(i) => Some(&i.table),
        Stmt::Update(u) => Some(&u.table),
        Stmt::Delete(d) => Some(&d.table),
        _ => None,
    };
    if let (Some(table), false) = (written_table, out.writes_complete) {
        ops.push(Op::UnobservedWrite {
            op,
            table: table.into(),
            undone: failed,
        });
    }
    if failed {
        // A failed statement's effects are rolled back; what it read is not
        // part of the transaction's result.
        push_writes(ops, op, &out.writes, true);
        return;
    }
    // Rows an UPDATE matched and left as they were are reads of the version
    // it matched (MariaDB reports them; elsewhere every matched row is
    // written, and its overwritten version is a read already).
    for r in out.reads.iter().chain(&out.unchanged) {
        ops.push(Op::Read {
            table: (&r.table).into(),
            rid: r.rid,
            wl: r.wl.clone(),
            op: Some(op),
        });
    }
    if !out.reads_complete {
        ops.push(Op::UnobservedRead { op });
    }
    push_writes(ops, op, &out.writes, false);
    if let Stmt::Insert(i) = &cs.stmt {
        push_skipped_rows(ops, op, i, out);
    }
}

/// The row writes of statement `op`, marked `undone` or not.
fn push_writes(ops: &mut Vec<Op>, op: u32, writes: &[crate::model::RowWrite], undone: bool) {
    for w in writes {
        ops.push(Op::Write {
            op,
            table: (&w.table).into(),
            rid: w.rid,
            before: w.before.clone(),
            after: w.after.clone(),
            undone,
        });
    }
}

/// Undone writes for the rows INSERT IGNORE or an upsert (`i`, op `op`)
/// skipped on a conflict: such a row may still have existed while the
/// statement ran (InnoDB inserts the clustered record before it checks a
/// secondary unique key, and removes it on the conflict), so a read of it is
/// a read of an undone write, not of a version that never existed.
fn push_skipped_rows(
    ops: &mut Vec<Op>,
    op: u32,
    i: &crate::model::Insert,
    out: &crate::model::Outcome,
) {
    if !matches!(
        i.on_conflict,
        OnConflict::Ignore | OnConflict::Update { .. }
    ) {
        return;
    }
    for rid in &i.rids {
        if !out
            .writes
            .iter()
            .any(|w| w.table == i.table && w.rid == *rid)
        {
            ops.push(Op::Write {
                op,
                table: (&i.table).into(),
                rid: *rid,
                before: None,
                after: Some(WriteList::of(op)),
                undone: true,
            });
        }
    }
}
