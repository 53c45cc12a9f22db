//! `ibnetdiscover`'s default text output (infiniband-diags), read and written.
//!
//! Fields are tab-separated (shown here as spaces):
//!
//! ```text
//! vendid=0x2c9
//! devid=0xbd36
//! sysimgguid=0x2c90000000000
//! switchguid=0x2c90000000000(2c90000000000)
//! Switch  36 "S-0002c90000000000"    # "leaf 1" enhanced port 0 lid 1 lmc 0
//! [1]  "H-0002c90100000000"[1](2c90100000001)     # "host 0" lid 40 4xQDR
//! [19]  "S-0002c90000000024"[1]    # "spine 0" lid 37 4xQDR
//!
//! vendid=0x2c9
//! devid=0x1003
//! sysimgguid=0x2c90100000000
//! caguid=0x2c90100000000
//! Ca  2 "H-0002c90100000000"    # "host 0"
//! [1](2c90100000001)   "S-0002c90000000000"[1]    # lid 40 lmc 0 "leaf 1" lid 1 4xQDR
//! ```
//!
//! The record grammar is the one ibsim reads (see [`super::ibsim`]); here node GUIDs come from the
//! `switchguid=`/`caguid=`/`rtguid=` lines (or the `S-`/`H-`/`R-` ids), port GUIDs as printed,
//! LIDs from `port 0 lid N lmc M` (switches) and `# lid N lmc M` (CA and router ports). Parallel
//! links and multi-port CAs are plain port lines. Vendor and device ids, link width and speed are
//! not part of the fabric model and are not kept.

use std::fmt::Write as _;

use super::ibsim::{clean_desc, node_id, parse_records, Flavor, NetOptions};
use super::IoError;
use crate::fabric::{Fabric, NodeKind};

/// Parses ibnetdiscover output. LIDs are taken from the file when every switch and every linked
/// CA/router port has one (the usual case once an SM ran); otherwise all are assigned like
/// [`super::ibsim::parse_net`] does, with `opts.lmc`. Dumps as admins have them are accepted
/// (see [`tolerate`]).
pub fn parse(text: &str, file: &str, opts: NetOptions) -> Result<Fabric, IoError> {
    parse_with_notes(text, file, opts).map(|(f, _)| f)
}

/// [`parse`], with what [`tolerate`] had to forgive, in words.
pub fn parse_with_notes(
    text: &str,
    file: &str,
    opts: NetOptions,
) -> Result<(Fabric, Vec<String>), IoError> {
    let t = tolerate(text, file)?;
    let f = parse_records(&t.text, file, opts, Flavor::Ibnetdiscover)?;
    Ok((f, t.notes))
}

/// A dump made fit for the record parser, line for line (line numbers stay those of the file).
#[derive(Debug)]
pub struct Tolerated {
    pub text: String,
    /// One sentence per kind of quirk met, with a count.
    pub notes: Vec<String>,
}

