use super::*;
use crate::fabric::NodeKind;
use crate::reroute::RoutedFabric;

/// `f` without its first switch-to-switch cable.
fn first_cable_cut(f: &Fabric) -> Fabric {
    let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    let cable = *f.links().iter().find(|l| sw(l.a) && sw(l.b)).unwrap();
    f.retain(|_| true, |l| *l != cable)
}

/// The switches' tables of `out` as a standby reads them back: (node GUID, port per LID).
fn tables_of(out: &EngineOutput) -> Vec<(u64, Vec<u8>)> {
    switch_tables(&out.graph, &out.routing)
}

/// [`tables_of`] for any routing on `g`.
fn switch_tables(g: &SwitchGraph, routing: &Routing) -> Vec<(u64, Vec<u8>)> {
    (0..g.num_switches() as u32)
        .map(|s| (g.switch_guid(s), routing.lft.table(s).to_vec()))
        .collect()
}

/// What changed from `a` (routed on `fa`) to `b` (routed on `fb`).
fn changes(
    (fa, a): (&Fabric, &EngineOutput),
    (fb, b): (&Fabric, &EngineOutput),
) -> crate::reroute::RoutingDiff {
    crate::reroute::diff(
        RoutedFabric {
            fabric: fa,
            graph: &a.graph,
            routing: &a.routing,
        },
        RoutedFabric {
            fabric: fb,
            graph: &b.graph,
            routing: &b.routing,
        },
    )
}

/// What the plug-in keeps of `out` (computed on `f` with `cfg`) to re-route from.
fn prior_of<'a>(f: &'a Fabric, cfg: &'a EngineConfig, out: &'a EngineOutput) -> RoutedRef<'a> {
    RoutedRef::of_output(f, cfg, out)
}

/// With QoS on the lanes may hold the one-lane search's detours when they measure better than
/// minimal routes over the layers: never below QoS off on the same fabric, still verified.
/// Where minimal routes reach the load bound (a complete fat tree) the search is not run.
/// (Without the dimension-order candidate, which on tori is taken first and then leaves the
/// one-lane candidate out: `dimension_order_taken_leaves_the_one_lane_candidate_out`.)
/// The candidates share one budget, the base routing's time (at least the floor): what dimension
/// order spent is neither base nor left for the one-lane candidate.
#[test]
fn candidates_share_one_budget_of_the_base_routings_time() {
    let s = |ms: u64| Duration::from_millis(ms);
    // 3 s of base routing, no candidate yet: 3 s left.
    assert_eq!(candidate_time_left(s(3000), s(0)), s(3000));
    // 3 s of base routing and 2 s of dimension order (5 s elapsed): 1 s left, not 5.
    assert_eq!(candidate_time_left(s(5000), s(2000)), s(1000));
    // Dimension order took the whole budget: nothing left.
    assert_eq!(candidate_time_left(s(6000), s(3000)), s(0));
    assert_eq!(candidate_time_left(s(7000), s(4000)), s(0));
    // A fast base routing still leaves the floor.
    assert_eq!(candidate_time_left(s(20), s(0)), CANDIDATE_BUDGET_FLOOR);
    assert_eq!(
        candidate_time_left(s(320), s(300)),
        CANDIDATE_BUDGET_FLOOR - s(300)
    );
}

#[test]
fn qos_on_is_never_below_qos_off() {
    let lambda = |spec: &str, qos: bool| {
        let f = crate::topo::by_name(spec).unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.qos = qos;
        cfg.lanes = 8;
        cfg.dor_candidate = false;
        let out = run(&f, &cfg).unwrap();
        (
            candidates::candidate_lambda(&out.graph, &out.routing),
            out.log
                .iter()
                .any(|(_, l)| l.contains("one-lane routing measures better")),
        )
    };
    // 4x4x4 torus and 5-cube: one lane's detours beat 8 layers of minimal routes.
    for spec in ["torus:4x4x4,2", "hypercube:5,2"] {
        let ((on, chosen), (off, _)) = (lambda(spec, true), lambda(spec, false));
        assert!(chosen, "{spec}: the one-lane routing is taken");
        assert!(on >= off, "{spec}: QoS on {on} < QoS off {off}");
    }
    // The 6x6x6 torus keeps its layers (they measure better); the fat tree never asks.
    for spec in ["torus:6x6x6,2", "ktree:4,3,shuffle=3"] {
        let ((on, chosen), (off, _)) = (lambda(spec, true), lambda(spec, false));
        assert!(!chosen, "{spec}: the layers stay");
        assert!(on >= off, "{spec}: QoS on {on} < QoS off {off}");
    }
}

/// On a regular torus or mesh, dimension-order routes are judged first, against the SSSP routes
/// before their deadlock removal; taken, they are the routes (entry for entry), they leave the
/// one-lane candidate out (it has never measured better than they do), and the routing is no
/// worse than the one-lane routing the engine takes without them.
#[test]
fn dimension_order_taken_leaves_the_one_lane_candidate_out() {
    for spec in ["torus:4x4x4,2", "hypercube:5,2", "mesh:5x5,2"] {
        let f = crate::topo::by_name(spec).unwrap();
        let run_with = |dor: bool| {
            let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
            cfg.lanes = 8;
            cfg.dor_candidate = dor;
            let out = run(&f, &cfg).unwrap();
            let said = |s: &str| out.log.iter().any(|(_, l)| l.contains(s));
            if dor {
                let g = &out.graph;
                let torus = crate::dor::recognise(g).expect("a torus or mesh");
                assert_eq!(
                    out.routing.lft,
                    crate::dor::route(g, &torus).lft,
                    "{spec}: dimension-order routes"
                );
            }
            (
                candidates::candidate_lambda(&out.graph, &out.routing),
                said("better than the SSSP routes (Λ") && said("routing in dimension order"),
                said("one-lane routing not computed: dimension-order routes were taken"),
                said("one-lane routing measures better"),
            )
        };
        let (with_dor, dor_taken, one_left_out, _) = run_with(true);
        let (without, _, _, one_taken) = run_with(false);
        assert!(
            dor_taken && one_left_out,
            "{spec}: DOR taken, one lane left out"
        );
        assert!(
            one_taken,
            "{spec}: without DOR the one-lane routing is taken"
        );
        assert!(with_dor >= without, "{spec}: Λ {with_dor} < {without}");
    }
}

