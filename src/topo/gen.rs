//! The generators proper. Each takes a params struct, validates it and returns a [`Fabric`].

use std::collections::HashSet;

use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{param_err, Net, TopoError};
use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};

/// Refuse fabrics whose node count cannot fit the LID space long before allocating them.
const MAX_NODES: u64 = u16::MAX as u64;

fn checked_product(
    generator: &'static str,
    xs: impl IntoIterator<Item = u64>,
) -> Result<u64, TopoError> {
    let mut p = 1u64;
    for x in xs {
        p = p
            .checked_mul(x)
            .filter(|&p| p <= MAX_NODES)
            .ok_or_else(|| param_err(generator, format!("more than {MAX_NODES} nodes")))?;
    }
    Ok(p)
}

/// Adds `c` single-port CAs to switch `sw` on its ports `1..=c`, named `H-<running index>`.
fn attach_cas(net: &mut Net, sw: u32, c: u32, ca_count: &mut u32) -> Result<(), TopoError> {
    for p in 1..=c {
        let ca = net.ca(1, format!("H-{}", *ca_count))?;
        *ca_count += 1;
        net.link(ca, 1, sw, p)?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Trees

/// Most parallel cables a bundle may have between a leaf and a switch above it.
pub const MAX_BUNDLE: u32 = 6;

/// What real clusters add to the textbook trees (options of `ktree`, `xgft`, `fattree2`,
/// `fattree3`): cable bundles, leaves not all full, and NVIDIA SHARP aggregation nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeOptions {
    /// Parallel cables between each leaf and each switch it reaches above (1..=[`MAX_BUNDLE`]).
    /// Only the leaf level is bundled; links higher up stay single. How the families make room
    /// for the extra cables: see [`xgft`], [`kary_ntree`], [`fat_tree2`].
    pub bundle: u32,
    /// `Some(min)`: leaf `l` gets `min..=D` CAs (D the family's CAs per leaf), drawn from `seed`,
    /// at least one leaf with `min` and one with D; a leaf's CAs stay on its lowest ports and the
    /// ports above them up to D stay free. Needs single-port CAs (XGFT w_1 = 1).
    pub uneven: Option<u32>,
    /// Seed of the uneven draw.
    pub seed: u64,
    /// One aggregation node per switch: a 1-port CA described "Mellanox Technologies Aggregation
    /// Node" on one more port than the tree uses, the switch's highest (NVIDIA Quantum switches
    /// report 41 or 65 ports for 40 or 64 cages, the last port being their SHARP node).
    pub aggr: bool,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions {
            bundle: 1,
            uneven: None,
            seed: 1,
            aggr: false,
        }
    }
}

/// CAs per leaf for `leaves` leaves: each drawn in `min..=max` from `seed`, then one leaf (drawn)
/// set to `min` and another to `max`, so the spread is real.
pub(crate) fn leaf_ca_counts(
    generator: &'static str,
    leaves: u64,
    min: u32,
    max: u32,
    seed: u64,
) -> Result<Vec<u32>, TopoError> {
    if min > max {
        return Err(param_err(
            generator,
            format!("at least {min} CAs per leaf, more than the {max} a leaf holds"),
        ));
    }
    if min < max && leaves < 2 {
        return Err(param_err(
            generator,
            format!("{min}..={max} CAs per leaf needs two leaves (one at each end), got {leaves}"),
        ));
    }
    let n = leaves as usize;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut counts: Vec<u32> = (0..n).map(|_| rng.gen_range(min..=max)).collect();
    if min < max {
        let lo = rng.gen_range(0..n);
        let hi = rng.gen_range(0..n - 1);
        let hi = if hi >= lo { hi + 1 } else { hi };
        counts[lo] = min;
        counts[hi] = max;
    }
    Ok(counts)
}

/// Node description of an aggregation node, as NVIDIA's SHARP switches report theirs.
pub const AGGREGATION_NODE_DESC: &str = "Mellanox Technologies Aggregation Node";

/// Adds an aggregation node (1-port CA, [`AGGREGATION_NODE_DESC`]) on port `port` of each switch.
pub(crate) fn attach_aggregation_nodes(
    net: &mut Net,
    switches: impl IntoIterator<Item = (u32, u32)>,
) -> Result<(), TopoError> {
    for (sw, port) in switches {
        let an = net.ca(1, AGGREGATION_NODE_DESC.to_string())?;
        net.link(an, 1, sw, port)?;
    }
    Ok(())
}

