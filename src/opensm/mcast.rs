//! Multicast spanning trees inside OpenSM (`mcast_build_stree`), built by [`crate::multicast`]
//! over the unicast routing in place.
//!
//! OpenSM's multicast manager calls the engine once per MLID whose group changed (a join or
//! leave between sweeps), and for every MLID after each heavy sweep; before each call it clears
//! that MLID's entries on every switch, and after the last one it uploads every switch's MFT
//! blocks. The trees of all groups are computed together ([`crate::multicast::route_groups`]:
//! balanced across groups, and checked deadlock-free together with the unicast layers of each
//! VL), so one group's change may move another group's tree: such trees are rewritten in the
//! same call and uploaded with the rest. What the switches hold is therefore always one
//! computation's trees, the set the joint check judged. The computation is cached while the
//! groups and the unicast routing stay the same, so a sweep that calls once per MLID computes
//! once.
//!
//! A group's VL: with QoS on, its SL (dfsssp-rs programs SL i -> VL i for its layers, and OpenSM's
//! default tables do the same for the other SLs); with QoS off, VL 0. Members are the ports of
//! every group sharing the MLID (full and send-only: OpenSM's own trees include them all); a
//! port the unicast routing does not know (it appeared since the last routing run) is left out
//! until the next sweep routes it, and logged.

use std::collections::BTreeMap;

use super::error::McastError;
use super::log::Code;
use super::raw::{LockedSubnet, McastBox};
use super::{ffi, AdapterError, EngineCtx};
use crate::engine::{EngineKind, McastLane};
use crate::graph::SwitchGraph;
use crate::multicast::{
    route_groups, GroupMft, JoinState, McConfig, McGroup, McMember, McRouting, UnicastLayers,
};
use crate::reroute::RoutingSummary;

/// The trees in the switches, and the groups they were computed for.
#[derive(Default)]
pub(crate) struct McastState {
    groups: Vec<McGroup>,
    routing: Option<McRouting>,
    /// MLID -> the tree written for it.
    installed: BTreeMap<u16, GroupMft>,
    /// The credit-loop findings logged already (each is logged once while it lasts).
    reported: Vec<String>,
}

/// The unicast routing the trees share the fabric with.
pub(crate) struct Unicast<'a> {
    pub graph: &'a SwitchGraph,
    pub summary: &'a RoutingSummary,
    pub num_layers: u8,
    /// SL (= VL with QoS on) of layer i: i + sl_offset.
    pub sl_offset: u8,
    /// QoS on: layers (and groups) travel on the VL of their SL.
    pub qos: bool,
    pub lanes: u8,
}

/// What one call did, for the log.
#[derive(Debug, Default)]
pub(crate) struct McastOutcome {
    /// Set when the trees were computed afresh: the computation's own lines.
    pub computed: Option<Vec<String>>,
    /// VLs whose groups still close a credit loop with unicast, with what the check says (each
    /// finding once, when it first appears).
    pub cyclic: Vec<String>,
    /// Other groups whose trees moved and were rewritten.
    pub rewritten: usize,
    /// Member ports the unicast routing does not know (left out).
    pub unknown_ports: usize,
    /// Switches written for this MLID.
    pub switches: usize,
}

/// Builds the tree of `mbox`'s MLID (and rewrites other groups' trees that moved).
pub(crate) fn build_stree(
    api: &ffi::Api,
    osm: &mut LockedSubnet<'_>,
    mbox: McastBox<'_>,
    uc: &Unicast<'_>,
    state: &mut McastState,
) -> Result<McastOutcome, McastError> {
    let mlid = mbox.mlid();
    let mut out = McastOutcome::default();
    let groups = read_groups(osm, uc, &mut out.unknown_ports);
    if state.routing.is_none() || state.groups != groups {
        let layer_vl: Vec<u8> = (0..uc.num_layers)
            .map(|l| if uc.qos { l + uc.sl_offset } else { 0 })
            .collect();
        let unicast = UnicastLayers {
            loads: &uc.summary.loads,
            layer_edges: &uc.summary.layer_edges,
            layer_vl: &layer_vl,
        };
        let cfg = McConfig {
            max_vls: uc.lanes.max(1),
            ..McConfig::default()
        };
        let r = route_groups(uc.graph, &groups, &unicast, &cfg)?;
        let cyclic: Vec<String> = r
            .report
            .check
            .vls
            .iter()
            .filter(|v| v.groups > 0 && !v.acyclic)
            .map(|v| format!("VL {}: {}", v.vl, v.action))
            .collect();
        out.cyclic = cyclic
            .iter()
            .filter(|c| !state.reported.contains(c))
            .cloned()
            .collect();
        state.reported = cyclic;
        out.computed = Some(r.log.clone());
        // Trees of other groups that moved: rewrite them now, OpenSM uploads them with this one.
        for m in r.mfts.iter().filter(|m| m.mlid != mlid) {
            if state.installed.get(&m.mlid) != Some(m) {
                if let Some(old) = state.installed.get(&m.mlid) {
                    clear(api, osm, uc.graph, old);
                }
                write(api, osm, uc.graph, m).inspect_err(|_| clear(api, osm, uc.graph, m))?;
                state.installed.insert(m.mlid, m.clone());
                out.rewritten += 1;
            }
        }
        state
            .installed
            .retain(|k, _| groups.iter().any(|g| g.mlid == *k));
        state.groups = groups;
        state.routing = Some(r);
    }
    let routing = state.routing.as_ref().ok_or(McastError::NotComputed)?;
    state.installed.remove(&mlid);
    // OpenSM cleared this MLID on every switch before calling; a group with fewer than two
    // members (or none the routing knows) gets no tree, as with OpenSM's default.
    let Some(m) = routing.mfts.iter().find(|m| m.mlid == mlid) else {
        return Ok(out);
    };
    if let Err(e) = write(api, osm, uc.graph, m) {
        clear(api, osm, uc.graph, m);
        return Err(e);
    }
    out.switches = m.masks.len();
    state.installed.insert(mlid, m.clone());
    Ok(out)
}

