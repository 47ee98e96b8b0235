//! Evaluating statements in the engine itself, on a predicted view: one
//! session with a TEMPORARY table per base table (same name, same columns and
//! unique/CHECK constraints, and the foreign keys checked per statement
//! where temporary tables can have them), which shadows the base table for
//! unqualified names in every supported engine. A view is materialised by
//! replacing the scratch table's rows; the case's own instrumented statement
//! then runs unchanged, so NULLs, casts, collations and the instrumentation
//! (rows read and written) come from the engine, not from a re-implementation.

use crate::engine::run_prepared;
use crate::engine::{Engine, EngineError, Session};
use crate::instrument::Prepared;
use crate::model::{
    ErrorClass, Expr, FromItem, Outcome, Schema, Select, SelectItem, StmtError, Table, Value, RID,
    WL,
};
use crate::sql::{self, Dialect};
use std::collections::HashMap;

pub struct Scratch {
    session: Box<dyn Session>,
    dialect: Dialect,
    schema: Schema,
    /// What each scratch table holds now (`None`: unknown).
    filled: HashMap<String, Vec<Vec<Value>>>,
    /// The scratch tables have no foreign keys (MariaDB): a write that leaves
    /// a dangling reference is given the error the engine reports.
    emulate_foreign_keys: bool,
    /// The session's own database, when the scratch tables live in the
    /// engine's scratch database ([`Engine::scratch_database`]): made
    /// current again when the scratch is dropped (the connection is kept
    /// for later sessions).
    home: Option<String>,
    /// The first scratch statement the server did not answer within its
    /// deadline: the server stopped answering, which is a crash finding of
    /// the case, not a blind spot of `view` ([`Scratch::server_failure`]).
    unanswered: Option<String>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.unanswered.is_some() {
            return; // asking again would wait out another deadline
        }
        if let Some(home) = self.home.take() {
            let _ = self.session.query(&format!("USE {home}"));
        }
    }
}

/// A scratch statement the engine refused (the case is then undecided).
pub type ScratchResult<T> = Result<T, String>;

/// The scratch copy of `t`: unique indexes become UNIQUE constraints, other
/// indexes are dropped (they do not change a statement's result on a given
/// view). Foreign keys are kept on SQLite (whose scratch session turns their
/// enforcement off while it fills tables) and PostgreSQL (which empties a
/// table and the tables referencing it with TRUNCATE ... CASCADE); MariaDB's
/// temporary tables have none, so an actual foreign-key error is undecided there.
fn scratch_table(foreign_keys: bool, t: &Table) -> Table {
    let mut s = t.clone();
    s.uniques.extend(
        t.indexes
            .iter()
            .filter(|i| i.unique)
            .map(|i| i.columns.clone()),
    );
    s.indexes.clear();
    if !foreign_keys {
        s.foreign_keys.clear();
    }
    // The scratch session runs each statement on its own: a key checked at
    // COMMIT by default would be checked at the statement's end there.
    s.foreign_keys
        .retain(|fk| fk.deferrable != Some(crate::model::Deferral::InitiallyDeferred));
    s
}

fn columns(t: &Table) -> Vec<String> {
    let mut names = vec![RID.to_string(), WL.to_string()];
    names.extend(t.columns.iter().map(|c| c.name.clone()));
    names
}

impl Scratch {
    /// Opens a scratch session on `engine` and creates the scratch tables.
    /// `Ok(Err(..))`: the engine refused the scratch DDL.
    pub fn open(
        engine: &mut dyn Engine,
        schema: &Schema,
        isolation: crate::model::Isolation,
    ) -> Result<ScratchResult<Scratch>, EngineError> {
        let session = engine.open_bounded_session(isolation)?;
        let database = engine.scratch_database(schema)?;
        let mut s = Scratch {
            session,
            dialect: engine.dialect(),
            schema: schema.clone(),
            filled: HashMap::new(),
            emulate_foreign_keys: !engine.profile().temporary_foreign_keys
                && schema.tables.iter().any(|t| !t.foreign_keys.is_empty()),
            home: None,
            unanswered: None,
        };
        let fks = engine.profile().temporary_foreign_keys;
        let triggers = matches!(
            engine.target().update_capture,
            crate::instrument::UpdateCapture::UserVariable { returning: false }
        );
        let created = match database {
            // Temporary tables cannot report writes by triggers: the
            // scratch would predict no write at all.
            None if triggers => Err("the write capture needs a scratch database".into()),
            None => s.create_temporary(fks),
            Some((db, made)) => s.create_in(&db, made, engine.target()),
        };
        if let Some(e) = s.server_failure() {
            return Err(e);
        }
        Ok(created.map(|()| s))
    }

