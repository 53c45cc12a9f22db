//! OpenSM's dump files (written into `dump_files_dir` when the routing log flag 0x40 is on, e.g.
//! `-D 0x43`): `opensm-subnet.lst` (the fabric), `opensm-lfts.dump` (every switch's LFT), and the
//! path-SL dump `opensm-path-sl.dump` (`0x<source CA node GUID> <DLID> <SL>` per line, the format
//! `ibdmchk -c` reads). With them `eval` can judge the routing of any engine, stock or ours.
//!
//! The writers here produce the path-SL dump and the LFT file OpenSM's stock `file` routing engine
//! loads (`-R file -U FILE`, option `lfts_file`), from a [`Fabric`], its [`SwitchGraph`] and a
//! [`Routing`].

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{parse_hex_u64, Ctx, IoError};
use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

// ------------------------------------------------------------------------------------------------
// opensm-subnet.lst

/// One `{ ... }` half of a subnet.lst line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Half {
    kind: NodeKind,
    num_ports: u8,
    node_guid: u64,
    port_guid: u64,
    desc: String,
    lid: u16,
    port: u8,
}

fn field<'a>(seg: &'a str, key: &str) -> Option<&'a str> {
    let i = seg.find(key)? + key.len();
    let rest = &seg[i..];
    let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Parses `{ SW-SM Ports:08 SystemGUID:.. NodeGUID:.. PortGUID:.. VenID:.. DevID:.. Rev:.. {desc}
/// LID:0001 PN:01 }` starting at `s`; returns the half and the rest after its closing brace.
fn parse_half(s: &str) -> Result<(Half, &str), String> {
    let s = s.trim_start();
    let s = s.strip_prefix('{').ok_or("expected '{'")?;
    // the description sits between " {" after Rev: and "} LID:"
    let rev = s.find(" Rev:").ok_or("missing Rev:")?;
    let open = s[rev..].find('{').ok_or("missing {description}")? + rev;
    let close = s[open..].find("} LID:").ok_or("missing '} LID:'")? + open;
    let head = &s[..open];
    let desc = s[open + 1..close].trim().to_string();
    let tail = &s[close + 1..];
    let end = tail.find('}').ok_or("missing closing '}'")?;
    let after = &tail[end + 1..];
    let tail = &tail[..end];

    let kind_tok = head.split_whitespace().next().ok_or("missing node type")?;
    let kind = match kind_tok.trim_end_matches("-SM") {
        "SW" => NodeKind::Switch,
        "CA" => NodeKind::Ca,
        "Rt" => NodeKind::Router,
        other => return Err(format!("unknown node type \"{other}\"")),
    };
    let hex = |key: &str| -> Result<u64, String> {
        let v = field(head, key).ok_or_else(|| format!("missing {key}"))?;
        parse_hex_u64(v).ok_or_else(|| format!("bad {key} \"{v}\""))
    };
    let num_ports = hex("Ports:")?;
    if num_ports == 0 || num_ports > 255 {
        return Err(format!("bad port count {num_ports}"));
    }
    let node_guid = hex("NodeGUID:")?;
    let port_guid = hex("PortGUID:")?;
    let lid = field(tail, "LID:")
        .and_then(parse_hex_u64)
        .ok_or("bad LID")?;
    let port = field(tail, "PN:").and_then(parse_hex_u64).ok_or("bad PN")?;
    if lid > 0xFFFF || port == 0 || port > num_ports {
        return Err(format!("LID 0x{lid:x} or port {port} out of range"));
    }
    Ok((
        Half {
            kind,
            num_ports: num_ports as u8,
            node_guid,
            port_guid,
            desc,
            lid: lid as u16,
            port: port as u8,
        },
        after,
    ))
}

