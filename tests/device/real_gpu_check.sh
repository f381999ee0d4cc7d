#!/usr/bin/env bash
# The real-NVML check, as one short prepared script for a machine with an
# NVIDIA GPU (the `device` tool, when a task is lent one). Nothing here needs
# the network: the prolog path needs only pynvml (no config file -> no yaml;
# the prolog's log writer needs no structlog).
#
#   bash tests/device/real_gpu_check.sh            # writes into $OUT (default /tmp/gcm-device)
#
# It records: the raw NVML snapshot through the production adapter, the
# prolog's JSON verdict (--dry-run: no Slurm action), the health suite, and
# 10 whole-process prolog timings. Put what it printed in the issue's note.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gcm-device}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}

echo "== nvidia-smi -L"; timeout 20 nvidia-smi -L 2>&1 | tee "$OUT/nvidia-smi-L.txt"
echo "== NVML snapshot (gcm_checks.gather.nvml over real pynvml)"
timeout 60 "$PY" - <<'PYEOF' 2>&1 | tee "$OUT/nvml-snapshot.json"
import dataclasses, json
from gcm_checks.gather import nvml
facts = nvml.gather(nvml.load_pynvml, 5.0, 30.0, 15.0)
print(json.dumps(dataclasses.asdict(facts), indent=1, default=str))
PYEOF
echo "== gcm-checks prolog --json --dry-run"
timeout 60 "$PY" -m gcm_checks prolog --json --dry-run > "$OUT/prolog.json" 2> "$OUT/prolog.stderr"
echo "exit $?" | tee -a "$OUT/prolog.stderr"; cat "$OUT/prolog.json"; cat "$OUT/prolog.stderr"
echo "== gcm-checks check --tag health --json"
timeout 120 "$PY" -m gcm_checks check --tag health --json > "$OUT/health.json" 2> "$OUT/health.stderr"
echo "exit $?"; head -c 4000 "$OUT/health.json"
echo "== prolog wall time, 10 runs"
for i in $(seq 10); do
    s=$(date +%s%N); "$PY" -m gcm_checks prolog > /dev/null 2>&1; e=$(date +%s%N)
    echo $(( (e - s) / 1000000 ))
done | tee "$OUT/prolog-ms.txt" | sort -n | awk '{a[NR]=$1} END {print "median ms:", a[int((NR+1)/2)]}'
