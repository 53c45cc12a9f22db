//! LMC > 0 multipath for the engine, after Nienaber et al.'s "separate" scheme: first choose good paths,
//! then realise them on the destination's 2^LMC LIDs with color/L.
//!
//! For every destination port (in SSSP's order, all its LIDs at once):
//! 1. **Path selection.** Over the minimal DAG towards the port's switch (all minimal routes),
//!    every source switch with CAs gets up to 2^LMC alternative paths: its path in the port's
//!    balanced SSSP tree (rank 0, its *best* path), then paths of least weight where a channel
//!    already used by one of the source's own alternatives costs more than any load
//!    ([`crate::sssp`]'s sibling penalty), so the alternatives are as channel-disjoint as the
//!    fabric allows and, among those, the least loaded. A source stops early when the next
//!    alternative would repeat one it has. Within a port, each source's alternatives are charged
//!    to the loads provisionally, so later sources spread over other channels.
//! 2. **LID assignment.** The paths (weighted by the CAs behind their source) form a
//!    [`PathSet`]; the split graph is coloured with color/L ([`SplitGraph::color`]). Two distinct
//!    alternatives of one source always split, so they always get distinct LIDs.
//! 3. **Degrading.** When color/L needs more LIDs than the port has (or than a forced budget
//!    allows), the least valuable alternatives are dropped: first those coloured beyond the budget
//!    with the highest rank, then whole ranks from the top; rank 0 is never dropped. The rank-0
//!    paths are one tree, a single configuration, so this always ends within budget.
//! 4. **Forwarding.** LID offset `o` realises configuration `o mod used`: every switch on one of
//!    its paths forwards by that path's channel; every other switch takes the least-weight minimal
//!    channel given the entries already fixed (loads plus the sibling penalty for channels earlier
//!    LIDs of the port use). Each LID is thus one in-tree of minimal routes from every switch, and
//!    the channel loads grow by that tree's routes exactly as in SSSP, so the fabric stays
//!    balanced across destinations.
//!
//! The output is a plain single-layer [`Routing`]: DFSSSP's deadlock removal, verification and
//! metrics apply unchanged and see every LID's routes.
//!
//! **Cost.** Per port with K = 2^LMC LIDs: the minimal DAG towards its switch, `O(S + C)` (shared
//! by consecutive ports on one switch), one least-weight tree over it per LID (and one more for
//! rank 0 when K > 1), `O(S + C)`, and `O(S)` for its row and loads: `O(D·(S + C))` for D LIDs.
//! With K > 1, path selection adds up to K − 1 searches per source switch with CAs, each over the
//! DAG between it and the port's switch (`O(S + C)` at most): `O(K·S·(S + C))` per port at worst.
//! Packing the A ≤ K·S paths builds their split graph (A²/8 bytes) and colours it (color/L:
//! `O(k·A²)` for k colours), again after each dropping round (each drops at least one path).
//! Memory: 2·S² bytes of distances, 2·(max LID + 1)·S bytes of rows, as much again in the Routing.

