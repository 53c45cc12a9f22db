//! Incremental re-routing after a fabric change: keep every route that survived, route again only
//! what crossed a vanished element or leads to a new LID (Bermúdez et al.: assimilate a change
//! fast with provisional routes, improve later).
//!
//! Given the routing last uploaded and the changed fabric:
//! 1. Switches are matched by node GUID, channels by (switch, port) with the same switch and port
//!    at the far end, destinations by LID held by the same port on the same switch port
//!    ([`diff::same_dest`]). A destination that is new or moved is routed again from every switch.
//! 2. A path (switch, LID) is *kept* when every channel it crosses still exists: its LFT entry,
//!    hop count and layer are copied. Keeping is closed downstream (a kept path runs only through
//!    kept paths), so the kept entries still deliver.
//! 3. Every other switch of the destination's part of the fabric gets a new next hop: a shortest
//!    path (Dijkstra with unit weights, started from the kept switches at their path lengths)
//!    into the kept tree, choosing among equally short next hops the channel with the least load,
//!    where the loads are those of all kept routes plus the new ones placed so far (the balancing
//!    of Hoefler et al., restricted to what moves).
//! 4. Layers (deadlock-free routings): the channel dependency graph of every layer is rebuilt
//!    from the kept paths, which are acyclic since they were part of acyclic layers; each new
//!    path then goes, edge by edge, into its old layer when the incremental cycle check
//!    (Pearce–Kelly, as the escape layer uses) accepts it, else into the first layer that does,
//!    else into a new layer within the budget. A path that fits nowhere means a full computation.
//!
//! Whatever this cannot do ([`FullReason`]) makes the caller compute everything afresh; the
//! independent verification runs on the result either way.
//!
//! **Cost.** Whatever changed: matching the fabrics, `O(S+C)`, and the old tables copied row by row
//! into the result (LFT, hop counts, layers: `S·max_lid` bytes each). The survey (`survey.rs`):
//! `O(S)` per destination it traverses, all `D`, or, from a [`RoutingSummary`] when links were only
//! lost, only those whose trees crossed a vanished channel (found in `O(max_lid)` per such channel,
//! the rest from the summary in `O(S+C+D+L·E)`, `E ≤ C·radix`). Pass 2 (`place.rs`): `O(S)` per
//! destination routed again, `O(radix·log C + hops)` per path routed again plus its layer, and
//! `O(L·(C+E))` to check the layers (`layering.rs`). A repair (cables or switches back) adds a fresh
//! computation (the guide), both fabrics' switch distances, `O(S·(S+C))`, and a survey of all `D`.

pub mod diff;
mod guide;
mod layering;
mod place;
mod survey;

use layering::{LayerChecks, LayerTable};
use serde::Serialize;
use thiserror::Error;

use crate::dfsssp::cdg::EdgeIndex;
use crate::fabric::Fabric;
use crate::graph::{SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use rayon::prelude::*;

use crate::routing::{DestPaths, Lft, Routing, SwitchLidTable, NO_PATH};

pub use diff::{diff, RoutedFabric, RoutingDiff};

/// Why a change is not handled incrementally: the caller computes the routing afresh.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum FullReason {
    #[error("the LMC changed (port {port_guid:#018x}: {old} -> {new})")]
    LmcChanged { port_guid: u64, old: u8, new: u8 },
    #[error("the previous routing uses {used} layers, the budget is now {budget}")]
    Budget { used: u8, budget: u8 },
    #[error("internal: {0}")]
    Internal(&'static str),
    #[error(
        "the new path from switch {switch:#018x} to LID {lid} closes a credit loop in every \
         layer"
    )]
    NoLayer { switch: u64, lid: u16 },
    #[error("the kept routes of layer {layer} have a cycle")]
    KeptCycle { layer: u8 },
    #[error("the fabric has no switches")]
    NoSwitches,
}

/// A repair's guided routes against the fresh routing of the repaired fabric: Λ over
/// [`REPAIR_PATTERNS`] bisection patterns and the highest channel load.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RepairMeasure {
    pub lambda: f64,
    pub fresh_lambda: f64,
    pub max_load: u64,
    pub fresh_max_load: u64,
}

