//! The layers of re-routed paths: each goes into its old layer if the layer's channel
//! dependency graph stays acyclic, else into another, else into a new one within the budget.
//!
//! **Cost.** (`E ≤ C·radix` possible dependency edges, `L` layers.) [`LayerChecks::AtEnd`]:
//! `O(hops)` per path to trace it and set its edge bits, then one `O(C+E)` topological sort per
//! layer (layers in parallel), `L·E/8` bytes; a cycle there means pass 2 again, per path.
//! [`LayerChecks::PerPath`]: `O(L·(C+E))` to count the kept edges and order each layer (`4·E` bytes
//! of counts and `4·C` of positions per layer); per path at most one try per candidate next hop and
//! layer, each `O(hops)` plus, per edge new to the layer, a Pearce–Kelly check that visits at most
//! [`SEARCH_LIMIT`] channels each way, `O(SEARCH_LIMIT·radix)`. A new layer costs `O(C+E)`.

use rayon::prelude::*;

use super::{FullReason, RerouteOptions};
use crate::dfsssp::cdg::{topological_order, EdgeIndex};
use crate::dfsssp::dyntopo::{DepEdge, DynTopo, TopoScratch};
use crate::graph::SwitchGraph;
use crate::routing::Lft;

/// A next hop for a re-routed switch. Candidates are ranked in field order (shortest, then the
/// old port, then ...); [`Layering::place`] takes the first that fits a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Candidate {
    /// Hops to the destination through it.
    pub hops: u32,
    /// Not the port the switch used before (or the fresh routing's, after a repair).
    pub moved: bool,
    /// Its next switch's path is in another layer than this path's.
    pub other_layer: bool,
    /// Routes on the channel.
    pub load: u64,
    pub channel: u32,
    /// The layer of the path it joins.
    pub joins: Option<u8>,
}

/// A re-routed switch's path to place: to `lid` (on switch `root`), in `old_layer` before.
pub(super) struct PathToPlace {
    pub lid: u16,
    pub root: u32,
    pub old_layer: Option<u8>,
    /// The candidate channel that gives the switch its old path back: only into the old layer
    /// (an unchanged path keeps its SL).
    pub same_path: Option<u32>,
    /// The switch has CAs: its path's SL is what the SA answers, so it keeps its layer.
    pub sa_visible: bool,
}

/// Cap on the channels one incremental cycle check may visit before it refuses (refusing is safe:
/// the path tries the next layer).
const SEARCH_LIMIT: usize = 256;

/// When the layers' dependency graphs are checked for cycles as re-routed paths go in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LayerChecks {
    /// Never: the routing is not deadlock-free (every path in layer 0).
    Unchecked,
    /// Once, after all paths went in: each path in its old layer, the edges collected as bits.
    /// Fast; a cycle found then means routing again with [`LayerChecks::PerPath`].
    AtEnd,
    /// As each path goes in: its edges join a layer only when they close no cycle there.
    PerPath,
}

/// Whether the re-routed routing keeps a layer table (then a path that fits no layer may open
/// another, within the budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LayerTable {
    Kept,
    Absent,
}

/// Which layer each re-routed path goes to, and the layers' dependency graphs as paths go in.
pub(super) struct Layering<'a> {
    g: &'a SwitchGraph,
    ei: &'a EdgeIndex,
    /// How layers are chosen and checked.
    checks: LayerChecks,
    /// [`LayerChecks::AtEnd`]: per layer, the dependency edges as bits.
    bits: Vec<Vec<u64>>,
    /// [`LayerChecks::PerPath`]: per layer, how many paths use each edge, and a topological order.
    counts: Vec<Vec<u32>>,
    topo: Vec<DynTopo>,
    sc: TopoScratch,
    path: Vec<u32>,
    /// The order in which layers are tried for one candidate.
    tries: Vec<u8>,
    /// Whether a layer may be added (the routing has layer tables and checks them).
    can_grow: bool,
    budget: u8,
    /// Channels one cycle check may visit ([`SEARCH_LIMIT`] while re-routing, where refusing
    /// only tries the next layer).
    pub(super) search_limit: usize,
}

impl<'a> Layering<'a> {
    pub(super) fn new(
        g: &'a SwitchGraph,
        ei: &'a EdgeIndex,
        kept: &[Vec<u64>],
        checks: LayerChecks,
        opts: &RerouteOptions,
        table: LayerTable,
    ) -> Result<Self, FullReason> {
        let mut l = Layering {
            g,
            ei,
            checks,
            bits: Vec::new(),
            counts: Vec::new(),
            topo: Vec::new(),
            sc: TopoScratch::default(),
            path: Vec::new(),
            tries: Vec::new(),
            can_grow: table == LayerTable::Kept && opts.deadlock_free,
            budget: opts.budget.max(1),
            search_limit: SEARCH_LIMIT,
        };
        match checks {
            LayerChecks::Unchecked => {}
            LayerChecks::AtEnd => l.bits = kept.to_vec(),
            LayerChecks::PerPath => {
                // Layers in parallel.
                let built: Vec<(Vec<u32>, Option<Vec<u32>>)> = kept
                    .par_iter()
                    .map(|b| {
                        let counts = counts_of(ei, b);
                        let order = topological_order(g, ei, &counts);
                        (counts, order)
                    })
                    .collect();
                for (k, (counts, order)) in built.into_iter().enumerate() {
                    let order = order.ok_or(FullReason::KeptCycle { layer: k as u8 })?;
                    l.topo.push(DynTopo::from_order(&order));
                    l.counts.push(counts);
                }
            }
        }
        Ok(l)
    }