/// The one-lane candidate runs where it may win: on a random fabric whose 8 layers need no
/// escape it is not computed (and the routing is the layers'); with 2 lanes the escape carries
/// over an eighth of the routes, the candidate is computed, measures better and is spread over
/// the lanes.
#[test]
fn the_one_lane_candidate_runs_only_where_it_may_win() {
    let f = crate::topo::by_name("random:128,32,16,300,seed=1").unwrap();
    let run_with = |lanes: u8| {
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.lanes = lanes;
        let out = run(&f, &cfg).unwrap();
        let said = |what: &str| out.log.iter().any(|(_, l)| l.contains(what));
        let verdict = (
            said("candidate one-lane routing not computed"),
            said("one-lane routing measures better"),
        );
        let rep = out.layer_report.expect("layers");
        // Taken, the one-lane routing is spread over the lanes the layers had.
        let spread = rep.layers_before_balancing == 1
            && out.routing.num_layers == rep.budget - u8::from(rep.spare_lane);
        (verdict, out.routing.num_layers, spread)
    };
    let ((skipped, taken), layers, _) = run_with(8);
    assert!(
        skipped && !taken && layers > 1,
        "8 lanes: {skipped} {taken} {layers}"
    );
    let ((skipped, taken), layers, spread) = run_with(2);
    assert!(
        !skipped && taken && spread,
        "2 lanes: {skipped} {taken} {layers}"
    );
}

/// On the 6x6x6 torus with QoS on the dimension-order candidate fits the lanes by cycle
/// breaking alone, and the result measures at least its Λ (it is taken, or something better
/// is) and at least stock torus-2QoS's in OpenSM over the same 1000 patterns (0.3275),
/// verified deadlock-free.
#[test]
fn a_torus_routes_at_least_as_well_as_in_dimension_order() {
    let f = crate::topo::by_name("torus:6x6x6,4").unwrap();
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    let out = run(&f, &cfg).unwrap();
    let g = &out.graph;
    let mut dor = crate::dor::route(g, &crate::dor::recognise(g).expect("a torus"));
    let opts = DfssspOptions::default();
    let rep = dfsssp::make_deadlock_free_with(g, &mut dor, cfg.lanes, &opts, None).unwrap();
    assert!(rep.escape_layer.is_none(), "{:?}", rep.dfsssp_layers_needed);
    verify::verify(g, &dor).unwrap();
    let lambda = |r: &Routing| candidates::candidate_lambda(g, r);
    assert!(lambda(&out.routing) >= lambda(&dor));
    assert!(out
        .log
        .iter()
        .any(|(_, l)| l.contains("routing in dimension order")));
    verify::verify(g, &out.routing).unwrap();
    let spec = metrics::BisectionSpec::new(1000, 1);
    let l = metrics::effective_bisection_bandwidth(g, &out.routing.lft, &spec).unwrap();
    assert!(l.lambda >= 0.3275, "{}", l.lambda);
}

/// A full routing, then a cable fault re-routed from it as the plug-in does (with the
/// summary): the check before the upload is incremental, the one after it exact.
#[test]
fn an_incremental_check_is_settled_after_the_upload() {
    let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
    let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
    cfg.one_lane_candidate = false;
    cfg.dor_candidate = false;
    let first = run(&f, &cfg).unwrap();
    assert!(!first.summary.edges_upper_bound);
    let after = first_cable_cut(&f);
    let prior = prior_of(&f, &cfg, &first);
    let mut out = run_from(&after, &cfg, Some(prior), &RerouteConfig::default()).unwrap();
    assert!(
        matches!(out.mode, RouteMode::Incremental(_)),
        "{:?}\n{:?}\n{:?}",
        out.log,
        "{:?}",
        out.mode
    );
    let checked = out.verified.as_ref().unwrap();
    assert!(checked.dests_reused > 0 && checked.edges_upper_bound);
    assert!(out.summary.edges_upper_bound);

    let exact = verify::verify(&out.graph, &out.routing).unwrap();
    let rep = settle_summary(&after, &out.graph, &out.routing, &mut out.summary)
        .unwrap()
        .expect("a complete check");
    assert_eq!(rep.paths_per_layer, exact.paths_per_layer);
    assert_eq!(out.summary.layer_edges, exact.layer_edges);
    assert!(!out.summary.edges_upper_bound);
    assert_eq!(
        settle_summary(&after, &out.graph, &out.routing, &mut out.summary).unwrap(),
        None
    );

    // A routing that does not verify: reported, and the summary no longer vouches for it.
    out.summary.edges_upper_bound = true;
    let mut broken = out.routing.clone();
    let d = out.graph.dests()[0];
    let s = (d.switch + 1) % out.graph.num_switches() as u32;
    broken.lft.set(s, d.lid, crate::routing::NO_PATH);
    let e = settle_summary(&after, &out.graph, &broken, &mut out.summary).unwrap_err();
    assert!(e.contains("LID"), "{e}");
    assert!(out.summary.layer_edges.is_empty() && out.summary.paths_per_layer.is_empty());
}

/// With the multicast lane on, a fabric whose layers leave room routes on SLs 1.. and an
/// incremental re-route keeps both the offset and the free lane.
#[test]
fn a_lane_left_to_multicast_stays_free_across_re_routes() {
    let f = crate::topo::by_name("torus:4x4,2").unwrap();
    let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
    cfg.mcast_lane = McastLane::WhenFree;
    let first = run(&f, &cfg).unwrap();
    assert_eq!(first.sl_offset, 1);
    assert!(
        first.routing.num_layers < cfg.lanes,
        "{}",
        first.routing.num_layers
    );
    let after = first_cable_cut(&f);
    let prior = prior_of(&f, &cfg, &first);
    let out = run_from(&after, &cfg, Some(prior), &RerouteConfig::default()).unwrap();
    assert!(
        matches!(out.mode, RouteMode::Incremental(_)),
        "{:?}",
        out.mode
    );
    assert_eq!(out.sl_offset, 1);
    assert!(out.routing.num_layers < cfg.lanes);
    // The setting changed: a full computation, without the offset.
    let mut off = cfg.clone();
    off.mcast_lane = McastLane::Off;
    let prior = RoutedRef { cfg: &cfg, ..prior };
    let out = run_from(&after, &off, Some(prior), &RerouteConfig::default()).unwrap();
    assert!(matches!(out.mode, RouteMode::Full(_)));
    assert_eq!(out.sl_offset, 0);
}

