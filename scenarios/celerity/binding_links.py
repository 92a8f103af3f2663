"""Where Celerity leaves the optimum's binding links short of full.

    python3 scenarios/celerity/binding_links.py [--meshcast BIN] [--jobs N]
        [--json FILE] [--set KEY=VALUE ...] SCENARIO...

For every scenario, runs `meshcast run SCENARIO --json` and
`meshcast optimum SCENARIO --prices --at T` (T the start of the first report
window), and lists the underlay links the coded optimum prices at 1 ms or
more (its binding links) with their price, the time the link takes to send
one data packet's media bytes (`conference.media_bytes`, 1400 by default),
and how busy the run kept the link in that window. The last lines group the
binding links by their price in units of that packet time: a price is the
queuing delay at which Celerity's delay price would hold the link's
sessions at the optimum, and a link with random arrivals queues about a
packet time well before it is full (docs/celerity.md, "The optimum's link
prices"). `--json FILE` writes one object per binding link.

The usual sets are random underlays:

    python3 scenarios/celerity/random_underlay.py 1 31 /tmp/ru
    python3 scenarios/celerity/binding_links.py /tmp/ru/r*.toml
"""
import json
import statistics

from score_underlays import conference_value, run_each, run_optimum, run_summary, scenario_args

# Price in packet times: the groups of the closing table.
GROUPS = [(0, 1), (1, 2), (2, 4), (4, None)]


def media_bytes(scenario, sets):
    """The data packets' media bytes: `--set conference.media_bytes=…`,
    else the scenario's, else meshcast's default."""
    return int(conference_value(scenario, sets, "media_bytes", 1400))


def prices(meshcast, scenario, sets, at):
    """The coded optimum's link prices at `at`, ms by link id."""
    return run_optimum(meshcast, scenario, sets, at, prices=True)["prices"]["coded"]


def binding(meshcast, scenario, sets, out_root):
    """One row per link the optimum prices at 1 ms or more."""
    summary = run_summary(meshcast, scenario, sets, out_root)
    if not summary["windows"]:
        raise ValueError(f"{scenario}: the scenario has no report window")
    window = summary["windows"][0]
    priced = prices(meshcast, scenario, sets, window["from_s"])
    media = media_bytes(scenario, sets)
    rows = []
    for link in summary["links"]:
        price = priced.get(link["id"], 0.0)
        if price < 1.0:
            continue
        w = link["windows"][0]
        packet_ms = media * 8 / link["capacity_kbps"]
        rows.append({
            "scenario": scenario,
            "link": link["id"],
            "price_ms": price,
            "packet_ms": packet_ms,
            "price_packets": price / packet_ms,
            "utilisation": w["utilisation"],
            "queue_pkts_mean": w["queue_pkts_mean"],
        })
    return rows


def main():
    args = scenario_args("The optimum's binding links and how full Celerity keeps them "
                         "(see the module's docstring).")
    rows = []
    for i, n, scenario, found in run_each(binding, args):
        rows += found
        links = ", ".join(
            f"{r['link']} {r['price_ms']:.1f} ms ({r['price_packets']:.1f} packets) "
            f"{100 * r['utilisation']:.0f}% busy" for r in found)
        print(f"[{i}/{n}] {scenario}: {links or 'no binding link'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"{len(rows)} binding links; by price in packet times:")
    for lo, hi in GROUPS:
        group = [r["utilisation"] for r in rows
                 if r["price_packets"] >= lo and (hi is None or r["price_packets"] < hi)]
        name = f"{lo}-{hi}" if hi is not None else f"{lo} or more"
        if group:
            print(f"  {name}: {len(group)} links, mean utilisation {statistics.mean(group):.3f}, "
                  f"lowest {min(group):.2f}, {sum(u < 0.95 for u in group)} under 0.95")
        else:
            print(f"  {name}: no links")


if __name__ == "__main__":
    main()
