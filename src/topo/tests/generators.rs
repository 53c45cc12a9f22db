//! The generators' shapes: node, link and port counts, conventions, parameter errors, specs.

use super::*;

#[test]
fn kary_ntree_counts() {
    let f = kary_ntree(&KaryNTreeParams {
        k: 4,
        n: 3,
        opts: TreeOptions::default(),
        lmc: 0,
    })
    .unwrap();
    assert_eq!(counts(&f), (48, 64, 2 * 16 * 4, 64));
    assert_connected(&f);
    let used = ports_used(&f);
    // leaves and middle switches use all 8 ports, the 16 top switches 4
    for (i, n) in f.nodes().iter().enumerate() {
        assert_eq!(n.num_ports, if n.kind == NodeKind::Switch { 8 } else { 1 });
        let want = if n.kind == NodeKind::Ca {
            1
        } else if n.description.starts_with("ktree L3") {
            4
        } else {
            8
        };
        assert_eq!(used[i], want, "{}", n.description);
    }
    // leaf-to-leaf distance at most 2(n-1)
    let g = SwitchGraph::new(&f).unwrap();
    let leaf0 = g.node_switch()[0];
    let d = g.bfs_distances_to(leaf0);
    assert_eq!(*d.iter().max().unwrap(), 4);
}

#[test]
fn kary_ntree_18_3_matches_the_paper_size() {
    let f = kary_ntree(&KaryNTreeParams {
        k: 18,
        n: 3,
        opts: TreeOptions::default(),
        lmc: 0,
    })
    .unwrap();
    let (s, c, ss, cl) = counts(&f);
    assert_eq!((s, c, cl), (972, 5832, 5832));
    assert_eq!(ss, 2 * 324 * 18);
    assert_connected(&f);
}

#[test]
fn xgft_with_multiport_cas() {
    // XGFT(2; 2,3; 2,2): 6 CAs with 2 ports, level 1: 3*2 = 6 switches, level 2: 2*2 = 4
    let f = xgft(&XgftParams {
        m: vec![2, 3],
        w: vec![2, 2],
        radix: None,
        opts: TreeOptions::default(),
        lmc: 1,
    })
    .unwrap();
    assert_eq!(counts(&f), (10, 6, 6 * 2, 12));
    assert_eq!(xgft_level_sizes(&[2, 3], &[2, 2]), vec![6, 6, 4]);
    // w_1 = 2: two disjoint switch planes (rails), joined only through the dual-port CAs
    let g = SwitchGraph::new(&f).unwrap();
    let d = g.bfs_distances_to(0);
    assert_eq!(d.iter().filter(|&&x| x != u32::MAX).count(), 5);
    assert_eq!(g.terminals().len(), 12);
    let ca = f
        .nodes()
        .iter()
        .position(|n| n.kind == NodeKind::Ca)
        .unwrap() as u32;
    let eps: Vec<_> = f.endpoints().iter().filter(|e| e.node == ca).collect();
    assert_eq!(eps.len(), 2);
    for e in eps {
        assert_eq!(e.port_guid, f.nodes()[ca as usize].guid + u64::from(e.port));
        assert_eq!(e.lmc, 1);
        assert_eq!(e.base_lid % 2, 0);
    }
}

#[test]
fn fat_trees() {
    let f = fat_tree2(&FatTreeParams {
        radix: 36,
        down: None,
        opts: TreeOptions::default(),
        lmc: 0,
    })
    .unwrap();
    assert_eq!(counts(&f), (54, 648, 648, 648));
    assert!(ports_used(&f)
        .iter()
        .zip(f.nodes())
        .all(|(&u, n)| u == usize::from(n.num_ports)));
    let f = fat_tree2(&FatTreeParams::with_ratio(36, 2, 1, 0).unwrap()).unwrap();
    assert_eq!(counts(&f), (36 + 12, 36 * 24, 36 * 12, 36 * 24));
    assert!(FatTreeParams::with_ratio(36, 5, 2, 0).is_err());
    assert!(fat_tree2(&FatTreeParams {
        radix: 36,
        down: Some(36),
        opts: TreeOptions::default(),
        lmc: 0
    })
    .is_err());
    let f = fat_tree3(&FatTreeParams {
        radix: 36,
        down: None,
        opts: TreeOptions::default(),
        lmc: 0,
    })
    .unwrap();
    assert_eq!(counts(&f), (1620, 11664, 2 * 11664, 11664));
    assert_connected(&f);
}

