//! What the stages of deadlock removal share: the context prepared once from the fabric and the
//! options ([`Prepared`]), and the routes the stages change, held so their copies stay in step
//! ([`WorkingRoutes`]).

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::graph::{SwitchDistances, SwitchGraph, NO_SWITCH};
use crate::routing::{Lft, Routing, NO_PATH};

use super::cdg::{topological_order, DestTree, EdgeIndex};
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

impl<'a> Prepared<'a> {
    pub fn new(
        g: &'a SwitchGraph,
        opts: &DfssspOptions,
        dist: Option<&'a SwitchDistances>,
    ) -> Self {
        let ns = g.num_switches();
        let weight = match opts.weight {
            PathWeight::SourcePorts => g.terminal_count().iter().map(|&t| t + 1).collect(),
            PathWeight::Unit => vec![1; ns],
            PathWeight::CaPorts => g.terminal_count().to_vec(),
        };
        Prepared {
            g,
            ei: EdgeIndex::new(g),
            comp: g.components(),
            weight,
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
    /// CDG `counts`, or takes them out (`add` false), validating its tree (built in `tree`).
    pub fn count_dest(
        &self,
        tree: &mut DestTree,
        cols: &[u8],
        di: usize,
        counts: &mut [u32],
        add: bool,
    ) -> Result<(), DfssspError> {
        let (g, ns) = (self.g, self.g.num_switches());
        let d = &g.dests()[di];
        let col = &cols[di * ns..(di + 1) * ns];
        tree.build_from_ports(g, d, |s| col[s as usize], &self.comp)
            .map_err(|f| fault_error(g, d.lid, f))?;
        tree.apply(g, &self.ei, counts, |s| self.weight[s as usize], add);
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
}

impl<'r> WorkingRoutes<'r> {
    /// The views of `routing`, validating every destination's tree.
    pub fn new(prep: &Prepared, routing: &'r mut Routing) -> Result<Self, DfssspError> {
        let cols = transpose(prep.g, &routing.lft);
        let counts0 = build_layer0(prep, &cols)?;
        Ok(WorkingRoutes {
            routing,
            cols,
            counts0,
        })
    }

    /// Whether all routes fit one layer.
    pub fn acyclic(&self, prep: &Prepared) -> bool {
        prep.acyclic(&self.counts0)
    }
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
    cols.par_chunks_mut(ns * TILE)
        .enumerate()
        .for_each(|(ti, block)| {
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

/// Edge counts of layer 0 with every path, validating every destination's tree.
fn build_layer0(prep: &Prepared, cols: &[u8]) -> Result<Vec<u32>, DfssspError> {
    let (g, ei) = (prep.g, &prep.ei);
    let ns = g.num_switches();
    let ne = ei.num_edges();
    let nd = g.dests().len();
    let chunk = (nd / (rayon::current_num_threads() * 2)).max(64);
    g.dests()
        .par_chunks(chunk)
        .enumerate()
        .map(|(ci, ds)| {
            let mut tree = DestTree::new(ns);
            let mut counts = vec![0u32; ne];
            for (k, d) in ds.iter().enumerate() {
                if d.switch == NO_SWITCH {
                    continue;
                }
                prep.count_dest(&mut tree, cols, ci * chunk + k, &mut counts, true)?;
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
