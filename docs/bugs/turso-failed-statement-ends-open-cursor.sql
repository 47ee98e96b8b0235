-- turso 0.8.3 (WAL mode; in MVCC mode the cursor keeps stepping): a statement that fails after it wrote a row
-- ends another open cursor of the same connection. The cursor is an API
-- object (turso crate: Statement::query, Rows::next); SQL alone cannot show
-- it. Steps (tests/turso_bugs.rs::a_failed_statement_leaves_an_open_cursor_stepping):
CREATE TABLE t0 (k INT PRIMARY KEY, v INT);
CREATE TABLE t1 (k INT PRIMARY KEY);
INSERT INTO t0 VALUES (1, 10), (2, 20), (3, 30), (4, 40);
BEGIN;
-- cursor: prepare and step twice -> 1, 2
SELECT k FROM t0 ORDER BY k;
-- fails on its second row: UNIQUE constraint failed: t1.k (the first row is backed out)
INSERT INTO t1 VALUES (7), (7);
-- cursor: step on -> expected 3, 4 (SQLite); turso: no row, no error
ROLLBACK;
-- An INSERT that fails on its first row (nothing to back out) leaves the cursor stepping.
