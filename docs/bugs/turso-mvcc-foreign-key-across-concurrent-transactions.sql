-- txfuzz finding: final state: 1 row(s) of c reference p values no row of p has (pk = 1) [integrity:foreign-key]
-- engine: turso 0.8.3, MVCC mode (turso-mvcc:, BEGIN CONCURRENT)
-- reduced by hand from tests/integrity.rs::delete_vs_insert (both orders show it)

-- set-up (any session)
PRAGMA journal_mode = 'mvcc';
PRAGMA foreign_keys = ON;
CREATE TABLE p (k INT PRIMARY KEY, v INT, CHECK (v > -1000));
CREATE TABLE c (k INT PRIMARY KEY, pk INT REFERENCES p (k), u INT UNIQUE);
INSERT INTO p VALUES (1, 10), (2, 20);
INSERT INTO c VALUES (5, 2, NULL);

-- statements, one session per T<n> (each session: PRAGMA foreign_keys = ON)
/* T1 */ BEGIN CONCURRENT;
/* T2 */ BEGIN CONCURRENT;
/* T1 */ DELETE FROM p WHERE k = 1;
/* T2 */ INSERT INTO c (k, pk) VALUES (6, 1);
/* T1 */ COMMIT;
/* T2 */ COMMIT;

-- observed: both COMMITs succeed; SELECT * FROM c WHERE pk NOT IN (SELECT k FROM p) returns (6, 1, NULL)
-- expected: one of the two statements or COMMITs fails; no child row without its parent
