//! Plain-text tables the reports of `eval` and `mcast` share.

use std::fmt::Write as _;

/// Rows of (label, value), the values aligned after the longest label; an empty row is a blank
/// line.
pub fn aligned(rows: &[(String, String)]) -> String {
    let w = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (k, v) in rows {
        if k.is_empty() && v.is_empty() {
            out.push('\n');
        } else {
            let pad = w - k.chars().count();
            let _ = writeln!(out, "{k}{}  {v}", " ".repeat(pad));
        }
    }
    out
}
