//! A running OpenSM (not `--once`) with dfsssp-rs and QoS on, while cables and switches fail and
//! come back in ibsim (its console's `Unlink` and `ReLink`). After every sweep, from OpenSM's own
//! dumps and SA: every CA pair routed, no credit loop (ibdmchk with our path-SL dump), the SA's
//! SLs equal to the dump, and, when dfsssp-rs re-routed incrementally, every CA pair whose path
//! survived keeps its SL (paths walked independently over OpenSM's LFT dump).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::*;
use dfsssp_rs::fabric::{Fabric, Link, NodeKind, PortRef};
use dfsssp_rs::graph::{SwitchGraph, NO_SWITCH};
use dfsssp_rs::io::ibsim::node_id;
use dfsssp_rs::routing::walk;

const SWEEP: Duration = Duration::from_secs(120);
/// Logged once per routing run, after the upload, when there was a routing before.
const CHANGES: &str = "dfsssp-rs: changes:";
const INCREMENTAL: &str = "dfsssp-rs: incremental re-route:";
const FULL: &str = "dfsssp-rs: full computation:";

/// (source CA node GUID, DLID) -> SL, from opensm-path-sl.dump.
fn path_sls(text: &str) -> BTreeMap<(u64, u16), u8> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let guid = u64::from_str_radix(it.next()?.strip_prefix("0x")?, 16).ok()?;
            Some(((guid, it.next()?.parse().ok()?), it.next()?.parse().ok()?))
        })
        .collect()
}

/// What OpenSM holds after a sweep, with the fabric the test expects it to see.
struct Snapshot {
    fabric: Fabric,
    graph: SwitchGraph,
    lfts: BTreeMap<u64, BTreeMap<u16, u8>>,
    sls: BTreeMap<(u64, u16), u8>,
}

impl Snapshot {
    fn take(sim: &Sim, fabric: &Fabric) -> Snapshot {
        Snapshot {
            fabric: fabric.clone(),
            graph: SwitchGraph::new(fabric).unwrap(),
            lfts: parse_lfts_dump(&sim.read("opensm-lfts.dump")),
            sls: path_sls(&sim.read("opensm-path-sl.dump")),
        }
    }

    /// The path from CA `guid` to `dlid` as (switch GUID, exit port) hops, walked over the LFT
    /// dump; `None` if it does not arrive.
    fn path(&self, guid: u64, dlid: u16) -> Option<Vec<(u64, u8)>> {
        let f = &self.fabric;
        let g = &self.graph;
        let node = f.nodes().iter().position(|n| n.guid == guid)? as u32;
        let e = f.endpoints().iter().find(|e| e.node == node)?;
        let src = g.dest_of_lid(e.base_lid)?.switch;
        if src == NO_SWITCH {
            return None;
        }
        let lft = lft_from_dump(f, g, &self.lfts);
        let mut hops = Vec::new();
        walk(g, &lft, src, dlid, |c| {
            let s = g.chan_tail()[c as usize];
            hops.push((g.switch_guid(s), g.chan_port()[c as usize]));
        })
        .ok()?;
        let d = g.dest_of_lid(dlid)?;
        hops.push((g.switch_guid(d.switch), d.exit_port));
        Some(hops)
    }
}

/// Pairs in both snapshots whose path is the same but whose SL changed, out of the pairs whose
/// path survived.
fn sl_changes_on_kept_paths(before: &Snapshot, after: &Snapshot) -> (usize, usize) {
    let mut kept = 0;
    let mut changed = Vec::new();
    for (&(guid, dlid), &sl) in &after.sls {
        let Some(&old_sl) = before.sls.get(&(guid, dlid)) else {
            continue;
        };
        let (Some(p0), Some(p1)) = (before.path(guid, dlid), after.path(guid, dlid)) else {
            continue;
        };
        if p0 == p1 {
            kept += 1;
            if sl != old_sl {
                changed.push((guid, dlid, old_sl, sl));
            }
        }
    }
    assert!(
        changed.is_empty(),
        "{} pairs with surviving paths changed SL, e.g. {:x?}",
        changed.len(),
        &changed[..changed.len().min(5)]
    );
    (kept, changed.len())
}

/// The CA GUIDs (and base LIDs) of the model fabric.
fn cas(f: &Fabric) -> Vec<(u64, u16)> {
    f.endpoints()
        .iter()
        .filter(|e| f.nodes()[e.node as usize].kind == NodeKind::Ca)
        .map(|e| (f.nodes()[e.node as usize].guid, e.base_lid))
        .collect()
}

