//! Rewriting case statements into instrumented SQL.

use crate::model::{
    Assignment, CaseStmt, Expr, Insert, OnConflict, Schema, Select, SelectItem, Stmt, StmtKind,
    StmtRef, TestCase, Value, RID, WL,
};
use crate::sql::{self, Dialect};
use std::collections::HashMap;

/// How to read what the instrumented statement returns.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Transaction control: nothing to interpret.
    Control,
    /// A SELECT: `user_cols` result columns, then a `(rid, wl)` pair per entry of
    /// `instances` (the table name of each FROM item).
    Select {
        user_cols: usize,
        instances: Vec<String>,
        complete: bool,
    },
    /// A write returning `(rid, wl)` of every row it wrote.
    Write { table: String, complete: bool },
    /// The statement as generated (the shadow run): its rows are the user's
    /// result, nothing is observed.
    Plain,
}

/// A case statement ready to run: the SQL sent to the engine and how to read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    pub stmt: StmtRef,
    pub op: u32,
    pub kind: StmtKind,
    /// The instrumented SQL submitted to the engine.
    pub sql: String,
    /// The statement as generated (what a person would type).
    pub plain: String,
    pub shape: Shape,
    /// Run before `sql` in the same session (MariaDB: reset the capture variable).
    pub pre: Option<String>,
    /// Run after `sql` in the same session; its single value lists the rows the
    /// statement updated as `rid:wl-before;...` (MariaDB UPDATE has no RETURNING).
    pub capture: Option<String>,
    /// The statement itself (fault injectors and reducers inspect it).
    pub ir: Stmt,
    /// A step of an open cursor: the session keeps the statement between
    /// steps ([`crate::engine::Session::open_cursor`]).
    pub cursor: Option<CursorStep>,
}

/// What a cursor statement asks of its session.
#[derive(Clone, Debug, PartialEq)]
pub enum CursorStep {
    /// Prepare `sql` and step it `rows` rows.
    Open {
        name: String,
        rows: u32,
    },
    Fetch {
        name: String,
        rows: u32,
    },
    Close {
        name: String,
    },
}

/// How an instrumented UPDATE reports the rows it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateCapture {
    /// `RETURNING rid, wl` (PostgreSQL).
    Returning,
    /// `RETURNING rid, wl`, with `wl` appended to only where an assigned
    /// column changes, so a row whose values stay is not rewritten (turso:
    /// no session functions, and a no-op UPDATE writes nothing, so an
    /// unconditional append would make it a write). A returned row whose
    /// `wl` does not end with the statement's op was matched but unchanged.
    ReturningWhereChanged,
    /// A session function called from the `wl` assignment (SQLite: RETURNING
    /// changes how SQLite runs an UPDATE).
    SessionFunction,
    /// A user variable assigned from the `wl` assignment (MariaDB and
    /// MySQL: no UPDATE ... RETURNING; [`super::user_variable`]).
    /// `returning`: INSERT and DELETE report their rows with RETURNING
    /// (MariaDB); without it (MySQL) AFTER INSERT and AFTER DELETE triggers
    /// record them ([`crate::sql::capture_triggers`]).
    UserVariable { returning: bool },
}

/// What statements are instrumented for: the SQL dialect and how an UPDATE
/// reports its rows (an engine property: `Engine::target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub dialect: Dialect,
    pub update_capture: UpdateCapture,
}

impl From<Dialect> for Target {
    /// The dialect's own engine: SQLite, MariaDB or PostgreSQL.
    fn from(dialect: Dialect) -> Target {
        let update_capture = match dialect {
            Dialect::Sqlite => UpdateCapture::SessionFunction,
            Dialect::Mysql => UpdateCapture::UserVariable { returning: true },
            Dialect::Postgres => UpdateCapture::Returning,
        };
        Target {
            dialect,
            update_capture,
        }
    }
}

/// Prepares every statement of a case, keyed by its reference.
pub fn prepare_case(target: impl Into<Target>, case: &TestCase) -> HashMap<StmtRef, Prepared> {
    let target = target.into();
    let mut out = HashMap::new();
    for r in case.all_refs() {
        if let Some(cs) = case.stmt(r) {
            out.insert(r, prepare(target, &case.schema, r, cs));
        }
    }
    // A cursor's steps return the rows of its open: read them alike.
    for c in crate::model::cursor::cursors(case) {
        let Some(shape) = out.get(&c.open).map(|p| p.shape.clone()) else {
            continue;
        };
        for r in c.judged.iter().chain(&c.unjudged) {
            if let Some(p) = out.get_mut(r) {
                p.shape = shape.clone();
            }
        }
    }
    out
}

