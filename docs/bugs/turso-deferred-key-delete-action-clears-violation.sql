-- txfuzz reduced finding: final state: 1 row(s) of t1 reference t0 values no row of t0 has (c2 = 14); written by T3#1 (committed); no statement of the case removed the parent key [integrity:foreign-key]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- signature: integrity/foreign-key/violation/turso/serializable/insert,insert-select,replace
-- reduced from 17 to 2 data statement(s), 4 to 1 transaction(s) in 149 run(s)
-- isolation: serializable
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t1;
DROP TABLE IF EXISTS t0;
CREATE TABLE t0 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT NOT NULL, PRIMARY KEY (c0));
INSERT INTO t0 (rid, wl, c0) VALUES (2, '0', 20);
CREATE TABLE t1 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT DEFAULT 15, c2 INT DEFAULT 14, FOREIGN KEY (c2) REFERENCES t0 (c0) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED);
INSERT INTO t1 (rid, wl, c0, c2) VALUES (8, '0', -2, 20);

-- statements, one session per T<n>
/* T3 */ BEGIN;
/* T3 */ REPLACE INTO t1 (c0, c2) SELECT a0.c0, 14 FROM t0 AS a0 ORDER BY a0.c0 DESC LIMIT 1;
/* T3 */ DELETE FROM t0;
/* T3 */ COMMIT;
