//! `dfsssp-rs compare --in-opensm DUMP`: the admin's question — is dfsssp-rs better on my
//! fabric? — answered with the real programs. The ibnetdiscover dump is made fit for ibsim in a
//! temporary directory ([`prepare`]); then, one after another, a fresh ibsim and the installed
//! stock opensm (until the subnet is up, as `--once` waits) route it with every engine OpenSM offers that applies, and with
//! dfsssp-rs (QoS on and off), each within a time limit ([`procs`]). Every run is judged from
//! OpenSM's own dump files by the same code as `eval --dumps` ([`super::judge`]); OpenSM's log
//! gives only what the dumps cannot: the engine really used, the routing time ([`osm_log`]).
//! Every engine's SLs are read from OpenSM's SA while the subnet is up, as applications get
//! them, and checked ([`sa_paths`]). The verdict, table, JSON and recommendation are
//! [`verdict`]'s.

mod osm_log;
mod prepare;
mod procs;
mod sa_paths;
mod verdict;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use dfsssp_rs::fabric::{Fabric, NodeKind};
use dfsssp_rs::io::{self, guid_list, ibnetdiscover, ibsim};

use super::judge::{self, ClassLists};
use super::progress::Progress;
use super::{write_output, CliResult, MeasureArgs};
use verdict::{Run, Status};

/// Options of `compare --in-opensm`.
#[derive(Args, Clone)]
pub struct OsmArgs {
    /// With --in-opensm: OpenSM routing engines to run, comma-separated (default: every one that
    /// applies, and dfsssp-rs with QoS on and off; `dfsssp-rs/noqos` is the QoS-off run)
    #[arg(long, value_delimiter = ',', requires = "in_opensm")]
    routing_engines: Vec<String>,
    /// With --in-opensm: seconds each engine's routing phase may take in OpenSM; a run still
    /// routing then is stopped and reported as timed out (discovery, the upload and OpenSM's
    /// dumps in ibsim get four times as long, at least 5 minutes more)
    #[arg(long, default_value_t = 60, requires = "in_opensm")]
    limit: u64,
    /// With --in-opensm: a torus-2QoS.conf for the fabric (else one is written where the fabric is
    /// a torus or mesh of up to three dimensions, recognised from the switches' descriptions as
    /// `dfsssp-rs generate` writes them or else from the cables; torus-2QoS and dor run there)
    #[arg(long, value_name = "FILE", requires = "in_opensm")]
    torus_config: Option<PathBuf>,
    /// With --in-opensm: keep the work directory (ibsim net file, OpenSM logs and dumps per
    /// engine) and print where it is
    #[arg(long, requires = "in_opensm")]
    keep: bool,
    /// With --in-opensm: the directory of the libdfsssp_rs.so OpenSM loads (default: the one
    /// next to this command when there is one, as after `cargo build --release`, else the
    /// installed plug-in)
    #[arg(long, value_name = "DIR", requires = "in_opensm")]
    plugin_dir: Option<PathBuf>,
    /// With --in-opensm: CA port pairs whose SLs are read from OpenSM's SA per engine: every
    /// pair where there are at most N, else a sample of N drawn with --seed (default: 2,500 per
    /// second of --limit; the SA answers some 10,000 a second)
    #[arg(long, value_name = "N", requires = "in_opensm")]
    sa_pairs: Option<usize>,
}

/// A routing engine OpenSM is asked for (`routing_engine NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OsmEngine {
    Minhop,
    Updn,
    Dnup,
    Ftree,
    Lash,
    Nue,
    Sssp,
    Dfsssp,
    Dor,
    Torus2QoS,
    /// Ours, the plug-in.
    DfssspRs,
}

impl OsmEngine {
    /// The engines OpenSM 3.3.23 offers that route any fabric (ftree tries, and OpenSM says when
    /// it falls back).
    const STOCK_ANY: [OsmEngine; 8] = [
        OsmEngine::Minhop,
        OsmEngine::Updn,
        OsmEngine::Dnup,
        OsmEngine::Ftree,
        OsmEngine::Lash,
        OsmEngine::Nue,
        OsmEngine::Sssp,
        OsmEngine::Dfsssp,
    ];
    /// Engines for tori and meshes only (they need a torus-2QoS.conf).
    const STOCK_TORUS: [OsmEngine; 2] = [OsmEngine::Dor, OsmEngine::Torus2QoS];