/// What one incremental re-route did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RerouteStats {
    pub switches_gone: usize,
    pub switches_new: usize,
    /// Switch-to-switch channels (link directions) gone and new.
    pub channels_gone: usize,
    pub channels_new: usize,
    /// LIDs routed from scratch (new, or held by another port or switch port than before).
    pub dests_new: usize,
    /// LIDs that disappeared.
    pub dests_gone: usize,
    /// Destinations with at least one path routed again.
    pub dests_touched: usize,
    /// (switch, LID) paths kept as they were.
    pub paths_kept: u64,
    /// (switch, LID) paths given a new route.
    pub paths_rerouted: u64,
    /// Re-routed paths of switches that existed before whose layer changed (their new path could
    /// not live in their old layer).
    pub layer_moves: u64,
    /// Layers in use afterwards.
    pub layers: u8,
    /// After a repair: the guided routes measured below a fresh computation's, so every path
    /// follows the fresh routing ([`guide`]).
    pub followed_fresh: bool,
    /// After a repair: how the guided routes measured against the fresh routing.
    pub repair: Option<RepairMeasure>,
    /// The highest channel load afterwards (routes per channel, every CA/router port a source):
    /// what the balancing minimises, to compare with a full computation's.
    pub max_load: u64,
    /// A re-balance in place: how many overloaded channels had their paths routed again.
    pub shed_channels: usize,
    /// A re-routed path fit no layer and the re-routed tables were made deadlock-free in one
    /// layer instead ([`crate::engine`]): the routes made legal Up*/Down* routes then.
    pub relayered: Option<u64>,
}

impl RerouteStats {
    pub fn summary(&self) -> String {
        format!(
            "{} switches gone, {} new; {} link directions gone, {} new; {} LIDs new or moved, {} \
             gone; {} (switch, LID) paths re-routed over {} LIDs, {} kept; {} changed layer; {} \
             layer(s), max channel load {}",
            self.switches_gone,
            self.switches_new,
            self.channels_gone,
            self.channels_new,
            self.dests_new,
            self.dests_gone,
            self.paths_rerouted,
            self.dests_touched,
            self.paths_kept,
            self.layer_moves,
            self.layers,
            self.max_load
        ) + &(if self.shed_channels > 0 {
            format!(
                "; re-balanced in place: the paths over {} overloaded channel(s) routed again",
                self.shed_channels
            )
        } else {
            String::new()
        }) + &(match self.relayered {
            Some(legal) => format!(
                "; a re-routed path fit no layer: the tables made deadlock-free in one layer \
                 instead ({legal} route(s) made legal Up*/Down* routes), spread over the lanes"
            ),
            None => String::new(),
        }) + &self
            .repair
            .map(|m| {
                format!(
                    "; repair: Λ {:.4} and max channel load {} guided, a fresh computation's {:.4} \
                     and {}{}",
                    m.lambda,
                    m.max_load,
                    m.fresh_lambda,
                    m.fresh_max_load,
                    if self.followed_fresh {
                        ": every path follows the fresh computation"
                    } else {
                        ""
                    }
                )
            })
            .unwrap_or_default()
    }
}

/// How a layer should be chosen for re-routed paths.
#[derive(Clone, Copy, Debug)]
pub struct RerouteOptions {
    /// The most layers the result may use.
    pub budget: u8,
    /// Whether the layers must stay free of credit loops (dfsssp-rs; not sssp-rs).
    pub deadlock_free: bool,
}

/// What a re-route can start from besides the tables: the previous routing's channel loads (as
/// [`crate::balance::channel_loads`] counts them) and its per-layer CDG edges (as
/// [`crate::verify::VerifyReport::layer_edges`] gives them). With it, only the destinations whose
/// trees used a vanished channel are traversed when nothing but links changed.
#[derive(Clone, Debug, Default)]
pub struct RoutingSummary {
    pub loads: Vec<u64>,
    pub layer_edges: Vec<Vec<u64>>,
    /// The verification's paths per layer and unreachable pairs: with `layer_edges`, what
    /// [`crate::verify::verify_since`] starts from (empty when the routing was not verified).
    pub paths_per_layer: Vec<u64>,
    pub unreachable: u64,
    /// `layer_edges` may hold edges of paths that are gone (from an incremental check,
    /// [`crate::verify::VerifyReport::edges_upper_bound`]); [`crate::engine::settle_summary`]
    /// makes them exact again.
    pub edges_upper_bound: bool,
}

/// Routes `fabric` (switch graph `g`) by keeping what survives of `prev` (see the module
/// documentation).
pub fn reroute(
    prev: RoutedFabric<'_>,
    fabric: &Fabric,
    g: &SwitchGraph,
    opts: &RerouteOptions,
) -> Result<(Routing, RerouteStats), FullReason> {
    reroute_with(prev, None, fabric, g, opts).map(|(r, st, _)| (r, st))
}

