//! Settling escape destinations one by one on hybrid trees (the escape's module documentation):
//! each path not from `A` goes to a layer whose CDG stays acyclic with it, checked incrementally
//! with a dynamic topological order per layer.

use crate::bits;
use crate::graph::SwitchGraph;

use super::{internal, Slot};
use crate::dfsssp::cdg::{topological_order, DestTree, EdgeIndex, EdgeSet};
use crate::dfsssp::dyntopo::{CountedEdges, DepEdge, DynTopo, TopoScratch};
use crate::dfsssp::prepared::Prepared;
use crate::dfsssp::DfssspError;

/// How many channels an incremental cycle check may visit before it refuses the edge: small in
/// the escape layer, where an illegal turn almost always closes a cycle with the Up*/Down* routes
/// it holds (and a refusal merely keeps a path on Up*/Down*), larger elsewhere. In the layers
/// other than the escape layer, `SEARCH_LIMIT` also bounds how many positions of the layer's
/// order may separate the edge's channels (wider: refused unsearched,
/// [`DynTopo::with_max_span`]); with one lane there are no such layers, so the span limit only
/// matters with more lanes. In the escape layer an illegal turn that is not refused within 8
/// channels is as good as never accepted: larger limits accept the same edges and only search
/// longer (README, "Measurements behind the design").
const ESCAPE_SEARCH_LIMIT: usize = 8;
const SEARCH_LIMIT: usize = 1024;

/// Settles escape destinations on hybrid trees (module documentation).
pub(super) struct Settler<'a, 'c> {
    prep: &'a Prepared<'a>,
    counts: &'c mut [CountedEdges],
    esc_layer: u8,
    topo: Vec<DynTopo>,
    sc: TopoScratch,
    /// Up*/Down*, SSSP and hybrid trees of the destination at hand.
    tu: DestTree,
    ts: DestTree,
    th: DestTree,
    in_a: Vec<bool>,
    pl: Vec<u8>,
    is_placed: Vec<bool>,
    flag: Vec<bool>,
    failed: Vec<u32>,
    /// Switches that joined A in the last round, and in all rounds.
    joined: Vec<u32>,
    a_nodes: Vec<u32>,
    /// Per switch of A, the weight of the paths from A through it (scratch, all zero between
    /// uses).
    a_sub: Vec<u32>,
    /// The dependency edges of the path being placed: `(c1, c2, edge)`.
    path: Vec<(u32, u32, u32)>,
    /// Those of its edges a layer did not hold yet ([`try_add_path`]).
    fresh: Vec<u32>,
    refused: Refusals,
    delta: TreeDelta,
}

impl<'a, 'c> Settler<'a, 'c> {
    pub(super) fn new(
        prep: &'a Prepared<'a>,
        counts: &'c mut [CountedEdges],
        esc_layer: u8,
        legal_order: Vec<u32>,
    ) -> Result<Self, DfssspError> {
        let (g, ei) = (prep.g, &prep.ei);
        let ns = g.num_switches();
        let mut topo = Vec::with_capacity(counts.len());
        for (l, cnt) in counts.iter().enumerate() {
            if l == usize::from(esc_layer) {
                // Only Up*/Down* routes so far, so this order fits (checked: it is cheap), and
                // every legal turn added later inserts without a search.
                let t = DynTopo::from_order(&legal_order);
                if t.fits(g, ei, cnt) {
                    topo.push(t);
                    continue;
                }
            }
            let order = topological_order(g, ei, cnt)
                .ok_or_else(|| internal(format!("layer {l} has a cycle before settling")))?;
            let t = DynTopo::from_order(&order);
            topo.push(if l == usize::from(esc_layer) {
                t
            } else {
                t.with_max_span(SEARCH_LIMIT)
            });
        }
        let nl = counts.len();
        Ok(Settler {
            prep,
            counts,
            esc_layer,
            topo,
            sc: TopoScratch::default(),
            tu: DestTree::new(ns),
            ts: DestTree::new(ns),
            th: DestTree::new(ns),
            in_a: vec![false; ns],
            pl: vec![0; ns],
            is_placed: vec![false; ns],
            flag: vec![false; ns],
            failed: Vec::new(),
            joined: Vec::new(),
            a_nodes: Vec::new(),
            a_sub: vec![0; ns],
            path: Vec::new(),
            fresh: Vec::new(),
            refused: Refusals::new(nl, ei.num_edges()),
            delta: TreeDelta::new(ns, nl),
        })
    }

