-- turso 0.8.3, MVCC mode: after a checkpoint, an upsert's DO UPDATE overwrites
-- a row another open transaction wrote, with no write-write conflict (a plain
-- UPDATE in its place fails at once; so does the upsert without the checkpoint).
-- Minimal form of the view:missed-abort finding in
-- turso-mvcc-upsert-after-checkpoint-found.sql (written by hand from it).

-- set-up (any session)
PRAGMA journal_mode = 'mvcc';
CREATE TABLE t (k INT PRIMARY KEY, v INT);
INSERT INTO t VALUES (1, 10);
PRAGMA wal_checkpoint(TRUNCATE);

-- statements, one session per T<n>
/* T1 */ BEGIN CONCURRENT;
/* T2 */ BEGIN CONCURRENT;
/* T2 */ UPDATE t SET v = 11 WHERE k = 1;
/* T1 */ INSERT INTO t VALUES (1, 12) ON CONFLICT (k) DO UPDATE SET v = excluded.v;
--   expected: Write-write conflict (as `UPDATE t SET v = 12 WHERE k = 1` gets)
--   turso 0.8.3: succeeds; T1's COMMIT fails later if T2 commits first
