//! The row triggers that report what an INSERT or a DELETE did on MySQL,
//! which has no RETURNING ([`crate::instrument::UpdateCapture::UserVariable`]
//! without `returning`), created with each instrumented table.
//!
//! They record only while the session's `@txfuzz_op` is set (the statement's
//! `pre`), into `@txfuzz_w`: `rid:wl!` for each row inserted or deleted, as
//! it is. AFTER triggers only: one can change nothing of the row, so the
//! server marks none of its columns written (a BEFORE UPDATE trigger that
//! reads `NEW.k` makes MySQL 9.7 and MariaDB 11.8 treat `k` as written, and
//! an UPDATE that scans an index over `k` then collects its rows before
//! changing any: a partly done UPDATE is no longer visible to a READ
//! UNCOMMITTED reader). Foreign-key actions fire no trigger (MySQL Reference
//! Manual "FOREIGN KEY Constraints", Referential Actions: "Cascaded foreign
//! key actions do not activate triggers"; MySQL 9.7 can fire them for the
//! SQL layer's cascades, but only with `enable_cascade_triggers`, which
//! txfuzz does not set), as before: their writes stay unobserved. A table
//! with a DELETE trigger makes REPLACE delete and insert where it would
//! update in place (`write_record` in sql/sql_insert.cc: "Another case when
//! conversion should not be performed is when we have ON DELETE trigger on
//! table so user may notice that we cheat here"), so MySQL's profile
//! generates no REPLACE. The shadow run checks the rest.

use crate::model::{Table, RID, WL};

/// The user variable captured writes are appended to.
pub const CAPTURE_VAR: &str = "@txfuzz_w";
/// The user variable that gives the capture triggers the statement's op;
/// NULL: they record nothing (every other write, the loader's fill).
pub const OP_VAR: &str = "@txfuzz_op";

/// `CREATE TRIGGER` statements for `t` (instrumented layout): AFTER INSERT
/// and AFTER DELETE.
pub fn capture_triggers(t: &Table) -> Vec<String> {
    let name = &t.name;
    let after = |event: &str, side: &str, tag: &str| {
        format!(
            "CREATE TRIGGER {name}_txfuzz_{tag} AFTER {event} ON {name} FOR EACH ROW \
             IF {OP_VAR} IS NOT NULL THEN SET {CAPTURE_VAR} = CONCAT_WS(';', {CAPTURE_VAR}, \
             CONCAT({side}.{RID}, ':', {side}.{WL}, '!')); END IF"
        )
    };
    vec![after("INSERT", "NEW", "i"), after("DELETE", "OLD", "d")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::kv_table;

    #[test]
    fn the_triggers_record_rows_as_they_are_only_while_an_op_is_set() {
        let ddl = capture_triggers(&kv_table("t"));
        assert_eq!(ddl.len(), 2);
        assert!(ddl[0].contains("AFTER INSERT ON t"));
        assert!(ddl[0].contains("CONCAT(NEW.rid, ':', NEW.wl, '!')"));
        assert!(ddl[1].contains("AFTER DELETE ON t"));
        assert!(ddl[1].contains("CONCAT(OLD.rid, ':', OLD.wl, '!')"));
        assert!(ddl.iter().all(|s| s.contains("IF @txfuzz_op IS NOT NULL")));
        assert!(ddl
            .iter()
            .all(|s| !s.contains("NEW.k") && !s.contains("UPDATE")));
    }
}
