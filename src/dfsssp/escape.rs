//! The escape when cycle breaking needs more layers than the budget: the last layer is reserved
//! for Up*/Down* routes (seed 004 §III-D), and destinations whose paths do not fit in the other
//! layers are re-routed with balanced Up*/Down* trees, all their paths on the escape layer.
//!
//! Then *reclaiming*: destination by destination (those with the fewest overflowing paths first),
//! the minimal SSSP tree is tried again. Each of its paths goes to a layer whose CDG stays acyclic
//! with it (first its parent's layer, so usually a single new dependency edge is checked, then the
//! others, the escape layer included), checked incrementally with a dynamic topological order per
//! layer ([`super::dyntopo`]). If every path fits, the destination gets its minimal routes back;
//! otherwise everything is rolled back and it stays on Up*/Down*. The escape layer only ever
//! accepts edges that keep it acyclic together with all Up*/Down* routes still in it, so whatever
//! the order of attempts, every layer stays deadlock-free.

use crate::fabric::{SwitchGraph, NONE};
use crate::routing::{Routing, SwitchLidTable};
use crate::sssp::{routing_order, Balancer, SwitchDistances};
use crate::updown::{UpDown, UpDownRouter};

use super::cdg::{topological_order, DestTree, EdgeIndex};
use super::dyntopo::{DynTopo, TopoScratch};
use super::{fault_error, DfssspError};

pub(crate) struct EscapeCtx<'a> {
    pub g: &'a SwitchGraph,
    pub ei: &'a EdgeIndex,
    /// The original (SSSP) routes, destination-major.
    pub cols: &'a [u8],
    pub weight: &'a [u32],
    pub comp: &'a [u32],
    pub dist: &'a SwitchDistances,
    pub reclaim: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct EscapeOutcome {
    pub roots: Vec<u32>,
    /// Destinations first put on Up*/Down*.
    pub initial: usize,
    /// Of those, how many got their minimal routes back.
    pub reclaimed: usize,
    /// Destinations left on Up*/Down*.
    pub escape_dests: usize,
    /// Routed (switch, LID) pairs of those destinations, and how many are minimal anyway.
    pub escape_routes: u64,
    pub escape_minimal: u64,
}

