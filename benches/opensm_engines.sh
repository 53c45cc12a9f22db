#!/usr/bin/env bash
# Side by side on one fabric, as an admin choosing a routing engine would see it: every engine
# OpenSM ships that applies to the fabric, and ours, each in a fresh ibsim (own directory, own
# IBSIM_SOCKNAME), same opensm binary, QoS on (-Q) unless QOS=0. Per engine:
#   engine     requested, and the one OpenSM really used ("ftree->minhop": it failed and OpenSM
#              fell back to minhop; the reason from OpenSM's log is printed under the table);
#              "timeout" when opensm was still running after TIMEOUT seconds (then stopped)
#   routing    routing phase (OpenSM's "building routing with" -> "tables configured", -D 0x47;
#              a failed engine's time counts with its fallback's), and its ratio to the fastest
#              stock engine that routed by itself
#   RSS        opensm's peak RSS (/usr/bin/time)
#   lanes      SLs the routes use: dfsssp-rs's layers (its log; its SLs are in
#              opensm-path-sl.dump), 1 for engines without a path_sl callback (minhop, updn, dnup,
#              ftree, dor, sssp, sssp-rs) and for nue with OpenSM's default nue_max_num_vls 1, else
#              what the engine's log says it needs (dfsssp, lash), else "?"
#   Λ, EFI, hops, unreachable pairs, credit loops: `dfsssp-rs eval --dumps` over OpenSM's own dump
#              files (Λ: PATTERNS random bisections; Λ/best: against the best stock engine that
#              routed by itself). Credit loops: eval's check of every lane's channel dependency
#              graph over all (switch, LID) paths, switch LIDs included. Stock engines with SLs of
#              their own (dfsssp, lash, torus-2QoS) dump no SLs: their routes are checked in one
#              lane; no cycle there means none for any SL split ("no (any SLs)"), a cycle there
#              proves nothing ("? (1 lane assumed)").
#   CA-CA loops: ibdmchk's credit-loop check of the CA-to-CA paths (with opensm-path-sl.dump where
#              there is one, else one SL; IBDMCHK=0 skips it, IBDMCHK_TIMEOUT limits it, 300 s)
#
#   benches/opensm_engines.sh [SPEC|NET_FILE] [ENGINE ...|all]
#       default fabric ktree:18,3; default engines: those that apply to the fabric's family
#       (engines_for below); `all`: every engine
#   benches/opensm_engines.sh families
#       every fabric of FAMILIES below, one table each, and a summary line per fabric: the best
#       stock engine by Λ against dfsssp-rs
#   benches/opensm_engines.sh faults
#       the scale table: every fabric of FAULT_FABRICS below (families at two sizes each), pristine
#       and with 1% and 5% of its switch-to-switch cables missing (FAULTS, default "0 1 5"; the
#       cuts seeded, the same fabric every run), against the stock engines an admin would pick
#       (minhop, ftree on fat trees, updn where it finds a root, stock dfsssp): QoS on for every
#       engine, then QoS off for the engines whose routes depend on it (dfsssp, dfsssp-rs; the
#       others route the same either way); one summary line per table
#   benches/opensm_engines.sh one-lane
#       QoS off (one lane) on the 6x6x6 torus and the random 128-switch fabric: stock nue and
#       dfsssp-rs in OpenSM side by side, then dfsssp-rs's one-lane Λ as a share of its 8-lane Λ
#       (in-process, the same PATTERNS and seed)
#
# Environment: PATTERNS (bisection patterns for Λ, default 100); TIMEOUT (seconds per opensm run,
# default 300); QOS=1 (default, opensm -Q), QOS=0 (no -Q: OpenSM programs no SL-to-VL tables and
# dfsssp-rs routes in one lane) or QOS=both (a table for each); KEEP=1 keeps the work directories;
# CLASSES=1 gives OpenSM compute and I/O node lists (--cn_guid_file/--io_guid_file: three CAs in
# four compute, in runs of 8 by LID; every fourth of the rest I/O) and also reports Λ of
# compute-to-compute bisections and of compute nodes writing to I/O nodes. CARGO_TARGET_DIR is
# honoured. FAULTS="0 5" (families only): every fabric also with that percentage of its
# switch-to-switch cables missing (generator option cut=P). ONLY="minhop dfsssp-rs" (families and
# faults): of each line's engines, run only these (a timing comparison in minutes, not hours).
# MATCH=REGEX (families and faults): only the fabrics whose SPEC matches (MATCH='^(torus|dragonfly)').
# JUDGE=0: no eval or ibdmchk of the dumps (routing phase, RSS and lanes only: the largest
# fabrics, whose path-SL dump runs to tens of GB).
# Prerequisites are checked, not
# installed (scripts/setup.sh installs them).
set -euo pipefail