/// [`reroute`], starting from `prev`'s summary when one is given; also returns the new
/// routing's channel loads.
pub fn reroute_with(
    prev: RoutedFabric<'_>,
    summary: Option<&RoutingSummary>,
    fabric: &Fabric,
    g: &SwitchGraph,
    opts: &RerouteOptions,
) -> Result<(Routing, RerouteStats, Vec<u64>), FullReason> {
    reroute_guided(prev, summary, fabric, g, opts, &|| None, None)
}

/// [`reroute_with`]; after a repair, `fresh` computes the routing a full computation of `fabric`
/// would give (the engine's), called only then; `None` guides by balanced SSSP routes.
///
/// `shed`: per channel of `g`, it is overloaded (a re-balance in place, after a re-route left a
/// channel loaded far above a full computation's estimate): no path over it is kept, and the
/// paths routed again weigh it like any other port, not as their old one.
pub fn reroute_guided(
    prev: RoutedFabric<'_>,
    summary: Option<&RoutingSummary>,
    fabric: &Fabric,
    g: &SwitchGraph,
    opts: &RerouteOptions,
    fresh: &dyn Fn() -> Option<Routing>,
    shed: Option<&[bool]>,
) -> Result<(Routing, RerouteStats, Vec<u64>), FullReason> {
    if g.num_switches() == 0 {
        return Err(FullReason::NoSwitches);
    }
    let (og, or) = (prev.graph, prev.routing);
    if or.num_layers > opts.budget {
        return Err(FullReason::Budget {
            used: or.num_layers,
            budget: opts.budget,
        });
    }
    check_lmc(prev.fabric, fabric)?;

    let shed = shed.filter(|h| h.len() == g.num_channels());
    let mut st = RerouteStats {
        shed_channels: shed.map_or(0, |h| h.iter().filter(|&&x| x).count()),
        ..Default::default()
    };
    let m = Matching::new(og, g, &mut st);
    let comp = g.components();
    let ei = EdgeIndex::new(g);
    // Cables or switches came back (or new ones appeared): paths that the change made longer
    // than a shortest path are not kept, so that the returned elements are used again.
    let repair = (st.channels_new > 0 || st.switches_new > 0)
        .then(|| (SwitchDistances::new(og), SwitchDistances::new(g)));
    let stage = Stage {
        prev,
        summary,
        fabric,
        g,
        opts,
        m: &m,
        comp: &comp,
        ei: &ei,
        shortest: repair.as_ref().map(|(a, b)| (a, b)),
        shed,
    };
    // And a fresh routing guides what the returned elements carry ([`guide`]).
    let Some(guide) = repair.as_ref().map(|(_, now)| {
        let routing = fresh()
            .filter(|r| r.lft.num_switches() == g.num_switches() && r.lft.max_lid == g.max_lid())
            .unwrap_or_else(|| crate::sssp::route_with_distances(g, now));
        guide::Guide::new(g, routing, &m.chan_new)
    }) else {
        return stage.route(None, st);
    };
    let first = stage.route(Some(&guide), st.clone())?;
    // Faults and repairs in turn leave trees balanced for different fabrics side by side, and
    // paths that joined a switch now following the guide pile onto its new next hop; when that
    // measures below the fresh routing (Λ, or the highest channel load), every path follows it
    // (the layers still as close to the old ones as they allow).
    let lambda = |lft: &Lft| crate::metrics::judging_lambda(g, lft, REPAIR_PATTERNS);
    let measure = RepairMeasure {
        lambda: lambda(&first.0.lft),
        fresh_lambda: lambda(guide.lft()),
        max_load: first.1.max_load,
        fresh_max_load: crate::balance::channel_loads(g, guide.lft())
            .into_iter()
            .max()
            .unwrap_or(0),
    };
    if measure.lambda >= measure.fresh_lambda * (1.0 - REPAIR_LAMBDA_SLACK)
        && measure.max_load as f64 <= measure.fresh_max_load as f64 * (1.0 + REPAIR_LOAD_SLACK)
    {
        let mut first = first;
        first.1.repair = Some(measure);
        return Ok(first);
    }
    let mut everywhere = stage.route(Some(&guide.everywhere()), st)?;
    everywhere.1.followed_fresh = true;
    everywhere.1.repair = Some(measure);
    Ok(everywhere)
}

