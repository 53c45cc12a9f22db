//! Up*/Down* routing (Schroeder et al., Autonet), balanced like SSSP: the inherently deadlock-free
//! escape that dfsssp-rs falls back on when cycle breaking needs more virtual layers than the fabric
//! has (Hoefler et al. §III-D).
//!
//! **Orientation.** Each connected component gets a root, and switches are ranked by
//! `(BFS level from the root, id)`, a total order; a channel is *up* when it leads to a lower rank,
//! *down* otherwise. A route is legal when it takes up channels only, then down channels only.
//! [`UpDown::new`] takes a switch of minimal eccentricity (a centre), ties to the lowest switch id
//! (= lowest node GUID). [`UpDown::fitted`] instead picks, among a few representative switches,
//! the root under which given routes (SSSP's) have the least weight on illegal turns: on fat trees
//! that is a leaf switch, under which every CA-to-CA minimal route is legal, whereas a centre
//! would make most of them illegal.
//!
//! **Legal routes are deadlock-free.** Along consecutive up channels the rank strictly decreases,
//! along down channels it strictly increases, and a legal route never follows a down channel with
//! an up one. A cycle in the channel dependency graph of legal routes would be a closed channel
//! sequence; all-up or all-down is impossible (rank would return to its start), and a mixed one
//! must contain a down channel followed by an up channel, which no legal route has. Hence the union
//! of all Up*/Down* routes has an acyclic CDG, in one layer, whatever else that layer holds as long
//! as the other routes are Up*/Down* too.
//!
//! **Destination trees.** LFTs forward by destination only, so a switch must take the same next
//! channel whether a packet entered it going up or going down. For destination switch `t`:
//! - `dd(s)`: length of the shortest *down-only* path from `s` to `t` (BFS from `t` backwards over
//!   down channels), infinite when none exists;
//! - `T(s) = dd(s)` when finite, else `1 + min T(w)` over up channels `s -> w` (computed in rank
//!   order, since `w` ranks below `s`).
//!
//! A switch with finite `dd` forwards by a down channel to some `w` with `dd(w) = dd(s) - 1` (so
//! `w` is again such a switch: once a route goes down it stays down); the others forward by an up
//! channel to some `w` with `T(w) = T(s) - 1`. Every switch of `t`'s component has a finite `T`:
//! the root reaches every switch down its BFS tree (`dd(root)` finite), and every other switch has
//! an up channel to a neighbour one level closer to the root. Since `T` falls by one per hop, the
//! routes form a tree, and every route is up* then down*: legal for every source, without any
//! per-source state. `T` can exceed the shortest legal distance (a switch with a long down-only
//! path keeps it even if up-then-down were shorter), the price of destination-based consistency.
//!
//! **Balance.** Among the candidate channels the tree is chosen by [`Balancer::choose_tree`], the
//! same least-accumulated-load rule SSSP uses, so escape routes spread over the fabric too.
//!
//! **Cost.** The orientation: a BFS and a sort, `O(C + S log S)`, after the all-pairs switch
//! distances ([`SwitchDistances`], `O(S·(S+C))`, `2·S²` bytes) and `O(S²)` for the eccentricities
//! that pick the centre; [`UpDown::fitted`] builds at most 24 orientations per component and
//! measures each by the caller's weight. Per destination switch, its candidates (`dd`, `T`, the
//! channels one step closer): `O(S+C)`, shared by its LIDs routed in a row
//! ([`UpDownRouter::route_dests_tree`] builds them ahead on the other core). Per destination LID,
//! the balanced choice, its loads and its table column: `O(S+C)`. So [`route`] costs
//! `O(S·(S+C) + D·(S+C))`, and the tables `2·S·max_lid` bytes.

use crate::balance::{routing_order, write_dest, Balancer};
use crate::graph::{order_by_distance, SwitchDistances};
use crate::graph::{Dest, SwitchGraph, NO_SWITCH};
use crate::routing::{Lft, Routing, SwitchLidTable};

mod fitted;

