//! Pass 2 of the re-route: new next hops for the paths the survey did not keep, nearest
//! switches first, each in a layer the layering accepts.
//!
//! **Cost.** Per destination, `O(S)` to start its search and clear what it cannot reach; per switch
//! routed again (only those), a heap entry per channel at it (a Dijkstra with unit weights,
//! `O(radix·log C)`), its candidates sorted (`O(radix·log radix)`), the kept path it joins, if any,
//! walked once for the loads (`O(hops)`), and its layer ([`Layering::place`]). The kept switches
//! cost only the `O(S)` scans. Scratch: `O(S)`, allocated once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::guide::Guide;
use super::layering::{Candidate, Layering, PathToPlace};
use super::{FullReason, RerouteStats};
use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

/// The tables being written.
pub(super) struct Tables {
    pub(super) lft: Lft,
    pub(super) hops: SwitchLidTable,
    pub(super) layers: Option<SwitchLidTable>,
}

/// What [`route_again`] routes on and from: the same for every try of pass 2.
pub(super) struct Basis<'a> {
    /// The new switch graph and its connected parts (a part number per switch).
    pub(super) g: &'a SwitchGraph,
    pub(super) comp: &'a [u32],
    /// The previous routing, and per new switch the same switch in it ([`NO_SWITCH`]: new).
    pub(super) or: &'a Routing,
    pub(super) old_of_new: &'a [u32],
    /// After a repair: the ports a full computation gives now, preferred to the old ones.
    pub(super) guide: Option<&'a Guide>,
    /// A re-balance in place: overloaded channels, which count as a move even where they are
    /// the old port (the paths shed from them spread by load).
    pub(super) shed: Option<&'a [bool]>,
}

/// New next hops for the switches whose paths are not kept (`work`: per destination, the kept
/// paths' lengths), destination by destination, nearest switches first, balanced against the
/// loads of everything placed so far, each path in a layer `layering` accepts. Returns the
/// number of layers in use.
pub(super) fn route_again(
    basis: &Basis<'_>,
    work: &[(usize, Vec<u32>)],
    t: &mut Tables,
    load: &mut [u64],
    layering: &mut Layering<'_>,
    st: &mut RerouteStats,
) -> Result<u8, FullReason> {
    let &Basis {
        g,
        comp,
        or,
        old_of_new,
        guide,
        shed,
    } = basis;
    let ns = g.num_switches();
    let mut num_layers = or.num_layers.max(1);
    let mut sc = Scratch::new(ns);
    st.paths_rerouted = 0;
    st.layer_moves = 0;
    for (di, kept_dist) in work {
        let d = g.dests()[*di];
        let root_comp = comp[d.switch as usize];
        sc.settle(g, comp, root_comp, kept_dist);
        let last_link = u32::from(d.exit_port != 0);
        for &s in &sc.settled_order {
            // Next hops into switches already routed (kept, or re-routed before `s`): their
            // paths cannot come back through `s`, so no forwarding loop can form.
            let o = old_of_new[s as usize];
            let old_layer = match (&or.layers, o) {
                (Some(ol), o) if o != NO_SWITCH && usize::from(d.lid) < ol.shape().1 => {
                    Some(ol.get(o, d.lid))
                }
                _ => None,
            };
            // Shortest first; among those, the port the switch used before (its LFT entry
            // stays: no block to send, Vishnu et al.) or, after a repair, the fresh routing's
            // port (the paths that ran through a switch now following it do not all pile onto
            // its new next hop); then switches whose own path is in this path's layer (its edges
            // are already there: only the first turn is new), then the least loaded.
            let was = match o {
                o if o != NO_SWITCH && d.lid <= or.lft.max_lid => or.lft.port(o, d.lid),
                _ => NO_PATH,
            };
            let old_port = guide.map_or(was, |guide| guide.port(s, d.lid));
            sc.cands.clear();
            for c in g.out_channels(s) {
                let v = g.chan_head()[c as usize];
                let h = sc.hop[v as usize];
                if h != u32::MAX {
                    let moved = g.chan_port()[c as usize] != old_port
                        || shed.is_some_and(|hot| hot[c as usize]);
                    let other_layer = match (&t.layers, old_layer) {
                        (Some(lt), Some(l)) if g.terminal_count()[s as usize] > 0 => {
                            lt.get(v, d.lid) != l
                        }
                        _ => false,
                    };
                    sc.cands.push(Candidate {
                        hops: h + 1,
                        moved,
                        other_layer,
                        load: load[c as usize],
                        channel: c,
                        joins: t.layers.as_ref().map(|lt| lt.get(v, d.lid)),
                    });
                }
            }
            sc.cands.sort_unstable();
            // The candidate that would give the switch its old path back: it may only go into
            // the old layer (an unchanged path keeps its SL).
            let same_path = sc
                .cands
                .iter()
                .map(|cand| cand.channel)
                .find(|&c| {
                    g.chan_port()[c as usize] == was && sc.same[g.chan_head()[c as usize] as usize]
                })
                .filter(|_| old_layer.is_some());
            let path = PathToPlace {
                lid: d.lid,
                root: d.switch,
                old_layer,
                same_path,
                sa_visible: g.terminal_count()[s as usize] > 0,
            };
            let (c, l) = layering
                .place(&t.lft, &path, &sc.cands, &mut num_layers)
                .ok_or(FullReason::NoLayer {
                    switch: g.switch_guid(s),
                    lid: d.lid,
                })?;
            if old_layer.is_some_and(|ol| ol != l) {
                st.layer_moves += 1;
            }
            sc.same[s as usize] = same_path == Some(c);
            sc.next[s as usize] = c;
            sc.hop[s as usize] = sc.hop[g.chan_head()[c as usize] as usize] + 1;
            t.lft.set(s, d.lid, g.chan_port()[c as usize]);
            t.hops.set(
                s,
                d.lid,
                u8::try_from(sc.hop[s as usize] + last_link).unwrap_or(NO_PATH),
            );
            if let Some(lt) = t.layers.as_mut() {
                lt.set(s, d.lid, l);
            }
        }
        st.paths_rerouted += sc.settled_order.len() as u64;
        sc.add_loads(g, d, kept_dist, t, load);
        sc.clear_unreached(g, comp, root_comp, d.lid, t);
    }
    Ok(num_layers)
}

