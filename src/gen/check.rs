//! Test-only checks of generated cases against the schema: validity, initial
//! data constraints, column resolution, type safety and determinism rules.

use super::GenConfig;
use crate::model::{
    AggFn, BinOp, ColType, Expr, JoinKind, OnConflict, Select, Stmt, Table, TestCase, Value,
};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cl {
    Num,
    Str,
    Bool,
    Any,
}

fn class_of_type(ty: ColType) -> Cl {
    match ty {
        ColType::Int | ColType::BigInt | ColType::Decimal => Cl::Num,
        ColType::Varchar(_) | ColType::Text => Cl::Str,
        ColType::Bool => Cl::Bool,
    }
}

fn class_of_value(v: &Value) -> Cl {
    match v {
        Value::Null => Cl::Any,
        Value::Int(_) | Value::Real(_) => Cl::Num,
        Value::Text(_) => Cl::Str,
        Value::Bool(_) => Cl::Bool,
    }
}

fn compat(a: Cl, b: Cl) -> bool {
    a == b || a == Cl::Any || b == Cl::Any
}

/// Checks statements against the schema: every column resolves, only the
/// type-safe comparisons and arithmetic are used, hidden columns never appear,
/// and the determinism rules hold.
struct Checker<'a> {
    case: &'a TestCase,
}

type Scope<'a> = Vec<(Option<String>, &'a Table)>;

