//! Generates the OpenSM bindings at build time from the installed libopensm-dev headers, and compiles
//! the C wrappers bindgen emits for the headers' static inline helpers. Only with the `opensm`
//! feature (the default): without it the crate is the core and the CLI, and needs neither OpenSM's
//! headers nor libclang.
//!
//! Also compiles the SA client `compare --in-opensm` ships (tools/sapaths.c) into an executable in
//! OUT_DIR, which the command embeds; where libibumad's header is missing it leaves an empty file
//! there instead (the command then says its SLs cannot be read from the SA).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "opensm")]
    opensm::generate();
    sa_client();
}

/// tools/sapaths.c -> OUT_DIR/sapaths, linked against libibumad with the system C compiler (the
/// one `cc` picks: $CC, else cc); an empty OUT_DIR/sapaths where that cannot be done.
fn sa_client() {
    use std::path::PathBuf;
    for f in ["tools/sapaths.c", "tools/mad.h"] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("sapaths");
    let built = (|| -> Result<(), String> {
        if !std::path::Path::new("/usr/include/infiniband/umad.h").exists() {
            return Err("libibumad's header (libibumad-dev) is not installed".into());
        }
        let compiler = cc::Build::new()
            .opt_level(2)
            .cargo_metadata(false)
            .try_get_compiler()
            .map_err(|e| e.to_string())?;
        let st = compiler
            .to_command()
            .args(["-Wall", "-Wextra", "-o"])
            .arg(&out)
            .arg("tools/sapaths.c")
            .arg("-libumad")
            .status()
            .map_err(|e| e.to_string())?;
        if st.success() {
            Ok(())
        } else {
            Err(format!("the C compiler failed ({st})"))
        }
    })();
    if let Err(e) = built {
        println!(
            "cargo:warning=the SA client of `compare --in-opensm` is not built: {e}; \
             its SLs will not be read"
        );
        std::fs::write(&out, b"").expect("write OUT_DIR/sapaths");
    }
}

#[cfg(feature = "opensm")]
mod opensm {
    use std::env;
    use std::path::{Path, PathBuf};

    const OPENSM_INCLUDE: &str = "/usr/include/infiniband";

    /// The OpenSM headers include/dfsssp_rs.h reads, directly or not: the bindings (and the version
    /// string OpenSM compares before it loads the plug-in) must be regenerated when any of them
    /// changes, e.g. after an OpenSM upgrade.
    const HEADER_DIRS: [&str; 3] = ["opensm", "complib", "iba"];

    pub fn generate() {
        println!("cargo:rerun-if-changed=include/dfsssp_rs.h");
        println!("cargo:rerun-if-env-changed=OPENSM_INCLUDE_DIR");

        let include_dir = PathBuf::from(
            env::var("OPENSM_INCLUDE_DIR").unwrap_or_else(|_| OPENSM_INCLUDE.to_string()),
        );
        let version_header = include_dir.join("opensm/osm_version.h");
        if !version_header.exists() {
            panic!(
                "\n\ndfsssp-rs needs OpenSM's development headers: {} not found.\n\
             Install them with:  sudo apt-get install libopensm-dev\n\
             (or set OPENSM_INCLUDE_DIR to the directory holding opensm/, complib/ and iba/,\n\
             or build the core and the CLI alone: cargo build --no-default-features)\n\n",
                version_header.display()
            );
        }

        for dir in HEADER_DIRS {
            // cargo watches a directory's files (recursively) by their modification times.
            println!("cargo:rerun-if-changed={}", include_dir.join(dir).display());
        }

        let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let wrappers = out_dir.join("opensm_static_wrappers.c");

        let bindings = bindgen::Builder::default()
        .header("include/dfsssp_rs.h")
        .clang_arg(format!("-I{}", include_dir.display()))
        .clang_arg("-Iinclude")
        .allowlist_function("osm_.*|cl_qmap_.*|cl_qlist_.*|cl_ptr_vector_.*|cl_plock_.*|ib_port_info_get_.*|ib_switch_info_.*")
        .allowlist_type("osm_.*|external_routing_engine_module_t|ib_slvl_table_t|ib_net16_t|ib_net64_t")
        // Functions of the opensm process are resolved at run time (src/opensm/ffi.rs), never
        // linked: keep them out of the bindings so nothing calls them directly.
        .blocklist_function(
            "osm_log|osm_register_external_routing_engine|osm_get_switch_by_guid|\
             osm_switch_set_hops|osm_switch_clear_hops|osm_link_is_healthy|osm_link_is_throttled|osm_mcast_tbl_set|\
             osm_mcast_tbl_clear_mlid|osm_req_get",
        )
        .allowlist_var("OSM_VERSION|OSM_LOG_.*|OSM_NO_PATH|IB_NODE_TYPE_.*|IB_LINK_.*|IB_MAX_NUM_VLS|OSM_EVENT_PLUGIN_INTERFACE_VER")
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers)
        .layout_tests(false)
        .derive_default(true)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| {
            panic!(
                "\n\nbindgen could not read the OpenSM headers ({e}).\n\
                 It needs libclang:  sudo apt-get install libclang-dev clang\n\n"
            )
        });
        bindings
            .write_to_file(out_dir.join("opensm_bindings.rs"))
            .expect("write opensm_bindings.rs");

        compile_wrappers(&wrappers, &include_dir);

        // OpenSM dlclose()s its plug-ins on shutdown while threads started by the engine (rayon's
        // pool) may still exist: keep the library mapped.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }

    fn compile_wrappers(wrappers: &Path, include_dir: &Path) {
        cc::Build::new()
            .file(wrappers)
            .include(include_dir)
            .include("include")
            // bindgen's wrapper file includes the header by its path relative to the crate root.
            .include(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .flag_if_supported("-w")
            .compile("opensm_static_wrappers");
    }
}
