//! End-to-end harness: a simulated fabric in `ibsim`, the stock `/usr/sbin/opensm` loading our
//! plug-in through `umad2sim`, and the outside checks (`ibdmchk`, `ibroute`, OpenSM's dumps).
//!
//! ```ignore
//! let fabric = dfsssp_rs::topo::by_name("fattree2:8")?;
//! let sim = Sim::start("my-test", &fabric);          // ibsim on a private socket, killed on drop
//! let run = sim.opensm(&OpenSm::new("sssp-rs"));      // opensm --once, files in sim.dir()
//! run.assert_configured_by("sssp-rs");
//! let rep = run.ibdmchk(false, false);               // CA-to-CA connectivity, credit loops
//! assert!(rep.all_paths_found());
//! ```
//!
//! Every `Sim` has its own temporary directory (OpenSM's dump, cache and log files go there) and
//! its own `IBSIM_SOCKNAME`, so tests run in parallel. The plug-in is the `libdfsssp_rs.so` that
//! cargo built for this very test run (`target/<profile>/deps`), copied into the directory.
//! Set `DFSSSP_RS_KEEP_E2E=1` to keep the directories of finished tests (their path is printed).

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use dfsssp_rs::fabric::Fabric;
use dfsssp_rs::graph::SwitchGraph;
use dfsssp_rs::io::ibsim::{write_net, IbsimCaps};
use dfsssp_rs::routing::{walk, Lft};

pub const OPENSM: &str = "/usr/sbin/opensm";
pub const NO_PATH: u8 = 0xFF;

/// The umad2sim shim (package libumad2sim0): where the package put it, else in this machine's
/// multiarch library directory (`gcc -print-multiarch`), whatever the architecture.
pub fn umad2sim() -> PathBuf {
    dfsssp_rs::io::ibsim::umad2sim_path()
}

/// Runs the `dfsssp-rs` command built for this test run with `args` (in `dir`, if given) and
/// returns its exit code, stdout and stderr; fails the test if the command panicked.
pub fn cli_in(dir: Option<&Path>, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dfsssp-rs"));
    cmd.args(args);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out = cmd.output().expect("run dfsssp-rs");
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !se.contains("panicked"),
        "dfsssp-rs {args:?} panicked:\n{se}"
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        se,
    )
}

/// [`cli_in`] in the current directory: whether the command succeeded, its stdout and stderr.
pub fn cli(args: &[&str]) -> (bool, String, String) {
    let (code, so, se) = cli_in(None, args);
    (code == Some(0), so, se)
}

/// `dfsssp-rs eval --json --quiet ARGS`: its JSON report; fails the test if the command fails.
pub fn eval_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["eval", "--json", "--quiet"];
    all.extend_from_slice(args);
    let (ok, so, se) = cli(&all);
    assert!(ok, "dfsssp-rs {all:?}: {se}");
    serde_json::from_str(&so).expect("eval JSON")
}

/// Λ of an `eval` report.
pub fn lambda_of(report: &serde_json::Value) -> f64 {
    report["metrics"]["bisection"]["lambda"]
        .as_f64()
        .unwrap_or_else(|| panic!("no Λ in {report}"))
}

