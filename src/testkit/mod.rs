//! Small builders for hand-written cases, used by unit and integration tests
//! (and handy for scripted interleavings). Tables are key/value: `k INT PRIMARY
//! KEY, v INT`.

use crate::model::*;

pub fn kv_table(name: &str) -> Table {
    Table {
        name: name.into(),
        columns: vec![
            Column {
                name: "k".into(),
                ty: ColType::Int,
                not_null: true,
                default: None,
                auto_key: false,
            },
            Column {
                name: "v".into(),
                ty: ColType::Int,
                not_null: false,
                default: None,
                auto_key: false,
            },
        ],
        primary_key: vec!["k".into()],
        uniques: vec![],
        checks: vec![],
        indexes: vec![],
        foreign_keys: vec![],
    }
}

fn int(i: i64) -> Expr {
    Expr::Lit(Value::Int(i))
}

fn key_is(k: i64) -> Option<Expr> {
    Some(Expr::eq(Expr::col("k"), int(k)))
}

/// `SELECT k, v FROM t [WHERE k = key]`
pub fn select(t: &str, key: Option<i64>) -> Stmt {
    Stmt::Select(Select {
        distinct: false,
        items: ["k", "v"]
            .iter()
            .map(|c| SelectItem {
                expr: Expr::col(c),
                alias: None,
            })
            .collect(),
        from: vec![FromItem {
            table: t.into(),
            alias: t.into(),
            join: None,
        }],
        where_: key.and_then(key_is),
        group_by: vec![],
        order_by: vec![],
        limit: None,
        lock: None,
        cursor: None,
    })
}

/// `SELECT k, v FROM t ORDER BY t.k` as cursor `name`, its first step
/// returning up to `rows` rows.
pub fn open_cursor(t: &str, name: &str, rows: u32) -> Stmt {
    let Stmt::Select(mut q) = select(t, None) else {
        unreachable!()
    };
    q.order_by = vec![OrderBy {
        expr: Expr::qcol(t, "k"),
        desc: false,
    }];
    q.cursor = Some(CursorOpen {
        name: name.into(),
        rows,
    });
    Stmt::Select(q)
}

/// Steps cursor `name` by up to `rows` rows.
pub fn fetch(name: &str, rows: u32) -> Stmt {
    Stmt::Fetch(Fetch {
        cursor: name.into(),
        rows,
    })
}

/// `UPDATE t SET v = v + delta WHERE k = key`
pub fn add(t: &str, key: i64, delta: i64) -> Stmt {
    Stmt::Update(Update {
        table: t.into(),
        assignments: vec![Assignment {
            column: "v".into(),
            value: Expr::bin(BinOp::Add, Expr::col("v"), int(delta)),
        }],
        where_: key_is(key),
    })
}

/// `UPDATE t SET v = value WHERE k = key`
pub fn set(t: &str, key: i64, value: i64) -> Stmt {
    Stmt::Update(Update {
        table: t.into(),
        assignments: vec![Assignment {
            column: "v".into(),
            value: int(value),
        }],
        where_: key_is(key),
    })
}

/// `INSERT INTO t (k, v) VALUES (key, value)` with row id `rid`.
pub fn insert(t: &str, rid: i64, key: i64, value: i64) -> Stmt {
    Stmt::Insert(Insert {
        table: t.into(),
        columns: vec!["k".into(), "v".into()],
        rows: vec![vec![int(key), int(value)]],
        rids: vec![rid],
        select: None,
        on_conflict: OnConflict::Error,
    })
}

/// `DELETE FROM t WHERE k = key`
pub fn delete(t: &str, key: i64) -> Stmt {
    Stmt::Delete(Delete {
        table: t.into(),
        where_: key_is(key),
    })
}

fn v_is(v: i64) -> Option<Expr> {
    Some(Expr::eq(Expr::col("v"), int(v)))
}

/// `UPDATE t SET v = value WHERE v = matching` (a scan: no index on `v`)
pub fn set_where_v(t: &str, matching: i64, value: i64) -> Stmt {
    Stmt::Update(Update {
        table: t.into(),
        assignments: vec![Assignment {
            column: "v".into(),
            value: int(value),
        }],
        where_: v_is(matching),
    })
}

