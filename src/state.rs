//! The routing state kept across SM restarts and takeovers: the routing last uploaded (every
//! switch's LFT by switch GUID, the layer of every path, the lanes it was computed for) and the
//! fabric it was computed for, in one file with a format version and a checksum.
//!
//! A new SM process (a restart, or a standby taking over with the same state file) adopts it as
//! the previous routing and re-routes only what changed ([`crate::reroute`]), so that an
//! unchanged fabric keeps every LFT entry and every SL. The file is never trusted: it is parsed
//! and validated here (the fabric through [`crate::fabric::FabricBuilder`], the tables' shape
//! against it), and the routing derived from it goes through the engine's full verification like
//! any other.
//!
//! Layout (little-endian): a 48-byte header (magic, format version, flags, writer id, serial,
//! payload length, payload checksum), then the payload: a JSON part (the engine settings that
//! decide whether a routing can be continued, the switch GUIDs in row order, the fabric) and the
//! raw tables (one LFT row per switch, then one layer row per switch when there are layers).
//! Writing goes to a temporary file that is synced and renamed over the old one, so a reader
//! sees the old file or the new one, never half of one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::engine::{EngineConfig, EngineKind, McastLane, Routed, RoutedRef};
use crate::fabric::Fabric;
use crate::graph::SwitchGraph;
use crate::routing::{walked_hops, Lft, Routing, SwitchLidTable};

/// The file's name in OpenSM's cache directory (next to `guid2lid`).
pub const STATE_FILE: &str = "dfsssp-rs.state";
/// The format version this build reads and writes.
pub const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"DFSRSST\x1a";
/// Bytes of the header.
pub const HEADER_LEN: usize = 48;

/// Why a state file is not adopted. [`StateError::kind`] is a stable word for logs and tests.
#[derive(Debug, Error)]
pub enum StateError {
    #[error("{path}: no state file")]
    Missing { path: String },
    #[error("{path}: cannot read: {why}")]
    Unreadable { path: String, why: String },
    #[error("{path}: truncated ({len} bytes, {need} expected)")]
    Truncated { path: String, len: u64, need: u64 },
    #[error("{path}: not a dfsssp-rs state file")]
    NotState { path: String },
    #[error("{path}: format version {found}, this build reads version {VERSION}")]
    ForeignVersion { path: String, found: u32 },
    #[error("{path}: checksum mismatch (stored {stored:#018x}, computed {computed:#018x})")]
    Checksum {
        path: String,
        stored: u64,
        computed: u64,
    },
    #[error("{path}: corrupt: {why}")]
    Corrupt { path: String, why: String },
    #[error("{path}: computed for another fabric: {why}")]
    Mismatch { path: String, why: String },
}

impl StateError {
    /// One stable word per kind of problem.
    pub fn kind(&self) -> &'static str {
        match self {
            StateError::Missing { .. } => "missing",
            StateError::Unreadable { .. } => "unreadable",
            StateError::Truncated { .. } => "truncated",
            StateError::NotState { .. } => "not-state",
            StateError::ForeignVersion { .. } => "foreign-version",
            StateError::Checksum { .. } => "checksum",
            StateError::Corrupt { .. } => "corrupt",
            StateError::Mismatch { .. } => "mismatch",
        }
    }
}

/// Who wrote a state file, and which of its writes it is: a reader that sees another writer's
/// file knows another SM has routed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub writer: u64,
    pub serial: u64,
    pub payload_len: u64,
    pub checksum: u64,
}

/// The JSON part of the payload (`F`: the fabric, borrowed to write, owned when read).
#[derive(Serialize, Deserialize)]
struct Meta<F> {
    engine: String,
    lanes: u8,
    qos: bool,
    mcast_lane: McastLane,
    sl_offset: u8,
    full_max_load: u64,
    max_load: u64,
    num_layers: u8,
    max_lid: u16,
    has_layers: bool,
    /// Row order of the tables.
    switch_guids: Vec<u64>,
    fabric: F,
}

