//! `dfsssp-rs compare`: several routings of one fabric side by side.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use dfsssp_rs::engine::{EngineConfig, EngineKind, McastLane};
use dfsssp_rs::fabric::{CanonicalFabric, Fabric};

use super::chart::{self, Bar};
use super::judge::{self, Evaluation, Subject};
use super::progress::Progress;
use super::{load_fabric, write_output, CliResult, MeasureArgs};

pub const AFTER_HELP: &str = "\
Routings (any mix, at least one):
  --engines E[,E..]   our engines routed in-process on --fabric/--topo (default sssp-rs,dfsssp-rs
                      when a fabric is given; without one, on the fabric of the first --dumps).
                      E is sssp-rs, dfsssp-rs, or dfsssp-rs@N for a budget of N lanes; a
                      +mcast suffix leaves a lane to multicast as the plug-in does
                      (+mcast-always: even where the layers need every lane).
  --dumps LABEL=DIR   OpenSM dump directory of another engine's run on the same fabric
                      (repeatable), e.g. --dumps minhop=run1 --dumps dfsssp=run2
Examples:
  dfsssp-rs compare --topo torus:4x4x4,2 --engines sssp-rs,dfsssp-rs,dfsssp-rs@2 --svg cmp.svg
  dfsssp-rs compare --dumps minhop=dumps/minhop --dumps updn=dumps/updn --engines dfsssp-rs
Your fabric in the stock OpenSM (ibsim, every engine that applies, a recommendation):
  --in-opensm DUMP    an ibnetdiscover dump (CRLF, lost tabs, lid 0, NDR/HDR/XDR and other
                      quirks accepted; SHARP aggregation nodes, or the CAs not in --cn-guids,
                      are left out of the compute Λ)
  dfsssp-rs compare --in-opensm fabric.topo [--json | --svg engines.svg] [--limit 60]";

#[derive(Args)]
pub struct CompareArgs {
    /// A fabric file to route in-process (format detected from the content)
    #[arg(long, conflicts_with = "topo")]
    fabric: Option<PathBuf>,
    /// A generated fabric to route in-process
    #[arg(long)]
    topo: Option<String>,
    /// LMC of the CA ports (dumps: inferred when not given; fabric files without LIDs: 0)
    #[arg(long)]
    lmc: Option<u8>,
    /// Engines to route in-process, comma-separated: sssp-rs, dfsssp-rs, dfsssp-rs@LANES
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,
    /// Virtual lanes available to dfsssp-rs (unless given as ENGINE@LANES)
    #[arg(long, default_value_t = 8)]
    lanes: u8,
    /// Route as OpenSM does with QoS off: a single lane
    #[arg(long)]
    no_qos: bool,
    /// LABEL=DIR: OpenSM's dumps of a routing of the same fabric (repeatable)
    #[arg(long, value_name = "LABEL=DIR")]
    dumps: Vec<String>,
    /// JSON on standard output instead of the table
    #[arg(long)]
    json: bool,
    /// Write an SVG bar chart of Λ and lanes per routing here
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Chart title (default: the fabric)
    #[arg(long)]
    title: Option<String>,
    /// An ibnetdiscover dump of your fabric: every engine the installed OpenSM offers that
    /// applies, and dfsssp-rs with QoS on and off, run by the stock opensm in ibsim one after
    /// another, judged from OpenSM's own dumps; ends with the opensm.conf lines recommended
    #[arg(long, value_name = "FILE", conflicts_with_all = ["fabric", "topo", "dumps", "engines"])]
    in_opensm: Option<PathBuf>,
    #[command(flatten)]
    osm: super::in_opensm::OsmArgs,
    #[command(flatten)]
    measure: MeasureArgs,
}

/// One routing of `compare --engines`.
#[derive(Debug)]
struct EngineChoice {
    label: String,
    kind: EngineKind,
    lanes: u8,
    /// `+mcast` / `+mcast-always`: leave a lane to multicast, as the plug-in does
    /// (`EngineConfig::mcast_lane`).
    mcast_lane: McastLane,
}

/// `ENGINE[@LANES][+mcast]`.
fn parse_engine(label: &str, default_lanes: u8) -> CliResult<EngineChoice> {
    let label = label.trim();
    let (s, mcast_lane) = if let Some(rest) = label.strip_suffix("+mcast-always") {
        (rest, McastLane::Always)
    } else if let Some(rest) = label.strip_suffix("+mcast") {
        (rest, McastLane::WhenFree)
    } else {
        (label, McastLane::Off)
    };
    let (name, lanes) = match s.split_once('@') {
        Some((n, l)) => {
            let lanes: u8 = l
                .parse()
                .ok()
                .filter(|&x| x >= 1)
                .ok_or_else(|| format!("--engines {s}: lanes after '@' must be 1..255"))?;
            (n, lanes)
        }
        None => (s, default_lanes),
    };
    let kind: EngineKind = name.parse().map_err(|e| format!("--engines: {e}"))?;
    Ok(EngineChoice {
        label: label.to_string(),
        kind,
        lanes,
        mcast_lane,
    })
}

