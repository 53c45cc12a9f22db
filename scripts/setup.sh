#!/usr/bin/env bash
# Installs what dfsssp-rs needs on a Debian (bookworm) machine: the OpenSM stack from Debian's
# packages and a Rust toolchain. Safe to run again; it only installs what is missing.
set -euo pipefail

PACKAGES=(opensm libopensm-dev libibumad-dev ibsim-utils libumad2sim0 infiniband-diags ibutils
          libclang-dev clang pkg-config)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: installing a Rust toolchain with rustup" >&2
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >&2
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
