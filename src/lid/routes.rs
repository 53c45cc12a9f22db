//! The routing schemes of Nienaber et al.'s evaluation (§5), machine to machine over a [`SwitchGraph`].
//!
//! Every scheme computes one path per ordered pair of machines (CA ports). A path is the sequence
//! of switch-to-switch channels from the source machine's switch to the destination machine's
//! switch; the machine links at both ends are implied. All schemes obey Up*/Down* ([`RootedUpDown`]):
//! no channel towards the root ("up") after a channel away from it ("down").
//!
//! - [`shortest_widest`]: pairs one by one; among the shortest legal paths the one of least weight,
//!   where a channel's weight is 1 + the paths already on it.
//! - [`path_selection`]: up to k shortest loopless legal paths per switch pair as candidates for
//!   every machine pair, then most-loaded-link-first removal until one path per pair is left.
//! - [`fully_explicit`]: one destination tree per machine (one LID suffices), balanced across
//!   destinations.
//! - [`destination_renaming`]: shortest legal paths, each realised on the first existing LID of the
//!   destination it fits, a new LID otherwise.
//!
//! Where the paper leaves a detail open, the choice made here is stated at the function.

use std::collections::HashMap;

use rand::Rng;

use super::assign::{Hop, PathSet};
use super::LidError;
use crate::graph::{SwitchGraph, NO_CHANNEL};

/// No route: the diagonal of the route matrix, or a switch without sources.
const NO_ROUTE: u32 = u32::MAX;
/// No unit yet for a pair.
const NO_UNIT: u32 = u32::MAX;

/// Machines (traffic endpoints) of a switch graph: machine `i` is `g.terminals()[i]`.
#[derive(Clone, Debug)]
pub struct Machines {
    /// Switch each machine hangs off.
    pub switch: Vec<u32>,
    /// Port by which that switch delivers to the machine.
    pub port: Vec<u8>,
}

impl Machines {
    pub fn new(g: &SwitchGraph) -> Self {
        let mut exit = HashMap::new();
        for d in g.dests() {
            if d.lid_offset == 0 {
                exit.insert(d.endpoint, d.exit_port);
            }
        }
        let switch = g.terminals().iter().map(|&(_, s)| s).collect();
        let port = g
            .terminals()
            .iter()
            .map(|&(e, _)| exit.get(&e).copied().unwrap_or(0))
            .collect();
        Machines { switch, port }
    }

    pub fn len(&self) -> usize {
        self.switch.len()
    }

    pub fn is_empty(&self) -> bool {
        self.switch.is_empty()
    }
}

/// Up*/Down* orientation (Autonet) from one given root, as the study's schemes use it: the
/// engine's [`crate::updown::UpDown`] (levels are BFS distances from the root; a channel is *up*
/// when it leads to a lower `(level, switch id)` rank), with the direction of every channel
/// cached for the path searches' inner loops, and refused unless every switch reaches the root.
#[derive(Clone, Debug)]
pub struct RootedUpDown {
    pub root: u32,
    pub level: Vec<u32>,
    /// Per channel.
    pub up: Vec<bool>,
}

impl RootedUpDown {
    pub fn new(g: &SwitchGraph, root: u32) -> Result<Self, LidError> {
        let n = g.num_switches();
        if root as usize >= n {
            return Err(LidError::InvalidConfig(format!(
                "Up*/Down* root {root} is not a switch"
            )));
        }
        let o = crate::updown::UpDown::with_roots(g, &[root]);
        // Components without the root get roots of their own, the lowest switch id first.
        if let Some(&s) = o.roots.get(1) {
            return Err(LidError::Fabric(format!(
                "switch {s} is not connected to the Up*/Down* root {root}"
            )));
        }
        let up = (0..g.num_channels() as u32)
            .map(|c| o.is_up(g, c))
            .collect();
        Ok(RootedUpDown {
            root,
            level: o.level,
            up,
        })
    }

    /// True when the channel sequence is a connected path that obeys Up*/Down*.
    pub fn is_legal(&self, g: &SwitchGraph, chans: &[u32]) -> bool {
        let mut down = false;
        for (i, &c) in chans.iter().enumerate() {
            if i > 0 && g.chan_tail()[c as usize] != g.chan_head()[chans[i - 1] as usize] {
                return false;
            }
            if self.up[c as usize] && down {
                return false;
            }
            down |= !self.up[c as usize];
        }
        true
    }
}

/// How [`shortest_widest`] ranks shortest legal paths by channel weight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathMetric {
    /// Least sum of weights along the path.
    #[default]
    Sum,
    /// Least largest weight on the path ("widest"); ties to the path found first.
    Bottleneck,
}

/// Legal-path states: `2*switch + phase`, phase 0 = only up channels so far, 1 = gone down.
#[inline]
fn next_state(ud: &RootedUpDown, g: &SwitchGraph, state: u32, c: u32) -> Option<u32> {
    let phase = state & 1;
    let up = ud.up[c as usize];
    if up && phase == 1 {
        return None;
    }
    Some(2 * g.chan_head()[c as usize] + u32::from(!up || phase == 1))
}

/// The shortest legal paths from one switch as a layered DAG over states: BFS distances and the
/// edges that advance one layer, in BFS order of their tail.
struct Dag {
    src_state: u32,
    dist: Vec<u32>,
    /// BFS position of every state (u32::MAX if unreachable).
    pos: Vec<u32>,
    /// (from state, to state, channel)
    edges: Vec<(u32, u32, u32)>,
}

impl Dag {
    fn new(g: &SwitchGraph, ud: &RootedUpDown, src: u32) -> Self {
        let ns = 2 * g.num_switches();
        let mut dist = vec![u32::MAX; ns];
        let mut order = Vec::with_capacity(ns);
        dist[2 * src as usize] = 0;
        order.push(2 * src);
        let mut i = 0;
        let mut edges = Vec::new();
        while i < order.len() {
            let u = order[i];
            i += 1;
            for c in g.out_channels(u / 2) {
                let Some(v) = next_state(ud, g, u, c) else {
                    continue;
                };
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    order.push(v);
                }
                if dist[v as usize] == dist[u as usize] + 1 {
                    edges.push((u, v, c));
                }
            }
        }
        let mut pos = vec![u32::MAX; ns];
        for (i, &st) in order.iter().enumerate() {
            pos[st as usize] = i as u32;
        }
        Dag {
            src_state: 2 * src,
            dist,
            pos,
            edges,
        }
    }

    /// Legal hop distance to switch `b`.
    fn hops_to(&self, b: u32) -> u32 {
        self.dist[2 * b as usize].min(self.dist[2 * b as usize + 1])
    }

    /// Least-weight shortest legal path to `b`; appends its channels to `out`. False when `b` is
    /// unreachable. Ties go to the channel found first (lowest channel id in BFS order), so
    /// results are deterministic.
    fn best_path(
        &self,
        b: u32,
        weight: &[u64],
        metric: PathMetric,
        scratch: &mut DagScratch,
        out: &mut Vec<u32>,
    ) -> bool {
        let h = self.hops_to(b);
        if h == u32::MAX {
            return false;
        }
        let DagScratch {
            best,
            pred,
            touched,
        } = scratch;
        for &s in touched.iter() {
            best[s as usize] = u64::MAX;
        }
        touched.clear();
        let src = self.src_state;
        if h == 0 {
            return true;
        }
        best[src as usize] = 0;
        touched.push(src);
        for &(u, v, c) in &self.edges {
            if self.dist[u as usize] >= h {
                break;
            }
            let bu = best[u as usize];
            if bu == u64::MAX {
                continue;
            }
            let w = match metric {
                PathMetric::Sum => bu + weight[c as usize],
                PathMetric::Bottleneck => bu.max(weight[c as usize]),
            };
            if best[v as usize] == u64::MAX {
                touched.push(v);
            }
            if w < best[v as usize] {
                best[v as usize] = w;
                pred[v as usize] = (u, c);
            }
        }
        let (e0, e1) = (2 * b, 2 * b + 1);
        let end = match (self.dist[e0 as usize] == h, self.dist[e1 as usize] == h) {
            (true, true) if best[e1 as usize] < best[e0 as usize] => e1,
            (true, _) => e0,
            _ => e1,
        };
        if best[end as usize] == u64::MAX {
            return false;
        }
        let start = out.len();
        let mut s = end;
        while self.dist[s as usize] > 0 {
            let (t, c) = pred[s as usize];
            out.push(c);
            s = t;
        }
        out[start..].reverse();
        true
    }
}

