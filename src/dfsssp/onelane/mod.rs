//! One lane, full bandwidth: deadlock-free routes within a single layer when its SSSP routes have
//! a cyclic CDG (QoS off on tori and random fabrics), without falling back to Up*/Down* wholesale.
//!
//! **A channel order, then balanced searches within it.** Before any route is searched, the
//! channels are put in one total order ([`seeds`]): it starts as the Up*/Down* order of a BFS
//! spanning tree and is then fitted to the input (SSSP) routes: their dependencies, heaviest
//! first, go in where they close no cycle (an incremental topological order, [`super::dyntopo`]),
//! and a local search moves channels to where the forward dependencies weigh most. A route may
//! then take the turn `c -> c'` only when `c` comes before `c'` in this order: every route's
//! dependencies go forward in one order, so the layer's CDG is acyclic by construction, whatever
//! the routes are, and checking a turn costs two array reads. Destinations are routed one by
//! one, Nue-like (Domke, Hoefler & Matsuoka, HPDC'16), each by a Dijkstra search backwards from
//! its switch over the channels, weighted by the routes already placed on them (no per-hop cost:
//! none tried did better, README "Measurements behind the design"), that only offers a channel
//! whose turn into the next hop goes forward. Routes are therefore minimal where the order allows
//! and balanced detours elsewhere. A destination first tries its input routes whole: where all
//! their turns go forward they stay (on fat trees every CA LID's do). A second pass takes every
//! destination out again and routes it against all the others (rip-up and reroute).
//!
//! No cycle check runs while routing: admitting a backward turn after a bounded check through
//! the layer bought at most 0.4% of Λ for two thirds of the time, and made the cost depend on
//! how full the layer was rather than on the fabric (README, "One lane").
//!
//! **Completeness.** The order starts from the tree's turns (up to the lowest common ancestor,
//! then down) and keeps them forward, so every switch can always reach every destination along
//! the tree. A switch the search cannot reach joins the set `A` of switches that forward along
//! the tree, with every switch on its tree path (so `A` is closed under tree next hops), and the
//! destination is searched again with `A` fixed; with `A` = everything the tree routes are used,
//! so this ends. Unlike Up*/Down* on all links (the escape of more lanes, [`super::escape`]) the
//! tree fixes only turns between tree channels; the fitted order decides the others.
//!
//! **Every data route legal.** Where the routes from switches with CAs to CA LIDs are all legal
//! under one Up*/Down* order ([`orientation`]: fat trees, with failed cables and switches too),
//! no search runs: every route is made legal under that order, the data routes as they are
//! ([`legal`], `O(S)` per destination).
//!
//! **Cost.** Fitting the order: the input's dependency edges sorted, one bounded cycle check
//! each, and the local search's sweeps ([`seeds`]). Routing: per destination and pass, a search
//! over the `C` channels of its component whose queue holds one entry per switch, lowered when a
//! cheaper candidate appears ([`queue`], `O(C log S)`), and `O(S)` to write its column of the
//! tables and update the loads; in all `O(D C log S)` for `D` destination LIDs, the order of SSSP's own cost, independent of
//! faults and of how full the layer is. The tables are written only for destinations whose routes
//! changed.

use rayon::prelude::*;
use std::time::Instant;

