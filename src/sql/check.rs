//! Which statements a dialect cannot run, and why.
//!
//! Only restrictions that would make the engine reject the statement (or make
//! the rendered text mean something else) are reported. Features a dialect
//! lacks without changing the statement's result are dropped by the renderer
//! instead: SQLite has no row locks, so a locking clause is simply omitted.

use super::Dialect;
use crate::model::{Begin, Expr, Insert, JoinKind, OnConflict, Select, StartMode, Stmt};

/// Why `s` cannot be rendered for `d`; `None` when it is supported.
///
/// Reported: `REPLACE` on PostgreSQL; an upsert without conflict target or
/// assignments on PostgreSQL; an INSERT without columns or rows and an UPDATE
/// without assignments; on PostgreSQL a locking clause together with DISTINCT,
/// GROUP BY, aggregates or a LEFT JOIN; on PostgreSQL `SELECT DISTINCT` ordered
/// by an expression not in the select list; on MySQL/MariaDB `LIMIT` in an
/// `IN (subquery)`; a FROM list whose first item carries a join; open
/// cursors on MySQL/MariaDB.
pub fn unsupported(d: Dialect, s: &Stmt) -> Option<String> {
    let own = match s {
        Stmt::Insert(ins) => insert_problem(d, ins),
        Stmt::Update(upd) if upd.assignments.is_empty() => {
            Some("UPDATE without assignments".to_string())
        }
        Stmt::Begin(b) => begin_problem(d, b),
        Stmt::SetConstraints(_) if d == Dialect::Mysql => {
            Some("MariaDB has no SET CONSTRAINTS (InnoDB checks every key at once)".to_string())
        }
        Stmt::Fetch(_) | Stmt::Close(_) if d == Dialect::Mysql => Some(NO_CURSORS.to_string()),
        Stmt::Select(q) if q.cursor.is_some() && d == Dialect::Mysql => {
            Some(NO_CURSORS.to_string())
        }
        _ => None,
    };
    own.or_else(|| selects_of(s).into_iter().find_map(|q| select_problem(d, q)))
}

/// Where a case holds text PostgreSQL cannot store: a NUL character
/// (PostgreSQL 18 manual 8.3 "Character Types": "the character with code
/// zero (sometimes called NUL) cannot be stored"). The client library
/// refuses to send such a statement, which looked like a lost connection (a
/// false `crash:connection-lost`), so `replay` refuses the case instead.
pub fn nul_problem(d: Dialect, case: &crate::model::TestCase) -> Option<String> {
    use crate::model::Value;
    if d != Dialect::Postgres {
        return None;
    }
    let nul = |v: &Value| matches!(v, Value::Text(s) if s.contains('\0'));
    let in_data = case
        .data
        .iter()
        .find(|d| d.rows.iter().flat_map(|r| &r.values).any(nul));
    if let Some(d) = in_data {
        return Some(format!(
            "an initial row of {} holds a NUL character, which PostgreSQL text cannot store",
            d.table
        ));
    }
    let defaults = case.schema.tables.iter().flat_map(|t| &t.columns);
    if defaults.filter_map(|c| c.default.as_ref()).any(nul) {
        return Some(
            "a column default holds a NUL character, which PostgreSQL text cannot store".into(),
        );
    }
    let stmt = case.txns.iter().flat_map(|t| &t.stmts);
    stmt.into_iter()
        .find(|cs| super::render_stmt(d, &cs.stmt).contains('\0'))
        .map(|cs| {
            format!(
                "op {} holds a NUL character, which PostgreSQL text cannot store",
                cs.op
            )
        })
}

const NO_CURSORS: &str =
    "MariaDB has cursors only inside stored programs (DECLARE ... CURSOR), not for a client";

/// Start modes and access a dialect has no words for.
fn begin_problem(d: Dialect, b: &Begin) -> Option<String> {
    let mode_ok = match d {
        Dialect::Sqlite => b.mode != StartMode::ConsistentSnapshot,
        Dialect::Mysql => matches!(b.mode, StartMode::Default | StartMode::ConsistentSnapshot),
        // MariaDB and PostgreSQL refuse SAVEPOINT outside a transaction.
        Dialect::Postgres => b.mode == StartMode::Default,
    };
    if !mode_ok {
        return Some(format!("this dialect has no {} start mode", b.mode));
    }
    if b.read_only && d == Dialect::Sqlite {
        return Some("SQLite's BEGIN has no READ ONLY".to_string());
    }
    if b.deferrable && d != Dialect::Postgres {
        return Some("only PostgreSQL's BEGIN has DEFERRABLE".to_string());
    }
    None
}