    /// Whether the engine hands out SLs of its own (a `path_sl` that may answer other than SL 0):
    /// it runs with QoS on, as its documentation asks. The others route the same either way
    /// and run with QoS off, as an admin runs them: OpenSM's QoS set-up (SL-to-VL and VL
    /// arbitration tables on every port) is some 25 s of each run in ibsim at 4,096 CAs, and
    /// its memory would count in their RSS but not in dfsssp-rs's QoS-off row.
    fn has_own_sls(self) -> bool {
        matches!(
            self,
            OsmEngine::Lash
                | OsmEngine::Nue
                | OsmEngine::Dfsssp
                | OsmEngine::Torus2QoS
                | OsmEngine::DfssspRs
        )
    }

    /// The name in opensm.conf.
    fn name(self) -> &'static str {
        match self {
            OsmEngine::Minhop => "minhop",
            OsmEngine::Updn => "updn",
            OsmEngine::Dnup => "dnup",
            OsmEngine::Ftree => "ftree",
            OsmEngine::Lash => "lash",
            OsmEngine::Nue => "nue",
            OsmEngine::Sssp => "sssp",
            OsmEngine::Dfsssp => "dfsssp",
            OsmEngine::Dor => "dor",
            OsmEngine::Torus2QoS => "torus-2QoS",
            OsmEngine::DfssspRs => OURS,
        }
    }
}

const OURS: &str = "dfsssp-rs";
/// `--routing-engines` name of ours with QoS off.
const OURS_NO_QOS: &str = "dfsssp-rs/noqos";

/// One planned run: the engine OpenSM is asked for, whether QoS is on, and opensm.conf lines
/// of its own.
#[derive(Clone, Debug)]
struct Plan {
    label: String,
    engine: OsmEngine,
    qos: bool,
    conf: Vec<String>,
}

impl Plan {
    /// nue again, its paths to switch LIDs made deadlock-free too: by default
    /// (`nue_include_switches FALSE`) nue leaves them out of its model, so a loop that needs one
    /// is what its authors promise; whether nue can avoid it is this run's answer.
    fn nue_with_switches() -> Plan {
        Plan {
            label: "nue (nue_include_switches TRUE)".into(),
            engine: OsmEngine::Nue,
            qos: true,
            conf: vec!["nue_include_switches TRUE".into()],
        }
    }
}

fn plan(osm: &OsmArgs, torus: bool) -> CliResult<Vec<Plan>> {
    // (name on the command line, engine, QoS)
    let stock = (OsmEngine::STOCK_ANY.iter())
        .chain(OsmEngine::STOCK_TORUS.iter())
        .map(|&e| (e.name(), e, e.has_own_sls()));
    let known: Vec<(&str, OsmEngine, bool)> = stock
        .chain([
            (OURS, OsmEngine::DfssspRs, true),
            (OURS_NO_QOS, OsmEngine::DfssspRs, false),
        ])
        .collect();
    let names: Vec<String> = if osm.routing_engines.is_empty() {
        (known.iter())
            .filter(|(_, e, _)| torus || !OsmEngine::STOCK_TORUS.contains(e))
            .map(|(n, _, _)| n.to_string())
            .collect()
    } else {
        osm.routing_engines
            .iter()
            .map(|s| s.trim().to_string())
            .collect()
    };
    let mut v = Vec::new();
    for n in names {
        // Stock engines with SLs of their own run with QoS on (their docs ask for -Q), the
        // others with QoS off ([`OsmEngine::has_own_sls`]).
        let Some(&(_, engine, qos)) = known.iter().find(|(k, _, _)| *k == n) else {
            return Err(format!(
                "--routing-engines: unknown engine '{n}' (known: {})",
                known.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ));
        };
        v.push(Plan {
            label: match (engine, qos) {
                (OsmEngine::DfssspRs, true) => format!("{OURS} (QoS on)"),
                (OsmEngine::DfssspRs, false) => format!("{OURS} (QoS off)"),
                _ => engine.name().to_string(),
            },
            engine,
            qos,
            conf: Vec::new(),
        });
    }
    Ok(v)
}

