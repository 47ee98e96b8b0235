//! What makes a case's cursors well-formed ([`super::stmt::Select::cursor`],
//! `Fetch`, `Close`), checked by `TestCase::validate`. Apart from
//! `model::cursor` (which reads cases and histories), so that the case's
//! validation does not depend on it.

use super::schema::Schema;
use super::stmt::{Expr, Select, Stmt};

/// Checks the cursors of transaction `id` (its statements with their ops):
/// a cursor is a single-table SELECT ordered by the table's full primary key
/// (so a prefix of its rows is one result), without locking clause, opened
/// in an explicit transaction, stepped and closed by name while open, and
/// closed before the transaction ends or a savepoint statement.
pub fn validate<'a>(
    schema: &Schema,
    id: u32,
    autocommit: bool,
    stmts: impl Iterator<Item = (u32, &'a Stmt)>,
) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    for (op, stmt) in stmts {
        let at = || format!("T{id} op {op}");
        match stmt {
            Stmt::Select(sel) => {
                let Some(c) = &sel.cursor else { continue };
                if autocommit {
                    return Err(format!(
                        "{}: a cursor opens in an explicit transaction",
                        at()
                    ));
                }
                if open.contains(&c.name.as_str()) {
                    return Err(format!("{}: cursor {} is already open", at(), c.name));
                }
                if c.rows == 0 {
                    return Err(format!("{}: a cursor step returns at least one row", at()));
                }
                check_select(schema, sel)
                    .map_err(|e| format!("{}: cursor {}: {e}", at(), c.name))?;
                open.push(&c.name);
            }
            Stmt::Fetch(f) => {
                if !open.contains(&f.cursor.as_str()) {
                    return Err(format!(
                        "{}: FETCH from cursor {}, which is not open",
                        at(),
                        f.cursor
                    ));
                }
                if f.rows == 0 {
                    return Err(format!("{}: a cursor step returns at least one row", at()));
                }
            }
            Stmt::Close(name) => {
                let Some(i) = open.iter().position(|n| n == name) else {
                    return Err(format!(
                        "{}: CLOSE of cursor {name}, which is not open",
                        at()
                    ));
                };
                open.remove(i);
            }
            other if !open.is_empty() && ends_or_undoes(other) => {
                return Err(format!(
                    "{}: cursor {} is still open (close it before the transaction ends or \
                     rolls back to a savepoint)",
                    at(),
                    open[0]
                ));
            }
            _ => {}
        }
    }
    match open.first() {
        Some(name) => Err(format!("T{id}: cursor {name} is never closed")),
        None => Ok(()),
    }
}

fn ends_or_undoes(s: &Stmt) -> bool {
    matches!(
        s,
        Stmt::Commit | Stmt::Rollback | Stmt::RollbackTo(_) | Stmt::Release(_) | Stmt::Savepoint(_)
    )
}

fn check_select(schema: &Schema, sel: &Select) -> Result<(), String> {
    let [from] = sel.from.as_slice() else {
        return Err("a cursor reads one table".into());
    };
    if from.join.is_some() || sel.lock.is_some() || sel.distinct || sel.is_aggregate() {
        return Err("a cursor is a plain single-table SELECT".into());
    }
    let table = schema
        .table(&from.table)
        .ok_or_else(|| format!("table {} is not in the schema", from.table))?;
    let pk = &table.primary_key;
    let n = sel.order_by.len();
    let ordered = !pk.is_empty()
        && n >= pk.len()
        && sel.order_by[n - pk.len()..]
            .iter()
            .zip(pk)
            .all(|(o, k)| o.expr == Expr::qcol(&from.alias, k));
    if !ordered {
        return Err(format!(
            "a cursor orders by the full primary key of {} (last)",
            from.table
        ));
    }
    Ok(())
}
