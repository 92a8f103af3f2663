"""Measure Celerity's issue-3 lines over families of neighbouring points.

    python3 scenarios/celerity/robustness.py [--meshcast BIN] [--jobs N]
        [--set KEY=VALUE ...] [--limit N] [--json FILE] FAMILY

A figure that holds at the default point alone may be luck: the loop is
chaotic enough that a change anywhere moves a join or a 1-s bin at one
point. docs/celerity.md therefore reports its dumbbell, join and baseline
figures over families of points around the defaults; this script runs
them. FAMILY is one of:

- `step-beta`, `damping-delta`: scenarios/celerity/dumbbell.toml at
  fifteen points (step 0.0146-0.0154 x beta 17.9/18/18.1, or damping_ms
  1400-1600 x delta_kbps 9.9/10/10.1). Where a Celerity family varies
  `step`, it moves `settled_step` (the climb's step) in proportion. Per
  point: the window margin (the least, over sessions and the windows at
  200, 420 and 900 s, of the send rate and the lowest receiver's goodput
  less 95% of the window's optimum), each session's first 1-s bin at 95%
  of its optimum, and its dips (1-s bins under 90% from then until the
  scenario's first event, the cross traffic). A point is *clean* without dips and *full* when it
  is clean, every window passes and every first 95% comes within 20 s.
  After each later change of the optimum (the cross traffic's start at
  300 s and end at 500 s, the failure at 700 s): the seconds until every
  session has ten 1-s bins in a row at 90% of its new coded optimum.
- `joins`, `joins-wide`, `joins-shifted`: scenarios/celerity/peer-dynamics.toml
  at 9, 105 or 96 points (step x beta x delta). Per point: after each
  membership change, the seconds until the slowest session has ten 1-s
  bins in a row at 90% of its new coded optimum. The summary gives the
  joins' median, worst and how many are past 15 s (the issue's line).
- `mutualcast`, `simulcast`: the dumbbell's baselines at fifteen points
  (step x beta 8.9/9/9.1 or 17.9/18/18.1): the worst session's rate in
  [200,300] (the lesser of send and lowest receiver) and how many points
  are outside 10% of the 120-kbit/s maximum.

`--set` goes to every run after the family's own settings, `--limit`
runs only the first N points, and `--json` writes every point's figures
to FILE. The last line printed is the family's summary. BIN is found as
by score_underlays.py. Needs Python 3.11 or later.
"""
import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from score_underlays import (BACK_WITHIN_S, add_run_options, back_after, check_run_options,
                             coded_optimum, membership_changes, recv_series, run_summary,
                             sessions)

try:
    import tomllib
except ModuleNotFoundError:  # Python before 3.11
    sys.exit("robustness.py needs Python 3.11 or later (tomllib)")

HERE = os.path.dirname(os.path.abspath(__file__))


def grid(**axes):
    """Every combination of the axes' values, as lists of KEY=VALUE."""
    keys = list(axes)
    return [[f"conference.{k}={v}" for k, v in zip(keys, values)]
            for values in itertools.product(*(axes[k] for k in keys))]


# The default settled step over the default step (0.02 / 0.015): the climb's
# κ (docs/celerity.md, "The climb").
CLIMB_RATIO = 0.02 / 0.015


def with_climb(points):
    """The points with the climb's κ (`settled_step`) moved with `step` in
    proportion: the step axes of Celerity's families perturb κ in the climb
    after each quick-start window too, not only within and past it."""
    out = []
    for p in points:
        step = next(float(s.split("=", 1)[1]) for s in p if s.startswith("conference.step="))
        out.append(p + [f"conference.settled_step={step * CLIMB_RATIO:.6g}"])
    return out


