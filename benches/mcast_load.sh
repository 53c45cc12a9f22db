#!/usr/bin/env bash
# Multicast channel load of the trees OpenSM ends up with, side by side. On each fabric, the same
# NGROUPS random groups (each with 2..MAX_FULL full members and 0-2 send-only members, plus the
# IPoIB broadcast group joined by every CA) are created and joined through the SA of a running
# `opensm -Q` with our client tests/tools/mcjoin.c, once per engine:
#   dfsssp-rs  our unicast and our trees (mcast_build_stree: balanced across groups, on a lane of
#              their own where the layers leave one)
#   minhop     OpenSM's default unicast and trees
#   dfsssp     stock dfsssp, which builds its own trees (mcast_build_stree)
# From opensm.mcfdbs once it settles: per switch-to-switch channel (switch, out port) the number of
# groups whose mask holds it; printed: highest and mean load over used channels, channels used,
# switches summed over all trees, and whether ibdmchk -M (MFTs in the credit-loop analysis, with
# the path-SL dump when the engine writes one) finds credit loops.
#
#   benches/mcast_load.sh [SPEC|NET_FILE ...]      defaults: ktree:4,3 torus:4x4x4,1
# Environment: NGROUPS (64), MAX_FULL (16), SEED (1), ENGINES ("dfsssp-rs minhop dfsssp"),
# KEEP=1 keeps the work directories. CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ibsim-lib.sh
need_tools cargo gcc ibdmchk
cargo build --release --quiet
TARGET=$(realpath "${CARGO_TARGET_DIR:-target}")
PLUGIN_DIR="$TARGET/release"
BIN="$TARGET/release/dfsssp-rs"