/// A torus whose layers need every lane: `WhenFree` leaves none, `Always` leaves one anyway
/// (unicast within the rest, the Up*/Down* escape where needed), both deadlock-free.
#[test]
fn always_leaves_a_lane_even_when_the_layers_need_every_one() {
    let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
    let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
    cfg.one_lane_candidate = false;
    cfg.dor_candidate = false;
    cfg.mcast_lane = McastLane::WhenFree;
    let when_free = run(&f, &cfg).unwrap();
    assert_eq!(when_free.sl_offset, 0);
    assert_eq!(when_free.routing.num_layers, cfg.lanes);
    cfg.mcast_lane = McastLane::Always;
    let always = run(&f, &cfg).unwrap();
    assert_eq!(always.sl_offset, 1);
    assert!(always.routing.num_layers < cfg.lanes);
    verify::verify(&always.graph, &always.routing).unwrap();
    assert_eq!("2".parse::<McastLane>(), Ok(McastLane::Always));
    assert_eq!("when-free".parse::<McastLane>(), Ok(McastLane::WhenFree));
    assert!("3".parse::<McastLane>().is_err());
}

/// The tables of a full computation, read back as a standby would read them from the switches:
/// the same routes and the same layers (the canonical SL rule) on a fat tree, on one with failed
/// cables (deadlock-free in one layer, spread over the lanes), on a torus routed in dimension
/// order and on one routed by the one-lane candidate; a table pointing at a port the switch
/// lacks, or a loop, is refused with the switch named.
#[test]
fn tables_read_back_give_the_routing_and_layers_the_master_computed() {
    for (spec, dor) in [
        ("ktree:4,3", true),
        ("ktree:6,3,cut=10", true),
        ("torus:4x4x4,2", true),
        ("torus:4x4x4,2", false),
        ("torus:3x3x3,1", true),
    ] {
        let f = crate::topo::by_name(spec).unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.dor_candidate = dor;
        let out = run(&f, &cfg).unwrap();
        let g = &out.graph;
        let one_layer = out
            .layer_report
            .as_ref()
            .is_some_and(|r| r.one_lane.is_some());
        let candidate = out
            .log
            .iter()
            .any(|(_, l)| l.contains("deadlock-free in one layer"));
        // The one-layer routings are among them, spread over the lanes.
        if spec.contains("cut") || !dor {
            assert!(one_layer || candidate, "{spec}: not routed in one layer");
            assert!(out.routing.num_layers > 1, "{spec}: one layer not spread");
        }
        let tables = tables_of(&out);
        let adopted = adopt_tables(f.clone(), &cfg, &tables).unwrap();
        assert_eq!(adopted.routing.lft, out.routing.lft, "{spec}");
        assert_eq!(adopted.sl_offset, out.sl_offset, "{spec}");
        for s in 0..g.num_switches() as u32 {
            for d in g.dests() {
                assert_eq!(
                    adopted.routing.layer(s, d.lid),
                    out.routing.layer(s, d.lid),
                    "{spec}: switch {s} LID {}",
                    d.lid
                );
            }
        }
        // A port the first switch does not have.
        let mut bad = tables.clone();
        let lid = g.dests()[0].lid;
        bad[0].1[usize::from(lid)] = 200;
        assert!(
            matches!(
                adopt_tables(f.clone(), &cfg, &bad),
                Err(AdoptError::NoSuchPort { .. })
            ),
            "{spec}"
        );
        // The same tables on the fabric without its first switch-to-switch cable: entries over
        // its two ends, down now, are the routing of the fabric with it (returned, for the
        // re-route to move what crossed it); without two cables, which down port faced which
        // is not known: refused.
        let cut = first_cable_cut(&f);
        let back = adopt_tables(cut.clone(), &cfg, &tables).unwrap();
        assert_eq!(back.fabric.links().len(), f.links().len(), "{spec}");
        assert_eq!(back.routing.lft, out.routing.lft, "{spec}");
        // Two cables cut: which down port faced which, the tables' hops tell.
        let back = adopt_tables(first_cable_cut(&cut), &cfg, &tables).unwrap();
        assert_eq!(back.fabric.links().len(), f.links().len(), "{spec}");
        assert_eq!(back.routing.lft, out.routing.lft, "{spec}");
        // Two switches sending one LID to each other: a loop.
        let c = g.out_channels(0).start;
        let h = g.chan_head()[c as usize];
        let far = g
            .dests()
            .iter()
            .find(|d| d.switch != 0 && d.switch != h)
            .unwrap();
        let mut looped = tables.clone();
        looped[0].1[usize::from(far.lid)] = g.chan_port()[c as usize];
        looped[h as usize].1[usize::from(far.lid)] = g.chan_head_port()[c as usize];
        assert!(
            matches!(
                adopt_tables(f.clone(), &cfg, &looped),
                Err(AdoptError::Incomplete(_))
            ),
            "{spec}"
        );
        // A switch whose table is empty (a replacement, not yet programmed), and one entry
        // missing on a switch: incomplete, refused (not a panic in the derivation).
        for holes in [vec![(1usize, None)], vec![(0, Some(far.lid))]] {
            let mut empty = tables.clone();
            for (s, lid) in holes {
                match lid {
                    None => empty[s].1.fill(crate::routing::NO_PATH),
                    Some(l) => empty[s].1[usize::from(l)] = crate::routing::NO_PATH,
                }
            }
            assert!(
                matches!(
                    adopt_tables(f.clone(), &cfg, &empty),
                    Err(AdoptError::Incomplete(_))
                ),
                "{spec}"
            );
        }
    }
}

