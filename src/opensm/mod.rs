//! The OpenSM plug-in: the only module allowed `unsafe` code (`#![deny(unsafe_code)]` elsewhere).
//! Raw OpenSM objects are wrapped once in [`raw`]; reading the subnet ([`subnet`]) and writing
//! the tables ([`tables`]) are safe code over those wrappers. What stays unsafe here is the C
//! boundary itself (the exported descriptor and the callbacks' raw arguments in [`abi`], the lock
//! vouched for where a callback starts), each block with the reason it is sound.
//!
//! Rooms: this file holds the engine context and its state; [`abi`] the descriptor and the
//! `extern "C"` callbacks, trampolines into the context; [`run`] the routing run
//! (`build_lid_matrices`, `ucast_build_fwd_tables`); [`settings`] the settings and what else a
//! run reads (lanes, SL range, re-route settings, compute and I/O lists); [`after_upload`] the
//! work once the tables are up (hop counts, change log, complete check, metrics, dumps);
//! [`persist`] the routing state across restarts and takeovers; [`qos`] the SL range, `path_sl`
//! and `update_sl2vl` ([`sl`]: SL-to-VL tables); [`mcast`] `mcast_build_stree`; [`error`] what
//! can fail, and its log texts; [`log`] OpenSM's log and the `DFxx` codes; [`ffi`] the bindings;
//! [`heap`] the plug-in's own heap inside opensm.
//!
//! OpenSM (>= 3.3.23) loads `libdfsssp_rs.so` for `event_plugin_name dfsssp_rs` in its config and
//! reads the exported symbol [`osm_event_plugin`]. Its `create()` registers two routing engines,
//! `sssp-rs` and `dfsssp-rs`, with `osm_register_external_routing_engine`; `routing_engine
//! sssp-rs` (or `dfsssp-rs`) then selects one.
//!
//! Per routing run OpenSM calls, under its lock:
//! 1. `build_lid_matrices`: reads the subnet ([`subnet`]), runs the engine ([`crate::engine`])
//!    while OpenSM's LID matrix of hop counts is written beside it ([`lid_matrix`]), checks the
//!    result fits every switch ([`tables::plan`]). All computation happens here.
//! 2. `ucast_build_fwd_tables`: writes `new_lft` ([`tables::write`]) and, with the
//!    routing log flag (0x40), the engine's dump files (`crate::io::path_sl`,
//!    `crate::io::run_record`), once OpenSM reports the unicast routing done.
//!
//! Across runs the context keeps the routing it uploaded last; the next `build_lid_matrices`
//! re-routes from it ([`crate::engine::run_from`], [`crate::reroute`]): only the paths that
//! crossed a vanished link or switch, or lead to a new LID, are routed again, and every other
//! path keeps its LFT entries and SL. A full computation happens when there is no previous
//! routing, the lanes or the engine changed, the change cannot be made incrementally, the
//! balance degraded too far, or OpenSM routes without a heavy sweep before it (the admin's
//! console `reroute`, seen as a routing run with no `HEAVY_SWEEP_START` event since the last).
//! Each run logs why. After the upload (at `UCAST_ROUTING_DONE`) the context logs what changed
//! from the previous routing: CA pairs re-routed, SLs changed, LFT blocks changed. If a run fails,
//! OpenSM's next engine replaces the tables, so the previous routing is dropped.
//!
//! Across processes ([`persist`], [`crate::state`]): after every upload the routing is saved to a
//! state file (default next to OpenSM's `guid2lid`); a process's first routing run (a restart,
//! a standby's takeover) adopts it as the previous routing when it fits the discovered fabric, and
//! so does a run that finds the file written by another SM since (an HA pair's shared file).
//!
//! A negative return makes OpenSM try its next engine, then minhop. dfsssp-rs also answers
//! `path_sl` (the SL of the path's layer) and `update_sl2vl` (SL i -> VL i for every layer's SL;
//! OpenSM calls it only with QoS on). With QoS on and at least two lanes, dfsssp-rs leaves one to
//! multicast: layer i travels on SL i + 1 (and VL i + 1), and SL 0 / VL 0 carry the multicast
//! groups of SL 0 (the IPoIB broadcast group's default) with no unicast dependency
//! (`DFSSSP_RS_MCAST_LANE=1`: only when the layers leave a lane free; `0`: never). Both engines build the multicast
//! spanning trees themselves (`mcast_build_stree`, [`mcast`]): balanced across groups and
//! checked deadlock-free together with the unicast layers of each group's VL (a VL where they
//! still close a loop is logged as `ERR DF05`). OpenSM's default would build them from the hop
//! matrix (`osm_switch_recommend_mcast_path`, the first port with fewest hops), ignoring load and
//! layers. `ucast_dump_tables` is not set: OpenSM 3.3.23 never calls it.
//!
//! Threads. OpenSM calls `build_lid_matrices` and `ucast_build_fwd_tables` from its state
//! manager inside `osm_ucast_mgr_process`, which holds the subnet lock (`p_lock`) exclusively;
//! that is what makes [`raw::LockedSubnet`] sound. `path_sl` is called from the SA's dispatcher
//! threads answering PathRecord queries, under the same lock taken *shared*
//! (`cl_plock_acquire`): it never overlaps a routing run, but several SA threads may ask at once.
//! So an engine's context is `Sync`: its routing state sits behind an `RwLock` (routing runs
//! take it for writing, `path_sl` and `update_sl2vl` for reading) and its log handle goes through
//! `osm_log`, which serialises writers itself. The context never hands out OpenSM pointers: the
//! active routing is plain Rust data copied out of the subnet.
//!
//! Nothing may harm the SM: every callback runs inside `catch_unwind`; a panic or error is logged
//! at ERROR and reported to OpenSM as a failure (`path_sl` then returns OpenSM's hint).
//!
//! Settings (read at every routing run; [`settings`]: `dfsssp-rs.conf` next to opensm.conf, then
//! `event_plugin_options`, then the environment variable named here):
//! - `max_lanes` (`DFSSSP_RS_MAX_LANES=N`): dfsssp-rs uses at most N virtual lanes (below what
//!   the ports offer).
//! - `bisection_patterns` (at most 100,000), `seed`: effective bisection bandwidth over N random
//!   patterns, logged once the tables are up (default 0: skipped).
//! - `incremental` (`DFSSSP_RS_INCREMENTAL=0`): compute every routing from scratch (default 1:
//!   re-route incrementally).
//! - `rebalance_pct`: full re-balance when a change raised the incremental routes' highest
//!   channel load to more than N% above a full computation's estimate (default 50).
//! - `mcast_lane` (0|1|2): leave a lane to multicast never, only when the layers need fewer
//!   lanes than there are, or always (default 2; costs under 1% of Λ on the 6x6x6 torus).
//!
//! - `layer_sls` (`A-B`, within 0..=14): the SLs, and VLs of the same numbers, the layers may
//!   use. OpenSM's SL-to-VL entries for other SLs stay the admin's, and path_sl keeps a hint
//!   outside the range (a QoS level's or partition's SL); hint 0 (nothing configured) gets the
//!   layer's SL. Without it, every SL hint is replaced (stock dfsssp's behaviour), logged once
//!   per SL.
//!
//! - `state_file` (`DFSSSP_RS_STATE_FILE`): where the routing state is kept (an absolute path,
//!   or `none`; default `$OSM_CACHE_DIR/dfsssp-rs.state`, i.e. `/var/cache/opensm/`).
//!
//! - `adopt_switch_tables` (`DFSSSP_RS_ADOPT_SWITCH_TABLES`, 0 or 1, default 0): at this
//!   process's first routing run, with no state file to adopt, read the switches' LFTs back
//!   ([`readback`]) and continue from the routing they hold (its layers derived from it,
//!   [`crate::engine::adopt_tables`]): the one line an HA pair without shared storage needs.
//!
//! - `canonical_sls` (`DFSSSP_RS_CANONICAL_SLS`, 0 or 1, default 0): every routing, also an
//!   incremental re-route, gets the layers the canonical rule derives from its tables
//!   ([`crate::engine::RerouteConfig::canonical_layers`]), so that a standby with
//!   `adopt_switch_tables` answers the same SLs at a takeover whatever re-routes came before;
//!   the price is that a fault may move SLs of paths it did not touch.
//!
//! A bad value or an unknown key is logged (`ERR DF06`, with its source and the accepted range)
//! and the default applies: a routine config mistake never stops routing.
//!
//! `DFSSSP_RS_INJECT_FAILURE=panic|error|error-once:ENGINE|lid-matrix|write` is a **test hook**,
//! read only in builds with the cargo feature `test-hooks` (the tests'; never the packaged
//! plug-in): it makes `build_lid_matrices` panic or fail (every time, or that engine's first run), or fail halfway through the hop counts (as if OpenSM ran
//! out of memory), or `ucast_build_fwd_tables` fail halfway through the switches' LFTs, to check
//! that OpenSM falls back and no half-written table survives.