# Engine groups. Stock engines that need a shape: ftree (fat trees), dor and torus-2QoS (tori and
# meshes; torus-2QoS gets a torus-2QoS.conf written from the generator's switch coordinates).
# updn/dnup find no root on a torus by themselves (they would need a root_guid_file).
ANY_STOCK="updn dnup minhop sssp dfsssp nue lash"
FAT_STOCK="ftree $ANY_STOCK"
TORUS_STOCK="dor torus-2QoS minhop sssp dfsssp nue lash"
OURS="sssp-rs dfsssp-rs"
ALL_ENGINES="ftree updn dnup nue lash dor torus-2QoS sssp dfsssp minhop $OURS"

# `families` mode: one fabric per line, SPEC then the engines to run on it.
FAMILIES=(
    "ktree:8,3 $FAT_STOCK $OURS"
    "fattree2:36,2:1 $FAT_STOCK $OURS"
    "torus:4x4x4,2 $TORUS_STOCK $OURS"
    "random:64,36,16,512,seed=1 $ANY_STOCK $OURS"
    "dragonfly:4,2,2,9 $ANY_STOCK $OURS"
    # chassis wiring: ports renumbered, GUIDs and LIDs in random order (generator option shuffle=S)
    "ktree:8,3,shuffle=1 $FAT_STOCK $OURS"
    # real cluster shapes: a director chassis (bundles of 2, 16-18 CAs per leaf) wired as
    # chassis are, a bundled 2-level tree with uneven leaves, a 3-level tree with uneven leaves,
    # a SHARP fabric (an aggregation node on every switch), a rail-optimized 65-port fabric
    "director:16,9,2,16-18,shuffle=1 $FAT_STOCK $OURS"
    "fattree2:36,2:1,bundle=2,uneven=14,shuffle=1 $FAT_STOCK $OURS"
    "fattree3:12,uneven=4,shuffle=1 $FAT_STOCK $OURS"
    "ktree:8,3,aggr,shuffle=1 $FAT_STOCK $OURS"
    "rail:2,4,2,8 $FAT_STOCK $OURS"
)

# `faults` mode: families at two sizes, SPEC then the engines (QoS on; those of QOS_OFF_ENGINES
# also with QoS off).
FAULT_FABRICS=(
    "ktree:12,3 minhop ftree updn dfsssp dfsssp-rs"
    "ktree:18,3 minhop ftree updn dfsssp dfsssp-rs"
    "random:128,32,16,300,seed=1 minhop updn dfsssp dfsssp-rs"
    "random:320,36,16,2560,seed=1 minhop updn dfsssp dfsssp-rs"
    "torus:4x4x4,2 minhop dfsssp dfsssp-rs"
    "torus:6x6x6,4 minhop dfsssp dfsssp-rs"
    "dragonfly:8,4,4,33 minhop updn dfsssp dfsssp-rs"
    "dragonfly:12,6,6,73 minhop updn dfsssp dfsssp-rs"
)
QOS_OFF_ENGINES="dfsssp dfsssp-rs"

# engines_for SPEC: the engines that apply to the fabric family of SPEC.
engines_for() {
    case "$1" in
        ktree:* | xgft:* | fattree2:* | fattree3:* | director:* | edgedirector:* | rail:*)
            echo "$FAT_STOCK $OURS" ;;
        torus:* | mesh:*) echo "$TORUS_STOCK $OURS" ;;
        *) echo "$ANY_STOCK $OURS" ;;
    esac
}

