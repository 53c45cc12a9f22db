//! The verdict on each run, from OpenSM's dumps (the evaluation) and log, and what the admin
//! reads: the table, the JSON, the chart and the recommended opensm.conf lines with the reasons.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use dfsssp_rs::fabric::{Fabric, NodeKind};

use super::super::chart::{self, Bar};
use super::super::judge::{Evaluation, Source};
use super::osm_log::LogFacts;
use super::procs::{Ended, OsmRun};
use super::sa_paths::SaSls;
use super::{Context, OURS};

/// Stock engines with a path_sl callback (OpenSM 3.3.23): SLs of their own that OpenSM does not
/// dump.
const OWN_SLS: [&str; 3] = ["dfsssp", "lash", "torus-2QoS"];

/// Stock dfsssp's SLs and the verdict with them (the JSON's `stock_sls`, kept for scripts that
/// read it): now the SA's answers, as for every engine (`sa_sls`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StockSls {
    /// Distinct SLs the SA handed out.
    pub base_lanes: u8,
    /// No credit loops with them: Some(true), loops: Some(false), None not determined.
    pub deadlock_free: Option<bool>,
    pub note: String,
}

impl StockSls {
    pub fn of(sa: &SaSls) -> StockSls {
        StockSls {
            base_lanes: sa.sls.len() as u8,
            deadlock_free: sa.deadlock_free,
            note: format!("{} ({}){}", sa.method, sa.pairs_text(), sa_note(sa)),
        }
    }
}

