//! Write lists (docs/design.md §2): the hidden `wl` column of every row, the
//! ids of the operations that produced each version of the row, oldest first
//! (`0` for an initial row, `k` for a row inserted by operation `k`, `,k`
//! appended by each later write). One type, parsed once where the engine's
//! answer is read ([`WriteList::from_value`]: MariaDB returns a one-entry
//! list as a number), so no oracle parses the text again.

use super::Value;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// A valid write list. Ordered and compared by its text (`"0,3"`), as the
/// histories and finding files store it. The text is shared: a version read
/// many times, and written over, is one allocation however often it is
/// cloned (a history of 10M transactions holds tens of millions of them).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteList(Arc<str>);

impl WriteList {
    /// Parses `0,3,7` (blanks around entries allowed); every entry must be
    /// an operation id.
    pub fn parse(text: &str) -> Result<WriteList, String> {
        let mut canonical = String::with_capacity(text.len());
        for (i, entry) in text.split(',').enumerate() {
            let op: u32 = entry
                .trim()
                .parse()
                .map_err(|_| format!("write list '{text}': '{entry}' is not an operation id"))?;
            if i > 0 {
                canonical.push(',');
            }
            canonical.push_str(&op.to_string());
        }
        Ok(WriteList(canonical.into()))
    }

    /// The write list in a value the engine returned: text, or a number
    /// (MariaDB's one-entry lists). `None` for NULL (the unmatched side of an
    /// outer join has no row).
    pub fn from_value(v: &Value) -> Result<Option<WriteList>, String> {
        match v {
            Value::Null => Ok(None),
            Value::Text(s) => WriteList::parse(s).map(Some),
            Value::Int(i) => WriteList::parse(&i.to_string()).map(Some),
            other => Err(format!("write list: unexpected value {other:?}")),
        }
    }

    /// The initial version of a row loaded with the case.
    pub fn initial() -> WriteList {
        WriteList("0".into())
    }

    /// The list of one operation (a row it inserted).
    pub fn of(op: u32) -> WriteList {
        WriteList(op.to_string().into())
    }

    /// The list with `op` appended (the version `op` writes over this one).
    pub fn then(&self, op: u32) -> WriteList {
        WriteList(format!("{},{op}", self.0).into())
    }

    /// The operation ids, oldest first.
    pub fn ops(&self) -> impl Iterator<Item = u32> + '_ {
        // Valid by construction: every entry parses.
        self.0.split(',').filter_map(|e| e.parse().ok())
    }

    /// The operation that wrote this version.
    pub fn last(&self) -> u32 {
        self.ops().last().unwrap_or_default()
    }

    /// The number of versions this one descends from, itself included.
    pub fn len(&self) -> usize {
        self.0.split(',').count()
    }

    /// Never: a write list has at least one entry.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The version this one was written over: `0,3,7` -> `0,3`.
    pub fn previous(&self) -> Option<WriteList> {
        self.0
            .rsplit_once(',')
            .map(|(prev, _)| WriteList(prev.into()))
    }

    /// Whether `other` descends from this version (or is it).
    pub fn is_prefix_of(&self, other: &WriteList) -> bool {
        *other.0 == *self.0
            || (other.0.starts_with(&*self.0)
                && other.0.as_bytes().get(self.0.len()) == Some(&b','))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WriteList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for WriteList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WriteList::parse(s)
    }
}

impl PartialEq<str> for WriteList {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for WriteList {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl Serialize for WriteList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for WriteList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        WriteList::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_normalises_and_refuses() {
        let wl = WriteList::parse(" 0, 3 ,7").unwrap();
        assert_eq!(wl.as_str(), "0,3,7");
        assert_eq!(wl.ops().collect::<Vec<_>>(), [0, 3, 7]);
        assert_eq!(wl.last(), 7);
        assert_eq!(wl.len(), 3);
        assert_eq!(wl.previous().unwrap().as_str(), "0,3");
        assert_eq!(WriteList::initial().previous(), None);
        for bad in ["", "x", "0,,3", "0,3,", "-1", "0;3"] {
            assert!(WriteList::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reads_engine_values() {
        assert_eq!(
            WriteList::from_value(&Value::Int(5)),
            Ok(Some(WriteList::of(5)))
        );
        assert_eq!(
            WriteList::from_value(&Value::Text("0,2".into())),
            Ok(Some(WriteList::initial().then(2)))
        );
        assert_eq!(WriteList::from_value(&Value::Null), Ok(None));
        assert!(WriteList::from_value(&Value::Bool(true)).is_err());
        assert!(WriteList::from_value(&Value::Text("0,a".into())).is_err());
    }

    #[test]
    fn prefixes_are_whole_entries() {
        let a = WriteList::parse("0,3").unwrap();
        assert!(a.is_prefix_of(&WriteList::parse("0,3,7").unwrap()));
        assert!(a.is_prefix_of(&a));
        assert!(!a.is_prefix_of(&WriteList::parse("0,37").unwrap()));
        assert!(!a.is_prefix_of(&WriteList::parse("0").unwrap()));
    }

    #[test]
    fn json_is_the_text_and_malformed_lists_are_refused() {
        let wl: WriteList = serde_json::from_str("\"0,4\"").unwrap();
        assert_eq!(serde_json::to_string(&wl).unwrap(), "\"0,4\"");
        assert!(serde_json::from_str::<WriteList>("\"x,y,,\"").is_err());
    }
}
