use proptest::prelude::*;

use super::*;
use crate::engine::{self, EngineConfig, EngineKind};
use crate::fabric::{Link, NodeKind};
use crate::topo;
use crate::verify;

/// A full dfsssp-rs routing of `f` with `lanes` lanes.
fn full(f: &Fabric, lanes: u8, kind: EngineKind) -> (SwitchGraph, Routing) {
    let mut cfg = EngineConfig::new(kind);
    cfg.lanes = lanes;
    // the layers' routing, whichever measures better (the tests re-route layered routings)
    cfg.one_lane_candidate = false;
    cfg.dor_candidate = false;
    let out = engine::run(f, &cfg).expect("full routing");
    (out.graph, out.routing)
}

fn opts(lanes: u8, kind: EngineKind) -> RerouteOptions {
    RerouteOptions {
        budget: lanes,
        deadlock_free: kind == EngineKind::Dfsssp,
    }
}

/// The links between two switches, by index in `f.links()`.
fn switch_links(f: &Fabric) -> Vec<usize> {
    let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    (0..f.links().len())
        .filter(|&i| sw(f.links()[i].a) && sw(f.links()[i].b))
        .collect()
}

fn without_links(f: &Fabric, gone: &[Link]) -> Fabric {
    f.retain(|_| true, |l| !gone.contains(l))
}

/// A switch with only switches on its ports (a fat tree's top level), by node index.
fn top_switch(f: &Fabric) -> u32 {
    let is_sw = |n: u32| f.nodes()[n as usize].kind == NodeKind::Switch;
    (0..f.nodes().len() as u32)
        .filter(|&n| is_sw(n))
        .find(|&n| {
            f.links()
                .iter()
                .filter(|l| l.a.node == n || l.b.node == n)
                .all(|l| is_sw(l.a.node) && is_sw(l.b.node))
        })
        .expect("a switch with only switches on its ports")
}

/// Re-routes `after` from the full routing of `before`, checks the result with the independent
/// verification, and checks stability: no kept path moved or changed SL.
fn check(
    before: &Fabric,
    after: &Fabric,
    lanes: u8,
    kind: EngineKind,
) -> (RerouteStats, RoutingDiff) {
    let (og, or) = full(before, lanes, kind);
    let g = SwitchGraph::new(after).unwrap();
    let prev = RoutedFabric {
        fabric: before,
        graph: &og,
        routing: &or,
    };
    let (r, st) = reroute(prev, after, &g, &opts(lanes, kind))
        .unwrap_or_else(|e| panic!("{lanes} lanes: {e}"));
    match verify::verify(&g, &r) {
        Ok(report) => assert_eq!(report.unreachable, 0),
        // sssp-rs routes may have credit loops; anything else is a fault.
        Err(verify::VerifyError::CreditLoop { .. }) if kind == EngineKind::Sssp => {}
        Err(e) => panic!("{e:?}"),
    }
    assert!(r.num_layers <= lanes);
    let loads = crate::balance::channel_loads(&g, &r.lft);
    assert_eq!(st.max_load, loads.iter().copied().max().unwrap_or(0));
    let d = diff(
        prev,
        RoutedFabric {
            fabric: after,
            graph: &g,
            routing: &r,
        },
    );
    assert_eq!(d.ca_pairs_sl_changed_path_kept, 0, "{}", d.summary());
    // Every path that moved was re-routed (kept ones are copied); re-routed ones may end up on
    // the same switches again.
    assert!(
        d.paths_moved <= st.paths_rerouted,
        "{} vs {}",
        d.summary(),
        st.summary()
    );
    assert!(d.paths - d.paths_moved >= st.paths_kept, "{}", d.summary());
    (st, d)
}

#[test]
fn nothing_changed_keeps_everything() {
    let f = topo::by_name("torus:4x4x4,2").unwrap();
    let (st, d) = check(&f, &f, 8, EngineKind::Dfsssp);
    assert_eq!(st.paths_rerouted, 0);
    assert_eq!(d.paths_moved, 0);
    assert_eq!(d.lft_blocks_changed, 0);
    assert_eq!(st.dests_touched, 0);
}