/// "; NOTE" when `sa` has a note.
fn sa_note(sa: &SaSls) -> String {
    if sa.note.is_empty() {
        String::new()
    } else {
        format!("; {}", sa.note)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The engine asked for routed the fabric.
    Ok,
    /// It gave up and OpenSM routed with another one.
    Fallback,
    /// opensm still ran at the time limit (stopped).
    Timeout,
    /// No tables configured (or ibsim/opensm did not start).
    Failed,
}

/// One engine's run, judged.
pub struct Run {
    pub label: String,
    pub requested: String,
    pub qos: bool,
    pub status: Status,
    pub log: LogFacts,
    pub reason: Option<String>,
    pub peak_rss_kib: Option<u64>,
    pub wall: Duration,
    pub eval: Option<Evaluation>,
    /// Stock dfsssp's SLs (the SA's, as `sa_sls`; the JSON field scripts know).
    pub stock_sls: Option<StockSls>,
    /// The SLs the SA hands out for the CA port pairs, and the credit-loop check with them.
    pub sa_sls: Option<SaSls>,
    /// opensm.conf lines of this run's own (`nue_include_switches TRUE`), which a
    /// recommendation of it must carry.
    pub conf: Vec<String>,
}

impl Run {
    pub fn failed(label: &str, engine: &str, qos: bool, why: String) -> Run {
        Run {
            label: label.into(),
            requested: engine.into(),
            qos,
            status: Status::Failed,
            log: LogFacts::default(),
            reason: Some(why),
            peak_rss_kib: None,
            wall: Duration::ZERO,
            eval: None,
            stock_sls: None,
            sa_sls: None,
            conf: Vec::new(),
        }
    }

    pub fn from_opensm(
        label: &str,
        engine: &str,
        qos: bool,
        r: &OsmRun,
        log: LogFacts,
        limit: Duration,
    ) -> Run {
        let (status, reason) = match (&r.ended, log.used.as_deref()) {
            (Ended::TimedOut, _) if log.runs_begun > 0 => (
                Status::Timeout,
                Some(format!(
                    "opensm stopped: its routing phase took longer than {} s ({} routing run(s) \
                     begun), or the whole run longer than {} s",
                    limit.as_secs(),
                    log.runs_begun,
                    super::procs::whole_run_bound(limit).as_secs()
                )),
            ),
            (Ended::TimedOut, _) => (
                Status::Timeout,
                Some(format!(
                    "opensm stopped after {} s without routing (discovery in ibsim; raise \
                     --limit)",
                    super::procs::whole_run_bound(limit).as_secs()
                )),
            ),
            (_, Some(u)) if u == engine => (Status::Ok, None),
            (_, Some(_)) => (Status::Fallback, log.reason.clone()),
            (Ended::Up, None) => (
                Status::Failed,
                Some("the subnet came up, but OpenSM's log names no engine's tables".into()),
            ),
            (Ended::Exited(code), None) => (
                Status::Failed,
                Some(format!(
                    "opensm exit status {}, no tables configured{}",
                    code.map_or("(signal)".into(), |c| c.to_string()),
                    log.first_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(": {e}"))
                )),
            ),
        };
        Run {
            label: label.into(),
            requested: engine.into(),
            qos,
            status,
            reason,
            peak_rss_kib: if status == Status::Timeout {
                None
            } else {
                r.peak_rss_kib
            },
            wall: r.wall,
            log,
            eval: None,
            stock_sls: None,
            sa_sls: None,
            conf: Vec::new(),
        }
    }

    /// The engine whose tables OpenSM uploaded.
    pub fn used(&self) -> Option<&str> {
        self.log.used.as_deref()
    }

    pub fn ours(&self) -> bool {
        self.used() == Some(OURS)
    }

    pub fn lambda(&self) -> Option<f64> {
        self.eval.as_ref().and_then(Evaluation::lambda)
    }

    pub fn lambda_compute(&self) -> Option<f64> {
        let c = self.eval.as_ref()?.classes.as_ref()?;
        c.compute.as_ref().map(|b| b.lambda)
    }

    /// Λ that decides: over compute ports where they are known, else over all CA ports.
    pub fn score(&self) -> Option<f64> {
        self.lambda_compute().or(self.lambda())
    }

    /// CA-to-LID pairs that should deliver and do not.
    pub fn unreachable(&self) -> Option<u64> {
        self.eval
            .as_ref()
            .map(|e| e.metrics.connectivity.ca_to_lid.failed())
    }

    /// (lanes, whether they are known) and the credit-loop verdict with whether it holds.
    pub fn lanes_and_loops(&self) -> Lanes {
        let Some(ev) = &self.eval else {
            return Lanes::default();
        };
        let d = &ev.deadlock;
        let path_sl = matches!(ev.source, Source::Dumps { path_sl: true, .. });
        let looped: Vec<String> = d
            .lanes
            .iter()
            .filter(|l| l.cycle.is_some())
            .map(|l| l.lane.to_string())
            .collect();
        // Loops that need a path to a switch LID carry management traffic only (nue's model
        // leaves those paths out by default): a caveat, not a verdict on the data traffic.
        let management_only = !d.deadlock_free && d.data_deadlock_free;
        let checked = if d.deadlock_free {
            "no".to_string()
        } else if looped.is_empty() {
            "yes".to_string()
        } else if management_only {
            format!("switch LIDs only (lane {})", looped.join(","))
        } else {
            format!("yes (lane {})", looped.join(","))
        };
        let used = self.used().unwrap_or("");
        let own_sls = OWN_SLS.contains(&used);
        let dump = if path_sl {
            // SLs of every CA-sourced path from the engine's own dump (dfsssp-rs)
            Lanes {
                count: Some(d.lanes_used),
                source: "path-SL dump",
                loops: checked,
                deadlock_free: Some(d.data_deadlock_free),
                management_only,
            }
        } else if own_sls {
            // the engine's SLs stay inside OpenSM's SA: its routes checked in one lane only
            let (loops, free) = if d.deadlock_free {
                ("no (any SLs)".to_string(), Some(true))
            } else {
                ("unknown (SLs not read)".to_string(), None)
            };
            Lanes {
                count: self.log.log_lanes,
                source: if self.log.log_lanes.is_some() {
                    "engine's log"
                } else {
                    "unknown"
                },
                loops,
                deadlock_free: free,
                management_only: false,
            }
        } else {
            // no path_sl callback (nue: nue_max_num_vls 1 by default): every route on one SL
            Lanes {
                count: Some(1),
                source: "one SL (no path_sl)",
                loops: checked,
                deadlock_free: Some(d.data_deadlock_free),
                management_only,
            }
        };
        let Some(sa) = self.sa_sls.as_ref().filter(|s| s.deadlock_free.is_some()) else {
            return dump;
        };
        // the SLs applications get, from the SA, checked along the routes
        let sls = sa.sls.len() as u8;
        let scope = if sa.sampled {
            format!(
                "SA SLs, a sample of {} of {} pairs",
                sa.answered, sa.pairs_total
            )
        } else if (sa.answered as u64) < sa.pairs_total {
            // unanswered, not asked in time, or no path
            format!("SA SLs, {} of {} pairs", sa.answered, sa.pairs_total)
        } else {
            "SA SLs".to_string()
        };
        let count = if path_sl {
            dump.count
        } else if own_sls {
            self.log.log_lanes.or(Some(sls))
        } else {
            Some(sls)
        };
        let source = if path_sl {
            dump.source
        } else if own_sls && self.log.log_lanes.is_some() {
            "engine's log"
        } else {
            "SA PathRecords"
        };
        // the dumps' verdict covers every path and is exact where their lanes are the SA's
        let exact_dump = path_sl || (!own_sls && sls <= 1);
        if sa.deadlock_free == Some(false) && !(exact_dump && dump.deadlock_free == Some(false)) {
            return Lanes {
                count,
                source,
                loops: format!("yes ({scope})"),
                deadlock_free: Some(false),
                management_only: false,
            };
        }
        if exact_dump || dump.deadlock_free == Some(true) {
            // (where both find loops, the dumps' lanes name them)
            return Lanes {
                count,
                source,
                ..dump
            };
        }
        Lanes {
            count,
            source,
            loops: format!("no ({scope})"),
            deadlock_free: Some(true),
            management_only: false,
        }
    }

    /// Routed by itself, every pair delivered, free of credit loops as far as can be known.
    pub fn sound(&self) -> bool {
        self.status == Status::Ok
            && self.unreachable() == Some(0)
            && self.lanes_and_loops().deadlock_free == Some(true)
    }

    /// The name in the table: "ftree -> minhop" for a fallback, "nue: timeout".
    pub fn shown_name(&self) -> String {
        match self.status {
            Status::Ok => self.label.clone(),
            Status::Fallback => format!("{} -> {}", self.label, self.used().unwrap_or("?")),
            Status::Timeout => format!("{}: timeout", self.label),
            Status::Failed => format!("{}: failed", self.label),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Lanes {
    pub count: Option<u8>,
    /// Where the count comes from.
    pub source: &'static str,
    /// Credit loops: "no", "yes (lane 0)", "switch LIDs only (lane 0)", "no (any SLs)",
    /// "unknown (SLs not dumped)".
    pub loops: String,
    /// No credit loop among the data (CA-to-CA) paths, as far as can be known.
    pub deadlock_free: Option<bool>,
    /// Loops there are, but each needs a path to a switch LID (management traffic).
    pub management_only: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct FabricFacts {
    pub switches: usize,
    pub ca_ports: usize,
    pub aggregation_nodes: usize,
    /// Compute ports (`None`: all CA ports count).
    pub compute_ports: Option<usize>,
    pub links: usize,
}

impl FabricFacts {
    pub fn of(f: &Fabric, aggregation_nodes: usize, compute_ports: Option<usize>) -> Self {
        FabricFacts {
            switches: f.switch_count(),
            ca_ports: f
                .endpoints()
                .iter()
                .filter(|e| f.nodes()[e.node as usize].kind != NodeKind::Switch)
                .count(),
            aggregation_nodes,
            compute_ports,
            links: f.links().len(),
        }
    }

    pub fn line(&self) -> String {
        let mut s = format!(
            "{} switches, {} CA ports, {} links",
            self.switches, self.ca_ports, self.links
        );
        if self.aggregation_nodes > 0 {
            let _ = write!(s, ", {} SHARP aggregation nodes", self.aggregation_nodes);
        }
        if let Some(c) = self.compute_ports {
            let _ = write!(s, ", {c} compute ports");
        }
        s
    }
}

/// What to put into opensm.conf, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    /// The run recommended (its label), if any engine was sound.
    pub engine: Option<String>,
    pub conf_lines: Vec<String>,
    pub why: Vec<String>,
}

fn f4(x: Option<f64>) -> String {
    x.map_or("-".into(), |l| format!("{l:.4}"))
}

/// The best sound run: the highest Λ (compute ports where known); within 1% of it, fewer
/// lanes, then a stock engine (no plug-in to install), then the faster.
pub fn recommend(runs: &[Run]) -> Recommendation {
    let mut sound: Vec<&Run> = runs
        .iter()
        .filter(|r| r.sound() && r.score().is_some())
        .collect();
    sound.sort_by(|a, b| {
        b.score()
            .partial_cmp(&a.score())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut why = Vec::new();
    let Some(top) = sound.first().and_then(|r| r.score()) else {
        why.push(
            "no engine routed this fabric by itself, reaching every destination, without \
             credit loops: keep what you run and look at the table's reasons"
                .into(),
        );
        return Recommendation {
            engine: None,
            conf_lines: Vec::new(),
            why,
        };
    };
    let best = choose_best(&sound, top);
    let chain = Chain::of(best, &sound);
    let minhop_loops = runs
        .iter()
        .find(|r| r.requested == "minhop" && r.status == Status::Ok)
        .map(|r| !r.sound());
    let conf = conf_lines(&chain, minhop_loops == Some(true));
    explain_choice(&mut why, best, &sound, top, &chain);
    if minhop_loops == Some(true) {
        why.push(
            "no_fallback_routing_engine TRUE: should every engine of the chain fail, OpenSM \
             would fall back to minhop, which has credit loops on this fabric"
                .into(),
        );
    }
    explain_unsound(&mut why, runs);
    Recommendation {
        engine: Some(best.label.clone()),
        conf_lines: conf,
        why,
    }
}

/// Among the sound runs (best Λ first) within 1% of the top Λ `top`: the fewest lanes, then no
/// plug-in, then no caveat (loops through paths to switch LIDs), then the fastest.
fn choose_best<'r>(sound: &[&'r Run], top: f64) -> &'r Run {
    let key = |r: &Run| {
        let ll = r.lanes_and_loops();
        let time = r.log.routing_s.unwrap_or(f64::MAX);
        (ll.count.unwrap_or(16), r.ours(), ll.management_only, time)
    };
    sound
        .iter()
        .filter(|r| r.score().unwrap_or(0.0) >= 0.99 * top)
        .min_by(|a, b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(&sound[0])
}

/// The recommended chain of engines and the QoS setting it needs.
struct Chain<'r> {
    /// The best, then up to two other sound engines that fit its QoS setting, by Λ.
    runs: Vec<&'r Run>,
    /// Sound engines the QoS setting keeps out (on more than one SL with QoS off).
    left_out: Vec<&'r str>,
    qos_on: bool,
}

impl<'r> Chain<'r> {
    /// The chain starting with `best`, from the sound runs (best Λ first).
    fn of(best: &'r Run, sound: &[&'r Run]) -> Chain<'r> {
        // QoS is one switch for the whole chain: with the best on one lane, the chain keeps to
        // engines that route on one lane (QoS off); else it holds the QoS-on runs
        let multi = |r: &Run| {
            r.qos
                && match r.lanes_and_loops().count {
                    Some(n) => n > 1,
                    None => OWN_SLS.contains(&r.requested.as_str()),
                }
        };
        let qos_on = multi(best);
        // (Stock engines without SLs of their own ran with QoS off and route the same with it
        // on; only dfsssp-rs's QoS-off run routes otherwise than with QoS on.)
        let fits = |r: &Run| {
            if qos_on {
                r.qos || r.requested != OURS
            } else {
                !multi(r)
            }
        };
        // the chain: the best, then the other sound engines that fit, by Λ (each engine once)
        let mut chain: Vec<&Run> = vec![best];
        for r in sound.iter().filter(|r| fits(r)) {
            if chain.len() < 3 && !chain.iter().any(|c| c.requested == r.requested) {
                chain.push(r);
            }
        }
        let left_out: Vec<&str> = sound
            .iter()
            .filter(|r| !fits(r) && !chain.iter().any(|c| c.requested == r.requested))
            .map(|r| r.label.as_str())
            .collect();
        Chain {
            runs: chain,
            left_out,
            qos_on,
        }
    }
}

