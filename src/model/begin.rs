//! How a transaction starts: the options of its BEGIN, one value that renders
//! itself per dialect (`sql::render`), that the engine's profile reads to say
//! where the transaction's snapshot is taken, which locks its start takes and
//! what it may do (`EngineProfile::txn_rule`), and that the generator draws
//! from the profile's `Features::start_modes`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The start mode a BEGIN names.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StartMode {
    /// `BEGIN` / `START TRANSACTION` with no mode: the engine's default.
    #[default]
    Default,
    /// SQLite, turso: `BEGIN DEFERRED` (the default, spelled out): no lock and
    /// no snapshot until the first statement that reads or writes.
    Deferred,
    /// SQLite, turso: `BEGIN IMMEDIATE`: the write lock at BEGIN.
    Immediate,
    /// SQLite, turso: `BEGIN EXCLUSIVE` (in WAL mode the same as IMMEDIATE).
    Exclusive,
    /// turso MVCC: `BEGIN CONCURRENT`: an MVCC transaction, snapshot at BEGIN,
    /// write-write conflicts abort.
    Concurrent,
    /// MariaDB/MySQL: `START TRANSACTION WITH CONSISTENT SNAPSHOT`: the read
    /// view is created at the start (at REPEATABLE READ; ignored at the other
    /// levels).
    ConsistentSnapshot,
    /// SQLite, turso: `SAVEPOINT txn` outside a transaction: starts one as
    /// `BEGIN DEFERRED` would; `RELEASE txn` ([`OUTERMOST_SAVEPOINT`])
    /// commits it, `ROLLBACK` rolls it back.
    Savepoint,
}

/// The name of the savepoint that starts a transaction in the `Savepoint`
/// start mode; a `RELEASE` of it ends the transaction like COMMIT.
pub const OUTERMOST_SAVEPOINT: &str = "txn";

impl StartMode {
    pub const ALL: [StartMode; 7] = [
        StartMode::Default,
        StartMode::Deferred,
        StartMode::Immediate,
        StartMode::Exclusive,
        StartMode::Concurrent,
        StartMode::ConsistentSnapshot,
        StartMode::Savepoint,
    ];
    pub fn name(self) -> &'static str {
        match self {
            StartMode::Default => "default",
            StartMode::Deferred => "deferred",
            StartMode::Immediate => "immediate",
            StartMode::Exclusive => "exclusive",
            StartMode::Concurrent => "concurrent",
            StartMode::ConsistentSnapshot => "consistent-snapshot",
            StartMode::Savepoint => "savepoint",
        }
    }
}

impl fmt::Display for StartMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The options of a transaction's BEGIN. The default is a plain `BEGIN`
/// (and is what case files of format 1 hold).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Begin {
    #[serde(default, skip_serializing_if = "is_default_mode")]
    pub mode: StartMode,
    /// `READ ONLY` (MariaDB, PostgreSQL): writes to tables fail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// PostgreSQL `DEFERRABLE` (with SERIALIZABLE READ ONLY: the transaction
    /// waits at its first statement for a snapshot that cannot take part in
    /// a serialization failure).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferrable: bool,
}

fn is_default_mode(m: &StartMode) -> bool {
    *m == StartMode::Default
}

impl Begin {
    pub fn with_mode(mode: StartMode) -> Self {
        Begin {
            mode,
            ..Begin::default()
        }
    }
    /// A short label for statistics and signatures (`immediate`,
    /// `default+read-only`).
    pub fn label(&self) -> String {
        let mut s = self.mode.name().to_string();
        if self.read_only {
            s.push_str("+read-only");
        }
        if self.deferrable {
            s.push_str("+deferrable");
        }
        s
    }
}
