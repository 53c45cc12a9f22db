//! `dfsssp-rs eval`: judge one routing and print a human report or JSON.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{ArgGroup, Args};

use dfsssp_rs::engine::{EngineConfig, EngineKind, McastLane};
use dfsssp_rs::metrics::{Counts, PairTraffic};
use dfsssp_rs::reroute::RoutedFabric;

use super::judge::{self, Evaluation, Source};
use super::mcast;
use super::progress::Progress;
use super::table::aligned;
use super::{load_fabric, CliResult, MeasureArgs};
use dfsssp_rs::dfsssp::MAX_LAYERS;

pub const AFTER_HELP: &str = "\
Inputs (one of):
  --dumps DIR       OpenSM's dump directory (opensm -D 0x43 or more, `dump_files_dir`):
                    opensm-subnet.lst + opensm-lfts.dump [+ opensm-path-sl.dump, else every
                    route is in lane 0] [+ opensm.mcfdbs: multicast trees judged too, and
                    checked with every lane]. LMC from --lmc, else inferred from the LFTs.
  --fabric FILE     ibsim net file, ibnetdiscover output, opensm-subnet.lst or the plug-in's
                    dfsssp-rs-fabric.json, routed in-process with --engine
  --topo SPEC       a generated fabric (see `dfsssp-rs generate --help`), routed in-process
Examples:
  dfsssp-rs eval --dumps /var/log/opensm-dumps
  dfsssp-rs eval --topo torus:6x6x6,4 --engine dfsssp-rs --lanes 4 --json > eval.json";

#[derive(Args)]
#[command(group(ArgGroup::new("input").required(true).args(["dumps", "fabric", "topo"])))]
pub struct EvalArgs {
    /// OpenSM's dump directory (any engine's routing)
    #[arg(long)]
    dumps: Option<PathBuf>,
    /// A fabric file to route in-process (format detected from the content)
    #[arg(long)]
    fabric: Option<PathBuf>,
    /// A generated fabric to route in-process
    #[arg(long)]
    topo: Option<String>,
    /// LMC of the CA ports (dumps: inferred when not given; fabric files without LIDs: 0)
    #[arg(long)]
    lmc: Option<u8>,
    /// Engine for --fabric/--topo: sssp-rs or dfsssp-rs
    #[arg(long, default_value = "dfsssp-rs", conflicts_with = "dumps")]
    engine: EngineKind,
    /// Virtual lanes available to dfsssp-rs
    #[arg(long, default_value_t = 8, conflicts_with = "dumps")]
    lanes: u8,
    /// Route as OpenSM does with QoS off: a single lane
    #[arg(long, conflicts_with = "dumps")]
    no_qos: bool,
    /// Leave a lane to multicast as the plug-in does (layer i on SL i + 1): off, when-free (the
    /// plug-in's default; the flag alone) or always
    #[arg(long, conflicts_with = "dumps", default_value = "off", num_args = 0..=1,
          default_missing_value = "when-free")]
    mcast_lane: McastLane,
    /// JSON on standard output instead of the table
    #[arg(long)]
    json: bool,
    /// Another dump directory, of the routing before (e.g. before a cable failed): also report
    /// what changed (CA pairs re-routed, SLs changed, LFT blocks changed) and Λ before and after
    #[arg(long, requires = "dumps")]
    before: Option<PathBuf>,
    #[command(flatten)]
    measure: MeasureArgs,
}

