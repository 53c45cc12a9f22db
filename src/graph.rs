//! The switch graph routing works on, and hop distances over it.
//!
//! Switches get dense ids `0..num_switches` (in node-GUID order, so every front that describes the
//! same fabric gets the same ids and the same routing), every switch-to-switch link direction is a
//! *channel* with a dense id (parallel links are separate channels), and every LID is a [`Dest`]
//! attached to one switch and leaving it by one port. Tables elsewhere are flat arrays indexed by
//! these ids.
//!
//! **Cost.** [`SwitchGraph::new`]: sorts of the switches by GUID, the channels and the LIDs,
//! `O(S log S + C log C + D log D)`, and a hash map of every link's two ends; flat arrays of
//! `O(S + C + D)` words, and 4 bytes per switch port and per LID up to `max_lid`.
//! [`SwitchDistances`]: one sweep over the channels per BFS level and batch of 64 destination
//! switches, `O(⌈S/64⌉·(e+1)·(S + C) + S²)` for e the largest distance, at worst `O(S·(S + C))`;
//! `2·S²` bytes, and `24·S` per batch in progress (one per thread). [`SwitchGraph::tree_levels`],
//! [`SwitchGraph::components`] and [`SwitchGraph::bfs_distances_to`]: one search each, `O(S + C)`.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::fabric::{Fabric, FabricError, NodeKind, PortRef};

/// Dense switch id, `0..num_switches()`.
pub type SwitchId = u32;
/// Dense channel id (one direction of a switch-to-switch link), `0..num_channels()`.
pub type ChannelId = u32;
/// Dense destination id (one LID), index into [`SwitchGraph::dests`].
pub type DestId = u32;

// One "none" per index space, so a reader (and grep) can tell which table an entry belongs to.
// The ids stay plain `u32` aliases rather than newtypes: they index flat arrays in every hot loop,
// and `u32::MAX` is never a valid id, since a graph refuses fabrics that large.
/// No switch: a CA or router node, a LID not attached to a switch, a tree without root.
pub const NO_SWITCH: SwitchId = u32::MAX;
/// No channel: a path ends at this switch, the switch is unrouted, or a port has no link.
pub const NO_CHANNEL: ChannelId = u32::MAX;
/// No destination: a LID nobody holds.
pub const NO_DEST: DestId = u32::MAX;
/// A switch not yet given a connected-component id.
const NO_COMPONENT: u32 = u32::MAX;

/// One destination LID, seen from the switch graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dest {
    pub lid: u16,
    /// Index into [`Fabric::endpoints`].
    pub endpoint: u32,
    /// Switch the LID hangs off (for a switch LID, the switch itself); [`NO_SWITCH`] when the port is
    /// not attached to any switch (a CA linked to a CA, or an unlinked port): unreachable.
    pub switch: u32,
    /// Port by which `switch` delivers to this LID: 0 for the switch's own LIDs.
    pub exit_port: u8,
    /// Which of the port's 2^LMC LIDs this is (0 for the base LID).
    pub lid_offset: u8,
}

