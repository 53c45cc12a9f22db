//! Channel dependency graphs (CDGs) over the switch graph, one per virtual layer, kept as flat
//! per-edge path counts.
//!
//! CDG nodes are the switch-to-switch channels. A dependency edge `(c1, c2)` exists in a layer when
//! some path of that layer takes `c1` and then `c2`, so `c2` leaves the switch `c1` enters. Edge ids
//! are a CSR over `(c1, position of c2 among head(c1)'s out-channels)`:
//! `edge(c1, c2) = base[c1] + (c2 - out_start[head(c1)])`. Both directions are O(1): the successor
//! of an edge slot is `out_start[head(c1)] + slot`, and the predecessors of `c2` are the in-channels
//! `p` of `tail(c2)`, whose edge into `c2` is `base[p] + (c2 - out_start[tail(c2)])`. Channels to and
//! from CAs never lie on a cycle and are left out.
//!
//! The routes towards one destination LID form an in-tree over the switches ([`DestTree`]); every
//! source switch `s` sends one path along it, weighted by the number of source ports it stands for.
//! The dependency edge a switch `u` contributes, `(next(u), next(head(next(u))))`, is shared by all
//! paths from `u`'s subtree, so one destination's contribution to a layer is a subtree sum: O(S).

use rayon::iter::IndexedParallelIterator;

use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{RouteFault, NO_PATH};

/// Dense ids for the possible dependency edges of the switch graph.
#[derive(Clone, Debug)]
pub struct EdgeIndex {
    /// `base[c]..base[c+1]`: the edges leaving channel `c`, one per out-channel of `head(c)`.
    pub base: Vec<u32>,
}

impl EdgeIndex {
    /// Total weight of the dependencies Up*/Down* orientation `ud` forbids (a down channel
    /// followed by an up one), edge `e` weighing `weight(e)`: how far routes are from legal
    /// under `ud`, the measure every Up*/Down* root choice here minimises.
    pub(super) fn down_up_weight(
        &self,
        g: &SwitchGraph,
        ud: &crate::updown::UpDown,
        weight: impl Fn(usize) -> u64,
    ) -> u64 {
        let mut w = 0u64;
        for c1 in 0..g.num_channels() as u32 {
            if ud.is_up(g, c1) {
                continue;
            }
            let b = self.base[c1 as usize];
            for slot in 0..self.degree(c1) {
                if ud.is_up(g, self.target(g, c1, slot)) {
                    w += weight((b + slot) as usize);
                }
            }
        }
        w
    }

    pub fn new(g: &SwitchGraph) -> Self {
        let nc = g.num_channels();
        let mut base = Vec::with_capacity(nc + 1);
        let mut acc = 0u64;
        base.push(0);
        for c in 0..nc {
            let h = g.chan_head()[c] as usize;
            acc += u64::from(g.out_start()[h + 1] - g.out_start()[h]);
            // A switch has at most 255 ports, so this stays far below u32::MAX for any IB fabric
            // (49151 LIDs bound the switch count); saturate rather than wrap on absurd input.
            base.push(u32::try_from(acc).unwrap_or(u32::MAX));
        }
        EdgeIndex { base }
    }

    pub fn num_edges(&self) -> usize {
        *self.base.last().unwrap_or(&0) as usize
    }

    /// Id of the dependency edge `c1 -> c2`; `c2` must leave the switch `c1` enters.
    #[inline]
    pub fn edge(&self, g: &SwitchGraph, c1: u32, c2: u32) -> u32 {
        let h = g.chan_head()[c1 as usize] as usize;
        debug_assert_eq!(g.chan_tail()[c2 as usize] as usize, h);
        self.base[c1 as usize] + (c2 - g.out_start()[h])
    }

    /// The channel an edge slot of `c1` leads to.
    #[inline]
    pub fn target(&self, g: &SwitchGraph, c1: u32, slot: u32) -> u32 {
        g.out_start()[g.chan_head()[c1 as usize] as usize] + slot
    }

