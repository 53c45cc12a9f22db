//! An admin's fabric made fit for ibsim: the component the SM would see (a dump of two rails
//! holds two subnets), GUIDs ibsim can keep (it numbers CA ports node GUID + port, so real GUIDs
//! may collide), and which CA ports are compute nodes (not SHARP aggregation nodes, or those of
//! the admin's `cn_guid_file`).

use std::collections::{HashMap, HashSet};

use dfsssp_rs::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};

/// SHARP aggregation nodes call themselves so (`Mellanox Technologies Aggregation Node`).
pub fn is_aggregation_node(description: &str) -> bool {
    description
        .to_ascii_lowercase()
        .contains("aggregation node")
}

/// The fabric ibsim runs, and what was changed to get it.
pub struct Prepared {
    pub fabric: Fabric,
    pub notes: Vec<String>,
    /// Compute ports as port GUIDs in ibsim's numbering (`None`: every CA port counts).
    pub compute: Option<Vec<u64>>,
    /// SHARP aggregation nodes found by their description.
    pub aggregation_nodes: usize,
}

/// Node indices per connected component (links only; a node without links is its own).
fn components(f: &Fabric) -> Vec<Vec<usize>> {
    let n = f.nodes().len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for l in f.links() {
        let (a, b) = (
            find(&mut parent, l.a.node as usize),
            find(&mut parent, l.b.node as usize),
        );
        parent[a] = b;
    }
    let mut by_root: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..n {
        let r = find(&mut parent, i);
        by_root.entry(r).or_default().push(i);
    }
    let mut v: Vec<Vec<usize>> = by_root.into_values().collect();
    v.sort_by_key(|c| c[0]);
    v
}

/// Whether ibsim's port GUIDs (switch: node GUID; CA/router port p: node GUID + p) are unique.
fn ibsim_guids_unique(f: &Fabric) -> bool {
    let mut seen = HashSet::new();
    f.nodes().iter().all(|n| {
        if n.kind == NodeKind::Switch {
            seen.insert(n.guid)
        } else {
            (1..=u64::from(n.num_ports))
                .all(|p| n.guid.checked_add(p).is_some_and(|g| seen.insert(g)))
        }
    })
}

/// The fabric with GUIDs ibsim can keep: node i gets a fresh GUID, CA ports node GUID + port.
fn renumbered(f: &Fabric) -> Result<Fabric, String> {
    let mut b = FabricBuilder::new();
    let mut next = 0x0002_c903_0000_1000u64;
    let mut new_guid = Vec::with_capacity(f.nodes().len());
    for n in f.nodes() {
        b.add_node(n.kind, next, n.num_ports, n.description.clone())
            .map_err(|e| e.to_string())?;
        new_guid.push(next);
        next += if n.kind == NodeKind::Switch {
            1
        } else {
            u64::from(n.num_ports) + 1
        };
    }
    for l in f.links() {
        b.link(l.a, l.b).map_err(|e| e.to_string())?;
    }
    for e in f.endpoints() {
        let g = new_guid[e.node as usize] + u64::from(e.port);
        let at = PortRef {
            node: e.node,
            port: e.port,
        };
        b.set_lid(at, g, e.base_lid, e.lmc)
            .map_err(|e| e.to_string())?;
    }
    b.build().map_err(|e| e.to_string())
}

