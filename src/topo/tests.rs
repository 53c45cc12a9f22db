use super::*;
use crate::fabric::NodeKind;
use crate::graph::SwitchGraph;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// (switches, CAs, switch-switch links, CA links)
fn counts(f: &Fabric) -> (usize, usize, usize, usize) {
    let sw = |n: u32| f.nodes()[n as usize].kind == NodeKind::Switch;
    let ss = f
        .links()
        .iter()
        .filter(|l| sw(l.a.node) && sw(l.b.node))
        .count();
    (
        f.switch_count(),
        f.terminal_node_count(),
        ss,
        f.links().len() - ss,
    )
}

fn assert_connected(f: &Fabric) {
    let g = SwitchGraph::new(f).unwrap();
    let d = g.bfs_distances_to(0);
    assert!(d.iter().all(|&x| x != u32::MAX), "fabric is not connected");
    assert_eq!(
        g.terminals().len(),
        f.endpoints().len() - f.switch_count(),
        "every CA port attached"
    );
}

/// Ports in use per node, and the largest.
fn ports_used(f: &Fabric) -> Vec<usize> {
    let mut used = vec![0usize; f.nodes().len()];
    for l in f.links() {
        used[l.a.node as usize] += 1;
        used[l.b.node as usize] += 1;
    }
    used
}

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

/// The multiset of (description, description) pairs of the links: the graph, blind to GUIDs,
/// node order and port numbers.
fn link_pairs(f: &Fabric) -> Vec<(String, String)> {
    let d = |n: u32| f.nodes()[n as usize].description.clone();
    let mut v: Vec<_> = f
        .links()
        .iter()
        .map(|l| {
            let (a, b) = (d(l.a.node), d(l.b.node));
            if a <= b {
                (a, b)
            } else {
                (b, a)
            }
        })
        .collect();
    v.sort();
    v
}

#[test]
fn shuffle_keeps_the_graph_and_renumbers_ports_and_nodes() {
    let plain = by_name("fattree2:12,2:1,lmc=1").unwrap();
    let a = by_name("fattree2:12,2:1,lmc=1,shuffle=7").unwrap();
    let b = by_name("fattree2:12,2:1,lmc=1,shuffle=7").unwrap();
    let c = by_name("fattree2:12,2:1,lmc=1,shuffle=8").unwrap();
    assert_eq!(a.canonical(), b.canonical(), "same seed, same fabric");
    assert_ne!(a.canonical(), c.canonical(), "another seed, other wiring");
    assert_eq!(link_pairs(&plain), link_pairs(&a), "same graph");
    assert_eq!(counts(&plain), counts(&a));
    assert_connected(&a);
    // Every LID-bearing port keeps its LMC; LIDs stay dense and aligned.
    assert_eq!(a.endpoints().len(), plain.endpoints().len());
    assert!(a.endpoints().iter().all(|e| e.port == 0 || e.lmc == 1));
    // Ports really move: in structural order a leaf's CAs sit on its lowest ports.
    let moved = a
        .links()
        .iter()
        .flat_map(|l| [l.a, l.b])
        .filter(|p| a.nodes()[p.node as usize].kind == NodeKind::Switch)
        .zip(
            plain
                .links()
                .iter()
                .flat_map(|l| [l.a, l.b])
                .filter(|p| plain.nodes()[p.node as usize].kind == NodeKind::Switch),
        )
        .filter(|(x, y)| x.port != y.port)
        .count();
    assert!(moved > 0);
    let descs = |f: &Fabric| {
        f.nodes()
            .iter()
            .map(|n| n.description.clone())
            .collect::<Vec<_>>()
    };
    assert_ne!(descs(&plain), descs(&a), "nodes in another order");
    assert!(
        by_name("ktree:4,2,shuffle").is_err(),
        "shuffle needs a seed"
    );
}