    /// Number of edge slots of channel `c`.
    #[inline]
    pub fn degree(&self, c: u32) -> u32 {
        self.base[c as usize + 1] - self.base[c as usize]
    }
}

/// Whether paths go into counts (dependency-edge counts, channel loads) or come out of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountChange {
    Add,
    Remove,
}

/// The in-tree of the routes towards one destination, with reusable buffers.
#[derive(Clone, Debug)]
pub struct DestTree {
    /// The destination's switch.
    pub root: u32,
    /// Channel each switch forwards by; [`NO_CHANNEL`] for the root and for unrouted switches.
    pub next: Vec<u32>,
    /// Routed switches by increasing depth (root first): every switch comes after its parent,
    /// so reverse order is bottom-up.
    pub order: Vec<u32>,
    /// Depth (switch-to-switch hops to the root) of every routed switch.
    pub depth: Vec<u32>,
    /// Scratch for subtree sums.
    pub sub: Vec<u32>,
    stack: Vec<u32>,
    by_depth: Vec<u32>,
}

/// `depth` value of a switch not yet reached while linking.
const UNSEEN: u32 = u32::MAX;
/// `depth` value of a switch whose parent chain is being followed.
const ON_CHAIN: u32 = u32::MAX - 1;

impl DestTree {
    pub fn new(ns: usize) -> Self {
        DestTree {
            root: NO_SWITCH,
            next: vec![NO_CHANNEL; ns],
            order: Vec::with_capacity(ns),
            depth: vec![0; ns],
            sub: vec![0; ns],
            stack: Vec::with_capacity(ns),
            by_depth: Vec::new(),
        }
    }

    /// Builds the tree towards `d` from the port every switch forwards it by (`ports[s]`).
    /// `comp` gives connected components of the switches: a switch outside the destination's
    /// component may have no entry; anywhere else a missing, dangling or looping entry is a fault.
    pub fn build_from_ports(
        &mut self,
        g: &SwitchGraph,
        d: &Dest,
        ports: impl Fn(u32) -> u8,
        comp: &[u32],
    ) -> Result<(), RouteFault> {
        self.next_from_ports(g, d, ports, comp)?;
        self.link(g, d.switch)
    }

    /// The first half of [`build_from_ports`](Self::build_from_ports): every switch's next
    /// channel from its port, checked as there, without linking the tree.
    pub fn next_from_ports(
        &mut self,
        g: &SwitchGraph,
        d: &Dest,
        ports: impl Fn(u32) -> u8,
        comp: &[u32],
    ) -> Result<(), RouteFault> {
        let root = d.switch;
        let rc = comp[root as usize];
        for s in 0..g.num_switches() as u32 {
            let p = ports(s);
            let c = if s == root {
                if p != d.exit_port {
                    // The destination's own switch must deliver, not forward.
                    return Err(RouteFault::DeadEnd { at: s, port: p });
                }
                NO_CHANNEL
            } else if p == NO_PATH {
                if comp[s as usize] == rc {
                    return Err(RouteFault::NoEntry { at: s });
                }
                NO_CHANNEL
            } else {
                match g.channel_at(s, p) {
                    Some(c) => c,
                    None => return Err(RouteFault::DeadEnd { at: s, port: p }),
                }
            };
            self.next[s as usize] = c;
        }
        Ok(())
    }

