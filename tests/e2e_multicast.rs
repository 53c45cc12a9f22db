//! Multicast groups built the way hosts build them: every CA of an ibsim fabric joins the IPoIB
//! broadcast group and random CAs create and join further groups (some as send-only members)
//! through the SA of a running OpenSM (dfsssp-rs loaded, QoS on), with our `mcjoin` client
//! (tests/tools/mcjoin.c); then one full member of every larger group leaves, which must not
//! cause a unicast routing run. Then, from OpenSM's opensm.mcfdbs alone (whoever built the trees):
//! every group is there, every full member's switch port is in its switch's mask, and flooding
//! along the masks from any member reaches every full member exactly once (a tree that connects
//! all member switches). ibdmchk reads the same dump and must agree, and its credit-loop verdict
//! on unicast and multicast together must match dfsssp-rs's own joint check: none when the engine
//! leaves multicast a lane of its own (its default), on a fat tree even without one; on a torus
//! sharing unicast layer 0 the engine reports the loop (ERR DF05) that ibdmchk finds.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use dfsssp_rs::fabric::{Fabric, NodeKind, PortRef};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const ROUTED: Duration = Duration::from_secs(180);

/// opensm.mcfdbs: MLID -> switch GUID -> ports in the mask. Lines:
/// "Switch 0x0000000000200000", "LID    : Out Port(s)", "0xC000 : 0x001  0x002  0x003".
fn parse_mcfdbs(text: &str) -> BTreeMap<u16, BTreeMap<u64, BTreeSet<u8>>> {
    let mut out: BTreeMap<u16, BTreeMap<u64, BTreeSet<u8>>> = BTreeMap::new();
    let mut sw: Option<u64> = None;
    for l in text.lines() {
        if let Some(g) = l.strip_prefix("Switch 0x") {
            sw = Some(u64::from_str_radix(g.trim(), 16).expect("switch GUID"));
            continue;
        }
        let Some((lid, ports)) = l.split_once(" : ") else {
            continue;
        };
        let Some(mlid) = lid
            .trim()
            .strip_prefix("0x")
            .and_then(|h| u16::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        let sw = sw.unwrap_or_else(|| panic!("MFT line before a switch: {l:?}"));
        let mask = out.entry(mlid).or_default().entry(sw).or_default();
        for p in ports.split_whitespace() {
            let p = p
                .strip_prefix("0x")
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .unwrap_or_else(|| panic!("bad port {p:?} in {l:?}"));
            mask.insert(p);
        }
    }
    out
}

/// A group as the test made it: its MLID and member CAs (fabric node indices).
#[derive(Debug, Default)]
struct Group {
    name: String,
    full: BTreeSet<u32>,
    send_only: BTreeSet<u32>,
}

/// The switch port a CA hangs off.
fn attachment(f: &Fabric, ports: &dfsssp_rs::fabric::PortTable, ca: u32) -> PortRef {
    ports
        .remote(ca as usize, 1)
        .unwrap_or_else(|| panic!("CA {} has no link on port 1", f.node_name(ca)))
}

/// `Err(message)` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Checks one group's tree in the masks: every full member's port is in its switch's mask, the
/// masks are symmetric on switch-to-switch links, and a packet sent by any member, flooded along
/// the masks (never back out of the port it came in), reaches every other full member exactly
/// once and crosses no switch twice. Returns the number of switches in the tree.
fn check_tree(
    f: &Fabric,
    ports: &dfsssp_rs::fabric::PortTable,
    guid_node: &BTreeMap<u64, u32>,
    mlid: u16,
    g: &Group,
    masks: &BTreeMap<u64, BTreeSet<u8>>,
) -> Result<usize, String> {
    let node_mask = |node: u32| masks.get(&f.nodes()[node as usize].guid);
    let what = format!("MLID 0x{mlid:04X} ({})", g.name);
    for &ca in &g.full {
        let at = attachment(f, ports, ca);
        ensure!(
            node_mask(at.node).is_some_and(|m| m.contains(&at.port)),
            "{what}: full member {} hangs off {} port {}, not in that switch's mask {:?}",
            f.node_name(ca),
            f.node_name(at.node),
            at.port,
            node_mask(at.node)
        );
    }
    for (&sw, mask) in masks {
        let node = guid_node.get(&sw).copied();
        ensure!(
            node.is_some_and(|n| f.nodes()[n as usize].kind == NodeKind::Switch),
            "{what}: a mask on 0x{sw:016x}, not a switch of the fabric"
        );
        let node = node.unwrap();
        for &p in mask {
            if p == 0 {
                continue; // the switch's own management port
            }
            let Some(r) = ports.remote(node as usize, p) else {
                return Err(format!(
                    "{what}: {} port {p} is in the mask but has no link",
                    f.node_name(node)
                ));
            };
            ensure!(
                f.nodes()[r.node as usize].kind != NodeKind::Switch
                    || node_mask(r.node).is_some_and(|m| m.contains(&r.port)),
                "{what}: {} forwards on port {p} to {} port {}, which does not forward back \
                 (not a bidirectional tree)",
                f.node_name(node),
                f.node_name(r.node),
                r.port
            );
        }
    }
    for &src in g.full.iter().chain(&g.send_only) {
        let at = attachment(f, ports, src);
        let mut seen_sw = BTreeSet::new();
        let mut reached: BTreeMap<u32, usize> = BTreeMap::new();
        let mut stack = vec![(at.node, at.port)];
        while let Some((sw, in_port)) = stack.pop() {
            ensure!(
                seen_sw.insert(sw),
                "{what}: a packet from {} reaches {} twice (loop in the masks)",
                f.node_name(src),
                f.node_name(sw)
            );
            let Some(mask) = node_mask(sw) else {
                continue; // the sender's switch is not in the tree: caught below
            };
            for &p in mask {
                if p == 0 || p == in_port {
                    continue;
                }
                let r = ports.remote(sw as usize, p).expect("checked above");
                match f.nodes()[r.node as usize].kind {
                    NodeKind::Switch => stack.push((r.node, r.port)),
                    _ => *reached.entry(r.node).or_default() += 1,
                }
            }
        }
        for &dst in g.full.iter().filter(|&&d| d != src) {
            let n = reached.get(&dst).copied().unwrap_or(0);
            ensure!(
                n == 1,
                "{what}: a packet from {} reaches full member {} {n} times",
                f.node_name(src),
                f.node_name(dst)
            );
        }
    }
    Ok(masks.len())
}

/// Random groups over `cas`: (MGID, full members, send-only members). Every 8th group's MGID
/// is assigned by the SA; half of the groups get one or two send-only members.
fn random_groups(cas: &[u32], n: usize, seed: u64) -> Vec<(Mgid, Vec<u32>, Vec<u32>)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let mgid = if i % 8 == 5 {
                Mgid::SaAssigned
            } else {
                Mgid::Gid(format!("ff12:e017::{:x}", i + 1))
            };
            let mut pick = cas.to_vec();
            pick.shuffle(&mut rng);
            let full = rng.gen_range(2..=(cas.len() / 2).clamp(2, 12));
            let send = if i % 2 == 0 { rng.gen_range(1..=2) } else { 0 };
            (
                mgid,
                pick[..full].to_vec(),
                pick[full..full + send].to_vec(),
            )
        })
        .collect()
}

