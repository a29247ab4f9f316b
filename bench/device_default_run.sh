#!/usr/bin/env bash
# The default config on the lent 16-CPU machine, in one prepared run (issue 41).
#
# Two steps:
#   bench/device_default_run.sh prepare   here, with the registry: the wheels
#       the device's Python 3.12 lacks (snakemake and its deps, jsonschema,
#       fastjsonschema, pandas), pip-downloaded for manylinux_2_28_x86_64,
#       and a copy of multichase's source, into .venv/device-wheels (ignored
#       by git; name it in the run tool's carry)
#   bench/device_default_run.sh           there (no registry, results to $OUT):
#       installs the wheels with --no-index into a folder of its own, runs
#       `make run`'s default config with every CPU, prints the time by phase
#       (time_breakdown.py), then membench's idle latency at 1 GiB against
#       multichase (4k and THP, interleaved pairs: bench/compare_multichase.py
#       --strict, 0.97-1.03), and copies results/, the report and the logs
#       to $OUT.
# The lead's call: run(command="bash bench/device_default_run.sh",
#                      carry=[".venv/device-wheels"], timeout_s=600)
set -uo pipefail
cd "$(dirname "$0")/.."
WHEELS=.venv/device-wheels
CONFIG=${CONFIG:-config/config.yaml}

if [ "${1:-}" = prepare ]; then
  rm -rf "$WHEELS" && mkdir -p "$WHEELS"
  # every pin of the lock but the numeric stack the device's Python has
  # (numpy, scipy, matplotlib and theirs), the test tools and the installer; a package with
  # no wheel on PyPI (connection_pool) is built into one here (pure Python)
  skip='^(numpy|scipy|matplotlib|contourpy|fonttools|kiwisolver|cycler|pyparsing|pillow|black|pytest|snakefmt|iniconfig|pluggy|pygments|mypy_extensions|pathspec|greenlet|uv)=='
  grep -E '^[A-Za-z0-9_.-]+==' requirements.lock | grep -viE "$skip" | while read -r pin; do
    pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$WHEELS" "$pin" 2>/dev/null || pip wheel --quiet --no-deps -w "$WHEELS" "$pin" || echo "no wheel: $pin"
  done
  cp -r ../shared/ref/multichase "$WHEELS/multichase-src"
  du -sh "$WHEELS"; ls "$WHEELS" | wc -l
  exit 0
fi

# A from-scratch run deletes this tree's results/, logs/, bin/ and
# .snakemake/: only where the run tool set $OUT (the device's copy).
[ -n "${OUT:-}" ] || { echo "usage: on the device (OUT set), or: $0 prepare"; exit 2; }
mkdir -p "$OUT"
t0=$(date +%s)
DEPS=$(mktemp -d /tmp/membench-deps.XXXX)
python3 -m pip install --quiet --no-index --no-deps --target "$DEPS" "$WHEELS"/*.whl || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="$DEPS${PYTHONPATH:+:$PYTHONPATH}"
t1=$(date +%s)
echo "== $(nproc) CPUs, $(python3 --version), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "== uptime before: $(uptime)"
python3 workflow/scripts/study_estimate.py --configfile "$CONFIG" --cores all
rm -rf results logs bin .snakemake
python3 -m snakemake --cores all --configfile "$CONFIG" > "$OUT/snakemake.log" 2>&1
rc=$?
t2=$(date +%s)
tail -5 "$OUT/snakemake.log"
python3 workflow/scripts/time_breakdown.py --install-seconds $((t1 - t0))
echo "== default config: exit $rc, install $((t1 - t0)) s, Snakemake $((t2 - t1)) s, in all $((t2 - t0)) s"
echo "== uptime after: $(uptime)"
# the chase repetitions: where each sweep stopped and why (sweep_end)
python3 - <<'EOF'
import glob, json
for path in sorted(glob.glob("results/*/runs/latency/*/*/r*.jsonl")):
    recs = [json.loads(line) for line in open(path)]
    rnd = [r for r in recs if r.get("op") == "random" and r.get("status") == "ok"]
    if rnd:
        t = max(r["t_end"] for r in recs) - min(r["t_start"] for r in recs)
        last = rnd[-1]
        print(f"{path.split('/runs/')[1]}: {len(rnd)} random points to {last['size_bytes'] / 2**20:.0f} MiB "
              f"({last.get('sweep_end')}), {last['ns_per_load']:.1f} ns there; repetition {t:.1f} s")
EOF
cp -r results "$OUT/" 2>/dev/null; cp -r logs "$OUT/" 2>/dev/null
timeout 300 python3 bench/compare_multichase.py --strict --multichase-src "$WHEELS/multichase-src" --pairs 5 \
  > "$OUT/compare_multichase.txt" 2>&1
echo "== compare_multichase exit $?"; tail -12 "$OUT/compare_multichase.txt"
echo "== wall: $(( $(date +%s) - t0 )) s"
exit $rc