/// A torus-2QoS.conf from the generator's coordinates in the switches' descriptions ("torus
/// X,Y[,Z]" / "mesh X,Y[,Z]"), when every switch has them.
fn torus_conf(f: &Fabric) -> Option<String> {
    use std::collections::HashMap;
    let mut at: HashMap<Vec<usize>, u64> = HashMap::new();
    let mut kind = None;
    let mut ports = 0u8;
    for n in f.nodes().iter().filter(|n| n.kind == NodeKind::Switch) {
        let (k, c) = n.description.split_once(' ')?;
        if !(k == "torus" || k == "mesh") || kind.is_some_and(|x| x != k) {
            return None;
        }
        kind = Some(k);
        let c: Vec<usize> = c
            .split(',')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        at.insert(c, n.guid);
        ports = ports.max(n.num_ports);
    }
    let kind = kind?;
    let dims = at.keys().next()?.len();
    if dims == 0 || dims > 3 || at.keys().any(|c| c.len() != dims) {
        return None;
    }
    let mut radix: Vec<usize> = (0..dims)
        .map(|d| at.keys().map(|c| c[d]).max().unwrap_or(0) + 1)
        .collect();
    if radix.iter().product::<usize>() != at.len() {
        return None;
    }
    let origin = vec![0; dims];
    let mut lines = Vec::new();
    radix.resize(3, 1);
    lines.push(format!("{kind} {} {} {}", radix[0], radix[1], radix[2]));
    for d in 0..dims {
        if radix[d] < 2 {
            continue;
        }
        let step = |k: usize| {
            let mut c = origin.clone();
            c[d] = k;
            at.get(&c).copied()
        };
        let xyz = ["x", "y", "z"][d];
        lines.push(format!(
            "{xyz}p_link 0x{:016x} 0x{:016x}",
            at[&origin],
            step(1)?
        ));
        if kind == "torus" && radix[d] > 2 {
            lines.push(format!(
                "{xyz}m_link 0x{:016x} 0x{:016x}",
                at[&origin],
                step(radix[d] - 1)?
            ));
        }
    }
    lines.push(format!(
        "portgroup_max_ports {}",
        16.max(u32::from(ports) + 1)
    ));
    Some(lines.join("\n") + "\n")
}

/// What the output needs besides the runs.
pub struct Context {
    pub input: String,
    pub fabric: verdict::FabricFacts,
    pub notes: Vec<String>,
    pub patterns: u32,
    pub seed: u64,
    pub limit_s: u64,
}

