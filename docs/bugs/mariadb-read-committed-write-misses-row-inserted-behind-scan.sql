-- MariaDB 10.11.19, READ COMMITTED (also READ UNCOMMITTED): an UPDATE or DELETE
-- that waited for a row lock misses a row another transaction inserted behind
-- its scan position and committed while it waited.
-- Standalone test: tests/mariadb_bugs.rs (a_delete_that_waited_..., an_update_that_waited_...).
-- Run the set-up, then the statements in order, one client per session.

-- set-up
CREATE TABLE t (k INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO t VALUES (2, 0);

-- both sessions
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;

/* S1 */ START TRANSACTION;
/* S1 */ UPDATE t SET v = 1 WHERE k = 2;
/* S2 */ DELETE FROM t;                 -- waits for S1's lock on k = 2
/* S1 */ INSERT INTO t VALUES (1, 0);   -- k = 1: behind S2's scan position
/* S1 */ COMMIT;                        -- S2 resumes: 1 row affected
/* any */ SELECT * FROM t;
-- observed: (1, 0)  -- a committed row survived DELETE FROM t
-- expected: empty   -- S2 waited for S1, so it follows S1 and deletes both rows
-- With UPDATE t SET v = 9 instead of the DELETE: (1, 0), (2, 9) -- a lost update.
-- With key 3 instead of 1 (ahead of the scan) both statements act on every row.