// Every unsafe operation in its own block with the reason it is sound.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod abi;
mod after_upload;
mod error;
mod ffi;
mod heap;
mod lid_matrix;
mod log;
mod mcast;
mod persist;
mod qos;
mod raw;
mod readback;
mod run;
mod settings;
mod sl;
mod subnet;
mod tables;

pub use self::abi::{osm_event_plugin, PluginDecl};
pub use crate::io::path_sl::PATH_SL_FILE;
pub use crate::io::run_record::{RunRecord, RUN_FILE};

use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU16};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use self::error::AdapterError;
use self::log::OsmLog;
use self::qos::SlRange;
use self::settings::ClassLists;
use crate::engine::{EngineKind, Routed};

/// Environment variable capping dfsssp-rs's virtual lanes.
pub const ENV_MAX_LANES: &str = "DFSSSP_RS_MAX_LANES";
/// Test hook: `panic` or `error` makes `build_lid_matrices` fail, `write` makes
/// `ucast_build_fwd_tables` fail after writing half the entries.
#[cfg(feature = "test-hooks")]
pub const ENV_INJECT_FAILURE: &str = "DFSSSP_RS_INJECT_FAILURE";

/// The failure `DFSSSP_RS_INJECT_FAILURE` asks for, in builds with the `test-hooks` feature.
#[cfg(feature = "test-hooks")]
fn injected_failure() -> Option<String> {
    std::env::var(ENV_INJECT_FAILURE).ok()
}

