//! Offline cycle breaking (seed 003, Algorithm 2): all paths start in layer 0; a depth-first search
//! over the layer's CDG stops at each cycle, the cycle's weakest dependency edge (fewest paths) is
//! cut by moving every path that induces it to the next layer, and the search resumes from the
//! deepest point of its stack that is still intact. Then the next layer is processed the same way.
//!
//! Resuming is sound: moving paths only removes dependency edges from the current layer. Stack
//! frames above the first stack edge that lost all its paths are popped back to "unvisited", and a
//! channel turns "done" only when every one of its remaining out-edges leads to a done channel
//! (an edge into the stack is a cycle and is cut, or its frame is popped). Done channels can then
//! never lie on a cycle: the last of a cycle's channels to be finished would have had a
//! predecessor on the cycle already finished with an edge into an unfinished channel. So one pass
//! per layer finds every cycle, as the paper states.

use crate::fabric::{SwitchGraph, NONE};
use crate::routing::{Lft, SwitchLidTable};

use super::cdg::{EdgeIndex, TreeIndex};

const WHITE: u8 = 0;
const GRAY: u8 = 1;
const BLACK: u8 = 2;

/// State of the offline algorithm over the original routes.
pub(crate) struct Breaker<'a> {
    pub g: &'a SwitchGraph,
    pub ei: &'a EdgeIndex,
    pub lft: &'a Lft,
    /// Destination-major copy of the LFT: `cols[di * S + s]` is the port switch `s` uses for
    /// `dests[di]` (contiguous per destination, for building its tree fast).
    pub cols: &'a [u8],
    /// Destination trees in pre-order (subtrees are contiguous runs).
    trees: TreeIndex,
    /// Path weight of every source switch (source ports it stands for).
    pub weight: &'a [u32],
    pub layers: &'a mut SwitchLidTable,
    /// Per-layer edge counts (allocated when a layer is first used).
    pub counts: Vec<Vec<u32>>,
    /// Dependency edges cut so far.
    pub cuts: u64,
    /// (switch, LID) paths moved to a higher layer so far (a path moved twice counts twice).
    pub moved_paths: u64,
    // DFS scratch.
    state: Vec<u8>,
    stack_pos: Vec<u32>,
    stack: Vec<(u32, u32)>,
    /// Moved weight per switch (subtree sums), indexed by switch.
    sub: Vec<u32>,
}

impl<'a> Breaker<'a> {
    pub fn new(
        g: &'a SwitchGraph,
        ei: &'a EdgeIndex,
        lft: &'a Lft,
        cols: &'a [u8],
        weight: &'a [u32],
        layers: &'a mut SwitchLidTable,
        counts0: Vec<u32>,
    ) -> Self {
        let nc = g.num_channels();
        Breaker {
            g,
            ei,
            lft,
            cols,
            trees: TreeIndex::build(g, cols),
            weight,
            layers,
            counts: vec![counts0],
            cuts: 0,
            moved_paths: 0,
            state: vec![WHITE; nc],
            stack_pos: vec![NONE; nc],
            stack: Vec::new(),
            sub: vec![0; g.num_switches()],
        }
    }

    fn ensure_layer(&mut self, l: usize) {
        while self.counts.len() <= l {
            self.counts.push(vec![0; self.ei.num_edges()]);
        }
    }

    /// Breaks every cycle of layer `i` by moving paths to layer `i + 1`. Returns the number of
    /// dependency edges cut (0: the layer was already acyclic).
    pub fn break_layer(&mut self, i: usize) -> u64 {
        let (g, ei) = (self.g, self.ei);
        let nc = g.num_channels() as u32;
        self.state.fill(WHITE);
        let mut cuts = 0u64;
        for start in 0..nc {
            if self.state[start as usize] != WHITE {
                continue;
            }
            self.push(start);
            while let Some(&(c, slot0)) = self.stack.last() {
                let base = ei.base[c as usize];
                let deg = ei.degree(c);
                let mut slot = slot0;
                let mut action = None;
                while slot < deg {
                    if self.counts[i][(base + slot) as usize] > 0 {
                        let t = ei.target(g, c, slot);
                        match self.state[t as usize] {
                            WHITE => {
                                action = Some((t, false));
                                break;
                            }
                            GRAY => {
                                action = Some((t, true));
                                break;
                            }
                            _ => {}
                        }
                    }
                    slot += 1;
                }
                self.stack.last_mut().expect("non-empty").1 = slot;
                match action {
                    Some((t, false)) => self.push(t),
                    Some((t, true)) => {
                        self.cut_cycle(i, t);
                        cuts += 1;
                    }
                    None => {
                        self.state[c as usize] = BLACK;
                        self.stack.pop();
                        if let Some(top) = self.stack.last_mut() {
                            top.1 += 1;
                        }
                    }
                }
            }
        }
        self.cuts += cuts;
        cuts
    }

