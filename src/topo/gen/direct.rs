//! Direct networks: tori and meshes, hypercubes, Kautz graphs, dragonflies.

use super::{attach_cas, checked_product};
use crate::fabric::Fabric;
use crate::topo::{param_err, Net, TopoError};

/// Torus or mesh of any dimension. Switch ports: `1..=cas_per_switch` to CAs, then for dimension
/// d `links_per_pair` ports towards +d followed by `links_per_pair` towards -d. A torus ring of
/// size 2 has one neighbour pair (not two), size 1 none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusParams {
    pub dims: Vec<u32>,
    pub cas_per_switch: u32,
    /// Parallel links between each pair of neighbours.
    pub links_per_pair: u32,
    /// true: torus (wrap-around), false: mesh.
    pub wrap: bool,
    pub lmc: u8,
}

pub fn torus(p: &TorusParams) -> Result<Fabric, TopoError> {
    let g: &'static str = if p.wrap { "torus" } else { "mesh" };
    if p.dims.is_empty() || p.dims.contains(&0) {
        return Err(param_err(
            g,
            "need at least one dimension, each of size >= 1",
        ));
    }
    if p.links_per_pair == 0 {
        return Err(param_err(g, "links per neighbour pair must be >= 1"));
    }
    let n = checked_product(g, p.dims.iter().map(|&d| u64::from(d)))?;
    checked_product(g, [n, u64::from(p.cas_per_switch) + 1])?;
    let nd = p.dims.len() as u64;
    let ports = u64::from(p.cas_per_switch) + 2 * nd * u64::from(p.links_per_pair);
    if ports > 254 {
        return Err(param_err(
            g,
            format!("switches would need {ports} ports (> 254)"),
        ));
    }
    let mut net = Net::new(g);
    let mut coord = vec![0u32; p.dims.len()];
    for s in 0..n {
        let mut x = s;
        for (c, &d) in coord.iter_mut().zip(&p.dims) {
            *c = (x % u64::from(d)) as u32;
            x /= u64::from(d);
        }
        let label: Vec<String> = coord.iter().map(|c| c.to_string()).collect();
        net.switch(ports.max(1) as u32, format!("{g} {}", label.join(",")))?;
    }
    let mut ca_count = 0;
    for s in 0..n as u32 {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
    }
    let par = p.links_per_pair;
    let mut stride = 1u64;
    for (d, &size) in p.dims.iter().enumerate() {
        let plus = p.cas_per_switch + 2 * d as u32 * par + 1;
        let minus = plus + par;
        for s in 0..n {
            let c = (s / stride) % u64::from(size);
            let next = if c + 1 < u64::from(size) {
                s + stride
            } else if p.wrap && size > 2 {
                s - c * stride
            } else {
                continue;
            };
            for j in 0..par {
                net.link(s as u32, plus + j, next as u32, minus + j)?;
            }
        }
        stride *= u64::from(size);
    }
    net.into_fabric(p.lmc)
}

/// Hypercube of `2^dim` switches; ports `1..=cas_per_switch` to CAs, then `links_per_pair` ports per
/// dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HypercubeParams {
    pub dim: u32,
    pub cas_per_switch: u32,
    pub links_per_pair: u32,
    pub lmc: u8,
}

pub fn hypercube(p: &HypercubeParams) -> Result<Fabric, TopoError> {
    const G: &str = "hypercube";
    if p.dim > 15 || p.links_per_pair == 0 {
        return Err(param_err(G, "need dimension <= 15 and links per pair >= 1"));
    }
    let n = 1u64 << p.dim;
    checked_product(G, [n, u64::from(p.cas_per_switch) + 1])?;
    let ports = u64::from(p.cas_per_switch) + u64::from(p.dim) * u64::from(p.links_per_pair);
    if ports == 0 || ports > 254 {
        return Err(param_err(
            G,
            format!("switches would need {ports} ports (1..=254)"),
        ));
    }
    let mut net = Net::new(G);
    for s in 0..n {
        net.switch(ports as u32, format!("hcube S{s}"))?;
    }
    let mut ca_count = 0;
    for s in 0..n as u32 {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
    }
    let par = p.links_per_pair;
    for d in 0..p.dim {
        let port = p.cas_per_switch + d * par + 1;
        for s in 0..n as u32 {
            let t = s ^ (1 << d);
            if s < t {
                for j in 0..par {
                    net.link(s, port + j, t, port + j)?;
                }
            }
        }
    }
    net.into_fabric(p.lmc)
}

/// Kautz graph K(d, n): vertices are the strings of length `n` over `d + 1` symbols with no two
/// equal neighbours ((d+1)·d^(n-1) switches); each arc s_1..s_n -> s_2..s_n x becomes one
/// bidirectional link, so switches use 2d ports for links (a pair of opposite arcs becomes two
/// parallel links) after `cas_per_switch` CA ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KautzParams {
    pub degree: u32,
    pub diameter: u32,
    pub cas_per_switch: u32,
    pub lmc: u8,
}

