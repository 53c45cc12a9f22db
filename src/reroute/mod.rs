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

pub mod diff;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;
use thiserror::Error;

use crate::dfsssp::cdg::{topological_order, EdgeIndex};
use crate::dfsssp::dyntopo::{DynTopo, TopoScratch};
use crate::fabric::Fabric;
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
use rayon::prelude::*;

use crate::routing::{for_each_column, DestPaths, Lft, Routing, SwitchLidTable, NO_PATH};

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

/// What one incremental re-route did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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
    /// The highest channel load afterwards (routes per channel, every CA/router port a source):
    /// what the balancing minimises, to compare with a full computation's.
    pub max_load: u64,
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
        )
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

/// Cap on the channels one incremental cycle check may visit before it refuses (refusing is safe:
/// the path tries the next layer).
const SEARCH_LIMIT: usize = 256;

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
    let ns = g.num_switches();
    if ns == 0 {
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

    let mut st = RerouteStats::default();
    let new_of_old = diff::match_switches(og, g);
    let mut old_of_new = vec![NO_SWITCH; ns];
    for (o, &n) in new_of_old.iter().enumerate() {
        if n != NO_SWITCH {
            old_of_new[n as usize] = o as u32;
        }
    }
    st.switches_gone = new_of_old.iter().filter(|&&n| n == NO_SWITCH).count();
    st.switches_new = old_of_new.iter().filter(|&&o| o == NO_SWITCH).count();
    // Old channel -> the same channel in the new graph.
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

    // Start from the old tables, row by row (same LIDs, same columns); entries of paths that are
    // not kept are overwritten below.
    let max_lid = g.max_lid();
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
    // LIDs that are gone: no entries anywhere.
    let mut is_dest = vec![false; usize::from(max_lid) + 1];
    for d in g.dests() {
        is_dest[usize::from(d.lid)] = true;
    }
    for od in og.dests() {
        let l = usize::from(od.lid);
        if l <= usize::from(max_lid) && !is_dest[l] {
            st.dests_gone += 1;
            for s in 0..ns as u32 {
                lft.set(s, od.lid, NO_PATH);
                hops.set(s, od.lid, NO_PATH);
            }
        } else if l > usize::from(max_lid) {
            st.dests_gone += 1;
        }
    }

    let comp = g.components();
    let nc = g.num_channels();
    let ei = EdgeIndex::new(g);
    // Per layer, the dependency edges of the kept paths, one bit each (as verify keeps them:
    // small enough to stay in cache while every kept path sets its edges).
    let words = ei.num_edges().div_ceil(64);
    let mut bits: Vec<Vec<u64>> = if opts.deadlock_free {
        (0..usize::from(or.num_layers.max(1)))
            .map(|_| vec![0; words])
            .collect()
    } else {
        Vec::new()
    };
    // Pass 1, destinations in parallel chunks: which paths are kept; their loads and dependency
    // edges. With a summary and only links changed, only the destinations whose trees used a
    // vanished channel: every other path is kept, and its loads and edges are in the summary.
    let old_words = EdgeIndex::new(og).num_edges().div_ceil(64);
    let summary = summary.filter(|sm| {
        links_only(prev, fabric, g, &new_of_old, &comp)
            && sm.loads.len() == og.num_channels()
            && (bits.is_empty() || sm.layer_edges.len() == bits.len())
            && sm.layer_edges.iter().all(|b| b.len() == old_words)
    });
    let touched: Vec<crate::graph::Dest>;
    let odests: &[crate::graph::Dest] = match summary {
        Some(_) => {
            let mut hit = vec![false; usize::from(or.lft.max_lid) + 1];
            for (oc, &c) in chan_new.iter().enumerate() {
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
    let ctx = Pass1 {
        prev,
        fabric,
        g,
        comp: &comp,
        new_of_old: &new_of_old,
        old_of_new: &old_of_new,
        chan_new: &chan_new,
        ei: &ei,
        words: if opts.deadlock_free { words } else { 0 },
        layers: usize::from(or.num_layers.max(1)),
        layered,
        subtract: summary.is_some(),
    };
    let chunks = (rayon::current_num_threads() * 4).clamp(1, odests.len().max(1));
    let per = odests.len().div_ceil(chunks).max(1);
    let parts: Vec<Pass1Out> = (0..chunks)
        .into_par_iter()
        .map(|k| ctx.run(&odests[(k * per).min(odests.len())..((k + 1) * per).min(odests.len())]))
        .collect();
    let mut load = vec![0u64; nc];
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
        for (oc, &c) in chan_new.iter().enumerate() {
            if c != NO_CHANNEL {
                load[c as usize] += old_load[oc];
            }
        }
        remap_edges(og, g, &chan_new, &sm.layer_edges, &mut bits);
        let mut traversed = vec![false; g.dests().len()];
        for part in &parts {
            for &di in &part.seen {
                traversed[di] = true;
            }
        }
        let root_comp_size = {
            let mut size = vec![0u64; ns];
            for &c in &comp {
                size[c as usize] += 1;
            }
            size
        };
        for (di, d) in g.dests().iter().enumerate() {
            if !traversed[di] && d.switch != NO_SWITCH {
                seen_new[di] = true;
                st.paths_kept += root_comp_size[comp[d.switch as usize] as usize];
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
            lft.set(s, lid, NO_PATH);
            hops.set(s, lid, NO_PATH);
        }
    }
    // Destinations routed from scratch: new LIDs, moved ones.
    for (di, d) in g.dests().iter().enumerate() {
        if seen_new[di] || d.switch == NO_SWITCH {
            continue;
        }
        st.dests_new += 1;
        let mut dist = vec![u32::MAX; ns];
        dist[d.switch as usize] = 0;
        for s in 0..ns {
            if comp[s] != comp[d.switch as usize] {
                lft.set(s as u32, d.lid, NO_PATH);
                hops.set(s as u32, d.lid, NO_PATH);
            }
        }
        lft.set(d.switch, d.lid, d.exit_port);
        hops.set(d.switch, d.lid, u8::from(d.exit_port != 0));
        if let Some(l) = layers.as_mut() {
            l.set(d.switch, d.lid, 0);
        }
        work.push((di, dist));
    }
    work.sort_unstable_by_key(|w| w.0);
    st.dests_touched = work.len();

    // Pass 2, fast: every re-routed path in its old layer, then one acyclicity check per layer.
    // Only when that finds a cycle, pass 2 again, carefully: each path's edges checked as they go
    // in, trying other next hops and layers.
    let kept_load = load;
    let mut tables = Tables { lft, hops, layers };
    let mut done = None;
    for careful in [false, true] {
        let mut load = kept_load.clone();
        let mut layering = Layering::new(g, &ei, &bits, careful, opts, layered)?;
        let mut stats = st.clone();
        let num_layers = pass2(
            g,
            &comp,
            &old_of_new,
            or,
            &work,
            &mut tables,
            &mut load,
            &mut layering,
            &mut stats,
        )?;
        if careful || !opts.deadlock_free || layering.acyclic() {
            stats.max_load = load.iter().copied().max().unwrap_or(0);
            stats.layers = num_layers;
            done = Some((num_layers, stats, load));
            break;
        }
    }
    let (num_layers, st, load) = done.ok_or(FullReason::Internal("no pass 2 result"))?;
    Ok((
        Routing {
            lft: tables.lft,
            hops: tables.hops,
            layers: tables.layers,
            num_layers,
        },
        st,
        load,
    ))
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

/// What pass 1 reads.
struct Pass1<'a> {
    prev: RoutedFabric<'a>,
    fabric: &'a Fabric,
    g: &'a SwitchGraph,
    comp: &'a [u32],
    new_of_old: &'a [u32],
    old_of_new: &'a [u32],
    chan_new: &'a [u32],
    ei: &'a EdgeIndex,
    /// Words of a layer's edge bits; 0 when the layers need no checking.
    words: usize,
    layers: usize,
    layered: bool,
    /// Also sum each traversed destination's whole old tree per old channel (`Pass1Out::sub`),
    /// to take it off a summary's loads.
    subtract: bool,
}

/// What pass 1 finds for a chunk of destinations.
struct Pass1Out {
    load: Vec<u64>,
    /// Per old channel, the loads of the traversed destinations' old trees (with `subtract`).
    sub: Vec<u64>,
    bits: Vec<Vec<u64>>,
    paths_kept: u64,
    /// New destinations (indices) that are the same as an old one.
    seen: Vec<usize>,
    /// Destinations to route again: (new destination index, kept switches' hop counts).
    work: Vec<(usize, Vec<u32>)>,
    /// (switch, LID) entries to clear: the switch is in another part of the fabric.
    unreachable: Vec<(u32, u16)>,
}

impl Pass1<'_> {
    fn run(&self, odests: &[crate::graph::Dest]) -> Pass1Out {
        let (og, or, g) = (self.prev.graph, self.prev.routing, self.g);
        let (ons, ns) = (og.num_switches(), g.num_switches());
        let mut out = Pass1Out {
            load: vec![0; g.num_channels()],
            sub: vec![0; if self.subtract { og.num_channels() } else { 0 }],
            bits: (0..if self.words > 0 { self.layers } else { 0 })
                .map(|_| vec![0; self.words])
                .collect(),
            paths_kept: 0,
            seen: Vec::new(),
            work: Vec::new(),
            unreachable: Vec::new(),
        };
        let mut kept_old = vec![false; ons];
        let mut kept = vec![false; ns];
        let mut mask = vec![0u64; ons];
        let mut flow = vec![0u64; ons];
        let mut old_paths = DestPaths::new(ons);
        let (new_of_old, chan_new) = (self.new_of_old, self.chan_new);
        let layers = or.layers.as_ref().filter(|_| self.layered);
        for_each_column(og, &or.lft, layers, odests, |od, col, lay| {
            let Some(col) = col else { return };
            let Some(nd) = diff::same_dest((self.prev.fabric, og), (self.fabric, g), od) else {
                return;
            };
            let di = g.lid_dest()[usize::from(nd.lid)] as usize;
            out.seen.push(di);
            old_paths.resolve_column(og, od, Some(col));
            old_paths.compute_order();
            // Root first: kept when delivering and the channel and the rest of the path remain.
            kept_old.fill(false);
            for &o in old_paths.order.iter().rev() {
                if old_paths.end[o as usize].is_err() || new_of_old[o as usize] == NO_SWITCH {
                    continue;
                }
                let c = old_paths.next[o as usize];
                kept_old[o as usize] = c == NO_CHANNEL
                    || chan_new[c as usize] != NO_CHANNEL
                        && kept_old[og.chan_head()[c as usize] as usize];
            }
            // Loads of the kept routes and, per layer, their dependency edges: leaves first,
            // each kept switch passes on its sources and the layers of the paths through it.
            for &o in &old_paths.order {
                let (o, s) = (o as usize, new_of_old[o as usize]);
                if !kept_old[o] {
                    continue;
                }
                flow[o] += u64::from(g.terminal_count()[s as usize]);
                mask[o] |= 1u64 << lay.map_or(0, |l| l[o]);
                let c = old_paths.next[o];
                if c != NO_CHANNEL {
                    let h = og.chan_head()[c as usize] as usize;
                    let cn = chan_new[c as usize];
                    out.load[cn as usize] += flow[o];
                    flow[h] += flow[o];
                    mask[h] |= mask[o];
                    let c2 = old_paths.next[h];
                    if c2 != NO_CHANNEL && !out.bits.is_empty() {
                        let e = self.ei.edge(g, cn, chan_new[c2 as usize]) as usize;
                        let mut m = mask[o];
                        while m != 0 {
                            out.bits[m.trailing_zeros() as usize][e / 64] |= 1 << (e % 64);
                            m &= m - 1;
                        }
                    }
                }
            }
            for &o in &old_paths.order {
                flow[o as usize] = 0;
                mask[o as usize] = 0;
            }
            if self.subtract {
                // The whole old tree, as the summary counted it (same terminals: links only).
                crate::balance::add_dest_loads(og, &old_paths, &mut flow, &mut out.sub);
            }
            // Switches of the destination's part of the fabric whose path is not kept.
            let root_comp = self.comp[nd.switch as usize];
            let mut to_route = false;
            kept.fill(false);
            for (o, &k) in kept_old.iter().enumerate() {
                if k {
                    kept[new_of_old[o] as usize] = true;
                }
            }
            for (s, &k) in kept.iter().enumerate() {
                if k {
                    out.paths_kept += 1;
                } else if self.comp[s] == root_comp {
                    to_route = true;
                } else {
                    out.unreachable.push((s as u32, nd.lid));
                }
            }
            if to_route {
                // Switch hops of the kept paths, for the shortest-path search; u32::MAX elsewhere.
                let dist: Vec<u32> = (0..ns)
                    .map(|s| {
                        if kept[s] {
                            old_paths.hops[self.old_of_new[s] as usize]
                        } else {
                            u32::MAX
                        }
                    })
                    .collect();
                out.work.push((di, dist));
            }
        });
        out
    }
}

/// The tables being written.
struct Tables {
    lft: Lft,
    hops: SwitchLidTable,
    layers: Option<SwitchLidTable>,
}

/// New next hops for the switches whose paths are not kept, destination by destination, nearest
/// switches first, balanced against the loads of everything placed so far, each path in a layer
/// `layering` accepts. Returns the number of layers in use.
#[allow(clippy::too_many_arguments)]
fn pass2(
    g: &SwitchGraph,
    comp: &[u32],
    old_of_new: &[u32],
    or: &Routing,
    work: &[(usize, Vec<u32>)],
    t: &mut Tables,
    load: &mut [u64],
    layering: &mut Layering<'_>,
    st: &mut RerouteStats,
) -> Result<u8, FullReason> {
    let ns = g.num_switches();
    let mut num_layers = or.num_layers.max(1);
    let mut heap = BinaryHeap::new();
    let mut settled_order = Vec::new();
    let mut next = vec![NO_CHANNEL; ns];
    let mut dist = vec![u32::MAX; ns];
    let mut hop = vec![u32::MAX; ns];
    let mut f = vec![0u64; ns];
    let mut cands: Vec<Candidate> = Vec::new();
    st.paths_rerouted = 0;
    st.layer_moves = 0;
    for (di, kept_dist) in work {
        let d = g.dests()[*di];
        let root_comp = comp[d.switch as usize];
        heap.clear();
        settled_order.clear();
        dist.copy_from_slice(kept_dist);
        hop.copy_from_slice(kept_dist);
        let fixed = |s: usize| kept_dist[s] != u32::MAX;
        for s in 0..ns as u32 {
            if fixed(s as usize) || comp[s as usize] != root_comp {
                continue;
            }
            for c in g.out_channels(s) {
                let v = g.chan_head()[c as usize] as usize;
                if fixed(v) {
                    heap.push(Reverse((dist[v] + 1, s)));
                }
            }
        }
        while let Some(Reverse((h, s))) = heap.pop() {
            if dist[s as usize] != u32::MAX {
                continue;
            }
            dist[s as usize] = h;
            settled_order.push(s);
            for &c in g.in_channels(s) {
                let u = g.chan_tail()[c as usize];
                if dist[u as usize] == u32::MAX {
                    heap.push(Reverse((h + 1, u)));
                }
            }
        }
        let last_link = u32::from(d.exit_port != 0);
        for &s in &settled_order {
            // Next hops into switches already routed (kept, or re-routed before `s`): their
            // paths cannot come back through `s`, so no forwarding loop can form.
            let o = old_of_new[s as usize];
            let old_layer = match (&or.layers, o) {
                (Some(ol), o) if o != NO_SWITCH && usize::from(d.lid) < ol.shape().1 => {
                    Some(ol.get(o, d.lid))
                }
                _ => None,
            };
            // Shortest first; among those, the port the switch used before (its LFT entry
            // stays: no block to send, Vishnu et al.), then switches whose own path is in this
            // path's layer (its edges are already there: only the first turn is new), then the
            // least loaded.
            let old_port = match o {
                o if o != NO_SWITCH && d.lid <= or.lft.max_lid => or.lft.port(o, d.lid),
                _ => NO_PATH,
            };
            cands.clear();
            for c in g.out_channels(s) {
                let v = g.chan_head()[c as usize];
                let h = hop[v as usize];
                if h != u32::MAX {
                    let moved = u64::from(g.chan_port()[c as usize] != old_port);
                    let other_layer = match (&t.layers, old_layer) {
                        (Some(lt), Some(l)) if g.terminal_count()[s as usize] > 0 => {
                            u64::from(lt.get(v, d.lid) != l)
                        }
                        _ => 0,
                    };
                    let joins = t.layers.as_ref().map(|lt| lt.get(v, d.lid));
                    let key = moved << 63 | other_layer << 62 | load[c as usize];
                    cands.push((h + 1, key, c, joins));
                }
            }
            cands.sort_unstable();
            let sa_visible = g.terminal_count()[s as usize] > 0;
            let (c, l) = layering
                .place(
                    &t.lft,
                    d.lid,
                    d.switch,
                    &cands,
                    old_layer,
                    sa_visible,
                    &mut num_layers,
                )
                .ok_or(FullReason::NoLayer {
                    switch: g.switch_guid(s),
                    lid: d.lid,
                })?;
            if old_layer.is_some_and(|ol| ol != l) {
                st.layer_moves += 1;
            }
            next[s as usize] = c;
            hop[s as usize] = hop[g.chan_head()[c as usize] as usize] + 1;
            t.lft.set(s, d.lid, g.chan_port()[c as usize]);
            t.hops.set(
                s,
                d.lid,
                u8::try_from(hop[s as usize] + last_link).unwrap_or(NO_PATH),
            );
            if let Some(lt) = t.layers.as_mut() {
                lt.set(s, d.lid, l);
            }
        }
        st.paths_rerouted += settled_order.len() as u64;
        // Their routes' loads: farthest first, then along the kept paths they join.
        for &s in settled_order.iter().rev() {
            let fs = f[s as usize] + u64::from(g.terminal_count()[s as usize]);
            f[s as usize] = 0;
            let c = next[s as usize];
            load[c as usize] += fs;
            let v = g.chan_head()[c as usize];
            if fixed(v as usize) {
                let mut at = v;
                while at != d.switch {
                    let Some(c) = g.channel_at(at, t.lft.port(at, d.lid)) else {
                        break;
                    };
                    load[c as usize] += fs;
                    at = g.chan_head()[c as usize];
                }
            } else {
                f[v as usize] += fs;
            }
        }
        // Unreachable within the part (cannot happen in a connected part): no entry.
        for s in 0..ns {
            if comp[s] == root_comp && dist[s] == u32::MAX {
                t.lft.set(s as u32, d.lid, NO_PATH);
                t.hops.set(s as u32, d.lid, NO_PATH);
            }
        }
    }
    Ok(num_layers)
}

/// Which layer each re-routed path goes to, and the layers' dependency graphs as paths go in.
struct Layering<'a> {
    g: &'a SwitchGraph,
    ei: &'a EdgeIndex,
    /// How layers are chosen: `None` for routings without deadlock freedom (layer 0, no checks);
    /// fast (old layer, edges collected, checked once at the end); careful (checked per path).
    mode: Option<bool>,
    /// Fast mode: per layer, the dependency edges as bits.
    bits: Vec<Vec<u64>>,
    /// Careful mode: per layer, how many paths use each edge, and a topological order.
    counts: Vec<Vec<u32>>,
    topo: Vec<DynTopo>,
    sc: TopoScratch,
    path: Vec<u32>,
    /// The order in which layers are tried for one candidate.
    tries: Vec<u8>,
    /// Whether a layer may be added (the routing has layer tables and checks them).
    can_grow: bool,
    budget: u8,
}

impl<'a> Layering<'a> {
    fn new(
        g: &'a SwitchGraph,
        ei: &'a EdgeIndex,
        kept: &[Vec<u64>],
        careful: bool,
        opts: &RerouteOptions,
        layered: bool,
    ) -> Result<Self, FullReason> {
        let mut l = Layering {
            g,
            ei,
            mode: opts.deadlock_free.then_some(careful),
            bits: Vec::new(),
            counts: Vec::new(),
            topo: Vec::new(),
            sc: TopoScratch::default(),
            path: Vec::new(),
            tries: Vec::new(),
            can_grow: layered && opts.deadlock_free,
            budget: opts.budget.max(1),
        };
        if l.mode == Some(false) {
            l.bits = kept.to_vec();
        } else if l.mode == Some(true) {
            // Layers in parallel.
            let built: Vec<(Vec<u32>, Option<Vec<u32>>)> = kept
                .par_iter()
                .map(|b| {
                    let counts = counts_of(ei, b);
                    let order = topological_order(g, ei, &counts);
                    (counts, order)
                })
                .collect();
            for (k, (counts, order)) in built.into_iter().enumerate() {
                let order = order.ok_or(FullReason::KeptCycle { layer: k as u8 })?;
                l.topo.push(DynTopo::from_order(&order));
                l.counts.push(counts);
            }
        }
        Ok(l)
    }

    /// Whether every layer's dependency graph is acyclic (fast mode; careful mode keeps them so).
    fn acyclic(&self) -> bool {
        self.mode != Some(false)
            || self
                .bits
                .par_iter()
                .all(|b| topological_order(self.g, self.ei, &counts_of(self.ei, b)).is_some())
    }

    /// Chooses the next channel of a switch among `cands` (sorted best first: shortest, least
    /// loaded) and the layer of its path. Fast mode: the best candidate in its old layer. Careful
    /// mode, adding the path's dependency edges to a layer only when they close no cycle: the
    /// best candidate that fits in any layer, in its old layer if it fits there, else the first
    /// layer that takes it; failing all, the best candidate in a new layer within the budget.
    /// A switch without CAs (`sa_visible` false: no SA client sees its SL) tries the layer of the
    /// switch the path joins first: all its edges but the first turn are there already.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        lft: &Lft,
        lid: u16,
        root: u32,
        cands: &[Candidate],
        old_layer: Option<u8>,
        sa_visible: bool,
        num_layers: &mut u8,
    ) -> Option<(u32, u8)> {
        cands.first()?;
        let first = old_layer.unwrap_or(0).min(*num_layers - 1);
        match self.mode {
            None => return Some((cands[0].2, 0)),
            Some(false) => {
                let (_, _, c, joins) = cands[0];
                let l = match joins {
                    Some(j) if !sa_visible && j < *num_layers => j,
                    _ => first,
                };
                self.trace(lft, lid, root, c);
                let b = &mut self.bits[usize::from(l)];
                for w in self.path.windows(2) {
                    let e = self.ei.edge(self.g, w[0], w[1]) as usize;
                    b[e / 64] |= 1 << (e % 64);
                }
                return Some((c, l));
            }
            Some(true) => {}
        }
        // The path first (the best candidate that fits anywhere), then its layer (the old one
        // if the path fits there).
        for &(_, _, c, joins) in cands {
            let lead = match joins {
                Some(j) if !sa_visible && j < *num_layers => j,
                _ => first,
            };
            self.tries.clear();
            self.tries.push(lead);
            if first != lead {
                self.tries.push(first);
            }
            self.tries
                .extend((0..*num_layers).filter(|&l| l != lead && l != first));
            self.trace(lft, lid, root, c);
            for k in 0..self.tries.len() {
                let l = self.tries[k];
                if self.insert(usize::from(l)) {
                    return Some((c, l));
                }
            }
        }
        if self.can_grow && *num_layers < self.budget {
            let nc = self.g.num_channels() as u32;
            self.counts.push(vec![0; self.ei.num_edges()]);
            self.topo
                .push(DynTopo::from_order(&(0..nc).collect::<Vec<_>>()));
            let l = *num_layers;
            *num_layers += 1;
            let c = cands[0].2;
            self.trace(lft, lid, root, c);
            if self.insert(usize::from(l)) {
                return Some((c, l));
            }
        }
        None
    }

    /// `self.path` = channel `c`, then the path of the switch it leads to.
    fn trace(&mut self, lft: &Lft, lid: u16, root: u32, c: u32) {
        let g = self.g;
        self.path.clear();
        self.path.push(c);
        let mut at = g.chan_head()[c as usize];
        while at != root && self.path.len() <= g.num_switches() {
            let Some(c) = g.channel_at(at, lft.port(at, lid)) else {
                break;
            };
            self.path.push(c);
            at = g.chan_head()[c as usize];
        }
    }

    /// Adds the dependency edges of `self.path` to layer `l` if none closes a cycle; otherwise
    /// leaves the layer as it was.
    fn insert(&mut self, l: usize) -> bool {
        let (g, ei) = (self.g, self.ei);
        let (topo, counts) = (&mut self.topo[l], &mut self.counts[l]);
        for k in 0..self.path.len().saturating_sub(1) {
            let (a, b) = (self.path[k], self.path[k + 1]);
            let e = ei.edge(g, a, b) as usize;
            if counts[e] == 0 && !topo.try_insert(g, ei, counts, &mut self.sc, a, b, SEARCH_LIMIT) {
                for w in self.path[..k + 1].windows(2) {
                    counts[ei.edge(g, w[0], w[1]) as usize] -= 1;
                }
                return false;
            }
            counts[e] += 1;
        }
        true
    }
}

