//! Deadlock removal with virtual layers (DFSSSP, Domke, Hoefler & Nagel), within a lane
//! budget that is never exceeded.
//!
//! Input: a routing whose forwarding tables form one in-tree per destination LID (balanced SSSP).
//! A *path* is (source switch, destination LID); its layer is stored per (switch, DLID) in
//! [`Routing::layers`]. Every switch is a source and every LID (switch LIDs included) a destination.
//!
//! 1. **CDG of layer 0** ([`cdg`]): per destination, subtree sums over its tree give the number of
//!    paths behind every dependency edge: O(S) per destination, in parallel, flat `u32` counts.
//!    A path counts as many source ports as it stands for (the switch's CAs and the switch
//!    itself, [`PathWeight::SourcePorts`]), as stock OpenSM counts (source, destination) pairs.
//! 2. **Offline cycle breaking** (Algorithm 2, [`breaking`]): per layer one resumable DFS; each
//!    cycle's weakest edge (fewest paths) is cut by moving its paths to the next layer, up to the
//!    budget (or further, [`DfssspOptions::measure_up_to`], to report what pure DFSSSP needs).
//!    Where the CA routes are acyclic and re-routing switch LIDs ([`switch_dests`]) left some
//!    closing cycles, those start in layer 1 and cycles are broken among them alone
//!    ([`DfssspOptions::lift_unfitted`]); all start in layer 0 again if that overflows the budget.
//!    On large fabrics whose layer 0 has cycles on most of its edges (random ones), the search
//!    marks the weakest edges and one parallel pass over all trees per layer moves their paths
//!    ([`Cutting::Batched`], chosen by a probe of layer 0); the escape is then prepared on the
//!    other core while cycle breaking runs.
//! 3. **Escape** when that exceeds the budget ([`escape`]): the last layer (layer 0 for a budget of
//!    one) is reserved for balanced Up*/Down* routes ([`crate::updown`]). Destinations with a path
//!    beyond the other layers first get Up*/Down* trees, then are *settled* one by one on hybrid
//!    trees: minimal SSSP hops wherever their paths fit acyclically in some layer (incremental
//!    cycle checks), Up*/Down* hops from the switches whose paths do not.
//!    With a budget of one layer (QoS off) steps 2 and 3 give way to [`onelane`]: destinations keep
//!    their SSSP routes where all fit the layer, else get balanced detours from a search that only
//!    takes dependencies keeping the layer acyclic (Nue-like), spanning-tree routes as the fallback;
//!    the layer is first seeded with a heavy acyclic part of the SSSP routes' dependencies; on
//!    tree-like fabrics (most destinations' SSSP routes legal Up*/Down* routes: fat trees with
//!    CAs above the leaves) turns far back in the layer's order are refused unchecked.
//! 4. **Balancing** (as stock dfsssp): layers left empty are shared out among the used ones, the
//!    fullest first; a used layer's paths are spread over its share (any subset of an acyclic
//!    layer is acyclic).
//!
//! Complexity (S switches, C channels, E = Σ_c outdeg(head c) ≤ C·radix possible dependency edges,
//! D LIDs, L layers): CDG build O(D·S); cycle breaking O(L·(C+E)) for the searches plus, in
//! batches, O(D·S) per layer (8 more bytes per pair for the batched passes, the 2-byte positions
//! and the per-edge lists not built), and exactly, per cut edge, the destinations behind it
//! (from per-edge lists, O(D·S) to build once cuts are many; before that O(max_lid) per cut) and
//! O(S) per such destination; escape
//! O(S·(S+C)) for distances and the root, O(D·(S+C)) for the Up*/Down* trees, and for settling
//! O(S·depth·L) per escape destination and round plus the incremental cycle checks (bounded by the
//! part of a layer's topological order they reorder). Memory: L·E counters of 4 bytes; D·S bytes
//! for a destination-major copy of the LFT; a pre-order tree index of 10·D'·S bytes (8-byte nodes
//! holding each path's layer and first ports, and 2-byte positions, dropped once the per-edge
//! destination lists exist), D' the destinations whose paths can move (all of them, or, above an
//! acyclic layer 0, those lifted from it: on fat trees the few switch LIDs whose routes close
//! cycles); the per-edge destination lists, 4·D'·S bytes and as much again while they are built,
//! when cycle breaking cuts many edges; the S·max_lid layer table.

pub mod breaking;
pub mod cdg;
pub(crate) mod dyntopo;
mod escape;
mod onelane;
mod pace;
mod prepared;
mod report;
mod switch_dests;

use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;

use crate::graph::{SwitchDistances, SwitchGraph, NO_SWITCH};
use crate::routing::{RouteFault, Routing, SwitchLidTable, NO_PATH};

use breaking::Breaker;
use cdg::TreeIndex;
pub(crate) use pace::{past_deadline, Pace};
pub use prepared::{Layer0, Layer0Collector};
use prepared::{Prepared, UnfittedDests, WorkingRoutes};
pub use report::{LayerReport, OneLaneReport};

