-- txfuzz finding: T1#1 holds the write lock its BEGIN took, yet failed with a concurrency error [view:spurious-abort]
-- engine: turso 0.8.3, MVCC mode (turso-mvcc:, BEGIN IMMEDIATE beside BEGIN CONCURRENT)
-- reduced: tests/start_modes.rs::turso_mvcc_exclusive_transactions_take_the_write_lock (the same-row schedule)

-- set-up (any session)
PRAGMA journal_mode = 'mvcc';
CREATE TABLE t (k INTEGER PRIMARY KEY, v INT);
INSERT INTO t VALUES (1, 10), (2, 20);

-- statements, one session per T<n>
/* T2 */ BEGIN CONCURRENT;
/* T2 */ UPDATE t SET v = v + 100 WHERE k = 1;
/* T1 */ BEGIN IMMEDIATE;
/* T1 */ UPDATE t SET v = v + 1 WHERE k = 1;
/* T2 */ COMMIT;
/* T1 */ COMMIT;

-- observed: T1's UPDATE fails with "write-write conflict" (its transaction rolled back); T2 commits: v = 110
-- expected (turso "Transactions": IMMEDIATE "Acquires a write lock immediately when BEGIN is executed.
-- Other connections can still read but cannot write until the transaction completes"): T1's UPDATE
-- succeeds; T2's COMMIT, of a row changed by the lock holder, fails