/// Cables that fail while no master runs, two or three of them apart on the fabric: the
/// standby pairs the down ports its tables use into the cables they were (the pairing on which
/// the tables take shortest hops), adopts the tables as the routing of the fabric with them, and
/// the re-route moves only what crossed them (before: refused, computed from scratch). Where
/// the down ports cannot be paired (a switch gone with its cables) it refuses as before.
#[test]
fn a_standby_tells_several_failed_cables_apart_by_the_tables_hops() {
    use std::collections::BTreeSet;
    // (Lanes 1: QoS off, the one-lane search's detours in the tables.)
    for (spec, lanes) in [
        ("ktree:4,3", 8),
        ("ktree:8,3", 8),
        ("torus:4x4x4,2", 8),
        ("ktree:6,3,cut=10", 8),
        ("torus:6x6x6,4", 8),
        ("torus:4x4x4,2", 1),
        ("random:64,36,16,512,seed=1", 1),
        ("random:64,36,16,512,seed=1", 8),
    ] {
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.lanes = lanes;
        let f = crate::topo::by_name(spec).unwrap();
        let out = run(&f, &cfg).unwrap();
        let tables = tables_of(&out);
        let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
        let cables: Vec<_> = (f.links().iter())
            .filter(|l| sw(l.a) && sw(l.b))
            .copied()
            .collect();
        let pairs = |fab: &Fabric, links: &[crate::fabric::Link]| -> BTreeSet<(u64, u64)> {
            links
                .iter()
                .map(|l| {
                    let (a, b) = (
                        fab.nodes()[l.a.node as usize].guid,
                        fab.nodes()[l.b.node as usize].guid,
                    );
                    (a.min(b), a.max(b))
                })
                .collect()
        };
        for k in [2usize, 3] {
            let gone: Vec<_> = (1..=k)
                .map(|i| cables[i * cables.len() / (k + 1) + 7 % cables.len()])
                .collect();
            let cut = f.retain(|_| true, |l| !gone.contains(l));
            let back = adopt_tables(cut.clone(), &cfg, &tables)
                .unwrap_or_else(|e| panic!("{spec}, {k} cables: {e}"));
            assert_eq!(
                pairs(&back.fabric, back.fabric.links()),
                pairs(&f, f.links()),
                "{spec}, {k} cables"
            );
            assert_eq!(back.routing.lft, out.routing.lft, "{spec}, {k} cables");
            // The re-route from it is the one the master would have made: where that is
            // incremental, it moves only what crossed the cables (one lane on a torus has no
            // room for the detours: a full computation either way).
            let rc = RerouteConfig::default();
            let next = run_from(&cut, &cfg, Some(back.view()), &rc).unwrap();
            let master = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &out)), &rc).unwrap();
            let incremental = matches!(next.mode, RouteMode::Incremental(_));
            assert_eq!(
                incremental,
                matches!(master.mode, RouteMode::Incremental(_)),
                "{spec}, {k} cables"
            );
            assert!(incremental || lanes == 1, "{spec}, {k} cables");
            assert_eq!(next.routing.lft, master.routing.lft, "{spec}, {k} cables");
            let g = &next.graph;
            for s in 0..g.num_switches() as u32 {
                for d in g.dests() {
                    let (a, b) = (next.routing.layer(s, d.lid), master.routing.layer(s, d.lid));
                    assert_eq!(a, b, "{spec}, {k} cables: switch {s} LID {}", d.lid);
                }
            }
            let d = changes((&f, &out), (&cut, &next));
            let pairs_total = (f.endpoints().len() * (f.endpoints().len() - 1)) as f64;
            assert!(
                !incremental || (d.ca_pairs_sl_changed() as f64) < 0.02 * pairs_total,
                "{spec}, {k} cables: {d:?}"
            );
        }
    }
}

/// A routing read back and verified here (from the switches' tables, from a state file) carries
/// its verification as the summary a re-route starts from: on an unchanged fabric the re-route
/// keeps every path and verifies no LID again, and after a cable fails it routes exactly as a
/// re-route from the routing computed here does.
#[test]
fn a_routing_read_back_re_routes_from_its_verification() {
    for spec in ["ktree:4,3", "torus:3x3x3,1"] {
        let f = crate::topo::by_name(spec).unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.mcast_lane = McastLane::Always;
        let out = run(&f, &cfg).unwrap();
        let g = &out.graph;
        let tables = tables_of(&out);
        let adopted = adopt_tables(f.clone(), &cfg, &tables).unwrap();
        let bytes = crate::state::encode(prior_of(&f, &cfg, &out), 1, 1);
        let saved = crate::state::decode(&bytes, "test").unwrap().routed;
        let rc = RerouteConfig::default();
        let cut = first_cable_cut(&f);
        let from_here = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &out)), &rc).unwrap();
        for (how, back) in [("adopted", &adopted), ("state file", &saved)] {
            let summary = back.summary.as_ref().expect("a summary");
            assert_eq!(
                summary.loads,
                crate::balance::channel_loads(&back.graph, &back.routing.lft),
                "{spec} {how}"
            );
            let same = run_from(&f, &cfg, Some(back.view()), &rc).unwrap();
            assert!(
                matches!(same.mode, RouteMode::Incremental(_)),
                "{spec} {how}"
            );
            assert_eq!(same.routing.lft, back.routing.lft, "{spec} {how}");
            let v = same.verified.as_ref().unwrap();
            assert_eq!(v.dests_reused, g.dests().len() as u64, "{spec} {how}");
            let after = run_from(&cut, &cfg, Some(back.view()), &rc).unwrap();
            assert!(
                matches!(after.mode, RouteMode::Incremental(_)),
                "{spec} {how}"
            );
            assert_eq!(after.routing.lft, from_here.routing.lft, "{spec} {how}");
            assert_eq!(
                after.routing.layers, from_here.routing.layers,
                "{spec} {how}"
            );
        }
    }
}

/// A routing this SM kept (state file, earlier mastership) is continued at a takeover only when
/// the switches hold exactly its tables: every entry that differs, or a switch without a table,
/// is counted.
#[test]
fn a_kept_routing_agrees_with_the_switches_only_entry_for_entry() {
    let f = crate::topo::by_name("torus:3x3x3,1").unwrap();
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    let out = run(&f, &cfg).unwrap();
    let g = out.graph.clone();
    let routed = Routed::new(f.clone(), cfg.clone(), out);
    let tables: Vec<(u64, Vec<u8>)> = (0..g.num_switches() as u32)
        .map(|s| (g.switch_guid(s), routed.routing.lft.table(s).to_vec()))
        .collect();
    assert_eq!(disagreements(routed.view(), &tables), 0);
    // Another SM re-routed two LIDs on the first switch.
    let mut moved = tables.clone();
    for d in g.dests().iter().filter(|d| d.switch != 0).take(2) {
        let e = &mut moved[0].1[usize::from(d.lid)];
        *e = if *e == 1 { 2 } else { 1 };
    }
    assert_eq!(disagreements(routed.view(), &moved), 2);
    // A switch whose table was not read: all its destination entries.
    let short = &tables[1..];
    assert_eq!(disagreements(routed.view(), short), g.dests().len());
}

