use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::graph::{SwitchDistances, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::testkit::{fabric, fat_tree, random_net, ring, with_graph};
use crate::updown::UpDown;
use crate::verify::{verify, DependencySlots};

/// Every (switch, port) a CA or the switch itself (port 0) holds, by base LID.
fn member_ports(g: &SwitchGraph) -> Vec<(u32, u8)> {
    g.dests()
        .iter()
        .filter(|d| d.switch != NO_SWITCH && d.lid_offset == 0)
        .map(|d| (d.switch, d.exit_port))
        .collect()
}

fn random_groups(g: &SwitchGraph, n: usize, max_members: usize, seed: u64) -> Vec<McGroup> {
    let ports = member_ports(g);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let k = rng.gen_range(1..=max_members.min(ports.len()));
            let mut members: Vec<McMember> = (0..k)
                .map(|_| {
                    let (switch, port) = ports[rng.gen_range(0..ports.len())];
                    McMember {
                        switch,
                        port,
                        send_only: rng.gen_bool(0.2),
                    }
                })
                .collect();
            members.sort();
            members.dedup_by_key(|m| (m.switch, m.port));
            McGroup {
                mlid: 0xC000 + i as u16,
                vl: 0,
                members,
            }
        })
        .collect()
}

fn member(switch: u32, port: u8, send_only: bool) -> McMember {
    McMember {
        switch,
        port,
        send_only,
    }
}

fn mask_of(mft: &GroupMft, s: u32) -> Vec<u8> {
    mft.masks
        .iter()
        .find(|&&(x, _)| x == s)
        .map(|(_, m)| m.ports().collect())
        .unwrap_or_default()
}

/// Floods one packet from member port (s, p) through the masks as a switch does (out of every
/// mask port but the one it came in by). Returns the (switch, port) deliveries off the switch
/// graph and the number of times each switch was entered.
fn flood(g: &SwitchGraph, mft: &GroupMft, s: u32, p: u8) -> (Vec<(u32, u8)>, HashMap<u32, u32>) {
    let masks: HashMap<u32, PortMask> = mft.masks.iter().copied().collect();
    let mut delivered = Vec::new();
    let mut entered: HashMap<u32, u32> = HashMap::new();
    let mut stack = vec![(s, p)];
    while let Some((x, in_port)) = stack.pop() {
        *entered.entry(x).or_default() += 1;
        if entered[&x] > 1 {
            continue;
        }
        let Some(m) = masks.get(&x) else { continue };
        for q in m.ports().filter(|&q| q != in_port) {
            match g.channel_at(x, q) {
                Some(c) => stack.push((g.chan_head()[c as usize], g.chan_head_port()[c as usize])),
                None => delivered.push((x, q)),
            }
        }
    }
    (delivered, entered)
}

/// The dependencies of a tree from its parent links (independent of the masks): every pair of
/// distinct tree links at a switch.
fn tree_dependencies(g: &SwitchGraph, t: &McTree, out: &mut HashSet<(u32, u32)>) {
    let mut at: HashMap<u32, Vec<u32>> = HashMap::new();
    for &c in t.parent.iter().filter(|&&c| c != NO_CHANNEL) {
        let r = g.chan_reverse()[c as usize];
        // Out-channels of each switch that are tree links.
        at.entry(g.chan_tail()[c as usize]).or_default().push(c);
        at.entry(g.chan_tail()[r as usize]).or_default().push(r);
    }
    for outs in at.values() {
        for &b in outs {
            for &o in outs {
                if o != b {
                    // o leaves the switch towards a neighbour; its reverse enters from it.
                    out.insert((g.chan_reverse()[o as usize], b));
                }
            }
        }
    }
}

fn unicast_dependencies(g: &SwitchGraph, bits: &[u64], out: &mut HashSet<(u32, u32)>) {
    DependencySlots::new(g).for_each_edge(g, bits, |a, b| {
        out.insert((a, b));
    });
}

