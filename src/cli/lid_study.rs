//! `dfsssp-rs lid-study`: Nienaber et al.'s experiment (Tables 1–3) on random irregular fabrics.

use std::io::IsTerminal;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use dfsssp_rs::lid::study::{run_study_with_progress, StudyConfig};

#[derive(Args)]
pub struct LidStudyArgs {
    /// Random instances per configuration (the paper: 32)
    #[arg(long, default_value_t = 32)]
    instances: u32,
    /// Seed of the random fabrics
    #[arg(long, default_value_t = 2007)]
    seed: u64,
    /// Configurations as MACHINES/SWITCHES, comma-separated (the paper: 128/16,256/32,512/64)
    #[arg(long, value_delimiter = ',')]
    configs: Vec<String>,
    /// No progress bar on standard error
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(a: &LidStudyArgs) -> Result<(), String> {
    let mut cfg = StudyConfig {
        instances: a.instances,
        seed: a.seed,
        ..StudyConfig::default()
    };
    if !a.configs.is_empty() {
        cfg.configs = a
            .configs
            .iter()
            .map(|c| {
                let (m, s) = c
                    .split_once('/')
                    .ok_or_else(|| format!("--configs: '{c}' is not MACHINES/SWITCHES"))?;
                let num = |x: &str| {
                    x.parse::<u32>()
                        .map_err(|_| format!("--configs: '{x}' in '{c}' is not a number"))
                };
                Ok((num(m)?, num(s)?))
            })
            .collect::<Result<_, String>>()?;
    }
    let total = cfg.configs.len() as u64 * u64::from(cfg.instances);
    let bar = if a.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total)
    };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} instances")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let result = run_study_with_progress(&cfg, |done, _| bar.set_position(done as u64))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    // Our numbers beside the paper's (the plain `Display` of the result has ours alone).
    println!("{}", result.paper_comparison());
    Ok(())
}
