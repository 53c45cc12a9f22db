# Shell functions to run the stock OpenSM on an ibsim fabric, shared by scripts/demo.sh and
# benches/opensm_engines.sh. Source it; every function works in a directory of its own, so several
# runs (with different IBSIM_SOCKNAME) can go on at once.

UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUGIN_DIR="$REPO_ROOT/target/release"

# ibsim_start NETFILE WORKDIR [CONSOLE_FIFO]: starts ibsim on the net file (socket name:
# $IBSIM_SOCKNAME, set by the caller) with node/switch/port caps large enough for it, and waits
# until it is ready. With a fifo, ibsim reads its console (Unlink, ReLink, ...) from it; the
# caller keeps it open for writing on fd 3 (`exec 3>FIFO` after this returns is too late: ibsim
# blocks opening the fifo, so this opens fd 3 itself).
ibsim_start() {
    local net=$1 dir=$2 fifo=${3:-}
    local switches cas ports
    switches=$(grep -c -E '^Switch' "$net" || true)
    cas=$(grep -c -E '^(Hca|Ca|Rt)' "$net" || true)
    # ibsim allocates one more port per switch (port 0)
    ports=$(awk '/^(Switch|Hca|Ca|Rt)[ \t]/ { n += $2 + ($1 == "Switch") } END { print n + 0 }' "$net")
    local caps=(-N $((switches + cas + 16)) -S $((switches + 16)) -P $((ports + 64)) -L 49152)
    if [ -n "$fifo" ]; then
        ibsim -s "${caps[@]}" "$net" <"$fifo" >"$dir/ibsim.out" 2>&1 &
        IBSIM_PID=$!
        exec 3>"$fifo"
    else
        ibsim -s "${caps[@]}" -n "$net" >"$dir/ibsim.out" 2>&1 &
        IBSIM_PID=$!
    fi
    local i
    for i in $(seq 1 600); do
        grep -q "Network simulator ready" "$dir/ibsim.out" 2>/dev/null && return 0
        kill -0 "$IBSIM_PID" 2>/dev/null || { cat "$dir/ibsim.out" >&2; return 1; }
        sleep 0.1
    done
    echo "ibsim did not become ready in 60 s; see $dir/ibsim.out" >&2
    return 1
}

# fabric_net FABRIC WORKDIR BIN: the ibsim net file for FABRIC (a net file, or a generator spec
# written into WORKDIR with BIN, the dfsssp-rs command), printed.
fabric_net() {
    if [ -f "$1" ]; then
        realpath "$1"
    else
        "$3" generate "$1" -o "$2/fabric.net" >&2
        echo "$2/fabric.net"
    fi
}

ibsim_stop() {
    if [ -n "${IBSIM_PID:-}" ]; then
        kill "$IBSIM_PID" 2>/dev/null || true
        wait "$IBSIM_PID" 2>/dev/null || true # ibsim exits by SIGTERM: status 143
    fi
    IBSIM_PID=
}

# opensm_run WORKDIR ENGINE [OPENSM ARGS...]: one OpenSM sweep (--once) routing with ENGINE, our
# plug-in loaded, dumps (-D 0x47: error, info, verbose, routing) into WORKDIR. Peak RSS in KB goes
# to WORKDIR/rss_kb.
opensm_run() {
    local dir=$1 engine=$2
    shift 2
    cat >"$dir/osm.conf" <<CONF
event_plugin_name dfsssp_rs
routing_engine $engine
dump_files_dir $dir
CONF
    (cd "$dir" && OSM_TMP_DIR="$dir" OSM_CACHE_DIR="$dir" LD_LIBRARY_PATH="$PLUGIN_DIR" \
        LD_PRELOAD="$UMAD2SIM" /usr/bin/time -f %M -o "$dir/rss_kb" \
        opensm --once -F "$dir/osm.conf" -f "$dir/osm.log" -D 0x47 -d 0 "$@" >"$dir/opensm.out" 2>&1)
}

# routing_phase LOG: seconds from "building routing with" to "tables configured on all switches"
# (the last such pair in the log), from OpenSM's microsecond timestamps.
routing_phase() {
    awk '
        function t(line,   a, hms) { split($3, hms, ":"); return hms[1]*3600 + hms[2]*60 + hms[3] + $4/1e6 }
        /building routing with/ { if (!start) start = t($0) }
        /tables configured on all switches/ { end = t($0) }
        END { if (start && end) printf "%.3f\n", end - start; else print "n/a" }
    ' "$1"
}

# engine_used LOG: the engine OpenSM finally used ("X tables configured on all switches").
engine_used() {
    sed -n 's/.* \([^ ]*\) tables configured on all switches.*/\1/p' "$1" | tail -n 1
}
