//! The reproducible study of Nienaber et al. §5: LID assignment heuristics and path computation schemes on
//! random irregular fabrics, printed as the paper's Tables 1–3.
//!
//! Setup, as in the paper: X machines over Y switches (X/Y = 128, 256, 512 over 16, 32, 64); a
//! random switch graph of average degree 8; machines placed on switches uniformly at random; 32
//! instances per configuration; Up*/Down* with a random root. The paper drew its switch graphs with
//! GT-ITM without naming the model or its parameters; we draw a uniform random simple graph with
//! exactly Y*8/2 links (average degree exactly 8) and redraw until it is connected. Everything is
//! seeded ([`instance_seed`]).
//!
//! Per instance:
//! - Table 1: [`routes::shortest_widest`] paths, LIDs of each heuristic (LMC-rounded, summed over
//!   destinations);
//! - Table 2: [`routes::path_selection`] paths, the same;
//! - Table 3: maximum link load and LIDs of fully explicit routing, destination renaming, and
//!   *separate* (path selection + color/L).
//!
//! Where the paper is silent, [`StudyConfig::default`] makes these choices (each a field, so the
//! alternatives can be run):
//! - path selection picks one path per *switch pair* ([`routes::SelectionUnit::SwitchPair`]):
//!   per machine pair, the LIDs come out 2-3x the paper's and grow with machines per switch,
//!   while the paper's Table 2 LIDs per machine fall slightly as machines grow;
//! - candidates are the 16 shortest loopless legal paths, longer ones included (Yen, as cited):
//!   restricted to minimal paths, most switch pairs have only one or two, while the paper says
//!   only "some pairs" have fewer than 16;
//! - renaming computes the shortest-widest paths and assigns LIDs first-fit as it goes
//!   ([`routes::RenamingPaths::Balanced`]), see there;
//! - color/S and color/L rank paths by split degree in the graph of the current round
//!   ([`super::assign::DegreeScope::Round`]); the whole-graph degree gives nearly the same
//!   numbers, a degree updated after every step makes color/S competitive, which the paper's
//!   tables (color/S always worst) rule out.
//!
//! [`run_study`] is the entry point; [`StudyResult`] prints the tables (`Display`) and
//! [`StudyResult::paper_comparison`] sets them beside the paper's numbers.

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::assign::{
    lids_for, DegreeScope, Heuristic, LidAssignment, PathSet, SizeOrder, SplitGraph,
};
use super::routes::{
    self, LinkLoad, MachineRouting, Machines, PathMetric, PathSelectionConfig, PathSelectionStats,
    RenamingPaths, RootedUpDown, RouteLength,
};
use super::LidError;
use crate::graph::SwitchGraph;
use crate::topo::{random_irregular, TopoError};

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyConfig {
    /// (machines, switches) per configuration.
    pub configs: Vec<(u32, u32)>,
    /// Random instances per configuration.
    pub instances: u32,
    /// Average switch-to-switch degree.
    pub avg_degree: u32,
    pub seed: u64,
    pub path_selection: PathSelectionConfig,
    /// Path weight rule of shortest-widest (and of renaming's path choice).
    pub metric: PathMetric,
    /// How destination renaming picks its shortest paths.
    pub renaming: RenamingPaths,
    /// Which split degree color/S and color/L rank paths by (the paper leaves it open).
    pub color_scope: DegreeScope,
    /// Check every routing (connected, Up*/Down*, loop-free, minimal where the scheme promises it)
    /// and every LID assignment (no split within a LID) while running.
    pub check: bool,
}

impl Default for StudyConfig {
    /// The paper's setup.
    fn default() -> Self {
        StudyConfig {
            configs: PAPER_CONFIGS.to_vec(),
            instances: 32,
            avg_degree: 8,
            seed: 2007,
            path_selection: PathSelectionConfig::default(),
            metric: PathMetric::Sum,
            renaming: RenamingPaths::default(),
            color_scope: DegreeScope::Round,
            check: true,
        }
    }
}

/// The nine configurations of Tables 1–3, in the paper's order.
pub const PAPER_CONFIGS: [(u32, u32); 9] = [
    (128, 16),
    (256, 16),
    (512, 16),
    (128, 32),
    (256, 32),
    (512, 32),
    (128, 64),
    (256, 64),
    (512, 64),
];

