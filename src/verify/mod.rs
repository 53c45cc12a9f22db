//! An independent check of a routing before anything is uploaded.
//!
//! It trusts nothing the router computed but the tables themselves: every (source switch, LID) path
//! is found by following the LFTs, exactly as [`crate::routing::walk`] does, so the same check
//! judges our routings and routings read back from OpenSM's dumps. It confirms that
//! - every switch reaches every LID attached to a switch in its connected component (no missing
//!   entry, no dead end, no forwarding loop), and no table loops towards LIDs it cannot reach;
//! - every path's virtual layer is below `num_layers`;
//! - the channel dependency graph (CDG) of every layer is acyclic (Dally & Seitz; Domke et al. §II):
//!   its nodes are the switch-to-switch channels, and it has an edge `c1 -> c2` when some path of
//!   that layer takes `c1` and then `c2`. Paths are (source switch, DLID): the traffic of the CAs
//!   attached to a switch follows that switch's path, and the CA-to-switch and switch-to-CA links
//!   cannot close a cycle (a CA never forwards), so switch channels are all the CDG needs. Every
//!   channel a path takes counts, whether or not it delivers.
//!
//! Speed: per destination LID, [`DestPaths`] resolves the paths of all switches at once (each
//! switch's entry is followed once and the outcome of the switch it leads to reused: O(S) per LID
//! instead of O(S · hops) walks), reading the tables 64 LIDs at a time ([`Columns`]). The paths
//! through channel `next[u]` are those of `u`'s subtree, so a layer bit mask per switch,
//! accumulated leaves first, gives the layers of every dependency. LIDs are split into chunks
//! processed in parallel; each chunk marks its CDG edges in a per-layer bitset over *dependency
//! slots* (slot = position of `c2` among the channels leaving `head(c1)`), so deduplication is a
//! bit-or, and petgraph's topological sort gets each edge once. With 3 to 8 layers a chunk marks
//! a byte of layer bits per slot instead (one update where a switch's subtree carries paths of
//! several layers), folded into the bitsets when the chunks merge. The straightforward version,
//! one [`walk`] per path, is kept (used beyond 64 layers) and the tests check both agree.

mod incremental;
mod lanes;

pub use incremental::{verify_since, VerifiedBefore, VerifyScope};

pub use lanes::{
    check_lanes, check_lanes_of, lid_owner, switch_guid, switch_name, CycleHop, DeadlockCheck,
    LaneCheck,
};

use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;

use crate::fabric::Fabric;
use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{for_each_column, walk, DestPaths, RouteFault, Routing};

/// How many failing paths an error lists by name (the count covers them all).
const MAX_LISTED: usize = 8;

/// Layer counts for which the trees check marks a dependency's layers in one byte per slot
/// ([`ChunkResult::slot_layers`]) instead of a bit per layer: a switch near the destination
/// carries paths of most layers, and one byte update replaces that many scattered bit updates
/// (3.4 per (switch, LID) on a 48-port 3-level fat tree in 7 layers). With one or two layers
/// the bitsets are smaller and as quick.
const SLOT_LAYERS: std::ops::RangeInclusive<usize> = 3..=8;

