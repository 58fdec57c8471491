#!/bin/sh
# Freeze the engine at a commit for benchmarking while others keep editing the working tree:
#   sh bench/snapshot_engine.sh [REV] [DIR]      (defaults: HEAD, /tmp/bench-engine-<short rev>)
# then: python bench/run.py --engine-root DIR ...   (DIR/.engine-commit records the commit)
set -eu
rev=$(git -C "$(dirname "$0")/.." rev-parse "${1:-HEAD}")
dir=${2:-/tmp/bench-engine-$(echo "$rev" | cut -c1-7)}
mkdir -p "$dir"
rm -rf "$dir/engine"
git -C "$(dirname "$0")/.." archive "$rev" engine | tar -x -C "$dir"
echo "$rev" > "$dir/.engine-commit"
echo "$dir"
