//! `dfsssp-rs eval` against the real stack: the stock OpenSM in ibsim (plug-in loaded through the
//! harness in tests/common) writes its dumps, the CLI binary judges them, and the outside checks
//! (`ibdmchk`, the plug-in's own logged metrics) must agree.

mod common;

use std::path::Path;

use common::{cli, OpenSm, OsmRun, Sim};
use dfsssp_rs::fabric::{Fabric, NodeKind};
use dfsssp_rs::io::run_record::{RunRecord, RUN_FILE};
use dfsssp_rs::topo::by_name;
use serde_json::Value;

/// `eval ... --json`, which must succeed.
fn eval_json(args: &[&str]) -> Value {
    let mut a = vec!["eval", "--json", "--quiet"];
    a.extend_from_slice(args);
    let (ok, so, se) = cli(&a);
    assert!(ok, "dfsssp-rs {a:?} failed:\n{se}");
    serde_json::from_str(&so).unwrap_or_else(|e| panic!("eval JSON: {e}\n{so}"))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn f64_at(v: &Value, ptr: &str) -> f64 {
    v.pointer(ptr)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {ptr}"))
}

/// OpenSM in ibsim on `spec` with `o`; the simulator stays alive with the returned run.
fn opensm_run(name: &str, spec: &str, o: &OpenSm, engine: &str) -> (Sim, OsmRun) {
    let f = by_name(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let sim = Sim::start(name, &f);
    let run = sim.opensm(o);
    run.assert_configured_by(engine);
    (sim, run)
}

/// (a) The plug-in logs its metrics (Λ over N patterns with seed S); `eval` of the dumps OpenSM
/// wrote for the same run, with the same N and S, must give the same line, character for
/// character, and the routing recomputed offline from the plug-in's fabric record must give the
/// same numbers to the last bit.
fn eval_agrees_with_in_engine_metrics(name: &str, spec: &str, lmc: u8) {
    let (patterns, seed) = ("300", "7");
    let o = OpenSm::new("dfsssp-rs")
        .qos(true)
        .lmc(lmc)
        .env("DFSSSP_RS_BISECTION_PATTERNS", patterns)
        .env("DFSSSP_RS_SEED", seed);
    let (_sim, run) = opensm_run(name, spec, &o, "dfsssp-rs");
    let logged: Vec<&str> = run.log_lines("dfsssp-rs: metrics: ");
    assert_eq!(logged.len(), 1, "{}", run.summary());
    let logged = logged[0]
        .strip_prefix("dfsssp-rs: metrics: ")
        .expect("metrics line");
    assert!(
        logged.contains(&format!("({patterns} patterns, seed {seed})")),
        "{logged}"
    );

    let dumps = eval_json(&[
        "--dumps",
        path(&run.dir),
        "--patterns",
        patterns,
        "--seed",
        seed,
    ]);
    assert_eq!(dumps["summary"].as_str(), Some(logged), "eval of the dumps");
    assert_eq!(dumps["source"]["path_sl"], Value::Bool(true));
    assert_eq!(dumps["fabric"]["lmc"].as_u64(), Some(u64::from(lmc)));
    assert_eq!(dumps["deadlock"]["deadlock_free"], Value::Bool(true));
    assert!(dumps["metrics"]["connectivity"]["switch_to_lid"]["delivered"].as_u64() > Some(0));

    // The plug-in's record of the run: the fabric as it read it and the lanes it had.
    let rec: RunRecord = serde_json::from_str(&run.read(RUN_FILE)).expect(RUN_FILE);
    let lanes = rec.lanes.to_string();
    let record = run.dir.join(RUN_FILE);
    let mut args = vec![
        "--fabric",
        path(&record),
        "--engine",
        "dfsssp-rs",
        "--lanes",
        &lanes,
        "--patterns",
        patterns,
        "--seed",
        seed,
    ];
    let mcast = format!("--mcast-lane={}", rec.mcast_lane);
    args.push(&mcast);
    let offline = eval_json(&args);
    for ptr in [
        "/metrics/bisection/lambda",
        "/metrics/bisection/min",
        "/metrics/bisection/max",
        "/metrics/efi/max",
        "/metrics/efi/average",
        "/metrics/efi/max_link_load",
        "/metrics/hops/average",
        "/metrics/hops/fraction_minimal",
    ] {
        assert_eq!(
            f64_at(&dumps, ptr).to_bits(),
            f64_at(&offline, ptr).to_bits(),
            "{ptr}: dumps {} vs offline {}",
            dumps.pointer(ptr).unwrap(),
            offline.pointer(ptr).unwrap()
        );
    }
    assert_eq!(
        dumps["metrics"]["hops"]["histogram"],
        offline["metrics"]["hops"]["histogram"]
    );
    assert_eq!(dumps["summary"], offline["summary"]);
    // Same lanes, path for path.
    let per_lane = |v: &Value| -> Vec<(u64, u64)> {
        v["deadlock"]["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["paths"].as_u64().unwrap(),
                    l["dependencies"].as_u64().unwrap(),
                )
            })
            .filter(|&(p, _)| p > 0)
            .collect()
    };
    assert_eq!(per_lane(&dumps), per_lane(&offline));
}

