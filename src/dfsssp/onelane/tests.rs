use crate::dfsssp::{make_deadlock_free_with, DfssspOptions};
use crate::graph::SwitchGraph;
use crate::metrics::{effective_bisection_bandwidth, BisectionSpec};
use crate::routing::Routing;
use crate::sssp;

fn one_lane(spec: &str, on: bool) -> (SwitchGraph, Routing) {
    let f = crate::topo::by_name(spec).unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    let mut r = sssp::route(&g);
    let opts = DfssspOptions {
        one_lane: on,
        ..Default::default()
    };
    let rep = make_deadlock_free_with(&g, &mut r, 1, &opts, None).unwrap();
    // Switched off, the search never runs; on, it runs unless the routes fit one lane before
    // it (fat trees: their switch LIDs go onto Up*/Down* routes legal with every CA route).
    if !on {
        assert!(rep.one_lane.is_none(), "{spec}: {rep:?}");
    }
    (g, r)
}

fn lambda(g: &SwitchGraph, r: &Routing) -> f64 {
    effective_bisection_bandwidth(g, &r.lft, &BisectionSpec::new(200, 1))
        .unwrap()
        .lambda
}

/// Complete and deadlock-free in one layer (the independent check walks every path and
/// searches the layer's CDG for a cycle), and Λ at least the Up*/Down* escape's.
#[test]
fn one_layer_acyclic_complete_and_not_below_the_escape() {
    for spec in [
        "torus:4x4,2",
        "torus:4x4x4,1",
        "torus:6,2",
        "hypercube:4,2",
        "random:24,16,4,40,seed=3",
        "kautz:2,3,2",
        // Lost a little to the escape before the layer was seeded (0.6648 against 0.6652).
        "dragonfly:4,2,2,9",
    ] {
        let (g, r) = one_lane(spec, true);
        assert_eq!(r.num_layers, 1, "{spec}");
        let v = crate::verify::verify(&g, &r).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        assert_eq!(v.unreachable, 0, "{spec}");
        let (g0, r0) = one_lane(spec, false);
        let (new, old) = (lambda(&g, &r), lambda(&g0, &r0));
        assert!(
            new >= old,
            "{spec}: Λ {new} < {old} of the Up*/Down* escape"
        );
    }
}

/// Fat trees, whose CA LIDs' SSSP routes fit one layer: those routes stay (Λ as with the
/// escape, which keeps them too), only switch LIDs are searched.
#[test]
fn fat_trees_keep_their_ca_routes() {
    for spec in ["ktree:4,3", "fattree3:6"] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let input = sssp::route(&g);
        let (g1, r1) = one_lane(spec, true);
        crate::verify::verify(&g1, &r1).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        for s in 0..g.num_switches() as u32 {
            for d in g.dests().iter().filter(|d| d.exit_port != 0) {
                assert_eq!(r1.lft.port(s, d.lid), input.lft.port(s, d.lid), "{spec}");
            }
        }
        let (g0, r0) = one_lane(spec, false);
        assert_eq!(lambda(&g1, &r1), lambda(&g0, &r0), "{spec}");
    }
}

/// NVIDIA SHARP puts an aggregation node (a CA) on every switch, spines included.
/// The CA routes are then legal Up*/Down* routes but for those towards the nodes above the
/// leaves, which need down-then-up turns; the layer holds every legal turn of the fabric,
/// so nearly every such turn closes a cycle, and searching for that cycle over the layer
/// for each turn took minutes on large fabrics. Routed as a tree-like fabric: deadlock-free
/// and complete, every route from a leaf switch and to a compute node still minimal, and
/// the cycle checks search a few channels per destination (exhaustive ones: about 1.2
/// layers' worth per destination on this fabric, and growing with it).
#[test]
fn aggregation_nodes_on_every_switch() {
    let f = crate::testkit::with_aggregation_nodes(&crate::topo::by_name("ktree:8,3").unwrap());
    let g = SwitchGraph::new(&f).unwrap();
    let dist = crate::graph::SwitchDistances::new(&g);
    let mut r = sssp::route_with_distances(&g, &dist);
    let rep =
        make_deadlock_free_with(&g, &mut r, 1, &DfssspOptions::default(), Some(&dist)).unwrap();
    let o = rep
        .one_lane
        .as_ref()
        .expect("the CA routes alone are cyclic");
    assert!(o.tree_like, "{o:?}");
    let v = crate::verify::verify(&g, &r).unwrap();
    assert_eq!((r.num_layers, v.unreachable), (1, 0));
    // Leaves: the switches with compute nodes besides their aggregation node.
    let leaf = |s: u32| g.terminal_count()[s as usize] > 1;
    for d in g.dests() {
        for s in 0..g.num_switches() as u32 {
            if s == d.switch || !(leaf(s) || leaf(d.switch) && d.exit_port != 0) {
                continue;
            }
            let hops = crate::routing::walk(&g, &r.lft, s, d.lid, |_| {}).unwrap();
            assert_eq!(
                hops,
                u32::from(dist.get(s, d.switch)),
                "{s} to LID {}",
                d.lid
            );
        }
    }
    let work = g.dests().len() as u64 * g.num_channels() as u64;
    assert!(
        o.searched_channels < work / 4,
        "{} of {work}",
        o.searched_channels
    );
}