pub fn run(a: &EvalArgs) -> CliResult<()> {
    let p = Progress::new(a.measure.quiet);
    let subject = if let Some(dir) = &a.dumps {
        judge::load_dumps(&dir.display().to_string(), dir, a.lmc, &p)?
    } else {
        let fabric = load_fabric(a.fabric.as_deref(), a.topo.as_deref(), a.lmc.unwrap_or(0))?;
        let name = match (&a.topo, &a.fabric) {
            (Some(t), _) => t.clone(),
            (None, Some(f)) => f.display().to_string(),
            (None, None) => unreachable!("clap requires one input"),
        };
        let mut cfg = EngineConfig::new(a.engine);
        cfg.lanes = a.lanes;
        cfg.qos = !a.no_qos;
        cfg.mcast_lane = a.mcast_lane;
        cfg.classes = a.measure.options()?.classes.map(|l| l.classes(&fabric).0);
        judge::route(a.engine.name(), fabric, &name, &cfg, &p)?
    };
    if a.measure.verbose {
        for l in subject.engine.iter().flat_map(|e| &e.log) {
            eprintln!("{l}");
        }
    }
    // The routing before, and what changed from it.
    let before = match &a.before {
        Some(dir) => {
            let old = judge::load_dumps(&dir.display().to_string(), dir, a.lmc, &p)?;
            let changes = dfsssp_rs::reroute::diff(
                RoutedFabric {
                    fabric: &old.fabric,
                    graph: &old.graph,
                    routing: &old.routing,
                },
                RoutedFabric {
                    fabric: &subject.fabric,
                    graph: &subject.graph,
                    routing: &subject.routing,
                },
            );
            let old_ev = judge::evaluate(old, &a.measure.options()?, &p)?;
            Some((changes, old_ev.metrics.bisection.map(|b| b.lambda)))
        }
        None => None,
    };
    let dumped_groups = match &a.dumps {
        Some(dir) => mcast::read_dumped(dir, &subject.fabric, &subject.graph)?,
        None => None,
    };
    let ev = judge::evaluate(subject, &a.measure.options()?, &p)?;
    let multicast = dumped_groups
        .as_ref()
        .map(|d| mcast::judge_dumped(d, &ev.deadlock.lane_edges));
    let lambda = ev.metrics.bisection.as_ref().map(|b| b.lambda);
    if a.json {
        let mut value = serde_json::to_value(&ev).map_err(|e| format!("JSON: {e}"))?;
        if let (Some((changes, old_lambda)), Some(obj)) = (&before, value.as_object_mut()) {
            obj.insert(
                "changes".into(),
                serde_json::json!({
                    "before": a.before.as_ref().map(|d| d.display().to_string()),
                    "diff": changes,
                    "lambda_before": old_lambda,
                    "lambda_after": lambda,
                }),
            );
        }
        if let (Some(m), Some(obj)) = (&multicast, value.as_object_mut()) {
            let m = serde_json::to_value(m).map_err(|e| format!("JSON: {e}"))?;
            obj.insert("multicast".into(), m);
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| format!("JSON: {e}"))?;
        println!("{text}");
    } else {
        if let Some((changes, old_lambda)) = &before {
            let fmt = |l: Option<f64>| l.map_or("-".to_string(), |l| format!("{l:.4}"));
            println!(
                "changes since {}: {}; Λ {} -> {}",
                a.before
                    .as_ref()
                    .map_or(String::new(), |d| d.display().to_string()),
                changes.summary(),
                fmt(*old_lambda),
                fmt(lambda)
            );
        }
        for w in &ev.warnings {
            eprintln!("dfsssp-rs: warning: {w}");
        }
        print!("{}", report(&ev));
        if let Some(m) = &multicast {
            println!();
            print!("{}", mcast::report(m));
        }
    }
    Ok(())
}

