//! What moved between two routings of (possibly different) fabrics: the measure of stability.
//!
//! Switches are matched by node GUID and LIDs by number (a LID is the same destination when the
//! same port GUID holds it, on the same switch port). A path (source switch, LID) *stayed* when
//! it crosses the same switches by the same ports in both routings; its SL stayed when its layer
//! is the same. CA pairs are what the SA hands out PathRecords for: every CA/router port attached
//! to the source switch towards every other CA/router LID. LFT blocks are OpenSM's 64-entry
//! units of upload (Vishnu et al.: distributing the tables dominates a re-route): a block is
//! changed when any of its entries differs from the previous table of that switch (every
//! non-empty block of a switch that was not there before).

use serde::Serialize;

use crate::fabric::Fabric;
use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{Columns, DestPaths, Routing, NO_PATH};

/// One routing with the fabric and switch graph it was computed for.
#[derive(Clone, Copy)]
pub struct RoutedFabric<'a> {
    pub fabric: &'a Fabric,
    pub graph: &'a SwitchGraph,
    pub routing: &'a Routing,
}

/// How much changed from one routing to the next.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RoutingDiff {
    /// (switch, LID) paths present in both (switch and destination in both fabrics, routed in the
    /// old one).
    pub paths: u64,
    /// Of those, paths that now cross other switches or ports (or no longer deliver).
    pub paths_moved: u64,
    /// Of those, paths whose layer (SL) changed.
    pub paths_sl_changed: u64,
    /// CA pairs (source CA port, destination CA LID) present in both and routed before.
    pub ca_pairs: u64,
    /// CA pairs whose path moved.
    pub ca_pairs_moved: u64,
    /// CA pairs whose SL changed although their path stayed the same (a stable routing has none).
    pub ca_pairs_sl_changed_path_kept: u64,
    /// CA pairs whose SL changed and whose path moved.
    pub ca_pairs_sl_changed_path_moved: u64,
    /// 64-entry LFT blocks of the new tables (up to the highest LID, every switch).
    pub lft_blocks: u64,
    /// Blocks that differ from the old tables of the same switch (all non-empty blocks of new
    /// switches).
    pub lft_blocks_changed: u64,
}

impl RoutingDiff {
    /// All CA pairs whose SL changed.
    pub fn ca_pairs_sl_changed(&self) -> u64 {
        self.ca_pairs_sl_changed_path_kept + self.ca_pairs_sl_changed_path_moved
    }

    /// One line for logs.
    pub fn summary(&self) -> String {
        format!(
            "{} of {} CA pairs re-routed, {} SLs changed ({} of them on unchanged paths), {} of {} \
             LFT blocks changed; {} of {} (switch, LID) paths moved",
            self.ca_pairs_moved,
            self.ca_pairs,
            self.ca_pairs_sl_changed(),
            self.ca_pairs_sl_changed_path_kept,
            self.lft_blocks_changed,
            self.lft_blocks,
            self.paths_moved,
            self.paths
        )
    }
}

/// LIDs per LFT block (one MAD).
pub const LFT_BLOCK: usize = 64;

/// `new_of_old[s_old]`: the switch with the same node GUID in `new`, or [`NO_SWITCH`].
pub fn match_switches(old: &SwitchGraph, new: &SwitchGraph) -> Vec<u32> {
    let by_guid: std::collections::HashMap<u64, u32> = (0..new.num_switches() as u32)
        .map(|s| (new.switch_guid(s), s))
        .collect();
    (0..old.num_switches() as u32)
        .map(|s| {
            by_guid
                .get(&old.switch_guid(s))
                .copied()
                .unwrap_or(NO_SWITCH)
        })
        .collect()
}

/// The destination of `new` that is the same as `od` of `old`: same LID, held by the same port
/// GUID, attached to the same switch (by GUID) by the same port.
pub fn same_dest<'n>(
    (old_fabric, old_graph): (&Fabric, &SwitchGraph),
    (new_fabric, new_graph): (&Fabric, &'n SwitchGraph),
    od: &Dest,
) -> Option<&'n Dest> {
    let nd = new_graph.dest_of_lid(od.lid)?;
    let same = od.switch != NO_SWITCH
        && nd.switch != NO_SWITCH
        && old_fabric.endpoints()[od.endpoint as usize].port_guid
            == new_fabric.endpoints()[nd.endpoint as usize].port_guid
        && old_graph.switch_guid(od.switch) == new_graph.switch_guid(nd.switch)
        && od.exit_port == nd.exit_port
        && od.lid_offset == nd.lid_offset;
    same.then_some(nd)
}