/// Cables between each pair of switches (node ids, lower first).
fn switch_pair_cables(f: &Fabric) -> std::collections::BTreeMap<(u32, u32), usize> {
    let sw = |n: u32| f.nodes()[n as usize].kind == NodeKind::Switch;
    let mut m = std::collections::BTreeMap::new();
    for l in f.links().iter().filter(|l| sw(l.a.node) && sw(l.b.node)) {
        let k = (l.a.node.min(l.b.node), l.a.node.max(l.b.node));
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// The CAs of each switch whose description starts with `prefix`, by port: (switch node, port).
fn cas_on(f: &Fabric, switch_prefix: &str) -> Vec<(u32, Vec<u8>)> {
    let t = f.port_table();
    f.nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Switch && n.description.starts_with(switch_prefix))
        .map(|(i, n)| {
            let ports = (1..=n.num_ports)
                .filter(|&p| {
                    t.remote(i, p).is_some_and(|r| {
                        let peer = &f.nodes()[r.node as usize];
                        peer.kind == NodeKind::Ca
                            && !peer.description.starts_with(AGGREGATION_NODE_DESC)
                    })
                })
                .collect();
            (i as u32, ports)
        })
        .collect()
}

/// Every switch has exactly one aggregation node (a 1-port CA), on its highest port; every
/// aggregation node hangs off a switch. Returns how many there are.
fn assert_aggregation_nodes(f: &Fabric) -> usize {
    let t = f.port_table();
    let mut seen = 0;
    for (i, n) in f.nodes().iter().enumerate() {
        if n.kind == NodeKind::Switch {
            let ans: Vec<u8> = (1..=n.num_ports)
                .filter(|&p| {
                    t.remote(i, p).is_some_and(|r| {
                        f.nodes()[r.node as usize].description == AGGREGATION_NODE_DESC
                    })
                })
                .collect();
            assert_eq!(
                ans,
                vec![n.num_ports],
                "{}: aggregation node ports",
                n.description
            );
        } else if n.description.starts_with(AGGREGATION_NODE_DESC) {
            assert_eq!(n.kind, NodeKind::Ca);
            assert_eq!(n.num_ports, 1);
            let r = t.remote(i, 1).expect("aggregation node linked");
            assert_eq!(f.nodes()[r.node as usize].kind, NodeKind::Switch);
            seen += 1;
        }
    }
    assert_eq!(seen, f.switch_count(), "one aggregation node per switch");
    seen
}

#[test]
fn bundles_are_parallel_cables() {
    // 36-port switches kept full: 18 leaves (24 CAs, 12 uplinks), 6 spines, 2 cables per pair
    let f = by_name("fattree2:36,2:1,bundle=2").unwrap();
    assert_eq!(counts(&f), (24, 18 * 24, 18 * 12, 18 * 24));
    assert_connected(&f);
    assert!(ports_used(&f)
        .iter()
        .zip(f.nodes())
        .all(|(&u, n)| u == usize::from(n.num_ports)));
    let pairs = switch_pair_cables(&f);
    assert_eq!(pairs.len(), 18 * 6);
    assert!(pairs.values().all(|&c| c == 2));
    // the two cables of a bundle land on neighbouring ports at both ends
    let leaf0 = f.links().iter().filter(|l| {
        let d = |n: u32| f.nodes()[n as usize].description.clone();
        d(l.a.node) == "ftree L1 S0" && d(l.b.node) == "ftree L2 S0"
            || d(l.b.node) == "ftree L1 S0" && d(l.a.node) == "ftree L2 S0"
    });
    let mut ports: Vec<u8> = leaf0
        .map(|l| {
            if f.nodes()[l.a.node as usize].description == "ftree L1 S0" {
                l.a.port
            } else {
                l.b.port
            }
        })
        .collect();
    ports.sort();
    assert_eq!(ports, vec![25, 26]);

    // k-ary n-tree: 16-port switches kept, a leaf reaches 4 level-2 switches by 2 cables each;
    // level 2 to 3 stays single
    let f = by_name("ktree:8,3,bundle=2").unwrap();
    assert_eq!(counts(&f), (96, 256, 512, 256));
    assert_connected(&f);
    let pairs = switch_pair_cables(&f);
    let level = |n: u32| f.nodes()[n as usize].description[7..8].to_string();
    for (&(a, b), &c) in &pairs {
        let want = if level(a) == "1" || level(b) == "1" {
            2
        } else {
            1
        };
        assert_eq!(c, want, "{} - {}", level(a), level(b));
    }
    // 3 levels: pods of 2 leaves (8 ports: 4 CAs, 2 aggregation switches x 2 cables)
    let f = by_name("fattree3:8,bundle=2").unwrap();
    assert_eq!(counts(&f), (40, 64, 128, 64));
    assert_connected(&f);
    assert!(ports_used(&f)
        .iter()
        .zip(f.nodes())
        .all(|(&u, n)| u == usize::from(n.num_ports)));
    // xgft: the radix grows to what the bundles need (4 CAs + 4 parents x 3 cables = 16) ...
    let f = by_name("xgft:2;4,4;1,4,bundle=3").unwrap();
    assert_eq!(counts(&f), (8, 16, 48, 16));
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 16));
    assert!(switch_pair_cables(&f).values().all(|&c| c == 3));
    // ... or a given radix must hold them
    by_name("xgft:2;4,4;1,4,bundle=3,radix=16").unwrap();
    let e = by_name("xgft:2;4,4;1,4,bundle=3,radix=12")
        .unwrap_err()
        .to_string();
    assert!(e.contains("radix 12 < the 16 ports"), "{e}");
    // bundle=1 is the plain tree
    assert_eq!(
        by_name("ktree:4,3,bundle=1").unwrap().canonical(),
        by_name("ktree:4,3").unwrap().canonical()
    );
}

