//! The effective bisection bandwidth Λ: random bisection patterns, and the bandwidth of traffic
//! within a group of terminals or between two.
//!
//! **Cost.** Per pattern of F flows (⌊P/2⌋ for Λ over all P ports, twice that with
//! [`PairTraffic::Exchange`]): shuffling the senders, `O(P)` (the sending group's size), sorting
//! the flows by DLID, `O(F log F)`, then walking each flow through the tables and reading its
//! channels' counts back, `O(F·h)` for h hops walked per flow on average (a walk ends after S + 1
//! hops when the tables loop). N patterns: `O(N·(P + F log F + F·h))`, in parallel. Memory per
//! thread: 4·C bytes of channel counters, reset only where touched, 12 bytes per flow, 4 per hop
//! and 4 per sending port; one `O(D + P)` set-up pass over the LIDs and ports.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::graph::SwitchGraph;
use crate::routing::{walk, Lft};

use super::all_pairs::lmc_bits;
use super::{check_shape, Bisection, LidChoice, MetricsError, PairTraffic, NOT_A_TERMINAL};

struct PatternScratch {
    count: Vec<u32>,
    /// Channels of every flow of the pattern, back to back; `ends[i]` closes flow i, `u32::MAX`
    /// marks a flow that did not deliver.
    chans: Vec<u32>,
    ends: Vec<u32>,
    perm: Vec<u32>,
    /// The pattern's flows as (DLID << 32 | source switch), sorted.
    keys: Vec<u64>,
}

impl PatternScratch {
    fn new(g: &SwitchGraph) -> Self {
        PatternScratch {
            count: vec![0; g.num_channels()],
            chans: Vec::new(),
            ends: Vec::new(),
            perm: Vec::with_capacity(g.terminals().len()),
            keys: Vec::new(),
        }
    }
}

/// Per CA/router port (index into `g.terminals()`): its switch, base LID and LMC, gathered once
/// from `g.dests()` (the fabric's endpoints are not needed).
struct Terminals {
    switch: Vec<u32>,
    base: Vec<u16>,
    lmc: Vec<u8>,
}

impl Terminals {
    fn new(g: &SwitchGraph) -> Self {
        let n_end = g
            .dests()
            .iter()
            .map(|d| d.endpoint as usize + 1)
            .max()
            .unwrap_or(0);
        let mut term_of_endpoint = vec![NOT_A_TERMINAL; n_end];
        for (t, &(e, _)) in g.terminals().iter().enumerate() {
            if let Some(x) = term_of_endpoint.get_mut(e as usize) {
                *x = t as u32;
            }
        }
        let p = g.terminals().len();
        let mut base = vec![0u16; p];
        let mut lmc = vec![0u8; p];
        for d in g.dests() {
            let t = term_of_endpoint[d.endpoint as usize];
            if t == NOT_A_TERMINAL {
                continue;
            }
            if d.lid_offset == 0 {
                base[t as usize] = d.lid;
            }
            lmc[t as usize] = lmc[t as usize].max(lmc_bits(d.lid_offset));
        }
        Terminals {
            switch: g.terminals().iter().map(|&(_, s)| s).collect(),
            base,
            lmc,
        }
    }

    /// The destination LID of flow u -> v.
    #[inline]
    fn flow_lid(&self, u: u32, v: u32, choice: LidChoice) -> u16 {
        let base = self.base[v as usize];
        match choice {
            LidChoice::Base => base,
            LidChoice::BySource => base + (u % (1u32 << self.lmc[v as usize])) as u16,
        }
    }
}

/// Mean bandwidth of the flows `(u, v)` (indices into `g.terminals()`) under the linear congestion
/// model: each flow gets 1 / (most flows on any channel of its path), 0 if its route fails.
fn pattern_value(
    g: &SwitchGraph,
    lft: &Lft,
    terms: &Terminals,
    flows: impl Iterator<Item = (u32, u32)>,
    choice: LidChoice,
    sc: &mut PatternScratch,
) -> f64 {
    sc.chans.clear();
    sc.ends.clear();
    // Walk the flows in DLID order: flows to nearby LIDs share the table lines of their last hops
    // (the mean bandwidth does not depend on the order, and sorting is deterministic).
    sc.keys.clear();
    sc.keys.extend(flows.map(|(u, v)| {
        (u64::from(terms.flow_lid(u, v, choice)) << 32) | u64::from(terms.switch[u as usize])
    }));
    sc.keys.sort_unstable();
    for &key in &sc.keys {
        let start = sc.chans.len();
        let (lid, from) = ((key >> 32) as u16, key as u32);
        let chans = &mut sc.chans;
        match walk(g, lft, from, lid, |c| chans.push(c)) {
            Ok(_) => {
                for &c in &sc.chans[start..] {
                    sc.count[c as usize] += 1;
                }
                sc.ends.push(sc.chans.len() as u32);
            }
            _ => {
                sc.chans.truncate(start);
                sc.ends.push(u32::MAX);
            }
        }
    }
    let mut sum = 0.0;
    let mut start = 0usize;
    for &end in &sc.ends {
        if end == u32::MAX {
            continue;
        }
        let path = &sc.chans[start..end as usize];
        let worst = path
            .iter()
            .map(|&c| sc.count[c as usize])
            .max()
            .unwrap_or(1);
        sum += 1.0 / f64::from(worst);
        start = end as usize;
    }
    // Reset only what this pattern touched.
    for &c in &sc.chans {
        sc.count[c as usize] = 0;
    }
    if sc.ends.is_empty() {
        0.0
    } else {
        sum / sc.ends.len() as f64
    }
}

