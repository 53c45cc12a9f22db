//! Random irregular fabrics: seeded with ChaCha8, connected by a random spanning tree first.

use std::collections::HashSet;

use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{attach_cas, checked_product};
use crate::fabric::{Fabric, FabricBuilder, NodeKind, PortRef};
use crate::topo::{param_err, Net, TopoError};

/// Random connected irregular fabric: `switches` switches of `ports` ports, `cas_per_switch` CAs on
/// ports `1..=cas_per_switch`, exactly `links` switch-to-switch links (first a random spanning
/// tree, then random pairs of switches with free ports). Seeded with ChaCha8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomParams {
    pub switches: u32,
    pub ports: u32,
    pub cas_per_switch: u32,
    pub links: u32,
    pub seed: u64,
    /// Allow several links between the same two switches.
    pub parallel: bool,
    pub lmc: u8,
}

/// Builds the [`RandomParams`] fabric: the switches and their CAs, a random spanning tree, then
/// random links between switches with free ports until there are `links`.
pub fn random(p: &RandomParams) -> Result<Fabric, TopoError> {
    const G: &str = "random";
    check_random(p)?;
    let n = p.switches;
    let free_per = p.ports - p.cas_per_switch;
    let nl = u64::from(p.links);

    let mut net = Net::new(G);
    for s in 0..n {
        net.switch(p.ports, format!("rnd S{s}"))?;
    }
    let mut ca_count = 0;
    for s in 0..n {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
        net.reserve_until(s, p.cas_per_switch + 1);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let mut open = OpenSwitches {
        open: Vec::with_capacity(n as usize),
        pos: vec![u32::MAX; n as usize],
        adjacent: HashSet::new(),
    };

    // random spanning tree: attach the switches in random order to a random placed one
    let mut order: Vec<u32> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    if free_per > 0 {
        open.add(order[0]);
    }
    for &s in &order[1..] {
        if open.open.is_empty() {
            return Err(param_err(
                G,
                "ran out of free ports while connecting the switches",
            ));
        }
        let u = open.open[rng.gen_range(0..open.open.len())];
        open.link(&mut net, s, u)?;
        open.drop_if_full(&net, u);
        open.add(s);
        open.drop_if_full(&net, s);
    }

    let mut placed = u64::from(n - 1);
    while placed < nl {
        let Some((a, b)) = open.pick_pair(&mut rng, p.parallel) else {
            return Err(param_err(
                G,
                format!("could place only {placed} of {} links (free ports left only between adjacent switches)", p.links),
            ));
        };
        open.link(&mut net, a, b)?;
        open.drop_if_full(&net, a);
        open.drop_if_full(&net, b);
        placed += 1;
    }
    net.into_fabric(p.lmc)
}

/// The [`RandomParams`]' errors: too few or too many links for the switches and their ports.
fn check_random(p: &RandomParams) -> Result<(), TopoError> {
    const G: &str = "random";
    let n = p.switches;
    if n == 0 {
        return Err(param_err(G, "need at least one switch"));
    }
    if p.ports == 0 || p.ports > 254 {
        return Err(param_err(
            G,
            format!("{} ports per switch outside 1..=254", p.ports),
        ));
    }
    checked_product(G, [u64::from(n), u64::from(p.cas_per_switch) + 1])?;
    if p.cas_per_switch > p.ports {
        return Err(param_err(
            G,
            format!("{} CAs do not fit {} ports", p.cas_per_switch, p.ports),
        ));
    }
    let free_per = p.ports - p.cas_per_switch;
    let nl = u64::from(p.links);
    if nl + 1 < u64::from(n) {
        return Err(param_err(
            G,
            format!("{} links cannot connect {n} switches", p.links),
        ));
    }
    if 2 * nl > u64::from(n) * u64::from(free_per) {
        return Err(param_err(
            G,
            format!(
                "{} links need {} ports, switches offer {}",
                p.links,
                2 * nl,
                u64::from(n) * u64::from(free_per)
            ),
        ));
    }
    if n > 2 && free_per < 2 && n > 1 {
        return Err(param_err(
            G,
            "switches need >= 2 free ports to be connected",
        ));
    }
    let pairs = u64::from(n) * u64::from(n - 1) / 2;
    if !p.parallel && nl > pairs {
        return Err(param_err(
            G,
            format!(
                "{} links exceed the {pairs} switch pairs (allow parallel links)",
                p.links
            ),
        ));
    }

    Ok(())
}

/// The random fabric's switches with a free port (with positions for O(1) removal), and the
/// switch pairs already linked.
struct OpenSwitches {
    open: Vec<u32>,
    pos: Vec<u32>,
    adjacent: HashSet<(u32, u32)>,
}

impl OpenSwitches {
    /// A switch pair as `adjacent` holds it.
    fn key(a: u32, b: u32) -> (u32, u32) {
        (a.min(b), a.max(b))
    }

    /// Switch `s` has a free port.
    fn add(&mut self, s: u32) {
        self.pos[s as usize] = self.open.len() as u32;
        self.open.push(s);
    }

    /// Switch `s` leaves the open set once its ports are all used.
    fn drop_if_full(&mut self, net: &Net, s: u32) {
        let (open, pos) = (&mut self.open, &mut self.pos);
        if net.free_ports(s) == 0 && pos[s as usize] != u32::MAX {
            let i = pos[s as usize] as usize;
            let last = *open.last().expect("s is in open");
            open.swap_remove(i);
            if last != s {
                pos[last as usize] = i as u32;
            }
            pos[s as usize] = u32::MAX;
        }
    }

    /// Links switches `a` and `b` (the caller drops them if now full).
    fn link(&mut self, net: &mut Net, a: u32, b: u32) -> Result<(), TopoError> {
        net.connect(a, b)?;
        self.adjacent.insert(Self::key(a, b));
        Ok(())
    }

    /// Two open switches that may be linked (distinct; not yet adjacent unless `parallel`):
    /// random tries first, then a scan so that a feasible link is never missed.
    fn pick_pair(&self, rng: &mut ChaCha8Rng, parallel: bool) -> Option<(u32, u32)> {
        let open = &self.open;
        let ok = |a: u32, b: u32| a != b && (parallel || !self.adjacent.contains(&Self::key(a, b)));
        let mut pick = None;
        for _ in 0..64 {
            if open.len() < 2 {
                break;
            }
            let a = open[rng.gen_range(0..open.len())];
            let b = open[rng.gen_range(0..open.len())];
            if ok(a, b) {
                pick = Some((a, b));
                break;
            }
        }
        if pick.is_none() {
            let start = if open.is_empty() {
                0
            } else {
                rng.gen_range(0..open.len())
            };
            'scan: for i in 0..open.len() {
                for j in i + 1..open.len() {
                    let (a, b) = (
                        open[(start + i) % open.len()],
                        open[(start + j) % open.len()],
                    );
                    if ok(a, b) {
                        pick = Some((a, b));
                        break 'scan;
                    }
                }
            }
        }
        pick
    }
}

