"""Score Celerity on a set of underlays against the coded optimum.

    python3 scenarios/celerity/score_underlays.py [--meshcast BIN] [--jobs N]
        [--json FILE] [--set KEY=VALUE ...]
        [--seeds K [--first-seed F] [--spread-ms MS]] SCENARIO...

Runs `meshcast run SCENARIO --json` for every scenario (N at a time,
default 2), and for each one prints the session whose lowest receiver got
the smallest fraction of its coded optimum in the first report window
(`recv_kbps_min / optimum_kbps`), that session's loss, and the worst loss
of any session. The last line is the row docs/celerity.md's "Thirty
underlays" table reports: the mean, median and lowest of the worst
fractions, how many scenarios have every session at 0.8 or more, and how
many have no session losing more than 5%, then the sessions' drops in the
windows by cause (`dropped` in the summary: late, policed at a head, link
down), which say where the loss came from, the mean session's loss and
fraction of its optimum (over every session of every scenario; the status
table's last figure), and the start: the mean
second at which a session is first heard (its lowest receiver's 1-s
goodput at half its optimum; the run's length if never), the mean of each
underlay's last session's, and the mean number of the first minute's
seconds in which some receiver got nothing of a session. `--set` is
handed to every run (e.g. `--set conference.pace_to_heads=true`);
`--json` also writes every scenario's figures to FILE, and
`compare_scores.py BEFORE.json AFTER.json` compares two such files
underlay by underlay.

`--seeds K` (K >= 2) scores every scenario as the mean of K runs, with
seeds F..F+K-1 (`--first-seed F`, default 1; another F draws other
samples, which measures how far two such means differ at all) and the
members' starts spread over `--spread-ms` (default 20;
`conference.start_spread_ms`): the simulator is deterministic, so one run
is one sample of the control loops' chaotic path, and a neighbouring
parameter value moves an underlay's worst fraction by a few hundredths
either way. Each underlay's figures are then the runs' means (its worst
fraction the mean of the runs' worst fractions, its count at the line
whether that mean holds it, its drops the mean per run), its worst session
the one with the lowest mean fraction, and its JSON row adds `runs` (each
run's seed, worst fraction and worst session) and `worst_fraction_sd` (the
runs' standard deviation). `compare_scores.py` compares such files as any
others (docs/celerity.md, "Scoring over seeds").

The usual set is the thirty random underlays:

    python3 scenarios/celerity/random_underlay.py 1 31 /tmp/ru
    python3 scenarios/celerity/score_underlays.py /tmp/ru/r*.toml

and `random_underlay.py --family long|wide|fast|edge|large` draws the
families nobody tuned for (docs/celerity.md, "Underlays nobody tuned for";
`large` has 9-16 members, "Large conferences").

BIN defaults to target/release/meshcast under the repository (build it
with `cargo build --release`), else `meshcast` on the PATH.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    tomllib = None


def default_meshcast():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    built = os.path.join(root, "target", "release", "meshcast")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("meshcast")


def sessions(summary):
    """The conference sessions among a run's flows."""
    return [f for f in summary["flows"] if f["kind"] == "session"]


# The start's figures: a session is heard once its lowest receiver's 1-s
# goodput reaches this share of its optimum, and a second is silent for it
# while some receiver gets nothing of it, counted over `START_SPAN` seconds.
HEARD = 0.5
START_SPAN = 60


def start_figures(f, opt, duration):
    """A session's start (`f` a session flow of a summary, `opt` its
    optimum): the first second at which its lowest receiver got `HEARD` of
    `opt` (the run's duration if never), and how many of the first
    `START_SPAN` seconds some receiver got nothing of it."""
    series = f.get("series") or []
    heard = next((x["t_s"] for x in series if x["recv_kbps_min"] >= HEARD * opt), duration)
    silent = sum(1 for x in series if x["t_s"] < START_SPAN and x["recv_kbps_min"] == 0)
    return heard, silent