/// Fails the test with what to install when a tool is missing (CI installs them all; see
/// scripts/setup.sh).
pub fn require_tools() {
    let mut missing = Vec::new();
    for (tool, pkg) in [
        ("ibsim", "ibsim-utils"),
        ("ibdmchk", "ibutils"),
        ("ibroute", "infiniband-diags"),
        ("ibtracert", "infiniband-diags"),
    ] {
        if !on_path(tool) {
            missing.push(format!("{tool} (apt-get install {pkg})"));
        }
    }
    if !Path::new(OPENSM).exists() {
        missing.push(format!("{OPENSM} (apt-get install opensm)"));
    }
    if !umad2sim().exists() {
        missing.push(format!(
            "{} (apt-get install libumad2sim0)",
            umad2sim().display()
        ));
    }
    assert!(
        missing.is_empty(),
        "end-to-end tests need: {}; scripts/setup.sh installs them",
        missing.join(", ")
    );
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// The plug-in cargo built with this test binary: `target/<profile>/deps/libdfsssp_rs.so` (cargo
/// compiles the crate's cdylib there for every `cargo test`), else `target/<profile>/`.
pub fn plugin_so() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps dir");
    let candidates = [
        deps.join("libdfsssp_rs.so"),
        deps.parent().unwrap_or(deps).join("libdfsssp_rs.so"),
    ];
    for c in &candidates {
        if c.is_file() {
            return c.clone();
        }
    }
    panic!(
        "libdfsssp_rs.so not found next to the test binary ({}); build it with `cargo build --lib`",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// A running `ibsim` with its own socket and directory. Killed when dropped.
pub struct Sim {
    dir: Option<tempfile::TempDir>,
    sock: String,
    child: Child,
    pub fabric: Fabric,
    /// ibsim's console (started with [`Sim::start_with_console`]): `Unlink`, `ReLink`, ...
    console: Option<std::process::ChildStdin>,
    /// The umad2sim shim its clients load: Debian's, or the patched build's beside a patched
    /// ibsim ([`patched_umad2sim`]).
    shim: PathBuf,
}

impl Sim {
    /// Writes `fabric` as an ibsim net file and starts `ibsim -s` on it (links up).
    pub fn start(name: &str, fabric: &Fabric) -> Sim {
        Self::start_net(name, fabric, &write_net(fabric))
    }

    /// [`Sim::start`] with the net file's text given (e.g. switches with enhanced port 0).
    pub fn start_net(name: &str, fabric: &Fabric, net_text: &str) -> Sim {
        Self::spawn(name, fabric, net_text, false)
    }

    /// [`Sim::start`] with ibsim's console on a pipe, to unplug and replug cables
    /// ([`Sim::console`]) while OpenSM runs.
    pub fn start_with_console(name: &str, fabric: &Fabric) -> Sim {
        Self::spawn(name, fabric, &write_net(fabric), true)
    }

    /// [`Sim::start_with_console`] on the ibsim built with ibsim-patches/ ([`patched_ibsim`]),
    /// which forwards a TrapRepress to the SM that sent the trap instead of dropping it, its
    /// clients on the patched shim, which times out a request no response answers.
    pub fn start_patched_with_console(name: &str, fabric: &Fabric) -> Sim {
        let mut sim = Self::spawn_program(&patched_ibsim(), name, fabric, &write_net(fabric), true);
        sim.shim = patched_umad2sim();
        sim
    }

    /// The umad2sim shim this simulator's clients load (`LD_PRELOAD`).
    pub fn shim(&self) -> &Path {
        &self.shim
    }

    /// Sends one console command (e.g. `Unlink "S-..."[3]`).
    pub fn console(&mut self, command: &str) {
        use std::io::Write;
        let c = self.console.as_mut().expect("started with a console");
        writeln!(c, "{command}").expect("write to ibsim's console");
        c.flush().expect("flush ibsim's console");
    }

    fn spawn(name: &str, fabric: &Fabric, net_text: &str, console: bool) -> Sim {
        Self::spawn_program(Path::new("ibsim"), name, fabric, net_text, console)
    }

    fn spawn_program(
        program: &Path,
        name: &str,
        fabric: &Fabric,
        net_text: &str,
        console: bool,
    ) -> Sim {
        require_tools();
        let dir = tempfile::Builder::new()
            .prefix(&format!("dfsssp-e2e-{name}-"))
            .tempdir()
            .expect("tempdir");
        let net = dir.path().join("fabric.net");
        fs::write(&net, net_text).expect("write net file");
        let sock = format!("dfsssp-{name}-{}", std::process::id());
        let out = fs::File::create(dir.path().join("ibsim.out")).expect("ibsim.out");
        let mut cmd = Command::new(program);
        cmd.arg("-s");
        if !console {
            cmd.arg("-n");
        }
        cmd.args(IbsimCaps::of(fabric).args()).arg(&net);
        cmd.env("IBSIM_SOCKNAME", &sock)
            .current_dir(dir.path())
            .stdin(if console {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let mut child = cmd.spawn().expect("start ibsim");
        let console = child.stdin.take();
        let mut sim = Sim {
            dir: Some(dir),
            sock,
            child,
            fabric: fabric.clone(),
            console,
            shim: umad2sim(),
        };
        sim.wait_ready(Duration::from_secs(30));
        sim
    }

    /// ibsim is ready once its control socket exists: abstract `<sock>:ctl` plus a NUL, which
    /// /proc/net/unix shows as `@<sock>:ctl@`.
    fn wait_ready(&mut self, limit: Duration) {
        let want = format!("@{}:ctl@", self.sock);
        let t = Instant::now();
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!(
                    "ibsim exited ({st}) before listening:\n{}",
                    self.read("ibsim.out")
                );
            }
            let unix = fs::read_to_string("/proc/net/unix").unwrap_or_default();
            if unix
                .lines()
                .any(|l| l.split_whitespace().last() == Some(want.as_str()))
            {
                return;
            }
            assert!(
                t.elapsed() < limit,
                "ibsim did not listen within {limit:?}:\n{}",
                self.read("ibsim.out")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("dir lives until drop").path()
    }

    pub fn read(&self, file: &str) -> String {
        fs::read_to_string(self.dir().join(file)).unwrap_or_default()
    }

    /// Writes osm.conf and the plug-in copy, and builds the opensm command (`--once` or not).
    fn opensm_command(&self, o: &OpenSm, once: bool, log: &str) -> Command {
        let dir = self.dir();
        let plugin_dir = dir.join("plugin");
        fs::create_dir_all(&plugin_dir).unwrap();
        // A private copy: a concurrent `cargo build` must not swap the library under opensm.
        let plugin = o.tree.as_ref().map_or_else(plugin_so, OpenSmTree::plugin);
        fs::copy(&plugin, plugin_dir.join("libdfsssp_rs.so"))
            .unwrap_or_else(|e| panic!("copy plug-in {}: {e}", plugin.display()));
        // A generous MAD timeout: on a loaded machine ibsim may answer later than OpenSM's
        // default 200 ms, and a timed-out sweep in --once mode never brings the subnet up.
        let mut conf = format!(
            "{}routing_engine {}\ndump_files_dir {}\nlmc {}\nqos {}\n\
             force_log_flush {}\ntransaction_timeout 1000\n",
            if o.event_plugin_line {
                "event_plugin_name dfsssp_rs\n"
            } else {
                ""
            },
            o.engine,
            dir.display(),
            o.lmc,
            if o.qos { "TRUE" } else { "FALSE" },
            if once { "FALSE" } else { "TRUE" }
        );
        for l in &o.extra_conf {
            conf.push_str(l);
            conf.push('\n');
        }
        fs::write(dir.join("osm.conf"), conf).unwrap();
        let _ = fs::remove_file(dir.join(log));

        let (opensm, lib_path) = match &o.tree {
            // OpenSM's own libraries from the tree's prefix, after the plug-in's copy.
            Some(t) => (
                t.opensm(),
                std::env::join_paths([plugin_dir.clone(), t.lib_dir()]).unwrap(),
            ),
            None => (PathBuf::from(OPENSM), plugin_dir.clone().into_os_string()),
        };
        let mut cmd = Command::new(opensm);
        if once {
            cmd.arg("--once");
        }
        cmd.args(["-F", "osm.conf", "-f", log, "-d", "0", "-D"])
            .arg(format!("0x{:x}", o.log_flags))
            .current_dir(dir)
            .env("LD_PRELOAD", &self.shim)
            .env("LD_LIBRARY_PATH", lib_path)
            .env("IBSIM_SOCKNAME", &self.sock)
            .env("OSM_TMP_DIR", dir)
            .env("OSM_CACHE_DIR", dir)
            .stdin(Stdio::null());
        // Only the settings this run asks for: nothing leaks from the test's own environment.
        for (k, _) in std::env::vars() {
            if k.starts_with("DFSSSP_RS_") {
                cmd.env_remove(k);
            }
        }
        for (k, v) in &o.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `opensm --once` against this simulator with the plug-in loaded.
    pub fn opensm(&self, o: &OpenSm) -> OsmRun {
        let mut cmd = self.opensm_command(o, true, "osm.log");
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let t = Instant::now();
        let (status, stdout, stderr) = run_with_timeout(cmd, o.timeout);
        OsmRun {
            dir: self.dir().to_path_buf(),
            log: self.read("osm.log"),
            status,
            stdout,
            stderr,
            elapsed: t.elapsed(),
        }
    }

    /// Starts OpenSM as a running SM (no `--once`, log flushed at every line) and waits until
    /// the subnet is up, so that clients (`saquery`) can ask its SA. Stopped when dropped.
    pub fn start_opensm(&self, o: &OpenSm) -> RunningSm {
        let mut cmd = self.opensm_command(o, false, "osm-daemon.log");
        let out = fs::File::create(self.dir().join("osm-daemon.out")).unwrap();
        cmd.stdout(out.try_clone().unwrap()).stderr(out);
        let child = cmd.spawn().expect("start opensm");
        let sm = RunningSm {
            child,
            log: self.dir().join("osm-daemon.log"),
        };
        sm.wait_for("SUBNET UP", o.timeout);
        sm
    }

    /// The SL of the path record OpenSM's SA gives for SLID -> DLID (`saquery -p`), which is what
    /// the routing engine's `path_sl` answered.
    pub fn path_record_sl(&self, slid: u16, dlid: u16) -> u8 {
        let (status, out, err) = self.diag(
            "saquery",
            &["-p", "--src-to-dst", &format!("{slid}:{dlid}")],
        );
        assert!(
            status.success(),
            "saquery {slid}:{dlid} failed ({status}): {err}"
        );
        let sl = out
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("sl.")
                    .map(|v| v.trim_start_matches('.').to_string())
            })
            .unwrap_or_else(|| panic!("no sl in path record {slid}:{dlid}:\n{out}"));
        u8::from_str_radix(sl.trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("bad sl {sl:?}"))
    }

    /// The SL OpenSM's SA answers for each (source, destination) CA port GUID pair of `pairs`,
    /// keyed by (source port GUID, DLID): one PathRecord query by SGID and DGID per pair, as
    /// applications ask (tools/sapaths.c, pipelined). Every pair must be answered.
    pub fn sa_sls(&self, pairs: &[(u64, u64)]) -> BTreeMap<(u64, u16), u8> {
        let input = self.dir().join("sapaths.in");
        let text: String = pairs
            .iter()
            .map(|(s, d)| format!("0x{s:016x} 0x{d:016x}\n"))
            .collect();
        fs::write(&input, text).expect("write sapaths.in");
        let mut cmd = self.client(sapaths_bin());
        // A narrow window: OpenSM answers its SMInfo polls between the queries.
        cmd.args(["-t", "2000", "-r", "4", "-w", "8"])
            .stdin(fs::File::open(&input).expect("sapaths.in"));
        let (status, out, err) = run_with_timeout(cmd, Duration::from_secs(600));
        assert!(status.success(), "sapaths failed ({status}):\n{err}");
        let mut sls = BTreeMap::new();
        for l in out.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            let hex = |x: &str| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok();
            match w[..] {
                [s, _, _, dlid, sl] => {
                    let (Some(s), Ok(dlid), Ok(sl)) = (hex(s), dlid.parse(), sl.parse()) else {
                        panic!("sapaths: unexpected line {l:?}");
                    };
                    sls.insert((s, dlid), sl);
                }
                _ => panic!("sapaths: a pair not answered: {l:?}\n{err}"),
            }
        }
        assert_eq!(
            sls.len(),
            pairs.len(),
            "sapaths answered {} of {} pairs:\n{err}",
            sls.len(),
            pairs.len()
        );
        sls
    }

    /// The SLs of the paths OpenSM's SA gives the CA `host` (its ibsim node name) for
    /// MultiPathRecord queries to each port GUID of `dests` (tests/tools/mpquery.c): one
    /// (destination GUID, SLID, DLID, SL) per PathRecord in the answers.
    pub fn multipath_sls(&self, host: &str, dests: &[u64]) -> Vec<(u64, u16, u16, u8)> {
        let mut cmd = self.client(mpquery_bin());
        cmd.args(["-t", "3000", "-r", "4"]);
        cmd.args(dests.iter().map(|g| format!("0x{g:016x}")));
        cmd.env("SIM_HOST", host);
        let (status, out, err) = run_with_timeout(cmd, Duration::from_secs(120));
        assert!(
            status.success(),
            "mpquery as {host} failed ({status}):\n{err}{out}"
        );
        out.lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let parsed = match w[..] {
                    [guid, "slid", slid, "dlid", dlid, "sl", sl] => Some((
                        u64::from_str_radix(guid.trim_start_matches("0x"), 16).ok(),
                        slid.parse().ok(),
                        dlid.parse().ok(),
                        sl.parse().ok(),
                    )),
                    _ => None,
                };
                match parsed {
                    Some((Some(g), Some(s), Some(d), Some(sl))) => (g, s, d, sl),
                    _ => panic!("mpquery as {host}: unexpected line {l:?}"),
                }
            })
            .collect()
    }

    /// The LFT a simulated switch holds now, LIDs `1..=max_lid`: LID -> port, read back with
    /// `ibroute <lid>`. ibroute never lists the LID equal to the switch's LinearFDBTop when that
    /// LID opens a new 64-LID block (checked: OpenSM uploads the block, traffic uses it); that
    /// entry is read from the first hop of `ibtracert <switch> <lid>` instead.
    pub fn switch_lft(&self, switch_lid: u16, max_lid: u16) -> BTreeMap<u16, u8> {
        let (status, out, err) = self.diag("ibroute", &[&switch_lid.to_string()]);
        assert!(
            status.success(),
            "ibroute {switch_lid} failed ({status}): {err}"
        );
        let mut lft = parse_lft_lines(&out);
        lft.retain(|&l, _| (1..=max_lid).contains(&l));
        if max_lid.is_multiple_of(64) && !lft.contains_key(&max_lid) {
            if let Some(p) = self.first_hop(switch_lid, max_lid) {
                lft.insert(max_lid, p);
            }
        }
        lft
    }

    /// The port by which switch `from` forwards `dlid` (0 for itself), from `ibtracert`.
    pub fn first_hop(&self, from: u16, dlid: u16) -> Option<u8> {
        let (status, out, _) = self.diag("ibtracert", &[&from.to_string(), &dlid.to_string()]);
        if !status.success() {
            return None;
        }
        let mut lines = out.lines().skip_while(|l| !l.starts_with("From "));
        lines.next()?;
        let next = lines.next()?;
        if next.starts_with("To ") {
            return Some(0);
        }
        next.strip_prefix('[')?.split(']').next()?.parse().ok()
    }

    /// Runs an infiniband-diags tool against this simulator.
    /// Sets the enabled link width of `port` of the node at the directed route `path` (e.g.
    /// "0,1,3") with `ibportstate`, before OpenSM assigns LIDs. ibsim then runs the link at the
    /// widest width of that setting, on both ends.
    pub fn set_link_width(&self, path: &str, port: u8, width: u8) {
        let (status, _, err) = self.diag(
            "ibportstate",
            &["-D", path, &port.to_string(), "width", &width.to_string()],
        );
        assert!(
            status.success(),
            "ibportstate -D {path} {port} width {width}: {err}"
        );
    }

    /// The SM's LID as a port holds it (PortInfo SMLid), read with `smpquery`.
    pub fn port_sm_lid(&self, lid: u16) -> u16 {
        let (status, out, err) = self.diag("smpquery", &["portinfo", &lid.to_string()]);
        assert!(status.success(), "smpquery portinfo {lid}: {err}");
        out.lines()
            .find_map(|l| l.strip_prefix("SMLid:"))
            .map(|v| v.trim_start_matches('.').trim().parse().unwrap())
            .unwrap_or_else(|| panic!("no SMLid in PortInfo of LID {lid}:\n{out}"))
    }

    fn diag(&self, tool: &str, args: &[&str]) -> (ExitStatus, String, String) {
        let mut cmd = self.client(tool);
        cmd.args(args);
        run_with_timeout(cmd, Duration::from_secs(120))
    }

    /// A command that talks to this simulator through the umad2sim shim, run in the
    /// simulator's directory (the shim writes a sys-PID/ folder where it runs), output captured.
    fn client(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.dir())
            .env("LD_PRELOAD", &self.shim)
            .env("IBSIM_SOCKNAME", &self.sock)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

/// How a port joins a multicast group (the MCMemberRecord's JoinState).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinState {
    /// FullMember (JoinState 1): receives and sends; creates the group if it does not exist.
    Full,
    /// SendOnlyNonMember (JoinState 4): sends only; the group must exist.
    SendOnly,
    /// Leaves the group as a full member (SubnAdmDelete).
    Leave,
}

