//! One lane where every data route is legal under one Up*/Down* order ([`Orientation`] with
//! `data_legal`: fat trees, with failed cables and missing switches too).
//!
//! There no search is needed. Every switch whose whole input (SSSP) path to a destination is a
//! legal Up*/Down* route keeps it; the data routes (from switches with CAs to CA LIDs) are all
//! such, and so is every route they pass through. Each other switch (above the leaves, whose
//! minimal route turns down, then up; it carries no CA traffic) takes a legal route through
//! switches already routed: all the way down where a down channel leads to a switch whose route
//! only descends (switches in decreasing rank, so such a neighbour is settled first), else up to
//! a routed neighbour (increasing rank: the neighbour above is settled first, and every switch
//! but the root has one). Each picks the neighbour with the shortest route, ties to the lowest
//! channel.
//!
//! **Deadlock freedom.** Every route is an Up*/Down* route under one total order, so the layer's
//! CDG is acyclic (Schroeder et al., Autonet); no cycle check runs. **Balance.** The data routes
//! are SSSP's exactly, and the routes changed carry none, so the loads and Λ are SSSP's.
//! **Cost.** `O(S)` per destination to classify the input paths (each switch walked once), plus
//! `O(d)` per re-routed switch: `O(L·S)` in all, as reading the tables; destinations in
//! parallel, and no search.

use rayon::prelude::*;

use crate::graph::{Dest, SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::updown::UpDown;

use super::super::DfssspError;
use super::OneLaneOutcome;
use crate::dfsssp::prepared::Prepared;
use crate::routing::Routing;

/// A switch's state while one destination is classified and re-routed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Unknown,
    /// On the walk being classified.
    Visiting,
    /// Routed legally (its input route, or a new one), all the way down (the root too).
    Down,
    /// Routed legally, first up.
    Up,
    /// Its input route is not legal (or missing): re-routed.
    Unfixed,
}

/// Per-thread scratch, sized to the fabric.
struct Scratch {
    state: Vec<State>,
    next: Vec<u32>,
    depth: Vec<u16>,
    stack: Vec<u32>,
    unfixed: Vec<u32>,
}

/// One destination's re-routed switches: `(switch, port, hops)`, the table entries to write.
type Changes = Vec<(u32, u8, u8)>;

/// Routes every destination of `routing`'s fabric within one layer as the module documentation
/// says: `input` (destination-major ports) holds the SSSP routes, which `routing` holds too;
/// only the entries of re-routed switches are written.
pub(crate) fn run(
    prep: &Prepared,
    ud: &UpDown,
    input: &[u8],
    deadline: Option<std::time::Instant>,
    routing: &mut Routing,
) -> Result<OneLaneOutcome, DfssspError> {
    let start = std::time::Instant::now();
    let g = prep.g;
    let ns = g.num_switches();
    if ns == 0 {
        return Ok(OneLaneOutcome::default());
    }
    let comp = g.components();
    let dirs = Directions::new(g, ud);
    let work = ns * g.dests().len();
    let per_dest: Vec<(usize, Changes, u64)> =
        crate::par::sized(g.dests().par_iter().enumerate(), work)
            .filter(|(_, d)| d.switch != NO_SWITCH)
            .map_init(
                || Scratch {
                    state: vec![State::Unknown; ns],
                    next: vec![NO_CHANNEL; ns],
                    depth: vec![0; ns],
                    stack: Vec::new(),
                    unfixed: Vec::new(),
                },
                |sc, (di, d)| {
                    super::super::past_deadline(deadline, start)?;
                    let row = &input[di * ns..(di + 1) * ns];
                    let changes = route_dest(g, ud, &dirs, &comp, d, row, sc)?;
                    let to = prep.dist().to(d.switch);
                    let last_link = u8::from(d.exit_port != 0);
                    let longer = changes
                        .iter()
                        .filter(|&&(s, _, h)| u16::from(h - last_link) != to[s as usize])
                        .count() as u64;
                    Ok((di, changes, longer))
                },
            )
            .filter(|r| !matches!(r, Ok((_, c, _)) if c.is_empty()))
            .collect::<Result<_, DfssspError>>()?;
    let routed = g.dests().iter().filter(|d| d.switch != NO_SWITCH).count();
    let mut out = OneLaneOutcome {
        roots: ud.roots.clone(),
        kept_dests: (routed - per_dest.len()) as u64,
        ..Default::default()
    };
    for (di, changes, longer) in per_dest {
        let lid = g.dests()[di].lid;
        out.rerouted += changes.len() as u64;
        for (s, port, h) in changes {
            routing.lft.set(s, lid, port);
            routing.hops.set(s, lid, h);
        }
        out.nonminimal_routes += longer;
    }
    Ok(out)
}