/// InfiniBand has at most 15 data virtual lanes.
pub const MAX_LAYERS: u8 = 15;

/// How much a path weighs when the weakest edge of a cycle is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PathWeight {
    /// The source ports a (switch, DLID) path stands for: the switch's CAs and routers plus the
    /// switch's own port 0 (what stock dfsssp counts, per source LID).
    SourcePorts,
    /// One per (switch, DLID) path.
    Unit,
    /// Only CA and router ports are sources (a switch's own port 0 sends nothing): the model stock
    /// OpenSM's dfsssp ends up with, since its CDG walk starts at the remote end of the source
    /// port and a switch's port 0 has none. Used to compare with stock, never to route.
    CaPorts,
}

#[derive(Clone, Debug)]
pub struct DfssspOptions {
    pub weight: PathWeight,
    /// Keep breaking cycles past the budget, up to this many layers (at most 15), to report how
    /// many pure DFSSSP would need; costs one more CDG search per extra layer and changes nothing
    /// else. Values below the budget (the default, 0) stop at the budget: "more than the budget".
    pub measure_up_to: u8,
    /// Spread paths over the layers left unused (Domke et al.'s balancing).
    pub balance: bool,
    /// After an escape, give destinations their minimal routes back wherever they fit.
    pub reclaim: bool,
    /// Stop with [`DfssspError::EscapeRefused`] where cycle breaking needs more than the budget,
    /// instead of running the Up*/Down* escape: for callers that take the routes as they are and
    /// would refuse the escape's moved routes anyway (a standby deriving the layers of the
    /// tables it read back), which then spend no time on it (on random:320 with 2,560 CAs the
    /// escape is 0.17 s of 0.44 s).
    pub refuse_escape: bool,
    /// Re-route switch-LID destinations among their minimal routes so they fit layer 0 with the
    /// CA routes ([`switch_dests`]); off to judge a given routing as it is.
    pub fit_switch_dests: bool,
    /// Start the paths of the switch LIDs that re-routing left with a cycle in layer 1, above
    /// the rest of layer 0, and break cycles among them alone (every path starts in layer 0
    /// again when they do not fit the budget that way); off: every path starts in layer 0, as
    /// Domke et al. write it.
    pub lift_unfitted: bool,
    /// Leave one lane of the budget free (for multicast) when cycle breaking needs fewer layers
    /// than the budget: balancing then spreads over one layer less ([`LayerReport::spare_lane`]).
    pub spare_lane: bool,
    /// With a budget of one layer, route what does not fit by a balanced search that keeps the
    /// layer acyclic ([`onelane`]) instead of cycle breaking and the Up*/Down* escape.
    pub one_lane: bool,
    /// How cycle breaking cuts: each cut's paths moved before the search goes on, or cuts
    /// marked in batches and their paths moved together ([`Cutting`]).
    pub cutting: Cutting,
    /// When cutting in batches, prepare the escape on the other core while cycle breaking runs
    /// (for every destination overflowing; restricted to those that do where fewer overflow,
    /// unused where none does). Where all overflow it changes nothing but the time (off to check
    /// exactly that); where fewer do, their Up*/Down* trees are balanced without the SSSP routes
    /// of the others.
    pub prepare_escape_ahead: bool,
    /// Stop with [`DfssspError::Stopped`] once past this instant (checked between stages and
    /// per destination of the one-lane search): a candidate routing may cost no more than it
    /// can win. `None`: no limit.
    pub deadline: Option<Instant>,
}

/// How cycle breaking cuts ([`breaking`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Cutting {
    /// Domke et al.'s Algorithm 2 as written: the weakest edge of each cycle is chosen with
    /// every earlier cut's paths already moved.
    Exact,
    /// Cuts are marked as the search finds them and their paths moved in one pass over all
    /// destinations per layer: on large random fabrics several times faster (20k CAs: cycle
    /// breaking 8.2 s -> 2.7 s), and there within 1% of the exact Λ; on small ones it may cut
    /// worse (the 6x6x6 torus: Λ -4%), where the exact search costs milliseconds anyway, and
    /// where cuts are few (fat trees) streaming every tree costs more than the cuts.
    Batched,
    /// From [`BATCHED_CUTTING_MIN_PATHS`] (switch, destination) pairs on, a probe search of
    /// layer 0 decides (batches where it marks many edges for the edges in the layer:
    /// large random fabrics); else exact.
    Auto,
}

