//! Path selection (§5.2): k shortest loopless legal paths per switch pair as candidates, then
//! most-loaded-link-first removal until one path per pair (or per unit) is left.

use std::collections::HashMap;

use rand::Rng;

use super::dag::next_state;
use super::{MachineRouting, Machines, RootedUpDown, NO_UNIT};
use crate::graph::SwitchGraph;
use crate::lid::LidError;

/// Parameters of [`path_selection`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathSelectionConfig {
    /// Candidate paths per switch pair (the paper: 16). At most 16.
    pub k: u32,
    /// Only shortest legal paths as candidates (otherwise, as Yen's k-shortest loopless paths,
    /// longer legal paths fill up to `k`).
    pub minimal_only: bool,
    /// Budget of search steps per switch pair for enumerating candidates.
    pub max_steps_per_pair: u64,
    /// What gets one path.
    pub unit: SelectionUnit,
}

/// The granularity at which [`path_selection`] picks paths. Nienaber et al. say "one path for each pair
/// of machines" but also that candidates are computed "between each pair of nodes"; the LID counts
/// of its Table 2 (per machine roughly constant as machines grow) point to one of the coarser
/// units, see the study's notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectionUnit {
    /// Every machine pair its own path.
    MachinePair,
    /// All machine pairs between two switches share one path (weight: their number).
    SwitchPair,
    /// All machines of one switch share one path to each destination machine.
    SourceSwitchToMachine,
}

impl Default for PathSelectionConfig {
    fn default() -> Self {
        PathSelectionConfig {
            k: 16,
            minimal_only: false,
            max_steps_per_pair: 1 << 22,
            unit: SelectionUnit::SwitchPair,
        }
    }
}

/// What [`path_selection`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathSelectionStats {
    /// Mean candidates per ordered switch pair.
    pub mean_candidates: f64,
    /// Switch pairs with fewer than k candidates.
    pub short_pairs: u64,
    /// Switch pairs whose enumeration hit the step budget.
    pub budget_hits: u64,
    /// Machine-pair paths removed by most-loaded-link-first.
    pub removals: u64,
}

/// Hops from every state to switch `b` (any phase), for pruning the enumeration.
fn dist_to(g: &SwitchGraph, ud: &RootedUpDown, b: u32, rd: &mut Vec<u32>) {
    rd.clear();
    rd.resize(2 * g.num_switches(), u32::MAX);
    let mut queue = std::collections::VecDeque::new();
    for s in [2 * b, 2 * b + 1] {
        rd[s as usize] = 0;
        queue.push_back(s);
    }
    while let Some(v) = queue.pop_front() {
        let (y, ph) = (v / 2, v & 1);
        for &c in g.in_channels(y) {
            let x = g.chan_tail()[c as usize];
            let preds: &[u32] = match (ud.up[c as usize], ph) {
                (true, 0) => &[0],
                (false, 1) => &[0, 1],
                _ => &[],
            };
            for &pp in preds {
                let u = 2 * x + pp;
                if rd[u as usize] == u32::MAX {
                    rd[u as usize] = rd[v as usize] + 1;
                    queue.push_back(u);
                }
            }
        }
    }
}

struct Enum<'a, R: Rng> {
    g: &'a SwitchGraph,
    ud: &'a RootedUpDown,
    rd: &'a [u32],
    b: u32,
    len: u32,
    visited: Vec<bool>,
    stack: Vec<u32>,
    /// Paths kept at this length (reservoir when more than `room` exist).
    kept: Vec<Vec<u32>>,
    room: usize,
    seen: u64,
    steps: u64,
    max_steps: u64,
    rng: &'a mut R,
}

impl<R: Rng> Enum<'_, R> {
    fn dfs(&mut self, state: u32) {
        self.steps += 1;
        if self.steps > self.max_steps {
            return;
        }
        let x = state / 2;
        if x == self.b {
            if self.stack.len() as u32 == self.len {
                // Reservoir sampling: every path of this length is kept with equal probability.
                self.seen += 1;
                if self.kept.len() < self.room {
                    self.kept.push(self.stack.clone());
                } else {
                    let j = self.rng.gen_range(0..self.seen);
                    if (j as usize) < self.room {
                        self.kept[j as usize].clone_from(&self.stack);
                    }
                }
            }
            return;
        }
        let depth = self.stack.len() as u32;
        for c in self.g.out_channels(x) {
            let Some(v) = next_state(self.ud, self.g, state, c) else {
                continue;
            };
            let y = (v / 2) as usize;
            if self.visited[y]
                || self.rd[v as usize] == u32::MAX
                || depth + 1 + self.rd[v as usize] > self.len
            {
                continue;
            }
            self.visited[y] = true;
            self.stack.push(c);
            self.dfs(v);
            self.stack.pop();
            self.visited[y] = false;
        }
    }
}

