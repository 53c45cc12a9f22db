//! dfsssp-rs: deadlock-free, globally balanced single-source-shortest-path routing for InfiniBand.
//!
//! The core (everything but [`opensm`]) is pure Rust and knows nothing of OpenSM:
//! - [`fabric`]: the fabric model (switches, CAs, routers, ports, links, LIDs, LMC) and its switch graph
//! - [`routing`]: forwarding tables, hop counts, virtual layers, and walking them
//! - [`sssp`]: balanced SSSP routing (Hoefler et al., seed 004)
//! - [`dfsssp`]: channel dependency graphs, cycle breaking over virtual layers (Domke et al., seed 003)
//! - [`updown`]: Up*/Down* routes, the deadlock-free escape when layers run out
//! - [`verify`]: an independent check of completeness and deadlock freedom
//! - [`metrics`]: connectivity, hops, edge forwarding index, effective bisection bandwidth
//! - [`lid`]: LID assignment for multipath with LMC (Nienaber et al., seed 000)
//! - [`engine`]: the routing engines `sssp-rs` and `dfsssp-rs` as used by every front
//!
//! Fronts: [`opensm`] (the plug-in, the only `unsafe` code), [`io`] (ibnetdiscover, ibsim net and
//! OpenSM dump files), [`topo`] (topology generators) and the `dfsssp-rs` command-line tool.

#![deny(unsafe_code)]

pub mod balance;
pub mod dfsssp;
pub mod engine;
pub mod fabric;
pub mod graph;
pub mod io;
pub mod lid;
pub mod metrics;
// The only module allowed `unsafe`: the FFI boundary with OpenSM.
#[cfg(feature = "opensm")]
#[allow(unsafe_code)]
pub mod opensm;
pub mod routing;
pub mod sssp;
pub mod topo;
pub mod updown;
pub mod verify;
