#!/usr/bin/env bash
# The cost of a takeover without shared storage (issue 36): an HA pair of stock opensm in one
# ibsim, each with its own cache directory and state file, `adopt_switch_tables=1` on the
# standby. The master (priority 10) routes the fabric; the standby (priority 5) waits; the master
# is killed; the standby becomes master, reads every switch's LFT blocks back and adopts them.
# Per max_wire_smps value: the standby's log line (switches, blocks, read-back time, layers
# derived), its routing phase, and how many LFT entries differ between the two SMs' dumps.
#
#   benches/readback.sh [SPEC] [MAX_WIRE_SMPS...]     defaults: ktree:18,3, 4 (OpenSM's default)
#   KEEP=1 keeps each run's work directory (both SMs' logs and dumps)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ibsim-lib.sh
need_tools
SPEC=${1:-ktree:18,3}
WIRE=("${@:2}")
((${#WIRE[@]})) || WIRE=(4)
cargo build --release --quiet
BIN=$PWD/target/release/dfsssp-rs
LIMIT=${LIMIT:-900}

# wait_log FILE PATTERN: waits (at most LIMIT s) until FILE has a line matching PATTERN.
wait_log() {
    local i
    for ((i = 0; i < LIMIT * 10; i++)); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "no \"$2\" in $1 after $LIMIT s" >&2
    return 1
}

# start_sm DIR HOST PRIORITY OPTIONS: one opensm of the pair; its PID in SM_PID.
start_sm() {
    local dir=$1
    mkdir -p "$dir"
    cat >"$dir/osm.conf" <<CONF
event_plugin_name dfsssp_rs
event_plugin_options state_file=$dir/dfsssp-rs.state$4
routing_engine dfsssp-rs
dump_files_dir $dir
qos TRUE
force_log_flush TRUE
sweep_interval 10
sm_priority $3
sminfo_polling_timeout 1000
polling_retry_number 2
max_wire_smps $WIRE_SMPS
CONF
    (cd "$dir" && exec env OSM_TMP_DIR="$dir" OSM_CACHE_DIR="$dir" SIM_HOST="$2" SIM_SET_ISSM=1 \
        LD_LIBRARY_PATH="$PLUGIN_DIR" LD_PRELOAD="$UMAD2SIM" \
        opensm -F "$dir/osm.conf" -f "$dir/osm.log" -D 0x07) >"$dir/opensm.out" 2>&1 &
    SM_PID=$!
}

lfts() { grep -v '^#\|lids dumped' "$1/opensm-lfts.dump" 2>/dev/null; }

A_PID= B_PID=
cleanup() {
    stop_pid "$A_PID" 5
    stop_pid "$B_PID" 10
    ibsim_stop
}
trap cleanup EXIT
trap "exit 130" INT TERM
for WIRE_SMPS in "${WIRE[@]}"; do
    work=$(mktemp -d "${TMPDIR:-/tmp}/readback.XXXXXX")
    export IBSIM_SOCKNAME="readback$$w$WIRE_SMPS"
    net=$(fabric_net "$SPEC" "$work" "$BIN")
    ibsim_start "$net" "$work"
    mapfile -t cas < <(awk '/^(Ca|Hca)/ { gsub(/"/, "", $3); print $3 }' "$net")
    start_sm "$work/a" "${cas[0]}" 10 ""
    A_PID=$SM_PID
    wait_log "$work/a/osm.log" "saved routing state"
    start_sm "$work/b" "${cas[$((${#cas[@]} / 2))]}" 5 ",adopt_switch_tables=1"
    B_PID=$SM_PID
    wait_log "$work/b/osm.log" "Entering STANDBY state"
    sleep 5
    stop_pid "$A_PID" 0
    A_PID=
    wait_log "$work/b/osm.log" "switches' tables not adopted\|adopted the routing the switches hold"
    wait_log "$work/b/osm.log" "saved routing state"
    line=$(grep -h "switches hold\|switches' tables not adopted" "$work/b/osm.log" | sed 's/.*dfsssp-rs: //')
    phase=$(routing_phase "$work/b/osm.log")
    changed=$(diff <(lfts "$work/a") <(lfts "$work/b") | grep -c '^>' || true)
    echo "max_wire_smps $WIRE_SMPS: $line"
    echo "  routing phase after the takeover ${phase} s; LFT dump lines that differ from the master's: $changed"
    stop_pid "$B_PID" 10
    B_PID=
    ibsim_stop
    if [[ ${KEEP:-0} == 1 ]]; then echo "  work directory kept: $work"; else rm -rf "$work"; fi
done
echo "uptime: $(uptime)"
