//! Globally balanced single-source-shortest-path routing (P-SSSP, Hoefler et al., seed 004; §II of
//! Domke et al., seed 003).
//!
//! For every destination LID the router picks a destination tree over the switch graph whose
//! channel weights grow with the routes already placed on each channel, so later destinations avoid
//! loaded channels and the load spreads over the whole fabric.
//!
//! The paper makes routes minimal by giving every channel an initial weight so large that no detour
//! can pay. We get exactly the same trees more cheaply: the minimal routes to a destination form a
//! DAG (channels `u -> v` with `dist(v) + 1 == dist(u)`), and the least-weight path within that DAG
//! is a dynamic program over the switches in order of distance — O(channels) per destination
//! instead of a Dijkstra, with integer weights and no priority queue.
//!
//! With LMC > 0 the LIDs of one port are routed one after the other; a LID first avoids the
//! channels its sibling LIDs already use (lexicographically before load), so the LIDs of a port take
//! different paths wherever the fabric offers them.
//!
//! One pass routes each destination against the loads of the destinations before it only, so the
//! first destinations are placed blind. A second pass (rip-up and reroute, our addition to the
//! paper's algorithm) takes every destination's tree out again and re-chooses it against the loads
//! of all the others. It lowers the edge forwarding index by 17% on a 6x6x6 torus and 6% on a
//! random fabric and raises Λ. Where it does not lower the maximum channel load the first pass is
//! kept; on fat trees the maximum is pinned, and the pass gives up once a quarter of the
//! destinations have not moved it (a full pass costs as much as the first).

use rayon::prelude::*;

use crate::fabric::{Dest, SwitchGraph, NONE};
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

/// Weight of sharing one channel with a sibling LID; larger than any possible sum of loads along
/// a path (loads are route counts, at most 2^32 per channel in practice, paths < 256 channels).
pub(crate) const SIBLING_PENALTY: u64 = 1 << 44;

/// Rip-up-and-reroute passes after the first routing pass. More passes lower the edge forwarding
/// index further (torus 6x6x6: 4200, 3480, 3276, 3220) but Λ hardly moves after the first.
const REROUTE_PASSES: usize = 1;

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
}

impl Balancer {
    pub fn new(g: &SwitchGraph) -> Self {
        let (ns, nc) = (g.num_switches(), g.num_channels());
        Balancer {
            load: vec![0; nc],
            penalized: Vec::new(),
            cost: vec![0; ns],
            flow: vec![0; ns],
            next: vec![NONE; ns],
        }
    }

    /// Picks for every switch of `order` after the first (the destination's switch) the candidate
    /// channel of least total path weight towards the destination. `order` must list every switch
    /// after the heads of all its candidate channels (e.g. by increasing distance); switches not in
    /// `order`, or without a candidate leading to a switch already routed, get no route.
    /// Returns the chosen channel per switch ([`NONE`] for the root and unrouted switches).
    pub fn choose_tree(
        &mut self,
        g: &SwitchGraph,
        order: &[u32],
        is_candidate: impl Fn(u32) -> bool,
    ) -> &[u32] {
        self.next.fill(NONE);
        let Some((&root, rest)) = order.split_first() else {
            return &self.next;
        };
        self.cost.fill(u64::MAX);
        self.cost[root as usize] = 0;
        for &s in rest {
            let mut best = (u64::MAX, u64::MAX, NONE);
            for c in g.out_channels(s) {
                if !is_candidate(c) {
                    continue;
                }
                let head_cost = self.cost[g.chan_head()[c as usize] as usize];
                if head_cost == u64::MAX {
                    continue;
                }
                let w = self.load[c as usize];
                let key = (head_cost.saturating_add(w), w, c);
                if key < best {
                    best = key;
                }
            }
            self.cost[s as usize] = best.0;
            self.next[s as usize] = best.2;
        }
        &self.next
    }

