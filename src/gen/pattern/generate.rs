//! A test case from a pattern (APTrans Algorithm 1): a small schema, one
//! existing row per data item (chosen by primary key), a statement of the
//! right kind per operation with its condition aligned on the item's row, and
//! the pattern's order as the submit order (BEGIN right before a transaction's
//! first operation).
//!
//! Alignment: a read of `x` is a SELECT whose WHERE selects `x`'s row by key —
//! sometimes together with "read filler" rows (an IN list, a key range, an OR)
//! or joined to a child table; a write of `x` is an UPDATE of a non-key column
//! of `x`'s row by key, sometimes together with a row private to the writing
//! transaction. Filler rows are never written by one transaction and read by
//! another, so they add no dependency between transactions: the case's
//! dependencies are exactly those the pattern prescribes.

use super::parser::{OpKind, Pattern};
use crate::model::*;
use crate::rng::Rng;

/// Where the pattern's items and operations landed in the case.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Binding {
    /// Item name, table, row id.
    pub items: Vec<(String, String, i64)>,
    /// The statement of each pattern operation.
    pub ops: Vec<StmtRef>,
}

impl Binding {
    pub fn row_of(&self, item: &str) -> Option<(&str, i64)> {
        self.items
            .iter()
            .find(|(i, _, _)| i == item)
            .map(|(_, t, r)| (t.as_str(), *r))
    }
}

const T0: &str = "t0";
const T1: &str = "t1";

fn col(name: &str, ty: ColType, not_null: bool) -> Column {
    Column {
        name: name.into(),
        ty,
        not_null,
        default: None,
        auto_key: false,
    }
}

fn table(name: &str, columns: Vec<Column>) -> Table {
    Table {
        name: name.into(),
        columns,
        primary_key: vec!["id".into()],
        uniques: vec![],
        checks: vec![],
        indexes: vec![],
        foreign_keys: vec![],
    }
}

fn int(i: i64) -> Expr {
    Expr::Lit(Value::Int(i))
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Item,
    ReadFiller,
    WriteFiller(u32),
}

struct Plan {
    c1: ColType,
    /// t0 rows: (rid, key, role)
    rows: Vec<(i64, i64, Role)>,
    join: bool,
}

fn value(rng: &mut Rng, ty: ColType) -> Value {
    match ty {
        ColType::Decimal => Value::decimal_cents(rng.range(-5000, 5000)),
        ColType::Varchar(_) => Value::Text(format!("v{}", rng.below(100))),
        _ => Value::Int(rng.range(-100, 100)),
    }
}

/// Case `index` of a pattern campaign with seed `seed`: the pattern's case at
/// one of `isolations` (picked by the RNG; SERIALIZABLE if empty).
pub fn generate(
    seed: u64,
    index: u64,
    p: &Pattern,
    isolations: &[Isolation],
) -> (TestCase, Binding) {
    let mut rng = Rng::new(seed, index);
    let isolation = rng
        .try_pick(isolations)
        .copied()
        .unwrap_or(Isolation::Serializable);
    let items = p.items();
    let n = p.txn_count();
    let plan = plan(&mut rng, items.len(), n);
    let (t0, t0_data) = item_table(&mut rng, &plan);
    let mut tables = vec![t0];
    let mut data = vec![t0_data];
    if plan.join {
        let (t1, t1_data) = child_table(&mut rng, &plan);
        tables.push(t1);
        data.push(t1_data);
    }
    let item_row = |name: &str| {
        let i = items.iter().position(|x| x == name).expect("item");
        plan.rows[i]
    };
    let (stmts, refs, order) = statements(&mut rng, p, &plan, item_row);
    let binding = Binding {
        items: items
            .iter()
            .map(|i| (i.clone(), T0.to_string(), item_row(i).0))
            .collect(),
        ops: refs,
    };
    let case = TestCase {
        format: CASE_FORMAT,
        seed,
        index,
        isolation,
        schema: Schema { tables },
        data,
        txns: numbered_txns(stmts),
        submit_order: order,
        checkpoint: false,
    };
    (case, binding)
}

