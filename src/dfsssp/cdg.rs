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

use crate::fabric::{Dest, SwitchGraph, NONE};
use crate::routing::NO_PATH;

/// Dense ids for the possible dependency edges of the switch graph.
#[derive(Clone, Debug)]
pub struct EdgeIndex {
    /// `base[c]..base[c+1]`: the edges leaving channel `c`, one per out-channel of `head(c)`.
    pub base: Vec<u32>,
}

impl EdgeIndex {
    pub fn new(g: &SwitchGraph) -> Self {
        let nc = g.num_channels();
        let mut base = Vec::with_capacity(nc + 1);
        let mut acc = 0u64;
        base.push(0);
        for c in 0..nc {
            let h = g.chan_head[c] as usize;
            acc += u64::from(g.out_start[h + 1] - g.out_start[h]);
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
        let h = g.chan_head[c1 as usize] as usize;
        debug_assert_eq!(g.chan_tail[c2 as usize] as usize, h);
        self.base[c1 as usize] + (c2 - g.out_start[h])
    }

    /// The channel an edge slot of `c1` leads to.
    #[inline]
    pub fn target(&self, g: &SwitchGraph, c1: u32, slot: u32) -> u32 {
        g.out_start[g.chan_head[c1 as usize] as usize] + slot
    }

    /// Number of edge slots of channel `c`.
    #[inline]
    pub fn degree(&self, c: u32) -> u32 {
        self.base[c as usize + 1] - self.base[c as usize]
    }
}

/// Why the forwarding tables towards a LID do not form a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeFault {
    /// `switch` has no entry although it is connected to the destination.
    NoEntry { switch: u32 },
    /// `switch` forwards to `port`, which leads to no switch and is not the destination's port.
    DeadEnd { switch: u32, port: u8 },
    /// `switch` is routed but its route never reaches the destination (a forwarding loop).
    Loop { switch: u32 },
}

/// The in-tree of the routes towards one destination, with reusable buffers.
#[derive(Clone, Debug)]
pub struct DestTree {
    /// The destination's switch.
    pub root: u32,
    /// Channel each switch forwards by; [`NONE`] for the root and for unrouted switches.
    pub next: Vec<u32>,
    /// Routed switches in depth-first pre-order from the root (root first): every switch comes
    /// after its parent, so reverse order is bottom-up, and every subtree is a contiguous run.
    pub order: Vec<u32>,
    /// Number of switches in every routed switch's subtree (itself included).
    pub size: Vec<u32>,
    /// Children CSR: `children[child_start[s]..child_start[s+1]]`.
    pub child_start: Vec<u32>,
    pub children: Vec<u32>,
    /// Depth (switch-to-switch hops to the root) of every routed switch.
    pub depth: Vec<u32>,
    /// Scratch for subtree sums.
    pub sub: Vec<u32>,
    stack: Vec<u32>,
}