    /// [`choose_tree`](Self::choose_tree) over a prebuilt [`MinimalDag`]: the same choice, without
    /// testing every channel of every switch again for each LID of the destination switch.
    fn choose_tree_dag(&mut self, dag: &MinimalDag) -> &[u32] {
        self.next.fill(NONE);
        let Some(&root) = dag.order.first() else {
            return &self.next;
        };
        self.cost.fill(u64::MAX);
        self.cost[root as usize] = 0;
        for (i, &s) in dag.order.iter().enumerate().skip(1) {
            let span = dag.cand_start[i - 1] as usize..dag.cand_start[i] as usize;
            // Candidates ascend by channel id, so keeping the first of equal (cost, load) keys
            // breaks ties towards the lowest channel, as `choose_tree` does.
            let (mut best_cost, mut best_w, mut best_c) = (u64::MAX, u64::MAX, NONE);
            for (&c, &head) in dag.cands[span.clone()].iter().zip(&dag.heads[span]) {
                let w = self.load[c as usize];
                let cost = self.cost[head as usize].saturating_add(w);
                if cost < best_cost || (cost == best_cost && w < best_w) {
                    (best_cost, best_w, best_c) = (cost, w, c);
                }
            }
            self.cost[s as usize] = best_cost;
            self.next[s as usize] = best_c;
        }
        &self.next
    }

