//! A routing adopted from the tables the switches hold (a standby that became master without the
//! previous master's state file): the routes exactly as the LFTs give them, and their layers
//! derived from those routes by the deadlock removal a full computation runs on its final
//! routes, so an SM that only read the tables assigns the same SLs as the master that computed
//! them from scratch (the canonical rule, README "High availability without shared storage").
//! Nothing is trusted: the routes must reach every destination without a loop, fit the lane
//! budget by cycle breaking (no route that carries data changed: [`derive_layers`]) and pass the
//! full verification, else the caller computes from scratch.
//!
//! Cost: building the routing `O(S * L)` for `S` switches and `L` LIDs (the hops of minimal
//! tables read off the switch distances, others walked), then deadlock removal and
//! verification as after a full computation (its layer-0 CDG linked by the distances too).
//! That verification's loads and dependency edges go with the routing (its summary), so the
//! re-route that follows traverses and verifies only what changed since the tables were
//! written. Where the tables forward over switch ports that are down now (cables that failed
//! since), pairing those ports into cables costs, per candidate pairing (at most
//! [`MAX_PAIRINGS`]), a switch graph with its all-pairs distances, `O(S·(S+C))`, and one pass
//! over the tables, `O(S·L)`. Where no pairing explains them (a switch gone), a stand-in switch
//! takes their other ends ([`with_stand_in`]): `O(L·(S+P))` for `L` LIDs in the tables.

use super::{remove_deadlocks, EngineConfig, EngineKind, Routed};
use crate::fabric::{Fabric, PortRef};
use crate::graph::{SwitchDistances, SwitchGraph};
use crate::io::osm_dump::routing_from_dumps;
use crate::routing::{Lft, NO_PATH};

/// Why the switches' tables were not adopted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AdoptError {
    #[error("only dfsssp-rs derives its SLs from the tables (this engine: {0})")]
    Engine(&'static str),
    #[error("the fabric has no usable switch graph: {0}")]
    Fabric(String),
    #[error("switch {0} has no table")]
    NoTable(String),
    #[error("switch {switch} forwards LID {lid} to port {port}, which it does not have")]
    NoSuchPort { switch: String, lid: u16, port: u8 },
    #[error(
        "{entries} entries on {switches} switch(es) forward over ports that are down (the fabric \
         changed since the tables were written)"
    )]
    DownPorts { entries: usize, switches: usize },
    #[error("the tables do not route every destination without a loop: {0}")]
    Incomplete(String),
    #[error("the tables' routes need {0} to be deadlock-free within the lanes")]
    NotLayerable(String),
}

/// The routing the switches' `tables` (node GUID, port per LID from 0) hold for `fabric`, with
/// its layers as `cfg`'s deadlock removal assigns them.
///
/// Where the tables send routes over switch ports that are down now (cables that failed while
/// no master ran, or during the takeover), they are the routing of the fabric with those
/// cables: that fabric is returned with them, so the incremental re-route moves only the
/// routes that crossed them. Two down ports are one cable. Which of more down ports faced which
/// the tables tell by their hops ([`failed_cables`]). Where no pairing explains them (a switch
/// gone with its cables and CAs, or cables the tables do not tell apart), a stand-in switch is
/// put at the ports instead ([`with_stand_in`]), and the re-route moves what entered it; where
/// that does not fit either, refused with [`AdoptError::DownPorts`].
pub fn adopt_tables(
    fabric: Fabric,
    cfg: &EngineConfig,
    tables: &[(u64, Vec<u8>)],
) -> Result<Routed, AdoptError> {
    adopt_tables_how(fabric, cfg, tables).map(|(routed, _)| routed)
}

/// Where an adopted routing's layers come from ([`adopt_tables_how`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayersFrom {
    /// Derived from the tables by the canonical rule ([`derive_layers`]).
    Derived,
    /// The tables' routes need the Up*/Down* escape, so no derivation gives their layers; they
    /// are, entry for entry, this engine's computation from scratch of the fabric with the
    /// cables that failed since, whose layers are taken ([`recomputed`]).
    Recomputed,
}

