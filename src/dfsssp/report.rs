//! What deadlock removal did: [`LayerReport`], and its summary for the engine's log.

use serde::Serialize;

use super::onelane;
use super::switch_dests::SwitchDestUpDown;

/// What deadlock removal did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LayerReport {
    /// Layers the routing was allowed to use.
    pub budget: u8,
    /// Layers pure DFSSSP (cycle breaking alone) needs; `None` when more than `measured_up_to`.
    pub dfsssp_layers_needed: Option<u8>,
    pub measured_up_to: u8,
    /// Layers holding paths before and after balancing.
    pub layers_before_balancing: u8,
    pub layers_used: u8,
    /// Routed (switch, DLID) paths per layer, after balancing.
    pub routes_per_layer: Vec<u64>,
    /// Switch-LID destinations re-routed to fit layer 0 with the CA routes (of those, how many
    /// differ from SSSP), and how many were left to cycle breaking or the escape.
    pub switch_dests_fitted: usize,
    pub switch_dests_changed: usize,
    pub switch_dests_unfitted: usize,
    /// Dependency edges cut and paths moved by cycle breaking, and whether it cut in batches
    /// ([`Cutting::Batched`](super::Cutting::Batched)).
    pub cuts: u64,
    pub moved_paths: u64,
    pub batched_cutting: bool,
    /// The escape was prepared while cycle breaking ran ([`DfssspOptions::prepare_escape_ahead`](super::DfssspOptions::prepare_escape_ahead));
    /// `escape_dests_initial` tells whether it was for the destinations that overflowed.
    pub escape_prepared_ahead: bool,
    /// The Up*/Down* escape layer, when the budget was too small for pure DFSSSP.
    pub escape_layer: Option<u8>,
    /// Up*/Down* roots (switch ids), one per connected component.
    pub updown_roots: Vec<u32>,
    /// Destinations whose paths overflowed the budget (first put on Up*/Down*); of those, how
    /// many got all their minimal routes back, and how many keep some Up*/Down* hops.
    pub escape_dests_initial: usize,
    pub reclaimed_dests: usize,
    pub escape_dests: usize,
    /// Routed (switch, DLID) paths with at least one Up*/Down* hop, and how many of them are
    /// minimal anyway.
    pub escape_routes: u64,
    pub escape_routes_minimal: u64,
    /// All routed (switch, DLID) paths.
    pub routes: u64,
    /// Paths that keep their input routes (minimal when the input is SSSP).
    pub kept_routes: u64,
    /// (kept + minimal escape) / all: the fraction of minimal routes for a minimal input.
    pub minimal_fraction: f64,
    pub seconds_cdg: f64,
    pub seconds_breaking: f64,
    pub seconds_escape: f64,
    pub seconds_total: f64,
    /// One lane of the budget left free ([`DfssspOptions::spare_lane`](super::DfssspOptions::spare_lane)): the layers use at most
    /// `budget - 1`.
    pub spare_lane: bool,
    /// One-lane routing ([`DfssspOptions::one_lane`](super::DfssspOptions::one_lane)), when it ran.
    pub one_lane: Option<OneLaneReport>,
}

/// What one-lane routing did ([`onelane`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct OneLaneReport {
    /// How the layer was seeded ("sifted"; "none" where every data route was legal and no
    /// search ran).
    pub seeding: &'static str,
    /// Roots of the spanning tree whose routes guarantee that every switch reaches every LID.
    pub tree_roots: Vec<u32>,
    /// Destination LIDs whose input (SSSP) routes are all legal under the spanning tree's
    /// Up*/Down* orientation; `tree_like` when they are at least half of them, and the cycle
    /// checks that fit the channel order then refuse far turns unsearched
    /// ([`onelane::TREE_LIKE_SPAN`]).
    pub legal_input_dests: u64,
    pub tree_like: bool,
    /// Destination searches repeated because some switch could not be reached.
    pub restarts: u64,
    /// Destination LIDs that kept their SSSP routes (all of them fitted the layer).
    pub kept_dests: u64,
    /// Routed (switch, LID) paths that follow the tree from some switch on.
    pub tree_routes: u64,
    /// Routed (switch, LID) paths longer than minimal.
    pub nonminimal_routes: u64,
    /// Channels the cycle checks searched while the channel order was fitted (the routing
    /// kept).
    pub searched_channels: u64,
    /// Where every data route was legal under one Up*/Down* order and every route was made
    /// legal without a search ([`onelane::legal`]): the (switch, LID) routes changed.
    pub legal_rerouted: Option<u64>,
}

impl LayerReport {
    /// Minimal routes needed more than the one lane; the switch LIDs that did not fit are on
    /// Up*/Down* routes in layer 0, which acts as the escape layer.
    pub(crate) fn record_updown_fit(&mut self, ud: SwitchDestUpDown, budget: u8) {
        self.dfsssp_layers_needed = None;
        self.measured_up_to = budget;
        self.escape_layer = Some(0);
        self.updown_roots = ud.roots;
        self.escape_dests_initial = ud.illegal;
        self.reclaimed_dests = ud.minimal;
        self.escape_dests = ud.updown;
        self.escape_routes = ud.updown_routes;
        self.escape_routes_minimal = ud.updown_minimal;
        // Fitted switch LIDs whose routes are illegal Up*/Down* routes end on Up*/Down* trees too,
        // so that count can exceed the unfitted one: summed first (debug builds panicked).
        self.switch_dests_fitted =
            self.switch_dests_fitted + self.switch_dests_unfitted - ud.updown;
        self.switch_dests_changed += ud.minimal;
        self.switch_dests_unfitted = ud.updown;
    }

