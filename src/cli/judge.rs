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

use serde::Serialize;

use dfsssp_rs::dfsssp::{layers_needed, LayerReport, LayersNeeded};
use dfsssp_rs::engine::{self, EngineConfig, EngineStats};
use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::graph::SwitchGraph;
use dfsssp_rs::io::osm_dump;
use dfsssp_rs::metrics::{self, BisectionSpec, LidChoice, Metrics, MetricsOptions, PairTraffic};
use dfsssp_rs::routing::{RouteFault, Routing};
use dfsssp_rs::traffic::{class_bandwidth, ClassBandwidth, TrafficClasses};
use dfsssp_rs::verify::{check_lanes, check_lanes_of, lid_owner, switch_name, DeadlockCheck};

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
    /// Per source switch, whether the lanes of its paths are known (`None`: all are). From
    /// OpenSM's dumps with a path-SL dump, the switches without CAs send on SLs nobody
    /// recorded: their own paths are left out of the deadlock check.
    pub lanes_known: Option<Vec<bool>>,
}

impl Subject {
    /// Leaves out of the deadlock check the paths that switches without CAs send (their own
    /// management traffic), whatever the dumps say about lanes: how every engine is judged
    /// alike when one of them (ours, through the path-SL dump) can only be judged that way.
    /// Paths through such switches stay in.
    pub fn ca_sent_paths_only(mut self) -> Self {
        let known = self.graph.terminal_count().iter().map(|&t| t > 0).collect();
        self.lanes_known = Some(known);
        self
    }
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
    let has_path_sl = set.has_path_sl;
    let subject = Subject {
        label: label.to_string(),
        lanes_known: None,
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
    };
    Ok(if has_path_sl {
        subject.ca_sent_paths_only()
    } else {
        subject
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
        lanes_known: None,
        source: Source::Engine {
            engine: cfg.kind.name().to_string(),
            lanes: cfg.lanes,
            qos: cfg.qos,
            fabric: fabric_name.to_string(),
        },
        fabric,
        graph: out.graph,
        // Judged by SL, as the plug-in's dumps are (a lane left to multicast shifts the layers).
        routing: out.routing.shifted_layers(out.sl_offset),
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
    /// Compute and I/O nodes, to measure their traffic patterns' Λ.
    pub classes: Option<ClassLists>,
}

/// The GUIDs of `--cn-guids` and `--io-guids`.
#[derive(Clone, Debug, Default)]
pub struct ClassLists {
    pub compute: Vec<u64>,
    pub io: Vec<u64>,
}

impl ClassLists {
    /// The classes on fabric `f`, with warnings about GUIDs that match nothing or both.
    pub fn classes(&self, f: &Fabric) -> (TrafficClasses, Vec<String>) {
        let (c, m) = TrafficClasses::from_guids(f, &self.compute, &self.io);
        let mut w = Vec::new();
        if !m.unknown.is_empty() {
            w.push(format!(
                "{} listed GUIDs name no CA port of the fabric (first 0x{:016x})",
                m.unknown.len(),
                m.unknown[0]
            ));
        }
        if !m.both.is_empty() {
            w.push(format!(
                "{} ports are in both lists; they count as compute nodes",
                m.both.len()
            ));
        }
        (c, w)
    }
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
    /// `RouteFault::kind`: "no-entry", "dead-end", "loop", "beyond-table".
    pub kind: &'static str,
    pub switch_guid: String,
    pub switch: String,
    pub lid: u16,
    /// The port that owns the LID.
    pub destination: String,
    /// Where the walk stopped (the looping switch for loops), when it stopped at a switch.
    pub at: Option<String>,
    /// The port a dead end points at.
    pub port: Option<u8>,
    /// The fault in words, switches named.
    pub what: String,
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
    /// With `--cn-guids`/`--io-guids`: Λ of compute and compute-to-I/O traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<ClassBandwidth>,
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
    let spec = BisectionSpec {
        patterns: o.patterns,
        seed: o.seed,
        lid_choice: o.lid_choice,
        traffic: o.traffic,
    };
    if o.patterns > 0 && g.terminals().len() >= 2 {
        let (b, t) = p.stage(
            &format!("{label}: Λ over {} random bisection patterns", o.patterns),
            || metrics::effective_bisection_bandwidth(g, &r.lft, &spec),
        );
        m.bisection = Some(b.map_err(|e| format!("{label}: {e}"))?);
        t_bis = t;
    }
    let (deadlock, t_dl) = p.stage(
        &format!("{label}: deadlock check of every lane"),
        || match &s.lanes_known {
            None => check_lanes(f, g, r),
            Some(known) => check_lanes_of(f, g, r, |sw| known[sw as usize]),
        },
    );
    let mut warnings = s.warnings;
    let classes = match &o.classes {
        Some(lists) if o.patterns > 0 => {
            let (classes, w) = lists.classes(f);
            warnings.extend(w);
            let (b, t) = p.stage(
                &format!("{label}: Λ of compute and compute-to-I/O traffic"),
                || class_bandwidth(g, &r.lft, &classes, &spec),
            );
            t_bis += t;
            Some(b.map_err(|e| format!("{label}: {e}"))?)
        }
        _ => None,
    };
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
            kind: x.fault.kind(),
            switch_guid: format!("0x{:016x}", x.switch_guid.unwrap_or(0)),
            switch: switch_name(f, g, x.switch),
            lid: x.lid,
            destination: lid_owner(f, g, x.lid),
            at: x.fault.at().map(|s| switch_name(f, g, s)),
            port: match x.fault {
                RouteFault::DeadEnd { port, .. } => Some(port),
                _ => None,
            },
            what: x.fault.describe(|s| switch_name(f, g, s)),
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
        classes,
        engine: s.engine,
        warnings,
        seconds: Seconds {
            load_or_route: s.load_time.as_secs_f64(),
            all_pairs: t_all.as_secs_f64(),
            bisection: t_bis.as_secs_f64(),
            deadlock_check: t_dl.as_secs_f64(),
        },
    })
}
