#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (lit suite, unit tests,
# hetccl tests) through CTest. This is the README's test command and what CI
# runs; it ends with CTest's summary.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/scripts/setup.sh"
bash "$here/scripts/build.sh"
cd "$here"
# One test at a time by default: hetccl tests start many ranks each, and on
# 2 cores parallel tests only add timing noise (lit runs its files in parallel).
ctest --test-dir build --output-on-failure -j "${HET_TEST_JOBS:-1}" "$@"
