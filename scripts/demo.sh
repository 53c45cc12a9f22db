#!/usr/bin/env bash
# The main job: the stock Debian opensm routes a simulated fabric (ibsim) with dfsssp-rs loaded as a
# plug-in, then the result is checked independently (ibdmchk over OpenSM's own dump files) and
# judged (dfsssp-rs eval). The bundled fabric is a 6x6x6 3D torus with 4 CAs per switch, where
# stock dfsssp needs 9 virtual lanes, has 8, gives up and leaves OpenSM on minhop (credit loops).
#
#   ./scripts/demo.sh [NET_FILE] [ENGINE]     defaults: fabrics/torus-6x6x6-4.net dfsssp-rs
# Environment: QOS=0 to run OpenSM without QoS (dfsssp-rs then routes within one lane).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
NET=$(realpath "${1:-fabrics/torus-6x6x6-4.net}")
ENGINE=${2:-dfsssp-rs}

echo "== building dfsssp-rs (release)" >&2
cargo build --release --quiet
source scripts/ibsim-lib.sh

WORK=$(mktemp -d /tmp/dfsssp-demo.XXXXXX)
export IBSIM_SOCKNAME="dfsssp-demo-$$"
trap 'ibsim_stop' EXIT

echo "== starting ibsim on $NET" >&2
ibsim_start "$NET" "$WORK"
QOS_ARGS=(-Q)
[ "${QOS:-1}" = 0 ] && QOS_ARGS=()
echo "== running opensm --once with routing_engine $ENGINE ${QOS_ARGS[*]} (work dir $WORK)" >&2
opensm_run "$WORK" "$ENGINE" "${QOS_ARGS[@]}"
ibsim_stop

used=$(engine_used "$WORK/osm.log")
phase=$(routing_phase "$WORK/osm.log")
routed=$(grep -m1 -o "routing [0-9]* switches, [0-9]* CA/router ports, [0-9]* LIDs" "$WORK/osm.log" || true)
layers=$(grep -m1 -o "layers used: [0-9]* of [0-9]*" "$WORK/osm.log" || echo "layers used: 1")
# A lane left to multicast (SL/VL 0; the unicast layers on SL/VL 1..): say so.
mcast_lane=$(grep -m1 -o "lane 0 of [0-9]* left to multicast" "$WORK/osm.log" || true)
if [ -z "$mcast_lane" ] && grep -q "one lane left free for multicast" "$WORK/osm.log"; then
    mcast_lane="one lane left to multicast"
fi
escape=$(grep -m1 -o "routes: .*minimal" "$WORK/osm.log" | sed 's/^routes: //' || true)

echo "== checking with ibdmchk (independent CA-to-CA connectivity and credit-loop check)" >&2
CHK=(-s "$WORK/opensm-subnet.lst" -f "$WORK/opensm.fdbs" -m "$WORK/opensm.mcfdbs")
[ -f "$WORK/opensm-path-sl.dump" ] && CHK+=(-c "$WORK/opensm-path-sl.dump")
# ibdmchk may segfault while exiting, after its report: judge the report, not the exit status.
# (The subshell's stderr goes too: bash would report the crash there.)
(cd "$WORK" && timeout 600 ibdmchk "${CHK[@]}" >"$WORK/ibdmchk.out" 2>&1) 2>/dev/null || true
# the first NodeGUID of a line is the CA's own (the second is its neighbour's)
ncas=$(awk '/^\{ CA/ { for (i = 1; i <= NF; i++) if ($i ~ /^NodeGUID:/) { g[$i] = 1; break } } END { print length(g) }' "$WORK/opensm-subnet.lst")
scanned=$(sed -n 's/^-I- Scanned:\([0-9]*\) CA to CA paths.*/\1/p' "$WORK/ibdmchk.out")
if grep -q "^-E- credit loops in routing" "$WORK/ibdmchk.out"; then loops="CREDIT LOOPS FOUND"
elif grep -qi "no credit loops found" "$WORK/ibdmchk.out"; then loops="no credit loops found"
else loops="not determined (see $WORK/ibdmchk.out)"; fi
missing=$(grep -c -E "^-E- .*(no path|Fail|missing|Unassigned|lid not found)" "$WORK/ibdmchk.out" || true)

echo "== judging the uploaded tables with dfsssp-rs eval (1000 random bisection patterns)" >&2
./target/release/dfsssp-rs eval --dumps "$WORK" --patterns 1000 --quiet >"$WORK/eval.txt" 2>&1 || true
lambda=$(sed -n 's/.*Λ[^0-9]*\([0-9.]*\).*/\1/p' "$WORK/eval.txt" | head -1)
lambda=${lambda:-"n/a (see $WORK/eval.txt)"}

cat <<REPORT

================= dfsssp-rs demo report =================
fabric             : $(basename "$NET") ($ncas CAs)
engine requested   : $ENGINE   (QoS ${QOS_ARGS[*]:-off})
engine used        : ${used:-none (routing failed)}
routed             : ${routed:-n/a}
routing phase      : $phase s   (OpenSM log: "building routing" -> "tables configured")
opensm peak RSS    : $(( $(cat "$WORK/rss_kb") / 1024 )) MB
virtual lanes      : ${layers#layers used: } for unicast${mcast_lane:+; $mcast_lane}
routes             : ${escape:-n/a}
Λ (eff. bisection) : $lambda
ibdmchk            : ${scanned:-?} of $((ncas * (ncas - 1))) CA-to-CA paths scanned, $missing path errors; $loops
files              : $WORK
=========================================================
REPORT