#[test]
fn eval_of_plugin_dumps_matches_in_engine_metrics_torus() {
    eval_agrees_with_in_engine_metrics("cli-eval-a-torus", "torus:4x4,2", 0);
}

#[test]
fn eval_of_plugin_dumps_matches_in_engine_metrics_random_lmc1() {
    eval_agrees_with_in_engine_metrics(
        "cli-eval-a-random",
        "random:12,8,2,20,seed=3,parallel,lmc=1",
        1,
    );
}

/// The switch GUID -> (port -> neighbour switch GUID) map of a fabric.
fn switch_ports(f: &Fabric) -> std::collections::HashMap<(u64, u8), u64> {
    let mut m = std::collections::HashMap::new();
    for l in f.links() {
        let (a, b) = (&f.nodes()[l.a.node as usize], &f.nodes()[l.b.node as usize]);
        if a.kind == NodeKind::Switch && b.kind == NodeKind::Switch {
            m.insert((a.guid, l.a.port), b.guid);
            m.insert((b.guid, l.b.port), a.guid);
        }
    }
    m
}

/// (b) Stock minhop on a torus has credit loops: ibdmchk says so, and eval's deadlock check
/// finds a cycle made of real channels of the fabric, each leading to the next. Loop-free
/// routings (dfsssp-rs with its path-SL dump, stock up/down) pass both checks.
#[test]
fn deadlock_check_agrees_with_ibdmchk() {
    let spec = "torus:4x4,1";
    let f = by_name(spec).unwrap();
    let ports = switch_ports(&f);

    let (_s1, minhop) = opensm_run("cli-eval-b-minhop", spec, &OpenSm::new("minhop"), "minhop");
    let ib = minhop.ibdmchk(false, false, 0);
    assert_eq!(ib.credit_loops, Some(true), "ibdmchk:\n{}", ib.text);
    let ev = eval_json(&["--dumps", path(&minhop.dir), "--patterns", "20"]);
    assert_eq!(ev["source"]["path_sl"], Value::Bool(false));
    assert_eq!(ev["deadlock"]["deadlock_free"], Value::Bool(false));
    let lane0 = &ev["deadlock"]["lanes"][0];
    assert_eq!(lane0["acyclic"], Value::Bool(false));
    let cycle = lane0["cycle"].as_array().expect("a cycle");
    assert!(cycle.len() >= 2, "{cycle:?}");
    let guid = |h: &Value| {
        u64::from_str_radix(
            h["switch_guid"].as_str().unwrap().trim_start_matches("0x"),
            16,
        )
        .unwrap()
    };
    for (i, h) in cycle.iter().enumerate() {
        let next = &cycle[(i + 1) % cycle.len()];
        let port = h["port"].as_u64().unwrap() as u8;
        assert_eq!(
            ports.get(&(guid(h), port)),
            Some(&guid(next)),
            "hop {i} of the cycle is not a channel to the next hop: {cycle:?}"
        );
    }
    assert_eq!(ev["forwarding_loops"].as_u64(), Some(0));
    // The human report says it too, and a report of a bad routing still exits 0.
    let (ok, text, _) = cli(&["eval", "--dumps", path(&minhop.dir), "--patterns", "10"]);
    assert!(ok);
    assert!(text.contains("NOT deadlock-free"), "{text}");
    assert!(text.contains("CREDIT LOOP"), "{text}");
    assert!(
        text.contains("(torus "),
        "switches named by description:\n{text}"
    );

    // A torus whose layers measure better than one lane (on the 4x4 torus the one-lane search's
    // routing wins with QoS on too, and one lane has no loop to lose).
    let (_s2, df) = opensm_run(
        "cli-eval-b-dfsssp",
        "torus:6x6,1",
        &OpenSm::new("dfsssp-rs").qos(true),
        "dfsssp-rs",
    );
    let ib = df.ibdmchk(true, false, 0);
    assert_eq!(ib.credit_loops, Some(false), "ibdmchk:\n{}", ib.text);
    let ev = eval_json(&["--dumps", path(&df.dir), "--patterns", "20"]);
    assert_eq!(ev["source"]["path_sl"], Value::Bool(true));
    assert_eq!(
        ev["deadlock"]["deadlock_free"],
        Value::Bool(true),
        "{}",
        ev["deadlock"]
    );
    assert!(ev["deadlock"]["lanes_used"].as_u64() >= Some(2));
    // Without the path-SL dump the same tables are one lane, and that lane has a credit loop:
    // the check judges lanes, not engines.
    std::fs::remove_file(df.dir.join("opensm-path-sl.dump")).unwrap();
    let ev = eval_json(&["--dumps", path(&df.dir), "--patterns", "0"]);
    assert_eq!(ev["deadlock"]["deadlock_free"], Value::Bool(false));
    assert!(ev["metrics"]["bisection"].is_null());

    // updn finds no roots of its own in a torus: name one (the first switch).
    let roots = std::env::temp_dir().join(format!("cli-eval-b-roots-{}", std::process::id()));
    std::fs::write(&roots, format!("0x{:016x}\n", f.nodes()[0].guid)).unwrap();
    assert_eq!(f.nodes()[0].kind, NodeKind::Switch);
    let updn_conf = OpenSm::new("updn").conf(&format!("root_guid_file {}", roots.display()));
    let (_s3, updn) = opensm_run("cli-eval-b-updn", spec, &updn_conf, "updn");
    let _ = std::fs::remove_file(&roots);
    let ib = updn.ibdmchk(false, false, 0);
    assert_eq!(ib.credit_loops, Some(false), "ibdmchk:\n{}", ib.text);
    let ev = eval_json(&["--dumps", path(&updn.dir), "--patterns", "20"]);
    assert_eq!(
        ev["deadlock"]["deadlock_free"],
        Value::Bool(true),
        "{}",
        ev["deadlock"]
    );
    assert_eq!(ev["deadlock"]["lanes_used"].as_u64(), Some(1));
    for k in ["no_entry", "dead_end", "loops"] {
        assert_eq!(
            ev["metrics"]["connectivity"]["ca_to_lid"][k].as_u64(),
            Some(0),
            "{k}"
        );
    }
}

