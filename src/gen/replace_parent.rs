//! REPLACEs whose conflict deletes a referenced parent, drawn from a random
//! stream of their own, so the rest of a case is the one the same seed and
//! index gave before.
//!
//! A REPLACE that conflicts on a parent table's UNIQUE key deletes the row
//! holding that value; when that row has children of an immediate foreign
//! key, the statement must fail. turso lets it succeed and commits the
//! orphan when the child column has an index (known issue
//! `turso-replace-orphans-an-indexed-child`), which the generator's own
//! REPLACEs met in no seed of 3 within 2 minutes (BENCHMARKS.md, "turso and
//! turso MVCC").

use super::Gen;
use crate::model::{Expr, Insert, OnConflict, Row, Stmt, TableData, Txn};
use crate::rng::Rng;

/// Mixed into the seed of the stream.
const STREAM: u64 = 0x5245_504c_5f50_4152; // "REPL_PAR"

/// Where the engine's profile asks for them
/// ([`crate::model::Features::parent_replaces`]), one case in two with a
/// parent table whose one-column primary key an immediate foreign key
/// references, a one-column UNIQUE key, and two rows at generation, one
/// with children, has one data statement of a transaction without cursors
/// replaced by `REPLACE INTO parent VALUES (...)`: the row of another parent
/// `x` with the UNIQUE value of the parent `y` with children, so that the
/// conflicts delete both and the insert brings `x` back, leaving `y`'s
/// children without their parent.
pub(super) fn draw_parent_replaces(
    g: &mut Gen,
    seed: u64,
    index: u64,
    data: &[TableData],
    txns: &mut [Txn],
) {
    if !g.cfg.features.parent_replaces {
        return;
    }
    let mut rng = Rng::new(seed ^ STREAM, index);
    if !rng.chance(1, 2) {
        return;
    }
    let Some(stmt) = replace(g, data, &mut rng) else {
        return;
    };
    let slots: Vec<(usize, usize)> = txns
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.begin().read_only)
        // Drawn after the cursors: none in the transaction, so no write
        // lands between a cursor's steps.
        .filter(|(_, t)| {
            !t.stmts
                .iter()
                .any(|s| matches!(&s.stmt, Stmt::Select(q) if q.cursor.is_some()))
        })
        .flat_map(|(i, t)| {
            (0..t.stmts.len())
                .filter(|&j| super::moves::replaceable(&t.stmts[j].stmt))
                .map(move |j| (i, j))
        })
        .collect();
    let Some(&(i, j)) = rng.try_pick(&slots) else {
        return;
    };
    txns[i].stmts[j].stmt = stmt;
    g.next_rid += 1;
}

/// The REPLACE, with row id `g.next_rid`, where the schema and the rows at
/// generation (`data`) have the shape.
fn replace(g: &Gen, data: &[TableData], rng: &mut Rng) -> Option<Stmt> {
    let rows = |t: usize| -> &[Row] {
        let name = &g.schema.tables[t].name;
        data.iter()
            .find(|d| &d.table == name)
            .map(|d| d.rows.as_slice())
            .unwrap_or(&[])
    };
    let mut shapes: Vec<(usize, usize, usize, &Row, &Row)> = Vec::new();
    for (p, pt) in g.schema.tables.iter().enumerate() {
        let [pk] = pt.primary_key.as_slice() else {
            continue;
        };
        let col = |name: &str| pt.columns.iter().position(|c| c.name == name);
        let Some(k) = col(pk) else { continue };
        // Children of an immediate key to this table's key, by key value.
        let children: Vec<(usize, usize)> = g
            .schema
            .tables
            .iter()
            .enumerate()
            .filter(|&(c, _)| c != p)
            .flat_map(|(c, ct)| {
                ct.foreign_keys
                    .iter()
                    .filter(|f| f.ref_table == pt.name && f.ref_columns == [pk.clone()])
                    .filter(|f| f.deferrable.is_none() && !f.on_delete.writes_children())
                    .filter_map(move |f| {
                        let [fc] = f.columns.as_slice() else {
                            return None;
                        };
                        Some((c, ct.columns.iter().position(|x| &x.name == fc)?))
                    })
            })
            .collect();
        let has_children = |row: &Row| {
            let key = row.values.get(k);
            children
                .iter()
                .any(|&(c, fc)| rows(c).iter().any(|r| r.values.get(fc) == key))
        };
        for u in pt.uniques.iter().filter_map(|u| match u.as_slice() {
            [one] if one != pk => col(one),
            _ => None,
        }) {
            for y in rows(p).iter().filter(|r| has_children(r)) {
                if y.values.get(u).is_none_or(|v| v.is_null()) {
                    continue;
                }
                for x in rows(p)
                    .iter()
                    .filter(|r| r.values.get(k) != y.values.get(k))
                {
                    shapes.push((p, k, u, x, y));
                }
            }
        }
    }
    let &(p, _, u, x, y) = rng.try_pick(&shapes)?;
    let mut values = x.values.clone();
    values[u] = y.values[u].clone();
    let columns = &g.schema.tables[p].columns;
    Some(Stmt::Insert(Insert {
        table: g.table_name(p),
        columns: columns.iter().map(|c| c.name.clone()).collect(),
        rows: vec![values.into_iter().map(Expr::lit).collect()],
        rids: vec![g.next_rid],
        on_conflict: OnConflict::Replace,
        select: None,
    }))
}
