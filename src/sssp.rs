//! Globally balanced single-source-shortest-path routing (P-SSSP, Hoefler et al.; §II of
//! Domke et al.).
//!
//! For every destination LID the router picks a destination tree over the switch graph whose
//! channel weights grow with the routes already placed on each channel, so later destinations avoid
//! loaded channels and the load spreads over the whole fabric.
//!
//! The paper makes routes minimal by giving every channel an initial weight so large that no detour
//! can pay. We get exactly the same trees more cheaply: the minimal routes to a destination form a
//! DAG (channels `u -> v` with `dist(v) + 1 == dist(u)`), and the least-weight path within that DAG
//! is a dynamic program over the switches in order of distance — O(channels) per destination
//! instead of a Dijkstra, with integer weights and no priority queue.
//!
//! With LMC > 0 the LIDs of one port are routed one after the other; a LID first avoids the
//! channels its sibling LIDs already use (lexicographically before load), so the LIDs of a port take
//! different paths wherever the fabric offers them.
//!
//! On fat trees (switches in levels, links only between adjacent levels) equal path weights go to
//! the path whose branch from the destination ranks first, and destinations are routed leaf
//! subtree by leaf subtree ([`crate::balance::nearest_sweep`]): the balancer then finds the
//! d-mod-k pattern (every destination's routes down one branch, the ideal edge forwarding index)
//! however the chassis numbers its ports and discovery its LIDs. Ties to the lowest channel found
//! it only where the generator numbered ports in the tree's order (k-ary 3-trees with ports and
//! GUIDs shuffled: EFI 1.6x the ideal before).
//!
//! One pass routes each destination against the loads of the destinations before it only, so the
//! first destinations are placed blind. A second pass (rip-up and reroute, our addition to the
//! paper's algorithm) takes every destination's tree out again and re-chooses it against the loads
//! of all the others. It lowers the edge forwarding index by 17% on a 6x6x6 torus and 6% on a
//! random fabric and raises Λ. Where it does not lower the maximum channel load the first pass is
//! kept; on fat trees the maximum is pinned, and the pass gives up once a quarter of the
//! destinations have not moved it (a full pass costs as much as the first).