/// A state read back: who wrote it, and the routing (hop counts rebuilt from the tables, no
/// summary) with its fabric and the settings of [`EngineConfig`] that decide whether it can be
/// continued (kind, lanes, QoS, multicast lane; the rest at their defaults).
#[derive(Debug)]
pub struct SavedState {
    pub header: Header,
    pub routed: Routed,
}

/// A checksum over whole words (the payload is megabytes; a byte-wise hash would cost more than
/// the write), mixed like FNV-1a with a final avalanche. Not cryptographic: it detects damage.
pub fn checksum(data: &[u8]) -> u64 {
    const P: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ data.len() as u64;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        h = (h ^ w).wrapping_mul(P);
        h ^= h >> 31;
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(P);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// The file's bytes for `st` (its summary is not saved), stamped with `writer` and `serial`.
pub fn encode(st: RoutedRef<'_>, writer: u64, serial: u64) -> Vec<u8> {
    let g = st.graph;
    let r = st.routing;
    let meta = Meta {
        engine: st.cfg.kind.name().to_string(),
        lanes: st.cfg.lanes,
        qos: st.cfg.qos,
        mcast_lane: st.cfg.mcast_lane,
        sl_offset: st.sl_offset,
        full_max_load: st.full_max_load,
        max_load: st.max_load,
        num_layers: r.num_layers,
        max_lid: r.lft.max_lid,
        has_layers: r.layers.is_some(),
        switch_guids: (0..g.num_switches() as u32)
            .map(|s| g.switch_guid(s))
            .collect(),
        fabric: st.fabric,
    };
    // One buffer, sized once: the tables are most of it (176 MB on a 48-port 3-level tree), and
    // a payload built apart and copied behind the header doubled opensm's peak while saving.
    let ns = g.num_switches();
    let stride = r.lft.stride();
    let rows = ns * stride * if r.layers.is_some() { 2 } else { 1 };
    let mut out = Vec::with_capacity(HEADER_LEN + 4 + rows);
    out.resize(HEADER_LEN + 4, 0);
    // Serializing plain data to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &meta);
    let json_len = out.len() - HEADER_LEN - 4;
    out[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&(json_len as u32).to_le_bytes());
    out.reserve_exact(rows);
    for s in 0..ns as u32 {
        out.extend_from_slice(r.lft.table(s));
    }
    if let Some(l) = &r.layers {
        for s in 0..ns as u32 {
            out.extend_from_slice(l.row(s));
        }
    }
    let payload_len = (out.len() - HEADER_LEN) as u64;
    let sum = checksum(&out[HEADER_LEN..]);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&writer.to_le_bytes());
    header.extend_from_slice(&serial.to_le_bytes());
    header.extend_from_slice(&payload_len.to_le_bytes());
    header.extend_from_slice(&sum.to_le_bytes());
    out[..HEADER_LEN].copy_from_slice(&header);
    out
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// The header of a file's first bytes (`path` names it in errors).
pub fn parse_header(bytes: &[u8], path: &str) -> Result<Header, StateError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(if bytes.len() < MAGIC.len() && MAGIC.starts_with(bytes) {
            StateError::Truncated {
                path: path.into(),
                len: bytes.len() as u64,
                need: HEADER_LEN as u64,
            }
        } else {
            StateError::NotState { path: path.into() }
        });
    }
    if bytes.len() < HEADER_LEN {
        return Err(StateError::Truncated {
            path: path.into(),
            len: bytes.len() as u64,
            need: HEADER_LEN as u64,
        });
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(StateError::ForeignVersion {
            path: path.into(),
            found: version,
        });
    }
    Ok(Header {
        version,
        writer: u64_at(bytes, 16),
        serial: u64_at(bytes, 24),
        payload_len: u64_at(bytes, 32),
        checksum: u64_at(bytes, 40),
    })
}

