-- txfuzz reduced finding: final state: 1 row(s) of t1 reference t0 values no row of t0 has (c3 = 10.75); written by the initial data; parent key removed (or possibly removed) by T2#1 [integrity:foreign-key]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- signature: integrity/foreign-key/violation/turso/serializable/delete,insert,upsert
-- reduced from 16 to 2 data statement(s), 4 to 1 transaction(s) in 169 run(s)
-- isolation: serializable
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t1;
DROP TABLE IF EXISTS t0;
CREATE TABLE t0 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 DECIMAL(10,2) NOT NULL, c1 BOOLEAN, PRIMARY KEY (c0));
INSERT INTO t0 (rid, wl, c0, c1) VALUES (3, '0', 10.75, NULL), (4, '0', 9.25, TRUE);
CREATE TABLE t1 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 DECIMAL(10,2), c1 BIGINT NOT NULL, c3 DECIMAL(10,2) NOT NULL, PRIMARY KEY (c3, c1), FOREIGN KEY (c3) REFERENCES t0 (c0) ON UPDATE RESTRICT DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX i_t1_0 ON t1 (c3);
INSERT INTO t1 (rid, wl, c0, c1, c3) VALUES (7, '0', 12.25, 7, 10.75), (8, '0', 19.75, 1, 9.25), (14, '0', 20.75, 4, 9.25);

-- statements, one session per T<n>
/* T2 */ BEGIN;
/* T2 */ DELETE FROM t0;
/* T2 */ INSERT OR IGNORE INTO t0 (c0, c1) VALUES (9.25, TRUE);
/* T2 */ COMMIT;

-- observed (turso 0.8.3): COMMIT succeeds; t1 keeps (c3 = 10.75), whose parent the DELETE removed
-- expected (SQLite 3.40.1): COMMIT fails with "FOREIGN KEY constraint failed"