use crate::balance::{
    fill_row, leaf_bound, nearest_sweep, routing_order, routing_order_by, Balancer, DagsAhead,
    MinimalDag,
};
use crate::graph::{Dest, SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{transpose_dest_major, Lft, Routing, SwitchLidTable, NO_PATH};

/// Rip-up-and-reroute passes after the first routing pass. More passes lower the edge forwarding
/// index further (torus 6x6x6: 4200, 3480, 3276, 3220) but Λ hardly moves after the first.
const REROUTE_PASSES: usize = 1;

/// Routes every LID of the fabric with balanced minimal SSSP. One layer; every switch reaches
/// every LID attached to a switch in its connected component, by a minimal path.
pub fn route(g: &SwitchGraph) -> Routing {
    let dist = SwitchDistances::new(g);
    route_with_distances(g, &dist)
}

/// [`route`] with precomputed switch distances (callers that need them too compute them once).
pub fn route_with_distances(g: &SwitchGraph, dist: &SwitchDistances) -> Routing {
    route_with_passes(g, dist, REROUTE_PASSES)
}

/// [`route_with_distances`], with the edge forwarding index of its CA-to-CA routes (the most
/// routes between CA ports on any channel).
pub fn route_with_efi(g: &SwitchGraph, dist: &SwitchDistances) -> (Routing, u64) {
    let (r, efi, _) = route_with_passes_efi(g, dist, REROUTE_PASSES, &mut |_, _| {});
    (r, efi)
}

/// Takes one destination's routes: its index in `g.dests()` and its ports, one per switch.
pub type RowFeed<'a> = dyn FnMut(usize, &[u8]) + 'a;

/// [`route_with_efi`], handing each destination's routes to `feed` as soon as they are chosen:
/// the index of the destination in `g.dests()` and its row of ports, one per switch
/// ([`NO_PATH`] where it has none). So a caller can work on the routes on another core while
/// the (sequential) balancing goes on. The last flag tells whether the rows fed are the routes
/// returned; they are not where a later pass or candidate replaced them, and then the caller
/// must read the returned routing instead. Only fat trees whose first routing meets the load
/// bound are fed: elsewhere the rows would be replaced anyway.
pub fn route_with_efi_feeding(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    feed: &mut RowFeed,
) -> (Routing, u64, bool) {
    route_with_passes_efi(g, dist, REROUTE_PASSES, feed)
}

/// [`route_with_distances`] with `reroute_passes` rip-up-and-reroute passes after the first.
fn route_with_passes(g: &SwitchGraph, dist: &SwitchDistances, reroute_passes: usize) -> Routing {
    route_with_passes_efi(g, dist, reroute_passes, &mut |_, _| {}).0
}

/// The routing, its CA-to-CA edge forwarding index, and whether the rows given to `feed` are
/// its routes ([`route_with_efi_feeding`]).
fn route_with_passes_efi(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    reroute_passes: usize,
    feed: &mut RowFeed,
) -> (Routing, u64, bool) {
    let Some(levels) = g.tree_levels() else {
        let (r, efi, _) = route_once(g, dist, reroute_passes, Balancer::new(g), Shape::Any, None);
        return (r, efi, false);
    };
    // Fat trees: down parts first, ranked ties and leaves subtree by subtree (see
    // `nearest_sweep`), so the balance does not depend on how ports, GUIDs and LIDs happen to be
    // numbered. (Until 2026-12-08 an irregular tree was also routed with the up part's load
    // before the rank, and the higher Λ over 64 patterns kept: on 30 irregular trees that order
    // won twice, by +0.4% and by -0.1% of Λ over 1000 patterns, and it cost up to 40% of the
    // routing; README, "Faulty and irregular fabrics".)
    let bal = Balancer::for_tree(g, levels);
    route_once(g, dist, reroute_passes, bal, Shape::FatTree, Some(feed))
}

/// (switch, LID) paths above which a fat tree that misses the load bound keeps its first
/// routing: the rip-up passes cost about as much again and gain little there (the 18-ary
/// 3-tree with 1% of its cables missing, when the other tie order was tried too: 2.3 s more
/// for Λ 0.6687 -> 0.6725; with 5%: 0.6281 -> 0.6287; its first routing takes 0.6 s).
const TREE_REFINE_MAX_PATHS: usize = 1 << 21;

/// Whether a fat tree that misses the load bound is small enough for the rip-up passes
/// ([`TREE_REFINE_MAX_PATHS`]).
fn refine_tree(g: &SwitchGraph) -> bool {
    g.num_switches() * g.dests().len() <= TREE_REFINE_MAX_PATHS
}

/// What [`route_once`] is told of the fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Any fabric: destinations in [`routing_order`], every rip-up pass.
    Any,
    /// A fat tree: destination switches in [`nearest_sweep`] order (leaves subtree by subtree);
    /// the rip-up passes only where the CA routes miss the leaf bound on a tree small enough
    /// ([`refine_tree`]).
    FatTree,
}

