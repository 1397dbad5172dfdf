#!/usr/bin/env python3
"""Renders the store section's tables of docs/benchmarks.md from a store.jsonl of bench/run.sh.

Each delayq W1 line is set beside the raw RocksDB line of the same sync mode, producers,
consumers and push batch that precedes it in the file (the same script run), as a ratio of push
rates.
Usage: bench/store_table.py OUT_DIR/store.jsonl
"""
import json
import sys


def fmt(v):
    return f"{v:,.0f}".replace(",", " ")


def main(path):
    raw = {}
    w1, rec = [], []
    for line in open(path):
        r = json.loads(line)
        p = r.get("params", {})
        if r["workload"] == "W1-writes":
            raw[(p["sync"], p["producers"], p["consumers"], p.get("batch", 0))] = r
        elif r["workload"] == "W1":
            w1.append((r, raw.get((p["sync"], p["producers"], p["consumers"], p["batch"]))))
        elif r["workload"] == "recovery":
            rec.append(r)
    print("| sync | producers | consumers | push_batch | raw RocksDB jobs pushed/s | delayq pushes/s"
          " | ratio | delayq lateness p50 / p99 / min (ms) | received |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r, b in w1:
        p = r["params"]
        lat = r["lateness_ms"]
        ratio = f"{r['push_per_s'] / b['push_per_s']:.2f}" if b else "-"
        print(f"| {p['sync']} | {p['producers']} | {p['consumers']} | {p['batch'] or '-'} | "
              f"{fmt(b['push_per_s']) if b else '-'} | {fmt(r['push_per_s'])} | {ratio} | "
              f"{lat['p50']:.2f} / {lat['p99']:.2f} / {lat['min']:.3f} | "
              f"{r['received']} of {r['jobs']} |")
    print()
    print("| pending jobs | after | reopen (s) | resident memory (MiB) | recovered |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for r in rec:
        print(f"| {fmt(r['jobs'])} | {r['after']} | {r['open_s']:.2f} | {r['rss_mib']:.0f} | "
              f"{fmt(r['recovered'])} |")


if __name__ == "__main__":
    main(sys.argv[1])
