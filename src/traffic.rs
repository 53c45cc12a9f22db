//! Traffic classes: compute nodes and I/O nodes, as OpenSM's `cn_guid_file` and `io_guid_file`
//! name them. Stock dfsssp routes the compute nodes' LIDs first, then the I/O nodes', then the
//! rest, so compute traffic is balanced before anything else loads the links. dfsssp-rs does the
//! same and goes further: each class is balanced on the traffic it carries — the trees towards
//! compute nodes on compute-to-compute routes only, those towards I/O nodes on compute-to-I/O
//! routes only (the two phases of a job: computing, then checkpointing) — and reports Λ of both
//! patterns ([`class_bandwidth`]).

use crate::balance::{write_dest, Balancer, MinimalDag};
use crate::fabric::Fabric;
use crate::graph::{SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::metrics::{group_bandwidth, Bisection, BisectionSpec, MetricsError};
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

/// What a CA port carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeClass {
    Compute,
    Io,
    /// Neither list names it (admin nodes, switches' own ports).
    Other,
}

/// The class of every endpoint of a fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrafficClasses {
    /// Indexed like [`Fabric::endpoints`].
    class: Vec<NodeClass>,
}

/// How the GUID lists matched the fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassMatch {
    pub compute: usize,
    pub io: usize,
    /// GUIDs naming no CA port of the fabric (nodes not there now, or typos).
    pub unknown: Vec<u64>,
    /// GUIDs in both lists (the compute list wins, as in stock dfsssp's order).
    pub both: Vec<u64>,
}

impl TrafficClasses {
    /// Classes from the lists' GUIDs. A GUID matches a CA or router port by its port GUID (what
    /// OpenSM's lists hold) or by its node GUID (every port of the node).
    pub fn from_guids(f: &Fabric, compute: &[u64], io: &[u64]) -> (Self, ClassMatch) {
        use std::collections::HashMap;
        let mut by_guid: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, e) in f.endpoints().iter().enumerate() {
            if f.nodes()[e.node as usize].kind == crate::fabric::NodeKind::Switch {
                continue;
            }
            by_guid.entry(e.port_guid).or_default().push(i);
            let node_guid = f.nodes()[e.node as usize].guid;
            if node_guid != e.port_guid {
                by_guid.entry(node_guid).or_default().push(i);
            }
        }
        let mut class = vec![NodeClass::Other; f.endpoints().len()];
        let mut m = ClassMatch::default();
        for (list, c) in [(compute, NodeClass::Compute), (io, NodeClass::Io)] {
            for &guid in list {
                let Some(eps) = by_guid.get(&guid) else {
                    m.unknown.push(guid);
                    continue;
                };
                for &e in eps {
                    match class[e] {
                        NodeClass::Other => class[e] = c,
                        NodeClass::Compute if c == NodeClass::Io => m.both.push(guid),
                        _ => {}
                    }
                }
            }
        }
        m.compute = class.iter().filter(|&&c| c == NodeClass::Compute).count();
        m.io = class.iter().filter(|&&c| c == NodeClass::Io).count();
        (TrafficClasses { class }, m)
    }

    pub fn class_of(&self, endpoint: u32) -> NodeClass {
        self.class
            .get(endpoint as usize)
            .copied()
            .unwrap_or(NodeClass::Other)
    }

    /// Whether any port is compute or I/O (else the classes change nothing).
    pub fn any(&self) -> bool {
        self.class.iter().any(|&c| c != NodeClass::Other)
    }

    /// Terminals (indices into `g.terminals()`) of class `c`.
    pub fn terminals(&self, g: &SwitchGraph, c: NodeClass) -> Vec<u32> {
        (0..g.terminals().len() as u32)
            .filter(|&t| self.class_of(g.terminals()[t as usize].0) == c)
            .collect()
    }
}

/// The order destinations are routed in: compute nodes' LIDs, I/O nodes', other CAs', then the
/// switches'; within each, as [`crate::balance::routing_order`] (base LIDs first, by switch, then
/// LID). Unreachable LIDs are left out.
pub fn routing_order(g: &SwitchGraph, classes: &TrafficClasses) -> Vec<u32> {
    let mut order: Vec<u32> = (0..g.dests().len() as u32)
        .filter(|&i| g.dests()[i as usize].switch != NO_SWITCH)
        .collect();
    order.sort_by_key(|&i| {
        let d = &g.dests()[i as usize];
        let rank = if d.exit_port == 0 {
            3
        } else {
            classes.class_of(d.endpoint) as u8
        };
        (rank, d.lid_offset, d.switch, d.lid)
    });
    order
}

