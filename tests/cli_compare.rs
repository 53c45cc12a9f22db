//! `dfsssp-rs compare`: the table, the JSON and the SVG chart, offline on generated fabrics and on
//! OpenSM dumps of stock and plug-in runs in ibsim (harness in tests/common).

mod common;

use std::path::Path;

use common::{cli, OpenSm, Sim};
use dfsssp_rs::engine::McastLane;
use dfsssp_rs::topo::by_name;
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let (ok, so, se) = cli(args);
    assert!(ok, "dfsssp-rs {args:?} failed:\n{se}");
    serde_json::from_str(&so).unwrap_or_else(|e| panic!("JSON: {e}\n{so}"))
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

fn by_label<'a>(v: &'a Value, label: &str) -> &'a Value {
    v["routings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no routing {label}"))
}

/// Domke et al.'s ring: SSSP has a credit loop, DFSSSP needs two lanes, one lane forces escape
/// routes. The JSON, the table and the chart say so, and compare's numbers are eval's.
#[test]
fn engines_side_by_side_on_a_ring() {
    let d = tempfile::tempdir().unwrap();
    let svg = d.path().join("cmp.svg");
    let args = [
        "compare",
        "--topo",
        "torus:5,1",
        "--engines",
        "sssp-rs,dfsssp-rs,dfsssp-rs@1",
        "--patterns",
        "64",
        "--quiet",
    ];
    let mut with_json = args.to_vec();
    with_json.extend(["--json", "--svg", p(&svg)]);
    let v = json(&with_json);
    let labels: Vec<&str> = v["routings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["sssp-rs", "dfsssp-rs", "dfsssp-rs@1"]);
    assert_eq!(v["fabric_mismatch"].as_array().unwrap().len(), 0);
    let sssp = by_label(&v, "sssp-rs");
    assert_eq!(sssp["deadlock"]["deadlock_free"], Value::Bool(false));
    assert_eq!(sssp["deadlock"]["lanes_used"].as_u64(), Some(1));
    let df = by_label(&v, "dfsssp-rs");
    assert_eq!(df["deadlock"]["deadlock_free"], Value::Bool(true));
    assert!(df["deadlock"]["lanes_used"].as_u64() >= Some(2));
    let one = by_label(&v, "dfsssp-rs@1");
    assert_eq!(one["deadlock"]["deadlock_free"], Value::Bool(true));
    assert_eq!(one["deadlock"]["lanes_used"].as_u64(), Some(1));
    assert_eq!(one["source"]["lanes"].as_u64(), Some(1));

    // eval of the same routing gives the same numbers
    let ev = json(&[
        "eval",
        "--topo",
        "torus:5,1",
        "--engine",
        "sssp-rs",
        "--patterns",
        "64",
        "--json",
        "--quiet",
    ]);
    assert_eq!(ev["metrics"], sssp["metrics"]);

    // the table
    let (ok, table, _) = cli(&args);
    assert!(ok);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("torus:5,1: 5 switches, 5 CA/router ports"),
        "{table}"
    );
    assert!(
        lines[1].starts_with("routing") && lines[1].contains("deadlock-free"),
        "{table}"
    );
    let row = |label: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(label))
            .unwrap_or_else(|| panic!("no row {label}:\n{table}"))
            .split_whitespace()
            .collect()
    };
    let lam = format!(
        "{:.4}",
        sssp["metrics"]["bisection"]["lambda"].as_f64().unwrap()
    );
    assert_eq!(row("sssp-rs")[1], lam);
    assert_eq!(row("sssp-rs")[7], "no");
    assert_eq!(row("dfsssp-rs")[7], "yes");
    assert_eq!(row("dfsssp-rs@1")[6], "1");

    // the chart: every routing's label and Λ, coloured by the deadlock check
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<?xml") && s.trim_end().ends_with("</svg>"));
    assert_eq!(s.matches('<').count(), s.matches('>').count());
    for r in v["routings"].as_array().unwrap() {
        let label = r["label"].as_str().unwrap();
        assert_eq!(
            s.matches(&format!(">{label}<")).count(),
            2,
            "{label} under both panels"
        );
        let l = format!(
            ">{:.3}<",
            r["metrics"]["bisection"]["lambda"].as_f64().unwrap()
        );
        assert!(s.contains(&l), "Λ {l} on its bar");
    }
    assert!(s.contains("credit loops (not deadlock-free)") && s.contains(">deadlock-free<"));
    assert!(
        s.contains("torus:5,1: 5 switches"),
        "title names the fabric"
    );
}

