use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::super::assign::{assign, Heuristic};
use super::dag::next_state;
use super::*;
use crate::fabric::{FabricBuilder, NodeKind, PortRef};
use crate::topo::random_irregular;

struct Net {
    g: SwitchGraph,
    mach: Machines,
    ud: RootedUpDown,
}

fn net(machines: u32, switches: u32, degree: u32, seed: u64) -> Net {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let f = random_irregular(machines, switches, degree, &mut rng).unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    let mach = Machines::new(&g);
    let ud = RootedUpDown::new(&g, (seed % u64::from(switches)) as u32).unwrap();
    Net { g, mach, ud }
}

#[test]
fn every_scheme_routes_every_pair_legally() {
    for seed in 0..12 {
        let n = net(24, 8, 4, seed);
        let (g, ud, mach) = (&n.g, &n.ud, &n.mach);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let sw = shortest_widest(g, ud, mach, PathMetric::Sum).unwrap();
        sw.check(g, ud, mach, "sw", RouteLength::Shortest).unwrap();
        let swb = shortest_widest(g, ud, mach, PathMetric::Bottleneck).unwrap();
        swb.check(g, ud, mach, "swb", RouteLength::Shortest)
            .unwrap();
        let ren = destination_renaming(g, ud, mach, RenamingPaths::Random, &mut rng).unwrap();
        ren.check(g, ud, mach, "ren", RouteLength::Shortest)
            .unwrap();
        ren.check_scheme_lids(g, mach, "ren").unwrap();
        let exp = fully_explicit(g, ud, mach).unwrap();
        exp.check(g, ud, mach, "exp", RouteLength::Any).unwrap();
        exp.check_scheme_lids(g, mach, "exp").unwrap();
        for unit in [
            SelectionUnit::MachinePair,
            SelectionUnit::SwitchPair,
            SelectionUnit::SourceSwitchToMachine,
        ] {
            let cfg = PathSelectionConfig {
                unit,
                ..Default::default()
            };
            let (ps, stats) = path_selection(g, ud, mach, &cfg, &mut rng).unwrap();
            ps.check(g, ud, mach, "ps", RouteLength::Any).unwrap();
            assert!(stats.mean_candidates > 1.0);
        }
    }
}

#[test]
fn fully_explicit_needs_one_lid_per_destination() {
    let n = net(30, 10, 4, 3);
    let exp = fully_explicit(&n.g, &n.ud, &n.mach).unwrap();
    let mut ps = PathSet::new();
    let mut scratch = Vec::new();
    for d in 0..n.mach.len() {
        exp.dest_paths(&n.g, &n.mach, d, &mut ps, &mut scratch);
        for h in Heuristic::ALL {
            assert_eq!(assign(&ps, h).num_lids, 1, "destination {d}, {h}");
        }
    }
    // Shortest-widest on the same fabric is not destination-based.
    let sw = shortest_widest(&n.g, &n.ud, &n.mach, PathMetric::Sum).unwrap();
    let total: u32 = (0..n.mach.len())
        .map(|d| {
            sw.dest_paths(&n.g, &n.mach, d, &mut ps, &mut scratch);
            assign(&ps, Heuristic::Greedy).num_lids
        })
        .sum();
    assert!(total > n.mach.len() as u32);
}

#[test]
fn balanced_renaming_is_shortest_widest_with_first_fit_lids() {
    // Two independent code paths: LIDs assigned while routing vs greedy over the split graph.
    let n = net(40, 10, 4, 5);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let sw = shortest_widest(&n.g, &n.ud, &n.mach, PathMetric::Sum).unwrap();
    let ren = destination_renaming(
        &n.g,
        &n.ud,
        &n.mach,
        RenamingPaths::Balanced(PathMetric::Sum),
        &mut rng,
    )
    .unwrap();
    let m = n.mach.len();
    for s in 0..m {
        for d in (0..m).filter(|&d| d != s) {
            assert_eq!(sw.pair_chans(s, d), ren.pair_chans(s, d));
        }
    }
    let lids = ren.scheme_lids.as_ref().unwrap();
    let mut ps = PathSet::new();
    let mut scratch = Vec::new();
    let mut differs = false;
    for (d, &k) in lids.iter().enumerate() {
        sw.dest_paths(&n.g, &n.mach, d, &mut ps, &mut scratch);
        assert_eq!(
            assign(&ps, Heuristic::Greedy).num_lids,
            k,
            "destination {d}"
        );
        differs |= k > 1;
    }
    assert!(differs);
}

