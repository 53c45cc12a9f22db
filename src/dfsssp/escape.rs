//! The escape when cycle breaking needs more layers than the budget: the last layer is reserved
//! for Up*/Down* routes (Hoefler et al. §III-D). Destinations with a path that cycle breaking could not
//! fit below it get balanced Up*/Down* trees, all of whose paths go on the escape layer; their
//! SSSP paths that did fit stay counted in their layers (cycle breaking left those acyclic).
//!
//! Then *settling*, destination by destination (those with the fewest overflowing paths first):
//! the destination gets a hybrid tree. A set `A` of switches (initially only the destination's
//! switch) forwards by Up*/Down*; every other switch forwards by its minimal SSSP channel. `A` is
//! closed under Up*/Down* next hops, so a path is a minimal SSSP prefix followed, once it meets
//! `A`, by an Up*/Down* suffix; paths from `A` are pure Up*/Down*. Loop-free: SSSP hops shorten the
//! distance, Up*/Down* hops the Up*/Down* distance, and a path never leaves `A` once in it.
//! Each path not from `A` goes to a layer whose CDG stays acyclic with it (its phase-A layer first,
//! then its parent's, then the others, the escape layer included), checked incrementally with a
//! dynamic topological order per layer ([`super::dyntopo`]). Sources whose path fits nowhere join
//! `A` with their Up*/Down* path, and the destination is placed again, until everything fits. With
//! `A` = everything the destination is pure Up*/Down*, so this always ends.
//!
//! Why every layer stays acyclic: the escape layer holds the *complete* Up*/Down* tree of every
//! destination not yet settled (of the one being settled too), and only accepts other paths that
//! keep it acyclic. Pure Up*/Down* paths of a settling destination are already in it, so they need
//! no check; once a destination is settled, the Up*/Down* paths it no longer uses are removed,
//! and removing paths never creates a cycle.

use rayon::prelude::*;

use crate::balance::{routing_order, Balancer};
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{Routing, NO_PATH};
use crate::updown::{UpDown, UpDownRouter};

use super::cdg::{CountChange, DestTree};
use super::dyntopo::CountedEdges;

use super::prepared::Prepared;
use super::{fault_error, DfssspError};

mod settle;
use settle::Settler;

#[derive(Clone, Debug, Default)]
pub(crate) struct EscapeOutcome {
    pub roots: Vec<u32>,
    /// Destinations first put on Up*/Down*.
    pub initial: usize,
    /// Of those, how many got their minimal routes back entirely.
    pub reclaimed: usize,
    /// Destinations with at least one Up*/Down* hop in the end.
    pub escape_dests: usize,
    /// Routed (switch, LID) paths with at least one Up*/Down* hop, and how many are minimal anyway.
    pub escape_routes: u64,
    pub escape_minimal: u64,
}

/// Which destinations overflow (have a path at the escape layer or above), and by how many paths
/// at layer `max(esc_layer, 1)` or above (the settling order), from the path layers `dl`
/// (destination-major).
pub(crate) fn overflowing(g: &SwitchGraph, dl: &[u8], esc_layer: u8) -> (Vec<bool>, Vec<u32>) {
    let (ns, nd) = (g.num_switches(), g.dests().len());
    let prio_from = esc_layer.max(1);
    let mut esc = vec![false; nd];
    let mut prio = vec![0u32; nd];
    if ns > 0 {
        esc.par_iter_mut()
            .zip(prio.par_iter_mut())
            .zip(dl.par_chunks(ns))
            .zip(g.dests().par_iter())
            .for_each(|(((esc, prio), row), d)| {
                if d.switch != NO_SWITCH {
                    *esc = row.iter().any(|&l| l >= esc_layer);
                    *prio = row.iter().map(|&l| u32::from(l >= prio_from)).sum();
                }
            });
    }
    (esc, prio)
}

/// Every destination with a switch overflowing: what large irregular fabrics end with (random
/// 10k and 20k CAs with 8 lanes: all of them), so the escape can be prepared for it while cycle
/// breaking runs.
pub(crate) fn all_overflowing(g: &SwitchGraph) -> Vec<bool> {
    g.dests().iter().map(|d| d.switch != NO_SWITCH).collect()
}

