//! The engine's settings, from OpenSM's own configuration: a `dfsssp-rs.conf` next to the
//! `opensm.conf` OpenSM read (`key value` lines, `#` comments, as opensm.conf), then OpenSM's
//! `event_plugin_options` (`key=value` items separated by commas: OpenSM keeps one word per
//! option), then the environment variables (`DFSSSP_RS_<KEY>`, overrides for a service unit).
//! Later sources win. A bad value or an unknown key never stops routing: it is reported with its
//! source (file and line, or the option) and the accepted range, and the value before it stands.

use std::path::{Path, PathBuf};

use crate::engine::McastLane;

/// The file name looked for next to OpenSM's configuration file.
pub(crate) const CONF_FILE: &str = "dfsssp-rs.conf";

/// One setting: its key, its environment variable, its accepted range.
struct Key {
    name: &'static str,
    env: &'static str,
    min: u64,
    max: u64,
}

const KEYS: [Key; 8] = [
    Key {
        name: "max_lanes",
        env: super::ENV_MAX_LANES,
        min: 1,
        max: 15,
    },
    Key {
        name: "incremental",
        env: super::ENV_INCREMENTAL,
        min: 0,
        max: 1,
    },
    Key {
        name: "rebalance_pct",
        env: super::ENV_REBALANCE_PCT,
        min: 0,
        max: 100_000,
    },
    Key {
        name: "mcast_lane",
        env: super::ENV_MCAST_LANE,
        min: 0,
        max: 2,
    },
    Key {
        name: "bisection_patterns",
        env: super::ENV_BISECTION_PATTERNS,
        min: 0,
        max: 100_000,
    },
    Key {
        name: "seed",
        env: super::ENV_SEED,
        min: 0,
        max: u64::MAX,
    },
    Key {
        name: "one_lane_candidate",
        env: super::ENV_ONE_LANE_CANDIDATE,
        min: 0,
        max: 1,
    },
    // A range `A-B` of SLs (and the VLs of the same numbers), both within min..=max.
    Key {
        name: "layer_sls",
        env: super::ENV_LAYER_SLS,
        min: 0,
        max: 14,
    },
];

/// The settings given anywhere (`None`: the engine's default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Settings {
    pub max_lanes: Option<u64>,
    pub incremental: Option<u64>,
    pub rebalance_pct: Option<u64>,
    pub mcast_lane: Option<u64>,
    pub bisection_patterns: Option<u64>,
    pub seed: Option<u64>,
    pub one_lane_candidate: Option<u64>,
    /// The SLs (and VLs of the same numbers) the layers may use, first and last; the admin's QoS
    /// policy keeps every SL outside them.
    pub layer_sls: Option<(u8, u8)>,
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

    fn slot(&mut self, key: &str) -> Option<&mut Option<u64>> {
        Some(match key {
            "max_lanes" => &mut self.max_lanes,
            "incremental" => &mut self.incremental,
            "rebalance_pct" => &mut self.rebalance_pct,
            "mcast_lane" => &mut self.mcast_lane,
            "bisection_patterns" => &mut self.bisection_patterns,
            "seed" => &mut self.seed,
            "one_lane_candidate" => &mut self.one_lane_candidate,
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
        let in_range = |n: u64| (k.min..=k.max).contains(&n);
        let ok = if key == "layer_sls" {
            match parse_sl_range(v) {
                Some((a, b)) if in_range(a.into()) && in_range(b.into()) => {
                    self.layer_sls = Some((a, b));
                    true
                }
                _ => {
                    problems.push(format!(
                        "{source}: {key}={v:?} ignored: expected a range A-B of SLs with \
                         {}<=A<=B<={} (e.g. 0-3)",
                        k.min, k.max
                    ));
                    false
                }
            }
        } else {
            // The multicast lane also by name (off, when-free, always), as the CLI takes it.
            let parsed = if key == "mcast_lane" {
                v.parse::<McastLane>().ok().map(|m| m as u64)
            } else {
                v.parse::<u64>().ok()
            };
            match (parsed.filter(|&n| in_range(n)), self.slot(key)) {
                (Some(n), Some(slot)) => {
                    *slot = Some(n);
                    true
                }
                _ => {
                    problems.push(format!(
                        "{source}: {key}={v:?} ignored: expected a number {}..={}",
                        k.min, k.max
                    ));
                    false
                }
            }
        };
        if ok {
            self.sources.retain(|(name, _)| *name != k.name);
            self.sources.push((k.name, source.to_string()));
        }
    }
}

/// `A-B` (or a single SL `A`) with A <= B.
fn parse_sl_range(v: &str) -> Option<(u8, u8)> {
    let (a, b) = v.split_once('-').unwrap_or((v, v));
    let (a, b) = (a.trim().parse::<u8>().ok()?, b.trim().parse::<u8>().ok()?);
    (a <= b).then_some((a, b))
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
        assert_eq!(s.mcast_lane, Some(2));
        assert_eq!(s.seed, None);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("/etc/opensm/dfsssp-rs.conf:5: expected `key value`"));
        assert!(problems[1].contains(":6: unknown key \"colour\""));
        assert!(problems[2].contains(":7: seed=\"-3\" ignored: expected a number 0..="));

        problems.clear();
        read_plugin_options("max_lanes=2, incremental=0,bogus", &mut s, &mut problems);
        assert_eq!((s.max_lanes, s.incremental), (Some(2), Some(0)));
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
    fn the_file_sits_next_to_opensm_conf() {
        assert_eq!(
            conf_path(Some(Path::new("/etc/opensm/opensm.conf"))),
            Some(PathBuf::from("/etc/opensm/dfsssp-rs.conf"))
        );
        assert_eq!(conf_path(None), None);
    }
}