/// Kahn's algorithm over an edge set.
fn acyclic(n: usize, edges: &HashSet<(u32, u32)>) -> bool {
    let mut indeg = vec![0u32; n];
    let mut adj = vec![Vec::new(); n];
    for &(a, b) in edges {
        adj[a as usize].push(b);
        indeg[b as usize] += 1;
    }
    let mut stack: Vec<u32> = (0..n as u32).filter(|&c| indeg[c as usize] == 0).collect();
    let mut seen = 0;
    while let Some(c) = stack.pop() {
        seen += 1;
        for &b in &adj[c as usize] {
            indeg[b as usize] -= 1;
            if indeg[b as usize] == 0 {
                stack.push(b);
            }
        }
    }
    seen == n
}

#[test]
fn masks_on_a_line_are_exactly_openms() {
    // s0 -1- s1 -2/1- s2; CAs on ports 10, 11 of every switch.
    let (_, g) = fabric(3, 2, &[((0, 1), (1, 1)), ((1, 2), (2, 1))]);
    let gr = McGroup {
        mlid: 0xC001,
        vl: 0,
        members: vec![
            member(0, 10, false),
            member(2, 11, true),
            member(1, 0, false),
        ],
    };
    let r = route_groups(
        &g,
        std::slice::from_ref(&gr),
        &UnicastLayers::default(),
        &McConfig::default(),
    )
    .unwrap();
    let t = &r.trees[0];
    assert_eq!(t.root, 1, "the centre of the members");
    assert_eq!(t.max_depth, 1);
    assert_eq!(mask_of(&t.mft, 0), vec![1, 10]);
    assert_eq!(mask_of(&t.mft, 1), vec![0, 1, 2]);
    assert_eq!(
        mask_of(&t.mft, 2),
        vec![1, 11],
        "send-only port included, as OpenSM does"
    );
    let cfg = McConfig {
        send_only_receive: false,
        ..McConfig::default()
    };
    let r = route_groups(&g, &[gr], &UnicastLayers::default(), &cfg).unwrap();
    assert_eq!(
        mask_of(&r.mfts[0], 2),
        vec![1],
        "switch stays in the tree to let it send"
    );
    let m = &r.report.metrics.groups[0];
    assert!(m.complete && m.tree);
    assert_eq!((m.depth, m.diameter, m.member_switches), (Some(1), 2, 3));
    assert!(r.report.check.deadlock_free);
}

#[test]
fn members_by_lid() {
    let (_, g) = fabric(2, 1, &[((0, 1), (1, 1))]);
    // Switch LIDs 1, 2; the CAs' LIDs follow, on port 10.
    let full = JoinState::Full;
    assert_eq!(McMember::for_lid(&g, 2, full), Some(member(1, 0, false)));
    let send_only = JoinState::SendOnly;
    assert_eq!(
        McMember::for_lid(&g, 4, send_only),
        Some(member(1, 10, true))
    );
    assert_eq!(McMember::for_lid(&g, 99, full), None);
}

#[test]
fn bad_members_are_errors_naming_the_group() {
    let (_, g) = fabric(2, 1, &[((0, 1), (1, 1))]);
    let bad = |m: McMember| McGroup {
        mlid: 0xC00A,
        vl: 0,
        members: vec![m],
    };
    let run =
        |gr: McGroup| route_groups(&g, &[gr], &UnicastLayers::default(), &McConfig::default());
    assert!(matches!(
        run(bad(member(7, 10, false))),
        Err(McError::NoSuchSwitch { .. })
    ));
    let e = run(bad(member(0, 1, false))).unwrap_err();
    assert!(matches!(e, McError::SwitchPort { .. }));
    assert!(
        e.to_string().contains("0xC00A") && e.to_string().contains("0x0000000000000100"),
        "{e}"
    );
    assert!(matches!(
        run(bad(member(0, 200, false))),
        Err(McError::NoSuchPort { .. })
    ));
    let ok = bad(member(0, 10, false));
    let dup = route_groups(
        &g,
        &[ok.clone(), ok],
        &UnicastLayers::default(),
        &McConfig::default(),
    );
    assert_eq!(dup.unwrap_err(), McError::DuplicateMlid { mlid: 0xC00A });
}