use crate::balance::{routing_order, MinimalDag, SIBLING_PENALTY};
use crate::graph::{Dest, SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::lid::assign::{num_colors, Heuristic, Hop, LidAssignment, PathSet, SplitGraph};
use crate::lid::LidError;
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

/// `pos` of a switch outside the current minimal DAG.
const NOT_IN_DAG: u32 = u32::MAX;

/// How [`route`] chooses and packs paths.
#[derive(Clone, Debug)]
pub struct MultipathOptions {
    /// The LID assignment heuristic (Nienaber et al. find color/L best).
    pub heuristic: Heuristic,
    /// Most configurations (distinct LID routes) one port may use, below its 2^LMC LIDs; `None`
    /// uses all of them. Lower values force merging (tests, or to leave LIDs identical).
    pub max_lids: Option<u32>,
    /// Keep every port's paths and LID assignment in the stats (tests, diagnostics).
    pub keep_paths: bool,
    /// Balance the base LIDs' routes on their own too (traffic that ignores LMC uses only base
    /// LIDs). Without it, the rank-0 trees are balanced against the load of all LIDs only, which
    /// on fat trees lines every source's base routes up on one spine (measured: Λ to base LIDs
    /// halves) but happens to align LID offsets with uplinks (Λ with sources spread over the LIDs
    /// rises); see `lambda_multipath_vs_sssp`.
    pub balance_base: bool,
}

impl Default for MultipathOptions {
    fn default() -> Self {
        MultipathOptions {
            heuristic: Heuristic::ColorL,
            max_lids: None,
            keep_paths: false,
            balance_base: true,
        }
    }
}

/// The paths of one port and their LIDs (kept with [`MultipathOptions::keep_paths`]).
#[derive(Clone, Debug)]
pub struct PortPaths {
    /// The paths kept after merging; hops are (switch, channel id), the port's switch is not
    /// part of them.
    pub paths: PathSet,
    /// LID offset of every path.
    pub lids: LidAssignment,
    /// Source switch of every path.
    pub source: Vec<u32>,
    /// Rank of every path among its source's alternatives (0 = the source's best path).
    pub rank: Vec<u8>,
}

/// What happened at one destination port with more than one LID.
#[derive(Clone, Debug)]
pub struct PortStats {
    pub endpoint: u32,
    pub base_lid: u16,
    /// The port's LIDs (2^LMC).
    pub lids: u32,
    /// Configurations allowed: `lids`, or less with [`MultipathOptions::max_lids`].
    pub budget: u32,
    /// Source switches with CAs that route to this port over switch links.
    pub sources: u32,
    /// Distinct paths selected (all ranks), before merging.
    pub paths: u32,
    /// LIDs the heuristic needed for all selected paths.
    pub needed: u32,
    /// Configurations finally used (<= budget).
    pub used: u32,
    /// Alternatives dropped to fit the budget.
    pub dropped: u32,
    pub detail: Option<PortPaths>,
}

impl PortStats {
    pub fn merged(&self) -> bool {
        self.dropped > 0
    }
}

/// Per-port results of [`route`].
#[derive(Clone, Debug, Default)]
pub struct MultipathStats {
    /// Ports with more than one LID, in routing order.
    pub ports: Vec<PortStats>,
}

impl MultipathStats {
    pub fn merged_ports(&self) -> usize {
        self.ports.iter().filter(|p| p.merged()).count()
    }

    /// A few summary lines for the engine log.
    pub fn log_lines(&self) -> Vec<String> {
        let n = self.ports.len();
        if n == 0 {
            return vec!["multipath: no port has more than one LID".into()];
        }
        let sum =
            |f: fn(&PortStats) -> u32| self.ports.iter().map(|p| u64::from(f(p))).sum::<u64>();
        let (sources, paths) = (sum(|p| p.sources), sum(|p| p.paths));
        let mut lines = vec![
            format!(
                "multipath: {n} ports with 2^LMC > 1 LIDs: {paths} alternative paths from {sources} \
                 (source switch, port) pairs ({:.2} per pair), heuristic color/L",
                if sources == 0 { 0.0 } else { paths as f64 / sources as f64 }
            ),
            format!(
                "multipath: LIDs needed {} vs available {} in total (most needed by one port: {}), \
                 configurations used {}",
                sum(|p| p.needed),
                sum(|p| p.lids),
                self.ports.iter().map(|p| p.needed).max().unwrap_or(0),
                sum(|p| p.used)
            ),
        ];
        let merged = self.merged_ports();
        if merged > 0 {
            let worst = self.ports.iter().filter(|p| p.merged()).take(4).map(|p| {
                format!(
                    "LID {} needs {} has {} (dropped {})",
                    p.base_lid, p.needed, p.budget, p.dropped
                )
            });
            lines.push(format!(
                "multipath: {merged} of {n} ports needed more LIDs than they have: {} alternatives \
                 dropped (each source keeps its best path), e.g. {}",
                sum(|p| p.dropped),
                worst.collect::<Vec<_>>().join("; ")
            ));
        } else {
            lines.push(format!(
                "multipath: every port's paths fit its LIDs ({n} ports)"
            ));
        }
        lines
    }
}

/// Routes every LID with multipath ([`module docs`](self)), computing switch distances itself.
pub fn route(
    g: &SwitchGraph,
    opts: &MultipathOptions,
) -> Result<(Routing, MultipathStats), LidError> {
    route_with_distances(g, &SwitchDistances::new(g), opts)
}

/// Per-destination scratch, reused across ports.
struct Scratch {
    load: Vec<u64>,
    /// Routes to base LIDs only (offset 0) per channel: what traffic that ignores LMC sees.
    load0: Vec<u64>,
    /// Weight factor of `load0` in [`Scratch::weight`] (the LIDs of the port being routed - 1),
    /// nonzero while choosing the base LID's routes, so that base LIDs alone stay balanced too.
    base_bias: u64,
    /// Sibling uses of a channel: by the current source's alternatives (selection), then by the
    /// port's LIDs already written (forwarding).
    pen: Vec<u32>,
    pen_list: Vec<u32>,
    /// Provisional loads of this port's alternatives, undone before forwarding.
    prov: Vec<(u32, u64)>,
    cost: Vec<u64>,
    pred: Vec<u32>,
    stamp: Vec<u32>,
    gen: u32,
    pos: Vec<u32>,
    level: Vec<u32>,
    next_level: Vec<u32>,
    fixed: Vec<u32>,
    next: Vec<u32>,
    flow: Vec<u64>,
    hops: Vec<Hop>,
}

impl Scratch {
    fn new(ns: usize, nc: usize) -> Self {
        Scratch {
            load: vec![0; nc],
            load0: vec![0; nc],
            base_bias: 0,
            pen: vec![0; nc],
            pen_list: Vec::new(),
            prov: Vec::new(),
            cost: vec![0; ns],
            pred: vec![NO_CHANNEL; ns],
            stamp: vec![0; ns],
            gen: 0,
            pos: vec![NOT_IN_DAG; ns],
            level: Vec::new(),
            next_level: Vec::new(),
            fixed: vec![NO_CHANNEL; ns],
            next: vec![NO_CHANNEL; ns],
            flow: vec![0; ns],
            hops: Vec::new(),
        }
    }

    fn weight(&self, c: u32) -> u64 {
        self.load[c as usize]
            + self.base_bias * self.load0[c as usize]
            + u64::from(self.pen[c as usize]) * SIBLING_PENALTY
    }

    fn penalize(&mut self, c: u32) {
        if self.pen[c as usize] == 0 {
            self.pen_list.push(c);
        }
        self.pen[c as usize] += 1;
    }

    fn clear_penalties(&mut self) {
        for c in self.pen_list.drain(..) {
            self.pen[c as usize] = 0;
        }
    }

    /// Least-weight tree over the DAG; switches with `fixed` entries keep them.
    fn tree(&mut self, g: &SwitchGraph, dag: &MinimalDag) {
        self.next.fill(NO_CHANNEL);
        let Some(&root) = dag.order.first() else {
            return;
        };
        self.cost[root as usize] = 0;
        for (i, &s) in dag.order.iter().enumerate().skip(1) {
            let cands = &dag.cands[dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize];
            let f = self.fixed[s as usize];
            let mut best = (u64::MAX, u64::MAX, NO_CHANNEL);
            for &c in cands {
                if f != NO_CHANNEL && c != f {
                    continue;
                }
                let w = self.weight(c);
                let key = (
                    self.cost[g.chan_head()[c as usize] as usize].saturating_add(w),
                    w,
                    c,
                );
                if key < best {
                    best = key;
                }
            }
            self.cost[s as usize] = best.0;
            self.next[s as usize] = best.2;
        }
    }

    /// Least-weight minimal path from `s` to the DAG's root, into `self.hops`.
    fn best_path(&mut self, g: &SwitchGraph, dag: &MinimalDag, s: u32) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.fill(0);
            self.gen = 1;
        }
        let gen = self.gen;
        self.stamp[s as usize] = gen;
        self.cost[s as usize] = 0;
        self.level.clear();
        self.level.push(s);
        // The DAG's levels are the distances to the root: every predecessor of a switch is one
        // level further, so processing level by level settles each switch before it is expanded.
        while !self.level.is_empty() {
            self.next_level.clear();
            for li in 0..self.level.len() {
                let u = self.level[li];
                let i = self.pos[u as usize] as usize;
                if i == 0 {
                    continue;
                }
                let cu = self.cost[u as usize];
                for &c in &dag.cands[dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize] {
                    let v = g.chan_head()[c as usize] as usize;
                    let nc = cu.saturating_add(self.weight(c));
                    if self.stamp[v] != gen {
                        self.stamp[v] = gen;
                        self.cost[v] = nc;
                        self.pred[v] = c;
                        self.next_level.push(v as u32);
                    } else if nc < self.cost[v] {
                        self.cost[v] = nc;
                        self.pred[v] = c;
                    }
                }
            }
            std::mem::swap(&mut self.level, &mut self.next_level);
        }
        self.hops.clear();
        let mut at = dag.to;
        while at != s {
            let c = self.pred[at as usize];
            self.hops.push(Hop::new(g.chan_tail()[c as usize], c));
            at = g.chan_tail()[c as usize];
        }
        self.hops.reverse();
    }

    /// Adds the routes of the tree in `next` (every switch's CAs send one route) to the loads.
    fn add_tree_load(&mut self, g: &SwitchGraph, order: &[u32], base: bool) {
        for &s in order {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in order.iter().rev() {
            let c = self.next[s as usize];
            if c != NO_CHANNEL {
                let f = self.flow[s as usize];
                self.load[c as usize] += f;
                if base {
                    self.load0[c as usize] += f;
                }
                self.flow[g.chan_head()[c as usize] as usize] += f;
            }
        }
    }
}

