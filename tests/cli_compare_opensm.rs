//! `dfsssp-rs compare --in-opensm DUMP`: an admin's ibnetdiscover dump, quirks and all, run by
//! the stock opensm in ibsim with several engines; the table's numbers checked against runs done
//! by hand (harness in tests/common: ibsim and opensm started here, then `eval --dumps`), a
//! fallback named as such, bad input refused with its line, no process left behind.

mod common;

use std::path::Path;
use std::process::Command;

use common::{OpenSm, Sim};
use dfsssp_rs::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
use dfsssp_rs::io::{ibnetdiscover, ibsim};
use dfsssp_rs::topo::by_name;
use serde_json::Value;

/// Runs the command; (success, stdout, stderr), and that it left no ibsim or opensm running.
fn cli(args: &[&str]) -> (bool, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_dfsssp-rs"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run dfsssp-rs");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for dfsssp-rs");
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !se.contains("panicked"),
        "dfsssp-rs {args:?} panicked:\n{se}"
    );
    let left = processes_with_env(&format!("IBSIM_SOCKNAME=dfsssp-cmp-{pid}-"));
    assert!(left.is_empty(), "processes left behind: {left:?}");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        se,
    )
}

/// PIDs whose environment holds `needle` (the socket names the command gives its runs).
fn processes_with_env(needle: &str) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(env) = std::fs::read(e.path().join("environ")) {
            if String::from_utf8_lossy(&env).contains(needle) {
                let cmd = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default();
                v.push(format!("{name} {}", cmd.replace('\0', " ")));
            }
        }
    }
    v
}

fn plugin_dir() -> String {
    common::plugin_so()
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

fn run_of<'a>(v: &'a Value, label: &str) -> &'a Value {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no run {label}"))
}

/// `compare --in-opensm DUMP --routing-engines ENGINES` with 32 patterns, the plug-in built
/// here, JSON out, and `extra` arguments.
fn compare_json(dump: &Path, engines: &str, extra: &[&str]) -> (bool, String, String) {
    let pd = plugin_dir();
    let mut args = vec![
        "compare",
        "--in-opensm",
        p(dump),
        "--routing-engines",
        engines,
        "--patterns",
        "32",
        "--plugin-dir",
        &pd,
        "--quiet",
        "--json",
    ];
    args.extend_from_slice(extra);
    cli(&args)
}

/// The ibnetdiscover dump of the generated fabric `spec` as file `name` in a temporary
/// directory (kept while the returned guard lives).
fn dump_of(spec: &str, name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dump = d.path().join(name);
    std::fs::write(&dump, ibnetdiscover::write(&by_name(spec).unwrap())).unwrap();
    (d, dump)
}

/// The work directory `--keep` left, from the command's stderr.
fn kept_dir(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("dfsssp-rs: work directory kept: "))
        .unwrap_or_else(|| panic!("no kept directory: {stderr}"))
        .to_string()
}

/// Two rails of 65-port NDR switches with SHARP aggregation nodes, and a dual-port CA with a
/// port on each rail.
fn admins_fabric() -> Fabric {
    let f = by_name("rail:2,2,2,4").unwrap();
    let ports = f.port_table();
    let free_leaf = |name: &str| {
        let i = f
            .nodes()
            .iter()
            .position(|n| n.description.contains(name))
            .unwrap();
        let port = (1..f.nodes()[i].num_ports)
            .find(|&q| ports.remote(i, q).is_none())
            .unwrap();
        PortRef {
            node: i as u32,
            port,
        }
    };
    let (a, b) = (free_leaf("rail1-leaf02"), free_leaf("rail2-leaf01"));
    let max_lid = f.max_lid();
    let mut fb = FabricBuilder::from_fabric(f);
    let h = fb
        .add_node(NodeKind::Ca, 0x0002_c901_0000_9000, 2, "dual mlx5_0")
        .unwrap();
    for (q, at) in [(1u8, a), (2u8, b)] {
        let port = PortRef { node: h, port: q };
        fb.link(port, at).unwrap();
        fb.set_lid(
            port,
            0x0002_c901_0000_9000 + u64::from(q),
            max_lid + u16::from(q),
            0,
        )
        .unwrap();
    }
    fb.build().unwrap()
}

