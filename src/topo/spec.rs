//! `by_name`: a short text spec for a generated fabric, for the command line and tests.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

/// The spec grammar, as shown to users.
pub const SPEC_GRAMMAR: &str = "\
SPEC := NAME ':' ARGS [ ',' OPTION ]*        (no spaces)
  ktree:K,N                 k-ary n-tree (n*k^(n-1) switches of 2k ports, k^n CAs)
  xgft:H;M1,..,MH;W1,..,WH  extended generalized fat tree       [radix=R]
  fattree2:R[,D:U]          2-level fat tree of R-port switches, leaf ports split D:U (default 1:1)
  fattree3:R[,D:U]          3-level fat tree of R-port switches (36 -> 11,664 CAs, 1,620 switches)
  director:L,S,B,C[-CM]     a director chassis: L leaf ASICs, S spine ASICs, B cables between
                            each leaf and spine, C CAs per leaf (C-CM: C..CM, seeded, one leaf
                            at each end)  [radix=R (default: the smallest that fits)] [seed=N]
  edgedirector:D,L,S,E,U,C  D directors of L leaf and S spine ASICs (one cable per pair), E edge
                            switches with C CAs and U >= D uplinks each, dealt round-robin over
                            the directors and their leaf ASICs  [radix=R (default: fits)]
  rail:P,L,S,C              P rail planes of L leaves x S spines; L*C servers with one CA per
                            plane; spine 0 of consecutive planes joined by one cable (one subnet);
                            every switch an aggregation node on its last port, port R
                                                               [radix=R (default 65)]
  torus:X[xY[xZ..]][,C]     torus, C CAs per switch (default 1)  [par=P links per neighbour pair]
  mesh:X[xY[xZ..]][,C]      mesh, same arguments                  [par=P]
  hypercube:D[,C]           2^D switches, C CAs each (default 1)  [par=P]
  kautz:D,N[,C]             Kautz graph of degree D, string length N, C CAs per switch (default 1)
  dragonfly:A,P,H,G         G groups of A switches, P CAs and H global links per switch
  random:S,R,C,L            S switches of R ports, C CAs each, L switch links, connected
                                                               [seed=N (default 1)] [parallel]
  irregular:M,S,D           Nienaber et al.'s random irregular fabric: S switches, average degree
                            D, M CAs each on a random switch     [seed=N (default 1)] (LMC 0)
OPTION for the trees (ktree, xgft, fattree2, fattree3):
                       bundle=B (B = 1..6 parallel cables between each leaf and each switch
                       above it; ktree and fattree keep their switches' ports and reach 1/B as
                       many switches, xgft grows its radix to fit or checks radix=R)
                       uneven=MIN (leaf l gets MIN..D CAs, D those of a full leaf: drawn from
                       seed=N (default 1), one leaf at MIN and one at D; free ports stay free)
                       aggr (each switch gets one more port, its last, with an aggregation node:
                       a 1-port CA \"Mellanox Technologies Aggregation Node\", as on SHARP fabrics)
OPTION for every NAME: lmc=L (LMC of the CA ports, default 0)
                       shuffle=S (chassis wiring: every switch's ports renumbered (but for an
                       aggregation node's) and nodes given GUIDs and LIDs in a random order,
                       seeded by S; same graph)
                       cut=P (P% of the switch-to-switch cables missing, the switches kept
                       connected) spinedown=N (N switches without CAs missing, drawn from those
                       farthest from every CA: spines), both drawn from faultseed=S (default 1)
examples: ktree:18,3  xgft:2;18,36;1,18  fattree2:36,2:1  torus:6x6x6,4  mesh:4x4,2,par=2
          hypercube:5,2  kautz:2,3,4  dragonfly:4,2,2,9  random:128,32,16,300,seed=1,lmc=2
          fattree2:36,2:1,bundle=2,uneven=14  ktree:8,3,aggr  xgft:2;4,4;1,4,bundle=3
          director:16,9,2,16-18,shuffle=1  edgedirector:2,4,2,8,4,12  rail:4,8,4,16
          ktree:18,3,cut=5  ktree:18,3,spinedown=1  random:1250,36,16,10000,cut=1,faultseed=2";

/// Options written without a value.
const FLAGS: &[&str] = &["parallel", "aggr"];

/// Options that take a value (a bare one is an error, not an argument).
const VALUED: &[&str] = &[
    "lmc",
    "shuffle",
    "seed",
    "radix",
    "par",
    "bundle",
    "uneven",
    "cut",
    "spinedown",
    "faultseed",
];

/// Options every family takes.
const EVERY: &[&str] = &["lmc", "shuffle", "cut", "spinedown", "faultseed"];

/// Options of the tree families.
const TREE_OPTIONS: &[&str] = &["bundle", "uneven", "seed", "aggr"];

struct Parsed<'a> {
    spec: &'a str,
    positional: Vec<&'a str>,
    options: Vec<(&'a str, Option<&'a str>)>,
}

