-- Wrong result: loose index scan ("Using index for group-by") on a secondary key
-- that is implicitly extended with the PRIMARY KEY column (InnoDB extended keys),
-- with an OR condition mixing the key column and the PK column.
-- Server: 10.11.19-MariaDB-0+deb12u1 (Debian 12, x86_64), default optimizer_switch
-- EXPLAIN SELECT DISTINCT c1, c0 FROM qb_t0 WHERE (c1 = 16 OR c0 = -1) AND c0 < 13;
--   id=1 SIMPLE qb_t0 type=range possible_keys=PRIMARY,k key=k key_len=9 ref=NULL rows=1
--   Extra="Using where; Using index for group-by"
-- Also wrong (empty): ... GROUP BY c1, c0  and  SELECT DISTINCT c0, c1 ... (loose scan + Using temporary).
-- Correct with: IGNORE INDEX (k); SET optimizer_switch='extended_keys=off';
-- an explicit KEY(c1, c0) instead of KEY(c1); a copy of the table without KEY k;
-- dropping "AND c0 < 13"; fewer than 6 rows (the plan switches to a PRIMARY range scan).
-- No ANALYZE TABLE needed.
DROP TABLE IF EXISTS qb_t0;
CREATE TABLE qb_t0 (c0 INT PRIMARY KEY, c1 INT, KEY k(c1)) ENGINE=InnoDB;
INSERT INTO qb_t0 VALUES (-1,16),(1,2),(2,3),(3,4),(4,5),(5,6);

SELECT DISTINCT c1, c0 FROM qb_t0 WHERE (c1 = 16 OR c0 = -1) AND c0 < 13;
-- WRONG:   empty set
-- CORRECT: one row  c1=16, c0=-1, as returned by:
--   SELECT DISTINCT c1, c0 FROM qb_t0 IGNORE INDEX (k) WHERE (c1 = 16 OR c0 = -1) AND c0 < 13;
DROP TABLE qb_t0;