/// What [`verify`] found on a routing that passed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// `Routing::num_layers` of the routing checked.
    pub num_layers: u8,
    /// Layers holding at least one path.
    pub layers_used: u8,
    /// (source switch, DLID) paths checked, over all layers.
    pub paths: u64,
    /// Paths per layer (index = layer), including zero-hop paths (a switch's own LID and the CAs
    /// attached to it).
    pub paths_per_layer: Vec<u64>,
    /// Distinct CDG edges per layer.
    pub cdg_edges_per_layer: Vec<u64>,
    /// (switch, LID) pairs not checked because the LID hangs off a switch in another connected
    /// component (a partitioned fabric); their tables must not loop, nothing more.
    pub unreachable: u64,
    /// Per layer, the CDG edges as bits: edge `c1 -> c2` (c2 leaving head(c1)) is bit
    /// `c1`'s first slot + (c2 - first channel of head(c1)), the layout of
    /// `dfsssp::cdg::EdgeIndex`. What an incremental re-route starts from next time.
    #[serde(skip)]
    pub layer_edges: Vec<Vec<u64>>,
    /// Channel loads (as [`crate::balance::channel_loads`] counts them), when asked for
    /// ([`verify_and_load`]): the same traversal, so the engine need not walk the routes twice.
    #[serde(skip)]
    pub channel_loads: Option<Vec<u64>>,
    /// Destinations whose paths were taken over from the previous verification unchanged
    /// ([`verify_since`]); 0 when every destination was checked.
    pub dests_reused: u64,
    /// Whether `cdg_edges_per_layer` and `layer_edges` may include edges of paths that no longer
    /// exist (an incremental check keeps the previous edges of changed destinations): an upper
    /// bound whose acyclicity implies the exact CDG's.
    pub edges_upper_bound: bool,
}

impl VerifyReport {
    /// One line for logs.
    pub fn summary(&self) -> String {
        format!(
            "verified {} paths{}, {} of {} layer(s) used, paths per layer {:?}, CDG edges per layer {}{:?}, acyclic{}",
            self.paths,
            if self.dests_reused > 0 {
                format!(
                    " ({} LIDs unchanged since the last verification)",
                    self.dests_reused
                )
            } else {
                String::new()
            },
            self.layers_used,
            self.num_layers,
            self.paths_per_layer,
            if self.edges_upper_bound { "at most " } else { "" },
            self.cdg_edges_per_layer,
            if self.unreachable > 0 {
                format!(", {} (switch, LID) pairs in other components", self.unreachable)
            } else {
                String::new()
            }
        )
    }
}

/// A path that does not deliver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PathFault {
    /// Source switch (dense id).
    pub switch: u32,
    pub lid: u16,
    #[serde(flatten)]
    pub fault: RouteFault,
}

/// One channel of a credit loop: it leaves `switch` (dense id) by `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelHop {
    pub channel: u32,
    pub switch: u32,
    pub port: u8,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("routing does not fit the fabric: {0}")]
    Shape(String),
    #[error("routing declares 0 layers")]
    NoLayers,
    #[error("{count} path(s) do not deliver, first: {}", list_faults(.first))]
    Incomplete { count: u64, first: Vec<PathFault> },
    #[error("{count} path(s) have a layer >= num_layers {num_layers}, first: switch #{switch} to LID {lid} in layer {layer}")]
    BadLayer {
        count: u64,
        switch: u32,
        lid: u16,
        layer: u8,
        num_layers: u8,
    },
    #[error("credit loop in layer {layer}: {}", list_cycle(.cycle, None))]
    CreditLoop { layer: u8, cycle: Vec<ChannelHop> },
}

impl VerifyError {
    /// The message with switches named by GUID and description, for logs and the CLI.
    pub fn describe(&self, f: &Fabric, g: &SwitchGraph) -> String {
        let name = |s: u32| switch_name(f, g, s);
        match self {
            VerifyError::Incomplete { count, first } => {
                let list: Vec<String> = first
                    .iter()
                    .map(|p| format!("{} to LID {}: {}", name(p.switch), p.lid, p.fault.describe(name)))
                    .collect();
                format!("{count} path(s) do not deliver, first: {}", list.join("; "))
            }
            VerifyError::BadLayer { count, switch, lid, layer, num_layers } => format!(
                "{count} path(s) have a layer >= num_layers {num_layers}, first: {} to LID {lid} in layer {layer}",
                name(*switch)
            ),
            VerifyError::CreditLoop { layer, cycle } => {
                format!("credit loop in layer {layer}: {}", list_cycle(cycle, Some((f, g))))
            }
            other => other.to_string(),
        }
    }
}

fn list_faults(v: &[PathFault]) -> String {
    v.iter()
        .map(|p| format!("switch #{} to LID {}: {}", p.switch, p.lid, p.fault))
        .collect::<Vec<_>>()
        .join("; ")
}

