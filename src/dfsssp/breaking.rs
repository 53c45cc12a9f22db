//! Offline cycle breaking (Domke et al., Algorithm 2): all paths start in layer 0; a depth-first search
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

use rayon::prelude::*;

use crate::bits;
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_DEST};
use crate::routing::Lft;

use super::cdg::{EdgeIndex, TreeIndex, TreeNode, NODE_PORTS};
use super::Cutting;

/// [`Cutting::Auto`] cuts in batches when the probe marks at least this many edges per 100 edges
/// of layer 0. Measured (8 lanes): random fabrics of 36-port switches 55-56 (batches 2-3x faster
/// from 10k CAs), dragonflies 32-33 (batches no faster at 16k CAs, slower at 40k), 3-level fat
/// trees 1.
const BATCH_MARKS_PER_100_EDGES: usize = 45;

/// The same bound below [`super::BATCHED_CUTTING_LARGE_PATHS`] (switch, destination) pairs, where
/// batches only ever gained on random fabrics (51-55 marks per 100 edges from 200 switches on)
/// and tori with a cable missing mark just above 45 (46-47), which batches cut worse: on the
/// 8x8x8 torus with 1% of its cables missing the layers' Λ fell from 0.2270 to 0.2039.
pub(crate) const BATCH_MARKS_PER_100_EDGES_MID: usize = 50;

const WHITE: u8 = 0;
const GRAY: u8 = 1;
const BLACK: u8 = 2;
/// `stack_pos` of a channel not on the DFS stack.
const NOT_STACKED: u32 = u32::MAX;
/// No dependency edge: a route that ends at the switch after it.
const NO_EDGE: u32 = u32::MAX;

/// What the search of a layer does at each cycle it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AtCycle {
    /// Cuts the cycle's weakest edge, its paths moved a layer up before the search goes on
    /// (exact cutting).
    Cut,
    /// Marks the weakest edge and goes on as if it were gone; the paths of the marked edges
    /// move in one pass at the end (batched cutting, and the probe).
    Mark,
}

/// Where the next live edge of the search's top channel leads.
#[derive(Clone, Copy, Debug)]
enum NextEdge {
    /// To a channel not visited yet: the search goes there.
    Unvisited(u32),
    /// To a channel on the stack: the edge closes a cycle.
    OnStack(u32),
}

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
    /// Beside each frame of a batched search, the paths on its current edge: marking leaves
    /// the counts alone, so they are read once per edge taken, not once per cycle through it
    /// (cycles run ~100 frames long on random fabrics).
    stack_w: Vec<u32>,
    /// Moved weight per tree position (subtree sums) of the destination at hand.
    sub: Vec<u32>,
    /// `edge_dests[edge_start[e]..edge_start[e + 1]]`: the destinations (ascending LID) whose
    /// original routes take dependency edge `e` somewhere, so a cut visits only those instead of
    /// scanning two LFT rows of length max_lid; each packed as `di << 16 | k`, `k` the pre-order
    /// position of the edge's first switch in `di`'s tree (saves a cache miss per destination).
    /// Built once cuts are frequent enough to pay for it (`LIST_AFTER_CUTS`); before that a
    /// cut scans the two LFT rows.
    edge_start: Vec<u32>,
    edge_dests: Vec<u32>,
    /// How many entries at the start of each edge's list are still live (destinations with
    /// paths above the layers already processed behind the edge).
    edge_live: Vec<u32>,
    /// Per list entry, a lower bound on the layers of the destination's paths behind the edge
    /// that can still move (the least above the layer of its last visit: layers only grow, and
    /// paths below the layer at hand never move again), so a cut in a lower layer than that
    /// skips it without reading its tree.
    edge_floor: Vec<u8>,
    /// Destinations with a path moved (the others have every path in layer 0).
    touched: Vec<bool>,
    /// Cuts moved by scanning LFT rows so far.
    scanned_cuts: usize,
    /// How to cut: exact, in batches ([`Self::break_layer`]), or decided by [`Self::probe`].
    pub(crate) cutting: Cutting,
    /// Marks per 100 edges of the first layer from which [`Self::probe`] chooses batches.
    pub(crate) batch_marks_per_100: usize,
    /// Marks found by [`Self::probe`] on the first layer when it chose batches (in `cut_mark`
    /// too): the first batched move of that layer uses them instead of searching again.
    probed: Option<Vec<u32>>,
    /// The first layer that may have a cycle: 0, or 1 once [`Self::lift`] put the paths that
    /// close layer 0's cycles above it.
    first: usize,
    /// Batched cutting: per tree position (as `trees`), the first dependency edge of its path
    /// and its parent's position ([`PassNode`]), and the edges marked for cutting (one more
    /// than there are edges: [`PassNode::edge`]'s stand-in for none, never marked).
    pass_nodes: Vec<PassNode>,
    cut_mark: Vec<bool>,
    /// Build the lists once `scanned_cuts · (max_lid + 1) ≥ list_ratio · S · D` (about what
    /// scanning a row byte costs against bucketing one (destination, switch) pair).
    pub(crate) list_ratio: usize,
    /// The destinations behind the edge being cut (packed as in `edge_dests`).
    behind: Vec<u32>,
    /// Channels `c` whose layer-`i` count of some edge `c -> _` dropped to 0 in the last move
    /// (the only stack edges a cut can empty, so popping back need not scan the whole stack).
    zeroed: Vec<u32>,
}

