#!/usr/bin/env python3
"""Each of the project's own headers is included by one spelling only.

The roots (CMakeLists.txt, delayq_project_roots): src/ for everything under src/
("engine/shard.h"), the repository's root for wal/ ("wal/journal.h"), include/ for the installed
headers ("delayq/engine.h"). This reads every #include "..." of src/, wal/, include/, tests/,
bench/ and examples/, finds the file the compiler would open (the including file's folder first,
then the roots and the tests' own folders, in the order the targets give them) and fails when a
header under src/, wal/ or include/ is reached by another spelling than its one, naming the line.
Usage: include_spellings_test.py REPO
"""
import os
import re
import sys

repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
roots = [os.path.join(repo, d) for d in ("include", "src", "", "tests/support", "tests")]
include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def spelling_of(path):
    """The one spelling of a project header, or None for a file that is not one."""
    rel = os.path.relpath(path, repo)
    for top, root in (("include/", "include"), ("src/", "src"), ("wal/", "")):
        if rel.startswith(top):
            return os.path.relpath(path, os.path.join(repo, root))
    return None


bad = []
for top in ("src", "wal", "include", "tests", "bench", "examples"):
    for folder, _, files in os.walk(os.path.join(repo, top)):
        for name in files:
            if not name.endswith((".h", ".cc", ".hpp", ".cpp")):
                continue
            source = os.path.join(folder, name)
            with open(source, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = include_re.match(line)
                    if not m:
                        continue
                    written = m.group(1)
                    for base in [folder] + roots:
                        target = os.path.normpath(os.path.join(base, written))
                        if os.path.isfile(target):
                            break
                    else:
                        continue  # a generated or system header: not the project's
                    one = spelling_of(target)
                    if one is not None and written != one:
                        bad.append(f'{os.path.relpath(source, repo)}:{number}: "{written}" '
                                   f'reaches {os.path.relpath(target, repo)}, spelled "{one}"')

for b in bad:
    print(b)
print(f"{len(bad)} include(s) spelled otherwise than their header's one spelling")
sys.exit(1 if bad else 0)