#[test]
fn impossible_bundles_and_radices_are_errors() {
    for (spec, why) in [
        (
            "fattree2:8,bundle=6",
            "4 uplinks per leaf, fewer than one bundle",
        ),
        ("fattree2:36,bundle=5", "18 uplinks per leaf do not split"),
        (
            "fattree2:36,2:1,bundle=5",
            "12 uplinks per leaf do not split",
        ),
        ("fattree3:12,bundle=4", "6 uplinks per leaf do not split"),
        ("fattree2:36,bundle=7", "1..=6"),
        ("fattree2:36,bundle=0", "1..=6"),
        ("ktree:8,1,bundle=2", "no switches above"),
        ("ktree:6,2,bundle=4", "6 uplinks per leaf do not split"),
        ("xgft:1;4;1,bundle=2", "no switches above"),
        ("xgft:2;4,4;1,4,radix=7", "radix 7 < the 8 ports"),
        ("xgft:2;100,100;1,100,bundle=2", "at most 254"),
        ("fattree2:254,aggr", "255 ports"),
        ("fattree2:36,aggr=1", "takes no value"),
        ("fattree2:36,bundle", "needs a value"),
    ] {
        let e = by_name(spec).unwrap_err().to_string();
        assert!(e.contains(&format!("\"{spec}\"")), "{spec}: {e}");
        assert!(e.contains(why), "{spec}: {e}");
    }
}

#[test]
fn uneven_leaves_spread_within_bounds() {
    let spec = "fattree2:36,2:1,bundle=2,uneven=14";
    let f = by_name(spec).unwrap();
    assert_connected(&f);
    let leaves = cas_on(&f, "ftree L1");
    assert_eq!(leaves.len(), 18);
    let per: Vec<usize> = leaves.iter().map(|(_, p)| p.len()).collect();
    assert!(per.iter().all(|&c| (14..=24).contains(&c)), "{per:?}");
    assert!(per.contains(&14) && per.contains(&24), "{per:?}");
    assert_eq!(f.terminal_node_count(), per.iter().sum::<usize>());
    // a leaf's CAs on its lowest ports; the ports up to 24 stay free, the uplinks stay at 25..=36
    let used = ports_used(&f);
    for (sw, ports) in &leaves {
        assert_eq!(*ports, (1..=ports.len() as u8).collect::<Vec<_>>());
        assert_eq!(used[*sw as usize], ports.len() + 12);
    }
    assert!(switch_pair_cables(&f).values().all(|&c| c == 2));
    // seeded: the same spec gives the same fabric, another seed another spread
    assert_eq!(by_name(spec).unwrap().canonical(), f.canonical());
    let g = by_name(&format!("{spec},seed=2")).unwrap();
    let per2: Vec<usize> = cas_on(&g, "ftree L1")
        .iter()
        .map(|(_, p)| p.len())
        .collect();
    assert_ne!(per, per2);
    assert!(per2.contains(&14) && per2.contains(&24));
    // both ends on every seed, down to leaves without CAs
    for seed in 0..20 {
        let f = by_name(&format!("ktree:4,2,uneven=0,seed={seed}")).unwrap();
        let per: Vec<usize> = cas_on(&f, "ktree L1")
            .iter()
            .map(|(_, p)| p.len())
            .collect();
        assert!(per.contains(&0) && per.contains(&4), "seed {seed}: {per:?}");
        assert_connected(&f);
    }
    // uneven=D: every leaf full, the plain tree
    assert_eq!(
        by_name("fattree2:12,uneven=6").unwrap().canonical(),
        by_name("fattree2:12").unwrap().canonical()
    );
    assert_refused(&[
        ("fattree2:8,uneven=5", "more than the 4"),
        ("xgft:1;4;1,uneven=2", "needs two leaves"),
        ("xgft:2;4,4;2,2,uneven=2", "single-port CAs"),
        ("fattree2:8,uneven", "needs a value"),
    ]);
}