pub fn prepare(target: impl Into<Target>, schema: &Schema, r: StmtRef, cs: &CaseStmt) -> Prepared {
    let target = target.into();
    let d = target.dialect;
    let plain = sql::render_stmt(d, &cs.stmt);
    let k = cs.op;
    let (sql, shape) = match &cs.stmt {
        Stmt::Select(s) => instrument_select(d, s),
        Stmt::Update(u) => {
            let mut u = u.clone();
            u.assignments.push(append_op(None, k));
            (
                format!(
                    "{} RETURNING {RID}, {WL}",
                    sql::render_stmt(d, &Stmt::Update(u.clone()))
                ),
                Shape::Write {
                    table: u.table,
                    complete: true,
                },
            )
        }
        Stmt::Delete(del) => (
            format!("{plain} RETURNING {RID}, {WL}"),
            Shape::Write {
                table: del.table.clone(),
                complete: true,
            },
        ),
        Stmt::Insert(ins) => {
            let complete = !matches!(ins.on_conflict, OnConflict::Replace);
            let rendered = match replace_as_update_in_place(d, schema, ins) {
                Some(columns) => replace_keeping_no_ops(&instrument_insert(ins, k), columns),
                None => sql::render_stmt(d, &Stmt::Insert(instrument_insert(ins, k))),
            };
            (
                format!("{rendered} RETURNING {RID}, {WL}"),
                Shape::Write {
                    table: ins.table.clone(),
                    complete,
                },
            )
        }
        _ => (plain.clone(), Shape::Control),
    };
    Prepared {
        stmt: r,
        op: k,
        kind: cs.stmt.kind(),
        sql,
        plain,
        shape,
        pre: None,
        capture: None,
        cursor: cursor_step(&cs.stmt),
        ir: cs.stmt.clone(),
    }
    .for_target(target, schema)
}

fn cursor_step(stmt: &Stmt) -> Option<CursorStep> {
    match stmt {
        Stmt::Select(Select {
            cursor: Some(c), ..
        }) => Some(CursorStep::Open {
            name: c.name.clone(),
            rows: c.rows,
        }),
        Stmt::Fetch(f) => Some(CursorStep::Fetch {
            name: f.cursor.clone(),
            rows: f.rows,
        }),
        Stmt::Close(name) => Some(CursorStep::Close { name: name.clone() }),
        _ => None,
    }
}

impl Prepared {
    /// The statement as written, on the instrumented layout, for a SELECT
    /// whose instrumentation would change its plan: its result rows are
    /// observed, the row versions it read are not (`reads_complete` false).
    pub fn unobserved(&self) -> Prepared {
        let user_cols = match &self.ir {
            Stmt::Select(s) => s.items.len(),
            _ => return self.clone(),
        };
        Prepared {
            sql: self.plain.clone(),
            shape: Shape::Select {
                user_cols,
                instances: Vec::new(),
                complete: false,
            },
            pre: None,
            capture: None,
            ..self.clone()
        }
    }

    /// The same statement without any instrumentation (the shadow run on a
    /// `Plain` load): the generated SQL, no capture, nothing observed.
    pub fn uninstrumented(&self) -> Prepared {
        Prepared {
            sql: self.plain.clone(),
            shape: Shape::Plain,
            pre: None,
            capture: None,
            ..self.clone()
        }
    }
}

pub use crate::sql::{CAPTURE_VAR, OP_VAR};

impl Prepared {
    fn for_target(self, target: Target, schema: &Schema) -> Prepared {
        match target.update_capture {
            UpdateCapture::Returning => self,
            UpdateCapture::ReturningWhereChanged => {
                self.append_where_changed().upsert_arm_where_changed()
            }
            UpdateCapture::SessionFunction => {
                self.sqlite_update_capture().upsert_arm_where_changed()
            }
            UpdateCapture::UserVariable { returning } => self.user_variable(schema, returning),
        }
    }

