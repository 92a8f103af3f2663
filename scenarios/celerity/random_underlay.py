"""Random underlays for Celerity (docs/celerity.md, "Random underlays").

    python3 scenarios/celerity/random_underlay.py [--family FAMILY]
        [--fall FRACTION [--fall-at S] | --churn | --fail] FIRST_SEED END_SEED OUT_DIR

writes one scenario for every seed in [FIRST_SEED, END_SEED): 3-5 core
routers joined by a random spanning tree plus up to as many extra links,
4-8 participants (9-16 in the large family) each on an access link to a
random router, queues of a quarter second (at least 15 kB), 200 s with
the window [100, 200].
Compare each session's `recv_kbps_min` with its `optimum_kbps`:
score_underlays.py OUT_DIR/*.toml does it for the lot.

FAMILY says where the bottlenecks are and how far apart the routers sit:

  core  (the default; OUT_DIR/r<seed>.toml) core links of 600-3000 kbit/s
        and 2-30 ms, access links of 5-20 Mbit/s and 1-5 ms: the issue's
        "bottlenecks in the core", the set every rule was measured on.
        random-core.toml is seed 6.
  long  core links of 15-60 ms, otherwise as core: paths that spend most of
        the 200-ms bound propagating.
  wide  6-10 core routers, core links of 2-20 ms, otherwise as core.
  fast  core links of 3-12 Mbit/s, access links of 50-100 Mbit/s: the same
        shapes at ten times the rates.
  edge  the bottlenecks at the edge instead: uploads of 0.5-2 Mbit/s,
        downloads of 5-10 Mbit/s, a core of 20-50 Mbit/s (Mutualcast's
        setting, outside the issue's core bottlenecks).
  large 9-16 participants (past the issue's 4-8) on core links of 2-12
        Mbit/s and 2-30 ms, access links of 20-100 Mbit/s: each of the
        many sessions gets about what the core family's do.
  slow  core links of 150-750 kbit/s, otherwise as core: the same shapes
        at a quarter of the rates, sessions of 10-200 kbit/s (audio-like
        rates, where U' = beta/(R + delta) is far above the delays a
        200-ms bound can price).

Families other than core write OUT_DIR/<family>-<seed>.toml. These are the
underlays nobody tuned for: docs/celerity.md's Status reports them apart
from the core set.

--fall FRACTION (between 0 and 1) draws the same underlays, whose core
links all fall to FRACTION of their capacity at 100 s (both ways, as a
provider's links changing their rate): 240 s with the windows [110, 140]
(the return; score_underlays.py scores the first window) and [160, 240]
(the new steady state; --set report.window[0].from_s=160 --set
report.window[0].to_s=240 scores it). docs/celerity.md, "A link that
narrows". --fall-at S moves the fall to S seconds (at least 20; 100 by
default), and the run and its windows with it: S + 140 s with [S + 10,
S + 40] and [S + 60, S + 140]. A fall at 40 s comes while the sessions
still climb to their optimum's split (docs/celerity.md, "A fall within
the climb").

--churn draws the same underlays with a member joining and another
leaving a running conference (issue 3's peer dynamics where nobody tuned
for them): one member, drawn at random, starts absent and joins at 100 s,
another leaves at 170 s; 240 s with the windows [130, 170] (every member
present) and [200, 240] (without the one that left). score_underlays.py
scores the first window and gives each change's seconds until every
session is back at 90% of its new optimum (docs/celerity.md, "Joins and
leaves on random underlays").

--fail draws the same underlays with a core link failing and coming back
while the conference runs: one core link whose loss leaves the core
connected, drawn at random (apart from the underlay's own draws), goes
down at 100 s and comes back at 170 s, both ways; the routers route
around it (paths of fewest hops over the links that are up), so no
overlay link goes down: the members see their paths' delays and
capacities change, with no news of why. 240 s with the windows [130,
170] (the core without the link) and [200, 240] (with it again). A seed
whose core is a tree (every core link's loss would split it) has no such
link: it is skipped, and the generator says so (docs/celerity.md,
"Routes that change under the overlay").
"""
import argparse
import os
import random
import sys

