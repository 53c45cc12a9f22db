//! OpenSM's "LID matrix" of hop counts, written by `build_lid_matrices` while the engine routes.
//!
//! What it holds (see [`super::tables`] for why): every switch gets a row per switch LID with, per
//! port, the fewest hops to that switch when leaving by that port (entry 0 the least of them, 0
//! for the switch's own LIDs), and no rows for CA/router LIDs. It depends on the fabric alone, not
//! on the routes, so it is written beside the routing instead of after it: on a thread that the
//! kernel runs only when a core would otherwise idle (the balancing and cycle breaking are
//! sequential), and whatever is left when the engine returns is shared by both threads, the
//! helper raised to normal scheduling first ([`super::raw::IdleHelper`]): on a busy host the
//! routing thread must not wait on a thread the kernel starves. A failed routing stops it.
//!
//! Never half-written: a switch OpenSM has not prepared, or whose hop table is too small, is left
//! alone (the plan then refuses the routing); if a row cannot be allocated, or the routing fails
//! afterwards, every switch's new tables are reset ([`LidMatrixWriter::reset`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::error::WriteError;
use super::ffi;
use super::raw::{LockedSubnet, SwitchLookupError, SwitchTables};
use crate::fabric::{Fabric, NodeKind};
use crate::graph::{SwitchDistances, SwitchGraph, NO_SWITCH};
use crate::routing::NO_PATH;

/// The hop counts of every switch towards every switch.
pub(crate) struct LidMatrix {
    /// `dist[t * n + s]`: fewest switch-to-switch hops from switch `s` to switch `t`
    /// ([`NO_PATH`] when unreachable or beyond 254).
    dist: Vec<u8>,
    /// Every switch LID with its switch, sorted by LID.
    switch_lids: Vec<(u16, u32)>,
}

impl LidMatrix {
    /// The matrix of `g`, computed on the calling thread alone.
    pub fn new(g: &SwitchGraph) -> Self {
        let n = g.num_switches();
        let all = SwitchDistances::on_this_thread(g);
        let mut dist = vec![NO_PATH; n * n];
        for (t, out) in dist.chunks_mut(n.max(1)).enumerate() {
            for (o, &d) in out.iter_mut().zip(all.to(t as u32)) {
                *o = if d < u16::from(NO_PATH) - 1 {
                    d as u8
                } else {
                    NO_PATH
                };
            }
        }
        let switch_lids = g
            .dests()
            .iter()
            .filter(|d| d.exit_port == 0 && d.switch != NO_SWITCH)
            .map(|d| (d.lid, d.switch))
            .collect();
        LidMatrix { dist, switch_lids }
    }

    /// Rows every switch gets: one per switch LID.
    pub fn rows_per_switch(&self) -> usize {
        self.switch_lids.len()
    }

    /// The row of switch `s` for a LID of switch `t`: per port, the fewest hops to `t` leaving
    /// by that port ([`NO_PATH`] for ports not leading to a switch that reaches `t`); entry 0
    /// the least of them, 0 for `t`'s own LIDs. `row` has one entry per port, port 0 included.
    pub fn hop_row(&self, g: &SwitchGraph, s: u32, t: u32, row: &mut [u8]) {
        row.fill(NO_PATH);
        if s == t {
            row[0] = 0;
            return;
        }
        let n = g.num_switches();
        let dist_t = &self.dist[t as usize * n..(t as usize + 1) * n];
        let mut least = NO_PATH;
        for c in g.out_channels(s) {
            let d = dist_t[g.chan_head()[c as usize] as usize];
            let port = usize::from(g.chan_port()[c as usize]);
            if d < NO_PATH - 1 && port < row.len() {
                row[port] = row[port].min(d + 1);
                least = least.min(d + 1);
            }
        }
        row[0] = least;
    }
}