    fn push(&mut self, c: u32) {
        self.state[c as usize] = GRAY;
        self.stack_pos[c as usize] = self.stack.len() as u32;
        self.stack.push((c, 0));
    }

    /// The top of the stack has an edge (at its current slot) into the stack channel `t`: cut the
    /// weakest edge of that cycle and pop the stack back to the first edge left without paths.
    fn cut_cycle(&mut self, i: usize, t: u32) {
        let ei = self.ei;
        let from = self.stack_pos[t as usize] as usize;
        let mut weakest = (u32::MAX, NONE, NONE, NONE);
        for k in from..self.stack.len() {
            let (c, slot) = self.stack[k];
            let e = ei.base[c as usize] + slot;
            let w = self.counts[i][e as usize];
            if w < weakest.0 {
                weakest = (w, e, c, ei.target(self.g, c, slot));
            }
        }
        let (_, e, c1, c2) = weakest;
        self.move_edge_paths(i, c1, c2);
        debug_assert_eq!(self.counts[i][e as usize], 0, "weakest edge not emptied");

        // Pop back to the first stack edge that lost all its paths (there is one: the cut edge).
        let k = (0..self.stack.len())
            .find(|&k| {
                let (c, slot) = self.stack[k];
                self.counts[i][(ei.base[c as usize] + slot) as usize] == 0
            })
            .expect("the cut edge is on the stack");
        for &(c, _) in &self.stack[k + 1..] {
            self.state[c as usize] = WHITE;
        }
        self.stack.truncate(k + 1);
        self.stack[k].1 += 1;
    }

    /// Moves every layer-`i` path that takes `c1` then `c2` to layer `i + 1`, updating the edge
    /// counts of both layers along the whole of every moved path. Cost: two LFT rows to find the
    /// destinations behind the edge, then per destination the subtree of `tail(c1)` and the
    /// path from there to the destination.
    pub fn move_edge_paths(&mut self, i: usize, c1: u32, c2: u32) {
        self.ensure_layer(i + 1);
        let (g, ei, lft, cols, weight) = (self.g, self.ei, self.lft, self.cols, self.weight);
        let ns = g.num_switches();
        let (u, v) = (g.chan_tail[c1 as usize], g.chan_head[c1 as usize]);
        let (pu, pv) = (g.chan_port[c1 as usize], g.chan_port[c2 as usize]);
        let row_u = lft.table(u);
        let row_v = lft.table(v);
        let layer = i as u8;
        let (lo, hi) = self.counts.split_at_mut(i + 1);
        let (cur, nxt) = (&mut lo[i], &mut hi[0]);
        let sub = &mut self.sub;
        for (lid, (&a, &b)) in row_u.iter().zip(row_v).enumerate() {
            if a != pu || b != pv {
                continue;
            }
            let di = g.lid_dest[lid];
            if di == NONE {
                continue;
            }
            let di = di as usize;
            let root = g.dests[di].switch;
            let lid = lid as u16;
            let col = &cols[di * ns..(di + 1) * ns];
            // The trees were validated when layer 0 was built.
            let next = |x: u32| g.channel_at(x, col[x as usize]).unwrap_or(NONE);
            // Sources in u's subtree still in layer i move; their weights summed bottom-up.
            let st = self.trees.subtree(di, u);
            let mut moved = 0u64;
            for &x in st {
                sub[usize::from(x)] = if self.layers.get(u32::from(x), lid) == layer {
                    self.layers.set(u32::from(x), lid, layer + 1);
                    moved += 1;
                    weight[usize::from(x)]
                } else {
                    0
                };
            }
            if moved == 0 {
                continue;
            }
            self.moved_paths += moved;
            for &x in st[1..].iter().rev() {
                let w = sub[usize::from(x)];
                if w > 0 {
                    let p = g.chan_head[next(u32::from(x)) as usize];
                    sub[p as usize] += w;
                }
            }
            // Shifts the edge a switch contributes from layer i to i + 1; returns its parent.
            let mut shift = |x: u32, w: u32| {
                let cx = next(x);
                let h = g.chan_head[cx as usize];
                if h != root {
                    let e = ei.edge(g, cx, next(h)) as usize;
                    cur[e] -= w;
                    nxt[e] += w;
                }
                h
            };
            for &x in st {
                let w = sub[usize::from(x)];
                if w > 0 {
                    shift(u32::from(x), w);
                }
            }
            // Above u every moved path shares the same channels.
            let w = sub[u as usize];
            let mut x = v;
            while x != root {
                x = shift(x, w);
            }
        }
    }
}
