use super::*;
use crate::fabric::NodeKind;
use crate::graph::SwitchGraph;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

mod generators;
mod real;
mod tree_options;
mod wiring;

/// (switches, CAs, switch-switch links, CA links)
fn counts(f: &Fabric) -> (usize, usize, usize, usize) {
    let sw = |n: u32| f.nodes()[n as usize].kind == NodeKind::Switch;
    let ss = f
        .links()
        .iter()
        .filter(|l| sw(l.a.node) && sw(l.b.node))
        .count();
    (
        f.switch_count(),
        f.terminal_node_count(),
        ss,
        f.links().len() - ss,
    )
}

fn assert_connected(f: &Fabric) {
    let g = SwitchGraph::new(f).unwrap();
    let d = g.bfs_distances_to(0);
    assert!(d.iter().all(|&x| x != u32::MAX), "fabric is not connected");
    assert_eq!(
        g.terminals().len(),
        f.endpoints().len() - f.switch_count(),
        "every CA port attached"
    );
}

/// Ports in use per node, and the largest.
fn ports_used(f: &Fabric) -> Vec<usize> {
    let mut used = vec![0usize; f.nodes().len()];
    for l in f.links() {
        used[l.a.node as usize] += 1;
        used[l.b.node as usize] += 1;
    }
    used
}

/// The multiset of (description, description) pairs of the links: the graph, blind to GUIDs,
/// node order and port numbers.
fn link_pairs(f: &Fabric) -> Vec<(String, String)> {
    let d = |n: u32| f.nodes()[n as usize].description.clone();
    let mut v: Vec<_> = f
        .links()
        .iter()
        .map(|l| {
            let (a, b) = (d(l.a.node), d(l.b.node));
            if a <= b {
                (a, b)
            } else {
                (b, a)
            }
        })
        .collect();
    v.sort();
    v
}

/// Cables between each pair of switches (node ids, lower first).
fn switch_pair_cables(f: &Fabric) -> std::collections::BTreeMap<(u32, u32), usize> {
    let sw = |n: u32| f.nodes()[n as usize].kind == NodeKind::Switch;
    let mut m = std::collections::BTreeMap::new();
    for l in f.links().iter().filter(|l| sw(l.a.node) && sw(l.b.node)) {
        let k = (l.a.node.min(l.b.node), l.a.node.max(l.b.node));
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// The CAs of each switch whose description starts with `prefix`, by port: (switch node, port).
fn cas_on(f: &Fabric, switch_prefix: &str) -> Vec<(u32, Vec<u8>)> {
    let t = f.port_table();
    f.nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Switch && n.description.starts_with(switch_prefix))
        .map(|(i, n)| {
            let ports = (1..=n.num_ports)
                .filter(|&p| {
                    t.remote(i, p).is_some_and(|r| {
                        let peer = &f.nodes()[r.node as usize];
                        peer.kind == NodeKind::Ca
                            && !peer.description.starts_with(AGGREGATION_NODE_DESC)
                    })
                })
                .collect();
            (i as u32, ports)
        })
        .collect()
}

/// Every switch has exactly one aggregation node (a 1-port CA), on its highest port; every
/// aggregation node hangs off a switch. Returns how many there are.
fn assert_aggregation_nodes(f: &Fabric) -> usize {
    let t = f.port_table();
    let mut seen = 0;
    for (i, n) in f.nodes().iter().enumerate() {
        if n.kind == NodeKind::Switch {
            let ans: Vec<u8> = (1..=n.num_ports)
                .filter(|&p| {
                    t.remote(i, p).is_some_and(|r| {
                        f.nodes()[r.node as usize].description == AGGREGATION_NODE_DESC
                    })
                })
                .collect();
            assert_eq!(
                ans,
                vec![n.num_ports],
                "{}: aggregation node ports",
                n.description
            );
        } else if n.description.starts_with(AGGREGATION_NODE_DESC) {
            assert_eq!(n.kind, NodeKind::Ca);
            assert_eq!(n.num_ports, 1);
            let r = t.remote(i, 1).expect("aggregation node linked");
            assert_eq!(f.nodes()[r.node as usize].kind, NodeKind::Switch);
            seen += 1;
        }
    }
    assert_eq!(seen, f.switch_count(), "one aggregation node per switch");
    seen
}

fn desc_of(f: &Fabric, n: u32) -> &str {
    &f.nodes()[n as usize].description
}

/// Every spec is refused with an error that says why (`why` is part of the message).
fn assert_refused(cases: &[(&str, &str)]) {
    for (spec, why) in cases {
        let e = by_name(spec).unwrap_err().to_string();
        assert!(e.contains(why), "{spec}: {e}");
    }
}
