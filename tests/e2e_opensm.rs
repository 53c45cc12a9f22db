//! End to end: the stock `/usr/sbin/opensm` loads `libdfsssp_rs.so` and routes fabrics simulated
//! by `ibsim`; `ibdmchk`, OpenSM's own dumps and the switches' tables (read back with `ibroute`)
//! judge the result. See tests/common/mod.rs for the harness.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{OpenSm, OsmRun, Sim, NO_PATH};
use dfsssp_rs::engine;
use dfsssp_rs::fabric::{Fabric, NodeKind};
use dfsssp_rs::io::run_record::{RunRecord, RUN_FILE};
use dfsssp_rs::topo::by_name;

/// Switches whose tables are read back from the simulator per run (all of them on small fabrics).
const READBACK_SWITCHES: usize = 24;

fn fabric(spec: &str) -> Fabric {
    by_name(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// CA/router ports attached to a switch.
fn terminal_ports(f: &Fabric) -> u64 {
    let g = dfsssp_rs::graph::SwitchGraph::new(f).unwrap();
    g.terminals().len() as u64
}

type NodeShapes = BTreeMap<u64, (NodeKind, u8)>;
type LinkSet = BTreeSet<((u64, u8), (u64, u8))>;

/// Nodes (GUID -> kind, ports) and links (as GUID/port pairs) of a fabric, for comparing the one
/// the plug-in read from OpenSM with the one given to ibsim. LIDs differ: OpenSM assigns them.
fn shape(f: &Fabric) -> (NodeShapes, LinkSet) {
    let nodes = f
        .nodes()
        .iter()
        .map(|n| (n.guid, (n.kind, n.num_ports)))
        .collect();
    let links = f
        .links()
        .iter()
        .map(|l| {
            let a = (f.nodes()[l.a.node as usize].guid, l.a.port);
            let b = (f.nodes()[l.b.node as usize].guid, l.b.port);
            (a.min(b), a.max(b))
        })
        .collect();
    (nodes, links)
}

/// OpenSM's LID matrix as the plug-in writes it beside the routing: every switch has a row per
/// switch LID and none for CA LIDs; per port the fewest hops to that switch leaving by that port
/// (0xff where the port leads to no switch), entry 0 the least of them and 0 for its own LID.
fn assert_lid_matrix(
    g: &dfsssp_rs::graph::SwitchGraph,
    dumped: &BTreeMap<u64, BTreeMap<u16, Vec<u8>>>,
) {
    let dist = dfsssp_rs::graph::SwitchDistances::new(g);
    let switch_lids: Vec<(u16, u32)> = g
        .dests()
        .iter()
        .filter(|d| d.exit_port == 0)
        .map(|d| (d.lid, d.switch))
        .collect();
    assert_eq!(dumped.len(), g.num_switches(), "a LID matrix per switch");
    for s in 0..g.num_switches() as u32 {
        let rows = &dumped[&g.switch_guid(s)];
        let lids: Vec<u16> = rows.keys().copied().collect();
        let expected: Vec<u16> = switch_lids.iter().map(|&(l, _)| l).collect();
        assert_eq!(lids, expected, "switch {s}: rows for the switch LIDs only");
        for &(lid, t) in &switch_lids {
            let row = &rows[&lid];
            let mut want = vec![NO_PATH; row.len()];
            if s == t {
                want[0] = 0;
            } else {
                for c in g.out_channels(s) {
                    let p = usize::from(g.chan_port()[c as usize]);
                    let h = dist.get(g.chan_head()[c as usize], t) as u8 + 1;
                    want[p] = want[p].min(h);
                }
                want[0] = want[1..].iter().copied().min().unwrap_or(NO_PATH);
            }
            assert_eq!(row, &want, "switch {s}, LID {lid}");
        }
    }
}

/// Fails with the first differences (LID: got vs expected) when two LFTs differ.
fn assert_same_lft(got: &BTreeMap<u16, u8>, expected: &BTreeMap<u16, u8>, what: &str) {
    if got == expected {
        return;
    }
    let lids: BTreeSet<u16> = got.keys().chain(expected.keys()).copied().collect();
    let diffs: Vec<String> = lids
        .iter()
        .filter(|l| got.get(l) != expected.get(l))
        .map(|l| format!("LID {l}: {:?} vs {:?}", got.get(l), expected.get(l)))
        .collect();
    panic!(
        "{what}: {} of {} LIDs differ (got vs expected), first: {}",
        diffs.len(),
        lids.len(),
        diffs
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// The plug-in's record of the run: the fabric it read and the engine configuration.
fn record(run: &OsmRun) -> RunRecord {
    serde_json::from_str(&run.read(RUN_FILE)).unwrap_or_else(|e| panic!("{RUN_FILE}: {e}"))
}

/// Checks a finished run of `engine` on `f` as an outsider can, and returns the plug-in's record
/// and the engine's routing recomputed from it:
/// 1. the plug-in saw the fabric ibsim simulates (every node, port count, link, parallel links
///    included; every switch with a LID, every CA port with 2^lmc LIDs);
/// 2. ibdmchk finds every CA-to-CA path (base LIDs) and we walk OpenSM's dumped tables from every
///    switch to every LID;
/// 3. the tables OpenSM holds (its dump) and the switches hold (read back with ibroute) are exactly
///    what the engine computes for the fabric the plug-in read.
fn check_run(
    sim: &Sim,
    run: &OsmRun,
    engine_name: &str,
    f: &Fabric,
    lmc: u8,
) -> (RunRecord, engine::EngineOutput) {
    run.assert_configured_by(engine_name);
    assert!(
        run.errors().is_empty(),
        "errors: {:#?}\n{}",
        run.errors(),
        run.summary()
    );
    assert!(
        !run.log_lines(&format!("{engine_name}: computed tables for"))
            .is_empty(),
        "{}",
        run.summary()
    );
    // Inside opensm the plug-in allocates from its own heap, not OpenSM's (src/opensm/heap.rs).
    assert!(
        !run.log_lines("registered routing engines sssp-rs, dfsssp-rs; memory from its own heap")
            .is_empty(),
        "{}",
        run.summary()
    );

    let rec = record(run);
    assert_eq!(rec.engine, engine_name);
    assert_eq!(
        shape(&rec.fabric),
        shape(f),
        "fabric read from OpenSM differs from the net file"
    );
    for e in rec.fabric.endpoints() {
        let kind = rec.fabric.nodes()[e.node as usize].kind;
        if kind == NodeKind::Switch {
            assert_eq!((e.port, e.lmc), (0, 0));
        } else {
            assert_eq!(e.lmc, lmc, "CA port LMC");
        }
    }
    let lid_ports = f.switch_count()
        + f.nodes()
            .iter()
            .filter(|n| n.kind != NodeKind::Switch)
            .map(|n| n.num_ports as usize)
            .sum::<usize>();
    assert_eq!(
        rec.fabric.endpoints().len(),
        lid_ports,
        "every switch and CA port has LIDs"
    );

    // ibdmchk checks base LIDs only: `ibdmchk -l 2` gives every port 2^LMC LIDs, switches
    // included, while OpenSM gives a switch's base port 0 one LID, so it fails ("un-reachable
    // lids") on OpenSM's own LMC=2 dumps too (stock sssp, checked). Every LID is walked below.
    let cas = terminal_ports(f);
    let rep = run.ibdmchk(false, false, 0);
    rep.assert_connected(cas * (cas - 1));
    let g = dfsssp_rs::graph::SwitchGraph::new(&rec.fabric).unwrap();
    let routes =
        common::assert_all_routes_arrive(&g, &common::lft_from_dump(&rec.fabric, &g, &run.lfts()));
    assert_eq!(routes, g.num_switches() * g.dests().len());

    assert_lid_matrix(&g, &run.lid_matrix());

    let out = engine::run(&rec.fabric, &rec.config().unwrap()).expect("engine reruns");
    let dumped = run.lfts();
    let lids = run.switch_lids();
    assert_eq!(dumped.len(), out.graph.num_switches());
    let mut compared = 0usize;
    for s in 0..out.graph.num_switches() as u32 {
        let guid = rec.fabric.nodes()[out.graph.switch_node()[s as usize] as usize].guid;
        let expected: BTreeMap<u16, u8> = (1..=out.routing.lft.max_lid)
            .map(|lid| (lid, out.routing.lft.port(s, lid)))
            .filter(|&(_, p)| p != NO_PATH)
            .collect();
        assert_same_lft(
            &dumped[&guid],
            &expected,
            &format!("opensm-lfts.dump of switch 0x{guid:016x}"),
        );
        // Reading a switch back costs a MAD per 64 LIDs: on big fabrics, a spread of switches.
        if (s as usize).is_multiple_of(out.graph.num_switches().div_ceil(READBACK_SWITCHES)) {
            let held = sim.switch_lft(lids[&guid], out.routing.lft.max_lid);
            assert_same_lft(
                &held,
                &expected,
                &format!("LFT read back from simulated switch 0x{guid:016x}"),
            );
        }
        compared += expected.len();
    }
    assert_eq!(
        compared,
        out.graph.num_switches() * g.dests().len(),
        "every switch routes every LID"
    );
    eprintln!(
        "{engine_name} on {} switches, {cas} CA ports, LMC {lmc}: {} layer(s), routing phase {:.3} s, opensm {:.1} s",
        out.graph.num_switches(),
        out.routing.num_layers,
        run.routing_phase().unwrap_or(f64::NAN),
        run.elapsed.as_secs_f64()
    );
    (rec, out)
}

/// Routes `spec` with sssp-rs through OpenSM and checks it ([`check_run`]).
fn sssp_rs_end_to_end(name: &str, spec: &str, lmc: u8) {
    let f = fabric(spec);
    let sim = Sim::start(name, &f);
    let run = sim.opensm(&OpenSm::new("sssp-rs").lmc(lmc));
    check_run(&sim, &run, "sssp-rs", &f, lmc);
}

#[test]
fn sssp_rs_fat_tree() {
    // 2-level fat tree of 8-port switches: 8 leaves, 4 spines, 32 CAs.
    sssp_rs_end_to_end("fattree", "fattree2:8", 0);
}

#[test]
fn sssp_rs_torus_with_lmc2() {
    // 3x3 torus, 2 CAs per switch, four LIDs per CA port.
    sssp_rs_end_to_end("torus-lmc2", "torus:3x3,2,lmc=2", 2);
}

#[test]
fn sssp_rs_irregular_with_parallel_links() {
    let spec = "random:10,8,2,16,seed=7,parallel";
    let f = fabric(spec);
    let (_, links) = shape(&f);
    let pairs: BTreeSet<(u64, u64)> = links.iter().map(|l| (l.0 .0, l.1 .0)).collect();
    assert!(
        pairs.len() < links.len(),
        "{spec} should have parallel links"
    );
    sssp_rs_end_to_end("random-parallel", spec, 0);
}

#[test]
fn sssp_rs_random_128() {
    sssp_rs_end_to_end("random128", "random:128,32,16,300,seed=1", 0);
}

#[test]
fn mesh_with_parallel_links() {
    sssp_rs_end_to_end("mesh-par2", "mesh:3x2,1,par=2", 0);
}

/// A failure inside the engine: OpenSM logs our error, falls back to minhop and brings the
/// subnet up anyway. (Failures are injected by the plug-in's `test-hooks` feature, which
/// scripts/test.sh builds it with.)
#[cfg(feature = "test-hooks")]
fn falls_back(name: &str, how: &str, expect: &str) {
    falls_back_on("fattree2:4", name, how, expect);
}

/// [`falls_back`] on `spec`: on a small fabric OpenSM's LID matrix is written after the
/// routing, on a larger one beside it on a helper thread; a failure must be undone either way.
#[cfg(feature = "test-hooks")]
fn falls_back_on(spec: &str, name: &str, how: &str, expect: &str) {
    let f = fabric(spec);
    let sim = Sim::start(name, &f);
    let run = sim.opensm(&OpenSm::new("sssp-rs").env("DFSSSP_RS_INJECT_FAILURE", how));
    run.assert_configured_by("minhop");
    let errs = run.errors().join("\n");
    assert!(
        errs.contains(expect),
        "expected {expect:?} among errors:\n{errs}"
    );
    assert!(
        errs.contains("sssp-rs: cannot build lid matrices"),
        "OpenSM noted the failure:\n{errs}"
    );
    let cas = terminal_ports(&f);
    run.ibdmchk(false, false, 0)
        .assert_connected(cas * (cas - 1));
}

#[cfg(feature = "test-hooks")]
#[test]
fn injected_panic_falls_back_to_minhop() {
    falls_back(
        "inject-panic",
        "panic",
        "sssp-rs: routing panicked: DFSSSP_RS_INJECT_FAILURE=panic",
    );
}

#[cfg(feature = "test-hooks")]
#[test]
fn failed_table_write_is_undone_and_falls_back_to_minhop() {
    let f = fabric("fattree2:4");
    let sim = Sim::start("inject-write", &f);
    let run = sim.opensm(&OpenSm::new("sssp-rs").env("DFSSSP_RS_INJECT_FAILURE", "write"));
    run.assert_configured_by("minhop");
    let errs = run.errors().join("\n");
    assert!(
        errs.contains("injected failure") && errs.contains("were reset"),
        "{errs}"
    );
    assert!(
        errs.contains("sssp-rs: cannot build fwd tables"),
        "OpenSM noted the failure:\n{errs}"
    );
    let cas = terminal_ports(&f);
    run.ibdmchk(false, false, 0)
        .assert_connected(cas * (cas - 1));
}

/// The hop counts are written while the engine routes: a failure there (as if malloc failed
/// halfway through the switches) resets every switch's new tables and OpenSM falls back.
#[cfg(feature = "test-hooks")]
#[test]
fn failed_lid_matrix_is_undone_and_falls_back_to_minhop() {
    falls_back(
        "inject-lid-matrix",
        "lid-matrix",
        "(injected failure, a test hook); the new tables of all",
    );
}

/// The same on a fabric large enough (192 switches, 135k switch-LID pairs) for the helper
/// thread, and with a panic while it writes.
#[cfg(feature = "test-hooks")]
#[test]
fn failures_beside_the_lid_matrix_helper_are_undone_and_fall_back_to_minhop() {
    falls_back_on(
        "ktree:8,3",
        "inject-lid-matrix-helper",
        "lid-matrix",
        "(injected failure, a test hook); the new tables of all",
    );
    falls_back_on(
        "ktree:8,3",
        "inject-panic-helper",
        "panic",
        "sssp-rs: routing panicked: DFSSSP_RS_INJECT_FAILURE=panic",
    );
}

#[cfg(feature = "test-hooks")]
#[test]
fn injected_error_falls_back_to_minhop() {
    falls_back(
        "inject-error",
        "error",
        "sssp-rs: routing failed: injected failure",
    );
}

/// Routes `spec` with dfsssp-rs and checks it: everything [`check_run`] checks, then
/// - QoS on: at most the fabric's 8 VLs used; `opensm-path-sl.dump` holds exactly the engine's
///   layers; ibdmchk with it and OpenSM's SL-to-VL dump finds no credit loop; and (when `sa`) the
///   SL of the path records OpenSM's SA hands out is that layer (`path_sl`);
/// - QoS off: one lane, the log says why, and ibdmchk (one SL) finds no credit loop.
fn dfsssp_rs_end_to_end(name: &str, spec: &str, qos: bool, sa: bool) {
    let f = fabric(spec);
    let sim = Sim::start(name, &f);
    let osm = OpenSm::new("dfsssp-rs").qos(qos);
    let run = sim.opensm(&osm);
    let (rec, out) = check_run(&sim, &run, "dfsssp-rs", &f, 0);
    assert_eq!(rec.qos, qos);
    let layers = out.routing.num_layers;
    let rep = if qos {
        assert!(
            layers >= 1 && layers <= rec.lanes && rec.lanes == 8,
            "{layers} layers, {} lanes",
            rec.lanes
        );
        // The path-SL dump: one line per source CA and destination LID, SL = the engine's layer
        // (+ 1 when a lane is left to multicast: SL 0 is then multicast's).
        let g = &out.graph;
        let first_switch: BTreeMap<u64, u32> = {
            let mut m: BTreeMap<u64, (u8, u32)> = BTreeMap::new();
            for &(e, s) in g.terminals() {
                let ep = &rec.fabric.endpoints()[e as usize];
                let guid = rec.fabric.nodes()[ep.node as usize].guid;
                let v = m.entry(guid).or_insert((ep.port, s));
                if ep.port < v.0 {
                    *v = (ep.port, s);
                }
            }
            m.into_iter().map(|(k, v)| (k, v.1)).collect()
        };
        let psl = run.read(dfsssp_rs::io::path_sl::PATH_SL_FILE);
        let mut lines = 0usize;
        for l in psl.lines() {
            let w: Vec<&str> = l.split(' ').collect();
            assert_eq!(w.len(), 3, "path-SL line {l:?}");
            let guid = u64::from_str_radix(w[0].trim_start_matches("0x"), 16).unwrap();
            let (dlid, sl): (u16, u8) = (w[1].parse().unwrap(), w[2].parse().unwrap());
            assert_eq!(
                sl,
                out.routing.layer(first_switch[&guid], dlid) + out.sl_offset,
                "SL of {l:?}"
            );
            lines += 1;
        }
        assert_eq!(lines, first_switch.len() * g.dests().len());
        if sa && layers > 1 {
            // OpenSM's SA answers path records with path_sl's SL.
            let _sm = sim.start_opensm(&osm);
            let lid_of: Vec<(u16, u64)> = g
                .terminals()
                .iter()
                .map(|&(e, _)| {
                    let ep = &rec.fabric.endpoints()[e as usize];
                    (ep.base_lid, rec.fabric.nodes()[ep.node as usize].guid)
                })
                .collect();
            let mut seen = BTreeSet::new();
            for (i, &(slid, guid)) in lid_of.iter().enumerate().take(4) {
                for &(dlid, _) in lid_of.iter().skip(i + 1) {
                    let sl = sim.path_record_sl(slid, dlid);
                    assert_eq!(
                        sl,
                        out.routing.layer(first_switch[&guid], dlid) + out.sl_offset,
                        "SA path record {slid} -> {dlid}"
                    );
                    seen.insert(sl);
                }
            }
            assert!(
                seen.len() > 1,
                "the sampled path records should use several SLs: {seen:?}"
            );
        }
        run.ibdmchk(true, true, 0)
    } else {
        assert_eq!(layers, 1);
        assert!(
            !run.log_lines("dfsssp-rs: QoS is off").is_empty() && run.log.contains("qos TRUE"),
            "the log should say that `qos TRUE` enables multi-lane routing:\n{}",
            run.summary()
        );
        run.ibdmchk(false, false, 0)
    };
    assert_eq!(rep.credit_loops, Some(false), "ibdmchk:\n{}", rep.errors());
}

#[test]
fn dfsssp_rs_torus_with_qos() {
    dfsssp_rs_end_to_end("dfsssp-qos", "torus:4x4,2", true, true);
}

#[test]
fn dfsssp_rs_torus_without_qos_uses_one_lane() {
    dfsssp_rs_end_to_end("dfsssp-noqos", "torus:4x4,2", false, false);
}

/// Issue 3's fabrics, where stock dfsssp needs 9 > 8 lanes and gives up.
#[test]
fn dfsssp_rs_6x6x6_torus_within_8_lanes() {
    dfsssp_rs_end_to_end("dfsssp-torus666", "torus:6x6x6,4", true, false);
}

#[test]
fn dfsssp_rs_6x6x6_torus_one_lane_without_qos() {
    dfsssp_rs_end_to_end("dfsssp-torus666-noqos", "torus:6x6x6,4", false, false);
}

#[test]
fn dfsssp_rs_random_128_within_8_lanes() {
    dfsssp_rs_end_to_end(
        "dfsssp-random128",
        "random:128,32,16,300,seed=1",
        true,
        false,
    );
}

#[test]
fn dfsssp_rs_random_128_one_lane_without_qos() {
    dfsssp_rs_end_to_end(
        "dfsssp-random128-noqos",
        "random:128,32,16,300,seed=1",
        false,
        false,
    );
}

/// Issue 16: with QoS off (one lane) on the 6x6x6 torus, dfsssp-rs's balanced acyclic search
/// reaches at least stock nue's Λ (nue is built for few lanes) and 90% of its own 8-lane Λ, both
/// measured on the tables OpenSM uploaded; ibdmchk finds no credit loop in the single lane.
#[test]
fn one_lane_torus_beats_stock_nue_without_qos() {
    one_lane_beats_stock_nue("torus:6x6x6,4", "onelane-torus");
}

/// The same on the random 128-switch fabric (average switch degree 4.7), where one lane has the
/// least room.
#[test]
fn one_lane_random_fabric_beats_stock_nue_without_qos() {
    one_lane_beats_stock_nue("random:128,32,16,300,seed=1", "onelane-random");
}

fn one_lane_beats_stock_nue(spec: &str, tag: &str) {
    use dfsssp_rs::metrics::{effective_bisection_bandwidth, BisectionSpec};
    let f = fabric(spec);
    // 1000 patterns, as the README's figures: the random fabric's margin is under 1%.
    let patterns = BisectionSpec::new(1000, 1);
    let lambda = |dir: &std::path::Path| {
        let d = dfsssp_rs::io::osm_dump::load_dump_dir(dir, Some(0)).unwrap();
        effective_bisection_bandwidth(&d.graph, &d.routing.lft, &patterns)
            .unwrap()
            .lambda
    };
    let nue = {
        let sim = Sim::start(&format!("{tag}-nue"), &f);
        let run = sim.opensm(&OpenSm::new("nue"));
        run.assert_configured_by("nue");
        lambda(&run.dir)
    };
    let sim = Sim::start(&format!("{tag}-dfsssp"), &f);
    let run = sim.opensm(&OpenSm::new("dfsssp-rs"));
    let (_, out) = check_run(&sim, &run, "dfsssp-rs", &f, 0);
    assert_eq!(out.routing.num_layers, 1);
    assert!(
        !run.log_lines("dfsssp-rs: one lane: balanced searches")
            .is_empty(),
        "{}",
        run.summary()
    );
    let ours = lambda(&run.dir);
    let mut cfg = engine::EngineConfig::new(engine::EngineKind::Dfsssp);
    cfg.lanes = 8;
    let eight = engine::run(&f, &cfg).unwrap();
    let eight = effective_bisection_bandwidth(&eight.graph, &eight.routing.lft, &patterns)
        .unwrap()
        .lambda;
    assert!(
        ours >= nue && ours >= 0.9 * eight,
        "{spec}: one lane Λ {ours:.4}, stock nue {nue:.4}, dfsssp-rs with 8 lanes {eight:.4}"
    );
    let rep = run.ibdmchk(false, false, 0);
    assert_eq!(rep.credit_loops, Some(false), "ibdmchk:\n{}", rep.errors());
}

/// Routine config mistakes never stop routing (issue 14, safe failure): a mistyped lane cap and an
/// absurd diagnostic are logged at ERROR with the key and the accepted range, the defaults
/// apply, and dfsssp-rs routes a torus (where minhop, the fallback, would loop) deadlock-free.
#[test]
fn bad_settings_are_logged_and_routing_goes_on() {
    let f = fabric("torus:4x4,2");
    let sim = Sim::start("bad-settings", &f);
    let osm = OpenSm::new("dfsssp-rs")
        .qos(true)
        .env("DFSSSP_RS_MAX_LANES", "abc")
        .env("DFSSSP_RS_BISECTION_PATTERNS", "4294967295")
        .env("DFSSSP_RS_MCAST_LANE", "7");
    let run = sim.opensm(&osm);
    run.assert_configured_by("dfsssp-rs");
    let errs = run.errors().join("\n");
    for (key, range) in [
        ("DFSSSP_RS_MAX_LANES=\"abc\"", "1..=15"),
        ("DFSSSP_RS_BISECTION_PATTERNS=\"4294967295\"", "0..=100000"),
        ("DFSSSP_RS_MCAST_LANE=\"7\"", "0..=2"),
    ] {
        assert!(
            errs.lines()
                .any(|l| l.contains("ERR DF06") && l.contains(key) && l.contains(range)),
            "{key} ({range}) not named:\n{errs}"
        );
    }
    // The defaults: every lane the ports offer, no metrics.
    assert!(
        run.log_lines("QoS on: up to 8 virtual lanes").len() == 1,
        "{}",
        run.summary()
    );
    assert!(run.log_lines("dfsssp-rs: metrics: ").is_empty());
    let cas = terminal_ports(&f);
    let rep = run.ibdmchk(true, true, 0);
    rep.assert_connected(cas * (cas - 1));
    assert_eq!(rep.credit_loops, Some(false), "{}", rep.errors());
}

/// Settings in OpenSM's own configuration: `dfsssp-rs.conf` next to the opensm.conf OpenSM read,
/// overridden by `event_plugin_options`; an unknown key is named with its source, routing goes on.
#[test]
fn settings_come_from_opensm_conf() {
    let f = fabric("torus:4x4,2");
    let sim = Sim::start("settings-conf", &f);
    std::fs::write(
        sim.dir().join("dfsssp-rs.conf"),
        "# dfsssp-rs settings\nmax_lanes 4\nmcast_lane off\n",
    )
    .unwrap();
    let osm = OpenSm::new("dfsssp-rs")
        .qos(true)
        .conf("event_plugin_options max_lanes=2,colour=blue")
        .conf("port_shifting TRUE");
    let run = sim.opensm(&osm);
    run.assert_configured_by("dfsssp-rs");
    // Which of OpenSM's routing options dfsssp-rs honours, and which it does not use.
    let opts = run.log_lines("dfsssp-rs: OpenSM options honoured: lmc 0");
    assert!(
        opts.len() == 1 && opts[0].contains("set but not used: port_shifting TRUE"),
        "{opts:?}"
    );
    // event_plugin_options wins over the file for max_lanes; the file's mcast_lane stands.
    assert_eq!(
        run.log_lines("QoS on: up to 2 virtual lanes").len(),
        1,
        "{}",
        run.summary()
    );
    assert!(run.log_lines("left to multicast").is_empty());
    let given = run.log_lines("dfsssp-rs: settings given: ");
    assert!(
        given
            .iter()
            .any(|l| l.contains("max_lanes (event_plugin_options)")
                && l.contains("mcast_lane (dfsssp-rs.conf:3)")),
        "{given:?}"
    );
    let errs = run.errors().join("\n");
    assert!(
        errs.contains("ERR DF06: dfsssp-rs: event_plugin_options: unknown key \"colour\""),
        "{errs}"
    );
    let cas = terminal_ports(&f);
    let rep = run.ibdmchk(true, true, 0);
    rep.assert_connected(cas * (cas - 1));
    assert_eq!(rep.credit_loops, Some(false), "{}", rep.errors());
}

/// QoS coexistence: the admin gives dfsssp-rs SLs 0-3 (`layer_sls`); OpenSM's SL-to-VL entries
/// for the other SLs stay as the admin set them (opensm-sl2vl.dump), the layers' SLs map to
/// their own VLs, an admin SL outside the range that lands on a layer's VL is named, and a
/// partition's SL outside the range is what the SA answers while hint SL 0 gets the layers.
#[test]
fn qos_keeps_the_admins_sls_outside_the_layer_range() {
    let f = fabric("torus:4x4,2");
    let sim = Sim::start("qos-layer-sls", &f);
    // Admin: SLs 0-3 reversed (the layers override what they use), SL 4,5 -> VL 7, SL 6,7 -> 6,
    // SL 8 -> VL 2 (a layer's VL), SL 9 -> 5, the rest 4.
    let admin: [u8; 16] = [3, 2, 1, 0, 7, 7, 6, 6, 2, 5, 4, 4, 4, 4, 4, 4];
    let sl2vl = admin.map(|v| v.to_string()).join(",");
    std::fs::write(
        sim.dir().join("partitions.conf"),
        "Default=0x7fff,ipoib,sl=9 : ALL=full ;\n",
    )
    .unwrap();
    let osm = OpenSm::new("dfsssp-rs")
        .qos(true)
        // layers even where one lane measures better (it does on this torus)
        .conf("event_plugin_options layer_sls=0-3,mcast_lane=off,one_lane_candidate=0")
        .conf(&format!("qos_sl2vl {sl2vl}"))
        .conf(&format!("qos_ca_sl2vl {sl2vl}"))
        .conf(&format!("qos_sw0_sl2vl {sl2vl}"))
        .conf(&format!("qos_swe_sl2vl {sl2vl}"))
        .conf(&format!(
            "partition_config_file {}",
            sim.dir().join("partitions.conf").display()
        ));
    let run = sim.opensm(&osm);
    run.assert_configured_by("dfsssp-rs");
    assert_eq!(
        run.log_lines("within layer_sls 0-3 (event_plugin_options)")
            .len(),
        1,
        "{}",
        run.summary()
    );
    let layers: u8 = run
        .log_lines("dfsssp-rs: computed tables for")
        .last()
        .and_then(|l| l.split(" LIDs, ").nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no layer count in the log\n{}", run.summary()));
    assert!((2..=4).contains(&layers), "layers {layers}");
    // Every SL-to-VL table OpenSM programmed: the layers' SLs on their own VLs, the admin's
    // entries everywhere else.
    let mut want = admin;
    for l in 0..layers {
        want[usize::from(l)] = l;
    }
    let dump = run.read("opensm-sl2vl.dump");
    let mut tables = 0;
    for line in dump
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" : "))
    {
        let Some((_, vls)) = line.split_once(':') else {
            continue;
        };
        let got: Vec<u8> = vls.split_whitespace().map(|v| v.parse().unwrap()).collect();
        assert_eq!(got, want, "{line}");
        tables += 1;
    }
    assert!(tables > 16, "{tables} tables in opensm-sl2vl.dump");
    // The override of SLs 0..layers and the admin's SL 8 on layer VL 2 are each named once.
    assert_eq!(run.log_lines("differs from the routing's layers").len(), 1);
    let shared = run.log_lines("WRN DF07");
    assert!(
        shared.len() == 1 && shared[0].contains("SL8->VL2"),
        "{shared:?}"
    );
    // Deadlock freedom of the layers themselves (the path SLs are the layers').
    let cas = terminal_ports(&f);
    let rep = run.ibdmchk(true, true, 0);
    rep.assert_connected(cas * (cas - 1));
    assert_eq!(rep.credit_loops, Some(false), "{}", rep.errors());
    // Each CA reaches the SM on its path's layer SL: OpenSM asks path_sl for every port's
    // MasterSMSL with sm_sl 0 as the hint, as for stock dfsssp (ibsim does not keep SMSL, so the
    // value OpenSM sets is read from its debug log).
    let mut debug = osm.clone();
    debug.log_flags |= 0x08;
    let run = sim.opensm(&debug);
    let sm_lid = sim.port_sm_lid(f.endpoints()[0].base_lid);
    let dump = run.read(dfsssp_rs::opensm::PATH_SL_FILE);
    let mut checked = BTreeSet::new();
    for l in run.log_lines("Setting SMSL to ") {
        // CA ports ("on GUID 0x..., port N"; switch port 0 lines read "on port 0 GUID").
        let Some((smsl, rest)) = l
            .split_once("Setting SMSL to ")
            .and_then(|(_, r)| r.split_once(" on GUID 0x"))
        else {
            continue;
        };
        let port_guid = u64::from_str_radix(&rest[..16], 16).unwrap();
        let Some(e) = f.endpoints().iter().find(|e| e.port_guid == port_guid) else {
            continue;
        };
        if f.nodes()[e.node as usize].kind != NodeKind::Ca || e.base_lid == sm_lid {
            continue;
        }
        let key = format!("0x{:016x} {sm_lid} ", f.nodes()[e.node as usize].guid);
        let want: u8 = dump
            .lines()
            .find_map(|l| l.strip_prefix(&key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no path-SL line {key:?}"));
        assert_eq!(smsl.parse::<u8>().unwrap(), want, "{l}");
        checked.insert(want);
    }
    assert!(
        checked.len() > 1,
        "SMSLs set {checked:?}: several layers expected\n{}",
        run.summary()
    );
    // The partition's SL 9 is outside the range: the SA answers it, and the log says so once.
    let sm = sim.start_opensm(&osm);
    let lids: Vec<u16> = f.endpoints().iter().map(|e| e.base_lid).take(3).collect();
    for &s in &lids {
        for &d in lids.iter().filter(|&&d| d != s) {
            assert_eq!(sim.path_record_sl(s, d), 9, "path record {s} -> {d}");
        }
    }
    sm.wait_count(
        "SL 9 from OpenSM's QoS policy is outside layer_sls: kept",
        1,
        std::time::Duration::from_secs(20),
    );
    assert_eq!(sm.count("is outside layer_sls: kept"), 1, "{}", sm.log());
}

/// `avoid_throttled_links`: links OpenSM finds throttled are left out of the routing, except the
/// one a switch needs to stay connected. One switch of a 4x4 torus has all four of its cables
/// throttled, one more cable elsewhere too.
///
/// ibsim trains every link at the widest width both ends enable, so a net file cannot make one
/// throttled; `ibportstate` can: one end enabled for 1X, the other for 1X or 4X, and the link runs
/// at 4X, not the common enabled width (OpenSM's `osm_link_is_throttled` compares the two). OpenSM
/// must then leave the widths alone (`force_link_width 0`).
#[test]
fn throttled_links_are_avoided_without_splitting_the_fabric() {
    let f = fabric("torus:4x4,2");
    let sim = Sim::start("throttled", &f);
    // Directed routes from the SM's CA (on switch 0,0): switch 0,0 is "0,1", 1,0 is "0,1,3",
    // 1,1 is "0,1,3,5"; 1,1's ports 3..6 lead to 2,1 (its port 4), 0,1 (3), 1,2 (6), 1,0 (5).
    // Every PortInfo Set makes ibsim run the link at the width that end enables, and OpenSM sets
    // switches in GUID order: the 1X end is the one of lower GUID, so the wider one is set last.
    let cables = [
        ("0,1,3,5", 3, "0,1,3,5,3", 4),
        ("0,1,3,5,4", 3, "0,1,3,5", 4),
        ("0,1,3,5", 5, "0,1,3,5,5", 6),
        ("0,1,3", 5, "0,1,3,5", 6),
        ("0,1", 3, "0,1,3", 4),
    ];
    for (a, pa, b, pb) in cables {
        sim.set_link_width(a, pa, 1);
        sim.set_link_width(b, pb, 3);
    }
    let plain = OpenSm::new("dfsssp-rs")
        .qos(true)
        .conf("force_link_width 0")
        .conf("force_link_speed 0");
    let osm = plain.clone().conf("avoid_throttled_links TRUE");
    // Without the option every cable carries routes.
    let run = sim.opensm(&plain);
    run.assert_configured_by("dfsssp-rs");
    assert!(run.log_lines("throttled switch-to-switch links").is_empty());
    let lonely = 0x0002c90000000005u64;
    let switch_ports = |run: &OsmRun| -> BTreeSet<u8> {
        run.lfts()[&lonely]
            .values()
            .copied()
            .filter(|&p| p > 2 && p != NO_PATH)
            .collect()
    };
    assert_eq!(switch_ports(&run).len(), 4, "{}", run.summary());

    let run = sim.opensm(&osm);
    run.assert_configured_by("dfsssp-rs");
    let line = run.log_lines("avoid_throttled_links: ");
    assert!(
        line.len() == 1
            && line[0].contains(": 4 throttled switch-to-switch links left out")
            && line[0].contains("; 1 kept because the fabric would split"),
        "{line:?}\n{}",
        run.summary()
    );
    // Switch 1,1 forwards everything not its own over one cable; the 0,0 - 1,0 cable (port 3 of
    // switch 0,0) carries nothing.
    assert_eq!(switch_ports(&run).len(), 1, "{}", run.summary());
    assert!(
        run.lfts()[&0x0002c90000000000].values().all(|&p| p != 3),
        "switch 0,0 still routes over its throttled port 3"
    );
    let cas = terminal_ports(&f);
    let rep = run.ibdmchk(true, true, 0);
    rep.assert_connected(cas * (cas - 1));
    assert_eq!(rep.credit_loops, Some(false), "{}", rep.errors());
}

/// `cn_guid_file` and `io_guid_file`: dfsssp-rs reads OpenSM's lists, routes the compute nodes
/// first and measures both traffic patterns; a list with a bad line is named (`ERR DF08`, file and
/// line) and routing goes on without it.
#[test]
fn compute_and_io_node_lists_from_opensm() {
    let f = fabric("ktree:4,3");
    let sim = Sim::start("cn-io", &f);
    let cas = common::ca_port_guids(&f);
    let list = |g: &[u64]| {
        let mut s = String::from("# written by the test\n");
        for x in g {
            s += &format!("0x{x:016x} node\n");
        }
        s
    };
    let (cn, io) = (sim.dir().join("cn_guids"), sim.dir().join("io_guids"));
    std::fs::write(&cn, list(&cas[..48])).unwrap();
    std::fs::write(&io, list(&cas[56..])).unwrap();
    let osm = OpenSm::new("dfsssp-rs")
        .qos(true)
        .env("DFSSSP_RS_BISECTION_PATTERNS", "200")
        .conf(&format!("cn_guid_file {}", cn.display()))
        .conf(&format!("io_guid_file {}", io.display()));
    let run = sim.opensm(&osm);
    run.assert_configured_by("dfsssp-rs");
    let line = run.log_lines("dfsssp-rs: cn_guid_file, io_guid_file: ");
    assert!(
        line.len() == 1 && line[0].contains(": 48 compute and 8 I/O ports; compute nodes' LIDs"),
        "{line:?}\n{}",
        run.summary()
    );
    assert!(run
        .log_lines("dfsssp-rs: OpenSM options honoured: ")
        .iter()
        .any(|l| l.contains("cn_guid_file") && l.contains("io_guid_file")));
    let metrics = run.log_lines("dfsssp-rs: metrics: ");
    assert!(
        metrics.len() == 1
            && metrics[0].contains("; Λ compute ")
            && metrics[0].contains(", compute-to-I/O "),
        "{metrics:?}"
    );
    let n = cas.len() as u64;
    let rep = run.ibdmchk(true, true, 0);
    rep.assert_connected(n * (n - 1));
    assert_eq!(rep.credit_loops, Some(false), "{}", rep.errors());

    // A typo in the compute list: named with its line, the I/O list still used.
    std::fs::write(&cn, "0x0002c90100000000\n0x0002c9010000001g\n").unwrap();
    let run = sim.opensm(&osm);
    run.assert_configured_by("dfsssp-rs");
    let errs = run.errors().join("\n");
    assert!(
        errs.contains(&format!(
            "ERR DF08: dfsssp-rs: cn_guid_file: {}:2: expected a GUID",
            cn.display()
        )),
        "{errs}"
    );
    assert_eq!(
        run.log_lines("dfsssp-rs: io_guid_file: 0 compute and 8 I/O ports")
            .len(),
        1,
        "{}",
        run.summary()
    );
}

/// A fat tree with failed cables (issue 34): routed by dfsssp-rs itself with QoS off and on,
/// checked in full (the routes, OpenSM's dumps, the path-SL dump with QoS, ibdmchk: no credit
/// loop).
#[test]
fn dfsssp_rs_fat_tree_with_failed_cables() {
    for qos in [false, true] {
        let name = if qos {
            "dfsssp-faulty-qos"
        } else {
            "dfsssp-faulty"
        };
        dfsssp_rs_end_to_end(name, "ktree:6,3,cut=5", qos, false);
    }
}
