//! dfsssp-rs: deadlock-free, globally balanced single-source-shortest-path routing for InfiniBand.
//!
//! The core (everything but [`opensm`]) is pure Rust and knows nothing of OpenSM:
//! - [`fabric`]: the fabric model (switches, CAs, routers, ports, links, LIDs, LMC)
//! - [`graph`]: the switch graph routing works on (dense ids), and hop distances
//! - [`routing`]: forwarding tables, hop counts, virtual layers; walking and traversing them
//! - [`balance`]: load balancing over minimal routes, shared by every balanced routing
//! - [`sssp`]: balanced SSSP routing (Hoefler et al.)
//! - [`dfsssp`]: channel dependency graphs, cycle breaking over virtual layers (Domke et al.)
//! - [`dor`]: torus and mesh coordinates recognised from the switch graph, and dimension-order
//!   routes over them
//! - [`updown`]: Up*/Down* routes, the deadlock-free escape when layers run out
//! - [`verify`]: an independent check of completeness and deadlock freedom, and the every-lane
//!   deadlock check that judges any routing
//! - [`metrics`]: connectivity, hops, edge forwarding index, effective bisection bandwidth
//! - [`lid`]: LID assignment for multipath with LMC (Nienaber et al.)
//! - [`reroute`]: incremental re-routing after a fabric change, keeping every surviving path and
//!   its SL (Bermúdez et al.), and what changed between two routings
//! - [`multicast`]: balanced multicast spanning trees, their MFT port masks, and the deadlock
//!   check of multicast together with the unicast layers
//! - [`state`]: the routing state file that carries a routing across SM restarts and takeovers
//! - [`engine`]: the routing engines `sssp-rs` and `dfsssp-rs` as used by every front
//!
//! Fronts: [`opensm`] (the plug-in, feature `opensm`; the only module allowed `unsafe`), [`io`]
//! (ibnetdiscover, ibsim net and OpenSM dump files, the path-SL table, the plug-in's run record),
//! [`topo`] (topology generators) and the `dfsssp-rs` command-line tool.
//!
//! # The papers, as cited in this crate
//!
//! | cited as | paper |
//! | --- | --- |
//! | Hoefler et al. | T. Hoefler, T. Schneider, A. Lumsdaine: *Optimized Routing for Large-Scale InfiniBand Networks*, HOTI 2009 |
//! | Domke et al. | J. Domke, T. Hoefler, W. E. Nagel: *Deadlock-Free Oblivious Routing for Arbitrary Topologies*, IPDPS 2011 |
//! | Nienaber et al. | W. Nienaber, X. Yuan, Z. Duan: *On LID Assignment in InfiniBand Networks*, ANCS 2007 |
//! | Bermúdez et al. | A. Bermúdez, R. Casado, F. J. Quiles, J. Duato: *Fast Routing Computation on InfiniBand Networks*, IEEE TPDS 2006 |
//! | Vishnu et al. | A. Vishnu, A. Mamidala, H.-W. Jin, D. K. Panda: *Performance Modeling of Subnet Management on Fat Tree InfiniBand Networks using OpenSM*, OSU tech. report 2005 |

#![deny(unsafe_code)]

// The OpenSM adapter keeps every panic out of OpenSM with `catch_unwind` around each callback (a
// panic unwinding into C is undefined behaviour). Under `panic = "abort"` catch_unwind catches
// nothing and a bug in the plug-in would abort the subnet manager: refuse to build so.
#[cfg(all(feature = "opensm", panic = "abort"))]
compile_error!(
    "the opensm feature needs panic = \"unwind\": every OpenSM callback relies on catch_unwind \
     to turn a panic into a logged failure instead of aborting opensm"
);

pub mod balance;
pub(crate) mod bits;
pub mod dfsssp;
pub mod dor;
pub mod engine;
pub mod fabric;
pub mod graph;
pub mod io;
pub mod lid;
pub mod metrics;
pub mod multicast;
pub(crate) mod par;
// The only module allowed `unsafe`: the FFI boundary with OpenSM.
#[cfg(feature = "opensm")]
#[allow(unsafe_code)]
pub mod opensm;
pub mod reroute;
pub mod routing;
pub mod sssp;
pub mod state;
#[cfg(test)]
pub(crate) mod testkit;
pub mod topo;
pub mod traffic;
pub(crate) mod union_find;
pub mod updown;
pub mod verify;