/// A next hop for a re-routed switch: (hops to the destination through it, sort key (a
/// different port than before, a layer other than the path's, load), channel, layer of the path
/// it joins).
type Candidate = (u32, u64, u32, Option<u8>);

/// One count per set bit.
fn counts_of(ei: &EdgeIndex, bits: &[u64]) -> Vec<u32> {
    (0..ei.num_edges())
        .map(|e| (bits[e / 64] >> (e % 64) & 1) as u32)
        .collect()
}

/// Gives the paths of switches without CAs the layer of the switch they lead to, for a routing
/// read back from dumps: a path-SL dump lists CA sources only, so the layers of paths that start
/// at other switches are unknown (no SA client ever sees them). Following the next switch adds
/// no dependency edge that the path it joins does not already have in that layer.
pub fn infer_switch_layers(g: &SwitchGraph, r: &mut Routing) {
    let Some(layers) = r.layers.as_mut() else {
        return;
    };
    let mut paths = DestPaths::new(g.num_switches());
    for d in g.dests() {
        if d.switch == NO_SWITCH || d.lid > r.lft.max_lid {
            continue;
        }
        paths.resolve(g, &r.lft, d);
        paths.compute_order();
        for &s in paths.order.iter().rev() {
            let c = paths.next[s as usize];
            if g.terminal_count()[s as usize] == 0 && c != NO_CHANNEL {
                let v = g.chan_head()[c as usize];
                layers.set(s, d.lid, layers.get(v, d.lid));
            }
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
