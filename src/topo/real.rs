//! Shapes of real clusters that the textbook families miss: director switches (a chassis of leaf
//! and spine ASICs, cables bundled between them, line cards not all full), edge switches hanging
//! off several directors, and rail-optimized multi-plane leaf/spine fabrics with SHARP aggregation
//! nodes on 65-port switches (NVIDIA DGX SuperPOD style).
//!
//! Node descriptions follow what the gear reports, so a generated fabric reads like a real one in
//! dumps: a director's ASICs are `MF0;dir1:CS7520/L05/U1` (leaf 5) and `MF0;dir1:CS7520/S03/U1`
//! (spine 3), 1-based; edge switches `MF0;edge07:MSB7800/U1`; rail switches
//! `MF0;rail2-leaf03:MQM9700/U1` and `MF0;rail2-spine01:MQM9700/U1`; aggregation nodes
//! [`super::AGGREGATION_NODE_DESC`]. The model names are labels (Mellanox EDR directors and edge
//! switches, NVIDIA NDR switches), whatever the radix. CAs are `H-<i>` as elsewhere, a rail
//! server's CAs `H-<server> mlx5_<plane>`.

use super::gen::{attach_aggregation_nodes, leaf_ca_counts, MAX_BUNDLE};
use super::{param_err, Net, TopoError};
use crate::fabric::Fabric;

/// Refuse fabrics whose node count cannot fit the LID space long before allocating them.
const MAX_NODES: u64 = u16::MAX as u64;

fn check_nodes(g: &'static str, nodes: u64) -> Result<(), TopoError> {
    if nodes > MAX_NODES {
        return Err(param_err(
            g,
            format!("{nodes} nodes, more than {MAX_NODES}"),
        ));
    }
    Ok(())
}

/// The radix: `given`, which must hold `need` ports (named by `what`), or `need`.
fn radix_for(g: &'static str, given: Option<u32>, need: u64, what: &str) -> Result<u32, TopoError> {
    match given {
        Some(r) if u64::from(r) < need => {
            Err(param_err(g, format!("radix {r} < the {need} ports {what}")))
        }
        Some(r) if r > 254 => Err(param_err(g, format!("radix {r} above 254"))),
        Some(r) => Ok(r),
        None if need > 254 => Err(param_err(g, format!("{what}: {need} ports, at most 254"))),
        None => Ok(need.max(1) as u32),
    }
}

/// The leaf and spine ASICs of director `c` (1-based in descriptions), every leaf linked to every
/// spine by `bundle` cables: leaf ports `first_up..` spine-major, spine ports `1..` leaf-major.
/// Returns (leaf ids, spine ids).
fn chassis(
    net: &mut Net,
    c: u32,
    leaves: u32,
    spines: u32,
    bundle: u32,
    first_up: u32,
    radix: u32,
) -> Result<(Vec<u32>, Vec<u32>), TopoError> {
    let leaf: Vec<u32> = (0..leaves)
        .map(|l| net.switch(radix, format!("MF0;dir{}:CS7520/L{:02}/U1", c + 1, l + 1)))
        .collect::<Result<_, _>>()?;
    let spine: Vec<u32> = (0..spines)
        .map(|s| net.switch(radix, format!("MF0;dir{}:CS7520/S{:02}/U1", c + 1, s + 1)))
        .collect::<Result<_, _>>()?;
    for (l, &ln) in leaf.iter().enumerate() {
        for (s, &sn) in spine.iter().enumerate() {
            for b in 0..bundle {
                net.link(
                    ln,
                    first_up + s as u32 * bundle + b,
                    sn,
                    l as u32 * bundle + b + 1,
                )?;
            }
        }
    }
    Ok((leaf, spine))
}

