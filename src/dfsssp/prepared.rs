//! What the stages of deadlock removal share: the context prepared once from the fabric and the
//! options ([`Prepared`]), and the routes the stages change, held so their copies stay in step
//! ([`WorkingRoutes`]).

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::graph::{SwitchDistances, SwitchGraph, NO_SWITCH};
use crate::routing::{Lft, Routing, NO_PATH};

use super::cdg::{topological_order, CountChange, DestTree, EdgeIndex};
use super::{fault_error, DfssspError, DfssspOptions, PathWeight};

/// The read-only context every stage works in: the switch graph, its dependency-edge ids, the
/// connected components, every source switch's path weight, whether the escape reclaims minimal
/// routes, and the switch distances (the caller's, or computed here once, on first need).
pub(crate) struct Prepared<'a> {
    pub g: &'a SwitchGraph,
    pub ei: EdgeIndex,
    /// Connected component of every switch.
    pub comp: Vec<u32>,
    /// Weight of the paths from every switch ([`DfssspOptions::weight`]).
    pub weight: Vec<u32>,
    /// [`DfssspOptions::reclaim`].
    pub reclaim: bool,
    given_dist: Option<&'a SwitchDistances>,
    /// A `OnceLock`, not a `OnceCell`: stages running on two threads (one-lane candidates, the
    /// escape prepared beside cycle breaking) share the context.
    own_dist: OnceLock<SwitchDistances>,
}

/// Every source switch's path weight under `weight`.
pub(crate) fn path_weights(g: &SwitchGraph, weight: PathWeight) -> Vec<u32> {
    match weight {
        PathWeight::SourcePorts => g.terminal_count().iter().map(|&t| t + 1).collect(),
        PathWeight::Unit => vec![1; g.num_switches()],
        PathWeight::CaPorts => g.terminal_count().to_vec(),
    }
}

impl<'a> Prepared<'a> {
    pub fn new(
        g: &'a SwitchGraph,
        opts: &DfssspOptions,
        dist: Option<&'a SwitchDistances>,
    ) -> Self {
        Prepared {
            g,
            ei: EdgeIndex::new(g),
            comp: g.components(),
            weight: path_weights(g, opts.weight),
            reclaim: opts.reclaim,
            given_dist: dist,
            own_dist: OnceLock::new(),
        }
    }

    /// All switch distances: the caller's, else computed now (once).
    pub fn dist(&self) -> &SwitchDistances {
        self.given_dist
            .unwrap_or_else(|| self.own_dist.get_or_init(|| SwitchDistances::new(self.g)))
    }

    /// The switch distances the caller gave, if any: where a stage can do with per-destination
    /// searches instead, computing all of them is not worth it.
    pub fn given_dist(&self) -> Option<&SwitchDistances> {
        self.given_dist
    }

    /// Adds the routes to destination `di` (its column of the destination-major `cols`) to the
    /// CDG `counts`, or takes them out (by `change`), validating its tree (built in `tree`).
    pub fn count_dest(
        &self,
        tree: &mut DestTree,
        cols: &[u8],
        di: usize,
        counts: &mut [u32],
        change: CountChange,
    ) -> Result<(), DfssspError> {
        self.count_dest_linked(tree, cols, di, counts, change, None)
    }

    /// [`count_dest`](Self::count_dest) adding routes that are minimal where they can be
    /// (SSSP's): with the caller's switch distances the tree is linked by them
    /// ([`DestTree::link_minimal`]), its order reused from the last tree where `*linked_for`
    /// says it had the same root (the destinations of one switch come one after another). Trees
    /// that are not minimal, or without distances, are linked and checked as in `count_dest`.
    pub fn count_minimal_dest(
        &self,
        tree: &mut DestTree,
        cols: &[u8],
        di: usize,
        counts: &mut [u32],
        linked_for: &mut u32,
    ) -> Result<(), DfssspError> {
        self.count_dest_linked(tree, cols, di, counts, CountChange::Add, Some(linked_for))
    }

    /// The body of both: `linked_for`, where given, lets the tree be linked by distances.
    fn count_dest_linked(
        &self,
        tree: &mut DestTree,
        cols: &[u8],
        di: usize,
        counts: &mut [u32],
        change: CountChange,
        linked_for: Option<&mut u32>,
    ) -> Result<(), DfssspError> {
        let (g, ns) = (self.g, self.g.num_switches());
        let d = &g.dests()[di];
        let col = &cols[di * ns..(di + 1) * ns];
        let fault = |f| fault_error(g, d.lid, f);
        tree.next_from_ports(g, d, |s| col[s as usize], &self.comp)
            .map_err(fault)?;
        let root = d.switch;
        let linked = match (linked_for, self.given_dist) {
            (Some(last), Some(dist)) => {
                let by_distance = tree.link_minimal(g, root, dist.to(root), *last == root);
                *last = if by_distance { root } else { NO_SWITCH };
                by_distance
            }
            _ => false,
        };
        if !linked {
            tree.link(g, root).map_err(fault)?;
        }
        tree.apply(g, &self.ei, counts, |s| self.weight[s as usize], change);
        Ok(())
    }

