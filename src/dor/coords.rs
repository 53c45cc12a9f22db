//! Torus (and mesh) recognition from the switch graph alone: every switch's coordinates in a
//! k-ary d-dimensional torus, or `None` for anything that is not one.
//!
//! The graph of a torus is the Cartesian product of its rings (a mesh: of paths). Two edges
//! (with parallel links counted once) at one switch lie on a common 4-cycle exactly when they
//! belong to different dimensions, and the opposite edges of a 4-cycle belong to the same
//! dimension. Union-find over the edges with these two rules gives one class per dimension;
//! removing a class's edges leaves the dimension's hyperplanes (the switches with one
//! coordinate fixed), and the class's edges join them into a ring or a line: a switch's
//! position along it is its coordinate. Nothing is trusted: the coordinates found are checked to
//! map the switches one to one onto the grid, with every edge one step in one dimension and every
//! grid neighbour linked. A faulty torus (a whole neighbour pair cut) is then no torus. Other
//! fabrics fail early: at a switch of more than 2 × [`MAX_DIMS`] neighbours, or at two neighbours
//! with more than one other neighbour in common (a square has one).
//!
//! A 4-ring is also two 2-rings (C4 = K2 × K2) and no inference can tell them apart; the rules
//! above read it as two 2-rings (the hypercube reading): `torus:4x4x4` is recognised as six
//! dimensions of size 2. Dimension-order routes over that reading are the 4-ring's with the
//! half-way tie split by the source's position, and need no dateline.
//!
//! **Cost.** With `n` the most distinct neighbours of a switch (at most `2·MAX_DIMS` = 24, `2·d` in
//! a torus of `d` dimensions): the neighbour lists, `O(C log radix)`; the 4-cycle rules, every pair
//! of a switch's neighbours intersected in `O(n)`, `O(S·n³)`; positions and the check, `O(d·S·n)`.
//! So `O(C log radix + S·n³)`, linear in the fabric since `n` is bounded, in `O(S·n)` memory. A
//! switch of more neighbours stops it while the lists are built, two neighbours with more than one
//! other in common at that pair.

use crate::graph::SwitchGraph;
use crate::union_find::UnionFind;

/// At most this many dimensions (a switch with more distinct neighbours is no torus switch here).
pub const MAX_DIMS: usize = 12;

/// The coordinates of every switch of a torus or mesh recognised in a switch graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusCoords {
    /// Size of each dimension, in routing order.
    pub sizes: Vec<u32>,
    /// Whether each dimension is a ring (wraps around) or a line (a mesh dimension). A dimension
    /// of size 2 is a line: its one link per switch is both ways around.
    pub wrap: Vec<bool>,
    /// `coords[s * dims + i]`: switch `s`'s position in dimension `i`.
    coords: Vec<u32>,
    /// The switch at each grid point (mixed radix, dimension 0 least significant).
    at: Vec<u32>,
}

impl TorusCoords {
    pub fn dims(&self) -> usize {
        self.sizes.len()
    }

    /// Switch `s`'s coordinates.
    pub fn of(&self, s: u32) -> &[u32] {
        let d = self.dims();
        &self.coords[s as usize * d..(s as usize + 1) * d]
    }

    /// The switch at coordinates `c`.
    pub fn switch_at(&self, c: &[u32]) -> u32 {
        let mut idx = 0usize;
        for (i, &x) in c.iter().enumerate().rev() {
            idx = idx * self.sizes[i] as usize + x as usize;
        }
        self.at[idx]
    }

    /// What it is, for the log: `6x6x6 torus`, `5x4 mesh`, `6x4m torus` (a mesh dimension marked).
    pub fn describe(&self) -> String {
        // A grid of 2-rings (the 4x4x4 torus as read here) is a torus too.
        let ring = self.wrap.iter().any(|&w| w) || self.sizes.iter().all(|&k| k == 2);
        if ring {
            format!("{} torus", self.shape())
        } else {
            format!(
                "{} mesh",
                self.sizes
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            )
        }
    }

    /// The sizes as `6x6x6` (rings) with mesh dimensions marked `6m`.
    pub fn shape(&self) -> String {
        let dims: Vec<String> = self
            .sizes
            .iter()
            .zip(&self.wrap)
            .map(|(k, &w)| {
                if w || *k <= 2 {
                    k.to_string()
                } else {
                    format!("{k}m")
                }
            })
            .collect();
        dims.join("x")
    }
}