/// (c) Routes written by `dfsssp-rs route --lfts-out` for the net file given to ibsim, loaded by
/// stock OpenSM's `file` engine, are the very tables the plug-in installs on that fabric.
fn file_engine_matches_plugin(name: &str, spec: &str, lmc: u8) {
    let (sim, plug) = opensm_run(
        &format!("{name}-plugin"),
        spec,
        &OpenSm::new("dfsssp-rs").qos(true).lmc(lmc),
        "dfsssp-rs",
    );
    let rec: RunRecord = serde_json::from_str(&plug.read(RUN_FILE)).expect(RUN_FILE);
    let plugin_tables = common::parse_lfts_dump(&plug.read("opensm-lfts.dump"));

    // A fresh simulator: the file engine must install every entry itself.
    let f = by_name(spec).unwrap();
    let sim2 = Sim::start(&format!("{name}-file"), &f);
    let lfts = sim2.dir().join("routes.lfts");
    let net = sim.dir().join("fabric.net");
    let (ok, _, se) = cli(&[
        "route",
        "--fabric",
        path(&net),
        "--lmc",
        &lmc.to_string(),
        "--engine",
        "dfsssp-rs",
        "--lanes",
        &rec.lanes.to_string(),
        "--lfts-out",
        path(&lfts),
    ]);
    assert!(ok, "route failed:\n{se}");
    let file = sim2.opensm(
        &OpenSm::new("file")
            .lmc(lmc)
            .conf(&format!("lfts_file {}", lfts.display())),
    );
    file.assert_configured_by("file");
    let file_tables = common::parse_lfts_dump(&file.read("opensm-lfts.dump"));
    assert_eq!(plugin_tables.len(), f.switch_count());
    let entries: usize = plugin_tables.values().map(|t| t.len()).sum();
    assert!(entries >= f.switch_count() * f.endpoints().len());
    assert_eq!(
        file_tables, plugin_tables,
        "{spec}: tables installed by the file engine differ from the plug-in's"
    );
}