#[test]
fn aggregation_nodes_on_every_tree_switch() {
    let plain = by_name("ktree:8,3").unwrap();
    let f = by_name("ktree:8,3,aggr").unwrap();
    assert_eq!(counts(&f), (192, 512 + 192, 2 * 64 * 8, 512 + 192));
    assert_eq!(assert_aggregation_nodes(&f), 192);
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 17));
    assert_connected(&f);
    // the hosts keep their GUIDs and LIDs: the aggregation nodes come after them
    let hosts = |f: &Fabric| {
        f.endpoints()
            .iter()
            .filter(|e| f.nodes()[e.node as usize].description.starts_with("H-"))
            .map(|e| (e.port_guid, e.base_lid))
            .collect::<Vec<_>>()
    };
    assert_eq!(hosts(&f), hosts(&plain));
    // shuffled wiring keeps them on the last port (inside the switch, no cable)
    let s = by_name("ktree:8,3,aggr,shuffle=3").unwrap();
    assert_aggregation_nodes(&s);
    assert_eq!(link_pairs(&s), link_pairs(&f));
    // with every option at once, and a given radix: cables on 1..=R, the node on R + 1
    let f = by_name("xgft:2;4,4;1,4,bundle=2,radix=20,aggr,uneven=1,seed=5").unwrap();
    assert_eq!(assert_aggregation_nodes(&f), 8);
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 21));
    for spec in ["fattree2:36,aggr", "fattree3:8,2:2,aggr,bundle=2"] {
        let f = by_name(spec).unwrap();
        assert_aggregation_nodes(&f);
        assert_connected(&f);
    }
}

fn desc_of(f: &Fabric, n: u32) -> &str {
    &f.nodes()[n as usize].description
}

#[test]
fn director_like_a_real_chassis() {
    let spec = "director:16,9,2,16-18";
    let f = by_name(spec).unwrap();
    let (sw, cas, ss, cl) = counts(&f);
    assert_eq!((sw, ss), (25, 16 * 9 * 2));
    assert_eq!(cas, cl);
    assert_connected(&f);
    // 36-port ASICs: the smallest that fits 18 CAs + 9 spines x 2 cables
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 36));
    assert!(f
        .nodes()
        .iter()
        .any(|n| n.description == "MF0;dir1:CS7520/L05/U1"));
    assert!(f
        .nodes()
        .iter()
        .any(|n| n.description == "MF0;dir1:CS7520/S03/U1"));
    let pairs = switch_pair_cables(&f);
    assert_eq!(pairs.len(), 16 * 9);
    assert!(pairs.values().all(|&c| c == 2));
    for &(a, b) in pairs.keys() {
        assert!(desc_of(&f, a).contains("/L") && desc_of(&f, b).contains("/S"));
    }
    let leaves = cas_on(&f, "MF0;dir1:CS7520/L");
    let per: Vec<usize> = leaves.iter().map(|(_, p)| p.len()).collect();
    assert_eq!(per.len(), 16);
    assert!(per.iter().all(|&c| (16..=18).contains(&c)), "{per:?}");
    assert!(per.contains(&16) && per.contains(&18), "{per:?}");
    assert_eq!(per.iter().sum::<usize>(), cas);
    let used = ports_used(&f);
    for (i, n) in f.nodes().iter().enumerate() {
        if n.description.contains("/S") {
            assert_eq!(used[i], 32, "a spine: 16 leaves x 2 cables");
        }
    }
    // seeded and deterministic; shuffled wiring is the same graph
    assert_eq!(by_name(spec).unwrap().canonical(), f.canonical());
    assert_ne!(
        by_name(&format!("{spec},seed=2")).unwrap().canonical(),
        f.canonical()
    );
    let s = by_name(&format!("{spec},shuffle=1")).unwrap();
    assert_eq!(link_pairs(&s), link_pairs(&f));
    assert_eq!(
        by_name(&format!("{spec},shuffle=1")).unwrap().canonical(),
        s.canonical()
    );
    // a fixed CA count, a larger radix leaves ports free
    let f = by_name("director:4,2,1,3,radix=12").unwrap();
    assert_eq!(counts(&f), (6, 12, 8, 12));
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 12));
    // spines can be the wider side: 20 leaves x 2 cables
    let f = by_name("director:20,4,2,10").unwrap();
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 40));
    for (spec, why) in [
        (
            "director:16,9,2,16-18,radix=35",
            "radix 35 < the 36 ports a leaf needs",
        ),
        (
            "director:20,4,2,10,radix=39",
            "radix 39 < the 40 ports a spine needs",
        ),
        ("director:16,9,2,18-16", "runs backwards"),
        ("director:1,9,2,16-18", "needs two leaves"),
        ("director:16,9,7,16", "1..=6"),
        ("director:0,9,2,16", "at least one leaf"),
        ("director:16,9,2,16,radix=255", "above 254"),
        ("director:16,9,2", "expects 4 arguments"),
        ("director:16,9,2,16-x", "not a valid number"),
        ("director:16,9,2,16,bundle=2", "unknown option"),
    ] {
        let e = by_name(spec).unwrap_err().to_string();
        assert!(
            e.contains(&format!("\"{spec}\"")) && e.contains(why),
            "{spec}: {e}"
        );
    }
}