/// "switch GUID port P -> switch GUID port Q -> ... -> (back to the first)".
fn list_cycle(cycle: &[ChannelHop], names: Option<(&Fabric, &SwitchGraph)>) -> String {
    let mut parts: Vec<String> = cycle
        .iter()
        .map(|h| match names {
            Some((f, g)) => format!("{} port {}", switch_name(f, g, h.switch), h.port),
            None => format!("switch #{} port {}", h.switch, h.port),
        })
        .collect();
    if let Some(first) = parts.first().cloned() {
        parts.push(first);
    }
    parts.join(" -> ")
}

/// Formats a cycle of channels (as returned by [`find_cdg_cycle`]) with switch names.
pub fn format_cycle(f: &Fabric, g: &SwitchGraph, cycle: &[u32]) -> String {
    list_cycle(&channel_hops(g, cycle), Some((f, g)))
}

fn channel_hops(g: &SwitchGraph, cycle: &[u32]) -> Vec<ChannelHop> {
    cycle
        .iter()
        .map(|&c| ChannelHop {
            channel: c,
            switch: g.chan_tail()[c as usize],
            port: g.chan_port()[c as usize],
        })
        .collect()
}

/// Dependency slots: the edge `c1 -> c2` (c2 leaving head(c1)) has id
/// `slot_start[c1] + (c2 - out_start[head(c1)])`.
pub struct DependencySlots {
    slot_start: Vec<u64>,
}

impl DependencySlots {
    pub fn new(g: &SwitchGraph) -> Self {
        let mut slot_start = Vec::with_capacity(g.num_channels() + 1);
        let mut acc = 0u64;
        slot_start.push(0);
        for &h in g.chan_head() {
            acc += u64::from(g.out_start()[h as usize + 1] - g.out_start()[h as usize]);
            slot_start.push(acc);
        }
        DependencySlots { slot_start }
    }