/// The switch graph routing works on. Dense ids: switches `0..num_switches()` (in node-GUID order), channels
/// `0..num_channels()` (one per direction of every switch-to-switch link, sorted by tail switch,
/// then port), destinations `0..dests.len()` (every LID, sorted by LID).
#[derive(Clone, Debug)]
pub struct SwitchGraph {
    /// switch id -> node index
    switch_node: Vec<u32>,
    /// switch id -> node GUID, so errors can name a switch without the fabric
    switch_guid: Vec<u64>,
    /// node index -> switch id, or [`NO_SWITCH`] for CAs and routers
    node_switch: Vec<u32>,
    /// CSR: the channels leaving switch `s` are `out_start[s]..out_start[s+1]`
    out_start: Vec<u32>,
    chan_tail: Vec<u32>,
    chan_head: Vec<u32>,
    /// port number at the tail switch
    chan_port: Vec<u8>,
    /// port number at the head switch
    chan_head_port: Vec<u8>,
    /// the channel of the same link in the other direction
    chan_reverse: Vec<u32>,
    /// CSR of channels entering switch `s`: `in_chans[in_start[s]..in_start[s+1]]`
    in_start: Vec<u32>,
    in_chans: Vec<u32>,
    /// `port_chan[port_base[s] + p]`: the channel leaving switch `s` by port `p`, or [`NO_CHANNEL`]
    port_base: Vec<u32>,
    port_chan: Vec<u32>,
    /// Every LID, sorted by LID.
    dests: Vec<Dest>,
    /// `lid_dest[lid]`: index into `dests`, or [`NO_DEST`]
    lid_dest: Vec<u32>,
    /// Traffic sources: CA/router endpoints attached to a switch, as (endpoint index, switch),
    /// sorted by base LID.
    terminals: Vec<(u32, u32)>,
    /// `terminal_count[s]`: how many CA/router ports hang off switch `s`
    terminal_count: Vec<u32>,
    /// How many of those are aggregation nodes (SHARP: one on every switch, leaves and spines
    /// alike), which do not make a switch a leaf.
    aggregation_count: Vec<u32>,
    /// The highest LID in the fabric.
    max_lid: u16,
}

impl SwitchGraph {
    pub fn new(f: &Fabric) -> Result<Self, FabricError> {
        // Switch ids in node-GUID order, so that every front (OpenSM's subnet, a dump, a file) that
        // describes the same fabric gets the same ids and hence the same routing.
        let mut switch_node: Vec<u32> = (0..f.nodes().len() as u32)
            .filter(|&i| f.nodes()[i as usize].kind == NodeKind::Switch)
            .collect();
        switch_node.sort_unstable_by_key(|&i| f.nodes()[i as usize].guid);
        let mut node_switch = vec![NO_SWITCH; f.nodes().len()];
        for (s, &n) in switch_node.iter().enumerate() {
            node_switch[n as usize] = s as u32;
        }
        let ns = switch_node.len();
        if ns >= NO_SWITCH as usize {
            return Err(FabricError::TooLarge(ns));
        }

        // Every link between two switches gives two channels; collect (tail, port, head, head_port).
        let mut raw: Vec<(u32, u8, u32, u8)> = Vec::new();
        // Where each node port leads: (remote node, remote port).
        let mut remote: HashMap<PortRef, PortRef> = HashMap::with_capacity(f.links().len() * 2);
        for l in f.links() {
            remote.insert(l.a, l.b);
            remote.insert(l.b, l.a);
            let (sa, sb) = (
                node_switch[l.a.node as usize],
                node_switch[l.b.node as usize],
            );
            if sa != NO_SWITCH && sb != NO_SWITCH {
                raw.push((sa, l.a.port, sb, l.b.port));
                raw.push((sb, l.b.port, sa, l.a.port));
            }
        }
        raw.sort_unstable();
        let nc = raw.len();
        let mut out_start = vec![0u32; ns + 1];
        for &(t, ..) in &raw {
            out_start[t as usize + 1] += 1;
        }
        for s in 0..ns {
            out_start[s + 1] += out_start[s];
        }
        let chan_tail: Vec<u32> = raw.iter().map(|r| r.0).collect();
        let chan_port: Vec<u8> = raw.iter().map(|r| r.1).collect();
        let chan_head: Vec<u32> = raw.iter().map(|r| r.2).collect();
        let chan_head_port: Vec<u8> = raw.iter().map(|r| r.3).collect();

        let mut port_base = vec![0u32; ns + 1];
        for s in 0..ns {
            let np = u32::from(f.nodes()[switch_node[s] as usize].num_ports) + 1;
            port_base[s + 1] = port_base[s] + np;
        }
        let mut port_chan = vec![NO_CHANNEL; port_base[ns] as usize];
        for c in 0..nc {
            port_chan[(port_base[chan_tail[c] as usize] + u32::from(chan_port[c])) as usize] =
                c as u32;
        }
        let chan_reverse: Vec<u32> = (0..nc)
            .map(|c| {
                port_chan
                    [(port_base[chan_head[c] as usize] + u32::from(chan_head_port[c])) as usize]
            })
            .collect();

        let (in_start, in_chans) = in_channels(&chan_head, ns);

        let max_lid = f.max_lid();
        let Attached {
            mut dests,
            mut terminals,
            terminal_count,
            aggregation_count,
        } = attach_endpoints(f, &node_switch, &remote);
        dests.sort_unstable_by_key(|d| d.lid);
        terminals.sort_unstable_by_key(|&(e, _)| f.endpoints()[e as usize].base_lid);
        let mut lid_dest = vec![NO_DEST; usize::from(max_lid) + 1];
        for (i, d) in dests.iter().enumerate() {
            lid_dest[usize::from(d.lid)] = i as u32;
        }

        let switch_guid = switch_node
            .iter()
            .map(|&n| f.nodes()[n as usize].guid)
            .collect();
        Ok(SwitchGraph {
            switch_node,
            switch_guid,
            node_switch,
            out_start,
            chan_tail,
            chan_head,
            chan_port,
            chan_head_port,
            chan_reverse,
            in_start,
            in_chans,
            port_base,
            port_chan,
            dests,
            lid_dest,
            terminals,
            terminal_count,
            aggregation_count,
            max_lid,
        })
    }

