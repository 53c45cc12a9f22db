//! Incremental cycle checks for one layer's CDG: a dynamic topological order (Pearce & Kelly,
//! "A dynamic topological sort algorithm for directed acyclic graphs", JEA 2006).
//!
//! The order stays valid when edges disappear, so only insertions cost anything: an edge `a -> b`
//! with `ord[a] < ord[b]` is free; otherwise a forward search from `b` bounded by `ord[a]` either
//! reaches `a` (the edge would close a cycle and is refused) or, together with a backward search
//! from `a` bounded by `ord[b]`, gives the few channels whose positions are permuted. Work is
//! proportional to the affected region of the order, not to the whole graph. Each search stops
//! after `limit` channels and then refuses the edge: refusing is always safe (the caller routes
//! the path elsewhere), and it bounds the cost of checks that would almost surely fail anyway
//! (an illegal turn into a layer full of Up*/Down* routes on a large fat tree).
//!
//! A *span limit* ([`DynTopo::with_max_span`]) refuses an edge `a -> b` at once when more than
//! that many positions separate `b` from `a`. Both searches only visit channels positioned between
//! them, so the span bounds their cost in advance: on large irregular fabrics, whose layers are
//! dense, a wide span almost always hides a cycle or a search past the limit, so most of such
//! searches would only end in a refusal anyway (README, "Measurements behind the design").
//!
//! A refused edge keeps its *witness*, the path `b ->* a` the search found. The same edge is
//! asked for again and again (every destination routed through that turn asks), and while every
//! edge of the witness is still in the layer the answer is the same; checking those few counts
//! replaces a search of dozens of channels. The answer is exactly what the search would give, so
//! the cache changes no result.

use std::collections::HashMap;

use crate::bits;
use crate::graph::SwitchGraph;

use super::cdg::{EdgeIndex, EdgeSet};

/// Per-edge path counts with a bitmap of the edges in the layer beside them. The escape's cycle
/// checks read only the bitmap: one bit per edge keeps a layer's edge set in cache (random 20k
/// CAs: 40 KB per layer against 1.3 MB of counts), and a path whose check fails never touches
/// the counts at all.
///
/// An edge can also be held by *users* besides its counted paths: in the escape layer, the
/// Up*/Down* trees of the destinations not yet settled, one unit per tree. Settling a
/// destination drops its tree as a whole; 2-byte units per tree instead of path weights keep
/// those updates in cache too (there are at most 49151 destination LIDs).
pub(crate) struct CountedEdges {
    counts: Vec<u32>,
    /// Per edge, the users holding it; empty when the layer has none.
    users: Vec<u16>,
    bits: Vec<u64>,
}

impl CountedEdges {
    pub fn new(counts: Vec<u32>) -> Self {
        Self::with_users(counts, Vec::new())
    }

    pub fn with_users(counts: Vec<u32>, users: Vec<u16>) -> Self {
        debug_assert!(users.is_empty() || users.len() == counts.len());
        let mut set = CountedEdges {
            bits: vec![0u64; bits::words(counts.len())],
            counts,
            users,
        };
        for e in 0..set.counts.len() {
            if set.held(e) {
                set.mark(e);
            }
        }
        set
    }

    #[inline]
    pub fn count(&self, e: usize) -> u32 {
        self.counts[e]
    }

    #[inline]
    fn held(&self, e: usize) -> bool {
        self.counts[e] > 0 || self.users.get(e).is_some_and(|&u| u > 0)
    }

    /// Sets the bit of edge `e` from its count and users.
    #[inline]
    pub fn refresh(&mut self, e: usize) {
        if self.held(e) {
            self.mark(e);
        } else {
            self.unmark(e);
        }
    }

    /// Marks edge `e` present while its path is checked, before it is counted.
    #[inline]
    pub fn mark(&mut self, e: usize) {
        bits::set(&mut self.bits, e);
    }

    /// Takes back a [`Self::mark`].
    #[inline]
    pub fn unmark(&mut self, e: usize) {
        bits::clear(&mut self.bits, e);
    }

    /// Changes the count of edge `e` by `d`.
    #[inline]
    pub fn shift(&mut self, e: usize, d: i32) {
        let c = self.counts[e].checked_add_signed(d);
        debug_assert!(c.is_some(), "edge count out of range");
        self.counts[e] = c.unwrap_or(0);
        self.refresh(e);
    }

    /// One user of edge `e` lets go of it.
    #[inline]
    pub fn drop_user(&mut self, e: usize) {
        debug_assert!(self.users[e] > 0, "edge users underflow");
        self.users[e] -= 1;
        if self.users[e] == 0 {
            self.refresh(e);
        }
    }
}

