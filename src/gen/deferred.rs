//! Deferred foreign-key violations that a later statement of the same
//! transaction must not repay, drawn from a random stream of their own, so
//! the rest of a case is the one the same seed and index gave before.
//!
//! A DEFERRABLE INITIALLY DEFERRED foreign key is checked at COMMIT: a
//! transaction that leaves a child row without its parent must fail there,
//! whatever it did in between. turso forgets such a violation when a later
//! statement's foreign-key action writes other children (known issues
//! `turso-deferred-key-cascade-clears-violation` and
//! `turso-deferred-key-delete-action-clears-violation`), or when the
//! transaction deletes parents of several children and inserts one of them
//! again (`turso-deferred-key-reinsert-repays-other-violations`), or deletes
//! a parent of several children and writes one of them
//! (`turso-deferred-key-indexed-parent-delete-counts-one-violation`). Left to
//! chance, each was found in at most 1 of 3 seeds within 2 minutes
//! (BENCHMARKS.md, "turso and turso MVCC").

use super::Gen;
use crate::model::{
    Assignment, BinOp, Deferral, Delete, Expr, ForeignKey, OnConflict, Row, Stmt, TableData, Txn,
    Update, Value,
};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x4445_4645_525f_464b; // "DEFER_FK"

/// A child table's deferred key to a parent with a one-column key, and the
/// rows of both at generation.
struct Link<'a> {
    child: usize,
    /// The child's foreign-key column (index in the child's columns).
    fk_col: usize,
    parent: usize,
    /// The parent's key column.
    parent_key: usize,
    fk: &'a ForeignKey,
    parents: &'a [Row],
    children: &'a [Row],
}

/// Where the engine's profile asks for them
/// ([`crate::model::Features::deferred_key_shapes`]), one case in two with a
/// DEFERRABLE INITIALLY DEFERRED one-column foreign key (to a parent with a
/// one-column primary key, two of whose rows have children) and an explicit
/// read-write transaction
/// that commits with at least two data statements gets one of three shapes in
/// that transaction, in the submit order of its statements:
/// - *an action after the violation* (the key has an action that writes
///   children): `UPDATE child SET fk = m WHERE fk = y` (`m` no parent's
///   key, `y` a parent with children), then `UPDATE parent SET key = v WHERE
///   key = x` (ON UPDATE CASCADE or SET NULL) or `DELETE FROM parent WHERE
///   key = x` (ON DELETE CASCADE or SET NULL), `x` another parent with
///   children;
/// - *a reinsert* (ON DELETE NO ACTION, one time in two):
///   `DELETE FROM parent WHERE key = x OR key = z`, two parents with
///   children (`x` one with the most), then the row of `x` inserted again
///   as it was;
/// - *a child write* (ON DELETE NO ACTION, the other time, or half of it
///   where ON UPDATE has an action that writes children): `DELETE FROM
///   parent WHERE key = x`, then one child of `x` moved to another parent
///   or deleted, by its primary key.
///
/// Every way the COMMIT must fail: a child is left without its parent.
pub(super) fn draw_deferred(
    g: &mut Gen,
    seed: u64,
    index: u64,
    data: &[TableData],
    txns: &mut [Txn],
) {
    if !g.cfg.features.deferred_key_shapes {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    if !rng.chance(1, 2) {
        return;
    }
    let links = links(g, data);
    let Some(link) = rng.try_pick(&links) else {
        return;
    };
    let hosts: Vec<(usize, Vec<usize>)> = txns
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.autocommit && !t.begin().read_only)
        .filter(|(_, t)| super::moves::commit_of(t).is_some())
        // Drawn after the cursors: none in the transaction, so no write
        // lands between a cursor's steps.
        .filter(|(_, t)| !t.stmts.iter().any(|s| opens_cursor(&s.stmt)))
        .map(|(i, t)| {
            let data: Vec<usize> = (0..t.stmts.len())
                .filter(|&j| super::moves::replaceable(&t.stmts[j].stmt))
                .collect();
            (i, data)
        })
        .filter(|(_, d)| d.len() >= 2)
        .collect();
    let Some((host, slots)) = rng.try_pick(&hosts).cloned() else {
        return;
    };
    let rid = g.next_rid;
    let no_action = link.fk.on_delete == crate::model::FkAction::NoAction;
    let stmts = if no_action && rng.chance(1, 2) {
        reinsert(g, &mut rng, link, rid)
    } else if no_action && (!link.fk.on_update.writes_children() || rng.chance(1, 2)) {
        child_write(g, &mut rng, link)
    } else {
        action_after_violation(g, &mut rng, link)
    };
    let Some(stmts) = stmts else { return };
    if stmts.iter().any(|s| matches!(s, Stmt::Insert(_))) {
        g.next_rid += 1;
    }
    // Consecutive data statements of the transaction, from a random start.
    let start = rng.below((slots.len() - stmts.len() + 1) as u64) as usize;
    for (slot, stmt) in slots[start..].iter().zip(stmts) {
        txns[host].stmts[*slot].stmt = stmt;
    }
}

