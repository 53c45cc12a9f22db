use super::*;
use crate::fabric::{Fabric, NodeKind};
use crate::graph::SwitchDistances;
use crate::routing::walk;

fn graph(spec: &str) -> (Fabric, SwitchGraph) {
    let f = crate::topo::by_name(spec).unwrap();
    let g = SwitchGraph::new(&f).unwrap();
    (f, g)
}

/// The generator's coordinates of every switch (its description, "torus 1,2,3").
fn labels(f: &Fabric, g: &SwitchGraph) -> Vec<Vec<u32>> {
    (0..g.num_switches())
        .map(|s| {
            let desc = &f.nodes()[g.switch_node()[s] as usize].description;
            let xs = desc.split_once(' ').unwrap().1;
            xs.split(',').map(|x| x.parse().unwrap()).collect()
        })
        .collect()
}

/// Every recognised dimension is one of the generator's, up to a shift and a reflection.
fn assert_matches_generator(spec: &str, t: &TorusCoords, f: &Fabric, g: &SwitchGraph) {
    let lab = labels(f, g);
    let mut used = vec![false; lab[0].len()];
    for i in 0..t.dims() {
        let k = t.sizes[i];
        let fits = |j: usize, sign: bool| {
            let c0 = (t.of(0)[i], lab[0][j]);
            (0..g.num_switches() as u32).all(|s| {
                let (x, y) = (t.of(s)[i], lab[s as usize][j]);
                let moved = (y + k - c0.1) % k;
                let expect = if sign { c0.0 + moved } else { c0.0 + k - moved };
                x == expect % k
            })
        };
        let j = (0..lab[0].len())
            .find(|&j| !used[j] && (fits(j, true) || fits(j, false)))
            .unwrap_or_else(|| panic!("{spec}: dimension {i} is none of the generator's"));
        used[j] = true;
    }
}

#[test]
fn tori_are_recognised_with_the_generators_coordinates() {
    for (spec, shape) in [
        ("torus:6x6x6,4", "6x6x6"),
        ("torus:5x3,1", "5x3"),
        ("torus:6x6,2", "6x6"),
        ("torus:7x5x3,1,par=2", "7x5x3"),
        ("torus:6x6x6,4,shuffle=1", "6x6x6"),
        ("torus:8x6,2,shuffle=7", "8x6"),
        ("mesh:5x4,2", "5mx4m"),
        ("mesh:6x3x2,1,shuffle=2", "6mx3mx2"),
    ] {
        let (f, g) = graph(spec);
        let t = recognise(&g).unwrap_or_else(|| panic!("{spec}: not recognised"));
        let mut got: Vec<&str> = t.shape().leak().split('x').collect();
        let mut want: Vec<&str> = shape.split('x').collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{spec}");
        assert_matches_generator(spec, &t, &f, &g);
        assert_eq!(
            t.describe().ends_with(" mesh"),
            spec.starts_with("mesh"),
            "{spec}"
        );
        for s in 0..g.num_switches() as u32 {
            assert_eq!(t.switch_at(t.of(s)), s);
        }
    }
}

/// A 4-ring is read as two 2-rings: the 4x4x4 torus is the 6-cube, and so is the 6-cube.
#[test]
fn four_rings_are_read_as_two_two_rings() {
    for spec in ["torus:4x4x4,2", "hypercube:6,1", "torus:4x4x4,2,shuffle=3"] {
        let (_, g) = graph(spec);
        let t = recognise(&g).unwrap_or_else(|| panic!("{spec}: not recognised"));
        assert_eq!(t.shape(), "2x2x2x2x2x2", "{spec}");
        assert_eq!(t.describe(), "2x2x2x2x2x2 torus", "{spec}");
    }
    let (_, g) = graph("torus:4x6,1");
    assert_eq!(recognise(&g).unwrap().shape().len(), "6x2x2".len());
}

