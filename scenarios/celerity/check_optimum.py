"""Check `meshcast optimum`'s coded optimum with an independent solve.

    python3 scenarios/celerity/check_optimum.py [--meshcast BIN] [--solver SCS]
        [--at T] [--paths] SCENARIO...

For each conference scenario, recomputes the central optimum of the
unrestricted (coded) model from the scenario file alone, without any of
meshcast's code, and prints it beside `meshcast optimum`'s:

- **the same model** (`edge`): every overlay link `u -> v` may carry
  receiver `j`'s conceptual flow of session `s` when the shortest delays
  over the overlay `d(s,u) + d(u,v) + d(v,j)` fit the delay bound (`d(u,v)`
  in the middle is the link's own), the flows conserved at
  every member (docs/celerity.md; meshcast-plan's `optimum.rs` docs). This
  is what the scores divide by, and what must agree with meshcast's;
- with `--paths`, **the exact delay-bounded model** (`paths`): every
  receiver's flow on overlay paths (simple paths over the members) whose
  summed delay fits the bound, enumerated one by one. Where the edge model lets a flow take
  a path longer than the bound, its optimum is higher: `paths` is the
  stricter bound, and a session's fraction of it is at least its
  fraction of `edge`.

Both maximise `sum_s beta * ln(R_s + delta)` (the scenario's
`[conference]` `beta` and `delta_kbps`, default 18 and 10) under the
physical links' capacities, with a session's rate on an overlay link
counted once on every physical link of the link's route however many
receivers' flows share it (network coding). Routes are the simulator's
rule (docs/simulator.md): fewest hops over the links that are up, only
routers forward, among equally short next hops the one whose name sorts
first; a path's delay is the sum of its links' `delay_ms`. Links go up
and down and change capacity with the scenario's events up to `--at`
(default 0); the `cbr` and `onoff` flows running at `--at` take their
mean rate plus 28 bytes of IP/UDP headers a packet off the links of
their route (TCP and TFRC flows take what is left: not counted).

The solver is cvxpy with SCS (a first-order conic solver; meshcast uses
Clarabel, an interior-point one), at tolerances of 1e-9: `pip install
cvxpy`. The last line gives the largest relative difference
between meshcast's optimum and the `edge` one over every session.
"""
import argparse
import itertools
import json
import math
import subprocess
import sys
import tomllib
import warnings

from score_underlays import default_meshcast


class Underlay:
    """The scenario's nodes and directed links at time `at`
    (docs/scenario-format.md)."""

    def __init__(self, sc, at):
        self.kind = {n["id"]: n.get("kind", "host") for n in sc.get("node", [])}
        # A [[link]] is a directed link each way unless `both_ways = false`.
        self.links = []
        self.declared = []
        for l in sc.get("link", []):
            ends = [(l["from"], l["to"])]
            if l.get("both_ways", True):
                ends.append((l["to"], l["from"]))
            dirs = [{"from": a, "to": b, "cap": float(l["capacity_kbps"]),
                     "delay": float(l.get("delay_ms", 0.0)), "up": True} for a, b in ends]
            self.links.extend(dirs)
            self.declared.append((l["from"], l["to"], l.get("both_ways", True), dirs))
        events = sorted((e for e in sc.get("event", []) if e["at_s"] <= at),
                        key=lambda e: e["at_s"])
        for e in events:
            kind = e["kind"]
            if kind in ("link_down", "link_up", "capacity"):
                for l in self.named(e["from"], e["to"]):
                    if kind == "capacity":
                        l["cap"] = float(e["capacity_kbps"])
                    else:
                        l["up"] = kind == "link_up"
        self.cross = [e for e in events if e["kind"] in ("cbr", "onoff")
                      and e.get("until_s", math.inf) > at]

    def named(self, a, b):
        """The directed links of the declared link an event names: its
        ends in either order for a both-ways link."""
        for f, t, both, dirs in self.declared:
            if (f, t) == (a, b) or (both and (t, f) == (a, b)):
                return dirs
        raise ValueError(f"no link between {a} and {b}")

    def route(self, src, dst):
        """The directed links from `src` to `dst`: fewest hops, only
        routers forward, ties to the next hop whose name sorts first."""
        up = [l for l in self.links if l["up"]]
        # Hops to dst from every node, expanding backwards through routers.
        dist = {dst: 0}
        frontier = [dst]
        while frontier:
            nxt = []
            for x in frontier:
                for l in up:
                    if l["to"] == x and l["from"] not in dist:
                        dist[l["from"]] = dist[x] + 1
                        if self.kind.get(l["from"]) == "router":
                            nxt.append(l["from"])
            frontier = nxt
        if src not in dist:
            return None
        path, at = [], src
        while at != dst:
            options = [l for l in up if l["from"] == at and l["to"] in dist
                       and dist[l["to"]] + 1 == dist[at]
                       and (l["to"] == dst or self.kind.get(l["to"]) == "router")]
            if not options:
                return None
            l = min(options, key=lambda l: l["to"])
            path.append(l)
            at = l["to"]
        return path

    def cross_load(self):
        """kbit/s of cross traffic on each directed link (keyed by `id`):
        the `cbr` and `onoff` flows running at `at`, at their mean rate
        (on/off: times the share of time on) with 28 bytes of IP/UDP
        headers a packet."""
        load = {}
        for e in self.cross:
            size = float(e.get("packet_bytes", 1000))
            duty = 1.0
            if e["kind"] == "onoff":
                duty = e["on_ms"] / (e["on_ms"] + e["off_ms"])
            wire = float(e["rate_kbps"]) * duty * (size + 28) / size
            for l in self.route(e["from"], e["to"]) or []:
                load[id(l)] = load.get(id(l), 0.0) + wire
        return load


