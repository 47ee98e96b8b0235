-- MariaDB 10.11.19, READ COMMITTED (also READ UNCOMMITTED): a SELECT ... LOCK IN
-- SHARE MODE / FOR UPDATE that waited for a row lock does not return the row once
-- the lock holder has moved its primary key behind the scan position and committed.
-- Found by a txfuzz campaign (view:resumed-missed-moved-row, case 776 of
-- `txfuzz run --isolation read-committed,read-uncommitted,repeatable-read,serializable
-- --shadow 1 --seed 3101`), reduced by hand.
-- Standalone test: tests/mariadb_bugs.rs::a_locking_read_that_waited_returns_a_row_moved_behind_its_scan.
-- Run the set-up, then the statements in order, one client per session.

-- set-up
CREATE TABLE t (k INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO t VALUES (1, 0), (99, 0);

-- both sessions
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;

/* S1 */ START TRANSACTION;
/* S1 */ SELECT k FROM t WHERE k = 99 FOR UPDATE;
/* S2 */ SELECT k FROM t WHERE v = 0 ORDER BY k LOCK IN SHARE MODE;  -- waits for S1's lock on k = 99
/* S1 */ UPDATE t SET k = 37 WHERE k = 99;  -- k = 37: behind S2's scan position
/* S1 */ COMMIT;                            -- S2 resumes
-- observed: S2 returns 1        -- the committed row 37 is missing
-- expected: S2 returns 1, 37    -- every committed state of S2's run holds two rows with v = 0
-- With key 150 instead of 37 (ahead of the scan) S2 returns 1, 150.