impl<'a> Parsed<'a> {
    fn err(&self, why: impl Into<String>) -> TopoError {
        TopoError::Spec {
            spec: self.spec.to_string(),
            why: why.into(),
        }
    }

    fn num<T: std::str::FromStr>(&self, what: &str, s: &str) -> Result<T, TopoError> {
        s.parse()
            .map_err(|_| self.err(format!("{what}: \"{s}\" is not a valid number")))
    }

    fn arg<T: std::str::FromStr>(&self, i: usize, what: &str) -> Result<T, TopoError> {
        let s = self
            .positional
            .get(i)
            .ok_or_else(|| self.err(format!("missing {what}")))?;
        self.num(what, s)
    }

    fn opt_arg<T: std::str::FromStr>(
        &self,
        i: usize,
        what: &str,
        default: T,
    ) -> Result<T, TopoError> {
        match self.positional.get(i) {
            Some(s) => self.num(what, s),
            None => Ok(default),
        }
    }

    fn count(&self, min: usize, max: usize) -> Result<(), TopoError> {
        let n = self.positional.len();
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(self.err(format!("expects {want} arguments, got {n}")));
        }
        Ok(())
    }

    /// Value of option `key`; an error if present without a value.
    fn option<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, TopoError> {
        match self.options.iter().rev().find(|(k, _)| *k == key) {
            None => Ok(default),
            Some((_, Some(v))) => self.num(key, v),
            Some((_, None)) => Err(self.err(format!("option {key} needs a value ({key}=N)"))),
        }
    }

    fn flag(&self, key: &str) -> bool {
        self.options.iter().any(|(k, v)| *k == key && v.is_none())
    }

    fn has(&self, key: &str) -> bool {
        self.options.iter().any(|(k, _)| *k == key)
    }

    /// Value of option `key` if given (an error if given without a value).
    fn maybe<T: std::str::FromStr + Default>(&self, key: &str) -> Result<Option<T>, TopoError> {
        match self.has(key) {
            true => Ok(Some(self.option(key, T::default())?)),
            false => Ok(None),
        }
    }

    /// The tree families' options: bundle=B, uneven=MIN, seed=N, aggr.
    fn tree_options(&self) -> Result<TreeOptions, TopoError> {
        Ok(TreeOptions {
            bundle: self.option("bundle", 1)?,
            uneven: self.maybe("uneven")?,
            seed: self.option("seed", 1)?,
            aggr: self.flag("aggr"),
        })
    }

    fn allow(&self, keys: &[&str]) -> Result<(), TopoError> {
        for (k, v) in &self.options {
            if !EVERY.contains(k) && !keys.contains(k) {
                return Err(self.err(format!("unknown option \"{k}\"")));
            }
            if v.is_some() && FLAGS.contains(k) {
                return Err(self.err(format!("option {k} takes no value")));
            }
            if v.is_none() && VALUED.contains(k) {
                return Err(self.err(format!("option {k} needs a value ({k}=N)")));
            }
        }
        Ok(())
    }
}

/// Builds the fabric a spec names, e.g. `"torus:6x6x6,4"`. Grammar: [`SPEC_GRAMMAR`]. A
/// generator's parameter error comes back as a [`TopoError::Spec`] naming the spec.
pub fn by_name(spec: &str) -> Result<Fabric, TopoError> {
    build(spec).map_err(|e| name_spec(spec, e))
}

