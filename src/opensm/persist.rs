//! The routing state across SM restarts and takeovers ([`crate::state`]): saved after every
//! upload, adopted as the previous routing at a process's first routing run, or whenever another
//! SM (a master on the other host of an HA pair sharing the state file) has written it since.
//!
//! Adopting only gives the engine a routing to continue from: the re-route, its balance judgement
//! and the full verification run as for any change. Nothing here can fail routing: a state file
//! that cannot be read or does not fit is logged (`WRN DF09`) and the engine computes from
//! scratch; a write that fails is logged (`ERR DF10`) and routing goes on. Writing happens on its
//! own thread, off OpenSM's state machine.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Instant;

use super::log::Code;
use super::raw::LockedSubnet;
use super::{ffi, readback, Active, EngineCtx};
use crate::engine::{self, EngineConfig, Routed};
use crate::fabric::Fabric;
use crate::state;

/// How long the switches may take to answer every LFT block read back.
const READBACK_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// What this process knows of the state file.
pub(super) struct Persist {
    /// The first routing run has looked at the file.
    tried: bool,
    /// The switches' tables were read back (`adopt_switch_tables`): at the first run with
    /// nothing to continue from, or at a takeover.
    tables_tried: bool,
    /// They were read back in the current takeover (OpenSM's first sweep out of standby).
    read_at_takeover: bool,
    /// This process's stamp in the files it writes (random), and its last write's serial.
    writer: u64,
    serial: u64,
    /// The (writer, serial) of the file this process last wrote or adopted.
    last_seen: Option<(u64, u64)>,
    /// The write in flight: the next one waits for it, so files land in order.
    writing: Option<JoinHandle<()>>,
}

impl Default for Persist {
    fn default() -> Self {
        Persist {
            tried: false,
            tables_tried: false,
            read_at_takeover: false,
            writer: rand::random::<u64>() | 1,
            serial: 0,
            last_seen: None,
            writing: None,
        }
    }
}

impl Persist {
    /// Waits for the write in flight (before the plug-in goes away: the thread logs).
    pub(super) fn finish(&mut self) {
        if let Some(h) = self.writing.take() {
            let _ = h.join();
        }
    }
}

impl EngineCtx {
    fn persist(&self) -> std::sync::MutexGuard<'_, Persist> {
        self.persist.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state file's routing, when it should replace `in_memory` as the routing to continue
    /// from: at this process's first routing run, or when another SM wrote the file since this
    /// process last wrote or read it (a takeover and back). `fabric`: the subnet discovered now.
    pub(super) fn adopt_state(
        &self,
        path: Option<&Path>,
        fabric: &Fabric,
        in_memory: bool,
    ) -> Option<Routed> {
        let path = path?;
        let name = self.kind.name();
        let mut p = self.persist();
        if std::mem::replace(&mut p.tried, true) {
            // Without a routing in memory a run failed and OpenSM's fallback engine rewrote the
            // tables: the file no longer describes them.
            if !in_memory {
                return None;
            }
            match state::read_header(path) {
                Ok(h) if h.writer != p.writer && p.last_seen != Some((h.writer, h.serial)) => {
                    self.log.info(&format!(
                        "{name}: {} was written by another SM since this one routed: \
                         continuing from its routing",
                        path.display()
                    ));
                }
                _ => return None,
            }
        }
        let t = Instant::now();
        let shown = path.display().to_string();
        let loaded = state::load(path)
            .and_then(|s| state::same_fabric(&s.routed.fabric, fabric, &shown).map(|_| s));
        match loaded {
            Ok(s) => {
                p.last_seen = Some((s.header.writer, s.header.serial));
                self.log.info(&format!(
                    "{name}: adopted the routing state {shown} ({} switches, {} layer(s), {} \
                     engine, written by SM {:#018x} as its routing #{}) in {:.3} s; verified in full \
                     when read, so only what changed since is re-routed and checked again",
                    s.routed.graph.num_switches(),
                    s.routed.routing.num_layers,
                    s.routed.cfg.kind,
                    s.header.writer,
                    s.header.serial,
                    t.elapsed().as_secs_f64()
                ));
                // Its verification at decoding is the summary the re-route starts from.
                Some(s.routed)
            }
            Err(e) => {
                self.log.info(&format!(
                    "{}: {name}: routing state not adopted ({}): {e}; {}",
                    Code::StateIgnored,
                    e.kind(),
                    if in_memory {
                        "continuing from the routing in memory"
                    } else {
                        "computing from scratch"
                    }
                ));
                None
            }
        }
    }

    /// The routing the switches hold, read back from them (`adopt_switch_tables`), at this
    /// process's first run when it has nothing else to continue from: a standby that became
    /// master without the previous master's state file. `None` (said why) where it cannot be
    /// read back or does not hold a routing the engine can continue (then it computes from
    /// scratch).
    ///
    /// Must be called from `build_lid_matrices` with no view of the subnet alive: OpenSM's lock
    /// is released while the switches answer ([`readback`]).
    pub(super) fn adopt_switch_tables(&self, api: &ffi::Api) -> Prior {
        if std::mem::replace(&mut self.persist().tables_tried, true) {
            return Prior::Ready(None);
        }
        self.read_back(api, None)
    }

