//! The public Hermitage test sequences (Kleppmann) as scripted cases over
//! `test(id int primary key, value int)` = our key/value table `t` with rows
//! (1, 10) and (2, 20). Each returns the case and the name of the anomaly it
//! provokes; docs/engine-facts.md records which engines and levels let it happen.

use super::*;
use crate::model::{Stmt, TestCase};

fn begin_commit(body: Vec<Stmt>) -> (bool, Vec<Stmt>) {
    committed(body)
}

fn rows() -> [(i64, i64); 2] {
    [(1, 10), (2, 20)]
}

/// G0 dirty write: T1 and T2 both write rows 1 and 2; T2's first write must wait.
pub fn g0() -> TestCase {
    kv_case(
        &rows(),
        vec![
            begin_commit(vec![set("t", 1, 11), set("t", 2, 21)]),
            begin_commit(vec![set("t", 1, 12), set("t", 2, 22)]),
        ],
        "1 2 1 2 1 1 2 2",
    )
}

/// G1a aborted read: T2 reads while T1's write is uncommitted; T1 rolls back.
pub fn g1a() -> TestCase {
    kv_case(
        &rows(),
        vec![
            (false, vec![Stmt::begin(), set("t", 1, 101), Stmt::Rollback]),
            begin_commit(vec![select("t", None), select("t", None)]),
        ],
        "1 2 1 2 1 2 2",
    )
}

/// G1b intermediate read: T2 reads T1's first of two writes to row 1.
pub fn g1b() -> TestCase {
    kv_case(
        &rows(),
        vec![
            begin_commit(vec![set("t", 1, 101), set("t", 1, 11)]),
            begin_commit(vec![select("t", None), select("t", None)]),
        ],
        "1 2 1 2 1 1 2 2",
    )
}

/// G1c circular information flow: each reads the other's uncommitted write.
pub fn g1c() -> TestCase {
    kv_case(
        &rows(),
        vec![
            begin_commit(vec![set("t", 1, 11), select("t", Some(2))]),
            begin_commit(vec![set("t", 2, 22), select("t", Some(1))]),
        ],
        "1 2 1 2 1 2 1 2",
    )
}

/// P4 lost update: both read row 1, both write it. (Hermitage writes 11
/// twice; T2 writes 12 here, so that its UPDATE changes the row T1 wrote:
/// InnoDB writes no new version for an UPDATE that changes nothing, and
/// txfuzz's instrumentation keeps it so.)
pub fn p4() -> TestCase {
    kv_case(
        &rows(),
        vec![
            begin_commit(vec![select("t", Some(1)), set("t", 1, 11)]),
            begin_commit(vec![select("t", Some(1)), set("t", 1, 12)]),
        ],
        "1 2 1 2 1 2 1 2",
    )
}

/// G-single read skew: T1 reads row 1, T2 changes both rows and commits, T1
/// reads row 2.
pub fn g_single() -> TestCase {
    kv_case(
        &rows(),
        vec![
            begin_commit(vec![select("t", Some(1)), select("t", Some(2))]),
            begin_commit(vec![
                select("t", Some(1)),
                select("t", Some(2)),
                set("t", 1, 12),
                set("t", 2, 18),
            ]),
        ],
        "1 2 1 2 2 2 2 2 1 1",
    )
}

/// G2-item write skew: both read both rows, each writes a different one.
pub fn g2_item() -> TestCase {
    kv_case(
        &rows(),
        vec![
            begin_commit(vec![select("t", None), set("t", 1, 11)]),
            begin_commit(vec![select("t", None), set("t", 2, 21)]),
        ],
        "1 2 1 2 1 2 1 2",
    )
}

/// Every sequence with the anomaly it provokes (names as in docs/engine-facts.md).
pub fn all() -> Vec<(&'static str, TestCase)> {
    vec![
        ("G0", g0()),
        ("G1a", g1a()),
        ("G1b", g1b()),
        ("G1c", g1c()),
        ("P4", p4()),
        ("G-single", g_single()),
        ("G2-item", g2_item()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_valid_cases() {
        for (name, case) in all() {
            case.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