cd "$(dirname "$0")/.."
source scripts/ibsim-lib.sh
need_tools cargo
TARGET=$(realpath "${CARGO_TARGET_DIR:-target}")
PLUGIN_DIR="$TARGET/release"
BIN="$TARGET/release/dfsssp-rs"
PATTERNS=${PATTERNS:-100}
TIMEOUT=${TIMEOUT:-300}
IBDMCHK_TIMEOUT=${IBDMCHK_TIMEOUT:-300}

if [ "${1:-}" = one-lane ]; then
    cargo build --release --quiet
    for f in torus:6x6x6,4 random:128,32,16,300,seed=1; do
        QOS=0 "$0" "$f" nue dfsssp-rs
        l1=$("$BIN" eval --topo "$f" --no-qos --patterns "$PATTERNS" --json --quiet |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["bisection"]["lambda"])')
        l8=$("$BIN" eval --topo "$f" --lanes 8 --patterns "$PATTERNS" --json --quiet |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["bisection"]["lambda"])')
        python3 -c "print('dfsssp-rs in-process: one lane Λ %.4f, 8 lanes Λ %.4f: %.1f%%' % ($l1, $l8, 100 * $l1 / $l8))"
    done
    exit 0
fi

cargo build --release --quiet
if [ ! -x "$BIN" ] || [ ! -f "$PLUGIN_DIR/libdfsssp_rs.so" ]; then
    echo "no $BIN or $PLUGIN_DIR/libdfsssp_rs.so after the build" >&2
    exit 1
fi
case "${QOS:-1}" in
    0) QOS_MODES=(off) ;;
    1) QOS_MODES=(-Q) ;;
    both) QOS_MODES=(-Q off) ;;
    *) echo "QOS must be 0, 1 or both" >&2; exit 1 ;;
esac

WORK=$(mktemp -d /tmp/dfsssp-bench.XXXXXX)
OSM_PID=
IBSIM_PID=
RUN=0
trap 'stop_all; [ "${KEEP:-0}" = 1 ] && echo "work directories kept: $WORK" >&2 || rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
SUMMARIES=()

# torus_conf NET OUT: a torus-2QoS.conf for NET when its switches carry the generator's torus or
# mesh coordinates (comment "torus X,Y,Z" / "mesh X,Y"; at most 3 dimensions): size, and the seed
# links from the switch at the origin. Fails otherwise.
torus_conf() {
    python3 - "$1" "$2" <<'PY'
import re, sys
net, out = sys.argv[1], sys.argv[2]
sw, kind, guid, ports = {}, None, None, 0
for line in open(net):
    if line.startswith("switchguid="):
        guid = line.split("=", 1)[1].strip()
    m = re.match(r'Switch\s+(\d+)\s+"[^"]*"\s*#\s*"(torus|mesh) ([0-9,]+)"', line)
    if m:
        kind = m.group(2)
        sw[tuple(int(x) for x in m.group(3).split(","))] = guid
        ports = max(ports, int(m.group(1)))
if not sw or len(next(iter(sw))) > 3:
    sys.exit(1)
dims = len(next(iter(sw)))
radix = [max(c[d] for c in sw) + 1 for d in range(dims)] + [1] * (3 - dims)
origin = (0,) * dims
lines = ["%s %d %d %d" % (kind, *radix)]
for d in range(dims):
    if radix[d] < 2:
        continue
    step = lambda k: tuple(k if i == d else 0 for i in range(dims))
    lines.append("%sp_link %s %s" % ("xyz"[d], sw[origin], sw[step(1)]))
    if kind == "torus" and radix[d] > 2:
        lines.append("%sm_link %s %s" % ("xyz"[d], sw[origin], sw[step(radix[d] - 1)]))
lines.append("portgroup_max_ports %d" % max(16, ports + 1))
open(out, "w").write("\n".join(lines) + "\n")
PY
}

# fallback_reason LOG ENGINE: why ENGINE gave up, from its section of OpenSM's log (its last error
# line other than OpenSM's generic "cannot build ...", else its last info line).
fallback_reason() {
    awk -v e="$2" '
        /building routing with/ { inside = index($0, "'"'"'" e "'"'"'") > 0; next }
        inside && / 0x01 -> / && !/cannot build (lid matrices|fwd tables)/ { err = $0 }
        inside && / 0x02 -> / { info = $0 }
        END { r = err ? err : info; sub(/^.* 0x0[12] -> /, "", r); print r }
    ' "$1" | tr '\t' ' '
}

