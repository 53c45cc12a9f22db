//! Routes to switch LIDs re-chosen so they close no cycle in layer 0.
//!
//! On fat trees the routes between CAs go up, then down, and their CDG is acyclic. Routes to a
//! switch's own LID are different: a minimal route from one top switch to another must go down and
//! up again (a *valley*), and balanced choices of those valleys (top A via pod 1 to top B, top B via
//! pod 2 to top A) close cycles with the CA routes. Pure DFSSSP then needs extra layers for
//! management traffic (3 on an 18-ary 3-tree, where stock OpenSM's dfsssp, by the luck of its
//! tie-breaking, needs 1).
//!
//! So before cycle breaking, when the CA routes alone are acyclic, every switch-LID destination is
//! routed again, switch by switch from the destination outwards (the order of distance), on a
//! minimal channel whose new dependency keeps layer 0 acyclic: the SSSP choice when it fits, else
//! another minimal channel, checked incrementally with a dynamic topological order
//! ([`super::dyntopo`]). A destination where some switch has no such channel keeps its SSSP tree and
//! is left to cycle breaking. CA routes never change; switch-LID routes stay minimal (hops are
//! unchanged), only their balance may suffer, which matters little for management traffic.
//!
//! **Cost.** [`fit`]: the CA routes' CDG where the caller has not kept it, a minimality check and
//! a recount at the end (each `O(S)` per switch LID), a topological order, `O(C + E)` for the
//! E ≤ C·radix dependency edges, and copies of the E 4-byte counters. Per switch LID, `O(S + C)`
//! to order its switches and scan their minimal channels, and at most one cycle check per
//! candidate channel: free where the order already agrees, else two searches of at most
//! `SEARCH_LIMIT` + 1 channels and their ≤ radix edges each, so `O(C·SEARCH_LIMIT·radix)` per
//! switch LID at worst. [`fit_updown`]: `O(S + C)` per switch LID once an orientation is chosen
//! (at most 24 candidate roots per component, each orientation measured over the E edges).

use rayon::prelude::*;

use crate::balance::{write_dest, Balancer};
use crate::graph::order_by_distance;
use crate::graph::{Dest, NO_CHANNEL, NO_SWITCH};
use crate::updown::{best_roots, UpDown, UpDownRouter};

use super::cdg::{topological_order, CountChange, DestTree};
use super::dyntopo::{DepEdge, DynTopo, TopoScratch};
use super::prepared::{add_counts, Prepared, UnfittedDests, WorkingRoutes};
use super::{fault_error, DfssspError};

/// How many channels one incremental cycle check may visit before it refuses the dependency.
/// Small: on three-level fat trees most valleys do not fit, and each refusal would otherwise
/// search far (18-ary 3-tree: 6 s with 4096, 0.06 s with 64); two-level trees fit all the same.
const SEARCH_LIMIT: usize = 64;

/// What re-routing switch LIDs did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SwitchDestFit {
    /// Switch-LID destinations whose routes now fit layer 0 with the CA routes.
    pub fitted: usize,
    /// Of those, how many got a route different from SSSP's at some switch.
    pub changed: usize,
    /// Switch-LID destinations left to cycle breaking.
    pub unfitted: usize,
}

/// Switch-LID destinations (indices into `g.dests()`) and the CDG counts of the CA routes.
type CaRouteCounts = (Vec<usize>, Vec<u32>);

/// The switch-LID destinations, and the layer-0 CDG `counts` without their routes (the CA
/// routes' dependencies: `known` where the caller has them); `None` when there are no switch
/// LIDs.
fn ca_route_counts(
    prep: &Prepared,
    cols: &[u8],
    counts: &[u32],
    known: Option<&[u32]>,
) -> Result<Option<CaRouteCounts>, DfssspError> {
    let g = prep.g;
    let ns = g.num_switches();
    let switch_dests: Vec<usize> = (0..g.dests().len())
        .filter(|&di| g.dests()[di].switch != NO_SWITCH && g.dests()[di].exit_port == 0)
        .collect();
    if switch_dests.is_empty() {
        return Ok(None);
    }
    if let Some(known) = known {
        return Ok(Some((switch_dests, known.to_vec())));
    }
    let mut tree = DestTree::new(ns);
    let mut ca_counts = counts.to_vec();
    for &di in &switch_dests {
        prep.count_dest(&mut tree, cols, di, &mut ca_counts, CountChange::Remove)?;
    }
    Ok(Some((switch_dests, ca_counts)))
}