def score(summary):
    """The worst session of a run's summary, in its first report window,
    and every session's start (`start_figures`)."""
    rows = []
    starts = {}
    frames = {}
    for f in sessions(summary):
        if not f["windows"]:
            raise ValueError("the scenario has no report window")
        w = f["windows"][0]
        opt = w.get("optimum_kbps")
        if not opt:
            raise ValueError(f"session {f['id']} has no optimum in its first window")
        rows.append((w["recv_kbps_min"] / opt, f["id"], w["recv_kbps_min"], opt, w["loss"] or 0.0,
                     w.get("dropped") or {c: 0 for c in DROP_CAUSES}))
        starts[f["id"]] = start_figures(f, opt, summary["duration_s"])
        if w.get("video"):
            frames[f["id"]] = (w["video"]["whole_min"] or 0.0, w["video"]["decodable_min"] or 0.0)
    if not rows:
        raise ValueError("the scenario has no conference sessions")
    worst = min(rows)
    video = {}
    if len(frames) == len(rows):
        video = {"worst_whole": min(w for w, _ in frames.values()),
                 "worst_decodable": min(d for _, d in frames.values())}
    return {**video,
        "worst_fraction": worst[0],
        "worst_session": worst[1],
        "recv_kbps_min": worst[2],
        "optimum_kbps": worst[3],
        "worst_session_loss": worst[4],
        "worst_loss": max(r[4] for r in rows),
        "sessions": {r[1]: {"fraction": r[0], "optimum_kbps": r[3], "loss": r[4],
                            "dropped": r[5],
                            "heard_s": starts[r[1]][0], "silent_s": starts[r[1]][1],
                            **({"whole": frames[r[1]][0], "decodable": frames[r[1]][1]}
                               if r[1] in frames else {})}
                     for r in rows},
        "heard_s": statistics.mean(h for h, _ in starts.values()),
        "heard_s_last": max(h for h, _ in starts.values()),
        "silent_s": statistics.mean(q for _, q in starts.values()),
        "dropped": {c: sum(r[5][c] for r in rows) for c in DROP_CAUSES},
    }


DROP_CAUSES = ("late", "policed", "link_down")


def mean_score(runs):
    """One scenario's score over several runs (`score`'s dicts of the same
    conference under different seeds, with `seed` added): every figure the
    mean of the runs', the worst session the one with the lowest mean
    fraction, plus `runs` (each run's seed, worst fraction and worst
    session) and `worst_fraction_sd`."""
    def mean(key, rows=runs):
        return statistics.mean(r[key] for r in rows)

    def mean_drops(rows):
        return {c: statistics.mean(r["dropped"][c] for r in rows) for c in DROP_CAUSES}

    ids = list(runs[0]["sessions"])
    if any(list(r["sessions"]) != ids for r in runs):
        raise ValueError("the runs of one scenario have different sessions")
    per = {i: [r["sessions"][i] for r in runs] for i in ids}
    sessions = {}
    for i, rows in per.items():
        sessions[i] = {k: mean(k, rows) for k in rows[0] if k != "dropped"}
        sessions[i]["dropped"] = mean_drops(rows)
    worst = min(ids, key=lambda i: sessions[i]["fraction"])
    fractions = [r["worst_fraction"] for r in runs]
    out = {
        "worst_fraction": statistics.mean(fractions),
        "worst_fraction_sd": statistics.stdev(fractions),
        "worst_session": worst,
        "recv_kbps_min": sessions[worst]["fraction"] * sessions[worst]["optimum_kbps"],
        "optimum_kbps": sessions[worst]["optimum_kbps"],
        "worst_session_loss": sessions[worst]["loss"],
        "worst_loss": mean("worst_loss"),
        "sessions": sessions,
        "dropped": mean_drops(runs),
        "runs": [{"seed": r["seed"], "worst_fraction": r["worst_fraction"],
                  "worst_session": r["worst_session"]} for r in runs],
    }
    for k in ("heard_s", "heard_s_last", "silent_s", "worst_whole", "worst_decodable"):
        if all(k in r for r in runs):
            out[k] = mean(k)
    return out


# The line a set's count is taken at: every session at this fraction of its
# coded optimum, and the worst session's loss at most this.
LINE = 0.8
LOSS = 0.05


def set_figures(results):
    """A set's row from its scores (`score`'s dicts): the mean, median and
    lowest worst fraction, how many hold `LINE` and `LOSS`, the drops by
    cause, the mean session's loss and fraction (over every session of
    every underlay), and the means of the start's figures where every
    score has them."""
    fractions = [r["worst_fraction"] for r in results]
    every = [s for r in results for s in r["sessions"].values()]
    figures = {
        "mean": statistics.mean(fractions),
        "median": statistics.median(fractions),
        "lowest": min(fractions),
        "at_line": sum(f >= LINE for f in fractions),
        "within_loss": sum(r["worst_loss"] <= LOSS for r in results),
        "dropped": {c: sum(r["dropped"][c] for r in results) for c in DROP_CAUSES},
        "session_loss": statistics.mean(s["loss"] for s in every),
        "session_fraction": statistics.mean(s["fraction"] for s in every),
    }
    # Scores written before the start was measured have none.
    if all("heard_s" in r for r in results):
        for k in ("heard_s", "heard_s_last", "silent_s"):
            figures[k] = statistics.mean(r[k] for r in results)
    # Only runs with simulated video (`conference.video_fps`) have frames.
    if all("worst_whole" in r for r in results):
        for k in ("worst_whole", "worst_decodable"):
            figures[k] = statistics.mean(r[k] for r in results)
    return figures