    // Read access to the graph's arrays (dense ids index them; see the struct's fields).
    #[inline]
    pub fn switch_node(&self) -> &[u32] {
        &self.switch_node
    }

    #[inline]
    pub fn node_switch(&self) -> &[u32] {
        &self.node_switch
    }

    #[inline]
    pub fn out_start(&self) -> &[u32] {
        &self.out_start
    }

    #[inline]
    pub fn chan_tail(&self) -> &[u32] {
        &self.chan_tail
    }

    #[inline]
    pub fn chan_head(&self) -> &[u32] {
        &self.chan_head
    }

    #[inline]
    pub fn chan_port(&self) -> &[u8] {
        &self.chan_port
    }

    #[inline]
    pub fn chan_head_port(&self) -> &[u8] {
        &self.chan_head_port
    }

    #[inline]
    pub fn chan_reverse(&self) -> &[u32] {
        &self.chan_reverse
    }

    #[inline]
    pub fn in_start(&self) -> &[u32] {
        &self.in_start
    }

    #[inline]
    pub fn in_chans(&self) -> &[u32] {
        &self.in_chans
    }

    #[inline]
    pub fn port_base(&self) -> &[u32] {
        &self.port_base
    }

    #[inline]
    pub fn port_chan(&self) -> &[u32] {
        &self.port_chan
    }

    /// Whether `other` routes exactly like `self`: the same switches (by GUID, so the same ids),
    /// channels (tail, port, head, head port), LIDs on the same switch ports, and CA ports and
    /// aggregation nodes per switch (the sources the channel loads count). A routing verified on
    /// one is then verified on the other, loads and dependency edges alike, whatever order the
    /// fabrics list their nodes in (the endpoint indices are left out). `O(S + C + L)`.
    pub fn routes_like(&self, other: &SwitchGraph) -> bool {
        let dest_key = |d: &Dest| (d.lid, d.switch, d.exit_port, d.lid_offset);
        self.max_lid == other.max_lid
            && self.switch_guid == other.switch_guid
            && self.out_start == other.out_start
            && self.chan_tail == other.chan_tail
            && self.chan_head == other.chan_head
            && self.chan_port == other.chan_port
            && self.chan_head_port == other.chan_head_port
            && self.terminal_count == other.terminal_count
            && self.aggregation_count == other.aggregation_count
            && self.dests.len() == other.dests.len()
            && (self.dests.iter().map(dest_key)).eq(other.dests.iter().map(dest_key))
    }

    #[inline]
    pub fn dests(&self) -> &[Dest] {
        &self.dests
    }

    #[inline]
    pub fn lid_dest(&self) -> &[u32] {
        &self.lid_dest
    }

    #[inline]
    pub fn terminals(&self) -> &[(u32, u32)] {
        &self.terminals
    }

    #[inline]
    pub fn terminal_count(&self) -> &[u32] {
        &self.terminal_count
    }

