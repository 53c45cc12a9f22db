//! Failed hardware on a generated fabric: production fabrics always have a few cables down and
//! now and then a switch, and routing time must be measured there too, not only on pristine ones.
//!
//! [`fail`] takes switches with no CA attached out (the top of a tree: spines; the ones farthest
//! from every CA), then a share of the switch-to-switch cables, both drawn from a seed, and keeps
//! the switch graph connected: a cable on a spanning tree built from the cables drawn last is
//! never taken, so the count is exact whenever the fabric has that many cables to spare. The same
//! spec and seed always give the same fabric. LIDs of what remains stay as they were (holes where
//! a switch went, as after a real failure).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

use super::{param_err, TopoError};
use crate::fabric::{Fabric, NodeKind, PortRef};
use crate::union_find::UnionFind;

/// What fails.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Share of the switch-to-switch cables taken out, in percent (0..100).
    pub cut_percent: f64,
    /// Switches taken out, among those farthest from any CA (spines on trees).
    pub switches_down: u32,
    pub seed: u64,
}

const GEN: &str = "faults";

/// The fabric with the switches and cables of `faults` taken out; an error if that would leave
/// the switches disconnected or asks for more than there is.
pub fn fail(f: &Fabric, faults: &Faults) -> Result<Fabric, TopoError> {
    if !(0.0..100.0).contains(&faults.cut_percent) {
        return Err(param_err(GEN, "cut must be a percentage in 0..100"));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(faults.seed);
    let mut fabric = f.clone();
    if faults.switches_down > 0 {
        let down = farthest_switches(&fabric, faults.switches_down as usize, &mut rng)?;
        fabric = fabric.retain(|n| !down.contains(&n.guid), |_| true);
        if components(&fabric, &HashSet::new()) > 1 {
            return Err(param_err(
                GEN,
                format!(
                    "taking {} switch(es) out disconnects the fabric",
                    faults.switches_down
                ),
            ));
        }
    }
    if faults.cut_percent > 0.0 {
        let cut = cables_to_cut(&fabric, faults.cut_percent, &mut rng)?;
        fabric = fabric.retain(|_| true, |l| !cut.contains(&(l.a, l.b)));
    }
    Ok(fabric)
}

fn is_switch(f: &Fabric, p: PortRef) -> bool {
    f.nodes()[p.node as usize].kind == NodeKind::Switch
}

/// `n` switch GUIDs drawn from the switches at the largest hop distance from any CA.
fn farthest_switches(f: &Fabric, n: usize, rng: &mut ChaCha8Rng) -> Result<Vec<u64>, TopoError> {
    let nodes = f.nodes();
    let mut adj = vec![Vec::new(); nodes.len()];
    for l in f.links() {
        adj[l.a.node as usize].push(l.b.node);
        adj[l.b.node as usize].push(l.a.node);
    }
    // multi-source BFS from every CA
    let mut dist = vec![u32::MAX; nodes.len()];
    let mut queue: std::collections::VecDeque<u32> = (0..nodes.len() as u32)
        .filter(|&i| nodes[i as usize].kind != NodeKind::Switch)
        .collect();
    for &q in &queue {
        dist[q as usize] = 0;
    }
    while let Some(u) = queue.pop_front() {
        for &v in &adj[u as usize] {
            if dist[v as usize] == u32::MAX {
                dist[v as usize] = dist[u as usize] + 1;
                queue.push_back(v);
            }
        }
    }
    let switches = || (0..nodes.len()).filter(|&i| nodes[i].kind == NodeKind::Switch);
    let far = switches().map(|i| dist[i]).max().unwrap_or(0);
    if far < 2 {
        return Err(param_err(
            GEN,
            "every switch has a CA: no spine to take out",
        ));
    }
    let mut top: Vec<usize> = switches().filter(|&i| dist[i] == far).collect();
    if top.len() < n {
        return Err(param_err(
            GEN,
            format!(
                "{n} switch(es) down asked, {} switch(es) at the top",
                top.len()
            ),
        ));
    }
    top.shuffle(rng);
    Ok(top[..n].iter().map(|&i| nodes[i].guid).collect())
}

/// The switch-to-switch cables to cut: `percent` of them, never one of a spanning tree of the
/// cables drawn last, so the switches stay connected.
fn cables_to_cut(
    f: &Fabric,
    percent: f64,
    rng: &mut ChaCha8Rng,
) -> Result<HashSet<(PortRef, PortRef)>, TopoError> {
    let mut cables: Vec<(PortRef, PortRef)> = f
        .links()
        .iter()
        .filter(|l| is_switch(f, l.a) && is_switch(f, l.b))
        .map(|l| (l.a, l.b))
        .collect();
    let want = (cables.len() as f64 * percent / 100.0).round() as usize;
    cables.shuffle(rng);
    let mut uf = UnionFind::new(f.nodes().len());
    let mut tree = HashSet::new();
    for &(a, b) in cables.iter().rev() {
        if uf.union(a.node, b.node) {
            tree.insert((a, b));
        }
    }
    let cut: HashSet<_> = cables
        .iter()
        .filter(|c| !tree.contains(c))
        .take(want)
        .copied()
        .collect();
    if cut.len() < want {
        return Err(param_err(
            GEN,
            format!(
                "{want} cables to cut, only {} can go without disconnecting the switches",
                cut.len()
            ),
        ));
    }
    Ok(cut)
}

/// Connected components of the switch graph without the cables in `cut`.
fn components(f: &Fabric, cut: &HashSet<(PortRef, PortRef)>) -> usize {
    let mut uf = UnionFind::new(f.nodes().len());
    for l in f.links() {
        if is_switch(f, l.a) && is_switch(f, l.b) && !cut.contains(&(l.a, l.b)) {
            uf.union(l.a.node, l.b.node);
        }
    }
    (0..f.nodes().len() as u32)
        .filter(|&i| f.nodes()[i as usize].kind == NodeKind::Switch && uf.find(i) == i)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::by_name;

    fn switch_cables(f: &Fabric) -> usize {
        f.links()
            .iter()
            .filter(|l| is_switch(f, l.a) && is_switch(f, l.b))
            .count()
    }

    #[test]
    fn cuts_the_share_asked_and_stays_connected() {
        let pristine = by_name("ktree:6,3").unwrap();
        let faulty = by_name("ktree:6,3,cut=10,faultseed=3").unwrap();
        let before = switch_cables(&pristine);
        assert_eq!(
            switch_cables(&faulty),
            before - (before as f64 * 0.1).round() as usize
        );
        assert_eq!(components(&faulty, &HashSet::new()), 1);
        assert_eq!(faulty.endpoints().len(), pristine.endpoints().len());
        // reproducible, and the seed matters
        let again = by_name("ktree:6,3,cut=10,faultseed=3").unwrap();
        assert_eq!(again.links(), faulty.links());
        let other = by_name("ktree:6,3,cut=10,faultseed=4").unwrap();
        assert_ne!(other.links(), faulty.links());
    }

    #[test]
    fn a_spine_goes_with_its_cables_and_lid() {
        let pristine = by_name("ktree:4,3").unwrap();
        let faulty = by_name("ktree:4,3,spinedown=1").unwrap();
        assert_eq!(faulty.switch_count(), pristine.switch_count() - 1);
        assert_eq!(switch_cables(&faulty), switch_cables(&pristine) - 4);
        assert_eq!(faulty.endpoints().len(), pristine.endpoints().len() - 1);
    }

    #[test]
    fn impossible_faults_are_errors() {
        // a torus has a CA on every switch: no spine
        assert!(by_name("torus:4x4,1,spinedown=1").is_err());
        // a ring of 4 switches has 1 cable to spare
        assert!(by_name("torus:4,1,cut=50").is_err());
        assert!(by_name("torus:4,1,cut=25").is_ok());
        assert!(by_name("ktree:4,2,cut=100").is_err());
    }
}
