//! Criterion benches of the routing core on generated fabrics of about 1k, 6k and 12k CAs:
//! SSSP routing, all-pairs switch distances, deadlock removal (CDG construction and cycle breaking), verification and the
//! effective bisection bandwidth; deadlock removal also on random fabrics of 2.5k and 5k CAs.
//! `cargo bench --bench core`; `-- sssp/` etc. to pick one group.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::graph::{SwitchDistances, SwitchGraph};
use dfsssp_rs::metrics::{self, BisectionSpec};
use dfsssp_rs::{dfsssp, sssp, topo, verify};

/// (label, spec): fat trees at ~1k, ~6k, ~12k CAs, and a torus that needs several layers.
const FABRICS: &[(&str, &str)] = &[
    ("ktree-10-3 (1000 CAs)", "ktree:10,3"),
    ("ktree-18-3 (5832 CAs)", "ktree:18,3"),
    ("fattree3-36 (11664 CAs)", "fattree3:36"),
    ("torus-6x6x6 (864 CAs)", "torus:6x6x6,4"),
];

fn fabrics() -> Vec<(&'static str, Fabric, SwitchGraph)> {
    FABRICS
        .iter()
        .map(|&(label, spec)| {
            let f = topo::by_name(spec).expect("bench fabric spec");
            let g = SwitchGraph::new(&f).expect("bench fabric graph");
            (label, f, g)
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let all = fabrics();
    let mut group = c.benchmark_group("sssp");
    group.sample_size(10);
    for (label, _, g) in &all {
        group.bench_with_input(BenchmarkId::from_parameter(label), g, |b, g| {
            b.iter(|| sssp::route(g))
        });
    }
    group.finish();

    // All-pairs switch distances (SSSP's and the escape's input), 64 BFS fronts per sweep.
    let mut group = c.benchmark_group("switch-distances");
    group.sample_size(10);
    for (label, _, g) in &all {
        group.bench_with_input(BenchmarkId::from_parameter(label), g, |b, g| {
            b.iter(|| SwitchDistances::new(g))
        });
    }
    group.finish();

    // Deadlock removal (CDG construction, cycle breaking, escape when needed) with 8 lanes and
    // with 1 (OpenSM without QoS), from the same SSSP routes each iteration. With one lane the
    // three-level fat trees route their switch LIDs straight onto Up*/Down* (issue 16).
    for budget in [8u8, 1] {
        let mut group = c.benchmark_group(format!("dfsssp-{budget}-lanes"));
        group.sample_size(10);
        for (label, _, g) in &all {
            let r = sssp::route(g);
            group.bench_with_input(BenchmarkId::from_parameter(label), g, |b, g| {
                b.iter_batched(
                    || r.clone(),
                    |mut r| {
                        dfsssp::make_deadlock_free(g, &mut r, budget).map(|rep| rep.layers_used)
                    },
                    criterion::BatchSize::LargeInput,
                )
            });
        }
        group.finish();
    }

    // Random irregular fabrics (36-port switches, 16 CAs each), where pure DFSSSP needs more
    // than 8 layers and the escape settles most destinations with incremental cycle checks
    // (their span limit, issue 16): the part that grew fastest with size.
    let mut group = c.benchmark_group("dfsssp-8-lanes-random");
    group.sample_size(10);
    for (label, spec) in [
        ("random-160 (2560 CAs)", "random:160,36,16,1280"),
        ("random-320 (5120 CAs)", "random:320,36,16,2560"),
    ] {
        let f = topo::by_name(spec).expect("bench fabric spec");
        let g = SwitchGraph::new(&f).expect("bench fabric graph");
        let r = sssp::route(&g);
        group.bench_with_input(BenchmarkId::from_parameter(label), &g, |b, g| {
            b.iter_batched(
                || r.clone(),
                |mut r| dfsssp::make_deadlock_free(g, &mut r, 8).map(|rep| rep.layers_used),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();

    // One lane on fabrics whose SSSP routes do not fit it: the balanced search within one
    // channel order (`one_lane`, the default) against the Up*/Down* escape it replaced.
    let mut group = c.benchmark_group("dfsssp-1-lane-search");
    group.sample_size(10);
    for (label, spec) in [
        ("torus-6x6x6 (864 CAs)", "torus:6x6x6,4"),
        ("random-128 (2048 CAs)", "random:128,32,16,300,seed=1"),
        ("random-320 (5120 CAs)", "random:320,36,16,2560"),
        // A 3-level fat tree with failed cables: its data routes fit one lane under a fitted
        // Up*/Down* order, the rest become legal Up*/Down* routes without a search.
        ("ktree-12-3-cut5 (1728 CAs)", "ktree:12,3,cut=5"),
    ] {
        let f = topo::by_name(spec).expect("bench fabric spec");
        let g = SwitchGraph::new(&f).expect("bench fabric graph");
        let r = sssp::route(&g);
        for one_lane in [true, false] {
            let opts = dfsssp::DfssspOptions {
                one_lane,
                ..Default::default()
            };
            let id = format!(
                "{label} {}",
                if one_lane { "search" } else { "updown-escape" }
            );
            group.bench_with_input(BenchmarkId::from_parameter(id), &g, |b, g| {
                b.iter_batched(
                    || r.clone(),
                    |mut r| {
                        dfsssp::make_deadlock_free_with(g, &mut r, 1, &opts, None)
                            .map(|rep| rep.layers_used)
                    },
                    criterion::BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("lambda-1000");
    group.sample_size(10);
    for (label, _, g) in &all {
        let r = sssp::route(g);
        group.bench_with_input(BenchmarkId::from_parameter(label), g, |b, g| {
            b.iter(|| {
                metrics::effective_bisection_bandwidth(g, &r.lft, &BisectionSpec::new(1000, 1))
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("verify");
    group.sample_size(10);
    for (label, _, g) in &all {
        let r = sssp::route(g);
        group.bench_with_input(BenchmarkId::from_parameter(label), g, |b, g| {
            b.iter(|| verify::verify(g, &r).map(|rep| rep.layers_used).ok())
        });
    }
    group.finish();
}

criterion_group!(core, benches);
criterion_main!(core);