    /// [`link`](Self::link) for minimal routes, given every switch's distance to `root` (`dist`,
    /// `u16::MAX` where unreachable): where every switch but the root that can reach it steps one
    /// hop closer by its next channel, and no other switch forwards, the depths are those
    /// distances and the order is the one `link` computes (by depth, then switch), without
    /// following parent chains. `order_ready`: `order` and `depth` already hold them for this
    /// root (the last tree linked had the same root, by this method), so only the channels are
    /// checked. Returns false where the routes are not such, leaving `order` and `depth` as they
    /// were (then [`link`](Self::link) decides).
    pub fn link_minimal(
        &mut self,
        g: &SwitchGraph,
        root: u32,
        dist: &[u16],
        order_ready: bool,
    ) -> bool {
        let heads = g.chan_head();
        let minimal = self.next.iter().zip(dist).all(|(&c, &ds)| {
            if c == NO_CHANNEL {
                ds == 0 || ds == u16::MAX
            } else {
                ds != u16::MAX && ds > 0 && dist[heads[c as usize] as usize] == ds - 1
            }
        });
        if !minimal || dist.get(root as usize) != Some(&0) {
            return false;
        }
        self.root = root;
        if order_ready {
            return true;
        }
        let ns = g.num_switches();
        if self.by_depth.len() < ns + 2 {
            self.by_depth.resize(ns + 2, 0);
        }
        let mut max_depth = 0usize;
        for (dp, &ds) in self.depth.iter_mut().zip(dist) {
            *dp = if ds == u16::MAX {
                UNSEEN
            } else {
                max_depth = max_depth.max(usize::from(ds));
                self.by_depth[usize::from(ds) + 1] += 1;
                u32::from(ds)
            };
        }
        self.order_by_depth(max_depth);
        true
    }

    /// Builds the tree from next channels already in `self.next` (root's entry [`NO_CHANNEL`]): depths
    /// by following parent chains (each switch once), then a counting sort by depth. O(S).
    pub fn link(&mut self, g: &SwitchGraph, root: u32) -> Result<(), RouteFault> {
        let ns = g.num_switches();
        self.root = root;
        self.depth.fill(UNSEEN);
        self.depth[root as usize] = 0;
        // `by_depth[k + 1]` counts the switches at depth k while depths are found (all zero
        // between calls: reset after use below).
        if self.by_depth.len() < ns + 2 {
            self.by_depth.resize(ns + 2, 0);
        }
        self.by_depth[1] = 1;
        let mut max_depth = 0u32;
        for s0 in 0..ns {
            if self.depth[s0] != UNSEEN || self.next[s0] == NO_CHANNEL {
                continue;
            }
            // Follow parents up to a switch of known depth, then unwind.
            let mut x = s0;
            loop {
                self.depth[x] = ON_CHAIN;
                self.stack.push(x as u32);
                let c = self.next[x];
                if c == NO_CHANNEL {
                    // An unrouted switch is nobody's parent in a valid tree.
                    self.stack.clear();
                    self.by_depth.fill(0);
                    return Err(RouteFault::Loop { at: s0 as u32 });
                }
                x = g.chan_head()[c as usize] as usize;
                match self.depth[x] {
                    UNSEEN => {}
                    ON_CHAIN => {
                        self.stack.clear();
                        self.by_depth.fill(0);
                        return Err(RouteFault::Loop { at: x as u32 });
                    }
                    _ => break,
                }
            }
            let mut dx = self.depth[x];
            while let Some(y) = self.stack.pop() {
                dx += 1;
                self.depth[y as usize] = dx;
                self.by_depth[dx as usize + 1] += 1;
            }
            max_depth = max_depth.max(dx);
        }
        self.order_by_depth(max_depth as usize);
        Ok(())
    }

    /// `order` from `depth`, given `by_depth[k + 1]` = switches at depth k (for k up to
    /// `max_depth`): a counting sort, switches ascending within a depth; `by_depth` is left
    /// zero.
    fn order_by_depth(&mut self, max_depth: usize) {
        let nd = max_depth + 1;
        for k in 0..nd {
            self.by_depth[k + 1] += self.by_depth[k];
        }
        self.order.clear();
        self.order.resize(self.by_depth[nd] as usize, 0);
        for (s, &dp) in self.depth.iter().enumerate() {
            if dp < ON_CHAIN {
                let slot = &mut self.by_depth[dp as usize];
                self.order[*slot as usize] = s as u32;
                *slot += 1;
            }
        }
        self.by_depth[..=nd].fill(0);
    }

