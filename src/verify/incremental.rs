//! The independent check after an incremental re-route, restricted to what changed.
//!
//! The check of [`super::verify`] is a sum over destinations: per LID, whether every switch's
//! path delivers, how many paths each layer holds, and the CDG edges the paths create. A LID's
//! share depends on nothing but its column of the tables (ports and layers), the channels
//! behind the ports that column uses, and the connected components. So when the previous
//! routing was verified (its report is the [`VerifiedBefore`]), a LID needs checking again only
//! if
//! - an entry of its column (port or layer) differs on some switch, or
//! - its old column sent a packet into a channel that vanished, or its new column sends one into
//!   a channel that is new (a port now cabled to another switch),
//!
//! and every other LID's share is the one counted before. This module finds those LIDs itself,
//! by comparing the old and new tables and channels (it does not take the re-route's word for
//! what moved), checks them exactly as the full verification does, and adds them up with the
//! previous report: paths per layer and unreachable pairs exactly (the changed LIDs' old
//! shares, recounted from the old tables, are taken off). The CDG edges of unchanged LIDs are
//! among the previous edges that survive on existing channels, so the union of those and the
//! changed LIDs' new edges contains the new CDG: acyclic implies acyclic. A cycle in that union
//! may only run through stale edges, so then everything is verified afresh, exactly. Anything
//! the shortcut does not cover (switches, LIDs, components or layer count changed, a previous
//! report that does not fit) is verified in full too. The over-approximated edges are what the
//! next re-route and the next check start from; a full verification resets them.
//!
//! **Cost.** Finding the changed LIDs compares the old and new tables entry by entry (LFT and layer
//! rows, switches in parallel): `O(S·max_lid)` whatever changed, plus `O(max_lid)` per channel that
//! vanished or is new (its port looked up in its tail's rows). Each changed LID is then checked
//! twice, in the new tables and in the old, `O(S)` each as in [`super::verify`]; the unchanged ones
//! are not walked. Carrying the previous edges over and checking every layer's union for a cycle
//! costs `O(L·(C+E))` (`E ≤ C·radix` possible dependency edges), in `L·E/8` bytes of bits. A change
//! the shortcut does not cover costs a full verification instead, a cycle in the union one as well:
//! `O(D·S)` plus the same CDG checks.

use rayon::prelude::*;

use super::{
    check_shape, finish, merge, verify, Check, DependencySlots, Loads, VerifyError, VerifyReport,
};
use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::Routing;

/// A routing that passed verification, and what its report said.
#[derive(Clone, Copy)]
pub struct VerifiedBefore<'a> {
    pub graph: &'a SwitchGraph,
    pub routing: &'a Routing,
    /// [`VerifyReport::layer_edges`] of that verification.
    pub layer_edges: &'a [Vec<u64>],
    /// [`VerifyReport::paths_per_layer`].
    pub paths_per_layer: &'a [u64],
    /// [`VerifyReport::unreachable`].
    pub unreachable: u64,
}

/// How much [`verify_since`] checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyScope {
    /// Only the LIDs whose paths may have changed.
    Changed { dests_checked: usize },
    /// Everything, and why.
    Full(&'static str),
}