impl Dag {
    /// A shortest legal path to `b` drawn uniformly at random among all of them (count the paths
    /// from every state backwards, then walk forwards choosing successors in proportion).
    fn random_path<R: Rng>(
        &self,
        b: u32,
        rng: &mut R,
        count: &mut Vec<f64>,
        out: &mut Vec<u32>,
    ) -> bool {
        let h = self.hops_to(b);
        if h == u32::MAX {
            return false;
        }
        if h == 0 {
            return true;
        }
        count.clear();
        count.resize(self.dist.len(), 0.0);
        for e in [2 * b, 2 * b + 1] {
            if self.dist[e as usize] == h {
                count[e as usize] = 1.0;
            }
        }
        // Edges are in BFS order of their tails, so backwards every head is final before its tail.
        for &(u, v, _) in self.edges.iter().rev() {
            if self.dist[u as usize] < h {
                count[u as usize] += count[v as usize];
            }
        }
        let mut u = self.src_state;
        while self.dist[u as usize] < h {
            let lo = self
                .edges
                .partition_point(|e| self.order_pos(e.0) < self.order_pos(u));
            let succ = self.edges[lo..].iter().take_while(|e| e.0 == u);
            let mut x = rng.gen::<f64>() * count[u as usize];
            let mut pick = None;
            for &(_, v, c) in succ {
                if count[v as usize] > 0.0 {
                    pick = Some((v, c));
                    x -= count[v as usize];
                    if x < 0.0 {
                        break;
                    }
                }
            }
            let Some((v, c)) = pick else { return false };
            out.push(c);
            u = v;
        }
        true
    }

    /// Position of a state in BFS order (edges are sorted by it).
    fn order_pos(&self, state: u32) -> u32 {
        self.pos[state as usize]
    }
}

struct DagScratch {
    best: Vec<u64>,
    /// (predecessor state, channel) on the best path
    pred: Vec<(u32, u32)>,
    touched: Vec<u32>,
}

impl DagScratch {
    fn new(g: &SwitchGraph) -> Self {
        let ns = 2 * g.num_switches();
        DagScratch {
            best: vec![u64::MAX; ns],
            pred: vec![(u32::MAX, NO_CHANNEL); ns],
            touched: Vec::new(),
        }
    }
}

/// One path per ordered machine pair, stored as interned routes (channel sequences).
#[derive(Clone, Debug)]
pub struct MachineRouting {
    pub machines: usize,
    /// `route[s * machines + d]`: route id of the pair; [`NO_ROUTE`] on the diagonal.
    pub route: Vec<u32>,
    route_start: Vec<u32>,
    route_chans: Vec<u32>,
    index: HashMap<Vec<u32>, u32>,
    /// Configurations (LIDs before LMC rounding) per destination machine, for schemes that assign
    /// LIDs while routing (destination renaming, fully explicit); `None` for pure routings.
    pub scheme_lids: Option<Vec<u32>>,
    /// The LID offset of every pair (indexed like `route`) for those schemes.
    pub pair_lid: Option<Vec<u8>>,
}

/// Maximum link load under uniform all-to-all traffic, every machine sending 1 in total (Nienaber et al.
/// §5.2): the number of pairs on the busiest link over `machines - 1`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkLoad {
    /// Busiest direction of any link (machine links carry exactly 1 each way).
    pub directed: f64,
    /// Busiest link counting both directions together.
    pub bidirectional: f64,
}

impl MachineRouting {
    fn new(machines: usize) -> Self {
        let mut r = MachineRouting {
            machines,
            route: vec![NO_ROUTE; machines * machines],
            route_start: vec![0],
            route_chans: Vec::new(),
            index: HashMap::new(),
            scheme_lids: None,
            pair_lid: None,
        };
        r.intern(&[]); // route 0: both machines on one switch
        r
    }

    fn intern(&mut self, chans: &[u32]) -> u32 {
        if let Some(&id) = self.index.get(chans) {
            return id;
        }
        let id = (self.route_start.len() - 1) as u32;
        self.route_chans.extend_from_slice(chans);
        self.route_start.push(self.route_chans.len() as u32);
        self.index.insert(chans.to_vec(), id);
        id
    }

    pub fn num_routes(&self) -> usize {
        self.route_start.len() - 1
    }

    pub fn route_chans(&self, r: u32) -> &[u32] {
        &self.route_chans
            [self.route_start[r as usize] as usize..self.route_start[r as usize + 1] as usize]
    }

    /// Channels of the path from machine `s` to machine `d`.
    pub fn pair_chans(&self, s: usize, d: usize) -> &[u32] {
        self.route_chans(self.route[s * self.machines + d])
    }

    /// Fills `ps` with the paths towards machine `d`, as hops (switch, out port) ending with the
    /// delivery hop to `d`; sources that share a route become one weighted path. The source
    /// machines' own first hops are left out: each is on one path only and cannot split.
    pub fn dest_paths(
        &self,
        g: &SwitchGraph,
        mach: &Machines,
        d: usize,
        ps: &mut PathSet,
        scratch: &mut Vec<u32>,
    ) {
        // Weighted paths in order of their first source machine, so that "input order" (greedy's
        // order) is source order, as when the paths were computed source-major.
        ps.clear();
        scratch.clear();
        scratch.extend(
            (0..self.machines)
                .filter(|&s| s != d)
                .map(|s| self.route[s * self.machines + d]),
        );
        let mut distinct: Vec<(u32, u32)> = Vec::new(); // (route, first position)
        let mut order: Vec<u32> = scratch.clone();
        order.sort_unstable();
        order.dedup();
        let mut count = vec![0u32; order.len()];
        for (i, &r) in scratch.iter().enumerate() {
            let k = order.binary_search(&r).expect("present");
            if count[k] == 0 {
                distinct.push((r, i as u32));
            }
            count[k] += 1;
        }
        let mut hops: Vec<Hop> = Vec::new();
        for &(r, _) in &distinct {
            hops.clear();
            hops.extend(self.route_chans(r).iter().map(|&c| {
                Hop::new(
                    g.chan_tail()[c as usize],
                    u32::from(g.chan_port()[c as usize]),
                )
            }));
            hops.push(Hop::new(mach.switch[d], u32::from(mach.port[d])));
            let w = count[order.binary_search(&r).expect("present")];
            // Routes are simple paths (see `check`), so this cannot fail.
            ps.push_weighted(&hops, w).expect("simple route");
        }
    }

