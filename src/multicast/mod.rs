//! Multicast: balanced spanning trees per group, their MFT port masks, and a deadlock check of
//! multicast together with the unicast layers. Pure Rust; the OpenSM adapter and the
//! offline fronts translate groups and masks.
//!
//! **Model.** A group ([`McGroup`]) is an MLID, the VL its packets travel on (its SL through the
//! SL-to-VL table; 0 when QoS is off) and its member ports ([`McMember`]): a CA or router port by
//! the switch and switch port it hangs on, or a switch itself by port 0, each full or send-only.
//!
//! **MFT semantics** (OpenSM's, `osm_mcast_mgr.c`): a switch forwards a packet of an MLID out of
//! every port of the MLID's port mask except the one it came in by. A tree switch's mask holds the
//! port to its tree parent, the ports to its tree children and the ports of its member CAs (port 0
//! when the switch itself is a member). OpenSM's full rebuild (`mcast_mgr_branch`) puts send-only
//! members into the tree like full members, their ports included; [`McConfig::send_only_receive`]
//! keeps that (default) or leaves their ports out (their switch stays in the tree, so they can
//! still send: a packet from them enters by a port outside the mask and floods the tree).
//!
//! **Root** ([`tree`]): like `osm_mcast_mgr_find_root_switch`, the switch minimising the maximum
//! hop distance to the member switches (OpenSM adds one hop to switches with only CA members, the
//! same for every candidate, so it does not change the choice). Among equally good switches (the
//! spines of a fat tree, the centres of a torus; at most 16 tried) the one whose tree meets the
//! least multicast load so far: the fewest groups on its busiest link, then on all its links,
//! then the lowest switch id (= lowest node GUID). Rotating roots this way spreads the trees;
//! the load of a root's own channels alone does not (on a fat tree every spine reaches every
//! leaf by its own link, so what counts is the load on the links to *these* members).
//!
//! **Tree**: every member switch joins the root along a path of minimal hops (the depth of the tree
//! is the root's eccentricity over the members). Parents are chosen bottom-up, farthest switches
//! first: among the neighbours one hop closer to the root, one already in the tree (sharing a
//! branch adds no link), then the link with the fewest groups so far, then the least unicast
//! load on it (both directions: a tree link carries the group's traffic both ways), then the
//! lowest channel id. Groups are built in MLID order; same input, same trees.
//!
//! **Deadlock freedom** ([`analysis`]): a packet can enter a tree at any member and reaches all
//! others, so at a tree switch `s` every pair of distinct tree links `u - s`, `s - w` gives the
//! dependency `(u->s, s->w)`. One tree alone is acyclic: a CDG cycle would be a closed walk over
//! tree links that never turns back, which a tree (no cycles) does not have. Several trees on one
//! VL, and the unicast layers on it, can close cycles together; [`route_groups`] checks the union
//! per VL and, where it is cyclic, rebuilds that VL's trees along one Up*/Down* orientation:
//!
//! *Up*/Down* trees.* Orient the switch graph by [`UpDown`] (rank: BFS level from a root, then
//! id; a channel is up when it leads to a lower rank). A group's root is a switch every member
//! switch reaches by up channels only (the orientation's root always qualifies), and each tree
//! switch's parent is reached by an up channel. Then every tree switch has exactly one neighbour
//! above it (its parent) and its children below. A dependency `(u->s, s->w)` with `u != w` is
//! either child-parent-… (`u->s` up) or parent-child/child-child (`s->w` down): it is never a
//! down channel followed by an up channel, i.e. always a legal Up*/Down* turn. Legal turns only go
//! forward in [`UpDown::legal_order`] (up channels by decreasing tail rank, then down channels by
//! increasing tail rank), which is thus a topological order of all Up*/Down* trees together:
//! acyclic, for any number of groups. If the unicast dependencies of the VL are legal turns of the
//! same orientation too (e.g. Up*/Down* unicast routes), the union is acyclic by the same order.
//! Otherwise the union is checked; where it is still cyclic the report names the unicast
//! layer(s) that close the cycle with multicast, for the caller to move those paths to another
//! layer or to reserve a lane for multicast.