fn parse_dumps(s: &str) -> CliResult<(String, PathBuf)> {
    match s.split_once('=') {
        Some((l, d)) if !l.is_empty() && !d.is_empty() => Ok((l.to_string(), PathBuf::from(d))),
        _ => Err(format!("--dumps {s}: expected LABEL=DIR")),
    }
}

#[derive(Serialize)]
struct Comparison<'a> {
    fabric: &'a str,
    /// Routings whose fabric differs from the first one's (nodes or links by GUID).
    fabric_mismatch: Vec<String>,
    routings: &'a [Evaluation],
}

/// Judges every routing asked for (engines first, then dumps) and prints them side by side;
/// `--in-opensm` runs the stock OpenSM instead.
pub fn run(a: &CompareArgs) -> CliResult<()> {
    if let Some(file) = &a.in_opensm {
        return super::in_opensm::run(
            file,
            &a.osm,
            &a.measure,
            a.json,
            a.svg.as_deref(),
            a.title.as_deref(),
        );
    }
    let p = Progress::new(a.measure.quiet);
    let Asked { dumps, engines } = routings_asked(a)?;
    let (subjects, fabric_name) = subjects_of(a, &dumps, &engines, &p)?;

    let mut mismatch = Vec::new();
    let reference = subjects[0].fabric.canonical();
    for s in &subjects[1..] {
        if !same_fabric(&s.fabric.canonical(), &reference) {
            mismatch.push(s.label.clone());
        }
    }
    let opts = a.measure.options()?;
    let mut evals = Vec::with_capacity(subjects.len());
    for s in subjects {
        evals.push(judge::evaluate(s, &opts, &p)?);
    }

    if !mismatch.is_empty() {
        eprintln!(
            "dfsssp-rs: warning: the fabric of {} differs from that of {} (nodes or links by \
             GUID): not a comparison of one fabric",
            mismatch.join(", "),
            evals[0].label
        );
    }
    for ev in &evals {
        for w in &ev.warnings {
            eprintln!("dfsssp-rs: warning: {}: {w}", ev.label);
        }
    }
    let f = &evals[0].fabric;
    let fabric_line = format!(
        "{fabric_name}: {} switches, {} CA/router ports, {} LIDs",
        f.switches, f.ca_ports, f.lids
    );
    if let Some(path) = &a.svg {
        write_chart(a, path, &evals, &fabric_line)?;
    }
    if a.json {
        let c = Comparison {
            fabric: &fabric_name,
            fabric_mismatch: mismatch,
            routings: &evals,
        };
        let text = serde_json::to_string_pretty(&c).map_err(|e| format!("JSON: {e}"))?;
        println!("{text}");
    } else {
        println!("{fabric_line}");
        print!("{}", table(&evals));
    }
    Ok(())
}

/// The routings `compare` was asked for.
struct Asked {
    /// (label, dump directory), in the order given.
    dumps: Vec<(String, PathBuf)>,
    engines: Vec<EngineChoice>,
}

/// The dump directories and the engines to compare (sssp-rs and dfsssp-rs by default when a
/// fabric is given), each label once.
fn routings_asked(a: &CompareArgs) -> CliResult<Asked> {
    let dumps: Vec<(String, PathBuf)> = a
        .dumps
        .iter()
        .map(|s| parse_dumps(s))
        .collect::<CliResult<_>>()?;
    let have_fabric = a.fabric.is_some() || a.topo.is_some();
    let mut engines: Vec<EngineChoice> = a
        .engines
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| parse_engine(s, a.lanes))
        .collect::<CliResult<_>>()?;
    if engines.is_empty() && have_fabric {
        engines = ["sssp-rs", "dfsssp-rs"]
            .iter()
            .map(|s| parse_engine(s, a.lanes))
            .collect::<CliResult<_>>()?;
    }
    if engines.is_empty() && dumps.is_empty() {
        return Err(
            "nothing to compare: give --fabric/--topo (with --engines) and/or --dumps \
                    LABEL=DIR"
                .into(),
        );
    }
    let mut labels = BTreeSet::new();
    for l in engines
        .iter()
        .map(|e| &e.label)
        .chain(dumps.iter().map(|d| &d.0))
    {
        if !labels.insert(l.clone()) {
            return Err(format!("routing label '{l}' given twice"));
        }
    }

    Ok(Asked { dumps, engines })
}