/// [`adopt_tables`], and where the layers come from.
pub fn adopt_tables_how(
    fabric: Fabric,
    cfg: &EngineConfig,
    tables: &[(u64, Vec<u8>)],
) -> Result<(Routed, LayersFrom), AdoptError> {
    if let Some(known) = without_joined(&fabric, tables) {
        // Nodes that joined since (a CA or switch up during the takeover): the tables are the
        // routing of the fabric without them, and the re-route adds them as it adds any join.
        return adopt_tables_how(known, cfg, tables);
    }
    let derived = |r: Routed| (r, LayersFrom::Derived);
    let refused = match adopt_on(fabric.clone(), cfg, tables) {
        Err(e @ AdoptError::DownPorts { .. }) => e,
        other => return other.map(derived),
    };
    // LIDs nobody holds now that the tables deliver beyond the down ports: a switch is gone
    // there, which no pairing of those ports into cables could be (one may fit the tables' hops,
    // on a fat tree whose ports and GUIDs are shuffled: the cables then route around nothing).
    if let Some((with, tables)) =
        with_stand_in(&fabric, tables, &unlinked_ports_used(&fabric, tables, None))
    {
        return adopt_on(with, cfg, &tables).map(derived);
    }
    let down = down_ports_used(&fabric, tables);
    let Some(cables) = failed_cables(&fabric, tables, &down) else {
        return Err(refused);
    };
    let with = with_cables(fabric, &cables)?;
    match adopt_on(with.clone(), cfg, tables) {
        Err(AdoptError::NotLayerable(why)) => recomputed(with, cfg, tables, why),
        other => other.map(derived),
    }
}

/// Tables refused for their layers (`why`: their routes need the Up*/Down* escape, which no
/// derivation from the routes reproduces) on `fabric`, the fabric with the cables that failed
/// since: where they are, entry for entry, this engine's computation from scratch of that
/// fabric (the master computed them, then the cables failed while no master ran, or during the
/// takeover), that computation is the routing they hold, its layers included, and the re-route
/// that follows moves only what crossed the cables, as after the master's own computation.
/// Otherwise refused (the standby computes from scratch). Not tried where no cable failed: the
/// computation from scratch that follows a refusal is then that very routing, at no more cost.
/// Deterministic where the computation is (a candidate stopped at its time budget may differ:
/// then refused). Cost: a computation from scratch.
fn recomputed(
    fabric: Fabric,
    cfg: &EngineConfig,
    tables: &[(u64, Vec<u8>)],
    why: String,
) -> Result<(Routed, LayersFrom), AdoptError> {
    let refused = |also: &str| AdoptError::NotLayerable(format!("{why}{also}"));
    let out = super::run(&fabric, cfg).map_err(|e| {
        refused(&format!(
            "; this fabric's computation from scratch failed: {e}"
        ))
    })?;
    let routed = Routed::new(fabric, cfg.clone(), out);
    if disagreements(routed.view(), tables) > 0 {
        return Err(refused(
            " (nor are they this fabric's computation from scratch, with the cables that failed \
             since)",
        ));
    }
    Ok((routed, LayersFrom::Recomputed))
}

/// Node (and port) GUID of the stand-in switch ([`with_stand_in`]): not a GUID an IBA vendor
/// assigns (its company ID is all ones), so it meets no real node.
pub const STAND_IN_GUID: u64 = 0xffff_ff00_5354_414e;

/// How a route along the tables from a switch towards one LID ends ([`with_stand_in`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Unknown,
    /// On the walk at hand (met again: a loop).
    Walking,
    /// Delivered after that many switch-to-switch hops.
    Delivered(u32),
    /// Over a port that is down now.
    Down,
    /// No entry, a loop, or a port to nothing that delivers.
    Lost,
}