fn insert_problem(d: Dialect, ins: &Insert) -> Option<String> {
    if let Some(q) = &ins.select {
        if q.items.len() != ins.columns.len() {
            return Some("INSERT ... SELECT list length differs from its column list".to_string());
        }
        // SQLite cannot parse `INSERT ... SELECT ... ON CONFLICT` without a
        // WHERE, and MariaDB's ON DUPLICATE KEY UPDATE then resolves column
        // names against the query: not generated.
        if matches!(ins.on_conflict, OnConflict::Update { .. }) {
            return Some("INSERT ... SELECT with an upsert".to_string());
        }
    } else if ins.columns.is_empty() || ins.rows.is_empty() {
        return Some("INSERT without columns or rows".to_string());
    }
    if ins.rows.iter().any(|r| r.len() != ins.columns.len()) {
        return Some("INSERT row length differs from its column list".to_string());
    }
    match (&ins.on_conflict, d) {
        (OnConflict::Replace, Dialect::Postgres) => {
            Some("PostgreSQL has no REPLACE INTO".to_string())
        }
        (OnConflict::Update { assignments, .. }, _) if assignments.is_empty() => {
            Some("upsert without assignments".to_string())
        }
        (OnConflict::Update { target, .. }, Dialect::Postgres) if target.is_empty() => {
            Some("PostgreSQL ON CONFLICT DO UPDATE needs a conflict target".to_string())
        }
        _ => None,
    }
}

fn select_problem(d: Dialect, q: &Select) -> Option<String> {
    if q.from.first().is_some_and(|f| f.join.is_some()) {
        return Some("the first FROM item cannot have a join".to_string());
    }
    match d {
        Dialect::Postgres => pg_lock_problem(q).or_else(|| pg_distinct_order_problem(q)),
        Dialect::Mysql => mysql_limit_in_subquery(q),
        Dialect::Sqlite => None,
    }
}

fn pg_lock_problem(q: &Select) -> Option<String> {
    q.lock?;
    if q.distinct || q.is_aggregate() {
        return Some(
            "PostgreSQL does not allow a locking clause with DISTINCT, GROUP BY or aggregates"
                .to_string(),
        );
    }
    let outer = q
        .from
        .iter()
        .any(|f| f.join.as_ref().is_some_and(|j| j.kind == JoinKind::Left));
    outer.then(|| "PostgreSQL cannot lock the nullable side of an outer join".to_string())
}

/// PostgreSQL: "for SELECT DISTINCT, ORDER BY expressions must appear in select list".
fn pg_distinct_order_problem(q: &Select) -> Option<String> {
    if !q.distinct {
        return None;
    }
    let in_list = |e: &Expr| {
        q.items.iter().any(|i| {
            i.expr == *e
                || matches!((e, &i.alias), (Expr::Col { table: None, name }, Some(a)) if name == a)
        })
    };
    q.order_by
        .iter()
        .any(|o| !in_list(&o.expr))
        .then(|| "PostgreSQL SELECT DISTINCT must order by selected expressions".to_string())
}

/// MySQL/MariaDB: "doesn't yet support 'LIMIT & IN/ALL/ANY/SOME subquery'".
fn mysql_limit_in_subquery(q: &Select) -> Option<String> {
    let mut found = false;
    for e in select_exprs(q) {
        visit(e, &mut |x| {
            if let Expr::InSubquery { query, .. } = x {
                found |= query.limit.is_some();
            }
        });
    }
    found.then(|| "MySQL does not support LIMIT in an IN (subquery)".to_string())
}