/// Parses and validates a whole file's bytes.
pub fn decode(bytes: &[u8], path: &str) -> Result<SavedState, StateError> {
    let (header, payload) = checked_payload(bytes, path)?;
    let corrupt = |why: String| StateError::Corrupt {
        path: path.into(),
        why,
    };
    if payload.len() < 4 {
        return Err(corrupt("no JSON part".into()));
    }
    let json_len = u32_at(payload, 0) as usize;
    let json = payload
        .get(4..4usize.saturating_add(json_len))
        .ok_or_else(|| {
            corrupt(format!(
                "JSON part of {json_len} bytes overruns the payload"
            ))
        })?;
    let meta: Meta<Fabric> =
        serde_json::from_slice(json).map_err(|e| corrupt(format!("JSON: {e}")))?;
    let kind: EngineKind = meta.engine.parse().map_err(corrupt)?;
    let graph = SwitchGraph::new(&meta.fabric).map_err(|e| corrupt(format!("fabric: {e}")))?;
    let ns = graph.num_switches();
    let guids: Vec<u64> = (0..ns as u32).map(|s| graph.switch_guid(s)).collect();
    if guids != meta.switch_guids {
        return Err(corrupt(format!(
            "the table rows name {} switches, the fabric has {ns} others",
            meta.switch_guids.len()
        )));
    }
    if meta.max_lid < graph.max_lid() {
        return Err(corrupt(format!(
            "tables end at LID {}, the fabric's highest LID is {}",
            meta.max_lid,
            graph.max_lid()
        )));
    }
    let stride = usize::from(meta.max_lid) + 1;
    let rows = &payload[4 + json_len..];
    let want = ns * stride * if meta.has_layers { 2 } else { 1 };
    if rows.len() != want {
        return Err(corrupt(format!(
            "{} bytes of tables, {want} expected ({ns} switches x {stride} LIDs)",
            rows.len()
        )));
    }
    check_layers(&meta, path)?;
    let routing = routing_of_rows(&meta, &graph, rows, path)?;
    // Never trusted: the routing adopted must pass the full verification (every route a
    // route, every layer's CDG acyclic) that a computed one passes.
    let verified = crate::verify::verify_and_load(&graph, &routing)
        .map_err(|e| corrupt(format!("routing: {}", e.describe(&meta.fabric, &graph))))?;
    // That verification is the summary a re-route starts from (nothing to traverse again).
    let summary = crate::engine::routed::summary_of_verified(&graph, &routing, verified);
    let mut cfg = EngineConfig::new(kind);
    cfg.lanes = meta.lanes;
    cfg.qos = meta.qos;
    cfg.mcast_lane = meta.mcast_lane;
    Ok(SavedState {
        header,
        routed: Routed {
            fabric: meta.fabric,
            graph,
            routing,
            cfg,
            full_max_load: meta.full_max_load,
            max_load: meta.max_load,
            summary: Some(summary),
            sl_offset: meta.sl_offset,
        },
    })
}

/// The header and the payload, whose length and checksum the header gives.
fn checked_payload<'b>(bytes: &'b [u8], path: &str) -> Result<(Header, &'b [u8]), StateError> {
    let header = parse_header(bytes, path)?;
    // A length beyond any file (a damaged header) must not wrap around.
    let need = (HEADER_LEN as u64).saturating_add(header.payload_len);
    if (bytes.len() as u64) < need {
        return Err(StateError::Truncated {
            path: path.into(),
            len: bytes.len() as u64,
            need,
        });
    }
    let corrupt = |why: String| StateError::Corrupt {
        path: path.into(),
        why,
    };
    if bytes.len() as u64 > need {
        return Err(corrupt(format!(
            "{} bytes after the payload",
            bytes.len() as u64 - need
        )));
    }
    let payload = &bytes[HEADER_LEN..];
    let computed = checksum(payload);
    if computed != header.checksum {
        return Err(StateError::Checksum {
            path: path.into(),
            stored: header.checksum,
            computed,
        });
    }
    Ok((header, payload))
}