impl EdgeSet for CountedEdges {
    #[inline]
    fn has(&self, e: usize) -> bool {
        bits::bit(&self.bits, e)
    }
}

/// A topological order of the channels of one layer.
pub(crate) struct DynTopo {
    /// Position of every channel; during a search the [`SEEN`] bit marks the channels visited
    /// (one random access per visited channel instead of two: searches are the hot loop of the
    /// escape on tori).
    ord: Vec<u32>,
    /// Refused edge `a -> b` (its [`EdgeIndex`] slot) -> where in `arena` the dependency edges of
    /// its witness `b ->* a` are: (start, length).
    witness: HashMap<u32, (u32, u32)>,
    arena: Vec<u32>,
    /// Refuse an edge whose endpoints are more than this many positions apart, unsearched.
    max_span: u32,
    /// Channels the searches of [`Self::try_insert`] visited so far (the cost of the checks).
    pub searched: u64,
}

/// Witnesses kept per layer, in edges, before the cache starts afresh (stale entries pile up as
/// witnesses are replaced; 4 MiB per layer).
const ARENA_LIMIT: usize = 1 << 20;

/// Marks a visited channel in [`DynTopo::ord`]; positions stay below it (channel count < 2^31).
const SEEN: u32 = 1 << 31;

/// Scratch shared by all layers' orders.
#[derive(Default)]
pub(crate) struct TopoScratch {
    stack: Vec<u32>,
    fwd: Vec<u32>,
    bwd: Vec<u32>,
    slots: Vec<u32>,
    /// (position, channel) keys of the backward and forward sets, for reordering.
    kb: Vec<u64>,
    kf: Vec<u64>,
    /// Per channel reached by the forward search: the dependency edge and channel it was
    /// reached from, to read the witness back.
    from_edge: Vec<u32>,
    from_chan: Vec<u32>,
}

impl DynTopo {
    /// From a complete topological order (as [`super::cdg::topological_order`] gives).
    pub fn from_order(order: &[u32]) -> Self {
        let mut ord = vec![0u32; order.len()];
        for (i, &c) in order.iter().enumerate() {
            ord[c as usize] = i as u32;
        }
        DynTopo {
            ord,
            witness: HashMap::new(),
            arena: Vec::new(),
            max_span: u32::MAX,
            searched: 0,
        }
    }

    /// Every channel's position in the order (between searches no [`SEEN`] bit is set).
    pub fn into_positions(self) -> Vec<u32> {
        let mut ord = self.ord;
        for p in &mut ord {
            *p &= !SEEN;
        }
        ord
    }

    /// Refuses, without searching, every edge `a -> b` with `b` more than `span` positions before
    /// `a` (a refusal is always safe).
    pub fn with_max_span(mut self, span: usize) -> Self {
        self.max_span = u32::try_from(span).unwrap_or(u32::MAX);
        self
    }

    /// The span beyond which edges are refused unsearched ([`Self::with_max_span`]);
    /// `usize::MAX` when unbounded.
    #[inline]
    pub fn max_span(&self) -> usize {
        if self.max_span == u32::MAX {
            usize::MAX
        } else {
            self.max_span as usize
        }
    }

    /// Whether every edge with a non-zero count goes forward in this order.
    pub fn fits<S: EdgeSet + ?Sized>(&self, g: &SwitchGraph, ei: &EdgeIndex, edges: &S) -> bool {
        (0..g.num_channels() as u32).all(|c| {
            let b = ei.base[c as usize];
            (0..ei.degree(c)).all(|slot| {
                !edges.has((b + slot) as usize)
                    || self.ord[c as usize] < self.ord[ei.target(g, c, slot) as usize]
            })
        })
    }

    /// Makes room for the new edge `edge` (not yet in `edges`) in the order, or returns `false`
    /// when the layer already has a path from its head channel back to its tail channel, i.e. the
    /// edge would close a cycle (or when a search would visit more than `limit` channels).
    pub fn try_insert<S: EdgeSet + ?Sized>(
        &mut self,
        g: &SwitchGraph,
        ei: &EdgeIndex,
        edges: &S,
        sc: &mut TopoScratch,
        edge: DepEdge,
        limit: usize,
    ) -> bool {
        let DepEdge { from: a, to: b } = edge;
        let (oa, ob) = (self.ord[a as usize], self.ord[b as usize]);
        if oa < ob {
            return true;
        }
        if a == b || oa - ob > self.max_span {
            return false;
        }
        let key = ei.edge(g, a, b);
        if self.witness_holds(key, edges) {
            return false;
        }
        let q = Insertion {
            g,
            ei,
            edges,
            a,
            b,
            oa,
            ob,
            limit,
        };
        let forward = self.search_forward(&q, sc);
        if let Forward::Cycle { last, edge } = forward {
            self.keep_witness(key, sc, b, last, edge);
        }
        self.searched += sc.fwd.len() as u64;
        if !matches!(forward, Forward::Clear) {
            self.unmark(&sc.fwd);
            return false;
        }
        let within_limit = self.search_backward(&q, sc);
        self.searched += sc.bwd.len() as u64;
        if !within_limit {
            self.unmark(&sc.fwd);
            self.unmark(&sc.bwd);
            return false;
        }
        self.reorder(sc);
        true
    }