/// [`route`] with precomputed switch distances.
pub fn route_with_distances(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    opts: &MultipathOptions,
) -> Result<(Routing, MultipathStats), LidError> {
    let mut router = Router::new(g, dist, opts);
    // Ports in SSSP's order of their base LIDs; all LIDs of a port are consecutive in `g.dests()`.
    let order: Vec<u32> = routing_order(g)
        .into_iter()
        .filter(|&i| g.dests()[i as usize].lid_offset == 0)
        .collect();
    for di in order {
        router.route_port(di as usize)?;
    }
    Ok(router.finish())
}

/// The alternatives selected for one port: every path, weighted by the CAs behind its source,
/// with its source switch and its rank among that source's alternatives.
struct Selection {
    paths: PathSet,
    source: Vec<u32>,
    rank: Vec<u8>,
}

impl Selection {
    fn clear(&mut self) {
        self.paths.clear();
        self.source.clear();
        self.rank.clear();
    }

    /// The paths `kept` names, and their LID offsets `lids` with the configuration holding most
    /// of the best paths moved to offset 0: traffic that ignores LMC then takes the balanced
    /// rank-0 routes where it can.
    fn realise(
        &self,
        kept: &[usize],
        mut lids: LidAssignment,
    ) -> Result<(PathSet, LidAssignment), LidError> {
        let mut kept_paths = PathSet::new();
        for &p in kept {
            kept_paths.push_weighted(self.paths.path(p), self.paths.weight(p))?;
        }
        let mut best_weight = vec![0u64; lids.num_lids as usize];
        for (i, &p) in kept.iter().enumerate() {
            if self.rank[p] == 0 {
                best_weight[lids.lid[i] as usize] += u64::from(self.paths.weight(p));
            }
        }
        let top = (0..best_weight.len())
            .max_by_key(|&c| (best_weight[c], std::cmp::Reverse(c)))
            .unwrap_or(0) as u32;
        for l in &mut lids.lid {
            if *l == top {
                *l = 0;
            } else if *l == 0 {
                *l = top;
            }
        }
        Ok((kept_paths, lids))
    }