/// opensm.conf lines for the chain (and no fallback to minhop when minhop has credit loops).
fn conf_lines(chain: &Chain<'_>, minhop_loops: bool) -> Vec<String> {
    let qos_on = chain.qos_on;
    let names: Vec<&str> = chain.runs.iter().map(|r| r.requested.as_str()).collect();
    let mut conf = Vec::new();
    if names.contains(&OURS) {
        conf.push("event_plugin_name dfsssp_rs".to_string());
    }
    conf.push(format!("routing_engine {}", names.join(",")));
    for line in chain.runs.iter().flat_map(|r| &r.conf) {
        if !conf.contains(line) {
            conf.push(line.clone());
        }
    }
    // OpenSM programs the SL-to-VL tables only with QoS on
    conf.push(format!("qos {}", if qos_on { "TRUE" } else { "FALSE" }));
    if minhop_loops {
        conf.push("no_fallback_routing_engine TRUE".into());
    }
    conf
}

/// Why `best` (and its QoS setting) is recommended, against the next best sound engine.
fn explain_choice(why: &mut Vec<String>, best: &Run, sound: &[&Run], top: f64, chain: &Chain<'_>) {
    let (qos_on, left_out) = (chain.qos_on, &chain.left_out);
    let what = |r: &Run| {
        let ll = r.lanes_and_loops();
        format!(
            "Λ {}{}, {} lane(s), {}, every destination reached, routed in {} s",
            f4(r.lambda()),
            r.lambda_compute()
                .map_or(String::new(), |c| format!(" (compute ports {c:.4})")),
            ll.count.map_or("unknown".into(), |n| n.to_string()),
            match ll.management_only {
                true =>
                    "no credit loops among CA-to-CA paths (caveat: loops through paths to \
                         switch LIDs, management traffic only)",
                false => "no credit loops",
            },
            r.log.routing_s.map_or("?".into(), |t| format!("{t:.3}"))
        )
    };
    why.push(format!("{}: {}", best.label, what(best)));
    if let Some(other) = sound.iter().find(|r| r.requested != best.requested) {
        let ratio = match (best.score(), other.score()) {
            (Some(a), Some(b)) if b > 0.0 => format!(" ({:.3}x its Λ)", a / b),
            _ => String::new(),
        };
        why.push(format!(
            "next best sound engine: {}: {}{ratio}",
            other.label,
            what(other)
        ));
    }
    if best.score().unwrap_or(0.0) < top {
        why.push(format!(
            "chosen over a Λ up to 1% higher ({top:.4}): fewer lanes, or no plug-in, or faster"
        ));
    }
    if qos_on {
        why.push(format!(
            "qos TRUE: {} routes on {} SLs; OpenSM programs SL-to-VL tables only with QoS on",
            best.label,
            best.lanes_and_loops()
                .count
                .map_or("several".into(), |n| n.to_string())
        ));
    } else if !left_out.is_empty() {
        why.push(format!(
            "qos FALSE keeps {} out of the chain: sound here, but on more than one SL",
            left_out.join(", ")
        ));
        // the same engines with QoS on give a longer chain, at the price of the lanes
        let mut with_qos: Vec<&str> = Vec::new();
        for r in sound.iter().filter(|r| r.qos) {
            if with_qos.len() < 3 && !with_qos.contains(&r.requested.as_str()) {
                with_qos.push(r.requested.as_str());
            }
        }
        why.push(format!(
            "a longer deadlock-free chain, using lanes: qos TRUE with routing_engine {}",
            with_qos.join(",")
        ));
    }
}