    /// The server stopped answering a scratch statement (see `unanswered`).
    pub fn server_failure(&self) -> Option<EngineError> {
        let what = self.unanswered.as_ref()?;
        Some(EngineError::Hung(format!("view's scratch session: {what}")))
    }

    /// Notes a scratch statement's error that says the server did not answer.
    fn watch(&mut self, sql: &str, e: &StmtError) {
        if e.code == crate::engine::DEADLINE_CODE && self.unanswered.is_none() {
            self.unanswered = Some(refused(sql, e));
        }
    }

    /// TEMPORARY tables that shadow the base tables of the same names.
    fn create_temporary(&mut self, fks: bool) -> ScratchResult<()> {
        for t in self.schema.tables.clone() {
            let ddl = sql::create_table(self.dialect, &scratch_table(fks, &t));
            let Some(create) = ddl.first() else { continue };
            let Some(rest) = create.strip_prefix("CREATE TABLE ") else {
                return Err(format!("unexpected DDL: {create}"));
            };
            self.query(&format!("CREATE TEMPORARY TABLE {rest}"))?;
            self.filled.insert(t.name.clone(), Vec::new());
        }
        Ok(())
    }

    /// Real tables of the same names in the engine's scratch database `db`,
    /// made current, with the write-capture triggers of `target`, without
    /// foreign keys (emulated, as for MariaDB's temporary tables). `made`:
    /// they are there already, their rows unknown.
    fn create_in(
        &mut self,
        db: &str,
        made: bool,
        target: crate::instrument::Target,
    ) -> ScratchResult<()> {
        let home = self.query("SELECT DATABASE()")?;
        let Some(Some(Value::Text(home))) = home.first().map(|r| r.first()) else {
            return Err("the scratch session has no current database".into());
        };
        self.home = Some(home.clone());
        self.query(&format!("USE {db}"))?;
        if made {
            return Ok(());
        }
        for t in self.schema.tables.clone() {
            let scratch = scratch_table(false, &t);
            let mut ddl = vec![sql::drop_table(self.dialect, &t.name)];
            ddl.extend(
                sql::create_table(self.dialect, &scratch)
                    .into_iter()
                    .take(1),
            );
            if let crate::instrument::UpdateCapture::UserVariable { returning: false } =
                target.update_capture
            {
                ddl.extend(sql::capture_triggers(&scratch));
            }
            for step in &ddl {
                self.query(step)?;
            }
            self.filled.insert(t.name.clone(), Vec::new());
        }
        Ok(())
    }

    fn query(&mut self, sql: &str) -> ScratchResult<Vec<Vec<Value>>> {
        match self.session.query(sql) {
            Ok(r) => Ok(r.rows),
            Err(e) => {
                self.watch(sql, &e);
                Err(refused(sql, &e))
            }
        }
    }

    fn table(&self, name: &str) -> ScratchResult<Table> {
        self.schema
            .table(name)
            .cloned()
            .ok_or_else(|| format!("unknown table {name}"))
    }

    /// Makes scratch table `name` hold exactly `rows` (`[rid, wl, columns...]`).
    pub fn fill(&mut self, name: &str, rows: &[Vec<Value>]) -> ScratchResult<()> {
        if self.filled.get(name).is_some_and(|r| r == rows) {
            return Ok(());
        }
        self.filled.remove(name);
        let t = self.table(name)?;
        // Parent rows may be replaced before their children: SQLite checks
        // foreign keys only while the scratch statement runs.
        let switch = sql::foreign_key_switch(self.dialect);
        if let Some((off, _)) = switch {
            self.query(off)?;
        }
        let filled = self.replace_rows(&t, rows);
        if let Some((_, on)) = switch {
            self.query(on)?;
        }
        filled
    }

