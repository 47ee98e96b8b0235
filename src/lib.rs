//! txfuzz: finds transaction bugs in SQL database engines.
//!
//! Pipeline (see ARCHITECTURE.md): `gen` makes a [`model::TestCase`], `exec` runs
//! it on an `engine` and records a [`model::History`], each `oracle` checks it,
//! `finding` stores what they report.

pub mod model;
pub mod sql;
pub mod gen;