/// Runs every planned engine in ibsim on the dump `file` and prints the verdict.
pub fn run(
    file: &Path,
    osm: &OsmArgs,
    measure: &MeasureArgs,
    json: bool,
    svg: Option<&Path>,
    title: Option<&str>,
) -> CliResult<()> {
    // The input first: a dump that cannot be used is the one reason to fail.
    let text = io::read_text(file).map_err(|e| e.to_string())?;
    let name = file.display().to_string();
    let (parsed, mut notes) =
        ibnetdiscover::parse_with_notes(&text, &name, ibsim::NetOptions::default())
            .map_err(|e| e.to_string())?;
    let cn = match &measure.classes.cn_guids {
        Some(p) => Some(guid_list::read_file(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let prepared = prepare::prepare(parsed, cn.as_deref()).map_err(|e| format!("{name}: {e}"))?;
    notes.extend(prepared.notes.iter().cloned());
    let fabric = &prepared.fabric;
    let missing = procs::missing_tools();
    if !missing.is_empty() {
        return Err(format!(
            "running OpenSM in ibsim needs: {} (scripts/setup.sh installs them)",
            missing.join(", ")
        ));
    }
    let torus_text = match &osm.torus_config {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => torus_conf(fabric).or_else(|| {
            // A real torus carries no coordinates: recognised from its cables, as dfsssp-rs's
            // dimension-order candidate does.
            let g = dfsssp_rs::graph::SwitchGraph::new(fabric).ok()?;
            let conf = dfsssp_rs::dor::conf::torus_2qos_conf(fabric, &g)?;
            let first = conf.lines().next().unwrap_or_default().to_string();
            notes.push(format!(
                "a torus recognised from the cables: torus-2QoS and dor get a torus-2QoS.conf \
                 ({first})"
            ));
            Some(conf)
        }),
    };
    let plans = plan(osm, torus_text.is_some())?;

    let work = procs::WorkDir::new("dfsssp-compare-")?;
    let bench = Bench::set_up(
        &work,
        &prepared,
        osm,
        measure,
        torus_text.as_deref(),
        &plans,
    )?;
    let mut opts = measure.options()?;
    opts.classes = prepared.compute.as_ref().map(|c| ClassLists {
        compute: c.clone(),
        io: Vec::new(),
    });
    let mut runs: Vec<Run> = Vec::with_capacity(plans.len());
    for (k, p) in plans.iter().enumerate() {
        runs.push(bench.run_plan(k, p, &opts)?);
        bench.bar.inc(1);
        // nue's default promise covers CA-to-CA paths only: where its routes close a loop
        // through a switch LID, nue is run again with switch LIDs included, beside it.
        let last = &runs[runs.len() - 1];
        if p.engine == OsmEngine::Nue && p.conf.is_empty() && last.lanes_and_loops().management_only
        {
            bench.bar.inc_length(1);
            let again = Plan::nue_with_switches();
            runs.push(bench.run_plan(plans.len() + k, &again, &opts)?);
            bench.bar.inc(1);
        }
    }
    bench.bar.finish_and_clear();

    let ctx = Context {
        input: name.clone(),
        fabric: verdict::FabricFacts::of(
            fabric,
            prepared.aggregation_nodes,
            prepared.compute.as_ref().map(Vec::len),
        ),
        notes,
        patterns: opts.patterns,
        seed: opts.seed,
        limit_s: bench.limit.as_secs(),
    };
    let rec = verdict::recommend(&runs);
    if let Some(path) = svg {
        let t = title.map_or_else(|| format!("{name}: {}", ctx.fabric.line()), str::to_string);
        write_output(Some(path), &verdict::chart(&t, &ctx, &runs))?;
    }
    if json {
        println!("{}", verdict::json(&ctx, &runs, &rec)?);
    } else {
        print!("{}", verdict::text(&ctx, &runs, &rec));
    }
    if osm.keep {
        let kept = work.keep();
        eprintln!("dfsssp-rs: work directory kept: {}", kept.display());
    }
    Ok(())
}

/// What every opensm run of a comparison shares: the files in the work directory (ibsim's net
/// file, the compute nodes' list, the torus configuration, a copy of the plug-in), the time limit
/// and the progress bar.
struct Bench {
    work: PathBuf,
    net: PathBuf,
    caps: Vec<String>,
    /// opensm.conf lines for every run.
    extra_conf: Vec<String>,
    /// The torus-2QoS.conf written, if any.
    torus_path: Option<PathBuf>,
    plugin_dir: Option<PathBuf>,
    limit: Duration,
    bar: ProgressBar,
    /// The SA client in the work directory, or why there is none.
    sa_client: Result<PathBuf, String>,
    /// The ibsim node the SA client attaches as (a CA other than the SM's where there is one).
    sa_host: String,
    /// CA port pairs read from the SA per run: all up to this many, else a sample this big.
    sa_budget: usize,
    /// The sample's seed.
    seed: u64,
}

impl Bench {
    /// Writes the shared files into `work` and starts the progress bar over `plans`.
    fn set_up(
        work: &procs::WorkDir,
        prepared: &prepare::Prepared,
        osm: &OsmArgs,
        measure: &MeasureArgs,
        torus_text: Option<&str>,
        plans: &[Plan],
    ) -> CliResult<Bench> {
        let fabric = &prepared.fabric;
        let net = work.path().join("fabric.net");
        let net_text = ibsim::write_net(fabric);
        std::fs::write(&net, &net_text).map_err(|e| format!("{}: {e}", net.display()))?;
        // the SM attaches as the first CA of the net file; the SA client as the next one
        let ca_names: Vec<&str> = (net_text.lines())
            .filter(|l| l.starts_with("Ca") || l.starts_with("Hca"))
            .filter_map(|l| l.split('"').nth(1))
            .take(2)
            .collect();
        let sa_host = ca_names.last().map_or_else(String::new, |n| n.to_string());
        let caps = ibsim::IbsimCaps::of(fabric).args();
        let mut extra_conf = Vec::new();
        if let Some(list) = &prepared.compute {
            let p = work.path().join("cn_guids");
            let body: String = list.iter().map(|g| format!("0x{g:016x}\n")).collect();
            std::fs::write(&p, body).map_err(|e| format!("{}: {e}", p.display()))?;
            // only the admin's own list goes to OpenSM: engines (ftree, dfsssp-rs) route compute
            // nodes first with it, which production would do only with that configuration
            if measure.classes.cn_guids.is_some() {
                extra_conf.push(format!("cn_guid_file {}", p.display()));
            }
        }
        let torus_path = work.path().join("torus-2QoS.conf");
        if let Some(t) = torus_text {
            std::fs::write(&torus_path, t).map_err(|e| format!("{}: {e}", torus_path.display()))?;
        }
        // a private copy: a concurrent build must not swap the library under a running opensm
        let plugin_dir = match osm.plugin_dir.clone().or_else(procs::plugin_dir) {
            Some(d) => {
                let from = d.join("libdfsssp_rs.so");
                let to = work.path().join("plugin");
                std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
                std::fs::copy(&from, to.join("libdfsssp_rs.so"))
                    .map_err(|e| format!("{}: {e}", from.display()))?;
                Some(to)
            }
            None => None,
        };
        let bar = if measure.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(plans.len() as u64), ProgressDrawTarget::stderr())
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:24} {pos}/{len} {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let limit = Duration::from_secs(osm.limit.max(1));
        Ok(Bench {
            work: work.path().to_path_buf(),
            net,
            caps,
            extra_conf,
            torus_path: torus_text.map(|_| torus_path),
            plugin_dir,
            limit,
            bar,
            sa_client: sa_paths::install(work.path()),
            sa_host,
            sa_budget: osm.sa_pairs.unwrap_or_else(|| sa_budget(limit)),
            seed: measure.options()?.seed,
        })
    }

    /// Plan `p` (the `k`th) run in ibsim: its dumps judged, its SLs read from the SA and checked.
    fn run_plan(&self, k: usize, p: &Plan, opts: &judge::EvalOptions) -> CliResult<Run> {
        let quiet = Progress::quiet();
        let dir = self.work.join(format!(
            "{k:02}-{}",
            p.label.replace([' ', '(', ')', '/'], "_")
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let sock = format!("dfsssp-cmp-{}-{k}", std::process::id());
        let mut conf = self.extra_conf.clone();
        conf.extend(p.conf.iter().cloned());
        if let Some(torus_path) = self
            .torus_path
            .as_ref()
            .filter(|_| p.engine == OsmEngine::Torus2QoS)
        {
            conf.push(format!("torus_config {}", torus_path.display()));
        }
        self.bar.set_message(format!("{}: starting ibsim", p.label));
        let (mut run, read) = self
            .one_run(p, &dir, &sock, &conf)
            .unwrap_or_else(|e| (Run::failed(&p.label, p.engine.name(), p.qos, e), None));
        run.conf = p.conf.clone();
        if matches!(run.status, Status::Ok | Status::Fallback) {
            self.bar
                .set_message(format!("{}: judging OpenSM's dumps", p.label));
            match judge::load_dumps(&p.label, &dir, None, &quiet)
                .map(judge::Subject::ca_sent_paths_only)
                .and_then(|s| judge::evaluate(s, opts, &quiet))
            {
                Ok(ev) => run.eval = Some(ev),
                Err(e) => {
                    let why = format!("OpenSM's dumps not judged: {e}");
                    run.reason = Some(match run.reason.take() {
                        Some(r) => format!("{r}; {why}"),
                        None => why,
                    });
                }
            }
            self.bar
                .set_message(format!("{}: checking the SA's SLs", p.label));
            let sa = match read {
                Some(Ok(r)) => sa_paths::check(&dir, &r, self.seed, self.limit),
                Some(Err(e)) => sa_paths::SaSls::not_read(e),
                None => sa_paths::SaSls::not_read("the subnet did not come up".into()),
            };
            if p.engine == OsmEngine::Dfsssp {
                // the field stock dfsssp's SLs had when they came from a debug log
                run.stock_sls = Some(verdict::StockSls::of(&sa));
            }
            run.sa_sls = Some(sa);
        }
        Ok(run)
    }

    /// ibsim and opensm for one plan, in `dir` with socket `sock` and opensm.conf lines `conf`;
    /// the log read, and the SA's SLs while the subnet was up.
    fn one_run(
        &self,
        p: &Plan,
        dir: &Path,
        sock: &str,
        conf: &[String],
    ) -> Result<(Run, Option<Result<sa_paths::Read, String>>), String> {
        let mut sim = procs::start_ibsim(dir, &self.net, &self.caps, sock)?;
        let setup = procs::OsmSetup {
            dir,
            engine: p.engine.name(),
            qos: p.qos,
            sock,
            plugin_dir: self.plugin_dir.as_deref(),
            extra_conf: conf,
            limit: self.limit,
        };
        let label = &p.label;
        let bar = &self.bar;
        let r = procs::run_opensm(
            &setup,
            |t| bar.set_message(format!("{label}: opensm {:.0} s", t.as_secs_f64())),
            |left| {
                bar.set_message(format!("{label}: reading SLs from the SA"));
                let client = self.sa_client.as_ref().map_err(Clone::clone)?;
                let c = sa_paths::Client {
                    program: client,
                    sock,
                    host: &self.sa_host,
                    seed: self.seed,
                    budget: self.sa_budget,
                };
                // the reading has a time limit of its own, whatever the routing took
                sa_paths::read(dir, &c, self.limit.max(left))
            },
        );
        sim.stop();
        let (r, read) = r?;
        let log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
        let facts = osm_log::read(&log, p.engine.name());
        Ok((
            Run::from_opensm(&p.label, p.engine.name(), p.qos, &r, facts, self.limit),
            read,
        ))
    }
}

/// CA port pairs the SA is asked for per run: what the assumed rate answers in a quarter of
/// the time limit.
fn sa_budget(limit: Duration) -> usize {
    (limit.as_secs().max(1) * sa_paths::PAIRS_PER_S / 4) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torus_config_from_generated_coordinates() {
        let f = dfsssp_rs::topo::by_name("torus:3x2x2,1").unwrap();
        let t = torus_conf(&f).unwrap();
        assert!(t.starts_with("torus 3 2 2\n"), "{t}");
        assert_eq!(t.matches("_link").count(), 4, "{t}"); // xp, xm, yp, zp
        assert!(torus_conf(&dfsssp_rs::topo::by_name("ktree:2,2").unwrap()).is_none());
    }

    #[test]
    fn engines_planned() {
        let a = OsmArgs {
            routing_engines: vec![],
            limit: 1,
            torus_config: None,
            keep: false,
            plugin_dir: None,
            sa_pairs: None,
        };
        let p = plan(&a, false).unwrap();
        assert_eq!(p.len(), 10);
        assert!(p.iter().any(|x| x.engine == OsmEngine::DfssspRs && !x.qos));
        assert_eq!(plan(&a, true).unwrap().len(), 12);
        let b = OsmArgs {
            routing_engines: vec!["ftre".into()],
            ..a
        };
        assert!(plan(&b, false).unwrap_err().contains("ftre"));
    }
}
