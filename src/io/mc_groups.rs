//! The multicast groups file `dfsssp-rs route --groups` reads: one group per line,
//!
//! ```text
//! # MLID [vl=N] MEMBER...        ('#' starts a comment)
//! 0xC000 vl=0 H_0_0 H_0_1 send:H_1_0 0x0002c90300000011/2 S_0
//! ```
//!
//! - `MLID`: hex (`0xC000`..`0xFFFE`) or decimal; each at most once.
//! - `vl=N`: the VL the group's packets use (its SL through the SL-to-VL table); default 0.
//! - `MEMBER`: `[send:]NODE[/PORT]`. `NODE` is a node GUID, a port GUID (`0x...`) or a node
//!   description (as in the fabric file; no whitespace). A CA or router without `/PORT` joins by
//!   its lowest port attached to a switch; a switch joins as itself (port 0). `send:` makes a
//!   send-only member.

use std::collections::HashMap;

use super::{parse_hex_u64, Ctx, IoError};
use crate::fabric::{Fabric, NodeKind};
use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::multicast::{McGroup, McMember};

/// Parses a groups file against the fabric; errors name the file, the line and the member.
pub fn parse_groups(
    text: &str,
    file: &str,
    f: &Fabric,
    g: &SwitchGraph,
) -> Result<Vec<McGroup>, IoError> {
    let ctx = Ctx { file };
    let mut by_desc: HashMap<&str, Option<u32>> = HashMap::new();
    let mut by_guid: HashMap<u64, u32> = HashMap::new();
    for (i, n) in f.nodes().iter().enumerate() {
        by_guid.insert(n.guid, i as u32);
        by_desc
            .entry(n.description.as_str())
            .and_modify(|x| *x = None)
            .or_insert(Some(i as u32));
    }
    let by_port_guid: HashMap<u64, (u32, u8)> = f
        .endpoints()
        .iter()
        .map(|e| (e.port_guid, (e.node, e.port)))
        .collect();
    let mut groups: Vec<McGroup> = Vec::new();
    let mut seen_mlid: HashMap<u16, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut tokens = line.split_whitespace();
        let mlid_text = tokens.next().unwrap_or("");
        let mlid = if mlid_text.starts_with("0x") || mlid_text.starts_with("0X") {
            parse_hex_u64(mlid_text)
        } else {
            mlid_text.parse().ok()
        }
        .and_then(|m| u16::try_from(m).ok())
        .filter(|&m| (0xC000..0xFFFF).contains(&m))
        .ok_or_else(|| ctx.err(lineno, raw, "cannot parse MLID (0xC000..0xFFFE)"))?;
        if let Some(first) = seen_mlid.insert(mlid, lineno) {
            return Err(ctx.err(
                lineno,
                raw,
                format!("MLID 0x{mlid:04X} already given at line {first}"),
            ));
        }
        let mut vl = 0u8;
        let mut members = Vec::new();
        for t in tokens {
            if let Some(v) = t.strip_prefix("vl=") {
                vl = v
                    .parse()
                    .ok()
                    .filter(|&v| v < 15)
                    .ok_or_else(|| ctx.err(lineno, raw, format!("bad VL \"{v}\" (0..14)")))?;
                continue;
            }
            let (send_only, t2) = match t.strip_prefix("send:") {
                Some(rest) => (true, rest),
                None => (false, t),
            };
            let (name, port) = match t2.rsplit_once('/') {
                Some((n, p)) => {
                    let p: u8 = p.parse().map_err(|_| {
                        ctx.err(lineno, raw, format!("member \"{t}\": bad port \"{p}\""))
                    })?;
                    (n, Some(p))
                }
                None => (t2, None),
            };
            let bad = |why: String| ctx.err(lineno, raw, format!("member \"{t}\": {why}"));
            let guid = parse_hex_u64(name).filter(|_| name.starts_with("0x"));
            let (node, port) = match guid {
                // A node GUID first (a CA's port GUID often equals its node GUID).
                Some(guid) => match (by_guid.get(&guid), by_port_guid.get(&guid)) {
                    (Some(&n), _) => (n, port),
                    (None, Some(&(n, p))) => (n, Some(p)),
                    (None, None) => return Err(bad("no node or port has this GUID".into())),
                },
                None => match by_desc.get(name) {
                    Some(Some(n)) => (*n, port),
                    Some(None) => return Err(bad("several nodes have this description".into())),
                    None => return Err(bad("no node has this GUID or description".into())),
                },
            };
            members.push(resolve(f, g, node, port, send_only).map_err(bad)?);
        }
        groups.push(McGroup { mlid, vl, members });
    }
    Ok(groups)
}