    /// Adds the routes of the tree last chosen by [`choose_tree`](Self::choose_tree) to the channel
    /// loads: every CA port attached to a switch sends one route along its switch's path.
    pub fn add_tree_load(&mut self, g: &SwitchGraph, order: &[u32]) {
        for &s in order {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in order.iter().rev() {
            let c = self.next[s as usize];
            if c == NONE {
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
    fn remove_row_load(&mut self, g: &SwitchGraph, order: &[u32], row: &[u8]) {
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
        }
    }

    fn max_load(&self) -> u64 {
        self.load.iter().copied().max().unwrap_or(0)
    }

    /// Steers the next tree away from the channels the given trees already use (one unit of
    /// [`SIBLING_PENALTY`] per tree using a channel); trees as destination-major rows of ports, one
    /// row of `num_switches` ports per tree.
    fn penalize_rows(&mut self, g: &SwitchGraph, rows: &[u8]) {
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

    fn clear_penalties(&mut self) {
        for c in self.penalized.drain(..) {
            self.load[c as usize] -= SIBLING_PENALTY;
        }
    }
}

/// The minimal routes towards one switch: the switches that reach it by increasing distance, each
/// with the channels leading one hop closer (candidates of switch `order[i]`, i >= 1, are
/// `cands[cand_start[i-1]..cand_start[i]]`). Built once per destination switch and shared by all
/// the LIDs behind it.
#[derive(Default)]
pub(crate) struct MinimalDag {
    pub(crate) to: u32,
    pub(crate) order: Vec<u32>,
    pub(crate) cand_start: Vec<u32>,
    pub(crate) cands: Vec<u32>,
    /// Head switch of each candidate channel (saves a lookup in the hot loop).
    pub(crate) heads: Vec<u32>,
}

impl MinimalDag {
    pub(crate) fn build(
        &mut self,
        g: &SwitchGraph,
        to_switch: u32,
        to: &[u16],
        counts: &mut Vec<u32>,
    ) {
        self.to = to_switch;
        order_by_distance(to, &mut self.order, counts);
        self.cand_start.clear();
        self.cand_start.push(0);
        self.cands.clear();
        self.heads.clear();
        for &s in self.order.iter().skip(1) {
            let ds = to[s as usize];
            for c in g.out_channels(s) {
                let head = g.chan_head()[c as usize];
                if to[head as usize].wrapping_add(1) == ds {
                    self.cands.push(c);
                    self.heads.push(head);
                }
            }
            self.cand_start.push(self.cands.len() as u32);
        }
    }
}

/// Hop distances between all pairs of switches, one BFS per destination switch (in parallel).
/// `u16::MAX` where unreachable.
pub struct SwitchDistances {
    n: usize,
    dist: Vec<u16>,
}

impl SwitchDistances {
    pub fn new(g: &SwitchGraph) -> Self {
        let n = g.num_switches();
        let mut dist = vec![u16::MAX; n * n];
        dist.par_chunks_mut(n.max(1))
            .enumerate()
            .for_each(|(to, row)| {
                for (d, v) in row.iter_mut().zip(g.bfs_distances_to(to as u32)) {
                    *d = u16::try_from(v).unwrap_or(u16::MAX);
                }
            });
        SwitchDistances { n, dist }
    }

    /// Distance from switch `from` to switch `to`.
    #[inline]
    pub fn get(&self, from: u32, to: u32) -> u16 {
        self.dist[to as usize * self.n + from as usize]
    }

    /// All distances towards `to`, indexed by source switch.
    pub fn to(&self, to: u32) -> &[u16] {
        &self.dist[to as usize * self.n..(to as usize + 1) * self.n]
    }
}

/// Reachable switches ordered by increasing distance (the destination first), by counting sort.
pub fn order_by_distance(dist: &[u16], order: &mut Vec<u32>, counts: &mut Vec<u32>) {
    order.clear();
    counts.clear();
    for &d in dist {
        if d != u16::MAX {
            let d = usize::from(d);
            if counts.len() <= d + 1 {
                counts.resize(d + 2, 0);
            }
            counts[d + 1] += 1;
        }
    }
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    order.resize(counts.last().copied().unwrap_or(0) as usize, NONE);
    for (s, &d) in dist.iter().enumerate() {
        if d != u16::MAX {
            let slot = &mut counts[usize::from(d)];
            order[*slot as usize] = s as u32;
            *slot += 1;
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
        .filter(|&i| g.dests()[i as usize].switch != NONE)
        .collect();
    order.sort_by_key(|&i| {
        let d = &g.dests()[i as usize];
        (d.exit_port == 0, d.lid_offset, d.switch, d.lid)
    });
    order
}

/// Writes the LFT and hop entries of every switch for destination `d`, given the chosen next
/// channel per switch (`next`, [`NONE`] where unrouted) and the switch-to-switch distances used.
pub fn write_dest(
    g: &SwitchGraph,
    d: &Dest,
    next: &[u32],
    dist: impl Fn(u32) -> u16,
    lft: &mut Lft,
    hops: &mut SwitchLidTable,
) {
    let last_link = u16::from(d.exit_port != 0);
    for s in 0..g.num_switches() as u32 {
        let (port, h) = if s == d.switch {
            (d.exit_port, last_link)
        } else if next[s as usize] != NONE {
            (
                g.chan_port()[next[s as usize] as usize],
                dist(s).saturating_add(last_link),
            )
        } else {
            (NO_PATH, u16::from(NO_PATH))
        };
        lft.set(s, d.lid, port);
        hops.set(s, d.lid, u8::try_from(h).unwrap_or(NO_PATH));
    }
}

/// Routes every LID of the fabric with balanced minimal SSSP. One layer; every switch reaches
/// every LID attached to a switch in its connected component, by a minimal path.
pub fn route(g: &SwitchGraph) -> Routing {
    let dist = SwitchDistances::new(g);
    route_with_distances(g, &dist)
}

/// [`route`] with precomputed switch distances (callers that need them too compute them once).
pub fn route_with_distances(g: &SwitchGraph, dist: &SwitchDistances) -> Routing {
    route_with_passes(g, dist, REROUTE_PASSES)
}

/// [`route_with_distances`] with `reroute_passes` rip-up-and-reroute passes after the first.
fn route_with_passes(g: &SwitchGraph, dist: &SwitchDistances, reroute_passes: usize) -> Routing {
    let ns = g.num_switches();
    let mut bal = Balancer::new(g);
    let mut dag = MinimalDag {
        to: NONE,
        ..Default::default()
    };
    let mut counts = Vec::new();
    // Chosen ports and hops per destination, destination-major: each LID's row is written in one
    // sweep, and the switch-major tables are filled by one parallel transpose at the end.
    let stride = usize::from(g.max_lid()) + 1;
    let mut rows_port = vec![NO_PATH; stride * ns];
    let mut rows_hops = vec![NO_PATH; stride * ns];
    let mut lft = Lft::new(ns, g.max_lid());

    let order = routing_order(g);
    for &di in &order {
        let d = g.dests()[di as usize];
        let to = dist.to(d.switch);
        if dag.to != d.switch {
            dag.build(g, d.switch, to, &mut counts);
        }
        if d.lid_offset > 0 {
            // Siblings' routes are already in the destination-major rows.
            let base = d.lid - u16::from(d.lid_offset);
            bal.penalize_rows(
                g,
                &rows_port[usize::from(base) * ns..usize::from(d.lid) * ns],
            );
        }
        let next = bal.choose_tree_dag(&dag);
        let row = usize::from(d.lid) * ns..(usize::from(d.lid) + 1) * ns;
        fill_row(
            g,
            &d,
            next,
            to,
            &mut rows_port[row.clone()],
            &mut rows_hops[row],
        );
        bal.add_tree_load(g, &dag.order);
        bal.clear_penalties();
    }
    for _ in 0..reroute_passes {
        let before = (bal.max_load(), bal.load.clone(), rows_port.clone());
        dag.to = NONE;
        let mut pinned = false;
        for (k, &di) in order.iter().enumerate() {
            if k == order.len() / 4 && k > 0 && bal.max_load() == before.0 {
                // A quarter of the destinations rerouted and the maximum has not moved at all:
                // it is pinned (on fat trees by routes every balanced choice shares), and the
                // rest of the pass would cost as much as the first for nothing.
                pinned = true;
                break;
            }
            let d = g.dests()[di as usize];
            if dag.to != d.switch {
                dag.build(g, d.switch, dist.to(d.switch), &mut counts);
            }
            let lid = usize::from(d.lid);
            bal.remove_row_load(g, &dag.order, &rows_port[lid * ns..(lid + 1) * ns]);
            // All other LIDs of the port, earlier and later, are placed now.
            let siblings = sibling_lids(g, &d);
            bal.penalize_rows(g, &rows_port[siblings.start * ns..lid * ns]);
            bal.penalize_rows(g, &rows_port[(lid + 1) * ns..siblings.end * ns]);
            let next = bal.choose_tree_dag(&dag);
            // Hops stay: every route is minimal in either pass.
            for (s, port) in rows_port[lid * ns..(lid + 1) * ns].iter_mut().enumerate() {
                if let Some(&c) = next.get(s).filter(|&&c| c != NONE) {
                    *port = g.chan_port()[c as usize];
                }
            }
            bal.add_tree_load(g, &dag.order);
            bal.clear_penalties();
        }
        if pinned || bal.max_load() >= before.0 {
            // No better than before: keep the previous pass (where this happens, on fat trees,
            // Λ does not move either).
            (_, bal.load, rows_port) = before;
            break;
        }
    }
    let mut hops = SwitchLidTable::new(ns, g.max_lid(), NO_PATH);
    lft.tables_mut()
        .zip(hops.rows_mut())
        .enumerate()
        .par_bridge()
        .for_each(|(s, (lft_row, hop_row))| {
            for lid in 0..stride {
                lft_row[lid] = rows_port[lid * ns + s];
                hop_row[lid] = rows_hops[lid * ns + s];
            }
        });
    Routing {
        lft,
        hops,
        layers: None,
        num_layers: 1,
    }
}

/// The LIDs of the port that owns `d.lid` (LMC siblings, `d` included), as a range of LIDs.
fn sibling_lids(g: &SwitchGraph, d: &Dest) -> std::ops::Range<usize> {
    let base = usize::from(d.lid - u16::from(d.lid_offset));
    let mut end = usize::from(d.lid) + 1;
    while let Some(n) = u16::try_from(end).ok().and_then(|l| g.dest_of_lid(l)) {
        if n.endpoint != d.endpoint || usize::from(n.lid_offset) != end - base {
            break;
        }
        end += 1;
    }
    base..end
}

/// The ports and hop counts of every switch towards destination `d` (one destination-major row).
pub(crate) fn fill_row(
    g: &SwitchGraph,
    d: &Dest,
    next: &[u32],
    to: &[u16],
    ports: &mut [u8],
    hops: &mut [u8],
) {
    let last_link = u16::from(d.exit_port != 0);
    for s in 0..g.num_switches() {
        let (port, h) = if s as u32 == d.switch {
            (d.exit_port, last_link)
        } else if next[s] != NONE {
            (
                g.chan_port()[next[s] as usize],
                to[s].saturating_add(last_link),
            )
        } else {
            (NO_PATH, u16::from(NO_PATH))
        };
        ports[s] = port;
        hops[s] = u8::try_from(h).unwrap_or(NO_PATH);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
    use crate::routing::{walk, WalkEnd};

    /// Switches in a ring (or a line), `cas` CAs per switch, LMC `lmc` on CA ports.
    pub(crate) fn ring(n: u32, cas: u32, lmc: u8, closed: bool) -> Fabric {
        let mut b = FabricBuilder::new();
        let sw: Vec<u32> = (0..n)
            .map(|i| {
                b.add_node(NodeKind::Switch, 0x100 + u64::from(i), 16, format!("s{i}"))
                    .unwrap()
            })
            .collect();
        let links = if closed { n } else { n - 1 };
        for i in 0..links {
            let j = (i + 1) % n;
            b.link(
                PortRef {
                    node: sw[i as usize],
                    port: 1,
                },
                PortRef {
                    node: sw[j as usize],
                    port: 2,
                },
            )
            .unwrap();
        }
        let mut lid = 1u16;
        for (i, &s) in sw.iter().enumerate() {
            b.set_lid(PortRef { node: s, port: 0 }, 0x100 + i as u64, lid, 0)
                .unwrap();
            lid += 1;
        }
        let step = 1u16 << lmc;
        for i in 0..n {
            for k in 0..cas {
                let c = b
                    .add_node(
                        NodeKind::Ca,
                        0x1000 + u64::from(i * 64 + k),
                        1,
                        format!("h{i}.{k}"),
                    )
                    .unwrap();
                b.link(
                    PortRef { node: c, port: 1 },
                    PortRef {
                        node: sw[i as usize],
                        port: 3 + k as u8,
                    },
                )
                .unwrap();
                lid = lid.div_ceil(step) * step;
                b.set_lid(
                    PortRef { node: c, port: 1 },
                    0x1000 + u64::from(i * 64 + k),
                    lid,
                    lmc,
                )
                .unwrap();
                lid += step;
            }
        }
        b.build().unwrap()
    }

    /// A 2-level fat tree: `leaves` leaf switches with `down` CAs each, `spines` spine switches,
    /// every leaf linked once to every spine.
    pub(crate) fn fat_tree(leaves: u32, spines: u32, down: u32, lmc: u8) -> Fabric {
        let mut b = FabricBuilder::new();
        let mut lid = 1u16;
        let ports = (down + spines).max(leaves) as u8;
        let sp: Vec<u32> = (0..spines)
            .map(|i| {
                b.add_node(
                    NodeKind::Switch,
                    0x200 + u64::from(i),
                    ports,
                    format!("spine{i}"),
                )
                .unwrap()
            })
            .collect();
        let lf: Vec<u32> = (0..leaves)
            .map(|i| {
                b.add_node(
                    NodeKind::Switch,
                    0x300 + u64::from(i),
                    ports,
                    format!("leaf{i}"),
                )
                .unwrap()
            })
            .collect();
        for (i, &s) in sp.iter().chain(lf.iter()).enumerate() {
            b.set_lid(PortRef { node: s, port: 0 }, 0x200 + i as u64, lid, 0)
                .unwrap();
            lid += 1;
        }
        for (li, &l) in lf.iter().enumerate() {
            for (si, &s) in sp.iter().enumerate() {
                b.link(
                    PortRef {
                        node: l,
                        port: (down + si as u32 + 1) as u8,
                    },
                    PortRef {
                        node: s,
                        port: li as u8 + 1,
                    },
                )
                .unwrap();
            }
            for k in 0..down {
                let guid = 0x10000 + (li as u64) * 256 + u64::from(k);
                let c = b
                    .add_node(NodeKind::Ca, guid, 1, format!("h{li}.{k}"))
                    .unwrap();
                b.link(
                    PortRef { node: c, port: 1 },
                    PortRef {
                        node: l,
                        port: k as u8 + 1,
                    },
                )
                .unwrap();
                let step = 1u16 << lmc;
                lid = lid.div_ceil(step) * step;
                b.set_lid(PortRef { node: c, port: 1 }, guid, lid, lmc)
                    .unwrap();
                lid += step;
            }
        }
        b.build().unwrap()
    }

    fn check_complete_and_minimal(f: &Fabric, r: &Routing) {
        let g = SwitchGraph::new(f).unwrap();
        let dist = SwitchDistances::new(&g);
        for s in 0..g.num_switches() as u32 {
            for d in g.dests() {
                match walk(&g, &r.lft, s, d.lid, |_| {}) {
                    WalkEnd::Delivered { hops } => {
                        assert_eq!(
                            hops,
                            u32::from(dist.get(s, d.switch)),
                            "switch {s} lid {}",
                            d.lid
                        );
                        let expect = hops + u32::from(d.exit_port != 0);
                        assert_eq!(u32::from(r.hops.get(s, d.lid)), expect);
                    }
                    other => panic!("switch {s} lid {}: {other:?}", d.lid),
                }
            }
        }
    }

    /// Max number of CA-to-CA routes (base LIDs) on any channel.
    fn max_channel_load(f: &Fabric, r: &Routing) -> u64 {
        let g = SwitchGraph::new(f).unwrap();
        let mut load = vec![0u64; g.num_channels()];
        for &(_, s) in g.terminals() {
            for &(e, _) in g.terminals() {
                walk(&g, &r.lft, s, f.endpoints()[e as usize].base_lid, |c| {
                    load[c as usize] += 1
                });
            }
        }
        load.into_iter().max().unwrap_or(0)
    }

    #[test]
    fn ring_routes_are_complete_and_minimal() {
        let f = ring(7, 2, 0, true);
        let g = SwitchGraph::new(&f).unwrap();
        check_complete_and_minimal(&f, &route(&g));
    }

    #[test]
    fn fat_tree_is_perfectly_balanced() {
        // 4 leaves x 4 CAs, 4 spines: every leaf's 4 uplinks carry equal load.
        let f = fat_tree(4, 4, 4, 0);
        let g = SwitchGraph::new(&f).unwrap();
        let r = route(&g);
        check_complete_and_minimal(&f, &r);
        // 16 CAs, 12 remote destinations each -> 192 routes up from each leaf of 4 CAs... per leaf:
        // 4 sources x 12 remote dests = 48 routes over 4 uplinks = 12 each at best.
        assert_eq!(max_channel_load(&f, &r), 12);
    }

    #[test]
    fn rerouting_lowers_the_forwarding_index_of_a_torus_and_keeps_routes_minimal() {
        let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let dist = SwitchDistances::new(&g);
        let once = route_with_passes(&g, &dist, 0);
        let rerouted = route_with_passes(&g, &dist, 1);
        check_complete_and_minimal(&f, &rerouted);
        assert_eq!(once.hops, rerouted.hops);
        let (a, b) = (max_channel_load(&f, &once), max_channel_load(&f, &rerouted));
        assert!(b < a, "rerouted {b} vs one pass {a}");
    }

    #[test]
    fn rerouting_never_raises_the_forwarding_index() {
        for spec in ["ktree:4,3", "random:24,8,4,40", "mesh:5x5,2", "torus:6x6,2"] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let dist = SwitchDistances::new(&g);
            let once = max_channel_load(&f, &route_with_passes(&g, &dist, 0));
            let r = route_with_distances(&g, &dist);
            check_complete_and_minimal(&f, &r);
            let rerouted = max_channel_load(&f, &r);
            assert!(
                rerouted <= once,
                "{spec}: rerouted {rerouted} vs one pass {once}"
            );
        }
    }

    #[test]
    fn balanced_beats_unbalanced_on_fat_tree() {
        let f = fat_tree(4, 4, 4, 0);
        let g = SwitchGraph::new(&f).unwrap();
        let balanced = route(&g);
        // Unbalanced shortest paths: always the first minimal channel.
        let mut plain = balanced.clone();
        let dist = SwitchDistances::new(&g);
        for d in g.dests() {
            for s in 0..g.num_switches() as u32 {
                if s == d.switch {
                    continue;
                }
                let c = g
                    .out_channels(s)
                    .find(|&c| {
                        dist.get(g.chan_head()[c as usize], d.switch) + 1 == dist.get(s, d.switch)
                    })
                    .unwrap();
                plain.lft.set(s, d.lid, g.chan_port()[c as usize]);
            }
        }
        assert!(max_channel_load(&f, &balanced) < max_channel_load(&f, &plain));
    }

    #[test]
    fn lmc_lids_take_distinct_paths() {
        let f = fat_tree(2, 4, 2, 2);
        let g = SwitchGraph::new(&f).unwrap();
        let r = route(&g);
        check_complete_and_minimal(&f, &r);
        // From leaf 0 to each CA on leaf 1, the four LIDs use four different spines.
        let leaf0 = g.node_switch()[f
            .nodes()
            .iter()
            .position(|n| n.description == "leaf0")
            .unwrap()];
        for e in f
            .endpoints()
            .iter()
            .filter(|e| f.nodes()[e.node as usize].description.starts_with("h1."))
        {
            let mut ports: Vec<u8> = e.lids().map(|l| r.lft.port(leaf0, l as u16)).collect();
            ports.sort_unstable();
            ports.dedup();
            assert_eq!(ports.len(), 4, "{ports:?}");
        }
    }

    #[test]
    fn unreachable_lids_have_no_path() {
        // A CA on its own, linked to nothing.
        let mut b = FabricBuilder::from_fabric(ring(3, 1, 0, false));
        let n = b.add_node(NodeKind::Ca, 0xdead, 1, "orphan").unwrap();
        b.set_lid(PortRef { node: n, port: 1 }, 0xdead, 40, 0)
            .unwrap();
        let f = b.build().unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let r = route(&g);
        for s in 0..3 {
            assert_eq!(r.lft.port(s, 40), NO_PATH);
        }
    }
}
