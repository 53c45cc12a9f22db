//! The fabric model: nodes (switches, channel adapters, routers), their ports, the active links between
//! them, and the LIDs (base LID + LMC) of every LID-bearing port. It knows nothing of OpenSM; the
//! OpenSM adapter, the file parsers and the topology generators all build one with [`FabricBuilder`].
//!
//! Routing works on the switch graph derived from it ([`crate::graph`]).

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Highest unicast LID (IBA: 0x0001..=0xBFFF are unicast).
pub const MAX_UNICAST_LID: u16 = 0xBFFF;
/// Largest LMC the IBA allows.
pub const MAX_LMC: u8 = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum NodeKind {
    Switch,
    Ca,
    Router,
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeKind::Switch => "Switch",
            NodeKind::Ca => "CA",
            NodeKind::Router => "Router",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub guid: u64,
    pub kind: NodeKind,
    pub description: String,
    /// Number of physical ports; they are numbered `1..=num_ports` (a switch's port 0 is its
    /// management port and is not counted).
    pub num_ports: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PortRef {
    /// Index into [`Fabric::nodes`].
    pub node: u32,
    pub port: u8,
}

/// An active physical link. Parallel links between the same two nodes are separate entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub a: PortRef,
    pub b: PortRef,
}

/// A LID-bearing port: a CA or router port, or a switch's port 0. It owns the LIDs
/// `base_lid .. base_lid + 2^lmc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub node: u32,
    pub port: u8,
    pub port_guid: u64,
    pub base_lid: u16,
    pub lmc: u8,
}

impl Endpoint {
    pub fn lids(&self) -> std::ops::Range<u32> {
        let base = u32::from(self.base_lid);
        base..base + (1u32 << self.lmc)
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FabricError {
    #[error("node {node}: port {port} out of range (node has {num_ports} ports)")]
    PortOutOfRange {
        node: String,
        port: u8,
        num_ports: u8,
    },
    #[error("node {node} port {port} is linked twice")]
    PortLinkedTwice { node: String, port: u8 },
    #[error("node {node}: port {port} is linked to itself")]
    SelfLink { node: String, port: u8 },
    #[error("duplicate node GUID 0x{guid:016x} ({first} and {second})")]
    DuplicateGuid {
        guid: u64,
        first: String,
        second: String,
    },
    #[error("node {node} port {port}: LID {lid} with LMC {lmc} is invalid ({why})")]
    InvalidLid {
        node: String,
        port: u8,
        lid: u16,
        lmc: u8,
        why: &'static str,
    },
    #[error("LID {lid} is owned by both {first} and {second}")]
    LidConflict {
        lid: u32,
        first: String,
        second: String,
    },
    #[error("node {node} port {port} has two LID assignments")]
    LidAssignedTwice { node: String, port: u8 },
    #[error("switch {node} has no LID on port 0")]
    SwitchWithoutLid { node: String },
    #[error("node {node}: a {kind} cannot own a LID on port 0")]
    PortZeroOnNonSwitch { node: String, kind: NodeKind },
    #[error("node index {0} does not exist")]
    NoSuchNode(u32),
    #[error("fabric has {0} switches; at most {max} are supported", max = u32::MAX - 1)]
    TooLarge(usize),
}

/// A validated fabric. Build it with [`FabricBuilder`]; deserializing one (the plug-in's
/// `dfsssp-rs-fabric.json`) goes through the builder too, so a file cannot make an invalid fabric.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(try_from = "FabricRecord")]
pub struct Fabric {
    nodes: Vec<Node>,
    links: Vec<Link>,
    endpoints: Vec<Endpoint>,
}

impl Fabric {
    /// The fabric with only the nodes and links the predicates keep; a dropped node takes its
    /// links and LIDs with it. What the fabric looks like after cables or switches fail (a subset
    /// of a valid fabric is valid).
    pub fn retain(
        &self,
        keep_node: impl Fn(&Node) -> bool,
        keep_link: impl Fn(&Link) -> bool,
    ) -> Fabric {
        let mut index = vec![u32::MAX; self.nodes.len()];
        let mut nodes = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if keep_node(n) {
                index[i] = nodes.len() as u32;
                nodes.push(n.clone());
            }
        }
        let moved = |p: PortRef| PortRef {
            node: index[p.node as usize],
            port: p.port,
        };
        let links = self
            .links
            .iter()
            .filter(|l| {
                index[l.a.node as usize] != u32::MAX && index[l.b.node as usize] != u32::MAX
            })
            .filter(|l| keep_link(l))
            .map(|l| Link {
                a: moved(l.a),
                b: moved(l.b),
            })
            .collect();
        let endpoints = self
            .endpoints
            .iter()
            .filter(|e| index[e.node as usize] != u32::MAX)
            .map(|e| Endpoint {
                node: index[e.node as usize],
                ..*e
            })
            .collect();
        Fabric {
            nodes,
            links,
            endpoints,
        }
    }

    /// Every node; a node's index here is what [`PortRef::node`] and [`Endpoint::node`] hold.
    /// The fabric without the node of GUID `gone` and the CAs and routers linked to it alone:
    /// what a subnet manager still finds after that switch failed (its CAs are cut off).
    pub fn without_switch(&self, gone: u64) -> Fabric {
        let x = self.nodes.iter().position(|n| n.guid == gone);
        let cut_off = |i: usize| {
            self.nodes[i].kind != NodeKind::Switch
                && (self.links.iter())
                    .filter_map(|l| match (l.a.node as usize, l.b.node as usize) {
                        (a, b) if a == i => Some(b),
                        (a, b) if b == i => Some(a),
                        _ => None,
                    })
                    .all(|e| Some(e) == x)
        };
        let lost: std::collections::HashSet<u64> = (0..self.nodes.len())
            .filter(|&i| Some(i) == x || cut_off(i))
            .map(|i| self.nodes[i].guid)
            .collect();
        self.retain(|n| !lost.contains(&n.guid), |_| true)
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Every active link (parallel links are separate entries).
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Every LID-bearing port.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// "0x0002c90000000001 (desc)" — how nodes are named in errors and logs.
    pub fn node_name(&self, node: u32) -> String {
        match self.nodes.get(node as usize) {
            Some(n) => node_label(n),
            None => format!("#{node}"),
        }
    }

    /// The highest LID owned by any endpoint (0 when there is none).
    pub fn max_lid(&self) -> u16 {
        self.endpoints
            .iter()
            .map(|e| e.lids().end - 1)
            .max()
            .unwrap_or(0) as u16
    }

    pub fn switch_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Switch)
            .count()
    }

