//! Topology generators for the fabrics the papers study: k-ary n-trees and XGFTs, 2- and 3-level fat
//! trees (with oversubscription), tori and meshes, hypercubes, Kautz graphs, dragonflies and random
//! irregular fabrics; and for the shapes of real clusters: trees with cable bundles, uneven leaves
//! and SHARP aggregation nodes ([`TreeOptions`]), directors, edge switches on directors and
//! rail-optimized planes (`real.rs`); [`rewire`] gives any of them chassis-style port numbering. Every generator returns a validated [`Fabric`] with LIDs already assigned, so
//! the core can route it directly; [`crate::io::ibsim`] writes it as an ibsim net file so that
//! OpenSM can run on it too.
//!
//! Conventions shared by all generators (so that files, dumps and tests agree):
//! - Switch `i` (in creation order) has node GUID `SWITCH_GUID_BASE + i`; its port 0 has the same
//!   GUID (like ibsim's switches).
//! - CA `i` has node GUID `CA_GUID_BASE + (i << CA_GUID_SHIFT)`, its port `p` GUID node GUID + `p`
//!   (ibsim's convention; the shift keeps a CA's port GUIDs apart from the next CA's node GUID).
//! - LIDs: switches first, `1..=S` in creation order (LMC 0), then every CA port in creation order,
//!   each base LID aligned to `2^lmc`.
//! - Within a switch, CA-facing ports come first (for the trees: down ports, then up ports).
//!
//! Bad parameters give a [`TopoError`], never a panic. [`by_name`] parses a short spec such as
//! `torus:6x6x6,4` (grammar in its documentation).

mod faults;
mod gen;
mod real;
mod spec;
mod wiring;

pub use faults::{fail, Faults};
pub use gen::*;
pub use real::*;
pub use spec::{by_name, SPEC_GRAMMAR};
pub use wiring::rewire;

use thiserror::Error;

use crate::fabric::{Fabric, FabricBuilder, FabricError, NodeKind, PortRef, MAX_UNICAST_LID};

/// Node GUID of the first generated switch.
pub const SWITCH_GUID_BASE: u64 = 0x0002_c900_0000_0000;
/// Node GUID of the first generated CA.
pub const CA_GUID_BASE: u64 = 0x0002_c901_0000_0000;
/// CA `i` has node GUID `CA_GUID_BASE + (i << CA_GUID_SHIFT)`, so up to 15 ports per CA.
pub const CA_GUID_SHIFT: u32 = 4;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TopoError {
    #[error("{generator}: {why}")]
    Param {
        generator: &'static str,
        why: String,
    },
    #[error("topology spec \"{spec}\": {why}")]
    Spec { spec: String, why: String },
    #[error("{generator}: the fabric needs LIDs up to {needed}, beyond the unicast limit {max}")]
    TooManyLids {
        generator: &'static str,
        needed: u64,
        max: u16,
    },
    #[error("{generator}: {source}")]
    Fabric {
        generator: &'static str,
        #[source]
        source: FabricError,
    },
}

pub(crate) fn param_err(generator: &'static str, why: impl Into<String>) -> TopoError {
    TopoError::Param {
        generator,
        why: why.into(),
    }
}

/// A topology under construction: nodes with a fixed port count, links between explicit ports.
/// GUIDs and LIDs are given only at [`Net::into_fabric`], following the conventions above.
#[derive(Debug)]
pub(crate) struct Net {
    generator: &'static str,
    kinds: Vec<NodeKind>,
    ports: Vec<u8>,
    descs: Vec<String>,
    links: Vec<(u32, u8, u32, u8)>,
    /// Next port `Net::connect` hands out, per node.
    next_free: Vec<u16>,
}

impl Net {
    pub(crate) fn new(generator: &'static str) -> Self {
        Net {
            generator,
            kinds: Vec::new(),
            ports: Vec::new(),
            descs: Vec::new(),
            links: Vec::new(),
            next_free: Vec::new(),
        }
    }

    fn add(&mut self, kind: NodeKind, ports: u32, desc: String) -> Result<u32, TopoError> {
        if ports == 0 || ports > 254 {
            return Err(param_err(
                self.generator,
                format!("node \"{desc}\" would need {ports} ports (1..=254 allowed)"),
            ));
        }
        let id = self.kinds.len() as u32;
        self.kinds.push(kind);
        self.ports.push(ports as u8);
        self.descs.push(desc);
        self.next_free.push(1);
        Ok(id)
    }

    pub(crate) fn switch(&mut self, ports: u32, desc: String) -> Result<u32, TopoError> {
        self.add(NodeKind::Switch, ports, desc)
    }

    pub(crate) fn ca(&mut self, ports: u32, desc: String) -> Result<u32, TopoError> {
        self.add(NodeKind::Ca, ports, desc)
    }