/// Parses opensm-subnet.lst into a [`Fabric`] built the way the OpenSM adapter builds one from
/// OpenSM's tables: nodes in the order of OpenSM's node GUID map, links from the end with the
/// smaller (node, port), endpoints in the order of the port GUID map. The file holds no LMC:
/// pass the subnet's (`lmc` option, or [`infer_lmc`] on opensm-lfts.dump); switches get LMC 0.
/// Ports with LID 0 get no LID, like the adapter.
pub fn parse_subnet_lst(text: &str, file: &str, lmc: u8) -> Result<Fabric, IoError> {
    let ctx = Ctx { file };
    if lmc > 7 {
        return Err(ctx.err(1, "", format!("LMC {lmc} above 7")));
    }
    let mut lst = SubnetLst::default();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (a, rest) = parse_half(line).map_err(|why| ctx.err(lineno, line, why))?;
        let (b, rest) = parse_half(rest).map_err(|why| ctx.err(lineno, line, why))?;
        if !rest.trim_start().starts_with("PHY=") && !rest.trim().is_empty() {
            return Err(ctx.err(lineno, line, "unexpected text after the two ports"));
        }
        let at = LineAt { ctx, lineno, line };
        for h in [&a, &b] {
            lst.add_port(at, h)?;
        }
        if a.node_guid == b.node_guid && a.port == b.port {
            return Err(ctx.err(lineno, line, "port linked to itself"));
        }
        lst.add_link(at, &a, &b)?;
    }
    lst.build(ctx, text, lmc)
}

/// A subnet.lst node as its lines describe it.
struct NodeInfo {
    kind: NodeKind,
    ports: u8,
    desc: String,
    line: usize,
}

/// A line being read, for its errors.
#[derive(Clone, Copy)]
struct LineAt<'a> {
    ctx: Ctx<'a>,
    lineno: usize,
    line: &'a str,
}

impl LineAt<'_> {
    /// The error `why` at this line.
    fn err(&self, why: impl Into<String>) -> IoError {
        self.ctx.err(self.lineno, self.line, why)
    }
}

/// What subnet.lst's lines said so far, each fact checked against the lines before.
#[derive(Default)]
struct SubnetLst {
    nodes: HashMap<u64, NodeInfo>,
    /// (node guid, port) -> (remote guid, remote port, line)
    remote: HashMap<(u64, u8), (u64, u8, usize)>,
    /// (node guid, port) -> (port guid, base LID, line); switches use port 0
    lids: HashMap<(u64, u8), (u64, u16, usize)>,
}

impl SubnetLst {
    /// One half's node and port (LID, port GUID), consistent with earlier lines.
    fn add_port(&mut self, at: LineAt<'_>, h: &Half) -> Result<(), IoError> {
        let lineno = at.lineno;
        match self.nodes.get(&h.node_guid) {
            Some(n) if n.kind != h.kind || n.ports != h.num_ports => {
                return Err(at.err(format!(
                    "node 0x{:016x} described differently on line {}",
                    h.node_guid, n.line
                )));
            }
            Some(_) => {}
            None => {
                self.nodes.insert(
                    h.node_guid,
                    NodeInfo {
                        kind: h.kind,
                        ports: h.num_ports,
                        desc: h.desc.clone(),
                        line: lineno,
                    },
                );
            }
        }
        let key = (
            h.node_guid,
            if h.kind == NodeKind::Switch {
                0
            } else {
                h.port
            },
        );
        match self.lids.get(&key) {
            Some(&(g, l, ln)) if (g, l) != (h.port_guid, h.lid) && h.kind != NodeKind::Switch => {
                return Err(at.err(format!(
                    "port {} of 0x{:016x}: LID/GUID differ from line {ln}",
                    key.1, key.0
                )));
            }
            Some(&(_, l, ln)) if l != h.lid => {
                return Err(at.err(format!(
                    "switch 0x{:016x}: LID differs from line {ln}",
                    key.0
                )));
            }
            Some(_) => {}
            None => {
                self.lids.insert(key, (h.port_guid, h.lid, lineno));
            }
        }
        Ok(())
    }

