//! The channel order of one-lane routing, fitted to the input routes: a heavy acyclic part of
//! their CDG, taken greedily and then improved by sifting channels in the topological order.

use std::cmp::Reverse;
use std::time::Instant;

use crate::graph::SwitchGraph;

use crate::dfsssp::cdg::{topological_order, EdgeIndex};
use crate::dfsssp::dyntopo::{DepEdge, DynTopo, TopoScratch};
use crate::dfsssp::DfssspError;

/// Channels one cycle check of the greedy pass may visit (refusing is safe: the edge stays out),
/// and on average per candidate edge in all, so that the pass costs `O(E)` for `E` input
/// dependency edges. Tori need long checks (64 per check cost the 6x6x6 torus 1.7% of Λ), random
/// fabrics do not; the total bound took the pass on random 640 switches from 1.55 to 0.58 s.
const SEED_SEARCH_LIMIT: usize = 512;
const SEED_WORK_PER_EDGE: u64 = 32;

/// How often the seeding looks at the deadline (edges or channels).
const DEADLINE_CHECK_EVERY: usize = 1024;

/// Fits the order `topo` (with the tree's pins in `counts`) to the input routes: their
/// dependency edges that fit together, one count each. A greedy pass takes them
/// by decreasing `weight` (the paths behind them) where they fit; a local search then moves
/// channels in the topological order to where the forward edges weigh most ([`sift`]), and the
/// seeds become every weighed edge that goes forward. The searches then keep the input's turns
/// where it can, instead of whatever order the tree alone gives.
pub(super) fn seed_input_turns(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    weight: &[u32],
    counts: &mut [u32],
    topo: &mut DynTopo,
    deadline: Option<Instant>,
    begun: Instant,
) -> Result<(), DfssspError> {
    let pinned: Vec<bool> = counts.iter().map(|&n| n > 0).collect();
    let mut cand: Vec<(u32, u32, u32, u32)> = Vec::new();
    for c in 0..g.num_channels() as u32 {
        for slot in 0..ei.degree(c) {
            let e = ei.base[c as usize] + slot;
            if weight[e as usize] > 0 && !pinned[e as usize] {
                cand.push((weight[e as usize], e, c, ei.target(g, c, slot)));
            }
        }
    }
    if cand.is_empty() {
        return Ok(());
    }
    cand.sort_unstable_by_key(|&(w, e, _, _)| (Reverse(w), e));
    let mut sc = TopoScratch::default();
    let budget = SEED_WORK_PER_EDGE.saturating_mul(cand.len() as u64);
    let start = topo.searched;
    for (i, &(_, e, c1, c2)) in cand.iter().enumerate() {
        // A candidate routing stops here too once past its deadline (the searches' pace judges
        // only after the order is fitted).
        if i.is_multiple_of(DEADLINE_CHECK_EVERY) {
            crate::dfsssp::past_deadline(deadline, begun)?;
        }
        let left = budget.saturating_sub(topo.searched - start);
        let limit = usize::try_from(left).map_or(SEED_SEARCH_LIMIT, |l| l.min(SEED_SEARCH_LIMIT));
        if topo.try_insert(g, ei, counts, &mut sc, DepEdge { from: c1, to: c2 }, limit) {
            counts[e as usize] += 1;
        }
    }
    let mut order = topological_order(g, ei, counts)
        .ok_or_else(|| DfssspError::Internal("seeded one-lane layer has a cycle".into()))?;
    sift(
        g,
        ei,
        |e| {
            if pinned[e as usize] {
                PIN_WEIGHT
            } else {
                u64::from(weight[e as usize])
            }
        },
        &mut order,
        deadline,
    );
    let mut pos = vec![0u32; order.len()];
    for (i, &c) in order.iter().enumerate() {
        pos[c as usize] = i as u32;
    }
    for &(_, e, c1, c2) in &cand {
        counts[e as usize] = u32::from(pos[c1 as usize] < pos[c2 as usize]);
    }
    let searched = topo.searched;
    *topo = DynTopo::from_order(&order).with_max_span(topo.max_span());
    topo.searched = searched;
    if !topo.fits(g, ei, counts) {
        return Err(DfssspError::Internal(
            "local search broke a spanning-tree turn".into(),
        ));
    }
    Ok(())
}