/// The Up*/Down* orientation of the switch graph.
#[derive(Clone, Debug)]
pub struct UpDown {
    /// Root of every connected component.
    pub roots: Vec<u32>,
    /// BFS level of every switch from its component's root.
    pub level: Vec<u32>,
    /// Position of every switch in `(level, id)` order; up channels lead to a lower rank.
    pub rank: Vec<u32>,
    /// Switches in rank order.
    by_rank: Vec<u32>,
}

impl UpDown {
    /// Orientation from roots of minimal eccentricity (ties: lowest switch id), one per component.
    pub fn new(g: &SwitchGraph, dist: &SwitchDistances) -> Self {
        let roots = central_roots(g, dist);
        Self::with_roots(g, &roots)
    }

    /// Orientation from the given roots (one per connected component; a component without a root
    /// takes its lowest switch id).
    pub fn with_roots(g: &SwitchGraph, roots: &[u32]) -> Self {
        let ns = g.num_switches();
        let mut level = vec![u32::MAX; ns];
        let mut used_roots = Vec::new();
        let mut queue = std::collections::VecDeque::new();
        let starts = roots.iter().copied().chain(0..ns as u32);
        for r in starts {
            if r as usize >= ns || level[r as usize] != u32::MAX {
                continue;
            }
            used_roots.push(r);
            level[r as usize] = 0;
            queue.push_back(r);
            while let Some(v) = queue.pop_front() {
                for c in g.out_channels(v) {
                    let w = g.chan_head()[c as usize] as usize;
                    if level[w] == u32::MAX {
                        level[w] = level[v as usize] + 1;
                        queue.push_back(w as u32);
                    }
                }
            }
        }
        let mut by_rank: Vec<u32> = (0..ns as u32).collect();
        by_rank.sort_unstable_by_key(|&s| (level[s as usize], s));
        let mut rank = vec![0u32; ns];
        for (i, &s) in by_rank.iter().enumerate() {
            rank[s as usize] = i as u32;
        }
        UpDown {
            roots: used_roots,
            level,
            rank,
            by_rank,
        }
    }

    /// Whether channel `c` goes up (towards a lower rank).
    #[inline]
    pub fn is_up(&self, g: &SwitchGraph, c: u32) -> bool {
        self.rank[g.chan_head()[c as usize] as usize]
            < self.rank[g.chan_tail()[c as usize] as usize]
    }
}

/// Per component, the switch of minimal eccentricity, ties to the lowest id.
fn central_roots(g: &SwitchGraph, dist: &SwitchDistances) -> Vec<u32> {
    let ecc = eccentricities(g, dist);
    let comp = g.components();
    let ncomp = comp.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    let mut best = vec![(u16::MAX, NO_SWITCH); ncomp];
    for s in 0..g.num_switches() as u32 {
        let b = &mut best[comp[s as usize] as usize];
        if (ecc[s as usize], s) < *b {
            *b = (ecc[s as usize], s);
        }
    }
    best.into_iter().map(|(_, s)| s).collect()
}