/// [`by_name`] before the generator's errors are renamed: tokens, common options, the family's
/// generator, then faults and rewiring.
fn build(spec: &str) -> Result<Fabric, TopoError> {
    let err = |why: &str| TopoError::Spec {
        spec: spec.to_string(),
        why: why.to_string(),
    };
    let (name, rest) = spec
        .split_once(':')
        .ok_or_else(|| err("expected NAME:ARGS"))?;
    let mut p = Parsed {
        spec,
        positional: Vec::new(),
        options: Vec::new(),
    };
    for tok in rest.split(',') {
        if let Some((k, v)) = tok.split_once('=') {
            p.options.push((k, Some(v)));
        } else if FLAGS.contains(&tok) || VALUED.contains(&tok) {
            // a valued option written bare is reported by `option` ("needs a value")
            p.options.push((tok, None));
        } else if !p.options.is_empty() {
            return Err(p.err(format!("argument \"{tok}\" after options")));
        } else {
            p.positional.push(tok);
        }
    }
    let lmc: u8 = p.option("lmc", 0)?;
    let shuffle: Option<u64> = p.maybe("shuffle")?;
    let faults = Faults {
        cut_percent: p.option("cut", 0.0)?,
        switches_down: p.option("spinedown", 0)?,
        seed: p.option("faultseed", 1)?,
    };
    let fabric = match tree_family(name, &p, lmc)? {
        Some(fabric) => fabric,
        None => match direct_family(name, &p, lmc)? {
            Some(fabric) => fabric,
            None => return Err(err(&format!("unknown topology \"{name}\"; known: ktree xgft fattree2 fattree3 director edgedirector rail torus mesh hypercube kautz dragonfly random irregular"))),
        },
    };
    // Faults first, so that which cables fail does not depend on the wiring's seed.
    let fabric = match faults == Faults::default() {
        true => fabric,
        false => super::faults::fail(&fabric, &faults)?,
    };
    match shuffle {
        Some(seed) => super::rewire(&fabric, seed),
        None => Ok(fabric),
    }
}

/// The tree-like families (ktree, xgft, fattree2/3, director, edgedirector, rail); `None` when
/// `name` is not one of them.
fn tree_family(name: &str, p: &Parsed<'_>, lmc: u8) -> Result<Option<Fabric>, TopoError> {
    let fabric = match name {
        "ktree" => {
            p.allow(TREE_OPTIONS)?;
            p.count(2, 2)?;
            kary_ntree(&KaryNTreeParams {
                k: p.arg(0, "k")?,
                n: p.arg(1, "n")?,
                opts: p.tree_options()?,
                lmc,
            })
        }
        "xgft" => {
            p.allow(&[TREE_OPTIONS, &["radix"]].concat())?;
            // positional tokens were split at ',', the groups are separated by ';'
            let joined = p.positional.join(",");
            let groups: Vec<&str> = joined.split(';').collect();
            if groups.len() != 3 {
                return Err(p.err("expects H;M1,..,MH;W1,..,WH"));
            }
            let h: usize = p.num("h", groups[0])?;
            let list = |g: &str, what: &str| -> Result<Vec<u32>, TopoError> {
                g.split(',').map(|s| p.num(what, s)).collect()
            };
            let m = list(groups[1], "m")?;
            let w = list(groups[2], "w")?;
            if m.len() != h || w.len() != h {
                return Err(p.err(format!("h = {h} needs {h} values of m and of w")));
            }
            xgft(&XgftParams {
                m,
                w,
                radix: p.maybe("radix")?,
                opts: p.tree_options()?,
                lmc,
            })
        }
        "fattree2" | "fattree3" => {
            p.allow(TREE_OPTIONS)?;
            p.count(1, 2)?;
            let radix: u32 = p.arg(0, "radix")?;
            let mut params = match p.positional.get(1) {
                None => FatTreeParams {
                    radix,
                    down: None,
                    opts: TreeOptions::default(),
                    lmc,
                },
                Some(r) => {
                    let (d, u) = r
                        .split_once(':')
                        .ok_or_else(|| p.err("ratio must be D:U"))?;
                    FatTreeParams::with_ratio(radix, p.num("D", d)?, p.num("U", u)?, lmc)?
                }
            };
            params.opts = p.tree_options()?;
            if name == "fattree2" {
                fat_tree2(&params)
            } else {
                fat_tree3(&params)
            }
        }
        "director" => {
            p.allow(&["radix", "seed"])?;
            p.count(4, 4)?;
            let (cas, cas_max) = match p.positional[3].split_once('-') {
                Some((a, b)) => (p.num("CAS", a)?, p.num("CASMAX", b)?),
                None => {
                    let c = p.arg(3, "CAS")?;
                    (c, c)
                }
            };
            director(&DirectorParams {
                leaves: p.arg(0, "leaves")?,
                spines: p.arg(1, "spines")?,
                bundle: p.arg(2, "bundle")?,
                cas,
                cas_max,
                radix: p.maybe("radix")?,
                seed: p.option("seed", 1)?,
                lmc,
            })
        }
        "edgedirector" => {
            p.allow(&["radix"])?;
            p.count(6, 6)?;
            edge_director(&EdgeDirectorParams {
                chassis: p.arg(0, "chassis")?,
                leaves: p.arg(1, "leaves")?,
                spines: p.arg(2, "spines")?,
                edges: p.arg(3, "edge switches")?,
                uplinks: p.arg(4, "uplinks")?,
                cas: p.arg(5, "CAs")?,
                radix: p.maybe("radix")?,
                lmc,
            })
        }
        "rail" => {
            p.allow(&["radix"])?;
            p.count(4, 4)?;
            rail(&RailParams {
                planes: p.arg(0, "planes")?,
                leaves: p.arg(1, "leaves")?,
                spines: p.arg(2, "spines")?,
                cas: p.arg(3, "CAs")?,
                radix: p.option("radix", 65)?,
                lmc,
            })
        }
        _ => return Ok(None),
    }?;
    Ok(Some(fabric))
}

