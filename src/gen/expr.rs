//! Predicates and value expressions over bound columns.
//!
//! Type safety (PostgreSQL is strict): comparisons only within one type class
//! (numeric, string, boolean), arithmetic only on numeric columns, literals of
//! the column's own type.

use super::Gen;
use crate::model::{BinOp, ColType, Expr, FromItem, Select, SelectItem, Value};

/// A table instance in scope: schema index and the qualifier to use for its
/// columns (`None`: unqualified, the target of an UPDATE/DELETE).
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    pub table: usize,
    pub qual: Option<String>,
}

impl Binding {
    pub fn new(table: usize, qual: Option<&str>) -> Self {
        Binding {
            table,
            qual: qual.map(str::to_string),
        }
    }
}

/// The small copyable context passed down the recursion.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'s> {
    /// Table instances whose columns may be referenced.
    pub scope: &'s [Binding],
    /// Nesting depth of boolean connectives.
    pub depth: u32,
    /// Whether a subquery may be generated here.
    pub subqueries: bool,
    /// A table subqueries must not read (MySQL error 1093: the UPDATE/DELETE target).
    pub avoid: Option<usize>,
}

impl<'s> Ctx<'s> {
    pub fn new(scope: &'s [Binding]) -> Self {
        Ctx {
            scope,
            depth: 0,
            subqueries: true,
            avoid: None,
        }
    }
    fn deeper(self) -> Self {
        Ctx {
            depth: self.depth + 1,
            ..self
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Class {
    Num,
    Str,
    Bool,
}

pub(crate) fn class(ty: ColType) -> Class {
    match ty {
        ColType::Int | ColType::BigInt | ColType::Decimal => Class::Num,
        ColType::Varchar(_) | ColType::Text => Class::Str,
        ColType::Bool => Class::Bool,
    }
}

/// Alias of the table instance inside a subquery (distinct from `a0`, `a1`, `tN`).
pub(super) const SUB_ALIAS: &str = "sq";

impl Gen<'_> {
    pub(crate) fn col_type(&self, t: usize, c: usize) -> ColType {
        self.schema.tables[t].columns[c].ty
    }

    pub(crate) fn colref(&self, b: &Binding, c: usize) -> Expr {
        let name = &self.schema.tables[b.table].columns[c].name;
        match &b.qual {
            Some(q) => Expr::qcol(q, name),
            None => Expr::col(name),
        }
    }

    /// Every (binding index, column index) in scope.
    fn scope_cols(&self, scope: &[Binding]) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for (bi, b) in scope.iter().enumerate() {
            for c in 0..self.schema.tables[b.table].columns.len() {
                v.push((bi, c));
            }
        }
        v
    }

    /// A literal for column `c` of table `t`, from known data 60% of the time.
    pub(crate) fn lit_for(&mut self, t: usize, c: usize) -> Expr {
        Expr::lit(self.value_for(t, c, 60))
    }

    /// A boolean predicate over the columns in scope.
    pub(crate) fn predicate(&mut self, ctx: Ctx) -> Expr {
        let cols = self.scope_cols(ctx.scope);
        let Some(&(bi, c)) = self.rng.try_pick(&cols) else {
            return Expr::lit(Value::Bool(true));
        };
        let b = &ctx.scope[bi];
        let (t, ty) = (b.table, self.col_type(b.table, c));
        let col = self.colref(b, c);
        let connective = if ctx.depth < 2 { 14 } else { 0 };
        let sub = if ctx.subqueries && ctx.depth == 0 {
            10
        } else {
            0
        };
        let ordered = class(ty) != Class::Bool;
        let weights = [
            40,                          // 0: column op literal
            8,                           // 1: column op column
            6,                           // 2: IS [NOT] NULL
            10,                          // 3: IN list
            if ordered { 8 } else { 0 }, // 4: BETWEEN
            connective,                  // 5: AND / OR
            connective / 4,              // 6: NOT
            sub,                         // 7: subquery
        ];
        match self.rng.weighted(&weights) {
            1 => self.column_cmp_column(ctx, &cols, (bi, c), col),
            2 => Expr::IsNull {
                expr: Box::new(col),
                negated: self.rng.chance(1, 2),
            },
            3 => self.in_list(col, t, c),
            4 => self.between(col, t, c),
            5 => {
                let op = if self.rng.chance(1, 2) {
                    BinOp::And
                } else {
                    BinOp::Or
                };
                let l = self.predicate(ctx.deeper());
                let r = self.predicate(ctx.deeper());
                Expr::bin(op, l, r)
            }
            6 => Expr::Not(Box::new(self.predicate(ctx.deeper()))),
            7 => self
                .subquery_pred(ctx, bi, c)
                .unwrap_or_else(|| self.cmp_lit(col, t, c)),
            _ => self.cmp_lit(col, t, c),
        }
    }

    /// `col` compared with another column of its type class in scope (`cols`),
    /// or with a literal if there is none.
    fn column_cmp_column(
        &mut self,
        ctx: Ctx,
        cols: &[(usize, usize)],
        (bi, c): (usize, usize),
        col: Expr,
    ) -> Expr {
        let t = ctx.scope[bi].table;
        let ty = self.col_type(t, c);
        let same: Vec<(usize, usize)> = cols
            .iter()
            .copied()
            .filter(|&(bj, cj)| {
                (bj, cj) != (bi, c) && class(self.col_type(ctx.scope[bj].table, cj)) == class(ty)
            })
            .collect();
        match self.rng.try_pick(&same) {
            Some(&(bj, cj)) => {
                let op = self.cmp_op(ty);
                Expr::bin(op, col, self.colref(&ctx.scope[bj], cj))
            }
            None => self.cmp_lit(col, t, c),
        }
    }

    /// `col` [NOT] IN one to three literals of column `c` of table `t`.
    fn in_list(&mut self, col: Expr, t: usize, c: usize) -> Expr {
        let n = self.rng.range(1, 3);
        let list = (0..n).map(|_| self.lit_for(t, c)).collect();
        Expr::InList {
            expr: Box::new(col),
            list,
            negated: self.rng.chance(1, 5),
        }
    }

    /// `col` BETWEEN two values of column `c` of table `t` (strings in order).
    fn between(&mut self, col: Expr, t: usize, c: usize) -> Expr {
        let ty = self.col_type(t, c);
        let (a, b) = (self.value_for(t, c, 60), self.value_for(t, c, 60));
        let (low, high) = if a <= b || class(ty) != Class::Str {
            (a, b)
        } else {
            (b, a)
        };
        Expr::Between {
            expr: Box::new(col),
            low: Box::new(Expr::lit(low)),
            high: Box::new(Expr::lit(high)),
        }
    }

    fn cmp_op(&mut self, ty: ColType) -> BinOp {
        if class(ty) == Class::Bool {
            *self.rng.pick(&[BinOp::Eq, BinOp::Eq, BinOp::Ne])
        } else {
            *self.rng.pick(&[
                BinOp::Eq,
                BinOp::Eq,
                BinOp::Eq,
                BinOp::Ne,
                BinOp::Lt,
                BinOp::Le,
                BinOp::Gt,
                BinOp::Ge,
            ])
        }
    }

    /// `col op literal` with a literal of the column's type.
    pub(crate) fn cmp_lit(&mut self, col: Expr, t: usize, c: usize) -> Expr {
        let op = self.cmp_op(self.col_type(t, c));
        let lit = self.lit_for(t, c);
        Expr::bin(op, col, lit)
    }

    /// `SELECT sq.c FROM t AS sq [WHERE where_]`, `t` the schema's table `st`
    /// and `c` its column `sc`: the query of a subquery predicate.
    pub(super) fn subquery_of(&self, st: usize, sc: usize, where_: Option<Expr>) -> Select {
        let inner = Binding::new(st, Some(SUB_ALIAS));
        Select {
            distinct: false,
            items: vec![SelectItem {
                expr: self.colref(&inner, sc),
                alias: None,
            }],
            from: vec![FromItem {
                table: self.schema.tables[st].name.clone(),
                alias: SUB_ALIAS.to_string(),
                join: None,
            }],
            where_,
            group_by: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            lock: None,
            cursor: None,
        }
    }

    /// `col [NOT] IN (SELECT ...)` or `[NOT] EXISTS (SELECT ...)`, optionally
    /// correlated with column `c` of scope entry `bi`. `None` if no table fits.
    fn subquery_pred(&mut self, ctx: Ctx, bi: usize, c: usize) -> Option<Expr> {
        let outer = &ctx.scope[bi];
        let outer_ty = self.col_type(outer.table, c);
        // Correlated references from inside the subquery must be qualified.
        let outer_q = Binding {
            table: outer.table,
            qual: Some(
                outer
                    .qual
                    .clone()
                    .unwrap_or_else(|| self.schema.tables[outer.table].name.clone()),
            ),
        };
        let outer_col = self.colref(&outer_q, c);
        let tables: Vec<usize> = (0..self.schema.tables.len())
            .filter(|&t| Some(t) != ctx.avoid)
            .filter(|&t| {
                self.schema.tables[t]
                    .columns
                    .iter()
                    .any(|col| class(col.ty) == class(outer_ty))
            })
            .collect();
        let &st = self.rng.try_pick(&tables)?;
        let same: Vec<usize> = (0..self.schema.tables[st].columns.len())
            .filter(|&k| class(self.col_type(st, k)) == class(outer_ty))
            .collect();
        let &sc = self.rng.try_pick(&same)?;
        let inner = [Binding::new(st, Some(SUB_ALIAS))];
        let inner_ctx = Ctx {
            scope: &inner,
            depth: 1,
            subqueries: false,
            avoid: ctx.avoid,
        };
        let exists = self.rng.chance(2, 5);
        let mut where_ = if self.rng.chance(3, 5) {
            Some(self.predicate(inner_ctx))
        } else {
            None
        };
        if exists || self.rng.chance(1, 4) {
            let corr = Expr::eq(self.colref(&inner[0], sc), outer_col.clone());
            where_ = Some(match where_ {
                Some(w) => Expr::and(corr, w),
                None => corr,
            });
        }
        let query = Box::new(self.subquery_of(st, sc, where_));
        let negated = self.rng.chance(1, 4);
        Some(if exists {
            Expr::Exists { query, negated }
        } else {
            Expr::InSubquery {
                expr: Box::new(self.colref(outer, c)),
                query,
                negated,
            }
        })
    }

    /// The new value for column `c` of table `t` in an UPDATE SET (unqualified
    /// column refs) or an upsert (qualified by `qual`). The right-hand side only
    /// reads column `c` itself or columns not in `assigned` (MySQL evaluates SET
    /// assignments left to right on the updated row).
    pub(crate) fn set_value(
        &mut self,
        t: usize,
        c: usize,
        assigned: &[usize],
        qual: Option<&str>,
    ) -> Expr {
        let b = Binding::new(t, qual);
        let col = &self.schema.tables[t].columns[c];
        let (ty, nullable) = (col.ty, !col.not_null);
        if let Some((p, pc)) = self.fk_parent(t, c) {
            if nullable && self.rng.chance(1, 10) {
                return Expr::lit(Value::Null);
            }
            return Expr::lit(self.value_for(p, pc, 90));
        }
        if nullable && self.rng.chance(1, 20) {
            return Expr::lit(Value::Null);
        }
        match class(ty) {
            Class::Num => {
                let others: Vec<usize> = (0..self.schema.tables[t].columns.len())
                    .filter(|&k| k != c && !assigned.contains(&k))
                    .filter(|&k| {
                        let kty = self.col_type(t, k);
                        kty.is_numeric() && (ty == ColType::Decimal || kty != ColType::Decimal)
                    })
                    .collect();
                match self
                    .rng
                    .weighted(&[35, 45, if others.is_empty() { 0 } else { 20 }])
                {
                    1 => {
                        let op = *self.rng.pick(&[BinOp::Add, BinOp::Add, BinOp::Sub]);
                        Expr::bin(op, self.colref(&b, c), self.step(ty))
                    }
                    2 => {
                        let k = others[self.rng.below(others.len() as u64) as usize];
                        Expr::bin(BinOp::Add, self.colref(&b, k), self.step(ty))
                    }
                    _ => self.lit_for(t, c),
                }
            }
            Class::Str => {
                if ty == ColType::Text && self.rng.chance(1, 5) {
                    let suffix = Expr::lit(Value::Text("a".into()));
                    Expr::Concat(Box::new(self.colref(&b, c)), Box::new(suffix))
                } else {
                    self.lit_for(t, c)
                }
            }
            Class::Bool => {
                if self.rng.chance(2, 5) {
                    Expr::Not(Box::new(self.colref(&b, c)))
                } else {
                    self.lit_for(t, c)
                }
            }
        }
    }

    /// A small increment literal of a numeric type.
    fn step(&mut self, ty: ColType) -> Expr {
        if ty == ColType::Decimal && self.rng.chance(1, 3) {
            Expr::lit(Value::decimal_cents(*self.rng.pick(&[25, 50, 150])))
        } else {
            Expr::lit(Value::Int(self.rng.range(1, 3)))
        }
    }
}
