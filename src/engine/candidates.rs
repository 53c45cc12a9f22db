//! Routings judged by measured Λ beside the layers' minimal routes: the one-lane search's, and
//! dimension-order routes on tori and meshes.
//!
//! **Cost.** Each candidate is a whole routing: dimension-order routes made deadlock-free by cycle
//! breaking ([`crate::dor`], [`crate::dfsssp`]), or the one-lane search from a copy of the SSSP
//! tables and their layer-0 CDG, spread over the lanes where it wins. Each verdict measures Λ over
//! [`CANDIDATE_PATTERNS`] patterns, `O(64·(P + F log F + F·h))` for P CA ports, F = P/2 flows of h
//! hops: two routings for the one-lane candidate, up to three for dimension order. The
//! candidates share one budget, the base routing's time (SSSP and its deadlock removal; at least
//! 1 s): the one-lane candidate gets what dimension order left of it. Deadlock removal checks its
//! deadline between phases, the one-lane search while it runs (fitting its order, then its
//! pace); Λ and the DOR tables are not bounded by it.

use crate::dfsssp::{self, DfssspOptions, LayerReport};
use crate::dor;
use crate::graph::{SwitchDistances, SwitchGraph};
use crate::metrics;
use crate::routing::Routing;

use super::{EngineConfig, Log, LogLevel};

/// Bisection patterns that decide between a candidate and the routing so far.
pub(super) const CANDIDATE_PATTERNS: u32 = 64;

/// Share of the layers' routes on the escape's Up*/Down* hops from which the one-lane candidate
/// is computed on a fabric that is not a torus or mesh. The candidate (with QoS on) measured
/// below the layers on every such fabric whose layers kept the escape below it: random fabrics
/// of 64 to 1,250 switches, dragonflies, Kautz graphs, aggregated and faulty fat trees, tori and
/// meshes with 5-10% of their cables cut (escape shares 0 to 8.4%); it won where the escape
/// carried 16.8% (kautz:3,3,2 with 2 lanes) to 28% (random:128,32,16,300 with 2 lanes) of the
/// routes (README, "Candidate routings").
pub(super) const ONE_LANE_ESCAPE_SHARE: f64 = 0.125;

/// Why the one-lane candidate is not computed for a layered routing, or `None` where it may
/// win: on regular tori and meshes (`torus`, which it beats by balanced detours before the
/// dimension-order candidate is judged), or where the layers needed the escape for at least
/// [`ONE_LANE_ESCAPE_SHARE`] of their routes. Elsewhere it cost as long as the layers (up to
/// its budget) and lost.
pub(super) fn one_lane_cannot_win(layers: &LayerReport, torus: bool) -> Option<String> {
    let share = layers.escape_routes as f64 / layers.routes.max(1) as f64;
    if torus || share >= ONE_LANE_ESCAPE_SHARE {
        return None;
    }
    Some(format!(
        "candidate one-lane routing not computed: the fabric is no regular torus or mesh and \
         the layers route {:.1}% of their routes on the escape (below {:.1}%), where it has \
         never measured better",
        share * 100.0,
        ONE_LANE_ESCAPE_SHARE * 100.0
    ))
}

/// What came of the one-lane candidate.
pub(super) enum OneLaneVerdict {
    /// It measures a higher Λ than the layers' routes: take it (its report, the line saying why,
    /// its Λ).
    Better(Box<LayerReport>, String, f64),
    /// It measures no better; Λ of the layers' routes, and the line saying what it cost.
    Kept(f64, String),
    /// It could not be made deadlock-free in one lane, or was stopped at its deadline (the line
    /// saying so).
    Dropped(Option<String>),
}

/// The one-lane routing of `one` (the SSSP routes before deadlock removal, with their layer-0
/// CDG where it was gathered), judged against `multi` over [`CANDIDATE_PATTERNS`] patterns. A
/// one-layer routing leaves the other lanes free: with a spare lane asked for, multicast gets
/// one. `opts.deadline` bounds its cost.
pub(super) fn one_lane_if_better(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    multi: &Routing,
    (one, layer0): (&mut Routing, Option<dfsssp::Layer0>),
    opts: &DfssspOptions,
) -> OneLaneVerdict {
    let one_opts = DfssspOptions {
        spare_lane: false,
        ..opts.clone()
    };
    let t = std::time::Instant::now();
    let mut report = match dfsssp::make_deadlock_free_fed(g, one, layer0, 1, &one_opts, Some(dist))
    {
        Ok(report) => report,
        // The time said is the candidate's whole cost (the search's own clock, in the error,
        // starts after the CDG, the orientation and the seeds).
        Err(dfsssp::DfssspError::Stopped { projected, .. }) => {
            let why = match projected {
                // (The search's projection, from its own start, omits what came before it.)
                Some(p) => format!(", its pace projecting {:.1} s or more", p.as_secs_f64()),
                None => String::new(),
            };
            return OneLaneVerdict::Dropped(Some(format!(
                "candidate one-lane routing stopped at its time budget after {:.3} s{why}",
                t.elapsed().as_secs_f64()
            )));
        }
        // Not deadlock-free in one lane: the layers stay as they are.
        Err(_) => return OneLaneVerdict::Dropped(None),
    };
    let (l_multi, l_one) = (candidate_lambda(g, multi), candidate_lambda(g, one));
    if l_one <= l_multi {
        // Said, with its cost: a candidate that runs its whole budget and loses is worth seeing.
        let line = format!(
            "candidate one-lane routing computed in {:.3} s measures no better than {} layers \
             (Λ {l_one:.4} vs {l_multi:.4} over {CANDIDATE_PATTERNS} patterns): kept the layers",
            t.elapsed().as_secs_f64(),
            multi.num_layers
        );
        return OneLaneVerdict::Kept(l_multi, line);
    }
    report.spare_lane = opts.spare_lane;
    let line = format!(
        "the one-lane routing measures better than {} layers of minimal routes (Λ {l_one:.4} vs \
         {l_multi:.4} over {CANDIDATE_PATTERNS} patterns): routing deadlock-free in one layer, \
         spread over the lanes",
        multi.num_layers
    );
    OneLaneVerdict::Better(Box::new(report), line, l_one)
}

