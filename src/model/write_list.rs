//! Write lists (docs/design.md §2): the hidden `wl` column of every row, the
//! ids of the operations that produced each version of the row, oldest first
//! (`0` for an initial row, `k` for a row inserted by operation `k`, `,k`
//! appended by each later write). One type, parsed once where the engine's
//! answer is read ([`WriteList::from_value`]: MariaDB returns a one-entry
//! list as a number), so no oracle parses the text again.

use super::Value;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

/// A valid write list: one node per version, naming the operation that
/// wrote it and sharing the version it was written over. A version read many
/// times, and written over, is one node however often it is cloned, and each
/// new version costs one node whatever the length of its list (a history of
/// 10M transactions holds tens of millions of them). Compared and ordered as
/// its text (`"0,3"`), as the histories and finding files store it.
#[derive(Clone)]
pub struct WriteList(Arc<Node>);

/// Each version parsed while [`WriteList::sharing`] runs, by its text.
type Shared = HashMap<Box<str>, WriteList>;

/// Each version's text written while [`WriteList::sharing`] runs, by its
/// node's address (the node is kept alive with it).
type Texts = HashMap<usize, (WriteList, Rc<str>)>;

thread_local! {
    static SHARED: RefCell<Option<Shared>> = const { RefCell::new(None) };
    static TEXTS: RefCell<Option<Texts>> = const { RefCell::new(None) };
}

struct Node {
    op: u32,
    /// Entries in the list, this one included.
    len: u32,
    prev: Option<WriteList>,
}

impl Drop for Node {
    /// Unlinks a long chain one node at a time (a recursive drop of a row
    /// written a million times would overflow the stack).
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(WriteList(node)) = next {
            match Arc::try_unwrap(node) {
                Ok(mut n) => next = n.prev.take(),
                Err(_) => break,
            }
        }
    }
}

impl WriteList {
    /// Parses `0,3,7` (blanks around entries allowed); every entry must be
    /// an operation id.
    pub fn parse(text: &str) -> Result<WriteList, String> {
        SHARED.with(|shared| match shared.borrow_mut().as_mut() {
            Some(seen) => WriteList::parse_shared(text, seen),
            None => WriteList::parse_entries(text, None),
        })
    }

    /// `text`'s entries appended to `list` (a new node each).
    fn parse_entries(text: &str, mut list: Option<WriteList>) -> Result<WriteList, String> {
        for entry in text.split(',') {
            let op: u32 = entry
                .trim()
                .parse()
                .map_err(|_| format!("write list '{text}': '{entry}' is not an operation id"))?;
            list = Some(WriteList::extend(list.as_ref(), op));
        }
        list.ok_or_else(|| format!("write list '{text}' is empty"))
    }

    /// `text` as the node parsed before for the same text, or as the node
    /// parsed before for its previous version with the last entry appended
    /// (versions are mostly read after the one they were written over),
    /// else as new nodes.
    fn parse_shared(text: &str, seen: &mut Shared) -> Result<WriteList, String> {
        if let Some(wl) = seen.get(text) {
            return Ok(wl.clone());
        }
        let wl = match text.rsplit_once(',') {
            Some((prev, last)) => match seen.get(prev) {
                Some(prev) => WriteList::parse_entries(last, Some(prev.clone()))?,
                None => WriteList::parse_entries(text, None)?,
            },
            None => WriteList::parse_entries(text, None)?,
        };
        seen.insert(text.into(), wl.clone());
        Ok(wl)
    }

    fn extend(list: Option<&WriteList>, op: u32) -> WriteList {
        match list {
            None => WriteList::of(op),
            Some(l) => l.then(op),
        }
    }

