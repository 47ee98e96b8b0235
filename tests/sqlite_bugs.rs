//! Engine bugs txfuzz found in SQLite (docs/bugs.md), each reproduced with
//! `rusqlite` (SQLite 3.50.2, bundled) alone. Each test asserts the documented
//! behaviour and is marked `#[should_panic]` while the bug is live: when an
//! upgrade fixes it, the test fails ("test did not panic"), and the mark, the
//! known issue (known-issues.toml) and the docs/bugs.md entry go.
//!
//! SQLite "Foreign Key Support" 4.2: "COMMIT will fail as long as foreign key
//! constraints remain in violation"; `PRAGMA defer_foreign_keys` "is
//! automatically switched off at each COMMIT or ROLLBACK" and says nothing
//! of what switching it off by hand does to violations already pending.
//! Switching it off clears both of SQLite's pending-violation counters
//! (`sqlite3Pragma`, flag pragmas: `db->nDeferredImmCons = 0;
//! db->nDeferredCons = 0;`), so the transaction commits its orphan.

use rusqlite::Connection;

/// A database with `p(k)` and `c(k, pk REFERENCES p)`, the key declared
/// `key_clause`, foreign keys on, a transaction open.
fn open(key_clause: &str) -> Connection {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch(&format!(
        "PRAGMA foreign_keys = ON;
         CREATE TABLE p (k INT PRIMARY KEY);
         CREATE TABLE c (k INT PRIMARY KEY, pk INT REFERENCES p (k) {key_clause});
         INSERT INTO p VALUES (1);
         BEGIN;"
    ))
    .unwrap();
    c
}

/// Commits; asserts the COMMIT fails and leaves no orphan.
fn commit_must_fail(c: &Connection) {
    let commit = c.execute_batch("COMMIT");
    let orphans: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM c WHERE pk NOT IN (SELECT k FROM p)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(commit.is_err(), "COMMIT succeeded with {orphans} orphan(s)");
}

/// Control: an orphan left by a deferred key fails the COMMIT.
#[test]
fn a_pending_violation_fails_the_commit() {
    let c = open("DEFERRABLE INITIALLY DEFERRED");
    c.execute_batch("INSERT INTO c VALUES (1, 99)").unwrap();
    commit_must_fail(&c);
}

/// Control: with `defer_foreign_keys` on, an orphan of an immediate key
/// fails the COMMIT (the pragma switches itself off there).
#[test]
fn a_violation_deferred_by_the_pragma_fails_the_commit() {
    let c = open("");
    c.execute_batch("PRAGMA defer_foreign_keys = ON; INSERT INTO c VALUES (1, 99);")
        .unwrap();
    commit_must_fail(&c);
}

/// The bug: switching `defer_foreign_keys` off before COMMIT forgets the
/// violation it deferred (found by txfuzz's `integrity` oracle through `SET
/// CONSTRAINTS ALL IMMEDIATE`, which txfuzz renders as the pragma's `OFF`).
#[test]
#[should_panic(expected = "COMMIT succeeded with 1 orphan(s)")]
fn switching_the_pragma_off_keeps_the_violations_it_deferred() {
    let c = open("");
    c.execute_batch(
        "PRAGMA defer_foreign_keys = ON; INSERT INTO c VALUES (1, 99); PRAGMA defer_foreign_keys = OFF;",
    )
    .unwrap();
    commit_must_fail(&c);
}

/// The same counter reset also forgets the violation of a key declared
/// `DEFERRABLE INITIALLY DEFERRED`, without the pragma ever switched on
/// (`OFF` is its default value). SQLite 3.40.1 fails this COMMIT.
#[test]
#[should_panic(expected = "COMMIT succeeded with 1 orphan(s)")]
fn switching_the_pragma_off_keeps_a_deferred_key_violation() {
    let c = open("DEFERRABLE INITIALLY DEFERRED");
    c.execute_batch("INSERT INTO c VALUES (1, 99); PRAGMA defer_foreign_keys = OFF;")
        .unwrap();
    commit_must_fail(&c);
}
