//! Writing a routing back into OpenSM: every switch's `new_lft` for LIDs `1..=max_lid_ho` and the
//! hop count of the chosen port through `osm_switch_set_hops` (so SA path records and multicast
//! root selection see our routes).
//!
//! Never half-written tables: [`plan`] checks the whole routing against every switch's table
//! sizes before anything is touched; [`write`] checks again that OpenSM's switches are still the
//! ones planned for, and if a write still fails it resets every switch's `new_lft` and hops.

use super::ffi;
use super::subnet::{Subnet, SwitchLimits};
use crate::fabric::SwitchGraph;
use crate::routing::{Routing, NO_PATH};

/// One switch to write: core switch id, node GUID, and the table sizes it was planned against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlannedSwitch {
    pub switch: u32,
    pub guid: u64,
    pub limits: SwitchLimits,
}

/// A routing checked to fit OpenSM's switches.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub switches: Vec<PlannedSwitch>,
}

/// Checks that `routing` fits every switch: each has OpenSM tables big enough for all our LIDs,
/// every port is a port of that switch, every routed entry has a hop count, and every switch
/// OpenSM knows gets tables.
pub(crate) fn plan(subnet: &Subnet, g: &SwitchGraph, routing: &Routing) -> Result<Plan, String> {
    let f = &subnet.fabric;
    if g.num_switches() != subnet.osm_switches {
        return Err(format!(
            "OpenSM has {} switches but {} could be modelled",
            subnet.osm_switches,
            g.num_switches()
        ));
    }
    if routing.lft.num_switches() != g.num_switches() {
        return Err(format!(
            "the routing has tables for {} switches, the fabric has {}",
            routing.lft.num_switches(),
            g.num_switches()
        ));
    }
    let max_lid = routing.lft.max_lid;
    let mut switches = Vec::with_capacity(g.num_switches());
    for s in 0..g.num_switches() as u32 {
        let node = g.switch_node[s as usize];
        let name = || f.node_name(node);
        let limits = subnet
            .limits
            .get(node as usize)
            .copied()
            .flatten()
            .ok_or_else(|| format!("switch {} has no OpenSM switch object", name()))?;
        check_limits(&limits).map_err(|e| format!("switch {}: {e}", name()))?;
        if max_lid > limits.max_lid_ho {
            return Err(format!(
                "switch {}: LID {max_lid} is beyond its table (max LID {})",
                name(),
                limits.max_lid_ho
            ));
        }
        let row = routing.lft.table(s);
        let hops = routing.hops.row(s);
        for lid in 1..=usize::from(max_lid) {
            let port = row[lid];
            if port == NO_PATH {
                continue;
            }
            if port >= limits.num_ports {
                return Err(format!(
                    "switch {}: LID {lid} routed to port {port}, but the switch has ports 0..{}",
                    name(),
                    limits.num_ports
                ));
            }
            if hops[lid] == NO_PATH {
                return Err(format!(
                    "switch {}: LID {lid} is routed but has no hop count",
                    name()
                ));
            }
        }
        switches.push(PlannedSwitch {
            switch: s,
            guid: f.nodes[node as usize].guid,
            limits,
        });
    }
    Ok(Plan { switches })
}

/// OpenSM's own allocation invariants for a switch prepared for routing.
fn check_limits(l: &SwitchLimits) -> Result<(), String> {
    if l.max_lid_ho == 0 {
        return Err("OpenSM prepared no LIDs".into());
    }
    if u32::from(l.lft_size) <= u32::from(l.max_lid_ho) || l.num_hops <= l.max_lid_ho {
        return Err(format!(
            "tables smaller than max LID {} (new_lft {} bytes, {} hop rows)",
            l.max_lid_ho, l.lft_size, l.num_hops
        ));
    }
    if l.num_ports == 0 {
        return Err("no ports".into());
    }
    Ok(())
}

/// What [`write`] did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WriteStats {
    pub switches: usize,
    /// LFT entries that route somewhere (not OSM_NO_PATH).
    pub routed_entries: u64,
}