    /// Makes this tree a copy of `other` (same fabric), without allocating.
    pub fn copy_from(&mut self, other: &DestTree) {
        self.root = other.root;
        self.next.copy_from_slice(&other.next);
        self.depth.copy_from_slice(&other.depth);
        self.order.clear();
        self.order.extend_from_slice(&other.order);
    }

    /// Whether switch `s` is routed towards the destination (or is its switch).
    #[inline]
    pub fn routed(&self, s: u32) -> bool {
        self.depth[s as usize] < ON_CHAIN
    }

    /// Parent switch of a routed non-root switch.
    #[inline]
    pub fn parent(&self, g: &SwitchGraph, s: u32) -> u32 {
        g.chan_head()[self.next[s as usize] as usize]
    }

    /// Adds to `counts` (or takes out of them, by `change`) the dependency edges of the paths
    /// from every source `s` with `weight(s) > 0`, each weighted by `weight(s)`. O(S).
    pub fn apply(
        &mut self,
        g: &SwitchGraph,
        ei: &EdgeIndex,
        counts: &mut [u32],
        weight: impl Fn(u32) -> u32,
        change: CountChange,
    ) {
        self.edge_weights(g, ei, weight, |e, w| match change {
            CountChange::Add => counts[e] += w,
            CountChange::Remove => {
                debug_assert!(counts[e] >= w, "edge count underflow");
                counts[e] -= w;
            }
        });
    }

    /// Calls `f(edge, w)` once for every dependency edge of the paths from the sources `s` with
    /// `weight(s) > 0`, `w` being the weight of those paths through it (subtree sums). O(S).
    pub fn edge_weights(
        &mut self,
        g: &SwitchGraph,
        ei: &EdgeIndex,
        weight: impl Fn(u32) -> u32,
        mut f: impl FnMut(usize, u32),
    ) {
        for &s in &self.order {
            self.sub[s as usize] = weight(s);
        }
        for &s in self.order[1..].iter().rev() {
            let c1 = self.next[s as usize];
            let h = g.chan_head()[c1 as usize];
            let w = self.sub[s as usize];
            if w == 0 {
                continue;
            }
            self.sub[h as usize] += w;
            if h != self.root {
                f(ei.edge(g, c1, self.next[h as usize]) as usize, w);
            }
        }
    }

    /// Calls `f(e)` for every dependency edge on the path from `s`.
    #[inline]
    pub fn for_path_edges(&self, g: &SwitchGraph, ei: &EdgeIndex, s: u32, mut f: impl FnMut(u32)) {
        let mut c1 = self.next[s as usize];
        if c1 == NO_CHANNEL {
            return;
        }
        loop {
            let h = g.chan_head()[c1 as usize];
            if h == self.root {
                return;
            }
            let c2 = self.next[h as usize];
            f(ei.edge(g, c1, c2));
            c1 = c2;
        }
    }
}

/// The dependency edges a layer holds, as cycle checks read them (by [`EdgeIndex`] slot).
pub trait EdgeSet {
    fn has(&self, e: usize) -> bool;
}

/// Per-edge path counts: an edge is in the layer while some path counts it.
impl EdgeSet for [u32] {
    #[inline]
    fn has(&self, e: usize) -> bool {
        self[e] > 0
    }
}

impl EdgeSet for Vec<u32> {
    #[inline]
    fn has(&self, e: usize) -> bool {
        self.as_slice().has(e)
    }
}

