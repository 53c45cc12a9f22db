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

use super::cdg::{DestTree, EdgeIndex};

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
    /// Path weight of every source switch (source ports it stands for).
    pub weight: &'a [u32],
    pub layers: &'a mut SwitchLidTable,
    /// Per-layer edge counts (allocated when a layer is first used).
    pub counts: Vec<Vec<u32>>,
    pub tree: DestTree,
    /// Dependency edges cut so far.
    pub cuts: u64,
    /// (switch, LID) paths moved to a higher layer so far (a path moved twice counts twice).
    pub moved_paths: u64,
    // DFS scratch.
    state: Vec<u8>,
    stack_pos: Vec<u32>,
    stack: Vec<(u32, u32)>,
    list: Vec<u32>,
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
            weight,
            layers,
            counts: vec![counts0],
            tree: DestTree::new(g.num_switches()),
            cuts: 0,
            moved_paths: 0,
            state: vec![WHITE; nc],
            stack_pos: vec![NONE; nc],
            stack: Vec::new(),
            list: Vec::new(),
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
    /// counts of both layers along the whole of every moved path.
    pub fn move_edge_paths(&mut self, i: usize, c1: u32, c2: u32) {
        self.ensure_layer(i + 1);
        let g = self.g;
        let ei = self.ei;
        let ns = g.num_switches();
        let (u, v) = (g.chan_tail[c1 as usize], g.chan_head[c1 as usize]);
        let (pu, pv) = (g.chan_port[c1 as usize], g.chan_port[c2 as usize]);
        let row_u = self.lft.table(u);
        let row_v = self.lft.table(v);
        let layer = i as u8;
        let (lo, hi) = self.counts.split_at_mut(i + 1);
        let (cur, nxt) = (&mut lo[i], &mut hi[0]);
        for (lid, (&a, &b)) in row_u.iter().zip(row_v).enumerate() {
            if a != pu || b != pv {
                continue;
            }
            let di = g.lid_dest[lid];
            if di == NONE {
                continue;
            }
            let d = &g.dests[di as usize];
            let lid = lid as u16;
            let col = &self.cols[di as usize * ns..(di as usize + 1) * ns];
            let tree = &mut self.tree;
            // The routes were validated when layer 0 was built; only the links are rebuilt here.
            for s in 0..ns {
                tree.next[s] = if s as u32 == d.switch {
                    NONE
                } else {
                    g.channel_at(s as u32, col[s]).unwrap_or(NONE)
                };
            }
            if tree.link(g, d.switch).is_err() {
                debug_assert!(false, "tree validated before");
                continue;
            }
            // Sources in u's subtree that are still in layer i move; sum them bottom-up.
            self.list.clear();
            self.list.push(u);
            let mut k = 0;
            while k < self.list.len() {
                let x = self.list[k] as usize;
                k += 1;
                for j in tree.child_start[x]..tree.child_start[x + 1] {
                    self.list.push(tree.children[j as usize]);
                }
            }
            let mut moved = 0u64;
            for &x in &self.list {
                tree.sub[x as usize] = if self.layers.get(x, lid) == layer {
                    self.layers.set(x, lid, layer + 1);
                    moved += 1;
                    self.weight[x as usize]
                } else {
                    0
                };
            }
            if moved == 0 {
                continue;
            }
            self.moved_paths += moved;
            for &x in self.list[1..].iter().rev() {
                let p = g.chan_head[tree.next[x as usize] as usize];
                tree.sub[p as usize] += tree.sub[x as usize];
            }
            let mut shift = |x: u32, w: u32| {
                let cx = tree.next[x as usize];
                let h = g.chan_head[cx as usize];
                if h != tree.root {
                    let e = ei.edge(g, cx, tree.next[h as usize]) as usize;
                    cur[e] -= w;
                    nxt[e] += w;
                }
                h
            };
            for &x in &self.list {
                let w = tree.sub[x as usize];
                if w > 0 {
                    shift(x, w);
                }
            }
            // Above u every moved path shares the same channels.
            let w = tree.sub[u as usize];
            let mut x = v;
            while x != tree.root {
                x = shift(x, w);
            }
        }
    }
}
