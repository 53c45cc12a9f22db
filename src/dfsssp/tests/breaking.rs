//! Cycle breaking's incremental bookkeeping and the dynamic topological order, each checked
//! against a recount or a full sort.

use super::*;

/// Cycle breaking's inputs for a fabric's SSSP routes, and a run of it to the end.
pub(super) struct BreakFixture {
    pub(super) g: SwitchGraph,
    pub(super) r: Routing,
    pub(super) comp: Vec<u32>,
    pub(super) weight: Vec<u32>,
    pub(super) ei: EdgeIndex,
    pub(super) cols: Vec<u8>,
    c0: Vec<u32>,
}

/// What a run of cycle breaking leaves: whether it cut in batches, the path layers (switch-major)
/// and the destinations with a moved path, every layer's counts, cuts and moved paths.
pub(super) struct BreakOutcome {
    pub(super) batched: bool,
    pub(super) layers: SwitchLidTable,
    pub(super) touched: Vec<u32>,
    pub(super) counts: Vec<Vec<u32>>,
    pub(super) cuts: u64,
    pub(super) moved: u64,
}

impl BreakFixture {
    pub(super) fn new(f: &Fabric) -> Self {
        let g = SwitchGraph::new(f).unwrap();
        let r = sssp::route(&g);
        let comp = g.components();
        let weight: Vec<u32> = g.terminal_count().iter().map(|&t| t + 1).collect();
        let ei = EdgeIndex::new(&g);
        let (cols, c0) = {
            let prep = Prepared::new(&g, &DfssspOptions::default(), None);
            let mut r = r.clone();
            let routes = WorkingRoutes::new(&prep, &mut r).unwrap();
            (routes.cols, routes.counts0)
        };
        BreakFixture {
            g,
            r,
            comp,
            weight,
            ei,
            cols,
            c0,
        }
    }

    /// Breaks layer after layer until one is acyclic, the breaker set up by `setup`.
    pub(super) fn run(&self, setup: impl FnOnce(&mut Breaker)) -> BreakOutcome {
        self.run_with(TreeIndex::build(&self.g, &self.cols), setup)
    }

    /// [`Self::run`] over the tree index `trees`, from the breaker's first layer on.
    pub(super) fn run_with(
        &self,
        trees: TreeIndex,
        setup: impl FnOnce(&mut Breaker),
    ) -> BreakOutcome {
        let g = &self.g;
        let mut br = Breaker::new(
            g,
            &self.ei,
            &self.r.lft,
            &self.cols,
            &self.weight,
            self.c0.clone(),
            trees,
        );
        setup(&mut br);
        let mut i = br.first_layer();
        while br.break_layer(i) > 0 {
            i += 1;
        }
        let batched = br.batched();
        let b = br.finish();
        let mut layers = SwitchLidTable::new(g.num_switches(), self.r.lft.max_lid, 0);
        layers_from_dest_major(g, &b.dest_layers, &b.moved_dests, &mut layers);
        BreakOutcome {
            batched,
            layers,
            touched: b.moved_dests,
            counts: b.counts,
            cuts: b.cuts,
            moved: b.moved_paths,
        }
    }
}

/// Whether two runs of cycle breaking left the same layers, counts, cuts and moves.
pub(super) fn same_breaking(g: &SwitchGraph, a: &BreakOutcome, b: &BreakOutcome) -> bool {
    (a.counts == b.counts && a.cuts == b.cuts && a.moved == b.moved)
        && (0..g.num_switches() as u32).all(|s| a.layers.row(s) == b.layers.row(s))
}

