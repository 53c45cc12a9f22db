//! Measurement runs that print numbers rather than assert them (they used to be `#[ignore]`d
//! tests). `cargo bench --bench measure` runs both; `-- dfsssp` or `-- multipath` picks one.
//! - dfsssp: routing, deadlock removal and verification per fabric and lane budget, with the
//!   engine's report (DFSSSP_SPECS=spec;spec..., DFSSSP_BUDGETS=8,1, DFSSSP_LAMBDA=1 adds Λ);
//! - multipath: Λ of LMC multipath vs per-LID SSSP trees, sources spread over LIDs and to base
//!   LIDs, with the LIDs the multipath packing needed and used;
//! - takeover-sls: how far a standby without shared storage, deriving SLs from the switches'
//!   tables by the canonical rule (`engine::adopt_tables`), agrees with a master that re-routed
//!   incrementally after cables failed one by one (TAKEOVER_SPECS=spec;spec..., TAKEOVER_CUTS=3),
//!   and how many SLs the master itself would change per fault if it followed the canonical
//!   rule instead of keeping unchanged paths' SLs.
//!
//! - adopt: the routing phase a standby adds when it takes over from the switches' tables
//!   (`engine::adopt_tables`: routes from the tables, their layers derived and verified) beside
//!   an incremental re-route after one cable fails, medians of ADOPT_RUNS=5
//!   (ADOPT_SPECS=spec;spec...; ADOPT_LOG=1 prints the re-route's log). Where the tables are
//!   refused (their routes need the Up*/Down* escape), what the standby computes from scratch
//!   against the master's, and the takeover with a cable failed before it (the fabric with the
//!   cable computed from scratch and compared with the tables, then the re-route).
//!
//! - stand-in: a standby whose tables route over a switch that failed while no master ran
//!   (`engine::adopt_tables` with a stand-in switch), a leaf, a middle and the last switch in
//!   turn: its adoption beside adopting the same tables unchanged, its re-route beside the
//!   master's own re-route of that fault, and whether their tables agree
//!   (STANDIN_SPECS=spec;spec..., default ktree:18,3).
//!
//! - small: the engine's whole run (routing, deadlock removal, verification; no metrics) on the
//!   families' small fabrics, QoS on and off, medians of SMALL_RUNS=50 in one process
//!   (SMALL_SPECS=spec;spec...): where the routing itself takes well under a millisecond, what
//!   the engine costs around it (threads, hand-overs to rayon's pool) shows here.
//!
//! Timings are wall clock of one run: quote them with `uptime`'s load; `benches/core.rs` has the
//! criterion medians.

use std::time::Instant;

use dfsssp_rs::dfsssp::{make_deadlock_free_with, DfssspOptions};
use dfsssp_rs::engine::{self, EngineConfig, EngineKind, McastLane, RerouteConfig, Routed};
use dfsssp_rs::fabric::NodeKind;
use dfsssp_rs::graph::{SwitchDistances, SwitchGraph};
use dfsssp_rs::lid::multipath::{self, MultipathOptions};
use dfsssp_rs::metrics::{self, BisectionSpec, LidChoice, MetricsOptions};
use dfsssp_rs::reroute::{self, RoutedFabric};
use dfsssp_rs::routing::Routing;
use dfsssp_rs::{sssp, topo, verify};

fn main() {
    // cargo bench passes `--bench` and an optional filter.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if wanted("dfsssp") {
        dfsssp();
    }
    if wanted("multipath") {
        multipath_vs_sssp();
    }
    if wanted("takeover-sls") {
        takeover_sls();
    }
    if wanted("adopt") {
        adopt();
    }
    if wanted("stand-in") {
        stand_in();
    }
    if wanted("small") {
        small_fabrics();
    }
}

fn small_fabrics() {
    let specs = std::env::var("SMALL_SPECS").unwrap_or_else(|_| {
        "rail:2,4,2,8;dragonfly:4,2,2,9;torus:4x4x4,2;director:16,9,2,16-18,shuffle=1;\
         fattree2:36,2:1,bundle=2,uneven=14,shuffle=1;fattree2:36,2:1;torus:4x4x4,2,cut=5"
            .into()
    });
    let runs: usize = std::env::var("SMALL_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
        .max(1);
    println!("small: the engine's run, median of {runs} [ms] (QoS on / QoS off)");
    for spec in specs.split(';') {
        let f = topo::by_name(spec).expect("fabric spec");
        let mut line = format!("{spec:<50}");
        for qos in [true, false] {
            let mut cfg = plugin_config();
            cfg.qos = qos;
            cfg.defer_metrics = true;
            let times = (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    let out = engine::run(&f, &cfg).expect("routed");
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    drop(out);
                    ms
                })
                .collect();
            line += &format!(" {:8.3}", median(times));
        }
        println!("{line}");
    }
}

