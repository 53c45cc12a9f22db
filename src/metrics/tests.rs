use super::all_pairs::*;
use super::bisection::*;
use super::*;

use crate::routing::NO_PATH;
use crate::testkit::{
    fabric, fabric_with, fat_tree, mesh2x2, ring, shortest_path_routing, two_switches, with_graph,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn opts(patterns: u32) -> MetricsOptions {
    MetricsOptions {
        patterns,
        ..Default::default()
    }
}

#[test]
fn single_crossbar_has_full_bandwidth() {
    let (_, g) = fabric_with(&[6], &[]);
    let r = crate::sssp::route(&g);
    let m = compute(&g, &r, &opts(200)).unwrap();
    assert!(m.connectivity.complete());
    assert_eq!(m.connectivity.switch_to_lid.delivered, 7);
    // 6 CAs, each to the 5 other CAs and the switch.
    assert_eq!(m.connectivity.ca_to_lid.delivered, 6 * 6);
    assert_eq!(m.hops.routes, 30);
    assert_eq!(m.hops.histogram, vec![30]);
    assert_eq!(m.hops.fraction_minimal, 1.0);
    assert_eq!(m.efi.max, 0);
    assert_eq!(m.efi.max_link_load, 1.0);
    let b = m.bisection.unwrap();
    assert_eq!((b.lambda, b.min, b.max, b.flows), (1.0, 1.0, 1.0, 3));
}

/// Two switches, one link, four CAs on each: terminals 0..4 on switch 0, 4..8 on switch 1.
fn dumbbell() -> (SwitchGraph, Routing) {
    let (_, g) = fabric(2, 4, &[((0, 1), (1, 1))]);
    let r = crate::sssp::route(&g);
    (g, r)
}

#[test]
fn dumbbell_efi_hops_and_link_load() {
    let (g, r) = dumbbell();
    let m = compute(&g, &r, &opts(0)).unwrap();
    assert!(m.bisection.is_none());
    // 56 routes: 2*4*3 stay on their switch, 32 cross, 16 each way over the one link.
    assert_eq!(m.hops.routes, 56);
    assert_eq!(m.hops.histogram, vec![24, 32]);
    assert_eq!(m.hops.minimal, 56);
    assert!((m.hops.average - 32.0 / 56.0).abs() < 1e-12);
    assert_eq!(m.hops.max, 1);
    assert_eq!(m.efi.per_channel, vec![16, 16]);
    assert_eq!((m.efi.max, m.efi.average), (16, 16.0));
    assert!((m.efi.max_channel_load - 16.0 / 7.0).abs() < 1e-12);
    assert_eq!(m.efi.max_link_load, m.efi.max_channel_load);
}

#[test]
fn dumbbell_patterns_by_hand() {
    let (g, r) = dumbbell();
    let bw = |flows: &[(u32, u32)]| pattern_bandwidth(&g, &r.lft, flows, LidChoice::Base).unwrap();
    // All four cross the same way: they share the one channel.
    assert_eq!(bw(&[(0, 4), (1, 5), (2, 6), (3, 7)]), 0.25);
    // Two each way: each direction is its own channel.
    assert_eq!(bw(&[(0, 4), (1, 5), (6, 2), (7, 3)]), 0.5);
    assert_eq!(bw(&[(0, 4), (1, 5), (2, 3), (6, 7)]), 0.75);
    assert_eq!(bw(&[(0, 1), (2, 3), (4, 5), (6, 7)]), 1.0);
    assert_eq!(bw(&[(0, 4), (7, 3)]), 1.0);
}

/// Exact expectation of the pattern value on the dumbbell over all 8! orders, by the formula
/// Γ = (local flows + [any flow A->B] + [any flow B->A]) / 4.
fn dumbbell_exact_lambda() -> f64 {
    fn rec(perm: &mut Vec<u32>, used: u32, sum: &mut f64, count: &mut u64) {
        if perm.len() == 8 {
            let (mut ab, mut ba, mut local) = (0, 0, 0);
            for j in 0..4 {
                match (perm[j] < 4, perm[j + 4] < 4) {
                    (true, false) => ab += 1,
                    (false, true) => ba += 1,
                    _ => local += 1,
                }
            }
            *sum += f64::from(local + u32::from(ab > 0) + u32::from(ba > 0)) / 4.0;
            *count += 1;
            return;
        }
        for t in 0..8 {
            if used & (1 << t) == 0 {
                perm.push(t);
                rec(perm, used | (1 << t), sum, count);
                perm.pop();
            }
        }
    }
    let (mut sum, mut count) = (0.0, 0);
    rec(&mut Vec::new(), 0, &mut sum, &mut count);
    assert_eq!(count, 40320);
    sum / count as f64
}

#[test]
fn dumbbell_lambda_matches_the_exact_expectation() {
    let (g, r) = dumbbell();
    let exact = dumbbell_exact_lambda();
    let b = effective_bisection_bandwidth(&g, &r.lft, &BisectionSpec::new(20_000, 7)).unwrap();
    assert!(
        (b.lambda - exact).abs() < 0.01,
        "Λ {} vs exact {exact}",
        b.lambda
    );
    assert_eq!(b.min, 0.25);
    assert_eq!(b.max, 1.0);
}

#[test]
fn lambda_is_deterministic_whatever_the_thread_count() {
    let (_, g) = with_graph(fat_tree(4, 2, 3, 0));
    let r = crate::sssp::route(&g);
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| compute(&g, &r, &opts(300)).unwrap())
    };
    let (a, b) = (run(1), run(3));
    assert_eq!(a, b);
    let other_seed =
        effective_bisection_bandwidth(&g, &r.lft, &BisectionSpec::new(300, 2)).unwrap();
    assert_ne!(other_seed.lambda, a.bisection.unwrap().lambda);
}