/// (switch, destination) pairs from which [`Cutting::Auto`] considers batches: the exact search
/// reads every destination behind a cut at a scattered place (a cache miss each), which on the
/// random 10k-CA fabric (7 M pairs) costs seconds, while the batched passes stream the trees.
/// Random fabrics gain from 0.5 M pairs on (200 switches, 3,200 CAs: routed in 0.16-0.21 s ->
/// 0.14-0.15 s; 320 switches: 0.77-0.81 s -> 0.67-0.70 s; Λ the same); below, the probe's own
/// search costs more than the batches save. Below [`BATCHED_CUTTING_LARGE_PATHS`] the probe asks
/// for more marks ([`breaking::BATCH_MARKS_PER_100_EDGES_MID`]).
pub const BATCHED_CUTTING_MIN_PATHS: usize = 1 << 19;

/// (switch, destination) pairs from which the probe chooses batches at its first bound (45
/// marks per 100 edges; random 10k CAs and more, and tori of that size with cables missing).
pub const BATCHED_CUTTING_LARGE_PATHS: usize = 1 << 22;

impl Default for DfssspOptions {
    fn default() -> Self {
        DfssspOptions {
            weight: PathWeight::SourcePorts,
            measure_up_to: 0,
            balance: true,
            reclaim: true,
            refuse_escape: false,
            fit_switch_dests: true,
            lift_unfitted: true,
            spare_lane: false,
            one_lane: true,
            cutting: Cutting::Auto,
            prepare_escape_ahead: true,
            deadline: None,
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum DfssspError {
    #[error("layer budget {0} is outside 1..={MAX_LAYERS}")]
    Budget(u8),
    #[error(
        "forwarding tables cover {tables} switches and LIDs up to {max_lid}, but the fabric has \
         {switches} switches and LIDs up to {fabric_max_lid}"
    )]
    Shape {
        tables: usize,
        max_lid: u16,
        switches: usize,
        fabric_max_lid: u16,
    },
    /// A path of the routing does not deliver; `switch` names the switch it stopped at.
    #[error("LID {lid}: {}", fault.describe(|_| switch.clone()))]
    Route {
        lid: u16,
        fault: RouteFault,
        switch: String,
    },
    #[error("internal error in deadlock removal: {0}")]
    Internal(String),
    /// [`DfssspOptions::refuse_escape`]: cycle breaking needs more layers than the budget.
    #[error("other routes (more than {budget} layer(s) by cycle breaking)")]
    EscapeRefused { budget: u8 },
    /// Past [`DfssspOptions::deadline`], or projected past it by its pace ([`Pace`]): stopped
    /// after this many seconds, nothing kept.
    #[error(
        "stopped at its time budget after {:.3} s{}",
        after.as_secs_f64(),
        projected.map_or_else(String::new, |p| format!(
            " (at its pace it would have needed {:.1} s)",
            p.as_secs_f64()
        ))
    )]
    Stopped {
        after: std::time::Duration,
        projected: Option<std::time::Duration>,
    },
}

pub(crate) fn fault_error(g: &SwitchGraph, lid: u16, fault: RouteFault) -> DfssspError {
    DfssspError::Route {
        lid,
        fault,
        switch: fault.at().map_or_else(String::new, |s| g.switch_label(s)),
    }
}

/// Makes `routing` deadlock-free within `budget` layers with default options; see
/// [`make_deadlock_free_with`].
pub fn make_deadlock_free(
    g: &SwitchGraph,
    routing: &mut Routing,
    budget: u8,
) -> Result<LayerReport, DfssspError> {
    make_deadlock_free_with(g, routing, budget, &DfssspOptions::default(), None)
}

/// Assigns every path of `routing` a layer below `budget` so that every layer's CDG is acyclic,
/// re-routing destinations with Up*/Down* where the budget is too small (their LFT and hop entries
/// change). Sets `routing.layers` and `routing.num_layers`. `dist` (all switch distances, as SSSP
/// computes them) is computed here when an escape needs it and none is given.
///
/// Errors only on invalid input: a budget outside 1..=15, tables of the wrong shape, or routes that
/// are not trees (missing where the LID is reachable, dangling, or looping). Disconnected fabrics
/// are fine: each component is handled on its own.
pub fn make_deadlock_free_with(
    g: &SwitchGraph,
    routing: &mut Routing,
    budget: u8,
    opts: &DfssspOptions,
    dist: Option<&SwitchDistances>,
) -> Result<LayerReport, DfssspError> {
    make_deadlock_free_fed(g, routing, None, budget, opts, dist)
}