STEPS = ["0.0146", "0.0148", "0.015", "0.0152", "0.0154"]
FAMILIES = {
    "step-beta": ("dumbbell.toml", with_climb(grid(step=STEPS, beta=["17.9", "18", "18.1"]))),
    "damping-delta": ("dumbbell.toml", grid(
        damping_ms=["1400", "1450", "1500", "1550", "1600"],
        delta_kbps=["9.9", "10", "10.1"])),
    "joins": ("peer-dynamics.toml", with_climb(grid(
        step=["0.0148", "0.015", "0.0152"], beta=["17.9", "18", "18.1"]))),
    "joins-wide": ("peer-dynamics.toml", with_climb(grid(
        step=["0.0144", "0.0146", "0.0148", "0.015", "0.0152", "0.0154", "0.0156"],
        beta=["17.8", "17.9", "18", "18.1", "18.2"],
        delta_kbps=["9.9", "10", "10.1"]))),
    "joins-shifted": ("peer-dynamics.toml", with_climb(grid(
        step=["0.0145", "0.0147", "0.0149", "0.0151", "0.0153", "0.0155"],
        beta=["17.85", "17.95", "18.05", "18.15"],
        delta_kbps=["9.85", "9.95", "10.05", "10.15"]))),
    "mutualcast": ("dumbbell-mutualcast.toml", grid(step=STEPS, beta=["8.9", "9", "9.1"])),
    "simulcast": ("dumbbell-simulcast.toml", grid(step=STEPS, beta=["17.9", "18", "18.1"])),
}
# The lines.
FIRST_95_S = 20
BASELINE_MAX_KBPS = 120.0


def window_rate(w):
    """A window's rate as issue 3 bounds it: the lesser of the send rate
    and the lowest receiver's goodput."""
    return min(w["send_kbps"], w["recv_kbps_min"])


def dumbbell_point(summary, first_event_s):
    margins, first, dips = [], {}, {}
    for f in sessions(summary):
        for w in f["windows"]:
            if w["from_s"] in (200, 420, 900):
                want = 0.95 * w["optimum_kbps"]
                margins.append(window_rate(w) - want)
        opt = coded_optimum(summary, f["source"], 0.0)
        r = recv_series(f)
        t95 = next((t for t, v in enumerate(r) if v >= 0.95 * opt), None)
        first[f["source"]] = t95
        end = len(r) if first_event_s >= len(r) else int(first_event_s)
        dips[f["source"]] = [] if t95 is None else [
            t for t in range(t95, end) if r[t] < 0.9 * opt]
    if not margins:
        raise ValueError("the scenario has none of the windows at 200, 420 and 900 s")
    margin = min(margins)
    late = [p for p, t in first.items() if t is None or t > FIRST_95_S]
    clean = not any(dips.values())
    # After each change of the optimum (the cross traffic's start and end,
    # the failure): seconds until every session is back at 90% of its new
    # optimum for ten seconds in a row.
    changes = [o["from_s"] for o in summary["optimum"] if o["from_s"] > 0]
    return {
        "margin_kbps": margin,
        "first_95_s": first,
        "dips_s": dips,
        "clean": clean,
        "full": clean and margin >= 0 and not late,
        "late_first_95": late,
        "changes": [{"t_s": t, "back_s": back_after(summary, t)} for t in changes],
    }


def joins_point(summary):
    changes = membership_changes(summary)
    if not changes:
        raise ValueError("the scenario has no membership change after the start")
    return {
        "changes": [{"t_s": m["t_s"], "node": m["node"], "event": m["event"],
                     "back_s": back_after(summary, m["t_s"])} for m in changes],
    }


def baseline_point(summary):
    rates = [window_rate(w)
             for f in sessions(summary) for w in f["windows"] if w["from_s"] == 200]
    if not rates:
        raise ValueError("the scenario has no window at 200 s")
    return {"worst_kbps": min(rates), "best_kbps": max(rates)}


def describe(kind, r):
    """One point's line."""
    if kind == "dumbbell":
        dips = {p: d for p, d in r["dips_s"].items() if d}
        backs = ", ".join(f"{c['t_s']:g}: " + ("never" if c["back_s"] is None else f"{c['back_s']}")
                          for c in r["changes"])
        return (f"margin {r['margin_kbps']:+.2f}, first 95% {r['first_95_s']}"
                + (f", dips {dips}" if dips else ", no dips")
                + (f", back after {{{backs}}} s" if backs else ""))
    if kind == "joins":
        return ", ".join(f"{c['event']} {c['node']} at {c['t_s']:.0f} s: "
                         + ("never back" if c["back_s"] is None else f"back in {c['back_s']} s")
                         for c in r["changes"])
    return f"worst {r['worst_kbps']:.1f}, best {r['best_kbps']:.1f} kbit/s"


def backs_by_change(results):
    """Each change's time with its points' seconds back, sorted (10**6 for
    never)."""
    times = sorted({c["t_s"] for r in results for c in r["changes"]})
    return [(t, sorted(10**6 if c["back_s"] is None else c["back_s"]
                       for r in results for c in r["changes"] if c["t_s"] == t))
            for t in times]