#[test]
fn balanced_sssp_beats_unbalanced_shortest_paths_on_a_fat_tree() {
    // 4 leaves x 3 CAs, 2 spines. Lowest-port shortest paths send everything over spine 0.
    let (_, g) = with_graph(fat_tree(4, 2, 3, 0));
    let naive = compute(&g, &shortest_path_routing(&g), &opts(500)).unwrap();
    let sssp = compute(&g, &crate::sssp::route(&g), &opts(500)).unwrap();
    for m in [&naive, &sssp] {
        assert!(m.connectivity.complete());
        assert_eq!(m.hops.fraction_minimal, 1.0);
        // 12 CAs: 4*3*2 routes on a leaf, 4*3*9 = 108 through the spines (2 hops).
        assert_eq!(m.hops.histogram, vec![24, 0, 108]);
    }
    // Leaf 0 sends 3 * 9 routes up; unbalanced, all over one channel.
    assert_eq!(naive.efi.max, 27);
    // Destination-based routing cannot reach 14 (leaf 0's 9 remote destinations take 3 routes
    // each over one spine or the other), but balancing must clearly beat 27.
    assert!(sssp.efi.max <= 18, "{}", sssp.summary());
    // Total load is the same (every route is minimal): 108 routes x 2 channels.
    assert_eq!(naive.efi.per_channel.iter().sum::<u64>(), 216);
    assert_eq!(sssp.efi.per_channel.iter().sum::<u64>(), 216);
    let (ln, ls) = (
        naive.bisection.unwrap().lambda,
        sssp.bisection.unwrap().lambda,
    );
    assert!(ls > ln + 0.1, "sssp Λ {ls} vs naive Λ {ln}");
}

#[test]
fn connectivity_failures_are_counted_and_named() {
    let (f, g) = mesh2x2(2);
    let good = shortest_path_routing(&g);
    let m = compute(&g, &good, &opts(0)).unwrap();
    assert!(m.connectivity.complete());
    assert_eq!(m.connectivity.switch_to_lid.delivered, 4 * 12);
    assert_eq!(m.connectivity.ca_to_lid.delivered, 8 * 11);

    let ca_lid = g
        .dests()
        .iter()
        .find(|d| d.exit_port != 0 && d.switch == 3)
        .unwrap()
        .lid;
    let mut r = good.clone();
    // Loop between 0 and 1, no entry at 2 (for the same LID), and a dead end at 3 for its
    // own switch LID.
    r.lft.set(
        0,
        ca_lid,
        g.chan_port()[g.channel_at(0, 1).unwrap() as usize],
    );
    r.lft.set(1, ca_lid, 2);
    r.lft.set(2, ca_lid, NO_PATH);
    r.lft.set(3, 4, 20);
    let m = compute_named(&f, &g, &r, &opts(50)).unwrap();
    let c = &m.connectivity;
    assert!(!c.complete());
    // To ca_lid: 0 and 1 loop, 2 has no entry, 3 delivers. To LID 4 (switch 3): all four
    // switches end at 3's dead end.
    assert_eq!(
        c.switch_to_lid,
        Counts {
            delivered: 48 - 7,
            no_entry: 1,
            dead_end: 4,
            loops: 2,
            disconnected: 0
        }
    );
    // CAs: two per switch; the owner of ca_lid (on switch 3) is not counted for its own LID.
    assert_eq!(c.ca_to_lid.loops, 4);
    assert_eq!(c.ca_to_lid.no_entry, 2);
    assert_eq!(c.ca_to_lid.dead_end, 8);
    assert_eq!(c.ca_to_lid.total(), 8 * 11);
    assert_eq!(c.failures.len(), 7);
    let first = &c.failures[0];
    assert_eq!(
        (first.switch, first.switch_guid, first.lid),
        (0, Some(0x100), 4)
    );
    assert_eq!(
        (first.fault, first.at_guid),
        (RouteFault::DeadEnd { at: 3, port: 20 }, Some(0x103))
    );
    assert!(c
        .failures
        .iter()
        .any(|x| matches!(x.fault, RouteFault::Loop { .. }) && x.lid == ca_lid));
    assert!(c
        .failures
        .iter()
        .any(|x| x.fault == RouteFault::NoEntry { at: 2 } && x.switch == 2));
    // Routes that fail do not count in hops or EFI, and fail in Λ's flows.
    assert_eq!(m.hops.routes, 8 * 7 - 6);
    assert!(m.bisection.as_ref().unwrap().lambda < 1.0);
    assert!(m.summary().contains("2 loop"), "{}", m.summary());
}