pub fn kautz(p: &KautzParams) -> Result<Fabric, TopoError> {
    const G: &str = "kautz";
    if p.degree == 0 || p.diameter == 0 {
        return Err(param_err(G, "need degree >= 1 and diameter >= 1"));
    }
    let base = u64::from(p.degree) + 1;
    let mut sizes = vec![base];
    sizes.extend(std::iter::repeat_n(
        u64::from(p.degree),
        p.diameter as usize - 1,
    ));
    let n = checked_product(G, sizes)?;
    checked_product(G, [n, u64::from(p.cas_per_switch) + 1])?;
    let ports = u64::from(p.cas_per_switch) + 2 * u64::from(p.degree);
    if ports > 254 {
        return Err(param_err(
            G,
            format!("switches would need {ports} ports (> 254)"),
        ));
    }
    // Enumerate the words in lexicographic order, encoded in base d+1 (first symbol most
    // significant); `index` maps a word code to its switch.
    let len = p.diameter;
    // words are coded in base d+1, first symbol most significant
    let total = base
        .checked_pow(len)
        .ok_or_else(|| param_err(G, format!("string length {len} too large")))?;
    let sym = |code: u64, i: u32| (code / base.pow(len - 1 - i)) % base;
    // depth-first, in lexicographic order: only the (d+1)·d^(n-1) valid words are visited
    let mut words: Vec<u64> = Vec::with_capacity(n as usize);
    let mut stack: Vec<(u64, u32)> = (0..base).rev().map(|x| (x, 1)).collect();
    while let Some((code, l)) = stack.pop() {
        if l == len {
            words.push(code);
            continue;
        }
        let last = code % base;
        for x in (0..base).rev().filter(|&x| x != last) {
            stack.push((code * base + x, l + 1));
        }
    }
    let index: std::collections::HashMap<u64, u32> = words
        .iter()
        .enumerate()
        .map(|(i, &w)| (w, i as u32))
        .collect();
    let mut net = Net::new(G);
    for &w in &words {
        let s: String = (0..len)
            .map(|i| char::from(b'0' + sym(w, i) as u8))
            .collect();
        net.switch(ports as u32, format!("kautz {s}"))?;
    }
    let mut ca_count = 0;
    for s in 0..words.len() as u32 {
        attach_cas(&mut net, s, p.cas_per_switch, &mut ca_count)?;
        net.reserve_until(s, p.cas_per_switch + 1);
    }
    for (u, &w) in words.iter().enumerate() {
        let last = sym(w, len - 1);
        let shifted = (w % (total / base)) * base;
        for x in 0..base {
            if x != last {
                let v = index[&(shifted + x)];
                net.connect(u as u32, v)?;
            }
        }
    }
    net.into_fabric(p.lmc)
}

/// Dragonfly (Kim et al.): `g` groups of `a` switches, each switch with `p` CAs, links to the
/// `a - 1` others of its group and `h` global links. Ports: CAs `1..=p`, local `p+1..p+a-1`,
/// global after. Global links are dealt round-robin over group pairs, so with `g = a·h + 1` every
/// pair of groups shares exactly one link; with fewer groups pairs get several, spare ports stay
/// free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DragonflyParams {
    pub a: u32,
    pub p: u32,
    pub h: u32,
    pub g: u32,
    pub lmc: u8,
}

pub fn dragonfly(p: &DragonflyParams) -> Result<Fabric, TopoError> {
    const G: &str = "dragonfly";
    if p.a == 0 || p.g == 0 {
        return Err(param_err(G, "need a >= 1 and g >= 1"));
    }
    let max_g = u64::from(p.a) * u64::from(p.h) + 1;
    if u64::from(p.g) > max_g {
        return Err(param_err(
            G,
            format!("g = {} groups > a*h + 1 = {max_g}", p.g),
        ));
    }
    if p.g > 1 && p.h == 0 {
        return Err(param_err(
            G,
            "several groups need h >= 1 global links per switch",
        ));
    }
    let n = checked_product(G, [u64::from(p.a), u64::from(p.g)])?;
    checked_product(G, [n, u64::from(p.p) + 1])?;
    let ports = u64::from(p.p) + u64::from(p.a) - 1 + u64::from(p.h);
    if ports == 0 || ports > 254 {
        return Err(param_err(
            G,
            format!("switches would need {ports} ports (1..=254)"),
        ));
    }
    let mut net = Net::new(G);
    for grp in 0..p.g {
        for r in 0..p.a {
            net.switch(ports as u32, format!("dfly G{grp} R{r}"))?;
        }
    }
    let mut ca_count = 0;
    let sw = |grp: u32, r: u32| grp * p.a + r;
    for s in 0..n as u32 {
        attach_cas(&mut net, s, p.p, &mut ca_count)?;
    }
    // local: router i uses port p+1+j' for its j-th peer (skipping itself)
    let local_port = |i: u32, j: u32| p.p + 1 + if j < i { j } else { j - 1 };
    for grp in 0..p.g {
        for i in 0..p.a {
            for j in i + 1..p.a {
                net.link(sw(grp, i), local_port(i, j), sw(grp, j), local_port(j, i))?;
            }
        }
    }
    let gp = p.a * p.h; // global ports per group
    let mut used = vec![0u32; p.g as usize];
    let global = |grp: u32, t: u32| (sw(grp, t / p.h), p.p + p.a - 1 + t % p.h + 1);
    loop {
        let mut any = false;
        for i in 0..p.g {
            for j in i + 1..p.g {
                if used[i as usize] < gp && used[j as usize] < gp {
                    let (si, pi) = global(i, used[i as usize]);
                    let (sj, pj) = global(j, used[j as usize]);
                    net.link(si, pi, sj, pj)?;
                    used[i as usize] += 1;
                    used[j as usize] += 1;
                    any = true;
                }
            }
        }
        if !any {
            break;
        }
    }
    net.into_fabric(p.lmc)
}
