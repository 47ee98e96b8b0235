//! The statement IR: one tree per SQL statement, rendered per dialect by `crate::sql`.

use super::begin::Begin;
use super::value::Value;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BinOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Add,
    Sub,
    Mul,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AggFn {
    Count,
    Sum,
    Min,
    Max,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// A column, optionally qualified by a table name or alias.
    Col {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "super::ident::de_opt"
        )]
        table: Option<String>,
        #[serde(deserialize_with = "super::ident::de")]
        name: String,
    },
    Lit(Value),
    Bin {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
    },
    /// `expr [NOT] IN (subquery)`
    InSubquery {
        expr: Box<Expr>,
        query: Box<Select>,
        negated: bool,
    },
    /// `[NOT] EXISTS (subquery)`
    Exists {
        query: Box<Select>,
        negated: bool,
    },
    /// An aggregate; `arg: None` is `COUNT(*)`.
    Agg {
        func: AggFn,
        arg: Option<Box<Expr>>,
    },
    /// String concatenation (`||` or `CONCAT()` depending on the dialect).
    Concat(Box<Expr>, Box<Expr>),
    /// `COALESCE(a, b)`
    Coalesce(Box<Expr>, Box<Expr>),
    /// The value proposed for insertion in an upsert (`excluded.c` / `VALUES(c)`).
    Excluded(#[serde(deserialize_with = "super::ident::de")] String),
}

