//! Chassis-style wiring of a generated fabric: the same topology as a real cluster's discovery
//! would present it.
//!
//! Generators number ports in structural order (down ports, then up ports) and hand out GUIDs and
//! LIDs level by level. Real fabrics do neither: a director's line cards reach its spine chips
//! through whatever ASIC ports the chassis backplane uses, cables land on the ports a technician
//! picked, and OpenSM assigns LIDs in discovery order. A routing whose balance leans on that
//! structural order (e.g. ties broken by the lowest port) looks better on generated fabrics than
//! it is on the admin's. [`rewire`] removes the order: it renumbers every switch's ports by a
//! seeded permutation and gives nodes their GUIDs and LIDs in a seeded random order, keeping the
//! graph (and every parallel cable) exactly as it was.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{param_err, TopoError, CA_GUID_BASE, CA_GUID_SHIFT, SWITCH_GUID_BASE};
use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};

/// The fabric with every switch's ports renumbered by a random permutation of `1..=ports` (but for
/// a port with an aggregation node, which stays) and its nodes in a random order (GUIDs and LIDs follow the new order, by the conventions of
/// [`crate::topo`]), both drawn from `seed`. CA port numbers stay (a CA's port 1 is its port 1);
/// LMC and the set of links are unchanged.
pub fn rewire(f: &Fabric, seed: u64) -> Result<Fabric, TopoError> {
    const GEN: &str = "shuffle";
    let wrap = |source| TopoError::Fabric {
        generator: GEN,
        source,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let nodes = f.nodes();
    let mut order: Vec<u32> = (0..nodes.len() as u32).collect();
    order.shuffle(&mut rng);
    // new index of each old node
    let mut new_index = vec![0u32; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old as usize] = new as u32;
    }
    // A switch's port with an aggregation node is inside the ASIC (its last port on NVIDIA
    // Quantum switches), no cable a technician could move: it stays.
    let ports = f.port_table();
    let fixed = |n: u32, p: u8| {
        ports.remote(n as usize, p).is_some_and(|r| {
            nodes[r.node as usize]
                .description
                .starts_with(super::AGGREGATION_NODE_DESC)
        })
    };
    // port_map[old node][old port] = new port
    let port_map: Vec<Vec<u8>> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut map: Vec<u8> = (0..=n.num_ports).collect();
            if n.kind == NodeKind::Switch {
                let mut movable: Vec<u8> =
                    (1..=n.num_ports).filter(|&p| !fixed(i as u32, p)).collect();
                let from = movable.clone();
                movable.shuffle(&mut rng);
                for (&old, &new) in from.iter().zip(&movable) {
                    map[old as usize] = new;
                }
            }
            map
        })
        .collect();
    let lmc = f
        .endpoints()
        .iter()
        .filter(|e| e.port != 0)
        .map(|e| e.lmc)
        .max()
        .unwrap_or(0);
    let mut lmc_of_port = std::collections::HashMap::new();
    for e in f.endpoints() {
        lmc_of_port.insert((e.node, e.port), e.lmc);
    }

    let mut b = FabricBuilder::new();
    let (mut nsw, mut nca) = (0u64, 0u64);
    let mut guids = Vec::with_capacity(nodes.len());
    for &old in &order {
        let n = &nodes[old as usize];
        let guid = if n.kind == NodeKind::Switch {
            nsw += 1;
            SWITCH_GUID_BASE + nsw - 1
        } else {
            nca += 1;
            CA_GUID_BASE + ((nca - 1) << CA_GUID_SHIFT)
        };
        guids.push(guid);
        b.add_node(n.kind, guid, n.num_ports, n.description.clone())
            .map_err(wrap)?;
    }
    let moved = |p: PortRef| PortRef {
        node: new_index[p.node as usize],
        port: port_map[p.node as usize][p.port as usize],
    };
    for l in f.links() {
        b.link(moved(l.a), moved(l.b)).map_err(wrap)?;
    }
    // LIDs as the generators give them: switches 1..=S, then CA ports aligned to 2^LMC, both in
    // the new node order. A port without LIDs before has none after.
    let step = 1u64 << lmc;
    let mut lid = 1u64;
    for (new, &old) in order.iter().enumerate() {
        if nodes[old as usize].kind == NodeKind::Switch && lmc_of_port.contains_key(&(old, 0)) {
            let at = PortRef {
                node: new as u32,
                port: 0,
            };
            b.set_lid(at, guids[new], lid as u16, 0).map_err(wrap)?;
            lid += 1;
        }
    }
    lid = lid.div_ceil(step) * step;
    for (new, &old) in order.iter().enumerate() {
        let n = &nodes[old as usize];
        if n.kind == NodeKind::Switch {
            continue;
        }
        for p in 1..=n.num_ports {
            let Some(&port_lmc) = lmc_of_port.get(&(old, p)) else {
                continue;
            };
            let base = u16::try_from(lid)
                .map_err(|_| param_err(GEN, "the rewired fabric needs LIDs beyond 0xffff"))?;
            let at = PortRef {
                node: new as u32,
                port: p,
            };
            b.set_lid(at, guids[new] + u64::from(p), base, port_lmc)
                .map_err(wrap)?;
            lid += step;
        }
    }
    b.build().map_err(wrap)
}