/// `counts` with the routes to `dests` added, their trees read from `cols` and validated.
fn add_routes(
    prep: &Prepared,
    cols: &[u8],
    dests: &[usize],
    counts: &mut [u32],
) -> Result<(), DfssspError> {
    let mut tree = DestTree::new(prep.g.num_switches());
    for &di in dests {
        prep.count_dest(&mut tree, cols, di, counts, CountChange::Add)?;
    }
    Ok(())
}

/// `base` with the routes to `first` added, and the routes to `second` counted on their own, on
/// two threads (one more CDG-sized array, not one per thread).
fn count_apart(
    prep: &Prepared,
    cols: &[u8],
    mut base: Vec<u32>,
    first: &[usize],
    second: &[usize],
) -> Result<(Vec<u32>, Vec<u32>), DfssspError> {
    let mut other = vec![0u32; base.len()];
    let work = (first.len() + second.len()) * prep.g.num_switches();
    let (a, b) = crate::par::join(
        work,
        || add_routes(prep, cols, first, &mut base),
        || add_routes(prep, cols, second, &mut other),
    );
    a?;
    b?;
    Ok((base, other))
}

/// `ca_counts` (the layer-0 CDG of the CA routes) with the routes to the switch LIDs
/// `switch_dests` added: layer 0's CDG once the switch LIDs are re-routed (in two halves).
fn with_switch_routes(
    prep: &Prepared,
    cols: &[u8],
    ca_counts: Vec<u32>,
    switch_dests: &[usize],
) -> Result<Vec<u32>, DfssspError> {
    let (first, second) = switch_dests.split_at(switch_dests.len() / 2);
    let (mut all, other) = count_apart(prep, cols, ca_counts, first, second)?;
    add_counts(&mut all, &other);
    Ok(all)
}

/// Re-routes the switch-LID destinations of the layer-0 CDG (`routes.counts0`, all routes),
/// rewriting the LFT and the destination-major `cols` where routes change and the counts to
/// match; those left with a cycle are noted in `routes.unfitted`. Returns `None`, changing
/// nothing, when the CA routes alone already have a cycle (switch routes are not what needs the
/// layers then) or when there are no switch LIDs. `ca_counts`: the CA routes' CDG, where the
/// caller has it.
pub(crate) fn fit(
    prep: &Prepared,
    routes: &mut WorkingRoutes,
    ca_counts: Option<&[u32]>,
) -> Result<Option<SwitchDestFit>, DfssspError> {
    let (g, ei) = (prep.g, &prep.ei);
    let lft = &mut routes.routing.lft;
    let cols = &mut routes.cols[..];
    let counts = &mut routes.counts0;
    let ns = g.num_switches();
    let Some((switch_dests, ca)) = ca_route_counts(prep, cols, counts, ca_counts)? else {
        return Ok(None);
    };
    if !minimal_routes(prep, cols, &switch_dests) {
        return Ok(None);
    }
    let Some(order) = topological_order(g, ei, &ca) else {
        return Ok(None);
    };
    // `live` marks which dependencies layer 0 has; the exact counts are taken again at the end.
    let mut live = ca.clone();
    let mut topo = DynTopo::from_order(&order);
    let mut scratch = TopoScratch::default();
    let mut out = SwitchDestFit::default();
    let (mut by_dist, mut counting, mut added) = (Vec::new(), Vec::new(), Vec::new());
    let mut own_dist = Vec::new();
    let mut next = vec![NO_CHANNEL; ns];
    let (mut fitted, mut unfitted) = (Vec::new(), Vec::new());
    for &di in &switch_dests {
        let d = g.dests()[di];
        let dist: &[u16] = match prep.given_dist() {
            Some(all) => all.to(d.switch),
            None => {
                own_dist.clear();
                own_dist.extend(
                    g.bfs_distances_to(d.switch)
                        .into_iter()
                        .map(|x| u16::try_from(x).unwrap_or(u16::MAX)),
                );
                &own_dist
            }
        };
        order_by_distance(dist, &mut by_dist, &mut counting);
        let col = &cols[di * ns..(di + 1) * ns];
        next.fill(NO_CHANNEL);
        added.clear();
        let mut fits = true;
        let mut changed = false;
        for &s in by_dist.iter().skip(1) {
            let original = g.channel_at(s, col[s as usize]).unwrap_or(NO_CHANNEL);
            let minimal = g.out_channels(s).filter(|&c| {
                dist[g.chan_head()[c as usize] as usize].wrapping_add(1) == dist[s as usize]
            });
            let mut chosen = NO_CHANNEL;
            let candidates = std::iter::once(original)
                .filter(|&c| c != NO_CHANNEL)
                .chain(minimal.filter(|&c| c != original));
            for c in candidates {
                let h = g.chan_head()[c as usize];
                if h == d.switch {
                    chosen = c;
                    break;
                }
                let c2 = next[h as usize];
                let e = ei.edge(g, c, c2) as usize;
                if live[e] > 0 {
                    chosen = c;
                    break;
                }
                if topo.try_insert(
                    g,
                    ei,
                    &live,
                    &mut scratch,
                    DepEdge { from: c, to: c2 },
                    SEARCH_LIMIT,
                ) {
                    live[e] += 1;
                    added.push(e);
                    chosen = c;
                    break;
                }
            }
            if chosen == NO_CHANNEL {
                fits = false;
                break;
            }
            changed |= chosen != original;
            next[s as usize] = chosen;
        }
        if !fits {
            // Keep SSSP's tree; cycle breaking deals with it. Removing dependencies never
            // invalidates the topological order.
            for &e in &added {
                live[e] -= 1;
            }
            out.unfitted += 1;
            unfitted.push(di);
            continue;
        }
        out.fitted += 1;
        fitted.push(di);
        if changed {
            out.changed += 1;
            for &s in by_dist.iter().skip(1) {
                let port = g.chan_port()[next[s as usize] as usize];
                cols[di * ns + s as usize] = port;
                lft.set(s, d.lid, port);
            }
        }
    }
    // Layer 0 and the unfitted routes apart, then together.
    let (mut all, left) = count_apart(prep, cols, ca, &fitted, &unfitted)?;
    add_counts(&mut all, &left);
    *counts = all;
    routes.unfitted = (!unfitted.is_empty()).then_some(UnfittedDests {
        dests: unfitted,
        counts: left,
    });
    Ok(Some(out))
}

