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
# CLASSES=1 gives OpenSM compute and I/O node lists (--cn_guid_file/--io_guid_file: three CAs in
# four compute, in runs of 8 by LID; every fourth of the rest I/O) and also reports Λ of
# compute-to-compute bisections and of compute nodes writing to I/O nodes for every engine.
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
CLASS_ARGS=()
EVAL_CLASS_ARGS=()
if [ "${CLASSES:-0}" = 1 ]; then
    # The CAs' port GUIDs (ibsim: node GUID + port number) in LID order, from the net file.
    python3 - "$NET" "$WORK" <<'PY'
import re, sys
net, work = sys.argv[1], sys.argv[2]
cas, guid = [], None
lines = open(net).read().splitlines()
for i, l in enumerate(lines):
    if l.startswith("caguid="):
        guid = int(l.split("=")[1], 16)
    elif l.startswith("Ca") and i + 1 < len(lines):
        port = re.match(r"\[(\d+)\]", lines[i + 1])
        lid = re.search(r"# lid (\d+)", lines[i + 1])
        if port and lid:
            cas.append((int(lid.group(1)), guid + int(port.group(1))))
cas = [g for _, g in sorted(cas)]
cn = [g for i, g in enumerate(cas) if (i // 8) % 4 != 3]
io = [g for i, g in enumerate(cas) if (i // 8) % 4 == 3][::4]
for name, gs in (("cn_guids", cn), ("io_guids", io)):
    open(f"{work}/{name}", "w").write("".join("0x%016x\n" % g for g in gs))
PY
    CLASS_ARGS=(--cn_guid_file "$WORK/cn_guids" --io_guid_file "$WORK/io_guids")
    EVAL_CLASS_ARGS=(--cn-guids "$WORK/cn_guids" --io-guids "$WORK/io_guids")
    echo "classes: $(wc -l <"$WORK/cn_guids") compute, $(wc -l <"$WORK/io_guids") I/O nodes" >&2
fi

declare -A PHASE RSS USED LANES LAMBDA EFI CC CIO
for e in "${ENGINES[@]}"; do
    dir="$WORK/$e"
    mkdir -p "$dir"
    echo "== $e: fresh ibsim, opensm --once ${QOS_ARGS[*]}" >&2
    ibsim_start "$NET" "$dir"
    opensm_run "$dir" "$e" "${QOS_ARGS[@]}" "${CLASS_ARGS[@]}" || true
    ibsim_stop
    PHASE[$e]=$(routing_phase "$dir/osm.log")
    RSS[$e]=$(( $(cat "$dir/rss_kb" 2>/dev/null || echo 0) / 1024 ))
    USED[$e]=$(engine_used "$dir/osm.log")
    lanes=$(sed -n 's/.*layers used: \([0-9]*\) of.*/\1/p; s/.*Virtual Lanes needed: \([0-9]*\).*/\1/p' "$dir/osm.log" | tail -n 1)
    LANES[$e]=${lanes:--}
    read -r LAMBDA[$e] EFI[$e] CC[$e] CIO[$e] < <("$BIN" eval --dumps "$dir" --patterns "$PATTERNS" \
        "${EVAL_CLASS_ARGS[@]}" --json --quiet 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); m=d["metrics"]; b=m.get("bisection")
c=d.get("classes") or {}; f=lambda x: "%.4f" % x["lambda"] if x else "-"
print(f(b), m["efi"]["max"], f(c.get("compute")), f(c.get("compute_to_io")))' || echo "- - - -")
done

base=${PHASE[dfsssp]:-}
printf '\nfabric: %s   (%s)\n' "$FABRIC" "$(grep -c '^Switch' "$NET") switches, $(grep -c -E '^(Ca|Hca)' "$NET") CAs"
printf '%-10s %-10s %12s %14s %10s %6s %8s %8s' engine used "routing [s]" "vs dfsssp" "RSS [MB]" lanes "Λ" "EFI max"
[ "${CLASSES:-0}" = 1 ] && printf ' %10s %10s' "Λ compute" "Λ c->I/O"
printf '\n'
for e in "${ENGINES[@]}"; do
    ratio="-"
    if [[ -n "$base" && "$base" != n/a && "${PHASE[$e]}" != n/a ]]; then
        ratio=$(python3 -c "p=${PHASE[$e]}; print('%.1fx faster' % (${base}/p) if p > 0 else '-')")
    fi
    printf '%-10s %-10s %12s %14s %10s %6s %8s %8s' "$e" "${USED[$e]:-none}" "${PHASE[$e]}" "$ratio" \
        "${RSS[$e]}" "${LANES[$e]}" "${LAMBDA[$e]}" "${EFI[$e]}"
    [ "${CLASSES:-0}" = 1 ] && printf ' %10s %10s' "${CC[$e]}" "${CIO[$e]}"
    printf '\n'
done