/// [`make_deadlock_free_with`], starting from the routes' layer-0 CDG where it was gathered
/// while they were computed (`layer0`, from a [`Layer0Collector`] fed exactly these routes).
pub fn make_deadlock_free_fed(
    g: &SwitchGraph,
    routing: &mut Routing,
    layer0: Option<Layer0>,
    budget: u8,
    opts: &DfssspOptions,
    dist: Option<&SwitchDistances>,
) -> Result<LayerReport, DfssspError> {
    let t0 = Instant::now();
    check_input(g, routing, budget)?;
    let mut report = LayerReport {
        budget,
        ..Default::default()
    };
    let prep = Prepared::new(g, opts, dist);
    let mut routes = match layer0 {
        Some(layer0) => WorkingRoutes::from_layer0(routing, layer0),
        None => WorkingRoutes::new(&prep, routing)?,
    };
    let fitted = if opts.fit_switch_dests && !routes.acyclic(&prep) {
        fit_switch_dests(&prep, &mut routes, budget, opts, &mut report)?
    } else {
        SwitchDestsFit::NotTried
    };
    // Only re-routing switch LIDs reads the CA routes' CDG.
    routes.ca_counts = None;
    report.seconds_cdg = t0.elapsed().as_secs_f64();
    past_deadline(opts.deadline, t0)?;

    if opts.one_lane && !routes.acyclic(&prep) {
        // With one lane always; with more where the CA routes close cycles that only routes
        // carrying no data need (a fat tree with failed cables: from the switches above the
        // leaves some CA LIDs are reached only down, then up). There one layer keeps every
        // data route as SSSP chose it, as the layers would, without cycle breaking through
        // a CDG that cycles everywhere (ktree:18,3 with 5% of its cables missing: more than 8
        // layers, 1.5 s) and leaves the other lanes free.
        let oriented = match (budget, &fitted) {
            (1, _) => Some(onelane::orientation(&prep, &routes.counts0, &routes.cols)),
            (_, SwitchDestsFit::CaRoutesCyclic) => {
                Some(onelane::orientation(&prep, &routes.counts0, &routes.cols))
                    .filter(|o| o.data_legal)
            }
            _ => None,
        };
        if let Some(oriented) = oriented {
            onelane::route(&prep, routes, oriented, opts.deadline, &mut report)?;
            spread_one_layer(g, &prep.weight, routing, budget, opts, &mut report);
            report.seconds_total = t0.elapsed().as_secs_f64();
            return Ok(report);
        }
    }

    let t1 = Instant::now();
    let broken = break_cycles(&prep, &mut routes, budget, opts, &mut report);
    report.dfsssp_layers_needed = broken.needed;
    if let SwitchDestsFit::UpDown(ud) = fitted {
        report.record_updown_fit(ud, budget);
    }
    report.cuts = broken.cuts;
    report.moved_paths = broken.moved;
    report.seconds_breaking = t1.elapsed().as_secs_f64();
    past_deadline(opts.deadline, t0)?;
    if opts.refuse_escape && broken.needed.is_none_or(|n| n > budget) {
        return Err(DfssspError::EscapeRefused { budget });
    }

    let t2 = Instant::now();
    let needed = broken.needed;
    let layers = assign_layers(&prep, &mut routes, broken, budget, &mut report)?;
    report.seconds_escape = t2.elapsed().as_secs_f64();

    finish(
        &prep,
        routes.routing,
        layers,
        needed,
        budget,
        opts,
        &mut report,
    );
    report.seconds_total = t0.elapsed().as_secs_f64();
    Ok(report)
}

/// Refuses a budget outside 1..=15 and tables of the wrong shape.
fn check_input(g: &SwitchGraph, routing: &Routing, budget: u8) -> Result<(), DfssspError> {
    if budget == 0 || budget > MAX_LAYERS {
        return Err(DfssspError::Budget(budget));
    }
    let ns = g.num_switches();
    // More switches than LIDs cannot happen for a valid fabric: every switch owns one of the
    // 49151 unicast LIDs.
    if routing.lft.num_switches() != ns
        || routing.lft.max_lid < g.max_lid()
        || routing.hops.row(0).len() != routing.lft.stride() && ns > 0
        || ns > usize::from(u16::MAX)
    {
        return Err(DfssspError::Shape {
            tables: routing.lft.num_switches(),
            max_lid: routing.lft.max_lid,
            switches: ns,
            fabric_max_lid: g.max_lid(),
        });
    }
    Ok(())
}

/// Stage 1, when layer 0 has a cycle: switch-LID routes re-chosen to fit layer 0 with the CA
/// routes ([`switch_dests::fit`]). With one lane and a cycle left, cycle breaking cannot help and
/// the escape would re-route the switch LIDs on Up*/Down* anyway; doing it here directly (when
/// every CA route is legal under some orientation, as on fat trees) is much cheaper and leaves
/// every CA route as it is: what it did is returned.
fn fit_switch_dests(
    prep: &Prepared,
    routes: &mut WorkingRoutes,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) -> Result<SwitchDestsFit, DfssspError> {
    // The CA routes' CDG, where it came with the routes: neither stage changes a CA route.
    let ca_counts = routes.ca_counts.take();
    let Some(fit) = switch_dests::fit(prep, routes, ca_counts.as_deref())? else {
        return Ok(SwitchDestsFit::CaRoutesCyclic);
    };
    report.switch_dests_fitted = fit.fitted;
    report.switch_dests_changed = fit.changed;
    report.switch_dests_unfitted = fit.unfitted;
    if budget == 1 && opts.measure_up_to <= budget && fit.unfitted > 0 && !routes.acyclic(prep) {
        if let Some(ud) = switch_dests::fit_updown(prep, routes, ca_counts.as_deref())? {
            return Ok(SwitchDestsFit::UpDown(ud));
        }
    }
    Ok(SwitchDestsFit::Fitted)
}