#[test]
fn a_failed_link_reroutes_only_the_paths_that_crossed_it() {
    for (spec, lanes) in [("ktree:4,3", 8), ("torus:4x4x4,2", 8), ("fattree3:6", 8)] {
        let f = topo::by_name(spec).unwrap();
        let links = switch_links(&f);
        let gone = f.links()[links[links.len() / 3]];
        let after = without_links(&f, &[gone]);
        let (st, d) = check(&f, &after, lanes, EngineKind::Dfsssp);
        assert!(st.paths_rerouted > 0, "{spec}: nothing re-routed");
        assert_eq!(st.channels_gone, 2, "{spec}");
        assert!(
            d.ca_pairs_moved > 0 && d.ca_pairs_moved < d.ca_pairs / 4,
            "{spec}: {}",
            d.summary()
        );
        // A full computation of the changed fabric moves far more.
        let (og, or) = full(&f, lanes, EngineKind::Dfsssp);
        let (g, r) = full(&after, lanes, EngineKind::Dfsssp);
        let whole = diff(
            RoutedFabric {
                fabric: &f,
                graph: &og,
                routing: &or,
            },
            RoutedFabric {
                fabric: &after,
                graph: &g,
                routing: &r,
            },
        );
        assert!(
            d.lft_blocks_changed * 2 <= whole.lft_blocks_changed
                && d.ca_pairs_moved * 2 <= whole.ca_pairs_moved,
            "{spec}: incremental {}; full {}",
            d.summary(),
            whole.summary()
        );
    }
}

/// Issue 12's target: after one cable fails on the 6x6x6 torus, at most 5% of the LFT blocks a
/// full computation would send. Re-routed switches keep their old port when it still leads on a
/// shortest path into the kept tree (11% of the blocks without that preference).
#[test]
fn a_torus_cable_moves_few_lft_blocks() {
    let f = topo::by_name("torus:6x6x6,4").unwrap();
    let (og, or) = full(&f, 8, EngineKind::Dfsssp);
    let prev = RoutedFabric {
        fabric: &f,
        graph: &og,
        routing: &or,
    };
    let links = switch_links(&f);
    let mut incremental = 0;
    for k in 1..7 {
        let after = without_links(&f, &[f.links()[links[links.len() * k / 7]]]);
        let g = SwitchGraph::new(&after).unwrap();
        // Some cables need a full computation on a torus whose layers are full (see the README).
        let Ok((r, _)) = reroute(prev, &after, &g, &opts(8, EngineKind::Dfsssp)) else {
            continue;
        };
        verify::verify(&g, &r).expect("verified");
        incremental += 1;
        let d = diff(
            prev,
            RoutedFabric {
                fabric: &after,
                graph: &g,
                routing: &r,
            },
        );
        assert!(
            d.lft_blocks_changed * 20 <= d.lft_blocks,
            "cable {k}: {} of {} blocks",
            d.lft_blocks_changed,
            d.lft_blocks
        );
    }
    assert!(
        incremental >= 3,
        "only {incremental} of 6 cables re-routed incrementally"
    );
}

#[test]
fn a_failed_switch_and_its_return() {
    let f = topo::by_name("ktree:4,3").unwrap();
    // A top-level switch (no CAs) disappears, then comes back.
    let sw = top_switch(&f);
    let guid = f.nodes()[sw as usize].guid;
    let after = f.retain(|n| n.guid != guid, |_| true);
    let (st, _) = check(&f, &after, 8, EngineKind::Dfsssp);
    assert_eq!(st.switches_gone, 1);
    assert_eq!(st.dests_gone, 1, "the switch's own LID");
    // Back again: the switch is a new source for every LID and its LID a new destination. It
    // makes no CA pair's path shorter; the pairs a fresh computation sends through it move there,
    // so that it carries its share again and no channel is loaded much more than in a fresh
    // computation (the repair's slack). SLs of unchanged paths stay (checked by `check`).
    let (st, d) = check(&after, &f, 8, EngineKind::Dfsssp);
    assert_eq!(st.switches_new, 1);
    assert_eq!(st.dests_new, 1);
    assert!(
        d.ca_pairs_moved > 0,
        "the returned switch stays idle: {}",
        d.summary()
    );
    let (g, fresh) = full(&f, 8, EngineKind::Dfsssp);
    let fresh_max = crate::balance::channel_loads(&g, &fresh.lft)
        .into_iter()
        .max()
        .unwrap();
    assert!(
        st.max_load as f64 <= fresh_max as f64 * 1.5,
        "{} > 150% of a fresh computation's {fresh_max}",
        st.max_load
    );
    assert!(st.repair.is_some(), "a repair is measured");
    let (ga, ra) = full(&after, 8, EngineKind::Dfsssp);
    let prev = RoutedFabric {
        fabric: &after,
        graph: &ga,
        routing: &ra,
    };
    let (r, _) = reroute(prev, &f, &g, &opts(8, EngineKind::Dfsssp)).unwrap();
    let back = g.node_switch()[sw as usize];
    let through_back = (0..g.num_switches() as u32)
        .filter(|&s| g.terminal_count()[s as usize] > 0)
        .flat_map(|s| g.dests().iter().map(move |d| (s, d.lid)))
        .filter(|&(s, lid)| {
            let mut crosses = false;
            crate::routing::walk(&g, &r.lft, s, lid, |c| {
                crosses |= g.chan_head()[c as usize] == back
            })
            .unwrap();
            crosses
        })
        .count();
    assert!(through_back > 0, "no CA path crosses the returned switch");
}

