//! Generated fabrics written as ibsim net files and run in the real simulator with the stock
//! OpenSM: OpenSM must discover exactly the nodes, links and ports the generator made, and the
//! Fabric read back from its opensm-subnet.lst must equal the generated one (GUIDs, descriptions,
//! links, and the LIDs the net file preset on the ports).

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dfsssp_rs::fabric::CanonicalFabric;
use dfsssp_rs::io::{ibsim, osm_dump};
use dfsssp_rs::topo;

/// ibsim, killed (by its own pid) when dropped.
struct Sim(Child);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_ibsim(dir: &Path, net: &Path, sock: &str, caps: &ibsim::IbsimCaps) -> Sim {
    let log = std::fs::File::create(dir.join("ibsim.log")).unwrap();
    let child = Command::new("ibsim")
        .args(caps.args())
        .args(["-s", "-n"])
        .arg(net)
        .env("IBSIM_SOCKNAME", sock)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("ibsim (package ibsim-utils) must be installed");
    let mut sim = Sim(child);
    let start = Instant::now();
    loop {
        let mut s = String::new();
        std::fs::File::open(dir.join("ibsim.log"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        if s.contains("Network simulator ready") {
            return sim;
        }
        if let Some(st) = sim.0.try_wait().unwrap() {
            panic!("ibsim exited ({st}) before becoming ready:\n{s}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "ibsim not ready:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run_opensm(dir: &Path, sock: &str, lmc: u8) {
    run_opensm_with(dir, sock, lmc, &["-R", "minhop"]);
}

fn run_opensm_with(dir: &Path, sock: &str, lmc: u8, engine: &[&str]) {
    let out = Command::new("opensm")
        .args(engine)
        .args(["--once", "-D", "0x43", "-d", "0", "-f"])
        .arg(dir.join("osm.log"))
        .args(["-l", &lmc.to_string()])
        .env("IBSIM_SOCKNAME", sock)
        .env("LD_PRELOAD", common::umad2sim())
        .env("OSM_TMP_DIR", dir)
        .env("OSM_CACHE_DIR", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("opensm must be installed");
    let log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "opensm failed: {}\n{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(log.contains("SUBNET UP"), "subnet did not come up:\n{log}");
}

fn check_in_ibsim(spec: &str) {
    let f = topo::by_name(spec).unwrap();
    let lmc = f.endpoints().iter().map(|e| e.lmc).max().unwrap_or(0);
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("fabric.net");
    std::fs::write(&net, ibsim::write_net(&f)).unwrap();
    let sock = format!(
        "dfsssp-topo-{}-{}",
        std::process::id(),
        spec.replace([':', ',', '=', ';'], "_")
    );
    let sim = start_ibsim(dir.path(), &net, &sock, &ibsim::IbsimCaps::of(&f));
    run_opensm(dir.path(), &sock, lmc);
    drop(sim);

    let lst = std::fs::read_to_string(dir.path().join("opensm-subnet.lst")).unwrap();
    // every link appears once from each end
    assert_eq!(
        lst.lines().count(),
        2 * f.links().len(),
        "{spec}: links discovered"
    );
    let seen = osm_dump::parse_subnet_lst(&lst, "opensm-subnet.lst", lmc).unwrap();
    assert_eq!(seen.switch_count(), f.switch_count(), "{spec}: switches");
    assert_eq!(
        seen.terminal_node_count(),
        f.terminal_node_count(),
        "{spec}: CAs"
    );
    let CanonicalFabric {
        nodes: gn,
        links: gl,
        endpoints: ge,
    } = f.canonical();
    let CanonicalFabric {
        nodes: sn,
        links: sl,
        endpoints: se,
    } = seen.canonical();
    assert_eq!(gn, sn, "{spec}: nodes");
    assert_eq!(gl, sl, "{spec}: links");
    // OpenSM keeps the LIDs the net file preset on the ports
    assert_eq!(ge, se, "{spec}: LIDs");
}

#[test]
fn generated_fabrics_are_discovered_by_opensm_in_ibsim() {
    for spec in [
        "ktree:3,2",
        "xgft:2;3,4;1,2",
        "fattree2:8,3:1",
        "torus:3x3,2,par=2",
        "mesh:2x3,1",
        "hypercube:3,2",
        "kautz:2,2,1",
        "dragonfly:3,1,1,4",
        "random:10,8,2,14,seed=7,parallel",
        "ktree:2,3,lmc=2",
        // real shapes: bundles, uneven leaves, aggregation nodes, directors, 65-port rails
        "fattree2:8,bundle=2,uneven=1,aggr",
        "ktree:2,3,aggr,shuffle=2",
        "director:4,2,2,2-3,shuffle=1",
        "edgedirector:2,2,1,3,2,2",
        "rail:2,2,1,2",
    ] {
        check_in_ibsim(spec);
    }
}

/// LFTs written for the stock `file` routing engine are installed verbatim by OpenSM.
#[test]
fn file_engine_installs_written_lfts() {
    use dfsssp_rs::graph::SwitchGraph;
    for spec in ["random:8,8,2,12,seed=3,parallel,lmc=1", "torus:3x3,1"] {
        let f = topo::by_name(spec).unwrap();
        let lmc = f.endpoints().iter().map(|e| e.lmc).max().unwrap_or(0);
        let g = SwitchGraph::new(&f).unwrap();
        let r = dfsssp_rs::sssp::route(&g);
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("fabric.net");
        std::fs::write(&net, ibsim::write_net(&f)).unwrap();
        let lfts = dir.path().join("routes.lfts");
        std::fs::write(&lfts, osm_dump::write_lfts(&f, &g, &r.lft)).unwrap();
        let sock = format!("dfsssp-topo-file-{}-{}", std::process::id(), spec.len());
        let sim = start_ibsim(dir.path(), &net, &sock, &ibsim::IbsimCaps::of(&f));
        run_opensm_with(
            dir.path(),
            &sock,
            lmc,
            &["-R", "file", "-U", lfts.to_str().unwrap()],
        );
        drop(sim);
        let log = std::fs::read_to_string(dir.path().join("osm.log")).unwrap();
        assert!(
            log.contains("file tables configured on all switches"),
            "{spec}: {log}"
        );
        let dump = std::fs::read_to_string(dir.path().join("opensm-lfts.dump")).unwrap();
        let d = osm_dump::parse_lfts(&dump, "opensm-lfts.dump", &f, &g).unwrap();
        assert!(d.switches_missing.is_empty());
        assert_eq!(
            d.lft, r.lft,
            "{spec}: OpenSM's tables differ from the written ones"
        );
    }
}