    /// Number of CA and router nodes.
    pub fn terminal_node_count(&self) -> usize {
        self.nodes.len() - self.switch_count()
    }
}

/// An index-free, sorted view of a fabric: two fabrics built in different orders (from OpenSM's
/// subnet, a dump, a file, a generator) are the same fabric when their canonical forms are equal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonicalFabric {
    /// (GUID, kind, physical ports, description)
    pub nodes: Vec<(u64, NodeKind, u8, String)>,
    /// ((GUID, port), (GUID, port)), the smaller end first
    pub links: Vec<((u64, u8), (u64, u8))>,
    /// (node GUID, port, port GUID, base LID, LMC)
    pub endpoints: Vec<(u64, u8, u64, u16, u8)>,
}

/// Every port of every node (0..=num_ports) in one dense array, with the peer of each linked port;
/// what the file writers walk node by node, port by port.
pub struct PortTable {
    base: Vec<usize>,
    remote: Vec<Option<PortRef>>,
}

impl PortTable {
    /// Dense index of `port` of `node`, for side arrays of [`len`](Self::len) entries.
    #[inline]
    pub fn slot(&self, node: usize, port: u8) -> usize {
        self.base[node] + usize::from(port)
    }

    pub fn len(&self) -> usize {
        self.remote.len()
    }

    pub fn is_empty(&self) -> bool {
        self.remote.is_empty()
    }

    /// The port at the other end of `port`'s link, if it has one.
    #[inline]
    pub fn remote(&self, node: usize, port: u8) -> Option<PortRef> {
        self.remote[self.slot(node, port)]
    }
}

impl Fabric {
    pub fn port_table(&self) -> PortTable {
        let n = self.nodes.len();
        let mut base = vec![0usize; n + 1];
        for (i, node) in self.nodes.iter().enumerate() {
            base[i + 1] = base[i] + usize::from(node.num_ports) + 1;
        }
        let mut t = PortTable {
            remote: vec![None; base[n]],
            base,
        };
        for l in &self.links {
            let (a, b) = (
                t.slot(l.a.node as usize, l.a.port),
                t.slot(l.b.node as usize, l.b.port),
            );
            t.remote[a] = Some(l.b);
            t.remote[b] = Some(l.a);
        }
        t
    }

