//! Reads OpenSM's in-memory subnet into the core's [`Fabric`]: nodes, active links (parallel links
//! included), LIDs and LMC, plus the few settings the engines need (operational VLs, QoS, dump
//! directory). Everything is copied into Rust values; no OpenSM pointer survives the call.

use std::collections::HashMap;
use std::ffi::CStr;
use std::path::PathBuf;

use super::ffi;
use crate::fabric::{Fabric, FabricBuilder, FabricError, NodeKind, PortRef};

/// The table sizes of one OpenSM switch, as `osm_switch_prepare_path_rebuild` left them for this
/// routing run: what every write must stay within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SwitchLimits {
    /// LIDs `0..=max_lid_ho` have `new_lft` entries.
    pub max_lid_ho: u16,
    /// `sw->num_ports`: physical ports + port 0; valid LFT ports are `0..num_ports`.
    pub num_ports: u8,
    /// Bytes allocated for `new_lft`.
    pub lft_size: u16,
    /// Rows allocated for `hops`.
    pub num_hops: u16,
}

/// Things skipped while reading the subnet, for the log.
#[derive(Clone, Debug, Default)]
pub(crate) struct SkipCounts {
    /// Links whose port is DOWN on one end.
    pub down_links: usize,
    /// Links OpenSM marks unhealthy (`osm_link_is_healthy`).
    pub unhealthy_links: usize,
    /// Links from a node to itself (loopback cables): useless for routing.
    pub loop_links: usize,
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
    pub skipped: SkipCounts,
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

/// Iterates over the items of a `cl_qmap_t`.
struct QmapIter {
    cur: *const ffi::cl_map_item_t,
    end: *const ffi::cl_map_item_t,
}

impl QmapIter {
    /// # Safety
    /// `map` must be a live, initialised qmap that is not modified while iterating (OpenSM holds
    /// its lock around routing).
    unsafe fn new(map: *const ffi::cl_qmap_t) -> Self {
        QmapIter {
            cur: ffi::cl_qmap_head(map),
            end: ffi::cl_qmap_end(map),
        }
    }
}

impl Iterator for QmapIter {
    type Item = *const ffi::cl_map_item_t;
    fn next(&mut self) -> Option<Self::Item> {
        if self.cur == self.end || self.cur.is_null() {
            return None;
        }
        let item = self.cur;
        // SAFETY: `item` is a live item of the map (see `new`).
        self.cur = unsafe { ffi::cl_qmap_next(item) };
        Some(item)
    }
}

/// Node description as text: the 64 bytes up to the first NUL, trimmed.
fn description(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).trim().to_string()
}

/// # Safety
/// `p` must point at a live `osm_physp_t` or be null.
unsafe fn physp_ok(p: *const ffi::osm_physp_t) -> bool {
    !p.is_null() && ffi::osm_physp_is_valid(p) != 0 && !(*p).p_node.is_null()
}

/// # Safety
/// `p` must point at a live `osm_physp_t`.
unsafe fn port_up(p: *const ffi::osm_physp_t) -> bool {
    ffi::ib_port_info_get_port_state(&(*p).port_info) >= ffi::IB_LINK_INIT as u8
}