/// What re-routing the switch LIDs came to ([`fit_switch_dests`]).
enum SwitchDestsFit {
    /// Layer 0 was acyclic, or re-routing is off.
    NotTried,
    /// The CA routes alone close cycles (or there are no switch LIDs): nothing changed.
    CaRoutesCyclic,
    /// Switch LIDs re-routed among minimal routes where they fit.
    Fitted,
    /// With one lane, every route made a legal Up*/Down* route.
    UpDown(switch_dests::SwitchDestUpDown),
}

/// What cycle breaking leaves.
struct CycleBreaking {
    /// Layers pure DFSSSP needs, if no more than were measured.
    needed: Option<u8>,
    /// Every layer's CDG counts.
    counts: Vec<Vec<u32>>,
    cuts: u64,
    moved: u64,
    /// The path layers destination-major and the destinations with a moved path; `None` when
    /// layer 0 was acyclic already.
    dest_layers: Option<(Vec<u8>, Vec<u32>)>,
    /// The escape, prepared while cycle breaking ran.
    escape_ahead: Option<escape::Prologue>,
}

/// Stage 3: offline cycle breaking over as many layers as are measured ([`breaking`]). With one
/// lane, one round still ranks destinations for the escape. Path layers are kept
/// destination-major (one destination's paths contiguous) while cycle breaking and the escape
/// work on them. Cycle breaking takes the layer-0 counts over (they become its layer 0): no later
/// stage reads `routes.counts0`.
///
/// Where re-routing switch LIDs left some with a cycle in layer 0 ([`WorkingRoutes::unfitted`]),
/// their paths start in layer 1, above the rest of layer 0 (acyclic without them): cycles are
/// searched among their paths alone and no CA route leaves layer 0 for them (18-ary 3-tree:
/// 3 layers instead of 5, a tenth of the cuts). If they do not fit the budget that way, cycle
/// breaking starts again with every path in layer 0, as without them.
fn break_cycles(
    prep: &Prepared,
    routes: &mut WorkingRoutes,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) -> CycleBreaking {
    let g = prep.g;
    let cap = opts.measure_up_to.clamp(budget.max(2), MAX_LAYERS);
    report.measured_up_to = cap;
    let unfitted = routes
        .unfitted
        .take()
        .filter(|_| budget >= 2 && opts.lift_unfitted);
    if routes.acyclic(prep) {
        // Acyclic already (fat trees without switch-to-switch valleys): one layer, nothing to do.
        return CycleBreaking {
            needed: Some(1),
            counts: vec![std::mem::take(&mut routes.counts0)],
            cuts: 0,
            moved: 0,
            dest_layers: None,
            escape_ahead: None,
        };
    }
    let counts0 = std::mem::take(&mut routes.counts0);
    let Some(unfitted) = unfitted else {
        let start = BreakingStart {
            trees: TreeIndex::build(g, &routes.cols),
            counts0,
            lift: None,
        };
        return breaking_run(prep, routes, start, cap, budget, opts, report);
    };
    // Above an acyclic layer 0 only the lifted paths ever move: only their trees are needed.
    let mut is_lifted = vec![false; g.dests().len()];
    for &di in &unfitted.dests {
        is_lifted[di] = true;
    }
    let start = BreakingStart {
        trees: TreeIndex::build_for(g, &routes.cols, |di| is_lifted[di]),
        counts0,
        lift: Some(unfitted),
    };
    let lifted = breaking_run(prep, routes, start, cap, budget, opts, report);
    if lifted.needed.is_some_and(|n| n <= budget) {
        return lifted;
    }
    // Moving paths between layers keeps every edge's total: the sum is layer 0 as it was.
    let counts0 = edge_totals(&lifted.counts);
    report.escape_prepared_ahead = false;
    let start = BreakingStart {
        trees: TreeIndex::build(g, &routes.cols),
        counts0,
        lift: None,
    };
    breaking_run(prep, routes, start, cap, budget, opts, report)
}

/// Every dependency edge's paths over all `layers`.
fn edge_totals(layers: &[Vec<u32>]) -> Vec<u32> {
    let mut total = layers.first().cloned().unwrap_or_default();
    for layer in layers.iter().skip(1) {
        for (t, &c) in total.iter_mut().zip(layer) {
            *t += c;
        }
    }
    total
}

/// What a run of cycle breaking starts from: the routes' `trees`, `counts0` (the layer-0 CDG of
/// every route), and the destinations whose paths start in layer 1 ([`Breaker::lift`]), if any.
struct BreakingStart {
    trees: TreeIndex,
    counts0: Vec<u32>,
    lift: Option<UnfittedDests>,
}

