//! Load balancing over minimal routes, shared by every balanced routing (SSSP, its multipath
//! variant for LMC > 0, Up*/Down* and the escape layer of DFSSSP):
//! - `MinimalDag`: the minimal routes towards one switch, as a DAG ordered by distance;
//! - [`Balancer`]: the load of every channel, and the least-loaded tree within a DAG of allowed
//!   channels (a dynamic program over the switches in distance order, no priority queue);
//! - [`routing_order`]: the order destinations are routed in;
//! - one row writer ([`dest_entries`]) turning a destination's tree into LFT ports and hop counts,
//!   for tables laid out by switch ([`write_dest`]) or by destination ([`fill_row`]).
//!
//! **Cost.** Per destination LID the choice reads each candidate of the minimal DAG once:
//! `O(S + C)` with the resets, its row and the loads, plus `O(S)` per LMC sibling whose channels it
//! avoids. On fat trees each distance level is ranked by a counting sort (`O(S)` over all levels),
//! then within branches up to the tree's height (`O(S log S)` at worst); `SameHeads` groups once
//! per destination switch and pass: sorts, `O(C log C + S·radix·log S)`, and subset checks against
//! the groups sharing a first head. A routing ([`crate::sssp`]): `O(D·(S + C))` a pass, one rip-up
//! pass at most, [`nearest_sweep`] `O(S²)` on fat trees; ports and hops destination-major, then
//! switch-major, `S·(max_lid+1)` bytes each, and a copy of the ports for the rip-up.

mod dag;

pub(crate) use dag::{DagsAhead, MinimalDag};

use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{Lft, SwitchLidTable, NO_PATH};

/// Weight of sharing one channel with a sibling LID; larger than any possible sum of loads along
/// a path (loads are route counts, at most 2^32 per channel in practice, paths < 256 channels).
pub(crate) const SIBLING_PENALTY: u64 = 1 << SIBLING_SHIFT;
const SIBLING_SHIFT: u32 = 44;

/// State of a balanced routing in progress: the load of every channel and reusable per-destination
/// buffers. Other DAG-constrained routings (Up*/Down* escape routes) reuse it through
/// [`Balancer::choose_tree`] and [`Balancer::add_tree_load`].
pub struct Balancer {
    /// Routes (CA-port sources) placed on each channel so far.
    pub load: Vec<u64>,
    /// Channels whose load carries one [`SIBLING_PENALTY`] per entry for the destination being
    /// routed (added to `load` itself, so choosing a tree reads one array; taken off again after).
    penalized: Vec<u32>,
    cost: Vec<u64>,
    flow: Vec<u64>,
    next: Vec<u32>,
    /// Per switch, the rank of its branch from the destination among its distance level (see
    /// [`Balancer::rank_level`]); `u32::MAX` for unreached switches.
    rank: Vec<u32>,
    /// One distance level's (head rank, channel, switch), ranked at the end of the level.
    level: Vec<(u32, u32, u32)>,
    rank_counts: Vec<u32>,
    /// One distance level's (head rank, switch), in rank order.
    ranked: Vec<(u32, u32)>,
    /// Fat trees: paths compared by their down part first, ties broken by branch rank
    /// ([`Balancer::for_tree`]). Elsewhere every rank stays `u32::MAX` and ties go to the lower
    /// channel.
    tree: Option<TreeCosts>,
}

/// Where a switch's count of destinations taken down starts in [`TreeCosts::usage`]: the routes a
/// switch sends stay below 2^32 (CA ports times LIDs, fewer than 2^16 each).
const DOWN_DEST_SHIFT: u32 = 40;

/// A fat tree's switch levels and, per switch, the load of its path's down part.
struct TreeCosts {
    level: Vec<u32>,
    cost_down: Vec<u64>,
    /// Down parts first for the destination being routed (CA LIDs); switch LIDs, whose routes
    /// carry no CA-to-CA traffic, keep the plain path weight.
    active: bool,
    /// Per switch, the head of its chosen channel.
    head: Vec<u32>,
    /// Per switch, how many destinations it takes down (high bits, from [`DOWN_DEST_SHIFT`]) and
    /// the routes it sends on (the loads of its channels, summed): the order of switches within
    /// one branch ([`Balancer::rank_level`]), in one word.
    usage: Vec<u64>,
    /// The highest level.
    height: u32,
    /// Switches that choose alike, for the DAG towards `grouped_for` ([`SameHeads`]); `None`
    /// computes every switch's choice in full (tests compare the two).
    same_heads: Option<SameHeads>,
}