fn eccentricities(g: &SwitchGraph, dist: &SwitchDistances) -> Vec<u16> {
    let ns = g.num_switches() as u32;
    (0..ns)
        .map(|s| {
            (0..ns)
                .map(|t| dist.get(s, t))
                .filter(|&d| d != u16::MAX)
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// At most this many candidate roots per component are tried by [`UpDown::fitted`].
const ROOT_CANDIDATES: usize = 24;

impl UpDown {
    /// The orientation under which the routes behind a channel dependency graph have the least
    /// weight on illegal (down, then up) turns. `illegal_weight(ud)` measures an orientation.
    /// Candidates per component: the lowest-id switch of every class of switches alike in
    /// (eccentricity, attached CAs, degree), most central classes first, at most
    /// [`ROOT_CANDIDATES`]; ties go to the more central, then lower id. On symmetric fabrics
    /// (tori) this is one candidate; on fat trees one per level.
    pub fn fitted(
        g: &SwitchGraph,
        dist: &SwitchDistances,
        illegal_weight: impl Fn(&UpDown) -> u64,
    ) -> Self {
        best_roots(
            g,
            dist,
            |roots| UpDown::with_roots(g, roots),
            illegal_weight,
        )
    }

    /// Orientation from explicit ranks: `by_rank` lists every switch, each root first in its
    /// component and every other switch after at least one of its neighbours. `level` becomes
    /// the depth in the tree of each switch's lowest-level earlier neighbour, so every switch
    /// but a root has an up channel to a switch one level closer to the root.
    pub(crate) fn from_ranking(g: &SwitchGraph, roots: Vec<u32>, by_rank: Vec<u32>) -> Self {
        let ns = g.num_switches();
        let mut rank = vec![0u32; ns];
        for (i, &s) in by_rank.iter().enumerate() {
            rank[s as usize] = i as u32;
        }
        let mut level = vec![0u32; ns];
        for &s in &by_rank {
            level[s as usize] = g
                .out_channels(s)
                .map(|c| g.chan_head()[c as usize])
                .filter(|&h| rank[h as usize] < rank[s as usize])
                .map(|h| level[h as usize] + 1)
                .min()
                .unwrap_or(0);
        }
        UpDown {
            roots,
            level,
            rank,
            by_rank,
        }
    }
}

/// Per component, the candidate root under which `build` gives the orientation of least
/// `illegal_weight` (see [`UpDown::fitted`]); stops at a weight of 0.
pub(crate) fn best_roots(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    build: impl Fn(&[u32]) -> UpDown,
    illegal_weight: impl Fn(&UpDown) -> u64,
) -> UpDown {
    let ns = g.num_switches();
    let ecc = eccentricities(g, dist);
    let comp = g.components();
    let mut roots = central_roots(g, dist);
    for (k, root) in roots.clone().into_iter().enumerate() {
        let mut classes: Vec<(u16, u32, u32, u32)> = (0..ns as u32)
            .filter(|&s| comp[s as usize] as usize == k)
            .map(|s| {
                let deg = g.out_channels(s).len() as u32;
                (ecc[s as usize], g.terminal_count()[s as usize], deg, s)
            })
            .collect();
        classes.sort_unstable();
        classes.dedup_by_key(|c| (c.0, c.1, c.2));
        let mut best = (u64::MAX, root);
        for &(_, _, _, cand) in classes.iter().take(ROOT_CANDIDATES) {
            roots[k] = cand;
            let w = illegal_weight(&build(&roots));
            if w < best.0 {
                best = (w, cand);
            }
            if w == 0 {
                break;
            }
        }
        roots[k] = best.1;
    }
    build(&roots)
}

impl UpDown {
    /// The channels in an order in which every legal turn goes forward (up channels by
    /// decreasing rank of their tail, then down channels by increasing rank): a topological
    /// order of the dependency graph of any set of Up*/Down* routes.
    pub fn legal_order(&self, g: &SwitchGraph) -> Vec<u32> {
        let mut order: Vec<u32> = (0..g.num_channels() as u32).collect();
        order.sort_unstable_by_key(|&c| {
            let r = self.rank[g.chan_tail()[c as usize] as usize];
            if self.is_up(g, c) {
                (0u8, u32::MAX - r, c)
            } else {
                (1u8, r, c)
            }
        });
        order
    }

    /// Whether the turn `c1 -> c2` may occur on a legal route (it is not down, then up).
    #[inline]
    pub fn legal_turn(&self, g: &SwitchGraph, c1: u32, c2: u32) -> bool {
        self.is_up(g, c1) || !self.is_up(g, c2)
    }
}

/// The candidate channels of the Up*/Down* routes towards one switch: its tree distances `T`,
/// the switches by `T`, and per switch the channels one step closer. Depends on the orientation
/// and the switch only (not on loads), so the DAGs of coming destinations can be built on
/// another core while balanced trees are chosen ([`UpDownRouter::route_dests_tree`]).
#[derive(Default)]
pub struct UpDownDag {
    /// The switch it leads to ([`NO_SWITCH`]: none yet).
    to: u32,
    /// Tree distance `T` to `to`.
    t: Vec<u16>,
    order: Vec<u32>,
    /// Candidate next channels of `order[i]` (`i >= 1`): `cands[cand_start[i - 1]..cand_start[i]]`
    /// (ascending channel ids), with their head switches.
    cand_start: Vec<u32>,
    cands: Vec<u32>,
    heads: Vec<u32>,
    // Scratch.
    /// Down-only distance to `to`.
    dd: Vec<u16>,
    queue: Vec<u32>,
    counts: Vec<u32>,
}

impl UpDownDag {
    fn empty(ns: usize) -> Self {
        UpDownDag {
            to: NO_SWITCH,
            t: vec![u16::MAX; ns],
            dd: vec![u16::MAX; ns],
            queue: Vec::with_capacity(ns),
            order: Vec::with_capacity(ns),
            cand_start: Vec::with_capacity(ns),
            ..Default::default()
        }
    }

    /// Computes `dd` and `T` towards switch `to`, the switches ordered by `T` and their
    /// candidates.
    fn build(&mut self, g: &SwitchGraph, ud: &UpDown, to: u32) {
        self.to = to;
        self.dd.fill(u16::MAX);
        self.dd[to as usize] = 0;
        self.queue.clear();
        self.queue.push(to);
        let mut i = 0;
        while i < self.queue.len() {
            let v = self.queue[i];
            i += 1;
            let nd = self.dd[v as usize] + 1;
            for &c in g.in_channels(v) {
                let u = g.chan_tail()[c as usize];
                if self.dd[u as usize] == u16::MAX && !ud.is_up(g, c) {
                    self.dd[u as usize] = nd;
                    self.queue.push(u);
                }
            }
        }
        for &s in &ud.by_rank {
            let s = s as usize;
            self.t[s] = if self.dd[s] != u16::MAX {
                self.dd[s]
            } else {
                let mut best = u16::MAX;
                for c in g.out_channels(s as u32) {
                    if ud.is_up(g, c) {
                        best = best.min(self.t[g.chan_head()[c as usize] as usize]);
                    }
                }
                if best == u16::MAX {
                    u16::MAX
                } else {
                    best + 1
                }
            };
        }
        order_by_distance(&self.t, &mut self.order, &mut self.counts);
        // Towards a switch that is below: down channels one down-distance closer; else up
        // channels one tree-distance closer.
        let (dd, t) = (&self.dd, &self.t);
        self.cand_start.clear();
        self.cand_start.push(0);
        self.cands.clear();
        self.heads.clear();
        for &s in self.order.iter().skip(1) {
            for c in g.out_channels(s) {
                let w = g.chan_head()[c as usize];
                let ok = if dd[s as usize] != u16::MAX {
                    !ud.is_up(g, c) && dd[w as usize].wrapping_add(1) == dd[s as usize]
                } else {
                    ud.is_up(g, c) && t[w as usize].wrapping_add(1) == t[s as usize]
                };
                if ok {
                    self.cands.push(c);
                    self.heads.push(w);
                }
            }
            self.cand_start.push(self.cands.len() as u32);
        }
    }
}

/// Builds balanced Up*/Down* destination trees, reusing buffers across destinations.
pub struct UpDownRouter<'a> {
    g: &'a SwitchGraph,
    ud: &'a UpDown,
    /// The DAG towards the last destination's switch; a switch's LIDs come one after another in
    /// routing order, so they share it.
    dag: UpDownDag,
    next: Vec<u32>,
}

/// Destinations per batch whose DAGs are built ahead ([`UpDownRouter::route_dests_tree`]).
const DAG_BATCH: usize = 16;

impl<'a> UpDownRouter<'a> {
    pub fn new(g: &'a SwitchGraph, ud: &'a UpDown) -> Self {
        let ns = g.num_switches();
        UpDownRouter {
            g,
            ud,
            dag: UpDownDag::empty(ns),
            next: Vec::with_capacity(ns),
        }
    }

    /// Chooses the balanced Up*/Down* tree towards `d` with `bal`'s channel loads, writes its LFT
    /// and hop entries, and adds its routes to the loads. Returns the next channel per switch
    /// ([`NO_CHANNEL`](crate::graph::NO_CHANNEL) for the destination's switch and for switches in other components).
    pub fn route_dest(
        &mut self,
        bal: &mut Balancer,
        d: &Dest,
        lft: &mut Lft,
        hops: &mut SwitchLidTable,
    ) -> &[u32] {
        self.route_dest_tree(bal, d);
        let t = &self.dag.t;
        write_dest(self.g, d, &self.next, |s| t[s as usize], lft, hops);
        &self.next
    }

    /// [`Self::route_dest`] without writing the tree into the tables: its next channels only.
    pub fn route_dest_tree(&mut self, bal: &mut Balancer, d: &Dest) -> &[u32] {
        if self.dag.to != d.switch {
            self.dag.build(self.g, self.ud, d.switch);
        }
        choose_on(self.g, bal, &self.dag, &mut self.next);
        &self.next
    }

    /// [`Self::route_dest_tree`] for each of `dests` in turn (the same trees), handing each to
    /// `each` with its tree distances (the hop counts); the DAGs of the next few destinations
    /// are built on the other core meanwhile. Stops at the first error of `each`.
    pub fn route_dests_tree<E: Send>(
        &mut self,
        bal: &mut Balancer,
        dests: &[Dest],
        mut each: impl FnMut(&Dest, &[u32], &[u16]) -> Result<(), E> + Send,
    ) -> Result<(), E> {
        let (g, ud) = (self.g, self.ud);
        let ns = g.num_switches();
        let build = |dags: &mut Vec<UpDownDag>, batch: &[Dest]| {
            dags.resize_with(batch.len(), || UpDownDag::empty(ns));
            let mut last = NO_SWITCH;
            for (k, d) in batch.iter().enumerate() {
                // A switch's LIDs in a row share the first one's DAG.
                if d.switch != last {
                    dags[k].build(g, ud, d.switch);
                    last = d.switch;
                } else {
                    dags[k].to = NO_SWITCH;
                }
            }
        };
        let mut batches = dests.chunks(DAG_BATCH);
        let (mut ready, mut ahead) = (Vec::new(), Vec::new());
        let Some(first) = batches.next() else {
            return Ok(());
        };
        build(&mut ready, first);
        let next = &mut self.next;
        let mut current = first;
        loop {
            let coming = batches.next();
            let (done, ()) = rayon::join(
                || -> Result<(), E> {
                    let mut dag = 0;
                    for (k, d) in current.iter().enumerate() {
                        if ready[k].to != NO_SWITCH {
                            dag = k;
                        }
                        choose_on(g, bal, &ready[dag], next);
                        each(d, next, &ready[dag].t)?;
                    }
                    Ok(())
                },
                || {
                    if let Some(batch) = coming {
                        build(&mut ahead, batch);
                    }
                },
            );
            done?;
            match coming {
                Some(batch) => {
                    std::mem::swap(&mut ready, &mut ahead);
                    current = batch;
                }
                None => return Ok(()),
            }
        }
    }
}

/// The balanced tree within `dag` by `bal`'s loads, into `next`, its routes added to the loads.
fn choose_on(g: &SwitchGraph, bal: &mut Balancer, dag: &UpDownDag, next: &mut Vec<u32>) {
    let chosen = bal.choose_tree_cands(&dag.order, &dag.cand_start, &dag.cands, &dag.heads);
    next.clear();
    next.extend_from_slice(chosen);
    bal.add_tree_load(g, &dag.order);
}

/// Routes every LID with balanced Up*/Down* (one layer, deadlock-free by construction).
pub fn route(g: &SwitchGraph) -> Routing {
    let dist = SwitchDistances::new(g);
    let ud = UpDown::new(g, &dist);
    route_with(g, &ud)
}

/// [`route`] with a given orientation.
pub fn route_with(g: &SwitchGraph, ud: &UpDown) -> Routing {
    let ns = g.num_switches();
    let mut lft = Lft::new(ns, g.max_lid());
    let mut hops = SwitchLidTable::new(ns, g.max_lid(), crate::routing::NO_PATH);
    let mut bal = Balancer::new(g);
    let mut router = UpDownRouter::new(g, ud);
    for di in routing_order(g) {
        let d = g.dests()[di as usize];
        router.route_dest(&mut bal, &d, &mut lft, &mut hops);
    }
    Routing {
        lft,
        hops,
        layers: None,
        num_layers: 1,
    }
}
