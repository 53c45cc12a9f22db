//! The OpenSM plug-in: the only module allowed `unsafe` code (`#![deny(unsafe_code)]` elsewhere).
//! Raw OpenSM objects are wrapped once in [`raw`]; reading the subnet ([`subnet`]) and writing
//! the tables ([`tables`]) are safe code over those wrappers. What stays unsafe here is the C
//! boundary itself (the exported descriptor, the callbacks' raw arguments), each block with the
//! reason it is sound.
//!
//! OpenSM (>= 3.3.23) loads `libdfsssp_rs.so` for `event_plugin_name dfsssp_rs` in its config and
//! reads the exported symbol [`osm_event_plugin`]. Its `create()` registers two routing engines,
//! `sssp-rs` and `dfsssp-rs`, with `osm_register_external_routing_engine`; `routing_engine
//! sssp-rs` (or `dfsssp-rs`) then selects one.
//!
//! Per routing run OpenSM calls, under its lock:
//! 1. `build_lid_matrices`: reads the subnet ([`subnet`]), runs the engine ([`crate::engine`]),
//!    checks the result fits every switch ([`tables::plan`]). All computation happens here.
//! 2. `ucast_build_fwd_tables`: writes `new_lft` and hop counts ([`tables::write`]) and, with the
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
//! A bad value or an unknown key is logged (`ERR DF06`, with its source and the accepted range)
//! and the default applies: a routine config mistake never stops routing.
//!
//! `DFSSSP_RS_INJECT_FAILURE=panic|error|write` is a **test hook**: it makes
//! `build_lid_matrices` panic or fail, or `ucast_build_fwd_tables` fail halfway through writing
//! (as if OpenSM ran out of memory), to check that OpenSM falls back and no half-written table
//! survives.

// Every unsafe operation in its own block with the reason it is sound.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod ffi;
mod log;
mod mcast;
mod raw;
mod settings;
mod sl;
mod subnet;
mod tables;

pub use crate::io::path_sl::PATH_SL_FILE;
pub use crate::io::run_record::{RunRecord, RUN_FILE};

use std::any::Any;
use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use thiserror::Error;

use self::log::OsmLog;
use self::raw::{LockedSubnet, Physp};
use self::subnet::Subnet;
use crate::engine::{self, EngineConfig, EngineError, EngineKind, McastLane};
use crate::fabric::{Fabric, FabricError};
use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::routing::{Routing, SwitchLidTable, NO_PATH};

/// Environment variable capping dfsssp-rs's virtual lanes.
pub const ENV_MAX_LANES: &str = "DFSSSP_RS_MAX_LANES";
/// Test hook: `panic` or `error` makes `build_lid_matrices` fail, `write` makes
/// `ucast_build_fwd_tables` fail after writing half the entries.
pub const ENV_INJECT_FAILURE: &str = "DFSSSP_RS_INJECT_FAILURE";
pub const ENV_BISECTION_PATTERNS: &str = "DFSSSP_RS_BISECTION_PATTERNS";
/// `0` turns incremental re-routing off (every heavy sweep computes from scratch).
pub const ENV_INCREMENTAL: &str = "DFSSSP_RS_INCREMENTAL";
/// Percent by which an incremental re-route's highest channel load may exceed the last full
/// computation's before a full re-balance.
pub const ENV_REBALANCE_PCT: &str = "DFSSSP_RS_REBALANCE_PCT";
pub const ENV_SEED: &str = "DFSSSP_RS_SEED";
/// `0` keeps every lane for unicast layers, `1` leaves one to multicast only when the layers need
/// fewer than there are, `2` (default) always leaves one (see [`EngineConfig::mcast_lane`]).
pub const ENV_MCAST_LANE: &str = "DFSSSP_RS_MCAST_LANE";
/// `A-B`: the SLs (and VLs) the layers may use; QoS policy keeps the others.
pub const ENV_LAYER_SLS: &str = "DFSSSP_RS_LAYER_SLS";

#[derive(Debug, Error)]
enum AdapterError {
    #[error("cannot model the subnet: {0}")]
    Subnet(#[from] FabricError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("the routing does not fit OpenSM's switches: {0}")]
    Plan(String),
    #[error("writing the tables failed: {0}")]
    Write(String),
    #[error("ucast_build_fwd_tables called without a routing computed by build_lid_matrices")]
    NothingComputed,
    #[error("OpenSM's functions were not resolved")]
    NoApi,
    #[error("injected failure ({ENV_INJECT_FAILURE}=error, a test hook)")]
    Injected,
    #[error("no unicast routing of this engine is in place")]
    NoRouting,
    #[error("multicast: {0}")]
    Multicast(String),
}

/// The exported plug-in descriptor, laid out exactly as OpenSM's `osm_event_plugin_t`.
#[repr(transparent)]
pub struct PluginDecl(ffi::osm_event_plugin_t);

// SAFETY: the descriptor is immutable; its pointers are a static string and functions.
unsafe impl Sync for PluginDecl {}

/// The symbol OpenSM's event-plugin loader looks up. Its version must equal the running OpenSM's.
#[no_mangle]
pub static osm_event_plugin: PluginDecl = PluginDecl(ffi::osm_event_plugin_t {
    osm_version: ffi::OSM_VERSION.as_ptr().cast(),
    create: Some(plugin_create),
    delete: Some(plugin_delete),
    report: Some(plugin_report),
});

/// What `create()` returns to OpenSM: owns the engines' contexts until `delete()`.
struct Plugin {
    // Boxed: OpenSM holds a pointer to each context, so they must not move when the Vec grows.
    #[allow(clippy::vec_box)]
    engines: Vec<Box<EngineCtx>>,
}

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
}

/// OpenSM's `cn_guid_file` and `io_guid_file` as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct ClassLists {
    compute: Vec<u64>,
    io: Vec<u64>,
}

#[derive(Default)]
struct State {
    /// Computed by build_lid_matrices, consumed by ucast_build_fwd_tables.
    pending: Option<Pending>,
    /// The routing OpenSM currently uses, for path_sl and update_sl2vl.
    active: Option<Active>,
}

struct Pending {
    subnet: Subnet,
    cfg: EngineConfig,
    graph: SwitchGraph,
    routing: Routing,
    plan: tables::Plan,
    routing_log: bool,
    started: Instant,
    full_max_load: u64,
    max_load: u64,
    summary: crate::reroute::RoutingSummary,
    sl_offset: u8,
    sls: SlRange,
    /// The routing the switches held before, to log what changed once the new one is up.
    previous: Option<Previous>,
}

