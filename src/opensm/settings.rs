//! The engine's settings, from OpenSM's own configuration: a `dfsssp-rs.conf` next to the
//! `opensm.conf` OpenSM read (`key value` lines, `#` comments, as opensm.conf), then OpenSM's
//! `event_plugin_options` (`key=value` items separated by commas: OpenSM keeps one word per
//! option), then the environment variables (`DFSSSP_RS_<KEY>`, overrides for a service unit).
//! Later sources win. A bad value or an unknown key never stops routing: it is reported with its
//! source (file and line, or the option) and the accepted range, and the value before it stands.
//!
//! Below them, what a routing run reads before the engine runs: the settings gathered and
//! logged, the engine configuration (lanes, the SL range), the re-route settings, and OpenSM's
//! compute and I/O node lists.

use std::path::{Path, PathBuf};

use super::log::Code;
use super::qos::SlRange;
use super::subnet::Subnet;
use super::{AdapterError, EngineCtx};
use crate::engine::{self, EngineConfig, EngineKind, McastLane};

/// The file name looked for next to OpenSM's configuration file.
pub(crate) const CONF_FILE: &str = "dfsssp-rs.conf";

/// One setting: its key, its environment variable, what it takes.
struct Key {
    name: &'static str,
    env: &'static str,
    value: Value,
}

/// What a setting takes, and so how its value is read and what a problem says.
#[derive(Clone, Copy)]
enum Value {
    /// A whole number within `min..=max`.
    Number { min: u64, max: u64 },
    /// On or off: `1`/`0`, or `TRUE`/`FALSE` as opensm.conf writes them (`true`, `on`, `off`...).
    Flag,
    /// `off`, `when-free` or `always` (or 0..=2).
    McastLane,
    /// A range `A-B` of SLs (and the VLs of the same numbers), both within `0..=max`.
    SlRange { max: u8 },
    /// An absolute path, or `none`.
    Path,
}

const KEYS: [Key; 12] = [
    Key {
        name: "max_lanes",
        env: super::ENV_MAX_LANES,
        value: Value::Number { min: 1, max: 15 },
    },
    Key {
        name: "incremental",
        env: super::ENV_INCREMENTAL,
        value: Value::Flag,
    },
    Key {
        name: "rebalance_pct",
        env: super::ENV_REBALANCE_PCT,
        value: Value::Number {
            min: 0,
            max: 100_000,
        },
    },
    Key {
        name: "mcast_lane",
        env: super::ENV_MCAST_LANE,
        value: Value::McastLane,
    },
    Key {
        name: "bisection_patterns",
        env: super::ENV_BISECTION_PATTERNS,
        value: Value::Number {
            min: 0,
            max: 100_000,
        },
    },
    Key {
        name: "seed",
        env: super::ENV_SEED,
        value: Value::Number {
            min: 0,
            max: u64::MAX,
        },
    },
    Key {
        name: "one_lane_candidate",
        env: super::ENV_ONE_LANE_CANDIDATE,
        value: Value::Flag,
    },
    Key {
        name: "dor_candidate",
        env: super::ENV_DOR_CANDIDATE,
        value: Value::Flag,
    },
    Key {
        name: "layer_sls",
        env: super::ENV_LAYER_SLS,
        value: Value::SlRange { max: 14 },
    },
    Key {
        name: "state_file",
        env: super::ENV_STATE_FILE,
        value: Value::Path,
    },
    Key {
        name: "adopt_switch_tables",
        env: super::ENV_ADOPT_SWITCH_TABLES,
        value: Value::Flag,
    },
    Key {
        name: "canonical_sls",
        env: super::ENV_CANONICAL_SLS,
        value: Value::Flag,
    },
];

