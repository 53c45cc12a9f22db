//! Metrics that judge any routing by walking its forwarding tables ([`crate::routing::walk`]),
//! never by asking the router: connectivity, hop counts, the edge forwarding index, the maximum link
//! load under uniform all-to-all traffic, and the effective bisection bandwidth Λ.
//!
//! Definitions (P = number of CA/router ports attached to a switch, `g.terminals()`):
//! - **Routes** are the P·(P−1) ordered pairs (u, v) of distinct CA/router ports. Route (u, v)
//!   goes to v's base LID by default ([`LidChoice::Base`]); with [`LidChoice::BySource`] it goes to
//!   LID `base(v) + (index(u) mod 2^LMC(v))`, index = position in `g.terminals()` — a static spread of
//!   sources over the destination's LIDs, as MPI libraries do with LMC. Route (u, v) follows the LFT
//!   path from u's switch; CAs on the same switch use no switch-to-switch channel.
//! - **Hops** of a route: switch-to-switch channels it crosses (the two CA links are not counted).
//!   It is *minimal* when that equals the BFS distance between the two switches.
//! - **Edge forwarding index** (Hoefler et al. §II, after Heydemann et al.): the load l(c) of a
//!   switch-to-switch channel c (one direction of one link; parallel links are separate channels)
//!   is the number of routes crossing it; π = max l(c). CA links are left out as in Hoefler et al. Fig. 2:
//!   each carries exactly P−1 routes per direction whatever the routing. The average is over all
//!   channels, used or not.
//! - **Maximum link load** (Nienaber et al. Table 3): every CA sends a total of 1 spread evenly over the
//!   other P−1 CAs, so a channel carries l(c)/(P−1). `max_channel_load` = π/(P−1) over
//!   switch-to-switch channels; `max_link_load` also counts the CA links, which carry exactly 1,
//!   so it is max(1, π/(P−1)).
//! - **Effective bisection bandwidth Λ** (Hoefler et al. §IV-A, linear congestion model): a bisection
//!   pattern puts the P ports in random order, the first ⌊P/2⌋ send and the next ⌊P/2⌋ receive,
//!   the i-th sender to the i-th receiver (a random perfect matching between two random halves; with
//!   P odd one port idles). τ(c) = number of the pattern's flows crossing channel c; a flow's
//!   bandwidth is 1/max τ over its channels (1 when it crosses none: CA links carry at most one
//!   flow each way in a matching), 0 when its route does not deliver. Γ = mean flow bandwidth of
//!   the pattern (Hoefler et al.'s sum divided by the full bisection bandwidth B·P/2); Λ = mean Γ over
//!   N patterns. Pattern i draws from ChaCha8 seeded with `seed` on stream i, so Λ does not depend
//!   on the thread count. [`PairTraffic::Exchange`] lets every matched pair send both ways (every
//!   port sends once), twice the flows and more contention; compare routings only under the same
//!   variant.
//! - **Connectivity** counts (switch, LID) pairs for every switch and every LID, and (CA, LID)
//!   pairs for every CA/router port and every LID of every other port (switches included). A CA's
//!   path is its switch's path, so the CA counts weight each switch result by the CAs on it.
//!   Pairs whose switches lie in different connected components (or whose LID hangs off no
//!   switch) count as `disconnected`, not as failures, unless the tables loop.
//!
//! Speed: connectivity, hops and loads come from one destination-major pass that resolves every
//! switch's path to a LID at once ([`DestPaths`]); the routes on a channel are subtree sums of
//! route weights, accumulated leaves first. Λ walks each pattern's flows (in DLID order, for cache
//! reuse) with per-thread buffers: channel counters are reset only where a pattern touched them.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;

use crate::fabric::Fabric;
use crate::graph::SwitchDistances;
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{for_each_column, DestPaths, RouteFault};
use crate::routing::{walk, Lft, Routing, WalkEnd};

/// `term_of_endpoint` of an endpoint that is not a traffic source (a switch port, an unattached CA).
const NOT_A_TERMINAL: u32 = u32::MAX;

/// Which LID of a destination port a route uses (matters only with LMC > 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LidChoice {
    /// The destination's base LID (the default, and what Hoefler et al. measure).
    #[default]
    Base,
    /// LID `base + (source index mod 2^LMC)`: sources spread over the destination's LIDs.
    BySource,
}

#[derive(Clone, Debug)]
pub struct MetricsOptions {
    /// Random bisection patterns for Λ; 0 skips Λ.
    pub patterns: u32,
    pub seed: u64,
    pub lid_choice: LidChoice,
    /// Direction of the bisection flows; [`PairTraffic::OneWay`] is Hoefler et al.'s definition.
    pub traffic: PairTraffic,
    /// How many failing (switch, LID) pairs are named.
    pub max_failures: usize,
}

/// Who sends in a bisection pattern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairTraffic {
    /// Hoefler et al. §IV-A: the i-th port of the first half sends to the i-th of the second (⌊P/2⌋
    /// flows).
    #[default]
    OneWay,
    /// Every matched pair exchanges data both ways (2·⌊P/2⌋ flows): every port sends, as in an
    /// MPI exchange between the halves. Contention per channel roughly doubles.
    Exchange,
}

