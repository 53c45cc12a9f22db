#!/usr/bin/env bash
# One link failure under a running OpenSM, side by side: stock dfsssp, dfsssp-rs computing from
# scratch (DFSSSP_RS_INCREMENTAL=0) and dfsssp-rs re-routing incrementally. Each engine gets a fresh
# ibsim (console on a fifo) and a running opensm -Q (sweep_interval 1); after the first sweep one
# switch-to-switch cable is unplugged (ibsim `Unlink`) and OpenSM re-sweeps. Per engine:
# - routing phase of the re-route (OpenSM's "building routing with" -> "tables configured", the
#   second routing run of the log), and dfsssp-rs's own route/verify times from its log;
# - LFT blocks changed: 64-LID blocks of opensm-lfts.dump that differ before/after, per switch;
# - SLs changed: CA pairs whose SL differs, from SAMPLE (default 60) path records asked of the SA
#   (saquery -p) before and after (stock dfsssp exports no SL table); for dfsssp-rs also the exact
#   count over all pairs from its log line "changes: ...".
#
#   benches/reroute.sh [SPEC|NET_FILE] [ENGINE ...]
#   defaults: ktree:18,3   dfsssp dfsssp-rs-full dfsssp-rs
# Environment: SAMPLE (SA path records per snapshot), KEEP=1 keeps the work directories.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ibsim-lib.sh
need_tools cargo saquery
cargo build --release --quiet

