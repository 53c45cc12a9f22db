//! One lane, full bandwidth: deadlock-free routes within a single layer when its SSSP routes have
//! a cyclic CDG (QoS off on tori and random fabrics), without falling back to Up*/Down* wholesale.
//!
//! Nue-like (Domke, Hoefler & Matsuoka, HPDC'16): destinations are routed one by one, each by a
//! Dijkstra search backwards from its switch over the channels, weighted by the routes already
//! placed on them (no per-hop cost: none tried did better, README "Measurements behind the
//! design"), that only takes a channel `w -> u` when the dependency
//! from it to `u`'s chosen channel is in the layer's CDG already or does not close a cycle there
//! (an incremental topological order, [`super::dyntopo`]). Routes are therefore minimal where the
//! layer allows and balanced detours elsewhere. A destination first tries its input (SSSP) routes
//! whole: where all their dependencies fit the layer they stay (on fat trees every CA LID's do,
//! and only the switch LIDs that close cycles are searched), else it is searched. A second pass
//! takes every destination out again and routes it against all the others (rip-up and reroute).
//!
//! **Seeds.** Searched one by one, the first destinations (no loads yet) would fill the layer with
//! turns of little use that later ones must route around. Before any search the layer is seeded
//! with a heavy acyclic part of the input routes' CDG ([`seed_input_turns`]); the searches then
//! find minimal turns where the input routes had them. Seeds are taken out again before the
//! rip-up pass, where only the routes hold the layer.
//!
//! **Completeness.** The CDG starts with the dependencies of the routes along a BFS spanning tree
//! (up to the lowest common ancestor, then down: Up*/Down* on the tree's links alone, acyclic).
//! They stay for good, so every switch can always reach every destination along the tree. A
//! switch the search cannot reach joins the set `A` of switches that forward along the tree, with
//! every switch on its tree path (so `A` is closed under tree next hops), and the destination is
//! searched again with `A` fixed; with `A` = everything the tree routes are used, so this ends.
//! Unlike Up*/Down* on all links (the escape of more lanes, [`super::escape`]) the tree pins only
//! turns between tree channels, leaving every other channel free for the search.
//!
//! **Tree-like fabrics.** Where the input routes of at least half the destinations are legal
//! Up*/Down* routes under the tree's orientation (fat trees with CAs above the leaves: NVIDIA
//! SHARP aggregation nodes on every switch, storage on the spines), the layer soon holds nearly
//! every legal turn of the fabric, and the destinations searched are the few towards CAs above
//! the leaves, whose minimal routes from other switches above the leaves turn down, then up.
//! Such a turn almost always closes a cycle, which the check finds only after searching a large
//! part of the layer. There, a dependency whose channels lie more than [`TREE_LIKE_SPAN`]
//! positions apart in the layer's order is refused without a search (as the escape's layers do),
//! and a search does not even queue such a candidate ([`Router::offer`]).
//!
//! **Every data route legal.** Where the routes from switches with CAs to CA LIDs are all legal
//! under one Up*/Down* order ([`orientation`]: fat trees, with failed cables and switches too),
//! no search runs: every route is made legal under that order, the data routes as they are
//! ([`legal`], `O(S)` per destination).
//!
//! **Cost.** A search tries the candidate channels in order of cost; on tree-like fabrics its
//! queue holds one entry per switch (its cheapest candidate not yet refused) rather than one per
//! candidate. The tables are written only for destinations whose routes changed.
//!
//! **Deadlock freedom.** Every dependency edge is either a tree turn (present from the start) or
//! was accepted by the incremental cycle check against everything in the layer; the layer's CDG
//! is therefore acyclic after every step, and the routes use a subset of it. (Refusing, with or
//! without a search, never adds an edge.)

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::balance::{routing_order, write_dest, Balancer};
use crate::bits;
use crate::graph::{order_by_distance, Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{Routing, NO_PATH};
use crate::updown::{best_roots, UpDown, UpDownRouter};

use super::cdg::{topological_order, EdgeIndex};
use super::dyntopo::{DynTopo, TopoScratch};
use super::prepared::Prepared;
use super::DfssspError;

pub(crate) mod legal;
mod seeds;
#[cfg(test)]
mod tests;

use seeds::seed_input_turns;

/// Channels an incremental cycle check may visit before it refuses a dependency (refusing is
/// safe: the search takes another channel, or the switch follows the tree). 65536 changed nothing
/// on the 6x6x6 torus and the random 128-switch fabric; 64 lowers their Λ a little (0.3095 to
/// 0.3092, 0.1197 to 0.1196; before the layer was seeded, the torus's to 0.295).
pub(crate) const SEARCH_LIMIT: usize = 4096;

/// The same for switch LIDs, whose routes carry no CA-to-CA traffic: on the 18-ary 3-tree only
/// they need searching (every CA LID keeps its SSSP routes), and checks bounded by 4096 channels
/// took a minute there, by 64 a few seconds.
pub(crate) const SWITCH_LID_SEARCH_LIMIT: usize = 64;

/// Channels the cycle checks of one destination may visit in all: one per channel of the fabric
/// ([`WORK_PER_CHANNEL`]), at least four checks' [`SEARCH_LIMIT`]. Each check is bounded already,
/// but a destination asks thousands; where the layer is dense and most checks refuse after a
/// long search, that made the cost grow with the faults instead of the fabric (the 18-ary
/// 3-tree with 1% of its cables missing: 111 s before the fitted order; random 640 switches,
/// 10k CAs, QoS off: 99.5 s with 4 channels per channel, 26.6 s with 1, 19.5 s with none, Λ
/// 0.3586 / 0.3581 over 100 patterns). With it a destination costs `O(C log C)` for its search
/// (`C` channels) and `O(C)` for its checks, as SSSP's does.
const WORK_PER_DEST: usize = 4 * SEARCH_LIMIT;
const WORK_PER_CHANNEL: usize = 1;

/// Rip-up-and-reroute passes after the first: each destination is taken out (its loads and
/// dependencies) and searched again against all the others. One pass raises Λ on the 6x6x6 torus
/// from 0.302 to 0.3095 (random 128-switch fabric: 0.1190 to 0.1197); more change little (0.3102
/// after three, random none) and cost a pass each.
const REROUTE_PASSES: usize = 1;

/// On tree-like fabrics (the input routes of at least half the destinations are legal Up*/Down*
/// routes, [`legal_input_dests`]), a dependency whose channels lie more than this many positions
/// apart in the layer's order is refused without a cycle check, as in the escape's layers
/// ([`DynTopo::with_max_span`]). There the layer holds nearly every legal turn of the fabric, and
/// a down-then-up turn towards a CA above the leaves almost always closes a cycle, found only
/// after searching hundreds of channels: on the 12-ary 3-tree with an aggregation node (a CA) on
/// every switch, 99.8% of the searched checks found a cycle, after 670 channels on average, and
/// the checks searched 58 M channels in all (2.6 s of CPU for one lane, 0.24 s with 8 lanes);
/// with the bound, 0.14 M. Turns whose channels lie close in the order, the ones that may fit,
/// are still checked: on every aggregated tree up to the 8-ary 3-tree (2,048 channels) the
/// routes stay exactly the same.
pub(crate) const TREE_LIKE_SPAN: usize = 1024;

/// How the layer is seeded before the searches ([`seed_input_turns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seeding {
    /// The greedy seeds, improved by the local search.
    Sifted,
    /// None: the searches start from the tree's pins alone.
    Unseeded,
}

