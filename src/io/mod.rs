//! File formats: ibsim net files, `ibnetdiscover` text output, OpenSM's dump files
//! (opensm-subnet.lst, opensm-lfts.dump, the path-SL dump) and the LFT file OpenSM's stock `file`
//! routing engine loads; OpenSM's multicast dump (opensm.mcfdbs) and the multicast groups file.
//!
//! Every parser takes the text and a file name (used only in errors) and returns [`IoError`], whose
//! parse errors name the file, the 1-based line and the offending text. Parsers never panic.

pub mod fabric_json;
pub mod guid_list;
pub mod ibnetdiscover;
pub mod ibsim;
pub mod mc_groups;
pub mod mcfdbs;
pub mod osm_dump;
pub mod path_sl;
pub mod run_record;

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;

use thiserror::Error;

use crate::fabric::FabricError;

#[derive(Debug, Error)]
pub enum IoError {
    #[error("{file}:{line}: {why}: \"{text}\"")]
    Parse {
        file: String,
        line: usize,
        text: String,
        why: String,
    },
    #[error("{file}:{line}: {source}")]
    Fabric {
        file: String,
        line: usize,
        #[source]
        source: FabricError,
    },
    /// A JSON file that does not hold what it should; `field` is the path to the offending
    /// value (`fabric.links[3]`), empty for the document itself.
    #[error("{file}:{line}: {field}{}{why}", if field.is_empty() { "" } else { ": " })]
    Json {
        file: String,
        line: usize,
        field: String,
        why: String,
    },
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

impl IoError {
    /// The 1-based line the error refers to, if it comes from a file's content.
    pub fn line(&self) -> Option<usize> {
        match self {
            IoError::Parse { line, .. }
            | IoError::Fabric { line, .. }
            | IoError::Json { line, .. } => Some(*line),
            IoError::Io { .. } => None,
        }
    }
}

/// Reads a whole file for a parser, naming it in the error.
pub fn read_text(path: &Path) -> Result<String, IoError> {
    let bytes = std::fs::read(path).map_err(|source| IoError::Io {
        file: path.display().to_string(),
        source,
    })?;
    // Node descriptions may hold any bytes; never fail on them.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes `contents` through a temporary file renamed into place.
pub(crate) fn write_atomically<T>(
    path: &Path,
    contents: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let value = contents(&mut w)?;
        // No fsync: these are diagnostics, like OpenSM's own dumps, and a 1 GB path-SL table
        // would wait seconds for the disk.
        w.flush()?;
        Ok(value)
    })();
    match result {
        Ok(value) => fs::rename(&tmp, path).map(|()| value),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Builds parse errors for one file; keeps the offending text short.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
}

impl Ctx<'_> {
    /// The switch (dense id) with node GUID `guid`, or the error naming the line.
    pub(crate) fn switch_of(
        &self,
        line: usize,
        text: &str,
        guid_switch: &std::collections::HashMap<u64, u32>,
        guid: u64,
    ) -> Result<u32, IoError> {
        guid_switch.get(&guid).copied().ok_or_else(|| {
            self.err(
                line,
                text,
                format!("switch 0x{guid:016x} is not in the fabric"),
            )
        })
    }

    pub(crate) fn err(&self, line: usize, text: &str, why: impl Into<String>) -> IoError {
        let mut t: String = text.chars().take(120).collect();
        if t.len() < text.len() {
            t.push_str("...");
        }
        IoError::Parse {
            file: self.file.to_string(),
            line,
            text: t,
            why: why.into(),
        }
    }

    pub(crate) fn fabric(&self, line: usize, source: FabricError) -> IoError {
        IoError::Fabric {
            file: self.file.to_string(),
            line,
            source,
        }
    }
}

/// Parses `0x`-prefixed or bare hex.
pub(crate) fn parse_hex_u64(s: &str) -> Option<u64> {
    let t = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if t.is_empty() || t.len() > 16 {
        return None;
    }
    u64::from_str_radix(t, 16).ok()
}

/// Parses a number the way C's `strtoul(s, 0, 0)` would for whole tokens: `0x` hex or decimal.
pub(crate) fn parse_c_number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}
