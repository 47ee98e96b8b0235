//! The turso draws after the cursors: REPLACEs that conflict with a parent
//! of children (`gen::replace_parent`) and subqueries on the null side of a
//! LEFT JOIN (`gen::outer_join`).

use super::*;
use crate::model::{JoinKind, Select};

/// Case `i` of seed 9 with `on`, and with it off.
fn pair(i: u64, on: Features) -> (TestCase, TestCase) {
    let c = generate_case(9, i, &cfg_for(on));
    let plain = generate_case(9, i, &cfg_for(Features::sqlite()));
    c.validate().expect("valid");
    assert_eq!(c.schema, plain.schema);
    assert_eq!(c.data, plain.data);
    assert_eq!(c.submit_order, plain.submit_order);
    (c, plain)
}

/// With the REPLACEs on, every case is the one without them but for at
/// most one data statement, which became a REPLACE into a table whose
/// one-column UNIQUE value it shares with a row at generation that has
/// children, and whose key is another row's.
#[test]
fn parent_replaces_conflict_with_a_parent_of_children_on_a_stream_of_their_own() {
    let mut shapes = 0;
    for i in 0..1000 {
        let (c, plain) = pair(
            i,
            Features {
                parent_replaces: true,
                ..Features::sqlite()
            },
        );
        let changed = changed_statements(&c, &plain);
        assert!(changed.len() <= 1, "{changed:?}");
        let Some(&r) = changed.first() else { continue };
        shapes += 1;
        let Stmt::Insert(ins) = &c.stmt(r).unwrap().stmt else {
            panic!("{:?}", c.stmt(r))
        };
        assert_eq!(ins.on_conflict, OnConflict::Replace);
        let t = c.schema.table(&ins.table).unwrap();
        let k = t
            .columns
            .iter()
            .position(|x| x.name == t.primary_key[0])
            .unwrap();
        let rows: Vec<&Vec<Value>> = c
            .data
            .iter()
            .filter(|d| d.table == t.name)
            .flat_map(|d| d.rows.iter().map(|r| &r.values))
            .collect();
        let lit = |e: &Expr| match e {
            Expr::Lit(v) => v.clone(),
            other => panic!("{other:?}"),
        };
        let values: Vec<Value> = ins.rows[0].iter().map(lit).collect();
        // Another row's key, and a UNIQUE value of a row with another key.
        assert!(rows.iter().any(|r| r[k] == values[k]), "{ins:?}");
        let shares = t.uniques.iter().any(|u| {
            let Some(u) = t.columns.iter().position(|x| x.name == u[0]) else {
                return false;
            };
            rows.iter()
                .any(|r| r[k] != values[k] && r[u] == values[u] && !r[u].is_null())
        });
        assert!(shares, "{ins:?} over {rows:?}");
    }
    eprintln!("{shapes} parent replaces in 1000 cases");
    assert!((5..500).contains(&shapes), "{shapes} shapes");
}

/// With the outer joins on, every case is the one without them but for at
/// most one plain SELECT, which became a self LEFT JOIN whose WHERE is a
/// correlated EXISTS on the joined table's key.
#[test]
fn null_side_subqueries_replace_one_plain_select_on_a_stream_of_their_own() {
    let mut shapes = 0;
    for i in 0..1000 {
        let (c, plain) = pair(
            i,
            Features {
                null_side_subqueries: true,
                ..Features::sqlite()
            },
        );
        let changed = changed_statements(&c, &plain);
        assert!(changed.len() <= 1, "{changed:?}");
        let Some(&r) = changed.first() else { continue };
        shapes += 1;
        let Stmt::Select(was) = &plain.stmt(r).unwrap().stmt else {
            panic!("replaced a statement that was no SELECT")
        };
        assert!(was.cursor.is_none() && was.lock.is_none());
        let Stmt::Select(s) = &c.stmt(r).unwrap().stmt else {
            unreachable!()
        };
        let Select { from, where_, .. } = s;
        assert_eq!(from.len(), 2);
        assert_eq!(from[0].table, from[1].table);
        assert_eq!(from[1].join.as_ref().map(|j| j.kind), Some(JoinKind::Left));
        let Some(Expr::Exists {
            query,
            negated: false,
        }) = where_
        else {
            panic!("{s:?}")
        };
        assert_eq!(query.from[0].table, from[0].table);
    }
    eprintln!("{shapes} outer joins in 1000 cases");
    assert!((5..250).contains(&shapes), "{shapes} shapes");
}
