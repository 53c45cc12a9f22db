//! One kit of hand-built test fabrics, shared by the unit tests of every module (the generators
//! in `topo` build the realistic ones; these are small, with ids and ports a test can reason
//! about):
//! - [`fabric`] / [`fabric_with`]: switches with CAs and explicitly cabled switch links;
//! - [`Net`]: switches cabled in order, ports taken as links come; [`grid`] and [`random_net`]
//!   on top of it;
//! - [`ring`]: a ring or line of switches, with LMC; [`fat_tree`]: a 2-level fat tree, with LMC;
//!   [`mesh2x2`];
//! - [`two_switches`]: two switches, parallel links, CAs placed by hand;
//! - [`with_graph`]: a fabric with its switch graph; [`shortest_path_routing`]: plain BFS tables
//!   to judge;
//! - [`with_aggregation_nodes`]: a fabric with a 1-port CA on one more port of every switch, as
//!   NVIDIA SHARP fabrics have.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

/// ((switch, port), (switch, port)).
pub(crate) type SwitchLink = ((u32, u8), (u32, u8));

/// Switches 0..n (GUIDs 0x100 + i, LIDs 1..=n), `cas_per_switch` CAs on each (ports 10..),
/// and the given switch-to-switch links as ((switch, port), (switch, port)).
pub(crate) fn fabric(n: u32, cas_per_switch: u32, links: &[SwitchLink]) -> (Fabric, SwitchGraph) {
    fabric_with(&vec![cas_per_switch; n as usize], links)
}

/// Like [`fabric`], with `cas[i]` CAs on switch i (CA LIDs follow the switch LIDs).
pub(crate) fn fabric_with(cas: &[u32], links: &[SwitchLink]) -> (Fabric, SwitchGraph) {
    let mut b = FabricBuilder::new();
    let sw: Vec<u32> = (0..cas.len())
        .map(|i| {
            b.add_node(NodeKind::Switch, 0x100 + i as u64, 36, format!("sw{i}"))
                .unwrap()
        })
        .collect();
    for (i, &s) in sw.iter().enumerate() {
        b.set_lid(
            PortRef { node: s, port: 0 },
            0x100 + i as u64,
            i as u16 + 1,
            0,
        )
        .unwrap();
    }
    for &((a, pa), (c, pc)) in links {
        b.link(
            PortRef {
                node: sw[a as usize],
                port: pa,
            },
            PortRef {
                node: sw[c as usize],
                port: pc,
            },
        )
        .unwrap();
    }
    let mut lid = cas.len() as u16 + 1;
    for (i, &count) in cas.iter().enumerate() {
        for k in 0..count {
            let guid = 0x1000 + (i as u64) * 100 + u64::from(k);
            let ca = b
                .add_node(NodeKind::Ca, guid, 1, format!("ca{i}.{k}"))
                .unwrap();
            b.link(
                PortRef { node: ca, port: 1 },
                PortRef {
                    node: sw[i],
                    port: 10 + k as u8,
                },
            )
            .unwrap();
            b.set_lid(PortRef { node: ca, port: 1 }, guid, lid, 0)
                .unwrap();
            lid += 1;
        }
    }
    let f = b.build().unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    (f, g)
}

/// 2x2 mesh: 0-1 on top, 2-3 below, 0-2 and 1-3 vertical.
pub(crate) fn mesh2x2(cas: u32) -> (Fabric, SwitchGraph) {
    fabric(
        4,
        cas,
        &[
            ((0, 1), (1, 2)),
            ((2, 1), (3, 2)),
            ((0, 3), (2, 4)),
            ((1, 3), (3, 4)),
        ],
    )
}