/// Which group a join names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mgid {
    /// The IPoIB broadcast group of the default partition, ff12:401b:ffff::ffff:ffff, which
    /// OpenSM creates itself (joined as a full member).
    IpoibBroadcast,
    /// A new group whose MGID the SA assigns (an all-zero MGID; full member only).
    SaAssigned,
    /// An MGID in IPv6 notation, e.g. "ff12:e017::1".
    Gid(String),
}

/// One join as the SA answered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Joined {
    /// The group's MGID (inet_ntop form; the assigned one for [`Mgid::SaAssigned`]).
    pub mgid: String,
    pub mlid: u16,
    /// The JoinState in the SA's answer.
    pub join_state: u8,
}

/// ibsim 0.10 built from upstream's source with ibsim-patches/ applied (scripts/ibsim-tree.sh,
/// cached under the target directory): the simulator of the HA pair tests.
pub fn patched_ibsim() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ibsim-tree.sh");
        let mut cmd = Command::new(&script);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (status, so, se) = run_with_timeout(cmd, Duration::from_secs(300));
        assert!(
            status.success(),
            "{} failed ({status}):\n{se}",
            script.display()
        );
        let bin = PathBuf::from(so.trim());
        assert!(bin.is_file(), "{} printed {so:?}", script.display());
        bin
    })
    .clone()
}