fn dfsssp() {
    let specs = std::env::var("DFSSSP_SPECS")
        .unwrap_or_else(|_| "ktree:18,3;torus:6x6x6,4;random:128,32,16,300;fattree2:36".into());
    let budgets: Vec<u8> = std::env::var("DFSSSP_BUDGETS")
        .unwrap_or_else(|_| "8,1".into())
        .split(',')
        .map(|b| b.parse().expect("DFSSSP_BUDGETS: numbers"))
        .collect();
    for spec in specs.split(';') {
        let f = topo::by_name(spec).expect("fabric spec");
        let g = SwitchGraph::new(&f).expect("switch graph");
        let t = Instant::now();
        let dist = SwitchDistances::new(&g);
        let orig = sssp::route_with_distances(&g, &dist);
        let t_sssp = t.elapsed().as_secs_f64();
        for &budget in &budgets {
            let mut r = orig.clone();
            let t = Instant::now();
            let rep =
                make_deadlock_free_with(&g, &mut r, budget, &DfssspOptions::default(), Some(&dist))
                    .expect("deadlock removal");
            let t_df = t.elapsed().as_secs_f64();
            println!(
                "{spec}: {} switches, {} LIDs, {} channels; sssp {t_sssp:.3} s; budget {budget}: dfsssp {t_df:.3} s",
                g.num_switches(),
                g.dests().len(),
                g.num_channels(),
            );
            for l in rep.log_lines() {
                println!("    {l}");
            }
            let t = Instant::now();
            let v = verify::verify(&g, &r).expect("verified");
            println!(
                "    verify {:.3} s: {}",
                t.elapsed().as_secs_f64(),
                v.summary()
            );
            if std::env::var("DFSSSP_LAMBDA").is_ok() {
                let lam = |r: &Routing| {
                    metrics::effective_bisection_bandwidth(&g, &r.lft, &BisectionSpec::new(200, 1))
                        .expect("Λ")
                        .lambda
                };
                println!("    lambda: sssp {:.4}, dfsssp {:.4}", lam(&orig), lam(&r));
            }
        }
    }
}

fn multipath_vs_sssp() {
    for spec in [
        "fattree2:8,lmc=2",
        "fattree2:16,lmc=2",
        "fattree2:16,3:1,lmc=2",
        "torus:4x4,2,lmc=2",
        "mesh:4x4,2,lmc=2",
        "random:32,16,4,80,seed=1,lmc=2",
    ] {
        let g = SwitchGraph::new(&topo::by_name(spec).expect("fabric spec")).expect("graph");
        let (mp, st) = multipath::route(&g, &MultipathOptions::default()).expect("multipath");
        let unbalanced = MultipathOptions {
            balance_base: false,
            ..Default::default()
        };
        let (mp_unb, _) = multipath::route(&g, &unbalanced).expect("multipath");
        let plain = sssp::route(&g);
        let by_source = MetricsOptions {
            patterns: 1000,
            seed: 1,
            lid_choice: LidChoice::BySource,
            ..Default::default()
        };
        let base = MetricsOptions {
            lid_choice: LidChoice::Base,
            ..by_source.clone()
        };
        let m = |r: &Routing, o: &MetricsOptions| metrics::compute(&g, r, o).expect("metrics");
        let (a, b) = (m(&mp, &by_source), m(&plain, &by_source));
        let lam = |x: &metrics::Metrics| x.bisection.as_ref().map_or(0.0, |b| b.lambda);
        println!(
            "{spec}: Λ BySource multipath {:.4} (unbalanced base {:.4}) sssp {:.4} | Λ Base multipath {:.4} (unbalanced base {:.4}) sssp {:.4} | EFI multipath {} sssp {} | needed {} used {} merged {}",
            lam(&a),
            lam(&m(&mp_unb, &by_source)),
            lam(&b),
            lam(&m(&mp, &base)),
            lam(&m(&mp_unb, &base)),
            lam(&m(&plain, &base)),
            a.efi.max,
            b.efi.max,
            st.ports.iter().map(|p| p.needed).sum::<u32>(),
            st.ports.iter().map(|p| p.used).sum::<u32>(),
            st.merged_ports()
        );
    }
}

