//! The routing run: `build_lid_matrices` reads the subnet, runs the engine and plans the tables;
//! `ucast_build_fwd_tables` writes them and makes the routing the active one.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::time::Instant;

use super::lid_matrix::LidMatrixWriter;
use super::persist::{self, Kept, Prior};
use super::qos::SlRange;
use super::raw::{self, LockedSubnet};
use super::{ffi, log, subnet, tables};
use super::{Active, AdapterError, EngineCtx, Pending};
use crate::engine::{self, Routed};
use crate::routing::{SwitchLidTable, NO_PATH};

/// What a run routes with.
struct RunSetup {
    cfg: engine::EngineConfig,
    /// The SLs the routing may use.
    sls: SlRange,
    rc: engine::RerouteConfig,
    /// The routing to re-route from: the one uploaded last by this process, or one adopted
    /// from the state file, or the switches' tables read back, adopted beside the LID matrix.
    prior: Prior,
    /// Where the routing's state is kept.
    state_path: Option<std::path::PathBuf>,
}

impl EngineCtx {
    /// build_lid_matrices: everything is computed here.
    pub(super) fn build(&self) -> Result<(), AdapterError> {
        let started = Instant::now();
        let name = self.kind.name();
        // The routing the switches hold now is the one to re-route from; if this run fails,
        // OpenSM's next engine replaces it, so it is not kept beyond this run.
        let active = std::mem::take(&mut *self.write()).active;
        let heavy_sweep = self.heavy_sweep.swap(false, Ordering::Relaxed);
        let hook = super::injected_failure();
        #[cfg(feature = "test-hooks")]
        if hook.as_deref() == Some("error") || super::fail_once(hook.as_deref(), name) {
            return Err(AdapterError::Injected);
        }

        let api = ffi::api().ok_or(AdapterError::NoApi)?;
        // SAFETY: OpenSM calls build_lid_matrices from ucast_mgr_route with its lock held for
        // the whole call; self.osm is the running OpenSM that registered this engine; this is
        // the call's only LockedSubnet.
        let subnet = subnet::read(api, &unsafe { LockedSubnet::new(self.osm) })?;
        self.log_subnet(name, &subnet, started.elapsed());
        // (With no view of the subnet alive: it may release and retake OpenSM's lock.)
        let setup = self.run_setup(api, &subnet, active, heavy_sweep)?;
        // SAFETY: as above; OpenSM's lock is held again whatever the setup did with it.
        let mut osm = unsafe { LockedSubnet::new(self.osm) };
        // OpenSM's LID matrix depends on the fabric alone: written beside the routing, on a
        // thread that takes only what the routing leaves of the cores, then on both. On a small
        // fabric starting that thread costs more than the matrix: written after the routing.
        let fail_from =
            (hook.as_deref() == Some("lid-matrix")).then(|| subnet.fabric.switch_count() / 2);
        let matrix = LidMatrixWriter::new(api, &mut osm, &subnet.fabric, fail_from)?;
        let helper = raw::IdleHelper::default();
        let prior = setup.prior;
        let beside_routing =
            crate::par::worth_it(subnet.fabric.switch_count() * subnet.fabric.endpoints().len());
        let (out, beside) = std::thread::scope(|scope| {
            let beside = beside_routing.then(|| {
                scope.spawn(|| {
                    helper.enter();
                    matrix.work();
                })
            });
            let out = catch_unwind(AssertUnwindSafe(|| {
                // (While the LID matrix is being written.)
                #[cfg(feature = "test-hooks")]
                if hook.as_deref() == Some("panic") {
                    panic!(
                        "{}=panic: injected panic (test hook)",
                        super::ENV_INJECT_FAILURE
                    );
                }
                // Tables read back at a takeover are adopted here: the layers' derivation
                // (CPU-bound) overlaps the LID matrix instead of preceding it.
                let prior = match prior {
                    Prior::Ready(p) => p,
                    Prior::ReadBack(rb) => self.adopt_read_back(rb, &subnet.fabric, &setup.cfg),
                };
                let out = engine::run_from(
                    &subnet.fabric,
                    &setup.cfg,
                    prior.as_ref().map(Routed::view),
                    &setup.rc,
                );
                // From here on this thread may wait for the helper (the matrix it builds, the
                // rows it writes): it runs normally again, however busy the host. A failed
                // routing needs no more rows: they are reset.
                helper.raise();
                if out.is_err() {
                    matrix.stop();
                }
                matrix.work();
                (out, prior)
            }));
            // A panic stops the helper too, before the join.
            if out.is_err() {
                helper.raise();
                matrix.stop();
            }
            (out, beside.map_or(Ok(()), |b| b.join()))
        });
        // On any failure from here on, the hop counts written are reset; a panic then goes on
        // to the callback's guard, which logs it and gives OpenSM its fallback.
        let (out, prior) = match (out, beside) {
            (Ok(out), Ok(())) => out,
            (Err(p), _) | (_, Err(p)) => {
                matrix.reset(api);
                resume_unwind(p)
            }
        };
        let fail = |e: AdapterError| {
            matrix.reset(api);
            Err(e)
        };
        let out = match out {
            Ok(out) => out,
            Err(e) => return fail(e.into()),
        };
        let hop_rows = matrix.finish(api)?;
        for (level, line) in &out.log {
            self.log.log(*level, line);
        }
        let plan = match tables::plan(&subnet, &out.graph, &out.routing) {
            Ok(plan) => plan,
            Err(e) => return fail(AdapterError::Plan(e)),
        };
        drop(matrix);
        self.log_computed(name, &out, started);
        self.write().pending = Some(Pending {
            routed: Routed::new(subnet.fabric, setup.cfg, out),
            dump_dir: subnet.dump_dir,
            plan,
            hop_rows,
            routing_log: self.log.is_active(log::ROUTING),
            started,
            sls: setup.sls,
            // Only compared with the new routing: its summary is not needed.
            previous: prior.map(|p| Routed { summary: None, ..p }),
            state_path: setup.state_path,
        });
        raw::release_free_heap();
        Ok(())
    }