/// What [`effective_bisection_bandwidth`] simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BisectionSpec {
    pub patterns: u32,
    pub seed: u64,
    pub lid_choice: LidChoice,
    pub traffic: PairTraffic,
}

impl BisectionSpec {
    /// Hoefler et al.'s definition: one-way flows to base LIDs.
    pub fn new(patterns: u32, seed: u64) -> Self {
        BisectionSpec {
            patterns,
            seed,
            lid_choice: LidChoice::Base,
            traffic: PairTraffic::OneWay,
        }
    }
}

/// Λ of `lft` over `patterns` random bisections with seed 1, 0 where it cannot be measured: how
/// the engines judge one routing of a fabric against another (candidates, repairs).
pub fn judging_lambda(g: &SwitchGraph, lft: &Lft, patterns: u32) -> f64 {
    effective_bisection_bandwidth(g, lft, &BisectionSpec::new(patterns, 1))
        .map_or(0.0, |b| b.lambda)
}

/// Effective bisection bandwidth Λ over `spec.patterns` random bisections (see the module doc).
/// Deterministic for a given seed, whatever the thread count.
pub fn effective_bisection_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    spec: &BisectionSpec,
) -> Result<Bisection, MetricsError> {
    let all: Vec<u32> = (0..g.terminals().len() as u32).collect();
    group_bandwidth(g, lft, spec, &all, None)
}

/// Λ of traffic within a group of terminals or from it to another (indices into
/// `g.terminals()`): with `to` = `None`, random bisections of `from` (all terminals: Hoefler et
/// al.'s Λ, [`effective_bisection_bandwidth`]); with `to`, every terminal of the smaller side
/// paired with a distinct random one of the other, flows from `from` to `to` (both ways with
/// [`PairTraffic::Exchange`]), e.g. compute nodes writing to I/O nodes.
pub fn group_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    spec: &BisectionSpec,
    from: &[u32],
    to: Option<&[u32]>,
) -> Result<Bisection, MetricsError> {
    let BisectionSpec {
        patterns,
        seed,
        lid_choice: choice,
        traffic,
    } = *spec;
    check_shape(g, lft)?;
    let terms = Terminals::new(g);
    // One-way pairs per pattern.
    let pairs = match to {
        None => from.len() / 2,
        Some(to) => from.len().min(to.len()),
    };
    let values: Vec<f64> = (0..patterns)
        .into_par_iter()
        .map_init(
            || PatternScratch::new(g),
            |sc, i| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(u64::from(i));
                let mut perm = std::mem::take(&mut sc.perm);
                perm.clear();
                perm.extend_from_slice(from);
                perm.shuffle(&mut rng);
                let h = pairs;
                let pair = |j: usize| match to {
                    None => (perm[j], perm[h + j]),
                    Some(to) => (perm[j], to[j]),
                };
                let v = match traffic {
                    PairTraffic::OneWay => {
                        pattern_value(g, lft, &terms, (0..h).map(pair), choice, sc)
                    }
                    PairTraffic::Exchange => {
                        let flows = (0..h).flat_map(|j| {
                            let (a, b) = pair(j);
                            [(a, b), (b, a)]
                        });
                        pattern_value(g, lft, &terms, flows, choice, sc)
                    }
                };
                sc.perm = perm;
                v
            },
        )
        .collect();
    let n = values.len().max(1) as f64;
    Ok(Bisection {
        patterns,
        seed,
        traffic,
        flows: pairs as u64
            * if traffic == PairTraffic::Exchange {
                2
            } else {
                1
            },
        lambda: values.iter().sum::<f64>() / n,
        min: if values.is_empty() {
            0.0
        } else {
            values.iter().copied().fold(f64::INFINITY, f64::min)
        },
        max: values.iter().copied().fold(0.0, f64::max),
    })
}

/// Mean flow bandwidth of one given pattern, flows as (source, destination) indices into
/// `g.terminals()`, under the linear congestion model of [`effective_bisection_bandwidth`]. Flows
/// naming a port out of range are ignored.
pub fn pattern_bandwidth(
    g: &SwitchGraph,
    lft: &Lft,
    flows: &[(u32, u32)],
    choice: LidChoice,
) -> Result<f64, MetricsError> {
    check_shape(g, lft)?;
    let terms = Terminals::new(g);
    let p = g.terminals().len() as u32;
    let mut sc = PatternScratch::new(g);
    let flows = flows.iter().copied().filter(|&(u, v)| u < p && v < p);
    Ok(pattern_value(g, lft, &terms, flows, choice, &mut sc))
}
