#!/bin/bash
# The script of the 2026-12-04 H200 run, as it ran from the repository root (then at .device/run.sh, with this
# folder's configs.txt at .device/configs.txt and the dependencies' wheels in .whl/). One device call: environment, the GPU's own figures, every probe in configs.txt, the Transformers check.
# DRY=1 runs the same steps on this machine's CPU with tiny shapes.
set -u
export PYTHONUNBUFFERED=1 GPUKB_CACHE_DIR=/tmp/gpukb-cache-device
OUT=${OUT:-/tmp/device-out}; mkdir -p "$OUT"; W=/tmp/probe-work; rm -rf "$W"; mkdir -p "$W"
LOG="$OUT/log.txt"; exec > >(tee -a "$LOG") 2>&1
date -u; T0=$(date +%s)
if [ "${DRY:-0}" = 1 ]; then PY=${PY:-python}; FLAGS="--device cpu --tiny --steps 1"; HFFLAGS="--tiny --steps 1"
else
  PY=python3; FLAGS="--device cuda --steps 4 --force"; HFFLAGS="--steps 4"
  nvidia-smi > "$OUT/smi.txt" 2>&1
  nvidia-smi --query-gpu=name,memory.total,memory.reserved,memory.used,driver_version,vbios_version,ecc.mode.current,power.limit --format=csv >> "$OUT/smi.txt" 2>&1
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
  $PY -c "import sysconfig, os; p = sysconfig.get_paths()['include']; print('Python.h', p, os.path.exists(p + '/Python.h'))"
  if ! $PY -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target /tmp/site .whl/durable_rules-*.tar.gz; then
    echo "durable-rules did not build: the fallback measures the same plans without gpukb"
    $PY .device/measure.py > "$OUT/measured.jsonl"; echo "exit $? at $(( $(date +%s) - T0 )) s"
    PYTHONPATH=/tmp/site:$PWD/src timeout 200 $PY benchmarks/probe_vs_transformers.py --steps 4 > "$OUT/hf.jsonl" 2>> "$LOG"
    exit 0
  fi
  export PYTHONPATH=/tmp/site:$PWD/src
  echo "setup done in $(( $(date +%s) - T0 )) s"
fi
$PY - <<'PY' >> "$OUT/smi.txt" 2>&1
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
for name in ("transformers", "peft", "pydantic", "durable"):
    try:
        m = __import__(name); print(name, getattr(m, "__version__", "?"))
    except Exception as e: print(name, "missing", e)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info(0)
    print("device", p.name, "total_memory", p.total_memory, "mem_get_info", free, total, "sms", p.multi_processor_count)
PY
while read -r line; do
  [ -z "$line" ] && continue
  echo "=== gpukb probe $line"
  timeout 150 $PY -m gpukb.cli.main probe $line $FLAGS --out "$W"; echo "exit $?  at $(( $(date +%s) - T0 )) s"
done < .device/configs.txt
echo "=== transformers check"
timeout 200 $PY benchmarks/probe_vs_transformers.py $HFFLAGS > "$OUT/hf.jsonl"; echo "exit $?  at $(( $(date +%s) - T0 )) s"
tar -czf "$OUT/probe.tgz" -C "$W" kb
echo "done in $(( $(date +%s) - T0 )) s"
