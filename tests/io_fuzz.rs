//! Fuzzing every parser with proptest: arbitrary text, lines assembled from each format's own
//! tokens, and mutated real samples. No input may panic; every error must name a line inside the
//! input (or line 1 for empty input). Cases per property: `CASES` (kept modest so `cargo test`
//! stays fast; raise PROPTEST_CASES for a longer run).

use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::graph::SwitchGraph;
use dfsssp_rs::io::ibsim::NetOptions;
use dfsssp_rs::io::{fabric_json, ibnetdiscover, ibsim, mc_groups, mcfdbs, osm_dump, IoError};
use proptest::prelude::*;

const CASES: u32 = 300;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES)
}

fn data(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/data/real/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The error must carry a line number within the text.
fn line_ok<T>(r: &Result<T, IoError>, text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        let n = text.lines().count().max(1);
        let l = e
            .line()
            .ok_or_else(|| TestCaseError::fail(format!("no line: {e}")))?;
        prop_assert!(l >= 1 && l <= n, "line {l} outside 1..={n}: {e}");
        prop_assert!(
            e.to_string().contains(&format!(":{l}")),
            "message lacks the line: {e}"
        );
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    ReplaceByte(usize, u8),
    InsertText(usize, String),
    DeleteRange(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let tokens = prop::sample::select(vec![
        "\"",
        "[",
        "]",
        "(",
        ")",
        "#",
        "0x",
        "lid ",
        "lmc ",
        "=",
        "+",
        "\n",
        "Switch 4 \"s\"\n",
        "Ca 2 \"h\"\n",
        "[1]\t\"h\"[1]",
        "switchguid=0x",
        "caguid=",
        " 255",
        "99999",
        "-1",
        "{",
        "}",
        "LID:",
        "PN:",
        "Unicast lids [0-9] of switch Lid 1 guid 0x",
        "0xffff 255",
        "\u{e9}",
    ]);
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::ReplaceByte(a, b)),
        (any::<usize>(), tokens).prop_map(|(a, t)| Mutation::InsertText(a, t.to_string())),
        (any::<usize>(), 0usize..40).prop_map(|(a, n)| Mutation::DeleteRange(a, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(text: &str, ms: &[Mutation]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for m in ms {
        let s = String::from_utf8_lossy(&bytes).into_owned();
        let mut lines: Vec<&str> = s.lines().collect();
        let nl = lines.len().max(1);
        match m {
            Mutation::DeleteLine(i) if !lines.is_empty() => {
                lines.remove(i % nl);
                bytes = lines.join("\n").into_bytes();
            }
            Mutation::DuplicateLine(i) if !lines.is_empty() => {
                let l = lines[i % nl];
                lines.insert(i % nl, l);
                bytes = lines.join("\n").into_bytes();
            }
            Mutation::SwapLines(a, b) if !lines.is_empty() => {
                lines.swap(a % nl, b % nl);
                bytes = lines.join("\n").into_bytes();
            }
            Mutation::ReplaceByte(i, b) if !bytes.is_empty() => {
                let n = bytes.len();
                bytes[i % n] = *b;
            }
            Mutation::InsertText(i, t) => {
                let at = i % (bytes.len() + 1);
                bytes.splice(at..at, t.bytes());
            }
            Mutation::DeleteRange(i, n) if !bytes.is_empty() => {
                let at = i % bytes.len();
                let end = (at + n).min(bytes.len());
                bytes.drain(at..end);
            }
            Mutation::Truncate(i) => {
                let n = bytes.len() + 1;
                bytes.truncate(i % n);
            }
            _ => {}
        }
    }
    // parsers take &str: invalid UTF-8 becomes U+FFFD as read_text would make it
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Lines assembled from the tokens of all formats, so parsers get deep rather than failing on
/// the first character.
fn token_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("".to_string()),
        "(Switch|Ca|Hca|Rt)[ \t]{1,2}[0-9]{1,3} \"[SHR]-[0-9a-f]{1,16}\"( *# \"[a-z ]{0,5}\"( (enhanced|base) port 0)?( lid [0-9]{1,5})?( lmc [0-9])?)?",
        "\\[[0-9]{1,3}\\](\\([0-9a-f]{1,16}\\))?[ \t]*\"[SHR]-[0-9a-f]{1,16}\"(\\[[0-9]{1,3}\\])?( *# lid [0-9]{1,5} lmc [0-9])?",
        "(switchguid|caguid|rtguid)[=+](0x)?[0-9a-f]{1,17}(\\([0-9a-f]{1,16}\\))?",
        "\\{ (SW|CA|Rt)(-SM)? Ports:[0-9A-F]{2} SystemGUID:[0-9a-f]{16} NodeGUID:[0-9a-f]{1,2} PortGUID:[0-9a-f]{1,2} VenID:0 DevID:0 Rev:0 \\{[a-z]{0,3}\\} LID:[0-9A-F]{4} PN:[0-9A-F]{2} \\} \\{ (SW|CA) Ports:0[1-4] SystemGUID:0 NodeGUID:[0-9a-f]{1,2} PortGUID:[0-9a-f]{1,2} VenID:0 DevID:0 Rev:0 \\{x\\} LID:000[0-9] PN:0[0-4] \\} PHY=4x",
        "Unicast lids \\[0-[0-9]{1,3}\\] of switch Lid [0-9] guid 0x[0-9a-f]{1,16} \\('s'\\):",
        "0x[0-9a-f]{1,5} [0-9]{1,3}( # x)?",
        "0x[0-9a-f]{1,16} [0-9]{1,6} [0-9]{1,3}",
        "Switch 0x[0-9a-f]{1,17}",
        "LID    : Out Port\\(s\\)",
        "0x[BCF][0-9A-F]{1,4} :( 0x[0-9A-F]{1,3} ){0,4}",
        "0x[Cc0][0-9a-f]{1,4}( vl=[0-9]{1,3})?( (send:)?(H-[0-9]|mesh|0x[0-9a-f]{1,16})(/[0-9]{1,3})?){0,4}",
        "[ -~]{0,30}",
    ];
    prop::collection::vec(line, 0..25).prop_map(|ls| ls.join("\n"))
}

fn sample_fabric() -> (Fabric, SwitchGraph) {
    let f = osm_dump::parse_subnet_lst(&data("mesh2x2-par2-lmc1.subnet.lst"), "lst", 1).unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    (f, g)
}

fn all_parsers(text: &str, f: &Fabric, g: &SwitchGraph) -> Result<(), TestCaseError> {
    line_ok(
        &ibsim::parse_net(text, "f.net", NetOptions::default()),
        text,
    )?;
    line_ok(
        &ibsim::parse_net(text, "f.net", NetOptions { lmc: 2 }),
        text,
    )?;
    line_ok(
        &ibnetdiscover::parse(text, "f.topo", NetOptions::default()),
        text,
    )?;
    line_ok(
        &osm_dump::parse_subnet_lst(text, "opensm-subnet.lst", 1),
        text,
    )?;
    line_ok(&osm_dump::parse_lfts(text, "opensm-lfts.dump", f, g), text)?;
    line_ok(
        &osm_dump::parse_path_sl(text, "opensm-path-sl.dump", f, g),
        text,
    )?;
    line_ok(&fabric_json::parse_fabric(text, "f.json"), text)?;
    line_ok(&mcfdbs::parse_mcfdbs(text, "opensm.mcfdbs", f, g), text)?;
    line_ok(&mc_groups::parse_groups(text, "groups.txt", f, g), text)?;
    let _ = osm_dump::infer_lmc(text);
    Ok(())
}

/// MFTs of two groups on the sample fabric, as opensm.mcfdbs.
fn sample_mcfdbs(f: &Fabric, g: &SwitchGraph) -> String {
    let groups =
        mc_groups::parse_groups("0xC000 H-0 H-1 H-2 H-3\n0xC001 H-0 send:H-3\n", "g", f, g)
            .unwrap();
    let r = dfsssp_rs::multicast::route_groups(
        g,
        &groups,
        &dfsssp_rs::multicast::UnicastLayers::default(),
        &dfsssp_rs::multicast::McConfig::default(),
    )
    .unwrap();
    mcfdbs::write_mcfdbs(g, &r.mfts)
}

/// The sample fabric as the plug-in's JSON run record.
fn sample_json() -> serde_json::Value {
    let (f, _) = sample_fabric();
    serde_json::json!({ "engine": "dfsssp-rs", "lanes": 8, "qos": true, "fabric": f })
}

/// Every numeric leaf of a JSON value, as a pointer (`/fabric/links/3/a/port`).
fn numeric_leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Number(_) => out.push(at),
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numeric_leaves(x, format!("{at}/{i}"), out);
            }
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                numeric_leaves(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,400}") {
        let (f, g) = sample_fabric();
        all_parsers(&text, &f, &g)?;
    }

    #[test]
    fn token_soup_never_panics(text in token_text()) {
        let (f, g) = sample_fabric();
        all_parsers(&text, &f, &g)?;
    }

    #[test]
    fn mutated_ibnetdiscover_and_net_samples(which in 0usize..6, ms in prop::collection::vec(mutation(), 1..6)) {
        let names = [
            "2sw2path4hca2port.ibnetdiscover", "mesh2x2-par2-lmc1.ibnetdiscover",
            "fattree2-4-esp0-lmc1.ibnetdiscover", "2sw2path4hca2port.net",
            "mesh2x2-par2-lmc1.net", "fattree2-4-esp0-lmc1.net",
        ];
        let text = mutate(&data(names[which]), &ms);
        line_ok(&ibnetdiscover::parse(&text, "m", NetOptions::default()), &text)?;
        line_ok(&ibsim::parse_net(&text, "m", NetOptions::default()), &text)?;
    }

    #[test]
    fn mutated_opensm_dumps(ms in prop::collection::vec(mutation(), 1..6)) {
        let (f, g) = sample_fabric();
        let lst = mutate(&data("mesh2x2-par2-lmc1.subnet.lst"), &ms);
        line_ok(&osm_dump::parse_subnet_lst(&lst, "m", 1), &lst)?;
        let lfts = mutate(&data("mesh2x2-par2-lmc1.lfts.dump"), &ms);
        line_ok(&osm_dump::parse_lfts(&lfts, "m", &f, &g), &lfts)?;
        let r = osm_dump::routing_from_dumps(&g, osm_dump::parse_lfts(&data("mesh2x2-par2-lmc1.lfts.dump"), "x", &f, &g).unwrap().lft, None);
        let psl = mutate(&dfsssp_rs::io::path_sl::to_text(&f, &g, &r), &ms);
        line_ok(&osm_dump::parse_path_sl(&psl, "m", &f, &g), &psl)?;
        let mc = mutate(&sample_mcfdbs(&f, &g), &ms);
        line_ok(&mcfdbs::parse_mcfdbs(&mc, "m", &f, &g), &mc)?;
    }

    /// Node indices, ports, LIDs, LMCs and GUIDs of a stored fabric set to values in and out of
    /// range: the loader either refuses with the file, line and field, or gives a fabric that is
    /// valid (its switch graph builds).
    #[test]
    fn mutated_fabric_json(edits in prop::collection::vec((any::<prop::sample::Index>(), prop_oneof![
        Just(0u64), Just(1), Just(2), Just(7), Just(8), Just(36), Just(255), Just(256),
        Just(0xBFFF), Just(0xC000), Just(u64::from(u32::MAX)), any::<u64>(), 0u64..40,
    ]), 1..4), pretty in any::<bool>()) {
        let mut v = sample_json();
        let mut leaves = Vec::new();
        numeric_leaves(&v, String::new(), &mut leaves);
        for (at, value) in edits {
            *v.pointer_mut(at.get(&leaves).as_str()).unwrap() = value.into();
        }
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
        let r = fabric_json::parse_fabric(&text, "dfsssp-rs-fabric.json");
        line_ok(&r, &text)?;
        if let Ok(f) = r {
            SwitchGraph::new(&f).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }

    #[test]
    fn mutated_fabric_json_text(ms in prop::collection::vec(mutation(), 1..6)) {
        let text = mutate(&serde_json::to_string_pretty(&sample_json()).unwrap(), &ms);
        line_ok(&fabric_json::parse_fabric(&text, "m"), &text)?;
    }

    #[test]
    fn topology_specs_never_panic(spec in "(ktree|xgft|fattree2|fattree3|torus|mesh|hypercube|kautz|dragonfly|random|x)?:?[0-9x,;:=a-z]{0,24}") {
        let _ = dfsssp_rs::topo::by_name(&spec);
    }
}
