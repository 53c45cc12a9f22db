//! An Up*/Down* order fitted to given routes: the orientation of a fat tree with failed cables.
//!
//! Ranking switches by BFS level from one root makes every minimal route of a pristine fat tree
//! legal when the root is a leaf switch (a route climbs towards the spines, then descends). One
//! missing cable breaks that: a spine cut off from the root's pod lies two levels further out,
//! below the middle switches it joins, and every route over it turns down, then up. A route
//! `x -> v -> y` is legal exactly when `v` does not rank after both `x` and `y`. So the switches
//! are ranked one at a time from the root, those that some turn through them joins to a switch
//! just ranked first (they had better precede the turn's other end), the highest of a tree first
//! (farthest from any CA: a spine attached from below ranks before the middle switches that
//! would otherwise hang from it both ways), then in BFS order; except that before a switch `y` takes
//! its rank, every unranked neighbour `v` that would then rank after two ends of one of the
//! routes' turns `x -> v -> y` takes its rank first (and so on, depth first; a switch already
//! waiting on that stack is not asked again, and its turn may end up illegal). Every switch but
//! the root is ranked after a neighbour, so Up*/Down* keeps its guarantees (every switch
//! reaches every other, legal routes have an acyclic CDG); only which turns are legal changes.
//!
//! On a fat tree with failed cables the routes' turns are the up-then-down turns of its levels,
//! and the order is the pristine tree's BFS order but for the few switches a failure cut off
//! from the root's pod, each ranked right after the first neighbour it can hang from. Cost:
//! `O(S * d^2)` per root tried (`S` switches, `d` their degree), no allocation per switch.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::UpDown;
use crate::graph::SwitchGraph;

impl UpDown {
    /// Orientation from `roots` (as [`UpDown::with_roots`] takes them) whose order keeps every
    /// turn `c_in -> c_out` for which `turn` says true legal where it can (module documentation).
    pub fn with_roots_fitted(
        g: &SwitchGraph,
        roots: &[u32],
        turn: &impl Fn(u32, u32) -> bool,
    ) -> Self {
        let bfs = UpDown::with_roots(g, roots);
        let ns = g.num_switches();
        let height = heights(g);
        let mut ranked = vec![false; ns];
        let mut waiting = vec![false; ns];
        let mut by_rank = Vec::with_capacity(ns);
        let mut heap = BinaryHeap::new();
        let mut stack: Vec<u32> = Vec::new();
        // A neighbour of a switch just ranked is urgent when a turn through it joins that switch
        // to one still unranked: it had better take its rank before the other does. Switches no
        // turn passes through (leaves of a fat tree) wait for the end.
        let mut rank = |s: u32, ranked: &mut [bool], heap: &mut BinaryHeap<_>| {
            ranked[s as usize] = true;
            by_rank.push(s);
            for c in g.out_channels(s) {
                let w = g.chan_head()[c as usize];
                if !ranked[w as usize] {
                    // a turn through `w` joins `s` to a switch not yet ranked
                    let urgent = joins(g, w, s, |z| !ranked[z as usize], turn);
                    let key = (!urgent, Reverse(height[w as usize]), bfs.level[w as usize]);
                    heap.push(Reverse((key, w)));
                }
            }
        };
        for &root in &bfs.roots {
            rank(root, &mut ranked, &mut heap);
            while let Some(Reverse((_, y))) = heap.pop() {
                if ranked[y as usize] {
                    continue;
                }
                stack.push(y);
                waiting[y as usize] = true;
                while let Some(&top) = stack.last() {
                    let first = g
                        .out_channels(top)
                        .map(|c| g.chan_head()[c as usize])
                        .find(|&v| {
                            !ranked[v as usize]
                                && !waiting[v as usize]
                                // ranking `top` would leave `v` after both ends of a turn
                            && joins(g, v, top, |x| ranked[x as usize], turn)
                        });
                    match first {
                        Some(v) => {
                            waiting[v as usize] = true;
                            stack.push(v);
                        }
                        None => {
                            stack.pop();
                            waiting[top as usize] = false;
                            rank(top, &mut ranked, &mut heap);
                        }
                    }
                }
            }
        }
        UpDown::from_ranking(g, bfs.roots, by_rank)
    }
}