/// Bisection patterns that judge a repair's routes against the fresh routing.
const REPAIR_PATTERNS: u32 = 64;
/// How far below the fresh routing's Λ a repair's routes may stay...
const REPAIR_LAMBDA_SLACK: f64 = 0.005;
/// ... and how far above its highest channel load (all-to-all; Λ is the measure, this only
/// catches a hot channel that random bisections miss; the engine's re-balance threshold by
/// default).
const REPAIR_LOAD_SLACK: f64 = 0.5;

/// What one re-route from the matched fabrics reads.
struct Stage<'a> {
    prev: RoutedFabric<'a>,
    summary: Option<&'a RoutingSummary>,
    fabric: &'a Fabric,
    g: &'a SwitchGraph,
    opts: &'a RerouteOptions,
    m: &'a Matching,
    comp: &'a [u32],
    ei: &'a EdgeIndex,
    shortest: Option<(&'a SwitchDistances, &'a SwitchDistances)>,
    /// Overloaded channels: no path over them is kept ([`reroute_guided`]).
    shed: Option<&'a [bool]>,
}

impl Stage<'_> {
    /// Keeps what survives (pass 1) and routes the rest again (pass 2), guided or not.
    fn route(
        &self,
        guide: Option<&guide::Guide>,
        mut st: RerouteStats,
    ) -> Result<(Routing, RerouteStats, Vec<u64>), FullReason> {
        let (g, opts, m, or) = (self.g, self.opts, self.m, self.prev.routing);
        let (mut tables, layer_table) = carry_over(g, or, &m.old_of_new, opts);
        clear_gone_lids(self.prev.graph, g, &mut tables, &mut st);
        let words = self.ei.num_edges().div_ceil(64);
        let ctx = survey::Survey {
            prev: self.prev,
            fabric: self.fabric,
            g,
            comp: self.comp,
            new_of_old: &m.new_of_old,
            old_of_new: &m.old_of_new,
            chan_new: &m.chan_new,
            ei: self.ei,
            words: if opts.deadlock_free { words } else { 0 },
            shortest: self.shortest,
            shed: self.shed,
            guide,
            layers: usize::from(or.num_layers.max(1)),
            layered: layer_table == LayerTable::Kept,
            subtract: false,
        };
        let mut kept = keep_survivors(ctx, self.summary, opts.deadlock_free, &mut tables, &mut st);
        add_new_dests(
            g,
            self.comp,
            &kept.seen,
            &mut tables,
            &mut st,
            &mut kept.work,
        );
        kept.work.sort_unstable_by_key(|w| w.0);
        st.dests_touched = kept.work.len();

        // Routing again (pass 2, [`place`]), fast ([`LayerChecks::AtEnd`]): every re-routed
        // path in its old layer, then one acyclicity check per layer. Only when that finds a
        // cycle, pass 2 again with [`LayerChecks::PerPath`]: each path's edges checked as they
        // go in, trying other next hops and layers.
        let tries: &[LayerChecks] = if opts.deadlock_free {
            &[LayerChecks::AtEnd, LayerChecks::PerPath]
        } else {
            &[LayerChecks::Unchecked]
        };
        let basis = place::Basis {
            g,
            comp: self.comp,
            or,
            old_of_new: &m.old_of_new,
            guide,
            shed: self.shed,
        };
        for &checks in tries {
            let mut load = kept.load.clone();
            let mut layering =
                layering::Layering::new(g, self.ei, &kept.bits, checks, opts, layer_table)?;
            let mut stats = st.clone();
            let num_layers = place::route_again(
                &basis,
                &kept.work,
                &mut tables,
                &mut load,
                &mut layering,
                &mut stats,
            )?;
            if layering.acyclic() {
                stats.max_load = load.iter().copied().max().unwrap_or(0);
                stats.layers = num_layers;
                let routing = Routing {
                    lft: tables.lft,
                    hops: tables.hops,
                    layers: tables.layers,
                    num_layers,
                };
                return Ok((routing, stats, load));
            }
        }
        Err(FullReason::Internal("no pass 2 result"))
    }
}

/// Switches matched by node GUID, channels by (switch, port) with the same far end.
struct Matching {
    new_of_old: Vec<u32>,
    old_of_new: Vec<u32>,
    /// Old channel -> the same channel in the new graph ([`NO_CHANNEL`] when it vanished).
    chan_new: Vec<u32>,
}

