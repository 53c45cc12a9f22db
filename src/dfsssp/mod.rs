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
//! part of a layer's topological order they reorder). Memory: L·E counters of 4 bytes, D·S bytes
//! for a destination-major copy of the LFT, 10·D·S bytes of pre-order tree index when layer 0 has
//! a cycle (8-byte nodes holding each path's layer and first ports, 2-byte positions dropped once the
//! per-edge destination lists exist: 4·D·S, and as much again while building them, when cycle
//! breaking cuts many edges), the S·max_lid layer table.

pub mod breaking;
pub mod cdg;
pub(crate) mod dyntopo;
mod escape;
mod onelane;
mod report;
mod switch_dests;

use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;

use crate::graph::{SwitchDistances, SwitchGraph, NO_SWITCH};
use crate::metrics::{effective_bisection_bandwidth, BisectionSpec};
use crate::routing::{Lft, RouteFault, Routing, SwitchLidTable, NO_PATH};

use breaking::Breaker;
use cdg::{topological_order, DestTree, EdgeIndex};
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
    /// Re-route switch-LID destinations among their minimal routes so they fit layer 0 with the
    /// CA routes ([`switch_dests`]); off to judge a given routing as it is.
    pub fit_switch_dests: bool,
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
    /// (for every destination overflowing; used only if that is the outcome). Changes nothing
    /// but the time; off to check exactly that.
    pub prepare_escape_ahead: bool,
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
pub const BATCHED_CUTTING_MIN_PATHS: usize = 1 << 22;