impl Seeding {
    pub fn name(self) -> &'static str {
        match self {
            Seeding::Sifted => "sifted",
            Seeding::Unseeded => "none",
        }
    }
}

/// What one-lane routing did.
#[derive(Clone, Debug, Default)]
pub(crate) struct OneLaneOutcome {
    pub roots: Vec<u32>,
    /// Destination searches repeated because some switch was unreachable.
    pub restarts: u64,
    /// Destinations that kept their input (SSSP) routes.
    pub kept_dests: u64,
    /// Routed (switch, LID) paths that follow the tree from some switch on (not from the
    /// destination's switch itself), and routed paths longer than minimal.
    pub tree_routes: u64,
    pub nonminimal_routes: u64,
    /// Channels the incremental cycle checks searched (seeding included).
    pub searched_channels: u64,
    /// (switch, LID) routes that are not the input's ([`legal`]).
    pub rerouted: u64,
}

/// The BFS spanning tree the escape routes follow.
struct Tree {
    /// Channel to the parent (towards the root); [`NO_CHANNEL`] at roots.
    up: Vec<u32>,
}

impl Tree {
    fn new(g: &SwitchGraph, ud: &UpDown) -> Self {
        let ns = g.num_switches();
        let mut up = vec![NO_CHANNEL; ns];
        for s in 0..ns as u32 {
            let l = ud.level[s as usize];
            if l == 0 {
                continue;
            }
            // The lowest-numbered up channel to the level above: deterministic.
            up[s as usize] = g
                .out_channels(s)
                .find(|&c| ud.is_up(g, c) && ud.level[g.chan_head()[c as usize] as usize] + 1 == l)
                .unwrap_or(NO_CHANNEL);
        }
        Tree { up }
    }