/// Verifies `r` on `g` as [`verify`] does, checking only the destinations whose paths may differ
/// from `before`'s (see the module documentation); in full when there is no `before` or the
/// shortcut does not apply.
pub fn verify_since(
    before: Option<VerifiedBefore<'_>>,
    g: &SwitchGraph,
    r: &Routing,
) -> Result<(VerifyReport, VerifyScope), VerifyError> {
    let Some(b) = before else {
        return verify(g, r).map(|rep| (rep, VerifyScope::Full("no previous verification")));
    };
    check_shape(g, r)?;
    if let Err(why) = comparable(&b, g, r) {
        return verify(g, r).map(|rep| (rep, VerifyScope::Full(why)));
    }
    let (og, or) = (b.graph, b.routing);
    let (old_slots, slots) = (DependencySlots::new(og), DependencySlots::new(g));
    if b.layer_edges
        .iter()
        .any(|e| e.len() != old_slots.len().div_ceil(64) as usize)
    {
        return verify(g, r).map(|rep| (rep, VerifyScope::Full("previous CDG of another size")));
    }
    let comp = g.components();
    if comp != og.components() {
        return verify(g, r).map(|rep| (rep, VerifyScope::Full("the fabric's parts changed")));
    }

    let chan_new = channel_map(og, g);
    let changed = changed_dests(og, or, g, r, &chan_new);
    // The changed LIDs' shares now (exact, with their faults), and before (to take off).
    let check = Check::new(g, r, &slots, &comp);
    let now = merge(r.num_layers, check.dests(&changed, Loads::Skip))?;
    let (was, _) = merge(
        or.num_layers,
        Check::new(og, or, &old_slots, &comp).dests(&changed, Loads::Skip),
    )
    .map_err(|_| VerifyError::Shape("the previous routing does not verify".into()))?;
    let (mut report, mut bits) = now;
    for (k, p) in report.paths_per_layer.iter_mut().enumerate() {
        let rest = b.paths_per_layer[k].checked_sub(was.paths_per_layer[k]);
        let Some(rest) = rest else {
            return verify(g, r).map(|rep| (rep, VerifyScope::Full("inconsistent path counts")));
        };
        *p += rest;
    }
    report.unreachable += b.unreachable.saturating_sub(was.unreachable);
    // The unchanged LIDs' edges: the previous ones on channels that still exist.
    for (layer, old) in b.layer_edges.iter().enumerate() {
        let acc = bits[layer].get_or_insert_with(|| vec![0; check.words]);
        old_slots.for_each_edge(og, old, |c1, c2| {
            let (n1, n2) = (chan_new[c1 as usize], chan_new[c2 as usize]);
            if n1 != NO_CHANNEL && n2 != NO_CHANNEL {
                let s = slots.slot(g, n1, n2);
                acc[(s / 64) as usize] |= 1 << (s % 64);
            }
        });
    }
    match finish(g, &slots, check.words, report, bits) {
        Ok(mut rep) => {
            rep.dests_reused = (g.dests().len() - changed.len()) as u64;
            rep.edges_upper_bound = true;
            Ok((
                rep,
                VerifyScope::Changed {
                    dests_checked: changed.len(),
                },
            ))
        }
        // Perhaps only through edges of paths that are gone: decide exactly.
        Err(VerifyError::CreditLoop { .. }) => verify(g, r).map(|rep| {
            (
                rep,
                VerifyScope::Full("a cycle through edges kept from before"),
            )
        }),
        Err(e) => Err(e),
    }
}