/// Layers `0..budget-1` hold the cycle-broken paths (`counts` of every layer phase A used); paths
/// at layer `budget-1` or above overflow. Rewrites the LFT, hops and layers of the escape
/// destinations and leaves every layer acyclic.
pub(crate) fn run(
    ctx: &EscapeCtx,
    routing: &mut Routing,
    layers: &mut SwitchLidTable,
    mut counts: Vec<Vec<u32>>,
    budget: u8,
) -> Result<EscapeOutcome, DfssspError> {
    let EscapeCtx {
        g,
        ei,
        cols,
        weight,
        ..
    } = *ctx;
    let ns = g.num_switches();
    let nd = g.dests.len();
    let esc_layer = budget - 1;
    let e = usize::from(esc_layer);
    let prio_from = esc_layer.max(1);
    let col = |di: usize| &cols[di * ns..(di + 1) * ns];

    // Which destinations overflow, and by how many paths (the reclaim order).
    let mut esc = vec![false; nd];
    let mut prio = vec![0u32; nd];
    for (di, d) in g.dests.iter().enumerate() {
        if d.switch == NONE {
            continue;
        }
        for s in 0..ns as u32 {
            let l = layers.get(s, d.lid);
            esc[di] |= l >= esc_layer;
            prio[di] += u32::from(l >= prio_from);
        }
    }

    // Take the escape destinations' paths out of the kept layers.
    counts.truncate(e);
    let mut tree = DestTree::new(ns);
    let mut load = vec![0u64; g.num_channels()];
    for (di, d) in g.dests.iter().enumerate() {
        if d.switch == NONE {
            continue;
        }
        let c = col(di);
        tree.build_from_ports(g, d, |s| c[s as usize], ctx.comp)
            .map_err(|f| fault_error(g, d.lid, f))?;
        if esc[di] {
            let mut mask = 0u32;
            for &s in &tree.order {
                let l = layers.get(s, d.lid);
                if l < esc_layer {
                    mask |= 1 << l;
                }
            }
            for l in 0..e {
                if mask & (1 << l) != 0 {
                    let lv = l as u8;
                    tree.apply(
                        g,
                        ei,
                        &mut counts[l],
                        |s| {
                            if layers.get(s, d.lid) == lv {
                                weight[s as usize]
                            } else {
                                0
                            }
                        },
                        false,
                    );
                }
            }
        } else {
            // Loads of the routes that stay, so escape trees balance against them as SSSP does.
            for &s in &tree.order {
                tree.sub[s as usize] = g.terminal_count[s as usize];
            }
            for &s in tree.order[1..].iter().rev() {
                let c1 = tree.next[s as usize];
                let f = tree.sub[s as usize];
                load[c1 as usize] += u64::from(f);
                tree.sub[g.chan_head[c1 as usize] as usize] += f;
            }
        }
    }
    counts.push(vec![0; ei.num_edges()]);

    // Up*/Down* trees for the escape destinations, all their paths on the escape layer.
    let ud = UpDown::new(g, ctx.dist);
    let mut out = EscapeOutcome {
        roots: ud.roots.clone(),
        ..Default::default()
    };
    let mut bal = Balancer::new(g);
    bal.load.copy_from_slice(&load);
    let mut router = UpDownRouter::new(g, &ud);
    for di in routing_order(g) {
        let di = di as usize;
        if !esc[di] {
            continue;
        }
        out.initial += 1;
        let d = g.dests[di];
        let next = router.route_dest(&mut bal, &d, &mut routing.lft, &mut routing.hops);
        tree.next.copy_from_slice(next);
        tree.link(g, d.switch)
            .map_err(|f| internal(format!("Up*/Down* tree for LID {} broken: {f:?}", d.lid)))?;
        tree.apply(g, ei, &mut counts[e], |s| weight[s as usize], true);
        for s in 0..ns as u32 {
            layers.set(s, d.lid, esc_layer);
        }
    }

    if ctx.reclaim {
        reclaim(
            ctx,
            routing,
            layers,
            &mut counts,
            &mut esc,
            &prio,
            esc_layer,
            &mut out,
        )?;
    }

    // What is left on Up*/Down*.
    for (di, d) in g.dests.iter().enumerate() {
        if !esc[di] {
            continue;
        }
        out.escape_dests += 1;
        tree.build_from_ports(g, d, |s| routing.lft.port(s, d.lid), ctx.comp)
            .map_err(|f| internal(format!("escape routes to LID {}: {f:?}", d.lid)))?;
        let to = ctx.dist.to(d.switch);
        for &s in &tree.order {
            out.escape_routes += 1;
            out.escape_minimal += u64::from(tree.depth[s as usize] == u32::from(to[s as usize]));
        }
    }
    Ok(out)
}

fn internal(msg: String) -> DfssspError {
    DfssspError::Internal(msg)
}

