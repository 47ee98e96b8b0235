//! Locking reads that wait for a writer of what their subquery compares
//! (`gen::subquery_view`, MariaDB).

use super::*;
use crate::model::Update;

/// One case in two whose submit order allows it gets the shape, on a
/// stream of its own: with it off, every case is the same but for a data
/// statement of an explicit read-write transaction A that became `UPDATE t
/// SET c = w WHERE pk = x` (`w` held by no row of `t` at generation) and
/// one of an autocommit transaction B at SERIALIZABLE, submitted after it
/// and before A's COMMIT, that became `SELECT ... FROM t AS a0 WHERE a0.c IN
/// (SELECT sq.c FROM t AS sq WHERE sq.c = a0.c)` with a locking clause.
#[test]
fn subquery_read_views_wait_for_a_writer_of_the_compared_column_on_a_stream_of_their_own() {
    let mysql = cfg_for(Features::mysql());
    let without = cfg_for(Features {
        subquery_read_views: false,
        ..Features::mysql()
    });
    let (mut shapes, mut eligible) = (0, 0);
    for i in 0..600 {
        let c = generate_case(6, i, &mysql);
        let plain = generate_case(6, i, &without);
        c.validate().expect("valid");
        assert_eq!(c.schema, plain.schema);
        assert_eq!(c.data, plain.data);
        assert_eq!(c.submit_order, plain.submit_order);
        let serializable_autocommit = c
            .txns
            .iter()
            .any(|t| t.autocommit && t.isolation.unwrap_or(c.isolation) == Isolation::Serializable);
        if serializable_autocommit {
            eligible += 1;
        }
        let changed = changed_statements(&c, &plain);
        if changed.is_empty() {
            continue;
        }
        shapes += 1;
        // Each may already have been the statement it became: at most two.
        assert!(changed.len() <= 2, "{changed:?} in {c:?}");
        let stmt = |r: StmtRef| &c.stmt(r).unwrap().stmt;
        let pos = |r: StmtRef| c.submit_order.iter().position(|x| *x == r).unwrap();
        let reads: Vec<StmtRef> = changed
            .iter()
            .filter(|r| matches!(stmt(**r), Stmt::Select(_)))
            .copied()
            .collect();
        let Some(&read) = reads.first() else {
            // Only A's write changed: B's read was that read already.
            continue;
        };
        let Stmt::Select(s) = stmt(read) else {
            unreachable!()
        };
        let b = c.txn(read.txn).unwrap();
        assert!(b.autocommit, "{c:?}");
        assert_eq!(b.isolation.unwrap_or(c.isolation), Isolation::Serializable);
        assert!(s.lock.is_some(), "{s:?}");
        let Some(Expr::InSubquery {
            expr,
            query,
            negated: false,
        }) = &s.where_
        else {
            panic!("{s:?}")
        };
        let Expr::Col { name: col, .. } = expr.as_ref() else {
            panic!("{expr:?}")
        };
        assert_eq!(query.from[0].table, s.from[0].table);
        let table = c.schema.table(&s.from[0].table).unwrap();
        // A's write: the UPDATE of that column by the key, in a
        // transaction that commits after B's read.
        let writes: Vec<(StmtRef, &Update)> = c
            .txns
            .iter()
            .filter(|t| !t.autocommit)
            .flat_map(|t| {
                (0..t.stmts.len()).filter_map(move |j| {
                    let r = StmtRef {
                        txn: t.id,
                        index: j as u32,
                    };
                    match &t.stmts[j].stmt {
                        Stmt::Update(u)
                            if u.table == table.name
                                && u.assignments.len() == 1
                                && &u.assignments[0].column == col =>
                        {
                            Some((r, u))
                        }
                        _ => None,
                    }
                })
            })
            .filter(|(r, _)| pos(*r) < pos(read))
            .collect();
        let fits = writes.iter().any(|(w, u)| {
            let a = c.txn(w.txn).unwrap();
            let commit = a.stmts.iter().position(|s| s.stmt == Stmt::Commit);
            let ci = table.columns.iter().position(|x| &x.name == col);
            let held = c
                .data
                .iter()
                .filter(|d| d.table == table.name)
                .flat_map(|d| &d.rows)
                .filter_map(|row| row.values.get(ci?))
                .any(|v| Expr::lit(v.clone()) == u.assignments[0].value);
            let by_key =
                super::moves::key_equality(u.where_.as_ref().unwrap(), &table.primary_key[0])
                    .is_some();
            commit.is_some_and(|j| {
                pos(StmtRef {
                    txn: a.id,
                    index: j as u32,
                }) > pos(read)
            }) && !held
                && by_key
        });
        assert!(fits, "no write of A fits B's read {read:?}: {c:?}");
    }
    eprintln!("{shapes} shapes in {eligible} eligible cases");
    assert!(
        (eligible / 20..eligible / 2).contains(&shapes),
        "{shapes} shapes in {eligible} cases with an autocommit transaction at SERIALIZABLE"
    );
}
