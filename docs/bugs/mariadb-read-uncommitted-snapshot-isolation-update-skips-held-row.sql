-- MariaDB 10.11.19, READ UNCOMMITTED with innodb_snapshot_isolation=ON: an
-- UPDATE judges a row another transaction holds on that transaction's
-- uncommitted version and skips it without waiting; the row's committed
-- version matches, and after the other transaction rolls back the row was
-- never updated.
-- Standalone test: tests/mariadb_bugs.rs
-- (a_read_uncommitted_update_with_snapshot_isolation_waits_for_a_matching_row;
-- control with the variable OFF: ..._without_snapshot_isolation_...).
-- Run the set-up, then the statements in order, one client per session.

-- set-up
CREATE TABLE t (k INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO t VALUES (1, 2);

/* S1 */ SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
/* S2 */ SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;
/* S2 */ SET SESSION innodb_snapshot_isolation = ON;

/* S1 */ START TRANSACTION;
/* S1 */ UPDATE t SET v = 0 WHERE k = 1;     -- S1 holds row 1 (uncommitted v = 0)
/* S2 */ UPDATE t SET v = 7 WHERE v = 2;     -- returns at once: 0 rows affected
/* S1 */ ROLLBACK;
/* any */ SELECT * FROM t;
-- observed: (1, 2)  -- the UPDATE skipped a row whose committed version matched
-- expected: (1, 7)  -- the UPDATE waits for S1's lock (the latest committed
--                      version, v = 2, matches) and updates row 1 after the rollback
-- With innodb_snapshot_isolation = OFF (10.11's default) S2 waits, then updates: (1, 7).
