//! Tree options: cable bundles, uneven leaves, aggregation nodes.

use super::*;

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