/// The settings given anywhere (`None`: the engine's default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Settings {
    pub max_lanes: Option<u64>,
    pub incremental: Option<bool>,
    pub rebalance_pct: Option<u64>,
    pub mcast_lane: Option<McastLane>,
    pub bisection_patterns: Option<u64>,
    pub seed: Option<u64>,
    pub one_lane_candidate: Option<bool>,
    pub dor_candidate: Option<bool>,
    /// The SLs (and VLs of the same numbers) the layers may use, first and last; the admin's QoS
    /// policy keeps every SL outside them.
    pub layer_sls: Option<(u8, u8)>,
    /// Where the routing state is kept across restarts (`None`: OpenSM's cache directory;
    /// `Some(None)`: nowhere, `state_file none`).
    pub state_file: Option<Option<PathBuf>>,
    /// Read the switches' LFTs back when there is no routing to continue from.
    pub adopt_switch_tables: Option<bool>,
    /// Give every routing the layers a standby derives from the tables alone.
    pub canonical_sls: Option<bool>,
    /// Where each given setting came from ("dfsssp-rs.conf:3", "event_plugin_options", the
    /// environment variable), for the log.
    pub sources: Vec<(&'static str, String)>,
}

impl Settings {
    /// Where `key` was given, if it was.
    pub(crate) fn source_of(&self, key: &str) -> Option<&str> {
        self.sources
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, src)| src.as_str())
    }

    fn number_slot(&mut self, key: &str) -> Option<&mut Option<u64>> {
        Some(match key {
            "max_lanes" => &mut self.max_lanes,
            "rebalance_pct" => &mut self.rebalance_pct,
            "bisection_patterns" => &mut self.bisection_patterns,
            "seed" => &mut self.seed,
            _ => return None,
        })
    }

    fn flag_slot(&mut self, key: &str) -> Option<&mut Option<bool>> {
        Some(match key {
            "incremental" => &mut self.incremental,
            "one_lane_candidate" => &mut self.one_lane_candidate,
            "dor_candidate" => &mut self.dor_candidate,
            "adopt_switch_tables" => &mut self.adopt_switch_tables,
            "canonical_sls" => &mut self.canonical_sls,
            _ => return None,
        })
    }

    /// Sets `key` from `value` (named `source` in problems); a problem leaves it as it was.
    fn set(&mut self, key: &str, value: &str, source: &str, problems: &mut Vec<String>) {
        let Some(k) = KEYS.iter().find(|k| k.name == key) else {
            problems.push(format!(
                "{source}: unknown key {key:?} (known: {})",
                KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
            ));
            return;
        };
        let v = value.trim();
        let expected = match k.value {
            Value::Number { min, max } => {
                let n = v.parse::<u64>().ok().filter(|n| (min..=max).contains(n));
                match (n, self.number_slot(key)) {
                    (Some(n), Some(slot)) => {
                        *slot = Some(n);
                        None
                    }
                    _ => Some(format!("a number {min}..={max}")),
                }
            }
            Value::Flag => match (parse_flag(v), self.flag_slot(key)) {
                (Some(b), Some(slot)) => {
                    *slot = Some(b);
                    None
                }
                _ => Some("1 or 0 (TRUE or FALSE)".to_string()),
            },
            // By name (off, when-free, always), as the CLI takes it, or by number 0..=2.
            Value::McastLane => match v.parse::<McastLane>() {
                Ok(m) => {
                    self.mcast_lane = Some(m);
                    None
                }
                Err(_) => Some("off, when-free or always (a number 0..=2)".to_string()),
            },
            Value::SlRange { max } => match parse_sl_range(v).filter(|&(_, b)| b <= max) {
                Some(r) => {
                    self.layer_sls = Some(r);
                    None
                }
                None => Some(format!("a range A-B of SLs with 0<=A<=B<={max} (e.g. 0-3)")),
            },
            Value::Path => match v {
                "none" | "off" => {
                    self.state_file = Some(None);
                    None
                }
                p if Path::new(p).is_absolute() => {
                    self.state_file = Some(Some(PathBuf::from(p)));
                    None
                }
                _ => Some("an absolute path or none".to_string()),
            },
        };
        match expected {
            Some(what) => problems.push(format!("{source}: {key}={v:?} ignored: expected {what}")),
            None => {
                self.sources.retain(|(name, _)| *name != k.name);
                self.sources.push((k.name, source.to_string()));
            }
        }
    }
}