//!
//! **Use** (the plug-in's `mcast_build_stree`, or any front):
//!
//! ```ignore
//! let members = ports.map(|(lid, join)| McMember::for_lid(&out.graph, lid, join)); // JoinState
//! let groups = vec![McGroup { mlid, vl: sl2vl[group_sl], members }, ...];
//! let unicast = UnicastLayers {
//!     loads: &out.summary.loads,              // EngineOutput of the unicast routing
//!     layer_edges: &out.summary.layer_edges,  // the verification's per-layer CDG edges
//!     layer_vl: &[],                          // layer i on VL i (dfsssp-rs with QoS)
//! };
//! let mc = route_groups(&out.graph, &groups, &unicast, &McConfig::default())?;
//! for m in &mc.mfts { for (switch, mask) in &m.masks { /* set mask.ports() for m.mlid */ } }
//! mc.log;                                   // what was done, per VL
//! mc.report.check.deadlock_free;            // the joint check, from the masks alone
//! ```
//!
//! [`joint_check`] and [`mft_metrics`] judge MFTs from anywhere (OpenSM's dump, another
//! engine's trees) the same way.
//!
//! **Cost** (`M_g` member switches of group g, V VLs in use, E ≤ C·radix possible dependency
//! edges; [`tree`] and [`analysis`] give the parts). A round builds the trees,
//! `O(Σ_g (M_g + 17)·(S + C))`, and judges the masks: metrics `O(Σ_g M_g·(C + M_g))`, the joint
//! check `O((V + L)·(C + E) + V·S)` plus the groups' dependencies. [`TreeMode::Auto`] adds at most
//! one round per VL with groups; a round with VLs along Up*/Down* fits the orientation unless given
//! (2·S² bytes of switch distances; per component up to 24 roots tried, each `O(S log S + C)` plus
//! a pass over those VLs' unicast dependencies). A VL left cyclic costs one `O(C + E)` cycle
//! search per candidate VL (those in use and one free) for the suggestion.

pub mod analysis;
pub mod tree;

#[cfg(test)]
mod tests;

use serde::Serialize;
use thiserror::Error;

use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::updown::UpDown;

pub use analysis::{
    analyze, dependency_bits, find_cycle, joint_check, mft_metrics, GroupMetrics, JointCheck,
    McCycleHop, McMetrics, McReport, VlCheck,
};
pub use tree::{build_trees, McTree};

/// A port that belongs to a multicast group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct McMember {
    /// Dense switch id of the switch the port hangs on (the switch itself for port 0).
    pub switch: u32,
    /// The switch's port the member CA/router port is cabled to; 0 when the switch is the member.
    pub port: u8,
    /// Send-only member (SA join state SendOnlyNonMember): sends to the group, need not receive.
    pub send_only: bool,
}

impl McMember {
    /// The member that holds `lid` (a CA/router port's LID, or a switch's): where it hangs in the
    /// switch graph, joined as `join` says. `None` for a LID nobody holds or a port not attached
    /// to a switch.
    pub fn for_lid(g: &SwitchGraph, lid: u16, join: JoinState) -> Option<McMember> {
        let d = g.dest_of_lid(lid)?;
        (d.switch != NO_SWITCH).then_some(McMember {
            switch: d.switch,
            port: d.exit_port,
            send_only: join == JoinState::SendOnly,
        })
    }
}

/// How a port joined a multicast group (its SA join state, as far as routing tells them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinState {
    /// A full member: sends to the group and receives from it.
    Full,
    /// SendOnlyNonMember: sends to the group, need not receive.
    SendOnly,
}

/// A multicast group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McGroup {
    /// Multicast LID (0xC000..=0xFFFE).
    pub mlid: u16,
    /// The VL the group's packets use: its SL mapped by the SL-to-VL table (0 when QoS is off).
    pub vl: u8,
    pub members: Vec<McMember>,
}

/// A set of switch ports, 0..=255: one MFT entry (an MLID's column at one switch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PortMask([u64; 4]);

impl PortMask {
    pub const EMPTY: PortMask = PortMask([0; 4]);

    #[inline]
    pub fn set(&mut self, port: u8) {
        self.0[usize::from(port >> 6)] |= 1u64 << (port & 63);
    }

    #[inline]
    pub fn contains(&self, port: u8) -> bool {
        self.0[usize::from(port >> 6)] >> (port & 63) & 1 != 0
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The ports, ascending.
    pub fn ports(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(move |&p| self.contains(p))
    }
}

impl Serialize for PortMask {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.ports())
    }
}

