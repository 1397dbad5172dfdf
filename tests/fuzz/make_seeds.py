#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (tests/fuzz/<target>/).

Each seed is a valid input or an edge case the target must handle. The journal seeds are
encoded here by hand, following the layout of docs/journal-format.md (wal/codec.cc); the
fuzzer itself checks that every record that decodes encodes back to the same bytes, so a seed
that drifted from the format only costs coverage. Run again after changing a format or a route:
    python3 tests/fuzz/make_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- delayqd_fuzz: first byte picks the route and method (src/delayqd/fuzz_request.cc) ----
# The same list, in the same order, as kTargets there.
ROUTES = ["/push", "/push_batch", "/pop", "/finish", "/ack", "/nack", "/touch", "/dead_letter",
          "/delete", "/get", "/reschedule", "/stats", "/dead/list", "/dead/requeue",
          "/dead/purge", "/metrics", "/health", "/ui", "/pause", "/resume", "/release",
          "/limits/set", "/limits/clear", "/jobs/list",
          "/schedules/set", "/schedules/remove", "/schedules/get", "/schedules/list",
          "/schedules/pause", "/schedules/resume", "/nope"]


def route(path, method="POST"):
    for b in range(256):
        if ROUTES[b % len(ROUTES)] == path and ((b & 0x80) != 0) == (method == "GET"):
            return bytes([b])
    raise ValueError(path)


