//! Pass 1 of the re-route, the survey: per destination, which switches' paths are kept (every
//! channel they cross survives, and, when cables or switches came back, they are still shortest),
//! and the loads and per-layer dependency edges of the kept paths.
//!
//! **Cost.** `O(S)` per destination traversed: its old tree resolved from its LFT column (read 64
//! LIDs at a time), then a few passes over the switches (the guide's tree after a repair; kept or
//! not, root first; loads and edges, leaves first; what to route again). The edge bits are one per
//! layer of the kept paths through a switch, so `O(S·L)` at most. Destinations run in parallel
//! chunks, each with `O(S)` scratch, channel loads (`8·C` bytes) and a bit per layer and possible
//! dependency edge (`E ≤ C·radix` of them: `L·E/8` bytes). A destination with paths to route again
//! leaves the kept switches' path lengths for pass 2, `4·S` bytes.

use super::diff::{self, RoutedFabric};
use super::guide::{Guide, GuideScratch};
use crate::dfsssp::cdg::EdgeIndex;
use crate::fabric::Fabric;
use crate::graph::{Dest, SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
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
    /// A re-balance in place: paths over these (overloaded) channels of the new graph are not
    /// kept.
    pub(super) shed: Option<&'a [bool]>,
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
        let mut sc = SurveyScratch {
            kept_old: vec![false; ons],
            kept: vec![false; ns],
            mask: vec![0u64; ons],
            flow: vec![0u64; ons],
            old_paths: DestPaths::new(ons),
            guided: GuideScratch::new(if self.guide.is_some() { ns } else { 0 }),
        };
        let layers = or.layers.as_ref().filter(|_| self.layered);
        for_each_column(og, &or.lft, layers, odests, |od, col, lay| {
            let Some(col) = col else { return };
            let Some(nd) = diff::same_dest((self.prev.fabric, og), (self.fabric, g), od) else {
                return;
            };
            let di = g.lid_dest()[usize::from(nd.lid)] as usize;
            out.seen.push(di);
            sc.old_paths.resolve_column(og, od, Some(col));
            sc.old_paths.compute_order();
            if let Some(guide) = self.guide {
                guide.mark(g, nd, &mut sc.guided);
            }
            self.mark_kept(od, nd, &mut sc);
            self.count_kept(lay, &mut sc, &mut out);
            if self.subtract {
                // The whole old tree, as the summary counted it (same terminals: links only).
                crate::balance::add_dest_loads(og, &sc.old_paths, &mut sc.flow, &mut out.sub);
            }
            self.split_rest(nd, di, &mut sc, &mut out);
        });
        out
    }

    /// Root first: an old path is kept when it delivers and its channel and the rest of its
    /// path remain (and it is still short enough, and the guide keeps it).
    fn mark_kept(&self, od: &Dest, nd: &Dest, sc: &mut SurveyScratch) {
        let (og, g) = (self.prev.graph, self.g);
        let (new_of_old, chan_new) = (self.new_of_old, self.chan_new);
        sc.kept_old.fill(false);
        for &o in sc.old_paths.order.iter().rev() {
            if sc.old_paths.end[o as usize].is_err() || new_of_old[o as usize] == NO_SWITCH {
                continue;
            }
            let c = sc.old_paths.next[o as usize];
            // (A switch whose path runs through one not kept is not kept either: below.)
            let shortest = self.shortest.is_none_or(|(was, now)| {
                let now = now.get(new_of_old[o as usize], nd.switch);
                now >= was.get(o, od.switch) || sc.old_paths.hops[o as usize] <= u32::from(now)
            });
            let guided_port = (c != NO_CHANNEL && chan_new[c as usize] != NO_CHANNEL)
                .then(|| g.chan_port()[chan_new[c as usize] as usize]);
            let guide_keeps = self
                .guide
                .is_none_or(|gd| gd.keeps(new_of_old[o as usize], guided_port, nd.lid, &sc.guided));
            sc.kept_old[o as usize] = shortest
                && guide_keeps
                && (c == NO_CHANNEL
                    || chan_new[c as usize] != NO_CHANNEL
                        && sc.kept_old[og.chan_head()[c as usize] as usize]
                        && self
                            .shed
                            .is_none_or(|hot| !hot[chan_new[c as usize] as usize]));
        }
    }

    /// Loads of the kept routes and, per layer (`lay`: the old layers' column), their
    /// dependency edges: leaves first, each kept switch passes on its sources and the layers of
    /// the paths through it.
    fn count_kept(&self, lay: Option<&[u8]>, sc: &mut SurveyScratch, out: &mut Surveyed) {
        let (og, g) = (self.prev.graph, self.g);
        let (new_of_old, chan_new) = (self.new_of_old, self.chan_new);
        // Loads of the kept routes and, per layer, their dependency edges: leaves first,
        // each kept switch passes on its sources and the layers of the paths through it.
        for &o in &sc.old_paths.order {
            let (o, s) = (o as usize, new_of_old[o as usize]);
            if !sc.kept_old[o] {
                continue;
            }
            sc.flow[o] += u64::from(g.terminal_count()[s as usize]);
            sc.mask[o] |= 1u64 << lay.map_or(0, |l| l[o]);
            let c = sc.old_paths.next[o];
            if c != NO_CHANNEL {
                let h = og.chan_head()[c as usize] as usize;
                let cn = chan_new[c as usize];
                out.load[cn as usize] += sc.flow[o];
                sc.flow[h] += sc.flow[o];
                sc.mask[h] |= sc.mask[o];
                let c2 = sc.old_paths.next[h];
                if c2 != NO_CHANNEL && !out.bits.is_empty() {
                    let e = self.ei.edge(g, cn, chan_new[c2 as usize]) as usize;
                    let mut m = sc.mask[o];
                    while m != 0 {
                        out.bits[m.trailing_zeros() as usize][e / 64] |= 1 << (e % 64);
                        m &= m - 1;
                    }
                }
            }
        }
        for &o in &sc.old_paths.order {
            sc.flow[o as usize] = 0;
            sc.mask[o as usize] = 0;
        }
    }

    /// The new destination's switches by what becomes of their paths: kept, routed again
    /// (`out.work`, with the kept paths' hops) or cleared (in another part of the fabric).
    fn split_rest(&self, nd: &Dest, di: usize, sc: &mut SurveyScratch, out: &mut Surveyed) {
        let ns = self.g.num_switches();
        let new_of_old = self.new_of_old;
        // Switches of the destination's part of the fabric whose path is not kept.
        let root_comp = self.comp[nd.switch as usize];
        let mut to_route = false;
        sc.kept.fill(false);
        for (o, &k) in sc.kept_old.iter().enumerate() {
            if k {
                sc.kept[new_of_old[o] as usize] = true;
            }
        }
        for (s, &k) in sc.kept.iter().enumerate() {
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
                    if sc.kept[s] {
                        sc.old_paths.hops[self.old_of_new[s] as usize]
                    } else {
                        u32::MAX
                    }
                })
                .collect();
            out.work.push((di, dist));
        }
    }
}

/// Per-destination scratch of the survey, allocated once per chunk.
struct SurveyScratch {
    /// Old switches whose path is kept.
    kept_old: Vec<bool>,
    /// The same, by new switch.
    kept: Vec<bool>,
    /// Per old switch: the layers of the kept paths through it, as bits.
    mask: Vec<u64>,
    /// Per old switch: the sources whose kept paths pass it, not yet counted further.
    flow: Vec<u64>,
    old_paths: DestPaths,
    guided: GuideScratch,
}