/// Per-destination scratch of [`route_again`], allocated once.
struct Scratch {
    heap: BinaryHeap<Reverse<(u32, u32)>>,
    /// The switches to re-route, nearest to the kept paths first.
    settled_order: Vec<u32>,
    /// Their new next hops.
    next: Vec<u32>,
    /// Hops to the destination over kept paths and the settled ones.
    dist: Vec<u32>,
    /// Hops of the paths placed so far (kept ones from the start).
    hop: Vec<u32>,
    /// Routes gathered at a switch, not yet added to the channel loads.
    f: Vec<u64>,
    cands: Vec<Candidate>,
    /// Per switch: its path to the destination is the one it had before (kept, or re-routed
    /// onto the same switches and ports).
    same: Vec<bool>,
}

impl Scratch {
    /// Scratch for `ns` switches.
    fn new(ns: usize) -> Self {
        Scratch {
            heap: BinaryHeap::new(),
            settled_order: Vec::new(),
            next: vec![NO_CHANNEL; ns],
            dist: vec![u32::MAX; ns],
            hop: vec![u32::MAX; ns],
            f: vec![0u64; ns],
            cands: Vec::new(),
            same: vec![false; ns],
        }
    }

    /// The switches of the destination's part (`root_comp`) whose paths are not kept
    /// (`kept_dist` is `u32::MAX` there), in the order they are re-routed: nearest to a kept
    /// path first.
    fn settle(&mut self, g: &SwitchGraph, comp: &[u32], root_comp: u32, kept_dist: &[u32]) {
        let ns = g.num_switches();
        let (heap, settled_order, dist, hop, same) = (
            &mut self.heap,
            &mut self.settled_order,
            &mut self.dist,
            &mut self.hop,
            &mut self.same,
        );
        heap.clear();
        settled_order.clear();
        dist.copy_from_slice(kept_dist);
        hop.copy_from_slice(kept_dist);
        let fixed = |s: usize| kept_dist[s] != u32::MAX;
        for (s, same) in same.iter_mut().enumerate() {
            *same = fixed(s);
        }
        for s in 0..ns as u32 {
            if fixed(s as usize) || comp[s as usize] != root_comp {
                continue;
            }
            for c in g.out_channels(s) {
                let v = g.chan_head()[c as usize] as usize;
                if fixed(v) {
                    heap.push(Reverse((dist[v] + 1, s)));
                }
            }
        }
        while let Some(Reverse((h, s))) = heap.pop() {
            if dist[s as usize] != u32::MAX {
                continue;
            }
            dist[s as usize] = h;
            settled_order.push(s);
            for &c in g.in_channels(s) {
                let u = g.chan_tail()[c as usize];
                if dist[u as usize] == u32::MAX {
                    heap.push(Reverse((h + 1, u)));
                }
            }
        }
    }

    /// The re-routed paths' loads: farthest first, then along the kept paths they join.
    fn add_loads(
        &mut self,
        g: &SwitchGraph,
        d: Dest,
        kept_dist: &[u32],
        t: &Tables,
        load: &mut [u64],
    ) {
        let fixed = |s: usize| kept_dist[s] != u32::MAX;
        let (settled_order, f, next) = (&self.settled_order, &mut self.f, &self.next);
        for &s in settled_order.iter().rev() {
            let fs = f[s as usize] + u64::from(g.terminal_count()[s as usize]);
            f[s as usize] = 0;
            let c = next[s as usize];
            load[c as usize] += fs;
            let v = g.chan_head()[c as usize];
            if fixed(v as usize) {
                let mut at = v;
                while at != d.switch {
                    let Some(c) = g.channel_at(at, t.lft.port(at, d.lid)) else {
                        break;
                    };
                    load[c as usize] += fs;
                    at = g.chan_head()[c as usize];
                }
            } else {
                f[v as usize] += fs;
            }
        }
    }

    /// Switches of the part that cannot reach the destination (cannot happen in a connected
    /// part) get no entry.
    fn clear_unreached(
        &self,
        g: &SwitchGraph,
        comp: &[u32],
        root_comp: u32,
        lid: u16,
        t: &mut Tables,
    ) {
        let ns = g.num_switches();
        let dist = &self.dist;
        for s in 0..ns {
            if comp[s] == root_comp && dist[s] == u32::MAX {
                t.lft.set(s as u32, lid, NO_PATH);
                t.hops.set(s as u32, lid, NO_PATH);
            }
        }
    }
}