/// One director: `leaves` leaf ASICs and `spines` spine ASICs in a chassis, `bundle` cables
/// between every leaf and every spine, `cas..=cas_max` CAs per leaf (drawn from `seed` as the
/// trees' `uneven` option does: one leaf at each end). Leaf ports: CAs on `1..`, the ports up to
/// `cas_max` free, spine cables from `cas_max + 1` (spine-major); spine ports `1..=leaves·bundle`
/// (leaf-major). The radix: `None` = the smallest that fits, `max(cas_max + spines·bundle,
/// leaves·bundle)`; a given one must fit. E.g. 16 leaves, 9 spines, 2 cables, 16..=18 CAs: 36-port
/// ASICs, the leaves full at 18 CAs, the spines with 32 of 36 ports used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectorParams {
    pub leaves: u32,
    pub spines: u32,
    pub bundle: u32,
    pub cas: u32,
    pub cas_max: u32,
    pub radix: Option<u32>,
    pub seed: u64,
    pub lmc: u8,
}

pub fn director(p: &DirectorParams) -> Result<Fabric, TopoError> {
    const G: &str = "director";
    if p.leaves == 0 || p.spines == 0 {
        return Err(param_err(G, "need at least one leaf and one spine ASIC"));
    }
    if !(1..=MAX_BUNDLE).contains(&p.bundle) {
        return Err(param_err(
            G,
            format!(
                "{} cables between a leaf and a spine; 1..={MAX_BUNDLE}",
                p.bundle
            ),
        ));
    }
    if p.cas > p.cas_max {
        return Err(param_err(
            G,
            format!(
                "{}-{} CAs per leaf: the range runs backwards",
                p.cas, p.cas_max
            ),
        ));
    }
    let (l, s, b) = (
        u64::from(p.leaves),
        u64::from(p.spines),
        u64::from(p.bundle),
    );
    check_nodes(G, l + s + l * u64::from(p.cas_max))?;
    let leaf_need = u64::from(p.cas_max) + s * b;
    let spine_need = l * b;
    let radix = if leaf_need >= spine_need {
        let what = format!(
            "a leaf needs ({} CAs + {} spines x {} cables)",
            p.cas_max, p.spines, p.bundle
        );
        radix_for(G, p.radix, leaf_need, &what)?
    } else {
        let what = format!("a spine needs ({} leaves x {} cables)", p.leaves, p.bundle);
        radix_for(G, p.radix, spine_need, &what)?
    };
    let per_leaf = leaf_ca_counts(G, l, p.cas, p.cas_max, p.seed)?;

    let mut net = Net::new(G);
    let (leaf, _) = chassis(
        &mut net,
        0,
        p.leaves,
        p.spines,
        p.bundle,
        p.cas_max + 1,
        radix,
    )?;
    let mut ca_count = 0;
    for (&ln, &c) in leaf.iter().zip(&per_leaf) {
        for port in 1..=c {
            let ca = net.ca(1, format!("H-{ca_count}"))?;
            ca_count += 1;
            net.link(ca, 1, ln, port)?;
        }
    }
    net.into_fabric(p.lmc)
}

/// Edge switches hanging off several directors: `chassis` directors of `leaves` leaf and `spines`
/// spine ASICs (one cable between every leaf and spine of a chassis), and `edges` edge switches
/// with `cas` CAs each on ports `1..=cas` and `uplinks` cables on the ports after. Uplink cables
/// are dealt round-robin: cable `t = e·uplinks + u` (edge e, uplink u) goes to director
/// `t mod chassis`, and within a director to its leaf ASICs in turn (the n-th cable it receives to
/// leaf `n mod leaves`). Every edge switch reaches every director (`uplinks >= chassis` is
/// required, else some directors would hang loose). Director leaf ports: edge cables on `1..`,
/// spine cables from `d + 1` where `d` is the most edge cables any leaf ASIC gets; spine ports
/// `1..=leaves`. The radix (one for all switches): `None` = the smallest that fits, a given one
/// must fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeDirectorParams {
    pub chassis: u32,
    pub leaves: u32,
    pub spines: u32,
    pub edges: u32,
    pub uplinks: u32,
    pub cas: u32,
    pub radix: Option<u32>,
    pub lmc: u8,
}