    /// The link between halves `a` and `b`, which neither port may have elsewhere.
    fn add_link(&mut self, at: LineAt<'_>, a: &Half, b: &Half) -> Result<(), IoError> {
        let lineno = at.lineno;
        for (x, y) in [(a, b), (b, a)] {
            let prev = self
                .remote
                .insert((x.node_guid, x.port), (y.node_guid, y.port, lineno));
            if let Some((g, p, ln)) = prev {
                if (g, p) != (y.node_guid, y.port) {
                    return Err(at.err(format!(
                        "port {} of 0x{:016x} is linked elsewhere on line {ln}",
                        x.port, x.node_guid
                    )));
                }
            }
        }
        Ok(())
    }

    /// The fabric, built the way the OpenSM adapter builds one from OpenSM's tables.
    fn build(self, ctx: Ctx<'_>, text: &str, lmc: u8) -> Result<Fabric, IoError> {
        let SubnetLst {
            nodes,
            remote,
            lids,
        } = self;
        // OpenSM's qmaps are keyed by the GUID in network byte order, compared as a host integer.
        let qmap_key = |g: u64| g.to_be();
        let mut guids: Vec<u64> = nodes.keys().copied().collect();
        guids.sort_unstable_by_key(|&g| qmap_key(g));
        let mut b = FabricBuilder::new();
        let mut index: HashMap<u64, u32> = HashMap::with_capacity(guids.len());
        for &g in &guids {
            let n = &nodes[&g];
            let idx = b
                .add_node(n.kind, g, n.ports, n.desc.clone())
                .map_err(|e| ctx.fabric(n.line, e))?;
            index.insert(g, idx);
        }
        let mut ports: Vec<_> = remote.iter().collect();
        ports.sort_unstable_by_key(|((g, p), _)| (index[g], *p));
        for ((g, p), (rg, rp, ln)) in ports {
            let (a, r) = (index[g], index[rg]);
            if (a, *p) < (r, *rp) {
                b.link(
                    PortRef { node: a, port: *p },
                    PortRef { node: r, port: *rp },
                )
                .map_err(|e| ctx.fabric(*ln, e))?;
            }
        }
        let mut eps: Vec<_> = lids.iter().collect();
        eps.sort_unstable_by_key(|(_, (pg, ..))| qmap_key(*pg));
        for ((g, p), (pg, lid, ln)) in eps {
            if *lid == 0 {
                continue;
            }
            let l = if *p == 0 { 0 } else { lmc };
            b.set_lid(
                PortRef {
                    node: index[g],
                    port: *p,
                },
                *pg,
                *lid,
                l,
            )
            .map_err(|e| ctx.fabric(*ln, e))?;
        }
        let last = text.lines().count().max(1);
        b.build().map_err(|e| ctx.fabric(last, e))
    }
}

// ------------------------------------------------------------------------------------------------
// opensm-lfts.dump (also the `file` routing engine's input)

/// LFTs read from opensm-lfts.dump, indexed like the fabric's [`SwitchGraph`].
#[derive(Clone, Debug)]
pub struct LftDump {
    pub lft: Lft,
    /// Switches of the fabric without a block in the file (their tables stay NO_PATH), by GUID.
    pub switches_missing: Vec<u64>,
    /// Entries for LIDs above the fabric's highest LID (ignored).
    pub beyond_max_lid: usize,
}

fn after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.find(key).map(|i| &s[i + key.len()..])
}

fn hex_token(s: &str) -> Option<u64> {
    let end = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
    parse_hex_u64(&s[..end])
}

