//! A table's name in a checker history: one shared allocation per table
//! however many operations name it (a history of 10M transactions names its
//! tables 50M times).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName(Arc<str>);

/// The names interned on this thread; histories name few tables, so a short
/// list searched linearly (a name beyond it gets its own allocation).
const INTERNED: usize = 64;

thread_local! {
    static NAMES: RefCell<Vec<Arc<str>>> = const { RefCell::new(Vec::new()) };
}

impl TableName {
    pub fn new(name: &str) -> TableName {
        NAMES.with(|names| {
            let mut names = names.borrow_mut();
            if let Some(n) = names.iter().find(|n| &***n == name) {
                return TableName(n.clone());
            }
            let n: Arc<str> = Arc::from(name);
            if names.len() < INTERNED {
                names.push(n.clone());
            }
            TableName(n)
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for TableName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for TableName {
    fn from(name: &str) -> TableName {
        TableName::new(name)
    }
}

impl From<String> for TableName {
    fn from(name: String) -> TableName {
        TableName::new(&name)
    }
}

impl From<&String> for TableName {
    fn from(name: &String) -> TableName {
        TableName::new(name)
    }
}

impl PartialEq<str> for TableName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for TableName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl Serialize for TableName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TableName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TableName, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = TableName;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TableName, E> {
                Ok(TableName::new(v))
            }
        }
        d.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_is_one_allocation_and_reads_as_text() {
        let a = TableName::from("t0");
        let b: TableName = serde_json::from_str("\"t0\"").unwrap();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, b);
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"t0\"");
        assert_eq!(&*a, "t0");
        assert_ne!(TableName::from("t1"), a);
    }
}