/// `n/total delivered[, k no entry, ...]`.
fn counts(n: &Counts) -> String {
    let mut s = format!("{}/{} delivered", n.delivered, n.total());
    for (v, what) in [
        (n.no_entry, "no entry"),
        (n.dead_end, "dead end"),
        (n.loops, "forwarding loop"),
        (n.disconnected, "in another component"),
    ] {
        if v > 0 {
            let _ = write!(s, ", {v} {what}");
        }
    }
    s
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Report rows: (label, value), aligned into two columns at the end.
type Rows = Vec<(String, String)>;

/// The human report: one section per question, two aligned columns.
pub fn report(ev: &Evaluation) -> String {
    let mut rows: Rows = Vec::new();
    report_subject(&mut rows, ev);
    report_connectivity(&mut rows, ev);
    report_hops(&mut rows, ev);
    report_load(&mut rows, ev);
    report_lanes(&mut rows, ev);
    report_times(&mut rows, ev);
    aligned(&rows)
}

/// Which routing of which fabric is judged.
fn report_subject(rows: &mut Rows, ev: &Evaluation) {
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    let f = &ev.fabric;
    match &ev.source {
        Source::Dumps { dir, path_sl } => row(
            "routing",
            format!(
                "OpenSM dumps in {dir} ({})",
                if *path_sl {
                    "with opensm-path-sl.dump"
                } else {
                    "no opensm-path-sl.dump: every route in lane 0"
                }
            ),
        ),
        Source::Engine {
            engine,
            lanes,
            qos,
            fabric,
        } => row(
            "routing",
            format!(
                "{engine} on {fabric} ({lanes} lanes{})",
                if *qos { "" } else { ", QoS off: one lane" }
            ),
        ),
    }
    row(
        "fabric",
        format!(
            "{} switches, {} CA/router ports on {} nodes, {} LIDs (LMC {}), {} links, {} switch-to-switch channels",
            f.switches, f.ca_ports, f.ca_nodes, f.lids, f.lmc, f.links, f.channels
        ),
    );
}

/// Whether every switch and CA reaches every LID, and the failures found.
fn report_connectivity(rows: &mut Rows, ev: &Evaluation) {
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    let m = &ev.metrics;
    let c = &m.connectivity;
    row("", String::new());
    row(
        "connectivity",
        if c.complete() {
            "complete".into()
        } else {
            "INCOMPLETE".into()
        },
    );
    row("  switch -> LID", counts(&c.switch_to_lid));
    row("  CA -> LID", counts(&c.ca_to_lid));
    row("  forwarding loops", ev.forwarding_loops.to_string());
    for x in &ev.failures {
        row(
            "  failure",
            format!(
                "{} to LID {} ({}): {}",
                x.switch, x.lid, x.destination, x.what
            ),
        );
    }
    let failed = c.switch_to_lid.failed();
    if failed > ev.failures.len() as u64 && !ev.failures.is_empty() {
        row(
            "",
            format!("... {} failing (switch, LID) pairs in all", failed),
        );
    }
}

/// Path lengths between CAs and their histogram.
fn report_hops(rows: &mut Rows, ev: &Evaluation) {
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    let m = &ev.metrics;
    let h = &m.hops;
    row("", String::new());
    row(
        "hops (CA to CA)",
        format!(
            "{} routes, average {:.3}, max {}, {:.2}% minimal",
            h.routes,
            h.average,
            h.max,
            pct(h.minimal, h.routes)
        ),
    );
    let hist: Vec<String> = h
        .histogram
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, n)| format!("{i}:{n}"))
        .collect();
    row("  histogram", hist.join("  "));
}

/// Channel load: the edge forwarding index, the max link load and Λ (per class too).
fn report_load(rows: &mut Rows, ev: &Evaluation) {
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    let m = &ev.metrics;
    row("", String::new());
    row(
        "edge forwarding index",
        format!(
            "max {}, average {:.2} routes per switch-to-switch channel",
            m.efi.max, m.efi.average
        ),
    );
    row(
        "max link load",
        format!(
            "{:.4} (uniform all-to-all, each CA sending 1; switch links {:.4}, CA links 1)",
            m.efi.max_link_load, m.efi.max_channel_load
        ),
    );
    match &m.bisection {
        Some(b) => row(
            "effective bisection Λ",
            format!(
                "{:.4} over {} patterns (seed {}{}), worst {:.4}, best {:.4}",
                b.lambda,
                b.patterns,
                b.seed,
                if b.traffic == PairTraffic::Exchange {
                    ", exchange"
                } else {
                    ""
                },
                b.min,
                b.max
            ),
        ),
        None => row("effective bisection Λ", "not measured".into()),
    }
    if let Some(c) = &ev.classes {
        for (k, b, none) in [
            (
                "  Λ compute nodes",
                &c.compute,
                "fewer than 2 compute nodes",
            ),
            (
                "  Λ compute to I/O",
                &c.compute_to_io,
                "no compute or no I/O nodes",
            ),
        ] {
            row(
                k,
                match b {
                    Some(b) => format!(
                        "{:.4} over {} patterns of {} flows, worst {:.4}, best {:.4}",
                        b.lambda, b.patterns, b.flows, b.min, b.max
                    ),
                    None => none.into(),
                },
            );
        }
    }
}

