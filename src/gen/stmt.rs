//! Data statements; SELECT here, INSERT/UPDATE/DELETE in `dml`.
//!
//! Determinism rules: LIMIT only with an ORDER BY ending in the full primary key
//! of the single FROM table; no locking clause with aggregates, DISTINCT,
//! GROUP BY or LEFT JOIN; GROUP BY selects only grouped columns and aggregates.

use super::expr::{class, Binding, Class, Ctx};
use super::Gen;
use crate::model::{
    AggFn, Expr, FromItem, Join, JoinKind, LockMode, OrderBy, Select, SelectItem, Stmt,
};

impl Gen<'_> {
    /// One data statement.
    pub(crate) fn gen_data_stmt(&mut self) -> Stmt {
        match self.rng.weighted(&[35, 22, 28, 15]) {
            0 => Stmt::Select(self.gen_select()),
            1 => Stmt::Insert(self.gen_insert()),
            2 => Stmt::Update(self.gen_update()),
            _ => Stmt::Delete(self.gen_delete()),
        }
    }

    pub(crate) fn random_table(&mut self) -> usize {
        self.rng.below(self.schema.tables.len() as u64) as usize
    }

    pub(crate) fn table_name(&self, t: usize) -> String {
        self.schema.tables[t].name.clone()
    }

    pub(crate) fn ncols(&self, t: usize) -> usize {
        self.schema.tables[t].columns.len()
    }

    pub(crate) fn pk_indexes(&self, t: usize) -> Vec<usize> {
        let table = &self.schema.tables[t];
        table
            .primary_key
            .iter()
            .filter_map(|n| table.columns.iter().position(|c| &c.name == n))
            .collect()
    }

    pub(crate) fn gen_select(&mut self) -> Select {
        let t0 = self.random_table();
        let mut scope = vec![Binding::new(t0, Some("a0"))];
        let mut from = vec![FromItem {
            table: self.table_name(t0),
            alias: "a0".into(),
            join: None,
        }];
        if self.rng.chance(1, 4) {
            self.gen_join(t0, &mut scope, &mut from);
        }
        let left = from
            .iter()
            .any(|f| matches!(&f.join, Some(j) if j.kind == JoinKind::Left));
        let where_ = if self.rng.chance(7, 10) {
            Some(self.predicate(Ctx::new(&scope)))
        } else {
            None
        };
        let all_cols: Vec<Expr> = scope
            .iter()
            .flat_map(|b| (0..self.ncols(b.table)).map(move |c| (b, c)))
            .map(|(b, c)| self.colref(b, c))
            .collect();
        let mut sel = Select {
            distinct: false,
            items: Vec::new(),
            from,
            where_,
            group_by: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            lock: None,
            cursor: None,
        };
        match self.rng.weighted(&[60, 25, 15]) {
            1 => self.aggregate_items(&mut sel, &scope),
            2 => {
                sel.distinct = true;
                let mut cols = all_cols.clone();
                self.rng.shuffle(&mut cols);
                cols.truncate(self.rng.range(1, 2) as usize);
                sel.items = cols.into_iter().map(item).collect();
            }
            _ => {
                let mut cols = all_cols.clone();
                if self.rng.chance(1, 2) {
                    self.rng.shuffle(&mut cols);
                    cols.truncate(self.rng.range(1, 3) as usize);
                }
                sel.items = cols.into_iter().map(item).collect();
                self.gen_order(&mut sel, &scope);
                if self.cfg.features.locking_reads && !left && self.rng.chance(1, 4) {
                    sel.lock = Some(if self.rng.chance(1, 2) {
                        LockMode::ForUpdate
                    } else {
                        LockMode::ForShare
                    });
                }
            }
        }
        sel
    }

    /// Maybe joins a second table (alias a1) to `t0` on columns of one type
    /// class, sometimes with an extra predicate, inner or left.
    fn gen_join(&mut self, t0: usize, scope: &mut Vec<Binding>, from: &mut Vec<FromItem>) {
        let t1 = self.random_table();
        let b1 = Binding::new(t1, Some("a1"));
        let pairs: Vec<(usize, usize)> = (0..self.ncols(t0))
            .flat_map(|x| (0..self.ncols(t1)).map(move |y| (x, y)))
            .filter(|&(x, y)| class(self.col_type(t0, x)) == class(self.col_type(t1, y)))
            .collect();
        let Some(&(x, y)) = self.rng.try_pick(&pairs) else {
            return;
        };
        let mut on = Expr::eq(self.colref(&scope[0], x), self.colref(&b1, y));
        scope.push(b1);
        if self.rng.chance(1, 5) {
            let extra = self.predicate(Ctx {
                subqueries: false,
                ..Ctx::new(scope)
            });
            on = Expr::and(on, extra);
        }
        let kind = if self.rng.chance(2, 5) {
            JoinKind::Left
        } else {
            JoinKind::Inner
        };
        from.push(FromItem {
            table: self.table_name(t1),
            alias: "a1".into(),
            join: Some(Join { kind, on }),
        });
    }

    /// Maybe an ORDER BY of a plain SELECT: without a join, sometimes
    /// [one column,] the full primary key [LIMIT n]; else maybe one column.
    fn gen_order(&mut self, sel: &mut Select, scope: &[Binding]) {
        let t0 = scope[0].table;
        let joined = scope.len() > 1;
        let pk = self.pk_indexes(t0);
        if !joined && !pk.is_empty() && self.rng.chance(2, 5) {
            // ORDER BY [one column,] full primary key [LIMIT n].
            let lead: Vec<usize> = (0..self.ncols(t0)).filter(|c| !pk.contains(c)).collect();
            if self.rng.chance(1, 3) {
                if let Some(&c) = self.rng.try_pick(&lead) {
                    sel.order_by.push(self.order(&scope[0], c));
                }
            }
            for &c in &pk {
                sel.order_by.push(self.order(&scope[0], c));
            }
            if self.rng.chance(1, 2) {
                sel.limit = Some(self.rng.range(1, 3) as u64);
            }
        } else if self.rng.chance(1, 4) {
            let cols: Vec<(usize, usize)> = scope
                .iter()
                .enumerate()
                .flat_map(|(bi, b)| (0..self.ncols(b.table)).map(move |c| (bi, c)))
                .collect();
            if let Some(&(bi, c)) = self.rng.try_pick(&cols) {
                sel.order_by.push(self.order(&scope[bi], c));
            }
        }
    }

    fn order(&mut self, b: &Binding, c: usize) -> OrderBy {
        OrderBy {
            expr: self.colref(b, c),
            desc: self.rng.chance(1, 3),
        }
    }

    /// Aggregates, optionally grouped by one column (selected first).
    fn aggregate_items(&mut self, sel: &mut Select, scope: &[Binding]) {
        let cols: Vec<(usize, usize)> = scope
            .iter()
            .enumerate()
            .flat_map(|(bi, b)| (0..self.ncols(b.table)).map(move |c| (bi, c)))
            .collect();
        if self.rng.chance(1, 2) {
            if let Some(&(bi, c)) = self.rng.try_pick(&cols) {
                let g = self.colref(&scope[bi], c);
                sel.group_by.push(g.clone());
                sel.items.push(item(g.clone()));
                if self.rng.chance(1, 2) {
                    sel.order_by.push(OrderBy {
                        expr: g,
                        desc: self.rng.chance(1, 3),
                    });
                }
            }
        }
        let n = self.rng.range(1, 3);
        for _ in 0..n {
            let &(bi, c) = match self.rng.try_pick(&cols) {
                Some(x) => x,
                None => break,
            };
            let ty = self.col_type(scope[bi].table, c);
            let arg = Some(Box::new(self.colref(&scope[bi], c)));
            let agg = match (self.rng.below(4), class(ty)) {
                (0, _) => Expr::Agg {
                    func: AggFn::Count,
                    arg: None,
                },
                (1, Class::Num) => Expr::Agg {
                    func: AggFn::Sum,
                    arg,
                },
                // PostgreSQL has no MIN/MAX(boolean).
                (2, Class::Num | Class::Str) => Expr::Agg {
                    func: AggFn::Min,
                    arg,
                },
                (3, Class::Num | Class::Str) => Expr::Agg {
                    func: AggFn::Max,
                    arg,
                },
                _ => Expr::Agg {
                    func: AggFn::Count,
                    arg,
                },
            };
            sel.items.push(item(agg));
        }
    }
}

fn item(expr: Expr) -> SelectItem {
    SelectItem { expr, alias: None }
}