/// A CA joining a fat tree whose faults left its leaf's routes loaded (soak, issue 35: two
/// spines down, two CAs gone, one back): its leaf's paths weigh one source more, which took the
/// highest channel load past the re-balance threshold and used to trigger a full computation
/// (half the LFT blocks and every SL changed). Re-balancing in place routes again only the
/// paths over the overloaded channels: the load comes back under the threshold, SLs stay.
#[test]
fn a_ca_joining_after_faults_re_balances_in_place() {
    let f = crate::topo::by_name("ktree:4,3").unwrap();
    let without = |names: &[&str]| {
        let gone: Vec<u64> = (f.nodes().iter())
            .filter(|n| names.contains(&n.description.as_str()))
            .map(|n| n.guid)
            .collect();
        assert_eq!(gone.len(), names.len(), "{names:?}");
        f.retain(|n| !gone.contains(&n.guid), |_| true)
    };
    let steps = [
        without(&["ktree L3 S3"]),
        without(&["ktree L3 S3", "ktree L3 S13"]),
        without(&["ktree L3 S3", "ktree L3 S13", "H-33"]),
        without(&["ktree L3 S3", "ktree L3 S13", "H-33", "H-10"]),
        without(&["ktree L3 S3", "ktree L3 S13", "H-33"]),
    ];
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    let rc = RerouteConfig::default();
    let mut fabrics = vec![&f];
    let mut outs = vec![run(&f, &cfg).unwrap()];
    for step in &steps {
        let (pf, po) = (fabrics[fabrics.len() - 1], &outs[outs.len() - 1]);
        let out = run_from(step, &cfg, Some(prior_of(pf, &cfg, po)), &rc).unwrap();
        fabrics.push(step);
        outs.push(out);
    }
    let (last, before) = (&outs[outs.len() - 1], &outs[outs.len() - 2]);
    let RouteMode::Incremental(st) = &last.mode else {
        panic!("the join computed from scratch: {:?}", last.mode);
    };
    assert!(st.shed_channels > 0, "{}", st.summary());
    // Under the threshold again: 50% above a full computation's estimate.
    assert!(
        last.max_load * 100 <= last.full_max_load * u64::from(100 + rc.max_load_growth_pct),
        "{}",
        st.summary()
    );
    let moved = changes(
        (fabrics[fabrics.len() - 2], before),
        (fabrics[fabrics.len() - 1], last),
    );
    assert_eq!(moved.ca_pairs_sl_changed_path_kept, 0, "{moved:?}");
    let fresh = run(fabrics[fabrics.len() - 1], &cfg).unwrap();
    let lambda = |o: &EngineOutput| crate::metrics::judging_lambda(&o.graph, &o.routing.lft, 200);
    // (Measured: 0.7569 in place, 0.7746 before the join, 0.7731 from scratch.)
    let (now, full) = (lambda(last), lambda(&fresh));
    assert!(
        now >= 0.95 * full,
        "Λ {now:.4} in place, {full:.4} from scratch"
    );
    assert!(
        moved.ca_pairs_moved * 20 < moved.ca_pairs,
        "more than 5% of the CA pairs moved: {moved:?}"
    );
}

/// With `canonical_layers`, every re-route answers the layers a standby derives from its tables
/// (the same for every (switch, LID)), also where the re-route kept other ones: the second cut
/// on the 4x4x4 torus, after which dimension order no longer fits. Without it, the kept layers
/// differ there (so the test can fail).
#[test]
fn canonical_layers_are_what_the_tables_give_after_re_routes() {
    let f = crate::topo::by_name("torus:4x4x4,2").unwrap();
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    let cables: Vec<_> = f
        .links()
        .iter()
        .filter(|l| sw(l.a) && sw(l.b))
        .copied()
        .collect();
    let differing = |out: &EngineOutput, fabric: &Fabric| {
        let adopted = adopt_tables(fabric.clone(), &cfg, &tables_of(out)).unwrap();
        assert_eq!(adopted.routing.lft, out.routing.lft);
        assert_eq!(adopted.sl_offset, out.sl_offset);
        let g = &out.graph;
        (0..g.num_switches() as u32)
            .flat_map(|s| g.dests().iter().map(move |d| (s, d.lid)))
            .filter(|&(s, lid)| adopted.routing.layer(s, lid) != out.routing.layer(s, lid))
            .count()
    };
    for canonical in [false, true] {
        let rc = RerouteConfig {
            canonical_layers: canonical,
            ..Default::default()
        };
        let mut fabric = f.clone();
        let mut out = run_from(&fabric, &cfg, None, &rc).unwrap();
        let mut differ = vec![differing(&out, &fabric)];
        for k in 0..2 {
            let cable = cables[(k * 7919 + 13) % cables.len()];
            let cut = fabric.retain(|_| true, |l| *l != cable);
            let next = run_from(&cut, &cfg, Some(prior_of(&fabric, &cfg, &out)), &rc).unwrap();
            assert!(matches!(next.mode, RouteMode::Incremental(_)));
            assert!(next.verified.is_some());
            (fabric, out) = (cut, next);
            differ.push(differing(&out, &fabric));
        }
        if canonical {
            assert_eq!(differ, [0, 0, 0]);
            assert!(out.log.iter().any(|(_, l)| l.contains("SLs canonical")));
        } else {
            assert!(differ[2] > 0, "{differ:?}");
        }
    }
}

/// A fat tree with failed cables routes deadlock-free in one layer, spread over the lanes; one
/// cable more, and a re-routed path above the leaves fits no layer: the re-routed tables are
/// made deadlock-free in one layer again (the re-route stays incremental), every path keeps its
/// layer, and a standby reading the tables derives the same layers. Before, that cable meant a
/// full computation.
#[test]
fn a_faulty_fat_tree_re_routes_in_one_layer_where_a_path_fits_no_layer() {
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    let rc = RerouteConfig::default();
    let mut relayered = 0;
    for spec in ["ktree:6,3,cut=10", "ktree:8,3,cut=5"] {
        let f = crate::topo::by_name(spec).unwrap();
        let out = run(&f, &cfg).unwrap();
        let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
        let cables: Vec<_> = (f.links().iter())
            .filter(|l| sw(l.a) && sw(l.b))
            .copied()
            .collect();
        let mut here = 0;
        for &cable in cables.iter().step_by(7) {
            if here == 2 {
                break;
            }
            let cut = f.retain(|_| true, |l| *l != cable);
            let next = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &out)), &rc).unwrap();
            let RouteMode::Incremental(st) = &next.mode else {
                panic!("{spec}: computed from scratch: {:?}", next.mode);
            };
            if st.relayered.is_none() {
                continue;
            }
            (relayered, here) = (relayered + 1, here + 1);
            assert!(next.verified.is_some(), "{spec}");
            assert_eq!(st.layer_moves, 0, "{spec}: {}", st.summary());
            let from_out = |to: &EngineOutput| changes((&f, &out), (&cut, to));
            let (moved, full) = (from_out(&next), from_out(&run(&cut, &cfg).unwrap()));
            assert_eq!(moved.ca_pairs_sl_changed(), 0, "{spec}: {moved:?}");
            // (ktree:6,3,cut=10: 58 of 648 LFT blocks changed, a full computation 390.)
            assert!(
                moved.lft_blocks_changed * 3 < full.lft_blocks_changed,
                "{spec}: {moved:?} against a full computation's {full:?}"
            );
            let adopted = adopt_tables(cut.clone(), &cfg, &tables_of(&next)).unwrap();
            let g = &next.graph;
            for s in 0..g.num_switches() as u32 {
                for d in g.dests() {
                    assert_eq!(
                        adopted.routing.layer(s, d.lid),
                        next.routing.layer(s, d.lid),
                        "{spec}"
                    );
                }
            }
        }
    }
    assert!(relayered > 0, "no cable needed the one-layer re-route");
}