impl<'a> Breaker<'a> {
    pub fn new(
        g: &'a SwitchGraph,
        ei: &'a EdgeIndex,
        lft: &'a Lft,
        cols: &'a [u8],
        weight: &'a [u32],
        counts0: Vec<u32>,
        trees: TreeIndex,
    ) -> Self {
        let nc = g.num_channels();
        Breaker {
            g,
            ei,
            lft,
            cols,
            trees,
            weight,
            counts: vec![counts0],
            cuts: 0,
            moved_paths: 0,
            state: vec![WHITE; nc],
            stack_pos: vec![NOT_STACKED; nc],
            stack: Vec::new(),
            stack_w: Vec::new(),
            sub: vec![0; g.num_switches()],
            edge_start: Vec::new(),
            edge_dests: Vec::new(),
            edge_live: Vec::new(),
            edge_floor: Vec::new(),
            touched: vec![false; g.dests().len()],
            scanned_cuts: 0,
            list_ratio: 32,
            cutting: Cutting::Exact,
            batch_marks_per_100: BATCH_MARKS_PER_100_EDGES,
            probed: None,
            first: 0,
            pass_nodes: Vec::new(),
            cut_mark: Vec::new(),
            behind: Vec::new(),
            zeroed: Vec::new(),
        }
    }

    /// Starts every path to the destinations `dests` in layer 1, above the rest of layer 0,
    /// which must then be acyclic: cycle breaking starts at layer 1 ([`Self::first_layer`]).
    /// `counts`: those routes' dependency edges (weighted as in layer 0), taken out of layer 0.
    pub fn lift(&mut self, dests: &[usize], counts: Vec<u32>) {
        assert!(
            self.counts.len() == 1 && counts.len() == self.counts[0].len(),
            "lift before any cut, with one count per dependency edge"
        );
        for (c0, &c) in self.counts[0].iter_mut().zip(&counts) {
            *c0 -= c;
        }
        self.counts.push(counts);
        for &di in dests {
            let row = self.trees.row_mut(di);
            let size = usize::from(row[0].end);
            for n in &mut row[..size] {
                n.layer = 1;
            }
            self.moved_paths += size as u64;
            self.touched[di] = true;
        }
        self.first = 1;
    }

    /// The first layer cycle breaking searches ([`Self::lift`]).
    pub fn first_layer(&self) -> usize {
        self.first
    }

    fn ensure_layer(&mut self, l: usize) {
        while self.counts.len() <= l {
            self.counts.push(vec![0; self.ei.num_edges()]);
        }
    }

    /// Breaks every cycle of layer `i` by moving paths to layer `i + 1`. Returns the number of
    /// dependency edges cut (0: the layer was already acyclic).
    ///
    /// Exact ([`Cutting::Exact`]): each cycle's weakest edge is cut by moving its paths
    /// ([`Self::cut_cycle`]) before the search goes on, which reads every destination behind the
    /// edge at a scattered place: on large fabrics most of the time of cycle breaking (random
    /// 20k CAs: 78 M such reads for 1.2 M cuts). Batched: the search marks the weakest edge (its
    /// paths stay where they are, so the counts the weakest edge is chosen by do not yet drop
    /// along them) and goes on as if the edge were gone; at the end of the search every
    /// layer-`i` path that takes a marked edge moves in one pass over all destinations' trees,
    /// in parallel and in memory order ([`Self::move_marked`]). (Moving every 20,000 marks and
    /// resuming the search from the first stack edge left without paths came closer to the
    /// exact cuts, but each pass streams all trees: 0.1 s there, three times the whole of cycle
    /// breaking in the end; two passes per layer, each of half the previous layer's marks, were
    /// no faster overall: 0.5 s more cycle breaking, about as much less escape.)
    ///
    /// Sound for the same reason as the exact search: marks and moves only remove edges from
    /// the graph the search sees, so at the end of the search that graph is acyclic, and the
    /// last moves leave in layer `i` only paths whose every edge is in it.
    pub fn break_layer(&mut self, i: usize) -> u64 {
        let (g, ei) = (self.g, self.ei);
        if self.cutting == Cutting::Auto {
            self.probe();
        }
        let batched = self.cutting == Cutting::Batched;
        if batched {
            self.ensure_layer(i + 1);
            if self.pass_nodes.is_empty() {
                self.pass_nodes = pass_nodes(g, ei, &self.trees);
                self.trees.drop_positions();
            }
        }
        let (cut, marked, cuts) = match self.probed.take() {
            Some(marked) if i == self.first => {
                let cuts = marked.len() as u64;
                (std::mem::take(&mut self.cut_mark), marked, cuts)
            }
            probed => {
                // (Marks of a probe are for the first layer only.)
                for &e in probed.iter().flatten() {
                    self.cut_mark[e as usize] = false;
                }
                let at_cycle = if batched { AtCycle::Mark } else { AtCycle::Cut };
                self.search(i, at_cycle)
            }
        };
        self.finish_layer(i, cut, &marked, cuts)
    }