pub fn edge_director(p: &EdgeDirectorParams) -> Result<Fabric, TopoError> {
    const G: &str = "edgedirector";
    if p.chassis == 0 || p.leaves == 0 || p.spines == 0 || p.edges == 0 {
        return Err(param_err(
            G,
            "need at least one director, leaf ASIC, spine ASIC and edge switch",
        ));
    }
    if p.uplinks < p.chassis {
        return Err(param_err(
            G,
            format!(
                "{} uplinks per edge switch cannot reach all {} directors",
                p.uplinks, p.chassis
            ),
        ));
    }
    let (c, l, s, e) = (
        u64::from(p.chassis),
        u64::from(p.leaves),
        u64::from(p.spines),
        u64::from(p.edges),
    );
    check_nodes(G, c * (l + s) + e * (1 + u64::from(p.cas)))?;
    let cables = e * u64::from(p.uplinks);
    // most cables on one director, then on one of its leaf ASICs
    let down = cables.div_ceil(c).div_ceil(l);
    let needs = [
        (
            u64::from(p.cas) + u64::from(p.uplinks),
            format!(
                "an edge switch needs ({} CAs + {} uplinks)",
                p.cas, p.uplinks
            ),
        ),
        (
            down + s,
            format!(
                "a director leaf needs ({down} edge cables + {} spines)",
                p.spines
            ),
        ),
        (l, format!("a director spine needs ({} leaves)", p.leaves)),
    ];
    let (need, what) = needs.iter().max_by_key(|(n, _)| *n).expect("three needs");
    let radix = radix_for(G, p.radix, *need, what)?;

    let mut net = Net::new(G);
    let mut dir_leaves = Vec::new();
    for ch in 0..p.chassis {
        let (leaf, _) = chassis(&mut net, ch, p.leaves, p.spines, 1, down as u32 + 1, radix)?;
        dir_leaves.push(leaf);
    }
    let edge: Vec<u32> = (0..p.edges)
        .map(|i| net.switch(radix, format!("MF0;edge{:02}:MSB7800/U1", i + 1)))
        .collect::<Result<_, _>>()?;
    let mut ca_count = 0;
    for &en in &edge {
        for port in 1..=p.cas {
            let ca = net.ca(1, format!("H-{ca_count}"))?;
            ca_count += 1;
            net.link(ca, 1, en, port)?;
        }
    }
    // cables each director has received so far; cables each leaf ASIC has
    let mut received = vec![0u32; p.chassis as usize];
    let mut landed = vec![vec![0u32; p.leaves as usize]; p.chassis as usize];
    for (i, &en) in edge.iter().enumerate() {
        for u in 0..p.uplinks {
            let t = i as u64 * u64::from(p.uplinks) + u64::from(u);
            let ch = (t % c) as usize;
            let li = (received[ch] % p.leaves) as usize;
            received[ch] += 1;
            landed[ch][li] += 1;
            net.link(en, p.cas + u + 1, dir_leaves[ch][li], landed[ch][li])?;
        }
    }
    net.into_fabric(p.lmc)
}

/// Rail-optimized multi-plane leaf/spine fabric with SHARP aggregation nodes (NVIDIA DGX
/// SuperPOD style): `planes` planes (rails), each `leaves` leaves fully linked to `spines` spines;
/// `leaves·cas` servers, each with one single-port CA per plane (server j's CA in plane p on port
/// `j mod cas + 1` of leaf `j / cas` of that plane), so a server's traffic on rail p stays in plane
/// p. Leaf ports: CAs `1..=cas`, spines `cas+1..=cas+spines`; spine ports: leaves `1..=leaves`.
/// Every switch has `radix` ports (default 65, as a 64-port NVIDIA Quantum-2 switch reports) and
/// an aggregation node on the last one, port `radix`; the cables use the ports below it.
///
/// One subnet: consecutive planes are joined by a single cable between their spines 0 (spine 0
/// of plane p uses port `leaves+1` towards plane p-1 and the next free port towards plane p+1).
/// Without it the planes would be separate subnets: a subnet manager discovers and routes only
/// what its port reaches through switches, and SMPs do not cross a CA, so multi-port CAs with a
/// port in each plane would still leave one subnet per plane, each needing its own SM. The chain
/// keeps the planes as independent as a single subnet allows: rail traffic never needs it, and
/// traffic between rails (which real systems move inside the server, over NVLink) has this one
/// path, so bisection patterns that pair CAs of different planes are limited by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RailParams {
    pub planes: u32,
    pub leaves: u32,
    pub spines: u32,
    pub cas: u32,
    /// Ports of every switch, the aggregation node's (the last) included.
    pub radix: u32,
    pub lmc: u8,
}

