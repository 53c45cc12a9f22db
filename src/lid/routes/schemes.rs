//! Shortest-widest routing, destination renaming and fully explicit routing: the schemes that
//! place one path per machine pair directly.

use rand::Rng;

use super::dag::{Dag, DagScratch, PathMetric};
use super::{unreachable_err, MachineRouting, Machines, RootedUpDown, NO_ROUTE};
use crate::graph::{SwitchGraph, NO_CHANNEL};
use crate::lid::LidError;

/// Up*/Down*-constrained shortest-widest routing (§5.1). Pairs are routed one by one, source-major
/// (all destinations of machine 0, then machine 1, ...). Every channel starts with weight 1 and
/// gains 1 per path placed on it; each pair takes the shortest legal path and, among those, the one
/// of least total weight (the paper's "smallest weight"; we read it as the sum along the path).
pub fn shortest_widest(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
    metric: PathMetric,
) -> Result<MachineRouting, LidError> {
    let m = mach.len();
    let mut rt = MachineRouting::new(m);
    let dags: Vec<Dag> = (0..g.num_switches() as u32)
        .map(|a| Dag::new(g, ud, a))
        .collect();
    let mut weight = vec![1u64; g.num_channels()];
    let mut scratch = DagScratch::new(g);
    let mut buf = Vec::new();
    for s in 0..m {
        let dag = &dags[mach.switch[s] as usize];
        for d in 0..m {
            if s == d {
                continue;
            }
            buf.clear();
            if !dag.best_path(mach.switch[d], &weight, metric, &mut scratch, &mut buf) {
                return Err(unreachable_err("shortest-widest", s, d));
            }
            for &c in &buf {
                weight[c as usize] += 1;
            }
            rt.route[s * m + d] = rt.intern(&buf);
        }
    }
    Ok(rt)
}

/// How [`destination_renaming`] picks each pair's shortest legal path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenamingPaths {
    /// With [`shortest_widest`]'s load-growing weights and order: the paths are then exactly the
    /// shortest-widest ones and the LIDs first-fit in computation order (= greedy in source
    /// order). Nienaber et al.'s renaming LIDs are within 1% of its shortest-widest greedy LIDs in all
    /// nine configurations, which points to this reading.
    Balanced(PathMetric),
    /// Uniformly at random among all shortest legal paths (seeded): a plain, not load-aware
    /// shortest-path routing.
    Random,
}

impl Default for RenamingPaths {
    fn default() -> Self {
        RenamingPaths::Balanced(PathMetric::Sum)
    }
}

/// Destination renaming (López, Flich, Duato [5] in Nienaber et al.), as reconstructed here from the
/// paper's description ("uses a shortest path algorithm to select paths that follow Up*/Down*
/// routing rules; it assigns LIDs as the paths are computed"). Pairs are routed one by one,
/// source-major, each on a shortest legal path chosen as `paths` says. As each path is computed it
/// gets the first LID of its destination whose forwarding entries agree with it; the destination
/// is "renamed" (gets a new LID) when none does. The LID never steers the path, unlike in the
/// paper's *separate* scheme.
pub fn destination_renaming<R: Rng>(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
    paths: RenamingPaths,
    rng: &mut R,
) -> Result<MachineRouting, LidError> {
    const FREE: u8 = 0xFF;
    let m = mach.len();
    let ns = g.num_switches();
    let mut rt = MachineRouting::new(m);
    let dags: Vec<Dag> = (0..ns as u32).map(|a| Dag::new(g, ud, a)).collect();
    let mut count = Vec::new();
    let mut weight = vec![1u64; g.num_channels()];
    let mut scratch = DagScratch::new(g);
    let mut buf = Vec::new();
    let mut pair_lid = vec![0u8; m * m];
    // tables[d][l * ns + x]: out port of LID l of machine d at switch x (FREE = no entry yet).
    let mut tables: Vec<Vec<u8>> = vec![Vec::new(); m];
    for s in 0..m {
        let dag = &dags[mach.switch[s] as usize];
        for d in 0..m {
            if s == d {
                continue;
            }
            let b = mach.switch[d];
            buf.clear();
            let found = match paths {
                RenamingPaths::Random => dag.random_path(b, rng, &mut count, &mut buf),
                RenamingPaths::Balanced(metric) => {
                    dag.best_path(b, &weight, metric, &mut scratch, &mut buf)
                }
            };
            if !found {
                return Err(unreachable_err("renaming", s, d));
            }
            for &c in &buf {
                weight[c as usize] += 1;
            }
            let t = &mut tables[d];
            let fits = |l: usize| {
                buf.iter().all(|&c| {
                    let e = t[l * ns + g.chan_tail()[c as usize] as usize];
                    e == FREE || e == g.chan_port()[c as usize]
                })
            };
            let l = match (0..t.len() / ns).find(|&l| fits(l)) {
                Some(l) => l,
                None => {
                    let l = t.len() / ns;
                    t.resize(t.len() + ns, FREE);
                    t[l * ns + b as usize] = mach.port[d];
                    l
                }
            };
            for &c in &buf {
                t[l * ns + g.chan_tail()[c as usize] as usize] = g.chan_port()[c as usize];
            }
            pair_lid[s * m + d] = u8::try_from(l).map_err(|_| LidError::TooManyLids {
                needed: l as u32 + 1,
            })?;
            rt.route[s * m + d] = rt.intern(&buf);
        }
    }
    rt.scheme_lids = Some(
        tables
            .iter()
            .map(|t| (t.len() / ns).max(1) as u32)
            .collect(),
    );
    rt.pair_lid = Some(pair_lid);
    Ok(rt)
}