/// `DELETE FROM t WHERE v = matching`
pub fn delete_where_v(t: &str, matching: i64) -> Stmt {
    Stmt::Delete(Delete {
        table: t.into(),
        where_: v_is(matching),
    })
}

/// `SELECT k, v FROM t WHERE v = matching FOR UPDATE`
pub fn lock_where_v(t: &str, matching: i64) -> Stmt {
    let Stmt::Select(mut sel) = select(t, None) else {
        unreachable!("select() builds a SELECT")
    };
    sel.where_ = v_is(matching);
    sel.lock = Some(LockMode::ForUpdate);
    Stmt::Select(sel)
}

/// `UPDATE t SET k = new_key WHERE k = key` (moves the row in the primary key)
pub fn rekey(t: &str, key: i64, new_key: i64) -> Stmt {
    Stmt::Update(Update {
        table: t.into(),
        assignments: vec![Assignment {
            column: "k".into(),
            value: int(new_key),
        }],
        where_: key_is(key),
    })
}

/// An engine whose profile is changed by a test (a mutated rule must make
/// an oracle test fail); everything else is the wrapped engine's.
pub struct WithProfile {
    inner: Box<dyn crate::engine::Engine>,
    profile: crate::engine::EngineProfile,
}

impl WithProfile {
    pub fn new(
        inner: Box<dyn crate::engine::Engine>,
        change: impl FnOnce(&mut crate::engine::EngineProfile),
    ) -> WithProfile {
        let mut profile = inner.profile().clone();
        change(&mut profile);
        WithProfile { inner, profile }
    }
}

impl crate::engine::Engine for WithProfile {
    fn info(&self) -> &EngineInfo {
        self.inner.info()
    }
    fn dialect(&self) -> crate::sql::Dialect {
        self.inner.dialect()
    }
    fn target(&self) -> crate::instrument::Target {
        self.inner.target()
    }
    fn scratch_database(
        &mut self,
        schema: &crate::model::Schema,
    ) -> Result<Option<(String, bool)>, crate::engine::EngineError> {
        self.inner.scratch_database(schema)
    }
    fn profile(&self) -> &crate::engine::EngineProfile {
        &self.profile
    }
    fn load_as(
        &mut self,
        case: &TestCase,
        layout: crate::sql::Layout,
    ) -> Result<(), crate::engine::EngineError> {
        self.inner.load_as(case, layout)
    }
    fn reset(&mut self) -> Result<(), crate::engine::EngineError> {
        self.inner.reset()
    }
    fn open_session(
        &mut self,
        isolation: Isolation,
        signal: std::sync::Arc<crate::engine::WaitSignal>,
    ) -> Result<Box<dyn crate::engine::Session>, crate::engine::EngineError> {
        self.inner.open_session(isolation, signal)
    }
    fn open_bounded_session(
        &mut self,
        isolation: Isolation,
    ) -> Result<Box<dyn crate::engine::Session>, crate::engine::EngineError> {
        self.inner.open_bounded_session(isolation)
    }
    fn keep_plans(
        &mut self,
        case: &TestCase,
        prepared: &mut std::collections::HashMap<StmtRef, crate::instrument::Prepared>,
    ) -> Result<(), crate::engine::EngineError> {
        self.inner.keep_plans(case, prepared)
    }
    fn final_state(&mut self, schema: &Schema) -> Result<DbState, crate::engine::EngineError> {
        self.inner.final_state(schema)
    }
}

/// An explicit transaction: BEGIN, `body`, COMMIT.
pub fn committed(body: Vec<Stmt>) -> (bool, Vec<Stmt>) {
    let mut v = vec![Stmt::begin()];
    v.extend(body);
    v.push(Stmt::Commit);
    (false, v)
}

/// An autocommit session.
pub fn autocommit(body: Vec<Stmt>) -> (bool, Vec<Stmt>) {
    (true, body)
}