use crate::balance::{routing_order, write_dest, Balancer};
use crate::bits;
use crate::graph::{order_by_distance, Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{Routing, SwitchLidTable, NO_PATH};
use crate::updown::{best_roots, UpDown, UpDownRouter};

use super::cdg::{topological_order, CountChange, EdgeIndex};
use super::dyntopo::DynTopo;
use super::prepared::Prepared;
use super::prepared::WorkingRoutes;
use super::{layer_table, routes_per_layer, DfssspError, LayerReport, OneLaneReport};

pub(crate) mod legal;
mod queue;
mod seeds;
#[cfg(test)]
mod tests;

use queue::{pack, unpack, SwitchQueue};
use seeds::seed_input_turns;

/// Rip-up-and-reroute passes after the first: each destination is taken out (its loads and
/// dependencies) and searched again against all the others. One pass raises Λ on the 6x6x6 torus
/// from 0.302 to 0.3095 (random 128-switch fabric: 0.1190 to 0.1197); more change little (0.3102
/// after three, random none) and cost a pass each.
const REROUTE_PASSES: usize = 1;

/// On tree-like fabrics (the input routes of at least half the destinations are legal Up*/Down*
/// routes, [`legal_input_dests`]), while the order is fitted ([`seeds`]) a dependency whose
/// channels lie more than this many positions apart is refused without a cycle check, as in the
/// escape's layers ([`DynTopo::with_max_span`]). There the order holds nearly every legal turn of
/// the fabric, and a down-then-up turn towards a CA above the leaves almost always closes a
/// cycle, found only after searching hundreds of channels (12-ary 3-tree with an aggregation node
/// on every switch: 99.8% of such checks found one, after 670 channels on average).
pub(crate) const TREE_LIKE_SPAN: usize = 1024;

/// How the layer was seeded (the report's word): by the searches' channel order fitted to the
/// input routes ([`seed_input_turns`]), or not at all where every data route was legal and no
/// search ran ([`legal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seeding {
    /// The greedy seeds, improved by the local search.
    Sifted,
    /// None: the routes made legal under one Up*/Down* order.
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
    /// Channels the cycle checks searched while the order was fitted.
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

/// Stage 2 with a budget of one lane and a cycle in it: one-lane routing ([`onelane`]), which
/// leaves every route in layer 0.
pub(super) fn route(
    prep: &Prepared,
    routes: WorkingRoutes,
    oriented: Orientation,
    deadline: Option<Instant>,
    report: &mut LayerReport,
) -> Result<(), DfssspError> {
    let g = prep.g;
    let t2 = Instant::now();
    let ud = &oriented.ud;
    // Tree-like (most destinations' routes legal under it): cycle checks skip far turns. (Not
    // counted where no search runs.)
    let legal = match oriented.data_legal {
        true => 0,
        false => legal_input_dests(g, ud, &routes.cols),
    };
    let dests = g.dests().iter().filter(|d| d.switch != NO_SWITCH).count() as u64;
    let tree_like = 2 * legal >= dests || oriented.data_legal;
    let (input, input_weight) = (&routes.cols[..], &routes.counts0[..]);
    let (out, seeding, cand) = if oriented.data_legal {
        // Every data route legal: every route made legal, no search ([`legal`]).
        let mut cand = routes.routing.clone();
        let out = legal::run(prep, &oriented.ud, input, deadline, &mut cand)?;
        (out, Seeding::Unseeded, cand)
    } else {
        let bounds = SearchBounds {
            max_span: match tree_like {
                true => TREE_LIKE_SPAN,
                false => usize::MAX,
            },
            deadline,
        };
        // The layer seeded with the input routes' heaviest acyclic part (sifted). Until
        // 2026-12-08 it was also routed without seeds, beside it, and the higher Λ estimated over
        // 200 patterns kept: on 26 fabrics (tori, meshes, hypercubes, dragonflies, rails, random
        // fabrics, faulty ones among them) the unseeded routing was kept once, on
        // dragonfly:4,2,2,9, where its estimate was 0.06% higher and its Λ over 1000 patterns
        // 0.9% lower (README, "Measurements behind the design").
        let mut cand = routes.routing.clone();
        let out = run(prep, &oriented, input, input_weight, bounds, &mut cand)?;
        (out, Seeding::Sifted, cand)
    };
    let routing = routes.routing;
    *routing = cand;
    report.one_lane = Some(OneLaneReport {
        seeding: seeding.name(),
        tree_roots: out.roots,
        legal_input_dests: legal,
        tree_like,
        restarts: out.restarts,
        kept_dests: out.kept_dests,
        tree_routes: out.tree_routes,
        nonminimal_routes: out.nonminimal_routes,
        searched_channels: out.searched_channels,
        legal_rerouted: oriented.data_legal.then_some(out.rerouted),
    });
    report.seconds_escape = t2.elapsed().as_secs_f64();
    report.layers_before_balancing = 1;
    report.layers_used = 1;
    let layers = SwitchLidTable::new(g.num_switches(), routing.lft.max_lid, 0);
    let per_layer = routes_per_layer(g, routing, &layers);
    report.routes = per_layer.iter().sum();
    report.routes_per_layer = per_layer;
    report.kept_routes = report.routes;
    report.minimal_fraction = if report.routes == 0 {
        1.0
    } else {
        (report.routes - out.nonminimal_routes) as f64 / report.routes as f64
    };
    routing.num_layers = 1;
    routing.layers = layer_table(layers, 1);
    Ok(())
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

/// How far one-lane routing may go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SearchBounds {
    /// While the order is fitted, a dependency whose channels lie more than this many positions
    /// apart in it is refused without a cycle check ([`TREE_LIKE_SPAN`] on tree-like fabrics,
    /// else unbounded).
    pub max_span: usize,
    /// Stop ([`DfssspError::Stopped`]) once past it or projected past it ([`super::Pace`]),
    /// checked per destination.
    pub deadline: Option<Instant>,
}

/// The dependency edges (a bitmap) that routes from switches with CAs to CA LIDs take: the turns of data
/// traffic in `input` (destination-major ports). On a fat tree they climb, then descend,
/// whatever cables fail; routes from switches above the leaves may have to turn down, then up.
/// `O(sum of path lengths from those switches)`, in parallel over destinations.
fn data_turns(g: &SwitchGraph, ei: &EdgeIndex, input: &[u8]) -> Vec<u64> {
    let ns = g.num_switches();
    let words = bits::words(ei.num_edges());
    if ns == 0 {
        return vec![0; words];
    }
    let sources: Vec<u32> = (0..ns as u32)
        .filter(|&s| g.terminal_count()[s as usize] > 0)
        .collect();
    let rows = input.par_chunks(ns).zip(g.dests().par_iter());
    crate::par::sized(rows, input.len())
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
    let ns = g.num_switches();
    if ns == 0 {
        return 0;
    }
    let chan = |s: u32, row: &[u8]| g.channel_at(s, row[s as usize]);
    let rows = input.par_chunks(ns).zip(g.dests().par_iter());
    crate::par::sized(rows, input.len())
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
/// documentation); rewrites the LFT and hop tables. `oriented` gives the spanning tree's roots;
/// `input_weight` is the weight of every dependency edge of the input routes (`input`), whose
/// heaviest acyclic part seeds the channel order ([`seed_input_turns`]). `bounds`: how far it
/// may go.
pub(crate) fn run(
    prep: &Prepared,
    oriented: &Orientation,
    input: &[u8],
    input_weight: &[u32],
    bounds: SearchBounds,
    routing: &mut Routing,
) -> Result<OneLaneOutcome, DfssspError> {
    let start = Instant::now();
    let ud = &oriented.ud;
    let (g, ei, dist) = (prep.g, &prep.ei, prep.dist());
    let tree = Tree::new(g, ud);
    let mut counts = vec![0u32; ei.num_edges()];
    tree.pin(g, ei, &mut counts);
    // Tree turns are legal Up*/Down* turns, so the legal order fits them (and, on fat trees,
    // every CA LID's SSSP routes).
    let mut topo = DynTopo::from_order(&ud.legal_order(g));
    if !topo.fits(g, ei, &counts) {
        let order = topological_order(g, ei, &counts)
            .ok_or_else(|| DfssspError::Internal("spanning tree routes have a cycle".into()))?;
        topo = DynTopo::from_order(&order);
    }
    let mut topo = topo.with_max_span(bounds.max_span);
    seed_input_turns(
        g,
        ei,
        input_weight,
        &mut counts,
        &mut topo,
        bounds.deadline,
        start,
    )?;
    let mut out = OneLaneOutcome {
        roots: ud.roots.clone(),
        searched_channels: topo.searched,
        ..Default::default()
    };
    let mut r = Router::new(g, tree, topo.into_positions());
    let ns = g.num_switches();
    // Destinations whose routes in the tables are no longer the input's. The others keep theirs
    // unwritten: a destination's entries are a column of the switch-major tables, a cache miss
    // per switch and table, and most destinations keep their routes on tree-like fabrics.
    let mut changed = vec![false; g.dests().len()];
    let dests = interleaved_order(g);
    let mut udr = UpDownRouter::new(g, ud);
    let mut bal = Balancer::new(g);
    // Switch LIDs carry no CA-to-CA traffic: routed once.
    let last_pass = |d: &Dest| if d.exit_port == 0 { 0 } else { REROUTE_PASSES };
    let steps = dests
        .iter()
        .map(|&di| last_pass(&g.dests()[di as usize]) + 1)
        .sum();
    let mut pace = super::Pace::new(bounds.deadline, start, steps);
    for pass in 0..=REROUTE_PASSES {
        for &di in &dests {
            let d = g.dests()[di as usize];
            let last = last_pass(&d);
            if pass > last {
                continue;
            }
            pace.step()?;
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
            // Switch LIDs whose SSSP routes do not fit try a balanced Up*/Down* tree next: on fat
            // trees, whose CA LIDs keep their legal SSSP routes, it always fits, without a search.
            let alt = if d.exit_port == 0 {
                Some(udr.route_dest_tree(&mut bal, &d))
            } else {
                None
            };
            out.restarts += r.search(&d, input, to, alt);
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

/// The channel order, the loads, and the per-destination search state.
struct Router<'a> {
    g: &'a SwitchGraph,
    tree: Tree,
    comp: Vec<u32>,
    /// Every channel's position in the order: a route may turn from `c` into `c'` only when
    /// `ord[c] < ord[c']`.
    ord: Vec<u32>,
    /// The channels entering each switch (`g.in_start()` ranges), ascending in the order: those
    /// a route may take into a switch that forwards by `c'` are a prefix.
    ins: Vec<InChannel>,
    /// Routes (CA-port sources) per channel.
    load: Vec<u64>,
    // Per destination:
    /// Switches of the destination's component.
    members: Vec<u32>,
    next: Vec<u32>,
    /// Per switch: its cost once settled, and its cheapest candidate so far.
    label: Vec<Label>,
    depth: Vec<u16>,
    /// Switches that follow the tree.
    in_a: Vec<bool>,
    tree_next: Vec<u32>,
    settled: Vec<u32>,
    /// The search's queue: each unsettled switch's cheapest candidate `(cost, switch, channel)`.
    queue: SwitchQueue,
    flow: Vec<u64>,
    stack: Vec<u32>,
    hops: Vec<u16>,
    sort_counts: Vec<u32>,
    /// Whether the destination at hand kept its input routes.
    kept: bool,
    /// Per destination switch, the switches of `A` in its last search (but itself).
    followers: Vec<Vec<u32>>,
}

/// A switch in a search: its cost once settled (`u64::MAX` until then) and its cheapest
/// candidate `(cost, channel)` so far (`u64::MAX`: none; [`Label::SETTLED`] once settled, below
/// every candidate, so a relaxation needs no test of its own for settled switches: that test's
/// branch, unpredictable, cost more than the rest of the scan).
#[derive(Clone, Copy)]
struct Label {
    cost: u64,
    best: (u64, u32),
}

impl Label {
    const UNSEEN: Label = Label {
        cost: u64::MAX,
        best: (u64::MAX, NO_CHANNEL),
    };
    /// `best` of a settled switch: no candidate `(cost, channel)` is below it.
    const SETTLED: (u64, u32) = (0, 0);

    #[inline(always)]
    fn settle(&mut self, cost: u64) {
        self.cost = cost;
        self.best = Label::SETTLED;
    }
}

/// A channel into a switch, with what the search reads of it.
#[derive(Clone, Copy)]
struct InChannel {
    ord: u32,
    tail: u32,
    chan: u32,
}

impl<'a> Router<'a> {
    fn new(g: &'a SwitchGraph, tree: Tree, ord: Vec<u32>) -> Self {
        let ns = g.num_switches();
        let mut ins = Vec::with_capacity(g.num_channels());
        for s in 0..ns as u32 {
            let from = ins.len();
            ins.extend(g.in_channels(s).iter().map(|&c| InChannel {
                ord: ord[c as usize],
                tail: g.chan_tail()[c as usize],
                chan: c,
            }));
            ins[from..].sort_unstable_by_key(|e| e.ord);
        }
        Router {
            g,
            tree,
            comp: g.components(),
            ord,
            ins,
            load: vec![0; g.num_channels()],
            members: Vec::with_capacity(ns),
            next: vec![NO_CHANNEL; ns],
            label: vec![Label::UNSEEN; ns],
            depth: vec![0; ns],
            in_a: vec![false; ns],
            tree_next: vec![NO_CHANNEL; ns],
            settled: Vec::with_capacity(ns),
            queue: SwitchQueue::new(ns),
            flow: vec![0; ns],
            stack: Vec::new(),
            hops: vec![u16::MAX; ns],
            sort_counts: Vec::new(),
            kept: false,
            followers: vec![Vec::new(); ns],
        }
    }

    /// Whether a route may take channel `c` when the switch it leads to forwards by `cu`
    /// ([`NO_CHANNEL`] at the destination's switch: no turn).
    #[inline(always)]
    fn turn_allowed(&self, c: u32, cu: u32) -> bool {
        cu == NO_CHANNEL || self.ord[c as usize] < self.ord[cu as usize]
    }

    /// Adds or takes out (by `change`) the loads of the routes in `next`, every CA port sending
    /// one route along its switch's path (`settled` lists every switch after the head of its
    /// channel).
    fn apply_loads(&mut self, change: CountChange) {
        let g = self.g;
        for &s in &self.settled {
            self.flow[s as usize] = u64::from(g.terminal_count()[s as usize]);
        }
        for &s in self.settled.iter().rev() {
            let c = self.next[s as usize];
            if c != NO_CHANNEL {
                let f = self.flow[s as usize];
                let l = &mut self.load[c as usize];
                *l = match change {
                    CountChange::Add => *l + f,
                    CountChange::Remove => *l - f,
                };
                self.flow[g.chan_head()[c as usize] as usize] += f;
            }
        }
    }

    /// Takes destination `d`'s routes (every switch's port, and its distance along them: only
    /// their order matters) out of the loads.
    fn remove(&mut self, d: &Dest, port: impl Fn(u32) -> u8, hops: impl Fn(u32) -> u8) {
        let g = self.g;
        for s in 0..g.num_switches() as u32 {
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
        self.apply_loads(CountChange::Remove);
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

    /// Chooses destination `d`'s routes (`next`, `depth`) and adds them to the loads. Returns
    /// how many times the search was repeated.
    fn search(&mut self, d: &Dest, input: &[u8], to: &[u16], alt: Option<&[u32]>) -> u64 {
        let g = self.g;
        let root = d.switch;
        let my_comp = self.comp[root as usize];
        self.members.clear();
        self.members
            .extend((0..g.num_switches() as u32).filter(|&s| self.comp[s as usize] == my_comp));
        self.tree_routes(root);
        self.in_a.fill(false);
        self.in_a[root as usize] = true;
        let mut restarts = 0;
        self.kept = self.try_input(root, input, to);
        let fitted = self.kept || alt.is_some_and(|next| self.try_tree(root, next));
        if !fitted {
            // `A` starts as it ended for the switch's previous LID: the same switches are
            // unreachable for the next one, and each found again costs a whole search (random
            // 1,250 switches: 20,595 of 42,500 searches repeated; with this, 653).
            for &s in &self.followers[root as usize] {
                self.in_a[s as usize] = true;
            }
            // Until `A` stops growing.
            while !self.search_once(root) {
                restarts += 1;
            }
            let followers = &mut self.followers[root as usize];
            followers.clear();
            followers.extend(
                (self.members.iter().copied()).filter(|&s| self.in_a[s as usize] && s != root),
            );
        }
        self.apply_loads(CountChange::Add);
        restarts
    }

    /// Takes the input routes (`input`: the port of every switch, minimal when `to` gives their
    /// lengths) when every turn of theirs goes forward in the order; `false` when one does not,
    /// or the routes are not minimal.
    fn try_input(&mut self, root: u32, input: &[u8], to: &[u16]) -> bool {
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
        self.fit_tree()
    }

    /// Takes the tree `next` (every member switch but the root routed, [`NO_CHANNEL`] elsewhere)
    /// when every turn of it goes forward in the order; `false` when one does not.
    fn try_tree(&mut self, root: u32, next: &[u32]) -> bool {
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
        self.fit_tree()
    }

    /// Whether every turn of `next` (lengths in `hops`) goes forward; then its switches' depths
    /// are set and `settled` lists them by distance.
    fn fit_tree(&mut self) -> bool {
        let g = self.g;
        let fits = self.members.iter().all(|&s| {
            let c = self.next[s as usize];
            c == NO_CHANNEL || self.turn_allowed(c, self.next[g.chan_head()[c as usize] as usize])
        });
        if !fits {
            return false;
        }
        order_by_distance(&self.hops, &mut self.settled, &mut self.sort_counts);
        for &s in &self.settled {
            self.depth[s as usize] = self.hops[s as usize];
        }
        true
    }

    /// Switch `u` is settled at `cost` (forwarding by `next[u]`): every unsettled switch with a
    /// channel into it whose turn goes forward gets that channel as a candidate, queued if it is
    /// the switch's cheapest so far. Channels are taken in the order's sequence, so the first
    /// whose turn goes backwards ends the scan.
    #[inline(always)]
    fn relax(&mut self, u: u32, cost: u64) {
        let cu = self.next[u as usize];
        let bound = if cu == NO_CHANNEL {
            u32::MAX
        } else {
            self.ord[cu as usize]
        };
        let range =
            self.g.in_start()[u as usize] as usize..self.g.in_start()[u as usize + 1] as usize;
        for e in &self.ins[range] {
            if e.ord >= bound {
                break;
            }
            // (A settled switch's `best` is below every candidate.)
            let label = &mut self.label[e.tail as usize];
            let k = cost + self.load[e.chan as usize];
            if (k, e.chan) < label.best {
                label.best = (k, e.chan);
                self.queue.push_or_lower(pack(k, e.tail, e.chan));
            }
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
            while self.label[v as usize].cost == u64::MAX {
                self.stack.push(v);
                v = g.chan_head()[self.tree_next[v as usize] as usize];
            }
            while let Some(v) = self.stack.pop() {
                let c = self.tree_next[v as usize];
                let h = g.chan_head()[c as usize] as usize;
                let cost = self.label[h].cost + self.load[c as usize];
                self.label[v as usize].settle(cost);
                self.depth[v as usize] = self.depth[h] + 1;
                self.next[v as usize] = c;
            }
        }
    }

    /// One search with `A` fixed; `false` (and `A` grown) when some switch could not be reached.
    fn search_once(&mut self, root: u32) -> bool {
        let g = self.g;
        self.next.fill(NO_CHANNEL);
        self.label.fill(Label::UNSEEN);
        self.settled.clear();
        self.queue.clear();
        // Switches of `A` forward along the tree; their costs along it.
        self.label[root as usize].settle(0);
        self.depth[root as usize] = 0;
        self.settle_tree();
        // `A` in order of depth, so each after its next hop.
        self.hops.fill(u16::MAX);
        for &s in &self.members {
            if self.label[s as usize].cost != u64::MAX {
                self.hops[s as usize] = self.depth[s as usize];
            }
        }
        order_by_distance(&self.hops, &mut self.settled, &mut self.sort_counts);
        // Candidates are taken in increasing (cost, switch, channel) order; the queue holds each
        // switch's cheapest one (a queue of every candidate gives the same order, with a queue as
        // long as the channels and its stale entries popped too).
        for i in 0..self.settled.len() {
            let s = self.settled[i];
            self.relax(s, self.label[s as usize].cost);
        }
        while let Some(key) = self.queue.pop() {
            let (k, w, c) = unpack(key);
            let label = &mut self.label[w as usize];
            debug_assert!(label.cost == u64::MAX && label.best == (k, c));
            let u = g.chan_head()[c as usize];
            label.settle(k);
            self.next[w as usize] = c;
            self.depth[w as usize] = self.depth[u as usize] + 1;
            self.settled.push(w);
            self.relax(w, k);
        }
        let mut grew = false;
        for &s in &self.members {
            if self.label[s as usize].cost == u64::MAX {
                // Unreachable: it and its tree path follow the tree.
                let mut v = s;
                while !self.in_a[v as usize] {
                    self.in_a[v as usize] = true;
                    v = g.chan_head()[self.tree_next[v as usize] as usize];
                }
                grew = true;
            }
        }
        !grew
    }
}