/// One run of cycle breaking from `start`, measuring layers up to `cap`.
fn breaking_run(
    prep: &Prepared,
    routes: &WorkingRoutes,
    start: BreakingStart,
    cap: u8,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) -> CycleBreaking {
    let g = prep.g;
    let BreakingStart {
        trees,
        counts0,
        lift,
    } = start;
    let mut br = Breaker::new(
        g,
        &prep.ei,
        &routes.routing.lft,
        &routes.cols,
        &prep.weight,
        counts0,
        trees,
    );
    if let Some(unfitted) = lift {
        br.lift(&unfitted.dests, unfitted.counts);
        debug_assert!(
            prep.acyclic(&br.counts[0]),
            "layer 0 without the unfitted routes"
        );
    }
    let first = br.first_layer();
    let pairs = g.num_switches() * g.dests().len();
    br.cutting = match opts.cutting {
        Cutting::Auto if pairs < BATCHED_CUTTING_MIN_PATHS => Cutting::Exact,
        c => c,
    };
    if pairs < BATCHED_CUTTING_LARGE_PATHS {
        br.batch_marks_per_100 = breaking::BATCH_MARKS_PER_100_EDGES_MID;
    }
    if br.cutting == Cutting::Auto {
        br.probe();
    }
    let batched = br.batched();
    report.batched_cutting = batched;
    // On large fabrics (those cut in batches) the escape is prepared on the other core while
    // cycle breaking runs, for the outcome of large irregular fabrics: every destination
    // overflows. Where fewer do, that is restricted to them (`escape::Prologue::restrict`: the
    // Up*/Down* trees of those that overflow stay as balanced without the others' SSSP routes);
    // where cycle breaking fits the budget it goes unused.
    let speculate =
        batched && opts.prepare_escape_ahead && prep.reclaim && opts.measure_up_to <= budget;
    let breaking = |br: &mut Breaker| {
        for i in first..usize::from(cap) - 1 {
            if br.break_layer(i) == 0 {
                return Some(i as u8 + 1);
            }
        }
        None
    };
    let mut escape_ahead = None;
    let mut needed = if speculate {
        // (Every path is still counted: the probe only marks.)
        let total: Vec<u64> = edge_totals(&br.counts).into_iter().map(u64::from).collect();
        let work = g.num_switches() * g.dests().len();
        let (needed, pre) = crate::par::join(
            work,
            || breaking(&mut br),
            || {
                // A failure here is found again (and reported) by the escape itself.
                escape::prepare(prep, &routes.cols, escape::all_overflowing(g), &total, None).ok()
            },
        );
        report.escape_prepared_ahead = pre.is_some();
        escape_ahead = pre;
        needed
    } else {
        breaking(&mut br)
    };
    if needed.is_none() {
        let last = usize::from(cap) - 1;
        let acyclic = br.counts.get(last).is_none_or(|c| prep.acyclic(c));
        if acyclic {
            needed = Some(cap);
        }
    }
    let broken = br.finish();
    CycleBreaking {
        needed,
        counts: broken.counts,
        cuts: broken.cuts,
        moved: broken.moved_paths,
        dest_layers: Some((broken.dest_layers, broken.moved_dests)),
        escape_ahead,
    }
}

/// Stage 4: every path's layer, switch-major: cycle breaking's when the budget holds them,
/// else the escape's ([`escape`]: the last layer reserved for Up*/Down* routes).
fn assign_layers(
    prep: &Prepared,
    routes: &mut WorkingRoutes,
    broken: CycleBreaking,
    budget: u8,
    report: &mut LayerReport,
) -> Result<SwitchLidTable, DfssspError> {
    let g = prep.g;
    let ns = g.num_switches();
    let mut layers = SwitchLidTable::new(ns, routes.routing.lft.max_lid, 0);
    let mut dest_layers = broken.dest_layers;
    match broken.needed {
        Some(n) if n <= budget => {
            report.layers_before_balancing = n;
        }
        _ => {
            let (dl, _) =
                dest_layers.get_or_insert_with(|| (vec![0; g.dests().len() * ns], Vec::new()));
            let out = escape::run(
                prep,
                &routes.cols,
                routes.routing,
                dl,
                broken.counts,
                budget,
                broken.escape_ahead,
            )?;
            report.escape_layer = Some(budget - 1);
            report.updown_roots = out.roots;
            report.escape_dests_initial = out.initial;
            report.reclaimed_dests = out.reclaimed;
            report.escape_dests = out.escape_dests;
            report.escape_routes = out.escape_routes;
            report.escape_routes_minimal = out.escape_minimal;
            let all: Vec<u32> = (0..g.dests().len() as u32).collect();
            layers_from_dest_major(g, dl, &all, &mut layers);
            report.layers_before_balancing = count_used(g, routes.routing, &layers, budget);
        }
    }
    if let (Some((dl, touched)), None) = (dest_layers, report.escape_layer) {
        // Paths never moved are in layer 0 already.
        layers_from_dest_major(g, &dl, &touched, &mut layers);
    }
    Ok(layers)
}

