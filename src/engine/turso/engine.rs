//! The turso engine and its sessions (see the module documentation).

use super::profile::{profile, MODE_SETTING, MVCC};
use crate::engine::{
    Cancel, Canceller, CursorRows, Engine, EngineError, EngineProfile, QueryResult, Session,
    WaitSignal,
};
use crate::instrument::{Prepared, Target, UpdateCapture};
use crate::model::{
    DbState, EngineInfo, ErrorClass, Isolation, Outcome, Schema, StmtError, TableData, TestCase,
    Value,
};
use crate::sql::{self, Dialect, Layout};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

thread_local! {
    /// The runtime that drives turso's futures on this thread (sessions run
    /// on their own threads; turso's I/O is polled by its own futures).
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
}

/// Runs one turso call to completion; a panic inside the engine becomes an
/// `Internal` error with code `panic`.
fn block<T>(f: impl Future<Output = Result<T, StmtError>>) -> Result<T, StmtError> {
    let run = std::panic::AssertUnwindSafe(|| RUNTIME.with(|rt| rt.block_on(f)));
    std::panic::catch_unwind(run).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into());
        Err(StmtError {
            class: ErrorClass::Internal,
            code: "panic".into(),
            message: format!("turso panicked: {message}"),
        })
    })
}

/// The class of a turso error message (turso's Rust API reports write-write
/// conflicts, constraint and syntax errors as text).
pub fn classify_message(kind: &str, message: &str) -> ErrorClass {
    let m = message.to_ascii_lowercase();
    match kind {
        "Busy" | "BusySnapshot" => ErrorClass::Busy,
        "Interrupt" => ErrorClass::Cancelled,
        "Constraint" if m.contains("unique") || m.contains("primary key") => {
            ErrorClass::DuplicateKey
        }
        "Constraint" if m.contains("not null") => ErrorClass::NotNullViolation,
        "Constraint" if m.contains("check") => ErrorClass::CheckViolation,
        "Constraint" if m.contains("foreign key") => ErrorClass::ForeignKeyViolation,
        "Corrupt" | "NotAdb" | "Misuse" => ErrorClass::Internal,
        "IoError" => ErrorClass::ConnectionLost,
        _ if m.contains("write-write conflict") || m.contains("commit dependency aborted") => {
            ErrorClass::SerializationFailure
        }
        _ if m.contains("syntax error") || m.contains("parse error") || m.contains("no such") => {
            ErrorClass::Syntax
        }
        _ if m.contains("integer overflow")
            || m.contains("datatype mismatch")
            || m.contains("too big") =>
        {
            ErrorClass::DataError
        }
        _ => ErrorClass::Other,
    }
}

fn classify(e: turso::Error) -> StmtError {
    let debug = format!("{e:?}");
    let kind = debug
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_string();
    let message = e.to_string();
    StmtError {
        class: classify_message(&kind, &message),
        code: format!("turso::{kind}"),
        message,
    }
}

fn value(v: turso::Value) -> Value {
    match v {
        turso::Value::Null => Value::Null,
        turso::Value::Integer(i) => Value::Int(i),
        turso::Value::Real(f) => Value::real(f),
        turso::Value::Text(t) => Value::Text(t),
        turso::Value::Blob(b) => Value::Text(b.iter().map(|x| format!("{x:02x}")).collect()),
    }
}

/// Runs one SQL text on `conn`: its rows, or its affected count when it
/// returns no columns.
async fn run_sql(conn: &turso::Connection, sql: &str) -> Result<QueryResult, StmtError> {
    let mut st = conn.prepare(sql).await.map_err(classify)?;
    let ncols = st.column_count();
    if ncols == 0 {
        let affected = st.execute(()).await.map_err(classify)?;
        return Ok(QueryResult {
            rows: Vec::new(),
            affected,
        });
    }
    let mut rows = Vec::new();
    let mut q = st.query(()).await.map_err(classify)?;
    while let Some(row) = q.next().await.map_err(classify)? {
        let mut vals = Vec::with_capacity(ncols);
        for i in 0..ncols {
            vals.push(value(row.get_value(i).map_err(classify)?));
        }
        rows.push(vals);
    }
    let affected = rows.len() as u64;
    Ok(QueryResult { rows, affected })
}

fn setup(what: &str) -> impl Fn(StmtError) -> EngineError + '_ {
    move |e| EngineError::Setup(format!("{what}: {} ({})", e.message, e.code))
}

