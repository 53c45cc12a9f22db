//! Writing a routing back into OpenSM: every switch's `new_lft` for LIDs `1..=max_lid_ho`, and
//! OpenSM's "LID matrix" of hop counts ([`super::lid_matrix`], written while the routing is
//! computed: it depends on the fabric alone).
//!
//! Hop counts: OpenSM reads `sw->hops` in two places only (SA path records walk the LFTs
//! instead): its default multicast routing, which picks for each member the first port with the
//! fewest hops to the member's *switch* LID, and its dump files (opensm.fdbs, the LID matrix),
//! which derive a CA LID's hops from its switch's LID. So, as OpenSM's own
//! `osm_ucast_mgr_build_lid_matrices` does, we give every switch a row per switch LID holding, per
//! port, the fewest hops to that switch when leaving by that port (entry 0: the least of them; 0
//! for the switch's own LIDs), and no rows for CA/router LIDs. Stock dfsssp instead sets one hop
//! count per (switch, LID of any kind) through `osm_switch_set_hops`, a heap row per entry, which
//! on large fabrics costs opensm many times the rows and memory (README, "Measurements behind
//! the design"). Rows are written in place (allocated with the process's `malloc`, as
//! `osm_switch_set_hops` does and `osm_switch_delete` expects), so that the full matrix costs no
//! more than one call per row.
//!
//! Never half-written tables: [`plan`] checks the whole routing against every switch's table
//! sizes before any LFT is touched (if it refuses, the hop counts written are reset); [`write`]
//! checks again that OpenSM's switches are still the ones planned for, and if a write still
//! fails it resets every switch's `new_lft` and hops.

use rayon::prelude::*;

use super::error::{PlanError, SwitchFault, WriteError};
use super::ffi;
use super::raw::{LockedSubnet, SwitchLimits, SwitchLookupError};
use super::subnet::Subnet;
use crate::graph::SwitchGraph;
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
pub(crate) fn plan(subnet: &Subnet, g: &SwitchGraph, routing: &Routing) -> Result<Plan, PlanError> {
    let f = &subnet.fabric;
    if g.num_switches() != subnet.osm_switches {
        return Err(PlanError::SwitchCount {
            osm: subnet.osm_switches,
            modelled: g.num_switches(),
        });
    }
    if routing.lft.num_switches() != g.num_switches() {
        return Err(PlanError::TableCount {
            tables: routing.lft.num_switches(),
            switches: g.num_switches(),
        });
    }
    let max_lid = routing.lft.max_lid;
    // Every switch checked in parallel; the first fault in switch order is reported.
    let checked: Vec<Result<PlannedSwitch, PlanError>> = (0..g.num_switches() as u32)
        .into_par_iter()
        .map(|s| {
            let node = g.switch_node()[s as usize];
            let fault = |fault| PlanError::Switch {
                name: f.node_name(node),
                fault,
            };
            let limits = subnet
                .limits
                .get(node as usize)
                .copied()
                .flatten()
                .ok_or_else(|| PlanError::NoSwitchObject {
                    name: f.node_name(node),
                })?;
            check_limits(&limits).map_err(fault)?;
            if max_lid > limits.max_lid_ho {
                return Err(fault(SwitchFault::LidBeyondTable {
                    lid: max_lid,
                    max_lid: limits.max_lid_ho,
                }));
            }
            let row = routing.lft.table(s);
            let hops = routing.hops.row(s);
            for lid in 1..=usize::from(max_lid) {
                let port = row[lid];
                if port == NO_PATH {
                    continue;
                }
                if port >= limits.num_ports {
                    return Err(fault(SwitchFault::PortBeyondSwitch {
                        lid,
                        port,
                        num_ports: limits.num_ports,
                    }));
                }
                if hops[lid] == NO_PATH {
                    return Err(fault(SwitchFault::NoHopCount { lid }));
                }
            }
            Ok(PlannedSwitch {
                switch: s,
                guid: f.nodes()[node as usize].guid,
                limits,
            })
        })
        .collect();
    let switches = checked.into_iter().collect::<Result<Vec<_>, _>>()?;

    Ok(Plan { switches })
}

