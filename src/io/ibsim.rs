//! ibsim net files (the topology format of the `ibsim` fabric simulator, a subset of and
//! compatible with `ibnetdiscover` output).
//!
//! A record is a header line `Switch|Ca|Hca|Rt <ports> "<nodeid>" [# "<description>" ... lid N
//! lmc M]` followed by one line per connected port, `[<port>] "<remote nodeid>"[<remote port>]`
//! (CA port lines may carry `# lid N lmc M`), and ends at the first other line. Top-level lines
//! `switchguid=`, `caguid=`/`hcaguids=`, `rtguid=` set the GUID of the next nodes of that kind
//! (`=X` absolute, `+X` relative to the last absolute value); without them ibsim counts CA GUIDs
//! from 0x100000 (each CA reserving ports+1 GUIDs) and switch GUIDs from 0x200000. CA port `p` has
//! port GUID node GUID + `p`, a switch's ports the node GUID. Other lines are ignored, as ibsim does.
//!
//! ibsim uses the first port of the file as the SM's port, so [`write_net`] writes a CA first.
//! The file carries the fabric's LIDs (switch header, CA port lines); ibsim presets them on the
//! ports, OpenSM may still assign its own.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{parse_c_number, parse_hex_u64, Ctx, IoError};

/// Leading hex digits of `s` (after an optional 0x) as a number.
fn hex_token(s: &str) -> Option<u64> {
    let t = s.strip_prefix("0x").unwrap_or(s);
    let end = t.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(t.len());
    parse_hex_u64(&t[..end])
}
use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};

/// ibsim's node description buffer holds 63 characters.
const IBSIM_DESC_MAX: usize = 63;

/// The node id the writers use: `S-`/`H-`/`R-` and the node GUID in 16 hex digits (as
/// ibnetdiscover names nodes).
pub fn node_id(kind: NodeKind, guid: u64) -> String {
    let p = match kind {
        NodeKind::Switch => 'S',
        NodeKind::Ca => 'H',
        NodeKind::Router => 'R',
    };
    format!("{p}-{guid:016x}")
}

/// A node description made safe for a quoted field of one line, cut to `max` bytes.
pub(crate) fn clean_desc(d: &str, max: usize) -> String {
    // '=' would read as an ibsim port option (w=, s=, e=) on port lines
    let mut s: String = d
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '=' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// Simulator limits a fabric needs: pass them as `ibsim -N nodes -S switches -P ports -L lids`
/// (ibsim's defaults are 2048 nodes, 256 switches, 10240 ports, LFTs of 30720 LIDs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbsimCaps {
    pub nodes: usize,
    pub switches: usize,
    pub ports: usize,
    pub linear_cap: usize,
}

impl IbsimCaps {
    pub fn of(f: &Fabric) -> Self {
        let switches = f.switch_count();
        // ibsim allocates ports+1 entries per switch (port 0), ports per CA
        let ports: usize = f
            .nodes()
            .iter()
            .map(|n| usize::from(n.num_ports) + usize::from(n.kind == NodeKind::Switch))
            .sum();
        IbsimCaps {
            nodes: f.nodes().len().max(2048),
            switches: switches.max(256),
            ports: ports.max(10240),
            // LFT blocks are 64 LIDs; OpenSM assigns LIDs up to about the count of LID-bearing
            // ports times 2^LMC, ours may be anywhere up to max_lid
            linear_cap: (usize::from(f.max_lid()) + 1)
                .max(f.endpoints().iter().map(|e| e.lids().len()).sum::<usize>() + 64)
                .div_ceil(64)
                .max(480)
                * 64,
        }
    }

    /// Command-line arguments for `ibsim`.
    pub fn args(&self) -> Vec<String> {
        vec![
            "-N".into(),
            self.nodes.to_string(),
            "-S".into(),
            self.switches.to_string(),
            "-P".into(),
            self.ports.to_string(),
            "-L".into(),
            self.linear_cap.to_string(),
        ]
    }
}