#[test]
fn tori_and_meshes() {
    let f = by_name("torus:6x6x6,4").unwrap();
    assert_eq!(counts(&f), (216, 864, 3 * 216, 864));
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 10));
    assert!(ports_used(&f)
        .iter()
        .zip(f.nodes())
        .all(|(&u, n)| u == usize::from(n.num_ports)));
    assert_connected(&f);
    let f = by_name("mesh:4x4,2").unwrap();
    assert_eq!(counts(&f), (16, 32, 24, 32));
    assert_connected(&f);
    // a ring of 2 has one neighbour pair; par=2 doubles every pair
    let f = by_name("torus:2x3,1,par=2").unwrap();
    assert_eq!(counts(&f), (6, 6, 2 * (3 + 6), 6));
    assert_connected(&f);
    let f = by_name("torus:5,0").unwrap();
    assert_eq!(counts(&f), (5, 0, 5, 0));
}

#[test]
fn hypercube_kautz_dragonfly() {
    let f = by_name("hypercube:5,2").unwrap();
    assert_eq!(counts(&f), (32, 64, 80, 64));
    assert_connected(&f);
    let g = SwitchGraph::new(&f).unwrap();
    assert_eq!(*g.bfs_distances_to(0).iter().max().unwrap(), 5);

    let f = by_name("kautz:2,3,4").unwrap();
    assert_eq!(counts(&f), (12, 48, 24, 48));
    assert!(ports_used(&f)
        .iter()
        .zip(f.nodes())
        .all(|(&u, n)| u == usize::from(n.num_ports)));
    assert_connected(&f);
    // Kautz K(2,3) has diameter 3 as a directed graph, so at most 3 as an undirected one
    let g = SwitchGraph::new(&f).unwrap();
    for s in 0..12 {
        assert!(*g.bfs_distances_to(s).iter().max().unwrap() <= 3);
    }

    // K(1, n): two vertices whatever n, joined by two opposite arcs = two parallel links
    let f = by_name("kautz:1,60,1").unwrap();
    assert_eq!(counts(&f), (2, 2, 2, 2));
    assert!(by_name("kautz:2,70").is_err());

    let f = by_name("dragonfly:4,2,2,9").unwrap();
    assert_eq!(counts(&f), (36, 72, 9 * 6 + 36, 72));
    assert!(ports_used(&f)
        .iter()
        .zip(f.nodes())
        .all(|(&u, n)| u == usize::from(n.num_ports)));
    let g = SwitchGraph::new(&f).unwrap();
    // local, global, local: diameter 3
    for s in 0..36 {
        assert!(*g.bfs_distances_to(s).iter().max().unwrap() <= 3);
    }
    // fewer groups: pairs of groups share several links, still connected
    let f = by_name("dragonfly:4,1,2,3").unwrap();
    assert_eq!(counts(&f).2, 3 * 6 + 12);
    assert_connected(&f);
}

#[test]
fn random_is_connected_seeded_and_exact() {
    let f = by_name("random:128,32,16,300,seed=1").unwrap();
    assert_eq!(counts(&f), (128, 2048, 300, 2048));
    assert_connected(&f);
    let mut pairs = std::collections::HashSet::new();
    for l in f
        .links()
        .iter()
        .filter(|l| l.a.node < 128 && l.b.node < 128)
    {
        assert!(
            pairs.insert((l.a.node.min(l.b.node), l.a.node.max(l.b.node))),
            "parallel link"
        );
    }
    let again = by_name("random:128,32,16,300,seed=1").unwrap();
    assert_eq!(again.links(), f.links());
    let other = by_name("random:128,32,16,300,seed=2").unwrap();
    assert_ne!(other.links(), f.links());
    // a dense one that must use parallel links: 4 switches, 6 pairs, 10 links
    let f = by_name("random:4,8,1,10,parallel").unwrap();
    assert_eq!(counts(&f).2, 10);
    assert!(by_name("random:4,8,1,10").is_err());
    assert!(
        by_name("random:10,4,3,9").is_err(),
        "1 free port per switch cannot connect 10"
    );
}