/// Real dumps as they come: CRLF line ends, a byte-order mark, tabs turned into spaces and lines
/// indented (pasted from a terminal), comments in other tools' styles (`//`, `;`, `!`, `/* */`),
/// `lid 0` or `lid 65535` on ports no SM configured yet (the file's LIDs are then dropped and all
/// assigned), speeds the simulator does not know (NDR, HDR, XDR: they are only comments here),
/// text before the first record and after the last (a terminal log's header, the shell prompt
/// and command, a switch CLI's prompt), switches that share the node GUID of `switchguid=0xA(B)`
/// (ibdiagnet writes a director chassis' system GUID there for every ASIC: they are keyed by
/// their own port GUID `B`, as the devices define them). Any other line that is not ibnetdiscover's is refused
/// with its number: a line silently skipped inside the records could be a lost node.
pub fn tolerate(text: &str, file: &str) -> Result<Tolerated, IoError> {
    let ctx = super::Ctx { file };
    let mut out = String::with_capacity(text.len());
    let (mut crlf, mut indented, mut foreign_comments, mut lid0, mut speeds) = (0, 0, 0, 0, 0);
    let (mut before, mut after, mut chassis) = (0, 0, 0);
    let records = record_span(text);
    let shared = shared_switch_guids(text);
    let mut in_block = false;
    // split_inclusive: the same lines as str::lines, with their ends visible
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let lineno = i + 1;
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        if raw.ends_with('\r') {
            crlf += 1;
        }
        let mut line = raw.trim_end_matches('\r');
        if i == 0 {
            line = line.trim_start_matches('\u{feff}');
        }
        let t = line.trim();
        if in_block {
            in_block = !t.contains("*/");
            out.push_str("#\n");
            continue;
        }
        if t.starts_with("/*") {
            in_block = !t.contains("*/");
            foreign_comments += 1;
            out.push_str("#\n");
            continue;
        }
        if t.starts_with("//") || t.starts_with(';') || t.starts_with('!') {
            foreign_comments += 1;
            out.push_str("#\n");
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            out.push_str(t);
            out.push('\n');
            continue;
        }
        // Around the records: a terminal log's header, a prompt. (Without any record the
        // first such line is refused below: that is no fabric.)
        if let Some(r) = records.as_ref().filter(|r| !r.contains(&i)) {
            if i > *r.end() {
                after += 1;
            } else {
                before += 1;
            }
            out.push_str("#\n");
            continue;
        }
        let record_line = is_header(t) || is_port_line(t);
        if t.len() != line.len() || (record_line && !t.contains('\t')) {
            indented += 1;
        }
        if ["NDR", "HDR", "XDR", "GDR"].iter().any(|s| t.contains(s)) {
            speeds += 1;
        }
        let fixed = if is_header(t) {
            let (s, zero) = drop_zero_lid(t, Line::Header);
            lid0 += usize::from(zero);
            s
        } else if is_port_line(t) {
            let (s, zero) = drop_zero_lid(&tighten_port_line(t), Line::Port);
            lid0 += usize::from(zero);
            s
        } else if let Some(port) = switch_guid(t).filter(|(a, b)| shared.contains(a) && a != b) {
            chassis += 1;
            format!("switchguid=0x{:x}({:x})", port.1, port.1)
        } else if is_assignment(t) || t.starts_with('@') {
            t.to_string()
        } else {
            return Err(ctx.err(
                lineno,
                line,
                "not a line of ibnetdiscover's output (a Switch/Ca/Rt record, a [port] line, \
                 key=value or a comment)",
            ));
        };
        out.push_str(&fixed);
        out.push('\n');
    }
    let mut notes = Vec::new();
    let mut note = |n: usize, what: &str| {
        if n > 0 {
            notes.push(format!("{n} {what}"));
        }
    };
    note(crlf, "line(s) with CRLF ends");
    note(indented, "line(s) indented or with spaces for tabs");
    note(foreign_comments, "comment(s) in //, ;, ! or /* */ style");
    note(
        lid0,
        "port(s) with lid 0 or 65535 (not configured): the file's LIDs are dropped, all assigned \
         anew",
    );
    note(
        before,
        "line(s) before the first record skipped (a terminal log's header, a shell prompt)",
    );
    note(after, "line(s) after the last record skipped (a prompt)");
    note(
        chassis,
        "switch(es) whose switchguid= node GUID another shares (a chassis' system GUID, as \
         ibdiagnet writes director ASICs): keyed by the port GUID in parentheses",
    );
    note(
        speeds,
        "line(s) with NDR/HDR/XDR/GDR speeds (not read: links are equal to routing engines)",
    );
    Ok(Tolerated { text: out, notes })
}

/// The lines (0-based) from the first record's first line (a `key=value` line or a node header)
/// to the last line of ibnetdiscover's grammar (a header, `key=value` or a `[port]` line);
/// `None` when there is no such line.
fn record_span(text: &str) -> Option<std::ops::RangeInclusive<usize>> {
    let mut first = None;
    let mut last = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start_matches('\u{feff}').trim();
        let start = is_header(t) || is_assignment(t);
        if first.is_none() && start {
            first = Some(i);
        }
        if first.is_some() && (start || is_port_line(t)) {
            last = Some(i);
        }
    }
    Some(first?..=last?)
}