    /// Number of possible CDG edges.
    pub fn len(&self) -> u64 {
        *self.slot_start.last().unwrap_or(&0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of `c1 -> c2`; `c2` must leave the head of `c1`.
    #[inline]
    pub fn slot(&self, g: &SwitchGraph, c1: u32, c2: u32) -> u64 {
        let h = g.chan_head()[c1 as usize] as usize;
        self.slot_start[c1 as usize] + u64::from(c2 - g.out_start()[h])
    }

    /// Calls `f(c1, c2)` for every edge whose bit is set in `bits`, in (c1, c2) order.
    pub fn for_each_edge(&self, g: &SwitchGraph, bits: &[u64], mut f: impl FnMut(u32, u32)) {
        for c1 in 0..g.num_channels() {
            let h = g.chan_head()[c1] as usize;
            let first = g.out_start()[h];
            for (k, slot) in (self.slot_start[c1]..self.slot_start[c1 + 1]).enumerate() {
                if bits[(slot / 64) as usize] >> (slot % 64) & 1 != 0 {
                    f(c1 as u32, first + k as u32);
                }
            }
        }
    }
}

/// What one chunk of paths found.
#[derive(Default)]
struct ChunkResult {
    /// Per layer: bitset over dependency slots, allocated on first use.
    bits: Vec<Option<Vec<u64>>>,
    /// The trees check with 3 to 8 layers: per dependency slot, the layers whose CDG holds that
    /// edge, as bits ([`SLOT_LAYERS`]); folded into `bits` by [`merge`].
    slot_layers: Option<Vec<u8>>,
    paths_per_layer: Vec<u64>,
    unreachable: u64,
    faults: Vec<PathFault>,
    fault_count: u64,
    bad_layer: Option<(u32, u16, u8)>,
    bad_layer_count: u64,
    /// Channel loads of the chunk's destinations, when counted.
    loads: Option<Vec<u64>>,
}

impl ChunkResult {
    fn new(nl: usize) -> Self {
        ChunkResult {
            bits: vec![None; nl],
            paths_per_layer: vec![0; nl],
            ..Default::default()
        }
    }

    fn fault(&mut self, switch: u32, lid: u16, fault: RouteFault) {
        self.fault_count += 1;
        if self.faults.len() < MAX_LISTED {
            self.faults.push(PathFault { switch, lid, fault });
        }
    }

    /// Counts the path in its layer; `None` (and a bad-layer note) when the layer is out of range.
    fn layer_ok(&mut self, switch: u32, lid: u16, layer: u8, nl: u8) -> bool {
        if layer < nl {
            self.paths_per_layer[usize::from(layer)] += 1;
            true
        } else {
            self.bad_layer_count += 1;
            if self.bad_layer.is_none() {
                self.bad_layer = Some((switch, lid, layer));
            }
            false
        }
    }
}

/// Checks completeness, layers and deadlock freedom of `r` on `g`; see the module doc.
pub fn verify(g: &SwitchGraph, r: &Routing) -> Result<VerifyReport, VerifyError> {
    verify_with(g, r, Method::Trees, Loads::Skip)
}

/// [`verify`], also counting the channel loads of the routes on the way
/// ([`VerifyReport::channel_loads`]; with more than 64 layers they are left to
/// [`crate::balance::channel_loads`]).
pub fn verify_and_load(g: &SwitchGraph, r: &Routing) -> Result<VerifyReport, VerifyError> {
    let loads = if r.num_layers <= 64 {
        Loads::Count
    } else {
        Loads::Skip
    };
    let mut report = verify_with(g, r, Method::Trees, loads)?;
    if report.channel_loads.is_none() {
        report.channel_loads = Some(crate::balance::channel_loads(g, &r.lft));
    }
    Ok(report)
}

/// How [`verify_with`] finds the paths: the same answers, different speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    /// Per destination, resolve every switch's path at once with [`DestPaths`]: O(S) per LID.
    Trees,
    /// Walk every (switch, LID) path with [`walk`]: O(S · hops) per LID.
    Walks,
}

/// Whether the trees check also counts the channel loads of the routes
/// ([`VerifyReport::channel_loads`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loads {
    Count,
    Skip,
}

fn verify_with(
    g: &SwitchGraph,
    r: &Routing,
    method: Method,
    loads: Loads,
) -> Result<VerifyReport, VerifyError> {
    // Trees need a layer bit mask per switch; beyond 64 layers (IB has 15) walk every path.
    let method = if r.num_layers > 64 {
        Method::Walks
    } else {
        method
    };
    check_shape(g, r)?;
    let ns = g.num_switches();
    let nl = usize::from(r.num_layers);
    let slots = DependencySlots::new(g);
    let comp = g.components();
    let check = Check::new(g, r, &slots, &comp);

    let results: Vec<ChunkResult> = match method {
        Method::Walks => {
            // Source-major: each source's first hops read its own table row in order.
            let chunks = (rayon::current_num_threads() * 4).clamp(1, ns.max(1));
            let per = ns.div_ceil(chunks).max(1);
            crate::par::sized((0..chunks).into_par_iter(), ns * g.dests().len())
                .map(|k| {
                    let mut res = ChunkResult::new(nl);
                    for s in (k * per).min(ns) as u32..((k + 1) * per).min(ns) as u32 {
                        for d in g.dests() {
                            if d.switch != NO_SWITCH {
                                check.path(s, d, &mut res);
                            }
                        }
                    }
                    res
                })
                .collect()
        }
        Method::Trees => check.dests(g.dests(), loads),
    };

    let (report, bits) = merge(r.num_layers, results)?;
    finish(g, &slots, check.words, report, bits)
}