/// Every SELECT in a statement: the statement itself and all subqueries.
pub fn selects_of(s: &Stmt) -> Vec<&Select> {
    let mut out = Vec::new();
    match s {
        Stmt::Select(q) => collect_select(q, &mut out),
        Stmt::Insert(ins) => {
            if let Some(q) = &ins.select {
                collect_select(q, &mut out);
            }
            ins.rows
                .iter()
                .flatten()
                .for_each(|e| collect_in_expr(e, &mut out));
            if let OnConflict::Update { assignments, .. } = &ins.on_conflict {
                assignments
                    .iter()
                    .for_each(|a| collect_in_expr(&a.value, &mut out));
            }
        }
        Stmt::Update(upd) => {
            upd.assignments
                .iter()
                .for_each(|a| collect_in_expr(&a.value, &mut out));
            upd.where_.iter().for_each(|e| collect_in_expr(e, &mut out));
        }
        Stmt::Delete(del) => del.where_.iter().for_each(|e| collect_in_expr(e, &mut out)),
        Stmt::Begin(_)
        | Stmt::Commit
        | Stmt::Rollback
        | Stmt::Savepoint(_)
        | Stmt::RollbackTo(_)
        | Stmt::Release(_)
        | Stmt::Fetch(_)
        | Stmt::Close(_)
        | Stmt::SetConstraints(_) => {}
    }
    out
}

fn collect_select<'a>(q: &'a Select, out: &mut Vec<&'a Select>) {
    out.push(q);
    for e in select_exprs(q) {
        collect_in_expr(e, out);
    }
}

fn collect_in_expr<'a>(e: &'a Expr, out: &mut Vec<&'a Select>) {
    match e {
        Expr::InSubquery { expr, query, .. } => {
            collect_in_expr(expr, out);
            collect_select(query, out);
        }
        Expr::Exists { query, .. } => collect_select(query, out),
        _ => children(e)
            .into_iter()
            .for_each(|c| collect_in_expr(c, out)),
    }
}

/// The expressions directly in a SELECT (not in its subqueries).
fn select_exprs(q: &Select) -> Vec<&Expr> {
    let mut v: Vec<&Expr> = q.items.iter().map(|i| &i.expr).collect();
    v.extend(q.from.iter().filter_map(|f| f.join.as_ref().map(|j| &j.on)));
    v.extend(q.where_.iter());
    v.extend(q.group_by.iter());
    v.extend(q.order_by.iter().map(|o| &o.expr));
    v
}

/// Calls `f` on `e` and its sub-expressions, not descending into subqueries.
fn visit(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    for c in children(e) {
        visit(c, f);
    }
}

