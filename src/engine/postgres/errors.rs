//! PostgreSQL error taxonomy: SQLSTATE codes (never message text) to
//! [`ErrorClass`].

use crate::model::{ErrorClass, StmtError};

/// The class of a SQLSTATE code.
pub fn class_of(sqlstate: &str) -> ErrorClass {
    match sqlstate {
        "40P01" => ErrorClass::Deadlock,
        "40001" => ErrorClass::SerializationFailure,
        "55P03" => ErrorClass::LockWaitTimeout,
        // query_canceled: our cancel token (or statement_timeout).
        "57014" => ErrorClass::Cancelled,
        "25P02" => ErrorClass::TransactionAborted,
        "23505" => ErrorClass::DuplicateKey,
        "23502" => ErrorClass::NotNullViolation,
        "23514" => ErrorClass::CheckViolation,
        "23503" => ErrorClass::ForeignKeyViolation,
        // read_only_sql_transaction.
        "25006" => ErrorClass::ReadOnlyTransaction,
        "XX000" | "XX001" | "XX002" => ErrorClass::Internal,
        // admin_shutdown, crash_shutdown, cannot_connect_now: the backend is gone.
        "57P01" | "57P02" | "57P03" => ErrorClass::ConnectionLost,
        s if s.starts_with("22") => ErrorClass::DataError,
        s if s.starts_with("42") => ErrorClass::Syntax,
        s if s.starts_with("08") => ErrorClass::ConnectionLost,
        _ => ErrorClass::Other,
    }
}

/// A statement error from a client error: the server's SQLSTATE and message, or
/// (no SQLSTATE: an I/O error or a closed connection) a lost connection.
pub fn classify(e: &tokio_postgres::Error) -> StmtError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return StmtError {
            class: class_of(code),
            code: code.to_string(),
            message: db.message().to_string(),
        };
    }
    StmtError {
        class: ErrorClass::ConnectionLost,
        code: if e.is_closed() { "closed" } else { "io" }.to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_are_classified() {
        assert_eq!(class_of("40P01"), ErrorClass::Deadlock);
        assert_eq!(class_of("40001"), ErrorClass::SerializationFailure);
        assert_eq!(class_of("55P03"), ErrorClass::LockWaitTimeout);
        assert_eq!(class_of("57014"), ErrorClass::Cancelled);
        assert_eq!(class_of("25P02"), ErrorClass::TransactionAborted);
        assert_eq!(class_of("23505"), ErrorClass::DuplicateKey);
        assert_eq!(class_of("23502"), ErrorClass::NotNullViolation);
        assert_eq!(class_of("23514"), ErrorClass::CheckViolation);
        assert_eq!(class_of("23503"), ErrorClass::ForeignKeyViolation);
        assert_eq!(class_of("25006"), ErrorClass::ReadOnlyTransaction);
        assert_eq!(class_of("22012"), ErrorClass::DataError);
        assert_eq!(class_of("22003"), ErrorClass::DataError);
        assert_eq!(class_of("42601"), ErrorClass::Syntax);
        assert_eq!(class_of("42P01"), ErrorClass::Syntax);
        assert_eq!(class_of("08006"), ErrorClass::ConnectionLost);
        assert_eq!(class_of("57P01"), ErrorClass::ConnectionLost);
        assert_eq!(class_of("XX000"), ErrorClass::Internal);
        assert_eq!(class_of("XX001"), ErrorClass::Internal);
        assert_eq!(class_of("53200"), ErrorClass::Other);
        assert_eq!(class_of("40002"), ErrorClass::Other);
    }
}