    /// Adds every dependency the tree routes can have: every turn between tree channels except
    /// down -> up (paths go up to the lowest common ancestor, then down).
    fn pin(&self, g: &SwitchGraph, ei: &EdgeIndex, counts: &mut [u32]) {
        let ns = g.num_switches();
        let is_tree = |c: u32| {
            let (t, h) = (g.chan_tail()[c as usize], g.chan_head()[c as usize]);
            self.up[t as usize] == c || self.up[h as usize] == g.chan_reverse()[c as usize]
        };
        for v in 0..ns as u32 {
            for &c1 in g.in_channels(v) {
                if !is_tree(c1) {
                    continue;
                }
                let c1_up = self.up[g.chan_tail()[c1 as usize] as usize] == c1;
                for c2 in g.out_channels(v) {
                    if c2 == g.chan_reverse()[c1 as usize] || !is_tree(c2) {
                        continue;
                    }
                    let c2_up = self.up[v as usize] == c2;
                    if c1_up || !c2_up {
                        counts[ei.edge(g, c1, c2) as usize] = 1;
                    }
                }
            }
        }
    }
}

/// The orientation of the spanning tree: the Up*/Down* root under which the SSSP routes'
/// dependencies (`counts`, layer 0 of the input) weigh least on illegal turns, as the escape
/// chooses it. On fat trees a leaf switch, under which every CA LID's minimal routes are legal:
/// they then fit the layer with the tree's routes and stay. Where no such root leaves every
/// route from a switch with CAs legal (a fat tree with failed cables), an order fitted to those
/// routes' turns ([`UpDown::with_roots_fitted`]) is taken when it does. Fabrics that are not
/// layered like a tree keep the first.
pub(crate) fn orientation(prep: &Prepared, counts: &[u32], input: &[u8]) -> Orientation {
    let (g, ei, dist) = (prep.g, &prep.ei, prep.dist());
    let ud = UpDown::fitted(g, dist, |ud| {
        ei.down_up_weight(g, ud, |e| u64::from(counts[e]))
    });
    // Data routes can all be legal on trees only (tori, random fabrics: never under any order);
    // elsewhere the data turns are not even gathered.
    if g.tree_levels().is_none() {
        return Orientation {
            ud,
            data_legal: false,
        };
    }
    let data = data_turns(g, ei, input);
    let data_weight = |ud: &UpDown| {
        ei.down_up_weight(g, ud, |e| {
            u64::from(counts[e]) * u64::from(bits::bit(&data, e))
        })
    };
    if data_weight(&ud) == 0 {
        return Orientation {
            ud,
            data_legal: true,
        };
    }
    let turn = |c1, c2| bits::bit(&data, ei.edge(g, c1, c2) as usize);
    let fitted = best_roots(
        g,
        dist,
        |roots| UpDown::with_roots_fitted(g, roots, &turn),
        data_weight,
    );
    match data_weight(&fitted) == 0 {
        true => Orientation {
            ud: fitted,
            data_legal: true,
        },
        false => Orientation {
            ud,
            data_legal: false,
        },
    }
}

/// The spanning tree's orientation, and whether every input route from a switch with CAs to a
/// CA LID is legal under it.
pub(crate) struct Orientation {
    pub ud: UpDown,
    /// Every data route legal (fat trees, with failed cables too): then every route is made
    /// legal without a search ([`legal`]), the data routes as they are. (The search, even
    /// bounded per destination, took 1.2 to 1.7 s on the 18-ary 3-tree with 5% of its cables
    /// missing; unbounded, 208 s.)
    pub data_legal: bool,
}

/// How far the searches of one-lane routing may go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SearchBounds {
    /// A dependency whose channels lie more than this many positions apart in the layer's order
    /// is refused without a cycle check ([`TREE_LIKE_SPAN`] on tree-like fabrics, else
    /// unbounded).
    pub max_span: usize,
    /// Channels a cycle check of a CA LID's route may visit ([`SEARCH_LIMIT`]).
    pub limit: usize,
    /// Stop ([`DfssspError::Stopped`]) once past it, checked per destination.
    pub deadline: Option<Instant>,
}

/// The dependency edges (a bitmap) that routes from switches with CAs to CA LIDs take: the turns of data
/// traffic in `input` (destination-major ports). On a fat tree they climb, then descend,
/// whatever cables fail; routes from switches above the leaves may have to turn down, then up.
/// `O(sum of path lengths from those switches)`, in parallel over destinations.
fn data_turns(g: &SwitchGraph, ei: &EdgeIndex, input: &[u8]) -> Vec<u64> {
    use rayon::prelude::*;
    let ns = g.num_switches();
    let words = bits::words(ei.num_edges());
    if ns == 0 {
        return vec![0; words];
    }
    let sources: Vec<u32> = (0..ns as u32)
        .filter(|&s| g.terminal_count()[s as usize] > 0)
        .collect();
    input
        .par_chunks(ns)
        .zip(g.dests().par_iter())
        .fold(
            || vec![0u64; words],
            |mut marks, (row, d)| {
                // Data goes to CA LIDs only.
                if d.switch == NO_SWITCH || d.exit_port == 0 {
                    return marks;
                }
                for &s in &sources {
                    let mut c = g.channel_at(s, row[s as usize]);
                    // At most one hop per switch: a broken table cannot loop here.
                    for _ in 0..ns {
                        let Some(c1) = c.filter(|_| s != d.switch) else {
                            break;
                        };
                        let h = g.chan_head()[c1 as usize];
                        if h == d.switch {
                            break;
                        }
                        let Some(c2) = g.channel_at(h, row[h as usize]) else {
                            break;
                        };
                        bits::set(&mut marks, ei.edge(g, c1, c2) as usize);
                        c = Some(c2);
                    }
                }
                marks
            },
        )
        .reduce(
            || vec![0u64; words],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x |= y;
                }
                a
            },
        )
}