/// Writes `f` as an ibsim net file. A CA (one with a linked port 1 if any) comes first so that
/// ibsim uses its port as the SM's; every link appears on both of its ports; parallel links are
/// separate lines.
pub fn write_net(f: &Fabric) -> String {
    let mut out = String::with_capacity(f.links().len() * 80 + f.nodes().len() * 120);
    let n = f.nodes().len();
    let ports = f.port_table();
    let mut lid_of: HashMap<(u32, u8), (u16, u8)> = HashMap::with_capacity(f.endpoints().len());
    for e in f.endpoints() {
        lid_of.insert((e.node, e.port), (e.base_lid, e.lmc));
    }

    let is_ca = |i: usize| f.nodes()[i].kind == NodeKind::Ca;
    let sm_ca = (0..n)
        .find(|&i| is_ca(i) && ports.remote(i, 1).is_some())
        .or_else(|| (0..n).find(|&i| is_ca(i)));
    let mut order: Vec<usize> = Vec::with_capacity(n);
    order.extend(sm_ca);
    order.extend((0..n).filter(|&i| f.nodes()[i].kind == NodeKind::Switch));
    order.extend((0..n).filter(|&i| f.nodes()[i].kind != NodeKind::Switch && Some(i) != sm_ca));

    let _ = writeln!(
        out,
        "# ibsim net file written by dfsssp-rs: {} switches, {} CAs/routers, {} links\n\
         # the first port below is the SM's port\n",
        f.switch_count(),
        f.terminal_node_count(),
        f.links().len()
    );
    for i in order {
        let node = &f.nodes()[i];
        let (kw, guid_kw) = match node.kind {
            NodeKind::Switch => ("Switch", "switchguid"),
            NodeKind::Ca => ("Ca", "caguid"),
            NodeKind::Router => ("Rt", "rtguid"),
        };
        let _ = writeln!(out, "{guid_kw}=0x{:016x}", node.guid);
        let _ = write!(
            out,
            "{kw}\t{} \"{}\"\t\t# \"{}\"",
            node.num_ports,
            node_id(node.kind, node.guid),
            clean_desc(&node.description, IBSIM_DESC_MAX)
        );
        if node.kind == NodeKind::Switch {
            if let Some(&(lid, lmc)) = lid_of.get(&(i as u32, 0)) {
                let _ = write!(out, " lid {lid} lmc {lmc}");
            }
        }
        out.push('\n');
        for p in 1..=node.num_ports {
            let Some(r) = ports.remote(i, p) else {
                continue;
            };
            let rn = &f.nodes()[r.node as usize];
            let _ = write!(
                out,
                "[{p}]\t\"{}\"[{}]\t\t#",
                node_id(rn.kind, rn.guid),
                r.port
            );
            // ibnetdiscover's comment: own LID (CAs), remote description, remote LID, width and
            // speed, which newer ibsim reads to set the port's width and speed
            if node.kind != NodeKind::Switch {
                if let Some(&(lid, lmc)) = lid_of.get(&(i as u32, p)) {
                    let _ = write!(out, " lid {lid} lmc {lmc}");
                }
            }
            let rport = if rn.kind == NodeKind::Switch {
                0
            } else {
                r.port
            };
            let rlid = lid_of.get(&(r.node, rport)).map_or(0, |l| l.0);
            let _ = writeln!(
                out,
                " \"{}\" lid {rlid} 4xQDR",
                clean_desc(&rn.description, IBSIM_DESC_MAX)
            );
        }
        out.push('\n');
    }
    out
}

/// How [`parse_net`] gives LIDs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetOptions {
    /// LMC for CA/router ports when LIDs are assigned here.
    pub lmc: u8,
}

/// Which program's reading of the shared record format to follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// ibsim: port GUIDs are node GUID + port (switch ports: node GUID), whatever the file says.
    Ibsim,
    /// ibnetdiscover output: port GUIDs as printed (`switchguid=0xNODE(PORT)`, `[p](PORTGUID)`),
    /// node GUIDs from the `*guid=` line before each record or else from the `S-`/`H-`/`R-` id.
    Ibnetdiscover,
}

