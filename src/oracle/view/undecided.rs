//! Why the `view` oracle could not decide a case: one variant per reason.
//! The key (`Undecided::key`) is what `summary.json` counts under
//! `oracle_counts.view.undecided_by`.

use crate::model::ErrorClass;

macro_rules! reasons {
    ($($variant:ident = $key:literal,)*) => {
        /// A reason the comparison stopped before the end of the case.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Undecided {
            $($variant,)*
            /// The engine failed a statement with an error the rules do not
            /// predict there.
            UnpredictedError(ErrorClass),
            /// The engine's error differs from the scratch evaluation's.
            ErrorMismatch {
                actual: Option<ErrorClass>,
                predicted: Option<ErrorClass>,
            },
        }

        impl Undecided {
            /// The reason's key: `timed-out`, `unpredicted-deadlock`,
            /// `error-mismatch:ACTUAL-vs-PREDICTED`.
            pub fn key(&self) -> String {
                match self {
                    $(Undecided::$variant => $key.to_string(),)*
                    Undecided::UnpredictedError(c) => format!("unpredicted-{}", class_name(*c)),
                    Undecided::ErrorMismatch { actual, predicted } => {
                        let name = |c: &Option<ErrorClass>| c.map_or_else(|| "none".to_string(), class_name);
                        format!("error-mismatch:{}-vs-{}", name(actual), name(predicted))
                    }
                }
            }
        }
    };
}

reasons! {
    CascadeUnobserved = "cascade-unobserved",
    CommitFailed = "commit-failed",
    ControlStatementFailed = "control-statement-failed",
    CoveringIndexRead = "covering-index-read",
    DeletedRowVersionUnknown = "deleted-row-version-unknown",
    DoomedTransaction = "doomed-transaction",
    ErrorInsteadOfAbort = "error-instead-of-abort",
    ErrorInsteadOfBlock = "error-instead-of-block",
    ErrorInsteadOfRefusal = "error-instead-of-refusal",
    InsertIgnoreForeignKey = "insert-ignore-foreign-key",
    InsertSubquery = "insert-subquery",
    InsertRowsDecidedApart = "insert-rows-decided-apart",
    LockingReadRecheck = "locking-read-recheck",
    NoFinalState = "no-final-state",
    NoOrder = "no-order",
    NoOutcome = "no-outcome",
    NoRuleForLevel = "no-rule-for-level",
    PartialWriteVisible = "partial-write-visible",
    ReadUncommittedSubquery = "read-uncommitted-subquery",
    ReadViewPointUncertain = "read-view-point-uncertain",
    RecheckWithSubquery = "recheck-with-subquery",
    ReleaseBeforeObserved = "release-before-observed",
    ResumedLockingRead = "resumed-locking-read",
    ResumedScan = "resumed-scan",
    ResumedScanError = "resumed-scan-error",
    ResumedScanReadsUnknown = "resumed-scan-reads-unknown",
    ResumedScanStateError = "resumed-scan-state-error",
    ResumedScanSubquery = "resumed-scan-subquery",
    ResumedScanWritesUnknown = "resumed-scan-writes-unknown",
    ScratchFailed = "scratch-failed",
    ScratchInitialRows = "scratch-initial-rows",
    ScratchRowUnreadable = "scratch-row-unreadable",
    ScratchSetup = "scratch-setup",
    SubqueryReadView = "subquery-read-view",
    TimedOut = "timed-out",
    TooManyResumeOrders = "too-many-resume-orders",
    UnchangedRowUnknown = "unchanged-row-unknown",
    UnknownSavepoint = "unknown-savepoint",
    UnknownStatement = "unknown-statement",
    UnknownTransaction = "unknown-transaction",
    UnpredictedBlock = "unpredicted-block",
    UpsertKeyOrder = "upsert-key-order",
    ViewNotMaterialisable = "view-not-materialisable",
    WriteNotReadBack = "write-not-read-back",
}

fn class_name(c: ErrorClass) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "error".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_counted_names() {
        assert_eq!(Undecided::TimedOut.key(), "timed-out");
        assert_eq!(
            Undecided::UnpredictedError(ErrorClass::Deadlock).key(),
            "unpredicted-deadlock"
        );
        let m = Undecided::ErrorMismatch {
            actual: None,
            predicted: Some(ErrorClass::Deadlock),
        };
        assert_eq!(m.key(), "error-mismatch:none-vs-deadlock");
    }
}
