-- turso 0.8.3, both modes (known upstream: tursodatabase/turso#8695).
-- A multi-row UPDATE of a rowid alias that fails its unique check inside a
-- transaction keeps the rows it rewrote before the failure. One session.
CREATE TABLE t (k INTEGER PRIMARY KEY);
INSERT INTO t VALUES (2), (6);
BEGIN;
UPDATE t SET k = 13;        -- UNIQUE constraint failed (on the second row)
COMMIT;
SELECT k FROM t ORDER BY k; -- expected (SQLite): 2, 6; observed: 6, 13
-- Found by txfuzz as shadow-run differences (fidelity:final-state,
-- fidelity:result) on key-generator tables: the instrumented UPDATE
-- (... RETURNING rid, wl) is backed out, the plain one is not.
