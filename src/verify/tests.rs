use super::*;

use crate::routing::{Lft, SwitchLidTable, NO_PATH};
use crate::testkit::{
    fabric, fabric_with, mesh2x2, ring, shortest_path_routing, with_graph, SwitchLink,
};

#[test]
fn shortest_paths_on_acyclic_fabrics_verify() {
    // A line of three switches cannot have a credit loop.
    let (_, g) = fabric(3, 2, &[((0, 1), (1, 2)), ((1, 1), (2, 2))]);
    let r = shortest_path_routing(&g);
    let rep = verify(&g, &r).unwrap();
    assert_eq!(rep.paths, 3 * g.dests().len() as u64);
    assert_eq!(rep.paths_per_layer, vec![rep.paths]);
    assert_eq!(rep.layers_used, 1);
    // Dependencies: 0->1->2 and 2->1->0.
    assert_eq!(rep.cdg_edges_per_layer, vec![2]);
    assert_eq!(rep.unreachable, 0);
}

#[test]
fn ring_with_shortest_paths_has_a_credit_loop() {
    // Domke et al. Fig. 2: 5-ring, two-hop routes all turn the same way.
    let (f, g) = with_graph(ring(5, 1, 0, true));
    let r = crate::sssp::route(&g);
    let err = verify(&g, &r).unwrap_err();
    let VerifyError::CreditLoop { layer, cycle } = &err else {
        panic!("{err}")
    };
    assert_eq!(*layer, 0);
    // The cycle must be a real cycle of channels: each one's head is the next one's tail.
    assert!(cycle.len() >= 2);
    for (i, h) in cycle.iter().enumerate() {
        let next = &cycle[(i + 1) % cycle.len()];
        assert_eq!(g.chan_head()[h.channel as usize], next.switch);
        assert_eq!(g.chan_tail()[h.channel as usize], h.switch);
        assert_eq!(g.chan_port()[h.channel as usize], h.port);
    }
    // In a 5-ring, the dependency cycle goes all the way round.
    assert_eq!(cycle.len(), 5);
    let text = err.describe(&f, &g);
    assert!(text.contains("0x0000000000000100 (s0) port"), "{text}");
    assert_eq!(text.matches(" -> ").count(), 5, "{text}");
}

#[test]
fn ring_split_over_two_layers_is_acyclic() {
    let (_, g) = with_graph(ring(5, 1, 0, true));
    let mut r = crate::sssp::route(&g);
    // Paths that turn at switch 0 go to layer 1: that cuts both directions' cycles.
    let mut layers = SwitchLidTable::new(g.num_switches(), g.max_lid(), 0);
    let mut moved = 0;
    for s in 0..5u32 {
        for d in g.dests() {
            let mut chans = Vec::new();
            let _ = walk(&g, &r.lft, s, d.lid, |c| chans.push(c));
            if chans.len() == 2 && g.chan_head()[chans[0] as usize] == 0 {
                layers.set(s, d.lid, 1);
                moved += 1;
            }
        }
    }
    assert!(moved > 0);
    r.layers = Some(layers);
    r.num_layers = 2;
    let rep = verify(&g, &r).unwrap();
    assert_eq!(rep.layers_used, 2);
    assert_eq!(rep.paths_per_layer[1], moved);
    assert_eq!(rep.paths, 5 * g.dests().len() as u64);
    // Layer 1: (4->0, 0->1) and (1->0, 0->4).
    assert_eq!(rep.cdg_edges_per_layer[1], 2);
    assert_eq!(rep.cdg_edges_per_layer[0], 8);
}

#[test]
fn layer_out_of_range_is_caught() {
    let (_, g) = fabric(2, 1, &[((0, 1), (1, 1))]);
    let mut r = shortest_path_routing(&g);
    let mut layers = SwitchLidTable::new(2, g.max_lid(), 0);
    layers.set(1, 3, 4);
    r.layers = Some(layers);
    r.num_layers = 2;
    let err = verify(&g, &r).unwrap_err();
    assert_eq!(
        err,
        VerifyError::BadLayer {
            count: 1,
            switch: 1,
            lid: 3,
            layer: 4,
            num_layers: 2
        }
    );
}