/// Why each run that is not sound is not recommended.
fn explain_unsound(why: &mut Vec<String>, runs: &[Run]) {
    for r in runs.iter().filter(|r| !r.sound()) {
        let w = match r.status {
            Status::Fallback => format!(
                "gave up, OpenSM used {}{}",
                r.used().unwrap_or("?"),
                r.reason
                    .as_ref()
                    .map_or(String::new(), |x| format!(": {x}"))
            ),
            Status::Timeout | Status::Failed => r.reason.clone().unwrap_or_default(),
            Status::Ok => {
                let ll = r.lanes_and_loops();
                match r.unreachable() {
                    Some(n) if n > 0 => format!("{n} CA-to-LID pairs unreachable"),
                    None => r.reason.clone().unwrap_or("not judged".into()),
                    _ => format!("credit loops: {}", ll.loops),
                }
            }
        };
        why.push(format!("not {}: {w}", r.label));
    }
}

const LEGEND: &str = "  routing s: OpenSM's routing phase (its log); RSS: opensm's peak; unreach: CA-to-LID pairs that
  do not deliver; lanes: SLs the SA hands out (dfsssp-rs: its path-SL dump; lash, torus-2QoS,
  dfsssp: as their log says); credit loops: with the SLs applications get (PathRecords from
  OpenSM's SA for every CA port pair, or a seeded sample where there are too many, said so),
  each CA-to-CA path's channel dependencies VL by VL (OpenSM's SL-to-VL tables), checked here
  and by ibdmchk (all pairs only); where OpenSM's dumps give the lanes of every path (the
  path-SL dump, or one SL) the verdict covers every path a switch with CAs sends, to any LID;
  \"switch LIDs only\": every loop needs a path to a switch LID (management traffic; CA-to-CA
  traffic is loop-free: a caveat, not disqualifying); \"no (any SLs)\": no loop even within
  one lane; \"unknown (SLs not read)\": the SA could not be read (the reason is printed).
