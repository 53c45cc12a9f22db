//! Traversing LFTs a destination at a time, independent of how the tables were computed (ours, or
//! read from OpenSM's dumps), for verification and metrics alike:
//! - [`DestPaths`]: every switch's path towards one LID, resolved together in O(switches), as a
//!   destination tree (next channel, outcome, hops, leaves-first order);
//! - [`Columns`] / [`for_each_column`]: the tables' columns for consecutive LIDs, gathered in
//!   cache-friendly windows from the switch-major tables.

use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};

use super::{Lft, RouteFault, SwitchLidTable, WalkEnd, NO_PATH};

/// Every switch's path towards one LID, resolved together in O(S): what [`walk`](super::walk) would report
/// from each switch, found by following each switch's LFT entry once and reusing the outcome of
/// the switch it leads to. Reusable across destinations (no allocation per LID).
pub struct DestPaths {
    /// Channel taken at each switch, [`NO_CHANNEL`] where the path ends there.
    pub next: Vec<u32>,
    /// How the path from each switch ends, as [`walk`] reports it (for loops `at` is the switch
    /// where the cycle was found, and `hops` below is meaningless).
    pub end: Vec<WalkEnd>,
    /// Channels from each switch to where its path ends (delivers, or stops).
    pub hops: Vec<u32>,
    /// After [`DestPaths::compute_order`]: the switches whose path does not loop, by decreasing
    /// `hops`; every switch comes after all switches whose path runs through it, so subtree sums
    /// can be accumulated in this order.
    pub order: Vec<u32>,
    state: Vec<u8>,
    stack: Vec<u32>,
    counts: Vec<u32>,
}

const UNSEEN: u8 = 0;
const ON_STACK: u8 = 1;
const DONE: u8 = 2;

