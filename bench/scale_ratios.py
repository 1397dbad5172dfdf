#!/usr/bin/env python3
"""Prints every ratio of issue 13 ("Speed at scale") from a scale.jsonl of bench/run.sh, one block
per round, each figure against the classic heap scheduler (--backend heap) of the same round, and
each target met or missed. With --redis, the issue's Redis targets from the W1 lines that
`ONLY=i13 bench/redis.sh` printed (bench/run.sh keeps them in scale-redis.jsonl).

Usage: bench/scale_ratios.py OUT_DIR/scale.jsonl
       bench/scale_ratios.py --redis OUT_DIR/scale-redis.jsonl
"""
import json
import sys


def peer_of(r):
    peer = {"heap": "heap", "asio-steady-timer": "asio"}.get(r["peer"], "delayq")
    if peer == "delayq" and r.get("params", {}).get("expected_jobs", 0) > 0:
        return "delayq-expected"  # EngineOptions::expected_jobs set
    return peer


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
    for peer in ("asio", "delayq", "delayq-expected"):
        r = runs.get((workload, jobs, peer))
        if not r:
            continue
        ratio = r[key] / heap[key]
        name = "TimerService" if peer == "delayq" and workload == "W2" else peer
        if peer == "delayq-expected":
            name = f"delayq, expected_jobs {r['params']['expected_jobs']}"
        print(f"    {name}: {r[key] / 1e6:.2f} M {unit} = {ratio:.2f}x heap, "
              f"{detail(workload, r)}{targets(workload, r, ratio) if peer != 'asio' else ''}")


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


def redis(path):
    """Issue 13's Redis targets, a line per W1 run: p99 <= 10 ms and every job received."""
    print("redis (4 consumers, consume()'s batching)")
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("peer") != "delayq-redis" or r.get("workload") != "W1":
            continue
        p, lat = r["params"], r["lateness_ms"]
        how = (f"push_batch of {p['batch']}" if p["batch"] else
               f"one push() a job from {p['producers']} producers")
        ok = (lat["p99"] <= 10 and lat["min"] >= 0 and r["received"] == r["jobs"]
              and r.get("duplicates", 0) == 0)
        print(f"  W1 {r['jobs']}, {how}: {r['push_per_s']:.0f} pushes/s, p99 {lat['p99']:.2f} ms, "
              f"min {lat['min']:.3f} ms, received {r['received']}  "
              f"[p99 <= 10 ms, none early, all received once: {verdict(ok)}]")


if __name__ == "__main__":
    if sys.argv[1] == "--redis":
        redis(sys.argv[2])
    else:
        main(sys.argv[1])