def delayqd():
    seeds = {
        "push": ("/push", '{"topic":"t","id":"a","delay":1,"ttr":5,"body":"b","retry":{"kind":"list","delays":[1,2]}}'),
        "push-exponential": ("/push", '{"topic":"t","delay_ms":250,"retry":{"kind":"exponential","base":1,"factor":2.5,"cap":60,"jitter":0.2,"max_attempts":4}}'),
        "push-fixed": ("/push", '{"topic":"t","id":"f","due_at_ms":1700000000000,"retry":{"kind":"fixed","base":3,"max_attempts":2}}'),
        "push-huge-delay": ("/push", '{"topic":"t","id":"h","delay":8e9}'),
        "push-huge-delay-ms": ("/push", '{"topic":"t","id":"h","delay_ms":8000000000000}'),
        "push-negative": ("/push", '{"topic":"t","delay":-5,"ttr":-1}'),
        "push-numbers": ("/push", '{"topic":"t","delay":1e400,"ttr":-0,"body":"x"}'),
        "push-tiny-fraction": ("/push", '{"topic":"t","delay":1.5e-7,"ttr":0.0000001}'),
        "push-escapes": ("/push", '{"topic":"t\\u00e9","id":"\\ud83d\\ude00","body":"a\\"b\\\\c\\n\\t\\/"}'),
        "push-lone-surrogate": ("/push", '{"topic":"\\ud800","body":"\\udfff"}'),
        "push-duplicate-key": ("/push", '{"topic":"t","topic":"u"}'),
        "push-typo": ("/push", '{"topic":"order","dealy":1800}'),
        "push-comma-topic": ("/push", '{"topic":"a,b","body":"c"}'),
        "push-bad-utf8": ("/push", b'{"topic":"\xff\xfe","body":"\xc3"}'),
        "batch": ("/push_batch", '{"jobs":[{"topic":"t"},{"topic":"u","delay_ms":5}]}'),
        "batch-mixed": ("/push_batch", '{"jobs":[{"topic":"t","id":"x"},{"topic":""},{"topic":"t","id":"x"},7,null]}'),
        "pop": ("/pop", '{"topic":"t,u","timeout":0}'),
        "pop-many": ("/pop", '{"topic":"t,u,,v","timeout":-1}'),
        "finish": ("/finish", '{"id":"a","token":"1:a"}'),
        "ack": ("/ack", '{"token":"18446744073709551615:a"}'),
        "nack": ("/nack", '{"id":"a","delay_ms":3}'),
        "nack-token": ("/nack", '{"token":"2:a","delay":1e30}'),
        "touch": ("/touch", '{"token":"3:a"}'),
        "dead-letter": ("/dead_letter", '{"token":"4:a"}'),
        "delete": ("/delete", '{"id":"a"}'),
        "get": ("/get", '{"id":"a"}'),
        "get-query": ("/get", ""),
        "reschedule": ("/reschedule", '{"id":"a","due_at_ms":1700000000000}'),
        "reschedule-overflow": ("/reschedule", '{"id":"a","delay":8e9}'),
        "reschedule-overflow-ms": ("/reschedule", '{"id":"a","delay_ms":9300000000000}'),
        "stats": ("/stats", ""),
        "dead": ("/dead/list", '{"topic":"t","limit":5}'),
        "dead-limit": ("/dead/list", '{"topic":"t","limit":1e20}'),
        "dead-requeue": ("/dead/requeue", '{"id":"a"}'),
        "dead-requeue-topic": ("/dead/requeue", '{"topic":"t"}'),
        "dead-purge": ("/dead/purge", '{"topic":"t"}'),
        "push-priority": ("/push", '{"topic":"t","id":"p","priority":4294967295}'),
        "push-priority-bad": ("/push", '{"topic":"t","priority":-1e20}'),
        "limits-set": ("/limits/set", '{"topic":"t","rate":{"count":50,"per_ms":1000,"burst":10},"max_in_flight":4}'),
        "limits-set-bad": ("/limits/set", '{"topic":"t","rate":{"count":0,"per":-1e308,"burst":1e20}}'),
        "limits-clear": ("/limits/clear", '{"topic":"t"}'),
        "schedules-set": ("/schedules/set", '{"id":"n","rule":"0 9 * * *","zone":"Europe/Berlin",'
                          '"job":{"topic":"t","body":"b"},"catch_up":"all","catch_up_max":5,'
                          '"overlap":"skip"}'),
        "schedules-set-bad": ("/schedules/set", '{"id":"n","rule":"every 1e400s","start_ms":-1,'
                              '"job":{"topic":"t","due_at_ms":1},"catch_up_max":1e20}'),
        "schedules-list": ("/schedules/list", '{"limit":2,"cursor":"n"}'),
        "jobs-list": ("/jobs/list", '{"topic":"t","state":"dead","limit":1000,"cursor":"c1.x"}'),
        "jobs-list-bad": ("/jobs/list", '{"topic":"t","state":"x","limit":-1}'),
        "nope": ("/nope", "{}"),
        "nested": ("/push", '{"topic":"t","retry":{"kind":"list","delays":[[[[[[1]]]]]]}}'),
        "not-json": ("/push", '{"topic":t'),
        "empty": ("/push", ""),
    }
    for name, (path, body) in seeds.items():
        write("delayqd_fuzz", name, route(path) + (body if isinstance(body, bytes) else body.encode()))
    for name, path in {"get-stats": "/stats", "get-metrics": "/metrics", "get-health": "/health",
                       "get-job": "/get"}.items():
        write("delayqd_fuzz", name, route(path, "GET") + b'{"id":"a"}')


# ---- journal_record_fuzz: an 8-byte key (seq, big-endian), then the value ----
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def record(seq, state=0, due=1_700_000_000 * 10**9, lease=0, ttr=30 * 10**9, attempts=0,
           fence=0, id_=b"job-1", topic=b"orders", body=b"2 x beans", kind=2, max_attempts=10,
           base=10**9, factor=2.0, cap=3600 * 10**9, jitter=0.0, delays=(), version=1,
           stored_seq=None, delay_count=None, priority=None):
    def s(b):
        return struct.pack("<I", len(b)) + b
    v = struct.pack("<BQBqqqIQ", version, seq if stored_seq is None else stored_seq, state, due,
                    lease, ttr, attempts, fence)
    v += s(id_) + s(topic) + s(body)
    v += struct.pack("<BIqdqd", kind, max_attempts, base, factor, cap, jitter)
    v += struct.pack("<I", len(delays) if delay_count is None else delay_count)
    v += b"".join(struct.pack("<q", d) for d in delays)
    if priority is not None:  # record version 2: the priority last
        v += struct.pack("<I", priority)
    return struct.pack(">Q", seq) + v


