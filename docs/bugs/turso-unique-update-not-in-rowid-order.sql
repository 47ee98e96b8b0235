-- txfuzz reduced finding: instrumentation changed what the engine did: op 8 its error differs without it (2 difference(s)) [fidelity:error]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- (found by: txfuzz run --db turso: --time 12m --seed 202 --reduce)
-- signature: fidelity/error/violation/turso/serializable/update
-- reduced from 8 to 1 data statement(s), 3 to 1 transaction(s) in 58 run(s)
-- isolation: serializable
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t2;
CREATE TABLE t2 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT NOT NULL, c1 INT NOT NULL, PRIMARY KEY (c1), UNIQUE (c0));
INSERT INTO t2 (rid, wl, c0, c1) VALUES (10, '0', -1, 15), (12, '0', 16, 0);

-- statements, one session per T<n>
/* T2 */ BEGIN;
/* T2 */ UPDATE t2 SET c0 = (c1 + 1);
--   T2 op 8 failed: turso::Constraint UNIQUE constraint failed: t2.c0
/* T2 */ COMMIT;
