//! What makes a known-issues entry able to match at all: an entry that can
//! never match hides nothing and says nothing, so it is refused on load with
//! the reason (a misspelt oracle, verdict or level in its signature, a
//! `since` that is not a version, a setting no engine of the entry has, an
//! id used twice).

use super::KnownIssue;
use crate::model::Isolation;
use crate::oracle::OracleKind;

/// Why entry `i` could never match, if so.
pub fn entry_problem(i: &KnownIssue) -> Option<String> {
    for bound in [&i.since, &i.until].into_iter().flatten() {
        if !is_version(bound) {
            return Some(format!("'{bound}' is not a version (like 10.11 or 9.7.4)"));
        }
    }
    if let Some(p) = i.signature.list().into_iter().find_map(pattern_problem) {
        return Some(p);
    }
    i.settings
        .keys()
        .find(|name| !i.engines.iter().any(|e| engine_has_setting(e, name)))
        .map(|name| {
            format!(
                "the setting '{name}' is not one txfuzz sets on {}",
                i.engines.join(" or ")
            )
        })
}

/// The first id of `issues` used twice.
pub fn duplicate_id(issues: &[KnownIssue]) -> Option<&str> {
    issues.iter().enumerate().find_map(|(n, i)| {
        issues[..n]
            .iter()
            .any(|o| o.id == i.id)
            .then_some(i.id.as_str())
    })
}

/// `10`, `10.11`, `9.7.4`.
fn is_version(v: &str) -> bool {
    !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A signature pattern whose oracle, verdict or level (each written out,
/// without `*`) is not one a finding can have; a pattern without `*` must
/// have all six parts (`oracle/kind/verdict/engine/level/features`).
fn pattern_problem(p: &str) -> Option<String> {
    let parts: Vec<&str> = p.split('/').collect();
    if parts.len() != 6 {
        return (!p.contains('*')).then(|| {
            format!("signature '{p}' does not have the six parts oracle/kind/verdict/engine/level/features")
        });
    }
    let literal = |s: &str| !s.contains('*');
    let oracle_ok = OracleKind::KNOWN.iter().any(|o| o.name() == parts[0]);
    if literal(parts[0]) && !oracle_ok {
        return Some(format!(
            "signature '{p}' names an unknown oracle '{}'",
            parts[0]
        ));
    }
    if literal(parts[2]) && !["violation", "permitted"].contains(&parts[2]) {
        return Some(format!(
            "signature '{p}' names the verdict '{}' (violation or permitted)",
            parts[2]
        ));
    }
    let level_ok = parts[4] == "mixed" || Isolation::ALL.iter().any(|l| l.name() == parts[4]);
    if literal(parts[4]) && !level_ok {
        return Some(format!(
            "signature '{p}' names an unknown level '{}'",
            parts[4]
        ));
    }
    None
}

/// Whether txfuzz can give engine `engine` the setting `name` (the
/// settings its profile reads).
fn engine_has_setting(engine: &str, name: &str) -> bool {
    crate::engine::registry::kind(engine).is_some_and(|k| {
        k.profile_settings
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use crate::finding::known::KnownIssues;

    fn entry(extra: &str) -> String {
        format!(
            "[[issue]]\nid = \"x\"\nengines = [\"mariadb\"]\nsignature = \"view/*\"\n\
             reference = \"r\"\ndescription = \"d\"\n{extra}\n"
        )
    }

    /// Each kind of entry that can never match is refused in one line with
    /// its reason; the shipped list and a well-formed entry load.
    #[test]
    fn entries_that_can_never_match_are_refused() {
        KnownIssues::builtin();
        assert!(KnownIssues::parse(&entry("since = \"11.8\""), "f").is_ok());
        let bad = [
            (entry("since = \"eleven\""), "not a version"),
            (entry("until = \"10.x\""), "not a version"),
            (
                entry("").replace("view/*", "veiw/result/violation/*/serializable/*"),
                "unknown oracle",
            ),
            (
                entry("").replace("view/*", "view/result/violaton/*/serializable/*"),
                "verdict",
            ),
            (
                entry("").replace("view/*", "view/result/violation/*/repeatable_read/*"),
                "unknown level",
            ),
            (
                entry("").replace("view/*", "view/result/violation"),
                "six parts",
            ),
            (
                entry("settings = { innodb_snapshot_isolaton = \"ON\" }"),
                "innodb_snapshot_isolaton",
            ),
            (format!("{}{}", entry(""), entry("")), "twice"),
        ];
        for (text, needle) in bad {
            let e = KnownIssues::parse(&text, "f").unwrap_err();
            assert!(e.contains(needle), "{needle}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
