//! The schedules of live MariaDB bugs, as key/value cases (`t(k, v)`):
//! each shows its bug on MariaDB 10.11 (tests/noop_update.rs, tests/export.rs).

use super::{autocommit, committed, kv_case, rekey, select, set, set_where_v};
use crate::model::{Assignment, Expr, Isolation, Stmt, TestCase, Update, Value};

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
