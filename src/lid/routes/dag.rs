//! The legal-path DAG of one source switch: Up*/Down* states (switch, gone down yet), their
//! shortest legal distances, and the shortest, least-weight or random legal path to a switch.

use rand::Rng;

use super::RootedUpDown;
use crate::graph::{SwitchGraph, NO_CHANNEL};

/// How the least-weight shortest legal path is chosen, by channel weight (the metric of
/// shortest-widest routing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathMetric {
    /// Least sum of weights along the path.
    #[default]
    Sum,
    /// Least largest weight on the path ("widest"); ties to the path found first.
    Bottleneck,
}

/// Legal-path states: `2*switch + phase`, phase 0 = only up channels so far, 1 = gone down.
#[inline]
pub(super) fn next_state(ud: &RootedUpDown, g: &SwitchGraph, state: u32, c: u32) -> Option<u32> {
    let phase = state & 1;
    let up = ud.up[c as usize];
    if up && phase == 1 {
        return None;
    }
    Some(2 * g.chan_head()[c as usize] + u32::from(!up || phase == 1))
}

/// The shortest legal paths from one switch as a layered DAG over states: BFS distances and the
/// edges that advance one layer, in BFS order of their tail.
pub(super) struct Dag {
    src_state: u32,
    dist: Vec<u32>,
    /// BFS position of every state (u32::MAX if unreachable).
    pos: Vec<u32>,
    /// (from state, to state, channel)
    edges: Vec<(u32, u32, u32)>,
}

impl Dag {
    pub(super) fn new(g: &SwitchGraph, ud: &RootedUpDown, src: u32) -> Self {
        let ns = 2 * g.num_switches();
        let mut dist = vec![u32::MAX; ns];
        let mut order = Vec::with_capacity(ns);
        dist[2 * src as usize] = 0;
        order.push(2 * src);
        let mut i = 0;
        let mut edges = Vec::new();
        while i < order.len() {
            let u = order[i];
            i += 1;
            for c in g.out_channels(u / 2) {
                let Some(v) = next_state(ud, g, u, c) else {
                    continue;
                };
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    order.push(v);
                }
                if dist[v as usize] == dist[u as usize] + 1 {
                    edges.push((u, v, c));
                }
            }
        }
        let mut pos = vec![u32::MAX; ns];
        for (i, &st) in order.iter().enumerate() {
            pos[st as usize] = i as u32;
        }
        Dag {
            src_state: 2 * src,
            dist,
            pos,
            edges,
        }
    }

    /// Legal hop distance to switch `b`.
    pub(super) fn hops_to(&self, b: u32) -> u32 {
        self.dist[2 * b as usize].min(self.dist[2 * b as usize + 1])
    }

    /// Least-weight shortest legal path to `b`; appends its channels to `out`. False when `b` is
    /// unreachable. Ties go to the channel found first (lowest channel id in BFS order), so
    /// results are deterministic.
    pub(super) fn best_path(
        &self,
        b: u32,
        weight: &[u64],
        metric: PathMetric,
        scratch: &mut DagScratch,
        out: &mut Vec<u32>,
    ) -> bool {
        let h = self.hops_to(b);
        if h == u32::MAX {
            return false;
        }
        let DagScratch {
            best,
            pred,
            touched,
        } = scratch;
        for &s in touched.iter() {
            best[s as usize] = u64::MAX;
        }
        touched.clear();
        let src = self.src_state;
        if h == 0 {
            return true;
        }
        best[src as usize] = 0;
        touched.push(src);
        for &(u, v, c) in &self.edges {
            if self.dist[u as usize] >= h {
                break;
            }
            let bu = best[u as usize];
            if bu == u64::MAX {
                continue;
            }
            let w = match metric {
                PathMetric::Sum => bu + weight[c as usize],
                PathMetric::Bottleneck => bu.max(weight[c as usize]),
            };
            if best[v as usize] == u64::MAX {
                touched.push(v);
            }
            if w < best[v as usize] {
                best[v as usize] = w;
                pred[v as usize] = (u, c);
            }
        }
        let (e0, e1) = (2 * b, 2 * b + 1);
        let end = match (self.dist[e0 as usize] == h, self.dist[e1 as usize] == h) {
            (true, true) if best[e1 as usize] < best[e0 as usize] => e1,
            (true, _) => e0,
            _ => e1,
        };
        if best[end as usize] == u64::MAX {
            return false;
        }
        let start = out.len();
        let mut s = end;
        while self.dist[s as usize] > 0 {
            let (t, c) = pred[s as usize];
            out.push(c);
            s = t;
        }
        out[start..].reverse();
        true
    }
}

impl Dag {
    /// A shortest legal path to `b` drawn uniformly at random among all of them (count the paths
    /// from every state backwards, then walk forwards choosing successors in proportion).
    pub(super) fn random_path<R: Rng>(
        &self,
        b: u32,
        rng: &mut R,
        count: &mut Vec<f64>,
        out: &mut Vec<u32>,
    ) -> bool {
        let h = self.hops_to(b);
        if h == u32::MAX {
            return false;
        }
        if h == 0 {
            return true;
        }
        count.clear();
        count.resize(self.dist.len(), 0.0);
        for e in [2 * b, 2 * b + 1] {
            if self.dist[e as usize] == h {
                count[e as usize] = 1.0;
            }
        }
        // Edges are in BFS order of their tails, so backwards every head is final before its tail.
        for &(u, v, _) in self.edges.iter().rev() {
            if self.dist[u as usize] < h {
                count[u as usize] += count[v as usize];
            }
        }
        let mut u = self.src_state;
        while self.dist[u as usize] < h {
            let lo = self
                .edges
                .partition_point(|e| self.order_pos(e.0) < self.order_pos(u));
            let succ = self.edges[lo..].iter().take_while(|e| e.0 == u);
            let mut x = rng.gen::<f64>() * count[u as usize];
            let mut pick = None;
            for &(_, v, c) in succ {
                if count[v as usize] > 0.0 {
                    pick = Some((v, c));
                    x -= count[v as usize];
                    if x < 0.0 {
                        break;
                    }
                }
            }
            let Some((v, c)) = pick else { return false };
            out.push(c);
            u = v;
        }
        true
    }

    /// Position of a state in BFS order (edges are sorted by it).
    pub(super) fn order_pos(&self, state: u32) -> u32 {
        self.pos[state as usize]
    }
}

pub(super) struct DagScratch {
    best: Vec<u64>,
    /// (predecessor state, channel) on the best path
    pred: Vec<(u32, u32)>,
    touched: Vec<u32>,
}

impl DagScratch {
    pub(super) fn new(g: &SwitchGraph) -> Self {
        let ns = 2 * g.num_switches();
        DagScratch {
            best: vec![u64::MAX; ns],
            pred: vec![(u32::MAX, NO_CHANNEL); ns],
            touched: Vec::new(),
        }
    }
}
