"""Run a scenario for real and in the simulator, and compare the two.

    sudo python3 scenarios/celerity/real_vs_sim.py [--meshcast BIN] [--seed N]
        [--set KEY=VALUE ...] [--out DIR] [--json FILE] SCENARIO
    python3 scenarios/celerity/real_vs_sim.py --compare REAL_DIR SIM_DIR [--json FILE]

The first form runs `meshcast run SCENARIO` (the simulator) and then
`meshcast emu SCENARIO` (the same file for real over network namespaces,
docs/emu.md; root, and the scenario's duration in real time), one after
the other so the simulation does not load the machine under the real
run. Their reports go under DIR (`DIR/sim`, `DIR/real`; default a new
directory under /tmp, kept and named at the end). The second form
compares two reports already written (each directory holds a
`summary.json`; REAL_DIR's from `meshcast emu`).

It prints, in the first report window: every flow's send rate, lowest
receiver, mean delay and loss, real against simulated, with each
session's coded optimum and the fraction of it the lowest receiver got;
the worst session's fraction in each; the header and control shares of
the bytes; the busiest links (by the simulator's utilisation) with their
queue drops; and the real run's own record of its faithfulness: the
delay element's lateness, how busy the machine's CPUs were and the share
of their time the machine's hypervisor took (docs/emu.md). docs/celerity.md, "Real networks",
reports these comparisons. `--json` writes the same figures to FILE.

BIN defaults to target/release/meshcast under the repository (build it
with `cargo build --release`), else `meshcast` on the PATH.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from score_underlays import default_meshcast

# How many links the table shows.
LINKS = 6


def load(directory):
    """The summary.json of a report directory."""
    path = os.path.join(directory, "summary.json")
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        sys.exit(f"{path}: no such file (not a meshcast report directory)")
    except json.JSONDecodeError as e:
        sys.exit(f"{path}: not JSON: {e}")


def first_window(item, what):
    """The first report window of a flow or link."""
    if not item.get("windows"):
        sys.exit(f"{what} {item['id']} has no report window: the scenario needs [[report.window]]")
    return item["windows"][0]


def flow_figures(w):
    """The figures compared for one flow in one window."""
    out = {k: w.get(k) for k in ("send_kbps", "recv_kbps_min", "delay_ms_mean", "loss")}
    opt = w.get("optimum_kbps")
    out["fraction"] = w["recv_kbps_min"] / opt if opt else None
    return out


def compare(real, sim):
    """The comparison of a real run's summary with the simulator's, as a
    dict; exits with a message if they are not runs of one scenario."""
    if "emulation" not in real:
        sys.exit("the real report has no `emulation` record: it was not written by meshcast emu")
    if real["name"] != sim["name"] or real["duration_s"] != sim["duration_s"]:
        sys.exit(f"not the same scenario: {real['name']} ({real['duration_s']} s) "
                 f"against {sim['name']} ({sim['duration_s']} s)")
    sim_flows = {f["id"]: f for f in sim["flows"]}
    flows = []
    for f in real["flows"]:
        s = sim_flows.get(f["id"])
        if s is None:
            sys.exit(f"flow {f['id']} is in the real run only")
        rw, sw = first_window(f, "flow"), first_window(s, "flow")
        flows.append({
            "id": f["id"],
            "kind": f["kind"],
            "window": [rw["from_s"], rw["to_s"]],
            "optimum_kbps": rw.get("optimum_kbps"),
            "real": flow_figures(rw),
            "sim": flow_figures(sw),
        })

    def worst(side):
        scored = [(f[side]["fraction"], f["id"]) for f in flows if f[side]["fraction"] is not None]
        return min(scored) if scored else None

    sim_links = {l["id"]: l for l in sim["links"]}
    links = []
    for l in real["links"]:
        s = sim_links.get(l["id"])
        if s is None:
            continue
        rw, sw = first_window(l, "link"), first_window(s, "link")
        links.append({
            "id": l["id"],
            "capacity_kbps": l["capacity_kbps"],
            "utilisation": {"real": rw["utilisation"], "sim": sw["utilisation"]},
            "drops_queue": {"real": rw["drops_queue"], "sim": sw["drops_queue"]},
        })
    links.sort(key=lambda l: -l["utilisation"]["sim"])

    def overhead(s):
        w = (s.get("overhead") or {}).get("windows") or [{}]
        return {k: w[0].get(k) for k in ("header_fraction", "control_fraction", "repair_fraction")}

    return {
        "scenario": real["name"],
        "flows": flows,
        "worst": {"real": worst("real"), "sim": worst("sim")},
        "overhead": {"real": overhead(real), "sim": overhead(sim)},
        "links": links[:LINKS],
        "emulation": real["emulation"],
    }


def num(v, fmt):
    return "-" if v is None else format(v, fmt)


def pct(v):
    return "-" if v is None else f"{100 * v:.2f}%"


def print_comparison(c):
    print(f"{c['scenario']}, real against simulated, in each flow's first window")
    print(f"{'flow':12} {'optimum':>8} | {'send':>8} {'lowest':>8} {'of opt':>6} {'delay':>7} "
          f"{'loss':>6} | {'send':>8} {'lowest':>8} {'of opt':>6} {'delay':>7} {'loss':>6}")
    for f in c["flows"]:
        cells = []
        for side in ("real", "sim"):
            x = f[side]
            cells.append(f"{num(x['send_kbps'], '8.1f')} {num(x['recv_kbps_min'], '8.1f')} "
                         f"{num(x['fraction'], '6.3f')} {num(x['delay_ms_mean'], '7.1f')} "
                         f"{pct(x['loss']):>6}")
        print(f"{f['id']:12} {num(f['optimum_kbps'], '8.1f')} | {cells[0]} | {cells[1]}")
    w = c["worst"]
    if w["real"] and w["sim"]:
        print(f"worst session: real {w['real'][0]:.3f} ({w['real'][1]}), "
              f"simulated {w['sim'][0]:.3f} ({w['sim'][1]})")
    o = c["overhead"]
    print(f"headers {pct(o['real']['header_fraction'])} real, {pct(o['sim']['header_fraction'])} "
          f"simulated; control {pct(o['real']['control_fraction'])}, "
          f"{pct(o['sim']['control_fraction'])}")
    print("busiest links (by the simulator): utilisation real/simulated, queue drops real/simulated")
    for l in c["links"]:
        print(f"  {l['id']:12} {l['capacity_kbps']:9.0f} kbit/s  {l['utilisation']['real']:.3f} / "
              f"{l['utilisation']['sim']:.3f}  {l['drops_queue']['real']} / "
              f"{l['drops_queue']['sim']}")
    e = c["emulation"]
    d = e["delay_element"]
    print(f"delay element: {d['frames']} frames, {'real-time' if d['realtime'] else 'NORMAL'} "
          f"priority, late p50 {num(d['late_ms_p50'], '.3f')} p99 {num(d['late_ms_p99'], '.3f')} "
          f"max {num(d['late_ms_max'], '.3f')} ms; {d['send_errors']} refused by the kernel")
    print(f"nodes' timers late at the 99th percentile: at most "
          f"{num(e.get('node_timer_late_ms_p99'), '.3f')} ms (a node's worst)")
    print(f"the machine's CPUs were busy {pct(e.get('cpu_busy_share'))} of the time; "
          f"the hypervisor took {pct(e.get('stolen_cpu_share'))} "
          f"({pct(e.get('stolen_cpu_share_max_1s'))} in the worst second)")


def run(meshcast, command, scenario, sets, seed, out):
    """`meshcast COMMAND SCENARIO --json --out OUT`; its stderr (progress,
    warnings) goes to ours."""
    cmd = [meshcast, command, scenario, "--json", "--out", out]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    for s in sets:
        cmd += ["--set", s]
    print(f"meshcast {command} {scenario} -> {out}", file=sys.stderr, flush=True)
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit(f"meshcast {command} failed (exit status {p.returncode})")


def main():
    ap = argparse.ArgumentParser(description="Compare a scenario run for real with the "
                                 "simulator's run (see the module's docstring).")
    ap.add_argument("scenario", nargs="?", metavar="SCENARIO")
    ap.add_argument("--compare", nargs=2, metavar=("REAL_DIR", "SIM_DIR"))
    ap.add_argument("--meshcast", default=default_meshcast(), metavar="BIN")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", metavar="DIR")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    if args.compare:
        if args.scenario or args.set or args.seed is not None or args.out:
            sys.exit("--compare takes two report directories and no scenario, --set, --seed or --out")
        real_dir, sim_dir = args.compare
    else:
        if not args.scenario:
            sys.exit("give a SCENARIO, or --compare REAL_DIR SIM_DIR")
        if not os.path.isfile(args.scenario):
            sys.exit(f"{args.scenario}: no such scenario file")
        if not args.meshcast:
            sys.exit("no meshcast binary: build it with `cargo build --release` or pass --meshcast")
        if os.geteuid() != 0:
            sys.exit("meshcast emu needs root (it creates network namespaces): run with sudo")
        out = args.out or tempfile.mkdtemp(prefix="real-vs-sim-")
        real_dir, sim_dir = os.path.join(out, "real"), os.path.join(out, "sim")
        run(args.meshcast, "run", args.scenario, args.set, args.seed, sim_dir)
        run(args.meshcast, "emu", args.scenario, args.set, args.seed, real_dir)
        print(f"reports in {out}", file=sys.stderr)
    c = compare(load(real_dir), load(sim_dir))
    print_comparison(c)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(c, f, indent=1)


if __name__ == "__main__":
    main()