def summarise(kind, results):
    n = len(results)
    if kind == "dumbbell":
        margins = sorted(r["margin_kbps"] for r in results)
        slowest = sorted(max((t if t is not None else 10**6) for t in r["first_95_s"].values())
                         for r in results)
        return (f"{n} points: windows pass at {sum(m >= 0 for m in margins)} "
                f"(worst {margins[0]:+.2f}, median {statistics.median(margins):+.2f} kbit/s); "
                f"dips {sum(len(d) for r in results for d in r['dips_s'].values())}, "
                f"clean points {sum(r['clean'] for r in results)}, "
                f"full passes {sum(r['full'] for r in results)}; sessions with the first 95% "
                f"past {FIRST_95_S} s {sum(len(r['late_first_95']) for r in results)}, "
                f"slowest first 95% median {statistics.median(slowest):g} s, worst {slowest[-1]} s"
                + "".join(f"; back after {t:g} s median {statistics.median(b):g} s, worst "
                          + ("never" if b[-1] >= 10**6 else f"{b[-1]}")
                          for t, b in backs_by_change(results)))
    if kind == "joins":
        def slowest(event):
            out = []
            for r in results:
                backs = [c["back_s"] for c in r["changes"] if c["event"] == event]
                if backs:
                    out.append(max(10**6 if b is None else b for b in backs))
            return sorted(out)
        joins, leaves = slowest("join"), slowest("leave")
        text = f"{n} points"
        if joins:
            text += (f": slowest join median {statistics.median(joins):g} s, worst "
                     f"{'never' if joins[-1] >= 10**6 else joins[-1]}, past {BACK_WITHIN_S} s at "
                     f"{sum(j > BACK_WITHIN_S for j in joins)}, mean (each at most 60) "
                     f"{statistics.mean(min(j, 60) for j in joins):.2f} s")
        if leaves:
            text += (f"; slowest leave worst {'never' if leaves[-1] >= 10**6 else leaves[-1]}, "
                     f"past {BACK_WITHIN_S} s at {sum(x > BACK_WITHIN_S for x in leaves)}")
        return text
    worst = min(r["worst_kbps"] for r in results)
    outside = sum(r["worst_kbps"] < 0.9 * BASELINE_MAX_KBPS or r["best_kbps"] > 1.1 * BASELINE_MAX_KBPS
                  for r in results)
    return (f"{n} points: worst session {worst:.1f} kbit/s, points outside 10% of "
            f"{BASELINE_MAX_KBPS:.0f} kbit/s {outside}")


def main():
    ap = argparse.ArgumentParser(
        description="Celerity's issue-3 lines over families of neighbouring points "
        "(see the module's docstring).")
    ap.add_argument("family", choices=sorted(FAMILIES), metavar="FAMILY",
                    help="one of: " + ", ".join(sorted(FAMILIES)))
    add_run_options(ap)
    ap.add_argument("--limit", type=int, metavar="N", help="run only the first N points")
    args = ap.parse_args()
    check_run_options(args)
    if args.limit is not None and args.limit < 1:
        sys.exit("--limit must be at least 1")
    file, points = FAMILIES[args.family]
    points = points[:args.limit]
    scenario = os.path.join(HERE, file)
    kind = ("dumbbell" if file == "dumbbell.toml"
            else "joins" if file == "peer-dynamics.toml" else "baseline")
    first_event_s = None
    if kind == "dumbbell":
        with open(scenario, "rb") as f:
            events = tomllib.load(f).get("event", [])
        first_event_s = min((e["at_s"] for e in events), default=float("inf"))
    score = {"dumbbell": lambda s: dumbbell_point(s, first_event_s),
             "joins": joins_point, "baseline": baseline_point}[kind]
    results = []
    with tempfile.TemporaryDirectory() as out_root, \
            ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(run_summary, args.meshcast, scenario, p + args.set, out_root)
                for p in points]
        for i, (p, job) in enumerate(zip(points, jobs), 1):
            try:
                r = score(job.result())
            except (RuntimeError, ValueError) as e:
                for j in jobs:
                    j.cancel()
                sys.exit(str(e))
            r["point"] = p
            results.append(r)
            name = " ".join(s.removeprefix("conference.") for s in p)
            print(f"[{i}/{len(points)}] {name}: {describe(kind, r)}", flush=True)
    print(f"{args.family}: {summarise(kind, results)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