impl Matching {
    fn new(og: &SwitchGraph, g: &SwitchGraph, st: &mut RerouteStats) -> Self {
        let new_of_old = diff::match_switches(og, g);
        let mut old_of_new = vec![NO_SWITCH; g.num_switches()];
        for (o, &n) in new_of_old.iter().enumerate() {
            if n != NO_SWITCH {
                old_of_new[n as usize] = o as u32;
            }
        }
        st.switches_gone = new_of_old.iter().filter(|&&n| n == NO_SWITCH).count();
        st.switches_new = old_of_new.iter().filter(|&&o| o == NO_SWITCH).count();
        let chan_new: Vec<u32> = (0..og.num_channels())
            .map(|oc| {
                let (t, h) = (og.chan_tail()[oc], og.chan_head()[oc]);
                let (nt, nh) = (new_of_old[t as usize], new_of_old[h as usize]);
                if nt == NO_SWITCH || nh == NO_SWITCH {
                    return NO_CHANNEL;
                }
                match g.channel_at(nt, og.chan_port()[oc]) {
                    Some(c)
                        if g.chan_head()[c as usize] == nh
                            && g.chan_head_port()[c as usize] == og.chan_head_port()[oc] =>
                    {
                        c
                    }
                    _ => NO_CHANNEL,
                }
            })
            .collect();
        st.channels_gone = chan_new.iter().filter(|&&c| c == NO_CHANNEL).count();
        st.channels_new = g.num_channels() - (og.num_channels() - st.channels_gone);
        Matching {
            new_of_old,
            old_of_new,
            chan_new,
        }
    }
}

/// The old tables, row by row (same LIDs, same columns), as the start of the new ones; entries
/// of paths that are not kept are overwritten later. Also whether the result keeps layers.
fn carry_over(
    g: &SwitchGraph,
    or: &Routing,
    old_of_new: &[u32],
    opts: &RerouteOptions,
) -> (place::Tables, LayerTable) {
    let (ns, max_lid) = (g.num_switches(), g.max_lid());
    let mut lft = Lft::new(ns, max_lid);
    let mut hops = SwitchLidTable::new(ns, max_lid, NO_PATH);
    // A one-layer routing keeps no layer table; with lanes to spare (QoS on, where the one-lane
    // search measured best) its paths are all in layer 0, and a new path that fits nowhere there
    // may open another layer instead of forcing a full computation.
    let layered = or.layers.is_some() || (opts.deadlock_free && opts.budget > 1);
    let mut layers = layered.then(|| SwitchLidTable::new(ns, max_lid, 0));
    for s in 0..ns as u32 {
        let o = old_of_new[s as usize];
        if o == NO_SWITCH {
            continue;
        }
        let w = lft.stride().min(or.lft.stride());
        lft.table_mut(s)[..w].copy_from_slice(&or.lft.table(o)[..w]);
        hops.row_mut(s)[..w].copy_from_slice(&or.hops.row(o)[..w]);
        if let (Some(l), Some(ol)) = (layers.as_mut(), or.layers.as_ref()) {
            l.row_mut(s)[..w].copy_from_slice(&ol.row(o)[..w]);
        }
    }
    let table = if layered {
        LayerTable::Kept
    } else {
        LayerTable::Absent
    };
    (place::Tables { lft, hops, layers }, table)
}

/// LIDs that are gone: no entries anywhere.
fn clear_gone_lids(
    og: &SwitchGraph,
    g: &SwitchGraph,
    t: &mut place::Tables,
    st: &mut RerouteStats,
) {
    let max_lid = g.max_lid();
    let mut is_dest = vec![false; usize::from(max_lid) + 1];
    for d in g.dests() {
        is_dest[usize::from(d.lid)] = true;
    }
    for od in og.dests() {
        let l = usize::from(od.lid);
        if l <= usize::from(max_lid) && !is_dest[l] {
            st.dests_gone += 1;
            for s in 0..g.num_switches() as u32 {
                t.lft.set(s, od.lid, NO_PATH);
                t.hops.set(s, od.lid, NO_PATH);
            }
        } else if l > usize::from(max_lid) {
            st.dests_gone += 1;
        }
    }
}

/// What the survey keeps: the kept paths' channel loads and per-layer dependency edges, the
/// destinations to route again, and which new destinations were old ones.
struct Kept {
    load: Vec<u64>,
    bits: Vec<Vec<u64>>,
    work: Vec<(usize, Vec<u32>)>,
    seen: Vec<bool>,
}