struct PNode {
    kind: NodeKind,
    /// switch port 0 GUID given by `switchguid=0x..(PORTGUID)`
    port0_guid: Option<u64>,
    ports: u8,
    id: String,
    desc: String,
    guid: u64,
    line: usize,
    /// switch: port 0 LID/LMC from the header
    lid: Option<(u16, u8)>,
}

struct PPort {
    node: usize,
    port: u8,
    remote_id: String,
    remote_port: u8,
    line: usize,
    lid: Option<(u16, u8)>,
    /// `[p](PORTGUID)` on CA/router port lines
    port_guid: Option<u64>,
}

/// The value after `=` or `+` of `key=VALUE(...)`, hex or decimal like C's strtoull.
fn assignment(line: &str) -> Option<(bool, u64)> {
    let i = line.find(['=', '+'])?;
    let relative = line.as_bytes()[i] == b'+';
    let v = line[i + 1..].trim_start();
    // strtoull reads the longest number prefix: keep [0-9a-fA-Fx]
    let end = v
        .find(|c: char| !(c.is_ascii_hexdigit() || c == 'x' || c == 'X'))
        .unwrap_or(v.len());
    let tok = &v[..end];
    let val = if tok.starts_with("0x") || tok.starts_with("0X") {
        parse_hex_u64(tok)
    } else {
        parse_c_number(tok)
    }?;
    Some((relative, val))
}

/// Digits after the first `lid ` / `lmc ` in `s`, as ibsim reads them.
fn field_after(s: &str, key: &str) -> Option<Option<u64>> {
    let i = s.find(key)?;
    let rest = s[i + key.len()..].trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    Some(parse_c_number(&rest[..end]))
}

fn lid_lmc(ctx: Ctx, lineno: usize, line: &str, s: &str) -> Result<Option<(u16, u8)>, IoError> {
    let lid = match field_after(s, "lid ") {
        None => return Ok(None),
        Some(Some(l)) if (1..=0xBFFF).contains(&l) => l as u16,
        Some(_) => return Err(ctx.err(lineno, line, "bad LID (1..=0xBFFF)")),
    };
    let lmc = match field_after(s, "lmc ") {
        None => 0,
        Some(Some(l)) if l <= 7 => l as u8,
        Some(_) => return Err(ctx.err(lineno, line, "bad LMC (0..=7)")),
    };
    Ok(Some((lid, lmc)))
}

/// The first quoted string and what follows its closing quote.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let a = s.find('"')?;
    let b = s[a + 1..].find('"')? + a + 1;
    Some((&s[a + 1..b], &s[b + 1..]))
}

/// Parses an ibsim net file. LIDs: when the file gives one for every switch and every linked CA
/// or router port, those are used; otherwise all are assigned here like the generators do
/// (switches first from 1, then CA/router ports in file order, aligned to 2^`opts.lmc`).
pub fn parse_net(text: &str, file: &str, opts: NetOptions) -> Result<Fabric, IoError> {
    parse_records(text, file, opts, Flavor::Ibsim)
}

/// The records read so far and ibsim's GUID counters, while a file is read.
struct Records<'a> {
    ctx: Ctx<'a>,
    flavor: Flavor,
    /// Set by a `*guid=` line, consumed by the next record: (counter, port GUID in parentheses).
    pending: Option<(usize, Option<u64>)>,
    nodes: Vec<PNode>,
    ports: Vec<PPort>,
    by_id: HashMap<String, usize>,
    /// ibsim's GUID counters (CA, switch, router) and the bases relative assignments use.
    abs: [u64; 3],
    next: [u64; 3],
}