/// Balanced minimal routes (one layer, as [`crate::sssp::route`]) with the classes balanced on
/// their own traffic: a tree towards a compute node is chosen on the compute-to-compute load
/// alone, one towards an I/O node on the compute-to-I/O load alone (every CA's when no compute
/// nodes are named), and the rest on the load of all routes. Sibling LIDs (LMC > 0) are not
/// spread apart here; the engine uses its multipath routing for those.
pub fn route(g: &SwitchGraph, dist: &SwitchDistances, classes: &TrafficClasses) -> Routing {
    let ns = g.num_switches();
    let all: Vec<u64> = g.terminal_count().iter().map(|&c| u64::from(c)).collect();
    let mut compute = vec![0u64; ns];
    for &(e, s) in g.terminals() {
        if classes.class_of(e) == NodeClass::Compute {
            compute[s as usize] += 1;
        }
    }
    let io_sources = if compute.iter().any(|&c| c > 0) {
        &compute
    } else {
        &all
    };
    // Loads: compute-to-compute, compute-to-I/O, every route.
    let mut bal = [Balancer::new(g), Balancer::new(g), Balancer::new(g)];
    let mut dag = MinimalDag {
        to: NO_SWITCH,
        ..Default::default()
    };
    let mut counts = Vec::new();
    let mut next = vec![NO_CHANNEL; ns];
    let mut lft = Lft::new(ns, g.max_lid());
    let mut hops = SwitchLidTable::new(ns, g.max_lid(), NO_PATH);
    for di in routing_order(g, classes) {
        let d = g.dests()[di as usize];
        let to = dist.to(d.switch);
        if dag.to != d.switch {
            dag.build(g, d.switch, to, &mut counts);
        }
        let class = if d.exit_port == 0 {
            NodeClass::Other
        } else {
            classes.class_of(d.endpoint)
        };
        let (own, sources) = match class {
            NodeClass::Compute => (0, &compute),
            NodeClass::Io => (1, io_sources),
            NodeClass::Other => (2, &all),
        };
        next.copy_from_slice(bal[own].choose_tree_dag(&dag));
        if own != 2 {
            bal[own].add_tree_load_from(g, &dag.order, &next, sources);
        }
        bal[2].add_tree_load_from(g, &dag.order, &next, &all);
        write_dest(g, &d, &next, |s| to[s as usize], &mut lft, &mut hops);
    }
    Routing {
        lft,
        hops,
        layers: None,
        num_layers: 1,
    }
}

/// Λ of the two traffic patterns the classes stand for.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ClassBandwidth {
    /// Random bisections of the compute nodes (at least two named).
    pub compute: Option<Bisection>,
    /// Compute nodes writing to I/O nodes: each I/O node (or compute node, whichever are
    /// fewer) paired with a distinct random one of the other class.
    pub compute_to_io: Option<Bisection>,
}

pub fn class_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    classes: &TrafficClasses,
    spec: &BisectionSpec,
) -> Result<ClassBandwidth, MetricsError> {
    let compute = classes.terminals(g, NodeClass::Compute);
    let io = classes.terminals(g, NodeClass::Io);
    Ok(ClassBandwidth {
        compute: if compute.len() >= 2 {
            Some(group_bandwidth(g, lft, spec, &compute, None)?)
        } else {
            None
        },
        compute_to_io: if !compute.is_empty() && !io.is_empty() {
            Some(group_bandwidth(g, lft, spec, &compute, Some(&io))?)
        } else {
            None
        },
    })
}

