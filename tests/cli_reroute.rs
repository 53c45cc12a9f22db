//! `dfsssp-rs route --previous-*` offline: a fabric routed, a cable removed from its net file, the
//! changed fabric routed again from the previous LFTs and path-SL dump. The incremental re-route
//! must keep every surviving path's SL and move far fewer LFT blocks than a full computation;
//! the independent check is `ibdmchk`-free here: the CLI's own `changes:` line is compared with
//! a full computation's.

mod common;

use common::cli_in;

/// Removes the first switch-to-switch cable (both of its lines) from an ibsim net file.
fn without_first_cable(net: &str) -> String {
    let mut out = Vec::new();
    let mut node: Option<String> = None;
    let mut cut: Option<(String, String, String, String)> = None;
    for l in net.lines() {
        if let Some(rest) = l.strip_prefix("Switch") {
            node = rest.split('"').nth(1).map(str::to_string);
        } else if l.starts_with("Ca") || l.starts_with("Hca") {
            node = None;
        }
        if let (Some(n), Some(rest)) = (&node, l.strip_prefix('[')) {
            let port = rest.split(']').next().unwrap_or("").to_string();
            let mut q = l.split('"');
            let peer = q.nth(1).unwrap_or("").to_string();
            let peer_port = q
                .next()
                .and_then(|t| t.strip_prefix('['))
                .and_then(|t| t.split(']').next())
                .unwrap_or("")
                .to_string();
            if peer.starts_with("S-") {
                match &cut {
                    None => {
                        cut = Some((n.clone(), port, peer, peer_port));
                        continue;
                    }
                    Some((a, ap, b, bp))
                        if n == b && &port == bp && &peer == a && &peer_port == ap =>
                    {
                        continue
                    }
                    _ => {}
                }
            }
        }
        out.push(l);
    }
    assert!(cut.is_some(), "no switch-to-switch cable");
    out.join("\n") + "\n"
}

/// "changes: A of B CA pairs re-routed, C SLs changed (D of them on unchanged paths), E of F LFT
/// blocks changed; ..." -> (A, D, E).
fn changes(stdout: &str) -> (u64, u64, u64) {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("changes: "))
        .unwrap_or_else(|| panic!("no changes line:\n{stdout}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    (nums[0], nums[3], nums[4])
}

#[test]
fn route_from_a_previous_routing_reports_what_moved() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let (code, _, err) = cli_in(
        Some(dir),
        &["generate", "torus:4x4x4,2", "-o", "before.net"],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = cli_in(
        Some(dir),
        &[
            "route",
            "--fabric",
            "before.net",
            "--lfts-out",
            "lfts.txt",
            "--path-sl-out",
            "psl.txt",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let net = std::fs::read_to_string(dir.join("before.net")).unwrap();
    std::fs::write(dir.join("after.net"), without_first_cable(&net)).unwrap();
    let prev = [
        "route",
        "--fabric",
        "after.net",
        "--previous-fabric",
        "before.net",
        "--previous-lfts",
        "lfts.txt",
        "--previous-path-sl",
        "psl.txt",
        "--lfts-out",
        "lfts-after.txt",
    ];
    let (code, out, err) = cli_in(Some(dir), &prev);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("re-routed incrementally: "), "{out}");
    let (moved, sl_on_kept, blocks) = changes(&out);
    assert!(moved > 0, "{out}");
    assert_eq!(sl_on_kept, 0, "{out}");
    assert!(dir.join("lfts-after.txt").exists());

    let mut full = prev.to_vec();
    full.push("--full");
    let (code, out_full, err) = cli_in(Some(dir), &full);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out_full.starts_with("computed from scratch: asked for (--full)"),
        "{out_full}"
    );
    let (moved_full, _, blocks_full) = changes(&out_full);
    assert!(
        moved * 5 < moved_full && blocks * 2 < blocks_full,
        "incremental {out}\nfull {out_full}"
    );

    // The previous routing's files are checked like every input: a bad LFT file is named.
    std::fs::write(
        dir.join("bad.txt"),
        "Unicast lids [0x0-0x3] of switch Lid 1 guid 0xzz\n",
    )
    .unwrap();
    let mut bad = prev.to_vec();
    bad[6] = "bad.txt";
    let (code, _, err) = cli_in(Some(dir), &bad);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("bad.txt"), "{err}");
}
