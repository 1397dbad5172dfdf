#!/usr/bin/env python3
"""The table of bench/before_after.sh: for each workload (and, for recovery, each reopen), the
median over the rounds of each build, and after/before.

W1 lines: pushes per second (higher is better) and lateness p99 (lower is better), and on Redis
the servers' µs per delivered job (and per script with --server-profile 1; lower is better);
recovery lines: reopen seconds (lower is better).
Usage: bench/before_after.py OUT/runs.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(lambda: defaultdict(list))  # (args, what) -> build -> values
    order = []
    for line in open(path):
        r = json.loads(line)
        if r["workload"] == "recovery":
            metrics = {f"reopen after {r['after']} (s)": r["open_s"]}
        elif "push_per_s" in r:
            metrics = {"pushes/s": r["push_per_s"], "lateness p99 (ms)": r["lateness_ms"]["p99"]}
            # Redis runs: the servers' µs per delivered job, and per script when profiled.
            if "server" in r:
                metrics["server µs per job"] = r["server"]["usec_per_job"]
                if "cpu_usec_per_job" in r["server"]:
                    metrics["server CPU µs per job"] = r["server"]["cpu_usec_per_job"]
                for name, c in sorted(r["server"].get("by_script", {}).items()):
                    metrics[f"{name}: µs per call"] = c["usec_per_call"]
                    metrics[f"{name}: µs per job"] = c["usec_per_job"]
        else:
            continue
        for what, v in metrics.items():
            key = (r["args"], what)
            if key not in runs:
                order.append(key)
            runs[key][r["build"]].append(v)
    print("| workload | measure | before (median) | after (median) | after / before | runs |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for key in order:
        b, a = runs[key]["before"], runs[key]["after"]
        if not b or not a:
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        ratio = f"{ma / mb:.2f}" if mb else "-"
        print(f"| `{key[0]}` | {key[1]} | {mb:,.3g} | {ma:,.3g} | {ratio} | {len(b)} + {len(a)} |")


if __name__ == "__main__":
    main(sys.argv[1])