/// The survey (pass 1, [`survey`]), destinations in parallel chunks: which paths are kept;
/// their loads and dependency edges. With a summary and only links lost, only the destinations
/// whose trees used a vanished channel are traversed: every other path is kept, and its loads
/// and edges are in the summary.
fn keep_survivors(
    mut ctx: survey::Survey<'_>,
    summary: Option<&RoutingSummary>,
    deadlock_free: bool,
    t: &mut place::Tables,
    st: &mut RerouteStats,
) -> Kept {
    let (g, og, or) = (ctx.g, ctx.prev.graph, ctx.prev.routing);
    // Per layer, the dependency edges of the kept paths, one bit each (as verify keeps them:
    // small enough to stay in cache while every kept path sets its edges).
    let words = ctx.ei.num_edges().div_ceil(64);
    let mut bits: Vec<Vec<u64>> = if deadlock_free {
        (0..ctx.layers).map(|_| vec![0; words]).collect()
    } else {
        Vec::new()
    };
    // The survey (pass 1, [`survey`]), destinations in parallel chunks: which paths are kept;
    // their loads and dependency edges. With a summary and only links lost, only the
    // destinations whose trees used a vanished channel: every other path is kept, and its loads
    // and edges are in the summary.
    let old_words = EdgeIndex::new(og).num_edges().div_ceil(64);
    let summary = summary.filter(|sm| {
        ctx.shortest.is_none()
            && ctx.shed.is_none()
            && links_only(ctx.prev, ctx.fabric, g, ctx.new_of_old, ctx.comp)
            && sm.loads.len() == og.num_channels()
            && (bits.is_empty() || sm.layer_edges.len() == bits.len())
            && sm.layer_edges.iter().all(|b| b.len() == old_words)
    });
    let touched: Vec<crate::graph::Dest>;
    let odests: &[crate::graph::Dest] = match summary {
        Some(_) => {
            let mut hit = vec![false; usize::from(or.lft.max_lid) + 1];
            for (oc, &c) in ctx.chan_new.iter().enumerate() {
                if c != NO_CHANNEL {
                    continue;
                }
                let (t, port) = (og.chan_tail()[oc], og.chan_port()[oc]);
                for (lid, &p) in or.lft.table(t).iter().enumerate() {
                    hit[lid] |= p == port;
                }
            }
            touched = og
                .dests()
                .iter()
                .filter(|d| hit.get(usize::from(d.lid)).copied().unwrap_or(false))
                .copied()
                .collect();
            &touched
        }
        None => og.dests(),
    };
    ctx.subtract = summary.is_some();
    let chunks = (rayon::current_num_threads() * 4).clamp(1, odests.len().max(1));
    let per = odests.len().div_ceil(chunks).max(1);
    let parts: Vec<survey::Surveyed> = (0..chunks)
        .into_par_iter()
        .map(|k| ctx.run(&odests[(k * per).min(odests.len())..((k + 1) * per).min(odests.len())]))
        .collect();
    let mut load = vec![0u64; g.num_channels()];
    let mut work: Vec<(usize, Vec<u32>)> = Vec::new();
    let mut seen_new = vec![false; g.dests().len()];
    if let Some(sm) = summary {
        // Everything the traversed destinations had, off the summary's loads; the rest is kept.
        let mut old_load = sm.loads.clone();
        for part in &parts {
            for (a, b) in old_load.iter_mut().zip(&part.sub) {
                *a = a.saturating_sub(*b);
            }
        }
        for (oc, &c) in ctx.chan_new.iter().enumerate() {
            if c != NO_CHANNEL {
                load[c as usize] += old_load[oc];
            }
        }
        remap_edges(og, g, ctx.chan_new, &sm.layer_edges, &mut bits);
        let mut traversed = vec![false; g.dests().len()];
        for part in &parts {
            for &di in &part.seen {
                traversed[di] = true;
            }
        }
        let root_comp_size = {
            let mut size = vec![0u64; g.num_switches()];
            for &c in ctx.comp {
                size[c as usize] += 1;
            }
            size
        };
        for (di, d) in g.dests().iter().enumerate() {
            if !traversed[di] && d.switch != NO_SWITCH {
                seen_new[di] = true;
                st.paths_kept += root_comp_size[ctx.comp[d.switch as usize] as usize];
            }
        }
    }
    for part in parts {
        load.iter_mut().zip(&part.load).for_each(|(a, b)| *a += b);
        for (acc, b) in bits.iter_mut().zip(&part.bits) {
            acc.iter_mut().zip(b).for_each(|(a, b)| *a |= b);
        }
        st.paths_kept += part.paths_kept;
        for &di in &part.seen {
            seen_new[di] = true;
        }
        work.extend(part.work);
        for (s, lid) in part.unreachable {
            t.lft.set(s, lid, NO_PATH);
            t.hops.set(s, lid, NO_PATH);
        }
    }
    Kept {
        load,
        bits,
        work,
        seen: seen_new,
    }
}