/// What the escape sets up before settling for a set `esc` of overflowing destinations: the
/// Up*/Down* orientation, which of them keep SSSP routes that are legal Up*/Down* routes, the
/// Up*/Down* trees of the others (balanced against the routes that stay), and the escape layer's
/// dependency counts. It depends on the input routes and `esc` only, not on cycle breaking's
/// layers.
pub(crate) struct Prologue {
    esc: Vec<bool>,
    ud: UpDown,
    /// The Up*/Down* port of every switch per escape destination.
    ud_cols: Vec<u8>,
    sssp_legal: Vec<bool>,
    /// The escape layer's counts: the legal SSSP routes kept as escape routes.
    esc_counts: Vec<u32>,
    /// Per escape-layer edge, how many of the Up*/Down* trees to settle hold it.
    esc_users: Vec<u16>,
}

/// Builds the [`Prologue`] for `esc`. `cols` holds the input routes destination-major, `total`
/// the per-edge dependency count of all of them (all layers together: cycle breaking only moves
/// paths between layers). Without
/// settling (`prep.reclaim` off) the Up*/Down* trees are written into `lft_out` straight away.
pub(crate) fn prepare(
    prep: &Prepared,
    cols: &[u8],
    esc: Vec<bool>,
    total: &[u64],
    mut lft_out: Option<&mut Routing>,
) -> Result<Prologue, DfssspError> {
    let (g, ei) = (prep.g, &prep.ei);
    let weight = |s: u32| prep.weight[s as usize];
    let ns = g.num_switches();
    let nd = g.dests().len();
    let col = |di: usize| &cols[di * ns..(di + 1) * ns];
    // The orientation under which SSSP's dependencies weigh least on illegal turns, so that as
    // many SSSP routes as possible are Up*/Down* too.
    let ud = UpDown::fitted(g, prep.dist(), |ud| ei.down_up_weight(g, ud, |e| total[e]));
    let mut tree = DestTree::new(ns);
    let mut ud_cols = vec![NO_PATH; nd * ns];
    let mut sssp_legal = vec![false; nd];
    // Per destination, independently (in parallel, one contiguous share of destinations per
    // thread, each summing into its own arrays): an escape destination whose SSSP routes are all
    // legal Up*/Down* routes keeps them as its escape routes (their dependencies go on the
    // escape layer); the routes that stay load their channels, so escape trees balance against
    // them as SSSP does.
    let share = nd.div_ceil(rayon::current_num_threads()).max(1);
    let shares: Vec<Result<ShareSums, DfssspError>> = ud_cols
        .par_chunks_mut((share * ns).max(1)) // (no switches: no chunks, nothing to do)
        .zip(sssp_legal.par_chunks_mut(share))
        .enumerate()
        .map(|(k, (ud_rows, legal))| {
            let mut tree = DestTree::new(ns);
            let mut esc_counts = vec![0u32; ei.num_edges()];
            let mut load = vec![0u64; g.num_channels()];
            for (j, legal) in legal.iter_mut().enumerate() {
                let di = k * share + j;
                let d = g.dests()[di];
                if d.switch == NO_SWITCH {
                    continue;
                }
                let c = col(di);
                tree.build_from_ports(g, &d, |s| c[s as usize], &prep.comp)
                    .map_err(|f| fault_error(g, d.lid, f))?;
                *legal = esc[di]
                    && prep.reclaim
                    && tree.order[1..].iter().all(|&s| {
                        let p = tree.parent(g, s);
                        p == d.switch
                            || ud.legal_turn(g, tree.next[s as usize], tree.next[p as usize])
                    });
                if *legal {
                    tree.apply(g, ei, &mut esc_counts, weight, CountChange::Add);
                    ud_rows[j * ns..(j + 1) * ns].copy_from_slice(c);
                }
                // (Legal implies settling: without it escape destinations add no load.)
                if !esc[di] || *legal {
                    for &s in &tree.order {
                        tree.sub[s as usize] = g.terminal_count()[s as usize];
                    }
                    for &s in tree.order[1..].iter().rev() {
                        let c1 = tree.next[s as usize];
                        let f = tree.sub[s as usize];
                        load[c1 as usize] += u64::from(f);
                        tree.sub[g.chan_head()[c1 as usize] as usize] += f;
                    }
                }
            }
            Ok((esc_counts, load))
        })
        .collect();
    let (esc_counts, load) = sum_shares(shares, ei.num_edges(), g.num_channels())?;
    // Up*/Down* trees for the escape destinations, all their paths on the escape layer.
    if nd > usize::from(u16::MAX) {
        // Cannot happen: destinations are unicast LIDs.
        return Err(internal(format!("{nd} destinations")));
    }
    let mut esc_users = vec![0u16; ei.num_edges()];
    let mut bal = Balancer::new(g);
    bal.load.copy_from_slice(&load);
    let mut router = UpDownRouter::new(g, &ud);
    for di in routing_order(g) {
        let di = di as usize;
        if !esc[di] {
            continue;
        }
        if sssp_legal[di] {
            continue; // its SSSP routes are its Up*/Down* routes, counted above
        }
        let d = g.dests()[di];
        // Settling writes the LFT entries that differ from SSSP itself.
        let next = match lft_out.as_deref_mut() {
            None => router.route_dest_tree(&mut bal, &d),
            Some(r) => router.route_dest(&mut bal, &d, &mut r.lft, &mut r.hops),
        };
        let row = &mut ud_cols[di * ns..(di + 1) * ns];
        for (s, (&c, p)) in next.iter().zip(row.iter_mut()).enumerate() {
            *p = if s as u32 == d.switch {
                d.exit_port
            } else if c == NO_CHANNEL {
                NO_PATH
            } else {
                g.chan_port()[c as usize]
            };
        }
        tree.next.copy_from_slice(next);
        tree.link(g, d.switch)
            .map_err(|f| internal(format!("Up*/Down* tree for LID {} broken: {f:?}", d.lid)))?;
        tree.edge_weights(g, ei, weight, |e, _| esc_users[e] += 1);
    }
    Ok(Prologue {
        esc,
        ud,
        ud_cols,
        sssp_legal,
        esc_counts,
        esc_users,
    })
}

