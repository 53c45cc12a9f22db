//! Writes a generated fabric with a SHARP aggregation node on every switch as an ibsim net file
//! (issue 25): every switch gets one more port, and a 1-port CA "Mellanox Technologies
//! Aggregation Node" on it; the new CAs take GUIDs and LIDs after the existing CAs', as the
//! generators number them. `dfsssp-rs eval --fabric FILE` reads the result.
//!
//!     cargo run --release --no-default-features --example aggr_net -- ktree:12,3 k12a.net

use dfsssp_rs::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
use dfsssp_rs::topo::{by_name, CA_GUID_BASE, CA_GUID_SHIFT};

fn with_aggregation_nodes(f: &Fabric) -> Result<Fabric, dfsssp_rs::fabric::FabricError> {
    let mut b = FabricBuilder::new();
    for n in f.nodes() {
        let ports = n.num_ports + u8::from(n.kind == NodeKind::Switch);
        b.add_node(n.kind, n.guid, ports, n.description.clone())?;
    }
    for l in f.links() {
        b.link(l.a, l.b)?;
    }
    for e in f.endpoints() {
        let at = PortRef {
            node: e.node,
            port: e.port,
        };
        b.set_lid(at, e.port_guid, e.base_lid, e.lmc)?;
    }
    let cas = f
        .nodes()
        .iter()
        .filter(|n| n.kind != NodeKind::Switch)
        .count() as u64;
    let mut lid = f.max_lid();
    let mut k = 0u64;
    for (s, n) in f.nodes().iter().enumerate() {
        if n.kind != NodeKind::Switch {
            continue;
        }
        let guid = CA_GUID_BASE + ((cas + k) << CA_GUID_SHIFT);
        k += 1;
        let ca = b.add_node(
            NodeKind::Ca,
            guid,
            1,
            "Mellanox Technologies Aggregation Node",
        )?;
        let sw = PortRef {
            node: s as u32,
            port: n.num_ports + 1,
        };
        b.link(sw, PortRef { node: ca, port: 1 })?;
        lid += 1;
        b.set_lid(PortRef { node: ca, port: 1 }, guid + 1, lid, 0)?;
    }
    b.build()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: aggr_net SPEC OUT.net");
        std::process::exit(2);
    }
    let f = by_name(&args[1]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let f = with_aggregation_nodes(&f).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    std::fs::write(&args[2], dfsssp_rs::io::ibsim::write_net(&f)).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[2]);
        std::process::exit(1)
    });
}