/// Destinations routed from scratch: new LIDs, and LIDs now held by another port or switch
/// port.
fn add_new_dests(
    g: &SwitchGraph,
    comp: &[u32],
    seen: &[bool],
    t: &mut place::Tables,
    st: &mut RerouteStats,
    work: &mut Vec<(usize, Vec<u32>)>,
) {
    let ns = g.num_switches();
    for (di, d) in g.dests().iter().enumerate() {
        if seen[di] || d.switch == NO_SWITCH {
            continue;
        }
        st.dests_new += 1;
        let mut dist = vec![u32::MAX; ns];
        dist[d.switch as usize] = 0;
        for s in 0..ns {
            if comp[s] != comp[d.switch as usize] {
                t.lft.set(s as u32, d.lid, NO_PATH);
                t.hops.set(s as u32, d.lid, NO_PATH);
            }
        }
        t.lft.set(d.switch, d.lid, d.exit_port);
        t.hops.set(d.switch, d.lid, u8::from(d.exit_port != 0));
        if let Some(l) = t.layers.as_mut() {
            l.set(d.switch, d.lid, 0);
        }
        work.push((di, dist));
    }
}

/// Whether only links changed: the same switches, the same CA/router ports on each, the same
/// destinations, and the same parts of the fabric (a summary then still counts right).
fn links_only(
    prev: RoutedFabric<'_>,
    fabric: &Fabric,
    g: &SwitchGraph,
    new_of_old: &[u32],
    comp: &[u32],
) -> bool {
    let og = prev.graph;
    if og.num_switches() != g.num_switches()
        || og.dests().len() != g.dests().len()
        || new_of_old.contains(&NO_SWITCH)
    {
        return false;
    }
    let old_comp = og.components();
    let mut map = std::collections::HashMap::new();
    for (o, &s) in new_of_old.iter().enumerate() {
        if og.terminal_count()[o] != g.terminal_count()[s as usize] {
            return false;
        }
        // The partition into parts must be the same: old part -> new part, one to one.
        if *map.entry(old_comp[o]).or_insert(comp[s as usize]) != comp[s as usize] {
            return false;
        }
    }
    let distinct: std::collections::HashSet<_> = map.values().collect();
    distinct.len() == map.len()
        && og
            .dests()
            .iter()
            .all(|d| diff::same_dest((prev.fabric, og), (fabric, g), d).is_some())
}

/// ORs the summary's per-layer edges (old ids) into `bits` (new ids), leaving out edges on
/// channels that vanished.
fn remap_edges(
    og: &SwitchGraph,
    g: &SwitchGraph,
    chan_new: &[u32],
    old_bits: &[Vec<u64>],
    bits: &mut [Vec<u64>],
) {
    let (oei, ei) = (EdgeIndex::new(og), EdgeIndex::new(g));
    for (ob, nb) in old_bits.iter().zip(bits.iter_mut()) {
        // Set bits come in increasing order, and so do the channels whose slots hold them.
        let mut c1 = 0usize;
        for (w, &word) in ob.iter().enumerate() {
            let mut m = word;
            while m != 0 {
                let e = (w * 64 + m.trailing_zeros() as usize) as u32;
                m &= m - 1;
                while oei.base[c1 + 1] <= e {
                    c1 += 1;
                }
                let c2 = og.out_start()[og.chan_head()[c1] as usize] + (e - oei.base[c1]);
                let (n1, n2) = (chan_new[c1], chan_new[c2 as usize]);
                if n1 != NO_CHANNEL && n2 != NO_CHANNEL {
                    let ne = ei.edge(g, n1, n2) as usize;
                    nb[ne / 64] |= 1 << (ne % 64);
                }
            }
        }
    }
}