    /// Whether the witness kept for the refused edge `key` is still all in the layer: then the
    /// edge still closes a cycle, without a search.
    #[inline]
    fn witness_holds<S: EdgeSet + ?Sized>(&self, key: u32, edges: &S) -> bool {
        self.witness.get(&key).is_some_and(|&(start, len)| {
            let w = &self.arena[start as usize..(start + len) as usize];
            w.iter().all(|&e| edges.has(e as usize))
        })
    }

    /// Keeps the witness of refused edge `key` (`a -> b`): the dependency edge `edge` by which
    /// the forward search reached `a` from channel `last`, and the edges back from `last` to `b`
    /// it came by.
    fn keep_witness(&mut self, key: u32, sc: &TopoScratch, b: u32, last: u32, edge: u32) {
        if self.arena.len() > ARENA_LIMIT {
            self.arena.clear();
            self.witness.clear();
        }
        let start = self.arena.len() as u32;
        self.arena.push(edge);
        let mut x = last;
        while x != b {
            self.arena.push(sc.from_edge[x as usize]);
            x = sc.from_chan[x as usize];
        }
        self.witness
            .insert(key, (start, self.arena.len() as u32 - start));
    }

    /// Forward from `b` over the channels positioned before `a`, each marked [`SEEN`] and listed
    /// in `sc.fwd` with the edge and channel it was reached from (to read a witness back).
    #[inline]
    fn search_forward<S: EdgeSet + ?Sized>(
        &mut self,
        q: &Insertion<'_, S>,
        sc: &mut TopoScratch,
    ) -> Forward {
        let (g, ei) = (q.g, q.ei);
        if sc.from_edge.len() < self.ord.len() {
            sc.from_edge.resize(self.ord.len(), 0);
            sc.from_chan.resize(self.ord.len(), 0);
        }
        self.start_search(q.b, &mut sc.stack, &mut sc.fwd);
        while let Some(x) = sc.stack.pop() {
            let base = ei.base[x as usize];
            for slot in 0..ei.degree(x) {
                if !q.edges.has((base + slot) as usize) {
                    continue;
                }
                let y = ei.target(g, x, slot);
                if y == q.a {
                    return Forward::Cycle {
                        last: x,
                        edge: base + slot,
                    };
                }
                // Unseen (no SEEN bit) and positioned before `a`, in one comparison.
                if self.ord[y as usize] < q.oa {
                    self.ord[y as usize] |= SEEN;
                    sc.from_edge[y as usize] = base + slot;
                    sc.from_chan[y as usize] = x;
                    sc.fwd.push(y);
                    sc.stack.push(y);
                    if sc.fwd.len() > q.limit {
                        return Forward::TooFar;
                    }
                }
            }
        }
        Forward::Clear
    }