/// The fabric without the links of `gone` and without nodes that lost all their links (OpenSM
/// no longer discovers them).
fn model(f: &Fabric, gone_links: &[Link], gone_switches: &[u64]) -> Fabric {
    let cut = f.retain(
        |_| true,
        |l| {
            !gone_links.contains(l)
                && !gone_switches.contains(&f.nodes()[l.a.node as usize].guid)
                && !gone_switches.contains(&f.nodes()[l.b.node as usize].guid)
        },
    );
    let linked: BTreeSet<u32> = cut
        .links()
        .iter()
        .flat_map(|l| [l.a.node, l.b.node])
        .collect();
    let keep: BTreeSet<u64> = linked
        .iter()
        .map(|&n| cut.nodes()[n as usize].guid)
        .collect();
    cut.retain(|n| keep.contains(&n.guid), |_| true)
}

fn port_name(f: &Fabric, p: PortRef) -> String {
    let n = &f.nodes()[p.node as usize];
    format!("\"{}\"[{}]", node_id(n.kind, n.guid), p.port)
}

/// A step: what to tell ibsim, and the fabric OpenSM should see afterwards.
struct Step {
    console: String,
    gone_links: Vec<Link>,
    gone_switches: Vec<u64>,
}

/// Runs `steps` one after the other against a running OpenSM; returns how many were incremental.
/// Runs the steps; returns how many re-routed incrementally, and Λ of the last step's routing
/// as a share of the first (fresh) one's, both judged from OpenSM's dumps (meaningful where the
/// last step gives the whole fabric back).
fn run_steps(name: &str, f: &Fabric, steps: &[Step]) -> (usize, f64) {
    let mut sim = Sim::start_with_console(name, f);
    let osm = OpenSm::new("dfsssp-rs").qos(true).conf("sweep_interval 1");
    let sm = sim.start_opensm(&osm);
    sm.wait_count("dfsssp-rs: wrote", 2, SWEEP);
    sm.wait_count(FULL, 1, SWEEP);
    let mut before = Snapshot::take(&sim, f);
    let mut before_dir = keep_dumps(&sim, "step-start");
    let start_dir = before_dir.clone();
    let mut incremental = 0;
    for (i, step) in steps.iter().enumerate() {
        let (changes, wrote, incr) = (
            sm.count(CHANGES),
            sm.count("dfsssp-rs: wrote"),
            sm.count(INCREMENTAL),
        );
        sim.console(&step.console);
        sm.wait_count(CHANGES, changes + 1, SWEEP);
        sm.wait_count("dfsssp-rs: wrote", wrote + 2, SWEEP);
        settle(&sm);
        // A step of several console commands may take several re-routes: all incremental?
        let was_incremental = sm.count(INCREMENTAL) - incr == sm.count(CHANGES) - changes;
        incremental += usize::from(was_incremental);
        let fabric = model(f, &step.gone_links, &step.gone_switches);
        let after = Snapshot::take(&sim, &fabric);

        // Every CA pair OpenSM sees is routed and free of credit loops.
        let n = cas(&fabric).len() as u64;
        let report = ibdmchk_in(sim.dir(), true, true, 0);
        report.assert_connected(n * (n - 1));
        assert_eq!(
            report.credit_loops,
            Some(false),
            "step {i} ({}): {}",
            step.console,
            report.errors()
        );
        // The SA hands out the dump's SLs.
        let sample = cas(&fabric);
        for (k, &(guid, slid)) in sample.iter().enumerate().step_by(sample.len() / 3 + 1) {
            let (_, dlid) = sample[(k + sample.len() / 2) % sample.len()];
            if dlid != slid {
                assert_eq!(
                    sim.path_record_sl(slid, dlid),
                    after.sls[&(guid, dlid)],
                    "step {i}: SA path record {slid} -> {dlid}"
                );
            }
        }
        if was_incremental {
            let (kept, _) = sl_changes_on_kept_paths(&before, &after);
            assert!(kept > 0, "step {i}: no path survived?");
        }
        // The offline judge sees the same from the two dump directories.
        let after_dir = keep_dumps(&sim, &format!("step-{i}"));
        let v = eval_json(&[
            "--patterns",
            "0",
            "--dumps",
            &after_dir.to_string_lossy(),
            "--before",
            &before_dir.to_string_lossy(),
        ]);
        let diff = &v["changes"]["diff"];
        assert!(diff["ca_pairs"].as_u64().unwrap() > 0, "{diff}");
        if was_incremental {
            assert_eq!(diff["ca_pairs_sl_changed_path_kept"], 0, "step {i}: {diff}");
        }
        before_dir = after_dir;
        eprintln!(
            "step {i} ({}): {}; {}",
            step.console,
            if was_incremental {
                "incremental"
            } else {
                "full"
            },
            sm.log()
                .lines()
                .rfind(|l| l.contains(CHANGES))
                .map(strip_prefix)
                .unwrap_or("")
        );
        before = after;
    }
    let (now, fresh) = (lambda_in(&before_dir), lambda_in(&start_dir));
    eprintln!(
        "Λ after the last step {now:.4}, at the start {fresh:.4} ({:.2}%)",
        100.0 * now / fresh
    );
    (incremental, now / fresh)
}