    /// The kept paths of a port with their LIDs, sources and ranks, for the stats.
    fn detail(&self, kept: &[usize], paths: PathSet, lids: LidAssignment) -> PortPaths {
        PortPaths {
            paths,
            lids,
            source: kept.iter().map(|&p| self.source[p]).collect(),
            rank: kept.iter().map(|&p| self.rank[p]).collect(),
        }
    }
}

/// What [`route_with_distances`] carries from port to port: the scratch with the channel loads,
/// the minimal DAG towards the current port's switch, the forwarding written so far, the stats.
struct Router<'a> {
    g: &'a SwitchGraph,
    dist: &'a SwitchDistances,
    opts: &'a MultipathOptions,
    sc: Scratch,
    dag: MinimalDag,
    counts: Vec<u32>,
    /// Output port and hop count of every (LID, switch), destination-major.
    rows_port: Vec<u8>,
    rows_hops: Vec<u8>,
    /// The current port's alternatives.
    sel: Selection,
    stats: MultipathStats,
}

impl<'a> Router<'a> {
    fn new(g: &'a SwitchGraph, dist: &'a SwitchDistances, opts: &'a MultipathOptions) -> Self {
        let ns = g.num_switches();
        let rows = (usize::from(g.max_lid()) + 1) * ns;
        Router {
            g,
            dist,
            opts,
            sc: Scratch::new(ns, g.num_channels()),
            dag: MinimalDag {
                to: NO_SWITCH,
                ..Default::default()
            },
            counts: Vec::new(),
            rows_port: vec![NO_PATH; rows],
            rows_hops: vec![NO_PATH; rows],
            sel: Selection {
                paths: PathSet::new(),
                source: Vec::new(),
                rank: Vec::new(),
            },
            stats: MultipathStats::default(),
        }
    }