#[test]
fn k_shortest_matches_brute_force() {
    fn all_legal(g: &SwitchGraph, ud: &RootedUpDown, a: u32, b: u32) -> Vec<Vec<u32>> {
        fn go(
            g: &SwitchGraph,
            ud: &RootedUpDown,
            b: u32,
            st: u32,
            seen: &mut Vec<bool>,
            p: &mut Vec<u32>,
            out: &mut Vec<Vec<u32>>,
        ) {
            if st / 2 == b {
                out.push(p.clone());
                return;
            }
            for c in g.out_channels(st / 2) {
                let Some(v) = next_state(ud, g, st, c) else {
                    continue;
                };
                if !seen[(v / 2) as usize] {
                    seen[(v / 2) as usize] = true;
                    p.push(c);
                    go(g, ud, b, v, seen, p, out);
                    p.pop();
                    seen[(v / 2) as usize] = false;
                }
            }
        }
        let mut seen = vec![false; g.num_switches()];
        seen[a as usize] = true;
        let mut out = Vec::new();
        go(g, ud, b, 2 * a, &mut seen, &mut Vec::new(), &mut out);
        out
    }
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut got = Vec::new();
    for seed in 0..6 {
        let n = net(8, 7, 4, seed);
        for a in 0..7 {
            for b in (0..7).filter(|&b| b != a) {
                let mut all = all_legal(&n.g, &n.ud, a, b);
                all.sort_by_key(|p| p.len());
                for k in [1, 3, 16] {
                    for minimal_only in [false, true] {
                        let cfg = PathSelectionConfig {
                            k,
                            minimal_only,
                            ..Default::default()
                        };
                        let mut search = LegalPaths::new(&n.g, &n.ud, &cfg, &mut rng);
                        assert!(!search.k_shortest(a, b, &mut got));
                        let shortest = all[0].len();
                        let pool: Vec<&Vec<u32>> = all
                            .iter()
                            .filter(|p| !minimal_only || p.len() == shortest)
                            .collect();
                        assert_eq!(got.len(), pool.len().min(k as usize));
                        // Sorted by length, distinct, legal, and every path shorter than the
                        // longest one returned is there.
                        assert!(got.windows(2).all(|w| w[0].len() <= w[1].len()));
                        let longest = got.last().unwrap().len();
                        for p in &got {
                            assert!(pool.contains(&p) && n.ud.is_legal(&n.g, p));
                            assert_eq!(got.iter().filter(|q| *q == p).count(), 1);
                        }
                        for p in pool.iter().filter(|p| p.len() < longest) {
                            assert!(got.contains(p));
                        }
                    }
                }
            }
        }
    }
}

/// Two switches joined by one link, or by two parallel links; machines 0, 1 on switch A and
/// 2, 3 on switch B.
fn two_switches(parallel: bool) -> (SwitchGraph, Machines, RootedUpDown) {
    let mut b = FabricBuilder::new();
    let sa = b.add_node(NodeKind::Switch, 1, 8, "A").unwrap();
    let sb = b.add_node(NodeKind::Switch, 2, 8, "B").unwrap();
    b.link(PortRef { node: sa, port: 1 }, PortRef { node: sb, port: 1 })
        .unwrap();
    if parallel {
        b.link(PortRef { node: sa, port: 2 }, PortRef { node: sb, port: 2 })
            .unwrap();
    }
    b.set_lid(PortRef { node: sa, port: 0 }, 1, 1, 0).unwrap();
    b.set_lid(PortRef { node: sb, port: 0 }, 2, 2, 0).unwrap();
    for i in 0..4u16 {
        let ca = b
            .add_node(NodeKind::Ca, 100 + u64::from(i), 1, format!("m{i}"))
            .unwrap();
        let (sw, port) = if i < 2 {
            (sa, 5 + i as u8)
        } else {
            (sb, 5 + i as u8)
        };
        b.link(PortRef { node: ca, port: 1 }, PortRef { node: sw, port })
            .unwrap();
        b.set_lid(PortRef { node: ca, port: 1 }, 200 + u64::from(i), 10 + i, 0)
            .unwrap();
    }
    let g = SwitchGraph::new(&b.build().unwrap()).unwrap();
    let mach = Machines::new(&g);
    let ud = RootedUpDown::new(&g, 0).unwrap();
    (g, mach, ud)
}