/// Λ over 200 bisection patterns of the routing in a dump directory.
fn lambda_in(dir: &std::path::Path) -> f64 {
    lambda_of(&eval_json(&[
        "--patterns",
        "200",
        "--dumps",
        &dir.to_string_lossy(),
    ]))
}

/// Waits until OpenSM has finished sweeping (the dumps are written before "SUBNET UP") and
/// no further sweep follows within a few sweep intervals.
fn settle(sm: &RunningSm) {
    let t = std::time::Instant::now();
    loop {
        let (up, changes) = (sm.count("SUBNET UP"), sm.count(CHANGES));
        std::thread::sleep(Duration::from_millis(3000));
        if sm.count("SUBNET UP") == up && sm.count(CHANGES) == changes && up > 0 {
            return;
        }
        assert!(t.elapsed() < SWEEP, "OpenSM keeps sweeping:\n{}", sm.log());
    }
}

/// Copies OpenSM's dumps (and ours) into a directory of their own, for `eval --before`.
fn keep_dumps(sim: &Sim, name: &str) -> std::path::PathBuf {
    let d = sim.dir().join(name);
    std::fs::create_dir_all(&d).unwrap();
    for f in [
        "opensm-subnet.lst",
        "opensm-lfts.dump",
        "opensm-path-sl.dump",
    ] {
        std::fs::copy(sim.dir().join(f), d.join(f)).unwrap();
    }
    d
}

/// Switch-to-switch links of `f`.
fn switch_links(f: &Fabric) -> Vec<Link> {
    let sw = |p: PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    f.links()
        .iter()
        .filter(|l| sw(l.a) && sw(l.b))
        .copied()
        .collect()
}

#[test]
fn torus_links_and_a_switch_fail_and_return() {
    let f = dfsssp_rs::topo::by_name("torus:4x4x4,2").unwrap();
    let links = switch_links(&f);
    let (a, b) = (links[links.len() / 3], links[2 * links.len() / 3]);
    // A switch away from the two links and from the SM's (the SM runs on the first CA of the
    // net file, the first CA with a link).
    let sm_switch = f
        .links()
        .iter()
        .filter(|l| f.nodes()[l.a.node as usize].kind == NodeKind::Ca)
        .map(|l| (l.a.node, l.b.node))
        .chain(
            f.links()
                .iter()
                .filter(|l| f.nodes()[l.b.node as usize].kind == NodeKind::Ca)
                .map(|l| (l.b.node, l.a.node)),
        )
        .min()
        .unwrap()
        .1;
    let busy = [a.a.node, a.b.node, b.a.node, b.b.node, sm_switch];
    let sw_node = (0..f.nodes().len() as u32)
        .find(|&n| f.nodes()[n as usize].kind == NodeKind::Switch && !busy.contains(&n))
        .unwrap();
    let sw = f.nodes()[sw_node as usize].guid;
    let swn = node_id(NodeKind::Switch, sw);
    let steps = [
        Step {
            console: format!("Unlink {}", port_name(&f, a.a)),
            gone_links: vec![a],
            gone_switches: vec![],
        },
        Step {
            console: format!("Unlink {}", port_name(&f, b.a)),
            gone_links: vec![a, b],
            gone_switches: vec![],
        },
        Step {
            console: format!("Unlink \"{swn}\""),
            gone_links: vec![a, b],
            gone_switches: vec![sw],
        },
        Step {
            console: format!("ReLink \"{swn}\""),
            gone_links: vec![a, b],
            gone_switches: vec![],
        },
        Step {
            console: format!("ReLink {}", port_name(&f, a.a)),
            gone_links: vec![b],
            gone_switches: vec![],
        },
        Step {
            console: format!("ReLink {}", port_name(&f, b.a)),
            gone_links: vec![],
            gone_switches: vec![],
        },
    ];
    let (incremental, share) = run_steps("reroute-torus", &f, &steps);
    assert!(
        share >= 0.99,
        "Λ after the repairs: {share:.4} of the start's"
    );
    assert!(
        incremental >= 4,
        "only {incremental} of 6 steps incremental"
    );
}

