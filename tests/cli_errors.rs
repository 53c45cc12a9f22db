//! The CLI on bad input and bad routings, offline (no simulator): a real OpenSM dump (from
//! tests/data/real) judged as is, broken line by line, and with tables edited into a forwarding
//! loop. Unreadable input must give a message naming the file and the line and a non-zero exit
//! status, never a panic; a bad routing is a report (exit status 0).

mod common;

use std::path::{Path, PathBuf};

use common::cli_in;
use serde_json::Value;

const SAMPLE: &str = "mesh2x2-par2-lmc1";

/// A dump directory holding the real sample (LMC 1, parallel links, stock minhop's tables).
fn dump_dir() -> tempfile::TempDir {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/real");
    let d = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("subnet.lst", "opensm-subnet.lst"),
        ("lfts.dump", "opensm-lfts.dump"),
    ] {
        std::fs::copy(real.join(format!("{SAMPLE}.{from}")), d.path().join(to)).unwrap();
    }
    d
}

/// Replaces 1-based line `n` of `file` with `with`.
fn set_line(file: &Path, n: usize, with: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    assert!(
        n >= 1 && n <= lines.len(),
        "{} has {} lines",
        file.display(),
        lines.len()
    );
    lines[n - 1] = with.to_string();
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
}

fn line_of(file: &Path, starts: &str, after: usize) -> usize {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| l.starts_with(starts))
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("no line starting {starts:?} in {}", file.display()))
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

/// Runs `eval --dumps DIR`; expects failure naming `file:line`.
fn expect_error(dir: &Path, file: &str, line: usize) -> String {
    let (code, out, err) = cli_in(
        None,
        &["eval", "--dumps", p(dir), "--quiet", "--patterns", "10"],
    );
    assert_eq!(code, Some(1), "exit status; stdout:\n{out}\nstderr:\n{err}");
    let want = format!("{}:{line}:", dir.join(file).display());
    assert!(err.contains(&want), "expected {want:?} in:\n{err}");
    assert!(out.is_empty(), "no report on failure:\n{out}");
    err
}

#[test]
fn sample_dumps_are_judged() {
    let d = dump_dir();
    let (code, out, err) = cli_in(
        None,
        &["eval", "--dumps", p(d.path()), "--json", "--patterns", "50"],
    );
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["fabric"]["switches"].as_u64(), Some(4));
    assert_eq!(
        v["fabric"]["lmc"].as_u64(),
        Some(1),
        "LMC inferred from the LFTs"
    );
    assert_eq!(v["fabric"]["lids"].as_u64(), Some(4 + 4 * 2));
    assert_eq!(
        v["metrics"]["connectivity"]["switch_to_lid"]["delivered"].as_u64(),
        Some(4 * 12)
    );
    assert_eq!(
        v["deadlock"]["deadlock_free"],
        Value::Bool(true),
        "a 2x2 mesh cannot loop"
    );
    assert_eq!(v["metrics"]["bisection"]["patterns"].as_u64(), Some(50));
    // --lmc overrides the inference
    let (_, out, _) = cli_in(
        None,
        &[
            "eval",
            "--dumps",
            p(d.path()),
            "--json",
            "--lmc",
            "1",
            "--patterns",
            "0",
        ],
    );
    let w: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(w["metrics"]["efi"], v["metrics"]["efi"]);
}

