#!/usr/bin/env bash
# The project's test command: installs what is missing, builds the plug-in, runs every test
# (unit, property, and end-to-end with the stock opensm in ibsim), then the lints.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The core, the CLI and the offline tests without OpenSM: no headers, no libclang needed.
OPENSM_INCLUDE_DIR=/nonexistent cargo test --release --no-default-features
# The plug-in as packaged (the adapter without the LID study), in the Debian package: built,
# linted, installed with apt, a torus routed by dfsssp-rs from the documented opensm.conf lines
# alone, removed, OpenSM on its fallback (installs and removes the package dfsssp-rs here).
scripts/package-test.sh
# The end-to-end tests load target/release/libdfsssp_rs.so into opensm: build it first.
cargo build --release --lib
cargo test --release --all-targets
cargo fmt --check
cargo clippy --all-targets --release -- -D warnings