#[test]
fn other_fabrics_and_faulty_tori_are_not_tori() {
    for spec in [
        "ktree:4,3",
        "ktree:8,3",
        "fattree2:36,2:1",
        "random:64,36,16,512,seed=1",
        "random:24,8,4,40",
        "dragonfly:4,2,2,9",
        "kautz:2,3,4",
    ] {
        let (_, g) = graph(spec);
        assert!(recognise(&g).is_none(), "{spec}");
    }
    // One cable cut: with one cable per neighbour pair the pair is gone, and so is the torus;
    // with two the pair is still linked.
    for (spec, torus) in [("torus:6x6x6,4", false), ("torus:5x5,2,par=2", true)] {
        let f = crate::topo::by_name(spec).unwrap();
        let sw = |p: crate::fabric::PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
        let cable = *f.links().iter().find(|l| sw(l.a) && sw(l.b)).unwrap();
        let cut = f.retain(|_| true, |l| *l != cable);
        let g = SwitchGraph::new(&cut).unwrap();
        assert_eq!(recognise(&g).is_some(), torus, "{spec} with a cable cut");
        if torus {
            check_dimension_order(
                &g,
                &recognise(&g).unwrap(),
                &route(&g, &recognise(&g).unwrap()),
            );
        }
    }
}

/// Every route is complete, minimal, and corrects the dimensions in order.
fn check_dimension_order(g: &SwitchGraph, t: &TorusCoords, r: &Routing) {
    let dist = SwitchDistances::new(g);
    for s in 0..g.num_switches() as u32 {
        for d in g.dests() {
            let mut dims = Vec::new();
            let hops = walk(g, &r.lft, s, d.lid, |c| {
                let (a, b) = (g.chan_tail()[c as usize], g.chan_head()[c as usize]);
                dims.push((0..t.dims()).find(|&i| t.of(a)[i] != t.of(b)[i]).unwrap());
            })
            .unwrap_or_else(|e| panic!("switch {s} LID {}: {e:?}", d.lid));
            assert_eq!(
                hops,
                u32::from(dist.get(s, d.switch)),
                "switch {s} LID {}",
                d.lid
            );
            assert_eq!(
                u32::from(r.hops.get(s, d.lid)),
                hops + u32::from(d.exit_port != 0)
            );
            assert!(dims.windows(2).all(|w| w[0] <= w[1]), "{dims:?}");
        }
    }
}

#[test]
fn routes_are_minimal_and_in_dimension_order() {
    for spec in [
        "torus:6x6x6,4",
        "torus:4x4x4,2,shuffle=1",
        "torus:5x3,1,par=2",
        "mesh:5x4,2,shuffle=4",
        "torus:6x6,2,lmc=1",
    ] {
        let (_, g) = graph(spec);
        let t = recognise(&g).unwrap();
        check_dimension_order(&g, &t, &route(&g, &t));
    }
}

/// CA-to-CA routes load every channel along a dimension alike: the half-way ties of even rings
/// split evenly both ways, and parallel links share the load (evenly with four CAs a switch;
/// with fewer, destinations that ties send one way may share a link).
#[test]
fn ties_and_parallel_links_spread_the_load_evenly() {
    for spec in [
        "torus:6x6,4",
        "torus:6x4x3,2,shuffle=5",
        "torus:6x6,4,par=2",
        "torus:8x6,4,par=2,shuffle=1",
    ] {
        let (f, g) = graph(spec);
        let t = recognise(&g).unwrap();
        let r = route(&g, &t);
        let mut load = vec![0u64; g.num_channels()];
        for &(_, s) in g.terminals() {
            for &(e, _) in g.terminals() {
                let lid = f.endpoints()[e as usize].base_lid;
                walk(&g, &r.lft, s, lid, |c| load[c as usize] += 1).unwrap();
            }
        }
        // Per dimension: every channel along it carries the same load.
        let mut per_dim: Vec<Vec<u64>> = vec![Vec::new(); t.dims()];
        for (c, &l) in load.iter().enumerate() {
            let (a, b) = (g.chan_tail()[c], g.chan_head()[c]);
            let i = (0..t.dims()).find(|&i| t.of(a)[i] != t.of(b)[i]).unwrap();
            per_dim[i].push(l);
        }
        for (i, l) in per_dim.iter().enumerate() {
            let (lo, hi) = (l.iter().min().unwrap(), l.iter().max().unwrap());
            assert_eq!(lo, hi, "{spec}: dimension {i} of {}", t.shape());
        }
    }
}
