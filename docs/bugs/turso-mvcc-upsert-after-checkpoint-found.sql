-- txfuzz finding: T1#3 (op 4) must fail (another open transaction wrote a row it writes) but succeeded [view:missed-abort]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- (found by: txfuzz run --db turso-mvcc: --time 20m --seed 101 --reduce, case 22595; the reduction did not reproduce it on a fresh database: it needs a checkpointed row, see turso-mvcc-upsert-after-checkpoint.sql)
-- seed 101 case 22595
-- isolation: repeatable-read
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t0;
CREATE TABLE t0 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 DECIMAL(10,2) NOT NULL, c1 BOOLEAN, c2 BOOLEAN, PRIMARY KEY (c0));
INSERT INTO t0 (rid, wl, c0, c1, c2) VALUES (1, '0', 6, FALSE, TRUE), (2, '0', 16.5, TRUE, TRUE), (3, '0', 3, TRUE, TRUE), (4, '0', 4, FALSE, FALSE), (5, '0', 2.75, FALSE, FALSE), (6, '0', 19.25, FALSE, NULL), (7, '0', 13.25, TRUE, FALSE), (8, '0', -2.75, TRUE, FALSE);

-- statements, one session per T<n>
/* T2 */ BEGIN;
/* T1 */ BEGIN;
/* T3 */ BEGIN;
/* T1 */ SELECT a0.c0, a0.c1, a0.c2 FROM t0 AS a0;
/* T4 */ BEGIN;
/* T2 */ SAVEPOINT sp1;
/* T3 */ UPDATE t0 SET c1 = (NOT c1) WHERE (c0 = 19.25);
/* T3 */ SELECT a0.c2, COUNT(a0.c1) FROM t0 AS a0 WHERE (a0.c0 = -2.75) GROUP BY a0.c2 ORDER BY a0.c2;
/* T2 */ INSERT INTO t0 (c0) VALUES (11);
/* T2 */ DELETE FROM t0 WHERE (c0 BETWEEN 3 AND 6);
/* T2 */ DELETE FROM t0 WHERE (c0 IN (4, 11, 2.75));
/* T4 */ SELECT COUNT(*), COUNT(*), COUNT(a0.c2) FROM t0 AS a0 WHERE (a0.c0 > 7.75);
/* T5 */ INSERT INTO t0 (c0, c1, c2) VALUES (10, FALSE, TRUE), (4, FALSE, TRUE), (1.25, FALSE, TRUE);
--   T5 op 31 failed: turso::Constraint UNIQUE constraint failed: t0.c0
/* T1 */ SELECT DISTINCT a0.c1, a0.c2 FROM t0 AS a0 WHERE (a0.c1 IN (TRUE, TRUE));
/* T3 */ SELECT a1.c0, COUNT(a1.c2), COUNT(a1.c2), COUNT(*) FROM t0 AS a0 INNER JOIN t0 AS a1 ON (a0.c2 = a1.c1) GROUP BY a1.c0 ORDER BY a1.c0;
/* T2 */ UPDATE t0 SET c1 = FALSE;
--   T2 op 12 failed: turso::Error Write-write conflict
/* T2 */ ROLLBACK; -- aborted by the error above
/* T4 */ SELECT a0.c0, a0.c1, a0.c2 FROM t0 AS a0 WHERE (a0.c2 = FALSE);
/* T1 */ INSERT INTO t0 (c0, c1, c2) VALUES (19.25, FALSE, TRUE), (4, FALSE, TRUE), (19.25, TRUE, TRUE) ON CONFLICT (c0) DO UPDATE SET c2 = excluded.c2;
/* T4 */ SELECT a0.c0, a0.c1, a0.c2 FROM t0 AS a0 WHERE (a0.c0 >= 16);
/* T3 */ SELECT SUM(a0.c0), COUNT(a0.c2) FROM t0 AS a0;
/* T4 */ UPDATE t0 SET c1 = TRUE, c2 = FALSE WHERE (c0 = 19.25);
--   T4 op 27 failed: turso::Error Write-write conflict
/* T4 */ ROLLBACK; -- aborted by the error above
/* T3 */ SAVEPOINT sp1;
/* T1 */ UPDATE t0 SET c1 = FALSE WHERE ((c0 = 19.25) OR (c0 = 16.5));
/* T1 */ ROLLBACK;
/* T3 */ COMMIT;
/* T5 */ DELETE FROM t0 WHERE (c2 = FALSE);