impl Prologue {
    /// Whether it was prepared for every destination of `esc` (and maybe more).
    fn covers(&self, esc: &[bool]) -> bool {
        self.esc.len() == esc.len() && self.esc.iter().zip(esc).all(|(&p, &e)| p || !e)
    }

    /// The prologue for `esc`, a subset of the destinations it was prepared for (ahead of cycle
    /// breaking, for every destination: most overflow on the random fabrics that cut in
    /// batches, 5,182 of 5,440 on 320 switches). The orientation and the Up*/Down* trees stay;
    /// a destination that does not overflow takes its legal SSSP routes out of the escape
    /// layer's counts, or its Up*/Down* tree out of the edges' users: O(S) each, where
    /// preparing anew routes every escape destination's Up*/Down* tree again, one after the
    /// other (65 of its 80 ms there). The trees that stay were balanced against the legal
    /// routes alone, not also against the SSSP routes of the destinations that do not overflow
    /// (which load their channels as well): the same Up*/Down* routes, balanced on slightly
    /// less, and settling then keeps what fits as always.
    fn restrict(
        mut self,
        prep: &Prepared,
        cols: &[u8],
        esc: Vec<bool>,
    ) -> Result<Prologue, DfssspError> {
        let (g, ei) = (prep.g, &prep.ei);
        let ns = g.num_switches();
        let weight = |s: u32| prep.weight[s as usize];
        let mut tree = DestTree::new(ns);
        for (di, (&now, &before)) in esc.iter().zip(&self.esc).enumerate() {
            if now || !before {
                continue;
            }
            let d = g.dests()[di];
            let legal = self.sssp_legal[di];
            let row = if legal { cols } else { &self.ud_cols };
            let row = &row[di * ns..(di + 1) * ns];
            tree.build_from_ports(g, &d, |s| row[s as usize], &prep.comp)
                .map_err(|f| fault_error(g, d.lid, f))?;
            if legal {
                tree.apply(g, ei, &mut self.esc_counts, weight, CountChange::Remove);
                self.sssp_legal[di] = false;
            } else {
                let (users, mut missing) = (&mut self.esc_users, false);
                tree.edge_weights(g, ei, weight, |e, _| match users[e].checked_sub(1) {
                    Some(n) => users[e] = n,
                    None => missing = true,
                });
                if missing {
                    return Err(internal(format!(
                        "Up*/Down* tree for LID {} not among the escape layer's users",
                        d.lid
                    )));
                }
            }
        }
        self.esc = esc;
        Ok(self)
    }
}