/// How many destinations (with a switch) have input routes (`input`, destination-major ports,
/// validated trees) that are all legal Up*/Down* routes under `ud`: where they are most, the
/// fabric is a tree whose routes are Up*/Down* but for a few destinations ([`TREE_LIKE_SPAN`]).
pub(crate) fn legal_input_dests(g: &SwitchGraph, ud: &UpDown, input: &[u8]) -> u64 {
    use rayon::prelude::*;
    let ns = g.num_switches();
    if ns == 0 {
        return 0;
    }
    let chan = |s: u32, row: &[u8]| g.channel_at(s, row[s as usize]);
    input
        .par_chunks(ns)
        .zip(g.dests().par_iter())
        .filter(|(row, d)| {
            d.switch != NO_SWITCH
                && (0..ns as u32).all(|s| {
                    // Every turn, a switch's channel then its head's, legal (or the last hop).
                    let Some(c1) = (s != d.switch).then(|| chan(s, row)).flatten() else {
                        return true;
                    };
                    let h = g.chan_head()[c1 as usize];
                    h == d.switch || chan(h, row).is_some_and(|c2| ud.legal_turn(g, c1, c2))
                })
        })
        .count() as u64
}

/// Routes every destination of `routing`'s fabric deadlock-free within one layer (module
/// documentation); rewrites the LFT and hop tables. `ud` gives the spanning tree's roots;
/// `input_weight` is the weight of every dependency edge of the input routes (`input`).
/// `bounds`: how far its searches may go.
pub(crate) fn run(
    prep: &Prepared,
    oriented: &Orientation,
    input: &[u8],
    input_weight: &[u32],
    seeding: Seeding,
    bounds: SearchBounds,
    routing: &mut Routing,
) -> Result<OneLaneOutcome, DfssspError> {
    let start = Instant::now();
    let ud = &oriented.ud;
    let (g, ei, dist) = (prep.g, &prep.ei, prep.dist());
    let tree = Tree::new(g, ud);
    let mut counts = vec![0u32; ei.num_edges()];
    tree.pin(g, ei, &mut counts);
    // Tree turns are legal Up*/Down* turns, so the legal order fits them, and every legal turn
    // the search adds later goes in without a search (on fat trees: every CA LID's SSSP routes).
    let mut topo = DynTopo::from_order(&ud.legal_order(g));
    if !topo.fits(g, ei, &counts) {
        let order = topological_order(g, ei, &counts)
            .ok_or_else(|| DfssspError::Internal("spanning tree routes have a cycle".into()))?;
        topo = DynTopo::from_order(&order);
    }
    let mut topo = topo.with_max_span(bounds.max_span);
    let seeds = seed_input_turns(g, ei, input_weight, seeding, &mut counts, &mut topo)?;
    let mut r = Router::new(g, ei, tree, counts, topo);
    let ns = g.num_switches();
    // Destinations whose routes in the tables are no longer the input's. The others keep theirs
    // unwritten: a destination's entries are a column of the switch-major tables, a cache miss
    // per switch and table, and most destinations keep their routes on tree-like fabrics.
    let mut changed = vec![false; g.dests().len()];
    let dests = interleaved_order(g);
    let mut udr = UpDownRouter::new(g, ud);
    let mut bal = Balancer::new(g);
    let mut out = OneLaneOutcome {
        roots: ud.roots.clone(),
        ..Default::default()
    };
    let passes = REROUTE_PASSES;
    for pass in 0..=passes {
        if pass == 1 {
            // The seeds have done their work: from now on only the routes hold the layer.
            for &e in &seeds {
                r.counts[e as usize] -= 1;
            }
        }
        for &di in &dests {
            super::past_deadline(bounds.deadline, start)?;
            let d = g.dests()[di as usize];
            // Switch LIDs carry no CA-to-CA traffic: routed once, with cheap cycle checks.
            let last = if d.exit_port == 0 { 0 } else { passes };
            if pass > last {
                continue;
            }
            let to = dist.to(d.switch);
            let input = &input[di as usize * ns..(di as usize + 1) * ns];
            if pass > 0 {
                if changed[di as usize] {
                    let (lft, hops) = (&routing.lft, &routing.hops);
                    r.remove(&d, |s| lft.port(s, d.lid), |s| hops.get(s, d.lid));
                } else {
                    r.remove(&d, |s| input[s as usize], |s| to[s as usize] as u8);
                }
            }
            let limit = if d.exit_port == 0 {
                SWITCH_LID_SEARCH_LIMIT
            } else {
                bounds.limit
            };
            // Switch LIDs whose SSSP routes do not fit try a balanced Up*/Down* tree next: on fat
            // trees, whose CA LIDs keep their legal SSSP routes, it always fits, without a search.
            let alt = if d.exit_port == 0 {
                Some(udr.route_dest_tree(&mut bal, &d))
            } else {
                None
            };
            out.restarts += r.search(&d, input, to, alt, limit);
            if pass == last {
                out.kept_dests += u64::from(r.kept);
                for &s in &r.members {
                    if s != d.switch {
                        out.tree_routes += u64::from(r.in_a[s as usize]);
                        out.nonminimal_routes += u64::from(r.depth[s as usize] != to[s as usize]);
                    }
                }
            }
            if !r.kept || changed[di as usize] {
                let depth = &r.depth;
                write_dest(
                    g,
                    &d,
                    &r.next,
                    |s| depth[s as usize],
                    &mut routing.lft,
                    &mut routing.hops,
                );
                changed[di as usize] = true;
            }
        }
    }
    out.searched_channels = r.topo.searched;
    Ok(out)
}

