//! The routing schemes of Nienaber et al.'s evaluation (§5), machine to machine over a [`SwitchGraph`].
//!
//! Every scheme computes one path per ordered pair of machines (CA ports). A path is the sequence
//! of switch-to-switch channels from the source machine's switch to the destination machine's
//! switch; the machine links at both ends are implied. All schemes obey Up*/Down* ([`RootedUpDown`]):
//! no channel towards the root ("up") after a channel away from it ("down").
//!
//! - [`shortest_widest`]: pairs one by one; among the shortest legal paths the one of least weight,
//!   where a channel's weight is 1 + the paths already on it.
//! - [`path_selection`]: up to k shortest loopless legal paths per switch pair as candidates for
//!   every machine pair, then most-loaded-link-first removal until one path per pair is left.
//! - [`fully_explicit`]: one destination tree per machine (one LID suffices), balanced across
//!   destinations.
//! - [`destination_renaming`]: shortest legal paths, each realised on the first existing LID of the
//!   destination it fits, a new LID otherwise.
//!
//! Where the paper leaves a detail open, the choice made here is stated at the function.

use std::collections::HashMap;

use super::assign::{Hop, PathSet};
use super::LidError;
use crate::graph::SwitchGraph;

mod dag;
mod schemes;
mod selection;
#[cfg(test)]
mod tests;

use dag::Dag;

pub use dag::PathMetric;
pub use schemes::{destination_renaming, fully_explicit, shortest_widest, RenamingPaths};
pub use selection::{
    path_selection, LegalPaths, PathSelectionConfig, PathSelectionStats, SelectionUnit,
};

/// No route: the diagonal of the route matrix, or a switch without sources.
const NO_ROUTE: u32 = u32::MAX;
/// No unit yet for a pair.
const NO_UNIT: u32 = u32::MAX;

/// Machines (traffic endpoints) of a switch graph: machine `i` is `g.terminals()[i]`.
#[derive(Clone, Debug)]
pub struct Machines {
    /// Switch each machine hangs off.
    pub switch: Vec<u32>,
    /// Port by which that switch delivers to the machine.
    pub port: Vec<u8>,
}

impl Machines {
    pub fn new(g: &SwitchGraph) -> Self {
        let mut exit = HashMap::new();
        for d in g.dests() {
            if d.lid_offset == 0 {
                exit.insert(d.endpoint, d.exit_port);
            }
        }
        let switch = g.terminals().iter().map(|&(_, s)| s).collect();
        let port = g
            .terminals()
            .iter()
            .map(|&(e, _)| exit.get(&e).copied().unwrap_or(0))
            .collect();
        Machines { switch, port }
    }

    pub fn len(&self) -> usize {
        self.switch.len()
    }

    pub fn is_empty(&self) -> bool {
        self.switch.is_empty()
    }
}

/// Up*/Down* orientation (Autonet) from one given root, as the study's schemes use it: the
/// engine's [`crate::updown::UpDown`] (levels are BFS distances from the root; a channel is *up*
/// when it leads to a lower `(level, switch id)` rank), with the direction of every channel
/// cached for the path searches' inner loops, and refused unless every switch reaches the root.
#[derive(Clone, Debug)]
pub struct RootedUpDown {
    pub root: u32,
    pub level: Vec<u32>,
    /// Per channel.
    pub up: Vec<bool>,
}

impl RootedUpDown {
    pub fn new(g: &SwitchGraph, root: u32) -> Result<Self, LidError> {
        let n = g.num_switches();
        if root as usize >= n {
            return Err(LidError::InvalidConfig(format!(
                "Up*/Down* root {root} is not a switch"
            )));
        }
        let o = crate::updown::UpDown::with_roots(g, &[root]);
        // Components without the root get roots of their own, the lowest switch id first.
        if let Some(&s) = o.roots.get(1) {
            return Err(LidError::Fabric(format!(
                "switch {s} is not connected to the Up*/Down* root {root}"
            )));
        }
        let up = (0..g.num_channels() as u32)
            .map(|c| o.is_up(g, c))
            .collect();
        Ok(RootedUpDown {
            root,
            level: o.level,
            up,
        })
    }

    /// True when the channel sequence is a connected path that obeys Up*/Down*.
    pub fn is_legal(&self, g: &SwitchGraph, chans: &[u32]) -> bool {
        let mut down = false;
        for (i, &c) in chans.iter().enumerate() {
            if i > 0 && g.chan_tail()[c as usize] != g.chan_head()[chans[i - 1] as usize] {
                return false;
            }
            if self.up[c as usize] && down {
                return false;
            }
            down |= !self.up[c as usize];
        }
        true
    }
}

/// How long a route may be for [`MachineRouting::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteLength {
    /// A shortest legal path.
    Shortest,
    /// Any legal path.
    Any,
}

