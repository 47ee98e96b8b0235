//! Tables, columns, constraints, initial rows and literal values.
//!
//! Value domains are tiny so that values collide: integers in -5..=20, decimals
//! with cents in {0, 25, 50, 75} (exact in binary floating point too, so SQLite's
//! REAL sums stay exact), strings from a small lowercase alphabet (no quotes,
//! backslashes, spaces or upper case, so collations and PAD SPACE never matter).

use super::Gen;
use crate::model::{
    BinOp, ColType, Column, Deferral, Expr, FkAction, ForeignKey, Index, Row, Table, TableData,
    Value,
};

pub(crate) const INT_LO: i64 = -5;
pub(crate) const INT_HI: i64 = 20;
pub(super) const STRINGS: &[&str] = &["a", "b", "c", "ab", "ba", "abc", "bb", "ca"];
/// Types for the first column (a likely key column).
const KEY_TYPES: &[ColType] = &[
    ColType::Int,
    ColType::Int,
    ColType::Int,
    ColType::BigInt,
    ColType::Decimal,
    ColType::Varchar(8),
];
const VARCHAR_LENS: &[u16] = &[4, 8, 16];
/// How often a table after the first refers to an earlier one (percent):
/// 60 makes concurrent parent/child writes common (BENCHMARKS.md).
const FK_PCT: u64 = 60;

/// Whether a column may be part of a generated key or index (not TEXT, and not
/// BOOLEAN: a boolean key would allow at most two rows).
pub(crate) fn keyable(ty: ColType) -> bool {
    ty.indexable() && ty != ColType::Bool
}