#[test]
fn forwarding_loop_missing_entry_and_dead_end_are_caught() {
    let (f, g) = mesh2x2(1);
    let good = shortest_path_routing(&g);
    verify(&g, &good).unwrap();
    let ca_lid = g
        .dests()
        .iter()
        .find(|d| d.exit_port != 0 && d.switch == 3)
        .unwrap()
        .lid;

    // Loop: 0 and 1 point at each other for the CA on switch 3.
    let mut r = good.clone();
    r.lft.set(
        0,
        ca_lid,
        g.chan_port()[g.channel_at(0, 1).unwrap() as usize],
    );
    r.lft.set(1, ca_lid, 2);
    let err = verify(&g, &r).unwrap_err();
    let VerifyError::Incomplete { count, first } = &err else {
        panic!("{err}")
    };
    assert!(*count >= 2);
    assert!(first
        .iter()
        .all(|p| p.lid == ca_lid && matches!(p.fault, RouteFault::Loop { .. })));
    assert!(err.describe(&f, &g).contains("forwarding loop"));

    // Missing entry at switch 2.
    let mut r = good.clone();
    r.lft.set(2, ca_lid, NO_PATH);
    let err = verify(&g, &r).unwrap_err();
    let VerifyError::Incomplete { count, first } = &err else {
        panic!("{err}")
    };
    assert_eq!(*count, 1);
    assert_eq!(
        first[0],
        PathFault {
            switch: 2,
            lid: ca_lid,
            fault: RouteFault::NoEntry { at: 2 }
        }
    );
    assert!(
        err.describe(&f, &g)
            .contains("no entry at 0x0000000000000102 (sw2)"),
        "{}",
        err.describe(&f, &g)
    );

    // Dead end: switch 3 sends its own CA's LID out of an unused port.
    let mut r = good.clone();
    r.lft.set(3, ca_lid, 20);
    let err = verify(&g, &r).unwrap_err();
    let VerifyError::Incomplete { count, first } = &err else {
        panic!("{err}")
    };
    assert_eq!(*count, 4, "every switch's path ends at switch 3");
    assert_eq!(first[0].fault, RouteFault::DeadEnd { at: 3, port: 20 });
}

#[test]
fn partitioned_fabric_is_not_a_fault_but_loops_are() {
    // Two islands: 0-1 and 2-3.
    let (_, g) = fabric(4, 1, &[((0, 1), (1, 1)), ((2, 1), (3, 1))]);
    let r = shortest_path_routing(&g);
    let rep = verify(&g, &r).unwrap();
    // Each switch misses the 2 switch LIDs and 2 CA LIDs of the other island.
    assert_eq!(rep.unreachable, 4 * 4);
    assert_eq!(rep.paths, 4 * 8);
    let mut r = r;
    let lid_on_3 = g.dests().iter().find(|d| d.switch == 3).unwrap().lid;
    r.lft.set(0, lid_on_3, 1);
    r.lft.set(1, lid_on_3, 1);
    assert!(matches!(
        verify(&g, &r),
        Err(VerifyError::Incomplete { .. })
    ));
}

#[test]
fn shape_mismatch_is_an_error_not_a_panic() {
    let (_, g) = fabric(2, 1, &[((0, 1), (1, 1))]);
    let mut r = shortest_path_routing(&g);
    r.lft = Lft::new(3, g.max_lid());
    assert!(matches!(verify(&g, &r), Err(VerifyError::Shape(_))));
    let mut r = shortest_path_routing(&g);
    r.layers = Some(SwitchLidTable::new(2, g.max_lid() + 1, 0));
    assert!(matches!(verify(&g, &r), Err(VerifyError::Shape(_))));
    let mut r = shortest_path_routing(&g);
    r.num_layers = 0;
    assert_eq!(verify(&g, &r), Err(VerifyError::NoLayers));
    // Tables shorter than the fabric's LIDs: those LIDs have no entry.
    let mut r = shortest_path_routing(&g);
    r.lft = Lft::new(2, 2);
    for s in 0..2u32 {
        for lid in 1..=2u16 {
            r.lft
                .set(s, lid, shortest_path_routing(&g).lft.port(s, lid));
        }
    }
    let err = verify(&g, &r).unwrap_err();
    assert!(
        matches!(err, VerifyError::Incomplete { count: 4, .. }),
        "{err}"
    );
}