/// One group's multicast forwarding tables: the port mask of every switch with a non-empty
/// entry for the MLID. What is uploaded, dumped (`opensm.mcfdbs`) and analysed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GroupMft {
    pub mlid: u16,
    pub vl: u8,
    /// (switch, mask), by switch id; no empty masks.
    pub masks: Vec<(u32, PortMask)>,
    /// Switches with a member (a CA/router port or the switch itself), ascending. From a dump,
    /// the switches whose mask holds port 0 or a port not leading to another switch.
    pub member_switches: Vec<u32>,
}

impl GroupMft {
    /// From masks alone (a dump): member switches are those whose mask has port 0 or a port
    /// without a switch-to-switch link.
    pub fn from_masks(g: &SwitchGraph, mlid: u16, vl: u8, mut masks: Vec<(u32, PortMask)>) -> Self {
        masks.retain(|(s, m)| !m.is_empty() && (*s as usize) < g.num_switches());
        masks.sort_unstable_by_key(|&(s, _)| s);
        masks.dedup_by_key(|&mut (s, _)| s);
        let member_switches = masks
            .iter()
            .filter(|(s, m)| m.ports().any(|p| p == 0 || g.channel_at(*s, p).is_none()))
            .map(|&(s, _)| s)
            .collect();
        GroupMft {
            mlid,
            vl,
            masks,
            member_switches,
        }
    }
}

/// How trees are oriented.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum TreeMode {
    /// Minimal-hop trees; a VL whose union with unicast turns out cyclic is rebuilt along
    /// Up*/Down* (see the module doc).
    #[default]
    Auto,
    /// Minimal-hop trees only (no rebuild; the check still reports).
    Minimal,
    /// Every tree along the Up*/Down* orientation: multicast alone is acyclic by construction.
    UpDown,
}

/// Options of [`route_groups`].
#[derive(Clone, Debug)]
pub struct McConfig {
    pub mode: TreeMode,
    /// Send-only members' ports in the mask, as OpenSM's default tree builder does.
    pub send_only_receive: bool,
    /// Balance by loads; `false` takes the lowest channel among minimal parents and the lowest
    /// id among equally good roots, ignoring loads (close to OpenSM's default, for comparison).
    pub balance: bool,
    /// The Up*/Down* orientation for [`TreeMode::UpDown`] and rebuilds; `None`: the
    /// orientation (among [`UpDown::fitted`]'s candidates) with the fewest unicast dependencies
    /// of the rebuilt VLs on illegal turns.
    pub orientation: Option<UpDown>,
    /// Data VLs the hardware offers (IB: at most 15): VLs suggested for groups stay below.
    pub max_vls: u8,
}

impl Default for McConfig {
    fn default() -> Self {
        McConfig {
            mode: TreeMode::Auto,
            send_only_receive: true,
            balance: true,
            orientation: None,
            max_vls: 15,
        }
    }
}

/// The unicast routing multicast shares the fabric with.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnicastLayers<'a> {
    /// Routes per channel ([`crate::balance::channel_loads`]); empty: no unicast load.
    pub loads: &'a [u64],
    /// Per layer, its CDG edges as bits in the [`crate::dfsssp::cdg::EdgeIndex`] layout
    /// ([`crate::verify::VerifyReport::layer_edges`]); empty: no unicast dependencies.
    pub layer_edges: &'a [Vec<u64>],
    /// VL of every layer; a layer beyond this list travels on the VL of its own number.
    pub layer_vl: &'a [u8],
}

impl UnicastLayers<'_> {
    /// The VL of unicast layer `layer`.
    pub fn vl_of(&self, layer: usize) -> u8 {
        self.layer_vl
            .get(layer)
            .copied()
            .unwrap_or(u8::try_from(layer).unwrap_or(u8::MAX))
    }
}

/// A group the trees cannot be built for.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum McError {
    #[error("MLID 0x{mlid:04X}: member switch #{switch} does not exist")]
    NoSuchSwitch { mlid: u16, switch: u32 },
    #[error("MLID 0x{mlid:04X}: {switch} has no port {port}")]
    NoSuchPort { mlid: u16, switch: String, port: u8 },
    #[error("MLID 0x{mlid:04X}: {switch} port {port} leads to another switch, not to a member")]
    SwitchPort { mlid: u16, switch: String, port: u8 },
    #[error("MLID 0x{mlid:04X} appears twice")]
    DuplicateMlid { mlid: u16 },
}

