//! What can go wrong in the adapter, as types, and the one place their log texts are written.
//!
//! A callback that fails returns an [`AdapterError`]; `abi::guarded` logs it as one line tagged
//! with [`Code::Failed`](super::log::Code) (`ERR DF01: <callback> failed: <error>`) and OpenSM
//! tries its next engine. The codes say which kind of problem a line reports (for monitoring
//! rules); these types say what exactly failed. [`MissingSymbol`] is the exception: outside
//! OpenSM there is no log, so it goes to stderr and no engine is registered.

use std::ffi::CStr;

use thiserror::Error;

use super::raw::{McastTableError, SwitchLimits};
#[cfg(feature = "test-hooks")]
use super::ENV_INJECT_FAILURE;
use crate::engine::EngineError;
use crate::fabric::FabricError;
use crate::multicast::McError;

/// Why a callback failed.
#[derive(Debug, Error)]
pub(crate) enum AdapterError {
    #[error("cannot model the subnet: {0}")]
    Subnet(#[from] FabricError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("the routing does not fit OpenSM's switches: {0}")]
    Plan(#[from] PlanError),
    #[error("writing the tables failed: {0}")]
    Write(#[from] WriteError),
    #[error("ucast_build_fwd_tables called without a routing computed by build_lid_matrices")]
    NothingComputed,
    #[error("OpenSM's functions were not resolved")]
    NoApi,
    #[cfg(feature = "test-hooks")]
    #[error("injected failure ({ENV_INJECT_FAILURE}=error, a test hook)")]
    Injected,
    #[error("no unicast routing of this engine is in place")]
    NoRouting,
    #[error("multicast: {0}")]
    Multicast(#[from] McastError),
}

/// Why a routing does not fit OpenSM's switches (`tables::plan`): nothing was written.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum PlanError {
    #[error("OpenSM has {osm} switches but {modelled} could be modelled")]
    SwitchCount { osm: usize, modelled: usize },
    #[error("the routing has tables for {tables} switches, the fabric has {switches}")]
    TableCount { tables: usize, switches: usize },
    #[error("switch {name} has no OpenSM switch object")]
    NoSwitchObject { name: String },
    #[error("switch {name}: {fault}")]
    Switch { name: String, fault: SwitchFault },
}

/// What one switch's OpenSM tables cannot take.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub(crate) enum SwitchFault {
    #[error("OpenSM prepared no LIDs")]
    NoLids,
    #[error(
        "tables smaller than max LID {} (new_lft {} bytes, {} hop rows)",
        .0.max_lid_ho, .0.lft_size, .0.num_hops
    )]
    TablesTooSmall(SwitchLimits),
    #[error("no ports")]
    NoPorts,
    #[error("LID {lid} is beyond its table (max LID {max_lid})")]
    LidBeyondTable { lid: u16, max_lid: u16 },
    #[error("LID {lid} routed to port {port}, but the switch has ports 0..{num_ports}")]
    PortBeyondSwitch { lid: usize, port: u8, num_ports: u8 },
    #[error("LID {lid} is routed but has no hop count")]
    NoHopCount { lid: usize },
}

/// Why the planned tables could not be written (`tables::write`). The faults found once writing
/// began say that every switch's new tables were reset.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum WriteError {
    #[error("switch 0x{guid:016x} disappeared since routing")]
    Vanished { guid: u64 },
    #[error("switch 0x{guid:016x} is planned twice")]
    PlannedTwice { guid: u64 },
    #[error("switch 0x{guid:016x} changed since routing ({planned:?} planned, {now:?} now)")]
    Changed {
        guid: u64,
        planned: SwitchLimits,
        now: SwitchLimits,
    },
    #[error(
        "new_lft of switch 0x{guid:016x} vanished; the new tables of all {switches} switches \
         were reset"
    )]
    NoLft { guid: u64, switches: usize },
    #[error(
        "out of memory for the hop counts of switch 0x{guid:016x}, LID {lid}{}; the new tables \
         of all {switches} switches were reset",
        if *.injected { " (injected failure, a test hook)" } else { "" }
    )]
    NoMemory {
        guid: u64,
        lid: u16,
        /// The failure was the test hook's, not `malloc`'s.
        injected: bool,
        switches: usize,
    },
    #[error(
        "no switch graph for the hop counts: {error}; the new tables of all {switches} switches \
         were reset"
    )]
    Graph { error: String, switches: usize },
    #[error(
        "injected failure (a test hook) after {written} of {switches} switches' new_lft; the new \
         tables of all {switches} switches were reset"
    )]
    Injected { written: usize, switches: usize },
}

/// Why a multicast tree could not be computed or written (`mcast::build_stree`).
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum McastError {
    #[error(transparent)]
    Groups(#[from] McError),
    #[error("no multicast routing")]
    NotComputed,
    #[error("switch 0x{guid:016x} is gone")]
    SwitchGone { guid: u64 },
    #[error("MLID 0x{mlid:04X}: switch 0x{guid:016x}, port {port}: {fault:?}")]
    Table {
        mlid: u16,
        guid: u64,
        port: u8,
        fault: McastTableError,
    },
}

/// A function the plug-in needs is not in the process it was loaded into (not OpenSM, or an
/// OpenSM without it).
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[error("symbol {} not found in this process", .0.to_string_lossy())]
pub(crate) struct MissingSymbol(pub &'static CStr);

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts read as the adapter logged them when they were format strings at each site.
    #[test]
    fn messages_read_as_before() {
        let lim = SwitchLimits {
            max_lid_ho: 3,
            num_ports: 5,
            lft_size: 3,
            num_hops: 4,
        };
        let plan = AdapterError::from(PlanError::Switch {
            name: "sw1".into(),
            fault: SwitchFault::TablesTooSmall(lim),
        });
        assert_eq!(
            plan.to_string(),
            "the routing does not fit OpenSM's switches: switch sw1: tables smaller than max LID 3 \
             (new_lft 3 bytes, 4 hop rows)"
        );
        assert_eq!(
            PlanError::Switch {
                name: "sw0".into(),
                fault: SwitchFault::PortBeyondSwitch {
                    lid: 3,
                    port: 3,
                    num_ports: 3
                }
            }
            .to_string(),
            "switch sw0: LID 3 routed to port 3, but the switch has ports 0..3"
        );
        let oom = |injected| WriteError::NoMemory {
            guid: 0x10,
            lid: 7,
            injected,
            switches: 2,
        };
        assert_eq!(
            AdapterError::from(oom(true)).to_string(),
            "writing the tables failed: out of memory for the hop counts of switch \
             0x0000000000000010, LID 7 (injected failure, a test hook); the new tables of all 2 \
             switches were reset"
        );
        assert_eq!(
            oom(false).to_string(),
            "out of memory for the hop counts of switch 0x0000000000000010, LID 7; the new tables \
             of all 2 switches were reset"
        );
        assert_eq!(
            WriteError::Changed {
                guid: 0x11,
                planned: lim,
                now: lim
            }
            .to_string(),
            format!(
                "switch 0x0000000000000011 changed since routing ({lim:?} planned, {lim:?} now)"
            )
        );
        assert_eq!(
            AdapterError::from(McastError::Table {
                mlid: 0xC001,
                guid: 0x12,
                port: 9,
                fault: McastTableError::NoPort {
                    port: 9,
                    num_ports: 5
                }
            })
            .to_string(),
            "multicast: MLID 0xC001: switch 0x0000000000000012, port 9: NoPort { port: 9, \
             num_ports: 5 }"
        );
        assert_eq!(
            MissingSymbol(c"osm_log").to_string(),
            "symbol osm_log not found in this process"
        );
    }
}