/// The routing before this run, kept until the change is logged.
struct Previous {
    graph: SwitchGraph,
    routing: Routing,
    fabric: Fabric,
}

struct Active {
    graph: SwitchGraph,
    /// Its hop counts are dropped while OpenSM uploads the tables ([`Active::hops_dropped`]).
    routing: Routing,
    /// `routing.hops` is empty: rebuilt from the tables ([`Active::restore_hops`]) once the
    /// upload is done, or before the next re-route.
    hops_dropped: bool,
    fabric: Fabric,
    cfg: EngineConfig,
    dump_dir: Option<PathBuf>,
    /// The engine's dumps are due (routing log flag on); written when OpenSM reports the unicast
    /// routing done, so that writing them is not part of the routing phase.
    dumps_due: AtomicBool,
    /// The metrics asked for (bisection patterns) are due: measured once, after the upload.
    metrics_due: AtomicBool,
    /// Each SL-to-VL problem is logged once per routing, not once per port.
    warned_few_vls: AtomicBool,
    warned_admin_table: AtomicBool,
    /// The highest channel load of the last full computation, and of this routing (see
    /// [`engine::Prior`]).
    full_max_load: u64,
    max_load: u64,
    /// Its channel loads and CDG edges, for the next re-route (made exact after the upload:
    /// [`engine::settle_summary`]).
    summary: std::sync::Mutex<crate::reroute::RoutingSummary>,
    /// What the switches held before, until the change has been logged.
    previous: std::sync::Mutex<Option<Previous>>,
    /// The multicast trees built over this routing.
    mcast: std::sync::Mutex<mcast::McastState>,
    /// The engine's SL offset: 1 when SL 0 was left to multicast
    /// ([`engine::EngineOutput::sl_offset`]).
    sl_offset: u8,
    /// Where the layers' SLs start and what path_sl leaves to the admin's QoS policy.
    sls: SlRange,
    /// SLs of OpenSM's hint that path_sl kept or replaced, each logged once (bit per SL).
    hints_kept: AtomicU16,
    hints_replaced: AtomicU16,
    /// Admin SL-to-VL entries outside the layers that share a layer's VL, logged once.
    warned_shared_vl: AtomicBool,
}

/// The SLs of the layers: layer i travels on SL (and VL) `first + offset + i`, where the offset
/// is the engine's (SL `first` left to multicast). With a range given (`layer_sls`), OpenSM's SL
/// hint outside it is the admin's QoS policy and path_sl keeps it; without one, path_sl answers
/// the layer's SL for every path, as stock dfsssp does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SlRange {
    first: u8,
    range: Option<(u8, u8)>,
}

impl SlRange {
    /// Whether path_sl answers the layer's SL for OpenSM's hint `hint`: inside the range, or
    /// SL 0 (what OpenSM gives when neither a QoS level nor a partition sets one).
    fn routes(&self, hint: u8) -> bool {
        match self.range {
            None => true,
            Some((lo, hi)) => hint == 0 || (lo..=hi).contains(&hint),
        }
    }
}

impl Active {
    /// Rebuilds the hop counts dropped for the upload (exactly the engine's: they are the
    /// tables' path lengths).
    fn restore_hops(&mut self) {
        if std::mem::take(&mut self.hops_dropped) {
            self.routing.hops = crate::routing::walked_hops(&self.graph, &self.routing.lft);
        }
    }

    /// SL (= VL) of layer 0.
    fn base_sl(&self) -> u8 {
        self.sls.first + self.sl_offset
    }
}

impl EngineCtx {
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// build_lid_matrices: everything is computed here.
    fn build(&self) -> Result<(), AdapterError> {
        let started = Instant::now();
        let name = self.kind.name();
        // The routing the switches hold now is the one to re-route from; if this run fails,
        // OpenSM's next engine replaces it, so it is not kept beyond this run.
        let mut prior = std::mem::take(&mut *self.write()).active;
        if let Some(a) = prior.as_mut() {
            a.restore_hops();
        }
        let heavy_sweep = self.heavy_sweep.swap(false, Ordering::Relaxed);
        match std::env::var(ENV_INJECT_FAILURE).as_deref() {
            Ok("panic") => panic!("{ENV_INJECT_FAILURE}=panic: injected panic (test hook)"),
            Ok("error") => return Err(AdapterError::Injected),
            _ => {}
        }

        let api = ffi::api().ok_or(AdapterError::NoApi)?;
        // SAFETY: OpenSM calls build_lid_matrices from ucast_mgr_route with its lock held for
        // the whole call; self.osm is the running OpenSM that registered this engine; this is
        // the call's only LockedSubnet.
        let osm = unsafe { LockedSubnet::new(self.osm) };
        let subnet = subnet::read(api, &osm)?;
        let read_time = started.elapsed();
        let f = &subnet.fabric;
        self.log.verbose(&format!(
            "{name}: read the subnet in {:.3} s: {} switches, {} CAs/routers, {} links, {} LID \
             ports, max LID {}, LMC {}",
            read_time.as_secs_f64(),
            f.switch_count(),
            f.terminal_node_count(),
            f.links().len(),
            f.endpoints().len(),
            f.max_lid(),
            subnet.lmc
        ));
        let sk = &subnet.skipped;
        if sk.throttled_links + sk.throttled_kept > 0 {
            self.log.info(&format!(
                "{name}: avoid_throttled_links: {} throttled switch-to-switch links left out of \
                 the routing; {} kept because the fabric would split without them",
                sk.throttled_links, sk.throttled_kept
            ));
        }
        if sk.down_links
            + sk.unhealthy_links
            + sk.loop_links
            + sk.ports_without_lid
            + sk.unknown_nodes
            > 0
        {
            self.log.info(&format!(
                "{name}: not routed over: {} links with a DOWN port, {} unhealthy links, {} \
                 loopback links; ignored: {} ports without LID, {} nodes of unknown type",
                sk.down_links,
                sk.unhealthy_links,
                sk.loop_links,
                sk.ports_without_lid,
                sk.unknown_nodes
            ));
        }

        let line = subnet::option_verdicts(&subnet.routing_options);
        let mut last = self.options_line.lock().unwrap_or_else(|e| e.into_inner());
        if *last != line {
            self.log.info(&format!("{name}: OpenSM options {line}"));
            *last = line;
        }
        drop(last);
        let set = self.settings(&subnet);
        let (mut cfg, sls) = self.config(&subnet, &set)?;
        let mut rc = self.reroute_config(&set, heavy_sweep)?;
        if let Some(changed) = self.traffic_classes(&subnet, &mut cfg) {
            rc.force_full.get_or_insert(changed);
        }
        let prior_summary = prior
            .as_mut()
            .map(|a| std::mem::take(a.summary.get_mut().unwrap_or_else(|e| e.into_inner())));
        let out = engine::run_from(
            &subnet.fabric,
            &cfg,
            prior.as_ref().map(|a| engine::Prior {
                fabric: &a.fabric,
                graph: &a.graph,
                routing: &a.routing,
                cfg: &a.cfg,
                full_max_load: a.full_max_load,
                max_load: a.max_load,
                summary: prior_summary.as_ref(),
                sl_offset: a.sl_offset,
            }),
            &rc,
        )?;
        for (level, line) in &out.log {
            self.log.log(*level, line);
        }
        let plan = tables::plan(&subnet, &out.graph, &out.routing).map_err(AdapterError::Plan)?;
        self.log.info(&format!(
            "{name}: computed tables for {} switches, {} CA/router ports, {} LIDs, {} layer(s) in \
             {:.3} s",
            out.graph.num_switches(),
            out.graph.terminals().len(),
            out.graph.dests().len(),
            out.routing.num_layers,
            started.elapsed().as_secs_f64()
        ));
        self.write().pending = Some(Pending {
            subnet,
            cfg,
            graph: out.graph,
            routing: out.routing,
            plan,
            routing_log: self.log.is_active(log::ROUTING),
            started,
            full_max_load: out.full_max_load,
            max_load: out.max_load,
            summary: out.summary,
            sl_offset: out.sl_offset,
            sls,
            previous: prior.map(|a| Previous {
                graph: a.graph,
                routing: a.routing,
                fabric: a.fabric,
            }),
        });
        raw::release_free_heap();
        Ok(())
    }

