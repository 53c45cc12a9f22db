//! The split graph (§4.3) over classes of identical paths, and the paper's heuristics that colour
//! it: greedy (Fig. 5), split-merge (Fig. 7) and color/S, color/L.

use std::collections::HashMap;

use super::{DegreeScope, Heuristic, Hop, PathSet, SizeOrder};
use crate::bits::{bit, clear, ones, set};

/// The split graph of a [`PathSet`] (§4.3), over classes of identical paths.
#[derive(Clone, Debug)]
pub struct SplitGraph {
    pub(super) n: usize,
    pub(super) words: usize,
    /// `adj[v*words..(v+1)*words]`: the classes `v` splits with.
    pub(super) adj: Vec<u64>,
    pub(super) weight: Vec<u64>,
    /// Input path -> class.
    pub(super) class_of: Vec<u32>,
    /// Every (node, out, class) of the class representatives, sorted: what split-merge walks.
    pub(super) node_hops: Vec<(u32, u32, u32)>,
}

impl SplitGraph {
    pub fn new(paths: &PathSet) -> Self {
        // Merge identical paths into classes (first occurrence order).
        let mut class_of = Vec::with_capacity(paths.len());
        let mut rep: Vec<usize> = Vec::new();
        let mut weight: Vec<u64> = Vec::new();
        let mut index: HashMap<&[Hop], u32> = HashMap::with_capacity(paths.len());
        for i in 0..paths.len() {
            let c = *index.entry(paths.path(i)).or_insert_with(|| {
                rep.push(i);
                weight.push(0);
                (rep.len() - 1) as u32
            });
            weight[c as usize] += u64::from(paths.weight(i));
            class_of.push(c);
        }
        let n = rep.len();
        let words = n.div_ceil(64).max(1);
        let mut node_hops: Vec<(u32, u32, u32)> = Vec::new();
        for (c, &i) in rep.iter().enumerate() {
            node_hops.extend(paths.path(i).iter().map(|h| (h.node, h.out, c as u32)));
        }
        node_hops.sort_unstable();

        // For every node: classes at the node minus those leaving by the same link are split
        // partners. Work per node is (classes at node) x words, output-sensitive enough.
        let mut adj = vec![0u64; n * words];
        let mut at_node = vec![0u64; words];
        let mut same = vec![0u64; words];
        let mut i = 0;
        while i < node_hops.len() {
            let node = node_hops[i].0;
            let mut j = i;
            while j < node_hops.len() && node_hops[j].0 == node {
                j += 1;
            }
            let group = &node_hops[i..j];
            if group.iter().any(|h| h.1 != group[0].1) {
                at_node.iter_mut().for_each(|w| *w = 0);
                for h in group {
                    set(&mut at_node, h.2 as usize);
                }
                let mut a = 0;
                while a < group.len() {
                    let mut b = a;
                    same.iter_mut().for_each(|w| *w = 0);
                    while b < group.len() && group[b].1 == group[a].1 {
                        set(&mut same, group[b].2 as usize);
                        b += 1;
                    }
                    for h in &group[a..b] {
                        let row = &mut adj[h.2 as usize * words..(h.2 as usize + 1) * words];
                        for ((r, &x), &s) in row.iter_mut().zip(&at_node).zip(&same) {
                            *r |= x & !s;
                        }
                    }
                    a = b;
                }
            }
            i = j;
        }
        SplitGraph {
            n,
            words,
            adj,
            weight,
            class_of,
            node_hops,
        }
    }

    /// Number of classes of identical paths (vertices of the split graph).
    pub fn num_classes(&self) -> usize {
        self.n
    }

    pub fn num_paths(&self) -> usize {
        self.class_of.len()
    }

    pub fn class_of(&self, path: usize) -> usize {
        self.class_of[path] as usize
    }

    pub fn class_weight(&self, class: usize) -> u64 {
        self.weight[class]
    }

    pub fn splits(&self, a: usize, b: usize) -> bool {
        bit(self.row(a), b)
    }