# run_engine NET DIR ENGINE QOS_MODE: one opensm --once in a fresh ibsim; the result as one line
# "ENGINE<TAB>STATUS<TAB>USED<TAB>PHASE<TAB>RSS_KB<TAB>LOG_LANES<TAB>REASON" in DIR/result and
# eval's JSON in DIR/eval.json.
run_engine() {
    local net=$1 dir=$2 e=$3 mode=$4 rc=0 status used phase rss lanes reason=""
    local args=("${CLASS_ARGS[@]}")
    [ "$mode" = -Q ] && args+=(-Q)
    mkdir -p "$dir"
    RUN=$((RUN + 1))
    export IBSIM_SOCKNAME="dfsssp-bench-$$-$RUN"
    OSM_CONF_EXTRA=""
    if [ "$e" = torus-2QoS ] && torus_conf "$net" "$dir/torus-2QoS.conf"; then
        OSM_CONF_EXTRA="torus_config $dir/torus-2QoS.conf"
    fi
    echo "== $e: fresh ibsim, opensm --once ${args[*]} (limit $TIMEOUT s)" >&2
    ibsim_start "$net" "$dir"
    OPENSM_TIMEOUT=$TIMEOUT opensm_run "$dir" "$e" "${args[@]}" || rc=$?
    ibsim_stop
    used=$(engine_used "$dir/osm.log" 2>/dev/null || true)
    phase=$(routing_phase "$dir/osm.log" 2>/dev/null || echo n/a)
    rss=$(tail -n 1 "$dir/rss_kb" 2>/dev/null || true)
    [[ "$rss" =~ ^[0-9]+$ ]] || rss=-
    if [ "$rc" = 124 ]; then
        status=timeout rss=- phase=n/a used=""
        local begun
        begun=$(grep -c 'building routing with' "$dir/osm.log" 2>/dev/null || true)
        reason="opensm stopped after $TIMEOUT s (${begun:-0} routing run(s) begun)"
    elif [ -n "$used" ]; then
        status=ok
        [ "$used" = "$e" ] || reason=$(fallback_reason "$dir/osm.log" "$e")
    else
        status=failed
        reason="opensm exit status $rc, no tables configured: $(grep -m1 ' 0x01 -> ' "$dir/osm.log" 2>/dev/null | sed 's/^.* 0x01 -> //' || true)"
    fi
    lanes=$(sed -n 's/.*layers used: \([0-9]*\) of.*/\1/p; s/.*Virtual Lanes needed: \([0-9]*\).*/\1/p; s/.* lash_core: Lanes needed: \([0-9]*\).*/\1/p' \
        "$dir/osm.log" 2>/dev/null | tail -n 1)
    local chk=-
    if [ "$status" = ok ] && [ "${JUDGE:-1}" = 1 ]; then
        "$BIN" eval --dumps "$dir" --patterns "$PATTERNS" "${EVAL_CLASS_ARGS[@]}" --json --quiet \
            >"$dir/eval.json" 2>"$dir/eval.err" || echo "eval failed: $dir/eval.err" >&2
        if [ "${IBDMCHK:-1}" = 1 ] && command -v ibdmchk >/dev/null; then
            local psl=() crc=0
            [ -f "$dir/opensm-path-sl.dump" ] && psl=(-c opensm-path-sl.dump)
            # ibdmchk may segfault while exiting, after its report: judge the report (the
            # subshell, not this shell, reports the crash: to /dev/null)
            (cd "$dir" && timeout -k 10 "$IBDMCHK_TIMEOUT" ibdmchk -s opensm-subnet.lst -f opensm.fdbs \
                -m opensm.mcfdbs "${psl[@]}" >ibdmchk.out 2>&1; exit $?) 2>/dev/null || crc=$?
            if grep -q "^-E- credit loops in routing" "$dir/ibdmchk.out"; then chk=loops
            elif grep -qi "no credit loops found" "$dir/ibdmchk.out"; then chk=no
            elif [ "$crc" = 124 ]; then chk=timeout
            else chk="?"; fi
        fi
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$e" "$status" "$used" "$phase" "$rss" "${lanes:--}" "$chk" "$reason" >"$dir/result"
}

