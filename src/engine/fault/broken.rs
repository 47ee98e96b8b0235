//! Faults that break a declared constraint, for the `integrity` oracle to
//! catch, one per kind:
//! - `orphan`: before the final state is read, a parent row that a child row
//!   references is deleted behind the engine's back (its foreign-key checks
//!   switched off for that one statement: SQLite/turso `PRAGMA foreign_keys`,
//!   MariaDB `foreign_key_checks`, PostgreSQL `session_replication_role`);
//! - `duplicate-key`, `null-value`, `check-violation`: the final state is read
//!   with one row changed so that it shares another row's primary key, holds
//!   NULL in a NOT NULL column, or breaks a `col > n` CHECK.

use super::Fault;
use crate::engine::{Engine, EngineError};
use crate::model::{BinOp, DbState, Expr, Isolation, Schema, Value};
use crate::sql::Dialect;

/// `orphan`: deletes one referenced parent row with the engine's foreign-key
/// checks off. Whether a row was deleted.
pub(super) fn orphan(
    engine: &mut dyn Engine,
    schema: &Schema,
    isolation: Isolation,
) -> Result<bool, EngineError> {
    let (off, on) = match engine.dialect() {
        Dialect::Sqlite => ("PRAGMA foreign_keys = OFF", "PRAGMA foreign_keys = ON"),
        Dialect::Mysql => ("SET foreign_key_checks = 0", "SET foreign_key_checks = 1"),
        Dialect::Postgres => (
            "SET session_replication_role = replica",
            "SET session_replication_role = DEFAULT",
        ),
    };
    let mut s = engine.open_bounded_session(isolation)?;
    let fail = |e: crate::model::StmtError| crate::engine::admin_error("fault orphan", e);
    for t in &schema.tables {
        for fk in &t.foreign_keys {
            let on_key: Vec<String> = fk
                .columns
                .iter()
                .zip(&fk.ref_columns)
                .map(|(c, p)| format!("x.{c} = y.{p}"))
                .collect();
            let sql = format!(
                "SELECT y.rid FROM {} x JOIN {} y ON {} ORDER BY y.rid",
                t.name,
                fk.ref_table,
                on_key.join(" AND ")
            );
            let rows = s.query(&sql).map_err(fail)?.rows;
            let Some(rid) = rows.first().and_then(|r| r.first()) else {
                continue;
            };
            s.query(off).map_err(fail)?;
            let deleted = s.query(&format!("DELETE FROM {} WHERE rid = {rid}", fk.ref_table));
            s.query(on).map_err(fail)?;
            return Ok(deleted.map_err(fail)?.affected > 0);
        }
    }
    Ok(false)
}

/// `duplicate-key`, `null-value`, `check-violation`: changes one row of the
/// state as read (`[rid, wl, columns...]`). Whether a row was changed.
pub(super) fn corrupt(fault: Fault, schema: &Schema, state: &mut DbState) -> bool {
    for t in &schema.tables {
        let Some(rows) = state.get_mut(&t.name) else {
            continue;
        };
        let at = |name: &str| t.columns.iter().position(|c| c.name == name).map(|k| k + 2);
        match fault {
            Fault::DuplicateKey if rows.len() >= 2 && !t.primary_key.is_empty() => {
                for c in t.primary_key.iter().filter_map(|c| at(c)) {
                    rows[1][c] = rows[0][c].clone();
                }
                return true;
            }
            Fault::NullValue if !rows.is_empty() => {
                if let Some(c) = t.columns.iter().position(|c| c.not_null) {
                    rows[0][c + 2] = Value::Null;
                    return true;
                }
            }
            Fault::CheckViolation if !rows.is_empty() => {
                for check in &t.checks {
                    if let Expr::Bin {
                        op: BinOp::Gt | BinOp::Ge,
                        left,
                        right,
                    } = check
                    {
                        if let (Expr::Col { name, .. }, Expr::Lit(Value::Int(n))) =
                            (&**left, &**right)
                        {
                            if let Some(c) = at(name) {
                                rows[0][c] = Value::Int(n - 1);
                                return true;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    false
}