/// Compares two routings (see the module documentation).
pub fn diff(old: RoutedFabric<'_>, new: RoutedFabric<'_>) -> RoutingDiff {
    let (og, ng) = (old.graph, new.graph);
    let new_of_old = match_switches(og, ng);
    let mut old_of_new = vec![NO_SWITCH; ng.num_switches()];
    for (o, &n) in new_of_old.iter().enumerate() {
        if n != NO_SWITCH {
            old_of_new[n as usize] = o as u32;
        }
    }
    let mut out = RoutingDiff::default();
    lft_blocks(old.routing, new.routing, &old_of_new, &mut out);

    // Per destination present in both: which new switches' paths equal their old ones.
    let (ons, nns) = (og.num_switches(), ng.num_switches());
    let mut old_paths = DestPaths::new(ons);
    let mut new_paths = DestPaths::new(nns);
    let mut same = vec![false; nns];
    let mut ocols = Columns::new(ons);
    let mut ncols = Columns::new(nns);
    let mut lay_o = Columns::new(ons);
    let mut lay_n = Columns::new(nns);
    let end = usize::from(old.routing.lft.max_lid.min(new.routing.lft.max_lid)) + 1;
    let dests = og.dests();
    let mut i = 0;
    while i < dests.len() && usize::from(dests[i].lid) < end {
        let lo = usize::from(dests[i].lid);
        let hi = (lo + Columns::WIDTH).min(end);
        let j = i + dests[i..].partition_point(|d| usize::from(d.lid) < hi);
        ocols.fill(lo, hi - lo, |s| old.routing.lft.table(s));
        ncols.fill(lo, hi - lo, |s| new.routing.lft.table(s));
        if let Some(l) = &old.routing.layers {
            lay_o.fill(lo, hi - lo, |s| l.row(s));
        }
        if let Some(l) = &new.routing.layers {
            lay_n.fill(lo, hi - lo, |s| l.row(s));
        }
        for od in &dests[i..j] {
            let Some(nd) = same_dest((old.fabric, og), (new.fabric, ng), od) else {
                continue;
            };
            let (oc, nc) = (ocols.column(od.lid), ncols.column(od.lid));
            old_paths.resolve_column(og, od, Some(oc));
            new_paths.resolve_column(ng, nd, Some(nc));
            new_paths.compute_order();
            // Root first (increasing hops): a path is the same when its first hop is the same
            // port of the same switch, to the same next switch, whose path is the same.
            same.fill(false);
            for &s in new_paths.order.iter().rev() {
                let o = old_of_new[s as usize];
                if o == NO_SWITCH || new_paths.end[s as usize].is_err() {
                    continue;
                }
                if old_paths.end[o as usize].is_err() || oc[o as usize] != nc[s as usize] {
                    continue;
                }
                let c = new_paths.next[s as usize];
                same[s as usize] = c == NO_CHANNEL
                    || same[ng.chan_head()[c as usize] as usize]
                        && new_of_old[og.chan_head()[old_paths.next[o as usize] as usize] as usize]
                            == ng.chan_head()[c as usize];
            }
            let ca_dest = nd.exit_port != 0;
            for o in 0..ons as u32 {
                let s = new_of_old[o as usize];
                if s == NO_SWITCH || old_paths.end[o as usize].is_err() {
                    continue;
                }
                let moved = !same[s as usize];
                let layer = |cols: &Columns, present: bool, sw: u32| {
                    if present {
                        cols.column(od.lid)[sw as usize]
                    } else {
                        0
                    }
                };
                let sl_changed = layer(&lay_o, old.routing.layers.is_some(), o)
                    != layer(&lay_n, new.routing.layers.is_some(), s);
                out.paths += 1;
                out.paths_moved += u64::from(moved);
                out.paths_sl_changed += u64::from(sl_changed);
                if ca_dest {
                    // Every CA port on the switch but the destination's own.
                    let sources = u64::from(ng.terminal_count()[s as usize])
                        .min(u64::from(og.terminal_count()[o as usize]))
                        .saturating_sub(u64::from(s == nd.switch));
                    out.ca_pairs += sources;
                    if moved {
                        out.ca_pairs_moved += sources;
                    }
                    if sl_changed {
                        if moved {
                            out.ca_pairs_sl_changed_path_moved += sources;
                        } else {
                            out.ca_pairs_sl_changed_path_kept += sources;
                        }
                    }
                }
            }
        }
        i = j;
    }
    out
}

/// Counts the new tables' blocks and those that differ from the old tables of the same switch.
fn lft_blocks(old: &Routing, new: &Routing, old_of_new: &[u32], out: &mut RoutingDiff) {
    let width = new.lft.stride();
    for (s, &o) in old_of_new.iter().enumerate() {
        let row = new.lft.table(s as u32);
        let old_row = (o != NO_SWITCH).then(|| old.lft.table(o));
        for b in (0..width).step_by(LFT_BLOCK) {
            let hi = (b + LFT_BLOCK).min(width);
            out.lft_blocks += 1;
            let changed = match old_row {
                Some(or) => (b..hi).any(|l| or.get(l).copied().unwrap_or(NO_PATH) != row[l]),
                None => row[b..hi].iter().any(|&p| p != NO_PATH),
            };
            out.lft_blocks_changed += u64::from(changed);
        }
    }
}