#[test]
fn three_groups_around_a_ring_close_a_cycle_that_is_detected() {
    // Ring s0 -2/1- s1 -2/1- s2 -2/1- s0 (port 2 to the next switch, port 1 to the previous).
    let f = ring(3, 1, 0, true);
    let (_, g) = with_graph(f);
    let port_to = |a: u32, b: u32| {
        g.out_channels(a)
            .find(|&c| g.chan_head()[c as usize] == b)
            .map(|c| g.chan_port()[c as usize])
            .unwrap()
    };
    // Group k is the path k - k+1 - k+2 (no member CAs needed for the dependencies).
    let mfts: Vec<GroupMft> = (0..3u32)
        .map(|k| {
            let (a, b, c) = (k, (k + 1) % 3, (k + 2) % 3);
            let mut ma = PortMask::EMPTY;
            ma.set(port_to(a, b));
            let mut mb = PortMask::EMPTY;
            mb.set(port_to(b, a));
            mb.set(port_to(b, c));
            let mut mc = PortMask::EMPTY;
            mc.set(port_to(c, b));
            GroupMft::from_masks(&g, 0xC000 + k as u16, 0, vec![(a, ma), (b, mb), (c, mc)])
        })
        .collect();
    let check = joint_check(&g, &mfts, &UnicastLayers::default());
    assert!(!check.deadlock_free);
    let v = &check.vls[0];
    assert!(!v.multicast_alone_acyclic && !v.acyclic);
    let cyc = v.cycle.as_ref().unwrap();
    assert_eq!(cyc.len(), 3, "{cyc:?}");
    assert!(v
        .cycle_text
        .as_ref()
        .unwrap()
        .contains("0x0000000000000100 port"));
    // Each group alone is a tree: acyclic.
    for m in &mfts {
        let one = joint_check(&g, std::slice::from_ref(m), &UnicastLayers::default());
        assert!(one.deadlock_free);
    }
    // On different VLs they do not share a CDG.
    let mut spread = mfts.clone();
    spread[1].vl = 1;
    assert!(joint_check(&g, &spread, &UnicastLayers::default()).deadlock_free);
}

#[test]
fn metrics_see_broken_and_looping_forwarding() {
    let f = ring(4, 1, 0, true);
    let (_, g) = with_graph(f);
    let ports = member_ports(&g);
    let ca = |s: u32| ports.iter().find(|&&(x, p)| x == s && p != 0).unwrap().1;
    // Members on s0 and s2, forwarding only at their own switches: incomplete.
    let mut m0 = PortMask::EMPTY;
    m0.set(ca(0));
    let mut m2 = PortMask::EMPTY;
    m2.set(ca(2));
    let broken = GroupMft::from_masks(&g, 0xC000, 0, vec![(0, m0), (2, m2)]);
    assert_eq!(broken.member_switches, vec![0, 2]);
    // Every ring port set: complete, but a loop.
    let all: Vec<(u32, PortMask)> = (0..4)
        .map(|s| {
            let mut m = PortMask::EMPTY;
            for c in g.out_channels(s) {
                m.set(g.chan_port()[c as usize]);
            }
            m.set(ca(s));
            (s, m)
        })
        .collect();
    let looping = GroupMft::from_masks(&g, 0xC001, 0, all);
    let m = mft_metrics(&g, &[broken, looping]);
    assert!(!m.groups[0].complete && m.groups[0].unreachable_pairs == 2);
    assert!(m.groups[1].complete && !m.groups[1].tree);
    assert_eq!(m.groups[1].tree_links, 4);
    assert_eq!(m.max_channel_load, 1);
    assert_eq!(m.complete_groups, 1);
}