#[test]
fn find_cdg_cycle_on_edge_lists() {
    assert_eq!(find_cdg_cycle(4, &[(0, 1), (1, 2), (2, 3)]), None);
    let c = find_cdg_cycle(5, &[(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)]).unwrap();
    let mut sorted = c.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![1, 2, 3]);
    for i in 0..c.len() {
        let (a, b) = (c[i], c[(i + 1) % c.len()]);
        assert!([(1, 2), (2, 3), (3, 1)].contains(&(a, b)));
    }
    assert_eq!(find_cdg_cycle(2, &[(1, 1)]), Some(vec![1]));
    assert_eq!(find_cdg_cycle(0, &[]), None);
}

#[test]
fn tiny_fat_tree_with_sssp_verifies() {
    // Leaves are switches 0..4 and spines 4..6 here: with the spines first (the kit's
    // fat_tree), SSSP's routes to switch LIDs close a loop, which another test relies on.
    let links: Vec<SwitchLink> = (0..4u32)
        .flat_map(|l| (0..2u32).map(move |s| ((l, 1 + s as u8), (4 + s, 1 + l as u8))))
        .collect();
    let (_, g) = fabric_with(&[3, 3, 3, 3, 0, 0], &links);
    let r = crate::sssp::route(&g);
    let rep = verify(&g, &r).unwrap();
    assert_eq!(rep.paths, 6 * g.dests().len() as u64);
    assert!(rep.cdg_edges_per_layer[0] > 0);
}

#[test]
fn sssp_has_credit_loops_dfsssp_layers_verify() {
    // Single-layer SSSP is not deadlock-free once switch-LID paths count, on fat trees too (a
    // middle switch reaches a sibling down and up again); the DFSSSP layers must verify.
    for spec in ["ktree:4,3", "torus:4x4,2", "random:16,8,3,20"] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let r = crate::sssp::route(&g);
        assert!(
            matches!(
                verify(&g, &r),
                Err(VerifyError::CreditLoop { layer: 0, .. })
            ),
            "{spec}"
        );
        for budget in [1u8, 4] {
            let mut d = r.clone();
            crate::dfsssp::make_deadlock_free(&g, &mut d, budget).unwrap();
            let rep = verify(&g, &d).unwrap_or_else(|e| panic!("{spec}: {}", e.describe(&f, &g)));
            assert_eq!(rep.paths, (g.num_switches() * g.dests().len()) as u64);
            assert!(rep.layers_used <= budget);
        }
    }
}

#[test]
fn loads_counted_while_verifying_equal_a_separate_count() {
    for (spec, budget) in [
        ("ktree:3,3", 1),
        ("torus:4x4,2", 4),
        ("random:16,8,3,30", 4),
    ] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = crate::sssp::route(&g);
        crate::dfsssp::make_deadlock_free(&g, &mut r, budget).unwrap();
        let mut rep = verify_and_load(&g, &r).unwrap();
        let loads = rep.channel_loads.take().unwrap();
        assert_eq!(loads, crate::balance::channel_loads(&g, &r.lft), "{spec}");
        assert!(loads.iter().any(|&l| l > 0), "{spec}");
        assert_eq!(
            rep,
            verify(&g, &r).unwrap(),
            "{spec}: the same report otherwise"
        );
    }
}