/// `fabric` with one switch standing in for whatever the `down` ports faced (a switch gone with
/// its cables, several switches or cables the tables do not tell apart), linked to each of them,
/// and `tables` with a table for it; `None` when the tables route no LID to those ports that
/// could be its LID, or the ports are more than a switch has. The routes that enter it are the
/// ones the re-route from the adopted routing moves, as it moves those through a switch that
/// failed under a master: every route over a down port, and no other.
///
/// The stand-in needs a LID (every switch has one): of the LIDs nobody holds now that every
/// switch's table routes to the down ports, the lowest (the gone switch's own, as OpenSM numbers
/// a switch before the CAs behind it); each of the others gets a CA on the stand-in, as the
/// gone switch's CAs had, so that the layers are derived from routes like those the master
/// derived them from. Its table sends every destination to the neighbour whose route from there, as the tables give
/// it, arrives without entering the stand-in again in the fewest hops (ties to the lowest
/// port): what the gone switch forwarded is not known, and changes nothing that stays, since
/// every route through it is re-routed. Only the layers derived for the routes that stay may
/// differ from those the master derived with its real tables (default mode; with
/// `canonical_sls` the layers are derived again from the tables after the re-route).
/// `O(L·(S+P))` for `L` LIDs in the tables and `P` down ports, every switch walked at most once
/// per LID, loops included (for a LID still held, only the routes from the down ports'
/// switches: usually a few hops each).
fn with_stand_in(
    fabric: &Fabric,
    tables: &[(u64, Vec<u8>)],
    down: &[PortRef],
) -> Option<(Fabric, SwitchTables)> {
    use crate::fabric::NodeKind;
    if down.is_empty() {
        return None;
    }
    let by_guid = tables_by_guid(tables);
    let links = fabric.port_table();
    let switch = |n: u32| fabric.nodes()[n as usize].kind == NodeKind::Switch;
    let switches: Vec<u32> = (0..fabric.nodes().len() as u32)
        .filter(|&n| switch(n))
        .collect();
    let table = |n: u32| by_guid.get(&fabric.nodes()[n as usize].guid).copied();
    let entry = |n: u32, lid: usize| table(n).and_then(|t| t.get(lid).copied());
    let is_down = |n: u32, p: u8| down.binary_search(&PortRef { node: n, port: p }).is_ok();
    let held: std::collections::HashMap<usize, (u32, u8)> = delivery_points(fabric).collect();
    // Switch index of every node (switches only), for the walks' marks.
    let mut index = vec![u32::MAX; fabric.nodes().len()];
    for (i, &n) in switches.iter().enumerate() {
        index[n as usize] = i as u32;
    }
    let (mut ends, mut path, mut touched) =
        (vec![End::Unknown; switches.len()], Vec::new(), Vec::new());
    // How the routes to `lid` along the tables from the switches `from` end (in `ends`, by
    // switch index; the others' left Unknown), each switch walked at most once: `O(S)` per LID,
    // loops included, and the few hops of the routes from `from` where they are short.
    let mut follow = |lid: usize, from: &[u32], ends: &mut [End]| {
        for k in touched.drain(..) {
            ends[k] = End::Unknown;
        }
        let target = held.get(&lid).copied();
        for &s in from {
            let mut n = s;
            path.clear();
            // The end, and whether it is the last switch's own (else the next switch's).
            let (mut end, mut at_last) = loop {
                let k = index[n as usize] as usize;
                match ends[k] {
                    End::Unknown => {}
                    End::Walking => break (End::Lost, false),
                    known => break (known, false),
                }
                ends[k] = End::Walking;
                path.push(k);
                touched.push(k);
                let Some(p) = entry(n, lid) else {
                    break (End::Lost, true);
                };
                if target == Some((n, p)) {
                    break (End::Delivered(0), true);
                }
                if is_down(n, p) {
                    break (End::Down, true);
                }
                match links.remote(n as usize, p).filter(|r| switch(r.node)) {
                    Some(r) => n = r.node,
                    None => break (End::Lost, true),
                }
            };
            while let Some(k) = path.pop() {
                if !at_last {
                    if let End::Delivered(h) = end {
                        end = End::Delivered(h + 1);
                    }
                }
                at_last = false;
                ends[k] = end;
            }
        }
    };
    // LIDs nobody holds now that every switch routes to the down ports: the gone switch's own
    // (the lowest) and its CAs'.
    let mut gone = Vec::new();
    let candidates: std::collections::BTreeSet<usize> = (down.iter())
        .filter_map(|d| table(d.node).map(|t| (d.port, t)))
        .flat_map(|(port, t)| (1..t.len()).filter(move |&l| t[l] == port))
        .filter(|l| !held.contains_key(l) && *l <= usize::from(crate::fabric::MAX_UNICAST_LID))
        .collect();
    for l in candidates {
        follow(l, &switches, &mut ends);
        if ends.iter().all(|&e| e == End::Down) {
            gone.push(l);
        }
    }
    let (&lid, cas) = gone.split_first()?;
    let ports = u8::try_from(down.len() + cas.len())
        .ok()
        .filter(|&p| p < u8::MAX)?;
    let len = tables
        .iter()
        .map(|(_, t)| t.len())
        .max()
        .unwrap_or(0)
        .max(lid + 1);
    let mut own = vec![NO_PATH; len];
    own[lid] = 0;
    for (i, &l) in cas.iter().enumerate() {
        own[l] = (down.len() + i + 1) as u8;
    }
    // Every destination to the down port whose switch's route arrives in the fewest hops
    // without entering a down port (ties to the lowest port).
    let mut dests: Vec<usize> = held.keys().copied().filter(|&l| l < len).collect();
    dests.sort_unstable();
    let neighbours: Vec<u32> = down.iter().map(|d| d.node).collect();
    for l in dests {
        follow(l, &neighbours, &mut ends);
        let best = (down.iter().enumerate())
            .filter_map(|(i, d)| match ends[index[d.node as usize] as usize] {
                End::Delivered(h) => Some((h, i)),
                _ => None,
            })
            .min();
        if let Some((_, i)) = best {
            own[l] = i as u8 + 1;
        }
    }
    let mut with = crate::fabric::FabricBuilder::from_fabric(fabric.clone());
    let x = with
        .add_node(
            NodeKind::Switch,
            STAND_IN_GUID,
            ports,
            "stand-in for what the down ports faced (adopted tables)",
        )
        .ok()?;
    for (i, &d) in down.iter().enumerate() {
        let at = PortRef {
            node: x,
            port: i as u8 + 1,
        };
        with.link(d, at).ok()?;
    }
    let lid = u16::try_from(lid).ok()?;
    with.set_lid(PortRef { node: x, port: 0 }, STAND_IN_GUID, lid, 0)
        .ok()?;
    for (i, &l) in cas.iter().enumerate() {
        let guid = STAND_IN_GUID + 1 + i as u64;
        let ca = with
            .add_node(
                NodeKind::Ca,
                guid,
                1,
                "stand-in for a CA gone (adopted tables)",
            )
            .ok()?;
        let at = PortRef { node: ca, port: 1 };
        let on = PortRef {
            node: x,
            port: (down.len() + i + 1) as u8,
        };
        with.link(at, on).ok()?;
        with.set_lid(at, guid, u16::try_from(l).ok()?, 0).ok()?;
    }
    let with = with.build().ok()?;
    let mut tables = tables.to_vec();
    tables.push((STAND_IN_GUID, own));
    Some((with, tables))
}

