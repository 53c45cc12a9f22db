//! Building the groups' spanning trees and their MFT port masks (root choice and parent choice as
//! the [module doc](super) explains). Per group: one BFS per member switch (root choice), one BFS
//! from the root, one bottom-up parent pass; scratch arrays are reused across groups.
//!
//! **Cost** (`M_g` member switches of group g). Root choice: `O(M_g·(S + C))` for the BFSs (a
//! group on every switch: `O(S·(S + C))`). Growing a tree (BFS from the root, then the parent pass
//! over each needed switch's channels) is `O(S + C)`, once per candidate root compared (at most 16,
//! only when balancing and several tie) and once for the tree kept; then its masks, `O(S)`, and
//! sorting its member ports and MFT entries. In all `O(Σ_g (M_g + 17)·(S + C))`. Memory: 57 bytes
//! of scratch per switch (a 32-byte port mask among them), reused across groups, 12 per channel for
//! the loads; each tree keeps 12 bytes per tree switch and 40 per MFT entry.

use serde::Serialize;

use super::{GroupMft, McConfig, McError, McGroup, PortMask};
use crate::graph::{SwitchGraph, NO_CHANNEL, NO_SWITCH};
use crate::updown::UpDown;

/// One group's spanning tree.
#[derive(Clone, Debug, Serialize)]
pub struct McTree {
    pub mlid: u16,
    pub vl: u8,
    /// The root switch ([`NO_SWITCH`] for a group without members).
    pub root: u32,
    /// Tree switches, root first, by increasing depth.
    pub switches: Vec<u32>,
    /// Per entry of `switches`: the channel to its parent ([`NO_CHANNEL`] for the root).
    pub parent: Vec<u32>,
    /// Per entry of `switches`: hops from the root.
    pub depth: Vec<u32>,
    /// Hops from the root to the farthest tree switch.
    pub max_depth: u32,
    /// Member switches the root cannot reach (another connected component; with Up*/Down*, no
    /// common up-reachable root exists only then).
    pub unreached: Vec<u32>,
    /// Built along the Up*/Down* orientation.
    pub updown: bool,
    /// The MFT entries: per tree switch, its port mask.
    pub mft: GroupMft,
}

/// Checks that every member names an existing switch and a port of it that does not lead to
/// another switch.
pub(crate) fn validate(g: &SwitchGraph, gr: &McGroup) -> Result<(), McError> {
    let ns = g.num_switches() as u32;
    for m in &gr.members {
        if m.switch >= ns {
            return Err(McError::NoSuchSwitch {
                mlid: gr.mlid,
                switch: m.switch,
            });
        }
        let s = m.switch as usize;
        let ports = g.port_base()[s + 1] - g.port_base()[s];
        if u32::from(m.port) >= ports {
            return Err(McError::NoSuchPort {
                mlid: gr.mlid,
                switch: g.switch_label(m.switch),
                port: m.port,
            });
        }
        if m.port != 0 && g.channel_at(m.switch, m.port).is_some() {
            return Err(McError::SwitchPort {
                mlid: gr.mlid,
                switch: g.switch_label(m.switch),
                port: m.port,
            });
        }
    }
    Ok(())
}

/// Reusable per-group state.
struct Scratch {
    /// Root choice: member switches that reach each switch, and the farthest of them.
    reach_count: Vec<u32>,
    reach_max: Vec<u32>,
    dist: Vec<u32>,
    queue: Vec<u32>,
    /// Hops from the root (tree BFS).
    root_dist: Vec<u32>,
    needed: Vec<bool>,
    parent: Vec<u32>,
    mask: Vec<PortMask>,
}