/// A cable fails (re-routed incrementally) and comes back: the paths it had shortened take it
/// again, the rest stays, and the routes are as short as a fresh computation's.
#[test]
fn a_returned_cable_carries_routes_again() {
    let f = topo::by_name("torus:4x4x4,2").unwrap();
    let links = switch_links(&f);
    let gone = f.links()[links[links.len() / 3]];
    let cut = without_links(&f, &[gone]);
    let (og, or) = full(&f, 8, EngineKind::Dfsssp);
    let g_cut = SwitchGraph::new(&cut).unwrap();
    let o = opts(8, EngineKind::Dfsssp);
    let routed = |fabric, graph, routing| RoutedFabric {
        fabric,
        graph,
        routing,
    };
    let (r_cut, _) = reroute(routed(&f, &og, &or), &cut, &g_cut, &o).unwrap();
    let (r, st) = reroute(routed(&cut, &g_cut, &r_cut), &f, &og, &o).unwrap();
    verify::verify(&og, &r).unwrap();
    assert_eq!(st.channels_new, 2);
    assert!(
        st.paths_rerouted > 0 && st.paths_kept > 0,
        "{}",
        st.summary()
    );
    let s = og.node_switch()[gone.a.node as usize];
    let uses = |r: &Routing| r.lft.table(s).iter().filter(|&&p| p == gone.a.port).count();
    assert!(uses(&r) > 0, "the returned cable stays unused");
    let hops = |r: &Routing| {
        og.dests()
            .iter()
            .map(|d| {
                (0..og.num_switches() as u32)
                    .map(|s| u64::from(r.hops.get(s, d.lid)))
                    .sum::<u64>()
            })
            .sum::<u64>()
    };
    assert!(hops(&r) <= hops(&or), "{} > {}", hops(&r), hops(&or));
    let d = diff(routed(&cut, &g_cut, &r_cut), routed(&f, &og, &r));
    assert_eq!(d.ca_pairs_sl_changed_path_kept, 0, "{}", d.summary());
    assert!(d.ca_pairs_moved < d.ca_pairs / 20, "{}", d.summary());
}

#[test]
fn sssp_rs_reroutes_without_layers() {
    let f = topo::by_name("torus:4x4x4,2").unwrap();
    let links = switch_links(&f);
    let after = without_links(&f, &[f.links()[links[5]], f.links()[links[40]]]);
    let (st, _) = check(&f, &after, 1, EngineKind::Sssp);
    assert!(st.paths_rerouted > 0);
}

#[test]
fn a_ring_cut_in_two_leaves_the_halves_apart() {
    let f = topo::by_name("torus:6,2").unwrap();
    let links = switch_links(&f);
    let after = without_links(&f, &[f.links()[links[0]], f.links()[links[3]]]);
    let (og, or) = full(&f, 8, EngineKind::Dfsssp);
    let g = SwitchGraph::new(&after).unwrap();
    let prev = RoutedFabric {
        fabric: &f,
        graph: &og,
        routing: &or,
    };
    let (r, _) = reroute(prev, &after, &g, &opts(8, EngineKind::Dfsssp)).unwrap();
    let report = verify::verify(&g, &r).unwrap();
    assert!(report.unreachable > 0);
}