#[test]
fn route_output_loaded_by_file_engine_equals_plugin_tables_torus() {
    file_engine_matches_plugin("cli-eval-c-torus", "torus:3x3x2,2", 0);
}

#[test]
fn route_output_loaded_by_file_engine_equals_plugin_tables_random_lmc1() {
    file_engine_matches_plugin(
        "cli-eval-c-random",
        "random:12,8,2,20,seed=5,parallel,lmc=1",
        1,
    );
}

/// `eval --dfsssp-layers` over stock dfsssp's own tables: with CA ports as the only sources (the
/// model stock's CDG ends up with) it must count the layers stock itself logs as needed; with
/// every switch a source as well (what dfsssp-rs routes by) it can only need more. dfsssp-rs,
/// judged the same way, needs no more than stock under either model.
#[test]
fn dfsssp_layers_of_stock_tables_match_stock_log() {
    let spec = "ktree:4,3";
    let (_sim, run) = opensm_run(
        "layers-stock",
        spec,
        &OpenSm::new("dfsssp").qos(true),
        "dfsssp",
    );
    let logged: Vec<u64> = run
        .log_lines("Virtual Lanes needed:")
        .iter()
        .filter_map(|l| l.rsplit(' ').next()?.trim().parse().ok())
        .collect();
    assert_eq!(logged.len(), 1, "stock dfsssp's log: {logged:?}");
    let stock = eval_json(&[
        "--dumps",
        path(&run.dir),
        "--patterns",
        "0",
        "--dfsssp-layers",
    ]);
    let need = |v: &Value, model: &str| {
        v.pointer(&format!("/dfsssp_layers/{model}"))
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("no {model} in {v}"))
    };
    assert_eq!(need(&stock, "ca_sources"), logged[0]);
    assert!(need(&stock, "all_sources") >= need(&stock, "ca_sources"));

    let (_sim2, ours) = opensm_run(
        "layers-ours",
        spec,
        &OpenSm::new("dfsssp-rs").qos(true),
        "dfsssp-rs",
    );
    let mine = eval_json(&[
        "--dumps",
        path(&ours.dir),
        "--patterns",
        "0",
        "--dfsssp-layers",
    ]);
    for model in ["ca_sources", "all_sources"] {
        assert!(
            need(&mine, model) <= need(&stock, model),
            "{model}: dfsssp-rs {} > stock {}",
            need(&mine, model),
            need(&stock, model)
        );
    }
}