    /// The level of every switch when the fabric is layered like a fat tree: levels by hop
    /// distance from the nearest leaf (a switch with CA ports other than aggregation nodes),
    /// every switch-to-switch link joining two adjacent levels, and at least one switch that is
    /// not a leaf. `None` otherwise (tori, dragonflies, random fabrics: switches with CAs linked
    /// to each other).
    pub fn tree_levels(&self) -> Option<Vec<u32>> {
        let ns = self.num_switches();
        let mut level = vec![u32::MAX; ns];
        let mut queue: std::collections::VecDeque<u32> = (0..ns as u32)
            .filter(|&s| self.terminal_count[s as usize] > self.aggregation_count[s as usize])
            .collect();
        if queue.is_empty() || queue.len() == ns {
            return None;
        }
        for &s in &queue {
            level[s as usize] = 0;
        }
        while let Some(s) = queue.pop_front() {
            for c in self.out_channels(s) {
                let h = self.chan_head[c as usize] as usize;
                if level[h] == u32::MAX {
                    level[h] = level[s as usize] + 1;
                    queue.push_back(h as u32);
                }
            }
        }
        let layered = (0..self.num_channels()).all(|c| {
            let (t, h) = (
                level[self.chan_tail[c] as usize],
                level[self.chan_head[c] as usize],
            );
            t != u32::MAX && t.abs_diff(h) == 1
        });
        layered.then_some(level)
    }

    /// On a fabric layered like a fat tree (`levels` from [`Self::tree_levels`]): whether some
    /// switch's shortest way (`dist`) to a switch with CAs is shorter than every up-then-down
    /// way, i.e. failed cables force minimal routes to CA LIDs to turn down and up again. Two
    /// passes over the channels per such switch (levels ascending for the pure-down distances,
    /// descending for the up-then-down ones); stops at the first such pair. (A complete tree
    /// checks every pair: 18 ms on ktree:18,3, 0.28 s on fattree3:48.)
    pub fn shortest_ways_turn_down_up(&self, levels: &[u32], dist: &SwitchDistances) -> bool {
        let ns = self.num_switches();
        if levels.len() != ns || dist.n != ns {
            return false;
        }
        let mut by_level: Vec<u32> = (0..ns as u32).collect();
        by_level.sort_unstable_by_key(|&s| levels[s as usize]);
        let (mut down, mut legal) = (vec![u16::MAX; ns], vec![u16::MAX; ns]);
        (0..ns as u32)
            .filter(|&t| self.terminal_count[t as usize] > 0)
            .any(|t| {
                down.fill(u16::MAX);
                down[t as usize] = 0;
                // A switch one level up from x reaches t down through x.
                for &x in &by_level {
                    let dx = down[x as usize];
                    if dx == u16::MAX {
                        continue;
                    }
                    for c in self.out_channels(x) {
                        let y = self.chan_head[c as usize] as usize;
                        if levels[y] == levels[x as usize] + 1 {
                            down[y] = down[y].min(dx + 1);
                        }
                    }
                }
                // Up one level to x, then x's legal way (up* down* stays legal).
                for &y in by_level.iter().rev() {
                    let mut best = down[y as usize];
                    for c in self.out_channels(y) {
                        let x = self.chan_head[c as usize] as usize;
                        if levels[x] == levels[y as usize] + 1 && legal[x] != u16::MAX {
                            best = best.min(legal[x] + 1);
                        }
                    }
                    legal[y as usize] = best;
                }
                let to = dist.to(t);
                (0..ns).any(|s| to[s] < legal[s])
            })
    }

    #[inline]
    pub fn max_lid(&self) -> u16 {
        self.max_lid
    }

    /// The node GUID of switch `s`.
    #[inline]
    pub fn switch_guid(&self, s: u32) -> u64 {
        self.switch_guid[s as usize]
    }

    /// "switch 0x<GUID>": how errors that have no fabric at hand name switch `s`.
    pub fn switch_label(&self, s: u32) -> String {
        match self.switch_guid.get(s as usize) {
            Some(guid) => format!("switch 0x{guid:016x}"),
            None => format!("switch #{s}"),
        }
    }