    /// Whether the layer-0 CDG `counts` is acyclic.
    pub fn acyclic(&self, counts: &[u32]) -> bool {
        topological_order(self.g, &self.ei, counts).is_some()
    }
}

/// The routes as the stages change them, in three views that must agree: the routing (its LFT
/// and hop counts), `cols`, the LFT destination-major (`cols[di * S + s] = lft.port(s,
/// dests[di].lid)`), and `counts0`, the layer-0 CDG of all routes (paths behind every dependency
/// edge). A stage that re-routes takes the whole and rewrites all three.
pub(crate) struct WorkingRoutes<'r> {
    pub routing: &'r mut Routing,
    pub cols: Vec<u8>,
    pub counts0: Vec<u32>,
    /// The layer-0 CDG of the routes to CA and router LIDs alone, where it came with the routes
    /// ([`Layer0`]); only the stage that re-routes switch LIDs (which leaves CA routes alone)
    /// takes it.
    pub ca_counts: Option<Vec<u32>>,
    /// The switch-LID destinations re-routing left with a cycle in layer 0, and their routes'
    /// CDG (part of `counts0`): cycle breaking starts them in layer 1, above an acyclic layer 0.
    pub unfitted: Option<UnfittedDests>,
}

/// Destinations whose routes close a cycle with the rest of layer 0, with their routes' CDG.
pub(crate) struct UnfittedDests {
    pub dests: Vec<usize>,
    pub counts: Vec<u32>,
}

impl<'r> WorkingRoutes<'r> {
    /// The views of `routing`, validating every destination's tree.
    pub fn new(prep: &Prepared, routing: &'r mut Routing) -> Result<Self, DfssspError> {
        let cols = transpose(prep.g, &routing.lft);
        let (counts0, ca_counts) = build_layer0(prep, &cols)?;
        Ok(WorkingRoutes {
            routing,
            cols,
            counts0,
            ca_counts: Some(ca_counts),
            unfitted: None,
        })
    }

    /// The views of `routing` from a [`Layer0`] gathered while its routes were computed: the
    /// same as [`WorkingRoutes::new`] on those routes, without walking them again.
    pub fn from_layer0(routing: &'r mut Routing, layer0: Layer0) -> Self {
        WorkingRoutes {
            routing,
            cols: layer0.cols,
            counts0: layer0.counts0,
            ca_counts: Some(layer0.ca_counts),
            unfitted: None,
        }
    }

    /// Whether all routes fit one layer.
    pub fn acyclic(&self, prep: &Prepared) -> bool {
        prep.acyclic(&self.counts0)
    }
}

/// The destination-major ports and the layer-0 CDG of a routing ([`WorkingRoutes`]'s `cols`
/// and `counts0`), gathered by a [`Layer0Collector`] while the routes were being computed.
#[derive(Clone)]
pub struct Layer0 {
    cols: Vec<u8>,
    counts0: Vec<u32>,
    /// The part of `counts0` from routes to CA and router LIDs.
    ca_counts: Vec<u32>,
}

/// Gathers a [`Layer0`] destination by destination, in any order, as a router hands over each
/// destination's row of ports (`crate::sssp::route_with_efi_feeding`): the CDG is built on one
/// core while the balancing, which cannot be split, goes on on the other.
pub struct Layer0Collector<'a> {
    /// Prepared with the first row (a router that feeds nothing costs nothing), from `g`,
    /// `opts` and `dist`.
    prep: Option<Prepared<'a>>,
    g: &'a SwitchGraph,
    opts: DfssspOptions,
    dist: Option<&'a SwitchDistances>,
    tree: DestTree,
    cols: Vec<u8>,
    /// The CDG of the routes to CA (and router) LIDs, and of those to switch LIDs.
    ca_counts: Vec<u32>,
    switch_counts: Vec<u32>,
    seen: Vec<bool>,
    /// The root whose distance order `tree` holds ([`Prepared::count_minimal_dest`]).
    linked_for: u32,
    /// Destinations (attached to a switch) fed so far.
    fed: usize,
    /// A destination fed twice, or a row that is no tree (the usual path reports that).
    broken: bool,
}

impl<'a> Layer0Collector<'a> {
    /// (Cycle breaking builds the trees it moves paths of itself: on the fat trees where it
    /// follows, those of the few switch LIDs whose routes close cycles, [`super::cdg::TreeIndex::build_for`].)
    pub fn new(
        g: &'a SwitchGraph,
        opts: &DfssspOptions,
        dist: Option<&'a SwitchDistances>,
    ) -> Self {
        Layer0Collector {
            prep: None,
            g,
            opts: opts.clone(),
            dist,
            tree: DestTree::new(0),
            cols: Vec::new(),
            ca_counts: Vec::new(),
            switch_counts: Vec::new(),
            seen: Vec::new(),
            linked_for: NO_SWITCH,
            fed: 0,
            broken: false,
        }
    }

