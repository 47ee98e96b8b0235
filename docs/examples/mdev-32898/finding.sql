-- txfuzz reduced finding: T2#2 (op 11) returned 1 row(s) its view does not contain and not 1 it contains [view:result]
-- engine: mariadb 10.11.19-MariaDB-0+deb12u1
-- signature: view/result/violation/mariadb/repeatable-read/aggregate,select,subquery
-- reduced from 18 to 4 data statement(s), 4 to 2 transaction(s) in 222 run(s)
-- isolation: repeatable-read
-- The plain tables: the finding reproduces without txfuzz's instrumentation (its shadow run agrees).

-- set-up (any session)
DROP TABLE IF EXISTS t1;
CREATE TABLE t1 (c0 INT NOT NULL, c1 INT, c2 VARCHAR(16) NOT NULL, PRIMARY KEY (c0, c2)) ENGINE=InnoDB;
INSERT INTO t1 (c0, c1, c2) VALUES (-3, 5, 'ab');

-- in every session first
SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;

-- statements, one session per T<n>
/* T3 */ START TRANSACTION WITH CONSISTENT SNAPSHOT;
/* T3 */ UPDATE t1 SET c1 = (c1 + 3);
/* T2 */ START TRANSACTION WITH CONSISTENT SNAPSHOT;
/* T2 */ UPDATE t1 SET c1 = 20;
--   T2 blocks (op 8)
/* T3 */ UPDATE t1 SET c0 = (c1 + 3);
/* T3 */ COMMIT;
/* T2 */ SELECT COUNT(*) FROM t1 AS a0;
/* T2 */ COMMIT;