def frames_text(figures):
    """The frame figures of an underlay's score or a set's row, if it
    has them, as `; frames whole W, decodable D` (the worst session's
    lowest receiver's fractions); else empty."""
    if "worst_whole" not in figures:
        return ""
    return (f"; frames whole {figures['worst_whole']:.3f}, "
            f"decodable {figures['worst_decodable']:.3f}")


def start_text(figures):
    """The start's figures of an underlay's score or a set's row
    (`heard_s`, `heard_s_last`, `silent_s`) as `heard at H s (last L s), S
    silent s`."""
    return (f"heard at {figures['heard_s']:.1f} s (last {figures['heard_s_last']:.1f} s), "
            f"{figures['silent_s']:.1f} silent s")


def sessions_text(figures):
    """A set's mean session (`set_figures`) as `mean session loss L%,
    fraction F`."""
    return (f"mean session loss {100 * figures['session_loss']:.2f}%, "
            f"fraction {figures['session_fraction']:.3f}")


def count_text(x):
    """A count of packets: whole, or to a tenth where it is a mean over
    seeds (`--seeds`)."""
    return str(x) if isinstance(x, int) or float(x).is_integer() and abs(x) < 2**53 \
        else f"{x:.1f}"


def runs_text(r):
    """A mean score's spread over its runs (`--seeds`) as `; over K seeds
    sd S (LO-HI)`; empty for a single run."""
    if "runs" not in r:
        return ""
    fs = [x["worst_fraction"] for x in r["runs"]]
    return (f"; over {len(fs)} seeds sd {r['worst_fraction_sd']:.3f} "
            f"({min(fs):.3f}-{max(fs):.3f})")


def drops_text(dropped):
    """A `dropped` object as `L late, P policed, D link down`."""
    return ", ".join(f"{count_text(dropped[c])} {c.replace('_', ' ')}" for c in DROP_CAUSES)


def add_run_options(ap):
    """The options every scenario script takes: --meshcast, --jobs, --set
    and --json."""
    ap.add_argument("--meshcast", default=default_meshcast(), metavar="BIN")
    ap.add_argument("--jobs", type=int, default=2, metavar="N")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", metavar="FILE")


def check_run_options(args):
    """Exits with a message if the options of `add_run_options` cannot run."""
    if not args.meshcast:
        sys.exit("no meshcast binary: build it with `cargo build --release` or pass --meshcast")
    if args.jobs < 1:
        sys.exit("--jobs must be at least 1")


def conference_value(scenario, sets, key, default):
    """`conference.KEY` as a run sees it: from the last `--set` naming it
    (meshcast applies them in order), else the scenario file's, else
    `default` (also without tomllib, before Python 3.11)."""
    for s in reversed(sets):
        name, _, value = s.partition("=")
        if name == f"conference.{key}":
            return float(value)
    if tomllib is None:
        return float(default)
    with open(scenario, "rb") as f:
        return float(tomllib.load(f).get("conference", {}).get(key, default))


def run_summary(meshcast, scenario, sets, out_root):
    """`meshcast run SCENARIO --json` with `--set` for each of `sets`, its
    report under a new directory in `out_root`: the summary."""
    return run_report(meshcast, scenario, sets, out_root)[0]