impl Expr {
    pub fn col(name: &str) -> Expr {
        Expr::Col {
            table: None,
            name: name.to_string(),
        }
    }
    pub fn qcol(table: &str, name: &str) -> Expr {
        Expr::Col {
            table: Some(table.to_string()),
            name: name.to_string(),
        }
    }
    pub fn lit(v: Value) -> Expr {
        Expr::Lit(v)
    }
    pub fn bin(op: BinOp, left: Expr, right: Expr) -> Expr {
        Expr::Bin {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }
    pub fn and(left: Expr, right: Expr) -> Expr {
        Expr::bin(BinOp::And, left, right)
    }
    pub fn eq(left: Expr, right: Expr) -> Expr {
        Expr::bin(BinOp::Eq, left, right)
    }
    /// Whether the expression contains an aggregate outside a subquery.
    pub fn has_aggregate(&self) -> bool {
        match self {
            Expr::Agg { .. } => true,
            Expr::Col { .. } | Expr::Lit(_) | Expr::Excluded(_) => false,
            Expr::Bin { left, right, .. } => left.has_aggregate() || right.has_aggregate(),
            Expr::Not(e) => e.has_aggregate(),
            Expr::IsNull { expr, .. } => expr.has_aggregate(),
            Expr::InList { expr, list, .. } => {
                expr.has_aggregate() || list.iter().any(Expr::has_aggregate)
            }
            Expr::Between { expr, low, high } => {
                expr.has_aggregate() || low.has_aggregate() || high.has_aggregate()
            }
            Expr::InSubquery { expr, .. } => expr.has_aggregate(),
            Expr::Exists { .. } => false,
            Expr::Concat(a, b) | Expr::Coalesce(a, b) => a.has_aggregate() || b.has_aggregate(),
        }
    }
    /// The expression with each column reference (outside subqueries)
    /// replaced by what `f` gives for it (`None`: kept as it is).
    pub fn map_cols(&self, f: &dyn Fn(Option<&str>, &str) -> Option<Expr>) -> Expr {
        let m = |x: &Expr| Box::new(x.map_cols(f));
        match self {
            Expr::Col { table, name } => f(table.as_deref(), name).unwrap_or_else(|| self.clone()),
            Expr::Bin { op, left, right } => Expr::Bin {
                op: *op,
                left: m(left),
                right: m(right),
            },
            Expr::Not(x) => Expr::Not(m(x)),
            Expr::IsNull { expr, negated } => Expr::IsNull {
                expr: m(expr),
                negated: *negated,
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: m(expr),
                list: list.iter().map(|x| x.map_cols(f)).collect(),
                negated: *negated,
            },
            Expr::Between { expr, low, high } => Expr::Between {
                expr: m(expr),
                low: m(low),
                high: m(high),
            },
            Expr::InSubquery {
                expr,
                query,
                negated,
            } => Expr::InSubquery {
                expr: m(expr),
                query: query.clone(),
                negated: *negated,
            },
            Expr::Agg { func, arg } => Expr::Agg {
                func: *func,
                arg: arg.as_deref().map(m),
            },
            Expr::Concat(a, b) => Expr::Concat(m(a), m(b)),
            Expr::Coalesce(a, b) => Expr::Coalesce(m(a), m(b)),
            Expr::Lit(_) | Expr::Exists { .. } | Expr::Excluded(_) => self.clone(),
        }
    }
    /// Whether the expression contains a subquery.
    pub fn has_subquery(&self) -> bool {
        match self {
            Expr::InSubquery { .. } | Expr::Exists { .. } => true,
            Expr::Col { .. } | Expr::Lit(_) | Expr::Excluded(_) | Expr::Agg { arg: None, .. } => {
                false
            }
            Expr::Agg { arg: Some(a), .. } => a.has_subquery(),
            Expr::Bin { left, right, .. } => left.has_subquery() || right.has_subquery(),
            Expr::Not(e) => e.has_subquery(),
            Expr::IsNull { expr, .. } => expr.has_subquery(),
            Expr::InList { expr, list, .. } => {
                expr.has_subquery() || list.iter().any(Expr::has_subquery)
            }
            Expr::Between { expr, low, high } => {
                expr.has_subquery() || low.has_subquery() || high.has_subquery()
            }
            Expr::Concat(a, b) | Expr::Coalesce(a, b) => a.has_subquery() || b.has_subquery(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JoinKind {
    Inner,
    Left,
}

/// One table instance in FROM. The first entry of [`Select::from`] has `join: None`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FromItem {
    #[serde(deserialize_with = "super::ident::de")]
    pub table: String,
    #[serde(deserialize_with = "super::ident::de")]
    pub alias: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<Join>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Join {
    pub kind: JoinKind,
    pub on: Expr,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectItem {
    pub expr: Expr,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::ident::de_opt"
    )]
    pub alias: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockMode {
    /// `FOR UPDATE`
    ForUpdate,
    /// `FOR SHARE` / `LOCK IN SHARE MODE`
    ForShare,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderBy {
    pub expr: Expr,
    #[serde(default)]
    pub desc: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Select {
    #[serde(default)]
    pub distinct: bool,
    pub items: Vec<SelectItem>,
    pub from: Vec<FromItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub where_: Option<Expr>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_by: Vec<Expr>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order_by: Vec<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockMode>,
    /// An open cursor (top-level SELECTs in explicit transactions only): the
    /// statement is prepared and stepped `rows` rows; [`Stmt::Fetch`] steps
    /// it further and [`Stmt::Close`] resets it. Rendered as the SELECT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<CursorOpen>,
}

/// The cursor a SELECT opens ([`Select::cursor`]) and how many rows its
/// first step returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorOpen {
    #[serde(deserialize_with = "super::ident::de")]
    pub name: String,
    pub rows: u32,
}

/// Steps an open cursor by up to `rows` rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetch {
    #[serde(deserialize_with = "super::ident::de")]
    pub cursor: String,
    pub rows: u32,
}

impl Select {
    /// `SELECT items FROM table AS alias`: no filter, order, limit or lock.
    pub fn plain(table: &str, alias: &str, items: Vec<Expr>) -> Select {
        Select {
            distinct: false,
            items: items
                .into_iter()
                .map(|expr| SelectItem { expr, alias: None })
                .collect(),
            from: vec![FromItem {
                table: table.into(),
                alias: alias.into(),
                join: None,
            }],
            where_: None,
            group_by: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            lock: None,
            cursor: None,
        }
    }

    /// Whether the select list aggregates (rows read are then not observable).
    pub fn is_aggregate(&self) -> bool {
        !self.group_by.is_empty() || self.items.iter().any(|i| i.expr.has_aggregate())
    }
    /// Whether the query returns at most one row whatever the data: an
    /// aggregate without GROUP BY, or `LIMIT 0` / `LIMIT 1`.
    pub fn at_most_one_row(&self) -> bool {
        (self.group_by.is_empty() && self.items.iter().any(|i| i.expr.has_aggregate()))
            || self.limit.is_some_and(|l| l <= 1)
    }
}

/// What an INSERT does on a unique-key conflict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnConflict {
    /// Plain INSERT: the conflict is an error.
    Error,
    /// `INSERT IGNORE` / `INSERT OR IGNORE` / `ON CONFLICT DO NOTHING`.
    Ignore,
    /// `REPLACE INTO` (not in PostgreSQL).
    Replace,
    /// `ON DUPLICATE KEY UPDATE` / `ON CONFLICT (target) DO UPDATE SET`.
    Update {
        /// Conflict target (PostgreSQL and SQLite need one): a unique key of the table.
        #[serde(deserialize_with = "super::ident::de_list")]
        target: Vec<String>,
        assignments: Vec<Assignment>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    #[serde(deserialize_with = "super::ident::de")]
    pub column: String,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Insert {
    #[serde(deserialize_with = "super::ident::de")]
    pub table: String,
    #[serde(deserialize_with = "super::ident::de_list")]
    pub columns: Vec<String>,
    /// One value list per row, in `columns` order.
    pub rows: Vec<Vec<Expr>>,
    /// The row id txfuzz assigns to each inserted row (hidden column `rid`).
    pub rids: Vec<i64>,
    pub on_conflict: OnConflict,
    /// `INSERT ... SELECT`: the row comes from this query, one item per
    /// column, and `rows` is empty. The query yields at most one row
    /// ([`Select::at_most_one_row`]), so its row id is `rids[0]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<Box<Select>>,
}

impl Insert {
    /// How many rows the statement proposes at most (each with a row id).
    pub fn proposed_rows(&self) -> usize {
        match &self.select {
            Some(_) => 1,
            None => self.rows.len(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Update {
    #[serde(deserialize_with = "super::ident::de")]
    pub table: String,
    pub assignments: Vec<Assignment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub where_: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delete {
    #[serde(deserialize_with = "super::ident::de")]
    pub table: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub where_: Option<Expr>,
}

/// When the foreign keys a transaction may defer are checked, from this
/// statement to its end: PostgreSQL `SET CONSTRAINTS ALL DEFERRED |
/// IMMEDIATE` (the DEFERRABLE keys; IMMEDIATE also checks what is pending,
/// and fails if that breaks a key), SQLite `PRAGMA defer_foreign_keys = ON |
/// OFF` (ON defers every foreign key to COMMIT; OFF returns to the declared
/// timing). Oracles treat every foreign key of a case with this statement as
/// possibly deferred ([`super::TestCase::sets_constraints`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConstraintTiming {
    Deferred,
    Immediate,
}

/// A statement of a case. Serialised as serde's externally tagged enums
/// (`"commit"`, `{"update": {...}}`), except that a plain BEGIN stays the
/// string `"begin"` as in case files of format 1 ([`super::stmt_serde`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// BEGIN with its options (start mode, access).
    Begin(Begin),
    Commit,
    Rollback,
    Savepoint(String),
    RollbackTo(String),
    /// `RELEASE SAVEPOINT name`: removes the savepoint (and those after it)
    /// without undoing anything; of [`super::begin::OUTERMOST_SAVEPOINT`]
    /// (a transaction started by `SAVEPOINT`), it commits the transaction.
    Release(String),
    SetConstraints(ConstraintTiming),
    Select(Select),
    Insert(Insert),
    Update(Update),
    Delete(Delete),
    /// Steps an open cursor ([`Select::cursor`]) further.
    Fetch(Fetch),
    /// Resets and closes an open cursor (`sqlite3_reset`, `sqlite3_finalize`).
    Close(String),
}

/// Coarse statement kinds, for statistics, schedules and oracles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StmtKind {
    Begin,
    Commit,
    Rollback,
    Savepoint,
    RollbackTo,
    Release,
    SetConstraints,
    Select,
    Insert,
    Update,
    Delete,
    /// A step of an open cursor: its rows belong to the cursor's SELECT
    /// ([`crate::model::cursor`]).
    Fetch,
    Close,
}

impl Stmt {
    /// A plain BEGIN (the engine's default start mode).
    pub fn begin() -> Stmt {
        Stmt::Begin(Begin::default())
    }
    pub fn kind(&self) -> StmtKind {
        match self {
            Stmt::Begin(_) => StmtKind::Begin,
            Stmt::Commit => StmtKind::Commit,
            Stmt::Rollback => StmtKind::Rollback,
            Stmt::Savepoint(_) => StmtKind::Savepoint,
            Stmt::RollbackTo(_) => StmtKind::RollbackTo,
            Stmt::Release(n) if n == super::begin::OUTERMOST_SAVEPOINT => StmtKind::Commit,
            Stmt::Release(_) => StmtKind::Release,
            Stmt::SetConstraints(_) => StmtKind::SetConstraints,
            Stmt::Select(_) => StmtKind::Select,
            Stmt::Insert(_) => StmtKind::Insert,
            Stmt::Update(_) => StmtKind::Update,
            Stmt::Delete(_) => StmtKind::Delete,
            Stmt::Fetch(_) => StmtKind::Fetch,
            Stmt::Close(_) => StmtKind::Close,
        }
    }
}

impl StmtKind {
    /// INSERT, UPDATE or DELETE.
    pub fn is_write(self) -> bool {
        matches!(self, StmtKind::Insert | StmtKind::Update | StmtKind::Delete)
    }
    /// Statements that read or write data (not transaction control).
    pub fn is_data(self) -> bool {
        self.is_write() || self == StmtKind::Select
    }
    /// BEGIN, COMMIT, ROLLBACK, SAVEPOINT, ROLLBACK TO and SET CONSTRAINTS.
    pub fn is_control(self) -> bool {
        !self.is_data()
    }
}
