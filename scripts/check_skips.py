#!/usr/bin/env python3
"""Fails when a test skipped that scripts/allowed_skips.txt does not allow in this stage.

usage: check_skips.py STAGE JUNIT_XML   (the file `ctest --output-junit` wrote)

A skipped test is one whose <testcase> holds <skipped> (GoogleTest's GTEST_SKIP, which ctest
reports through SKIP_REGULAR_EXPRESSION). Prints each one with the reason the test gave.
"""
import pathlib
import re
import sys
import xml.etree.ElementTree as ET


def allowed(stage):
    rules = []
    path = pathlib.Path(__file__).with_name("allowed_skips.txt")
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or parts[0] not in ("all", "asan", "tsan"):
            sys.exit(f"{path}:{n}: expected 'STAGE REGEX  # why', STAGE one of all, asan, tsan")
        if parts[0] in ("all", stage):
            rules.append(re.compile(parts[1]))
    return rules


def why(case):
    out = case.findtext("system-out") or ""
    m = re.search(r": Skipped\n(.*)", out)
    return m.group(1).strip() if m else "(no reason given)"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    stage, junit = sys.argv[1], sys.argv[2]
    rules = allowed(stage)
    skipped = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("skipped") is not None]
    bad = [c for c in skipped if not any(r.search(c.get("name", "")) for r in rules)]
    for c in bad:
        print(f"skipped, and not allowed to: {c.get('name')}: {why(c)}", file=sys.stderr)
    print(f"skips: {len(skipped)} ({len(skipped) - len(bad)} allowed in stage '{stage}')")
    if bad:
        print("add a test to scripts/allowed_skips.txt only with the reason it cannot run here",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