";

/// "SLs from the SA (all 992 pairs): 992 answered in 0.1 s, SLs 0,1; credit loops: ours no,
/// ibdmchk no".
fn sa_line(s: &SaSls) -> String {
    if s.pairs_asked == 0 && s.answered == 0 {
        return format!("SLs not read from the SA: {}", s.note);
    }
    let verdict = |v: Option<bool>| match v {
        Some(true) => "no",
        Some(false) => "yes",
        None if s.sampled => "not run (it needs an SL for every pair)",
        None => "not run",
    };
    let mut l = format!(
        "SLs from the SA ({}): {} answered",
        s.pairs_text(),
        s.answered
    );
    if s.refused > 0 {
        let _ = write!(l, ", {} without a path", s.refused);
    }
    if s.unanswered > 0 {
        let _ = write!(l, ", {} unanswered", s.unanswered);
    }
    let sls: Vec<String> = s.sls.iter().map(u8::to_string).collect();
    let _ = write!(
        l,
        " in {:.1} s, SL {}; credit loops: ours {}, ibdmchk {}",
        s.read_s,
        sls.join(","),
        verdict(s.checked),
        verdict(s.ibdmchk)
    );
    l + &sa_note(s)
}

/// The table, notes and recommendation.
pub fn text(ctx: &Context, runs: &[Run], rec: &Recommendation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", ctx.input, ctx.fabric.line());
    let _ = writeln!(
        out,
        "each engine in a fresh ibsim, stock opensm until the subnet is up (routing limit {} s; \
         QoS on for engines with SLs of their own, off for the others), SLs from its SA; judged \
         from OpenSM's dumps; Λ over {} random bisections (seed {})",
        ctx.limit_s, ctx.patterns, ctx.seed
    );
    let compute = ctx.fabric.compute_ports.is_some();
    let mut head = vec![
        "engine",
        "routing s",
        "RSS MB",
        "lanes",
        "Λ",
        "EFI max",
        "hops",
        "minimal",
        "unreach",
        "credit loops",
    ];
    if compute {
        head.insert(5, "Λ compute");
    }
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in runs {
        let ll = r.lanes_and_loops();
        let m = r.eval.as_ref().map(|e| &e.metrics);
        let mut row = vec![
            r.shown_name(),
            r.log
                .routing_s
                .filter(|_| r.status != Status::Timeout)
                .map_or("-".into(), |t| format!("{t:.3}")),
            r.peak_rss_kib
                .map_or("-".into(), |k| (k / 1024).to_string()),
            match (ll.count, ll.source) {
                (Some(n), "engine's log") => format!("{n} (log)"),
                (Some(n), _) => n.to_string(),
                (None, _) if r.eval.is_some() => "unknown".into(),
                _ => "-".into(),
            },
            f4(r.lambda()),
            m.map_or("-".into(), |m| m.efi.max.to_string()),
            m.map_or("-".into(), |m| format!("{:.2}", m.hops.average)),
            m.map_or("-".into(), |m| {
                format!("{:.1}%", 100.0 * m.hops.fraction_minimal)
            }),
            r.unreachable().map_or("-".into(), |n| n.to_string()),
            if r.eval.is_some() {
                ll.loops.clone()
            } else {
                "-".into()
            },
        ];
        if compute {
            row.insert(5, f4(r.lambda_compute()));
        }
        rows.push(row);
    }
    let w: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let last = rows[0].len() - 1;
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = " ".repeat(w[c] - cell.chars().count());
            if c == 0 || c == last {
                let _ = write!(line, "{cell}{pad}  ");
            } else {
                let _ = write!(line, "{pad}{cell}  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for r in runs {
        if let Some(x) = &r.reason {
            let _ = writeln!(out, "  {}: {x}", r.shown_name());
        }
        if let Some(s) = &r.sa_sls {
            let _ = writeln!(out, "  {}: {}", r.shown_name(), sa_line(s));
        }
    }
    for n in &ctx.notes {
        let _ = writeln!(out, "  input: {n}");
    }
    out.push_str(LEGEND);
    let _ = writeln!(
        out,
        "\nrecommended opensm.conf lines{}:",
        rec.engine
            .as_ref()
            .map_or(String::new(), |e| format!(" ({e})"))
    );
    for l in &rec.conf_lines {
        let _ = writeln!(out, "  {l}");
    }
    let _ = writeln!(out, "why:");
    for l in &rec.why {
        let _ = writeln!(out, "  - {l}");
    }
    out
}

#[derive(Serialize)]
struct JsonRun<'a> {
    label: &'a str,
    requested: &'a str,
    qos: bool,
    status: Status,
    used: Option<&'a str>,
    reason: Option<&'a str>,
    routing_s: Option<f64>,
    peak_rss_kib: Option<u64>,
    wall_s: f64,
    lanes: Lanes,
    lambda: Option<f64>,
    lambda_compute: Option<f64>,
    unreachable: Option<u64>,
    sound: bool,
    /// Stock dfsssp: its SLs (the SA's, as `sa_sls`) and the verdict with them.
    stock_sls: Option<&'a StockSls>,
    /// The SLs the SA hands out (all CA port pairs or a sample) and the checks with them.
    sa_sls: Option<&'a SaSls>,
    evaluation: Option<&'a Evaluation>,
}