#[test]
fn edge_switches_on_several_directors() {
    // 2 directors of 4 leaf + 2 spine ASICs; 8 edge switches, 12 CAs and 4 uplinks each
    let f = by_name("edgedirector:2,4,2,8,4,12").unwrap();
    assert_eq!(counts(&f), (2 * 6 + 8, 96, 2 * 8 + 32, 96));
    assert_connected(&f);
    // radix: the edge switches' 12 + 4 ports
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 16));
    let pairs = switch_pair_cables(&f);
    for e in 1..=8 {
        let name = format!("MF0;edge{e:02}:MSB7800/U1");
        let mut dirs: Vec<&str> = pairs
            .keys()
            .filter_map(
                |&(a, b)| match (desc_of(&f, a) == name, desc_of(&f, b) == name) {
                    (true, _) => Some(desc_of(&f, b)),
                    (_, true) => Some(desc_of(&f, a)),
                    _ => None,
                },
            )
            .map(|d| &d[..8])
            .collect();
        dirs.sort();
        assert_eq!(
            dirs,
            vec!["MF0;dir1", "MF0;dir1", "MF0;dir2", "MF0;dir2"],
            "{name}"
        );
    }
    // every director leaf ASIC gets 4 edge cables (16 per director, round-robin)
    let used = ports_used(&f);
    for (i, n) in f.nodes().iter().enumerate() {
        if n.description.contains("CS7520/L") {
            assert_eq!(used[i], 4 + 2, "{}", n.description);
        }
    }
    assert_eq!(
        by_name("edgedirector:2,4,2,8,4,12").unwrap().canonical(),
        f.canonical()
    );
    // uneven deal: 3 directors, 5 uplinks
    let f = by_name("edgedirector:3,2,2,5,5,4,radix=16").unwrap();
    assert_eq!(counts(&f).0, 3 * 4 + 5);
    assert_connected(&f);
    assert_refused(&[
        ("edgedirector:3,4,2,8,2,12", "cannot reach all 3 directors"),
        (
            "edgedirector:2,4,2,8,4,12,radix=15",
            "radix 15 < the 16 ports an edge switch needs",
        ),
        (
            "edgedirector:2,2,2,16,4,1,radix=16",
            "radix 16 < the 18 ports a director leaf needs",
        ),
        ("edgedirector:2,4,2,0,4,12", "at least one"),
        ("edgedirector:2,4,2,8,4", "expects 6 arguments"),
    ]);
}