impl<'a> Checker<'a> {
    fn table(&self, name: &str) -> &'a Table {
        self.case.schema.table(name).expect("known table")
    }

    fn col_type(&self, scope: &Scope<'a>, q: &Option<String>, name: &str) -> ColType {
        assert!(
            name != crate::model::RID && name != crate::model::WL,
            "hidden column referenced"
        );
        let hits: Vec<ColType> = scope
            .iter()
            .filter(|(sq, _)| q.is_none() || sq == q)
            .filter_map(|(_, t)| t.column(name).map(|c| c.ty))
            .collect();
        match q {
            // an unqualified reference must resolve to exactly one table in scope
            None => assert_eq!(hits.len(), 1, "unqualified {name} in {scope:?}"),
            Some(_) => assert!(!hits.is_empty(), "unresolved {q:?}.{name}"),
        }
        hits[0]
    }

    fn expr(&self, e: &Expr, scope: &Scope<'a>, ex: Option<&'a Table>) -> Cl {
        match e {
            Expr::Col { table, name } => class_of_type(self.col_type(scope, table, name)),
            Expr::Lit(v) => class_of_value(v),
            Expr::Bin { op, left, right } => {
                let (l, r) = (self.expr(left, scope, ex), self.expr(right, scope, ex));
                binary_class(op, l, r, e)
            }
            Expr::Not(x) => {
                assert!(compat(self.expr(x, scope, ex), Cl::Bool));
                Cl::Bool
            }
            Expr::IsNull { expr, .. } => {
                self.expr(expr, scope, ex);
                Cl::Bool
            }
            Expr::InList { expr, list, .. } => {
                let c = self.expr(expr, scope, ex);
                for x in list {
                    assert!(compat(c, self.expr(x, scope, ex)), "IN list {e:?}");
                }
                Cl::Bool
            }
            Expr::Between { expr, low, high } => {
                let c = self.expr(expr, scope, ex);
                assert!(compat(c, self.expr(low, scope, ex)));
                assert!(compat(c, self.expr(high, scope, ex)));
                Cl::Bool
            }
            Expr::InSubquery { expr, query, .. } => {
                let c = self.expr(expr, scope, ex);
                let items = self.select(query, scope);
                assert_eq!(items.len(), 1);
                assert!(compat(c, items[0]), "IN subquery {e:?}");
                Cl::Bool
            }
            Expr::Exists { query, .. } => {
                self.select(query, scope);
                Cl::Bool
            }
            Expr::Agg { func, arg } => {
                let a = arg.as_ref().map(|a| self.expr(a, scope, ex));
                aggregate_class(func, a)
            }
            Expr::Concat(a, b) => {
                assert_eq!(self.expr(a, scope, ex), Cl::Str);
                self.expr(b, scope, ex);
                Cl::Str
            }
            Expr::Coalesce(a, b) => {
                let (a, b) = (self.expr(a, scope, ex), self.expr(b, scope, ex));
                assert!(compat(a, b));
                a
            }
            Expr::Excluded(c) => class_of_type(
                ex.expect("EXCLUDED outside upsert")
                    .column(c)
                    .expect("col")
                    .ty,
            ),
        }
    }

    /// Checks a SELECT in an outer scope; returns the classes of its items.
    fn select(&self, s: &Select, outer: &Scope<'a>) -> Vec<Cl> {
        let mut scope: Scope<'a> = outer
            .iter()
            .map(|(q, t)| (Some(q.clone().unwrap_or_else(|| t.name.clone())), *t))
            .collect();
        let aliases: HashSet<&str> = s.from.iter().map(|f| f.alias.as_str()).collect();
        assert_eq!(aliases.len(), s.from.len());
        for f in &s.from {
            assert!(!outer
                .iter()
                .any(|(q, _)| q.as_deref() == Some(f.alias.as_str())));
            scope.push((Some(f.alias.clone()), self.table(&f.table)));
            if let Some(j) = &f.join {
                assert_eq!(self.expr(&j.on, &scope, None), Cl::Bool);
            }
        }
        if let Some(w) = &s.where_ {
            assert_eq!(self.expr(w, &scope, None), Cl::Bool);
        }
        let classes: Vec<Cl> = s
            .items
            .iter()
            .map(|i| self.expr(&i.expr, &scope, None))
            .collect();
        for o in &s.order_by {
            self.expr(&o.expr, &scope, None);
        }
        let left = s
            .from
            .iter()
            .any(|f| matches!(&f.join, Some(j) if j.kind == JoinKind::Left));
        if s.lock.is_some() {
            assert!(
                !s.is_aggregate() && !s.distinct && !left,
                "bad locking read {s:?}"
            );
        }
        if !s.group_by.is_empty() {
            for i in &s.items {
                assert!(i.expr.has_aggregate() || s.group_by.contains(&i.expr));
            }
        }
        let literals = s.items.iter().all(|i| matches!(i.expr, Expr::Lit(_)));
        if let (Some(_n), false) = (s.limit, literals) {
            assert_eq!(s.from.len(), 1);
            assert!(!s.is_aggregate() && !s.distinct);
            let t = self.table(&s.from[0].table);
            assert!(!t.primary_key.is_empty());
            let n = t.primary_key.len();
            assert!(s.order_by.len() >= n);
            let tail = &s.order_by[s.order_by.len() - n..];
            for (o, k) in tail.iter().zip(&t.primary_key) {
                assert_eq!(
                    o.expr,
                    Expr::qcol(&s.from[0].alias, k),
                    "LIMIT without PK order"
                );
            }
        }
        classes
    }

    fn stmt(&self, s: &Stmt) {
        match s {
            Stmt::Select(sel) => {
                self.select(sel, &Vec::new());
            }
            Stmt::Insert(i) => {
                let t = self.table(&i.table);
                assert_eq!(i.proposed_rows(), i.rids.len());
                if let Some(q) = &i.select {
                    assert!(i.rows.is_empty() && q.at_most_one_row());
                    assert!(!matches!(i.on_conflict, OnConflict::Update { .. }));
                    let classes = self.select(q, &Vec::new());
                    for ((c, cl), item) in i.columns.iter().zip(classes).zip(&q.items) {
                        let col = t.column(c).expect("inserted column exists");
                        assert!(compat(class_of_type(col.ty), cl), "{c}: {cl:?}");
                        // A key generator never gets a NULL (the engine
                        // would generate a key): a literal or a COALESCE.
                        if col.auto_key {
                            let never_null = match &item.expr {
                                Expr::Lit(v) => !v.is_null(),
                                Expr::Coalesce(..) => true,
                                Expr::Bin { left, .. } => matches!(**left, Expr::Coalesce(..)),
                                _ => false,
                            };
                            assert!(never_null, "{c}: {:?}", item.expr);
                        }
                    }
                } else {
                    assert!((1..=3).contains(&i.rows.len()));
                }
                for row in &i.rows {
                    assert_eq!(row.len(), i.columns.len());
                    for (c, e) in i.columns.iter().zip(row) {
                        self.assign(t, c, e, &vec![(Some(t.name.clone()), t)], Some(t));
                    }
                }
                if let OnConflict::Update {
                    target,
                    assignments,
                } = &i.on_conflict
                {
                    assert!(t.unique_keys().iter().any(|k| k == &target.as_slice()));
                    let scope = vec![(Some(t.name.clone()), t)];
                    for a in assignments {
                        self.assign(t, &a.column, &a.value, &scope, Some(t));
                    }
                }
            }
            Stmt::Update(u) => {
                let t = self.table(&u.table);
                let scope = vec![(None, t)];
                for a in &u.assignments {
                    self.assign(t, &a.column, &a.value, &scope, None);
                }
                if let Some(w) = &u.where_ {
                    assert_eq!(self.expr(w, &scope, None), Cl::Bool);
                }
            }
            Stmt::Delete(d) => {
                let t = self.table(&d.table);
                if let Some(w) = &d.where_ {
                    assert_eq!(self.expr(w, &vec![(None, t)], None), Cl::Bool);
                }
            }
            _ => {}
        }
    }

    fn assign(&self, t: &Table, col: &str, e: &Expr, scope: &Scope<'a>, ex: Option<&'a Table>) {
        let c = t.column(col).expect("assigned column exists");
        assert!(
            compat(class_of_type(c.ty), self.expr(e, scope, ex)),
            "{col} = {e:?}"
        );
        if let Expr::Lit(v) = e {
            match (c.ty, v) {
                (ColType::Int | ColType::BigInt, Value::Real(_)) => panic!("decimal into int"),
                (_, Value::Null) => assert!(!c.not_null, "NULL into NOT NULL {col}"),
                _ => {}
            }
        }
    }
}

