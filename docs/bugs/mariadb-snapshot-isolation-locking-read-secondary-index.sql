-- MariaDB 10.11.19, REPEATABLE READ with innodb_snapshot_isolation=ON: a
-- locking read through a covering secondary index that waited for another
-- transaction's change of a row returns the changed row once that
-- transaction commits; through the primary key the same read fails with
-- 1020 (ER_CHECKREAD), as the variable promises (MDEV-39263's fix).
-- Standalone test: tests/mariadb_bugs.rs
-- (a_snapshot_isolation_locking_read_through_a_secondary_index_fails_after_a_wait;
-- control: ..._through_the_primary_key_fails_after_a_wait).
-- Run the set-up, then the statements in order, one client per session.

-- set-up
CREATE TABLE t (c0 INT NOT NULL PRIMARY KEY, c1 INT NOT NULL, KEY i (c0, c1)) ENGINE=InnoDB;
INSERT INTO t VALUES (1, 10), (2, 20);

/* S3 */ SET SESSION innodb_snapshot_isolation = ON;   -- REPEATABLE READ (the default)
/* S3 */ START TRANSACTION WITH CONSISTENT SNAPSHOT;
/* S1 */ START TRANSACTION;
/* S1 */ UPDATE t SET c1 = 21 WHERE c0 = 2;
/* S3 */ SELECT c0, c1 FROM t LOCK IN SHARE MODE;        -- waits for S1
/* S1 */ COMMIT;                                         -- S3 resumes
-- observed: (1, 10), (2, 21)  -- row 2 at a version committed after S3's read view
-- expected: ERROR 1020 (HY000): Record has changed since last read in table 't'
-- Without KEY i the read fails with 1020 as expected.
