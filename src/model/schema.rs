//! Schemas of generated databases. The hidden instrumentation columns `rid` and
//! `wl` (docs/design.md §2) are not part of [`Table::columns`]; renderers add them.

use super::stmt::Expr;
use super::value::Value;
use serde::{Deserialize, Serialize};

/// Name of the hidden row-id column.
pub const RID: &str = "rid";
/// Name of the hidden write-list column.
pub const WL: &str = "wl";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColType {
    Int,
    BigInt,
    /// DECIMAL(10,2)
    Decimal,
    /// VARCHAR(n)
    Varchar(u16),
    Text,
    Bool,
}

impl ColType {
    pub fn is_numeric(self) -> bool {
        matches!(self, ColType::Int | ColType::BigInt | ColType::Decimal)
    }
    /// Whether a column of this type may be part of a key or index in every
    /// supported dialect (MySQL cannot index TEXT without a prefix length).
    pub fn indexable(self) -> bool {
        !matches!(self, ColType::Text)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    #[serde(default)]
    pub not_null: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Index {
    pub name: String,
    pub columns: Vec<String>,
    #[serde(default)]
    pub unique: bool,
}

/// What a foreign key does to child rows when their parent row is deleted or
/// its key changes (`ON DELETE` / `ON UPDATE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FkAction {
    /// The default: the statement fails if children remain (at the end of
    /// the statement, or at COMMIT when the constraint is deferred).
    #[default]
    NoAction,
    /// Fails at once, even when the constraint is deferred.
    Restrict,
    /// The children are deleted, or take the new key.
    Cascade,
    /// The children's key columns become NULL.
    SetNull,
}

impl FkAction {
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
        }
    }
    /// Whether the action writes child rows (writes instrumentation cannot
    /// observe: they belong to no statement of the case).
    pub fn writes_children(self) -> bool {
        matches!(self, FkAction::Cascade | FkAction::SetNull)
    }
    fn is_default(&self) -> bool {
        *self == FkAction::NoAction
    }
}

/// When a DEFERRABLE constraint is checked by default (`SET CONSTRAINTS`
/// changes it for a transaction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Deferral {
    /// `DEFERRABLE INITIALLY IMMEDIATE`: after each statement.
    InitiallyImmediate,
    /// `DEFERRABLE INITIALLY DEFERRED`: at COMMIT.
    InitiallyDeferred,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub columns: Vec<String>,
    pub ref_table: String,
    pub ref_columns: Vec<String>,
    #[serde(default, skip_serializing_if = "FkAction::is_default")]
    pub on_delete: FkAction,
    #[serde(default, skip_serializing_if = "FkAction::is_default")]
    pub on_update: FkAction,
    /// `None`: NOT DEFERRABLE (checked after each statement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferrable: Option<Deferral>,
}

impl ForeignKey {
    /// Whether a statement that deletes parent rows (`delete`) or assigns
    /// their referenced columns (`assigned`) may write child rows through an
    /// action of this key.
    pub fn writes_children(&self, delete: bool, assigned: &[String]) -> bool {
        (delete && self.on_delete.writes_children())
            || (self.on_update.writes_children()
                && assigned.iter().any(|c| self.ref_columns.contains(c)))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// Empty: no primary key.
    #[serde(default)]
    pub primary_key: Vec<String>,
    /// UNIQUE table constraints.
    #[serde(default)]
    pub uniques: Vec<Vec<String>>,
    /// CHECK table constraints (expressions over this table's columns).
    #[serde(default)]
    pub checks: Vec<Expr>,
    /// Secondary indexes, created after the table.
    #[serde(default)]
    pub indexes: Vec<Index>,
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKey>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
    /// Every set of columns whose values must be unique (primary key first).
    pub fn unique_keys(&self) -> Vec<&[String]> {
        let mut keys: Vec<&[String]> = Vec::new();
        if !self.primary_key.is_empty() {
            keys.push(&self.primary_key);
        }
        keys.extend(self.uniques.iter().map(|u| u.as_slice()));
        keys.extend(
            self.indexes
                .iter()
                .filter(|i| i.unique)
                .map(|i| i.columns.as_slice()),
        );
        keys
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    pub tables: Vec<Table>,
}

impl Schema {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
    /// The tables on either side of a foreign key checked at COMMIT by
    /// default (`DEFERRABLE INITIALLY DEFERRED`): replays that run a
    /// transaction's statements on their own check it after each statement
    /// instead, which matters only where a statement writes one of them.
    pub fn deferred_key_tables(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for t in &self.tables {
            for fk in &t.foreign_keys {
                if fk.deferrable == Some(Deferral::InitiallyDeferred) {
                    out.insert(t.name.clone());
                    out.insert(fk.ref_table.clone());
                }
            }
        }
        out
    }
}

/// One initial row: its row id and its values in [`Table::columns`] order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub rid: i64,
    pub values: Vec<Value>,
}

/// The initial contents of one table (each row starts with write list `'0'`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableData {
    pub table: String,
    pub rows: Vec<Row>,
}