/// Gives the paths of switches without CAs a layer, for a routing read back from dumps: a
/// path-SL dump lists CA sources only, so the layers of paths that start at other switches are
/// unknown (no SA client ever sees them). The rule is canonical (any SM holding the same tables
/// and SLs infers the same layers) and keeps the layers acyclic where it can:
/// - a switch that a CA's path runs through takes that path's layer (the first such CA switch
///   in the traversal's order): tables are per destination, so its path is the rest of that
///   CA's path and adds no dependency edge to that layer;
/// - any other switch takes the first layer, starting with the one of the switch it leads to,
///   where its path closes no cycle with the paths above (the incremental cycle check of the
///   re-route), else the next switch's layer.
///
/// The rule before (the next switch's layer everywhere) closed cycles on the 18-ary 3-tree
/// (`the kept routes of layer 0 have a cycle`), and `route --previous-*` computed from scratch.
pub fn infer_switch_layers(g: &SwitchGraph, r: &mut Routing) {
    let Some(layers) = r.layers.as_mut() else {
        return;
    };
    let (ns, nl) = (g.num_switches(), r.num_layers.max(1));
    let ei = EdgeIndex::new(g);
    let words = ei.num_edges().div_ceil(64);
    // Per layer, the dependency edges of the paths whose layer is known.
    let mut bits = vec![vec![0u64; words]; usize::from(nl)];
    let mut paths = DestPaths::new(ns);
    // The layer of a CA path through each switch (u8::MAX: none), and the layers (bits) of the
    // known paths through it.
    let mut through = vec![u8::MAX; ns];
    let mut mask = vec![0u64; ns];
    // (LID, switch) of the other paths, destination first per LID.
    let mut rest: Vec<(u16, u32)> = Vec::new();
    for d in g.dests() {
        if d.switch == NO_SWITCH || d.lid > r.lft.max_lid {
            continue;
        }
        paths.resolve(g, &r.lft, d);
        paths.compute_order();
        // Sources first: every switch comes after the switches whose paths run through it.
        for &s in &paths.order {
            let s = s as usize;
            if g.terminal_count()[s] > 0 {
                through[s] = layers.get(s as u32, d.lid);
            }
            let c = paths.next[s];
            if through[s] != u8::MAX && c != NO_CHANNEL {
                let v = g.chan_head()[c as usize] as usize;
                if through[v] == u8::MAX {
                    through[v] = through[s];
                }
            }
        }
        for &s in paths.order.iter().rev() {
            let c = paths.next[s as usize];
            if g.terminal_count()[s as usize] == 0 && c != NO_CHANNEL {
                let l = match through[s as usize] {
                    u8::MAX => {
                        rest.push((d.lid, s));
                        layers.get(g.chan_head()[c as usize], d.lid)
                    }
                    l => l,
                };
                layers.set(s, d.lid, l);
            }
        }
        for &s in &paths.order {
            let s = s as usize;
            let c = paths.next[s];
            if c == NO_CHANNEL {
                continue;
            }
            if through[s] != u8::MAX {
                mask[s] |= 1 << layers.get(s as u32, d.lid);
            }
            let v = g.chan_head()[c as usize] as usize;
            let c2 = paths.next[v];
            if mask[s] != 0 && c2 != NO_CHANNEL {
                let e = ei.edge(g, c, c2) as usize;
                let mut m = mask[s];
                while m != 0 {
                    bits[m.trailing_zeros() as usize][e / 64] |= 1 << (e % 64);
                    m &= m - 1;
                }
            }
            mask[v] |= mask[s];
        }
        for &s in &paths.order {
            through[s as usize] = u8::MAX;
            mask[s as usize] = 0;
        }
    }
    let opts = RerouteOptions {
        budget: nl,
        deadlock_free: true,
    };
    // Known paths with a cycle: nothing to keep acyclic (the re-route will say so).
    let Ok(mut lay) =
        layering::Layering::new(g, &ei, &bits, LayerChecks::PerPath, &opts, LayerTable::Kept)
    else {
        return;
    };
    // A refused check here means a layer that may close a cycle: search to the end.
    lay.search_limit = usize::MAX;
    for (lid, s) in rest {
        let (Some(c), Some(d)) = (g.channel_at(s, r.lft.port(s, lid)), g.dest_of_lid(lid)) else {
            continue;
        };
        let next = layers.get(g.chan_head()[c as usize], lid);
        lay.trace(&r.lft, lid, d.switch, c);
        if let Some(l) = std::iter::once(next)
            .chain(0..nl)
            .find(|&l| lay.insert(usize::from(l)))
        {
            layers.set(s, lid, l);
        }
    }
}

/// A port whose LMC changed has all its LIDs moved: a full computation is simpler and no less
/// stable.
fn check_lmc(old: &Fabric, new: &Fabric) -> Result<(), FullReason> {
    let before: std::collections::HashMap<u64, u8> = old
        .endpoints()
        .iter()
        .map(|e| (e.port_guid, e.lmc))
        .collect();
    for e in new.endpoints() {
        if let Some(&lmc) = before.get(&e.port_guid) {
            if lmc != e.lmc {
                return Err(FullReason::LmcChanged {
                    port_guid: e.port_guid,
                    old: lmc,
                    new: e.lmc,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