/// On or off as admins write it: `1`/`0`, `TRUE`/`FALSE` (opensm.conf), `yes`/`no`, `on`/`off`.
fn parse_flag(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `A-B` (or a single SL `A`) with A <= B.
fn parse_sl_range(v: &str) -> Option<(u8, u8)> {
    let (a, b) = v.split_once('-').unwrap_or((v, v));
    let (a, b) = (a.trim().parse::<u8>().ok()?, b.trim().parse::<u8>().ok()?);
    (a <= b).then_some((a, b))
}

/// OpenSM's cache directory (where it keeps `guid2lid`): `OSM_CACHE_DIR`, else its default.
pub(crate) fn cache_dir(get: impl Fn(&str) -> Option<String>) -> PathBuf {
    get("OSM_CACHE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/var/cache/opensm"), PathBuf::from)
}

/// Where the routing state is kept: the `state_file` setting, else next to `guid2lid`.
pub(crate) fn state_path(s: &Settings, get: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match &s.state_file {
        Some(p) => p.clone(),
        None => Some(cache_dir(get).join(crate::state::STATE_FILE)),
    }
}

/// Where OpenSM's configuration says `dfsssp-rs.conf` is: next to the file OpenSM read.
pub(crate) fn conf_path(opensm_conf: Option<&Path>) -> Option<PathBuf> {
    opensm_conf
        .and_then(Path::parent)
        .map(|d| d.join(CONF_FILE))
}

/// `dfsssp-rs.conf` text (`key value` per line; `#` comments), into `s`.
pub(crate) fn read_conf(text: &str, file: &str, s: &mut Settings, problems: &mut Vec<String>) {
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let source = format!("{file}:{}", i + 1);
        let mut w = line.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some(k), Some(v), None) => s.set(k, v, &source, problems),
            _ => problems.push(format!("{source}: expected `key value`, found {line:?}")),
        }
    }
}

/// OpenSM's `event_plugin_options` (`key=value,key=value`), into `s`.
pub(crate) fn read_plugin_options(opts: &str, s: &mut Settings, problems: &mut Vec<String>) {
    for item in opts.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            Some((k, v)) => s.set(k.trim(), v, "event_plugin_options", problems),
            None => problems.push(format!(
                "event_plugin_options: expected key=value, found {item:?}"
            )),
        }
    }
}

/// The environment variables (`get(name)`), into `s`: they override the files.
pub(crate) fn read_env(
    get: impl Fn(&str) -> Option<String>,
    s: &mut Settings,
    problems: &mut Vec<String>,
) {
    for k in &KEYS {
        if let Some(v) = get(k.env).filter(|v| !v.trim().is_empty()) {
            // Problems name the variable, as the admin wrote it.
            let mut p = Vec::new();
            s.set(k.name, &v, k.env, &mut p);
            problems.extend(p.into_iter().map(|m| m.replacen(k.name, k.env, 1)));
        }
    }
}

/// OpenSM's `cn_guid_file` and `io_guid_file` as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ClassLists {
    compute: Vec<u64>,
    io: Vec<u64>,
}