/// The tables' shapes agree with the fabric, and there is at least one layer.
fn check_shape(g: &SwitchGraph, r: &Routing) -> Result<(), VerifyError> {
    let ns = g.num_switches();
    if r.lft.num_switches() != ns {
        return Err(VerifyError::Shape(format!(
            "forwarding tables for {} switches, fabric has {ns}",
            r.lft.num_switches()
        )));
    }
    if let Some(l) = &r.layers {
        let (rows, stride) = l.shape();
        if rows != ns || stride != r.lft.stride() {
            return Err(VerifyError::Shape(format!(
                "layer table is {rows} x {stride}, forwarding tables are {ns} x {}",
                r.lft.stride()
            )));
        }
    }
    if r.num_layers == 0 {
        return Err(VerifyError::NoLayers);
    }
    Ok(())
}

/// What the path checks read: the fabric and its routing, the dependency slots of the fabric's
/// CDG (a layer's edges are a bit set of `words` words over them), and the switches' connected
/// components.
#[derive(Clone, Copy)]
struct Check<'a> {
    g: &'a SwitchGraph,
    r: &'a Routing,
    slots: &'a DependencySlots,
    words: usize,
    comp: &'a [u32],
}

/// A chunk's scratch for [`Check::dest`].
struct TreeScratch {
    paths: DestPaths,
    /// Per switch, the layers of the paths through its next channel (bits).
    mask: Vec<u64>,
    /// Per switch, the routes through it (with the loads counted).
    flow: Vec<u64>,
}

impl<'a> Check<'a> {
    fn new(
        g: &'a SwitchGraph,
        r: &'a Routing,
        slots: &'a DependencySlots,
        comp: &'a [u32],
    ) -> Self {
        let words = slots.len().div_ceil(64) as usize;
        Check {
            g,
            r,
            slots,
            words,
            comp,
        }
    }

    /// The trees check of `dests` (sorted by LID) in parallel chunks, destination-major in LID
    /// order: consecutive LIDs share the cache lines of the table columns they read.
    fn dests(&self, dests: &[Dest], loads: Loads) -> Vec<ChunkResult> {
        let (g, r) = (self.g, self.r);
        let loads = loads == Loads::Count;
        let (ns, nl, nd) = (g.num_switches(), usize::from(r.num_layers), dests.len());
        let chunks = (rayon::current_num_threads() * 2).clamp(1, nd.max(1));
        let per = nd.div_ceil(chunks).max(1);
        crate::par::sized((0..chunks).into_par_iter(), ns * nd)
            .map(|k| {
                let mut res = ChunkResult::new(nl);
                res.loads = loads.then(|| vec![0u64; g.num_channels()]);
                res.slot_layers = SLOT_LAYERS
                    .contains(&nl)
                    .then(|| vec![0u8; self.slots.len() as usize]);
                let mut scratch = TreeScratch {
                    paths: DestPaths::new(ns),
                    mask: vec![0u64; ns],
                    flow: if loads { vec![0u64; ns] } else { Vec::new() },
                };
                let dests = &dests[(k * per).min(nd)..((k + 1) * per).min(nd)];
                for_each_column(g, &r.lft, r.layers.as_ref(), dests, |d, ports, layers| {
                    if d.switch != NO_SWITCH {
                        self.dest(d, ports, layers, &mut scratch, &mut res);
                    }
                });
                res
            })
            .collect()
    }

