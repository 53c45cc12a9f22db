#!/usr/bin/env bash
# Proves a change kept the routing: builds the CLI of git revision REV (in a temporary worktree,
# cached under target/same-routes/) and the CLI of the working tree, routes the same fabrics with
# both, and compares byte for byte the LFTs, the path-SL files, the engine's route statistics, and
# the measured quality (`eval`: connectivity, hops, EFI, link load, Λ, lanes, deadlock check,
# DFSSSP layers needed; timings left out). Exit 0 when everything is identical.
#   benches/same-routes.sh REV [quick]     (quick: the small fabrics only)
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:?usage: benches/same-routes.sh REV [quick]}
QUICK=${2:-}
source scripts/ibsim-lib.sh
need_commands cargo git python3

# The temporary worktree and the outputs go however the script ends.
wt=
out=$(mktemp -d)
cleanup() {
    [ -z "$wt" ] || git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
    rm -rf "$out"
}
trap cleanup EXIT

sha=$(git rev-parse --verify "$REV^{commit}")
cache=${SAME_ROUTES_CACHE:-$PWD/target/same-routes}
base_bin=$cache/bin-$sha
if [ ! -x "$base_bin" ]; then
    wt=$cache/worktree-$sha
    rm -rf "$wt"
    git worktree prune
    git worktree add --detach "$wt" "$sha" >/dev/null
    (cd "$wt" && CARGO_TARGET_DIR=$cache/target cargo build --release --quiet --bin dfsssp-rs)
    cp "$cache/target/release/dfsssp-rs" "$base_bin"
    git worktree remove --force "$wt"
    wt=
fi
cargo build --release --quiet --bin dfsssp-rs
new_bin=$PWD/target/release/dfsssp-rs

CASES=(
    "torus:6x6x6,4" "torus:6x6x6,4 --no-qos" "torus:6x6x6,4 --lanes 2"
    "torus:4x4x4,2" "torus:4x4x4,2 --no-qos" "torus:4x4x4,2 --lanes 2"
    "random:128,32,16,300" "random:128,32,16,300 --no-qos" "random:128,32,16,300 --lanes 2"
    "ktree:4,3" "ktree:4,3 --no-qos" "ktree:10,3" "ktree:10,3 --no-qos"
    "fattree2:12" "fattree2:12 --no-qos"
    "ktree:4,3,lmc=1" "random:32,16,4,64,lmc=2" "torus:4x4x4,2,lmc=1 --no-qos"
    "dragonfly:4,2,2,9" "hypercube:5,2 --lanes 2"
    "torus:4x4x4,2 --engine sssp-rs" "ktree:4,3,lmc=1 --engine sssp-rs"
    "ktree:8,3,shuffle=1" "director:16,9,2,16-18,shuffle=1 --no-qos"
    "fattree2:36,2:1,bundle=2,uneven=14,shuffle=1" "fattree3:12,uneven=4,shuffle=1 --no-qos"
    "ktree:8,3,aggr,shuffle=1" "ktree:8,3,aggr,shuffle=1 --no-qos"
)
[ -n "$QUICK" ] || CASES+=("ktree:18,3" "ktree:18,3 --no-qos")

# Quality without timings: what `eval --json` measured, minus anything that is a duration.
strip='import json, sys
d = json.load(sys.stdin)
def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()
                if not any(t in k for t in ("time", "seconds", "secs", "nanos", "log"))}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x
keep = {k: d.get(k) for k in ("fabric", "metrics", "deadlock", "dfsssp_layers", "forwarding_loops")}
print(json.dumps(clean(keep), indent=1, sort_keys=True))'

differ=0
for case in "${CASES[@]}"; do
    read -r spec rest <<<"$case"
    # shellcheck disable=SC2086
    for side in base new; do
        bin=$base_bin
        [ $side = new ] && bin=$new_bin
        d=$out/$side
        mkdir -p "$d"
        "$bin" route --topo "$spec" $rest --lfts-out "$d/lfts" --path-sl-out "$d/path-sl" 2>"$d/log"
        # Line order is not part of the table (ibdmchk reads it as a set): compare it sorted.
        LC_ALL=C sort -o "$d/path-sl" "$d/path-sl"
        grep -Ev ' in [0-9.]+ ?m?s|[0-9.]+ ?m?s\b' "$d/log" >"$d/stats" || true
        "$bin" eval --topo "$spec" $rest --patterns 100 --dfsssp-layers --json --quiet \
            | python3 -c "$strip" >"$d/eval"
    done
    bad=()
    for f in lfts path-sl stats eval; do
        cmp -s "$out/base/$f" "$out/new/$f" || bad+=("$f")
    done
    if ((${#bad[@]})); then
        differ=1
        printf '%-40s DIFFERS: %s\n' "$case" "${bad[*]}"
        diff "$out/base/eval" "$out/new/eval" | head -20 || true
    else
        printf '%-40s identical (%s LFT lines, Λ %s)\n' "$case" "$(wc -l <"$out/new/lfts")" \
            "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["bisection"]["lambda"])' "$out/new/eval" 2>/dev/null || echo -)"
    fi
done
exit $differ