def totals(*counts, version=1):
    return struct.pack(">Q", 0) + struct.pack("<B%dQ" % len(counts), version, *counts)


def journal():
    now = 1_704_067_200 * 10**9
    seeds = {
        "delayed": record(1),
        "ready-overdue": record(2, state=1, due=now - 10**9),
        "reserved": record(3, state=2, due=now - 10**9, lease=now + 5 * 10**9, attempts=1, fence=7),
        "reserved-lease-passed": record(4, state=2, due=now - 9 * 10**9, lease=now - 10**9,
                                        attempts=2, fence=8, kind=0, max_attempts=3, base=2 * 10**9),
        "dead": record(5, state=3, attempts=10, fence=9),
        "list-policy": record(6, kind=1, max_attempts=4,
                              delays=(120 * 10**9, 600 * 10**9, 600 * 10**9)),
        "exponential-jitter": record(7, kind=2, max_attempts=5, factor=3.5, jitter=0.5),
        "empty-body": record(8, body=b""),
        "long-id": record(9, id_=b"i" * 255, topic=b"t" * 255),
        "id-too-long": record(10, id_=b"i" * 256),
        "due-min": record(11, due=I64_MIN),
        "due-max": record(12, due=I64_MAX),
        "lease-max": record(13, state=2, lease=I64_MAX, attempts=1, fence=1),
        "lease-min": record(14, state=2, lease=I64_MIN, attempts=1, fence=1),
        "ttr-max": record(15, ttr=I64_MAX),
        "ttr-zero": record(16, ttr=0),
        "attempts-max": record(17, state=2, lease=now, attempts=0xFFFFFFFF, fence=(1 << 64) - 1),
        "seq-max": record((1 << 64) - 1),
        "base-max": record(18, kind=0, base=I64_MAX, max_attempts=0xFFFFFFFF),
        "cap-negative": record(19, cap=-1),
        "factor-nan": record(20, factor=float("nan"), jitter=float("inf")),
        "delay-min": record(21, kind=1, delays=(I64_MIN, I64_MAX)),
        "seq-mismatch": record(22, stored_seq=23),
        "state-unknown": record(24, state=4),
        "kind-unknown": record(25, kind=3),
        "version-unknown": record(26, version=3),
        "priority-urgent": record(33, state=1, version=2, priority=0),
        "priority-least": record(34, version=2, priority=0xFFFFFFFF),
        "priority-default-in-v2": record(35, version=2, priority=1024),
        "priority-in-v1": record(36, priority=5),
        "priority-missing": record(37, version=2),
        "delays-count-lies": record(27, kind=1, delays=(10**9,), delay_count=0xFFFFFFFF),
        "truncated": record(28)[:40],
        "trailing": record(29) + b"\0",
        "empty-value": struct.pack(">Q", 30),
        "totals": totals(5, 4, 3, 1, 1, 0, 1, 0, 0),
        "totals-max": totals(*([(1 << 64) - 1] * 9)),
        "totals-version": totals(*([0] * 9), version=2),
        "totals-v2": totals(5, 4, 3, 1, 1, 0, 1, 0, 0, 2, version=2),
        "totals-v2-max": totals(*([(1 << 64) - 1] * 10), version=2),
        # 0 x infinity once made the wait NaN past ~570 failures (src/engine/backoff.cc).
        "exponential-zero-base": record(32, state=2, lease=now, attempts=600, fence=3, kind=2,
                                        max_attempts=1000, base=0, factor=3.5, jitter=0.5),
    }
    bad_len = bytearray(record(31))
    bad_len[8 + 46:8 + 50] = struct.pack("<I", 0xFFFFFFF0)  # the id's byte count
    seeds["string-length-lies"] = bytes(bad_len)
    for name, data in seeds.items():
        write("journal_record_fuzz", name, data)


