//! Embedded SQLite (rusqlite, bundled): a file database in WAL mode shared by one
//! connection per session. Lock waits are seen by a busy handler that ticks the
//! session's [`WaitSignal`] on every call (the first tick means "blocked") and
//! keeps waiting until the lock is free or txfuzz cancels.

mod cursor;
mod profile;
pub use profile::{immediate_start_rules, profile, rule};

use super::{
    Cancel, Canceller, CursorRows, Engine, EngineError, EngineProfile, QueryResult, Session,
    WaitSignal,
};
use crate::instrument::{self, Prepared};
use crate::model::{
    DbState, EngineInfo, ErrorClass, Isolation, Outcome, Schema, StmtError, TableData, TestCase,
    Value,
};
use crate::sql::{self, Dialect, Layout};
use rusqlite::{ffi, types::ValueRef, Connection, OpenFlags};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    /// The wait signal of the session whose statement runs on this thread.
    static CURRENT_SIGNAL: RefCell<Option<Arc<WaitSignal>>> = const { RefCell::new(None) };
}

/// How long the busy handler sleeps between retries.
const BUSY_POLL: Duration = Duration::from_micros(100);

/// The busy handler of every session connection (rusqlite takes a plain `fn`, so
/// the session's signal comes from a thread-local set by [`SqliteSession::query`]).
fn busy_handler(_calls: i32) -> bool {
    CURRENT_SIGNAL.with(|cur| match cur.borrow().as_ref() {
        Some(signal) if !signal.cancel_requested() => {
            signal.tick();
            std::thread::sleep(BUSY_POLL);
            true
        }
        _ => false,
    })
}

pub struct SqliteEngine {
    _dir: Option<tempfile::TempDir>,
    path: PathBuf,
    admin: Connection,
    info: EngineInfo,
    profile: EngineProfile,
    loaded: Option<(Schema, Vec<TableData>, Layout)>,
    /// The loaded case asks for a checkpoint after each fill
    /// ([`TestCase::checkpoint`]).
    checkpoint: bool,
}

/// The `application_id` txfuzz writes into the header of the databases it
/// creates ("txfx"): a file without it that holds tables is a user's
/// database, which txfuzz must not touch (it drops every table it finds).
const APPLICATION_ID: i64 = 0x7478_6678;

/// Marks the database at `path` as txfuzz's, or refuses it when it holds
/// tables txfuzz did not create.
fn claim_database(admin: &Connection, path: &Path) -> Result<(), EngineError> {
    let err = |e: rusqlite::Error| EngineError::Connect {
        url: format!("sqlite:{}", path.display()),
        reason: e.to_string(),
    };
    let id: i64 = admin
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(err)?;
    if id == APPLICATION_ID {
        return Ok(());
    }
    let tables: i64 = admin
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if tables > 0 {
        return Err(EngineError::Usage(format!(
            "{} holds {tables} table(s) or other objects txfuzz did not create; txfuzz drops \
             every table of the database it tests, so it refuses this file (give a new \
             file, or omit --db for a temporary database)",
            path.display()
        )));
    }
    admin
        .execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))
        .map_err(err)
}

/// A new database file in a temporary directory (RAM-backed where there is
/// one: the database is scratch space), removed with the directory.
pub(crate) fn temporary_database(
    prefix: &str,
) -> Result<(tempfile::TempDir, PathBuf), EngineError> {
    let shm = Path::new("/dev/shm");
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    let dir = if shm.is_dir() {
        builder.tempdir_in(shm).or_else(|_| builder.tempdir())
    } else {
        builder.tempdir()
    };
    let dir = dir.map_err(|e| EngineError::Setup(format!("temporary directory: {e}")))?;
    let path = dir.path().join("txfuzz.db");
    Ok((dir, path))
}

fn setup_err(e: rusqlite::Error) -> EngineError {
    EngineError::Setup(e.to_string())
}

