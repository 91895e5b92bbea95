#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what plain `go test` prints —
each package's ok/FAIL line, and the whole output of every test that failed
or was skipped with a reason — then the slowest tests, so a CI log says
where its time went. The exit status is go test's (the caller uses
pipefail); this script fails only on input it cannot read."""
import json
import sys

SLOWEST = 15

def main():
    pending = {}   # (package, test) -> its output lines so far
    elapsed = []   # (seconds, package, test) of top-level tests
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
                if not out.startswith(("=== ", "PASS\n", "--- PASS")):
                    sys.stdout.write(out)
            continue
        key = (pkg, test)
        if action == "output":
            pending.setdefault(key, []).append(ev.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            lines = pending.pop(key, [])
            if action == "fail" or (action == "skip" and "/" not in test):
                sys.stdout.write("".join(lines))
            if "/" not in test and action != "skip":
                elapsed.append((ev.get("Elapsed", 0.0), pkg, test))
        sys.stdout.flush()
    elapsed.sort(reverse=True)
    if elapsed:
        total = sum(e[0] for e in elapsed)
        print("\nslowest tests (of %d, %.0f s in all):" % (len(elapsed), total))
        for secs, pkg, test in elapsed[:SLOWEST]:
            print("  %7.1f s  %s %s" % (secs, pkg.rsplit("/", 1)[-1], test))


if __name__ == "__main__":
    main()
