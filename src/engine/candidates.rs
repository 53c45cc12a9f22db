//! Routings judged by measured Λ beside the layers' minimal routes: dimension-order routes on
//! tori and meshes.

use crate::dfsssp::{self, DfssspOptions, LayerReport};
use crate::dor;
use crate::graph::{SwitchDistances, SwitchGraph};
use crate::metrics;
use crate::routing::Routing;

/// Bisection patterns that decide between a candidate and the routing so far.
pub(super) const CANDIDATE_PATTERNS: u32 = 64;

/// Λ of `r` over [`CANDIDATE_PATTERNS`] patterns (seed 1).
pub(super) fn candidate_lambda(g: &SwitchGraph, r: &Routing) -> f64 {
    let spec = metrics::BisectionSpec::new(CANDIDATE_PATTERNS, 1);
    metrics::effective_bisection_bandwidth(g, &r.lft, &spec).map_or(0.0, |b| b.lambda)
}

/// What came of the dimension-order candidate on a torus or mesh.
pub(super) enum DorVerdict {
    /// Its layered routing measures better than `current`: take it.
    Better(Routing, LayerReport, String),
    /// It was not taken, and why.
    Kept(String),
}

/// On a torus or mesh ([`dor::recognise`]; `None` for any other fabric): dimension-order
/// routes made deadlock-free within `budget` layers by cycle breaking alone (an escape would
/// replace DOR's routes by others, so a candidate that needs one is dropped), and judged by Λ
/// against `current`.
pub(super) fn dor_if_better(
    g: &SwitchGraph,
    dist: &SwitchDistances,
    current: &Routing,
    budget: u8,
    opts: &DfssspOptions,
) -> Option<DorVerdict> {
    let torus = dor::recognise(g)?;
    let shape = torus.shape();
    let mut dor = dor::route(g, &torus);
    let report = match dfsssp::make_deadlock_free_with(g, &mut dor, budget, opts, Some(dist)) {
        Ok(r) if r.escape_layer.is_none() => r,
        Ok(_) => {
            return Some(DorVerdict::Kept(format!(
                "dimension-order routes on the {shape} torus need more than {budget} layers: \
                 not a candidate"
            )))
        }
        Err(e) => {
            return Some(DorVerdict::Kept(format!(
                "dimension-order routes on the {shape} torus: {e}"
            )))
        }
    };
    let (l_cur, l_dor) = (candidate_lambda(g, current), candidate_lambda(g, &dor));
    let layers = report.dfsssp_layers_needed.unwrap_or(budget);
    Some(if l_dor > l_cur {
        DorVerdict::Better(
            dor,
            report,
            format!(
                "dimension-order routes on the {shape} torus ({layers} layer(s) before balancing) \
                 measure better than the routing so far (Λ {l_dor:.4} vs {l_cur:.4} over \
                 {CANDIDATE_PATTERNS} patterns): routing in dimension order"
            ),
        )
    } else {
        DorVerdict::Kept(format!(
            "dimension-order routes on the {shape} torus ({layers} layer(s)) measure no better \
             than the routing so far (Λ {l_dor:.4} vs {l_cur:.4} over {CANDIDATE_PATTERNS} \
             patterns): kept"
        ))
    })
}