/// Reads the node records (header and port lines) of an ibsim net file or ibnetdiscover output,
/// then builds the fabric they describe.
pub(crate) fn parse_records(
    text: &str,
    file: &str,
    opts: NetOptions,
    flavor: Flavor,
) -> Result<Fabric, IoError> {
    let abs = [0x100000u64, 0x200000, 0];
    let mut r = Records {
        ctx: Ctx { file },
        flavor,
        pending: None,
        nodes: Vec::new(),
        ports: Vec::new(),
        by_id: HashMap::new(),
        abs,
        next: abs,
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let lineno = i + 1;
        let line = lines[i];
        i += 1;
        let Some((kind, kwlen)) = record_keyword(line) else {
            r.top_level_line(lineno, line)?;
            continue;
        };
        let (idx, nports) = r.node_header(lineno, line, kind, kwlen)?;

        // port lines: at most `nports` of them; comments inside are skipped; any other line ends
        // the record and is read again as a top-level line
        let mut seen = 0u32;
        while i < lines.len() && seen < nports {
            let pl = lines[i];
            if pl.starts_with('#') {
                i += 1;
                continue;
            }
            if pl.starts_with('@') {
                return Err(r.ctx.err(i + 1, pl, "port aliases are not supported"));
            }
            if !pl.starts_with('[') {
                break;
            }
            i += 1;
            seen += 1;
            r.port_line(i, pl, idx, nports)?;
        }
    }
    build(r.ctx, &r.nodes, &r.ports, &r.by_id, opts)
}

/// The kind of node a record header starts and its keyword's length (`None`: not a header).
fn record_keyword(line: &str) -> Option<(NodeKind, usize)> {
    if line.starts_with("Switch") {
        Some((NodeKind::Switch, 6))
    } else if line.starts_with("Hca") {
        Some((NodeKind::Ca, 3))
    } else if line.starts_with("Ca") {
        Some((NodeKind::Ca, 2))
    } else if line.starts_with("Rt") {
        Some((NodeKind::Router, 2))
    } else {
        None
    }
}

/// A header's description (`# "desc"` or `# desc`, else the id) and the text after it, where
/// the LID and LMC may follow.
fn header_description<'l>(id: &str, after: &'l str) -> (String, &'l str) {
    let mut desc = id.to_string();
    let mut tail = "";
    if let Some(h) = after.find('#') {
        let d = after[h + 1..].trim_start();
        if let Some(q) = d.strip_prefix('"') {
            match q.find('"') {
                Some(e) => {
                    desc = q[..e].to_string();
                    tail = &q[e + 1..];
                }
                None => desc = q.to_string(),
            }
        } else {
            let cut = [" enhanced port ", " base port ", " lid ", " lmc "]
                .iter()
                .filter_map(|k| d.find(k))
                .min()
                .unwrap_or(d.len());
            desc = d[..cut].to_string();
            tail = &d[cut..];
        }
    }
    (desc, tail)
}