/// Fat trees re-routed incrementally after a cable fault: their layers cycle through routes
/// that carry no data (a switch above the leaves turns down, then up), which cycle breaking
/// alone cannot fit in the lanes. A standby reading the tables re-routes just those as deadlock
/// removal does (before: refused, computed from scratch): on the faulty tree they are made legal
/// Up*/Down* routes, on the pristine one routes to switch LIDs are re-chosen among minimal ones;
/// no CA pair's path moves, and those tables derive to the same layers again. A canonical
/// master re-routes them itself, so the standby then changes nothing.
#[test]
fn a_standby_re_routes_only_what_carries_no_data_where_a_fat_trees_re_route_left_cycles() {
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    for spec in ["ktree:6,3,cut=10", "ktree:8,3"] {
        let f = crate::topo::by_name(spec).unwrap();
        let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
        let cables: Vec<_> = (f.links().iter())
            .filter(|l| sw(l.a) && sw(l.b))
            .copied()
            .collect();
        // (The cable the takeover-sls bench cuts first.)
        let cut = f.retain(|_| true, |l| *l != cables[13 % cables.len()]);
        let same_layers = |a: &Routed, b: &Routing| {
            let g = &a.graph;
            (0..g.num_switches() as u32)
                .all(|s| (g.dests().iter()).all(|d| a.routing.layer(s, d.lid) == b.layer(s, d.lid)))
        };
        for canonical in [false, true] {
            let rc = RerouteConfig {
                canonical_layers: canonical,
                ..Default::default()
            };
            let out = run_from(&f, &cfg, None, &rc).unwrap();
            let next = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &out)), &rc).unwrap();
            assert!(matches!(next.mode, RouteMode::Incremental(_)), "{spec}");
            let tables = tables_of(&next);
            let adopted = adopt_tables(cut.clone(), &cfg, &tables).unwrap();
            let rerouted = disagreements(adopted.view(), &tables);
            let d = crate::reroute::diff(
                RoutedFabric {
                    fabric: &cut,
                    graph: &next.graph,
                    routing: &next.routing,
                },
                adopted.view().routed_fabric(),
            );
            assert_eq!(d.ca_pairs_moved, 0, "{spec} {canonical}: {d:?}");
            if canonical {
                let said = (next.log.iter()).any(|(_, l)| l.contains(NO_DATA_REROUTED));
                assert!(said, "{spec}: {:?}", next.log);
                assert!(next.verified.is_some());
                assert_eq!(rerouted, 0, "{spec}: the canonical master's tables changed");
                assert!(same_layers(&adopted, &next.routing), "{spec}: SLs differ");
            } else {
                assert!(
                    rerouted > 0,
                    "{spec}: the re-route left no cycle to re-route"
                );
                let again = switch_tables(&adopted.graph, &adopted.routing);
                let twice = adopt_tables(cut.clone(), &cfg, &again).unwrap();
                assert_eq!(disagreements(twice.view(), &again), 0, "{spec}");
                assert!(same_layers(&twice, &adopted.routing), "{spec}");
            }
        }
    }
}

/// A re-route where nothing changed that routing sees keeps the routing whole and takes its
/// verification over: the report and the summary are what a complete check of the routing
/// gives, exactly; any change (a cable) goes the incremental way.
#[test]
fn an_unchanged_fabric_keeps_the_routing_and_its_verification() {
    const NOTE: &str = "nothing changed that routing sees";
    for spec in [
        "ktree:4,3",
        "torus:4x4x4,2",
        "random:32,16,4,64,lmc=1",
        "ktree:6,3,cut=10",
    ] {
        let f = crate::topo::by_name(spec).unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.mcast_lane = McastLane::Always;
        let first = run(&f, &cfg).unwrap();
        let rc = RerouteConfig::default();
        let same = run_from(&f, &cfg, Some(prior_of(&f, &cfg, &first)), &rc).unwrap();
        assert!(matches!(same.mode, RouteMode::Incremental(_)), "{spec}");
        assert!(same.log.iter().any(|(_, l)| l.contains(NOTE)), "{spec}");
        assert_eq!(same.routing.lft, first.routing.lft, "{spec}");
        assert_eq!(same.routing.hops, first.routing.hops, "{spec}");
        assert_eq!(same.routing.layers, first.routing.layers, "{spec}");
        assert_eq!(same.sl_offset, first.sl_offset, "{spec}");
        let exact = verify::verify(&same.graph, &same.routing).unwrap();
        let v = same.verified.as_ref().unwrap();
        assert_eq!(v.paths, exact.paths, "{spec}");
        assert_eq!(v.paths_per_layer, exact.paths_per_layer, "{spec}");
        assert_eq!(v.cdg_edges_per_layer, exact.cdg_edges_per_layer, "{spec}");
        assert_eq!(v.unreachable, exact.unreachable, "{spec}");
        assert_eq!(same.summary.layer_edges, exact.layer_edges, "{spec}");
        assert_eq!(
            same.summary.loads,
            crate::balance::channel_loads(&same.graph, &same.routing.lft),
            "{spec}"
        );
        // Continued once more from the kept routing: the same again.
        let again = run_from(&f, &cfg, Some(prior_of(&f, &cfg, &same)), &rc).unwrap();
        assert_eq!(again.routing.lft, first.routing.lft, "{spec}");
        assert!(again.log.iter().any(|(_, l)| l.contains(NOTE)), "{spec}");

        let cut = first_cable_cut(&f);
        let after = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &first)), &rc).unwrap();
        assert!(!after.log.iter().any(|(_, l)| l.contains(NOTE)), "{spec}");
    }
}

