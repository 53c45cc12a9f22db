//! Real samples produced on this machine (ibsim + stock OpenSM + ibnetdiscover under umad2sim;
//! see tests/data/real/README): the parsers must read them to the counts the fabrics have, and
//! the different views of one fabric (ibnetdiscover text, opensm-subnet.lst, the ibsim net file)
//! must agree.

use dfsssp_rs::fabric::{CanonicalFabric, Fabric, NodeKind, PortRef};
use dfsssp_rs::graph::SwitchGraph;
use dfsssp_rs::io::ibsim::NetOptions;
use dfsssp_rs::io::{ibnetdiscover, ibsim, osm_dump};
use dfsssp_rs::routing::walk;

fn data(name: &str) -> String {
    let p = format!("{}/tests/data/real/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// (switches, CAs, switch-switch links, all links, endpoints, max LMC)
fn counts(f: &Fabric) -> (usize, usize, usize, usize, usize, u8) {
    let sw = |p: PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    let ss = f.links().iter().filter(|l| sw(l.a) && sw(l.b)).count();
    let lmc = f.endpoints().iter().map(|e| e.lmc).max().unwrap_or(0);
    (
        f.switch_count(),
        f.terminal_node_count(),
        ss,
        f.links().len(),
        f.endpoints().len(),
        lmc,
    )
}

struct Sample {
    name: &'static str,
    lmc: u8,
    counts: (usize, usize, usize, usize, usize, u8),
}

const SAMPLES: [Sample; 3] = [
    // ibsim's example: two dual-port CAs, two parallel links between the switches
    Sample {
        name: "2sw2path4hca2port",
        lmc: 0,
        counts: (2, 2, 2, 6, 6, 0),
    },
    // generated mesh:2x2,1,par=2,lmc=1: every neighbour pair doubly linked
    Sample {
        name: "mesh2x2-par2-lmc1",
        lmc: 1,
        counts: (4, 4, 8, 12, 8, 1),
    },
    // generated fattree2:4,lmc=1 fed to ibsim as ibnetdiscover text: switches with enhanced port 0
    Sample {
        name: "fattree2-4-esp0-lmc1",
        lmc: 1,
        counts: (6, 8, 8, 16, 14, 1),
    },
];

#[test]
fn ibnetdiscover_samples_parse_to_their_counts() {
    for s in &SAMPLES {
        let text = data(&format!("{}.ibnetdiscover", s.name));
        let f = ibnetdiscover::parse(&text, s.name, NetOptions::default()).unwrap();
        assert_eq!(counts(&f), s.counts, "{}", s.name);
        if s.name.starts_with("fattree") {
            assert!(text.contains("enhanced port 0"));
        }
    }
    // spot checks on the dual-port CA sample: port GUIDs and LIDs as printed
    let f = ibnetdiscover::parse(
        &data("2sw2path4hca2port.ibnetdiscover"),
        "x",
        NetOptions::default(),
    )
    .unwrap();
    let hca1 = f.nodes().iter().position(|n| n.guid == 0x100000).unwrap() as u32;
    let mut eps: Vec<_> = f
        .endpoints()
        .iter()
        .filter(|e| e.node == hca1)
        .map(|e| (e.port, e.port_guid, e.base_lid))
        .collect();
    eps.sort();
    assert_eq!(eps, vec![(1, 0x100001, 2), (2, 0x100002, 4)]);
    assert_eq!(f.nodes()[hca1 as usize].description, "Hca1");
}

#[test]
fn subnet_lst_ibnetdiscover_and_net_file_agree() {
    for s in &SAMPLES {
        let disc = ibnetdiscover::parse(
            &data(&format!("{}.ibnetdiscover", s.name)),
            "d",
            NetOptions::default(),
        )
        .unwrap();
        let lfts = data(&format!("{}.lfts.dump", s.name));
        assert_eq!(osm_dump::infer_lmc(&lfts), Some(s.lmc), "{}", s.name);
        let lst =
            osm_dump::parse_subnet_lst(&data(&format!("{}.subnet.lst", s.name)), "lst", s.lmc)
                .unwrap();
        assert_eq!(
            disc.canonical(),
            lst.canonical(),
            "{}: ibnetdiscover vs subnet.lst",
            s.name
        );
        // the net file: ibsim's GUID counters reproduce the same GUIDs
        let net = ibsim::parse_net(
            &data(&format!("{}.net", s.name)),
            "net",
            NetOptions { lmc: s.lmc },
        )
        .unwrap();
        let CanonicalFabric {
            nodes: dn,
            links: dl,
            endpoints: de,
        } = disc.canonical();
        let CanonicalFabric {
            nodes: nn,
            links: nl,
            endpoints: ne,
        } = net.canonical();
        assert_eq!((dn, dl), (nn, nl), "{}: net file nodes and links", s.name);
        if s.name != "2sw2path4hca2port" {
            // our net files carry the LIDs, and OpenSM kept them
            assert_eq!(de, ne, "{}: LIDs", s.name);
        }
    }
}

#[test]
fn opensm_lft_dumps_route_everything() {
    for s in &SAMPLES {
        let f = osm_dump::parse_subnet_lst(&data(&format!("{}.subnet.lst", s.name)), "lst", s.lmc)
            .unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let text = data(&format!("{}.lfts.dump", s.name));
        let d = osm_dump::parse_lfts(&text, "lfts", &f, &g).unwrap();
        assert!(d.switches_missing.is_empty() && d.beyond_max_lid == 0);
        for sw in 0..g.num_switches() as u32 {
            for dest in g.dests() {
                let end = walk(&g, &d.lft, sw, dest.lid, |_| {});
                assert!(
                    end.is_ok(),
                    "{}: switch {sw} LID {}: {end:?}",
                    s.name,
                    dest.lid
                );
            }
        }
        // our writer's text reads back to the same tables
        let again =
            osm_dump::parse_lfts(&osm_dump::write_lfts(&f, &g, &d.lft), "w", &f, &g).unwrap();
        assert_eq!(again.lft, d.lft);
        // hops from walking; path-SL round trip with one layer
        let r = osm_dump::routing_from_dumps(&g, d.lft, None);
        for dest in g.dests() {
            let h = r.hops.get(dest.switch, dest.lid);
            assert_eq!(h, u8::from(dest.exit_port != 0), "{}", s.name);
        }
        let psl = dfsssp_rs::io::path_sl::to_text(&f, &g, &r);
        let nsrc = f
            .nodes()
            .iter()
            .filter(|n| n.kind != NodeKind::Switch)
            .count();
        assert_eq!(psl.lines().count(), nsrc * g.dests().len());
        let p = osm_dump::parse_path_sl(&psl, "psl", &f, &g).unwrap();
        assert!(p.conflicts.is_empty());
        assert_eq!((p.missing, p.num_layers), (0, 1));
    }
}

#[test]
fn dump_directory_loads_with_inferred_lmc() {
    let dir = tempfile::tempdir().unwrap();
    let name = "mesh2x2-par2-lmc1";
    std::fs::write(
        dir.path().join("opensm-subnet.lst"),
        data(&format!("{name}.subnet.lst")),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("opensm-lfts.dump"),
        data(&format!("{name}.lfts.dump")),
    )
    .unwrap();
    let d = osm_dump::load_dump_dir(dir.path(), None).unwrap();
    assert_eq!((d.lmc, d.has_path_sl, d.routing.num_layers), (1, false, 1));
    assert_eq!(counts(&d.fabric), (4, 4, 8, 12, 8, 1));
    // with a path-SL dump written from it
    let psl = dfsssp_rs::io::path_sl::to_text(&d.fabric, &d.graph, &d.routing);
    std::fs::write(dir.path().join("opensm-path-sl.dump"), psl).unwrap();
    let d = osm_dump::load_dump_dir(dir.path(), Some(1)).unwrap();
    assert!(d.has_path_sl && d.path_sl_conflicts.is_empty() && d.path_sl_missing == 0);
    // a broken file names itself and the line
    std::fs::write(dir.path().join("opensm-lfts.dump"), "0x0001 001\n").unwrap();
    let e = osm_dump::load_dump_dir(dir.path(), Some(1)).unwrap_err();
    assert!(e.to_string().contains("opensm-lfts.dump:1"), "{e}");
}