    /// The routes to destination `di` (index into `g.dests()`): one port per switch.
    pub fn add(&mut self, di: usize, row: &[u8]) {
        let (g, ns) = (self.g, self.g.num_switches());
        if self.prep.is_none() {
            let prep = self.prep.insert(Prepared::new(g, &self.opts, self.dist));
            self.tree = DestTree::new(ns);
            self.cols = vec![NO_PATH; g.dests().len() * ns];
            self.ca_counts = vec![0; prep.ei.num_edges()];
            self.switch_counts = vec![0; prep.ei.num_edges()];
            self.seen = vec![false; g.dests().len()];
        }
        let attached = g.dests().get(di).is_some_and(|d| d.switch != NO_SWITCH);
        if self.broken
            || !attached
            || row.len() != ns
            || std::mem::replace(&mut self.seen[di], true)
        {
            self.broken = true;
            return;
        }
        self.cols[di * ns..(di + 1) * ns].copy_from_slice(row);
        self.fed += 1;
        let counts = if g.dests()[di].exit_port != 0 {
            &mut self.ca_counts
        } else {
            &mut self.switch_counts
        };
        let Some(prep) = self.prep.as_ref() else {
            return; // prepared above
        };
        self.broken = prep
            .count_minimal_dest(&mut self.tree, &self.cols, di, counts, &mut self.linked_for)
            .is_err();
    }

    /// The [`Layer0`], when every destination attached to a switch was fed once and each
    /// row was a valid tree; `None` otherwise (then build it from the routing).
    pub fn finish(self) -> Option<Layer0> {
        let g = self.g;
        let attached = g.dests().iter().filter(|d| d.switch != NO_SWITCH).count();
        if self.broken || self.fed != attached {
            return None;
        }
        let mut counts0 = self.switch_counts;
        add_counts(&mut counts0, &self.ca_counts);
        Some(Layer0 {
            cols: self.cols,
            counts0,
            ca_counts: self.ca_counts,
        })
    }
}

/// `to[e] += from[e]` for every edge, in parallel on large fabrics.
pub(super) fn add_counts(to: &mut [u32], from: &[u32]) {
    let work = to.len();
    crate::par::sized(to.par_iter_mut().zip(from), work).for_each(|(a, b)| *a += b);
}

/// Destination-major copy of the LFT: `cols[di * S + s] = lft.port(s, dests[di].lid)`, built in
/// tiles so both sides stay cache-friendly.
fn transpose(g: &SwitchGraph, lft: &Lft) -> Vec<u8> {
    const TILE: usize = 64;
    let ns = g.num_switches();
    let nd = g.dests().len();
    let mut cols = vec![NO_PATH; nd * ns];
    if ns == 0 {
        return cols;
    }
    let work = cols.len();
    crate::par::sized(cols.par_chunks_mut(ns * TILE).enumerate(), work).for_each(|(ti, block)| {
        let d0 = ti * TILE;
        let dests = &g.dests()[d0..(d0 + TILE).min(nd)];
        for s in 0..ns {
            let row = lft.table(s as u32);
            for (k, d) in dests.iter().enumerate() {
                block[k * ns + s] = row[usize::from(d.lid)];
            }
        }
    });
    cols
}

/// Edge counts of layer 0 with every path, and those of the routes to CA (and router) LIDs
/// alone (what re-routing the switch LIDs starts from, [`WorkingRoutes::ca_counts`]),
/// validating every destination's tree.
fn build_layer0(prep: &Prepared, cols: &[u8]) -> Result<(Vec<u32>, Vec<u32>), DfssspError> {
    let attached = (0..prep.g.dests().len()).filter(|&di| prep.g.dests()[di].switch != NO_SWITCH);
    let (ca, switch): (Vec<usize>, Vec<usize>) =
        attached.partition(|&di| prep.g.dests()[di].exit_port != 0);
    let ca_counts = count_routes(prep, cols, &ca)?;
    let mut counts0 = count_routes(prep, cols, &switch)?;
    add_counts(&mut counts0, &ca_counts);
    Ok((counts0, ca_counts))
}

/// Edge counts of the routes to `dests` (indices into `g.dests()`, attached to a switch). With
/// the switch distances given, minimal trees are linked by them and the order is shared by the
/// destinations of one switch ([`Prepared::count_minimal_dest`]; the same counts, fewer walks).
fn count_routes(prep: &Prepared, cols: &[u8], dests: &[usize]) -> Result<Vec<u32>, DfssspError> {
    let ns = prep.g.num_switches();
    let ne = prep.ei.num_edges();
    let chunk = (dests.len() / (rayon::current_num_threads() * 2)).max(64);
    crate::par::sized(dests.par_chunks(chunk), dests.len() * ns)
        .map(|dis| {
            let mut tree = DestTree::new(ns);
            let mut counts = vec![0u32; ne];
            let mut linked_for = NO_SWITCH;
            for &di in dis {
                prep.count_minimal_dest(&mut tree, cols, di, &mut counts, &mut linked_for)?;
            }
            Ok(counts)
        })
        .try_reduce(
            || vec![0u32; ne],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                Ok(a)
            },
        )
}
