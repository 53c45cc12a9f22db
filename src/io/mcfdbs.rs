//! OpenSM's multicast forwarding tables dump, `opensm.mcfdbs` (`osm_dump.c`, `dump_mcast_routes`):
//!
//! ```text
//!
//! Switch 0x0002c90000000001
//! LID    : Out Port(s)
//! 0xC000 : 0x001  0x003  0x00A
//! 0xC001 : 0x000  0x002
//! ```
//!
//! One block per switch with at least one entry (switches by GUID), MLIDs ascending, each with
//! the ports of its mask in hex, ascending. Read into one [`GroupMft`] per MLID; written in the
//! same format (so `route --groups` output and OpenSM's dump compare with `diff`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::{parse_hex_u64, Ctx, IoError};
use crate::fabric::Fabric;
use crate::graph::SwitchGraph;
use crate::multicast::{GroupMft, PortMask};

/// First multicast LID.
pub const MIN_MLID: u16 = 0xC000;

/// Parses `opensm.mcfdbs` against the fabric: one [`GroupMft`] per MLID (VL 0: the dump does not
/// say which SL a group uses), member switches from the masks ([`GroupMft::from_masks`]). A
/// switch GUID not in the fabric, a port the switch does not have, an MLID outside
/// 0xC000..=0xFFFF, or an entry before any switch header is an error naming the line.
pub fn parse_mcfdbs(
    text: &str,
    file: &str,
    f: &Fabric,
    g: &SwitchGraph,
) -> Result<Vec<GroupMft>, IoError> {
    let ctx = Ctx { file };
    let guid_switch: HashMap<u64, u32> = (0..g.num_switches() as u32)
        .map(|s| (g.switch_guid(s), s))
        .collect();
    let mut seen = vec![false; g.num_switches()];
    let mut cur: Option<u32> = None;
    let mut groups: BTreeMap<u16, Vec<(u32, PortMask)>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let p = line.trim();
        if p.is_empty() || p.starts_with('#') || p.starts_with("LID") {
            continue;
        }
        if let Some(rest) = p.strip_prefix("Switch ") {
            let guid = parse_hex_u64(rest.split_whitespace().next().unwrap_or(""))
                .ok_or_else(|| ctx.err(lineno, line, "cannot parse switch GUID"))?;
            let s = ctx.switch_of(lineno, line, &guid_switch, guid)?;
            if std::mem::replace(&mut seen[s as usize], true) {
                return Err(ctx.err(
                    lineno,
                    line,
                    format!("second block for switch 0x{guid:016x}"),
                ));
            }
            cur = Some(s);
            continue;
        }
        let (mlid_text, ports_text) = p
            .split_once(':')
            .ok_or_else(|| ctx.err(lineno, line, "expected a switch header or `0xMLID : ports`"))?;
        let s = cur.ok_or_else(|| ctx.err(lineno, line, "MFT entry before any switch header"))?;
        let mlid = parse_hex_u64(mlid_text.trim())
            .and_then(|m| u16::try_from(m).ok())
            .filter(|&m| m >= MIN_MLID)
            .ok_or_else(|| ctx.err(lineno, line, "cannot parse MLID (0xC000..0xFFFF)"))?;
        let nports = u64::from(f.nodes()[g.switch_node()[s as usize] as usize].num_ports);
        let mut mask = PortMask::EMPTY;
        for t in ports_text.split_whitespace() {
            let port = parse_hex_u64(t)
                .ok_or_else(|| ctx.err(lineno, line, format!("cannot parse port \"{t}\"")))?;
            if port > nports {
                return Err(ctx.err(
                    lineno,
                    line,
                    format!("switch has no port {port} (it has {nports})"),
                ));
            }
            mask.set(port as u8);
        }
        let entries = groups.entry(mlid).or_default();
        if entries.last().is_some_and(|&(x, _)| x == s) {
            return Err(ctx.err(
                lineno,
                line,
                format!("second entry for MLID 0x{mlid:04X} in this switch's block"),
            ));
        }
        entries.push((s, mask));
    }
    Ok(groups
        .into_iter()
        .map(|(mlid, masks)| GroupMft::from_masks(g, mlid, 0, masks))
        .collect())
}