/// Reads the subnet.
///
/// # Safety
/// `osm` must be the running OpenSM, with its lock held (as during the routing callbacks).
pub(crate) unsafe fn read(
    api: &ffi::Api,
    osm: *mut ffi::osm_opensm_t,
) -> Result<Subnet, FabricError> {
    let subn = std::ptr::addr_of_mut!((*osm).subn);
    let mut b = FabricBuilder::new();
    let mut skipped = SkipCounts::default();
    let mut limits = Vec::new();
    // osm_node_t pointer -> fabric node index
    let mut index: HashMap<usize, u32> = HashMap::new();
    let mut nodes: Vec<*mut ffi::osm_node_t> = Vec::new();

    for item in QmapIter::new(std::ptr::addr_of!((*subn).node_guid_tbl)) {
        // The map item is the first field of osm_node_t.
        let node = item as *mut ffi::osm_node_t;
        let kind = match u32::from(ffi::osm_node_get_type(node)) {
            ffi::IB_NODE_TYPE_SWITCH => NodeKind::Switch,
            ffi::IB_NODE_TYPE_CA => NodeKind::Ca,
            ffi::IB_NODE_TYPE_ROUTER => NodeKind::Router,
            _ => {
                skipped.unknown_nodes += 1;
                continue;
            }
        };
        let guid = u64::from_be(ffi::osm_node_get_node_guid(node));
        let num_ports = (*node).node_info.num_ports;
        let desc = description(&(*node).node_desc.description);
        let idx = b.add_node(kind, guid, num_ports, desc)?;
        let sw = (*node).sw;
        limits.push(
            (kind == NodeKind::Switch && !sw.is_null()).then(|| SwitchLimits {
                max_lid_ho: (*sw).max_lid_ho,
                num_ports: (*sw).num_ports,
                lft_size: (*sw).lft_size,
                num_hops: (*sw).num_hops,
            }),
        );
        index.insert(node as usize, idx);
        nodes.push(node);
    }

    let mut min_vls: Option<u8> = None;
    for (idx, &node) in nodes.iter().enumerate() {
        let idx = idx as u32;
        let tbl = (*node).physp_tbl_size.min(256);
        for port in 1..tbl {
            let p = ffi::osm_node_get_physp_ptr(node, port);
            if !physp_ok(p) {
                continue;
            }
            let r = (*p).p_remote_physp;
            if !physp_ok(r) {
                continue;
            }
            let ridx = match index.get(&((*r).p_node as usize)) {
                Some(&i) => i,
                None => continue, // the far node is not in the node table (yet)
            };
            let (lport, rport) = ((*p).port_num, (*r).port_num);
            let up = port_up(p) && port_up(r);
            if up {
                if let Some(v) = data_vls(ffi::ib_port_info_get_op_vls(&(*p).port_info)) {
                    min_vls = Some(min_vls.map_or(v, |m| m.min(v)));
                }
            }
            // Every link is seen from both ends: count and add it from the smaller one.
            if (idx, lport) > (ridx, rport) {
                continue;
            }
            if !up {
                skipped.down_links += 1;
            } else if (api.link_is_healthy)(p) == 0 {
                skipped.unhealthy_links += 1;
            } else if ridx == idx {
                skipped.loop_links += 1;
            } else {
                b.link(
                    PortRef {
                        node: idx,
                        port: lport,
                    },
                    PortRef {
                        node: ridx,
                        port: rport,
                    },
                )?;
            }
        }
    }

    for item in QmapIter::new(std::ptr::addr_of!((*subn).port_guid_tbl)) {
        let port = item as *mut ffi::osm_port_t;
        let p = (*port).p_physp;
        if !physp_ok(p) {
            continue;
        }
        let Some(&idx) = index.get(&((*port).p_node as usize)) else {
            continue;
        };
        let base = u16::from_be(ffi::osm_port_get_base_lid(port));
        if base == 0 {
            skipped.ports_without_lid += 1;
            continue;
        }
        let lmc = ffi::osm_port_get_lmc(port);
        let guid = u64::from_be(ffi::osm_port_get_guid(port));
        b.set_lid(
            PortRef {
                node: idx,
                port: (*p).port_num,
            },
            guid,
            base,
            lmc,
        )?;
    }

    let opt = std::ptr::addr_of!((*subn).opt);
    let dump_dir = (!(*opt).dump_files_dir.is_null()).then(|| {
        PathBuf::from(
            CStr::from_ptr((*opt).dump_files_dir)
                .to_string_lossy()
                .into_owned(),
        )
    });
    Ok(Subnet {
        fabric: b.build()?,
        limits,
        osm_switches: ffi::cl_qmap_count(std::ptr::addr_of!((*subn).sw_guid_tbl)) as usize,
        min_data_vls: min_vls,
        qos: (*opt).qos != 0,
        lmc: (*opt).lmc,
        dump_dir,
        skipped,
    })
}

#[cfg(test)]
mod tests {
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
    fn descriptions_stop_at_nul() {
        let mut raw = [0u8; 64];
        raw[..9].copy_from_slice(b"leaf 1   ");
        assert_eq!(description(&raw), "leaf 1");
        assert_eq!(description(&[b'x'; 64]), "x".repeat(64));
    }
}
