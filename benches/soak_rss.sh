#!/usr/bin/env bash
# opensm's RSS through a long run of cable flaps, engine by engine, to tell the plug-in's memory
# growth from OpenSM's own: each ENGINE gets a fresh ibsim and one long-running stock opensm
# (QoS on, sweep_interval 1, our plug-in loaded for every engine, as the soak runs it), then
# EVENTS seeded events, a switch-to-switch cable unplugged and the same one plugged back in
# turn. After each event's sweeps settle, opensm's VmRSS is read from /proc. Prints a row every
# tenth event and one summary line per engine: RSS after the first event (the baseline, as in
# the soak test), at the end, the highest, and the growth over the baseline.
# MIX=1: the soak's kinds of event in turn instead of cable flaps alone, the same sequence for
# every engine: a cable down, back; a switch without CAs down (every cable of it), back; a CA
# leaving, joining (not the SM's, the first CA).
#
#   benches/soak_rss.sh [EVENTS] [SPEC] [ENGINE...]
#       defaults: 100 events, ktree:4,3 (the soak's fabric), engines minhop dfsssp-rs
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ibsim-lib.sh
need_tools
EVENTS=${1:-100}
SPEC=${2:-ktree:4,3}
ENGINES=("${@:3}")
((${#ENGINES[@]})) || ENGINES=(minhop dfsssp-rs)
cargo build --release --quiet
BIN=$PWD/target/release/dfsssp-rs

# cables NETFILE: one switch-to-switch cable per line, as ibsim's console names its first end
# ("S-..."[port]), each cable once.
cables() {
    awk '/^Switch/ { sw = $3; next }
         /^[A-Za-z]/ { sw = ""; next }
         sw != "" && /^\[[0-9]+\][ \t]+"S-/ {
             port = substr($1, 2, length($1) - 2); peer = $2; sub(/\[.*/, "", peer)
             if (sw < peer) print sw "[" port "]"
         }' "$1"
}

# inner_switch_ports NETFILE: per switch without CAs, its cables as ibsim's console names them
# from its side, on one line ("S-..."[1] "S-..."[2] ...).
inner_switch_ports() {
    awk '/^Switch/ { if (sw != "" && !ca) print line; sw = $3; line = ""; ca = 0; next }
         /^[A-Za-z]/ { if (sw != "" && !ca) print line; sw = ""; next }
         sw != "" && /^\[[0-9]+\][ \t]+"H-/ { ca = 1 }
         sw != "" && /^\[[0-9]+\][ \t]+"S-/ {
             port = substr($1, 2, length($1) - 2); line = line (line == "" ? "" : " ") sw "[" port "]"
         }
         END { if (sw != "" && !ca) print line }' "$1"
}

# ca_ports NETFILE: every CA's port 1 but the first CA's (the SM's), as the console names it.
ca_ports() {
    awk '/^Ca/ { n++; if (n > 1) print $3 "[1]" }' "$1"
}

# event_cmds EV: the console commands of event EV (MIX=1) and its label, "label|cmd|cmd...".
event_cmds() {
    local ev=$1 k=$((($1 - 1) / 6)) cmds="" p
    case $(((ev - 1) % 6)) in
    0) echo "cable down|Unlink ${cable_list[$((k * 7919 % ${#cable_list[@]}))]}" ;;
    1) echo "cable back|ReLink ${cable_list[$((k * 7919 % ${#cable_list[@]}))]}" ;;
    2 | 3)
        local verb=Unlink label="switch down"
        (((ev - 1) % 6 == 3)) && verb=ReLink label="switch back"
        for p in ${inner_list[$((k * 31 % ${#inner_list[@]}))]}; do cmds="$cmds|$verb $p"; done
        echo "$label$cmds"
        ;;
    4) echo "CA leaves|Unlink ${ca_list[$((k * 13 % ${#ca_list[@]}))]}" ;;
    5) echo "CA joins|ReLink ${ca_list[$((k * 13 % ${#ca_list[@]}))]}" ;;
    esac
}

# sweeps LOG: heavy sweeps completed so far.
sweeps() {
    local n
    n=$(grep -c "SUBNET UP" "$1" 2>/dev/null || true)
    echo "${n:-0}"
}

# settle LOG: waits until the SM has swept at least once more than $1 sweeps and then sweeps no
# more for 3 s (at most 120 s).
settle() {
    local log=$1 before=$2 i n last
    for ((i = 0; i < 1200; i++)); do
        n=$(sweeps "$log")
        [ "$n" -gt "$before" ] && break
        sleep 0.1
    done
    last=$(sweeps "$log")
    for ((i = 0; i < 40; i++)); do
        sleep 3
        n=$(sweeps "$log")
        [ "$n" = "$last" ] && return 0
        last=$n
    done
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

trap stop_all EXIT
trap "exit 130" INT TERM
for engine in "${ENGINES[@]}"; do
    dir=$(mktemp -d "${TMPDIR:-/tmp}/soak-rss.XXXXXX")
    export IBSIM_SOCKNAME="soakrss$$$engine"
    net=$(fabric_net "$SPEC" "$dir" "$BIN")
    mkfifo "$dir/console"
    ibsim_start "$net" "$dir" "$dir/console"
    mapfile -t cable_list < <(cables "$net")
    mapfile -t inner_list < <(inner_switch_ports "$net")
    mapfile -t ca_list < <(ca_ports "$net")
    cat >"$dir/osm.conf" <<CONF
event_plugin_name dfsssp_rs
routing_engine $engine
sweep_interval 1
force_log_flush TRUE
dump_files_dir $dir
CONF
    (cd "$dir" && exec env OSM_TMP_DIR="$dir" OSM_CACHE_DIR="$dir" \
        LD_LIBRARY_PATH="$PLUGIN_DIR" LD_PRELOAD="$UMAD2SIM" \
        opensm -Q -F "$dir/osm.conf" -f "$dir/osm.log" -d 0) >"$dir/opensm.out" 2>&1 &
    OSM_PID=$!
    settle "$dir/osm.log" 0
    echo "== $engine on $SPEC: ${#cable_list[@]} cables, $EVENTS events$([ "${MIX:-0}" = 1 ] && echo " (MIX=1: cables, switches without CAs, CAs)") (work dir $dir)"
    base=0 high=0 rss=0
    for ((ev = 1; ev <= EVENTS; ev++)); do
        if [ "${MIX:-0}" = 1 ]; then
            IFS='|' read -r -a cmds <<<"$(event_cmds "$ev")"
            what=${cmds[0]}
            cmds=("${cmds[@]:1}")
        else
            cable=${cable_list[$(((ev - 1) / 2 * 7919 % ${#cable_list[@]}))]}
            if ((ev % 2)); then what="Unlink $cable"; else what="ReLink $cable"; fi
            cmds=("$what")
        fi
        before=$(sweeps "$dir/osm.log")
        for c in "${cmds[@]}"; do echo "$c" >&3; done
        settle "$dir/osm.log" "$before"
        kill -0 "$OSM_PID" 2>/dev/null || { echo "opensm died; see $dir" >&2; exit 1; }
        rss=$(rss_kib "$OSM_PID")
        ((base)) || base=$rss
        ((rss > high)) && high=$rss
        if ((ev % 10 == 0 || ev == 1)); then
            printf '%5d  %-34s %8.1f MB\n' "$ev" "$what" "$(echo "$rss / 1024" | bc -l)"
        fi
    done
    printf 'summary %s: RSS %.1f MB after event 1, %.1f MB at the end, %.1f MB at most: +%.1f%% (+%d KiB)\n' \
        "$engine" "$(echo "$base / 1024" | bc -l)" "$(echo "$rss / 1024" | bc -l)" \
        "$(echo "$high / 1024" | bc -l)" "$(echo "100 * ($high - $base) / $base" | bc -l)" \
        $((high - base))
    stop_all
    rm -rf "$dir"
done
echo "uptime: $(uptime)"