/// The paper's Table 1 (shortest widest) and Table 2 (path selection): average total LIDs per
/// heuristic in [`Heuristic::ALL`] order, per configuration in [`PAPER_CONFIGS`] order.
pub const PAPER_TABLE1: [[f64; 5]; 9] = [
    [478.7, 478.9, 477.3, 479.3, 476.4],
    [1044.3, 1045.4, 1041.5, 1047.7, 1039.2],
    [2218.3, 2220.1, 2211.8, 2220.4, 2208.5],
    [451.5, 453.9, 452.9, 461.3, 443.0],
    [1078.8, 1084.7, 1079.0, 1100.0, 1062.4],
    [2428.7, 2440.2, 2425.8, 2461.0, 2392.1],
    [422.8, 427.7, 427.0, 441.5, 407.4],
    [1015.5, 1022.2, 1019.3, 1044.6, 990.6],
    [2325.8, 2338.4, 2330.1, 2385.1, 2274.4],
];
pub const PAPER_TABLE2: [[f64; 5]; 9] = [
    [520.9, 524.2, 514.0, 581.2, 466.0],
    [951.3, 952.7, 935.0, 1062.6, 851.2],
    [1829.2, 1852.8, 1823.0, 2038.7, 1653.2],
    [540.3, 546.7, 539.3, 611.3, 466.0],
    [1006.7, 1018.2, 1002.2, 1130.8, 887.2],
    [1904.0, 1920.3, 1895.7, 2115.8, 1688.7],
    [528.0, 541.1, 530.5, 599.4, 460.5],
    [1054.9, 1092.9, 1068.1, 1197.9, 921.4],
    [2019.9, 2075.4, 2043.4, 2278.6, 1786.6],
];
/// The paper's Table 3: (load, LIDs) of fully explicit, renaming, separate. (Its 128/32 and
/// 128/64 rows carry identical loads, most likely a copy slip in the paper.)
pub const PAPER_TABLE3: [[f64; 6]; 9] = [
    [4.34, 128.0, 3.84, 477.8, 3.70, 466.0],
    [8.65, 256.0, 7.52, 1044.9, 7.35, 851.2],
    [17.95, 512.0, 15.46, 2213.3, 14.91, 1653.2],
    [3.29, 128.0, 3.01, 448.1, 2.75, 466.0],
    [6.89, 256.0, 6.26, 1079.2, 5.8, 887.2],
    [14.71, 512.0, 13.24, 2422.8, 12.37, 1688.7],
    [3.29, 128.0, 3.01, 420.0, 2.75, 460.5],
    [6.15, 256.0, 5.72, 1011.8, 5.13, 921.4],
    [11.36, 512.0, 10.55, 2323.4, 9.54, 1786.6],
];

/// Everything measured on one random instance.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceResult {
    pub machines: u32,
    pub switches: u32,
    pub instance: u32,
    pub seed: u64,
    pub links: u32,
    pub root: u32,
    /// LIDs allocated (sum over destinations of 2^ceil(log2 k)) per heuristic, shortest widest.
    pub sw_lids: [u64; 5],
    /// Configurations before rounding (sum of k), shortest widest.
    pub sw_configs: [u64; 5],
    pub ps_lids: [u64; 5],
    pub ps_configs: [u64; 5],
    pub sw_load: LinkLoad,
    pub ps_load: LinkLoad,
    pub explicit_load: LinkLoad,
    pub explicit_lids: u64,
    pub renaming_load: LinkLoad,
    pub renaming_lids: u64,
    pub ps_stats: PathSelectionStats,
    /// Lower bound on the directed max link load of any routing: the machines of a switch must
    /// send (and receive) their traffic to other switches over its links.
    pub load_bound: f64,
    pub seconds: f64,
}