/// Two switches (GUIDs 0x10 and 0x11, "sw0" and "sw1", LIDs 1 and 2, `ports` ports each) joined
/// by `links` parallel links on ports 1..=links of both; CA `i` (GUID 0x20 + i, "ca{i}", one
/// port) on `cas[i] = (switch, switch port, base LID, LMC)`.
pub(crate) fn two_switches(ports: u8, links: u8, cas: &[(u32, u8, u16, u8)]) -> Fabric {
    let mut b = FabricBuilder::new();
    let sw: Vec<u32> = (0..2u64)
        .map(|i| {
            b.add_node(NodeKind::Switch, 0x10 + i, ports, format!("sw{i}"))
                .unwrap()
        })
        .collect();
    for p in 1..=links {
        b.link(
            PortRef {
                node: sw[0],
                port: p,
            },
            PortRef {
                node: sw[1],
                port: p,
            },
        )
        .unwrap();
    }
    for (i, &s) in sw.iter().enumerate() {
        b.set_lid(
            PortRef { node: s, port: 0 },
            0x10 + i as u64,
            i as u16 + 1,
            0,
        )
        .unwrap();
    }
    for (i, &(s, port, lid, lmc)) in cas.iter().enumerate() {
        let guid = 0x20 + i as u64;
        let ca = b.add_node(NodeKind::Ca, guid, 1, format!("ca{i}")).unwrap();
        b.link(
            PortRef { node: ca, port: 1 },
            PortRef {
                node: sw[s as usize],
                port,
            },
        )
        .unwrap();
        b.set_lid(PortRef { node: ca, port: 1 }, guid, lid, lmc)
            .unwrap();
    }
    b.build().unwrap()
}

/// `f` with one more port on every switch and a 1-port CA (a SHARP aggregation node) on it,
/// after the generators' conventions (`crate::topo`): the new CAs follow every existing node, GUIDs
/// and LIDs after the existing CAs' (LMC 0). Every switch then has a CA LID, the spines too.
pub(crate) fn with_aggregation_nodes(f: &Fabric) -> Fabric {
    use crate::topo::{CA_GUID_BASE, CA_GUID_SHIFT};
    let mut b = FabricBuilder::new();
    for n in f.nodes() {
        let ports = n.num_ports + u8::from(n.kind == NodeKind::Switch);
        b.add_node(n.kind, n.guid, ports, n.description.clone())
            .unwrap();
    }
    for l in f.links() {
        b.link(l.a, l.b).unwrap();
    }
    for e in f.endpoints() {
        b.set_lid(
            PortRef {
                node: e.node,
                port: e.port,
            },
            e.port_guid,
            e.base_lid,
            e.lmc,
        )
        .unwrap();
    }
    let cas = f
        .nodes()
        .iter()
        .filter(|n| n.kind != NodeKind::Switch)
        .count() as u64;
    let mut lid = f.max_lid();
    let switches: Vec<u32> = (0..f.nodes().len() as u32)
        .filter(|&i| f.nodes()[i as usize].kind == NodeKind::Switch)
        .collect();
    for (k, &s) in switches.iter().enumerate() {
        let guid = CA_GUID_BASE + ((cas + k as u64) << CA_GUID_SHIFT);
        let ca = b
            .add_node(
                NodeKind::Ca,
                guid,
                1,
                "Mellanox Technologies Aggregation Node",
            )
            .unwrap();
        let port = f.nodes()[s as usize].num_ports + 1;
        b.link(PortRef { node: s, port }, PortRef { node: ca, port: 1 })
            .unwrap();
        lid += 1;
        b.set_lid(PortRef { node: ca, port: 1 }, guid + 1, lid, 0)
            .unwrap();
    }
    b.build().unwrap()
}

/// A fabric with its switch graph.
pub(crate) fn with_graph(f: Fabric) -> (Fabric, SwitchGraph) {
    let g = SwitchGraph::new(&f).unwrap();
    (f, g)
}