impl EngineCtx {
    /// Compute and I/O nodes from OpenSM's `cn_guid_file` and `io_guid_file`, into `cfg`. A file
    /// that cannot be read is logged (`ERR DF08`, naming the file and line) and routing goes on
    /// without it. Returns why the lists call for a full computation, when they changed.
    pub(super) fn traffic_classes(
        &self,
        subnet: &Subnet,
        cfg: &mut EngineConfig,
    ) -> Option<engine::FullWhy> {
        let name = self.kind.name();
        let file = |key: &str| {
            subnet
                .routing_options
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty() && v != "(null)")
        };
        let mut lists = ClassLists::default();
        let mut given = Vec::new();
        for (key, list) in [
            ("cn_guid_file", &mut lists.compute),
            ("io_guid_file", &mut lists.io),
        ] {
            let Some(path) = file(key) else { continue };
            match crate::io::guid_list::read_file(std::path::Path::new(&path)) {
                Ok(guids) => {
                    *list = guids;
                    given.push(key);
                }
                Err(e) => self.log.error(&format!(
                    "{}: {name}: {key}: {e}; routing without it",
                    Code::NodeList
                )),
            }
        }
        let mut last = self.class_lists.lock().unwrap_or_else(|e| e.into_inner());
        let changed = last.as_ref() != Some(&lists);
        if !given.is_empty() {
            let (classes, m) = crate::traffic::TrafficClasses::from_guids(
                &subnet.fabric,
                &lists.compute,
                &lists.io,
            );
            if changed {
                let mut line = format!(
                    "{name}: {}: {} compute and {} I/O ports; compute nodes' LIDs are routed \
                     first, each class balanced on its own traffic",
                    given.join(", "),
                    m.compute,
                    m.io
                );
                if !m.unknown.is_empty() {
                    line += &format!(
                        "; {} GUIDs name no CA port of the fabric (first 0x{:016x})",
                        m.unknown.len(),
                        m.unknown[0]
                    );
                }
                if !m.both.is_empty() {
                    line += &format!("; {} ports in both lists count as compute", m.both.len());
                }
                self.log.info(&line);
            }
            cfg.classes = Some(classes);
        }
        let was = last.replace(lists);
        (changed && was.is_some()).then_some(engine::FullWhy::NodeListsChanged)
    }

    /// The engine's settings for this run ([`settings`](self): `dfsssp-rs.conf` next to OpenSM's
    /// configuration file, `event_plugin_options`, the environment). A bad value or unknown key
    /// never stops routing: it is logged at ERROR with its source and the accepted range.
    pub(super) fn settings(&self, subnet: &Subnet) -> Settings {
        let name = self.kind.name();
        let mut s = Settings::default();
        let mut problems = Vec::new();
        if let Some(path) = conf_path(subnet.config_file.as_deref()) {
            match std::fs::read_to_string(&path) {
                Ok(text) => read_conf(&text, &path.display().to_string(), &mut s, &mut problems),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => problems.push(format!("{}: {e}", path.display())),
            }
        }
        if let Some(o) = &subnet.plugin_options {
            read_plugin_options(o, &mut s, &mut problems);
        }
        read_env(|k| std::env::var(k).ok(), &mut s, &mut problems);
        for p in &problems {
            self.log.error(&format!(
                "{}: {name}: {p}; using the default",
                Code::BadSetting
            ));
        }
        if !s.sources.is_empty() {
            let given: Vec<String> = s
                .sources
                .iter()
                .map(|(k, src)| format!("{k} ({src})"))
                .collect();
            self.log
                .verbose(&format!("{name}: settings given: {}", given.join(", ")));
        }
        s
    }

    /// Incremental re-routing settings for this run, from the environment; a run without a heavy
    /// sweep before it was asked for by the admin and computes from scratch.
    pub(super) fn reroute_config(
        &self,
        set: &Settings,
        heavy_sweep: bool,
    ) -> Result<engine::RerouteConfig, AdapterError> {
        let mut rc = engine::RerouteConfig::default();
        if let Some(on) = set.incremental {
            rc.incremental = on;
        }
        if let Some(n) = set.rebalance_pct {
            rc.max_load_growth_pct = n as u32;
        }
        rc.canonical_layers = set.canonical_sls == Some(true);
        if !heavy_sweep {
            rc.force_full = Some(engine::FullWhy::Reroute);
        }
        Ok(rc)
    }

    /// The engine configuration for this run: lanes from the ports' operational VLs, capped by
    /// the settings and the SL range given to the layers; one lane when QoS is off.
    pub(super) fn config(
        &self,
        subnet: &Subnet,
        set: &Settings,
    ) -> Result<(EngineConfig, SlRange), AdapterError> {
        let name = self.kind.name();
        let mut cfg = EngineConfig::new(self.kind);
        cfg.qos = subnet.qos;
        if let Some(n) = set.bisection_patterns {
            cfg.bisection_patterns = n as u32;
        }
        // Measured once the tables are up, not while OpenSM waits for them.
        cfg.defer_metrics = true;
        if let Some(n) = set.seed {
            cfg.seed = n;
        }
        cfg.one_lane_candidate = set.one_lane_candidate.unwrap_or(true);
        cfg.dor_candidate = set.dor_candidate.unwrap_or(true);
        cfg.mcast_lane = set.mcast_lane.unwrap_or(McastLane::PLUGIN_DEFAULT);
        cfg.lanes = match subnet.min_data_vls {
            Some(v) => v,
            None => {
                self.log.info(&format!(
                    "{name}: no active port reports its operational VLs; assuming 1"
                ));
                1
            }
        };
        if let Some(cap) = set.max_lanes {
            cfg.lanes = cfg.lanes.min(cap as u8);
        }
        let mut sls = SlRange::default();
        let mut range_note = String::new();
        if let (Some((lo, hi)), true) = (set.layer_sls, self.kind == EngineKind::Dfsssp) {
            let src = set.source_of("layer_sls").unwrap_or("settings");
            let vls = subnet.min_data_vls.unwrap_or(1);
            if !subnet.qos {
                self.log.verbose(&format!(
                    "{name}: layer_sls {lo}-{hi} ({src}) has no effect with QoS off"
                ));
            } else if lo >= vls {
                self.log.error(&format!(
                    "{}: {name}: layer_sls {lo}-{hi} ({src}) starts beyond the {vls} data VLs \
                     the ports operate; using the default (SLs from 0)",
                    Code::BadSetting
                ));
            } else {
                cfg.lanes = cfg.lanes.min(hi - lo + 1).min(vls - lo);
                sls = SlRange {
                    first: lo,
                    range: Some((lo, hi)),
                };
                if lo > 0 {
                    // SL 0 (multicast's, unless the QoS policy says otherwise) is outside the
                    // layers already.
                    cfg.mcast_lane = McastLane::Off;
                }
                range_note = format!(
                    ", within layer_sls {lo}-{hi} ({src}); other SLs keep OpenSM's QoS policy"
                );
            }
        }
        // With QoS off the engine logs that it routes within one lane, and why.
        if self.kind == EngineKind::Dfsssp && subnet.qos {
            self.log.info(&format!(
                "{name}: QoS on: up to {} virtual lanes (fewest operational data VLs of any \
                 active port{}){range_note}",
                cfg.lanes,
                match set.source_of("max_lanes") {
                    Some(src) => format!(", capped by max_lanes ({src})"),
                    None => String::new(),
                }
            ));
        }
        Ok((cfg, sls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_sources_win_and_problems_name_their_source() {
        let mut s = Settings::default();
        let mut problems = Vec::new();
        read_conf(
            "# dfsssp-rs\nmax_lanes 4\nmcast_lane always\n\nrebalance_pct 12 34\ncolour blue\n\
             seed -3\n",
            "/etc/opensm/dfsssp-rs.conf",
            &mut s,
            &mut problems,
        );
        assert_eq!(s.max_lanes, Some(4));
        assert_eq!(s.mcast_lane, Some(McastLane::Always));
        assert_eq!(s.seed, None);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("/etc/opensm/dfsssp-rs.conf:5: expected `key value`"));
        assert!(problems[1].contains(":6: unknown key \"colour\""));
        assert!(problems[2].contains(":7: seed=\"-3\" ignored: expected a number 0..="));

        problems.clear();
        read_plugin_options("max_lanes=2, incremental=0,bogus", &mut s, &mut problems);
        assert_eq!((s.max_lanes, s.incremental), (Some(2), Some(false)));
        assert_eq!(
            problems,
            vec!["event_plugin_options: expected key=value, found \"bogus\"".to_string()]
        );

        problems.clear();
        let env = |k: &str| match k {
            "DFSSSP_RS_MAX_LANES" => Some("abc".to_string()),
            "DFSSSP_RS_BISECTION_PATTERNS" => Some("100".to_string()),
            _ => None,
        };
        read_env(env, &mut s, &mut problems);
        // A bad override leaves the value from the files.
        assert_eq!(s.max_lanes, Some(2));
        assert_eq!(s.bisection_patterns, Some(100));
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("DFSSSP_RS_MAX_LANES: DFSSSP_RS_MAX_LANES=\"abc\"")
                && problems[0].contains("1..=15"),
            "{problems:?}"
        );
        assert!(s
            .sources
            .contains(&("max_lanes", "event_plugin_options".to_string())));
        assert!(s.sources.contains(&(
            "bisection_patterns",
            "DFSSSP_RS_BISECTION_PATTERNS".to_string()
        )));
    }

    /// Flags take 1/0 and opensm.conf's TRUE/FALSE; anything else is a problem, the value before
    /// it stands.
    #[test]
    fn flags_take_numbers_and_words() {
        let mut s = Settings::default();
        let mut problems = Vec::new();
        read_conf(
            "incremental FALSE\none_lane_candidate 0\ndor_candidate TRUE\n",
            "c",
            &mut s,
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let flags = |s: &Settings| (s.incremental, s.one_lane_candidate, s.dor_candidate);
        assert_eq!(flags(&s), (Some(false), Some(false), Some(true)));
        read_plugin_options("incremental=on,dor_candidate=2", &mut s, &mut problems);
        assert_eq!(flags(&s), (Some(true), Some(false), Some(true)));
        assert!(
            problems.len() == 1 && problems[0].contains("expected 1 or 0 (TRUE or FALSE)"),
            "{problems:?}"
        );
    }

    #[test]
    fn layer_sls_take_a_range_within_the_data_vls() {
        let mut s = Settings::default();
        let mut problems = Vec::new();
        read_plugin_options("layer_sls=2-5", &mut s, &mut problems);
        assert_eq!((s.layer_sls, problems.len()), (Some((2, 5)), 0));
        read_plugin_options("layer_sls=3", &mut s, &mut problems);
        assert_eq!(s.layer_sls, Some((3, 3)));
        for bad in ["5-2", "0-15", "a-b", "-3", "1-2-3"] {
            problems.clear();
            read_plugin_options(&format!("layer_sls={bad}"), &mut s, &mut problems);
            assert_eq!(
                s.layer_sls,
                Some((3, 3)),
                "{bad} must leave the range as it was"
            );
            assert!(
                problems.len() == 1 && problems[0].contains("expected a range A-B of SLs"),
                "{bad}: {problems:?}"
            );
        }
        let env = |k: &str| (k == "DFSSSP_RS_LAYER_SLS").then(|| "0-3".to_string());
        read_env(env, &mut s, &mut problems);
        assert_eq!(s.layer_sls, Some((0, 3)));
    }

    #[test]
    fn the_state_file_sits_next_to_guid2lid_unless_set() {
        let mut s = Settings::default();
        let mut problems = Vec::new();
        let env = |k: &str| (k == "OSM_CACHE_DIR").then(|| "/srv/osm".to_string());
        assert_eq!(
            state_path(&s, env),
            Some(PathBuf::from("/srv/osm/dfsssp-rs.state"))
        );
        assert_eq!(
            state_path(&s, |_| None),
            Some(PathBuf::from("/var/cache/opensm/dfsssp-rs.state"))
        );
        read_conf(
            "state_file /shared/sm.state\nstate_file rel/x\n",
            "c",
            &mut s,
            &mut problems,
        );
        assert_eq!(state_path(&s, env), Some(PathBuf::from("/shared/sm.state")));
        assert!(problems.len() == 1 && problems[0].contains("absolute path or none"));
        read_plugin_options("state_file=none", &mut s, &mut problems);
        assert_eq!(state_path(&s, env), None);
    }

    #[test]
    fn the_file_sits_next_to_opensm_conf() {
        assert_eq!(
            conf_path(Some(Path::new("/etc/opensm/opensm.conf"))),
            Some(PathBuf::from("/etc/opensm/dfsssp-rs.conf"))
        );
        assert_eq!(conf_path(None), None);
    }
}