/// Switches whose choice of head is the same by construction. With ranked ties and no sibling
/// penalties, a switch whose candidates all go up picks its head by (down part, rank) of the
/// head alone (both are properties of the head, and ranks within a distance level are
/// distinct), so every switch of one tree level with the same candidate heads picks the same
/// head: on a k-ary n-tree, the leaves of a pod, and the switches of one column across pods.
/// The first of them computes it; the others only pick their least loaded channel to that head.
/// A switch whose heads are a subset of an earlier group's (a failed cable took one of its
/// channels) picks that group's head too wherever it has it: the least of a set is the least of
/// any subset that holds it.
/// Grouped once per destination switch, used for all its CA LIDs.
struct SameHeads {
    /// The destination switch of the DAG grouped, [`NO_SWITCH`] for none.
    grouped_for: u32,
    /// Per position in the DAG's order, the first position of the same distance level with the
    /// same tree level, all candidates going up and the same candidate heads; itself otherwise.
    leader: Vec<u32>,
    /// Each switch's candidate heads, sorted, in the DAG's layout.
    sorted_heads: Vec<u32>,
    /// In the DAG's layout: at `span.start + r`, the slot of the candidate to the `r`-th of the
    /// sorted heads. A follower whose heads are distinct reaches its channel to the leader's
    /// head from the head's rank in one step instead of scanning its candidates.
    by_rank: Vec<u32>,
    /// Per position: whether its candidate heads are distinct (no parallel links).
    distinct: Vec<bool>,
    /// Per position: whether it leads others.
    leads: Vec<bool>,
    /// Per leading position, the rank of its chosen head among its sorted heads (for the LID
    /// being routed).
    lead_rank: Vec<u32>,
    /// Per leading position, an earlier leader of the same distance and tree level whose heads
    /// are a strict superset of its own, `u32::MAX` for none.
    superset: Vec<u32>,
    /// (tree level, head, leader) of the leaders of groups of two or more, sorted: where a
    /// level's subsets look for their superset.
    by_head: Vec<(u32, u32, u32)>,
    positions: Vec<u32>,
    pairs: Vec<u64>,
}

/// Whether every element of `small` is in `wide` (both ascending, duplicates allowed in either).
fn is_sorted_subset(small: &[u32], wide: &[u32]) -> bool {
    let mut rest = wide;
    small.iter().all(|x| {
        let skip = rest.partition_point(|y| y < x);
        rest = &rest[skip..];
        rest.first() == Some(x)
    })
}

impl SameHeads {
    fn new() -> Self {
        SameHeads {
            grouped_for: NO_SWITCH,
            leader: Vec::new(),
            sorted_heads: Vec::new(),
            by_rank: Vec::new(),
            distinct: Vec::new(),
            leads: Vec::new(),
            lead_rank: Vec::new(),
            superset: Vec::new(),
            by_head: Vec::new(),
            positions: Vec::new(),
            pairs: Vec::new(),
        }
    }

    fn group(&mut self, dag: &MinimalDag, level: &[u32]) {
        self.grouped_for = dag.to;
        self.leader.clear();
        self.leader.extend(0..dag.order.len() as u32);
        let span = |i: usize| dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize;
        // Each switch's candidates sorted by head (then slot): the sorted heads, and the slot
        // of each rank.
        self.pairs.clear();
        self.pairs.extend(
            dag.heads
                .iter()
                .enumerate()
                .map(|(k, &h)| (u64::from(h) << 32) | k as u64),
        );
        for i in 1..dag.order.len() {
            self.pairs[span(i)].sort_unstable();
        }
        self.sorted_heads.clear();
        self.sorted_heads
            .extend(self.pairs.iter().map(|&p| (p >> 32) as u32));
        self.by_rank.clear();
        self.by_rank.extend(self.pairs.iter().map(|&p| p as u32));
        self.superset.clear();
        self.superset.resize(dag.order.len(), u32::MAX);
        self.distinct.clear();
        self.distinct.push(false);
        for i in 1..dag.order.len() {
            let heads = &self.sorted_heads[span(i)];
            self.distinct.push(heads.windows(2).all(|w| w[0] != w[1]));
        }
        let mut start = 1;
        for &end in &dag.level_end[1..] {
            let end = end as usize;
            self.positions.clear();
            self.positions
                .extend((start..end).map(|i| i as u32).filter(|&i| {
                    let lv = level[dag.order[i as usize] as usize];
                    let heads = &dag.heads[span(i as usize)];
                    !heads.is_empty() && heads.iter().all(|&h| level[h as usize] > lv)
                }));
            let key = |i: u32| {
                let i = i as usize;
                (level[dag.order[i] as usize], &self.sorted_heads[span(i)])
            };
            // Stable: the first position of equal keys leads.
            self.positions.sort_by(|&a, &b| key(a).cmp(&key(b)));
            self.by_head.clear();
            for run in self.positions.chunk_by(|&a, &b| key(a) == key(b)) {
                for &i in run {
                    self.leader[i as usize] = run[0];
                }
                if run.len() > 1 {
                    let (lv, heads) = key(run[0]);
                    let mut last = NO_SWITCH;
                    for &h in heads {
                        if h != last {
                            self.by_head.push((lv, h, run[0]));
                            last = h;
                        }
                    }
                }
            }
            // A lone switch of a group that lost a channel: the superset's group led by the
            // earliest position. A sort of the groups' heads per level, then a few subset
            // checks per lone switch (a head is in few groups).
            self.by_head.sort_unstable();
            for &i in &self.positions {
                if self.leader[i as usize] != i {
                    continue;
                }
                let (lv, heads) = key(i);
                let from = self.by_head.partition_point(|&e| e < (lv, heads[0], 0));
                self.superset[i as usize] = self.by_head[from..]
                    .iter()
                    .take_while(|&&(l, h, _)| (l, h) == (lv, heads[0]))
                    .map(|&(_, _, leader)| leader)
                    .filter(|&leader| leader < i)
                    .find(|&leader| {
                        let wider = &self.sorted_heads[span(leader as usize)];
                        wider.len() > heads.len() && is_sorted_subset(heads, wider)
                    })
                    .unwrap_or(u32::MAX);
            }
            start = end;
        }
        self.leads.clear();
        self.leads.resize(dag.order.len(), false);
        for (i, &l) in self.leader.iter().enumerate() {
            if l as usize != i {
                self.leads[l as usize] = true;
            }
        }
        self.lead_rank.clear();
        self.lead_rank.resize(dag.order.len(), u32::MAX);
    }

