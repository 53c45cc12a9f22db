//! Routings judged by measured Λ beside the layers' minimal routes: the one-lane search's, and
//! dimension-order routes on tori and meshes.

use crate::dfsssp::{self, DfssspOptions, LayerReport};
use crate::dor;
use crate::graph::{SwitchDistances, SwitchGraph};
use crate::metrics;
use crate::routing::Routing;

/// Bisection patterns that decide between a candidate and the routing so far.
pub(super) const CANDIDATE_PATTERNS: u32 = 64;

/// The one-lane routing of `one` (the SSSP routes before deadlock removal), and the line saying
/// why, when it measures a higher Λ than `multi` over [`CANDIDATE_PATTERNS`] patterns; `None`
/// keeps `multi`. A one-layer routing leaves the other lanes free: with a spare lane asked for,
/// multicast gets one. Also Λ of the routing kept, when measured.
pub(super) fn one_lane_if_better(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    multi: &Routing,
    one: &mut Routing,
    opts: &DfssspOptions,
) -> (Option<(LayerReport, String)>, Option<f64>) {
    let one_opts = DfssspOptions {
        spare_lane: false,
        ..opts.clone()
    };
    // A candidate that cannot be made deadlock-free in one lane leaves the layers as they are.
    let Ok(mut report) = dfsssp::make_deadlock_free_with(g, one, 1, &one_opts, Some(dist)) else {
        return (None, None);
    };
    let (l_multi, l_one) = (candidate_lambda(g, multi), candidate_lambda(g, one));
    if l_one <= l_multi {
        return (None, Some(l_multi));
    }
    report.spare_lane = opts.spare_lane;
    let line = format!(
        "the one-lane routing measures better than {} layers of minimal routes (Λ {l_one:.4} vs \
         {l_multi:.4} over {CANDIDATE_PATTERNS} patterns): routing in one lane",
        multi.num_layers
    );
    (Some((report, line)), Some(l_one))
}

/// Λ of `r` over [`CANDIDATE_PATTERNS`] patterns (seed 1).
pub(super) fn candidate_lambda(g: &SwitchGraph, r: &Routing) -> f64 {
    metrics::judging_lambda(g, &r.lft, CANDIDATE_PATTERNS)
}

/// What came of the dimension-order candidate on a torus or mesh.
pub(super) enum DorVerdict {
    /// Its layered routing measures better than `current`: take it.
    Better(Box<(Routing, LayerReport)>, String),
    /// It was not taken, and why.
    Kept(String),
}

/// On a torus or mesh ([`dor::recognise`]; `None` for any other fabric): dimension-order
/// routes made deadlock-free within `budget` layers by cycle breaking alone (an escape would
/// replace DOR's routes by others, so a candidate that needs one is dropped), and judged by Λ
/// against `current` (whose Λ may be known already).
pub(super) fn dor_if_better(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    current: &Routing,
    current_lambda: Option<f64>,
    budget: u8,
    opts: &DfssspOptions,
) -> Option<DorVerdict> {
    let torus = dor::recognise(g)?;
    let shape = torus.describe();
    let mut dor = dor::route(g, &torus);
    let report = match dfsssp::make_deadlock_free_with(g, &mut dor, budget, opts, Some(dist)) {
        Ok(r) if r.escape_layer.is_none() => r,
        Ok(_) => {
            return Some(DorVerdict::Kept(format!(
                "dimension-order routes on the {shape} need more than {budget} layers: \
                 not a candidate"
            )))
        }
        Err(e) => {
            return Some(DorVerdict::Kept(format!(
                "dimension-order routes on the {shape}: {e}"
            )))
        }
    };
    let l_cur = current_lambda.unwrap_or_else(|| candidate_lambda(g, current));
    let l_dor = candidate_lambda(g, &dor);
    let layers = report.dfsssp_layers_needed.unwrap_or(budget);
    Some(if l_dor > l_cur {
        DorVerdict::Better(
            Box::new((dor, report)),
            format!(
                "dimension-order routes on the {shape} ({layers} layer(s) before balancing) \
                 measure better than the routing so far (Λ {l_dor:.4} vs {l_cur:.4} over \
                 {CANDIDATE_PATTERNS} patterns): routing in dimension order"
            ),
        )
    } else {
        DorVerdict::Kept(format!(
            "dimension-order routes on the {shape} ({layers} layer(s)) measure no better \
             than the routing so far (Λ {l_dor:.4} vs {l_cur:.4} over {CANDIDATE_PATTERNS} \
             patterns): kept"
        ))
    })
}