/// Builds the trees of `groups` (already validated, in MLID order) with the given per-VL modes;
/// multicast loads accumulate over the groups. `orientation` is required for VLs in Up*/Down*
/// mode (without it they are built minimal-hop).
pub fn build_trees(
    g: &SwitchGraph,
    groups: &[&McGroup],
    unicast_loads: &[u64],
    cfg: &McConfig,
    updown_vls: &[bool],
    orientation: Option<&UpDown>,
) -> Vec<McTree> {
    let (ns, nc) = (g.num_switches(), g.num_channels());
    let mut sc = Scratch {
        reach_count: vec![0; ns],
        reach_max: vec![0; ns],
        dist: vec![u32::MAX; ns],
        queue: Vec::with_capacity(ns),
        root_dist: vec![u32::MAX; ns],
        needed: vec![false; ns],
        parent: vec![NO_CHANNEL; ns],
        mask: vec![PortMask::EMPTY; ns],
    };
    // Groups per channel direction so far (a tree link counts in both directions).
    let mut mcast_load = vec![0u32; nc];
    let unicast = |c: u32| unicast_loads.get(c as usize).copied().unwrap_or(0);
    // A link's unicast load, both directions.
    let link_unicast: Vec<u64> = (0..nc as u32)
        .map(|c| unicast(c) + unicast(g.chan_reverse()[c as usize]))
        .collect();
    let mut trees = Vec::with_capacity(groups.len());
    for gr in groups {
        let ud = match orientation {
            Some(o) if updown_vls.get(usize::from(gr.vl)).copied().unwrap_or(false) => Some(o),
            _ => None,
        };
        let on = TreeGround {
            g,
            cfg,
            ud,
            mcast_load: &mcast_load,
            link_unicast: &link_unicast,
        };
        let t = build_one(&on, gr, &mut sc);
        for &c in &t.parent {
            if c != NO_CHANNEL {
                mcast_load[c as usize] += 1;
                mcast_load[g.chan_reverse()[c as usize] as usize] += 1;
            }
        }
        trees.push(t);
    }
    trees
}

/// One group's tree: its root chosen, grown to every member switch, and its MFT masks.
fn build_one(on: &TreeGround<'_>, gr: &McGroup, sc: &mut Scratch) -> McTree {
    let ud = on.ud;
    let mut member_switches: Vec<u32> = gr.members.iter().map(|m| m.switch).collect();
    member_switches.sort_unstable();
    member_switches.dedup();
    let empty = McTree {
        mlid: gr.mlid,
        vl: gr.vl,
        root: NO_SWITCH,
        switches: Vec::new(),
        parent: Vec::new(),
        depth: Vec::new(),
        max_depth: 0,
        unreached: Vec::new(),
        updown: ud.is_some(),
        mft: GroupMft {
            mlid: gr.mlid,
            vl: gr.vl,
            masks: Vec::new(),
            member_switches: member_switches.clone(),
        },
    };
    if member_switches.is_empty() {
        return empty;
    }
    let candidates = root_candidates(on, &member_switches, sc);
    let root = least_loaded_root(on, &candidates, &member_switches, sc);
    grow(on, root, &member_switches, sc);
    let unreached: Vec<u32> = member_switches
        .iter()
        .copied()
        .filter(|&m| sc.root_dist[m as usize] == u32::MAX)
        .collect();
    let Grown {
        switches,
        parent,
        depth,
        masks,
    } = collect_tree(on, gr, root, sc);
    let max_depth = depth.iter().copied().max().unwrap_or(0);
    McTree {
        root,
        switches,
        parent,
        depth,
        max_depth,
        unreached,
        mft: GroupMft { masks, ..empty.mft },
        ..empty
    }
}

/// What a group's tree is grown on: the fabric, the configuration, the Up*/Down* orientation
/// its VL keeps to (if any), and the loads so far.
struct TreeGround<'a> {
    g: &'a SwitchGraph,
    cfg: &'a McConfig,
    ud: Option<&'a UpDown>,
    /// Groups per channel direction so far.
    mcast_load: &'a [u32],
    /// A link's unicast load, both directions.
    link_unicast: &'a [u64],
}

