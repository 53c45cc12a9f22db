//! Multicast in the CLI: `route --groups --mfts-out` on fabrics the tool generates, and
//! `eval --dumps` reading opensm.mcfdbs next to real OpenSM dumps (tests/data/real, fabrics the
//! tool generated, dumped by the stock OpenSM).

mod common;

use std::path::Path;

use common::cli;
use dfsssp_rs::graph::SwitchGraph;
use dfsssp_rs::io::{ibsim, mcfdbs, osm_dump};
use dfsssp_rs::multicast::{mft_metrics, GroupMft, PortMask};
use serde_json::Value;

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// `eval --dumps DIR` (no Λ), as JSON; fails the test when eval fails.
fn eval_dumps_json(dir: &Path) -> Value {
    let (ok, so, se) = cli(&[
        "eval",
        "--dumps",
        path(dir),
        "--json",
        "--quiet",
        "--patterns",
        "0",
    ]);
    assert!(ok, "{se}");
    serde_json::from_str(&so).expect("eval JSON")
}

/// Generates `spec` into DIR/fabric.net, routes it with `lanes` and `groups`; returns the
/// fabric's graph and fabric, the MFT text and route's standard error.
fn route_groups(
    dir: &Path,
    spec: &str,
    lanes: &str,
    groups: &str,
) -> (dfsssp_rs::fabric::Fabric, SwitchGraph, String, String) {
    let net = dir.join("fabric.net");
    let (ok, _, se) = cli(&["generate", spec, "-o", path(&net)]);
    assert!(ok, "{se}");
    let gf = dir.join("groups.txt");
    std::fs::write(&gf, groups).unwrap();
    let mfts = dir.join("mfts.txt");
    let (ok, _, se) = cli(&[
        "route",
        "--fabric",
        path(&net),
        "--lanes",
        lanes,
        "--groups",
        path(&gf),
        "--mfts-out",
        path(&mfts),
    ]);
    assert!(ok, "route failed:\n{se}");
    let f = ibsim::parse_net(
        &std::fs::read_to_string(&net).unwrap(),
        "fabric.net",
        ibsim::NetOptions { lmc: 0 },
    )
    .unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    (f, g, std::fs::read_to_string(&mfts).unwrap(), se)
}

fn all_cas(n: usize) -> String {
    (0..n).map(|i| format!(" H-{i}")).collect()
}

#[test]
fn route_writes_complete_trees_for_a_generated_fat_tree_deadlock_free() {
    let dir = tempfile::tempdir().unwrap();
    let groups = format!(
        "# IPoIB broadcast and three small groups\n0xC000{}\n0xC001 H-0 H-5 send:H-9\n\
         0xC002 H-1 H-14\n0xC003 vl=1 H-2 H-3 H-15\n",
        all_cas(16)
    );
    let (f, g, text, se) = route_groups(dir.path(), "ktree:4,2", "2", &groups);
    let mfts = mcfdbs::parse_mcfdbs(&text, "mfts.txt", &f, &g).unwrap();
    assert_eq!(
        mfts.iter().map(|m| m.mlid).collect::<Vec<_>>(),
        vec![0xC000, 0xC001, 0xC002, 0xC003]
    );
    let m = mft_metrics(&g, &mfts);
    assert_eq!(m.complete_groups, 4, "{m:?}");
    assert!(m.groups.iter().all(|x| x.tree));
    // The broadcast group reaches every leaf; a 2-level tree is at most 1 hop from its centre.
    assert_eq!(m.groups[0].member_switches, 4);
    assert_eq!(m.groups[0].depth, Some(1));
    // A fat tree's unicast is Up*/Down*-like: trees fit without a rebuild, and the route says so.
    assert!(se.contains("multicast: VL 0:"), "{se}");
    assert!(se.contains("acyclic together with unicast"), "{se}");
    assert!(!se.contains("NOT deadlock-free"), "{se}");
    // Same input, same output.
    let dir2 = tempfile::tempdir().unwrap();
    let (_, _, again, _) = route_groups(dir2.path(), "ktree:4,2", "2", &groups);
    assert_eq!(text, again);
}

#[test]
fn route_on_a_torus_rebuilds_along_updown_and_names_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let groups = format!("0xC000{}\n0xC001 H-0 H-5 H-10 H-31\n", all_cas(32));
    let (f, g, text, se) = route_groups(dir.path(), "torus:4x4,2", "2", &groups);
    let mfts = mcfdbs::parse_mcfdbs(&text, "mfts.txt", &f, &g).unwrap();
    assert_eq!(mft_metrics(&g, &mfts).complete_groups, 2);
    // Minimal trees on a torus close loops with the layers; the VL is rebuilt, and whatever the
    // outcome, each VL's line says what was done.
    assert!(
        se.contains("rebuilding the VL's trees along Up*/Down*"),
        "{se}"
    );
    assert!(
        se.contains("multicast: VL 0: 2 group(s), trees along Up*/Down*"),
        "{se}"
    );
}

#[test]
fn route_names_a_bad_groups_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("f.net");
    assert!(cli(&["generate", "ktree:4,2", "-o", path(&net)]).0);
    let gf = dir.path().join("groups.txt");
    std::fs::write(&gf, "0xC000 H-0\n0xC001 H-1 no-such-node\n").unwrap();
    let out = dir.path().join("m.txt");
    let (ok, _, se) = cli(&[
        "route",
        "--fabric",
        path(&net),
        "--groups",
        path(&gf),
        "--mfts-out",
        path(&out),
    ]);
    assert!(!ok);
    assert!(
        se.contains("groups.txt:2:") && se.contains("no-such-node"),
        "{se}"
    );
}