FABRIC=${1:-ktree:18,3}
shift || true
ENGINES=("$@")
((${#ENGINES[@]})) || ENGINES=(dfsssp dfsssp-rs-full dfsssp-rs)
SAMPLE=${SAMPLE:-60}
BIN=./target/release/dfsssp-rs

WORK=$(mktemp -d /tmp/dfsssp-reroute.XXXXXX)
NET=$(fabric_net "$FABRIC" "$WORK" "$BIN")
export IBSIM_SOCKNAME="dfsssp-reroute-$$"
OSM_PID=
trap 'stop_all; [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT

# The cable: a switch-to-switch link a third of the way through the net file.
LINK=$(python3 - "$NET" <<'PY'
import re, sys
links, node = [], None
for line in open(sys.argv[1]):
    m = re.match(r'(Switch)\s+\d+\s+"([^"]+)"', line)
    if m:
        node = m.group(2)
        continue
    if re.match(r'(Hca|Ca|Rt)\s', line):
        node = None
        continue
    m = re.match(r'\[(\d+)\]\s+"(S-[^"]+)"\[(\d+)\]', line)
    if node and m and node < m.group(2):
        links.append('"%s"[%s]' % (node, m.group(1)))
print(links[len(links) // 3])
PY
)

count() {
    local n
    n=$(grep -c -- "$2" "$1" 2>/dev/null) || true
    echo "${n:-0}"
}
wait_count() { # LOG NEEDLE N SECONDS
    local i
    for i in $(seq 1 $(($4 * 10))); do
        [ "$(count "$1" "$2")" -ge "$3" ] && return 0
        kill -0 "$OSM_PID" 2>/dev/null || { echo "opensm died; see $1" >&2; return 1; }
        sleep 0.1
    done
    echo "timeout waiting for '$2' x$3 in $1" >&2
    return 1
}
# CA LIDs from opensm-subnet.lst.
ca_lids() { grep -oE '\{ CA[^{]*\{[^}]*\} LID:[0-9a-fA-F]+' "$1" | sed 's/.*LID://' | sort -u; }
# sls DIR PAIRS_FILE: "slid dlid sl" for every pair, from the SA.
sls() {
    local slid dlid
    while read -r slid dlid; do
        printf '%s %s %s\n' "$slid" "$dlid" "$(LD_PRELOAD=$UMAD2SIM saquery -p --src-to-dst "$slid:$dlid" 2>/dev/null |
            sed -n 's/^[[:space:]]*sl\.*\(0x[0-9a-f]*\).*/\1/p' | head -n 1)"
    done <"$2"
}
blocks_changed() {
    python3 - "$1" "$2" <<'PY'
import re, sys
def load(path):
    t, cur = {}, None
    for line in open(path):
        if line.startswith('Unicast lids ['):
            m = re.search(r' guid 0x([0-9a-fA-F]+)', line)
            cur = int(m.group(1), 16) if m else None
            if cur is not None:
                t[cur] = {}
            continue
        m = re.match(r'0x([0-9a-fA-F]+)\s+(\d+)', line)
        if m and cur is not None:
            t[cur][int(m.group(1), 16)] = int(m.group(2))
    return t
a, b = load(sys.argv[1]), load(sys.argv[2])
total = changed = 0
for sw, lb in b.items():
    la = a.get(sw, {})
    top = max(list(lb) + list(la) + [0])
    for blk in range(0, top + 1, 64):
        total += 1
        if any(la.get(l) != lb.get(l) for l in range(blk, blk + 64)):
            changed += 1
print(changed, total)
PY
}

declare -A PHASE BLOCKS SLCH OURS TIMES USED
for e in "${ENGINES[@]}"; do
    dir="$WORK/$e"
    mkdir -p "$dir"
    engine=$e
    extra=()
    if [ "$e" = dfsssp-rs-full ]; then engine=dfsssp-rs; extra=(DFSSSP_RS_INCREMENTAL=0); fi
    echo "== $e: fresh ibsim, running opensm -Q, then Unlink $LINK" >&2
    mkfifo "$dir/console"
    ibsim_start "$NET" "$dir" "$dir/console"
    cat >"$dir/osm.conf" <<CONF
event_plugin_name dfsssp_rs
routing_engine $engine
dump_files_dir $dir
sweep_interval 1
CONF
    (cd "$dir" && exec env "${extra[@]}" OSM_TMP_DIR="$dir" OSM_CACHE_DIR="$dir" \
        LD_LIBRARY_PATH="$PLUGIN_DIR" LD_PRELOAD="$UMAD2SIM" \
        opensm -F "$dir/osm.conf" -f "$dir/osm.log" -D 0x47 -d 0 -Q >"$dir/opensm.out" 2>&1) &
    OSM_PID=$!
    wait_count "$dir/osm.log" "SUBNET UP" 1 900
    sleep 3
    cp "$dir/opensm-lfts.dump" "$dir/before.lfts"
    ca_lids "$dir/opensm-subnet.lst" | python3 -c '
import random, sys
lids = [l.strip() for l in sys.stdin if l.strip()]
r = random.Random(7)
for _ in range(int(sys.argv[1])):
    a, b = r.sample(lids, 2)
    print(int(a, 16), int(b, 16))' "$SAMPLE" >"$dir/pairs"
    sls "$dir" "$dir/pairs" >"$dir/before.sls"
    # The re-route's own dumps: OpenSM writes them after routing and before that sweep's
    # "SUBNET UP" (counted without the message box's line).
    routed=$(count "$dir/osm.log" "tables configured on all switches")
    ups=$(count "$dir/osm.log" "-> SUBNET UP")
    echo "Unlink $LINK" >&3
    wait_count "$dir/osm.log" "tables configured on all switches" $((routed + 1)) 900
    wait_count "$dir/osm.log" "-> SUBNET UP" $((ups + 1)) 900
    sleep 3
    cp "$dir/opensm-lfts.dump" "$dir/after.lfts"
    sls "$dir" "$dir/pairs" >"$dir/after.sls"
    stop_all
    PHASE[$e]=$(routing_phase "$dir/osm.log")
    USED[$e]=$(engine_used "$dir/osm.log")
    BLOCKS[$e]=$(blocks_changed "$dir/before.lfts" "$dir/after.lfts")
    SLCH[$e]=$(paste "$dir/before.sls" "$dir/after.sls" | awk '$3 != $6 { n++ } END { print n + 0 }')
    OURS[$e]=$(grep -h "dfsssp-rs: changes:" "$dir/osm.log" | tail -n 1 | sed 's/.*changes: //; s/ (compared.*//' || true)
    TIMES[$e]=$(grep -h -E "dfsssp-rs: (re-)?routed in" "$dir/osm.log" | tail -n 1 | sed 's/.*dfsssp-rs: //' || true)
done

printf '\nfabric: %s (%s switches, %s CAs); cable unplugged: %s; load: %s\n' "$FABRIC" \
    "$(grep -c '^Switch' "$NET")" "$(grep -c -E '^(Ca|Hca)' "$NET")" "$LINK" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-15s %-10s %12s %22s %14s\n' engine used "re-route [s]" "LFT blocks changed" "SLs changed"
for e in "${ENGINES[@]}"; do
    read -r ch tot <<<"${BLOCKS[$e]}"
    printf '%-15s %-10s %12s %22s %14s\n' "$e" "${USED[$e]}" "${PHASE[$e]}" "$ch of $tot" "${SLCH[$e]} of $SAMPLE"
done
for e in "${ENGINES[@]}"; do
    [ -n "${OURS[$e]}" ] && printf '%s: %s\n    %s\n' "$e" "${OURS[$e]}" "${TIMES[$e]}"
done
exit 0