/// One balanced SSSP routing with balancer `bal` on a fabric of `shape`. The first pass's rows
/// go to `feed`; the flag tells whether no later pass changed them.
fn route_once(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    reroute_passes: usize,
    mut bal: Balancer,
    shape: Shape,
    mut feed: Option<&mut RowFeed>,
) -> (Routing, u64, bool) {
    let ns = g.num_switches();
    // Chosen ports and hops per destination, destination-major: each LID's row is written in one
    // sweep, and the switch-major tables are filled by one parallel transpose at the end.
    let stride = usize::from(g.max_lid()) + 1;
    let mut rows_port = vec![NO_PATH; stride * ns];
    let mut rows_hops = vec![NO_PATH; stride * ns];
    let mut lft = Lft::new(ns, g.max_lid());
    // CA-to-CA routes per channel (the edge forwarding index's loads), beside the balancer's,
    // which count the routes to switch LIDs and sibling LIDs too.
    let mut ca_load = vec![0u64; g.num_channels()];

    let tree = shape == Shape::FatTree;
    let order = if tree {
        routing_order_by(g, &nearest_sweep(g, dist))
    } else {
        routing_order(g)
    };
    std::thread::scope(|scope| {
        let mut dags = DagsAhead::spawn(scope, g, dist, &order);
        for &di in &order {
            let d = g.dests()[di as usize];
            let to = dist.to(d.switch);
            let dag = dags.towards(d.switch);
            if d.lid_offset > 0 {
                // Siblings' routes are already in the destination-major rows.
                let base = d.lid - u16::from(d.lid_offset);
                bal.penalize_rows(
                    g,
                    &rows_port[usize::from(base) * ns..usize::from(d.lid) * ns],
                );
            }
            bal.compare_down_parts(d.exit_port != 0);
            let next = bal.choose_tree_dag(dag);
            let row = usize::from(d.lid) * ns..(usize::from(d.lid) + 1) * ns;
            fill_row(
                g,
                &d,
                next,
                to,
                &mut rows_port[row.clone()],
                &mut rows_hops[row.clone()],
            );
            if let Some(feed) = feed.as_mut() {
                feed(di as usize, &rows_port[row]);
            }
            bal.add_tree_load(g, &dag.order);
            if is_ca_base(&d) {
                bal.mirror_added(&dag.order, &mut ca_load);
            }
            bal.clear_penalties();
        }
    });
    // On a fat tree whose CA routes already meet the leaf bound no rip-up can lower the edge
    // forwarding index, and the pass would only reshuffle switch-LID routes.
    let at_bound = tree && ca_load.iter().copied().max().unwrap_or(0) <= leaf_bound(g);
    let passes = if at_bound || tree && !refine_tree(g) {
        0
    } else {
        reroute_passes
    };
    let mut placed = Placed {
        bal,
        rows_port,
        ca_load,
    };
    rip_up(g, dist, &order, passes, &mut placed);
    let Placed {
        rows_port, ca_load, ..
    } = placed;
    let mut hops = SwitchLidTable::new(ns, g.max_lid(), NO_PATH);
    transpose_dest_major(&rows_port, ns, lft.values_mut());
    transpose_dest_major(&rows_hops, ns, hops.values_mut());
    let efi = ca_load.into_iter().max().unwrap_or(0);
    (
        Routing {
            lft,
            hops,
            layers: None,
            num_layers: 1,
        },
        efi,
        feed.is_some() && passes == 0,
    )
}

/// The balancer and what the passes placed: destination-major ports, CA-to-CA channel loads.
struct Placed {
    bal: Balancer,
    rows_port: Vec<u8>,
    ca_load: Vec<u64>,
}

/// Whether `d` is a CA port's base LID (its routes count in the edge forwarding index).
#[inline]
fn is_ca_base(d: &Dest) -> bool {
    d.exit_port != 0 && d.lid_offset == 0
}

