//! GUID lists as OpenSM reads them (`cn_guid_file`, `io_guid_file`, `root_guid_file`, …): one
//! GUID per line (hexadecimal with `0x`, or decimal), optionally followed by text, `#` comments
//! and blank lines ignored. OpenSM's parser (complib's `parse_node_map`) rejects the whole file at
//! the first bad line; so does this one, naming the line.

use std::path::Path;

use super::{read_text, IoError};

/// The GUIDs of `text`, in file order (duplicates kept).
pub fn parse(text: &str, file: &str) -> Result<Vec<u64>, IoError> {
    let mut guids = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let word = line
            .split(|c: char| c.is_whitespace() || c == '#')
            .next()
            .unwrap_or("");
        let parsed = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => word.parse::<u64>(),
        };
        match parsed {
            Ok(g) => guids.push(g),
            Err(e) => {
                return Err(IoError::Parse {
                    file: file.to_string(),
                    line: i + 1,
                    text: raw.to_string(),
                    why: format!("expected a GUID (0x... or decimal): {e}"),
                })
            }
        }
    }
    Ok(guids)
}

/// [`parse`] of a file.
pub fn read_file(path: &Path) -> Result<Vec<u64>, IoError> {
    parse(&read_text(path)?, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_comments_and_trailing_text() {
        let text = "# compute nodes\n0x0002c90100000010  node 1\n\n  0X0002C90100000020#c\n42\n";
        assert_eq!(
            parse(text, "cn").unwrap(),
            vec![0x0002c90100000010, 0x0002c90100000020, 42]
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        let e = parse("0x10\n0xzz node\n", "/etc/opensm/cn_guids").unwrap_err();
        assert_eq!(e.line(), Some(2));
        let msg = e.to_string();
        assert!(
            msg.starts_with("/etc/opensm/cn_guids:2: expected a GUID") && msg.contains("0xzz node"),
            "{msg}"
        );
        assert!(parse("0x1x\n", "f").is_err());
        assert!(parse("-5\n", "f").is_err());
    }
}
