"""How soon Celerity's sessions come back after their link narrows.

    python3 scenarios/celerity/narrowing_sweep.py [--meshcast BIN]
        [--at S] [--duration S] [--set KEY=VALUE ...] [KBPS ...]

Runs `scenarios/celerity/narrowing.toml` (two members over one link of
600 kbit/s each way) with the link falling at `--at` (60 s) to each
KBPS (default 500 450 400 350 300 250 200), for `--duration` (180 s),
and prints for every session: the seconds from the fall until its
lowest receiver's 1-s goodput is at 90% of its new rate (0.95 of the
capacity, what the sessions carry of a link) for five seconds running,
how many seconds from the fall on some receiver got nothing, and the
lowest 1-s figure from five seconds after it came back to the end.
`--set` is handed to every run (e.g. `--set conference.drain_hold=0`).
docs/celerity.md, "A link that narrows", has the table this prints.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "narrowing.toml")
# The share of a link's capacity its sessions carry as payload, and the
# share of that which counts as back.
CARRIED = 0.95
BACK = 0.9
# Seconds in a row at the mark that count as back.
RUN = 5


def default_meshcast():
    built = os.path.join(os.path.dirname(os.path.dirname(HERE)), "target", "release", "meshcast")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("meshcast")


def series(meshcast, kbps, at, duration, sets):
    """Each session's lowest receiver's goodput, second by second."""
    with tempfile.TemporaryDirectory() as out:
        args = [meshcast, "run", SCENARIO, "--json", "--out", out,
                "--set", f"event[0].capacity_kbps={kbps}", "--set", f"event[0].at_s={at}",
                "--set", f"duration_s={duration}",
                # The scenario's window may not fit a shorter run.
                "--set", f"report.window[0].from_s={min(90, duration - 1)}",
                "--set", f"report.window[0].to_s={duration}"]
        for s in sets:
            args += ["--set", s]
        done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"meshcast run failed for {kbps} kbit/s: {done.stderr.strip()}")
        got = {}
        with open(os.path.join(out, "series.csv")) as f:
            for r in csv.DictReader(f):
                if r["entity"] == "flow" and r["metric"] == "recv_kbps_min":
                    got.setdefault(r["id"], {})[int(float(r["t_s"]))] = float(r["value"])
        return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meshcast", default=default_meshcast(), metavar="BIN")
    ap.add_argument("--at", type=int, default=60, metavar="S")
    ap.add_argument("--duration", type=int, default=180, metavar="S")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("kbps", nargs="*", type=int,
                    default=[500, 450, 400, 350, 300, 250, 200])
    a = ap.parse_args()
    if not a.meshcast:
        sys.exit("no meshcast binary: build it with `cargo build --release` or pass --meshcast")
    if not 0 < a.at < a.duration:
        sys.exit("--at must be within the run")
    if any(k <= 0 for k in a.kbps):
        sys.exit("capacities must be positive")
    for kbps in a.kbps:
        mark = BACK * CARRIED * kbps
        cells = []
        for sid, s in sorted(series(a.meshcast, kbps, a.at, a.duration, a.set).items()):
            back = next((t for t in range(a.at, a.duration - RUN + 1)
                         if all(s.get(u, 0.0) >= mark for u in range(t, t + RUN))), None)
            silent = sum(1 for t in range(a.at, a.duration) if s.get(t, 0.0) == 0.0)
            if back is None:
                cells.append(f"{sid}: not back in {a.duration - a.at} s, {silent} s with nothing")
                continue
            after = [s.get(t, 0.0) for t in range(back + RUN, a.duration)]
            low = f", lowest after {min(after) / (CARRIED * kbps):.2f} of its rate" if after else ""
            cells.append(f"{sid}: back in {back - a.at} s, {silent} s with nothing{low}")
        print(f"600 -> {kbps} kbit/s: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