impl Records<'_> {
    /// A line outside a record: a GUID counter's assignment (`switchguid=`, `caguid+`, ...), an
    /// unsupported directive (an error) or anything ignored.
    fn top_level_line(&mut self, lineno: usize, line: &str) -> Result<(), IoError> {
        let ctx = self.ctx;
        let counter = if line.starts_with("switchguid") {
            Some(1)
        } else if line.starts_with("hcaguids") || line.starts_with("caguid") {
            Some(0)
        } else if line.starts_with("rtguid") {
            Some(2)
        } else {
            None
        };
        if let Some(c) = counter {
            let (rel, v) = assignment(line)
                .ok_or_else(|| ctx.err(lineno, line, "expected =GUID or +OFFSET"))?;
            if rel {
                self.next[c] = self.abs[c].wrapping_add(v);
            } else {
                self.abs[c] = v;
                self.next[c] = v;
            }
            let paren = line.find('(').and_then(|i| hex_token(&line[i + 1..]));
            self.pending = Some((c, paren));
        } else if line.starts_with("include")
            || line.starts_with("do")
            || line.starts_with("module")
        {
            return Err(ctx.err(lineno, line, "ibsim directive not supported here"));
        } else if line.starts_with('[') || line.starts_with('@') {
            return Err(ctx.err(lineno, line, "port line outside a node record"));
        }
        // everything else (comments, vendid, devid, width, speed, blank lines) is ignored
        Ok(())
    }

    /// A record's header: ports, "id", optional # description and lid/lmc. Adds the node with
    /// its GUID from the counters; returns its index and port count.
    fn node_header(
        &mut self,
        lineno: usize,
        line: &str,
        kind: NodeKind,
        kwlen: usize,
    ) -> Result<(usize, u32), IoError> {
        let ctx = self.ctx;
        let rest = &line[kwlen..];
        let digits_at = rest.find(|c: char| c.is_ascii_digit());
        let nports = digits_at
            .map(|d| {
                let r = &rest[d..];
                let e = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
                r[..e].parse::<u32>().unwrap_or(0)
            })
            .unwrap_or(0);
        if !(1..=255).contains(&nports) {
            return Err(ctx.err(lineno, line, "port count must be 1..=255"));
        }
        let (id, after) =
            quoted(line).ok_or_else(|| ctx.err(lineno, line, "missing quoted node id"))?;
        if id.is_empty() || id.contains('#') || id.contains('@') {
            return Err(ctx.err(lineno, line, "node id must be non-empty without '#' or '@'"));
        }
        let (desc, tail) = header_description(id, after);
        let lid = if kind == NodeKind::Switch {
            lid_lmc(ctx, lineno, line, tail)?
        } else {
            None
        };
        if self.by_id.contains_key(id) {
            return Err(ctx.err(lineno, line, format!("node id \"{id}\" defined twice")));
        }
        let (guid, port0_guid) = self.node_guid(kind, id, nports);
        let idx = self.nodes.len();
        self.by_id.insert(id.to_string(), idx);
        self.nodes.push(PNode {
            kind,
            port0_guid,
            ports: nports as u8,
            id: id.to_string(),
            desc,
            guid,
            line: lineno,
            lid,
        });
        Ok((idx, nports))
    }

    /// The next node's GUID from its kind's counter (which it advances), and its port 0 GUID
    /// where ibnetdiscover printed one.
    fn node_guid(&mut self, kind: NodeKind, id: &str, nports: u32) -> (u64, Option<u64>) {
        let c = match kind {
            NodeKind::Ca => 0,
            NodeKind::Switch => 1,
            NodeKind::Router => 2,
        };
        let given = self.pending.take().filter(|&(pc, _)| pc == c);
        if self.flavor == Flavor::Ibnetdiscover && given.is_none() {
            // no `*guid=` line: the id S-/H-/R-<16 hex digits> carries the GUID
            let hex = id
                .get(2..)
                .filter(|h| h.len() == 16 && id.as_bytes()[1] == b'-');
            if let Some(g) = hex.and_then(parse_hex_u64) {
                self.next[c] = g;
            }
        }
        let port0_guid = given
            .and_then(|(_, p)| p)
            .filter(|_| self.flavor == Flavor::Ibnetdiscover);
        let guid = self.next[c];
        self.next[c] = self.next[c].wrapping_add(if kind == NodeKind::Switch {
            1
        } else {
            u64::from(nports) + 1
        });
        (guid, port0_guid)
    }

    /// One port line (`[p] "remote id"[rp]`, line `plno`) of node `idx`, which has `nports`.
    fn port_line(&mut self, plno: usize, pl: &str, idx: usize, nports: u32) -> Result<(), IoError> {
        let ctx = self.ctx;
        let kind = self.nodes[idx].kind;
        let close = pl
            .find(']')
            .ok_or_else(|| ctx.err(plno, pl, "missing ']' after port number"))?;
        let port: u32 = pl[1..close]
            .trim()
            .parse()
            .map_err(|_| ctx.err(plno, pl, "bad port number"))?;
        if port == 0 || port > nports {
            return Err(ctx.err(plno, pl, format!("port {port} outside 1..={nports}")));
        }
        // `[p](PORTGUID)` on ibnetdiscover's CA port lines
        let port_guid = pl[close + 1..]
            .strip_prefix('(')
            .and_then(hex_token)
            .filter(|_| self.flavor == Flavor::Ibnetdiscover);
        let (rid, after) = quoted(&pl[close..])
            .ok_or_else(|| ctx.err(plno, pl, "missing quoted remote node id"))?;
        let mut remote_port = 1u32; // ibsim's default
        if let Some(r) = after.strip_prefix('[') {
            let e = r
                .find(']')
                .ok_or_else(|| ctx.err(plno, pl, "missing ']' after remote port"))?;
            remote_port = r[..e]
                .trim()
                .parse()
                .ok()
                .filter(|p| (1..=255).contains(p))
                .ok_or_else(|| ctx.err(plno, pl, "bad remote port number"))?;
        }
        let lid = if kind == NodeKind::Switch {
            None
        } else {
            lid_lmc(ctx, plno, pl, after)?
        };
        if self
            .ports
            .iter()
            .rev()
            .take(nports as usize)
            .any(|q| q.node == idx && u32::from(q.port) == port)
        {
            return Err(ctx.err(plno, pl, format!("port {port} listed twice")));
        }
        self.ports.push(PPort {
            node: idx,
            port: port as u8,
            remote_id: rid.to_string(),
            remote_port: remote_port as u8,
            line: plno,
            lid,
            port_guid,
        });
        Ok(())
    }
}