/// Whether `hook` is `error-once:NAME` for engine `name` and this is the first time it is
/// asked: that engine's first routing run fails (OpenSM's next engine routes), later ones run.
#[cfg(feature = "test-hooks")]
fn fail_once(hook: Option<&str>, name: &str) -> bool {
    static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    hook.and_then(|h| h.strip_prefix("error-once:")) == Some(name)
        && !FIRED.swap(true, std::sync::atomic::Ordering::Relaxed)
}

/// Without the `test-hooks` feature no failure can be injected.
#[cfg(not(feature = "test-hooks"))]
fn injected_failure() -> Option<String> {
    None
}

pub const ENV_BISECTION_PATTERNS: &str = "DFSSSP_RS_BISECTION_PATTERNS";
/// `0` turns incremental re-routing off (every heavy sweep computes from scratch).
pub const ENV_INCREMENTAL: &str = "DFSSSP_RS_INCREMENTAL";
/// Percent by which an incremental re-route's highest channel load may exceed the last full
/// computation's before a full re-balance.
pub const ENV_REBALANCE_PCT: &str = "DFSSSP_RS_REBALANCE_PCT";
pub const ENV_SEED: &str = "DFSSSP_RS_SEED";
/// `0` keeps every lane for unicast layers, `1` leaves one to multicast only when the layers need
/// fewer than there are, `2` (default) always leaves one (see
/// [`EngineConfig::mcast_lane`](crate::engine::EngineConfig::mcast_lane)).
pub const ENV_MCAST_LANE: &str = "DFSSSP_RS_MCAST_LANE";
/// `one_lane_candidate` (0 or 1, default 1): with QoS on, whether the one-lane search's routing
/// may replace the layers' when it measures a higher Λ.
pub const ENV_ONE_LANE_CANDIDATE: &str = "DFSSSP_RS_ONE_LANE_CANDIDATE";
/// `dor_candidate` (0 or 1, default 1): with QoS on, on a torus or mesh, whether dimension-order
/// routes may replace the routing when they measure a higher Λ.
pub const ENV_DOR_CANDIDATE: &str = "DFSSSP_RS_DOR_CANDIDATE";
/// `A-B`: the SLs (and VLs) the layers may use; QoS policy keeps the others.
pub const ENV_LAYER_SLS: &str = "DFSSSP_RS_LAYER_SLS";
/// Where the routing state is kept across restarts (an absolute path, or `none`).
pub const ENV_STATE_FILE: &str = "DFSSSP_RS_STATE_FILE";
/// `adopt_switch_tables` (0 or 1, default 0): read the switches' LFTs back when there is no
/// routing to continue from.
pub const ENV_ADOPT_SWITCH_TABLES: &str = "DFSSSP_RS_ADOPT_SWITCH_TABLES";
/// `canonical_sls` (0 or 1, default 0): every routing's SLs by the canonical rule, also after
/// incremental re-routes.
pub const ENV_CANONICAL_SLS: &str = "DFSSSP_RS_CANONICAL_SLS";