    pub fn num_switches(&self) -> usize {
        self.switch_node.len()
    }

    pub fn num_channels(&self) -> usize {
        self.chan_tail.len()
    }

    /// Channels leaving switch `s`.
    pub fn out_channels(&self, s: u32) -> std::ops::Range<u32> {
        self.out_start[s as usize]..self.out_start[s as usize + 1]
    }

    /// Channels entering switch `s`.
    pub fn in_channels(&self, s: u32) -> &[u32] {
        &self.in_chans[self.in_start[s as usize] as usize..self.in_start[s as usize + 1] as usize]
    }

    /// The channel leaving switch `s` by `port`, if that port leads to another switch.
    #[inline]
    pub fn channel_at(&self, s: u32, port: u8) -> Option<u32> {
        let base = self.port_base[s as usize];
        if u32::from(port) >= self.port_base[s as usize + 1] - base {
            return None;
        }
        let c = self.port_chan[(base + u32::from(port)) as usize];
        (c != NO_CHANNEL).then_some(c)
    }

    /// The destination record for a LID, if some port owns it.
    pub fn dest_of_lid(&self, lid: u16) -> Option<&Dest> {
        match self.lid_dest.get(usize::from(lid)) {
            Some(&i) if i != NO_DEST => Some(&self.dests[i as usize]),
            _ => None,
        }
    }

    /// Connected component of every switch, labelled 0, 1, ... in switch order (channels come in
    /// pairs, so reachability is symmetric).
    pub fn components(&self) -> Vec<u32> {
        let ns = self.num_switches();
        let mut comp = vec![NO_COMPONENT; ns];
        let mut stack = Vec::new();
        let mut next = 0u32;
        for s in 0..ns as u32 {
            if comp[s as usize] != NO_COMPONENT {
                continue;
            }
            comp[s as usize] = next;
            stack.push(s);
            while let Some(u) = stack.pop() {
                for c in self.out_channels(u) {
                    let v = self.chan_head[c as usize];
                    if comp[v as usize] == NO_COMPONENT {
                        comp[v as usize] = next;
                        stack.push(v);
                    }
                }
            }
            next += 1;
        }
        comp
    }

    /// Hop distances (in switch-to-switch channels) from every switch to switch `to`; `u32::MAX`
    /// where unreachable. Plain BFS over the reversed channels.
    pub fn bfs_distances_to(&self, to: u32) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.num_switches()];
        let mut queue = std::collections::VecDeque::new();
        dist[to as usize] = 0;
        queue.push_back(to);
        while let Some(v) = queue.pop_front() {
            for &c in self.in_channels(v) {
                let u = self.chan_tail[c as usize];
                if dist[u as usize] == u32::MAX {
                    dist[u as usize] = dist[v as usize] + 1;
                    queue.push_back(u);
                }
            }
        }
        dist
    }
}

/// Hop distances between all pairs of switches. `u16::MAX` where unreachable.
///
/// Computed 64 destination switches at a time (in parallel over the batches): a bit per
/// destination in one `u64` per switch, so one sweep over the channels advances 64 BFS fronts
/// by one level. The same distances as a BFS per destination, with a 64th of the memory
/// traffic (18-ary 3-tree: ~45 ms of CPU time down to a few).
pub struct SwitchDistances {
    n: usize,
    dist: Vec<u16>,
}

/// Where [`SwitchDistances`] are computed.
#[derive(Clone, Copy)]
enum Threads {
    /// Rayon's thread pool, batches in parallel.
    Pool,
    /// The calling thread alone.
    Caller,
}

impl SwitchDistances {
    pub fn new(g: &SwitchGraph) -> Self {
        Self::compute(g, Threads::Pool)
    }

    /// [`Self::new`] on the calling thread alone, for work kept off the thread pool.
    pub fn on_this_thread(g: &SwitchGraph) -> Self {
        Self::compute(g, Threads::Caller)
    }