    /// Walks the path (switch `s`, LID of `d`) and records its CDG edges and faults.
    #[inline]
    fn path(&self, s: u32, d: &Dest, res: &mut ChunkResult) {
        let Check {
            g,
            r,
            slots,
            words,
            comp,
        } = *self;
        let same_component = comp[s as usize] == comp[d.switch as usize];
        if d.lid > r.lft.max_lid {
            if same_component {
                res.fault(s, d.lid, RouteFault::BeyondTable);
            } else {
                res.unreachable += 1;
            }
            return;
        }
        let layer = r.layer(s, d.lid);
        let bits = if res.layer_ok(s, d.lid, layer, r.num_layers) {
            Some(res.bits[usize::from(layer)].get_or_insert_with(|| vec![0u64; words]))
        } else {
            None
        };
        // Every channel a packet takes creates dependencies, delivered or not (a packet that dies at
        // a missing entry still held buffers on the way), so record them all; a looping walk is an
        // error anyway.
        let mut prev = NO_CHANNEL;
        let end = match bits {
            Some(bits) => walk(g, &r.lft, s, d.lid, |c| {
                if prev != NO_CHANNEL {
                    let slot = slots.slot(g, prev, c);
                    bits[(slot / 64) as usize] |= 1u64 << (slot % 64);
                }
                prev = c;
            }),
            None => walk(g, &r.lft, s, d.lid, |_| {}),
        };
        match end {
            Ok(_) => {}
            Err(f @ RouteFault::Loop { .. }) => res.fault(s, d.lid, f),
            _ if !same_component => res.unreachable += 1,
            Err(f) => res.fault(s, d.lid, f),
        }
    }

    /// Checks every switch's path to `d` at once and records the CDG edges per layer: the paths
    /// through channel `next[u]` are those of `u`'s subtree, so the layers of edge
    /// (`next[u]`, `next[head]`) are the union of the subtree's layers, accumulated leaves first.
    fn dest(
        &self,
        d: &Dest,
        ports: Option<&[u8]>,
        layers: Option<&[u8]>,
        scratch: &mut TreeScratch,
        res: &mut ChunkResult,
    ) {
        let Check {
            g,
            r,
            slots,
            words,
            comp,
        } = *self;
        let TreeScratch { paths, mask, flow } = scratch;
        let ns = g.num_switches();
        let nl = r.num_layers;
        let tc = comp[d.switch as usize];
        if ports.is_none() {
            for s in 0..ns as u32 {
                if comp[s as usize] == tc {
                    res.fault(s, d.lid, RouteFault::BeyondTable);
                } else {
                    res.unreachable += 1;
                }
            }
            return;
        }
        paths.resolve_column(g, d, ports);
        let mut any_loop = false;
        for s in 0..ns as u32 {
            let layer = layers.map_or(0, |l| l[s as usize]);
            mask[s as usize] = if res.layer_ok(s, d.lid, layer, nl) {
                1u64 << layer
            } else {
                0
            };
            match paths.end[s as usize] {
                Ok(_) => {}
                Err(f @ RouteFault::Loop { .. }) => {
                    any_loop = true;
                    res.fault(s, d.lid, f);
                }
                _ if comp[s as usize] != tc => res.unreachable += 1,
                Err(f) => res.fault(s, d.lid, f),
            }
        }
        if any_loop {
            // An error anyway; a looping chain has no leaves-first order to accumulate over.
            return;
        }
        // With one layer every mask is already the union of its subtree's.
        let ordered = layers.is_some() || res.loads.is_some();
        if ordered {
            paths.compute_order();
        }
        if let Some(load) = res.loads.as_mut() {
            crate::balance::add_dest_loads(g, paths, flow, load);
        }
        if layers.is_some() {
            for &u in &paths.order {
                let c = paths.next[u as usize];
                if c != NO_CHANNEL {
                    let v = g.chan_head()[c as usize] as usize;
                    mask[v] |= mask[u as usize];
                }
            }
        }
        for (&c1, &m) in paths.next.iter().zip(mask.iter()) {
            if c1 == NO_CHANNEL {
                continue;
            }
            let c2 = paths.next[g.chan_head()[c1 as usize] as usize];
            if c2 == NO_CHANNEL {
                continue;
            }
            let slot = slots.slot(g, c1, c2);
            if let Some(sl) = res.slot_layers.as_mut() {
                sl[slot as usize] |= m as u8;
                continue;
            }
            let (word, bit) = ((slot / 64) as usize, 1u64 << (slot % 64));
            let mut m = m;
            while m != 0 {
                let layer = m.trailing_zeros() as usize;
                m &= m - 1;
                res.bits[layer].get_or_insert_with(|| vec![0u64; words])[word] |= bit;
            }
        }
    }
}