    /// The slot of follower `i`'s candidate to its leader's chosen head, where its heads are
    /// distinct (else its candidates are scanned).
    #[inline]
    fn follower_slot(&self, dag: &MinimalDag, i: usize) -> Option<usize> {
        let leader = self.leader[i] as usize;
        let r = self.lead_rank[leader];
        (self.distinct[i] && r != u32::MAX)
            .then(|| self.by_rank[dag.cand_start[i - 1] as usize + r as usize] as usize)
    }

    /// For leader `i` with an earlier superset leader (see [`Self::superset`]), that leader's
    /// head (`head`: per switch, the chosen head) and its slot among `i`'s candidates where `i`
    /// has it and its heads are distinct, `None` for the slot where parallel channels reach it.
    /// `None` where `i` lacks that head, or it has no rank (ties between unranked heads are
    /// broken by `i`'s own loads).
    #[inline]
    fn subset_head(
        &self,
        dag: &MinimalDag,
        i: usize,
        head: &[u32],
        rank: &[u32],
    ) -> Option<(u32, Option<usize>)> {
        let wider = *self.superset.get(i)?;
        if wider == u32::MAX {
            return None;
        }
        let h = head[dag.order[wider as usize] as usize];
        if h == NO_SWITCH || rank[h as usize] == u32::MAX {
            return None;
        }
        let span = dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize;
        let r = self.sorted_heads[span.clone()].binary_search(&h).ok()?;
        let slot = self.distinct[i].then(|| self.by_rank[span.start + r] as usize);
        Some((h, slot))
    }

    /// Records the rank of the head leader `i` chose, for its followers.
    #[inline]
    fn led(&mut self, dag: &MinimalDag, i: usize, head: u32) {
        if self.leads[i] {
            let span = dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize;
            self.lead_rank[i] = self.sorted_heads[span]
                .binary_search(&head)
                .map_or(u32::MAX, |r| r as u32);
        }
    }
}

/// What a fat-tree candidate's choice reads of its head switch and its channel (borrowed from
/// the balancer for one switch's candidates).
struct HeadCosts<'a> {
    load: &'a [u64],
    cost: &'a [u64],
    cost_down: &'a [u64],
    rank: &'a [u32],
    level: &'a [u32],
}

impl HeadCosts<'_> {
    /// Of the candidate channels `cands` (heads `heads`) of a switch on level `lv`, the one whose
    /// path has the least loaded down part (from its turn to the destination), so the sources of
    /// a destination go down one branch; then the branch's rank, the up part's load and the
    /// channel's own load. With `SHARED`, channels shared with sibling LIDs (a penalty unit
    /// each, on either part) count before anything else.
    /// Returns (up cost, channel load, rank, channel) and the down part's cost.
    #[inline]
    fn cheapest<const SHARED: bool>(
        &self,
        cands: &[u32],
        heads: &[u32],
        lv: u32,
    ) -> ((u64, u64, u32, u32), u64, u32) {
        let mut best = (u64::MAX, u64::MAX, u32::MAX, NO_CHANNEL);
        let (mut best_shared, mut best_down, mut best_head) = (u64::MAX, u64::MAX, NO_SWITCH);
        for (&c, &head) in cands.iter().zip(heads) {
            let (w, h) = (self.load[c as usize], head as usize);
            let (down, up) = if self.level[h] < lv {
                (self.cost_down[h].saturating_add(w), self.cost[h])
            } else {
                (self.cost_down[h], self.cost[h].saturating_add(w))
            };
            let shared = if SHARED {
                (down >> SIBLING_SHIFT) + (up >> SIBLING_SHIFT)
            } else {
                0
            };
            // Most candidates lose on the down part already.
            if (shared, down) > (best_shared, best_down) {
                continue;
            }
            let r = self.rank[h];
            let better =
                (shared, down) < (best_shared, best_down) || (r, up, w) < (best.2, best.0, best.1);
            if better {
                (best_shared, best_down, best_head) = (shared, down, head);
                best = (up, w, r, c);
            }
        }
        (best, best_down, best_head)
    }

    /// [`cheapest`](Self::cheapest) where all candidates go up and the head is known to win
    /// ([`SameHeads`]), and `c` is the only channel to it.
    #[inline]
    fn to_head_by(&self, c: u32, head: u32) -> ((u64, u64, u32, u32), u64, u32) {
        let (w, h) = (self.load[c as usize], head as usize);
        let up = self.cost[h].saturating_add(w);
        ((up, w, self.rank[h], c), self.cost_down[h], head)
    }

    /// [`cheapest`](Self::cheapest) where all candidates go up and the head is known to win
    /// ([`SameHeads`]): the least loaded channel to `head`, the first of equal loads.
    #[inline]
    fn to_head(&self, cands: &[u32], heads: &[u32], head: u32) -> ((u64, u64, u32, u32), u64, u32) {
        let mut pick = (u64::MAX, NO_CHANNEL);
        for (&c, _) in cands.iter().zip(heads).filter(|&(_, &h)| h == head) {
            let w = self.load[c as usize];
            if w < pick.0 {
                pick = (w, c);
            }
        }
        let h = head as usize;
        let up = self.cost[h].saturating_add(pick.0);
        ((up, pick.0, self.rank[h], pick.1), self.cost_down[h], head)
    }
}

