//! Multicast in the CLI: `route --groups FILE --mfts-out FILE` builds the groups' trees and
//! writes their MFTs as `opensm.mcfdbs`; `eval --dumps DIR` judges `DIR/opensm.mcfdbs` when
//! present (per group completeness and depth, the highest multicast channel load, and every
//! lane's unicast dependencies checked together with all groups' trees).

use std::path::Path;

use serde::Serialize;

use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::graph::SwitchGraph;
use dfsssp_rs::io::{self, mc_groups, mcfdbs};
use dfsssp_rs::multicast::{
    self, analysis::check_vl, dependency_bits, GroupMft, McConfig, McMetrics, TreeMode,
    UnicastLayers, VlCheck,
};
use dfsssp_rs::routing::Routing;

use super::table::aligned;
use super::CliResult;

/// `route --mcast-trees`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum TreesArg {
    Auto,
    Minimal,
    Updown,
}

impl TreesArg {
    pub fn config(self, balance: bool, lanes: u8) -> McConfig {
        McConfig {
            max_vls: lanes,
            mode: match self {
                TreesArg::Auto => TreeMode::Auto,
                TreesArg::Minimal => TreeMode::Minimal,
                TreesArg::Updown => TreeMode::UpDown,
            },
            balance,
            ..McConfig::default()
        }
    }
}

/// The dump file `eval --dumps` reads.
pub const MCFDBS: &str = "opensm.mcfdbs";

/// Groups parsed from the dump, waiting for the lanes' dependencies.
pub struct DumpedGroups {
    pub file: String,
    pub graph: SwitchGraph,
    pub mfts: Vec<GroupMft>,
}

/// `DIR/opensm.mcfdbs`, parsed against the dumps' fabric, if the file exists.
pub fn read_dumped(dir: &Path, f: &Fabric, g: &SwitchGraph) -> CliResult<Option<DumpedGroups>> {
    let path = dir.join(MCFDBS);
    if !path.exists() {
        return Ok(None);
    }
    let file = path.display().to_string();
    let text = io::read_text(&path).map_err(|e| e.to_string())?;
    let mfts = mcfdbs::parse_mcfdbs(&text, &file, f, g).map_err(|e| e.to_string())?;
    Ok(Some(DumpedGroups {
        file,
        graph: g.clone(),
        mfts,
    }))
}

/// What `eval` reports on multicast.
#[derive(Serialize)]
pub struct EvalMulticast {
    pub file: String,
    pub metrics: McMetrics,
    /// All groups' trees together are acyclic (whatever lane they share).
    pub multicast_alone_acyclic: bool,
    /// Per lane: the lane's unicast dependencies with every group's (the dump does not say
    /// which SL a group uses, so each lane is checked as if all groups used it).
    pub lanes: Vec<VlCheck>,
    /// Lanes whose check passes: where the groups may travel.
    pub safe_lanes: Vec<u8>,
}

/// Judges the dumped groups with the lanes' dependency bits (`DeadlockCheck::lane_edges`).
pub fn judge_dumped(d: &DumpedGroups, lane_edges: &[Vec<u64>]) -> EvalMulticast {
    let g = &d.graph;
    let mbits = dependency_bits(g, &d.mfts);
    let n = d.mfts.len() as u32;
    let lanes: Vec<VlCheck> = lane_edges
        .iter()
        .enumerate()
        .map(|(l, bits)| {
            let lane = u8::try_from(l).unwrap_or(u8::MAX);
            let layers: Vec<(u8, &[u64])> = if bits.len() >= mbits.len() {
                vec![(lane, &bits[..mbits.len()])]
            } else {
                Vec::new()
            };
            check_vl(g, lane, n, &mbits, &layers)
        })
        .collect();
    EvalMulticast {
        file: d.file.clone(),
        metrics: multicast::mft_metrics(g, &d.mfts),
        multicast_alone_acyclic: multicast::find_cycle(g, &mbits).is_none(),
        safe_lanes: lanes.iter().filter(|v| v.acyclic).map(|v| v.vl).collect(),
        lanes,
    }
}

/// Rows of groups listed by the human report (all are in the JSON).
const LISTED_GROUPS: usize = 16;

