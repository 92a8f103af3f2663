"""Check issue 3's acceptance lines at the default point and print them.

    python3 scenarios/celerity/acceptance.py [--meshcast BIN] [--jobs N]
        [--set KEY=VALUE ...] [--json FILE]

Runs the scenarios issue 3 names (scenarios/celerity/dumbbell.toml with
Celerity, with `variant = "paper"`, with Simulcast and with Mutualcast,
and peer-dynamics.toml), asks `meshcast optimum` for the dumbbell's
optimum at 0, 400 and 800 s, and prints one markdown table row per
acceptance line: what the issue asks, what was measured, and whether it
holds. The table is the one docs/celerity.md's "Status" section shows.
The exit status is 1 when a line does not hold, so the script doubles as
a check after a change to the loop.

The lines, as issue 3 words them:

- [200,300]: every session's send rate and lowest receiver's goodput at
  95% of its optimum, mean delay at most 200 ms, loss at most 2%.
- The start: every session's 1-s lowest-receiver goodput first at 95% of
  its optimum within 20 s, and from then on never under 90% until the
  cross traffic starts (the scenario's first event).
- [420,500]: A and B at 95% of the issue's 200 kbit/s (the optimum the
  summary computes, 198.9, counts the cross traffic's IP/UDP headers and
  is shown beside it), C and D at 95% of 240.
- [900,1000]: every session at 95% of 240; with `variant = "paper"` A
  within 10% of its 2-hop optimum (about 120).
- Simulcast and Mutualcast in [200,300]: every session within 10% of 120.
- Header and control overhead in [200,300] at most 3.9% of the bytes the
  participants sent.
- Peer dynamics: within 15 s of D's join and of its leave, every session
  has ten 1-s bins in a row at 90% of its new optimum.
- `meshcast optimum`: 240 coded and 2-hop and 120 Simulcast at 0 s; A
  and B 200 (within 1%: the cross traffic's headers) and C and D 240 at
  400 s; A 120 2-hop (within 5%) and 240 coded after the failure.
- The 1000-s dumbbell in under 10 s of wall time, and the same summary
  from the same seed (two runs, compared without `wall_s`).

`--set` goes to every run (the optimum's too), so a parameter's effect
on the whole list is one command. Random underlays, the issue's last
line, have no number in the issue: score_underlays.py scores them.
BIN is found as by score_underlays.py. Needs Python 3.11 or later.
"""
import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from robustness import FIRST_95_S, baseline_point, dumbbell_point, joins_point, window_rate
from score_underlays import (add_run_options, check_run_options, run_optimum, run_summary,
                             sessions)

HERE = os.path.dirname(os.path.abspath(__file__))
DUMBBELL = os.path.join(HERE, "dumbbell.toml")
# The first event of dumbbell.toml: the cross traffic at 300 s.
CROSS_TRAFFIC_S = 300
WALL_LIMIT_S = 10.0


def window(flow, from_s):
    found = [w for w in flow["windows"] if w["from_s"] == from_s]
    if not found:
        raise ValueError(f"session {flow['source']} has no window at {from_s} s")
    return found[0]


def by_source(summary):
    return {f["source"]: f for f in sessions(summary)}


def near(value, want, tolerance):
    return abs(value - want) <= tolerance * want


class Table:
    """The rows: (line, measured, holds)."""

    def __init__(self):
        self.rows = []

    def add(self, line, measured, holds):
        self.rows.append({"line": line, "measured": measured, "holds": bool(holds)})

    def markdown(self):
        out = ["| line | measured | holds |", "|---|---|---|"]
        out += [f"| {r['line']} | {r['measured']} | {'yes' if r['holds'] else '**no**'} |"
                for r in self.rows]
        return "\n".join(out)


