//! Issue 26 end to end: the routing survives an SM restart, a fault while no SM runs, a damaged
//! state file and a standby's takeover, and returned cables are used again. The stock opensm in
//! ibsim with dfsssp-rs and QoS on; after every step ibdmchk (connectivity, no credit loop with
//! our path-SL dump and OpenSM's SL-to-VL dump), the SA's SLs equal to the dump, and the churn
//! (LFT entries and CA-pair SLs changed) against the step before, from OpenSM's own dumps.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use dfsssp_rs::fabric::{Fabric, Link, NodeKind, PortRef};
use dfsssp_rs::io::ibsim::node_id;

const SWEEP: Duration = Duration::from_secs(180);
const SAVED: &str = "dfsssp-rs: saved routing state";
const ADOPTED: &str = "dfsssp-rs: adopted the routing state";
const CHANGES: &str = "dfsssp-rs: changes:";
const INCREMENTAL: &str = "dfsssp-rs: incremental re-route:";
const FULL: &str = "dfsssp-rs: full computation:";
const WROTE: &str = "dfsssp-rs: wrote";

/// What OpenSM holds after a step: LFTs (switch GUID -> LID -> port) and path SLs ((source CA
/// GUID, DLID) -> SL), from the dumps in `dir`.
#[derive(Clone)]
struct Tables {
    lfts: BTreeMap<u64, BTreeMap<u16, u8>>,
    sls: BTreeMap<(u64, u16), u8>,
}

impl Tables {
    fn read(dir: &Path) -> Tables {
        let text = |f: &str| fs::read_to_string(dir.join(f)).unwrap_or_default();
        let sls = text("opensm-path-sl.dump")
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let guid = u64::from_str_radix(it.next()?.strip_prefix("0x")?, 16).ok()?;
                Some(((guid, it.next()?.parse().ok()?), it.next()?.parse().ok()?))
            })
            .collect();
        Tables {
            lfts: parse_lfts_dump(&text("opensm-lfts.dump")),
            sls,
        }
    }
}

/// Churn from `a` to `b`, in percent: LFT entries of `b` that differ from `a` (or are new), and
/// SLs of CA pairs in both that changed.
fn churn(a: &Tables, b: &Tables) -> (f64, f64) {
    let (mut entries, mut moved) = (0u64, 0u64);
    for (sw, t) in &b.lfts {
        for (lid, port) in t {
            entries += 1;
            if a.lfts.get(sw).and_then(|o| o.get(lid)) != Some(port) {
                moved += 1;
            }
        }
    }
    let (mut pairs, mut changed) = (0u64, 0u64);
    for (k, sl) in &b.sls {
        if let Some(old) = a.sls.get(k) {
            pairs += 1;
            changed += u64::from(old != sl);
        }
    }
    assert!(entries > 0 && pairs > 0, "empty dumps");
    (
        100.0 * moved as f64 / entries as f64,
        100.0 * changed as f64 / pairs as f64,
    )
}

/// The CA GUIDs (and base LIDs) of `f`.
fn cas(f: &Fabric) -> Vec<(u64, u16)> {
    f.endpoints()
        .iter()
        .filter(|e| f.nodes()[e.node as usize].kind == NodeKind::Ca)
        .map(|e| (f.nodes()[e.node as usize].guid, e.base_lid))
        .collect()
}