    /// Decides [`Cutting::Auto`]: one search of the first layer that marks the weakest edge of
    /// each cycle (as batches do). Many marks for the edges in the layer mean many cuts, each of
    /// which the exact search pays with a scattered read per destination behind it, while a
    /// batch streams every tree once per layer whatever the cuts (random 20k CAs: 173 k marks
    /// for 309 k edges, batches 3x faster); few mean the exact search is cheap and cuts best
    /// (fat trees: 29 k marks for 3.3 M edges). With batches the marks are kept for that layer.
    pub fn probe(&mut self) {
        let first = self.first;
        let (cut, marked, _) = self.search(first, AtCycle::Mark);
        let used = self.counts[first].iter().filter(|&&c| c > 0).count();
        if marked.len() * 100 >= used * self.batch_marks_per_100 {
            self.cutting = Cutting::Batched;
            self.cut_mark = cut;
            self.probed = Some(marked);
        } else {
            self.cutting = Cutting::Exact;
            let mut cut = cut;
            for &e in &marked {
                cut[e as usize] = false;
            }
            self.cut_mark = cut;
        }
    }

    /// Whether cycle breaking cuts in batches (once decided).
    pub fn batched(&self) -> bool {
        self.cutting == Cutting::Batched
    }

    /// The search of layer `i`, doing `at_cycle` at each cycle; returns the mark table (clear
    /// when cutting), the marked edges and the cuts (or marks) made.
    fn search(&mut self, i: usize, at_cycle: AtCycle) -> (Vec<bool>, Vec<u32>, u64) {
        let batched = at_cycle == AtCycle::Mark;
        let (g, ei) = (self.g, self.ei);
        let nc = g.num_channels() as u32;
        // Marked edges (batched; always clear when exact).
        let mut cut = std::mem::take(&mut self.cut_mark);
        cut.resize(ei.num_edges() + 1, false);
        let mut marked: Vec<u32> = Vec::new();
        let mut cuts = 0u64;
        // Marking leaves the counts alone, so a bitmap of the live edges (paths, no mark) can
        // stand in for them: the scan skips dead edges a word at a time, in cache (random 20k
        // CAs: 40 KB against 1.3 MB of counts; each layer's search scans 25-46 M slots).
        let mut live = batched.then(|| {
            let mut live = vec![0u64; bits::words(ei.num_edges())];
            for (e, (&c, &m)) in self.counts[i].iter().zip(cut.iter()).enumerate() {
                if c > 0 && !m {
                    bits::set(&mut live, e);
                }
            }
            live
        });
        self.state.fill(WHITE);
        for start in 0..nc {
            if self.state[start as usize] != WHITE {
                continue;
            }
            self.push(start);
            while let Some(&(c, slot0)) = self.stack.last() {
                let base = ei.base[c as usize];
                let deg = ei.degree(c);
                let mut slot = slot0;
                let mut action = None::<NextEdge>;
                while slot < deg {
                    let e = (base + slot) as usize;
                    if let Some(live) = &live {
                        let word = bits::from(live, e);
                        if word == 0 {
                            slot += 64 - (e % 64) as u32;
                            continue;
                        }
                        let skip = word.trailing_zeros();
                        if skip > 0 {
                            slot += skip;
                            continue;
                        }
                    } else if self.counts[i][e] == 0 || cut[e] {
                        slot += 1;
                        continue;
                    }
                    let t = ei.target(g, c, slot);
                    match self.state[t as usize] {
                        WHITE => {
                            action = Some(NextEdge::Unvisited(t));
                            break;
                        }
                        GRAY => {
                            action = Some(NextEdge::OnStack(t));
                            break;
                        }
                        _ => {}
                    }
                    slot += 1;
                }
                let slot = slot.min(deg);
                self.stack.last_mut().expect("non-empty").1 = slot;
                if batched && action.is_some() {
                    let top = self.stack_w.last_mut().expect("non-empty");
                    *top = self.counts[i][(base + slot) as usize];
                }
                match action {
                    Some(NextEdge::Unvisited(t)) => self.push(t),
                    Some(NextEdge::OnStack(t)) if batched => {
                        // Mark the cycle's weakest edge and pop back to its frame.
                        let (e, k) = self.weakest(i, t, AtCycle::Mark);
                        cut[e as usize] = true;
                        if let Some(live) = &mut live {
                            bits::clear(live, e as usize);
                        }
                        marked.push(e);
                        self.pop_back_to(k);
                        cuts += 1;
                    }
                    Some(NextEdge::OnStack(t)) => {
                        self.cut_cycle(i, t);
                        cuts += 1;
                    }
                    None => {
                        self.state[c as usize] = BLACK;
                        self.stack.pop();
                        self.stack_w.pop();
                        if let Some(top) = self.stack.last_mut() {
                            top.1 += 1;
                        }
                    }
                }
            }
        }
        (cut, marked, cuts)
    }