/// A case over one key/value table `t` with rows `(k, v)` (row ids 1, 2, ...),
/// sessions `txns` (ids 1, 2, ...) and a submit order given as the session id of
/// each step, e.g. `"1 1 2 2 1 2"`.
pub fn kv_case(rows: &[(i64, i64)], txns: Vec<(bool, Vec<Stmt>)>, order: &str) -> TestCase {
    let mut op = 0;
    let txns: Vec<Txn> = txns
        .into_iter()
        .enumerate()
        .map(|(i, (autocommit, stmts))| Txn {
            id: i as u32 + 1,
            autocommit,
            isolation: None,
            settings: Default::default(),
            stmts: stmts
                .into_iter()
                .map(|stmt| {
                    op += 1;
                    CaseStmt { op, stmt }
                })
                .collect(),
        })
        .collect();
    let mut next = std::collections::HashMap::new();
    let submit_order = order
        .split_whitespace()
        .filter_map(|t| t.parse::<u32>().ok())
        .map(|txn| {
            let i = next.entry(txn).or_insert(0u32);
            *i += 1;
            StmtRef { txn, index: *i - 1 }
        })
        .collect();
    TestCase {
        format: CASE_FORMAT,
        seed: 0,
        index: 0,
        isolation: Isolation::Serializable,
        schema: Schema {
            tables: vec![kv_table("t")],
        },
        data: vec![TableData {
            table: "t".into(),
            rows: rows
                .iter()
                .enumerate()
                .map(|(i, &(k, v))| Row {
                    rid: i as i64 + 1,
                    values: vec![Value::Int(k), Value::Int(v)],
                })
                .collect(),
        }],
        txns,
        submit_order,
        checkpoint: false,
    }
}

/// TxCheck's Figure 1 shape over key/value tables `t` (row 1: k=1) and `u`
/// (row 2: k=2): T1 updates `t` and reads `u`; T2 reads `t`, then updates
/// `u`. Each transaction reads what the other overwrites, so the transaction
/// graph has a cycle (T1 -rw-> T2 -rw-> T1) while the statement graph does not.
pub fn txcheck_figure1() -> TestCase {
    let mut case = kv_case(
        &[(1, 10)],
        vec![
            committed(vec![set("t", 1, 162), select("u", None)]),
            committed(vec![select("t", None), set("u", 2, 63)]),
        ],
        "1 1 2 2 1 2 1 2",
    );
    case.schema.tables.push(kv_table("u"));
    case.data.push(TableData {
        table: "u".into(),
        rows: vec![Row {
            rid: 2,
            values: vec![Value::Int(2), Value::Int(20)],
        }],
    });
    case
}

/// The `v` of key `k` in table `t` of a final state (`[rid, wl, k, v]` rows).
pub fn value_of(state: &DbState, t: &str, k: i64) -> Option<Value> {
    state
        .get(t)?
        .iter()
        .find(|r| r.get(2) == Some(&Value::Int(k)))
        .and_then(|r| r.get(3).cloned())
}

/// A history with nothing recorded (a hand-made finding's).
pub fn empty_history(isolation: Isolation) -> History {
    History {
        isolation,
        events: vec![],
        outcomes: vec![],
        txns: vec![],
        final_state: Default::default(),
        final_state_error: None,
    }
}

/// A finding record of `oracle:kind` over `case`, recorded on `engine`
/// (`name`, `version`) at `url`, with an empty history.
pub fn finding_record(
    oracle: crate::oracle::OracleKind,
    kind: &str,
    engine: (&str, &str),
    url: &str,
    case: TestCase,
) -> crate::finding::FindingRecord {
    let finding = crate::oracle::Finding::new(
        oracle,
        kind,
        format!("a hand-made {kind} finding"),
        serde_json::json!({}),
    );
    let info = EngineInfo {
        name: engine.0.into(),
        version: engine.1.into(),
        url: url.into(),
        settings: Default::default(),
    };
    let history = empty_history(case.isolation);
    crate::finding::FindingRecord::new(finding, info, case, history)
}

pub mod constraints;
pub mod hermitage;
pub mod mariadb_bugs;

/// `case` with each BEGIN whose mode `engine` does not list in its first
/// start mode (the mode the generator draws most: a plain BEGIN becomes
/// BEGIN CONCURRENT on turso MVCC, BEGIN CONCURRENT a plain BEGIN on
/// SQLite), for hand-written cases meant to run on several engines as
/// generated ones would.
pub fn in_default_mode(case: &TestCase, engine: &dyn crate::engine::Engine) -> TestCase {
    let modes = engine.profile().features.start_modes;
    let mut out = case.clone();
    for b in out.begins_mut().filter(|b| !modes.contains(&b.mode)) {
        b.mode = modes[0];
    }
    out
}