/// Weight of a pinned (spanning-tree) edge in [`sift`]: more than all input dependencies together
/// (at most 2^32 paths of 2^32 each would not reach it either; weights are summed in `i128`), so
/// no move ever turns one backwards.
pub(super) const PIN_WEIGHT: u64 = 1 << 62;

/// Sweeps of [`sift`] at most: more than two gained nothing measurable.
const SIFT_SWEEPS: usize = 4;

/// Local search for a heavy acyclic subgraph (the *insertion* or *sifting* heuristic for the
/// feedback arc set): each channel in turn moves to the position in `order` where the edges from
/// and to it that go forward weigh most (`weight` per [`EdgeIndex`] slot; 0 = not an edge), as
/// long as that is more than where it is. Never lowers the forward weight; every edge of weight
/// [`PIN_WEIGHT`] that went forward still does. Cost per sweep: the channels' degrees (sorted) plus
/// the positions moved over. Ends early (every move so far kept) once past `deadline`.
pub(super) fn sift(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    weight: impl Fn(u32) -> u64,
    order: &mut Vec<u32>,
    deadline: Option<Instant>,
) {
    let nc = order.len();
    if nc < 2 {
        return;
    }
    // In-edges per channel (flat, by head): tail and weight.
    let mut start = vec![0u32; nc + 1];
    for c in 0..nc as u32 {
        for slot in 0..ei.degree(c) {
            if weight(ei.base[c as usize] + slot) > 0 {
                start[ei.target(g, c, slot) as usize + 1] += 1;
            }
        }
    }
    for i in 0..nc {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut ins = vec![(0u32, 0u64); start[nc] as usize];
    for c in 0..nc as u32 {
        for slot in 0..ei.degree(c) {
            let w = weight(ei.base[c as usize] + slot);
            if w > 0 {
                let h = ei.target(g, c, slot) as usize;
                ins[fill[h] as usize] = (c, w);
                fill[h] += 1;
            }
        }
    }
    let mut pos = vec![0usize; nc];
    for (i, &c) in order.iter().enumerate() {
        pos[c as usize] = i;
    }
    // (insertion index from which the edge's contribution changes, the change).
    let mut events: Vec<(usize, i128)> = Vec::new();
    for _ in 0..SIFT_SWEEPS {
        let mut moved = false;
        for v in 0..nc as u32 {
            if (v as usize).is_multiple_of(DEADLINE_CHECK_EVERY)
                && deadline.is_some_and(|d| Instant::now() > d)
            {
                return;
            }
            let pv = pos[v as usize];
            // Positions in the order without `v`; inserting at `p` puts `v` at `p`.
            let without = |p: usize| if p > pv { p - 1 } else { p };
            events.clear();
            let mut at_zero = 0i128;
            for &(u, w) in &ins[start[v as usize] as usize..start[v as usize + 1] as usize] {
                events.push((without(pos[u as usize]) + 1, i128::from(w)));
            }
            for slot in 0..ei.degree(v) {
                let w = weight(ei.base[v as usize] + slot);
                if w > 0 {
                    let x = ei.target(g, v, slot);
                    at_zero += i128::from(w);
                    events.push((without(pos[x as usize]) + 1, -i128::from(w)));
                }
            }
            events.sort_unstable();
            // Forward weight at insertion index p: at_zero plus every event at or before p.
            let value_at = |p: usize| -> i128 {
                at_zero
                    + events
                        .iter()
                        .take_while(|&&(i, _)| i <= p)
                        .map(|&(_, d)| d)
                        .sum::<i128>()
            };
            let here = value_at(pv);
            let (mut best, mut best_p) = (here, pv);
            let mut value = at_zero;
            let mut k = 0;
            while k < events.len() {
                let p = events[k].0;
                while k < events.len() && events[k].0 == p {
                    value += events[k].1;
                    k += 1;
                }
                if value > best {
                    (best, best_p) = (value, p);
                }
            }
            if at_zero > best {
                (best, best_p) = (at_zero, 0);
            }
            if best > here && best_p != pv {
                order.remove(pv);
                order.insert(best_p, v);
                for i in pv.min(best_p)..=pv.max(best_p) {
                    pos[order[i] as usize] = i;
                }
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}