/// Root candidates: reached from the most member switches (all of them in a connected
/// fabric), over up channels only with Up*/Down*; among them the least maximum distance from
/// the member switches (OpenSM's criterion). Up to [`ROOT_CANDIDATES`] when balancing, else one.
fn root_candidates(on: &TreeGround<'_>, member_switches: &[u32], sc: &mut Scratch) -> Vec<u32> {
    let (g, cfg, ud) = (on.g, on.cfg, on.ud);
    let is_up = |c: u32| ud.is_none_or(|o| o.is_up(g, c));
    sc.reach_count.fill(0);
    sc.reach_max.fill(0);
    for &m in member_switches {
        bfs(g, m, &is_up, &mut sc.dist, &mut sc.queue);
        for &x in &sc.queue {
            sc.reach_count[x as usize] += 1;
            sc.reach_max[x as usize] = sc.reach_max[x as usize].max(sc.dist[x as usize]);
        }
    }
    let mut best = (u32::MAX, u32::MAX);
    for x in 0..g.num_switches() as u32 {
        let n = sc.reach_count[x as usize];
        if n > 0 {
            best = best.min((u32::MAX - n, sc.reach_max[x as usize]));
        }
    }
    (0..g.num_switches() as u32)
        .filter(|&x| {
            let n = sc.reach_count[x as usize];
            n > 0 && (u32::MAX - n, sc.reach_max[x as usize]) == best
        })
        .take(if cfg.balance { ROOT_CANDIDATES } else { 1 })
        .collect()
}

/// Among equally good roots, the one whose tree meets the least multicast load: the highest
/// load on one of its links, then the sum over its links, then the lowest id (ids ascend).
fn least_loaded_root(
    on: &TreeGround<'_>,
    candidates: &[u32],
    member_switches: &[u32],
    sc: &mut Scratch,
) -> u32 {
    let mcast_load = on.mcast_load;
    let mut root = candidates[0];
    if candidates.len() > 1 {
        let mut best_cost = (u32::MAX, u64::MAX);
        for &x in candidates {
            grow(on, x, member_switches, sc);
            let mut cost = (0u32, 0u64);
            for &s in &sc.queue {
                let c = sc.parent[s as usize];
                if sc.needed[s as usize] && s != x && c != NO_CHANNEL {
                    cost.0 = cost.0.max(mcast_load[c as usize]);
                    cost.1 += u64::from(mcast_load[c as usize]);
                }
            }
            reset(sc);
            if cost < best_cost {
                best_cost = cost;
                root = x;
            }
        }
    }
    root
}

/// A grown tree's switches (BFS order), their parent channels and depths, and the port masks.
struct Grown {
    switches: Vec<u32>,
    parent: Vec<u32>,
    depth: Vec<u32>,
    masks: Vec<(u32, PortMask)>,
}

/// The tree [`grow`] left in `sc`, rooted at `root`, with every switch's ports (tree links and
/// the members that receive); clears `sc` for the next tree.
fn collect_tree(on: &TreeGround<'_>, gr: &McGroup, root: u32, sc: &mut Scratch) -> Grown {
    let (g, cfg) = (on.g, on.cfg);
    let mut switches = Vec::new();
    let mut parent = Vec::new();
    let mut depth = Vec::new();
    for &s in &sc.queue {
        if !sc.needed[s as usize] {
            continue;
        }
        let c = if s == root {
            NO_CHANNEL
        } else {
            sc.parent[s as usize]
        };
        switches.push(s);
        parent.push(c);
        depth.push(sc.root_dist[s as usize]);
        if c != NO_CHANNEL {
            // Up to the parent, and down from the parent to this switch.
            sc.mask[s as usize].set(g.chan_port()[c as usize]);
            let p = g.chan_head()[c as usize];
            sc.mask[p as usize].set(g.chan_head_port()[c as usize]);
        }
    }
    for m in &gr.members {
        if !sc.needed[m.switch as usize] {
            continue;
        }
        if m.port == 0 || !m.send_only || cfg.send_only_receive {
            sc.mask[m.switch as usize].set(m.port);
        }
    }
    let mut masks: Vec<(u32, PortMask)> = switches
        .iter()
        .map(|&s| (s, sc.mask[s as usize]))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    masks.sort_unstable_by_key(|&(s, _)| s);
    for &s in &sc.queue {
        sc.mask[s as usize] = PortMask::EMPTY;
    }
    reset(sc);
    Grown {
        switches,
        parent,
        depth,
        masks,
    }
}