fn check_data(case: &TestCase) {
    let mut rids = HashSet::new();
    let mut keys_of: HashMap<&str, HashSet<Vec<Value>>> = HashMap::new();
    for (t, d) in case.schema.tables.iter().zip(&case.data) {
        assert_eq!(t.name, d.table);
        let pos = |n: &String| {
            t.columns
                .iter()
                .position(|c| &c.name == n)
                .expect("key column")
        };
        for key in t.unique_keys() {
            let idx: Vec<usize> = key.iter().map(pos).collect();
            let mut seen = HashSet::new();
            for r in &d.rows {
                let k: Vec<Value> = idx.iter().map(|&i| r.values[i].clone()).collect();
                if k.iter().all(|v| !v.is_null()) {
                    assert!(seen.insert(k), "duplicate key {key:?} in {}", t.name);
                }
            }
        }
        for r in &d.rows {
            assert!(rids.insert(r.rid) && r.rid > 0);
            for (c, v) in t.columns.iter().zip(&r.values) {
                assert!(
                    !(c.not_null && v.is_null()),
                    "NULL in NOT NULL {}.{}",
                    t.name,
                    c.name
                );
                if !v.is_null() {
                    assert_eq!(class_of_type(c.ty), class_of_value(v));
                }
                if let (ColType::Int | ColType::BigInt, Value::Int(i)) = (c.ty, v) {
                    assert!(*i > -1000, "CHECK c > -1000");
                }
            }
            for fk in &t.foreign_keys {
                let i = pos(&fk.columns[0]);
                if !r.values[i].is_null() {
                    let parent = keys_of
                        .get(fk.ref_table.as_str())
                        .expect("parent before child");
                    assert!(parent.contains(&vec![r.values[i].clone()]), "dangling FK");
                }
            }
        }
        if t.primary_key.len() == 1 {
            let i = pos(&t.primary_key[0]);
            let set = d.rows.iter().map(|r| vec![r.values[i].clone()]).collect();
            keys_of.insert(&t.name, set);
        }
    }
    let max_initial = rids.iter().copied().max().unwrap_or(0);
    for r in case
        .txns
        .iter()
        .flat_map(|t| &t.stmts)
        .filter_map(|s| match &s.stmt {
            Stmt::Insert(i) => Some(&i.rids),
            _ => None,
        })
    {
        for rid in r {
            assert!(*rid >= 1000 && *rid > max_initial && rids.insert(*rid));
        }
    }
    let expect: Vec<i64> = (1..=case.data.iter().map(|d| d.rows.len() as i64).sum()).collect();
    let mut initial: Vec<i64> = case
        .data
        .iter()
        .flat_map(|d| d.rows.iter().map(|r| r.rid))
        .collect();
    initial.sort_unstable();
    assert_eq!(initial, expect);
}