/// Extended generalized fat tree XGFT(h; m_1..m_h; w_1..w_h) (Öhring et al.): level 0 holds the
/// CAs, every level-i node has `m_i` children and `w_{i+1}` parents. Level-i switches use ports
/// `1..=m_i` downwards (child digit + 1) and `m_i+1..=m_i+w_{i+1}` upwards; CAs have `w_1` ports.
///
/// With `bundle = B` each leaf (level 1) reaches each of its `w_2` parents by B parallel cables:
/// the leaf's up ports are `m_1+1..=m_1+B·w_2` (parent-major), a level-2 switch's down ports
/// `1..=B·m_2` (child-major), and its up ports follow. The radix: `None` = the largest number of
/// ports any level needs, bundles counted; a given radix must hold them all, or it is an error.
/// With `aggr`, every switch has one port more, its last, with the aggregation node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XgftParams {
    pub m: Vec<u32>,
    pub w: Vec<u32>,
    /// Cable ports of every switch; `None` = the largest number any level needs.
    pub radix: Option<u32>,
    pub opts: TreeOptions,
    pub lmc: u8,
}

/// Node counts per level (index 0 = CAs) of an XGFT.
pub fn xgft_level_sizes(m: &[u32], w: &[u32]) -> Vec<u64> {
    let h = m.len();
    (0..=h)
        .map(|i| {
            let up: u64 = w[..i].iter().map(|&x| u64::from(x)).product();
            let down: u64 = m[i..].iter().map(|&x| u64::from(x)).product();
            up.saturating_mul(down)
        })
        .collect()
}

pub fn xgft(p: &XgftParams) -> Result<Fabric, TopoError> {
    xgft_named(p, "xgft", "xgft")
}

fn xgft_named(p: &XgftParams, generator: &'static str, label: &str) -> Result<Fabric, TopoError> {
    let h = p.m.len();
    if h == 0 || h != p.w.len() {
        return Err(param_err(
            generator,
            format!(
                "need h >= 1 and as many w as m (got {} m, {} w)",
                h,
                p.w.len()
            ),
        ));
    }
    if h > 16 {
        return Err(param_err(generator, format!("height {h} above 16")));
    }
    if p.m.iter().chain(&p.w).any(|&x| x == 0) {
        return Err(param_err(generator, "every m_i and w_i must be >= 1"));
    }
    if p.w[0] > (1 << super::CA_GUID_SHIFT) - 1 {
        return Err(param_err(
            generator,
            format!("w_1 = {} CA ports; at most 15", p.w[0]),
        ));
    }
    let bundle = p.opts.bundle;
    if !(1..=MAX_BUNDLE).contains(&bundle) {
        return Err(param_err(
            generator,
            format!("bundle={bundle}: 1..={MAX_BUNDLE} cables per leaf and switch above"),
        ));
    }
    if bundle > 1 && h < 2 {
        return Err(param_err(
            generator,
            format!("bundle={bundle}: no switches above the leaves to bundle cables to"),
        ));
    }
    for i in 0..=h {
        let mut xs: Vec<u64> = p.w[..i].iter().map(|&x| u64::from(x)).collect();
        xs.extend(p.m[i..].iter().map(|&x| u64::from(x)));
        checked_product(generator, xs)?;
    }
    let sizes = xgft_level_sizes(&p.m, &p.w);
    let switches: u64 = sizes[1..].iter().sum();
    let ans = if p.opts.aggr { switches } else { 0 };
    if sizes.iter().sum::<u64>() + ans > MAX_NODES {
        return Err(param_err(generator, format!("more than {MAX_NODES} nodes")));
    }
    // Cables between a level-i node and each of its parents: the bundle at the leaves, else one.
    let mult = |i: usize| if i == 1 { bundle } else { 1 };
    // Ports a level-i switch (i >= 1) uses downwards: m_i children, bundled at level 2.
    let down = |i: usize| u64::from(p.m[i - 1]) * u64::from(mult(i - 1));
    let up = |i: usize| {
        if i < h {
            u64::from(p.w[i]) * u64::from(mult(i))
        } else {
            0
        }
    };
    let (need, level) = (1..=h)
        .map(|i| (down(i) + up(i), i))
        .max()
        .unwrap_or((0, 0));
    let radix = match p.radix {
        None if need > 254 => {
            return Err(param_err(
                generator,
                format!("level-{level} switches would need {need} ports (at most 254)"),
            ))
        }
        None => need as u32,
        Some(r) if u64::from(r) < need => {
            let why = if bundle > 1 {
                format!(" with bundles of {bundle}")
            } else {
                String::new()
            };
            return Err(param_err(
                generator,
                format!(
                    "radix {r} < the {need} ports level-{level} switches need ({} down, {} up){why}",
                    down(level),
                    up(level)
                ),
            ));
        }
        Some(r) => r,
    };
    let ports = radix.saturating_add(u32::from(p.opts.aggr));
    // CAs per leaf, when not every leaf is full
    let per_leaf = match p.opts.uneven {
        None => None,
        Some(_) if p.w[0] != 1 => {
            return Err(param_err(
                generator,
                format!(
                    "uneven leaves need single-port CAs (w_1 = 1, got {})",
                    p.w[0]
                ),
            ))
        }
        Some(min) => Some(leaf_ca_counts(
            generator,
            sizes[1],
            min,
            p.m[0],
            p.opts.seed,
        )?),
    };

    let mut net = Net::new(generator);
    // first node id of each level; switches (levels 1..=h) are created first, then the CAs
    let mut first = vec![0u32; h + 1];
    for i in 1..=h {
        first[i] = net.node_count() as u32;
        for k in 0..sizes[i] {
            net.switch(ports, format!("{label} L{i} S{k}"))?;
        }
    }
    // level-0 node k: its node id, or None for a CA an uneven leaf goes without (with w_1 = 1,
    // CA k sits on port k % m_1 + 1 of leaf k / m_1)
    let mut ca_node = Vec::with_capacity(sizes[0] as usize);
    let mut cas = 0u32;
    for k in 0..sizes[0] {
        let m1 = u64::from(p.m[0]);
        let present = per_leaf
            .as_ref()
            .is_none_or(|c| k % m1 < u64::from(c[(k / m1) as usize]));
        ca_node.push(if present {
            cas += 1;
            Some(net.ca(p.w[0], format!("H-{}", cas - 1))?)
        } else {
            None
        });
    }

    // Digit j (1-based) of a level-i label has radix w_j for j <= i and m_j above.
    let radices = |i: usize| -> Vec<u64> {
        (1..=h)
            .map(|j| u64::from(if j <= i { p.w[j - 1] } else { p.m[j - 1] }))
            .collect()
    };
    let mut digits = vec![0u64; h];
    for i in 0..h {
        let rad = radices(i);
        let rad_up = radices(i + 1);
        let down_i = if i == 0 { 0 } else { down(i) as u32 };
        let par = mult(i);
        for k in 0..sizes[i] {
            let child = if i == 0 {
                match ca_node[k as usize] {
                    Some(n) => n,
                    None => continue,
                }
            } else {
                first[i] + k as u32
            };
            let mut x = k;
            for j in 0..h {
                digits[j] = x % rad[j];
                x /= rad[j];
            }
            let child_digit = digits[i] as u32;
            for b in 0..p.w[i] {
                digits[i] = u64::from(b);
                let mut idx = 0u64;
                for j in (0..h).rev() {
                    idx = idx * rad_up[j] + digits[j];
                }
                let parent = first[i + 1] + idx as u32;
                for c in 0..par {
                    net.link(
                        child,
                        down_i + b * par + c + 1,
                        parent,
                        child_digit * par + c + 1,
                    )?;
                }
            }
        }
    }
    if p.opts.aggr {
        attach_aggregation_nodes(&mut net, (0..switches as u32).map(|s| (s, ports)))?;
    }
    net.into_fabric(p.lmc)
}