/// A dump directory from the real OpenSM dumps of a tool-generated fabric.
fn dumps_dir(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/real");
    for (from, to) in [
        ("subnet.lst", "opensm-subnet.lst"),
        ("lfts.dump", "opensm-lfts.dump"),
    ] {
        std::fs::copy(data.join(format!("{name}.{from}")), dir.path().join(to)).unwrap();
    }
    dir
}

#[test]
fn eval_judges_mfts_next_to_opensm_dumps() {
    let dir = dumps_dir("fattree2-4-esp0-lmc1");
    let gf = dir.path().join("groups.txt");
    std::fs::write(
        &gf,
        "0xC000 H-0 H-1 H-2 H-3 H-4 H-5 H-6 H-7\n0xC001 H-0 H-7\n0xC002 H-3 send:H-4\n",
    )
    .unwrap();
    let lst = dir.path().join("opensm-subnet.lst");
    let (ok, _, se) = cli(&[
        "route",
        "--fabric",
        path(&lst),
        "--lmc",
        "1",
        "--groups",
        path(&gf),
        "--mfts-out",
        path(&dir.path().join("opensm.mcfdbs")),
    ]);
    assert!(ok, "{se}");
    let v = eval_dumps_json(dir.path());
    let m = &v["multicast"];
    assert_eq!(m["metrics"]["groups"].as_array().unwrap().len(), 3);
    assert_eq!(m["metrics"]["complete_groups"], 3);
    assert!(m["metrics"]["max_channel_load"].as_u64().unwrap() >= 1);
    assert_eq!(m["multicast_alone_acyclic"], true);
    // One joint check per lane of the unicast routing (opensm's minhop: one lane).
    let lanes = m["lanes"].as_array().unwrap();
    assert_eq!(
        lanes.len(),
        v["deadlock"]["lanes"].as_array().unwrap().len()
    );
    assert_eq!(lanes[0]["groups"], 3);
    assert!(lanes[0]["multicast_dependencies"].as_u64().unwrap() > 0);
    // The text report has the section too.
    let (ok, so, _) = cli(&[
        "eval",
        "--dumps",
        path(dir.path()),
        "--quiet",
        "--patterns",
        "0",
    ]);
    assert!(ok);
    assert!(
        so.contains("MLID 0xC000") && so.contains("lane 0 + multicast"),
        "{so}"
    );
}

#[test]
fn eval_finds_a_multicast_loop_and_bad_lines() {
    let dir = dumps_dir("mesh2x2-par2-lmc1");
    let lst = std::fs::read_to_string(dir.path().join("opensm-subnet.lst")).unwrap();
    let f = osm_dump::parse_subnet_lst(&lst, "lst", 1).unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    // One MLID forwarded out of every switch-to-switch port: a loop around the mesh.
    let masks: Vec<(u32, PortMask)> = (0..g.num_switches() as u32)
        .map(|s| {
            let mut m = PortMask::EMPTY;
            for c in g.out_channels(s) {
                m.set(g.chan_port()[c as usize]);
            }
            (s, m)
        })
        .collect();
    let mft = GroupMft::from_masks(&g, 0xC000, 0, masks);
    let file = dir.path().join("opensm.mcfdbs");
    std::fs::write(&file, mcfdbs::write_mcfdbs(&g, &[mft])).unwrap();
    let v = eval_dumps_json(dir.path());
    let m = &v["multicast"];
    assert_eq!(m["metrics"]["groups"][0]["tree"], false);
    assert_eq!(m["multicast_alone_acyclic"], false);
    assert_eq!(m["lanes"][0]["acyclic"], false);
    assert!(m["lanes"][0]["cycle_text"]
        .as_str()
        .unwrap()
        .contains("port"));
    assert_eq!(m["safe_lanes"].as_array().unwrap().len(), 0);

    std::fs::write(
        &file,
        "\nSwitch 0x0002c90000000000\nLID    : Out Port(s)\n0xC000 : 0x0zz\n",
    )
    .unwrap();
    let (ok, _, se) = cli(&[
        "eval",
        "--dumps",
        path(dir.path()),
        "--quiet",
        "--patterns",
        "0",
    ]);
    assert!(!ok);
    assert!(se.contains("opensm.mcfdbs:4:"), "{se}");
}

#[test]
fn a_lane_reserved_for_multicast_is_deadlock_free_on_a_torus() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("t.net");
    assert!(cli(&["generate", "torus:4x4,2", "-o", path(&net)]).0);
    let gf = dir.path().join("groups.txt");
    std::fs::write(&gf, format!("0xC000{}\n0xC001 H-0 H-9 H-20\n", all_cas(32))).unwrap();
    let out = dir.path().join("m.txt");
    let (ok, _, se) = cli(&[
        "route",
        "--fabric",
        path(&net),
        "--lanes",
        "3",
        "--groups",
        path(&gf),
        "--mfts-out",
        path(&out),
        "--mcast-vl",
        "3",
    ]);
    assert!(ok, "{se}");
    assert!(se.contains("multicast: VL 3: 2 group(s)"), "{se}");
    assert!(
        se.contains("acyclic together with unicast layer(s) []"),
        "{se}"
    );
    assert!(!se.contains("NOT deadlock-free"), "{se}");
}
