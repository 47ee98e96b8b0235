-- turso 0.8.3 (both modes): LEFT JOIN + correlated EXISTS on the joined
-- table's rowid alias panics: "index cursor should have a record"
-- (op_row_id_deferred). SQLite 3.50: no row. tursodatabase/turso#9243.
-- Found by txfuzz (crash:internal-error, turso WAL campaign, seed 11 case
-- 6750), reduced by `txfuzz reduce` to one SELECT; instrumentation columns
-- removed (the plain query panics the same way).
CREATE TABLE t0 (c0 INTEGER NOT NULL, c1 BOOLEAN, c2 BOOLEAN, PRIMARY KEY (c0));
INSERT INTO t0 VALUES (13, TRUE, FALSE), (11, NULL, TRUE);
SELECT a1.c1 FROM t0 AS a0 LEFT JOIN t0 AS a1 ON a0.c1 = a1.c2 AND a0.c1 = FALSE
WHERE EXISTS (SELECT sq.c0 FROM t0 AS sq WHERE sq.c0 = a1.c0 AND sq.c0 = 13);