#[test]
fn a_torus_short_of_lanes_asks_for_a_full_computation() {
    // Two lanes on a torus: DFSSSP's layer and the Up*/Down* escape are full; the minimal
    // detour closes a cycle in both, which only a full computation (new escape trees) resolves.
    let f = topo::by_name("torus:4x4x4,2").unwrap();
    let links = switch_links(&f);
    let after = without_links(&f, &[f.links()[links[links.len() / 3]]]);
    let (og, or) = full(&f, 2, EngineKind::Dfsssp);
    let g = SwitchGraph::new(&after).unwrap();
    let prev = RoutedFabric {
        fabric: &f,
        graph: &og,
        routing: &or,
    };
    let e = reroute(prev, &after, &g, &opts(2, EngineKind::Dfsssp)).unwrap_err();
    assert!(matches!(e, FullReason::NoLayer { .. }), "{e}");
}

#[test]
fn a_smaller_lane_budget_is_a_full_computation() {
    let f = topo::by_name("torus:4x4x4,2").unwrap();
    let (og, or) = full(&f, 8, EngineKind::Dfsssp);
    let g = SwitchGraph::new(&f).unwrap();
    let prev = RoutedFabric {
        fabric: &f,
        graph: &og,
        routing: &or,
    };
    let e = reroute(prev, &f, &g, &opts(1, EngineKind::Dfsssp)).unwrap_err();
    assert!(matches!(e, FullReason::Budget { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Random fabrics losing random links: the re-route verifies (complete where connected,
    /// deadlock-free within the budget) or asks for a full computation; kept paths keep their SL.
    #[test]
    fn random_failures(seed in 0u64..1000, cuts in 1usize..6, lanes in 1u8..4) {
        let f = crate::testkit::random_net(12, 8, 2, seed);
        let links = switch_links(&f);
        let gone: Vec<Link> = (0..cuts)
            .map(|k| f.links()[links[(seed as usize * 7 + k * 13) % links.len()]])
            .collect();
        let after = without_links(&f, &gone);
        let (og, or) = full(&f, lanes, EngineKind::Dfsssp);
        let g = SwitchGraph::new(&after).unwrap();
        let prev = RoutedFabric { fabric: &f, graph: &og, routing: &or };
        match reroute(prev, &after, &g, &opts(lanes, EngineKind::Dfsssp)) {
            Ok((r, _)) => {
                prop_assert!(r.num_layers <= lanes);
                let rep = verify::verify(&g, &r);
                prop_assert!(rep.is_ok(), "{:?}", rep.err());
                let d = diff(prev, RoutedFabric { fabric: &after, graph: &g, routing: &r });
                prop_assert_eq!(d.ca_pairs_sl_changed_path_kept, 0);
            }
            Err(FullReason::NoLayer { .. }) => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}

#[test]
fn a_summary_of_the_previous_routing_spares_the_untouched_destinations() {
    for spec in ["ktree:4,3", "torus:4x4x4,2", "fattree3:6"] {
        let f = topo::by_name(spec).unwrap();
        let out = engine::run(&f, &EngineConfig::new(EngineKind::Dfsssp)).unwrap();
        let links = switch_links(&f);
        let after = without_links(&f, &[f.links()[links[links.len() / 3]]]);
        let g = SwitchGraph::new(&after).unwrap();
        let prev = RoutedFabric {
            fabric: &f,
            graph: &out.graph,
            routing: &out.routing,
        };
        let o = opts(8, EngineKind::Dfsssp);
        let (r0, st0, _) = reroute_with(prev, None, &after, &g, &o).unwrap();
        let (r1, st1, loads) = reroute_with(prev, Some(&out.summary), &after, &g, &o).unwrap();
        verify::verify(&g, &r1).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        // The loads it reports are the routing's, exactly.
        assert_eq!(loads, crate::balance::channel_loads(&g, &r1.lft), "{spec}");
        // The same paths move (the summary's edges may hold a few more, which can only change
        // a re-routed path's layer).
        assert_eq!(r0.lft, r1.lft, "{spec}");
        assert_eq!(
            (st0.paths_kept, st0.paths_rerouted),
            (st1.paths_kept, st1.paths_rerouted),
            "{spec}"
        );
        let d = diff(
            prev,
            RoutedFabric {
                fabric: &after,
                graph: &g,
                routing: &r1,
            },
        );
        assert_eq!(
            d.ca_pairs_sl_changed_path_kept,
            0,
            "{spec}: {}",
            d.summary()
        );
    }
}

/// Λ after a repair against a fresh computation: a torus cable (the detours it caused are
/// undone) and a fat tree's spine switch (no path is shorter through it: the paths a fresh
/// computation sends through it move back).
#[test]
fn lambda_after_a_repair() {
    use crate::metrics::{effective_bisection_bandwidth, BisectionSpec};
    let spec = BisectionSpec::new(200, 1);
    for (name, spine) in [("torus:4x4x4,2", false), ("ktree:4,3", true)] {
        let f = topo::by_name(name).unwrap();
        let cut = if spine {
            let top = top_switch(&f);
            let guid = f.nodes()[top as usize].guid;
            f.retain(|n| n.guid != guid, |_| true)
        } else {
            let links = switch_links(&f);
            without_links(&f, &[f.links()[links[links.len() / 3]]])
        };
        let (og, or) = full(&f, 8, EngineKind::Dfsssp);
        let g_cut = SwitchGraph::new(&cut).unwrap();
        let o = opts(8, EngineKind::Dfsssp);
        let (r_cut, _) = reroute(
            RoutedFabric {
                fabric: &f,
                graph: &og,
                routing: &or,
            },
            &cut,
            &g_cut,
            &o,
        )
        .unwrap();
        let (r, _) = reroute(
            RoutedFabric {
                fabric: &cut,
                graph: &g_cut,
                routing: &r_cut,
            },
            &f,
            &og,
            &o,
        )
        .unwrap();
        let lambda = |r: &Routing| {
            effective_bisection_bandwidth(&og, &r.lft, &spec)
                .unwrap()
                .lambda
        };
        let (now, fresh) = (lambda(&r), lambda(&or));
        eprintln!(
            "{name}: Λ after the repair {now:.4}, fresh {fresh:.4} ({:.1}%)",
            100.0 * now / fresh
        );
        assert!(now >= 0.99 * fresh, "{name}: {now} < 99% of {fresh}");
    }
}

/// Layers read back from a path-SL dump (CA sources only) and inferred for the other switches
/// stay acyclic, so an unchanged fabric re-routes incrementally and keeps everything.
#[test]
fn inferred_switch_layers_keep_the_layers_acyclic() {
    for name in ["ktree:6,3", "torus:4x4x4,2"] {
        let f = topo::by_name(name).unwrap();
        let (g, mut r) = full(&f, 8, EngineKind::Dfsssp);
        let Some(layers) = r.layers.as_mut() else {
            continue;
        };
        // What a dump does not say: the layers of switches without CAs.
        for s in 0..g.num_switches() as u32 {
            if g.terminal_count()[s as usize] == 0 {
                for d in g.dests() {
                    layers.set(s, d.lid, 0);
                }
            }
        }
        infer_switch_layers(&g, &mut r);
        let prev = RoutedFabric {
            fabric: &f,
            graph: &g,
            routing: &r,
        };
        let (_, st) = reroute(prev, &f, &g, &opts(8, EngineKind::Dfsssp))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(st.paths_rerouted, 0, "{name}");
    }
}

/// A failed switch replaced by a new one (another GUID, same place, same cables and CAs): the
/// re-route treats it as a repair, and the paths the old switch carried before its failure
/// take the short way through the new one again.
#[test]
fn a_replaced_switch_counts_as_a_repair() {
    let f = topo::by_name("torus:4x4x4,1").unwrap();
    let sw = f
        .nodes()
        .iter()
        .position(|n| n.kind == NodeKind::Switch && n.description.contains("1,1,1"))
        .unwrap();
    let old_guid = f.nodes()[sw].guid;
    // Without it: its links go, and so does its CA (nothing else holds it).
    let linked_to_sw = |l: &Link| l.a.node as usize == sw || l.b.node as usize == sw;
    let ca = f
        .links()
        .iter()
        .filter(|l| linked_to_sw(l))
        .map(|l| {
            if l.a.node as usize == sw {
                l.b.node
            } else {
                l.a.node
            }
        })
        .find(|&n| f.nodes()[n as usize].kind == NodeKind::Ca)
        .unwrap();
    let ca_guid = f.nodes()[ca as usize].guid;
    let cut = f.retain(|n| n.guid != old_guid && n.guid != ca_guid, |_| true);
    // The replacement: the same fabric with the switch's node GUID changed.
    let mut v = serde_json::to_value(&f).unwrap();
    let new_guid = old_guid | 0x00ab_0000_0000;
    v["nodes"][sw]["guid"] = new_guid.into();
    let replaced: Fabric = serde_json::from_value(v).unwrap();
    let o = opts(8, EngineKind::Dfsssp);
    let (og, or) = full(&f, 8, EngineKind::Dfsssp);
    let g_cut = SwitchGraph::new(&cut).unwrap();
    let g_new = SwitchGraph::new(&replaced).unwrap();
    let (r_cut, _) = reroute(
        RoutedFabric {
            fabric: &f,
            graph: &og,
            routing: &or,
        },
        &cut,
        &g_cut,
        &o,
    )
    .unwrap();
    let (r, st) = reroute(
        RoutedFabric {
            fabric: &cut,
            graph: &g_cut,
            routing: &r_cut,
        },
        &replaced,
        &g_new,
        &o,
    )
    .unwrap();
    verify::verify(&g_new, &r).unwrap();
    assert_eq!((st.switches_new, st.switches_gone), (1, 0));
    let hops = |g: &SwitchGraph, r: &Routing| {
        g.dests()
            .iter()
            .map(|d| {
                (0..g.num_switches() as u32)
                    .map(|s| u64::from(r.hops.get(s, d.lid)))
                    .sum::<u64>()
            })
            .sum::<u64>()
    };
    assert!(
        hops(&g_new, &r) <= hops(&og, &or),
        "{} > {}",
        hops(&g_new, &r),
        hops(&og, &or)
    );
}

/// A cable and a spine switch fail one after the other and return in reverse order (as
/// `e2e_reroute` does inside OpenSM): the trees balanced for three fabrics side by side measured
/// below a fresh computation, so the last repair follows the fresh routing everywhere. Λ ends
/// within 1% of a fresh computation's.
#[test]
fn faults_and_repairs_in_turn_end_near_a_fresh_computation() {
    use crate::metrics::{effective_bisection_bandwidth, BisectionSpec};
    let f = topo::by_name("ktree:4,3").unwrap();
    let top = top_switch(&f);
    let spine = f.nodes()[top as usize].guid;
    let link = switch_links(&f)
        .into_iter()
        .map(|i| f.links()[i])
        .find(|l| l.a.node != top && l.b.node != top)
        .unwrap();
    let no_link = without_links(&f, &[link]);
    let neither = no_link.retain(|n| n.guid != spine, |_| true);
    let o = opts(8, EngineKind::Dfsssp);
    let (mut g, mut r) = full(&f, 8, EngineKind::Dfsssp);
    let mut at = &f;
    let mut followed = Vec::new();
    for next in [&no_link, &neither, &no_link, &f] {
        let g2 = SwitchGraph::new(next).unwrap();
        let (r2, st) = reroute(
            RoutedFabric {
                fabric: at,
                graph: &g,
                routing: &r,
            },
            next,
            &g2,
            &o,
        )
        .unwrap();
        verify::verify(&g2, &r2).unwrap();
        followed.push(st.followed_fresh);
        (g, r, at) = (g2, r2, next);
    }
    let spec = BisectionSpec::new(200, 1);
    let (_, fresh) = full(&f, 8, EngineKind::Dfsssp);
    let lambda = |r: &Routing| {
        effective_bisection_bandwidth(&g, &r.lft, &spec)
            .unwrap()
            .lambda
    };
    let (now, fresh) = (lambda(&r), lambda(&fresh));
    eprintln!("Λ {now:.4}, fresh {fresh:.4}; followed the fresh routing: {followed:?}");
    assert!(now >= 0.99 * fresh, "{now} < 99% of {fresh}");
    assert!(
        !followed[0] && !followed[1],
        "faults never follow a fresh routing"
    );
}