/// Layers `0..budget-1` hold the cycle-broken paths (`counts` of every layer phase A used, `cols`
/// the input routes destination-major); paths
/// at layer `budget-1` or above overflow. `dl` holds every path's layer destination-major
/// (`[di * S + s]`: one destination's paths are one contiguous row, read and rewritten as a
/// whole). `pre`: a [`Prologue`] prepared in advance, used if it was prepared for the
/// destinations that do overflow. Rewrites the LFT, hops and layers of the escape destinations
/// and leaves every layer acyclic.
pub(crate) fn run(
    prep: &Prepared,
    cols: &[u8],
    routing: &mut Routing,
    dl: &mut [u8],
    mut counts: Vec<Vec<u32>>,
    budget: u8,
    pre: Option<Prologue>,
) -> Result<EscapeOutcome, DfssspError> {
    let (g, ei) = (prep.g, &prep.ei);
    let ns = g.num_switches();
    let nd = g.dests().len();
    let esc_layer = budget - 1;
    let e = usize::from(esc_layer);
    let (esc, prio) = overflowing(g, dl, esc_layer);
    let pre = match pre {
        Some(p) if p.esc == esc && prep.reclaim => p,
        Some(p) if p.covers(&esc) && prep.reclaim => p.restrict(prep, cols, esc)?,
        _ => {
            let mut total = vec![0u64; ei.num_edges()];
            for cnt in &counts {
                for (t, &c) in total.iter_mut().zip(cnt) {
                    *t += u64::from(c);
                }
            }
            let lft_out = (!prep.reclaim).then_some(&mut *routing);
            prepare(prep, cols, esc, &total, lft_out)?
        }
    };
    let Prologue {
        esc,
        ud,
        ud_cols,
        sssp_legal,
        esc_counts,
        esc_users,
    } = pre;
    // Settling starts from the layers cycle breaking left: the escape destinations' paths that
    // fit stay counted where they are. (Without settling the counts are not read again: those
    // destinations go on pure Up*/Down*.)
    counts.truncate(e);
    let mut out = EscapeOutcome {
        roots: ud.roots.clone(),
        initial: esc.iter().filter(|&&x| x).count(),
        ..Default::default()
    };
    if prep.reclaim {
        let mut layers: Vec<CountedEdges> = counts.into_par_iter().map(CountedEdges::new).collect();
        layers.push(CountedEdges::with_users(esc_counts, esc_users));
        let mut st = Settler::new(prep, &mut layers, esc_layer, ud.legal_order(g))?;
        let mut cand: Vec<usize> = (0..nd).filter(|&di| esc[di]).collect();
        cand.sort_by_key(|&di| (prio[di], g.dests()[di].lid));
        // Legal SSSP routes are their own escape routes, in the escape layer already (nothing of
        // the settling state changes for them, so they go first).
        cand.retain(|&di| {
            if sssp_legal[di] {
                out.reclaimed += 1;
                dl[di * ns..(di + 1) * ns].fill(esc_layer);
            }
            !sssp_legal[di]
        });
        // Settling is sequential (each destination's placements constrain the next), so the
        // rest runs beside it on another thread, a chunk of destinations at a time: the trees
        // of the next chunk are built (they depend on the input routes only) and the outcome of
        // the previous one is written (nothing settling reads).
        const AHEAD: usize = 32;
        let slots = || -> Vec<Slot> { (0..AHEAD.min(cand.len())).map(|_| Slot::new(ns)).collect() };
        let (mut writing, mut settling, mut building) = (slots(), slots(), slots());
        let mut wr = Writer::new(prep, esc_layer);
        let mut chunks = cand.chunks(AHEAD).peekable();
        if let Some(first) = chunks.peek() {
            Slot::build_all(prep, cols, &ud_cols, first, &mut settling, dl)?;
        }
        let mut written = 0; // slots of `writing` holding a settled destination
        while let Some(chunk) = chunks.next() {
            let following = chunks.peek().copied();
            let (built, settled) = rayon::join(
                || {
                    for slot in &writing[..written] {
                        wr.write(slot, routing, dl, &mut out);
                    }
                    following.map_or(Ok(()), |f| {
                        Slot::build_all(prep, cols, &ud_cols, f, &mut building, dl)
                    })
                },
                || {
                    for slot in &mut settling[..chunk.len()] {
                        st.settle(slot)?;
                    }
                    Ok::<(), DfssspError>(())
                },
            );
            built?;
            settled?;
            written = chunk.len();
            // The chunk just settled is written next, the one built settles next.
            std::mem::swap(&mut writing, &mut settling);
            std::mem::swap(&mut settling, &mut building);
        }
        for slot in &writing[..written] {
            wr.write(slot, routing, dl, &mut out);
        }
    } else {
        pure_updown(prep, routing, dl, &esc, esc_layer, &mut out)?;
    }
    Ok(out)
}