/// `mcast_lane`: DFSSSP_RS_MCAST_LANE (0: no lane left to multicast; 1: where the layers leave
/// one; 2, the default: always); `mcast_loop_free`: ibdmchk must find no credit loop with the
/// MFTs; `layers_only`: the layers of minimal SSSP routes, without the dimension-order and
/// one-lane candidates (which may need fewer lanes).
fn multicast(
    name: &str,
    spec: &str,
    groups: usize,
    seed: u64,
    mcast_lane: &str,
    mcast_loop_free: bool,
    layers_only: bool,
) {
    let t0 = Instant::now();
    let f = dfsssp_rs::topo::by_name(spec).unwrap();
    let ports = f.port_table();
    let guid_node: BTreeMap<u64, u32> = f
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| (n.guid, i as u32))
        .collect();
    let cas: Vec<u32> = (0..f.nodes().len() as u32)
        .filter(|&n| f.nodes()[n as usize].kind == NodeKind::Ca)
        .collect();
    let host: BTreeMap<u32, String> = cas.iter().map(|&c| (c, sim_host(&f, c))).collect();

    let sim = Sim::start(name, &f);
    let mut osm = OpenSm::new("dfsssp-rs")
        .qos(true)
        .env("DFSSSP_RS_MCAST_LANE", mcast_lane);
    if layers_only {
        osm = osm
            .env("DFSSSP_RS_DOR_CANDIDATE", "0")
            .env("DFSSSP_RS_ONE_LANE_CANDIDATE", "0");
    }
    let sm = sim.start_opensm(&osm);
    if layers_only {
        let log = sm.log();
        assert!(
            log.contains("layers used: 7 of 7")
                && !log.contains("(1 before balancing)")
                && !log.contains("routing deadlock-free in one layer")
                && !log.contains("routing in dimension order"),
            "not the layers of minimal routes over the 7 unicast lanes:\n{log}"
        );
    }
    assert!(
        sm.log()
            .contains("dfsssp-rs tables configured on all switches"),
        "dfsssp-rs did not route:\n{}",
        sm.log()
    );
    let t_up = t0.elapsed();
    mcjoin_bin(); // build before timing the joins

    // A send-only join of a group nobody created fails, with the SA's reason.
    let (st, _, err) = sim.mcjoin_raw(
        &host[&cas[0]],
        &[(Mgid::Gid("ff12:e017::dead".into()), JoinState::SendOnly)],
    );
    assert!(
        !st.success() && err.contains("ERR_REQ_INVALID"),
        "send-only join of a missing group: {st}\n{err}"
    );

    // Round 1: every CA joins the IPoIB broadcast group; each group's first full member creates
    // it (learning the MGID of SA-assigned groups). Round 2: the other members join.
    let plan = random_groups(&cas, groups, seed);
    let mut round1: BTreeMap<u32, Vec<(Mgid, JoinState)>> = cas
        .iter()
        .map(|&c| (c, vec![(Mgid::IpoibBroadcast, JoinState::Full)]))
        .collect();
    // which planned group each round-1 join creates (None: the broadcast group)
    let mut creates: BTreeMap<u32, Vec<Option<usize>>> =
        cas.iter().map(|&c| (c, vec![None])).collect();
    for (i, (mgid, full, _)) in plan.iter().enumerate() {
        round1
            .get_mut(&full[0])
            .unwrap()
            .push((mgid.clone(), JoinState::Full));
        creates.get_mut(&full[0]).unwrap().push(Some(i));
    }
    let t_join = Instant::now();
    let order: Vec<(String, Vec<(Mgid, JoinState)>)> = round1
        .iter()
        .map(|(c, j)| (host[c].clone(), j.clone()))
        .collect();
    let answers = sim.mcjoin_all(&order);

    let mut by_mlid: BTreeMap<u16, Group> = BTreeMap::new();
    let mut mgid_of: Vec<String> = vec![String::new(); plan.len()];
    let ipoib_mlid = answers[0][0].mlid;
    let mut joins = 0;
    for ((&ca, js), ans) in round1.iter().zip(&answers) {
        for (((mgid, _), a), which) in js.iter().zip(ans).zip(&creates[&ca]) {
            joins += 1;
            assert_eq!(a.join_state, 1, "{a:?}");
            assert!(
                (0xC000..0xFFFF).contains(&a.mlid),
                "not a multicast LID: {a:?}"
            );
            if *mgid == Mgid::IpoibBroadcast {
                assert_eq!(a.mgid, "ff12:401b:ffff::ffff:ffff");
                assert_eq!(a.mlid, ipoib_mlid, "one MLID for the broadcast group");
            } else {
                let i = which.expect("a planned group");
                if let Mgid::Gid(g) = mgid {
                    assert_eq!(&a.mgid, g);
                } else {
                    assert!(a.mgid.starts_with("ff12:a01b:"), "SA-assigned MGID {a:?}");
                }
                mgid_of[i] = a.mgid.clone();
            }
            let g = by_mlid.entry(a.mlid).or_default();
            g.name = a.mgid.clone();
            g.full.insert(ca);
        }
    }
    assert_eq!(
        by_mlid.len(),
        groups + 1,
        "every group its own MLID: {by_mlid:?}"
    );
    let mut round2: BTreeMap<u32, Vec<(Mgid, JoinState)>> = BTreeMap::new();
    for (i, (_, full, send)) in plan.iter().enumerate() {
        let gid = Mgid::Gid(mgid_of[i].clone());
        for &c in &full[1..] {
            round2
                .entry(c)
                .or_default()
                .push((gid.clone(), JoinState::Full));
        }
        for &c in send {
            round2
                .entry(c)
                .or_default()
                .push((gid.clone(), JoinState::SendOnly));
        }
    }
    let order: Vec<(String, Vec<(Mgid, JoinState)>)> = round2
        .iter()
        .map(|(c, j)| (host[c].clone(), j.clone()))
        .collect();
    let answers = sim.mcjoin_all(&order);
    let mut send_only = 0;
    for ((&ca, js), ans) in round2.iter().zip(&answers) {
        for ((mgid, state), a) in js.iter().zip(ans) {
            joins += 1;
            let Mgid::Gid(gid) = mgid else { unreachable!() };
            assert_eq!(&a.mgid, gid);
            let g = by_mlid
                .get_mut(&a.mlid)
                .unwrap_or_else(|| panic!("{a:?}: a new MLID for an existing group"));
            assert_eq!(&g.name, gid, "{a:?}");
            match state {
                JoinState::Full => {
                    assert_eq!(a.join_state, 1, "{a:?}");
                    g.full.insert(ca);
                }
                JoinState::SendOnly => {
                    assert_eq!(a.join_state, 4, "{a:?}");
                    g.send_only.insert(ca);
                    send_only += 1;
                }
                JoinState::Leave => unreachable!("round 2 only joins"),
            }
        }
    }
    assert!(send_only > 0);

    // Round 3: in every group of three or more full members the last one leaves, as a host does
    // when a job ends. OpenSM re-routes those groups alone: no unicast routing run.
    let routings = sm.count("building routing with");
    let mut round3: BTreeMap<u32, Vec<(Mgid, JoinState)>> = BTreeMap::new();
    let mut leavers: Vec<(usize, u32)> = Vec::new();
    for (i, (_, full, _)) in plan.iter().enumerate() {
        if full.len() >= 3 {
            let ca = *full.last().unwrap();
            round3
                .entry(ca)
                .or_default()
                .push((Mgid::Gid(mgid_of[i].clone()), JoinState::Leave));
            leavers.push((i, ca));
        }
    }
    assert!(!leavers.is_empty());
    let order: Vec<(String, Vec<(Mgid, JoinState)>)> = round3
        .iter()
        .map(|(c, j)| (host[c].clone(), j.clone()))
        .collect();
    let answers = sim.mcjoin_all(&order);
    let mut left: Vec<(u16, u32)> = Vec::new();
    for ((&ca, js), ans) in round3.iter().zip(&answers) {
        for ((mgid, _), a) in js.iter().zip(ans) {
            let Mgid::Gid(gid) = mgid else { unreachable!() };
            assert_eq!(&a.mgid, gid, "{a:?}");
            // (OpenSM's answer to a leave carries the record as asked, without the MLID.)
            let (&mlid, g) = by_mlid
                .iter_mut()
                .find(|(_, g)| &g.name == gid)
                .expect("the group left");
            assert!(g.full.remove(&ca), "{a:?}: not a full member");
            left.push((mlid, ca));
        }
    }
    assert_eq!(left.len(), leavers.len());
    let t_join = t_join.elapsed();

    // OpenSM routes the groups asynchronously and rewrites opensm.mcfdbs each time: wait for
    // every group, and for the leavers' ports gone from their groups' masks.
    let t_wait = Instant::now();
    let want: BTreeSet<u16> = by_mlid.keys().copied().collect();
    let leaver_port = |mlid: u16, ca: u32| {
        let at = attachment(&f, &ports, ca);
        (mlid, f.nodes()[at.node as usize].guid, at.port)
    };
    let gone: Vec<(u16, u64, u8)> = left.iter().map(|&(m, c)| leaver_port(m, c)).collect();
    let text = sim.wait_file_settled(
        "opensm.mcfdbs",
        |t| {
            let mfts = parse_mcfdbs(t);
            mfts.keys().copied().collect::<BTreeSet<_>>() == want
                && gone
                    .iter()
                    .all(|(m, sw, p)| !mfts[m].get(sw).is_some_and(|mask| mask.contains(p)))
        },
        Duration::from_secs(3),
        ROUTED,
    );
    let t_wait = t_wait.elapsed();
    assert_eq!(
        sm.count("building routing with"),
        routings,
        "the leaves caused a unicast routing run"
    );
    // The engine builds the trees (mcast_build_stree), not OpenSM's default.
    assert!(
        sm.count("dfsssp-rs: MLID 0x") > 0,
        "dfsssp-rs built no multicast tree:\n{}",
        sm.log()
    );
    assert_eq!(
        sm.count("Configured MLID"),
        0,
        "OpenSM's default tree builder ran"
    );
    let mfts = parse_mcfdbs(&text);
    assert_eq!(
        mfts.keys().copied().collect::<BTreeSet<_>>(),
        want,
        "the groups in opensm.mcfdbs"
    );
    assert_eq!(
        by_mlid[&ipoib_mlid].full.len(),
        cas.len(),
        "every CA in the broadcast group"
    );
    let mut tree_switches = BTreeMap::new();
    for (&mlid, g) in &by_mlid {
        let n = check_tree(&f, &ports, &guid_node, mlid, g, &mfts[&mlid]);
        tree_switches.insert(mlid, n.unwrap_or_else(|e| panic!("{name}: {e}")));
    }

    // ibdmchk reads the same dumps: CA-to-CA unicast and every multicast group, no errors, and
    // it counts the same switches in each tree.
    let rep = ibdmchk_in(sim.dir(), true, true, 0);
    let n = cas.len() as u64;
    rep.assert_connected(n * (n - 1));
    let errors: Vec<&str> = rep.text.lines().filter(|l| l.starts_with("-E-")).collect();
    assert!(errors.is_empty(), "ibdmchk -m:\n{}", rep.errors());
    assert_eq!(
        rep.mcast_groups.keys().copied().collect::<BTreeSet<_>>(),
        want,
        "groups ibdmchk scanned:\n{}",
        rep.errors()
    );
    for (mlid, &(sw, ca)) in &rep.mcast_groups {
        assert_eq!(
            sw as usize, tree_switches[mlid],
            "MLID 0x{mlid:04X} switches"
        );
        assert!(
            ca as usize >= by_mlid[mlid].full.len(),
            "MLID 0x{mlid:04X}: ibdmchk sees {ca} CAs, {} full members",
            by_mlid[mlid].full.len()
        );
    }
    // With the multicast tables in the credit-loop analysis (-M): dfsssp-rs's trees (its own
    // mcast_build_stree) are judged together with the unicast layers on their VL.
    let rep_m = ibdmchk_mcast(sim.dir(), true, true);
    assert!(
        rep_m.text.contains("MFT added"),
        "ibdmchk -M took no multicast edges:\n{}",
        rep_m.errors()
    );
    // ibdmchk's verdict on unicast and multicast together agrees with the engine's own joint
    // check (ERR DF05 names a VL whose trees close a loop with unicast).
    let engine_cyclic = sm.count("ERR DF05") > 0;
    assert_eq!(
        rep_m.credit_loops,
        Some(engine_cyclic),
        "ibdmchk -M vs the engine's joint check:\n{}\n{}",
        rep_m.errors(),
        sm.log()
            .lines()
            .filter(|l| l.contains("multicast"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    if mcast_loop_free {
        assert_eq!(rep_m.credit_loops, Some(false), "{}", rep_m.errors());
    }
    eprintln!(
        "{name}: {} CAs, {} groups + broadcast, {joins} joins ({send_only} send-only) in {:.1} s, \
         routed and settled in {:.1} s (subnet up after {:.1} s); tree switches {:?}; ibdmchk -M \
         credit loops: {:?}",
        cas.len(),
        groups,
        t_join.as_secs_f64(),
        t_wait.as_secs_f64(),
        t_up.as_secs_f64(),
        tree_switches.values().collect::<Vec<_>>(),
        rep_m.credit_loops
    );
}

#[test]
fn multicast_groups_on_a_fat_tree() {
    multicast("mcast-ft", "fattree2:8", 16, 13, "2", true, false);
}

/// With a lane of its own (unicast layers on SL/VL 1..), multicast cannot close a loop with
/// unicast; the trees alone are acyclic.
#[test]
fn multicast_groups_on_a_torus() {
    multicast("mcast-torus", "torus:4x4,2", 16, 14, "1", true, false);
}

/// Without the lane, the torus's trees share VL 0 with unicast layer 0: the engine's joint check
/// and ibdmchk must agree (the engine logs ERR DF05 for a loop ibdmchk also finds).
#[test]
fn multicast_groups_on_a_torus_sharing_layer_0() {
    multicast(
        "mcast-torus-shared",
        "torus:4x4,2",
        16,
        14,
        "0",
        false,
        false,
    );
}

/// A torus whose layers of minimal SSSP routes need all 8 lanes (the candidates that need fewer
/// left out): DFSSSP_RS_MCAST_LANE=2 (the default) keeps a lane for multicast all the same
/// (unicast in the other 7); no credit loop.
#[test]
fn multicast_groups_on_a_full_torus_with_a_lane_kept() {
    multicast("mcast-torus-full", "torus:4x4x4,1", 16, 15, "2", true, true);
}

#[test]
fn mcfdbs_parser_reads_opensm_format() {
    let t = "\nSwitch 0x0000000000200000\nLID    : Out Port(s)\n0xC000 : 0x001  0x002  0x003 \n\
             0xC001 : 0x000  0x011 \n\nSwitch 0x0000000000200001\nLID    : Out Port(s)\n\
             0xC000 : 0x003 \n";
    let m = parse_mcfdbs(t);
    assert_eq!(m.len(), 2);
    assert_eq!(
        m[&0xC000][&0x200000].iter().copied().collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(
        m[&0xC001][&0x200000].iter().copied().collect::<Vec<_>>(),
        vec![0, 17]
    );
    assert_eq!(
        m[&0xC000][&0x200001].iter().copied().collect::<Vec<_>>(),
        vec![3]
    );
}

/// The tree check fails on broken masks: a member's port missing, a one-way link, a loop, a
/// cut tree. Masks of a breadth-first spanning tree over all switches of a small torus.
#[test]
fn tree_check_catches_broken_masks() {
    let f = dfsssp_rs::topo::by_name("torus:3x3,1").unwrap();
    let ports = f.port_table();
    let guid_node: BTreeMap<u64, u32> = f
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| (n.guid, i as u32))
        .collect();
    let kind = |n: u32| f.nodes()[n as usize].kind;
    let guid = |n: u32| f.nodes()[n as usize].guid;
    let cas: Vec<u32> = (0..f.nodes().len() as u32)
        .filter(|&n| kind(n) == NodeKind::Ca)
        .collect();
    let group = Group {
        name: "test".into(),
        full: cas[1..].iter().copied().collect(),
        send_only: [cas[0]].into(),
    };
    let mut masks: BTreeMap<u64, BTreeSet<u8>> = BTreeMap::new();
    let root = (0..f.nodes().len() as u32)
        .find(|&n| kind(n) == NodeKind::Switch)
        .unwrap();
    let mut seen = BTreeSet::from([root]);
    let mut queue = std::collections::VecDeque::from([root]);
    let mut tree_links = Vec::new();
    let mut other_links = Vec::new();
    while let Some(s) = queue.pop_front() {
        masks.entry(guid(s)).or_default();
        for p in 1..=f.nodes()[s as usize].num_ports {
            let Some(r) = ports.remote(s as usize, p) else {
                continue;
            };
            match kind(r.node) {
                NodeKind::Switch if seen.insert(r.node) => {
                    masks.entry(guid(s)).or_default().insert(p);
                    masks.entry(guid(r.node)).or_default().insert(r.port);
                    tree_links.push((s, p, r));
                    queue.push_back(r.node);
                }
                NodeKind::Switch => other_links.push((s, p, r)),
                _ if group.full.contains(&r.node) => {
                    masks.entry(guid(s)).or_default().insert(p);
                }
                _ => {}
            }
        }
    }
    let check =
        |m: &BTreeMap<u64, BTreeSet<u8>>| check_tree(&f, &ports, &guid_node, 0xC000, &group, m);
    assert_eq!(check(&masks), Ok(9), "a spanning tree over the 9 switches");

    let member = attachment(&f, &ports, cas[3]);
    let mut m = masks.clone();
    m.get_mut(&guid(member.node)).unwrap().remove(&member.port);
    assert!(check(&m).unwrap_err().contains("not in that switch's mask"));

    let (s, p, r) = tree_links[2];
    let mut m = masks.clone();
    m.get_mut(&guid(r.node)).unwrap().remove(&r.port);
    assert!(check(&m).unwrap_err().contains("does not forward back"));

    let mut m = masks.clone();
    m.get_mut(&guid(s)).unwrap().remove(&p);
    m.get_mut(&guid(r.node)).unwrap().remove(&r.port);
    assert!(check(&m).unwrap_err().contains("0 times"));

    let (s, p, r) = other_links[0];
    let mut m = masks.clone();
    m.get_mut(&guid(s)).unwrap().insert(p);
    m.get_mut(&guid(r.node)).unwrap().insert(r.port);
    assert!(check(&m).unwrap_err().contains("twice"));
}