    /// Logs what was read of the subnet: its size, the links left out and OpenSM's options
    /// (when they changed since the last run).
    fn log_subnet(&self, name: &str, subnet: &subnet::Subnet, read_time: std::time::Duration) {
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
    }

    /// The run's configuration from OpenSM's options and the settings, and the routing to
    /// re-route from: the state file's at this process's first run (a restart, a takeover), else
    /// the one in memory (`active`).
    fn run_setup(
        &self,
        api: &ffi::Api,
        subnet: &subnet::Subnet,
        active: Option<Active>,
        heavy_sweep: bool,
    ) -> Result<RunSetup, AdapterError> {
        let set = self.settings(subnet);
        let state_path = persist::state_path(&set);
        let (mut cfg, sls) = self.config(subnet, &set)?;
        let from_state = self.adopt_state(state_path.as_deref(), &subnet.fabric, active.is_some());
        let adopt_tables = set.adopt_switch_tables == Some(true);
        if !subnet.took_over {
            self.no_takeover();
        }
        let prior = match (from_state, active) {
            // Another SM was master until now: what this SM kept may be older than what the
            // switches hold.
            (kept, active) if subnet.took_over && adopt_tables => {
                let kept = match (kept, active) {
                    (Some(p), _) => Some(Kept::StateFile(p)),
                    (None, Some(a)) => Some(Kept::LastMastership(a.into_routed())),
                    (None, None) => None,
                };
                self.check_at_takeover(api, kept)
            }
            (Some(p), _) => Prior::Ready(Some(p)),
            (None, Some(a)) => Prior::Ready(Some(a.into_routed())),
            (None, None) if adopt_tables => self.adopt_switch_tables(api),
            (None, None) => Prior::Ready(None),
        };
        let mut rc = self.reroute_config(&set, heavy_sweep)?;
        if let Some(changed) = self.traffic_classes(subnet, &mut cfg) {
            rc.force_full.get_or_insert(changed);
        }
        Ok(RunSetup {
            cfg,
            sls,
            rc,
            prior,
            state_path,
        })
    }

    /// Logs the tables computed and how long the run took so far.
    fn log_computed(&self, name: &str, out: &engine::EngineOutput, started: Instant) {
        self.log.info(&format!(
            "{name}: computed tables for {} switches, {} CA/router ports, {} LIDs, {} layer(s) in \
             {:.3} s",
            out.graph.num_switches(),
            out.graph.terminals().len(),
            out.graph.dests().len(),
            out.routing.num_layers,
            started.elapsed().as_secs_f64()
        ));
    }

    /// ucast_build_fwd_tables: only writes what build() computed.
    pub(super) fn write_tables(&self) -> Result<(), AdapterError> {
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
        // Test hook: fail halfway through the switches, to exercise the reset.
        let fail_after = (super::injected_failure().as_deref() == Some("write"))
            .then_some(p.plan.switches.len() / 2);
        let stats = tables::write(api, &mut osm, &p.plan, &p.routed.routing, fail_after)
            .map_err(AdapterError::Write)?;
        self.log.info(&format!(
            "{name}: wrote the tables of {} switches ({} routed entries; {} hop rows written \
             while routing) in {:.3} s; {:.3} s since routing started",
            stats.switches,
            stats.routed_entries,
            p.hop_rows,
            t.elapsed().as_secs_f64(),
            p.started.elapsed().as_secs_f64()
        ));
        let metrics_due = p.routed.cfg.bisection_patterns > 0;
        // OpenSM's memory peaks next, while it queues every LFT block for the upload; the hop
        // counts (a switch-by-LID table) are not needed until the upload is done.
        let mut routed = p.routed;
        routed.routing.hops = SwitchLidTable::new(0, routed.routing.lft.max_lid, NO_PATH);
        let summary = routed.summary.take().unwrap_or_default();
        self.write().active = Some(Active {
            routed,
            dump_dir: p.dump_dir,
            dumps_due: AtomicBool::new(p.routing_log),
            metrics_due: AtomicBool::new(metrics_due),
            warned_few_vls: AtomicBool::new(false),
            warned_admin_table: AtomicBool::new(false),
            summary: std::sync::Mutex::new(summary),
            previous: std::sync::Mutex::new(p.previous),
            mcast: Default::default(),
            sls: p.sls,
            hints_kept: AtomicU16::new(0),
            hints_replaced: AtomicU16::new(0),
            warned_shared_vl: AtomicBool::new(false),
            state_due: AtomicBool::new(p.state_path.is_some()),
            state_path: p.state_path,
        });
        raw::release_free_heap();
        Ok(())
    }
}