#[test]
fn malformed_lft_dump_names_file_and_line() {
    let d = dump_dir();
    let f = d.path().join("opensm-lfts.dump");
    let n = line_of(&f, "0x0004", 0);
    set_line(&f, n, "0x0004 zz # bad port");
    let err = expect_error(d.path(), "opensm-lfts.dump", n);
    assert!(err.contains("0x0004 zz"), "quotes the line: {err}");

    // a port the switch does not have
    let d = dump_dir();
    let f = d.path().join("opensm-lfts.dump");
    set_line(&f, n, "0x0004 099 # beyond the switch");
    let err = expect_error(d.path(), "opensm-lfts.dump", n);
    assert!(err.contains("99"), "{err}");

    // binary garbage
    let d = dump_dir();
    let junk: Vec<u8> = (0..4000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(d.path().join("opensm-lfts.dump"), junk).unwrap();
    let (code, _, err) = cli_in(None, &["eval", "--dumps", p(d.path()), "--quiet"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("opensm-lfts.dump:"), "{err}");
}

#[test]
fn malformed_subnet_lst_names_file_and_line() {
    let d = dump_dir();
    let f = d.path().join("opensm-subnet.lst");
    let text = std::fs::read_to_string(&f).unwrap();
    let third = text
        .lines()
        .nth(2)
        .unwrap()
        .replacen("NodeGUID:", "NodeGUID:xyz", 1);
    set_line(&f, 3, &third);
    expect_error(d.path(), "opensm-subnet.lst", 3);

    let d = dump_dir();
    let f = d.path().join("opensm-subnet.lst");
    set_line(&f, 5, "{ SW Ports:09 truncated");
    expect_error(d.path(), "opensm-subnet.lst", 5);
}

#[test]
fn malformed_path_sl_dump_names_file_and_line() {
    let d = dump_dir();
    let psl = d.path().join("opensm-path-sl.dump");
    std::fs::write(&psl, "0x0002c90100000000 6 0\n0x0002c90100000000 7 bad\n").unwrap();
    expect_error(d.path(), "opensm-path-sl.dump", 2);
    std::fs::write(&psl, "0x0002c90100000000 6 0\n0x0002c90100000000 7 16\n").unwrap();
    expect_error(d.path(), "opensm-path-sl.dump", 2);
    // a GUID that is no CA of the fabric
    std::fs::write(&psl, "0x00000000deadbeef 6 0\n").unwrap();
    expect_error(d.path(), "opensm-path-sl.dump", 1);
}

#[test]
fn missing_and_malformed_inputs_are_errors_not_panics() {
    let nowhere = PathBuf::from("/nonexistent/dfsssp-dumps");
    let (code, _, err) = cli_in(None, &["eval", "--dumps", p(&nowhere), "--quiet"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("/nonexistent/dfsssp-dumps/opensm-"), "{err}");

    let d = tempfile::tempdir().unwrap();
    let net = d.path().join("f.net");
    std::fs::write(&net, "Switch 4 \"s1\"\n[1] \"h1\"[1]\nHca 2 garbage\n").unwrap();
    let (code, _, err) = cli_in(None, &["eval", "--fabric", p(&net), "--quiet"]);
    assert_eq!(code, Some(1));
    assert!(err.contains(&format!("{}:3:", net.display())), "{err}");

    let rec = d.path().join("dfsssp-rs-fabric.json");
    std::fs::write(
        &rec,
        "{\"engine\": \"dfsssp-rs\",\n \"lanes\": 8,\n \"fabric\": {\"nodes\": [",
    )
    .unwrap();
    let (code, _, err) = cli_in(None, &["eval", "--fabric", p(&rec), "--quiet"]);
    assert_eq!(code, Some(1));
    assert!(err.contains(&format!("{}:3:", rec.display())), "{err}");

    let (code, _, err) = cli_in(None, &["eval", "--topo", "torus:0x3", "--quiet"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("torus"), "{err}");

    // compare reports a bad dump the same way
    let dd = dump_dir();
    let f = dd.path().join("opensm-lfts.dump");
    set_line(&f, 2, "0xZZZZ 001");
    let (code, _, err) = cli_in(
        None,
        &[
            "compare",
            "--dumps",
            &format!("x={}", p(dd.path())),
            "--quiet",
        ],
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("opensm-lfts.dump:2:"), "{err}");

    // usage errors: clap's status 2
    let (code, _, _) = cli_in(
        None,
        &["eval", "--dumps", p(dd.path()), "--topo", "torus:3"],
    );
    assert_eq!(code, Some(2), "two inputs");
    let (code, _, _) = cli_in(
        None,
        &["eval", "--dumps", p(dd.path()), "--engine", "sssp-rs"],
    );
    assert_eq!(code, Some(2), "an engine does not apply to dumps");
    let (code, _, err) = cli_in(None, &["compare", "--quiet"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("nothing to compare"), "{err}");
}

/// Tables edited so that two switches bounce a LID between them: eval names the loop (by switch
/// GUID), counts it, and the deadlock check sees the loop as a credit loop. A report, exit 0.
#[test]
fn forwarding_loop_is_reported() {
    let d = dump_dir();
    let f = d.path().join("opensm-lfts.dump");
    // Switch 0 ("mesh 0,0") reaches switch 1 ("mesh 1,0") by port 2, which comes back by port 4
    // (opensm-subnet.lst); make both send LID 12 (H-3) to each other.
    let sw1 = line_of(&f, "Unicast lids", 1);
    let a = line_of(&f, "0x000c ", 0);
    let b = line_of(&f, "0x000c ", sw1);
    set_line(&f, a, "0x000c 002 # to mesh 1,0");
    set_line(&f, b, "0x000c 004 # back to mesh 0,0");
    let (code, out, err) = cli_in(
        None,
        &[
            "eval",
            "--dumps",
            p(d.path()),
            "--json",
            "--quiet",
            "--patterns",
            "20",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // Exactly the two switches that bounce LID 12 loop; the others reach H-3 directly.
    assert_eq!(v["forwarding_loops"].as_u64(), Some(2));
    let failures = v["failures"].as_array().unwrap();
    let mut looping: Vec<&str> = failures
        .iter()
        .filter(|x| x["kind"] == "loop" && x["lid"] == 12)
        .map(|x| x["switch_guid"].as_str().unwrap())
        .collect();
    looping.sort();
    assert_eq!(
        looping,
        ["0x0002c90000000000", "0x0002c90000000001"],
        "{failures:?}"
    );
    assert!(failures[0]["destination"]
        .as_str()
        .unwrap()
        .contains("(H-3) port 1"));
    assert_eq!(v["deadlock"]["deadlock_free"], Value::Bool(false));
    assert!(v["deadlock"]["lanes"][0]["cycle_text"]
        .as_str()
        .unwrap()
        .contains("mesh"));
    assert!(v["metrics"]["bisection"]["lambda"].as_f64().unwrap() < 1.0);

    let (code, text, _) = cli_in(
        None,
        &["eval", "--dumps", p(d.path()), "--quiet", "--patterns", "0"],
    );
    assert_eq!(code, Some(0));
    assert!(text.contains("INCOMPLETE"), "{text}");
    assert!(
        text.contains("forwarding loop through 0x0002c9000000000"),
        "{text}"
    );
}

/// `route --fabric` on the plug-in's fabric JSON with an entry out of range: exit 1, the file,
/// a line and the entry named; a sound record routes.
#[test]
fn malformed_fabric_json_is_named() {
    let d = tempfile::tempdir().unwrap();
    let f = dfsssp_rs::topo::by_name("ktree:2,2").unwrap();
    let mut rec = serde_json::json!({ "engine": "dfsssp-rs", "lanes": 8, "fabric": f });
    let good = d.path().join("good.json");
    std::fs::write(&good, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    let (code, _, err) = cli_in(None, &["route", "--fabric", good.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");

    rec["fabric"]["links"][2]["b"]["node"] = 4096.into();
    rec["fabric"]["nodes"][0]["num_ports"] = 2.into();
    let bad = d.path().join("bad.json");
    std::fs::write(&bad, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    let (code, _, err) = cli_in(None, &["route", "--fabric", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    let at = format!("{}:", bad.display());
    assert!(err.contains(&at), "{err}");
    assert!(
        err.contains("links[2]: node index 4096 does not exist"),
        "{err}"
    );

    rec["fabric"]["links"][2]["b"]["node"] = 0.into();
    std::fs::write(&bad, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    let (code, _, err) = cli_in(None, &["route", "--fabric", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("links[") && err.contains("out of range"),
        "{err}"
    );

    rec["fabric"]["nodes"][0]["num_ports"] = "four".into();
    std::fs::write(&bad, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    let (code, _, err) = cli_in(None, &["route", "--fabric", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("fabric.nodes[0].num_ports"), "{err}");
}