/// A switch gone while no master ran (its cables, its CAs and its LIDs with it): the down ports
/// its neighbours' tables route over face no port that is down now, so no pairing into cables
/// explains them. The standby adopts the tables with a stand-in switch at those ports (with a CA
/// for each LID it delivered), and its re-route moves what the master's own re-route of that
/// fault moves: every route that entered the gone switch, and no other. Where the master keeps
/// canonical SLs and the routes come out the same, so do the layers. (One lane: the stand-in's
/// guessed routes have no room in the single layer: refused, computed from scratch.)
#[test]
fn a_standby_stands_in_for_a_switch_gone_before_the_takeover() {
    for (spec, lanes, canonical) in [
        ("ktree:4,3", 8, false),
        ("ktree:8,3", 8, false),
        // Ports, GUIDs and LIDs in random order: the stand-in's LID is then any of the gone
        // switch's, not necessarily its own.
        ("ktree:8,3,shuffle=1", 8, false),
        ("torus:4x4x4,2", 8, false),
        ("torus:4x4x4,2", 8, true),
        ("random:64,36,16,512,seed=1", 8, false),
        ("dragonfly:4,2,2,9", 8, true),
        ("torus:4x4x4,2", 1, false),
    ] {
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.lanes = lanes;
        let rc = RerouteConfig {
            canonical_layers: canonical,
            ..RerouteConfig::default()
        };
        let f = crate::topo::by_name(spec).unwrap();
        let out = run(&f, &cfg).unwrap();
        let tables = tables_of(&out);
        let g = &out.graph;
        // Each switch alone, and the middle one with a cable elsewhere (the stand-in takes the
        // cable's two ends too).
        let mid = g.num_switches() / 2;
        for (s, and_cable) in [
            (0, false),
            (mid, false),
            (g.num_switches() - 1, false),
            (mid, true),
        ] {
            let case = format!("{spec}, {lanes} lanes, switch {s} gone, a cable too: {and_cable}");
            let mut cut = f.without_switch(g.switch_guid(s as u32));
            if and_cable {
                let node = |guid: u64| cut.nodes().iter().position(|n| n.guid == guid);
                let far = (0..g.num_switches() as u32)
                    .map(|t| node(g.switch_guid(t)).unwrap() as u32)
                    .find(|&n| {
                        // A switch not next to the gone one.
                        cut.nodes()[n as usize].guid != g.switch_guid(s as u32)
                            && !(g.out_channels(s as u32)).any(|c| {
                                g.switch_guid(g.chan_head()[c as usize])
                                    == cut.nodes()[n as usize].guid
                            })
                            && g.switch_guid(s as u32) != cut.nodes()[n as usize].guid
                    })
                    .unwrap();
                let cable = *(cut.links().iter())
                    .find(|l| {
                        (l.a.node == far || l.b.node == far)
                            && cut.nodes()[l.a.node as usize].kind == NodeKind::Switch
                            && cut.nodes()[l.b.node as usize].kind == NodeKind::Switch
                    })
                    .unwrap();
                cut = cut.retain(|_| true, |l| *l != cable);
            }
            let back = match adopt_tables(cut.clone(), &cfg, &tables) {
                Err(AdoptError::NotLayerable(_)) if lanes == 1 => continue,
                other => other.unwrap_or_else(|e| panic!("{case}: {e}")),
            };
            // A stand-in, unless no route of a switch still there crossed the gone one (a spine
            // that only its own LID's routes led to): then the tables fit the fabric as it is.
            let stand_in = (back.fabric.nodes().iter()).any(|n| n.guid == STAND_IN_GUID);
            assert!(
                stand_in || back.fabric.links().len() == cut.links().len(),
                "{case}"
            );
            let next = run_from(&cut, &cfg, Some(back.view()), &rc).unwrap();
            let master = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &out)), &rc).unwrap();
            // Incremental where the master's own re-route is. (With a cable too, the master's
            // layers may leave the re-routed paths no room where the stand-in's derived ones do:
            // it computes in full and moves more.)
            let incremental = matches!(master.mode, RouteMode::Incremental(_));
            assert!(
                matches!(next.mode, RouteMode::Incremental(_)) || !incremental,
                "{case}"
            );
            assert!(incremental || and_cable, "{case}");
            let (dn, dm) = (
                changes((&f, &out), (&cut, &next)),
                changes((&f, &out), (&cut, &master)),
            );
            assert!(
                dn.paths_moved <= dm.paths_moved + dn.paths / 100
                    && dn.ca_pairs_moved <= dm.ca_pairs_moved + dn.ca_pairs / 100,
                "{case}: the standby moved {dn:?}, the master {dm:?}"
            );
            eprintln!(
                "{case}: paths moved {} (master {}), CA pairs {} ({})",
                dn.paths_moved, dm.paths_moved, dn.ca_pairs_moved, dm.ca_pairs_moved
            );
            let gn = &next.graph;
            let same_routes = next.routing.lft == master.routing.lft;
            for t in 0..gn.num_switches() as u32 {
                for d in gn.dests().iter().filter(|_| canonical && same_routes) {
                    assert_eq!(
                        next.routing.layer(t, d.lid),
                        master.routing.layer(t, d.lid),
                        "{case}: switch {t} LID {}",
                        d.lid
                    );
                }
            }
        }
    }
}

/// Tables that loop besides routing over a switch that is gone: the stand-in's walks see the
/// loop once (each switch walked once per LID) and the adoption is refused, not hung.
#[test]
fn a_stand_in_refuses_tables_that_loop() {
    let cfg = EngineConfig::new(EngineKind::Dfsssp);
    let f = crate::topo::by_name("ktree:4,3").unwrap();
    let out = run(&f, &cfg).unwrap();
    let g = &out.graph;
    let mut tables = tables_of(&out);
    // Two neighbours send a LID of a third switch to each other.
    let c = g.out_channels(0).start;
    let h = g.chan_head()[c as usize];
    let far = g
        .dests()
        .iter()
        .find(|d| d.switch != 0 && d.switch != h && d.exit_port != 0)
        .unwrap();
    tables[0].1[usize::from(far.lid)] = g.chan_port()[c as usize];
    tables[h as usize].1[usize::from(far.lid)] = g.chan_head_port()[c as usize];
    let gone = g.switch_guid(g.num_switches() as u32 - 1);
    let cut = f.without_switch(gone);
    assert!(matches!(
        adopt_tables(cut, &cfg, &tables),
        Err(AdoptError::Incomplete(_))
    ));
}