/// The layers and lanes the file declares: consistent with each other and with its tables.
fn check_layers(meta: &Meta<Fabric>, path: &str) -> Result<(), StateError> {
    let corrupt = |why: String| StateError::Corrupt {
        path: path.into(),
        why,
    };
    if meta.num_layers == 0 || meta.num_layers > crate::dfsssp::MAX_LAYERS {
        return Err(corrupt(format!("{} layers", meta.num_layers)));
    }
    // The SLs a path may answer are `layer + sl_offset`: within the lanes it was routed for
    // (at most 15 data VLs), a lane at most left to multicast.
    if meta.lanes == 0 || meta.lanes > crate::dfsssp::MAX_LAYERS {
        return Err(corrupt(format!("{} lanes", meta.lanes)));
    }
    if meta.sl_offset > 1 || meta.sl_offset + meta.num_layers > meta.lanes {
        return Err(corrupt(format!(
            "{} layers from SL {} do not fit {} lanes",
            meta.num_layers, meta.sl_offset, meta.lanes
        )));
    }
    if !meta.has_layers && meta.num_layers != 1 {
        return Err(corrupt(format!(
            "{} layers but no layer table",
            meta.num_layers
        )));
    }
    Ok(())
}

/// The routing in the file's table `rows` (LFTs, then layers if any; checked to have the size
/// `meta` says), with its hop counts walked.
fn routing_of_rows(
    meta: &Meta<Fabric>,
    graph: &SwitchGraph,
    rows: &[u8],
    path: &str,
) -> Result<Routing, StateError> {
    let corrupt = |why: String| StateError::Corrupt {
        path: path.into(),
        why,
    };
    let ns = graph.num_switches();
    let stride = usize::from(meta.max_lid) + 1;
    let mut lft = Lft::new(ns, meta.max_lid);
    for (s, row) in lft.tables_mut().enumerate() {
        row.copy_from_slice(&rows[s * stride..(s + 1) * stride]);
    }
    let layers = meta.has_layers.then(|| {
        let mut t = SwitchLidTable::new(ns, meta.max_lid, 0);
        let base = ns * stride;
        for (s, row) in t.rows_mut().enumerate() {
            row.copy_from_slice(&rows[base + s * stride..base + (s + 1) * stride]);
        }
        t
    });
    if let Some(t) = &layers {
        if let Some(bad) = (0..ns as u32).find(|&s| t.row(s).iter().any(|&l| l >= meta.num_layers))
        {
            return Err(corrupt(format!(
                "switch {:#018x} has a path in a layer beyond the {} layers",
                graph.switch_guid(bad),
                meta.num_layers
            )));
        }
    }
    let hops = walked_hops(graph, &lft);
    Ok(Routing {
        lft,
        hops,
        layers,
        num_layers: meta.num_layers,
    })
}

/// Reads and validates the state file at `path`.
pub fn load(path: &Path) -> Result<SavedState, StateError> {
    let name = path.display().to_string();
    let bytes = fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StateError::Missing { path: name.clone() },
        _ => StateError::Unreadable {
            path: name.clone(),
            why: e.to_string(),
        },
    })?;
    decode(&bytes, &name)
}

/// The header of the state file at `path` (reads its first bytes only).
pub fn read_header(path: &Path) -> Result<Header, StateError> {
    use std::io::Read;
    let name = path.display().to_string();
    let mut f = fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StateError::Missing { path: name.clone() },
        _ => StateError::Unreadable {
            path: name.clone(),
            why: e.to_string(),
        },
    })?;
    let mut buf = Vec::with_capacity(HEADER_LEN);
    Read::by_ref(&mut f)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut buf)
        .map_err(|e| StateError::Unreadable {
            path: name.clone(),
            why: e.to_string(),
        })?;
    parse_header(&buf, &name)
}

