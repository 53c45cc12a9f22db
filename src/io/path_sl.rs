//! The path-SL table: one line `0x<source node GUID> <DLID> <SL>` per source CA/router node and
//! destination LID, the format `ibdmchk -c` reads. The plug-in writes it into OpenSM's dump
//! directory (`opensm-path-sl.dump`), `dfsssp-rs route --path-sl-out` wherever it is asked to.
//!
//! One rule for nodes with several ports: ibdmchk names a source by its *node* GUID, so a node
//! gets one set of lines, taken from its lowest-numbered port attached to a switch (port order is
//! fixed by the hardware, unlike LIDs, which the SM may reassign). A multi-port CA cabled to two
//! switches therefore lists the SLs of its first port's switch; [`PathSlStats::split_sources`]
//! counts such nodes. Nodes are listed in GUID order, destinations in LID order.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use rayon::prelude::*;

use super::write_atomically;
use crate::fabric::{Fabric, NodeKind};
use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::routing::Routing;

/// The file name the plug-in uses in OpenSM's dump directory.
pub const PATH_SL_FILE: &str = "opensm-path-sl.dump";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathSlStats {
    pub sources: usize,
    pub lines: u64,
    /// Source nodes with ports on different switches: only their first port's SLs are listed.
    pub split_sources: usize,
}

/// Source nodes for the path-SL dump: every CA/router attached to a switch, by node GUID, with the
/// switch its first (lowest-numbered) attached port hangs off.
fn sources(f: &Fabric, g: &SwitchGraph) -> (Vec<(u64, u32)>, usize) {
    // node -> (port, switch, several switches seen)
    let mut first: HashMap<u32, (u8, u32, bool)> = HashMap::new();
    for &(e, s) in g.terminals() {
        let ep = &f.endpoints()[e as usize];
        if f.nodes()[ep.node as usize].kind == NodeKind::Switch {
            continue;
        }
        first
            .entry(ep.node)
            .and_modify(|(port, sw, split)| {
                *split |= *sw != s;
                if ep.port < *port {
                    (*port, *sw) = (ep.port, s);
                }
            })
            .or_insert((ep.port, s, false));
    }
    let split = first.values().filter(|v| v.2).count();
    let mut out: Vec<(u64, u32)> = first
        .iter()
        .map(|(&n, &(_, s, _))| (f.nodes()[n as usize].guid, s))
        .collect();
    out.sort_unstable();
    (out, split)
}

/// Writes the path-SL table of routing `r` into `path`, atomically (a temporary file renamed into
/// place, so a reader never sees half a table). Layer `i` is SL `i + sl_offset`.
pub fn write_file(
    path: &Path,
    f: &Fabric,
    g: &SwitchGraph,
    r: &Routing,
    sl_offset: u8,
) -> io::Result<PathSlStats> {
    write_atomically(path, |w| write(w, f, g, r, sl_offset))
}

/// The path-SL table of routing `r` as text (for tests and small fabrics).
pub fn to_text(f: &Fabric, g: &SwitchGraph, r: &Routing) -> String {
    let mut buf = Vec::new();
    write(&mut buf, f, g, r, 0).expect("writing to memory does not fail");
    String::from_utf8(buf).expect("the table is ASCII")
}

