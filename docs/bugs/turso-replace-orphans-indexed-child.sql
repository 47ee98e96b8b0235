-- turso 0.8.3 (default mode), not transactional: a REPLACE whose
-- conflict deletes remove a parent row of an immediate foreign key commits
-- the orphan when the child column has an index; SQLite refuses it.
-- Standalone test: tests/turso_bugs.rs
-- (a_replace_that_orphans_an_indexed_child_is_refused; control without the
-- index: a_replace_that_orphans_an_unindexed_child_is_refused).

PRAGMA foreign_keys = ON;
CREATE TABLE t0 (c0 BIGINT NOT NULL PRIMARY KEY, c1 DECIMAL(10,2) UNIQUE);
INSERT INTO t0 VALUES (1, 6.25), (9, NULL);
CREATE TABLE t1 (c0 INTEGER NOT NULL PRIMARY KEY, c1 BIGINT REFERENCES t0 (c0));
CREATE INDEX i_t1_0 ON t1 (c1);
INSERT INTO t1 VALUES (14, 9), (-1, 9), (19, 1);
REPLACE INTO t0 (c0, c1) VALUES (9, 6.25);  -- deletes parents 9 and 1, inserts 9
SELECT * FROM t1 WHERE c1 NOT IN (SELECT c0 FROM t0);
-- observed: (19, 1)  -- the REPLACE succeeded and orphaned child 19
-- expected: Error: FOREIGN KEY constraint failed (SQLite 3.40, 3.50), nothing changed
-- Without the index turso refuses the REPLACE too.
