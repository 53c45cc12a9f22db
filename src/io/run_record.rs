//! `dfsssp-rs-fabric.json`: a routing run as the plug-in saw it (the engine, its configuration and
//! the fabric OpenSM handed over), written into OpenSM's dump directory so the same routing can be
//! recomputed and judged offline ([`super::fabric_json`] reads its fabric back).

use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::write_atomically;
use crate::engine::{EngineConfig, EngineKind, McastLane};
use crate::fabric::Fabric;

/// The file name the plug-in uses in OpenSM's dump directory.
pub const RUN_FILE: &str = "dfsssp-rs-fabric.json";

/// A routing run as the plug-in saw it: the engine, its configuration and the fabric read from
/// OpenSM. `engine::run(&rec.fabric, &rec.config())` recomputes the same routing.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// "sssp-rs" or "dfsssp-rs".
    pub engine: String,
    pub lanes: u8,
    pub qos: bool,
    pub bisection_patterns: u32,
    pub seed: u64,
    /// A lane left to multicast where the layers allow ([`EngineConfig::mcast_lane`]); absent in
    /// records of earlier versions.
    #[serde(default)]
    pub mcast_lane: McastLane,
    pub fabric: Fabric,
}

impl RunRecord {
    pub fn new(cfg: &EngineConfig, fabric: &Fabric) -> Self {
        RunRecord {
            engine: cfg.kind.name().to_string(),
            lanes: cfg.lanes,
            qos: cfg.qos,
            bisection_patterns: cfg.bisection_patterns,
            seed: cfg.seed,
            mcast_lane: cfg.mcast_lane,
            fabric: fabric.clone(),
        }
    }

    pub fn config(&self) -> Result<EngineConfig, String> {
        let kind: EngineKind = self.engine.parse()?;
        let mut cfg = EngineConfig::new(kind);
        cfg.lanes = self.lanes;
        cfg.qos = self.qos;
        cfg.bisection_patterns = self.bisection_patterns;
        cfg.seed = self.seed;
        cfg.mcast_lane = self.mcast_lane;
        Ok(cfg)
    }
}

/// Writes `rec` as one line of JSON into `path`, atomically.
pub fn write_file(path: &Path, rec: &RunRecord) -> io::Result<()> {
    write_atomically(path, |w| {
        serde_json::to_writer(&mut *w, rec).map_err(io::Error::other)?;
        w.write_all(b"\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo;

    #[test]
    fn run_record_round_trips() {
        let f = topo::by_name("ktree:2,2").unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.lanes = 4;
        cfg.qos = false;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(RUN_FILE);
        write_file(&p, &RunRecord::new(&cfg, &f)).unwrap();
        let rec: RunRecord = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let back = rec.config().unwrap();
        assert_eq!(
            (back.kind, back.lanes, back.qos),
            (EngineKind::Dfsssp, 4, false)
        );
        assert_eq!(rec.fabric.nodes(), f.nodes());
        assert_eq!(rec.fabric.links(), f.links());
        assert_eq!(rec.fabric.endpoints(), f.endpoints());
    }
}
