//! A routing: the linear forwarding tables (LFTs) of all switches, their hop counts, and (for
//! deadlock-free routings) the virtual layer of every path. Paths are identified by
//! (source switch, destination LID): all traffic entering the fabric at one switch towards one LID
//! follows the same LFT entries, so it needs only one layer, and the tables grow with
//! switches x LIDs like the LFTs themselves rather than with LIDs squared.

use std::fmt;

use rayon::prelude::*;
use serde::Serialize;

mod traverse;

pub use traverse::{for_each_column, minimal_hops, walked_hops, Columns, DestPaths};

use crate::graph::{SwitchGraph, NO_SWITCH};

/// LFT entry for "no route" (OpenSM's OSM_NO_PATH).
pub const NO_PATH: u8 = 0xFF;

/// Forwarding tables for all switches: `port(s, lid)` is the port switch `s` forwards `lid` to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lft {
    /// LIDs 0..=max_lid have entries.
    pub max_lid: u16,
    num_switches: usize,
    ports: Vec<u8>,
}

impl Lft {
    pub fn new(num_switches: usize, max_lid: u16) -> Self {
        let stride = usize::from(max_lid) + 1;
        Lft {
            max_lid,
            num_switches,
            ports: vec![NO_PATH; num_switches * stride],
        }
    }

    #[inline]
    pub fn stride(&self) -> usize {
        usize::from(self.max_lid) + 1
    }

    pub fn num_switches(&self) -> usize {
        self.num_switches
    }

    #[inline]
    pub fn port(&self, s: u32, lid: u16) -> u8 {
        self.ports[s as usize * self.stride() + usize::from(lid)]
    }

    #[inline]
    pub fn set(&mut self, s: u32, lid: u16, port: u8) {
        let stride = self.stride();
        self.ports[s as usize * stride + usize::from(lid)] = port;
    }

    /// The table of one switch, indexed by LID.
    pub fn table(&self, s: u32) -> &[u8] {
        let stride = self.stride();
        &self.ports[s as usize * stride..(s as usize + 1) * stride]
    }

    pub fn table_mut(&mut self, s: u32) -> &mut [u8] {
        let stride = self.stride();
        &mut self.ports[s as usize * stride..(s as usize + 1) * stride]
    }

    /// All tables, one LID-indexed chunk per switch (for filling them in parallel).
    pub fn tables_mut(&mut self) -> std::slice::ChunksMut<'_, u8> {
        let stride = self.stride();
        self.ports.chunks_mut(stride)
    }

    /// All tables back to back (`stride()` bytes each).
    pub fn values_mut(&mut self) -> &mut [u8] {
        &mut self.ports
    }

    /// How many entries differ from `other`'s (tables of the same shape; every entry where not).
    pub fn differing_entries(&self, other: &Lft) -> usize {
        if (self.max_lid, self.num_switches) != (other.max_lid, other.num_switches) {
            return self.ports.len().max(other.ports.len());
        }
        (self.ports.iter().zip(&other.ports))
            .filter(|(a, b)| a != b)
            .count()
    }
}

/// Fills the switch-major tables `out` (`ns` rows of `stride` bytes, as [`Lft`]) from the
/// destination-major `rows` (`rows[lid * ns + s]`, `stride` rows of `ns` bytes).
pub fn transpose_dest_major(rows: &[u8], ns: usize, out: &mut [u8]) {
    if ns == 0 || out.is_empty() {
        return;
    }
    let stride = out.len() / ns;
    assert_eq!(
        rows.len(),
        ns * stride,
        "destination-major rows of the tables' shape"
    );
    let columns: Vec<(usize, &[u8])> = rows.chunks_exact(ns).enumerate().collect();
    scatter_columns(&columns, ns, out);
}

/// Writes each `(lid, column)` (`column[s]`: switch `s`'s entry, `ns` of them) into the
/// switch-major tables `out` (`ns` rows, as [`Lft`]). In blocks of 64 switches, in parallel:
/// each column is read a cache line at a time, where a switch at a time would read one byte per
/// line (README, "Known limits", the 48-port 3-level tree: what it saves there).
pub fn scatter_columns(columns: &[(usize, &[u8])], ns: usize, out: &mut [u8]) {
    const BLOCK: usize = 64;
    if ns == 0 || out.is_empty() {
        return;
    }
    let stride = out.len() / ns;
    let work = ns * columns.len();
    crate::par::sized(out.par_chunks_mut(BLOCK * stride).enumerate(), work).for_each(
        |(b, block)| {
            let (s0, width) = (b * BLOCK, block.len() / stride);
            for &(lid, column) in columns {
                for (k, &v) in column[s0..s0 + width].iter().enumerate() {
                    block[k * stride + lid] = v;
                }
            }
        },
    );
}