/// Stage 5: balancing over the layers left free, the route counts, and the layers into the
/// routing.
fn finish(
    prep: &Prepared,
    routing: &mut Routing,
    layers: SwitchLidTable,
    needed: Option<u8>,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) {
    // A lane left free only costs balancing room, never a layer cycle breaking needs.
    report.spare_lane =
        opts.spare_lane && report.escape_layer.is_none() && matches!(needed, Some(n) if n < budget);
    spread(prep.g, &prep.weight, routing, layers, budget, opts, report);
    report.kept_routes = report.routes - report.escape_routes;
    report.minimal_fraction = if report.routes == 0 {
        1.0
    } else {
        (report.kept_routes + report.escape_routes_minimal) as f64 / report.routes as f64
    };
}

/// A routing deadlock-free in one layer (every path in layer 0: the one-lane routes) spread over
/// `budget` layers as [`finish`] spreads any routing whose layer 0 is acyclic. That is what the
/// deadlock removal of these tables gives, the canonical rule a standby derives its SLs by
/// ([`crate::engine::adopt_tables`]): routed in one lane and left there, a faulty fat tree's
/// takeover changed 85.7% of the CA pairs' SLs (the standby's layers balanced, the master's not).
/// Moves no route; `weight` as [`DfssspOptions::weight`] gives. Budget 1: nothing to spread.
fn spread_one_layer(
    g: &SwitchGraph,
    weight: &[u32],
    routing: &mut Routing,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) {
    report.spare_lane = opts.spare_lane && budget >= 2;
    if budget < 2 {
        return;
    }
    report.budget = budget;
    let layers = SwitchLidTable::new(g.num_switches(), routing.lft.max_lid, 0);
    spread(g, weight, routing, layers, budget, opts, report);
}

/// [`spread_one_layer`] for a routing made deadlock-free in one layer by a caller (the one-lane
/// candidate), with the budget of the layers it replaces.
pub fn spread_one_layer_routing(
    g: &SwitchGraph,
    routing: &mut Routing,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) {
    let weight = prepared::path_weights(g, opts.weight);
    spread_one_layer(g, &weight, routing, budget, opts, report);
}

/// Balancing over the layers left free (`budget`, less a spare lane), then the routes per layer
/// and the layers into the routing.
fn spread(
    g: &SwitchGraph,
    weight: &[u32],
    routing: &mut Routing,
    mut layers: SwitchLidTable,
    budget: u8,
    opts: &DfssspOptions,
    report: &mut LayerReport,
) {
    if opts.balance {
        let room = budget - u8::from(report.spare_lane);
        balance(g, routing, &mut layers, weight, room);
    }
    let per_layer = routes_per_layer(g, routing, &layers);
    report.routes = per_layer.iter().sum();
    report.layers_used = per_layer.iter().filter(|&&n| n > 0).count() as u8;
    report.routes_per_layer = per_layer;
    // Layer numbers stay below the highest used one + 1 (dense after balancing or an escape):
    // the last layer with routes.
    routing.num_layers = report.routes_per_layer.len() as u8;
    routing.layers = layer_table(layers, budget);
}

/// The routing's layer table: none with a budget of one lane, where every path is in layer 0 and
/// no later re-route can use another (a switch-by-LID table less to keep: 6.6 MB on the 18-ary
/// 3-tree, held by the plug-in while OpenSM uploads the tables).
fn layer_table(layers: SwitchLidTable, budget: u8) -> Option<SwitchLidTable> {
    (budget > 1).then_some(layers)
}

/// Writes destination-major path layers (`dl[di * S + s]`) of the destinations `dests` into the
/// switch-major table, in tiles of 64 switches (in parallel) so both sides stay cache-friendly.
pub(crate) fn layers_from_dest_major(
    g: &SwitchGraph,
    dl: &[u8],
    dests: &[u32],
    layers: &mut SwitchLidTable,
) {
    const TILE: usize = 64;
    let ns = g.num_switches();
    let (_, stride) = layers.shape();
    if ns == 0 || stride == 0 {
        return;
    }
    let work = ns * dests.len();
    let blocks = layers
        .values_mut()
        .par_chunks_mut(stride * TILE)
        .enumerate();
    crate::par::sized(blocks, work).for_each(|(ti, block)| {
        let s0 = ti * TILE;
        for &di in dests {
            let di = di as usize;
            let src = &dl[di * ns + s0..di * ns + (s0 + TILE).min(ns)];
            let lid = usize::from(g.dests()[di].lid);
            for (k, &l) in src.iter().enumerate() {
                block[k * stride + lid] = l;
            }
        }
    });
}

