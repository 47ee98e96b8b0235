//! Engine bugs txfuzz found in turso (docs/bugs.md), each reproduced with the
//! `turso` crate alone. Each test asserts the documented behaviour and is
//! marked `#[should_panic]` while the bug is live: when a turso upgrade fixes
//! it, the test fails ("test did not panic"), and the mark, the known issue
//! (known-issues.toml) and the docs/bugs.md entry go.
#![cfg(feature = "turso")]

use turso::{Builder, Connection, Database, Value};

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

async fn exec(c: &Connection, sql: &str) {
    c.execute(sql, ())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn one_value(c: &Connection, sql: &str) -> Value {
    let mut rows = c.query(sql, ()).await.unwrap();
    let row = rows.next().await.unwrap().expect("a row");
    row.get_value(0).unwrap()
}

/// A new database in a temporary directory, with `t(k, v)` = (1, 10).
async fn database(dir: &tempfile::TempDir, mvcc: bool) -> Database {
    let path = dir.path().join("bug.db");
    let db = Builder::new_local(path.to_str().unwrap())
        .build()
        .await
        .unwrap();
    let admin = db.connect().unwrap();
    if mvcc {
        exec(&admin, "PRAGMA journal_mode = 'mvcc'").await;
    }
    exec(&admin, "CREATE TABLE t (k INT PRIMARY KEY, v INT)").await;
    exec(&admin, "INSERT INTO t VALUES (1, 10)").await;
    db
}

/// turso 0.8.3, default (WAL) mode: `SAVEPOINT` right after `BEGIN` starts
/// the read transaction, so a commit made before the transaction's first
/// statement is invisible to it. turso's manual ("Deferred transaction
/// lifecycle") and SQLite: a deferred transaction takes its snapshot at its
/// first read or write statement; SQLite's SAVEPOINT inside a transaction
/// accesses no database. Found by txfuzz (`view:result`, reduced case in
/// docs/bugs.md).
#[test]
#[should_panic(expected = "the read missed the commit made before it")]
fn savepoint_after_begin_does_not_take_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    block(async {
        let db = database(&dir, false).await;
        let (a, b) = (db.connect().unwrap(), db.connect().unwrap());
        exec(&a, "BEGIN").await;
        exec(&a, "SAVEPOINT s").await;
        exec(&b, "UPDATE t SET v = 5 WHERE k = 1").await;
        let v = one_value(&a, "SELECT v FROM t WHERE k = 1").await;
        assert_eq!(
            v,
            Value::Integer(5),
            "the read missed the commit made before it"
        );
    });
}

/// The same schedule without the SAVEPOINT reads 5, as documented: the
/// control for the test above.
#[test]
fn begin_alone_does_not_take_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    block(async {
        let db = database(&dir, false).await;
        let (a, b) = (db.connect().unwrap(), db.connect().unwrap());
        exec(&a, "BEGIN").await;
        exec(&b, "UPDATE t SET v = 5 WHERE k = 1").await;
        let v = one_value(&a, "SELECT v FROM t WHERE k = 1").await;
        assert_eq!(v, Value::Integer(5));
    });
}
