-- turso 0.8.3 (WAL and MVCC): with a DEFERRABLE INITIALLY DEFERRED foreign key
-- whose child column has an index, deleting a parent with several children
-- counts one deferred violation instead of one per child; a later write of one
-- child repays it, and COMMIT succeeds with the other children orphaned.
-- Without the index (CREATE INDEX i_c below left out) turso counts per child
-- and fails the COMMIT, as SQLite does ("COMMIT will fail as long as foreign
-- key constraints remain in violation", "Foreign Key Support" 4.2).
-- Standalone test: tests/turso_bugs.rs::repairing_one_child_of_a_deleted_parent_leaves_the_others_in_violation
-- Found by txfuzz's integrity oracle (turso WAL, seed 2 case 21050; the reduced
-- case is tests/fixtures/turso-indexed-parent-delete-child-write.json).
PRAGMA foreign_keys = ON;
CREATE TABLE p (k INT PRIMARY KEY);
CREATE TABLE c (k INT PRIMARY KEY, pk INT REFERENCES p (k) DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX i_c ON c (pk);
INSERT INTO p VALUES (1), (3);
INSERT INTO c VALUES (10, 1), (11, 1), (12, 1);
BEGIN;
DELETE FROM p WHERE k = 1;            -- three children orphaned: SQLite counts 3, turso 1
UPDATE c SET pk = 3 WHERE k = 10;     -- repays one (also: SET pk = NULL, or DELETE FROM c WHERE k = 10)
COMMIT;
-- observed (turso 0.8.3): COMMIT succeeds; children 11 and 12 reference no parent
-- expected (SQLite 3.40.1): COMMIT fails with "FOREIGN KEY constraint failed"
SELECT k FROM c WHERE pk NOT IN (SELECT k FROM p);