/// Recognises a torus or mesh of at least two switches; `None` for anything else (also for a
/// disconnected graph, a torus missing a link between two neighbours, or more than [`MAX_DIMS`]
/// dimensions). Deterministic: switch ids are in GUID order, and dimensions are numbered by their
/// first edge in that order.
pub fn recognise(g: &SwitchGraph) -> Option<TorusCoords> {
    let ns = g.num_switches();
    if ns < 2 {
        return None;
    }
    // Distinct neighbours of every switch, with an id per undirected edge.
    let mut adj: Vec<Vec<(u32, u32)>> = Vec::with_capacity(ns);
    for s in 0..ns as u32 {
        let mut nb: Vec<u32> = g
            .out_channels(s)
            .map(|c| g.chan_head()[c as usize])
            .filter(|&h| h != s)
            .collect();
        nb.sort_unstable();
        nb.dedup();
        // The quick check that keeps fat trees and random fabrics cheap.
        if nb.is_empty() || nb.len() > 2 * MAX_DIMS {
            return None;
        }
        adj.push(nb.into_iter().map(|v| (v, u32::MAX)).collect());
    }
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for (u, nb) in adj.iter_mut().enumerate() {
        for (v, e) in nb.iter_mut() {
            if (u as u32) < *v {
                *e = edges.len() as u32;
                edges.push((u as u32, *v));
            }
        }
    }
    for u in 0..ns {
        for k in 0..adj[u].len() {
            let v = adj[u][k].0;
            if v < u as u32 {
                adj[u][k].1 = edge_id(&adj, v, u as u32)?;
            }
        }
    }

    let mut sets = UnionFind::new(edges.len());
    let mut common = Vec::new();
    for u in 0..ns as u32 {
        let nb = &adj[u as usize];
        for x in 0..nb.len() {
            for y in x + 1..nb.len() {
                let ((a, ea), (b, eb)) = (nb[x], nb[y]);
                common.clear();
                intersect(&adj[a as usize], &adj[b as usize], u, &mut common);
                // Two neighbours of a torus switch share at most one other neighbour (the corner
                // of their square); fat trees fail here at their first pair of leaves.
                if common.len() > 1 {
                    return None;
                }
                if common.is_empty() {
                    // No 4-cycle through both edges: one ring (or line) goes straight through u.
                    sets.union(ea, eb);
                }
                for &(w, ew_a, ew_b) in &common {
                    debug_assert_ne!(w, u);
                    // 4-cycle u-a-w-b: opposite edges are in the same dimension.
                    sets.union(ea, ew_b);
                    sets.union(eb, ew_a);
                }
            }
        }
    }
    // Classes numbered by their first edge.
    let mut class_of_root = vec![u32::MAX; edges.len()];
    let mut class = vec![0u32; edges.len()];
    let mut dims = 0usize;
    for e in 0..edges.len() as u32 {
        let r = sets.find(e) as usize;
        if class_of_root[r] == u32::MAX {
            class_of_root[r] = dims as u32;
            dims += 1;
            if dims > MAX_DIMS {
                return None;
            }
        }
        class[e as usize] = class_of_root[r];
    }

    let mut sizes = Vec::with_capacity(dims);
    let mut wrap = Vec::with_capacity(dims);
    let mut coords = vec![0u32; ns * dims];
    for i in 0..dims as u32 {
        let (size, ring, pos) = positions(ns, &edges, &class, i)?;
        sizes.push(size);
        wrap.push(ring);
        for s in 0..ns {
            coords[s * dims + i as usize] = pos[s];
        }
    }
    let t = TorusCoords {
        at: Vec::new(),
        sizes,
        wrap,
        coords,
    };
    verified(t, &adj, &edges, &class)
}

/// The id of edge `u`-`v` in `u`'s list.
fn edge_id(adj: &[Vec<(u32, u32)>], u: u32, v: u32) -> Option<u32> {
    let nb = &adj[u as usize];
    nb.binary_search_by_key(&v, |&(w, _)| w)
        .ok()
        .map(|k| nb[k].1)
}

/// The common neighbours of two switches other than `skip`, with their edges to each.
fn intersect(a: &[(u32, u32)], b: &[(u32, u32)], skip: u32, out: &mut Vec<(u32, u32, u32)>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if a[i].0 != skip {
                    out.push((a[i].0, a[i].1, b[j].1));
                }
                i += 1;
                j += 1;
            }
        }
    }
}