    /// Empties the table and inserts `rows`, in one round trip where the
    /// engine takes several statements in one ([`Session::query_each`]).
    fn replace_rows(&mut self, t: &Table, rows: &[Vec<Value>]) -> ScratchResult<()> {
        let name = &t.name;
        let (empty, cascades) = sql::empty_table(self.dialect, name);
        let insert = (!rows.is_empty()).then(|| {
            let tuples: Vec<String> = rows
                .iter()
                .map(|r| {
                    let vals: Vec<String> = r
                        .iter()
                        .map(|v| sql::render_value(self.dialect, v))
                        .collect();
                    format!("({})", vals.join(", "))
                })
                .collect();
            format!(
                "INSERT INTO {name} ({}) VALUES {}",
                columns(t).join(", "),
                tuples.join(", ")
            )
        });
        let steps: Vec<&str> = std::iter::once(empty.as_str())
            .chain(insert.as_deref())
            .collect();
        let answers = self.session.query_each(&steps);
        if cascades {
            // TRUNCATE ... CASCADE empties every table that references this
            // one, transitively: none of them holds what was filled any more.
            let mut emptied = vec![name.clone()];
            let mut i = 0;
            while i < emptied.len() {
                let parent = emptied[i].clone();
                for c in &self.schema.tables {
                    let refers = c.foreign_keys.iter().any(|fk| fk.ref_table == parent);
                    if refers && !emptied.contains(&c.name) {
                        emptied.push(c.name.clone());
                    }
                }
                i += 1;
            }
            for c in emptied.iter().skip(1) {
                self.filled.remove(c);
            }
        }
        for (step, answer) in steps.iter().zip(&answers) {
            if let Err(e) = answer {
                self.watch(step, e);
                return Err(refused(step, e));
            }
        }
        if answers.len() < steps.len() {
            return Err(format!("{}: no answer", steps[answers.len()]));
        }
        self.filled.insert(name.clone(), rows.to_vec());
        Ok(())
    }

