//! Engines: how txfuzz talks to a database. An [`Engine`] loads a case's schema and
//! rows, resets them, opens one [`Session`] per transaction and reads the final
//! state. Sessions run SQL text synchronously on their own thread; a session that
//! waits for a lock says so through its [`WaitSignal`].

pub mod fault;
pub mod leftover;
pub mod mysql;
pub mod pool;
pub mod postgres;
pub mod profile;
pub mod registry;
mod run;
pub mod server;
pub mod server_root;
pub mod sqlite;
pub mod turso;
pub mod url;

use crate::instrument::{Prepared, Target};
use crate::model::{
    DbState, EngineInfo, Isolation, Outcome, Schema, StmtError, StmtRef, TestCase, Value,
};
use crate::sql::{Dialect, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub use profile::{EngineProfile, ErrorScope};
pub use run::run_prepared;

/// A failure of the infrastructure (not of a statement under test): the engine
/// cannot be reached, set up or read. Campaigns stop on these.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("{0}")]
    Usage(String),
    #[error("engine setup failed: {0}")]
    Setup(String),
    #[error("connection lost: {0}")]
    Lost(String),
    /// A round trip of the engine's own connection (load, reset, final state)
    /// did not answer within its deadline: the server hangs.
    #[error("the server did not answer: {0}")]
    Hung(String),
}

/// How the message of [`EngineError::Hung`] starts (histories keep the
/// message of the error that ended a run).
pub const HUNG: &str = "the server did not answer";

/// Why a URL that asks for TLS is refused (README, "Engines").
pub const NO_TLS: &str = "TLS is not supported: txfuzz talks to the server without TLS \
     (run it on the server's machine or a trusted network; remove sslmode=require / require_ssl \
     from the URL)";

/// How the reason of a round trip or connection attempt that missed its
/// deadline starts: the server is there (the kernel accepts) but frozen.
pub const NO_ANSWER: &str = "no answer within";

impl EngineError {
    /// Whether the server (not txfuzz's input) is the problem: a campaign
    /// records a `crash` finding and tries to recover.
    pub fn is_server_failure(&self) -> bool {
        matches!(
            self,
            EngineError::Lost(_) | EngineError::Connect { .. } | EngineError::Hung(_)
        )
    }

    /// The `crash` finding kind of a server failure, by fault rather than by
    /// where the campaign was when it struck: a server that stopped answering
    /// (a missed deadline, a connection attempt nobody answers) is a `hang`;
    /// one that went away (refused, reset, closed) is `connection-lost`.
    pub fn crash_kind(&self) -> &'static str {
        match self {
            EngineError::Hung(_) => "hang",
            EngineError::Connect { reason, .. } if reason.contains(NO_ANSWER) => "hang",
            EngineError::Lost(m) if m.contains(NO_ANSWER) => "hang",
            _ => "connection-lost",
        }
    }
}

/// Whether the text of a server failure (a history's `final_state_error`)
/// says the server stopped answering: [`EngineError::Hung`], or a deadline
/// missed.
pub fn says_hung(text: &str) -> bool {
    text.starts_with(HUNG) || text.contains(NO_ANSWER)
}

/// The error code of a round trip that did not answer within its deadline
/// (class `ConnectionLost`: the connection is dropped).
pub const DEADLINE_CODE: &str = "deadline";

/// The error code of a statement refused because its session's engine
/// panicked at an earlier statement (class `Internal`: the session is
/// broken, and the earlier statement's error is the finding).
pub const AFTER_PANIC_CODE: &str = "after-panic";

/// A round trip that did not answer within `d`.
pub(crate) fn deadline_error(d: std::time::Duration) -> StmtError {
    StmtError {
        class: crate::model::ErrorClass::ConnectionLost,
        code: DEADLINE_CODE.into(),
        message: format!("{NO_ANSWER} {d:?}"),
    }
}

/// An error of the engine's own connection while doing `what`: a missed
/// deadline or a lock wait timeout (something holds a lock and does not
/// let go) is `Hung`, a lost connection `Lost`, anything else `Setup`.
pub(crate) fn admin_error(what: &str, e: StmtError) -> EngineError {
    use crate::model::ErrorClass;
    let text = format!("{what}: {} ({})", e.message, e.code);
    if e.code == DEADLINE_CODE || e.class == ErrorClass::LockWaitTimeout {
        EngineError::Hung(text)
    } else if e.class == ErrorClass::ConnectionLost {
        EngineError::Lost(text)
    } else {
        EngineError::Setup(text)
    }
}

