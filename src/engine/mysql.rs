//! MariaDB/MySQL over its wire protocol (mysql_async). Being written.
use super::{Engine, EngineError};

/// Connects to the server named by `url` (may hold a password: never print it).
pub fn open(url: &str) -> Result<Box<dyn Engine>, EngineError> {
    Err(EngineError::Connect {
        url: super::url::redact(url),
        reason: "not available yet".into(),
    })
}
