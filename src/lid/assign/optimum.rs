//! An optimal colouring of the split graph by exhaustive search (DSATUR branch and bound), the
//! reference the heuristics are judged by on small instances.

use super::{num_colors, Heuristic, SplitGraph};

impl SplitGraph {
    /// An optimal colouring by exhaustive search (DSATUR branch and bound), or `None` when the
    /// graph has more than `max_classes` classes or the search exceeds `max_steps` steps. For tests
    /// and small instances: the problem is NP-complete.
    pub fn optimum(&self, max_classes: usize, max_steps: u64) -> Option<Vec<u32>> {
        // Colours are tracked in 64 counters per vertex, and more classes than that is no longer
        // "small" for an exponential search anyway.
        if self.n > max_classes.min(64) {
            return None;
        }
        let mut best = self.color(Heuristic::ColorL);
        let mut best_k = num_colors(&best);
        if self.n == 0 {
            return Some(best);
        }
        // Largest clique found greedily is a lower bound: stop as soon as we reach it.
        let lower = self.greedy_clique();
        let mut st = Dsatur {
            g: self,
            colour: vec![u32::MAX; self.n],
            // forbidden[v*64 + c]: neighbours of v with colour c (colours < 64 suffice: k <= n <= max)
            forb: vec![0u16; self.n * 64],
            steps: 0,
            max_steps,
            lower,
        };
        if best_k > lower && !st.search(0, &mut best, &mut best_k) {
            return None;
        }
        Some(best)
    }

    fn greedy_clique(&self) -> u32 {
        let mut best = 1;
        for start in 0..self.n {
            let mut clique = vec![start];
            for v in 0..self.n {
                if v != start && clique.iter().all(|&u| self.splits(u, v)) {
                    clique.push(v);
                }
            }
            best = best.max(clique.len() as u32);
        }
        best
    }
}

struct Dsatur<'a> {
    g: &'a SplitGraph,
    colour: Vec<u32>,
    forb: Vec<u16>,
    steps: u64,
    max_steps: u64,
    lower: u32,
}

impl Dsatur<'_> {
    /// Returns false when the step budget ran out.
    fn search(&mut self, used: u32, best: &mut Vec<u32>, best_k: &mut u32) -> bool {
        self.steps += 1;
        if self.steps > self.max_steps {
            return false;
        }
        // Pick the uncoloured vertex with most distinct neighbour colours, then most neighbours.
        let n = self.g.n;
        let mut pick: Option<(u32, usize, usize)> = None;
        for v in 0..n {
            if self.colour[v] != u32::MAX {
                continue;
            }
            let sat = (0..used as usize)
                .filter(|&c| self.forb[v * 64 + c] > 0)
                .count() as u32;
            let deg = self
                .g
                .neighbours(v)
                .filter(|&u| self.colour[u] == u32::MAX)
                .count();
            let better = match pick {
                None => true,
                Some((s, d, _)) => (sat, deg) > (s, d),
            };
            if better {
                pick = Some((sat, deg, v));
            }
        }
        let Some((_, _, v)) = pick else {
            if used < *best_k {
                *best_k = used;
                best.clone_from(&self.colour);
            }
            return true;
        };
        let limit = (used + 1).min(*best_k - 1);
        for c in 0..limit {
            if self.forb[v * 64 + c as usize] > 0 {
                continue;
            }
            self.colour[v] = c;
            let nb: Vec<usize> = self.g.neighbours(v).collect();
            for &u in &nb {
                self.forb[u * 64 + c as usize] += 1;
            }
            let ok = self.search(used.max(c + 1), best, best_k);
            for &u in &nb {
                self.forb[u * 64 + c as usize] -= 1;
            }
            self.colour[v] = u32::MAX;
            if !ok {
                return false;
            }
            if *best_k <= self.lower {
                return true;
            }
        }
        true
    }
}