    /// Compute and I/O nodes from OpenSM's `cn_guid_file` and `io_guid_file`, into `cfg`. A file
    /// that cannot be read is logged (`ERR DF08`, naming the file and line) and routing goes on
    /// without it. Returns why the lists call for a full computation, when they changed.
    fn traffic_classes(&self, subnet: &Subnet, cfg: &mut EngineConfig) -> Option<String> {
        let name = self.kind.name();
        let file = |key: &str| {
            subnet
                .routing_options
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty() && v != "(null)")
        };
        let mut lists = ClassLists::default();
        let mut given = Vec::new();
        for (key, list) in [
            ("cn_guid_file", &mut lists.compute),
            ("io_guid_file", &mut lists.io),
        ] {
            let Some(path) = file(key) else { continue };
            match crate::io::guid_list::read_file(std::path::Path::new(&path)) {
                Ok(guids) => {
                    *list = guids;
                    given.push(key);
                }
                Err(e) => self
                    .log
                    .error(&format!("ERR DF08: {name}: {key}: {e}; routing without it")),
            }
        }
        let mut last = self.class_lists.lock().unwrap_or_else(|e| e.into_inner());
        let changed = last.as_ref() != Some(&lists);
        if !given.is_empty() {
            let (classes, m) = crate::traffic::TrafficClasses::from_guids(
                &subnet.fabric,
                &lists.compute,
                &lists.io,
            );
            if changed {
                let mut line = format!(
                    "{name}: {}: {} compute and {} I/O ports; compute nodes' LIDs are routed \
                     first, each class balanced on its own traffic",
                    given.join(", "),
                    m.compute,
                    m.io
                );
                if !m.unknown.is_empty() {
                    line += &format!(
                        "; {} GUIDs name no CA port of the fabric (first 0x{:016x})",
                        m.unknown.len(),
                        m.unknown[0]
                    );
                }
                if !m.both.is_empty() {
                    line += &format!("; {} ports in both lists count as compute", m.both.len());
                }
                self.log.info(&line);
            }
            cfg.classes = Some(classes);
        }
        let was = last.replace(lists);
        (changed && was.is_some())
            .then(|| "the compute or I/O node lists changed: full computation".to_string())
    }

    /// The engine's settings for this run ([`settings`]: `dfsssp-rs.conf` next to OpenSM's
    /// configuration file, `event_plugin_options`, the environment). A bad value or unknown key
    /// never stops routing: it is logged at ERROR with its source and the accepted range.
    fn settings(&self, subnet: &Subnet) -> settings::Settings {
        let name = self.kind.name();
        let mut s = settings::Settings::default();
        let mut problems = Vec::new();
        if let Some(path) = settings::conf_path(subnet.config_file.as_deref()) {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    settings::read_conf(&text, &path.display().to_string(), &mut s, &mut problems)
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => problems.push(format!("{}: {e}", path.display())),
            }
        }
        if let Some(o) = &subnet.plugin_options {
            settings::read_plugin_options(o, &mut s, &mut problems);
        }
        settings::read_env(|k| std::env::var(k).ok(), &mut s, &mut problems);
        for p in &problems {
            self.log
                .error(&format!("ERR DF06: {name}: {p}; using the default"));
        }
        if !s.sources.is_empty() {
            let given: Vec<String> = s
                .sources
                .iter()
                .map(|(k, src)| format!("{k} ({src})"))
                .collect();
            self.log
                .verbose(&format!("{name}: settings given: {}", given.join(", ")));
        }
        s
    }

    /// Incremental re-routing settings for this run, from the environment; a run without a heavy
    /// sweep before it was asked for by the admin and computes from scratch.
    fn reroute_config(
        &self,
        set: &settings::Settings,
        heavy_sweep: bool,
    ) -> Result<engine::RerouteConfig, AdapterError> {
        let mut rc = engine::RerouteConfig::default();
        if let Some(n) = set.incremental {
            rc.incremental = n == 1;
        }
        if let Some(n) = set.rebalance_pct {
            rc.max_load_growth_pct = n as u32;
        }
        if !heavy_sweep {
            rc.force_full = Some(
                "OpenSM re-routes without a heavy sweep (the admin asked: console `reroute`): \
                 full re-balance"
                    .into(),
            );
        }
        Ok(rc)
    }

    /// The engine configuration for this run: lanes from the ports' operational VLs, capped by
    /// the settings and the SL range given to the layers; one lane when QoS is off.
    fn config(
        &self,
        subnet: &Subnet,
        set: &settings::Settings,
    ) -> Result<(EngineConfig, SlRange), AdapterError> {
        let name = self.kind.name();
        let mut cfg = EngineConfig::new(self.kind);
        cfg.qos = subnet.qos;
        if let Some(n) = set.bisection_patterns {
            cfg.bisection_patterns = n as u32;
        }
        // Measured once the tables are up, not while OpenSM waits for them.
        cfg.defer_metrics = true;
        if let Some(n) = set.seed {
            cfg.seed = n;
        }
        cfg.mcast_lane = match set.mcast_lane {
            Some(0) => McastLane::Off,
            Some(1) => McastLane::WhenFree,
            None | Some(_) => McastLane::Always,
        };
        cfg.lanes = match subnet.min_data_vls {
            Some(v) => v,
            None => {
                self.log.info(&format!(
                    "{name}: no active port reports its operational VLs; assuming 1"
                ));
                1
            }
        };
        if let Some(cap) = set.max_lanes {
            cfg.lanes = cfg.lanes.min(cap as u8);
        }
        let mut sls = SlRange::default();
        let mut range_note = String::new();
        if let (Some((lo, hi)), true) = (set.layer_sls, self.kind == EngineKind::Dfsssp) {
            let src = set.source_of("layer_sls").unwrap_or("settings");
            let vls = subnet.min_data_vls.unwrap_or(1);
            if !subnet.qos {
                self.log.verbose(&format!(
                    "{name}: layer_sls {lo}-{hi} ({src}) has no effect with QoS off"
                ));
            } else if lo >= vls {
                self.log.error(&format!(
                    "ERR DF06: {name}: layer_sls {lo}-{hi} ({src}) starts beyond the {vls} data \
                     VLs the ports operate; using the default (SLs from 0)"
                ));
            } else {
                cfg.lanes = cfg.lanes.min(hi - lo + 1).min(vls - lo);
                sls = SlRange {
                    first: lo,
                    range: Some((lo, hi)),
                };
                if lo > 0 {
                    // SL 0 (multicast's, unless the QoS policy says otherwise) is outside the
                    // layers already.
                    cfg.mcast_lane = McastLane::Off;
                }
                range_note = format!(
                    ", within layer_sls {lo}-{hi} ({src}); other SLs keep OpenSM's QoS policy"
                );
            }
        }
        // With QoS off the engine logs that it routes within one lane, and why.
        if self.kind == EngineKind::Dfsssp && subnet.qos {
            self.log.info(&format!(
                "{name}: QoS on: up to {} virtual lanes (fewest operational data VLs of any \
                 active port{}){range_note}",
                cfg.lanes,
                match set.source_of("max_lanes") {
                    Some(src) => format!(", capped by max_lanes ({src})"),
                    None => String::new(),
                }
            ));
        }
        Ok((cfg, sls))
    }

    /// ucast_build_fwd_tables: only writes what build() computed.
    fn write_tables(&self) -> Result<(), AdapterError> {
        let name = self.kind.name();
        let p = self
            .write()
            .pending
            .take()
            .ok_or(AdapterError::NothingComputed)?;
        let t = Instant::now();
        let api = ffi::api().ok_or(AdapterError::NoApi)?;
        // SAFETY: called by ucast_mgr_route under OpenSM's lock, right after build_lid_matrices
        // of the same run (the pending routing), so OpenSM's switches are prepared for it; this
        // is the call's only LockedSubnet.
        let mut osm = unsafe { LockedSubnet::new(self.osm) };
        // Test hook: fail halfway through the hop rows, to exercise the reset.
        let fail_after = (std::env::var(ENV_INJECT_FAILURE).as_deref() == Ok("write"))
            .then(|| p.plan.hop_rows() as u64 / 2);
        let stats = tables::write(api, &mut osm, &p.graph, &p.plan, &p.routing, fail_after)
            .map_err(AdapterError::Write)?;
        self.log.info(&format!(
            "{name}: wrote the tables of {} switches ({} routed entries, {} hop rows) in {:.3} s; \
             {:.3} s since routing started",
            stats.switches,
            stats.routed_entries,
            stats.hop_rows,
            t.elapsed().as_secs_f64(),
            p.started.elapsed().as_secs_f64()
        ));
        let metrics_due = p.cfg.bisection_patterns > 0;
        // OpenSM's memory peaks next, while it queues every LFT block for the upload; the hop
        // counts (a switch-by-LID table) are not needed until the upload is done.
        let mut routing = p.routing;
        routing.hops = SwitchLidTable::new(0, routing.lft.max_lid, NO_PATH);
        self.write().active = Some(Active {
            graph: p.graph,
            routing,
            hops_dropped: true,
            fabric: p.subnet.fabric,
            cfg: p.cfg,
            dump_dir: p.subnet.dump_dir,
            dumps_due: AtomicBool::new(p.routing_log),
            metrics_due: AtomicBool::new(metrics_due),
            warned_few_vls: AtomicBool::new(false),
            warned_admin_table: AtomicBool::new(false),
            full_max_load: p.full_max_load,
            max_load: p.max_load,
            summary: std::sync::Mutex::new(p.summary),
            previous: std::sync::Mutex::new(p.previous),
            mcast: Default::default(),
            sl_offset: p.sl_offset,
            sls: p.sls,
            hints_kept: AtomicU16::new(0),
            hints_replaced: AtomicU16::new(0),
            warned_shared_vl: AtomicBool::new(false),
        });
        raw::release_free_heap();
        Ok(())
    }

    /// The hop counts dropped for the upload, rebuilt under the read lock (path_sl answers
    /// meanwhile) and put back under the write lock.
    fn restore_hops(&self) {
        let hops = {
            let st = self.read();
            match st.active.as_ref() {
                Some(a) if a.hops_dropped => crate::routing::walked_hops(&a.graph, &a.routing.lft),
                _ => return,
            }
        };
        if let Some(a) = self.write().active.as_mut() {
            if a.hops_dropped && hops.shape() == (a.graph.num_switches(), a.routing.lft.stride()) {
                a.routing.hops = hops;
                a.hops_dropped = false;
            }
        }
    }

    /// The engine's own dumps of the active routing, if due. The tables are in place already: a
    /// failure here is logged only.
    fn write_due_dumps(&self) {
        self.restore_hops();
        let st = self.read();
        let Some(a) = st.active.as_ref() else { return };
        self.log_change(a);
        self.settle_summary(a);
        if a.metrics_due.swap(false, Ordering::Relaxed) {
            // Off the routing phase: OpenSM reports the routing done without holding its lock.
            if let Some((level, line)) =
                engine::metrics_line(&a.fabric, &a.graph, &a.routing, &a.cfg, a.sl_offset)
            {
                self.log.log(level, &line);
            }
        }
        if !a.dumps_due.swap(false, Ordering::Relaxed) {
            return;
        }
        let name = self.kind.name();
        let Some(dir) = &a.dump_dir else {
            self.log.error(&format!(
                "{name}: OpenSM has no dump_files_dir; not writing dumps"
            ));
            return;
        };
        let path = dir.join(RUN_FILE);
        match crate::io::run_record::write_file(&path, &RunRecord::new(&a.cfg, &a.fabric)) {
            Ok(()) => self
                .log
                .verbose(&format!("{name}: wrote {}", path.display())),
            Err(e) => self
                .log
                .error(&format!("{name}: cannot write {}: {e}", path.display())),
        }
        if self.kind != EngineKind::Dfsssp {
            return;
        }
        let t = Instant::now();
        let path = dir.join(PATH_SL_FILE);
        match crate::io::path_sl::write_file(&path, &a.fabric, &a.graph, &a.routing, a.base_sl()) {
            Ok(st) => {
                self.log.info(&format!(
                    "{name}: wrote {} ({} sources, {} lines) in {:.3} s",
                    path.display(),
                    st.sources,
                    st.lines,
                    t.elapsed().as_secs_f64()
                ));
                if st.split_sources > 0 {
                    self.log.info(&format!(
                        "{name}: {} CAs have ports on different switches; {} is keyed by node GUID, \
                         so it lists the SLs of each CA's first port only",
                        st.split_sources, PATH_SL_FILE
                    ));
                }
            }
            Err(e) => self
                .log
                .error(&format!("{name}: cannot write {}: {e}", path.display())),
        }
    }

    /// What changed from the routing the switches held before (once per routing run, after the
    /// upload, so that comparing is not part of the routing phase).
    fn log_change(&self, a: &Active) {
        let prev = a.previous.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(prev) = prev else { return };
        let t = Instant::now();
        let d = crate::reroute::diff(
            crate::reroute::RoutedFabric {
                fabric: &prev.fabric,
                graph: &prev.graph,
                routing: &prev.routing,
            },
            crate::reroute::RoutedFabric {
                fabric: &a.fabric,
                graph: &a.graph,
                routing: &a.routing,
            },
        );
        self.log.info(&format!(
            "{}: changes: {} (compared in {:.3} s)",
            self.kind.name(),
            d.summary(),
            t.elapsed().as_secs_f64()
        ));
    }

    /// The complete verification of a routing that was checked incrementally before its upload
    /// (see [`engine::settle_summary`]), once OpenSM has it in place.
    fn settle_summary(&self, a: &Active) {
        let name = self.kind.name();
        let t = Instant::now();
        let mut summary = a.summary.lock().unwrap_or_else(|e| e.into_inner());
        match engine::settle_summary(&a.fabric, &a.graph, &a.routing, &mut summary) {
            Ok(None) => {}
            Ok(Some(rep)) => self.log.verbose(&format!(
                "{name}: complete check after the upload: {} ({:.3} s)",
                rep.summary(),
                t.elapsed().as_secs_f64()
            )),
            Err(e) => self.log.error(&format!(
                "{name}: ERR DF04: the routing in place failed the complete check after its \
                 incremental check passed: {e}; the next routing run starts from a complete \
                 traversal"
            )),
        }
    }

    /// mcast_build_stree: the tree of one MLID (see [`mcast`]).
    fn mcast_build_stree(&self, mbox: raw::McastBox<'_>) -> Result<(), AdapterError> {
        let name = self.kind.name();
        let api = ffi::api().ok_or(AdapterError::NoApi)?;
        // SAFETY: OpenSM's multicast manager calls mcast_build_stree from
        // osm_mcast_mgr_process, which holds the lock exclusively for the whole call; self.osm
        // is the running OpenSM that registered this engine; this is the call's only
        // LockedSubnet.
        let mut osm = unsafe { LockedSubnet::new(self.osm) };
        let st = self.read();
        let a = st.active.as_ref().ok_or(AdapterError::NoRouting)?;
        let summary = a.summary.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = a.mcast.lock().unwrap_or_else(|e| e.into_inner());
        let uc = mcast::Unicast {
            graph: &a.graph,
            summary: &summary,
            num_layers: a.routing.num_layers,
            sl_offset: a.base_sl(),
            qos: a.cfg.qos,
            lanes: a.cfg.lanes,
        };
        let out = mcast::build_stree(api, &mut osm, mbox, &uc, &mut state)
            .map_err(AdapterError::Multicast)?;
        if let Some(lines) = &out.computed {
            for l in lines {
                self.log.verbose(&format!("{name}: {l}"));
            }
        }
        for c in &out.cyclic {
            let line = format!("{name}: multicast: {c}");
            if self.kind == EngineKind::Dfsssp {
                let advice = if a.cfg.mcast_lane == McastLane::Always || a.cfg.lanes < 2 {
                    ""
                } else {
                    " (DFSSSP_RS_MCAST_LANE=2, the default, leaves a lane to multicast even when \
                     the layers need every lane)"
                };
                self.log.error(&format!("ERR DF05: {line}{advice}"));
            } else {
                // sssp-rs routes are not deadlock-free by design.
                self.log.verbose(&line);
            }
        }
        if out.unknown_ports > 0 {
            self.log.verbose(&format!(
                "{name}: multicast: {} member port(s) not in the unicast routing yet (new since \
                 the last sweep): left out until the next one",
                out.unknown_ports
            ));
        }
        self.log.verbose(&format!(
            "{name}: MLID 0x{:04X}: tree over {} switch(es){}",
            mbox.mlid(),
            out.switches,
            if out.rewritten > 0 {
                format!(
                    "; {} other group(s) moved and were rewritten",
                    out.rewritten
                )
            } else {
                String::new()
            }
        ));
        Ok(())
    }

    /// path_sl: the SL of the layer of the path from the switch where SLID's traffic enters to
    /// DLID. With `layer_sls` given, a hint outside it is the admin's QoS policy and is kept.
    fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        let st = self.read();
        let Some(a) = &st.active else { return hint };
        if a.routing.num_layers + a.base_sl() <= 1 || dlid > a.routing.lft.max_lid {
            return hint;
        }
        let (Some(src), Some(dst)) = (a.graph.dest_of_lid(slid), a.graph.dest_of_lid(dlid)) else {
            return hint;
        };
        if src.switch == NO_SWITCH || dst.switch == NO_SWITCH {
            return hint;
        }
        let name = self.kind.name();
        if !a.sls.routes(hint) {
            if a.hints_kept.fetch_or(1 << hint, Ordering::Relaxed) & (1 << hint) == 0 {
                self.log.info(&format!(
                    "{name}: SL {hint} from OpenSM's QoS policy is outside layer_sls: kept for \
                     the paths it is given to (their VL is the QoS policy's, outside the layers' \
                     deadlock analysis; logged once per SL)"
                ));
            }
            return hint;
        }
        let sl = a.routing.layer(src.switch, dlid) + a.base_sl();
        if hint != 0
            && hint != sl
            && a.hints_replaced.fetch_or(1 << hint, Ordering::Relaxed) & (1 << hint) == 0
        {
            self.log.info(&format!(
                "{name}: SL {hint} from OpenSM's QoS policy or partition replaced by the layers' \
                 SLs (set layer_sls to leave SLs to QoS; logged once per SL)"
            ));
        }
        sl
    }

    /// update_sl2vl: SL i -> VL i for every SL the layers use, in the table OpenSM is about to
    /// program on `port`; the admin's entries for other SLs stay.
    fn update_sl2vl(&self, port: Option<Physp<'_>>, table: Option<&mut ffi::ib_slvl_table_t>) {
        let st = self.read();
        let Some(a) = &st.active else { return };
        // SLs first..first + offset + layers go to the VL of the same number (SL `first` alone
        // on its VL when a lane was left to multicast).
        let (first, count) = (a.sls.first, a.routing.num_layers + a.sl_offset);
        let Some(table) = table else { return };
        if first + count <= 1 {
            return;
        }
        let before = table.raw_vl_by_sl;
        let mut after = before;
        let changed = sl::map_layers(&mut after, first, count);
        table.raw_vl_by_sl = after;
        let name = self.kind.name();
        let last = first + count - 1;
        if changed != 0 && !a.warned_admin_table.swap(true, Ordering::Relaxed) {
            self.log.info(&format!(
                "{name}: OpenSM's QoS SL-to-VL setting ({}) differs from the routing's layers; \
                 using SL i -> VL i for SL {first}..{last} as the deadlock analysis requires \
                 (logged once)",
                sl::describe(&before, changed),
            ));
        }
        let shared = sl::sharing_layer_vls(&after, first, count);
        if shared != 0 && !a.warned_shared_vl.swap(true, Ordering::Relaxed) {
            self.log.info(&format!(
                "WRN DF07: {name}: OpenSM's QoS SL-to-VL setting puts SLs outside the layers on \
                 the layers' VLs {first}..{last} ({}): traffic on them shares those VLs without \
                 being in the deadlock analysis; map them to other VLs (logged once)",
                sl::describe(&after, shared),
            ));
        }
        let Some(port) = port else { return };
        let vls = subnet::data_vls(port.op_vls_code());
        if vls.is_some_and(|v| v <= last) && !a.warned_few_vls.swap(true, Ordering::Relaxed) {
            let guid = port.node_guid();
            self.log.error(&format!(
                "{name}: port {} of node 0x{guid:016x} operates {} data VLs but the routing's \
                 layers use VLs up to {last}: SLs beyond its VLs share a VL there and deadlock \
                 freedom is not guaranteed (logged once; rerouting picks up the new VL count)",
                port.port_num(),
                vls.unwrap_or(0),
            ));
        }
    }
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// Runs a callback body: errors and panics are logged at ERROR and become `fallback`.
fn guarded<T>(
    log: OsmLog,
    what: &str,
    fallback: T,
    f: impl FnOnce() -> Result<T, AdapterError>,
) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            log.error(&format!("ERR DF01: {what} failed: {e}"));
            fallback
        }
        Err(p) => {
            // Logging cannot panic in a way that matters here, but stay defensive.
            let msg = panic_message(&*p);
            let _ = catch_unwind(AssertUnwindSafe(|| {
                log.error(&format!("ERR DF02: {what} panicked: {msg}"));
            }));
            fallback
        }
    }
}