/// Writes the path-SL table of routing `r` to `w`, layer `i` as SL `i + sl_offset`.
pub fn write(
    w: &mut impl Write,
    f: &Fabric,
    g: &SwitchGraph,
    r: &Routing,
    sl_offset: u8,
) -> io::Result<PathSlStats> {
    let (srcs, split_sources) = sources(f, g);
    // " <DLID> " of every routable destination, formatted once.
    let dests: Vec<(u16, Vec<u8>)> = g
        .dests()
        .iter()
        .filter(|d| d.switch != NO_SWITCH && d.lid <= r.lft.max_lid)
        .map(|d| (d.lid, format!(" {} ", d.lid).into_bytes()))
        .collect();
    let line_len = 19 + dests.iter().map(|d| d.1.len() + 3).sum::<usize>();
    let mut stats = PathSlStats {
        sources: srcs.len(),
        lines: 0,
        split_sources,
    };
    {
        // Format a batch of sources in parallel, write it in order.
        for batch in srcs.chunks(64) {
            let bufs: Vec<Vec<u8>> = batch
                .par_iter()
                .map(|&(guid, s)| {
                    let prefix = format!("0x{guid:016x}");
                    let mut buf = Vec::with_capacity(line_len);
                    for (lid, text) in &dests {
                        buf.extend_from_slice(prefix.as_bytes());
                        buf.extend_from_slice(text);
                        let sl = r.layer(s, *lid) + sl_offset;
                        if sl >= 10 {
                            buf.push(b'1');
                        }
                        buf.push(b'0' + sl % 10);
                        buf.push(b'\n');
                    }
                    buf
                })
                .collect();
            for b in &bufs {
                w.write_all(b)?;
            }
        }
    }
    stats.lines = (srcs.len() * dests.len()) as u64;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{FabricBuilder, PortRef};
    use crate::routing::SwitchLidTable;

    /// sw0 -- sw1; ca0 (2 ports) on sw0 and sw1, ca1 on sw1.
    fn fabric() -> Fabric {
        let mut b = FabricBuilder::new();
        let s0 = b.add_node(NodeKind::Switch, 0x10, 4, "sw0").unwrap();
        let s1 = b.add_node(NodeKind::Switch, 0x11, 4, "sw1").unwrap();
        let c0 = b.add_node(NodeKind::Ca, 0x20, 2, "ca0").unwrap();
        let c1 = b.add_node(NodeKind::Ca, 0x21, 1, "ca1").unwrap();
        b.link(PortRef { node: s0, port: 1 }, PortRef { node: s1, port: 1 })
            .unwrap();
        b.link(PortRef { node: c0, port: 2 }, PortRef { node: s0, port: 2 })
            .unwrap();
        b.link(PortRef { node: c0, port: 1 }, PortRef { node: s1, port: 2 })
            .unwrap();
        b.link(PortRef { node: c1, port: 1 }, PortRef { node: s1, port: 3 })
            .unwrap();
        b.set_lid(PortRef { node: s0, port: 0 }, 0x10, 1, 0)
            .unwrap();
        b.set_lid(PortRef { node: s1, port: 0 }, 0x11, 2, 0)
            .unwrap();
        b.set_lid(PortRef { node: c0, port: 2 }, 0x22, 4, 1)
            .unwrap();
        b.set_lid(PortRef { node: c0, port: 1 }, 0x23, 6, 0)
            .unwrap();
        b.set_lid(PortRef { node: c1, port: 1 }, 0x24, 12, 0)
            .unwrap();
        b.build().unwrap()
    }

    #[test]
    fn a_ca_on_two_switches_lists_its_lowest_ports_switch() {
        let f = fabric();
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = crate::sssp::route(&g);
        // Layer = 10 + switch for every path, to see which switch each line used.
        let mut layers = SwitchLidTable::new(2, r.lft.max_lid, 0);
        for lid in 0..=r.lft.max_lid {
            layers.set(0, lid, 10);
            layers.set(1, lid, 11);
        }
        r.layers = Some(layers);
        r.num_layers = 12;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(PATH_SL_FILE);
        let st = write_file(&p, &f, &g, &r, 0).unwrap();
        assert_eq!(
            st,
            PathSlStats {
                sources: 2,
                lines: 2 * 6,
                split_sources: 1
            }
        );
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 12);
        // ca0's first port is port 1, on sw1.
        assert_eq!(lines[0], "0x0000000000000020 1 11");
        assert!(lines[..6]
            .iter()
            .all(|l| l.starts_with("0x0000000000000020 ") && l.ends_with(" 11")));
        assert_eq!(
            lines[6..]
                .iter()
                .map(|l| l.split(' ').nth(1).unwrap())
                .collect::<Vec<_>>(),
            vec!["1", "2", "4", "5", "6", "12"]
        );
        assert!(!dir.path().join("opensm-path-sl.dump.tmp").exists());
    }
}
