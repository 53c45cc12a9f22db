//! The minimal routes towards one destination switch as a DAG ordered by distance
//! ([`MinimalDag`]), and their supply to the balancing in routing order ([`DagsAhead`]): built
//! ahead on a thread on large fabrics, in place on small ones. `O(S + C)` per destination switch
//! for `S` switches and `C` channels.

use crate::graph::{order_by_distance, SwitchGraph, NO_SWITCH};

/// The minimal routes towards one switch: the switches that reach it by increasing distance, each
/// with the channels leading one hop closer (candidates of switch `order[i]`, i >= 1, are
/// `cands[cand_start[i-1]..cand_start[i]]`). Built once per destination switch and shared by all
/// the LIDs behind it.
#[derive(Default)]
pub(crate) struct MinimalDag {
    pub(crate) to: u32,
    pub(crate) order: Vec<u32>,
    pub(crate) cand_start: Vec<u32>,
    pub(crate) cands: Vec<u32>,
    /// Head switch of each candidate channel (saves a lookup in the hot loop).
    pub(crate) heads: Vec<u32>,
    /// Index into `order` after the last switch of each distance (`level_end[0] == 1`: the
    /// destination switch alone).
    pub(crate) level_end: Vec<u32>,
}

impl MinimalDag {
    pub(crate) fn build(
        &mut self,
        g: &SwitchGraph,
        to_switch: u32,
        to: &[u16],
        counts: &mut Vec<u32>,
    ) {
        self.to = to_switch;
        order_by_distance(to, &mut self.order, counts);
        self.cand_start.clear();
        self.cand_start.push(0);
        self.cands.clear();
        self.heads.clear();
        for &s in self.order.iter().skip(1) {
            let ds = to[s as usize];
            for c in g.out_channels(s) {
                let head = g.chan_head()[c as usize];
                if to[head as usize].wrapping_add(1) == ds {
                    self.cands.push(c);
                    self.heads.push(head);
                }
            }
            self.cand_start.push(self.cands.len() as u32);
        }
        self.level_end.clear();
        for (i, w) in self.order.windows(2).enumerate() {
            if to[w[0] as usize] != to[w[1] as usize] {
                self.level_end.push(i as u32 + 1);
            }
        }
        if !self.order.is_empty() {
            self.level_end.push(self.order.len() as u32);
        }
    }
}

/// The minimal DAGs towards the destination switches of a routing order, one per run of
/// destinations behind the same switch, built on another thread a few ahead of the balancing
/// that reads them (which is sequential, and would otherwise build each itself, on one core).
/// On small fabrics they are built in place: handing a DAG between threads (a futex wake and a
/// context switch) costs more there than building it.
pub(crate) struct DagsAhead<'e> {
    current: MinimalDag,
    source: DagSource<'e>,
}

enum DagSource<'e> {
    Thread {
        ready: std::sync::mpsc::Receiver<MinimalDag>,
        /// Used DAGs go back to be built again, so their buffers are reused.
        spent: std::sync::mpsc::Sender<MinimalDag>,
    },
    InPlace {
        g: &'e SwitchGraph,
        dist: &'e crate::graph::SwitchDistances,
        counts: Vec<u32>,
    },
}

impl<'e> DagsAhead<'e> {
    /// DAGs built ahead in this many.
    const AHEAD: usize = 4;

    /// (switch, LID) paths below which the DAGs are built in place: there balancing a
    /// destination switch's LIDs takes about what one hand-over costs (measured: in place is
    /// faster up to the 6x6x6 torus's 233,280 paths, the thread from the 8x8x8 torus's 786,432).
    const IN_PLACE_MAX_PATHS: usize = 1 << 18;

    /// Runs `f` with the DAGs towards the switches of the destinations `order` (indices into
    /// `g.dests()`), built on a thread of `scope`, or in place on small fabrics.
    pub(crate) fn spawn<'s>(
        scope: &'s std::thread::Scope<'s, 'e>,
        g: &'e SwitchGraph,
        dist: &'e crate::graph::SwitchDistances,
        order: &'e [u32],
    ) -> Self {
        let current = MinimalDag {
            to: NO_SWITCH,
            ..Default::default()
        };
        if g.num_switches() * order.len() < Self::IN_PLACE_MAX_PATHS {
            return DagsAhead {
                current,
                source: DagSource::InPlace {
                    g,
                    dist,
                    counts: Vec::new(),
                },
            };
        }
        let (to_main, ready) = std::sync::mpsc::sync_channel(Self::AHEAD);
        let (spent, from_main) = std::sync::mpsc::channel::<MinimalDag>();
        scope.spawn(move || {
            let mut counts = Vec::new();
            let mut last = NO_SWITCH;
            for &di in order {
                let s = g.dests()[di as usize].switch;
                if s == last {
                    continue;
                }
                last = s;
                let mut dag = from_main.try_recv().unwrap_or_default();
                dag.build(g, s, dist.to(s), &mut counts);
                if to_main.send(dag).is_err() {
                    return; // the balancing stopped early
                }
            }
        });
        DagsAhead {
            current,
            source: DagSource::Thread { ready, spent },
        }
    }

    /// The DAG towards `switch`, the destination switch of the next destination in order.
    pub(crate) fn towards(&mut self, switch: u32) -> &MinimalDag {
        if self.current.to != switch {
            match &mut self.source {
                DagSource::Thread { ready, spent } => {
                    let next = ready.recv().expect("a DAG for every run of the order");
                    let used = std::mem::replace(&mut self.current, next);
                    let _ = spent.send(used);
                }
                DagSource::InPlace { g, dist, counts } => {
                    self.current.build(g, switch, dist.to(switch), counts);
                }
            }
            debug_assert_eq!(self.current.to, switch);
        }
        &self.current
    }
}
