//! The single-destination LID assignment problem of Nienaber et al. (§2–4) and its heuristics.
//!
//! A *path* is a sequence of [`Hop`]s: it leaves `node` by the outgoing link `out`. `out` is any
//! label that is unique among the links leaving that node — a port number, a channel id — so the
//! same code serves the paper's machine-level multigraph and our switch graph. All paths of one
//! [`PathSet`] go to the same destination; they need not form a tree, and several may start at
//! the same node (multipath).
//!
//! Two paths have a *split* (Definition 1) when some node lies on both and they leave it by
//! different links; then they need different LIDs (Lemma 1). A set of paths without splits is a
//! *configuration* and shares one LID (Lemma 2). Minimising LIDs is colouring the *split graph*
//! (one vertex per path, an edge per split), NP-complete (Theorem 1; [`reduction_from_graph`] builds
//! the paper's instance for any graph).
//!
//! Identical paths (the same hops) are merged into one *class* with a weight: twins never split
//! with each other and split with exactly the same paths, so every heuristic puts them into the
//! same configuration. Counting a class with its weight wherever the paper counts paths (split
//! degrees, node usage) keeps every heuristic's result identical to running it on the individual
//! paths. Routing studies use this to pass one weighted path per (source switch, route) instead of
//! one per source machine.

use std::collections::HashMap;

use super::LidError;

mod optimum;
#[cfg(test)]
mod random_tests;
mod split_graph;
#[cfg(test)]
mod tests;

pub use split_graph::SplitGraph;

/// One step of a path: it leaves `node` by the outgoing link labelled `out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hop {
    pub node: u32,
    pub out: u32,
}

impl Hop {
    pub const fn new(node: u32, out: u32) -> Self {
        Hop { node, out }
    }
}

/// Paths towards one destination, stored flat. Path `i` has hops `hops[start[i]..start[i+1]]` and
/// stands for `weight[i]` identical paths (1 unless pushed with [`PathSet::push_weighted`]).
#[derive(Clone, Debug)]
pub struct PathSet {
    start: Vec<u32>,
    hops: Vec<Hop>,
    weight: Vec<u32>,
    scratch: Vec<u32>,
}

impl Default for PathSet {
    fn default() -> Self {
        PathSet {
            start: vec![0],
            hops: Vec::new(),
            weight: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

impl PathSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one path; returns its index.
    pub fn push(&mut self, hops: &[Hop]) -> Result<usize, LidError> {
        self.push_weighted(hops, 1)
    }

    /// Adds a path that stands for `weight` identical paths (e.g. all machines on one switch that
    /// take the same route). A path must have at least one hop and visit no node twice: a path
    /// that leaves a node twice either loops or splits with itself, and no LID realises it.
    pub fn push_weighted(&mut self, hops: &[Hop], weight: u32) -> Result<usize, LidError> {
        let path = self.weight.len();
        if hops.is_empty() {
            return Err(LidError::EmptyPath { path });
        }
        if weight == 0 {
            return Err(LidError::ZeroWeight { path });
        }
        if hops.len() >= u32::MAX as usize || self.hops.len() + hops.len() >= u32::MAX as usize {
            return Err(LidError::TooLarge("path hops"));
        }
        self.scratch.clear();
        self.scratch.extend(hops.iter().map(|h| h.node));
        self.scratch.sort_unstable();
        if let Some(w) = self.scratch.windows(2).find(|w| w[0] == w[1]) {
            return Err(LidError::RepeatedNode { path, node: w[0] });
        }
        self.hops.extend_from_slice(hops);
        self.start.push(self.hops.len() as u32);
        self.weight.push(weight);
        Ok(path)
    }

    pub fn len(&self) -> usize {
        self.weight.len()
    }

    pub fn is_empty(&self) -> bool {
        self.weight.is_empty()
    }

    pub fn path(&self, i: usize) -> &[Hop] {
        &self.hops[self.start[i] as usize..self.start[i + 1] as usize]
    }

    pub fn weight(&self, i: usize) -> u32 {
        self.weight[i]
    }

    /// Total number of paths, counting weights.
    pub fn total_weight(&self) -> u64 {
        self.weight.iter().map(|&w| u64::from(w)).sum()
    }

    pub fn clear(&mut self) {
        self.start.truncate(1);
        self.hops.clear();
        self.weight.clear();
    }
}

/// The node at which two paths split (Definition 1), if they do: both visit it and leave it by
/// different links. Quadratic in the path lengths; for checks and tests, not hot loops.
pub fn split_node(a: &[Hop], b: &[Hop]) -> Option<u32> {
    a.iter().find_map(|ha| {
        b.iter()
            .find(|hb| hb.node == ha.node && hb.out != ha.out)
            .map(|_| ha.node)
    })
}

/// The five heuristics of Nienaber et al. §4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Heuristic {
    /// Fig. 5: fill one configuration at a time, taking every path (in input order) that does not
    /// split with the configuration so far.
    Greedy,
    /// Fig. 7, nodes used by the fewest paths split first, then greedy merge.
    SplitMergeS,
    /// Fig. 7, nodes used by the most paths split first, then greedy merge.
    SplitMergeL,
    /// §4.3, least split path first.
    ColorS,
    /// §4.3, most split path first (the paper's best).
    ColorL,
}

impl Heuristic {
    pub const ALL: [Heuristic; 5] = [
        Heuristic::Greedy,
        Heuristic::SplitMergeS,
        Heuristic::SplitMergeL,
        Heuristic::ColorS,
        Heuristic::ColorL,
    ];