impl DestTree {
    pub fn new(ns: usize) -> Self {
        DestTree {
            root: NONE,
            next: vec![NONE; ns],
            order: Vec::with_capacity(ns),
            child_start: vec![0; ns + 1],
            children: vec![0; ns],
            depth: vec![0; ns],
            size: vec![0; ns],
            sub: vec![0; ns],
            stack: Vec::with_capacity(ns),
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
    ) -> Result<(), TreeFault> {
        let root = d.switch;
        let rc = comp[root as usize];
        for s in 0..g.num_switches() as u32 {
            let p = ports(s);
            let c = if s == root {
                if p != d.exit_port {
                    // The destination's own switch must deliver, not forward.
                    return Err(TreeFault::DeadEnd { switch: s, port: p });
                }
                NONE
            } else if p == NO_PATH {
                if comp[s as usize] == rc {
                    return Err(TreeFault::NoEntry { switch: s });
                }
                NONE
            } else {
                match g.channel_at(s, p) {
                    Some(c) => c,
                    None => return Err(TreeFault::DeadEnd { switch: s, port: p }),
                }
            };
            self.next[s as usize] = c;
        }
        self.link(g, root)
    }

    /// Builds the tree from next channels already in `self.next` (root's entry [`NONE`]).
    pub fn link(&mut self, g: &SwitchGraph, root: u32) -> Result<(), TreeFault> {
        let ns = g.num_switches();
        self.root = root;
        self.child_start.fill(0);
        let mut routed = 1usize;
        for s in 0..ns {
            let c = self.next[s];
            if c != NONE {
                self.child_start[g.chan_head[c as usize] as usize + 1] += 1;
                routed += 1;
            }
        }
        for s in 0..ns {
            self.child_start[s + 1] += self.child_start[s];
        }
        // Fill using `sub` as the per-parent cursor.
        for s in 0..ns {
            self.sub[s] = self.child_start[s];
        }
        for s in 0..ns {
            let c = self.next[s];
            if c != NONE {
                let h = g.chan_head[c as usize] as usize;
                self.children[self.sub[h] as usize] = s as u32;
                self.sub[h] += 1;
            }
        }
        self.order.clear();
        self.stack.clear();
        self.stack.push(root);
        self.depth[root as usize] = 0;
        while let Some(v) = self.stack.pop() {
            self.order.push(v);
            let v = v as usize;
            let dv = self.depth[v] + 1;
            for k in self.child_start[v]..self.child_start[v + 1] {
                let ch = self.children[k as usize];
                self.depth[ch as usize] = dv;
                self.stack.push(ch);
            }
        }
        for &s in &self.order {
            self.size[s as usize] = 1;
        }
        for &s in self.order[1..].iter().rev() {
            let p = g.chan_head[self.next[s as usize] as usize] as usize;
            self.size[p] += self.size[s as usize];
        }
        if self.order.len() != routed {
            // Some routed switch never reaches the root: its parent chain closes a loop.
            let s = (0..ns)
                .find(|&s| self.next[s] != NONE && !self.reached(g, s as u32))
                .unwrap_or(0);
            return Err(TreeFault::Loop { switch: s as u32 });
        }
        Ok(())
    }

    /// Whether following `next` from `s` ends at the root (slow; only for error reporting).
    fn reached(&self, g: &SwitchGraph, mut s: u32) -> bool {
        for _ in 0..=g.num_switches() {
            if s == self.root {
                return true;
            }
            let c = self.next[s as usize];
            if c == NONE {
                return false;
            }
            s = g.chan_head[c as usize];
        }
        false
    }

    /// Parent switch of a routed non-root switch.
    #[inline]
    pub fn parent(&self, g: &SwitchGraph, s: u32) -> u32 {
        g.chan_head[self.next[s as usize] as usize]
    }

    /// Adds (or subtracts) to `counts` the dependency edges of the paths from every source `s`
    /// with `weight(s) > 0`, each weighted by `weight(s)`. O(S).
    pub fn apply(
        &mut self,
        g: &SwitchGraph,
        ei: &EdgeIndex,
        counts: &mut [u32],
        weight: impl Fn(u32) -> u32,
        add: bool,
    ) {
        for &s in &self.order {
            self.sub[s as usize] = weight(s);
        }
        for &s in self.order[1..].iter().rev() {
            let c1 = self.next[s as usize];
            let h = g.chan_head[c1 as usize];
            let w = self.sub[s as usize];
            if w == 0 {
                continue;
            }
            self.sub[h as usize] += w;
            if h != self.root {
                let e = ei.edge(g, c1, self.next[h as usize]) as usize;
                if add {
                    counts[e] += w;
                } else {
                    debug_assert!(counts[e] >= w, "edge count underflow");
                    counts[e] -= w;
                }
            }
        }
    }

    /// Calls `f(e)` for every dependency edge on the path from `s`.
    #[inline]
    pub fn for_path_edges(&self, g: &SwitchGraph, ei: &EdgeIndex, s: u32, mut f: impl FnMut(u32)) {
        let mut c1 = self.next[s as usize];
        if c1 == NONE {
            return;
        }
        loop {
            let h = g.chan_head[c1 as usize];
            if h == self.root {
                return;
            }
            let c2 = self.next[h as usize];
            f(ei.edge(g, c1, c2));
            c1 = c2;
        }
    }
}

/// Connected components of the switch graph (links are bidirectional): a label per switch.
pub fn components(g: &SwitchGraph) -> Vec<u32> {
    let ns = g.num_switches();
    let mut comp = vec![NONE; ns];
    let mut stack = Vec::new();
    let mut label = 0u32;
    for s0 in 0..ns as u32 {
        if comp[s0 as usize] != NONE {
            continue;
        }
        comp[s0 as usize] = label;
        stack.push(s0);
        while let Some(v) = stack.pop() {
            for c in g.out_channels(v) {
                let w = g.chan_head[c as usize];
                if comp[w as usize] == NONE {
                    comp[w as usize] = label;
                    stack.push(w);
                }
            }
        }
        label += 1;
    }
    comp
}

/// Topological order of the channels under the edges with a non-zero count (Kahn's algorithm), or
/// `None` when the layer's CDG has a cycle. O(C + E).
pub fn topological_order(g: &SwitchGraph, ei: &EdgeIndex, counts: &[u32]) -> Option<Vec<u32>> {
    let nc = g.num_channels();
    let mut indeg = vec![0u32; nc];
    for c in 0..nc as u32 {
        let b = ei.base[c as usize];
        for slot in 0..ei.degree(c) {
            if counts[(b + slot) as usize] > 0 {
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
            if counts[(b + slot) as usize] > 0 {
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

/// Every destination's tree in depth-first pre-order, so that the subtree of any switch is a
/// contiguous run: `at[k]` is the switch at position `k`, `pos[s]` the position of switch `s`
/// ([`NOT_IN_TREE`] if unrouted) and `end[k]` one past the last position of `at[k]`'s subtree.
/// One row of `S` entries per destination; `u16` suffices because every switch owns a LID.
pub struct TreeIndex {
    pub ns: usize,
    pub pos: Vec<u16>,
    pub at: Vec<u16>,
    pub end: Vec<u16>,
}

impl TreeIndex {
    pub fn new(ns: usize, nd: usize) -> Self {
        TreeIndex {
            ns,
            pos: vec![NOT_IN_TREE; ns * nd],
            at: vec![0; ns * nd],
            end: vec![0; ns * nd],
        }
    }

    /// Records `tree` as destination `di`'s row (`pos`, `at`, `end` are that row's slices).
    pub fn record(tree: &DestTree, pos: &mut [u16], at: &mut [u16], end: &mut [u16]) {
        pos.fill(NOT_IN_TREE);
        for (k, &s) in tree.order.iter().enumerate() {
            pos[s as usize] = k as u16;
            at[k] = s as u16;
            end[k] = (k as u32 + tree.size[s as usize]) as u16;
        }
    }

    /// The switches of the subtree of `s` in destination `di`'s tree (`s` first), pre-order.
    #[inline]
    pub fn subtree(&self, di: usize, s: u32) -> &[u16] {
        let row = di * self.ns;
        let k = self.pos[row + s as usize];
        if k == NOT_IN_TREE {
            return &[];
        }
        let k = usize::from(k);
        &self.at[row + k..row + usize::from(self.end[row + k])]
    }
}