/// A uniform random connected simple switch graph with `switches * avg_degree / 2` links and
/// `machines` machines each on a uniformly random switch, as a [`Fabric`]: switch ports
/// `1..=degree` are the switch links, machine ports follow; LIDs 1..=switches for the switches,
/// then one LID per machine.
/// The random irregular fabrics of Nienaber et al.'s evaluation (§5). `irregular:M,S,D` builds
/// one from a seed; the LID study draws many from one random stream.
pub fn random_irregular<R: Rng>(
    machines: u32,
    switches: u32,
    avg_degree: u32,
    rng: &mut R,
) -> Result<Fabric, TopoError> {
    const G: &str = "irregular";
    let n = switches as usize;
    let all_pairs = n * n.saturating_sub(1) / 2;
    let links = (u64::from(switches) * u64::from(avg_degree) / 2) as usize;
    if n < 2 || links < n - 1 || links > all_pairs {
        return Err(param_err(
            G,
            format!("{switches} switches cannot have average degree {avg_degree} and be connected"),
        ));
    }
    let edges = connected_random_edges(rng, n, links);
    let mut degree = vec![0u32; n];
    for &(a, b) in &edges {
        degree[a] += 1;
        degree[b] += 1;
    }
    let placement: Vec<usize> = (0..machines).map(|_| rng.gen_range(0..n)).collect();
    let mut hosted = vec![0u32; n];
    for &s in &placement {
        hosted[s] += 1;
    }
    let fab = |source| TopoError::Fabric {
        generator: G,
        source,
    };
    let mut b = FabricBuilder::new();
    let mut sw = Vec::with_capacity(n);
    for s in 0..n {
        let ports = degree[s] + hosted[s];
        let ports = u8::try_from(ports.max(1))
            .ok()
            .filter(|&p| p < 255)
            .ok_or_else(|| param_err(G, format!("switch {s} would need {ports} ports")))?;
        sw.push(
            b.add_node(NodeKind::Switch, 0x1000 + s as u64, ports, format!("sw{s}"))
                .map_err(fab)?,
        );
    }
    let mut next_port = vec![1u8; n];
    for &(x, y) in &edges {
        let (px, py) = (next_port[x], next_port[y]);
        next_port[x] += 1;
        next_port[y] += 1;
        b.link(
            PortRef {
                node: sw[x],
                port: px,
            },
            PortRef {
                node: sw[y],
                port: py,
            },
        )
        .map_err(fab)?;
    }
    for (s, &node) in sw.iter().enumerate() {
        b.set_lid(
            PortRef { node, port: 0 },
            0x1000 + s as u64,
            s as u16 + 1,
            0,
        )
        .map_err(fab)?;
    }
    for (i, &s) in placement.iter().enumerate() {
        let guid = 0x10_0000 + i as u64;
        let ca = b
            .add_node(NodeKind::Ca, guid, 1, format!("m{i}"))
            .map_err(fab)?;
        let port = next_port[s];
        next_port[s] += 1;
        b.link(PortRef { node: ca, port: 1 }, PortRef { node: sw[s], port })
            .map_err(fab)?;
        let lid = u16::try_from(n + 1 + i)
            .ok()
            .filter(|&l| l <= crate::fabric::MAX_UNICAST_LID)
            .ok_or_else(|| param_err(G, "more LIDs than the unicast range holds"))?;
        b.set_lid(PortRef { node: ca, port: 1 }, guid + 1, lid, 0)
            .map_err(fab)?;
    }
    b.build().map_err(fab)
}

/// `links` distinct switch pairs drawn uniformly, drawn again until they connect all `n`
/// switches.
fn connected_random_edges<R: Rng>(rng: &mut R, n: usize, links: usize) -> Vec<(usize, usize)> {
    let all_pairs = n * n.saturating_sub(1) / 2;
    let pair = |i: usize| -> (usize, usize) {
        // Unrank i into (a, b), a < b, row by row.
        let mut a = 0;
        let mut i = i;
        while i >= n - 1 - a {
            i -= n - 1 - a;
            a += 1;
        }
        (a, a + 1 + i)
    };
    loop {
        let chosen: Vec<(usize, usize)> = sample(rng, all_pairs, links)
            .into_iter()
            .map(pair)
            .collect();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], x: usize) -> usize {
            let mut x = x;
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        let mut comps = n;
        for &(a, b) in &chosen {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent[ra] = rb;
                comps -= 1;
            }
        }
        if comps == 1 {
            break chosen;
        }
    }
}