/// The member a node (and port) stands for.
fn resolve(
    f: &Fabric,
    g: &SwitchGraph,
    node: u32,
    port: Option<u8>,
    send_only: bool,
) -> Result<McMember, String> {
    let n = &f.nodes()[node as usize];
    if n.kind == NodeKind::Switch {
        if port.is_some_and(|p| p != 0) {
            return Err("a switch joins as itself (port 0)".into());
        }
        let s = g.node_switch()[node as usize];
        return Ok(McMember {
            switch: s,
            port: 0,
            send_only,
        });
    }
    let mut ports: Vec<_> = f
        .endpoints()
        .iter()
        .filter(|e| e.node == node && port.is_none_or(|p| p == e.port))
        .filter_map(|e| g.dest_of_lid(e.base_lid).map(|d| (e.port, *d)))
        .filter(|(_, d)| d.switch != NO_SWITCH)
        .collect();
    ports.sort_unstable_by_key(|(p, _)| *p);
    match ports.first() {
        Some((_, d)) => Ok(McMember {
            switch: d.switch,
            port: d.exit_port,
            send_only,
        }),
        None => Err(match port {
            Some(p) => format!("port {p} has no LID or is not attached to a switch"),
            None => "no port with a LID attached to a switch".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::fabric;

    #[test]
    fn members_by_description_guid_and_port() {
        let (f, g) = fabric(2, 2, &[((0, 1), (1, 1))]);
        let ca_desc = f
            .nodes()
            .iter()
            .find(|n| n.kind == NodeKind::Ca)
            .unwrap()
            .description
            .clone();
        let text =
            format!("# groups\n0xC000 sw0 {ca_desc}\n49153 vl=2 send:{ca_desc} sw1 # comment\n");
        let gs = parse_groups(&text, "groups.txt", &f, &g).unwrap();
        assert_eq!(gs.len(), 2);
        assert_eq!(
            gs[0].members[0],
            McMember {
                switch: 0,
                port: 0,
                send_only: false
            }
        );
        assert_eq!(gs[0].members[1].port, 10);
        assert_eq!((gs[1].mlid, gs[1].vl), (0xC001, 2));
        assert!(gs[1].members[0].send_only);
        let guid = format!("0x{:016x}", f.nodes()[g.switch_node()[1] as usize].guid);
        let gs = parse_groups(&format!("0xC005 {guid}\n"), "g", &f, &g).unwrap();
        assert_eq!(gs[0].members[0].switch, 1);
    }

    #[test]
    fn errors_name_line_and_member() {
        let (f, g) = fabric(2, 1, &[((0, 1), (1, 1))]);
        let err = |t: &str| parse_groups(t, "g.txt", &f, &g).unwrap_err().to_string();
        assert!(err("\n0x0001 sw0\n").starts_with("g.txt:2:"));
        let e = err("0xC000 nosuch\n");
        assert!(e.contains("\"nosuch\"") && e.contains("no node"), "{e}");
        let e = err("0xC000 sw0\n0xC000 sw1\n");
        assert!(e.starts_with("g.txt:2:") && e.contains("line 1"), "{e}");
        assert!(err("0xC000 sw0/3\n").contains("port 0"));
        assert!(err("0xC000 vl=99 sw0\n").contains("bad VL"));
    }
}