/// The incremental counts of cycle breaking, exact or in batches, equal a recount from the final
/// layer assignment, and every layer is acyclic.
#[test]
fn breaking_counts_stay_consistent() {
    for (f, batched) in [
        grid(&[4, 4], true, 2),
        random(30, 45, 1, 5),
        grid(&[3, 3, 3], true, 1),
        random(60, 110, 2, 17),
    ]
    .into_iter()
    .flat_map(|f| [(f.clone(), false), (f, true)])
    {
        let fx = BreakFixture::new(&f);
        let (g, ei) = (&fx.g, &fx.ei);
        let out = fx.run(|br| {
            br.cutting = if batched {
                Cutting::Batched
            } else {
                Cutting::Exact
            }
        });
        assert!(out.counts.len() >= 2, "the fabric should need layers");
        assert!(out.cuts > 0 && out.moved > 0 && !out.touched.is_empty());
        let mut tree = DestTree::new(g.num_switches());
        let mut recount = vec![vec![0u32; ei.num_edges()]; out.counts.len()];
        for (di, d) in g.dests().iter().enumerate() {
            let ns = g.num_switches();
            let col = &fx.cols[di * ns..(di + 1) * ns];
            tree.build_from_ports(g, d, |s| col[s as usize], &fx.comp)
                .unwrap();
            for (l, rc) in recount.iter_mut().enumerate() {
                tree.apply(
                    g,
                    ei,
                    rc,
                    |s| {
                        if usize::from(out.layers.get(s, d.lid)) == l {
                            fx.weight[s as usize]
                        } else {
                            0
                        }
                    },
                    cdg::CountChange::Add,
                );
            }
        }
        assert_eq!(out.counts, recount);
        for c in &out.counts {
            assert!(topological_order(g, ei, c).is_some());
        }
    }
}

/// A torus and two random fabrics whose minimal routes close cycles: cycle breaking cuts.
fn small_cyclic_fabrics() -> [Fabric; 3] {
    [
        grid(&[4, 4], true, 2),
        random(30, 45, 1, 5),
        random(40, 70, 2, 11),
    ]
}

/// Finding the paths behind a cut edge from per-edge destination lists (large fabrics) gives
/// exactly what scanning the LFT rows gives (small ones).
#[test]
fn breaking_edge_lists_match_row_scans() {
    for f in small_cyclic_fabrics() {
        let fx = BreakFixture::new(&f);
        let scan = fx.run(|br| br.list_ratio = usize::MAX);
        let list = fx.run(|br| br.list_ratio = 0);
        assert!(scan.cuts > 0);
        assert!(same_breaking(&fx.g, &scan, &list));
    }
}

/// With destinations lifted above layer 0 only their paths can move, and a tree index with rows
/// for them alone breaks cycles exactly as one with every destination's rows: same layers,
/// counts, cuts and moves, cutting exactly (edge lists or row scans) or in batches.
#[test]
fn lifted_destinations_need_only_their_own_trees() {
    for f in small_cyclic_fabrics() {
        let fx = BreakFixture::new(&f);
        let (g, ei) = (&fx.g, &fx.ei);
        let ns = g.num_switches();
        let lifted: Vec<usize> = (0..g.dests().len())
            .filter(|&di| di % 2 == 1 && g.dests()[di].switch != NO_SWITCH)
            .collect();
        let mut counts = vec![0u32; ei.num_edges()];
        let mut tree = DestTree::new(ns);
        for &di in &lifted {
            let col = &fx.cols[di * ns..(di + 1) * ns];
            tree.build_from_ports(g, &g.dests()[di], |s| col[s as usize], &fx.comp)
                .unwrap();
            let w = |s: u32| fx.weight[s as usize];
            tree.apply(g, ei, &mut counts, w, cdg::CountChange::Add);
        }
        let is_lifted = |di: usize| lifted.binary_search(&di).is_ok();
        for (cutting, list_ratio) in [
            (Cutting::Exact, 0),
            (Cutting::Exact, usize::MAX),
            (Cutting::Batched, 0),
        ] {
            let setup = |br: &mut Breaker| {
                br.cutting = cutting;
                br.list_ratio = list_ratio;
                br.lift(&lifted, counts.clone());
            };
            let every = fx.run_with(TreeIndex::build(g, &fx.cols), setup);
            let only = fx.run_with(TreeIndex::build_for(g, &fx.cols, is_lifted), setup);
            assert!(
                every.cuts > 0,
                "{cutting:?}: the lifted paths should close cycles"
            );
            assert!(same_breaking(g, &every, &only), "{cutting:?}, {list_ratio}");
            assert!(only.touched.iter().all(|&di| is_lifted(di as usize)));
        }
    }
}

