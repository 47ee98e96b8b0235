//! The gate for names and setting values read from case and finding files.
//!
//! txfuzz joins identifiers into SQL as they are spelt (unquoted, in every
//! dialect and every export), so a name from a file a stranger wrote could
//! otherwise carry SQL of its own (`t0; DROP TABLE x`, a `--` comment, an
//! `ATTACH` on SQLite). Every identifier field of the case model is read
//! through [`de`] (or its list forms), so a file is refused while it is
//! parsed, before any connection is made, by every command that reads one
//! (`replay`, `reduce`, `check`, `export`, `report`, `merge`). A name is
//! admitted when it is one plain token in every dialect: an ASCII letter or
//! `_`, then letters, digits and `_`, at most [`MAX_LEN`] characters, and
//! not a reserved word ([`RESERVED`]). Generated names
//! (`t0`, `c3`, `i_t0_1`, `a0`, `sp1`, `rid`, `wl`) all qualify.
//!
//! Numbers are gated by [`super::Value`]'s own reading (a `real` must be a
//! decimal number) and text literals are escaped when rendered
//! (`crate::sql::render_value`).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// The longest name admitted: MySQL's limit is 64, and txfuzz derives
/// names of its own from table names (`t0_txfuzz_i`, `t0_txfuzz_s`).
pub const MAX_LEN: usize = 48;

/// Words that a statement txfuzz renders could read as syntax rather than a
/// name: SQLite's keywords ("SQL Keywords") and the common reserved words of
/// MySQL 9.7, MariaDB 11.8 and PostgreSQL 18 (MySQL 9.7 Reference Manual
/// 11.3 "Keywords and Reserved Words", MariaDB KB "Reserved Words",
/// PostgreSQL 18 Appendix C), lower case. Not their complete union: a name
/// the list misses is still one plain token (the grammar sees to that), at
/// worst a syntax error the engine reports; the list turns the likely ones
/// into a refusal on load. It errs on the side of refusing (`action`,
/// `plan` are names outside SQLite): a case file needs only txfuzz's names.
pub const RESERVED: &[&str] = &[
    "abort",
    "action",
    "add",
    "after",
    "all",
    "alter",
    "always",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asensitive",
    "attach",
    "autoincrement",
    "before",
    "begin",
    "between",
    "bigint",
    "binary",
    "blob",
    "both",
    "by",
    "call",
    "cascade",
    "case",
    "cast",
    "change",
    "char",
    "character",
    "check",
    "collate",
    "column",
    "commit",
    "condition",
    "conflict",
    "constraint",
    "continue",
    "convert",
    "create",
    "cross",
    "current",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "cursor",
    "database",
    "databases",
    "day_hour",
    "day_microsecond",
    "day_minute",
    "day_second",
    "dec",
    "decimal",
    "declare",
    "default",
    "deferrable",
    "deferred",
    "delayed",
    "delete",
    "desc",
    "describe",
    "detach",
    "deterministic",
    "distinct",
    "distinctrow",
    "div",
    "do",
    "double",
    "drop",
    "dual",
    "each",
    "else",
    "elseif",
    "enclosed",
    "end",
    "escape",
    "escaped",
    "except",
    "exclude",
    "exclusive",
    "exists",
    "exit",
    "explain",
    "fail",
    "false",
    "fetch",
    "filter",
    "first",
    "float",
    "float4",
    "float8",
    "following",
    "for",
    "force",
    "foreign",
    "from",
    "full",
    "fulltext",
    "function",
    "generated",
    "get",
    "glob",
    "grant",
    "group",
    "grouping",
    "groups",
    "having",
    "high_priority",
    "hour_microsecond",
    "hour_minute",
    "hour_second",
    "if",
    "ignore",
    "immediate",
    "in",
    "index",
    "indexed",
    "infile",
    "initially",
    "inner",
    "inout",
    "insensitive",
    "insert",
    "instead",
    "int",
    "int1",
    "int2",
    "int3",
    "int4",
    "int8",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "iterate",
    "join",
    "key",
    "keys",
    "kill",
    "last",
    "lateral",
    "lead",
    "leading",
    "leave",
    "left",
    "like",
    "limit",
    "linear",
    "lines",
    "load",
    "localtime",
    "localtimestamp",
    "lock",
    "long",
    "longblob",
    "longtext",
    "loop",
    "low_priority",
    "match",
    "materialized",
    "maxvalue",
    "mediumblob",
    "mediumint",
    "mediumtext",
    "middleint",
    "minute_microsecond",
    "minute_second",
    "mod",
    "modifies",
    "natural",
    "no",
    "not",
    "nothing",
    "notnull",
    "null",
    "nulls",
    "numeric",
    "of",
    "offset",
    "on",
    "only",
    "optimize",
    "option",
    "optionally",
    "or",
    "order",
    "others",
    "out",
    "outer",
    "outfile",
    "over",
    "partition",
    "placing",
    "plan",
    "pragma",
    "preceding",
    "precision",
    "primary",
    "procedure",
    "purge",
    "query",
    "raise",
    "range",
    "read",
    "reads",
    "real",
    "recursive",
    "references",
    "regexp",
    "reindex",
    "release",
    "rename",
    "repeat",
    "replace",
    "require",
    "resignal",
    "restrict",
    "return",
    "returning",
    "revoke",
    "right",
    "rlike",
    "rollback",
    "row",
    "rows",
    "savepoint",
    "schema",
    "schemas",
    "second_microsecond",
    "select",
    "sensitive",
    "separator",
    "session_user",
    "set",
    "show",
    "signal",
    "similar",
    "smallint",
    "some",
    "spatial",
    "specific",
    "sql",
    "sql_big_result",
    "sql_calc_found_rows",
    "sql_small_result",
    "sqlexception",
    "sqlstate",
    "sqlwarning",
    "ssl",
    "starting",
    "stored",
    "straight_join",
    "symmetric",
    "system_user",
    "table",
    "temp",
    "temporary",
    "terminated",
    "then",
    "ties",
    "tinyblob",
    "tinyint",
    "tinytext",
    "to",
    "trailing",
    "transaction",
    "trigger",
    "true",
    "unbounded",
    "undo",
    "union",
    "unique",
    "unlock",
    "unsigned",
    "update",
    "usage",
    "use",
    "user",
    "using",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "vacuum",
    "values",
    "varbinary",
    "varchar",
    "varcharacter",
    "variadic",
    "varying",
    "verbose",
    "view",
    "virtual",
    "when",
    "where",
    "while",
    "window",
    "with",
    "without",
    "write",
    "xor",
    "year_month",
    "zerofill",
];