    /// Moves the paths of the marked edges (if any) and counts the layer's cuts.
    fn finish_layer(&mut self, i: usize, mut cut: Vec<bool>, marked: &[u32], cuts: u64) -> u64 {
        if !marked.is_empty() {
            // (As a bitmap, 1/8 of the table, for the scattered reads of the pass.)
            let mut marks = vec![0u64; bits::words(self.ei.num_edges() + 1)];
            for &e in marked {
                bits::set(&mut marks, e as usize);
            }
            self.move_marked(i, &marks);
            for &e in marked {
                cut[e as usize] = false;
            }
        }
        self.cut_mark = cut;
        self.cuts += cuts;
        cuts
    }

    /// The weakest edge of the cycle the top of the stack closes into stack channel `t` (fewest
    /// paths in layer `i`; the first of equals), and the stack frame it leaves. When the search
    /// marks ([`AtCycle::Mark`]), the counts are the ones [`Self::stack_w`] holds.
    fn weakest(&self, i: usize, t: u32, at_cycle: AtCycle) -> (u32, usize) {
        let ei = self.ei;
        let from = self.stack_pos[t as usize] as usize;
        let edge = |k: usize| {
            let (c, slot) = self.stack[k];
            ei.base[c as usize] + slot
        };
        let mut weakest = (u32::MAX, from);
        for k in from..self.stack.len() {
            let w = match at_cycle {
                AtCycle::Mark => self.stack_w[k],
                AtCycle::Cut => self.counts[i][edge(k) as usize],
            };
            if w < weakest.0 {
                weakest = (w, k);
            }
        }
        (edge(weakest.1), weakest.1)
    }

    /// Pops the stack back to frame `k` (the frames above it become unvisited) and moves `k`
    /// past its current edge.
    fn pop_back_to(&mut self, k: usize) {
        for &(c, _) in &self.stack[k + 1..] {
            self.state[c as usize] = WHITE;
        }
        self.stack.truncate(k + 1);
        self.stack_w.truncate(k + 1);
        self.stack[k].1 += 1;
    }

    /// Moves every layer-`i` path that takes a dependency edge marked in `cut` (one bit per
    /// edge) to layer `i + 1`: per destination one pass over its tree in pre-order (a path takes
    /// a marked edge if its first one is, or its parent's path does), then one in reverse that
    /// shifts the moved weight of every subtree along its root's first edge. In parallel over
    /// destinations, each share summing its shifts on its own; the sums are exact, so the result
    /// does not depend on the threads.
    fn move_marked(&mut self, i: usize, cut: &[u64]) {
        let (g, weight) = (self.g, self.weight);
        let ns = g.num_switches();
        let ne = self.ei.num_edges();
        if ns == 0 {
            return;
        }
        let layer = i as u8;
        let share = self
            .trees
            .rows()
            .div_ceil(4 * rayon::current_num_threads())
            .max(1);
        let pass_nodes = &self.pass_nodes;
        let work = ns * self.trees.rows();
        let rows = self.trees.par_rows_mut().enumerate().chunks(share);
        let shares: Vec<(Vec<u32>, u64, Vec<usize>)> = crate::par::sized(rows, work)
            .map(|rows| {
                // (Slot `ne`: no edge.)
                let mut shift = vec![0u32; ne + 1];
                let mut moved = 0u64;
                // Per position: whether its path takes a marked edge, its subtree's moved weight.
                let mut marked = vec![false; ns];
                let mut sub = vec![0u32; ns];
                let mut touched = Vec::new();
                for (slot, (di, row)) in rows {
                    let size = usize::from(row[0].end);
                    if size <= 1 {
                        continue;
                    }
                    let pn = &pass_nodes[slot * ns..slot * ns + size];
                    let mut any = false;
                    for k in 1..size {
                        let p = pn[k];
                        let m = marked[usize::from(p.parent)] | bits::bit(cut, p.edge as usize);
                        marked[k] = m;
                        let n = &mut row[k];
                        sub[k] = if m && n.layer == layer {
                            n.layer = layer + 1;
                            moved += 1;
                            any = true;
                            weight[usize::from(n.at)]
                        } else {
                            0
                        };
                    }
                    if !any {
                        continue;
                    }
                    touched.push(di);
                    for k in (1..size).rev() {
                        let w = sub[k];
                        if w > 0 {
                            let p = pn[k];
                            shift[p.edge as usize] += w;
                            sub[usize::from(p.parent)] += w;
                        }
                    }
                }
                (shift, moved, touched)
            })
            .collect();
        let (lo, hi) = self.counts.split_at_mut(i + 1);
        let (cur, nxt) = (&mut lo[i], &mut hi[0]);
        for (shift, moved, touched) in shares {
            self.moved_paths += moved;
            for di in touched {
                self.touched[di] = true;
            }
            for ((c, n), s) in cur.iter_mut().zip(nxt.iter_mut()).zip(shift) {
                *c -= s;
                *n += s;
            }
        }
    }