# Per family: participants, core routers, core capacities (kbit/s), core
# delays (ms), access capacities up and down (kbit/s; None: the same as up).
FAMILIES = {
    "core": ((4, 8), (3, 5), [600, 800, 1000, 1500, 2000, 3000], (2, 30), [5000, 10000, 20000], None),
    "long": ((4, 8), (3, 5), [600, 800, 1000, 1500, 2000, 3000], (15, 60), [5000, 10000, 20000], None),
    "wide": ((4, 8), (6, 10), [600, 800, 1000, 1500, 2000, 3000], (2, 20), [5000, 10000, 20000], None),
    "fast": ((4, 8), (3, 5), [3000, 5000, 8000, 12000], (2, 30), [50000, 100000], None),
    "edge": ((4, 8), (3, 5), [20000, 50000], (2, 30), [500, 800, 1200, 2000], [5000, 10000]),
    "large": ((9, 16), (3, 5), [2000, 3000, 5000, 8000, 12000], (2, 30), [20000, 50000, 100000], None),
    "slow": ((4, 8), (3, 5), [150, 200, 250, 375, 500, 750], (2, 30), [5000, 10000, 20000], None),
}


# When --fall's links fall unless --fall-at says otherwise (s).
FALL_AT = 100
# --churn: when a member joins and another leaves (s), the run's length,
# and how long after each change its window starts.
JOIN_AT = 100
LEAVE_AT = 170
CHURN_DURATION = 240
CHURN_SETTLE = 30
# --fail: when the core link goes down and comes back (s); the run and its
# windows are churn's.
FAIL_AT = 100
BACK_AT = 170


def spare_links(k, edges):
    """The core links (pairs of router indices) whose loss leaves the `k`
    routers connected, in `edges`' sorted order."""
    def connected(without):
        seen, todo = {0}, [0]
        while todo:
            a = todo.pop()
            for e in edges:
                if e != without and a in e:
                    b = e[1] if e[0] == a else e[0]
                    if b not in seen:
                        seen.add(b)
                        todo.append(b)
        return len(seen) == k
    return [e for e in sorted(edges) if connected(e)]


