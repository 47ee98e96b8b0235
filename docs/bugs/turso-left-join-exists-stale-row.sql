-- turso 0.8.3 (both modes): a self LEFT JOIN whose joined table is read
-- through an index on the join column, filtered by a correlated EXISTS on
-- the joined table's rowid alias, passes the null-extended rows when the
-- select list also names a joined column outside that index; those rows
-- come back with the indexed column NULL and the other column from a stale
-- row. SQLite 3.40 / 3.50: one row. The wrong-result form of
-- tursodatabase/turso#9243 (the same query shape panics in
-- op_row_id_deferred). Found by txfuzz's shadow run (fidelity:result, turso
-- WAL campaign, seed 3 case 3156), reduced by hand.
-- Standalone test: tests/turso_bugs.rs
-- (a_left_join_with_exists_on_the_joined_rowid_drops_the_null_extended_rows;
-- control: a_left_join_with_exists_on_the_joined_rowid_over_the_index_alone_is_right).
CREATE TABLE t0 (c0 INTEGER NOT NULL, c1 BIGINT, c3 DECIMAL(10,2), PRIMARY KEY (c0));
CREATE INDEX i_t0_1 ON t0 (c3);
INSERT INTO t0 VALUES (7, 1, -3.75), (6, 2, 4.5), (10, 3, 1.5), (13, 4, NULL), (16, 5, 17.75);
SELECT a1.c3, a1.c1 FROM t0 AS a0 LEFT JOIN t0 AS a1 ON a0.c3 = a1.c3 AND a0.c0 = 16
WHERE EXISTS (SELECT sq.c0 FROM t0 AS sq WHERE sq.c0 = a1.c0);
-- observed: (NULL, 3), (NULL, 2), (NULL, 5), (17.75, 5)
-- expected: (17.75, 5)   -- a null-extended row has a1.c0 NULL: the EXISTS is false
-- With `SELECT a1.c3` alone (covered by the index) turso returns (17.75) only.
