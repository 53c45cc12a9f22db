//! Dimension-order routing (DOR) on tori and meshes whose coordinates [`coords`] recognised from
//! the switch graph: a route corrects dimension 0 first, then 1, and so on, each the shortest way
//! around its ring. Destination-based like every LFT routing: a switch's port towards a LID
//! depends on the two switches' coordinates and on the LID alone.
//!
//! On an even ring a destination half-way round is as near both ways; the tie goes by the parity
//! of the destination LID's rank among its switch's CA LIDs plus its switch's coordinate sum, so
//! that half of a switch's LIDs go each way and the ring's two directions carry the same load
//! (torus-2QoS sends every tie the way that does not cross its dateline). Parallel links between
//! two neighbours are shared out over the destinations by their rank too.
//!
//! Over several dimensions DOR's channel dependencies only lead from a dimension to later ones,
//! so credit loops can only close around a ring of 5 or more switches (a 3-ring's routes along
//! it are one hop; a 4-ring is read as two 2-rings); deadlock freedom is left to the layers
//! ([`crate::dfsssp`]) like any other routing's.
//!
//! **Cost.** Recognising the torus ([`coords`]): `O(C log radix + S·n³)`, `n ≤ 24` the distinct
//! neighbours of a switch (see there), so linear in the fabric. Routing: the channels grouped by
//! dimension and direction, `O((S+C)·d)` for `d` dimensions (at most [`coords::MAX_DIMS`]); then
//! every table entry computed directly from the two switches' coordinates in `O(d)`, switches in
//! parallel: `O(S·D·d)`, no search and no loads. Memory: a rank and a coordinate sum per LID
//! besides the two tables (ports and hop counts, `S·max_lid` bytes each).

pub mod conf;
pub mod coords;

#[cfg(test)]
mod tests;

use rayon::prelude::*;

pub use coords::{recognise, TorusCoords};

use crate::graph::{SwitchGraph, NO_SWITCH};
use crate::routing::{Lft, Routing, SwitchLidTable, NO_PATH};

/// Dimension-order routes over `t`'s coordinates; one layer, every switch reaching every LID
/// attached to a switch by a minimal path.
pub fn route(g: &SwitchGraph, t: &TorusCoords) -> Routing {
    let ns = g.num_switches();
    let dims = t.dims();
    // steps[(s * dims + i) * 2 + dir]: the channels leaving s one step along dimension i,
    // upwards (dir 0) or downwards (dir 1), by port. A size-2 dimension only goes "upwards".
    let mut steps: Vec<Vec<u32>> = vec![Vec::new(); ns * dims * 2];
    for s in 0..ns as u32 {
        let cs = t.of(s);
        for c in g.out_channels(s) {
            let h = g.chan_head()[c as usize];
            let ch = t.of(h);
            let Some(i) = (0..dims).find(|&i| cs[i] != ch[i]) else {
                continue;
            };
            let up = (cs[i] + 1) % t.sizes[i] == ch[i];
            steps[(s as usize * dims + i) * 2 + usize::from(!up)].push(c);
        }
    }
    // Every LID's rank among the LIDs of its switch's CA ports (0 for the switch's own), and
    // its switch's coordinate sum: ties go by the parity of their sum, parallel links by the
    // rank's Gray code (r + r/2: it alternates within either parity of r) plus the sum. Ranks of
    // CA LIDs alone: a switch LID amid them would send two CA LIDs in a row the same way.
    let mut rank = vec![0u32; ns];
    let spread: Vec<(u32, u32)> = g
        .dests()
        .iter()
        .map(|d| {
            if d.switch == NO_SWITCH {
                return (0, 0);
            }
            let mut r = 0;
            if d.exit_port != 0 {
                r = rank[d.switch as usize];
                rank[d.switch as usize] += 1;
            }
            (r, t.of(d.switch).iter().sum::<u32>())
        })
        .collect();

    let mut lft = Lft::new(ns, g.max_lid());
    let mut hops = SwitchLidTable::new(ns, g.max_lid(), NO_PATH);
    lft.tables_mut()
        .zip(hops.rows_mut())
        .enumerate()
        .par_bridge()
        .for_each(|(s, (ports, hop_row))| {
            let s = s as u32;
            let cs = t.of(s);
            for (d, &(r, sum)) in g.dests().iter().zip(&spread) {
                if d.switch == NO_SWITCH {
                    continue;
                }
                let lid = usize::from(d.lid);
                let last_link = u32::from(d.exit_port != 0);
                if d.switch == s {
                    ports[lid] = d.exit_port;
                    hop_row[lid] = last_link as u8;
                    continue;
                }
                let ct = t.of(d.switch);
                let mut dist = 0u32;
                let mut first = None;
                for i in 0..dims {
                    if cs[i] == ct[i] {
                        continue;
                    }
                    let k = t.sizes[i];
                    let (up, n) = if t.wrap[i] {
                        let fwd = (ct[i] + k - cs[i]) % k;
                        match (2 * fwd).cmp(&k) {
                            std::cmp::Ordering::Less => (true, fwd),
                            std::cmp::Ordering::Greater => (false, k - fwd),
                            std::cmp::Ordering::Equal => ((r + sum) % 2 == 0, fwd),
                        }
                    } else {
                        (ct[i] > cs[i] || k == 2, cs[i].abs_diff(ct[i]))
                    };
                    dist += n;
                    if first.is_none() {
                        first = Some((i, up));
                    }
                }
                let Some((i, up)) = first else {
                    continue;
                };
                let chans = &steps[(s as usize * dims + i) * 2 + usize::from(!up)];
                if chans.is_empty() {
                    continue;
                }
                // Shifted by the position along the ring, so that a destination's routes
                // alternate links from hop to hop.
                let pick = (r + r / 2 + sum + cs[i]) as usize % chans.len();
                ports[lid] = g.chan_port()[chans[pick] as usize];
                hop_row[lid] = u8::try_from(dist + last_link).unwrap_or(NO_PATH);
            }
        });
    Routing {
        lft,
        hops,
        layers: None,
        num_layers: 1,
    }
}
