use super::*;

/// Nienaber et al. Fig. 6. Node ids: m0..m4 = 0..4, s0..s5 = 10..15; links are labelled by the node
/// they lead to (the figure has no parallel links).
fn fig6() -> PathSet {
    const M: [u32; 5] = [0, 1, 2, 3, 4];
    const S: [u32; 6] = [10, 11, 12, 13, 14, 15];
    let mk =
        |nodes: &[u32]| -> Vec<Hop> { nodes.windows(2).map(|w| Hop::new(w[0], w[1])).collect() };
    let mut ps = PathSet::new();
    // p1 = m1 -> s4 -> s1 -> s0 -> m0
    ps.push(&mk(&[M[1], S[4], S[1], S[0], M[0]])).unwrap();
    // p2 = m2 -> s4 -> s3 -> s2 -> s0 -> m0
    ps.push(&mk(&[M[2], S[4], S[3], S[2], S[0], M[0]])).unwrap();
    // p3 = m4 -> s5 -> s2 -> s0 -> m0
    ps.push(&mk(&[M[4], S[5], S[2], S[0], M[0]])).unwrap();
    // p4 = m3 -> s5 -> s3 -> s1 -> s0 -> m0
    ps.push(&mk(&[M[3], S[5], S[3], S[1], S[0], M[0]])).unwrap();
    ps
}

#[test]
fn fig6_split_graph_is_fig8() {
    let ps = fig6();
    let g = SplitGraph::new(&ps);
    assert_eq!(g.num_classes(), 4);
    let edges: Vec<(usize, usize)> = (0..4)
        .flat_map(|a| (a + 1..4).map(move |b| (a, b)))
        .filter(|&(a, b)| g.splits(a, b))
        .collect();
    // p1-p2 at s4, p2-p4 at s3, p3-p4 at s5 (0-based).
    assert_eq!(edges, vec![(0, 1), (1, 3), (2, 3)]);
    assert_eq!(split_node(ps.path(0), ps.path(1)), Some(14));
    assert_eq!(split_node(ps.path(1), ps.path(3)), Some(13));
    assert_eq!(split_node(ps.path(2), ps.path(3)), Some(15));
    assert_eq!(split_node(ps.path(0), ps.path(3)), None);
    assert_eq!(split_node(ps.path(0), ps.path(2)), None);
}

#[test]
fn fig6_greedy_needs_3_color_l_needs_2() {
    let ps = fig6();
    let greedy = assign(&ps, Heuristic::Greedy);
    assert_eq!(greedy.num_lids, 3);
    // C1 = {p1, p3}, C2 = {p2}, C3 = {p4}, as the paper walks through it.
    assert_eq!(greedy.configurations(), vec![vec![0, 2], vec![1], vec![3]]);
    let cl = assign(&ps, Heuristic::ColorL);
    assert_eq!(cl.num_lids, 2);
    // p2 is picked first: C1 = {p2, p3}, C2 = {p1, p4}.
    assert_eq!(cl.configurations(), vec![vec![1, 2], vec![0, 3]]);
    for h in Heuristic::ALL {
        let a = assign(&ps, h);
        a.validate(&ps).unwrap();
        assert!(a.num_lids >= 2, "{h}");
    }
    let g = SplitGraph::new(&ps);
    assert_eq!(num_colors(&g.optimum(16, 1 << 20).unwrap()), 2);
    // color/S takes p1 first (least split), then p3: the same poor start as greedy.
    assert_eq!(assign(&ps, Heuristic::ColorS).num_lids, 3);
}

#[test]
fn lmc_rounding() {
    assert_eq!(lids_for(0), Some(1));
    assert_eq!(lids_for(1), Some(1));
    assert_eq!(lids_for(2), Some(2));
    assert_eq!(lids_for(3), Some(4));
    assert_eq!(lids_for(4), Some(4));
    assert_eq!(lids_for(5), Some(8));
    assert_eq!(lids_for(128), Some(128));
    assert_eq!(lids_for(129), None);
    assert_eq!(lmc_for(5), Some(3));
    assert_eq!(lmc_for(1), Some(0));
    let t = network_totals(vec![1, 3, 5, 2]).unwrap();
    assert_eq!((t.configurations, t.allocated), (11, 1 + 4 + 8 + 2));
    assert!(matches!(
        network_totals(vec![200]),
        Err(LidError::TooManyLids { needed: 200 })
    ));
}

#[test]
fn bad_paths_are_rejected() {
    let mut ps = PathSet::new();
    assert!(matches!(ps.push(&[]), Err(LidError::EmptyPath { path: 0 })));
    let looping = [Hop::new(1, 2), Hop::new(2, 1), Hop::new(1, 3)];
    assert!(matches!(
        ps.push(&looping),
        Err(LidError::RepeatedNode { path: 0, node: 1 })
    ));
    assert!(matches!(
        ps.push_weighted(&[Hop::new(1, 0)], 0),
        Err(LidError::ZeroWeight { .. })
    ));
    assert!(ps.is_empty());
    let a = LidAssignment {
        lid: vec![0],
        num_lids: 1,
    };
    assert!(matches!(
        a.validate(&ps),
        Err(LidError::SizeMismatch { .. })
    ));
}

#[test]
fn validate_catches_a_split_inside_one_lid() {
    let ps = fig6();
    let bad = LidAssignment {
        lid: vec![0, 0, 1, 1],
        num_lids: 2,
    };
    match bad.validate(&ps) {
        Err(LidError::SplitWithinLid {
            lid: 0,
            a: 0,
            b: 1,
            node: 14,
        }) => {}
        other => panic!("{other:?}"),
    }
    let unused = LidAssignment {
        lid: vec![0, 2, 0, 2],
        num_lids: 3,
    };
    assert!(matches!(
        unused.validate(&ps),
        Err(LidError::SplitWithinLid { .. } | LidError::UnusedLid { .. })
    ));
}

#[test]
fn identical_paths_share_a_class_and_a_lid() {
    let mut ps = PathSet::new();
    let p = [Hop::new(5, 1), Hop::new(6, 0)];
    let q = [Hop::new(5, 2), Hop::new(7, 1), Hop::new(6, 0)];
    ps.push(&p).unwrap();
    ps.push(&q).unwrap();
    ps.push_weighted(&p, 3).unwrap();
    let g = SplitGraph::new(&ps);
    assert_eq!(g.num_classes(), 2);
    assert_eq!(g.class_weight(0), 4);
    for h in Heuristic::ALL {
        let a = assign(&ps, h);
        assert_eq!(a.num_lids, 2, "{h}");
        assert_eq!(a.lid[0], a.lid[2]);
        a.validate(&ps).unwrap();
    }
}

#[test]
fn reduction_reproduces_fig4() {
    // Fig. 4 (a): edges 0-1, 0-2, 1-2, 1-3, 2-3.
    let edges = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)];
    let ps = reduction_from_graph(4, &edges).unwrap();
    let g = SplitGraph::new(&ps);
    for a in 0..4 {
        for b in 0..4 {
            let e = edges.contains(&(a, b)) || edges.contains(&(b, a));
            assert_eq!(g.splits(a, b), e, "{a}-{b}");
        }
    }
    assert_eq!(num_colors(&g.optimum(16, 1 << 20).unwrap()), 3);
}

#[test]
fn heuristic_names_parse() {
    for h in Heuristic::ALL {
        assert_eq!(h.name().parse::<Heuristic>().unwrap(), h);
    }
    assert!("nope".parse::<Heuristic>().is_err());
}