    /// Pairs routed over each channel.
    pub fn channel_pairs(&self, g: &SwitchGraph) -> Vec<u64> {
        let mut per_route = vec![0u64; self.num_routes()];
        for &r in &self.route {
            if r != NO_ROUTE {
                per_route[r as usize] += 1;
            }
        }
        let mut load = vec![0u64; g.num_channels()];
        for (r, &n) in per_route.iter().enumerate() {
            for &c in self.route_chans(r as u32) {
                load[c as usize] += n;
            }
        }
        load
    }

    pub fn max_link_load(&self, g: &SwitchGraph) -> LinkLoad {
        if self.machines < 2 {
            return LinkLoad::default();
        }
        let load = self.channel_pairs(g);
        let norm = (self.machines - 1) as f64;
        let dir = load.iter().copied().max().unwrap_or(0) as f64 / norm;
        let bi = (0..load.len())
            .map(|c| load[c] + load[g.chan_reverse()[c] as usize])
            .max()
            .unwrap_or(0) as f64
            / norm;
        // Machine links carry exactly 1 in each direction (2 both ways).
        LinkLoad {
            directed: dir.max(1.0),
            bidirectional: bi.max(2.0),
        }
    }

    /// Checks the LIDs a scheme assigned while routing, independently of how it did so: for every
    /// destination, no two paths on one LID leave a switch by different ports.
    pub fn check_scheme_lids(
        &self,
        g: &SwitchGraph,
        mach: &Machines,
        scheme: &'static str,
    ) -> Result<(), LidError> {
        let (Some(lids), Some(pair_lid)) = (&self.scheme_lids, &self.pair_lid) else {
            return Ok(());
        };
        let ns = g.num_switches();
        let mut table: Vec<u8> = Vec::new();
        for d in 0..self.machines {
            let k = lids[d] as usize;
            table.clear();
            table.resize(k * ns, 0xFF);
            for s in (0..self.machines).filter(|&s| s != d) {
                let l = usize::from(pair_lid[s * self.machines + d]);
                if l >= k {
                    return Err(LidError::BadRoute {
                        scheme,
                        src: s as u32,
                        dst: d as u32,
                        why: format!("LID {l} of {k}"),
                    });
                }
                let hops = self
                    .pair_chans(s, d)
                    .iter()
                    .map(|&c| (g.chan_tail()[c as usize], g.chan_port()[c as usize]));
                for (x, port) in hops.chain(std::iter::once((mach.switch[d], mach.port[d]))) {
                    let e = &mut table[l * ns + x as usize];
                    if *e != 0xFF && *e != port {
                        return Err(LidError::BadRoute {
                            scheme,
                            src: s as u32,
                            dst: d as u32,
                            why: format!(
                                "LID offset {l} leaves switch {x} by ports {} and {port}",
                                *e
                            ),
                        });
                    }
                    *e = port;
                }
            }
        }
        Ok(())
    }

