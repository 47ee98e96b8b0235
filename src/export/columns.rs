//! The columns of a SELECT's result as a client prints them: each column's
//! name and how its values are written (a DECIMAL keeps its scale: `10.00`).
//! The same rules in MariaDB (MariaDB KB "DECIMAL", "Arithmetic Operators")
//! and PostgreSQL (15 manual 8.1.2 "Arbitrary Precision Numbers", 9.21
//! "Aggregate Functions"): a column keeps its declared type; `+`/`-` take
//! the larger scale of their operands and `*` the sum; SUM of a DECIMAL
//! keeps its scale and SUM of an integer is an integer; MIN/MAX keep their
//! argument's. Conditions are 0/1 in MariaDB and booleans (`t`/`f`) in
//! PostgreSQL. Names: MariaDB names an expression by its text, PostgreSQL
//! by its function (`count`, `sum`) or `?column?`.

use crate::model::{AggFn, BinOp, ColType, Expr, Schema, Select, Value};
use crate::sql::{render_expr, Dialect};

/// How a result column's values are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// An exact number with this many digits after the point (0: an integer).
    Number(u32),
    /// Text as it is.
    Text,
    /// A condition: 0/1 (MariaDB), `t`/`f` (PostgreSQL).
    Bool,
}

/// A result column: its name and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultColumn {
    pub name: String,
    pub shape: Shape,
}

/// The result columns of `q` over `schema`, in `d`'s rendering.
pub fn result_columns(d: Dialect, schema: &Schema, q: &Select) -> Vec<ResultColumn> {
    if q.items.is_empty() {
        return q
            .from
            .iter()
            .filter_map(|f| schema.table(&f.table))
            .flat_map(|t| t.columns.iter())
            .map(|c| ResultColumn {
                name: c.name.clone(),
                shape: shape_of_type(c.ty),
            })
            .collect();
    }
    q.items
        .iter()
        .map(|i| ResultColumn {
            name: match (&i.alias, &i.expr, d) {
                (Some(a), _, _) => a.clone(),
                (None, Expr::Col { name, .. }, _) => name.clone(),
                (None, Expr::Lit(Value::Text(s)), Dialect::Mysql) => s.clone(),
                (None, e, Dialect::Mysql) => render_expr(d, e),
                (None, Expr::Agg { func, .. }, _) => func_name(*func).into(),
                (None, Expr::Coalesce(..), _) => "coalesce".into(),
                (None, _, _) => "?column?".into(),
            },
            shape: shape_of(schema, q, &i.expr),
        })
        .collect()
}

fn func_name(f: AggFn) -> &'static str {
    match f {
        AggFn::Count => "count",
        AggFn::Sum => "sum",
        AggFn::Min => "min",
        AggFn::Max => "max",
    }
}

fn shape_of_type(ty: ColType) -> Shape {
    match ty {
        ColType::Bool => Shape::Bool,
        ColType::Int | ColType::BigInt => Shape::Number(0),
        ColType::Decimal => Shape::Number(2),
        ColType::Varchar(_) | ColType::Text => Shape::Text,
    }
}

fn column_type(schema: &Schema, q: &Select, table: Option<&str>, name: &str) -> Option<ColType> {
    q.from
        .iter()
        .filter(|f| table.is_none_or(|t| t == f.alias || t == f.table))
        .filter_map(|f| schema.table(&f.table))
        .find_map(|t| t.column(name))
        .map(|c| c.ty)
}

fn shape_of(schema: &Schema, q: &Select, e: &Expr) -> Shape {
    let num = |s: Shape| match s {
        Shape::Number(n) => n,
        Shape::Text | Shape::Bool => 0,
    };
    match e {
        Expr::Col { table, name } => column_type(schema, q, table.as_deref(), name)
            .map(shape_of_type)
            .unwrap_or(Shape::Text),
        Expr::Lit(Value::Real(r)) => {
            Shape::Number(r.split_once('.').map_or(0, |(_, f)| f.len() as u32))
        }
        Expr::Lit(Value::Int(_)) => Shape::Number(0),
        Expr::Lit(Value::Bool(_)) => Shape::Bool,
        Expr::Lit(_) | Expr::Concat(..) | Expr::Excluded(_) => Shape::Text,
        Expr::Bin { op, left, right } => {
            let (l, r) = (shape_of(schema, q, left), shape_of(schema, q, right));
            match op {
                BinOp::Add | BinOp::Sub => Shape::Number(num(l).max(num(r))),
                BinOp::Mul => Shape::Number(num(l) + num(r)),
                _ => Shape::Bool,
            }
        }
        Expr::Agg { func, arg } => match (func, arg) {
            (AggFn::Count, _) | (_, None) => Shape::Number(0),
            (_, Some(a)) => shape_of(schema, q, a),
        },
        Expr::Coalesce(a, b) => match (shape_of(schema, q, a), shape_of(schema, q, b)) {
            (Shape::Number(x), Shape::Number(y)) => Shape::Number(x.max(y)),
            (Shape::Bool, Shape::Bool) => Shape::Bool,
            _ => Shape::Text,
        },
        Expr::Not(_)
        | Expr::IsNull { .. }
        | Expr::InList { .. }
        | Expr::Between { .. }
        | Expr::InSubquery { .. }
        | Expr::Exists { .. } => Shape::Bool,
    }
}

/// A value as `d`'s test client prints it in a column of `shape`: NULL as
/// `NULL` (mysqltest) or nothing (isolationtester), a number padded to its
/// scale, a condition as 0/1 or `t`/`f`.
pub fn value_text(d: Dialect, v: &Value, shape: Shape) -> String {
    let number = |text: String| match shape {
        Shape::Number(scale) if scale > 0 => {
            let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
            let pad = (scale as usize).saturating_sub(frac.len());
            format!("{int}.{frac}{}", "0".repeat(pad))
        }
        _ => text,
    };
    let pg = d == Dialect::Postgres;
    match v {
        Value::Null if pg => String::new(),
        Value::Null => "NULL".into(),
        Value::Int(i) if pg && shape == Shape::Bool => if *i != 0 { "t" } else { "f" }.into(),
        Value::Int(i) => number(i.to_string()),
        Value::Real(r) => number(r.clone()),
        Value::Bool(b) if pg => if *b { "t" } else { "f" }.into(),
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::Text(s) => s.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_keep_their_scale() {
        let m = Dialect::Mysql;
        assert_eq!(value_text(m, &Value::Int(10), Shape::Number(2)), "10.00");
        assert_eq!(
            value_text(m, &Value::Real("-20.5".into()), Shape::Number(2)),
            "-20.50"
        );
        assert_eq!(value_text(m, &Value::Int(3), Shape::Number(0)), "3");
        assert_eq!(value_text(m, &Value::Null, Shape::Number(2)), "NULL");
        assert_eq!(value_text(m, &Value::Text("ab".into()), Shape::Text), "ab");
        let pg = Dialect::Postgres;
        assert_eq!(value_text(pg, &Value::Null, Shape::Number(2)), "");
        assert_eq!(value_text(pg, &Value::Bool(true), Shape::Bool), "t");
        assert_eq!(value_text(m, &Value::Int(1), Shape::Bool), "1");
    }
}
