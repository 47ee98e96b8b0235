//! MariaDB/MySQL errors classified by their numeric code (never by message text).

use crate::model::{ErrorClass, StmtError};

/// The class of server error `code`.
pub fn class_of(code: u16) -> ErrorClass {
    match code {
        1213 => ErrorClass::Deadlock,
        1205 => ErrorClass::LockWaitTimeout,
        // ER_CHECKREAD: innodb_snapshot_isolation found the row changed since the
        // transaction's read view.
        1020 => ErrorClass::SnapshotConflict,
        // ER_QUERY_INTERRUPTED (KILL QUERY), ER_STATEMENT_TIMEOUT.
        1317 | 1969 => ErrorClass::Cancelled,
        1062 | 1586 => ErrorClass::DuplicateKey,
        1048 | 1364 => ErrorClass::NotNullViolation,
        4025 | 3819 => ErrorClass::CheckViolation,
        1451 | 1452 | 1216 | 1217 => ErrorClass::ForeignKeyViolation,
        1264 | 1265 | 1366 | 1292 | 1406 | 1690 | 1365 | 1367 => ErrorClass::DataError,
        1064 | 1149 => ErrorClass::Syntax,
        // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION.
        1792 => ErrorClass::ReadOnlyTransaction,
        // Server shutdown, connection killed, client-side gone-away/lost.
        1053 | 1927 | 2006 | 2013 | 4031 => ErrorClass::ConnectionLost,
        _ => ErrorClass::Other,
    }
}

/// A driver error as a statement error: server errors by code, transport
/// failures as a lost connection.
pub fn classify(e: &mysql_async::Error) -> StmtError {
    use mysql_async::Error;
    match e {
        Error::Server(s) => StmtError {
            class: class_of(s.code),
            code: format!("{} ({})", s.code, s.state),
            message: s.message.clone(),
        },
        Error::Io(io) => StmtError {
            class: ErrorClass::ConnectionLost,
            code: "io".into(),
            message: io.to_string(),
        },
        Error::Driver(d) => StmtError {
            class: match d {
                mysql_async::DriverError::ConnectionClosed
                | mysql_async::DriverError::PacketOutOfOrder
                | mysql_async::DriverError::UnexpectedPacket { .. } => ErrorClass::ConnectionLost,
                _ => ErrorClass::Other,
            },
            code: "driver".into(),
            message: d.to_string(),
        },
        other => StmtError {
            class: ErrorClass::Other,
            code: "client".into(),
            message: other.to_string(),
        },
    }
}

/// A statement error for a connection that is already gone.
pub fn lost(message: &str) -> StmtError {
    StmtError {
        class: ErrorClass::ConnectionLost,
        code: "io".into(),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_classes() {
        assert_eq!(class_of(1213), ErrorClass::Deadlock);
        assert_eq!(class_of(1205), ErrorClass::LockWaitTimeout);
        assert_eq!(class_of(1020), ErrorClass::SnapshotConflict);
        assert_eq!(class_of(1317), ErrorClass::Cancelled);
        assert_eq!(class_of(1062), ErrorClass::DuplicateKey);
        assert_eq!(class_of(1452), ErrorClass::ForeignKeyViolation);
        assert_eq!(class_of(1792), ErrorClass::ReadOnlyTransaction);
        assert_eq!(class_of(4025), ErrorClass::CheckViolation);
        assert_eq!(class_of(1048), ErrorClass::NotNullViolation);
        assert_eq!(class_of(1264), ErrorClass::DataError);
        assert_eq!(class_of(1064), ErrorClass::Syntax);
        assert_eq!(class_of(2013), ErrorClass::ConnectionLost);
        assert_eq!(class_of(1146), ErrorClass::Other);
    }
}
