//! Judging a routing: where it comes from ([`Subject`]: OpenSM's dumps or an engine run
//! in-process) and what `eval` and `compare` report about it ([`Evaluation`]).
//!
//! The metrics are the core's ([`metrics::compute_named`] with the same options the plug-in uses,
//! so the numbers agree exactly with the plug-in's logged metrics for the same routing, seed and
//! pattern count). The deadlock check builds the channel dependency graph of *every* lane,
//! whatever the others hold and even when some routes fail (unlike [`verify::verify`], which
//! stops at the first problem), and names the cycle found with [`VerifyError::describe`].

use std::path::Path;
use std::time::Duration;

use rayon::prelude::*;
use serde::Serialize;

use dfsssp_rs::dfsssp::{self, DfssspOptions, LayerReport, PathWeight, MAX_LAYERS};
use dfsssp_rs::engine::{self, EngineConfig, EngineStats};
use dfsssp_rs::fabric::{Fabric, SwitchGraph, NONE};
use dfsssp_rs::io::osm_dump;
use dfsssp_rs::metrics::{
    self, BisectionSpec, FailureKind, LidChoice, Metrics, MetricsOptions, PairTraffic,
};
use dfsssp_rs::routing::{walk, Routing};
use dfsssp_rs::verify::{find_cdg_cycle, ChannelHop, DependencySlots, VerifyError};

use super::progress::Progress;
use super::CliResult;

/// Where a routing comes from.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Source {
    /// OpenSM's dump directory.
    Dumps {
        dir: String,
        /// Whether opensm-path-sl.dump was there (else every route is in lane 0).
        path_sl: bool,
    },
    /// One of our engines, run in-process on a fabric.
    Engine {
        engine: String,
        lanes: u8,
        qos: bool,
        fabric: String,
    },
}

/// What the engine reported, for in-process routings.
#[derive(Clone, Debug, Serialize)]
pub struct EngineInfo {
    pub stats: EngineStats,
    pub layer_report: Option<LayerReport>,
    #[serde(skip)]
    pub log: Vec<String>,
}

/// A routing to judge, with the fabric it routes.
pub struct Subject {
    pub label: String,
    pub source: Source,
    pub fabric: Fabric,
    pub graph: SwitchGraph,
    pub routing: Routing,
    pub lmc: u8,
    pub engine: Option<EngineInfo>,
    pub warnings: Vec<String>,
    pub load_time: Duration,
}

/// Reads OpenSM's dump directory.
pub fn load_dumps(label: &str, dir: &Path, lmc: Option<u8>, p: &Progress) -> CliResult<Subject> {
    let (set, took) = p.stage(&format!("{label}: reading {}", dir.display()), || {
        osm_dump::load_dump_dir(dir, lmc)
    });
    let set = set.map_err(|e| e.to_string())?;
    let mut warnings = Vec::new();
    if !set.switches_missing.is_empty() {
        warnings.push(format!(
            "{} switch(es) of opensm-subnet.lst have no table in opensm-lfts.dump (taken as \
             empty): {}",
            set.switches_missing.len(),
            guid_list(&set.switches_missing)
        ));
    }
    if let Some(c) = set.path_sl_conflicts.first() {
        warnings.push(format!(
            "opensm-path-sl.dump gives {} path(s) different SLs from CAs on the same switch \
             (first kept), e.g. switch 0x{:016x} to DLID {}: SL {} at line {}, SL {} at line {}",
            set.path_sl_conflicts.len(),
            c.switch_guid,
            c.dlid,
            c.first_sl,
            c.first_line,
            c.sl,
            c.line
        ));
    }
    if set.path_sl_missing > 0 {
        warnings.push(format!(
            "opensm-path-sl.dump covers no line for {} (switch, DLID) path(s) of CA-bearing \
             switches (taken as SL 0)",
            set.path_sl_missing
        ));
    }
    Ok(Subject {
        label: label.to_string(),
        source: Source::Dumps {
            dir: dir.display().to_string(),
            path_sl: set.has_path_sl,
        },
        fabric: set.fabric,
        graph: set.graph,
        routing: set.routing,
        lmc: set.lmc,
        engine: None,
        warnings,
        load_time: took,
    })
}