/// Whether every route to the switch LIDs `switch_dests` is minimal (each hop one closer): what
/// [`fit`] re-chooses among, in distance order, keeping the hop counts. Tables with detours (an
/// incremental re-route of a one-layer routing, read back) are left as they are.
fn minimal_routes(prep: &Prepared, cols: &[u8], switch_dests: &[usize]) -> bool {
    let g = prep.g;
    let ns = g.num_switches();
    let all = prep.dist();
    crate::par::sized(switch_dests.par_iter(), switch_dests.len() * ns).all(|&di| {
        let dist = all.to(g.dests()[di].switch);
        let col = &cols[di * ns..(di + 1) * ns];
        (0..ns as u32).all(|s| match g.channel_at(s, col[s as usize]) {
            Some(c) => dist[g.chan_head()[c as usize] as usize].wrapping_add(1) == dist[s as usize],
            None => true,
        })
    })
}

/// What routing the switch LIDs on Up*/Down* did ([`fit_updown`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SwitchDestUpDown {
    /// The Up*/Down* roots, one per connected component.
    pub roots: Vec<u32>,
    /// Switch-LID destinations whose routes were not all legal Up*/Down* routes.
    pub illegal: usize,
    /// Of those, how many now take other minimal routes, all legal.
    pub minimal: usize,
    /// Of those, how many take balanced Up*/Down* trees.
    pub updown: usize,
    /// (switch, LID) paths on those trees, and how many of them are minimal anyway.
    pub updown_routes: u64,
    pub updown_minimal: u64,
}