/// The rows of t0 and their roles: one per item, one or two read fillers and
/// maybe a write filler per transaction, on shuffled keys; whether t1 joins.
fn plan(rng: &mut Rng, item_count: usize, n: u32) -> Plan {
    let c1 = *rng.pick(&[ColType::Int, ColType::Decimal, ColType::Varchar(20)]);
    let mut roles: Vec<Role> = (0..item_count).map(|_| Role::Item).collect();
    roles.extend((0..rng.range(1, 2)).map(|_| Role::ReadFiller));
    for t in 1..=n {
        if rng.chance(1, 2) {
            roles.push(Role::WriteFiller(t));
        }
    }
    let mut keys: Vec<i64> = (1..=60).collect();
    rng.shuffle(&mut keys);
    let rows: Vec<(i64, i64, Role)> = roles
        .iter()
        .enumerate()
        .map(|(i, r)| (i as i64 + 1, keys[i], *r))
        .collect();
    Plan {
        c1,
        rows,
        join: rng.chance(1, 2),
    }
}

/// Table t0 (id, c0, c1) and its planned rows with random values.
fn item_table(rng: &mut Rng, plan: &Plan) -> (Table, TableData) {
    let t0 = table(
        T0,
        vec![
            col("id", ColType::Int, true),
            col("c0", ColType::Int, false),
            col("c1", plan.c1, false),
        ],
    );
    let data = TableData {
        table: T0.into(),
        rows: plan
            .rows
            .iter()
            .map(|&(rid, key, _)| Row {
                rid,
                values: vec![
                    Value::Int(key),
                    Value::Int(rng.range(-100, 100)),
                    value(rng, plan.c1),
                ],
            })
            .collect(),
    };
    (t0, data)
}

/// Table t1 (id, pid, c0) with one to three rows, each a child of a random t0 row.
fn child_table(rng: &mut Rng, plan: &Plan) -> (Table, TableData) {
    let t1 = table(
        T1,
        vec![
            col("id", ColType::Int, true),
            col("pid", ColType::Int, false),
            col("c0", ColType::Int, false),
        ],
    );
    let base = plan.rows.len() as i64;
    let rows = (0..rng.range(1, 3))
        .map(|i| {
            let parent = rng.pick(&plan.rows).1;
            Row {
                rid: base + i + 1,
                values: vec![
                    Value::Int(100 + i),
                    Value::Int(parent),
                    Value::Int(rng.range(-100, 100)),
                ],
            }
        })
        .collect();
    let data = TableData {
        table: T1.into(),
        rows,
    };
    (t1, data)
}

/// Statements per transaction (BEGIN first, then one per pattern operation in
/// pattern order), the statement of each operation, and the submit order.
fn statements(
    rng: &mut Rng,
    p: &Pattern,
    plan: &Plan,
    item_row: impl Fn(&str) -> (i64, i64, Role),
) -> (Vec<Vec<Stmt>>, Vec<StmtRef>, Vec<StmtRef>) {
    let mut stmts: Vec<Vec<Stmt>> = vec![vec![Stmt::begin()]; p.txn_count() as usize];
    let mut refs = Vec::new();
    let mut order = Vec::new();
    for o in &p.ops {
        let list = &mut stmts[o.txn as usize - 1];
        if list.len() == 1 {
            order.push(StmtRef {
                txn: o.txn,
                index: 0,
            });
        }
        let stmt = match (&o.kind, &o.item) {
            (OpKind::Read, Some((item, _))) => Stmt::Select(read(rng, plan, item_row(item).1)),
            (OpKind::Write, Some((item, _))) => {
                Stmt::Update(write(rng, plan, item_row(item).1, o.txn))
            }
            (OpKind::Commit, _) => Stmt::Commit,
            _ => Stmt::Rollback,
        };
        let r = StmtRef {
            txn: o.txn,
            index: list.len() as u32,
        };
        list.push(stmt);
        refs.push(r);
        order.push(r);
    }
    (stmts, refs, order)
}

/// Transactions 1..=n from their statement lists, with op numbers counted
/// across all transactions in order.
fn numbered_txns(stmts: Vec<Vec<Stmt>>) -> Vec<Txn> {
    let mut op = 0u32;
    stmts
        .into_iter()
        .enumerate()
        .map(|(i, list)| Txn {
            id: i as u32 + 1,
            autocommit: false,
            isolation: None,
            settings: Default::default(),
            stmts: list
                .into_iter()
                .map(|stmt| {
                    op += 1;
                    CaseStmt { op, stmt }
                })
                .collect(),
        })
        .collect()
}