/// One path per ordered machine pair, stored as interned routes (channel sequences).
#[derive(Clone, Debug)]
pub struct MachineRouting {
    pub machines: usize,
    /// `route[s * machines + d]`: route id of the pair; [`NO_ROUTE`] on the diagonal.
    pub route: Vec<u32>,
    route_start: Vec<u32>,
    route_chans: Vec<u32>,
    index: HashMap<Vec<u32>, u32>,
    /// Configurations (LIDs before LMC rounding) per destination machine, for schemes that assign
    /// LIDs while routing (destination renaming, fully explicit); `None` for pure routings.
    pub scheme_lids: Option<Vec<u32>>,
    /// The LID offset of every pair (indexed like `route`) for those schemes.
    pub pair_lid: Option<Vec<u8>>,
}

/// Maximum link load under uniform all-to-all traffic, every machine sending 1 in total (Nienaber et al.
/// §5.2): the number of pairs on the busiest link over `machines - 1`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkLoad {
    /// Busiest direction of any link (machine links carry exactly 1 each way).
    pub directed: f64,
    /// Busiest link counting both directions together.
    pub bidirectional: f64,
}

impl MachineRouting {
    fn new(machines: usize) -> Self {
        let mut r = MachineRouting {
            machines,
            route: vec![NO_ROUTE; machines * machines],
            route_start: vec![0],
            route_chans: Vec::new(),
            index: HashMap::new(),
            scheme_lids: None,
            pair_lid: None,
        };
        r.intern(&[]); // route 0: both machines on one switch
        r
    }

    fn intern(&mut self, chans: &[u32]) -> u32 {
        if let Some(&id) = self.index.get(chans) {
            return id;
        }
        let id = (self.route_start.len() - 1) as u32;
        self.route_chans.extend_from_slice(chans);
        self.route_start.push(self.route_chans.len() as u32);
        self.index.insert(chans.to_vec(), id);
        id
    }

    pub fn num_routes(&self) -> usize {
        self.route_start.len() - 1
    }

    pub fn route_chans(&self, r: u32) -> &[u32] {
        &self.route_chans
            [self.route_start[r as usize] as usize..self.route_start[r as usize + 1] as usize]
    }

    /// Channels of the path from machine `s` to machine `d`.
    pub fn pair_chans(&self, s: usize, d: usize) -> &[u32] {
        self.route_chans(self.route[s * self.machines + d])
    }

    /// Fills `ps` with the paths towards machine `d`, as hops (switch, out port) ending with the
    /// delivery hop to `d`; sources that share a route become one weighted path. The source
    /// machines' own first hops are left out: each is on one path only and cannot split.
    pub fn dest_paths(
        &self,
        g: &SwitchGraph,
        mach: &Machines,
        d: usize,
        ps: &mut PathSet,
        scratch: &mut Vec<u32>,
    ) {
        // Weighted paths in order of their first source machine, so that "input order" (greedy's
        // order) is source order, as when the paths were computed source-major.
        ps.clear();
        scratch.clear();
        scratch.extend(
            (0..self.machines)
                .filter(|&s| s != d)
                .map(|s| self.route[s * self.machines + d]),
        );
        let mut distinct: Vec<(u32, u32)> = Vec::new(); // (route, first position)
        let mut order: Vec<u32> = scratch.clone();
        order.sort_unstable();
        order.dedup();
        let mut count = vec![0u32; order.len()];
        for (i, &r) in scratch.iter().enumerate() {
            let k = order.binary_search(&r).expect("present");
            if count[k] == 0 {
                distinct.push((r, i as u32));
            }
            count[k] += 1;
        }
        let mut hops: Vec<Hop> = Vec::new();
        for &(r, _) in &distinct {
            hops.clear();
            hops.extend(self.route_chans(r).iter().map(|&c| {
                Hop::new(
                    g.chan_tail()[c as usize],
                    u32::from(g.chan_port()[c as usize]),
                )
            }));
            hops.push(Hop::new(mach.switch[d], u32::from(mach.port[d])));
            let w = count[order.binary_search(&r).expect("present")];
            // Routes are simple paths (see `check`), so this cannot fail.
            ps.push_weighted(&hops, w).expect("simple route");
        }
    }

    /// Pairs routed over each channel.
    pub fn channel_pairs(&self, g: &SwitchGraph) -> Vec<u64> {
        let mut per_route = vec![0u64; self.num_routes()];
        for &r in &self.route {
            if r != NO_ROUTE {
                per_route[r as usize] += 1;
            }
        }
        let mut load = vec![0u64; g.num_channels()];
        for (r, &n) in per_route.iter().enumerate() {
            for &c in self.route_chans(r as u32) {
                load[c as usize] += n;
            }
        }
        load
    }