/// Enumerates shortest loopless legal paths between switch pairs ([`LegalPaths::k_shortest`]),
/// keeping its scratch across pairs.
pub struct LegalPaths<'a, R: Rng> {
    g: &'a SwitchGraph,
    ud: &'a RootedUpDown,
    cfg: &'a PathSelectionConfig,
    rng: &'a mut R,
    /// Hops from every state to the current destination.
    rd: Vec<u32>,
}

impl<'a, R: Rng> LegalPaths<'a, R> {
    pub fn new(
        g: &'a SwitchGraph,
        ud: &'a RootedUpDown,
        cfg: &'a PathSelectionConfig,
        rng: &'a mut R,
    ) -> Self {
        LegalPaths {
            g,
            ud,
            cfg,
            rng,
            rd: Vec::new(),
        }
    }

    /// Up to `k` shortest loopless legal paths from switch `a` to switch `b` (a != b), in order
    /// of length: every path shorter than the k-th is included, and paths as long as the k-th are
    /// sampled uniformly (seeded) to fill the rest — Yen's k-shortest set with ties at the cut
    /// broken at random. Returns whether the step budget was hit.
    pub fn k_shortest(&mut self, a: u32, b: u32, out: &mut Vec<Vec<u32>>) -> bool {
        let (g, cfg) = (self.g, self.cfg);
        out.clear();
        dist_to(g, self.ud, b, &mut self.rd);
        let h = self.rd[2 * a as usize];
        if h == u32::MAX || a == b {
            return false;
        }
        let max_len = if cfg.minimal_only {
            h
        } else {
            g.num_switches() as u32 - 1
        };
        let mut e = Enum {
            g,
            ud: self.ud,
            rd: &self.rd,
            b,
            len: h,
            visited: vec![false; g.num_switches()],
            stack: Vec::new(),
            kept: Vec::new(),
            room: 0,
            seen: 0,
            steps: 0,
            max_steps: cfg.max_steps_per_pair,
            rng: &mut *self.rng,
        };
        for len in h..=max_len {
            e.len = len;
            e.room = cfg.k as usize - out.len();
            e.kept.clear();
            e.seen = 0;
            e.visited[a as usize] = true;
            e.dfs(2 * a);
            e.visited[a as usize] = false;
            out.append(&mut e.kept);
            if out.len() >= cfg.k as usize || e.steps > e.max_steps {
                break;
            }
        }
        e.steps > e.max_steps
    }
}

/// Path selection (Koibuchi, Jouraku, Amano [7] in Nienaber et al.), as reconstructed here. Candidates:
/// [`LegalPaths::k_shortest`] per ordered switch pair, shared by all machine pairs between those
/// switches. Load model: each machine pair spreads its unit of traffic evenly over its remaining
/// candidates (exact integer arithmetic, scaled by lcm(1..=k)). Most loaded link first: take the
/// channel with the largest load that still carries a removable candidate (one of a pair with two
/// or more left), remove from it the candidate of the pair with the most candidates left, update
/// the loads, and repeat until every pair has one path. Pairs on one switch use no channel.
pub fn path_selection<R: Rng>(
    g: &SwitchGraph,
    ud: &RootedUpDown,
    mach: &Machines,
    cfg: &PathSelectionConfig,
    rng: &mut R,
) -> Result<(MachineRouting, PathSelectionStats), LidError> {
    if cfg.k == 0 || cfg.k > 16 {
        return Err(LidError::InvalidConfig(format!(
            "path selection needs 1 <= k <= 16, got {}",
            cfg.k
        )));
    }
    let mut stats = PathSelectionStats::default();
    let cands = Candidates::enumerate(&mut LegalPaths::new(g, ud, cfg, rng), mach, &mut stats)?;
    let units = Units::new(mach, g.num_switches(), cfg.unit);
    let layout = Layout::new(&cands, &units)?;
    let mut removal = Removal::new(&layout, g.num_channels(), cfg.k as usize);
    stats.removals = removal.run();
    let alive = removal.finish();
    Ok((layout.routing(&alive, mach.len()), stats))
}