/// Up to `passes` rip-up passes over the destinations in `order`: each destination's routes
/// taken out and chosen again against everything else; a pass that does not lower the highest
/// load is undone and ends them.
fn rip_up(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    order: &[u32],
    passes: usize,
    placed: &mut Placed,
) {
    let ns = g.num_switches();
    let (bal, rows_port, ca_load) = (&mut placed.bal, &mut placed.rows_port, &mut placed.ca_load);
    let mut dag = MinimalDag {
        to: NO_SWITCH,
        ..Default::default()
    };
    let mut counts = Vec::new();
    for _ in 0..passes {
        let before = (
            bal.max_load(),
            bal.load.clone(),
            rows_port.clone(),
            ca_load.clone(),
        );
        dag.to = NO_SWITCH;
        let mut pinned = false;
        for (k, &di) in order.iter().enumerate() {
            if k == order.len() / 4 && k > 0 && bal.max_load() == before.0 {
                // A quarter of the destinations rerouted and the maximum has not moved at all:
                // it is pinned (on fat trees by routes every balanced choice shares), and the
                // rest of the pass would cost as much as the first for nothing.
                pinned = true;
                break;
            }
            let d = g.dests()[di as usize];
            if dag.to != d.switch {
                dag.build(g, d.switch, dist.to(d.switch), &mut counts);
            }
            let lid = usize::from(d.lid);
            bal.remove_row_load(g, &dag.order, &rows_port[lid * ns..(lid + 1) * ns]);
            if is_ca_base(&d) {
                bal.mirror_removed(g, &dag.order, &rows_port[lid * ns..(lid + 1) * ns], ca_load);
            }
            // All other LIDs of the port, earlier and later, are placed now.
            let siblings = sibling_lids(g, &d);
            bal.penalize_rows(g, &rows_port[siblings.start * ns..lid * ns]);
            bal.penalize_rows(g, &rows_port[(lid + 1) * ns..siblings.end * ns]);
            bal.compare_down_parts(d.exit_port != 0);
            let next = bal.choose_tree_dag(&dag);
            // Hops stay: every route is minimal in either pass.
            for (s, port) in rows_port[lid * ns..(lid + 1) * ns].iter_mut().enumerate() {
                if let Some(&c) = next.get(s).filter(|&&c| c != NO_CHANNEL) {
                    *port = g.chan_port()[c as usize];
                }
            }
            bal.add_tree_load(g, &dag.order);
            if is_ca_base(&d) {
                bal.mirror_added(&dag.order, ca_load);
            }
            bal.clear_penalties();
        }
        if pinned || bal.max_load() >= before.0 {
            // No better than before: keep the previous pass (where this happens, on fat trees,
            // Λ does not move either).
            (_, bal.load, *rows_port, *ca_load) = before;
            break;
        }
    }
}