    fn push(&mut self, c: u32) {
        self.state[c as usize] = GRAY;
        self.stack_pos[c as usize] = self.stack.len() as u32;
        self.stack.push((c, 0));
        self.stack_w.push(0);
    }

    /// The top of the stack has an edge (at its current slot) into the stack channel `t`: cut the
    /// weakest edge of that cycle and pop the stack back to the first edge left without paths.
    fn cut_cycle(&mut self, i: usize, t: u32) {
        let ei = self.ei;
        let (e, k) = self.weakest(i, t, AtCycle::Cut);
        let (c1, slot) = self.stack[k];
        self.move_edge_paths(i, c1, ei.target(self.g, c1, slot));
        debug_assert_eq!(self.counts[i][e as usize], 0, "weakest edge not emptied");

        // Pop back to the first stack edge that lost all its paths (there is one: the cut edge).
        // Stack edges had paths before the cut, so an emptied one is among `zeroed`.
        let k = self
            .zeroed
            .iter()
            .filter(|&&c| self.state[c as usize] == GRAY)
            .map(|&c| self.stack_pos[c as usize] as usize)
            .filter(|&k| {
                let (c, slot) = self.stack[k];
                self.counts[i][(ei.base[c as usize] + slot) as usize] == 0
            })
            .min()
            .expect("the cut edge is on the stack");
        self.pop_back_to(k);
    }

    /// The destinations whose routes take `c1 -> c2`: `Some(e)` when they are the live part of
    /// edge `e`'s list, else (until enough cuts have been made to pay for building the lists,
    /// O(S·D)) in `behind`, found by scanning the LFT rows of the edge's first two switches
    /// (O(max_lid) per cut), in ascending LID order.
    fn find_behind(&mut self, c1: u32, c2: u32) -> Option<usize> {
        let (g, ei) = (self.g, self.ei);
        self.behind.clear();
        if self.edge_start.is_empty() {
            let ns = g.num_switches();
            let max_lid = usize::from(self.lft.max_lid) + 1;
            if self.scanned_cuts.saturating_mul(max_lid)
                < self.list_ratio.saturating_mul(ns * g.dests().len())
            {
                self.scanned_cuts += 1;
                let (u, v) = (g.chan_tail()[c1 as usize], g.chan_head()[c1 as usize]);
                let (pu, pv) = (g.chan_port()[c1 as usize], g.chan_port()[c2 as usize]);
                // Blocks of 64 LIDs without a match are skipped by a branch-free test (it
                // vectorises); matches are few.
                const BLOCK: usize = 64;
                let (ru, rv) = (self.lft.table(u), self.lft.table(v));
                for (blk, (bu, bv)) in ru.chunks(BLOCK).zip(rv.chunks(BLOCK)).enumerate() {
                    let any = bu.iter().zip(bv).fold(0u8, |acc, (&a, &b)| {
                        acc | (u8::from(a == pu) & u8::from(b == pv))
                    });
                    if any == 0 {
                        continue;
                    }
                    for (j, (&a, &b)) in bu.iter().zip(bv).enumerate() {
                        if a != pu || b != pv {
                            continue;
                        }
                        let lid = blk * BLOCK + j;
                        let di = g.lid_dest().get(lid).copied().unwrap_or(NO_DEST);
                        // (Destinations without a row have no path that can move, nor has a
                        // switch outside the destination's tree: an entry for a LID no switch
                        // delivers, left in tables read back from the switches.)
                        if di != NO_DEST && self.trees.has_row(di as usize) {
                            let k = self.trees.position(di as usize, u);
                            if k != super::cdg::NOT_IN_TREE {
                                self.behind.push(di << 16 | u32::from(k));
                            }
                        }
                    }
                }
                return None;
            }
            let (start, dests) = edge_dest_lists(g, ei, self.cols, &self.trees);
            self.edge_live = (0..ei.num_edges())
                .map(|e| start[e + 1] - start[e])
                .collect();
            self.edge_floor = vec![0; dests.len()];
            self.edge_start = start;
            self.edge_dests = dests;
            self.trees.drop_positions();
        }
        Some(ei.edge(g, c1, c2) as usize)
    }

