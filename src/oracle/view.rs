//! placeholder
use super::{CheckStats, Finding};
use crate::engine::{Engine, EngineError};
use crate::exec::ExecOptions;
use crate::model::{History, TestCase};

pub fn check(
    _engine: &mut dyn Engine,
    _case: &TestCase,
    _history: &History,
    _opts: &ExecOptions,
    _stats: &mut CheckStats,
) -> Result<Vec<Finding>, EngineError> {
    Ok(Vec::new())
}
