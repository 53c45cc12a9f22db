//! `dfsssp-rs`: the offline toolkit. Generate fabrics, route them with the same core the OpenSM
//! plug-in uses, judge any routing (ours or a stock engine's, from OpenSM's dumps), compare engines.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