/// The dump as it reaches us: a terminal log (PuTTY's header after a byte-order mark, the
/// shell prompt and command, the prompt again at the end), pasted (tabs lost, CRLF, indented),
/// NDR/HDR/XDR speeds, comments of other tools, ports without a LID yet (`lid 0`, `lid 65535`),
/// two switches sharing a chassis GUID in `switchguid=` as ibdiagnet writes director ASICs.
fn with_quirks(text: &str) -> String {
    let mut out = String::from(
        "\u{feff}=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2026.11.20 10:00:00 =~=~=~=~=~=~=~=~=~=~=~=\r\n\
         [root@login01 ~]# ibnetdiscover\r\n\
         // ibnetdiscover on login01\r\n; fabric A\r\n/* exported\r\n by hand */\r\n",
    );
    let (mut unassigned, mut in_ca, mut chassis) = (0, false, 0);
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("Ca") || l.starts_with("Switch") {
            in_ca = l.starts_with("Ca") && l.contains("mlx5_1");
        }
        let mut l = l
            .replace('\t', "    ")
            .replace("4xQDR", ["4xNDR", "2xHDR", "4xXDR"][i % 3]);
        if unassigned < 2 && in_ca && l.starts_with('[') && l.contains("# lid ") {
            let at = l.find("# lid ").unwrap() + 6;
            let end = at + l[at..].find(' ').unwrap();
            l = format!("{}{}{}", &l[..at], ["0", "65535"][unassigned], &l[end..]);
            unassigned += 1;
        }
        if chassis < 2 {
            if let Some(port) = l
                .strip_prefix("switchguid=")
                .and_then(|v| v.split_once('('))
            {
                l = format!("switchguid=0x2c903000abcd00({}", port.1);
                chassis += 1;
            }
        }
        if l.starts_with('[') {
            out.push_str("  ");
        }
        out.push_str(&l);
        out.push_str("\r\n");
    }
    assert_eq!((unassigned, chassis), (2, 2));
    out.push_str("[root@login01 ~]# ");
    out
}