/// Candidate paths (channel lists) per ordered switch pair `sp = a * ns + b`; only pairs of
/// switches with machines have any.
struct Candidates {
    /// The candidates of switch pair `sp` are `cand_start[sp]..cand_start[sp + 1]`.
    cand_start: Vec<u32>,
    /// The channels of candidate `q` are `q_chans[q_start[q]..q_start[q + 1]]`.
    q_start: Vec<u32>,
    q_chans: Vec<u32>,
}

impl Candidates {
    /// Up to k legal paths for every ordered pair of distinct switches with machines; counts
    /// the short pairs and budget hits and the mean candidates into `stats`.
    fn enumerate<R: Rng>(
        search: &mut LegalPaths<'_, R>,
        mach: &Machines,
        stats: &mut PathSelectionStats,
    ) -> Result<Self, LidError> {
        let ns = search.g.num_switches();
        let k = search.cfg.k as usize;
        let mut has_machines = vec![false; ns];
        for &a in &mach.switch {
            has_machines[a as usize] = true;
        }
        let mut cand_start = vec![0u32; ns * ns + 1];
        let mut q_start: Vec<u32> = vec![0];
        let mut q_chans: Vec<u32> = Vec::new();
        let mut paths = Vec::new();
        let mut pairs_enumerated = 0u64;
        for a in 0..ns as u32 {
            for b in 0..ns as u32 {
                let sp = (a as usize) * ns + b as usize;
                if a != b && has_machines[a as usize] && has_machines[b as usize] {
                    stats.budget_hits += u64::from(search.k_shortest(a, b, &mut paths));
                    if paths.is_empty() {
                        return Err(LidError::Fabric(format!(
                            "no legal path from switch {a} to switch {b}"
                        )));
                    }
                    pairs_enumerated += 1;
                    stats.short_pairs += u64::from(paths.len() < k);
                    for p in &paths {
                        q_chans.extend_from_slice(p);
                        q_start.push(q_chans.len() as u32);
                    }
                }
                cand_start[sp + 1] = (q_start.len() - 1) as u32;
            }
        }
        stats.mean_candidates = (q_start.len() - 1) as f64 / pairs_enumerated.max(1) as f64;
        Ok(Candidates {
            cand_start,
            q_start,
            q_chans,
        })
    }
}

/// The selection units (see [`SelectionUnit`]): each gets one path.
struct Units {
    /// Switch pair and traffic weight of every unit.
    units: Vec<(u32, u64)>,
    /// Unit of every machine pair `s * m + d` ([`NO_UNIT`]: both machines on one switch).
    unit_of: Vec<u32>,
}

impl Units {
    fn new(mach: &Machines, ns: usize, unit: SelectionUnit) -> Self {
        let m = mach.len();
        let mut machines_at = vec![0u64; ns];
        for &a in &mach.switch {
            machines_at[a as usize] += 1;
        }
        let mut units: Vec<(u32, u64)> = Vec::new();
        let mut unit_of = vec![NO_UNIT; m * m];
        let mut unit_index: HashMap<u64, u32> = HashMap::new();
        for s in 0..m {
            for d in 0..m {
                let (a, b) = (mach.switch[s] as usize, mach.switch[d] as usize);
                if s == d || a == b {
                    continue;
                }
                let sp = (a * ns + b) as u32;
                let (key, w) = match unit {
                    SelectionUnit::MachinePair => ((s * m + d) as u64, 1),
                    SelectionUnit::SwitchPair => (u64::from(sp), machines_at[a] * machines_at[b]),
                    SelectionUnit::SourceSwitchToMachine => ((a * m + d) as u64, machines_at[a]),
                };
                let u = *unit_index.entry(key).or_insert_with(|| {
                    units.push((sp, w));
                    (units.len() - 1) as u32
                });
                unit_of[s * m + d] = u;
            }
        }
        Units { units, unit_of }
    }
}

/// The candidates of every unit with their incidences (unit, candidate, hop), numbered per unit:
/// what the removal works on.
struct Layout<'a> {
    cands: &'a Candidates,
    units: &'a Units,
    /// The incidences of unit `p` are `inc_base[p]..inc_base[p + 1]`.
    inc_base: Vec<u32>,
}