/// Classifies destination `d`'s input routes (`row`, a port per switch) and re-routes the
/// switches whose paths are not legal; returns their new entries.
fn route_dest(
    g: &SwitchGraph,
    ud: &UpDown,
    dirs: &Directions,
    comp: &[u32],
    d: &Dest,
    row: &[u8],
    sc: &mut Scratch,
) -> Result<Changes, DfssspError> {
    let root = d.switch;
    let my_comp = comp[root as usize];
    let members = (0..g.num_switches() as u32).filter(|&s| comp[s as usize] == my_comp);
    for s in members.clone() {
        sc.state[s as usize] = State::Unknown;
    }
    sc.state[root as usize] = State::Down;
    sc.next[root as usize] = NO_CHANNEL;
    sc.depth[root as usize] = 0;
    sc.unfixed.clear();
    for s in members {
        classify(g, &dirs.up, row, s, sc);
    }
    if sc.unfixed.is_empty() {
        return Ok(Vec::new());
    }
    let rank = &ud.rank;
    sc.unfixed.sort_unstable_by_key(|&s| rank[s as usize]);
    let head = g.chan_head();
    let depth_at = |sc: &Scratch, c: u32| sc.depth[head[c as usize] as usize];
    // Down first, highest rank first: a down neighbour (higher rank) is settled before.
    for i in (0..sc.unfixed.len()).rev() {
        let s = sc.unfixed[i];
        let best = (dirs.down(g, s).iter().copied())
            .filter(|&c| sc.state[head[c as usize] as usize] == State::Down)
            .min_by_key(|&c| (depth_at(sc, c), c));
        if let Some(c) = best {
            settle(sc, s, c, head, State::Down);
        }
    }
    // Then up, lowest rank first: the neighbour above is settled before.
    for i in 0..sc.unfixed.len() {
        let s = sc.unfixed[i];
        if sc.state[s as usize] == State::Down {
            continue;
        }
        let best = (dirs.up(g, s).iter().copied())
            .filter(|&c| matches!(sc.state[head[c as usize] as usize], State::Down | State::Up))
            .min_by_key(|&c| (depth_at(sc, c), c));
        let Some(c) = best else {
            return Err(DfssspError::Internal(format!(
                "Up*/Down* order without a legal route from {} to LID {}",
                g.switch_label(s),
                d.lid
            )));
        };
        settle(sc, s, c, head, State::Up);
    }
    let last_link = u16::from(d.exit_port != 0);
    Ok(sc
        .unfixed
        .iter()
        .map(|&s| {
            let c = sc.next[s as usize];
            let h = sc.depth[s as usize] + last_link;
            (
                s,
                g.chan_port()[c as usize],
                u8::try_from(h).unwrap_or(u8::MAX),
            )
        })
        .collect())
}

fn settle(sc: &mut Scratch, s: u32, c: u32, head: &[u32], state: State) {
    sc.next[s as usize] = c;
    sc.depth[s as usize] = sc.depth[head[c as usize] as usize] + 1;
    sc.state[s as usize] = state;
}

/// Every switch's channels split by direction under the order: up ones, then down ones (each
/// by id), so that a re-routed switch scans only the direction it needs.
struct Directions {
    /// Per channel, whether it leads up.
    up: Vec<bool>,
    /// The channels of [`SwitchGraph::out_channels`] reordered, and per switch the first down one.
    by_dir: Vec<u32>,
    split: Vec<u32>,
}

impl Directions {
    fn new(g: &SwitchGraph, ud: &UpDown) -> Self {
        let up: Vec<bool> = (0..g.num_channels() as u32)
            .map(|c| ud.is_up(g, c))
            .collect();
        let mut by_dir: Vec<u32> = (0..g.num_channels() as u32).collect();
        let split = (0..g.num_switches() as u32)
            .map(|s| {
                let r = g.out_channels(s);
                by_dir[r.start as usize..r.end as usize].sort_by_key(|&c| (!up[c as usize], c));
                r.start + r.clone().filter(|&c| up[c as usize]).count() as u32
            })
            .collect();
        Directions { up, by_dir, split }
    }

    fn up(&self, g: &SwitchGraph, s: u32) -> &[u32] {
        &self.by_dir[g.out_channels(s).start as usize..self.split[s as usize] as usize]
    }

    fn down(&self, g: &SwitchGraph, s: u32) -> &[u32] {
        &self.by_dir[self.split[s as usize] as usize..g.out_channels(s).end as usize]
    }
}

