//! Work after the upload, when OpenSM reports the unicast routing done (off the routing phase):
//! the hop counts put back, what changed from the previous routing logged, the incremental
//! check settled by a complete one, the deferred metrics and the engine's dump files.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::log::Code;
use super::{Active, EngineCtx, PATH_SL_FILE, RUN_FILE};
use crate::engine::{self, EngineKind};
use crate::io::run_record::RunRecord;

impl EngineCtx {
    /// The hop counts dropped for the upload, rebuilt under the read lock (path_sl answers
    /// meanwhile) and put back under the write lock.
    fn restore_hops(&self) {
        let hops = {
            let st = self.read();
            match st.active.as_ref() {
                Some(a) if a.hops_dropped() => {
                    crate::routing::walked_hops(&a.routed.graph, &a.routed.routing.lft)
                }
                _ => return,
            }
        };
        if let Some(a) = self.write().active.as_mut() {
            if a.hops_dropped() {
                let r = &mut a.routed;
                if hops.shape() == (r.graph.num_switches(), r.routing.lft.stride()) {
                    r.routing.hops = hops;
                }
            }
        }
    }

    /// The engine's own dumps of the active routing, if due. The tables are in place already: a
    /// failure here is logged only.
    pub(super) fn write_due_dumps(&self) {
        self.restore_hops();
        let st = self.read();
        let Some(a) = st.active.as_ref() else { return };
        let r = &a.routed;
        self.log_change(a);
        self.settle_summary(a);
        self.save_state(a);
        if a.metrics_due.swap(false, Ordering::Relaxed) {
            // Off the routing phase: OpenSM reports the routing done without holding its lock.
            if let Some((level, line)) =
                engine::metrics_line(&r.fabric, &r.graph, &r.routing, &r.cfg, r.sl_offset)
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
        match crate::io::run_record::write_file(&path, &RunRecord::new(&r.cfg, &r.fabric)) {
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
        match crate::io::path_sl::write_file(&path, &r.fabric, &r.graph, &r.routing, a.base_sl()) {
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
        let d = crate::reroute::diff(prev.view().routed_fabric(), a.routed.view().routed_fabric());
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
        let r = &a.routed;
        match engine::settle_summary(&r.fabric, &r.graph, &r.routing, &mut summary) {
            Ok(None) => {}
            Ok(Some(rep)) => self.log.verbose(&format!(
                "{name}: complete check after the upload: {} ({:.3} s)",
                rep.summary(),
                t.elapsed().as_secs_f64()
            )),
            Err(e) => self.log.error(&format!(
                "{name}: {}: the routing in place failed the complete check after its \
                 incremental check passed: {e}; the next routing run starts from a complete \
                 traversal",
                Code::CheckDisagreed
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::opensm::ctx_with_layers;
    use crate::routing::{SwitchLidTable, NO_PATH};

    #[test]
    fn hops_dropped_for_the_upload_come_back_the_same() {
        let ctx = ctx_with_layers(false);
        let before = ctx
            .read()
            .active
            .as_ref()
            .unwrap()
            .routed
            .routing
            .hops
            .clone();
        {
            let mut st = ctx.write();
            let r = &mut st.active.as_mut().unwrap().routed.routing;
            r.hops = SwitchLidTable::new(0, r.lft.max_lid, NO_PATH);
        }
        ctx.restore_hops();
        let st = ctx.read();
        let a = st.active.as_ref().unwrap();
        assert!(!a.hops_dropped());
        assert_eq!(a.routed.routing.hops, before);
    }
}