/// `ports` cable ports (`what`, e.g. "uplinks per leaf") split into bundles of `bundle` cables: how many switches they
/// reach, or a clear error if they do not split.
fn bundles(g: &'static str, what: &str, ports: u32, bundle: u32) -> Result<u32, TopoError> {
    if !(1..=MAX_BUNDLE).contains(&bundle) {
        return Err(param_err(
            g,
            format!("bundle={bundle}: 1..={MAX_BUNDLE} cables per leaf and switch above"),
        ));
    }
    if ports < bundle {
        return Err(param_err(
            g,
            format!("bundle={bundle}: {ports} {what}, fewer than one bundle"),
        ));
    }
    if !ports.is_multiple_of(bundle) {
        return Err(param_err(
            g,
            format!("bundle={bundle}: {ports} {what} do not split into bundles of {bundle}"),
        ));
    }
    Ok(ports / bundle)
}

/// k-ary n-tree (Petrini & Vanneschi): n levels of k^(n-1) switches with 2k ports, k^n CAs. Equal
/// to XGFT(n; k,..,k; 1,k,..,k).
///
/// Bundles keep the 2k-port switches: with `bundle = B` (B dividing k, n >= 2) a leaf's k uplinks
/// reach k/B level-2 switches by B cables each, and a level-2 switch's k down ports serve k/B
/// leaves: XGFT(n; k,k/B,k,..; 1,k/B,k,..) bundled, k^(n-1)/B switches per level, k^n/B CAs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KaryNTreeParams {
    pub k: u32,
    pub n: u32,
    pub opts: TreeOptions,
    pub lmc: u8,
}

pub fn kary_ntree(p: &KaryNTreeParams) -> Result<Fabric, TopoError> {
    const G: &str = "k-ary n-tree";
    if p.k < 1 || p.n < 1 {
        return Err(param_err(G, "need k >= 1 and n >= 1"));
    }
    if p.n > 16 || 2 * u64::from(p.k) > 254 {
        return Err(param_err(
            G,
            format!("{}-ary {}-tree: 2k must be <= 254 and n <= 16", p.k, p.n),
        ));
    }
    let n = p.n as usize;
    let mut m = vec![p.k; n];
    let mut w = vec![p.k; n];
    w[0] = 1;
    if p.opts.bundle != 1 {
        if n < 2 {
            return Err(param_err(
                G,
                format!(
                    "bundle={}: no switches above the leaves of a 1-level tree",
                    p.opts.bundle
                ),
            ));
        }
        let reach = bundles(G, "uplinks per leaf", p.k, p.opts.bundle)?;
        m[1] = reach;
        w[1] = reach;
    }
    xgft_named(
        &XgftParams {
            m,
            w,
            radix: Some(2 * p.k),
            opts: p.opts,
            lmc: p.lmc,
        },
        G,
        "ktree",
    )
}

