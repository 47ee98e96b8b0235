//! Plain data shared by every stage: schemas, statements, cases, histories.

pub mod anomaly;
pub mod begin;
pub mod case;
pub mod case_features;
pub mod compare;
pub mod cursor;
pub mod cursor_rules;
pub mod edit;
pub mod features;
pub mod fk_conflict;
pub mod history;
pub mod ident;
pub mod schema;
pub mod stmt;
mod stmt_serde;
pub mod value;
pub mod walk;
pub mod write_list;

pub use anomaly::Anomaly;
pub use begin::{Begin, StartMode, OUTERMOST_SAVEPOINT};
pub use case::{
    effective_settings, setting_is_on, setting_value, CaseStmt, Isolation, LevelChoice, LevelSet,
    Settings, StmtRef, TestCase, Txn, TxnSet, CASE_FORMAT,
};
pub use features::Features;
pub use history::{
    DbState, EngineInfo, ErrorClass, Event, EventKind, History, Outcome, RowVersion, RowWrite,
    StmtError, StmtOutcome, TxnEnd, TxnOutcome,
};
pub use schema::{
    ColType, Column, Deferral, FkAction, ForeignKey, Index, Row, Schema, Table, TableData, RID, WL,
};
pub use stmt::{
    AggFn, Assignment, BinOp, ConstraintTiming, CursorOpen, Delete, Expr, Fetch, FromItem, Insert,
    Join, JoinKind, LockMode, OnConflict, OrderBy, Select, SelectItem, Stmt, StmtKind, Update,
};
pub use value::Value;
pub use write_list::WriteList;
