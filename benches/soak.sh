#!/usr/bin/env bash
# The soak of issue 35: a long-running stock opensm with dfsssp-rs in ibsim (QoS on) through
# EVENTS seeded random events on a 4-ary 3-tree (a cable down or back, a spine switch down or
# back, a CA leaving or joining, an opensm restart every EVENTS/4), checked after each: ibdmchk
# over OpenSM's dumps with the path-SL dump (every CA pair routed, no credit loop), the SA's SLs
# against the dump, the step's churn, opensm's RSS. Prints the table, one row per event, and the
# summary line. The test suite runs the same test with 20 events
# (tests/e2e_restart.rs, soak_random_faults_and_restarts).
#
#   benches/soak.sh [EVENTS] [SEED]        defaults: 200 events, seed 1
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${1:-200}
SEED=${2:-1}
cargo build --release --quiet --lib --features test-hooks
SOAK_EVENTS=$EVENTS SOAK_SEED=$SEED cargo test --release --quiet --features test-hooks \
    --test e2e_restart soak_random_faults_and_restarts -- --nocapture 2>&1 |
    grep -E '^(soak|event| +[0-9]+  )|panicked|assert|FAILED'
echo "uptime: $(uptime)"