impl ClassBandwidth {
    /// "Λ compute 0.61, compute-to-I/O 0.48" (the parts measured).
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = &self.compute {
            parts.push(format!("Λ compute {:.4}", b.lambda));
        }
        if let Some(b) = &self.compute_to_io {
            parts.push(format!("compute-to-I/O {:.4}", b.lambda));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::SwitchGraph;
    use crate::metrics::effective_bisection_bandwidth;
    use crate::routing::walk;

    fn guids(f: &Fabric, nodes: impl Iterator<Item = usize>) -> Vec<u64> {
        let eps: Vec<_> = f
            .endpoints()
            .iter()
            .filter(|e| f.nodes()[e.node as usize].kind != crate::fabric::NodeKind::Switch)
            .collect();
        nodes.map(|i| eps[i].port_guid).collect()
    }

    #[test]
    fn lists_match_port_and_node_guids_and_name_the_rest() {
        let f = crate::topo::by_name("torus:3x3,2").unwrap();
        let cas: Vec<_> = f
            .endpoints()
            .iter()
            .filter(|e| f.nodes()[e.node as usize].kind != crate::fabric::NodeKind::Switch)
            .collect();
        let node_guid = f.nodes()[cas[1].node as usize].guid;
        let cn = vec![cas[0].port_guid, node_guid, 0xdead];
        let io = vec![cas[0].port_guid, cas[5].port_guid];
        let (c, m) = TrafficClasses::from_guids(&f, &cn, &io);
        assert_eq!((m.compute, m.io), (2, 1));
        assert_eq!(m.unknown, vec![0xdead]);
        assert_eq!(m.both, vec![cas[0].port_guid]);
        let idx =
            |e: &crate::fabric::Endpoint| f.endpoints().iter().position(|x| x == e).unwrap() as u32;
        assert_eq!(c.class_of(idx(cas[1])), NodeClass::Compute);
        assert_eq!(c.class_of(idx(cas[5])), NodeClass::Io);
        assert_eq!(c.class_of(idx(cas[2])), NodeClass::Other);
        assert!(c.any());
    }

    #[test]
    fn class_routes_are_complete_minimal_and_route_compute_first() {
        let f = crate::topo::by_name("torus:4x4,2").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let dist = SwitchDistances::new(&g);
        let (c, _) = TrafficClasses::from_guids(&f, &guids(&f, 0..20), &guids(&f, 28..32));
        let order = routing_order(&g, &c);
        let ranks: Vec<u8> = order
            .iter()
            .map(|&i| {
                let d = &g.dests()[i as usize];
                if d.exit_port == 0 {
                    3
                } else {
                    c.class_of(d.endpoint) as u8
                }
            })
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
        assert_eq!(ranks.iter().filter(|&&r| r == 0).count(), 20);
        let r = route(&g, &dist, &c);
        let plain = crate::sssp::route(&g);
        // Every route arrives, as short as SSSP's.
        for s in 0..g.num_switches() as u32 {
            for d in g.dests() {
                let w = walk(&g, &r.lft, s, d.lid, |_| {}).unwrap();
                let p = walk(&g, &plain.lft, s, d.lid, |_| {}).unwrap();
                assert_eq!(w, p, "switch {s} -> LID {}", d.lid);
            }
        }
        assert_eq!(r.hops, plain.hops);
    }

    #[test]
    fn compute_traffic_is_balanced_at_least_as_well_as_without_classes() {
        // Half the CAs compute, a few do I/O, the rest idle: balancing on compute routes alone
        // must not lose compute bandwidth against balancing on everyone's.
        let f = crate::topo::by_name("random:24,12,4,40,seed=3").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let dist = SwitchDistances::new(&g);
        let n = g.terminals().len();
        let cn = guids(&f, (0..n).filter(|i| i % 2 == 0));
        let io = guids(&f, (0..n).filter(|i| i % 8 == 1));
        let (c, _) = TrafficClasses::from_guids(&f, &cn, &io);
        let spec = BisectionSpec::new(300, 7);
        let with = class_bandwidth(&g, &route(&g, &dist, &c).lft, &c, &spec).unwrap();
        let without = class_bandwidth(&g, &crate::sssp::route(&g).lft, &c, &spec).unwrap();
        let (a, b) = (
            with.compute.as_ref().unwrap().lambda,
            without.compute.as_ref().unwrap().lambda,
        );
        assert!(a >= b * 0.99, "compute Λ with classes {a} vs without {b}");
        assert!(with.compute_to_io.is_some() && with.summary().contains("compute-to-I/O"));
        // All terminals as one group is Hoefler's Λ exactly.
        let all: Vec<u32> = (0..n as u32).collect();
        let lft = &crate::sssp::route(&g).lft;
        assert_eq!(
            group_bandwidth(&g, lft, &spec, &all, None).unwrap(),
            effective_bisection_bandwidth(&g, lft, &spec).unwrap()
        );
    }
}
