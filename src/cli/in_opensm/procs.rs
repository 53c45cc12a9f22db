//! The real programs: `ibsim` on the fabric and the stock `opensm` under the umad2sim shim
//! (until the subnet is up, as `--once` waits, and while its SA is read), one pair per engine, each in its own directory (umad2sim writes `sys-PID/` into the
//! working directory) with its own `IBSIM_SOCKNAME`. Every process is a [`Guarded`] child, the
//! leader of a process group of its own (opensm runs under `/usr/bin/time`, in the same group):
//! stopped when the guard drops, on errors too, by signalling the group (SIGTERM, SIGKILL after a
//! grace period) while its leader is not yet reaped, so the group's ID cannot have been reused by
//! another process; and started under `setpriv --pdeathsig KILL`, so that the kernel kills it if
//! this command dies without unwinding (Ctrl-C, SIGKILL).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process, leader of its own process group, whose group is stopped when dropped.
pub struct Guarded {
    child: Child,
    grace: Duration,
    name: &'static str,
}

impl Guarded {
    fn spawn(mut cmd: Command, name: &'static str, grace: Duration) -> Result<Self, String> {
        use std::os::unix::process::CommandExt as _;
        let child = cmd
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Guarded { child, grace, name })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Exited already (reaped)?
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM to its process group, SIGKILL to the group after the grace period (whatever of
    /// it is left: opensm under a `time` that already exited), then the leader reaped. Until
    /// then the leader is at most a zombie, so its PID, the group's ID, is not free for reuse.
    pub fn stop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let pgid = self.pid();
        signal_group(pgid, "TERM");
        let t = Instant::now();
        while t.elapsed() < self.grace && !ended_unreaped(pgid) {
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(pgid, "KILL");
        let _ = self.child.wait();
        let _ = self.name;
    }
}

/// Sends `sig` to the process group `pgid` with kill(1) (std signals single children only; an
/// error, such as a group already gone, changes nothing).
fn signal_group(pgid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args(["-s", sig, "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Whether our child `pid`, not yet reaped, has ended: a zombie (its /proc entry stays until
/// it is reaped, so the PID is still its own).
fn ended_unreaped(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        // "PID (comm) STATE ...": comm may hold spaces, so read after its last ')'
        s.rsplit_once(") ").is_none_or(|(_, r)| r.starts_with('Z'))
    })
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `setpriv --pdeathsig KILL PROGRAM`: the child dies with this process, however it ends.
fn guarded_command(program: &str) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--pdeathsig", "KILL", program]);
    c
}

/// Starts ibsim on `net` in `dir` and waits until it is ready.
pub fn start_ibsim(dir: &Path, net: &Path, caps: &[String], sock: &str) -> Result<Guarded, String> {
    let out = fs::File::create(dir.join("ibsim.out")).map_err(|e| format!("ibsim.out: {e}"))?;
    let err = out.try_clone().map_err(|e| format!("ibsim.out: {e}"))?;
    let mut cmd = guarded_command("ibsim");
    cmd.arg("-s")
        .arg("-n")
        .args(caps)
        .arg(net)
        .env("IBSIM_SOCKNAME", sock)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let mut g = Guarded::spawn(cmd, "ibsim", Duration::from_secs(2))?;
    let t = Instant::now();
    loop {
        let text = fs::read_to_string(dir.join("ibsim.out")).unwrap_or_default();
        if text.contains("Network simulator ready") {
            return Ok(g);
        }
        if g.exited().is_some() {
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            return Err(format!(
                "ibsim exited before it was ready: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ));
        }
        if t.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "ibsim not ready after 120 s (see {})",
                dir.join("ibsim.out").display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How one opensm run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// opensm exited by itself before the subnet came up.
    Exited(Option<i32>),
    /// The subnet came up ("SUBNET UP" in OpenSM's log, what `--once` waits for); opensm was
    /// stopped after the work done while it was up.
    Up,
    /// Still running at the time limit: stopped.
    TimedOut,
}

/// One opensm run.
pub struct OsmRun {
    pub ended: Ended,
    /// Peak RSS (/usr/bin/time's %M), KiB.
    pub peak_rss_kib: Option<u64>,
    /// Until the subnet came up (or opensm ended, or the limit).
    pub wall: Duration,
}

pub struct OsmSetup<'a> {
    pub dir: &'a Path,
    pub engine: &'a str,
    pub qos: bool,
    pub sock: &'a str,
    pub plugin_dir: Option<&'a Path>,
    /// Lines for the config file beyond the engine, dump directory and plug-in.
    pub extra_conf: &'a [String],
    pub limit: Duration,
}

/// Watches a growing log file for a line, reading only what was added since the last look.
struct LogWatch {
    path: PathBuf,
    offset: u64,
    /// The end of what was read, kept so a line split between two reads is still found.
    tail: Vec<u8>,
}

impl LogWatch {
    fn new(path: PathBuf) -> Self {
        LogWatch {
            path,
            offset: 0,
            tail: Vec::new(),
        }
    }

    /// Which of `needles` have been written since the last look (a needle split between two
    /// looks is still found).
    fn seen_any<const N: usize>(&mut self, needles: [&[u8]; N]) -> [bool; N] {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut found = [false; N];
        let Ok(mut f) = fs::File::open(&self.path) else {
            return found;
        };
        let mut buf = std::mem::take(&mut self.tail);
        let kept = buf.len();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            self.tail = buf;
            return found;
        }
        self.offset += (buf.len() - kept) as u64;
        for (hit, needle) in found.iter_mut().zip(needles) {
            *hit = buf.windows(needle.len()).any(|w| w == needle);
        }
        let longest = needles.iter().map(|n| n.len()).max().unwrap_or(0);
        self.tail = buf.split_off(buf.len().saturating_sub(longest));
        found
    }
}

/// Runs opensm in `s.dir` until the subnet is up, as `opensm --once` would (`tick` is called
/// meanwhile, for progress), then `while_up` (reading the SA), then stops it. `while_up` gets
/// the time left of the limit; its result comes back when the subnet came up.
pub fn run_opensm<T>(
    s: &OsmSetup,
    mut tick: impl FnMut(Duration),
    while_up: impl FnOnce(Duration) -> T,
) -> Result<(OsmRun, Option<T>), String> {
    let dir = s.dir;
    // transaction_timeout: on a loaded machine ibsim may answer later than OpenSM's default
    // 200 ms, and a sweep that timed out never brings the subnet up. force_log_flush: "SUBNET
    // UP" is seen in the log as soon as it is written. max_wire_smps: ibsim answers each SMP
    // over a socket; 16 in flight instead of OpenSM's 4 took a 4,096-CA fat tree's minhop run
    // from 49 s to 41 s (most of the rest is OpenSM writing its dumps), for every engine alike
    // (the routing does not depend on it).
    let mut conf = format!(
        "event_plugin_name dfsssp_rs\nrouting_engine {}\ndump_files_dir {}\n\
         transaction_timeout 1000\nforce_log_flush TRUE\nmax_wire_smps 16\n",
        s.engine,
        dir.display()
    );
    for l in s.extra_conf {
        conf.push_str(l);
        conf.push('\n');
    }
    let conf_path = dir.join("osm.conf");
    fs::write(&conf_path, conf).map_err(|e| format!("{}: {e}", conf_path.display()))?;
    let out = fs::File::create(dir.join("opensm.out")).map_err(|e| format!("opensm.out: {e}"))?;
    let err = out.try_clone().map_err(|e| format!("opensm.out: {e}"))?;
    // /usr/bin/time measures opensm's peak RSS over its whole life (a short run ends between
    // two samples of /proc); both die with this command (setpriv on each)
    let rss_path = dir.join("rss_kb");
    let mut cmd = guarded_command("/usr/bin/time");
    cmd.args(["-f", "%M", "-o"])
        .arg(&rss_path)
        .args(["setpriv", "--pdeathsig", "KILL", "opensm"])
        .arg("-F")
        .arg(&conf_path)
        .arg("-f")
        .arg(dir.join("osm.log"))
        .args(["-D", "0x47", "-d", "0"]);
    if s.qos {
        cmd.arg("-Q");
    }
    cmd.env("OSM_TMP_DIR", dir)
        .env("OSM_CACHE_DIR", dir)
        .env("IBSIM_SOCKNAME", s.sock)
        .env("LD_PRELOAD", dfsssp_rs::io::ibsim::umad2sim_path())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    if let Some(p) = s.plugin_dir {
        let mut path = p.as_os_str().to_owned();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
            path.push(":");
            path.push(old);
        }
        cmd.env("LD_LIBRARY_PATH", path);
    }
    let mut log = LogWatch::new(dir.join("osm.log"));
    let t = Instant::now();
    let mut g = Guarded::spawn(cmd, "opensm", Duration::from_secs(5))?;
    // The limit is the routing phase's ("building routing with" until "tables configured"):
    // discovery, the upload and OpenSM's dumps take what ibsim and the fabric's size make
    // them (a 4,096-CA fat tree: some 45 s, for every engine alike), within a wider bound.
    let (mut routing_since, mut routed) = (None, false);
    let ended = loop {
        if let Some(st) = g.exited() {
            break Ended::Exited(st.code());
        }
        let [begun, configured, up] =
            log.seen_any([b"building routing with", b"tables configured", b"SUBNET UP"]);
        if begun && routing_since.is_none() {
            routing_since = Some(Instant::now());
        }
        routed |= configured;
        if up {
            break Ended::Up;
        }
        let routing_too_long =
            !routed && routing_since.is_some_and(|r: Instant| r.elapsed() >= s.limit);
        if routing_too_long || t.elapsed() >= whole_run_bound(s.limit) {
            break Ended::TimedOut;
        }
        tick(t.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    };
    let wall = t.elapsed();
    let up = (ended == Ended::Up).then(|| while_up(s.limit.saturating_sub(wall)));
    stop_under_time(&mut g);
    // time's last line: "Command terminated by signal N" may come first
    let peak = fs::read_to_string(&rss_path)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()));
    Ok((
        OsmRun {
            ended,
            peak_rss_kib: peak,
            wall,
        },
        up,
    ))
}

/// How long one opensm run may take in all: its routing phase's limit, and time for discovery,
/// the upload and the dumps (in ibsim several times the routing of the fast engines).
pub fn whole_run_bound(limit: Duration) -> Duration {
    (limit * 4).max(limit + Duration::from_secs(300))
}

/// Stops the program `g` runs under /usr/bin/time (its one child) by its PID, SIGTERM and
/// SIGKILL after the grace period, so that time lives to write the peak RSS; then the group.
fn stop_under_time(g: &mut Guarded) {
    if g.exited().is_some() {
        return;
    }
    let pid = g.pid();
    let children =
        fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    if let Some(child) = children.split_whitespace().next() {
        let signal = |sig: &str| {
            let _ = Command::new("kill")
                .args(["-s", sig, "--", child])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        signal("TERM");
        let t = Instant::now();
        while t.elapsed() < g.grace && g.exited().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if g.exited().is_none() {
            signal("KILL");
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(2) && g.exited().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    g.stop();
}

/// The plug-in OpenSM should load: `libdfsssp_rs.so` next to this executable (a cargo build),
/// else none (the installed one, found by the dynamic loader).
pub fn plugin_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    dir.join("libdfsssp_rs.so")
        .is_file()
        .then(|| dir.to_path_buf())
}

/// What is missing to run OpenSM in ibsim here, with the package that brings it.
pub fn missing_tools() -> Vec<String> {
    let on_path = |t: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()))
    };
    let mut m = Vec::new();
    for (t, pkg) in [
        ("opensm", "opensm"),
        ("ibsim", "ibsim-utils"),
        ("setpriv", "util-linux"),
        ("kill", "procps"),
        ("time", "time"),
    ] {
        if !on_path(t) {
            m.push(format!("{t} (apt-get install {pkg})"));
        }
    }
    let shim = dfsssp_rs::io::ibsim::umad2sim_path();
    if !shim.is_file() {
        m.push(format!("{} (apt-get install libumad2sim0)", shim.display()));
    }
    m
}

