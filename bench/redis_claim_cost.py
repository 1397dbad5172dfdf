#!/usr/bin/env python3
"""What a claim of default-priority jobs costs the Redis server, in two versions of the function
library side by side: the commands each runs (INFO commandstats) and its server time per call.

    bench/redis_claim_cost.py OLD_REV [NEW_REV] [--jobs N] [--rounds R]

NEW_REV defaults to the work tree. Both libraries (src/redis/lua/*.lua of each revision, put
together as src/redis/scripts.cc does) are loaded into one private redis-server (a unix socket in
a temporary directory, no persistence); each round pushes N ready jobs of one topic through each
library's `push` and claims them through its `claim`: one per call, 32 per call, and one per call
after a catch-up of jobs that came due; then acks the jobs claimed one per call, one per call
(the "ack" case measures only the acks). Prints, per version and case, the commands run and the
fcall microseconds per call (median over the rounds, runs alternating). Both revisions must
take push's arguments up to the ttr alike; a priority argument is added for libraries with five
keys per topic (issue 22 on), and the limits and flow keys for libraries with ten shard keys
(topic limits, issue 22), whose helper files (flow.lua, take.lua) follow the prelude.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["push", "claim", "ack", "nack", "dead_letter", "touch", "cancel", "get", "reschedule",
         "requeue_dead", "list_dead", "requeue_dead_topic", "purge_dead", "topic_stats",
         "push_many", "ack_claim", "release", "pause", "ack_many", "set_limits", "flow_stats"]
HELPERS = ["flow", "take"]


def lua(rev, name):
    """The file's text in that revision, or None when it has no such file."""
    if rev is None:
        path = os.path.join(ROOT, "src/redis/lua", name + ".lua")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read()
    r = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:src/redis/lua/{name}.lua"],
                       capture_output=True)
    return r.stdout.decode() if r.returncode == 0 else None


def library(rev, tag):
    files = [lua(rev, n) for n in ["prelude"] + HELPERS + NAMES]
    code = "\n".join(f for f in files if f is not None)
    return f"#!lua name=lib_{tag}\nlocal TAG = '{tag}_'\n" + code


class Conn:
    """Just enough RESP for this: commands out, replies in."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        n = int(rest)
        return None if n < 0 else [self.read() for _ in range(n)]


def five_keys(rev):
    """Whether the library takes five keys per topic (the q zset, issue 22)."""
    return "q = KEYS[b + 5]" in lua(rev, "prelude")


def ten_base(rev):
    """Whether the library takes ten shard keys (limits and flow, issue 22)."""
    return "keys[9], keys[10]" in lua(rev, "prelude")


def run(conn, tag, shape, queue, jobs, want, delayed, acks=False):
    five, ten = shape
    t = "{dq:%s:0}" % queue
    base = (":jobs", ":body", ":seq", ":fence", ":topics", ":stats", ":paused", ":emptied")
    keys = [t + k for k in base + ((":limits", ":flow") if ten else ())]
    keys += [t + k + "t" for k in (":d:", ":r:", ":l:", ":x:", ":q:")[: 5 if five else 4]]
    common = [t + ":wake", "86400000000", "7"]
    policy = ["2", "10", "1000000", "2", "3600000000", "0"]
    for i in range(jobs):
        job = [f"j{i}", "t", "body", "1" if delayed else "", "", "30000000"] + (["1024"] if five else [])
        conn.call("FCALL", tag + "_push", len(keys), *keys, *common, *job, *policy)
    time.sleep(0.01)  # the delayed ones (1 µs) are due
    conn.call("CONFIG", "RESETSTAT")
    taken = []
    fields = 9 if five else 8
    while len(taken) < jobs:
        reply = conn.call("FCALL", tag + "_claim", len(keys), *keys, *common, "1", str(want))
        if reply[0] != 0:
            raise RuntimeError(f"{tag}: claim found nothing with {jobs - len(taken)} jobs left")
        for i in range(1, len(reply), fields):
            taken.append((reply[i], reply[i + 5]))  # id, fence
    if acks:
        conn.call("CONFIG", "RESETSTAT")
        for job, fence in taken:
            reply = conn.call("FCALL", tag + "_ack", len(keys), *keys, *common, job, "t", fence)
            if reply[0] != 0:
                raise RuntimeError(f"{tag}: ack of {job} refused: {reply}")
    stats = conn.call("INFO", "commandstats").decode()
    rows = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"cmdstat_(\w+):calls=(\d+),usec=(\d+)", stats)}
    calls, usec = rows["fcall"]
    commands = {c: n for c, (n, _) in sorted(rows.items()) if c not in ("config", "info")}
    return commands, usec / calls


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("old")
    p.add_argument("new", nargs="?")
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    if not 1 <= a.jobs <= 1_000_000:
        p.error(f"--jobs must be between 1 and 1000000, got {a.jobs}")
    if not 1 <= a.rounds <= 100:
        p.error(f"--rounds must be between 1 and 100, got {a.rounds}")
    with tempfile.TemporaryDirectory(prefix="delayq-claim-cost-") as d:
        sock = os.path.join(d, "redis.sock")
        server = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                                   "--appendonly", "no", "--dir", d], stdout=subprocess.DEVNULL)
        try:
            for _ in range(200):
                try:
                    conn = Conn(sock)
                    conn.call("PING")
                    break
                except OSError:
                    time.sleep(0.05)
            versions = [("old", a.old), ("new", a.new)]
            for tag, rev in versions:
                conn.call("FUNCTION", "LOAD", library(rev, tag))
            shape = {tag: (five_keys(rev), ten_base(rev)) for tag, rev in versions}
            for case, want, delayed, acks in (("claim 1", 1, False, False), ("claim 32", 32, False, False),
                                              ("claim 1 after a catch-up", 1, True, False),
                                              ("ack", 1, False, True)):
                seen = {tag: ([], None) for tag, _ in versions}
                for r in range(a.rounds):
                    for tag, _ in versions:
                        commands, us = run(conn, tag, shape[tag], f"{tag}-{want}-{int(delayed)}-{int(acks)}-{r}",
                                           a.jobs, want, delayed, acks)
                        seen[tag][0].append(us)
                        seen[tag] = (seen[tag][0], commands)
                for tag, rev in versions:
                    times, commands = seen[tag]
                    print(f"{case:25} {tag} ({rev or 'work tree'}): median {statistics.median(times):.2f} "
                          f"µs per fcall over {a.rounds} rounds; commands {commands}")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