/// Parses opensm-lfts.dump (or a file in the same format, as the `file` engine loads) against the
/// fabric's switch graph: blocks start with `Unicast lids [0-MAX] of switch Lid L guid 0xGUID
/// ('desc'):`, entries are `0xLID PORT # ...`. Lines starting with `#` and the `N lids dumped`
/// trailers are skipped. A switch GUID not in the fabric, a port the switch does not have, or an
/// entry before any block is an error naming the line.
pub fn parse_lfts(text: &str, file: &str, f: &Fabric, g: &SwitchGraph) -> Result<LftDump, IoError> {
    let ctx = Ctx { file };
    let mut lft = Lft::new(g.num_switches(), g.max_lid());
    let guid_switch: HashMap<u64, u32> = g
        .switch_node()
        .iter()
        .enumerate()
        .map(|(s, &n)| (f.nodes()[n as usize].guid, s as u32))
        .collect();
    let mut seen = vec![false; g.num_switches()];
    let mut cur: Option<u32> = None;
    let mut beyond = 0usize;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let p = line.trim_start();
        if p.is_empty() || p.starts_with('#') || p.ends_with("lids dumped") {
            continue;
        }
        if p.starts_with("Multicast mlids") {
            return Err(ctx.err(lineno, line, "a multicast dump, not unicast LFTs"));
        }
        if p.starts_with("Unicast lids") {
            let guid = after(p, " guid 0x")
                .and_then(hex_token)
                .ok_or_else(|| ctx.err(lineno, line, "cannot parse switch GUID"))?;
            let s = ctx.switch_of(lineno, line, &guid_switch, guid)?;
            if seen[s as usize] {
                return Err(ctx.err(
                    lineno,
                    line,
                    format!("second block for switch 0x{guid:016x}"),
                ));
            }
            seen[s as usize] = true;
            cur = Some(s);
            continue;
        }
        let Some(rest) = p.strip_prefix("0x") else {
            return Err(ctx.err(
                lineno,
                line,
                "expected a switch header or a 0xLID PORT entry",
            ));
        };
        let s = cur.ok_or_else(|| ctx.err(lineno, line, "LFT entry before any switch header"))?;
        let mut it = rest.split_whitespace();
        let lid = it
            .next()
            .and_then(|t| u32::from_str_radix(t, 16).ok())
            .filter(|&l| l <= 0xFFFF)
            .ok_or_else(|| ctx.err(lineno, line, "cannot parse LID"))?;
        let port: u32 = it
            .next()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| ctx.err(lineno, line, "cannot parse port"))?;
        let nports = u32::from(f.nodes()[g.switch_node()[s as usize] as usize].num_ports);
        if port > nports && port != u32::from(NO_PATH) {
            return Err(ctx.err(
                lineno,
                line,
                format!("switch has no port {port} (it has {nports})"),
            ));
        }
        if lid > u32::from(g.max_lid()) {
            beyond += 1;
            continue;
        }
        lft.set(s, lid as u16, port as u8);
    }
    let switches_missing = (0..g.num_switches())
        .filter(|&s| !seen[s])
        .map(|s| f.nodes()[g.switch_node()[s] as usize].guid)
        .collect();
    Ok(LftDump {
        lft,
        switches_missing,
        beyond_max_lid: beyond,
    })
}

/// The LMC of CA ports, from the number of LIDs opensm-lfts.dump attributes to one CA or router
/// port GUID in the first switch block (None when the file shows no CA).
pub fn infer_lmc(lfts_text: &str) -> Option<u8> {
    let mut counts: HashMap<u64, u32> = HashMap::new();
    let mut blocks = 0;
    for line in lfts_text.lines() {
        let p = line.trim_start();
        if p.starts_with("Unicast lids") {
            blocks += 1;
            if blocks > 1 {
                break;
            }
        } else if p.starts_with("0x")
            && (p.contains("Channel Adapter portguid") || p.contains("Router portguid"))
        {
            if let Some(g) = after(p, " portguid 0x").and_then(hex_token) {
                *counts.entry(g).or_default() += 1;
            }
        }
    }
    let max = counts.values().copied().max()?;
    Some(max.max(1).ilog2().min(7) as u8)
}

/// OpenSM's name for a node type in its dumps (`ib_get_node_type_str`).
fn node_type_str(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Switch => "Switch",
        NodeKind::Ca => "Channel Adapter",
        NodeKind::Router => "Router",
    }
}