    /// Routes every LID of the port whose base LID is `g.dests()[di]`.
    fn route_port(&mut self, di: usize) -> Result<(), LidError> {
        let g = self.g;
        let d0 = g.dests()[di];
        let k = g.dests()[di..]
            .iter()
            .take_while(|d| d.endpoint == d0.endpoint && d.switch == d0.switch)
            .count();
        self.enter_dag(d0.switch);
        // Rank 0: the port's balanced SSSP tree, its base LID's routes unless color/L decides
        // otherwise.
        let bias = if self.opts.balance_base {
            k as u64 - 1
        } else {
            0
        };
        self.tree(bias);
        if k > 1 {
            self.route_lids(di, k, bias)
        } else {
            self.write_lid(&d0);
            self.sc
                .add_tree_load(g, &self.dag.order, d0.lid_offset == 0);
            Ok(())
        }
    }

    /// Makes `dag` the minimal DAG towards switch `t` (consecutive ports on one switch share it).
    fn enter_dag(&mut self, t: u32) {
        if self.dag.to == t {
            return;
        }
        for &s in &self.dag.order {
            self.sc.pos[s as usize] = NOT_IN_DAG;
        }
        self.dag.build(self.g, t, self.dist.to(t), &mut self.counts);
        for (i, &s) in self.dag.order.iter().enumerate() {
            self.sc.pos[s as usize] = i as u32;
        }
    }

    /// The least-weight tree over the DAG into `sc.next`, base loads weighted by `bias`.
    fn tree(&mut self, bias: u64) {
        self.sc.base_bias = bias;
        self.sc.tree(self.g, &self.dag);
        self.sc.base_bias = 0;
    }