/// Means over the instances of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigSummary {
    pub machines: u32,
    pub switches: u32,
    pub instances: u32,
    pub sw_lids: [f64; 5],
    pub sw_configs: [f64; 5],
    pub ps_lids: [f64; 5],
    pub ps_configs: [f64; 5],
    pub sw_load: f64,
    pub ps_load: f64,
    pub explicit_load: f64,
    pub explicit_lids: f64,
    pub renaming_load: f64,
    pub renaming_lids: f64,
    /// The same loads counting both directions of a link together.
    pub bidirectional_loads: [f64; 4],
    pub mean_candidates: f64,
    pub load_bound: f64,
    /// Sum of the instances' run times (CPU time, roughly: instances run in parallel).
    pub seconds: f64,
}

impl ConfigSummary {
    /// Separate = path selection + color/L.
    pub fn separate_lids(&self) -> f64 {
        self.ps_lids[4]
    }
    pub fn separate_load(&self) -> f64 {
        self.ps_load
    }
}

/// The study's outcome.
#[derive(Clone, Debug)]
pub struct StudyResult {
    pub config: StudyConfig,
    pub summaries: Vec<ConfigSummary>,
    pub instances: Vec<InstanceResult>,
    /// Wall-clock time of the whole study.
    pub elapsed: Duration,
}