/// The fabric the records describe: nodes, then the links (each listed on both ends), then the
/// LIDs.
fn build(
    ctx: Ctx,
    nodes: &[PNode],
    ports: &[PPort],
    by_id: &HashMap<String, usize>,
    opts: NetOptions,
) -> Result<Fabric, IoError> {
    let mut b = FabricBuilder::new();
    for n in nodes {
        if let Some(other) = b.node_by_guid(n.guid) {
            let o = &nodes[other as usize];
            return Err(ctx.err(
                n.line,
                &n.id,
                format!(
                    "GUID 0x{:016x} already used by \"{}\" (line {})",
                    n.guid, o.id, o.line
                ),
            ));
        }
        b.add_node(n.kind, n.guid, n.ports, n.desc.clone())
            .map_err(|e| ctx.fabric(n.line, e))?;
    }
    link_ports(ctx, nodes, ports, by_id, &mut b)?;
    set_lids(ctx, nodes, ports, opts, &mut b)?;
    let last_line = nodes.last().map_or(1, |n| n.line);
    b.build().map_err(|e| ctx.fabric(last_line, e))
}

/// Links the ports listed, once per link: every link must be listed on both ends, consistently.
fn link_ports(
    ctx: Ctx,
    nodes: &[PNode],
    ports: &[PPort],
    by_id: &HashMap<String, usize>,
    b: &mut FabricBuilder,
) -> Result<(), IoError> {
    let mut listed: HashMap<(usize, u8), usize> = HashMap::with_capacity(ports.len());
    for (k, p) in ports.iter().enumerate() {
        listed.insert((p.node, p.port), k);
    }
    let mut linked = vec![false; ports.len()];
    for (k, p) in ports.iter().enumerate() {
        let text = || format!("[{}] \"{}\"[{}]", p.port, p.remote_id, p.remote_port);
        let Some(&rn) = by_id.get(&p.remote_id) else {
            return Err(ctx.err(
                p.line,
                &text(),
                format!("remote node \"{}\" is not defined", p.remote_id),
            ));
        };
        if p.remote_port > nodes[rn].ports {
            return Err(ctx.err(
                p.line,
                &text(),
                format!(
                    "remote node \"{}\" has only {} ports",
                    p.remote_id, nodes[rn].ports
                ),
            ));
        }
        let back = listed.get(&(rn, p.remote_port)).copied();
        let ok = back.is_some_and(|j| {
            ports[j].remote_id == nodes[p.node].id && ports[j].remote_port == p.port
        });
        if !ok {
            return Err(ctx.err(
                p.line,
                &text(),
                format!(
                    "port {} of \"{}\" does not link back to port {} of \"{}\"",
                    p.remote_port, p.remote_id, p.port, nodes[p.node].id
                ),
            ));
        }
        if rn == p.node && p.remote_port == p.port {
            return Err(ctx.err(p.line, &text(), "port linked to itself"));
        }
        if !linked[k] {
            let j = back.unwrap_or(k);
            linked[k] = true;
            linked[j] = true;
            b.link(
                PortRef {
                    node: p.node as u32,
                    port: p.port,
                },
                PortRef {
                    node: rn as u32,
                    port: p.remote_port,
                },
            )
            .map_err(|e| ctx.fabric(p.line, e))?;
        }
    }
    Ok(())
}