/// `fabric` with `cables` linked.
fn with_cables(fabric: Fabric, cables: &[Cable]) -> Result<Fabric, AdoptError> {
    let mut with = crate::fabric::FabricBuilder::from_fabric(fabric);
    for &(a, b) in cables {
        with.link(a, b)
            .map_err(|e| AdoptError::Fabric(e.to_string()))?;
    }
    with.build().map_err(|e| AdoptError::Fabric(e.to_string()))
}

/// Switches' tables as read back: (node GUID, port per LID from 0).
type SwitchTables = Vec<(u64, Vec<u8>)>;

/// A cable that failed: the two switch ports it joined.
type Cable = (PortRef, PortRef);

/// At most this many pairings of the down ports are weighed ([`failed_cables`]): 15 is every
/// pairing of three cables' six ends.
const MAX_PAIRINGS: usize = 16;

/// The cables the `down` switch ports (used by `tables`, unlinked in `fabric`) were, if the
/// tables tell it. Two ports: one cable. More: every pairing of them into cables between two
/// different switches is a candidate fabric, and the one on which the fewest table entries take
/// a hop that is not a shortest one wins: the tables of a full computation are minimal on the
/// fabric they were computed for and on no other (a wrong pairing is a shortcut or a detour
/// their hops do not follow). Refused (`None`) when the ports are odd in number (a switch or a
/// CA gone too), when there are more pairings than [`MAX_PAIRINGS`] after pruning by the
/// tables' own evidence (a port faced a switch whose own LIDs it forwarded, or that forwarded
/// the port's switch's LIDs back over its down port), or when two pairings between different
/// switches tie. Parallel cables between the same two switches are one answer whichever way
/// their ports pair: the routes over them are the same. Cost per candidate: a switch graph and
/// its all-pairs distances, `O(S·(S+C))`, and one pass over the tables.
fn failed_cables(
    fabric: &Fabric,
    tables: &[(u64, Vec<u8>)],
    down: &[PortRef],
) -> Option<Vec<Cable>> {
    match down {
        [a, b] => return Some(vec![(*a, *b)]),
        _ if down.is_empty() || down.len() % 2 == 1 => return None,
        _ => {}
    }
    let by_guid = tables_by_guid(tables);
    // The LIDs each switch delivers itself: its own and its CAs'.
    let mut delivered: std::collections::HashMap<u32, Vec<u16>> = Default::default();
    for (lid, (at, _)) in delivery_points(fabric) {
        if let Ok(lid) = u16::try_from(lid) {
            delivered.entry(at).or_default().push(lid);
        }
    }
    let forwards_to = |a: PortRef, b: PortRef| {
        let (Some(table), Some(lids)) = (
            by_guid.get(&fabric.nodes()[a.node as usize].guid),
            delivered.get(&b.node),
        ) else {
            return false;
        };
        lids.iter()
            .any(|&l| table.get(usize::from(l)).copied() == Some(a.port))
    };
    let may_pair =
        |a: PortRef, b: PortRef| a.node != b.node && (forwards_to(a, b) || forwards_to(b, a));
    // Asked once per pair of ports, not once per step of the search below.
    let n = down.len();
    let allowed: Vec<bool> = (0..n * n)
        .map(|k| may_pair(down[k / n], down[k % n]))
        .collect();
    let mut pairings = Vec::new();
    let mut current = Vec::new();
    let mut free = vec![true; n];
    let mut steps = MAX_PAIRING_STEPS;
    let search = PairingSearch {
        down,
        allowed: &allowed,
    };
    if !search.enumerate(&mut free, &mut current, &mut pairings, &mut steps) {
        return None;
    }
    // Parallel cables pair either way: a pairing is told by the switches it joins.
    let switches = |pairing: &[Cable]| {
        let mut key: Vec<(u32, u32)> = (pairing.iter())
            .map(|(a, b)| (a.node.min(b.node), a.node.max(b.node)))
            .collect();
        key.sort_unstable();
        key
    };
    // (Entries off a shortest hop, index of the pairing.)
    let mut best: Option<(usize, usize)> = None;
    let mut tied = false;
    for (i, pairing) in pairings.iter().enumerate() {
        let Ok(candidate) = with_cables(fabric.clone(), pairing) else {
            continue;
        };
        let Some(off) = off_shortest(&candidate, &by_guid) else {
            continue;
        };
        match best {
            Some((o, j)) if off == o => tied |= switches(&pairings[j]) != switches(pairing),
            Some((o, _)) if off > o => {}
            _ => {
                tied = false;
                best = Some((off, i));
            }
        }
    }
    match best {
        Some((_, i)) if !tied => Some(pairings.swap_remove(i)),
        _ => None,
    }
}

