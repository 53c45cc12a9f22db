//! What OpenSM's own log says about one `opensm --once` run (`-D 0x47`): the engine it really
//! used, the routing phase, why a requested engine gave up, and the lanes an engine says it
//! needs. Judging the routes themselves is the dumps' job (`judge`), never the log's.

/// "Nov 22 02:30:55 580780 [17E886C0] 0x04 -> msg" -> "msg".
fn message(l: &str) -> &str {
    l.split_once(" -> ").map_or(l, |x| x.1)
}

/// Seconds within the day of a log line ("Mon DD HH:MM:SS usec ...").
fn time_of(l: &str) -> Option<f64> {
    let mut w = l.split_whitespace();
    let (_, _, hms, usec) = (w.next()?, w.next()?, w.next()?, w.next()?);
    let mut p = hms.split(':').map(|x| x.parse::<f64>().ok());
    let (h, m, s) = (p.next()??, p.next()??, p.next()??);
    Some(h * 3600.0 + m * 60.0 + s + usec.parse::<f64>().ok()? / 1e6)
}

/// The log read once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogFacts {
    /// The engine of the last "X tables configured on all switches".
    pub used: Option<String>,
    /// Seconds from the first "building routing with" of the last routing run to "tables
    /// configured": an engine that fails hands over to the next one, and both count.
    pub routing_s: Option<f64>,
    /// Why the requested engine gave up: its last error line other than OpenSM's generic
    /// "cannot build ...", else its last info line.
    pub reason: Option<String>,
    /// Lanes the engine's log says it uses or needs (dfsssp-rs "layers used: N of", stock
    /// dfsssp "Virtual Lanes needed: N", lash "Lanes needed: N").
    pub log_lanes: Option<u8>,
    /// "building routing with" lines: routing runs begun.
    pub runs_begun: usize,
    /// The first error line (0x01) of the log.
    pub first_error: Option<String>,
}

fn number_after(s: &str, key: &str) -> Option<u8> {
    let r = &s[s.find(key)? + key.len()..];
    let r = r.trim_start();
    let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
    r[..end].parse().ok()
}

/// Reads the log of a run that requested `engine`.
pub fn read(log: &str, engine: &str) -> LogFacts {
    let mut f = LogFacts::default();
    let (mut start, mut end): (Option<f64>, Option<f64>) = (None, None);
    let (mut inside, mut err, mut info) = (false, None::<String>, None::<String>);
    let quoted = format!("'{engine}'");
    for l in log.lines() {
        let m = message(l);
        if m.contains("building routing with") {
            f.runs_begun += 1;
            inside = m.contains(&quoted);
            // a new routing run after a finished one restarts the clock; a fallback within the
            // same run does not
            if end.is_some() || start.is_none() {
                start = time_of(l);
                end = None;
            }
            continue;
        }
        if let Some(e) = m
            .strip_suffix(" tables configured on all switches")
            .and_then(|x| x.rsplit(' ').next())
        {
            f.used = Some(e.to_string());
            end = time_of(l);
        }
        let is_err = l.contains(" 0x01 -> ");
        if is_err && f.first_error.is_none() {
            f.first_error = Some(m.trim().to_string());
        }
        if inside
            && is_err
            && !m.contains("cannot build lid matrices")
            && !m.contains("cannot build fwd tables")
        {
            err = Some(m.trim().to_string());
        }
        if inside && l.contains(" 0x02 -> ") {
            info = Some(m.trim().to_string());
        }
        if let Some(n) = number_after(m, "layers used:")
            .or_else(|| number_after(m, "Virtual Lanes needed:"))
            .or_else(|| number_after(m, "Lanes needed:"))
        {
            f.log_lanes = Some(n);
        }
    }
    if let (Some(a), Some(b)) = (start, end) {
        // a run across midnight
        f.routing_s = Some(if b >= a { b - a } else { b + 86400.0 - a });
    }
    if f.used.as_deref() != Some(engine) {
        f.reason = err.or(info).map(|r| r.replace('\t', " "));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const FALLBACK: &str = "\
Nov 26 20:22:30 100000 [1] 0x02 -> osm_ucast_mgr_process: building routing with 'ftree' routing algorithm
Nov 26 20:22:30 200000 [1] 0x01 -> fabric_validate_topology: ERR AB0F: Fabric topology is not a fat tree
Nov 26 20:22:30 250000 [1] 0x01 -> ucast_mgr_route: ftree: cannot build fwd tables.
Nov 26 20:22:30 300000 [1] 0x02 -> osm_ucast_mgr_process: building routing with 'minhop' routing algorithm
Nov 26 20:22:31 600000 [1] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
";

    #[test]
    fn fallback_named_with_its_reason_and_both_times() {
        let f = read(FALLBACK, "ftree");
        assert_eq!(f.used.as_deref(), Some("minhop"));
        assert_eq!(
            f.reason.as_deref(),
            Some("fabric_validate_topology: ERR AB0F: Fabric topology is not a fat tree")
        );
        assert!((f.routing_s.unwrap() - 1.5).abs() < 1e-6, "{f:?}");
        assert_eq!(f.runs_begun, 2);
    }

    #[test]
    fn own_success_and_lanes() {
        let log = "\
Nov 26 23:59:59 900000 [1] 0x02 -> osm_ucast_mgr_process: building routing with 'dfsssp-rs' routing algorithm
Nov 26 23:59:59 950000 [1] 0x02 -> dfsssp-rs: layers used: 3 of 8 (lane 0 left to multicast)
Nov 27 00:00:00 100000 [1] 0x02 -> osm_ucast_mgr_process: dfsssp-rs tables configured on all switches
";
        let f = read(log, "dfsssp-rs");
        assert_eq!(f.used.as_deref(), Some("dfsssp-rs"));
        assert_eq!(f.reason, None);
        assert_eq!(f.log_lanes, Some(3));
        assert!((f.routing_s.unwrap() - 0.2).abs() < 1e-6, "{f:?}");
        let f = read("x 0x02 -> dfsssp: Virtual Lanes needed: 9\n", "dfsssp");
        assert_eq!(f.log_lanes, Some(9));
    }
}