    /// First pass for destination `di`, whose full Up*/Down* tree is in the escape layer and
    /// whose paths cycle breaking fitted are still counted in their layers (`dl`, its row of
    /// path layers, which this rewrites).
    pub(super) fn settle(&mut self, slot: &mut Slot) -> Result<(), DfssspError> {
        let g = self.prep.g;
        std::mem::swap(&mut self.tu, &mut slot.tu);
        std::mem::swap(&mut self.ts, &mut slot.ts);
        self.is_placed.fill(false);
        for &s in &self.ts.order[1..] {
            let l = slot.phase_a[s as usize];
            if l < self.esc_layer {
                self.is_placed[s as usize] = true;
                self.pl[s as usize] = l;
            }
        }
        self.hybrid(slot.di, &slot.phase_a)?;
        // Its Up*/Down* paths from A stay in the escape layer, counted from now on (A is closed
        // under Up*/Down* hops, so the sums run over A alone, deepest first); its tree there,
        // held as a user until now, leaves.
        let (ei, weight) = (&self.prep.ei, &self.prep.weight);
        let esc = &mut self.counts[usize::from(self.esc_layer)];
        let tu = &self.tu;
        self.a_nodes
            .sort_unstable_by_key(|&x| std::cmp::Reverse(tu.depth[x as usize]));
        for &x in &self.a_nodes {
            self.a_sub[x as usize] += weight[x as usize];
        }
        for &x in &self.a_nodes {
            let w = std::mem::take(&mut self.a_sub[x as usize]);
            let c1 = tu.next[x as usize];
            let h = g.chan_head()[c1 as usize];
            if w > 0 && h != tu.root {
                esc.shift(ei.edge(g, c1, tu.next[h as usize]) as usize, w as i32);
                self.a_sub[h as usize] += w;
            }
        }
        for &e in &slot.ud_edges {
            esc.drop_user(e as usize);
        }
        // The slot takes the outcome to be written, and its trees back.
        std::mem::swap(&mut self.tu, &mut slot.tu);
        std::mem::swap(&mut self.ts, &mut slot.ts);
        std::mem::swap(&mut self.th, &mut slot.th);
        std::mem::swap(&mut self.pl, &mut slot.pl);
        Ok(())
    }

    /// The hybrid-tree rounds for destination `di` (trees built, `is_placed`/`pl` preset); paths
    /// from A are in the escape layer already. (A second pass re-settling every destination
    /// against the final layers, its Up*/Down* paths then checked too, was tried: on tori and
    /// random fabrics it almost never shortened routes.)
    fn hybrid(&mut self, di: usize, phase_a: &[u8]) -> Result<(), DfssspError> {
        let (g, ei, weight) = (self.prep.g, &self.prep.ei, &self.prep.weight);
        let d = g.dests()[di];
        let (lid, root) = (d.lid, d.switch);
        let esc_layer = self.esc_layer;
        self.in_a.fill(false);
        self.in_a[root as usize] = true;
        self.a_nodes.clear();
        // Refusals are remembered for the whole destination: rounds only take back this
        // destination's own paths, so a stale refusal merely sends a source to A a bit early.
        self.refused.clear();
        // With A = {root} the hybrid tree is the SSSP tree.
        self.th.copy_from(&self.ts);
        loop {
            self.failed.clear();
            // Paths placed in an earlier round did not change; place the others. A path extends
            // its parent's, so below a source that fits nowhere nothing fits either.
            for idx in 1..self.th.order.len() {
                let s = self.th.order[idx];
                let su = s as usize;
                self.flag[su] = false;
                if self.in_a[su] {
                    // Its Up*/Down* path is in the escape layer already.
                    self.pl[su] = esc_layer;
                    continue;
                }
                if self.is_placed[su] {
                    continue;
                }
                let p = self.th.parent(g, s);
                if self.flag[p as usize] {
                    self.flag[su] = true;
                    continue;
                }
                let parent_l = if p == root { 0 } else { self.pl[p as usize] };
                // A path that is still the SSSP one prefers the layer cycle breaking gave it.
                let pref = match phase_a[su] {
                    l if l < esc_layer && self.ts.next[su] == self.th.next[su] => l,
                    _ => parent_l,
                };
                let mut tries = [0u8; 17];
                let (mut n, mut listed) = (0, 0u32);
                for l in [pref, parent_l].into_iter().chain(0..=esc_layer) {
                    if listed & 1 << l == 0 {
                        listed |= 1 << l;
                        tries[n] = l;
                        n += 1;
                    }
                }
                let w = weight[su];
                self.path.clear();
                path_edges(g, ei, &self.th, s, |c1, c2, e| {
                    self.path.push((c1, c2, e as u32));
                    true
                });
                let path = PathEdges {
                    edges: &self.path,
                    weight: w,
                };
                for &l in &tries[..n] {
                    let lu = usize::from(l);
                    let layer = TriedLayer {
                        edges: &mut self.counts[lu],
                        topo: &mut self.topo[lu],
                        index: l,
                        search_limit: if l == esc_layer {
                            ESCAPE_SEARCH_LIMIT
                        } else {
                            SEARCH_LIMIT
                        },
                    };
                    if try_add_path(
                        g,
                        ei,
                        path,
                        layer,
                        &mut self.sc,
                        &mut self.refused,
                        &mut self.fresh,
                    ) {
                        self.pl[su] = l;
                        self.is_placed[su] = true;
                        self.delta.add(su, l, w, &self.fresh);
                        break;
                    }
                }
                if !self.is_placed[su] {
                    self.failed.push(s);
                    self.flag[su] = true;
                }
            }
            if self.failed.is_empty() {
                self.delta.flush(g, ei, &self.th, self.counts);
                return Ok(());
            }
            self.join_failed_to_a();
            self.th
                .link(g, root)
                .map_err(|f| internal(format!("hybrid tree for LID {lid} broken: {f:?}")))?;
        }
    }