/// Writes LFTs in opensm-lfts.dump's format, which OpenSM's stock `file` routing engine loads
/// (`opensm -R file -U FILE`, or `routing_engine file` with `lfts_file FILE`). Each entry carries
/// the destination port GUID so that the engine remaps LIDs if OpenSM assigned different ones.
/// Switch blocks come in switch id order; NO_PATH entries are left out (the engine starts each
/// switch from an all-NO_PATH table).
pub fn write_lfts(f: &Fabric, g: &SwitchGraph, lft: &Lft) -> String {
    let mut out = String::with_capacity(g.num_switches() * (usize::from(g.max_lid()) + 2) * 60);
    let max_lid = lft.max_lid.min(g.max_lid());
    for s in 0..g.num_switches() as u32 {
        let node = &f.nodes()[g.switch_node()[s as usize] as usize];
        let own = f
            .endpoints()
            .iter()
            .find(|e| e.node == g.switch_node()[s as usize] && e.port == 0)
            .map_or(0, |e| e.base_lid);
        let _ = writeln!(
            out,
            "Unicast lids [0-{max_lid}] of switch Lid {own} guid 0x{:016x} ('{}'):",
            node.guid,
            super::ibsim::clean_desc(&node.description, 64).replace('\'', "`")
        );
        let mut n = 0usize;
        for lid in 0..=max_lid {
            let port = lft.port(s, lid);
            if port == NO_PATH {
                continue;
            }
            let _ = write!(out, "0x{lid:04x} {port:03} # ");
            match g.dest_of_lid(lid) {
                Some(d) => {
                    let e = &f.endpoints()[d.endpoint as usize];
                    let dn = &f.nodes()[e.node as usize];
                    let _ = writeln!(
                        out,
                        "{} portguid 0x{:016x}: '{}'",
                        node_type_str(dn.kind),
                        e.port_guid,
                        super::ibsim::clean_desc(&dn.description, 64).replace('\'', "`")
                    );
                }
                None => out.push_str("unknown node and type\n"),
            }
            n += 1;
        }
        let _ = writeln!(out, "{n} lids dumped");
    }
    out
}

// ------------------------------------------------------------------------------------------------
// path-SL dump

/// Two path-SL lines that give one path (source switch, DLID) different SLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSlConflict {
    pub switch_guid: u64,
    pub dlid: u16,
    pub first_line: usize,
    pub first_sl: u8,
    pub line: usize,
    pub sl: u8,
}

/// Layers read from a path-SL dump, per (source switch, DLID).
#[derive(Clone, Debug)]
pub struct PathSlDump {
    pub layers: SwitchLidTable,
    /// Highest SL + 1 (1 for an empty file).
    pub num_layers: u8,
    /// Paths given different SLs by different source CAs on the same switch (the first one wins).
    pub conflicts: Vec<PathSlConflict>,
    /// (source switch, DLID) pairs of terminal-bearing switches that no line covers (layer 0).
    pub missing: usize,
}