/// Writes `bytes` to `path` atomically: a temporary file next to it, synced, renamed over it,
/// and the directory synced so that the rename survives a crash. The temporary file is new
/// (`O_EXCL`, mode 0600) and named by process and write, so no two writers (two SMs sharing the
/// directory, two writes of one process) ever write into the same one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (tmp, mut f) = create_tmp(path)?;
    let res = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Some filesystems refuse to sync a directory; the rename is done either way.
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// A new temporary file next to `path`: `NAME.tmp.PID.N`, N counting this process's writes;
/// one left behind by a crashed process of the same PID is skipped, never written into.
fn create_tmp(path: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static WRITES: AtomicU64 = AtomicU64::new(0);
    loop {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        name.push(format!(".tmp.{}.{n}", std::process::id()));
        let tmp = path.with_file_name(name);
        let opened = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp);
        match opened {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Whether a saved fabric is the one discovered now, possibly changed: the routing of a
/// foreign fabric (another subnet's file on shared storage) is not continued. Half of the
/// switches discovered now must be in the saved fabric.
pub fn same_fabric(saved: &Fabric, now: &Fabric, path: &str) -> Result<(), StateError> {
    let switches = |f: &Fabric| -> std::collections::HashSet<u64> {
        f.nodes()
            .iter()
            .filter(|n| n.kind == crate::fabric::NodeKind::Switch)
            .map(|n| n.guid)
            .collect()
    };
    let (old, new) = (switches(saved), switches(now));
    let common = new.intersection(&old).count();
    if new.is_empty() || common * 2 < new.len() {
        return Err(StateError::Mismatch {
            path: path.into(),
            why: format!(
                "{common} of the {} switches discovered are among its {} switches",
                new.len(),
                old.len()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{self, EngineKind};
    use crate::topo;

    fn routed() -> (Fabric, engine::EngineOutput, EngineConfig) {
        let f = topo::by_name("torus:3x3,2").unwrap();
        let mut cfg = EngineConfig::new(EngineKind::Dfsssp);
        cfg.lanes = 4;
        cfg.mcast_lane = McastLane::Always;
        let out = engine::run(&f, &cfg).unwrap();
        (f, out, cfg)
    }

    fn bytes() -> Vec<u8> {
        let (f, out, cfg) = routed();
        encode(RoutedRef::of_output(&f, &cfg, &out), 7, 3)
    }

    #[test]
    fn round_trip_keeps_tables_layers_and_settings() {
        let (f, out, cfg) = routed();
        let b = bytes();
        let s = decode(&b, "x").unwrap();
        assert_eq!((s.header.writer, s.header.serial), (7, 3));
        let s = s.routed;
        assert_eq!(s.routing.lft, out.routing.lft);
        assert_eq!(s.routing.layers, out.routing.layers);
        assert_eq!(s.routing.hops, out.routing.hops);
        assert_eq!(s.routing.num_layers, out.routing.num_layers);
        assert_eq!(s.fabric.links(), f.links());
        assert_eq!((s.cfg.kind, s.cfg.lanes, s.cfg.qos), (cfg.kind, 4, true));
        assert_eq!(s.cfg.mcast_lane, McastLane::Always);
        assert_eq!(
            (s.sl_offset, s.max_load, s.full_max_load),
            (out.sl_offset, out.max_load, out.full_max_load)
        );
    }

    #[test]
    fn damage_is_named() {
        let b = bytes();
        let kind = |b: &[u8]| decode(b, "f").unwrap_err().kind();
        assert_eq!(kind(&b[..b.len() - 1]), "truncated");
        assert_eq!(kind(&b[..20]), "truncated");
        assert_eq!(kind(&b[..3]), "truncated");
        assert_eq!(kind(b""), "truncated");
        assert_eq!(
            kind(b"guid2lid junk that is long enough........"),
            "not-state"
        );
        let mut v = b.clone();
        v[8] = 9;
        assert_eq!(kind(&v), "foreign-version");
        let mut v = b.clone();
        let mid = v.len() / 2;
        v[mid] ^= 0x40;
        assert_eq!(kind(&v), "checksum");
        let mut v = b.clone();
        v.push(0);
        assert_eq!(kind(&v), "corrupt");
        // A valid checksum over a bad payload (a writer's bug, not damage): still refused.
        let mut v = b.clone();
        let at = HEADER_LEN + 4 + 2;
        v[at] = b'!';
        let sum = checksum(&v[HEADER_LEN..]);
        v[40..48].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(kind(&v), "corrupt");
    }

    /// Fuzzing the decoder: any byte string is refused with a reason, or yields a routing that
    /// passes the full verification with its SLs inside its lanes. Mutations of a valid file
    /// (half with the checksum made right again, so that they reach the checks behind it:
    /// bits, table bytes, header fields, numbers in the JSON part, lengths) and random bytes.
    #[test]
    fn any_bytes_are_refused_or_verified() {
        use rand::{Rng, SeedableRng};
        let good = bytes();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let json_len = u32_at(&good, HEADER_LEN) as usize;
        let json = HEADER_LEN + 4..HEADER_LEN + 4 + json_len;
        let digits: Vec<usize> = json.filter(|&k| good[k].is_ascii_digit()).collect();
        let (mut refused, mut accepted) = (0, 0);
        for i in 0..2400 {
            let mut b = good.clone();
            match i % 6 {
                0 => {
                    for _ in 0..rng.gen_range(1..4) {
                        let at = rng.gen_range(0..b.len());
                        b[at] ^= 1 << rng.gen_range(0..8);
                    }
                }
                1 => {
                    let at = rng.gen_range(HEADER_LEN + 4 + json_len..b.len());
                    b[at] = rng.gen();
                }
                2 => {
                    let at = rng.gen_range(0..HEADER_LEN);
                    b[at] = rng.gen();
                }
                3 => {
                    let at = digits[rng.gen_range(0..digits.len())];
                    b[at] = b'0' + rng.gen_range(0..10u8);
                }
                4 => {
                    let len = rng.gen_range(0..b.len() + 16);
                    b.resize(len, rng.gen());
                }
                _ => b = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect(),
            }
            if i % 12 < 6 && b.len() >= HEADER_LEN {
                let sum = checksum(&b[HEADER_LEN..]);
                b[40..48].copy_from_slice(&sum.to_le_bytes());
            }
            match decode(&b, "fuzz") {
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
                Ok(SavedState { routed: s, .. }) => {
                    let v = crate::verify::verify(&s.graph, &s.routing);
                    assert!(v.is_ok(), "case {i}: {v:?}");
                    let sls = s.sl_offset + s.routing.num_layers;
                    assert!(sls <= s.cfg.lanes, "case {i}: SLs up to {sls}");
                    accepted += 1;
                }
            }
        }
        // Both outcomes met: table bytes that leave a valid routing are accepted.
        assert!(
            refused > 1000 && accepted > 0,
            "{refused} refused, {accepted} accepted"
        );
    }

    #[test]
    fn writes_atomically_and_reads_the_header_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(STATE_FILE);
        assert_eq!(load(&p).unwrap_err().kind(), "missing");
        let b = bytes();
        write_atomic(&p, &b).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b);
        let h = read_header(&p).unwrap();
        assert_eq!((h.writer, h.serial), (7, 3));
        assert!(load(&p).is_ok());
        // Only the file itself is left.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(write_atomic(&dir.path().join("no/such/dir/x"), &b).is_err());
    }

    #[test]
    fn another_fabric_is_a_mismatch() {
        let (f, _, _) = routed();
        // The same shape with other node GUIDs: another subnet's file.
        let mut v = serde_json::to_value(&f).unwrap();
        for n in v["nodes"].as_array_mut().unwrap() {
            n["guid"] = (n["guid"].as_u64().unwrap() + (1 << 40)).into();
        }
        let other: Fabric = serde_json::from_value(v).unwrap();
        assert_eq!(same_fabric(&f, &other, "f").unwrap_err().kind(), "mismatch");
        assert!(same_fabric(&f, &f, "f").is_ok());
    }
}