#[test]
fn fat_tree_link_and_spine_switch_fail_and_return() {
    let f = dfsssp_rs::topo::by_name("ktree:4,3").unwrap();
    // A top-level switch: only switches on its ports.
    let is_switch = |n: u32| f.nodes()[n as usize].kind == NodeKind::Switch;
    let top = (0..f.nodes().len() as u32)
        .filter(|&n| is_switch(n))
        .find(|&n| {
            f.links()
                .iter()
                .filter(|l| l.a.node == n || l.b.node == n)
                .all(|l| is_switch(l.a.node) && is_switch(l.b.node))
        })
        .unwrap();
    let spine = f.nodes()[top as usize].guid;
    let spine_name = node_id(NodeKind::Switch, spine);
    // A link between the two lower levels (neither end on the spine).
    let link = *switch_links(&f)
        .iter()
        .find(|l| l.a.node != top && l.b.node != top)
        .unwrap();
    let steps = [
        Step {
            console: format!("Unlink {}", port_name(&f, link.a)),
            gone_links: vec![link],
            gone_switches: vec![],
        },
        Step {
            console: format!("Unlink \"{spine_name}\""),
            gone_links: vec![link],
            gone_switches: vec![spine],
        },
        Step {
            console: format!("ReLink \"{spine_name}\""),
            gone_links: vec![link],
            gone_switches: vec![],
        },
        Step {
            console: format!("ReLink {}", port_name(&f, link.a)),
            gone_links: vec![],
            gone_switches: vec![],
        },
    ];
    let (incremental, share) = run_steps("reroute-ktree", &f, &steps);
    // The returned spine and cable carry their share again (a fresh computation's).
    assert!(
        share >= 0.99,
        "Λ after the repairs: {share:.4} of the start's"
    );
    assert!(
        incremental >= 3,
        "only {incremental} of 4 steps incremental"
    );
}

/// A whole dimension ring of a torus goes down (four cables, as when a cable tray is cut), then
/// comes back.
#[test]
fn torus_dimension_ring_fails_and_returns() {
    let f = dfsssp_rs::topo::by_name("torus:4x4x4,2").unwrap();
    // The x ring through y = 1, z = 1: switches named "torus X,1,1".
    let on_ring = |n: u32| {
        let d = &f.nodes()[n as usize].description;
        d.starts_with("torus ") && d.ends_with(",1,1")
    };
    let ring: Vec<Link> = switch_links(&f)
        .into_iter()
        .filter(|l| on_ring(l.a.node) && on_ring(l.b.node))
        .collect();
    assert_eq!(ring.len(), 4, "the x ring of a 4x4x4 torus");
    let all = |verb: &str| {
        ring.iter()
            .map(|l| format!("{verb} {}", port_name(&f, l.a)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let steps = [
        Step {
            console: all("Unlink"),
            gone_links: ring.clone(),
            gone_switches: vec![],
        },
        Step {
            console: all("ReLink"),
            gone_links: vec![],
            gone_switches: vec![],
        },
    ];
    let (incremental, share) = run_steps("reroute-ring", &f, &steps);
    assert!(
        share >= 0.99,
        "Λ after the ring returned: {share:.4} of the start's"
    );
    assert!(incremental >= 1, "no step incremental");
}

/// 100 re-routes (a cable pulled and plugged back 50 times): opensm's memory stays flat.
#[test]
fn a_hundred_sweeps_keep_opensm_rss_flat() {
    let f = dfsssp_rs::topo::by_name("torus:4x4,2").unwrap();
    let links = switch_links(&f);
    let port = port_name(&f, links[links.len() / 2].a);
    let mut sim = Sim::start_with_console("reroute-soak", &f);
    let osm = OpenSm::new("dfsssp-rs").qos(true).conf("sweep_interval 1");
    let sm = sim.start_opensm(&osm);
    sm.wait_count(FULL, 1, SWEEP);
    let mut rss = Vec::new();
    for i in 0..100 {
        let n = sm.count(CHANGES);
        sim.console(&format!(
            "{} {port}",
            if i % 2 == 0 { "Unlink" } else { "ReLink" }
        ));
        sm.wait_count(CHANGES, n + 1, SWEEP);
        if i == 9 || i == 99 {
            // Let the sweep finish before reading.
            std::thread::sleep(Duration::from_millis(1500));
            rss.push(sm.rss_kib());
        }
    }
    let (early, late) = (rss[0], rss[1]);
    eprintln!(
        "opensm RSS after 10 re-routes {early} KiB, after 100 {late} KiB; {} incremental, {} full",
        sm.count(INCREMENTAL),
        sm.count(FULL)
    );
    assert!(
        late <= early + early / 10 + 2048,
        "opensm grew from {early} KiB to {late} KiB over 90 re-routes"
    );
    assert!(sm.count(INCREMENTAL) >= 90, "{}", sm.log());
}
