-- SQLite 3.50.2: PRAGMA defer_foreign_keys = OFF forgets pending foreign-key
-- violations; the COMMIT succeeds with an orphan. One session.
PRAGMA foreign_keys = ON;
CREATE TABLE p (k INT PRIMARY KEY);
CREATE TABLE c (k INT PRIMARY KEY, pk INT REFERENCES p (k));
INSERT INTO p VALUES (1);

BEGIN;
PRAGMA defer_foreign_keys = ON;
INSERT INTO c VALUES (1, 99);      -- no parent 99: a violation, deferred
PRAGMA defer_foreign_keys = OFF;
COMMIT;                            -- expected: FOREIGN KEY constraint failed
SELECT * FROM c;                   -- observed: 1|99 (an orphan)
PRAGMA foreign_key_check;          -- observed: c|1|p|0

-- 3.50.2 only: a DEFERRABLE INITIALLY DEFERRED key, the pragma never on.
CREATE TABLE d (k INT PRIMARY KEY, pk INT REFERENCES p (k) DEFERRABLE INITIALLY DEFERRED);
BEGIN;
INSERT INTO d VALUES (1, 99);
PRAGMA defer_foreign_keys = OFF;
COMMIT;                            -- expected: FOREIGN KEY constraint failed; observed: commits