/// Parses a path-SL dump against the fabric: every source GUID must be a CA/router node of the
/// fabric and every DLID a LID of the fabric; SLs are 0..=15.
pub fn parse_path_sl(
    text: &str,
    file: &str,
    f: &Fabric,
    g: &SwitchGraph,
) -> Result<PathSlDump, IoError> {
    let ctx = Ctx { file };
    // node GUID -> switches its ports hang off
    let mut node_switches: HashMap<u64, Vec<u32>> = HashMap::new();
    for &(ep, sw) in g.terminals() {
        let guid = f.nodes()[f.endpoints()[ep as usize].node as usize].guid;
        let v = node_switches.entry(guid).or_default();
        if !v.contains(&sw) {
            v.push(sw);
        }
    }
    let known: std::collections::HashSet<u64> = f
        .nodes()
        .iter()
        .filter(|n| n.kind != NodeKind::Switch)
        .map(|n| n.guid)
        .collect();
    const UNSET: u8 = 0xFF;
    let mut layers = SwitchLidTable::new(g.num_switches(), g.max_lid(), UNSET);
    // line that set each entry, for conflict reports: (switch, lid) -> line
    let mut set_by: HashMap<(u32, u16), usize> = HashMap::new();
    let mut conflicts = Vec::new();
    let mut max_sl = 0u8;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut it = t.split_whitespace();
        let (Some(gs), Some(ls), Some(ss), None) = (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(ctx.err(lineno, line, "expected 0xGUID DLID SL"));
        };
        if !gs.starts_with("0x") && !gs.starts_with("0X") {
            return Err(ctx.err(lineno, line, "source GUID must be 0x-prefixed hex"));
        }
        let guid = parse_hex_u64(gs).ok_or_else(|| ctx.err(lineno, line, "bad source GUID"))?;
        let lid: u16 = ls.parse().map_err(|_| ctx.err(lineno, line, "bad DLID"))?;
        let sl: u8 = ss
            .parse()
            .ok()
            .filter(|&s| s <= 15)
            .ok_or_else(|| ctx.err(lineno, line, "bad SL (0..=15)"))?;
        if !known.contains(&guid) {
            return Err(ctx.err(
                lineno,
                line,
                format!("0x{guid:016x} is not a CA or router of the fabric"),
            ));
        }
        if g.dest_of_lid(lid).is_none() {
            return Err(ctx.err(lineno, line, format!("LID {lid} is not in the fabric")));
        }
        max_sl = max_sl.max(sl);
        for &s in node_switches.get(&guid).map(Vec::as_slice).unwrap_or(&[]) {
            let old = layers.get(s, lid);
            if old == UNSET {
                layers.set(s, lid, sl);
                set_by.insert((s, lid), lineno);
            } else if old != sl {
                conflicts.push(PathSlConflict {
                    switch_guid: f.nodes()[g.switch_node()[s as usize] as usize].guid,
                    dlid: lid,
                    first_line: set_by[&(s, lid)],
                    first_sl: old,
                    line: lineno,
                    sl,
                });
            }
        }
    }
    let mut missing = 0;
    for s in 0..g.num_switches() as u32 {
        let sources = g.terminal_count()[s as usize] > 0;
        for d in g.dests() {
            if layers.get(s, d.lid) == UNSET {
                layers.set(s, d.lid, 0);
                if sources && d.switch != NO_SWITCH {
                    missing += 1;
                }
            }
        }
    }
    for row in layers.rows_mut() {
        for v in row.iter_mut().filter(|v| **v == UNSET) {
            *v = 0;
        }
    }
    Ok(PathSlDump {
        layers,
        num_layers: max_sl + 1,
        conflicts,
        missing,
    })
}