/// On a torus the SSSP routes do not fit one lane and no Up*/Down* orientation makes every CA
/// route legal: the search runs.
#[test]
fn the_search_runs_on_a_torus() {
    let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    let mut r = sssp::route(&g);
    let rep = make_deadlock_free_with(&g, &mut r, 1, &DfssspOptions::default(), None).unwrap();
    assert!(rep.one_lane.is_some(), "{rep:?}");
}

/// On the random 128-switch fabric, one lane reaches 90% of the Λ of 8 lanes (0.1197
/// against 0.1323 with 1000 patterns; 0.1082 before the layer was seeded).
#[test]
fn random_fabric_one_lane_within_ten_percent_of_eight_lanes() {
    let spec = "random:128,32,16,300,seed=1";
    let (g, r) = one_lane(spec, true);
    let v = crate::verify::verify(&g, &r).unwrap();
    assert_eq!((r.num_layers, v.unreachable), (1, 0));
    let mut r8 = sssp::route(&g);
    make_deadlock_free_with(&g, &mut r8, 8, &DfssspOptions::default(), None).unwrap();
    let spec1000 = BisectionSpec::new(1000, 1);
    let one = effective_bisection_bandwidth(&g, &r.lft, &spec1000)
        .unwrap()
        .lambda;
    let eight = effective_bisection_bandwidth(&g, &r8.lft, &spec1000)
        .unwrap()
        .lambda;
    assert!(
        one >= 0.9 * eight,
        "one lane Λ {one:.4}, 8 lanes {eight:.4}"
    );
}

/// The local search never loses forward weight, and every pinned edge that went forward still
/// does (the tree turns' guarantee rests on it).
#[test]
fn sift_keeps_pins_and_never_loses_weight() {
    use super::seeds::{sift, PIN_WEIGHT};
    use crate::dfsssp::cdg::EdgeIndex;
    let f = crate::topo::by_name("torus:4x4x4,1").unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    let ei = EdgeIndex::new(&g);
    let nc = g.num_channels() as u32;
    // A scrambled starting order; every 5th edge that goes forward in it is pinned.
    let mut order: Vec<u32> = (0..nc).map(|c| (c * 37) % nc).collect();
    order.sort_unstable_by_key(|&c| ((c * 37) % nc, c));
    let mut pos = vec![0usize; nc as usize];
    for (i, &c) in order.iter().enumerate() {
        pos[c as usize] = i;
    }
    let mut weight = vec![0u64; ei.num_edges()];
    let mut pins = Vec::new();
    for c in 0..nc {
        for slot in 0..ei.degree(c) {
            let e = ei.base[c as usize] + slot;
            let t = ei.target(&g, c, slot);
            weight[e as usize] = u64::from(e * 7919 % 13);
            if e.is_multiple_of(5) && pos[c as usize] < pos[t as usize] {
                weight[e as usize] = PIN_WEIGHT;
                pins.push((c, t));
            }
        }
    }
    let forward = |order: &[u32]| {
        let mut pos = vec![0usize; order.len()];
        for (i, &c) in order.iter().enumerate() {
            pos[c as usize] = i;
        }
        let mut sum = 0u128;
        for c in 0..nc {
            for slot in 0..ei.degree(c) {
                let e = ei.base[c as usize] + slot;
                if pos[c as usize] < pos[ei.target(&g, c, slot) as usize] {
                    sum += u128::from(weight[e as usize]);
                }
            }
        }
        (sum, pos)
    };
    let (before, _) = forward(&order);
    sift(&g, &ei, |e| weight[e as usize], &mut order, None);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..nc).collect::<Vec<_>>(), "a permutation");
    let (after, pos) = forward(&order);
    assert!(after > before, "{before} -> {after}");
    for (a, b) in pins {
        assert!(pos[a as usize] < pos[b as usize], "pin {a} -> {b} turned");
    }
}