/// How long a round trip of an engine's own connections (load, reset, final
/// state, lock-wait monitor, session setup) may take by default; campaigns
/// use `--hang-timeout` ([`Engine::set_deadline`]).
pub const DEFAULT_ADMIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// The error of a recovery given up because the campaign is stopping.
pub fn abandoned() -> EngineError {
    EngineError::Lost("recovery abandoned: the campaign is stopping".into())
}

/// Between two reconnection attempts of [`Engine::recover`] (each of which
/// first asks whether to give up, [`abandoned`]): sleeps 200 ms and returns
/// `Ok`, or `timed_out()` once `deadline` has passed.
pub fn retry_pause(
    deadline: std::time::Instant,
    timed_out: impl FnOnce() -> EngineError,
) -> Result<(), EngineError> {
    if std::time::Instant::now() >= deadline {
        return Err(timed_out());
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    Ok(())
}

/// Runs a set-up batch (a reset, a fill) up to five times while it
/// deadlocks: a session the previous case abandoned (its server process
/// stopped and continued, say) may still hold locks and deadlock with it,
/// which then rolled back whole. Pauses 50, 100, ... ms between the runs.
pub(crate) fn retry_deadlocks(
    mut run: impl FnMut() -> Result<(), crate::model::StmtError>,
) -> Result<(), crate::model::StmtError> {
    const ATTEMPTS: u64 = 5;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match run() {
            Err(e) if e.class == crate::model::ErrorClass::Deadlock && attempt < ATTEMPTS => {
                std::thread::sleep(std::time::Duration::from_millis(50 * attempt));
            }
            done => return done,
        }
    }
}

/// Rows and counts returned by one SQL text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryResult {
    pub rows: Vec<Vec<Value>>,
    pub affected: u64,
}

/// Shared between a session (which reports lock waits) and the executor (which
/// reads them). `ticks` counts confirmations that the session is waiting for a
/// lock: one per SQLite busy-handler call, one per monitor poll on a server. A
/// statement is blocked when a tick arrives while it runs; it is still blocked
/// after a lock release once two more ticks have arrived.
#[derive(Default)]
pub struct WaitSignal {
    /// The transaction (session) this signal belongs to.
    txn: u32,
    ticks: AtomicU64,
    cancel: AtomicBool,
    /// The transaction holding the lock waited for (0: unknown).
    blocker: AtomicU32,
    /// Called after each tick, so a waiting executor wakes at once.
    waker: Option<Box<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for WaitSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitSignal")
            .field("ticks", &self.ticks)
            .field("cancel", &self.cancel)
            .finish()
    }
}

impl WaitSignal {
    pub fn new() -> Arc<WaitSignal> {
        Arc::new(WaitSignal::default())
    }
    /// The signal of session `txn`; it calls `waker` after every tick.
    pub fn with_waker(txn: u32, waker: impl Fn() + Send + Sync + 'static) -> Arc<WaitSignal> {
        Arc::new(WaitSignal {
            txn,
            waker: Some(Box::new(waker)),
            ..WaitSignal::default()
        })
    }
    pub fn txn(&self) -> u32 {
        self.txn
    }
    /// Records which session holds the lock this one waits for.
    pub fn set_blocker(&self, txn: u32) {
        self.blocker.store(txn, Ordering::SeqCst);
    }
    pub fn blocker(&self) -> Option<u32> {
        match self.blocker.load(Ordering::SeqCst) {
            0 => None,
            t => Some(t),
        }
    }
    /// Called by the engine each time it confirms the session waits for a lock.
    pub fn tick(&self) {
        self.ticks.fetch_add(1, Ordering::SeqCst);
        if let Some(w) = &self.waker {
            w();
        }
    }
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::SeqCst)
    }
    /// Asks the engine to give up waiting (checked by busy handlers).
    pub fn request_cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
    pub fn cancel_requested(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
    pub fn clear_cancel(&self) {
        self.cancel.store(false, Ordering::SeqCst);
    }
}