/// One registered engine. OpenSM hands its address back as the callbacks' `context`.
struct EngineCtx {
    kind: EngineKind,
    name: &'static CStr,
    osm: *mut ffi::osm_opensm_t,
    log: OsmLog,
    state: RwLock<State>,
    /// A heavy sweep started since the last routing run. OpenSM routes without one only when
    /// the admin asks it to (console `reroute`): that run computes from scratch.
    heavy_sweep: AtomicBool,
    /// The last line logged about OpenSM's routing options (logged again only when it changes).
    options_line: std::sync::Mutex<String>,
    /// The compute and I/O GUID lists of the last routing run (a change means a full
    /// computation, and a new log line).
    class_lists: std::sync::Mutex<Option<ClassLists>>,
    /// The routing state file: whether it was looked at, what this process wrote. One for the
    /// plug-in, shared by both engines (`routing_engine dfsssp-rs,sssp-rs`): one writer, whose
    /// writes land in order, and neither takes the other's file for another SM's.
    persist: std::sync::Arc<std::sync::Mutex<persist::Persist>>,
}

impl Drop for EngineCtx {
    fn drop(&mut self) {
        // A state write in flight logs through OpenSM: let it finish while OpenSM is there.
        self.persist
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finish();
    }
}

#[derive(Default)]
struct State {
    /// Computed by build_lid_matrices, consumed by ucast_build_fwd_tables.
    pending: Option<Pending>,
    /// The routing OpenSM currently uses, for path_sl and update_sl2vl.
    active: Option<Active>,
}

struct Pending {
    /// The routing computed (with its summary), for the fabric read of the subnet.
    routed: Routed,
    /// OpenSM's `dump_files_dir`.
    dump_dir: Option<PathBuf>,
    plan: tables::Plan,
    /// Rows of OpenSM's LID matrix written while routing ([`lid_matrix`]).
    hop_rows: u64,
    routing_log: bool,
    started: Instant,
    sls: SlRange,
    /// The routing the switches held before (without its summary), to log what changed once the
    /// new one is up.
    previous: Option<Routed>,
    /// Where to save the routing once it is up ([`persist`]).
    state_path: Option<PathBuf>,
}

struct Active {
    /// The routing OpenSM uses. Its hop counts are dropped (an empty table) while OpenSM uploads
    /// the tables, rebuilt from the tables ([`Active::restore_hops`]) once the upload is done, or
    /// before the next re-route. Its summary is held in [`Active::summary`] instead (`None`
    /// here).
    routed: Routed,
    dump_dir: Option<PathBuf>,
    /// The engine's dumps are due (routing log flag on); written when OpenSM reports the unicast
    /// routing done, so that writing them is not part of the routing phase.
    dumps_due: AtomicBool,
    /// The metrics asked for (bisection patterns) are due: measured once, after the upload.
    metrics_due: AtomicBool,
    /// Each SL-to-VL problem is logged once per routing, not once per port.
    warned_few_vls: AtomicBool,
    warned_admin_table: AtomicBool,
    /// The routing's channel loads and CDG edges, for the next re-route: made exact after the
    /// upload ([`engine::settle_summary`](crate::engine::settle_summary)) under the read lock,
    /// while path_sl answers.
    summary: std::sync::Mutex<crate::reroute::RoutingSummary>,
    /// What the switches held before, until the change has been logged.
    previous: std::sync::Mutex<Option<Routed>>,
    /// The multicast trees built over this routing.
    mcast: std::sync::Mutex<mcast::McastState>,
    /// Where the layers' SLs start and what path_sl leaves to the admin's QoS policy.
    sls: SlRange,
    /// SLs of OpenSM's hint that path_sl kept or replaced, each logged once (bit per SL).
    hints_kept: AtomicU16,
    hints_replaced: AtomicU16,
    /// Admin SL-to-VL entries outside the layers that share a layer's VL, logged once.
    warned_shared_vl: AtomicBool,
    /// Where the routing state is saved, and whether this routing still has to be.
    state_path: Option<PathBuf>,
    state_due: AtomicBool,
}