/// Writes the LID matrix into OpenSM's switches from any number of threads at once: each takes
/// the next switch not yet taken ([`Self::work`]).
pub(crate) struct LidMatrixWriter<'a> {
    fabric: &'a Fabric,
    /// One handle per switch node, in node order; `handle_of_node[node]` its index.
    handles: Vec<Mutex<SwitchTables<'a>>>,
    handle_of_node: Vec<u32>,
    /// The switch graph and its matrix, computed by the first thread that needs them (`None`:
    /// the graph could not be built, a fault).
    matrix: OnceLock<Option<(SwitchGraph, LidMatrix)>>,
    /// The next switch (graph id) to take.
    next: AtomicUsize,
    rows: AtomicU64,
    /// Set at the first fault: every thread stops.
    stop: AtomicBool,
    /// The first fault: a row that could not be allocated (switch GUID, LID), or a graph that
    /// could not be built.
    fault: Mutex<Option<LidMatrixFault>>,
    /// Test hook: act as if `malloc` failed for the first row of switches from this graph id on.
    fail_from: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LidMatrixFault {
    NoMemory { guid: u64, lid: u16 },
    Graph(String),
}

impl<'a> LidMatrixWriter<'a> {
    /// Handles on every switch of `fabric` (read from `osm` just before): nothing is written yet.
    pub fn new(
        api: &ffi::Api,
        osm: &'a mut LockedSubnet<'_>,
        fabric: &'a Fabric,
        fail_from: Option<usize>,
    ) -> Result<Self, WriteError> {
        let nodes = fabric.nodes();
        let switches: Vec<usize> = (0..nodes.len())
            .filter(|&n| nodes[n].kind == NodeKind::Switch)
            .collect();
        let mut handle_of_node = vec![u32::MAX; nodes.len()];
        for (i, &n) in switches.iter().enumerate() {
            handle_of_node[n] = i as u32;
        }
        let handles = osm
            .switch_tables(api, switches.iter().map(|&n| nodes[n].guid))
            .map_err(|e| match e {
                SwitchLookupError::Missing(guid) => WriteError::Vanished { guid },
                SwitchLookupError::Twice(guid) => WriteError::PlannedTwice { guid },
            })?
            .into_iter()
            .map(Mutex::new)
            .collect();
        Ok(LidMatrixWriter {
            fabric,
            handles,
            handle_of_node,
            matrix: OnceLock::new(),
            next: AtomicUsize::new(0),
            rows: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            fault: Mutex::new(None),
            fail_from,
        })
    }