/// The LIDs of the port that owns `d.lid` (LMC siblings, `d` included), as a range of LIDs.
fn sibling_lids(g: &SwitchGraph, d: &Dest) -> std::ops::Range<usize> {
    let base = usize::from(d.lid - u16::from(d.lid_offset));
    let mut end = usize::from(d.lid) + 1;
    while let Some(n) = u16::try_from(end).ok().and_then(|l| g.dest_of_lid(l)) {
        if n.endpoint != d.endpoint || usize::from(n.lid_offset) != end - base {
            break;
        }
        end += 1;
    }
    base..end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
    use crate::routing::walk;
    use crate::testkit::{fat_tree, ring};

    #[test]
    fn ring_routes_are_complete_and_minimal() {
        let f = ring(7, 2, 0, true);
        let g = SwitchGraph::new(&f).unwrap();
        check_complete_and_minimal(&f, &route(&g));
    }

    #[test]
    fn fat_tree_is_perfectly_balanced() {
        // 4 leaves x 4 CAs, 4 spines: every leaf's 4 uplinks carry equal load.
        let f = fat_tree(4, 4, 4, 0);
        let g = SwitchGraph::new(&f).unwrap();
        let r = route(&g);
        check_complete_and_minimal(&f, &r);
        // 16 CAs, 12 remote destinations each -> 192 routes up from each leaf of 4 CAs... per leaf:
        // 4 sources x 12 remote dests = 48 routes over 4 uplinks = 12 each at best.
        assert_eq!(max_channel_load(&f, &r), 12);
    }

    #[test]
    fn rerouting_lowers_the_forwarding_index_of_a_torus_and_keeps_routes_minimal() {
        let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let dist = SwitchDistances::new(&g);
        let once = route_with_passes(&g, &dist, 0);
        let rerouted = route_with_passes(&g, &dist, 1);
        check_complete_and_minimal(&f, &rerouted);
        assert_eq!(once.hops, rerouted.hops);
        let (a, b) = (max_channel_load(&f, &once), max_channel_load(&f, &rerouted));
        assert!(b < a, "rerouted {b} vs one pass {a}");
    }

    #[test]
    fn rerouting_never_raises_the_forwarding_index() {
        for spec in ["ktree:4,3", "random:24,8,4,40", "mesh:5x5,2", "torus:6x6,2"] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let dist = SwitchDistances::new(&g);
            let once = max_channel_load(&f, &route_with_passes(&g, &dist, 0));
            let r = route_with_distances(&g, &dist);
            check_complete_and_minimal(&f, &r);
            let rerouted = max_channel_load(&f, &r);
            assert!(
                rerouted <= once,
                "{spec}: rerouted {rerouted} vs one pass {once}"
            );
        }
    }

    #[test]
    fn balanced_beats_unbalanced_on_fat_tree() {
        let f = fat_tree(4, 4, 4, 0);
        let g = SwitchGraph::new(&f).unwrap();
        let balanced = route(&g);
        // Unbalanced shortest paths: always the first minimal channel.
        let mut plain = balanced.clone();
        let dist = SwitchDistances::new(&g);
        for d in g.dests() {
            for s in 0..g.num_switches() as u32 {
                if s == d.switch {
                    continue;
                }
                let c = g
                    .out_channels(s)
                    .find(|&c| {
                        dist.get(g.chan_head()[c as usize], d.switch) + 1 == dist.get(s, d.switch)
                    })
                    .unwrap();
                plain.lft.set(s, d.lid, g.chan_port()[c as usize]);
            }
        }
        assert!(max_channel_load(&f, &balanced) < max_channel_load(&f, &plain));
    }

    #[test]
    fn lmc_lids_take_distinct_paths() {
        let f = fat_tree(2, 4, 2, 2);
        let g = SwitchGraph::new(&f).unwrap();
        let r = route(&g);
        check_complete_and_minimal(&f, &r);
        // From leaf 0 to each CA on leaf 1, the four LIDs use four different spines.
        let leaf0 = g.node_switch()[f
            .nodes()
            .iter()
            .position(|n| n.description == "leaf0")
            .unwrap()];
        for e in f
            .endpoints()
            .iter()
            .filter(|e| f.nodes()[e.node as usize].description.starts_with("h1."))
        {
            let mut ports: Vec<u8> = e.lids().map(|l| r.lft.port(leaf0, l as u16)).collect();
            ports.sort_unstable();
            ports.dedup();
            assert_eq!(ports.len(), 4, "{ports:?}");
        }
    }

    #[test]
    fn unreachable_lids_have_no_path() {
        // A CA on its own, linked to nothing.
        let mut b = FabricBuilder::from_fabric(ring(3, 1, 0, false));
        let n = b.add_node(NodeKind::Ca, 0xdead, 1, "orphan").unwrap();
        b.set_lid(PortRef { node: n, port: 1 }, 0xdead, 40, 0)
            .unwrap();
        let f = b.build().unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let r = route(&g);
        for s in 0..3 {
            assert_eq!(r.lft.port(s, 40), NO_PATH);
        }
    }

    fn check_complete_and_minimal(f: &Fabric, r: &Routing) {
        let g = SwitchGraph::new(f).unwrap();
        let dist = SwitchDistances::new(&g);
        for s in 0..g.num_switches() as u32 {
            for d in g.dests() {
                match walk(&g, &r.lft, s, d.lid, |_| {}) {
                    Ok(hops) => {
                        assert_eq!(
                            hops,
                            u32::from(dist.get(s, d.switch)),
                            "switch {s} lid {}",
                            d.lid
                        );
                        let expect = hops + u32::from(d.exit_port != 0);
                        assert_eq!(u32::from(r.hops.get(s, d.lid)), expect);
                    }
                    other => panic!("switch {s} lid {}: {other:?}", d.lid),
                }
            }
        }
    }

    /// Max number of CA-to-CA routes (base LIDs) on any channel.
    fn max_channel_load(f: &Fabric, r: &Routing) -> u64 {
        let g = SwitchGraph::new(f).unwrap();
        let mut load = vec![0u64; g.num_channels()];
        for &(_, s) in g.terminals() {
            for &(e, _) in g.terminals() {
                let _ = walk(&g, &r.lft, s, f.endpoints()[e as usize].base_lid, |c| {
                    load[c as usize] += 1
                });
            }
        }
        load.into_iter().max().unwrap_or(0)
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

            /// However ports, GUIDs and LIDs are numbered, balanced SSSP reaches the ideal edge
            /// forwarding index on full fat trees (the d-mod-k pattern).
            #[test]
            fn shuffled_fat_trees_reach_the_ideal_forwarding_index(
                family in 0usize..3, k in 2u32..=5, seed in any::<u64>()
            ) {
                let spec = match family {
                    0 => format!("ktree:{k},3,shuffle={seed}"),
                    1 => format!("ktree:{},2,shuffle={seed}", k + 1),
                    // 2:1 oversubscribed leaves (a multiple of their uplinks in CAs, or no
                    // destination-based routing reaches the bound)
                    _ => format!("xgft:2;{},{};1,{k},shuffle={seed}", 2 * k, k + 2),
                };
                let f = crate::topo::by_name(&spec).unwrap();
                let g = SwitchGraph::new(&f).unwrap();
                prop_assert!(g.tree_levels().is_some(), "{spec} is a tree");
                let r = route(&g);
                check_complete_and_minimal(&f, &r);
                prop_assert_eq!(max_channel_load(&f, &r), crate::balance::leaf_bound(&g), "{}", spec);
            }

            /// Switches with the same candidate heads take the head their group's first switch
            /// computed, and switches whose heads are a subset of an earlier group's take that
            /// group's head where they have it (`SameHeads`): the same routes as computing every
            /// switch in full, on trees with chassis wiring, uneven leaves, bundles, aggregation
            /// nodes and failed cables or spines.
            #[test]
            fn grouped_choices_equal_full_ones(
                family in 0usize..7, k in 2u32..=5, seed in any::<u64>()
            ) {
                let spec = match family {
                    0 => format!("ktree:{k},3,shuffle={seed}"),
                    1 => format!("fattree2:{},uneven={k},bundle=2,shuffle={seed}", 4 * k),
                    2 => format!("fattree3:{},uneven=1,shuffle={seed}", 2 * k),
                    3 => format!("ktree:{k},3,aggr,shuffle={seed}"),
                    4 => format!("ktree:{},3,cut={},faultseed={seed}", k + 2, 3 * k),
                    5 => format!("fattree3:{},cut={k},faultseed={seed},shuffle={seed}", 2 * k + 2),
                    _ => format!("ktree:{},3,spinedown=1,cut={k},faultseed={seed}", k + 2),
                };
                let f = crate::topo::by_name(&spec).unwrap();
                let g = SwitchGraph::new(&f).unwrap();
                let levels = g.tree_levels().expect("a tree");
                let dist = SwitchDistances::new(&g);
                let bal = || Balancer::for_tree(&g, levels.clone());
                let grouped = route_once(&g, &dist, REROUTE_PASSES, bal(), Shape::FatTree, None);
                let full = route_once(
                    &g,
                    &dist,
                    REROUTE_PASSES,
                    bal().without_head_groups(),
                    Shape::FatTree,
                    None,
                );
                prop_assert!(grouped.0.lft == full.0.lft, "{}", spec);
                prop_assert_eq!(grouped.1, full.1);
            }
        }
    }
}
