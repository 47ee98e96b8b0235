//! txfuzz: finds transaction bugs in SQL database engines.
//!
//! Pipeline (see ARCHITECTURE.md): [`gen`] makes a [`model::TestCase`], [`exec`]
//! runs it on an [`engine`] through [`instrument`]ed statements and records a
//! [`model::History`], each [`oracle`] checks it, [`finding`] stores what they
//! report, [`campaign`] loops and summarises, [`cli`] is the command line.

pub mod bench;
pub mod campaign;
pub mod cli;
pub mod engine;
pub mod exec;
pub mod export;
pub mod finding;
pub mod gen;
pub mod input;
pub mod instrument;
pub mod interrupt;
pub mod model;
pub mod oracle;
pub mod reduce;
pub mod report;
pub mod rng;
pub mod sql;
pub mod stress;
#[doc(hidden)]
pub mod testkit;