/// The command's numbers for minhop and dfsssp-rs are those of the same engines run by hand
/// on the same ibsim net file, judged by `eval --dumps`.
#[test]
fn quirky_dump_judged_as_runs_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let dump = d.path().join("fabric.topo");
    std::fs::write(&dump, with_quirks(&ibnetdiscover::write(&admins_fabric()))).unwrap();
    let svg = d.path().join("engines.svg");
    let pd = plugin_dir();
    let common_args = [
        "compare",
        "--in-opensm",
        p(&dump),
        "--routing-engines",
        "minhop,dfsssp-rs,dfsssp-rs/noqos",
        "--patterns",
        "64",
        "--plugin-dir",
        &pd,
        "--quiet",
    ];
    let mut args = common_args.to_vec();
    args.extend(["--json", "--keep", "--svg", p(&svg)]);
    let (ok, so, se) = cli(&args);
    assert!(ok, "{se}");
    let v: Value = serde_json::from_str(&so).unwrap_or_else(|e| panic!("{e}\n{so}"));
    let work = kept_dir(&se);
    // the quirks were forgiven and said so
    let notes = v["notes"].to_string();
    for q in [
        "CRLF",
        "indented",
        "comment",
        "lid 0 or 65535",
        "NDR",
        "before the first record",
        "after the last record",
        "chassis",
    ] {
        assert!(notes.contains(q), "{q}: {notes}");
    }
    // one subnet (the spines join the rails), SHARP nodes out of the compute ports
    let fab = &v["fabric"];
    assert_eq!(fab["aggregation_nodes"].as_u64(), Some(8), "{fab}");
    assert_eq!(fab["ca_ports"].as_u64(), Some(16 + 8 + 2), "{fab}");
    assert_eq!(fab["compute_ports"].as_u64(), Some(16 + 2), "{fab}");
    assert!(svg.is_file());

    // by hand: the same net file in a fresh ibsim, opensm with the engine, then eval --dumps
    let net_text = std::fs::read_to_string(Path::new(&work).join("fabric.net")).unwrap();
    let cn = Path::new(&work).join("cn_guids");
    let fabric = ibsim::parse_net(&net_text, "fabric.net", ibsim::NetOptions::default()).unwrap();
    for (label, engine, qos) in [
        ("minhop", "minhop", true),
        ("dfsssp-rs (QoS on)", "dfsssp-rs", true),
        ("dfsssp-rs (QoS off)", "dfsssp-rs", false),
    ] {
        let sim = Sim::start_net("cmp-osm", &fabric, &net_text);
        let run = sim.opensm(&OpenSm::new(engine).qos(qos));
        run.assert_configured_by(engine);
        let out = Command::new(env!("CARGO_BIN_EXE_dfsssp-rs"))
            .args([
                "eval",
                "--dumps",
                p(sim.dir()),
                "--patterns",
                "64",
                "--quiet",
                "--json",
            ])
            .args(["--cn-guids", p(&cn)])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let hand: Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = run_of(&v, label);
        assert_eq!(r["status"], "ok", "{label}: {r}");
        assert_eq!(r["used"], engine, "{label}");
        let ev = &r["evaluation"];
        assert!(
            ev["metrics"]["bisection"]["lambda"].as_f64().unwrap() > 0.0,
            "{label}"
        );
        assert!(
            ev["classes"]["compute"]["lambda"].as_f64().unwrap() > 0.0,
            "{label}"
        );
        assert_eq!(
            ev["metrics"]["bisection"]["lambda"], hand["metrics"]["bisection"]["lambda"],
            "{label}: Λ"
        );
        assert_eq!(
            ev["classes"]["compute"]["lambda"], hand["classes"]["compute"]["lambda"],
            "{label}: Λ of compute ports"
        );
        for key in ["efi", "hops", "connectivity"] {
            assert_eq!(ev["metrics"][key], hand["metrics"][key], "{label}: {key}");
        }
        assert_eq!(
            ev["deadlock"]["deadlock_free"], hand["deadlock"]["deadlock_free"],
            "{label}"
        );
        assert_eq!(
            r["lanes"]["deadlock_free"],
            hand["deadlock"]["deadlock_free"]
        );
        if engine == "dfsssp-rs" {
            assert_eq!(
                r["lanes"]["count"], hand["deadlock"]["lanes_used"],
                "{label}"
            );
            assert_eq!(r["lanes"]["source"], "path-SL dump");
        }
        assert!(r["peak_rss_kib"].as_u64().unwrap() > 1000, "{r}");
        assert!(r["routing_s"].as_f64().is_some(), "{r}");
    }
    std::fs::remove_dir_all(&work).unwrap();

    // the table says the same, and ends with the recommendation
    let (ok, table, se) = cli(&common_args);
    assert!(ok, "{se}");
    let minhop_l = run_of(&v, "minhop")["lambda"].as_f64().unwrap();
    let row = table
        .lines()
        .find(|l| l.starts_with("minhop "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(&format!("{minhop_l:.4}")), "{row}\n{table}");
    assert!(table.contains("recommended opensm.conf lines"), "{table}");
    assert!(table.contains("routing_engine "), "{table}");
    assert!(table.contains("why:"), "{table}");
}

