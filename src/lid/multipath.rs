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

use crate::balance::{routing_order, MinimalDag, SIBLING_PENALTY};
use crate::graph::SwitchDistances;
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
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
    let ns = g.num_switches();
    let nc = g.num_channels();
    let mut sc = Scratch {
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
    };
    let mut dag = MinimalDag {
        to: NO_SWITCH,
        ..Default::default()
    };
    let mut counts = Vec::new();
    let stride = usize::from(g.max_lid()) + 1;
    let mut rows_port = vec![NO_PATH; stride * ns];
    let mut rows_hops = vec![NO_PATH; stride * ns];
    let mut stats = MultipathStats::default();

    // Ports in SSSP's order of their base LIDs; all LIDs of a port are consecutive in `g.dests()`.
    let order: Vec<u32> = routing_order(g)
        .into_iter()
        .filter(|&i| g.dests()[i as usize].lid_offset == 0)
        .collect();
    let mut paths = PathSet::new();
    let mut source: Vec<u32> = Vec::new();
    let mut rank: Vec<u8> = Vec::new();
    for di in order {
        let d0 = g.dests()[di as usize];
        let k = g.dests()[di as usize..]
            .iter()
            .take_while(|d| d.endpoint == d0.endpoint && d.switch == d0.switch)
            .count();
        let t = d0.switch;
        if dag.to != t {
            for &s in &dag.order {
                sc.pos[s as usize] = NOT_IN_DAG;
            }
            dag.build(g, t, dist.to(t), &mut counts);
            for (i, &s) in dag.order.iter().enumerate() {
                sc.pos[s as usize] = i as u32;
            }
        }
        // Rank 0: the port's balanced SSSP tree, its base LID's routes unless color/L decides
        // otherwise.
        let bias = if opts.balance_base { k as u64 - 1 } else { 0 };
        sc.base_bias = bias;
        sc.tree(g, &dag);
        sc.base_bias = 0;
        let lid_confs: Vec<u32>;
        if k > 1 {
            paths.clear();
            source.clear();
            rank.clear();
            let tree0 = sc.next.clone();
            let mut sources = 0u32;
            for &s in dag.order.iter().skip(1) {
                let tc = g.terminal_count()[s as usize];
                if tc == 0 {
                    continue;
                }
                sources += 1;
                sc.hops.clear();
                let mut at = s;
                while at != t {
                    let c = tree0[at as usize];
                    sc.hops.push(Hop::new(at, c));
                    at = g.chan_head()[c as usize];
                }
                let first = paths.len();
                loop {
                    let hops = std::mem::take(&mut sc.hops);
                    for h in &hops {
                        sc.penalize(h.out);
                    }
                    paths.push_weighted(&hops, tc)?;
                    source.push(s);
                    rank.push((paths.len() - 1 - first) as u8);
                    sc.hops = hops;
                    if paths.len() - first == k {
                        break;
                    }
                    sc.best_path(g, &dag, s);
                    if (first..paths.len()).any(|p| paths.path(p) == sc.hops.as_slice()) {
                        break;
                    }
                }
                sc.clear_penalties();
                // Provisional load, so that the next sources of this port spread out too.
                for p in first..paths.len() {
                    for h in paths.path(p) {
                        let add = u64::from(tc);
                        sc.load[h.out as usize] += add;
                        sc.prov.push((h.out, add));
                    }
                }
            }
            for (c, add) in sc.prov.drain(..) {
                sc.load[c as usize] -= add;
            }
            let budget = opts.max_lids.map_or(k as u32, |m| m.clamp(1, k as u32));
            let packed = pack(&paths, &rank, budget, opts.heuristic)?;
            let dropped = (paths.len() - packed.kept.len()) as u32;
            let needed = packed.needed;
            let mut kept_paths = PathSet::new();
            for &p in &packed.kept {
                kept_paths.push_weighted(paths.path(p), paths.weight(p))?;
            }
            let mut lids = packed.lids;
            // The configuration holding most of the best paths becomes the base LID: traffic
            // that ignores LMC then takes the balanced rank-0 routes where it can.
            let mut best_weight = vec![0u64; lids.num_lids as usize];
            for (i, &p) in packed.kept.iter().enumerate() {
                if rank[p] == 0 {
                    best_weight[lids.lid[i] as usize] += u64::from(paths.weight(p));
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
            let used = lids.num_lids.max(1);
            lid_confs = (0..k as u32).map(|o| o % used).collect();
            // Forwarding entries per LID, from the kept paths of its configuration.
            let mut st = PortStats {
                endpoint: d0.endpoint,
                base_lid: d0.lid,
                lids: k as u32,
                budget,
                sources,
                paths: paths.len() as u32,
                needed,
                used,
                dropped,
                detail: None,
            };
            for (o, &conf) in lid_confs.iter().enumerate() {
                sc.fixed.fill(NO_CHANNEL);
                for (p, &l) in lids.lid.iter().enumerate() {
                    if l == conf {
                        for h in kept_paths.path(p) {
                            sc.fixed[h.node as usize] = h.out;
                        }
                    }
                }
                sc.base_bias = if o == 0 { bias } else { 0 };
                sc.tree(g, &dag);
                sc.base_bias = 0;
                write_lid(
                    g,
                    &g.dests()[di as usize + o],
                    &sc.next,
                    dist.to(t),
                    ns,
                    &mut rows_port,
                    &mut rows_hops,
                );
                sc.add_tree_load(g, &dag.order, o == 0);
                for &s in dag.order.iter().skip(1) {
                    let c = sc.next[s as usize];
                    if c != NO_CHANNEL {
                        sc.penalize(c);
                    }
                }
            }
            sc.fixed.fill(NO_CHANNEL);
            sc.clear_penalties();
            if opts.keep_paths {
                st.detail = Some(PortPaths {
                    paths: kept_paths,
                    lids,
                    source: packed.kept.iter().map(|&p| source[p]).collect(),
                    rank: packed.kept.iter().map(|&p| rank[p]).collect(),
                });
            }
            stats.ports.push(st);
        } else {
            write_lid(
                g,
                &d0,
                &sc.next,
                dist.to(t),
                ns,
                &mut rows_port,
                &mut rows_hops,
            );
            sc.add_tree_load(g, &dag.order, d0.lid_offset == 0);
        }
    }

    let mut lft = Lft::new(ns, g.max_lid());
    let mut hops = SwitchLidTable::new(ns, g.max_lid(), NO_PATH);
    for (s, (lft_row, hop_row)) in lft.tables_mut().zip(hops.rows_mut()).enumerate() {
        for lid in 0..stride {
            lft_row[lid] = rows_port[lid * ns + s];
            hop_row[lid] = rows_hops[lid * ns + s];
        }
    }
    Ok((
        Routing {
            lft,
            hops,
            layers: None,
            num_layers: 1,
        },
        stats,
    ))
}

/// One LID's destination-major row of ports and hop counts, as SSSP writes them.
fn write_lid(
    g: &SwitchGraph,
    d: &crate::graph::Dest,
    next: &[u32],
    to: &[u16],
    ns: usize,
    rows_port: &mut [u8],
    rows_hops: &mut [u8],
) {
    let row = usize::from(d.lid) * ns..(usize::from(d.lid) + 1) * ns;
    crate::balance::fill_row(
        g,
        d,
        next,
        to,
        &mut rows_port[row.clone()],
        &mut rows_hops[row],
    );
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
mod tests {
    use super::*;
    use crate::fabric::Fabric;
    use crate::routing::walk;
    use crate::topo::by_name;

    fn fabric(spec: &str) -> Fabric {
        by_name(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
    }

    fn run(spec: &str, opts: &MultipathOptions) -> (SwitchGraph, Routing, MultipathStats) {
        let g = SwitchGraph::new(&fabric(spec)).unwrap();
        let (r, st) = route(&g, opts).unwrap();
        (g, r, st)
    }

    fn keep() -> MultipathOptions {
        MultipathOptions {
            keep_paths: true,
            ..Default::default()
        }
    }

    /// Every LID delivered from every switch by a minimal path, hop counts right; and the
    /// independent verifier agrees (complete, one layer).
    fn assert_complete_minimal(g: &SwitchGraph, r: &Routing) {
        let dist = SwitchDistances::new(g);
        for d in g.dests() {
            for s in 0..g.num_switches() as u32 {
                match walk(g, &r.lft, s, d.lid, |_| {}) {
                    Ok(hops) => {
                        assert_eq!(
                            hops,
                            u32::from(dist.get(s, d.switch)),
                            "switch {s} LID {}",
                            d.lid
                        );
                        let h = hops + u32::from(d.exit_port != 0);
                        assert_eq!(
                            u32::from(r.hops.get(s, d.lid)),
                            h,
                            "hops of {s} to {}",
                            d.lid
                        );
                    }
                    end => panic!("switch {s} LID {}: {end:?}", d.lid),
                }
            }
        }
        let rep = crate::verify::verify(g, r);
        match rep {
            Ok(v) => assert_eq!(v.unreachable, 0),
            // Plain multipath is not deadlock-free on tori; completeness is what counts here.
            Err(crate::verify::VerifyError::CreditLoop { .. }) => {}
            Err(e) => panic!("verify: {e:?}"),
        }
    }

    /// The channel sequence a walk from `s` to `lid` takes.
    fn route_of(g: &SwitchGraph, r: &Routing, s: u32, lid: u16) -> Vec<u32> {
        let mut v = Vec::new();
        let _ = walk(g, &r.lft, s, lid, |c| v.push(c));
        v
    }

    /// Minimal paths from every switch to `t` (saturating).
    fn minimal_path_counts(g: &SwitchGraph, dist: &SwitchDistances, t: u32) -> Vec<u64> {
        let to = dist.to(t);
        let mut order = Vec::new();
        crate::graph::order_by_distance(to, &mut order, &mut Vec::new());
        let mut n = vec![0u64; g.num_switches()];
        n[t as usize] = 1;
        for &s in order.iter().skip(1) {
            n[s as usize] = g
                .out_channels(s)
                .filter(|&c| to[g.chan_head()[c as usize] as usize] + 1 == to[s as usize])
                .map(|c| n[g.chan_head()[c as usize] as usize])
                .fold(0u64, u64::saturating_add);
        }
        n
    }

    /// For every (source switch with CAs, port with several LIDs): how many distinct routes its
    /// LIDs take, and how many minimal paths exist. Returns (pairs, sum distinct, pairs with a
    /// choice whose LIDs all share one route).
    fn distinct_routes(g: &SwitchGraph, r: &Routing, exact_up_to_lids: bool) -> (u64, u64, u64) {
        let dist = SwitchDistances::new(g);
        let (mut pairs, mut distinct_sum, mut collapsed) = (0, 0, 0);
        let mut i = 0;
        while i < g.dests().len() {
            let d0 = g.dests()[i];
            let k = g.dests()[i..]
                .iter()
                .take_while(|d| d.endpoint == d0.endpoint)
                .count();
            i += k;
            if k < 2 || d0.switch == NO_SWITCH {
                continue;
            }
            let npaths = minimal_path_counts(g, &dist, d0.switch);
            for s in 0..g.num_switches() as u32 {
                if s == d0.switch || g.terminal_count()[s as usize] == 0 {
                    continue;
                }
                let mut routes: Vec<Vec<u32>> = (0..k as u16)
                    .map(|o| route_of(g, r, s, d0.lid + o))
                    .collect();
                routes.sort();
                routes.dedup();
                let want = npaths[s as usize].min(k as u64);
                pairs += 1;
                distinct_sum += routes.len() as u64;
                if want >= 2 && routes.len() < 2 {
                    collapsed += 1;
                }
                if exact_up_to_lids {
                    assert_eq!(routes.len() as u64, want, "switch {s} to LID {}", d0.lid);
                }
            }
        }
        (pairs, distinct_sum, collapsed)
    }

    /// The kept paths are valid configurations (the lid module's own check), and each path is
    /// exactly the route its LID takes from its source.
    fn assert_paths_realised(g: &SwitchGraph, r: &Routing, st: &MultipathStats) {
        for p in &st.ports {
            let d = p.detail.as_ref().expect("keep_paths");
            d.lids
                .validate(&d.paths)
                .unwrap_or_else(|e| panic!("LID {}: {e}", p.base_lid));
            assert!(d.lids.num_lids <= p.budget && d.lids.num_lids == p.used);
            for (i, &s) in d.source.iter().enumerate() {
                let lid = p.base_lid + d.lids.lid[i] as u16;
                let chans: Vec<u32> = d.paths.path(i).iter().map(|h| h.out).collect();
                assert_eq!(
                    route_of(g, r, s, lid),
                    chans,
                    "path {i} of LID {}",
                    p.base_lid
                );
            }
        }
    }

    #[test]
    fn fat_tree_lmc2_uses_four_spines_per_source() {
        // 8 leaves x 4 CAs, 4 spines: every leaf reaches every other leaf over 4 spines.
        let (g, r, st) = run("fattree2:8,lmc=2", &keep());
        assert_complete_minimal(&g, &r);
        assert_paths_realised(&g, &r, &st);
        assert!(!st.ports.is_empty());
        assert_eq!(st.merged_ports(), 0);
        // Paths through different spines split only at the source: 4 LIDs suffice.
        assert!(
            st.ports.iter().all(|p| p.needed == 4 && p.used == 4),
            "{:?}",
            st.log_lines()
        );
        let (pairs, sum, collapsed) = distinct_routes(&g, &r, true);
        assert_eq!((sum, collapsed), (pairs * 4, 0));
    }

    #[test]
    fn fat_tree_lmc1_and_mesh_lmc1() {
        for spec in ["fattree2:8,lmc=1", "mesh:3x3,2,lmc=1", "mesh:4x3,1,lmc=2"] {
            let (g, r, st) = run(spec, &keep());
            assert_complete_minimal(&g, &r);
            assert_paths_realised(&g, &r, &st);
            let (pairs, sum, collapsed) = distinct_routes(&g, &r, false);
            eprintln!(
                "{spec}: {pairs} (source, port) pairs, {:.2} distinct routes per pair, {} ports merged; {:?}",
                sum as f64 / pairs as f64,
                st.merged_ports(),
                st.log_lines()
            );
            // Wherever a source has a choice of minimal paths, its LIDs use at least two.
            assert_eq!(collapsed, 0, "{spec}");
        }
    }

    #[test]
    fn torus_lmc2_routes_every_lid_on_distinct_paths() {
        let (g, r, st) = run("torus:4x4,1,lmc=2", &keep());
        assert_complete_minimal(&g, &r);
        assert_paths_realised(&g, &r, &st);
        let (pairs, sum, collapsed) = distinct_routes(&g, &r, false);
        assert_eq!(collapsed, 0);
        assert!(sum > pairs, "{sum} routes over {pairs} pairs");
    }

    #[test]
    fn tiny_budget_merges_and_reports() {
        let opts = MultipathOptions {
            max_lids: Some(2),
            ..keep()
        };
        let (g, r, st) = run("fattree2:8,lmc=2", &opts);
        assert_complete_minimal(&g, &r);
        assert_paths_realised(&g, &r, &st);
        assert_eq!(st.merged_ports(), st.ports.len());
        for p in &st.ports {
            assert_eq!((p.needed, p.used, p.budget, p.lids), (4, 2, 2, 4));
            // Every source keeps its best path.
            let d = p.detail.as_ref().unwrap();
            let mut with_best: Vec<u32> = d
                .source
                .iter()
                .zip(&d.rank)
                .filter(|x| *x.1 == 0)
                .map(|x| *x.0)
                .collect();
            with_best.dedup();
            assert_eq!(with_best.len() as u32, p.sources);
            assert_eq!(p.dropped, p.paths - d.paths.len() as u32);
            assert!(p.dropped > 0);
        }
        let lines = st.log_lines().join("\n");
        assert!(lines.contains("needed more LIDs than they have"), "{lines}");
        // With a budget of 1 everything collapses to the SSSP tree, still complete.
        let (g, r, st) = run(
            "torus:3x3,2,lmc=2",
            &MultipathOptions {
                max_lids: Some(1),
                ..keep()
            },
        );
        assert_complete_minimal(&g, &r);
        assert_paths_realised(&g, &r, &st);
        assert!(st.ports.iter().all(|p| p.used == 1));
        assert!(st.merged_ports() > 0);
    }

    #[test]
    fn pack_drops_highest_ranks_first() {
        // Source 0 has alternatives via nodes 1, 2, 3 to node 9; all split at node 0.
        let mut ps = PathSet::new();
        for mid in 1..=3u32 {
            ps.push(&[Hop::new(0, mid), Hop::new(mid, 9)]).unwrap();
        }
        let rank = [0u8, 1, 2];
        let full = pack(&ps, &rank, 4, Heuristic::ColorL).unwrap();
        assert_eq!(
            (full.kept.len(), full.needed, full.lids.num_lids),
            (3, 3, 3)
        );
        let two = pack(&ps, &rank, 2, Heuristic::ColorL).unwrap();
        assert_eq!(two.kept, vec![0, 1]);
        assert_eq!(two.needed, 3);
        let one = pack(&ps, &rank, 1, Heuristic::ColorL).unwrap();
        assert_eq!(one.kept, vec![0]);
    }

    #[test]
    fn engine_routes_lmc_fabrics_with_multipath_deadlock_free() {
        use crate::engine::{self, EngineConfig, EngineKind};
        for spec in [
            "torus:3x3,2,lmc=2",
            "fattree2:8,lmc=1",
            "random:12,8,2,20,seed=3,lmc=2",
        ] {
            let f = fabric(spec);
            let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
            cfg.lanes = 4;
            let out = engine::run(&f, &cfg).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let v = out
                .verified
                .as_ref()
                .expect("dfsssp-rs verified deadlock-free");
            assert_eq!(v.unreachable, 0);
            assert!(
                out.log
                    .iter()
                    .any(|(_, l)| l.contains("multipath: LIDs needed")),
                "{spec}"
            );
            // With one lane (QoS off) too.
            cfg.qos = false;
            let out1 = engine::run(&f, &cfg).unwrap();
            assert!(out1.verified.is_some() && out1.routing.num_layers == 1);
            // Plain SSSP stays selectable.
            cfg.multipath = false;
            let plain = engine::run(&f, &cfg).unwrap();
            assert!(!plain.log.iter().any(|(_, l)| l.contains("multipath")));
        }
    }
}
