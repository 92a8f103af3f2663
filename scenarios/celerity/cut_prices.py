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
- **held off by a late charge** (`held_off`): the share of the intervals in
  which a charge for its late packets held it off at least one link in its
  cut, and per such link the share and the mean charge. Held off means: its
  cut crosses the link, its gain there passes the link's price but not the
  price and the charge (`control.csv`'s `late_loss_ms`) together, and it
  sends there under 2% of its rate. A charge moves only while the session
  has packets over the link, so one the session left keeps it unless a
  release fades it (docs/celerity.md, "Late packets are the session's
  loss", "Releasing an overload's late charge" and, a switch off by
  default, "Releasing a late charge its link's queue made").
  `sessions_held_off` in the JSON gives the same for every session.

The session's `U′` is `β/(R + δ)` at its mean send rate R in the window
(the scenario's `[conference]` `beta` and `delta_kbps` or their `--set`,
default 18 and 10), in ms as the optimum's prices are; the trace's own
column is over the conference's price level. Routes are the simulator's
rule, as `check_optimum.py` computes them from the scenario file at T
(`--set` does not move them). The last line gives the mean unpriced share,
how many scenarios have one of 0.1 or more, the mean of what the worst
sessions pay on their priced links over the optimum's price, weighted by
their shares, and in how many scenarios a late charge held the worst
session off a link for half the window or more. `--json FILE` writes one
object per scenario.

Over held-out underlays (docs/celerity-log.md, "Built and tried in the
thirtieth session of 2026-12-06" and the thirty-first):

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

# A session sending under this share of its rate over a link has left it
# (`held_off`).
HELD_RATE = 0.02


def trace_shares(control, start, end, send_kbps):
    """What `control.csv` says of each session in `send_kbps` (its mean send
    rate in the window, kbit/s) over the control intervals in [start, end):

    - `in_cut`: per overlay link (head, tail), the share of the intervals in
      which the session's cut crossed it;
    - `held`: per overlay link, the share of the intervals in which a late
      charge held the session off it (`held_off`), and the mean charge then
      (ms);
    - `held_share`: the share of the intervals in which a late charge held
      it off at least one link."""
    counts = {}
    times = {m: set() for m in send_kbps}
    held_times = {m: set() for m in send_kbps}
    with open(control, newline="") as f:
        for row in csv.DictReader(f):
            m = row["session"]
            t = float(row["t_s"])
            if m not in send_kbps or not start <= t < end:
                continue
            times[m].add(t)
            link = (row["head"], row["tail"])
            n, crossed, held, charge = counts.get((m, link), (0, 0, 0, 0.0))
            n, crossed = n + 1, crossed + int(row["in_cut"])
            if held_off(row, send_kbps[m]):
                held, charge = held + 1, charge + float(row["late_loss_ms"])
                held_times[m].add(t)
            counts[(m, link)] = (n, crossed, held, charge)
    shares = {m: {"in_cut": {}, "held": {},
                  "held_share": len(held_times[m]) / len(times[m]) if times[m] else 0.0}
              for m in send_kbps}
    for (m, link), (n, crossed, held, charge) in counts.items():
        shares[m]["in_cut"][link] = crossed / n
        if held:
            shares[m]["held"][link] = (held / n, charge / held)
    return shares


def held_off(row, send_kbps):
    """Whether a late charge held the row's session off the row's link in
    that interval: its cut crosses the link, its gain there passes the
    link's price but not the price and its charge for late packets together
    (`late_loss_ms`, docs/celerity.md, "Late packets are the session's
    loss"), and it sends there under `HELD_RATE` of its rate."""
    gain, price, charge = (float(row[k]) for k in ("gain_ms", "price_ms", "late_loss_ms"))
    return (row["in_cut"] == "1" and charge > 0.0 and price < gain < price + charge
            and float(row["rate_kbps"]) < HELD_RATE * send_kbps)


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
    traced = trace_shares(os.path.join(out, "control.csv"), start, end,
                          {f["source"]: f["windows"][0]["send_kbps"] for f in flows})
    shares = traced[worst["source"]]["in_cut"]
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
        "held_off": held_report(traced[worst["source"]]),
        "sessions_held_off": {m: held_report(t) for m, t in sorted(traced.items())},
    }


def held_report(traced):
    """A session's late charges that held it off links in its cut, as the
    JSON rows give them."""
    return {
        "share": traced["held_share"],
        "links": [{"link": f"{head}->{tail}", "share": share, "charge_ms": charge}
                  for (head, tail), (share, charge) in sorted(traced["held"].items())],
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
              f"{links}; unpriced at most {r['unpriced_share']:.2f}{held_text(r)}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    unpriced = [r["unpriced_share"] for r in rows]
    weighted = [(l["share"], l["pays_ms"] / l["price_ms"]) for r in rows for l in r["priced"]]
    weight = sum(w for w, _ in weighted)
    over = sum(w * x for w, x in weighted) / weight if weight > 0 else float("nan")
    print(f"{len(rows)} scenarios: unpriced share {statistics.mean(unpriced):.3f} on the mean, "
          f"0.1 or more in {sum(u >= 0.1 for u in unpriced)}; on priced links the worst "
          f"sessions pay {over:.2f} times the optimum's price; a late charge held the worst "
          f"session off a link in its cut in half the window or more in "
          f"{sum(r['held_off']['share'] >= 0.5 for r in rows)}")


def held_text(r):
    """The report line's part on the late charges that held the worst
    session off links in its cut (nothing where none did)."""
    held = r["held_off"]
    if held["share"] <= 0.0:
        return ""
    most = sorted(held["links"], key=lambda l: -l["share"])
    links = ", ".join(f"{l['link']} {l['share']:.2f} ({l['charge_ms']:.0f} ms)"
                      for l in most if l["share"] >= 0.1) or "each link under 0.1"
    return f"; held off by a late charge in {held['share']:.2f} of the intervals: {links}"


if __name__ == "__main__":
    main()
