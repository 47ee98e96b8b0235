//! A test case: schema, initial rows, transactions, submit order and isolation level.

use super::begin::{Begin, StartMode, OUTERMOST_SAVEPOINT};
use super::schema::{Schema, TableData};
use super::stmt::{Stmt, StmtKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    pub const ALL: [Isolation; 4] = [
        Isolation::ReadUncommitted,
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "read-uncommitted",
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }
    /// The SQL spelling (`READ COMMITTED`, ...).
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "READ UNCOMMITTED",
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::Serializable => "SERIALIZABLE",
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        Isolation::ALL
            .into_iter()
            .find(|i| i.name() == norm)
            .or(match norm.as_str() {
                "ru" => Some(Isolation::ReadUncommitted),
                "rc" => Some(Isolation::ReadCommitted),
                "rr" => Some(Isolation::RepeatableRead),
                "ser" | "sr" => Some(Isolation::Serializable),
                _ => None,
            })
            .ok_or_else(|| {
                format!(
                    "unknown isolation level '{s}' (expected read-uncommitted, read-committed, repeatable-read or serializable)"
                )
            })
    }
}

/// A set of isolation levels (Copy, for verdict claims); serialised as the
/// list of its levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LevelSet(u8);

impl LevelSet {
    pub fn of(levels: impl IntoIterator<Item = Isolation>) -> LevelSet {
        let mut s = LevelSet(0);
        for l in levels {
            s.0 |= 1 << l as u8;
        }
        s
    }
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
    pub fn contains(&self, l: Isolation) -> bool {
        self.0 & (1 << l as u8) != 0
    }
    /// Its levels, weakest first.
    pub fn levels(&self) -> Vec<Isolation> {
        Isolation::ALL
            .into_iter()
            .filter(|l| self.contains(*l))
            .collect()
    }
}

impl Serialize for LevelSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.levels().serialize(s)
    }
}

impl<'de> Deserialize<'de> for LevelSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Isolation>::deserialize(d).map(LevelSet::of)
    }
}

/// A set of transaction ids below 64 (Copy, for verdict claims); serialised
/// as the list of its ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TxnSet(u64);

impl TxnSet {
    /// The ids of `txns` (ids of 64 and above are left out).
    pub fn of(txns: impl IntoIterator<Item = u32>) -> TxnSet {
        let mut s = TxnSet(0);
        for t in txns.into_iter().filter(|t| *t < 64) {
            s.0 |= 1 << t;
        }
        s
    }
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
    /// Its ids, ascending.
    pub fn ids(&self) -> Vec<u32> {
        (0..64).filter(|t| self.0 & (1 << t) != 0).collect()
    }
}

impl Serialize for TxnSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.ids().serialize(s)
    }
}

impl<'de> Deserialize<'de> for TxnSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<u32>::deserialize(d).map(TxnSet::of)
    }
}

/// One entry of `--isolation`: a level, or `mixed` (each transaction of the
/// case draws its own level).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelChoice {
    Level(Isolation),
    Mixed,
}

impl FromStr for LevelChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("mixed") {
            return Ok(LevelChoice::Mixed);
        }
        s.parse()
            .map(LevelChoice::Level)
            .map_err(|e: String| e.replace(" or serializable)", ", serializable or mixed)"))
    }
}

/// A statement of a case with its operation id. Operation ids are unique within
/// a case, start at 1, and are what write lists (`wl`) record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseStmt {
    pub op: u32,
    pub stmt: Stmt,
}

/// One session's work. An explicit transaction starts with BEGIN and ends with
/// COMMIT or ROLLBACK; an autocommit session runs each statement as its own
/// transaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Txn {
    /// Session/transaction number, 1-based (`T1`, `T2`, ...).
    pub id: u32,
    #[serde(default)]
    pub autocommit: bool,
    /// The session's isolation level when it differs from the case's
    /// (`--isolation mixed`); `None`: the case's level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// The session's own values of engine settings (`--setting`), set when
    /// it opens (`SET SESSION name = value`); empty: the server's.
    #[serde(
        default,
        skip_serializing_if = "Settings::is_empty",
        deserialize_with = "super::ident::de_settings"
    )]
    pub settings: Settings,
    pub stmts: Vec<CaseStmt>,
}