    pub(crate) fn node_count(&self) -> usize {
        self.kinds.len()
    }

    /// Links explicit ports. Callers compute port numbers from the topology's structure.
    pub(crate) fn link(&mut self, a: u32, pa: u32, b: u32, pb: u32) -> Result<(), TopoError> {
        for (n, p) in [(a, pa), (b, pb)] {
            if p == 0 || p > u32::from(self.ports[n as usize]) {
                return Err(param_err(
                    self.generator,
                    format!(
                        "node \"{}\" has {} ports, port {p} requested",
                        self.descs[n as usize], self.ports[n as usize]
                    ),
                ));
            }
        }
        self.links.push((a, pa as u8, b, pb as u8));
        Ok(())
    }

    /// Links the next free port of `a` to the next free port of `b`.
    pub(crate) fn connect(&mut self, a: u32, b: u32) -> Result<(), TopoError> {
        let pa = u32::from(self.next_free[a as usize]);
        let pb = u32::from(self.next_free[b as usize]);
        self.link(a, pa, b, pb)?;
        self.next_free[a as usize] += 1;
        self.next_free[b as usize] += 1;
        Ok(())
    }

    /// Ports `connect` has not yet used on node `n`.
    pub(crate) fn free_ports(&self, n: u32) -> u32 {
        (u32::from(self.ports[n as usize]) + 1)
            .saturating_sub(u32::from(self.next_free[n as usize]))
    }

    /// Marks the ports below `port` as used by explicit [`Net::link`] calls, so `connect` starts at
    /// `port`.
    pub(crate) fn reserve_until(&mut self, n: u32, port: u32) {
        self.next_free[n as usize] = port as u16;
    }

    /// Gives GUIDs and LIDs (see the module documentation) and validates the result.
    pub(crate) fn into_fabric(self, lmc: u8) -> Result<Fabric, TopoError> {
        let generator = self.generator;
        if lmc > crate::fabric::MAX_LMC {
            return Err(param_err(generator, format!("LMC {lmc} above 7")));
        }
        let wrap = |source| TopoError::Fabric { generator, source };
        // LID budget first, so a too-large fabric gets a clear error rather than a builder error.
        let switches = self
            .kinds
            .iter()
            .filter(|&&k| k == NodeKind::Switch)
            .count() as u64;
        let ca_ports: u64 = self
            .kinds
            .iter()
            .zip(&self.ports)
            .filter(|(&k, _)| k != NodeKind::Switch)
            .map(|(_, &p)| u64::from(p))
            .sum();
        let step = 1u64 << lmc;
        let first_ca = (switches + 1).div_ceil(step) * step;
        let needed = if ca_ports == 0 {
            switches
        } else {
            first_ca + ca_ports * step - 1
        };
        if needed > u64::from(MAX_UNICAST_LID) {
            return Err(TopoError::TooManyLids {
                generator,
                needed,
                max: MAX_UNICAST_LID,
            });
        }

        let mut b = FabricBuilder::new();
        let (mut nsw, mut nca) = (0u64, 0u64);
        let mut guids = Vec::with_capacity(self.kinds.len());
        for i in 0..self.kinds.len() {
            let guid = match self.kinds[i] {
                NodeKind::Switch => {
                    nsw += 1;
                    SWITCH_GUID_BASE + nsw - 1
                }
                _ => {
                    nca += 1;
                    CA_GUID_BASE + ((nca - 1) << CA_GUID_SHIFT)
                }
            };
            guids.push(guid);
            b.add_node(self.kinds[i], guid, self.ports[i], self.descs[i].clone())
                .map_err(wrap)?;
        }
        for &(a, pa, c, pc) in &self.links {
            b.link(PortRef { node: a, port: pa }, PortRef { node: c, port: pc })
                .map_err(wrap)?;
        }
        let mut lid = 1u64;
        for (i, (&kind, &guid)) in self.kinds.iter().zip(&guids).enumerate() {
            if kind == NodeKind::Switch {
                b.set_lid(
                    PortRef {
                        node: i as u32,
                        port: 0,
                    },
                    guid,
                    lid as u16,
                    0,
                )
                .map_err(wrap)?;
                lid += 1;
            }
        }
        lid = first_ca;
        for (i, (&kind, &guid)) in self.kinds.iter().zip(&guids).enumerate() {
            if kind != NodeKind::Switch {
                for p in 1..=self.ports[i] {
                    let at = PortRef {
                        node: i as u32,
                        port: p,
                    };
                    b.set_lid(at, guid + u64::from(p), lid as u16, lmc)
                        .map_err(wrap)?;
                    lid += step;
                }
            }
        }
        b.build().map_err(wrap)
    }
}

#[cfg(test)]
mod tests;