/// Steps (partial pairings extended) the search for pairings may take: where the tables allow
/// many pairs but few pairings complete (the ports around a switch that is gone), the search
/// would otherwise try exponentially many partial ones (the 18-ary 3-tree without a middle
/// switch, 36 ports: minutes). Past it the ports are not told apart.
const MAX_PAIRING_STEPS: usize = 1 << 16;

/// The search for pairings of `down` ports (`allowed[i * n + j]`: whether ports `i` and `j`
/// may have been one cable).
struct PairingSearch<'a> {
    down: &'a [PortRef],
    allowed: &'a [bool],
}

impl PairingSearch<'_> {
    /// Every pairing of the `free` ports into allowed pairs, appended to `out`; false once more
    /// than [`MAX_PAIRINGS`] are found or `steps` run out.
    fn enumerate(
        &self,
        free: &mut [bool],
        current: &mut Vec<Cable>,
        out: &mut Vec<Vec<Cable>>,
        steps: &mut usize,
    ) -> bool {
        let Some(left) = steps.checked_sub(1) else {
            return false;
        };
        *steps = left;
        let Some(i) = free.iter().position(|&f| f) else {
            out.push(current.clone());
            return out.len() <= MAX_PAIRINGS;
        };
        let n = self.down.len();
        free[i] = false;
        for j in i + 1..n {
            if !free[j] || !self.allowed[i * n + j] {
                continue;
            }
            free[j] = false;
            current.push((self.down[i], self.down[j]));
            let more = self.enumerate(free, current, out, steps);
            current.pop();
            free[j] = true;
            if !more {
                return false;
            }
        }
        free[i] = true;
        true
    }
}

/// How many table entries of `fabric`'s switches for its destinations do not take a hop one
/// closer to the destination's switch (or deliver there); `None` without a switch graph or a
/// table for each switch.
fn off_shortest(fabric: &Fabric, by_guid: &std::collections::HashMap<u64, &[u8]>) -> Option<usize> {
    use rayon::prelude::*;
    let g = SwitchGraph::new(fabric).ok()?;
    let dist = SwitchDistances::new(&g);
    let tables: Vec<&[u8]> = (0..g.num_switches() as u32)
        .map(|s| by_guid.get(&g.switch_guid(s)).copied())
        .collect::<Option<_>>()?;
    let off = (0..g.num_switches() as u32)
        .into_par_iter()
        .map(|s| {
            let table = tables[s as usize];
            g.dests()
                .iter()
                .filter(|d| d.switch != crate::graph::NO_SWITCH)
                .filter(|d| {
                    let port = table.get(usize::from(d.lid)).copied().unwrap_or(NO_PATH);
                    if d.switch == s {
                        return port != d.exit_port;
                    }
                    let to = dist.to(d.switch);
                    g.channel_at(s, port).is_none_or(|c| {
                        let h = g.chan_head()[c as usize];
                        u32::from(to[h as usize]) + 1 != u32::from(to[s as usize])
                    })
                })
                .count()
        })
        .sum();
    Some(off)
}