    /// The `k` > 1 LIDs of the port at `di` ([module docs](self), steps 1 to 4), from its rank-0
    /// tree in `sc.next`.
    fn route_lids(&mut self, di: usize, k: usize, bias: u64) -> Result<(), LidError> {
        let d0 = self.g.dests()[di];
        let sources = self.select_paths(k)?;
        let budget = self
            .opts
            .max_lids
            .map_or(k as u32, |m| m.clamp(1, k as u32));
        let Packed { kept, lids, needed } =
            pack(&self.sel.paths, &self.sel.rank, budget, self.opts.heuristic)?;
        let (kept_paths, lids) = self.sel.realise(&kept, lids)?;
        let used = lids.num_lids.max(1);
        self.forward(di, k, used, &kept_paths, &lids, bias);
        let detail = self
            .opts
            .keep_paths
            .then(|| self.sel.detail(&kept, kept_paths, lids));
        self.stats.ports.push(PortStats {
            endpoint: d0.endpoint,
            base_lid: d0.lid,
            lids: k as u32,
            budget,
            sources,
            paths: self.sel.paths.len() as u32,
            needed,
            used,
            dropped: (self.sel.paths.len() - kept.len()) as u32,
            detail,
        });
        Ok(())
    }

    /// Step 1: up to `k` alternatives from every source switch with CAs into `sel`, the first
    /// its path in the rank-0 tree in `sc.next`. Returns the number of sources.
    fn select_paths(&mut self, k: usize) -> Result<u32, LidError> {
        self.sel.clear();
        let tree0 = self.sc.next.clone();
        let mut sources = 0u32;
        for i in 1..self.dag.order.len() {
            let s = self.dag.order[i];
            let tc = self.g.terminal_count()[s as usize];
            if tc == 0 {
                continue;
            }
            sources += 1;
            self.alternatives(s, tc, k, &tree0)?;
        }
        for (c, add) in self.sc.prov.drain(..) {
            self.sc.load[c as usize] -= add;
        }
        Ok(sources)
    }

    /// The alternatives of source switch `s` (`tc` CAs): its path in `tree0`, then least-weight
    /// paths avoiding the channels of its earlier ones, until `k` or a repeat; all charged to the
    /// loads provisionally, so that the port's next sources spread out too.
    fn alternatives(&mut self, s: u32, tc: u32, k: usize, tree0: &[u32]) -> Result<(), LidError> {
        let g = self.g;
        let (sc, sel) = (&mut self.sc, &mut self.sel);
        sc.hops.clear();
        let mut at = s;
        while at != self.dag.to {
            let c = tree0[at as usize];
            sc.hops.push(Hop::new(at, c));
            at = g.chan_head()[c as usize];
        }
        let first = sel.paths.len();
        loop {
            let hops = std::mem::take(&mut sc.hops);
            for h in &hops {
                sc.penalize(h.out);
            }
            sel.paths.push_weighted(&hops, tc)?;
            sel.source.push(s);
            sel.rank.push((sel.paths.len() - 1 - first) as u8);
            sc.hops = hops;
            if sel.paths.len() - first == k {
                break;
            }
            sc.best_path(g, &self.dag, s);
            if (first..sel.paths.len()).any(|p| sel.paths.path(p) == sc.hops.as_slice()) {
                break;
            }
        }
        sc.clear_penalties();
        for p in first..sel.paths.len() {
            for h in sel.paths.path(p) {
                let add = u64::from(tc);
                sc.load[h.out as usize] += add;
                sc.prov.push((h.out, add));
            }
        }
        Ok(())
    }

    /// Step 4: LID offset `o` of the port at `di` realises configuration `o mod used` of `lids`:
    /// switches on its kept paths forward along them, the others by the least-weight tree; each
    /// LID's routes are then charged to the loads and penalised for the port's later LIDs.
    fn forward(
        &mut self,
        di: usize,
        k: usize,
        used: u32,
        kept: &PathSet,
        lids: &LidAssignment,
        bias: u64,
    ) {
        let g = self.g;
        for o in 0..k {
            let conf = o as u32 % used;
            self.sc.fixed.fill(NO_CHANNEL);
            for (p, &l) in lids.lid.iter().enumerate() {
                if l == conf {
                    for h in kept.path(p) {
                        self.sc.fixed[h.node as usize] = h.out;
                    }
                }
            }
            self.tree(if o == 0 { bias } else { 0 });
            self.write_lid(&g.dests()[di + o]);
            self.sc.add_tree_load(g, &self.dag.order, o == 0);
            for &s in self.dag.order.iter().skip(1) {
                let c = self.sc.next[s as usize];
                if c != NO_CHANNEL {
                    self.sc.penalize(c);
                }
            }
        }
        self.sc.fixed.fill(NO_CHANNEL);
        self.sc.clear_penalties();
    }

