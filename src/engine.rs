//! The routing engines as every front uses them: the OpenSM plug-in, the offline CLI and the
//! benchmarks all call [`run`] on a [`Fabric`] and get a verified [`Routing`] plus log lines.
//!
//! - `sssp-rs`: balanced minimal SSSP routes, one layer; not deadlock-free by design.
//! - `dfsssp-rs`: the same routes made deadlock-free with virtual layers, within a lane budget;
//!   with QoS on, the one-lane search's routing or (tori, meshes) dimension-order routes instead
//!   where they measure a higher Λ ([`candidates`]).

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::balance::load_bound;
use crate::dfsssp::{self, DfssspError, DfssspOptions, LayerReport};
use crate::fabric::{Fabric, FabricError};
use crate::graph::SwitchDistances;
use crate::graph::SwitchGraph;
use crate::lid::multipath;
use crate::metrics::{self, Metrics, MetricsOptions};
use crate::reroute::{self, FullReason, RerouteOptions, RerouteStats, RoutingSummary};
use crate::routing::Routing;
use crate::sssp::{self};
use crate::traffic::{self, TrafficClasses};
use crate::verify::{self, VerifiedBefore, VerifyError, VerifyReport, VerifyScope};

mod adopt;
mod candidates;
mod full_why;
pub(crate) mod routed;

pub use adopt::{
    adopt_tables, adopt_tables_how, disagreements, AdoptError, LayersFrom, STAND_IN_GUID,
};
pub use full_why::FullWhy;
pub use routed::{Routed, RoutedRef};

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
    /// Leave the metrics out of the run (a front that computes them later, off the routing
    /// phase, with [`metrics_line`]).
    pub defer_metrics: bool,
    pub seed: u64,
    /// With LMC > 0 on some port: choose alternative paths per source and realise them on the
    /// port's LIDs with color/L ([`crate::lid::multipath`]) instead of one SSSP tree per LID.
    pub multipath: bool,
    /// dfsssp-rs with QoS: whether to leave a lane to multicast. Unicast layer `i` then travels
    /// on SL `i + 1` (and VL `i + 1`), and SL 0 / VL 0 carry multicast without any unicast
    /// dependency ([`EngineOutput::sl_offset`]).
    pub mcast_lane: McastLane,
    /// Compute and I/O nodes (OpenSM's `cn_guid_file`, `io_guid_file`): routed first and
    /// balanced per class ([`crate::traffic`]), and their Λ measured with the metrics.
    pub classes: Option<TrafficClasses>,
    /// With QoS on and lanes to spare, also run the one-lane search and keep its routing when it
    /// measures a higher Λ than the layers' minimal routes (off: always the layers).
    pub one_lane_candidate: bool,
    /// With QoS on and a torus or mesh recognised in the switch graph ([`crate::dor`]), also
    /// route it in dimension order, layered within the budget, and keep that routing when it
    /// measures a higher Λ than the others.
    pub dor_candidate: bool,
}

/// When dfsssp-rs leaves a lane (SL 0 / VL 0) to multicast ([`EngineConfig::mcast_lane`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McastLane {
    /// Every lane for unicast layers.
    #[default]
    Off = 0,
    /// When DFSSSP's layers need fewer lanes than there are: costs balancing room only.
    WhenFree = 1,
    /// Always (with at least two lanes): unicast gets one lane less, and may need the Up*/Down*
    /// escape where it would have fitted all lanes.
    Always = 2,
}

impl McastLane {
    /// The plug-in's default: multicast on SL 0 / VL 0 of its own, deadlock-free by
    /// construction. Offline (`route`, `eval`, [`EngineConfig::new`]) the default is
    /// [`McastLane::Off`], unicast alone, as engines are compared; `--mcast-lane=always` there
    /// reproduces the plug-in.
    pub const PLUGIN_DEFAULT: McastLane = McastLane::Always;
}

impl FromStr for McastLane {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "off" | "0" => Ok(McastLane::Off),
            "when-free" | "1" => Ok(McastLane::WhenFree),
            "always" | "2" => Ok(McastLane::Always),
            other => Err(format!(
                "multicast lane {other:?}: expected off (0), when-free (1) or always (2)"
            )),
        }
    }
}

impl fmt::Display for McastLane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            McastLane::Off => "off",
            McastLane::WhenFree => "when-free",
            McastLane::Always => "always",
        })
    }
}