    /// [`UpdateCapture::UserVariable`] (`super::user_variable`): UPDATEs
    /// and upsert arms report their rows through the capture variable;
    /// without RETURNING (MySQL) INSERT and DELETE too, by triggers.
    fn user_variable(mut self, schema: &Schema, returning: bool) -> Prepared {
        use super::user_variable as uv;
        let Shape::Write { table, complete } = self.shape.clone() else {
            return self;
        };
        let (rewritten, complete, triggers_record) = match &self.ir {
            Stmt::Update(u) => (uv::update_sql(&self.sql, u, schema, self.op), true, false),
            Stmt::Insert(Insert {
                on_conflict: OnConflict::Update { assignments, .. },
                ..
            }) => (
                uv::upsert_arm_sql(&self.sql, &table, assignments, self.op),
                // Its inserted rows: MySQL's insert trigger reports them,
                // MariaDB's ODKU has no RETURNING.
                !returning,
                true,
            ),
            _ if returning => return self,
            // MySQL INSERT, REPLACE, DELETE: the triggers report the rows;
            // a REPLACE's deleted rows are not told from its inserted ones.
            Stmt::Insert(i) => (
                Some(uv::without_returning(&self.sql).to_string()),
                complete && i.on_conflict != OnConflict::Replace,
                true,
            ),
            _ => (
                Some(uv::without_returning(&self.sql).to_string()),
                complete,
                true,
            ),
        };
        let Some(sql) = rewritten else { return self };
        self.sql = sql;
        self.pre = Some(uv::pre(returning, triggers_record, self.op));
        self.capture = Some(uv::capture_query());
        self.shape = Shape::Write { table, complete };
        self
    }
}

impl Prepared {
    /// SQLite: RETURNING changes how an UPDATE runs (it collects the rows
    /// first, where a plain UPDATE writes each row as it finds it), and so the
    /// order of its row-by-row unique checks and whether a failed UPDATE
    /// leaves its transaction with a write to commit. The `wl` assignment
    /// calls the session's capture function `txfuzz_w(rid, wl, ',k', changed)`
    /// instead, which records `rid:wl-before` and returns the new list (or,
    /// for a row whose values stay, records `rid:wl=` and returns `wl`
    /// unchanged); `txfuzz_take()` reads (and clears) the record.
    /// SQLite's dialect: whether every assigned column keeps its value (SET
    /// expressions all see the old row, so each new value is the
    /// assignment's own expression); `None` for a statement that is no UPDATE.
    fn values_stay(&self) -> Option<String> {
        let Stmt::Update(u) = &self.ir else {
            return None;
        };
        Some(assignments_keep_values(&u.assignments))
    }

    /// SQLite's dialect (SQLite, turso): the update arm of an upsert
    /// (`ON CONFLICT ... DO UPDATE`) appends to `wl` only where an assigned
    /// column changes, as an UPDATE does: SQLite writes nothing for a row
    /// whose record stays the same, so an unconditional append would turn a
    /// no-op arm into a write (and its commit into one that makes other
    /// snapshots stale). The arm's SET expressions all see the existing row.
    fn upsert_arm_where_changed(mut self) -> Prepared {
        let Stmt::Insert(Insert {
            table,
            on_conflict: OnConflict::Update { assignments, .. },
            ..
        }) = &self.ir
        else {
            return self;
        };
        if assignments.is_empty() {
            return self;
        }
        let append = sql::render_expr(Dialect::Sqlite, &append_op(Some(table), self.op).value);
        let marker = format!("{WL} = {append}");
        if let Some(at) = self.sql.rfind(&marker) {
            let conditional = format!(
                "{WL} = CASE WHEN {} THEN {table}.{WL} ELSE {append} END",
                assignments_keep_values(assignments)
            );
            self.sql = format!(
                "{}{}{}",
                &self.sql[..at],
                conditional,
                &self.sql[at + marker.len()..]
            );
        }
        self
    }