# ---- redis_reply_fuzz: RESP, as a server sends it ----
def resp(v):
    if v is None:
        return b"$-1\r\n"
    if isinstance(v, bool):
        raise TypeError
    if isinstance(v, int):
        return b":%d\r\n" % v
    if isinstance(v, bytes):
        return b"$%d\r\n%s\r\n" % (len(v), v)
    if isinstance(v, str):
        return resp(v.encode())
    if isinstance(v, tuple) and v and v[0] in ("+", "-"):
        return v[0].encode() + v[1].encode() + b"\r\n"
    return b"*%d\r\n" % len(v) + b"".join(resp(e) for e in v)


def redis():
    now = 1_704_067_200_000_000
    job = ["job-1", "orders", "2 x beans", 1, 10, 42, now - 1000, now + 30_000_000, 1024]
    seeds = {
        "claim-one": [0] + job,
        "claim-two": [0] + job + ["job-2", "orders", "", 3, 3, 43, now, now + 5_000_000, 0],
        "claim-malformed": [0, "job-1", "orders"],
        "nothing-ready": [6, 1500],
        "nothing-at-all": [6, -1],
        "nothing-ready-far": [6, (1 << 63) - 1],
        "get": [0, "job-1", 2, 1, 10, now, now + 30_000_000, 30_000_000, "body",
                [2, 1_000_000, "2", 3_600_000_000, "0.20000000000000001", []], 7, "orders"],
        "get-list-policy": [0, "job-1", 0, 0, 8, now, 0, 30_000_000, "body",
                            [1, 1_000_000, "2", 3_600_000_000, "0", [120_000_000, 600_000_000]],
                            (1 << 32) - 1, "orders"],
        "get-extremes": [0, "j", 9, -1, (1 << 63) - 1, -(1 << 63), (1 << 63) - 1,
                         (1 << 63) - 1, "", [-1, (1 << 63) - 1, "nan", -(1 << 63), "1e999",
                                             [(1 << 63) - 1]], (1 << 32), "t"],
        "list-dead": [0] + ["d1", 3, 10, 10, now, 0, 30_000_000, "x",
                            [0, 5_000_000, "2", 0, "0", []], 1024] * 2,
        "touch": [0, now + 30_000_000],
        "reschedule-too-far": [1, 315_360_000_000_001],
        "reschedule-too-far-extreme": [1, -(1 << 63)],
        "state-refusal": [5, 2],
        "stale-token": [4, 2, 3],
        "wrong-topic": [99, "other"],
        "duplicate": [2, 1],
        "over-dead": [0, 100, 3],
        "push-many": [0, -1, -1, 1, -1],
        "stats": [0, [1, 2, 3, 4], [0, 0, 0, 0],
                  ["pushed", "5", "delivered", "4", "acked", "3", "retried", "1",
                   "dead_lettered", "1", "leases_expired", "0", "cancelled", "1",
                   "requeued", "0", "purged", "0"]],
        "integers": [(1 << 63) - 1, -(1 << 63), "9223372036854775808", "-0", "+1", "1e3"],
        "stats-odd": [0, [1, 2, 3], ["pushed", "-1", "acked"]],
        "cluster-slots": [
            [0, 5460, ["127.0.0.1", 7000, "a" * 40], ["127.0.0.1", 7003, "d" * 40]],
            [5461, 10922, ["", 7001, "b" * 40]],
            [10923, 16383, ["?", 7002, "c" * 40, ["hostname", "node-3"]]],
        ],
        "cluster-slots-bad": [[16383, 0, ["h", 7000]], [-1, 20000, ["h", 0]], [1, 2, ["h"]],
                              [3, 4, ["h", 70000]], [5, 6]],
        "moved": ("-", "MOVED 3999 127.0.0.1:6381"),
        "ask": ("-", "ASK 3999 :6381"),
        "error": ("-", "ERR Function not found"),
        "status": ("+", "OK"),
        "nil": None,
    }
    for name, v in seeds.items():
        write("redis_reply_fuzz", name, resp(v))
    write("redis_reply_fuzz", "null-array", b"*-1\r\n")
    write("redis_reply_fuzz", "pipelined", resp([0]) + resp([6, 10]) + resp(("+", "OK")))
    write("redis_reply_fuzz", "incomplete", b"*3\r\n:0\r\n$5\r\nab")


