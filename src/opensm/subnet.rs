//! Reads OpenSM's in-memory subnet into the core's [`Fabric`]: nodes, active links (parallel links
//! included), LIDs and LMC, plus the few settings the engines need (operational VLs, QoS, dump
//! directory), through the wrappers of [`super::raw`]. Everything is copied into Rust values; no
//! OpenSM object survives the call.

use crate::union_find::UnionFind;
use std::collections::HashMap;
use std::path::PathBuf;

use super::ffi;
use super::raw::LockedSubnet;
pub(crate) use super::raw::SwitchLimits;
use crate::fabric::{Fabric, FabricBuilder, FabricError, NodeKind, PortRef};

/// Things skipped while reading the subnet, for the log.
#[derive(Clone, Debug, Default)]
pub(crate) struct SkipCounts {
    /// Links whose port is DOWN on one end.
    pub down_links: usize,
    /// Links OpenSM marks unhealthy (`osm_link_is_healthy`).
    pub unhealthy_links: usize,
    /// Links from a node to itself (loopback cables): useless for routing.
    pub loop_links: usize,
    /// Switch-to-switch links OpenSM finds throttled, left out (`avoid_throttled_links`), and
    /// those kept because leaving them out would split the fabric.
    pub throttled_links: usize,
    pub throttled_kept: usize,
    /// Ports in OpenSM's port table without a LID yet.
    pub ports_without_lid: usize,
    /// Nodes of a type other than switch, CA, router.
    pub unknown_nodes: usize,
}