fn guid_list(v: &[u64]) -> String {
    let mut s: Vec<String> = v.iter().take(8).map(|g| format!("0x{g:016x}")).collect();
    if v.len() > 8 {
        s.push("...".into());
    }
    s.join(", ")
}

/// Routes `fabric` with one of our engines (verified by the engine, as in the plug-in).
pub fn route(
    label: &str,
    fabric: Fabric,
    fabric_name: &str,
    cfg: &EngineConfig,
    p: &Progress,
) -> CliResult<Subject> {
    let (out, took) = p.stage(&format!("{label}: routing {fabric_name}"), || {
        engine::run(&fabric, cfg)
    });
    let out = out.map_err(|e| format!("{label} on {fabric_name}: {e}"))?;
    let lmc = fabric.endpoints().iter().map(|e| e.lmc).max().unwrap_or(0);
    Ok(Subject {
        label: label.to_string(),
        source: Source::Engine {
            engine: cfg.kind.name().to_string(),
            lanes: cfg.lanes,
            qos: cfg.qos,
            fabric: fabric_name.to_string(),
        },
        fabric,
        graph: out.graph,
        routing: out.routing,
        lmc,
        engine: Some(EngineInfo {
            stats: out.stats,
            layer_report: out.layer_report,
            log: out.log.into_iter().map(|(_, l)| l).collect(),
        }),
        warnings: Vec::new(),
        load_time: took,
    })
}

#[derive(Clone, Debug)]
pub struct EvalOptions {
    pub patterns: u32,
    pub seed: u64,
    pub lid_choice: LidChoice,
    pub traffic: PairTraffic,
    /// Also measure how many layers pure DFSSSP cycle breaking needs for the routing as it is.
    pub dfsssp_layers: bool,
}

/// Layers pure DFSSSP cycle breaking (seed 003) needs for a routing as it is, under two models of
/// who sends; `None` when more than [`MAX_LAYERS`].
#[derive(Clone, Debug, Serialize)]
pub struct LayersNeeded {
    /// Every switch (its port 0) and every CA port a source, every LID a destination: the model
    /// dfsssp-rs routes by.
    pub all_sources: Option<u8>,
    /// Only CA and router ports are sources: what stock dfsssp's CDG ends up counting (its walk
    /// starts behind the source port, and a switch's port 0 has no link).
    pub ca_sources: Option<u8>,
}

/// Runs cycle breaking on a copy of `r` with both source models; the routes are not changed.
pub fn layers_needed(g: &SwitchGraph, r: &Routing) -> Result<LayersNeeded, String> {
    let need = |weight| {
        let opts = DfssspOptions {
            weight,
            measure_up_to: MAX_LAYERS,
            balance: false,
            reclaim: false,
            fit_switch_dests: false,
        };
        let mut copy = r.clone();
        dfsssp::make_deadlock_free_with(g, &mut copy, MAX_LAYERS, &opts, None)
            .map(|rep| rep.dfsssp_layers_needed)
            .map_err(|e| format!("cycle breaking: {e}"))
    };
    Ok(LayersNeeded {
        all_sources: need(PathWeight::SourcePorts)?,
        ca_sources: need(PathWeight::CaPorts)?,
    })
}

/// The fabric in numbers.
#[derive(Clone, Debug, Serialize)]
pub struct FabricSummary {
    pub switches: usize,
    pub ca_nodes: usize,
    pub ca_ports: usize,
    pub lids: usize,
    pub links: usize,
    /// Directed switch-to-switch channels.
    pub channels: usize,
    pub lmc: u8,
}

/// A (switch, LID) pair that should deliver and does not, with names.
#[derive(Clone, Debug, Serialize)]
pub struct NamedFailure {
    pub kind: FailureKind,
    pub switch_guid: String,
    pub switch: String,
    pub lid: u16,
    /// The port that owns the LID.
    pub destination: String,
    /// Where the walk stopped (the looping switch for loops).
    pub at: String,
    pub port: Option<u8>,
}

/// One channel of a credit loop.
#[derive(Clone, Debug, Serialize)]
pub struct CycleHop {
    pub switch_guid: String,
    pub switch: String,
    pub port: u8,
}