/// The variant of an error, with counts where they do not depend on the order of the search.
fn gist(r: &Result<VerifyReport, VerifyError>) -> String {
    match r {
        Ok(rep) => format!("{rep:?}"),
        Err(VerifyError::Incomplete { count, .. }) => format!("incomplete {count}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn trees_agree_with_walks_on_corrupted_tables() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut outcomes = std::collections::HashSet::new();
    for spec in ["torus:3x3,1", "mesh:3x4,2", "ktree:2,3", "random:10,6,2,14"] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let base = crate::sssp::route(&g);
        let mut layered = base.clone();
        crate::dfsssp::make_deadlock_free(&g, &mut layered, 3).unwrap();
        // Three layers: the trees check marks them per dependency slot (SLOT_LAYERS).
        assert!(
            super::SLOT_LAYERS.contains(&usize::from(layered.num_layers)),
            "{spec}: {} layers",
            layered.num_layers
        );
        let ns = g.num_switches() as u32;
        let mut paths = DestPaths::new(ns as usize);
        for trial in 0..60 {
            let mut r = if trial % 2 == 0 {
                base.clone()
            } else {
                layered.clone()
            };
            for _ in 0..trial % 4 {
                let s = rng.gen_range(0..ns);
                let lid = g.dests()[rng.gen_range(0..g.dests().len())].lid;
                let ports = g.port_base()[s as usize + 1] - g.port_base()[s as usize];
                let p = if rng.gen_bool(0.2) {
                    NO_PATH
                } else {
                    rng.gen_range(0..ports) as u8
                };
                r.lft.set(s, lid, p);
            }
            if let Some(l) = r.layers.as_mut() {
                for _ in 0..trial % 3 {
                    let lid = g.dests()[rng.gen_range(0..g.dests().len())].lid;
                    l.set(rng.gen_range(0..ns), lid, rng.gen_range(0..3));
                }
            }
            // Every switch's resolved path equals its walk.
            for d in g.dests() {
                paths.resolve(&g, &r.lft, d);
                paths.compute_order();
                for s in 0..ns {
                    let mut chans = Vec::new();
                    let end = walk(&g, &r.lft, s, d.lid, |c| chans.push(c));
                    let got = paths.end[s as usize];
                    if let Err(RouteFault::Loop { .. }) = end {
                        assert!(
                            matches!(got, Err(RouteFault::Loop { .. })),
                            "{spec} {s} {}",
                            d.lid
                        );
                        continue;
                    }
                    assert_eq!(got, end, "{spec}: switch {s} LID {}", d.lid);
                    let mut at = s;
                    let mut mine = Vec::new();
                    while paths.next[at as usize] != NO_CHANNEL {
                        mine.push(paths.next[at as usize]);
                        at = g.chan_head()[paths.next[at as usize] as usize];
                    }
                    assert_eq!(mine, chans);
                    assert_eq!(paths.hops[s as usize] as usize, chans.len());
                }
                // Leaves first: each switch after every switch that forwards into it.
                let mut pos = vec![usize::MAX; ns as usize];
                for (i, &u) in paths.order.iter().enumerate() {
                    pos[u as usize] = i;
                }
                for &u in &paths.order {
                    let c = paths.next[u as usize];
                    if c != NO_CHANNEL {
                        assert!(pos[u as usize] < pos[g.chan_head()[c as usize] as usize]);
                    }
                }
            }
            let (a, b) = (
                verify_with(&g, &r, Method::Trees, Loads::Skip),
                verify_with(&g, &r, Method::Walks, Loads::Skip),
            );
            assert_eq!(gist(&a), gist(&b), "{spec} trial {trial}");
            outcomes.insert(gist(&a).split_whitespace().next().unwrap_or("").to_string());
        }
    }
    // The corruptions reached the interesting outcomes.
    for want in ["VerifyReport", "incomplete", "credit"] {
        assert!(outcomes.iter().any(|o| o.starts_with(want)), "{outcomes:?}");
    }
}

/// The peeling check agrees with petgraph's cycle test on random graphs, self-loops, repeated
/// and out-of-range edges included.
#[test]
fn peeling_agrees_with_petgraph() {
    use petgraph::algo::is_cyclic_directed;
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut cyclic = 0;
    for _ in 0..2000 {
        let n = rng.gen_range(0..12usize);
        let m = rng.gen_range(0..20usize);
        let edges: Vec<(u32, u32)> = (0..m)
            .map(|_| (rng.gen_range(0..14u32), rng.gen_range(0..14u32)))
            .collect();
        let mut graph = petgraph::graph::DiGraph::<(), ()>::new();
        let nodes: Vec<_> = (0..n).map(|_| graph.add_node(())).collect();
        for &(a, b) in &edges {
            if (a as usize) < n && (b as usize) < n {
                graph.add_edge(nodes[a as usize], nodes[b as usize], ());
            }
        }
        let expect = !is_cyclic_directed(&graph);
        assert_eq!(peels_to_nothing(n, &edges), expect, "{n} {edges:?}");
        assert_eq!(find_cdg_cycle(n, &edges).is_none(), expect, "{n} {edges:?}");
        cyclic += usize::from(!expect);
    }
    assert!(cyclic > 200, "both answers tried ({cyclic} cyclic)");
}
