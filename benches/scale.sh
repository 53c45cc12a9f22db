#!/usr/bin/env bash
# Offline scaling of dfsssp-rs (routing + deadlock removal + verification) on this machine: random
# irregular fabrics of 36-port switches with 16 CAs each from 1k to 20k CAs, and the 3-level fat
# tree of 36-port switches (11,664 CAs). Prints routing and verification time, lanes, Λ (100
# patterns) and the peak RSS of the whole process.
#   benches/scale.sh [LANES]      (default 8; 1 = OpenSM without QoS)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --quiet --bin dfsssp-rs
LANES=${1:-8}
SPECS=(random:64,36,16,512 random:160,36,16,1280 random:320,36,16,2560 random:640,36,16,5120
       random:1250,36,16,10000 fattree3:36)
printf '%-26s %8s %9s %10s %10s %7s %8s %9s\n' fabric CAs switches "route [s]" "verify [s]" lanes Λ "RSS [MB]"
for spec in "${SPECS[@]}"; do
    out=$(mktemp)
    /usr/bin/time -f '%M' -o "$out.rss" ./target/release/dfsssp-rs eval --topo "$spec" --engine dfsssp-rs \
        --lanes "$LANES" --patterns 100 --json --quiet >"$out"
    python3 - "$spec" "$out" "$(cat "$out.rss")" <<'PY'
import json, sys
spec, path, rss = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
st = d["engine"]["stats"]
t = lambda x: x["secs"] + x["nanos"] / 1e9
lam = d["metrics"]["bisection"]["lambda"]
print("%-26s %8d %9d %10.3f %10.3f %7d %8.4f %9d" % (spec, st["ca_ports"], st["switches"],
      t(st["route_time"]), t(st["verify_time"]), st["layers"], lam, rss // 1024))
PY
    rm -f "$out" "$out.rss"
done