    /// Backward from `a` over the channels positioned after `b`, each marked [`SEEN`] and listed
    /// in `sc.bwd`. Returns `false` when it visited more than the limit.
    #[inline]
    fn search_backward<S: EdgeSet + ?Sized>(
        &mut self,
        q: &Insertion<'_, S>,
        sc: &mut TopoScratch,
    ) -> bool {
        let (g, ei) = (q.g, q.ei);
        self.start_search(q.a, &mut sc.stack, &mut sc.bwd);
        while let Some(x) = sc.stack.pop() {
            let t = g.chan_tail()[x as usize];
            let off = x - g.out_start()[t as usize];
            for &p in g.in_channels(t) {
                if !q.edges.has((ei.base[p as usize] + off) as usize) {
                    continue;
                }
                let op = self.ord[p as usize];
                if op & SEEN == 0 && op > q.ob {
                    self.ord[p as usize] |= SEEN;
                    sc.bwd.push(p);
                    sc.stack.push(p);
                    if sc.bwd.len() > q.limit {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Starts a search at channel `x`: marked [`SEEN`], alone on the `stack` and in `visited`.
    #[inline]
    fn start_search(&mut self, x: u32, stack: &mut Vec<u32>, visited: &mut Vec<u32>) {
        stack.clear();
        stack.push(x);
        visited.clear();
        visited.push(x);
        self.ord[x as usize] |= SEEN;
    }

    /// Clears the [`SEEN`] bit of the channels `visited`.
    #[inline]
    fn unmark(&mut self, visited: &[u32]) {
        for &x in visited {
            self.ord[x as usize] &= !SEEN;
        }
    }

    /// After both searches (the edge fits): the backward set, then the forward set, each in its
    /// old relative order, into the union of their old positions. Sorted as (position, channel)
    /// keys, so no sort looks positions up; the union of two sorted position lists is a merge.
    /// Writing the positions clears the [`SEEN`] bits.
    #[inline]
    fn reorder(&mut self, sc: &mut TopoScratch) {
        let ord = &mut self.ord;
        let key = |x: u32| u64::from(ord[x as usize] & !SEEN) << 32 | u64::from(x);
        sc.kb.clear();
        sc.kb.extend(sc.bwd.iter().map(|&x| key(x)));
        sc.kf.clear();
        sc.kf.extend(sc.fwd.iter().map(|&x| key(x)));
        sc.kb.sort_unstable();
        sc.kf.sort_unstable();
        sc.slots.clear();
        let (mut i, mut j) = (0, 0);
        while i < sc.kb.len() || j < sc.kf.len() {
            let take_b = j == sc.kf.len() || (i < sc.kb.len() && sc.kb[i] < sc.kf[j]);
            let k = if take_b {
                i += 1;
                sc.kb[i - 1]
            } else {
                j += 1;
                sc.kf[j - 1]
            };
            sc.slots.push((k >> 32) as u32);
        }
        for (&k, &p) in sc.kb.iter().chain(sc.kf.iter()).zip(sc.slots.iter()) {
            ord[k as u32 as usize] = p;
        }
    }
}

/// A dependency edge asked for in a layer: a route that enters a switch by channel `from` and
/// leaves it by channel `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DepEdge {
    pub from: u32,
    pub to: u32,
}

/// What the searches of one [`DynTopo::try_insert`] read: the layer's dependency graph (`g`,
/// `ei` and the edges it holds), the edge `a -> b` asked for with the positions `oa > ob` that
/// bound the searches, and how many channels one search may visit.
struct Insertion<'q, S: ?Sized> {
    g: &'q SwitchGraph,
    ei: &'q EdgeIndex,
    edges: &'q S,
    a: u32,
    b: u32,
    oa: u32,
    ob: u32,
    limit: usize,
}

/// How the forward search of an insertion ended.
enum Forward {
    /// It did not reach `a`: the order can make room for the edge.
    Clear,
    /// It reached `a` from channel `last` over dependency edge `edge`: the edge closes a cycle.
    Cycle { last: u32, edge: u32 },
    /// It visited more channels than the limit: the edge is refused, cycle or not.
    TooFar,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The bitmap the cycle checks read says exactly which edges have paths or users, through
    /// any sequence of count changes, dropped users and marks taken back.
    #[test]
    fn counted_edges_bits_follow_counts_and_users() {
        for with_users in [false, true] {
            let mut rng = ChaCha8Rng::seed_from_u64(16);
            let n = 300; // several bitmap words, the last one partial
            let mut counts: Vec<u32> = (0..n).map(|_| rng.gen_range(0..3)).collect();
            let mut users: Vec<u16> = if with_users {
                (0..n).map(|_| rng.gen_range(0..3)).collect()
            } else {
                Vec::new()
            };
            let mut set = CountedEdges::with_users(counts.clone(), users.clone());
            for step in 0..20_000 {
                let e = rng.gen_range(0..n);
                match rng.gen_range(0..3) {
                    0 => {
                        let d = rng.gen_range(-2i32..=3).max(-(counts[e] as i32));
                        counts[e] = counts[e].checked_add_signed(d).expect("kept in range");
                        set.shift(e, d);
                    }
                    1 if users.get(e).is_some_and(|&u| u > 0) => {
                        users[e] -= 1;
                        set.drop_user(e);
                    }
                    _ => {
                        // A placement's mark, then the flush's refresh.
                        set.mark(e);
                        assert!(set.has(e));
                        set.refresh(e);
                    }
                }
                for (x, &c) in counts.iter().enumerate() {
                    let held = c > 0 || users.get(x).is_some_and(|&u| u > 0);
                    assert_eq!(set.has(x), held, "edge {x} after step {step}");
                    assert_eq!(set.count(x), c);
                }
            }
        }
    }
}
