//! The routing engines as every front uses them: the OpenSM plug-in, the offline CLI and the
//! benchmarks all call [`run`] on a [`Fabric`] and get a verified [`Routing`] plus log lines.
//!
//! - `sssp-rs`: balanced minimal SSSP routes, one layer; not deadlock-free by design.
//! - `dfsssp-rs`: the same routes made deadlock-free with virtual layers, within a lane budget.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::fabric::{Fabric, FabricError, SwitchGraph, NONE};
use crate::routing::{walk, Routing, WalkEnd};
use crate::sssp;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum EngineKind {
    Sssp,
    Dfsssp,
}

impl EngineKind {
    /// The name OpenSM's `routing_engine` option and the CLI use.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sssp => "sssp-rs",
            EngineKind::Dfsssp => "dfsssp-rs",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sssp-rs" | "sssp" => Ok(EngineKind::Sssp),
            "dfsssp-rs" | "dfsssp" => Ok(EngineKind::Dfsssp),
            _ => Err(format!(
                "unknown engine '{s}' (expected sssp-rs or dfsssp-rs)"
            )),
        }
    }
}

#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub kind: EngineKind,
    /// Virtual-lane budget: the most layers a deadlock-free routing may use (>= 1).
    pub lanes: u8,
    /// Whether SL-to-VL tables follow the layers (OpenSM's QoS on). Without it only one lane is
    /// safe to rely on, whatever `lanes` says.
    pub qos: bool,
    /// Random bisection patterns for the effective bisection bandwidth logged after routing
    /// (0 skips the metric).
    pub bisection_patterns: u32,
    pub seed: u64,
}

impl EngineConfig {
    pub fn new(kind: EngineKind) -> Self {
        EngineConfig {
            kind,
            lanes: 8,
            qos: true,
            bisection_patterns: 0,
            seed: 1,
        }
    }

    /// The layers the routing may use: the lane budget, but one layer when QoS is off.
    pub fn layer_budget(&self) -> u8 {
        if self.qos {
            self.lanes.max(1)
        } else {
            1
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Error,
    Info,
    Verbose,
    Debug,
}

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("cannot model the subnet: {0}")]
    Fabric(#[from] FabricError),
    #[error("the subnet has no switches")]
    NoSwitches,
    #[error(
        "{0}: deadlock removal is not available in this build; refusing rather than pretending"
    )]
    Unsupported(EngineKind),
    #[error("routing failed verification, nothing uploaded: {0}")]
    Verification(String),
}

pub struct EngineOutput {
    pub graph: SwitchGraph,
    pub routing: Routing,
    pub log: Vec<(LogLevel, String)>,
    pub stats: EngineStats,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EngineStats {
    pub switches: usize,
    pub ca_ports: usize,
    pub lids: usize,
    pub channels: usize,
    pub layers: u8,
    /// (switch, LID) pairs without a route (disconnected parts of the fabric).
    pub unreachable: u64,
    pub route_time: Duration,
    pub verify_time: Duration,
}

/// Routes the fabric with the configured engine and verifies the result before returning it.
pub fn run(fabric: &Fabric, cfg: &EngineConfig) -> Result<EngineOutput, EngineError> {
    let start = Instant::now();
    let graph = SwitchGraph::new(fabric)?;
    if graph.num_switches() == 0 {
        return Err(EngineError::NoSwitches);
    }
    let mut log = Vec::new();
    let mut stats = EngineStats {
        switches: graph.num_switches(),
        ca_ports: graph.terminals.len(),
        lids: graph.dests.len(),
        channels: graph.num_channels(),
        ..Default::default()
    };
    log.push((
        LogLevel::Info,
        format!(
            "{}: routing {} switches, {} CA/router ports, {} LIDs, {} switch-to-switch channels",
            cfg.kind, stats.switches, stats.ca_ports, stats.lids, stats.channels
        ),
    ));

    let routing = match cfg.kind {
        EngineKind::Sssp => sssp::route(&graph),
        EngineKind::Dfsssp => return Err(EngineError::Unsupported(cfg.kind)),
    };
    stats.route_time = start.elapsed();
    stats.layers = routing.num_layers;

    let verify_start = Instant::now();
    stats.unreachable = check_complete(&graph, &routing)?;
    stats.verify_time = verify_start.elapsed();
    if stats.unreachable > 0 {
        log.push((
            LogLevel::Error,
            format!(
                "{}: the fabric is not connected: {} (switch, LID) pairs have no route",
                cfg.kind, stats.unreachable
            ),
        ));
    }
    log.push((
        LogLevel::Info,
        format!(
            "{}: routed in {:.3} s, verified in {:.3} s, {} layer(s)",
            cfg.kind,
            stats.route_time.as_secs_f64(),
            stats.verify_time.as_secs_f64(),
            stats.layers
        ),
    ));
    Ok(EngineOutput {
        graph,
        routing,
        log,
        stats,
    })
}

/// Walks every (switch, LID) route: each must reach its destination, except towards LIDs whose
/// switch the source cannot reach at all. Returns the number of such unreachable pairs.
fn check_complete(g: &SwitchGraph, r: &Routing) -> Result<u64, EngineError> {
    let mut unreachable = 0u64;
    for to in 0..g.num_switches() as u32 {
        let dist = g.bfs_distances_to(to);
        for d in g.dests.iter().filter(|d| d.switch == to) {
            for s in 0..g.num_switches() as u32 {
                match walk(g, &r.lft, s, d.lid, |_| {}) {
                    WalkEnd::Delivered { .. } => {}
                    WalkEnd::NoEntry { .. } if dist[s as usize] == u32::MAX => unreachable += 1,
                    end => {
                        return Err(EngineError::Verification(format!(
                            "route from switch {s} to LID {} ended with {end:?}",
                            d.lid
                        )))
                    }
                }
            }
        }
    }
    let orphan_lids = g.dests.iter().filter(|d| d.switch == NONE).count();
    Ok(unreachable + (orphan_lids * g.num_switches()) as u64)
}
