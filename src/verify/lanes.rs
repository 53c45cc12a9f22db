//! The deadlock check of a routing as it is, every lane at once: for judging any routing (ours, or
//! another engine's read from OpenSM's dumps) rather than guarding an upload. Unlike
//! [`super::verify`], which stops at the first fault, it walks every (source switch, DLID) path,
//! failing and looping ones included (every channel a packet takes creates dependencies; a
//! forwarding loop is a credit loop), builds each lane's channel dependency graph from verify's
//! [`DependencySlots`] and reports a cycle per lane, named by switch GUID and description.

use rayon::prelude::*;
use serde::Serialize;

use super::{find_cdg_cycle, ChannelHop, DependencySlots, VerifyError};
use crate::fabric::Fabric;
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::routing::{walk, Routing};

/// One channel of a credit loop.
#[derive(Clone, Debug, Serialize)]
pub struct CycleHop {
    pub switch_guid: String,
    pub switch: String,
    pub port: u8,
}

#[derive(Clone, Debug, Serialize)]
pub struct LaneCheck {
    pub lane: u8,
    /// (source switch, DLID) paths in this lane, zero-hop ones included.
    pub paths: u64,
    /// Distinct edges of the lane's channel dependency graph.
    pub dependencies: u64,
    pub acyclic: bool,
    /// Acyclic over the data paths alone (from switches with CAs to CA and router LIDs): where
    /// `acyclic` is false and this true, every loop needs a path to a switch LID (management
    /// traffic, which e.g. nue's model leaves out by default).
    pub data_acyclic: bool,
    /// A cycle of the lane's CDG (a credit loop), in order, when there is one.
    pub cycle: Option<Vec<CycleHop>>,
    /// The cycle as text (`VerifyError::describe`).
    pub cycle_text: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeadlockCheck {
    /// Every lane's CDG is acyclic (and no path has a lane beyond the declared ones).
    pub deadlock_free: bool,
    /// The same over the data paths alone ([`LaneCheck::data_acyclic`]): CA-to-CA traffic
    /// cannot deadlock, whatever the paths to switch LIDs do.
    pub data_deadlock_free: bool,
    /// Lanes the routing declares (path-SL dump: highest SL + 1; else 1).
    pub lanes_declared: u8,
    /// Lanes holding at least one path.
    pub lanes_used: u8,
    pub lanes: Vec<LaneCheck>,
    /// Paths whose lane is beyond the declared lanes (not checked).
    pub bad_lane_paths: u64,
    /// Paths from source switches whose lanes are unknown (not checked; see
    /// [`check_lanes_of`]).
    pub unknown_lane_paths: u64,
    /// Per lane, its CDG edges as bits over [`DependencySlots`] (the layout of
    /// `VerifyReport::layer_edges`), for checks that add dependencies (multicast).
    #[serde(skip)]
    pub lane_edges: Vec<Vec<u64>>,
}

/// "0x... (desc)" of switch `s`, or "switch #s" for an id the graph does not have.
pub fn switch_name(f: &Fabric, g: &SwitchGraph, s: u32) -> String {
    match g.switch_node().get(s as usize) {
        Some(&n) => f.node_name(n),
        None => format!("switch #{s}"),
    }
}

/// "0x<GUID>" of switch `s`.
pub fn switch_guid(f: &Fabric, g: &SwitchGraph, s: u32) -> String {
    g.switch_node()
        .get(s as usize)
        .and_then(|&n| f.nodes().get(n as usize))
        .map_or_else(|| format!("#{s}"), |n| format!("0x{:016x}", n.guid))
}

/// "0x... (desc) port P" of the port owning `lid`.
pub fn lid_owner(f: &Fabric, g: &SwitchGraph, lid: u16) -> String {
    match g
        .dest_of_lid(lid)
        .and_then(|d| f.endpoints().get(d.endpoint as usize))
    {
        Some(e) => format!("{} port {}", f.node_name(e.node), e.port),
        None => format!("LID {lid} (no port)"),
    }
}

/// What one chunk of source switches saw.
struct LaneChunk {
    /// Per lane: bitset over dependency slots, allocated on first use.
    bits: Vec<Option<Vec<u64>>>,
    /// The same over the data paths alone (sources with CAs, DLIDs of CA and router ports).
    data_bits: Vec<Option<Vec<u64>>>,
    paths: Vec<u64>,
    bad_lane: u64,
    unknown: u64,
}

/// Builds the CDG of every lane by walking every (source switch, DLID) path and looks for a
/// cycle in each. Every channel a packet takes creates dependencies, delivered or not, so failing
/// and looping paths count too (a forwarding loop is a credit loop).
pub fn check_lanes(f: &Fabric, g: &SwitchGraph, r: &Routing) -> DeadlockCheck {
    check_lanes_of(f, g, r, |_| true)
}

/// [`check_lanes`] over the paths of the source switches `known(s)` holds only: the others' lanes
/// are unknown (OpenSM's path-SL dump lists CA sources only, so a switch without CAs sends on
/// SLs nobody recorded). Their paths are counted in [`DeadlockCheck::unknown_lane_paths`]; the
/// CA traffic that crosses them is still checked, along the walks from the CAs' switches.
pub fn check_lanes_of(
    f: &Fabric,
    g: &SwitchGraph,
    r: &Routing,
    known: impl Fn(u32) -> bool + Sync,
) -> DeadlockCheck {
    let nl = usize::from(r.num_layers.max(1));
    let ns = g.num_switches();
    let slots = DependencySlots::new(g);
    let words = slots.len().div_ceil(64) as usize;
    let chunks = (rayon::current_num_threads() * 4).clamp(1, ns.max(1));
    let per = ns.div_ceil(chunks).max(1);
    let parts: Vec<LaneChunk> = (0..chunks)
        .into_par_iter()
        .map(|k| {
            let mut part = LaneChunk {
                bits: vec![None; nl],
                data_bits: vec![None; nl],
                paths: vec![0; nl],
                bad_lane: 0,
                unknown: 0,
            };
            for s in (k * per).min(ns) as u32..((k + 1) * per).min(ns) as u32 {
                if !known(s) {
                    part.unknown += g
                        .dests()
                        .iter()
                        .filter(|d| d.switch != NO_SWITCH && d.lid <= r.lft.max_lid)
                        .count() as u64;
                    continue;
                }
                for d in g.dests() {
                    if d.switch == NO_SWITCH || d.lid > r.lft.max_lid {
                        continue;
                    }
                    let lane = usize::from(r.layer(s, d.lid));
                    if lane >= nl {
                        part.bad_lane += 1;
                        continue;
                    }
                    part.paths[lane] += 1;
                    let data = g.terminal_count()[s as usize] > 0 && d.exit_port != 0;
                    let bits = part.bits[lane].get_or_insert_with(|| vec![0u64; words]);
                    let mut data_bits =
                        data.then(|| part.data_bits[lane].get_or_insert_with(|| vec![0u64; words]));
                    let mut prev = NO_CHANNEL;
                    // Delivered or not, every channel taken creates dependencies.
                    let _ = walk(g, &r.lft, s, d.lid, |c| {
                        if prev != NO_CHANNEL {
                            let slot = slots.slot(g, prev, c);
                            let (w, bit) = ((slot / 64) as usize, 1u64 << (slot % 64));
                            bits[w] |= bit;
                            if let Some(db) = data_bits.as_mut() {
                                db[w] |= bit;
                            }
                        }
                        prev = c;
                    });
                }
            }
            part
        })
        .collect();
    let LaneChunk {
        bits,
        data_bits,
        paths,
        bad_lane,
        unknown,
    } = LaneChunk::merged(parts, nl);
    let mut lanes = Vec::with_capacity(nl);
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for (lane, (b, db)) in bits.iter().zip(&data_bits).enumerate() {
        edges.clear();
        if let Some(b) = b {
            slots.for_each_edge(g, b, |c1, c2| edges.push((c1, c2)));
        }
        let mut check = lane_check(f, g, lane, paths[lane], &edges);
        if !check.acyclic {
            edges.clear();
            if let Some(db) = db {
                slots.for_each_edge(g, db, |c1, c2| edges.push((c1, c2)));
            }
            check.data_acyclic = find_cdg_cycle(g.num_channels(), &edges).is_none();
        }
        lanes.push(check);
    }
    DeadlockCheck {
        deadlock_free: bad_lane == 0 && lanes.iter().all(|l| l.acyclic),
        data_deadlock_free: bad_lane == 0 && lanes.iter().all(|l| l.data_acyclic),
        lanes_declared: r.num_layers,
        lanes_used: paths.iter().filter(|&&p| p > 0).count() as u8,
        lanes,
        bad_lane_paths: bad_lane,
        unknown_lane_paths: unknown,
        lane_edges: bits
            .into_iter()
            .map(|b| b.unwrap_or_else(|| vec![0u64; words]))
            .collect(),
    }
}

/// Lane `lane`'s check from its `paths` and its channel dependencies `edges`: acyclic, or the
/// credit loop found, named.
fn lane_check(
    f: &Fabric,
    g: &SwitchGraph,
    lane: usize,
    paths: u64,
    edges: &[(u32, u32)],
) -> LaneCheck {
    let cycle = find_cdg_cycle(g.num_channels(), edges);
    let (hops, text) = match &cycle {
        Some(chans) => {
            let hops: Vec<ChannelHop> = chans
                .iter()
                .map(|&c| ChannelHop {
                    channel: c,
                    switch: g.chan_tail()[c as usize],
                    port: g.chan_port()[c as usize],
                })
                .collect();
            let named = hops
                .iter()
                .map(|h| CycleHop {
                    switch_guid: switch_guid(f, g, h.switch),
                    switch: switch_name(f, g, h.switch),
                    port: h.port,
                })
                .collect();
            let err = VerifyError::CreditLoop {
                layer: lane as u8,
                cycle: hops,
            };
            (Some(named), Some(err.describe(f, g)))
        }
        None => (None, None),
    };
    LaneCheck {
        lane: lane as u8,
        paths,
        dependencies: edges.len() as u64,
        acyclic: cycle.is_none(),
        data_acyclic: cycle.is_none(),
        cycle: hops,
        cycle_text: text,
    }
}

/// `acc |= more`, lane by lane (a lane's bitset allocated where either has one).
fn or_lanes(acc: &mut [Option<Vec<u64>>], more: Vec<Option<Vec<u64>>>) {
    for (acc, b) in acc.iter_mut().zip(more) {
        match (acc.as_mut(), b) {
            (_, None) => {}
            (None, Some(b)) => *acc = Some(b),
            (Some(a), Some(b)) => a.iter_mut().zip(&b).for_each(|(x, y)| *x |= y),
        }
    }
}

impl LaneChunk {
    /// The chunks' counts added up and their dependency bits or-ed, lane by lane.
    fn merged(parts: Vec<LaneChunk>, nl: usize) -> LaneChunk {
        let mut bits: Vec<Option<Vec<u64>>> = vec![None; nl];
        let mut data_bits: Vec<Option<Vec<u64>>> = vec![None; nl];
        let mut paths = vec![0u64; nl];
        let (mut bad_lane, mut unknown) = (0, 0);
        for part in parts {
            bad_lane += part.bad_lane;
            unknown += part.unknown;
            for (a, b) in paths.iter_mut().zip(&part.paths) {
                *a += b;
            }
            or_lanes(&mut bits, part.bits);
            or_lanes(&mut data_bits, part.data_bits);
        }
        LaneChunk {
            bits,
            data_bits,
            paths,
            bad_lane,
            unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{self, EngineConfig};
    use crate::graph::SwitchGraph;
    use crate::routing::SwitchLidTable;
    use crate::topo;

    #[test]
    fn ring_sssp_has_a_credit_loop_that_two_lanes_remove() {
        // A 5-switch ring routed by minimal SSSP has a cycle (Domke et al., Fig. 2); dfsssp-rs's
        // layers do not.
        let f = topo::by_name("torus:5,1").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let r = crate::sssp::route(&g);
        let c = check_lanes(&f, &g, &r);
        assert!(!c.deadlock_free);
        assert_eq!(c.lanes.len(), 1);
        let cyc = c.lanes[0].cycle.as_ref().unwrap();
        assert!(cyc.len() >= 3, "{cyc:?}");
        assert!(c.lanes[0].cycle_text.as_ref().unwrap().contains("port"));

        let out = engine::run(&f, &EngineConfig::new(engine::EngineKind::Dfsssp)).unwrap();
        let c = check_lanes(&f, &out.graph, &out.routing);
        assert!(c.deadlock_free, "{c:?}");
        assert!(c.lanes_used >= 2);
        // The lanes' dependency bits, as counted, are the verification's layer edges (which
        // the engine hands on in its summary).
        assert_eq!(c.lane_edges.len(), c.lanes.len());
        for (bits, l) in c.lane_edges.iter().zip(&c.lanes) {
            let ones: u64 = bits.iter().map(|w| u64::from(w.count_ones())).sum();
            assert_eq!(ones, l.dependencies, "lane {}", l.lane);
            let theirs = &out.summary.layer_edges[usize::from(l.lane)];
            assert_eq!(&bits[..theirs.len()], &theirs[..], "lane {}", l.lane);
        }
        assert_eq!(
            c.lanes.iter().map(|l| l.paths).sum::<u64>(),
            out.verified.unwrap().paths
        );
    }

    /// On a fat tree SSSP's routes to CA LIDs go up, then down (acyclic), while its routes to
    /// switch LIDs dip down and up again and close loops: those carry management traffic only.
    /// On a ring the CA routes themselves loop.
    #[test]
    fn loops_through_switch_lids_alone_are_told_apart() {
        let f = topo::by_name("ktree:4,3").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let d = check_lanes(&f, &g, &crate::sssp::route(&g));
        assert!(
            !d.deadlock_free,
            "SSSP's switch-LID routes loop on a 3-level tree"
        );
        assert!(d.data_deadlock_free);
        assert!(d.lanes.iter().any(|l| !l.acyclic && l.data_acyclic));
        let f = topo::by_name("torus:5,1").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let d = check_lanes(&f, &g, &crate::sssp::route(&g));
        assert!(!d.deadlock_free && !d.data_deadlock_free);
    }

    #[test]
    fn every_lane_is_checked_and_bad_lanes_counted() {
        let f = topo::by_name("torus:5,1").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        let mut r = crate::sssp::route(&g);
        // Everything in lane 1 of 2 (lane 0 empty, lane 1 cyclic), one path beyond.
        let mut layers = SwitchLidTable::new(g.num_switches(), r.lft.max_lid, 1);
        layers.set(0, g.dests()[0].lid, 5);
        r.layers = Some(layers);
        r.num_layers = 2;
        let c = check_lanes(&f, &g, &r);
        assert!(c.lanes[0].acyclic && c.lanes[0].paths == 0);
        assert!(!c.lanes[1].acyclic);
        assert_eq!(c.bad_lane_paths, 1);
        assert_eq!(c.lanes_used, 1);
        assert!(!c.deadlock_free);
    }
}