#[test]
fn guid_and_lid_conventions() {
    let f = by_name("hypercube:2,2,lmc=2").unwrap();
    let sw: Vec<_> = f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .collect();
    assert_eq!(sw[3].guid, SWITCH_GUID_BASE + 3);
    let cas: Vec<_> = f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Ca)
        .collect();
    assert_eq!(cas[5].guid, CA_GUID_BASE + (5 << CA_GUID_SHIFT));
    assert_eq!(cas[5].description, "H-5");
    let mut lids: Vec<(u16, u8)> = f.endpoints().iter().map(|e| (e.base_lid, e.lmc)).collect();
    lids.sort();
    // switches 1..=4 with LMC 0, then CAs at 8, 12, ...
    assert_eq!(&lids[..5], &[(1, 0), (2, 0), (3, 0), (4, 0), (8, 2)]);
    assert_eq!(lids.last(), Some(&(8 + 7 * 4, 2)));
    assert_eq!(f.max_lid(), 8 + 7 * 4 + 3);
}

#[test]
fn bad_params_are_errors_not_panics() {
    for spec in [
        "ktree:0,3",
        "ktree:200,2",
        "ktree:18,30",
        "xgft:2;18;1,18",
        "xgft:2;0,3;1,1",
        "fattree2:1",
        "fattree3:35",
        "torus:0x4",
        "torus:6x6,300",
        "mesh:4x4,2,par=0",
        "hypercube:20",
        "kautz:0,3",
        "kautz:9,9,1",
        "dragonfly:4,2,2,10",
        "random:0,4,1,0",
        "random:10,8,2,5",
        "random:100000,8,2,100000",
        "ktree:4,3,lmc=8",
        "ktree:8,3,lmc=7",
        "nosuch:1",
        "torus",
        "torus:4x4,2,bogus=1",
        "ktree:a,b",
        "ktree:18,3,lmc",
        "torus:4x4,par=2,2",
        "",
        ":",
    ] {
        assert!(by_name(spec).is_err(), "{spec} should be rejected");
    }
    // LMC 7 on an 8-ary 3-tree would need 512 * 128 LIDs
    assert!(matches!(
        by_name("ktree:8,3,lmc=7"),
        Err(TopoError::TooManyLids { .. })
    ));
    by_name("ktree:4,3,lmc=7").unwrap();
    // a generator's complaint names the spec it came from
    let e = by_name("torus:0x4").unwrap_err().to_string();
    assert!(e.contains("\"torus:0x4\"") && e.contains("torus: "), "{e}");
}