    /// [`UpdateCapture::ReturningWhereChanged`]: the UPDATE's `wl` assignment
    /// becomes `wl = CASE WHEN <values stay> THEN wl ELSE <append> END`.
    fn append_where_changed(mut self) -> Prepared {
        if self.kind != StmtKind::Update {
            return self;
        }
        let append = sql::render_expr(Dialect::Sqlite, &append_op(None, self.op).value);
        let marker = format!("{WL} = {append}");
        let Some(same) = self.values_stay() else {
            return self;
        };
        if let Some(at) = self.sql.rfind(&marker) {
            let conditional = format!("{WL} = CASE WHEN {same} THEN {WL} ELSE {append} END");
            self.sql = format!(
                "{}{}{}",
                &self.sql[..at],
                conditional,
                &self.sql[at + marker.len()..]
            );
        }
        self
    }

    fn sqlite_update_capture(mut self) -> Prepared {
        if self.kind != StmtKind::Update {
            return self;
        }
        let append = append_op(None, self.op);
        let marker = format!(
            "{WL} = {}",
            sql::render_expr(Dialect::Sqlite, &append.value)
        );
        let base = self
            .sql
            .strip_suffix(&format!(" RETURNING {RID}, {WL}"))
            .unwrap_or(&self.sql)
            .to_string();
        // SQLite writes nothing for a row whose record stays the same (the
        // commit then leaves the database version as it was): the append
        // happens only where an assigned column changes. SET expressions
        // all see the old row, so each new value is the assignment's own
        // expression.
        let Some(same) = self.values_stay() else {
            return self;
        };
        if let Some(at) = base.rfind(&marker) {
            let call = format!(
                "{WL} = {SQLITE_CAPTURE}({RID}, {WL}, ',{}', NOT ({same}))",
                self.op,
            );
            self.sql = format!("{}{}{}", &base[..at], call, &base[at + marker.len()..]);
            self.pre = Some(format!("SELECT {SQLITE_TAKE}()"));
            self.capture = Some(format!("SELECT {SQLITE_TAKE}()"));
        }
        self
    }
}

/// Whether the instrumented statement's affected-row count is the one the
/// engine reports for the statement as written. Not for MariaDB REPLACE: its
/// RETURNING lists the rows it wrote, while the count of the plain statement
/// also counts each row it deleted first.
pub fn reports_affected(d: Dialect, stmt: &Stmt) -> bool {
    let replace = matches!(stmt, Stmt::Insert(i) if matches!(i.on_conflict, OnConflict::Replace));
    !(d == Dialect::Mysql && replace)
}

/// The SQLite session functions of the UPDATE capture (registered by the
/// SQLite engine on every session connection).
pub const SQLITE_CAPTURE: &str = "txfuzz_w";
pub const SQLITE_TAKE: &str = "txfuzz_take";

/// `wl = wl || ',k'` (qualified by `table` where the dialect needs it).
/// SQLite's dialect: whether every column of `assignments` keeps its value
/// (the SET expressions all see the old row, so each new value is the
/// assignment's own expression).
fn assignments_keep_values(assignments: &[Assignment]) -> String {
    let same: Vec<String> = assignments
        .iter()
        .map(|a| {
            format!(
                "({} IS {})",
                a.column,
                sql::render_expr(Dialect::Sqlite, &a.value)
            )
        })
        .collect();
    same.join(" AND ")
}

fn append_op(table: Option<&str>, k: u32) -> Assignment {
    let col = match table {
        Some(t) => Expr::qcol(t, WL),
        None => Expr::col(WL),
    };
    Assignment {
        column: WL.to_string(),
        value: Expr::Concat(
            Box::new(col),
            Box::new(Expr::Lit(Value::Text(format!(",{k}")))),
        ),
    }
}

/// The user columns of the table of a MariaDB REPLACE that InnoDB runs as
/// an update in place when it meets a duplicate: the table has one unique
/// key (so the conflict is on its last one) and no foreign key refers to it
/// (MariaDB's `write_record` deletes and inserts otherwise). Not for a
/// table with a generated key, nor a REPLACE ... SELECT that names the
/// table itself without another alias (the key update clause names the
/// table's columns qualified by the table). `None`: instrument the REPLACE
/// as it is.
fn replace_as_update_in_place<'a>(
    d: Dialect,
    schema: &'a Schema,
    ins: &Insert,
) -> Option<Vec<&'a str>> {
    if d != Dialect::Mysql || ins.on_conflict != OnConflict::Replace {
        return None;
    }
    if let Some(q) = &ins.select {
        if q.from
            .iter()
            .any(|f| f.alias == ins.table || f.table == f.alias)
        {
            return None;
        }
    }
    let t = schema.table(&ins.table)?;
    let referenced = schema
        .tables
        .iter()
        .any(|o| o.foreign_keys.iter().any(|fk| fk.ref_table == t.name));
    if t.unique_keys().len() != 1 || referenced || t.columns.iter().any(|c| c.auto_key) {
        return None;
    }
    Some(t.columns.iter().map(|c| c.name.as_str()).collect())
}

