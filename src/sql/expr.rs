//! Literals, expressions and SELECT queries.

use super::Dialect;
use crate::model::{
    AggFn, BinOp, Expr, FromItem, JoinKind, LockMode, OrderBy, Select, SelectItem, Value,
};

/// A literal. Text is single-quoted with `'` doubled; MySQL also escapes `\`
/// (its string literals treat backslash as an escape character).
pub fn render_value(d: Dialect, v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Int(i) => i.to_string(),
        Value::Real(r) => r.clone(),
        Value::Text(s) => quote_text(d, s),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
    }
}

fn quote_text(d: Dialect, s: &str) -> String {
    let escaped = match d {
        Dialect::Mysql => s.replace('\\', "\\\\").replace('\'', "''"),
        Dialect::Sqlite | Dialect::Postgres => s.replace('\'', "''"),
    };
    format!("'{escaped}'")
}

/// An expression. Every compound form renders inside its own parentheses.
pub fn render_expr(d: Dialect, e: &Expr) -> String {
    match e {
        Expr::Col { table, name } => render_col(table.as_deref(), name),
        Expr::Lit(v) => render_value(d, v),
        Expr::Bin { op, left, right } => format!(
            "({} {} {})",
            render_expr(d, left),
            binop(*op),
            render_expr(d, right)
        ),
        Expr::Not(inner) => format!("(NOT {})", render_expr(d, inner)),
        Expr::IsNull { expr, negated } => {
            format!("({} IS {}NULL)", render_expr(d, expr), not_kw(*negated))
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => format!(
            "({} {}IN ({}))",
            render_expr(d, expr),
            not_kw(*negated),
            expr_list(d, list)
        ),
        Expr::Between { expr, low, high } => format!(
            "({} BETWEEN {} AND {})",
            render_expr(d, expr),
            render_expr(d, low),
            render_expr(d, high)
        ),
        Expr::InSubquery {
            expr,
            query,
            negated,
        } => format!(
            "({} {}IN ({}))",
            render_expr(d, expr),
            not_kw(*negated),
            render_select(d, query)
        ),
        Expr::Exists { query, negated } => {
            format!("({}EXISTS ({}))", not_kw(*negated), render_select(d, query))
        }
        Expr::Agg { func, arg } => render_agg(d, *func, arg.as_deref()),
        Expr::Concat(a, b) => render_concat(d, a, b),
        Expr::Coalesce(a, b) => format!("COALESCE({}, {})", render_expr(d, a), render_expr(d, b)),
        Expr::Excluded(c) => match d {
            Dialect::Mysql => format!("VALUES({c})"),
            Dialect::Sqlite | Dialect::Postgres => format!("excluded.{c}"),
        },
    }
}

fn render_col(table: Option<&str>, name: &str) -> String {
    match table {
        Some(t) => format!("{t}.{name}"),
        None => name.to_string(),
    }
}

fn not_kw(negated: bool) -> &'static str {
    if negated {
        "NOT "
    } else {
        ""
    }
}

fn binop(op: BinOp) -> &'static str {
    match op {
        BinOp::Eq => "=",
        BinOp::Ne => "<>",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::And => "AND",
        BinOp::Or => "OR",
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
    }
}

fn render_agg(d: Dialect, func: AggFn, arg: Option<&Expr>) -> String {
    let name = match func {
        AggFn::Count => "COUNT",
        AggFn::Sum => "SUM",
        AggFn::Min => "MIN",
        AggFn::Max => "MAX",
    };
    match arg {
        Some(a) => format!("{name}({})", render_expr(d, a)),
        None => format!("{name}(*)"),
    }
}

fn render_concat(d: Dialect, a: &Expr, b: &Expr) -> String {
    let (a, b) = (render_expr(d, a), render_expr(d, b));
    match d {
        Dialect::Mysql => format!("CONCAT({a}, {b})"),
        Dialect::Sqlite | Dialect::Postgres => format!("({a} || {b})"),
    }
}

/// Comma-separated expressions.
pub(crate) fn expr_list(d: Dialect, list: &[Expr]) -> String {
    let parts: Vec<String> = list.iter().map(|e| render_expr(d, e)).collect();
    parts.join(", ")
}

/// Comma-separated identifiers.
pub(crate) fn ident_list(names: &[String]) -> String {
    names.join(", ")
}