# report TABLE_DIR LABEL TITLE ENGINE...: the table of the runs in TABLE_DIR/ENGINE, footnotes, and the
# summary line (last line of the output, also kept in TABLE_DIR/summary).
report() {
    python3 - "$@" <<'PY'
import json, os, sys
tdir, label, title, engines = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
classes = os.environ.get("CLASSES", "0") == "1"
OURS = {"sssp-rs", "dfsssp-rs"}
# stock engines with a path_sl callback (OpenSM 3.3.23/24 source): SLs of their own, not dumped
OWN_SLS = {"dfsssp", "lash", "torus-2QoS"}
rows, notes, FOOT = [], [], set()
for e in engines:
    f = open(os.path.join(tdir, e, "result")).read().rstrip("\n").split("\t")
    r = dict(zip(["engine", "status", "used", "phase", "rss", "loglanes", "ibdmchk", "reason"], f + [""] * 8))
    r["stock"] = e not in OURS
    r["self"] = r["status"] == "ok" and r["used"] == e
    r["ev"] = None
    try:
        r["ev"] = json.load(open(os.path.join(tdir, e, "eval.json")))
    except (OSError, ValueError):
        pass
    rows.append(r)

def lam(r):
    b = r["ev"] and r["ev"]["metrics"].get("bisection")
    return b["lambda"] if b else None

def phase(r):
    try:
        return float(r["phase"])
    except ValueError:
        return None

def lanes_loops(r):
    """(lanes, credit-loop verdict, whether the verdict holds for the real SLs)"""
    ev, used = r["ev"], r["used"]
    if not ev:
        return "-", "-", False
    dl = ev["deadlock"]
    bad = [l["lane"] for l in dl["lanes"] if not l["acyclic"]]
    verdict = "no" if dl["deadlock_free"] else "yes (lane %s)" % ",".join(map(str, bad)) if bad else "yes"
    if ev["source"].get("path_sl"):
        lanes = r["loglanes"] if used in OURS and r["loglanes"] != "-" else str(dl["lanes_used"])
        if dl.get("unknown_lane_paths"):
            # the dump lists CA sources only: eval leaves the paths switches without CAs send
            # out of the check (CA traffic through them is checked)
            FOOT.add("(*) opensm-path-sl.dump has no SLs for paths sent by switches without CAs; "
                     "eval checks every CA-sourced path (transit through those switches included).")
            return lanes, verdict + " (*)", True
        return lanes, verdict, True
    if used not in OWN_SLS and used != "dfsssp-rs":
        # no path_sl callback (sssp-rs neither), or nue with nue_max_num_vls 1: one SL
        return "1", verdict, True
    ll = (r["loglanes"] + " (log)") if r["loglanes"] != "-" else "? (no dump)"
    if dl["deadlock_free"]:
        return ll, "no (any SLs)", True
    return ll, "? (1 lane assumed: loop)", False

def ibdm(r):
    v = r["ibdmchk"]
    # ibdmchk assumes one SL without a path-SL file: its loops prove nothing for engines with SLs
    if v == "loops" and r["used"] in OWN_SLS:
        return "? (1 SL assumed: loops)"
    return v or "-"

base = [r for r in rows if r["stock"] and r["self"]]
fast = min((r for r in base if phase(r) is not None), key=phase, default=None)
best = max((r for r in base if lam(r) is not None), key=lam, default=None)
cols = ["engine", "routing [s]", "t/fastest", "RSS [MB]", "lanes", "Λ", "Λ/best", "EFI max",
        "hops", "minimal", "unreach", "credit loops (eval)", "CA-CA loops (ibdmchk)"]
if classes:
    cols += ["Λ compute", "Λ c->I/O"]
out = []
for r in rows:
    e = r["engine"]
    name = e if r["self"] else "%s->%s" % (e, r["used"]) if r["status"] == "ok" else "%s: %s" % (e, r["status"])
    p, l = phase(r), lam(r)
    lanes, loops, _ = lanes_loops(r)
    m = r["ev"]["metrics"] if r["ev"] else None
    if m:
        c = m["connectivity"]["ca_to_lid"]
        unreach = str(c["no_entry"] + c["dead_end"] + c["loops"])
        hops = "%.2f" % m["hops"]["average"]
        minimal = "%.1f%%" % (100 * m["hops"]["fraction_minimal"])
        efi = str(m["efi"]["max"])
    else:
        unreach = hops = minimal = efi = "-"
    row = [name, r["phase"] if r["status"] == "ok" else "-",
           "%.2f" % (p / phase(fast)) if p is not None and fast and phase(fast) > 0 else "-",
           str(int(r["rss"]) // 1024) if r["rss"].isdigit() else "-",
           lanes, "%.4f" % l if l is not None else "-",
           "%.3f" % (l / lam(best)) if l is not None and best and lam(best) > 0 else "-",
           efi, hops, minimal, unreach, loops, ibdm(r)]
    if classes:
        cl = (r["ev"] or {}).get("classes") or {}
        row += ["%.4f" % cl[k]["lambda"] if cl.get(k) else "-" for k in ("compute", "compute_to_io")]
    out.append(row)
    if r["reason"]:
        notes.append("%s: %s" % (name, r["reason"]))
w = [max(len(x) for x in col) for col in zip(cols, *out)]
print("\n" + title)
left = {0, cols.index("credit loops (eval)"), cols.index("CA-CA loops (ibdmchk)")}
for row in [cols] + out:
    print("  ".join(x.ljust(w[i]) if i in left else x.rjust(w[i]) for i, x in enumerate(row)).rstrip())
for n in notes + sorted(FOOT):
    print("  " + n)
print("  fastest stock: %s; best stock by Λ: %s" % (
    "%s %s s" % (fast["engine"], fast["phase"]) if fast else "none routed by itself",
    "%s %.4f" % (best["engine"], lam(best)) if best else "none"))
ours = next((r for r in rows if r["engine"] == "dfsssp-rs"), None)
loops_txt = lambda r: "credit loops: %s; CA-CA: %s" % (lanes_loops(r)[1], ibdm(r))
s = "summary %s: best stock by Λ: " % label
bf = None
if best:
    s += "%s %.4f (%s)" % (best["engine"], lam(best), loops_txt(best))
    # without credit loops by eval (all paths), or at least CA-to-CA by ibdmchk
    free = [r for r in base if lam(r) is not None
            and (lanes_loops(r)[1].startswith("no") or r["ibdmchk"] == "no")]
    bf = max(free, key=lam, default=None)
    if bf is not best:
        s += "; best stock without credit loops (eval, or CA-CA by ibdmchk): " + (
            "%s %.4f" % (bf["engine"], lam(bf)) if bf else "none")
else:
    s += "none"
if ours and lam(ours) is not None:
    s += "; dfsssp-rs %.4f (%s)" % (lam(ours), loops_txt(ours))
    if best and lam(best):
        s += ": %.3fx the best stock" % (lam(ours) / lam(best))
        if bf and bf is not best and lam(bf):
            s += ", %.3fx the best loop-free stock" % (lam(ours) / lam(bf))
elif ours:
    s += "; dfsssp-rs: " + (ours["status"] if ours["status"] != "ok" else "no Λ")
print(s)
open(os.path.join(tdir, "summary"), "w").write(s + "\n")
PY
}

# bench_fabric FABRIC ENGINE...: every engine on FABRIC, once per QoS mode; a table each.
bench_fabric() {
    local fabric=$1 fdir net mode e tdir title
    shift
    fdir="$WORK/$(echo "$fabric" | tr -c 'A-Za-z0-9.=\n-' '_')"
    mkdir -p "$fdir"
    if ! net=$(fabric_net "$fabric" "$fdir" "$BIN" 2>"$fdir/generate.err"); then
        echo "$fabric: not generated: $(tail -n 1 "$fdir/generate.err")" >&2
        SUMMARIES+=("summary $fabric: not generated ($(tail -n 1 "$fdir/generate.err"))")
        return 1
    fi
    cat "$fdir/generate.err" >&2
    CLASS_ARGS=()
    EVAL_CLASS_ARGS=()
    if [ "${CLASSES:-0}" = 1 ]; then
        # The CAs' port GUIDs (ibsim: node GUID + port number) in LID order, from the net file.
        python3 - "$net" "$fdir" <<'PY'
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
        CLASS_ARGS=(--cn_guid_file "$fdir/cn_guids" --io_guid_file "$fdir/io_guids")
        EVAL_CLASS_ARGS=(--cn-guids "$fdir/cn_guids" --io-guids "$fdir/io_guids")
        echo "classes: $(wc -l <"$fdir/cn_guids") compute, $(wc -l <"$fdir/io_guids") I/O nodes" >&2
    fi
    for mode in "${QOS_MODES[@]}"; do
        tdir="$fdir/qos${mode}"
        for e in "$@"; do
            run_engine "$net" "$tdir/$e" "$e" "$mode"
        done
        title="$fabric  ($(grep -c '^Switch' "$net") switches, $(grep -c -E '^(Ca|Hca)' "$net") CAs; QoS $([ "$mode" = -Q ] && echo "on (-Q)" || echo "off"); Λ over $PATTERNS patterns; load $(cut -d' ' -f1-3 /proc/loadavg))"
        report "$tdir" "$fabric, QoS $([ "$mode" = -Q ] && echo on || echo off)" "$title" "$@"
        SUMMARIES+=("$(cat "$tdir/summary")")
    done
}

legend() {
    cat <<'TXT'

t/fastest: routing phase / that of the fastest stock engine that routed by itself; Λ/best: Λ / the
best stock engine's (same set). hops: mean switch-to-switch hops of CA-to-CA routes; minimal:
share of them on a shortest path. unreach: CA-to-LID pairs that do not deliver (no entry, dead
end, forwarding loop). credit loops (eval): every lane's channel dependency graph over all
(switch, LID) paths, switch LIDs included; CA-CA loops (ibdmchk): CA-to-CA paths only, with the
path-SL dump where there is one. "? (1 lane assumed)": the engine's own SLs are not dumped, and
its routes in one lane have a cycle, which proves nothing for the real SLs.
TXT
}

# bench_lines FAULTS LINE...: each line's fabric (SPEC then engines) with each percentage of
# FAULTS of its cables missing; with FAULT_QOS_SPLIT=1 QoS on for every engine, then QoS off for
# those of QOS_OFF_ENGINES; then the legend and the summaries.
bench_lines() {
    local faults=$1 line cut spec e
    shift
    for line in "$@"; do
        read -r -a words <<<"$line"
        [[ "${words[0]}" =~ ${MATCH:-.} ]] || continue
        if [ -n "${ONLY:-}" ]; then
            local kept=("${words[0]}")
            for e in "${words[@]:1}"; do
                [[ " $ONLY " == *" $e "* ]] && kept+=("$e")
            done
            words=("${kept[@]}")
        fi
        for cut in $faults; do
            spec=${words[0]}
            [ "$cut" = 0 ] || spec="$spec,cut=$cut"
            if [ "${FAULT_QOS_SPLIT:-0}" = 1 ]; then
                QOS_MODES=(-Q)
                bench_fabric "$spec" "${words[@]:1}" || true
                off=()
                for e in "${words[@]:1}"; do
                    [[ " $QOS_OFF_ENGINES " == *" $e "* ]] && off+=("$e")
                done
                QOS_MODES=(off)
                bench_fabric "$spec" "${off[@]}" || true
            else
                bench_fabric "$spec" "${words[@]:1}" || true
            fi
        done
    done
    legend
    printf '\n'
    printf '%s\n' "${SUMMARIES[@]}"
}

case "${1:-}" in
    families) bench_lines "${FAULTS:-0}" "${FAMILIES[@]}"; exit 0 ;;
    faults) FAULT_QOS_SPLIT=1 bench_lines "${FAULTS:-0 1 5}" "${FAULT_FABRICS[@]}"; exit 0 ;;
esac

FABRIC=${1:-ktree:18,3}
shift || true
ENGINES=("$@")
if ((${#ENGINES[@]} == 0)); then
    read -r -a ENGINES <<<"$(engines_for "$FABRIC")"
elif [ "${ENGINES[*]}" = all ]; then
    read -r -a ENGINES <<<"$ALL_ENGINES"
fi
bench_fabric "$FABRIC" "${ENGINES[@]}"
legend