/// [`routing_order`], but the LIDs behind one switch spread out: the first LID of every switch,
/// then the second of every switch, and so on (CA and router LIDs before switch LIDs). Consecutive
/// destinations then sit in different places, so the CDG does not fill up around one switch's
/// routes first.
fn interleaved_order(g: &SwitchGraph) -> Vec<u32> {
    let mut order = routing_order(g);
    let mut seen = vec![0u32; g.num_switches()];
    let mut key = vec![(false, 0u32, 0u32); g.dests().len()];
    for &di in &order {
        let d = g.dests()[di as usize];
        let k = &mut seen[d.switch as usize];
        key[di as usize] = (d.exit_port == 0, *k, d.switch);
        *k += 1;
    }
    order.sort_by_key(|&di| key[di as usize]);
    order
}

/// The layer being built and the per-destination search state.
struct Router<'a> {
    g: &'a SwitchGraph,
    ei: &'a EdgeIndex,
    tree: Tree,
    comp: Vec<u32>,
    /// Routes (switch, LID) per dependency edge, plus one per pinned tree turn.
    counts: Vec<u32>,
    topo: DynTopo,
    sc: TopoScratch,
    /// Routes (CA-port sources) per channel.
    load: Vec<u64>,
    // Per destination:
    /// Switches of the destination's component.
    members: Vec<u32>,
    next: Vec<u32>,
    cost: Vec<u64>,
    depth: Vec<u16>,
    /// Switches that follow the tree.
    in_a: Vec<bool>,
    tree_next: Vec<u32>,
    settled: Vec<u32>,
    added: Vec<u32>,
    /// The search's queue of candidates `(cost, switch, channel)`: every one, or with
    /// `per_switch` one live entry per unsettled switch, its cheapest candidate channel (entries
    /// a cheaper candidate replaced stay behind, stale).
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// Whether the queue holds one candidate per switch (tree-like fabrics, see `search_once`)
    /// rather than every candidate.
    per_switch: bool,
    /// Per switch, its cheapest candidate channel not yet refused (`(u64::MAX, _)`: none).
    best: Vec<(u64, u32)>,
    /// Per channel, its cost as a candidate of its tail switch, valid when the stamp is the
    /// search's `stamp` (`u64::MAX`: refused).
    cand: Vec<(u64, u32)>,
    stamp: u32,
    flow: Vec<u64>,
    stack: Vec<u32>,
    hops: Vec<u16>,
    sort_counts: Vec<u32>,
    /// Whether the destination at hand kept its input routes.
    kept: bool,
    /// Channels the destination's cycle checks may still visit ([`WORK_PER_DEST`]).
    work_left: usize,
    work_per_dest: usize,
}