/// The file's LIDs when it gives every one; else switches get 1, 2, ... and then the other
/// ports one block of 2^LMC each (aligned), as OpenSM would hand them out.
fn set_lids(
    ctx: Ctx,
    nodes: &[PNode],
    ports: &[PPort],
    opts: NetOptions,
    b: &mut FabricBuilder,
) -> Result<(), IoError> {
    let file_lids = nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.lid.is_some())
        && ports
            .iter()
            .filter(|p| nodes[p.node].kind != NodeKind::Switch)
            .all(|p| p.lid.is_some());
    if !file_lids && opts.lmc > 7 {
        return Err(ctx.err(1, "", format!("LMC {} above 7", opts.lmc)));
    }
    let full = "more LIDs needed than the unicast range holds";
    let mut next = 1u32;
    for (k, n) in nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == NodeKind::Switch)
    {
        let (lid, lmc) = match n.lid {
            Some(given) if file_lids => given,
            _ if next > 0xBFFF => return Err(ctx.err(n.line, &n.id, full)),
            _ => {
                next += 1;
                ((next - 1) as u16, 0)
            }
        };
        let port0 = PortRef {
            node: k as u32,
            port: 0,
        };
        b.set_lid(port0, n.port0_guid.unwrap_or(n.guid), lid, lmc)
            .map_err(|e| ctx.fabric(n.line, e))?;
    }
    let step = 1u32 << opts.lmc.min(7); // (above 7 only with the file's LIDs, then unused)
    next = next.div_ceil(step) * step;
    for p in ports
        .iter()
        .filter(|p| nodes[p.node].kind != NodeKind::Switch)
    {
        let (lid, lmc) = match p.lid {
            Some(given) if file_lids => given,
            _ if next + step - 1 > 0xBFFF => return Err(ctx.err(p.line, &p.remote_id, full)),
            _ => {
                next += step;
                ((next - step) as u16, opts.lmc)
            }
        };
        let guid = p
            .port_guid
            .unwrap_or(nodes[p.node].guid.wrapping_add(u64::from(p.port)));
        let port = PortRef {
            node: p.node as u32,
            port: p.port,
        };
        b.set_lid(port, guid, lid, lmc)
            .map_err(|e| ctx.fabric(p.line, e))?;
    }
    Ok(())
}

