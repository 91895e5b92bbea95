#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what plain `go test` prints —
each package's ok/FAIL line, and the whole output of every test that failed
or was skipped with a reason — then the slowest tests, so a CI log says
where its time went, and last a recap of what failed, so that even the
tail of a CI log says which test failed and why.

A test binary that times out (or crashes) ends without its running tests
ending: go test attributes the panic and every goroutine's stack to the
test that was running, and no pass or fail event ever closes it. Such a
test is printed when its package fails, as UNFINISHED, with the panic, the
list of running tests and the stacks of the goroutines in this module's
code (the runtime's and the testing package's own are left out).

With GOTEST_TIMES=FILE it also writes every top-level test's time to
FILE, one "seconds package test" line each, slowest first (what a change
of the suite's budget is planned from).

The exit status is go test's (the caller uses pipefail); this script fails
only on input it cannot read."""
import json
import os
import re
import sys

SLOWEST = 15
MODULE = "github.com/ctrbench/ctrbench"
STACK_LINES = 200   # of an unfinished test's goroutines, at most
RECAP = 25          # failures listed at the end, at most


def goroutines(lines):
    """Splits a panic's output into the text before the first goroutine
    and each goroutine's block."""
    head, blocks, cur = [], [], None
    for line in lines:
        if re.match(r"goroutine \d+ \[", line):
            cur = [line]
            blocks.append(cur)
        elif cur is not None:
            cur.append(line)
        else:
            head.append(line)
    return head, blocks


def unfinished(lines):
    """What to print of an unfinished test's output: all of it up to the
    panic, then the goroutines that run this module's code."""
    head, blocks = goroutines(lines)
    ours = [b for b in blocks if any(MODULE in l for l in b)]
    out = head + [l for b in ours for l in b]
    if len(out) > STACK_LINES:
        out = out[:STACK_LINES] + ["... (%d more lines)\n" % (len(out) - STACK_LINES)]
    return out


def waits(lines, most=4):
    """Where this module's goroutines were when the binary ended: the
    first frame of this module in each, with its state, e.g.
    "swarm.(*instance).watch instance.go:338 [select]"."""
    _, blocks = goroutines(lines)
    seen = []
    for b in blocks:
        state = re.match(r"goroutine \d+ \[([^,\]]+)", b[0]).group(1)
        for i, l in enumerate(b[1:], 1):
            if l.startswith(MODULE) and i + 1 < len(b):
                fn = re.sub(r"\(0x[^)]*\)$|\(\.\.\.\)$|\(\)$", "", l.strip()[len(MODULE) + 1:])
                fn = fn.split("/")[-1]
                at = b[i + 1].strip().split(" ")[0].rsplit("/", 1)[-1]
                w = "%s %s [%s]" % (fn, at, state)
                if w not in seen:
                    seen.append(w)
                break
    if len(seen) > most:
        seen = seen[:most] + ["%d more" % (len(seen) - most)]
    return "; ".join(seen)


def reason(lines):
    """One line saying why a test failed: a panic, or else its last
    file:line message (an error usually ends a failed test's output)."""
    for line in lines:
        s = line.strip()
        if s.startswith("panic:"):
            return s[:200]
    for line in reversed(lines):
        s = line.strip()
        if re.match(r"\S+\.go:\d+: ", s):
            return s[:200]
    for line in lines:
        s = line.strip()
        if s and not s.startswith(("=== ", "--- ")):
            return s[:200]
    return ""


def main():
    pending = {}   # (package, test) -> its output lines so far
    elapsed = []   # (seconds, package, test) of top-level tests
    failures = []  # (package, test or "", what)
    held = ""      # a package's FAIL line, until its fail event
    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except ValueError:
            sys.stdout.write(line)  # a build error, printed as go prints it
            continue
        pkg, test, action = ev.get("Package", ""), ev.get("Test"), ev.get("Action")
        if test is None:
            if action == "output":
                out = ev.get("Output", "")
                if out.startswith("FAIL\t"):
                    held = out  # printed after the package's unfinished tests
                elif not out.startswith(("=== ", "PASS\n", "--- PASS")):
                    sys.stdout.write(out)
            elif action == "fail":
                left = sorted(k for k in pending if k[0] == pkg)
                for key in left:
                    lines = pending.pop(key)
                    sys.stdout.write("--- UNFINISHED: %s (the test binary ended while it ran: a timeout or a crash)\n" % key[1])
                    sys.stdout.write("".join(unfinished(lines)))
                    # The innermost running test carries the panic.
                    if not any(k[1].startswith(key[1] + "/") for k in left):
                        why, where = reason(lines), waits(lines)
                        if where:
                            why += " — this module's goroutines: " + where
                        failures.append((pkg, key[1], "unfinished: " + why))
                sys.stdout.write(held)
                held = ""
                if not any(f[0] == pkg for f in failures):
                    failures.append((pkg, "", "the package failed (see its output above)"))
            sys.stdout.flush()
            continue
        key = (pkg, test)
        if action == "output":
            pending.setdefault(key, []).append(ev.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            lines = pending.pop(key, [])
            if action == "fail" or (action == "skip" and "/" not in test):
                sys.stdout.write("".join(lines))
            if action == "fail":
                failures.append((pkg, test, reason(lines)))
            if "/" not in test and action != "skip":
                elapsed.append((ev.get("Elapsed", 0.0), pkg, test))
        sys.stdout.flush()
    sys.stdout.write(held)
    elapsed.sort(reverse=True)
    if os.environ.get("GOTEST_TIMES"):
        with open(os.environ["GOTEST_TIMES"], "a") as f:
            for secs, pkg, test in elapsed:
                f.write("%.1f %s %s\n" % (secs, pkg.rsplit("/", 1)[-1], test))
    if elapsed:
        total = sum(e[0] for e in elapsed)
        print("\nslowest tests (of %d, %.0f s in all):" % (len(elapsed), total))
        for secs, pkg, test in elapsed[:SLOWEST]:
            print("  %7.1f s  %s %s" % (secs, pkg.rsplit("/", 1)[-1], test))
    if failures:
        print("\nfailed (%d):" % len(failures))
        for pkg, test, why in failures[:RECAP]:
            print("  %s %s: %s" % (pkg.rsplit("/", 1)[-1], test or "(package)", why))
        if len(failures) > RECAP:
            print("  ... and %d more" % (len(failures) - RECAP))


if __name__ == "__main__":
    main()
