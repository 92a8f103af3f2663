"""Compare two scorings of the same underlays, underlay by underlay.

    python3 scenarios/celerity/compare_scores.py [--threshold T] BEFORE.json AFTER.json

BEFORE and AFTER are `score_underlays.py --json` files of the same
scenario files (matched by file name, so two copies of a set in different
directories compare too), e.g. the defaults and a candidate rule:

    python3 scenarios/celerity/score_underlays.py --json before.json DIR/r*.toml
    python3 scenarios/celerity/score_underlays.py --set conference.KEY=V \\
        --json after.json DIR/r*.toml
    python3 scenarios/celerity/compare_scores.py before.json after.json

It prints each side's row (mean, median and lowest worst fraction,
underlays with every session at 0.8 or more, underlays whose worst session
loses at most 5%, packets dropped late, mean session loss, mean session
fraction, and the utility: the mean over underlays of the sessions' mean
`ln(fraction)`, which is the conference's utility `sum beta ln(R + delta)`
over beta, less a constant per underlay, where delta is small against R; a
session that got nothing counts at a fraction of 0.001), then the paired
comparison: the mean change of the worst
fraction with a 95% interval (normal approximation over the underlays'
changes), how many underlays rose and fell by at least T (default 0.02)
with the two-sided sign test's p-value over those, the underlays that
crossed 0.8 each way, and every underlay that moved by T or more. Where
both scorings ran simulated video (`conference.video_fps`), the rows add
the worst session's whole and decodable frames and the same paired
comparison follows for the decodable frames (docs/celerity.md, "Frames
and keyframes on request").

The loop is chaotic, so a set's count at 0.8 moves by two to five of
ninety under changes that do nothing systematic, and underlays picked for
being short rise under most changes (docs/celerity.md, "Held-out
underlays"). The paired figures say whether a change moved a whole set
more than that. Their interval treats the underlays' changes as
independent draws, which makes it a lower bound on the uncertainty:
`steady_gain = 1` came out at +0.009 (+0.002 to +0.016) on seeds 91-180
and +0.008 (+0.001 to +0.014) on seeds 181-270, then -0.001 (-0.005 to
+0.004) on seeds 361-450. A candidate is confirmed on a set drawn after
it was chosen. Scorings over seeds (`score_underlays.py --seeds 3`)
average each underlay over three runs: two of them at the same defaults
(seeds 1-3 and 4-6 on the core ninety) differed by -0.0000 (-0.0020 to
+0.0020), with 2 up and 1 down by 0.02 (docs/celerity.md, "Scoring over
seeds").
"""
import argparse
import json
import math
import os
import statistics
import sys

from score_underlays import (DROP_CAUSES, LINE, LOSS, count_text, frames_text, sessions_text,
                             set_figures, start_text)


