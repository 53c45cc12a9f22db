#!/usr/bin/env bash
# Offline scaling of dfsssp-rs (routing + deadlock removal + verification) on this machine, in
# three families from ~1k CAs up: random irregular fabrics of 36-port switches with 16 CAs each
# (Jellyfish-like), 3-level fat trees and balanced dragonflies (a = 2p = 2h). Prints per fabric
# the routing and verification time, lanes, Λ (100 patterns) and the peak RSS of the whole
# process; then per family the fitted growth exponent of routing + verification time over CAs
# (least squares on log-log, fabrics of >= 2,500 CAs) and an SVG plot (target/scale.svg).
#   benches/scale.sh [LANES]      (default 8; 1 = OpenSM without QoS)
#   SCALE_MAX_CAS=N               skip fabrics with more CAs (default: all below)
#   SCALE_OUT=DIR                 where scale.tsv and scale.svg go (default target/)
#   SCALE_FAULTS="0 1 5"          every fabric also with that percentage of its switch-to-switch
#                                 cables missing (generator option cut=P, seeded; default 0 only):
#                                 routing time must grow with the fabric, not with its faults
#
# InfiniBand addresses at most 49,151 unicast LIDs (CA ports and switches together) in a subnet,
# so the largest fabrics here stay below that: fattree3:56 (43,904 CAs + 3,920 switches) and
# dragonfly:20,10,10,201 (40,200 CAs + 4,020 switches). 65k or 100k CAs need several subnets
# (or LMC 0 with more LIDs than IB has); the generators refuse more than 65,535 nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ibsim-lib.sh
need_commands cargo python3 /usr/bin/time
cargo build --release --quiet --bin dfsssp-rs
BIN=${CARGO_TARGET_DIR:-target}/release/dfsssp-rs
LANES=${1:-8}
MAX=${SCALE_MAX_CAS:-1000000}
OUT=${SCALE_OUT:-${CARGO_TARGET_DIR:-target}}
mkdir -p "$OUT"
# One run's JSON and peak RSS at a time, removed however the script ends.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# family spec CAs
FABRICS=(
    "random random:64,36,16,512 1024"
    "random random:160,36,16,1280 2560"
    "random random:320,36,16,2560 5120"
    "random random:640,36,16,5120 10240"
    "random random:1250,36,16,10000 20000"
    "fattree3 fattree3:24 3456"
    "fattree3 fattree3:36 11664"
    "fattree3 fattree3:48 27648"
    "fattree3 fattree3:56 43904"
    "dragonfly dragonfly:8,4,4,33 1056"
    "dragonfly dragonfly:12,6,6,73 5256"
    "dragonfly dragonfly:16,8,8,129 16512"
    "dragonfly dragonfly:20,10,10,201 40200"
)
tsv=$OUT/scale.tsv
printf 'family\tfabric\tCAs\tswitches\troute_s\tverify_s\tlanes\tlambda\trss_mb\n' >"$tsv"
printf '%-10s %-26s %8s %9s %10s %10s %6s %8s %9s\n' family fabric CAs switches "route [s]" "verify [s]" lanes Λ "RSS [MB]"
FAULTS=${SCALE_FAULTS:-0}
for row in "${FABRICS[@]}"; do
  for cut in $FAULTS; do
    read -r family spec cas <<<"$row"
    [ "$cas" -le "$MAX" ] || continue
    if [ "$cut" != 0 ]; then
        spec="$spec,cut=$cut"
        family="$family-cut$cut"
    fi
    /usr/bin/time -f '%M' -o "$out/rss" "$BIN" eval --topo "$spec" --engine dfsssp-rs \
        --lanes "$LANES" --patterns 100 --json --quiet >"$out/json"
    python3 - "$family" "$spec" "$out/json" "$(cat "$out/rss")" "$tsv" <<'PY'
import json, sys
family, spec, path, rss, tsv = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
d = json.load(open(path))
st = d["engine"]["stats"]
t = lambda x: x["secs"] + x["nanos"] / 1e9
lam = d["metrics"]["bisection"]["lambda"]
row = (family, spec, st["ca_ports"], st["switches"], t(st["route_time"]), t(st["verify_time"]),
       st["layers"], lam, rss // 1024)
print("%-10s %-26s %8d %9d %10.3f %10.3f %6d %8.4f %9d" % row)
with open(tsv, "a") as f:
    f.write("%s\t%s\t%d\t%d\t%.3f\t%.3f\t%d\t%.4f\t%d\n" % row)
PY
  done
done
python3 benches/scale_plot.py "$tsv" "$OUT/scale.svg"