/// Writes the planned routing into OpenSM's switches. `fail_after` (a test hook) makes the write
/// fail as if `osm_switch_set_hops` had run out of memory after that many routed entries, to
/// exercise the reset.
///
/// # Safety
/// `osm` must be the running OpenSM, inside its routing callbacks (its lock held), after
/// `osm_switch_prepare_path_rebuild` ran for this routing (as `ucast_mgr_route` guarantees).
pub(crate) unsafe fn write(
    api: &ffi::Api,
    osm: *mut ffi::osm_opensm_t,
    plan: &Plan,
    routing: &Routing,
    fail_after: Option<u64>,
) -> Result<WriteStats, String> {
    let subn = std::ptr::addr_of!((*osm).subn);
    // 1. Find every switch again and check it is still what was planned: read-only.
    let mut sws = Vec::with_capacity(plan.switches.len());
    for p in &plan.switches {
        let sw = (api.get_switch_by_guid)(subn, p.guid.to_be());
        if sw.is_null() {
            return Err(format!(
                "switch 0x{:016x} disappeared since routing",
                p.guid
            ));
        }
        let now = SwitchLimits {
            max_lid_ho: (*sw).max_lid_ho,
            num_ports: (*sw).num_ports,
            lft_size: (*sw).lft_size,
            num_hops: (*sw).num_hops,
        };
        if now != p.limits || (*sw).new_lft.is_null() || (*sw).hops.is_null() {
            return Err(format!(
                "switch 0x{:016x} changed since routing ({:?} planned, {:?} now)",
                p.guid, p.limits, now
            ));
        }
        sws.push(sw);
    }

    // 2. Write. Only osm_switch_set_hops can fail (malloc); then undo everything.
    let mut stats = WriteStats {
        switches: sws.len(),
        routed_entries: 0,
    };
    let max_lid = routing.lft.max_lid;
    for (p, &sw) in plan.switches.iter().zip(&sws) {
        let max = usize::from(p.limits.max_lid_ho);
        // SAFETY: new_lft holds lft_size > max_lid_ho bytes (checked in plan and above).
        let lft = std::slice::from_raw_parts_mut((*sw).new_lft, usize::from(p.limits.lft_size));
        let row = routing.lft.table(p.switch);
        let hops = routing.hops.row(p.switch);
        for lid in 1..=max {
            let port = if lid <= usize::from(max_lid) {
                row[lid]
            } else {
                NO_PATH
            };
            lft[lid] = port;
            if port == NO_PATH {
                continue;
            }
            stats.routed_entries += 1;
            let injected = fail_after.is_some_and(|n| stats.routed_entries > n);
            if injected || (api.switch_set_hops)(sw, lid as u16, port, hops[lid]) != 0 {
                for (q, &sw) in plan.switches.iter().zip(&sws) {
                    let lft = std::slice::from_raw_parts_mut(
                        (*sw).new_lft,
                        usize::from(q.limits.lft_size),
                    );
                    lft.fill(NO_PATH);
                    (api.switch_clear_hops)(sw);
                }
                return Err(format!(
                    "osm_switch_set_hops failed on switch 0x{:016x} for LID {lid}{}; the new \
                     tables of all {} switches were reset",
                    p.guid,
                    if injected {
                        " (injected failure, a test hook)"
                    } else {
                        " (out of memory?)"
                    },
                    sws.len()
                ));
            }
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{FabricBuilder, NodeKind, PortRef};
    use crate::opensm::subnet::SkipCounts;

    /// Two switches, one CA on the first; OpenSM's tables sized for LIDs up to 63.
    fn subnet() -> Subnet {
        let mut b = FabricBuilder::new();
        let s0 = b.add_node(NodeKind::Switch, 0x10, 4, "sw0").unwrap();
        let s1 = b.add_node(NodeKind::Switch, 0x11, 4, "sw1").unwrap();
        let c0 = b.add_node(NodeKind::Ca, 0x20, 1, "ca0").unwrap();
        b.link(PortRef { node: s0, port: 1 }, PortRef { node: s1, port: 1 })
            .unwrap();
        b.link(PortRef { node: c0, port: 1 }, PortRef { node: s0, port: 3 })
            .unwrap();
        b.set_lid(PortRef { node: s0, port: 0 }, 0x10, 1, 0)
            .unwrap();
        b.set_lid(PortRef { node: s1, port: 0 }, 0x11, 2, 0)
            .unwrap();
        b.set_lid(PortRef { node: c0, port: 1 }, 0x20, 3, 0)
            .unwrap();
        let lim = SwitchLimits {
            max_lid_ho: 3,
            num_ports: 5,
            lft_size: 64,
            num_hops: 4,
        };
        Subnet {
            fabric: b.build().unwrap(),
            limits: vec![Some(lim), Some(lim), None],
            osm_switches: 2,
            min_data_vls: Some(8),
            qos: false,
            lmc: 0,
            dump_dir: None,
            skipped: SkipCounts::default(),
        }
    }

    #[test]
    fn plan_accepts_a_fitting_routing() {
        let sn = subnet();
        let g = SwitchGraph::new(&sn.fabric).unwrap();
        let r = crate::sssp::route(&g);
        let p = plan(&sn, &g, &r).unwrap();
        assert_eq!(p.switches.len(), 2);
        assert_eq!(p.switches[0].guid, 0x10);
        assert_eq!(p.switches[1].guid, 0x11);
    }

    #[test]
    fn plan_rejects_what_does_not_fit() {
        let sn = subnet();
        let g = SwitchGraph::new(&sn.fabric).unwrap();
        let r = crate::sssp::route(&g);

        let mut small = subnet();
        small.limits[1] = Some(SwitchLimits {
            max_lid_ho: 2,
            num_ports: 5,
            lft_size: 64,
            num_hops: 3,
        });
        let e = plan(&small, &g, &r).unwrap_err();
        assert!(e.contains("sw1") && e.contains("LID 3"), "{e}");

        let mut few_ports = subnet();
        few_ports.limits[0] = Some(SwitchLimits {
            max_lid_ho: 3,
            num_ports: 3,
            lft_size: 64,
            num_hops: 4,
        });
        let e = plan(&few_ports, &g, &r).unwrap_err();
        assert!(e.contains("sw0") && e.contains("port 3"), "{e}");

        let mut missing = subnet();
        missing.osm_switches = 3;
        assert!(plan(&missing, &g, &r).unwrap_err().contains("3 switches"));

        let mut no_obj = subnet();
        no_obj.limits[0] = None;
        assert!(plan(&no_obj, &g, &r)
            .unwrap_err()
            .contains("no OpenSM switch object"));

        let mut bad_hops = r.clone();
        bad_hops.hops.set(0, 2, NO_PATH);
        assert!(plan(&sn, &g, &bad_hops)
            .unwrap_err()
            .contains("no hop count"));
    }
}