/// Dimension `i`'s size, whether it is a ring, and every switch's position along it: the
/// hyperplanes (components without the class's edges) in the order the class's edges chain them.
fn positions(
    ns: usize,
    edges: &[(u32, u32)],
    class: &[u32],
    i: u32,
) -> Option<(u32, bool, Vec<u32>)> {
    let mut sets = UnionFind::new(ns);
    for (e, &(u, v)) in edges.iter().enumerate() {
        if class[e] != i {
            sets.union(u, v);
        }
    }
    // Hyperplanes numbered by their lowest switch (the smaller root wins).
    let mut plane_of_root = vec![u32::MAX; ns];
    let mut plane = vec![0u32; ns];
    let mut planes = 0u32;
    for s in 0..ns as u32 {
        let r = sets.find(s) as usize;
        if plane_of_root[r] == u32::MAX {
            plane_of_root[r] = planes;
            planes += 1;
        }
        plane[s as usize] = plane_of_root[r];
    }
    let k = planes as usize;
    if k < 2 || !ns.is_multiple_of(k) {
        return None;
    }
    let mut members = vec![0usize; k];
    for &p in &plane {
        members[p as usize] += 1;
    }
    if members.iter().any(|&m| m != ns / k) {
        return None;
    }
    // The planes' neighbours along the dimension: at most two each.
    let mut next: Vec<Vec<u32>> = vec![Vec::new(); k];
    for (e, &(u, v)) in edges.iter().enumerate() {
        if class[e] != i {
            continue;
        }
        let (a, b) = (plane[u as usize], plane[v as usize]);
        if a == b {
            return None;
        }
        for (x, y) in [(a, b), (b, a)] {
            if !next[x as usize].contains(&y) {
                next[x as usize].push(y);
                if next[x as usize].len() > 2 {
                    return None;
                }
            }
        }
    }
    for n in &mut next {
        n.sort_unstable();
    }
    let ends: Vec<u32> = (0..k as u32)
        .filter(|&p| next[p as usize].len() == 1)
        .collect();
    let ring = match ends.len() {
        0 => true,
        // k == 2: both planes are ends of one link.
        2 => false,
        _ => return None,
    };
    // A ring starts at switch 0's plane towards its lower-numbered neighbour; a line at its end
    // with the lower number.
    let mut order = Vec::with_capacity(k);
    let mut at = if ring { plane[0] } else { ends[0] };
    let mut prev = u32::MAX;
    let mut pos_of_plane = vec![u32::MAX; k];
    loop {
        if pos_of_plane[at as usize] != u32::MAX {
            break;
        }
        pos_of_plane[at as usize] = order.len() as u32;
        order.push(at);
        match next[at as usize].iter().find(|&&p| p != prev) {
            Some(&p) => {
                prev = at;
                at = p;
            }
            None => break,
        }
    }
    if order.len() != k {
        return None;
    }
    let pos = plane.iter().map(|&p| pos_of_plane[p as usize]).collect();
    Some((k as u32, ring && k > 2, pos))
}

/// `t` with its grid index, when the coordinates describe the graph exactly: one switch per grid
/// point, every edge one step in its own dimension, every grid neighbour linked.
fn verified(
    mut t: TorusCoords,
    adj: &[Vec<(u32, u32)>],
    edges: &[(u32, u32)],
    class: &[u32],
) -> Option<TorusCoords> {
    let ns = adj.len();
    let points = t
        .sizes
        .iter()
        .try_fold(1usize, |n, &k| n.checked_mul(k as usize))?;
    if points != ns {
        return None;
    }
    t.at = vec![u32::MAX; ns];
    for s in 0..ns as u32 {
        let mut idx = 0usize;
        for (i, &x) in t.of(s).iter().enumerate().rev() {
            idx = idx * t.sizes[i] as usize + x as usize;
        }
        if t.at[idx] != u32::MAX {
            return None;
        }
        t.at[idx] = s;
    }
    for (e, &(u, v)) in edges.iter().enumerate() {
        let i = class[e] as usize;
        let (cu, cv) = (t.of(u), t.of(v));
        let others_equal = (0..t.dims()).all(|j| j == i || cu[j] == cv[j]);
        let k = t.sizes[i];
        let step = (cu[i] + 1) % k == cv[i] || (cv[i] + 1) % k == cu[i];
        let wraps = cu[i].abs_diff(cv[i]) == k - 1 && k > 2;
        if !others_equal || !step || (wraps && !t.wrap[i]) {
            return None;
        }
    }
    // Every switch has as many distinct neighbours as its grid point: with the edges all grid
    // steps and the points one to one, no grid link is missing.
    for s in 0..ns as u32 {
        let expect: usize = t
            .of(s)
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let k = t.sizes[i];
                if t.wrap[i] {
                    2
                } else {
                    usize::from(x > 0) + usize::from(x + 1 < k)
                }
            })
            .sum();
        if adj[s as usize].len() != expect {
            return None;
        }
    }
    Some(t)
}
