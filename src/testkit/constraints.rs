//! A parent/child schema for constraint tests: `p (k INT PRIMARY KEY, v INT
//! CHECK (v > -1000))` and `c (k INT PRIMARY KEY, pk INT REFERENCES p (k),
//! u INT UNIQUE)`, with builders for its statements.

use crate::model::*;

fn col(name: &str, not_null: bool) -> Column {
    Column {
        name: name.into(),
        ty: ColType::Int,
        not_null,
        default: None,
        auto_key: false,
    }
}

fn int(i: i64) -> Expr {
    Expr::Lit(Value::Int(i))
}

/// The parent table `p`.
pub fn parent_table() -> Table {
    Table {
        name: "p".into(),
        columns: vec![col("k", true), col("v", false)],
        primary_key: vec!["k".into()],
        uniques: vec![],
        checks: vec![Expr::bin(BinOp::Gt, Expr::col("v"), int(-1000))],
        indexes: vec![],
        foreign_keys: vec![],
    }
}

/// The child table `c`.
pub fn child_table() -> Table {
    Table {
        name: "c".into(),
        columns: vec![col("k", true), col("pk", false), col("u", false)],
        primary_key: vec!["k".into()],
        uniques: vec![vec!["u".into()]],
        checks: vec![],
        indexes: vec![],
        foreign_keys: vec![ForeignKey {
            columns: vec!["pk".into()],
            ref_table: "p".into(),
            ref_columns: vec!["k".into()],
            ..ForeignKey::default()
        }],
    }
}

/// `INSERT INTO p (k, v) VALUES (k, v)` with row id `rid`.
pub fn insert_parent(rid: i64, k: i64, v: i64) -> Stmt {
    Stmt::Insert(Insert {
        table: "p".into(),
        columns: vec!["k".into(), "v".into()],
        rows: vec![vec![int(k), int(v)]],
        rids: vec![rid],
        select: None,
        on_conflict: OnConflict::Error,
    })
}

/// `INSERT INTO c (k, pk) VALUES (k, pk)` with row id `rid`.
pub fn insert_child(rid: i64, k: i64, pk: i64) -> Stmt {
    Stmt::Insert(Insert {
        table: "c".into(),
        columns: vec!["k".into(), "pk".into()],
        rows: vec![vec![int(k), int(pk)]],
        rids: vec![rid],
        select: None,
        on_conflict: OnConflict::Error,
    })
}

/// `INSERT INTO c (k, u) VALUES (k, u)` with row id `rid`.
pub fn insert_child_u(rid: i64, k: i64, u: i64) -> Stmt {
    Stmt::Insert(Insert {
        table: "c".into(),
        columns: vec!["k".into(), "u".into()],
        rows: vec![vec![int(k), int(u)]],
        rids: vec![rid],
        select: None,
        on_conflict: OnConflict::Error,
    })
}

/// `INSERT INTO c (k, pk) SELECT k, a0.k FROM p a0 WHERE a0.k = pk ORDER
/// BY a0.k LIMIT 1` with row id `rid`: a child of parent `pk` if the
/// statement finds it.
pub fn insert_child_of_found_parent(rid: i64, k: i64, pk: i64) -> Stmt {
    let a0k = Expr::qcol("a0", "k");
    let query = Select {
        where_: Some(Expr::eq(a0k.clone(), int(pk))),
        order_by: vec![OrderBy {
            expr: a0k.clone(),
            desc: false,
        }],
        limit: Some(1),
        ..query("p", "a0", vec![int(k), a0k])
    };
    insert_select("c", &["k", "pk"], rid, query)
}

/// `INSERT INTO p (k, v) SELECT COALESCE(MAX(a0.k), 0) + 1, v FROM p a0`
/// with row id `rid`: the next parent key, read then written.
pub fn insert_next_parent(rid: i64, v: i64) -> Stmt {
    let max = Expr::Agg {
        func: AggFn::Max,
        arg: Some(Box::new(Expr::qcol("a0", "k"))),
    };
    let next = Expr::bin(
        BinOp::Add,
        Expr::Coalesce(Box::new(max), Box::new(int(0))),
        int(1),
    );
    insert_select("p", &["k", "v"], rid, query("p", "a0", vec![next, int(v)]))
}

/// `INSERT INTO table (columns) <query>` with row id `rid`.
pub fn insert_select(table: &str, columns: &[&str], rid: i64, query: Select) -> Stmt {
    Stmt::Insert(Insert {
        table: table.into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: vec![],
        rids: vec![rid],
        select: Some(Box::new(query)),
        on_conflict: OnConflict::Error,
    })
}

/// `SELECT items FROM table AS alias`.
pub fn query(table: &str, alias: &str, items: Vec<Expr>) -> Select {
    Select {
        distinct: false,
        items: items.into_iter().map(item).collect(),
        from: vec![FromItem {
            table: table.into(),
            alias: alias.into(),
            join: None,
        }],
        where_: None,
        group_by: vec![],
        order_by: vec![],
        limit: None,
        lock: None,
        cursor: None,
    }
}

fn item(expr: Expr) -> SelectItem {
    SelectItem { expr, alias: None }
}

/// `DELETE FROM c WHERE k = k`
pub fn delete_child(k: i64) -> Stmt {
    Stmt::Delete(Delete {
        table: "c".into(),
        where_: Some(Expr::eq(Expr::col("k"), int(k))),
    })
}

/// `DELETE FROM c WHERE u = u`
pub fn delete_child_u(u: i64) -> Stmt {
    Stmt::Delete(Delete {
        table: "c".into(),
        where_: Some(Expr::eq(Expr::col("u"), int(u))),
    })
}

/// `DELETE FROM p WHERE k = k`
pub fn delete_parent(k: i64) -> Stmt {
    Stmt::Delete(Delete {
        table: "p".into(),
        where_: Some(Expr::eq(Expr::col("k"), int(k))),
    })
}

/// `SELECT k, v FROM p`
pub fn select_parents() -> Stmt {
    Stmt::Select(query("p", "p", vec![Expr::col("k"), Expr::col("v")]))
}

/// `SELECT k, pk, u FROM c`
pub fn select_children() -> Stmt {
    let items = ["k", "pk", "u"].iter().map(|c| Expr::col(c)).collect();
    Stmt::Select(query("c", "c", items))
}

/// A case over `p` (rows `(k, v)`, row ids 1, 2, ...) and `c` (rows `(k,
/// pk)`, row ids 101, 102, ...), with sessions and submit order as in
/// [`super::kv_case`].
pub fn parent_child_case(
    parents: &[(i64, i64)],
    children: &[(i64, i64)],
    txns: Vec<(bool, Vec<Stmt>)>,
    order: &str,
) -> TestCase {
    let mut case = super::kv_case(&[], txns, order);
    case.schema.tables = vec![parent_table(), child_table()];
    case.data = vec![
        TableData {
            table: "p".into(),
            rows: parents
                .iter()
                .enumerate()
                .map(|(i, &(k, v))| Row {
                    rid: i as i64 + 1,
                    values: vec![Value::Int(k), Value::Int(v)],
                })
                .collect(),
        },
        TableData {
            table: "c".into(),
            rows: children
                .iter()
                .enumerate()
                .map(|(i, &(k, pk))| Row {
                    rid: i as i64 + 101,
                    values: vec![Value::Int(k), Value::Int(pk), Value::Null],
                })
                .collect(),
        },
    ];
    case
}