/// A query, without a trailing semicolon. An empty select list renders as `*`
/// and an empty FROM list renders no FROM clause. The locking clause is
/// `FOR UPDATE` / `FOR SHARE` on PostgreSQL, `FOR UPDATE` / `LOCK IN SHARE
/// MODE` on MySQL and omitted on SQLite.
pub fn render_select(d: Dialect, s: &Select) -> String {
    let mut sql = String::from("SELECT ");
    if s.distinct {
        sql.push_str("DISTINCT ");
    }
    sql.push_str(&select_items(d, &s.items));
    if !s.from.is_empty() {
        sql.push_str(" FROM ");
        sql.push_str(&from_clause(d, &s.from));
    }
    if let Some(w) = &s.where_ {
        sql.push_str(&format!(" WHERE {}", render_expr(d, w)));
    }
    if !s.group_by.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", expr_list(d, &s.group_by)));
    }
    if !s.order_by.is_empty() {
        sql.push_str(&format!(" ORDER BY {}", order_by(d, &s.order_by)));
    }
    if let Some(n) = s.limit {
        sql.push_str(&format!(" LIMIT {n}"));
    }
    if let Some(clause) = s.lock.and_then(|m| lock_clause(d, m)) {
        sql.push(' ');
        sql.push_str(clause);
    }
    sql
}

fn select_items(d: Dialect, items: &[SelectItem]) -> String {
    if items.is_empty() {
        return "*".to_string();
    }
    let parts: Vec<String> = items
        .iter()
        .map(|i| match &i.alias {
            Some(a) => format!("{} AS {a}", render_expr(d, &i.expr)),
            None => render_expr(d, &i.expr),
        })
        .collect();
    parts.join(", ")
}

/// A SELECT's FROM list as rendered after `FROM`.
pub fn from_clause(d: Dialect, from: &[FromItem]) -> String {
    let mut sql = String::new();
    for (i, item) in from.iter().enumerate() {
        let name = table_ref(item);
        match (&item.join, i) {
            (_, 0) => sql.push_str(&name),
            (Some(j), _) => {
                let kw = match j.kind {
                    JoinKind::Inner => "INNER JOIN",
                    JoinKind::Left => "LEFT JOIN",
                };
                sql.push_str(&format!(" {kw} {name} ON {}", render_expr(d, &j.on)));
            }
            (None, _) => sql.push_str(&format!(", {name}")),
        }
    }
    sql
}

/// `t AS a`, or just `t` when the alias is the table name.
fn table_ref(item: &FromItem) -> String {
    if item.alias == item.table || item.alias.is_empty() {
        item.table.clone()
    } else {
        format!("{} AS {}", item.table, item.alias)
    }
}

fn order_by(d: Dialect, order: &[OrderBy]) -> String {
    let parts: Vec<String> = order
        .iter()
        .map(|o| {
            let e = render_expr(d, &o.expr);
            if o.desc {
                format!("{e} DESC")
            } else {
                e
            }
        })
        .collect();
    parts.join(", ")
}

fn lock_clause(d: Dialect, m: LockMode) -> Option<&'static str> {
    match (d, m) {
        (Dialect::Sqlite, _) => None,
        (_, LockMode::ForUpdate) => Some("FOR UPDATE"),
        (Dialect::Mysql, LockMode::ForShare) => Some("LOCK IN SHARE MODE"),
        (Dialect::Postgres, LockMode::ForShare) => Some("FOR SHARE"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::fixtures;

    #[test]
    fn text_escaping_per_dialect() {
        let v = Value::Text(r"it's a \ path".into());
        assert_eq!(render_value(Dialect::Sqlite, &v), r"'it''s a \ path'");
        assert_eq!(render_value(Dialect::Postgres, &v), r"'it''s a \ path'");
        assert_eq!(render_value(Dialect::Mysql, &v), r"'it''s a \\ path'");
    }

    #[test]
    fn scalar_values() {
        for d in Dialect::ALL {
            assert_eq!(render_value(d, &Value::Null), "NULL");
            assert_eq!(render_value(d, &Value::Int(-7)), "-7");
            assert_eq!(render_value(d, &Value::Real("-3.05".into())), "-3.05");
            assert_eq!(render_value(d, &Value::Bool(true)), "TRUE");
            assert_eq!(render_value(d, &Value::Bool(false)), "FALSE");
        }
    }

    #[test]
    fn negative_literal_after_minus_is_not_a_comment() {
        let e = Expr::bin(BinOp::Sub, Expr::col("c0"), Expr::lit(Value::Int(-1)));
        assert_eq!(render_expr(Dialect::Sqlite, &e), "(c0 - -1)");
    }

    #[test]
    fn concat_and_excluded_per_dialect() {
        let e = Expr::Concat(
            Box::new(Expr::col("c3")),
            Box::new(Expr::Excluded("c3".into())),
        );
        assert_eq!(render_expr(Dialect::Sqlite, &e), "(c3 || excluded.c3)");
        assert_eq!(render_expr(Dialect::Postgres, &e), "(c3 || excluded.c3)");
        assert_eq!(render_expr(Dialect::Mysql, &e), "CONCAT(c3, VALUES(c3))");
    }

    #[test]
    fn every_expression_form() {
        for d in Dialect::ALL {
            let out: Vec<String> = fixtures::expressions()
                .iter()
                .map(|e| render_expr(d, e))
                .collect();
            insta::assert_snapshot!(format!("expressions_{d}"), out.join("\n"));
        }
    }
}
