-- txfuzz reduced finding: final state: 1 row(s) of t2 reference t1 values no row of t1 has (c1 = 2); written by the initial data; parent key removed (or possibly removed) by T2#1 [integrity:foreign-key]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- signature: integrity/foreign-key/violation/turso/serializable/insert,replace
-- reduced from 9 to 1 data statement(s), 3 to 1 transaction(s) in 215 run(s)
-- isolation: serializable
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t2;
DROP TABLE IF EXISTS t1;
CREATE TABLE t1 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT, c1 INT NOT NULL, PRIMARY KEY (c1), UNIQUE (c0));
INSERT INTO t1 (rid, wl, c0, c1) VALUES (6, '0', 1, 2), (7, '0', -2, 18);
CREATE TABLE t2 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT NOT NULL, c1 INT NOT NULL, PRIMARY KEY (c1, c0), FOREIGN KEY (c1) REFERENCES t1 (c1) ON UPDATE CASCADE DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX i_t2_0 ON t2 (c1);
INSERT INTO t2 (rid, wl, c0, c1) VALUES (10, '0', 16, 18), (12, '0', 0, 18), (13, '0', -4, 2);

-- statements, one session per T<n>
/* T2 */ BEGIN;
/* T2 */ REPLACE INTO t1 (c0, c1) VALUES (1, 18);
/* T2 */ COMMIT;

-- observed (turso 0.8.3): COMMIT succeeds; t2 keeps (c0 = -4, c1 = 2), whose parent (c1 = 2) the REPLACE deleted
-- expected (SQLite 3.40.1): COMMIT fails with "FOREIGN KEY constraint failed"
