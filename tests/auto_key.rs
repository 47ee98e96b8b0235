//! Key-generator columns (`Column::auto_key`) on every engine: SQLite's and
//! turso's rowid alias (`INTEGER PRIMARY KEY`), MariaDB's `AUTO_INCREMENT`,
//! PostgreSQL's identity column. The declaration reaches the engine (checked
//! in its catalog), keys given explicitly are stored as given (0 included:
//! MariaDB would otherwise generate one), and two concurrent "next key"
//! inserts (`INSERT ... SELECT COALESCE(MAX(k), 0) + 1`) and a key UPDATE go
//! through every default oracle and the shadow run without a new violation.

use txfuzz::campaign::run_case;
use txfuzz::engine::sqlite::SqliteEngine;
use txfuzz::engine::{Engine, WaitSignal};
use txfuzz::exec::ExecOptions;
use txfuzz::finding::known::KnownIssues;
use txfuzz::model::{Assignment, BinOp, Expr, Isolation, Stmt, TestCase, Update, Value};
use txfuzz::oracle::{CheckStats, OracleKind, Verdict};
use txfuzz::sql::Dialect;
use txfuzz::testkit::constraints::*;
use txfuzz::testkit::*;

mod common;

/// `p.k` generates keys; the initial parents have keys 0 and 1. T1 and T2
/// each insert the next key; T3 moves key 1 to 7 (`first`: whose INSERT
/// runs first).
fn next_keys(isolation: Isolation, first: u32) -> TestCase {
    let order = if first == 1 {
        "1 2 3 1 2 3 1 2 3"
    } else {
        "1 2 3 2 1 3 2 1 3"
    };
    let rekey = Stmt::Update(Update {
        table: "p".into(),
        assignments: vec![Assignment {
            column: "k".into(),
            value: Expr::Lit(Value::Int(7)),
        }],
        where_: Some(Expr::bin(
            BinOp::Eq,
            Expr::col("k"),
            Expr::Lit(Value::Int(1)),
        )),
    });
    let mut case = parent_child_case(
        &[(0, 10), (1, 20)],
        &[(5, 0)],
        vec![
            committed(vec![insert_next_parent(11, 100)]),
            committed(vec![insert_next_parent(12, 200)]),
            committed(vec![rekey]),
        ],
        order,
    );
    case.schema.tables[0].columns[0].auto_key = true;
    case.isolation = isolation;
    case.validate().unwrap();
    case
}

/// Whether the engine declared `p.k` as its key generator, from its catalog.
fn declared(e: &mut dyn Engine, case: &TestCase) -> bool {
    e.load(case).unwrap();
    let mut s = e.open_session(case.isolation, WaitSignal::new()).unwrap();
    let (sql, want) = match e.dialect() {
        Dialect::Sqlite => ("SELECT COUNT(*) FROM p WHERE k <> rowid", Value::Int(0)),
        Dialect::Mysql => (
            "SELECT EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = 'p' AND COLUMN_NAME = 'k'",
            Value::Text("auto_increment".into()),
        ),
        Dialect::Postgres => (
            "SELECT is_identity FROM information_schema.columns WHERE table_schema = \
             current_schema() AND table_name = 'p' AND column_name = 'k'",
            Value::Text("YES".into()),
        ),
    };
    let rows = s.query(sql).unwrap().rows;
    rows.first().and_then(|r| r.first()) == Some(&want)
}

fn check(open: impl Fn() -> Box<dyn Engine>) {
    let mut e = open();
    assert!(declared(e.as_mut(), &next_keys(Isolation::Serializable, 1)));
    let levels = e.profile().isolations.clone();
    for level in levels {
        for first in [1, 2] {
            let mut e = open();
            let case = txfuzz::testkit::in_default_mode(&next_keys(level, first), e.as_ref());
            let mut stats = CheckStats::default();
            let mut oracles = OracleKind::defaults();
            oracles.push(OracleKind::Fidelity);
            let (h, mut f) = run_case(
                e.as_mut(),
                &case,
                &oracles,
                &ExecOptions::default(),
                &mut stats,
            )
            .unwrap();
            KnownIssues::builtin().mark(&mut f, &case, &h, e.info());
            // Key 0 stayed 0 (the child of parent 0 keeps its parent).
            let keys: Vec<&Value> = h.final_state["p"].iter().map(|r| &r[2]).collect();
            assert!(keys.contains(&&Value::Int(0)), "{level}: {h:#?}");
            let new: Vec<_> = f
                .iter()
                .filter(|f| f.verdict == Verdict::Violation && f.known.is_none())
                .collect();
            assert!(new.is_empty(), "{level} {first}: {new:#?}\n{h:#?}");
            // The shadow run (plain layout) ran; it may be undecided when
            // two sessions wait at once (`concurrent-waiters`).
            let shadow = &stats.per_oracle["fidelity"];
            assert_eq!(shadow.checked + shadow.undecided, 1, "{stats:?}");
            assert!(f.iter().all(|f| f.oracle != "fidelity"), "{f:#?}");
        }
    }
}

#[test]
fn sqlite_rowid_alias() {
    check(|| Box::new(SqliteEngine::open(None).unwrap()));
}

#[test]
fn mariadb_auto_increment() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    check(|| common::open(&url));
}

#[test]
fn postgres_identity_column() {
    let Some(url) = common::pg_url() else {
        return;
    };
    check(|| common::open(&url));
}

#[cfg(feature = "turso")]
#[test]
fn turso_rowid_alias_in_both_modes() {
    use txfuzz::engine::turso::TursoEngine;
    for mvcc in [false, true] {
        check(|| Box::new(TursoEngine::open(None, mvcc).unwrap()));
    }
}

/// A case file that declares a key generator where no engine takes one is
/// refused with the reason.
#[test]
fn a_misplaced_key_generator_is_refused() {
    let mut case = next_keys(Isolation::Serializable, 1);
    case.schema.tables[0].columns[0].auto_key = false;
    case.schema.tables[0].columns[1].auto_key = true;
    let err = case.validate().unwrap_err();
    assert!(err.contains("auto_key"), "{err}");
}
