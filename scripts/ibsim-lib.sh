# shellcheck shell=bash
# Shell functions to run the stock OpenSM on an ibsim fabric, shared by scripts/demo.sh,
# scripts/package-test.sh and the benches (opensm_engines.sh, reroute.sh, mcast_load.sh), and the
# prerequisite checks of every bench (need_commands, need_tools). Source it; every function works
# in a directory of its own, so several runs (with different IBSIM_SOCKNAME) can go on at once.
# Processes are stopped by PID only (IBSIM_PID, OSM_PID).

# umad2sim_path: the umad2sim shim (package libumad2sim0) where the package put it, else in this
# machine's multiarch library directory, whatever the architecture.
umad2sim_path() {
    local listed arch
    listed=$(dpkg -L libumad2sim0 2>/dev/null | grep -m 1 '/libumad2sim\.so$' || true)
    if [ -n "$listed" ]; then
        echo "$listed"
        return
    fi
    arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)
    echo "/usr/lib/${arch:-$(uname -m)-linux-gnu}/umad2sim/libumad2sim.so"
}
UMAD2SIM=${UMAD2SIM:-$(umad2sim_path)}
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
# written into WORKDIR with BIN, the dfsssp-rs command), printed; fails when BIN cannot generate it.
fabric_net() {
    if [ -f "$1" ]; then
        realpath "$1"
    else
        "$3" generate "$1" -o "$2/fabric.net" >&2 || return 1
        echo "$2/fabric.net"
    fi
}

# need_commands [COMMAND...]: exits with a list of the COMMANDs missing (and the Debian package
# that brings each). It installs nothing: scripts/setup.sh does that. A Rust toolchain installed
# by rustup but not on PATH is put on it.
need_commands() {
    local absent=() c
    declare -A pkg=([opensm]=opensm [ibsim]=ibsim-utils [python3]=python3 [cargo]="rustup (scripts/setup.sh)"
        [ibdmchk]=ibutils [saquery]=infiniband-diags [gcc]=gcc [/usr/bin/time]=time [git]=git)
    if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || absent+=("$c (${pkg[$c]:-?})")
    done
    if ((${#absent[@]})); then
        printf 'missing: %s\n' "${absent[@]}" >&2
        echo "scripts/setup.sh installs them (apt-get, Debian bookworm)" >&2
        exit 1
    fi
}

# need_tools [COMMAND...]: need_commands for opensm, ibsim, /usr/bin/time, python3 and the
# COMMANDs given, and the umad2sim shim.
need_tools() {
    if [ ! -f "$UMAD2SIM" ]; then
        echo "missing: $UMAD2SIM (libumad2sim0)" >&2
        echo "scripts/setup.sh installs it (apt-get, Debian bookworm)" >&2
        exit 1
    fi
    need_commands opensm ibsim python3 /usr/bin/time "$@"
}

# stop_pid PID [GRACE]: SIGTERM, then SIGKILL if PID still runs after GRACE seconds (default 10);
# reaps it when it is a child of this shell. Only that PID is signalled.
stop_pid() {
    local pid=$1 grace=${2:-10} i
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "pid $pid still running ${grace} s after SIGTERM: SIGKILL" >&2
        kill -9 "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true # a child stopped by a signal: status 128+n
}

ibsim_stop() {
    stop_pid "${IBSIM_PID:-}" 5
    IBSIM_PID=
}

# opensm_stop: stops the opensm of OSM_PID (opensm_run's /usr/bin/time, or an opensm started by
# the caller): its children first (the opensm under /usr/bin/time), then OSM_PID itself.
opensm_stop() {
    local kid
    if [ -n "${OSM_PID:-}" ]; then
        for kid in $(pgrep -P "$OSM_PID" 2>/dev/null || true); do
            stop_pid "$kid" 10
        done
        stop_pid "$OSM_PID" 10
    fi
    OSM_PID=
}

# stop_all: opensm, then the fd 3 console writer (ibsim_start with a fifo), then ibsim.
stop_all() {
    opensm_stop
    exec 3>&-
    ibsim_stop
}

# opensm_run WORKDIR ENGINE [OPENSM ARGS...]: one OpenSM sweep (--once) routing with ENGINE, our
# plug-in loaded, dumps (-D 0x47: error, info, verbose, routing) into WORKDIR; OSM_CONF_EXTRA
# (lines) goes into its config file too. Peak RSS in KB is the last line of WORKDIR/rss_kb.
# Returns opensm's exit status; with OPENSM_TIMEOUT=SECONDS (0 or unset: no limit) it stops
# opensm by PID after that long (SIGTERM, SIGKILL 10 s later) and returns 124.
opensm_run() {
    local dir=$1 engine=$2 limit=${OPENSM_TIMEOUT:-0} rc=0 start
    shift 2
    cat >"$dir/osm.conf" <<CONF
event_plugin_name dfsssp_rs
routing_engine $engine
dump_files_dir $dir
${OSM_CONF_EXTRA:-}
CONF
    # exec: OSM_PID is /usr/bin/time's, opensm is its only child
    (cd "$dir" && exec env OSM_TMP_DIR="$dir" OSM_CACHE_DIR="$dir" LD_LIBRARY_PATH="$PLUGIN_DIR" \
        LD_PRELOAD="$UMAD2SIM" /usr/bin/time -f %M -o "$dir/rss_kb" \
        opensm --once -F "$dir/osm.conf" -f "$dir/osm.log" -D 0x47 -d 0 "$@") >"$dir/opensm.out" 2>&1 &
    OSM_PID=$!
    start=$SECONDS
    while kill -0 "$OSM_PID" 2>/dev/null; do
        if [ "$limit" -gt 0 ] && [ $((SECONDS - start)) -ge "$limit" ]; then
            echo "opensm ($engine) still running after $limit s: stopping it" >&2
            opensm_stop
            echo "$limit" >"$dir/timeout"
            return 124
        fi
        sleep 0.1
    done
    wait "$OSM_PID" || rc=$?
    OSM_PID=
    return "$rc"
}

# routing_phase LOG: seconds from the first "building routing with" of the last routing run to
# "tables configured on all switches", from OpenSM's microsecond timestamps. An engine that fails
# hands over to the next one (or to minhop): the time counts both.
routing_phase() {
    awk '
        function t(line,   hms) { split($3, hms, ":"); return hms[1]*3600 + hms[2]*60 + hms[3] + $4/1e6 }
        /building routing with/ { if (end || !start) { start = t($0); end = 0 } }
        /tables configured on all switches/ { end = t($0) }
        END { if (start && end) printf "%.4f\n", end - start; else print "n/a" }
    ' "$1"
}

# engine_used LOG: the engine OpenSM finally used ("X tables configured on all switches").
engine_used() {
    sed -n 's/.* \([^ ]*\) tables configured on all switches.*/\1/p' "$1" | tail -n 1
}