    pub fn canonical(&self) -> CanonicalFabric {
        let mut nodes: Vec<_> = self
            .nodes
            .iter()
            .map(|n| (n.guid, n.kind, n.num_ports, n.description.clone()))
            .collect();
        nodes.sort();
        let end = |p: PortRef| (self.nodes[p.node as usize].guid, p.port);
        let mut links: Vec<_> = self
            .links
            .iter()
            .map(|l| (end(l.a).min(end(l.b)), end(l.a).max(end(l.b))))
            .collect();
        links.sort_unstable();
        let mut endpoints: Vec<_> = self
            .endpoints
            .iter()
            .map(|e| {
                (
                    self.nodes[e.node as usize].guid,
                    e.port,
                    e.port_guid,
                    e.base_lid,
                    e.lmc,
                )
            })
            .collect();
        endpoints.sort_unstable();
        CanonicalFabric {
            nodes,
            links,
            endpoints,
        }
    }
}

fn node_label(n: &Node) -> String {
    if n.description.is_empty() {
        format!("0x{:016x}", n.guid)
    } else {
        format!("0x{:016x} ({})", n.guid, n.description)
    }
}

/// Builds and validates a [`Fabric`]. Every error names the node and port involved.
#[derive(Default)]
pub struct FabricBuilder {
    fabric: Fabric,
    guid_index: HashMap<u64, u32>,
}

/// Whether a port number may be 0: a switch's management port holds the switch's LID, but is
/// never linked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PortZero {
    Refused,
    Allowed,
}

impl FabricBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Continues building from a valid fabric (to add nodes, links or LIDs to it).
    pub fn from_fabric(fabric: Fabric) -> Self {
        let guid_index = (0..fabric.nodes.len() as u32)
            .map(|i| (fabric.nodes[i as usize].guid, i))
            .collect();
        FabricBuilder { fabric, guid_index }
    }

    pub fn add_node(
        &mut self,
        kind: NodeKind,
        guid: u64,
        num_ports: u8,
        description: impl Into<String>,
    ) -> Result<u32, FabricError> {
        let node = Node {
            guid,
            kind,
            description: description.into(),
            num_ports,
        };
        let idx = self.fabric.nodes.len() as u32;
        if let Some(&first) = self.guid_index.get(&guid) {
            return Err(FabricError::DuplicateGuid {
                guid,
                first: self.fabric.node_name(first),
                second: node_label(&node),
            });
        }
        self.guid_index.insert(guid, idx);
        self.fabric.nodes.push(node);
        Ok(idx)
    }

    pub fn node_by_guid(&self, guid: u64) -> Option<u32> {
        self.guid_index.get(&guid).copied()
    }

    pub fn node(&self, idx: u32) -> Option<&Node> {
        self.fabric.nodes.get(idx as usize)
    }

    fn check_port(&self, p: PortRef, zero: PortZero) -> Result<(), FabricError> {
        let n = self
            .fabric
            .nodes
            .get(p.node as usize)
            .ok_or(FabricError::NoSuchNode(p.node))?;
        let ok = (p.port >= 1 || zero == PortZero::Allowed) && p.port <= n.num_ports;
        if ok {
            Ok(())
        } else {
            Err(FabricError::PortOutOfRange {
                node: node_label(n),
                port: p.port,
                num_ports: n.num_ports,
            })
        }
    }

    /// Adds an active link. Port 0 cannot be linked.
    pub fn link(&mut self, a: PortRef, b: PortRef) -> Result<(), FabricError> {
        self.check_port(a, PortZero::Refused)?;
        self.check_port(b, PortZero::Refused)?;
        if a == b {
            return Err(FabricError::SelfLink {
                node: self.fabric.node_name(a.node),
                port: a.port,
            });
        }
        self.fabric.links.push(Link { a, b });
        Ok(())
    }

    /// The links added so far.
    pub fn links(&self) -> &[Link] {
        &self.fabric.links
    }

    /// Gives a port its LIDs. Switches take theirs on port 0; CAs and routers on ports >= 1.
    pub fn set_lid(
        &mut self,
        at: PortRef,
        port_guid: u64,
        base_lid: u16,
        lmc: u8,
    ) -> Result<(), FabricError> {
        self.check_port(at, PortZero::Allowed)?;
        let n = &self.fabric.nodes[at.node as usize];
        if at.port == 0 && n.kind != NodeKind::Switch {
            return Err(FabricError::PortZeroOnNonSwitch {
                node: node_label(n),
                kind: n.kind,
            });
        }
        let bad = |why| FabricError::InvalidLid {
            node: node_label(n),
            port: at.port,
            lid: base_lid,
            lmc,
            why,
        };
        if lmc > MAX_LMC {
            return Err(bad("LMC above 7"));
        }
        if base_lid == 0 {
            return Err(bad("LID 0 is reserved"));
        }
        if u32::from(base_lid) + (1u32 << lmc) - 1 > u32::from(MAX_UNICAST_LID) {
            return Err(bad("LID range leaves the unicast space 1..0xBFFF"));
        }
        if base_lid & ((1u16 << lmc) - 1) != 0 {
            return Err(bad("base LID is not aligned to 2^LMC"));
        }
        self.fabric.endpoints.push(Endpoint {
            node: at.node,
            port: at.port,
            port_guid,
            base_lid,
            lmc,
        });
        Ok(())
    }

    /// Validates the whole fabric: no port linked twice, no LID owned twice, every switch has a LID.
    pub fn build(self) -> Result<Fabric, FabricError> {
        let f = self.fabric;
        let mut used: HashMap<PortRef, ()> = HashMap::with_capacity(f.links.len() * 2);
        for l in &f.links {
            for p in [l.a, l.b] {
                if used.insert(p, ()).is_some() {
                    return Err(FabricError::PortLinkedTwice {
                        node: f.node_name(p.node),
                        port: p.port,
                    });
                }
            }
        }
        let mut owner: HashMap<u32, usize> = HashMap::new();
        let mut port_seen: HashMap<PortRef, ()> = HashMap::new();
        for (i, e) in f.endpoints.iter().enumerate() {
            let at = PortRef {
                node: e.node,
                port: e.port,
            };
            if port_seen.insert(at, ()).is_some() {
                return Err(FabricError::LidAssignedTwice {
                    node: f.node_name(e.node),
                    port: e.port,
                });
            }
            for lid in e.lids() {
                if let Some(&j) = owner.get(&lid) {
                    let o = &f.endpoints[j];
                    return Err(FabricError::LidConflict {
                        lid,
                        first: format!("{} port {}", f.node_name(o.node), o.port),
                        second: format!("{} port {}", f.node_name(e.node), e.port),
                    });
                }
                owner.insert(lid, i);
            }
        }
        for (i, n) in f.nodes.iter().enumerate() {
            if n.kind == NodeKind::Switch
                && !f
                    .endpoints
                    .iter()
                    .any(|e| e.node == i as u32 && e.port == 0)
            {
                return Err(FabricError::SwitchWithoutLid {
                    node: node_label(n),
                });
            }
        }
        Ok(f)
    }
}