# ---- cron_fuzz: first byte picks the zone (kZones in cron_fuzz.cc), then the rule's text, then
# optionally a NUL and 8 bytes of instant (little-endian nanoseconds, halved) ----
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago",
         "Pacific/Chatham", "Asia/Kathmandu", "", "Not/AZone"]


def cron_seed(zone, text, ns=None):
    data = bytes([ZONES.index(zone)]) + text.encode()
    if ns is not None:
        data += b"\0" + struct.pack("<Q", ns * 2)
    return data


def cron():
    # Instants just before DST changes of 2026 (UTC): Berlin's spring and fall, Lord_Howe's spring.
    berlin_spring = 1774745400 * 10**9  # 2026-03-29 00:50 UTC
    berlin_fall = 1792888200 * 10**9    # 2026-10-25 00:30 UTC
    lord_howe_spring = 1791040200 * 10**9  # 2026-10-03 15:10 UTC
    seeds = {
        "five-fields": ("UTC", "*/15 9-17 * * MON-FRI"),
        "six-fields": ("Europe/Berlin", "30 */5 * * * *"),
        "lists-steps": ("UTC", "0,30 1-23/2 1,15 jan,jul *"),
        "open-step": ("UTC", "50/5 * * * *"),
        "both-days": ("America/New_York", "0 0 13 * FRI"),
        "sunday-seven": ("UTC", "0 0 * * 7"),
        "leap-day": ("UTC", "0 0 29 2 *"),
        "never": ("UTC", "0 0 30 2 *"),
        "out-of-range": ("UTC", "61 * * * *"),
        "backwards": ("UTC", "5-2 * * * *"),
        "step-zero": ("UTC", "*/0 * * * *"),
        "empty-item": ("UTC", "1,,2 * * * *"),
        "huge-number": ("UTC", "99999999999999999999 * * * *"),
        "four-fields": ("UTC", "0 0 * *"),
        "yearly": ("Pacific/Chatham", "@yearly"),
        "hourly": ("Asia/Kathmandu", "@hourly"),
        "unknown-macro": ("UTC", "@fortnightly"),
        "every": ("Europe/Berlin", "every 90s"),
        "every-zero": ("UTC", "every 0ms"),
        "every-huge": ("UTC", "every 99999999999999999999d"),
        "unknown-zone": ("Not/AZone", "@daily"),
        "empty-zone": ("", "@daily"),
        "empty": ("UTC", ""),
    }
    for name, (zone, text) in seeds.items():
        write("cron_fuzz", name, cron_seed(zone, text))
    write("cron_fuzz", "berlin-spring-gap", cron_seed("Europe/Berlin", "*/15 2 * * *", berlin_spring))
    write("cron_fuzz", "berlin-fall-twice", cron_seed("Europe/Berlin", "* 2 * * *", berlin_fall))
    write("cron_fuzz", "lord-howe-half-hour",
          cron_seed("Australia/Lord_Howe", "0,15 2 * * *", lord_howe_spring))
    # Found by the fuzzer: asked from the second pass of Berlin's repeated hour, the search
    # skipped the hour after it.
    write("cron_fuzz", "berlin-fall-after-the-repeat",
          cron_seed("Europe/Berlin", "* 3 * * *", berlin_fall))
    write("cron_fuzz", "santiago-midnight", cron_seed("America/Santiago", "@daily", berlin_fall))
    write("cron_fuzz", "near-the-end", cron_seed("UTC", "0 0 1 1 *", (1 << 63) - 10**18))


if __name__ == "__main__":
    delayqd()
    journal()
    redis()
    cron()