/// Calls `f(switch, lid, layer)` for every routed (switch, LID) path.
/// Per layer, the routed (switch, LID) paths in it, each counted with its switch's `weight`;
/// switches in parallel.
fn layer_sums(
    g: &SwitchGraph,
    routing: &Routing,
    layers: &SwitchLidTable,
    weight: impl Fn(u32) -> u64 + Sync,
) -> Vec<u64> {
    let nl = usize::from(MAX_LAYERS);
    let work = g.num_switches() * g.dests().len();
    crate::par::sized((0..g.num_switches() as u32).into_par_iter(), work)
        .fold(
            || vec![0u64; nl],
            |mut v, s| {
                let (row, lrow) = (routing.lft.table(s), layers.row(s));
                let mut here = [0u64; MAX_LAYERS as usize];
                for d in g.dests() {
                    let lid = usize::from(d.lid);
                    if d.switch != NO_SWITCH && row[lid] != NO_PATH {
                        here[usize::from(lrow[lid])] += 1;
                    }
                }
                let w = weight(s);
                v.iter_mut().zip(here).for_each(|(a, n)| *a += n * w);
                v
            },
        )
        .reduce(
            || vec![0u64; nl],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// Routed paths per layer, up to the last layer with any (at least one entry).
fn routes_per_layer(g: &SwitchGraph, routing: &Routing, layers: &SwitchLidTable) -> Vec<u64> {
    let mut v = layer_sums(g, routing, layers, |_| 1);
    let used = v.iter().rposition(|&n| n > 0).map_or(1, |i| i + 1);
    v.truncate(used);
    v
}

fn count_used(g: &SwitchGraph, routing: &Routing, layers: &SwitchLidTable, budget: u8) -> u8 {
    let per = routes_per_layer(g, routing, layers);
    per.iter()
        .take(usize::from(budget))
        .filter(|&&n| n > 0)
        .count() as u8
}

/// Shares the empty layers among the used ones (each time to the layer with the most path weight
/// per share, as stock dfsssp does) and spreads every used layer's paths evenly over its share.
/// Used layers are renumbered so each share is contiguous. Paths whose layer is empty stay put.
fn balance(
    g: &SwitchGraph,
    routing: &Routing,
    layers: &mut SwitchLidTable,
    weight: &[u32],
    budget: u8,
) {
    let nl = usize::from(MAX_LAYERS);
    if budget <= 1 {
        // No room to share: nothing moves.
        return;
    }
    let w = layer_sums(g, routing, layers, |s| u64::from(weight[s as usize]));
    let used: Vec<usize> = (0..nl).filter(|&l| w[l] > 0).collect();
    if used.is_empty() || used.len() >= usize::from(budget) {
        return;
    }
    let mut share = vec![0u64; nl];
    for &l in &used {
        share[l] = 1;
    }
    for _ in used.len()..usize::from(budget) {
        // Largest w/share, compared exactly; ties to the lower layer.
        let best = used
            .iter()
            .copied()
            .reduce(|a, b| {
                if u128::from(w[b]) * u128::from(share[a]) > u128::from(w[a]) * u128::from(share[b])
                {
                    b
                } else {
                    a
                }
            })
            .expect("non-empty");
        share[best] += 1;
    }
    let mut base = vec![0u8; nl];
    let mut acc = 0u8;
    for &l in &used {
        base[l] = acc;
        acc += share[l] as u8;
    }
    let (_, stride) = layers.shape();
    if stride == 0 {
        return;
    }
    let work = g.num_switches() * g.dests().len();
    let rows = layers.values_mut().par_chunks_mut(stride).enumerate();
    crate::par::sized(rows, work).for_each(|(s, lrow)| {
        let row = routing.lft.table(s as u32);
        for (di, d) in g.dests().iter().enumerate() {
            let lid = usize::from(d.lid);
            if d.switch == NO_SWITCH || row[lid] == NO_PATH {
                continue;
            }
            let l = usize::from(lrow[lid]);
            let k = share[l];
            if k > 1 {
                lrow[lid] = base[l] + ((s + di) as u64 % k) as u8;
            } else {
                lrow[lid] = base[l];
            }
        }
    });
}

#[cfg(test)]
mod tests;

/// Layers pure DFSSSP cycle breaking (Domke et al.) needs for a routing as it is, under two models of
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
            refuse_escape: false,
            fit_switch_dests: false,
            lift_unfitted: false,
            spare_lane: false,
            one_lane: false,
            // A measure of Domke et al.'s algorithm as written.
            cutting: Cutting::Exact,
            prepare_escape_ahead: false,
            deadline: None,
        };
        let mut copy = r.clone();
        make_deadlock_free_with(g, &mut copy, MAX_LAYERS, &opts, None)
            .map(|rep| rep.dfsssp_layers_needed)
            .map_err(|e| format!("cycle breaking: {e}"))
    };
    Ok(LayersNeeded {
        all_sources: need(PathWeight::SourcePorts)?,
        ca_sources: need(PathWeight::CaPorts)?,
    })
}