/// Topological order of the channels under the edges of `edges` (Kahn's algorithm), or
/// `None` when the layer's CDG has a cycle. O(C + E).
pub fn topological_order<S: EdgeSet + ?Sized>(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    edges: &S,
) -> Option<Vec<u32>> {
    let nc = g.num_channels();
    let mut indeg = vec![0u32; nc];
    for c in 0..nc as u32 {
        let b = ei.base[c as usize];
        for slot in 0..ei.degree(c) {
            if edges.has((b + slot) as usize) {
                indeg[ei.target(g, c, slot) as usize] += 1;
            }
        }
    }
    let mut order: Vec<u32> = (0..nc as u32).filter(|&c| indeg[c as usize] == 0).collect();
    let mut i = 0;
    while i < order.len() {
        let c = order[i];
        i += 1;
        let b = ei.base[c as usize];
        for slot in 0..ei.degree(c) {
            if edges.has((b + slot) as usize) {
                let t = ei.target(g, c, slot);
                indeg[t as usize] -= 1;
                if indeg[t as usize] == 0 {
                    order.push(t);
                }
            }
        }
    }
    (order.len() == nc).then_some(order)
}

/// Marks a switch that is not in a destination's tree.
pub const NOT_IN_TREE: u16 = u16::MAX;

/// How many ports of a path (from its first switch on) a [`TreeNode`] keeps.
pub const NODE_PORTS: usize = 3;

/// One position of a destination's tree in pre-order ([`TreeIndex`]): everything cycle breaking
/// reads or writes about the path from `at` in one 8-byte record (its layer and the first ports of
/// its route), so that the paths of a subtree are one contiguous run (a cache line or two) and
/// walking the first hops of a path reads no other switch's entry (three ports cover most paths
/// of the random fabrics that cut most; 7 ports, 12 bytes, were no faster and cost 100 MB more
/// at 20k CAs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct TreeNode {
    /// The switch at this position.
    pub at: u16,
    /// One past the last position of its subtree.
    pub end: u16,
    /// The layer of its path (cycle breaking's working copy of the layer table).
    pub layer: u8,
    /// The ports of its path: `ports[j]` is the one its `j`-th switch forwards by (`at` is
    /// the 0th), for the first [`NODE_PORTS`] switches (the rest from the LFT).
    pub ports: [u8; NODE_PORTS],
}

/// Destinations' trees in depth-first pre-order, so that the subtree of any switch is a
/// contiguous run. Per destination with a row (all of them, or those cycle breaking can move: a
/// *slot* each) `S` entries: `nodes[k]`, the switch at position `k` with its subtree's end, its
/// path's layer and ports; `pos[s]`, the position of switch `s` ([`NOT_IN_TREE`] if unrouted,
/// and for every switch of a destination without a row). `u16` suffices because every switch
/// owns one of the 49151 unicast LIDs. 10 bytes per (switch, destination with a row), built in
/// parallel when cycle breaking starts.
pub struct TreeIndex {
    ns: usize,
    /// Per destination, its row's slot ([`NO_ROW`]: none).
    slot: Vec<u32>,
    /// Per slot, its destination (ascending).
    dest: Vec<u32>,
    pos: Vec<u16>,
    nodes: Vec<TreeNode>,
}

/// A destination without a row in a [`TreeIndex`].
const NO_ROW: u32 = u32::MAX;

/// Scratch for building one row of a [`TreeIndex`].
pub struct EulerScratch {
    next: Vec<u32>,
    child_start: Vec<u32>,
    children: Vec<u32>,
    stack: Vec<u32>,
}

impl EulerScratch {
    pub fn new(ns: usize) -> Self {
        EulerScratch {
            next: vec![NO_CHANNEL; ns],
            child_start: vec![0; ns + 1],
            children: vec![0; ns],
            stack: Vec::with_capacity(2 * ns),
        }
    }
}

impl TreeIndex {
    /// Builds the rows of all destinations from the destination-major LFT copy `cols`; every
    /// path in layer 0.
    pub fn build(g: &SwitchGraph, cols: &[u8]) -> Self {
        Self::build_for(g, cols, |_| true)
    }