/// Every deferred one-column key to a parent with a one-column primary key
/// and two parents with children at generation.
fn links<'a>(g: &'a Gen, data: &'a [TableData]) -> Vec<Link<'a>> {
    let rows = |name: &str| -> &'a [Row] {
        data.iter()
            .find(|d| d.table == name)
            .map(|d| d.rows.as_slice())
            .unwrap_or(&[])
    };
    let col = |t: usize, name: &str| {
        g.schema.tables[t]
            .columns
            .iter()
            .position(|c| c.name == name)
    };
    let table = |name: &str| g.schema.tables.iter().position(|t| t.name == name);
    let mut out = Vec::new();
    for (child, ct) in g.schema.tables.iter().enumerate() {
        for fk in &ct.foreign_keys {
            let ([fk_col], [ref_col]) = (fk.columns.as_slice(), fk.ref_columns.as_slice()) else {
                continue;
            };
            if fk.deferrable != Some(Deferral::InitiallyDeferred) {
                continue;
            }
            let Some(parent) = table(&fk.ref_table) else {
                continue;
            };
            let pt = &g.schema.tables[parent];
            if pt.primary_key.as_slice() != [ref_col.clone()] || parent == child {
                continue;
            }
            let (Some(fk_col), Some(parent_key)) = (col(child, fk_col), col(parent, ref_col))
            else {
                continue;
            };
            let link = Link {
                child,
                fk_col,
                parent,
                parent_key,
                fk,
                parents: rows(&pt.name),
                children: rows(&ct.name),
            };
            if referenced(&link).len() >= 2 {
                out.push(link);
            }
        }
    }
    out
}

/// The children's rows of parent key `k`.
fn children_of<'a>(link: &'a Link, k: &Value) -> Vec<&'a Row> {
    link.children
        .iter()
        .filter(|r| r.values.get(link.fk_col) == Some(k))
        .collect()
}

/// Parent keys with at least one child.
fn referenced(link: &Link) -> Vec<Value> {
    link.parents
        .iter()
        .filter_map(|r| r.values.get(link.parent_key).cloned())
        .filter(|k| !children_of(link, k).is_empty())
        .collect()
}

/// A value of the parent key's type that no parent row holds.
fn missing_key(g: &Gen, rng: &mut Rng, link: &Link) -> Option<Value> {
    let held: Vec<Value> = link
        .parents
        .iter()
        .filter_map(|r| r.values.get(link.parent_key).cloned())
        .collect();
    super::phantom::fresh_value(rng, g.col_type(link.parent, link.parent_key), &held)
}

fn key_eq(g: &Gen, t: usize, c: usize, v: Value) -> Expr {
    Expr::eq(Expr::col(&g.schema.tables[t].columns[c].name), Expr::lit(v))
}

/// `UPDATE child SET fk = m WHERE fk = y`, then the parent write whose
/// action writes the children of another parent `x`.
fn action_after_violation(g: &Gen, rng: &mut Rng, link: &Link) -> Option<Vec<Stmt>> {
    let on_update = link.fk.on_update.writes_children();
    let on_delete = link.fk.on_delete.writes_children();
    if !on_update && !on_delete {
        return None;
    }
    let mut keys = referenced(link);
    let y = keys.remove(rng.below(keys.len() as u64) as usize);
    let x = rng.try_pick(&keys)?.clone();
    let m = missing_key(g, rng, link)?;
    let orphan = Stmt::Update(Update {
        table: g.table_name(link.child),
        assignments: vec![Assignment {
            column: g.schema.tables[link.child].columns[link.fk_col]
                .name
                .clone(),
            value: Expr::lit(m.clone()),
        }],
        where_: Some(key_eq(g, link.child, link.fk_col, y)),
    });
    let parent = g.table_name(link.parent);
    let action = if on_update && (!on_delete || rng.chance(1, 2)) {
        // A new key other than the orphan's missing one.
        let held: Vec<Value> = link
            .parents
            .iter()
            .filter_map(|r| r.values.get(link.parent_key).cloned())
            .chain([m])
            .collect();
        let ty = g.col_type(link.parent, link.parent_key);
        let v = super::phantom::fresh_value(rng, ty, &held)?;
        Stmt::Update(Update {
            table: parent,
            assignments: vec![Assignment {
                column: g.schema.tables[link.parent].columns[link.parent_key]
                    .name
                    .clone(),
                value: Expr::lit(v),
            }],
            where_: Some(key_eq(g, link.parent, link.parent_key, x)),
        })
    } else {
        Stmt::Delete(Delete {
            table: parent,
            where_: Some(key_eq(g, link.parent, link.parent_key, x)),
        })
    };
    Some(vec![orphan, action])
}