/// Whether a cancel request reached the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancel {
    /// Asked (the statement may still not stop: a stuck backend).
    Sent,
    /// The server took no connection to ask on within its timeout: it is gone
    /// or frozen, and every statement of the case is stuck with it.
    Unreachable,
}

/// Cancels the statement a session is running, from another thread.
pub trait Canceller: Send + Sync {
    fn cancel(&self) -> Cancel;
}

/// One connection, used by one transaction of a case, driven from one thread.
pub trait Session: Send {
    /// Runs one SQL text and waits for it (possibly waiting on locks).
    fn query(&mut self, sql: &str) -> Result<QueryResult, StmtError>;
    /// Runs `steps` in order, stopping at the first error: the result of each
    /// that ran. Server engines that take several statements in one round
    /// trip override it (an instrumented statement is up to three steps).
    fn query_each(&mut self, steps: &[&str]) -> Vec<Result<QueryResult, StmtError>> {
        let mut out = Vec::with_capacity(steps.len());
        for step in steps {
            let r = self.query(step);
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        out
    }
    /// Runs one instrumented statement of the case and interprets what it read and
    /// wrote. Implementations delegate to [`run_prepared`]; fault
    /// injectors override it.
    fn run(&mut self, p: &Prepared) -> Outcome;
    fn canceller(&self) -> Arc<dyn Canceller>;
    /// Prepares `sql` as cursor `name` and steps it up to `rows` rows; the
    /// statement stays open while the session runs others
    /// (`Features::cursors`).
    fn open_cursor(&mut self, name: &str, sql: &str, rows: u32) -> Result<CursorRows, StmtError> {
        let _ = (name, sql, rows);
        Err(no_cursors())
    }
    /// Steps open cursor `name` up to `rows` rows further.
    fn fetch_cursor(&mut self, name: &str, rows: u32) -> Result<CursorRows, StmtError> {
        let _ = (name, rows);
        Err(no_cursors())
    }
    /// Resets and closes cursor `name`.
    fn close_cursor(&mut self, name: &str) -> Result<(), StmtError> {
        let _ = name;
        Err(no_cursors())
    }
}

/// The rows of a cursor step; `done` when stepping reached the end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CursorRows {
    pub rows: Vec<Vec<Value>>,
    pub done: bool,
}

fn no_cursors() -> StmtError {
    StmtError {
        class: crate::model::ErrorClass::Other,
        code: "cursor".into(),
        message: "this engine's sessions hold no open cursors".into(),
    }
}

/// The error of a step or close of a cursor the session does not hold open.
pub fn no_such_cursor(name: &str) -> StmtError {
    StmtError {
        class: crate::model::ErrorClass::Other,
        code: "cursor".into(),
        message: format!("cursor {name} is not open"),
    }
}

