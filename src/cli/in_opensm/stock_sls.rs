//! Stock dfsssp's lanes, which OpenSM keeps inside its SA: with debug logging (`-D 0x4F`) stock
//! dfsssp prints the VL of every CA pair ("route from src_lid=A to dest_lid=B on vl=V", its
//! `vltable_print`). A second run of the same fabric with that flag gives them; its LFTs must equal
//! the judged run's (else the SLs are not those routes'). The SA hands out V, or V + a random
//! offset within V's split (`get_dfsssp_sl`): each split lane holds a subset of V's paths, so V's
//! credit-loop verdict holds for any draw. The check is ibdmchk's, CA to CA, with those SLs (the
//! per-switch lanes of `eval` cannot hold two CAs of one switch on different lanes).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

use dfsssp_rs::fabric::NodeKind;
use dfsssp_rs::io::osm_dump;

use super::procs;

/// What the debug run and ibdmchk found.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StockSls {
    /// Distinct VLs of the CA pairs (before the SA's random split).
    pub base_lanes: u8,
    /// ibdmchk's verdict with these SLs: Some(true) no credit loops, Some(false) loops, None
    /// not determined (with why).
    pub deadlock_free: Option<bool>,
    pub note: String,
}

/// The path-SL file ibdmchk reads: `0x<source CA node GUID> <DLID> <SL>`.
fn path_sl_text(judged: &Path, vls: &[(u16, u16, u8)]) -> Result<String, String> {
    let lst = judged.join("opensm-subnet.lst");
    let text = std::fs::read_to_string(&lst).map_err(|e| format!("{}: {e}", lst.display()))?;
    let f = osm_dump::parse_subnet_lst(&text, "opensm-subnet.lst", 0).map_err(|e| e.to_string())?;
    let node_of: HashMap<u16, u64> = f
        .endpoints()
        .iter()
        .filter(|e| f.nodes()[e.node as usize].kind != NodeKind::Switch)
        .map(|e| (e.base_lid, f.nodes()[e.node as usize].guid))
        .collect();
    let mut out = String::with_capacity(vls.len() * 28);
    for &(s, d, v) in vls {
        if let Some(g) = node_of.get(&s) {
            out.push_str(&format!("0x{g:016x} {d} {v}\n"));
        }
    }
    Ok(out)
}

/// Judges the SLs of the debug run in `debug` (its VL table `vls`) for the routes OpenSM
/// dumped in `judged`.
pub fn check(judged: &Path, debug: &Path, vls: &[(u16, u16, u8)], limit: Duration) -> StockSls {
    let unknown = |note: String| StockSls {
        base_lanes: 0,
        deadlock_free: None,
        note,
    };
    let lfts = |d: &Path| std::fs::read(d.join("opensm-lfts.dump")).ok();
    match (lfts(judged), lfts(debug)) {
        (Some(a), Some(b)) if a == b => {}
        (Some(_), Some(_)) => {
            return unknown("the run with debug logging routed differently".into())
        }
        _ => return unknown("no LFT dump of the run with debug logging".into()),
    }
    if vls.is_empty() {
        return unknown("its debug log holds no VL table".into());
    }
    let base_lanes = vls.iter().map(|x| x.2).collect::<BTreeSet<u8>>().len() as u8;
    let psl = judged.join("opensm-path-sl-stock.dump");
    match path_sl_text(judged, vls) {
        Ok(t) => {
            if let Err(e) = std::fs::write(&psl, t) {
                return unknown(format!("{}: {e}", psl.display()));
            }
        }
        Err(e) => return unknown(e),
    }
    let args = [
        "-s",
        "opensm-subnet.lst",
        "-f",
        "opensm.fdbs",
        "-m",
        "opensm.mcfdbs",
        "-c",
        "opensm-path-sl-stock.dump",
    ];
    // ibdmchk may crash while exiting, after its report: the report decides
    let ran = procs::run_limited("ibdmchk", &args, judged, "ibdmchk.out", limit);
    let report = std::fs::read_to_string(judged.join("ibdmchk.out")).unwrap_or_default();
    let (deadlock_free, note) = if report.contains("-E- credit loops in routing") {
        (
            Some(false),
            "ibdmchk: credit loops with the SLs of OpenSM's VL table",
        )
    } else if report
        .to_ascii_lowercase()
        .contains("no credit loops found")
    {
        (
            Some(true),
            "ibdmchk: no credit loops with the SLs of OpenSM's VL table",
        )
    } else if ran.is_none() {
        (None, "ibdmchk did not finish in time")
    } else {
        (None, "ibdmchk gave no verdict")
    };
    StockSls {
        base_lanes,
        deadlock_free,
        note: note.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::osm_log::vl_line;

    #[test]
    fn vl_table_lines() {
        let l = "Nov 26 21:00:00 000001 [1] 0x08 ->    route from src_lid=12 to dest_lid=7 on vl=3";
        assert_eq!(vl_line(l), Some((12, 7, 3)));
        assert_eq!(vl_line("route from src_lid=x to dest_lid=7 on vl=3"), None);
    }
}
