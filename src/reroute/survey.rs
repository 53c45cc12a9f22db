//! Pass 1 of the re-route, the survey: per destination, which switches' paths are kept (every
//! channel they cross survives, and, when cables or switches came back, they are still shortest),
//! and the loads and per-layer dependency edges of the kept paths.

use super::diff::{self, RoutedFabric};
use super::guide::{Guide, GuideScratch};
use crate::dfsssp::cdg::EdgeIndex;
use crate::fabric::Fabric;
use crate::graph::{SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{for_each_column, DestPaths};

/// What the survey (pass 1: which paths are kept) reads.
pub(super) struct Survey<'a> {
    pub(super) prev: RoutedFabric<'a>,
    pub(super) fabric: &'a Fabric,
    pub(super) g: &'a SwitchGraph,
    pub(super) comp: &'a [u32],
    pub(super) new_of_old: &'a [u32],
    pub(super) old_of_new: &'a [u32],
    pub(super) chan_new: &'a [u32],
    pub(super) ei: &'a EdgeIndex,
    /// Words of a layer's edge bits; 0 when the layers need no checking.
    pub(super) words: usize,
    /// After a repair: the switch distances before and after the change. A path is not kept
    /// when the change shortened the way from its switch (a returned cable or switch) and the
    /// path is longer than the new shortest: it goes the short way again. Paths that balancing
    /// made longer than the shortest on purpose, where nothing changed, are kept.
    pub(super) shortest: Option<(&'a SwitchDistances, &'a SwitchDistances)>,
    /// After a repair: paths whose fresh route crosses a returned channel are not kept.
    pub(super) guide: Option<&'a Guide>,
    pub(super) layers: usize,
    pub(super) layered: bool,
    /// Also sum each traversed destination's whole old tree per old channel (`Surveyed::sub`),
    /// to take it off a summary's loads.
    pub(super) subtract: bool,
}

/// What the survey finds for a chunk of destinations.
pub(super) struct Surveyed {
    pub(super) load: Vec<u64>,
    /// Per old channel, the loads of the traversed destinations' old trees (with `subtract`).
    pub(super) sub: Vec<u64>,
    pub(super) bits: Vec<Vec<u64>>,
    pub(super) paths_kept: u64,
    /// New destinations (indices) that are the same as an old one.
    pub(super) seen: Vec<usize>,
    /// Destinations to route again: (new destination index, kept switches' hop counts).
    pub(super) work: Vec<(usize, Vec<u32>)>,
    /// (switch, LID) entries to clear: the switch is in another part of the fabric.
    pub(super) unreachable: Vec<(u32, u16)>,
}

impl Survey<'_> {
    pub(super) fn run(&self, odests: &[crate::graph::Dest]) -> Surveyed {
        let (og, or, g) = (self.prev.graph, self.prev.routing, self.g);
        let (ons, ns) = (og.num_switches(), g.num_switches());
        let mut out = Surveyed {
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
        let mut guided = GuideScratch::new(if self.guide.is_some() { ns } else { 0 });
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
            if let Some(guide) = self.guide {
                guide.mark(g, nd, &mut guided);
            }
            // Root first: kept when delivering and the channel and the rest of the path remain.
            kept_old.fill(false);
            for &o in old_paths.order.iter().rev() {
                if old_paths.end[o as usize].is_err() || new_of_old[o as usize] == NO_SWITCH {
                    continue;
                }
                let c = old_paths.next[o as usize];
                // (A switch whose path runs through one not kept is not kept either: below.)
                let shortest = self.shortest.is_none_or(|(was, now)| {
                    let now = now.get(new_of_old[o as usize], nd.switch);
                    now >= was.get(o, od.switch) || old_paths.hops[o as usize] <= u32::from(now)
                });
                let guided_port = (c != NO_CHANNEL && chan_new[c as usize] != NO_CHANNEL)
                    .then(|| g.chan_port()[chan_new[c as usize] as usize]);
                let guide_keeps = self.guide.is_none_or(|gd| {
                    gd.keeps(new_of_old[o as usize], guided_port, nd.lid, &guided)
                });
                kept_old[o as usize] = shortest
                    && guide_keeps
                    && (c == NO_CHANNEL
                        || chan_new[c as usize] != NO_CHANNEL
                            && kept_old[og.chan_head()[c as usize] as usize]);
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