/// The umad2sim shim of the same build as [`patched_ibsim`], beside it: it times out a request
/// that no response answers, as the kernel's MAD layer does.
pub fn patched_umad2sim() -> PathBuf {
    patched_ibsim().with_file_name("libumad2sim.so")
}

/// The SA PathRecord client `compare --in-opensm` ships (tools/sapaths.c), built like
/// [`mcjoin_bin`].
pub fn sapaths_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_c_client("sapaths", "tools/sapaths.c"))
        .clone()
}

/// The `mcjoin` client (tests/tools/mcjoin.c), compiled with gcc once per test process into
/// the cargo target directory (`target/<profile>/mcjoin`, written atomically, so test binaries
/// running at once do not trip over each other).
pub fn mcjoin_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_tool("mcjoin")).clone()
}

/// The `mpquery` MultiPathRecord client (tests/tools/mpquery.c), built like [`mcjoin_bin`].
pub fn mpquery_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_tool("mpquery")).clone()
}

/// Compiles tests/tools/NAME.c against libibumad into the target directory; returns its path.
fn build_tool(name: &str) -> PathBuf {
    build_c_client(name, &format!("tests/tools/{name}.c"))
}

/// Compiles the C client `src` (relative to the crate) against libibumad into the target
/// directory as `name`; returns its path.
fn build_c_client(name: &str, src: &str) -> PathBuf {
    let missing: Vec<&str> = [
        ("gcc", on_path("gcc")),
        (
            "libibumad-dev",
            Path::new("/usr/include/infiniband/umad.h").exists(),
        ),
    ]
    .iter()
    .filter(|x| !x.1)
    .map(|x| x.0)
    .collect();
    assert!(
        missing.is_empty(),
        "building {name} needs {}; scripts/setup.sh installs them",
        missing.join(", ")
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps dir");
    let out_dir = deps.parent().unwrap_or(deps);
    let out = out_dir.join(name);
    let tmp = out_dir.join(format!("{name}.{}.tmp", std::process::id()));
    let mut cmd = Command::new("gcc");
    cmd.args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-libumad")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, so, se) = run_with_timeout(cmd, Duration::from_secs(120));
    assert!(
        status.success(),
        "gcc {name}.c failed ({status}):\n{so}\n{se}"
    );
    fs::rename(&tmp, &out).unwrap_or_else(|e| panic!("move {name} into place: {e}"));
    out
}

/// The ibsim node name of node `node` of `f` (what `SIM_HOST` takes).
pub fn sim_host(f: &Fabric, node: u32) -> String {
    let n = &f.nodes()[node as usize];
    dfsssp_rs::io::ibsim::node_id(n.kind, n.guid)
}

impl Sim {
    /// Runs `mcjoin` as the CA `host` (its ibsim node name, see [`sim_host`]) with `joins`, in
    /// order, against the running SM. Returns exit status, stdout and stderr.
    pub fn mcjoin_raw(
        &self,
        host: &str,
        joins: &[(Mgid, JoinState)],
    ) -> (ExitStatus, String, String) {
        let mut cmd = self.client(mcjoin_bin());
        cmd.args(["-t", "3000", "-r", "4"]);
        for (mgid, state) in joins {
            match (mgid, state) {
                (Mgid::IpoibBroadcast, JoinState::Full) => {
                    cmd.arg("-b");
                }
                (Mgid::SaAssigned, JoinState::Full) => {
                    cmd.args(["-f", "0"]);
                }
                (Mgid::Gid(g), JoinState::Full) => {
                    cmd.args(["-f", g]);
                }
                (Mgid::Gid(g), JoinState::SendOnly) => {
                    cmd.args(["-s", g]);
                }
                (Mgid::Gid(g), JoinState::Leave) => {
                    cmd.args(["-l", g]);
                }
                (m, s) => panic!("mcjoin cannot join {m:?} as {s:?}"),
            }
        }
        cmd.env("SIM_HOST", host);
        run_with_timeout(cmd, Duration::from_secs(120))
    }

    /// [`Sim::mcjoin_raw`] that must succeed: one [`Joined`] per join, in order.
    pub fn mcjoin(&self, host: &str, joins: &[(Mgid, JoinState)]) -> Vec<Joined> {
        let (status, out, err) = self.mcjoin_raw(host, joins);
        assert!(
            status.success(),
            "mcjoin as {host} ({joins:?}) failed ({status}):\n{err}{out}"
        );
        let joined: Vec<Joined> = out
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let parsed = match w[..] {
                    [mgid, "mlid", mlid, "join" | "leave", state] => Some(Joined {
                        mgid: mgid.to_string(),
                        mlid: mlid
                            .strip_prefix("0x")
                            .and_then(|h| u16::from_str_radix(h, 16).ok())
                            .unwrap_or(0),
                        join_state: state.parse().unwrap_or(0),
                    }),
                    _ => None,
                };
                parsed.unwrap_or_else(|| panic!("mcjoin as {host}: unexpected line {l:?}"))
            })
            .collect();
        assert_eq!(
            joined.len(),
            joins.len(),
            "mcjoin as {host}: one line per join expected:\n{out}"
        );
        joined
    }

    /// Runs the joins of every CA in `plan` (ibsim node name, joins), one CA after the other
    /// (ibsim serves a few clients at once; one at a time keeps it predictable). Returns each
    /// CA's answers, in the plan's order.
    pub fn mcjoin_all(&self, plan: &[(String, Vec<(Mgid, JoinState)>)]) -> Vec<Vec<Joined>> {
        plan.iter()
            .map(|(host, joins)| {
                if joins.is_empty() {
                    Vec::new()
                } else {
                    self.mcjoin(host, joins)
                }
            })
            .collect()
    }

    /// Waits until `file` in the simulator's directory satisfies `ready` and then stays the
    /// same for `quiet` (OpenSM rewrites opensm.mcfdbs after every multicast update). Returns
    /// its text.
    pub fn wait_file_settled(
        &self,
        file: &str,
        ready: impl Fn(&str) -> bool,
        quiet: Duration,
        limit: Duration,
    ) -> String {
        let t = Instant::now();
        let mut last = String::new();
        let mut since = Instant::now();
        loop {
            let now = self.read(file);
            if now != last {
                last = now;
                since = Instant::now();
            } else if ready(&last) && since.elapsed() >= quiet {
                return last;
            }
            assert!(
                t.elapsed() < limit,
                "{file} did not settle within {limit:?}; last text:\n{}",
                last.chars().take(4000).collect::<String>()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var_os("DFSSSP_RS_KEEP_E2E").is_some() {
            if let Some(d) = self.dir.take() {
                eprintln!("kept {}", d.keep().display());
            }
        }
    }
}

/// An OpenSM running in the background (see [`Sim::start_opensm`]). Killed when dropped.
pub struct RunningSm {
    child: Child,
    log: PathBuf,
}

impl RunningSm {
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many log lines contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.log().lines().filter(|l| l.contains(needle)).count()
    }

    /// Waits until at least `n` log lines contain `needle`.
    pub fn wait_count(&self, needle: &str, n: usize, limit: Duration) {
        let t = Instant::now();
        while self.count(needle) < n {
            assert!(
                t.elapsed() < limit,
                "opensm did not log {needle:?} {n} times within {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The opensm process's resident set size, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("opensm's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    /// Waits until the log contains `needle`.
    pub fn wait_for(&self, needle: &str, limit: Duration) {
        let t = Instant::now();
        while !self.log().contains(needle) {
            assert!(
                t.elapsed() < limit,
                "opensm did not log {needle:?} within {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for RunningSm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command to completion, killing it after `limit`. Returns status, stdout, stderr.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> (ExitStatus, String, String) {
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    // Drain the pipes in threads so a chatty child never blocks on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let to = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = so.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let te = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = se.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let st = child.wait().expect("wait");
            panic!(
                "{cmd:?} timed out after {limit:?} ({st}):\n{}\n{}",
                to.join().unwrap(),
                te.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, to.join().unwrap(), te.join().unwrap())
}

/// How to run OpenSM.
#[derive(Clone, Debug)]
pub struct OpenSm {
    /// `routing_engine` value, e.g. "sssp-rs" or "dfsssp-rs,minhop".
    pub engine: String,
    pub lmc: u8,
    pub qos: bool,
    /// `-D` flags: 0x47 = error, info, verbose, routing (dump files).
    pub log_flags: u32,
    /// Extra environment for opensm (and so for the plug-in).
    pub env: Vec<(String, String)>,
    /// Extra opensm.conf lines.
    pub extra_conf: Vec<String>,
    pub timeout: Duration,
    /// The OpenSM built from source to run (and the plug-in built against it); `None`: the
    /// stock /usr/sbin/opensm with the plug-in of this test build.
    pub tree: Option<OpenSmTree>,
    /// Whether osm.conf names the plug-in (`event_plugin_name dfsssp_rs`); without it only
    /// `routing_engine` does (the one-line configuration of opensm-patches/0001).
    pub event_plugin_line: bool,
}

impl OpenSm {
    pub fn new(engine: &str) -> Self {
        OpenSm {
            engine: engine.to_string(),
            lmc: 0,
            qos: false,
            log_flags: 0x47,
            env: Vec::new(),
            extra_conf: Vec::new(),
            timeout: Duration::from_secs(300),
            tree: None,
            event_plugin_line: true,
        }
    }
    pub fn tree(mut self, tree: &OpenSmTree) -> Self {
        self.tree = Some(tree.clone());
        self
    }
    /// Leaves `event_plugin_name` out of osm.conf.
    pub fn without_event_plugin_line(mut self) -> Self {
        self.event_plugin_line = false;
        self
    }
    pub fn lmc(mut self, lmc: u8) -> Self {
        self.lmc = lmc;
        self
    }
    pub fn qos(mut self, on: bool) -> Self {
        self.qos = on;
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }
    pub fn conf(mut self, line: &str) -> Self {
        self.extra_conf.push(line.to_string());
        self
    }
}

/// An OpenSM built from source into a private prefix by scripts/opensm-tree.sh: `sbin/opensm`,
/// its libraries in `lib/`, and `lib/libdfsssp_rs.so` built against its headers.
#[derive(Clone, Debug)]
pub struct OpenSmTree {
    /// The environment variable that named it, e.g. `DFSSSP_RS_OPENSM_3_3_24`.
    pub var: String,
    pub prefix: PathBuf,
}

impl OpenSmTree {
    /// The tree named by the environment variable `var`, which must name a built tree: the
    /// tests that need one are `#[ignore]`d unless run with `--include-ignored`, as
    /// scripts/test.sh does once it has built the trees; an unset variable then fails the test.
    pub fn from_env(var: &str) -> OpenSmTree {
        let Some(prefix) = std::env::var_os(var) else {
            panic!(
                "{var} is not set; it names an OpenSM tree built by scripts/opensm-tree.sh \
                 (scripts/test.sh builds the trees and sets it)"
            );
        };
        let t = OpenSmTree {
            var: var.to_string(),
            prefix: PathBuf::from(prefix),
        };
        for f in [t.opensm(), t.plugin()] {
            assert!(
                f.is_file(),
                "{var}={}: {} is missing; build the tree with scripts/opensm-tree.sh",
                t.prefix.display(),
                f.display()
            );
        }
        t
    }
    pub fn opensm(&self) -> PathBuf {
        self.prefix.join("sbin/opensm")
    }
    pub fn lib_dir(&self) -> PathBuf {
        self.prefix.join("lib")
    }
    pub fn plugin(&self) -> PathBuf {
        self.lib_dir().join("libdfsssp_rs.so")
    }
    /// OSM_VERSION of the tree's headers, e.g. "OpenSM 3.3.24".
    pub fn version(&self) -> String {
        let h = self.prefix.join("include/infiniband/opensm/osm_version.h");
        let text = fs::read_to_string(&h).unwrap_or_else(|e| panic!("{}: {e}", h.display()));
        text.lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("#define OSM_VERSION")?
                    .trim()
                    .strip_prefix('"')?
                    .strip_suffix('"')
                    .map(str::to_string)
            })
            .unwrap_or_else(|| panic!("no OSM_VERSION in {}", h.display()))
    }
}

/// The outcome of one `opensm --once`.
pub struct OsmRun {
    pub dir: PathBuf,
    pub log: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl OsmRun {
    pub fn read(&self, file: &str) -> String {
        fs::read_to_string(self.dir.join(file))
            .unwrap_or_else(|e| panic!("read {file}: {e}\n{}", self.summary()))
    }

    /// Log lines (without OpenSM's timestamp prefix) containing `needle`.
    pub fn log_lines(&self, needle: &str) -> Vec<&str> {
        self.log
            .lines()
            .filter(|l| l.contains(needle))
            .map(strip_prefix)
            .collect()
    }

    /// ERROR-level lines (OpenSM tags them 0x01).
    pub fn errors(&self) -> Vec<&str> {
        self.log
            .lines()
            .filter(|l| l.contains(" 0x01 -> "))
            .map(strip_prefix)
            .collect()
    }

    /// The engine OpenSM reports in "<engine> tables configured on all switches".
    pub fn configured_by(&self) -> Option<&str> {
        self.log.lines().rev().find_map(|l| {
            let l = strip_prefix(l);
            l.strip_prefix("osm_ucast_mgr_process: ")?
                .strip_suffix(" tables configured on all switches")
        })
    }

    pub fn assert_configured_by(&self, engine: &str) {
        assert!(self.status.success(), "opensm failed: {}", self.summary());
        assert_eq!(self.configured_by(), Some(engine), "{}", self.summary());
        assert!(
            self.log.contains("SUBNET UP"),
            "subnet not up: {}",
            self.summary()
        );
    }

    /// Seconds from "building routing with '<engine>'" to the "tables configured" line (needs
    /// log flag 0x04): the routing phase.
    pub fn routing_phase(&self) -> Option<f64> {
        let start = self
            .log
            .lines()
            .find(|l| l.contains("building routing with"))?;
        let end = self
            .log
            .lines()
            .find(|l| l.contains("tables configured on all switches"))?;
        Some(log_time(end)? - log_time(start)?)
    }

    /// A readable digest for assertion messages: status, errors, our own lines, stderr.
    pub fn summary(&self) -> String {
        let ours: Vec<&str> = self
            .log
            .lines()
            .filter(|l| {
                l.contains("sssp-rs") || l.contains(" 0x01 -> ") || l.contains("tables configured")
            })
            .map(strip_prefix)
            .collect();
        format!(
            "opensm {} in {:.1} s, dir {}\n--- log (ours, errors) ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.elapsed.as_secs_f64(),
            self.dir.display(),
            ours.join("\n"),
            self.stderr.chars().take(4000).collect::<String>()
        )
    }

    /// The LFTs OpenSM holds after routing, from opensm-lfts.dump: switch GUID -> LID -> port.
    pub fn lfts(&self) -> BTreeMap<u64, BTreeMap<u16, u8>> {
        parse_lfts_dump(&self.read("opensm-lfts.dump"))
    }

    /// OpenSM's LID matrix after routing, from opensm-lid-matrix.dump: switch GUID -> LID ->
    /// hop counts (entry 0 the least, then one per port).
    pub fn lid_matrix(&self) -> BTreeMap<u64, BTreeMap<u16, Vec<u8>>> {
        parse_lid_matrix_dump(&self.read("opensm-lid-matrix.dump"))
    }

    /// Switch node GUID -> its LID, from opensm-lfts.dump headers.
    pub fn switch_lids(&self) -> BTreeMap<u64, u16> {
        let mut out = BTreeMap::new();
        for l in self.read("opensm-lfts.dump").lines() {
            if let Some((lid, guid)) = parse_lfts_header(l) {
                out.insert(guid, lid);
            }
        }
        out
    }

    /// Runs ibdmchk over OpenSM's dumps, optionally with our path-SL dump (`-c`) and OpenSM's
    /// SL-to-VL dump (`-d`).
    pub fn ibdmchk(&self, path_sl: bool, sl2vl: bool, lmc: u8) -> IbdmReport {
        ibdmchk_in(&self.dir, path_sl, sl2vl, lmc)
    }
}

/// [`OsmRun::ibdmchk`] over the dumps in `dir` (of a running OpenSM too).
pub fn ibdmchk_in(dir: &Path, path_sl: bool, sl2vl: bool, lmc: u8) -> IbdmReport {
    ibdmchk_with(dir, path_sl, sl2vl, lmc, &[])
}

/// [`ibdmchk_in`] with `-M`: the multicast forwarding tables join the credit-loop analysis.
pub fn ibdmchk_mcast(dir: &Path, path_sl: bool, sl2vl: bool) -> IbdmReport {
    ibdmchk_with(dir, path_sl, sl2vl, 0, &["-M"])
}

fn ibdmchk_with(dir: &Path, path_sl: bool, sl2vl: bool, lmc: u8, extra: &[&str]) -> IbdmReport {
    {
        let mut cmd = Command::new("ibdmchk");
        cmd.args(extra);
        cmd.args([
            "-s",
            "opensm-subnet.lst",
            "-f",
            "opensm.fdbs",
            "-m",
            "opensm.mcfdbs",
        ]);
        if lmc > 0 {
            cmd.args(["-l", &lmc.to_string()]);
        }
        if path_sl {
            cmd.args(["-c", "opensm-path-sl.dump"]);
        }
        if sl2vl {
            cmd.args(["-d", "opensm-sl2vl.dump"]);
        }
        cmd.current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // ibdmchk may segfault while exiting, after printing its report: judge the report.
        let (status, out, err) = run_with_timeout(cmd, Duration::from_secs(1800));
        IbdmReport::parse(&format!("{out}\n{err}"), status)
    }
}

/// What ibdmchk reported.
#[derive(Clone, Debug)]
pub struct IbdmReport {
    pub text: String,
    pub status: ExitStatus,
    /// CA-to-CA paths checked.
    pub paths: Option<u64>,
    /// Paths ibdmchk could not follow to their destination.
    pub missing: u64,
    /// `Some(true)` if it found credit loops, `Some(false)` if it found none.
    pub credit_loops: Option<bool>,
    /// Multicast groups it scanned (`-m`): MLID -> (switches, CAs) in the group's tree.
    pub mcast_groups: BTreeMap<u16, (u32, u32)>,
}

impl IbdmReport {
    pub fn parse(text: &str, status: ExitStatus) -> Self {
        let mut r = IbdmReport {
            text: text.to_string(),
            status,
            paths: None,
            missing: 0,
            credit_loops: None,
            mcast_groups: BTreeMap::new(),
        };
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("-I- Multicast Group:0x") {
                // "-I- Multicast Group:0xC000 has:2 switches and:4 HCAs"
                let mut w = rest.split_whitespace();
                let mlid = w.next().and_then(|h| u16::from_str_radix(h, 16).ok());
                let num = |t: Option<&str>, tag: &str| t?.strip_prefix(tag)?.parse::<u32>().ok();
                let sw = num(w.next(), "has:");
                let ca = num(w.nth(1), "and:");
                if let (Some(m), Some(sw), Some(ca)) = (mlid, sw, ca) {
                    r.mcast_groups.insert(m, (sw, ca));
                }
            } else if let Some(rest) = l.strip_prefix("-I- Scanned:") {
                r.paths = rest.split_whitespace().next().and_then(|n| n.parse().ok());
            } else if let Some(rest) = l.strip_prefix("-E- Found ") {
                // "-E- Found 2 missing paths out of:12 paths"
                let mut w = rest.split_whitespace();
                if let (Some(n), Some("missing")) = (w.next(), w.next()) {
                    r.missing = n.parse().unwrap_or(u64::MAX);
                    r.paths = rest
                        .split("out of:")
                        .nth(1)
                        .and_then(|s| s.split_whitespace().next()?.parse().ok());
                }
            } else if l.contains("no credit loops found") {
                r.credit_loops = Some(false);
            } else if l.contains("credit loops in routing")
                || l.contains("Potential Credit Loop")
                || l.contains("Found credit loop")
            {
                r.credit_loops = Some(true);
            }
        }
        r
    }

    /// Every CA-to-CA path was followed to its destination, and `expected` paths were checked.
    pub fn assert_connected(&self, expected: u64) {
        assert_eq!(
            self.missing,
            0,
            "ibdmchk found missing paths:\n{}",
            self.errors()
        );
        assert_eq!(
            self.paths,
            Some(expected),
            "ibdmchk checked another number of paths:\n{}",
            self.errors()
        );
    }

    /// The error and warning lines of the report.
    pub fn errors(&self) -> String {
        let lines: Vec<&str> = self
            .text
            .lines()
            .filter(|l| l.starts_with("-E-") || l.starts_with("-W-"))
            .take(40)
            .collect();
        if lines.is_empty() {
            self.text.chars().take(3000).collect()
        } else {
            lines.join("\n")
        }
    }
}

/// Tables read from a dump (switch GUID -> LID -> port) as an [`Lft`] over `g`'s switch ids.
/// LIDs above the fabric's highest LID are dropped; missing entries are NO_PATH.
pub fn lft_from_dump(f: &Fabric, g: &SwitchGraph, dump: &BTreeMap<u64, BTreeMap<u16, u8>>) -> Lft {
    let mut lft = Lft::new(g.num_switches(), g.max_lid());
    for s in 0..g.num_switches() as u32 {
        let guid = f.nodes()[g.switch_node()[s as usize] as usize].guid;
        for (&lid, &port) in dump.get(&guid).into_iter().flatten() {
            if lid <= g.max_lid() {
                lft.set(s, lid, port);
            }
        }
    }
    lft
}

/// Walks `lft` from every switch to every LID attached to a switch: all must arrive. Returns the
/// number of routes walked. Independent of how the tables were made.
pub fn assert_all_routes_arrive(g: &SwitchGraph, lft: &Lft) -> usize {
    let mut n = 0;
    for d in g
        .dests()
        .iter()
        .filter(|d| d.switch != dfsssp_rs::graph::NO_SWITCH)
    {
        for s in 0..g.num_switches() as u32 {
            match walk(g, lft, s, d.lid, |_| {}) {
                Ok(_) => n += 1,
                end => panic!("route from switch {s} to LID {} ends with {end:?}", d.lid),
            }
        }
    }
    n
}

/// "Nov 22 02:30:55 580780 [17E886C0] 0x04 -> msg" -> "msg".
pub fn strip_prefix(l: &str) -> &str {
    l.split_once(" -> ").map_or(l, |x| x.1)
}

/// Seconds within the day of an OpenSM log line ("Mon DD HH:MM:SS usec ...").
fn log_time(l: &str) -> Option<f64> {
    let mut w = l.split_whitespace();
    let (_, _, hms, usec) = (w.next()?, w.next()?, w.next()?, w.next()?);
    let mut p = hms.split(':').map(|x| x.parse::<f64>().ok());
    let (h, m, s) = (p.next()??, p.next()??, p.next()??);
    Some(h * 3600.0 + m * 60.0 + s + usec.parse::<f64>().ok()? / 1e6)
}

/// "Unicast lids [0-6] of switch Lid 1 guid 0x0000000000200000 ('S1'):" -> (1, 0x200000).
fn parse_lfts_header(l: &str) -> Option<(u16, u64)> {
    let rest = l.strip_prefix("Unicast lids [")?;
    let lid = rest
        .split("switch Lid ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let guid = rest.split(" guid 0x").nth(1)?.split_whitespace().next()?;
    Some((lid, u64::from_str_radix(guid, 16).ok()?))
}

/// "0x0002 001 ..." lines (OpenSM's lfts dump and ibroute): LID -> port.
fn parse_lft_lines(text: &str) -> BTreeMap<u16, u8> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let mut w = l.split_whitespace();
        let (Some(lid), Some(port)) = (w.next(), w.next()) else {
            continue;
        };
        let Some(lid) = lid
            .strip_prefix("0x")
            .and_then(|h| u16::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        let Ok(port) = port.parse::<u8>() else {
            continue;
        };
        out.insert(lid, port);
    }
    out
}

/// opensm-lid-matrix.dump ("Switch: guid 0x..." then "0x0002: 02 ff ... # portguid 0x...")
/// : switch GUID -> LID -> hop counts.
pub fn parse_lid_matrix_dump(text: &str) -> BTreeMap<u64, BTreeMap<u16, Vec<u8>>> {
    let mut out: BTreeMap<u64, BTreeMap<u16, Vec<u8>>> = BTreeMap::new();
    let mut cur = None;
    for l in text.lines() {
        if let Some(g) = l.strip_prefix("Switch: guid ") {
            let g = u64::from_str_radix(g.trim().trim_start_matches("0x"), 16)
                .unwrap_or_else(|e| panic!("{l:?}: {e}"));
            cur = Some(g);
            out.entry(g).or_default();
            continue;
        }
        let (Some(g), Some((lid, rest))) = (cur, l.split_once(':')) else {
            continue;
        };
        let Ok(lid) = u16::from_str_radix(lid.trim().trim_start_matches("0x"), 16) else {
            continue;
        };
        let hops = rest
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .map(|h| u8::from_str_radix(h, 16).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect();
        out.entry(g).or_default().insert(lid, hops);
    }
    out
}

/// opensm-lfts.dump: switch GUID -> LID -> port.
pub fn parse_lfts_dump(text: &str) -> BTreeMap<u64, BTreeMap<u16, u8>> {
    let mut out: BTreeMap<u64, BTreeMap<u16, u8>> = BTreeMap::new();
    let mut cur: Option<u64> = None;
    let mut block = String::new();
    for l in text.lines().chain(std::iter::once("Unicast lids [end")) {
        if l.starts_with("Unicast lids [") {
            if let Some(g) = cur.take() {
                out.insert(g, parse_lft_lines(&block));
            }
            block.clear();
            cur = parse_lfts_header(l).map(|x| x.1);
        } else {
            block.push_str(l);
            block.push('\n');
        }
    }
    out
}

/// The port GUIDs of the fabric's CA ports, in endpoint order (what OpenSM's cn_guid_file and
/// io_guid_file list).
pub fn ca_port_guids(f: &Fabric) -> Vec<u64> {
    f.endpoints()
        .iter()
        .filter(|e| f.nodes()[e.node as usize].kind == dfsssp_rs::fabric::NodeKind::Ca)
        .map(|e| e.port_guid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_opensm_and_ibdmchk_output() {
        let dump = "Unicast lids [0-3] of switch Lid 1 guid 0x0000000000200000 ('S1'):\n\
                    0x0001 000 # Switch portguid 0x0000000000200000: 'S1'\n\
                    0x0003 002 # Channel Adapter portguid 0x0000000000100001: 'H1'\n\
                    3 lids dumped\n\
                    Unicast lids [0-3] of switch Lid 2 guid 0x0000000000200001 ('S2'):\n\
                    0x0002 000 # x\n";
        let l = parse_lfts_dump(dump);
        assert_eq!(
            l[&0x200000]
                .iter()
                .map(|(a, b)| (*a, *b))
                .collect::<Vec<_>>(),
            vec![(1, 0), (3, 2)]
        );
        assert_eq!(l[&0x200001][&2], 0);
        let r = IbdmReport::parse(
            "-I- Multicast Group:0xC000 has:2 switches and:4 HCAs\n\
             -I- Multicast Group:0xC00A has:12 switches and:31 HCAs\n",
            std::process::ExitStatus::default(),
        );
        assert_eq!(r.mcast_groups[&0xC000], (2, 4));
        assert_eq!(r.mcast_groups[&0xC00A], (12, 31));
        assert_eq!(
            log_time("Nov 22 02:30:55 580780 [17E886C0] 0x04 -> x"),
            Some(2.0 * 3600.0 + 30.0 * 60.0 + 55.580780)
        );
    }
}