class Program:
    """A conic program's linear part, built row by row: variables are
    indices into one nonnegative vector."""

    def __init__(self):
        self.n = 0
        self.ub = ([], [], [], [])  # rows, cols, values, bounds: A x <= b
        self.eq = ([], [], [], [])  # A x == b

    def var(self):
        self.n += 1
        return self.n - 1

    def row(self, kind, terms, bound):
        rows, cols, vals, b = self.ub if kind == "<=" else self.eq
        r = len(b)
        for col, val in terms:
            rows.append(r)
            cols.append(col)
            vals.append(val)
        b.append(bound)

    def matrices(self):
        import numpy as np
        import scipy.sparse as sp

        out = []
        for rows, cols, vals, b in (self.ub, self.eq):
            out.append((sp.csr_matrix((vals, (rows, cols)), shape=(len(b), self.n)),
                        np.array(b, dtype=float)))
        return out


def solve(members, under, load, bound, beta, delta, model, solver):
    """Each session's optimal rate (kbit/s) in `model` ("edge" or
    "paths", see the module docs)."""
    import cvxpy as cp

    n = len(members)
    route = {(u, v): under.route(members[u], members[v])
             for u in range(n) for v in range(n) if u != v}
    delay = {k: (sum(l["delay"] for l in r) if r is not None else math.inf)
             for k, r in route.items()}
    edges = [k for k, r in route.items() if r is not None]
    # Shortest delays over the overlay links (Floyd-Warshall).
    sp = [[0.0 if u == v else delay[(u, v)] for v in range(n)] for u in range(n)]
    for k in range(n):
        for u in range(n):
            for v in range(n):
                sp[u][v] = min(sp[u][v], sp[u][k] + sp[k][v])
    # Rates in Mbit/s inside the solver (O(1)).
    prog = Program()
    c = {(s, e): prog.var() for s in range(n) for e in edges}
    rate = [prog.var() for _ in range(n)]
    for s in range(n):
        for j in range(n):
            if j == s:
                continue
            if model == "edge":
                # The edges that may carry j's flow, conserved at members.
                ok = [e for e in edges if sp[s][e[0]] + delay[e] + sp[e[1]][j] <= bound + 1e-9
                      and e[1] != s and e[0] != j]
                f = {e: prog.var() for e in ok}
                for e in ok:
                    prog.row("<=", [(f[e], 1.0), (c[(s, e)], -1.0)], 0.0)
                for v in range(n):
                    if v == j:
                        continue
                    terms = [(f[e], 1.0) for e in ok if e[0] == v]
                    terms += [(f[e], -1.0) for e in ok if e[1] == v]
                    if v == s:
                        # What leaves the source, less what comes back, carries R_s.
                        prog.row("<=", [(t, -w) for t, w in terms] + [(rate[s], 1.0)], 0.0)
                    elif terms:
                        prog.row("==", terms, 0.0)
            else:
                others = [v for v in range(n) if v not in (s, j)]
                on = {}
                total = []
                for k in range(len(others) + 1):
                    for mid in itertools.permutations(others, k):
                        hops = list(zip((s,) + mid, mid + (j,)))
                        if all(route[h] is not None for h in hops) and \
                                sum(delay[h] for h in hops) <= bound + 1e-9:
                            f = prog.var()
                            total.append((f, -1.0))
                            for h in hops:
                                on.setdefault(h, []).append((f, 1.0))
                prog.row("<=", total + [(rate[s], 1.0)], 0.0)
                for h, terms in on.items():
                    prog.row("<=", terms + [(c[(s, h)], -1.0)], 0.0)
    for l in under.links:
        if not l["up"]:
            continue
        using = [(c[(s, e)], 1.0) for s in range(n) for e in edges
                 if any(x is l for x in route[e])]
        if using:
            prog.row("<=", using, max(l["cap"] - load.get(id(l), 0.0), 0.0) / 1000.0)
    (a_ub, b_ub), (a_eq, b_eq) = prog.matrices()
    x = cp.Variable(prog.n, nonneg=True)
    cons = [a_ub @ x <= b_ub]
    if b_eq.size:
        cons.append(a_eq @ x == b_eq)
    # The utility's constant scale (beta) does not move the optimum.
    obj = cp.Maximize(beta * cp.sum(cp.log(x[rate] + delta / 1000.0)))
    prob = cp.Problem(obj, cons)
    with warnings.catch_warnings():
        # An inaccurate solution is reported with the figures instead.
        warnings.simplefilter("ignore")
        if solver == "SCS":
            prob.solve(solver=solver, eps_abs=1e-9, eps_rel=1e-9, max_iters=200000)
        else:
            prob.solve(solver=solver)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"{model}: solver status {prob.status}")
    return [float(x.value[r]) * 1000.0 for r in rate], prob.status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshcast", default=default_meshcast())
    ap.add_argument("--solver", default="SCS")
    ap.add_argument("--at", type=float, default=0.0)
    ap.add_argument("--paths", action="store_true",
                    help="also solve the exact path model (its paths grow as (n-2)! with n "
                         "members: minutes for eight members with short delays)")
    ap.add_argument("scenarios", nargs="+")
    a = ap.parse_args()
    if a.meshcast is None:
        sys.exit("no meshcast binary: build it (cargo build --release) or pass --meshcast")
    worst = 0.0
    for path in a.scenarios:
        with open(path, "rb") as fh:
            sc = tomllib.load(fh)
        conf = sc.get("conference")
        if conf is None:
            print(f"{path}: no [conference], skipped")
            continue
        members = conf["participants"]
        bound = float(conf.get("delay_bound_ms", 200))
        beta = float(conf.get("beta", 18.0))
        delta = float(conf.get("delta_kbps", 10.0))
        under = Underlay(sc, a.at)
        load = under.cross_load()
        out = subprocess.run([a.meshcast, "optimum", path, "--at", str(a.at)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{path}: meshcast optimum failed: {out.stderr.strip()}")
        theirs = json.loads(out.stdout)["coded"]
        edge, status = solve(members, under, load, bound, beta, delta, "edge", a.solver)
        notes = [] if status == "optimal" else [f"edge model: {status}"]
        paths = None
        if a.paths:
            paths, status = solve(members, under, load, bound, beta, delta, "paths", a.solver)
            if status != "optimal":
                notes.append(f"path model: {status}")
        print(f"{path}:" + (f" ({'; '.join(notes)})" if notes else ""))
        for i, m in enumerate(members):
            ours = theirs[m]
            rel = abs(ours - edge[i]) / max(edge[i], 1.0)
            worst = max(worst, rel)
            extra = f", paths {paths[i]:8.1f}" if paths else ""
            print(f"  {m}: meshcast {ours:8.1f}, edge {edge[i]:8.1f} ({rel * 100:.2f}%){extra}")
        sys.stdout.flush()
    print(f"largest difference between meshcast's coded optimum and the edge model's: "
          f"{worst * 100:.2f}%")


if __name__ == "__main__":
    main()
