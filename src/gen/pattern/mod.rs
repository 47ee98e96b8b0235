//! Anomaly-pattern-guided generation (APTrans): patterns such as
//! `R1[x0] W2[x1] C2 W1[x2] C1` ([`parser`]), the built-in catalogue
//! ([`catalogue`]), constraint extraction and the dependency path a pattern
//! prescribes ([`path`]), cases whose statements are aligned on the items'
//! rows ([`generate`]), which engine levels run a pattern as written
//! ([`levels`]). The check that an executed case produced the path is the
//! `pattern` oracle ([`crate::oracle::pattern`]).

pub mod catalogue;
pub mod generate;
pub mod levels;
pub mod parser;
pub mod path;

pub use generate::Binding;
pub use parser::{parse, parse_file, OpKind, PatOp, Pattern, PatternError};

use super::GenConfig;
use crate::model::TestCase;
use crate::rng::Rng;
use std::str::FromStr;

/// Which generator a campaign uses (`--generator`).
#[derive(Clone, Debug, Default)]
pub enum Generation {
    #[default]
    Random,
    /// Every case from a pattern (chosen per case from the list).
    Pattern(Vec<Pattern>),
    /// Even case indexes random, odd ones from a pattern.
    Mixed(Vec<Pattern>),
}

/// `--generator` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeneratorKind {
    Random,
    Pattern,
    Mixed,
}

impl FromStr for GeneratorKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "random" => Ok(GeneratorKind::Random),
            "pattern" => Ok(GeneratorKind::Pattern),
            "mixed" => Ok(GeneratorKind::Mixed),
            _ => Err(format!(
                "unknown generator '{s}' (available: random, pattern, mixed)"
            )),
        }
    }
}

/// The patterns `--pattern SPEC` names: a built-in name, a comma list of
/// them, or a file of `name: pattern` lines; every built-in when `None`.
pub fn resolve(spec: Option<&str>) -> Result<Vec<Pattern>, String> {
    let Some(spec) = spec else {
        return Ok(catalogue::patterns());
    };
    let names: Vec<&str> = spec.split(',').map(str::trim).collect();
    if names.iter().all(|n| catalogue::builtin(n).is_some()) {
        return Ok(names
            .iter()
            .filter_map(|n| catalogue::builtin(n))
            .map(|b| b.pattern())
            .collect());
    }
    let path = std::path::Path::new(spec);
    if path.exists() {
        let text = crate::input::read_text(path, crate::input::SMALL_FILE_LIMIT)
            .map_err(|e| format!("pattern file: {e}"))?;
        return parse_file(&text).map_err(|e| format!("{spec}: {e}"));
    }
    Err(format!(
        "--pattern '{spec}' is neither a built-in pattern nor a file (built-ins: {} ...; see README)",
        catalogue::CLASSIC.map(|b| b.name).join(", ")
    ))
}

impl Generation {
    pub fn from_args(kind: GeneratorKind, pattern: Option<&str>) -> Result<Generation, String> {
        Ok(match kind {
            GeneratorKind::Random if pattern.is_some() => {
                return Err("--pattern needs --generator pattern or mixed".into())
            }
            GeneratorKind::Random => Generation::Random,
            GeneratorKind::Pattern => Generation::Pattern(resolve(pattern)?),
            GeneratorKind::Mixed => Generation::Mixed(resolve(pattern)?),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Generation::Random => "random",
            Generation::Pattern(_) => "pattern",
            Generation::Mixed(_) => "mixed",
        }
    }

    /// Case `index`: a pure function of `(seed, index, cfg, self)`. Pattern
    /// cases come with their pattern and binding.
    pub fn case(
        &self,
        seed: u64,
        index: u64,
        cfg: &GenConfig,
    ) -> (TestCase, Option<(Pattern, Binding)>) {
        let patterns = match self {
            Generation::Pattern(ps) => ps,
            Generation::Mixed(ps) if index % 2 == 1 => ps,
            _ => return (super::generate_case(seed, index, cfg), None),
        };
        let mut pick = Rng::new(seed ^ 0x5041_5454_4552_4e00, index);
        let p = &patterns[pick.below(patterns.len() as u64) as usize];
        let (mut case, b) = generate::generate(seed, index, p, &cfg.isolations);
        super::start::draw_settings(seed, index, &cfg.settings, &mut case.txns);
        (case, Some((p.clone(), b)))
    }
}
