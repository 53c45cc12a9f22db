//! End to end: the stock `/usr/sbin/opensm` loads `libdfsssp_rs.so` and routes fabrics simulated
//! by `ibsim`; `ibdmchk`, OpenSM's own dumps and the switches' tables (read back with `ibroute`)
//! judge the result. See tests/common/mod.rs for the harness.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{OpenSm, OsmRun, Sim, NO_PATH};
use dfsssp_rs::engine;
use dfsssp_rs::fabric::{Fabric, NodeKind};
use dfsssp_rs::opensm::{RunRecord, RUN_FILE};
use dfsssp_rs::topo::by_name;

fn fabric(spec: &str) -> Fabric {
    by_name(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// CA/router ports attached to a switch.
fn terminal_ports(f: &Fabric) -> u64 {
    let g = dfsssp_rs::fabric::SwitchGraph::new(f).unwrap();
    g.terminals.len() as u64
}

/// Nodes (GUID -> kind, ports) and links (as GUID/port pairs) of a fabric, for comparing the one
/// the plug-in read from OpenSM with the one given to ibsim. LIDs differ: OpenSM assigns them.
fn shape(
    f: &Fabric,
) -> (
    BTreeMap<u64, (NodeKind, u8)>,
    BTreeSet<((u64, u8), (u64, u8))>,
) {
    let nodes = f
        .nodes
        .iter()
        .map(|n| (n.guid, (n.kind, n.num_ports)))
        .collect();
    let links = f
        .links
        .iter()
        .map(|l| {
            let a = (f.nodes[l.a.node as usize].guid, l.a.port);
            let b = (f.nodes[l.b.node as usize].guid, l.b.port);
            (a.min(b), a.max(b))
        })
        .collect();
    (nodes, links)
}

/// The plug-in's record of the run: the fabric it read and the engine configuration.
fn record(run: &OsmRun) -> RunRecord {
    serde_json::from_str(&run.read(RUN_FILE)).unwrap_or_else(|e| panic!("{RUN_FILE}: {e}"))
}

/// Routes `spec` with sssp-rs through OpenSM and checks everything an outsider can check.
fn sssp_rs_end_to_end(name: &str, spec: &str, lmc: u8) {
    let f = fabric(spec);
    let sim = Sim::start(name, &f);
    let run = sim.opensm(&OpenSm::new("sssp-rs").lmc(lmc));
    run.assert_configured_by("sssp-rs");
    assert!(
        run.errors().is_empty(),
        "errors: {:#?}\n{}",
        run.errors(),
        run.summary()
    );
    assert!(
        !run.log_lines("sssp-rs: computed tables for").is_empty(),
        "{}",
        run.summary()
    );

    // 1. The plug-in saw the fabric ibsim simulates: every node, port count and link (parallel
    //    links included), every switch with its LID, every CA port with 2^lmc LIDs.
    let rec = record(&run);
    assert_eq!(
        shape(&rec.fabric),
        shape(&f),
        "fabric read from OpenSM differs from the net file"
    );
    for e in &rec.fabric.endpoints {
        let kind = rec.fabric.nodes[e.node as usize].kind;
        if kind == NodeKind::Switch {
            assert_eq!((e.port, e.lmc), (0, 0));
        } else {
            assert_eq!(e.lmc, lmc, "CA port LMC");
        }
    }
    assert_eq!(
        rec.fabric.endpoints.len(),
        f.nodes.len(),
        "one LID port per node here"
    );

    // 2. ibdmchk: every CA reaches every other CA. Only base LIDs: `ibdmchk -l 2` gives every
    //    port 2^LMC LIDs, switches included, while OpenSM gives a switch's base port 0 one LID,
    //    so it fails ("un-reachable lids") on OpenSM's own LMC=2 dumps too (stock sssp, checked).
    //    Every LID is walked below instead.
    let cas = terminal_ports(&f);
    let rep = run.ibdmchk(false, false, 0);
    rep.assert_connected(cas * (cas - 1));

    // 2b. Walk OpenSM's dumped tables from every switch to every LID.
    let g = dfsssp_rs::fabric::SwitchGraph::new(&rec.fabric).unwrap();
    let routes =
        common::assert_all_routes_arrive(&g, &common::lft_from_dump(&rec.fabric, &g, &run.lfts()));
    assert_eq!(routes, g.num_switches() * g.dests.len());

    // 3. The tables OpenSM holds (its dump) and the switches hold (ibroute) are exactly what the
    //    engine computes for the fabric the plug-in read.
    let out = engine::run(&rec.fabric, &rec.config().unwrap()).expect("engine reruns");
    let dumped = run.lfts();
    let lids = run.switch_lids();
    assert_eq!(dumped.len(), out.graph.num_switches());
    let mut compared = 0usize;
    for s in 0..out.graph.num_switches() as u32 {
        let guid = rec.fabric.nodes[out.graph.switch_node[s as usize] as usize].guid;
        let expected: BTreeMap<u16, u8> = (1..=out.routing.lft.max_lid)
            .map(|lid| (lid, out.routing.lft.port(s, lid)))
            .filter(|&(_, p)| p != NO_PATH)
            .collect();
        assert_eq!(
            dumped[&guid], expected,
            "opensm-lfts.dump of switch 0x{guid:016x}"
        );
        let held = sim.ibroute(lids[&guid]);
        assert_eq!(
            held, expected,
            "LFT read back from simulated switch 0x{guid:016x}"
        );
        compared += expected.len();
    }
    let all_lids = rec
        .fabric
        .endpoints
        .iter()
        .map(|e| e.lids().len())
        .sum::<usize>();
    assert_eq!(
        compared,
        out.graph.num_switches() * all_lids,
        "every switch routes every LID"
    );
    eprintln!(
        "{name}: {} switches, {cas} CA ports, LMC {lmc}: routing phase {:.3} s, opensm {:.1} s",
        out.graph.num_switches(),
        run.routing_phase().unwrap_or(f64::NAN),
        run.elapsed.as_secs_f64()
    );
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
fn mesh_with_parallel_links() {
    sssp_rs_end_to_end("mesh-par2", "mesh:3x2,1,par=2", 0);
}

/// A failure inside the engine: OpenSM logs our error, falls back to minhop and brings the
/// subnet up anyway.
fn falls_back(name: &str, how: &str, expect: &str) {
    let f = fabric("fattree2:4");
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

#[test]
fn injected_panic_falls_back_to_minhop() {
    falls_back(
        "inject-panic",
        "panic",
        "sssp-rs: routing panicked: DFSSSP_RS_INJECT_FAILURE=panic",
    );
}

#[test]
fn injected_error_falls_back_to_minhop() {
    falls_back(
        "inject-error",
        "error",
        "sssp-rs: routing failed: injected failure",
    );
}

/// dfsssp-rs with QoS on: deadlock-free within the fabric's VLs, path SLs dumped for ibdmchk.
#[test]
#[ignore = "needs the dfsssp core (issue 3): engine::run refuses EngineKind::Dfsssp until it lands"]
fn dfsssp_rs_with_qos_has_no_credit_loops() {
    let f = fabric("torus:4x4,2");
    let sim = Sim::start("dfsssp-qos", &f);
    let run = sim.opensm(&OpenSm::new("dfsssp-rs").qos(true));
    run.assert_configured_by("dfsssp-rs");
    assert!(run.errors().is_empty(), "errors: {:#?}", run.errors());
    let psl = run.read(dfsssp_rs::opensm::PATH_SL_FILE);
    let cas = terminal_ports(&f);
    assert_eq!(psl.lines().count() as u64, cas * f.endpoints.len() as u64);
    let rep = run.ibdmchk(true, true, 0);
    rep.assert_connected(cas * (cas - 1));
    assert_eq!(rep.credit_loops, Some(false), "{}", rep.errors());
}
