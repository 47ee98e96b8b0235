//! A statement a READ ONLY transaction may not run (profile `read_only`:
//! its writes, and the locking reads the engine refuses there): it must fail
//! with the profile's error, before reading anything.

use super::*;

/// The error `r` must fail with, when its transaction is READ ONLY and the
/// profile says such a transaction refuses its access.
pub(super) fn refused(ck: &Checker, r: StmtRef, access: Access) -> Option<ErrorClass> {
    let rule = ck.rule_of(r.txn);
    let class = rule.read_only_error?;
    let refused = match access {
        Access::Write => true,
        Access::LockingRead(m) => rule.read_only_refused_locks.contains(&m),
        Access::PlainRead => false,
    };
    (refused && in_txn(ck, r)).then_some(class)
}

/// Judges a statement that must fail with `class`: success is a violation
/// (a READ ONLY transaction wrote or locked), the error decides it, another
/// error leaves the case undecided.
pub(super) fn judge_refused(
    ck: &mut Checker,
    r: StmtRef,
    access: Access,
    class: ErrorClass,
    actual: &Outcome,
) -> Result<(), Stop> {
    match actual.error.as_ref().map(|e| e.class) {
        Some(c) if c == class => Ok(()),
        Some(_) => Err(undecided(Undecided::ErrorInsteadOfRefusal)),
        None => {
            let what = match access {
                Access::Write => "write",
                _ => "locking read",
            };
            let begin = ck.case.txn(r.txn).map(|t| t.begin()).unwrap_or_default();
            ck.findings.push(
                Finding::new(
                    crate::oracle::OracleKind::View,
                    "read-only-violated",
                    format!(
                        "{} is a {what} in a READ ONLY transaction and must fail ({class:?}) \
                         but succeeded",
                        label(ck, r)
                    ),
                    json!({
                        "stmt": format!("T{}#{}", r.txn, r.index),
                        "isolation": ck.case.level_of(r.txn),
                        "begin": begin,
                        "expected_error": class,
                        "actual": actual,
                    }),
                )
                .about([r]),
            );
            Err(Stop::Violation)
        }
    }
}