/// Gives escape destinations their minimal routes back wherever every path fits acyclically.
#[allow(clippy::too_many_arguments)]
fn reclaim(
    ctx: &EscapeCtx,
    routing: &mut Routing,
    layers: &mut SwitchLidTable,
    counts: &mut [Vec<u32>],
    esc: &mut [bool],
    prio: &[u32],
    esc_layer: u8,
    out: &mut EscapeOutcome,
) -> Result<(), DfssspError> {
    let EscapeCtx {
        g,
        ei,
        cols,
        weight,
        ..
    } = *ctx;
    let ns = g.num_switches();
    let e = usize::from(esc_layer);
    let mut topo = Vec::with_capacity(e + 1);
    for (l, cnt) in counts.iter().enumerate() {
        let order = topological_order(g, ei, cnt)
            .ok_or_else(|| internal(format!("layer {l} has a cycle before reclaiming")))?;
        topo.push(DynTopo::from_order(&order));
    }
    let mut sc = TopoScratch::new(g.num_channels());
    let mut tu = DestTree::new(ns);
    let mut ts = DestTree::new(ns);
    let mut pl = vec![0u8; ns];

    let mut cand: Vec<usize> = (0..esc.len()).filter(|&di| esc[di]).collect();
    cand.sort_by_key(|&di| (prio[di], g.dests[di].lid));
    for di in cand {
        let d = g.dests[di];
        let lid = d.lid;
        tu.build_from_ports(g, &d, |s| routing.lft.port(s, lid), ctx.comp)
            .map_err(|f| internal(format!("escape routes to LID {lid}: {f:?}")))?;
        tu.apply(g, ei, &mut counts[e], |s| weight[s as usize], false);
        let c = &cols[di * ns..(di + 1) * ns];
        ts.build_from_ports(g, &d, |s| c[s as usize], ctx.comp)
            .map_err(|f| fault_error(g, lid, f))?;

        let mut failed_at = None;
        for idx in 1..ts.order.len() {
            let s = ts.order[idx];
            let p = ts.parent(g, s);
            let pref = if p == ts.root { 0 } else { pl[p as usize] };
            let tries = std::iter::once(pref).chain((0..=esc_layer).filter(|&l| l != pref));
            let mut placed = false;
            for l in tries {
                let lu = usize::from(l);
                if try_add_path(
                    g,
                    ei,
                    &ts,
                    s,
                    weight[s as usize],
                    &mut counts[lu],
                    &mut topo[lu],
                    &mut sc,
                ) {
                    pl[s as usize] = l;
                    placed = true;
                    break;
                }
            }
            if !placed {
                failed_at = Some(idx);
                break;
            }
        }
        match failed_at {
            None => {
                pl[ts.root as usize] = 0;
                let last = u32::from(d.exit_port != 0);
                for s in 0..ns as u32 {
                    let port = c[s as usize];
                    routing.lft.set(s, lid, port);
                    let routed = s == ts.root || ts.next[s as usize] != NONE;
                    if routed {
                        let h = ts.depth[s as usize] + last;
                        routing.hops.set(s, lid, u8::try_from(h).unwrap_or(u8::MAX));
                        layers.set(s, lid, pl[s as usize]);
                    } else {
                        layers.set(s, lid, 0);
                    }
                }
                esc[di] = false;
                out.reclaimed += 1;
            }
            Some(upto) => {
                for &s in &ts.order[1..upto] {
                    let w = weight[s as usize];
                    let cnt = &mut counts[usize::from(pl[s as usize])];
                    ts.for_path_edges(g, ei, s, |eid| cnt[eid as usize] -= w);
                }
                // Put the Up*/Down* paths back; the order may have moved, so re-check new edges
                // (they always fit: the layer held them before).
                for &s in &tu.order {
                    tu.sub[s as usize] = weight[s as usize];
                }
                for &s in tu.order[1..].iter().rev() {
                    let c1 = tu.next[s as usize];
                    let h = g.chan_head[c1 as usize];
                    let w = tu.sub[s as usize];
                    tu.sub[h as usize] += w;
                    if h != tu.root {
                        let c2 = tu.next[h as usize];
                        let eid = ei.edge(g, c1, c2) as usize;
                        if counts[e][eid] == 0
                            && !topo[e].try_insert(g, ei, &counts[e], &mut sc, c1, c2)
                        {
                            return Err(internal(format!(
                                "restoring the Up*/Down* routes to LID {lid} closed a cycle"
                            )));
                        }
                        counts[e][eid] += w;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Adds the path from `s` (in tree `t`) to a layer if that keeps the layer acyclic.
#[allow(clippy::too_many_arguments)]
fn try_add_path(
    g: &SwitchGraph,
    ei: &EdgeIndex,
    t: &DestTree,
    s: u32,
    w: u32,
    counts: &mut [u32],
    topo: &mut DynTopo,
    sc: &mut TopoScratch,
) -> bool {
    let mut c1 = t.next[s as usize];
    let mut added = 0usize;
    let mut ok = true;
    loop {
        let h = g.chan_head[c1 as usize];
        if h == t.root {
            break;
        }
        let c2 = t.next[h as usize];
        let eid = ei.edge(g, c1, c2) as usize;
        if counts[eid] == 0 && !topo.try_insert(g, ei, counts, sc, c1, c2) {
            ok = false;
            break;
        }
        counts[eid] += w;
        added += 1;
        c1 = c2;
    }
    if !ok {
        let mut c1 = t.next[s as usize];
        for _ in 0..added {
            let c2 = t.next[g.chan_head[c1 as usize] as usize];
            counts[ei.edge(g, c1, c2) as usize] -= w;
            c1 = c2;
        }
    }
    ok
}