/// A private directory (mode 0700) under the system's temporary directory, removed when
/// dropped unless kept.
pub struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl WorkDir {
    pub fn new(prefix: &str) -> Result<WorkDir, String> {
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for k in 0..100u32 {
            let path = base.join(format!("{prefix}{}-{nanos:x}-{k}", std::process::id()));
            let made = {
                use std::os::unix::fs::DirBuilderExt as _;
                fs::DirBuilder::new().mode(0o700).create(&path)
            };
            match made {
                Ok(()) => return Ok(WorkDir { path, keep: false }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        Err(format!("no free directory name under {}", base.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory in place; its path.
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Runs `program args` in `dir` within `limit`, output to `out` in that directory; `None` when
/// it was stopped at the limit (or did not start).
pub fn run_limited(
    program: &str,
    args: &[&str],
    dir: &Path,
    out: &str,
    limit: Duration,
) -> Option<Option<i32>> {
    let mut cmd = guarded_command(program);
    cmd.args(args).stdin(Stdio::null());
    run_guarded(cmd, dir, out, limit)
}

/// Runs the ibsim client `program args` (under the umad2sim shim, attached to the simulated
/// node `host` of the ibsim at `sock`) in `dir` within `limit`, its standard input from the
/// file `input`, its output to `out` in that directory; `None` when stopped at the limit.
pub fn run_sim_client(
    program: &Path,
    args: &[String],
    (sock, host): (&str, &str),
    input: &Path,
    (dir, out): (&Path, &str),
    limit: Duration,
) -> Option<Option<i32>> {
    let mut cmd = guarded_command(&program.to_string_lossy());
    cmd.args(args)
        .env("IBSIM_SOCKNAME", sock)
        .env("SIM_HOST", host)
        .env("LD_PRELOAD", dfsssp_rs::io::ibsim::umad2sim_path())
        .stdin(fs::File::open(input).ok()?);
    run_guarded(cmd, dir, out, limit)
}

/// Runs `cmd` in `dir` within `limit`, standard output and error to `out` there.
fn run_guarded(mut cmd: Command, dir: &Path, out: &str, limit: Duration) -> Option<Option<i32>> {
    let f = fs::File::create(dir.join(out)).ok()?;
    let e = f.try_clone().ok()?;
    cmd.current_dir(dir).stdout(f).stderr(e);
    let mut g = Guarded::spawn(cmd, "checker", Duration::from_secs(2)).ok()?;
    let t = Instant::now();
    loop {
        if let Some(st) = g.exited() {
            return Some(st.code());
        }
        if t.elapsed() >= limit {
            g.stop();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stopping a guard stops its whole process group: a child that ignores SIGTERM is killed
    /// after the grace period, and a grandchild it started (as `time` starts opensm) goes too.
    #[test]
    fn stop_ends_the_whole_process_group() {
        let dir = WorkDir::new("dfsssp-procs-test-").unwrap();
        let pid_file = dir.path().join("grandchild");
        let mut cmd = guarded_command("sh");
        cmd.arg("-c")
            .arg(format!(
                "trap '' TERM; sleep 60 & echo $! > {}; wait",
                pid_file.display()
            ))
            .stdin(Stdio::null());
        let mut g = Guarded::spawn(cmd, "test", Duration::from_millis(300)).unwrap();
        let t = Instant::now();
        let grandchild: u32 = loop {
            if let Some(p) = fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "no grandchild");
            std::thread::sleep(Duration::from_millis(20));
        };
        g.stop();
        assert!(g.exited().is_some(), "the guarded child is reaped");
        // The grandchild, reparented and reaped by init, disappears (or is a zombie a moment).
        let t = Instant::now();
        while !ended_unreaped(grandchild) {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "grandchild still running"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