def check_windows(t, dumbbell):
    flows = by_source(dumbbell)
    steady = {p: window(f, 200) for p, f in flows.items()}
    t.add("[200,300]: send and lowest receiver at 95% of the optimum (240)",
          ", ".join(f"{p} {w['send_kbps']:.1f}/{w['recv_kbps_min']:.1f}"
                    for p, w in steady.items()),
          all(window_rate(w) >= 0.95 * w["optimum_kbps"] for w in steady.values()))
    delays = [w["delay_ms_mean"] for w in steady.values()]
    losses = [w["loss"] or 0.0 for w in steady.values()]
    t.add("[200,300]: mean delay at most 200 ms, loss at most 2%",
          f"delay {min(delays):.0f}–{max(delays):.0f} ms, loss at most {100 * max(losses):.2f}%",
          max(delays) <= 200 and max(losses) <= 0.02)
    cross = {p: window(f, 420) for p, f in flows.items()}
    want = {p: 200.0 if p in ("A", "B") else 240.0 for p in cross}
    t.add("[420,500] (cross traffic): A and B at 95% of 200, C and D at 95% of 240",
          ", ".join(f"{p} {window_rate(w):.1f} (optimum {w['optimum_kbps']:.1f})"
                    for p, w in cross.items()),
          all(window_rate(w) >= 0.95 * want[p] for p, w in cross.items()))
    failed = {p: window(f, 900) for p, f in flows.items()}
    t.add("[900,1000] (A–E down): every session at 95% of 240",
          ", ".join(f"{p} {window_rate(w):.1f}" for p, w in failed.items()),
          all(window_rate(w) >= 0.95 * 240.0 for w in failed.values()))
    overhead = [w for w in dumbbell["overhead"]["windows"] if w["from_s"] == 200]
    if not overhead:
        raise ValueError("the dumbbell's summary has no overhead window at 200 s")
    o = overhead[0]
    total = o["header_fraction"] + o["control_fraction"]
    t.add("[200,300]: header and control overhead at most 3.9% of the bytes sent",
          f"{100 * total:.2f}% (header {100 * o['header_fraction']:.2f}%, "
          f"control {100 * o['control_fraction']:.2f}%)",
          total <= 0.039)


def check_start(t, dumbbell):
    p = dumbbell_point(dumbbell, CROSS_TRAFFIC_S)
    firsts = p["first_95_s"]
    t.add(f"the start: first 1-s bin at 95% within {FIRST_95_S} s",
          ", ".join(f"{s} {'never' if v is None else f'{v} s'}" for s, v in firsts.items()),
          not p["late_first_95"])
    dips = {s: d for s, d in p["dips_s"].items() if d}
    t.add(f"the start: no 1-s bin under 90% from then until {CROSS_TRAFFIC_S} s",
          "none" if not dips else "; ".join(f"{s} at {d} s" for s, d in dips.items()),
          not dips)


def check_paper(t, paper, twohop_a):
    a = window_rate(window(by_source(paper)["A"], 900))
    t.add("`variant = \"paper\"`, [900,1000]: A near its 2-hop optimum (within 10%)",
          f"A {a:.1f} (2-hop optimum {twohop_a:.1f})", near(a, twohop_a, 0.10))


def check_baselines(t, name, summary):
    b = baseline_point(summary)
    t.add(f"{name}, [200,300]: every session within 10% of 120",
          f"{b['worst_kbps']:.1f}–{b['best_kbps']:.1f}",
          b["worst_kbps"] >= 108.0 and b["best_kbps"] <= 132.0)


def check_dynamics(t, dynamics):
    for c in joins_point(dynamics)["changes"]:
        back = c["back_s"]
        t.add(f"peer dynamics: every session back at 90% within 15 s after {c['node']}'s "
              f"{c['event']} at {c['t_s']:.0f} s",
              "never" if back is None else f"{back} s", back is not None and back <= 15)