    /// The failed sources join A with their Up*/Down* paths; placed paths through a switch
    /// that joined A change, so they are taken out again (`flag` marks them). The caller
    /// relinks the hybrid tree.
    fn join_failed_to_a(&mut self) {
        let (g, ei, weight) = (self.prep.g, &self.prep.ei, &self.prep.weight);
        for &s in &self.th.order {
            self.flag[s as usize] = false;
        }
        self.joined.clear();
        for &s in &self.failed {
            let mut x = s;
            while !self.in_a[x as usize] {
                self.in_a[x as usize] = true;
                self.flag[x as usize] = true;
                self.joined.push(x);
                self.a_nodes.push(x);
                x = self.tu.parent(g, x);
            }
        }
        for &s in &self.th.order[1..] {
            let su = s as usize;
            self.flag[su] |= self.flag[self.th.parent(g, s) as usize];
            if self.flag[su] && self.is_placed[su] {
                self.delta.sub(su, self.pl[su], weight[su]);
                self.is_placed[su] = false;
            }
        }
        self.delta.flush(g, ei, &self.th, self.counts);
        for &s in &self.th.order {
            self.flag[s as usize] = false;
        }
        // The switches that joined A forward by Up*/Down* from now on.
        for &x in &self.joined {
            self.th.next[x as usize] = self.tu.next[x as usize];
        }
    }
}

/// A path to place: its dependency edges `(c1, c2, edge)` in order, and its weight.
#[derive(Clone, Copy)]
struct PathEdges<'p> {
    edges: &'p [(u32, u32, u32)],
    weight: u32,
}

/// The layer a path is tried in: its edges, its topological order, its index, and how many
/// channels one cycle check in it may visit.
struct TriedLayer<'t> {
    edges: &'t mut CountedEdges,
    topo: &'t mut DynTopo,
    index: u8,
    search_limit: usize,
}

/// Adds `path` to `layer` if that keeps the layer acyclic. `refused` remembers the edges the
/// layers refused for this destination, so they are not searched again. The checks read the
/// layer's edge set only, the path's new edges marked in it as they pass (`fresh` lists them,
/// to take the marks back on a refusal); the caller counts a path that fits ([`TreeDelta`]).
fn try_add_path(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    path: PathEdges<'_>,
    layer: TriedLayer<'_>,
    sc: &mut TopoScratch,
    refused: &mut Refusals,
    fresh: &mut Vec<u32>,
) -> bool {
    let TriedLayer {
        edges,
        topo,
        index: l,
        search_limit,
    } = layer;
    // Cheap pass first: an edge refused earlier for this destination sinks the path at once.
    if path
        .edges
        .iter()
        .any(|&(_, _, e)| !edges.has(e as usize) && refused.has(l, e))
    {
        return false;
    }
    fresh.clear();
    for &(c1, c2, e) in path.edges {
        if edges.has(e as usize) {
            continue;
        }
        let edge = DepEdge { from: c1, to: c2 };
        if !topo.try_insert(g, ei, &*edges, sc, edge, search_limit) {
            refused.insert(l, e);
            for &f in fresh.iter() {
                edges.unmark(f as usize);
            }
            return false;
        }
        // (A path of weight 0 is counted nowhere: its edges never enter the layer.)
        if path.weight > 0 {
            edges.mark(e as usize);
            fresh.push(e);
        }
    }
    true
}

