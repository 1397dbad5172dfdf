#!/usr/bin/env python3
"""delayqd's resident memory while topics and retry policies come and go (issue 19).

Starts delayqd on a fresh store in a temporary directory, on a free loopback port, and runs
ROUNDS rounds. Each round pushes TOPICS jobs, one on each of TOPICS topics never used before
(the round's number is in every name), POLICIES of them with a retry policy never used before
(a "list" policy whose one wait, in ms, no earlier job had), then makes every job go: one job in
POP_EVERY (default 10) is popped and finished with its token, the way a consumer settles a job,
and the others are deleted by id. /metrics is scraped after the pushes and at the round's end,
as Prometheus would scrape a daemon (--no-scrape: not at all). Why not pop them all: with --sync always a pop waits for an
fsync of its lease and the finish for another, which made a round of 200 000 take minutes on the
2-core machine (20 000 pops and finishes took 10 to 25 s); a delete is one synced write, and
the engine frees a topic and a policy the same way whichever path took its last job. Then it reads the daemon's VmRSS from
/proc/PID/status and prints one JSON line per round; at the end, whether rounds 2..N stay
within TOLERANCE % of round 2 ("met") or not ("missed"). The daemon is stopped on the way out,
on an error and on Ctrl-C too.

Requests go over keep-alive connections (CONNECTIONS, default 32, one thread each: more
concurrent calls share more of the store's fsyncs), pipelined
WINDOW requests deep; pushes go BATCH jobs to a request (/push_batch). /finish and /delete take
one job each (the API has no batched form of them), hence the pipelining.

The store runs in its default sync mode (--sync always) unless --sync says otherwise.

  bench/topic_churn.py                                   # 5 rounds, build/src/delayqd/delayqd
  bench/topic_churn.py --rounds 3 --delayqd ../other/build/src/delayqd/delayqd
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def bounded(name, lo, hi, kind=int):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, not {text!r}")
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be between {lo} and {hi}, not {v}")
        return v
    return parse


class Conn:
    """One keep-alive HTTP/1.1 connection that sends requests pipelined."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _read_answer(self):
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("delayqd closed the connection")
            self.buf += chunk
        head = self.buf[:end].decode("latin-1")
        status = int(head.split(" ", 2)[1])
        m = re.search(r"(?im)^content-length:\s*(\d+)\s*$", head)
        if not m:
            raise RuntimeError(f"an answer without Content-Length: {head!r}")
        total = end + 4 + int(m.group(1))
        while len(self.buf) < total:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("delayqd closed the connection mid-answer")
            self.buf += chunk
        body = self.buf[end + 4:total]
        self.buf = self.buf[total:]
        return status, body

    def many(self, requests, window):
        """Sends (method, path, body bytes) requests, at most `window` unanswered at a time;
        returns [(status, body bytes)] in order."""
        answers = []
        for start in range(0, len(requests), window):
            out = bytearray()
            part = requests[start:start + window]
            for method, path, body in part:
                out += (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode() + body
            self.sock.sendall(out)
            for _ in part:
                answers.append(self._read_answer())
        return answers


def expect_ok(answers, what):
    for status, body in answers:
        doc = json.loads(body)
        if status != 200 or doc.get("code") != 0:
            raise RuntimeError(f"{what}: HTTP {status}: {body[:300]!r}")
        yield doc


def run_parallel(conns, work):
    """Runs work(conn, k) for each connection k in its own thread; raises the first error."""
    errors = []

    def body(conn, k):
        try:
            work(conn, k)
        except BaseException as e:  # noqa: BLE001 -- handed to the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(c, k)) for k, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/PID/status")


def one_round(r, conns, a):
    n = a.topics
    jobs = []
    for i in range(n):
        job = {"topic": f"churn-r{r}-t{i}", "id": f"churn-r{r}-j{i}"}
        if i < a.policies:
            # A wait no earlier round had: 1 ms plus the round's block plus the job's index.
            job["retry"] = {"kind": "list", "delays_ms": [1 + (r - 1) * a.policies + i]}
        jobs.append(job)
    nconn = len(conns)

    def push(conn, k):
        reqs = []
        for start in range(k * a.batch, n, nconn * a.batch):
            body = json.dumps({"jobs": jobs[start:start + a.batch]}).encode()
            reqs.append(("POST", "/push_batch", body))
        for doc in expect_ok(conn.many(reqs, max(1, a.window // a.batch)), "push_batch"):
            if doc["data"]["refused"]:
                raise RuntimeError(f"push_batch refused jobs: {doc}")

    def settle(conn, k):
        mine = range(k, n, nconn)
        popped = [i for i in mine if i % a.pop_every == 0]
        deleted = [i for i in mine if i % a.pop_every != 0]
        pops = [("POST", "/pop", json.dumps({"topic": jobs[i]["topic"], "timeout_ms": 0}).encode())
                for i in popped]
        tokens = []
        for i, doc in zip(popped, expect_ok(conn.many(pops, a.window), "pop")):
            got = doc["data"]
            if not got or got["id"] != jobs[i]["id"]:
                raise RuntimeError(f"pop of {jobs[i]['topic']} gave {doc}")
            tokens.append(got["token"])
        finishes = [("POST", "/finish", json.dumps({"token": t}).encode()) for t in tokens]
        for doc in expect_ok(conn.many(finishes, a.window), "finish"):
            if doc["message"] != "finished":
                raise RuntimeError(f"finish: {doc}")
        deletes = [("POST", "/delete", json.dumps({"id": jobs[i]["id"]}).encode())
                   for i in deleted]
        for doc in expect_ok(conn.many(deletes, a.window), "delete"):
            if not doc["data"]["deleted"]:
                raise RuntimeError(f"delete: {doc}")

    t0 = time.monotonic()
    run_parallel(conns, push)
    t_push = time.monotonic() - t0
    if a.scrape:
        # Scraped as Prometheus would, while the round's topics hold their jobs.
        [(status, body)] = conns[0].many([("GET", "/metrics", b"")], 1)
        if status != 200 or b"delayq_lateness_seconds" not in body:
            raise RuntimeError(f"/metrics: HTTP {status}: {body[:300]!r}")
    run_parallel(conns, settle)
    seconds = time.monotonic() - t0
    return t_push, seconds


def wait_listening(log_path, proc, deadline):
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"delayqd exited with {proc.returncode}; see {log_path}")
        with open(log_path) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    raise RuntimeError("delayqd did not say where it listens within 30 s")


def wait_health(port, deadline):
    while time.monotonic() < deadline:
        try:
            c = Conn(port)
            try:
                [(status, _)] = c.many([("GET", "/health", b"")], 1)
            finally:
                c.close()
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("delayqd's /health did not answer 200 within 30 s")


def stop(proc):
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delayqd", default=os.path.join(root, "build/src/delayqd/delayqd"))
    p.add_argument("--rounds", type=bounded("--rounds", 2, 100), default=5)
    p.add_argument("--topics", type=bounded("--topics", 1, 10_000_000), default=200_000,
                   help="jobs, and fresh topics, per round")
    p.add_argument("--policies", type=bounded("--policies", 0, 10_000_000), default=20_000,
                   help="fresh retry policies per round (at most --topics)")
    p.add_argument("--pop-every", type=bounded("--pop-every", 1, 10_000_000), default=10,
                   help="pop and finish one job in this many, delete the others")
    p.add_argument("--connections", type=bounded("--connections", 1, 64), default=32)
    p.add_argument("--window", type=bounded("--window", 1, 100_000), default=256,
                   help="requests pipelined on a connection")
    p.add_argument("--batch", type=bounded("--batch", 1, 1000), default=1000,
                   help="jobs per /push_batch")
    p.add_argument("--tolerance", type=bounded("--tolerance", 0.0, 1000.0, float), default=10.0,
                   help="percent over or under round 2's RSS that still counts as flat")
    p.add_argument("--sync", choices=["always", "batch", "periodic", "none"], default="always")
    p.add_argument("--threads", type=bounded("--threads", 1, 256), default=4,
                   help="delayqd's --threads")
    p.add_argument("--memtable-mb", type=bounded("--memtable-mb", 1, 1024), default=None,
                   help="delayqd's --memtable-mb (default: delayqd's own)")
    p.add_argument("--no-scrape", dest="scrape", action="store_false",
                   help="do not GET /metrics after each round's pushes (and again at its end)")
    a = p.parse_args()
    if a.policies > a.topics:
        p.error(f"--policies ({a.policies}) must be at most --topics ({a.topics})")
    if not os.access(a.delayqd, os.X_OK):
        p.error(f"no delayqd at {a.delayqd}: build it (cmake --build build --target delayqd)")

    # SIGTERM (e.g. from a timeout) unwinds like Ctrl-C, so that the daemon is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="delayq-churn-") as tmp:
        log_path = os.path.join(tmp, "delayqd.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [a.delayqd, "--store", os.path.join(tmp, "store"), "--listen", "127.0.0.1:0",
                 "--sync", a.sync, "--threads", str(a.threads)] +
                (["--memtable-mb", str(a.memtable_mb)] if a.memtable_mb else []),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        conns = []
        try:
            port = wait_listening(log_path, proc, time.monotonic() + 30)
            wait_health(port, time.monotonic() + 30)
            conns = [Conn(port) for _ in range(a.connections)]
            print(json.dumps({"delayqd": a.delayqd, "sync": a.sync, "threads": a.threads,
                              "connections": a.connections, "pop_every": a.pop_every, "scrape": a.scrape,
                              "rss_bytes_at_start": rss_bytes(proc.pid)}), flush=True)
            rss = []
            for r in range(1, a.rounds + 1):
                t_push, seconds = one_round(r, conns, a)
                if a.scrape:
                    conns[0].many([("GET", "/metrics", b"")], 1)
                [(_, body)] = conns[0].many([("GET", "/stats", b'{"limit":1}')], 1)
                st = json.loads(body)["data"]
                live = (st["pushed"] - st["acked"] - st["cancelled"] - st["dead_lettered"])
                if st["pushed"] != r * a.topics or live != 0:
                    raise RuntimeError(f"after round {r} the totals are off: {st}")
                rss.append(rss_bytes(proc.pid))
                popped = len(range(0, a.topics, a.pop_every))
                print(json.dumps({"round": r, "rss_bytes": rss[-1], "seconds": round(seconds, 2),
                                  "push_seconds": round(t_push, 2), "jobs": a.topics,
                                  "topics": a.topics, "policies": a.policies,
                                  "popped_finished": popped, "deleted": a.topics - popped}),
                      flush=True)
            base = rss[1]
            worst = max(abs(x - base) / base * 100 for x in rss[1:])
            verdict = "met" if worst <= a.tolerance else "missed"
            print(json.dumps({"target": f"rounds 2..{a.rounds} within {a.tolerance:g} % of round 2",
                              "round2_rss_bytes": base, "worst_deviation_percent": round(worst, 2),
                              "result": verdict}), flush=True)
        finally:
            for c in conns:
                c.close()
            stop(proc)


if __name__ == "__main__":
    main()