impl Default for MetricsOptions {
    fn default() -> Self {
        MetricsOptions {
            patterns: 1000,
            seed: 1,
            lid_choice: LidChoice::Base,
            traffic: PairTraffic::OneWay,
            max_failures: 8,
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum MetricsError {
    #[error("routing does not fit the fabric: forwarding tables for {tables} switches, fabric has {switches}")]
    Shape { tables: usize, switches: usize },
}

/// How walks ended, by count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub delivered: u64,
    pub no_entry: u64,
    pub dead_end: u64,
    pub loops: u64,
    /// Source and destination in different components (or the LID on no switch): no route can
    /// exist, and the tables do not loop.
    pub disconnected: u64,
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.delivered + self.failed() + self.disconnected
    }

    /// Pairs that should deliver and do not.
    pub fn failed(&self) -> u64 {
        self.no_entry + self.dead_end + self.loops
    }

    fn add(&mut self, o: &Counts) {
        self.delivered += o.delivered;
        self.no_entry += o.no_entry;
        self.dead_end += o.dead_end;
        self.loops += o.loops;
        self.disconnected += o.disconnected;
    }

    fn add_end(&mut self, end: WalkEnd, w: u64) {
        match end {
            Ok(_) => self.delivered += w,
            Err(RouteFault::NoEntry { .. } | RouteFault::BeyondTable | RouteFault::UnknownLid) => {
                self.no_entry += w
            }
            Err(RouteFault::DeadEnd { .. }) => self.dead_end += w,
            Err(RouteFault::Loop { .. }) => self.loops += w,
            Err(RouteFault::Disconnected) => self.disconnected += w,
        }
    }
}

/// A (switch, LID) pair that should deliver and does not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RouteFailure {
    /// Source switch (dense id) and, once named ([`Metrics::name_switches`]), its node GUID.
    pub switch: u32,
    pub switch_guid: Option<u64>,
    pub lid: u16,
    /// What went wrong and where the walk stopped (the looping switch for loops).
    #[serde(flatten)]
    pub fault: RouteFault,
    /// GUID of the switch the walk stopped at, once named.
    pub at_guid: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Connectivity {
    /// Every switch to every LID.
    pub switch_to_lid: Counts,
    /// Every CA/router port to every LID of every other port.
    pub ca_to_lid: Counts,
    /// LIDs whose port hangs off no switch.
    pub unattached_lids: u64,
    /// The first failing (switch, LID) pairs, by LID then switch.
    pub failures: Vec<RouteFailure>,
}

impl Connectivity {
    /// Every pair that can be routed is.
    pub fn complete(&self) -> bool {
        self.switch_to_lid.failed() == 0 && self.ca_to_lid.failed() == 0
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HopStats {
    /// CA-to-CA routes that delivered (the hop statistics cover these).
    pub routes: u64,
    /// `histogram[h]`: routes crossing h switch-to-switch channels.
    pub histogram: Vec<u64>,
    pub minimal: u64,
    pub fraction_minimal: f64,
    pub average: f64,
    pub max: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EfiStats {
    /// π: the most routes on any switch-to-switch channel.
    pub max: u64,
    /// Mean routes per switch-to-switch channel (all channels).
    pub average: f64,
    /// π / (P−1): the most-loaded switch channel under uniform all-to-all, each CA sending 1.
    pub max_channel_load: f64,
    /// Same over all links, CA links included (they carry exactly 1): max(1, max_channel_load).
    pub max_link_load: f64,
    /// Load of every channel (by channel id); not serialized.
    #[serde(skip)]
    pub per_channel: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bisection {
    pub patterns: u32,
    pub seed: u64,
    pub traffic: PairTraffic,
    /// Flows per pattern (⌊P/2⌋, twice that for [`PairTraffic::Exchange`]).
    pub flows: u64,
    /// Λ: mean over patterns of the mean flow bandwidth (fraction of link bandwidth).
    pub lambda: f64,
    /// Worst and best pattern.
    pub min: f64,
    pub max: f64,
}

/// Everything [`compute`] measures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub switches: usize,
    pub channels: usize,
    pub ca_ports: usize,
    pub lids: usize,
    /// `Routing::num_layers`.
    pub layers: u8,
    pub lid_choice: LidChoice,
    pub connectivity: Connectivity,
    pub hops: HopStats,
    pub efi: EfiStats,
    /// `None` when skipped (0 patterns) or with fewer than two CA ports.
    pub bisection: Option<Bisection>,
}

impl Metrics {
    /// One line for logs.
    pub fn summary(&self) -> String {
        let c = &self.connectivity;
        let counts = |n: &Counts| {
            let mut s = format!("{}/{} delivered", n.delivered, n.total());
            for (v, what) in [
                (n.no_entry, "no entry"),
                (n.dead_end, "dead end"),
                (n.loops, "loop"),
                (n.disconnected, "disconnected"),
            ] {
                if v > 0 {
                    s += &format!(", {v} {what}");
                }
            }
            s
        };
        let mut s = format!(
            "{} switches, {} CA ports, {} LIDs, {} layer(s); switch->LID {}; CA->LID {}; hops avg {:.2} max {} ({:.1}% minimal); EFI max {} avg {:.1}; max link load {:.3}",
            self.switches,
            self.ca_ports,
            self.lids,
            self.layers,
            counts(&c.switch_to_lid),
            counts(&c.ca_to_lid),
            self.hops.average,
            self.hops.max,
            100.0 * self.hops.fraction_minimal,
            self.efi.max,
            self.efi.average,
            self.efi.max_link_load,
        );
        if let Some(b) = &self.bisection {
            s += &format!(
                "; Λ {:.4} ({} patterns, seed {}",
                b.lambda, b.patterns, b.seed
            );
            s += if b.traffic == PairTraffic::Exchange {
                ", exchange)"
            } else {
                ")"
            };
        }
        if self.lid_choice != LidChoice::Base {
            s += "; LIDs by source";
        }
        s
    }

    /// Fills in the GUIDs of the switches named in failures.
    pub fn name_switches(&mut self, f: &Fabric, g: &SwitchGraph) {
        let guid = |s: u32| {
            g.switch_node()
                .get(s as usize)
                .and_then(|&n| f.nodes().get(n as usize))
                .map(|n| n.guid)
        };
        for x in &mut self.connectivity.failures {
            x.switch_guid = guid(x.switch);
            x.at_guid = x.fault.at().and_then(guid);
        }
    }
}

/// All metrics of routing `r` on `g`.
pub fn compute(
    g: &SwitchGraph,
    r: &Routing,
    opts: &MetricsOptions,
) -> Result<Metrics, MetricsError> {
    check_shape(g, &r.lft)?;
    let p = g.terminals().len() as u64;
    let mut m = Metrics {
        switches: g.num_switches(),
        channels: g.num_channels(),
        ca_ports: g.terminals().len(),
        lids: g.dests().len(),
        layers: r.num_layers,
        lid_choice: opts.lid_choice,
        ..Default::default()
    };
    let all = all_pairs(g, &r.lft, opts);
    m.connectivity = all.connectivity;
    let h = &all.hops;
    let total_hops: u64 = h.iter().enumerate().map(|(i, &n)| i as u64 * n).sum();
    let routes: u64 = h.iter().sum();
    m.hops = HopStats {
        routes,
        max: h.iter().rposition(|&n| n > 0).unwrap_or(0) as u32,
        histogram: all.hops,
        minimal: all.minimal,
        fraction_minimal: ratio(all.minimal, routes),
        average: ratio(total_hops, routes),
    };
    let max = all.efi.iter().copied().max().unwrap_or(0);
    let channel_load = ratio(max, p.saturating_sub(1));
    m.efi = EfiStats {
        max,
        average: ratio(all.efi.iter().sum(), all.efi.len() as u64),
        max_channel_load: channel_load,
        max_link_load: if p >= 2 { channel_load.max(1.0) } else { 0.0 },
        per_channel: all.efi,
    };
    if opts.patterns > 0 && p >= 2 {
        m.bisection = Some(effective_bisection_bandwidth(
            g,
            &r.lft,
            &BisectionSpec {
                patterns: opts.patterns,
                seed: opts.seed,
                lid_choice: opts.lid_choice,
                traffic: opts.traffic,
            },
        )?);
    }
    Ok(m)
}

/// [`compute`], with failing switches named by GUID.
pub fn compute_named(
    f: &Fabric,
    g: &SwitchGraph,
    r: &Routing,
    opts: &MetricsOptions,
) -> Result<Metrics, MetricsError> {
    let mut m = compute(g, r, opts)?;
    m.name_switches(f, g);
    Ok(m)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn check_shape(g: &SwitchGraph, lft: &Lft) -> Result<(), MetricsError> {
    if lft.num_switches() != g.num_switches() {
        return Err(MetricsError::Shape {
            tables: lft.num_switches(),
            switches: g.num_switches(),
        });
    }
    Ok(())
}

/// What the all-pairs pass gathers (per chunk of source switches, then merged).
struct AllPairs {
    connectivity: Connectivity,
    hops: Vec<u64>,
    minimal: u64,
    efi: Vec<u64>,
}

/// How many CA routes use the path (source switch, dest LID), per [`LidChoice`].
struct RouteWeights<'a> {
    g: &'a SwitchGraph,
    choice: LidChoice,
    /// Endpoint index -> position in `g.terminals()`, or [`NOT_A_TERMINAL`].
    term_of_endpoint: Vec<u32>,
    /// BySource only: `residues[s * 128 + r]` = CAs on switch s whose terminal index is r mod 128.
    residues: Vec<u32>,
    lmc: Vec<u8>,
}

impl<'a> RouteWeights<'a> {
    fn new(g: &'a SwitchGraph, choice: LidChoice) -> Self {
        let n_end = g
            .dests()
            .iter()
            .map(|d| d.endpoint as usize + 1)
            .max()
            .unwrap_or(0);
        let mut term_of_endpoint = vec![NOT_A_TERMINAL; n_end];
        let mut lmc = vec![0u8; n_end];
        for d in g.dests() {
            lmc[d.endpoint as usize] = lmc[d.endpoint as usize].max(lmc_bits(d.lid_offset));
        }
        let mut residues = Vec::new();
        if choice == LidChoice::BySource {
            residues = vec![0u32; g.num_switches() * 128];
        }
        for (t, &(e, s)) in g.terminals().iter().enumerate() {
            if let Some(x) = term_of_endpoint.get_mut(e as usize) {
                *x = t as u32;
            }
            if choice == LidChoice::BySource {
                residues[s as usize * 128 + t % 128] += 1;
            }
        }
        RouteWeights {
            g,
            choice,
            term_of_endpoint,
            residues,
            lmc,
        }
    }

    /// CA routes (u, v) with u on switch `s` that use the LID of `d` (0 for switch LIDs).
    fn weight(&self, s: u32, d: &crate::graph::Dest) -> u64 {
        if d.exit_port == 0 || d.switch == NO_SWITCH {
            return 0;
        }
        let t = self.term_of_endpoint[d.endpoint as usize];
        if t == NOT_A_TERMINAL {
            return 0;
        }
        let here = d.switch == s;
        match self.choice {
            LidChoice::Base => {
                if d.lid_offset != 0 {
                    return 0;
                }
                u64::from(self.g.terminal_count()[s as usize]) - u64::from(here)
            }
            LidChoice::BySource => {
                let m = 1usize << self.lmc[d.endpoint as usize];
                let k = usize::from(d.lid_offset);
                let row = &self.residues[s as usize * 128..(s as usize + 1) * 128];
                let n: u64 = (k..128).step_by(m).map(|r| u64::from(row[r])).sum();
                n - u64::from(here && t as usize % m == k)
            }
        }
    }
}

/// LMC implied by a LID offset: the LMC is at least the bit length of every offset seen.
fn lmc_bits(offset: u8) -> u8 {
    (8 - offset.leading_zeros()) as u8
}

/// The all-pairs pass, destination-major: per LID, [`DestPaths`] resolves every switch's path at
/// once, and the routes on each channel are subtree sums of route weights, leaves first (O(S) per
/// LID instead of O(S · hops) walks).
fn all_pairs(g: &SwitchGraph, lft: &Lft, opts: &MetricsOptions) -> AllPairs {
    let ns = g.num_switches();
    let nc = g.num_channels();
    let weights = RouteWeights::new(g, opts.lid_choice);
    let unattached = g.dests().iter().filter(|d| d.switch == NO_SWITCH).count() as u64;
    let p = g.terminals().len() as u64;
    let dist = SwitchDistances::new(g);

    let nd = g.dests().len();
    let chunks = (rayon::current_num_threads() * 8).clamp(1, nd.max(1));
    let per = nd.div_ceil(chunks).max(1);
    let parts: Vec<AllPairs> = (0..chunks)
        .into_par_iter()
        .map(|k| {
            let mut part = AllPairs {
                connectivity: Connectivity::default(),
                hops: Vec::new(),
                minimal: 0,
                efi: vec![0; nc],
            };
            let mut paths = DestPaths::new(ns);
            let mut w = vec![0u64; ns];
            let dests = &g.dests()[(k * per).min(nd)..((k + 1) * per).min(nd)];
            for_each_column(g, lft, None, dests, |d, ports, _| {
                if d.switch == NO_SWITCH {
                    return;
                }
                let to = dist.to(d.switch);
                paths.resolve_column(g, d, ports);
                for s in 0..ns as u32 {
                    let end = if ports.is_none() {
                        Err(RouteFault::BeyondTable)
                    } else {
                        separate_disconnected(paths.end[s as usize], to[s as usize] == u16::MAX)
                    };
                    let c = &mut part.connectivity;
                    c.switch_to_lid.add_end(end, 1);
                    // CAs on s, except the LID's own port when it hangs off s.
                    let tc = u64::from(g.terminal_count()[s as usize]);
                    let own = u64::from(d.switch == s && d.exit_port != 0);
                    c.ca_to_lid.add_end(end, tc - own);
                    w[s as usize] = 0;
                    match end {
                        Ok(h) => {
                            let ws = weights.weight(s, d);
                            if ws > 0 {
                                w[s as usize] = ws;
                                let h = h as usize;
                                if part.hops.len() <= h {
                                    part.hops.resize(h + 1, 0);
                                }
                                part.hops[h] += ws;
                                if h == usize::from(to[s as usize]) {
                                    part.minimal += ws;
                                }
                            }
                        }
                        Err(RouteFault::Disconnected) => {}
                        _ if c.failures.len() < opts.max_failures => {
                            c.failures.push(failure(s, d.lid, end));
                        }
                        _ => {}
                    }
                }
                // Routes on channel next[u] = the weights of u's subtree; only delivering paths
                // carry weight, and they only lead to delivering switches.
                paths.compute_order();
                for &u in &paths.order {
                    let c = paths.next[u as usize];
                    let wu = w[u as usize];
                    if c != NO_CHANNEL && wu > 0 {
                        part.efi[c as usize] += wu;
                        w[g.chan_head()[c as usize] as usize] += wu;
                    }
                }
            });
            part
        })
        .collect();

    merge_parts(parts, unattached, ns as u64, p, nc, opts.max_failures)
}

/// The all-pairs pass by walking every (switch, LID) path: the reference [`all_pairs`] must
/// agree with (tests only).
/// Merges per-chunk all-pairs results in chunk order, so failures stay sorted by LID, then switch,
/// whatever the thread count.
fn merge_parts(
    parts: Vec<AllPairs>,
    unattached: u64,
    ns: u64,
    p: u64,
    nc: usize,
    max_failures: usize,
) -> AllPairs {
    let mut all = AllPairs {
        connectivity: Connectivity {
            unattached_lids: unattached,
            ..Default::default()
        },
        hops: Vec::new(),
        minimal: 0,
        efi: vec![0; nc],
    };
    let c = &mut all.connectivity;
    c.switch_to_lid.disconnected += unattached * ns;
    c.ca_to_lid.disconnected += unattached * p;
    for part in parts {
        c.switch_to_lid.add(&part.connectivity.switch_to_lid);
        c.ca_to_lid.add(&part.connectivity.ca_to_lid);
        c.failures.extend(part.connectivity.failures);
        if all.hops.len() < part.hops.len() {
            all.hops.resize(part.hops.len(), 0);
        }
        for (a, b) in all.hops.iter_mut().zip(&part.hops) {
            *a += b;
        }
        all.minimal += part.minimal;
        for (a, b) in all.efi.iter_mut().zip(&part.efi) {
            *a += b;
        }
    }
    c.failures.truncate(max_failures);
    all
}

#[cfg(test)]
fn all_pairs_by_walks(g: &SwitchGraph, lft: &Lft, opts: &MetricsOptions) -> AllPairs {
    let ns = g.num_switches();
    let nc = g.num_channels();
    let weights = RouteWeights::new(g, opts.lid_choice);
    let unattached = g.dests().iter().filter(|d| d.switch == NO_SWITCH).count() as u64;
    let p = g.terminals().len() as u64;

    let chunks = (rayon::current_num_threads() * 4).clamp(1, ns.max(1));
    let per = ns.div_ceil(chunks).max(1);
    let parts: Vec<AllPairs> = (0..chunks)
        .into_par_iter()
        .map(|k| {
            let mut part = AllPairs {
                connectivity: Connectivity::default(),
                hops: Vec::new(),
                minimal: 0,
                efi: vec![0; nc],
            };
            let mut dist = vec![u32::MAX; ns];
            let mut queue = Vec::with_capacity(ns);
            let mut path = Vec::new();
            let lo = (k * per).min(ns) as u32;
            let hi = ((k + 1) * per).min(ns) as u32;
            for s in lo..hi {
                bfs_from(g, s, &mut dist, &mut queue);
                let tc = u64::from(g.terminal_count()[s as usize]);
                for d in g.dests().iter().filter(|d| d.switch != NO_SWITCH) {
                    path.clear();
                    let end = if d.lid > lft.max_lid {
                        Err(RouteFault::BeyondTable)
                    } else {
                        let end = walk(g, lft, s, d.lid, |c| path.push(c));
                        separate_disconnected(end, dist[d.switch as usize] == u32::MAX)
                    };
                    let c = &mut part.connectivity;
                    c.switch_to_lid.add_end(end, 1);
                    // CAs on s, except the LID's own port when it hangs off s.
                    let own = u64::from(d.switch == s && d.exit_port != 0);
                    c.ca_to_lid.add_end(end, tc - own);
                    match end {
                        Ok(h) => {
                            let w = weights.weight(s, d);
                            if w > 0 {
                                let h = h as usize;
                                if part.hops.len() <= h {
                                    part.hops.resize(h + 1, 0);
                                }
                                part.hops[h] += w;
                                if h as u32 == dist[d.switch as usize] {
                                    part.minimal += w;
                                }
                                for &ch in &path {
                                    part.efi[ch as usize] += w;
                                }
                            }
                        }
                        Err(RouteFault::Disconnected) => {}
                        _ if c.failures.len() < opts.max_failures => {
                            c.failures.push(failure(s, d.lid, end));
                        }
                        _ => {}
                    }
                }
            }
            part
        })
        .collect();

    merge_parts(parts, unattached, ns as u64, p, nc, opts.max_failures)
}

/// A walk's outcome with "no path can exist" told apart from real failures: a path that does not
/// arrive from another component is [`RouteFault::Disconnected`], unless it loops (a forwarding
/// loop is a fault wherever it starts).
fn separate_disconnected(end: WalkEnd, disconnected: bool) -> WalkEnd {
    match end {
        Ok(hops) => Ok(hops),
        e @ Err(RouteFault::Loop { .. }) => e,
        _ if disconnected => Err(RouteFault::Disconnected),
        // dest_of_lid and the table bound were checked by the callers.
        Err(RouteFault::UnknownLid) => Err(RouteFault::BeyondTable),
        e => e,
    }
}

fn failure(switch: u32, lid: u16, end: WalkEnd) -> RouteFailure {
    RouteFailure {
        switch,
        switch_guid: None,
        lid,
        fault: end.err().unwrap_or(RouteFault::BeyondTable),
        at_guid: None,
    }
}

/// Forward BFS distances (in channels) from switch `s`; `u32::MAX` where unreachable.
#[cfg(test)]
fn bfs_from(g: &SwitchGraph, s: u32, dist: &mut [u32], queue: &mut Vec<u32>) {
    dist.fill(u32::MAX);
    queue.clear();
    dist[s as usize] = 0;
    queue.push(s);
    let mut i = 0;
    while i < queue.len() {
        let u = queue[i];
        i += 1;
        for c in g.out_channels(u) {
            let v = g.chan_head()[c as usize] as usize;
            if dist[v] == u32::MAX {
                dist[v] = dist[u as usize] + 1;
                queue.push(v as u32);
            }
        }
    }
}

/// Per-thread buffers for bisection patterns; `count` is all zeros between patterns.
struct PatternScratch {
    count: Vec<u32>,
    /// Channels of every flow of the pattern, back to back; `ends[i]` closes flow i, `u32::MAX`
    /// marks a flow that did not deliver.
    chans: Vec<u32>,
    ends: Vec<u32>,
    perm: Vec<u32>,
    /// The pattern's flows as (DLID << 32 | source switch), sorted.
    keys: Vec<u64>,
}

impl PatternScratch {
    fn new(g: &SwitchGraph) -> Self {
        PatternScratch {
            count: vec![0; g.num_channels()],
            chans: Vec::new(),
            ends: Vec::new(),
            perm: Vec::with_capacity(g.terminals().len()),
            keys: Vec::new(),
        }
    }
}

/// Per CA/router port (index into `g.terminals()`): its switch, base LID and LMC, gathered once
/// from `g.dests()` (the fabric's endpoints are not needed).
struct Terminals {
    switch: Vec<u32>,
    base: Vec<u16>,
    lmc: Vec<u8>,
}

impl Terminals {
    fn new(g: &SwitchGraph) -> Self {
        let n_end = g
            .dests()
            .iter()
            .map(|d| d.endpoint as usize + 1)
            .max()
            .unwrap_or(0);
        let mut term_of_endpoint = vec![NOT_A_TERMINAL; n_end];
        for (t, &(e, _)) in g.terminals().iter().enumerate() {
            if let Some(x) = term_of_endpoint.get_mut(e as usize) {
                *x = t as u32;
            }
        }
        let p = g.terminals().len();
        let mut base = vec![0u16; p];
        let mut lmc = vec![0u8; p];
        for d in g.dests() {
            let t = term_of_endpoint[d.endpoint as usize];
            if t == NOT_A_TERMINAL {
                continue;
            }
            if d.lid_offset == 0 {
                base[t as usize] = d.lid;
            }
            lmc[t as usize] = lmc[t as usize].max(lmc_bits(d.lid_offset));
        }
        Terminals {
            switch: g.terminals().iter().map(|&(_, s)| s).collect(),
            base,
            lmc,
        }
    }

    /// The destination LID of flow u -> v.
    #[inline]
    fn flow_lid(&self, u: u32, v: u32, choice: LidChoice) -> u16 {
        let base = self.base[v as usize];
        match choice {
            LidChoice::Base => base,
            LidChoice::BySource => base + (u % (1u32 << self.lmc[v as usize])) as u16,
        }
    }
}

/// Mean bandwidth of the flows `(u, v)` (indices into `g.terminals()`) under the linear congestion
/// model: each flow gets 1 / (most flows on any channel of its path), 0 if its route fails.
fn pattern_value(
    g: &SwitchGraph,
    lft: &Lft,
    terms: &Terminals,
    flows: impl Iterator<Item = (u32, u32)>,
    choice: LidChoice,
    sc: &mut PatternScratch,
) -> f64 {
    sc.chans.clear();
    sc.ends.clear();
    // Walk the flows in DLID order: flows to nearby LIDs share the table lines of their last hops
    // (the mean bandwidth does not depend on the order, and sorting is deterministic).
    sc.keys.clear();
    sc.keys.extend(flows.map(|(u, v)| {
        (u64::from(terms.flow_lid(u, v, choice)) << 32) | u64::from(terms.switch[u as usize])
    }));
    sc.keys.sort_unstable();
    for &key in &sc.keys {
        let start = sc.chans.len();
        let (lid, from) = ((key >> 32) as u16, key as u32);
        let chans = &mut sc.chans;
        match walk(g, lft, from, lid, |c| chans.push(c)) {
            Ok(_) => {
                for &c in &sc.chans[start..] {
                    sc.count[c as usize] += 1;
                }
                sc.ends.push(sc.chans.len() as u32);
            }
            _ => {
                sc.chans.truncate(start);
                sc.ends.push(u32::MAX);
            }
        }
    }
    let mut sum = 0.0;
    let mut start = 0usize;
    for &end in &sc.ends {
        if end == u32::MAX {
            continue;
        }
        let path = &sc.chans[start..end as usize];
        let worst = path
            .iter()
            .map(|&c| sc.count[c as usize])
            .max()
            .unwrap_or(1);
        sum += 1.0 / f64::from(worst);
        start = end as usize;
    }
    // Reset only what this pattern touched.
    for &c in &sc.chans {
        sc.count[c as usize] = 0;
    }
    if sc.ends.is_empty() {
        0.0
    } else {
        sum / sc.ends.len() as f64
    }
}

/// What [`effective_bisection_bandwidth`] simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BisectionSpec {
    pub patterns: u32,
    pub seed: u64,
    pub lid_choice: LidChoice,
    pub traffic: PairTraffic,
}

impl BisectionSpec {
    /// Hoefler et al.'s definition: one-way flows to base LIDs.
    pub fn new(patterns: u32, seed: u64) -> Self {
        BisectionSpec {
            patterns,
            seed,
            lid_choice: LidChoice::Base,
            traffic: PairTraffic::OneWay,
        }
    }
}

/// Effective bisection bandwidth Λ over `spec.patterns` random bisections (see the module doc).
/// Deterministic for a given seed, whatever the thread count.
pub fn effective_bisection_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    spec: &BisectionSpec,
) -> Result<Bisection, MetricsError> {
    let all: Vec<u32> = (0..g.terminals().len() as u32).collect();
    group_bandwidth(g, lft, spec, &all, None)
}

/// Λ of traffic within a group of terminals or from it to another (indices into
/// `g.terminals()`): with `to` = `None`, random bisections of `from` (all terminals: Hoefler et
/// al.'s Λ, [`effective_bisection_bandwidth`]); with `to`, every terminal of the smaller side
/// paired with a distinct random one of the other, flows from `from` to `to` (both ways with
/// [`PairTraffic::Exchange`]), e.g. compute nodes writing to I/O nodes.
pub fn group_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    spec: &BisectionSpec,
    from: &[u32],
    to: Option<&[u32]>,
) -> Result<Bisection, MetricsError> {
    let BisectionSpec {
        patterns,
        seed,
        lid_choice: choice,
        traffic,
    } = *spec;
    check_shape(g, lft)?;
    let terms = Terminals::new(g);
    // One-way pairs per pattern.
    let pairs = match to {
        None => from.len() / 2,
        Some(to) => from.len().min(to.len()),
    };
    let values: Vec<f64> = (0..patterns)
        .into_par_iter()
        .map_init(
            || PatternScratch::new(g),
            |sc, i| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(u64::from(i));
                let mut perm = std::mem::take(&mut sc.perm);
                perm.clear();
                perm.extend_from_slice(from);
                perm.shuffle(&mut rng);
                let h = pairs;
                let pair = |j: usize| match to {
                    None => (perm[j], perm[h + j]),
                    Some(to) => (perm[j], to[j]),
                };
                let v = match traffic {
                    PairTraffic::OneWay => {
                        pattern_value(g, lft, &terms, (0..h).map(pair), choice, sc)
                    }
                    PairTraffic::Exchange => {
                        let flows = (0..h).flat_map(|j| {
                            let (a, b) = pair(j);
                            [(a, b), (b, a)]
                        });
                        pattern_value(g, lft, &terms, flows, choice, sc)
                    }
                };
                sc.perm = perm;
                v
            },
        )
        .collect();
    let n = values.len().max(1) as f64;
    Ok(Bisection {
        patterns,
        seed,
        traffic,
        flows: pairs as u64
            * if traffic == PairTraffic::Exchange {
                2
            } else {
                1
            },
        lambda: values.iter().sum::<f64>() / n,
        min: if values.is_empty() {
            0.0
        } else {
            values.iter().copied().fold(f64::INFINITY, f64::min)
        },
        max: values.iter().copied().fold(0.0, f64::max),
    })
}