/// `switchguid=0xA(B)`: the node GUID `A` and the port GUID `B` (with or without `0x`).
fn switch_guid(t: &str) -> Option<(u64, u64)> {
    let v = t.strip_prefix("switchguid=")?.trim();
    let (a, b) = v.split_once('(')?;
    let b = b.strip_suffix(')')?;
    Some((
        super::parse_hex_u64(a.trim())?,
        super::parse_hex_u64(b.trim())?,
    ))
}

/// Node GUIDs that more than one `switchguid=` line gives.
fn shared_switch_guids(text: &str) -> std::collections::HashSet<u64> {
    let mut seen = std::collections::HashSet::new();
    let mut shared = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some((a, _)) = switch_guid(line.trim_start_matches('\u{feff}').trim()) {
            if !seen.insert(a) {
                shared.insert(a);
            }
        }
    }
    shared
}

/// `[N]` and then the rest of a port line (a prompt such as `[root@host ~]#` is not one).
fn is_port_line(t: &str) -> bool {
    t.strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .is_some_and(|(n, _)| !n.is_empty() && n.trim().chars().all(|c| c.is_ascii_digit()))
}

/// `Switch`, `Ca`, `Hca` or `Rt` and then the port count.
fn is_header(t: &str) -> bool {
    ["Switch", "Hca", "Ca", "Rt"].iter().any(|k| {
        t.strip_prefix(k)
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_whitespace() || c.is_ascii_digit()))
    })
}