    /// The paper's column names.
    pub fn name(self) -> &'static str {
        match self {
            Heuristic::Greedy => "greedy",
            Heuristic::SplitMergeS => "s-m/S",
            Heuristic::SplitMergeL => "s-m/L",
            Heuristic::ColorS => "color/S",
            Heuristic::ColorL => "color/L",
        }
    }
}

impl std::fmt::Display for Heuristic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Heuristic {
    type Err = LidError;
    fn from_str(s: &str) -> Result<Self, LidError> {
        let l = s.to_ascii_lowercase().replace(['-', '_'], "");
        Ok(match l.as_str() {
            "greedy" => Heuristic::Greedy,
            "sm/s" | "splitmerge/s" | "splitmerges" | "sms" => Heuristic::SplitMergeS,
            "sm/l" | "splitmerge/l" | "splitmergel" | "sml" => Heuristic::SplitMergeL,
            "color/s" | "colors" | "colour/s" => Heuristic::ColorS,
            "color/l" | "colorl" | "colour/l" => Heuristic::ColorL,
            _ => return Err(LidError::UnknownHeuristic(s.to_string())),
        })
    }
}

/// Which end the /S and /L variants of a heuristic start from: the smallest (split degree, node
/// usage) first or the largest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOrder {
    SmallestFirst,
    LargestFirst,
}

/// Which degree the colouring heuristics rank a path by (§4.3 leaves this open; see
/// [`SplitGraph::color_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DegreeScope {
    /// Degree in the whole split graph, fixed throughout ("paths that split with the largest number
    /// of other paths are coloured first").
    Original,
    /// Degree in the graph of the current round (uncoloured paths), fixed within the round: each
    /// colour is applied to the reduced graph left by the previous colours. Our default.
    Round,
    /// Degree among the paths still selectable in the current round, updated after every step.
    Dynamic,
}

pub fn num_colors(colour: &[u32]) -> u32 {
    colour.iter().map(|&c| c + 1).max().unwrap_or(0)
}

/// LMC needed for `k` LIDs: `ceil(log2 k)` (0 for k <= 1); `None` above 2^7 = 128 LIDs.
pub fn lmc_for(k: u32) -> Option<u8> {
    let lmc = k.max(1).next_power_of_two().trailing_zeros();
    (lmc <= u32::from(crate::fabric::MAX_LMC)).then_some(lmc as u8)
}

/// LIDs a destination is actually given for `k` configurations: `2^ceil(log2 k)` (at least 1), the
/// power of two LMC forces (Nienaber et al. §2); `None` above 128.
pub fn lids_for(k: u32) -> Option<u32> {
    lmc_for(k).map(|l| 1u32 << l)
}

/// A LID assignment for one [`PathSet`]: path `i` uses LID offset `lid[i]` (from the destination's
/// base LID); offsets `0..num_lids` are all used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LidAssignment {
    pub lid: Vec<u32>,
    pub num_lids: u32,
}

impl LidAssignment {
    /// Lifts a class colouring of `g` to the paths.
    pub fn from_class_colors(g: &SplitGraph, colour: &[u32]) -> Self {
        let lid = g.class_of.iter().map(|&c| colour[c as usize]).collect();
        LidAssignment {
            lid,
            num_lids: num_colors(colour),
        }
    }

    /// The LMC this assignment needs (error above 128 LIDs).
    pub fn lmc(&self) -> Result<u8, LidError> {
        lmc_for(self.num_lids).ok_or(LidError::TooManyLids {
            needed: self.num_lids,
        })
    }

    /// LIDs the destination is given (power of two).
    pub fn lids_allocated(&self) -> Result<u32, LidError> {
        lids_for(self.num_lids).ok_or(LidError::TooManyLids {
            needed: self.num_lids,
        })
    }