#[test]
fn link_load_and_lids_on_two_switches() {
    let (g, mach, ud) = two_switches(false);
    assert_eq!(mach.switch, vec![0, 0, 1, 1]);
    let sw = shortest_widest(&g, &ud, &mach, PathMetric::Sum).unwrap();
    // Each direction carries the 4 cross pairs; normalised by M - 1 = 3.
    let l = sw.max_link_load(&g);
    assert!((l.directed - 4.0 / 3.0).abs() < 1e-12 && (l.bidirectional - 8.0 / 3.0).abs() < 1e-12);

    // With two parallel links, shortest-widest spreads the load over both links (the machine
    // links, at load 1, are now the busiest). Source-major order happens to send both sources
    // of switch A to machine 2 over the same link (0->2 first, then 1->2 on a tie), so that
    // destination sees one weighted path from A plus machine 3's delivery, and needs one LID.
    let (g, mach, ud) = two_switches(true);
    let max_pairs = |rt: &MachineRouting| rt.channel_pairs(&g).into_iter().max().unwrap();
    let sw = shortest_widest(&g, &ud, &mach, PathMetric::Sum).unwrap();
    assert_eq!(max_pairs(&sw), 2);
    assert_eq!(sw.max_link_load(&g).directed, 1.0);
    let mut ps = PathSet::new();
    let mut scratch = Vec::new();
    sw.dest_paths(&g, &mach, 2, &mut ps, &mut scratch);
    assert_eq!(ps.len(), 2);
    assert_eq!((ps.weight(0), ps.weight(1)), (2, 1));
    assert_eq!(assign(&ps, Heuristic::ColorL).num_lids, 1);
    // Fully explicit sends both sources of a destination over one link, but alternates links
    // between destinations.
    let exp = fully_explicit(&g, &ud, &mach).unwrap();
    assert_eq!(exp.pair_chans(0, 2), exp.pair_chans(1, 2));
    assert_ne!(exp.pair_chans(0, 2), exp.pair_chans(0, 3));
    assert_eq!(max_pairs(&exp), 2);
    // Path selection at machine-pair granularity balances like shortest-widest; at switch-pair
    // granularity all pairs of a switch pair share one link.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let cfg = PathSelectionConfig {
        unit: SelectionUnit::MachinePair,
        ..Default::default()
    };
    let (ps_mp, stats) = path_selection(&g, &ud, &mach, &cfg, &mut rng).unwrap();
    assert_eq!(max_pairs(&ps_mp), 2);
    assert_eq!(stats.removals, 8, "8 cross pairs, 2 candidates each");
    let cfg = PathSelectionConfig {
        unit: SelectionUnit::SwitchPair,
        ..Default::default()
    };
    let (ps_sp, stats) = path_selection(&g, &ud, &mach, &cfg, &mut rng).unwrap();
    assert_eq!(max_pairs(&ps_sp), 4);
    assert_eq!(stats.removals, 2);
    assert_eq!(ps_sp.pair_chans(0, 2), ps_sp.pair_chans(1, 3));
}

#[test]
fn up_down_orientation_and_legality() {
    let n = net(4, 8, 4, 2);
    let (g, ud) = (&n.g, &n.ud);
    for c in 0..g.num_channels() {
        assert_ne!(
            ud.up[c],
            ud.up[g.chan_reverse()[c] as usize],
            "exactly one direction of a link is up"
        );
    }
    let up = (0..g.num_channels() as u32)
        .find(|&c| ud.up[c as usize])
        .unwrap();
    let down = g.chan_reverse()[up as usize];
    assert!(ud.is_legal(g, &[up]) && ud.is_legal(g, &[down]));
    assert!(!ud.is_legal(g, &[down, up]), "up after down");
    assert!(RootedUpDown::new(g, 99).is_err());
}