/// The routings to judge: the dumps loaded and the engines routed on the fabric (given, or the
/// first dump's), engines first; and the fabric's name.
fn subjects_of(
    a: &CompareArgs,
    dumps: &[(String, PathBuf)],
    engines: &[EngineChoice],
    p: &Progress,
) -> CliResult<(Vec<Subject>, String)> {
    let have_fabric = a.fabric.is_some() || a.topo.is_some();
    let mut subjects: Vec<Subject> = Vec::new();
    for (label, dir) in dumps {
        subjects.push(judge::load_dumps(label, dir, a.lmc, p)?);
    }
    let (fabric, fabric_name): (Option<Fabric>, String) = if have_fabric {
        let f = load_fabric(a.fabric.as_deref(), a.topo.as_deref(), a.lmc.unwrap_or(0))?;
        let name = match (&a.topo, &a.fabric) {
            (Some(t), _) => t.clone(),
            (None, Some(f)) => f.display().to_string(),
            (None, None) => unreachable!(),
        };
        (Some(f), name)
    } else {
        let first = &dumps[0];
        (
            Some(subjects[0].fabric.clone()),
            format!("{}/opensm-subnet.lst", first.1.display()),
        )
    };
    for e in engines {
        let mut cfg = EngineConfig::new(e.kind);
        cfg.lanes = e.lanes;
        cfg.qos = !a.no_qos;
        cfg.mcast_lane = e.mcast_lane;
        let f = fabric.clone().expect("a fabric when engines are given");
        cfg.classes = a.measure.options()?.classes.map(|l| l.classes(&f).0);
        let s = judge::route(&e.label, f, &fabric_name, &cfg, p)?;
        if a.measure.verbose {
            for l in s.engine.iter().flat_map(|x| &x.log) {
                eprintln!("{}: {l}", e.label);
            }
        }
        subjects.push(s);
    }
    // Engines first, then dumps, in the order given.
    subjects.rotate_left(dumps.len());

    Ok((subjects, fabric_name))
}

/// The SVG bar chart of Λ and lanes per routing, written to `path`.
fn write_chart(
    a: &CompareArgs,
    path: &Path,
    evals: &[Evaluation],
    fabric_line: &str,
) -> CliResult<()> {
    let bars: Vec<Bar> = evals
        .iter()
        .map(|e| Bar {
            label: e.label.clone(),
            lambda: e.lambda(),
            lanes: e.deadlock.lanes_used,
            deadlock_free: e.deadlock.deadlock_free,
            complete: e.metrics.connectivity.complete(),
        })
        .collect();
    let title = a.title.clone().unwrap_or_else(|| fabric_line.to_string());
    let subtitle = match evals.iter().find_map(|e| e.metrics.bisection.as_ref()) {
        Some(b) => format!(
            "Λ: effective bisection bandwidth over {} random bisections (seed {})",
            b.patterns, b.seed
        ),
        None => "Λ not measured".into(),
    };
    write_output(Some(path), &chart::svg(&title, &subtitle, &bars))
}

/// Same nodes (GUID, ports) and links: what makes two fabrics the same here (LIDs, descriptions
/// and order may differ).
fn same_fabric(a: &CanonicalFabric, b: &CanonicalFabric) -> bool {
    let nodes = |c: &CanonicalFabric| c.nodes.iter().map(|n| (n.0, n.2)).collect::<Vec<_>>();
    a.links == b.links && nodes(a) == nodes(b)
}

/// The comparison table, columns aligned.
pub fn table(evals: &[Evaluation]) -> String {
    let head = [
        "routing",
        "Λ",
        "EFI max",
        "max link load",
        "hops avg",
        "% minimal",
        "lanes",
        "deadlock-free",
        "complete",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for e in evals {
        let m = &e.metrics;
        rows.push(vec![
            e.label.clone(),
            e.lambda().map_or("n/a".into(), |l| format!("{l:.4}")),
            m.efi.max.to_string(),
            format!("{:.3}", m.efi.max_link_load),
            format!("{:.3}", m.hops.average),
            format!("{:.2}", 100.0 * m.hops.fraction_minimal),
            e.deadlock.lanes_used.to_string(),
            if e.deadlock.deadlock_free {
                "yes"
            } else {
                "no"
            }
            .into(),
            if m.connectivity.complete() {
                "yes"
            } else {
                "NO"
            }
            .into(),
        ]);
    }
    let cols = head.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = width[c] - cell.chars().count();
            if c == 0 {
                // labels left-aligned, numbers right-aligned
                let _ = write!(line, "{cell}{}", " ".repeat(pad));
            } else {
                let _ = write!(line, "  {}{cell}", " ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_and_dump_arguments() {
        let e = parse_engine("dfsssp-rs@2", 8).unwrap();
        assert_eq!(
            (e.kind, e.lanes, e.label.as_str()),
            (EngineKind::Dfsssp, 2, "dfsssp-rs@2")
        );
        assert_eq!(e.mcast_lane, McastLane::Off);
        let e = parse_engine("sssp-rs", 8).unwrap();
        assert_eq!((e.kind, e.lanes), (EngineKind::Sssp, 8));
        let e = parse_engine("dfsssp-rs@8+mcast", 4).unwrap();
        assert_eq!(
            (e.kind, e.lanes, e.mcast_lane, e.label.as_str()),
            (
                EngineKind::Dfsssp,
                8,
                McastLane::WhenFree,
                "dfsssp-rs@8+mcast"
            )
        );
        assert!(parse_engine("dfsssp-rs@0", 8).is_err());
        assert!(parse_engine("minhop", 8).unwrap_err().contains("minhop"));
        assert_eq!(
            parse_dumps("minhop=/a/b=c").unwrap(),
            ("minhop".to_string(), PathBuf::from("/a/b=c"))
        );
        assert!(parse_dumps("minhop").is_err());
        assert!(parse_dumps("=dir").is_err());
    }
}