#[derive(Clone, Debug, Serialize)]
pub struct LaneCheck {
    pub lane: u8,
    /// (source switch, DLID) paths in this lane, zero-hop ones included.
    pub paths: u64,
    /// Distinct edges of the lane's channel dependency graph.
    pub dependencies: u64,
    pub acyclic: bool,
    /// A cycle of the lane's CDG (a credit loop), in order, when there is one.
    pub cycle: Option<Vec<CycleHop>>,
    /// The cycle as text (`VerifyError::describe`).
    pub cycle_text: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeadlockCheck {
    /// Every lane's CDG is acyclic (and no path has a lane beyond the declared ones).
    pub deadlock_free: bool,
    /// Lanes the routing declares (path-SL dump: highest SL + 1; else 1).
    pub lanes_declared: u8,
    /// Lanes holding at least one path.
    pub lanes_used: u8,
    pub lanes: Vec<LaneCheck>,
    /// Paths whose lane is beyond the declared lanes (not checked).
    pub bad_lane_paths: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Seconds {
    /// Reading the dumps, or routing (engine runs).
    pub load_or_route: f64,
    pub all_pairs: f64,
    pub bisection: f64,
    pub deadlock_check: f64,
}

/// Everything `eval` reports about one routing.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    pub label: String,
    pub source: Source,
    pub fabric: FabricSummary,
    /// Connectivity, hops, edge forwarding index, link load and Λ (the core's metrics).
    pub metrics: Metrics,
    /// `Metrics::summary()`: the line the plug-in logs as "<engine>: metrics: ...".
    pub summary: String,
    /// The failures of `metrics.connectivity.failures`, named.
    pub failures: Vec<NamedFailure>,
    /// Forwarding loops: (switch, LID) pairs whose walk loops.
    pub forwarding_loops: u64,
    pub deadlock: DeadlockCheck,
    /// With `--dfsssp-layers`: what pure DFSSSP needs for these routes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dfsssp_layers: Option<LayersNeeded>,
    pub engine: Option<EngineInfo>,
    pub warnings: Vec<String>,
    pub seconds: Seconds,
}

impl Evaluation {
    /// Λ, when measured.
    pub fn lambda(&self) -> Option<f64> {
        self.metrics.bisection.as_ref().map(|b| b.lambda)
    }
}

/// Measures `s`.
pub fn evaluate(s: Subject, o: &EvalOptions, p: &Progress) -> CliResult<Evaluation> {
    let label = s.label.as_str();
    let (g, r, f) = (&s.graph, &s.routing, &s.fabric);
    // The same options the plug-in uses; Λ is computed apart only to show it as its own stage.
    let mopts = MetricsOptions {
        patterns: 0,
        seed: o.seed,
        lid_choice: o.lid_choice,
        traffic: o.traffic,
        ..MetricsOptions::default()
    };
    let (m, t_all) = p.stage(&format!("{label}: connectivity, hops, load"), || {
        metrics::compute_named(f, g, r, &mopts)
    });
    let mut m = m.map_err(|e| format!("{label}: {e}"))?;
    let mut t_bis = Duration::ZERO;
    if o.patterns > 0 && g.terminals().len() >= 2 {
        let spec = BisectionSpec {
            patterns: o.patterns,
            seed: o.seed,
            lid_choice: o.lid_choice,
            traffic: o.traffic,
        };
        let (b, t) = p.stage(
            &format!("{label}: Λ over {} random bisection patterns", o.patterns),
            || metrics::effective_bisection_bandwidth(g, &r.lft, &spec),
        );
        m.bisection = Some(b.map_err(|e| format!("{label}: {e}"))?);
        t_bis = t;
    }
    let (deadlock, t_dl) = p.stage(&format!("{label}: deadlock check of every lane"), || {
        check_lanes(f, g, r)
    });
    let dfsssp_layers = if o.dfsssp_layers {
        let (need, _) = p.stage(
            &format!("{label}: layers pure DFSSSP needs for these routes"),
            || layers_needed(g, r),
        );
        Some(need.map_err(|e| format!("{label}: {e}"))?)
    } else {
        None
    };
    let failures = m
        .connectivity
        .failures
        .iter()
        .map(|x| NamedFailure {
            kind: x.kind,
            switch_guid: format!("0x{:016x}", x.switch_guid.unwrap_or(0)),
            switch: switch_name(f, g, x.switch),
            lid: x.lid,
            destination: lid_owner(f, g, x.lid),
            at: switch_name(f, g, x.at),
            port: x.port,
        })
        .collect();
    let c = &m.connectivity;
    let forwarding_loops = c.switch_to_lid.loops;
    let fabric = FabricSummary {
        switches: g.num_switches(),
        ca_nodes: f.terminal_node_count(),
        ca_ports: g.terminals().len(),
        lids: g.dests().len(),
        links: f.links().len(),
        channels: g.num_channels(),
        lmc: s.lmc,
    };
    Ok(Evaluation {
        label: s.label,
        source: s.source,
        fabric,
        summary: m.summary(),
        metrics: m,
        failures,
        forwarding_loops,
        deadlock,
        dfsssp_layers,
        engine: s.engine,
        warnings: s.warnings,
        seconds: Seconds {
            load_or_route: s.load_time.as_secs_f64(),
            all_pairs: t_all.as_secs_f64(),
            bisection: t_bis.as_secs_f64(),
            deadlock_check: t_dl.as_secs_f64(),
        },
    })
}

pub fn switch_name(f: &Fabric, g: &SwitchGraph, s: u32) -> String {
    match g.switch_node().get(s as usize) {
        Some(&n) => f.node_name(n),
        None => format!("switch #{s}"),
    }
}

fn switch_guid(f: &Fabric, g: &SwitchGraph, s: u32) -> String {
    g.switch_node()
        .get(s as usize)
        .and_then(|&n| f.nodes().get(n as usize))
        .map_or_else(|| format!("#{s}"), |n| format!("0x{:016x}", n.guid))
}

/// "0x... (desc) port P" of the port owning `lid`.
fn lid_owner(f: &Fabric, g: &SwitchGraph, lid: u16) -> String {
    match g
        .dest_of_lid(lid)
        .and_then(|d| f.endpoints().get(d.endpoint as usize))
    {
        Some(e) => format!("{} port {}", f.node_name(e.node), e.port),
        None => format!("LID {lid} (no port)"),
    }
}

/// What one chunk of source switches saw.
struct LaneChunk {
    /// Per lane: bitset over dependency slots, allocated on first use.
    bits: Vec<Option<Vec<u64>>>,
    paths: Vec<u64>,
    bad_lane: u64,
}

/// Builds the CDG of every lane by walking every (source switch, DLID) path and looks for a
/// cycle in each. Every channel a packet takes creates dependencies, delivered or not, so failing
/// and looping paths count too (a forwarding loop is a credit loop).
pub fn check_lanes(f: &Fabric, g: &SwitchGraph, r: &Routing) -> DeadlockCheck {
    let nl = usize::from(r.num_layers.max(1));
    let ns = g.num_switches();
    let slots = DependencySlots::new(g);
    let words = slots.len().div_ceil(64) as usize;
    let chunks = (rayon::current_num_threads() * 4).clamp(1, ns.max(1));
    let per = ns.div_ceil(chunks).max(1);
    let parts: Vec<LaneChunk> = (0..chunks)
        .into_par_iter()
        .map(|k| {
            let mut part = LaneChunk {
                bits: vec![None; nl],
                paths: vec![0; nl],
                bad_lane: 0,
            };
            for s in (k * per).min(ns) as u32..((k + 1) * per).min(ns) as u32 {
                for d in g.dests() {
                    if d.switch == NONE || d.lid > r.lft.max_lid {
                        continue;
                    }
                    let lane = usize::from(r.layer(s, d.lid));
                    if lane >= nl {
                        part.bad_lane += 1;
                        continue;
                    }
                    part.paths[lane] += 1;
                    let bits = part.bits[lane].get_or_insert_with(|| vec![0u64; words]);
                    let mut prev = NONE;
                    walk(g, &r.lft, s, d.lid, |c| {
                        if prev != NONE {
                            let slot = slots.slot(g, prev, c);
                            bits[(slot / 64) as usize] |= 1u64 << (slot % 64);
                        }
                        prev = c;
                    });
                }
            }
            part
        })
        .collect();
    let mut bits: Vec<Option<Vec<u64>>> = vec![None; nl];
    let mut paths = vec![0u64; nl];
    let mut bad_lane = 0;
    for part in parts {
        bad_lane += part.bad_lane;
        for (a, b) in paths.iter_mut().zip(&part.paths) {
            *a += b;
        }
        for (acc, b) in bits.iter_mut().zip(part.bits) {
            match (acc.as_mut(), b) {
                (_, None) => {}
                (None, Some(b)) => *acc = Some(b),
                (Some(a), Some(b)) => a.iter_mut().zip(&b).for_each(|(x, y)| *x |= y),
            }
        }
    }
    let mut lanes = Vec::with_capacity(nl);
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for (lane, b) in bits.iter().enumerate() {
        edges.clear();
        if let Some(b) = b {
            slots.for_each_edge(g, b, |c1, c2| edges.push((c1, c2)));
        }
        let cycle = find_cdg_cycle(g.num_channels(), &edges);
        let (hops, text) = match &cycle {
            Some(chans) => {
                let hops: Vec<ChannelHop> = chans
                    .iter()
                    .map(|&c| ChannelHop {
                        channel: c,
                        switch: g.chan_tail()[c as usize],
                        port: g.chan_port()[c as usize],
                    })
                    .collect();
                let named = hops
                    .iter()
                    .map(|h| CycleHop {
                        switch_guid: switch_guid(f, g, h.switch),
                        switch: switch_name(f, g, h.switch),
                        port: h.port,
                    })
                    .collect();
                let err = VerifyError::CreditLoop {
                    layer: lane as u8,
                    cycle: hops,
                };
                (Some(named), Some(err.describe(f, g)))
            }
            None => (None, None),
        };
        lanes.push(LaneCheck {
            lane: lane as u8,
            paths: paths[lane],
            dependencies: edges.len() as u64,
            acyclic: cycle.is_none(),
            cycle: hops,
            cycle_text: text,
        });
    }
    DeadlockCheck {
        deadlock_free: bad_lane == 0 && lanes.iter().all(|l| l.acyclic),
        lanes_declared: r.num_layers,
        lanes_used: paths.iter().filter(|&&p| p > 0).count() as u8,
        lanes,
        bad_lane_paths: bad_lane,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfsssp_rs::fabric::SwitchGraph;
    use dfsssp_rs::routing::SwitchLidTable;
    use dfsssp_rs::topo;

    #[test]
    fn ring_sssp_has_a_credit_loop_that_two_lanes_remove() {
        // A 5-switch ring routed by minimal SSSP has a cycle (seed 003 Fig. 2); dfsssp-rs's
        // layers do not.
        let f = topo::by_name("torus:5,1").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let r = dfsssp_rs::sssp::route(&g);
        let c = check_lanes(&f, &g, &r);
        assert!(!c.deadlock_free);
        assert_eq!(c.lanes.len(), 1);
        let cyc = c.lanes[0].cycle.as_ref().unwrap();
        assert!(cyc.len() >= 3, "{cyc:?}");
        assert!(c.lanes[0].cycle_text.as_ref().unwrap().contains("port"));

        let out = engine::run(&f, &EngineConfig::new(engine::EngineKind::Dfsssp)).unwrap();
        let c = check_lanes(&f, &out.graph, &out.routing);
        assert!(c.deadlock_free, "{c:?}");
        assert!(c.lanes_used >= 2);
        assert_eq!(
            c.lanes.iter().map(|l| l.paths).sum::<u64>(),
            out.verified.unwrap().paths
        );
    }

    #[test]
    fn every_lane_is_checked_and_bad_lanes_counted() {
        let f = topo::by_name("torus:5,1").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = dfsssp_rs::sssp::route(&g);
        // Everything in lane 1 of 2 (lane 0 empty, lane 1 cyclic), one path beyond.
        let mut layers = SwitchLidTable::new(g.num_switches(), r.lft.max_lid, 1);
        layers.set(0, g.dests()[0].lid, 5);
        r.layers = Some(layers);
        r.num_layers = 2;
        let c = check_lanes(&f, &g, &r);
        assert!(c.lanes[0].acyclic && c.lanes[0].paths == 0);
        assert!(!c.lanes[1].acyclic);
        assert_eq!(c.bad_lane_paths, 1);
        assert_eq!(c.lanes_used, 1);
        assert!(!c.deadlock_free);
    }
}
