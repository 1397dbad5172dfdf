#!/usr/bin/env python3
"""Prints every ratio of issue 13 ("Speed at scale") from a scale.jsonl of bench/run.sh, one block
per round, each figure against the classic heap scheduler (--backend heap) of the same round, and
each target met or missed.

Usage: bench/scale_ratios.py OUT_DIR/scale.jsonl
"""
import json
import sys


def peer_of(r):
    return {"heap": "heap", "asio-steady-timer": "asio"}.get(r["peer"], "delayq")


def verdict(ok):
    return "met" if ok else "MISSED"


# Per workload: the rate compared with the heap's, its unit, and what else a line shows.
RATE = {"W1": ("push_per_s", "pushes/s"), "W2": ("schedule_per_s", "schedules/s")}


def detail(workload, r):
    lat = r["lateness_ms"]
    if workload == "W1":
        return f"p99 {lat['p99']:.3f} ms, min {lat['min']:.4f} ms, received {r['received']}"
    return f"{r['cancel_per_s'] / 1e6:.1f} M cancels/s, lateness p99 {lat['p99']:.3f} ms"


def targets(workload, r, ratio):
    """The issue's targets for delayq's line, or "" where it sets none."""
    if workload == "W2":
        return (f"  [schedules >= 1.5x heap: {verdict(ratio >= 1.5)}; "
                f"cancels >= 10 M/s: {verdict(r['cancel_per_s'] >= 10e6)}]")
    if r["jobs"] < 1000000:
        return ""
    lat = r["lateness_ms"]
    ok = ratio >= 0.5 and lat["p99"] <= 1 and lat["min"] >= 0 and r["received"] == r["jobs"]
    return f"  [>= 0.5x heap, p99 <= 1 ms, min >= 0, all received: {verdict(ok)}]"


def block(runs, workload, jobs):
    heap = runs.get((workload, jobs, "heap"))
    if not heap:
        return
    key, unit = RATE[workload]
    print(f"  {workload} {jobs}: heap {heap[key] / 1e6:.2f} M {unit}, {detail(workload, heap)}")
    for peer in ("asio", "delayq"):
        r = runs.get((workload, jobs, peer))
        if not r:
            continue
        ratio = r[key] / heap[key]
        name = "TimerService" if peer == "delayq" and workload == "W2" else peer
        print(f"    {name}: {r[key] / 1e6:.2f} M {unit} = {ratio:.2f}x heap, "
              f"{detail(workload, r)}{targets(workload, r, ratio) if peer == 'delayq' else ''}")


def main(path):
    rounds = {}
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        rounds.setdefault(r.get("round", 1), {})[(r["workload"], r["jobs"], peer_of(r))] = r
    for n, runs in sorted(rounds.items()):
        print(f"round {n}")
        for workload, jobs in sorted({k[:2] for k in runs}):
            block(runs, workload, jobs)


if __name__ == "__main__":
    main(sys.argv[1])
