//! The all-pairs pass: connectivity, hop counts and channel loads of every route, from one
//! destination-major walk of the forwarding tables.
//!
//! **Cost.** Per LID (D in all): its column of the tables, gathered 64 LIDs at a time, the paths of
//! all S switches resolved by following each entry once, a counting sort by hops and the subtree
//! sums, each `O(S)`: `O(D·S)` in all, in parallel over chunks of LIDs. Before that, the switch
//! distances (minimal hops, disconnected pairs): one bit-parallel BFS per 64 switches, 2·S² bytes.
//! [`LidChoice::BySource`] adds up to 128/2^LMC additions per delivering (switch, CA LID) pair and
//! a 512·S-byte table. Memory: 8·C bytes of channel loads per chunk (8 chunks per thread, all held
//! until merged) and per thread a 64·S-byte window of the tables plus `O(S)` path scratch.

use rayon::prelude::*;

use crate::graph::SwitchDistances;
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{for_each_column, DestPaths, RouteFault};
use crate::routing::{Lft, WalkEnd};

use super::{Connectivity, LidChoice, MetricsOptions, RouteFailure, NOT_A_TERMINAL};

/// What the all-pairs pass gathers (per chunk of source switches, then merged).
pub(super) struct AllPairs {
    pub(super) connectivity: Connectivity,
    pub(super) hops: Vec<u64>,
    pub(super) minimal: u64,
    pub(super) efi: Vec<u64>,
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
pub(super) fn lmc_bits(offset: u8) -> u8 {
    (8 - offset.leading_zeros()) as u8
}

/// The all-pairs pass, destination-major: per LID, [`DestPaths`] resolves every switch's path at
/// once, and the routes on each channel are subtree sums of route weights, leaves first (O(S) per
/// LID instead of O(S · hops) walks).
pub(super) fn all_pairs(g: &SwitchGraph, lft: &Lft, opts: &MetricsOptions) -> AllPairs {
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
pub(super) fn all_pairs_by_walks(g: &SwitchGraph, lft: &Lft, opts: &MetricsOptions) -> AllPairs {
    use crate::routing::walk;

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