/// Without settling, every overflowing destination (`esc`) stays on pure Up*/Down* (its
/// routes already in `routing`): all its paths in the escape layer, counted in `out`.
fn pure_updown(
    prep: &Prepared,
    routing: &Routing,
    dl: &mut [u8],
    esc: &[bool],
    esc_layer: u8,
    out: &mut EscapeOutcome,
) -> Result<(), DfssspError> {
    let g = prep.g;
    let ns = g.num_switches();
    let mut tree = DestTree::new(ns);
    for (di, d) in g.dests().iter().enumerate() {
        if !esc[di] {
            continue;
        }
        dl[di * ns..(di + 1) * ns].fill(esc_layer);
        tree.build_from_ports(g, d, |s| routing.lft.port(s, d.lid), &prep.comp)
            .map_err(|f| internal(format!("escape routes to LID {}: {f:?}", d.lid)))?;
        out.escape_dests += 1;
        let to = prep.dist().to(d.switch);
        for &s in &tree.order[1..] {
            out.escape_routes += 1;
            out.escape_minimal += u64::from(tree.depth[s as usize] == u32::from(to[s as usize]));
        }
    }
    Ok(())
}

/// One escape destination on its way through settling.
struct Slot {
    di: usize,
    /// Its Up*/Down* and SSSP trees, and the layers cycle breaking left its paths in.
    tu: DestTree,
    ts: DestTree,
    phase_a: Vec<u8>,
    /// The escape-layer edges its Up*/Down* tree holds (as a user).
    ud_edges: Vec<u32>,
    /// What settling gives it: the hybrid tree and its paths' layers.
    th: DestTree,
    pl: Vec<u8>,
}

impl Slot {
    fn new(ns: usize) -> Self {
        Slot {
            di: 0,
            tu: DestTree::new(ns),
            ts: DestTree::new(ns),
            phase_a: vec![0; ns],
            ud_edges: Vec::new(),
            th: DestTree::new(ns),
            pl: vec![0; ns],
        }
    }