/// Fat tree of `radix`-port switches with `down` CA-facing ports per leaf (`radix - down` up).
/// Two levels: `radix` leaves, `radix - down` spines, each leaf linked once to each spine.
/// Three levels: `radix` pods of `radix/2` leaves and `radix - down` aggregation switches
/// (full bipartite within the pod), `(radix - down) * radix/2` core switches.
///
/// Bundles keep the `radix`-port switches fully used: with `bundle = B` a leaf's `up` uplinks
/// reach `up/B` switches by B cables each, and a level-2 switch's down ports serve 1/B as many
/// leaves (two levels: `radix/B` leaves and `up/B` spines; three levels: pods of `radix/(2B)`
/// leaves, `up/B` aggregation switches each). B must divide both port counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatTreeParams {
    pub radix: u32,
    /// CA ports per leaf switch; `None` = radix/2 (1:1, no oversubscription).
    pub down: Option<u32>,
    pub opts: TreeOptions,
    pub lmc: u8,
}

impl FatTreeParams {
    /// Leaf ports split by the ratio `down:up` (e.g. 2:1 on 36 ports: 24 CAs, 12 up).
    pub fn with_ratio(radix: u32, down: u32, up: u32, lmc: u8) -> Result<Self, TopoError> {
        if down == 0 || up == 0 {
            return Err(param_err("fat tree", "ratio terms must be >= 1"));
        }
        let (r64, d64, t64) = (
            u64::from(radix),
            u64::from(down),
            u64::from(down) + u64::from(up),
        );
        if r64 > 254 {
            return Err(param_err("fat tree", format!("radix {radix} above 254")));
        }
        if (r64 * d64) % t64 != 0 {
            return Err(param_err(
                "fat tree",
                format!("{radix} ports cannot be split {down}:{up} between CAs and uplinks"),
            ));
        }
        Ok(FatTreeParams {
            radix,
            down: Some((r64 * d64 / t64) as u32),
            opts: TreeOptions::default(),
            lmc,
        })
    }

    fn split(&self, g: &'static str) -> Result<(u32, u32), TopoError> {
        let r = self.radix;
        if !(2..=254).contains(&r) {
            return Err(param_err(g, format!("radix {r} outside 2..=254")));
        }
        let down = self.down.unwrap_or(r / 2);
        if down == 0 || down >= r {
            return Err(param_err(
                g,
                format!("{down} CA ports per leaf leaves no uplink of {r} ports"),
            ));
        }
        Ok((down, r - down))
    }
}

pub fn fat_tree2(p: &FatTreeParams) -> Result<Fabric, TopoError> {
    const G: &str = "2-level fat tree";
    let (down, up) = p.split(G)?;
    let b = p.opts.bundle;
    let spines = bundles(G, "uplinks per leaf", up, b)?;
    let x = XgftParams {
        m: vec![down, bundles(G, "ports per spine", p.radix, b)?],
        w: vec![1, spines],
        radix: Some(p.radix),
        opts: p.opts,
        lmc: p.lmc,
    };
    xgft_named(&x, G, "ftree")
}

pub fn fat_tree3(p: &FatTreeParams) -> Result<Fabric, TopoError> {
    const G: &str = "3-level fat tree";
    let (down, up) = p.split(G)?;
    if !p.radix.is_multiple_of(2) {
        return Err(param_err(G, format!("radix {} must be even", p.radix)));
    }
    let half = p.radix / 2;
    let b = p.opts.bundle;
    let aggregation = bundles(G, "uplinks per leaf", up, b)?;
    let x = XgftParams {
        m: vec![
            down,
            bundles(G, "down ports per level-2 switch", half, b)?,
            p.radix,
        ],
        w: vec![1, aggregation, half],
        radix: Some(p.radix),
        opts: p.opts,
        lmc: p.lmc,
    };
    xgft_named(&x, G, "ftree")
}

// ------------------------------------------------------------------------------------------------
// Direct networks

/// Torus or mesh of any dimension. Switch ports: `1..=cas_per_switch` to CAs, then for dimension
/// d `links_per_pair` ports towards +d followed by `links_per_pair` towards -d. A torus ring of
/// size 2 has one neighbour pair (not two), size 1 none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusParams {
    pub dims: Vec<u32>,
    pub cas_per_switch: u32,
    /// Parallel links between each pair of neighbours.
    pub links_per_pair: u32,
    /// true: torus (wrap-around), false: mesh.
    pub wrap: bool,
    pub lmc: u8,
}

