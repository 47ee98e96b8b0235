//! turso, the Rust rewrite of SQLite (crate `turso`, feature `turso`): a file
//! database shared by one connection per session, in its default mode
//! (`turso:PATH`: one writer at a time) or in MVCC mode (`turso-mvcc:PATH`:
//! `PRAGMA journal_mode = 'mvcc'`, where the generator starts every
//! transaction `BEGIN CONCURRENT`: the profile's only start mode; the engine
//! runs the statements as written). Its SQL is SQLite's.
//!
//! turso never waits for a lock here: without a busy handler txfuzz could
//! not see a wait, so no busy timeout is set and a statement that would wait
//! fails at once (`Busy`; in MVCC mode a write-write conflict). The profile
//! says so (`lock_waits: false`). A panic inside the engine is caught at the
//! session boundary and becomes an `Internal` error with code `panic` (a
//! `crash` finding); the session is unusable afterwards and refuses its
//! later statements with code `after-panic` (`crate::engine::AFTER_PANIC_CODE`).

mod profile;
pub use profile::{mvcc_rule, profile, MODE_SETTING, MVCC};

#[cfg(feature = "turso")]
mod engine;
#[cfg(feature = "turso")]
pub use engine::{classify_message, TursoEngine};

/// Opens a turso engine, or says how to build txfuzz with it.
pub fn open(
    path: Option<std::path::PathBuf>,
    mvcc: bool,
) -> Result<Box<dyn super::Engine>, super::EngineError> {
    #[cfg(feature = "turso")]
    {
        Ok(Box::new(TursoEngine::open(path, mvcc)?))
    }
    #[cfg(not(feature = "turso"))]
    {
        let _ = (path, mvcc);
        Err(super::EngineError::Usage(
            "this txfuzz was built without turso: build it with \
             `cargo build --release --features turso`"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn open_works_or_says_how_to_build_with_turso() {
        let opened = super::open(None, true);
        if cfg!(feature = "turso") {
            assert_eq!(opened.unwrap().info().name, "turso");
        } else {
            let e = opened.err().expect("no turso without the feature");
            assert!(e.to_string().contains("--features turso"), "{e}");
        }
    }
}