/// Λ of `r` over [`CANDIDATE_PATTERNS`] patterns (seed 1).
pub(super) fn candidate_lambda(g: &SwitchGraph, r: &Routing) -> f64 {
    metrics::judging_lambda(g, &r.lft, CANDIDATE_PATTERNS)
}

/// The dimension-order candidate on a torus or mesh, computed once and judged against the
/// routings that come before it.
pub(super) enum DorCandidate {
    /// Its layered routing, to be judged.
    Ready(Box<DorRouting>),
    /// It is no candidate (it needs the escape, or failed), and why.
    Dropped(String),
    /// It was stopped at its deadline (the line saying so).
    Stopped(String),
}

/// Dimension-order routes made deadlock-free, and their Λ.
pub(super) struct DorRouting {
    routing: Routing,
    report: LayerReport,
    lambda: f64,
    /// The torus or mesh, as [`dor::Torus::describe`] says it.
    shape: String,
    /// The layers cycle breaking needed before balancing.
    layers: u8,
}

impl DorRouting {
    /// Whether it measures better than a routing of Λ `current`, with the line saying so;
    /// `against` names that routing.
    fn judged(&self, current: f64, against: &str) -> (bool, String) {
        let (shape, layers, l_dor) = (&self.shape, self.layers, self.lambda);
        if l_dor > current {
            let line = format!(
                "dimension-order routes on the {shape} ({layers} layer(s) before balancing) \
                 measure better than {against} (Λ {l_dor:.4} vs {current:.4} over \
                 {CANDIDATE_PATTERNS} patterns): routing in dimension order"
            );
            (true, line)
        } else {
            let line = format!(
                "dimension-order routes on the {shape} ({layers} layer(s)) measure no better \
                 than {against} (Λ {l_dor:.4} vs {current:.4} over {CANDIDATE_PATTERNS} \
                 patterns): kept"
            );
            (false, line)
        }
    }
}

/// On a torus or mesh ([`dor::recognise`]; `None` for any other fabric): dimension-order
/// routes made deadlock-free within `budget` layers by cycle breaking alone (an escape would
/// replace DOR's routes by others, so a candidate that needs one is dropped), with their Λ.
pub(super) fn dor_candidate(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    budget: u8,
    opts: &DfssspOptions,
) -> Option<DorCandidate> {
    let torus = dor::recognise(g)?;
    let shape = torus.describe();
    let mut dor = dor::route(g, &torus);
    let report = match dfsssp::make_deadlock_free_with(g, &mut dor, budget, opts, Some(dist)) {
        Ok(r) if r.escape_layer.is_none() => r,
        Ok(_) => {
            return Some(DorCandidate::Dropped(format!(
                "dimension-order routes on the {shape} need more than {budget} layers: \
                 not a candidate"
            )))
        }
        Err(e @ dfsssp::DfssspError::Stopped { .. }) => {
            return Some(DorCandidate::Stopped(format!(
                "candidate dimension-order routing on the {shape} {e}"
            )))
        }
        Err(e) => {
            return Some(DorCandidate::Dropped(format!(
                "dimension-order routes on the {shape}: {e}"
            )))
        }
    };
    let lambda = candidate_lambda(g, &dor);
    let layers = report.dfsssp_layers_needed.unwrap_or(budget);
    Some(DorCandidate::Ready(Box::new(DorRouting {
        routing: dor,
        report,
        lambda,
        shape,
        layers,
    })))
}

/// The dimension-order candidate judged against the SSSP routes before their deadlock removal
/// (of Λ `base_lambda`): its routing and layer report where it measures better, else the
/// candidate back, to be judged against the deadlock-free routing too.
pub(super) fn dor_before_deadlock_removal(
    kind: super::EngineKind,
    candidate: DorCandidate,
    base_lambda: f64,
    log: &mut Log,
) -> Result<(Routing, LayerReport), DorCandidate> {
    match candidate {
        DorCandidate::Ready(dor) => {
            let (better, line) = dor.judged(base_lambda, "the SSSP routes");
            if better {
                log.push((LogLevel::Info, format!("{kind}: {line}")));
                let DorRouting {
                    routing, report, ..
                } = *dor;
                return Ok((routing, report));
            }
            Err(DorCandidate::Ready(dor))
        }
        other => Err(other),
    }
}