    /// The text of this version, built from its previous version's text,
    /// which is kept in `texts` for the versions written over it.
    fn text_in(&self, texts: &mut Texts) -> Rc<str> {
        let key = |v: &WriteList| Arc::as_ptr(&v.0) as usize;
        // Back to the newest version whose text is known, then forward.
        let mut missing = Vec::new();
        let mut known: Option<Rc<str>> = None;
        for v in self.versions() {
            if let Some((_, t)) = texts.get(&key(v)) {
                known = Some(t.clone());
                break;
            }
            missing.push(v);
        }
        for v in missing.into_iter().rev() {
            let text: Rc<str> = match known {
                Some(prev) => format!("{prev},{}", v.0.op).into(),
                None => v.0.op.to_string().into(),
            };
            texts.insert(key(v), (v.clone(), text.clone()));
            known = Some(text);
        }
        known.expect("a write list has at least one entry")
    }

    /// Runs `f` (reading or writing a history) with every write list it
    /// parses sharing its versions with the lists parsed before (the same
    /// version is one node, as in a history built in memory), and every
    /// text it writes built once per version.
    pub fn sharing<T>(f: impl FnOnce() -> T) -> T {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                SHARED.with(|s| s.borrow_mut().take());
                TEXTS.with(|s| s.borrow_mut().take());
            }
        }
        SHARED.with(|s| *s.borrow_mut() = Some(HashMap::default()));
        TEXTS.with(|s| *s.borrow_mut() = Some(HashMap::default()));
        let _reset = Reset;
        f()
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
        WriteList::of(0)
    }

    /// The list of one operation (a row it inserted).
    pub fn of(op: u32) -> WriteList {
        WriteList(Arc::new(Node {
            op,
            len: 1,
            prev: None,
        }))
    }

    /// The list with `op` appended (the version `op` writes over this one).
    pub fn then(&self, op: u32) -> WriteList {
        WriteList(Arc::new(Node {
            op,
            len: self.0.len + 1,
            prev: Some(self.clone()),
        }))
    }

    /// The versions from this one back to the first, newest first.
    pub fn versions(&self) -> impl Iterator<Item = &WriteList> + '_ {
        std::iter::successors(Some(self), |v| v.0.prev.as_ref())
    }

    /// The operation ids, oldest first.
    pub fn ops(&self) -> std::vec::IntoIter<u32> {
        self.op_vec().into_iter()
    }

    fn op_vec(&self) -> Vec<u32> {
        let mut ops: Vec<u32> = self.versions().map(|v| v.0.op).collect();
        ops.reverse();
        ops
    }

    /// The operation that wrote this version.
    pub fn last(&self) -> u32 {
        self.0.op
    }

    /// The number of versions this one descends from, itself included.
    pub fn len(&self) -> usize {
        self.0.len as usize
    }

    /// Never: a write list has at least one entry.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The version this one was written over: `0,3,7` -> `0,3`.
    pub fn previous(&self) -> Option<WriteList> {
        self.0.prev.clone()
    }

    /// Whether `other` descends from this version (or is it).
    pub fn is_prefix_of(&self, other: &WriteList) -> bool {
        let Some(back) = other.len().checked_sub(self.len()) else {
            return false;
        };
        other
            .versions()
            .nth(back)
            .is_some_and(|ancestor| ancestor.same_as(self))
    }

    /// This version's node, as an address: two lists have the same id while
    /// both are alive exactly when they are [`WriteList::same_node`]. Only
    /// meaningful while the list is alive (a freed node's address is reused).
    pub fn node_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The [`WriteList::node_id`] of the version this one was written over;
    /// 0 (no node's) for a list of one entry.
    pub fn previous_node_id(&self) -> usize {
        self.0.prev.as_ref().map_or(0, WriteList::node_id)
    }

    /// Whether both are the one shared version (equal lists may still be
    /// separate nodes: compare those with `==`).
    pub fn same_node(&self, other: &WriteList) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Equal lists of equal length: the same node, or the same entries.
    fn same_as(&self, other: &WriteList) -> bool {
        for (a, b) in self.versions().zip(other.versions()) {
            if Arc::ptr_eq(&a.0, &b.0) {
                return true;
            }
            if a.0.op != b.0.op {
                return false;
            }
        }
        true
    }
}