/// The switch ports, unlinked in `fabric`, that `tables` forward some LID of `fabric` over.
fn down_ports_used(fabric: &Fabric, tables: &[(u64, Vec<u8>)]) -> Vec<PortRef> {
    let lids: Vec<usize> = delivery_points(fabric).map(|(lid, _)| lid).collect();
    unlinked_ports_used(fabric, tables, Some(&lids))
}

/// The switch ports, unlinked in `fabric`, that `tables` forward one of `lids` over (`None`: any
/// LID, also those of CAs and switches gone; they were linked when the tables were written).
/// Sorted.
fn unlinked_ports_used(
    fabric: &Fabric,
    tables: &[(u64, Vec<u8>)],
    lids: Option<&[usize]>,
) -> Vec<PortRef> {
    use crate::fabric::NodeKind;
    let linked = fabric.port_table();
    let by_guid = tables_by_guid(tables);
    let mut ports = Vec::new();
    for (node, n) in fabric.nodes().iter().enumerate() {
        let Some(table) = by_guid.get(&n.guid).filter(|_| n.kind == NodeKind::Switch) else {
            continue;
        };
        let mut used = [false; 256];
        match lids {
            Some(lids) => lids
                .iter()
                .filter_map(|&l| table.get(l))
                .for_each(|&p| used[usize::from(p)] = true),
            None => table.iter().for_each(|&p| used[usize::from(p)] = true),
        }
        for port in 1..=n.num_ports {
            if used[usize::from(port)] && linked.remote(node, port).is_none() {
                ports.push(PortRef {
                    node: node as u32,
                    port,
                });
            }
        }
    }
    ports
}

/// `tables` (node GUID, port per LID) by node GUID.
fn tables_by_guid(tables: &[(u64, Vec<u8>)]) -> std::collections::HashMap<u64, &[u8]> {
    tables.iter().map(|(g, t)| (*g, t.as_slice())).collect()
}

/// Every LID `fabric` delivers now, with where: the switch, and the port to its CA (0 for the
/// switch's own LID). A CA linked to no switch delivers nothing.
fn delivery_points(fabric: &Fabric) -> impl Iterator<Item = (usize, (u32, u8))> + '_ {
    let links = fabric.port_table();
    let switch = |n: u32| fabric.nodes()[n as usize].kind == crate::fabric::NodeKind::Switch;
    fabric.endpoints().iter().flat_map(move |e| {
        let at = match switch(e.node) {
            true => Some((e.node, 0)),
            false => links
                .remote(e.node as usize, e.port)
                .filter(|r| switch(r.node))
                .map(|r| (r.node, r.port)),
        };
        at.into_iter()
            .flat_map(move |at| e.lids().map(move |lid| (lid as usize, at)))
    })
}

/// `fabric` without the nodes that joined since the tables were written, if any: the CAs and
/// switches none of whose LIDs any table routes (an entry to a port, or to port 0 of the switch
/// that holds the LID: a switch's table that was never programmed, all zeros, routes nothing
/// else). `None` where every node has a routed LID, or where no switch would be left.
/// `O(S·L)`.
fn without_joined(fabric: &Fabric, tables: &[(u64, Vec<u8>)]) -> Option<Fabric> {
    use crate::fabric::NodeKind;
    // (switch GUID, LID) of every switch's own LIDs.
    let own: std::collections::HashSet<(u64, u32)> = (fabric.endpoints().iter())
        .filter(|e| fabric.nodes()[e.node as usize].kind == NodeKind::Switch)
        .flat_map(|e| {
            e.lids()
                .map(move |l| (fabric.nodes()[e.node as usize].guid, l))
        })
        .collect();
    let mut routed = vec![false; usize::from(fabric.max_lid()) + 1];
    for (guid, table) in tables {
        for (lid, &port) in table.iter().enumerate().take(routed.len()).skip(1) {
            if port != NO_PATH && (port != 0 || own.contains(&(*guid, lid as u32))) {
                routed[lid] = true;
            }
        }
    }
    // Per node: whether it holds a LID, and whether a table routes one of them.
    let (mut holds, mut reached) = (
        vec![false; fabric.nodes().len()],
        vec![false; fabric.nodes().len()],
    );
    for e in fabric.endpoints() {
        let n = e.node as usize;
        holds[n] = true;
        reached[n] |= e
            .lids()
            .any(|l| routed.get(l as usize).copied().unwrap_or(false));
    }
    let joined: Vec<bool> = holds.iter().zip(&reached).map(|(&h, &r)| h && !r).collect();
    let switches_left = (0..fabric.nodes().len())
        .filter(|&n| fabric.nodes()[n].kind == NodeKind::Switch && !joined[n])
        .count();
    if !joined.contains(&true) || switches_left == 0 {
        return None;
    }
    let by_guid: std::collections::HashSet<u64> = (0..fabric.nodes().len())
        .filter(|&n| joined[n])
        .map(|n| fabric.nodes()[n].guid)
        .collect();
    Some(fabric.retain(|n| !by_guid.contains(&n.guid), |_| true))
}