impl<'a> Router<'a> {
    fn new(
        g: &'a SwitchGraph,
        ei: &'a EdgeIndex,
        tree: Tree,
        counts: Vec<u32>,
        topo: DynTopo,
    ) -> Self {
        let ns = g.num_switches();
        Router {
            g,
            ei,
            tree,
            comp: g.components(),
            counts,
            topo,
            sc: TopoScratch::default(),
            load: vec![0; g.num_channels()],
            members: Vec::with_capacity(ns),
            next: vec![NO_CHANNEL; ns],
            cost: vec![u64::MAX; ns],
            depth: vec![0; ns],
            in_a: vec![false; ns],
            tree_next: vec![NO_CHANNEL; ns],
            settled: Vec::with_capacity(ns),
            added: Vec::new(),
            heap: BinaryHeap::new(),
            per_switch: false,
            best: vec![(u64::MAX, NO_CHANNEL); ns],
            cand: vec![(u64::MAX, 0); g.num_channels()],
            stamp: 0,
            flow: vec![0; ns],
            stack: Vec::new(),
            hops: vec![u16::MAX; ns],
            sort_counts: Vec::new(),
            kept: false,
            work_left: 0,
            work_per_dest: WORK_PER_DEST.max(g.num_channels() * WORK_PER_CHANNEL),
        }
    }

    /// Whether the dependency `c -> cu` (not in the layer) may join it: the incremental cycle
    /// check, bounded by `limit` channels and by what is left of the destination's
    /// [`WORK_PER_DEST`] (refusing is always safe; once it is spent only dependencies that go
    /// forward in the layer's order are taken).
    fn admits(&mut self, c: u32, cu: u32, limit: usize) -> bool {
        let before = self.topo.searched;
        let bound = limit.min(self.work_left);
        let ok = (self.topo).try_insert(self.g, self.ei, &self.counts, &mut self.sc, c, cu, bound);
        let spent = (self.topo.searched - before) as usize;
        self.work_left = self.work_left.saturating_sub(spent);
        ok
    }

