//! Command-line front of the core. Every error names the file (and line) it comes from; the
//! process exits with status 1 on errors and 2 on usage errors (clap's convention).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use dfsssp_rs::engine::{self, EngineConfig, EngineKind};
use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::io::{self, ibnetdiscover, ibsim, osm_dump};
use dfsssp_rs::topo;

#[derive(Parser)]
#[command(
    name = "dfsssp-rs",
    version,
    about = "Route and judge InfiniBand fabrics offline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    /// An ibsim net file, ibnetdiscover output or opensm-subnet.lst (detected from the content)
    #[arg(long, conflicts_with = "topo", required_unless_present = "topo")]
    fabric: Option<PathBuf>,
    /// A generated fabric (spec as for `generate`)
    #[arg(long)]
    topo: Option<String>,
    /// LMC of CA ports where the input gives no LIDs (ibsim net files)
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
}

impl EngineArgs {
    fn config(&self) -> EngineConfig {
        let mut c = EngineConfig::new(self.engine);
        c.lanes = self.lanes;
        c.qos = !self.no_qos;
        c
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
                f.links.len()
            );
            Ok(())
        }
        Command::Route {
            fabric,
            engine: eargs,
            lfts_out,
            path_sl_out,
        } => {
            let f = load_fabric(&fabric)?;
            let out = engine::run(&f, &eargs.config()).map_err(|e| e.to_string())?;
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
                write_output(
                    Some(&p),
                    &osm_dump::write_path_sl(&f, &out.graph, &out.routing),
                )?;
            }
            Ok(())
        }
    }
}

/// Reads the fabric named on the command line, detecting the file format from its content.
fn load_fabric(a: &FabricArgs) -> CliResult<Fabric> {
    if let Some(spec) = &a.topo {
        return topo::by_name(spec).map_err(|e| e.to_string());
    }
    let path = a
        .fabric
        .as_deref()
        .ok_or("give --fabric FILE or --topo SPEC")?;
    let text = io::read_text(path).map_err(|e| e.to_string())?;
    let name = path.display().to_string();
    let opts = ibsim::NetOptions { lmc: a.lmc };
    let parsed = match detect_format(&text) {
        InputFormat::SubnetLst => osm_dump::parse_subnet_lst(&text, &name, a.lmc),
        InputFormat::Ibnetdiscover => ibnetdiscover::parse(&text, &name, opts),
        InputFormat::IbsimNet => ibsim::parse_net(&text, &name, opts),
    };
    parsed.map_err(|e| e.to_string())
}

enum InputFormat {
    IbsimNet,
    Ibnetdiscover,
    SubnetLst,
}

fn detect_format(text: &str) -> InputFormat {
    let significant = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    for l in significant.take(50) {
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
