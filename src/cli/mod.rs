//! Command-line front of the core. Every error names the file (and line) it comes from; the
//! process exits with status 1 on errors and 2 on usage errors (clap's convention).
//!
//! - `generate`: a fabric from a spec, as an ibsim net file or ibnetdiscover text;
//! - `route`: the core's engines offline, LFTs for OpenSM's `file` engine and the path-SL dump;
//! - `eval` ([`eval`]): judge one routing, from OpenSM's dumps or routed in-process;
//! - `compare` ([`compare`]): several routings of one fabric side by side, with an SVG chart
//!   ([`chart`]).

mod chart;
mod compare;
mod eval;
mod in_opensm;
mod judge;
#[cfg(feature = "study")]
mod lid_study;
mod mcast;
mod progress;
mod table;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use dfsssp_rs::engine::{self, EngineConfig, EngineKind, McastLane};
use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::io::{self, fabric_json, guid_list, ibnetdiscover, ibsim, osm_dump, path_sl};
use dfsssp_rs::metrics::{LidChoice, PairTraffic};
use dfsssp_rs::topo;

#[derive(Parser)]
#[command(
    name = "dfsssp-rs",
    version,
    about = "Route and judge InfiniBand fabrics offline",
    long_about = "Route and judge InfiniBand fabrics offline, with the same core the OpenSM plug-in \
                  libdfsssp_rs.so routes with (routing engine `dfsssp-rs`; its opensm.conf lines: \
                  README.md, or /usr/share/doc/dfsssp-rs/examples/ from the Debian package)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Nienaber et al.'s LID-assignment study on random irregular fabrics: average LIDs needed and
    /// maximum link load per routing scheme and heuristic (its Tables 1–3), beside the paper's.
    #[cfg(feature = "study")]
    LidStudy(lid_study::LidStudyArgs),
    /// Generate a fabric from a spec (see --help for the grammar) as an ibsim net file or as
    /// ibnetdiscover text.
    #[command(after_help = topo::SPEC_GRAMMAR)]
    Generate {
        /// e.g. ktree:18,3  torus:6x6x6,4  random:128,32,16,300,seed=1
        spec: String,
        #[arg(short, long, value_enum, default_value_t = Format::Ibsim)]
        format: Format,
        /// Output file (default: standard output)
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Route a fabric with sssp-rs or dfsssp-rs; write the LFTs in the format OpenSM's `file`
    /// routing engine loads, and the path-SL dump.
    Route {
        #[command(flatten)]
        fabric: FabricArgs,
        #[command(flatten)]
        engine: EngineArgs,
        /// Write the LFTs here (load with `opensm -R file -U FILE`)
        #[arg(long)]
        lfts_out: Option<PathBuf>,
        /// Write the path-SL dump here (`ibdmchk -c FILE`)
        #[arg(long)]
        path_sl_out: Option<PathBuf>,
        /// Write the routing state file here, as the plug-in saves it after an upload (read back
        /// with --previous-state, or by OpenSM from its cache directory)
        #[arg(long)]
        state_out: Option<PathBuf>,
        #[command(flatten)]
        previous: PreviousArgs,
        /// Multicast groups to build balanced, deadlock-checked trees for: one group per line,
        /// `MLID [vl=N] MEMBER...`, a member `[send:]NODE[/PORT]` with NODE a node GUID, port
        /// GUID or node description (`#` comments)
        #[arg(long, requires = "mfts_out")]
        groups: Option<PathBuf>,
        /// Write the groups' MFTs here, in OpenSM's opensm.mcfdbs format
        #[arg(long, requires = "groups")]
        mfts_out: Option<PathBuf>,
        /// How multicast trees are built: auto (minimal-hop, a VL whose union with unicast is
        /// cyclic rebuilt along Up*/Down*), minimal, updown
        #[arg(long, value_enum, default_value_t = mcast::TreesArg::Auto, requires = "groups")]
        mcast_trees: mcast::TreesArg,
        /// Ignore loads when building trees (lowest port, lowest root id: close to OpenSM's
        /// default trees, for comparison)
        #[arg(long, requires = "groups")]
        mcast_unbalanced: bool,
        /// Put every group on this VL, whatever the groups file says (e.g. `--lanes 7
        /// --mcast-vl 7`: a lane reserved for multicast)
        #[arg(long, requires = "groups")]
        mcast_vl: Option<u8>,
    },
    /// Judge one routing: connectivity, forwarding loops, hops, edge forwarding index, link load,
    /// effective bisection bandwidth, lanes and a deadlock check of every lane's channel
    /// dependency graph. Reads OpenSM's dumps of any engine (--dumps) or routes a fabric
    /// in-process. Exit status 0 even when the routing is bad (it is a report); 1 when the input
    /// cannot be read.
    #[command(after_help = eval::AFTER_HELP)]
    Eval(eval::EvalArgs),
    /// Compare several routings of one fabric: our engines routed in-process and/or OpenSM dumps
    /// of other engines, as a table and an SVG bar chart of Λ and lanes per engine.
    #[command(after_help = compare::AFTER_HELP)]
    Compare(compare::CompareArgs),
    /// Write the manual pages (dfsssp-rs.1 and one per subcommand) into a directory: the Debian
    /// package builds them with this, so they always match the options.
    #[command(hide = true)]
    ManPages {
        /// Directory to write the pages into (created if missing)
        out_dir: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Ibsim,
    Ibnetdiscover,
}

/// Where the fabric comes from.
#[derive(Args)]
struct FabricArgs {
    /// An ibsim net file, ibnetdiscover output, opensm-subnet.lst or the plug-in's
    /// dfsssp-rs-fabric.json (detected from the content)
    #[arg(long, conflicts_with = "topo", required_unless_present = "topo")]
    fabric: Option<PathBuf>,
    /// A generated fabric (spec as for `generate`)
    #[arg(long)]
    topo: Option<String>,
    /// LMC of CA ports where the input gives no LIDs (ibsim net files, opensm-subnet.lst)
    #[arg(long, default_value_t = 0)]
    lmc: u8,
}

#[derive(Args)]
struct EngineArgs {
    /// sssp-rs (balanced, one lane) or dfsssp-rs (balanced and deadlock-free)
    #[arg(long, default_value = "dfsssp-rs")]
    engine: EngineKind,
    /// Virtual lanes available to dfsssp-rs
    #[arg(long, default_value_t = 8)]
    lanes: u8,
    /// Route as OpenSM does with QoS off: a single lane
    #[arg(long)]
    no_qos: bool,
    /// Leave a lane to multicast as the plug-in does (layer i is then SL i + 1 in the path-SL
    /// output): off, when-free (the flag alone) or always (the plug-in's default)
    #[arg(long, default_value = "off", num_args = 0..=1, default_missing_value = "when-free")]
    mcast_lane: McastLane,
    /// With QoS on, do not compute the one-lane routing beside the layers (the plug-in's
    /// `one_lane_candidate 0`)
    #[arg(long)]
    no_one_lane_candidate: bool,
    #[command(flatten)]
    classes: ClassArgs,
}

/// Compute and I/O nodes, as OpenSM's `cn_guid_file` and `io_guid_file` list them.
#[derive(Args, Clone, Default)]
struct ClassArgs {
    /// Compute nodes: a file of port (or node) GUIDs, one per line, as OpenSM's cn_guid_file.
    /// Routed first and balanced on compute traffic; Λ of compute-to-compute bisections reported
    #[arg(long)]
    cn_guids: Option<PathBuf>,
    /// I/O nodes, as OpenSM's io_guid_file: routed after the compute nodes and balanced on
    /// compute-to-I/O traffic; Λ of compute nodes writing to I/O nodes reported
    #[arg(long)]
    io_guids: Option<PathBuf>,
}

impl ClassArgs {
    /// The lists, read (`None` when neither file is given).
    fn lists(&self) -> CliResult<Option<judge::ClassLists>> {
        if self.cn_guids.is_none() && self.io_guids.is_none() {
            return Ok(None);
        }
        let read = |p: &Option<PathBuf>| -> CliResult<Vec<u64>> {
            match p {
                Some(p) => guid_list::read_file(p).map_err(|e| e.to_string()),
                None => Ok(Vec::new()),
            }
        };
        Ok(Some(judge::ClassLists {
            compute: read(&self.cn_guids)?,
            io: read(&self.io_guids)?,
        }))
    }
}

/// A previous routing to re-route from (`route`): the fabric it was computed for, its LFTs and
/// its path-SL dump, as `route --lfts-out/--path-sl-out` or OpenSM (`opensm-lfts.dump`,
/// `opensm-path-sl.dump`) write them.
#[derive(Args)]
struct PreviousArgs {
    /// The fabric the previous routing was computed for (any fabric format)
    #[arg(long, requires = "previous_lfts")]
    previous_fabric: Option<PathBuf>,
    /// Its LFTs (OpenSM's lfts dump format)
    #[arg(long, requires = "previous_fabric")]
    previous_lfts: Option<PathBuf>,
    /// Its path-SL dump (without it, every previous path is taken to be in layer 0)
    #[arg(long, requires = "previous_lfts")]
    previous_path_sl: Option<PathBuf>,
    /// The plug-in's routing state file (`dfsssp-rs.state` in OpenSM's cache directory), which
    /// holds the fabric, the LFTs and every path's layer: adopted as OpenSM adopts it at a
    /// restart, instead of --previous-fabric/--previous-lfts/--previous-path-sl
    #[arg(long, conflicts_with_all = ["previous_fabric", "previous_lfts", "previous_path_sl"])]
    previous_state: Option<PathBuf>,
    /// Compute from scratch anyway, and report what moved
    #[arg(long)]
    full: bool,
    /// Full re-balance when the incremental routes' highest channel load exceeds a full
    /// computation's estimate by more than this many percent
    #[arg(long, default_value_t = engine::DEFAULT_MAX_LOAD_GROWTH_PCT)]
    rebalance_pct: u32,
    /// Give the re-routed paths the layers (SLs) a standby derives from the tables alone (the
    /// plug-in's `canonical_sls 1`), instead of keeping unmoved paths' layers
    #[arg(long)]
    canonical_sls: bool,
}

impl EngineArgs {
    fn config(&self, f: &Fabric) -> CliResult<EngineConfig> {
        let mut c = EngineConfig::new(self.engine);
        c.lanes = self.lanes;
        c.qos = !self.no_qos;
        c.mcast_lane = self.mcast_lane;
        c.one_lane_candidate = !self.no_one_lane_candidate;
        if let Some(lists) = self.classes.lists()? {
            let (classes, m) = lists.classes(f);
            for w in m {
                eprintln!("dfsssp-rs: warning: {w}");
            }
            c.classes = Some(classes);
        }
        Ok(c)
    }
}

/// How routings are measured (shared by `eval` and `compare`).
#[derive(Args, Clone)]
struct MeasureArgs {
    /// Random bisection patterns for the effective bisection bandwidth Λ (0 skips it)
    #[arg(long, default_value_t = 1000)]
    patterns: u32,
    /// Seed of the bisection patterns (pattern i draws from stream i of this seed)
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Which LID of a destination a route uses when LMC > 0: its base LID, or base + (source
    /// index mod 2^LMC)
    #[arg(long, value_enum, default_value_t = LidsArg::Base)]
    lids: LidsArg,
    /// Matched pairs of a bisection pattern send both ways (default: one way, as Hoefler et al.)
    #[arg(long)]
    exchange: bool,
    /// Also measure how many layers pure DFSSSP cycle breaking needs for the routing as it is,
    /// with every switch and CA port a source and with CA ports only (what stock dfsssp counts)
    #[arg(long)]
    dfsssp_layers: bool,
    #[command(flatten)]
    classes: ClassArgs,
    /// No progress indication on standard error
    #[arg(short, long)]
    quiet: bool,
    /// Also print the engine's log lines on standard error
    #[arg(short, long)]
    verbose: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum LidsArg {
    Base,
    BySource,
}

impl MeasureArgs {
    fn options(&self) -> CliResult<judge::EvalOptions> {
        Ok(judge::EvalOptions {
            patterns: self.patterns,
            seed: self.seed,
            lid_choice: match self.lids {
                LidsArg::Base => LidChoice::Base,
                LidsArg::BySource => LidChoice::BySource,
            },
            traffic: if self.exchange {
                PairTraffic::Exchange
            } else {
                PairTraffic::OneWay
            },
            dfsssp_layers: self.dfsssp_layers,
            classes: self.classes.lists()?,
        })
    }
}

type CliResult<T> = Result<T, String>;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dfsssp-rs: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Generate {
            spec,
            format,
            output,
        } => {
            let f = topo::by_name(&spec).map_err(|e| e.to_string())?;
            let text = match format {
                Format::Ibsim => ibsim::write_net(&f),
                Format::Ibnetdiscover => ibnetdiscover::write(&f),
            };
            write_output(output.as_deref(), &text)?;
            eprintln!(
                "{spec}: {} switches, {} CAs, {} links",
                f.switch_count(),
                f.terminal_node_count(),
                f.links().len()
            );
            Ok(())
        }
        #[cfg(feature = "study")]
        Command::LidStudy(a) => lid_study::run(&a),
        Command::Route {
            fabric,
            engine: eargs,
            lfts_out,
            path_sl_out,
            state_out,
            previous,
            groups,
            mfts_out,
            mcast_trees,
            mcast_unbalanced,
            mcast_vl,
        } => {
            let f = load_fabric(fabric.fabric.as_deref(), fabric.topo.as_deref(), fabric.lmc)?;
            let cfg = eargs.config(&f)?;
            let out = match load_previous(&previous, fabric.lmc, &cfg)? {
                None => engine::run(&f, &cfg).map_err(|e| e.to_string())?,
                Some(prev) => reroute_from(&f, &cfg, &prev, &previous)?,
            };
            for (_, line) in &out.log {
                eprintln!("{line}");
            }
            if let Some(p) = lfts_out {
                write_output(
                    Some(&p),
                    &osm_dump::write_lfts(&f, &out.graph, &out.routing.lft),
                )?;
            }
            if let Some(p) = path_sl_out {
                path_sl::write_file(&p, &f, &out.graph, &out.routing, out.sl_offset)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
            }
            if let Some(p) = state_out {
                let t = std::time::Instant::now();
                let bytes =
                    dfsssp_rs::state::encode(engine::RoutedRef::of_output(&f, &cfg, &out), 0, 1);
                let encoded = t.elapsed();
                dfsssp_rs::state::write_atomic(&p, &bytes)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                eprintln!(
                    "wrote {} ({:.1} MB; encoded in {:.3} s, written and synced in {:.3} s)",
                    p.display(),
                    bytes.len() as f64 / 1e6,
                    encoded.as_secs_f64(),
                    (t.elapsed() - encoded).as_secs_f64()
                );
            }
            if let (Some(groups), Some(mfts)) = (groups, mfts_out) {
                let cfg = mcast_trees.config(
                    !mcast_unbalanced,
                    if eargs.no_qos { 1 } else { eargs.lanes },
                );
                mcast::route_groups(&f, &out.graph, &out.routing, &groups, &mfts, &cfg, mcast_vl)?;
            }
            Ok(())
        }
        Command::Eval(args) => eval::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::ManPages { out_dir } => write_man_pages(&out_dir),
    }
}

/// One roff page per visible command, from the same clap definitions `--help` prints. No date in
/// the pages: the package build stays reproducible.
fn write_man_pages(out_dir: &Path) -> CliResult<()> {
    use clap::CommandFactory;
    std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    clap_mangen::generate_to(Cli::command(), out_dir)
        .map_err(|e| format!("{}: {e}", out_dir.display()))
}

/// The previous routing of `route --previous-*`, to re-route from with `cfg`, the settings of
/// this command line (a state file's are not compared). No summary: the re-route traverses
/// every destination. From a state file: its SL offset and highest channel loads; from dumps:
/// SL offset 0 and the loads recounted.
fn load_previous(
    a: &PreviousArgs,
    lmc: u8,
    cfg: &EngineConfig,
) -> CliResult<Option<engine::Routed>> {
    if let Some(sp) = &a.previous_state {
        let s = dfsssp_rs::state::load(sp).map_err(|e| e.to_string())?;
        return Ok(Some(engine::Routed {
            cfg: cfg.clone(),
            ..s.routed
        }));
    }
    let (Some(fp), Some(lp)) = (&a.previous_fabric, &a.previous_lfts) else {
        return Ok(None);
    };
    let fabric = load_fabric(Some(fp), None, lmc)?;
    let graph = dfsssp_rs::graph::SwitchGraph::new(&fabric)
        .map_err(|e| format!("{}: {e}", fp.display()))?;
    let name = lp.display().to_string();
    let lfts = io::read_text(lp).map_err(|e| e.to_string())?;
    let lft = osm_dump::parse_lfts(&lfts, &name, &fabric, &graph)
        .map_err(|e| e.to_string())?
        .lft;
    let psl = match &a.previous_path_sl {
        Some(pp) => {
            let text = io::read_text(pp).map_err(|e| e.to_string())?;
            Some(
                osm_dump::parse_path_sl(&text, &pp.display().to_string(), &fabric, &graph)
                    .map_err(|e| e.to_string())?,
            )
        }
        None => None,
    };
    let mut routing = osm_dump::routing_from_dumps(&graph, lft, psl);
    dfsssp_rs::reroute::infer_switch_layers(&graph, &mut routing);
    // Read back from a path-SL dump, layers are SLs as they are (an SL left to multicast is an
    // empty layer): SL offset 0.
    Ok(Some(engine::Routed::read_back(
        fabric,
        graph,
        routing,
        cfg.clone(),
        0,
    )))
}

/// Routes `f` from the previous routing and prints what moved.
fn reroute_from(
    f: &Fabric,
    cfg: &EngineConfig,
    prev: &engine::Routed,
    a: &PreviousArgs,
) -> CliResult<engine::EngineOutput> {
    use dfsssp_rs::reroute::{diff, RoutedFabric};
    let rc = engine::RerouteConfig {
        incremental: true,
        max_load_growth_pct: a.rebalance_pct,
        force_full: a.full.then_some(engine::FullWhy::Asked),
        canonical_layers: a.canonical_sls,
    };
    let out = engine::run_from(f, cfg, Some(prev.view()), &rc).map_err(|e| e.to_string())?;
    let d = diff(
        prev.view().routed_fabric(),
        RoutedFabric {
            fabric: f,
            graph: &out.graph,
            routing: &out.routing,
        },
    );
    match &out.mode {
        engine::RouteMode::Incremental(st) => println!("re-routed incrementally: {}", st.summary()),
        engine::RouteMode::Full(why) => println!("computed from scratch: {why}"),
    }
    println!("changes: {}", d.summary());
    Ok(out)
}

/// Reads the fabric named on the command line (a file, format detected from its content, or a
/// generator spec).
fn load_fabric(file: Option<&Path>, spec: Option<&str>, lmc: u8) -> CliResult<Fabric> {
    if let Some(spec) = spec {
        return topo::by_name(spec).map_err(|e| e.to_string());
    }
    let path = file.ok_or("give --fabric FILE or --topo SPEC")?;
    let text = io::read_text(path).map_err(|e| e.to_string())?;
    let name = path.display().to_string();
    let opts = ibsim::NetOptions { lmc };
    let parsed = match detect_format(&text) {
        InputFormat::SubnetLst => osm_dump::parse_subnet_lst(&text, &name, lmc),
        InputFormat::Ibnetdiscover => {
            ibnetdiscover::parse_with_notes(&text, &name, opts).map(|(f, notes)| {
                // What was forgiven, on standard error: tables and JSON stay as they are.
                for n in notes {
                    eprintln!("input: {name}: {n}");
                }
                f
            })
        }
        InputFormat::IbsimNet => ibsim::parse_net(&text, &name, opts),
        InputFormat::RunRecord => fabric_json::parse_fabric(&text, &name),
    };
    parsed.map_err(|e| e.to_string())
}

enum InputFormat {
    IbsimNet,
    Ibnetdiscover,
    SubnetLst,
    /// The plug-in's dfsssp-rs-fabric.json.
    RunRecord,
}

fn detect_format(text: &str) -> InputFormat {
    let significant = text
        .lines()
        .map(|l| l.trim_start_matches('\u{feff}').trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    for (i, l) in significant.take(50).enumerate() {
        if i == 0 && l.starts_with('{') && !l.contains("Ports:") {
            return InputFormat::RunRecord;
        }
        if l.starts_with('{') && l.contains("Ports:") {
            return InputFormat::SubnetLst;
        }
        // ibsim net files may carry `caguid=` lines too; only ibnetdiscover prints vendor ids.
        if l.starts_with("vendid=") || l.starts_with("sysimgguid=") {
            return InputFormat::Ibnetdiscover;
        }
    }
    InputFormat::IbsimNet
}

fn write_output(path: Option<&Path>, text: &str) -> CliResult<()> {
    match path {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display())),
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| format!("stdout: {e}"))
        }
    }
}