/// `r` as the routing comparison takes it.
fn routed_fabric(r: &Routed) -> RoutedFabric<'_> {
    RoutedFabric {
        fabric: &r.fabric,
        graph: &r.graph,
        routing: &r.routing,
    }
}

/// The share of CA pairs whose SL differs from `a` to `b` (the plug-in's measure of churn,
/// `reroute::diff`), in percent. Both leave the same lane to multicast: layers compare as SLs.
fn sl_changed_pct(a: &Routed, b: &Routed) -> f64 {
    assert_eq!(a.sl_offset, b.sl_offset, "SL offsets differ");
    let d = reroute::diff(routed_fabric(a), routed_fabric(b));
    100.0 * d.ca_pairs_sl_changed() as f64 / d.ca_pairs.max(1) as f64
}

fn takeover_sls() {
    let specs = std::env::var("TAKEOVER_SPECS").unwrap_or_else(|_| {
        "ktree:4,3;ktree:8,3;torus:4x4x4,2;torus:6x6x6,4;dragonfly:4,2,2,9;random:64,36,16,512,seed=1;\
         ktree:6,3,cut=10;ktree:8,3,cut=5"
            .into()
    });
    let cuts: usize =
        std::env::var("TAKEOVER_CUTS").map_or(3, |c| c.parse().expect("TAKEOVER_CUTS: a number"));
    let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
    cfg.mcast_lane = McastLane::PLUGIN_DEFAULT;
    for (rc, master_is) in [
        (RerouteConfig::default(), "keeping unmoved paths' SLs"),
        (
            RerouteConfig {
                canonical_layers: true,
                ..Default::default()
            },
            "canonical (canonical_sls 1)",
        ),
    ] {
        println!("the master {master_is}:");
        takeover_sls_of(&specs, cuts, &cfg, &rc);
    }
}

fn takeover_sls_of(specs: &str, cuts: usize, cfg: &EngineConfig, rc: &RerouteConfig) {
    let cfg = cfg.clone();
    for spec in specs.split(';') {
        let f = topo::by_name(spec).expect("fabric spec");
        let cables = switch_cables(&f);
        let out = engine::run_from(&f, &cfg, None, rc).expect("routing");
        let mut master = Routed::new(f.clone(), cfg.clone(), out);
        let mut fabric = f.clone();
        for k in 0..cuts {
            // Cables spread over the fabric, the same every run.
            let cable = cables[(k * 7919 + 13) % cables.len()];
            fabric = fabric.retain(|_| true, |l| *l != cable);
            let out = engine::run_from(&fabric, &cfg, Some(master.view()), rc).expect("re-route");
            let after = Routed::new(fabric.clone(), cfg.clone(), out);
            let g = &after.graph;
            let tables: Vec<(u64, Vec<u8>)> = (0..g.num_switches() as u32)
                .map(|s| (g.switch_guid(s), after.routing.lft.table(s).to_vec()))
                .collect();
            let kept = sl_changed_pct(&master, &after);
            let line = match engine::adopt_tables(fabric.clone(), &cfg, &tables) {
                Err(e) => format!("standby computes from scratch ({e})"),
                Ok(standby) => format!(
                    "a standby's canonical SLs differ on {:.2}% of them{}; a canonical master \
                     would have changed {:.2}% at this fault",
                    sl_changed_pct(&after, &standby),
                    match engine::disagreements(standby.view(), &tables) {
                        0 => String::new(),
                        n => format!(" ({n} LFT entries that carry no data re-routed)"),
                    },
                    sl_changed_pct(&master, &standby),
                ),
            };
            println!(
                "{spec}, cable {} of {cuts} failed: the master's re-route changed {kept:.2}% of the \
                 CA pairs' SLs; {line}",
                k + 1
            );
            master = after;
        }
    }
}

