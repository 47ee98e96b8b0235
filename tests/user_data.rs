//! txfuzz never touches data it did not create: an existing SQLite database
//! with the user's tables is refused and left as it was.

use std::process::Command;

#[test]
fn an_existing_sqlite_user_database_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("user.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE precious (x INTEGER); INSERT INTO precious VALUES (42); \
             CREATE VIEW v AS SELECT x FROM precious;",
        )
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
        .args(["run", "--tests", "3", "-q", "--db"])
        .arg(format!("sqlite:{}", db.display()))
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did not create"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");
    let c = rusqlite::Connection::open(&db).unwrap();
    let x: i64 = c
        .query_row("SELECT x FROM precious", [], |r| r.get(0))
        .unwrap();
    assert_eq!(x, 42);
}

#[test]
fn a_new_sqlite_file_is_txfuzz_s_and_can_be_used_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("scratch.db").display());
    for round in 0..2 {
        let o = Command::new(env!("CARGO_BIN_EXE_txfuzz"))
            .args(["run", "--tests", "3", "-q", "--db", &db, "--out"])
            .arg(dir.path().join(format!("out{round}")))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "round {round}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
