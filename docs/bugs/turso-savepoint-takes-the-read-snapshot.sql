-- txfuzz reduced finding: T3#2 (op 10) returned rows its view does not contain [view:result]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- (found by: txfuzz run --db turso: --time 12m --seed 202 --reduce)
-- signature: view/result/violation/turso/serializable/aggregate,delete,ignore,insert,join,rollback,savepoint,select,update
-- reduced from 9 to 2 data statement(s), 4 to 2 transaction(s) in 125 run(s)
-- isolation: serializable
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t0;
CREATE TABLE t0 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c2 BOOLEAN);

-- statements, one session per T<n>
/* T3 */ BEGIN;
/* T3 */ SAVEPOINT sp1;
/* T2 */ INSERT OR IGNORE INTO t0 (c2) VALUES (FALSE);
/* T3 */ SELECT a0.c2 FROM t0 AS a0;
/* T3 */ COMMIT;