/// Whether the shortcut applies: the same switches in the same order, the same destinations,
/// table widths and layer count (a routing without a layer table has every path in layer 0),
/// and a previous report of the right shape.
fn comparable(b: &VerifiedBefore<'_>, g: &SwitchGraph, r: &Routing) -> Result<(), &'static str> {
    let (og, or) = (b.graph, b.routing);
    let ns = g.num_switches();
    if og.num_switches() != ns || (0..ns as u32).any(|s| og.switch_guid(s) != g.switch_guid(s)) {
        return Err("the switches changed");
    }
    if og.dests() != g.dests() {
        return Err("the LIDs changed");
    }
    if or.lft.num_switches() != ns
        || or.lft.max_lid != r.lft.max_lid
        || or.num_layers != r.num_layers
        || or
            .layers
            .as_ref()
            .is_some_and(|l| l.shape() != (ns, or.lft.stride()))
    {
        return Err("the tables changed shape");
    }
    let nl = usize::from(r.num_layers);
    if b.layer_edges.len() != nl || b.paths_per_layer.len() != nl {
        return Err("no previous CDG to start from");
    }
    Ok(())
}

/// Old channel -> the channel with the same tail, port, head and head port in `g`
/// ([`NO_CHANNEL`] when it vanished). Switch ids are the same in both graphs.
fn channel_map(og: &SwitchGraph, g: &SwitchGraph) -> Vec<u32> {
    (0..og.num_channels())
        .map(|oc| {
            let (t, port) = (og.chan_tail()[oc], og.chan_port()[oc]);
            match g.channel_at(t, port) {
                Some(c)
                    if g.chan_head()[c as usize] == og.chan_head()[oc]
                        && g.chan_head_port()[c as usize] == og.chan_head_port()[oc] =>
                {
                    c
                }
                _ => NO_CHANNEL,
            }
        })
        .collect()
}

/// The destinations (in LID order) whose column differs, or whose old or new column uses a
/// channel that exists on one side only.
fn changed_dests(
    og: &SwitchGraph,
    or: &Routing,
    g: &SwitchGraph,
    r: &Routing,
    chan_new: &[u32],
) -> Vec<Dest> {
    let ns = g.num_switches();
    let stride = r.lft.stride();
    let words = stride.div_ceil(64);
    // Switches whose channels differ: their old and new rows are scanned for the ports concerned.
    let mut gone_ports: Vec<Vec<u8>> = vec![Vec::new(); ns];
    for (oc, &c) in chan_new.iter().enumerate() {
        if c == NO_CHANNEL {
            gone_ports[og.chan_tail()[oc] as usize].push(og.chan_port()[oc]);
        }
    }
    let mut mapped = vec![false; g.num_channels()];
    for &c in chan_new.iter().filter(|&&c| c != NO_CHANNEL) {
        mapped[c as usize] = true;
    }
    let mut new_ports: Vec<Vec<u8>> = vec![Vec::new(); ns];
    for (c, _) in mapped.iter().enumerate().filter(|(_, &m)| !m) {
        new_ports[g.chan_tail()[c] as usize].push(g.chan_port()[c]);
    }
    let marks = (0..ns as u32)
        .into_par_iter()
        .fold(
            || vec![0u64; words],
            |mut m, s| {
                let (old, new) = (or.lft.table(s), r.lft.table(s));
                let mark = |m: &mut Vec<u64>, lid: usize| m[lid / 64] |= 1 << (lid % 64);
                for lid in 0..stride {
                    if old[lid] != new[lid]
                        || gone_ports[s as usize].contains(&old[lid])
                        || new_ports[s as usize].contains(&new[lid])
                    {
                        mark(&mut m, lid);
                    }
                }
                // No layer table is every path in layer 0 (a one-lane routing, whose incremental
                // re-route with more lanes available writes a table).
                match (or.layers.as_ref(), r.layers.as_ref()) {
                    (Some(ol), Some(nl)) => {
                        for (lid, (a, b)) in ol.row(s).iter().zip(nl.row(s)).enumerate() {
                            if a != b {
                                mark(&mut m, lid);
                            }
                        }
                    }
                    (Some(l), None) | (None, Some(l)) => {
                        for (lid, &a) in l.row(s).iter().enumerate() {
                            if a != 0 {
                                mark(&mut m, lid);
                            }
                        }
                    }
                    (None, None) => {}
                }
                m
            },
        )
        .reduce(
            || vec![0u64; words],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x |= y);
                a
            },
        );
    g.dests()
        .iter()
        .filter(|d| {
            let l = usize::from(d.lid);
            d.switch != NO_SWITCH && l < stride && marks[l / 64] >> (l % 64) & 1 != 0
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::engine::{self, EngineConfig, EngineKind};
    use crate::fabric::{Fabric, Link, NodeKind};
    use crate::reroute::{reroute_with, RerouteOptions, RoutedFabric, RoutingSummary};
    use crate::routing::{SwitchLidTable, NO_PATH};

    /// A full routing as the engine leaves it: with the summary the next re-route and check
    /// start from.
    struct Before {
        fabric: Fabric,
        graph: SwitchGraph,
        routing: Routing,
        summary: RoutingSummary,
        report: VerifyReport,
    }

    impl Before {
        fn of(f: &Fabric, lanes: u8) -> Self {
            let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
            cfg.lanes = lanes;
            cfg.one_lane_candidate = false;
            cfg.dor_candidate = false;
            let out = engine::run(f, &cfg).expect("full routing");
            let report = verify(&out.graph, &out.routing).expect("verified");
            Before {
                fabric: f.clone(),
                graph: out.graph,
                routing: out.routing,
                summary: out.summary,
                report,
            }
        }

        fn verified(&self) -> VerifiedBefore<'_> {
            VerifiedBefore {
                graph: &self.graph,
                routing: &self.routing,
                layer_edges: &self.summary.layer_edges,
                paths_per_layer: &self.summary.paths_per_layer,
                unreachable: self.summary.unreachable,
            }
        }

        /// The incremental re-route of `after`, from the summary as the engine does (None when
        /// it asks for a full computation).
        fn reroute(&self, after: &Fabric, lanes: u8) -> Option<(SwitchGraph, Routing)> {
            let g = SwitchGraph::new(after).unwrap();
            let prev = RoutedFabric {
                fabric: &self.fabric,
                graph: &self.graph,
                routing: &self.routing,
            };
            let opts = RerouteOptions {
                budget: lanes,
                deadlock_free: true,
            };
            let (r, _, _) = reroute_with(prev, Some(&self.summary), after, &g, &opts).ok()?;
            Some((g, r))
        }
    }

    fn switch_links(f: &Fabric) -> Vec<Link> {
        let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
        f.links()
            .iter()
            .filter(|l| sw(l.a) && sw(l.b))
            .copied()
            .collect()
    }

    fn without(f: &Fabric, gone: &[Link]) -> Fabric {
        f.retain(|_| true, |l| !gone.contains(l))
    }

    /// What both checks report, but how much was reused.
    fn exact_part(r: &VerifyReport) -> (u64, Vec<u64>, u64, u8) {
        (
            r.paths,
            r.paths_per_layer.clone(),
            r.unreachable,
            r.layers_used,
        )
    }

    #[test]
    fn a_cable_fault_checks_only_the_lids_that_crossed_it() {
        let f = crate::topo::by_name("ktree:4,3").unwrap();
        let b = Before::of(&f, 8);
        let links = switch_links(&f);
        let after = without(&f, &[links[links.len() / 3]]);
        let (g, r) = b.reroute(&after, 8).expect("incremental");
        let (inc, scope) = verify_since(Some(b.verified()), &g, &r).unwrap();
        let full = verify(&g, &r).unwrap();
        let VerifyScope::Changed { dests_checked } = scope else {
            panic!("{scope:?}");
        };
        assert!(dests_checked > 0 && dests_checked < g.dests().len() / 2);
        assert_eq!(exact_part(&inc), exact_part(&full));
        assert_eq!(inc.dests_reused as usize, g.dests().len() - dests_checked);
        // The kept edges contain the exact CDG.
        for (u, e) in inc.layer_edges.iter().zip(&full.layer_edges) {
            assert!(u.iter().zip(e).all(|(u, e)| e & !u == 0));
        }
    }

    #[test]
    fn old_tables_across_a_vanished_cable_fail() {
        // Nothing in the tables changed, but the cable some of them use is gone.
        let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let b = Before::of(&f, 8);
        let links = switch_links(&f);
        let after = without(&f, &[links[3]]);
        let g = SwitchGraph::new(&after).unwrap();
        let e = verify_since(Some(b.verified()), &g, &b.routing).unwrap_err();
        assert!(matches!(e, VerifyError::Incomplete { .. }), "{e:?}");
    }

    #[test]
    fn a_broken_or_looping_entry_fails_as_in_the_full_check() {
        let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let b = Before::of(&f, 8);
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = b.routing.clone();
        let d = g.dests()[g.dests().len() / 2];
        let s = (d.switch + 1) % g.num_switches() as u32;
        r.lft.set(s, d.lid, NO_PATH);
        let e = verify_since(Some(b.verified()), &g, &r).unwrap_err();
        assert!(matches!(e, VerifyError::Incomplete { .. }), "{e:?}");
        // Two neighbours pointing at each other.
        let mut r = b.routing.clone();
        let c = g.out_channels(s).next().unwrap();
        let t = g.chan_head()[c as usize];
        let back = g
            .out_channels(t)
            .find(|&c| g.chan_head()[c as usize] == s)
            .unwrap();
        r.lft.set(s, d.lid, g.chan_port()[c as usize]);
        r.lft.set(t, d.lid, g.chan_port()[back as usize]);
        let e = verify_since(Some(b.verified()), &g, &r).unwrap_err();
        assert!(matches!(e, VerifyError::Incomplete { .. }), "{e:?}");
    }

    #[test]
    fn layers_merged_into_one_close_a_credit_loop() {
        // The torus needs its layers: all paths in layer 0 have credit loops, found although the
        // previous edges say nothing about them.
        let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let b = Before::of(&f, 8);
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = b.routing.clone();
        if let Some(l) = r.layers.as_mut() {
            for s in 0..g.num_switches() as u32 {
                l.row_mut(s).fill(0);
            }
        }
        let e = verify_since(Some(b.verified()), &g, &r).unwrap_err();
        assert!(
            matches!(e, VerifyError::CreditLoop { layer: 0, .. }),
            "{e:?}"
        );
    }

    /// A one-lane routing keeps no layer table; its re-route with lanes to spare writes one (all
    /// zeros where nothing moved to another layer): still checked incrementally, and a path put
    /// in layer 0 of the table counts as unchanged, one in another layer as changed.
    #[test]
    fn a_layer_table_of_zeros_is_no_layer_table() {
        let f = crate::topo::by_name("ktree:4,3,cut=5").unwrap();
        let b = Before::of(&f, 1);
        assert!(b.routing.layers.is_none());
        let g = &b.graph;
        let mut r = b.routing.clone();
        r.layers = Some(SwitchLidTable::new(g.num_switches(), r.lft.max_lid, 0));
        let (rep, scope) = verify_since(Some(b.verified()), g, &r).unwrap();
        assert_eq!(scope, VerifyScope::Changed { dests_checked: 0 });
        assert_eq!(rep.paths_per_layer, b.report.paths_per_layer);
        // The other way round: a table before, none now.
        let with_table = Before {
            fabric: b.fabric.clone(),
            graph: b.graph.clone(),
            routing: r.clone(),
            summary: b.summary.clone(),
            report: b.report.clone(),
        };
        let (_, scope) = verify_since(Some(with_table.verified()), g, &b.routing).unwrap();
        assert_eq!(scope, VerifyScope::Changed { dests_checked: 0 });
        // A path in layer 1 of a one-layer routing is refused, as the full check refuses it.
        let d = g.dests()[0];
        let s = (d.switch + 1) % g.num_switches() as u32;
        r.layers.as_mut().unwrap().set(s, d.lid, 1);
        assert!(verify_since(Some(b.verified()), g, &r).is_err());
        assert!(verify(g, &r).is_err());
    }

    #[test]
    fn another_fabric_is_verified_in_full() {
        let f = crate::topo::by_name("ktree:4,3").unwrap();
        let b = Before::of(&f, 8);
        let other = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let o = Before::of(&other, 8);
        let (rep, scope) = verify_since(Some(b.verified()), &o.graph, &o.routing).unwrap();
        assert!(matches!(scope, VerifyScope::Full(_)), "{scope:?}");
        assert_eq!(rep, o.report);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Random fabrics losing random links, re-routed incrementally: the restricted check
        /// agrees with the full one on everything it reports exactly, and its edges contain the
        /// exact CDG.
        #[test]
        fn agrees_with_the_full_check(seed in 0u64..1000, cuts in 1usize..5, lanes in 1u8..4) {
            let f = crate::testkit::random_net(12, 8, 2, seed);
            let b = Before::of(&f, lanes);
            let links = switch_links(&f);
            let gone: Vec<Link> = (0..cuts)
                .map(|k| links[(seed as usize * 7 + k * 13) % links.len()])
                .collect();
            let after = without(&f, &gone);
            if let Some((g, r)) = b.reroute(&after, lanes) {
                let full = verify(&g, &r);
                let inc = verify_since(Some(b.verified()), &g, &r);
                match (full, inc) {
                    (Ok(full), Ok((inc, _))) => {
                        prop_assert_eq!(exact_part(&inc), exact_part(&full));
                        for (u, e) in inc.layer_edges.iter().zip(&full.layer_edges) {
                            prop_assert!(u.iter().zip(e).all(|(u, e)| e & !u == 0));
                        }
                    }
                    (full, inc) => prop_assert!(false, "full {:?}, incremental {:?}", full.err(), inc.err()),
                }
            }
        }
    }
}