/// Plain BFS shortest-path tables (lowest port on ties), one layer; hops left at NO_PATH.
pub(crate) fn shortest_path_routing(g: &SwitchGraph) -> Routing {
    let mut lft = Lft::new(g.num_switches(), g.max_lid());
    for d in g.dests() {
        if d.switch == NO_SWITCH {
            continue;
        }
        let dist = g.bfs_distances_to(d.switch);
        for s in 0..g.num_switches() as u32 {
            if s == d.switch {
                lft.set(s, d.lid, d.exit_port);
            } else if let Some(c) = g.out_channels(s).find(|&c| {
                dist[g.chan_head()[c as usize] as usize].checked_add(1) == Some(dist[s as usize])
            }) {
                lft.set(s, d.lid, g.chan_port()[c as usize]);
            }
        }
    }
    Routing {
        hops: SwitchLidTable::new(g.num_switches(), g.max_lid(), NO_PATH),
        lft,
        layers: None,
        num_layers: 1,
    }
}

/// Switches cabled one link at a time, ports taken in order; CAs after.
pub(crate) struct Net {
    b: FabricBuilder,
    sw: Vec<u32>,
    next_port: Vec<u8>,
    lid: u16,
    cas: u32,
}

impl Net {
    pub(crate) fn new(switches: u32, ports: u8) -> Self {
        let mut b = FabricBuilder::new();
        let mut sw = Vec::new();
        for i in 0..switches {
            let guid = 0x1000 + u64::from(i);
            let n = b
                .add_node(NodeKind::Switch, guid, ports, format!("s{i}"))
                .unwrap();
            b.set_lid(PortRef { node: n, port: 0 }, guid, i as u16 + 1, 0)
                .unwrap();
            sw.push(n);
        }
        Net {
            b,
            sw,
            next_port: vec![1; switches as usize],
            lid: switches as u16 + 1,
            cas: 0,
        }
    }

    pub(crate) fn port(&mut self, s: u32) -> u8 {
        let p = self.next_port[s as usize];
        self.next_port[s as usize] += 1;
        p
    }

    pub(crate) fn link(&mut self, a: u32, b: u32) {
        let (pa, pb) = (self.port(a), self.port(b));
        self.b
            .link(
                PortRef {
                    node: self.sw[a as usize],
                    port: pa,
                },
                PortRef {
                    node: self.sw[b as usize],
                    port: pb,
                },
            )
            .unwrap();
    }

    pub(crate) fn ca(&mut self, s: u32) {
        let guid = 0x10_0000 + u64::from(self.cas);
        self.cas += 1;
        let c = self
            .b
            .add_node(NodeKind::Ca, guid, 1, format!("h{guid:x}"))
            .unwrap();
        let p = self.port(s);
        self.b
            .link(
                PortRef { node: c, port: 1 },
                PortRef {
                    node: self.sw[s as usize],
                    port: p,
                },
            )
            .unwrap();
        self.b
            .set_lid(PortRef { node: c, port: 1 }, guid, self.lid, 0)
            .unwrap();
        self.lid += 1;
    }

    pub(crate) fn cas_everywhere(&mut self, k: u32) {
        for s in 0..self.sw.len() as u32 {
            for _ in 0..k {
                self.ca(s);
            }
        }
    }

    pub(crate) fn build(self) -> Fabric {
        self.b.build().unwrap()
    }
}

/// Torus (wrap) or mesh over `dims`, `k` CAs per switch.
pub(crate) fn grid(dims: &[u32], wrap: bool, k: u32) -> Fabric {
    let n: u32 = dims.iter().product();
    let mut net = Net::new(n, 32);
    for i in 0..n {
        let mut stride = 1;
        for &d in dims {
            let x = (i / stride) % d;
            if x + 1 < d {
                net.link(i, i + stride);
            } else if wrap && d > 2 {
                net.link(i, i - x * stride);
            }
            stride *= d;
        }
    }
    net.cas_everywhere(k);
    net.build()
}

/// Connected random fabric: a random spanning tree plus `extra` random links (parallel links
/// allowed), `k` CAs per switch.
pub(crate) fn random_net(n: u32, extra: u32, k: u32, seed: u64) -> Fabric {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut net = Net::new(n, 48);
    for i in 1..n {
        let j = rng.gen_range(0..i);
        net.link(i, j);
    }
    for _ in 0..extra {
        let a = rng.gen_range(0..n);
        let mut b = rng.gen_range(0..n);
        while b == a {
            b = rng.gen_range(0..n);
        }
        net.link(a, b);
    }
    net.cas_everywhere(k);
    net.build()
}