/// Compute and I/O node lists (`--cn-guids`, `--io-guids`, OpenSM's `cn_guid_file` and
/// `io_guid_file`): the plug-in's logged Λ of both traffic patterns equals `eval`'s of its dumps
/// with the same lists, patterns and seed; stock dfsssp, given the same lists, is judged the same
/// way; a bad list is refused naming its line.
#[test]
fn eval_judges_compute_and_io_traffic() {
    let spec = "ktree:4,3";
    let f = by_name(spec).unwrap();
    let sim = Sim::start("eval-classes", &f);
    let cas = common::ca_port_guids(&f);
    let write = |name: &str, g: &[u64]| {
        let p = sim.dir().join(name);
        let text: String = g.iter().map(|x| format!("0x{x:016x}\n")).collect();
        std::fs::write(&p, text).unwrap();
        p
    };
    // Compute nodes on most leaves, I/O nodes on a few: an uneven mix, as in a real machine.
    let cn = write("cn", &cas[..52]);
    let io = write("io", &cas[52..60]);
    let conf = |o: OpenSm| {
        o.qos(true)
            .conf(&format!("cn_guid_file {}", cn.display()))
            .conf(&format!("io_guid_file {}", io.display()))
    };
    let classes_of = |dir: &Path| {
        let v = eval_json(&[
            "--dumps",
            path(dir),
            "--patterns",
            "300",
            "--cn-guids",
            path(&cn),
            "--io-guids",
            path(&io),
        ]);
        (
            f64_at(&v, "/classes/compute/lambda"),
            f64_at(&v, "/classes/compute_to_io/lambda"),
        )
    };

    let ours =
        sim.opensm(&conf(OpenSm::new("dfsssp-rs")).env("DFSSSP_RS_BISECTION_PATTERNS", "300"));
    ours.assert_configured_by("dfsssp-rs");
    let (cc, cio) = classes_of(&ours.dir);
    let logged = ours.log_lines("dfsssp-rs: metrics: ");
    assert!(
        logged.len() == 1
            && logged[0].ends_with(&format!("; Λ compute {cc:.4}, compute-to-I/O {cio:.4}")),
        "eval of the dumps: compute {cc:.4}, compute-to-I/O {cio:.4}; plug-in: {logged:?}"
    );

    let stock = sim.opensm(&conf(OpenSm::new("dfsssp")));
    stock.assert_configured_by("dfsssp");
    let (scc, scio) = classes_of(&stock.dir);
    eprintln!(
        "compute Λ: dfsssp-rs {cc:.4}, dfsssp {scc:.4}; compute-to-I/O: {cio:.4} vs {scio:.4}"
    );
    // Per-class balancing beats stock's ordering alone on both patterns (deterministic: same
    // fabric, lists, patterns and seed; measured 0.81 vs 0.77 and 0.97 vs 0.73).
    assert!(cc >= scc && cio >= scio, "dfsssp-rs below stock dfsssp");

    // A bad line is an error naming the file and line; nothing is judged.
    let bad = write("bad", &[]);
    std::fs::write(&bad, "0x10\nnode-7\n").unwrap();
    let (ok, _, se) = cli(&["eval", "--quiet", "--topo", spec, "--cn-guids", path(&bad)]);
    assert!(!ok, "a bad GUID list must fail");
    assert!(
        se.contains(&format!("{}:2: expected a GUID", bad.display())),
        "{se}"
    );
}

/// OpenSM's path-SL dump lists CA sources only: on a fat tree the switches without CAs send on
/// SLs nobody recorded. Their own paths are left out of the deadlock check (and counted), not
/// put in lane 0, where they closed a cycle that no CA traffic uses: dfsssp-rs's tables of a
/// 4-ary 3-tree were reported with a credit loop in lane 0, which ibdmchk does not see.
#[test]
fn paths_of_switches_without_cas_have_no_lane_in_the_dumps() {
    let (_s, df) = opensm_run(
        "cli-eval-d-ktree",
        "ktree:4,3",
        &OpenSm::new("dfsssp-rs").qos(true),
        "dfsssp-rs",
    );
    let ib = df.ibdmchk(true, false, 0);
    assert_eq!(ib.credit_loops, Some(false), "ibdmchk:\n{}", ib.text);
    let ev = eval_json(&["--dumps", path(&df.dir), "--patterns", "0"]);
    let d = &ev["deadlock"];
    assert_eq!(d["deadlock_free"], Value::Bool(true), "{d}");
    // 32 middle and top switches (no CAs) x 112 LIDs (48 switches + 64 CAs)
    assert_eq!(d["unknown_lane_paths"].as_u64(), Some(32 * 112), "{d}");
    let (ok, text, _) = cli(&["eval", "--dumps", path(&df.dir), "--patterns", "0"]);
    assert!(ok);
    assert!(
        text.contains("3584 paths sent by switches without CAs"),
        "{text}"
    );
}