#[test]
fn non_minimal_routes_are_seen() {
    let (_, g) = with_graph(ring(5, 1, 0, true));
    let mut r = crate::sssp::route(&g);
    // Send switch 0's traffic for the CA on switch 1 the long way round (4 hops).
    let ca1 = g
        .dests()
        .iter()
        .find(|d| d.exit_port != 0 && d.switch == 1)
        .unwrap()
        .lid;
    let back = g
        .out_channels(0)
        .find(|&c| g.chan_head()[c as usize] == 4)
        .unwrap();
    r.lft.set(0, ca1, g.chan_port()[back as usize]);
    for s in [4u32, 3, 2] {
        let c = g
            .out_channels(s)
            .find(|&c| g.chan_head()[c as usize] == (s + 4) % 5)
            .unwrap();
        r.lft.set(s, ca1, g.chan_port()[c as usize]);
    }
    let m = compute(&g, &r, &opts(0)).unwrap();
    assert!(m.connectivity.complete());
    assert_eq!(m.hops.routes, 20);
    assert_eq!(m.hops.max, 4);
    // Routes to ca1 from switches 0 (4 hops, BFS 1) and 4 (3 hops, BFS 2) are no longer
    // minimal; from 3 (2 hops) and 2 (1 hop) they still are.
    assert_eq!(m.hops.minimal, 18);
    assert_eq!(m.hops.histogram, vec![0, 9, 9, 1, 1]);
    assert!((m.hops.fraction_minimal - 0.9).abs() < 1e-12);
}

#[test]
fn partitioned_fabric_counts_disconnected_pairs() {
    let (_, g) = fabric(4, 1, &[((0, 1), (1, 1)), ((2, 1), (3, 1))]);
    let r = shortest_path_routing(&g);
    let m = compute(&g, &r, &opts(10)).unwrap();
    assert!(m.connectivity.complete());
    assert_eq!(m.connectivity.switch_to_lid.disconnected, 16);
    assert_eq!(m.connectivity.ca_to_lid.disconnected, 16);
    assert_eq!(m.hops.routes, 4);
}

/// Two switches, two parallel links; CAs 0 and 1 on switch 0, CA 2 on switch 1; LMC 1.
fn lmc_fabric() -> (SwitchGraph, Routing) {
    let f = two_switches(8, 2, &[(0, 5, 4, 1), (0, 6, 6, 1), (1, 5, 8, 1)]);
    let g = SwitchGraph::new(&f).unwrap();
    let mut r = shortest_path_routing(&g);
    // CA 2 owns LIDs 8 and 9: the second LID takes the second link.
    r.lft.set(0, 9, 2);
    (g, r)
}