impl EngineConfig {
    pub fn new(kind: EngineKind) -> Self {
        EngineConfig {
            kind,
            lanes: 8,
            qos: true,
            bisection_patterns: 0,
            defer_metrics: false,
            seed: 1,
            multipath: true,
            mcast_lane: McastLane::Off,
            classes: None,
            one_lane_candidate: true,
            dor_candidate: true,
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
    #[error("deadlock removal failed: {0}")]
    Deadlock(#[from] DfssspError),
    #[error("routing failed verification, nothing uploaded: {0}")]
    Verification(String),
    #[error("multipath LID assignment failed: {0}")]
    Multipath(#[from] crate::lid::LidError),
}

pub struct EngineOutput {
    pub graph: SwitchGraph,
    pub routing: Routing,
    pub log: Vec<(LogLevel, String)>,
    pub stats: EngineStats,
    /// What deadlock removal did (dfsssp-rs).
    pub layer_report: Option<LayerReport>,
    /// The independent check's report (`None` for sssp-rs routes with credit loops).
    pub verified: Option<VerifyReport>,
    /// Metrics of the routing, when `bisection_patterns > 0`.
    pub metrics: Option<Metrics>,
    /// How it was computed: from scratch, or by keeping what survived of the previous routing.
    pub mode: RouteMode,
    /// The highest channel load of the last full computation (this one's, if it was full): the
    /// reference an incremental re-route's balance is judged against.
    pub full_max_load: u64,
    /// This routing's highest channel load (as [`crate::balance::channel_loads`] counts).
    pub max_load: u64,
    /// Its channel loads and per-layer CDG edges, for the next incremental re-route.
    pub summary: RoutingSummary,
    /// The SL of layer `i` is `i + sl_offset`: 1 when a lane was left free for multicast
    /// ([`EngineConfig::mcast_lane`]; SL 0 is then multicast's), else 0.
    pub sl_offset: u8,
}

/// How a routing was computed.
#[derive(Clone, Debug, PartialEq)]
pub enum RouteMode {
    /// From scratch, and why.
    Full(FullWhy),
    /// Incrementally from the previous routing.
    Incremental(RerouteStats),
}

/// When to re-route incrementally.
#[derive(Clone, Debug)]
pub struct RerouteConfig {
    /// Keep what survives of the previous routing (otherwise always compute from scratch).
    pub incremental: bool,
    /// A full re-balance instead, when the incremental result's highest channel load exceeds
    /// the last full computation's by more than this many percent.
    pub max_load_growth_pct: u32,
    /// A full computation was asked for (by the admin), and why.
    pub force_full: Option<FullWhy>,
    /// dfsssp-rs: give every routing the layers the canonical rule derives from its tables
    /// ([`adopt_tables`]), so that a standby that reads the switches' LFTs answers the same SLs,
    /// also after incremental re-routes. The price: an SL is then a function of all routes, so
    /// a fault may move the SLs of paths it did not touch (off: those keep theirs).
    pub canonical_layers: bool,
}

impl Default for RerouteConfig {
    fn default() -> Self {
        RerouteConfig {
            incremental: true,
            max_load_growth_pct: DEFAULT_MAX_LOAD_GROWTH_PCT,
            force_full: None,
            canonical_layers: false,
        }
    }
}

/// Default of [`RerouteConfig::max_load_growth_pct`].
pub const DEFAULT_MAX_LOAD_GROWTH_PCT: u32 = 50;

/// Routes `fabric`, keeping what survives of `prior` when the change allows it (see
/// [`crate::reroute`]); otherwise, or when the balance has degraded too far, or when asked, from
/// scratch with [`run`]. Either way the result is verified before it is returned.
pub fn run_from(
    fabric: &Fabric,
    cfg: &EngineConfig,
    prior: Option<RoutedRef<'_>>,
    rc: &RerouteConfig,
) -> Result<EngineOutput, EngineError> {
    let why_full = match (prior, &rc.force_full) {
        (_, Some(why)) => why.clone(),
        (None, _) => FullWhy::NoPrevious,
        (Some(_), None) if !rc.incremental => FullWhy::IncrementalOff,
        (Some(p), None) => match incremental(fabric, cfg, p, rc) {
            Ok(mut out) => {
                if rc.canonical_layers {
                    canonicalize(&mut out, cfg);
                }
                return Ok(out);
            }
            Err(why) => why,
        },
    };
    let mut out = run(fabric, cfg)?;
    out.log.push((
        LogLevel::Info,
        format!("{}: full computation: {why_full}", cfg.kind),
    ));
    out.mode = RouteMode::Full(why_full);
    if rc.canonical_layers {
        canonicalize(&mut out, cfg);
    }
    Ok(out)
}

/// [`RerouteConfig::canonical_layers`]: `out`'s layers replaced by those the canonical rule
/// derives from its tables ([`adopt::derive_layers`], the standby's own function on the same
/// graph and tables), with their verification and summary. The routes that carry data stay as
/// they are (the others as the rule re-routes them). Where the rule refuses them (cycle
/// breaking cannot fit them into the lanes without moving a data route), or would leave
/// another lane to multicast, the computed layers stay and the log says what a standby reading
/// these tables does instead.
fn canonicalize(out: &mut EngineOutput, cfg: &EngineConfig) {
    if cfg.kind != EngineKind::Dfsssp {
        return;
    }
    let start = Instant::now();
    let derived = adopt::derive_layers(&out.graph, out.routing.lft.clone(), cfg);
    let line = match derived {
        Ok((routing, mut report, sl_offset)) if sl_offset == out.sl_offset => {
            // Routes that carry no data re-routed by deadlock removal (a faulty fat tree's
            // re-route, whose layers cycle through them): their entries change, and the loads.
            let rerouted = routing.lft.differing_entries(&out.routing.lft);
            let (mut moved, mut paths) = (0u64, 0u64);
            for s in 0..out.graph.num_switches() as u32 {
                for d in out.graph.dests() {
                    if out.routing.lft.port(s, d.lid) != crate::routing::NO_PATH {
                        paths += 1;
                        moved += u64::from(out.routing.layer(s, d.lid) != routing.layer(s, d.lid));
                    }
                }
            }
            out.routing = routing;
            out.stats.layers = out.routing.num_layers;
            let loads = match rerouted {
                0 => std::mem::take(&mut out.summary.loads),
                _ => {
                    let loads = (report.channel_loads.take()).unwrap_or_else(|| {
                        crate::balance::channel_loads(&out.graph, &out.routing.lft)
                    });
                    out.max_load = loads.iter().copied().max().unwrap_or(0);
                    loads
                }
            };
            out.summary = summary_of(loads, Some(&mut report));
            out.verified = Some(report);
            (
                LogLevel::Info,
                format!(
                    "{}: SLs canonical (the layers a standby derives from these tables): {moved} \
                     of {paths} (switch, LID) paths on another layer than computed{}; {} \
                     layer(s), derived and verified in {:.3} s",
                    cfg.kind,
                    match rerouted {
                        0 => String::new(),
                        n => format!(", {n} LFT entries {NO_DATA_REROUTED}"),
                    },
                    out.routing.num_layers,
                    start.elapsed().as_secs_f64()
                ),
            )
        }
        Ok(_) => (
            LogLevel::Error,
            format!(
                "{}: SLs not canonical: the layers derived from these tables would leave \
                 another lane to multicast; a standby that reads them answers other SLs",
                cfg.kind
            ),
        ),
        Err(e) => (
            LogLevel::Error,
            format!(
                "{}: SLs not canonical: these tables' routes {}; a standby that reads them \
                 computes from scratch",
                cfg.kind,
                match e {
                    AdoptError::NotLayerable(why) => format!("need {why}"),
                    e => format!("are refused ({e})"),
                }
            ),
        ),
    };
    out.log.push(line);
}

/// How a log line names the routes deadlock removal of read-back tables changed
/// ([`adopt::derive_layers`]).
pub const NO_DATA_REROUTED: &str = "that carry no data re-routed as deadlock removal does (to \
     switch LIDs among minimal routes, or legal Up*/Down* routes)";

/// The incremental re-route, verified and judged; `Err` says why a full computation is needed.
fn incremental(
    fabric: &Fabric,
    cfg: &EngineConfig,
    p: RoutedRef<'_>,
    rc: &RerouteConfig,
) -> Result<EngineOutput, FullWhy> {
    if p.cfg.mcast_lane != cfg.mcast_lane {
        return Err(FullWhy::McastLaneChanged);
    }
    if p.cfg.kind != cfg.kind || p.cfg.layer_budget() != cfg.layer_budget() {
        return Err(FullWhy::ConfigChanged {
            kind_before: p.cfg.kind,
            layers_before: p.cfg.layer_budget(),
            kind: cfg.kind,
            layers: cfg.layer_budget(),
        });
    }
    let start = Instant::now();
    let graph = SwitchGraph::new(fabric).map_err(|e| FullWhy::Fabric(e.to_string()))?;
    // A lane left free for multicast stays free: the layers keep below it.
    let opts = RerouteOptions {
        budget: cfg
            .layer_budget()
            .min(dfsssp::MAX_LAYERS)
            .saturating_sub(p.sl_offset)
            .max(1),
        deadlock_free: cfg.kind == EngineKind::Dfsssp,
    };
    if p.routing.num_layers <= opts.budget && p.graph.routes_like(&graph) {
        if let Some(sm) = p.summary.filter(|sm| verified_summary(&p, sm)) {
            return Ok(unchanged(fabric, cfg, &p, sm, graph, start));
        }
    }
    // After a repair the re-route is guided by what a full computation gives now: computed
    // once, also when a re-balance in place re-routes a second time.
    let fresh_routing = std::cell::OnceCell::new();
    let fresh = || {
        fresh_routing
            .get_or_init(|| run(fabric, cfg).ok().map(|out| out.routing))
            .clone()
    };
    let route = |shed: Option<&[bool]>| {
        reroute::reroute_guided(
            p.routed_fabric(),
            p.summary,
            fabric,
            &graph,
            &opts,
            &fresh,
            shed,
        )
    };
    let (mut routing, mut st, mut loads) = match route(None) {
        Err(why @ FullReason::NoLayer { .. }) => {
            relayered(&p, fabric, &graph, cfg, &fresh).ok_or(FullWhy::NotIncremental(why))?
        }
        other => other?,
    };
    let estimate = match judge_balance(&p, &graph, st.max_load, rc) {
        Ok(estimate) => estimate,
        // Before a full computation (which moves most paths and, with them, SLs), a re-balance
        // in place: the paths over the channels loaded above a full computation's estimate are
        // routed again, balanced against the paths that stay. A CA joining a fabric whose
        // faults left some channels loaded (its leaf's routes weigh one source more) needs no
        // more than that.
        Err(FullWhy::Rebalance { estimate, .. }) => {
            let hot: Vec<bool> = loads.iter().map(|&l| l > estimate).collect();
            let shed = route(Some(&hot))?;
            let estimate = judge_balance(&p, &graph, shed.1.max_load, rc)?;
            (routing, st, loads) = shed;
            estimate
        }
        Err(why) => return Err(why),
    };
    let route_time = start.elapsed();
    let verify_start = Instant::now();
    let (verified, scope_note) = verify_incremental(&p, fabric, &graph, &routing, cfg)?;
    let checked = Checked {
        verified,
        scope_note,
        route_time,
        verify_time: verify_start.elapsed(),
    };
    // The estimate for this fabric: the next change is judged from it, so that a repair after
    // several faults is scaled back from the faulty fabric, not from the first one.
    let full_max_load = if estimate > 0 {
        estimate
    } else {
        p.full_max_load
    };
    let re_routed = Rerouted {
        graph,
        routing,
        st,
        loads,
        full_max_load,
    };
    Ok(rerouted_output(fabric, cfg, &p, re_routed, checked, ""))
}

/// An incremental re-route's result, before its output is put together ([`rerouted_output`]).
struct Rerouted {
    graph: SwitchGraph,
    routing: Routing,
    st: RerouteStats,
    /// Its channel loads.
    loads: Vec<u64>,
    full_max_load: u64,
}

/// The check of an incremental re-route, and how long routing and checking took.
struct Checked {
    verified: Option<VerifyReport>,
    /// Why every LID was verified, where it was.
    scope_note: Option<&'static str>,
    route_time: Duration,
    verify_time: Duration,
}

/// The output of an incremental re-route of `p`: its statistics, its log (the re-route's line
/// with `note` after it, the check's), its metrics and the summary the next re-route starts from.
fn rerouted_output(
    fabric: &Fabric,
    cfg: &EngineConfig,
    p: &RoutedRef<'_>,
    r: Rerouted,
    checked: Checked,
    note: &str,
) -> EngineOutput {
    let Rerouted {
        graph,
        routing,
        st,
        loads,
        full_max_load,
    } = r;
    let stats = EngineStats {
        switches: graph.num_switches(),
        ca_ports: graph.terminals().len(),
        lids: graph.dests().len(),
        channels: graph.num_channels(),
        layers: routing.num_layers,
        unreachable: checked.verified.as_ref().map_or(0, |v| v.unreachable),
        route_time: checked.route_time,
        verify_time: checked.verify_time,
    };
    let mut log = vec![(
        LogLevel::Info,
        format!("{}: incremental re-route: {}{note}", cfg.kind, st.summary()),
    )];
    log_verified(
        cfg,
        checked.verified.as_ref(),
        &stats,
        "re-routed",
        &mut log,
    );
    if let Some(why) = checked.scope_note {
        log.push((
            LogLevel::Verbose,
            format!("{}: verified every LID: {why}", cfg.kind),
        ));
    }
    let metrics = metrics_logged(fabric, &graph, &routing, cfg, p.sl_offset, &mut log);
    let mut verified = checked.verified;
    let summary = summary_of(loads, verified.as_mut());
    EngineOutput {
        graph,
        routing,
        log,
        stats,
        layer_report: None,
        verified,
        metrics,
        max_load: st.max_load,
        summary,
        sl_offset: p.sl_offset,
        mode: RouteMode::Incremental(st),
        full_max_load,
    }
}

/// Whether `sm` is the summary of a verification of `p`'s routing as it is: per layer, its
/// paths and CDG edges, and a load per channel.
fn verified_summary(p: &RoutedRef<'_>, sm: &RoutingSummary) -> bool {
    let layers = usize::from(p.routing.num_layers);
    let words = crate::verify::DependencySlots::new(p.graph)
        .len()
        .div_ceil(64) as usize;
    sm.paths_per_layer.len() == layers
        && sm.layer_edges.len() == layers
        && sm.layer_edges.iter().all(|e| e.len() == words)
        && sm.loads.len() == p.graph.num_channels()
        && p.routing.lft.num_switches() == p.graph.num_switches()
        && p.routing.lft.max_lid == p.graph.max_lid()
}

/// The re-route where nothing changed that routing sees ([`SwitchGraph::routes_like`]: a restart
/// from the state file, a takeover that adopted the switches' tables on this very fabric): the
/// previous routing is kept whole, and its verification holds as it was (the same tables on the
/// same channels, LIDs and sources give the same paths, loads and dependency edges), so it is
/// taken over instead of being re-derived: `O(S * L)` to copy the tables. Before, the survey of
/// every path and the incremental check of an empty change took 0.12 s inside OpenSM on the
/// 18-ary 3-tree.
fn unchanged(
    fabric: &Fabric,
    cfg: &EngineConfig,
    p: &RoutedRef<'_>,
    sm: &RoutingSummary,
    graph: SwitchGraph,
    start: Instant,
) -> EngineOutput {
    let routing = p.routing.clone();
    let comp = graph.components();
    let mut comp_size = vec![0u64; graph.num_switches()];
    for &c in &comp {
        comp_size[c as usize] += 1;
    }
    let max_load = sm.loads.iter().copied().max().unwrap_or(0);
    let st = RerouteStats {
        paths_kept: (graph.dests().iter())
            .filter(|d| d.switch != crate::graph::NO_SWITCH)
            .map(|d| comp_size[comp[d.switch as usize] as usize])
            .sum(),
        layers: routing.num_layers,
        max_load,
        ..Default::default()
    };
    let route_time = start.elapsed();
    let verify_start = Instant::now();
    let verified = VerifyReport {
        num_layers: routing.num_layers,
        layers_used: sm.paths_per_layer.iter().filter(|&&n| n > 0).count() as u8,
        paths: sm.paths_per_layer.iter().sum(),
        paths_per_layer: sm.paths_per_layer.clone(),
        cdg_edges_per_layer: (sm.layer_edges.iter())
            .map(|e| e.iter().map(|w| u64::from(w.count_ones())).sum())
            .collect(),
        unreachable: sm.unreachable,
        layer_edges: sm.layer_edges.clone(),
        channel_loads: None,
        dests_reused: graph.dests().len() as u64,
        edges_upper_bound: sm.edges_upper_bound,
    };
    let checked = Checked {
        verified: Some(verified),
        scope_note: None,
        route_time,
        verify_time: verify_start.elapsed(),
    };
    let kept = Rerouted {
        graph,
        routing,
        st,
        loads: sm.loads.clone(),
        full_max_load: p.full_max_load,
    };
    let note = "; nothing changed that routing sees, the previous routing kept as verified";
    rerouted_output(fabric, cfg, p, kept, checked, note)
}

/// Where a re-routed path fits no layer ([`FullReason::NoLayer`]) on a fabric whose routes are
/// deadlock-free in one layer (a fat tree with failed cables: a switch above the leaves that
/// lost its cable turns down, then up), the re-route without layers and the deadlock removal of
/// its tables: every route legal under one Up*/Down* order ([`dfsssp`]'s one lane), the data
/// routes as re-routed, the others made legal, and that layer spread over the lanes, every path
/// on the layer it had (the spread is a function of switch and LID alone). A full computation
/// instead moved 98% of the CA pairs and 62% of the LFT blocks of the 18-ary 3-tree with 5% of
/// its cables missing after one cable more. `None` where deadlock removal would do more (other
/// fabrics: cycle breaking reassigns every layer; a full computation then). Cost: the layered
/// try that failed, an unlayered re-route, and the deadlock removal of all the tables (their CDG,
/// `O(S)` per destination to make routes legal, the spread's balancing): 0.86 s in all on the
/// 18-ary 3-tree with 5% of its cables missing.
fn relayered(
    p: &RoutedRef<'_>,
    fabric: &Fabric,
    graph: &SwitchGraph,
    cfg: &EngineConfig,
    fresh: &dyn Fn() -> Option<Routing>,
) -> Option<(Routing, RerouteStats, Vec<u64>)> {
    let (budget, _) = layers_for_deadlock_removal(cfg);
    let unlayered = RerouteOptions {
        budget,
        deadlock_free: false,
    };
    let (mut routing, mut st, _) = reroute::reroute_guided(
        p.routed_fabric(),
        p.summary,
        fabric,
        graph,
        &unlayered,
        fresh,
        None,
    )
    .ok()?;
    let dist = SwitchDistances::new(graph);
    let (report, sl_offset) = remove_deadlocks(graph, &mut routing, cfg, &dist, true).ok()?;
    let legal = report.one_lane.as_ref().and_then(|o| o.legal_rerouted)?;
    if sl_offset != p.sl_offset {
        return None;
    }
    let loads = crate::balance::channel_loads(graph, &routing.lft);
    st.max_load = loads.iter().copied().max().unwrap_or(0);
    st.layers = routing.num_layers;
    st.relayered = Some(legal);
    // The layer moves, counted again: the unlayered re-route put every new path in layer 0.
    let (og, or) = (p.graph, p.routing);
    let new_of_old = reroute::diff::match_switches(og, graph);
    st.layer_moves = (0..og.num_switches() as u32)
        .filter(|&o| new_of_old[o as usize] != crate::graph::NO_SWITCH)
        .map(|o| {
            let s = new_of_old[o as usize];
            let lids = graph.dests().iter().map(|d| d.lid);
            lids.filter(|&lid| {
                lid <= or.lft.max_lid
                    && or.lft.port(o, lid) != crate::routing::NO_PATH
                    && or.layer(o, lid) != routing.layer(s, lid)
            })
            .count() as u64
        })
        .sum();
    Some((routing, st, loads))
}

/// What a full computation would reach on the changed fabric (the last one's load, scaled by
/// how much the fabric's lower bound moved); `Err` when the incremental routes' highest load
/// `max_load` exceeds it by more than allowed, so that a full re-balance is due.
fn judge_balance(
    p: &RoutedRef<'_>,
    graph: &SwitchGraph,
    max_load: u64,
    rc: &RerouteConfig,
) -> Result<u64, FullWhy> {
    // A leaf that lost one of two uplinks doubles the bound.
    let (was, now) = (load_bound(p.graph), load_bound(graph));
    let estimate = if was > 0 {
        (u128::from(p.full_max_load) * u128::from(now) / u128::from(was)) as u64
    } else {
        p.full_max_load
    };
    let limit = u128::from(estimate) * (100 + u128::from(rc.max_load_growth_pct)) / 100;
    // Only a change that made the balance worse triggers a re-balance: a repaired cable leaves
    // the routes (and their load) as they were, so a flapping cable never re-routes everything.
    if estimate > 0 && max_load > p.max_load && u128::from(max_load) > limit {
        return Err(FullWhy::Rebalance {
            max_load,
            estimate,
            pct: rc.max_load_growth_pct,
            last_full: p.full_max_load,
            bound_before: was,
            bound: now,
        });
    }
    Ok(estimate)
}

/// The incremental routes verified (only the destinations whose paths changed, when the previous
/// routing was verified), and why every LID was verified instead; `Err` when they fail.
fn verify_incremental(
    p: &RoutedRef<'_>,
    fabric: &Fabric,
    graph: &SwitchGraph,
    routing: &Routing,
    cfg: &EngineConfig,
) -> Result<(Option<VerifyReport>, Option<&'static str>), FullWhy> {
    let mut scope_note = None;
    let before = p
        .summary
        .filter(|sm| !sm.paths_per_layer.is_empty())
        .map(|sm| VerifiedBefore {
            graph: p.graph,
            routing: p.routing,
            layer_edges: &sm.layer_edges,
            paths_per_layer: &sm.paths_per_layer,
            unreachable: sm.unreachable,
        });
    let verified = match verify::verify_since(before, graph, routing) {
        Ok((report, scope)) => {
            if let VerifyScope::Full(why) = scope {
                scope_note = Some(why);
            }
            Some(report)
        }
        Err(VerifyError::CreditLoop { .. }) if cfg.kind == EngineKind::Sssp => None,
        Err(e) => return Err(FullWhy::VerificationFailed(e.describe(fabric, graph))),
    };
    Ok((verified, scope_note))
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

/// The least time the candidate routings get, however fast the base routing was: fabrics routed
/// in milliseconds keep every candidate, so their routes do not depend on the machine's speed.
const CANDIDATE_BUDGET_FLOOR: Duration = Duration::from_secs(1);

/// What is left of the candidates' budget after `elapsed` since the routing began, `spent` of
/// it on candidates: the base routing's time (`elapsed - spent`, at least
/// [`CANDIDATE_BUDGET_FLOOR`]) less `spent`.
fn candidate_time_left(elapsed: Duration, spent: Duration) -> Duration {
    let base = elapsed.saturating_sub(spent);
    base.max(CANDIDATE_BUDGET_FLOOR).saturating_sub(spent)
}

/// The engine's log: (level, line).
pub(crate) type Log = Vec<(LogLevel, String)>;

/// Routes the fabric with the configured engine and verifies the result before returning it:
/// every route complete and, for dfsssp-rs, every layer's channel dependency graph acyclic,
/// checked by [`verify`] (a code path separate from the router).
pub fn run(fabric: &Fabric, cfg: &EngineConfig) -> Result<EngineOutput, EngineError> {
    let start = Instant::now();
    let graph = SwitchGraph::new(fabric)?;
    if graph.num_switches() == 0 {
        return Err(EngineError::NoSwitches);
    }
    let mut log = Vec::new();
    let mut stats = EngineStats {
        switches: graph.num_switches(),
        ca_ports: graph.terminals().len(),
        lids: graph.dests().len(),
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

    let dist = SwitchDistances::new(&graph);
    let base = route_base(fabric, &graph, &dist, cfg, &mut log)?;
    let (routing, layer_report, sl_offset) = if cfg.kind == EngineKind::Dfsssp {
        let (routing, report, sl_offset) =
            make_deadlock_free(&graph, &dist, cfg, start, base, &mut log)?;
        (routing, Some(report), sl_offset)
    } else {
        (base.routing, None, 0)
    };
    stats.route_time = start.elapsed();
    stats.layers = routing.num_layers;

    let verify_start = Instant::now();
    let verified = match verify::verify_and_load(&graph, &routing) {
        Ok(report) => Some(report),
        // sssp-rs is not deadlock-free by design (like stock sssp); complete routes suffice.
        Err(VerifyError::CreditLoop { layer, ref cycle }) if cfg.kind == EngineKind::Sssp => {
            log.push((
                LogLevel::Info,
                format!(
                    "{}: the routes have credit loops (e.g. {} channels in layer {layer}); \
                     dfsssp-rs removes them",
                    cfg.kind,
                    cycle.len()
                ),
            ));
            None
        }
        Err(e) => return Err(EngineError::Verification(e.describe(fabric, &graph))),
    };
    stats.verify_time = verify_start.elapsed();
    if let Some(v) = &verified {
        stats.unreachable = v.unreachable;
    }
    log_verified(cfg, verified.as_ref(), &stats, "routed", &mut log);

    let metrics = metrics_logged(fabric, &graph, &routing, cfg, sl_offset, &mut log);
    let mut verified = verified;
    // Counted by the verification where it passed; sssp-rs's routes with credit loops are
    // walked once more.
    let loads = verified
        .as_mut()
        .and_then(|v| v.channel_loads.take())
        .unwrap_or_else(|| crate::balance::channel_loads(&graph, &routing.lft));
    let full_max_load = loads.iter().copied().max().unwrap_or(0);
    let summary = summary_of(loads, verified.as_mut());
    Ok(EngineOutput {
        graph,
        routing,
        log,
        stats,
        layer_report,
        verified,
        metrics,
        mode: RouteMode::Full(FullWhy::Direct),
        full_max_load,
        max_load: full_max_load,
        summary,
        sl_offset,
    })
}

/// The routes before deadlock removal, and what was learnt while computing them.
struct BaseRoutes {
    routing: Routing,
    /// The SSSP routes' edge forwarding index (CA to CA), when they are plain SSSP routes.
    sssp_efi: Option<u64>,
    /// Their layer-0 dependency graph, where it was gathered while they were computed.
    layer0: Option<dfsssp::Layer0>,
}

/// The base routes: spread over the LMC's paths, routed class by class, or balanced SSSP.
fn route_base(
    fabric: &Fabric,
    graph: &SwitchGraph,
    dist: &SwitchDistances,
    cfg: &EngineConfig,
    log: &mut Log,
) -> Result<BaseRoutes, EngineError> {
    let mut sssp_efi = None;
    let mut layer0 = None;
    let routing = if cfg.multipath && fabric.endpoints().iter().any(|e| e.lmc > 0) {
        let opts = multipath::MultipathOptions::default();
        let (r, mp) = multipath::route_with_distances(graph, dist, &opts)?;
        for line in mp.log_lines() {
            log.push((LogLevel::Info, format!("{}: {line}", cfg.kind)));
        }
        if cfg.classes.as_ref().is_some_and(|c| c.any()) {
            log.push((
                LogLevel::Info,
                format!(
                    "{}: with LMC > 0 the paths are spread per port, not routed compute nodes \
                     first; the classes' Λ is still measured",
                    cfg.kind
                ),
            ));
        }
        r
    } else if let Some(classes) = cfg.classes.as_ref().filter(|c| c.any()) {
        log.push((
            LogLevel::Info,
            format!(
                "{}: compute nodes' LIDs routed first, then I/O nodes', each class balanced on \
                 its own traffic",
                cfg.kind
            ),
        ));
        traffic::route(graph, dist, classes)
    } else if cfg.kind == EngineKind::Dfsssp {
        let (r, efi, l0) = sssp_with_layer0(graph, dist, &dfsssp_options(cfg));
        sssp_efi = Some(efi);
        layer0 = l0;
        r
    } else {
        let (r, efi) = sssp::route_with_efi(graph, dist);
        sssp_efi = Some(efi);
        r
    };
    Ok(BaseRoutes {
        routing,
        sssp_efi,
        layer0,
    })
}

/// dfsssp-rs: the base routes made deadlock-free within the lane budget, replaced by a candidate
/// routing where one measures better; the routing, the layer report and the SL offset.
fn make_deadlock_free(
    graph: &SwitchGraph,
    dist: &SwitchDistances,
    cfg: &EngineConfig,
    start: Instant,
    base: BaseRoutes,
    log: &mut Log,
) -> Result<(Routing, LayerReport, u8), EngineError> {
    let BaseRoutes {
        mut routing,
        sssp_efi,
        layer0,
    } = base;
    let (budget, always) = layers_for_deadlock_removal(cfg);
    if !cfg.qos {
        log.push((
            LogLevel::Info,
            format!(
                "{}: QoS is off, so SL-to-VL tables are not programmed: routing deadlock-free \
                 within one lane; `qos TRUE` in opensm.conf enables multi-lane routing",
                cfg.kind
            ),
        ));
    }
    // Several lanes give minimal routes over layers; one lane's search may detour onto
    // idle channels and balance better (tori, faulty trees). Both are deadlock-free; keep
    // what measures better, unless the minimal routes already reach the load bound.
    let wants_one_lane = cfg.qos
        && cfg.one_lane_candidate
        && budget >= 2
        && sssp_efi.is_some_and(|efi| efi > crate::balance::leaf_bound(graph));
    let opts = dfsssp_options(cfg);
    // The candidates together may take as long again as the base routing (SSSP and its
    // deadlock removal; at least CANDIDATE_BUDGET_FLOOR): no candidate costs more than it can
    // win. `spent`: the candidates' time so far, not the base routing's, and off the budget.
    let deadline = |spent: Duration| DfssspOptions {
        deadline: Some(Instant::now() + candidate_time_left(start.elapsed(), spent)),
        ..opts.clone()
    };
    let dor_began = Instant::now();
    // Dimension-order routes on tori (and meshes), where the coordinates can be inferred, are
    // judged first, against the SSSP routes: where they measure better, the SSSP routes are not
    // made deadlock-free (on a regular torus that is most of the routing's cost), and the
    // one-lane candidate has never measured better than they do (20 regular tori, meshes and
    // hypercubes, by 3-13%; README, "Candidate routings"), so it is not computed.
    let dor = (cfg.qos && cfg.dor_candidate && budget >= 2 && sssp_efi.is_some())
        .then(|| candidates::dor_candidate(graph, dist, budget, &deadline(Duration::ZERO)))
        .flatten();
    let dor = match dor {
        Some(c @ candidates::DorCandidate::Ready(_)) => {
            let base_lambda = candidates::candidate_lambda(graph, &routing);
            match candidates::dor_before_deadlock_removal(cfg.kind, c, base_lambda, log) {
                Ok((routing, report)) => {
                    if wants_one_lane {
                        log.push((LogLevel::Verbose, dor_taken_one_lane_line(cfg)));
                    }
                    return Ok(finish_layers(cfg, routing, report, always, log));
                }
                Err(c) => Some(c),
            }
        }
        other => other,
    };
    let dor_spent = dor_began.elapsed();
    // The one-lane candidate starts from the same SSSP routes, with their CDG: copied (only
    // where dimension order was not taken above), not built again.
    let one_lane_candidate = wants_one_lane.then(|| (routing.clone(), layer0.clone()));
    let report =
        dfsssp::make_deadlock_free_fed(graph, &mut routing, layer0, budget, &opts, Some(dist))?;
    let candidate_opts = deadline(dor_spent);
    let mut layered = candidates::Layered {
        routing,
        report,
        lambda: None,
    };
    // Deadlock removal may have routed in one lane already (fat trees with failed cables; its
    // layer spread over the lanes since); and where the candidate has never won it is not
    // computed (random 20k CAs: 3.5-18 s saved).
    let one_lane_candidate = one_lane_candidate
        .filter(|_| layered.report.one_lane.is_none())
        .and_then(|one| {
            let torus = crate::dor::recognise(graph).is_some();
            match candidates::one_lane_cannot_win(&layered.report, torus) {
                Some(why) => {
                    log.push((LogLevel::Verbose, format!("{}: {why}", cfg.kind)));
                    None
                }
                None => Some(one),
            }
        });
    let setting = candidates::CandidateSetting {
        graph,
        dist,
        cfg,
        opts: &candidate_opts,
    };
    // Judged against the deadlock-free routing too, where it lost against the SSSP routes: the
    // escape may have replaced some of them.
    let dor_taken = candidates::try_dimension_order(cfg.kind, dor, &mut layered, log, graph);
    match one_lane_candidate {
        Some(_) if dor_taken => log.push((LogLevel::Verbose, dor_taken_one_lane_line(cfg))),
        Some(one) => candidates::try_one_lane(&setting, one, &mut layered, log),
        None => {}
    }
    let candidates::Layered {
        routing, report, ..
    } = layered;
    Ok(finish_layers(cfg, routing, report, always, log))
}

/// The verbose line where dimension-order routes left the one-lane candidate out.
fn dor_taken_one_lane_line(cfg: &EngineConfig) -> String {
    format!(
        "{}: candidate one-lane routing not computed: dimension-order routes were taken, which \
         it has never measured better than",
        cfg.kind
    )
}

/// The deadlock-free routing chosen, its report logged; with the SL offset of its layers.
fn finish_layers(
    cfg: &EngineConfig,
    routing: Routing,
    report: LayerReport,
    always: bool,
    log: &mut Log,
) -> (Routing, LayerReport, u8) {
    for line in report.log_lines() {
        log.push((LogLevel::Info, format!("{}: {line}", cfg.kind)));
    }
    if always {
        log.push((
            LogLevel::Info,
            format!(
                "{}: lane {} of {} left to multicast (layers on SL/VL 1..{})",
                cfg.kind,
                0,
                cfg.layer_budget(),
                cfg.layer_budget() - 1
            ),
        ));
    }
    let sl_offset = u8::from(always || report.spare_lane);
    (routing, report, sl_offset)
}

/// The layers deadlock removal may use under `cfg`, and whether a lane is kept for multicast
/// whatever the layers need (then not among them).
fn layers_for_deadlock_removal(cfg: &EngineConfig) -> (u8, bool) {
    let always = cfg.mcast_lane == McastLane::Always && cfg.qos && cfg.layer_budget() >= 2;
    (
        cfg.layer_budget().min(dfsssp::MAX_LAYERS) - u8::from(always),
        always,
    )
}

/// Deadlock removal of routes already in the tables, as `cfg`'s engine runs it on its final
/// routes (its lanes, its options; `dist` all switch distances), with the SL offset of layer 0
/// it gives. With `refuse_escape`, for callers that would refuse the Up*/Down* escape's moved
/// routes, it stops where cycle breaking needs more than the lanes
/// ([`DfssspOptions::refuse_escape`]).
fn remove_deadlocks(
    graph: &SwitchGraph,
    routing: &mut Routing,
    cfg: &EngineConfig,
    dist: &SwitchDistances,
    refuse_escape: bool,
) -> Result<(LayerReport, u8), dfsssp::DfssspError> {
    let (budget, always) = layers_for_deadlock_removal(cfg);
    let opts = DfssspOptions {
        refuse_escape,
        ..dfsssp_options(cfg)
    };
    let report = dfsssp::make_deadlock_free_with(graph, routing, budget, &opts, Some(dist))?;
    let sl_offset = u8::from(always || report.spare_lane);
    Ok((report, sl_offset))
}

/// The deadlock removal's options for `cfg`.
fn dfsssp_options(cfg: &EngineConfig) -> DfssspOptions {
    DfssspOptions {
        spare_lane: cfg.mcast_lane == McastLane::WhenFree && cfg.qos,
        ..DfssspOptions::default()
    }
}

/// Balanced SSSP routes, and their layer-0 channel dependency graph gathered on a second thread
/// while the balancing (sequential) runs on this one; `None` where the routes fed were replaced
/// afterwards ([`sssp::route_with_efi_feeding`]) or the gathering failed (then deadlock removal
/// builds it from the routes, and reports any fault).
fn sssp_with_layer0(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    opts: &DfssspOptions,
) -> (Routing, u64, Option<dfsssp::Layer0>) {
    // Rows go over in batches: a wake-up per destination would cost the balancing thread.
    const BATCH: usize = 64;
    let ns = g.num_switches();
    if !crate::par::worth_it(ns * g.dests().len()) {
        // A thread and its wake-ups cost more than the collector's work on a small fabric.
        let mut c = dfsssp::Layer0Collector::new(g, opts, Some(dist));
        let (r, efi, fed) = sssp::route_with_efi_feeding(g, dist, &mut |di, row| c.add(di, row));
        return (r, efi, c.finish().filter(|_| fed));
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(Vec<usize>, Vec<u8>)>();
        let collector = scope.spawn(move || {
            let mut c = dfsssp::Layer0Collector::new(g, opts, Some(dist));
            for (dests, rows) in rx {
                for (&di, row) in dests.iter().zip(rows.chunks(ns.max(1))) {
                    c.add(di, row);
                }
            }
            c.finish()
        });
        let (mut dests, mut rows) = (Vec::new(), Vec::new());
        let (r, efi, fed) = sssp::route_with_efi_feeding(g, dist, &mut |di, row| {
            dests.push(di);
            rows.extend_from_slice(row);
            if dests.len() == BATCH {
                // A collector gone (it panicked) only means no Layer0.
                let _ = tx.send((std::mem::take(&mut dests), std::mem::take(&mut rows)));
            }
        });
        if !dests.is_empty() {
            let _ = tx.send((dests, rows));
        }
        drop(tx);
        let layer0 = collector.join().ok().flatten();
        (r, efi, layer0.filter(|_| fed))
    })
}

/// The metrics of a routing `cfg` asked for and deferred ([`EngineConfig::defer_metrics`]):
/// computed now, as the line a run would have logged (`None` without bisection patterns).
pub fn metrics_line(
    fabric: &Fabric,
    graph: &SwitchGraph,
    routing: &Routing,
    cfg: &EngineConfig,
    sl_offset: u8,
) -> Option<(LogLevel, String)> {
    let cfg = EngineConfig {
        defer_metrics: false,
        ..cfg.clone()
    };
    let mut log = Vec::new();
    metrics_logged(fabric, graph, routing, &cfg, sl_offset, &mut log);
    log.pop()
}

/// The routing's metrics when `bisection_patterns > 0` (and not deferred), logged.
fn metrics_logged(
    fabric: &Fabric,
    graph: &SwitchGraph,
    routing: &Routing,
    cfg: &EngineConfig,
    sl_offset: u8,
    log: &mut Vec<(LogLevel, String)>,
) -> Option<Metrics> {
    if cfg.bisection_patterns > 0 && !cfg.defer_metrics {
        let opts = MetricsOptions {
            patterns: cfg.bisection_patterns,
            seed: cfg.seed,
            ..MetricsOptions::default()
        };
        // Diagnostics: a routing that verified is not refused because they could not be taken.
        match metrics::compute_named(fabric, graph, routing, &opts) {
            Ok(mut m) => {
                // The lanes the routing spans, as its dumps show them: a lane left to multicast
                // (SL 0) counts.
                m.layers += sl_offset;
                let classes = cfg
                    .classes
                    .as_ref()
                    .filter(|c| c.any())
                    .and_then(|c| {
                        let spec = metrics::BisectionSpec::new(cfg.bisection_patterns, cfg.seed);
                        traffic::class_bandwidth(graph, &routing.lft, c, &spec).ok()
                    })
                    .map(|b| b.summary())
                    .filter(|s| !s.is_empty())
                    .map(|s| format!("; {s}"))
                    .unwrap_or_default();
                log.push((
                    LogLevel::Info,
                    format!("{}: metrics: {}{classes}", cfg.kind, m.summary()),
                ));
                Some(m)
            }
            Err(e) => {
                log.push((
                    LogLevel::Error,
                    format!("{}: metrics not computed: {e}", cfg.kind),
                ));
                None
            }
        }
    } else {
        None
    }
}

/// The verification's summary, a disconnected fabric, and the times.
fn log_verified(
    cfg: &EngineConfig,
    verified: Option<&VerifyReport>,
    stats: &EngineStats,
    how: &str,
    log: &mut Vec<(LogLevel, String)>,
) {
    if let Some(v) = verified {
        log.push((
            LogLevel::Info,
            format!("{}: verified: {}", cfg.kind, v.summary()),
        ));
    }
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
            "{}: {how} in {:.3} s, verified in {:.3} s, {} layer(s)",
            cfg.kind,
            stats.route_time.as_secs_f64(),
            stats.verify_time.as_secs_f64(),
            stats.layers
        ),
    ));
}

/// What the next incremental re-route starts from: the loads, and the verification's CDG edges
/// (moved out of the report; they are not part of what it reports).
pub(crate) fn summary_of(loads: Vec<u64>, verified: Option<&mut VerifyReport>) -> RoutingSummary {
    match verified {
        Some(v) => RoutingSummary {
            loads,
            layer_edges: std::mem::take(&mut v.layer_edges),
            paths_per_layer: v.paths_per_layer.clone(),
            unreachable: v.unreachable,
            edges_upper_bound: v.edges_upper_bound,
        },
        None => RoutingSummary {
            loads,
            ..Default::default()
        },
    }
}

/// After an upload checked incrementally ([`crate::verify::verify_since`]), the complete check,
/// off the routing phase: it confirms the routing once more and makes the summary's CDG edges
/// exact again, so that edges of vanished paths do not pile up over a long run of re-routes.
/// `Ok(None)` when the summary is exact already. On failure the summary keeps only its loads
/// (the next re-route then traverses every destination and the next check is complete) and
/// the error describes the fault.
pub fn settle_summary(
    fabric: &Fabric,
    graph: &SwitchGraph,
    routing: &Routing,
    summary: &mut RoutingSummary,
) -> Result<Option<VerifyReport>, String> {
    if !summary.edges_upper_bound {
        return Ok(None);
    }
    summary.edges_upper_bound = false;
    match verify::verify(graph, routing) {
        Ok(mut rep) => {
            summary.layer_edges = std::mem::take(&mut rep.layer_edges);
            summary.paths_per_layer = rep.paths_per_layer.clone();
            summary.unreachable = rep.unreachable;
            Ok(Some(rep))
        }
        Err(e) => {
            summary.layer_edges.clear();
            summary.paths_per_layer.clear();
            Err(e.describe(fabric, graph))
        }
    }
}

#[cfg(test)]
mod tests;
