//! A `torus-2QoS.conf` for a torus or mesh recognised from the switch graph ([`super::coords`]):
//! what OpenSM's torus-2QoS (and dor beside it) needs to route a real torus, so that a fabric
//! dump is compared without a hand-made configuration.
//!
//! torus-2QoS takes at most three dimensions. The recognition reads a 4-ring as two 2-rings
//! (`C4 = K2 × K2`, see [`super::coords`]); any two such dimensions together are a 4-ring again,
//! walked in Gray-code order (00, 10, 11, 01), so they are paired up (a real 2x2 grid is read
//! as the 4-ring it also is). Each
//! dimension is seeded from one switch, the origin: its `+` neighbour, and its `-` neighbour on
//! rings of more than two (torus-2QoS needs both on radix-4 rings).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::coords::recognise;
use crate::fabric::Fabric;
use crate::graph::SwitchGraph;

/// Dimensions torus-2QoS can route.
const MAX_TORUS_DIMS: usize = 3;

/// One dimension as written in the file: one or two of the recognised ones.
struct Axis {
    size: u32,
    wrap: bool,
    /// The recognised dimensions it is made of: one, or two of size 2 (a 4-ring).
    parts: Vec<usize>,
}

impl Axis {
    /// A switch's position along the axis, from its recognised coordinates.
    fn position(&self, c: &[u32]) -> u32 {
        match self.parts[..] {
            [d] => c[d],
            // Gray code: 00 -> 0, 10 -> 1, 11 -> 2, 01 -> 3; neighbours differ in one bit.
            [a, b] => [0, 1, 3, 2][(c[a] + 2 * c[b]) as usize],
            _ => unreachable!("an axis has one or two parts"),
        }
    }
}

/// The configuration of the torus or mesh `g` is (`f` gives the switches' GUIDs), or `None` when
/// it is none, or has more than three dimensions with its 2-rings paired.
pub fn torus_2qos_conf(f: &Fabric, g: &SwitchGraph) -> Option<String> {
    let t = recognise(g)?;
    let mut axes: Vec<Axis> = (0..t.dims())
        .map(|d| Axis {
            size: t.sizes[d],
            wrap: t.wrap[d],
            parts: vec![d],
        })
        .collect();
    // Pairs of 2-rings are 4-rings (more common than 2x2 grids, and torus-2QoS's reading).
    loop {
        let twos: Vec<usize> = (0..axes.len())
            .filter(|&i| axes[i].size == 2 && axes[i].parts.len() == 1)
            .take(2)
            .collect();
        let [i, j] = twos[..] else { break };
        let b = axes.remove(j).parts[0];
        axes[i] = Axis {
            size: 4,
            wrap: true,
            parts: vec![axes[i].parts[0], b],
        };
    }
    if axes.len() > MAX_TORUS_DIMS {
        return None;
    }
    let ns = g.num_switches() as u32;
    let mut at: HashMap<Vec<u32>, u32> = HashMap::with_capacity(ns as usize);
    for s in 0..ns {
        let c = t.of(s);
        at.insert(axes.iter().map(|a| a.position(c)).collect(), s);
    }
    let guid = |s: u32| f.nodes()[g.switch_node()[s as usize] as usize].guid;
    let origin = vec![0u32; axes.len()];
    let o = guid(*at.get(&origin)?);
    let torus = axes.iter().any(|a| a.wrap);
    let mut out = String::from(if torus { "torus" } else { "mesh" });
    for a in &axes {
        // The keyword sets every dimension; a suffix marks the ones that differ.
        let suffix = match (torus, a.wrap) {
            (true, false) if a.size > 2 => "m",
            (false, true) => "t",
            _ => "",
        };
        let _ = write!(out, " {}{suffix}", a.size);
    }
    for _ in axes.len()..MAX_TORUS_DIMS {
        out.push_str(" 1");
    }
    out.push('\n');
    for (d, a) in axes.iter().enumerate() {
        if a.size < 2 {
            continue;
        }
        let step = |k: u32| {
            let mut c = origin.clone();
            c[d] = k;
            at.get(&c).copied()
        };
        let axis = ["x", "y", "z"][d];
        let _ = writeln!(out, "{axis}p_link 0x{o:016x} 0x{:016x}", guid(step(1)?));
        if a.wrap && a.size > 2 {
            let _ = writeln!(
                out,
                "{axis}m_link 0x{o:016x} 0x{:016x}",
                guid(step(a.size - 1)?)
            );
        }
    }
    let ports = (g.switch_node().iter())
        .map(|&n| f.nodes()[n as usize].num_ports)
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "portgroup_max_ports {}", 16.max(u32::from(ports) + 1));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo;

    /// The seeds of `conf` as (axis, sign, from GUID, to GUID).
    fn seeds(conf: &str) -> Vec<(char, char, u64, u64)> {
        conf.lines()
            .filter_map(|l| {
                let (kw, rest) = l.split_once(' ')?;
                let kw = kw.strip_suffix("_link")?;
                let (a, b) = rest.split_once(' ')?;
                let hex = |x: &str| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok();
                let mut k = kw.chars();
                Some((k.next()?, k.next()?, hex(a)?, hex(b)?))
            })
            .collect()
    }

    fn linked(f: &Fabric, a: u64, b: u64) -> bool {
        f.links().iter().any(|l| {
            let (x, y) = (
                f.nodes()[l.a.node as usize].guid,
                f.nodes()[l.b.node as usize].guid,
            );
            (x, y) == (a, b) || (x, y) == (b, a)
        })
    }

    #[test]
    fn tori_and_meshes_as_torus_2qos_reads_them() {
        for (spec, first) in [
            ("torus:6x6x6,4", "torus 6 6 6"),
            ("torus:5x3,1", "torus 5 3 1"),
            // Six 2-rings as recognised, paired into three 4-rings.
            ("torus:4x4x4,2", "torus 4 4 4"),
            ("torus:4x6,1", "torus 6 4 1"),
            ("torus:5x2,1", "torus 5 2 1"),
            ("mesh:4x3,1", "mesh 4 3 1"),
        ] {
            let f = topo::by_name(spec).unwrap();
            let g = SwitchGraph::new(&f).unwrap();
            let conf = torus_2qos_conf(&f, &g).unwrap_or_else(|| panic!("{spec}: none"));
            let head = conf.lines().next().unwrap();
            // Dimension order is the recognition's: compare the sizes as a multiset.
            let mut got: Vec<&str> = head.split(' ').collect();
            let mut want: Vec<&str> = first.split(' ').collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "{spec}: {conf}");
            let s = seeds(&conf);
            assert!(!s.is_empty(), "{spec}: {conf}");
            // Every seed is a cable, and all start at one switch.
            for &(_, _, a, b) in &s {
                assert!(
                    linked(&f, a, b),
                    "{spec}: {a:x} -> {b:x} is no link\n{conf}"
                );
                assert_eq!(a, s[0].2, "{spec}: {conf}");
            }
            // Radix-4 rings have both directions seeded.
            if spec == "torus:4x4x4,2" {
                assert_eq!(s.len(), 6, "{conf}");
            }
        }
    }

    #[test]
    fn no_configuration_for_what_is_no_torus() {
        for spec in ["ktree:4,3", "random:32,16,4,64", "torus:6x6x6,4,cut=5"] {
            let Ok(f) = topo::by_name(spec) else { continue };
            let g = SwitchGraph::new(&f).unwrap();
            assert!(torus_2qos_conf(&f, &g).is_none(), "{spec}");
        }
    }
}