pub fn rail(p: &RailParams) -> Result<Fabric, TopoError> {
    const G: &str = "rail";
    if p.planes == 0 || p.leaves == 0 || p.spines == 0 {
        return Err(param_err(
            G,
            "need at least one plane, leaf and spine per plane",
        ));
    }
    if p.radix > 254 {
        return Err(param_err(G, format!("radix {} above 254", p.radix)));
    }
    let (pl, l, s) = (
        u64::from(p.planes),
        u64::from(p.leaves),
        u64::from(p.spines),
    );
    let switches = pl * (l + s);
    check_nodes(G, 2 * switches + pl * l * u64::from(p.cas))?;
    // cable ports: all but the last, the aggregation node's
    let cable_ports = u64::from(p.radix.saturating_sub(1));
    let leaf_need = u64::from(p.cas) + s;
    if leaf_need > cable_ports {
        return Err(param_err(
            G,
            format!(
                "radix {} < the {} ports a leaf needs ({} CAs + {} spines + its aggregation node)",
                p.radix,
                leaf_need + 1,
                p.cas,
                p.spines
            ),
        ));
    }
    let joins = u64::from(p.planes.min(3) - 1);
    if l + joins > cable_ports {
        return Err(param_err(
            G,
            format!(
                "radix {} < the {} ports spine 0 needs ({} leaves + {joins} cables to other planes + its aggregation node)",
                p.radix,
                l + joins + 1,
                p.leaves
            ),
        ));
    }

    let mut net = Net::new(G);
    let mut leaf = Vec::new();
    let mut spine = Vec::new();
    for pi in 0..p.planes {
        let ls: Vec<u32> = (0..p.leaves)
            .map(|i| {
                net.switch(
                    p.radix,
                    format!("MF0;rail{}-leaf{:02}:MQM9700/U1", pi + 1, i + 1),
                )
            })
            .collect::<Result<_, _>>()?;
        let ss: Vec<u32> = (0..p.spines)
            .map(|i| {
                net.switch(
                    p.radix,
                    format!("MF0;rail{}-spine{:02}:MQM9700/U1", pi + 1, i + 1),
                )
            })
            .collect::<Result<_, _>>()?;
        for (li, &ln) in ls.iter().enumerate() {
            for (si, &sn) in ss.iter().enumerate() {
                net.link(ln, p.cas + si as u32 + 1, sn, li as u32 + 1)?;
            }
        }
        leaf.push(ls);
        spine.push(ss);
    }
    // servers: their CAs side by side (GUIDs and LIDs), one per plane
    for j in 0..p.leaves * p.cas {
        for pi in 0..p.planes {
            let ca = net.ca(1, format!("H-{j} mlx5_{pi}"))?;
            net.link(
                ca,
                1,
                leaf[pi as usize][(j / p.cas) as usize],
                j % p.cas + 1,
            )?;
        }
    }
    for pi in 1..p.planes as usize {
        let prev_port = p.leaves + 1 + u32::from(pi > 1);
        net.link(spine[pi - 1][0], prev_port, spine[pi][0], p.leaves + 1)?;
    }
    let all = leaf.iter().zip(&spine).flat_map(|(a, b)| a.iter().chain(b));
    attach_aggregation_nodes(&mut net, all.map(|&sw| (sw, p.radix)))?;
    net.into_fabric(p.lmc)
}