    /// Moves every layer-`i` path that takes `c1` then `c2` to layer `i + 1`, updating the edge
    /// counts of both layers along the whole of every moved path. Cost: per destination whose
    /// routes take the edge, the subtree of `tail(c1)` (one contiguous run of tree nodes) and
    /// the path from there to the destination. Channels whose edge count in layer `i` drops to
    /// 0 are noted in `zeroed`. Destinations left with no path above layer `i` behind the edge
    /// leave its list: later cuts of it are in higher layers, where they have nothing to move.
    pub fn move_edge_paths(&mut self, i: usize, c1: u32, c2: u32) {
        self.ensure_layer(i + 1);
        let listed = self.find_behind(c1, c2);
        let Breaker {
            g,
            ei,
            weight,
            cols,
            trees,
            counts,
            sub,
            zeroed,
            behind,
            edge_start,
            edge_dests,
            edge_live,
            edge_floor,
            moved_paths,
            touched,
            ..
        } = self;
        let (g, ei, weight, cols) = (*g, *ei, *weight, *cols);
        let ns = g.num_switches();
        let u = g.chan_tail()[c1 as usize];
        let layer = i as u8;
        let (lo, hi) = counts.split_at_mut(i + 1);
        zeroed.clear();
        let mut shift = LayerShift {
            g,
            ei,
            cur: &mut lo[i],
            nxt: &mut hi[0],
            zeroed,
        };
        let mut no_floor = [];
        let (list, floor): (&mut [u32], &mut [u8]) = match listed {
            Some(e) => {
                let a = edge_start[e] as usize;
                let b = a + edge_live[e] as usize;
                (&mut edge_dests[a..b], &mut edge_floor[a..b])
            }
            None => (behind, &mut no_floor),
        };
        // Destinations behind an edge are scattered over the tree index: each costs a cache
        // miss. The nodes of the next `BATCH` destinations are read back to back before working
        // on them, so their misses overlap (an independent load each; the values only go into
        // `sink`) instead of stalling one after the other.
        const BATCH: usize = 16;
        let mut sink = 0u32;
        let mut kept = 0usize;
        for j in 0..list.len() {
            if j % BATCH == 0 {
                for (jj, &ahead) in list.iter().enumerate().skip(j).take(BATCH) {
                    if floor_of(floor, jj) <= layer {
                        sink ^= trees.touch((ahead >> 16) as usize, ahead as u16);
                    }
                }
            }
            let packed = list[j];
            let fl = floor_of(floor, j);
            if fl > layer {
                // Nothing in this layer: kept for the later ones.
                keep_entry(list, floor, &mut kept, packed, fl);
                continue;
            }
            let (di, k) = ((packed >> 16) as usize, usize::from(packed as u16));
            let row = trees.row_mut(di);
            let end = usize::from(row[k].end);
            let run = &mut row[k..end];
            let lifted = lift_subtree(run, layer, weight, sub);
            if lifted.moved > 0 || lifted.above {
                keep_entry(list, floor, &mut kept, packed, lifted.least);
            }
            if lifted.moved == 0 {
                continue;
            }
            *moved_paths += lifted.moved;
            touched[di] = true;
            let root = g.dests()[di].switch;
            shift.subtree_turns(run, root, sub);
            // Past `v`, the head of `c1`, every moved path shares `u`'s channels.
            let col = &cols[di * ns..(di + 1) * ns];
            shift.shared_path(c2, run[0].ports, root, col, sub[u as usize]);
        }
        if let Some(e) = listed {
            edge_live[e] = kept as u32;
        }
        std::hint::black_box(sink);
    }

    /// What cycle breaking left ([`BrokenLayers`]).
    pub fn finish(self) -> BrokenLayers {
        let ns = self.g.num_switches();
        let mut dl = vec![0u8; self.g.dests().len() * ns];
        let touched = &self.touched;
        if ns > 0 {
            let trees = &self.trees;
            let work = dl.len();
            crate::par::sized(dl.par_chunks_mut(ns).enumerate(), work)
                .filter(|(di, _)| touched[*di])
                .for_each(|(di, out)| {
                    // (Only a destination with a row is ever touched.)
                    let row = trees.row(di);
                    let size = usize::from(row[0].end);
                    for n in &row[..size] {
                        out[usize::from(n.at)] = n.layer;
                    }
                });
        }
        let moved: Vec<u32> = (0..touched.len() as u32)
            .filter(|&di| touched[di as usize])
            .collect();
        BrokenLayers {
            dest_layers: dl,
            moved_dests: moved,
            counts: self.counts,
            cuts: self.cuts,
            moved_paths: self.moved_paths,
        }
    }
}