/// Engine settings by name (`innodb_snapshot_isolation` → `ON`).
pub type Settings = std::collections::BTreeMap<String, String>;

static NO_SETTINGS: Settings = Settings::new();

/// The settings a session runs with: `own`, the values it sets itself, over
/// `server`, the server's (`EngineInfo::settings`, what a session that sets
/// nothing has by default). A name it sets replaces the server's whatever
/// its case, under the server's spelling. The one place where a server's
/// default counts as a session's own: session profiles
/// (`EngineProfile::for_session`), verdicts, known-issue traits and
/// generation all ask here ([`TestCase::session_settings`],
/// [`setting_value`]).
pub fn effective_settings(own: &Settings, server: &Settings) -> Settings {
    let mut out = server.clone();
    for (name, value) in own {
        let key = server
            .keys()
            .find(|n| n.eq_ignore_ascii_case(name))
            .unwrap_or(name);
        out.insert(key.clone(), value.clone());
    }
    out
}

/// The value of setting `name` (any case) a session that sets `own` runs
/// with on a server with `server` ([`effective_settings`]).
pub fn setting_value(own: &Settings, server: &Settings, name: &str) -> Option<String> {
    effective_settings(own, server)
        .into_iter()
        .find_map(|(n, v)| n.eq_ignore_ascii_case(name).then_some(v))
}

/// Whether a boolean setting's value is on, as `SHOW VARIABLES` (`ON`) or
/// `SELECT @@` (`1`) print it.
pub fn setting_is_on(value: &str) -> bool {
    value.eq_ignore_ascii_case("ON") || value == "1"
}

impl Txn {
    pub fn label(&self) -> String {
        format!("T{}", self.id)
    }
    /// The options of its BEGIN (an autocommit session: the default ones).
    pub fn begin(&self) -> Begin {
        match self.stmts.first().map(|s| &s.stmt) {
            Some(Stmt::Begin(b)) if !self.autocommit => *b,
            _ => Begin::default(),
        }
    }
}

/// A reference to statement `index` of transaction `txn` (1-based id, 0-based index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StmtRef {
    pub txn: u32,
    pub index: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    /// Format version of the case file.
    pub format: u32,
    /// Campaign seed and case index that generated this case (0 for hand-written cases).
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub index: u64,
    pub isolation: Isolation,
    pub schema: Schema,
    pub data: Vec<TableData>,
    pub txns: Vec<Txn>,
    /// The order in which the executor submits statements.
    pub submit_order: Vec<StmtRef>,
    /// After the set-up, the engine moves the loaded rows from its log into
    /// the database file (SQLite and turso: `PRAGMA
    /// wal_checkpoint(TRUNCATE)`; turso MVCC: its logical log): a state an
    /// engine reaches on its own after enough writes, and where some bugs
    /// live (docs/bugs.md: the turso MVCC upsert after a checkpoint). The
    /// servers have no such step: ignored there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint: bool,
}

/// Format 2: BEGIN carries its options ([`Begin`]) and a transaction may
/// name its own level. Format 1 files still load: their plain BEGIN means the
/// start mode txfuzz used then, the first of the engine's
/// `Features::start_modes` ([`TestCase::upgrade`]).
pub const CASE_FORMAT: u32 = 2;

