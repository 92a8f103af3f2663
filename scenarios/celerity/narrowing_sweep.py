"""How soon Celerity's sessions come back after their link narrows.

    python3 scenarios/celerity/narrowing_sweep.py [--meshcast BIN] [--jobs N]
        [--dumbbell] [--at S ...] [--duration S] [--set KEY=VALUE ...]
        [--json FILE] [KBPS ...]

Runs `scenarios/celerity/narrowing.toml` (two members over one link of
600 kbit/s each way) with the link falling at `--at` (60 s) to each
KBPS (default 500 450 400 350 300 250 200), for `--duration` (180 s),
and prints for every session: the seconds from the fall until its
lowest receiver's 1-s goodput is at 90% of its new rate (0.95 of the
capacity, what the sessions carry of a link) for five seconds running,
how many seconds from the fall on some receiver got nothing, and the
lowest 1-s figure from five seconds after it came back to the end.
With `--dumbbell` it runs `scenarios/celerity/dumbbell-narrowing.toml`
instead (four members, the offices' link E<->F of 480 kbit/s each way
falling at 100 s, for 220 s, to 440 400 360 320 280 240 200 by
default), where two sessions share each direction of the link: a
session's new rate is 0.95 of half the capacity.
`--at` may be given several times: every capacity is then run with the
fall at each time, and each line names its time. The last line sums the
points up: the slowest session's return on the mean over the points and
at the worst (a point whose slowest session never came back counts the
run's length after the fall), and the most seconds with nothing on the
mean.
`--set` is handed to every run (e.g. `--set conference.drain_hold=0`),
`--jobs` runs N at a time (2), `--json` also writes every session's
figures to FILE (keyed by capacity, and with several `--at` by the
time first), and BIN is found as by score_underlays.py.
docs/celerity.md, "A link that narrows" and "An overload that has
drained", has the tables this prints.
"""
import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from score_underlays import add_run_options, check_run_options, run_summary, sessions

HERE = os.path.dirname(os.path.abspath(__file__))


class Setup(NamedTuple):
    """A scenario whose first event is the link's fall."""
    scenario: str
    windows: int  # its report windows
    sharing: int  # sessions sharing a direction of the link
    start: int  # the link's capacity before the fall, kbit/s
    at: int  # --at's default
    duration: int  # --duration's default
    kbps: list  # the capacities' default


TWO = Setup(os.path.join(HERE, "narrowing.toml"), 1, 1, 600, 60, 180,
            [500, 450, 400, 350, 300, 250, 200])
DUMBBELL = Setup(os.path.join(HERE, "dumbbell-narrowing.toml"), 2, 2, 480, 100, 220,
                 [440, 400, 360, 320, 280, 240, 200])
# The share of a link's capacity its sessions carry as payload, and the
# share of that which counts as back.
CARRIED = 0.95
BACK = 0.9
# Seconds in a row at the mark that count as back.
RUN = 5


def point(meshcast, setup, kbps, at, duration, sets, out_root):
    """One run with the link falling to `kbps`: each session's figures."""
    own = [f"duration_s={duration}", f"event[0].capacity_kbps={kbps}", f"event[0].at_s={at}"]
    # The scenario's windows may not fit a shorter run.
    for w in range(setup.windows):
        own += [f"report.window[{w}].from_s={min(at + 1, duration - 1)}",
                f"report.window[{w}].to_s={duration}"]
    summary = run_summary(meshcast, setup.scenario, own + sets, out_root)
    rate = CARRIED * kbps / setup.sharing
    mark = BACK * rate
    figures = {}
    for f in sessions(summary):
        s = {x["t_s"]: x["recv_kbps_min"] for x in f.get("series") or []}
        back = next((t for t in range(at, duration - RUN + 1)
                     if all(s.get(u, 0.0) >= mark for u in range(t, t + RUN))), None)
        after = [s.get(t, 0.0) for t in range(back + RUN, duration)] if back is not None else []
        figures[f["id"]] = {
            "back_s": None if back is None else back - at,
            "silent_s": sum(1 for t in range(at, duration) if s.get(t, 0.0) == 0.0),
            "lowest_after": round(min(after) / rate, 3) if after else None,
        }
    return figures


def text(sid, f, span):
    if f["back_s"] is None:
        return f"{sid}: not back in {span} s, {f['silent_s']} s with nothing"
    low = "" if f["lowest_after"] is None else f", lowest after {f['lowest_after']:.2f} of its rate"
    return f"{sid}: back in {f['back_s']} s, {f['silent_s']} s with nothing{low}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_options(ap)
    ap.add_argument("--dumbbell", action="store_true",
                    help="the four-member dumbbell whose E<->F narrows")
    ap.add_argument("--at", type=int, metavar="S", action="append")
    ap.add_argument("--duration", type=int, metavar="S")
    ap.add_argument("kbps", nargs="*", type=int)
    a = ap.parse_args()
    check_run_options(a)
    setup = DUMBBELL if a.dumbbell else TWO
    a.at = a.at or [setup.at]
    a.duration = setup.duration if a.duration is None else a.duration
    a.kbps = a.kbps or setup.kbps
    if not all(0 < at < a.duration for at in a.at):
        sys.exit("--at must be within the run")
    if any(k <= 0 for k in a.kbps):
        sys.exit("capacities must be positive")
    points = [(at, k) for at in a.at for k in a.kbps]
    rows = {at: {} for at in a.at}
    with tempfile.TemporaryDirectory() as out_root, ThreadPoolExecutor(a.jobs) as pool:
        jobs = [pool.submit(point, a.meshcast, setup, k, at, a.duration, a.set, out_root)
                for at, k in points]
        for (at, kbps), job in zip(points, jobs):
            try:
                figures = job.result()
            except RuntimeError as e:
                sys.exit(str(e))
            rows[at][kbps] = figures
            cells = [text(sid, f, a.duration - at) for sid, f in sorted(figures.items())]
            when = f"fall at {at} s, " if len(a.at) > 1 else ""
            print(f"{when}{setup.start} -> {kbps} kbit/s: " + "; ".join(cells), flush=True)
    print(sum_up(rows, a.duration))
    if a.json:
        keyed = {str(at): {str(k): v for k, v in r.items()} for at, r in rows.items()}
        with open(a.json, "w") as out:
            json.dump(keyed[str(a.at[0])] if len(a.at) == 1 else keyed, out, indent=1)


def sum_up(rows, duration):
    """The last line: the points' slowest returns and seconds with nothing."""
    slowest, silent, never = [], [], 0
    for at, by_kbps in rows.items():
        for figures in by_kbps.values():
            backs = [f["back_s"] for f in figures.values()]
            never += any(b is None for b in backs)
            slowest.append(max(duration - at if b is None else b for b in backs))
            silent.append(max(f["silent_s"] for f in figures.values()))
    n = len(slowest)
    line = (f"{n} point{'s' if n != 1 else ''}: the slowest session back in "
            f"{sum(slowest) / n:.1f} s on the mean, {max(slowest)} s at the worst")
    if never:
        line += f" ({never} not back within the run)"
    return line + f"; the most seconds with nothing {sum(silent) / n:.1f} on the mean"


if __name__ == "__main__":
    main()