#[derive(Serialize)]
struct JsonOut<'a> {
    input: &'a str,
    fabric: &'a FabricFacts,
    notes: &'a [String],
    patterns: u32,
    seed: u64,
    limit_s: u64,
    runs: Vec<JsonRun<'a>>,
    recommendation: &'a Recommendation,
}

pub fn json(ctx: &Context, runs: &[Run], rec: &Recommendation) -> Result<String, String> {
    let out = JsonOut {
        input: &ctx.input,
        fabric: &ctx.fabric,
        notes: &ctx.notes,
        patterns: ctx.patterns,
        seed: ctx.seed,
        limit_s: ctx.limit_s,
        runs: runs
            .iter()
            .map(|r| JsonRun {
                label: &r.label,
                requested: &r.requested,
                qos: r.qos,
                status: r.status,
                used: r.used(),
                reason: r.reason.as_deref(),
                routing_s: r.log.routing_s.filter(|_| r.status != Status::Timeout),
                peak_rss_kib: r.peak_rss_kib,
                wall_s: r.wall.as_secs_f64(),
                lanes: r.lanes_and_loops(),
                lambda: r.lambda(),
                lambda_compute: r.lambda_compute(),
                unreachable: r.unreachable(),
                sound: r.sound(),
                stock_sls: r.stock_sls.as_ref(),
                sa_sls: r.sa_sls.as_ref(),
                evaluation: r.eval.as_ref(),
            })
            .collect(),
        recommendation: rec,
    };
    serde_json::to_string_pretty(&out).map_err(|e| format!("JSON: {e}"))
}

/// The bar chart of Λ and lanes per run (runs without tables have no bar height).
pub fn chart(title: &str, ctx: &Context, runs: &[Run]) -> String {
    let bars: Vec<Bar> = runs
        .iter()
        .map(|r| {
            let ll = r.lanes_and_loops();
            Bar {
                label: r.shown_name(),
                lambda: r.score(),
                lanes: ll.count.unwrap_or(0),
                deadlock_free: ll.deadlock_free == Some(true),
                complete: r.unreachable() == Some(0),
            }
        })
        .collect();
    let what = if ctx.fabric.compute_ports.is_some() {
        "compute ports"
    } else {
        "CA ports"
    };
    let sub = format!(
        "Λ over {what}: {} random bisections (seed {}); stock opensm in ibsim, judged from its dumps",
        ctx.patterns, ctx.seed
    );
    chart::svg(title, &sub, &bars)
}