impl SqliteEngine {
    /// Opens (creating if needed) the database at `path`, or a temporary one.
    pub fn open(path: Option<PathBuf>) -> Result<SqliteEngine, EngineError> {
        let (dir, path) = match path {
            Some(p) => (None, p),
            None => {
                let (dir, path) = temporary_database("txfuzz-sqlite-")?;
                (Some(dir), path)
            }
        };
        let url = format!("sqlite:{}", path.display());
        let admin = Connection::open(&path).map_err(|e| EngineError::Connect {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        // Before anything writes to the file (WAL mode changes its header).
        claim_database(&admin, &path)?;
        admin
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA foreign_keys=OFF;",
            )
            .map_err(|e| EngineError::Connect {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        let version: String = admin
            .query_row("SELECT sqlite_version()", [], |r| r.get(0))
            .map_err(setup_err)?;
        let mut settings = std::collections::BTreeMap::new();
        settings.insert("journal_mode".into(), "wal".into());
        settings.insert("foreign_keys".into(), "on".into());
        let profile = profile(&settings);
        Ok(SqliteEngine {
            _dir: dir,
            path,
            admin,
            info: EngineInfo {
                name: "sqlite".into(),
                version,
                url,
                settings,
            },
            profile,
            loaded: None,
            checkpoint: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn drop_all_tables(&self) -> Result<(), EngineError> {
        let names: Vec<String> = {
            let mut st = self
                .admin
                .prepare("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")
                .map_err(setup_err)?;
            let rows = st.query_map([], |r| r.get(0)).map_err(setup_err)?;
            rows.collect::<Result<_, _>>().map_err(setup_err)?
        };
        let mut batch = String::new();
        for n in names {
            batch.push_str(&sql::drop_table(Dialect::Sqlite, &n));
            batch.push_str(";\n");
        }
        self.admin.execute_batch(&batch).map_err(setup_err)
    }

    fn fill(&self, schema: &Schema, data: &[TableData], layout: Layout) -> Result<(), EngineError> {
        let mut batch = String::from("BEGIN;\n");
        for t in &schema.tables {
            if let Some(d) = data.iter().find(|d| d.table == t.name) {
                if let Some(ins) = sql::insert_rows_as(Dialect::Sqlite, t, &d.rows, layout) {
                    batch.push_str(&ins);
                    batch.push_str(";\n");
                }
            }
        }
        batch.push_str("COMMIT;");
        self.admin.execute_batch(&batch).map_err(|e| {
            let _ = self.admin.execute_batch("ROLLBACK");
            EngineError::Setup(format!("initial rows rejected: {e}"))
        })
    }
}

impl SqliteEngine {
    fn layout(&self) -> Layout {
        self.loaded.as_ref().map_or(Layout::Instrumented, |l| l.2)
    }

    /// Moves the loaded rows from the WAL into the database file when the
    /// case asks for it ([`TestCase::checkpoint`]).
    fn checkpoint_if_asked(&self) -> Result<(), EngineError> {
        if !self.checkpoint {
            return Ok(());
        }
        self.admin
            .query_row(sql::CHECKPOINT, [], |_| Ok(()))
            .map_err(|e| EngineError::Setup(format!("checkpoint: {e}")))
    }
}

impl Engine for SqliteEngine {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
    fn profile(&self) -> &EngineProfile {
        &self.profile
    }

    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError> {
        self.loaded = None;
        self.drop_all_tables()?;
        let mut ddl = String::new();
        for t in &case.schema.tables {
            for s in sql::create_table_as(Dialect::Sqlite, t, layout) {
                ddl.push_str(&s);
                ddl.push_str(";\n");
            }
        }
        self.admin
            .execute_batch(&ddl)
            .map_err(|e| EngineError::Setup(format!("schema rejected: {e}")))?;
        self.fill(&case.schema, &case.data, layout)?;
        self.loaded = Some((case.schema.clone(), case.data.clone(), layout));
        self.checkpoint = case.checkpoint;
        self.checkpoint_if_asked()
    }

    fn reset(&mut self) -> Result<(), EngineError> {
        let Some((schema, data, layout)) = &self.loaded else {
            return Err(EngineError::Setup("reset before load".into()));
        };
        let mut batch = String::new();
        for t in schema.tables.iter().rev() {
            batch.push_str(&format!("DELETE FROM {};\n", t.name));
        }
        self.admin.execute_batch(&batch).map_err(setup_err)?;
        self.fill(schema, data, *layout)?;
        self.checkpoint_if_asked()
    }

    fn open_session(
        &mut self,
        _isolation: Isolation,
        signal: Arc<WaitSignal>,
    ) -> Result<Box<dyn Session>, EngineError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| EngineError::Connect {
            url: self.info.url.clone(),
            reason: e.to_string(),
        })?;
        conn.busy_handler(Some(busy_handler)).map_err(setup_err)?;
        conn.execute_batch("PRAGMA foreign_keys=ON;")
            .map_err(setup_err)?;
        register_capture(&conn).map_err(setup_err)?;
        let interrupt = Arc::new(conn.get_interrupt_handle());
        Ok(Box::new(SqliteSession {
            cursors: Vec::new(),
            conn,
            signal,
            interrupt,
        }))
    }

    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError> {
        let mut state = DbState::new();
        for t in &schema.tables {
            let q = sql::select_state_as(Dialect::Sqlite, t, self.layout());
            let mut rows = query_rows(&self.admin, &q)
                .map_err(|e| EngineError::Setup(format!("reading {}: {}", t.name, e.message)))?
                .rows;
            rows.sort();
            state.insert(t.name.clone(), rows);
        }
        Ok(state)
    }
}

pub struct SqliteSession {
    /// Open cursors by name; declared before `conn` so that they are
    /// finalized before it closes.
    cursors: Vec<(String, cursor::RawCursor)>,
    conn: Connection,
    signal: Arc<WaitSignal>,
    interrupt: Arc<rusqlite::InterruptHandle>,
}

struct SqliteCanceller {
    signal: Arc<WaitSignal>,
    interrupt: Arc<rusqlite::InterruptHandle>,
}

impl Canceller for SqliteCanceller {
    fn cancel(&self) -> Cancel {
        self.signal.request_cancel();
        self.interrupt.interrupt();
        Cancel::Sent
    }
}

/// Runs `f` (a statement or a cursor step) with the session's wait signal
/// installed for the busy handler.
fn with_signal<T>(signal: &Arc<WaitSignal>, f: impl FnOnce() -> T) -> T {
    signal.clear_cancel();
    CURRENT_SIGNAL.with(|c| *c.borrow_mut() = Some(signal.clone()));
    let out = f();
    CURRENT_SIGNAL.with(|c| *c.borrow_mut() = None);
    out
}

impl Session for SqliteSession {
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError> {
        with_signal(&self.signal, || query_rows(&self.conn, sql))
    }

    fn run(&mut self, p: &Prepared) -> Outcome {
        crate::engine::run_prepared(self, p)
    }

    fn open_cursor(&mut self, name: &str, sql: &str, rows: u32) -> Result<CursorRows, StmtError> {
        if self.cursors.iter().any(|(n, _)| n == name) {
            return Err(StmtError {
                class: ErrorClass::Other,
                code: "cursor".into(),
                message: format!("cursor {name} is already open"),
            });
        }
        let c = cursor::RawCursor::prepare(&self.conn, sql)?;
        self.cursors.push((name.to_string(), c));
        self.fetch_cursor(name, rows)
    }

    fn fetch_cursor(&mut self, name: &str, rows: u32) -> Result<CursorRows, StmtError> {
        let Some(at) = self.cursors.iter().position(|(n, _)| n == name) else {
            return Err(crate::engine::no_such_cursor(name));
        };
        let cursor = &mut self.cursors[at].1;
        with_signal(&self.signal, || cursor.step(rows))
    }

    fn close_cursor(&mut self, name: &str) -> Result<(), StmtError> {
        let Some(at) = self.cursors.iter().position(|(n, _)| n == name) else {
            return Err(crate::engine::no_such_cursor(name));
        };
        self.cursors.remove(at);
        Ok(())
    }

    fn canceller(&self) -> Arc<dyn Canceller> {
        Arc::new(SqliteCanceller {
            signal: self.signal.clone(),
            interrupt: self.interrupt.clone(),
        })
    }
}

/// The UPDATE capture functions ([`instrument::SQLITE_CAPTURE`]): an UPDATE
/// without RETURNING reports the rows it wrote, and those it matched but
/// left unchanged, through them, so it runs as the plain statement would.
fn register_capture(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    use std::sync::Mutex;
    let record = Arc::new(Mutex::new(String::new()));
    let writer = record.clone();
    conn.create_scalar_function(
        instrument::SQLITE_CAPTURE,
        4,
        FunctionFlags::SQLITE_UTF8,
        move |ctx| {
            let rid: i64 = ctx.get(0)?;
            let wl: String = ctx.get(1)?;
            let suffix: String = ctx.get(2)?;
            // Whether an assigned column changes (`NOT (c IS new AND ...)`,
            // never NULL).
            let changed: Option<bool> = ctx.get(3)?;
            let mut buf = writer.lock().unwrap_or_else(|e| e.into_inner());
            if !buf.is_empty() {
                buf.push(';');
            }
            if changed.unwrap_or(true) {
                buf.push_str(&format!("{rid}:{wl}"));
                Ok(format!("{wl}{suffix}"))
            } else {
                // A row left as it was: no new version (SQLite then writes
                // nothing), reported as matched and unchanged.
                buf.push_str(&format!("{rid}:{wl}="));
                Ok(wl)
            }
        },
    )?;
    conn.create_scalar_function(
        instrument::SQLITE_TAKE,
        0,
        FunctionFlags::SQLITE_UTF8,
        move |_| {
            Ok(std::mem::take(
                &mut *record.lock().unwrap_or_else(|e| e.into_inner()),
            ))
        },
    )
}

fn query_rows(conn: &Connection, sql: &str) -> Result<QueryResult, StmtError> {
    let mut st = conn.prepare(sql).map_err(classify)?;
    let ncols = st.column_count();
    if ncols == 0 {
        let affected = st.execute([]).map_err(classify)?;
        return Ok(QueryResult {
            rows: Vec::new(),
            affected: affected as u64,
        });
    }
    let mut rows = Vec::new();
    let mut q = st.query([]).map_err(classify)?;
    while let Some(row) = q.next().map_err(classify)? {
        let mut vals = Vec::with_capacity(ncols);
        for i in 0..ncols {
            vals.push(match row.get_ref(i).map_err(classify)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::Int(v),
                ValueRef::Real(f) => Value::real(f),
                ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Text(b.iter().map(|x| format!("{x:02x}")).collect()),
            });
        }
        rows.push(vals);
    }
    let affected = rows.len() as u64;
    Ok(QueryResult { rows, affected })
}

/// Classifies a SQLite error by its (extended) result code.
pub fn classify(e: rusqlite::Error) -> StmtError {
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            let ext = f.extended_code;
            let class = match ext & 0xff {
                ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED => ErrorClass::Busy,
                ffi::SQLITE_INTERRUPT => ErrorClass::Cancelled,
                ffi::SQLITE_CONSTRAINT => match ext {
                    ffi::SQLITE_CONSTRAINT_PRIMARYKEY | ffi::SQLITE_CONSTRAINT_UNIQUE => {
                        ErrorClass::DuplicateKey
                    }
                    ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorClass::NotNullViolation,
                    ffi::SQLITE_CONSTRAINT_CHECK => ErrorClass::CheckViolation,
                    ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorClass::ForeignKeyViolation,
                    // A RESTRICT action fails through SQLite's trigger
                    // machinery (txfuzz creates no triggers of its own).
                    ffi::SQLITE_CONSTRAINT_TRIGGER => ErrorClass::ForeignKeyViolation,
                    _ => ErrorClass::Other,
                },
                ffi::SQLITE_MISMATCH | ffi::SQLITE_TOOBIG | ffi::SQLITE_RANGE => {
                    ErrorClass::DataError
                }
                ffi::SQLITE_INTERNAL | ffi::SQLITE_CORRUPT => ErrorClass::Internal,
                ffi::SQLITE_IOERR | ffi::SQLITE_CANTOPEN | ffi::SQLITE_NOTADB => {
                    ErrorClass::ConnectionLost
                }
                _ => ErrorClass::Other,
            };
            StmtError {
                class,
                code: format!("SQLITE_{:?}({ext})", f.code),
                message: msg.unwrap_or_else(|| f.to_string()),
            }
        }
        other => StmtError {
            class: ErrorClass::Other,
            code: "rusqlite".into(),
            message: other.to_string(),
        },
    }
}