pub fn torus(p: &TorusParams) -> Result<Fabric, TopoError> {
    let g: &'static str = if p.wrap { "torus" } else { "mesh" };
    if p.dims.is_empty() || p.dims.contains(&0) {
        return Err(param_err(
            g,
            "need at least one dimension, each of size >= 1",
        ));
    }
    if p.links_per_pair == 0 {
        return Err(param_err(g, "links per neighbour pair must be >= 1"));
    }
    let n = checked_product(g, p.dims.iter().map(|&d| u64::from(d)))?;
    checked_product(g, [n, u64::from(p.cas_per_switch) + 1])?;
    let nd = p.dims.len() as u64;
    let ports = u64::from(p.cas_per_switch) + 2 * nd * u64::from(p.links_per_pair);
    if ports > 254 {
        return Err(param_err(
            g,
            format!("switches would need {ports} ports (> 254)"),
        ));
    }
    let mut net = Net::new(g);
    let mut coord = vec![0u32; p.dims.len()];
    for s in 0..n {
        let mut x = s;
        for (c, &d) in coord.iter_mut().zip(&p.dims) {
            *c = (x % u64::from(d)) as u32;
            x /= u64::from(d);
        }
        let label: Vec<String> = coord.iter().map(|c| c.to_string()).collect();
        net.switch(ports.max(1) as u32, format!("{g} {}", label.join(",")))?;
    }
    let mut ca_count = 0;
    for s in 0..n as u32 {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
    }
    let par = p.links_per_pair;
    let mut stride = 1u64;
    for (d, &size) in p.dims.iter().enumerate() {
        let plus = p.cas_per_switch + 2 * d as u32 * par + 1;
        let minus = plus + par;
        for s in 0..n {
            let c = (s / stride) % u64::from(size);
            let next = if c + 1 < u64::from(size) {
                s + stride
            } else if p.wrap && size > 2 {
                s - c * stride
            } else {
                continue;
            };
            for j in 0..par {
                net.link(s as u32, plus + j, next as u32, minus + j)?;
            }
        }
        stride *= u64::from(size);
    }
    net.into_fabric(p.lmc)
}

/// Hypercube of `2^dim` switches; ports `1..=cas_per_switch` to CAs, then `links_per_pair` ports per
/// dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HypercubeParams {
    pub dim: u32,
    pub cas_per_switch: u32,
    pub links_per_pair: u32,
    pub lmc: u8,
}

pub fn hypercube(p: &HypercubeParams) -> Result<Fabric, TopoError> {
    const G: &str = "hypercube";
    if p.dim > 15 || p.links_per_pair == 0 {
        return Err(param_err(G, "need dimension <= 15 and links per pair >= 1"));
    }
    let n = 1u64 << p.dim;
    checked_product(G, [n, u64::from(p.cas_per_switch) + 1])?;
    let ports = u64::from(p.cas_per_switch) + u64::from(p.dim) * u64::from(p.links_per_pair);
    if ports == 0 || ports > 254 {
        return Err(param_err(
            G,
            format!("switches would need {ports} ports (1..=254)"),
        ));
    }
    let mut net = Net::new(G);
    for s in 0..n {
        net.switch(ports as u32, format!("hcube S{s}"))?;
    }
    let mut ca_count = 0;
    for s in 0..n as u32 {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
    }
    let par = p.links_per_pair;
    for d in 0..p.dim {
        let port = p.cas_per_switch + d * par + 1;
        for s in 0..n as u32 {
            let t = s ^ (1 << d);
            if s < t {
                for j in 0..par {
                    net.link(s, port + j, t, port + j)?;
                }
            }
        }
    }
    net.into_fabric(p.lmc)
}

/// Kautz graph K(d, n): vertices are the strings of length `n` over `d + 1` symbols with no two
/// equal neighbours ((d+1)·d^(n-1) switches); each arc s_1..s_n -> s_2..s_n x becomes one
/// bidirectional link, so switches use 2d ports for links (a pair of opposite arcs becomes two
/// parallel links) after `cas_per_switch` CA ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KautzParams {
    pub degree: u32,
    pub diameter: u32,
    pub cas_per_switch: u32,
    pub lmc: u8,
}