/// A fabric as stored in JSON, before validation: the same fields as [`Fabric`], taken apart so
/// that [`Fabric`]'s `Deserialize` can rebuild it through [`FabricBuilder`].
#[derive(Deserialize)]
struct FabricRecord {
    nodes: Vec<Node>,
    links: Vec<Link>,
    endpoints: Vec<Endpoint>,
}

/// Why a stored fabric was rejected, naming the entry (`links[3]`, `endpoints[0]`, ...).
#[derive(Debug, Error)]
#[error("{entry}: {source}")]
pub struct FabricRecordError {
    entry: String,
    source: FabricError,
}

impl TryFrom<FabricRecord> for Fabric {
    type Error = FabricRecordError;

    fn try_from(r: FabricRecord) -> Result<Self, Self::Error> {
        let at = |entry: String| move |source| FabricRecordError { entry, source };
        let mut b = FabricBuilder::new();
        for (i, n) in r.nodes.into_iter().enumerate() {
            b.add_node(n.kind, n.guid, n.num_ports, n.description)
                .map_err(at(format!("nodes[{i}]")))?;
        }
        for (i, l) in r.links.into_iter().enumerate() {
            b.link(l.a, l.b).map_err(at(format!("links[{i}]")))?;
        }
        for (i, e) in r.endpoints.into_iter().enumerate() {
            let at_port = PortRef {
                node: e.node,
                port: e.port,
            };
            b.set_lid(at_port, e.port_guid, e.base_lid, e.lmc)
                .map_err(at(format!("endpoints[{i}]")))?;
        }
        b.build().map_err(at("fabric".to_string()))
    }
}