/// In MVCC mode a temporary database is opened afresh after this many loads
/// of new tables. turso 0.8.3's MVCC checkpoint and row-version collection
/// walk every version the store holds, and a long-lived database that
/// creates and drops a case's tables thousands of times keeps growing that
/// walk: a 10-minute campaign fell from 103 to 14 cases/s (`perf`: 41% of
/// the samples in `drop_unused_row_versions_inner`, `CheckpointStateMachine`
/// and `Vec::retain`; BENCHMARKS.md). A case owes nothing to the cases
/// before it (replays and reductions run on a fresh database too).
const MVCC_LOADS_PER_DATABASE: u32 = 200;

pub struct TursoEngine {
    _dir: Option<tempfile::TempDir>,
    db: turso::Database,
    admin: turso::Connection,
    info: EngineInfo,
    profile: EngineProfile,
    loaded: Option<(Schema, Vec<TableData>, Layout)>,
    /// The loaded case asks for a checkpoint after each fill
    /// ([`TestCase::checkpoint`]).
    checkpoint: bool,
    idle: Idle,
    /// Loads of new tables since the database was opened.
    loads: u32,
}

impl TursoEngine {
    /// Opens (creating if needed) the database at `path`, or a temporary one,
    /// in MVCC mode when `mvcc`.
    pub fn open(path: Option<PathBuf>, mvcc: bool) -> Result<TursoEngine, EngineError> {
        let (dir, path) = match path {
            Some(p) => (None, p),
            None => {
                let (dir, path) = crate::engine::sqlite::temporary_database("txfuzz-turso-")?;
                (Some(dir), path)
            }
        };
        let scheme = if mvcc { "turso-mvcc" } else { "turso" };
        let url = format!("{scheme}:{}", path.display());
        let connect = |e: StmtError| EngineError::Connect {
            url: url.clone(),
            reason: e.message,
        };
        let path_text = path.to_string_lossy().into_owned();
        let db = block(async {
            turso::Builder::new_local(&path_text)
                .build()
                .await
                .map_err(classify)
        })
        .map_err(connect)?;
        let admin = db.connect().map_err(classify).map_err(connect)?;
        refuse_user_database(&admin, &path)?;
        run(&admin, "PRAGMA temp_store = MEMORY").map_err(connect)?;
        if mvcc {
            run(&admin, "PRAGMA journal_mode = 'mvcc'").map_err(connect)?;
        }
        let version = run(&admin, "SELECT sqlite_version()")
            .ok()
            .and_then(|r| r.rows.into_iter().next())
            .and_then(|r| r.into_iter().next())
            .map(|v| match v {
                Value::Text(t) => t,
                other => format!("{other:?}"),
            })
            .unwrap_or_default();
        let mut settings = BTreeMap::new();
        settings.insert(
            MODE_SETTING.to_string(),
            if mvcc { MVCC } else { "wal" }.to_string(),
        );
        settings.insert("crate".into(), format!("turso {}", crate_version()));
        let profile = profile(&settings);
        Ok(TursoEngine {
            _dir: dir,
            db,
            admin,
            info: EngineInfo {
                name: "turso".into(),
                version: format!("{} (sqlite {version})", crate_version()),
                url,
                settings,
            },
            profile,
            loaded: None,
            checkpoint: false,
            idle: Idle::default(),
            loads: 0,
        })
    }

    /// In MVCC mode, a temporary database that has had
    /// [`MVCC_LOADS_PER_DATABASE`] loads is replaced by a fresh one (no
    /// session is open between cases; the engine's description stays).
    fn refresh_if_worn(&mut self) -> Result<(), EngineError> {
        let mvcc = self
            .info
            .settings
            .get(MODE_SETTING)
            .is_some_and(|m| m == MVCC);
        self.loads += 1;
        if !mvcc || self._dir.is_none() || self.loads <= MVCC_LOADS_PER_DATABASE {
            return Ok(());
        }
        let TursoEngine {
            _dir, db, admin, ..
        } = TursoEngine::open(None, true)?;
        // Connections of the old database go with their own pool.
        self.idle = Idle::default();
        self.admin = admin;
        self.db = db;
        self._dir = _dir;
        self.loads = 1;
        Ok(())
    }

    fn drop_all_tables(&self) -> Result<(), EngineError> {
        let names = run(
            &self.admin,
            &format!("SELECT name FROM sqlite_schema WHERE type = 'table' AND {USER_OBJECTS}"),
        )
        .map_err(setup("listing tables"))?;
        for row in names.rows {
            if let Some(Value::Text(n)) = row.into_iter().next() {
                run(&self.admin, &sql::drop_table(Dialect::Sqlite, &n))
                    .map_err(setup("dropping a table"))?;
            }
        }
        Ok(())
    }

