"""The Python half of benches/snapshot.rs (issue 19 item 7): `LocalBrowser.execute` of the
default snapshot command on the page at URL, timed from Python, and `LocalBrowser.snapshot()`.

Usage: python snapshot_py.py URL RUNS WARM: a fresh browser, the page, WARM untimed calls, then
RUNS timed ones, as the Rust side does. Prints one JSON line: {"ms": median of execute,
"snapshot_ms": median of LocalBrowser.snapshot(), "chars": characters of the text}.
Exit 3 when the jevgate module is not importable (the bench then skips its Python half).
"""

import json
import statistics
import sys
import time

try:
    import jevgate
except ImportError as e:  # the bench prints a note and goes on
    print(f"jevgate is not importable: {e}", file=sys.stderr)
    sys.exit(3)


def median_ms(f, runs):
    times = []
    out = None
    for _ in range(runs):
        t = time.perf_counter()
        out = f()
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times), out


def main():
    url, runs, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with jevgate.LocalBrowser() as browser:
        browser.navigate(url)
        command = {"tool": "snapshot", "args": {}}
        for _ in range(warm):
            browser.execute(command)
        ms, result = median_ms(lambda: browser.execute(command), runs)
        snapshot_ms, _ = median_ms(browser.snapshot, runs)
    print(json.dumps({"ms": ms, "snapshot_ms": snapshot_ms, "chars": len(result["text"])}))


if __name__ == "__main__":
    main()
