//! Judging multicast forwarding from the MFT port masks alone (built here or read from OpenSM's
//! `opensm.mcfdbs`): per group completeness, depth and loops; multicast channel loads; and the
//! deadlock check of multicast together with the unicast layers, per VL.
//!
//! A channel `s -> w` *carries* a group when `s`'s mask holds the channel's port: a packet at `s`
//! goes out of every mask port but the one it came in by. So a packet that entered `s` by a
//! carrying channel `a` (from `u`) continues on every carrying channel `b` leaving `s` except back
//! over the same link, and the group's dependencies are all such `(a, b)`; for a tree these are
//! exactly the pairs of distinct tree links at a switch ([module doc](super)).
//!
//! **Cost** (`T_g`, `M_g`: switches with an MFT entry, member switches of group g; E ≤ C·radix
//! possible dependency edges). [`mft_metrics`]: per group a flood along the carrying channels from
//! each member switch, `O(M_g·(C + M_g))` at worst, and `O(T_g·radix)` for its links; 48 bytes
//! per switch, 4 per channel. [`dependency_bits`]: an E-bit set, `O(S + C)` set-up, and per group
//! every carrying channel into an entry's switch times the channels out, `O(T_g·radix²)` and at
//! most `O(C + E)`. [`find_cycle`]: `O(C + E)`, about 12 bytes per dependency set. [`joint_check`]:
//! per VL its groups' dependencies and at most 3 + `L_v` cycle searches (`L_v` unicast layers on
//! it), with up to four E-bit sets (E/8 bytes each) alive.

use serde::Serialize;

use super::{guid_text, GroupMft, PortMask, UnicastLayers};
use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::verify::{find_cdg_cycle, DependencySlots};

/// One channel of a cycle, or a channel named by where it leaves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McCycleHop {
    pub switch_guid: String,
    pub port: u8,
}