pub fn kautz(p: &KautzParams) -> Result<Fabric, TopoError> {
    const G: &str = "kautz";
    if p.degree == 0 || p.diameter == 0 {
        return Err(param_err(G, "need degree >= 1 and diameter >= 1"));
    }
    let base = u64::from(p.degree) + 1;
    let mut sizes = vec![base];
    sizes.extend(std::iter::repeat_n(
        u64::from(p.degree),
        p.diameter as usize - 1,
    ));
    let n = checked_product(G, sizes)?;
    checked_product(G, [n, u64::from(p.cas_per_switch) + 1])?;
    let ports = u64::from(p.cas_per_switch) + 2 * u64::from(p.degree);
    if ports > 254 {
        return Err(param_err(
            G,
            format!("switches would need {ports} ports (> 254)"),
        ));
    }
    // Enumerate the words in lexicographic order, encoded in base d+1 (first symbol most
    // significant); `index` maps a word code to its switch.
    let len = p.diameter;
    // words are coded in base d+1, first symbol most significant
    let total = base
        .checked_pow(len)
        .ok_or_else(|| param_err(G, format!("string length {len} too large")))?;
    let sym = |code: u64, i: u32| (code / base.pow(len - 1 - i)) % base;
    // depth-first, in lexicographic order: only the (d+1)·d^(n-1) valid words are visited
    let mut words: Vec<u64> = Vec::with_capacity(n as usize);
    let mut stack: Vec<(u64, u32)> = (0..base).rev().map(|x| (x, 1)).collect();
    while let Some((code, l)) = stack.pop() {
        if l == len {
            words.push(code);
            continue;
        }
        let last = code % base;
        for x in (0..base).rev().filter(|&x| x != last) {
            stack.push((code * base + x, l + 1));
        }
    }
    let index: std::collections::HashMap<u64, u32> = words
        .iter()
        .enumerate()
        .map(|(i, &w)| (w, i as u32))
        .collect();
    let mut net = Net::new(G);
    for &w in &words {
        let s: String = (0..len)
            .map(|i| char::from(b'0' + sym(w, i) as u8))
            .collect();
        net.switch(ports as u32, format!("kautz {s}"))?;
    }
    let mut ca_count = 0;
    for s in 0..words.len() as u32 {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
        net.reserve_until(s, p.cas_per_switch + 1);
    }
    for (u, &w) in words.iter().enumerate() {
        let last = sym(w, len - 1);
        let shifted = (w % (total / base)) * base;
        for x in 0..base {
            if x != last {
                let v = index[&(shifted + x)];
                net.connect(u as u32, v)?;
            }
        }
    }
    net.into_fabric(p.lmc)
}

/// Dragonfly (Kim et al.): `g` groups of `a` switches, each switch with `p` CAs, links to the
/// `a - 1` others of its group and `h` global links. Ports: CAs `1..=p`, local `p+1..p+a-1`,
/// global after. Global links are dealt round-robin over group pairs, so with `g = a·h + 1` every
/// pair of groups shares exactly one link; with fewer groups pairs get several, spare ports stay
/// free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DragonflyParams {
    pub a: u32,
    pub p: u32,
    pub h: u32,
    pub g: u32,
    pub lmc: u8,
}

pub fn dragonfly(p: &DragonflyParams) -> Result<Fabric, TopoError> {
    const G: &str = "dragonfly";
    if p.a == 0 || p.g == 0 {
        return Err(param_err(G, "need a >= 1 and g >= 1"));
    }
    let max_g = u64::from(p.a) * u64::from(p.h) + 1;
    if u64::from(p.g) > max_g {
        return Err(param_err(
            G,
            format!("g = {} groups > a*h + 1 = {max_g}", p.g),
        ));
    }
    if p.g > 1 && p.h == 0 {
        return Err(param_err(
            G,
            "several groups need h >= 1 global links per switch",
        ));
    }
    let n = checked_product(G, [u64::from(p.a), u64::from(p.g)])?;
    checked_product(G, [n, u64::from(p.p) + 1])?;
    let ports = u64::from(p.p) + u64::from(p.a) - 1 + u64::from(p.h);
    if ports == 0 || ports > 254 {
        return Err(param_err(
            G,
            format!("switches would need {ports} ports (1..=254)"),
        ));
    }
    let mut net = Net::new(G);
    for grp in 0..p.g {
        for r in 0..p.a {
            net.switch(ports as u32, format!("dfly G{grp} R{r}"))?;
        }
    }
    let mut ca_count = 0;
    let sw = |grp: u32, r: u32| grp * p.a + r;
    for s in 0..n as u32 {
        attach_cas(&mut net, s, p.p, &mut ca_count)?;
    }
    // local: router i uses port p+1+j' for its j-th peer (skipping itself)
    let local_port = |i: u32, j: u32| p.p + 1 + if j < i { j } else { j - 1 };
    for grp in 0..p.g {
        for i in 0..p.a {
            for j in i + 1..p.a {
                net.link(sw(grp, i), local_port(i, j), sw(grp, j), local_port(j, i))?;
            }
        }
    }
    let gp = p.a * p.h; // global ports per group
    let mut used = vec![0u32; p.g as usize];
    let global = |grp: u32, t: u32| (sw(grp, t / p.h), p.p + p.a - 1 + t % p.h + 1);
    loop {
        let mut any = false;
        for i in 0..p.g {
            for j in i + 1..p.g {
                if used[i as usize] < gp && used[j as usize] < gp {
                    let (si, pi) = global(i, used[i as usize]);
                    let (sj, pj) = global(j, used[j as usize]);
                    net.link(si, pi, sj, pj)?;
                    used[i as usize] += 1;
                    used[j as usize] += 1;
                    any = true;
                }
            }
        }
        if !any {
            break;
        }
    }
    net.into_fabric(p.lmc)
}