impl TestCase {
    pub fn txn(&self, id: u32) -> Option<&Txn> {
        self.txns.iter().find(|t| t.id == id)
    }
    pub fn stmt(&self, r: StmtRef) -> Option<&CaseStmt> {
        self.txn(r.txn)?.stmts.get(r.index as usize)
    }
    pub fn stmt_mut(&mut self, r: StmtRef) -> Option<&mut CaseStmt> {
        self.txns
            .iter_mut()
            .find(|t| t.id == r.txn)?
            .stmts
            .get_mut(r.index as usize)
    }
    /// The isolation level transaction `id` runs at.
    pub fn level_of(&self, id: u32) -> Isolation {
        self.txn(id)
            .and_then(|t| t.isolation)
            .unwrap_or(self.isolation)
    }
    /// Every level some transaction runs at, the case's first.
    pub fn levels(&self) -> Vec<Isolation> {
        let mut out = vec![self.isolation];
        for t in &self.txns {
            if let Some(l) = t.isolation.filter(|l| !out.contains(l)) {
                out.push(l);
            }
        }
        out
    }
    /// The one level the transactions of `refs` run at (the case's when
    /// `refs` is empty); `None` when they run at several.
    pub fn level_of_refs(&self, refs: &[StmtRef]) -> Option<Isolation> {
        let mut levels = refs.iter().map(|r| self.level_of(r.txn));
        match levels.next() {
            None => Some(self.isolation),
            Some(first) => levels.all(|l| l == first).then_some(first),
        }
    }
    /// Whether its transactions run at more than one level.
    pub fn mixed_levels(&self) -> bool {
        self.levels().len() > 1
    }
    /// The settings transaction `id`'s session sets (empty: the server's).
    pub fn settings_of(&self, id: u32) -> &Settings {
        self.txn(id).map_or(&NO_SETTINGS, |t| &t.settings)
    }
    /// The settings transaction `id`'s session runs with: its own over
    /// `server`, the server's (the recorded `EngineInfo::settings`).
    pub fn session_settings(&self, id: u32, server: &Settings) -> Settings {
        effective_settings(self.settings_of(id), server)
    }
    /// The value of setting `name` transaction `id`'s session runs with: its
    /// own if it sets one, else the server's (`server`).
    pub fn setting_of(&self, id: u32, name: &str, server: &Settings) -> Option<String> {
        setting_value(self.settings_of(id), server, name)
    }
    /// The one settings map the sessions of `refs` run with
    /// ([`Self::session_settings`]; the server's when `refs` is empty);
    /// `None` when they differ.
    pub fn session_settings_of_refs(
        &self,
        refs: &[StmtRef],
        server: &Settings,
    ) -> Option<Settings> {
        let mut it = refs.iter().map(|r| self.session_settings(r.txn, server));
        let first = it.next().unwrap_or_else(|| server.clone());
        it.all(|s| s == first).then_some(first)
    }
    /// Some session sets settings of its own.
    pub fn has_session_settings(&self) -> bool {
        self.txns.iter().any(|t| !t.settings.is_empty())
    }
    /// Brings a case of an older format to this one: a format-1 BEGIN meant
    /// the engine's first start mode (turso MVCC rewrote it to BEGIN
    /// CONCURRENT), which is now written out.
    pub fn upgrade(&mut self, first_start_mode: StartMode) {
        if self.format >= 2 {
            return;
        }
        for b in self.begins_mut().filter(|b| b.mode == StartMode::Default) {
            b.mode = first_start_mode;
        }
        self.format = CASE_FORMAT;
    }
    /// The options of every BEGIN of the case.
    pub fn begins_mut(&mut self) -> impl Iterator<Item = &mut Begin> {
        self.txns
            .iter_mut()
            .flat_map(|t| &mut t.stmts)
            .filter_map(|s| match &mut s.stmt {
                Stmt::Begin(b) => Some(b),
                _ => None,
            })
    }
    pub fn stmt_count(&self) -> usize {
        self.txns.iter().map(|t| t.stmts.len()).sum()
    }
    /// Whether a transaction changes when foreign keys are checked (`SET
    /// CONSTRAINTS`): then any foreign key of the case may be checked at
    /// COMMIT (SQLite's form defers even keys not declared DEFERRABLE).
    pub fn sets_constraints(&self) -> bool {
        self.txns
            .iter()
            .flat_map(|t| &t.stmts)
            .any(|s| matches!(s.stmt, Stmt::SetConstraints(_)))
    }
    /// The tables on either side of a foreign key some transaction may check
    /// at COMMIT: replays that run statements on their own check it after
    /// each statement instead, which matters where a statement writes one.
    pub fn deferred_key_tables(&self) -> std::collections::BTreeSet<String> {
        if !self.sets_constraints() {
            return self.schema.deferred_key_tables();
        }
        let mut out = std::collections::BTreeSet::new();
        for t in &self.schema.tables {
            for fk in &t.foreign_keys {
                out.insert(t.name.clone());
                out.insert(fk.ref_table.clone());
            }
        }
        out
    }
    /// The schema as statement-by-statement replays may enforce it: every
    /// foreign key a transaction may defer is marked INITIALLY DEFERRED
    /// (all of them when the case sets constraints).
    pub fn replay_schema(&self) -> crate::model::Schema {
        let mut schema = self.schema.clone();
        if self.sets_constraints() {
            for fk in schema.tables.iter_mut().flat_map(|t| &mut t.foreign_keys) {
                fk.deferrable = Some(crate::model::Deferral::InitiallyDeferred);
            }
        }
        schema
    }
    /// Every statement reference in transaction order.
    pub fn all_refs(&self) -> impl Iterator<Item = StmtRef> + '_ {
        self.txns.iter().flat_map(|t| {
            (0..t.stmts.len() as u32).map(move |i| StmtRef {
                txn: t.id,
                index: i,
            })
        })
    }

    /// Structural validation of a case (from a file or a reducer): ids, submit
    /// order, transaction framing. Returns a human-readable reason.
    pub fn validate(&self) -> Result<(), String> {
        let mut ops = std::collections::HashSet::new();
        let mut ids = std::collections::HashSet::new();
        for t in &self.txns {
            if !ids.insert(t.id) {
                return Err(format!("duplicate transaction id {}", t.id));
            }
            if t.stmts.is_empty() {
                return Err(format!("transaction T{} has no statements", t.id));
            }
            self.validate_stmts(t, &mut ops)?;
            validate_framing(t)?;
            validate_savepoints(t)?;
            super::cursor_rules::validate(
                &self.schema,
                t.id,
                t.autocommit,
                t.stmts.iter().map(|s| (s.op, &s.stmt)),
            )?;
        }
        self.validate_schema()?;
        self.validate_data()?;
        self.validate_submit_order()
    }

    /// Statements of `t`: operation ids (unique and nonzero, `ops` holds those
    /// seen so far), INSERT row ids, and tables the schema defines.
    fn validate_stmts(
        &self,
        t: &Txn,
        ops: &mut std::collections::HashSet<u32>,
    ) -> Result<(), String> {
        for s in &t.stmts {
            if !ops.insert(s.op) || s.op == 0 {
                return Err(format!("operation id {} is zero or used twice", s.op));
            }
            if let Stmt::Insert(ins) = &s.stmt {
                if ins.rids.len() != ins.proposed_rows() {
                    return Err(format!(
                        "T{} op {}: INSERT of {} row(s) with {} row id(s)",
                        t.id,
                        s.op,
                        ins.proposed_rows(),
                        ins.rids.len()
                    ));
                }
                if let Some(q) = &ins.select {
                    if !ins.rows.is_empty() || !q.at_most_one_row() {
                        return Err(format!(
                            "T{} op {}: INSERT ... SELECT must have no VALUES rows and a query \
                             that returns at most one row (an aggregate without GROUP BY, or LIMIT 1)",
                            t.id, s.op
                        ));
                    }
                }
            }
            let tables = crate::model::walk::tables(&s.stmt);
            for table in &tables {
                if self.schema.table(table).is_none() {
                    return Err(format!(
                        "T{} op {} uses table {table}, which the schema does not define",
                        t.id, s.op
                    ));
                }
            }
            self.validate_columns(t, s, &tables)?;
        }
        Ok(())
    }

    /// Every column a statement names is a column of one of the tables it
    /// uses (or an output name of its select list); an INSERT's columns are
    /// its table's. The engine would reject the statement, and a replay would
    /// report that as "not reproduced" instead of the case being wrong.
    fn validate_columns(
        &self,
        t: &Txn,
        s: &CaseStmt,
        tables: &std::collections::BTreeSet<String>,
    ) -> Result<(), String> {
        let defined: std::collections::BTreeSet<&str> = tables
            .iter()
            .filter_map(|name| self.schema.table(name))
            .flat_map(|table| table.columns.iter().map(|c| c.name.as_str()))
            .collect();
        let aliases = crate::model::walk::aliases(&s.stmt);
        let listed = match &s.stmt {
            Stmt::Insert(ins) => ins.columns.clone(),
            _ => Vec::new(),
        };
        let named = crate::model::walk::columns(&s.stmt);
        let unknown = listed
            .iter()
            .chain(&named)
            .find(|c| !defined.contains(c.as_str()) && !aliases.contains(c.as_str()));
        match unknown {
            Some(c) => Err(format!(
                "T{} op {} uses column {c}, which none of its tables ({}) defines",
                t.id,
                s.op,
                tables.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            None => Ok(()),
        }
    }

    /// Table names are unique; every column a key, index or foreign key
    /// names is one of its table's, and a foreign key references a defined
    /// table's columns (the engine would refuse the schema, and `replay`
    /// would report a setup error instead of the case being wrong).
    fn validate_schema(&self) -> Result<(), String> {
        let tables = &self.schema.tables;
        if let Some(t) = repeated(tables.iter().map(|t| t.name.as_str())) {
            return Err(format!("table {t} is defined twice"));
        }
        for t in tables {
            if let Some(c) = repeated(t.columns.iter().map(|c| c.name.as_str())) {
                return Err(format!("table {}: column {c} is defined twice", t.name));
            }
            let named = t
                .primary_key
                .iter()
                .chain(t.uniques.iter().flatten())
                .chain(t.indexes.iter().flat_map(|i| &i.columns))
                .chain(t.foreign_keys.iter().flat_map(|f| &f.columns));
            for c in named {
                if t.column(c).is_none() {
                    return Err(format!(
                        "table {}: a key or index names column {c}, which it does not define",
                        t.name
                    ));
                }
            }
            for fk in &t.foreign_keys {
                let Some(parent) = self.schema.table(&fk.ref_table) else {
                    return Err(format!("table {}: a foreign key references table {}, which the schema does not define", t.name, fk.ref_table));
                };
                if let Some(c) = fk.ref_columns.iter().find(|c| parent.column(c).is_none()) {
                    return Err(format!(
                        "table {}: a foreign key references column {c}, which {} does not define",
                        t.name, parent.name
                    ));
                }
            }
        }
        Ok(())
    }

    /// One data section per table, for a defined table, with rows of its width.
    fn validate_data(&self) -> Result<(), String> {
        for t in &self.schema.tables {
            if let Some(problem) = t.auto_key_problem() {
                return Err(problem);
            }
            if self.data.iter().filter(|d| d.table == t.name).count() > 1 {
                return Err(format!("table {} has two data sections", t.name));
            }
        }
        for d in &self.data {
            let Some(t) = self.schema.table(&d.table) else {
                return Err(format!("data for unknown table {}", d.table));
            };
            if let Some(r) = d.rows.iter().find(|r| r.values.len() != t.columns.len()) {
                return Err(format!(
                    "row rid={} of {} has {} values, table has {} columns",
                    r.rid,
                    t.name,
                    r.values.len(),
                    t.columns.len()
                ));
            }
        }
        Ok(())
    }

    /// The submit order names every statement exactly once, each
    /// transaction's in order.
    fn validate_submit_order(&self) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for r in &self.submit_order {
            if self.stmt(*r).is_none() {
                return Err(format!(
                    "submit order names missing statement T{}#{}",
                    r.txn, r.index
                ));
            }
            if !seen.insert(*r) {
                return Err(format!("submit order names T{}#{} twice", r.txn, r.index));
            }
        }
        if seen.len() != self.stmt_count() {
            return Err("submit order does not name every statement exactly once".into());
        }
        for t in &self.txns {
            let pos: Vec<u32> = self
                .submit_order
                .iter()
                .filter(|r| r.txn == t.id)
                .map(|r| r.index)
                .collect();
            if pos.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("submit order reorders statements of T{}", t.id));
            }
        }
        Ok(())
    }
}