/// [`adopt_tables`] on `fabric` as it is.
fn adopt_on(
    fabric: Fabric,
    cfg: &EngineConfig,
    tables: &[(u64, Vec<u8>)],
) -> Result<Routed, AdoptError> {
    if cfg.kind != EngineKind::Dfsssp {
        return Err(AdoptError::Engine(cfg.kind.name()));
    }
    let graph = SwitchGraph::new(&fabric).map_err(|e| AdoptError::Fabric(e.to_string()))?;
    let mut lft = Lft::new(graph.num_switches(), graph.max_lid());
    let by_guid = tables_by_guid(tables);
    let (mut down, mut down_switches) = (0, 0);
    for s in 0..graph.num_switches() as u32 {
        let down_before = down;
        let table = by_guid
            .get(&graph.switch_guid(s))
            .ok_or_else(|| AdoptError::NoTable(graph.switch_label(s)))?;
        let ports = fabric.nodes()[graph.switch_node()[s as usize] as usize].num_ports;
        // Destination LIDs only: an entry for a LID nobody holds now routes nothing, nor does
        // one for a LID no switch delivers (a CA whose switch is gone).
        for dest in graph.dests() {
            let lid = dest.lid;
            if dest.switch == crate::graph::NO_SWITCH {
                continue;
            }
            let port = table.get(usize::from(lid)).copied().unwrap_or(NO_PATH);
            if port != NO_PATH && port > ports {
                return Err(AdoptError::NoSuchPort {
                    switch: graph.switch_label(s),
                    lid,
                    port,
                });
            }
            // A port to another switch that has no channel now, or a CA's port elsewhere.
            let delivers = dest.switch == s && dest.exit_port == port;
            if port != NO_PATH && !delivers && graph.channel_at(s, port).is_none() {
                down += 1;
            }
            lft.set(s, lid, port);
        }
        down_switches += usize::from(down > down_before);
    }
    if down > 0 {
        return Err(AdoptError::DownPorts {
            entries: down,
            switches: down_switches,
        });
    }
    let (routing, verified, sl_offset) = derive_layers(&graph, lft, cfg)?;
    Ok(Routed::read_back_verified(
        fabric,
        graph,
        routing,
        cfg.clone(),
        sl_offset,
        verified,
    ))
}