impl Active {
    /// Rebuilds the hop counts dropped for the upload (exactly the engine's: they are the
    /// tables' path lengths).
    fn restore_hops(&mut self) {
        if self.hops_dropped() {
            let r = &mut self.routed;
            r.routing.hops = crate::routing::walked_hops(&r.graph, &r.routing.lft);
        }
    }

    /// Whether the hop counts were dropped for the upload: the table is not the tables' shape.
    fn hops_dropped(&self) -> bool {
        let r = &self.routed;
        r.routing.hops.shape() != (r.graph.num_switches(), r.routing.lft.stride())
    }

    /// SL (= VL) of layer 0.
    fn base_sl(&self) -> u8 {
        self.sls.first + self.routed.sl_offset
    }

    /// The routing to continue from once it is no longer the active one: hop counts and summary
    /// back in place.
    fn into_routed(mut self) -> Routed {
        self.restore_hops();
        let summary = self.summary.into_inner().unwrap_or_else(|e| e.into_inner());
        Routed {
            summary: Some(summary),
            ..self.routed
        }
    }
}

impl EngineCtx {
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// A test fixture: sw0 -- sw1, ca0 on sw0 (LID 3), ca1 on sw1 (LID 4); layer = 1 + source
/// switch.
#[cfg(test)]
fn ctx_with_layers(layers: bool) -> EngineCtx {
    use crate::routing::SwitchLidTable;
    let f = crate::testkit::two_switches(4, 1, &[(0, 2, 3, 0), (1, 2, 4, 0)]);
    let graph = crate::graph::SwitchGraph::new(&f).unwrap();
    let mut routing = crate::sssp::route(&graph);
    if layers {
        let mut t = SwitchLidTable::new(2, routing.lft.max_lid, 0);
        for lid in 0..=routing.lft.max_lid {
            t.set(0, lid, 1);
            t.set(1, lid, 2);
        }
        routing.layers = Some(t);
        routing.num_layers = 3;
    }
    let state = State {
        pending: None,
        active: Some(Active {
            routed: crate::engine::Routed {
                fabric: f,
                graph,
                routing,
                cfg: crate::engine::EngineConfig::new(EngineKind::Dfsssp),
                full_max_load: 0,
                max_load: 0,
                summary: None,
                sl_offset: 0,
            },
            dump_dir: None,
            dumps_due: AtomicBool::new(false),
            metrics_due: AtomicBool::new(false),
            warned_few_vls: AtomicBool::new(false),
            warned_admin_table: AtomicBool::new(false),
            summary: Default::default(),
            previous: std::sync::Mutex::new(None),
            mcast: Default::default(),
            sls: SlRange::default(),
            hints_kept: AtomicU16::new(0),
            hints_replaced: AtomicU16::new(0),
            warned_shared_vl: AtomicBool::new(false),
            state_path: None,
            state_due: AtomicBool::new(false),
        }),
    };
    EngineCtx {
        kind: EngineKind::Dfsssp,
        name: c"dfsssp-rs",
        osm: std::ptr::null_mut(),
        // SAFETY: a live osm_log_t that is never freed (leaked). path_sl logs (an SL hint
        // kept or replaced): its level is 0 (the default), so nothing is written, and
        // outside OpenSM `osm_log` is not even resolved.
        log: unsafe { OsmLog::new(Box::leak(Box::<ffi::osm_log_t>::default())) },
        state: RwLock::new(state),
        heavy_sweep: AtomicBool::new(false),
        options_line: Default::default(),
        class_lists: Default::default(),
        persist: Default::default(),
    }
}
