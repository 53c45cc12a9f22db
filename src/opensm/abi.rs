//! The C boundary: the plug-in descriptor OpenSM loads, `create`/`delete`/`report`, and the
//! routing engine's `extern "C"` callbacks, each a trampoline into [`EngineCtx`] inside
//! [`guarded`] (errors and panics logged, OpenSM given its fallback).

use std::any::Any;
use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use super::log::{Code, OsmLog};
use super::raw::{self, Physp};
use super::{ffi, AdapterError, EngineCtx, State};
use crate::engine::EngineKind;

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
            log.error(&format!("{}: {what} failed: {e}", Code::Failed));
            fallback
        }
        Err(p) => {
            // Logging cannot panic in a way that matters here, but stay defensive.
            let msg = panic_message(&*p);
            let _ = catch_unwind(AssertUnwindSafe(|| {
                log.error(&format!("{}: {what} panicked: {msg}", Code::Panicked));
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
    raw::limit_malloc_arenas();
    // SAFETY: the layout matches, so this is OpenSM's log, which outlives the plug-in.
    let log = unsafe { OsmLog::new(std::ptr::addr_of_mut!((*osm).log)) };
    let created = catch_unwind(AssertUnwindSafe(|| {
        let mut plugin = Box::new(Plugin {
            engines: Vec::new(),
        });
        let persist = std::sync::Arc::new(std::sync::Mutex::new(Default::default()));
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
                persist: persist.clone(),
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
                    "{}: dfsssp-rs: cannot register routing engine '{}' (status {status})",
                    Code::NotRegistered,
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
                "dfsssp-rs {}: registered routing engines {}; memory from {}",
                env!("CARGO_PKG_VERSION"),
                plugin
                    .engines
                    .iter()
                    .map(|e| e.kind.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                super::heap::which()
            ));
            Box::into_raw(plugin).cast()
        }
        Ok(_) => std::ptr::null_mut(),
        Err(p) => {
            log.error(&format!(
                "{}: dfsssp-rs: plug-in creation panicked: {}",
                Code::Panicked,
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
    // OpenSM has just freed the LFT blocks it queued for the upload (tens of MB on large
    // fabrics) into glibc's heap, where the work below, allocating from the plug-in's own heap
    // (super::heap), cannot reuse them: they go back to the system first, so that the two do not
    // add up to a new peak.
    super::raw::release_free_heap();
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
    // The last work of a routing run on OpenSM's thread: what it freed (dumps, the changes
    // compared, the state encoded) goes back to the system before the SM idles until the next
    // sweep, rather than stay resident among OpenSM's live objects.
    super::raw::release_free_heap();
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
        // rayon's pool starts its threads at its first use: here, at OpenSM's start, rather
        // than inside the first sweep's routing phase (its workers sleep until work comes).
        rayon::current_num_threads();
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
}
