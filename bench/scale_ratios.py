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


def w1_block(runs, jobs):
    heap = runs.get(("W1", jobs, "heap"))
    if not heap:
        return
    print(f"  W1 {jobs} jobs: heap {heap['push_per_s'] / 1e6:.2f} M pushes/s, "
          f"p99 {heap['lateness_ms']['p99']:.3f} ms")
    for peer in ("asio", "delayq"):
        r = runs.get(("W1", jobs, peer))
        if not r:
            continue
        lat = r["lateness_ms"]
        ratio = r["push_per_s"] / heap["push_per_s"]
        line = (f"    {peer}: {r['push_per_s'] / 1e6:.2f} M pushes/s = {ratio:.2f}x heap, "
                f"p99 {lat['p99']:.3f} ms, min {lat['min']:.4f} ms, received {r['received']}")
        if peer == "delayq" and jobs >= 1000000:
            ok = ratio >= 0.5 and lat["p99"] <= 1 and lat["min"] >= 0 and r["received"] == jobs
            line += f"  [target >= 0.5x, p99 <= 1 ms, min >= 0, all received: {verdict(ok)}]"
        print(line)


def w2_block(runs, jobs):
    heap = runs.get(("W2", jobs, "heap"))
    if not heap:
        return
    print(f"  W2 {jobs} timers: heap {heap['schedule_per_s'] / 1e6:.2f} M schedules/s, "
          f"{heap['cancel_per_s'] / 1e6:.1f} M cancels/s")
    for peer in ("asio", "delayq"):
        r = runs.get(("W2", jobs, peer))
        if not r:
            continue
        ratio = r["schedule_per_s"] / heap["schedule_per_s"]
        line = (f"    {'TimerService' if peer == 'delayq' else peer}: "
                f"{r['schedule_per_s'] / 1e6:.2f} M schedules/s = {ratio:.2f}x heap, "
                f"{r['cancel_per_s'] / 1e6:.1f} M cancels/s, "
                f"lateness p99 {r['lateness_ms']['p99']:.3f} ms")
        if peer == "delayq":
            line += (f"  [schedules >= 1.5x heap: {verdict(ratio >= 1.5)}; "
                     f"cancels >= 10 M/s: {verdict(r['cancel_per_s'] >= 10e6)}]")
        print(line)


def main(path):
    rounds = {}
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        rounds.setdefault(r.get("round", 1), {})[(r["workload"], r["jobs"], peer_of(r))] = r
    for n, runs in sorted(rounds.items()):
        print(f"round {n}")
        for jobs in sorted({k[1] for k in runs if k[0] == "W1"}):
            w1_block(runs, jobs)
        for jobs in sorted({k[1] for k in runs if k[0] == "W2"}):
            w2_block(runs, jobs)


if __name__ == "__main__":
    main(sys.argv[1])
