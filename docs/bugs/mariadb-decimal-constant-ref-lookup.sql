-- Wrong result: DECIMAL constant compared with indexed INT column via ref access
-- Server: 10.11.19-MariaDB-0+deb12u1 (Debian 12, x86_64), default optimizer_switch
-- The constant 5.5 is rounded to 6 (round half away from zero) to build the ref key,
-- and the row with c1=6 is returned although 6 = 5.5 is false.
-- EXPLAIN SELECT c0, c1 FROM qb_t0 WHERE c1 = 5.5;
--   id=1 SIMPLE qb_t0 type=ref possible_keys=c1 key=c1 key_len=5 ref=const rows=1 Extra=Using index
-- Same with c1 = 5.4 (-> 5), c1 = -1.5 (-> -2), c1 = 5.5e0, c1 = '5.5', and
-- a composite KEY(c1,c2) with WHERE c1 = 5.5 AND c2 = 'a'.
-- Not affected: IN (5.5, 2.5) (range access), UNIQUE key (const -> Impossible WHERE),
-- PRIMARY KEY lookup c0 = 1.5 (Impossible WHERE).
DROP TABLE IF EXISTS qb_t0;
CREATE TABLE qb_t0 (c0 INT PRIMARY KEY, c1 INT, KEY(c1)) ENGINE=InnoDB;
INSERT INTO qb_t0 VALUES (1, 6);

SELECT c0, c1 FROM qb_t0 WHERE c1 = 5.5;
-- WRONG:   one row (c0=1, c1=6)
-- CORRECT: empty set, as returned by:
--   SELECT c0, c1 FROM qb_t0 IGNORE INDEX (c1) WHERE c1 = 5.5;   -- empty
--   SELECT c0, c1 FROM qb_t0 WHERE c1 + 0 = 5.5;                 -- empty
--   SELECT 6 = 5.5;                                              -- 0
--   same table without KEY(c1)                                   -- empty
DROP TABLE qb_t0;