/// Hops from every switch to the nearest switch with CAs: the level of a fat tree (0 at its
/// leaves), 0 everywhere on fabrics with CAs on every switch.
fn heights(g: &SwitchGraph) -> Vec<u32> {
    let ns = g.num_switches();
    let mut h = vec![u32::MAX; ns];
    let mut queue: std::collections::VecDeque<u32> = (0..ns as u32)
        .filter(|&s| g.terminal_count()[s as usize] > 0)
        .collect();
    for &s in &queue {
        h[s as usize] = 0;
    }
    while let Some(v) = queue.pop_front() {
        for c in g.out_channels(v) {
            let w = g.chan_head()[c as usize] as usize;
            if h[w] == u32::MAX {
                h[w] = h[v as usize] + 1;
                queue.push_back(w as u32);
            }
        }
    }
    h
}

/// Whether a turn through `v` for which `turn` holds has `y` at one end and, at the other, a
/// switch for which `other` holds.
fn joins(
    g: &SwitchGraph,
    v: u32,
    y: u32,
    other: impl Fn(u32) -> bool,
    turn: &impl Fn(u32, u32) -> bool,
) -> bool {
    let (tail, head) = (g.chan_tail(), g.chan_head());
    g.in_channels(v).iter().any(|&c_in| {
        let x = tail[c_in as usize];
        g.out_channels(v).any(|c_out| {
            let z = head[c_out as usize];
            let ends = (x == y && z != y && other(z)) || (z == y && x != y && other(x));
            ends && turn(c_in, c_out)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Fabric;
    use crate::graph::SwitchGraph;
    use crate::topo::by_name;

    /// Turns of every minimal route between leaves (switches with CAs) that climbs, then
    /// descends, by distance from the leaves: a fat tree's routes.
    fn tree_turns(g: &SwitchGraph) -> impl Fn(u32, u32) -> bool + '_ {
        let h = heights(g);
        move |c1, c2| {
            let (x, v, y) = (
                g.chan_tail()[c1 as usize],
                g.chan_head()[c1 as usize],
                g.chan_head()[c2 as usize],
            );
            x != y && !(h[v as usize] < h[x as usize] && h[v as usize] < h[y as usize])
        }
    }

    fn illegal_turns(g: &SwitchGraph, ud: &UpDown, turn: &impl Fn(u32, u32) -> bool) -> usize {
        let mut n = 0;
        for c1 in 0..g.num_channels() as u32 {
            let v = g.chan_head()[c1 as usize];
            for c2 in g.out_channels(v) {
                if turn(c1, c2) && !ud.legal_turn(g, c1, c2) {
                    n += 1;
                }
            }
        }
        n
    }

    fn graph(f: &Fabric) -> SwitchGraph {
        SwitchGraph::new(f).expect("valid fabric")
    }

    #[test]
    fn a_fat_tree_with_failed_cables_keeps_every_tree_turn_legal() {
        for spec in [
            "ktree:6,3,cut=5",
            "ktree:6,3,cut=10,faultseed=2",
            "ktree:4,4,cut=5",
            "fattree3:8,cut=10,faultseed=5",
            "ktree:6,3,spinedown=2,cut=3",
        ] {
            let g = graph(&by_name(spec).unwrap());
            let turn = tree_turns(&g);
            // a leaf switch as root: switch 0 is a leaf in the generators' order
            let bfs = UpDown::with_roots(&g, &[0]);
            let fitted = UpDown::with_roots_fitted(&g, &[0], &turn);
            assert!(
                illegal_turns(&g, &bfs, &turn) > 0,
                "{spec}: BFS order already fits"
            );
            assert_eq!(illegal_turns(&g, &fitted, &turn), 0, "{spec}");
            // still an Up*/Down* order: every switch but the root has an up channel
            for s in 1..g.num_switches() as u32 {
                assert!(
                    g.out_channels(s).any(|c| fitted.is_up(&g, c)),
                    "{spec}: {s}"
                );
                let l = fitted.level[s as usize];
                assert!(g.out_channels(s).any(|c| {
                    let h = g.chan_head()[c as usize] as usize;
                    fitted.is_up(&g, c) && fitted.level[h] + 1 == l
                }));
            }
        }
    }

    #[test]
    fn a_pristine_tree_gets_the_bfs_order() {
        let g = graph(&by_name("ktree:4,3").unwrap());
        let turn = tree_turns(&g);
        let bfs = UpDown::with_roots(&g, &[0]);
        let fitted = UpDown::with_roots_fitted(&g, &[0], &turn);
        assert_eq!(illegal_turns(&g, &bfs, &turn), 0);
        assert_eq!(fitted.level, bfs.level);
        for c in 0..g.num_channels() as u32 {
            assert_eq!(fitted.is_up(&g, c), bfs.is_up(&g, c));
        }
    }
}