/// Mean flow bandwidth of one given pattern, flows as (source, destination) indices into
/// `g.terminals()`, under the linear congestion model of [`effective_bisection_bandwidth`]. Flows
/// naming a port out of range are ignored.
pub fn pattern_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    flows: &[(u32, u32)],
    choice: LidChoice,
) -> Result<f64, MetricsError> {
    check_shape(g, lft)?;
    let terms = Terminals::new(g);
    let p = g.terminals().len() as u32;
    let mut sc = PatternScratch::new(g);
    let flows = flows.iter().copied().filter(|&(u, v)| u < p && v < p);
    Ok(pattern_value(g, lft, &terms, flows, choice, &mut sc))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::routing::NO_PATH;
    use crate::testkit::{
        fabric, fabric_with, fat_tree, mesh2x2, ring, shortest_path_routing, two_switches,
        with_graph,
    };

    fn opts(patterns: u32) -> MetricsOptions {
        MetricsOptions {
            patterns,
            ..Default::default()
        }
    }

    #[test]
    fn single_crossbar_has_full_bandwidth() {
        let (_, g) = fabric_with(&[6], &[]);
        let r = crate::sssp::route(&g);
        let m = compute(&g, &r, &opts(200)).unwrap();
        assert!(m.connectivity.complete());
        assert_eq!(m.connectivity.switch_to_lid.delivered, 7);
        // 6 CAs, each to the 5 other CAs and the switch.
        assert_eq!(m.connectivity.ca_to_lid.delivered, 6 * 6);
        assert_eq!(m.hops.routes, 30);
        assert_eq!(m.hops.histogram, vec![30]);
        assert_eq!(m.hops.fraction_minimal, 1.0);
        assert_eq!(m.efi.max, 0);
        assert_eq!(m.efi.max_link_load, 1.0);
        let b = m.bisection.unwrap();
        assert_eq!((b.lambda, b.min, b.max, b.flows), (1.0, 1.0, 1.0, 3));
    }

    /// Two switches, one link, four CAs on each: terminals 0..4 on switch 0, 4..8 on switch 1.
    fn dumbbell() -> (SwitchGraph, Routing) {
        let (_, g) = fabric(2, 4, &[((0, 1), (1, 1))]);
        let r = crate::sssp::route(&g);
        (g, r)
    }

    #[test]
    fn dumbbell_efi_hops_and_link_load() {
        let (g, r) = dumbbell();
        let m = compute(&g, &r, &opts(0)).unwrap();
        assert!(m.bisection.is_none());
        // 56 routes: 2*4*3 stay on their switch, 32 cross, 16 each way over the one link.
        assert_eq!(m.hops.routes, 56);
        assert_eq!(m.hops.histogram, vec![24, 32]);
        assert_eq!(m.hops.minimal, 56);
        assert!((m.hops.average - 32.0 / 56.0).abs() < 1e-12);
        assert_eq!(m.hops.max, 1);
        assert_eq!(m.efi.per_channel, vec![16, 16]);
        assert_eq!((m.efi.max, m.efi.average), (16, 16.0));
        assert!((m.efi.max_channel_load - 16.0 / 7.0).abs() < 1e-12);
        assert_eq!(m.efi.max_link_load, m.efi.max_channel_load);
    }

    #[test]
    fn dumbbell_patterns_by_hand() {
        let (g, r) = dumbbell();
        let bw =
            |flows: &[(u32, u32)]| pattern_bandwidth(&g, &r.lft, flows, LidChoice::Base).unwrap();
        // All four cross the same way: they share the one channel.
        assert_eq!(bw(&[(0, 4), (1, 5), (2, 6), (3, 7)]), 0.25);
        // Two each way: each direction is its own channel.
        assert_eq!(bw(&[(0, 4), (1, 5), (6, 2), (7, 3)]), 0.5);
        assert_eq!(bw(&[(0, 4), (1, 5), (2, 3), (6, 7)]), 0.75);
        assert_eq!(bw(&[(0, 1), (2, 3), (4, 5), (6, 7)]), 1.0);
        assert_eq!(bw(&[(0, 4), (7, 3)]), 1.0);
    }

    /// Exact expectation of the pattern value on the dumbbell over all 8! orders, by the formula
    /// Γ = (local flows + [any flow A->B] + [any flow B->A]) / 4.
    fn dumbbell_exact_lambda() -> f64 {
        fn rec(perm: &mut Vec<u32>, used: u32, sum: &mut f64, count: &mut u64) {
            if perm.len() == 8 {
                let (mut ab, mut ba, mut local) = (0, 0, 0);
                for j in 0..4 {
                    match (perm[j] < 4, perm[j + 4] < 4) {
                        (true, false) => ab += 1,
                        (false, true) => ba += 1,
                        _ => local += 1,
                    }
                }
                *sum += f64::from(local + u32::from(ab > 0) + u32::from(ba > 0)) / 4.0;
                *count += 1;
                return;
            }
            for t in 0..8 {
                if used & (1 << t) == 0 {
                    perm.push(t);
                    rec(perm, used | (1 << t), sum, count);
                    perm.pop();
                }
            }
        }
        let (mut sum, mut count) = (0.0, 0);
        rec(&mut Vec::new(), 0, &mut sum, &mut count);
        assert_eq!(count, 40320);
        sum / count as f64
    }

    #[test]
    fn dumbbell_lambda_matches_the_exact_expectation() {
        let (g, r) = dumbbell();
        let exact = dumbbell_exact_lambda();
        let b = effective_bisection_bandwidth(&g, &r.lft, &BisectionSpec::new(20_000, 7)).unwrap();
        assert!(
            (b.lambda - exact).abs() < 0.01,
            "Λ {} vs exact {exact}",
            b.lambda
        );
        assert_eq!(b.min, 0.25);
        assert_eq!(b.max, 1.0);
    }

    #[test]
    fn lambda_is_deterministic_whatever_the_thread_count() {
        let (_, g) = with_graph(fat_tree(4, 2, 3, 0));
        let r = crate::sssp::route(&g);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| compute(&g, &r, &opts(300)).unwrap())
        };
        let (a, b) = (run(1), run(3));
        assert_eq!(a, b);
        let other_seed =
            effective_bisection_bandwidth(&g, &r.lft, &BisectionSpec::new(300, 2)).unwrap();
        assert_ne!(other_seed.lambda, a.bisection.unwrap().lambda);
    }

    #[test]
    fn balanced_sssp_beats_unbalanced_shortest_paths_on_a_fat_tree() {
        // 4 leaves x 3 CAs, 2 spines. Lowest-port shortest paths send everything over spine 0.
        let (_, g) = with_graph(fat_tree(4, 2, 3, 0));
        let naive = compute(&g, &shortest_path_routing(&g), &opts(500)).unwrap();
        let sssp = compute(&g, &crate::sssp::route(&g), &opts(500)).unwrap();
        for m in [&naive, &sssp] {
            assert!(m.connectivity.complete());
            assert_eq!(m.hops.fraction_minimal, 1.0);
            // 12 CAs: 4*3*2 routes on a leaf, 4*3*9 = 108 through the spines (2 hops).
            assert_eq!(m.hops.histogram, vec![24, 0, 108]);
        }
        // Leaf 0 sends 3 * 9 routes up; unbalanced, all over one channel.
        assert_eq!(naive.efi.max, 27);
        // Destination-based routing cannot reach 14 (leaf 0's 9 remote destinations take 3 routes
        // each over one spine or the other), but balancing must clearly beat 27.
        assert!(sssp.efi.max <= 18, "{}", sssp.summary());
        // Total load is the same (every route is minimal): 108 routes x 2 channels.
        assert_eq!(naive.efi.per_channel.iter().sum::<u64>(), 216);
        assert_eq!(sssp.efi.per_channel.iter().sum::<u64>(), 216);
        let (ln, ls) = (
            naive.bisection.unwrap().lambda,
            sssp.bisection.unwrap().lambda,
        );
        assert!(ls > ln + 0.1, "sssp Λ {ls} vs naive Λ {ln}");
    }

    #[test]
    fn connectivity_failures_are_counted_and_named() {
        let (f, g) = mesh2x2(2);
        let good = shortest_path_routing(&g);
        let m = compute(&g, &good, &opts(0)).unwrap();
        assert!(m.connectivity.complete());
        assert_eq!(m.connectivity.switch_to_lid.delivered, 4 * 12);
        assert_eq!(m.connectivity.ca_to_lid.delivered, 8 * 11);

        let ca_lid = g
            .dests()
            .iter()
            .find(|d| d.exit_port != 0 && d.switch == 3)
            .unwrap()
            .lid;
        let mut r = good.clone();
        // Loop between 0 and 1, no entry at 2 (for the same LID), and a dead end at 3 for its
        // own switch LID.
        r.lft.set(
            0,
            ca_lid,
            g.chan_port()[g.channel_at(0, 1).unwrap() as usize],
        );
        r.lft.set(1, ca_lid, 2);
        r.lft.set(2, ca_lid, NO_PATH);
        r.lft.set(3, 4, 20);
        let m = compute_named(&f, &g, &r, &opts(50)).unwrap();
        let c = &m.connectivity;
        assert!(!c.complete());
        // To ca_lid: 0 and 1 loop, 2 has no entry, 3 delivers. To LID 4 (switch 3): all four
        // switches end at 3's dead end.
        assert_eq!(
            c.switch_to_lid,
            Counts {
                delivered: 48 - 7,
                no_entry: 1,
                dead_end: 4,
                loops: 2,
                disconnected: 0
            }
        );
        // CAs: two per switch; the owner of ca_lid (on switch 3) is not counted for its own LID.
        assert_eq!(c.ca_to_lid.loops, 4);
        assert_eq!(c.ca_to_lid.no_entry, 2);
        assert_eq!(c.ca_to_lid.dead_end, 8);
        assert_eq!(c.ca_to_lid.total(), 8 * 11);
        assert_eq!(c.failures.len(), 7);
        let first = &c.failures[0];
        assert_eq!(
            (first.switch, first.switch_guid, first.lid),
            (0, Some(0x100), 4)
        );
        assert_eq!(
            (first.fault, first.at_guid),
            (RouteFault::DeadEnd { at: 3, port: 20 }, Some(0x103))
        );
        assert!(c
            .failures
            .iter()
            .any(|x| matches!(x.fault, RouteFault::Loop { .. }) && x.lid == ca_lid));
        assert!(c
            .failures
            .iter()
            .any(|x| x.fault == RouteFault::NoEntry { at: 2 } && x.switch == 2));
        // Routes that fail do not count in hops or EFI, and fail in Λ's flows.
        assert_eq!(m.hops.routes, 8 * 7 - 6);
        assert!(m.bisection.as_ref().unwrap().lambda < 1.0);
        assert!(m.summary().contains("2 loop"), "{}", m.summary());
    }

    #[test]
    fn non_minimal_routes_are_seen() {
        let (_, g) = with_graph(ring(5, 1, 0, true));
        let mut r = crate::sssp::route(&g);
        // Send switch 0's traffic for the CA on switch 1 the long way round (4 hops).
        let ca1 = g
            .dests()
            .iter()
            .find(|d| d.exit_port != 0 && d.switch == 1)
            .unwrap()
            .lid;
        let back = g
            .out_channels(0)
            .find(|&c| g.chan_head()[c as usize] == 4)
            .unwrap();
        r.lft.set(0, ca1, g.chan_port()[back as usize]);
        for s in [4u32, 3, 2] {
            let c = g
                .out_channels(s)
                .find(|&c| g.chan_head()[c as usize] == (s + 4) % 5)
                .unwrap();
            r.lft.set(s, ca1, g.chan_port()[c as usize]);
        }
        let m = compute(&g, &r, &opts(0)).unwrap();
        assert!(m.connectivity.complete());
        assert_eq!(m.hops.routes, 20);
        assert_eq!(m.hops.max, 4);
        // Routes to ca1 from switches 0 (4 hops, BFS 1) and 4 (3 hops, BFS 2) are no longer
        // minimal; from 3 (2 hops) and 2 (1 hop) they still are.
        assert_eq!(m.hops.minimal, 18);
        assert_eq!(m.hops.histogram, vec![0, 9, 9, 1, 1]);
        assert!((m.hops.fraction_minimal - 0.9).abs() < 1e-12);
    }

    #[test]
    fn partitioned_fabric_counts_disconnected_pairs() {
        let (_, g) = fabric(4, 1, &[((0, 1), (1, 1)), ((2, 1), (3, 1))]);
        let r = shortest_path_routing(&g);
        let m = compute(&g, &r, &opts(10)).unwrap();
        assert!(m.connectivity.complete());
        assert_eq!(m.connectivity.switch_to_lid.disconnected, 16);
        assert_eq!(m.connectivity.ca_to_lid.disconnected, 16);
        assert_eq!(m.hops.routes, 4);
    }

    /// Two switches, two parallel links; CAs 0 and 1 on switch 0, CA 2 on switch 1; LMC 1.
    fn lmc_fabric() -> (SwitchGraph, Routing) {
        let f = two_switches(8, 2, &[(0, 5, 4, 1), (0, 6, 6, 1), (1, 5, 8, 1)]);
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = shortest_path_routing(&g);
        // CA 2 owns LIDs 8 and 9: the second LID takes the second link.
        r.lft.set(0, 9, 2);
        (g, r)
    }

    #[test]
    fn lid_choice_by_source_spreads_over_lmc_paths() {
        let (g, r) = lmc_fabric();
        let c01 = g.channel_at(0, 1).unwrap() as usize;
        let c02 = g.channel_at(0, 2).unwrap() as usize;
        let base = compute(&g, &r, &opts(0)).unwrap();
        assert_eq!(base.hops.routes, 6);
        assert_eq!(
            (base.efi.per_channel[c01], base.efi.per_channel[c02]),
            (2, 0)
        );
        let spread = compute(
            &g,
            &r,
            &MetricsOptions {
                lid_choice: LidChoice::BySource,
                ..opts(0)
            },
        )
        .unwrap();
        assert_eq!(spread.hops.routes, 6);
        // CA 0 uses LID 8, CA 1 uses LID 9.
        assert_eq!(
            (spread.efi.per_channel[c01], spread.efi.per_channel[c02]),
            (1, 1)
        );
        assert!(spread.summary().contains("LIDs by source"));
        let flows = [(0, 2), (1, 2)];
        assert_eq!(
            pattern_bandwidth(&g, &r.lft, &flows, LidChoice::Base).unwrap(),
            0.5
        );
        assert_eq!(
            pattern_bandwidth(&g, &r.lft, &flows, LidChoice::BySource).unwrap(),
            1.0
        );
    }

    #[test]
    fn shape_mismatch_and_serialization() {
        let (g, mut r) = dumbbell();
        let m = compute(&g, &r, &opts(20)).unwrap();
        let json = serde_json::to_string(&m).unwrap();
        for key in [
            "\"lambda\"",
            "\"histogram\"",
            "\"max_link_load\"",
            "\"ca_to_lid\"",
        ] {
            assert!(json.contains(key), "{json}");
        }
        assert!(!json.contains("per_channel"));
        assert!(m.summary().contains("Λ"), "{}", m.summary());
        r.lft = Lft::new(3, g.max_lid());
        assert_eq!(
            compute(&g, &r, &opts(0)),
            Err(MetricsError::Shape {
                tables: 3,
                switches: 2
            })
        );
    }

    #[test]
    fn generated_fat_trees_sssp_against_unbalanced_shortest_paths() {
        for spec in ["ktree:4,3", "fattree2:8"] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let sssp = compute(&g, &crate::sssp::route(&g), &opts(1000)).unwrap();
            let naive = compute(&g, &shortest_path_routing(&g), &opts(1000)).unwrap();
            let p = g.terminals().len() as u64;
            for m in [&sssp, &naive] {
                assert!(m.connectivity.complete(), "{spec}: {}", m.summary());
                assert_eq!(m.hops.routes, p * (p - 1));
                assert_eq!(m.hops.fraction_minimal, 1.0);
            }
            // Both are minimal, so the total load is the same; only its spread differs.
            assert_eq!(sssp.efi.average, naive.efi.average);
            assert!(
                sssp.efi.max * 3 < naive.efi.max,
                "{spec}: {} vs {}",
                sssp.summary(),
                naive.summary()
            );
            assert!(
                (sssp.efi.max as f64) <= 1.25 * sssp.efi.average,
                "{spec}: {}",
                sssp.summary()
            );
            let (ls, ln) = (
                sssp.bisection.unwrap().lambda,
                naive.bisection.unwrap().lambda,
            );
            assert!(ls > 0.7 && ls > ln + 0.3, "{spec}: Λ sssp {ls}, naive {ln}");
        }
    }

    #[test]
    fn all_pairs_by_trees_agrees_with_walks() {
        use rand::Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for spec in ["torus:3x3,2", "ktree:2,3", "random:10,6,2,14,lmc=1"] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let ns = g.num_switches() as u32;
            for trial in 0..30 {
                let mut r = crate::sssp::route(&g);
                for _ in 0..trial % 5 {
                    let s = rng.gen_range(0..ns);
                    let lid = g.dests()[rng.gen_range(0..g.dests().len())].lid;
                    let ports = g.port_base()[s as usize + 1] - g.port_base()[s as usize];
                    let p = if rng.gen_bool(0.2) {
                        NO_PATH
                    } else {
                        rng.gen_range(0..ports) as u8
                    };
                    r.lft.set(s, lid, p);
                }
                for lid_choice in [LidChoice::Base, LidChoice::BySource] {
                    let o = MetricsOptions {
                        lid_choice,
                        max_failures: usize::MAX,
                        ..opts(0)
                    };
                    let (a, b) = (
                        all_pairs(&g, &r.lft, &o),
                        all_pairs_by_walks(&g, &r.lft, &o),
                    );
                    let (ca, cb) = (&a.connectivity, &b.connectivity);
                    assert_eq!(ca.switch_to_lid, cb.switch_to_lid, "{spec} {trial}");
                    assert_eq!(ca.ca_to_lid, cb.ca_to_lid);
                    assert_eq!((&a.hops, a.minimal), (&b.hops, b.minimal));
                    assert_eq!(a.efi, b.efi, "{spec} {trial}");
                    let key = |x: &RouteFailure| {
                        // The two methods may name different switches of one loop.
                        let fault = match x.fault {
                            RouteFault::Loop { .. } => RouteFault::Loop { at: 0 },
                            f => f,
                        };
                        (x.switch, x.lid, fault)
                    };
                    let mut fa: Vec<_> = ca.failures.iter().map(key).collect();
                    let mut fb: Vec<_> = cb.failures.iter().map(key).collect();
                    fa.sort_unstable();
                    fb.sort_unstable();
                    assert_eq!(fa, fb);
                }
            }
        }
    }
}
