//! Logging through OpenSM's own log (`osm_log`), with its levels.

use std::ffi::CString;

use super::ffi;
use crate::engine::LogLevel;

/// OpenSM formats every message into a 4096-byte stack buffer with `vsprintf` (no bound), after
/// an optional log prefix: keep each line well below that.
const MAX_LINE: usize = 3072;

/// OpenSM's routing log flag (`-D 0x40`): with it OpenSM writes its dump files, and so do we.
pub(crate) const ROUTING: u8 = ffi::OSM_LOG_ROUTING as u8;

/// The codes the adapter tags its problems with in OpenSM's log, for monitoring rules to match
/// (README: "Error codes"). Written as `ERR DF01` (`WRN` for a warning) by their `Display`, the
/// one place that formats them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Code {
    /// A callback failed (OpenSM tries its next engine).
    Failed = 1,
    /// A panic caught at the C boundary.
    Panicked = 2,
    /// A routing engine could not be registered.
    NotRegistered = 3,
    /// The complete check after an upload disagreed with the incremental one.
    CheckDisagreed = 4,
    /// Multicast trees close a credit loop with unicast.
    McastLoop = 5,
    /// A bad setting, ignored (the default applies).
    BadSetting = 6,
    /// A QoS SL outside the layers shares a layer's VL (a warning).
    SharedVl = 7,
    /// A compute or I/O node list that cannot be read (routing goes on without it).
    NodeList = 8,
    /// A routing state file not adopted: missing, unreadable, truncated, corrupt, of another
    /// format version or another fabric (a warning: the engine computes from scratch).
    StateIgnored = 9,
    /// The routing state could not be saved (routing goes on).
    StateWrite = 10,
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let severity = match self {
            Code::SharedVl | Code::StateIgnored => "WRN",
            _ => "ERR",
        };
        write!(f, "{severity} DF{:02}", *self as u8)
    }
}

/// A handle on the running OpenSM's log.
#[derive(Clone, Copy)]
pub(crate) struct OsmLog(*mut ffi::osm_log_t);

// SAFETY: osm_log serializes concurrent writers with its own lock, and the log lives as long as
// OpenSM itself, which outlives the plug-in.
unsafe impl Send for OsmLog {}
// SAFETY: as for Send: every use goes through osm_log, which takes its own lock.
unsafe impl Sync for OsmLog {}

impl OsmLog {
    /// # Safety
    /// `log` must point at a live `osm_log_t` that outlives the handle and its copies: the
    /// running OpenSM's (or, in tests, one that is never freed).
    pub(crate) unsafe fn new(log: *mut ffi::osm_log_t) -> Self {
        OsmLog(log)
    }

    /// Whether messages with this flag (an OSM_LOG_* bit) would be written.
    pub(crate) fn is_active(self, flag: u8) -> bool {
        // SAFETY: self.0 is a live log (see `new`); the helper only reads its level.
        unsafe { ffi::osm_log_is_active(self.0, flag) != 0 }
    }

    pub(crate) fn log(self, level: LogLevel, msg: &str) {
        let flag = osm_level(level);
        let Some(api) = ffi::api() else { return };
        if !self.is_active(flag) {
            return;
        }
        for line in msg.lines() {
            let c = to_cstring(line);
            // SAFETY: constant "%s\n" format with one NUL-terminated string argument, shorter
            // than OpenSM's line buffer (see MAX_LINE).
            unsafe { (api.log)(self.0, flag, c"%s\n".as_ptr(), c.as_ptr()) };
        }
    }

    pub(crate) fn error(self, msg: &str) {
        self.log(LogLevel::Error, msg);
    }

    pub(crate) fn info(self, msg: &str) {
        self.log(LogLevel::Info, msg);
    }

    pub(crate) fn verbose(self, msg: &str) {
        self.log(LogLevel::Verbose, msg);
    }
}

pub(crate) fn osm_level(level: LogLevel) -> u8 {
    (match level {
        LogLevel::Error => ffi::OSM_LOG_ERROR,
        LogLevel::Info => ffi::OSM_LOG_INFO,
        LogLevel::Verbose => ffi::OSM_LOG_VERBOSE,
        LogLevel::Debug => ffi::OSM_LOG_DEBUG,
    }) as u8
}

/// A C string for OpenSM's log: interior NULs shown as `\0`, cut to [`MAX_LINE`] bytes on a
/// character boundary.
pub(crate) fn to_cstring(s: &str) -> CString {
    let mut s = s.replace('\0', "\\0");
    if s.len() > MAX_LINE {
        let mut cut = MAX_LINE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(" [...]");
    }
    CString::new(s).expect("NULs were replaced")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_the_readme_lists_them() {
        assert_eq!(Code::Failed.to_string(), "ERR DF01");
        assert_eq!(Code::SharedVl.to_string(), "WRN DF07");
        assert_eq!(Code::NodeList.to_string(), "ERR DF08");
        let readme = include_str!("../../README.md");
        for (n, c) in [
            Code::Failed,
            Code::Panicked,
            Code::NotRegistered,
            Code::CheckDisagreed,
            Code::McastLoop,
            Code::BadSetting,
            Code::SharedVl,
            Code::NodeList,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(c as usize, n + 1, "numbered in order, none skipped");
            let code = c.to_string();
            let number = code.split(' ').nth(1).unwrap();
            assert!(
                readme.contains(&format!("`{number}`")) || readme.contains(&format!("`{code}`")),
                "{code} in README's list"
            );
        }
    }

    #[test]
    fn cstrings_are_safe_for_osm_log() {
        assert_eq!(to_cstring("a\0b").as_bytes(), b"a\\0b");
        let long = "é".repeat(4000);
        let c = to_cstring(&long);
        assert!(c.as_bytes().len() <= MAX_LINE + 6);
        assert!(std::str::from_utf8(c.as_bytes())
            .unwrap()
            .ends_with(" [...]"));
    }
}