/// The canonical rule: the routes `lft` holds, with the layers `cfg`'s deadlock removal assigns
/// them (cycle breaking within the lane budget), verified in full; with the SL offset of layer 0.
/// What a standby derives from the switches' tables, and what a master with
/// [`super::RerouteConfig::canonical_layers`] answers. A function of the graph and the tables
/// only. Cost: a full computation's deadlock removal and verification.
///
/// No route that carries data changes. Deadlock removal may change the others, as it does after
/// a computation, and the tables are taken with those changes ([`disagreements`] with the input
/// counts them): routes to switch LIDs re-chosen among the minimal ones (hops kept) where that
/// fits the lanes, and, where every data route (from a switch with CAs to a CA LID, and each
/// route those pass through) is legal under one Up*/Down* order, the others made legal too and
/// the layer spread over the lanes (`dfsssp`'s one lane). A fat tree re-routed incrementally
/// after a cable fault needs them: its layers cycle through such routes (a switch above the
/// leaves turns down, then up). Those tables derive to the same layers again. Any other change
/// is refused: where cycle breaking needs more than the lanes, before the Up*/Down* escape
/// runs (it would move data routes). Such tables (a faulty torus, a random fabric) are then
/// routed from scratch, which on an unchanged fabric gives the master's own routing (the
/// `adopt` bench checks it).
pub(crate) fn derive_layers(
    graph: &SwitchGraph,
    lft: Lft,
    cfg: &EngineConfig,
) -> Result<(crate::routing::Routing, crate::verify::VerifyReport, u8), AdoptError> {
    let dist = SwitchDistances::new(graph);
    // SSSP's tables are minimal: their hops are the distances, checked entry by entry.
    let mut routing = match crate::routing::minimal_hops(graph, &lft, &dist) {
        Some(hops) => crate::routing::Routing {
            lft,
            hops,
            layers: None,
            num_layers: 1,
        },
        None => routing_from_dumps(graph, lft, None),
    };
    let before = routing.lft.clone();
    // (Broken routes fail here or in the verification below.)
    let (report, sl_offset) = match remove_deadlocks(graph, &mut routing, cfg, &dist, true) {
        Err(e @ crate::dfsssp::DfssspError::EscapeRefused { .. }) => {
            return Err(AdoptError::NotLayerable(e.to_string()))
        }
        other => other.map_err(|e| AdoptError::Incomplete(e.to_string()))?,
    };
    let made_legal = (report.one_lane.as_ref()).and_then(|o| o.legal_rerouted);
    let only_switch_lids = || {
        (0..graph.num_switches() as u32).all(|s| {
            let (now, was) = (routing.lft.table(s), before.table(s));
            (graph.dests().iter())
                .all(|d| d.exit_port == 0 || now[usize::from(d.lid)] == was[usize::from(d.lid)])
        })
    };
    // (Where cycle breaking needs more than the lanes, the escape would move data routes: it
    // was refused above before it ran.)
    if made_legal.is_none() && routing.lft != before && !only_switch_lids() {
        return Err(AdoptError::NotLayerable(format!(
            "other routes (more than {} layer(s) by cycle breaking)",
            report.budget
        )));
    }
    let verified = crate::verify::verify_and_load(graph, &routing)
        .map_err(|e| AdoptError::Incomplete(e.to_string()))?;
    Ok((routing, verified, sl_offset))
}

/// How many entries of `routed`'s tables (its switches, its destination LIDs) the switches'
/// `tables` (node GUID, port per LID from 0) hold otherwise, or not at all: 0 when a routing
/// kept by this SM (its state file, its own earlier mastership) is what the switches hold, so
/// it may be continued as it is. `O(S * L)`.
pub fn disagreements(routed: super::RoutedRef<'_>, tables: &[(u64, Vec<u8>)]) -> usize {
    let by_guid = tables_by_guid(tables);
    let g = routed.graph;
    (0..g.num_switches() as u32)
        .map(|s| {
            let held = by_guid.get(&g.switch_guid(s)).copied().unwrap_or(&[]);
            let ours = routed.routing.lft.table(s);
            g.dests()
                .iter()
                .filter(|d| {
                    let lid = usize::from(d.lid);
                    held.get(lid).copied().unwrap_or(NO_PATH) != ours[lid]
                })
                .count()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ports every pair of which may have been a cable, but one that pairs with none, the last
    /// to be paired: no pairing completes, and every partial one of the others (23!! of them
    /// here) would be tried. The search stops after its steps and says the ports are not told
    /// apart.
    #[test]
    fn the_search_for_pairings_is_bounded() {
        let n = 24;
        let down: Vec<PortRef> = (0..n as u32)
            .map(|node| PortRef { node, port: 1 })
            .collect();
        let allowed: Vec<bool> = (0..n * n)
            .map(|k| (k / n != k % n) && k / n != n - 1 && k % n != n - 1)
            .collect();
        let search = PairingSearch {
            down: &down,
            allowed: &allowed,
        };
        let (mut free, mut current, mut out) = (vec![true; n], Vec::new(), Vec::new());
        let mut steps = MAX_PAIRING_STEPS;
        assert!(!search.enumerate(&mut free, &mut current, &mut out, &mut steps));
        assert_eq!(steps, 0);
        assert!(out.is_empty());
        // Four ports, two ways to pair them: both found, within the steps.
        let allowed: Vec<bool> = (0..16)
            .map(|k| k / 4 != k % 4 && (k / 4 + k % 4) != 3)
            .collect();
        let search = PairingSearch {
            down: &down[..4],
            allowed: &allowed,
        };
        let (mut free, mut current, mut out) = (vec![true; 4], Vec::new(), Vec::new());
        let mut steps = MAX_PAIRING_STEPS;
        assert!(search.enumerate(&mut free, &mut current, &mut out, &mut steps));
        assert_eq!(out.len(), 2, "{out:?}");
    }
}