/// `DELETE FROM parent WHERE key = x OR key = z`, then the row of `x`
/// again, with row id `rid`.
fn reinsert(g: &Gen, rng: &mut Rng, link: &Link, rid: i64) -> Option<Vec<Stmt>> {
    // `x` has the most children: turso repays a deleted parent's
    // violations per child of the parent inserted again (docs/bugs.md).
    let mut keys = referenced(link);
    let most = keys.iter().map(|k| children_of(link, k).len()).max()?;
    let first: Vec<usize> = (0..keys.len())
        .filter(|&i| children_of(link, &keys[i]).len() == most)
        .collect();
    let x = keys.remove(*rng.pick(&first));
    let z = rng.pick(&keys).clone();
    let row = link
        .parents
        .iter()
        .find(|r| r.values.get(link.parent_key) == Some(&x))?
        .clone();
    let delete = Stmt::Delete(Delete {
        table: g.table_name(link.parent),
        where_: Some(Expr::bin(
            BinOp::Or,
            key_eq(g, link.parent, link.parent_key, x),
            key_eq(g, link.parent, link.parent_key, z),
        )),
    });
    let columns = &g.schema.tables[link.parent].columns;
    let insert = Stmt::Insert(crate::model::Insert {
        table: g.table_name(link.parent),
        columns: columns.iter().map(|c| c.name.clone()).collect(),
        rows: vec![row.values.into_iter().map(Expr::lit).collect()],
        rids: vec![rid],
        on_conflict: OnConflict::Error,
        select: None,
    });
    Some(vec![delete, insert])
}

/// `DELETE FROM parent WHERE key = x` (`x` a parent with the most
/// children), then a write of one of its children by its primary key: its
/// key moved to another parent (two times in three) or the child deleted.
/// The other children stay orphans, so COMMIT must fail; turso counts one
/// violation for the deleted parent when the child column is indexed, which
/// the child's write repays (docs/bugs.md).
fn child_write(g: &Gen, rng: &mut Rng, link: &Link) -> Option<Vec<Stmt>> {
    let ct = &g.schema.tables[link.child];
    let keys = referenced(link);
    let most = keys.iter().map(|k| children_of(link, k).len()).max()?;
    let first: Vec<&Value> = keys
        .iter()
        .filter(|k| children_of(link, k).len() == most)
        .collect();
    let x = (*rng.pick(&first)).clone();
    let child = (*rng.pick(&children_of(link, &x))).clone();
    let other: Vec<Value> = link
        .parents
        .iter()
        .filter_map(|r| r.values.get(link.parent_key).cloned())
        .filter(|k| *k != x)
        .collect();
    let by_key = ct
        .primary_key
        .iter()
        .map(|name| {
            let c = ct.columns.iter().position(|col| &col.name == name)?;
            Some(key_eq(g, link.child, c, child.values.get(c)?.clone()))
        })
        .collect::<Option<Vec<Expr>>>()?
        .into_iter()
        .reduce(Expr::and)?;
    let delete = Stmt::Delete(Delete {
        table: g.table_name(link.parent),
        where_: Some(key_eq(g, link.parent, link.parent_key, x)),
    });
    let write = match rng.try_pick(&other) {
        Some(y) if !rng.chance(1, 3) => Stmt::Update(Update {
            table: g.table_name(link.child),
            assignments: vec![Assignment {
                column: ct.columns[link.fk_col].name.clone(),
                value: Expr::lit(y.clone()),
            }],
            where_: Some(by_key),
        }),
        _ => Stmt::Delete(Delete {
            table: g.table_name(link.child),
            where_: Some(by_key),
        }),
    };
    Some(vec![delete, write])
}

/// Whether `stmt` opens a cursor.
fn opens_cursor(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Select(s) if s.cursor.is_some())
}