    /// Checks every pair's route: it joins the right switches, obeys Up*/Down*, visits no switch
    /// twice, and (when `minimal`) is a shortest legal path.
    pub fn check(
        &self,
        g: &SwitchGraph,
        ud: &RootedUpDown,
        mach: &Machines,
        scheme: &'static str,
        minimal: bool,
    ) -> Result<(), LidError> {
        let bad = |s: usize, d: usize, why: String| LidError::BadRoute {
            scheme,
            src: s as u32,
            dst: d as u32,
            why,
        };
        let dags: Vec<Option<Dag>> = (0..g.num_switches() as u32)
            .map(|a| minimal.then(|| Dag::new(g, ud, a)))
            .collect();
        let mut seen = vec![u32::MAX; g.num_switches()];
        for s in 0..self.machines {
            for d in 0..self.machines {
                if s == d {
                    continue;
                }
                let r = self.route[s * self.machines + d];
                if r == NO_ROUTE || r as usize >= self.num_routes() {
                    return Err(bad(s, d, "no route".into()));
                }
                let chans = self.route_chans(r);
                let (a, b) = (mach.switch[s], mach.switch[d]);
                let end = chans.last().map_or(a, |&c| g.chan_head()[c as usize]);
                if chans
                    .first()
                    .is_some_and(|&c| g.chan_tail()[c as usize] != a)
                    || end != b
                {
                    return Err(bad(s, d, format!("does not join switch {a} to switch {b}")));
                }
                if !ud.is_legal(g, chans) {
                    return Err(bad(s, d, "breaks Up*/Down*".into()));
                }
                let stamp = (s * self.machines + d) as u32;
                seen[a as usize] = stamp;
                for &c in chans {
                    let h = g.chan_head()[c as usize] as usize;
                    if seen[h] == stamp {
                        return Err(bad(s, d, format!("visits switch {h} twice")));
                    }
                    seen[h] = stamp;
                }
                if let Some(dag) = &dags[a as usize] {
                    if chans.len() as u32 != dag.hops_to(b) {
                        return Err(bad(
                            s,
                            d,
                            format!("{} hops, shortest legal is {}", chans.len(), dag.hops_to(b)),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

fn unreachable_err(scheme: &'static str, s: usize, d: usize) -> LidError {
    LidError::BadRoute {
        scheme,
        src: s as u32,
        dst: d as u32,
        why: "no legal path".into(),
    }
}

/// Up*/Down*-constrained shortest-widest routing (§5.1). Pairs are routed one by one, source-major
/// (all destinations of machine 0, then machine 1, ...). Every channel starts with weight 1 and
/// gains 1 per path placed on it; each pair takes the shortest legal path and, among those, the one
/// of least total weight (the paper's "smallest weight"; we read it as the sum along the path).
pub fn shortest_widest(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
    metric: PathMetric,
) -> Result<MachineRouting, LidError> {
    let m = mach.len();
    let mut rt = MachineRouting::new(m);
    let dags: Vec<Dag> = (0..g.num_switches() as u32)
        .map(|a| Dag::new(g, ud, a))
        .collect();
    let mut weight = vec![1u64; g.num_channels()];
    let mut scratch = DagScratch::new(g);
    let mut buf = Vec::new();
    for s in 0..m {
        let dag = &dags[mach.switch[s] as usize];
        for d in 0..m {
            if s == d {
                continue;
            }
            buf.clear();
            if !dag.best_path(mach.switch[d], &weight, metric, &mut scratch, &mut buf) {
                return Err(unreachable_err("shortest-widest", s, d));
            }
            for &c in &buf {
                weight[c as usize] += 1;
            }
            rt.route[s * m + d] = rt.intern(&buf);
        }
    }
    Ok(rt)
}

/// How [`destination_renaming`] picks each pair's shortest legal path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenamingPaths {
    /// With [`shortest_widest`]'s load-growing weights and order: the paths are then exactly the
    /// shortest-widest ones and the LIDs first-fit in computation order (= greedy in source
    /// order). Nienaber et al.'s renaming LIDs are within 1% of its shortest-widest greedy LIDs in all
    /// nine configurations, which points to this reading.
    Balanced(PathMetric),
    /// Uniformly at random among all shortest legal paths (seeded): a plain, not load-aware
    /// shortest-path routing.
    Random,
}

impl Default for RenamingPaths {
    fn default() -> Self {
        RenamingPaths::Balanced(PathMetric::Sum)
    }
}

/// Destination renaming (López, Flich, Duato [5] in Nienaber et al.), as reconstructed here from the
/// paper's description ("uses a shortest path algorithm to select paths that follow Up*/Down*
/// routing rules; it assigns LIDs as the paths are computed"). Pairs are routed one by one,
/// source-major, each on a shortest legal path chosen as `paths` says. As each path is computed it
/// gets the first LID of its destination whose forwarding entries agree with it; the destination
/// is "renamed" (gets a new LID) when none does. The LID never steers the path, unlike in the
/// paper's *separate* scheme.
pub fn destination_renaming<R: Rng>(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
    paths: RenamingPaths,
    rng: &mut R,
) -> Result<MachineRouting, LidError> {
    const FREE: u8 = 0xFF;
    let m = mach.len();
    let ns = g.num_switches();
    let mut rt = MachineRouting::new(m);
    let dags: Vec<Dag> = (0..ns as u32).map(|a| Dag::new(g, ud, a)).collect();
    let mut count = Vec::new();
    let mut weight = vec![1u64; g.num_channels()];
    let mut scratch = DagScratch::new(g);
    let mut buf = Vec::new();
    let mut pair_lid = vec![0u8; m * m];
    // tables[d][l * ns + x]: out port of LID l of machine d at switch x (FREE = no entry yet).
    let mut tables: Vec<Vec<u8>> = vec![Vec::new(); m];
    for s in 0..m {
        let dag = &dags[mach.switch[s] as usize];
        for d in 0..m {
            if s == d {
                continue;
            }
            let b = mach.switch[d];
            buf.clear();
            let found = match paths {
                RenamingPaths::Random => dag.random_path(b, rng, &mut count, &mut buf),
                RenamingPaths::Balanced(metric) => {
                    dag.best_path(b, &weight, metric, &mut scratch, &mut buf)
                }
            };
            if !found {
                return Err(unreachable_err("renaming", s, d));
            }
            for &c in &buf {
                weight[c as usize] += 1;
            }
            let t = &mut tables[d];
            let fits = |l: usize| {
                buf.iter().all(|&c| {
                    let e = t[l * ns + g.chan_tail()[c as usize] as usize];
                    e == FREE || e == g.chan_port()[c as usize]
                })
            };
            let l = match (0..t.len() / ns).find(|&l| fits(l)) {
                Some(l) => l,
                None => {
                    let l = t.len() / ns;
                    t.resize(t.len() + ns, FREE);
                    t[l * ns + b as usize] = mach.port[d];
                    l
                }
            };
            for &c in &buf {
                t[l * ns + g.chan_tail()[c as usize] as usize] = g.chan_port()[c as usize];
            }
            pair_lid[s * m + d] = u8::try_from(l).map_err(|_| LidError::TooManyLids {
                needed: l as u32 + 1,
            })?;
            rt.route[s * m + d] = rt.intern(&buf);
        }
    }
    rt.scheme_lids = Some(
        tables
            .iter()
            .map(|t| (t.len() / ns).max(1) as u32)
            .collect(),
    );
    rt.pair_lid = Some(pair_lid);
    Ok(rt)
}

/// Fully explicit routing (Sancho, Robles, Duato [9] in Nienaber et al.), as reconstructed here: every
/// destination machine gets one Up*/Down* destination tree, so one LID realises all its paths.
/// Switches from which the destination's switch is reachable going only down route down along a
/// shortest all-down path; the others go up towards the nearest such switch (fewest total hops).
/// Among equally short next hops a switch takes the channel with the fewest paths so far (paths of
/// earlier destinations), which balances the trees; destinations are routed in machine order.
pub fn fully_explicit(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
) -> Result<MachineRouting, LidError> {
    let m = mach.len();
    let ns = g.num_switches();
    let mut rt = MachineRouting::new(m);
    let mut load = vec![0u64; g.num_channels()];
    let mut by_level: Vec<u32> = (0..ns as u32).collect();
    by_level.sort_by_key(|&x| (ud.level[x as usize], x));
    let mut machines_at = vec![0u64; ns];
    for &a in &mach.switch {
        machines_at[a as usize] += 1;
    }
    let mut down = vec![u32::MAX; ns];
    let mut f = vec![u32::MAX; ns];
    let mut next = vec![NO_CHANNEL; ns];
    let mut queue = std::collections::VecDeque::new();
    let mut route_from = vec![NO_ROUTE; ns];
    let mut buf = Vec::new();
    for d in 0..m {
        let b = mach.switch[d];
        down.iter_mut().for_each(|x| *x = u32::MAX);
        down[b as usize] = 0;
        queue.push_back(b);
        while let Some(y) = queue.pop_front() {
            for &c in g.in_channels(y) {
                let x = g.chan_tail()[c as usize] as usize;
                if !ud.up[c as usize] && down[x] == u32::MAX {
                    down[x] = down[y as usize] + 1;
                    queue.push_back(x as u32);
                }
            }
        }
        // Up channels lead to switches earlier in (level, id) order, so one pass settles f.
        for &x in &by_level {
            let x = x as usize;
            f[x] = down[x];
            if f[x] == u32::MAX {
                f[x] = g
                    .out_channels(x as u32)
                    .filter(|&c| ud.up[c as usize])
                    .map(|c| f[g.chan_head()[c as usize] as usize].saturating_add(1))
                    .min()
                    .unwrap_or(u32::MAX);
            }
        }
        for x in 0..ns {
            next[x] = NO_CHANNEL;
            if x as u32 == b || f[x] == u32::MAX {
                continue;
            }
            let goes_down = down[x] != u32::MAX;
            next[x] = g
                .out_channels(x as u32)
                .filter(|&c| {
                    let h = g.chan_head()[c as usize] as usize;
                    if goes_down {
                        !ud.up[c as usize] && down[h] != u32::MAX && down[h] + 1 == down[x]
                    } else {
                        ud.up[c as usize] && f[h] != u32::MAX && f[h] + 1 == f[x]
                    }
                })
                .min_by_key(|&c| (load[c as usize], c))
                .unwrap_or(NO_CHANNEL);
        }
        route_from.iter_mut().for_each(|r| *r = NO_ROUTE);
        for a in 0..ns {
            let sources = machines_at[a] - u64::from(a as u32 == b);
            if sources == 0 {
                continue;
            }
            buf.clear();
            let mut x = a;
            while x as u32 != b {
                let c = next[x];
                if c == NO_CHANNEL || buf.len() > ns {
                    return Err(unreachable_err("fully explicit", a, d));
                }
                buf.push(c);
                load[c as usize] += sources;
                x = g.chan_head()[c as usize] as usize;
            }
            route_from[a] = rt.intern(&buf);
        }
        for s in 0..m {
            if s != d {
                rt.route[s * m + d] = route_from[mach.switch[s] as usize];
            }
        }
    }
    rt.scheme_lids = Some(vec![1; m]);
    rt.pair_lid = Some(vec![0; m * m]);
    Ok(rt)
}

/// Parameters of [`path_selection`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathSelectionConfig {
    /// Candidate paths per switch pair (the paper: 16). At most 16.
    pub k: u32,
    /// Only shortest legal paths as candidates (otherwise, as Yen's k-shortest loopless paths,
    /// longer legal paths fill up to `k`).
    pub minimal_only: bool,
    /// Budget of search steps per switch pair for enumerating candidates.
    pub max_steps_per_pair: u64,
    /// What gets one path.
    pub unit: SelectionUnit,
}

/// The granularity at which [`path_selection`] picks paths. Nienaber et al. say "one path for each pair
/// of machines" but also that candidates are computed "between each pair of nodes"; the LID counts
/// of its Table 2 (per machine roughly constant as machines grow) point to one of the coarser
/// units, see the study's notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectionUnit {
    /// Every machine pair its own path.
    MachinePair,
    /// All machine pairs between two switches share one path (weight: their number).
    SwitchPair,
    /// All machines of one switch share one path to each destination machine.
    SourceSwitchToMachine,
}

impl Default for PathSelectionConfig {
    fn default() -> Self {
        PathSelectionConfig {
            k: 16,
            minimal_only: false,
            max_steps_per_pair: 1 << 22,
            unit: SelectionUnit::SwitchPair,
        }
    }
}

/// What [`path_selection`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathSelectionStats {
    /// Mean candidates per ordered switch pair.
    pub mean_candidates: f64,
    /// Switch pairs with fewer than k candidates.
    pub short_pairs: u64,
    /// Switch pairs whose enumeration hit the step budget.
    pub budget_hits: u64,
    /// Machine-pair paths removed by most-loaded-link-first.
    pub removals: u64,
}

/// Hops from every state to switch `b` (any phase), for pruning the enumeration.
fn dist_to(g: &SwitchGraph, ud: &RootedUpDown, b: u32, rd: &mut Vec<u32>) {
    rd.clear();
    rd.resize(2 * g.num_switches(), u32::MAX);
    let mut queue = std::collections::VecDeque::new();
    for s in [2 * b, 2 * b + 1] {
        rd[s as usize] = 0;
        queue.push_back(s);
    }
    while let Some(v) = queue.pop_front() {
        let (y, ph) = (v / 2, v & 1);
        for &c in g.in_channels(y) {
            let x = g.chan_tail()[c as usize];
            let preds: &[u32] = match (ud.up[c as usize], ph) {
                (true, 0) => &[0],
                (false, 1) => &[0, 1],
                _ => &[],
            };
            for &pp in preds {
                let u = 2 * x + pp;
                if rd[u as usize] == u32::MAX {
                    rd[u as usize] = rd[v as usize] + 1;
                    queue.push_back(u);
                }
            }
        }
    }
}

struct Enum<'a, R: Rng> {
    g: &'a SwitchGraph,
    ud: &'a RootedUpDown,
    rd: &'a [u32],
    b: u32,
    len: u32,
    visited: Vec<bool>,
    stack: Vec<u32>,
    /// Paths kept at this length (reservoir when more than `room` exist).
    kept: Vec<Vec<u32>>,
    room: usize,
    seen: u64,
    steps: u64,
    max_steps: u64,
    rng: &'a mut R,
}

impl<R: Rng> Enum<'_, R> {
    fn dfs(&mut self, state: u32) {
        self.steps += 1;
        if self.steps > self.max_steps {
            return;
        }
        let x = state / 2;
        if x == self.b {
            if self.stack.len() as u32 == self.len {
                // Reservoir sampling: every path of this length is kept with equal probability.
                self.seen += 1;
                if self.kept.len() < self.room {
                    self.kept.push(self.stack.clone());
                } else {
                    let j = self.rng.gen_range(0..self.seen);
                    if (j as usize) < self.room {
                        self.kept[j as usize].clone_from(&self.stack);
                    }
                }
            }
            return;
        }
        let depth = self.stack.len() as u32;
        for c in self.g.out_channels(x) {
            let Some(v) = next_state(self.ud, self.g, state, c) else {
                continue;
            };
            let y = (v / 2) as usize;
            if self.visited[y]
                || self.rd[v as usize] == u32::MAX
                || depth + 1 + self.rd[v as usize] > self.len
            {
                continue;
            }
            self.visited[y] = true;
            self.stack.push(c);
            self.dfs(v);
            self.stack.pop();
            self.visited[y] = false;
        }
    }
}

/// Up to `k` shortest loopless legal paths from switch `a` to switch `b` (a != b), in order of
/// length: every path shorter than the k-th is included, and paths as long as the k-th are sampled
/// uniformly (seeded) to fill the rest — Yen's k-shortest set with ties at the cut broken at random.
/// Returns whether the step budget was hit.
#[allow(clippy::too_many_arguments)]
pub fn k_shortest_legal<R: Rng>(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    a: u32,
    b: u32,
    cfg: &PathSelectionConfig,
    rng: &mut R,
    rd: &mut Vec<u32>,
    out: &mut Vec<Vec<u32>>,
) -> bool {
    out.clear();
    dist_to(g, ud, b, rd);
    let h = rd[2 * a as usize];
    if h == u32::MAX || a == b {
        return false;
    }
    let max_len = if cfg.minimal_only {
        h
    } else {
        g.num_switches() as u32 - 1
    };
    let mut e = Enum {
        g,
        ud,
        rd,
        b,
        len: h,
        visited: vec![false; g.num_switches()],
        stack: Vec::new(),
        kept: Vec::new(),
        room: 0,
        seen: 0,
        steps: 0,
        max_steps: cfg.max_steps_per_pair,
        rng,
    };
    for len in h..=max_len {
        e.len = len;
        e.room = cfg.k as usize - out.len();
        e.kept.clear();
        e.seen = 0;
        e.visited[a as usize] = true;
        e.dfs(2 * a);
        e.visited[a as usize] = false;
        out.append(&mut e.kept);
        if out.len() >= cfg.k as usize || e.steps > e.max_steps {
            break;
        }
    }
    e.steps > e.max_steps
}

/// Path selection (Koibuchi, Jouraku, Amano [7] in Nienaber et al.), as reconstructed here. Candidates:
/// [`k_shortest_legal`] per ordered switch pair, shared by all machine pairs between those
/// switches. Load model: each machine pair spreads its unit of traffic evenly over its remaining
/// candidates (exact integer arithmetic, scaled by lcm(1..=k)). Most loaded link first: take the
/// channel with the largest load that still carries a removable candidate (one of a pair with two
/// or more left), remove from it the candidate of the pair with the most candidates left, update
/// the loads, and repeat until every pair has one path. Pairs on one switch use no channel.
pub fn path_selection<R: Rng>(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
    cfg: &PathSelectionConfig,
    rng: &mut R,
) -> Result<(MachineRouting, PathSelectionStats), LidError> {
    if cfg.k == 0 || cfg.k > 16 {
        return Err(LidError::InvalidConfig(format!(
            "path selection needs 1 <= k <= 16, got {}",
            cfg.k
        )));
    }
    let m = mach.len();
    let ns = g.num_switches();
    let nc = g.num_channels();
    let mut stats = PathSelectionStats::default();

    // Candidates per ordered switch pair sp = a * ns + b, only for pairs that have machines.
    let mut has_machines = vec![false; ns];
    for &a in &mach.switch {
        has_machines[a as usize] = true;
    }
    let mut cand_start = vec![0u32; ns * ns + 1];
    let mut q_start: Vec<u32> = vec![0];
    let mut q_chans: Vec<u32> = Vec::new();
    let mut rd = Vec::new();
    let mut paths = Vec::new();
    let mut pairs_enumerated = 0u64;
    for a in 0..ns as u32 {
        for b in 0..ns as u32 {
            let sp = (a as usize) * ns + b as usize;
            if a != b && has_machines[a as usize] && has_machines[b as usize] {
                stats.budget_hits +=
                    u64::from(k_shortest_legal(g, ud, a, b, cfg, rng, &mut rd, &mut paths));
                if paths.is_empty() {
                    return Err(LidError::Fabric(format!(
                        "no legal path from switch {a} to switch {b}"
                    )));
                }
                pairs_enumerated += 1;
                stats.short_pairs += u64::from(paths.len() < cfg.k as usize);
                for p in &paths {
                    q_chans.extend_from_slice(p);
                    q_start.push(q_chans.len() as u32);
                }
            }
            cand_start[sp + 1] = (q_start.len() - 1) as u32;
        }
    }
    stats.mean_candidates = (q_start.len() - 1) as f64 / pairs_enumerated.max(1) as f64;

    // Selection units (see [`SelectionUnit`]) with their traffic weight; incidences (unit,
    // candidate, hop) are laid out per unit.
    let mut machines_at = vec![0u64; ns];
    for &a in &mach.switch {
        machines_at[a as usize] += 1;
    }
    let mut units: Vec<(u32, u64)> = Vec::new(); // (switch pair, weight)
    let mut unit_of = vec![NO_UNIT; m * m];
    let mut unit_index: HashMap<u64, u32> = HashMap::new();
    for s in 0..m {
        for d in 0..m {
            let (a, b) = (mach.switch[s] as usize, mach.switch[d] as usize);
            if s == d || a == b {
                continue;
            }
            let sp = (a * ns + b) as u32;
            let (key, w) = match cfg.unit {
                SelectionUnit::MachinePair => ((s * m + d) as u64, 1),
                SelectionUnit::SwitchPair => (u64::from(sp), machines_at[a] * machines_at[b]),
                SelectionUnit::SourceSwitchToMachine => ((a * m + d) as u64, machines_at[a]),
            };
            let u = *unit_index.entry(key).or_insert_with(|| {
                units.push((sp, w));
                (units.len() - 1) as u32
            });
            unit_of[s * m + d] = u;
        }
    }
    drop(unit_index);
    let mut inc_base: Vec<u32> = vec![0];
    for &(sp, _) in &units {
        let (q0, q1) = (
            cand_start[sp as usize] as usize,
            cand_start[sp as usize + 1] as usize,
        );
        let next = u64::from(*inc_base.last().unwrap_or(&0)) + u64::from(q_start[q1] - q_start[q0]);
        if next >= u64::from(u32::MAX) {
            return Err(LidError::TooLarge("path selection incidences"));
        }
        inc_base.push(next as u32);
    }
    let np = units.len();
    let sp_of = |p: usize| -> usize { units[p].0 as usize };
    let kmax = cfg.k as usize;
    let lcm = (1..=kmax as u64).fold(1u64, |l, x| l / gcd(l, x) * x);
    let unit: Vec<u64> = (0..=kmax as u64)
        .map(|n| lcm.checked_div(n).unwrap_or(0))
        .collect();

    let mut alive: Vec<u16> = vec![0; np];
    let mut load = vec![0u64; nc];
    // Removable incidences per (channel, candidates left of their pair), with positions.
    let nb = kmax + 1;
    let mut bucket: Vec<Vec<u32>> = vec![Vec::new(); nc * nb];
    let mut pos: Vec<u32> = vec![0; *inc_base.last().unwrap_or(&0) as usize];
    let mut removable = vec![0u64; nc];

    // Iterates the incidences (inc id, channel) of candidate j of pair p.
    let qc: &[u32] = &q_chans;
    let cand_incs = |p: usize, j: usize| {
        let sp = sp_of(p);
        let q0 = cand_start[sp] as usize;
        let (h0, h1) = (q_start[q0 + j], q_start[q0 + j + 1]);
        let base = inc_base[p] + (h0 - q_start[q0]);
        (h0..h1)
            .enumerate()
            .map(move |(i, h)| (base + i as u32, qc[h as usize]))
    };
    let ncand = |p: usize| {
        let sp = sp_of(p);
        (cand_start[sp + 1] - cand_start[sp]) as usize
    };

    for p in 0..np {
        let n = ncand(p);
        let w = units[p].1;
        alive[p] = ((1u32 << n) - 1) as u16;
        for j in 0..n {
            for (inc, c) in cand_incs(p, j) {
                load[c as usize] += w * unit[n];
                if n >= 2 {
                    let bk = &mut bucket[c as usize * nb + n];
                    pos[inc as usize] = bk.len() as u32;
                    bk.push(inc);
                    removable[c as usize] += 1;
                }
            }
        }
    }

    loop {
        // The most loaded channel that still has something to remove (ties: lowest id).
        let mut best = None;
        let mut best_load = 0;
        for c in 0..nc {
            if removable[c] > 0 && (best.is_none() || load[c] > best_load) {
                best = Some(c);
                best_load = load[c];
            }
        }
        let Some(c) = best else { break };
        let n_sel = (2..=kmax)
            .rev()
            .find(|&n| !bucket[c * nb + n].is_empty())
            .expect("removable count");
        let inc = *bucket[c * nb + n_sel].last().expect("non-empty");
        let p = inc_base.partition_point(|&x| x <= inc) - 1;
        let sp = sp_of(p);
        let q0 = cand_start[sp] as usize;
        let off = q_start[q0] + (inc - inc_base[p]);
        let j = (0..ncand(p))
            .find(|&j| q_start[q0 + j] <= off && off < q_start[q0 + j + 1])
            .expect("in pair");
        let n = alive[p].count_ones() as usize;
        let w = units[p].1;
        debug_assert_eq!(n, n_sel);
        for jj in (0..ncand(p)).filter(|&jj| alive[p] >> jj & 1 == 1) {
            for (i, ch) in cand_incs(p, jj) {
                load[ch as usize] -= w * unit[n];
                let bk = &mut bucket[ch as usize * nb + n];
                let at = pos[i as usize] as usize;
                let last = bk.pop().expect("incidence in bucket");
                if last != i {
                    bk[at] = last;
                    pos[last as usize] = at as u32;
                }
                removable[ch as usize] -= 1;
            }
        }
        alive[p] &= !(1u16 << j);
        let n2 = n - 1;
        for jj in (0..ncand(p)).filter(|&jj| alive[p] >> jj & 1 == 1) {
            for (i, ch) in cand_incs(p, jj) {
                load[ch as usize] += w * unit[n2];
                if n2 >= 2 {
                    let bk = &mut bucket[ch as usize * nb + n2];
                    pos[i as usize] = bk.len() as u32;
                    bk.push(i);
                    removable[ch as usize] += 1;
                }
            }
        }
        stats.removals += 1;
    }
    drop(bucket);
    drop(pos);
    // Every unit is down to one path: the exact loads must be lcm x the traffic on each channel.
    debug_assert!({
        let mut want = vec![0u64; nc];
        for (p, &(_, w)) in units.iter().enumerate() {
            let j = alive[p].trailing_zeros() as usize;
            for (_, c) in cand_incs(p, j) {
                want[c as usize] += w * lcm;
            }
        }
        want == load
    });

    let mut rt = MachineRouting::new(m);
    for s in 0..m {
        for d in 0..m {
            if s == d {
                continue;
            }
            let u = unit_of[s * m + d];
            rt.route[s * m + d] = if u == NO_UNIT {
                0 // both machines on one switch
            } else {
                let u = u as usize;
                let q = cand_start[sp_of(u)] as usize + alive[u].trailing_zeros() as usize;
                let chans = &q_chans[q_start[q] as usize..q_start[q + 1] as usize];
                rt.intern(chans)
            };
        }
    }
    Ok((rt, stats))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::super::assign::{assign, Heuristic};
    use super::*;
    use crate::fabric::{FabricBuilder, NodeKind, PortRef};
    use crate::topo::random_irregular;

    struct Net {
        g: SwitchGraph,
        mach: Machines,
        ud: RootedUpDown,
    }

    fn net(machines: u32, switches: u32, degree: u32, seed: u64) -> Net {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let f = random_irregular(machines, switches, degree, &mut rng).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let mach = Machines::new(&g);
        let ud = RootedUpDown::new(&g, (seed % u64::from(switches)) as u32).unwrap();
        Net { g, mach, ud }
    }

    #[test]
    fn every_scheme_routes_every_pair_legally() {
        for seed in 0..12 {
            let n = net(24, 8, 4, seed);
            let (g, ud, mach) = (&n.g, &n.ud, &n.mach);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let sw = shortest_widest(g, ud, mach, PathMetric::Sum).unwrap();
            sw.check(g, ud, mach, "sw", true).unwrap();
            let swb = shortest_widest(g, ud, mach, PathMetric::Bottleneck).unwrap();
            swb.check(g, ud, mach, "swb", true).unwrap();
            let ren = destination_renaming(g, ud, mach, RenamingPaths::Random, &mut rng).unwrap();
            ren.check(g, ud, mach, "ren", true).unwrap();
            ren.check_scheme_lids(g, mach, "ren").unwrap();
            let exp = fully_explicit(g, ud, mach).unwrap();
            exp.check(g, ud, mach, "exp", false).unwrap();
            exp.check_scheme_lids(g, mach, "exp").unwrap();
            for unit in [
                SelectionUnit::MachinePair,
                SelectionUnit::SwitchPair,
                SelectionUnit::SourceSwitchToMachine,
            ] {
                let cfg = PathSelectionConfig {
                    unit,
                    ..Default::default()
                };
                let (ps, stats) = path_selection(g, ud, mach, &cfg, &mut rng).unwrap();
                ps.check(g, ud, mach, "ps", false).unwrap();
                assert!(stats.mean_candidates > 1.0);
            }
        }
    }

    #[test]
    fn fully_explicit_needs_one_lid_per_destination() {
        let n = net(30, 10, 4, 3);
        let exp = fully_explicit(&n.g, &n.ud, &n.mach).unwrap();
        let mut ps = PathSet::new();
        let mut scratch = Vec::new();
        for d in 0..n.mach.len() {
            exp.dest_paths(&n.g, &n.mach, d, &mut ps, &mut scratch);
            for h in Heuristic::ALL {
                assert_eq!(assign(&ps, h).num_lids, 1, "destination {d}, {h}");
            }
        }
        // Shortest-widest on the same fabric is not destination-based.
        let sw = shortest_widest(&n.g, &n.ud, &n.mach, PathMetric::Sum).unwrap();
        let total: u32 = (0..n.mach.len())
            .map(|d| {
                sw.dest_paths(&n.g, &n.mach, d, &mut ps, &mut scratch);
                assign(&ps, Heuristic::Greedy).num_lids
            })
            .sum();
        assert!(total > n.mach.len() as u32);
    }

    #[test]
    fn balanced_renaming_is_shortest_widest_with_first_fit_lids() {
        // Two independent code paths: LIDs assigned while routing vs greedy over the split graph.
        let n = net(40, 10, 4, 5);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let sw = shortest_widest(&n.g, &n.ud, &n.mach, PathMetric::Sum).unwrap();
        let ren = destination_renaming(
            &n.g,
            &n.ud,
            &n.mach,
            RenamingPaths::Balanced(PathMetric::Sum),
            &mut rng,
        )
        .unwrap();
        let m = n.mach.len();
        for s in 0..m {
            for d in (0..m).filter(|&d| d != s) {
                assert_eq!(sw.pair_chans(s, d), ren.pair_chans(s, d));
            }
        }
        let lids = ren.scheme_lids.as_ref().unwrap();
        let mut ps = PathSet::new();
        let mut scratch = Vec::new();
        let mut differs = false;
        for (d, &k) in lids.iter().enumerate() {
            sw.dest_paths(&n.g, &n.mach, d, &mut ps, &mut scratch);
            assert_eq!(
                assign(&ps, Heuristic::Greedy).num_lids,
                k,
                "destination {d}"
            );
            differs |= k > 1;
        }
        assert!(differs);
    }

    #[test]
    fn k_shortest_matches_brute_force() {
        fn all_legal(g: &SwitchGraph, ud: &RootedUpDown, a: u32, b: u32) -> Vec<Vec<u32>> {
            fn go(
                g: &SwitchGraph,
                ud: &RootedUpDown,
                b: u32,
                st: u32,
                seen: &mut Vec<bool>,
                p: &mut Vec<u32>,
                out: &mut Vec<Vec<u32>>,
            ) {
                if st / 2 == b {
                    out.push(p.clone());
                    return;
                }
                for c in g.out_channels(st / 2) {
                    let Some(v) = next_state(ud, g, st, c) else {
                        continue;
                    };
                    if !seen[(v / 2) as usize] {
                        seen[(v / 2) as usize] = true;
                        p.push(c);
                        go(g, ud, b, v, seen, p, out);
                        p.pop();
                        seen[(v / 2) as usize] = false;
                    }
                }
            }
            let mut seen = vec![false; g.num_switches()];
            seen[a as usize] = true;
            let mut out = Vec::new();
            go(g, ud, b, 2 * a, &mut seen, &mut Vec::new(), &mut out);
            out
        }
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut rd = Vec::new();
        let mut got = Vec::new();
        for seed in 0..6 {
            let n = net(8, 7, 4, seed);
            for a in 0..7 {
                for b in (0..7).filter(|&b| b != a) {
                    let mut all = all_legal(&n.g, &n.ud, a, b);
                    all.sort_by_key(|p| p.len());
                    for k in [1, 3, 16] {
                        for minimal_only in [false, true] {
                            let cfg = PathSelectionConfig {
                                k,
                                minimal_only,
                                ..Default::default()
                            };
                            assert!(!k_shortest_legal(
                                &n.g, &n.ud, a, b, &cfg, &mut rng, &mut rd, &mut got
                            ));
                            let shortest = all[0].len();
                            let pool: Vec<&Vec<u32>> = all
                                .iter()
                                .filter(|p| !minimal_only || p.len() == shortest)
                                .collect();
                            assert_eq!(got.len(), pool.len().min(k as usize));
                            // Sorted by length, distinct, legal, and every path shorter than the
                            // longest one returned is there.
                            assert!(got.windows(2).all(|w| w[0].len() <= w[1].len()));
                            let longest = got.last().unwrap().len();
                            for p in &got {
                                assert!(pool.contains(&p) && n.ud.is_legal(&n.g, p));
                                assert_eq!(got.iter().filter(|q| *q == p).count(), 1);
                            }
                            for p in pool.iter().filter(|p| p.len() < longest) {
                                assert!(got.contains(p));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Two switches joined by one link, or by two parallel links; machines 0, 1 on switch A and
    /// 2, 3 on switch B.
    fn two_switches(parallel: bool) -> (SwitchGraph, Machines, RootedUpDown) {
        let mut b = FabricBuilder::new();
        let sa = b.add_node(NodeKind::Switch, 1, 8, "A").unwrap();
        let sb = b.add_node(NodeKind::Switch, 2, 8, "B").unwrap();
        b.link(PortRef { node: sa, port: 1 }, PortRef { node: sb, port: 1 })
            .unwrap();
        if parallel {
            b.link(PortRef { node: sa, port: 2 }, PortRef { node: sb, port: 2 })
                .unwrap();
        }
        b.set_lid(PortRef { node: sa, port: 0 }, 1, 1, 0).unwrap();
        b.set_lid(PortRef { node: sb, port: 0 }, 2, 2, 0).unwrap();
        for i in 0..4u16 {
            let ca = b
                .add_node(NodeKind::Ca, 100 + u64::from(i), 1, format!("m{i}"))
                .unwrap();
            let (sw, port) = if i < 2 {
                (sa, 5 + i as u8)
            } else {
                (sb, 5 + i as u8)
            };
            b.link(PortRef { node: ca, port: 1 }, PortRef { node: sw, port })
                .unwrap();
            b.set_lid(PortRef { node: ca, port: 1 }, 200 + u64::from(i), 10 + i, 0)
                .unwrap();
        }
        let g = SwitchGraph::new(&b.build().unwrap()).unwrap();
        let mach = Machines::new(&g);
        let ud = RootedUpDown::new(&g, 0).unwrap();
        (g, mach, ud)
    }

    #[test]
    fn link_load_and_lids_on_two_switches() {
        let (g, mach, ud) = two_switches(false);
        assert_eq!(mach.switch, vec![0, 0, 1, 1]);
        let sw = shortest_widest(&g, &ud, &mach, PathMetric::Sum).unwrap();
        // Each direction carries the 4 cross pairs; normalised by M - 1 = 3.
        let l = sw.max_link_load(&g);
        assert!(
            (l.directed - 4.0 / 3.0).abs() < 1e-12 && (l.bidirectional - 8.0 / 3.0).abs() < 1e-12
        );

        // With two parallel links, shortest-widest spreads the load over both links (the machine
        // links, at load 1, are now the busiest). Source-major order happens to send both sources
        // of switch A to machine 2 over the same link (0->2 first, then 1->2 on a tie), so that
        // destination sees one weighted path from A plus machine 3's delivery, and needs one LID.
        let (g, mach, ud) = two_switches(true);
        let max_pairs = |rt: &MachineRouting| rt.channel_pairs(&g).into_iter().max().unwrap();
        let sw = shortest_widest(&g, &ud, &mach, PathMetric::Sum).unwrap();
        assert_eq!(max_pairs(&sw), 2);
        assert_eq!(sw.max_link_load(&g).directed, 1.0);
        let mut ps = PathSet::new();
        let mut scratch = Vec::new();
        sw.dest_paths(&g, &mach, 2, &mut ps, &mut scratch);
        assert_eq!(ps.len(), 2);
        assert_eq!((ps.weight(0), ps.weight(1)), (2, 1));
        assert_eq!(assign(&ps, Heuristic::ColorL).num_lids, 1);
        // Fully explicit sends both sources of a destination over one link, but alternates links
        // between destinations.
        let exp = fully_explicit(&g, &ud, &mach).unwrap();
        assert_eq!(exp.pair_chans(0, 2), exp.pair_chans(1, 2));
        assert_ne!(exp.pair_chans(0, 2), exp.pair_chans(0, 3));
        assert_eq!(max_pairs(&exp), 2);
        // Path selection at machine-pair granularity balances like shortest-widest; at switch-pair
        // granularity all pairs of a switch pair share one link.
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let cfg = PathSelectionConfig {
            unit: SelectionUnit::MachinePair,
            ..Default::default()
        };
        let (ps_mp, stats) = path_selection(&g, &ud, &mach, &cfg, &mut rng).unwrap();
        assert_eq!(max_pairs(&ps_mp), 2);
        assert_eq!(stats.removals, 8, "8 cross pairs, 2 candidates each");
        let cfg = PathSelectionConfig {
            unit: SelectionUnit::SwitchPair,
            ..Default::default()
        };
        let (ps_sp, stats) = path_selection(&g, &ud, &mach, &cfg, &mut rng).unwrap();
        assert_eq!(max_pairs(&ps_sp), 4);
        assert_eq!(stats.removals, 2);
        assert_eq!(ps_sp.pair_chans(0, 2), ps_sp.pair_chans(1, 3));
    }

    #[test]
    fn up_down_orientation_and_legality() {
        let n = net(4, 8, 4, 2);
        let (g, ud) = (&n.g, &n.ud);
        for c in 0..g.num_channels() {
            assert_ne!(
                ud.up[c],
                ud.up[g.chan_reverse()[c] as usize],
                "exactly one direction of a link is up"
            );
        }
        let up = (0..g.num_channels() as u32)
            .find(|&c| ud.up[c as usize])
            .unwrap();
        let down = g.chan_reverse()[up as usize];
        assert!(ud.is_legal(g, &[up]) && ud.is_legal(g, &[down]));
        assert!(!ud.is_legal(g, &[down, up]), "up after down");
        assert!(RootedUpDown::new(g, 99).is_err());
    }
}