impl<'a> Layout<'a> {
    fn new(cands: &'a Candidates, units: &'a Units) -> Result<Self, LidError> {
        let mut inc_base: Vec<u32> = vec![0];
        for &(sp, _) in &units.units {
            let (q0, q1) = (
                cands.cand_start[sp as usize] as usize,
                cands.cand_start[sp as usize + 1] as usize,
            );
            let next = u64::from(*inc_base.last().unwrap_or(&0))
                + u64::from(cands.q_start[q1] - cands.q_start[q0]);
            if next >= u64::from(u32::MAX) {
                return Err(LidError::TooLarge("path selection incidences"));
            }
            inc_base.push(next as u32);
        }
        Ok(Layout {
            cands,
            units,
            inc_base,
        })
    }

    fn num_units(&self) -> usize {
        self.units.units.len()
    }

    fn num_incidences(&self) -> usize {
        *self.inc_base.last().unwrap_or(&0) as usize
    }

    /// Traffic weight of unit `p`.
    fn weight(&self, p: usize) -> u64 {
        self.units.units[p].1
    }

    /// First candidate of unit `p`.
    fn first_cand(&self, p: usize) -> usize {
        self.cands.cand_start[self.units.units[p].0 as usize] as usize
    }

    /// Candidates of unit `p`.
    fn ncand(&self, p: usize) -> usize {
        let sp = self.units.units[p].0 as usize;
        (self.cands.cand_start[sp + 1] - self.cands.cand_start[sp]) as usize
    }

    /// The incidences (incidence id, channel) of candidate `j` of unit `p`.
    fn cand_incs(&self, p: usize, j: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let q_start = &self.cands.q_start;
        let q0 = self.first_cand(p);
        let (h0, h1) = (q_start[q0 + j], q_start[q0 + j + 1]);
        let base = self.inc_base[p] + (h0 - q_start[q0]);
        (h0..h1)
            .enumerate()
            .map(move |(i, h)| (base + i as u32, self.cands.q_chans[h as usize]))
    }

    /// The unit and candidate of incidence `inc`.
    fn candidate_of(&self, inc: u32) -> (usize, usize) {
        let p = self.inc_base.partition_point(|&x| x <= inc) - 1;
        let q_start = &self.cands.q_start;
        let q0 = self.first_cand(p);
        let off = q_start[q0] + (inc - self.inc_base[p]);
        let j = (0..self.ncand(p))
            .find(|&j| q_start[q0 + j] <= off && off < q_start[q0 + j + 1])
            .expect("in pair");
        (p, j)
    }

    /// Every machine pair's path: the candidate `alive` leaves to its unit.
    fn routing(&self, alive: &[u16], m: usize) -> MachineRouting {
        let mut rt = MachineRouting::new(m);
        for s in 0..m {
            for d in 0..m {
                if s == d {
                    continue;
                }
                let u = self.units.unit_of[s * m + d];
                rt.route[s * m + d] = if u == NO_UNIT {
                    0 // both machines on one switch
                } else {
                    let u = u as usize;
                    let q = self.first_cand(u) + alive[u].trailing_zeros() as usize;
                    let q_start = &self.cands.q_start;
                    let chans = &self.cands.q_chans[q_start[q] as usize..q_start[q + 1] as usize];
                    rt.intern(chans)
                };
            }
        }
        rt
    }
}

/// Most-loaded-link-first removal over a [`Layout`], in exact integer loads.
struct Removal<'a> {
    lay: &'a Layout<'a>,
    /// lcm(1..=k): a unit of weight `w` with `n` candidates left puts `w * lcm / n` on each.
    lcm: u64,
    /// `share[n] = lcm / n`.
    share: Vec<u64>,
    /// Bit `j` set while candidate `j` of the unit is left.
    alive: Vec<u16>,
    load: Vec<u64>,
    /// Removable incidences per (channel, candidates left of their unit): `c * nb + n`.
    bucket: Vec<Vec<u32>>,
    nb: usize,
    /// Position of every incidence in its bucket.
    pos: Vec<u32>,
    /// Removable incidences per channel.
    removable: Vec<u64>,
}