#[test]
fn rail_planes_with_aggregation_nodes_on_65_port_switches() {
    let f = by_name("rail:2,4,2,8").unwrap();
    // 2 planes x (4 leaves + 2 spines); 32 servers x 2 CAs; one aggregation node per switch
    assert_eq!(counts(&f), (12, 64 + 12, 2 * 8 + 1, 64 + 12));
    assert_eq!(assert_aggregation_nodes(&f), 12);
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 65));
    assert_connected(&f);
    // planes meet in one cable, spine 0 to spine 0; every other link stays in its plane
    let plane = |n: u32| desc_of(&f, n)[4..9].to_string();
    let pairs = switch_pair_cables(&f);
    let across: Vec<_> = pairs
        .keys()
        .filter(|&&(a, b)| plane(a) != plane(b))
        .collect();
    assert_eq!(across.len(), 1);
    let (a, b) = *across[0];
    assert!(desc_of(&f, a).contains("-spine01:") && desc_of(&f, b).contains("-spine01:"));
    // server j's CA on rail p sits on port j % 8 + 1 of leaf j / 8 of plane p
    let t = f.port_table();
    for (i, n) in f.nodes().iter().enumerate() {
        if let Some(rest) = n.description.strip_prefix("H-") {
            let (j, p) = rest.split_once(" mlx5_").unwrap();
            let (j, p): (u32, u32) = (j.parse().unwrap(), p.parse().unwrap());
            let r = t.remote(i, 1).unwrap();
            let want = format!("MF0;rail{}-leaf{:02}:MQM9700/U1", p + 1, j / 8 + 1);
            assert_eq!(desc_of(&f, r.node), want);
            assert_eq!(u32::from(r.port), j % 8 + 1);
        }
    }
    let f = by_name("rail:4,8,4,16").unwrap();
    assert_eq!(counts(&f), (48, 4 * 128 + 48, 4 * 32 + 3, 4 * 128 + 48));
    assert_aggregation_nodes(&f);
    assert_connected(&f);
    assert_eq!(by_name("rail:4,8,4,16").unwrap().canonical(), f.canonical());
    // shuffled: cables move, the aggregation nodes stay on port 65
    let s = by_name("rail:4,8,4,16,shuffle=9").unwrap();
    assert_aggregation_nodes(&s);
    assert_eq!(link_pairs(&s), link_pairs(&f));
    // full 64 cable ports: 62 leaves + 2 joins on the middle planes' spine 0
    let f = by_name("rail:3,62,2,62").unwrap();
    assert_eq!(assert_aggregation_nodes(&f), 3 * 64);
    assert_connected(&f);
    // another radix: the last port is the aggregation node's
    let f = by_name("rail:2,4,2,8,radix=41").unwrap();
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 41));
    assert_aggregation_nodes(&f);
    assert_refused(&[
        (
            "rail:2,4,2,8,radix=10",
            "radix 10 < the 11 ports a leaf needs",
        ),
        ("rail:3,64,4,8", "radix 65 < the 67 ports spine 0 needs"),
        ("rail:2,4,2,63", "radix 65 < the 66 ports a leaf needs"),
        ("rail:0,4,2,8", "at least one plane"),
        ("rail:2,4,2,8,radix=255", "above 254"),
        ("rail:2,4,2", "expects 4 arguments"),
    ]);
}

#[test]
fn switches_of_65_ports() {
    // 64-port fat tree: 64 leaves of 32 CAs, 32 spines, every port used
    let f = by_name("fattree2:64").unwrap();
    assert_eq!(counts(&f), (96, 2048, 2048, 2048));
    // ... with aggregation nodes on port 65
    let f = by_name("fattree2:64,aggr").unwrap();
    assert_eq!(assert_aggregation_nodes(&f), 96);
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 65));
    assert_connected(&f);
    // 65 cable ports: odd radix, 32 down and 33 up
    let f = by_name("fattree2:65").unwrap();
    assert_eq!(counts(&f), (65 + 33, 65 * 32, 65 * 33, 65 * 32));
    let f = by_name("xgft:2;32,64;1,33,radix=65").unwrap();
    assert!(f
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.num_ports == 65));
    assert_connected(&f);
    let f = by_name("ktree:32,2,bundle=2,aggr").unwrap();
    assert_eq!(assert_aggregation_nodes(&f), 32);
    assert_connected(&f);
    // the ibsim writer keeps the 65 ports
    let net = crate::io::ibsim::write_net(&by_name("rail:2,2,1,2").unwrap());
    assert!(net.lines().any(|l| l.starts_with("Switch\t65 ")), "{net}");
    assert!(net.lines().any(|l| l.starts_with("[65]")), "{net}");
}

/// Every spec is refused with an error that says why (`why` is part of the message).
fn assert_refused(cases: &[(&str, &str)]) {
    for (spec, why) in cases {
        let e = by_name(spec).unwrap_err().to_string();
        assert!(e.contains(why), "{spec}: {e}");
    }
}