    /// Builds rows for the destinations `which` picks (by index) alone, from `cols`: where
    /// cycle breaking can only move their paths, the others' rows would be read to no end
    /// (48-port 3-level tree: 1,728 of 30,528 destinations, 50 MB instead of 880 MB).
    pub fn build_for(g: &SwitchGraph, cols: &[u8], which: impl Fn(usize) -> bool + Sync) -> Self {
        use rayon::prelude::*;
        let ns = g.num_switches();
        let nd = g.dests().len();
        let mut slot = vec![NO_ROW; nd];
        let mut dest = Vec::new();
        for (di, sl) in slot.iter_mut().enumerate() {
            if which(di) {
                *sl = dest.len() as u32;
                dest.push(di as u32);
            }
        }
        let rows = dest.len();
        // Filled in parallel: hundreds of MB on large fabrics, first touched here.
        let mut ti = TreeIndex {
            ns,
            slot,
            dest,
            pos: Vec::with_capacity(ns * rows),
            nodes: Vec::with_capacity(ns * rows),
        };
        if crate::par::worth_it(ns * rows) {
            ti.pos
                .par_extend(rayon::iter::repeat_n(NOT_IN_TREE, ns * rows));
            ti.nodes
                .par_extend(rayon::iter::repeat_n(TreeNode::default(), ns * rows));
        } else {
            ti.pos.resize(ns * rows, NOT_IN_TREE);
            ti.nodes.resize(ns * rows, TreeNode::default());
        }
        if ns > 0 {
            let rows_in = ti
                .pos
                .par_chunks_mut(ns)
                .zip(ti.nodes.par_chunks_mut(ns))
                .zip(ti.dest.par_iter());
            crate::par::sized(rows_in, ns * rows).for_each_init(
                || EulerScratch::new(ns),
                |sc, ((pos, nodes), &di)| fill_row(g, cols, di as usize, sc, pos, nodes),
            );
        }
        ti
    }

    /// Whether destination `di` has a row.
    #[inline]
    pub fn has_row(&self, di: usize) -> bool {
        self.slot[di] != NO_ROW
    }

    /// Destination `di`'s row's slot (`None`: no row).
    #[inline]
    pub fn slot(&self, di: usize) -> Option<usize> {
        (self.slot[di] != NO_ROW).then_some(self.slot[di] as usize)
    }

    /// Pre-order position of switch `s` in destination `di`'s tree ([`NOT_IN_TREE`] if unrouted
    /// or `di` has no row).
    #[inline]
    pub fn position(&self, di: usize, s: u32) -> u16 {
        match self.slot[di] {
            NO_ROW => NOT_IN_TREE,
            k => self.pos[k as usize * self.ns + s as usize],
        }
    }

    /// Destination `di`'s row; it must have one ([`Self::has_row`]).
    #[inline]
    pub fn row(&self, di: usize) -> &[TreeNode] {
        let k = self.slot[di] as usize;
        &self.nodes[k * self.ns..(k + 1) * self.ns]
    }

    /// Destination `di`'s row, mutable; it must have one ([`Self::has_row`]).
    #[inline]
    pub fn row_mut(&mut self, di: usize) -> &mut [TreeNode] {
        let k = self.slot[di] as usize;
        &mut self.nodes[k * self.ns..(k + 1) * self.ns]
    }

    /// Reads the node at position `k` of destination `di` and returns a value derived from it:
    /// touching the entries of destinations some way ahead lets their cache misses overlap the
    /// work on earlier ones.
    #[inline]
    pub fn touch(&self, di: usize, k: u16) -> u32 {
        let slot = self.slot[di];
        if k == NOT_IN_TREE || slot == NO_ROW {
            return 0;
        }
        let n = &self.nodes[slot as usize * self.ns + usize::from(k)];
        u32::from(n.end) ^ u32::from(n.layer)
    }

    /// Frees the positions (once nothing asks for them any more).
    pub fn drop_positions(&mut self) {
        self.pos = Vec::new();
    }

