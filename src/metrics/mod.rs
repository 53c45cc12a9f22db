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
//! switch's path to a LID at once ([`DestPaths`](crate::routing::DestPaths)); the routes on a channel are subtree sums of
//! route weights, accumulated leaves first. Λ walks each pattern's flows (in DLID order, for cache
//! reuse) with per-thread buffers: channel counters are reset only where a pattern touched them.
//!
//! **Cost** (D LIDs, P CA/router ports, N patterns of F flows). The all-pairs pass is `O(D·S)` on
//! top of the all-pairs switch distances (2·S² bytes), with 8·C bytes of channel loads per chunk
//! of LIDs (8 chunks per thread, held until merged). Λ is `O(N·(P + F log F + F·h))` for h hops
//! walked per flow on average (at most S + 1 when the tables loop), with per thread 4·C bytes of
//! channel counters, 12 bytes per flow, 4 per hop and 4 per port. Neither reads the layers.

use serde::Serialize;
use thiserror::Error;

use crate::fabric::Fabric;
use crate::graph::SwitchGraph;
use crate::routing::RouteFault;
use crate::routing::{Lft, Routing, WalkEnd};

mod all_pairs;
mod bisection;
#[cfg(test)]
mod tests;

use all_pairs::all_pairs;
pub use bisection::{
    effective_bisection_bandwidth, group_bandwidth, judging_lambda, pattern_bandwidth,
    BisectionSpec,
};

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
