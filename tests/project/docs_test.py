#!/usr/bin/env python3
"""One page of docs/, as typed: every ```sh block runs, in order, against this build; every
other block's delayq, delayqd, delayq-bench and delayq-crashtest commands use only flags those
programs have, and the scripts they name exist.

Usage: docs_test.py SOURCE_DIR BUILD_DIR DOC   (DOC: a path under SOURCE_DIR, e.g. docs/cli.md)

The ```sh blocks of DOC are joined into one bash script (set -euo pipefail) and run in a scratch
directory, so that a daemon started in one block can be used and stopped in a later one. The
blocks run exactly as written: nothing is added between their lines, so a block that starts
delayqd in the background must itself wait for it (`delayq --url ... wait`) before calling it,
as it must when pasted into a terminal. (A block that calls such a daemon before a `wait` line is refused before anything runs.) The
liberties, all mechanical, that a person following the page on a machine of their own would not
need:
  - `delayq` and `delayqd` are this build's (build/src/cli/delayq, build/src/delayqd/delayqd),
    first on PATH, as after an install; `build` in the scratch directory is this build, and the
    README's spelling build/src/delayqd/delayqd means the same delayqd;
  - port 9277 (delayqd's default) becomes a free port: in the text of the blocks, and delayqd
    started without --listen listens there, so that tests and other daemons on the machine do not
    collide;
  - what the blocks leave running is stopped at the end.
A block whose commands cannot run in a test (systemd, apt, another host, a long benchmark) uses
another info string (```console for a session with its output, ```text, ```ini, ...) or none;
for those, every line that runs delayq, delayqd or delayq-bench is checked against the program's
own flags (parsed from its --help), and a `$ delayq ...` or `$ delayqd ...` line of a console
block is parsed by the program itself (run with --help appended: unknown commands and flags are
refused, nothing is opened). Paths the blocks run (./scripts/x.sh, bench/y.py) must exist.
"""
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

PROGRAMS = {
    "delayq": "src/cli/delayq",
    "delayqd": "src/delayqd/delayqd",
    "delayq-bench": "bench/delayq-bench",
    "delayq-crashtest": "src/crashtest/delayq-crashtest",
}


def blocks(path):
    """(info string, first line number, text) of each fenced block."""
    out, info, start, lines = [], None, 0, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("```"):
                if info is None:
                    info, start, lines = line[3:].strip(), n + 1, []
                else:
                    out.append((info, start, "\n".join(lines)))
                    info = None
            elif info is not None:
                lines.append(line)
    if info is not None:
        sys.exit(f"{path}:{start - 1}: a code block is not closed")
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def help_flags(binary):
    """The --flags a program's help text names."""
    text = ""
    for args in ([binary, "help"], [binary, "--help"]):
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        text += r.stdout + r.stderr  # delayq-bench prints its usage on stderr
    return set(re.findall(r"--([a-z][a-z0-9-]*)", text))


def commands(line):
    """The commands a shell line runs, each as a list of words (quotes removed)."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:
        return []
    out, cur = [], []
    for w in words + [";"]:
        if w and set(w) <= set(";&|()<>"):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(w)
    return out


def program_of(words):
    """(program name, its arguments) when the command runs one of PROGRAMS, else None."""
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("$", "sudo", "exec", "time", "nohup"):
            i += 1
            continue
        m = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=(.*)", w)
        if m and os.path.basename(m.group(1)) not in PROGRAMS:
            i += 1  # an environment assignment before the command
            continue
        name = os.path.basename(m.group(1) if m else w)
        return (name, words[i + 1:]) if name in PROGRAMS else None
    return None


def check_flags(doc, where, line, flags, build):
    problems = []
    for words in commands(line):
        found = program_of(words)
        if not found:
            continue
        name, args = found
        if name not in flags:
            continue  # not built here (delayq-bench without DELAYQ_BUILD_BENCH)
        for a in args:
            if a == "--":
                break
            m = re.match(r"--([a-z][a-z0-9-]*)", a)
            if m and m.group(1) not in flags[name] and m.group(1) != "help":
                problems.append(f"{doc}:{where}: {name} has no flag --{m.group(1)}: {line.strip()}")
    return problems


def dry_run(doc, where, line, build):
    """A `$ delayq ...` / `$ delayqd ...` line, parsed by the program itself (--help appended)."""
    problems = []
    for words in commands(line):
        found = program_of(words)
        if not found or found[0] not in ("delayq", "delayqd"):
            continue
        name, args = found
        binary = os.path.join(build, PROGRAMS[name])
        r = subprocess.run([binary] + args + ["--help"], capture_output=True, text=True,
                           timeout=60, cwd=tempfile.gettempdir())
        if r.returncode != 0:
            problems.append(f"{doc}:{where}: `{' '.join([name] + args)}` is refused by {name}: "
                            f"{r.stderr.strip().splitlines()[0] if r.stderr.strip() else r.returncode}")
    return problems


def check_paths(doc, where, line, src):
    """Scripts a line runs (./scripts/test.sh, bench/run.sh) exist in the source tree."""
    problems = []
    for words in commands(line):
        words = [w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
        if words and words[0] in ("$", "python3", "bash", "sh"):
            words = words[1:]
        for w in words[:2]:
            if re.fullmatch(r"(\./)?(scripts|bench|tests)/[A-Za-z0-9_.-]+\.(sh|py)", w):
                if not os.path.exists(os.path.join(src, w)):
                    problems.append(f"{doc}:{where}: {w} does not exist: {line.strip()}")
    return problems


def check_waits(doc, start, text):
    """A sh block that starts delayqd in the background waits for it (`delayq ... wait`) before
    it calls it (curl, delayq) or signals it (kill): run as written, the call would otherwise
    race the daemon's start (it opens its store before it listens), and lose when pasted."""
    problems, started = [], None
    for k, line in enumerate(text.split("\n")):
        for words in commands(line):
            found = program_of(words)
            name = found[0] if found else os.path.basename(words[0])
            if name == "delayqd" and line.split(" #")[0].rstrip().endswith("&"):
                started = start + k
            elif name == "delayq" and "wait" in found[1]:
                started = None
            elif started is not None and name in ("curl", "delayq", "delayq-bench", "kill"):
                problems.append(f"{doc}:{start + k}: `{line.strip()}` calls the delayqd started "
                                f"in the background on line {started} without waiting for it "
                                f"first (delayq --url ... wait)")
                started = None
    return problems


