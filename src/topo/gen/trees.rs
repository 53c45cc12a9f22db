//! Trees: extended generalized fat trees (XGFT), k-ary n-trees, two- and three-level fat trees,
//! with the options real clusters add (cable bundles, uneven leaves, aggregation nodes).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{checked_product, MAX_NODES};
use crate::fabric::Fabric;
use crate::topo::{param_err, Net, TopoError};

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

/// An XGFT whose nodes are described `{label} L{i} S{k}`, its errors named `generator`.
fn xgft_named(p: &XgftParams, generator: &'static str, label: &str) -> Result<Fabric, TopoError> {
    let sizes = xgft_sizes_checked(p, generator)?;
    let h = p.m.len();
    let switches: u64 = sizes[1..].iter().sum();
    let radix = xgft_radix(p, generator)?;
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

    link_xgft_levels(&mut net, p, &sizes, &first, &ca_node)?;
    if p.opts.aggr {
        attach_aggregation_nodes(&mut net, (0..switches as u32).map(|s| (s, ports)))?;
    }
    net.into_fabric(p.lmc)
}

/// The XGFT's node counts per level (index 0 = CAs), once its parameters are checked.
fn xgft_sizes_checked(p: &XgftParams, generator: &'static str) -> Result<Vec<u64>, TopoError> {
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
    if p.w[0] > (1 << crate::topo::CA_GUID_SHIFT) - 1 {
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
    Ok(sizes)
}

impl XgftParams {
    /// Cables between a level-i node and each of its parents: the bundle at the leaves, else one.
    fn cables_up(&self, i: usize) -> u32 {
        if i == 1 {
            self.opts.bundle
        } else {
            1
        }
    }

    /// Ports a level-i switch (i >= 1) uses downwards: m_i children, bundled at level 2.
    fn ports_down(&self, i: usize) -> u64 {
        u64::from(self.m[i - 1]) * u64::from(self.cables_up(i - 1))
    }

    /// Ports a level-i switch uses upwards (none at the top).
    fn ports_up(&self, i: usize) -> u64 {
        if i < self.m.len() {
            u64::from(self.w[i]) * u64::from(self.cables_up(i))
        } else {
            0
        }
    }
}

/// The switches' cable ports: the given radix, checked to hold every level's, or the most any
/// level needs.
fn xgft_radix(p: &XgftParams, generator: &'static str) -> Result<u32, TopoError> {
    let h = p.m.len();
    let bundle = p.opts.bundle;
    let down = |i: usize| p.ports_down(i);
    let up = |i: usize| p.ports_up(i);
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
    Ok(radix)
}

/// Links every level-i node to its w_{i+1} parents (`cables_up(i)` cables each), numbering
/// ports as [`XgftParams`] says; `first` is each level's first node id, `ca_node` level 0's.
fn link_xgft_levels(
    net: &mut Net,
    p: &XgftParams,
    sizes: &[u64],
    first: &[u32],
    ca_node: &[Option<u32>],
) -> Result<(), TopoError> {
    let h = p.m.len();
    let down = |i: usize| p.ports_down(i);
    let mult = |i: usize| p.cables_up(i);
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
    Ok(())
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