/// A MariaDB REPLACE that InnoDB runs as an update in place, instrumented
/// as `INSERT ... ON DUPLICATE KEY UPDATE` of every column: a row it meets
/// with the same values keeps its `rid` and `wl`, so it stays the no-op the
/// plain REPLACE makes of it (no undo record, which weighs a deadlock
/// victim); every other row gets the new `rid` and `wl`, as the REPLACE
/// gives it. RETURNING lists both (an unchanged row at its old version).
fn replace_keeping_no_ops(ins: &Insert, columns: Vec<&str>) -> String {
    let mut head = ins.clone();
    head.on_conflict = OnConflict::Error;
    // Qualified: after INSERT ... SELECT a bare name may also be the SELECT's.
    let stored = |c: &str| format!("{}.{c}", ins.table);
    let new: Vec<String> = columns.iter().map(|c| format!("VALUES({c})")).collect();
    let same = format!(
        "CAST(JSON_ARRAY({}) AS BINARY) <=> CAST(JSON_ARRAY({}) AS BINARY)",
        columns
            .iter()
            .map(|c| stored(c))
            .collect::<Vec<_>>()
            .join(", "),
        new.join(", ")
    );
    // The hidden columns first: the condition still sees the stored values.
    let mut set = vec![
        format!("{WL} = IF({same}, {}, VALUES({WL}))", stored(WL)),
        format!("{RID} = IF({same}, {}, VALUES({RID}))", stored(RID)),
    ];
    set.extend(columns.iter().zip(&new).map(|(c, v)| format!("{c} = {v}")));
    format!(
        "{} ON DUPLICATE KEY UPDATE {}",
        sql::render_stmt(Dialect::Mysql, &Stmt::Insert(head)),
        set.join(", ")
    )
}

fn instrument_insert(ins: &Insert, k: u32) -> Insert {
    let mut out = ins.clone();
    out.columns.splice(0..0, [RID.to_string(), WL.to_string()]);
    // One rid per row: `TestCase::validate` checks it.
    for (row, &rid) in out.rows.iter_mut().zip(&ins.rids) {
        row.splice(
            0..0,
            [
                Expr::Lit(Value::Int(rid)),
                Expr::Lit(Value::Text(k.to_string())),
            ],
        );
    }
    if let (Some(q), Some(&rid)) = (&mut out.select, ins.rids.first()) {
        q.items.splice(
            0..0,
            [Value::Int(rid), Value::Text(k.to_string())].map(|v| SelectItem {
                expr: Expr::Lit(v),
                alias: None,
            }),
        );
    }
    if let OnConflict::Update { assignments, .. } = &mut out.on_conflict {
        assignments.push(append_op(Some(&ins.table), k));
    }
    out
}

fn instrument_select(d: Dialect, s: &Select) -> (String, Shape) {
    let has_subquery = s.where_.as_ref().is_some_and(Expr::has_subquery)
        || s.items.iter().any(|i| i.expr.has_subquery())
        || s.from
            .iter()
            .any(|f| f.join.as_ref().is_some_and(|j| j.on.has_subquery()));
    if s.is_aggregate() || s.distinct {
        return (
            sql::render_select(d, s),
            Shape::Select {
                user_cols: s.items.len(),
                instances: Vec::new(),
                complete: false,
            },
        );
    }
    let mut inst = s.clone();
    for f in &s.from {
        for col in [RID, WL] {
            inst.items.push(SelectItem {
                expr: Expr::qcol(&f.alias, col),
                alias: None,
            });
        }
    }
    (
        sql::render_select(d, &inst),
        Shape::Select {
            user_cols: s.items.len(),
            instances: s.from.iter().map(|f| f.table.clone()).collect(),
            complete: !has_subquery,
        },
    )
}