/// What cycle breaking left.
pub struct BrokenLayers {
    /// The layer of every path, destination-major (`[di * S + s]`, 0 where there is no path).
    pub dest_layers: Vec<u8>,
    /// The destinations with a path outside layer 0.
    pub moved_dests: Vec<u32>,
    /// Per layer, the paths over each dependency edge.
    pub counts: Vec<Vec<u32>>,
    /// Dependency edges cut, and paths moved to another layer.
    pub cuts: u64,
    pub moved_paths: u64,
}

/// The floor of entry `j` of an edge's destination list (0 for a list found by scanning, which
/// has no floors).
#[inline]
fn floor_of(floor: &[u8], j: usize) -> u8 {
    floor.get(j).copied().unwrap_or(0)
}

/// Keeps a destination in the edge's list being compacted in place: `packed` (as in
/// `edge_dests`) with floor `fl` goes to place `kept`, which moves on.
#[inline]
fn keep_entry(list: &mut [u32], floor: &mut [u8], kept: &mut usize, packed: u32, fl: u8) {
    list[*kept] = packed;
    if let Some(f) = floor.get_mut(*kept) {
        *f = fl;
    }
    *kept += 1;
}

/// What [`lift_subtree`] found in one subtree.
struct SubtreeLift {
    /// Paths moved up.
    moved: u64,
    /// Whether some path was above the layer already.
    above: bool,
    /// The lowest layer above this one among the subtree's paths (`u8::MAX`: none): paths
    /// below the layer at hand are final (later cuts are in higher layers), so only these can
    /// still move, and a later cut below this layer finds nothing here.
    least: u8,
}

/// Moves the paths of a subtree (`run`, one contiguous run of tree nodes) that are in `layer`
/// one layer up, and writes their weights into `sub` by switch (0 for the paths not moved).
#[inline]
fn lift_subtree(run: &mut [TreeNode], layer: u8, weight: &[u32], sub: &mut [u32]) -> SubtreeLift {
    let mut lift = SubtreeLift {
        moved: 0,
        above: false,
        least: u8::MAX,
    };
    for n in run {
        sub[usize::from(n.at)] = if n.layer == layer {
            n.layer = layer + 1;
            lift.moved += 1;
            weight[usize::from(n.at)]
        } else {
            lift.above |= n.layer > layer;
            0
        };
        if n.layer > layer {
            lift.least = lift.least.min(n.layer);
        }
    }
    lift
}

/// The edge counts of the layer paths move out of (`cur`) and of the one they move into
/// (`nxt`), and the channels whose edge a move left without paths in `cur`.
struct LayerShift<'b> {
    g: &'b SwitchGraph,
    ei: &'b EdgeIndex,
    cur: &'b mut [u32],
    nxt: &'b mut [u32],
    zeroed: &'b mut Vec<u32>,
}

impl LayerShift<'_> {
    /// The channel at port `p` of switch `s` (the trees were validated when layer 0 was built).
    #[inline]
    fn chan(&self, s: u32, p: u8) -> u32 {
        self.g.channel_at(s, p).unwrap_or(NO_CHANNEL)
    }

    /// Shifts weight `w` of the edge `cx -> cn` from `cur` to `nxt`.
    #[inline]
    fn edge(&mut self, cx: u32, cn: u32, w: u32) {
        let e = self.ei.edge(self.g, cx, cn) as usize;
        self.cur[e] -= w;
        self.nxt[e] += w;
        if self.cur[e] == 0 {
            self.zeroed.push(cx);
        }
    }

    /// Shifts the first turn of every switch of a subtree (`run`, towards `root`; the moved
    /// weight of each switch's own path in `sub`, by switch): inside the subtree, and from its
    /// root `u` to the next switch `v`. The weights are summed bottom-up first, so each edge
    /// shifts once for all the moved paths through it.
    #[inline]
    fn subtree_turns(&mut self, run: &[TreeNode], root: u32, sub: &mut [u32]) {
        let g = self.g;
        for n in run[1..].iter().rev() {
            let w = sub[usize::from(n.at)];
            if w > 0 {
                let h = g.chan_head()[self.chan(u32::from(n.at), n.ports[0]) as usize];
                sub[h as usize] += w;
            }
        }
        for n in run {
            let w = sub[usize::from(n.at)];
            if w > 0 {
                let cx = self.chan(u32::from(n.at), n.ports[0]);
                let h = g.chan_head()[cx as usize];
                if h != root {
                    let cn = self.chan(h, n.ports[1]);
                    self.edge(cx, cn, w);
                }
            }
        }
    }

    /// Shifts weight `w` along the path that every moved path of a subtree shares past its
    /// root's first turn: from channel `c2` on to `root`, its ports `ports[1..]` from the tree
    /// node and the rest from `col`, the destination's column of the LFT.
    #[inline]
    fn shared_path(&mut self, c2: u32, ports: [u8; NODE_PORTS], root: u32, col: &[u8], w: u32) {
        let (mut cx, mut j) = (c2, 1);
        loop {
            let h = self.g.chan_head()[cx as usize];
            if h == root {
                break;
            }
            let p = match ports.get(j + 1) {
                Some(&p) => p,
                None => col[h as usize],
            };
            let cn = self.chan(h, p);
            self.edge(cx, cn, w);
            cx = cn;
            j += 1;
        }
    }
}