/// Everything [`route_groups`] computed.
#[derive(Clone, Debug)]
pub struct McRouting {
    /// One tree per group, in MLID order.
    pub trees: Vec<McTree>,
    /// The trees' forwarding tables, in MLID order (what the adapter writes).
    pub mfts: Vec<GroupMft>,
    /// Metrics and the joint check, computed from `mfts` alone.
    pub report: McReport,
    /// Per VL: trees built along Up*/Down* (VLs beyond the list: minimal-hop).
    pub updown_vls: Vec<bool>,
    /// The orientation used, when some VL needed one.
    pub orientation: Option<UpDown>,
    /// What was done, one line each (for logs).
    pub log: Vec<String>,
}

/// Builds every group's tree, balanced, and makes them deadlock-free together with the unicast
/// layers where the construction can (module doc): minimal-hop trees first, then, per VL whose
/// union is cyclic, a rebuild along Up*/Down* ([`TreeMode::Auto`]); loads accumulate in MLID order.
/// The report says per VL what was done and which unicast layers still conflict.
pub fn route_groups(
    g: &SwitchGraph,
    groups: &[McGroup],
    unicast: &UnicastLayers,
    cfg: &McConfig,
) -> Result<McRouting, McError> {
    let mut sorted: Vec<&McGroup> = groups.iter().collect();
    sorted.sort_by_key(|gr| gr.mlid);
    for w in sorted.windows(2) {
        if w[0].mlid == w[1].mlid {
            return Err(McError::DuplicateMlid { mlid: w[0].mlid });
        }
    }
    for gr in &sorted {
        tree::validate(g, gr)?;
    }
    let max_vl = sorted
        .iter()
        .map(|gr| usize::from(gr.vl))
        .max()
        .unwrap_or(0);
    let mut updown_vls = vec![cfg.mode == TreeMode::UpDown; max_vl + 1];
    let mut orientation = cfg.orientation.clone();
    let mut log = Vec::new();
    loop {
        if orientation.is_none() && updown_vls.iter().any(|&u| u) {
            orientation = Some(fitted_orientation(g, unicast, &updown_vls));
        }
        let trees = build_trees(
            g,
            &sorted,
            unicast.loads,
            cfg,
            &updown_vls,
            orientation.as_ref(),
        );
        let mfts: Vec<GroupMft> = trees.iter().map(|t| t.mft.clone()).collect();
        let mut report = analyze(g, &mfts, unicast);
        let mut changed = false;
        if cfg.mode == TreeMode::Auto {
            for v in &report.check.vls {
                let vl = usize::from(v.vl);
                if !v.acyclic && v.groups > 0 && vl < updown_vls.len() && !updown_vls[vl] {
                    log.push(format!(
                        "multicast: VL {}: minimal-hop trees close a credit loop with unicast ({}); \
                         rebuilding the VL's trees along Up*/Down*",
                        v.vl,
                        v.cycle_text.as_deref().unwrap_or("cycle")
                    ));
                    updown_vls[vl] = true;
                    changed = true;
                }
            }
        }
        if changed {
            // Fit the orientation to the unicast layers of every VL now rebuilt (unless given).
            orientation = cfg.orientation.clone();
            continue;
        }
        suggest_vls(g, &mfts, unicast, cfg.max_vls, &mut report.check);
        for v in &mut report.check.vls {
            let ud = updown_vls.get(usize::from(v.vl)).copied().unwrap_or(false);
            v.trees = if ud { "up*/down*" } else { "minimal" };
            v.action = action_text(v, ud);
            if v.groups > 0 || !v.acyclic {
                log.push(format!("multicast: VL {}: {}", v.vl, v.action));
            }
        }
        if let (Some(o), true) = (&orientation, updown_vls.iter().any(|&u| u)) {
            let roots: Vec<String> = o
                .roots
                .iter()
                .map(|&r| format!("0x{:016x}", g.switch_guid(r)))
                .collect();
            log.push(format!(
                "multicast: Up*/Down* orientation rooted at {}",
                roots.join(", ")
            ));
        }
        log.push(format!("multicast: {}", report.metrics.summary()));
        return Ok(McRouting {
            trees,
            mfts,
            report,
            orientation: updown_vls
                .iter()
                .any(|&u| u)
                .then_some(orientation)
                .flatten(),
            updown_vls,
            log,
        });
    }
}