/// Lanes used and the deadlock check, lane by lane, and DFSSSP's layer count.
fn report_lanes(rows: &mut Rows, ev: &Evaluation) {
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    let d = &ev.deadlock;
    row("", String::new());
    row(
        "lanes",
        format!(
            "{} used of {} declared; paths per lane {:?}",
            d.lanes_used,
            d.lanes_declared,
            d.lanes.iter().map(|l| l.paths).collect::<Vec<_>>()
        ),
    );
    row(
        "deadlock check",
        if d.deadlock_free {
            "deadlock-free: every lane's channel dependency graph is acyclic".into()
        } else if d.data_deadlock_free {
            "NOT deadlock-free: every loop needs a path to a switch LID (management traffic); \
             the CA-to-CA paths alone are acyclic"
                .into()
        } else {
            "NOT deadlock-free".into()
        },
    );
    if d.unknown_lane_paths > 0 {
        row(
            "  not checked",
            format!(
                "{} paths sent by switches without CAs: the path-SL dump has no SLs for them \
                 (CA traffic through those switches is checked)",
                d.unknown_lane_paths
            ),
        );
    }
    for l in &d.lanes {
        if l.paths == 0 {
            continue;
        }
        let v = match &l.cycle_text {
            None => format!(
                "{} paths, {} dependencies, acyclic",
                l.paths, l.dependencies
            ),
            Some(t) => {
                // describe() starts with "credit loop in layer N: "; the row names the lane.
                let cycle = t.split_once(": ").map_or(t.as_str(), |x| x.1);
                format!(
                    "{} paths, {} dependencies, CREDIT LOOP of {} channels: {cycle}",
                    l.paths,
                    l.dependencies,
                    l.cycle.as_ref().map_or(0, Vec::len)
                )
            }
        };
        row(&format!("  lane {}", l.lane), v);
    }
    if d.bad_lane_paths > 0 {
        row(
            "  beyond lanes",
            format!(
                "{} paths in a lane >= the {} declared",
                d.bad_lane_paths, d.lanes_declared
            ),
        );
    }
    if let Some(n) = &ev.dfsssp_layers {
        let layers =
            |x: Option<u8>| x.map_or_else(|| format!("more than {MAX_LAYERS}"), |n| n.to_string());
        row(
            "DFSSSP would need",
            format!(
                "{} layer(s) with every switch and CA port a source, {} with CA ports only (stock dfsssp's count)",
                layers(n.all_sources),
                layers(n.ca_sources)
            ),
        );
    }
}

/// How long routing and evaluating took.
fn report_times(rows: &mut Rows, ev: &Evaluation) {
    let mut row = |k: &str, v: String| rows.push((k.to_string(), v));
    if let Some(e) = &ev.engine {
        row("", String::new());
        row(
            "engine time",
            format!(
                "routed in {:.3} s, verified in {:.3} s",
                e.stats.route_time.as_secs_f64(),
                e.stats.verify_time.as_secs_f64()
            ),
        );
        if let Some(lr) = &e.layer_report {
            if let Some(esc) = lr.escape_layer {
                row(
                    "escape",
                    format!(
                        "lane {esc} holds Up*/Down* routes of {} destination LID(s)",
                        lr.escape_dests
                    ),
                );
            }
        }
    }
    let s = &ev.seconds;
    row(
        "eval time",
        format!(
            "{:.3} s all pairs, {:.3} s Λ, {:.3} s deadlock check",
            s.all_pairs, s.bisection, s.deadlock_check
        ),
    );
}