/// OpenSM's own allocation invariants for a switch prepared for routing.
fn check_limits(l: &SwitchLimits) -> Result<(), SwitchFault> {
    if l.max_lid_ho == 0 {
        return Err(SwitchFault::NoLids);
    }
    if u32::from(l.lft_size) <= u32::from(l.max_lid_ho) || l.num_hops <= l.max_lid_ho {
        return Err(SwitchFault::TablesTooSmall(*l));
    }
    if l.num_ports == 0 {
        return Err(SwitchFault::NoPorts);
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

/// Why one switch's table could not be written.
#[derive(Clone, Copy, Debug)]
enum WriteFault {
    NoLft,
    /// The test hook's.
    Injected,
}

/// Writes the planned routing's LFTs into OpenSM's switches (their hop counts were written while
/// it was computed, [`super::lid_matrix`]). `fail_after` (a test hook) makes the write fail after
/// that many switches, to exercise the reset. Call it from the routing callbacks after
/// `osm_switch_prepare_path_rebuild` ran for this routing (as `ucast_mgr_route` guarantees); the
/// switches are checked against the plan first, and on any fault every switch's new tables
/// (LFT and hop counts) are reset.
pub(crate) fn write(
    api: &ffi::Api,
    osm: &mut LockedSubnet<'_>,
    plan: &Plan,
    routing: &Routing,
    fail_after: Option<usize>,
) -> Result<WriteStats, WriteError> {
    // 1. Find every switch again, one handle each (distinct switches: they are written in
    //    parallel), and check it is still what was planned: read-only.
    let mut sws = osm
        .switch_tables(api, plan.switches.iter().map(|p| p.guid))
        .map_err(|e| match e {
            SwitchLookupError::Missing(guid) => WriteError::Vanished { guid },
            SwitchLookupError::Twice(guid) => WriteError::PlannedTwice { guid },
        })?;
    let changed = plan.switches.iter().zip(&sws).find_map(|(p, sw)| {
        let now = sw.limits();
        (now != p.limits || !sw.is_prepared()).then_some(WriteError::Changed {
            guid: p.guid,
            planned: p.limits,
            now,
        })
    });
    if let Some(e) = changed {
        // (The hop counts are in already.)
        for sw in &mut sws {
            sw.reset(api, NO_PATH);
        }
        return Err(e);
    }

    // 2. Per switch, in parallel (each handle owns its switch's tables): plain stores into
    //    new_lft, which cannot fail.
    let max_lid = usize::from(routing.lft.max_lid);
    let written: Vec<Result<u64, WriteFault>> = plan
        .switches
        .par_iter()
        .zip(sws.par_iter_mut())
        .enumerate()
        .map(|(i, (p, sw))| {
            if fail_after.is_some_and(|n| i >= n) {
                return Err(WriteFault::Injected);
            }
            let mut routed = 0u64;
            let table = routing.lft.table(p.switch);
            let lft = sw.new_lft().ok_or(WriteFault::NoLft)?;
            // lft_size > max_lid_ho (checked in plan and above).
            for lid in 1..=usize::from(p.limits.max_lid_ho) {
                lft[lid] = if lid <= max_lid { table[lid] } else { NO_PATH };
                routed += u64::from(lft[lid] != NO_PATH);
            }
            Ok(routed)
        })
        .collect();

    // 3. All or nothing: if any switch failed, every switch's new tables are reset.
    if let Some((i, fault)) = written
        .iter()
        .enumerate()
        .find_map(|(i, w)| w.err().map(|f| (i, f)))
    {
        for sw in &mut sws {
            sw.reset(api, NO_PATH);
        }
        return Err(match fault {
            WriteFault::NoLft => WriteError::NoLft {
                guid: plan.switches[i].guid,
                switches: sws.len(),
            },
            WriteFault::Injected => WriteError::Injected {
                written: i,
                switches: sws.len(),
            },
        });
    }
    Ok(WriteStats {
        switches: sws.len(),
        routed_entries: written.iter().map(|w| w.unwrap_or(0)).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::opensm::subnet::SkipCounts;

    /// Two switches, one CA on the first; OpenSM's tables sized for LIDs up to 63.
    fn subnet() -> Subnet {
        let f = crate::testkit::two_switches(4, 1, &[(0, 3, 3, 0)]);
        let lim = SwitchLimits {
            max_lid_ho: 3,
            num_ports: 5,
            lft_size: 64,
            num_hops: 4,
        };
        Subnet {
            fabric: f,
            limits: vec![Some(lim), Some(lim), None],
            osm_switches: 2,
            min_data_vls: Some(8),
            qos: false,
            lmc: 0,
            dump_dir: None,
            config_file: None,
            plugin_options: None,
            routing_options: Vec::new(),
            skipped: SkipCounts::default(),
            took_over: false,
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
        let name = |s: usize| sn.fabric.node_name(g.switch_node()[s]);
        assert!(name(1).contains("sw1"), "{}", name(1));

        let mut small = subnet();
        small.limits[1] = Some(SwitchLimits {
            max_lid_ho: 2,
            num_ports: 5,
            lft_size: 64,
            num_hops: 3,
        });
        assert_eq!(
            plan(&small, &g, &r).unwrap_err(),
            PlanError::Switch {
                name: name(1),
                fault: SwitchFault::LidBeyondTable { lid: 3, max_lid: 2 }
            }
        );

        let mut few_ports = subnet();
        few_ports.limits[0] = Some(SwitchLimits {
            max_lid_ho: 3,
            num_ports: 3,
            lft_size: 64,
            num_hops: 4,
        });
        let e = plan(&few_ports, &g, &r).unwrap_err();
        assert!(
            matches!(
                &e,
                PlanError::Switch {
                    name: n,
                    fault: SwitchFault::PortBeyondSwitch {
                        port: 3,
                        num_ports: 3,
                        ..
                    }
                } if *n == name(0)
            ),
            "{e}"
        );

        let mut missing = subnet();
        missing.osm_switches = 3;
        assert_eq!(
            plan(&missing, &g, &r).unwrap_err(),
            PlanError::SwitchCount {
                osm: 3,
                modelled: 2
            }
        );

        let mut no_obj = subnet();
        no_obj.limits[0] = None;
        assert_eq!(
            plan(&no_obj, &g, &r).unwrap_err(),
            PlanError::NoSwitchObject { name: name(0) }
        );

        let mut tiny = subnet();
        tiny.limits[1] = Some(SwitchLimits {
            max_lid_ho: 3,
            num_ports: 5,
            lft_size: 3,
            num_hops: 4,
        });
        assert!(matches!(
            plan(&tiny, &g, &r).unwrap_err(),
            PlanError::Switch {
                fault: SwitchFault::TablesTooSmall(_),
                ..
            }
        ));

        let mut bad_hops = r.clone();
        bad_hops.hops.set(0, 2, NO_PATH);
        assert!(matches!(
            plan(&sn, &g, &bad_hops).unwrap_err(),
            PlanError::Switch {
                fault: SwitchFault::NoHopCount { lid: 2 },
                ..
            }
        ));
    }
}