    /// How many destinations have a row (the slots are `0..rows()`).
    pub fn rows(&self) -> usize {
        self.dest.len()
    }

    /// Every row (`S` nodes each, a tree of `row[0].end` of them) with its destination, in slot
    /// (and destination) order, in parallel.
    pub fn par_rows(&self) -> impl IndexedParallelIterator<Item = (usize, &[TreeNode])> + '_ {
        use rayon::prelude::*;
        self.dest
            .par_iter()
            .map(|&di| di as usize)
            .zip(self.nodes.par_chunks_exact(self.ns.max(1)))
    }

    /// Every row, mutable, with its destination, in slot order, in parallel.
    pub fn par_rows_mut(
        &mut self,
    ) -> impl IndexedParallelIterator<Item = (usize, &mut [TreeNode])> + '_ {
        use rayon::prelude::*;
        self.dest
            .par_iter()
            .map(|&di| di as usize)
            .zip(self.nodes.par_chunks_exact_mut(self.ns.max(1)))
    }
}

/// Destination `di`'s row from its column of `cols`, into an empty row.
fn fill_row(
    g: &SwitchGraph,
    cols: &[u8],
    di: usize,
    sc: &mut EulerScratch,
    pos: &mut [u16],
    nodes: &mut [TreeNode],
) {
    let ns = pos.len();
    let d = &g.dests()[di];
    if d.switch == NO_SWITCH {
        return;
    }
    let col = &cols[di * ns..(di + 1) * ns];
    for (s, (n, &p)) in sc.next.iter_mut().zip(col).enumerate() {
        *n = g.channel_at(s as u32, p).unwrap_or(NO_CHANNEL);
    }
    sc.next[d.switch as usize] = NO_CHANNEL;
    euler_row(g, d.switch, sc, pos, nodes);
}

/// One destination's pre-order numbering (children CSR, then an iterative DFS whose stack holds
/// a post-visit marker per switch to close its subtree's run).
fn euler_row(
    g: &SwitchGraph,
    root: u32,
    sc: &mut EulerScratch,
    pos: &mut [u16],
    nodes: &mut [TreeNode],
) {
    const POST: u32 = 1 << 31;
    let ns = pos.len();
    sc.child_start.fill(0);
    for &c in &sc.next {
        if c != NO_CHANNEL {
            sc.child_start[g.chan_head()[c as usize] as usize + 1] += 1;
        }
    }
    for s in 0..ns {
        sc.child_start[s + 1] += sc.child_start[s];
    }
    sc.stack.clear();
    sc.stack.extend_from_slice(&sc.child_start[..ns]);
    for (s, &c) in sc.next.iter().enumerate() {
        if c != NO_CHANNEL {
            let h = g.chan_head()[c as usize] as usize;
            sc.children[sc.stack[h] as usize] = s as u32;
            sc.stack[h] += 1;
        }
    }
    sc.stack.clear();
    sc.stack.push(root);
    let mut k = 0u16;
    while let Some(x) = sc.stack.pop() {
        if x & POST != 0 {
            let x = (x & !POST) as usize;
            nodes[usize::from(pos[x])].end = k;
            continue;
        }
        let xs = x as usize;
        pos[xs] = k;
        let c = sc.next[xs];
        let mut ports = [0u8; NODE_PORTS];
        if c != NO_CHANNEL {
            // Pre-order: the parent is numbered before its children.
            let up = &nodes[usize::from(pos[g.chan_head()[c as usize] as usize])];
            ports[0] = g.chan_port()[c as usize];
            ports[1..].copy_from_slice(&up.ports[..NODE_PORTS - 1]);
        }
        nodes[usize::from(k)] = TreeNode {
            at: x as u16,
            end: 0,
            layer: 0,
            ports,
        };
        k += 1;
        sc.stack.push(x | POST);
        for j in sc.child_start[xs]..sc.child_start[xs + 1] {
            sc.stack.push(sc.children[j as usize]);
        }
    }
}