impl Balancer {
    pub fn new(g: &SwitchGraph) -> Self {
        let (ns, nc) = (g.num_switches(), g.num_channels());
        Balancer {
            load: vec![0; nc],
            penalized: Vec::new(),
            cost: vec![0; ns],
            flow: vec![0; ns],
            next: vec![NO_CHANNEL; ns],
            rank: vec![u32::MAX; ns],
            level: Vec::new(),
            rank_counts: Vec::new(),
            ranked: Vec::new(),
            tree: None,
        }
    }

    /// A balancer for a fat tree with switch levels `level` ([`SwitchGraph::tree_levels`]).
    /// Paths are compared by the load of their down part first (from the highest switch they
    /// reach to the destination): every source of a destination then goes down the same branch,
    /// as d-mod-k and ftree route, whatever the loads of the sources' own uplinks, which differ
    /// between leaves of different sizes. Between equal down parts the branch that ranks first
    /// ([`Balancer::rank_level`]) wins, before the less loaded up part (all sources converge
    /// there too: ftree's choice).
    pub fn for_tree(g: &SwitchGraph, level: Vec<u32>) -> Self {
        let height = level.iter().copied().max().unwrap_or(0);
        Balancer {
            tree: Some(TreeCosts {
                level,
                cost_down: vec![u64::MAX; g.num_switches()],
                active: true,
                head: vec![NO_SWITCH; g.num_switches()],
                usage: vec![0; g.num_switches()],
                height,
                same_heads: Some(SameHeads::new()),
            }),
            ..Self::new(g)
        }
    }

    /// [`Balancer::for_tree`] computing every switch's choice in full, without [`SameHeads`].
    #[cfg(test)]
    pub(crate) fn without_head_groups(mut self) -> Self {
        if let Some(t) = self.tree.as_mut() {
            t.same_heads = None;
        }
        self
    }

    /// Picks for every switch of `order` after the first (the destination's switch) the candidate
    /// channel of least total path weight towards the destination. `order` must list every switch
    /// after the heads of all its candidate channels (e.g. by increasing distance); switches not in
    /// `order`, or without a candidate leading to a switch already routed, get no route.
    /// Returns the chosen channel per switch ([`NO_CHANNEL`] for the root and unrouted switches).
    pub fn choose_tree(
        &mut self,
        g: &SwitchGraph,
        order: &[u32],
        is_candidate: impl Fn(u32) -> bool,
    ) -> &[u32] {
        self.next.fill(NO_CHANNEL);
        let Some((&root, rest)) = order.split_first() else {
            return &self.next;
        };
        self.cost.fill(u64::MAX);
        self.cost[root as usize] = 0;
        for &s in rest {
            let heads = g.chan_head();
            let cands = g.out_channels(s).filter(|&c| is_candidate(c));
            (self.cost[s as usize], self.next[s as usize]) =
                self.cheapest(cands.map(|c| (c, heads[c as usize])));
        }
        &self.next
    }

    /// Of the candidate (channel, head switch) pairs, the one of least path weight (head's cost
    /// plus the channel's load), ties to the less loaded channel, then the lower channel: that
    /// cost and channel, or `(u64::MAX, NO_CHANNEL)` when no head is routed yet.
    #[inline]
    fn cheapest(&self, cands: impl Iterator<Item = (u32, u32)>) -> (u64, u32) {
        let mut best = (u64::MAX, u64::MAX, NO_CHANNEL);
        for (c, head) in cands {
            let head_cost = self.cost[head as usize];
            if head_cost == u64::MAX {
                continue;
            }
            let w = self.load[c as usize];
            let key = (head_cost.saturating_add(w), w, c);
            if key < best {
                best = key;
            }
        }
        (best.0, best.2)
    }

    /// [`choose_tree`](Self::choose_tree) over prebuilt candidates: those of `order[i]` (`i >= 1`)
    /// are `cands[cand_start[i - 1]..cand_start[i]]` in ascending channel order, with their head
    /// switches. The same choice, without testing every channel of every switch again for each
    /// LID of one destination switch.
    pub(crate) fn choose_tree_cands(
        &mut self,
        order: &[u32],
        cand_start: &[u32],
        cands: &[u32],
        heads: &[u32],
    ) -> &[u32] {
        self.next.fill(NO_CHANNEL);
        let Some(&root) = order.first() else {
            return &self.next;
        };
        self.cost.fill(u64::MAX);
        self.cost[root as usize] = 0;
        for (i, &s) in order.iter().enumerate().skip(1) {
            let span = cand_start[i - 1] as usize..cand_start[i] as usize;
            let cands = cands[span.clone()]
                .iter()
                .copied()
                .zip(heads[span].iter().copied());
            (self.cost[s as usize], self.next[s as usize]) = self.cheapest(cands);
        }
        &self.next
    }