    /// At the first run after this SM came out of standby (`took_over`, with
    /// `adopt_switch_tables`): another SM was master until now, so the switches hold its
    /// routing, and what this SM kept may be older. The switches' tables are read back once per
    /// takeover and adopted, their layers derived as the other master derived or computed them
    /// (README, "High availability without shared storage"); a state file that agrees with
    /// them entry for entry is continued instead (it keeps its layers exactly: on shared
    /// storage, the other master wrote it). Where the tables cannot be adopted, what was kept
    /// is continued after all.
    pub(super) fn check_at_takeover(&self, api: &ffi::Api, kept: Option<Kept>) -> Prior {
        {
            let mut p = self.persist();
            p.tables_tried = true;
            if std::mem::replace(&mut p.read_at_takeover, true) {
                return Prior::Ready(kept.map(Kept::into_routed));
            }
        }
        self.read_back(api, kept)
    }

    /// Starts a new takeover's reading: called at runs that are no takeover's first.
    pub(super) fn no_takeover(&self) {
        self.persist().read_at_takeover = false;
    }

    /// Reads the switches' tables back, unless `kept` is a state file that agrees with them entry
    /// for entry (then continued); every outcome but the adoption itself logged here. The
    /// adoption (the layers' derivation, CPU-bound) is left to [`Self::adopt_read_back`], which
    /// runs beside OpenSM's LID matrix: this part must run before it, with no view of the subnet
    /// alive, as OpenSM's lock is released while the switches answer.
    fn read_back(&self, api: &ffi::Api, kept: Option<Kept>) -> Prior {
        let name = self.kind.name();
        let t = Instant::now();
        // SAFETY: OpenSM is in build_lid_matrices (its lock held by this thread) and the caller
        // keeps no view of the subnet across this call.
        let rb = match unsafe { readback::read_back_lfts(self.osm, api, READBACK_LIMIT) } {
            Ok(rb) => rb,
            Err(e) => return Prior::Ready(self.not_adopted(kept, e)),
        };
        let read = format!(
            "{} switches, {} LFT blocks read back in {:.3} s",
            rb.switches,
            rb.blocks,
            t.elapsed().as_secs_f64()
        );
        // SAFETY: the lock is held again; this view ends within this function.
        let tables = unsafe { LockedSubnet::new(self.osm) }.current_lfts();
        let differ = match &kept {
            Some(Kept::StateFile(r)) => match engine::disagreements(r.view(), &tables) {
                0 => {
                    self.log.info(&format!(
                        "{name}: the switches hold the routing state file's tables entry for \
                         entry ({read}): continuing from it"
                    ));
                    return Prior::Ready(kept.map(Kept::into_routed));
                }
                n => format!("; the routing state file differs from them in {n} entries"),
            },
            Some(Kept::LastMastership(r)) => match engine::disagreements(r.view(), &tables) {
                0 => "; they are this SM's routing of its last mastership".to_string(),
                n => format!("; this SM's routing of its last mastership differs in {n} entries"),
            },
            None => String::new(),
        };
        Prior::ReadBack(TablesRead {
            tables,
            read,
            refused: rb.refused,
            differ,
            kept,
        })
    }

    /// Adopts the tables read back ([`Self::read_back`]) for `fabric`, or falls back to what was
    /// kept; the outcome logged. Needs no lock: it runs beside OpenSM's LID matrix.
    pub(super) fn adopt_read_back(
        &self,
        rb: TablesRead,
        fabric: &Fabric,
        cfg: &EngineConfig,
    ) -> Option<Routed> {
        let name = self.kind.name();
        let TablesRead {
            tables,
            read,
            refused,
            differ,
            kept,
        } = rb;
        let t = Instant::now();
        match engine::adopt_tables_how(fabric.clone(), cfg, &tables) {
            Ok((routed, from)) => {
                let stand_in =
                    (routed.fabric.nodes().iter()).any(|n| n.guid == engine::STAND_IN_GUID);
                let differ = match (routed.fabric.links().len())
                    .saturating_sub(fabric.links().len())
                {
                    0 => differ,
                    _ if stand_in => format!(
                        "{differ}; they route over switch ports that are down now, which no \
                         pairing into cables explains (a switch gone, with what it linked): \
                         adopted with a stand-in switch at those ports, what entered it \
                         re-routed"
                    ),
                    1 => format!("{differ}; they route over a cable that failed since: re-routed"),
                    n => format!(
                        "{differ}; they route over {n} cables that failed since (told apart by \
                         the tables' hops): re-routed"
                    ),
                };
                let known: std::collections::HashSet<u64> =
                    routed.fabric.nodes().iter().map(|n| n.guid).collect();
                let differ = match fabric
                    .nodes()
                    .iter()
                    .filter(|n| !known.contains(&n.guid))
                    .count()
                {
                    0 => differ,
                    n => format!(
                        "{differ}; {n} node(s) joined since (no table routes their LIDs): added \
                         by the re-route"
                    ),
                };
                // Uploaded with the re-route that follows, not counted in its changes.
                let differ = match engine::disagreements(routed.view(), &tables) {
                    0 => differ,
                    n => format!(
                        "{differ}; {n} entries {}, uploaded with the re-route",
                        engine::NO_DATA_REROUTED
                    ),
                };
                let layers = match from {
                    engine::LayersFrom::Derived => "derived from the routes",
                    engine::LayersFrom::Recomputed => {
                        "taken from this fabric's computation from scratch, which gives these \
                         very tables (their routes need the Up*/Down* escape, whose layers no \
                         derivation from the routes reproduces),"
                    }
                };
                self.log.info(&format!(
                    "{name}: adopted the routing the switches hold ({read}, {refused} request(s) \
                     refused; {} layer(s) {layers} in {:.3} s{differ}); verified in full \
                     when read, so only what changed since is re-routed and checked again",
                    routed.routing.num_layers,
                    t.elapsed().as_secs_f64()
                ));
                Some(routed)
            }
            Err(e) => self.not_adopted(kept, format!("{read}: {e}{differ}")),
        }
    }

