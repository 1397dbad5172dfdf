#!/usr/bin/env bash
# Draws the micro-benchmark results (wheel_bench / delayq-micro, Google Benchmark JSON) as ns per
# operation against the number of pending entries: one panel per operation, one line per
# structure (wheel, priority_queue, asio), both axes logarithmic.
#
#   bench/plot_micro.sh results.json micro.png
#
# Produce the JSON with:  delayq-micro --benchmark_out=results.json --benchmark_out_format=json
# With --benchmark_repetitions the median aggregate is plotted (or the median of the repetitions
# when only those were written). Needs python3 (standard library only) and gnuplot.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 JSON_IN PNG_OUT" >&2
  exit 2
fi
json_in=$1
png_out=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -r $json_in ]] || { echo "$0: cannot read $json_in" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One data file per operation found: N, then ns/op for wheel, heap, asio, and asio's user-CPU
# ns/op (hold only; "NaN" where a value is missing); panels.gp names the operations and the
# columns that have data; caption.txt is a line from the run's context.
python3 - "$json_in" "$work" <<'PY'
import json, os, statistics, sys
from collections import defaultdict

src, out = sys.argv[1], sys.argv[2]
with open(src) as f:
    doc = json.load(f)

ops = ["schedule_5s", "schedule_spread", "cancel", "expire_5s", "expire_spread", "hold"]
structs = ["wheel", "heap", "asio"]
# (op, struct, n) -> {"aggregate": value or None, "runs": [values]} per counter
vals = defaultdict(lambda: {"median": {}, "runs": defaultdict(list)})

for b in doc.get("benchmarks", []):
    parts = b.get("run_name", b["name"]).split("/")
    if len(parts) < 3 or parts[0] not in ops or parts[1] not in structs:
        continue
    try:
        n = int(parts[2])
    except ValueError:
        continue
    if b.get("error_occurred"):
        continue
    key = (parts[0], parts[1], n)
    counters = {c: b[c] for c in ("ns_per_op", "user_ns_per_op") if c in b}
    if b.get("run_type") == "aggregate":
        if b.get("aggregate_name") == "median":
            vals[key]["median"].update(counters)
    else:
        for c, v in counters.items():
            vals[key]["runs"][c].append(v)

def value(key, counter):
    entry = vals.get(key)
    if entry is None:
        return None
    if counter in entry["median"]:
        return entry["median"][counter]
    runs = entry["runs"].get(counter)
    return statistics.median(runs) if runs else None

fmt = lambda v: "NaN" if v is None else "%.6g" % v
panels = []  # (op, data columns that hold at least one value)
for op in ops:
    ns = sorted({k[2] for k in vals if k[0] == op})
    rows = []
    for n in ns:
        row = [value((op, s, n), "ns_per_op") for s in structs]
        row.append(value((op, "asio", n), "user_ns_per_op") if op == "hold" else None)
        rows.append((n, row))
    cols = [str(i + 2) for i in range(4) if any(r[i] is not None for _, r in rows)]
    if not cols:
        continue
    panels.append((op, cols))
    with open(os.path.join(out, op + ".dat"), "w") as f:
        f.write("# N wheel heap asio asio_user\n")
        for n, row in rows:
            f.write("%d %s\n" % (n, " ".join(fmt(v) for v in row)))
with open(os.path.join(out, "panels.gp"), "w") as f:
    f.write('ops = "%s"\n' % " ".join(op for op, _ in panels))
    for op, cols in panels:
        f.write('cols_%s = "%s"\n' % (op, " ".join(cols)))

ctx = doc.get("context", {})
caption = "%s, %s x %s MHz, %s" % (
    ctx.get("host_name", "?"), ctx.get("num_cpus", "?"), ctx.get("mhz_per_cpu", "?"),
    ctx.get("date", "?"))
with open(os.path.join(out, "caption.txt"), "w") as f:
    f.write(caption.replace('"', "'"))
if not panels:
    sys.exit("no wheel/heap/asio results in " + src)
PY

gnuplot -e "datadir='$work'; outfile='$png_out'; caption='$(cat "$work/caption.txt")'" \
  "$here/plot_micro.gp"
echo "wrote $png_out"