/// Every group OpenSM has, as the multicast core sees them: members by the switch port they
/// hang on (a switch member by port 0), VL from the SL.
fn read_groups(osm: &LockedSubnet<'_>, uc: &Unicast<'_>, unknown: &mut usize) -> Vec<McGroup> {
    let mut groups = Vec::new();
    for b in osm.mcast_boxes() {
        let mut members: Vec<McMember> = Vec::new();
        let mut sl = 0u8;
        for (k, grp) in b.groups().enumerate() {
            if k == 0 {
                sl = grp.sl();
            }
            for port in grp.ports() {
                match McMember::for_lid(uc.graph, port.base_lid(), JoinState::Full) {
                    Some(m) => members.push(m),
                    None => *unknown += 1,
                }
            }
        }
        members.sort_unstable();
        members.dedup();
        if members.len() < 2 {
            continue;
        }
        groups.push(McGroup {
            mlid: b.mlid(),
            vl: if uc.qos { sl } else { 0 },
            members,
        });
    }
    groups.sort_unstable_by_key(|g| g.mlid);
    groups
}

/// Sets a tree's masks; fails (leaving what it set) when a switch or port is not OpenSM's.
fn write(
    api: &ffi::Api,
    osm: &mut LockedSubnet<'_>,
    g: &SwitchGraph,
    m: &GroupMft,
) -> Result<(), McastError> {
    for (s, mask) in &m.masks {
        let guid = g.switch_guid(*s);
        let mut t = osm
            .mcast_table(api, guid)
            .ok_or(McastError::SwitchGone { guid })?;
        for port in mask.ports() {
            t.set(api, m.mlid, port)
                .map_err(|fault| McastError::Table {
                    mlid: m.mlid,
                    guid,
                    port,
                    fault,
                })?;
        }
    }
    Ok(())
}

/// Clears a tree's MLID on the switches it touched.
fn clear(api: &ffi::Api, osm: &mut LockedSubnet<'_>, g: &SwitchGraph, m: &GroupMft) {
    for (s, _) in &m.masks {
        if let Some(mut t) = osm.mcast_table(api, g.switch_guid(*s)) {
            t.clear(api, m.mlid);
        }
    }
}

impl EngineCtx {
    /// mcast_build_stree: the tree of one MLID (see [`mcast`](self)).
    pub(super) fn mcast_build_stree(&self, mbox: McastBox<'_>) -> Result<(), AdapterError> {
        let name = self.kind.name();
        let api = ffi::api().ok_or(AdapterError::NoApi)?;
        // SAFETY: OpenSM's multicast manager calls mcast_build_stree from
        // osm_mcast_mgr_process, which holds the lock exclusively for the whole call; self.osm
        // is the running OpenSM that registered this engine; this is the call's only
        // LockedSubnet.
        let mut osm = unsafe { LockedSubnet::new(self.osm) };
        let st = self.read();
        let a = st.active.as_ref().ok_or(AdapterError::NoRouting)?;
        let summary = a.summary.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = a.mcast.lock().unwrap_or_else(|e| e.into_inner());
        let uc = Unicast {
            graph: &a.routed.graph,
            summary: &summary,
            num_layers: a.routed.routing.num_layers,
            sl_offset: a.base_sl(),
            qos: a.routed.cfg.qos,
            lanes: a.routed.cfg.lanes,
        };
        let out =
            build_stree(api, &mut osm, mbox, &uc, &mut state).map_err(AdapterError::Multicast)?;
        if let Some(lines) = &out.computed {
            for l in lines {
                self.log.verbose(&format!("{name}: {l}"));
            }
        }
        for c in &out.cyclic {
            let line = format!("{name}: multicast: {c}");
            if self.kind == EngineKind::Dfsssp {
                let advice = if a.routed.cfg.mcast_lane == McastLane::Always
                    || a.routed.cfg.lanes < 2
                {
                    ""
                } else {
                    " (DFSSSP_RS_MCAST_LANE=2, the default, leaves a lane to multicast even when \
                     the layers need every lane)"
                };
                self.log
                    .error(&format!("{}: {line}{advice}", Code::McastLoop));
            } else {
                // sssp-rs routes are not deadlock-free by design.
                self.log.verbose(&line);
            }
        }
        if out.unknown_ports > 0 {
            self.log.verbose(&format!(
                "{name}: multicast: {} member port(s) not in the unicast routing yet (new since \
                 the last sweep): left out until the next one",
                out.unknown_ports
            ));
        }
        self.log.verbose(&format!(
            "{name}: MLID 0x{:04X}: tree over {} switch(es){}",
            mbox.mlid(),
            out.switches,
            if out.rewritten > 0 {
                format!(
                    "; {} other group(s) moved and were rewritten",
                    out.rewritten
                )
            } else {
                String::new()
            }
        ));
        Ok(())
    }
}