fn read(rng: &mut Rng, plan: &Plan, key: i64) -> Select {
    let join = plan.join && rng.chance(1, 3);
    let q = |c: &str| {
        if join {
            Expr::qcol(T0, c)
        } else {
            Expr::col(c)
        }
    };
    let where_ = read_condition(rng, plan, key, q("id"));
    let mut items: Vec<SelectItem> = ["id", "c0", "c1"]
        .iter()
        .map(|c| SelectItem {
            expr: q(c),
            alias: None,
        })
        .collect();
    let mut from = vec![FromItem {
        table: T0.into(),
        alias: T0.into(),
        join: None,
    }];
    if join {
        items.push(SelectItem {
            expr: Expr::qcol(T1, "c0"),
            alias: Some("c0_1".into()),
        });
        from.push(FromItem {
            table: T1.into(),
            alias: T1.into(),
            join: Some(Join {
                kind: JoinKind::Left,
                on: Expr::eq(Expr::qcol(T1, "pid"), Expr::qcol(T0, "id")),
            }),
        });
    }
    Select {
        distinct: false,
        items,
        from,
        where_: Some(where_),
        group_by: vec![],
        order_by: vec![],
        limit: None,
        lock: None,
        cursor: None,
    }
}

/// A read's WHERE on `id`: `key`'s row alone, or with read fillers (an IN
/// list, a key range, an OR).
fn read_condition(rng: &mut Rng, plan: &Plan, key: i64, id: Expr) -> Expr {
    let fillers: Vec<i64> = plan
        .rows
        .iter()
        .filter(|r| r.2 == Role::ReadFiller)
        .map(|r| r.1)
        .collect();
    let eq = Expr::eq(id.clone(), int(key));
    match rng.below(4) {
        0 if !fillers.is_empty() => {
            let mut list = vec![int(key)];
            list.extend(fillers.iter().map(|f| int(*f)));
            rng.shuffle(&mut list);
            Expr::InList {
                expr: Box::new(id),
                list,
                negated: false,
            }
        }
        1 => {
            let (lo, hi) = filler_range(plan, key);
            Expr::Between {
                expr: Box::new(id),
                low: Box::new(int(lo)),
                high: Box::new(int(hi)),
            }
        }
        2 if !fillers.is_empty() => {
            Expr::bin(BinOp::Or, eq, Expr::eq(id, int(*rng.pick(&fillers))))
        }
        _ => eq,
    }
}

/// The widest key range around `key` that holds no other item and no write
/// filler.
fn filler_range(plan: &Plan, key: i64) -> (i64, i64) {
    let mut sorted: Vec<(i64, Role)> = plan.rows.iter().map(|r| (r.1, r.2)).collect();
    sorted.sort_by_key(|r| r.0);
    let at = sorted.iter().position(|r| r.0 == key).unwrap_or(0);
    let (mut lo, mut hi) = (at, at);
    while lo > 0 && sorted[lo - 1].1 == Role::ReadFiller {
        lo -= 1;
    }
    while hi + 1 < sorted.len() && sorted[hi + 1].1 == Role::ReadFiller {
        hi += 1;
    }
    (sorted[lo].0, sorted[hi].0)
}

fn write(rng: &mut Rng, plan: &Plan, key: i64, txn: u32) -> Update {
    let assignment = match rng.below(3) {
        0 => Assignment {
            column: "c0".into(),
            value: Expr::bin(BinOp::Add, Expr::col("c0"), int(rng.range(1, 9))),
        },
        1 => Assignment {
            column: "c0".into(),
            value: int(rng.range(-100, 100)),
        },
        _ => Assignment {
            column: "c1".into(),
            value: Expr::Lit(value(rng, plan.c1)),
        },
    };
    let own = plan
        .rows
        .iter()
        .find(|r| r.2 == Role::WriteFiller(txn))
        .map(|r| r.1);
    let where_ = match own {
        Some(f) if rng.chance(1, 3) => Expr::InList {
            expr: Box::new(Expr::col("id")),
            list: vec![int(key), int(f)],
            negated: false,
        },
        _ => Expr::eq(Expr::col("id"), int(key)),
    };
    Update {
        table: T0.into(),
        assignments: vec![assignment],
        where_: Some(where_),
    }
}