    /// Runs `p` on `tables` (rows per table, `[rid, wl, columns...]`) with
    /// the case's non-unique secondary indexes on the scratch tables (which
    /// otherwise leave them out), and drops the indexes again: the statement
    /// alone, planned as the engine plans it with the case's indexes.
    /// `Ok(None)`: the case has no such index.
    pub fn run_indexed(
        &mut self,
        tables: &[(String, Vec<Vec<Value>>)],
        p: &Prepared,
    ) -> ScratchResult<Option<Outcome>> {
        let indexes: Vec<(Table, crate::model::Index, String)> = self
            .schema
            .tables
            .iter()
            .flat_map(|t| t.indexes.iter().filter(|i| !i.unique).map(move |i| (t, i)))
            .enumerate()
            .map(|(n, (t, i))| (t.clone(), i.clone(), format!("txfuzz_q{n}")))
            .collect();
        if indexes.is_empty() {
            return Ok(None);
        }
        let mut created = Vec::new();
        let mut result = Ok(None);
        for (t, i, name) in &indexes {
            if let Err(e) = self.query(&sql::create_temporary_index(self.dialect, t, i, name)) {
                result = Err(e);
                break;
            }
            created.push((t, name));
        }
        if result.is_ok() {
            // Filling a parent may empty its children (PostgreSQL): twice.
            for _pass in 0..2 {
                for (name, rows) in tables {
                    if let Err(e) = self.fill(name, rows) {
                        result = Err(e);
                    }
                }
            }
            if result.is_ok() {
                result = Ok(Some(self.run(p)));
            }
        }
        for (t, name) in created {
            if let Err(e) = self.query(&sql::drop_temporary_index(self.dialect, t, name)) {
                result = Err(e);
            }
        }
        result
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Whether scratch table `name` holds known rows.
    pub fn is_filled(&self, name: &str) -> bool {
        self.filled.contains_key(name)
    }

    /// The rows of scratch table `name`, as the engine returns them, sorted.
    pub fn read(&mut self, name: &str) -> ScratchResult<Vec<Vec<Value>>> {
        let t = self.table(name)?;
        let mut rows = self.query(&sql::select_state(self.dialect, &t))?;
        rows.sort();
        self.filled.insert(name.to_string(), rows.clone());
        Ok(rows)
    }

    /// Runs an instrumented case statement on the scratch tables. A write
    /// changes them; they are read back before their next use.
    pub fn run(&mut self, p: &Prepared) -> Outcome {
        let written = match &p.shape {
            crate::instrument::Shape::Write { table, .. } if p.kind.is_write() => {
                Some(table.clone())
            }
            _ => None,
        };
        if let Some(table) = &written {
            self.filled.remove(table);
            // Foreign-key actions write the child tables too.
            for child in crate::model::walk::cascade_targets(&p.ir, &self.schema) {
                self.filled.remove(&child);
            }
        }
        // Only the foreign keys from or to the written table can change.
        let fks = match &written {
            Some(table) if self.emulate_foreign_keys => self.foreign_keys_of(table),
            _ => Vec::new(),
        };
        if !fks.is_empty() {
            match self.dangling_reference(&fks) {
                Ok(None) => {}
                // The view itself dangles: the emulation cannot tell what the
                // statement adds (the caller sees an unexplained error).
                Ok(Some(fk)) => {
                    return scratch_error(
                        ErrorClass::Other,
                        format!("the view already violates {fk}"),
                    )
                }
                Err(e) => return scratch_error(ErrorClass::Other, e),
            }
        }
        // A cursor's SELECT runs whole here (its LIMIT, when the case gave
        // it one, is the rows its steps returned).
        let outcome = match &p.cursor {
            None => run_prepared(self.session.as_mut(), p),
            Some(_) => run_prepared(
                self.session.as_mut(),
                &crate::instrument::Prepared {
                    cursor: None,
                    ..p.clone()
                },
            ),
        };
        if let Some(e) = &outcome.error {
            self.watch("a case statement", e);
        }
        if fks.is_empty() || !outcome.ok() {
            return outcome;
        }
        match self.dangling_reference(&fks) {
            Ok(None) => outcome,
            Ok(Some(fk)) => scratch_error(
                ErrorClass::ForeignKeyViolation,
                format!("foreign key {fk} violated (checked by the scratch evaluation)"),
            ),
            Err(e) => scratch_error(ErrorClass::Other, e),
        }
    }

    /// The foreign keys (`(child table, key)`) whose child or parent is `table`.
    fn foreign_keys_of(&self, table: &str) -> Vec<(String, crate::model::ForeignKey)> {
        self.schema
            .tables
            .iter()
            .flat_map(|t| t.foreign_keys.iter().map(|fk| (t.name.clone(), fk.clone())))
            .filter(|(child, fk)| child == table || fk.ref_table == table)
            .collect()
    }

    /// A foreign key of `fks` some row of the scratch tables violates
    /// (`child(cols) -> parent(cols)`), checked with the engine's own
    /// comparisons. InnoDB checks foreign keys row by row, immediately, so a
    /// statement that leaves a dangling reference failed at some row: its
    /// error is a foreign-key violation (the converse does not hold: an
    /// intermediate state can violate too, which this does not see; the case
    /// is then undecided).
    fn dangling_reference(
        &mut self,
        fks: &[(String, crate::model::ForeignKey)],
    ) -> ScratchResult<Option<String>> {
        for (child, fk) in fks {
            let not_null: Vec<String> = fk
                .columns
                .iter()
                .map(|c| format!("c_.{c} IS NOT NULL"))
                .collect();
            let equal: Vec<String> = fk
                .columns
                .iter()
                .zip(&fk.ref_columns)
                .map(|(c, p)| format!("p_.{p} = c_.{c}"))
                .collect();
            let sql = format!(
                "SELECT 1 FROM {child} c_ WHERE {} AND NOT EXISTS (SELECT 1 FROM {} p_ WHERE {}) LIMIT 1",
                not_null.join(" AND "),
                fk.ref_table,
                equal.join(" AND ")
            );
            if !self.query(&sql)?.is_empty() {
                return Ok(Some(format!(
                    "{child}({}) -> {}({})",
                    fk.columns.join(", "),
                    fk.ref_table,
                    fk.ref_columns.join(", ")
                )));
            }
        }
        Ok(None)
    }

    /// Row ids of scratch table `table` satisfying `where_`.
    pub fn matching(&mut self, table: &str, where_: Option<&Expr>) -> ScratchResult<Vec<i64>> {
        self.matching_as(table, table, where_)
    }

    /// Row ids of scratch table `table`, named `alias` in `where_`, satisfying it.
    pub fn matching_as(
        &mut self,
        table: &str,
        alias: &str,
        where_: Option<&Expr>,
    ) -> ScratchResult<Vec<i64>> {
        let sel = Select {
            distinct: false,
            items: vec![SelectItem {
                expr: Expr::qcol(alias, RID),
                alias: None,
            }],
            from: vec![FromItem {
                table: table.to_string(),
                alias: alias.to_string(),
                join: None,
            }],
            where_: where_.cloned(),
            group_by: vec![],
            order_by: vec![],
            limit: None,
            lock: None,
            cursor: None,
        };
        let rows = self.query(&sql::render_select(self.dialect, &sel))?;
        Ok(rows
            .iter()
            .filter_map(|r| match r.first() {
                Some(Value::Int(i)) => Some(*i),
                Some(Value::Text(s)) => s.parse().ok(),
                _ => None,
            })
            .collect())
    }
}

/// A scratch statement the engine refused, as [`ScratchResult`] says it.
fn refused(sql: &str, e: &StmtError) -> String {
    format!("{sql}: {} ({})", e.message, e.code)
}

fn scratch_error(class: ErrorClass, message: String) -> Outcome {
    Outcome {
        error: Some(StmtError {
            class,
            code: "scratch".into(),
            message,
        }),
        ..Outcome::default()
    }
}