/// The fabric's cables between two switches, in its link order.
fn switch_cables(f: &dfsssp_rs::fabric::Fabric) -> Vec<dfsssp_rs::fabric::Link> {
    let sw = |p: dfsssp_rs::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    (f.links().iter())
        .filter(|l| sw(l.a) && sw(l.b))
        .copied()
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// dfsssp-rs as the plug-in runs it by default.
fn plugin_config() -> EngineConfig {
    let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
    cfg.mcast_lane = McastLane::PLUGIN_DEFAULT;
    cfg
}

/// `spec`'s fabric, a master's routing of it, and the switches' tables as a standby reads them
/// back.
fn master_tables(
    spec: &str,
    cfg: &EngineConfig,
    rc: &RerouteConfig,
) -> (dfsssp_rs::fabric::Fabric, Routed, Vec<(u64, Vec<u8>)>) {
    let f = topo::by_name(spec).expect("fabric spec");
    let out = engine::run_from(&f, cfg, None, rc).expect("routing");
    let master = Routed::new(f.clone(), cfg.clone(), out);
    let g = &master.graph;
    let tables = (0..g.num_switches() as u32)
        .map(|s| (g.switch_guid(s), master.routing.lft.table(s).to_vec()))
        .collect();
    (f, master, tables)
}

fn adopt() {
    let specs = std::env::var("ADOPT_SPECS").unwrap_or_else(|_| {
        "ktree:18,3;torus:6x6x6,4;dragonfly:4,2,2,9;random:64,36,16,512,seed=1".into()
    });
    let runs: usize =
        std::env::var("ADOPT_RUNS").map_or(5, |c| c.parse().expect("ADOPT_RUNS: a number"));
    let (cfg, rc) = (plugin_config(), RerouteConfig::default());
    for spec in specs.split(';') {
        let (f, master, tables) = master_tables(spec, &cfg, &rc);
        let g = &master.graph;
        let mut adopted = None;
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            let r = engine::adopt_tables(f.clone(), &cfg, &tables);
            times.push(t.elapsed().as_secs_f64());
            adopted = Some(r);
        }
        let t_adopt = median(times);
        let adopted = match adopted.expect("runs >= 1") {
            Ok(a) => a,
            Err(e) => {
                // What the standby then routes: on an unchanged fabric a computation from
                // scratch is the master's own, unless a candidate stopped at its time budget.
                let t = Instant::now();
                let out = engine::run_from(&f, &cfg, None, &rc).expect("routing");
                let t_fresh = t.elapsed().as_secs_f64();
                let fresh = Routed::new(f.clone(), cfg.clone(), out);
                println!(
                    "{spec}: a standby computes from scratch after {t_adopt:.3} s ({e}): in \
                     {t_fresh:.3} s, {} entries differ from the master's, SLs {:.2}% changed",
                    engine::disagreements(fresh.view(), &tables),
                    sl_changed_pct(&master, &fresh),
                );
                // A cable failed before the takeover: the fabric with it computed from scratch
                // and compared with the tables (`engine::adopt::recomputed`), then the re-route.
                let cable = *switch_cables(&f).get(13).expect("a switch-to-switch cable");
                let cut = f.retain(|_| true, |l| *l != cable);
                let t = Instant::now();
                match engine::adopt_tables_how(cut.clone(), &cfg, &tables) {
                    Ok((adopted, from)) => {
                        let t_adopt = t.elapsed().as_secs_f64();
                        let t = Instant::now();
                        let out = engine::run_from(&cut, &cfg, Some(adopted.view()), &rc)
                            .expect("re-route");
                        let t_reroute = t.elapsed().as_secs_f64();
                        let after = Routed::new(cut.clone(), cfg.clone(), out);
                        let d = reroute::diff(routed_fabric(&master), routed_fabric(&after));
                        println!(
                            "  with a cable failed before the takeover: adopted ({from:?}) in \
                             {t_adopt:.3} s, re-routed in {t_reroute:.3} s: {}",
                            d.summary()
                        );
                    }
                    Err(e) => println!(
                        "  with a cable failed before the takeover: refused after {:.3} s ({e})",
                        t.elapsed().as_secs_f64()
                    ),
                }
                continue;
            }
        };
        let differ = engine::disagreements(adopted.view(), &tables);
        let cable = *switch_cables(&f).get(13).expect("a switch-to-switch cable");
        let cut = f.retain(|_| true, |l| *l != cable);
        let show_log = std::env::var_os("ADOPT_LOG").is_some();
        let t_reroute = median(
            (0..runs)
                .map(|i| {
                    let t = Instant::now();
                    let out =
                        engine::run_from(&cut, &cfg, Some(adopted.view()), &rc).expect("re-route");
                    let took = t.elapsed().as_secs_f64();
                    if show_log && i == 0 {
                        for (_, line) in &out.log {
                            println!("  re-route: {line}");
                        }
                        let after = Routed::new(cut.clone(), cfg.clone(), out);
                        let d = reroute::diff(routed_fabric(&adopted), routed_fabric(&after));
                        println!("  re-route changed: {}", d.summary());
                    }
                    took
                })
                .collect(),
        );
        if show_log {
            // The master's own re-route of the same fault, from the routing it computed.
            let t = Instant::now();
            let out = engine::run_from(&cut, &cfg, Some(master.view()), &rc).expect("re-route");
            println!(
                "  the master's re-route took {:.3} s",
                t.elapsed().as_secs_f64()
            );
            let how = out.log.iter().map(|(_, l)| l.as_str());
            let how = how.filter(|l| l.contains("incremental") || l.contains("full computation"));
            for line in how {
                println!("  the master's re-route: {line}");
            }
            let after = Routed::new(cut.clone(), cfg.clone(), out);
            let d = reroute::diff(routed_fabric(&master), routed_fabric(&after));
            println!("  the master's re-route changed: {}", d.summary());
        }
        println!(
            "{spec}: {} switches, {} LIDs: adopting the tables {t_adopt:.3} s ({differ} entries \
             differ, SLs {:.2}% changed, {} layer(s) against the master's {}); a re-route after \
             one cable fails {t_reroute:.3} s; ratio {:.2}",
            g.num_switches(),
            g.dests().len(),
            sl_changed_pct(&master, &adopted),
            adopted.routing.num_layers,
            master.routing.num_layers,
            t_adopt / t_reroute,
        );
    }
}

