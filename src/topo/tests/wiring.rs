//! Rewiring keeps the graph and renumbers ports and nodes.

use super::*;

#[test]
fn shuffle_keeps_the_graph_and_renumbers_ports_and_nodes() {
    let plain = by_name("fattree2:12,2:1,lmc=1").unwrap();
    let a = by_name("fattree2:12,2:1,lmc=1,shuffle=7").unwrap();
    let b = by_name("fattree2:12,2:1,lmc=1,shuffle=7").unwrap();
    let c = by_name("fattree2:12,2:1,lmc=1,shuffle=8").unwrap();
    assert_eq!(a.canonical(), b.canonical(), "same seed, same fabric");
    assert_ne!(a.canonical(), c.canonical(), "another seed, other wiring");
    assert_eq!(link_pairs(&plain), link_pairs(&a), "same graph");
    assert_eq!(counts(&plain), counts(&a));
    assert_connected(&a);
    // Every LID-bearing port keeps its LMC; LIDs stay dense and aligned.
    assert_eq!(a.endpoints().len(), plain.endpoints().len());
    assert!(a.endpoints().iter().all(|e| e.port == 0 || e.lmc == 1));
    // Ports really move: in structural order a leaf's CAs sit on its lowest ports.
    let moved = a
        .links()
        .iter()
        .flat_map(|l| [l.a, l.b])
        .filter(|p| a.nodes()[p.node as usize].kind == NodeKind::Switch)
        .zip(
            plain
                .links()
                .iter()
                .flat_map(|l| [l.a, l.b])
                .filter(|p| plain.nodes()[p.node as usize].kind == NodeKind::Switch),
        )
        .filter(|(x, y)| x.port != y.port)
        .count();
    assert!(moved > 0);
    let descs = |f: &Fabric| {
        f.nodes()
            .iter()
            .map(|n| n.description.clone())
            .collect::<Vec<_>>()
    };
    assert_ne!(descs(&plain), descs(&a), "nodes in another order");
    assert!(
        by_name("ktree:4,2,shuffle").is_err(),
        "shuffle needs a seed"
    );
}