/// ftree on a torus gives up and OpenSM routes with minhop: reported as a fallback, judged as
/// minhop's routes, never recommended.
#[test]
fn fallback_to_minhop_reported() {
    let (_d, dump) = dump_of("torus:4x4,1", "torus.topo");
    let (ok, so, se) = compare_json(&dump, "ftree,minhop,dfsssp,dfsssp-rs", &[]);
    assert!(ok, "{se}");
    let v: Value = serde_json::from_str(&so).unwrap();
    let ftree = run_of(&v, "ftree");
    assert_eq!(ftree["status"], "fallback", "{ftree}");
    assert_eq!(ftree["requested"], "ftree");
    assert_eq!(ftree["used"], "minhop");
    assert!(
        ftree["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{ftree}"
    );
    assert_eq!(ftree["sound"], false);
    // judged as minhop's routes: the same numbers as the minhop run
    let minhop = run_of(&v, "minhop");
    assert_eq!(ftree["lambda"], minhop["lambda"]);
    let rec = &v["recommendation"];
    assert!(!rec["conf_lines"].to_string().contains("ftree"), "{rec}");
    assert!(
        rec["why"]
            .to_string()
            .contains("not ftree: gave up, OpenSM used minhop"),
        "{rec}"
    );
    // stock dfsssp's SLs, which OpenSM keeps in its SA, read from the SA; ibdmchk judges its
    // CA-to-CA paths with them (the field scripts know, and the one every engine has)
    let dfsssp = run_of(&v, "dfsssp");
    assert_eq!(dfsssp["status"], "ok", "{dfsssp}");
    assert_eq!(dfsssp["stock_sls"]["deadlock_free"], true, "{dfsssp}");
    assert!(dfsssp["stock_sls"]["base_lanes"].as_u64().unwrap() >= 1);
    let sa = &dfsssp["sa_sls"];
    assert_eq!(sa["answered"], 16 * 15, "{sa}");
    assert_eq!(
        (&sa["checked"], &sa["ibdmchk"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert_eq!(dfsssp["lanes"]["deadlock_free"], true, "{dfsssp}");
    // its routes loop within one lane on the torus: only its real SLs make it deadlock-free
    assert_eq!(
        dfsssp["evaluation"]["deadlock"]["deadlock_free"], false,
        "{dfsssp}"
    );
}

/// The run directory of `label` in the kept work directory `work`.
fn run_dir(work: &str, label: &str) -> std::path::PathBuf {
    let name = label.replace([' ', '(', ')', '/'], "_");
    std::fs::read_dir(work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.get(3..) == Some(name.as_str()))
        })
        .unwrap_or_else(|| panic!("no run directory for {label} in {work}"))
}

/// Every engine's SLs come from OpenSM's SA, as applications get them (a PathRecord per CA port
/// pair), and are checked along its routes, here and by ibdmchk, alike for every engine: on a
/// torus lash and torus-2QoS, whose SLs no dump holds ("unknown" before), are judged; where
/// there are more pairs than `--sa-pairs`, a seeded sample is read, and said so.
#[test]
fn every_engines_sls_read_from_the_sa() {
    let (_d, dump) = dump_of("torus:4x4,2", "torus.topo");
    let engines = "minhop,lash,torus-2QoS,dfsssp,dfsssp-rs";
    let (ok, so, se) = compare_json(&dump, engines, &["--keep"]);
    assert!(ok, "{se}");
    let v: Value = serde_json::from_str(&so).unwrap();
    let work = kept_dir(&se);
    let pairs = 32 * 31;
    for r in v["runs"].as_array().unwrap() {
        let sa = &r["sa_sls"];
        assert!(
            sa["method"].as_str().unwrap().contains("PathRecord"),
            "{sa}"
        );
        assert_eq!(
            (&sa["pairs_total"], &sa["pairs_asked"], &sa["answered"]),
            (&pairs.into(), &pairs.into(), &pairs.into()),
            "{sa}"
        );
        assert_eq!(sa["sampled"], false, "{sa}");
        // both checks ran and agree, and the verdict is theirs
        assert!(sa["checked"].is_boolean(), "{sa}");
        assert_eq!(sa["checked"], sa["ibdmchk"], "{sa}");
        assert_eq!(r["lanes"]["deadlock_free"], sa["deadlock_free"], "{r}");
        assert!(
            !r["lanes"]["loops"].as_str().unwrap().contains("unknown"),
            "{r}"
        );
    }
    // minhop loops on the torus (one SL); lash and torus-2QoS do not, on SLs of their own
    let minhop = &run_of(&v, "minhop")["sa_sls"];
    assert_eq!(minhop["sls"], serde_json::json!([0]), "{minhop}");
    assert_eq!(minhop["deadlock_free"], false, "{minhop}");
    for e in ["lash", "torus-2QoS", "dfsssp"] {
        let r = run_of(&v, e);
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["sa_sls"]["sls"].as_array().unwrap().len() >= 2, "{r}");
        assert_eq!(r["sa_sls"]["deadlock_free"], true, "{r}");
    }
    assert_eq!(run_of(&v, "lash")["lanes"]["loops"], "no (SA SLs)");
    // ibdmchk, run here with the SA's SLs, agrees; within one lane lash's routes loop
    let lash = run_dir(&work, "lash");
    std::fs::copy(
        lash.join("opensm-path-sl-sa.dump"),
        lash.join("opensm-path-sl.dump"),
    )
    .unwrap();
    let ib = common::ibdmchk_in(&lash, true, true, 0);
    assert_eq!(ib.credit_loops, Some(false), "{}", ib.text);
    let one = common::ibdmchk_in(&lash, false, false, 0);
    assert_eq!(one.credit_loops, Some(true), "{}", one.text);
    // the SA hands out what dfsssp-rs dumped as its SLs
    let ours = run_dir(&work, "dfsssp-rs (QoS on)");
    let dumped = std::fs::read_to_string(ours.join("opensm-path-sl.dump")).unwrap();
    let dumped: std::collections::HashSet<&str> = dumped.lines().collect();
    let from_sa = std::fs::read_to_string(ours.join("opensm-path-sl-sa.dump")).unwrap();
    assert_eq!(from_sa.lines().count(), pairs);
    for l in from_sa.lines() {
        assert!(
            dumped.contains(l),
            "the SA's {l} is not in the path-SL dump"
        );
    }
    std::fs::remove_dir_all(&work).unwrap();

    // more pairs than --sa-pairs: a seeded sample, checked by us alone (ibdmchk wants them all)
    let (ok, so, se) = compare_json(&dump, "lash", &["--sa-pairs", "100"]);
    assert!(ok, "{se}");
    let v: Value = serde_json::from_str(&so).unwrap();
    let lash = run_of(&v, "lash");
    let sa = &lash["sa_sls"];
    assert_eq!(
        (
            &sa["sampled"],
            &sa["pairs_asked"],
            &sa["answered"],
            &sa["seed"]
        ),
        (&true.into(), &100.into(), &100.into(), &1.into()),
        "{sa}"
    );
    assert_eq!(
        (&sa["checked"], &sa["ibdmchk"]),
        (&true.into(), &Value::Null)
    );
    assert_eq!(
        lash["lanes"]["loops"], "no (SA SLs, a sample of 100 of 992 pairs)",
        "{lash}"
    );
}

/// A real torus carries no coordinates in its switches' descriptions: it is recognised from its
/// cables, and torus-2QoS gets the torus-2QoS.conf it needs (without one it cannot run at all).
#[test]
fn torus_recognised_from_its_cables() {
    let d = tempfile::tempdir().unwrap();
    let dump = d.path().join("torus.topo");
    let text = ibnetdiscover::write(&by_name("torus:4x4x4,2").unwrap());
    // The generator's "torus X,Y,Z" descriptions replaced by what a vendor prints.
    let text: String = text
        .split('"')
        .enumerate()
        .map(|(i, part)| match i % 2 == 1 && part.starts_with("torus ") {
            true => "MF0;sw:SX6036/U1",
            false => part,
        })
        .collect::<Vec<_>>()
        .join("\"");
    assert!(!text.contains("\"torus "));
    std::fs::write(&dump, text).unwrap();
    let (ok, so, se) = compare_json(&dump, "torus-2QoS,dfsssp-rs", &[]);
    assert!(ok, "{se}");
    let v: Value = serde_json::from_str(&so).unwrap();
    assert!(
        v["notes"]
            .to_string()
            .contains("torus recognised from the cables"),
        "{}",
        v["notes"]
    );
    let t = run_of(&v, "torus-2QoS");
    assert_eq!(t["status"], "ok", "{t}");
    assert_eq!(
        (t["unreachable"].as_u64(), t["used"].as_str()),
        (Some(0), Some("torus-2QoS")),
        "{t}"
    );
}

/// nue by default makes only the paths to CAs deadlock-free: on a fat tree with aggregation
/// nodes its loops need paths to switch LIDs. The table says so (a caveat, not "credit loops"),
/// agreeing with ibdmchk on the CA-to-CA paths, and runs nue again with switch LIDs included,
/// whose recommendation carries the line it needs.
#[test]
fn nue_judged_by_its_own_promise_and_rerun_with_switch_lids() {
    let (_d, dump) = dump_of("ktree:4,3,aggr", "sharp.topo");
    let (ok, so, se) = compare_json(&dump, "nue", &["--keep"]);
    assert!(ok, "{se}");
    let v: Value = serde_json::from_str(&so).unwrap();
    let work = kept_dir(&se);
    let nue = run_of(&v, "nue");
    assert_eq!(nue["status"], "ok", "{nue}");
    let lanes = &nue["lanes"];
    assert_eq!(lanes["management_only"], true, "{lanes}");
    assert_eq!(lanes["deadlock_free"], true, "CA-to-CA paths: {lanes}");
    assert!(
        lanes["loops"]
            .as_str()
            .unwrap()
            .starts_with("switch LIDs only"),
        "{lanes}"
    );
    // ibdmchk checks CA-to-CA paths only: no loop there either
    let ib = common::ibdmchk_in(&Path::new(&work).join("00-nue"), false, false, 0);
    assert_eq!(ib.credit_loops, Some(false), "{}", ib.text);
    // and so do both checks with the SLs the SA hands out for every CA port pair (one SL),
    // aggregation nodes included
    let sa = &nue["sa_sls"];
    let ca_ports = v["fabric"]["ca_ports"].as_u64().unwrap();
    assert_eq!(ca_ports, 64 + 48, "{}", v["fabric"]);
    assert_eq!(sa["answered"], ca_ports * (ca_ports - 1), "{sa}");
    assert_eq!(sa["sls"], serde_json::json!([0]), "{sa}");
    assert_eq!(
        (&sa["checked"], &sa["ibdmchk"]),
        (&true.into(), &true.into()),
        "{sa}"
    );
    let again = run_of(&v, "nue (nue_include_switches TRUE)");
    assert_eq!(again["status"], "ok", "{again}");
    assert_eq!(again["lanes"]["loops"], "no", "{again}");
    assert_eq!(again["lanes"]["management_only"], false, "{again}");
    let rec = &v["recommendation"];
    assert_eq!(rec["engine"], "nue (nue_include_switches TRUE)", "{rec}");
    let conf = rec["conf_lines"].to_string();
    assert!(conf.contains("routing_engine nue"), "{conf}");
    assert!(conf.contains("nue_include_switches TRUE"), "{conf}");
    std::fs::remove_dir_all(&work).unwrap();
}

/// A dump that cannot be used: refused with its line, before any program starts; exit status 1.
#[test]
fn unusable_dump_refused_with_its_line() {
    let d = tempfile::tempdir().unwrap();
    let dump = d.path().join("bad.topo");
    let text = ibnetdiscover::write(&by_name("fattree2:4").unwrap());
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(9, "Swich\t8 \"S-0000000000000001\"");
    std::fs::write(&dump, lines.join("\r\n")).unwrap();
    let (ok, so, se) = cli(&["compare", "--in-opensm", p(&dump), "--quiet"]);
    assert!(!ok);
    assert!(so.is_empty(), "{so}");
    assert!(se.contains("bad.topo:10") && se.contains("Swich"), "{se}");
}