/// Whether `name` may stand unquoted for a table, column, index, alias,
/// savepoint, cursor or setting in every dialect txfuzz renders.
pub fn check(name: &str) -> Result<(), String> {
    let shown = || {
        let mut s: String = name.chars().take(40).collect();
        if name.chars().count() > 40 {
            s.push_str("...");
        }
        format!("{s:?}")
    };
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "name {} is not an identifier txfuzz writes (an ASCII letter or _, then letters, \
             digits or _)",
            shown()
        ));
    }
    if name.len() > MAX_LEN {
        return Err(format!(
            "name {} is longer than {MAX_LEN} characters",
            shown()
        ));
    }
    if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!("name {} is a reserved word in SQL", shown()));
    }
    Ok(())
}

/// Whether `value` may follow `name =` in a session setting: a word, a
/// number or a level (`ON`, `8`, `READ-COMMITTED`, `0.5`), nothing quoted.
pub fn check_setting_value(value: &str) -> Result<(), String> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "setting value {value:?} is not a word or number (letters, digits, _ - . +)"
        ))
    }
}

/// Reads one identifier through [`check`].
pub fn de<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    check(&s).map_err(D::Error::custom)?;
    Ok(s)
}

/// Reads an optional identifier through [`check`].
pub fn de_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    if let Some(s) = &s {
        check(s).map_err(D::Error::custom)?;
    }
    Ok(s)
}

/// Reads a list of identifiers through [`check`].
pub fn de_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for s in &v {
        check(s).map_err(D::Error::custom)?;
    }
    Ok(v)
}

/// Reads a list of identifier lists (UNIQUE constraints) through [`check`].
pub fn de_lists<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<String>>, D::Error> {
    let v = Vec::<Vec<String>>::deserialize(d)?;
    for s in v.iter().flatten() {
        check(s).map_err(D::Error::custom)?;
    }
    Ok(v)
}

/// Reads session settings: names through [`check`], values through
/// [`check_setting_value`].
pub fn de_settings<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    let m = std::collections::BTreeMap::<String, String>::deserialize(d)?;
    for (name, value) in &m {
        check(name).map_err(D::Error::custom)?;
        check_setting_value(value).map_err(D::Error::custom)?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_pass_and_hostile_ones_do_not() {
        for ok in ["t0", "c12", "i_t0_1", "a0", "sp1", "rid", "wl", "_x", "T0"] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "0t",
            "t0; DROP TABLE x",
            "t0--",
            "t`0",
            "t\"0",
            "t'0",
            "t0\0",
            "t\u{0430}",
            "select",
            "ATTACH",
            "key",
            &"x".repeat(MAX_LEN + 1),
        ] {
            assert!(check(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn setting_values_are_words_or_numbers() {
        for ok in ["ON", "off", "8", "READ-COMMITTED", "0.5"] {
            assert_eq!(check_setting_value(ok), Ok(()), "{ok}");
        }
        for bad in ["", "ON'; DROP TABLE x; --", "1 2", "a;b", "x\0"] {
            assert!(check_setting_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_reserved_list_is_sorted_lower_case_and_without_duplicates() {
        let mut sorted = RESERVED.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, RESERVED, "keep RESERVED sorted, lower case, unique");
        assert!(RESERVED.iter().all(|w| *w == w.to_ascii_lowercase()));
    }
}
