//! Why a routing was computed from scratch: one type for every reason, so that code branches on
//! the reason and the log says it in words.

use thiserror::Error;

use super::EngineKind;
use crate::reroute::FullReason;

/// Why a routing was computed from scratch rather than re-routed from the previous one.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum FullWhy {
    /// [`run`] called directly.
    #[error("computed from scratch")]
    Direct,
    #[error("no previous routing")]
    NoPrevious,
    #[error("incremental re-routing is off")]
    IncrementalOff,
    /// The command line asked (`route --full`).
    #[error("asked for (--full)")]
    Asked,
    /// The admin asked OpenSM to re-route (console `reroute`): no heavy sweep before the run.
    #[error(
        "OpenSM re-routes without a heavy sweep (the admin asked: console `reroute`): full \
         re-balance"
    )]
    Reroute,
    /// OpenSM's `cn_guid_file` or `io_guid_file` changed.
    #[error("the compute or I/O node lists changed: full computation")]
    NodeListsChanged,
    #[error("the multicast lane setting changed")]
    McastLaneChanged,
    #[error(
        "the configuration changed ({kind_before} with {layers_before} layer(s) before, {kind} \
         with {layers} now)"
    )]
    ConfigChanged {
        kind_before: EngineKind,
        layers_before: u8,
        kind: EngineKind,
        layers: u8,
    },
    #[error("{0}")]
    Fabric(String),
    /// The change itself cannot be re-routed incrementally ([`crate::reroute`]).
    #[error("not incremental: {0}")]
    NotIncremental(#[from] FullReason),
    /// The incremental routes' highest channel load exceeds a full computation's estimate by
    /// more than [`RerouteConfig::max_load_growth_pct`].
    #[error(
        "re-balancing: the incremental routes' highest channel load {max_load} exceeds a full \
         computation's estimate {estimate} by more than {pct}% (the last full computation's \
         {last_full}, scaled by the fabric's lower bound {bound_before} -> {bound})"
    )]
    Rebalance {
        max_load: u64,
        estimate: u64,
        pct: u32,
        last_full: u64,
        bound_before: u64,
        bound: u64,
    },
    #[error("the incremental routes failed verification: {0}")]
    VerificationFailed(String),
}