/// The human report's multicast section.
pub fn report(m: &EvalMulticast) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let x = &m.metrics;
    rows.push(("multicast".into(), format!("{}: {}", m.file, x.summary())));
    if let Some(c) = &x.max_load_channel {
        rows.push((
            "  busiest channel".into(),
            format!(
                "{} port {}: {} group(s)",
                c.switch_guid, c.port, x.max_channel_load
            ),
        ));
    }
    for gm in x.groups.iter().take(LISTED_GROUPS) {
        rows.push((
            format!("  MLID 0x{:04X}", gm.mlid),
            format!(
                "{} member switch(es), {} tree switch(es), {}{}, depth {} (centre {}), diameter {}",
                gm.member_switches,
                gm.tree_switches,
                if gm.complete {
                    "complete".to_string()
                } else {
                    format!(
                        "INCOMPLETE ({} member pairs unreached)",
                        gm.unreachable_pairs
                    )
                },
                if gm.tree {
                    ", a tree"
                } else {
                    ", NOT a tree (loop)"
                },
                gm.depth.map_or("-".to_string(), |d| d.to_string()),
                gm.centre,
                gm.diameter
            ),
        ));
    }
    if x.groups.len() > LISTED_GROUPS {
        rows.push((
            String::new(),
            format!(
                "... {} groups in all (--json lists every one)",
                x.groups.len()
            ),
        ));
    }
    rows.push((
        "  trees together".into(),
        if m.multicast_alone_acyclic {
            "acyclic".into()
        } else {
            "CREDIT LOOP among the groups' trees".into()
        },
    ));
    for v in &m.lanes {
        let text = match &v.cycle_text {
            None => format!(
                "{} unicast + {} multicast dependencies, acyclic",
                v.unicast_dependencies, v.multicast_dependencies
            ),
            Some(t) => format!(
                "{} unicast + {} multicast dependencies, CREDIT LOOP of {} channels: {t}",
                v.unicast_dependencies,
                v.multicast_dependencies,
                v.cycle.as_ref().map_or(0, Vec::len)
            ),
        };
        rows.push((format!("  lane {} + multicast", v.vl), text));
    }
    rows.push((
        "  safe lanes".into(),
        if m.safe_lanes.is_empty() {
            "none: every lane closes a credit loop with the groups' trees".into()
        } else {
            format!(
                "{:?} (groups whose SL maps there are deadlock-free)",
                m.safe_lanes
            )
        },
    ));
    aligned(&rows)
}

/// `route --groups FILE --mfts-out FILE`: trees for the groups over the routing just computed,
/// their MFTs written as opensm.mcfdbs; what was done on standard error.
pub fn route_groups(
    f: &Fabric,
    g: &SwitchGraph,
    r: &Routing,
    groups_file: &Path,
    mfts_out: &Path,
    cfg: &McConfig,
    vl: Option<u8>,
) -> CliResult<()> {
    let name = groups_file.display().to_string();
    let text = io::read_text(groups_file).map_err(|e| e.to_string())?;
    let mut groups = mc_groups::parse_groups(&text, &name, f, g).map_err(|e| e.to_string())?;
    if let Some(vl) = vl {
        groups.iter_mut().for_each(|gr| gr.vl = vl);
    }
    // The lanes' dependencies as the every-lane check sees them, and the unicast loads.
    let lanes = dfsssp_rs::verify::check_lanes(f, g, r);
    let loads = dfsssp_rs::balance::channel_loads(g, &r.lft);
    let unicast = UnicastLayers {
        loads: &loads,
        layer_edges: &lanes.lane_edges,
        // SL i travels on VL i (how dfsssp-rs programs the SL-to-VL tables with QoS).
        layer_vl: &[],
    };
    let out =
        multicast::route_groups(g, &groups, &unicast, cfg).map_err(|e| format!("{name}: {e}"))?;
    for l in &out.log {
        eprintln!("{l}");
    }
    if !out.report.check.deadlock_free {
        eprintln!(
            "dfsssp-rs: warning: multicast and unicast together are NOT deadlock-free on some VL \
             (see the lines above)"
        );
    }
    std::fs::write(mfts_out, mcfdbs::write_mcfdbs(g, &out.mfts))
        .map_err(|e| format!("{}: {e}", mfts_out.display()))
}
