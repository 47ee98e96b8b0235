//! A table's declared constraints as queries that count the rows breaking
//! them: what every correct engine shares once its transactions have ended,
//! whatever order it serialised them in (0 rows). An `integrity` finding
//! about a committed state is exported as these checks after the schedule.

use crate::model::{Schema, Table};
use crate::sql::{render_expr, Dialect};

/// One check: what it is about, and the query (one row, one column
/// `violations`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invariant {
    pub what: String,
    pub sql: String,
}

/// The checks of `table`'s constraints of `kind` (`integrity` finding
/// kinds: `foreign-key`, `unique`, `not-null`, `check`).
pub fn invariants(d: Dialect, schema: &Schema, table: &str, kind: &str) -> Vec<Invariant> {
    let Some(t) = schema.table(table) else {
        return Vec::new();
    };
    let count = |from: String, what: String| Invariant {
        sql: format!("SELECT COUNT(*) AS violations FROM {from}"),
        what,
    };
    match kind {
        "not-null" => {
            let cols: Vec<&str> = t
                .columns
                .iter()
                .filter(|c| c.not_null || t.primary_key.contains(&c.name))
                .map(|c| c.name.as_str())
                .collect();
            if cols.is_empty() {
                return Vec::new();
            }
            let cond: Vec<String> = cols.iter().map(|c| format!("{c} IS NULL")).collect();
            vec![count(
                format!("{} WHERE {}", t.name, cond.join(" OR ")),
                format!("NOT NULL ({}) of {}", cols.join(", "), t.name),
            )]
        }
        "unique" => keys(t)
            .into_iter()
            .map(|key| {
                let cols = key.join(", ");
                let set: Vec<String> = key.iter().map(|c| format!("{c} IS NOT NULL")).collect();
                count(
                    format!(
                        "(SELECT {cols} FROM {} WHERE {} GROUP BY {cols} HAVING COUNT(*) > 1) AS d",
                        t.name,
                        set.join(" AND ")
                    ),
                    format!("UNIQUE ({cols}) of {}", t.name),
                )
            })
            .collect(),
        "check" => t
            .checks
            .iter()
            .map(|e| {
                let cond = render_expr(d, e);
                count(
                    format!("{} WHERE NOT {cond}", t.name),
                    format!("CHECK {cond} of {}", t.name),
                )
            })
            .collect(),
        "foreign-key" => t
            .foreign_keys
            .iter()
            .map(|fk| {
                let set: Vec<String> = fk
                    .columns
                    .iter()
                    .map(|c| format!("c.{c} IS NOT NULL"))
                    .collect();
                let join: Vec<String> = fk
                    .columns
                    .iter()
                    .zip(&fk.ref_columns)
                    .map(|(c, p)| format!("p.{p} = c.{c}"))
                    .collect();
                count(
                    format!(
                        "{} AS c WHERE {} AND NOT EXISTS (SELECT 1 FROM {} AS p WHERE {})",
                        t.name,
                        set.join(" AND "),
                        fk.ref_table,
                        join.join(" AND ")
                    ),
                    format!(
                        "FOREIGN KEY ({}) REFERENCES {} ({}) of {}",
                        fk.columns.join(", "),
                        fk.ref_table,
                        fk.ref_columns.join(", "),
                        t.name
                    ),
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The table's unique keys: its primary key, then its UNIQUE constraints.
fn keys(t: &Table) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    if !t.primary_key.is_empty() {
        out.push(t.primary_key.clone());
    }
    out.extend(t.uniques.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ColType, Column, ForeignKey};

    fn col(name: &str) -> Column {
        Column {
            name: name.into(),
            ty: ColType::Int,
            not_null: false,
            default: None,
            auto_key: false,
        }
    }

    #[test]
    fn a_foreign_key_counts_its_orphans_and_a_key_its_duplicates() {
        let parent = Table {
            name: "p".into(),
            columns: vec![col("k")],
            primary_key: vec!["k".into()],
            uniques: vec![],
            checks: vec![],
            indexes: vec![],
            foreign_keys: vec![],
        };
        let child = Table {
            name: "c".into(),
            columns: vec![col("k"), col("pk")],
            primary_key: vec!["k".into()],
            uniques: vec![],
            checks: vec![],
            indexes: vec![],
            foreign_keys: vec![ForeignKey {
                columns: vec!["pk".into()],
                ref_table: "p".into(),
                ref_columns: vec!["k".into()],
                ..ForeignKey::default()
            }],
        };
        let schema = Schema {
            tables: vec![parent, child],
        };
        let fk = invariants(Dialect::Sqlite, &schema, "c", "foreign-key");
        assert_eq!(
            fk[0].sql,
            "SELECT COUNT(*) AS violations FROM c AS c WHERE c.pk IS NOT NULL AND NOT EXISTS \
             (SELECT 1 FROM p AS p WHERE p.k = c.pk)"
        );
        let unique = invariants(Dialect::Sqlite, &schema, "c", "unique");
        assert_eq!(
            unique[0].sql,
            "SELECT COUNT(*) AS violations FROM (SELECT k FROM c WHERE k IS NOT NULL \
             GROUP BY k HAVING COUNT(*) > 1) AS d"
        );
        assert!(invariants(Dialect::Sqlite, &schema, "c", "check").is_empty());
    }
}