// ------------------------------------------------------------------------------------------------
// Random irregular

/// Random connected irregular fabric: `switches` switches of `ports` ports, `cas_per_switch` CAs on
/// ports `1..=cas_per_switch`, exactly `links` switch-to-switch links (first a random spanning
/// tree, then random pairs of switches with free ports). Seeded with ChaCha8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomParams {
    pub switches: u32,
    pub ports: u32,
    pub cas_per_switch: u32,
    pub links: u32,
    pub seed: u64,
    /// Allow several links between the same two switches.
    pub parallel: bool,
    pub lmc: u8,
}

pub fn random(p: &RandomParams) -> Result<Fabric, TopoError> {
    const G: &str = "random";
    let n = p.switches;
    if n == 0 {
        return Err(param_err(G, "need at least one switch"));
    }
    if p.ports == 0 || p.ports > 254 {
        return Err(param_err(
            G,
            format!("{} ports per switch outside 1..=254", p.ports),
        ));
    }
    checked_product(G, [u64::from(n), u64::from(p.cas_per_switch) + 1])?;
    if p.cas_per_switch > p.ports {
        return Err(param_err(
            G,
            format!("{} CAs do not fit {} ports", p.cas_per_switch, p.ports),
        ));
    }
    let free_per = p.ports - p.cas_per_switch;
    let nl = u64::from(p.links);
    if nl + 1 < u64::from(n) {
        return Err(param_err(
            G,
            format!("{} links cannot connect {n} switches", p.links),
        ));
    }
    if 2 * nl > u64::from(n) * u64::from(free_per) {
        return Err(param_err(
            G,
            format!(
                "{} links need {} ports, switches offer {}",
                p.links,
                2 * nl,
                u64::from(n) * u64::from(free_per)
            ),
        ));
    }
    if n > 2 && free_per < 2 && n > 1 {
        return Err(param_err(
            G,
            "switches need >= 2 free ports to be connected",
        ));
    }
    let pairs = u64::from(n) * u64::from(n - 1) / 2;
    if !p.parallel && nl > pairs {
        return Err(param_err(
            G,
            format!(
                "{} links exceed the {pairs} switch pairs (allow parallel links)",
                p.links
            ),
        ));
    }

    let mut net = Net::new(G);
    for s in 0..n {
        net.switch(p.ports, format!("rnd S{s}"))?;
    }
    let mut ca_count = 0;
    for s in 0..n {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
        net.reserve_until(s, p.cas_per_switch + 1);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let mut adjacent: HashSet<(u32, u32)> = HashSet::new();
    let key = |a: u32, b: u32| (a.min(b), a.max(b));
    // `open`: switches with a free port, with positions for O(1) removal
    let mut open: Vec<u32> = Vec::with_capacity(n as usize);
    let mut pos = vec![u32::MAX; n as usize];
    let add_open = |open: &mut Vec<u32>, pos: &mut Vec<u32>, s: u32| {
        pos[s as usize] = open.len() as u32;
        open.push(s);
    };
    let drop_if_full = |net: &Net, open: &mut Vec<u32>, pos: &mut Vec<u32>, s: u32| {
        if net.free_ports(s) == 0 && pos[s as usize] != u32::MAX {
            let i = pos[s as usize] as usize;
            let last = *open.last().expect("s is in open");
            open.swap_remove(i);
            if last != s {
                pos[last as usize] = i as u32;
            }
            pos[s as usize] = u32::MAX;
        }
    };

    // random spanning tree: attach the switches in random order to a random placed one
    let mut order: Vec<u32> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    if free_per > 0 {
        add_open(&mut open, &mut pos, order[0]);
    }
    for &s in &order[1..] {
        if open.is_empty() {
            return Err(param_err(
                G,
                "ran out of free ports while connecting the switches",
            ));
        }
        let u = open[rng.gen_range(0..open.len())];
        net.connect(s, u)?;
        adjacent.insert(key(s, u));
        drop_if_full(&net, &mut open, &mut pos, u);
        add_open(&mut open, &mut pos, s);
        drop_if_full(&net, &mut open, &mut pos, s);
    }

    let mut placed = u64::from(n - 1);
    while placed < nl {
        let ok = |a: u32, b: u32| a != b && (p.parallel || !adjacent.contains(&key(a, b)));
        let mut pick = None;
        // random tries first; fall back to scanning so a feasible link is never missed
        for _ in 0..64 {
            if open.len() < 2 {
                break;
            }
            let a = open[rng.gen_range(0..open.len())];
            let b = open[rng.gen_range(0..open.len())];
            if ok(a, b) {
                pick = Some((a, b));
                break;
            }
        }
        if pick.is_none() {
            let start = if open.is_empty() {
                0
            } else {
                rng.gen_range(0..open.len())
            };
            'scan: for i in 0..open.len() {
                for j in i + 1..open.len() {
                    let (a, b) = (
                        open[(start + i) % open.len()],
                        open[(start + j) % open.len()],
                    );
                    if ok(a, b) {
                        pick = Some((a, b));
                        break 'scan;
                    }
                }
            }
        }
        let Some((a, b)) = pick else {
            return Err(param_err(
                G,
                format!("could place only {placed} of {} links (free ports left only between adjacent switches)", p.links),
            ));
        };
        net.connect(a, b)?;
        adjacent.insert(key(a, b));
        drop_if_full(&net, &mut open, &mut pos, a);
        drop_if_full(&net, &mut open, &mut pos, b);
        placed += 1;
    }
    net.into_fabric(p.lmc)
}