/// Tables whose routes need the Up*/Down* escape (a faulty torus, a faulty Kautz graph: cycle
/// breaking needs more than the lanes) are refused before the escape runs, which would move
/// data routes; the standby then computes from scratch, and on an unchanged fabric that is the
/// master's own routing: the same tables and the same layers.
#[test]
fn escape_tables_are_refused_and_routed_again_as_the_master_routed_them() {
    for spec in ["torus:4x4x4,2,cut=5", "kautz:3,5,4,cut=5"] {
        let f = crate::topo::by_name(spec).unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.mcast_lane = McastLane::PLUGIN_DEFAULT;
        let out = run(&f, &cfg).unwrap();
        let report = out.layer_report.as_ref().unwrap();
        assert!(
            report.escape_layer.is_some(),
            "{spec}: routed without the escape"
        );
        match adopt_tables(f.clone(), &cfg, &tables_of(&out)) {
            Err(AdoptError::NotLayerable(why)) => {
                assert!(why.contains("more than 7 layer(s)"), "{spec}: {why}")
            }
            other => panic!("{spec}: {:?}", other.map(|_| ())),
        }
        let again = run(&f, &cfg).unwrap();
        assert_eq!(again.routing.lft, out.routing.lft, "{spec}");
        assert_eq!(again.routing.layers, out.routing.layers, "{spec}");
        assert_eq!(again.sl_offset, out.sl_offset, "{spec}");
    }
}

/// A cable fails while no master runs, on a fabric whose routes need the Up*/Down* escape (no
/// derivation reproduces their layers): the tables are the master's computation from scratch
/// of the fabric with that cable, so the standby takes that computation as the routing they
/// hold, and its re-route moves what the master's own re-route of the fault moves, nothing more.
/// (Before, it computed from scratch: most LFT entries and SLs changed.)
#[test]
fn escape_tables_with_a_cable_gone_are_recomputed_and_re_routed() {
    for spec in ["torus:4x4x4,2,cut=5", "kautz:3,5,4,cut=5"] {
        let f = crate::topo::by_name(spec).unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.mcast_lane = McastLane::PLUGIN_DEFAULT;
        let rc = RerouteConfig::default();
        let out = run_from(&f, &cfg, None, &rc).unwrap();
        let tables = tables_of(&out);
        let cut = first_cable_cut(&f);
        let (back, from) = adopt_tables_how(cut.clone(), &cfg, &tables).unwrap();
        assert_eq!(from, LayersFrom::Recomputed, "{spec}");
        assert!(back.routing.lft == out.routing.lft, "{spec}");
        assert!(back.routing.layers == out.routing.layers, "{spec}");
        let next = run_from(&cut, &cfg, Some(back.view()), &rc).unwrap();
        let master = run_from(&cut, &cfg, Some(prior_of(&f, &cfg, &out)), &rc).unwrap();
        assert!(next.routing.lft == master.routing.lft, "{spec}");
        assert!(next.routing.layers == master.routing.layers, "{spec}");
        let d = changes((&f, &out), (&cut, &next));
        let fresh = run(&cut, &cfg).unwrap();
        let d_fresh = changes((&f, &out), (&cut, &fresh));
        assert!(
            d.ca_pairs_moved < d_fresh.ca_pairs_moved,
            "{spec}: {} against {}",
            d.summary(),
            d_fresh.summary()
        );
        println!(
            "{spec}: re-routed from the recomputed tables: {}; from scratch: {}",
            d.summary(),
            d_fresh.summary()
        );
        // Tables that are not the computation from scratch (changed in one entry) are refused.
        let mut other = tables.clone();
        let (s, d) = (0, out.graph.dests().iter().find(|d| d.switch != 0).unwrap());
        let row = &mut other[s].1;
        let port = row[usize::from(d.lid)];
        let alt = (out.graph.out_channels(s as u32))
            .map(|c| out.graph.chan_port()[c as usize])
            .find(|&p| p != port)
            .unwrap();
        row[usize::from(d.lid)] = alt;
        assert!(
            matches!(
                adopt_tables_how(cut.clone(), &cfg, &other),
                Err(AdoptError::NotLayerable(_) | AdoptError::Incomplete(_))
            ),
            "{spec}"
        );
    }
}

/// Nodes that join while no master runs (a CA whose port comes up, a switch back with its CAs)
/// have LIDs no table routes: the tables are the routing of the fabric without them, adopted as
/// such, and the re-route adds them as the master's own re-route of the join would: the same
/// tables and layers, nothing computed from scratch. (Before, the tables were refused as
/// incomplete and the standby computed from scratch.)
#[test]
fn nodes_joining_before_the_takeover_are_added_by_the_re_route() {
    for (spec, switch) in [
        ("torus:4x4x4,2", false),
        ("ktree:4,3", true),
        ("ktree:4,3", false),
    ] {
        let f = crate::topo::by_name(spec).unwrap();
        let before = if switch {
            // A leaf switch (with its CAs) that was down while the master computed.
            let leaf = f.links().iter().find_map(|l| {
                let (a, b) = (&f.nodes()[l.a.node as usize], &f.nodes()[l.b.node as usize]);
                match (a.kind, b.kind) {
                    (NodeKind::Ca, NodeKind::Switch) => Some(b.guid),
                    (NodeKind::Switch, NodeKind::Ca) => Some(a.guid),
                    _ => None,
                }
            });
            f.without_switch(leaf.unwrap())
        } else {
            let ca = f
                .nodes()
                .iter()
                .rev()
                .find(|n| n.kind == NodeKind::Ca)
                .unwrap()
                .guid;
            f.retain(|n| n.guid != ca, |_| true)
        };
        let case = format!("{spec}, a {} joining", if switch { "switch" } else { "CA" });
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.mcast_lane = McastLane::PLUGIN_DEFAULT;
        let rc = RerouteConfig::default();
        let out = run_from(&before, &cfg, None, &rc).unwrap();
        let back = adopt_tables(f.clone(), &cfg, &tables_of(&out)).unwrap();
        assert_eq!(back.fabric.nodes().len(), before.nodes().len(), "{case}");
        assert!(back.routing.lft == out.routing.lft, "{case}");
        let next = run_from(&f, &cfg, Some(back.view()), &rc).unwrap();
        let master = run_from(&f, &cfg, Some(prior_of(&before, &cfg, &out)), &rc).unwrap();
        assert!(next.routing.lft == master.routing.lft, "{case}");
        assert!(next.routing.layers == master.routing.layers, "{case}");
        assert_eq!(
            matches!(next.mode, RouteMode::Incremental(_)),
            matches!(master.mode, RouteMode::Incremental(_)),
            "{case}"
        );
        println!(
            "{case}: {:?}, {}",
            next.mode,
            changes((&before, &out), (&f, &next)).summary()
        );
    }
}