    fn fill(&self, schema: &Schema, data: &[TableData], layout: Layout) -> Result<(), EngineError> {
        for t in &schema.tables {
            let Some(d) = data.iter().find(|d| d.table == t.name) else {
                continue;
            };
            if let Some(ins) = sql::insert_rows_as(Dialect::Sqlite, t, &d.rows, layout) {
                run(&self.admin, &ins).map_err(|e| {
                    EngineError::Setup(format!("initial rows rejected: {}", e.message))
                })?;
            }
        }
        Ok(())
    }

    /// Runs `work` on the admin connection in one transaction (one commit:
    /// in MVCC mode each commit of a schema change makes every connection
    /// parse the schema again), rolled back when it fails.
    fn in_transaction(
        &self,
        work: impl FnOnce() -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        run(&self.admin, "BEGIN").map_err(setup("set-up transaction"))?;
        match work() {
            Ok(()) => {
                run(&self.admin, "COMMIT").map_err(setup("set-up transaction"))?;
                Ok(())
            }
            Err(e) => {
                let _ = run(&self.admin, "ROLLBACK");
                Err(e)
            }
        }
    }

    fn layout(&self) -> Layout {
        self.loaded.as_ref().map_or(Layout::Instrumented, |l| l.2)
    }

    /// Moves the loaded rows from the log into the database file when the
    /// case asks for it ([`TestCase::checkpoint`]).
    fn checkpoint_if_asked(&self) -> Result<(), EngineError> {
        if self.checkpoint {
            run(&self.admin, sql::CHECKPOINT).map_err(setup("checkpoint"))?;
        }
        Ok(())
    }
}

/// Run on every session: foreign keys enforced (off by default, as in
/// SQLite); temporary storage (sorts, hash spills, the TEMP tables of the
/// `view` oracle's scratch session) in memory, where turso's default makes a
/// directory under $TMPDIR per use and syncs its files (three quarters of a
/// case's time on this machine's disk).
const SESSION_PRAGMAS: [&str; 2] = ["PRAGMA foreign_keys = ON", "PRAGMA temp_store = MEMORY"];

/// The schema entries that are not the engine's own (SQLite's `sqlite_*`,
/// turso's MVCC metadata `__turso_internal_*`).
const USER_OBJECTS: &str =
    "substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 17) <> '__turso_internal_'";

/// The version of the `turso` crate txfuzz was built with.
fn crate_version() -> &'static str {
    env!("TXFUZZ_TURSO_VERSION")
}

/// Runs `sql` on `conn` from a thread outside any runtime.
fn run(conn: &turso::Connection, sql: &str) -> Result<QueryResult, StmtError> {
    block(run_sql(conn, sql))
}

/// Refuses a database file holding tables: txfuzz drops every table of the
/// database it tests, and turso has no header field to mark its own files.
fn refuse_user_database(
    admin: &turso::Connection,
    path: &std::path::Path,
) -> Result<(), EngineError> {
    let tables = run(
        admin,
        &format!("SELECT count(*) FROM sqlite_schema WHERE {USER_OBJECTS}"),
    )
    .map_err(setup("reading the schema"))?;
    let n = match tables.rows.first().and_then(|r| r.first()) {
        Some(Value::Int(n)) => *n,
        _ => 0,
    };
    if n > 0 {
        return Err(EngineError::Usage(format!(
            "{} holds {n} table(s) or other objects; txfuzz drops every table of the database \
             it tests, so it refuses an existing turso database (give a new file, or omit the \
             path for a temporary database)",
            path.display()
        )));
    }
    Ok(())
}

impl Engine for TursoEngine {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
    /// turso's Rust API has no session functions: an UPDATE reports its
    /// rows with RETURNING, and leaves a row whose values stay as it was
    /// (turso writes nothing for it, so it takes no write lock).
    fn target(&self) -> Target {
        Target {
            dialect: Dialect::Sqlite,
            update_capture: UpdateCapture::ReturningWhereChanged,
        }
    }
    fn profile(&self) -> &EngineProfile {
        &self.profile
    }

    /// The same tables as loaded (a replay of the case): their rows are
    /// reset instead, without DDL, which in MVCC mode makes every connection
    /// parse the schema again.
    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError> {
        let same_tables = self
            .loaded
            .as_ref()
            .is_some_and(|(schema, _, l)| *schema == case.schema && *l == layout);
        self.checkpoint = case.checkpoint;
        if same_tables {
            self.loaded = Some((case.schema.clone(), case.data.clone(), layout));
            return self.reset();
        }
        self.loaded = None;
        self.refresh_if_worn()?;
        self.in_transaction(|| {
            self.drop_all_tables()?;
            for t in &case.schema.tables {
                for s in sql::create_table_as(Dialect::Sqlite, t, layout) {
                    run(&self.admin, &s).map_err(|e| {
                        EngineError::Setup(format!("schema rejected: {} ({s})", e.message))
                    })?;
                }
            }
            self.fill(&case.schema, &case.data, layout)
        })?;
        self.loaded = Some((case.schema.clone(), case.data.clone(), layout));
        self.checkpoint_if_asked()
    }