/// A database under test.
pub trait Engine: Send {
    fn info(&self) -> &EngineInfo;
    fn dialect(&self) -> Dialect;
    /// What the case's statements are instrumented for: the dialect, and
    /// how an UPDATE reports its rows (by default the dialect's own
    /// engine's way).
    fn target(&self) -> Target {
        self.dialect().into()
    }
    fn profile(&self) -> &EngineProfile;
    /// Creates the case's tables and rows with the instrumentation columns
    /// (dropping what an earlier case left); this state is what
    /// [`Engine::reset`] restores.
    fn load(&mut self, case: &TestCase) -> Result<(), EngineError> {
        self.load_as(case, Layout::Instrumented)
    }
    /// [`Engine::load`] in the given layout: `Plain` creates the case's own
    /// columns only (the shadow run); [`Engine::reset`] and
    /// [`Engine::final_state`] then use that layout.
    fn load_as(&mut self, case: &TestCase, layout: Layout) -> Result<(), EngineError>;
    /// Restores the state created by the last [`Engine::load`].
    fn reset(&mut self) -> Result<(), EngineError>;
    /// Opens a session at `isolation`; it reports lock waits through `signal`.
    fn open_session(
        &mut self,
        isolation: Isolation,
        signal: Arc<WaitSignal>,
    ) -> Result<Box<dyn Session>, EngineError>;
    /// A session for txfuzz's own statements outside the executor (the
    /// oracles' scratch tables and checks, fault injection), which nothing
    /// else bounds: every round trip has the engine's deadline
    /// ([`Engine::set_deadline`]), so a server that stops answering makes it
    /// fail instead of hanging txfuzz. Embedded engines: a plain session.
    fn open_bounded_session(
        &mut self,
        isolation: Isolation,
    ) -> Result<Box<dyn Session>, EngineError> {
        self.open_session(isolation, WaitSignal::new())
    }
    /// A database of the engine's own for the view oracle's scratch
    /// tables, which are then real tables there rather than TEMPORARY ones
    /// (MariaDB and MySQL: a temporary table can have no trigger, and the
    /// write capture is made of triggers, [`crate::sql::capture_triggers`]).
    /// `None`: temporary tables do. With the name, whether the tables of
    /// `schema` are there already (made for the last schema asked for;
    /// their rows are whatever the last scratch left).
    fn scratch_database(
        &mut self,
        _schema: &Schema,
    ) -> Result<Option<(String, bool)>, EngineError> {
        Ok(None)
    }
    /// Before a run, on the loaded state: replaces each instrumented
    /// statement whose instrumentation would change how the engine runs it
    /// by the statement as written, its reads unobserved
    /// ([`Prepared::unobserved`]). Engines whose plans do not decide what a
    /// statement locks have nothing to do.
    fn keep_plans(
        &mut self,
        _case: &TestCase,
        _prepared: &mut HashMap<StmtRef, Prepared>,
    ) -> Result<(), EngineError> {
        Ok(())
    }
    /// Reads every table of `schema`: rows `[rid, wl, columns...]`, or the
    /// case's columns only after a `Plain` load; sorted.
    fn final_state(&mut self, schema: &Schema) -> Result<DbState, EngineError>;
    /// After a lost connection: waits (at most `wait`) until the engine answers
    /// again and reconnects; before each attempt it asks `give_up` (the
    /// campaign is stopping: a signal, or another worker gave up) and stops
    /// trying at once ([`abandoned`]). Embedded engines have nothing to do.
    fn recover(
        &mut self,
        _wait: std::time::Duration,
        _give_up: &dyn Fn() -> bool,
    ) -> Result<(), EngineError> {
        Ok(())
    }
    /// The last lines of the server's error log, when the server is local and
    /// its log readable (crash evidence); else why there is none.
    fn server_log_tail(&self) -> Result<String, String> {
        Err("an embedded engine has no server log".into())
    }
    /// Bounds every round trip of the engine's own connections (load, reset,
    /// final state, session setup): a server that does not answer within `d`
    /// gives [`EngineError::Hung`]. Embedded engines have nothing to bound.
    fn set_deadline(&mut self, _d: std::time::Duration) {}
    /// The campaign gave up on the server (a worker's recovery did): the
    /// engine's exit makes no clean-up round trip (each would wait out a
    /// deadline on a frozen server); what it leaves, a later run removes
    /// ([`leftover`]). Embedded engines have nothing to forget.
    fn forget_server(&mut self) {}
}

/// Opens the engine named by a `--db` URL.
pub fn open(url: Option<&str>) -> Result<Box<dyn Engine>, EngineError> {
    open_for_job(url, 0)
}

/// The engine of campaign worker `job` (`--jobs`): server engines each make
/// their own private database or schema; an embedded database file given by
/// path is used by job 0, and job `k > 0` uses `PATH-jobK` beside it.
pub fn open_for_job(url: Option<&str>, job: usize) -> Result<Box<dyn Engine>, EngineError> {
    let for_job = |path: Option<std::path::PathBuf>| match path {
        Some(p) if job > 0 => {
            let mut name = p.file_name().unwrap_or_default().to_owned();
            name.push(format!("-job{job}"));
            Some(p.with_file_name(name))
        }
        p => p,
    };
    match url::parse(url)? {
        url::DbUrl::Sqlite { path } => Ok(Box::new(sqlite::SqliteEngine::open(for_job(path))?)),
        url::DbUrl::Turso { path, mvcc } => turso::open(for_job(path), mvcc),
        url::DbUrl::Server { scheme, url, .. } => match scheme.as_str() {
            "mysql" | "mariadb" => mysql::open(&url),
            _ => postgres::open(&url),
        },
    }
}