impl DestPaths {
    pub fn new(ns: usize) -> Self {
        DestPaths {
            next: vec![NO_CHANNEL; ns],
            end: vec![Err(RouteFault::UnknownLid); ns],
            hops: vec![0; ns],
            order: Vec::with_capacity(ns),
            state: vec![UNSEEN; ns],
            stack: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Resolves the paths of all switches towards `d` (attached to a switch, LID within the
    /// tables; otherwise every switch gets [`Err(RouteFault::UnknownLid)`]).
    pub fn resolve(&mut self, g: &SwitchGraph, lft: &Lft, d: &Dest) {
        if d.switch == NO_SWITCH || d.lid > lft.max_lid {
            self.resolve_column(g, d, None);
        } else {
            let column: Vec<u8> = (0..g.num_switches() as u32)
                .map(|s| lft.port(s, d.lid))
                .collect();
            self.resolve_column(g, d, Some(&column));
        }
    }

    /// [`DestPaths::resolve`] given the tables' column for `d.lid` (`ports[s]` = switch s's entry;
    /// `None` when the LID lies beyond the tables), as [`Columns`] gathers them.
    pub fn resolve_column(&mut self, g: &SwitchGraph, d: &Dest, ports: Option<&[u8]>) {
        let ns = g.num_switches();
        self.order.clear();
        let ports = match ports {
            Some(p) if d.switch != NO_SWITCH && p.len() == ns => p,
            _ => {
                self.next.fill(NO_CHANNEL);
                self.end.fill(Err(RouteFault::UnknownLid));
                self.hops.fill(0);
                return;
            }
        };
        self.state.fill(UNSEEN);
        for u0 in 0..ns as u32 {
            if self.state[u0 as usize] == DONE {
                continue;
            }
            // Follow the entries until a switch already resolved, an end, or a switch of the
            // current chain (a loop).
            let mut u = u0;
            let (end, mut h) = loop {
                match self.state[u as usize] {
                    DONE => break (self.end[u as usize], self.hops[u as usize]),
                    ON_STACK => break (Err(RouteFault::Loop { at: u }), 0),
                    _ => {}
                }
                let p = ports[u as usize];
                let here = if u == d.switch && p == d.exit_port {
                    Some(Ok(0))
                } else if p == NO_PATH {
                    Some(Err(RouteFault::NoEntry { at: u }))
                } else {
                    match g.channel_at(u, p) {
                        Some(c) => {
                            self.next[u as usize] = c;
                            self.state[u as usize] = ON_STACK;
                            self.stack.push(u);
                            u = g.chan_head()[c as usize];
                            None
                        }
                        None => Some(Err(RouteFault::DeadEnd { at: u, port: p })),
                    }
                };
                if let Some(e) = here {
                    self.next[u as usize] = NO_CHANNEL;
                    self.end[u as usize] = e;
                    self.hops[u as usize] = 0;
                    self.state[u as usize] = DONE;
                    break (e, 0);
                }
            };
            let looped = matches!(end, Err(RouteFault::Loop { .. }));
            while let Some(w) = self.stack.pop() {
                h = h.saturating_add(1);
                self.end[w as usize] = match end {
                    Ok(_) => Ok(h),
                    e => e,
                };
                self.hops[w as usize] = if looped { u32::MAX } else { h };
                self.state[w as usize] = DONE;
            }
        }
    }

    /// Fills `order` for the destination last resolved (a counting sort by decreasing hops).
    pub fn compute_order(&mut self) {
        let ns = self.hops.len();
        self.order.clear();
        self.counts.clear();
        for u in 0..ns {
            let h = self.hops[u];
            if h != u32::MAX {
                let h = h as usize;
                if self.counts.len() <= h {
                    self.counts.resize(h + 1, 0);
                }
                self.counts[h] += 1;
            }
        }
        let mut acc = 0;
        for c in self.counts.iter_mut().rev() {
            let n = *c;
            *c = acc;
            acc += n;
        }
        self.order.resize(acc as usize, NO_SWITCH);
        for u in 0..ns {
            let h = self.hops[u];
            if h != u32::MAX {
                let slot = &mut self.counts[h as usize];
                self.order[*slot as usize] = u as u32;
                *slot += 1;
            }
        }
    }
}

/// Table columns for a window of consecutive LIDs, switch-major: `column(lid)[s]` is switch
/// s's entry for `lid`. Reading a window of 64 LIDs touches one cache line per switch row, where
/// reading LID by LID down the (switch-major) tables would miss the cache at every switch.
pub struct Columns {
    lo: usize,
    width: usize,
    ns: usize,
    data: Vec<u8>,
}

impl Columns {
    /// LIDs per window: one cache line of each table row.
    pub const WIDTH: usize = 64;

    pub fn new(ns: usize) -> Self {
        Columns {
            lo: 0,
            width: 0,
            ns,
            data: vec![0; ns * Self::WIDTH],
        }
    }

    /// Gathers LIDs `lo..lo + width` (width <= [`Columns::WIDTH`]) from the rows `row(s)`.
    ///
    /// Eight switches by eight LIDs at a time, transposed in registers ([`transpose8`]): one
    /// 8-byte store per LID instead of one byte store per (switch, LID), which made this copy a
    /// fifth of the verification's time on a 48-port 3-level fat tree.
    pub fn fill<'t>(&mut self, lo: usize, width: usize, row: impl Fn(u32) -> &'t [u8]) {
        let width = width.min(Self::WIDTH);
        self.lo = lo;
        self.width = width;
        let ns = self.ns;
        let (ns8, w8) = (ns - ns % 8, width - width % 8);
        for s0 in (0..ns8).step_by(8) {
            let rows: [&[u8]; 8] = std::array::from_fn(|i| &row((s0 + i) as u32)[lo..lo + width]);
            for k0 in (0..w8).step_by(8) {
                let block = transpose8(std::array::from_fn(|i| {
                    u64::from_le_bytes(rows[i][k0..k0 + 8].try_into().unwrap_or([0; 8]))
                }));
                for (j, v) in block.iter().enumerate() {
                    let at = (k0 + j) * ns + s0;
                    self.data[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
            for (i, r) in rows.iter().enumerate() {
                for k in w8..width {
                    self.data[k * ns + s0 + i] = r[k];
                }
            }
        }
        for s in ns8..ns {
            for (k, &v) in row(s as u32)[lo..lo + width].iter().enumerate() {
                self.data[k * ns + s] = v;
            }
        }
    }

    /// The column of `lid`, which must lie in the window.
    pub fn column(&self, lid: u16) -> &[u8] {
        let k = usize::from(lid) - self.lo;
        debug_assert!(k < self.width);
        &self.data[k * self.ns..(k + 1) * self.ns]
    }
}

/// Transposes an 8x8 byte matrix held as eight little-endian rows: byte `j` of row `i` becomes
/// byte `i` of row `j` (swapping 4x4, then 2x2, then 1x1 blocks).
#[inline]
fn transpose8(mut r: [u64; 8]) -> [u64; 8] {
    for i in 0..4 {
        let (a, b) = (r[i], r[i + 4]);
        r[i] = (a & 0x0000_0000_FFFF_FFFF) | (b << 32);
        r[i + 4] = (a >> 32) | (b & 0xFFFF_FFFF_0000_0000);
    }
    for i in [0, 1, 4, 5] {
        let (a, b) = (r[i], r[i + 2]);
        const M: u64 = 0x0000_FFFF_0000_FFFF;
        r[i] = (a & M) | ((b & M) << 16);
        r[i + 2] = ((a >> 16) & M) | (b & !M);
    }
    for i in [0, 2, 4, 6] {
        let (a, b) = (r[i], r[i + 1]);
        const M: u64 = 0x00FF_00FF_00FF_00FF;
        r[i] = (a & M) | ((b & M) << 8);
        r[i + 1] = ((a >> 8) & M) | (b & !M);
    }
    r
}

/// The hop counts of every (switch, LID) path as the tables deliver it, counting the final link
/// to a CA (what [`super::Routing::hops`] holds), [`NO_PATH`] where they do not deliver: for
/// tables read from dumps, or to rebuild the hops of a routing that did not keep them.
pub fn walked_hops(g: &SwitchGraph, lft: &Lft) -> SwitchLidTable {
    use rayon::prelude::*;
    let (ns, dests) = (g.num_switches(), g.dests());
    let nd = dests.len();
    let chunks = (rayon::current_num_threads() * 4).clamp(1, nd.max(1));
    let per = nd.div_ceil(chunks).max(1);
    // Destination-major per chunk (one tree per LID), then scattered into the switch rows.
    let parts: Vec<Vec<u8>> = crate::par::sized((0..chunks).into_par_iter(), ns * nd)
        .map(|k| {
            let part = &dests[(k * per).min(nd)..((k + 1) * per).min(nd)];
            let mut out = vec![NO_PATH; part.len() * ns];
            let mut paths = DestPaths::new(ns);
            let mut i = 0;
            for_each_column(g, lft, None, part, |d, ports, _| {
                paths.resolve_column(g, d, ports);
                let last = u32::from(d.exit_port != 0);
                for (o, end) in out[i * ns..(i + 1) * ns].iter_mut().zip(&paths.end) {
                    if let Ok(h) = end {
                        *o = (h + last).min(u32::from(NO_PATH) - 1) as u8;
                    }
                }
                i += 1;
            });
            out
        })
        .collect();
    let mut hops = SwitchLidTable::new(ns, lft.max_lid, NO_PATH);
    let columns: Vec<(usize, &[u8])> = parts
        .iter()
        .enumerate()
        .flat_map(|(k, out)| {
            let part = &dests[(k * per).min(nd)..((k + 1) * per).min(nd)];
            part.iter().zip(out.chunks_exact(ns.max(1)))
        })
        .filter(|(d, _)| d.lid <= lft.max_lid)
        .map(|(d, column)| (usize::from(d.lid), column))
        .collect();
    super::scatter_columns(&columns, ns, hops.values_mut());
    hops
}

/// [`walked_hops`] where every route of the tables is minimal, read off the switch distances
/// `dist` instead of walked: each switch's entry for a destination must lead one hop closer to
/// the destination's switch (which delivers), and a switch that cannot reach it must have none.
/// `None` as soon as one entry is otherwise (then walk). `O(S * L)` in switch-major rows, no
/// transpose: a standby adopting SSSP's tables needs their hops before any other pass.
pub fn minimal_hops(
    g: &SwitchGraph,
    lft: &Lft,
    dist: &crate::graph::SwitchDistances,
) -> Option<SwitchLidTable> {
    use rayon::prelude::*;
    let ns = g.num_switches();
    let mut hops = SwitchLidTable::new(ns, lft.max_lid, NO_PATH);
    let stride = hops.shape().1;
    let dests: Vec<&Dest> = (g.dests().iter())
        .filter(|d| d.lid <= lft.max_lid)
        .collect();
    let work = ns * dests.len();
    let rows = hops.values_mut().par_chunks_mut(stride.max(1)).enumerate();
    let all_minimal = crate::par::sized(rows, work).all(|(s, row)| {
        let s = s as u32;
        let table = lft.table(s);
        dests.iter().all(|d| {
            let (lid, port) = (usize::from(d.lid), table[usize::from(d.lid)]);
            if d.switch == NO_SWITCH {
                return port == NO_PATH;
            }
            let to = dist.to(d.switch);
            let here = to[s as usize];
            if s == d.switch {
                row[lid] = u8::from(d.exit_port != 0);
                return port == d.exit_port;
            }
            if here == u16::MAX {
                return port == NO_PATH;
            }
            let Some(c) = (port != NO_PATH).then(|| g.channel_at(s, port)).flatten() else {
                return false;
            };
            let h = u32::from(here) + u32::from(d.exit_port != 0);
            row[lid] = h.min(u32::from(NO_PATH) - 1) as u8;
            to[g.chan_head()[c as usize] as usize].wrapping_add(1) == here
        })
    });
    all_minimal.then_some(hops)
}

/// Calls `f(d, ports, layers)` for every destination of `dests` (sorted by LID, as `g.dests()`)
/// with its LFT column (`None` beyond the tables) and, when `layers` is given, its layer column,
/// gathering the columns a window of [`Columns::WIDTH`] LIDs at a time.
pub fn for_each_column(
    g: &SwitchGraph,
    lft: &Lft,
    layers: Option<&SwitchLidTable>,
    dests: &[Dest],
    mut f: impl FnMut(&Dest, Option<&[u8]>, Option<&[u8]>),
) {
    let ns = g.num_switches();
    let mut ports = Columns::new(ns);
    let mut lays = layers.map(|_| Columns::new(ns));
    let end = usize::from(lft.max_lid) + 1;
    let mut i = 0;
    while i < dests.len() {
        let lo = usize::from(dests[i].lid);
        if lo >= end {
            for d in &dests[i..] {
                f(d, None, None);
            }
            return;
        }
        let hi = (lo + Columns::WIDTH).min(end);
        let j = i + dests[i..].partition_point(|d| usize::from(d.lid) < hi);
        ports.fill(lo, hi - lo, |s| lft.table(s));
        if let (Some(l), Some(t)) = (lays.as_mut(), layers) {
            l.fill(lo, hi - lo, |s| t.row(s));
        }
        for d in &dests[i..j] {
            f(
                d,
                Some(ports.column(d.lid)),
                lays.as_ref().map(|l| l.column(d.lid)),
            );
        }
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::SwitchDistances;

    /// Read off the distances, the hops of minimal tables are the walked ones, on fabrics with
    /// LMC, CAs on several ports, failed cables and switches cut off (no entry, no hops); tables
    /// with a detour or a loop are refused, never given other hops.
    #[test]
    fn minimal_hops_are_the_walked_ones_or_refused() {
        let mut refused = 0;
        for spec in [
            "ktree:4,3",
            "ktree:6,3,cut=10",
            "torus:4x4x4,2",
            "torus:3x1,2,lmc=1",
            "random:24,8,3,50",
            "dragonfly:2,1,1,3",
        ] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let dist = SwitchDistances::new(&g);
            let r = crate::sssp::route_with_distances(&g, &dist);
            let walked = walked_hops(&g, &r.lft);
            assert_eq!(minimal_hops(&g, &r.lft, &dist), Some(walked), "{spec}");
            // Up*/Down* detours (valleys between switches on trees, wrap-arounds on tori):
            // refused where they are taken, the walked hops where not.
            let ud = crate::updown::route(&g);
            let ud_hops = minimal_hops(&g, &ud.lft, &dist);
            let minimal = ud.hops == r.hops;
            assert_eq!(ud_hops.is_some(), minimal, "{spec}: Up*/Down*");
            if let Some(h) = ud_hops {
                assert_eq!(h, walked_hops(&g, &ud.lft), "{spec}: Up*/Down*");
            }
            refused += usize::from(!minimal);
            // A loop between a switch and the next hop of its route to some LID.
            let mut looped = r.lft.clone();
            let d = g.dests().iter().find(|d| d.exit_port != 0).unwrap();
            let s = (0..g.num_switches() as u32)
                .find(|&s| s != d.switch && r.lft.port(s, d.lid) != NO_PATH)
                .unwrap();
            let c = g.channel_at(s, r.lft.port(s, d.lid)).unwrap();
            let t = g.chan_head()[c as usize];
            let back = g
                .out_channels(t)
                .find(|&b| g.chan_head()[b as usize] == s)
                .unwrap();
            if t != d.switch {
                looped.set(t, d.lid, g.chan_port()[back as usize]);
                assert_eq!(minimal_hops(&g, &looped, &dist), None, "{spec}: a loop");
            }
        }
        assert!(refused > 0, "some Up*/Down* routing takes a detour");
    }

    /// The blocked gathering equals the byte-by-byte one for every shape: switch counts and
    /// window widths that are and are not multiples of eight, windows anywhere in the rows.
    #[test]
    fn columns_fill_equals_byte_by_byte() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for ns in [1usize, 7, 8, 9, 16, 23, 64, 70] {
            let len = 150;
            let rows: Vec<Vec<u8>> = (0..ns)
                .map(|_| {
                    (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            x as u8
                        })
                        .collect()
                })
                .collect();
            for (lo, width) in [(0, 64), (3, 64), (10, 5), (80, 64), (149, 1), (1, 17)] {
                let mut c = Columns::new(ns);
                c.fill(lo, width, |s| &rows[s as usize]);
                for k in 0..width {
                    let col = c.column((lo + k) as u16);
                    for s in 0..ns {
                        assert_eq!(col[s], rows[s][lo + k], "ns {ns} lo {lo} k {k} s {s}");
                    }
                }
            }
        }
    }
}
