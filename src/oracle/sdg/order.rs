//! Orders over a statement-dependency graph: the statements on cycles (for
//! decycling) and random topological orders (for the oracle's replay).

use super::deps::Sdg;
use crate::rng::Rng;
use std::collections::{BTreeMap, BTreeSet};

fn successors(g: &Sdg) -> BTreeMap<u32, BTreeSet<u32>> {
    let mut succ: BTreeMap<u32, BTreeSet<u32>> =
        g.nodes.iter().map(|&n| (n, BTreeSet::new())).collect();
    for d in &g.deps {
        if d.from != d.to && succ.contains_key(&d.from) && succ.contains_key(&d.to) {
            succ.entry(d.from).or_default().insert(d.to);
        }
    }
    succ
}

/// The statements that lie on at least one cycle, in node order.
pub fn cyclic_nodes(g: &Sdg) -> Vec<u32> {
    let succ = successors(g);
    g.nodes
        .iter()
        .copied()
        .filter(|&n| {
            // Is n reachable from its own successors?
            let mut seen = BTreeSet::new();
            let mut stack: Vec<u32> = succ[&n].iter().copied().collect();
            while let Some(m) = stack.pop() {
                if m == n {
                    return true;
                }
                if seen.insert(m) {
                    stack.extend(succ[&m].iter().copied());
                }
            }
            false
        })
        .collect()
}

/// A topological order chosen at random among the zero-in-degree statements
/// at each step (TxCheck's Algorithm 1); `None` when the graph has a cycle.
pub fn random_topological(g: &Sdg, rng: &mut Rng) -> Option<Vec<u32>> {
    let succ = successors(g);
    let mut indeg: BTreeMap<u32, usize> = g.nodes.iter().map(|&n| (n, 0)).collect();
    for targets in succ.values() {
        for t in targets {
            *indeg.entry(*t).or_default() += 1;
        }
    }
    let mut out = Vec::with_capacity(g.nodes.len());
    let mut ready: Vec<u32> = g.nodes.iter().copied().filter(|n| indeg[n] == 0).collect();
    while !ready.is_empty() {
        let i = rng.below(ready.len() as u64) as usize;
        let n = ready.remove(i);
        out.push(n);
        for m in &succ[&n] {
            let d = indeg.entry(*m).or_default();
            *d -= 1;
            if *d == 0 {
                ready.push(*m);
            }
        }
    }
    (out.len() == g.nodes.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::sdg::deps::{Dep, DepKind};

    fn graph(nodes: &[u32], edges: &[(u32, u32)]) -> Sdg {
        Sdg {
            nodes: nodes.to_vec(),
            deps: edges
                .iter()
                .map(|&(from, to)| Dep {
                    from,
                    to,
                    kind: DepKind::Read,
                    item: true,
                    table: "t".into(),
                    rid: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn topological_orders_respect_every_edge() {
        let g = graph(&[1, 2, 3, 4], &[(1, 2), (1, 3), (3, 4), (2, 4)]);
        for seed in 0..20 {
            let order = random_topological(&g, &mut Rng::new(seed, 0)).unwrap();
            let pos = |n: u32| order.iter().position(|&m| m == n).unwrap();
            assert!(pos(1) < pos(2) && pos(1) < pos(3) && pos(3) < pos(4) && pos(2) < pos(4));
        }
        assert!(cyclic_nodes(&g).is_empty());
    }

    #[test]
    fn cycles_are_found_and_block_ordering() {
        let g = graph(&[1, 2, 3, 4], &[(1, 2), (2, 3), (3, 1), (3, 4)]);
        assert_eq!(cyclic_nodes(&g), vec![1, 2, 3]);
        assert!(random_topological(&g, &mut Rng::new(1, 0)).is_none());
    }
}
