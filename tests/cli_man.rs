//! `dfsssp-rs man-pages DIR`, which the Debian package builds its manual pages with: one page per
//! visible command, carrying the options `--help` shows, the hidden command itself left out, no
//! date (the package build is reproducible), and an unwritable directory named in the error.

use std::process::Command;

fn man_pages(dir: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dfsssp-rs"))
        .arg("man-pages")
        .arg(dir)
        .output()
        .expect("run dfsssp-rs")
}

#[test]
fn one_page_per_visible_command_with_its_options() {
    let d = tempfile::tempdir().unwrap();
    let out_dir = d.path().join("man1");
    let out = man_pages(&out_dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pages: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    for want in [
        "dfsssp-rs.1",
        "dfsssp-rs-generate.1",
        "dfsssp-rs-route.1",
        "dfsssp-rs-eval.1",
    ] {
        assert!(
            pages.iter().any(|p| p == want),
            "{want} missing from {pages:?}"
        );
    }
    assert!(
        !pages
            .iter()
            .any(|p| p.contains("man-pages") || p.contains("help")),
        "hidden or help commands got pages: {pages:?}"
    );
    let top = std::fs::read_to_string(out_dir.join("dfsssp-rs.1")).unwrap();
    let th = top
        .lines()
        .find(|l| l.starts_with(".TH"))
        .expect(".TH line");
    // .TH title section date source: no date between the section and the version.
    assert!(
        th.contains(r#"1  "dfsssp-rs "#),
        "a date in the title line: {th}"
    );
    assert!(
        top.contains("dfsssp\\-rs\\-route(1)"),
        "the page lists its subcommands"
    );
    assert!(!top.contains("man\\-pages"), "the hidden command is listed");
    let route = std::fs::read_to_string(out_dir.join("dfsssp-rs-route.1")).unwrap();
    for opt in ["\\-\\-lfts\\-out", "\\-\\-path\\-sl\\-out", "\\-\\-lanes"] {
        assert!(route.contains(opt), "dfsssp-rs-route.1 lacks {opt}");
    }
}

#[test]
fn unwritable_directory_is_named() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = man_pages(&file.join("man1"));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a-file/man1"),
        "error does not name the directory: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
