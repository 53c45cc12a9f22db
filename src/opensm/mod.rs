//! TODO
#[allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code, clippy::all)]
mod ffi {
    include!(concat!(env!("OUT_DIR"), "/opensm_bindings.rs"));
}

pub fn probe(osm: *mut ffi::osm_opensm_t) {
    unsafe { ffi::osm_log(&mut (*osm).log, 2, c"%s\n".as_ptr(), c"hi".as_ptr()); }
}
unsafe extern "C" fn create(osm: *mut ffi::osm_opensm_t) -> *mut std::ffi::c_void {
    probe(osm);
    unsafe { ffi::osm_register_external_routing_engine(osm, std::ptr::null(), std::ptr::null_mut()); }
    std::ptr::null_mut()
}
#[no_mangle]
pub static mut osm_event_plugin: ffi::osm_event_plugin_t = ffi::osm_event_plugin_t {
    osm_version: ffi::OSM_VERSION.as_ptr() as *const _,
    create: Some(create),
    delete: None,
    report: None,
};
