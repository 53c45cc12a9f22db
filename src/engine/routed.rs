//! A routing together with what it was computed for and with: the one bundle the plug-in keeps
//! across runs (uploaded, pending, previous, adopted from the state file), the state file saves
//! and reads back, and [`run_from`](super::run_from) re-routes from. [`Routed`] owns it,
//! [`RoutedRef`] borrows it (`Copy`; [`Routed::view`] is free), and
//! [`RoutedRef::routed_fabric`] narrows it to what comparing and re-routing paths need.

use super::{EngineConfig, EngineOutput};
use crate::fabric::Fabric;
use crate::graph::SwitchGraph;
use crate::reroute::{RoutedFabric, RoutingSummary};
use crate::routing::Routing;
use crate::verify::VerifyReport;

/// The summary a re-route starts from, taken from a complete verification of `routing` (its
/// channel loads counted on the way where the report has them, else counted now).
pub(crate) fn summary_of_verified(
    graph: &SwitchGraph,
    routing: &Routing,
    mut report: VerifyReport,
) -> RoutingSummary {
    let loads = report
        .channel_loads
        .take()
        .unwrap_or_else(|| crate::balance::channel_loads(graph, &routing.lft));
    super::summary_of(loads, Some(&mut report))
}

/// A routing with the fabric and switch graph it was computed for, the configuration it was
/// computed with, its channel loads and its SL offset.
#[derive(Debug)]
pub struct Routed {
    pub fabric: Fabric,
    pub graph: SwitchGraph,
    pub routing: Routing,
    /// The configuration it was computed with (read back from a state file: the settings that
    /// decide whether it can be continued, the rest at their defaults).
    pub cfg: EngineConfig,
    /// [`EngineOutput::full_max_load`] of its run.
    pub full_max_load: u64,
    /// [`EngineOutput::max_load`] of its run.
    pub max_load: u64,
    /// [`EngineOutput::summary`] of its run, if kept (a routing read back and verified here, from
    /// a state file or the switches' tables, has the summary of that verification; one read back
    /// from dumps has none: a re-route from it recounts loads and dependency edges by a complete
    /// traversal).
    pub summary: Option<RoutingSummary>,
    /// [`EngineOutput::sl_offset`] of its run: an incremental re-route keeps it.
    pub sl_offset: u8,
}

/// [`Routed`], borrowed.
#[derive(Clone, Copy)]
pub struct RoutedRef<'a> {
    pub fabric: &'a Fabric,
    pub graph: &'a SwitchGraph,
    pub routing: &'a Routing,
    pub cfg: &'a EngineConfig,
    pub full_max_load: u64,
    pub max_load: u64,
    pub summary: Option<&'a RoutingSummary>,
    pub sl_offset: u8,
}

impl Routed {
    /// What a run of the engine with `cfg` on `fabric` computed (its log, statistics and reports
    /// are left behind).
    pub fn new(fabric: Fabric, cfg: EngineConfig, out: EngineOutput) -> Self {
        Routed {
            fabric,
            graph: out.graph,
            routing: out.routing,
            cfg,
            full_max_load: out.full_max_load,
            max_load: out.max_load,
            summary: Some(out.summary),
            sl_offset: out.sl_offset,
        }
    }

    /// A routing read back rather than computed here (from dumps, from the switches' tables):
    /// its highest channel load counted, taken as a full computation's too, and no summary (a
    /// re-route from it traverses every destination).
    pub fn read_back(
        fabric: Fabric,
        graph: SwitchGraph,
        routing: Routing,
        cfg: EngineConfig,
        sl_offset: u8,
    ) -> Self {
        let loads = crate::balance::channel_loads(&graph, &routing.lft);
        let max_load = loads.into_iter().max().unwrap_or(0);
        Self::read_back_as(fabric, graph, routing, cfg, sl_offset, max_load, None)
    }

    /// [`read_back`](Self::read_back) for a routing this SM has just verified in full
    /// (`report`, from [`crate::verify::verify_and_load`]): its loads and dependency edges are
    /// the summary, so a re-route from it traverses only the destinations a change touched and
    /// verifies only the LIDs whose routes moved, as after a computation here.
    pub fn read_back_verified(
        fabric: Fabric,
        graph: SwitchGraph,
        routing: Routing,
        cfg: EngineConfig,
        sl_offset: u8,
        report: VerifyReport,
    ) -> Self {
        let summary = summary_of_verified(&graph, &routing, report);
        let max_load = summary.loads.iter().copied().max().unwrap_or(0);
        Self::read_back_as(
            fabric,
            graph,
            routing,
            cfg,
            sl_offset,
            max_load,
            Some(summary),
        )
    }

    /// A routing read back, its highest channel load `max_load` taken as a full computation's.
    fn read_back_as(
        fabric: Fabric,
        graph: SwitchGraph,
        routing: Routing,
        cfg: EngineConfig,
        sl_offset: u8,
        max_load: u64,
        summary: Option<RoutingSummary>,
    ) -> Self {
        Routed {
            fabric,
            graph,
            routing,
            cfg,
            full_max_load: max_load,
            max_load,
            summary,
            sl_offset,
        }
    }

    pub fn view(&self) -> RoutedRef<'_> {
        RoutedRef {
            fabric: &self.fabric,
            graph: &self.graph,
            routing: &self.routing,
            cfg: &self.cfg,
            full_max_load: self.full_max_load,
            max_load: self.max_load,
            summary: self.summary.as_ref(),
            sl_offset: self.sl_offset,
        }
    }
}

impl<'a> RoutedRef<'a> {
    /// What a run of the engine with `cfg` on `fabric` computed, borrowed.
    pub fn of_output(fabric: &'a Fabric, cfg: &'a EngineConfig, out: &'a EngineOutput) -> Self {
        RoutedRef {
            fabric,
            graph: &out.graph,
            routing: &out.routing,
            cfg,
            full_max_load: out.full_max_load,
            max_load: out.max_load,
            summary: Some(&out.summary),
            sl_offset: out.sl_offset,
        }
    }

    /// The routing with its fabric and switch graph alone.
    pub fn routed_fabric(self) -> RoutedFabric<'a> {
        RoutedFabric {
            fabric: self.fabric,
            graph: self.graph,
            routing: self.routing,
        }
    }
}