    fn compute(g: &SwitchGraph, threads: Threads) -> Self {
        let n = g.num_switches();
        let mut dist = vec![u16::MAX; n * n];
        let batch_of_64 = |(batch, rows): (usize, &mut [u16])| {
            let first = batch * 64;
            let width = rows.len() / n;
            // reached[u]: destinations (bits) whose distance from u is known; front[u]: those
            // found at the last level.
            let mut reached = vec![0u64; n];
            let mut front = vec![0u64; n];
            let mut next = vec![0u64; n];
            for k in 0..width {
                let t = first + k;
                reached[t] |= 1 << k;
                front[t] |= 1 << k;
                rows[k * n + t] = 0;
            }
            let mut level = 0u16;
            loop {
                level = level.saturating_add(1);
                let mut any = false;
                for u in 0..n {
                    let mut bits = 0u64;
                    for c in g.out_channels(u as u32) {
                        bits |= front[g.chan_head[c as usize] as usize];
                    }
                    bits &= !reached[u];
                    next[u] = bits;
                    any |= bits != 0;
                }
                if !any {
                    break;
                }
                for u in 0..n {
                    let mut bits = next[u];
                    reached[u] |= bits;
                    while bits != 0 {
                        let k = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        rows[k * n + u] = level;
                    }
                }
                std::mem::swap(&mut front, &mut next);
            }
        };
        let size = (64 * n).max(1);
        match threads {
            Threads::Pool => dist.par_chunks_mut(size).enumerate().for_each(batch_of_64),
            Threads::Caller => dist.chunks_mut(size).enumerate().for_each(batch_of_64),
        }
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

/// Whether a node description names an aggregation node (NVIDIA SHARP's in-network reduction
/// engine, a CA on a switch port: "Mellanox Technologies Aggregation Node").
pub fn is_aggregation_node(description: &str) -> bool {
    description.contains("Aggregation Node")
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
    order.resize(counts.last().copied().unwrap_or(0) as usize, NO_SWITCH);
    for (s, &d) in dist.iter().enumerate() {
        if d != u16::MAX {
            let slot = &mut counts[usize::from(d)];
            order[*slot as usize] = s as u32;
            *slot += 1;
        }
    }
}

/// The channels into each switch, grouped by head switch: (start per switch, channels).
fn in_channels(chan_head: &[u32], ns: usize) -> (Vec<u32>, Vec<u32>) {
    let nc = chan_head.len();
    let mut in_start = vec![0u32; ns + 1];
    for &h in chan_head {
        in_start[h as usize + 1] += 1;
    }
    for s in 0..ns {
        in_start[s + 1] += in_start[s];
    }
    let mut fill = in_start.clone();
    let mut in_chans = vec![0u32; nc];
    for (c, &h) in chan_head.iter().enumerate() {
        in_chans[fill[h as usize] as usize] = c as u32;
        fill[h as usize] += 1;
    }
    (in_start, in_chans)
}

/// The endpoints as the switches see them: destinations (one per LID), terminals, and per
/// switch its CA/router ports and aggregation nodes.
struct Attached {
    /// Unsorted.
    dests: Vec<Dest>,
    /// (endpoint, switch), unsorted.
    terminals: Vec<(u32, u32)>,
    terminal_count: Vec<u32>,
    aggregation_count: Vec<u32>,
}

/// Each endpoint's switch (itself for a switch's port 0, else the switch its port is cabled
/// to; `NO_SWITCH` if none) and exit port.
fn attach_endpoints(
    f: &Fabric,
    node_switch: &[u32],
    remote: &HashMap<PortRef, PortRef>,
) -> Attached {
    let ns = node_switch.iter().filter(|&&s| s != NO_SWITCH).count();
    let mut dests = Vec::new();
    let mut terminals = Vec::new();
    let mut terminal_count = vec![0u32; ns];
    let mut aggregation_count = vec![0u32; ns];
    for (ei, e) in f.endpoints().iter().enumerate() {
        let (sw, exit) = if node_switch[e.node as usize] != NO_SWITCH && e.port == 0 {
            (node_switch[e.node as usize], 0u8)
        } else {
            match remote.get(&PortRef {
                node: e.node,
                port: e.port,
            }) {
                Some(r) if node_switch[r.node as usize] != NO_SWITCH => {
                    (node_switch[r.node as usize], r.port)
                }
                _ => (NO_SWITCH, 0),
            }
        };
        if e.port != 0 && sw != NO_SWITCH {
            terminals.push((ei as u32, sw));
            terminal_count[sw as usize] += 1;
            if is_aggregation_node(&f.nodes()[e.node as usize].description) {
                aggregation_count[sw as usize] += 1;
            }
        }
        for (k, lid) in e.lids().enumerate() {
            dests.push(Dest {
                lid: lid as u16,
                endpoint: ei as u32,
                switch: sw,
                exit_port: exit,
                lid_offset: k as u8,
            });
        }
    }
    Attached {
        dests,
        terminals,
        terminal_count,
        aggregation_count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A complete fat tree's shortest ways are all up-then-down; a failed cable makes some switch
    /// reach a leaf shorter down and up again (the cable cut here, at random, in each seed).
    #[test]
    fn failed_cables_make_shortest_ways_turn_down_up() {
        let turns = |spec: &str| {
            let g = SwitchGraph::new(&crate::topo::by_name(spec).unwrap()).unwrap();
            let levels = g.tree_levels().unwrap();
            g.shortest_ways_turn_down_up(&levels, &SwitchDistances::new(&g))
        };
        for spec in ["ktree:4,3", "ktree:6,3", "ktree:3,4", "fattree2:12"] {
            assert!(!turns(spec), "{spec}");
        }
        for seed in 1..=4 {
            let spec = format!("ktree:6,3,cut=2,faultseed={seed}");
            assert!(turns(&spec), "{spec}");
        }
    }

    /// The 64-wide sweeps give exactly one BFS per destination's distances, across batch
    /// boundaries (more than 64 switches), with parallel links and on disconnected fabrics.
    #[test]
    fn all_pairs_distances_equal_one_bfs_per_switch() {
        for spec in [
            "ktree:6,3",
            "torus:5x5x3,1",
            "random:150,16,2,400,seed=4,parallel",
            "dragonfly:4,2,2,9",
        ] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let d = SwitchDistances::new(&g);
            for t in 0..g.num_switches() as u32 {
                let bfs = g.bfs_distances_to(t);
                for (s, &b) in bfs.iter().enumerate() {
                    assert_eq!(
                        u32::from(d.get(s as u32, t)),
                        if b == u32::MAX {
                            u32::from(u16::MAX)
                        } else {
                            b
                        },
                        "{spec}: {s} -> {t}"
                    );
                }
            }
        }
        // Two rings of 40 switches with no link between them: unreachable pairs stay u16::MAX.
        let mut net = crate::testkit::Net::new(80, 4);
        for base in [0, 40] {
            for i in 0..40 {
                net.link(base + i, base + (i + 1) % 40);
            }
        }
        net.cas_everywhere(1);
        let g = SwitchGraph::new(&net.build()).unwrap();
        let d = SwitchDistances::new(&g);
        assert_eq!(d.get(0, 79), u16::MAX);
        assert_eq!(d.get(0, 20), 20);
        assert_eq!(d.get(41, 79), 2);
    }

    #[test]
    fn tree_levels_recognise_fat_trees_only() {
        let levels = |spec: &str| {
            let f = crate::topo::by_name(spec).unwrap();
            SwitchGraph::new(&f).unwrap().tree_levels()
        };
        let l = levels("ktree:3,3,shuffle=5").expect("a k-ary n-tree is layered");
        let mut per_level = [0; 3];
        for x in l {
            per_level[x as usize] += 1;
        }
        assert_eq!(per_level, [9, 9, 9]);
        assert!(levels("xgft:2;4,6;1,2").is_some());
        for spec in [
            "torus:3x3,1",
            "dragonfly:4,2,2,9",
            "random:16,8,2,20",
            "hypercube:3,1",
        ] {
            assert!(levels(spec).is_none(), "{spec}");
        }
    }
}