def check_optimum(t, at0, at400, at800):
    t.add("`meshcast optimum --at 0`: 240 coded and 2-hop, 120 Simulcast",
          f"coded {sorted(set(at0['coded'].values()))}, 2-hop "
          f"{sorted(set(at0['twohop'].values()))}, Simulcast {sorted(set(at0['simulcast'].values()))}",
          all(near(v, 240, 0.001) for v in [*at0["coded"].values(), *at0["twohop"].values()])
          and all(near(v, 120, 0.001) for v in at0["simulcast"].values()))
    c = at400["coded"]
    t.add("`--at 400` (cross traffic): A and B 200 (within 1%), C and D 240",
          ", ".join(f"{p} {v:.1f}" for p, v in c.items()),
          near(c["A"], 200, 0.01) and near(c["B"], 200, 0.01)
          and near(c["C"], 240, 0.001) and near(c["D"], 240, 0.001))
    t.add("`--at 800` (A–E down): A 120 2-hop (within 5%), every session 240 coded",
          f"A 2-hop {at800['twohop']['A']:.1f}, coded {sorted(set(at800['coded'].values()))}",
          near(at800["twohop"]["A"], 120, 0.05)
          and all(near(v, 240, 0.001) for v in at800["coded"].values()))


def check_run(t, first, again):
    wall = max(first["wall_s"], again["wall_s"])
    t.add(f"the 1000-s dumbbell in under {WALL_LIMIT_S:.0f} s of wall time (release build)",
          f"{first['wall_s']:.2f} s and {again['wall_s']:.2f} s", wall < WALL_LIMIT_S)
    strip = [{k: v for k, v in s.items() if k != "wall_s"} for s in (first, again)]
    t.add("same seed, same summary (two runs, without `wall_s`)",
          "identical" if strip[0] == strip[1] else "different", strip[0] == strip[1])


def main():
    ap = argparse.ArgumentParser(
        description="Issue 3's acceptance lines at the default point (see the module's "
        "docstring).")
    add_run_options(ap)
    args = ap.parse_args()
    check_run_options(args)
    runs = {
        "dumbbell": ("dumbbell.toml", []),
        "again": ("dumbbell.toml", []),
        "paper": ("dumbbell.toml", ["conference.variant=paper"]),
        "simulcast": ("dumbbell-simulcast.toml", []),
        "mutualcast": ("dumbbell-mutualcast.toml", []),
        "dynamics": ("peer-dynamics.toml", []),
    }
    with tempfile.TemporaryDirectory() as out_root, ThreadPoolExecutor(args.jobs) as pool:
        jobs = {k: pool.submit(run_summary, args.meshcast, os.path.join(HERE, f),
                               own + args.set, out_root)
                for k, (f, own) in runs.items()}
        optima = {at: pool.submit(run_optimum, args.meshcast, DUMBBELL, args.set, at)
                  for at in (0, 400, 800)}
        try:
            done = {}
            for k, job in jobs.items():
                done[k] = job.result()
                print(f"ran {k} ({runs[k][0]}, {done[k]['wall_s']:.2f} s)", file=sys.stderr,
                      flush=True)
            at = {a: job.result() for a, job in optima.items()}
        except (RuntimeError, ValueError) as e:
            sys.exit(str(e))
    t = Table()
    try:
        check_windows(t, done["dumbbell"])
        check_start(t, done["dumbbell"])
        check_paper(t, done["paper"], at[800]["twohop"]["A"])
        check_baselines(t, "Simulcast", done["simulcast"])
        check_baselines(t, "Mutualcast", done["mutualcast"])
        check_dynamics(t, done["dynamics"])
        check_optimum(t, at[0], at[400], at[800])
        check_run(t, done["dumbbell"], done["again"])
    except (KeyError, ValueError) as e:
        sys.exit(f"a summary lacks what the check needs: {e}")
    print(t.markdown())
    held = sum(r["holds"] for r in t.rows)
    print(f"\n{held} of {len(t.rows)} lines hold")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(t.rows, f, indent=1)
    sys.exit(0 if held == len(t.rows) else 1)


if __name__ == "__main__":
    main()