impl Default for DfssspOptions {
    fn default() -> Self {
        DfssspOptions {
            weight: PathWeight::SourcePorts,
            measure_up_to: 0,
            balance: true,
            reclaim: true,
            fit_switch_dests: true,
            spare_lane: false,
            one_lane: true,
            cutting: Cutting::Auto,
            prepare_escape_ahead: true,
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
}

pub(crate) fn fault_error(g: &SwitchGraph, lid: u16, fault: RouteFault) -> DfssspError {
    DfssspError::Route {
        lid,
        fault,
        switch: fault.at().map_or_else(String::new, |s| g.switch_label(s)),
    }
}

/// Bisection patterns (and their seed, not the default one of `eval`) that estimate Λ of each
/// one-lane candidate: a few ms on the random 128-switch fabric. Candidates more than about 1%
/// apart are ranked as by 1000 patterns of seed 1; closer ones (kautz:2,3,2: 0.7619 and 0.7641)
/// may not be.
const ONE_LANE_PICK_PATTERNS: u32 = 200;
const ONE_LANE_PICK_SEED: u64 = 0x6f6e_656c;

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
    let t0 = Instant::now();
    if budget == 0 || budget > MAX_LAYERS {
        return Err(DfssspError::Budget(budget));
    }
    let ns = g.num_switches();
    if routing.lft.num_switches() != ns
        || routing.lft.max_lid < g.max_lid()
        || routing.hops.row(0).len() != routing.lft.stride() && ns > 0
    {
        return Err(DfssspError::Shape {
            tables: routing.lft.num_switches(),
            max_lid: routing.lft.max_lid,
            switches: ns,
            fabric_max_lid: g.max_lid(),
        });
    }
    let mut report = LayerReport {
        budget,
        ..Default::default()
    };
    let comp = g.components();
    let weight: Vec<u32> = match opts.weight {
        PathWeight::SourcePorts => g.terminal_count().iter().map(|&t| t + 1).collect(),
        PathWeight::Unit => vec![1; ns],
        PathWeight::CaPorts => g.terminal_count().to_vec(),
    };
    let ei = EdgeIndex::new(g);
    let mut cols = transpose(g, &routing.lft);
    if ns > usize::from(u16::MAX) {
        // Cannot happen for a valid fabric: every switch owns one of the 49151 unicast LIDs.
        return Err(DfssspError::Shape {
            tables: routing.lft.num_switches(),
            max_lid: routing.lft.max_lid,
            switches: ns,
            fabric_max_lid: g.max_lid(),
        });
    }
    let mut counts0 = build_layer0(g, &ei, &cols, &comp, &weight)?;
    // Switch distances: the caller's, or computed once here where a step needs them.
    let own_dist = std::cell::OnceCell::new();
    let dist_or_own = || dist.unwrap_or_else(|| own_dist.get_or_init(|| SwitchDistances::new(g)));
    // Switch LIDs on Up*/Down* routes in a single lane, if that fits them (see below).
    let mut updown_fit = None;
    if opts.fit_switch_dests && topological_order(g, &ei, &counts0).is_none() {
        let ctx = switch_dests::FitCtx {
            g,
            ei: &ei,
            comp: &comp,
            weight: &weight,
            dist,
        };
        if let Some(fit) = switch_dests::fit(&ctx, &mut routing.lft, &mut cols, &mut counts0)? {
            report.switch_dests_fitted = fit.fitted;
            report.switch_dests_changed = fit.changed;
            report.switch_dests_unfitted = fit.unfitted;
            // One lane and still a cycle: cycle breaking cannot help, the escape would re-route
            // the switch LIDs on Up*/Down* anyway; doing it here directly (when every CA route
            // is legal under some orientation, as on fat trees) is much cheaper and leaves every
            // CA route as it is.
            if budget == 1
                && opts.measure_up_to <= budget
                && fit.unfitted > 0
                && topological_order(g, &ei, &counts0).is_none()
            {
                updown_fit = switch_dests::fit_updown(
                    &ctx,
                    dist_or_own(),
                    routing,
                    &mut cols,
                    &mut counts0,
                )?;
            }
        }
    }
    let mut layers = SwitchLidTable::new(ns, routing.lft.max_lid, 0);
    report.seconds_cdg = t0.elapsed().as_secs_f64();

    if budget == 1 && opts.one_lane && topological_order(g, &ei, &counts0).is_none() {
        let t2 = Instant::now();
        let dist = dist_or_own();
        let ud = onelane::orientation(g, &ei, dist, &counts0);
        // Tree-like (most destinations' routes legal under it): cycle checks skip far turns.
        let legal = onelane::legal_input_dests(g, &ud, &cols);
        let dests = g.dests().iter().filter(|d| d.switch != NO_SWITCH).count() as u64;
        let tree_like = 2 * legal >= dests;
        let max_span = if tree_like {
            onelane::TREE_LIKE_SPAN
        } else {
            usize::MAX
        };
        // Seeds win on most fabrics (random 128 switches: Λ 0.1197 against 0.1082), but not on
        // every one (a 6x6 mesh: 0.4378 against 0.4406): route both ways and keep the higher
        // estimated Λ, so one lane never does worse than without seeds (up to the estimate).
        // Independent: routed in parallel, each on its own copy of the input routes.
        let spec = BisectionSpec::new(ONE_LANE_PICK_PATTERNS, ONE_LANE_PICK_SEED);
        let seedings = [onelane::Seeding::Sifted, onelane::Seeding::Unseeded];
        let cands: Vec<_> = seedings
            .par_iter()
            .map(|&seeding| {
                let mut cand = routing.clone();
                let out = onelane::run(
                    g, &ei, &ud, dist, &cols, &counts0, seeding, max_span, &mut cand,
                )?;
                let est =
                    effective_bisection_bandwidth(g, &cand.lft, &spec).map_or(0.0, |b| b.lambda);
                Ok((est, out, seeding, cand))
            })
            .collect::<Result<_, DfssspError>>()?;
        let estimates = cands.iter().map(|c| (c.2.name(), c.0)).collect();
        // The highest estimate; ties to the earlier candidate.
        let best = cands
            .into_iter()
            .reduce(|a, b| if b.0 > a.0 { b } else { a })
            .expect("two candidates");
        *routing = best.3;
        let (out, seeding) = (best.1, best.2);
        report.one_lane = Some(OneLaneReport {
            seeding: seeding.name(),
            lambda_estimates: estimates,
            tree_roots: out.roots,
            legal_input_dests: legal,
            tree_like,
            restarts: out.restarts,
            kept_dests: out.kept_dests,
            tree_routes: out.tree_routes,
            nonminimal_routes: out.nonminimal_routes,
            searched_channels: out.searched_channels,
        });
        report.seconds_escape = t2.elapsed().as_secs_f64();
        report.layers_before_balancing = 1;
        report.layers_used = 1;
        let per_layer = routes_per_layer(g, routing, &layers);
        report.routes = per_layer.iter().sum();
        report.routes_per_layer = per_layer;
        report.kept_routes = report.routes;
        report.minimal_fraction = if report.routes == 0 {
            1.0
        } else {
            (report.routes - out.nonminimal_routes) as f64 / report.routes as f64
        };
        routing.num_layers = 1;
        routing.layers = layer_table(layers, budget);
        report.seconds_total = t0.elapsed().as_secs_f64();
        return Ok(report);
    }

    // Offline cycle breaking over as many layers as we measure.
    let t1 = Instant::now();
    // With one lane, one round of cycle breaking still ranks destinations for the escape.
    let cap = opts.measure_up_to.clamp(budget.max(2), MAX_LAYERS);
    report.measured_up_to = cap;
    // Path layers destination-major while cycle breaking and the escape work on them (one
    // destination's paths contiguous), written into the switch-major table once at the end.
    let mut prologue = None;
    let (needed, counts, cuts, moved, mut dl) = if topological_order(g, &ei, &counts0).is_some() {
        // Acyclic already (fat trees without switch-to-switch valleys): one layer, nothing to do.
        (Some(1), vec![counts0], 0, 0, None)
    } else {
        let mut br = Breaker::new(g, &ei, &routing.lft, &cols, &weight, counts0);
        br.cutting = match opts.cutting {
            Cutting::Auto if ns * g.dests().len() < BATCHED_CUTTING_MIN_PATHS => Cutting::Exact,
            c => c,
        };
        if br.cutting == Cutting::Auto {
            br.probe();
        }
        let batched = br.batched();
        // On large fabrics (those cut in batches) the escape is prepared on the other core while
        // cycle breaking runs, for the outcome of large irregular fabrics: every destination
        // overflows. If that is not what cycle breaking leaves, the escape prepares anew (the
        // same result either way; only the time differs).
        let speculate =
            batched && opts.prepare_escape_ahead && opts.reclaim && opts.measure_up_to <= budget;
        let total: Vec<u64> = if speculate {
            // (Every path is still counted: the probe only marks.)
            br.counts[0].iter().map(|&c| u64::from(c)).collect()
        } else {
            Vec::new()
        };
        report.batched_cutting = batched;
        let breaking = |br: &mut Breaker| {
            for i in 0..usize::from(cap) - 1 {
                if br.break_layer(i) == 0 {
                    return Some(i as u8 + 1);
                }
            }
            None
        };
        let mut needed = if speculate {
            let known = dist.or(own_dist.get());
            let (needed, (pre, computed)) = rayon::join(
                || breaking(&mut br),
                || {
                    let computed = known.is_none().then(|| SwitchDistances::new(g));
                    let ctx = escape::EscapeCtx {
                        g,
                        ei: &ei,
                        cols: &cols,
                        weight: &weight,
                        comp: &comp,
                        dist: known.or(computed.as_ref()).expect("known or computed"),
                        reclaim: opts.reclaim,
                    };
                    // A failure here is found again (and reported) by the escape itself.
                    let pre = escape::prepare(&ctx, escape::all_overflowing(g), &total, None);
                    (pre.ok(), computed)
                },
            );
            report.escape_prepared_ahead = pre.is_some();
            prologue = pre;
            if let Some(d) = computed {
                let _ = own_dist.set(d);
            }
            needed
        } else {
            breaking(&mut br)
        };
        if needed.is_none() {
            let last = usize::from(cap) - 1;
            let acyclic = br
                .counts
                .get(last)
                .is_none_or(|c| topological_order(g, &ei, c).is_some());
            if acyclic {
                needed = Some(cap);
            }
        }
        let (dl, touched, counts, cuts, moved) = br.finish();
        (needed, counts, cuts, moved, Some((dl, touched)))
    };
    report.dfsssp_layers_needed = needed;
    if let Some(ud) = updown_fit {
        // Minimal routes needed more than the one lane; the switch LIDs that did not fit are on
        // Up*/Down* routes in layer 0, which acts as the escape layer.
        report.dfsssp_layers_needed = None;
        report.measured_up_to = budget;
        report.escape_layer = Some(0);
        report.updown_roots = ud.roots;
        report.escape_dests_initial = ud.illegal;
        report.reclaimed_dests = ud.minimal;
        report.escape_dests = ud.updown;
        report.escape_routes = ud.updown_routes;
        report.escape_routes_minimal = ud.updown_minimal;
        // Fitted switch LIDs whose routes are illegal Up*/Down* routes end on Up*/Down* trees too,
        // so that count can exceed the unfitted one: summed first (debug builds panicked).
        report.switch_dests_fitted =
            report.switch_dests_fitted + report.switch_dests_unfitted - ud.updown;
        report.switch_dests_changed += ud.minimal;
        report.switch_dests_unfitted = ud.updown;
    }
    report.cuts = cuts;
    report.moved_paths = moved;
    report.seconds_breaking = t1.elapsed().as_secs_f64();

    let t2 = Instant::now();
    match needed {
        Some(n) if n <= budget => {
            report.layers_before_balancing = n;
        }
        _ => {
            let dist = dist_or_own();
            let ctx = escape::EscapeCtx {
                g,
                ei: &ei,
                cols: &cols,
                weight: &weight,
                comp: &comp,
                dist,
                reclaim: opts.reclaim,
            };
            let (dl, _) = dl.get_or_insert_with(|| (vec![0; g.dests().len() * ns], Vec::new()));
            let out = escape::run(&ctx, routing, dl, counts, budget, prologue)?;
            report.escape_layer = Some(budget - 1);
            report.updown_roots = out.roots;
            report.escape_dests_initial = out.initial;
            report.reclaimed_dests = out.reclaimed;
            report.escape_dests = out.escape_dests;
            report.escape_routes = out.escape_routes;
            report.escape_routes_minimal = out.escape_minimal;
            let all: Vec<u32> = (0..g.dests().len() as u32).collect();
            layers_from_dest_major(g, dl, &all, &mut layers);
            report.layers_before_balancing = count_used(g, routing, &layers, budget);
        }
    }
    if let (Some((dl, touched)), None) = (dl, report.escape_layer) {
        // Paths never moved are in layer 0 already.
        layers_from_dest_major(g, &dl, &touched, &mut layers);
    }
    report.seconds_escape = t2.elapsed().as_secs_f64();

    // A lane left free only costs balancing room, never a layer cycle breaking needs.
    report.spare_lane =
        opts.spare_lane && report.escape_layer.is_none() && matches!(needed, Some(n) if n < budget);
    if opts.balance {
        let room = budget - u8::from(report.spare_lane);
        balance(g, routing, &mut layers, &weight, room);
    }
    let per_layer = routes_per_layer(g, routing, &layers);
    report.routes = per_layer.iter().sum();
    report.layers_used = per_layer.iter().filter(|&&n| n > 0).count() as u8;
    report.routes_per_layer = per_layer;
    report.kept_routes = report.routes - report.escape_routes;
    report.minimal_fraction = if report.routes == 0 {
        1.0
    } else {
        (report.kept_routes + report.escape_routes_minimal) as f64 / report.routes as f64
    };
    // Layer numbers stay below the highest used one + 1 (dense after balancing or an escape).
    let top = highest_layer(g, routing, &layers);
    routing.num_layers = top + 1;
    routing.layers = layer_table(layers, budget);
    report.seconds_total = t0.elapsed().as_secs_f64();
    Ok(report)
}

/// The routing's layer table: none with a budget of one lane, where every path is in layer 0 and
/// no later re-route can use another (a switch-by-LID table less to keep: 6.6 MB on the 18-ary
/// 3-tree, held by the plug-in while OpenSM uploads the tables).
fn layer_table(layers: SwitchLidTable, budget: u8) -> Option<SwitchLidTable> {
    (budget > 1).then_some(layers)
}

/// Destination-major copy of the LFT: `cols[di * S + s] = lft.port(s, dests[di].lid)`, built in
/// tiles so both sides stay cache-friendly.
fn transpose(g: &SwitchGraph, lft: &Lft) -> Vec<u8> {
    const TILE: usize = 64;
    let ns = g.num_switches();
    let nd = g.dests().len();
    let mut cols = vec![NO_PATH; nd * ns];
    if ns == 0 {
        return cols;
    }
    cols.par_chunks_mut(ns * TILE)
        .enumerate()
        .for_each(|(ti, block)| {
            let d0 = ti * TILE;
            let dests = &g.dests()[d0..(d0 + TILE).min(nd)];
            for s in 0..ns {
                let row = lft.table(s as u32);
                for (k, d) in dests.iter().enumerate() {
                    block[k * ns + s] = row[usize::from(d.lid)];
                }
            }
        });
    cols
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
    layers
        .values_mut()
        .par_chunks_mut(stride * TILE)
        .enumerate()
        .for_each(|(ti, block)| {
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

/// Edge counts of layer 0 with every path, validating every destination's tree.
fn build_layer0(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    cols: &[u8],
    comp: &[u32],
    weight: &[u32],
) -> Result<Vec<u32>, DfssspError> {
    let ns = g.num_switches();
    let ne = ei.num_edges();
    let nd = g.dests().len();
    let chunk = (nd / (rayon::current_num_threads() * 2)).max(64);
    g.dests()
        .par_chunks(chunk)
        .enumerate()
        .map(|(ci, ds)| {
            let mut tree = DestTree::new(ns);
            let mut counts = vec![0u32; ne];
            for (k, d) in ds.iter().enumerate() {
                if d.switch == NO_SWITCH {
                    continue;
                }
                let di = ci * chunk + k;
                let col = &cols[di * ns..(di + 1) * ns];
                tree.build_from_ports(g, d, |s| col[s as usize], comp)
                    .map_err(|f| fault_error(g, d.lid, f))?;
                tree.apply(g, ei, &mut counts, |s| weight[s as usize], true);
            }
            Ok(counts)
        })
        .try_reduce(
            || vec![0u32; ne],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                Ok(a)
            },
        )
}

/// Calls `f(switch, lid, layer)` for every routed (switch, LID) path.
fn for_each_routed(
    g: &SwitchGraph,
    routing: &Routing,
    layers: &SwitchLidTable,
    mut f: impl FnMut(u32, u16, u8),
) {
    for s in 0..g.num_switches() as u32 {
        let row = routing.lft.table(s);
        let lrow = layers.row(s);
        for d in g.dests() {
            let lid = usize::from(d.lid);
            if d.switch != NO_SWITCH && row[lid] != NO_PATH {
                f(s, d.lid, lrow[lid]);
            }
        }
    }
}

fn routes_per_layer(g: &SwitchGraph, routing: &Routing, layers: &SwitchLidTable) -> Vec<u64> {
    let mut v = vec![0u64; usize::from(MAX_LAYERS)];
    for_each_routed(g, routing, layers, |_, _, l| v[usize::from(l)] += 1);
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

fn highest_layer(g: &SwitchGraph, routing: &Routing, layers: &SwitchLidTable) -> u8 {
    let mut top = 0u8;
    for_each_routed(g, routing, layers, |_, _, l| top = top.max(l));
    top
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
    let mut w = vec![0u64; nl];
    for_each_routed(g, routing, layers, |s, _, l| {
        w[usize::from(l)] += u64::from(weight[s as usize])
    });
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
    for (s, lrow) in layers.rows_mut().enumerate() {
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
    }
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
            fit_switch_dests: false,
            spare_lane: false,
            one_lane: false,
            // A measure of Domke et al.'s algorithm as written.
            cutting: Cutting::Exact,
            prepare_escape_ahead: false,
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