/// The first name that stands again after an earlier one, in any case
/// (PostgreSQL folds unquoted names to lower case, MySQL compares them so).
fn repeated<'a>(names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .find(|n| !seen.insert(n.to_ascii_lowercase()))
}

/// Transaction framing: an autocommit session holds no transaction control;
/// an explicit transaction is BEGIN ... COMMIT or ROLLBACK with none inside.
fn validate_framing(t: &Txn) -> Result<(), String> {
    let kinds: Vec<StmtKind> = t.stmts.iter().map(|s| s.stmt.kind()).collect();
    if t.autocommit {
        if kinds.iter().any(|k| k.is_control()) {
            return Err(format!(
                "autocommit session T{} contains a transaction-control statement",
                t.id
            ));
        }
        return Ok(());
    }
    let n = kinds.len();
    if kinds[0] != StmtKind::Begin
        || n < 2
        || !matches!(kinds[n - 1], StmtKind::Commit | StmtKind::Rollback)
    {
        return Err(format!(
            "transaction T{} must start with BEGIN and end with COMMIT or ROLLBACK",
            t.id
        ));
    }
    if kinds[1..n - 1]
        .iter()
        .any(|k| matches!(k, StmtKind::Begin | StmtKind::Commit | StmtKind::Rollback))
    {
        return Err(format!(
            "transaction T{} has BEGIN/COMMIT/ROLLBACK inside",
            t.id
        ));
    }
    // `txn` names the savepoint that starts a transaction in the savepoint
    // start mode: its RELEASE commits, and no other savepoint takes it.
    let outermost = t.begin().mode == StartMode::Savepoint;
    for s in &t.stmts {
        let bad = match &s.stmt {
            Stmt::Savepoint(n) => n == OUTERMOST_SAVEPOINT,
            Stmt::Release(n) | Stmt::RollbackTo(n) => n == OUTERMOST_SAVEPOINT && !outermost,
            _ => false,
        };
        if bad {
            return Err(format!(
                "transaction T{}: the savepoint '{OUTERMOST_SAVEPOINT}' is the one a transaction started by SAVEPOINT holds",
                t.id
            ));
        }
    }
    Ok(())
}