/// Walks `s`'s input path until a classified switch, then classifies the walk backwards: a
/// switch keeps its input route when its next hop did and the turn between their channels is
/// legal (up, then anything; down, then down only); else it is unfixed, as is a switch without
/// a port or on a loop.
fn classify(g: &SwitchGraph, up: &[bool], row: &[u8], s: u32, sc: &mut Scratch) {
    sc.stack.clear();
    let mut v = s;
    while sc.state[v as usize] == State::Unknown {
        match g.channel_at(v, row[v as usize]) {
            Some(c) => {
                sc.next[v as usize] = c;
                sc.state[v as usize] = State::Visiting;
                sc.stack.push(v);
                v = g.chan_head()[c as usize];
            }
            None => {
                sc.state[v as usize] = State::Unfixed;
                sc.unfixed.push(v);
            }
        }
    }
    while let Some(u) = sc.stack.pop() {
        let c = sc.next[u as usize];
        let h = g.chan_head()[c as usize] as usize;
        // Up, then anything legal; down, then only down.
        let state = match (up[c as usize], sc.state[h]) {
            (true, State::Down | State::Up) => State::Up,
            (false, State::Down) => State::Down,
            _ => State::Unfixed,
        };
        sc.state[u as usize] = state;
        match state {
            State::Unfixed => sc.unfixed.push(u),
            _ => sc.depth[u as usize] = sc.depth[h] + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfsssp::prepared::WorkingRoutes;
    use crate::dfsssp::DfssspOptions;
    use crate::routing::NO_PATH;

    /// Every route of `r` a legal Up*/Down* route under `ud` (never down, then up), of the
    /// length its hop table says, and complete.
    fn assert_all_legal(g: &SwitchGraph, ud: &UpDown, r: &Routing, spec: &str) {
        for d in g.dests() {
            let last_link = u8::from(d.exit_port != 0);
            for s in 0..g.num_switches() as u32 {
                let (mut v, mut went_down, mut len) = (s, false, 0u8);
                while v != d.switch {
                    let c = g
                        .channel_at(v, r.lft.port(v, d.lid))
                        .unwrap_or_else(|| panic!("{spec}: no route from {v} to LID {}", d.lid));
                    let up = ud.is_up(g, c);
                    assert!(
                        !(went_down && up),
                        "{spec}: down, then up from {s} to {}",
                        d.lid
                    );
                    went_down |= !up;
                    v = g.chan_head()[c as usize];
                    len += 1;
                    assert!(usize::from(len) <= g.num_switches(), "{spec}: loop");
                }
                assert_eq!(
                    r.hops.get(s, d.lid),
                    len + last_link,
                    "{spec}: {s} to {}",
                    d.lid
                );
            }
        }
    }

    /// On fat trees with failed cables and a spine switch missing: the data routes stay SSSP's,
    /// every other route is made legal, and the routing passes the independent verification.
    /// A broken input (two switches sending to each other, a loop) is re-routed legally too.
    #[test]
    fn every_route_legal_and_data_routes_kept() {
        for spec in [
            "ktree:6,3,cut=5",
            "ktree:8,3,cut=10,faultseed=3",
            "fattree3:8,spinedown=1",
            "ktree:4,4,cut=5",
        ] {
            let f = crate::topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let input = crate::sssp::route(&g);
            let prep = Prepared::new(&g, &DfssspOptions::default(), None);
            let mut work = input.clone();
            let routes = WorkingRoutes::new(&prep, &mut work).unwrap();
            let oriented = super::super::orientation(&prep, &routes.counts0, &routes.cols);
            assert!(oriented.data_legal, "{spec}");
            let mut cols = routes.cols.clone();
            // Break two input routes of a CA LID that carry no data: two switches without CAs
            // send to each other.
            let ns = g.num_switches();
            let di = g.dests().iter().position(|d| d.exit_port != 0).unwrap();
            let d = g.dests()[di];
            let row = &mut cols[di * ns..(di + 1) * ns];
            let (a, b) = (0..ns as u32)
                .filter(|&s| g.terminal_count()[s as usize] == 0 && s != d.switch)
                .flat_map(|s| g.out_channels(s).map(move |c| (s, c)))
                .map(|(s, c)| (s, g.chan_head()[c as usize]))
                .find(|&(s, h)| h != d.switch && g.terminal_count()[h as usize] == 0 && s != h)
                .unwrap();
            let back = g
                .out_channels(a)
                .find(|&c| g.chan_head()[c as usize] == b)
                .unwrap();
            let forth = g
                .out_channels(b)
                .find(|&c| g.chan_head()[c as usize] == a)
                .unwrap();
            row[a as usize] = g.chan_port()[back as usize];
            row[b as usize] = g.chan_port()[forth as usize];
            let mut r = input.clone();
            r.lft.set(a, d.lid, row[a as usize]);
            r.lft.set(b, d.lid, row[b as usize]);
            let out = run(&prep, &oriented.ud, &cols, None, &mut r).unwrap();
            assert!(out.rerouted >= 2, "{spec}: {out:?}");
            assert_all_legal(&g, &oriented.ud, &r, spec);
            for d in g.dests().iter().filter(|d| d.exit_port != 0) {
                for s in (0..ns as u32).filter(|&s| g.terminal_count()[s as usize] > 0) {
                    assert_eq!(r.lft.port(s, d.lid), input.lft.port(s, d.lid), "{spec}");
                }
            }
            let v = crate::verify::verify(&g, &r).unwrap();
            assert_eq!(v.unreachable, 0, "{spec}");
            assert_ne!(r.lft.port(a, d.lid), NO_PATH, "{spec}");
        }
    }
}