/// Per layer, CDG edges as bits over dependency slots (`None`: no edge).
type LayerBits = Vec<Option<Vec<u64>>>;

/// Merges chunk results in chunk order, so the faults listed are the first (by LID then switch
/// for trees, by switch then LID for walks) whatever the thread count: the report without its
/// CDG, and per layer the CDG edges found (`None`: none).
fn merge(
    num_layers: u8,
    results: Vec<ChunkResult>,
) -> Result<(VerifyReport, LayerBits), VerifyError> {
    let nl = usize::from(num_layers);
    let mut bits: LayerBits = vec![None; nl];
    let mut report = VerifyReport {
        num_layers,
        paths_per_layer: vec![0; nl],
        ..Default::default()
    };
    let (mut faults, mut fault_count) = (Vec::new(), 0u64);
    let (mut bad_layer, mut bad_layer_count) = (None, 0u64);
    let mut slot_layers: Option<Vec<u8>> = None;
    for res in results {
        report.unreachable += res.unreachable;
        match (slot_layers.as_mut(), res.slot_layers) {
            (_, None) => {}
            (None, Some(p)) => slot_layers = Some(p),
            (Some(a), Some(p)) => a.iter_mut().zip(&p).for_each(|(x, y)| *x |= y),
        }
        for (a, b) in report.paths_per_layer.iter_mut().zip(&res.paths_per_layer) {
            *a += b;
        }
        for (acc, part) in bits.iter_mut().zip(res.bits) {
            match (acc.as_mut(), part) {
                (_, None) => {}
                (None, Some(p)) => *acc = Some(p),
                (Some(a), Some(p)) => a.iter_mut().zip(&p).for_each(|(x, y)| *x |= y),
            }
        }
        if let Some(part) = res.loads {
            match report.channel_loads.as_mut() {
                None => report.channel_loads = Some(part),
                Some(acc) => acc.iter_mut().zip(&part).for_each(|(x, y)| *x += y),
            }
        }
        fault_count += res.fault_count;
        faults.extend(res.faults);
        bad_layer_count += res.bad_layer_count;
        bad_layer = bad_layer.or(res.bad_layer);
    }
    if let Some(sl) = slot_layers {
        for (layer, acc) in bits.iter_mut().enumerate().take(8) {
            let part: Vec<u64> = crate::par::sized(sl.par_chunks(64), sl.len())
                .map(|c| {
                    c.iter()
                        .enumerate()
                        .fold(0u64, |w, (k, &m)| w | (u64::from(m >> layer & 1) << k))
                })
                .collect();
            if part.iter().any(|&w| w != 0) {
                match acc.as_mut() {
                    None => *acc = Some(part),
                    Some(a) => a.iter_mut().zip(&part).for_each(|(x, y)| *x |= y),
                }
            }
        }
    }
    if fault_count > 0 {
        faults.truncate(MAX_LISTED);
        return Err(VerifyError::Incomplete {
            count: fault_count,
            first: faults,
        });
    }
    if let Some((switch, lid, layer)) = bad_layer {
        return Err(VerifyError::BadLayer {
            count: bad_layer_count,
            switch,
            lid,
            layer,
            num_layers,
        });
    }
    Ok((report, bits))
}

/// Completes `report` with the layers' CDGs `bits`: their edge counts, and the first layer
/// whose CDG has a cycle as the error (the layers are checked in parallel).
fn finish(
    g: &SwitchGraph,
    slots: &DependencySlots,
    words: usize,
    mut report: VerifyReport,
    bits: LayerBits,
) -> Result<VerifyReport, VerifyError> {
    report.paths = report.paths_per_layer.iter().sum();
    report.layers_used = report.paths_per_layer.iter().filter(|&&p| p > 0).count() as u8;
    let work = slots.len() as usize * bits.len();
    let checked: Vec<(u64, Option<Vec<u32>>)> = crate::par::sized(bits.par_iter(), work)
        .map(|b| {
            let mut edges: Vec<(u32, u32)> = Vec::new();
            if let Some(b) = b {
                slots.for_each_edge(g, b, |c1, c2| edges.push((c1, c2)));
            }
            (edges.len() as u64, find_cdg_cycle(g.num_channels(), &edges))
        })
        .collect();
    for (layer, (edges, cycle)) in checked.into_iter().enumerate() {
        if let Some(cycle) = cycle {
            return Err(VerifyError::CreditLoop {
                layer: layer as u8,
                cycle: channel_hops(g, &cycle),
            });
        }
        report.cdg_edges_per_layer.push(edges);
    }
    report.layer_edges = bits
        .into_iter()
        .map(|b| b.unwrap_or_else(|| vec![0; words]))
        .collect();
    Ok(report)
}