/// A switch-by-LID table of small numbers (hop counts, virtual layers), same shape as [`Lft`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchLidTable {
    stride: usize,
    values: Vec<u8>,
}

impl SwitchLidTable {
    pub fn new(num_switches: usize, max_lid: u16, fill: u8) -> Self {
        let stride = usize::from(max_lid) + 1;
        SwitchLidTable {
            stride,
            values: vec![fill; num_switches * stride],
        }
    }

    #[inline]
    pub fn get(&self, s: u32, lid: u16) -> u8 {
        self.values[s as usize * self.stride + usize::from(lid)]
    }

    #[inline]
    pub fn set(&mut self, s: u32, lid: u16, v: u8) {
        self.values[s as usize * self.stride + usize::from(lid)] = v;
    }

    /// (rows, stride): one row per switch, `stride` = max LID + 1.
    pub fn shape(&self) -> (usize, usize) {
        (self.values.len() / self.stride.max(1), self.stride)
    }

    pub fn row(&self, s: u32) -> &[u8] {
        &self.values[s as usize * self.stride..(s as usize + 1) * self.stride]
    }

    pub fn row_mut(&mut self, s: u32) -> &mut [u8] {
        &mut self.values[s as usize * self.stride..(s as usize + 1) * self.stride]
    }

    pub fn rows_mut(&mut self) -> std::slice::ChunksMut<'_, u8> {
        self.values.chunks_mut(self.stride)
    }

    /// All rows back to back (`shape().1` bytes each).
    pub fn values_mut(&mut self) -> &mut [u8] {
        &mut self.values
    }
}

/// The complete output of a routing engine.
#[derive(Clone, Debug)]
pub struct Routing {
    pub lft: Lft,
    /// Hops from switch `s` to `lid`, counting the final link to a CA (0 for the switch's own LID);
    /// [`NO_PATH`] where unreachable. What OpenSM's `osm_switch_set_hops` wants.
    pub hops: SwitchLidTable,
    /// Virtual layer of path (source switch, DLID); `None` for routings with one layer only.
    pub layers: Option<SwitchLidTable>,
    /// Number of virtual layers the routing uses (1 when `layers` is `None`).
    pub num_layers: u8,
}

impl Routing {
    /// The layer (virtual lane / SL) of the path from switch `s` to `lid`.
    #[inline]
    pub fn layer(&self, s: u32, lid: u16) -> u8 {
        self.layers.as_ref().map_or(0, |l| l.get(s, lid))
    }

    /// The routing as its SLs number its layers, when layer `i` travels on SL `i + by` (a lane
    /// left to multicast): what OpenSM's dumps of it show. Layers `0..by` hold no path.
    pub fn shifted_layers(mut self, by: u8) -> Routing {
        if by == 0 {
            return self;
        }
        let ns = self.lft.num_switches();
        let mut layers = self
            .layers
            .take()
            .unwrap_or_else(|| SwitchLidTable::new(ns, self.lft.max_lid, 0));
        for s in 0..ns as u32 {
            layers.row_mut(s).iter_mut().for_each(|l| *l += by);
        }
        self.layers = Some(layers);
        self.num_layers += by;
        self
    }
}

/// Why a path (source switch, LID) does not deliver: the one fault type of walks, destination
/// trees, verification, deadlock removal and metrics. Switches are dense ids; [`describe`]
/// names them (by GUID and description with the fabric, see `verify::switch_name`).
///
/// [`describe`]: RouteFault::describe
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RouteFault {
    /// Switch `at` has no entry (NO_PATH) for the LID.
    NoEntry { at: u32 },
    /// Switch `at` forwards by `port`, which leads neither to a switch nor to the LID's port.
    DeadEnd { at: u32, port: u8 },
    /// The path never arrives: more hops than switches, a forwarding loop through `at`.
    Loop { at: u32 },
    /// The LID lies beyond the forwarding tables.
    BeyondTable,
    /// The LID is not owned by a port attached to any switch.
    UnknownLid,
    /// No path can exist: source and destination are in different parts of the fabric (counted,
    /// not a routing fault).
    Disconnected,
}