    /// Every thread stops writing rows (the routing failed: what was written is reset).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn fail(&self, fault: LidMatrixFault) {
        self.stop.store(true, Ordering::Relaxed);
        let mut first = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert(fault);
    }

    /// Writes the rows of switches not yet taken by any thread until none is left (or a fault
    /// stops every thread).
    pub fn work(&self) {
        let Some((g, m)) = self.graph_and_matrix() else {
            return;
        };
        let per_switch = m.rows_per_switch() as u64;
        let mut row = [NO_PATH; 256];
        loop {
            let s = self.next.fetch_add(1, Ordering::Relaxed);
            if s >= g.num_switches() || self.stop.load(Ordering::Relaxed) {
                return;
            }
            let node = g.switch_node()[s] as usize;
            let Some(handle) = self.handles.get(self.handle_of_node[node] as usize) else {
                continue;
            };
            let mut sw = handle.lock().unwrap_or_else(|e| e.into_inner());
            let limits = sw.limits();
            let fits = m
                .switch_lids
                .last()
                .is_none_or(|&(lid, _)| lid < limits.num_hops);
            // The plan refuses such a switch; nothing to write into.
            if !sw.is_prepared() || !fits {
                continue;
            }
            let row = &mut row[..usize::from(limits.num_ports)];
            let injected = self.fail_from.is_some_and(|n| s >= n);
            for &(lid, t) in &m.switch_lids {
                m.hop_row(g, s as u32, t, row);
                if sw.set_hop_row(lid, row, injected).is_err() {
                    let guid = self.fabric.nodes()[node].guid;
                    self.fail(LidMatrixFault::NoMemory { guid, lid });
                    return;
                }
            }
            self.rows.fetch_add(per_switch, Ordering::Relaxed);
        }
    }

    fn graph_and_matrix(&self) -> Option<&(SwitchGraph, LidMatrix)> {
        let built = self
            .matrix
            .get_or_init(|| match SwitchGraph::new(self.fabric) {
                Ok(g) => {
                    let m = LidMatrix::new(&g);
                    Some((g, m))
                }
                Err(e) => {
                    self.fail(LidMatrixFault::Graph(e.to_string()));
                    None
                }
            });
        built.as_ref()
    }

    /// Rows written, or (every switch's new tables reset) why not all of them were.
    pub fn finish(&self, api: &ffi::Api) -> Result<u64, WriteError> {
        let fault = self.fault.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (switches, injected) = (self.handles.len(), self.fail_from.is_some());
        match fault {
            None => Ok(self.rows.load(Ordering::Relaxed)),
            Some(fault) => {
                self.reset(api);
                Err(match fault {
                    LidMatrixFault::NoMemory { guid, lid } => WriteError::NoMemory {
                        guid,
                        lid,
                        injected,
                        switches,
                    },
                    LidMatrixFault::Graph(e) => WriteError::Graph { error: e, switches },
                })
            }
        }
    }

    /// Every switch's `new_lft` and hop counts back to none (when the routing fails after the
    /// matrix was written).
    pub fn reset(&self, api: &ffi::Api) {
        for h in &self.handles {
            h.lock()
                .unwrap_or_else(|e| e.into_inner())
                .reset(api, NO_PATH);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_matrix_rows_give_fewest_hops_per_port() {
        // A ring of 4 switches with a CA on sw0 (fixture above only has 2): build one.
        use crate::fabric::{FabricBuilder, NodeKind, PortRef};
        let mut b = FabricBuilder::new();
        let sw: Vec<u32> = (0..4)
            .map(|i| {
                b.add_node(NodeKind::Switch, 0x10 + i, 4, format!("sw{i}"))
                    .unwrap()
            })
            .collect();
        for i in 0..4 {
            // port 1 -> next, port 2 <- previous
            b.link(
                PortRef {
                    node: sw[i],
                    port: 1,
                },
                PortRef {
                    node: sw[(i + 1) % 4],
                    port: 2,
                },
            )
            .unwrap();
        }
        let ca = b.add_node(NodeKind::Ca, 0x20, 1, "ca").unwrap();
        b.link(
            PortRef { node: ca, port: 1 },
            PortRef {
                node: sw[0],
                port: 3,
            },
        )
        .unwrap();
        for (i, &n) in sw.iter().enumerate() {
            b.set_lid(
                PortRef { node: n, port: 0 },
                0x10 + i as u64,
                1 + i as u16,
                0,
            )
            .unwrap();
        }
        b.set_lid(PortRef { node: ca, port: 1 }, 0x21, 8, 0)
            .unwrap();
        let g = SwitchGraph::new(&b.build().unwrap()).unwrap();
        let p = LidMatrix::new(&g);
        assert_eq!(
            p.switch_lids,
            vec![(1, 0), (2, 1), (3, 2), (4, 3)],
            "switch LIDs only"
        );
        assert_eq!(p.rows_per_switch(), 4);
        let mut row = [0u8; 5];
        p.hop_row(&g, 0, 0, &mut row);
        assert_eq!(row, [0, NO_PATH, NO_PATH, NO_PATH, NO_PATH], "own LID");
        p.hop_row(&g, 0, 1, &mut row);
        assert_eq!(
            row,
            [1, 1, 3, NO_PATH, NO_PATH],
            "next switch: 1 hop ahead, 3 around the back"
        );
        p.hop_row(&g, 0, 2, &mut row);
        assert_eq!(
            row,
            [2, 2, 2, NO_PATH, NO_PATH],
            "opposite switch: 2 either way"
        );
    }
}