/// The deadlock check of one VL: the unicast layers on it and the groups on it together.
#[derive(Clone, Debug, Serialize)]
pub struct VlCheck {
    pub vl: u8,
    /// Groups whose packets use this VL.
    pub groups: u32,
    /// Unicast layers on this VL.
    pub unicast_layers: Vec<u8>,
    pub multicast_dependencies: u64,
    pub unicast_dependencies: u64,
    /// The union of the layers' and the groups' dependencies is acyclic.
    pub acyclic: bool,
    pub multicast_alone_acyclic: bool,
    pub unicast_alone_acyclic: bool,
    /// When the union is cyclic but multicast alone is not: the unicast layers that close a
    /// cycle with the groups (each checked alone with them).
    pub conflicting_layers: Vec<u8>,
    /// When the union is cyclic: the VLs on which this VL's groups would be deadlock-free
    /// together with that VL's unicast layers and groups (filled by [`super::route_groups`]; a
    /// VL without unicast layers or groups is a lane reserved for multicast).
    pub fits_on_vls: Vec<u8>,
    /// A cycle of the union, channel by channel, when there is one.
    pub cycle: Option<Vec<McCycleHop>>,
    pub cycle_text: Option<String>,
    /// How the trees of this VL were built ("minimal", "up*/down*"; empty when only judged).
    pub trees: &'static str,
    /// What was done about it ([`super::route_groups`]; empty when only judged).
    pub action: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct JointCheck {
    /// Every VL's union of unicast and multicast dependencies is acyclic.
    pub deadlock_free: bool,
    pub vls: Vec<VlCheck>,
}

/// One group's tree, judged from its masks.
#[derive(Clone, Debug, Serialize)]
pub struct GroupMetrics {
    pub mlid: u16,
    pub vl: u8,
    pub member_switches: u32,
    /// Switches with an entry for the MLID.
    pub tree_switches: u32,
    /// Switch-to-switch links carrying the group (in either direction).
    pub tree_links: u32,
    /// Every member switch reaches every other along carrying channels.
    pub complete: bool,
    /// (member switch, member switch) pairs that do not reach each other.
    pub unreachable_pairs: u64,
    /// The carrying links form one tree (connected, no loop: a loop would duplicate packets).
    pub tree: bool,
    /// Hops from the tree's centre (the switch whose farthest member switch is nearest along
    /// the tree) to its farthest member switch; `None` when no switch reaches all members.
    pub depth: Option<u32>,
    pub centre: String,
    /// The most hops between two member switches along the tree.
    pub diameter: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct McMetrics {
    pub groups: Vec<GroupMetrics>,
    pub complete_groups: u32,
    pub max_depth: u32,
    /// The most groups carried by one channel direction.
    pub max_channel_load: u32,
    /// One channel with that load.
    pub max_load_channel: Option<McCycleHop>,
    /// Channel directions carrying at least one group.
    pub channels_used: u32,
    /// Average groups per channel direction, over those used.
    pub average_channel_load: f64,
}

impl McMetrics {
    /// One line for logs.
    pub fn summary(&self) -> String {
        format!(
            "{} group(s), {} complete, max depth {}, max multicast channel load {} group(s) on one channel ({} channels used, {:.2} on average)",
            self.groups.len(),
            self.complete_groups,
            self.max_depth,
            self.max_channel_load,
            self.channels_used,
            self.average_channel_load
        )
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct McReport {
    pub metrics: McMetrics,
    pub check: JointCheck,
}

/// Metrics and the joint check of `mfts` with `unicast`.
pub fn analyze(g: &SwitchGraph, mfts: &[GroupMft], unicast: &UnicastLayers) -> McReport {
    McReport {
        metrics: mft_metrics(g, mfts),
        check: joint_check(g, mfts, unicast),
    }
}

/// The groups' masks as one dense array per switch, filled per group and cleared after.
struct MaskTable {
    mask: Vec<PortMask>,
}

impl MaskTable {
    fn new(g: &SwitchGraph) -> Self {
        MaskTable {
            mask: vec![PortMask::EMPTY; g.num_switches()],
        }
    }

    fn load(&mut self, m: &GroupMft) {
        for &(s, pm) in &m.masks {
            if let Some(x) = self.mask.get_mut(s as usize) {
                *x = pm;
            }
        }
    }

    fn clear(&mut self, m: &GroupMft) {
        for &(s, _) in &m.masks {
            if let Some(x) = self.mask.get_mut(s as usize) {
                *x = PortMask::EMPTY;
            }
        }
    }

    #[inline]
    fn carries(&self, g: &SwitchGraph, c: u32) -> bool {
        self.mask[g.chan_tail()[c as usize] as usize].contains(g.chan_port()[c as usize])
    }
}

/// The channel dependencies of `groups` as bits over [`DependencySlots`] (the layout of
/// [`crate::verify::VerifyReport::layer_edges`]).
pub fn dependency_bits<'a>(
    g: &SwitchGraph,
    groups: impl IntoIterator<Item = &'a GroupMft>,
) -> Vec<u64> {
    let slots = DependencySlots::new(g);
    let mut bits = vec![0u64; slots.len().div_ceil(64) as usize];
    let mut table = MaskTable::new(g);
    for m in groups {
        table.load(m);
        for &(s, pm) in &m.masks {
            if s as usize >= g.num_switches() {
                continue;
            }
            for &a in g.in_channels(s) {
                if !table.carries(g, a) {
                    continue;
                }
                let back = g.chan_reverse()[a as usize];
                for b in g.out_channels(s) {
                    if b != back && pm.contains(g.chan_port()[b as usize]) {
                        let slot = slots.slot(g, a, b);
                        bits[(slot / 64) as usize] |= 1u64 << (slot % 64);
                    }
                }
            }
        }
        table.clear(m);
    }
    bits
}

/// A cycle of the dependency graph given as bits ([`dependency_bits`]'s layout), as channels.
pub fn find_cycle(g: &SwitchGraph, bits: &[u64]) -> Option<Vec<u32>> {
    let slots = DependencySlots::new(g);
    if (bits.len() as u64) * 64 < slots.len() {
        return None;
    }
    let mut edges = Vec::new();
    slots.for_each_edge(g, bits, |a, b| edges.push((a, b)));
    find_cdg_cycle(g.num_channels(), &edges)
}

fn popcount(bits: &[u64]) -> u64 {
    bits.iter().map(|w| u64::from(w.count_ones())).sum()
}

fn or_into(acc: &mut [u64], b: &[u64]) {
    for (x, y) in acc.iter_mut().zip(b) {
        *x |= y;
    }
}

fn hops(g: &SwitchGraph, cycle: &[u32]) -> Vec<McCycleHop> {
    cycle
        .iter()
        .map(|&c| McCycleHop {
            switch_guid: guid_text(g, g.chan_tail()[c as usize]),
            port: g.chan_port()[c as usize],
        })
        .collect()
}

/// "0x... port 1 -> 0x... port 3 -> (back to the first)".
pub fn cycle_text(h: &[McCycleHop]) -> String {
    let mut s: Vec<String> = h
        .iter()
        .map(|x| format!("{} port {}", x.switch_guid, x.port))
        .collect();
    s.push("(back to the first)".into());
    s.join(" -> ")
}

/// Checks one VL: the multicast dependencies `mbits` with the unicast `layers` (layer number,
/// bits).
pub fn check_vl(
    g: &SwitchGraph,
    vl: u8,
    groups: u32,
    mbits: &[u64],
    layers: &[(u8, &[u64])],
) -> VlCheck {
    let mut ubits = vec![0u64; mbits.len()];
    for (_, b) in layers {
        or_into(&mut ubits, b);
    }
    let mcast_alone = find_cycle(g, mbits).is_none();
    let unicast_alone = find_cycle(g, &ubits).is_none();
    let mut union = ubits.clone();
    or_into(&mut union, mbits);
    let cycle = find_cycle(g, &union);
    let mut conflicting = Vec::new();
    if cycle.is_some() && mcast_alone {
        for &(l, b) in layers {
            let mut one = mbits.to_vec();
            or_into(&mut one, b);
            if find_cycle(g, &one).is_some() {
                conflicting.push(l);
            }
        }
    }
    let named = cycle.as_deref().map(|c| hops(g, c));
    VlCheck {
        vl,
        groups,
        unicast_layers: layers.iter().map(|&(l, _)| l).collect(),
        multicast_dependencies: popcount(mbits),
        unicast_dependencies: popcount(&ubits),
        acyclic: cycle.is_none(),
        multicast_alone_acyclic: mcast_alone,
        unicast_alone_acyclic: unicast_alone,
        conflicting_layers: conflicting,
        fits_on_vls: Vec::new(),
        cycle_text: named.as_deref().map(cycle_text),
        cycle: named,
        trees: "",
        action: String::new(),
    }
}

/// The deadlock check per VL: each VL's unicast layers (by `unicast.layer_vl`) together with the
/// groups on it (by [`GroupMft::vl`]).
pub fn joint_check(g: &SwitchGraph, mfts: &[GroupMft], unicast: &UnicastLayers) -> JointCheck {
    let words = DependencySlots::new(g).len().div_ceil(64) as usize;
    let max_vl = mfts
        .iter()
        .map(|m| m.vl)
        .chain((0..unicast.layer_edges.len()).map(|l| unicast.vl_of(l)))
        .max()
        .unwrap_or(0);
    let mut vls = Vec::new();
    for vl in 0..=max_vl {
        let on_vl: Vec<&GroupMft> = mfts.iter().filter(|m| m.vl == vl).collect();
        let layers: Vec<(u8, &[u64])> = unicast
            .layer_edges
            .iter()
            .enumerate()
            .filter(|&(l, b)| unicast.vl_of(l) == vl && b.len() >= words)
            .map(|(l, b)| (u8::try_from(l).unwrap_or(u8::MAX), &b[..words]))
            .collect();
        if on_vl.is_empty() && layers.is_empty() {
            continue;
        }
        let mbits = dependency_bits(g, on_vl.iter().copied());
        vls.push(check_vl(g, vl, on_vl.len() as u32, &mbits, &layers));
    }
    JointCheck {
        deadlock_free: vls.iter().all(|v| v.acyclic),
        vls,
    }
}

/// Per group completeness, depth, tree shape; multicast channel loads over all groups.
pub fn mft_metrics(g: &SwitchGraph, mfts: &[GroupMft]) -> McMetrics {
    let (ns, nc) = (g.num_switches(), g.num_channels());
    let mut table = MaskTable::new(g);
    let mut load = vec![0u32; nc];
    let mut flood = Flood {
        dist: vec![u32::MAX; ns],
        reach_count: vec![0u32; ns],
        reach_max: vec![0u32; ns],
        queue: Vec::new(),
    };
    let mut groups = Vec::with_capacity(mfts.len());
    for m in mfts {
        table.load(m);
        let links = count_tree_links(g, &table, m, &mut load);
        let members: Vec<u32> = m
            .member_switches
            .iter()
            .copied()
            .filter(|&s| (s as usize) < ns)
            .collect();
        let (unreachable, diameter, centre) = flood.measure(g, &table, m, &members);
        let complete = unreachable == 0;
        let tree_switches = m.masks.len() as u32;
        groups.push(GroupMetrics {
            mlid: m.mlid,
            vl: m.vl,
            member_switches: members.len() as u32,
            tree_switches,
            tree_links: links,
            complete,
            unreachable_pairs: unreachable,
            tree: complete && links + 1 == tree_switches.max(1),
            depth: (centre.1 != NO_SWITCH).then_some(centre.0),
            centre: guid_text(g, centre.1),
            diameter,
        });
        table.clear(m);
    }
    let (mut max, mut arg) = (0u32, None);
    let (mut used, mut total) = (0u32, 0u64);
    for (c, &l) in load.iter().enumerate() {
        if l > 0 {
            used += 1;
            total += u64::from(l);
        }
        if l > max {
            max = l;
            arg = Some(c as u32);
        }
    }
    McMetrics {
        complete_groups: groups.iter().filter(|x| x.complete).count() as u32,
        max_depth: groups.iter().filter_map(|x| x.depth).max().unwrap_or(0),
        groups,
        max_channel_load: max,
        max_load_channel: arg.map(|c| McCycleHop {
            switch_guid: guid_text(g, g.chan_tail()[c as usize]),
            port: g.chan_port()[c as usize],
        }),
        channels_used: used,
        average_channel_load: if used == 0 {
            0.0
        } else {
            total as f64 / f64::from(used)
        },
    }
}

/// Counts on `load` the channels that carry group `m` (as `table` holds it); returns its links,
/// each counted once.
fn count_tree_links(g: &SwitchGraph, table: &MaskTable, m: &GroupMft, load: &mut [u32]) -> u32 {
    let ns = g.num_switches();
    let mut links = 0u32;
    for &(s, _) in &m.masks {
        if s as usize >= ns {
            continue;
        }
        for c in g.out_channels(s) {
            if table.carries(g, c) {
                load[c as usize] += 1;
                let r = g.chan_reverse()[c as usize];
                // Count a link once: by its lower channel, or by this one if only it carries.
                if c < r || !table.carries(g, r) {
                    links += 1;
                }
            }
        }
    }
    links
}

/// Scratch of the floods from each member switch along the carrying channels.
struct Flood {
    /// Hops from the current source (`u32::MAX`: not reached; reset after each flood).
    dist: Vec<u32>,
    /// Member switches that reach a switch, and the most hops from any of them.
    reach_count: Vec<u32>,
    reach_max: Vec<u32>,
    queue: Vec<u32>,
}

impl Flood {
    /// Floods from every member switch of `m`: the member pairs that do not reach each other,
    /// the most hops between members, and the centre (least maximum hops, reached by every
    /// member; `(u32::MAX, NO_SWITCH)` if none) as (hops, switch).
    fn measure(
        &mut self,
        g: &SwitchGraph,
        table: &MaskTable,
        m: &GroupMft,
        members: &[u32],
    ) -> (u64, u32, (u32, u32)) {
        let ns = g.num_switches();
        let (dist, reach_count, reach_max, queue) = (
            &mut self.dist,
            &mut self.reach_count,
            &mut self.reach_max,
            &mut self.queue,
        );
        let mut unreachable = 0u64;
        let mut diameter = 0u32;
        for &s in &m.masks {
            reach_count[s.0 as usize] = 0;
            reach_max[s.0 as usize] = 0;
        }
        for &x in members {
            reach_count[x as usize] = 0;
            reach_max[x as usize] = 0;
        }
        for &src in members {
            // Flood from a member switch along carrying channels.
            queue.clear();
            queue.push(src);
            dist[src as usize] = 0;
            let mut i = 0;
            while i < queue.len() {
                let x = queue[i];
                i += 1;
                for c in g.out_channels(x) {
                    let y = g.chan_head()[c as usize];
                    if dist[y as usize] == u32::MAX && table.carries(g, c) {
                        dist[y as usize] = dist[x as usize] + 1;
                        queue.push(y);
                    }
                }
            }
            for &dst in members {
                match dist[dst as usize] {
                    u32::MAX => unreachable += 1,
                    d => diameter = diameter.max(d),
                }
            }
            for &x in queue.iter() {
                reach_count[x as usize] += 1;
                reach_max[x as usize] = reach_max[x as usize].max(dist[x as usize]);
                dist[x as usize] = u32::MAX;
            }
        }
        let mut centre = (u32::MAX, NO_SWITCH);
        for x in m.masks.iter().map(|x| x.0).chain(members.iter().copied()) {
            if (x as usize) < ns
                && !members.is_empty()
                && reach_count[x as usize] == members.len() as u32
            {
                centre = centre.min((reach_max[x as usize], x));
            }
        }
        (unreachable, diameter, centre)
    }
}
