//! After a repair: where a fresh computation would send paths over the cables and switches that
//! came back. A fresh computation of the repaired fabric (the engine's, or balanced SSSP routes)
//! is the guide: a switch whose
//! guided path to a destination crosses a returned channel is not kept and takes the guide's
//! next hop, so the returned elements carry the share a fresh computation gives them. Paths whose
//! guided route avoids them stay as they are (no churn), and so do their layers.
//!
//! Without it a returned fat-tree spine stayed idle: no path is shorter through it than through
//! the surviving spines, so nothing had a reason to move.

use crate::graph::{Dest, SwitchGraph, NO_CHANNEL};
use crate::routing::{DestPaths, Routing, NO_PATH};

/// The fresh routing of the repaired fabric and which of its channels are new.
pub(super) struct Guide {
    routing: Routing,
    /// Per channel of the new graph: it had no counterpart before the change.
    returned: Vec<bool>,
    /// Every path follows the guide, not only those over returned channels.
    everywhere: bool,
}

/// Per-destination working space of [`Guide::mark`], reused across destinations.
pub(super) struct GuideScratch {
    paths: DestPaths,
    column: Vec<u8>,
    /// Per switch: its guided path to the destination last marked crosses a returned channel.
    follow: Vec<bool>,
}

impl GuideScratch {
    pub(super) fn new(ns: usize) -> Self {
        GuideScratch {
            paths: DestPaths::new(ns),
            column: vec![NO_PATH; ns],
            follow: vec![false; ns],
        }
    }
}

impl Guide {
    /// `routing`: a fresh computation of `g`'s fabric; `chan_new[old channel]`: the same channel
    /// in `g` ([`NO_CHANNEL`] when it vanished).
    pub(super) fn new(g: &SwitchGraph, routing: Routing, chan_new: &[u32]) -> Self {
        let mut returned = vec![true; g.num_channels()];
        for &c in chan_new {
            if c != NO_CHANNEL {
                returned[c as usize] = false;
            }
        }
        Guide {
            routing,
            returned,
            everywhere: false,
        }
    }

    /// The same guide, followed by every path: a path is kept only where it is the guide's.
    pub(super) fn everywhere(self) -> Guide {
        Guide {
            everywhere: true,
            ..self
        }
    }

    pub(super) fn lft(&self) -> &crate::routing::Lft {
        &self.routing.lft
    }

    /// Whether the old path from switch `s` to `lid`, leaving by `port` (`None` where it ends
    /// at `s`), may be kept (its head's path kept too) as far as the guide is concerned; `sc`
    /// marked for the destination.
    pub(super) fn keeps(&self, s: u32, port: Option<u8>, lid: u16, sc: &GuideScratch) -> bool {
        if self.everywhere {
            port.is_none_or(|p| p == self.port(s, lid))
        } else {
            !sc.follow[s as usize]
        }
    }

    /// The guide's next hop (port) at switch `s` towards `lid`.
    pub(super) fn port(&self, s: u32, lid: u16) -> u8 {
        if lid > self.routing.lft.max_lid {
            return NO_PATH;
        }
        self.routing.lft.port(s, lid)
    }

    /// Fills `sc.follow` for destination `d` of `g`.
    pub(super) fn mark(&self, g: &SwitchGraph, d: &Dest, sc: &mut GuideScratch) {
        if self.everywhere {
            // Followed everywhere, [`Guide::keeps`] compares ports instead.
            return;
        }
        sc.follow.fill(false);
        for (s, p) in sc.column.iter_mut().enumerate() {
            *p = self.port(s as u32, d.lid);
        }
        sc.paths.resolve_column(g, d, Some(&sc.column));
        sc.paths.compute_order();
        // Root first: a path follows the guide when its own channel or the rest of its path
        // crosses a returned channel.
        for &s in sc.paths.order.iter().rev() {
            let c = sc.paths.next[s as usize];
            if c != NO_CHANNEL && sc.paths.end[s as usize].is_ok() {
                let head = g.chan_head()[c as usize] as usize;
                sc.follow[s as usize] = self.returned[c as usize] || sc.follow[head];
            }
        }
    }
}