/// Path weight placed in (+) and taken out of (-) the layers during one round of a destination,
/// per (switch, layer), counted into the layers at the end of the round by summing up the hybrid
/// tree: the paths of one destination share their suffixes, so each counted edge is touched once
/// per round instead of once per path through it (the layers' edge sets are kept up to date by
/// the placement itself, so nothing reads the counts in between).
struct TreeDelta {
    layers: usize,
    w: Vec<i32>,
    /// Per switch, the layers with a non-zero entry.
    mask: Vec<u16>,
    /// The edges the round's placements marked new in their layers.
    marked: Vec<(u8, u32)>,
    /// The count changes of a flush: (layer, edge, change).
    shifts: Vec<(u8, u32, i32)>,
}

impl TreeDelta {
    fn new(switches: usize, layers: usize) -> Self {
        TreeDelta {
            layers,
            w: vec![0; switches * layers],
            mask: vec![0; switches],
            marked: Vec::new(),
            shifts: Vec::new(),
        }
    }

    /// A path placed from `s` in layer `l`, `fresh` the edges it marked there.
    #[inline]
    fn add(&mut self, s: usize, l: u8, w: u32, fresh: &[u32]) {
        self.w[s * self.layers + usize::from(l)] += w as i32;
        self.mask[s] |= 1 << l;
        self.marked.extend(fresh.iter().map(|&e| (l, e)));
    }

    #[inline]
    fn sub(&mut self, s: usize, l: u8, w: u32) {
        self.w[s * self.layers + usize::from(l)] -= w as i32;
        self.mask[s] |= 1 << l;
    }

    /// Counts the round's changes along tree `t` (the one their paths follow) and clears them.
    fn flush(
        &mut self,
        g: &SwitchGraph,
        ei: &EdgeIndex,
        t: &DestTree,
        layers: &mut [CountedEdges],
    ) {
        let nl = self.layers;
        for &s in t.order[1..].iter().rev() {
            let su = s as usize;
            let mut m = std::mem::take(&mut self.mask[su]);
            if m == 0 {
                continue;
            }
            let c1 = t.next[su];
            let h = g.chan_head()[c1 as usize];
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                let d = std::mem::take(&mut self.w[su * nl + l]);
                if d == 0 || h == t.root {
                    continue;
                }
                self.shifts
                    .push((l as u8, ei.edge(g, c1, t.next[h as usize]), d));
                self.w[h as usize * nl + l] += d;
                self.mask[h as usize] |= 1 << l;
            }
        }
        // The counts are scattered over megabytes: first read them all, loads that do not
        // wait for each other, then change them, once they are in cache.
        let mut any = 0u32;
        for &(l, e, _) in &self.shifts {
            any |= layers[usize::from(l)].count(e as usize);
        }
        std::hint::black_box(any);
        for (l, e, d) in self.shifts.drain(..) {
            layers[usize::from(l)].shift(e as usize, d);
        }
        // A path placed and taken out again in the round leaves the marks of its new edges.
        for (l, e) in self.marked.drain(..) {
            layers[usize::from(l)].refresh(e as usize);
        }
    }
}

/// The dependency edges each layer refused for the destination being settled: a bitmap per layer
/// (8 layers of random 20k CAs, 320 k edges each: 320 KB, which stays in cache, where a stamp
/// per edge and layer took 10 MB and its reads were half of the placement's time), cleared
/// through the list of what was set.
struct Refusals {
    bits: Vec<Vec<u64>>,
    set: Vec<(u8, u32)>,
}

impl Refusals {
    fn new(layers: usize, edges: usize) -> Self {
        Refusals {
            bits: vec![vec![0; bits::words(edges)]; layers],
            set: Vec::new(),
        }
    }

    #[inline]
    fn has(&self, l: u8, e: u32) -> bool {
        bits::bit(&self.bits[usize::from(l)], e as usize)
    }

    fn insert(&mut self, l: u8, e: u32) {
        let layer = &mut self.bits[usize::from(l)];
        if !bits::bit(layer, e as usize) {
            bits::set(layer, e as usize);
            self.set.push((l, e));
        }
    }

    fn clear(&mut self) {
        for (l, e) in self.set.drain(..) {
            bits::clear(&mut self.bits[usize::from(l)], e as usize);
        }
    }
}

/// Calls `f(c1, c2, edge)` along the dependency edges of the path from `s` until it returns
/// `false`; returns whether it never did.
#[inline]
fn path_edges(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    t: &DestTree,
    s: u32,
    mut f: impl FnMut(u32, u32, usize) -> bool,
) -> bool {
    let mut c1 = t.next[s as usize];
    loop {
        let h = g.chan_head()[c1 as usize];
        if h == t.root {
            return true;
        }
        let c2 = t.next[h as usize];
        if !f(c1, c2, ei.edge(g, c1, c2) as usize) {
            return false;
        }
        c1 = c2;
    }
}
