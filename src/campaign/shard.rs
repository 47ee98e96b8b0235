//! `--shard I/N`: a campaign that runs only the case indexes `i` with
//! `i % N == I`, so N campaigns of one seed (on N machines, say) together run
//! exactly the cases one campaign would; `txfuzz merge` joins their output.

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (`0/1`: the whole campaign).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// The case index of this shard's `k`-th case (`None` past `u64::MAX`).
    pub fn case_index(self, k: u64) -> Option<u64> {
        k.checked_mul(self.count)?.checked_add(self.index)
    }

    /// How many of the indexes `0..n` are this shard's.
    pub fn cases_of(self, n: u64) -> u64 {
        n.saturating_sub(self.index).div_ceil(self.count)
    }

    pub fn is_whole(self) -> bool {
        self.count == 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("invalid shard '{s}': expected I/N with 0 <= I < N (e.g. 0/4)");
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl TryFrom<String> for Shard {
    type Error = String;
    fn try_from(s: String) -> Result<Shard, String> {
        s.parse()
    }
}

impl From<Shard> for String {
    fn from(s: Shard) -> String {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn parses_and_maps_indexes() {
        let s: Shard = "1/3".parse().unwrap();
        assert_eq!((s.index, s.count), (1, 3));
        let idx: Vec<u64> = (0..4).filter_map(|k| s.case_index(k)).collect();
        assert_eq!(idx, vec![1, 4, 7, 10]);
        assert_eq!(s.to_string(), "1/3");
        assert_eq!(Shard::WHOLE.case_index(5), Some(5));
    }

    #[test]
    fn rejects_bad_shards() {
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2", "1/2/3"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("I/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_shards_of_a_count_partition_its_indexes() {
        let n = 4;
        let mut all: Vec<u64> = (0..n)
            .flat_map(|i| {
                let s = Shard { index: i, count: n };
                (0..).map_while(move |k| s.case_index(k).filter(|&c| c < 25))
            })
            .collect();
        all.sort();
        assert_eq!(all, (0..25).collect::<Vec<_>>());
        let counts: Vec<u64> = (0..n)
            .map(|i| Shard { index: i, count: n }.cases_of(25))
            .collect();
        assert_eq!(counts, vec![7, 6, 6, 6]);
        assert_eq!(Shard { index: 3, count: 4 }.cases_of(2), 0);
    }
}