impl Gen<'_> {
    /// A random value of a column type (never NULL).
    pub(crate) fn random_value(&mut self, ty: ColType) -> Value {
        match ty {
            ColType::Int | ColType::BigInt => Value::Int(self.rng.range(INT_LO, INT_HI)),
            ColType::Decimal => {
                let units = self.rng.range(INT_LO, INT_HI);
                let cents = *self.rng.pick(&[0, 0, 25, 50, 75]);
                Value::decimal_cents(units * 100 + cents)
            }
            ColType::Varchar(_) | ColType::Text => {
                Value::Text((*self.rng.pick(STRINGS)).to_string())
            }
            ColType::Bool => Value::Bool(self.rng.chance(1, 2)),
        }
    }

    /// A non-NULL value of column `c` of table `t` from a known row, if any.
    pub(crate) fn known_value(&mut self, t: usize, c: usize) -> Option<Value> {
        let vals: Vec<&Value> = self
            .known
            .get(t)?
            .iter()
            .filter_map(|r| r.get(c))
            .filter(|v| !v.is_null())
            .collect();
        self.rng.try_pick(&vals).map(|v| (*v).clone())
    }

    /// A value for column `c` of table `t`: a known one `known_pct`% of the time
    /// (when one exists), otherwise a random one.
    pub(crate) fn value_for(&mut self, t: usize, c: usize, known_pct: u64) -> Value {
        if self.rng.chance(known_pct, 100) {
            if let Some(v) = self.known_value(t, c) {
                return v;
            }
        }
        let ty = self.schema.tables[t].columns[c].ty;
        self.random_value(ty)
    }

    /// The parent table and parent column index of column `c` of table `t`, if
    /// that column is a foreign key.
    pub(crate) fn fk_parent(&self, t: usize, c: usize) -> Option<(usize, usize)> {
        let table = &self.schema.tables[t];
        let name = &table.columns[c].name;
        let fk = table
            .foreign_keys
            .iter()
            .find(|f| f.columns.first() == Some(name))?;
        let p = self
            .schema
            .tables
            .iter()
            .position(|x| x.name == fk.ref_table)?;
        let pc = self.schema.tables[p]
            .columns
            .iter()
            .position(|x| Some(&x.name) == fk.ref_columns.first())?;
        Some((p, pc))
    }

    pub(crate) fn gen_schema(&mut self) {
        let n = self.rng.range(1, self.cfg.max_tables.max(1) as i64) as usize;
        for i in 0..n {
            let t = self.gen_table(i);
            self.schema.tables.push(t);
            self.known.push(Vec::new());
        }
    }

    fn gen_table(&mut self, i: usize) -> Table {
        let ncols = 1 + self.rng.weighted(&[15, 35, 30, 20]);
        let mut columns = self.gen_columns(ncols);
        let fk = self.gen_foreign_key(i, &mut columns);
        let keyable_cols: Vec<usize> = (0..ncols).filter(|&k| keyable(columns[k].ty)).collect();
        let pk = self.gen_primary_key(&keyable_cols);
        for &k in &pk {
            columns[k].not_null = true;
        }
        for (k, col) in columns.iter_mut().enumerate() {
            if pk.contains(&k) {
                continue;
            }
            col.not_null = self.rng.chance(1, 4);
            if col.ty != ColType::Text && self.rng.chance(1, 5) {
                col.default = Some(self.random_value(col.ty));
            }
        }
        let mut fk = fk;
        if let Some((k, f)) = &mut fk {
            // SET NULL on a NOT NULL column would fail every parent change.
            for action in [&mut f.on_delete, &mut f.on_update] {
                if *action == FkAction::SetNull && columns[*k].not_null {
                    *action = FkAction::NoAction;
                }
            }
        }
        let uniques = self.gen_uniques(&keyable_cols, &pk, &columns);
        let checks = self.gen_checks(&columns);
        if let Some((k, f)) = &mut fk {
            let mut checked = std::collections::BTreeSet::new();
            for c in &checks {
                crate::model::walk::expr_columns(c, &mut checked);
            }
            if !self.cfg.features.fk_actions_on_checked_columns
                && checked.contains(&columns[*k].name)
            {
                for action in [&mut f.on_delete, &mut f.on_update] {
                    if action.writes_children() {
                        *action = FkAction::NoAction;
                    }
                }
            }
        }
        let indexes = self.gen_indexes(i, &keyable_cols, &pk, &columns);
        // A sole INT key, unchecked and no child column, is the engine's
        // key generator a third of the time (MariaDB refuses CHECKs on an
        // AUTO_INCREMENT column, and keys given by a parent must not be
        // generated).
        if let [k] = pk[..] {
            let mut checked = std::collections::BTreeSet::new();
            for c in &checks {
                crate::model::walk::expr_columns(c, &mut checked);
            }
            let child = fk.as_ref().is_some_and(|(fk_col, _)| *fk_col == k);
            if columns[k].ty == ColType::Int
                && !checked.contains(&columns[k].name)
                && !child
                && self.rng.chance(1, 3)
            {
                columns[k].auto_key = true;
                columns[k].default = None;
            }
        }
        let name = |k: usize| columns[k].name.clone();
        Table {
            name: format!("t{i}"),
            primary_key: pk.iter().map(|&k| name(k)).collect(),
            uniques,
            checks,
            indexes,
            foreign_keys: fk.map(|(_, f)| vec![f]).unwrap_or_default(),
            columns,
        }
    }

    /// `ncols` columns c0.. of random types (the first of a key type),
    /// nullable and without defaults.
    fn gen_columns(&mut self, ncols: usize) -> Vec<Column> {
        let mut columns = Vec::with_capacity(ncols);
        for k in 0..ncols {
            let ty = if k == 0 {
                *self.rng.pick(KEY_TYPES)
            } else {
                match self.rng.below(9) {
                    0..=1 => ColType::Int,
                    2 => ColType::BigInt,
                    3 => ColType::Decimal,
                    4..=5 => ColType::Varchar(*self.rng.pick(VARCHAR_LENS)),
                    6 => ColType::Text,
                    _ => ColType::Bool,
                }
            };
            columns.push(Column {
                name: format!("c{k}"),
                ty,
                not_null: false,
                default: None,
                auto_key: false,
            });
        }
        columns
    }

    /// Maybe a foreign key of table `i` to an earlier table with a
    /// single-column primary key: the child column takes the parent key's type.
    fn gen_foreign_key(&mut self, i: usize, columns: &mut [Column]) -> Option<(usize, ForeignKey)> {
        if !(self.cfg.features.foreign_keys && i > 0 && self.rng.chance(FK_PCT, 100)) {
            return None;
        }
        let parents: Vec<usize> = (0..i)
            .filter(|&p| self.schema.tables[p].primary_key.len() == 1)
            .collect();
        let &p = self.rng.try_pick(&parents)?;
        let parent = &self.schema.tables[p];
        let pk = parent.primary_key[0].clone();
        let pty = parent.column(&pk).map(|c| c.ty)?;
        let k = self.rng.below(columns.len() as u64) as usize;
        columns[k].ty = pty;
        let mut fk = ForeignKey {
            columns: vec![columns[k].name.clone()],
            ref_table: parent.name.clone(),
            ref_columns: vec![pk],
            ..ForeignKey::default()
        };
        self.gen_fk_semantics(&mut fk);
        Some((k, fk))
    }

    /// The key's actions and deferral, from what the engine supports
    /// (`gen_table` turns SET NULL on a NOT NULL child column into NO ACTION).
    fn gen_fk_semantics(&mut self, fk: &mut ForeignKey) {
        const ACTIONS: [FkAction; 4] = [
            FkAction::NoAction,
            FkAction::Restrict,
            FkAction::Cascade,
            FkAction::SetNull,
        ];
        if self.cfg.features.fk_actions {
            fk.on_delete = ACTIONS[self.rng.weighted(&[4, 2, 3, 2])];
            fk.on_update = ACTIONS[self.rng.weighted(&[6, 2, 2, 1])];
        }
        if self.cfg.features.deferrable_fks && self.rng.chance(1, 4) {
            fk.deferrable = Some(if self.rng.chance(2, 3) {
                Deferral::InitiallyDeferred
            } else {
                Deferral::InitiallyImmediate
            });
        }
    }

    /// The primary key's columns (usually one, sometimes two, sometimes none)
    /// among `keyable_cols`.
    fn gen_primary_key(&mut self, keyable_cols: &[usize]) -> Vec<usize> {
        if keyable_cols.is_empty() || !self.rng.chance(85, 100) {
            return Vec::new();
        }
        if keyable_cols.len() >= 2 && self.rng.chance(3, 10) {
            let mut ks = keyable_cols.to_vec();
            self.rng.shuffle(&mut ks);
            ks[..2].to_vec()
        } else if self.rng.chance(3, 4) {
            vec![keyable_cols[0]]
        } else {
            vec![*self.rng.pick(keyable_cols)]
        }
    }

    /// Maybe one single-column UNIQUE key on a keyable column outside the
    /// primary key.
    fn gen_uniques(
        &mut self,
        keyable_cols: &[usize],
        pk: &[usize],
        columns: &[Column],
    ) -> Vec<Vec<String>> {
        let mut uniques = Vec::new();
        let non_pk: Vec<usize> = keyable_cols
            .iter()
            .copied()
            .filter(|k| !pk.contains(k))
            .collect();
        if self.rng.chance(1, 4) {
            if let Some(&k) = self.rng.try_pick(&non_pk) {
                uniques.push(vec![columns[k].name.clone()]);
            }
        }
        uniques
    }

    /// Maybe one CHECK on a numeric column that every generated value meets.
    fn gen_checks(&mut self, columns: &[Column]) -> Vec<Expr> {
        let mut checks = Vec::new();
        let numeric: Vec<usize> = (0..columns.len())
            .filter(|&k| columns[k].ty.is_numeric())
            .collect();
        if self.rng.chance(1, 4) {
            if let Some(&k) = self.rng.try_pick(&numeric) {
                // Every generated value (and a few hundred decrements) satisfies it.
                checks.push(Expr::bin(
                    BinOp::Gt,
                    Expr::col(&columns[k].name),
                    Expr::lit(Value::Int(-1000)),
                ));
            }
        }
        checks
    }

    /// Maybe one or two secondary indexes of table `i` on keyable columns,
    /// none the same as the primary key or an earlier index.
    fn gen_indexes(
        &mut self,
        i: usize,
        keyable_cols: &[usize],
        pk: &[usize],
        columns: &[Column],
    ) -> Vec<Index> {
        let mut indexes = Vec::new();
        if keyable_cols.is_empty() || !self.rng.chance(2, 5) {
            return indexes;
        }
        let nidx = self.rng.range(1, 2);
        for x in 0..nidx {
            let mut ks = keyable_cols.to_vec();
            self.rng.shuffle(&mut ks);
            let width = (self.rng.range(1, 2) as usize).min(ks.len());
            ks.truncate(width);
            // Skip an index identical to the primary key or an earlier index.
            let cols: Vec<String> = ks.iter().map(|&k| columns[k].name.clone()).collect();
            if ks == pk || indexes.iter().any(|i: &Index| i.columns == cols) {
                continue;
            }
            indexes.push(Index {
                name: format!("i_t{i}_{x}"),
                columns: cols,
                unique: self.rng.chance(15, 100),
            });
        }
        indexes
    }

    /// Column index sets of every unique key of table `t`.
    pub(crate) fn unique_key_indexes(&self, t: usize) -> Vec<Vec<usize>> {
        let table = &self.schema.tables[t];
        table
            .unique_keys()
            .into_iter()
            .map(|key| {
                key.iter()
                    .filter_map(|n| table.columns.iter().position(|c| &c.name == n))
                    .collect()
            })
            .collect()
    }

    /// Initial rows of every table; row ids 1, 2, ... across the case.
    pub(crate) fn gen_data(&mut self) -> Vec<TableData> {
        let mut rid = 1;
        let mut data = Vec::new();
        for t in 0..self.schema.tables.len() {
            let keys = self.unique_key_indexes(t);
            let n = self.rng.below(self.cfg.max_rows as u64 + 1);
            let mut rows: Vec<Row> = Vec::new();
            for _ in 0..n {
                for _attempt in 0..10 {
                    let Some(values) = self.initial_row(t) else {
                        continue;
                    };
                    let clash = keys.iter().any(|key| {
                        key.iter().all(|&k| !values[k].is_null())
                            && rows
                                .iter()
                                .any(|r| key.iter().all(|&k| r.values[k] == values[k]))
                    });
                    if !clash {
                        self.known[t].push(values.clone());
                        rows.push(Row { rid, values });
                        rid += 1;
                        break;
                    }
                }
            }
            data.push(TableData {
                table: self.schema.tables[t].name.clone(),
                rows,
            });
        }
        // Rows inserted by statements continue the counter at the next thousand.
        self.next_rid = ((rid - 1) / 1000 + 1) * 1000;
        data
    }

    /// One candidate initial row satisfying NOT NULL, CHECK and FOREIGN KEY
    /// (uniqueness is checked by the caller); `None` if no parent key exists.
    fn initial_row(&mut self, t: usize) -> Option<Vec<Value>> {
        let ncols = self.schema.tables[t].columns.len();
        let mut values = Vec::with_capacity(ncols);
        for c in 0..ncols {
            let col = &self.schema.tables[t].columns[c];
            let (nullable, ty) = (!col.not_null, col.ty);
            if nullable && self.rng.chance(1, 10) {
                values.push(Value::Null);
                continue;
            }
            if let Some((p, pc)) = self.fk_parent(t, c) {
                match self.known_value(p, pc) {
                    Some(v) => values.push(v),
                    None if nullable => values.push(Value::Null),
                    None => return None,
                }
                continue;
            }
            values.push(self.random_value(ty));
        }
        Some(values)
    }
}