/// Same input, same routes (no hash order, no thread timing).
#[test]
fn deterministic() {
    let (_, a) = one_lane("torus:4x4x4,2", true);
    let (_, b) = one_lane("torus:4x4x4,2", true);
    assert_eq!(a.lft, b.lft);
    assert_eq!(a.hops, b.hops);
}

/// A fat tree with failed cables: every route a switch with CAs sends to a CA LID stays the
/// SSSP route (so CA-to-CA traffic sees exactly SSSP's balance), in one layer, deadlock-free and
/// complete, with one lane (QoS off) and with eight (QoS on: one layer there too, the rest of
/// the lanes left free); every other route made legal under the same Up*/Down* order, no search.
#[test]
fn faulty_fat_tree_keeps_every_data_route_in_one_layer() {
    for spec in [
        "ktree:6,3,cut=5",
        "ktree:8,3,cut=10,faultseed=2",
        "ktree:4,4,cut=5",
    ] {
        let f = crate::topo::by_name(spec).unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let input = sssp::route(&g);
        for budget in [1, 8] {
            let mut r = input.clone();
            let rep = make_deadlock_free_with(&g, &mut r, budget, &DfssspOptions::default(), None)
                .unwrap();
            let one = rep.one_lane.as_ref().expect("routed in one lane");
            // Deadlock-free in one layer; with more lanes that layer is spread over them, as
            // deadlock removal spreads any acyclic layer (the canonical rule).
            let spread = match budget {
                1 => 1,
                _ => budget - u8::from(rep.spare_lane),
            };
            assert_eq!(
                (rep.layers_before_balancing, r.num_layers, rep.layers_used),
                (1, spread, spread),
                "{spec} {budget}"
            );
            // The log says cycle breaking did not run (with more lanes than one).
            let not_run =
                (rep.log_lines().iter()).any(|l| l.contains("cycle breaking (DFSSSP) not run"));
            assert_eq!(
                not_run,
                budget > 1,
                "{spec} {budget}: {:?}",
                rep.log_lines()
            );
            // Nor does it claim cuts where one-lane routing replaced cycle breaking.
            let cut = (rep.log_lines().iter()).any(|l| l.starts_with("cycle breaking cut"));
            assert!(!cut, "{spec} {budget}: {:?}", rep.log_lines());
            let v = crate::verify::verify(&g, &r).unwrap();
            assert_eq!(v.unreachable, 0, "{spec} {budget}");
            // routes that carry no data were made legal, some longer than minimal
            assert!(
                one.legal_rerouted.is_some_and(|n| n > 0),
                "{spec} {budget}: {one:?}"
            );
            assert!(one.nonminimal_routes > 0, "{spec} {budget}: {one:?}");
            for d in g.dests().iter().filter(|d| d.exit_port != 0) {
                for s in 0..g.num_switches() as u32 {
                    if g.terminal_count()[s as usize] > 0 {
                        assert_eq!(
                            r.lft.port(s, d.lid),
                            input.lft.port(s, d.lid),
                            "{spec} {budget}: switch {s} to LID {}",
                            d.lid
                        );
                    }
                }
            }
        }
    }
}

/// Fitting the channel order stops on a candidate's deadline by itself (the searches' pace
/// judges only after it), and runs to the end without one.
#[test]
fn fitting_the_order_stops_past_its_deadline() {
    use super::seeds::seed_input_turns;
    use crate::dfsssp::cdg::EdgeIndex;
    use crate::dfsssp::dyntopo::DynTopo;
    use crate::dfsssp::DfssspError;
    use std::time::{Duration, Instant};
    let f = crate::topo::by_name("torus:4x4x4,1").unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    let ei = EdgeIndex::new(&g);
    let order: Vec<u32> = (0..g.num_channels() as u32).collect();
    let weight: Vec<u32> = (0..ei.num_edges() as u32).map(|e| 1 + e % 7).collect();
    let fit = |deadline: Option<Instant>| {
        let mut counts = vec![0u32; ei.num_edges()];
        let mut topo = DynTopo::from_order(&order);
        let begun = Instant::now();
        seed_input_turns(&g, &ei, &weight, &mut counts, &mut topo, deadline, begun)
    };
    let past = Instant::now().checked_sub(Duration::from_millis(1));
    assert!(past.is_some(), "a past instant");
    match fit(past) {
        Err(DfssspError::Stopped {
            projected: None, ..
        }) => {}
        other => panic!("not stopped: {other:?}"),
    }
    fit(None).unwrap();
    fit(Some(Instant::now() + Duration::from_secs(600))).unwrap();
}