    pub fn max_link_load(&self, g: &SwitchGraph) -> LinkLoad {
        if self.machines < 2 {
            return LinkLoad::default();
        }
        let load = self.channel_pairs(g);
        let norm = (self.machines - 1) as f64;
        let dir = load.iter().copied().max().unwrap_or(0) as f64 / norm;
        let bi = (0..load.len())
            .map(|c| load[c] + load[g.chan_reverse()[c] as usize])
            .max()
            .unwrap_or(0) as f64
            / norm;
        // Machine links carry exactly 1 in each direction (2 both ways).
        LinkLoad {
            directed: dir.max(1.0),
            bidirectional: bi.max(2.0),
        }
    }

    /// Checks the LIDs a scheme assigned while routing, independently of how it did so: for every
    /// destination, no two paths on one LID leave a switch by different ports.
    pub fn check_scheme_lids(
        &self,
        g: &SwitchGraph,
        mach: &Machines,
        scheme: &'static str,
    ) -> Result<(), LidError> {
        let (Some(lids), Some(pair_lid)) = (&self.scheme_lids, &self.pair_lid) else {
            return Ok(());
        };
        let ns = g.num_switches();
        let mut table: Vec<u8> = Vec::new();
        for d in 0..self.machines {
            let k = lids[d] as usize;
            table.clear();
            table.resize(k * ns, 0xFF);
            for s in (0..self.machines).filter(|&s| s != d) {
                let l = usize::from(pair_lid[s * self.machines + d]);
                if l >= k {
                    return Err(LidError::BadRoute {
                        scheme,
                        src: s as u32,
                        dst: d as u32,
                        why: format!("LID {l} of {k}"),
                    });
                }
                let hops = self
                    .pair_chans(s, d)
                    .iter()
                    .map(|&c| (g.chan_tail()[c as usize], g.chan_port()[c as usize]));
                for (x, port) in hops.chain(std::iter::once((mach.switch[d], mach.port[d]))) {
                    let e = &mut table[l * ns + x as usize];
                    if *e != 0xFF && *e != port {
                        return Err(LidError::BadRoute {
                            scheme,
                            src: s as u32,
                            dst: d as u32,
                            why: format!(
                                "LID offset {l} leaves switch {x} by ports {} and {port}",
                                *e
                            ),
                        });
                    }
                    *e = port;
                }
            }
        }
        Ok(())
    }

    /// Checks every pair's route: it joins the right switches, obeys Up*/Down*, visits no switch
    /// twice, and is as long as `length` allows.
    pub fn check(
        &self,
        g: &SwitchGraph,
        ud: &RootedUpDown,
        mach: &Machines,
        scheme: &'static str,
        length: RouteLength,
    ) -> Result<(), LidError> {
        let minimal = length == RouteLength::Shortest;
        let bad = |s: usize, d: usize, why: String| LidError::BadRoute {
            scheme,
            src: s as u32,
            dst: d as u32,
            why,
        };
        let dags: Vec<Option<Dag>> = (0..g.num_switches() as u32)
            .map(|a| minimal.then(|| Dag::new(g, ud, a)))
            .collect();
        let mut seen = vec![u32::MAX; g.num_switches()];
        for s in 0..self.machines {
            for d in 0..self.machines {
                if s == d {
                    continue;
                }
                let r = self.route[s * self.machines + d];
                if r == NO_ROUTE || r as usize >= self.num_routes() {
                    return Err(bad(s, d, "no route".into()));
                }
                let chans = self.route_chans(r);
                let (a, b) = (mach.switch[s], mach.switch[d]);
                let end = chans.last().map_or(a, |&c| g.chan_head()[c as usize]);
                if chans
                    .first()
                    .is_some_and(|&c| g.chan_tail()[c as usize] != a)
                    || end != b
                {
                    return Err(bad(s, d, format!("does not join switch {a} to switch {b}")));
                }
                if !ud.is_legal(g, chans) {
                    return Err(bad(s, d, "breaks Up*/Down*".into()));
                }
                let stamp = (s * self.machines + d) as u32;
                seen[a as usize] = stamp;
                for &c in chans {
                    let h = g.chan_head()[c as usize] as usize;
                    if seen[h] == stamp {
                        return Err(bad(s, d, format!("visits switch {h} twice")));
                    }
                    seen[h] = stamp;
                }
                if let Some(dag) = &dags[a as usize] {
                    if chans.len() as u32 != dag.hops_to(b) {
                        return Err(bad(
                            s,
                            d,
                            format!("{} hops, shortest legal is {}", chans.len(), dag.hops_to(b)),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

fn unreachable_err(scheme: &'static str, s: usize, d: usize) -> LidError {
    LidError::BadRoute {
        scheme,
        src: s as u32,
        dst: d as u32,
        why: "no legal path".into(),
    }
}