def number(x):
    """Whether a JSON value is a number (not a boolean)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def well_formed(r):
    """Whether a row has the figures this script reads, as
    `score_underlays.py` writes them."""
    try:
        return (isinstance(r["scenario"], str)
                and number(r["worst_fraction"]) and number(r["worst_loss"])
                and all(number(r["dropped"][c]) for c in DROP_CAUSES)
                and bool(r["sessions"])
                and all(number(s["fraction"]) and number(s["loss"])
                        for s in r["sessions"].values()))
    except (KeyError, TypeError, AttributeError):
        return False


def load(path):
    """A `score_underlays.py --json` file: its scores by scenario file
    name. Exits with a message if it is not one."""
    try:
        with open(path) as f:
            rows = json.load(f)
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        sys.exit(f"{path}: not JSON ({e})")
    if not isinstance(rows, list) or not rows:
        sys.exit(f"{path}: not a score_underlays.py --json file (expected a non-empty list)")
    scores = {}
    for r in rows:
        if not well_formed(r):
            sys.exit(f"{path}: not a score_underlays.py --json file (a row lacks its scores)")
        name = os.path.basename(r["scenario"])
        if name in scores:
            sys.exit(f"{path}: {name} is scored twice")
        scores[name] = r
    return scores


# The fraction a session that got nothing counts at in the utility (its
# logarithm would be minus infinity).
LEAST_FRACTION = 1e-3


def utility(scores):
    """The mean over underlays of their sessions' mean `ln(fraction)`
    (each fraction at least `LEAST_FRACTION`)."""
    return statistics.mean(
        statistics.mean(math.log(max(s["fraction"], LEAST_FRACTION))
                        for s in r["sessions"].values())
        for r in scores)


def row(scores):
    """The set's row, as docs/celerity.md's tables give it."""
    f = set_figures(scores)
    start = f"; {start_text(f)}" if "heard_s" in f else ""
    start += frames_text(f)
    return (f"mean worst {f['mean']:.3f}, median {f['median']:.3f}, "
            f"lowest {f['lowest']:.3f}; at {LINE} {f['at_line']}, "
            f"within {LOSS:.0%} loss {f['within_loss']}; "
            f"late {count_text(f['dropped']['late'])}; "
            f"{sessions_text(f)}, utility {utility(scores):.3f}{start}")


def sign_test(up, down):
    """The two-sided exact sign test's p-value for `up` rises against
    `down` falls (1 when nothing moved)."""
    n = up + down
    if n == 0:
        return 1.0
    k = min(up, down)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(a, b, key, t):
    """The underlays' changes of `key` from `a` to `b` (paired lists of
    scores), and the line that sums them up: the mean change with its 95%
    interval, and how many moved up and down by `t` or more with their
    sign test."""
    deltas = [y[key] - x[key] for x, y in zip(a, b)]
    mean = statistics.mean(deltas)
    half = 1.96 * statistics.stdev(deltas) / math.sqrt(len(deltas)) if len(deltas) > 1 else 0.0
    up = sum(d >= t for d in deltas)
    down = sum(d <= -t for d in deltas)
    return deltas, (f"mean change {mean:+.4f} (95% interval {mean - half:+.4f} "
                    f"to {mean + half:+.4f}); by {t} or more: {up} up, {down} down "
                    f"(sign test p = {sign_test(up, down):.3f})")


def main():
    ap = argparse.ArgumentParser(description="Compare two score_underlays.py --json files "
                                 "underlay by underlay (see the module's docstring).")
    ap.add_argument("before", metavar="BEFORE.json")
    ap.add_argument("after", metavar="AFTER.json")
    ap.add_argument("--threshold", type=float, default=0.02, metavar="T",
                    help="the change of a worst fraction that counts as a move (default 0.02)")
    args = ap.parse_args()
    if not args.threshold > 0:
        sys.exit("--threshold must be above 0")
    before, after = load(args.before), load(args.after)
    common = sorted(set(before) & set(after))
    if not common:
        sys.exit("the two files score no scenario file in common")
    for path, one, other in ((args.before, before, after), (args.after, after, before)):
        left = sorted(set(one) - set(other))
        if left:
            print(f"only in {path} (left out): {', '.join(left)}")
    a = [before[k] for k in common]
    b = [after[k] for k in common]
    print(f"{len(common)} underlays")
    print(f"before: {row(a)}")
    print(f"after:  {row(b)}")
    t = args.threshold
    deltas, line = paired(a, b, "worst_fraction", t)
    print(f"worst fraction: {line}")
    # Runs with simulated video also compare the frames a viewer can see.
    if all("worst_decodable" in r for r in a + b):
        print(f"decodable frames: {paired(a, b, 'worst_decodable', t)[1]}")
    crossed_up = [k for k, x, y in zip(common, a, b)
                  if x["worst_fraction"] < LINE <= y["worst_fraction"]]
    crossed_down = [k for k, x, y in zip(common, a, b)
                    if y["worst_fraction"] < LINE <= x["worst_fraction"]]
    print(f"crossed {LINE}: {len(crossed_up)} up"
          + (f" ({', '.join(crossed_up)})" if crossed_up else "")
          + f", {len(crossed_down)} down"
          + (f" ({', '.join(crossed_down)})" if crossed_down else ""))
    moved = sorted(((d, k, x, y) for d, k, x, y in zip(deltas, common, a, b) if abs(d) >= t),
                   key=lambda m: m[0])
    for d, k, x, y in moved:
        print(f"  {k}: {x['worst_fraction']:.3f} -> {y['worst_fraction']:.3f} ({d:+.3f}), "
              f"worst loss {100 * x['worst_loss']:.1f}% -> {100 * y['worst_loss']:.1f}%")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # The reader (e.g. `head`) stopped reading: not an error here.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