/// The OpenSM version the plug-in was built for (the headers' `OSM_VERSION`).
fn version() -> String {
    CStr::from_bytes_until_nul(ffi::OSM_VERSION)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// # Safety
/// `context` must be an `EngineCtx` registered by `plugin_create` and not yet deleted.
unsafe fn ctx<'a>(context: *mut c_void) -> Option<&'a EngineCtx> {
    // SAFETY: as the caller vouches: null or a live, boxed EngineCtx owned by the plug-in.
    unsafe { (context as *const EngineCtx).as_ref() }
}

/// Whether our bindings lay out `osm_opensm_t` as the running OpenSM does: OpenSM initialised
/// its SM and SA with pointers to its own `subn` and `log` before loading plug-ins, so compare
/// those with where the bindings put them (an include-order mistake once shifted them by 56
/// bytes; see include/dfsssp_rs.h).
///
/// # Safety
/// `osm` must be the running OpenSM, as passed to `create()`.
unsafe fn layout_matches(osm: *mut ffi::osm_opensm_t) -> bool {
    // SAFETY: `osm` is the live OpenSM (caller); only pointer fields are read, and if the layout
    // is off they read other initialised bytes of the same struct, which then fail to match.
    unsafe {
        let subn = std::ptr::addr_of_mut!((*osm).subn);
        let log = std::ptr::addr_of_mut!((*osm).log);
        (*osm).subn.p_osm == osm
            && (*osm).sm.p_subn == subn
            && (*osm).sm.p_log == log
            && (*osm).sa.p_subn == subn
            && (*osm).sa.p_log == log
            && (*osm).sm.ucast_mgr.p_subn == subn
    }
}

unsafe extern "C" fn plugin_create(osm: *mut ffi::osm_opensm_t) -> *mut c_void {
    if osm.is_null() {
        return std::ptr::null_mut();
    }
    let api = match ffi::resolve_api() {
        Ok(api) => api,
        Err(e) => {
            eprintln!("dfsssp-rs: ERROR: not running inside OpenSM ({e}); not registering any routing engine");
            return std::ptr::null_mut();
        }
    };
    // SAFETY: OpenSM passes itself to create().
    if !unsafe { layout_matches(osm) } {
        // OpenSM's log cannot be trusted to be where we think: say it on stderr and stay out.
        eprintln!(
            "dfsssp-rs: ERROR: this plug-in was built against OpenSM headers whose osm_opensm_t \
             layout differs from the running opensm ({}); not registering any routing engine",
            version()
        );
        return std::ptr::null_mut();
    }
    // SAFETY: the layout matches, so this is OpenSM's log, which outlives the plug-in.
    let log = unsafe { OsmLog::new(std::ptr::addr_of_mut!((*osm).log)) };
    let created = catch_unwind(AssertUnwindSafe(|| {
        let mut plugin = Box::new(Plugin {
            engines: Vec::new(),
        });
        for (kind, name) in [
            (EngineKind::Sssp, c"sssp-rs"),
            (EngineKind::Dfsssp, c"dfsssp-rs"),
        ] {
            let ctx = Box::new(EngineCtx {
                kind,
                name,
                osm,
                log,
                state: RwLock::new(State::default()),
                heavy_sweep: AtomicBool::new(false),
                options_line: Default::default(),
                class_lists: Default::default(),
            });
            let ctx_ptr = &*ctx as *const EngineCtx as *mut c_void;
            let module = ffi::external_routing_engine_module_t {
                name: name.as_ptr(),
                setup: Some(engine_setup),
                context: ctx_ptr,
            };
            // OpenSM copies the module (name included) and keeps ctx_ptr as the engine context.
            // SAFETY: OpenSM's own function, given itself, a module it copies, and a context
            // that lives until plugin_delete (after OpenSM destroyed its routing engines).
            let status = unsafe { (api.register_external_routing_engine)(osm, &module, ctx_ptr) };
            if status == 0 {
                plugin.engines.push(ctx);
            } else {
                log.error(&format!(
                    "ERR DF03: dfsssp-rs: cannot register routing engine '{}' (status {status})",
                    kind.name()
                ));
            }
        }
        plugin
    }));
    match created {
        // Once an engine is registered OpenSM holds pointers into this library: never return
        // NULL then (OpenSM would dlclose us).
        Ok(plugin) if !plugin.engines.is_empty() => {
            log.info(&format!(
                "dfsssp-rs {}: registered routing engines {}",
                env!("CARGO_PKG_VERSION"),
                plugin
                    .engines
                    .iter()
                    .map(|e| e.kind.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            Box::into_raw(plugin).cast()
        }
        Ok(_) => std::ptr::null_mut(),
        Err(p) => {
            log.error(&format!(
                "ERR DF02: dfsssp-rs: plug-in creation panicked: {}",
                panic_message(&*p)
            ));
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn plugin_delete(plugin_data: *mut c_void) {
    if !plugin_data.is_null() {
        // OpenSM destroys its routing engines before its plug-ins: no callback can follow.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: plugin_data is the Box plugin_create leaked, handed back once.
            drop(unsafe { Box::from_raw(plugin_data as *mut Plugin) })
        }));
    }
}

/// OpenSM's event report: once the unicast routing is done (tables uploaded, SL-to-VL set), the
/// engines write their dumps, next to OpenSM's own.
unsafe extern "C" fn plugin_report(
    plugin_data: *mut c_void,
    event_id: ffi::osm_epi_event_id_t,
    _data: *mut c_void,
) {
    let heavy = event_id == ffi::osm_epi_event_id_t_OSM_EVENT_ID_HEAVY_SWEEP_START;
    if event_id != ffi::osm_epi_event_id_t_OSM_EVENT_ID_UCAST_ROUTING_DONE && !heavy {
        return;
    }
    // SAFETY: plugin_data is what plugin_create returned, alive until plugin_delete.
    let Some(plugin) = (unsafe { (plugin_data as *const Plugin).as_ref() }) else {
        return;
    };
    if heavy {
        for c in &plugin.engines {
            c.heavy_sweep.store(true, Ordering::Relaxed);
        }
        return;
    }
    for c in &plugin.engines {
        guarded(
            c.log,
            &format!("{}: writing dumps", c.kind.name()),
            (),
            || {
                c.write_due_dumps();
                Ok(())
            },
        );
    }
}

unsafe extern "C" fn engine_setup(
    re: *mut ffi::osm_routing_engine,
    _osm: *mut ffi::osm_opensm_t,
) -> c_int {
    // SAFETY: OpenSM passes the routing engine it is setting up, ours to fill in.
    let Some(re) = (unsafe { re.as_mut() }) else {
        return -1;
    };
    // SAFETY: re.context is the EngineCtx plugin_create registered with this engine.
    let Some(c) = (unsafe { ctx(re.context) }) else {
        return -1;
    };
    // Like every callback: a panic must not unwind into OpenSM; setup then fails cleanly.
    catch_unwind(AssertUnwindSafe(|| {
        re.build_lid_matrices = Some(cb_build_lid_matrices);
        re.ucast_build_fwd_tables = Some(cb_ucast_build_fwd_tables);
        re.destroy = Some(cb_destroy);
        re.mcast_build_stree = Some(cb_mcast_build_stree);
        // Left to OpenSM: update_vlarb, ucast_dump_tables (never called by 3.3.23).
        if c.kind == EngineKind::Dfsssp {
            // sssp-rs has a single layer: like stock sssp it leaves SLs and SL-to-VL tables alone.
            re.path_sl = Some(cb_path_sl);
            re.update_sl2vl = Some(cb_update_sl2vl);
        }
        c.log.verbose(&format!(
            "{}: set up as an OpenSM routing engine",
            c.name.to_string_lossy()
        ));
        0
    }))
    .unwrap_or(-1)
}

unsafe extern "C" fn cb_build_lid_matrices(context: *mut c_void) -> c_int {
    // SAFETY: context is the EngineCtx plugin_create registered with this engine.
    let Some(c) = (unsafe { ctx(context) }) else {
        return -1;
    };
    guarded(c.log, &format!("{}: routing", c.kind.name()), -1, || {
        c.build().map(|()| 0)
    })
}

unsafe extern "C" fn cb_ucast_build_fwd_tables(context: *mut c_void) -> c_int {
    // SAFETY: context is the EngineCtx plugin_create registered with this engine.
    let Some(c) = (unsafe { ctx(context) }) else {
        return -1;
    };
    guarded(
        c.log,
        &format!("{}: writing the forwarding tables", c.kind.name()),
        -1,
        || c.write_tables().map(|()| 0),
    )
}

unsafe extern "C" fn cb_mcast_build_stree(
    context: *mut c_void,
    mbox: *mut ffi::osm_mgrp_box_t,
) -> ffi::ib_api_status_t {
    // SAFETY: context is the EngineCtx plugin_create registered with this engine.
    let Some(c) = (unsafe { ctx(context) }) else {
        return ffi::_ib_api_status_t_IB_ERROR;
    };
    // SAFETY: OpenSM passes the live box of the MLID it processes, under its lock.
    let Some(mbox) = (unsafe { raw::McastBox::from_callback(mbox) }) else {
        return ffi::_ib_api_status_t_IB_ERROR;
    };
    guarded(
        c.log,
        &format!("{}: multicast tree", c.kind.name()),
        ffi::_ib_api_status_t_IB_ERROR,
        || {
            c.mcast_build_stree(mbox)
                .map(|()| ffi::_ib_api_status_t_IB_SUCCESS)
        },
    )
}

unsafe extern "C" fn cb_path_sl(
    context: *mut c_void,
    hint: u8,
    slid: ffi::ib_net16_t,
    dlid: ffi::ib_net16_t,
) -> u8 {
    // SAFETY: context is the EngineCtx plugin_create registered with this engine.
    let Some(c) = (unsafe { ctx(context) }) else {
        return hint;
    };
    guarded(c.log, "dfsssp-rs: path_sl", hint, || {
        Ok(c.path_sl(hint, u16::from_be(slid), u16::from_be(dlid)))
    })
}

unsafe extern "C" fn cb_update_sl2vl(
    context: *mut c_void,
    port: *mut ffi::osm_physp_t,
    _in_port: u8,
    _out_port: u8,
    table: *mut ffi::ib_slvl_table_t,
) {
    // SAFETY: context is an engine registered by plugin_create (OpenSM hands it back).
    let Some(c) = (unsafe { ctx(context) }) else {
        return;
    };
    // SAFETY: OpenSM's QoS setup passes the live port it programs and that port's SL-to-VL
    // table, both valid for this call and not touched by anyone else meanwhile (lock held).
    let (port, table) = unsafe { (Physp::from_callback(port), table.as_mut()) };
    guarded(c.log, "dfsssp-rs: update_sl2vl", (), || {
        c.update_sl2vl(port, table);
        Ok(())
    })
}

unsafe extern "C" fn cb_destroy(context: *mut c_void) {
    // The context itself belongs to the plug-in (freed in plugin_delete); drop the routing.
    // SAFETY: context is the EngineCtx plugin_create registered with this engine.
    if let Some(c) = unsafe { ctx(context) } {
        let _ = catch_unwind(AssertUnwindSafe(|| *c.write() = State::default()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_carries_the_headers_version() {
        assert!(version().starts_with("OpenSM 3.3."), "{}", version());
    }

    #[test]
    fn panic_messages_are_extracted() {
        let p = catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(panic_message(&*p), "boom 7");
        let p = catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(panic_message(&*p), "static");
        let p = catch_unwind(|| std::panic::panic_any(42u8)).unwrap_err();
        assert!(panic_message(&*p).contains("non-text"));
    }

    /// sw0 -- sw1, ca0 on sw0 (LID 3), ca1 on sw1 (LID 4); layer = 1 + source switch.
    fn ctx_with_layers(layers: bool) -> EngineCtx {
        use crate::routing::SwitchLidTable;
        let f = crate::testkit::two_switches(4, 1, &[(0, 2, 3, 0), (1, 2, 4, 0)]);
        let graph = SwitchGraph::new(&f).unwrap();
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
                graph,
                routing,
                hops_dropped: false,
                fabric: f,
                cfg: EngineConfig::new(EngineKind::Dfsssp),
                dump_dir: None,
                dumps_due: AtomicBool::new(false),
                metrics_due: AtomicBool::new(false),
                warned_few_vls: AtomicBool::new(false),
                warned_admin_table: AtomicBool::new(false),
                full_max_load: 0,
                max_load: 0,
                summary: Default::default(),
                previous: std::sync::Mutex::new(None),
                mcast: Default::default(),
                sl_offset: 0,
                sls: SlRange::default(),
                hints_kept: AtomicU16::new(0),
                hints_replaced: AtomicU16::new(0),
                warned_shared_vl: AtomicBool::new(false),
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
        }
    }

    #[test]
    fn hops_dropped_for_the_upload_come_back_the_same() {
        let ctx = ctx_with_layers(false);
        let before = ctx.read().active.as_ref().unwrap().routing.hops.clone();
        {
            let mut st = ctx.write();
            let a = st.active.as_mut().unwrap();
            a.routing.hops = SwitchLidTable::new(0, a.routing.lft.max_lid, NO_PATH);
            a.hops_dropped = true;
        }
        ctx.restore_hops();
        let st = ctx.read();
        let a = st.active.as_ref().unwrap();
        assert!(!a.hops_dropped);
        assert_eq!(a.routing.hops, before);
    }

    #[test]
    fn path_sl_is_the_layer_of_the_source_switch() {
        let c = ctx_with_layers(true);
        assert_eq!(c.path_sl(7, 3, 4), 1, "CA on sw0 -> its switch's layer");
        assert_eq!(c.path_sl(7, 4, 3), 2, "CA on sw1");
        assert_eq!(c.path_sl(7, 2, 3), 2, "a switch LID is its own source");
        assert_eq!(c.path_sl(7, 3, 9), 7, "unknown DLID: the hint");
        assert_eq!(c.path_sl(7, 0, 4), 7, "unknown SLID: the hint");
        assert_eq!(
            ctx_with_layers(false).path_sl(5, 3, 4),
            5,
            "one layer: the hint"
        );
        // A lane left to multicast: every layer one SL up, a single layer included (SL 1, not
        // the hint, which would put unicast on multicast's VL 0).
        for layers in [true, false] {
            let c = ctx_with_layers(layers);
            if let Some(a) = c.write().active.as_mut() {
                a.sl_offset = 1;
            }
            let want = if layers { 2 } else { 1 };
            assert_eq!(c.path_sl(7, 3, 4), want, "layers {layers}, offset 1");
        }
        *c.write() = State::default();
        assert_eq!(c.path_sl(6, 3, 4), 6, "no routing: the hint");
    }

    #[test]
    fn a_layer_sl_range_leaves_other_hints_to_qos() {
        let c = ctx_with_layers(true);
        if let Some(a) = c.write().active.as_mut() {
            a.sls = SlRange {
                first: 2,
                range: Some((2, 5)),
            };
        }
        // Layers 1 and 2 of the fixture on SLs 3 and 4; hints in the range or 0 get them.
        assert_eq!(c.path_sl(0, 3, 4), 3);
        assert_eq!(c.path_sl(5, 4, 3), 4);
        // A QoS level's SL outside the range is the admin's.
        assert_eq!(c.path_sl(9, 3, 4), 9);
        assert_eq!(c.path_sl(1, 3, 4), 1);
        // One layer, on SL 2: not the hint.
        let c = ctx_with_layers(false);
        if let Some(a) = c.write().active.as_mut() {
            a.sls = SlRange {
                first: 2,
                range: Some((2, 3)),
            };
        }
        assert_eq!(c.path_sl(0, 3, 4), 2);
        assert_eq!(c.path_sl(7, 3, 4), 7);
    }
}