/// Direct sub-expressions (subqueries excluded).
fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Col { .. } | Expr::Lit(_) | Expr::Excluded(_) | Expr::Exists { .. } => vec![],
        Expr::Bin { left, right, .. } => vec![left, right],
        Expr::Not(x) | Expr::IsNull { expr: x, .. } | Expr::InSubquery { expr: x, .. } => vec![x],
        Expr::InList { expr, list, .. } => std::iter::once(&**expr).chain(list).collect(),
        Expr::Between { expr, low, high } => vec![expr, low, high],
        Expr::Agg { arg, .. } => arg.iter().map(|a| &**a).collect(),
        Expr::Concat(a, b) | Expr::Coalesce(a, b) => vec![a, b],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Assignment, LockMode, Update, Value};
    use crate::sql::fixtures;

    fn all_fixture_stmts() -> Vec<Stmt> {
        let mut v = fixtures::selects();
        v.extend(fixtures::inserts());
        v.extend(fixtures::updates_deletes());
        v.extend(fixtures::control());
        v
    }

    #[test]
    fn fixtures_are_supported_except_replace_on_postgres() {
        for d in Dialect::ALL {
            for s in all_fixture_stmts() {
                let replace = matches!(&s, Stmt::Insert(i) if i.on_conflict == OnConflict::Replace);
                let got = unsupported(d, &s);
                if replace && d == Dialect::Postgres {
                    assert!(got.is_some_and(|r| r.contains("REPLACE")));
                } else {
                    assert_eq!(got, None, "{d}: {s:?}");
                }
            }
        }
    }

    #[test]
    fn sqlite_lock_is_omitted_not_unsupported() {
        let s = fixtures::selects()
            .into_iter()
            .find(|s| matches!(s, Stmt::Select(q) if q.lock.is_some()));
        let s = s.expect("fixture with a lock");
        assert_eq!(unsupported(Dialect::Sqlite, &s), None);
        assert!(!crate::sql::render_stmt(Dialect::Sqlite, &s).contains("FOR"));
    }

    fn count_star() -> Expr {
        Expr::Agg {
            func: crate::model::AggFn::Count,
            arg: None,
        }
    }

    #[test]
    fn postgres_lock_restrictions() {
        let base = fixtures::simple_select(vec![], "t0", None);
        let agg = Select {
            lock: Some(LockMode::ForUpdate),
            cursor: None,
            items: vec![crate::model::SelectItem {
                expr: count_star(),
                alias: None,
            }],
            ..base.clone()
        };
        let distinct = Select {
            lock: Some(LockMode::ForShare),
            cursor: None,
            distinct: true,
            ..base.clone()
        };
        for q in [agg, distinct] {
            let s = Stmt::Select(q);
            assert!(unsupported(Dialect::Postgres, &s).is_some());
            assert_eq!(unsupported(Dialect::Mysql, &s), None);
            assert_eq!(unsupported(Dialect::Sqlite, &s), None);
        }
        let left = fixtures::selects()
            .into_iter()
            .find_map(|s| match s {
                Stmt::Select(q) if q.from.iter().any(|f| f.join.is_some()) => Some(q).filter(|q| {
                    q.from[1]
                        .join
                        .as_ref()
                        .is_some_and(|j| j.kind == JoinKind::Left)
                }),
                _ => None,
            })
            .expect("fixture with a left join");
        let s = Stmt::Select(Select {
            lock: Some(LockMode::ForUpdate),
            cursor: None,
            ..left
        });
        assert!(unsupported(Dialect::Postgres, &s).is_some());
        assert_eq!(unsupported(Dialect::Mysql, &s), None);
    }

    #[test]
    fn postgres_distinct_must_order_by_selected() {
        let q = Select {
            distinct: true,
            items: vec![crate::model::SelectItem {
                expr: Expr::col("c1"),
                alias: Some("x".into()),
            }],
            order_by: vec![crate::model::OrderBy {
                expr: Expr::col("c0"),
                desc: false,
            }],
            ..fixtures::simple_select(vec![], "t0", None)
        };
        assert!(unsupported(Dialect::Postgres, &Stmt::Select(q.clone())).is_some());
        for ok in [Expr::col("x"), Expr::col("c1")] {
            let mut q = q.clone();
            q.order_by[0].expr = ok;
            assert_eq!(unsupported(Dialect::Postgres, &Stmt::Select(q)), None);
        }
    }

    #[test]
    fn mysql_limit_in_nested_in_subquery() {
        let mut sub = fixtures::simple_select(vec![], "t0", None);
        sub.limit = Some(1);
        let in_sub = Expr::InSubquery {
            expr: Box::new(Expr::col("c0")),
            query: Box::new(sub),
            negated: false,
        };
        // Nested one level deeper, inside an EXISTS in an UPDATE's WHERE.
        let exists = Expr::Exists {
            query: Box::new(fixtures::simple_select(vec![], "t1", Some(in_sub))),
            negated: false,
        };
        let s = Stmt::Update(Update {
            table: "t1".into(),
            assignments: vec![Assignment {
                column: "c0".into(),
                value: Expr::lit(Value::Int(1)),
            }],
            where_: Some(exists),
        });
        assert!(unsupported(Dialect::Mysql, &s).is_some());
        assert_eq!(unsupported(Dialect::Sqlite, &s), None);
        assert_eq!(unsupported(Dialect::Postgres, &s), None);
    }

    #[test]
    fn malformed_writes() {
        let Some(Stmt::Insert(upsert)) = fixtures::inserts().pop() else {
            panic!("last fixture insert is an upsert");
        };
        let mut no_target = upsert.clone();
        if let OnConflict::Update { target, .. } = &mut no_target.on_conflict {
            target.clear();
        }
        let s = Stmt::Insert(no_target);
        assert!(unsupported(Dialect::Postgres, &s).is_some());
        assert_eq!(unsupported(Dialect::Sqlite, &s), None);
        assert_eq!(unsupported(Dialect::Mysql, &s), None);

        let empty = Stmt::Insert(Insert {
            rows: vec![],
            ..upsert.clone()
        });
        let ragged = Stmt::Insert(Insert {
            rows: vec![vec![Expr::lit(Value::Int(1))]],
            ..upsert
        });
        let no_set = Stmt::Update(Update {
            table: "t0".into(),
            assignments: vec![],
            where_: None,
        });
        for s in [empty, ragged, no_set] {
            for d in Dialect::ALL {
                assert!(unsupported(d, &s).is_some(), "{d}: {s:?}");
            }
        }
    }
}
