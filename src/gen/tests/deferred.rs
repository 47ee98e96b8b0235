//! Deferred foreign-key violations a later statement must not repay
//! (`gen::deferred`, turso).

use super::*;
use crate::model::{Deferral, FkAction};

/// One case in two with a DEFERRABLE INITIALLY DEFERRED key gets a shape,
/// on a stream of its own: with it off, every case is the same but for two
/// data statements of one explicit read-write transaction that commits,
/// which became either an UPDATE of the child's key column to a value no
/// parent holds followed by a parent write the key's action answers, a
/// DELETE of two parents followed by an INSERT of the parent table, or a
/// DELETE of a parent followed by a write of one of its children.
#[test]
fn deferred_violations_meet_an_action_a_reinsert_or_a_child_write_on_a_stream_of_their_own() {
    let with = cfg_for(Features {
        deferred_key_shapes: true,
        ..Features::sqlite()
    });
    let without = cfg_for(Features::sqlite());
    let (mut deferred, mut actions, mut reinserts, mut child_writes) = (0, 0, 0, 0);
    for i in 0..1500 {
        let c = generate_case(8, i, &with);
        let plain = generate_case(8, i, &without);
        c.validate().expect("valid");
        assert_eq!(c.schema, plain.schema);
        assert_eq!(c.data, plain.data);
        assert_eq!(c.submit_order, plain.submit_order);
        let has_deferred = c.schema.tables.iter().any(|t| {
            t.foreign_keys
                .iter()
                .any(|f| f.deferrable == Some(Deferral::InitiallyDeferred))
        });
        if has_deferred {
            deferred += 1;
        }
        let changed = changed_statements(&c, &plain);
        if changed.is_empty() {
            continue;
        }
        assert!(has_deferred, "{c:?}");
        assert!(changed.len() <= 2, "{changed:?}");
        let txn = c.txn(changed[0].txn).unwrap();
        assert!(changed.iter().all(|r| r.txn == txn.id));
        assert!(!txn.autocommit && txn.stmts.iter().any(|s| s.stmt == Stmt::Commit));
        // The shape's statements, changed or already what they became.
        let stmts: Vec<&Stmt> = txn.stmts.iter().map(|s| &s.stmt).collect();
        let child_orphan = stmts.iter().position(|s| {
            matches!(s, Stmt::Update(u) if c.schema.table(&u.table).is_some_and(|t|
                t.foreign_keys.iter().any(|f| f.deferrable == Some(Deferral::InitiallyDeferred)
                    && u.assignments.len() == 1 && f.columns == [u.assignments[0].column.clone()])))
        });
        let two_parents = stmts.iter().position(|s| {
            matches!(s, Stmt::Delete(d) if matches!(&d.where_, Some(Expr::Bin { op: crate::model::BinOp::Or, .. })))
        });
        // A DELETE of a deferred NO ACTION key's parent by one key, then a
        // write of the child table (the key moved, or the row deleted).
        let no_action_key = |child: &str, parent: &str| {
            c.schema.table(child).is_some_and(|t| {
                t.foreign_keys.iter().any(|f| {
                    f.ref_table == parent
                        && f.deferrable == Some(Deferral::InitiallyDeferred)
                        && f.on_delete == FkAction::NoAction
                })
            })
        };
        let parent_then_child = stmts.iter().enumerate().find_map(|(d, s)| {
            let Stmt::Delete(del) = s else { return None };
            if !matches!(
                &del.where_,
                Some(Expr::Bin {
                    op: crate::model::BinOp::Eq,
                    ..
                })
            ) {
                return None;
            }
            let w = stmts.iter().skip(d + 1).position(|w| match w {
                Stmt::Update(u) => no_action_key(&u.table, &del.table),
                Stmt::Delete(x) => no_action_key(&x.table, &del.table),
                _ => false,
            })? + d
                + 1;
            changed
                .iter()
                .any(|r| r.index as usize == d || r.index as usize == w)
                .then_some(())
        });
        if parent_then_child.is_some() {
            child_writes += 1;
            continue;
        }
        match (child_orphan, two_parents) {
            (Some(o), _) if changed.iter().any(|r| r.index as usize == o) => {
                let Stmt::Update(u) = stmts[o] else {
                    unreachable!()
                };
                let fk = c
                    .schema
                    .table(&u.table)
                    .unwrap()
                    .foreign_keys
                    .iter()
                    .find(|f| f.columns == [u.assignments[0].column.clone()])
                    .unwrap();
                assert!(fk.on_delete.writes_children() || fk.on_update.writes_children());
                // The orphan's key is no parent's at generation.
                let parent = c.schema.table(&fk.ref_table).unwrap();
                let k = parent
                    .columns
                    .iter()
                    .position(|x| x.name == fk.ref_columns[0])
                    .unwrap();
                let Expr::Lit(m) = &u.assignments[0].value else {
                    panic!("{u:?}")
                };
                assert!(c
                    .data
                    .iter()
                    .filter(|d| d.table == parent.name)
                    .flat_map(|d| &d.rows)
                    .all(|r| r.values[k] != *m));
                // A write of the parent after it.
                assert!(
                    stmts[o + 1..].iter().any(|s| match s {
                        Stmt::Update(w) => w.table == parent.name,
                        Stmt::Delete(d) => d.table == parent.name,
                        _ => false,
                    }),
                    "{stmts:?}"
                );
                actions += 1;
            }
            (_, Some(d)) => {
                let Stmt::Delete(del) = stmts[d] else {
                    unreachable!()
                };
                let fk_to = |t: &crate::model::Table| {
                    t.foreign_keys.iter().any(|f| {
                        f.ref_table == del.table
                            && f.deferrable == Some(Deferral::InitiallyDeferred)
                            && f.on_delete == FkAction::NoAction
                    })
                };
                assert!(c.schema.tables.iter().any(fk_to), "{c:?}");
                assert!(
                    stmts[d + 1..]
                        .iter()
                        .any(|s| matches!(s, Stmt::Insert(i) if i.table == del.table)),
                    "{stmts:?}"
                );
                reinserts += 1;
            }
            _ => panic!("no shape in {stmts:?}"),
        }
    }
    eprintln!(
        "{actions} actions, {reinserts} reinserts, {child_writes} child writes in {deferred} cases with a deferred key"
    );
    assert!(actions > 0 && reinserts > 0 && child_writes > 0);
    let shapes = actions + reinserts + child_writes;
    assert!(
        (deferred / 20..deferred / 2).contains(&shapes),
        "{shapes} shapes in {deferred} cases with a deferred key"
    );
}