/// Prepares `f` (as parsed from the dump); `cn_guids`: the admin's compute list (port or node
/// GUIDs of the dump).
pub fn prepare(f: Fabric, cn_guids: Option<&[u64]>) -> Result<Prepared, String> {
    let mut notes = Vec::new();
    let is_ca = |f: &Fabric, i: usize| f.nodes()[i].kind != NodeKind::Switch;
    // compute ports as (node GUID of the dump, port)
    let mut compute: Option<HashSet<(u64, u8)>> = None;
    if let Some(list) = cn_guids {
        let mut set = HashSet::new();
        let mut unknown = 0;
        for &g in list {
            let mut hit = false;
            for e in f.endpoints() {
                let n = &f.nodes()[e.node as usize];
                if n.kind != NodeKind::Switch && (e.port_guid == g || n.guid == g) {
                    set.insert((n.guid, e.port));
                    hit = true;
                }
            }
            unknown += usize::from(!hit);
        }
        if unknown > 0 {
            notes.push(format!(
                "{unknown} GUID(s) of the compute list name no CA port of the dump"
            ));
        }
        compute = Some(set);
    }
    let aggregation_nodes = f
        .nodes()
        .iter()
        .filter(|n| n.kind != NodeKind::Switch && is_aggregation_node(&n.description))
        .count();
    if compute.is_none() && aggregation_nodes > 0 {
        compute = Some(
            f.endpoints()
                .iter()
                .filter(|e| {
                    let n = &f.nodes()[e.node as usize];
                    n.kind == NodeKind::Ca && !is_aggregation_node(&n.description)
                })
                .map(|e| (f.nodes()[e.node as usize].guid, e.port))
                .collect(),
        );
    }

    // The component with the most CA ports: the subnet one SM would manage.
    let comps = components(&f);
    let linked = comps.iter().filter(|c| c.len() > 1).count();
    let ca_ports = |c: &[usize]| {
        c.iter()
            .filter(|&&i| is_ca(&f, i))
            .map(|&i| {
                f.endpoints()
                    .iter()
                    .filter(|e| e.node as usize == i)
                    .count()
            })
            .sum::<usize>()
    };
    let best = comps
        .iter()
        .max_by_key(|c| (ca_ports(c), c.len()))
        .ok_or("the dump holds no node")?;
    if !best.iter().any(|&i| !is_ca(&f, i)) {
        return Err("the dump holds no switch linked to a CA".into());
    }
    let (best_nodes, best_ports) = (best.len(), ca_ports(best));
    let keep: HashSet<u64> = best.iter().map(|&i| f.nodes()[i].guid).collect();
    let mut f = f;
    if best_nodes < f.nodes().len() {
        let dropped = f.nodes().len() - best_nodes;
        notes.push(format!(
            "the dump holds {linked} separate subnets (e.g. dual rails) or unlinked nodes: \
             judging the largest ({best_nodes} nodes, {best_ports} CA ports); {dropped} other \
             nodes left out"
        ));
        f = f.retain(|n| keep.contains(&n.guid), |_| true);
    }
    let old_guids: Vec<u64> = f.nodes().iter().map(|n| n.guid).collect();
    if !ibsim_guids_unique(&f) {
        notes.push(
            "GUIDs renumbered for ibsim (it numbers CA ports node GUID + port, and the dump's \
             GUIDs would collide so)"
                .into(),
        );
        f = renumbered(&f)?;
    }
    let compute = compute.map(|set| {
        f.endpoints()
            .iter()
            .filter(|e| set.contains(&(old_guids[e.node as usize], e.port)))
            .map(|e| f.nodes()[e.node as usize].guid + u64::from(e.port))
            .collect::<Vec<u64>>()
    });
    Ok(Prepared {
        fabric: f,
        notes,
        compute,
        aggregation_nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfsssp_rs::topo;

    #[test]
    fn aggregation_nodes_are_not_compute() {
        let f = topo::by_name("ktree:2,2,aggr").unwrap();
        let cas = f
            .endpoints()
            .iter()
            .filter(|e| f.nodes()[e.node as usize].kind != NodeKind::Switch)
            .count();
        let p = prepare(f, None).unwrap();
        assert!(p.aggregation_nodes > 0);
        assert_eq!(p.compute.unwrap().len(), cas - p.aggregation_nodes);
    }

    #[test]
    fn two_rails_keep_the_larger_and_collisions_renumber() {
        // two disjoint fabrics in one dump, the second larger
        let a = topo::by_name("fattree2:4").unwrap();
        let big = topo::by_name("fattree2:6").unwrap();
        let mut b = FabricBuilder::from_fabric(a);
        let mut idx = Vec::new();
        let (mut cas, mut sws) = (0u64, 0u64);
        for n in big.nodes() {
            // CA j's port 1 (node GUID + 1) is switch j's GUID
            let guid = if n.kind == NodeKind::Switch {
                sws += 1;
                0x9001 + 2 * (sws - 1)
            } else {
                cas += 1;
                0x9000 + 2 * (cas - 1)
            };
            idx.push(
                b.add_node(n.kind, guid, n.num_ports, n.description.clone())
                    .unwrap(),
            );
        }
        for l in big.links() {
            let m = |p: PortRef| PortRef {
                node: idx[p.node as usize],
                port: p.port,
            };
            b.link(m(l.a), m(l.b)).unwrap();
        }
        for e in big.endpoints() {
            let at = PortRef {
                node: idx[e.node as usize],
                port: e.port,
            };
            b.set_lid(at, 0x7_0000 + u64::from(e.base_lid), e.base_lid + 1000, 0)
                .unwrap();
        }
        let f = b.build().unwrap();
        let p = prepare(f, None).unwrap();
        assert_eq!(p.fabric.nodes().len(), big.nodes().len());
        assert!(ibsim_guids_unique(&p.fabric));
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
    }
}