def run_report(meshcast, scenario, sets, out_root, extra=()):
    """As `run_summary`, with `extra` arguments for `meshcast run` (say
    `--trace-control`): the summary and the report's directory."""
    out = tempfile.mkdtemp(dir=out_root)
    cmd = [meshcast, "run", scenario, "--json", "--out", out, *extra]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        what = " ".join([scenario, *sets])
        raise RuntimeError(f"{what}: meshcast failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout), out


def run_optimum(meshcast, scenario, sets, at, prices=False):
    """`meshcast optimum SCENARIO --at AT` (with `--prices` if asked) and
    `--set` for each of `sets`: its JSON answer."""
    cmd = [meshcast, "optimum", scenario, "--at", str(at)]
    if prices:
        cmd.append("--prices")
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{scenario}: meshcast optimum --at {at} failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def scenario_args(description, more=None):
    """The command line of a script that runs a list of scenarios: the
    scenario files and the options of `add_run_options` (and those `more`
    adds to the parser, if given), checked."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_run_options(ap)
    if more:
        more(ap)
    args = ap.parse_args()
    check_run_options(args)
    return args


def run_each(work, args):
    """Runs `work(meshcast, scenario, sets, out_root)` for every scenario of
    `args` (as `scenario_args` reads them), `args.jobs`
    at a time, each run's report under one temporary directory. Yields
    `(i, n, scenario, result)` in the scenarios' order; refuses a missing
    scenario file, and exits with the message of the first run that
    raises RuntimeError or ValueError."""
    for s in args.scenarios:
        if not os.path.isfile(s):
            sys.exit(f"{s}: no such scenario file")
    with tempfile.TemporaryDirectory() as out_root, \
            ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(work, args.meshcast, s, args.set, out_root) for s in args.scenarios]
        for i, (scenario, job) in enumerate(zip(args.scenarios, jobs), 1):
            try:
                result = job.result()
            except (RuntimeError, ValueError) as e:
                for j in jobs:
                    j.cancel()
                sys.exit(str(e))
            yield i, len(jobs), scenario, result


def run(meshcast, scenario, sets, out_root):
    summary = run_summary(meshcast, scenario, sets, out_root)
    result = score(summary)
    result["scenario"] = scenario
    result["wall_s"] = summary["wall_s"]
    return result


def run_seeds(seeds, first, spread_ms):
    """A `run_each` work function that scores a scenario over the `seeds`
    seeds from `first` on, with the members' starts spread over
    `spread_ms` (`mean_score`)."""
    def work(meshcast, scenario, sets, out_root):
        runs = []
        for seed in range(first, first + seeds):
            spread = [f"seed={seed}", f"conference.start_spread_ms={spread_ms}"]
            r = run(meshcast, scenario, [*sets, *spread], out_root)
            r["seed"] = seed
            runs.append(r)
        result = mean_score(runs)
        result["scenario"] = scenario
        result["wall_s"] = sum(r["wall_s"] for r in runs)
        return result
    return work


def seed_options(ap):
    ap.add_argument("--seeds", type=int, default=1, metavar="K",
                    help="score each scenario as the mean of K runs (seeds F..F+K-1, "
                         "starts spread); 1 runs each scenario once as it is")
    ap.add_argument("--first-seed", type=int, default=1, metavar="F",
                    help="with --seeds 2 or more: the first seed (default 1)")
    ap.add_argument("--spread-ms", type=float, default=20.0, metavar="MS",
                    help="with --seeds 2 or more: conference.start_spread_ms (default 20)")


def main():
    args = scenario_args("Score Celerity on underlays against the coded optimum "
                         "(see the module's docstring).", seed_options)
    if args.seeds < 1:
        sys.exit("--seeds must be at least 1")
    if args.first_seed < 0:
        sys.exit("--first-seed must be at least 0")
    if not 0.0 < args.spread_ms <= 1000.0:
        sys.exit("--spread-ms must be in (0, 1000]")
    work = run
    if args.seeds > 1:
        taken = [s for s in args.set
                 if s.partition("=")[0] in ("seed", "conference.start_spread_ms")]
        if taken:
            sys.exit(f"--seeds sets the seed and the start's spread itself: drop --set {taken[0]}")
        work = run_seeds(args.seeds, args.first_seed, args.spread_ms)
    results = []
    for i, n, _, r in run_each(work, args):
        results.append(r)
        print(f"[{i}/{n}] {r['scenario']}: worst {r['worst_fraction']:.3f} "
              f"({r['worst_session']}, {r['recv_kbps_min']:.0f} of {r['optimum_kbps']:.0f} "
              f"kbit/s, loss {100 * r['worst_session_loss']:.1f}%), "
              f"worst loss {100 * r['worst_loss']:.1f}%, drops {drops_text(r['dropped'])}, "
              f"{start_text(r)}{frames_text(r)}{runs_text(r)}, {r['wall_s']:.1f} s", flush=True)
    figures = set_figures(results)
    print(f"{len(results)} scenarios: mean worst fraction {figures['mean']:.3f}, "
          f"median {figures['median']:.3f}, lowest {figures['lowest']:.3f}; "
          f"every session >= {LINE} in {figures['at_line']}, "
          f"worst loss <= {LOSS:.0%} in {figures['within_loss']}; "
          f"drops {drops_text(figures['dropped'])}; {sessions_text(figures)}; "
          f"start: {start_text(figures)}"
          f"{frames_text(figures)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
