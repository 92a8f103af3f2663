"""Where a run's worst session meets its cut, against the optimum's link prices.

    python3 scenarios/celerity/cut_prices.py [--meshcast BIN] [--jobs N]
        [--json FILE] [--set KEY=VALUE ...] SCENARIO...

For every conference scenario, runs `meshcast run SCENARIO --json
--trace-control` and `meshcast optimum SCENARIO --prices --at T` (T the start
of the first report window), takes the session whose lowest receiver got
the smallest fraction of its coded optimum in that window (the one
`score_underlays.py` reports), and says where its critical cut lay over the
window's control intervals (`control.csv`'s `in_cut`); sessions with no
optimum in the window (a member not present then) are left out:

- **on the links the optimum prices** at 1 ms or more (its binding links):
  for each, the largest share of the intervals in which the session's cut
  crossed an overlay link whose route has that link as its highest-priced
  one, and that share times the session's `U′` (what rule (10) has the
  session pay there, time-averaged, where it settles), beside the
  optimum's price. A session that gets less than its optimum pays more
  than the optimum's prices in all (its `U′` is higher);
- **elsewhere** (`unpriced`): the largest share of the intervals in which
  its cut crossed an overlay link whose route crosses no priced link: time
  its cut spent on links the optimum leaves with room.

The session's `U′` is `β/(R + δ)` at its mean send rate R in the window
(the scenario's `[conference]` `beta` and `delta_kbps` or their `--set`,
default 18 and 10), in ms as the optimum's prices are; the trace's own
column is over the conference's price level. Routes are the simulator's
rule, as `check_optimum.py` computes them from the scenario file at T
(`--set` does not move them). The last line gives the mean unpriced share,
how many scenarios have one of 0.1 or more, and the mean of what the worst
sessions pay on their priced links over the optimum's price, weighted by
their shares. `--json FILE` writes one object per scenario.

Over held-out underlays (docs/celerity-log.md, "Built and tried in the
thirtieth session of 2026-12-06"):

    python3 scenarios/celerity/random_underlay.py 1651 1741 /tmp/ho
    python3 scenarios/celerity/cut_prices.py /tmp/ho/r*.toml
"""
import csv
import json
import os
import statistics
import tomllib

from check_optimum import Underlay
from score_underlays import (conference_value, run_each, run_optimum, run_report,
                             scenario_args, sessions)

# Links the optimum prices under this (ms) have room (docs/celerity.md, "The
# optimum's link prices").
PRICED_MS = 1.0


def in_cut_shares(control, session, start, end):
    """Per overlay link (head, tail), the share of the control intervals in
    [start, end) in which `session`'s cut crossed it."""
    counts = {}
    with open(control, newline="") as f:
        for row in csv.DictReader(f):
            t = float(row["t_s"])
            if row["session"] != session or not start <= t < end:
                continue
            n, crossed = counts.get((row["head"], row["tail"]), (0, 0))
            counts[(row["head"], row["tail"])] = (n + 1, crossed + int(row["in_cut"]))
    return {link: crossed / n for link, (n, crossed) in counts.items()}


def cut_prices(meshcast, scenario, sets, out_root):
    """The worst session's cut on the optimum's priced links and elsewhere."""
    summary, out = run_report(meshcast, scenario, sets, out_root, ["--trace-control"])
    if not summary["windows"]:
        raise ValueError(f"{scenario}: the scenario has no report window")
    start, end = summary["windows"][0]["from_s"], summary["windows"][0]["to_s"]
    # The sessions with an optimum in the window: those of members present
    # then (a member that joins later has none).
    flows = [f for f in sessions(summary) if f["windows"][0].get("optimum_kbps")]
    if not flows:
        raise ValueError(f"{scenario}: no conference session has an optimum in the first window")

    def fraction(f):
        w = f["windows"][0]
        return w["recv_kbps_min"] / w["optimum_kbps"]

    worst = min(flows, key=fraction)
    window = worst["windows"][0]
    beta = conference_value(scenario, sets, "beta", 18.0)
    delta = conference_value(scenario, sets, "delta_kbps", 10.0)
    uprime = 1e3 * beta / (window["send_kbps"] + delta)
    optimum_uprime = 1e3 * beta / (window["optimum_kbps"] + delta)
    prices = run_optimum(meshcast, scenario, sets, start, prices=True)["prices"]["coded"]
    with open(scenario, "rb") as f:
        underlay = Underlay(tomllib.load(f), start)
    shares = in_cut_shares(os.path.join(out, "control.csv"), worst["source"], start, end)
    priced, unpriced = {}, 0.0
    for (head, tail), share in shares.items():
        if share <= 0.0:
            continue
        route = underlay.route(head, tail) or []
        named = [f"{l['from']}->{l['to']}" for l in route]
        top = max(named, key=lambda n: prices.get(n, 0.0), default=None)
        if top is not None and prices.get(top, 0.0) >= PRICED_MS:
            priced[top] = max(priced.get(top, 0.0), share)
        else:
            unpriced = max(unpriced, share)
    links = [{"link": link, "share": share, "pays_ms": share * uprime, "price_ms": prices[link]}
             for link, share in sorted(priced.items())]
    return {
        "scenario": scenario,
        "session": worst["source"],
        "fraction": fraction(worst),
        "uprime_ms": uprime,
        "optimum_uprime_ms": optimum_uprime,
        "priced": links,
        "unpriced_share": unpriced,
    }


def main():
    args = scenario_args("Where a run's worst session meets its cut, against the optimum's "
                         "link prices (see the module's docstring).")
    rows = []
    for i, n, scenario, r in run_each(cut_prices, args):
        rows.append(r)
        links = "; ".join(f"{l['link']} {l['share']:.2f} of the intervals, paying "
                          f"{l['pays_ms']:.1f} ms (the optimum's price {l['price_ms']:.1f})"
                          for l in r["priced"]) or "on no priced link"
        print(f"[{i}/{n}] {scenario}: {r['session']} {r['fraction']:.3f} of its optimum "
              f"(U' {r['uprime_ms']:.1f} ms, {r['optimum_uprime_ms']:.1f} at the optimum); "
              f"{links}; unpriced at most {r['unpriced_share']:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    unpriced = [r["unpriced_share"] for r in rows]
    weighted = [(l["share"], l["pays_ms"] / l["price_ms"]) for r in rows for l in r["priced"]]
    weight = sum(w for w, _ in weighted)
    over = sum(w * x for w, x in weighted) / weight if weight > 0 else float("nan")
    print(f"{len(rows)} scenarios: unpriced share {statistics.mean(unpriced):.3f} on the mean, "
          f"0.1 or more in {sum(u >= 0.1 for u in unpriced)}; on priced links the worst "
          f"sessions pay {over:.2f} times the optimum's price")


if __name__ == "__main__":
    main()