/// Writes MFTs as OpenSM dumps them: switches by GUID, MLIDs ascending, ports ascending.
pub fn write_mcfdbs(g: &SwitchGraph, mfts: &[GroupMft]) -> String {
    let mut per_switch: Vec<Vec<(u16, PortMask)>> = vec![Vec::new(); g.num_switches()];
    for m in mfts {
        for &(s, mask) in &m.masks {
            if let Some(v) = per_switch.get_mut(s as usize) {
                v.push((m.mlid, mask));
            }
        }
    }
    let mut out = String::new();
    // Switch ids follow node GUIDs, so id order is OpenSM's GUID order.
    for (s, entries) in per_switch.iter_mut().enumerate() {
        entries.retain(|(_, m)| !m.is_empty());
        if entries.is_empty() {
            continue;
        }
        entries.sort_unstable_by_key(|&(mlid, _)| mlid);
        let _ = write!(
            out,
            "\nSwitch 0x{:016x}\nLID    : Out Port(s)\n",
            g.switch_guid(s as u32)
        );
        for (mlid, mask) in entries.iter() {
            let _ = write!(out, "0x{mlid:04X} :");
            for p in mask.ports() {
                let _ = write!(out, " 0x{p:03X} ");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{fabric, ring, with_graph};

    #[test]
    fn round_trip_and_openms_layout() {
        let (f, g) = fabric(3, 2, &[((0, 1), (1, 1)), ((1, 2), (2, 1))]);
        let text = "\nSwitch 0x0000000000000100\nLID    : Out Port(s)\n0xC000 : 0x001  0x00A \n\
                    \nSwitch 0x0000000000000101\nLID    : Out Port(s)\n0xC000 : 0x000  0x001  0x002 \n0xC001 : 0x002 \n\
                    \nSwitch 0x0000000000000102\nLID    : Out Port(s)\n0xC000 : 0x001  0x00B \n0xC001 : 0x001  0x00A \n";
        let mfts = parse_mcfdbs(text, "opensm.mcfdbs", &f, &g).unwrap();
        assert_eq!(mfts.len(), 2);
        assert_eq!(mfts[0].mlid, 0xC000);
        assert_eq!(mfts[0].member_switches, vec![0, 1, 2]);
        assert_eq!(mfts[1].member_switches, vec![2]);
        assert_eq!(
            mfts[0].masks[1].1.ports().collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(write_mcfdbs(&g, &mfts), text);
    }

    #[test]
    fn errors_name_file_and_line() {
        let (f, g) = with_graph(ring(3, 1, 0, true));
        let err = |t: &str| parse_mcfdbs(t, "m.dump", &f, &g).unwrap_err().to_string();
        let e = err("0xC000 : 0x001\n");
        assert!(
            e.starts_with("m.dump:1:") && e.contains("before any switch"),
            "{e}"
        );
        let e = err("\nSwitch 0x0000000000000999\n");
        assert!(
            e.starts_with("m.dump:2:") && e.contains("not in the fabric"),
            "{e}"
        );
        let e = err("Switch 0x0000000000000100\nLID    : Out Port(s)\n0xC000 : 0x0FF\n");
        assert!(
            e.starts_with("m.dump:3:") && e.contains("no port 255"),
            "{e}"
        );
        let e = err("Switch 0x0000000000000100\n0x0001 : 0x001\n");
        assert!(e.contains("MLID"), "{e}");
        let e = err("Switch 0x0000000000000100\n0xC000 : 0x001\n0xC000 : 0x002\n");
        assert!(
            e.starts_with("m.dump:3:") && e.contains("second entry"),
            "{e}"
        );
        let e = err("Switch 0x0000000000000100\n0xC000 : zz\n");
        assert!(e.contains("cannot parse port"), "{e}");
        let e = err("Switch 0x100\nSwitch 0x100\n");
        assert!(
            e.starts_with("m.dump:2:") && e.contains("second block"),
            "{e}"
        );
    }
}