/// A uniform random connected simple switch graph with `switches * avg_degree / 2` links and
/// `machines` machines each on a uniformly random switch, as a [`Fabric`]: switch ports
/// `1..=degree` are the switch links, machine ports follow; LIDs 1..=switches for the switches,
/// then one LID per machine.
/// The random irregular fabrics of Nienaber et al.'s evaluation (§5). `irregular:M,S,D` builds
/// one from a seed; the LID study draws many from one random stream.
pub fn random_irregular<R: Rng>(
    machines: u32,
    switches: u32,
    avg_degree: u32,
    rng: &mut R,
) -> Result<Fabric, TopoError> {
    const G: &str = "irregular";
    let n = switches as usize;
    let all_pairs = n * n.saturating_sub(1) / 2;
    let links = (u64::from(switches) * u64::from(avg_degree) / 2) as usize;
    if n < 2 || links < n - 1 || links > all_pairs {
        return Err(param_err(
            G,
            format!("{switches} switches cannot have average degree {avg_degree} and be connected"),
        ));
    }
    let pair = |i: usize| -> (usize, usize) {
        // Unrank i into (a, b), a < b, row by row.
        let mut a = 0;
        let mut i = i;
        while i >= n - 1 - a {
            i -= n - 1 - a;
            a += 1;
        }
        (a, a + 1 + i)
    };
    let edges = loop {
        let chosen: Vec<(usize, usize)> = sample(rng, all_pairs, links)
            .into_iter()
            .map(pair)
            .collect();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], x: usize) -> usize {
            let mut x = x;
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        let mut comps = n;
        for &(a, b) in &chosen {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent[ra] = rb;
                comps -= 1;
            }
        }
        if comps == 1 {
            break chosen;
        }
    };
    let mut degree = vec![0u32; n];
    for &(a, b) in &edges {
        degree[a] += 1;
        degree[b] += 1;
    }
    let placement: Vec<usize> = (0..machines).map(|_| rng.gen_range(0..n)).collect();
    let mut hosted = vec![0u32; n];
    for &s in &placement {
        hosted[s] += 1;
    }
    let fab = |source| TopoError::Fabric {
        generator: G,
        source,
    };
    let mut b = FabricBuilder::new();
    let mut sw = Vec::with_capacity(n);
    for s in 0..n {
        let ports = degree[s] + hosted[s];
        let ports = u8::try_from(ports.max(1))
            .ok()
            .filter(|&p| p < 255)
            .ok_or_else(|| param_err(G, format!("switch {s} would need {ports} ports")))?;
        sw.push(
            b.add_node(NodeKind::Switch, 0x1000 + s as u64, ports, format!("sw{s}"))
                .map_err(fab)?,
        );
    }
    let mut next_port = vec![1u8; n];
    for &(x, y) in &edges {
        let (px, py) = (next_port[x], next_port[y]);
        next_port[x] += 1;
        next_port[y] += 1;
        b.link(
            PortRef {
                node: sw[x],
                port: px,
            },
            PortRef {
                node: sw[y],
                port: py,
            },
        )
        .map_err(fab)?;
    }
    for (s, &node) in sw.iter().enumerate() {
        b.set_lid(
            PortRef { node, port: 0 },
            0x1000 + s as u64,
            s as u16 + 1,
            0,
        )
        .map_err(fab)?;
    }
    for (i, &s) in placement.iter().enumerate() {
        let guid = 0x10_0000 + i as u64;
        let ca = b
            .add_node(NodeKind::Ca, guid, 1, format!("m{i}"))
            .map_err(fab)?;
        let port = next_port[s];
        next_port[s] += 1;
        b.link(PortRef { node: ca, port: 1 }, PortRef { node: sw[s], port })
            .map_err(fab)?;
        let lid = u16::try_from(n + 1 + i)
            .ok()
            .filter(|&l| l <= crate::fabric::MAX_UNICAST_LID)
            .ok_or_else(|| param_err(G, "more LIDs than the unicast range holds"))?;
        b.set_lid(PortRef { node: ca, port: 1 }, guid + 1, lid, 0)
            .map_err(fab)?;
    }
    b.build().map_err(fab)
}