/// Every `RELEASE` and `ROLLBACK TO` names a savepoint the transaction
/// holds at that point (declared before it, not released since, nor undone
/// by a rollback to an earlier one): else the engine's "no such savepoint"
/// error would be the case's whole effect. A transaction started by
/// `SAVEPOINT txn` may release `txn` (its commit) but not roll back to it:
/// the oracles do not model a rollback of every write while the
/// transaction goes on.
fn validate_savepoints(t: &Txn) -> Result<(), String> {
    let mut held: Vec<&str> = Vec::new();
    if !t.autocommit && t.begin().mode == StartMode::Savepoint {
        held.push(OUTERMOST_SAVEPOINT);
    }
    for s in &t.stmts {
        let (name, release) = match &s.stmt {
            Stmt::Savepoint(n) => {
                held.push(n);
                continue;
            }
            Stmt::Release(n) => (n.as_str(), true),
            Stmt::RollbackTo(n) => (n.as_str(), false),
            _ => continue,
        };
        let Some(at) = held.iter().rposition(|h| h.eq_ignore_ascii_case(name)) else {
            return Err(format!(
                "T{} op {}: no savepoint {name} is held there (RELEASE and ROLLBACK TO name one \
                 the transaction declared and still holds)",
                t.id, s.op
            ));
        };
        if !release
            && at == 0
            && held[0] == OUTERMOST_SAVEPOINT
            && t.begin().mode == StartMode::Savepoint
        {
            return Err(format!(
                "T{} op {}: ROLLBACK TO the savepoint that started the transaction is not modelled",
                t.id, s.op
            ));
        }
        held.truncate(if release { at } else { at + 1 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{add, committed, kv_case};

    fn savepoint_case(body: Vec<Stmt>, start: StartMode) -> TestCase {
        let order = vec!["1"; body.len() + 2].join(" ");
        let mut case = kv_case(&[(1, 10)], vec![committed(body)], &order);
        case.txns[0].stmts[0].stmt = Stmt::Begin(crate::model::Begin {
            mode: start,
            ..Default::default()
        });
        case
    }

    /// A schema whose keys, indexes or foreign keys name what it does not
    /// define, or that defines a table or column twice, is refused on load.
    #[test]
    fn schemas_name_only_what_they_define() {
        let base = kv_case(&[(1, 10)], vec![committed(vec![add("t", 1, 1)])], "1 1 1");
        assert_eq!(base.validate(), Ok(()));
        type Edit = fn(&mut TestCase);
        let edits: [(&str, Edit); 5] = [
            ("index", |c| {
                c.schema.tables[0].indexes.push(crate::model::Index {
                    name: "i0".into(),
                    columns: vec!["nope".into()],
                    unique: false,
                })
            }),
            ("key", |c| {
                c.schema.tables[0].primary_key = vec!["nope".into()]
            }),
            ("twice", |c| {
                let t = c.schema.tables[0].clone();
                c.schema.tables.push(t)
            }),
            ("twice", |c| {
                let col = c.schema.tables[0].columns[0].clone();
                c.schema.tables[0].columns.push(col)
            }),
            ("references", |c| {
                c.schema.tables[0]
                    .foreign_keys
                    .push(crate::model::ForeignKey {
                        columns: vec!["v".into()],
                        ref_table: "nope".into(),
                        ref_columns: vec!["k".into()],
                        ..Default::default()
                    })
            }),
        ];
        for (needle, edit) in edits {
            let mut case = base.clone();
            edit(&mut case);
            let e = case.validate().unwrap_err();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    /// RELEASE / ROLLBACK TO of a savepoint the transaction does not hold is
    /// refused on load (the engine's "no such savepoint" used to vanish:
    /// `0 violation(s)`); so is ROLLBACK TO the savepoint that started the
    /// transaction (its writes used to be judged live). Held ones pass.
    #[test]
    fn savepoints_are_named_only_while_held() {
        let sp = |n: &str| Stmt::Savepoint(n.into());
        let rel = |n: &str| Stmt::Release(n.into());
        let back = |n: &str| Stmt::RollbackTo(n.into());
        let d = StartMode::Default;
        let refused = [
            savepoint_case(vec![rel("sp9")], d),
            savepoint_case(vec![back("sp9")], d),
            savepoint_case(vec![sp("sp1"), rel("sp1"), back("sp1")], d),
            savepoint_case(vec![sp("sp1"), sp("sp2"), back("sp1"), rel("sp2")], d),
            savepoint_case(
                vec![add("t", 1, 1), back(OUTERMOST_SAVEPOINT)],
                StartMode::Savepoint,
            ),
        ];
        for case in refused {
            let e = case.validate().unwrap_err();
            assert!(e.contains("savepoint"), "{e}");
        }
        let admitted = [
            savepoint_case(vec![sp("sp1"), add("t", 1, 1), back("sp1"), rel("sp1")], d),
            savepoint_case(vec![sp("sp1"), sp("sp1"), rel("sp1"), back("SP1")], d),
            savepoint_case(vec![sp("sp1"), back("sp1")], StartMode::Savepoint),
        ];
        for case in admitted {
            assert_eq!(case.validate(), Ok(()));
        }
    }

    /// A session's own values replace the server's (a name in any case,
    /// under the server's spelling); what it does not set is the server's.
    #[test]
    fn a_session_runs_with_its_own_settings_over_the_servers() {
        let map = |kv: &[(&str, &str)]| -> Settings {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let server = map(&[("innodb_snapshot_isolation", "ON"), ("autocommit", "ON")]);
        assert_eq!(effective_settings(&Settings::new(), &server), server);
        assert_eq!(
            effective_settings(&map(&[("INNODB_SNAPSHOT_ISOLATION", "OFF")]), &server),
            map(&[("innodb_snapshot_isolation", "OFF"), ("autocommit", "ON")])
        );
        assert_eq!(
            effective_settings(&map(&[("x", "1")]), &Settings::new()),
            map(&[("x", "1")])
        );
        let own = map(&[("innodb_snapshot_isolation", "OFF")]);
        assert_eq!(
            setting_value(&Settings::new(), &server, "Innodb_Snapshot_Isolation").as_deref(),
            Some("ON")
        );
        assert_eq!(
            setting_value(&own, &server, "innodb_snapshot_isolation").as_deref(),
            Some("OFF")
        );
        assert_eq!(setting_value(&own, &Settings::new(), "other"), None);
        assert!(setting_is_on("on") && setting_is_on("1") && !setting_is_on("OFF"));
    }
}