/// A [`Routing`] from dumped LFTs (and optionally path-SL layers), with hop counts found by walking
/// the tables (NO_PATH where the walk does not deliver), so any engine's tables can be judged.
pub fn routing_from_dumps(g: &SwitchGraph, lft: Lft, path_sl: Option<PathSlDump>) -> Routing {
    let hops = crate::routing::walked_hops(g, &lft);
    let (layers, num_layers) = match path_sl {
        Some(p) => (Some(p.layers), p.num_layers),
        None => (None, 1),
    };
    Routing {
        lft,
        hops,
        layers,
        num_layers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo;

    fn fabric() -> (Fabric, SwitchGraph) {
        let f = topo::by_name("torus:3x1,2,lmc=1").unwrap();
        let g = SwitchGraph::new(&f).unwrap();
        (f, g)
    }

    #[test]
    fn path_sl_round_trip_and_conflicts() {
        let (f, g) = fabric();
        let mut r = crate::sssp::route(&g);
        let mut layers = SwitchLidTable::new(g.num_switches(), g.max_lid(), 0);
        for s in 0..g.num_switches() as u32 {
            for d in g.dests() {
                layers.set(s, d.lid, ((s + u32::from(d.lid)) % 3) as u8);
            }
        }
        r.layers = Some(layers);
        r.num_layers = 3;
        let text = super::super::path_sl::to_text(&f, &g, &r);
        // 6 CAs x (3 switch LIDs + 6 CAs x 2 LIDs)
        assert_eq!(text.lines().count(), 6 * (3 + 12));
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("0x0002c90100000000 "), "{first}");
        let p = parse_path_sl(&text, "psl", &f, &g).unwrap();
        assert_eq!((p.num_layers, p.missing), (3, 0));
        assert!(p.conflicts.is_empty());
        for s in 0..3u32 {
            for d in g.dests() {
                assert_eq!(p.layers.get(s, d.lid), r.layer(s, d.lid));
            }
        }
        // the second CA on switch 0 disagrees with the first about one DLID
        let ca1 = f
            .nodes()
            .iter()
            .filter(|n| n.kind == NodeKind::Ca)
            .nth(1)
            .unwrap()
            .guid;
        let lid = g.dests().last().unwrap().lid;
        let extra = format!("{text}0x{ca1:016x} {lid} 7\n");
        let p = parse_path_sl(&extra, "psl", &f, &g).unwrap();
        assert_eq!(p.conflicts.len(), 1);
        let c = &p.conflicts[0];
        assert_eq!((c.dlid, c.sl, c.line), (lid, 7, text.lines().count() + 1));
        // a path no line covers is counted, not invented: drop the first DLID of both CAs on
        // switch 0 (15 lines per CA)
        let fewer: String = text
            .lines()
            .enumerate()
            .filter(|&(i, _)| i != 0 && i != 15)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        assert_eq!(parse_path_sl(&fewer, "psl", &f, &g).unwrap().missing, 1);
    }

    #[test]
    fn path_sl_errors_name_the_line() {
        let (f, g) = fabric();
        for (text, line, what) in [
            (
                "0x0002c90100000000 1 0\n0x0002c90100000000 1\n",
                2,
                "expected",
            ),
            ("0x0002c90000000000 1 0\n", 1, "not a CA"),
            ("0x0002c90100000000 999 0\n", 1, "not in the fabric"),
            ("0x0002c90100000000 1 16\n", 1, "SL"),
            ("0002c90100000000 1 1\n", 1, "0x"),
        ] {
            let e = parse_path_sl(text, "p.dump", &f, &g).unwrap_err();
            assert_eq!(e.line(), Some(line), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
    }

    #[test]
    fn lft_writer_and_parser_agree_and_reject_bad_lines() {
        let (f, g) = fabric();
        let r = crate::sssp::route(&g);
        let text = write_lfts(&f, &g, &r.lft);
        assert!(text.starts_with("Unicast lids [0-"), "{text}");
        assert!(text.contains(" # Channel Adapter portguid 0x0002c90100000001: 'H-0'"));
        let d = parse_lfts(&text, "l", &f, &g).unwrap();
        assert_eq!(d.lft, r.lft);
        let routing = routing_from_dumps(&g, d.lft, None);
        assert_eq!(routing.hops, r.hops, "walked hops equal the engine's");

        let head = text.lines().next().unwrap();
        for (bad, line, what) in [
            (format!("0x0001 001\n{head}\n"), 1, "before any switch"),
            (format!("{head}\n0x0001 099\n"), 2, "no port 99"),
            (format!("{head}\n0x0001\n"), 2, "port"),
            (format!("{head}\n{head}\n"), 2, "second block"),
            (
                "Unicast lids [0-3] of switch Lid 1 guid 0x1234 ('x'):\n".to_string(),
                1,
                "not in the fabric",
            ),
            (format!("{head}\nhello\n"), 2, "expected"),
        ] {
            let e = parse_lfts(&bad, "l.dump", &f, &g).unwrap_err();
            assert_eq!(e.line(), Some(line), "{e}");
            assert!(
                e.to_string().contains(what) && e.to_string().contains("l.dump"),
                "{e}"
            );
        }
        // a switch without a block is reported, its table stays empty
        let one: String = text
            .lines()
            .take_while(|l| !l.ends_with("lids dumped"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            parse_lfts(&one, "l", &f, &g)
                .unwrap()
                .switches_missing
                .len(),
            2
        );
    }

    #[test]
    fn subnet_lst_inconsistencies_are_errors() {
        let line = "{ SW Ports:04 SystemGUID:0000000000000001 NodeGUID:0000000000000001 PortGUID:0000000000000001 VenID:000000 DevID:0000 Rev:000000A1 {a} LID:0001 PN:01 } { CA Ports:01 SystemGUID:0000000000000002 NodeGUID:0000000000000002 PortGUID:0000000000000003 VenID:00000000 DevID:0000 Rev:000000A1 {b} LID:0002 PN:01 } PHY=4x LOG=ACT SPD=2.5";
        let f = parse_subnet_lst(line, "s", 0).unwrap();
        assert_eq!(
            (f.nodes().len(), f.links().len(), f.endpoints().len()),
            (2, 1, 2)
        );
        let other_port = line.replacen("LID:0001 PN:01", "LID:0001 PN:02", 1);
        let e = parse_subnet_lst(&format!("{line}\n{other_port}"), "s", 0).unwrap_err();
        assert_eq!(e.line(), Some(2), "{e}");
        let other_lid = line.replacen("LID:0001 PN:01", "LID:0005 PN:02", 1);
        let e = parse_subnet_lst(&format!("{line}\n{other_lid}"), "s", 0).unwrap_err();
        assert!(e.to_string().contains("LID differs"), "{e}");
        let e = parse_subnet_lst(&line.replace("Ports:04", "Ports:00"), "s", 0).unwrap_err();
        assert!(e.to_string().contains("port count"), "{e}");
    }
}

// ------------------------------------------------------------------------------------------------
// a whole dump directory

/// Everything needed to judge a routing OpenSM installed: the fabric from opensm-subnet.lst, its
/// switch graph, and the routing from opensm-lfts.dump plus, when present, opensm-path-sl.dump.
#[derive(Debug)]
pub struct DumpSet {
    pub fabric: Fabric,
    pub graph: SwitchGraph,
    pub routing: Routing,
    /// The LMC used for CA ports (given, or inferred from the LFT dump).
    pub lmc: u8,
    pub switches_missing: Vec<u64>,
    /// Path-SL inconsistencies and uncovered paths, when a path-SL dump was read.
    pub path_sl_conflicts: Vec<PathSlConflict>,
    pub path_sl_missing: usize,
    pub has_path_sl: bool,
}

/// Reads `opensm-subnet.lst` and `opensm-lfts.dump` (and `opensm-path-sl.dump` if it exists)
/// from OpenSM's dump directory. `lmc`: the subnet's LMC, or `None` to infer it from the LFTs.
pub fn load_dump_dir(dir: &std::path::Path, lmc: Option<u8>) -> Result<DumpSet, IoError> {
    let lst_path = dir.join("opensm-subnet.lst");
    let lft_path = dir.join("opensm-lfts.dump");
    let psl_path = dir.join("opensm-path-sl.dump");
    let lfts = super::read_text(&lft_path)?;
    let lmc = lmc.unwrap_or_else(|| infer_lmc(&lfts).unwrap_or(0));
    let lst_name = lst_path.display().to_string();
    let fabric = parse_subnet_lst(&super::read_text(&lst_path)?, &lst_name, lmc)?;
    let graph = SwitchGraph::new(&fabric).map_err(|e| Ctx { file: &lst_name }.fabric(1, e))?;
    let d = parse_lfts(&lfts, &lft_path.display().to_string(), &fabric, &graph)?;
    let psl = if psl_path.exists() {
        let text = super::read_text(&psl_path)?;
        Some(parse_path_sl(
            &text,
            &psl_path.display().to_string(),
            &fabric,
            &graph,
        )?)
    } else {
        None
    };
    let (conflicts, missing, has) = match &psl {
        Some(p) => (p.conflicts.clone(), p.missing, true),
        None => (Vec::new(), 0, false),
    };
    let routing = routing_from_dumps(&graph, d.lft, psl);
    Ok(DumpSet {
        fabric,
        graph,
        routing,
        lmc,
        switches_missing: d.switches_missing,
        path_sl_conflicts: conflicts,
        path_sl_missing: missing,
        has_path_sl: has,
    })
}
