#!/bin/sh
# A "rank" that writes what is not a metrics line to het-run's metrics pipe:
# a number where a string belongs, a line that is not JSON, a step that is
# not a number, a rank this het-run does not have. het-run ignores them all.
printf '{"rank":0}\nnot json\n{"rank":"0","step":"x"}\n{"rank":"7","step":1}\n[1,2]\n' >&"$HET_METRICS_FD"
printf '{"rank":"0","group":"g","kind":"k","stage":"s0","replica":"0","part":"0","step":3,"step_seconds":0.5,"samples":8,"global_batch":"8","loss":1.5}\n' >&"$HET_METRICS_FD"
sleep 0.3