def gen(seed, out, family="core", fall=None, fall_at=FALL_AT, churn=False, fail=False):
    """Write the scenario of `seed` to `out`; False (nothing written) where
    `fail` asks for a core link whose loss leaves the core connected and
    the core is a tree."""
    (nmin, nmax), (kmin, kmax), core_caps, (dmin, dmax), up_caps, down_caps = FAMILIES[family]
    # The core family draws exactly as it always has: its files are the
    # sets docs/celerity.md reports.
    r = random.Random(seed if family == "core" else f"{family}-{seed}")
    n = r.randint(nmin, nmax)
    k = r.randint(kmin, kmax)
    links = []  # (from, to, kbit/s, ms, kbit/s back)
    routers = [f"R{i}" for i in range(k)]
    hosts = [f"P{i}" for i in range(n)]
    # random spanning tree plus extra edges in the core
    edges = set()
    for i in range(1, k):
        edges.add((r.randrange(i), i))
    for _ in range(r.randint(0, k)):
        a, b = r.sample(range(k), 2)
        edges.add((min(a, b), max(a, b)))
    for a, b in sorted(edges):
        cap = r.choice(core_caps)
        d = r.randint(dmin, dmax)
        links.append((routers[a], routers[b], cap, d, cap))
    for h in hosts:
        router = r.choice(routers)
        up = r.choice(up_caps)
        down = r.choice(down_caps) if down_caps else up
        links.append((h, router, up, r.randint(1, 5), down))
    name = f"random-{seed}" if family == "core" else f"random-{family}-{seed}"
    what = "random underlay" if family == "core" else f"random underlay ({family})"
    if fall is not None:
        what += f", its core falling to {fall} at {fall_at} s"
    duration = 200 if fall is None else fall_at + 140
    tail = ""
    if fail:
        # Drawn apart from the underlay, which stays the one without the
        # failure.
        spare = spare_links(k, edges)
        if not spare:
            return False
        fa, fb = random.Random(f"fail-{family}-{seed}").choice(spare)
        failed = (routers[fa], routers[fb])
        tail = f", {failed[0]}-{failed[1]} down at {FAIL_AT} s and back at {BACK_AT} s"
        duration = CHURN_DURATION
    if churn:
        # Drawn apart from the underlay, which stays the one without churn.
        joiner, leaver = random.Random(f"churn-{family}-{seed}").sample(hosts, 2)
        tail = f", {joiner} joining at {JOIN_AT} s and {leaver} leaving at {LEAVE_AT} s"
        duration = CHURN_DURATION
    s = [f'name = "{name}"', f'description = "{what} {seed}{tail}"', f'duration_s = {duration}', f'seed = {seed}', '',
         '[conference]', 'protocol = "celerity"', 'participants = [' + ", ".join(f'"{h}"' for h in hosts) + ']', 'delay_bound_ms = 200', '']
    for h in hosts:
        s += ['[[node]]', f'id = "{h}"', 'kind = "host"']
    for x in routers:
        s += ['[[node]]', f'id = "{x}"', 'kind = "router"']

    def link(a, b, c, d, both):
        q = max(15000, int(c * 1000 / 8 * 0.25))
        return (['[[link]]', f'from = "{a}"', f'to = "{b}"', f'capacity_kbps = {c}', f'delay_ms = {d}', f'queue_bytes = {q}']
                + ([] if both else ['both_ways = false']))

    for a, b, c, d, back in links:
        s += link(a, b, c, d, back == c)
        if back != c:
            s += link(b, a, back, d, False)
    if churn:
        windows = [(JOIN_AT + CHURN_SETTLE, LEAVE_AT), (LEAVE_AT + CHURN_SETTLE, CHURN_DURATION)]
        for at, kind, node in ((JOIN_AT, "join", joiner), (LEAVE_AT, "leave", leaver)):
            s += ['[[event]]', f'at_s = {at}', f'kind = "{kind}"', f'node = "{node}"']
    elif fail:
        windows = [(FAIL_AT + CHURN_SETTLE, BACK_AT), (BACK_AT + CHURN_SETTLE, CHURN_DURATION)]
        for at, kind in ((FAIL_AT, "link_down"), (BACK_AT, "link_up")):
            s += ['[[event]]', f'at_s = {at}', f'kind = "{kind}"', f'from = "{failed[0]}"', f'to = "{failed[1]}"']
    elif fall is None:
        windows = [(100, 200)]
    else:
        windows = [(fall_at + 10, fall_at + 40), (fall_at + 60, fall_at + 140)]
        for a, b, c, _, _ in links[:len(edges)]:
            s += ['[[event]]', f'at_s = {fall_at}', 'kind = "capacity"', f'from = "{a}"', f'to = "{b}"',
                  f'capacity_kbps = {round(c * fall)}']
    for lo, hi in windows:
        s += ['[[report.window]]', f'from_s = {lo}', f'to_s = {hi}']
    with open(out, 'w') as f:
        f.write("\n".join(s) + "\n")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--family", choices=sorted(FAMILIES), default="core")
    ap.add_argument("--fall", type=float, metavar="FRACTION",
                    help="the core links fall to FRACTION of their capacity at 100 s (--fall-at moves it)")
    ap.add_argument("--fall-at", type=int, metavar="S",
                    help="the time of the fall (with --fall; at least 20 s, default 100)")
    ap.add_argument("--churn", action="store_true",
                    help=f"a member joins at {JOIN_AT} s and another leaves at {LEAVE_AT} s")
    ap.add_argument("--fail", action="store_true",
                    help=f"a core link goes down at {FAIL_AT} s and comes back at {BACK_AT} s")
    ap.add_argument("first", type=int, metavar="FIRST_SEED")
    ap.add_argument("end", type=int, metavar="END_SEED")
    ap.add_argument("out_dir", metavar="OUT_DIR")
    args = ap.parse_args()
    if args.end <= args.first:
        ap.error(f"END_SEED ({args.end}) must be greater than FIRST_SEED ({args.first})")
    if args.fall is not None and not 0 < args.fall < 1:
        ap.error(f"--fall ({args.fall}) must be between 0 and 1")
    if args.fall_at is not None and args.fall is None:
        ap.error("--fall-at needs --fall")
    if args.fall_at is not None and args.fall_at < 20:
        ap.error(f"--fall-at ({args.fall_at}) must be at least 20 s")
    if sum((args.churn, args.fall is not None, args.fail)) > 1:
        ap.error("--churn, --fall and --fail draw different runs: give one of them")
    fall_at = FALL_AT if args.fall_at is None else args.fall_at
    os.makedirs(args.out_dir, exist_ok=True)
    for seed in range(args.first, args.end):
        base = f"r{seed}" if args.family == "core" else f"{args.family}-{seed}"
        if not gen(seed, os.path.join(args.out_dir, base + ".toml"), args.family, args.fall,
                   fall_at, args.churn, args.fail):
            print(f"seed {seed}: its core is a tree, no link can fail without splitting it; skipped",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