#[test]
fn balancing_spreads_groups_below_the_unbalanced_choice() {
    // 8 leaves, 4 spines: every leaf pair has 4 equal 2-hop paths.
    let (_, g) = with_graph(fat_tree(8, 4, 4, 0));
    let groups = random_groups(&g, 40, 6, 7);
    let balanced =
        route_groups(&g, &groups, &UnicastLayers::default(), &McConfig::default()).unwrap();
    let plain = McConfig {
        balance: false,
        ..McConfig::default()
    };
    let unbalanced = route_groups(&g, &groups, &UnicastLayers::default(), &plain).unwrap();
    let (b, u) = (
        balanced.report.metrics.max_channel_load,
        unbalanced.report.metrics.max_channel_load,
    );
    assert!(b < u, "balanced {b}, unbalanced {u}");
    assert!(balanced.report.metrics.complete_groups == 40);
}

#[test]
fn same_input_in_any_order_gives_the_same_trees() {
    let (_, g) = with_graph(random_net(14, 10, 2, 3));
    let groups = random_groups(&g, 12, 8, 5);
    let a = route_groups(&g, &groups, &UnicastLayers::default(), &McConfig::default()).unwrap();
    let mut rev = groups.clone();
    rev.reverse();
    let b = route_groups(&g, &rev, &UnicastLayers::default(), &McConfig::default()).unwrap();
    assert_eq!(a.mfts, b.mfts);
    assert!(a.mfts.windows(2).all(|w| w[0].mlid < w[1].mlid));
}

#[test]
fn minimal_trees_against_a_cyclic_union_are_rebuilt_along_updown() {
    // A 6-ring, unicast Up*/Down* (acyclic), groups of switches two apart: minimal trees turn
    // down-then-up at the far side of the ring and close cycles with the unicast routes.
    let (_, g) = with_graph(ring(6, 1, 0, true));
    let ud = UpDown::new(&g, &SwitchDistances::new(&g));
    let r = crate::updown::route_with(&g, &ud);
    let rep = verify(&g, &r).unwrap();
    let loads = crate::balance::channel_loads(&g, &r.lft);
    let uni = UnicastLayers {
        loads: &loads,
        layer_edges: &rep.layer_edges,
        layer_vl: &[0],
    };
    let ports = member_ports(&g);
    let ca = |s: u32| {
        let p = ports.iter().find(|&&(x, p)| x == s && p != 0).unwrap().1;
        member(s, p, false)
    };
    let group = |k: u32| McGroup {
        mlid: 0xC000 + k as u16,
        vl: 0,
        members: vec![ca(k), ca((k + 2) % 6)],
    };
    let minimal = McConfig {
        mode: TreeMode::Minimal,
        ..McConfig::default()
    };
    // Six such paths cover the ring twice over: multicast alone is cyclic.
    let all: Vec<McGroup> = (0..6).map(group).collect();
    let m = route_groups(&g, &all, &uni, &minimal).unwrap();
    assert!(!m.report.check.vls[0].multicast_alone_acyclic);
    // Three (0-1-2, 2-3-4, 4-5-0) are acyclic alone and with unicast alone, but the unicast
    // turns at 2, 4 and 0 join them into a loop.
    let three: Vec<McGroup> = [0, 2, 4].into_iter().map(group).collect();
    let m = route_groups(&g, &three, &uni, &minimal).unwrap();
    assert!(!m.report.check.deadlock_free, "{:?}", m.report.check);
    let v = &m.report.check.vls[0];
    assert!(v.multicast_alone_acyclic && v.unicast_alone_acyclic);
    assert_eq!(v.conflicting_layers, vec![0]);
    assert!(
        v.action.contains("still cyclic with unicast layer(s) [0]"),
        "{}",
        v.action
    );
    // VL 1 holds nothing: a lane reserved for multicast fits.
    assert_eq!(v.fits_on_vls, vec![1]);
    assert!(
        v.action.contains("deadlock-free on VL(s) [1]"),
        "{}",
        v.action
    );

    for groups in [all, three] {
        let auto = route_groups(&g, &groups, &uni, &McConfig::default()).unwrap();
        assert!(auto.report.check.deadlock_free, "{:?}", auto.log);
        assert_eq!(auto.updown_vls, vec![true]);
        assert!(
            auto.log.iter().any(|l| l.contains("rebuilding")),
            "{:?}",
            auto.log
        );
        assert!(auto.trees.iter().all(|t| t.updown));
        assert_eq!(auto.report.metrics.complete_groups as usize, groups.len());
    }
}

