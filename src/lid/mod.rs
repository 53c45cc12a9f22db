//! LID assignment for multipath with LMC (Nienaber, Yuan, Duan).
//!
//! Nienaber et al. separate *routing* (choosing paths) from *LID assignment* (realising the paths with
//! as few LIDs as possible: one LID can steer traffic only one way out of each switch). This module
//! holds
//! - [`assign`]: the single-destination LID assignment problem over any set of paths — splits,
//!   configurations, the split graph, the five heuristics of the paper (greedy, split-merge/S,
//!   split-merge/L, color/S, color/L), an exhaustive optimum for small instances, LMC rounding and
//!   network-wide totals;
//! - [`routes`]: the routing schemes of the paper's evaluation on a [`crate::graph::SwitchGraph`]
//!   with machines (Up*/Down*-constrained shortest-widest, path selection by k-shortest Up*/Down*
//!   paths and most-loaded-link-first, and the baselines fully explicit routing and destination
//!   renaming);
//! - [`study`]: the reproducible experiment of §5 — random irregular fabrics, Tables 1–3 — with
//!   [`study::run_study`] as the entry point.
//!
//! `routes` and `study` serve the `dfsssp-rs lid-study` command alone and sit behind the cargo
//! feature `study` (default on); the engine uses `assign` and `multipath` only, and the plug-in is
//! built without the study (`--no-default-features --features opensm`).

pub mod assign;
pub mod multipath;
#[cfg(feature = "study")]
pub mod routes;
#[cfg(feature = "study")]
pub mod study;

pub use assign::{
    assign, assign_network, lids_for, lmc_for, Heuristic, Hop, LidAssignment, NetworkLids, PathSet,
    SplitGraph,
};
#[cfg(feature = "study")]
pub use study::{run_study, StudyConfig, StudyResult};

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LidError {
    #[error("path {path} has no hops")]
    EmptyPath { path: usize },
    #[error("path {path} has weight 0")]
    ZeroWeight { path: usize },
    #[error("path {path} visits node {node} twice: no LID can realise a path that loops")]
    RepeatedNode { path: usize, node: u32 },
    #[error(
        "{needed} LIDs needed for one destination, more than the 128 (LMC 7) InfiniBand allows"
    )]
    TooManyLids { needed: u32 },
    #[error("assignment covers {assigned} paths, the path set has {paths}")]
    SizeMismatch { paths: usize, assigned: usize },
    #[error("path {path} got LID offset {lid}, but only {num_lids} LIDs are assigned")]
    LidOutOfRange {
        path: usize,
        lid: u32,
        num_lids: u32,
    },
    #[error("LID offset {lid} is used by no path")]
    UnusedLid { lid: u32 },
    #[error("paths {a} and {b} share LID offset {lid} but split at node {node}")]
    SplitWithinLid {
        lid: u32,
        a: usize,
        b: usize,
        node: u32,
    },
    #[error("graph edge {edge} is a self-loop or names a vertex out of range")]
    BadGraph { edge: usize },
    #[error("unknown heuristic {0:?} (greedy, s-m/S, s-m/L, color/S, color/L)")]
    UnknownHeuristic(String),
    #[error("too large: {0}")]
    TooLarge(&'static str),
    #[error("invalid study configuration: {0}")]
    InvalidConfig(String),
    #[error("fabric: {0}")]
    Fabric(String),
    #[error("routing scheme {scheme} produced an invalid route from machine {src} to machine {dst}: {why}")]
    BadRoute {
        scheme: &'static str,
        src: u32,
        dst: u32,
        why: String,
    },
}