def sh_script(doc, sh_blocks, port):
    lines = ["set -euo pipefail"]
    for start, text in sh_blocks:
        lines.append(f'echo "== {doc}:{start}" >&2')
        for line in text.split("\n"):
            line = line.replace("./build/src/delayqd/delayqd", "delayqd")
            line = line.replace("build/src/delayqd/delayqd", "delayqd")
            line = line.replace("9277", str(port))
            lines.append(line)
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, build, doc = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    path = os.path.join(src, doc)
    all_blocks = blocks(path)
    flags = {}
    for name, rel in PROGRAMS.items():
        binary = os.path.join(build, rel)
        if os.path.exists(binary):
            flags[name] = help_flags(binary)
    for name in ("delayq", "delayqd"):
        if name not in flags:
            sys.exit(f"{name} is not built in {build}")

    problems = []
    sh_blocks = []
    for info, start, text in all_blocks:
        if info == "sh":
            sh_blocks.append((start, text))
            problems += check_waits(doc, start, text)
        for k, line in enumerate(text.split("\n")):
            where = start + k
            problems += check_flags(doc, where, line, flags, build)
            problems += check_paths(doc, where, line, src)
            if info == "console" and line.startswith("$ "):
                problems += dry_run(doc, where, line[2:], build)
    if problems:
        print("\n".join(problems))
        sys.exit(1)

    tmp = tempfile.mkdtemp(prefix="delayq-docs-")
    try:
        work, bindir = os.path.join(tmp, "work"), os.path.join(tmp, "bin")
        os.makedirs(work)
        os.makedirs(bindir)
        os.symlink(build, os.path.join(work, "build"))
        port = free_port()
        os.symlink(os.path.join(build, PROGRAMS["delayq"]), os.path.join(bindir, "delayq"))
        with open(os.path.join(bindir, "delayqd"), "w") as f:
            f.write("#!/usr/bin/env bash\n"
                    "# This build's delayqd; without --listen, on the test's port.\n"
                    'for a in "$@"; do case $a in --listen|--listen=*|--config|--config=*) '
                    f'exec {build}/{PROGRAMS["delayqd"]} "$@";; esac; done\n'
                    f'exec {build}/{PROGRAMS["delayqd"]} --listen 127.0.0.1:{port} "$@"\n')
        os.chmod(os.path.join(bindir, "delayqd"), 0o755)
        script = sh_script(doc, sh_blocks, port)
        with open(os.path.join(tmp, "doc.sh"), "w") as f:
            f.write(script)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        # The output goes to a file, not a pipe: a daemon left running by a failed block would
        # hold a pipe open.
        log_path = os.path.join(tmp, "out.txt")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(["bash", os.path.join(tmp, "doc.sh")], cwd=work, env=env,
                                    start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
            try:
                proc.wait(timeout=240)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                print(open(log_path).read())
                sys.exit(f"{doc}: the sh blocks did not finish in 240 s")
            finally:
                try:
                    os.killpg(proc.pid, 9)  # whatever the blocks left running
                except ProcessLookupError:
                    pass
        print(open(log_path).read())
        if proc.returncode != 0:
            sys.exit(f"{doc}: the sh block above the last '== {doc}:LINE' failed "
                     f"(exit {proc.returncode})")
        print(f"{doc} ok: {len(sh_blocks)} sh blocks ran; the flags of every other block exist")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
