//! INSERT (with conflict handling), UPDATE and DELETE.
//!
//! WHERE clauses mostly name primary keys (or other values) drawn from rows
//! known so far, so statements of different transactions collide on rows.

use super::expr::{Binding, Ctx};
use super::Gen;
use crate::model::{
    AggFn, Assignment, BinOp, ColType, Delete, Expr, FromItem, Insert, OnConflict, OrderBy, Select,
    SelectItem, Update, Value,
};

impl Gen<'_> {
    pub(crate) fn gen_insert(&mut self) -> Insert {
        let t = self.random_table();
        let table = &self.schema.tables[t];
        let ncols = table.columns.len();
        let pk = self.pk_indexes(t);
        // Columns that must be given: key columns and NOT NULL without DEFAULT.
        let required: Vec<bool> = (0..ncols)
            .map(|c| {
                let col = &table.columns[c];
                pk.contains(&c) || (col.not_null && col.default.is_none())
            })
            .collect();
        let cols: Vec<usize> = if self.rng.chance(3, 4) {
            (0..ncols).collect()
        } else {
            let chosen: Vec<usize> = (0..ncols)
                .filter(|&c| required[c] || self.rng.chance(1, 2))
                .collect();
            if chosen.is_empty() {
                vec![0]
            } else {
                chosen
            }
        };
        let keyed: Vec<bool> = {
            let keys = self.unique_key_indexes(t);
            (0..ncols)
                .map(|c| keys.iter().any(|k| k.contains(&c)))
                .collect()
        };
        if self.rng.chance(1, 6) {
            return self.gen_insert_select(t, &cols);
        }
        let nrows = self.rng.range(1, 3);
        let mut rows = Vec::new();
        let mut rids = Vec::new();
        for _ in 0..nrows {
            let mut full: Vec<Value> = self.schema.tables[t]
                .columns
                .iter()
                .map(|c| c.default.clone().unwrap_or(Value::Null))
                .collect();
            let mut exprs = Vec::new();
            for &c in &cols {
                let v = self.insert_value(t, c, keyed[c]);
                full[c] = v.clone();
                exprs.push(Expr::lit(v));
            }
            self.known[t].push(full);
            rows.push(exprs);
            rids.push(self.next_rid);
            self.next_rid += 1;
        }
        let on_conflict = self.on_conflict(t);
        Insert {
            table: self.table_name(t),
            columns: self.column_names(t, &cols),
            rows,
            rids,
            select: None,
            on_conflict,
        }
    }

    /// `INSERT INTO t (cols) SELECT ...` of one row: from a source table (the
    /// parent of a foreign key of `t` half the time, which makes concurrent
    /// parent deletes and child inserts meet), either aggregates
    /// (`COALESCE(MAX(x), v) + 1`: the next key, read-then-insert) or the
    /// first row in primary-key order (`ORDER BY pk LIMIT 1`). Each item
    /// reads a source column of the target column's own type, or is a literal.
    fn gen_insert_select(&mut self, t: usize, cols: &[usize]) -> Insert {
        let parents: Vec<(usize, usize)> =
            cols.iter().filter_map(|&c| self.fk_parent(t, c)).collect();
        let src = match self.rng.try_pick(&parents) {
            Some(&(p, _)) if self.rng.chance(1, 2) => p,
            _ => self.random_table(),
        };
        let b = Binding::new(src, Some("a0"));
        let aggregate = self.pk_indexes(src).is_empty() || self.rng.chance(1, 2);
        let mut items = Vec::new();
        for &c in cols {
            let ty = self.col_type(t, c);
            let same: Vec<usize> = match self.fk_parent(t, c) {
                Some((p, pc)) if p == src => vec![pc],
                _ => (0..self.ncols(src))
                    .filter(|&x| self.col_type(src, x) == ty)
                    .collect(),
            };
            let from_src = match self.rng.try_pick(&same) {
                Some(&x) if self.rng.chance(2, 3) => Some(self.colref(&b, x)),
                _ => None,
            };
            let fallback = Expr::lit(self.value_for(t, c, 40));
            // A NULL into a key generator makes the engine generate a key
            // (a value the oracles' replays would not reproduce).
            let auto_key = self.schema.tables[t].columns[c].auto_key;
            let expr = match from_src {
                None => fallback,
                Some(x) if !aggregate && auto_key => {
                    Expr::Coalesce(Box::new(x), Box::new(fallback))
                }
                Some(x) if !aggregate => x,
                // PostgreSQL has no MIN/MAX(boolean).
                Some(_) if ty == ColType::Bool => fallback,
                Some(x) => {
                    let func = if self.rng.chance(3, 4) {
                        AggFn::Max
                    } else {
                        AggFn::Min
                    };
                    let agg = Expr::Coalesce(
                        Box::new(Expr::Agg {
                            func,
                            arg: Some(Box::new(x)),
                        }),
                        Box::new(fallback),
                    );
                    let next = matches!(ty, ColType::Int | ColType::BigInt)
                        && self.fk_parent(t, c).is_none()
                        && self.rng.chance(1, 2);
                    if next {
                        Expr::bin(BinOp::Add, agg, Expr::lit(Value::Int(1)))
                    } else {
                        agg
                    }
                }
            };
            items.push(SelectItem { expr, alias: None });
        }
        let scope = [b.clone()];
        let where_ = self.rng.chance(1, 2).then(|| {
            self.predicate(Ctx {
                avoid: Some(t),
                ..Ctx::new(&scope)
            })
        });
        let mut order_by = Vec::new();
        let mut limit = None;
        // Aggregates drawn as literals only: LIMIT 1 keeps it to one row (of
        // literals: which row does not matter).
        let aggregate = aggregate && items.iter().any(|i| i.expr.has_aggregate());
        if !aggregate {
            let desc = self.rng.chance(1, 2);
            for c in self.pk_indexes(src) {
                order_by.push(OrderBy {
                    expr: self.colref(&b, c),
                    desc,
                });
            }
            limit = Some(1);
        }
        let select = Select {
            distinct: false,
            items,
            from: vec![FromItem {
                table: self.table_name(src),
                alias: "a0".into(),
                join: None,
            }],
            where_,
            group_by: Vec::new(),
            order_by,
            limit,
            lock: None,
            cursor: None,
        };
        let rid = self.next_rid;
        self.next_rid += 1;
        let on_conflict =
            match self
                .rng
                .weighted(&[55, 30, if self.cfg.features.replace { 15 } else { 0 }])
            {
                1 => OnConflict::Ignore,
                2 => OnConflict::Replace,
                _ => OnConflict::Error,
            };
        Insert {
            table: self.table_name(t),
            columns: self.column_names(t, cols),
            rows: Vec::new(),
            rids: vec![rid],
            on_conflict,
            select: Some(Box::new(select)),
        }
    }

    /// The names of columns `cols` of table `t`.
    fn column_names(&self, t: usize, cols: &[usize]) -> Vec<String> {
        let table = &self.schema.tables[t];
        cols.iter()
            .map(|&c| table.columns[c].name.clone())
            .collect()
    }

    fn insert_value(&mut self, t: usize, c: usize, keyed: bool) -> Value {
        let nullable = !self.schema.tables[t].columns[c].not_null;
        if let Some((p, pc)) = self.fk_parent(t, c) {
            if nullable && self.rng.chance(1, 10) {
                return Value::Null;
            }
            return self.value_for(p, pc, 90);
        }
        if nullable && self.rng.chance(1, 20) {
            return Value::Null;
        }
        self.value_for(t, c, if keyed { 50 } else { 40 })
    }

    fn on_conflict(&mut self, t: usize) -> OnConflict {
        let f = self.cfg.features;
        let keys = self.unique_key_indexes(t);
        let target = keys.first().cloned().unwrap_or_default();
        let settable: Vec<usize> = (0..self.ncols(t)).filter(|c| !target.contains(c)).collect();
        let upsert = f.upsert && !target.is_empty() && !settable.is_empty();
        let w = [
            45,
            20,
            if f.replace { 15 } else { 0 },
            if upsert { 20 } else { 0 },
        ];
        match self.rng.weighted(&w) {
            1 => OnConflict::Ignore,
            2 => OnConflict::Replace,
            3 => {
                let mut cols = settable;
                self.rng.shuffle(&mut cols);
                cols.truncate(self.rng.range(1, 2) as usize);
                cols.sort_unstable();
                let tname = self.table_name(t);
                let mut assignments = Vec::new();
                for (i, &c) in cols.iter().enumerate() {
                    let name = self.schema.tables[t].columns[c].name.clone();
                    let value = if self.rng.chance(1, 2) {
                        Expr::Excluded(name.clone())
                    } else {
                        self.set_value(t, c, &cols[..i], Some(&tname))
                    };
                    assignments.push(Assignment {
                        column: name,
                        value,
                    });
                }
                OnConflict::Update {
                    target: target
                        .iter()
                        .map(|&c| self.schema.tables[t].columns[c].name.clone())
                        .collect(),
                    assignments,
                }
            }
            _ => OnConflict::Error,
        }
    }

    pub(crate) fn gen_update(&mut self) -> Update {
        let t = self.random_table();
        let ncols = self.ncols(t);
        let pk = self.pk_indexes(t);
        let non_key: Vec<usize> = (0..ncols).filter(|c| !pk.contains(c)).collect();
        let n = self.rng.range(1, 2) as usize;
        let mut cols: Vec<usize> = Vec::new();
        // One UPDATE in five changes a one-column primary key: key moves
        // are where InnoDB's resumed scans and phantom checks go wrong.
        if pk.len() == 1 && self.rng.chance(1, 5) {
            cols.push(pk[0]);
        }
        for _ in cols.len()..n {
            let pool: Vec<usize> = if !non_key.is_empty() && self.rng.chance(4, 5) {
                non_key.clone()
            } else {
                (0..ncols).collect()
            };
            let pool: Vec<usize> = pool.into_iter().filter(|c| !cols.contains(c)).collect();
            if let Some(&c) = self.rng.try_pick(&pool) {
                cols.push(c);
            }
        }
        let mut assignments = Vec::new();
        for i in 0..cols.len() {
            let c = cols[i];
            let value = self.set_value(t, c, &cols[..i], None);
            assignments.push(Assignment {
                column: self.schema.tables[t].columns[c].name.clone(),
                value,
            });
        }
        Update {
            table: self.table_name(t),
            assignments,
            where_: self.dml_where(t, 5),
        }
    }

    pub(crate) fn gen_delete(&mut self) -> Delete {
        let t = self.random_table();
        Delete {
            table: self.table_name(t),
            where_: self.dml_where(t, 3),
        }
    }

    /// WHERE of an UPDATE/DELETE on table `t`: mostly a primary-key equality
    /// with a key drawn from known rows, so transactions collide on rows.
    fn dml_where(&mut self, t: usize, none_pct: u64) -> Option<Expr> {
        let scope = [Binding::new(t, None)];
        let ctx = Ctx {
            avoid: Some(t),
            ..Ctx::new(&scope)
        };
        let pk = self.pk_indexes(t);
        let key_cols: Vec<usize> = if pk.is_empty() {
            (0..self.ncols(t)).collect()
        } else {
            pk.clone()
        };
        let choice = self
            .rng
            .weighted(&[none_pct, 50, 10, 10, 10, 15 - none_pct.min(15)]);
        Some(match choice {
            0 => return None,
            1 => self.key_eq(t, &key_cols, 85),
            2 => {
                // key IN (known values) on one key column
                let c = key_cols[self.rng.below(key_cols.len() as u64) as usize];
                let n = self.rng.range(1, 3);
                let list = (0..n)
                    .map(|_| Expr::lit(self.value_for(t, c, 85)))
                    .collect();
                Expr::InList {
                    expr: Box::new(self.colref(&scope[0], c)),
                    list,
                    negated: false,
                }
            }
            3 => {
                let a = self.key_eq(t, &key_cols, 85);
                let b = self.key_eq(t, &key_cols, 85);
                Expr::bin(BinOp::Or, a, b)
            }
            4 => self.range_pred(t),
            _ => self.predicate(ctx),
        })
    }

    /// Equality on every column of `cols` with values of one known row (`pct`%
    /// of the time) or fresh values.
    fn key_eq(&mut self, t: usize, cols: &[usize], pct: u64) -> Expr {
        let b = Binding::new(t, None);
        let row = if self.rng.chance(pct, 100) {
            self.rng.try_pick(&self.known[t]).cloned()
        } else {
            None
        };
        let mut out: Option<Expr> = None;
        for &c in cols {
            let v = match row.as_ref().and_then(|r| r.get(c)) {
                Some(v) if !v.is_null() => v.clone(),
                _ => self.value_for(t, c, 0),
            };
            let e = Expr::eq(self.colref(&b, c), Expr::lit(v));
            out = Some(match out {
                Some(o) => Expr::and(o, e),
                None => e,
            });
        }
        out.unwrap_or(Expr::lit(Value::Bool(true)))
    }

    /// A range over an ordered column: `c < v`, `c >= v` or `c BETWEEN a AND b`.
    fn range_pred(&mut self, t: usize) -> Expr {
        let b = Binding::new(t, None);
        let ordered: Vec<usize> = (0..self.ncols(t))
            .filter(|&c| self.col_type(t, c) != ColType::Bool)
            .collect();
        let Some(&c) = self.rng.try_pick(&ordered) else {
            return self.key_eq(t, &[0], 85);
        };
        let col = self.colref(&b, c);
        let v = self.value_for(t, c, 85);
        match self.rng.below(3) {
            0 => Expr::bin(BinOp::Lt, col, Expr::lit(v)),
            1 => Expr::bin(BinOp::Ge, col, Expr::lit(v)),
            _ => {
                let w = self.value_for(t, c, 85);
                Expr::Between {
                    expr: Box::new(col),
                    low: Box::new(Expr::lit(v)),
                    high: Box::new(Expr::lit(w)),
                }
            }
        }
    }
}