/// Checks trees against their groups: every member port gets a packet sent by any other member
/// exactly once, no switch is entered twice, and depths are minimal (hops from the root) in
/// minimal mode.
fn check_trees(g: &SwitchGraph, groups: &[McGroup], r: &McRouting, cfg: &McConfig) {
    let mut by_mlid: Vec<&McGroup> = groups.iter().collect();
    by_mlid.sort_by_key(|gr| gr.mlid);
    for (gr, t) in by_mlid.iter().zip(&r.trees) {
        assert_eq!(gr.mlid, t.mlid);
        assert!(t.unreached.is_empty());
        let receivers: HashSet<(u32, u8)> = gr
            .members
            .iter()
            .filter(|m| m.port == 0 || !m.send_only || cfg.send_only_receive)
            .map(|m| (m.switch, m.port))
            .collect();
        for src in &gr.members {
            let (delivered, entered) = flood(g, &t.mft, src.switch, src.port);
            assert!(
                entered.values().all(|&n| n == 1),
                "a switch entered twice: {entered:?}"
            );
            let got: HashSet<(u32, u8)> = delivered.iter().copied().collect();
            assert_eq!(got.len(), delivered.len(), "duplicate delivery");
            let mut want = receivers.clone();
            if src.port != 0 {
                // A switch member (port 0) receives its own packet from its own CA... but a CA's
                // packet does not return to it.
                want.remove(&(src.switch, src.port));
            } else {
                want.remove(&(src.switch, 0));
            }
            assert_eq!(got, want, "MLID 0x{:04X} from {src:?}", gr.mlid);
        }
        if !t.updown && t.root != NO_SWITCH {
            let d = g.bfs_distances_to(t.root);
            for (&s, &dep) in t.switches.iter().zip(&t.depth) {
                assert_eq!(d[s as usize], dep, "depth is not minimal");
            }
            // The root minimises the farthest member switch.
            let ecc = |x: u32| {
                let d = g.bfs_distances_to(x);
                gr.members
                    .iter()
                    .map(|m| d[m.switch as usize])
                    .max()
                    .unwrap()
            };
            let best = (0..g.num_switches() as u32).map(ecc).min().unwrap();
            assert_eq!(ecc(t.root), best);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random fabrics and groups, minimal and Up*/Down* trees: the masks deliver exactly once to
    /// every receiving member; Up*/Down* trees are acyclic together with Up*/Down* unicast of the
    /// same orientation (the construction's claim), checked from the tree structure, not the
    /// masks; every claim of deadlock freedom holds on an independent CDG.
    #[test]
    fn trees_deliver_and_claims_of_acyclicity_hold(
        n in 2u32..16, extra in 0u32..14, seed in 0u64..10_000, ngroups in 1usize..10,
        size in 1usize..12, updown in any::<bool>(), receive in any::<bool>(),
    ) {
        let (_, g) = with_graph(random_net(n, extra, 2, seed));
        let groups = random_groups(&g, ngroups, size, seed ^ 0x5eed);
        let ud = UpDown::new(&g, &SwitchDistances::new(&g));
        let r = crate::updown::route_with(&g, &ud);
        let rep = verify(&g, &r).unwrap();
        let loads = crate::balance::channel_loads(&g, &r.lft);
        let uni = UnicastLayers { loads: &loads, layer_edges: &rep.layer_edges, layer_vl: &[] };
        let cfg = McConfig {
            mode: if updown { TreeMode::UpDown } else { TreeMode::Auto },
            send_only_receive: receive,
            orientation: Some(ud.clone()),
            ..McConfig::default()
        };
        let out = route_groups(&g, &groups, &uni, &cfg).unwrap();
        check_trees(&g, &groups, &out, &cfg);
        prop_assert_eq!(out.report.metrics.complete_groups as usize, groups.len());
        prop_assert!(out.report.metrics.groups.iter().all(|m| m.tree));
        // Independent CDG: unicast edges plus tree dependencies from parent links.
        let mut edges = HashSet::new();
        unicast_dependencies(&g, &rep.layer_edges[0], &mut edges);
        for t in &out.trees {
            tree_dependencies(&g, t, &mut edges);
            if t.updown {
                // Every tree link is up from child to parent.
                prop_assert!(t.parent.iter().all(|&c| c == NO_CHANNEL || ud.is_up(&g, c)));
            }
        }
        let independent = acyclic(g.num_channels(), &edges);
        if updown {
            prop_assert!(out.report.check.deadlock_free, "Up*/Down* trees with Up*/Down* unicast must be acyclic");
        }
        prop_assert_eq!(out.report.check.deadlock_free, independent);
        // Auto ends acyclic here: the rebuild's orientation is the unicast one.
        prop_assert!(out.report.check.deadlock_free);
    }

    /// With the engine's unicast layers (dfsssp-rs, few lanes) and groups on random VLs, the
    /// joint check agrees with an independent CDG per VL, and Up*/Down* trees alone are always
    /// acyclic per VL.
    #[test]
    fn joint_check_agrees_with_an_independent_cdg(
        n in 3u32..14, extra in 0u32..12, seed in 0u64..10_000, lanes in 1u8..4,
    ) {
        let f = random_net(n, extra, 2, seed);
        let out = crate::engine::run(&f, &crate::engine::EngineConfig {
            lanes,
            ..crate::engine::EngineConfig::new(crate::engine::EngineKind::Dfsssp)
        }).unwrap();
        let g = &out.graph;
        let mut groups = random_groups(g, 8, 10, seed);
        for (i, gr) in groups.iter_mut().enumerate() {
            gr.vl = (i as u8) % lanes;
        }
        let uni = UnicastLayers {
            loads: &out.summary.loads,
            layer_edges: &out.summary.layer_edges,
            layer_vl: &[],
        };
        for mode in [TreeMode::Minimal, TreeMode::UpDown, TreeMode::Auto] {
            let cfg = McConfig { mode, ..McConfig::default() };
            let r = route_groups(g, &groups, &uni, &cfg).unwrap();
            for v in &r.report.check.vls {
                let mut edges = HashSet::new();
                for (l, bits) in out.summary.layer_edges.iter().enumerate() {
                    if l == usize::from(v.vl) {
                        unicast_dependencies(g, bits, &mut edges);
                    }
                }
                let mut mc = HashSet::new();
                for t in r.trees.iter().filter(|t| t.vl == v.vl) {
                    tree_dependencies(g, t, &mut mc);
                }
                prop_assert_eq!(v.multicast_alone_acyclic, acyclic(g.num_channels(), &mc));
                if mode == TreeMode::UpDown {
                    prop_assert!(v.multicast_alone_acyclic);
                }
                edges.extend(mc);
                prop_assert_eq!(v.acyclic, acyclic(g.num_channels(), &edges), "VL {}", v.vl);
            }
        }
    }
}