/// Stock minhop's and the plug-in's dumps beside dfsssp-rs routed in-process on the fabric of
/// the first dump: the plug-in's routing judged from its dumps is exactly the in-process one.
#[test]
fn dumps_of_stock_and_plugin_runs_beside_our_engines() {
    let spec = "torus:4x4,1";
    let f = by_name(spec).unwrap();
    let sim1 = Sim::start("cli-cmp-minhop", &f);
    let minhop = sim1.opensm(&OpenSm::new("minhop"));
    minhop.assert_configured_by("minhop");
    let sim2 = Sim::start("cli-cmp-plugin", &f);
    let plugin = sim2.opensm(&OpenSm::new("dfsssp-rs").qos(true));
    plugin.assert_configured_by("dfsssp-rs");
    let rec: dfsssp_rs::io::run_record::RunRecord =
        serde_json::from_str(&plugin.read(dfsssp_rs::io::run_record::RUN_FILE)).unwrap();

    let d = tempfile::tempdir().unwrap();
    let svg = d.path().join("cmp.svg");
    let mh = format!("minhop={}", p(&minhop.dir));
    let pl = format!("plugin={}", p(&plugin.dir));
    // The plug-in's own configuration, its lane left to multicast included.
    let engine = format!(
        "dfsssp-rs@{}{}",
        rec.lanes,
        match rec.mcast_lane {
            McastLane::Off => "",
            McastLane::WhenFree => "+mcast",
            McastLane::Always => "+mcast-always",
        }
    );
    let v = json(&[
        "compare",
        "--dumps",
        &mh,
        "--dumps",
        &pl,
        "--engines",
        &engine,
        "--patterns",
        "100",
        "--json",
        "--quiet",
        "--svg",
        p(&svg),
    ]);
    assert_eq!(
        v["fabric_mismatch"].as_array().unwrap().len(),
        0,
        "{}",
        v["fabric_mismatch"]
    );
    let m = by_label(&v, "minhop");
    assert_eq!(m["deadlock"]["deadlock_free"], Value::Bool(false));
    assert_eq!(m["source"]["kind"], "dumps");
    let ours = by_label(&v, &engine);
    let plug = by_label(&v, "plugin");
    assert_eq!(ours["source"]["kind"], "engine");
    assert_eq!(plug["deadlock"]["deadlock_free"], Value::Bool(true));
    assert_eq!(ours["metrics"]["bisection"], plug["metrics"]["bisection"]);
    assert_eq!(ours["metrics"]["efi"], plug["metrics"]["efi"]);
    assert_eq!(
        ours["deadlock"]["lanes_used"],
        plug["deadlock"]["lanes_used"]
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains(">minhop<"));

    // a dump of another fabric is flagged
    let v = json(&[
        "compare",
        "--topo",
        "torus:3x3,1",
        "--engines",
        "sssp-rs",
        "--dumps",
        &mh,
        "--patterns",
        "0",
        "--json",
        "--quiet",
    ]);
    assert_eq!(v["fabric_mismatch"], serde_json::json!(["minhop"]));
    let (ok, _, err) = cli(&[
        "compare",
        "--topo",
        "torus:3x3,1",
        "--engines",
        "sssp-rs",
        "--dumps",
        &mh,
        "--patterns",
        "0",
    ]);
    assert!(ok);
    assert!(
        err.contains("warning: the fabric of minhop differs"),
        "{err}"
    );
}
