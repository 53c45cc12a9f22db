use super::*;
use crate::fabric::Fabric;
use crate::routing::walk;
use crate::topo::by_name;

fn fabric(spec: &str) -> Fabric {
    by_name(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn run(spec: &str, opts: &MultipathOptions) -> (SwitchGraph, Routing, MultipathStats) {
    let g = SwitchGraph::new(&fabric(spec)).unwrap();
    let (r, st) = route(&g, opts).unwrap();
    (g, r, st)
}

fn keep() -> MultipathOptions {
    MultipathOptions {
        keep_paths: true,
        ..Default::default()
    }
}

/// Every LID delivered from every switch by a minimal path, hop counts right; and the
/// independent verifier agrees (complete, one layer).
fn assert_complete_minimal(g: &SwitchGraph, r: &Routing) {
    let dist = SwitchDistances::new(g);
    for d in g.dests() {
        for s in 0..g.num_switches() as u32 {
            match walk(g, &r.lft, s, d.lid, |_| {}) {
                Ok(hops) => {
                    assert_eq!(
                        hops,
                        u32::from(dist.get(s, d.switch)),
                        "switch {s} LID {}",
                        d.lid
                    );
                    let h = hops + u32::from(d.exit_port != 0);
                    assert_eq!(
                        u32::from(r.hops.get(s, d.lid)),
                        h,
                        "hops of {s} to {}",
                        d.lid
                    );
                }
                end => panic!("switch {s} LID {}: {end:?}", d.lid),
            }
        }
    }
    let rep = crate::verify::verify(g, r);
    match rep {
        Ok(v) => assert_eq!(v.unreachable, 0),
        // Plain multipath is not deadlock-free on tori; completeness is what counts here.
        Err(crate::verify::VerifyError::CreditLoop { .. }) => {}
        Err(e) => panic!("verify: {e:?}"),
    }
}

/// The channel sequence a walk from `s` to `lid` takes.
fn route_of(g: &SwitchGraph, r: &Routing, s: u32, lid: u16) -> Vec<u32> {
    let mut v = Vec::new();
    let _ = walk(g, &r.lft, s, lid, |c| v.push(c));
    v
}

/// Minimal paths from every switch to `t` (saturating).
fn minimal_path_counts(g: &SwitchGraph, dist: &SwitchDistances, t: u32) -> Vec<u64> {
    let to = dist.to(t);
    let mut order = Vec::new();
    crate::graph::order_by_distance(to, &mut order, &mut Vec::new());
    let mut n = vec![0u64; g.num_switches()];
    n[t as usize] = 1;
    for &s in order.iter().skip(1) {
        n[s as usize] = g
            .out_channels(s)
            .filter(|&c| to[g.chan_head()[c as usize] as usize] + 1 == to[s as usize])
            .map(|c| n[g.chan_head()[c as usize] as usize])
            .fold(0u64, u64::saturating_add);
    }
    n
}

/// For every (source switch with CAs, port with several LIDs): how many distinct routes its
/// LIDs take, and how many minimal paths exist. Returns (pairs, sum distinct, pairs with a
/// choice whose LIDs all share one route).
fn distinct_routes(g: &SwitchGraph, r: &Routing, exact_up_to_lids: bool) -> (u64, u64, u64) {
    let dist = SwitchDistances::new(g);
    let (mut pairs, mut distinct_sum, mut collapsed) = (0, 0, 0);
    let mut i = 0;
    while i < g.dests().len() {
        let d0 = g.dests()[i];
        let k = g.dests()[i..]
            .iter()
            .take_while(|d| d.endpoint == d0.endpoint)
            .count();
        i += k;
        if k < 2 || d0.switch == NO_SWITCH {
            continue;
        }
        let npaths = minimal_path_counts(g, &dist, d0.switch);
        for s in 0..g.num_switches() as u32 {
            if s == d0.switch || g.terminal_count()[s as usize] == 0 {
                continue;
            }
            let mut routes: Vec<Vec<u32>> = (0..k as u16)
                .map(|o| route_of(g, r, s, d0.lid + o))
                .collect();
            routes.sort();
            routes.dedup();
            let want = npaths[s as usize].min(k as u64);
            pairs += 1;
            distinct_sum += routes.len() as u64;
            if want >= 2 && routes.len() < 2 {
                collapsed += 1;
            }
            if exact_up_to_lids {
                assert_eq!(routes.len() as u64, want, "switch {s} to LID {}", d0.lid);
            }
        }
    }
    (pairs, distinct_sum, collapsed)
}

/// The kept paths are valid configurations (the lid module's own check), and each path is
/// exactly the route its LID takes from its source.
fn assert_paths_realised(g: &SwitchGraph, r: &Routing, st: &MultipathStats) {
    for p in &st.ports {
        let d = p.detail.as_ref().expect("keep_paths");
        d.lids
            .validate(&d.paths)
            .unwrap_or_else(|e| panic!("LID {}: {e}", p.base_lid));
        assert!(d.lids.num_lids <= p.budget && d.lids.num_lids == p.used);
        for (i, &s) in d.source.iter().enumerate() {
            let lid = p.base_lid + d.lids.lid[i] as u16;
            let chans: Vec<u32> = d.paths.path(i).iter().map(|h| h.out).collect();
            assert_eq!(
                route_of(g, r, s, lid),
                chans,
                "path {i} of LID {}",
                p.base_lid
            );
        }
    }
}

#[test]
fn fat_tree_lmc2_uses_four_spines_per_source() {
    // 8 leaves x 4 CAs, 4 spines: every leaf reaches every other leaf over 4 spines.
    let (g, r, st) = run("fattree2:8,lmc=2", &keep());
    assert_complete_minimal(&g, &r);
    assert_paths_realised(&g, &r, &st);
    assert!(!st.ports.is_empty());
    assert_eq!(st.merged_ports(), 0);
    // Paths through different spines split only at the source: 4 LIDs suffice.
    assert!(
        st.ports.iter().all(|p| p.needed == 4 && p.used == 4),
        "{:?}",
        st.log_lines()
    );
    let (pairs, sum, collapsed) = distinct_routes(&g, &r, true);
    assert_eq!((sum, collapsed), (pairs * 4, 0));
}

#[test]
fn fat_tree_lmc1_and_mesh_lmc1() {
    for spec in ["fattree2:8,lmc=1", "mesh:3x3,2,lmc=1", "mesh:4x3,1,lmc=2"] {
        let (g, r, st) = run(spec, &keep());
        assert_complete_minimal(&g, &r);
        assert_paths_realised(&g, &r, &st);
        let (pairs, sum, collapsed) = distinct_routes(&g, &r, false);
        eprintln!(
            "{spec}: {pairs} (source, port) pairs, {:.2} distinct routes per pair, {} ports merged; {:?}",
            sum as f64 / pairs as f64,
            st.merged_ports(),
            st.log_lines()
        );
        // Wherever a source has a choice of minimal paths, its LIDs use at least two.
        assert_eq!(collapsed, 0, "{spec}");
    }
}

#[test]
fn torus_lmc2_routes_every_lid_on_distinct_paths() {
    let (g, r, st) = run("torus:4x4,1,lmc=2", &keep());
    assert_complete_minimal(&g, &r);
    assert_paths_realised(&g, &r, &st);
    let (pairs, sum, collapsed) = distinct_routes(&g, &r, false);
    assert_eq!(collapsed, 0);
    assert!(sum > pairs, "{sum} routes over {pairs} pairs");
}

#[test]
fn tiny_budget_merges_and_reports() {
    let opts = MultipathOptions {
        max_lids: Some(2),
        ..keep()
    };
    let (g, r, st) = run("fattree2:8,lmc=2", &opts);
    assert_complete_minimal(&g, &r);
    assert_paths_realised(&g, &r, &st);
    assert_eq!(st.merged_ports(), st.ports.len());
    for p in &st.ports {
        assert_eq!((p.needed, p.used, p.budget, p.lids), (4, 2, 2, 4));
        // Every source keeps its best path.
        let d = p.detail.as_ref().unwrap();
        let mut with_best: Vec<u32> = d
            .source
            .iter()
            .zip(&d.rank)
            .filter(|x| *x.1 == 0)
            .map(|x| *x.0)
            .collect();
        with_best.dedup();
        assert_eq!(with_best.len() as u32, p.sources);
        assert_eq!(p.dropped, p.paths - d.paths.len() as u32);
        assert!(p.dropped > 0);
    }
    let lines = st.log_lines().join("\n");
    assert!(lines.contains("needed more LIDs than they have"), "{lines}");
    // With a budget of 1 everything collapses to the SSSP tree, still complete.
    let (g, r, st) = run(
        "torus:3x3,2,lmc=2",
        &MultipathOptions {
            max_lids: Some(1),
            ..keep()
        },
    );
    assert_complete_minimal(&g, &r);
    assert_paths_realised(&g, &r, &st);
    assert!(st.ports.iter().all(|p| p.used == 1));
    assert!(st.merged_ports() > 0);
}

#[test]
fn pack_drops_highest_ranks_first() {
    // Source 0 has alternatives via nodes 1, 2, 3 to node 9; all split at node 0.
    let mut ps = PathSet::new();
    for mid in 1..=3u32 {
        ps.push(&[Hop::new(0, mid), Hop::new(mid, 9)]).unwrap();
    }
    let rank = [0u8, 1, 2];
    let full = pack(&ps, &rank, 4, Heuristic::ColorL).unwrap();
    assert_eq!(
        (full.kept.len(), full.needed, full.lids.num_lids),
        (3, 3, 3)
    );
    let two = pack(&ps, &rank, 2, Heuristic::ColorL).unwrap();
    assert_eq!(two.kept, vec![0, 1]);
    assert_eq!(two.needed, 3);
    let one = pack(&ps, &rank, 1, Heuristic::ColorL).unwrap();
    assert_eq!(one.kept, vec![0]);
}

#[test]
fn engine_routes_lmc_fabrics_with_multipath_deadlock_free() {
    use crate::engine::{self, EngineConfig, EngineKind};
    for spec in [
        "torus:3x3,2,lmc=2",
        "fattree2:8,lmc=1",
        "random:12,8,2,20,seed=3,lmc=2",
    ] {
        let f = fabric(spec);
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.lanes = 4;
        let out = engine::run(&f, &cfg).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let v = out
            .verified
            .as_ref()
            .expect("dfsssp-rs verified deadlock-free");
        assert_eq!(v.unreachable, 0);
        assert!(
            out.log
                .iter()
                .any(|(_, l)| l.contains("multipath: LIDs needed")),
            "{spec}"
        );
        // With one lane (QoS off) too.
        cfg.qos = false;
        let out1 = engine::run(&f, &cfg).unwrap();
        assert!(out1.verified.is_some() && out1.routing.num_layers == 1);
        // Plain SSSP stays selectable.
        cfg.multipath = false;
        let plain = engine::run(&f, &cfg).unwrap();
        assert!(!plain.log.iter().any(|(_, l)| l.contains("multipath")));
    }
}