fn action_text(v: &VlCheck, updown: bool) -> String {
    let how = if updown {
        "trees along Up*/Down*"
    } else {
        "minimal-hop trees"
    };
    if v.groups == 0 {
        return "no groups".into();
    }
    if v.acyclic {
        return format!(
            "{} group(s), {how}: acyclic together with unicast layer(s) {:?}",
            v.groups, v.unicast_layers
        );
    }
    if !v.multicast_alone_acyclic {
        return format!(
            "{} group(s), {how}: the trees close a cycle among themselves (build them along \
             Up*/Down*)",
            v.groups
        );
    }
    if !v.unicast_alone_acyclic {
        return format!(
            "{} group(s), {how}: the unicast layer(s) {:?} of this VL are cyclic by themselves",
            v.groups, v.unicast_layers
        );
    }
    let fits = if v.fits_on_vls.is_empty() {
        String::new()
    } else {
        format!(
            "; the groups would be deadlock-free on VL(s) {:?} (map their SL there)",
            v.fits_on_vls
        )
    };
    format!(
        "{} group(s), {how}: still cyclic with unicast layer(s) {:?}: move their conflicting \
         paths to another layer or reserve a lane for multicast{fits}",
        v.groups, v.conflicting_layers
    )
}

/// For every VL whose groups close a cycle: the VLs (with unicast layers or groups, and the
/// first VL with neither, a lane free for multicast) on which those groups would be acyclic
/// together with what is there already.
fn suggest_vls(
    g: &SwitchGraph,
    mfts: &[GroupMft],
    unicast: &UnicastLayers,
    max_vls: u8,
    check: &mut JointCheck,
) {
    let words = crate::verify::DependencySlots::new(g).len().div_ceil(64) as usize;
    let used: Vec<u8> = check.vls.iter().map(|v| v.vl).collect();
    let free = (0..max_vls).find(|vl| !used.contains(vl));
    let candidates: Vec<u8> = used
        .iter()
        .copied()
        .filter(|&vl| vl < max_vls)
        .chain(free)
        .collect();
    for i in 0..check.vls.len() {
        let (vl, stuck) = (
            check.vls[i].vl,
            check.vls[i].groups > 0 && !check.vls[i].acyclic,
        );
        if !stuck {
            continue;
        }
        let mine = dependency_bits(g, mfts.iter().filter(|m| m.vl == vl));
        let mut fits = Vec::new();
        for &w in candidates.iter().filter(|&&w| w != vl) {
            let mut bits = dependency_bits(g, mfts.iter().filter(|m| m.vl == w));
            for (l, b) in unicast.layer_edges.iter().enumerate() {
                if unicast.vl_of(l) == w && b.len() >= words {
                    bits.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                }
            }
            bits.iter_mut().zip(&mine).for_each(|(x, y)| *x |= y);
            if find_cycle(g, &bits).is_none() {
                fits.push(w);
            }
        }
        check.vls[i].fits_on_vls = fits;
    }
}

/// The orientation with the fewest unicast dependencies (of the VLs to be rebuilt) on illegal
/// turns: zero means the rebuilt VLs are acyclic by construction.
fn fitted_orientation(g: &SwitchGraph, unicast: &UnicastLayers, updown_vls: &[bool]) -> UpDown {
    let dist = crate::graph::SwitchDistances::new(g);
    let slots = crate::verify::DependencySlots::new(g);
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for (layer, bits) in unicast.layer_edges.iter().enumerate() {
        let vl = usize::from(unicast.vl_of(layer));
        if updown_vls.get(vl).copied().unwrap_or(false) && bits.len() as u64 * 64 >= slots.len() {
            slots.for_each_edge(g, bits, |a, b| edges.push((a, b)));
        }
    }
    if edges.is_empty() {
        return UpDown::new(g, &dist);
    }
    UpDown::fitted(g, &dist, |ud| {
        edges
            .iter()
            .filter(|&&(a, b)| !ud.legal_turn(g, a, b))
            .count() as u64
    })
}

/// The switch id of a tree's root, as "0x<GUID>", or "-" for an empty group.
pub(crate) fn guid_text(g: &SwitchGraph, s: u32) -> String {
    if s == NO_SWITCH || s as usize >= g.num_switches() {
        "-".into()
    } else {
        format!("0x{:016x}", g.switch_guid(s))
    }
}