    /// Whether every layer's dependency graph is acyclic (checked here for
    /// [`LayerChecks::AtEnd`]; [`LayerChecks::PerPath`] keeps them so, and unchecked layers need
    /// not be).
    pub(super) fn acyclic(&self) -> bool {
        self.checks != LayerChecks::AtEnd
            || self
                .bits
                .par_iter()
                .all(|b| topological_order(self.g, self.ei, &counts_of(self.ei, b)).is_some())
    }

    /// Chooses the next channel of a switch among `cands` (sorted best first: shortest, least
    /// loaded) and the layer of its path. [`LayerChecks::AtEnd`]: the best candidate in its old
    /// layer. [`LayerChecks::PerPath`], adding the path's dependency edges to a layer only when
    /// they close no cycle: the
    /// best candidate that fits in any layer, in its old layer if it fits there, else the first
    /// layer that takes it; failing all, the best candidate in a new layer within the budget.
    /// A switch without CAs (`sa_visible` false: no SA client sees its SL) tries the layer of the
    /// switch the path joins first: all its edges but the first turn are there already.
    /// `same_path`, the candidate that gives the switch its old path back, goes only into the old
    /// layer (where it does not fit, the next candidate is tried): an unchanged path keeps its SL.
    pub(super) fn place(
        &mut self,
        lft: &Lft,
        path: &PathToPlace,
        cands: &[Candidate],
        num_layers: &mut u8,
    ) -> Option<(u32, u8)> {
        let &PathToPlace {
            lid,
            root,
            old_layer,
            same_path,
            sa_visible,
        } = path;
        cands.first()?;
        let first = old_layer.unwrap_or(0).min(*num_layers - 1);
        match self.checks {
            LayerChecks::Unchecked => return Some((cands[0].channel, 0)),
            LayerChecks::AtEnd => {
                let (c, joins) = (cands[0].channel, cands[0].joins);
                let l = match joins {
                    Some(j) if !sa_visible && j < *num_layers && same_path != Some(c) => j,
                    _ => first,
                };
                self.trace(lft, lid, root, c);
                let b = &mut self.bits[usize::from(l)];
                for w in self.path.windows(2) {
                    let e = self.ei.edge(self.g, w[0], w[1]) as usize;
                    b[e / 64] |= 1 << (e % 64);
                }
                return Some((c, l));
            }
            LayerChecks::PerPath => {}
        }
        // The path first (the best candidate that fits anywhere), then its layer (the old one
        // if the path fits there).
        for &Candidate {
            channel: c, joins, ..
        } in cands
        {
            let lead = match joins {
                Some(j) if !sa_visible && j < *num_layers => j,
                _ => first,
            };
            self.tries.clear();
            if same_path == Some(c) {
                self.tries.push(first);
            } else {
                self.tries.push(lead);
                if first != lead {
                    self.tries.push(first);
                }
                self.tries
                    .extend((0..*num_layers).filter(|&l| l != lead && l != first));
            }
            self.trace(lft, lid, root, c);
            for k in 0..self.tries.len() {
                let l = self.tries[k];
                if self.insert(usize::from(l)) {
                    return Some((c, l));
                }
            }
        }
        if self.can_grow && *num_layers < self.budget {
            let nc = self.g.num_channels() as u32;
            self.counts.push(vec![0; self.ei.num_edges()]);
            self.topo
                .push(DynTopo::from_order(&(0..nc).collect::<Vec<_>>()));
            let l = *num_layers;
            *num_layers += 1;
            let c = cands
                .iter()
                .map(|cand| cand.channel)
                .find(|&c| same_path != Some(c))?;
            self.trace(lft, lid, root, c);
            if self.insert(usize::from(l)) {
                return Some((c, l));
            }
        }
        None
    }

    /// `self.path` = channel `c`, then the path of the switch it leads to.
    pub(super) fn trace(&mut self, lft: &Lft, lid: u16, root: u32, c: u32) {
        let g = self.g;
        self.path.clear();
        self.path.push(c);
        let mut at = g.chan_head()[c as usize];
        while at != root && self.path.len() <= g.num_switches() {
            let Some(c) = g.channel_at(at, lft.port(at, lid)) else {
                break;
            };
            self.path.push(c);
            at = g.chan_head()[c as usize];
        }
    }

    /// Adds the dependency edges of `self.path` to layer `l` if none closes a cycle; otherwise
    /// leaves the layer as it was.
    pub(super) fn insert(&mut self, l: usize) -> bool {
        let (g, ei) = (self.g, self.ei);
        let (topo, counts) = (&mut self.topo[l], &mut self.counts[l]);
        for k in 0..self.path.len().saturating_sub(1) {
            let (a, b) = (self.path[k], self.path[k + 1]);
            let e = ei.edge(g, a, b) as usize;
            if counts[e] == 0
                && !topo.try_insert(
                    g,
                    ei,
                    counts,
                    &mut self.sc,
                    DepEdge { from: a, to: b },
                    self.search_limit,
                )
            {
                for w in self.path[..k + 1].windows(2) {
                    counts[ei.edge(g, w[0], w[1]) as usize] -= 1;
                }
                return false;
            }
            counts[e] += 1;
        }
        true
    }
}

/// One count per set bit.
pub(super) fn counts_of(ei: &EdgeIndex, bits: &[u64]) -> Vec<u32> {
    (0..ei.num_edges())
        .map(|e| (bits[e / 64] >> (e % 64) & 1) as u32)
        .collect()
}