    /// Takes destination `d`'s routes (every switch's port, and its distance along them: only
    /// their order matters) out of the loads and the CDG.
    fn remove(&mut self, d: &Dest, port: impl Fn(u32) -> u8, hops: impl Fn(u32) -> u8) {
        let g = self.g;
        let ns = g.num_switches() as u32;
        for s in 0..ns {
            let p = port(s);
            self.hops[s as usize] = if p == NO_PATH {
                u16::MAX
            } else {
                u16::from(hops(s))
            };
            self.next[s as usize] = if s == d.switch {
                NO_CHANNEL
            } else {
                g.channel_at(s, p).unwrap_or(NO_CHANNEL)
            };
        }
        order_by_distance(&self.hops, &mut self.settled, &mut self.sort_counts);
        for &s in &self.settled {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in self.settled.iter().rev() {
            let c = self.next[s as usize];
            if c == NO_CHANNEL {
                continue;
            }
            let f = self.flow[s as usize];
            self.load[c as usize] -= f;
            let h = g.chan_head()[c as usize];
            self.flow[h as usize] += f;
            let cu = self.next[h as usize];
            if cu != NO_CHANNEL {
                self.counts[self.ei.edge(g, c, cu) as usize] -= 1;
            }
        }
    }

    /// The tree's next hop of every switch towards `root`: down where `root` lies below, else up.
    fn tree_routes(&mut self, root: u32) {
        let g = self.g;
        self.tree_next.copy_from_slice(&self.tree.up);
        let mut v = root;
        while self.tree.up[v as usize] != NO_CHANNEL {
            let c = self.tree.up[v as usize];
            let p = g.chan_head()[c as usize];
            self.tree_next[p as usize] = g.chan_reverse()[c as usize];
            v = p;
        }
        self.tree_next[root as usize] = NO_CHANNEL;
    }

    /// Chooses destination `d`'s routes (`next`, `depth`), adds their dependencies to the CDG and
    /// their routes to the loads. Returns how many times the search was repeated.
    fn search(
        &mut self,
        d: &Dest,
        input: &[u8],
        to: &[u16],
        alt: Option<&[u32]>,
        limit: usize,
    ) -> u64 {
        let g = self.g;
        let root = d.switch;
        let my_comp = self.comp[root as usize];
        self.members.clear();
        self.members
            .extend((0..g.num_switches() as u32).filter(|&s| self.comp[s as usize] == my_comp));
        self.tree_routes(root);
        self.in_a.fill(false);
        self.in_a[root as usize] = true;
        self.work_left = self.work_per_dest;
        let mut restarts = 0;
        self.kept = self.try_input(root, input, to, limit);
        let fitted = self.kept || alt.is_some_and(|next| self.try_tree(root, next, limit));
        if !fitted {
            // Until `A` stops growing.
            while !self.search_once(root, limit) {
                restarts += 1;
            }
        }
        // The tree turns of `A`'s routes are pinned already; count them too, so that taking the
        // destination out again (the next pass) leaves the pins.
        for &s in &self.members {
            let c = self.next[s as usize];
            if self.in_a[s as usize] && c != NO_CHANNEL {
                let cu = self.next[g.chan_head()[c as usize] as usize];
                if cu != NO_CHANNEL {
                    self.counts[self.ei.edge(g, c, cu) as usize] += 1;
                }
            }
        }
        // Loads: every CA port sends one route along its switch's path (`settled` lists every
        // switch after the head of its channel).
        for &s in &self.settled {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in self.settled.iter().rev() {
            let c = self.next[s as usize];
            if c != NO_CHANNEL {
                let f = self.flow[s as usize];
                self.load[c as usize] += f;
                self.flow[g.chan_head()[c as usize] as usize] += f;
            }
        }
        restarts
    }

    /// Takes the input routes (`input`: the port of every switch, minimal when `to` gives their
    /// lengths) as they are when all their dependencies fit the layer; `false` (nothing changed)
    /// when one does not, or the routes are not minimal.
    fn try_input(&mut self, root: u32, input: &[u8], to: &[u16], limit: usize) -> bool {
        let g = self.g;
        self.next.fill(NO_CHANNEL);
        self.hops.fill(u16::MAX);
        for &s in &self.members {
            self.hops[s as usize] = to[s as usize];
            if s == root {
                continue;
            }
            match g.channel_at(s, input[s as usize]) {
                Some(c)
                    if to[g.chan_head()[c as usize] as usize].wrapping_add(1) == to[s as usize] =>
                {
                    self.next[s as usize] = c
                }
                _ => return false,
            }
        }
        self.fit_tree(limit)
    }

    /// Takes the tree `next` (every member switch but the root routed, [`NO_CHANNEL`] elsewhere)
    /// when all its dependencies fit the layer; `false` (nothing changed) when one does not.
    fn try_tree(&mut self, root: u32, next: &[u32], limit: usize) -> bool {
        let g = self.g;
        self.next.copy_from_slice(next);
        self.next[root as usize] = NO_CHANNEL;
        // Lengths along the tree, by walking up to a switch already measured.
        self.hops.fill(u16::MAX);
        self.hops[root as usize] = 0;
        for &s in &self.members {
            self.stack.clear();
            let mut v = s;
            while self.hops[v as usize] == u16::MAX {
                self.stack.push(v);
                let c = self.next[v as usize];
                if c == NO_CHANNEL || self.stack.len() > self.members.len() {
                    return false;
                }
                v = g.chan_head()[c as usize];
            }
            while let Some(v) = self.stack.pop() {
                let h = g.chan_head()[self.next[v as usize] as usize];
                self.hops[v as usize] = self.hops[h as usize] + 1;
            }
        }
        self.fit_tree(limit)
    }

    /// Adds the dependencies of `next` (lengths in `hops`) to the layer if all fit.
    fn fit_tree(&mut self, limit: usize) -> bool {
        let (g, ei) = (self.g, self.ei);
        order_by_distance(&self.hops, &mut self.settled, &mut self.sort_counts);
        self.added.clear();
        for i in 0..self.settled.len() {
            let c = self.next[self.settled[i] as usize];
            if c == NO_CHANNEL {
                continue;
            }
            let cu = self.next[g.chan_head()[c as usize] as usize];
            if cu == NO_CHANNEL {
                continue;
            }
            let e = ei.edge(g, c, cu) as usize;
            if self.counts[e] == 0 && !self.admits(c, cu, limit) {
                for &e in &self.added {
                    self.counts[e as usize] -= 1;
                }
                return false;
            }
            self.counts[e] += 1;
            self.added.push(e as u32);
        }
        for &s in &self.settled {
            self.depth[s as usize] = self.hops[s as usize];
        }
        true
    }

    /// Channel `c` (from switch `w` to a settled switch) becomes a candidate of `w` at `cost`:
    /// queued (with `per_switch`, if it is `w`'s cheapest). On tree-like fabrics a candidate
    /// whose dependency the layer would refuse unsearched, being too far back in its order
    /// ([`DynTopo::with_max_span`]), is dropped at once: most are such, a switch above the leaves
    /// would otherwise queue and refuse every down-then-up turn towards a CA above the leaves.
    #[inline(always)]
    fn offer(&mut self, w: u32, c: u32, cost: u64) {
        if !self.per_switch {
            self.heap.push(Reverse((cost, w, c)));
            return;
        }
        let (g, ei) = (self.g, self.ei);
        let cu = self.next[g.chan_head()[c as usize] as usize];
        if cu != NO_CHANNEL
            && self.topo.beyond_span(c, cu)
            && self.counts[ei.edge(g, c, cu) as usize] == 0
        {
            return;
        }
        self.cand[c as usize] = (cost, self.stamp);
        if (cost, c) < self.best[w as usize] {
            self.best[w as usize] = (cost, c);
            self.heap.push(Reverse((cost, w, c)));
        }
    }

    /// Costs, depths and next hops of the switches of `A`, along the tree: a tree route leads
    /// through switches of `A` only, to the root.
    fn settle_tree(&mut self) {
        let g = self.g;
        for &s in &self.members {
            if !self.in_a[s as usize] {
                continue;
            }
            self.stack.clear();
            let mut v = s;
            while self.cost[v as usize] == u64::MAX {
                self.stack.push(v);
                v = g.chan_head()[self.tree_next[v as usize] as usize];
            }
            while let Some(v) = self.stack.pop() {
                let c = self.tree_next[v as usize];
                let h = g.chan_head()[c as usize] as usize;
                self.cost[v as usize] = self.cost[h] + self.load[c as usize];
                self.depth[v as usize] = self.depth[h] + 1;
                self.next[v as usize] = c;
            }
        }
    }

    /// One search with `A` fixed; `false` (and `A` grown, the dependencies it added taken out
    /// again) when some switch could not be reached.
    fn search_once(&mut self, root: u32, limit: usize) -> bool {
        let (g, ei) = (self.g, self.ei);
        self.next.fill(NO_CHANNEL);
        self.cost.fill(u64::MAX);
        self.settled.clear();
        self.heap.clear();
        // Switches of `A` forward along the tree; their costs along it.
        self.cost[root as usize] = 0;
        self.depth[root as usize] = 0;
        self.settle_tree();
        // `A` in order of depth, so each after its next hop.
        self.hops.fill(u16::MAX);
        for &s in &self.members {
            if self.cost[s as usize] != u64::MAX {
                self.hops[s as usize] = self.depth[s as usize];
            }
        }
        order_by_distance(&self.hops, &mut self.settled, &mut self.sort_counts);
        // Candidates are tried in increasing (cost, switch, channel) order, as one queue of all
        // candidate channels gives them. On tree-like fabrics the queue holds only each switch's
        // cheapest one, the others wait in `cand` until it is refused: a switch above the leaves
        // collects one candidate per settled neighbour and sees many refused (ktree:18,3 with
        // aggregation nodes: 3.6 -> 2.8 s of CPU), while elsewhere most switches take their
        // first, and the bookkeeping costs more than it saves (6x6x6 torus: 22% more L1 misses).
        self.per_switch = self.topo.max_span() != usize::MAX;
        if self.per_switch {
            self.stamp = self.stamp.wrapping_add(1);
            if self.stamp == 0 {
                self.cand.fill((u64::MAX, 0));
                self.stamp = 1;
            }
            for &s in &self.members {
                self.best[s as usize] = (u64::MAX, NO_CHANNEL);
            }
        }
        for i in 0..self.settled.len() {
            let s = self.settled[i];
            for &c in g.in_channels(s) {
                let w = g.chan_tail()[c as usize];
                if self.cost[w as usize] == u64::MAX {
                    self.offer(w, c, self.cost[s as usize] + self.load[c as usize]);
                }
            }
        }
        self.added.clear();
        while let Some(Reverse((k, w, c))) = self.heap.pop() {
            if self.cost[w as usize] != u64::MAX
                || self.per_switch && self.best[w as usize] != (k, c)
            {
                continue; // settled, or a stale entry
            }
            let u = g.chan_head()[c as usize];
            let cu = self.next[u as usize];
            if cu != NO_CHANNEL {
                let e = ei.edge(g, c, cu) as usize;
                if self.counts[e] == 0 && !self.admits(c, cu, limit) {
                    if !self.per_switch {
                        continue;
                    }
                    // Refused: the switch's next cheapest candidate takes its place.
                    self.cand[c as usize].0 = u64::MAX;
                    let mut b = (u64::MAX, NO_CHANNEL);
                    for c2 in g.out_channels(w) {
                        let (k2, stamp) = self.cand[c2 as usize];
                        if stamp == self.stamp && (k2, c2) < b {
                            b = (k2, c2);
                        }
                    }
                    self.best[w as usize] = b;
                    if b.0 != u64::MAX {
                        self.heap.push(Reverse((b.0, w, b.1)));
                    }
                    continue;
                }
                self.counts[e] += 1;
                self.added.push(e as u32);
            }
            self.cost[w as usize] = k;
            self.next[w as usize] = c;
            self.depth[w as usize] = self.depth[u as usize] + 1;
            self.settled.push(w);
            for &c2 in g.in_channels(w) {
                let x = g.chan_tail()[c2 as usize];
                if self.cost[x as usize] == u64::MAX {
                    self.offer(x, c2, k + self.load[c2 as usize]);
                }
            }
        }
        let mut grew = false;
        for &s in &self.members {
            if self.cost[s as usize] == u64::MAX {
                // Unreachable: it and its tree path follow the tree.
                let mut v = s;
                while !self.in_a[v as usize] {
                    self.in_a[v as usize] = true;
                    v = g.chan_head()[self.tree_next[v as usize] as usize];
                }
                grew = true;
            }
        }
        if grew {
            for &e in &self.added {
                self.counts[e as usize] -= 1;
            }
        }
        !grew
    }
}