/// With a single lane, when re-routing among minimal routes ([`fit`]) leaves switch LIDs whose
/// routes close cycles with the CA routes: routes every switch LID by Up*/Down* rules under an
/// orientation in which every CA route is already legal, so that layer 0 is acyclic without
/// cycle breaking or an escape, and no CA route changes.
///
/// Why minimal switch routes cannot fit on three-level fat trees: a route between two
/// aggregation switches of one pod turns down-then-up at a leaf (a valley), in both directions
/// for every pair of columns and in every pod; the valleys `j1 -> j2` at a leaf of one pod and
/// `j2 -> j1` at a leaf of another close a cycle with the CA routes between those two leaves
/// through columns `j2` and `j1`, which balanced CA routes use. Rooted at a leaf switch, the
/// Up*/Down* orientation makes every CA route legal (up to a top, then down), and all valleys go
/// through the root.
///
/// Returns `None`, changing nothing, when no candidate orientation ([`UpDown::fitted`]) makes
/// every CA route legal. `dist`: all-pairs switch distances (the candidate roots and every
/// destination's order need them). Otherwise every switch-LID destination keeps its routes when they are
/// legal, else takes legal minimal routes where every switch has one (the current choice
/// first), else a balanced Up*/Down* tree ([`UpDownRouter`]); `lft`, `hops`, `cols` and
/// `counts` are rewritten to match. All routes of layer 0 are then legal, hence acyclic.
pub(crate) fn fit_updown(
    prep: &Prepared,
    routes: &mut WorkingRoutes,
    ca_counts: Option<&[u32]>,
) -> Result<Option<SwitchDestUpDown>, DfssspError> {
    let (g, ei, comp) = (prep.g, &prep.ei, &prep.comp[..]);
    let dist = prep.dist();
    let routing = &mut *routes.routing;
    let cols = &mut routes.cols[..];
    let counts = &mut routes.counts0;
    let ns = g.num_switches();
    let Some((switch_dests, ca_counts)) = ca_route_counts(prep, cols, counts, ca_counts)? else {
        return Ok(None);
    };
    let mut tree = DestTree::new(ns);
    let illegal_weight = |ud: &UpDown| ei.down_up_weight(g, ud, |e| u64::from(ca_counts[e]));
    let mut ud = UpDown::fitted(g, dist, illegal_weight);
    if illegal_weight(&ud) > 0 {
        // A fat tree with failed cables: no BFS order from one root keeps every CA route
        // legal, an order fitted to the routes' turns may.
        let turn = |c1, c2| ca_counts[ei.edge(g, c1, c2) as usize] > 0;
        let fitted = |roots: &[u32]| UpDown::with_roots_fitted(g, roots, &turn);
        ud = best_roots(g, dist, fitted, illegal_weight);
        if illegal_weight(&ud) > 0 {
            return Ok(None);
        }
    }
    let mut out = SwitchDestUpDown {
        roots: ud.roots.clone(),
        ..Default::default()
    };
    let mut bal = Balancer::new(g);
    let mut router = UpDownRouter::new(g, &ud);
    let (mut by_dist, mut counting) = (Vec::new(), Vec::new());
    let mut next = vec![NO_CHANNEL; ns];
    let mut updown = Vec::new();
    for &di in &switch_dests {
        let d = g.dests()[di];
        let col = &cols[di * ns..(di + 1) * ns];
        tree.build_from_ports(g, &d, |s| col[s as usize], comp)
            .map_err(|f| fault_error(g, d.lid, f))?;
        let legal = tree.order[1..].iter().all(|&s| {
            let p = tree.parent(g, s);
            p == d.switch || ud.legal_turn(g, tree.next[s as usize], tree.next[p as usize])
        });
        if legal {
            continue;
        }
        out.illegal += 1;
        // Legal minimal routes, switch by switch outwards, the current choice first.
        let to = dist.to(d.switch);
        order_by_distance(to, &mut by_dist, &mut counting);
        next.fill(NO_CHANNEL);
        let fits = by_dist.iter().skip(1).all(|&s| {
            let original = g.channel_at(s, col[s as usize]).unwrap_or(NO_CHANNEL);
            let minimal = g.out_channels(s).filter(|&c| {
                to[g.chan_head()[c as usize] as usize].wrapping_add(1) == to[s as usize]
            });
            let chosen = std::iter::once(original)
                .filter(|&c| c != NO_CHANNEL)
                .chain(minimal.filter(|&c| c != original))
                .find(|&c| {
                    let h = g.chan_head()[c as usize];
                    h == d.switch || ud.legal_turn(g, c, next[h as usize])
                });
            next[s as usize] = chosen.unwrap_or(NO_CHANNEL);
            chosen.is_some()
        });
        if fits {
            out.minimal += 1;
            for &s in by_dist.iter().skip(1) {
                let port = g.chan_port()[next[s as usize] as usize];
                cols[di * ns + s as usize] = port;
                routing.lft.set(s, d.lid, port);
            }
        } else {
            // Routed below, in this order (the loads they are balanced by are theirs alone).
            updown.push((di, d));
        }
    }
    out.updown = updown.len();
    let (lft, hops) = (&mut routing.lft, &mut routing.hops);
    let dests: Vec<Dest> = updown.iter().map(|&(_, d)| d).collect();
    let mut index = updown.iter().map(|&(di, _)| di);
    router.route_dests_tree(&mut bal, &dests, |d, next, t| {
        let di = index.next().expect("one index per destination");
        write_dest(g, d, next, |s| t[s as usize], lft, hops);
        let to = dist.to(d.switch);
        for (s, &c) in next.iter().enumerate() {
            if c != NO_CHANNEL {
                cols[di * ns + s] = g.chan_port()[c as usize];
                out.updown_routes += 1;
                out.updown_minimal += u64::from(u16::from(hops.get(s as u32, d.lid)) == to[s]);
            }
        }
        Ok::<(), DfssspError>(())
    })?;
    *counts = with_switch_routes(prep, cols, ca_counts, &switch_dests)?;
    Ok(Some(out))
}