/// The deadlock-free routing kept so far, which a better candidate replaces.
pub(super) struct Layered {
    pub(super) routing: Routing,
    pub(super) report: LayerReport,
    /// Its Λ, once measured.
    pub(super) lambda: Option<f64>,
}

/// What the candidate routings are computed on and with.
pub(super) struct CandidateSetting<'a> {
    pub(super) graph: &'a SwitchGraph,
    pub(super) dist: &'a SwitchDistances,
    pub(super) cfg: &'a EngineConfig,
    /// The deadlock removal's options, with the candidates' deadline.
    pub(super) opts: &'a DfssspOptions,
}

/// The one-lane search's routing (`one`, the base routes to search from) instead of the layers'
/// where it measures a higher Λ.
pub(super) fn try_one_lane(
    set: &CandidateSetting<'_>,
    (mut one, layer0): (Routing, Option<dfsssp::Layer0>),
    kept: &mut Layered,
    log: &mut Log,
) {
    let kind = set.cfg.kind;
    let verdict = one_lane_if_better(
        set.graph,
        set.dist,
        &kept.routing,
        (&mut one, layer0),
        set.opts,
    );
    match verdict {
        OneLaneVerdict::Better(mut one_report, line, l) => {
            // Spread over the lanes the layers had, as a standby derives it from the tables.
            let budget = kept.report.budget;
            dfsssp::spread_one_layer_routing(
                set.graph,
                &mut one,
                budget,
                set.opts,
                &mut one_report,
            );
            kept.routing = one;
            kept.report = *one_report;
            kept.lambda = Some(l);
            log.push((LogLevel::Info, format!("{kind}: {line}")));
        }
        OneLaneVerdict::Kept(l, line) => {
            kept.lambda = Some(l);
            log.push((LogLevel::Verbose, format!("{kind}: {line}")));
        }
        OneLaneVerdict::Dropped(Some(line)) => {
            log.push((LogLevel::Info, format!("{kind}: {line}")));
        }
        OneLaneVerdict::Dropped(None) => {}
    }
}

/// The dimension-order candidate (computed before; `None` off tori and meshes) instead of the
/// kept routing where it measures better; whether it was taken.
pub(super) fn try_dimension_order(
    kind: super::EngineKind,
    candidate: Option<DorCandidate>,
    kept: &mut Layered,
    log: &mut Log,
    g: &SwitchGraph,
) -> bool {
    match candidate {
        Some(DorCandidate::Ready(dor)) => {
            let current = *kept
                .lambda
                .get_or_insert_with(|| candidate_lambda(g, &kept.routing));
            let (better, line) = dor.judged(current, "the routing so far");
            if better {
                let DorRouting {
                    routing, report, ..
                } = *dor;
                (kept.routing, kept.report) = (routing, report);
                kept.lambda = None;
                log.push((LogLevel::Info, format!("{kind}: {line}")));
                return true;
            }
            log.push((LogLevel::Verbose, format!("{kind}: {line}")));
        }
        Some(DorCandidate::Dropped(line)) => {
            log.push((LogLevel::Verbose, format!("{kind}: {line}")));
        }
        Some(DorCandidate::Stopped(line)) => {
            log.push((LogLevel::Info, format!("{kind}: {line}")));
        }
        None => {}
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sssp;
    use std::time::Instant;

    /// A candidate past its deadline is stopped, says so, and leaves the routing as it was.
    #[test]
    fn a_candidate_past_its_deadline_is_stopped_and_says_so() {
        let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let dist = SwitchDistances::new(&g);
        let mut multi = sssp::route(&g);
        dfsssp::make_deadlock_free_with(&g, &mut multi, 8, &DfssspOptions::default(), None)
            .unwrap();
        let input = sssp::route(&g);
        let late = DfssspOptions {
            deadline: Some(Instant::now()),
            ..Default::default()
        };
        let mut one = input.clone();
        match one_lane_if_better(&g, &dist, &multi, (&mut one, None), &late) {
            OneLaneVerdict::Dropped(Some(line)) => {
                assert!(
                    line.contains("candidate one-lane routing stopped"),
                    "{line}"
                )
            }
            _ => panic!("not stopped"),
        }
        match dor_candidate(&g, &dist, 8, &late) {
            Some(DorCandidate::Stopped(line)) => assert!(line.contains("stopped"), "{line}"),
            _ => panic!("not stopped"),
        }
        // In time, the same candidate runs to the end (on this torus it wins).
        let mut one = input.clone();
        let verdict = one_lane_if_better(&g, &dist, &multi, (&mut one, None), &Default::default());
        assert!(matches!(verdict, OneLaneVerdict::Better(..)));
    }
}