    fn reset(&mut self) -> Result<(), EngineError> {
        let Some((schema, data, layout)) = self.loaded.clone() else {
            return Err(EngineError::Setup("reset before load".into()));
        };
        self.in_transaction(|| {
            for t in schema.tables.iter().rev() {
                run(&self.admin, &format!("DELETE FROM {}", t.name)).map_err(setup("reset"))?;
            }
            self.fill(&schema, &data, layout)
        })?;
        self.checkpoint_if_asked()
    }

    fn open_session(
        &mut self,
        _isolation: Isolation,
        signal: Arc<WaitSignal>,
    ) -> Result<Box<dyn Session>, EngineError> {
        let pooled = self.idle.lock().map(|mut idle| idle.pop()).unwrap_or(None);
        let conn = match pooled {
            Some(conn) => conn,
            None => {
                let conn = self.db.connect().map_err(|e| EngineError::Connect {
                    url: self.info.url.clone(),
                    reason: e.to_string(),
                })?;
                for pragma in SESSION_PRAGMAS {
                    run(&conn, pragma).map_err(setup("session setup"))?;
                }
                conn
            }
        };
        Ok(Box::new(TursoSession {
            cursors: Vec::new(),
            conn: Some(conn),
            idle: self.idle.clone(),
            signal,
            broken: None,
        }))
    }

    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError> {
        let mut state = DbState::new();
        for t in &schema.tables {
            let q = sql::select_state_as(Dialect::Sqlite, t, self.layout());
            let mut rows = run(&self.admin, &q)
                .map_err(|e| EngineError::Setup(format!("reading {}: {}", t.name, e.message)))?
                .rows;
            rows.sort();
            state.insert(t.name.clone(), rows);
        }
        Ok(state)
    }
}

/// Connections of ended sessions, ready for the next ones: a new turso
/// connection builds its schema and, at its first BEGIN, a temporary
/// database (a quarter of a case's time in MVCC mode). A session hands its
/// connection back only in a clean state: no open transaction, no TEMP
/// table (the `view` oracle's scratch tables), the engine never panicked.
type Idle = Arc<std::sync::Mutex<Vec<turso::Connection>>>;

/// At most this many idle connections are kept.
const MAX_IDLE: usize = 16;

pub struct TursoSession {
    /// Open cursors by name, with whether stepping reached the end (dropped
    /// before the connection is cleaned).
    cursors: Vec<(String, turso::Rows, bool)>,
    /// `None` only while being dropped.
    conn: Option<turso::Connection>,
    idle: Idle,
    signal: Arc<WaitSignal>,
    /// Set once the engine panicked inside this session.
    broken: Option<StmtError>,
}

/// turso 0.8's Rust API cannot interrupt a running statement; statements
/// never wait here, so only an engine that loops forever needs it, and the
/// executor abandons such a session after the hang timeout.
struct TursoCanceller {
    signal: Arc<WaitSignal>,
}

impl Canceller for TursoCanceller {
    fn cancel(&self) -> Cancel {
        self.signal.request_cancel();
        Cancel::Sent
    }
}

/// The error of a statement the session refuses after the engine panicked
/// at `panic`.
fn after_panic(panic: &StmtError) -> StmtError {
    StmtError {
        class: ErrorClass::Internal,
        code: crate::engine::AFTER_PANIC_CODE.into(),
        message: format!(
            "not run: the session's engine panicked at an earlier statement ({})",
            panic.message
        ),
    }
}

impl TursoSession {
    /// `result`, remembering an engine panic (the session is broken then).
    fn noting_panic<T>(&mut self, result: Result<T, StmtError>) -> Result<T, StmtError> {
        if let Err(e) = &result {
            if e.code == "panic" {
                self.broken = Some(e.clone());
            }
        }
        result
    }