/// Where Debian's `libumad2sim0` put the umad2sim shim (`LD_PRELOAD` it into a program to talk
/// to ibsim instead of a real HCA): the package's own file list, else the multiarch directory
/// for this architecture (the compiler's `-print-multiarch` where there is one). Resolved once.
pub fn umad2sim_path() -> std::path::PathBuf {
    use std::process::Command;
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let stdout = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
    };
    PATH.get_or_init(|| {
        let listed = stdout("dpkg", &["-L", "libumad2sim0"]).and_then(|files| {
            files
                .lines()
                .find(|l| l.ends_with("/libumad2sim.so"))
                .map(std::path::PathBuf::from)
        });
        listed.unwrap_or_else(|| {
            let multiarch = stdout("gcc", &["-print-multiarch"])
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("{}-linux-gnu", std::env::consts::ARCH));
            format!("/usr/lib/{multiarch}/umad2sim/libumad2sim.so").into()
        })
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo;

    fn same_fabric(a: &Fabric, b: &Fabric) {
        assert_eq!(a.nodes().len(), b.nodes().len());
        let key = |f: &Fabric| {
            let mut n: Vec<_> = f
                .nodes()
                .iter()
                .map(|n| (n.guid, n.kind, n.num_ports, n.description.clone()))
                .collect();
            n.sort_by_key(|x| x.0);
            let g = |p: PortRef| (f.nodes()[p.node as usize].guid, p.port);
            let mut l: Vec<_> = f
                .links()
                .iter()
                .map(|l| (g(l.a).min(g(l.b)), g(l.a).max(g(l.b))))
                .collect();
            l.sort();
            let mut e: Vec<_> = f
                .endpoints()
                .iter()
                .map(|e| {
                    (
                        f.nodes()[e.node as usize].guid,
                        e.port,
                        e.port_guid,
                        e.base_lid,
                        e.lmc,
                    )
                })
                .collect();
            e.sort();
            (n, l, e)
        };
        assert_eq!(key(a), key(b));
    }

    #[test]
    fn round_trip_generated_fabrics() {
        for spec in [
            "ktree:3,2",
            "torus:3x3,2,par=2,lmc=1",
            "kautz:2,2,1",
            "random:12,8,2,20,seed=3,parallel",
        ] {
            let f = topo::by_name(spec).unwrap();
            let text = write_net(&f);
            let g = parse_net(&text, "gen.net", NetOptions::default())
                .unwrap_or_else(|e| panic!("{spec}: {e}"));
            same_fabric(&f, &g);
            // the SM port: the first record is a CA
            let first = text
                .lines()
                .find(|l| l.starts_with("Switch") || l.starts_with("Ca"))
                .unwrap();
            assert!(first.starts_with("Ca"), "{first}");
        }
    }

    #[test]
    fn parses_ibsim_examples_with_ibsim_guids() {
        let text = "\
Switch\t8 \"Switch1\"
[1]\t\"Hca1\"[1]
[2]\t\"Hca2\"[2]
[3]\t\"Switch2\"[3]
[4]\t\"Switch2\"[4]

Switch 8 \"Switch2\"
[3]\t\"Switch1\"[3]
[4]\t\"Switch1\"[4]

Hca\t2 \"Hca1\"
[1]\t\"Switch1\"[1]

Hca\t2 \"Hca2\"
[2]\t\"Switch1\"[2]
";
        let f = parse_net(text, "net", NetOptions::default()).unwrap();
        assert_eq!(f.nodes().len(), 4);
        assert_eq!(f.links().len(), 4);
        let guids: Vec<u64> = f.nodes().iter().map(|n| n.guid).collect();
        assert_eq!(guids, vec![0x200000, 0x200001, 0x100000, 0x100003]);
        assert_eq!(f.nodes()[0].description, "Switch1");
        // switches LIDs 1, 2; CA ports 3, 4
        assert_eq!(f.endpoints().len(), 4);
        let hca2 = f.endpoints().iter().find(|e| e.node == 3).unwrap();
        assert_eq!((hca2.port, hca2.port_guid, hca2.base_lid), (2, 0x100005, 4));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("Switch 8 \"a\"\n[9]\t\"b\"[1]\n", 2, "outside"),
            ("Switch 8 \"a\"\n[1]\t\"b\"[1]\n", 2, "not defined"),
            (
                "Switch 8 \"a\"\n[1]\t\"b\"[1]\n\nCa 1 \"b\"\n",
                2,
                "link back",
            ),
            ("Switch 0 \"a\"\n", 1, "port count"),
            ("Switch 4 \"a\"\n\nSwitch 4 \"a\"\n", 3, "twice"),
            ("Switch 4 a\n", 1, "quoted"),
            ("switchguid\n", 1, "GUID"),
            ("[1] \"x\"[1]\n", 1, "outside a node"),
            (
                "Ca 1 \"h\"\n[1] \"s\"[1] # lid 0\nSwitch 2 \"s\"\n[1] \"h\"[1]\n",
                2,
                "LID",
            ),
        ];
        for (text, line, what) in cases {
            let e = parse_net(text, "t.net", NetOptions::default()).unwrap_err();
            assert_eq!(e.line(), Some(line), "{text:?}: {e}");
            assert!(
                e.to_string().contains(what) && e.to_string().contains("t.net"),
                "{e}"
            );
        }
    }
}
