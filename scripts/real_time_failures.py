#!/usr/bin/env python3
"""Says whether the failures of a ctest run may be run once more, alone.

    real_time_failures.py BUILD_DIR CTEST_OUTPUT

Exit 0, printing the failed tests, when every failure is an assertion of a
test that runs real gRPC on the wall clock (label "e2e" or "grpc"): such a
test can miss a window on a loaded machine, and scripts/test.sh runs it
again alone and reports it as flaky if it then passes. Exit 1, printing why,
for anything else: a test on simulated time (no second chance: it is
deterministic), a crash, a timeout (a hang is a defect), a sanitizer's
report anywhere in the output, or more failures than a loaded machine
explains.
"""

import json
import re
import subprocess
import sys

REAL_TIME_LABELS = {"e2e", "grpc"}
MAX_FAILURES = 5
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer",
                   "MemorySanitizer", "runtime error:")


def refuse(why):
    print(f"no second run: {why}")
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        refuse("usage: real_time_failures.py BUILD_DIR CTEST_OUTPUT")
    build_dir, output_path = sys.argv[1], sys.argv[2]
    try:
        with open(f"{build_dir}/Testing/Temporary/LastTestsFailed.log") as f:
            failed = [line.rstrip("\n").split(":", 1) for line in f if ":" in line]
        with open(output_path, errors="replace") as f:
            output = f.read()
    except OSError as e:
        refuse(f"cannot read the run's results ({e})")
    if not failed:
        refuse("ctest failed without a failed test (a build or configuration error)")
    if len(failed) > MAX_FAILURES:
        refuse(f"{len(failed)} tests failed, more than {MAX_FAILURES}")
    for mark in SANITIZER_MARKS:
        if mark in output:
            refuse(f'a sanitizer reported ("{mark}" in the output)')

    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir,
                             capture_output=True, text=True, check=True)
    labels = {}
    for test in json.loads(listing.stdout)["tests"]:
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS":
                labels[test["name"]] = set(prop["value"])

    for number, name in failed:
        if not labels.get(name, set()) & REAL_TIME_LABELS:
            refuse(f"{name} runs on simulated time or without gRPC "
                   f"(labels: {', '.join(sorted(labels.get(name, []))) or 'none'})")
        result = re.search(rf"Test +#{number}: .*\*\*\*(\S+)", output)
        if result is None or result.group(1) != "Failed":
            refuse(f"{name} ended {result.group(1) if result else 'without a result line'}, "
                   "not with a failed assertion")
    for _, name in failed:
        print(name)


if __name__ == "__main__":
    main()