#[test]
fn spec_examples_in_the_grammar_build() {
    for spec in [
        "ktree:18,3",
        "xgft:2;18,36;1,18",
        "fattree2:36,2:1",
        "torus:6x6x6,4",
        "mesh:4x4,2,par=2",
        "hypercube:5,2",
        "kautz:2,3,4",
        "dragonfly:4,2,2,9",
        "random:128,32,16,300,seed=1,lmc=2",
        "fattree2:36,2:1,bundle=2,uneven=14",
        "ktree:8,3,aggr",
        "xgft:2;4,4;1,4,bundle=3",
        "director:16,9,2,16-18,shuffle=1",
        "edgedirector:2,4,2,8,4,12",
        "rail:4,8,4,16",
    ] {
        assert!(SPEC_GRAMMAR.contains(spec), "{spec} not documented");
        by_name(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
    // xgft:2;18,36;1,18 is the 2-level 36-port fat tree
    let a = by_name("xgft:2;18,36;1,18").unwrap();
    let b = by_name("fattree2:36").unwrap();
    assert_eq!(a.links(), b.links());
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// A generated fabric is internally consistent: every link within port ranges (the builder
    /// checks), every CA port has a LID, the switch graph builds.
    fn consistent(f: &Fabric) -> Result<(), TestCaseError> {
        let g = SwitchGraph::new(f).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let ca_ports: usize = f
            .nodes()
            .iter()
            .filter(|n| n.kind != NodeKind::Switch)
            .map(|n| usize::from(n.num_ports))
            .sum();
        prop_assert_eq!(f.endpoints().len(), f.switch_count() + ca_ports);
        prop_assert_eq!(g.num_channels() % 2, 0);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn generators_never_panic(which in 0u8..12, a in 0u32..12, b in 0u32..12, c in 0u32..6, d in 0u32..40, lmc in 0u8..9, seed in any::<u64>(), flag in any::<bool>(), o in 0u32..64) {
            // tree options: plain half the time, else bundles 0..=7, uneven, aggregation nodes
            let opts = if o < 32 {
                TreeOptions::default()
            } else {
                TreeOptions { bundle: o % 8, uneven: (o % 3 == 0).then_some(b % 6), seed, aggr: o % 5 < 2 }
            };
            let r = match which {
                0 => xgft(&XgftParams { m: vec![a, b], w: vec![c.max(1), a], radix: (o % 7 == 0).then_some(d), opts, lmc }),
                1 => kary_ntree(&KaryNTreeParams { k: a, n: c, opts, lmc }),
                2 => fat_tree2(&FatTreeParams { radix: d, down: Some(a), opts, lmc }),
                8 => fat_tree3(&FatTreeParams { radix: d % 14, down: (a > 0).then_some(a), opts, lmc }),
                9 => director(&DirectorParams { leaves: a, spines: b, bundle: c + o % 3, cas: d % 20, cas_max: d % 20 + o % 4, radix: (o % 5 == 0).then_some(d), seed, lmc }),
                10 => edge_director(&EdgeDirectorParams { chassis: c, leaves: a, spines: b % 4, edges: d % 10, uplinks: o % 8, cas: o % 20, radix: (o % 5 == 0).then_some(d), lmc }),
                11 => rail(&RailParams { planes: c, leaves: a, spines: b, cas: d, radix: if o % 2 == 0 { 65 } else { o + d }, lmc }),
                3 => torus(&TorusParams { dims: vec![a, b], cas_per_switch: c, links_per_pair: c % 3, wrap: flag, lmc }),
                4 => hypercube(&HypercubeParams { dim: a, cas_per_switch: c, links_per_pair: 1 + b % 2, lmc }),
                5 => kautz(&KautzParams { degree: a % 4, diameter: c, cas_per_switch: b % 3, lmc }),
                6 => dragonfly(&DragonflyParams { a, p: c, h: b % 4, g: d % 20, lmc }),
                _ => random(&RandomParams { switches: a * 3, ports: b + 2, cas_per_switch: c, links: d, seed, parallel: flag, lmc }),
            };
            if let Ok(f) = r {
                prop_assert!(lmc <= 7);
                consistent(&f)?;
                if which >= 9 {
                    let g = SwitchGraph::new(&f).unwrap();
                    prop_assert!(g.bfs_distances_to(0).iter().all(|&x| x != u32::MAX), "must be connected");
                }
                if which == 11 {
                    prop_assert_eq!(assert_aggregation_nodes(&f), f.switch_count());
                }
                if which <= 2 || which == 8 {
                    prop_assert!(opts.bundle >= 1 && opts.bundle <= MAX_BUNDLE);
                    let ans = f.nodes().iter().filter(|n| n.description == AGGREGATION_NODE_DESC).count();
                    prop_assert_eq!(ans, if opts.aggr { f.switch_count() } else { 0 });
                }
                if which == 7 {
                    prop_assert_eq!(counts(&f).2, d as usize);
                    let g = SwitchGraph::new(&f).unwrap();
                    prop_assert!(g.bfs_distances_to(0).iter().all(|&x| x != u32::MAX), "random must be connected");
                }
            }
        }
    }
}
#[test]
fn random_fabric_has_the_requested_shape() {
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let f = random_irregular(100, 16, 8, &mut rng).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        assert_eq!(g.num_switches(), 16);
        assert_eq!(
            g.num_channels(),
            16 * 8,
            "64 links, average degree exactly 8"
        );
        assert_eq!(g.terminals().len(), 100);
        assert_eq!(g.terminal_count().iter().sum::<u32>(), 100);
        assert!(
            g.bfs_distances_to(0).iter().all(|&d| d != u32::MAX),
            "connected"
        );
        // Simple graph: no parallel links, no self-links.
        for s in 0..16u32 {
            let mut heads: Vec<u32> = g
                .out_channels(s)
                .map(|c| g.chan_head()[c as usize])
                .collect();
            heads.sort_unstable();
            heads.dedup();
            assert_eq!(heads.len(), g.out_channels(s).len());
            assert!(!heads.contains(&s));
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    assert!(
        random_irregular(10, 4, 8, &mut rng).is_err(),
        "degree 8 needs more than 4 switches"
    );
    assert!(
        random_irregular(10, 16, 1, &mut rng).is_err(),
        "8 links cannot connect 16 switches"
    );
}
