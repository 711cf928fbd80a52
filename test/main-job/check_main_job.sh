#!/usr/bin/env bash
# The main-job test: runs the README's main job (scripts/run.sh) as a user
# would and fails when it fails. run.sh itself checks that every part it
# announces happened (the elastic job's loss, re-plan, re-admission and
# return to its first plan; each tool's exit status). Then the figures the
# docs quote from the main job's output -- fenced blocks marked
# `<!-- main-job-output: ... -->` in README.md and docs/ -- must match this
# run's lines, numbers aside (utils/main_job_excerpts.py), so a quote cannot
# describe an older program.
#
#   test/main-job/check_main_job.sh [BUILD_DIR]     (CTest runs it: label main-job)
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
log="$build/test/main-job.log"
mkdir -p "$(dirname "$log")"
start=$(date +%s)
if ! bash "$src/scripts/run.sh" > "$log" 2>&1; then
  tail -n 60 "$log"
  echo "main-job: FAILED: scripts/run.sh exited non-zero (whole output: $log)" >&2
  exit 1
fi
echo "main-job: scripts/run.sh finished in $(( $(date +%s) - start )) s ($(wc -l < "$log") lines in $log)"
"$src/.venv/bin/python" "$src/utils/main_job_excerpts.py" --log "$log" "$src/README.md" "$src"/docs/*.md