    /// Sets up the slots for escape destinations `dests` (`ud_cols` their Up*/Down* ports,
    /// `dl` the path layers, destination-major).
    fn build_all(
        prep: &Prepared,
        cols: &[u8],
        ud_cols: &[u8],
        dests: &[usize],
        slots: &mut [Slot],
        dl: &[u8],
    ) -> Result<(), DfssspError> {
        let (g, ns) = (prep.g, prep.g.num_switches());
        for (&di, slot) in dests.iter().zip(slots.iter_mut()) {
            let d = g.dests()[di];
            slot.di = di;
            let u = &ud_cols[di * ns..(di + 1) * ns];
            slot.tu
                .build_from_ports(g, &d, |s| u[s as usize], &prep.comp)
                .map_err(|f| internal(format!("Up*/Down* routes to LID {}: {f:?}", d.lid)))?;
            slot.ud_edges.clear();
            let weight = &prep.weight;
            slot.tu.edge_weights(
                g,
                &prep.ei,
                |s| weight[s as usize],
                |e, _| slot.ud_edges.push(e as u32),
            );
            let c = &cols[di * ns..(di + 1) * ns];
            slot.ts
                .build_from_ports(g, &d, |s| c[s as usize], &prep.comp)
                .map_err(|f| fault_error(g, d.lid, f))?;
            slot.phase_a.copy_from_slice(&dl[di * ns..(di + 1) * ns]);
        }
        Ok(())
    }
}

/// Writes settled destinations out: LFT, hops and path layers, and the statistics.
struct Writer<'a> {
    prep: &'a Prepared<'a>,
    esc_layer: u8,
    /// Per switch: its path takes a non-SSSP hop somewhere.
    off_sssp: Vec<bool>,
}

impl<'a> Writer<'a> {
    fn new(prep: &'a Prepared<'a>, esc_layer: u8) -> Self {
        Writer {
            prep,
            esc_layer,
            off_sssp: vec![false; prep.g.num_switches()],
        }
    }

    /// Writes the hybrid tree's LFT, hop and layer entries of the slot's destination (the LFT
    /// and hops still hold its SSSP routes: only the paths that leave them somewhere change),
    /// and adds its routes to the statistics: paths with an Up*/Down* hop, and how many of them
    /// are minimal anyway.
    fn write(
        &mut self,
        slot: &Slot,
        routing: &mut Routing,
        dl: &mut [u8],
        out: &mut EscapeOutcome,
    ) {
        let g = self.prep.g;
        let ns = g.num_switches();
        let d = g.dests()[slot.di];
        let root = d.switch;
        let last = u32::from(d.exit_port != 0);
        let to = self.prep.dist().to(root);
        let (th, ts) = (&slot.th, &slot.ts);
        let dl = &mut dl[slot.di * ns..(slot.di + 1) * ns];
        dl.fill(self.esc_layer);
        dl[root as usize] = 0;
        let mut escaped = 0u64;
        for &s in &th.order[1..] {
            let su = s as usize;
            dl[su] = slot.pl[su];
            let n = th.next[su];
            let own = n != ts.next[su];
            let off = own || self.off_sssp[g.chan_head()[n as usize] as usize];
            self.off_sssp[su] = off;
            if own {
                routing.lft.set(s, d.lid, g.chan_port()[n as usize]);
            }
            if off {
                let h = th.depth[su] + last;
                routing
                    .hops
                    .set(s, d.lid, u8::try_from(h).unwrap_or(u8::MAX));
                escaped += 1;
                out.escape_minimal += u64::from(th.depth[su] == u32::from(to[su]));
            }
        }
        for &s in &th.order {
            self.off_sssp[s as usize] = false;
        }
        if escaped == 0 {
            out.reclaimed += 1;
        } else {
            out.escape_dests += 1;
            out.escape_routes += escaped;
        }
    }
}

/// One share of destinations' sums: escape-layer dependency counts and channel loads.
type ShareSums = (Vec<u32>, Vec<u64>);

/// The shares' escape-layer counts (`edges` of them) and channel loads (`channels`), added up.
fn sum_shares(
    shares: Vec<Result<ShareSums, DfssspError>>,
    edges: usize,
    channels: usize,
) -> Result<ShareSums, DfssspError> {
    let mut load = vec![0u64; channels];
    let mut esc_counts = vec![0u32; edges];
    for r in shares {
        let (share_counts, share_load) = r?;
        for (t, c) in esc_counts.iter_mut().zip(share_counts) {
            *t += c;
        }
        for (t, l) in load.iter_mut().zip(share_load) {
            *t += l;
        }
    }
    Ok((esc_counts, load))
}

fn internal(msg: String) -> DfssspError {
    DfssspError::Internal(msg)
}