/// Switches in a ring (or a line), `cas` CAs per switch, LMC `lmc` on CA ports.
pub(crate) fn ring(n: u32, cas: u32, lmc: u8, closed: bool) -> Fabric {
    let mut b = FabricBuilder::new();
    let sw: Vec<u32> = (0..n)
        .map(|i| {
            b.add_node(NodeKind::Switch, 0x100 + u64::from(i), 16, format!("s{i}"))
                .unwrap()
        })
        .collect();
    let links = if closed { n } else { n - 1 };
    for i in 0..links {
        let j = (i + 1) % n;
        b.link(
            PortRef {
                node: sw[i as usize],
                port: 1,
            },
            PortRef {
                node: sw[j as usize],
                port: 2,
            },
        )
        .unwrap();
    }
    let mut lid = 1u16;
    for (i, &s) in sw.iter().enumerate() {
        b.set_lid(PortRef { node: s, port: 0 }, 0x100 + i as u64, lid, 0)
            .unwrap();
        lid += 1;
    }
    let step = 1u16 << lmc;
    for i in 0..n {
        for k in 0..cas {
            let c = b
                .add_node(
                    NodeKind::Ca,
                    0x1000 + u64::from(i * 64 + k),
                    1,
                    format!("h{i}.{k}"),
                )
                .unwrap();
            b.link(
                PortRef { node: c, port: 1 },
                PortRef {
                    node: sw[i as usize],
                    port: 3 + k as u8,
                },
            )
            .unwrap();
            lid = lid.div_ceil(step) * step;
            b.set_lid(
                PortRef { node: c, port: 1 },
                0x1000 + u64::from(i * 64 + k),
                lid,
                lmc,
            )
            .unwrap();
            lid += step;
        }
    }
    b.build().unwrap()
}

/// A 2-level fat tree: `leaves` leaf switches with `down` CAs each, `spines` spine switches,
/// every leaf linked once to every spine.
pub(crate) fn fat_tree(leaves: u32, spines: u32, down: u32, lmc: u8) -> Fabric {
    let mut b = FabricBuilder::new();
    let mut lid = 1u16;
    let ports = (down + spines).max(leaves) as u8;
    let sp: Vec<u32> = (0..spines)
        .map(|i| {
            b.add_node(
                NodeKind::Switch,
                0x200 + u64::from(i),
                ports,
                format!("spine{i}"),
            )
            .unwrap()
        })
        .collect();
    let lf: Vec<u32> = (0..leaves)
        .map(|i| {
            b.add_node(
                NodeKind::Switch,
                0x300 + u64::from(i),
                ports,
                format!("leaf{i}"),
            )
            .unwrap()
        })
        .collect();
    for (i, &s) in sp.iter().chain(lf.iter()).enumerate() {
        b.set_lid(PortRef { node: s, port: 0 }, 0x200 + i as u64, lid, 0)
            .unwrap();
        lid += 1;
    }
    for (li, &l) in lf.iter().enumerate() {
        for (si, &s) in sp.iter().enumerate() {
            b.link(
                PortRef {
                    node: l,
                    port: (down + si as u32 + 1) as u8,
                },
                PortRef {
                    node: s,
                    port: li as u8 + 1,
                },
            )
            .unwrap();
        }
        for k in 0..down {
            let guid = 0x10000 + (li as u64) * 256 + u64::from(k);
            let c = b
                .add_node(NodeKind::Ca, guid, 1, format!("h{li}.{k}"))
                .unwrap();
            b.link(
                PortRef { node: c, port: 1 },
                PortRef {
                    node: l,
                    port: k as u8 + 1,
                },
            )
            .unwrap();
            let step = 1u16 << lmc;
            lid = lid.div_ceil(step) * step;
            b.set_lid(PortRef { node: c, port: 1 }, guid, lid, lmc)
                .unwrap();
            lid += step;
        }
    }
    b.build().unwrap()
}
