//! The JSON form of [`Stmt`]: serde's externally tagged enum (`"commit"`,
//! `{"update": {...}}`), with a plain BEGIN written `"begin"` and BEGIN with
//! options `{"begin": {"mode": "immediate"}}`. Both forms are read, so case
//! files of format 1 (where BEGIN carried nothing) still load.

use super::begin::Begin;
use super::stmt::Stmt;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

const KINDS: &[&str] = &[
    "begin",
    "commit",
    "rollback",
    "savepoint",
    "rollback_to",
    "release",
    "set_constraints",
    "select",
    "insert",
    "update",
    "delete",
    "fetch",
    "close",
];

impl Serialize for Stmt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const NAME: &str = "Stmt";
        match self {
            Stmt::Begin(b) if *b == Begin::default() => s.serialize_unit_variant(NAME, 0, "begin"),
            Stmt::Begin(b) => s.serialize_newtype_variant(NAME, 0, "begin", b),
            Stmt::Commit => s.serialize_unit_variant(NAME, 1, "commit"),
            Stmt::Rollback => s.serialize_unit_variant(NAME, 2, "rollback"),
            Stmt::Savepoint(n) => s.serialize_newtype_variant(NAME, 3, "savepoint", n),
            Stmt::RollbackTo(n) => s.serialize_newtype_variant(NAME, 4, "rollback_to", n),
            Stmt::SetConstraints(t) => s.serialize_newtype_variant(NAME, 5, "set_constraints", t),
            Stmt::Select(q) => s.serialize_newtype_variant(NAME, 6, "select", q),
            Stmt::Insert(i) => s.serialize_newtype_variant(NAME, 7, "insert", i),
            Stmt::Update(u) => s.serialize_newtype_variant(NAME, 8, "update", u),
            Stmt::Delete(d) => s.serialize_newtype_variant(NAME, 9, "delete", d),
            Stmt::Release(n) => s.serialize_newtype_variant(NAME, 10, "release", n),
            Stmt::Fetch(f) => s.serialize_newtype_variant(NAME, 11, "fetch", f),
            Stmt::Close(n) => s.serialize_newtype_variant(NAME, 12, "close", n),
        }
    }
}

struct StmtVisitor;

impl<'de> Visitor<'de> for StmtVisitor {
    type Value = Stmt;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a statement: \"begin\", \"commit\", \"rollback\" or an object with one key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Stmt, E> {
        match v {
            "begin" => Ok(Stmt::Begin(Begin::default())),
            "commit" => Ok(Stmt::Commit),
            "rollback" => Ok(Stmt::Rollback),
            other if KINDS.contains(&other) => Err(E::custom(format!(
                "statement kind \"{other}\" needs its content ({{\"{other}\": ...}})"
            ))),
            other => Err(E::unknown_variant(other, KINDS)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Stmt, A::Error> {
        let Some(key) = map.next_key::<String>()? else {
            return Err(de::Error::custom("an empty object is not a statement"));
        };
        let stmt = match key.as_str() {
            "begin" => Stmt::Begin(map.next_value()?),
            "commit" => {
                map.next_value::<()>()?;
                Stmt::Commit
            }
            "rollback" => {
                map.next_value::<()>()?;
                Stmt::Rollback
            }
            "savepoint" => Stmt::Savepoint(name(map.next_value()?)?),
            "rollback_to" => Stmt::RollbackTo(name(map.next_value()?)?),
            "release" => Stmt::Release(name(map.next_value()?)?),
            "set_constraints" => Stmt::SetConstraints(map.next_value()?),
            "select" => Stmt::Select(map.next_value()?),
            "insert" => Stmt::Insert(map.next_value()?),
            "update" => Stmt::Update(map.next_value()?),
            "delete" => Stmt::Delete(map.next_value()?),
            "fetch" => Stmt::Fetch(map.next_value()?),
            "close" => Stmt::Close(name(map.next_value()?)?),
            other => return Err(de::Error::unknown_variant(other, KINDS)),
        };
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(format!(
                "a statement object has one key (\"{key}\" and more given)"
            )));
        }
        Ok(stmt)
    }
}

/// A savepoint or cursor name, through the identifier gate
/// ([`super::ident`]).
fn name<E: de::Error>(s: String) -> Result<String, E> {
    super::ident::check(&s).map_err(E::custom)?;
    Ok(s)
}

impl<'de> Deserialize<'de> for Stmt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Stmt, D::Error> {
        d.deserialize_any(StmtVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ConstraintTiming, StartMode};

    fn round_trip(s: &Stmt) -> String {
        let json = serde_json::to_string(s).unwrap();
        let back: Stmt = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, s, "{json}");
        json
    }

    #[test]
    fn a_plain_begin_keeps_the_format_1_spelling() {
        assert_eq!(round_trip(&Stmt::Begin(Begin::default())), "\"begin\"");
        assert_eq!(round_trip(&Stmt::Commit), "\"commit\"");
        assert_eq!(
            round_trip(&Stmt::Release("sp1".into())),
            "{\"release\":\"sp1\"}"
        );
        assert_eq!(
            round_trip(&Stmt::Fetch(crate::model::Fetch {
                cursor: "c1".into(),
                rows: 2
            })),
            "{\"fetch\":{\"cursor\":\"c1\",\"rows\":2}}"
        );
        assert_eq!(round_trip(&Stmt::Close("c1".into())), "{\"close\":\"c1\"}");
        assert_eq!(
            round_trip(&Stmt::SetConstraints(ConstraintTiming::Deferred)),
            "{\"set_constraints\":\"deferred\"}"
        );
    }

    #[test]
    fn begin_options_round_trip() {
        let b = Begin {
            mode: StartMode::ConsistentSnapshot,
            read_only: true,
            deferrable: false,
        };
        assert_eq!(
            round_trip(&Stmt::Begin(b)),
            "{\"begin\":{\"mode\":\"consistent-snapshot\",\"read_only\":true}}"
        );
        let parsed: Stmt = serde_json::from_str("{\"begin\":{}}").unwrap();
        assert_eq!(parsed, Stmt::Begin(Begin::default()));
    }

    #[test]
    fn malformed_statements_are_refused_with_a_reason() {
        for (json, says) in [
            ("\"begun\"", "unknown variant `begun`"),
            ("\"update\"", "needs its content"),
            (
                "{\"begin\":{\"mode\":\"sideways\"}}",
                "unknown variant `sideways`",
            ),
            (
                "{\"begin\":{\"modes\":\"immediate\"}}",
                "unknown field `modes`",
            ),
            ("{\"commit\":null,\"rollback\":null}", "has one key"),
            ("{}", "empty object"),
            ("7", "a statement"),
        ] {
            let e = serde_json::from_str::<Stmt>(json).unwrap_err().to_string();
            assert!(e.contains(says), "{json}: {e}");
        }
    }
}
