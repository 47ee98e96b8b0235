-- turso 0.8.3, both modes (found in MVCC by the issue-34 chaos campaign, reduced by txfuzz reduce). txfuzz finding: final state: 1 row(s) of t2 reference t1 values no row of t1 has (c2 = 'ab'); written by the initial data; parent key removed (or possibly removed) by T1#1 [integrity:foreign-key]
-- engine: turso 0.8.3 (sqlite 3.50.4)
-- signature: integrity/foreign-key/violation/turso/repeatable-read/insert,replace
-- reduced from 7 to 1 data statement(s), 2 to 1 transaction(s) in 199 run(s)
-- isolation: repeatable-read
-- Hidden columns rid/wl are txfuzz's instrumentation (row id, write list).

-- set-up (any session)
CREATE TABLE t1 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 VARCHAR(8) NOT NULL, c1 VARCHAR(8), c2 INT DEFAULT 14, PRIMARY KEY (c0), UNIQUE (c1));
INSERT INTO t1 (rid, wl, c0, c1, c2) VALUES (4, '0', 'ab', 'bb', 17), (7, '0', 'a', 'abc', 6);
CREATE TABLE t2 (rid BIGINT NOT NULL, wl TEXT NOT NULL, c0 DECIMAL(10,2), c1 BOOLEAN DEFAULT TRUE, c2 VARCHAR(8), c3 VARCHAR(4) NOT NULL, PRIMARY KEY (c3), FOREIGN KEY (c2) REFERENCES t1 (c0) DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX i_t2_0 ON t2 (c2);
INSERT INTO t2 (rid, wl, c0, c1, c2, c3) VALUES (8, '0', 1, TRUE, 'ab', 'bb'), (9, '0', 15.5, TRUE, 'a', 'a'), (14, '0', 10, FALSE, 'a', 'ab');

-- statements, one session per T<n>
/* T1 */ BEGIN;
/* T1 */ REPLACE INTO t1 (c0, c1) VALUES ('a', 'bb');
/* T1 */ COMMIT;
-- Expected (SQLite "Foreign Key Support" 4.2): COMMIT fails, the child of 'ab' has no parent.
-- turso 0.8.3: COMMIT succeeds and commits the orphan (WAL and MVCC).