    /// The switches' tables not adopted, and why: what was kept is continued, if anything.
    fn not_adopted(&self, kept: Option<Kept>, why: String) -> Option<Routed> {
        let then = kept
            .as_ref()
            .map_or("computing from scratch".to_string(), |k| {
                format!("continuing from {}", k.source())
            });
        self.log.info(&format!(
            "{}: {}: the switches' tables not adopted ({why}): {then}",
            Code::StateIgnored,
            self.kind.name()
        ));
        kept.map(Kept::into_routed)
    }

    /// Saves the active routing to its state file, if due (once per upload), on a thread of its
    /// own; a failure is logged and changes nothing else.
    pub(super) fn save_state(&self, a: &Active) {
        if !a
            .state_due
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let Some(path) = a.state_path.clone() else {
            return;
        };
        let name = self.kind.name();
        let t = Instant::now();
        let mut p = self.persist();
        p.serial += 1;
        let bytes = state::encode(a.routed.view(), p.writer, p.serial);
        p.last_seen = Some((p.writer, p.serial));
        let encoded = t.elapsed();
        let before = p.writing.take();
        let log = self.log;
        let serial = p.serial;
        let spawned = std::thread::Builder::new()
            .name("dfsssp-rs-state".into())
            .spawn(move || {
                if let Some(h) = before {
                    let _ = h.join();
                }
                let t = Instant::now();
                match state::write_atomic(&path, &bytes) {
                    Ok(()) => log.info(&format!(
                        "{name}: saved routing state #{serial} to {} ({:.1} MB; encoded in {:.3} \
                         s, written and synced in {:.3} s)",
                        path.display(),
                        bytes.len() as f64 / 1e6,
                        encoded.as_secs_f64(),
                        t.elapsed().as_secs_f64()
                    )),
                    Err(e) => log.error(&format!(
                        "{}: {name}: cannot save the routing state to {}: {e}; routing goes on \
                         (a restart would compute from scratch)",
                        Code::StateWrite,
                        path.display()
                    )),
                }
                // The encoded state is freed last, off OpenSM's thread: its memory goes back
                // too.
                drop(bytes);
                super::raw::release_free_heap();
            });
        match spawned {
            Ok(h) => p.writing = Some(h),
            Err(e) => self.log.error(&format!(
                "{}: {name}: cannot start the thread that saves the routing state: {e}",
                Code::StateWrite
            )),
        }
    }
}

/// What a routing run continues from: a routing at hand, or the switches' tables read back and
/// still to be adopted ([`EngineCtx::adopt_read_back`]).
pub(super) enum Prior {
    Ready(Option<Routed>),
    ReadBack(TablesRead),
}

/// The switches' tables read back at a takeover ([`EngineCtx::read_back`]): (node GUID, port per
/// LID), the read-back's log text, and what this SM kept.
pub(super) struct TablesRead {
    tables: Vec<(u64, Vec<u8>)>,
    read: String,
    refused: usize,
    differ: String,
    kept: Option<Kept>,
}

/// What this SM kept from before a takeover ([`EngineCtx::check_at_takeover`]).
pub(super) enum Kept {
    /// The routing state file's routing (its own, or on shared storage the other master's).
    StateFile(Routed),
    /// Its own routing from when it was master before (its layers need not be the ones the
    /// other master answered since).
    LastMastership(Routed),
}

impl Kept {
    fn source(&self) -> &'static str {
        match self {
            Kept::StateFile(_) => "the routing state file",
            Kept::LastMastership(_) => "this SM's routing of its last mastership",
        }
    }

    fn into_routed(self) -> Routed {
        match self {
            Kept::StateFile(r) | Kept::LastMastership(r) => r,
        }
    }
}

/// Where a routing run keeps the state, from the settings and OpenSM's environment.
pub(super) fn state_path(set: &super::settings::Settings) -> Option<PathBuf> {
    super::settings::state_path(set, |k| std::env::var(k).ok())
}