/// [`check`], and the SA's SL for every CA pair (one PathRecord query each) equal to the
/// dump's: what the SMs of an HA pair answer applications, compared before and after a
/// takeover through the dumps.
fn check_every_pair(sim: &Sim, dir: &Path, f: &Fabric, step: &str) -> Tables {
    let t = check(sim, dir, f, step);
    let ports: Vec<(u64, u64, u16)> = f
        .endpoints()
        .iter()
        .filter(|e| f.nodes()[e.node as usize].kind == NodeKind::Ca)
        .map(|e| (f.nodes()[e.node as usize].guid, e.port_guid, e.base_lid))
        .collect();
    let pairs: Vec<(u64, u64)> = ports
        .iter()
        .flat_map(|a| {
            ports
                .iter()
                .filter(move |b| b.1 != a.1)
                .map(move |b| (a.1, b.1))
        })
        .collect();
    let sa = sim.sa_sls(&pairs);
    let by_port: BTreeMap<u64, u64> = ports.iter().map(|p| (p.1, p.0)).collect();
    let mut differ = Vec::new();
    for (&(port, dlid), &sl) in &sa {
        let dumped = t.sls.get(&(by_port[&port], dlid));
        if dumped != Some(&sl) {
            differ.push(format!("0x{port:x} -> {dlid}: SA {sl}, dump {dumped:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{step}: the SA answers other SLs than the dump on {} of {} pairs: {:?}",
        differ.len(),
        sa.len(),
        &differ[..differ.len().min(5)]
    );
    eprintln!(
        "{step}: the SA's SL equals the dump's on all {} CA pairs",
        sa.len()
    );
    t
}

/// ibdmchk over the dumps in `dir` (every CA pair routed, no credit loop with the path SLs and
/// SL-to-VL tables), and a sample of the SA's path records against the dump's SLs.
fn check(sim: &Sim, dir: &Path, f: &Fabric, step: &str) -> Tables {
    let n = cas(f).len() as u64;
    let report = ibdmchk_in(dir, true, true, 0);
    report.assert_connected(n * (n - 1));
    assert_eq!(
        report.credit_loops,
        Some(false),
        "{step}: {}",
        report.errors()
    );
    let t = Tables::read(dir);
    let sample = cas(f);
    for (k, &(guid, slid)) in sample.iter().enumerate().step_by(sample.len() / 4 + 1) {
        let (_, dlid) = sample[(k + sample.len() / 2) % sample.len()];
        if dlid != slid {
            assert_eq!(
                sim.path_record_sl(slid, dlid),
                t.sls[&(guid, dlid)],
                "{step}: SA path record {slid} -> {dlid}"
            );
        }
    }
    t
}

/// Waits until OpenSM has swept, routed, dumped and saved, and sweeps no more.
fn settle(sm: &RunningSm) {
    let t = Instant::now();
    loop {
        let seen = (sm.count("SUBNET UP"), sm.count(CHANGES), sm.count(SAVED));
        std::thread::sleep(Duration::from_millis(3000));
        let now = (sm.count("SUBNET UP"), sm.count(CHANGES), sm.count(SAVED));
        if now == seen && seen.0 > 0 && seen.2 > 0 && sm.count(WROTE) >= 2 {
            return;
        }
        assert!(t.elapsed() < SWEEP, "OpenSM keeps sweeping:\n{}", sm.log());
    }
}

fn osm() -> OpenSm {
    OpenSm::new("dfsssp-rs").qos(true).conf("sweep_interval 1")
}

/// The SM of the `k`-th run on `f`, attached to the `k`-th CA: ibsim keeps a killed client
/// registered on its node (no disconnect after SIGKILL) and would hand SA queries to it, so each
/// new SM process attaches to a CA of its own, as after a host reboot the SM may come back on
/// another host.
fn osm_on(f: &Fabric, k: usize) -> OpenSm {
    let cas: Vec<u32> = (0..f.nodes().len() as u32)
        .filter(|&n| f.nodes()[n as usize].kind == NodeKind::Ca)
        .collect();
    osm().env("SIM_HOST", &sim_host(f, cas[k * 7 % cas.len()]))
}

/// Switch-to-switch links of `f`.
fn switch_links(f: &Fabric) -> Vec<Link> {
    let sw = |p: PortRef| f.nodes()[p.node as usize].kind == NodeKind::Switch;
    f.links()
        .iter()
        .filter(|l| sw(l.a) && sw(l.b))
        .copied()
        .collect()
}

fn port_name(f: &Fabric, p: PortRef) -> String {
    let n = &f.nodes()[p.node as usize];
    format!("\"{}\"[{}]", node_id(n.kind, n.guid), p.port)
}

fn without(f: &Fabric, gone: &[Link]) -> Fabric {
    f.retain(|_| true, |l| !gone.contains(l))
}

/// Entries of `t` that leave switch `guid` by `port`.
fn uses_port(t: &Tables, guid: u64, port: u8) -> usize {
    t.lfts
        .get(&guid)
        .map_or(0, |m| m.values().filter(|&&p| p == port).count())
}

/// Λ (effective bisection bandwidth, 200 patterns) of OpenSM's dumps in `dir`, or of a fresh
/// in-process computation of `spec` (`dir` None), through the CLI.
fn lambda(dir: Option<&Path>, spec: &str) -> f64 {
    let report = match dir {
        Some(d) => eval_json(&["--patterns", "200", "--dumps", &d.to_string_lossy()]),
        // As the plug-in routes with QoS on: a lane left to multicast.
        None => eval_json(&[
            "--patterns",
            "200",
            "--topo",
            spec,
            "--mcast-lane",
            "always",
        ]),
    };
    lambda_of(&report)
}

/// Restarts (SIGKILL, as a crash or a host reboot would) the SM as the `k`-th run and waits
/// for the new one to settle; asserts it adopted the state and re-routed incrementally.
fn restart(sim: &Sim, sm: RunningSm, k: usize) -> RunningSm {
    drop(sm);
    let sm = sim.start_opensm(&osm_on(&sim.fabric, k));
    settle(&sm);
    assert_eq!(sm.count(ADOPTED), 1, "{}", sm.log());
    assert!(
        sm.count(INCREMENTAL) >= 1 && sm.count(FULL) == 0,
        "{}",
        sm.log()
    );
    sm
}

/// The sequence on a 4x4x4 torus with 2 CAs per switch: restart, a cable fails, restart,
/// the cable returns (repair), restart on the repaired fabric.
#[test]
fn restarts_change_nothing_and_a_returned_cable_is_used_again() {
    let spec = "torus:4x4x4,2";
    let f = dfsssp_rs::topo::by_name(spec).unwrap();
    let links = switch_links(&f);
    let cable = links[links.len() / 3];
    let tail_guid = f.nodes()[cable.a.node as usize].guid;
    let mut sim = Sim::start_with_console("restart-seq", &f);
    let sm = sim.start_opensm(&osm());
    settle(&sm);
    assert_eq!(sm.count(FULL), 1);
    let t0 = check(&sim, sim.dir(), &f, "start");
    let used_before = uses_port(&t0, tail_guid, cable.a.port);
    assert!(used_before > 0, "the cable carries routes at first");

    let sm = restart(&sim, sm, 1);
    let t1 = check(&sim, sim.dir(), &f, "restart");
    let (lft, sl) = churn(&t0, &t1);
    eprintln!("restart on the unchanged fabric: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert_eq!((lft, sl), (0.0, 0.0));

    let n = sm.count(CHANGES);
    sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
    sm.wait_count(CHANGES, n + 1, SWEEP);
    settle(&sm);
    let cut = without(&f, &[cable]);
    let t2 = check(&sim, sim.dir(), &cut, "cable unplugged");
    let (lft, sl) = churn(&t1, &t2);
    eprintln!("one cable unplugged: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert!(lft <= 2.0 && sl <= 2.0);

    let sm = restart(&sim, sm, 2);
    let t3 = check(&sim, sim.dir(), &cut, "restart after the fault");
    let (lft, sl) = churn(&t2, &t3);
    eprintln!("restart after the fault: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert_eq!((lft, sl), (0.0, 0.0));

    let n = sm.count(CHANGES);
    sim.console(&format!("ReLink {}", port_name(&f, cable.a)));
    sm.wait_count(CHANGES, n + 1, SWEEP);
    settle(&sm);
    let t4 = check(&sim, sim.dir(), &f, "cable back");
    let (lft, sl) = churn(&t3, &t4);
    let used = uses_port(&t4, tail_guid, cable.a.port);
    let repaired = sm
        .log()
        .lines()
        .rfind(|l| l.contains(CHANGES))
        .map(strip_prefix)
        .unwrap_or("")
        .to_string();
    eprintln!(
        "the cable plugged back in: {lft:.2}% LFT entries, {sl:.2}% SLs changed; {used} entries \
         use it again ({used_before} before the fault); {repaired}"
    );
    assert!(used > 0, "the returned cable stays unused");
    let (now, fresh) = (lambda(Some(sim.dir()), spec), lambda(None, spec));
    eprintln!(
        "Λ after the repair {now:.4}, fresh computation {fresh:.4} ({:.2}%)",
        100.0 * now / fresh
    );
    assert!(now >= 0.99 * fresh, "Λ {now} < 99% of a fresh {fresh}");

    let sm = restart(&sim, sm, 3);
    let t5 = check(&sim, sim.dir(), &f, "restart on the repaired fabric");
    let (lft, sl) = churn(&t4, &t5);
    eprintln!("restart on the repaired fabric: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert_eq!((lft, sl), (0.0, 0.0));
    drop(sm);
}

/// A cable fails while no SM runs: the next SM re-routes only what crossed it.
#[test]
fn a_fault_while_no_sm_runs_moves_what_crossed_it_only() {
    let f = dfsssp_rs::topo::by_name("torus:4x4x4,2").unwrap();
    let links = switch_links(&f);
    let cable = links[2 * links.len() / 3];
    let mut sim = Sim::start_with_console("restart-down", &f);
    let sm = sim.start_opensm(&osm());
    settle(&sm);
    let t0 = check(&sim, sim.dir(), &f, "start");
    drop(sm);
    sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
    // ibsim applies console commands in order; give it a moment before the SM looks.
    std::thread::sleep(Duration::from_millis(500));
    let sm = sim.start_opensm(&osm_on(&f, 1));
    settle(&sm);
    assert_eq!(sm.count(ADOPTED), 1, "{}", sm.log());
    assert_eq!(sm.count(FULL), 0, "{}", sm.log());
    let t1 = check(
        &sim,
        sim.dir(),
        &without(&f, &[cable]),
        "restart after the fault",
    );
    let (lft, sl) = churn(&t0, &t1);
    eprintln!("a fault while no SM ran: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert!(lft <= 2.0 && sl <= 2.0, "{lft}% / {sl}%");
}

/// A damaged or foreign state file is logged with its code and ignored: the SM computes from
/// scratch and routes correctly.
#[test]
fn a_damaged_state_file_is_logged_and_ignored() {
    let f = dfsssp_rs::topo::by_name("torus:3x3x3,1").unwrap();
    let sim = Sim::start("restart-corrupt", &f);
    let sm = sim.start_opensm(&osm());
    settle(&sm);
    let t0 = check(&sim, sim.dir(), &f, "start");
    drop(sm);
    let state = sim.dir().join("dfsssp-rs.state");
    let good = fs::read(&state).expect("the state file is next to guid2lid");
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    let mut foreign = good.clone();
    foreign[8] = 0xee;
    for (k, (kind, bytes)) in [
        ("checksum", flipped),
        ("truncated", good[..good.len() / 3].to_vec()),
        ("foreign-version", foreign),
        ("not-state", b"0x0002c90000000000 0x0001 0x0001\n".to_vec()),
    ]
    .into_iter()
    .enumerate()
    {
        fs::write(&state, &bytes).unwrap();
        let sm = sim.start_opensm(&osm_on(&f, k + 1));
        settle(&sm);
        let line = format!("WRN DF09: dfsssp-rs: routing state not adopted ({kind})");
        assert_eq!(sm.count(&line), 1, "{kind}:\n{}", sm.log());
        assert_eq!(sm.count(FULL), 1, "{}", sm.log());
        assert_eq!(sm.count(ADOPTED), 0);
        let t = check(&sim, sim.dir(), &f, kind);
        // A fresh computation of the same fabric is deterministic.
        assert_eq!(churn(&t0, &t).0, 0.0, "{kind}");
        drop(sm);
        // The SM replaced the bad file with a good one.
        assert!(dfsssp_rs::state::load(&state).is_ok(), "{kind}");
    }
}

/// One opensm of an HA pair, run by the test itself (its own directory, log and CA).
struct Sm {
    child: Child,
    dir: PathBuf,
}

impl Sm {
    /// Starts opensm attached to CA `host` with `priority`; its cache, dumps and log in `dir`,
    /// the state in `state` (the one line an HA pair needs).
    fn start(
        (sock, shim): (&str, &Path),
        dir: &Path,
        host: &str,
        priority: u8,
        state: &Path,
        options: &str,
    ) -> Sm {
        fs::create_dir_all(dir.join("plugin")).unwrap();
        fs::copy(plugin_so(), dir.join("plugin/libdfsssp_rs.so")).unwrap();
        let conf = format!(
            "event_plugin_name dfsssp_rs\nevent_plugin_options state_file={}{options}\n\
             routing_engine dfsssp-rs\ndump_files_dir {}\nqos TRUE\nforce_log_flush TRUE\n\
             transaction_timeout 1000\nsweep_interval 1\nsm_priority {priority}\n\
             sminfo_polling_timeout 1000\npolling_retry_number 2\n",
            state.display(),
            dir.display()
        );
        fs::write(dir.join("osm.conf"), conf).unwrap();
        let out = fs::File::create(dir.join("osm.out")).unwrap();
        let mut cmd = Command::new(OPENSM);
        // Not `-d 0` (as tests/common runs opensm): to OpenSM that means "ignore other SMs".
        cmd.args(["-F", "osm.conf", "-f", "osm.log", "-D", "0x47"])
            .current_dir(dir)
            .env("LD_PRELOAD", shim)
            .env("LD_LIBRARY_PATH", dir.join("plugin"))
            .env("IBSIM_SOCKNAME", sock)
            .env("OSM_TMP_DIR", dir)
            .env("OSM_CACHE_DIR", dir)
            .env("SIM_HOST", host)
            // The port's PortInfo says IsSM, so the other SM finds this one and asks its SMInfo.
            .env("SIM_SET_ISSM", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        for (k, _) in std::env::vars() {
            if k.starts_with("DFSSSP_RS_") {
                cmd.env_remove(k);
            }
        }
        Sm {
            child: cmd.spawn().expect("start opensm"),
            dir: dir.to_path_buf(),
        }
    }

    /// [`Sm::start`] on `hosts[0]`, started again on the next host (up to three times) when it
    /// logs none of `ready` within 40 s: now and then an opensm attaching to ibsim through
    /// umad2sim hangs (seen twice in ten runs here: once before it loaded any plug-in, once
    /// while discovering). Another CA each time: ibsim keeps a killed client registered.
    fn start_ready(
        sock: (&str, &Path),
        dir: &Path,
        hosts: &[String],
        (priority, options): (u8, &str),
        state: &Path,
        ready: &[&str],
    ) -> Sm {
        for (attempt, host) in hosts.iter().take(3).enumerate() {
            let sm = Sm::start(sock, dir, host, priority, state, options);
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(40) {
                if ready.iter().any(|r| sm.count(r) > 0) {
                    return sm;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            eprintln!("opensm on {host} hung (attempt {})", attempt + 1);
            drop(sm);
            let _ = fs::remove_file(dir.join("osm.log"));
        }
        panic!("opensm never started on any of {hosts:?}");
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("osm.log")).unwrap_or_default()
    }

    /// The ends of its log and of its output (umad2sim's timeouts): the whole log is longer
    /// than what a CI run keeps of a failure.
    fn tails(&self) -> String {
        let tail = |text: String, n: usize| {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        };
        let out = fs::read_to_string(self.dir.join("osm.out")).unwrap_or_default();
        format!(
            "the log's last lines:\n{}\nosm.out's last lines:\n{}",
            tail(self.log(), 60),
            tail(out, 20)
        )
    }

    fn count(&self, needle: &str) -> usize {
        self.log().lines().filter(|l| l.contains(needle)).count()
    }

    fn wait_for(&self, needle: &str, n: usize) {
        let t = Instant::now();
        while self.count(needle) < n {
            assert!(
                t.elapsed() < SWEEP,
                "{} did not log {needle:?} {n} times in {SWEEP:?}; {}",
                self.dir.display(),
                self.tails()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until it has swept, routed, dumped and saved, and sweeps no more: OpenSM rewrites
    /// its dumps at every heavy sweep.
    fn settle(&self) {
        let t = Instant::now();
        loop {
            let seen = (self.count("SUBNET UP"), self.count(SAVED));
            std::thread::sleep(Duration::from_millis(3000));
            let now = (self.count("SUBNET UP"), self.count(SAVED));
            let dumped =
                fs::metadata(self.dir.join("opensm-subnet.lst")).is_ok_and(|m| m.len() > 0);
            if now == seen && seen.0 > 0 && seen.1 > 0 && dumped {
                return;
            }
            assert!(
                t.elapsed() < SWEEP,
                "OpenSM keeps sweeping:\n{}",
                self.log()
            );
        }
    }

    /// Stops it by PID: SIGKILL (the master's host dies).
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Sm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How the two SMs of an HA pair keep their routing state.
enum Storage {
    /// One state file both read and write (shared storage).
    Shared,
    /// Each its own, and `adopt_switch_tables=1` on both.
    OwnAndSwitchTables,
    /// As [`Storage::OwnAndSwitchTables`], and `canonical_sls=1` on both.
    OwnAndSwitchTablesCanonical,
}

/// An HA pair after a takeover ([`takeover`]). Fields drop in order: the SMs before ibsim.
struct HaPair {
    /// The standby, settled as master after the takeover.
    b: Sm,
    /// The old master, still running (as standby) after a handover; `None` once killed.
    a: Option<Sm>,
    /// What the takeover changed: LFT entries and CA-pair SLs, in percent.
    churn: (f64, f64),
    /// The tables B programmed.
    tb: Tables,
    f: Fabric,
    sock: String,
    ca_nodes: Vec<u32>,
    dir_a: PathBuf,
    state_a: PathBuf,
    opts: &'static str,
    sim: Sim,
}

/// How the standby becomes master.
enum Takeover {
    /// The master's host dies (SIGKILL).
    MasterDies,
    /// The master dies, and this many switch-to-switch cables fail (ibsim's `Unlink`) while no
    /// master runs.
    MasterDiesThenCablesFail(usize),
    /// The master dies, and a switch fails while no master runs: every cable to another switch
    /// unlinked (its CAs, cut off with it, are no longer found).
    MasterDiesThenSwitchFails,
    /// An admin raises the standby's `sm_priority` above the master's (its opensm.conf, then
    /// SIGHUP): the standby announces it by trap 144, the master hands over and stands by.
    /// Run on the patched ibsim, which delivers the master's TrapRepress ([`patched_ibsim`]).
    PriorityRaised,
    /// Switch-to-switch cables fail under the master one after the other (this many), and it
    /// re-routes incrementally after each; then the master dies.
    MasterReroutesThenDies(usize),
    /// A CA's cable is unplugged before the master starts, so it routes without the CA; the
    /// master dies, and the cable is plugged in again before the standby takes over.
    CaReturnsWhileNoMasterRuns,
}

/// An HA pair on the 4x4x4 torus in one ibsim (console open): the master A (priority 10) and a
/// standby B (priority 5) on another CA, keeping their state as `storage` says. Once B found A,
/// B takes over as `how` says (ibdmchk and the SA's SLs checked before and after).
fn takeover(name: &str, storage: Storage, how: Takeover) -> HaPair {
    takeover_on("torus:4x4x4,2", name, storage, how)
}

/// [`takeover`] on the fabric `spec`.
fn takeover_on(spec: &str, name: &str, storage: Storage, how: Takeover) -> HaPair {
    let f = dfsssp_rs::topo::by_name(spec).unwrap();
    // Two SMs talk through ibsim here: on the patched build, where a request one of them leaves
    // unanswered times out (stock umad2sim would stall the other's sweep for good) and a
    // TrapRepress reaches the SM whose trap it answers.
    let mut sim = Sim::start_patched_with_console(name, &f);
    // Sim's socket name (tests/common: one per test name and process).
    let sock = format!("dfsssp-{name}-{}", std::process::id());
    let ca_nodes: Vec<u32> = (0..f.nodes().len() as u32)
        .filter(|&n| f.nodes()[n as usize].kind == NodeKind::Ca)
        .collect();
    let (dir_a, dir_b) = (sim.dir().join("sm-a"), sim.dir().join("sm-b"));
    let shared = sim.dir().join("shared");
    fs::create_dir_all(&shared).unwrap();
    // The CA whose cable is out while the master routes ([`Takeover::CaReturnsWhileNoMasterRuns`]:
    // three quarters along the CAs, neither SM's host), and the fabric the master finds.
    let out_ca = ca_nodes[ca_nodes.len() * 3 / 4];
    let out_link = *(f.links().iter())
        .find(|l| l.a.node == out_ca || l.b.node == out_ca)
        .unwrap();
    let found = match how {
        Takeover::CaReturnsWhileNoMasterRuns => {
            sim.console(&format!("Unlink {}", port_name(&f, out_link.a)));
            let guid = f.nodes()[out_ca as usize].guid;
            f.retain(|n| n.guid != guid, |_| true)
        }
        _ => f.clone(),
    };
    let (state_a, state_b, opts) = match storage {
        Storage::Shared => (
            shared.join("dfsssp-rs.state"),
            shared.join("dfsssp-rs.state"),
            "",
        ),
        Storage::OwnAndSwitchTables => (
            dir_a.join("dfsssp-rs.state"),
            dir_b.join("dfsssp-rs.state"),
            ",adopt_switch_tables=1",
        ),
        Storage::OwnAndSwitchTablesCanonical => (
            dir_a.join("dfsssp-rs.state"),
            dir_b.join("dfsssp-rs.state"),
            ",adopt_switch_tables=1,canonical_sls=1",
        ),
    };
    let a = Sm::start_ready(
        (&sock, sim.shim()),
        &dir_a,
        &[0, 1, 2].map(|k| sim_host(&f, ca_nodes[k])),
        (10, opts),
        &state_a,
        &["SUBNET UP"],
    );
    a.wait_for("SUBNET UP", 1);
    a.wait_for(SAVED, 1);
    // The SA asked for every CA pair while no other SM polls this one: tens of thousands of
    // queries slow its SMInfo answers, and a standby polling it would take it for dead.
    a.settle();
    let alone = check_every_pair(&sim, &dir_a, &found, "master");
    let b = Sm::start_ready(
        (&sock, sim.shim()),
        &dir_b,
        &[0, 1, 2].map(|k| sim_host(&f, ca_nodes[ca_nodes.len() / 2 + k])),
        (5, opts),
        &state_b,
        &["Entering STANDBY state", "Entering MASTER state"],
    );
    assert_eq!(
        b.count("Entering MASTER state"),
        0,
        "the second SM did not find the master (see {})",
        dir_b.display()
    );
    // The master's tables once it has seen the standby (its trap makes it sweep again).
    a.settle();
    let mut ta = check(&sim, &dir_a, &found, "master with a standby");
    assert_eq!(
        churn(&alone, &ta),
        (0.0, 0.0),
        "the standby's arrival changed the routing"
    );
    let (a, now) = match how {
        Takeover::MasterDies => {
            a.kill();
            (None, f.clone())
        }
        Takeover::MasterDiesThenCablesFail(n) => {
            a.kill();
            let links = switch_links(&f);
            let cables: Vec<_> = (1..=n).map(|k| links[k * links.len() / (n + 2)]).collect();
            for cable in &cables {
                sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
            }
            (None, without(&f, &cables))
        }
        Takeover::MasterDiesThenSwitchFails => {
            a.kill();
            // A switch three quarters along the CAs: neither SM's host hangs off it.
            let ca = ca_nodes[ca_nodes.len() * 3 / 4];
            let switch = (f.links().iter())
                .find_map(|l| match (l.a.node, l.b.node) {
                    (x, y) if x == ca => Some(y),
                    (x, y) if y == ca => Some(x),
                    _ => None,
                })
                .unwrap();
            let cables: Vec<Link> = (switch_links(&f).into_iter())
                .filter(|l| l.a.node == switch || l.b.node == switch)
                .collect();
            for cable in &cables {
                sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
            }
            (None, f.without_switch(f.nodes()[switch as usize].guid))
        }
        Takeover::PriorityRaised => {
            let conf = b.dir.join("osm.conf");
            let text = fs::read_to_string(&conf).unwrap();
            assert!(text.contains("sm_priority 5\n"), "{text}");
            fs::write(&conf, text.replace("sm_priority 5\n", "sm_priority 15\n")).unwrap();
            let hup = Command::new("kill")
                .args(["-HUP", &b.child.id().to_string()])
                .status()
                .unwrap();
            assert!(hup.success(), "kill -HUP {}", b.child.id());
            a.wait_for("Handing over mastership", 1);
            a.wait_for("Entering STANDBY state", 1);
            (Some(a), f.clone())
        }
        Takeover::MasterReroutesThenDies(cables) => {
            // Cables one after the other (those `cargo bench --bench measure -- takeover-sls`
            // cuts first): on the torus, after the second, dimension order no longer fits and
            // the re-route's kept layers are not those the tables give.
            let links = switch_links(&f);
            let mut cut = f.clone();
            for k in 0..cables {
                let cable = links[(k * 7919 + 13) % links.len()];
                cut = without(&cut, &[cable]);
                let (saved, rerouted) = (a.count(SAVED), a.count(INCREMENTAL));
                sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
                a.wait_for(SAVED, saved + 1);
                a.settle();
                assert!(a.count(INCREMENTAL) > rerouted, "{}", a.log());
                ta = check(&sim, &dir_a, &cut, "the master re-routed around a cable");
            }
            a.kill();
            (None, cut)
        }
        Takeover::CaReturnsWhileNoMasterRuns => {
            a.kill();
            sim.console(&format!("ReLink {}", port_name(&f, out_link.a)));
            (None, f.clone())
        }
    };
    b.wait_for("Entering MASTER state", 1);
    b.wait_for(SAVED, 1);
    b.wait_for(WROTE, 2);
    b.settle();
    // Every pair once no other SM polls this one (after a handover the old one does).
    let tb = if a.is_none() {
        check_every_pair(&sim, &b.dir, &now, "after the takeover")
    } else {
        check(&sim, &b.dir, &now, "after the handover")
    };
    HaPair {
        b,
        a,
        churn: churn(&ta, &tb),
        tb,
        f,
        sock,
        ca_nodes,
        dir_a,
        state_a,
        opts,
        sim,
    }
}

/// `b` took over from the switches' tables (read back once, no full computation), and the
/// takeover changed no LFT entry and no SL (`what` names the case in the output).
fn assert_adopted_unchanged(b: &Sm, (lft, sl): (f64, f64), what: &str) {
    assert_eq!(
        b.count("adopted the routing the switches hold"),
        1,
        "{}",
        b.log()
    );
    assert_eq!(b.count(FULL), 0, "{}", b.log());
    eprintln!("{what}: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    for l in b.log().lines().filter(|l| l.contains("switches hold")) {
        eprintln!("{}", strip_prefix(l));
    }
    assert_eq!((lft, sl), (0.0, 0.0));
}

/// An HA pair sharing the state file: the master dies; the standby takes over and programs the
/// same LFTs and answers the same SLs.
#[test]
fn a_standby_takes_over_with_the_same_tables_and_sls() {
    let pair = takeover("restart-ha", Storage::Shared, Takeover::MasterDies);
    let (b, (lft, sl)) = (&pair.b, pair.churn);
    assert_eq!(b.count(ADOPTED), 1, "{}", b.log());
    assert_eq!(b.count(FULL), 0, "{}", b.log());
    eprintln!("standby takeover: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert_eq!((lft, sl), (0.0, 0.0));
}

/// An HA pair without shared storage: master and standby each keep their own state file, and
/// both have `adopt_switch_tables=1`. The master dies; the standby, which has no state to adopt,
/// reads the switches' LFTs back, adopts them with the layers derived from them, and programs
/// the same tables and answers the same SLs as the master did (0 changed), verified by ibdmchk
/// and the SA.
#[test]
fn a_standby_without_shared_storage_adopts_the_switches_tables() {
    let pair = takeover(
        "restart-ha-noshare",
        Storage::OwnAndSwitchTables,
        Takeover::MasterDies,
    );
    assert_eq!(
        pair.b.count(ADOPTED),
        0,
        "no shared state file:\n{}",
        pair.b.log()
    );
    assert_adopted_unchanged(
        &pair.b,
        pair.churn,
        "standby takeover without shared storage",
    );
}

/// No shared storage, and an admin raises the standby's `sm_priority` above the master's while
/// both run: the master hands over and stands by; the new master reads the switches' LFTs back
/// at its first sweep as master, adopts them with the layers derived from them, and programs
/// the same tables and answers the same SLs (0 changed; ibdmchk and the SA). The old master
/// stays standby. On the patched ibsim: stock ibsim drops the TrapRepress that the priority's
/// trap 144 waits for, and the new master's sweep would wait for it forever.
#[test]
fn a_handover_by_priority_changes_nothing() {
    let pair = takeover(
        "restart-ha-handover",
        Storage::OwnAndSwitchTables,
        Takeover::PriorityRaised,
    );
    let (b, a) = (&pair.b, pair.a.as_ref().expect("the old master runs on"));
    assert_adopted_unchanged(b, pair.churn, "handover by priority");
    // The old master stands by and stays so: it became master once, at its start.
    assert_eq!(a.count("Entering MASTER state"), 1, "{}", a.log());
    assert_eq!(b.count("Entering STANDBY state"), 1, "{}", b.log());
}

/// An HA pair, and the standby's host hangs (SIGSTOP: the process holds its port and answers
/// nothing). A cable fails; the master's sweep finds the standby's port and asks its SMInfo,
/// which nothing answers: the request times out (transaction_timeout x retries), the master
/// finishes the sweep, re-routes around the cable and programs verified tables (ibdmchk, the
/// SA). On stock umad2sim, which never times a request out, this sweep never ends (the stall
/// the HA tests once hit on a loaded CI machine, ibsim-patches/0002-*.patch).
#[test]
fn a_standby_that_stops_answering_does_not_stall_the_master() {
    let f = dfsssp_rs::topo::by_name("torus:4x4x4,2").unwrap();
    let mut sim = Sim::start_patched_with_console("restart-ha-frozen", &f);
    let sock = format!("dfsssp-restart-ha-frozen-{}", std::process::id());
    let ca_nodes: Vec<u32> = (0..f.nodes().len() as u32)
        .filter(|&n| f.nodes()[n as usize].kind == NodeKind::Ca)
        .collect();
    let (dir_a, dir_b) = (sim.dir().join("sm-a"), sim.dir().join("sm-b"));
    let opts = ",adopt_switch_tables=1";
    let a = Sm::start_ready(
        (&sock, sim.shim()),
        &dir_a,
        &[0, 1, 2].map(|k| sim_host(&f, ca_nodes[k])),
        (10, opts),
        &dir_a.join("dfsssp-rs.state"),
        &["SUBNET UP"],
    );
    a.wait_for(SAVED, 1);
    let b = Sm::start_ready(
        (&sock, sim.shim()),
        &dir_b,
        &[0, 1, 2].map(|k| sim_host(&f, ca_nodes[ca_nodes.len() / 2 + k])),
        (5, opts),
        &dir_b.join("dfsssp-rs.state"),
        &["Entering STANDBY state", "Entering MASTER state"],
    );
    assert_eq!(b.count("Entering MASTER state"), 0, "{}", b.log());
    a.settle();
    let before = check(&sim, &dir_a, &f, "master with a standby");
    let signal = |sig: &str| {
        let st = Command::new("kill")
            .args([sig, &b.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill {sig} {}", b.child.id());
    };
    signal("-STOP");
    let cable = switch_links(&f)[7];
    let cut = without(&f, &[cable]);
    let saved = a.count(SAVED);
    sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
    a.wait_for(SAVED, saved + 1);
    a.settle();
    let after = check(
        &sim,
        &dir_a,
        &cut,
        "the master re-routed beside a hung standby",
    );
    assert!(
        churn(&before, &after).0 > 0.0,
        "the master re-routed around the cable"
    );
    let out = fs::read_to_string(dir_a.join("osm.out")).unwrap_or_default();
    let timed_out: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("umad2sim: no response to class 0x81"))
        .collect();
    assert!(
        !timed_out.is_empty(),
        "the master's SMInfo to the hung standby did not time out:\n{out}"
    );
    eprintln!("{}", timed_out.join("\n"));
    // Resumed, the standby is still there; both stop by PID when dropped.
    signal("-CONT");
}

/// No shared storage, both with `canonical_sls=1`: two cables fail under the master, which
/// re-routes incrementally each time and gives the routes the layers the canonical rule derives
/// from its tables (after the second, other layers than the re-route kept); then the master
/// dies. The standby reads the tables back and derives the same layers:
/// 0 LFT entries and 0 SLs changed (ibdmchk and the SA). Without `canonical_sls` the master
/// keeps unmoved paths' SLs at the fault, which the derivation from the tables does not
/// reproduce (README, "HA pairs without shared storage").
#[test]
fn canonical_sls_survive_a_takeover_after_an_incremental_re_route() {
    let pair = takeover(
        "restart-ha-canonical",
        Storage::OwnAndSwitchTablesCanonical,
        Takeover::MasterReroutesThenDies(2),
    );
    let a_log = fs::read_to_string(pair.dir_a.join("osm.log")).unwrap_or_default();
    let canonical: Vec<&str> = a_log
        .lines()
        .filter(|l| l.contains("dfsssp-rs: SLs canonical"))
        .collect();
    assert!(
        canonical.len() >= 3,
        "full computation and re-routes:\n{a_log}"
    );
    for l in &canonical {
        eprintln!("{}", strip_prefix(l));
    }
    // The case the rule is for: a re-route whose kept layers were not the canonical ones.
    assert!(
        canonical.iter().any(|l| !l.contains(": 0 of ")),
        "no re-route moved a path to another layer:\n{a_log}"
    );
    assert_adopted_unchanged(
        &pair.b,
        pair.churn,
        "takeover after the master's incremental re-routes, canonical SLs",
    );
}

/// No shared storage, on a fat tree with 10% of its cables missing (deadlock-free in one layer,
/// spread over the lanes): one cable more fails under the master, which re-routes
/// incrementally, and its layers then cycle through routes that carry no data; the master
/// dies. The standby re-routes just those as deadlock removal does (before d0e1532 it refused
/// the tables and computed from scratch): no SL changes, and of the LFT entries only those
/// (ibdmchk, the SA's SLs for every CA pair).
#[test]
fn a_faulty_fat_tree_re_routed_then_taken_over_keeps_every_sl() {
    let pair = takeover_on(
        "ktree:6,3,cut=10",
        "restart-ha-tree",
        Storage::OwnAndSwitchTables,
        Takeover::MasterReroutesThenDies(1),
    );
    let (b, (lft, sl)) = (&pair.b, pair.churn);
    assert_eq!(
        b.count("adopted the routing the switches hold"),
        1,
        "{}",
        b.log()
    );
    assert_eq!(b.count(FULL), 0, "{}", b.log());
    for l in b.log().lines().filter(|l| l.contains("switches hold")) {
        eprintln!("{}", strip_prefix(l));
    }
    eprintln!("a faulty fat tree's takeover: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert!(
        b.count(dfsssp_rs::engine::NO_DATA_REROUTED) == 1,
        "the takeover re-routed nothing that carries no data: {}",
        b.log()
    );
    assert_eq!(sl, 0.0, "SLs changed at the takeover");
    assert!(lft > 0.0 && lft <= 0.5, "{lft}% of the LFT entries changed");
}

/// No shared storage, and a cable fails while no master runs (after the master's death, before
/// the standby takes over): the switches' tables route over the cable's two ends, down now; the
/// standby adopts them as the routing of the fabric with the cable and re-routes only what
/// crossed it: at most 2% of the LFT entries and SLs change (ibdmchk, the SA's SLs).
#[test]
fn a_cable_failing_before_the_takeover_moves_only_what_crossed_it() {
    cables_failing_before_the_takeover("restart-ha-fault", 1, "a cable", 2.0);
}

/// The same with two cables failing while no master runs: four down ports the tables route
/// over, which the standby pairs into the two cables by the tables' hops (before: refused,
/// computed from scratch), then re-routes only what crossed them: what the master's own
/// incremental re-route of the two faults changes (offline, on these cables: 252 of 12,288
/// LFT entries, 2.05%, the same routes and layers;
/// `a_standby_tells_several_failed_cables_apart_by_the_tables_hops`), at most 2% per cable.
#[test]
fn two_cables_failing_before_the_takeover_move_only_what_crossed_them() {
    cables_failing_before_the_takeover("restart-ha-faults", 2, "2 cables", 4.0);
}

/// `cables` fail after the master's death, then the standby takes over: its log says it routed
/// around `said` ("they route over {said} that failed since"), it computes nothing from
/// scratch, and at most `max_lft` % of the LFT entries and 2% of the SLs change.
fn cables_failing_before_the_takeover(name: &str, cables: usize, said: &str, max_lft: f64) {
    cables_failing_before_the_takeover_on("torus:4x4x4,2", name, cables, said, max_lft);
}

/// [`cables_failing_before_the_takeover`] on the fabric `spec`; the pair, for more checks.
fn cables_failing_before_the_takeover_on(
    spec: &str,
    name: &str,
    cables: usize,
    said: &str,
    max_lft: f64,
) -> HaPair {
    let pair = takeover_on(
        spec,
        name,
        Storage::OwnAndSwitchTables,
        Takeover::MasterDiesThenCablesFail(cables),
    );
    let (b, (lft, sl)) = (&pair.b, pair.churn);
    let line = format!("they route over {said} that failed since");
    assert_eq!(b.count(&line), 1, "{}", b.log());
    assert_eq!(b.count(FULL), 0, "{}", b.log());
    eprintln!(
        "{spec}: {said} failed before the takeover: {lft:.2}% LFT entries, {sl:.2}% SLs changed"
    );
    assert!(lft <= max_lft && sl <= 2.0, "{lft}% / {sl}%");
    pair
}

/// The same on the torus with 5% of its cables missing, whose routes need the Up*/Down* escape
/// beside cycle breaking (no derivation from the routes gives their layers): the tables are the
/// master's computation from scratch of the fabric with the cable, so the standby takes that
/// computation's layers and re-routes only what crossed the cable (offline,
/// `escape_tables_with_a_cable_gone_are_recomputed_and_re_routed`). Before, it computed from
/// scratch.
#[test]
fn a_cable_failing_before_the_takeover_of_escape_routes_moves_only_what_crossed_it() {
    let pair = cables_failing_before_the_takeover_on(
        "torus:4x4x4,2,cut=5",
        "restart-ha-escape",
        1,
        "a cable",
        2.0,
    );
    let b = &pair.b;
    assert_eq!(
        b.count("computation from scratch, which gives these"),
        1,
        "{}",
        b.log()
    );
}

/// No shared storage: a CA left under the master (which re-routed without it) and comes back
/// while no master runs. No table routes its LID: the standby adopts the tables as the routing
/// of the fabric without it, and its re-route adds the CA as the master's own re-route of the
/// join would (offline, `nodes_joining_before_the_takeover_are_added_by_the_re_route`), nothing
/// computed from scratch. (Before, the tables were refused as incomplete.) The CA is out from
/// the master's first sweep on: had it left under the master, whose re-route keeps its layers
/// where the tables give others, the takeover would change SLs as after any re-route ("Known
/// limits"; 16.23% of the CA pairs' in a run here, with `canonical_sls` too, whose layers follow
/// every change).
#[test]
fn a_ca_returning_before_the_takeover_is_added_by_the_re_route() {
    let pair = takeover(
        "restart-ha-join",
        Storage::OwnAndSwitchTables,
        Takeover::CaReturnsWhileNoMasterRuns,
    );
    let (b, (lft, sl)) = (&pair.b, pair.churn);
    assert_eq!(
        b.count("joined since (no table routes their LIDs)"),
        1,
        "{}",
        b.log()
    );
    assert_eq!(b.count(FULL), 0, "{}", b.log());
    eprintln!("a CA returned before the takeover: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert!(lft <= 2.0 && sl <= 2.0, "{lft}% / {sl}%");
}

/// No shared storage, and a switch fails while no master runs (its cables to other switches
/// unlinked; its CAs cut off with it): the tables of its neighbours route over ports that are
/// down now, which no pairing into cables explains. The standby adopts them with a stand-in
/// switch at those ports and re-routes what entered it, as the master's own re-route of that
/// fault would (offline, `a_standby_stands_in_for_a_switch_gone_before_the_takeover`): it
/// computes nothing from scratch, ibdmchk finds every pair connected and no credit loop, the
/// SA answers the SLs dumped, and at most 4% of the LFT entries change. SLs are those the
/// canonical rule derives from the tables adopted (no bound: a function of all routes).
#[test]
fn a_switch_failing_before_the_takeover_moves_only_what_entered_it() {
    let pair = takeover(
        "restart-ha-switch",
        Storage::OwnAndSwitchTables,
        Takeover::MasterDiesThenSwitchFails,
    );
    let (b, (lft, sl)) = (&pair.b, pair.churn);
    assert_eq!(b.count("adopted with a stand-in switch"), 1, "{}", b.log());
    assert_eq!(b.count(FULL), 0, "{}", b.log());
    for l in b.log().lines().filter(|l| l.contains("switches hold")) {
        eprintln!("{}", strip_prefix(l));
    }
    eprintln!("a switch failed before the takeover: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert!(lft <= 4.0, "{lft}% of the LFT entries changed");
}

/// The rest of an HA pair's life without shared storage, after the takeover above: a cable fails
/// while B is master (B re-routes); the old master A comes back (on another CA) with its own
/// state file, older than the switches' tables now, and stands by; then B fails and A takes
/// over: A finds its state file differs from the switches, adopts their tables and changes no
/// LFT entry and no SL. ibdmchk and the SA's SLs after every step. A returns below B's
/// priority: at a higher one it waits for B's handover, and in stock ibsim that stalled twice
/// in eight runs (B stopped answering A's polls; A swept beside it and stalled after its own
/// port); a handover by priority is tested on the patched ibsim
/// (`a_handover_by_priority_changes_nothing`).
#[test]
fn the_old_master_returning_adopts_what_the_switches_hold() {
    let HaPair {
        b,
        churn: took_over,
        tb: tb0,
        f,
        sock,
        ca_nodes,
        dir_a,
        state_a,
        opts,
        mut sim,
        ..
    } = takeover(
        "restart-ha-back",
        Storage::OwnAndSwitchTables,
        Takeover::MasterDies,
    );
    assert_eq!(took_over, (0.0, 0.0));
    let cable = switch_links(&f)[5];
    let cut = without(&f, &[cable]);
    let saved = b.count(SAVED);
    sim.console(&format!("Unlink {}", port_name(&f, cable.a)));
    b.wait_for(SAVED, saved + 1);
    b.settle();
    let tb = check(&sim, &b.dir, &cut, "a cable failed under B");
    assert!(churn(&tb0, &tb).0 > 0.0, "B re-routed around the cable");

    // The old master returns and stands by; B fails in turn.
    let hosts = [3, 4, 5].map(|k| sim_host(&f, ca_nodes[k]));
    let _ = fs::remove_file(dir_a.join("osm.log"));
    let a = Sm::start_ready(
        (&sock, sim.shim()),
        &dir_a,
        &hosts,
        (1, opts),
        &state_a,
        &["Entering STANDBY state", "Entering MASTER state"],
    );
    a.wait_for("Entering STANDBY state", 1);
    assert_eq!(a.count("Entering MASTER state"), 0, "{}", a.log());
    b.settle();
    let tb = check(&sim, &b.dir, &cut, "B with the old master standing by");
    b.kill();
    a.wait_for("Entering MASTER state", 1);
    a.wait_for(SAVED, 1);
    a.settle();
    let returned = a
        .log()
        .lines()
        .filter(|l| l.contains("switches hold"))
        .map(|l| strip_prefix(l).to_string())
        .collect::<Vec<_>>();
    eprintln!("the old master back: {returned:?}");
    assert_eq!(
        a.count("the routing state file differs from them in"),
        1,
        "{}",
        a.log()
    );
    assert_eq!(a.count(FULL), 0, "{}", a.log());
    let ta = check(&sim, &a.dir, &cut, "the old master back");
    let (lft, sl) = churn(&tb, &ta);
    eprintln!("the old master back as master: {lft:.2}% LFT entries, {sl:.2}% SLs changed");
    assert_eq!(lft, 0.0);
    assert!(sl <= 2.0, "{sl}% SLs changed");
    drop(a);
}

/// Both engines of the plug-in in one OpenSM (`routing_engine dfsssp-rs,sssp-rs`) share one
/// state writer: dfsssp-rs fails its first run (a test hook), sssp-rs routes and saves; after a
/// cable fails dfsssp-rs routes and saves. One writer: the serials go on (#1, then #2), both
/// files are this SM's own, and neither engine takes the other's file for another SM's.
#[cfg(feature = "test-hooks")]
#[test]
fn both_engines_of_the_plug_in_write_one_state_file_in_turn() {
    let f = dfsssp_rs::topo::by_name("torus:3x3x3,1").unwrap();
    let links = switch_links(&f);
    let mut sim = Sim::start_with_console("restart-two-engines", &f);
    let osm = OpenSm::new("dfsssp-rs,sssp-rs")
        .qos(true)
        .conf("sweep_interval 1")
        .env("DFSSSP_RS_INJECT_FAILURE", "error-once:dfsssp-rs");
    let sm = sim.start_opensm(&osm);
    let saved = |sm: &RunningSm| sm.count("saved routing state #");
    let t = Instant::now();
    while saved(&sm) < 1 {
        assert!(t.elapsed() < SWEEP, "no state saved:\n{}", sm.log());
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        sm.count(" sssp-rs: saved routing state #1 "),
        1,
        "{}",
        sm.log()
    );
    sim.console(&format!("Unlink {}", port_name(&f, links[0].a)));
    while saved(&sm) < 2 {
        assert!(t.elapsed() < SWEEP, "no second state saved:\n{}", sm.log());
        std::thread::sleep(Duration::from_millis(500));
    }
    for l in sm
        .log()
        .lines()
        .filter(|l| l.contains("saved routing state"))
    {
        eprintln!("{}", strip_prefix(l));
    }
    assert_eq!(
        sm.count(" dfsssp-rs: saved routing state #2 "),
        1,
        "{}",
        sm.log()
    );
    assert_eq!(sm.count("written by another SM"), 0, "{}", sm.log());
    assert_eq!(sm.count(ADOPTED), 0, "{}", sm.log());
    drop(sm);
    let st = dfsssp_rs::state::load(&sim.dir().join("dfsssp-rs.state")).unwrap();
    assert_eq!(st.header.serial, 2);
    assert_eq!(st.routed.cfg.kind.name(), "dfsssp-rs");
}

/// The soak: a long-running stock opensm with dfsssp-rs in ibsim, QoS on, `SOAK_EVENTS` (20 in
/// the test suite; `benches/soak.sh` runs 200) seeded random events on a 4-ary 3-tree: a cable
/// down or back, a spine switch down or back, a CA leaving or joining, and an opensm restart
/// every `SOAK_EVENTS / 4` (every 50 of 200). The fabric stays connected. After each: ibdmchk
/// over the dumps with the path-SL dump (every CA pair routed, no credit loop), the SA's SLs
/// against the dump, the churn of the step, opensm's RSS; a restart changes nothing, no panic,
/// and the RSS of one opensm process grows by at most 5% after its first re-route.
#[test]
fn soak_random_faults_and_restarts() {
    use rand::{Rng, SeedableRng};
    // Ordered sets: which gone switch or CA comes back is drawn by iterating `gone`, and a
    // HashSet's order changes from process to process, so the same seed gave other events.
    use std::collections::BTreeSet;
    let events: usize = std::env::var("SOAK_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let restart_every = (events / 4).max(1);
    let f = dfsssp_rs::topo::by_name("ktree:4,3").unwrap();
    let nodes = f.nodes();
    let is_ca = |n: u32| nodes[n as usize].kind == NodeKind::Ca;
    let ca_nodes: Vec<u32> = (0..nodes.len() as u32).filter(|&n| is_ca(n)).collect();
    // The SMs run on the first CAs, which never leave (ibsim keeps a killed SM registered on
    // its CA, so each new SM takes another one).
    let reserved = &ca_nodes[..8];
    let sm_on = |k: usize| osm().env("SIM_HOST", &sim_host(&f, reserved[k % reserved.len()]));
    let spines: Vec<u32> = (0..nodes.len() as u32)
        .filter(|&n| !is_ca(n))
        .filter(|&n| {
            f.links()
                .iter()
                .filter(|l| l.a.node == n || l.b.node == n)
                .all(|l| !is_ca(l.a.node) && !is_ca(l.b.node))
        })
        .collect();
    let cables = switch_links(&f);
    let (mut down, mut gone): (Vec<Link>, BTreeSet<u32>) = (Vec::new(), BTreeSet::new());
    let current = |down: &[Link], gone: &BTreeSet<u32>| {
        let gone_guids: BTreeSet<u64> = gone.iter().map(|&n| nodes[n as usize].guid).collect();
        f.retain(|n| !gone_guids.contains(&n.guid), |l| !down.contains(l))
    };
    let connected = |fab: &Fabric| {
        dfsssp_rs::graph::SwitchGraph::new(fab).is_ok_and(|g| {
            let comp = g.components();
            comp.iter().all(|&c| c == comp[0]) && g.terminals().len() == cas(fab).len()
        })
    };
    let side = |l: &Link, n: u32| if l.a.node == n { l.a } else { l.b };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut sim = Sim::start_with_console("soak", &f);
    let mut sm = sim.start_opensm(&sm_on(0));
    settle(&sm);
    let mut prev = check(&sim, sim.dir(), &f, "start");
    let mut rss_first = sm.rss_kib();
    let mut rss_max_growth = 0.0f64;
    let (mut restarts, mut sms) = (0usize, 1usize);
    eprintln!("soak: {events} events, seed {seed}, restart every {restart_every}");
    eprintln!("event  what                          LFT churn  SL churn  opensm RSS");
    for ev in 1..=events {
        let what;
        if ev % restart_every == 0 {
            drop(sm);
            sm = sim.start_opensm(&sm_on(sms));
            sms += 1;
            settle(&sm);
            assert_eq!(sm.count(ADOPTED), 1, "restart {ev}:\n{}", sm.log());
            restarts += 1;
            rss_first = 0;
            what = "opensm restarted".to_string();
        } else {
            // Draw until an event keeps the fabric connected.
            let mut cmds = Vec::new();
            let mut label = String::new();
            for _ in 0..100 {
                let (mut d, mut g) = (down.clone(), gone.clone());
                cmds.clear();
                match rng.gen_range(0..6) {
                    0 => {
                        let up: Vec<Link> = (cables.iter())
                            .filter(|l| !d.contains(l) && !g.contains(&l.a.node))
                            .filter(|l| !g.contains(&l.b.node))
                            .copied()
                            .collect();
                        let l = up[rng.gen_range(0..up.len())];
                        d.push(l);
                        cmds.push(format!("Unlink {}", port_name(&f, l.a)));
                        label = format!("cable {} down", port_name(&f, l.a));
                    }
                    1 if !d.is_empty() => {
                        let l = d.swap_remove(rng.gen_range(0..d.len()));
                        cmds.push(format!("ReLink {}", port_name(&f, l.a)));
                        label = format!("cable {} back", port_name(&f, l.a));
                    }
                    2 => {
                        let s = spines[rng.gen_range(0..spines.len())];
                        if !g.insert(s) {
                            continue;
                        }
                        for l in f.links().iter().filter(|l| l.a.node == s || l.b.node == s) {
                            if !d.contains(l) {
                                cmds.push(format!("Unlink {}", port_name(&f, side(l, s))));
                            }
                        }
                        label = format!("switch {} down", nodes[s as usize].description);
                    }
                    3 if gone.iter().any(|n| !is_ca(*n)) => {
                        let s = *gone.iter().find(|n| !is_ca(**n)).unwrap();
                        g.remove(&s);
                        for l in f.links().iter().filter(|l| l.a.node == s || l.b.node == s) {
                            if !d.contains(l) {
                                cmds.push(format!("ReLink {}", port_name(&f, side(l, s))));
                            }
                        }
                        label = format!("switch {} back", nodes[s as usize].description);
                    }
                    4 => {
                        let c = ca_nodes[rng.gen_range(reserved.len()..ca_nodes.len())];
                        if !g.insert(c) {
                            continue;
                        }
                        cmds.push(format!(
                            "Unlink {}",
                            port_name(&f, PortRef { node: c, port: 1 })
                        ));
                        label = format!("CA {} leaves", nodes[c as usize].description);
                    }
                    5 if gone.iter().any(|n| is_ca(*n)) => {
                        let c = *gone.iter().find(|n| is_ca(**n)).unwrap();
                        g.remove(&c);
                        cmds.push(format!(
                            "ReLink {}",
                            port_name(&f, PortRef { node: c, port: 1 })
                        ));
                        label = format!("CA {} joins", nodes[c as usize].description);
                    }
                    _ => continue,
                }
                if connected(&current(&d, &g)) {
                    (down, gone) = (d, g);
                    break;
                }
                cmds.clear();
            }
            assert!(!cmds.is_empty(), "no event keeps the fabric connected");
            let n = sm.count(CHANGES);
            for c in &cmds {
                sim.console(c);
            }
            sm.wait_count(CHANGES, n + 1, SWEEP);
            settle(&sm);
            what = label;
        }
        let now = current(&down, &gone);
        let t = check(&sim, sim.dir(), &now, &format!("event {ev}: {what}"));
        let (lft, sl) = churn(&prev, &t);
        if what == "opensm restarted" {
            assert_eq!(
                (lft, sl),
                (0.0, 0.0),
                "event {ev}: a restart changed the tables"
            );
        }
        let rss = sm.rss_kib();
        // A process's baseline: its RSS after its first re-route (a restarted SM has only
        // adopted the state at its restart).
        if rss_first == 0 && what != "opensm restarted" {
            rss_first = rss;
        }
        if rss_first > 0 {
            rss_max_growth = rss_max_growth.max(rss as f64 / rss_first as f64 - 1.0);
            // Flat: at most 5% (the plug-in allocates from a heap of its own, src/opensm/heap.rs).
            assert!(
                rss <= rss_first + rss_first / 20,
                "event {ev}: opensm's RSS grew from {rss_first} to {rss} KiB"
            );
        }
        eprintln!(
            "{ev:>5}  {what:<28}  {lft:>8.2}%  {sl:>7.2}%  {:>7.1} MB",
            rss as f64 / 1024.0
        );
        assert_eq!(sm.count("panicked"), 0, "{}", sm.log());
        prev = t;
    }
    eprintln!(
        "soak: {events} events, {restarts} restarts, 0 credit loops, 0 unreachable pairs, \
         0 panics; opensm RSS grew by at most {:.1}% within a process",
        100.0 * rss_max_growth
    );
    drop(sm);
}