    /// [`choose_tree`](Self::choose_tree) over a prebuilt [`MinimalDag`]: the same choice, without
    /// testing every channel of every switch again for each LID of the destination switch.
    pub(crate) fn choose_tree_dag(&mut self, dag: &MinimalDag) -> &[u32] {
        self.next.fill(NO_CHANNEL);
        let Some(&root) = dag.order.first() else {
            return &self.next;
        };
        self.cost.fill(u64::MAX);
        self.cost[root as usize] = 0;
        if self.tree.is_some() {
            self.rank[root as usize] = 0;
        }
        let mut same_heads = false;
        if let Some(t) = self.tree.as_mut().filter(|t| t.active) {
            t.cost_down[root as usize] = 0;
            if let Some(groups) = t.same_heads.as_mut() {
                same_heads = self.penalized.is_empty();
                if same_heads && groups.grouped_for != dag.to {
                    groups.group(dag, &t.level);
                }
            }
        }
        let (mut prev_start, mut start) = (0, 1);
        let mut dist = 0;
        for &end in &dag.level_end[1..] {
            let end = end as usize;
            for (i, &s) in dag.order.iter().enumerate().take(end).skip(start) {
                let span = dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize;
                // Equal path weights go to the less loaded channel, then to the path whose branch
                // from the destination ranks first (see `rank_level`), then to the lower channel
                // (candidates ascend by channel id: the first of equal keys stays).
                let mut best = (u64::MAX, u64::MAX, u32::MAX, NO_CHANNEL);
                match self.tree.as_ref().filter(|t| t.active) {
                    None => {
                        for (&c, &head) in dag.cands[span.clone()].iter().zip(&dag.heads[span]) {
                            let w = self.load[c as usize];
                            let cost = self.cost[head as usize].saturating_add(w);
                            let r = self.rank[head as usize];
                            if cost < best.0
                                || (cost == best.0 && (w < best.1 || (w == best.1 && r < best.2)))
                            {
                                best = (cost, w, r, c);
                            }
                        }
                    }
                    Some(tree) => {
                        let heads = HeadCosts {
                            load: &self.load,
                            cost: &self.cost,
                            cost_down: &tree.cost_down,
                            rank: &self.rank,
                            level: &tree.level,
                        };
                        let (cands, hs) = (&dag.cands[span.clone()], &dag.heads[span]);
                        let lv = tree.level[s as usize];
                        let groups = tree.same_heads.as_ref().filter(|_| same_heads);
                        let leader = groups.map_or(i, |g| g.leader[i] as usize);
                        // The head a group's leader (or a superset's) chose, and the slot of
                        // this switch's channel to it where that is known without a scan.
                        let follow = if leader != i {
                            let head = tree.head[dag.order[leader] as usize];
                            Some((head, groups.and_then(|g| g.follower_slot(dag, i))))
                        } else {
                            groups.and_then(|g| g.subset_head(dag, i, &tree.head, &self.rank))
                        };
                        let (pick, down, head) = if let Some((head, slot)) = follow {
                            match slot {
                                Some(k) => heads.to_head_by(dag.cands[k], head),
                                None => heads.to_head(cands, hs, head),
                            }
                        } else {
                            // Specialised on the sibling penalties: the loop runs once per
                            // candidate of every switch for every destination LID.
                            if self.penalized.is_empty() {
                                heads.cheapest::<false>(cands, hs, lv)
                            } else {
                                heads.cheapest::<true>(cands, hs, lv)
                            }
                        };
                        best = pick;
                        if let Some(t) = self.tree.as_mut() {
                            t.cost_down[s as usize] = down;
                            t.head[s as usize] = head;
                            if let Some(g) = t.same_heads.as_mut().filter(|_| same_heads) {
                                if leader == i {
                                    g.led(dag, i, head);
                                }
                            }
                        }
                    }
                }
                self.cost[s as usize] = best.0;
                self.next[s as usize] = best.3;
                if self.tree.is_some() {
                    self.level.push((best.2, best.3, s));
                }
            }
            if self.tree.is_some() {
                // Beyond the tree's height from the destination, routes only go up: the order
                // within a branch serves no spreading there, and sorting costs.
                dist += 1;
                let by_usage = self
                    .tree
                    .as_ref()
                    .is_some_and(|t| t.level[root as usize] == 0 && dist <= t.height);
                self.rank_level(start - prev_start, by_usage);
            }
            prev_start = start;
            start = end;
        }
        &self.next
    }