fn stand_in() {
    let specs = std::env::var("STANDIN_SPECS").unwrap_or_else(|_| "ktree:18,3".into());
    let (cfg, rc) = (plugin_config(), RerouteConfig::default());
    for spec in specs.split(';') {
        let (f, master, tables) = master_tables(spec, &cfg, &rc);
        let g = &master.graph;
        let t = Instant::now();
        let unchanged = engine::adopt_tables(f.clone(), &cfg, &tables).map(|_| ());
        let t_unchanged = t.elapsed().as_secs_f64();
        for s in [0, g.num_switches() / 2, g.num_switches() - 1] {
            let gone = g.switch_guid(s as u32);
            // What OpenSM still finds: the switch and the CAs it alone linked are gone.
            let cut = f.without_switch(gone);
            let t = Instant::now();
            let adopted = engine::adopt_tables(cut.clone(), &cfg, &tables);
            let t_adopt = t.elapsed().as_secs_f64();
            let adopted = match adopted {
                Ok(a) => a,
                Err(e) => {
                    println!("{spec}, switch {s} gone: not adopted after {t_adopt:.3} s ({e})");
                    continue;
                }
            };
            let t = Instant::now();
            let next = engine::run_from(&cut, &cfg, Some(adopted.view()), &rc).expect("re-route");
            let t_next = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let own = engine::run_from(&cut, &cfg, Some(master.view()), &rc).expect("re-route");
            let t_own = t.elapsed().as_secs_f64();
            let mode = |o: &engine::EngineOutput| match o.mode {
                engine::RouteMode::Incremental(_) => "incremental",
                _ => "full",
            };
            println!(
                "{spec}, switch {s} gone ({} CA(s) with it): adopted with a stand-in in {t_adopt:.3} \
                 s (the same tables unchanged: {t_unchanged:.3} s, {}); re-routed ({}) in \
                 {t_next:.3} s, the master's own re-route ({}) {t_own:.3} s; the same LFTs: {}",
                f.endpoints().len() - cut.endpoints().len() - 1,
                if unchanged.is_ok() { "adopted" } else { "refused" },
                mode(&next),
                mode(&own),
                next.routing.lft == own.routing.lft
            );
        }
    }
}