/// A copy of everything the engines need from OpenSM's subnet.
pub(crate) struct Subnet {
    pub fabric: Fabric,
    /// Indexed like `fabric.nodes()`: the OpenSM switch's table limits (`None` for CAs/routers).
    pub limits: Vec<Option<SwitchLimits>>,
    /// Switches in OpenSM's switch table (every one of them must get tables).
    pub osm_switches: usize,
    /// Fewest data VLs any active port operates with (`None` if no port reported any).
    pub min_data_vls: Option<u8>,
    /// OpenSM's `qos` option: only then does it program SL-to-VL tables.
    pub qos: bool,
    /// OpenSM's `lmc` option.
    pub lmc: u8,
    /// OpenSM's `dump_files_dir`.
    pub dump_dir: Option<PathBuf>,
    /// The configuration file OpenSM read, and its `event_plugin_options`.
    pub config_file: Option<PathBuf>,
    pub plugin_options: Option<String>,
    /// OpenSM's options that bear on routing (`name`, value).
    pub routing_options: Vec<(&'static str, String)>,
    pub skipped: SkipCounts,
    /// The first sweep since this SM came out of standby ([`LockedSubnet::took_over`]).
    pub took_over: bool,
}

/// What dfsssp-rs makes of OpenSM's routing options, as one log line: those it honours, those
/// set (away from their defaults) that it does not use, and `use_ucast_cache`, which lets OpenSM
/// change the tables without asking the engine.
pub(crate) fn option_verdicts(opts: &[(&'static str, String)]) -> String {
    let mut honoured = Vec::new();
    let mut unused = Vec::new();
    let mut warn = String::new();
    for (name, v) in opts {
        let item = format!("{name} {v}");
        match *name {
            "lmc" | "lmc_esp0" | "qos" | "cn_guid_file" | "io_guid_file" => honoured.push(item),
            "avoid_throttled_links" if v == "TRUE" => honoured.push(format!(
                "{item} (throttled links left out unless the fabric needs them)"
            )),
            "max_op_vls" => honoured.push(format!("{item} (through the ports' operational VLs)")),
            // OpenSM asks path_sl for every port's MasterSMSL with sm_sl as the hint.
            "sm_sl" => honoured.push(format!("{item} (the hint for each port's SL to the SM)")),
            "port_shifting" if v == "TRUE" => unused.push(item),
            "scatter_ports" if v != "0" => unused.push(item),
            // OpenSM programs SL-to-VL per port pair when the engine maps SLs to VLs.
            "use_optimized_slvl" if v == "TRUE" => unused.push(format!(
                "{item} (per-port SL-to-VL tables: the engine maps its layers' SLs)"
            )),
            "use_ucast_cache" if v == "TRUE" => {
                warn = "; use_ucast_cache TRUE lets OpenSM change the tables without the engine \
                        (set it FALSE with dfsssp-rs)"
                    .into()
            }
            "guid_routing_order_file" => unused.push(format!(
                "{item} (the order comes from cn_guid_file and io_guid_file)"
            )),
            n if n.ends_with("_file") => unused.push(item),
            _ => {}
        }
    }
    let unused = if unused.is_empty() {
        String::new()
    } else {
        format!("; set but not used: {}", unused.join(", "))
    };
    format!("honoured: {}{unused}{warn}", honoured.join(", "))
}

/// Data VLs for a PortInfo OperationalVLs code (IBA 14.2.5.6): 1 => VL0, 2 => VL0-1, 3 => VL0-3,
/// 4 => VL0-7, 5 => VL0-14. Other codes are invalid.
pub(crate) fn data_vls(op_vls_code: u8) -> Option<u8> {
    match op_vls_code {
        1 => Some(1),
        2 => Some(2),
        3 => Some(4),
        4 => Some(8),
        5 => Some(15),
        _ => None,
    }
}

/// Reads the subnet into Rust values.
pub(crate) fn read(api: &ffi::Api, osm: &LockedSubnet<'_>) -> Result<Subnet, FabricError> {
    let mut b = FabricBuilder::new();
    let mut skipped = SkipCounts::default();
    let mut limits = Vec::new();
    // OpenSM node object -> fabric node index
    let mut index: HashMap<usize, u32> = HashMap::new();
    let mut nodes = Vec::new();

    for node in osm.nodes() {
        let Some(kind) = node.kind() else {
            skipped.unknown_nodes += 1;
            continue;
        };
        let idx = b.add_node(kind, node.guid(), node.num_ports(), node.description())?;
        limits.push(if kind == NodeKind::Switch {
            node.switch_limits()
        } else {
            None
        });
        index.insert(node.id(), idx);
        nodes.push(node);
    }

    let opt = osm.options();
    // Throttled switch-to-switch links (avoid_throttled_links), decided once all others are in.
    let mut throttled: Vec<(PortRef, PortRef)> = Vec::new();
    let mut min_vls: Option<u8> = None;
    for (idx, node) in nodes.iter().enumerate() {
        let idx = idx as u32;
        for port in 1..node.port_slots() {
            let Some(p) = node.physp(port as u8) else {
                continue;
            };
            let Some(r) = p.remote() else { continue };
            let Some(&ridx) = index.get(&r.node_id()) else {
                continue; // the far node is not in the node table (yet)
            };
            let (lport, rport) = (p.port_num(), r.port_num());
            let ends = (
                PortRef {
                    node: idx,
                    port: lport,
                },
                PortRef {
                    node: ridx,
                    port: rport,
                },
            );
            let up = p.is_up() && r.is_up();
            if up {
                if let Some(v) = data_vls(p.op_vls_code()) {
                    min_vls = Some(min_vls.map_or(v, |m| m.min(v)));
                }
            }
            // Every link is seen from both ends: count and add it from the smaller one.
            if (idx, lport) > (ridx, rport) {
                continue;
            }
            if !up {
                skipped.down_links += 1;
            } else if !p.link_is_healthy(api) {
                skipped.unhealthy_links += 1;
            } else if ridx == idx {
                skipped.loop_links += 1;
            } else if opt.avoid_throttled_links
                && node.kind() == Some(NodeKind::Switch)
                && nodes[ridx as usize].kind() == Some(NodeKind::Switch)
                && p.link_is_throttled(api, opt.fdr10)
            {
                throttled.push(ends);
            } else {
                b.link(ends.0, ends.1)?;
            }
        }
    }

    add_joining_throttled(&mut b, nodes.len(), throttled, &mut skipped)?;

    set_port_lids(osm, &index, &mut b, &mut skipped)?;

    Ok(Subnet {
        fabric: b.build()?,
        limits,
        osm_switches: osm.switch_count(),
        min_data_vls: min_vls,
        qos: opt.qos,
        lmc: opt.lmc,
        dump_dir: opt.dump_dir,
        config_file: opt.config_file,
        plugin_options: opt.plugin_options,
        routing_options: opt.routing_options,
        skipped,
        took_over: osm.took_over(),
    })
}

/// Stock dfsssp drops throttled links outright, which can split the fabric; keep those that
/// join what the other links (of `n` nodes) leave apart.
fn add_joining_throttled(
    b: &mut FabricBuilder,
    n: usize,
    throttled: Vec<(PortRef, PortRef)>,
    skipped: &mut SkipCounts,
) -> Result<(), FabricError> {
    let mut joined = UnionFind::new(n);
    for l in b.links() {
        joined.union(l.a.node, l.b.node);
    }
    for (a, r) in throttled {
        if joined.union(a.node, r.node) {
            skipped.throttled_kept += 1;
            b.link(a, r)?;
        } else {
            skipped.throttled_links += 1;
        }
    }
    Ok(())
}

/// The base LID and LMC of every port OpenSM knows with a LID (`index`: OpenSM node object ->
/// fabric node index).
fn set_port_lids(
    osm: &LockedSubnet<'_>,
    index: &HashMap<usize, u32>,
    b: &mut FabricBuilder,
    skipped: &mut SkipCounts,
) -> Result<(), FabricError> {
    for port in osm.ports() {
        let Some(p) = port.physp() else { continue };
        let Some(&idx) = index.get(&port.node_id()) else {
            continue;
        };
        let base = port.base_lid();
        if base == 0 {
            skipped.ports_without_lid += 1;
            continue;
        }
        b.set_lid(
            PortRef {
                node: idx,
                port: p.port_num(),
            },
            port.guid(),
            base,
            port.lmc(),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::raw::description;
    use super::*;

    #[test]
    fn op_vls_codes() {
        assert_eq!(data_vls(0), None);
        assert_eq!(data_vls(1), Some(1));
        assert_eq!(data_vls(3), Some(4));
        assert_eq!(data_vls(4), Some(8));
        assert_eq!(data_vls(5), Some(15));
        assert_eq!(data_vls(6), None);
    }

    #[test]
    fn option_verdicts_name_what_is_honoured_and_what_is_not() {
        let o = |v: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
            v.iter().map(|&(k, v)| (k, v.to_string())).collect()
        };
        let defaults = o(&[
            ("lmc", "0"),
            ("qos", "TRUE"),
            ("max_op_vls", "8"),
            ("sm_sl", "0"),
            ("avoid_throttled_links", "FALSE"),
            ("use_ucast_cache", "FALSE"),
        ]);
        assert_eq!(
            option_verdicts(&defaults),
            "honoured: lmc 0, qos TRUE, max_op_vls 8 (through the ports' operational VLs), \
             sm_sl 0 (the hint for each port's SL to the SM)"
        );
        let set = o(&[
            ("lmc", "1"),
            ("avoid_throttled_links", "TRUE"),
            ("port_shifting", "TRUE"),
            ("use_ucast_cache", "TRUE"),
            ("cn_guid_file", "/etc/opensm/cn"),
            ("sm_sl", "3"),
        ]);
        let line = option_verdicts(&set);
        assert!(
            line.starts_with(
                "honoured: lmc 1, avoid_throttled_links TRUE (throttled links left out unless \
                 the fabric needs them), cn_guid_file /etc/opensm/cn, sm_sl 3 (the hint for \
                 each port's SL to the SM); set but not used: port_shifting TRUE"
            ),
            "{line}"
        );
        assert!(line.contains("cn_guid_file /etc/opensm/cn"), "{line}");
        assert!(
            line.ends_with(
                "; use_ucast_cache TRUE lets OpenSM change the tables without the engine (set it \
                 FALSE with dfsssp-rs)"
            ),
            "{line}"
        );
        assert!(!line.contains("  "), "no runs of spaces: {line}");
    }

    #[test]
    fn descriptions_stop_at_nul() {
        let mut raw = [0u8; 64];
        raw[..9].copy_from_slice(b"leaf 1   ");
        assert_eq!(description(&raw), "leaf 1");
        assert_eq!(description(&[b'x'; 64]), "x".repeat(64));
    }
}