    /// LID `d`'s destination-major row of ports and hop counts from the tree in `sc.next`, as
    /// SSSP writes them.
    fn write_lid(&mut self, d: &Dest) {
        let ns = self.g.num_switches();
        let row = usize::from(d.lid) * ns..(usize::from(d.lid) + 1) * ns;
        crate::balance::fill_row(
            self.g,
            d,
            &self.sc.next,
            self.dist.to(self.dag.to),
            &mut self.rows_port[row.clone()],
            &mut self.rows_hops[row],
        );
    }

    /// The routing from the rows written, and the stats.
    fn finish(self) -> (Routing, MultipathStats) {
        let (g, ns) = (self.g, self.g.num_switches());
        let mut lft = Lft::new(ns, g.max_lid());
        let mut hops = SwitchLidTable::new(ns, g.max_lid(), NO_PATH);
        crate::routing::transpose_dest_major(&self.rows_port, ns, lft.values_mut());
        crate::routing::transpose_dest_major(&self.rows_hops, ns, hops.values_mut());
        let routing = Routing {
            lft,
            hops,
            layers: None,
            num_layers: 1,
        };
        (routing, self.stats)
    }
}

/// The result of [`pack`].
#[derive(Clone, Debug)]
pub struct Packed {
    /// Indices of the paths kept, ascending.
    pub kept: Vec<usize>,
    /// LID offset of every kept path (indexed like `kept`).
    pub lids: LidAssignment,
    /// Colours the heuristic needed before anything was dropped.
    pub needed: u32,
}

/// Colours `paths` with `h`; while more than `budget` colours are needed, drops alternatives
/// (never rank 0): first the highest-ranked ones coloured beyond the budget, and when only rank-0
/// paths are beyond it, every path of the highest rank left. The rank-0 paths must form one
/// configuration (they do when they come from one tree), so this ends within any budget >= 1.
pub fn pack(paths: &PathSet, rank: &[u8], budget: u32, h: Heuristic) -> Result<Packed, LidError> {
    let n = paths.len();
    let mut alive = vec![true; n];
    let mut needed = None;
    let mut sub = PathSet::new();
    let mut index: Vec<usize> = Vec::with_capacity(n);
    loop {
        sub.clear();
        index.clear();
        for p in (0..n).filter(|&p| alive[p]) {
            sub.push_weighted(paths.path(p), paths.weight(p))?;
            index.push(p);
        }
        let sg = SplitGraph::new(&sub);
        let colour = sg.color(h);
        let k = num_colors(&colour);
        let needed = *needed.get_or_insert(k);
        if k <= budget.max(1) {
            let lids = LidAssignment::from_class_colors(&sg, &colour);
            return Ok(Packed {
                kept: index,
                lids,
                needed,
            });
        }
        let over_rank = index
            .iter()
            .enumerate()
            .filter(|&(i, &p)| colour[sg.class_of(i)] >= budget && rank[p] > 0)
            .map(|(_, &p)| rank[p])
            .max();
        let drop_rank = match over_rank {
            Some(r) => r,
            None => match index.iter().map(|&p| rank[p]).max() {
                Some(r) if r > 0 => r,
                _ => {
                    return Err(LidError::TooLarge(
                        "rank-0 paths do not form one configuration",
                    ))
                }
            },
        };
        for (i, &p) in index.iter().enumerate() {
            if rank[p] == drop_rank && (over_rank.is_none() || colour[sg.class_of(i)] >= budget) {
                alive[p] = false;
            }
        }
    }
}

#[cfg(test)]
mod tests;