impl RouteFault {
    /// The switch the path stopped at, when there is one.
    pub fn at(&self) -> Option<u32> {
        match *self {
            RouteFault::NoEntry { at }
            | RouteFault::DeadEnd { at, .. }
            | RouteFault::Loop { at } => Some(at),
            _ => None,
        }
    }

    /// Its name in JSON and reports: "no-entry", "dead-end", "loop", ...
    pub fn kind(&self) -> &'static str {
        match self {
            RouteFault::NoEntry { .. } => "no-entry",
            RouteFault::DeadEnd { .. } => "dead-end",
            RouteFault::Loop { .. } => "loop",
            RouteFault::BeyondTable => "beyond-table",
            RouteFault::UnknownLid => "unknown-lid",
            RouteFault::Disconnected => "disconnected",
        }
    }

    /// The fault in words, switches named by `name`.
    pub fn describe(&self, name: impl Fn(u32) -> String) -> String {
        match *self {
            RouteFault::NoEntry { at } => format!("no entry at {}", name(at)),
            RouteFault::DeadEnd { at, port } => format!("dead end at {} port {port}", name(at)),
            RouteFault::Loop { at } => format!("forwarding loop through {}", name(at)),
            RouteFault::BeyondTable => "LID beyond the forwarding table".into(),
            RouteFault::UnknownLid => "LID not attached".into(),
            RouteFault::Disconnected => "no path in the fabric".into(),
        }
    }
}

impl fmt::Display for RouteFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(|s| format!("switch #{s}")))
    }
}

/// How walking the LFTs from a switch towards a LID ended: delivered after that many
/// switch-to-switch channels, or a fault.
pub type WalkEnd = Result<u32, RouteFault>;

/// Follows the LFTs from switch `from` towards `lid`, calling `on_channel` for every
/// switch-to-switch channel taken. Independent of how the tables were computed, so metrics and
/// verification can judge any routing, ours or one read from OpenSM's dumps.
pub fn walk(
    g: &SwitchGraph,
    lft: &Lft,
    from: u32,
    lid: u16,
    mut on_channel: impl FnMut(u32),
) -> WalkEnd {
    let Some(d) = g.dest_of_lid(lid) else {
        return Err(RouteFault::UnknownLid);
    };
    if d.switch == NO_SWITCH || lid > lft.max_lid {
        return Err(RouteFault::UnknownLid);
    }
    let mut at = from;
    let limit = g.num_switches() as u32;
    let mut hops = 0u32;
    loop {
        let p = lft.port(at, lid);
        if at == d.switch && p == d.exit_port {
            return Ok(hops);
        }
        if p == NO_PATH {
            return Err(RouteFault::NoEntry { at });
        }
        match g.channel_at(at, p) {
            Some(c) => {
                on_channel(c);
                at = g.chan_head()[c as usize];
                hops += 1;
                if hops > limit {
                    return Err(RouteFault::Loop { at });
                }
            }
            None => return Err(RouteFault::DeadEnd { at, port: p }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocked_transpose_moves_every_entry_to_its_switch_row() {
        // Switch counts below, at and past a block boundary, and one LID.
        for (ns, stride) in [(1, 1), (3, 5), (64, 9), (130, 17), (200, 1)] {
            let rows: Vec<u8> = (0..ns * stride).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = vec![NO_PATH; ns * stride];
            transpose_dest_major(&rows, ns, &mut out);
            for lid in 0..stride {
                for s in 0..ns {
                    assert_eq!(out[s * stride + lid], rows[lid * ns + s], "{ns}x{stride}");
                }
            }
        }
    }

    #[test]
    fn scattered_columns_land_at_their_lids_and_leave_the_rest() {
        // LIDs with gaps, out of order; 70 switches (a block and a part).
        let ns = 70;
        let cols: Vec<(usize, Vec<u8>)> = [9usize, 2, 5]
            .iter()
            .map(|&lid| (lid, (0..ns).map(|s| (s + lid) as u8).collect()))
            .collect();
        let refs: Vec<(usize, &[u8])> = cols.iter().map(|(l, c)| (*l, &c[..])).collect();
        let stride = 10;
        let mut out = vec![NO_PATH; ns * stride];
        scatter_columns(&refs, ns, &mut out);
        for s in 0..ns {
            for lid in 0..stride {
                let want = match lid {
                    2 | 5 | 9 => (s + lid) as u8,
                    _ => NO_PATH,
                };
                assert_eq!(out[s * stride + lid], want, "switch {s}, LID {lid}");
            }
        }
    }
}
