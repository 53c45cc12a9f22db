//! Layouts of real fabrics: directors, edge switches on several directors, rail planes.

use super::*;

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