/// Seed of instance `i` of configuration (machines, switches): a SplitMix64 mix, so instances are
/// independent of each other and of the order they run in.
pub fn instance_seed(seed: u64, machines: u32, switches: u32, i: u32) -> u64 {
    let mut z = seed ^ (u64::from(machines) << 40) ^ (u64::from(switches) << 20) ^ u64::from(i);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Max over switches of (traffic its machines send to other switches) / (its switch links).
fn load_bound(g: &SwitchGraph, mach: &Machines) -> f64 {
    let m = mach.len() as f64;
    let mut at = vec![0f64; g.num_switches()];
    for &s in &mach.switch {
        at[s as usize] += 1.0;
    }
    (0..g.num_switches())
        .map(|s| {
            let links = g.out_channels(s as u32).len() as f64;
            at[s] * (m - at[s]) / (m - 1.0) / links
        })
        .fold(1.0, f64::max)
}

/// LIDs of every heuristic for one routing: (allocated, configurations) per heuristic.
fn heuristic_lids(
    g: &SwitchGraph,
    mach: &Machines,
    rt: &MachineRouting,
    cfg: &StudyConfig,
) -> Result<([u64; 5], [u64; 5]), LidError> {
    let mut lids = [0u64; 5];
    let mut configs = [0u64; 5];
    let mut ps = PathSet::new();
    let mut scratch = Vec::new();
    for d in 0..mach.len() {
        rt.dest_paths(g, mach, d, &mut ps, &mut scratch);
        let sg = SplitGraph::new(&ps);
        for (i, h) in Heuristic::ALL.into_iter().enumerate() {
            let colour = match h {
                Heuristic::ColorS => sg.color_with(SizeOrder::SmallestFirst, cfg.color_scope),
                Heuristic::ColorL => sg.color_with(SizeOrder::LargestFirst, cfg.color_scope),
                _ => sg.color(h),
            };
            let a = LidAssignment::from_class_colors(&sg, &colour);
            if cfg.check {
                a.validate(&ps)?;
            }
            configs[i] += u64::from(a.num_lids);
            lids[i] += u64::from(a.lids_allocated()?);
        }
    }
    Ok((lids, configs))
}

/// Runs one instance.
pub fn run_instance(
    cfg: &StudyConfig,
    machines: u32,
    switches: u32,
    i: u32,
) -> Result<InstanceResult, LidError> {
    let t0 = Instant::now();
    let seed = instance_seed(cfg.seed, machines, switches, i);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let fabric =
        random_irregular(machines, switches, cfg.avg_degree, &mut rng).map_err(|e| match e {
            TopoError::Param { .. } => LidError::InvalidConfig(e.to_string()),
            e => LidError::Fabric(e.to_string()),
        })?;
    let g = SwitchGraph::new(&fabric).map_err(|e| LidError::Fabric(e.to_string()))?;
    let mach = Machines::new(&g);
    let root = rng.gen_range(0..switches);
    let ud = RootedUpDown::new(&g, root)?;

    let sw = routes::shortest_widest(&g, &ud, &mach, cfg.metric)?;
    let ren = routes::destination_renaming(&g, &ud, &mach, cfg.renaming, &mut rng)?;
    let exp = routes::fully_explicit(&g, &ud, &mach)?;
    let (ps, ps_stats) = routes::path_selection(&g, &ud, &mach, &cfg.path_selection, &mut rng)?;
    if cfg.check {
        sw.check(&g, &ud, &mach, "shortest-widest", RouteLength::Shortest)?;
        ren.check(&g, &ud, &mach, "renaming", RouteLength::Shortest)?;
        ren.check_scheme_lids(&g, &mach, "renaming")?;
        exp.check(&g, &ud, &mach, "fully explicit", RouteLength::Any)?;
        exp.check_scheme_lids(&g, &mach, "fully explicit")?;
        ps.check(
            &g,
            &ud,
            &mach,
            "path selection",
            if cfg.path_selection.minimal_only {
                RouteLength::Shortest
            } else {
                RouteLength::Any
            },
        )?;
    }
    let (sw_lids, sw_configs) = heuristic_lids(&g, &mach, &sw, cfg)?;
    let (ps_lids, ps_configs) = heuristic_lids(&g, &mach, &ps, cfg)?;
    let scheme_total = |rt: &MachineRouting| -> Result<u64, LidError> {
        let mut t = 0;
        for &k in rt.scheme_lids.as_deref().unwrap_or(&[]) {
            t += u64::from(lids_for(k).ok_or(LidError::TooManyLids { needed: k })?);
        }
        Ok(t)
    };
    Ok(InstanceResult {
        machines,
        switches,
        instance: i,
        seed,
        links: (g.num_channels() / 2) as u32,
        root,
        sw_lids,
        sw_configs,
        ps_lids,
        ps_configs,
        sw_load: sw.max_link_load(&g),
        ps_load: ps.max_link_load(&g),
        explicit_load: exp.max_link_load(&g),
        explicit_lids: scheme_total(&exp)?,
        renaming_load: ren.max_link_load(&g),
        renaming_lids: scheme_total(&ren)?,
        ps_stats,
        load_bound: load_bound(&g, &mach),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Runs the study; instances run in parallel on rayon's pool.
pub fn run_study(cfg: &StudyConfig) -> Result<StudyResult, LidError> {
    run_study_with_progress(cfg, |_, _| {})
}

/// [`run_study`], calling `progress(done, total)` after every instance.
pub fn run_study_with_progress(
    cfg: &StudyConfig,
    progress: impl Fn(usize, usize) + Sync,
) -> Result<StudyResult, LidError> {
    if cfg.instances == 0 || cfg.configs.is_empty() {
        return Err(LidError::InvalidConfig(
            "no configurations or no instances".into(),
        ));
    }
    let t0 = Instant::now();
    // Biggest configurations first, so the two cores are not left with one long job at the end.
    let mut jobs: Vec<(u32, u32, u32)> = cfg
        .configs
        .iter()
        .flat_map(|&(m, s)| (0..cfg.instances).map(move |i| (m, s, i)))
        .collect();
    jobs.sort_by_key(|&(m, s, i)| {
        (
            std::cmp::Reverse(u64::from(m) * u64::from(m) * u64::from(s)),
            m,
            s,
            i,
        )
    });
    let total = jobs.len();
    let done = AtomicUsize::new(0);
    let mut instances: Vec<InstanceResult> = jobs
        .par_iter()
        .with_max_len(1)
        .map(|&(m, s, i)| {
            let r = run_instance(cfg, m, s, i);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            r
        })
        .collect::<Result<_, _>>()?;
    instances.sort_by_key(|r| {
        let k = cfg
            .configs
            .iter()
            .position(|&c| c == (r.machines, r.switches))
            .unwrap_or(usize::MAX);
        (k, r.instance)
    });
    let summaries = cfg
        .configs
        .iter()
        .map(|&(m, s)| {
            summarise(
                m,
                s,
                instances
                    .iter()
                    .filter(|r| (r.machines, r.switches) == (m, s)),
            )
        })
        .collect();
    Ok(StudyResult {
        config: cfg.clone(),
        summaries,
        instances,
        elapsed: t0.elapsed(),
    })
}

fn summarise<'a>(
    machines: u32,
    switches: u32,
    rs: impl Iterator<Item = &'a InstanceResult>,
) -> ConfigSummary {
    let rs: Vec<&InstanceResult> = rs.collect();
    let n = rs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&InstanceResult) -> f64| rs.iter().map(|r| f(r)).sum::<f64>() / n;
    let arr = |f: &dyn Fn(&InstanceResult, usize) -> f64| -> [f64; 5] {
        std::array::from_fn(|h| rs.iter().map(|r| f(r, h)).sum::<f64>() / n)
    };
    ConfigSummary {
        machines,
        switches,
        instances: rs.len() as u32,
        sw_lids: arr(&|r, h| r.sw_lids[h] as f64),
        sw_configs: arr(&|r, h| r.sw_configs[h] as f64),
        ps_lids: arr(&|r, h| r.ps_lids[h] as f64),
        ps_configs: arr(&|r, h| r.ps_configs[h] as f64),
        sw_load: mean(&|r| r.sw_load.directed),
        ps_load: mean(&|r| r.ps_load.directed),
        explicit_load: mean(&|r| r.explicit_load.directed),
        explicit_lids: mean(&|r| r.explicit_lids as f64),
        renaming_load: mean(&|r| r.renaming_load.directed),
        renaming_lids: mean(&|r| r.renaming_lids as f64),
        bidirectional_loads: [
            mean(&|r| r.explicit_load.bidirectional),
            mean(&|r| r.renaming_load.bidirectional),
            mean(&|r| r.ps_load.bidirectional),
            mean(&|r| r.sw_load.bidirectional),
        ],
        mean_candidates: mean(&|r| r.ps_stats.mean_candidates),
        load_bound: mean(&|r| r.load_bound),
        seconds: rs.iter().map(|r| r.seconds).sum(),
    }
}

fn paper_row(machines: u32, switches: u32) -> Option<usize> {
    PAPER_CONFIGS
        .iter()
        .position(|&c| c == (machines, switches))
}

impl StudyResult {
    /// Tables 1–3 with the paper's numbers beside ours: each cell is `ours (paper)`, `-` where the
    /// paper has no such configuration.
    pub fn paper_comparison(&self) -> String {
        self.render(Cells::WithPaper)
    }

    fn render(&self, cells: Cells) -> String {
        let with_paper = cells == Cells::WithPaper;
        let mut o = String::new();
        let cell = |ours: f64, paper: Option<f64>, prec: usize| -> String {
            match (with_paper, paper) {
                (false, _) => format!("{ours:.prec$}"),
                (true, Some(p)) => format!("{ours:.prec$} ({p:.prec$})"),
                (true, None) => format!("{ours:.prec$} (-)"),
            }
        };
        let w = if with_paper { 17 } else { 9 };
        let inst = self.config.instances;
        for (title, which) in [
            ("Table 1: average total LIDs allocated (shortest widest)", 1),
            ("Table 2: average total LIDs allocated (path selection)", 2),
        ] {
            let _ = writeln!(
                o,
                "{title}, mean of {inst} instances{}",
                if with_paper { "; ours (paper)" } else { "" }
            );
            let _ = write!(o, "{:<8}", "conf.");
            for h in Heuristic::ALL {
                let _ = write!(o, " {:>w$}", h.name());
            }
            o.push('\n');
            for s in &self.summaries {
                let _ = write!(o, "{:<8}", format!("{}/{}", s.machines, s.switches));
                let pr = paper_row(s.machines, s.switches);
                for h in 0..5 {
                    let (ours, paper) = if which == 1 {
                        (s.sw_lids[h], pr.map(|r| PAPER_TABLE1[r][h]))
                    } else {
                        (s.ps_lids[h], pr.map(|r| PAPER_TABLE2[r][h]))
                    };
                    let _ = write!(o, " {:>w$}", cell(ours, paper, 1));
                }
                o.push('\n');
            }
            o.push('\n');
        }
        let _ = writeln!(
            o,
            "Table 3: maximum link load and LIDs required, mean of {inst} instances{}",
            if with_paper { "; ours (paper)" } else { "" }
        );
        let _ = writeln!(
            o,
            "{:<8} {:>w2$} {:>w2$} {:>w2$}",
            "",
            "Fully Explicit",
            "Renaming",
            "Separate",
            w2 = 2 * w + 1
        );
        let _ = write!(o, "{:<8}", "conf.");
        for _ in 0..3 {
            let _ = write!(o, " {:>w$} {:>w$}", "load", "LIDs");
        }
        o.push('\n');
        for s in &self.summaries {
            let pr = paper_row(s.machines, s.switches);
            let p = |i: usize| pr.map(|r| PAPER_TABLE3[r][i]);
            let _ = write!(o, "{:<8}", format!("{}/{}", s.machines, s.switches));
            let vals = [
                (s.explicit_load, 2),
                (s.explicit_lids, 1),
                (s.renaming_load, 2),
                (s.renaming_lids, 1),
                (s.separate_load(), 2),
                (s.separate_lids(), 1),
            ];
            for (i, (v, prec)) in vals.into_iter().enumerate() {
                let _ = write!(o, " {:>w$}", cell(v, p(i), prec));
            }
            o.push('\n');
        }
        let _ = writeln!(
            o,
            "\nLoad: busiest direction of any link, all-to-all with every machine sending 1 in total. \
             Shortest-widest max load (not in the paper): {}.",
            self.summaries
                .iter()
                .map(|s| format!("{}/{} {:.2}", s.machines, s.switches, s.sw_load))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            o,
            "Lower bound on the load of any routing (busiest switch's machines over its links): {}.",
            self.summaries
                .iter()
                .map(|s| format!("{}/{} {:.2}", s.machines, s.switches, s.load_bound))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            o,
            "Path selection: up to {} {}legal candidates per switch pair (mean {}); study took {:.1} s.",
            self.config.path_selection.k,
            if self.config.path_selection.minimal_only { "shortest " } else { "" },
            self.summaries
                .iter()
                .map(|s| format!("{:.1}", s.mean_candidates))
                .collect::<Vec<_>>()
                .join("/"),
            self.elapsed.as_secs_f64()
        );
        o
    }
}

/// What the cells of the study's tables show: our numbers alone, or the paper's beside them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cells {
    OursOnly,
    WithPaper,
}

impl fmt::Display for StudyResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Cells::OursOnly))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> StudyConfig {
        StudyConfig {
            configs: vec![(24, 6), (32, 8)],
            instances: 3,
            avg_degree: 4,
            ..Default::default()
        }
    }

    #[test]
    fn tiny_study_runs_checks_and_prints_the_tables() {
        let r = run_study(&tiny()).unwrap();
        assert_eq!(r.instances.len(), 6);
        assert_eq!(r.summaries.len(), 2);
        for i in &r.instances {
            // Explicit needs one LID per machine, every heuristic at least that many.
            assert_eq!(i.explicit_lids, u64::from(i.machines));
            for h in 0..5 {
                assert!(
                    i.sw_lids[h] >= u64::from(i.machines) && i.ps_lids[h] >= u64::from(i.machines)
                );
                assert!(i.sw_lids[h] >= i.sw_configs[h]);
            }
            for l in [i.sw_load, i.ps_load, i.explicit_load, i.renaming_load] {
                assert!(
                    l.directed >= i.load_bound - 1e-9,
                    "{l:?} below the bound {}",
                    i.load_bound
                );
            }
        }
        let text = r.to_string();
        for needle in [
            "Table 1",
            "Table 2",
            "Table 3",
            "24/6",
            "32/8",
            "color/L",
            "Fully Explicit",
        ] {
            assert!(text.contains(needle), "{needle} missing:\n{text}");
        }
        assert!(
            r.paper_comparison().contains("(-)"),
            "configurations the paper does not have"
        );
        // Same seed, same numbers, whatever the thread timing.
        let again = run_study(&tiny()).unwrap();
        assert_eq!(
            again
                .instances
                .iter()
                .map(|i| (i.sw_lids, i.ps_lids, i.renaming_lids))
                .collect::<Vec<_>>(),
            r.instances
                .iter()
                .map(|i| (i.sw_lids, i.ps_lids, i.renaming_lids))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_configurations_are_errors() {
        let mut c = tiny();
        c.instances = 0;
        assert!(run_study(&c).is_err());
        let mut c = tiny();
        c.path_selection.k = 17;
        assert!(matches!(run_study(&c), Err(LidError::InvalidConfig(_))));
    }
}