impl PartialEq for WriteList {
    fn eq(&self, other: &WriteList) -> bool {
        self.len() == other.len() && self.same_as(other)
    }
}

impl Eq for WriteList {}

impl std::hash::Hash for WriteList {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.len().hash(state);
        for v in self.versions() {
            v.0.op.hash(state);
        }
    }
}

impl Ord for WriteList {
    /// The order of the texts: entry by entry, each as its digits (a
    /// shorter entry or list that is a prefix of the other comes first, as
    /// `,` and the end of the text sort before any digit).
    fn cmp(&self, other: &WriteList) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            return std::cmp::Ordering::Equal;
        }
        let (a, b) = (self.op_vec(), other.op_vec());
        match a.iter().zip(&b).find(|(x, y)| x != y) {
            Some((x, y)) => x.to_string().cmp(&y.to_string()),
            None => a.len().cmp(&b.len()),
        }
    }
}

impl PartialOrd for WriteList {
    fn partial_cmp(&self, other: &WriteList) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for WriteList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WriteList({:?})", self.to_string())
    }
}

impl fmt::Display for WriteList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.ops().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{op}")?;
        }
        Ok(())
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
        WriteList::parse(other).is_ok_and(|o| *self == o)
    }
}

impl PartialEq<&str> for WriteList {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl Serialize for WriteList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = TEXTS.with(|t| t.borrow_mut().as_mut().map(|t| self.text_in(t)));
        match text {
            Some(text) => s.serialize_str(&text),
            None => s.collect_str(self),
        }
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
        assert_eq!(wl.to_string(), "0,3,7");
        assert_eq!(wl.ops().collect::<Vec<_>>(), [0, 3, 7]);
        assert_eq!(wl.last(), 7);
        assert_eq!(wl.len(), 3);
        assert_eq!(wl.previous().unwrap().to_string(), "0,3");
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

    /// Lists order, compare and hash as their texts do, shared or not.
    #[test]
    fn lists_order_as_their_texts() {
        let texts = [
            "0", "0,1", "0,1,5", "0,15", "0,2", "0,10", "0,9", "1", "10", "10,3", "2", "0,1,5,7",
        ];
        let mut lists: Vec<WriteList> = texts.iter().map(|t| t.parse().unwrap()).collect();
        lists.sort();
        let mut sorted = texts.to_vec();
        sorted.sort();
        let shown: Vec<String> = lists.iter().map(|l| l.to_string()).collect();
        assert_eq!(shown, sorted);
        // A list built by appends equals (and hashes as) the parsed one.
        let built = WriteList::initial().then(1).then(5);
        let parsed: WriteList = "0,1,5".parse().unwrap();
        assert_eq!(built, parsed);
        assert!(built == "0,1,5" && built != "0,1" && built != "0,15");
        let hash = |w: &WriteList| {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(w)
        };
        assert_eq!(hash(&built), hash(&parsed));
        assert!(built.previous().unwrap().is_prefix_of(&parsed));
        assert!(!"0,5".parse::<WriteList>().unwrap().is_prefix_of(&built));
    }

    /// A row written a million times: its list drops without recursion.
    #[test]
    fn a_long_list_drops() {
        let mut wl = WriteList::initial();
        for op in 1..1_000_000 {
            wl = wl.then(op);
        }
        assert_eq!((wl.len(), wl.last()), (1_000_000, 999_999));
        drop(wl);
    }

    #[test]
    fn json_is_the_text_and_malformed_lists_are_refused() {
        let wl: WriteList = serde_json::from_str("\"0,4\"").unwrap();
        assert_eq!(serde_json::to_string(&wl).unwrap(), "\"0,4\"");
        assert!(serde_json::from_str::<WriteList>("\"x,y,,\"").is_err());
    }
}