/// What a batched move reads of a tree position besides its [`TreeNode`](super::cdg::TreeNode).
#[derive(Clone, Copy, Debug, Default)]
struct PassNode {
    /// The first dependency edge of the path from the position's switch; the number of edges
    /// (one past the last) when the path has none (the root, paths of one hop).
    edge: u32,
    /// The parent's position (the root's own: 0).
    parent: u16,
}

/// Per row and tree position (slot-major, as the rows of `trees`), the [`PassNode`], in
/// parallel.
fn pass_nodes(g: &SwitchGraph, ei: &EdgeIndex, trees: &TreeIndex) -> Vec<PassNode> {
    let ns = g.num_switches();
    let none = PassNode {
        edge: ei.num_edges() as u32,
        parent: 0,
    };
    let mut nodes = vec![none; ns * trees.rows()];
    if ns == 0 {
        return nodes;
    }
    let chan = |s: u32, p: u8| g.channel_at(s, p).unwrap_or(NO_CHANNEL);
    let work = nodes.len();
    crate::par::sized(nodes.par_chunks_mut(ns).zip(trees.par_rows()), work).for_each(
        |(out, (di, row))| {
            let root = g.dests()[di].switch;
            let size = usize::from(row[0].end);
            for (o, n) in out[..size].iter_mut().zip(row).skip(1) {
                let c1 = chan(u32::from(n.at), n.ports[0]);
                let h = g.chan_head()[c1 as usize];
                if h != root {
                    o.edge = ei.edge(g, c1, chan(h, n.ports[1]));
                    o.parent = trees.position(di, h);
                }
            }
        },
    );
    nodes
}

/// Per dependency edge, the destinations whose routes (as `cols` gives them) take it, in
/// ascending LID order (CSR over edge ids). Size: one entry per (switch, destination) pair whose
/// route has at least two hops.
fn edge_dest_lists(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    cols: &[u8],
    trees: &TreeIndex,
) -> (Vec<u32>, Vec<u32>) {
    let ns = g.num_switches();
    let ne = ei.num_edges();
    if ns == 0 {
        return (vec![0; ne + 1], Vec::new());
    }
    // The first dependency edge of every (destination with a row, switch) route, in the rows'
    // order (destinations without one have no path that can move), in parallel; then two
    // sequential passes bucket them by edge.
    let mut eid = vec![NO_EDGE; ns * trees.rows()];
    let work = eid.len();
    crate::par::sized(eid.par_chunks_mut(ns).zip(trees.par_rows()), work).for_each(
        |(row, (di, _))| {
            let col = &cols[di * ns..(di + 1) * ns];
            for (s, e) in row.iter_mut().enumerate() {
                let Some(c1) = g.channel_at(s as u32, col[s]) else {
                    continue;
                };
                let v = g.chan_head()[c1 as usize];
                if let Some(c2) = g.channel_at(v, col[v as usize]) {
                    *e = ei.edge(g, c1, c2);
                }
            }
        },
    );
    let mut start = vec![0u32; ne + 1];
    for &e in &eid {
        if e != NO_EDGE {
            start[e as usize + 1] += 1;
        }
    }
    for e in 0..ne {
        start[e + 1] += start[e];
    }
    let mut fill = start.clone();
    let mut dests = vec![0u32; start[ne] as usize];
    for &di in g.lid_dest() {
        if di == NO_DEST {
            continue;
        }
        let di = di as usize;
        let Some(k) = trees.slot(di) else {
            continue;
        };
        for (s, &e) in eid[k * ns..(k + 1) * ns].iter().enumerate() {
            if e != NO_EDGE {
                // Fewer than 2^16 destinations: LIDs are 16-bit.
                dests[fill[e as usize] as usize] =
                    (di as u32) << 16 | u32::from(trees.position(di, s as u32));
                fill[e as usize] += 1;
            }
        }
    }
    (start, dests)
}