    /// The configurations: path indices per LID offset.
    pub fn configurations(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.num_lids as usize];
        for (p, &l) in self.lid.iter().enumerate() {
            c[l as usize].push(p);
        }
        c
    }

    /// Checks, independently of the split graph, that every LID is realisable: within one LID no
    /// node is left by two different links. Also checks sizes and that no offset is unused.
    pub fn validate(&self, paths: &PathSet) -> Result<(), LidError> {
        if self.lid.len() != paths.len() {
            return Err(LidError::SizeMismatch {
                paths: paths.len(),
                assigned: self.lid.len(),
            });
        }
        let mut table: HashMap<(u32, u32), (u32, usize)> = HashMap::new();
        let mut used = vec![false; self.num_lids as usize];
        for (p, &l) in self.lid.iter().enumerate() {
            if l >= self.num_lids {
                return Err(LidError::LidOutOfRange {
                    path: p,
                    lid: l,
                    num_lids: self.num_lids,
                });
            }
            used[l as usize] = true;
            for h in paths.path(p) {
                let e = table.entry((l, h.node)).or_insert((h.out, p));
                if e.0 != h.out {
                    return Err(LidError::SplitWithinLid {
                        lid: l,
                        a: e.1,
                        b: p,
                        node: h.node,
                    });
                }
            }
        }
        if let Some(l) = used.iter().position(|&u| !u) {
            return Err(LidError::UnusedLid { lid: l as u32 });
        }
        Ok(())
    }
}

/// Runs heuristic `h` on one destination's paths.
pub fn assign(paths: &PathSet, h: Heuristic) -> LidAssignment {
    let g = SplitGraph::new(paths);
    LidAssignment::from_class_colors(&g, &g.color(h))
}

/// True when the colouring is a *minimal configuration set* (Definition 4): every colour class is
/// a configuration and every two classes contain a split between them, so none can be merged.
pub fn is_minimal_configuration_set(g: &SplitGraph, colour: &[u32]) -> bool {
    let k = num_colors(colour) as usize;
    let mut touches = vec![false; k * k];
    for v in 0..g.n {
        for u in g.neighbours(v) {
            if colour[u] == colour[v] {
                return false;
            }
            touches[colour[u] as usize * k + colour[v] as usize] = true;
        }
    }
    (0..k).all(|a| (0..k).all(|b| a == b || touches[a * k + b]))
}

/// LIDs needed over a whole network (Nienaber et al. §2: the problem splits per destination).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkLids {
    /// Configurations (LIDs before rounding) per destination.
    pub per_dest: Vec<u32>,
    /// Sum of configurations.
    pub configurations: u64,
    /// Sum of `2^ceil(log2 k)` over destinations: what LMC actually allocates.
    pub allocated: u64,
}

/// Runs heuristic `h` on every destination's paths (in parallel) and totals the LIDs.
pub fn assign_network(dests: &[PathSet], h: Heuristic) -> Result<NetworkLids, LidError> {
    use rayon::prelude::*;
    let per_dest: Vec<u32> = dests.par_iter().map(|p| assign(p, h).num_lids).collect();
    network_totals(per_dest)
}

/// Totals per-destination configuration counts into a [`NetworkLids`].
pub fn network_totals(per_dest: Vec<u32>) -> Result<NetworkLids, LidError> {
    let mut allocated = 0u64;
    for &k in &per_dest {
        allocated += u64::from(lids_for(k).ok_or(LidError::TooManyLids { needed: k })?);
    }
    let configurations = per_dest.iter().map(|&k| u64::from(k)).sum();
    Ok(NetworkLids {
        per_dest,
        configurations,
        allocated,
    })
}

/// Theorem 1's reduction (Fig. 4): for a graph on `n` vertices with `edges`, paths whose split
/// graph is exactly that graph. Node ids: destination 0, `n_u` = 1+u, `n_u'` = 1+n+u, edge node
/// `n_{u,v}` = 1+2n+e. Every link is labelled by the node it leads to.
pub fn reduction_from_graph(n: usize, edges: &[(usize, usize)]) -> Result<PathSet, LidError> {
    let mut ps = PathSet::new();
    let mut hops = Vec::new();
    for u in 0..n {
        let mut seq = vec![(1 + u) as u32];
        for (e, &(a, b)) in edges.iter().enumerate() {
            if a >= n || b >= n || a == b {
                return Err(LidError::BadGraph { edge: e });
            }
            if a == u || b == u {
                seq.push((1 + 2 * n + e) as u32);
            }
        }
        seq.push((1 + n + u) as u32);
        seq.push(0);
        hops.clear();
        hops.extend(seq.windows(2).map(|w| Hop::new(w[0], w[1])));
        ps.push(&hops)?;
    }
    Ok(ps)
}