impl<'a> Removal<'a> {
    /// Every unit with all its candidates, charged to the loads.
    fn new(lay: &'a Layout<'a>, nc: usize, kmax: usize) -> Self {
        let lcm = (1..=kmax as u64).fold(1u64, |l, x| l / gcd(l, x) * x);
        let nb = kmax + 1;
        let mut r = Removal {
            lay,
            lcm,
            share: (0..=kmax as u64)
                .map(|n| lcm.checked_div(n).unwrap_or(0))
                .collect(),
            alive: vec![0; lay.num_units()],
            load: vec![0u64; nc],
            bucket: vec![Vec::new(); nc * nb],
            nb,
            pos: vec![0; lay.num_incidences()],
            removable: vec![0u64; nc],
        };
        for p in 0..lay.num_units() {
            r.alive[p] = ((1u32 << lay.ncand(p)) - 1) as u16;
            r.charge(p);
        }
        r
    }

    /// Removes until every unit has one candidate left; returns the removals.
    fn run(&mut self) -> u64 {
        let mut removals = 0;
        while let Some(c) = self.most_loaded() {
            self.remove_on(c);
            removals += 1;
        }
        removals
    }

    /// The most loaded channel that still has something to remove (ties: lowest id).
    fn most_loaded(&self) -> Option<usize> {
        let mut best = None;
        let mut best_load = 0;
        for c in 0..self.load.len() {
            if self.removable[c] > 0 && (best.is_none() || self.load[c] > best_load) {
                best = Some(c);
                best_load = self.load[c];
            }
        }
        best
    }

    /// Removes from channel `c` the candidate of the unit with the most candidates left (the last
    /// queued among those).
    fn remove_on(&mut self, c: usize) {
        let nb = self.nb;
        let n_sel = (2..nb)
            .rev()
            .find(|&n| !self.bucket[c * nb + n].is_empty())
            .expect("removable count");
        let inc = *self.bucket[c * nb + n_sel].last().expect("non-empty");
        let (p, j) = self.lay.candidate_of(inc);
        debug_assert_eq!(self.alive[p].count_ones() as usize, n_sel);
        self.discharge(p);
        self.alive[p] &= !(1u16 << j);
        self.charge(p);
    }

    /// Adds the loads of unit `p`'s candidates left, and queues them as removable when two or
    /// more are left.
    fn charge(&mut self, p: usize) {
        let (alive, w) = (self.alive[p], self.lay.weight(p));
        let n = alive.count_ones() as usize;
        for jj in (0..self.lay.ncand(p)).filter(|&jj| alive >> jj & 1 == 1) {
            for (i, ch) in self.lay.cand_incs(p, jj) {
                self.load[ch as usize] += w * self.share[n];
                if n >= 2 {
                    let bk = &mut self.bucket[ch as usize * self.nb + n];
                    self.pos[i as usize] = bk.len() as u32;
                    bk.push(i);
                    self.removable[ch as usize] += 1;
                }
            }
        }
    }

    /// Undoes [`Removal::charge`] of unit `p` (which has two or more candidates left).
    fn discharge(&mut self, p: usize) {
        let (alive, w) = (self.alive[p], self.lay.weight(p));
        let n = alive.count_ones() as usize;
        for jj in (0..self.lay.ncand(p)).filter(|&jj| alive >> jj & 1 == 1) {
            for (i, ch) in self.lay.cand_incs(p, jj) {
                self.load[ch as usize] -= w * self.share[n];
                let bk = &mut self.bucket[ch as usize * self.nb + n];
                let at = self.pos[i as usize] as usize;
                let last = bk.pop().expect("incidence in bucket");
                if last != i {
                    bk[at] = last;
                    self.pos[last as usize] = at as u32;
                }
                self.removable[ch as usize] -= 1;
            }
        }
    }

    /// The candidate left to every unit (a bit of `alive`), once [`Removal::run`] is done.
    fn finish(self) -> Vec<u16> {
        let Removal {
            lay,
            lcm,
            alive,
            load,
            ..
        } = self;
        // Every unit is down to one path: the exact loads must be lcm x the traffic on each channel.
        debug_assert!({
            let mut want = vec![0u64; load.len()];
            for (p, a) in alive.iter().enumerate() {
                let j = a.trailing_zeros() as usize;
                for (_, c) in lay.cand_incs(p, j) {
                    want[c as usize] += lay.weight(p) * lcm;
                }
            }
            want == load
        });
        alive
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