FABRICS=("$@")
((${#FABRICS[@]})) || FABRICS=(ktree:4,3 torus:4x4x4,1)
read -r -a ENGINES <<<"${ENGINES:-dfsssp-rs minhop dfsssp}"
NGROUPS=${NGROUPS:-64}
MAX_FULL=${MAX_FULL:-16}
SEED=${SEED:-1}

WORK=$(mktemp -d /tmp/dfsssp-mcast-load.XXXXXX)
gcc -O2 -Wall -o "$WORK/mcjoin" tests/tools/mcjoin.c -libumad
OSM_PID=
trap 'stop_all; [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT

# plan NET: the joins, one line per CA and round: "ROUND HOST ARGS...", and "groups N" first.
plan() {
    python3 - "$1" "$NGROUPS" "$MAX_FULL" "$SEED" <<'PY'
import random, re, sys
net, groups, max_full, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cas = [m.group(1) for m in (re.match(r'(?:Hca|Ca)\s+\d+\s+"([^"]+)"', l) for l in open(net)) if m]
rng = random.Random(seed)
r1 = {c: ["-b"] for c in cas}
r2 = {}
for g in range(groups):
    mgid = "ff12:e017::%x" % (g + 1)
    members = rng.sample(cas, min(len(cas), rng.randint(2, max_full) + 2))
    nfull = max(2, len(members) - rng.randint(0, 2))
    full, send = members[:nfull], members[nfull:]
    r1[full[0]] += ["-f", mgid]
    for c in full[1:]:
        r2.setdefault(c, []).extend(["-f", mgid])
    for c in send:
        r2.setdefault(c, []).extend(["-s", mgid])
print("groups", groups + 1)
for rnd, joins in ((1, r1), (2, r2)):
    for c, a in joins.items():
        print(rnd, c, *a)
PY
}

# load NET MCFDBS: "max mean channels tree_switches" over switch-to-switch channels.
load() {
    python3 - "$1" "$2" <<'PY'
import re, sys
net, mcfdbs = sys.argv[1], sys.argv[2]
switch_port_to_switch = set()
node = None
for l in open(net):
    m = re.match(r'(Switch|Hca|Ca|Rt)\s+\d+\s+"([^"]+)"', l)
    if m:
        node = m.group(2) if m.group(1) == "Switch" else None
        continue
    m = re.match(r'\s*\[(\d+)\]\s+"(S-[^"]+)"', l)
    if node and m:
        switch_port_to_switch.add((int(node[2:], 16), int(m.group(1))))
load, sw, tree_switches = {}, None, 0
for l in open(mcfdbs):
    if l.startswith("Switch 0x"):
        sw = int(l.split()[1], 16)
    elif re.match(r'0x[0-9A-Fa-f]+ :', l):
        tree_switches += 1
        for p in l.split(":", 1)[1].split():
            key = (sw, int(p, 16))
            if key in switch_port_to_switch:
                load[key] = load.get(key, 0) + 1
v = list(load.values()) or [0]
print(max(v), "%.2f" % (sum(v) / len(v)), len(load), tree_switches)
PY
}

mlids_in() { grep -oE '^0x[0-9A-Fa-f]+' "$1" 2>/dev/null | sort -u | wc -l; }
secs() { awk -v a="$1" -v b="$2" -v c="${3:-0}" 'BEGIN { printf "%.1f", a - b - c }'; }

printf '%-18s %-10s %8s %9s %9s %9s %13s %8s %8s\n' fabric engine max_load mean_load channels tree_sws credit_loops joins_s route_s
for FABRIC in "${FABRICS[@]}"; do
    FDIR="$WORK/$(echo "$FABRIC" | tr -c 'A-Za-z0-9\n' _)"
    mkdir -p "$FDIR"
    NET=$(fabric_net "$FABRIC" "$FDIR" "$BIN")
    plan "$NET" >"$FDIR/plan"
    WANT=$(awk '$1 == "groups" { print $2 }' "$FDIR/plan")
    for ENGINE in "${ENGINES[@]}"; do
        DIR="$FDIR/$ENGINE"
        mkdir -p "$DIR"
        export IBSIM_SOCKNAME="dfsssp-mcload-$$-$ENGINE"
        ibsim_start "$NET" "$DIR"
        cat >"$DIR/osm.conf" <<CONF
event_plugin_name dfsssp_rs
routing_engine $ENGINE
dump_files_dir $DIR
qos TRUE
force_log_flush TRUE
transaction_timeout 1000
CONF
        (cd "$DIR" && OSM_TMP_DIR="$DIR" OSM_CACHE_DIR="$DIR" LD_LIBRARY_PATH="$PLUGIN_DIR" \
            LD_PRELOAD="$UMAD2SIM" exec nice -n 10 opensm -F "$DIR/osm.conf" -f "$DIR/osm.log" \
            -D 0x47 -d 0 >"$DIR/opensm.out" 2>&1) &
        OSM_PID=$!
        for _ in $(seq 1 3000); do
            grep -q "SUBNET UP" "$DIR/osm.log" 2>/dev/null && break
            kill -0 "$OSM_PID" 2>/dev/null || { echo "opensm died; see $DIR" >&2; exit 1; }
            sleep 0.1
        done
        grep -q "SUBNET UP" "$DIR/osm.log" || { echo "subnet not up; see $DIR" >&2; exit 1; }
        T0=$(date +%s.%N)
        for ROUND in 1 2; do
            while read -r _ HOST ARGS; do
                # shellcheck disable=SC2086 # ARGS are the join options
                (cd "$DIR" && SIM_HOST=$HOST LD_PRELOAD="$UMAD2SIM" \
                    "$WORK/mcjoin" -t 3000 -r 4 $ARGS >>"$DIR/mcjoin.out" 2>>"$DIR/mcjoin.err") ||
                    { echo "mcjoin as $HOST failed:" >&2; tail -3 "$DIR/mcjoin.err" >&2; exit 1; }
            done < <(awk -v r=$ROUND '$1 == r' "$FDIR/plan")
        done
        T1=$(date +%s.%N)
        # settled: every group in the dump, unchanged for 3 s
        LAST= SAME=0
        for _ in $(seq 1 1200); do
            NOW=$(md5sum <"$DIR/opensm.mcfdbs" 2>/dev/null || true)
            if [ "$NOW" = "$LAST" ] && [ "$(mlids_in "$DIR/opensm.mcfdbs")" -ge "$WANT" ]; then
                SAME=$((SAME + 1))
                [ "$SAME" -ge 12 ] && break
            else
                SAME=0
            fi
            LAST=$NOW
            sleep 0.25
        done
        T2=$(date +%s.%N)
        [ "$SAME" -ge 12 ] || { echo "opensm.mcfdbs did not settle with $WANT groups; see $DIR" >&2; exit 1; }
        USED=$(engine_used "$DIR/osm.log")
        PSL=()
        [ -f "$DIR/opensm-path-sl.dump" ] && PSL=(-c opensm-path-sl.dump)
        # (ibdmchk may segfault while exiting, after its report: judge the report)
        (cd "$DIR" && { ibdmchk -s opensm-subnet.lst -f opensm.fdbs -m opensm.mcfdbs "${PSL[@]}" \
            -d opensm-sl2vl.dump -M >ibdmchk-M.out 2>&1 || true; }) 2>/dev/null
        LOOPS=no
        grep -qE "credit loops in routing|Found credit loop" "$DIR/ibdmchk-M.out" && LOOPS=yes
        grep -q "MFT added" "$DIR/ibdmchk-M.out" || LOOPS="n/a"
        read -r MAX MEAN CHANNELS TREE_SWS < <(load "$NET" "$DIR/opensm.mcfdbs")
        printf '%-18s %-10s %8s %9s %9s %9s %13s %8s %8s\n' "$FABRIC" "${USED:-$ENGINE}" \
            "$MAX" "$MEAN" "$CHANNELS" "$TREE_SWS" "$LOOPS" "$(secs "$T1" "$T0")" "$(secs "$T2" "$T1" 3)"
        stop_all
    done
done