    /// Classes that split with `v`.
    pub fn neighbours(&self, v: usize) -> impl Iterator<Item = usize> + '_ {
        ones(self.row(v))
    }

    /// Number of split edges between classes.
    pub fn num_edges(&self) -> usize {
        self.adj
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            / 2
    }

    fn row(&self, v: usize) -> &[u64] {
        &self.adj[v * self.words..(v + 1) * self.words]
    }

    /// Colours the classes with heuristic `h`: `colour[class]`, colours `0..k` in the order the
    /// heuristic created its configurations.
    pub fn color(&self, h: Heuristic) -> Vec<u32> {
        match h {
            Heuristic::Greedy => self.greedy(),
            Heuristic::SplitMergeS => self.split_merge(SizeOrder::SmallestFirst),
            Heuristic::SplitMergeL => self.split_merge(SizeOrder::LargestFirst),
            Heuristic::ColorS => self.color_with(SizeOrder::SmallestFirst, DegreeScope::Round),
            Heuristic::ColorL => self.color_with(SizeOrder::LargestFirst, DegreeScope::Round),
        }
    }

    /// Fig. 5. Equivalent to first-fit colouring in input order.
    fn greedy(&self) -> Vec<u32> {
        let mut colour = vec![u32::MAX; self.n];
        let mut conf_nbrs = vec![0u64; self.words];
        let mut left = self.n;
        let mut k = 0;
        while left > 0 {
            conf_nbrs.iter_mut().for_each(|w| *w = 0);
            for (v, col) in colour.iter_mut().enumerate() {
                if *col == u32::MAX && !bit(&conf_nbrs, v) {
                    *col = k;
                    left -= 1;
                    for (c, &r) in conf_nbrs.iter_mut().zip(self.row(v)) {
                        *c |= r;
                    }
                }
            }
            k += 1;
        }
        colour
    }

    /// Fig. 7. Split phase: for each node in order of usage (weighted number of paths through it;
    /// ascending for /S, descending for /L, ties by node id), every item is cut into one part per
    /// outgoing link used at that node; members of the item that do not visit the node cannot
    /// split there and stay with the heaviest part (the paper leaves their place open; any choice
    /// keeps the parts configurations). Merge phase: Fig. 5 over the items in working-set order.
    fn split_merge(&self, order: SizeOrder) -> Vec<u32> {
        // Node usage from the sorted (node, out, class) table.
        let mut nodes: Vec<(u64, u32, usize, usize)> = Vec::new(); // (usage, node, lo, hi)
        let mut i = 0;
        while i < self.node_hops.len() {
            let node = self.node_hops[i].0;
            let mut j = i;
            let mut usage = 0u64;
            while j < self.node_hops.len() && self.node_hops[j].0 == node {
                usage += self.weight[self.node_hops[j].2 as usize];
                j += 1;
            }
            // Nodes where every path leaves the same way cannot split anything.
            if self.node_hops[i..j]
                .iter()
                .any(|h| h.1 != self.node_hops[i].1)
            {
                nodes.push((usage, node, i, j));
            }
            i = j;
        }
        match order {
            SizeOrder::LargestFirst => nodes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1))),
            SizeOrder::SmallestFirst => nodes.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1))),
        }

        let mut items: Vec<Vec<u32>> = vec![(0..self.n as u32).collect()];
        let mut label = vec![u32::MAX; self.n];
        let mut next: Vec<Vec<u32>> = Vec::new();
        let mut parts: Vec<(u32, u64, Vec<u32>)> = Vec::new(); // (out, weight, members)
        for &(_, _, lo, hi) in &nodes {
            for h in &self.node_hops[lo..hi] {
                label[h.2 as usize] = h.1;
            }
            next.clear();
            for item in items.drain(..) {
                parts.clear();
                let mut free = Vec::new();
                for &v in &item {
                    let l = label[v as usize];
                    if l == u32::MAX {
                        free.push(v);
                        continue;
                    }
                    match parts.iter_mut().find(|p| p.0 == l) {
                        Some(p) => {
                            p.1 += self.weight[v as usize];
                            p.2.push(v);
                        }
                        None => parts.push((l, self.weight[v as usize], vec![v])),
                    }
                }
                if parts.len() <= 1 {
                    next.push(item);
                    continue;
                }
                let heaviest =
                    (0..parts.len()).fold(0, |b, p| if parts[p].1 > parts[b].1 { p } else { b });
                parts[heaviest].2.extend_from_slice(&free);
                parts[heaviest].2.sort_unstable();
                next.extend(parts.drain(..).map(|p| p.2));
            }
            std::mem::swap(&mut items, &mut next);
            for h in &self.node_hops[lo..hi] {
                label[h.2 as usize] = u32::MAX;
            }
        }

        // Merge: greedy over items.
        let mut colour = vec![u32::MAX; self.n];
        let mut done = vec![false; items.len()];
        let mut conf_nbrs = vec![0u64; self.words];
        let mut left = items.len();
        let mut k = 0;
        while left > 0 {
            conf_nbrs.iter_mut().for_each(|w| *w = 0);
            for (it, item) in items.iter().enumerate() {
                if done[it] || item.iter().any(|&v| bit(&conf_nbrs, v as usize)) {
                    continue;
                }
                done[it] = true;
                left -= 1;
                for &v in item {
                    colour[v as usize] = k;
                    for (c, &r) in conf_nbrs.iter_mut().zip(self.row(v as usize)) {
                        *c |= r;
                    }
                }
            }
            k += 1;
        }
        colour
    }

    /// §4.3: colours are applied one by one; each colour repeatedly takes the selectable path of
    /// largest ([`SizeOrder::LargestFirst`], color/L) or smallest (color/S) split degree —
    /// counted with class weights, in the graph `scope` names, ties to the lowest index — and
    /// makes its split partners unselectable until the round ends. The paper's example (Fig. 8) does not tell the scopes
    /// apart; [`DegreeScope::Round`] is what [`SplitGraph::color`] uses.
    pub fn color_with(&self, order: SizeOrder, scope: DegreeScope) -> Vec<u32> {
        let largest = order == SizeOrder::LargestFirst;
        let n = self.n;
        let mut colour = vec![u32::MAX; n];
        let mut uncoloured = vec![0u64; self.words];
        for v in 0..n {
            set(&mut uncoloured, v);
        }
        let weighted_degree = |v: usize, within: &[u64]| -> u64 {
            self.row(v)
                .iter()
                .zip(within)
                .enumerate()
                .map(|(wi, (&r, &u))| {
                    ones(&[r & u])
                        .map(|b| self.weight[wi * 64 + b])
                        .sum::<u64>()
                })
                .sum()
        };
        let mut deg = vec![0u64; n];
        if scope == DegreeScope::Original {
            for (v, d) in deg.iter_mut().enumerate() {
                *d = weighted_degree(v, &uncoloured);
            }
        }
        let mut cand = vec![0u64; self.words];
        let mut left = n;
        let mut k = 0;
        while left > 0 {
            cand.copy_from_slice(&uncoloured);
            if scope != DegreeScope::Original {
                for (v, d) in deg.iter_mut().enumerate() {
                    if bit(&uncoloured, v) {
                        *d = weighted_degree(v, &uncoloured);
                    }
                }
            }
            loop {
                let mut best: Option<usize> = None;
                for v in ones(&cand) {
                    best = match best {
                        None => Some(v),
                        Some(b)
                            if (largest && deg[v] > deg[b]) || (!largest && deg[v] < deg[b]) =>
                        {
                            Some(v)
                        }
                        keep => keep,
                    };
                }
                let Some(v) = best else { break };
                colour[v] = k;
                left -= 1;
                clear(&mut uncoloured, v);
                clear(&mut cand, v);
                if scope == DegreeScope::Dynamic {
                    // Removed partners no longer count towards anyone's degree this round.
                    for u in ones(self.row(v))
                        .filter(|&u| bit(&cand, u))
                        .collect::<Vec<_>>()
                    {
                        for w in ones(self.row(u))
                            .filter(|&w| bit(&cand, w))
                            .collect::<Vec<_>>()
                        {
                            deg[w] -= self.weight[u];
                        }
                    }
                }
                for (c, &r) in cand.iter_mut().zip(self.row(v)) {
                    *c &= !r;
                }
            }
            k += 1;
        }
        colour
    }
}