    /// Human-readable summary for the engine's log.
    pub fn log_lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        // With more lanes, one layer is taken without cycle breaking only where the CA routes
        // cycle through routes that carry no data alone (a fat tree with failed cables).
        let legal_one_layer = self.budget > 1
            && (self.one_lane.as_ref()).is_some_and(|o| o.legal_rerouted.is_some())
            && self.cuts == 0;
        v.push(match self.dfsssp_layers_needed {
            _ if legal_one_layer => String::from(
                "cycle breaking (DFSSSP) not run: the routes close cycles only through routes \
                 that carry no data, made legal in one layer",
            ),
            Some(n) => format!(
                "cycle breaking (DFSSSP) needs {n} layer(s); budget {} layer(s)",
                self.budget
            ),
            None if self.measured_up_to > self.budget => format!(
                "cycle breaking (DFSSSP) needs more than {} layers; budget {} layer(s)",
                self.measured_up_to, self.budget
            ),
            None => format!(
                "cycle breaking (DFSSSP) needs more than the budget of {} layer(s)",
                self.budget
            ),
        });
        if self.switch_dests_fitted + self.switch_dests_unfitted > 0 {
            v.push(format!(
                "switch LIDs: {} fit layer 0 with the CA routes ({} re-routed among minimal routes), \
                 {} left to cycle breaking or the escape",
                self.switch_dests_fitted, self.switch_dests_changed, self.switch_dests_unfitted
            ));
        }
        // (One-lane routing replaces cycle breaking: nothing cut to report.)
        v.extend((!legal_one_layer && self.one_lane.is_none()).then(|| {
            format!(
                "cycle breaking cut {} dependency edge(s){}, moving {} path(s) between layers",
                self.cuts,
                if self.batched_cutting {
                    " in batches"
                } else {
                    ""
                },
                self.moved_paths
            )
        }));
        if let Some((o, rerouted)) =
            (self.one_lane.as_ref()).and_then(|o| o.legal_rerouted.map(|r| (o, r)))
        {
            v.push(format!(
                "one lane: every data route (from switches with CAs to CA LIDs) is legal under \
                 one Up*/Down* order (root switch(es) {:?}) and kept as SSSP chose it; {} other \
                 route(s) made legal Up*/Down* routes instead, {} longer than minimal; {} \
                 destination LID(s) kept all their SSSP routes; no search",
                o.tree_roots, rerouted, o.nonminimal_routes, o.kept_dests
            ));
        } else if let Some(o) = &self.one_lane {
            v.push(format!(
                "one lane: balanced searches whose turns go forward in one channel order, \
                 spanning-tree routes (root switch(es) {:?}) where they cannot: {} of {} route(s) follow the tree \
                 from some switch on, {} route(s) longer than minimal, {} search(es) repeated; \
                 {} destination LID(s) kept their SSSP routes{}; order fitted to the SSSP routes: {}",
                o.tree_roots,
                o.tree_routes,
                self.routes,
                o.nonminimal_routes,
                o.restarts,
                o.kept_dests,
                if o.tree_like {
                    format!(
                        "; tree-like ({} destination LID(s) with legal Up*/Down* SSSP routes): \
                         fitting the channel order refused turns more than {} channels apart \
                         unchecked, its cycle checks searched {} channel(s)",
                        o.legal_input_dests,
                        onelane::TREE_LIKE_SPAN,
                        o.searched_channels
                    )
                } else {
                    String::new()
                },
                o.seeding,
            ));
        }
        if let Some(e) = self.escape_layer {
            v.push(format!(
                "escape: layer {e} reserved for Up*/Down* (root switch(es) {:?}); {} destination LID(s) \
                 overflowed, {} of them kept all minimal routes, {} use Up*/Down* hops on {} route(s) \
                 ({:.1}% of those minimal anyway)",
                self.updown_roots,
                self.escape_dests_initial,
                self.reclaimed_dests,
                self.escape_dests,
                self.escape_routes,
                pct(self.escape_routes_minimal, self.escape_routes)
            ));
        }
        v.push(format!(
            "layers used: {} of {} ({} before balancing){}; routes per layer: {:?}",
            self.layers_used,
            self.budget,
            self.layers_before_balancing,
            if self.spare_lane {
                "; one lane left free for multicast"
            } else {
                ""
            },
            self.routes_per_layer
        ));
        v.push(format!(
            "routes: {} (switch, LID) paths, {} on escape routes, {:.2}% minimal",
            self.routes,
            self.escape_routes,
            100.0 * self.minimal_fraction
        ));
        v.push(format!(
            "deadlock removal took {:.3} s (CDG {:.3} s, cycle breaking {:.3} s, escape {:.3} s)",
            self.seconds_total, self.seconds_cdg, self.seconds_breaking, self.seconds_escape
        ));
        v
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}