/// The direct networks (torus, mesh, hypercube, kautz, dragonfly) and the random fabrics; `None`
/// when `name` is not one of them.
fn direct_family(name: &str, p: &Parsed<'_>, lmc: u8) -> Result<Option<Fabric>, TopoError> {
    let fabric = match name {
        "torus" | "mesh" => {
            p.allow(&["par"])?;
            p.count(1, 2)?;
            let dims = p.positional[0]
                .split('x')
                .map(|s| p.num("dimension", s))
                .collect::<Result<Vec<u32>, _>>()?;
            torus(&TorusParams {
                dims,
                cas_per_switch: p.opt_arg(1, "CAs per switch", 1)?,
                links_per_pair: p.option("par", 1)?,
                wrap: name == "torus",
                lmc,
            })
        }
        "hypercube" => {
            p.allow(&["par"])?;
            p.count(1, 2)?;
            hypercube(&HypercubeParams {
                dim: p.arg(0, "dimension")?,
                cas_per_switch: p.opt_arg(1, "CAs per switch", 1)?,
                links_per_pair: p.option("par", 1)?,
                lmc,
            })
        }
        "kautz" => {
            p.allow(&[])?;
            p.count(2, 3)?;
            kautz(&KautzParams {
                degree: p.arg(0, "degree")?,
                diameter: p.arg(1, "string length")?,
                cas_per_switch: p.opt_arg(2, "CAs per switch", 1)?,
                lmc,
            })
        }
        "dragonfly" => {
            p.allow(&[])?;
            p.count(4, 4)?;
            dragonfly(&DragonflyParams {
                a: p.arg(0, "a")?,
                p: p.arg(1, "p")?,
                h: p.arg(2, "h")?,
                g: p.arg(3, "g")?,
                lmc,
            })
        }
        "random" => {
            p.allow(&["seed", "parallel"])?;
            p.count(4, 4)?;
            random(&RandomParams {
                switches: p.arg(0, "switches")?,
                ports: p.arg(1, "ports")?,
                cas_per_switch: p.arg(2, "CAs per switch")?,
                links: p.arg(3, "links")?,
                seed: p.option("seed", 1)?,
                parallel: p.flag("parallel"),
                lmc,
            })
        }
        "irregular" => {
            p.allow(&["seed"])?;
            p.count(3, 3)?;
            if lmc != 0 {
                return Err(p.err("irregular fabrics have LMC 0"));
            }
            let mut rng = ChaCha8Rng::seed_from_u64(p.option("seed", 1)?);
            random_irregular(
                p.arg(0, "CAs")?,
                p.arg(1, "switches")?,
                p.arg(2, "average degree")?,
                &mut rng,
            )
        }
        _ => return Ok(None),
    }?;
    Ok(Some(fabric))
}

/// A generator's parameter error as an error of the spec that asked for it, so the message names
/// the spec the user typed (`topology spec "fattree2:8,bundle=6": 2-level fat tree: ...`).
fn name_spec(spec: &str, e: TopoError) -> TopoError {
    match e {
        TopoError::Param { generator, why } => TopoError::Spec {
            spec: spec.to_string(),
            why: format!("{generator}: {why}"),
        },
        e => e,
    }
}