/// Looks for a cycle in the channel dependency graph given by `edges` over channels
/// `0..num_channels` (petgraph's topological sort; an edge out of range is ignored). Returns the
/// channels of one cycle in order (`c0 -> c1 -> ... -> c0`), a shortest one through the node the
/// sort tripped over, or `None` when the graph is acyclic.
pub fn find_cdg_cycle(num_channels: usize, edges: &[(u32, u32)]) -> Option<Vec<u32>> {
    // Acyclic, the common answer, is settled by peeling sources off (Kahn) over arrays; only a
    // graph that keeps a core goes to petgraph for the cycle to report.
    if peels_to_nothing(num_channels, edges) {
        return None;
    }
    let mut graph: DiGraph<(), (), u32> = DiGraph::with_capacity(num_channels, edges.len());
    for _ in 0..num_channels {
        graph.add_node(());
    }
    for &(a, b) in edges {
        if (a as usize) < num_channels && (b as usize) < num_channels {
            graph.add_edge(NodeIndex::new(a as usize), NodeIndex::new(b as usize), ());
        }
    }
    let start = match toposort(&graph, None) {
        Ok(_) => return None,
        Err(cycle) => cycle.node_id(),
    };
    // petgraph names a node on a cycle; a BFS from it finds a shortest way back to it.
    let mut parent = vec![u32::MAX; num_channels];
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(start);
    while let Some(u) = queue.pop_front() {
        for v in graph.neighbors(u) {
            if v == start {
                let mut cycle = vec![u.index() as u32];
                let mut x = u.index();
                while x != start.index() {
                    x = parent[x] as usize;
                    cycle.push(x as u32);
                }
                cycle.reverse();
                return Some(cycle);
            }
            if parent[v.index()] == u32::MAX {
                parent[v.index()] = u.index() as u32;
                queue.push_back(v);
            }
        }
    }
    // Unreachable if petgraph's node is on a cycle; report the node alone rather than nothing.
    Some(vec![start.index() as u32])
}

/// Whether repeatedly removing channels without incoming edges removes them all (Kahn's
/// algorithm): true exactly when the graph is acyclic. Edges out of range are ignored.
fn peels_to_nothing(num_channels: usize, edges: &[(u32, u32)]) -> bool {
    let n = num_channels;
    let inside = |&&(a, b): &&(u32, u32)| (a as usize) < n && (b as usize) < n;
    let mut start = vec![0u32; n + 1];
    let mut indeg = vec![0u32; n];
    for &(a, b) in edges.iter().filter(inside) {
        start[a as usize + 1] += 1;
        indeg[b as usize] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut to = vec![0u32; start[n] as usize];
    for &(a, b) in edges.iter().filter(inside) {
        to[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    let mut ready: Vec<u32> = (0..n as u32).filter(|&c| indeg[c as usize] == 0).collect();
    let mut peeled = 0;
    while let Some(c) = ready.pop() {
        peeled += 1;
        for &t in &to[start[c as usize] as usize..start[c as usize + 1] as usize] {
            indeg[t as usize] -= 1;
            if indeg[t as usize] == 0 {
                ready.push(t);
            }
        }
    }
    peeled == n
}

#[cfg(test)]
mod tests;
