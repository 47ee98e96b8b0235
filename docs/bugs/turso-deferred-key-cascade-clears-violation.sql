-- txfuzz reduced finding: final state: 1 row(s) of t1 reference t0 values no row of t0 has (c0 = 3); written by T1#1 (committed); parent key removed (or possibly removed) by T1#2 [integrity:foreign-key]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- signature: integrity/foreign-key/violation/turso/serializable/insert,upsert
-- reduced from 12 to 2 data statement(s), 4 to 1 transaction(s) in 192 run(s)
-- isolation: serializable
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
DROP TABLE IF EXISTS t1;
DROP TABLE IF EXISTS t0;
CREATE TABLE t0 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT NOT NULL, PRIMARY KEY (c0));
INSERT INTO t0 (rid, wl, c0) VALUES (1, '0', -3);
CREATE TABLE t1 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 INT NOT NULL, c1 TEXT, c2 DECIMAL(10,2) NOT NULL, PRIMARY KEY (c2, c0), FOREIGN KEY (c0) REFERENCES t0 (c0) ON DELETE RESTRICT ON UPDATE CASCADE DEFERRABLE INITIALLY DEFERRED);
INSERT INTO t1 (rid, wl, c0, c1, c2) VALUES (12, '0', -3, 'ba', -4);

-- statements, one session per T<n>
/* T1 */ BEGIN;
/* T1 */ INSERT INTO t1 (c0, c1, c2) VALUES (3, 'a', 1.5) ON CONFLICT (c2, c0) DO UPDATE SET c1 = 'ca';
/* T1 */ UPDATE t0 SET c0 = (c0 - 2);
/* T1 */ COMMIT;

-- observed (turso 0.8.3, WAL and MVCC): COMMIT succeeds; t1 holds (c0 = 3), which no row of t0 has
-- expected (SQLite 3.40.1 and 3.50): COMMIT fails with "FOREIGN KEY constraint failed" (the deferred violation of T1#1 remains)