#[cfg(test)]
mod tests {
    /// A leaf switch gone takes its CAs with it; a spine gone takes no CA; an unknown GUID
    /// changes nothing.
    #[test]
    fn a_switch_gone_takes_the_cas_it_alone_linked() {
        let f = crate::topo::by_name("ktree:4,3").unwrap();
        let switches: Vec<&Node> = (f.nodes().iter())
            .filter(|n| n.kind == NodeKind::Switch)
            .collect();
        let cas = |f: &Fabric| f.nodes().iter().filter(|n| n.kind == NodeKind::Ca).count();
        let leaf = (0..f.nodes().len())
            .find(|&i| {
                f.nodes()[i].kind == NodeKind::Switch
                    && f.links().iter().any(|l| {
                        let other = if l.a.node as usize == i {
                            l.b.node
                        } else {
                            l.a.node
                        };
                        (l.a.node as usize == i || l.b.node as usize == i)
                            && f.nodes()[other as usize].kind == NodeKind::Ca
                    })
            })
            .unwrap();
        let its_cas = (f.links().iter())
            .filter(|l| l.a.node as usize == leaf || l.b.node as usize == leaf)
            .filter(|l| {
                let other = if l.a.node as usize == leaf { l.b } else { l.a };
                f.nodes()[other.node as usize].kind == NodeKind::Ca
            })
            .count();
        assert!(its_cas > 0);
        let cut = f.without_switch(f.nodes()[leaf].guid);
        assert_eq!(cut.switch_count(), switches.len() - 1);
        assert_eq!(cas(&cut), cas(&f) - its_cas);
        assert!(cut.links().len() < f.links().len());
        let spine = switches.last().unwrap().guid;
        assert_eq!(cas(&f.without_switch(spine)), cas(&f));
        assert_eq!(f.without_switch(1).nodes().len(), f.nodes().len());
    }

    use super::*;
    use crate::graph::SwitchGraph;
    use crate::testkit::two_switches;

    #[test]
    fn graph_has_parallel_channels_and_all_lids() {
        let f = two_switches(8, 2, &[(0, 5, 4, 1), (1, 7, 6, 1)]);
        let g = SwitchGraph::new(&f).unwrap();
        assert_eq!(g.num_switches(), 2);
        assert_eq!(g.num_channels(), 4);
        assert_eq!(g.out_channels(0).len(), 2);
        for c in 0..4u32 {
            let r = g.chan_reverse()[c as usize];
            assert_eq!(g.chan_reverse()[r as usize], c);
            assert_eq!(g.chan_tail()[r as usize], g.chan_head()[c as usize]);
        }
        assert_eq!(g.channel_at(0, 2), Some(1));
        assert_eq!(g.channel_at(0, 5), None);
        assert_eq!(g.dests().len(), 6);
        let d = g.dest_of_lid(7).unwrap();
        assert_eq!((d.switch, d.exit_port, d.lid_offset), (1, 7, 1));
        assert_eq!(g.dest_of_lid(1).unwrap().exit_port, 0);
        assert!(g.dest_of_lid(3).is_none());
        assert_eq!(g.terminal_count(), &[1, 1]);
        assert_eq!(g.bfs_distances_to(1), vec![1, 0]);
    }

    #[test]
    fn builder_rejects_bad_input_naming_the_node() {
        let mut b = FabricBuilder::new();
        let s = b.add_node(NodeKind::Switch, 0x10, 4, "leaf").unwrap();
        let c = b.add_node(NodeKind::Ca, 0x20, 1, "host").unwrap();
        let e = b
            .link(PortRef { node: s, port: 5 }, PortRef { node: c, port: 1 })
            .unwrap_err();
        assert!(
            e.to_string().contains("leaf") && e.to_string().contains("port 5"),
            "{e}"
        );
        assert!(matches!(
            b.add_node(NodeKind::Ca, 0x20, 1, "again"),
            Err(FabricError::DuplicateGuid { .. })
        ));
        let e = b
            .set_lid(PortRef { node: c, port: 1 }, 0x20, 5, 2)
            .unwrap_err();
        assert!(e.to_string().contains("aligned"), "{e}");
        b.set_lid(PortRef { node: c, port: 1 }, 0x20, 4, 0).unwrap();
        b.set_lid(PortRef { node: s, port: 0 }, 0x10, 4, 0).unwrap();
        assert!(matches!(
            b.build(),
            Err(FabricError::LidConflict { lid: 4, .. })
        ));
    }

    #[test]
    fn switch_needs_a_lid() {
        let mut b = FabricBuilder::new();
        b.add_node(NodeKind::Switch, 0x10, 4, "lonely").unwrap();
        assert!(matches!(
            b.build(),
            Err(FabricError::SwitchWithoutLid { .. })
        ));
    }
}
