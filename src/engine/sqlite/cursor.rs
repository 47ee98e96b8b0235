//! Open cursors on a SQLite connection: a prepared statement stepped part-way
//! while the connection runs other statements (rusqlite's `Statement`
//! borrows its connection, so a session keeps the raw statement instead).

use super::classify;
use crate::engine::CursorRows;
use crate::model::{StmtError, Value};
use rusqlite::{ffi, Connection};
use std::ffi::{CStr, CString};

/// A prepared statement of the session's connection, finalized on drop (the
/// session drops its cursors before its connection).
pub struct RawCursor {
    stmt: *mut ffi::sqlite3_stmt,
    db: *mut ffi::sqlite3,
    done: bool,
}

// The statement is used only by the session that owns it and its connection,
// on one thread at a time (the session moves between threads as a whole).
unsafe impl Send for RawCursor {}

impl RawCursor {
    /// Prepares `sql` on `conn`.
    pub fn prepare(conn: &Connection, sql: &str) -> Result<RawCursor, StmtError> {
        let text = CString::new(sql).map_err(|_| StmtError {
            class: crate::model::ErrorClass::Other,
            code: "cursor".into(),
            message: "SQL with a NUL byte".into(),
        })?;
        // SAFETY: `conn.handle()` is the live connection; the statement is
        // finalized before the connection closes (the session's field order).
        let db = unsafe { conn.handle() };
        let mut stmt = std::ptr::null_mut();
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(db, text.as_ptr(), -1, &mut stmt, std::ptr::null_mut())
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(db, rc));
        }
        Ok(RawCursor {
            stmt,
            db,
            done: false,
        })
    }

    /// Steps up to `rows` rows; `done` once a step reports the end.
    pub fn step(&mut self, rows: u32) -> Result<CursorRows, StmtError> {
        let mut out = Vec::new();
        while !self.done && out.len() < rows as usize {
            // SAFETY: `stmt` is a live prepared statement of `db`.
            match unsafe { ffi::sqlite3_step(self.stmt) } {
                ffi::SQLITE_ROW => out.push(self.row()),
                ffi::SQLITE_DONE => self.done = true,
                rc => return Err(error(self.db, rc)),
            }
        }
        Ok(CursorRows {
            rows: out,
            done: self.done,
        })
    }

    fn row(&self) -> Vec<Value> {
        // SAFETY: called right after SQLITE_ROW; column pointers are read
        // before the next step.
        unsafe {
            let n = ffi::sqlite3_column_count(self.stmt);
            (0..n)
                .map(|i| match ffi::sqlite3_column_type(self.stmt, i) {
                    ffi::SQLITE_NULL => Value::Null,
                    ffi::SQLITE_INTEGER => Value::Int(ffi::sqlite3_column_int64(self.stmt, i)),
                    ffi::SQLITE_FLOAT => Value::real(ffi::sqlite3_column_double(self.stmt, i)),
                    ffi::SQLITE_BLOB => {
                        let p = ffi::sqlite3_column_blob(self.stmt, i) as *const u8;
                        let len = ffi::sqlite3_column_bytes(self.stmt, i) as usize;
                        let bytes = if p.is_null() {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(p, len)
                        };
                        Value::Text(bytes.iter().map(|x| format!("{x:02x}")).collect())
                    }
                    _ => {
                        let p = ffi::sqlite3_column_text(self.stmt, i);
                        let len = ffi::sqlite3_column_bytes(self.stmt, i) as usize;
                        let bytes = if p.is_null() {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(p, len)
                        };
                        Value::Text(String::from_utf8_lossy(bytes).into_owned())
                    }
                })
                .collect()
        }
    }
}

impl Drop for RawCursor {
    fn drop(&mut self) {
        // SAFETY: finalized once; its return code repeats the last step's
        // error, which the step already reported.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}

/// The connection's error for result code `rc`, classified like rusqlite's.
fn error(db: *mut ffi::sqlite3, rc: i32) -> StmtError {
    // SAFETY: `db` is live; the message is copied at once.
    let (ext, msg) = unsafe {
        let msg = ffi::sqlite3_errmsg(db);
        let text = if msg.is_null() {
            None
        } else {
            Some(CStr::from_ptr(msg).to_string_lossy().into_owned())
        };
        (ffi::sqlite3_extended_errcode(db), text)
    };
    let code = if ext & 0xff == rc & 0xff { ext } else { rc };
    classify(rusqlite::Error::SqliteFailure(ffi::Error::new(code), msg))
}
