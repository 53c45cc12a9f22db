#!/usr/bin/env bash
# The project's test command: installs what is missing, builds the plug-in, runs every test
# (unit, property, and end-to-end with the stock opensm in ibsim, and with OpenSM 3.3.24 and the
# patched OpenSMs built from source), then the lints.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_OPENSM_BUILD=1 source scripts/setup.sh
# The declared rust-version builds the library and the command (all features), with the locked
# dependencies. The tests are not held to it: their dev-dependencies may need a newer Rust.
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
if command -v rustup >/dev/null && rustup toolchain install "$msrv" --profile minimal >&2; then
    CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check --locked --lib --bins
elif [ -n "${CI:-}" ]; then
    echo "test.sh: cannot install Rust $msrv with rustup to check rust-version" >&2
    exit 1
else
    echo "test.sh: SKIPPED the rust-version check: cannot install Rust $msrv with rustup" >&2
fi
# The core, the CLI and the offline tests without OpenSM: no headers, no libclang needed.
OPENSM_INCLUDE_DIR=/nonexistent cargo test --release --no-default-features
# The plug-in as packaged (the adapter without the LID study), in the Debian package: built,
# linted, installed with apt, a torus routed by dfsssp-rs from the documented opensm.conf lines
# alone, removed, OpenSM on its fallback (installs and removes the package dfsssp-rs here).
scripts/package-test.sh
# The end-to-end tests load target/release/libdfsssp_rs.so into opensm: build it first, with
# the failure-injection hooks the tests use (the packaged plug-in above has none).
cargo build --release --lib --features test-hooks
# OpenSM 3.3.24 as released, and 3.3.24 and Debian's 3.3.23 with opensm-patches/, built from
# source into private prefixes (cached under the target dir) with the plug-in built against each;
# tests/e2e_opensm_trees.rs runs in them.
while read -r variant prefix; do
    var=DFSSSP_RS_OPENSM_${variant//./_}
    var=${var/-patched/_PATCHED}
    export "$var=$prefix"
done < <(scripts/opensm-tree.sh 3.3.24 3.3.24-patched 3.3.23-patched)
cargo test --release --all-targets --features test-hooks
# The tree tests are ignored unless asked for: here the trees are built, so an absent one fails.
cargo test --release --features test-hooks --test e2e_opensm_trees -- --include-ignored
cargo fmt --check
cargo clippy --all-targets --release --features test-hooks -- -D warnings
cargo clippy --all-targets --release -- -D warnings