pub(super) fn check_case(case: &TestCase, cfg: &GenConfig) {
    case.validate().expect("valid case");
    check_data(case);
    let ck = Checker { case };
    let mut op = 0;
    for (i, t) in case.txns.iter().enumerate() {
        assert_eq!(t.id, i as u32 + 1);
        for s in &t.stmts {
            op += 1;
            assert_eq!(s.op, op, "op ids in txn order");
            ck.stmt(&s.stmt);
            if let Stmt::Select(sel) = &s.stmt {
                assert!(cfg.features.locking_reads || sel.lock.is_none());
            }
            if let Stmt::Insert(ins) = &s.stmt {
                assert!(cfg.features.replace || ins.on_conflict != OnConflict::Replace);
            }
        }
        let data = t.stmts.iter().filter(|s| s.stmt.kind().is_data()).count() as u32;
        assert!(data >= 1 && data <= cfg.max_stmts_per_txn);
    }
    assert!(!case.txns.is_empty() && case.txns.len() as u32 <= cfg.max_txns);
    assert!(!case.schema.tables.is_empty() && case.schema.tables.len() as u32 <= cfg.max_tables);
    assert!(cfg.isolations.contains(&case.isolation));
    let text = serde_json::to_string(case).expect("serialise");
    assert!(!text.contains("\"name\":\"rid\""));
    assert!(!text.contains("\"name\":\"wl\""));
}

/// The class of binary expression `e` (`op` on operands of classes `l` and
/// `r`), asserting the operands fit.
fn binary_class(op: &BinOp, l: Cl, r: Cl, e: &Expr) -> Cl {
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul => {
            assert!(compat(l, Cl::Num) && compat(r, Cl::Num), "arith {e:?}");
            Cl::Num
        }
        BinOp::And | BinOp::Or => {
            assert!(compat(l, Cl::Bool) && compat(r, Cl::Bool));
            Cl::Bool
        }
        _ => {
            assert!(compat(l, r), "comparison of {l:?} with {r:?}: {e:?}");
            Cl::Bool
        }
    }
}

/// The class of aggregate `func` of an argument of class `a`, asserting the
/// argument fits.
fn aggregate_class(func: &AggFn, a: Option<Cl>) -> Cl {
    match func {
        AggFn::Count => Cl::Num,
        AggFn::Sum => {
            assert_eq!(a, Some(Cl::Num));
            Cl::Num
        }
        AggFn::Min | AggFn::Max => {
            let a = a.expect("MIN/MAX argument");
            assert!(a != Cl::Bool, "MIN/MAX(boolean)");
            a
        }
    }
}