/// One layer of a random fabric's CDG, edges added and removed by hand, with a dynamic order
/// whose every answer is checked against a full topological sort.
struct OrderFixture {
    g: SwitchGraph,
    ei: EdgeIndex,
    counts: Vec<u32>,
    topo: dyntopo::DynTopo,
    sc: dyntopo::TopoScratch,
}

impl OrderFixture {
    fn new() -> Self {
        let g = SwitchGraph::new(&random(12, 14, 0, 9)).unwrap();
        let ei = EdgeIndex::new(&g);
        let order: Vec<u32> = (0..g.num_channels() as u32).collect();
        OrderFixture {
            counts: vec![0; ei.num_edges()],
            topo: dyntopo::DynTopo::from_order(&order),
            sc: dyntopo::TopoScratch::default(),
            g,
            ei,
        }
    }

    /// A random dependency edge (two consecutive channels).
    fn random_edge(&self, rng: &mut ChaCha8Rng) -> (u32, u32) {
        let c1 = rng.gen_range(0..self.g.num_channels() as u32);
        let outs = self.g.out_channels(self.g.chan_head()[c1 as usize]);
        (c1, rng.gen_range(outs.start..outs.end))
    }

    fn count(&mut self, (c1, c2): (u32, u32)) -> &mut u32 {
        &mut self.counts[self.ei.edge(&self.g, c1, c2) as usize]
    }

    /// Asks for edge `c1 -> c2` (absent), checks the answer against a full topological sort
    /// with the edge added, and adds it when accepted. `None`: the edge is present already.
    fn insert(&mut self, (c1, c2): (u32, u32)) -> Option<bool> {
        if *self.count((c1, c2)) > 0 {
            return None;
        }
        *self.count((c1, c2)) = 1;
        let cyclic = topological_order(&self.g, &self.ei, &self.counts).is_none();
        *self.count((c1, c2)) = 0;
        let (g, ei) = (&self.g, &self.ei);
        let ok = self.topo.try_insert(
            g,
            ei,
            &self.counts,
            &mut self.sc,
            dyntopo::DepEdge { from: c1, to: c2 },
            usize::MAX,
        );
        assert_eq!(ok, !cyclic, "edge {c1} -> {c2}");
        if ok {
            *self.count((c1, c2)) = 1;
        }
        Some(ok)
    }
}

#[test]
fn dynamic_topological_order_matches_brute_force() {
    // Random edge insertions into one layer of a random fabric's CDG; refused edges are exactly
    // those that would close a cycle.
    let mut fx = OrderFixture::new();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..400 {
        match fx.insert(fx.random_edge(&mut rng)) {
            Some(true) => accepted += 1,
            Some(false) => refused += 1,
            None => {}
        }
    }
    assert!(accepted > 20 && refused > 5, "{accepted} {refused}");
}

#[test]
fn dynamic_topological_order_with_removals_matches_brute_force() {
    // Insertions, removals and refused edges asked again: a refusal remembered with its witness
    // path must be forgotten once an edge of that path is gone.
    let mut fx = OrderFixture::new();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut present: Vec<(u32, u32)> = Vec::new();
    let mut refused: Vec<(u32, u32)> = Vec::new();
    let (mut asked_again_ok, mut asked_again_refused) = (0, 0);
    for _ in 0..3000 {
        let op = rng.gen_range(0..10);
        let (edge, again) = if op < 3 && !present.is_empty() {
            let edge = present.swap_remove(rng.gen_range(0..present.len()));
            *fx.count(edge) = 0;
            continue;
        } else if op < 6 && !refused.is_empty() {
            (refused.swap_remove(rng.gen_range(0..refused.len())), true)
        } else {
            (fx.random_edge(&mut rng), false)
        };
        let Some(ok) = fx.insert(edge) else {
            continue;
        };
        if ok {
            present.push(edge);
        } else {
            refused.push(edge);
        }
        match (again, ok) {
            (true, true) => asked_again_ok += 1,
            (true, false) => asked_again_refused += 1,
            _ => {}
        }
    }
    assert!(
        asked_again_ok > 20 && asked_again_refused > 20,
        "{asked_again_ok} {asked_again_refused}"
    );
}
