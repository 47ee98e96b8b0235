//! The schedules of live MariaDB bugs, as key/value cases (`t(k, v)`):
//! each shows its bug on MariaDB 10.11 (tests/noop_update.rs, tests/export.rs).

use super::{autocommit, committed, insert, kv_case, rekey, select, set, set_where_v};
use crate::model::{
    Assignment, BinOp, Expr, Isolation, LockMode, SelectItem, Stmt, TestCase, Update, Value,
};

/// MDEV-26642 at REPEATABLE READ: t = {(0,0), (1,1)}; T1 opens its read
/// view, T2 sets k=1 to 10 and commits, T1 sets every row to 10 (k=1
/// unchanged) and reads: it does not see its own update.
pub fn mdev_26642() -> TestCase {
    let set_all_to_10 = Stmt::Update(Update {
        table: "t".into(),
        assignments: vec![Assignment {
            column: "v".into(),
            value: Expr::Lit(Value::Int(10)),
        }],
        where_: None,
    });
    let mut c = kv_case(
        &[(0, 0), (1, 1)],
        vec![
            committed(vec![
                select("t", None),
                select("t", None),
                set_all_to_10,
                select("t", None),
            ]),
            autocommit(vec![set("t", 1, 10)]),
        ],
        "1 1 2 1 1 1 1",
    );
    c.isolation = Isolation::RepeatableRead;
    c
}

/// MDEV-32898 at REPEATABLE READ: t = {(1,10), (2,20)}; T1 opens its read
/// view, T2 moves k=1 to k=5 and commits, T1 updates the row by value (a
/// current read finds it at k=5) and reads: its own update at k=5 and the
/// old record at k=1.
pub fn mdev_32898() -> TestCase {
    let mut c = kv_case(
        &[(1, 10), (2, 20)],
        vec![
            committed(vec![
                select("t", None),
                set_where_v("t", 10, 99),
                select("t", None),
            ]),
            autocommit(vec![rekey("t", 1, 5)]),
        ],
        "1 1 2 1 1 1",
    );
    c.isolation = Isolation::RepeatableRead;
    c
}

/// `SELECT a.k, a.v FROM t AS a WHERE a.v IN (SELECT s.v FROM t AS s WHERE
/// s.v = a.v AND s.k >= 1) FOR UPDATE`
pub fn locking_read_with_subquery() -> Stmt {
    let Stmt::Select(mut outer) = select("t", None) else {
        unreachable!()
    };
    let Stmt::Select(mut sub) = select("t", None) else {
        unreachable!()
    };
    outer.from[0].alias = "a".into();
    sub.from[0].alias = "s".into();
    sub.items = vec![SelectItem {
        expr: Expr::qcol("s", "v"),
        alias: None,
    }];
    sub.where_ = Some(Expr::bin(
        BinOp::And,
        Expr::eq(Expr::qcol("s", "v"), Expr::qcol("a", "v")),
        Expr::bin(BinOp::Ge, Expr::qcol("s", "k"), Expr::Lit(Value::Int(1))),
    ));
    outer.items = ["k", "v"]
        .iter()
        .map(|c| SelectItem {
            expr: Expr::qcol("a", c),
            alias: None,
        })
        .collect();
    outer.where_ = Some(Expr::InSubquery {
        expr: Box::new(Expr::qcol("a", "v")),
        query: Box::new(sub),
        negated: false,
    });
    outer.lock = Some(LockMode::ForUpdate);
    Stmt::Select(outer)
}

/// The known issue `innodb-locking-read-subquery-read-view` at
/// SERIALIZABLE: t = {(0,7), (1,10)}; T1 sets k=1's v to 7 and inserts
/// (2,7); T2's autocommit [`locking_read_with_subquery`] scans k=0, waits
/// for k=1's lock, then reads the outer rows current but evaluates the
/// subquery in a read view from before T1 committed. Serial results: T1
/// first (the read waited for T1): {(0,7), (1,7), (2,7)}.
pub fn locking_read_subquery_read_view() -> TestCase {
    let mut c = kv_case(
        &[(0, 7), (1, 10)],
        vec![
            committed(vec![set("t", 1, 7), insert("t", 3, 2, 7)]),
            autocommit(vec![locking_read_with_subquery()]),
        ],
        "1 1 1 2 1",
    );
    c.isolation = Isolation::Serializable;
    c
}