/// Fully explicit routing (Sancho, Robles, Duato [9] in Nienaber et al.), as reconstructed here: every
/// destination machine gets one Up*/Down* destination tree, so one LID realises all its paths.
/// Switches from which the destination's switch is reachable going only down route down along a
/// shortest all-down path; the others go up towards the nearest such switch (fewest total hops).
/// Among equally short next hops a switch takes the channel with the fewest paths so far (paths of
/// earlier destinations), which balances the trees; destinations are routed in machine order.
pub fn fully_explicit(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
) -> Result<MachineRouting, LidError> {
    let m = mach.len();
    let ns = g.num_switches();
    let mut rt = MachineRouting::new(m);
    let mut load = vec![0u64; g.num_channels()];
    let mut by_level: Vec<u32> = (0..ns as u32).collect();
    by_level.sort_by_key(|&x| (ud.level[x as usize], x));
    let mut machines_at = vec![0u64; ns];
    for &a in &mach.switch {
        machines_at[a as usize] += 1;
    }
    let mut down = vec![u32::MAX; ns];
    let mut f = vec![u32::MAX; ns];
    let mut next = vec![NO_CHANNEL; ns];
    let mut queue = std::collections::VecDeque::new();
    let mut route_from = vec![NO_ROUTE; ns];
    let mut buf = Vec::new();
    for d in 0..m {
        let b = mach.switch[d];
        down.iter_mut().for_each(|x| *x = u32::MAX);
        down[b as usize] = 0;
        queue.push_back(b);
        while let Some(y) = queue.pop_front() {
            for &c in g.in_channels(y) {
                let x = g.chan_tail()[c as usize] as usize;
                if !ud.up[c as usize] && down[x] == u32::MAX {
                    down[x] = down[y as usize] + 1;
                    queue.push_back(x as u32);
                }
            }
        }
        // Up channels lead to switches earlier in (level, id) order, so one pass settles f.
        for &x in &by_level {
            let x = x as usize;
            f[x] = down[x];
            if f[x] == u32::MAX {
                f[x] = g
                    .out_channels(x as u32)
                    .filter(|&c| ud.up[c as usize])
                    .map(|c| f[g.chan_head()[c as usize] as usize].saturating_add(1))
                    .min()
                    .unwrap_or(u32::MAX);
            }
        }
        for x in 0..ns {
            next[x] = NO_CHANNEL;
            if x as u32 == b || f[x] == u32::MAX {
                continue;
            }
            let goes_down = down[x] != u32::MAX;
            next[x] = g
                .out_channels(x as u32)
                .filter(|&c| {
                    let h = g.chan_head()[c as usize] as usize;
                    if goes_down {
                        !ud.up[c as usize] && down[h] != u32::MAX && down[h] + 1 == down[x]
                    } else {
                        ud.up[c as usize] && f[h] != u32::MAX && f[h] + 1 == f[x]
                    }
                })
                .min_by_key(|&c| (load[c as usize], c))
                .unwrap_or(NO_CHANNEL);
        }
        route_from.iter_mut().for_each(|r| *r = NO_ROUTE);
        for a in 0..ns {
            let sources = machines_at[a] - u64::from(a as u32 == b);
            if sources == 0 {
                continue;
            }
            buf.clear();
            let mut x = a;
            while x as u32 != b {
                let c = next[x];
                if c == NO_CHANNEL || buf.len() > ns {
                    return Err(unreachable_err("fully explicit", a, d));
                }
                buf.push(c);
                load[c as usize] += sources;
                x = g.chan_head()[c as usize] as usize;
            }
            route_from[a] = rt.intern(&buf);
        }
        for s in 0..m {
            if s != d {
                rt.route[s * m + d] = route_from[mach.switch[s] as usize];
            }
        }
    }
    rt.scheme_lids = Some(vec![1; m]);
    rt.pair_lid = Some(vec![0; m * m]);
    Ok(rt)
}