#[test]
fn lid_choice_by_source_spreads_over_lmc_paths() {
    let (g, r) = lmc_fabric();
    let c01 = g.channel_at(0, 1).unwrap() as usize;
    let c02 = g.channel_at(0, 2).unwrap() as usize;
    let base = compute(&g, &r, &opts(0)).unwrap();
    assert_eq!(base.hops.routes, 6);
    assert_eq!(
        (base.efi.per_channel[c01], base.efi.per_channel[c02]),
        (2, 0)
    );
    let spread = compute(
        &g,
        &r,
        &MetricsOptions {
            lid_choice: LidChoice::BySource,
            ..opts(0)
        },
    )
    .unwrap();
    assert_eq!(spread.hops.routes, 6);
    // CA 0 uses LID 8, CA 1 uses LID 9.
    assert_eq!(
        (spread.efi.per_channel[c01], spread.efi.per_channel[c02]),
        (1, 1)
    );
    assert!(spread.summary().contains("LIDs by source"));
    let flows = [(0, 2), (1, 2)];
    assert_eq!(
        pattern_bandwidth(&g, &r.lft, &flows, LidChoice::Base).unwrap(),
        0.5
    );
    assert_eq!(
        pattern_bandwidth(&g, &r.lft, &flows, LidChoice::BySource).unwrap(),
        1.0
    );
}

#[test]
fn shape_mismatch_and_serialization() {
    let (g, mut r) = dumbbell();
    let m = compute(&g, &r, &opts(20)).unwrap();
    let json = serde_json::to_string(&m).unwrap();
    for key in [
        "\"lambda\"",
        "\"histogram\"",
        "\"max_link_load\"",
        "\"ca_to_lid\"",
    ] {
        assert!(json.contains(key), "{json}");
    }
    assert!(!json.contains("per_channel"));
    assert!(m.summary().contains("Λ"), "{}", m.summary());
    r.lft = Lft::new(3, g.max_lid());
    assert_eq!(
        compute(&g, &r, &opts(0)),
        Err(MetricsError::Shape {
            tables: 3,
            switches: 2
        })
    );
}

#[test]
fn generated_fat_trees_sssp_against_unbalanced_shortest_paths() {
    for spec in ["ktree:4,3", "fattree2:8"] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let sssp = compute(&g, &crate::sssp::route(&g), &opts(1000)).unwrap();
        let naive = compute(&g, &shortest_path_routing(&g), &opts(1000)).unwrap();
        let p = g.terminals().len() as u64;
        for m in [&sssp, &naive] {
            assert!(m.connectivity.complete(), "{spec}: {}", m.summary());
            assert_eq!(m.hops.routes, p * (p - 1));
            assert_eq!(m.hops.fraction_minimal, 1.0);
        }
        // Both are minimal, so the total load is the same; only its spread differs.
        assert_eq!(sssp.efi.average, naive.efi.average);
        assert!(
            sssp.efi.max * 3 < naive.efi.max,
            "{spec}: {} vs {}",
            sssp.summary(),
            naive.summary()
        );
        assert!(
            (sssp.efi.max as f64) <= 1.25 * sssp.efi.average,
            "{spec}: {}",
            sssp.summary()
        );
        let (ls, ln) = (
            sssp.bisection.unwrap().lambda,
            naive.bisection.unwrap().lambda,
        );
        assert!(ls > 0.7 && ls > ln + 0.3, "{spec}: Λ sssp {ls}, naive {ln}");
    }
}

#[test]
fn all_pairs_by_trees_agrees_with_walks() {
    use rand::Rng;
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for spec in ["torus:3x3,2", "ktree:2,3", "random:10,6,2,14,lmc=1"] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let ns = g.num_switches() as u32;
        for trial in 0..30 {
            let mut r = crate::sssp::route(&g);
            for _ in 0..trial % 5 {
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
            for lid_choice in [LidChoice::Base, LidChoice::BySource] {
                let o = MetricsOptions {
                    lid_choice,
                    max_failures: usize::MAX,
                    ..opts(0)
                };
                let (a, b) = (
                    all_pairs(&g, &r.lft, &o),
                    all_pairs_by_walks(&g, &r.lft, &o),
                );
                let (ca, cb) = (&a.connectivity, &b.connectivity);
                assert_eq!(ca.switch_to_lid, cb.switch_to_lid, "{spec} {trial}");
                assert_eq!(ca.ca_to_lid, cb.ca_to_lid);
                assert_eq!((&a.hops, a.minimal), (&b.hops, b.minimal));
                assert_eq!(a.efi, b.efi, "{spec} {trial}");
                let key = |x: &RouteFailure| {
                    // The two methods may name different switches of one loop.
                    let fault = match x.fault {
                        RouteFault::Loop { .. } => RouteFault::Loop { at: 0 },
                        f => f,
                    };
                    (x.switch, x.lid, fault)
                };
                let mut fa: Vec<_> = ca.failures.iter().map(key).collect();
                let mut fb: Vec<_> = cb.failures.iter().map(key).collect();
                fa.sort_unstable();
                fb.sort_unstable();
                assert_eq!(fa, fb);
            }
        }
    }
}