    /// Ranks the switches of one distance level (in `level`: rank of the chosen head, chosen
    /// channel, switch) by their branch from the destination, read from the destination outward:
    /// the channel into the destination first, then the one before it, and so on. Ties between
    /// equally weighted paths go to the lowest rank, so every switch of a destination's tree
    /// prefers the same branches. A fixed order of channels alone (the lowest id wins) lets
    /// each switch pick its own branch wherever port numbers do not follow the topology, as on
    /// a chassis-wired fat tree, and the destination's routes then enter it over as many
    /// channels as the ties scattered them to: down channels loaded unevenly.
    ///
    /// Switches of one branch (the same head rank) rank by how many destinations they already
    /// take down, then by the routes they send: the same order for every source of this
    /// destination, but one that moves from destination to destination, so the destinations of
    /// a leaf with fewer CAs than uplinks leave out a different spine each time instead of
    /// always the last (d-mod-k and ftree spread them by port number, which chassis wiring
    /// scrambles). A counting sort by head rank, in time linear in the level and the one before
    /// (`prev_len` switches, ranks `0..prev_len`), then a sort within each branch.
    fn rank_level(&mut self, prev_len: usize, by_usage: bool) {
        let counts = &mut self.rank_counts;
        counts.clear();
        counts.resize(prev_len + 2, 0);
        let bucket = |head_rank: u32| (head_rank as usize).min(prev_len) + 1;
        for &(head_rank, _, _) in &self.level {
            counts[bucket(head_rank)] += 1;
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let ranked = &mut self.ranked;
        ranked.clear();
        ranked.resize(self.level.len(), (0, 0));
        for &(head_rank, _, s) in &self.level {
            let slot = &mut counts[bucket(head_rank) - 1];
            ranked[*slot as usize] = (head_rank, s);
            *slot += 1;
        }
        // Within one branch, the switch that takes fewer destinations down ranks first, then the
        // one sending fewer routes, then switch order (the level's channel order).
        if let Some(t) = self.tree.as_ref().filter(|_| by_usage) {
            for run in ranked.chunk_by_mut(|a, b| a.0 == b.0) {
                if run.len() > 1 {
                    run.sort_unstable_by_key(|&(_, s)| {
                        let s = s as usize;
                        (t.usage[s], s)
                    });
                }
            }
        }
        for (i, &(head_rank, s)) in ranked.iter().enumerate() {
            self.rank[s as usize] = if head_rank == u32::MAX {
                u32::MAX
            } else {
                i as u32
            };
        }
        self.level.clear();
    }

    /// On a fat tree, whether the next trees compare down parts first (for CA LIDs; see
    /// [`Balancer::for_tree`]) or plain path weights (switch LIDs: a valley there costs a layer).
    pub(crate) fn compare_down_parts(&mut self, on: bool) {
        if let Some(t) = self.tree.as_mut() {
            t.active = on;
        }
    }

    /// Adds the routes of the tree last chosen by [`choose_tree`](Self::choose_tree) to the channel
    /// loads: every CA port attached to a switch sends one route along its switch's path.
    pub fn add_tree_load(&mut self, g: &SwitchGraph, order: &[u32]) {
        for &s in order {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in order.iter().rev() {
            let c = self.next[s as usize];
            if c == NO_CHANNEL {
                continue;
            }
            let f = self.flow[s as usize];
            self.load[c as usize] += f;
            self.flow[g.chan_head()[c as usize] as usize] += f;
            if let Some(t) = self.tree.as_mut() {
                let h = g.chan_head()[c as usize] as usize;
                let down = f > 0 && t.level[h] < t.level[s as usize];
                t.usage[s as usize] += (u64::from(down) << DOWN_DEST_SHIFT) + f;
            }
        }
    }

    /// Adds the routes of tree `next` (chosen over `order` by this or another balancer) to the
    /// channel loads, switch `s` sending `sources[s]` routes: the load of one class of traffic
    /// ([`crate::traffic`]), where [`add_tree_load`](Self::add_tree_load) counts every CA port.
    pub(crate) fn add_tree_load_from(
        &mut self,
        g: &SwitchGraph,
        order: &[u32],
        next: &[u32],
        sources: &[u64],
    ) {
        for &s in order {
            self.flow[s as usize] = sources[s as usize];
        }
        for &s in order.iter().rev() {
            let c = next[s as usize];
            if c == NO_CHANNEL {
                continue;
            }
            let f = self.flow[s as usize];
            self.load[c as usize] += f;
            self.flow[g.chan_head()[c as usize] as usize] += f;
        }
    }

    /// Removes the routes of a tree given as one destination-major row of ports (what
    /// [`add_tree_load`](Self::add_tree_load) added when the tree was chosen); `order` is the
    /// destination switch's [`MinimalDag::order`].
    pub(crate) fn remove_row_load(&mut self, g: &SwitchGraph, order: &[u32], row: &[u8]) {
        for &s in order {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in order.iter().rev() {
            let Some(c) = g.channel_at(s, row[s as usize]) else {
                continue;
            };
            let f = self.flow[s as usize];
            self.load[c as usize] -= f;
            self.flow[g.chan_head()[c as usize] as usize] += f;
            if let Some(t) = self.tree.as_mut() {
                let h = g.chan_head()[c as usize] as usize;
                let down = f > 0 && t.level[h] < t.level[s as usize];
                t.usage[s as usize] -= (u64::from(down) << DOWN_DEST_SHIFT) + f;
            }
        }
    }

    /// Adds to `into` what the last [`add_tree_load`](Self::add_tree_load) added to the loads
    /// (it leaves each switch's subtree flow in `flow`): a second count of one class of
    /// destinations' routes.
    pub(crate) fn mirror_added(&self, order: &[u32], into: &mut [u64]) {
        for &s in order {
            let c = self.next[s as usize];
            if c != NO_CHANNEL {
                into[c as usize] += self.flow[s as usize];
            }
        }
    }

    /// Takes from `into` what the last [`remove_row_load`](Self::remove_row_load) of `row` took
    /// from the loads.
    pub(crate) fn mirror_removed(
        &self,
        g: &SwitchGraph,
        order: &[u32],
        row: &[u8],
        into: &mut [u64],
    ) {
        for &s in order {
            if let Some(c) = g.channel_at(s, row[s as usize]) {
                into[c as usize] -= self.flow[s as usize];
            }
        }
    }

    pub(crate) fn max_load(&self) -> u64 {
        self.load.iter().copied().max().unwrap_or(0)
    }

    /// Steers the next tree away from the channels the given trees already use (one unit of
    /// [`SIBLING_PENALTY`] per tree using a channel); trees as destination-major rows of ports, one
    /// row of `num_switches` ports per tree.
    pub(crate) fn penalize_rows(&mut self, g: &SwitchGraph, rows: &[u8]) {
        let ns = g.num_switches();
        for row in rows.chunks(ns.max(1)) {
            for (s, &p) in row.iter().enumerate() {
                if let Some(c) = g.channel_at(s as u32, p) {
                    self.penalized.push(c);
                    self.load[c as usize] += SIBLING_PENALTY;
                }
            }
        }
    }

    pub(crate) fn clear_penalties(&mut self) {
        for c in self.penalized.drain(..) {
            self.load[c as usize] -= SIBLING_PENALTY;
        }
    }
}

/// The order in which destinations are routed: the LIDs of CAs and routers first (they carry the
/// traffic that balancing is for), base LIDs of all ports before their second LIDs and so on, then
/// the switches' own LIDs; within each group, the LIDs behind one switch together (so the minimal
/// routes towards that switch are found once for all of them), by switch id, then LID.
/// Unreachable LIDs are left out.
pub fn routing_order(g: &SwitchGraph) -> Vec<u32> {
    let mut order: Vec<u32> = (0..g.dests().len() as u32)
        .filter(|&i| g.dests()[i as usize].switch != NO_SWITCH)
        .collect();
    order.sort_by_key(|&i| {
        let d = &g.dests()[i as usize];
        (d.exit_port == 0, d.lid_offset, d.switch, d.lid)
    });
    order
}

/// [`routing_order`] with the destination switches taken in `sweep` order (a position per
/// switch) instead of by switch id.
pub fn routing_order_by(g: &SwitchGraph, sweep: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..g.dests().len() as u32)
        .filter(|&i| g.dests()[i as usize].switch != NO_SWITCH)
        .collect();
    order.sort_by_key(|&i| {
        let d = &g.dests()[i as usize];
        (
            d.exit_port == 0,
            d.lid_offset,
            sweep[d.switch as usize],
            d.lid,
        )
    });
    order
}

/// A position per switch: the switches with CA ports in nearest-neighbour order (each next one
/// the closest to the one before, ties to the lower id), then the others by id.
///
/// On a fat tree this takes the leaves subtree by subtree (the leaves of one pod are 2 hops
/// apart, the next pod's 4), whatever their GUIDs. Routed in that order, every source subtree has
/// sent to the same destinations whenever a new subtree starts, so equal loads stay equal and the
/// ranked ties send each destination's routes down one branch: the d-mod-k pattern, found by the
/// balancer. In GUID order on a chassis-wired tree the subtrees come mixed, loads diverge between
/// source subtrees, and their routes to one destination split over the top level.
pub fn nearest_sweep(g: &SwitchGraph, dist: &crate::graph::SwitchDistances) -> Vec<u32> {
    let ns = g.num_switches();
    let mut left: Vec<u32> = (0..ns as u32)
        .filter(|&s| g.terminal_count()[s as usize] > 0)
        .collect();
    let mut pos = vec![u32::MAX; ns];
    let mut k = 0u32;
    let mut cur = match left.first() {
        Some(&s) => s,
        None => return (0..ns as u32).collect(),
    };
    while !left.is_empty() {
        let (i, _) = left
            .iter()
            .enumerate()
            .min_by_key(|&(_, &s)| (dist.get(cur, s), s))
            .unwrap();
        cur = left.swap_remove(i);
        pos[cur as usize] = k;
        k += 1;
    }
    for p in pos.iter_mut() {
        if *p == u32::MAX {
            *p = k;
            k += 1;
        }
    }
    pos
}

/// The LFT port and hop count of every switch towards destination `d`, given the chosen next
/// channel per switch (`next`, [`NO_CHANNEL`] where unrouted) and the switch-to-switch distance of each
/// switch along the chosen routes (`dist`). The one place that turns a tree into table entries.
#[inline]
pub fn dest_entries(
    g: &SwitchGraph,
    d: &Dest,
    next: &[u32],
    dist: impl Fn(u32) -> u16,
    mut emit: impl FnMut(u32, u8, u8),
) {
    let last_link = u16::from(d.exit_port != 0);
    for s in 0..g.num_switches() as u32 {
        let (port, h) = if s == d.switch {
            (d.exit_port, last_link)
        } else if next[s as usize] != NO_CHANNEL {
            (
                g.chan_port()[next[s as usize] as usize],
                dist(s).saturating_add(last_link),
            )
        } else {
            (NO_PATH, u16::from(NO_PATH))
        };
        emit(s, port, u8::try_from(h).unwrap_or(NO_PATH));
    }
}

/// Writes destination `d`'s entries into switch-major tables (see [`dest_entries`]).
pub fn write_dest(
    g: &SwitchGraph,
    d: &Dest,
    next: &[u32],
    dist: impl Fn(u32) -> u16,
    lft: &mut Lft,
    hops: &mut SwitchLidTable,
) {
    dest_entries(g, d, next, dist, |s, port, h| {
        lft.set(s, d.lid, port);
        hops.set(s, d.lid, h);
    });
}

/// Writes destination `d`'s entries into one destination-major row of ports and hop counts,
/// indexed by switch; `to` holds the distances towards `d`'s switch (see [`dest_entries`]).
pub fn fill_row(
    g: &SwitchGraph,
    d: &Dest,
    next: &[u32],
    to: &[u16],
    ports: &mut [u8],
    hops: &mut [u8],
) {
    dest_entries(
        g,
        d,
        next,
        |s| to[s as usize],
        |s, port, h| {
            ports[s as usize] = port;
            hops[s as usize] = h;
        },
    );
}

/// The load of every channel under a complete routing: routes per channel, every CA/router port
/// attached to a switch sending one route to every LID, as [`Balancer::load`] counts them while
/// routing. Destinations in parallel chunks.
pub fn channel_loads(g: &SwitchGraph, lft: &Lft) -> Vec<u64> {
    use rayon::prelude::*;

    use crate::routing::{for_each_column, DestPaths};
    let (ns, nc, nd) = (g.num_switches(), g.num_channels(), g.dests().len());
    let chunks = (rayon::current_num_threads() * 4).clamp(1, nd.max(1));
    let per = nd.div_ceil(chunks).max(1);
    crate::par::sized((0..chunks).into_par_iter(), ns * nd)
        .map(|k| {
            let mut load = vec![0u64; nc];
            let mut paths = DestPaths::new(ns);
            let mut flow = vec![0u64; ns];
            let dests = &g.dests()[(k * per).min(nd)..((k + 1) * per).min(nd)];
            for_each_column(g, lft, None, dests, |d, ports, _| {
                if d.switch == NO_SWITCH {
                    return;
                }
                paths.resolve_column(g, d, ports);
                paths.compute_order();
                add_dest_loads(g, &paths, &mut flow, &mut load);
            });
            load
        })
        .reduce(
            || vec![0u64; nc],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// Adds one destination's routes to `load`: every CA/router port on a switch sends one route
/// along its switch's path, as resolved in `paths` (with its order computed); paths that do not
/// deliver carry nothing. `flow` is per-switch scratch, all zero before and after.
pub(crate) fn add_dest_loads(
    g: &SwitchGraph,
    paths: &crate::routing::DestPaths,
    flow: &mut [u64],
    load: &mut [u64],
) {
    for &s in &paths.order {
        let s = s as usize;
        let f = flow[s] + u64::from(g.terminal_count()[s]);
        flow[s] = 0;
        let c = paths.next[s];
        if c != NO_CHANNEL && paths.end[s].is_ok() {
            load[c as usize] += f;
            flow[g.chan_head()[c as usize] as usize] += f;
        }
    }
}

/// The least edge forwarding index (CA-to-CA routes on one channel) any routing of `g` can have:
/// every switch sends its CA ports' routes to all other CA ports out over its channels, so one of
/// them carries at least its share. Destination-based routing reaches it on complete fat trees
/// whose leaves hold a multiple of their uplinks in CAs (d-mod-k).
pub fn leaf_bound(g: &SwitchGraph) -> u64 {
    let n = g.terminals().len() as u64;
    (0..g.num_switches() as u32)
        .filter_map(|s| {
            let t = u64::from(g.terminal_count()[s as usize]);
            let out = g.out_channels(s).len() as u64;
            (t > 0 && out > 0).then(|| (t * (n - t)).div_ceil(out))
        })
        .max()
        .unwrap_or(0)
}

/// A lower bound on the highest channel load of any routing of `g` (loads as
/// [`channel_loads`] counts them): every switch must send its CA ports' routes to the LIDs
/// elsewhere out over its channels, and receive everybody else's routes to its own LIDs over
/// them. Cheap (one pass over the switches); used to scale a full computation's load to a
/// changed fabric.
pub fn load_bound(g: &SwitchGraph) -> u64 {
    let ns = g.num_switches();
    let mut lids_at = vec![0u64; ns];
    let mut all_lids = 0u64;
    for d in g.dests() {
        if d.switch != NO_SWITCH {
            lids_at[d.switch as usize] += 1;
            all_lids += 1;
        }
    }
    let sources: u64 = g.terminal_count().iter().map(|&t| u64::from(t)).sum();
    (0..ns as u32)
        .map(|s| {
            let t = u64::from(g.terminal_count()[s as usize]);
            let here = lids_at[s as usize];
            let out = g.out_channels(s).len() as u64;
            let inn = g.in_channels(s).len() as u64;
            let send = if out > 0 {
                (t * (all_lids - here)).div_ceil(out)
            } else {
                0
            };
            let recv = if inn > 0 {
                ((sources - t) * here).div_ceil(inn)
            } else {
                0
            };
            send.max(recv)
        })
        .max()
        .unwrap_or(0)
}