/// Root candidates whose trees are compared (more only cost time: on fat trees the spines, on
/// tori the few centres of the members).
const ROOT_CANDIDATES: usize = 16;

/// Grows the tree from `root`: hops from the root (`root_dist`, BFS order in `queue`), and
/// bottom-up (farthest first, so a switch knows whether a candidate parent is already in the
/// tree when it chooses) the parent channel of every switch the members need (`needed`,
/// `parent`).
fn grow(on: &TreeGround<'_>, root: u32, member_switches: &[u32], sc: &mut Scratch) {
    let (g, cfg, ud) = (on.g, on.cfg, on.ud);
    let (mcast_load, link_unicast) = (on.mcast_load, on.link_unicast);
    let is_up = |c: u32| ud.is_none_or(|o| o.is_up(g, c));
    let is_down = |c: u32| ud.is_none_or(|o| !o.is_up(g, c));
    // Distances from the root over the channels a packet may take down the tree.
    bfs(g, root, &is_down, &mut sc.root_dist, &mut sc.queue);
    for &m in member_switches {
        if sc.root_dist[m as usize] != u32::MAX {
            sc.needed[m as usize] = true;
        }
    }
    for &s in sc.queue.iter().rev() {
        if !sc.needed[s as usize] || s == root {
            continue;
        }
        let ds = sc.root_dist[s as usize];
        let mut best = (u8::MAX, u32::MAX, u64::MAX, NO_CHANNEL);
        for c in g.out_channels(s) {
            let p = g.chan_head()[c as usize];
            if sc.root_dist[p as usize].wrapping_add(1) != ds || !is_up(c) {
                continue;
            }
            let key = if cfg.balance {
                (
                    u8::from(!sc.needed[p as usize]),
                    mcast_load[c as usize],
                    link_unicast[c as usize],
                    c,
                )
            } else {
                (0, 0, 0, c)
            };
            if key < best {
                best = key;
            }
        }
        // The BFS reached `s` from such a neighbour, so a candidate exists.
        let c = best.3;
        sc.parent[s as usize] = c;
        if c != NO_CHANNEL {
            sc.needed[g.chan_head()[c as usize] as usize] = true;
        }
    }
}

/// Clears what [`grow`] set (the switches it reached are in `queue`).
fn reset(sc: &mut Scratch) {
    for &s in &sc.queue {
        sc.needed[s as usize] = false;
        sc.parent[s as usize] = NO_CHANNEL;
    }
}

/// BFS from `from` over the channels `allowed` accepts: `dist` (reset here) gets the hops, `queue`
/// the reached switches in visiting order.
fn bfs(
    g: &SwitchGraph,
    from: u32,
    allowed: &impl Fn(u32) -> bool,
    dist: &mut [u32],
    queue: &mut Vec<u32>,
) {
    dist.fill(u32::MAX);
    queue.clear();
    dist[from as usize] = 0;
    queue.push(from);
    let mut i = 0;
    while i < queue.len() {
        let x = queue[i];
        i += 1;
        for c in g.out_channels(x) {
            let y = g.chan_head()[c as usize];
            if dist[y as usize] == u32::MAX && allowed(c) {
                dist[y as usize] = dist[x as usize] + 1;
                queue.push(y);
            }
        }
    }
}