    /// Returns the connection to a clean state for the next session: its
    /// transaction rolled back, its TEMP tables dropped. `None`: it cannot
    /// be trusted (then it is closed instead).
    fn cleaned(&mut self) -> Option<turso::Connection> {
        self.cursors.clear();
        let conn = self.conn.take()?;
        if self.broken.is_some() {
            return None;
        }
        if !conn.is_autocommit().ok()? {
            run(&conn, "ROLLBACK").ok()?;
        }
        let temp = run(
            &conn,
            "SELECT name FROM temp.sqlite_schema WHERE type = 'table'",
        )
        .ok()?;
        for row in temp.rows {
            let Some(Value::Text(name)) = row.into_iter().next() else {
                return None;
            };
            run(&conn, &format!("DROP TABLE temp.\"{name}\"")).ok()?;
        }
        conn.is_autocommit().ok()?.then_some(conn)
    }
}

impl Drop for TursoSession {
    fn drop(&mut self) {
        if let Some(conn) = self.cleaned() {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < MAX_IDLE {
                    idle.push(conn);
                }
            }
        }
    }
}

impl Session for TursoSession {
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        if let Some(e) = &self.broken {
            return Err(after_panic(e));
        }
        let Some(conn) = &self.conn else {
            return Err(StmtError {
                class: ErrorClass::Internal,
                code: "closed".into(),
                message: "the session's connection is closed".into(),
            });
        };
        let result = run(conn, sql);
        self.noting_panic(result)
    }

    fn run(&mut self, p: &Prepared) -> Outcome {
        crate::engine::run_prepared(self, p)
    }

    fn open_cursor(&mut self, name: &str, sql: &str, rows: u32) -> Result<CursorRows, StmtError> {
        if let Some(e) = &self.broken {
            return Err(after_panic(e));
        }
        if self.cursors.iter().any(|(n, ..)| n == name) {
            return Err(StmtError {
                class: ErrorClass::Other,
                code: "cursor".into(),
                message: format!("cursor {name} is already open"),
            });
        }
        let Some(conn) = &self.conn else {
            return Err(crate::engine::no_such_cursor(name));
        };
        let opened = block(async {
            let mut st = conn.prepare(sql).await.map_err(classify)?;
            st.query(()).await.map_err(classify)
        });
        let cursor = self.noting_panic(opened)?;
        self.cursors.push((name.to_string(), cursor, false));
        self.fetch_cursor(name, rows)
    }

    fn fetch_cursor(&mut self, name: &str, rows: u32) -> Result<CursorRows, StmtError> {
        if let Some(e) = &self.broken {
            return Err(after_panic(e));
        }
        let Some(at) = self.cursors.iter().position(|(n, ..)| n == name) else {
            return Err(crate::engine::no_such_cursor(name));
        };
        let (_, cursor, done) = &mut self.cursors[at];
        let stepped = block(async {
            let mut out = Vec::new();
            while !*done && out.len() < rows as usize {
                match cursor.next().await.map_err(classify)? {
                    Some(row) => out.push(
                        (0..row.column_count())
                            .map(|i| row.get_value(i).map(value).map_err(classify))
                            .collect::<Result<Vec<_>, _>>()?,
                    ),
                    None => *done = true,
                }
            }
            Ok(CursorRows {
                rows: out,
                done: *done,
            })
        });
        self.noting_panic(stepped)
    }

    fn close_cursor(&mut self, name: &str) -> Result<(), StmtError> {
        let Some(at) = self.cursors.iter().position(|(n, ..)| n == name) else {
            return Err(crate::engine::no_such_cursor(name));
        };
        self.cursors.remove(at);
        Ok(())
    }

    fn canceller(&self) -> Arc<dyn Canceller> {
        Arc::new(TursoCanceller {
            signal: self.signal.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified() {
        use ErrorClass::*;
        for (kind, msg, class) in [
            ("Error", "Write-write conflict", SerializationFailure),
            ("BusySnapshot", "Commit dependency aborted", Busy),
            ("Busy", "database is locked", Busy),
            ("Constraint", "UNIQUE constraint failed: t.k", DuplicateKey),
            (
                "Constraint",
                "NOT NULL constraint failed: p.k",
                NotNullViolation,
            ),
            (
                "Constraint",
                "CHECK constraint failed: v > 0",
                CheckViolation,
            ),
            (
                "Constraint",
                "FOREIGN KEY constraint failed",
                ForeignKeyViolation,
            ),
            ("Error", "near \"SELEC\": syntax error", Syntax),
            ("Corrupt", "page 3", Internal),
            ("Error", "something new", Other),
        ] {
            assert_eq!(classify_message(kind, msg), class, "{kind}: {msg}");
        }
    }

    #[test]
    fn a_panic_is_an_internal_error() {
        let e = block::<()>(async { panic!("boom") }).unwrap_err();
        assert_eq!((e.class, e.code.as_str()), (ErrorClass::Internal, "panic"));
        assert!(e.message.contains("boom"), "{}", e.message);
    }
}
