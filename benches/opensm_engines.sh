#!/usr/bin/env bash
# Side by side on one fabric: the stock OpenSM engines and ours, each in a fresh ibsim, same opensm
# binary, QoS on (-Q) unless QOS=0. Per engine: the engine OpenSM finally used (a failing engine falls back to
# minhop), routing phase (OpenSM's "building routing with" -> "tables configured" at -D 0x47),
# opensm peak RSS, virtual lanes, Λ of the uploaded tables (dfsssp-rs eval over OpenSM's own dumps),
# and how many times faster than stock dfsssp the routing phase was.
#
#   benches/opensm_engines.sh [SPEC|NET_FILE] [ENGINE ...]
#   defaults: ktree:18,3   dfsssp sssp minhop nue sssp-rs dfsssp-rs
# Environment: PATTERNS (bisection patterns for Λ, default 100), KEEP=1 keeps the work directories,
# QOS=0 runs OpenSM without -Q (then OpenSM programs no SL-to-VL tables and dfsssp-rs routes in one
# lane; with -Q, OpenSM's own SL-to-VL setup dominates time and memory after routing).
#
#   benches/opensm_engines.sh one-lane
# QoS off (one lane) on the 6x6x6 torus and the random 128-switch fabric: stock nue and dfsssp-rs
# in OpenSM side by side, then dfsssp-rs's one-lane Λ as a share of its 8-lane Λ (in-process, the
# same PATTERNS and seed).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = one-lane ]; then
    for f in torus:6x6x6,4 random:128,32,16,300,seed=1; do
        QOS=0 "$0" "$f" nue dfsssp-rs
        l1=$(./target/release/dfsssp-rs eval --topo "$f" --no-qos --patterns "${PATTERNS:-100}" --json --quiet |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["bisection"]["lambda"])')
        l8=$(./target/release/dfsssp-rs eval --topo "$f" --lanes 8 --patterns "${PATTERNS:-100}" --json --quiet |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["bisection"]["lambda"])')
        python3 -c "print('dfsssp-rs in-process: one lane Λ %.4f, 8 lanes Λ %.4f: %.1f%%' % ($l1, $l8, 100 * $l1 / $l8))"
    done
    exit 0
fi
source scripts/setup.sh
cargo build --release --quiet
source scripts/ibsim-lib.sh

FABRIC=${1:-ktree:18,3}
shift || true
ENGINES=("$@")
((${#ENGINES[@]})) || ENGINES=(dfsssp sssp minhop nue sssp-rs dfsssp-rs)
PATTERNS=${PATTERNS:-100}
QOS_ARGS=(-Q)
[ "${QOS:-1}" = 0 ] && QOS_ARGS=()
BIN=./target/release/dfsssp-rs

WORK=$(mktemp -d /tmp/dfsssp-bench.XXXXXX)
NET=$(fabric_net "$FABRIC" "$WORK" "$BIN")
export IBSIM_SOCKNAME="dfsssp-bench-$$"
trap 'ibsim_stop; [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT

declare -A PHASE RSS USED LANES LAMBDA EFI
for e in "${ENGINES[@]}"; do
    dir="$WORK/$e"
    mkdir -p "$dir"
    echo "== $e: fresh ibsim, opensm --once ${QOS_ARGS[*]}" >&2
    ibsim_start "$NET" "$dir"
    opensm_run "$dir" "$e" "${QOS_ARGS[@]}" || true
    ibsim_stop
    PHASE[$e]=$(routing_phase "$dir/osm.log")
    RSS[$e]=$(( $(cat "$dir/rss_kb" 2>/dev/null || echo 0) / 1024 ))
    USED[$e]=$(engine_used "$dir/osm.log")
    lanes=$(sed -n 's/.*layers used: \([0-9]*\) of.*/\1/p; s/.*Virtual Lanes needed: \([0-9]*\).*/\1/p' "$dir/osm.log" | tail -n 1)
    LANES[$e]=${lanes:--}
    read -r LAMBDA[$e] EFI[$e] < <("$BIN" eval --dumps "$dir" --patterns "$PATTERNS" --json --quiet 2>/dev/null |
        python3 -c 'import json,sys; m=json.load(sys.stdin)["metrics"]; b=m.get("bisection")
print("%.4f" % b["lambda"] if b else "-", m["efi"]["max"])' || echo "- -")
done

base=${PHASE[dfsssp]:-}
printf '\nfabric: %s   (%s)\n' "$FABRIC" "$(grep -c '^Switch' "$NET") switches, $(grep -c -E '^(Ca|Hca)' "$NET") CAs"
printf '%-10s %-10s %12s %14s %10s %6s %8s %8s\n' engine used "routing [s]" "vs dfsssp" "RSS [MB]" lanes "Λ" "EFI max"
for e in "${ENGINES[@]}"; do
    ratio="-"
    if [[ -n "$base" && "$base" != n/a && "${PHASE[$e]}" != n/a ]]; then
        ratio=$(python3 -c "p=${PHASE[$e]}; print('%.1fx faster' % (${base}/p) if p > 0 else '-')")
    fi
    printf '%-10s %-10s %12s %14s %10s %6s %8s %8s\n' "$e" "${USED[$e]:-none}" "${PHASE[$e]}" "$ratio" \
        "${RSS[$e]}" "${LANES[$e]}" "${LAMBDA[$e]}" "${EFI[$e]}"
done