/// `vendid=0x2c9`, `switchguid=0x...(...)`: a word, then `=`.
fn is_assignment(t: &str) -> bool {
    t.split_once('=').is_some_and(|(k, _)| {
        !k.trim().is_empty()
            && k.trim()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A port line with the spaces a terminal left between its parts removed: `[1] (guid)` ->
/// `[1](guid)`, `"id" [2]` -> `"id"[2]`.
fn tighten_port_line(t: &str) -> String {
    let Some(close) = t.find(']') else {
        return t.to_string();
    };
    let (head, rest) = t.split_at(close + 1);
    let rest_t = rest.trim_start();
    let rest = if rest_t.starts_with('(') {
        rest_t
    } else {
        rest
    };
    let mut s = format!("{head}{rest}");
    // the remote id's closing quote and its [port]
    if let Some(a) = s.find('"') {
        if let Some(b) = s[a + 1..].find('"').map(|b| a + 1 + b) {
            let after = &s[b + 1..];
            let trimmed = after.trim_start();
            if trimmed.starts_with('[') && trimmed.len() != after.len() {
                s = format!("{}{}", &s[..=b], trimmed);
            }
        }
    }
    s
}

/// A node's header line, or one of its port lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    Header,
    Port,
}

/// The line without its LID fields when the first LID it gives (a switch's port 0 on a header, a
/// CA port's own on a port line) is 0 or 65535 (unassigned): everything from the `lid` on (a header) or the whole
/// comment (a port line: the remote's LID follows, and must not be read as the port's).
fn drop_zero_lid(t: &str, line: Line) -> (String, bool) {
    let header = line == Line::Header;
    // the comment starts after the last quote-free '#' following the node/remote id
    let Some(id_end) = t
        .find('"')
        .and_then(|a| t[a + 1..].find('"').map(|b| a + 2 + b))
    else {
        return (t.to_string(), false);
    };
    let Some(h) = t[id_end..].find('#').map(|h| id_end + h) else {
        return (t.to_string(), false);
    };
    let comment = &t[h..];
    // skip a quoted description before looking for "lid "
    let desc_end = match comment.find('"') {
        Some(a) if header => comment[a + 1..].find('"').map_or(0, |b| a + 2 + b),
        _ => 0,
    };
    let Some(l) = comment[desc_end..].find("lid ").map(|l| desc_end + l) else {
        return (t.to_string(), false);
    };
    let num = comment[l + 4..].trim_start();
    let digits = num
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(num.len());
    // 65535 (0xFFFF, not a unicast LID) is how some tools print a LID not assigned yet.
    if !matches!(super::parse_c_number(&num[..digits]), Some(0 | 0xFFFF)) {
        return (t.to_string(), false);
    }
    let keep = if header { h + l } else { h };
    (t[..keep].trim_end().to_string(), true)
}

/// Writes `f` as ibnetdiscover would print it (switches, then CAs, then routers; each node's
/// connected ports in port order). Vendor id 0x2c9 and device ids of a ConnectX-3 and a SwitchX
/// stand in for the real ones; links are written as 4xQDR; switches have enhanced port 0. The
/// scan is said to start from the first CA, as ibnetdiscover runs on a host.
pub fn write(f: &Fabric) -> String {
    let n = f.nodes().len();
    let ports = f.port_table();
    // per port: (port GUID, LID, LMC)
    let mut addr = vec![None; ports.len()];
    for e in f.endpoints() {
        addr[ports.slot(e.node as usize, e.port)] = Some((e.port_guid, e.base_lid, e.lmc));
    }
    let port_guid = |node: usize, port: u8| -> u64 {
        let i = if f.nodes()[node].kind == NodeKind::Switch {
            0
        } else {
            port
        };
        addr[ports.slot(node, i)].map_or(f.nodes()[node].guid.wrapping_add(u64::from(i)), |a| a.0)
    };
    // the LID ibnetdiscover shows for a node's port: a switch's port 0 LID, else the port's own
    let shown_lid = |node: usize, port: u8| -> (u16, u8) {
        let i = if f.nodes()[node].kind == NodeKind::Switch {
            0
        } else {
            port
        };
        addr[ports.slot(node, i)].map_or((0, 0), |a| (a.1, a.2))
    };
    let desc = |node: usize| clean_desc(&f.nodes()[node].description, 64);

    let mut out = String::with_capacity(f.links().len() * 2 * 90 + n * 200);
    let from = (0..n)
        .find(|&i| f.nodes()[i].kind == NodeKind::Ca)
        .unwrap_or(0);
    out.push_str("#\n# Topology file: generated by dfsssp-rs\n#\n");
    if n > 0 {
        let _ = writeln!(
            out,
            "# Initiated from node {:016x} port {:016x}",
            f.nodes()[from].guid,
            port_guid(from, 1)
        );
    }
    let order = [NodeKind::Switch, NodeKind::Ca, NodeKind::Router];
    for kind in order {
        for i in (0..n).filter(|&i| f.nodes()[i].kind == kind) {
            let node = &f.nodes()[i];
            let devid = match kind {
                NodeKind::Switch => "0xc738",
                _ => "0x1003",
            };
            let _ = write!(
                out,
                "\nvendid=0x2c9\ndevid={devid}\nsysimgguid=0x{:x}\n",
                node.guid
            );
            match kind {
                NodeKind::Switch => {
                    let (lid, lmc) = shown_lid(i, 0);
                    let _ = writeln!(out, "switchguid=0x{:x}({:x})", node.guid, port_guid(i, 0));
                    let _ = writeln!(
                        out,
                        "Switch\t{} \"{}\"\t\t# \"{}\" enhanced port 0 lid {lid} lmc {lmc}",
                        node.num_ports,
                        node_id(kind, node.guid),
                        desc(i)
                    );
                }
                _ => {
                    let (kw, gkw) = if kind == NodeKind::Ca {
                        ("Ca", "caguid")
                    } else {
                        ("Rt", "rtguid")
                    };
                    let _ = writeln!(out, "{gkw}=0x{:x}", node.guid);
                    let _ = writeln!(
                        out,
                        "{kw}\t{} \"{}\"\t\t# \"{}\"",
                        node.num_ports,
                        node_id(kind, node.guid),
                        desc(i)
                    );
                }
            }
            for p in 1..=node.num_ports {
                let Some(r) = ports.remote(i, p) else {
                    continue;
                };
                let rn = r.node as usize;
                let rkind = f.nodes()[rn].kind;
                let rid = node_id(rkind, f.nodes()[rn].guid);
                let (rlid, _) = shown_lid(rn, r.port);
                if kind == NodeKind::Switch {
                    let _ = write!(out, "[{p}]\t\"{rid}\"[{}]", r.port);
                    if rkind != NodeKind::Switch {
                        let _ = write!(out, "({:x}) ", port_guid(rn, r.port));
                    }
                    let _ = writeln!(out, "\t\t# \"{}\" lid {rlid} 4xQDR", desc(rn));
                } else {
                    let (lid, lmc) = shown_lid(i, p);
                    let _ = write!(out, "[{p}]({:x}) \t\"{rid}\"[{}]", port_guid(i, p), r.port);
                    if rkind != NodeKind::Switch {
                        let _ = write!(out, " ({:x}) ", port_guid(rn, r.port));
                    }
                    let _ = writeln!(
                        out,
                        "\t\t# lid {lid} lmc {lmc} \"{}\" lid {rlid} 4xQDR",
                        desc(rn)
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{FabricBuilder, PortRef};
    use crate::topo;

    #[test]
    fn round_trip_generated() {
        for spec in ["fattree2:6", "torus:3x2,2,par=2,lmc=2", "xgft:2;2,3;2,2"] {
            let f = topo::by_name(spec).unwrap();
            let text = write(&f);
            let g = parse(&text, "x.topo", NetOptions::default())
                .unwrap_or_else(|e| panic!("{spec}: {e}\n{text}"));
            assert_eq!(f.canonical(), g.canonical(), "{spec}");
        }
    }

    /// Port GUIDs that are not node GUID + port, a CA-to-CA link and a router survive.
    #[test]
    fn explicit_port_guids_and_odd_links() {
        let mut b = FabricBuilder::new();
        let s = b.add_node(NodeKind::Switch, 0xa0, 4, "sw").unwrap();
        let c = b
            .add_node(NodeKind::Ca, 0xb0, 2, "dual \"port\" host")
            .unwrap();
        let d = b.add_node(NodeKind::Ca, 0xc0, 1, "peer").unwrap();
        let r = b.add_node(NodeKind::Router, 0xd0, 1, "rtr").unwrap();
        b.link(PortRef { node: s, port: 1 }, PortRef { node: c, port: 1 })
            .unwrap();
        b.link(PortRef { node: s, port: 4 }, PortRef { node: r, port: 1 })
            .unwrap();
        b.link(PortRef { node: c, port: 2 }, PortRef { node: d, port: 1 })
            .unwrap();
        b.set_lid(PortRef { node: s, port: 0 }, 0xa0, 1, 0).unwrap();
        b.set_lid(PortRef { node: c, port: 1 }, 0x1234, 4, 2)
            .unwrap();
        b.set_lid(PortRef { node: c, port: 2 }, 0x1235, 8, 2)
            .unwrap();
        b.set_lid(PortRef { node: d, port: 1 }, 0x999, 12, 2)
            .unwrap();
        b.set_lid(PortRef { node: r, port: 1 }, 0xd1, 16, 2)
            .unwrap();
        let f = b.build().unwrap();
        let text = write(&f);
        let g = parse(&text, "x", NetOptions::default()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut want = f.canonical();
        want.nodes[1].3 = "dual 'port' host".into();
        assert_eq!(want, g.canonical(), "{text}");
    }

    /// A small fabric with a 2-port CA on two switches, written as ibnetdiscover does.
    fn sample() -> (Fabric, String) {
        let f = topo::by_name("torus:3x2,2,par=2").unwrap();
        let text = write(&f);
        (f, text)
    }

    fn parsed(text: &str) -> (Fabric, Vec<String>) {
        parse_with_notes(text, "dump.topo", NetOptions::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn crlf_line_ends() {
        let (f, text) = sample();
        let (g, notes) = parsed(&text.replace('\n', "\r\n"));
        assert_eq!(f.canonical(), g.canonical());
        assert!(notes.iter().any(|n| n.contains("CRLF")), "{notes:?}");
    }

    #[test]
    fn tabs_lost_and_lines_indented() {
        let (f, text) = sample();
        let pasted: String = text
            .replace('\t', "  ")
            .lines()
            .map(|l| {
                if l.starts_with('[') {
                    format!("   {}\n", l.replace("](", "] (").replace("\"[", "\" ["))
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let (g, notes) = parsed(&pasted);
        assert_eq!(f.canonical(), g.canonical());
        assert!(notes.iter().any(|n| n.contains("indented")), "{notes:?}");
    }

    #[test]
    fn comments_of_other_tools() {
        let (f, text) = sample();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        // inside a record, between port lines, and at the top
        let port = lines.iter().position(|l| l.starts_with('[')).unwrap();
        lines.insert(port + 1, "// cable replaced 2024-03".into());
        lines.insert(port + 1, "; checked by UFM".into());
        lines.insert(0, "! fabric A".into());
        lines.insert(0, "/* exported".into());
        lines.insert(1, "   from the head node */".into());
        let (g, notes) = parsed(&(lines.join("\n") + "\n"));
        assert_eq!(f.canonical(), g.canonical());
        assert!(
            notes.iter().any(|n| n.starts_with("4 comment")),
            "{notes:?}"
        );
    }

    #[test]
    fn fast_speeds_are_only_comments() {
        let (f, text) = sample();
        let text = text
            .replacen("4xQDR", "4xNDR", 3)
            .replacen("4xQDR", "2xHDR", 3)
            .replacen("4xQDR", "4xXDR", 3);
        let (g, notes) = parsed(&text);
        assert_eq!(f.canonical(), g.canonical());
        assert!(notes.iter().any(|n| n.contains("NDR")), "{notes:?}");
    }

    #[test]
    fn lid_0_on_unconfigured_ports() {
        let (f, text) = sample();
        // one CA port and one switch without a LID yet: all LIDs are assigned anew
        let ca_line = text
            .lines()
            .position(|l| l.starts_with('[') && l.contains("# lid "))
            .unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let l = &lines[ca_line];
        let at = l.find("# lid ").unwrap() + 6;
        let end = at + l[at..].find(' ').unwrap();
        lines[ca_line] = format!("{}0{}", &l[..at], &l[end..]);
        let sw = lines.iter().position(|l| l.starts_with("Switch")).unwrap();
        let l = &lines[sw];
        let at = l.find(" port 0 lid ").unwrap() + 12;
        let end = at + l[at..].find(' ').unwrap();
        lines[sw] = format!("{}0{}", &l[..at], &l[end..]);
        let (g, notes) = parsed(&(lines.join("\n") + "\n"));
        assert!(
            notes.iter().any(|n| n.starts_with("2 port(s) with lid 0")),
            "{notes:?}"
        );
        let links = |x: &Fabric| x.canonical().links;
        assert_eq!(links(&f), links(&g));
        assert_eq!(g.endpoints().len(), f.endpoints().len());
    }

    /// A terminal log of a session on a switch: PuTTY's header first, the CLI's prompt last.
    #[test]
    fn terminal_log_header_and_prompt() {
        let (f, text) = sample();
        let log = format!(
            "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2026.11.20 10:00:00 =~=~=~=~=~=~=~=~=~=~=~=\r\n\
             switch-5a3b2c [standalone: master] # ibnetdiscover\r\n{}\
             switch-5a3b2c [standalone: master] # ",
            text.replace('\n', "\r\n")
        );
        let (g, notes) = parsed(&log);
        assert_eq!(f.canonical(), g.canonical());
        assert!(
            notes.iter().any(|n| n.starts_with("2 line(s) before")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.starts_with("1 line(s) after")),
            "{notes:?}"
        );
    }

    /// A byte-order mark, then the shell prompt and command (a `[` line that is no port line).
    #[test]
    fn shell_prompt_after_a_byte_order_mark() {
        let (f, text) = sample();
        let dump =
            format!("\u{feff}[root@head01 topo]# ibnetdiscover\n{text}[root@head01 topo]# \n");
        let (g, notes) = parsed(&dump);
        assert_eq!(f.canonical(), g.canonical());
        assert!(notes.iter().any(|n| n.contains("before the first record")));
        // Inside the records such a line is still refused, with its number.
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(9, "[root@head01 topo]# ls");
        let e = parse(&lines.join("\n"), "dump.topo", NetOptions::default()).unwrap_err();
        assert_eq!(e.line(), Some(10), "{e}");
        // No record at all is no fabric.
        assert!(parse(
            "[root@head01 topo]# ibnetdiscover\n",
            "d",
            NetOptions::default()
        )
        .is_err());
    }

    /// `lid 65535` (0xFFFF) is printed by some tools for a port without a LID, like `lid 0`.
    #[test]
    fn lid_65535_is_unassigned() {
        let (f, text) = sample();
        let mut n = 0;
        let lines: Vec<String> = text
            .lines()
            .map(|l| match l.find("# lid ") {
                Some(at) if l.starts_with('[') && n < 3 => {
                    n += 1;
                    let at = at + 6;
                    let end = at + l[at..].find(' ').unwrap();
                    format!(
                        "{}{}{}",
                        &l[..at],
                        ["65535", "0xffff", "0xFFFF"][n - 1],
                        &l[end..]
                    )
                }
                _ => l.to_string(),
            })
            .collect();
        assert_eq!(n, 3);
        let (g, notes) = parsed(&(lines.join("\n") + "\n"));
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("3 port(s) with lid 0 or 65535")),
            "{notes:?}"
        );
        let links = |x: &Fabric| x.canonical().links;
        assert_eq!(links(&f), links(&g));
        assert_eq!(g.endpoints().len(), f.endpoints().len());
    }

    /// ibdiagnet's dump of a fabric with director chassis: every ASIC of a chassis carries the
    /// chassis' GUID as its node GUID, its own in parentheses (and in its `S-` id).
    #[test]
    fn chassis_asics_sharing_a_node_guid() {
        let (f, text) = sample();
        let chassis = 0x0002_c903_00ab_cd00u64;
        let mut n = 0;
        let lines: Vec<String> = text
            .lines()
            .map(|l| match switch_guid(l) {
                Some((_, port)) if n < 3 => {
                    n += 1;
                    format!("switchguid=0x{chassis:x}(0x{port:x})")
                }
                _ => l.to_string(),
            })
            .collect();
        assert_eq!(n, 3);
        let (g, notes) = parsed(&(lines.join("\n") + "\n"));
        assert_eq!(f.canonical(), g.canonical());
        assert!(
            notes.iter().any(|n| n.starts_with("3 switch(es)")),
            "{notes:?}"
        );
        // Two switches whose own GUIDs collide too are still refused.
        let (_, port) = switch_guid(
            &lines
                .iter()
                .find(|l| switch_guid(l).is_some())
                .unwrap()
                .clone(),
        )
        .unwrap();
        let mut twice = lines.clone();
        let second = twice
            .iter()
            .enumerate()
            .filter(|(_, l)| switch_guid(l).is_some())
            .nth(1)
            .unwrap()
            .0;
        twice[second] = format!("switchguid=0x{chassis:x}(0x{port:x})");
        let e = parse(&(twice.join("\n") + "\n"), "d", NetOptions::default()).unwrap_err();
        assert!(e.to_string().contains("already used"), "{e}");
    }

    /// NDR switches have 65 ports, a SHARP aggregation node on the last.
    #[test]
    fn sixty_five_ports_and_aggregation_nodes() {
        let f = topo::by_name("rail:2,2,1,4").unwrap();
        let (g, _) = parsed(&write(&f));
        assert_eq!(f.canonical(), g.canonical());
        assert!(g.nodes().iter().any(|n| n.num_ports == 65));
        assert!(g
            .nodes()
            .iter()
            .any(|n| n.description.contains("Aggregation Node")));
    }

    #[test]
    fn other_lines_are_refused_with_their_number() {
        let (_, text) = sample();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(7, "Swich 36 \"S-0000000000000001\"");
        let t = lines.join("\r\n");
        let e = parse(&t, "dump.topo", NetOptions::default()).unwrap_err();
        assert_eq!(e.line(), Some(8), "{e}");
        assert!(e.to_string().contains("dump.topo:8") && e.to_string().contains("Swich"));
        // a bad LID after the quirks are forgiven still names its line
        let t = text.replacen("lid 1 lmc 0", "lid 0xC001 lmc 0", 1);
        let e = parse(&t, "d", NetOptions::default()).unwrap_err();
        let n = text
            .lines()
            .position(|l| l.contains("lid 1 lmc 0"))
            .unwrap()
            + 1;
        assert_eq!(e.line(), Some(n), "{e}");
    }
}
