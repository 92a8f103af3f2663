"""Random underlays for Celerity (docs/celerity.md, "Random underlays").

    python3 scenarios/celerity/random_underlay.py FIRST_SEED END_SEED OUT_DIR

writes OUT_DIR/r<seed>.toml for every seed in [FIRST_SEED, END_SEED): 3-5
core routers joined by a random spanning tree plus up to as many extra
links (600-3000 kbit/s, 2-30 ms), 4-8 participants each on a 5-20 Mbit/s
access link (1-5 ms) to a random router, queues of a quarter second (at
least 15 kB), 200 s with the window [100, 200]. random-core.toml is seed 6.
Compare each session's `recv_kbps_min` with its `optimum_kbps`:
score_underlays.py OUT_DIR/r*.toml does it for the lot.
"""
import os
import random
import sys
def gen(seed, out):
    r = random.Random(seed)
    n = r.randint(4, 8)
    k = r.randint(3, 5)
    L = []
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
        cap = r.choice([600, 800, 1000, 1500, 2000, 3000])
        d = r.randint(2, 30)
        L.append((routers[a], routers[b], cap, d))
    for h in hosts:
        L.append((h, r.choice(routers), r.choice([5000, 10000, 20000]), r.randint(1, 5)))
    s = [f'name = "random-{seed}"', f'description = "random underlay {seed}"', 'duration_s = 200', f'seed = {seed}', '',
         '[conference]', 'protocol = "celerity"', 'participants = [' + ", ".join(f'"{h}"' for h in hosts) + ']', 'delay_bound_ms = 200', '']
    for h in hosts: s += ['[[node]]', f'id = "{h}"', 'kind = "host"']
    for x in routers: s += ['[[node]]', f'id = "{x}"', 'kind = "router"']
    for a, b, c, d in L:
        q = max(15000, int(c * 1000 / 8 * 0.25))
        s += ['[[link]]', f'from = "{a}"', f'to = "{b}"', f'capacity_kbps = {c}', f'delay_ms = {d}', f'queue_bytes = {q}']
    s += ['[[report.window]]', 'from_s = 100', 'to_s = 200']
    open(out, 'w').write("\n".join(s) + "\n")
if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out_dir = sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)
    for sd in range(int(sys.argv[1]), int(sys.argv[2])):
        gen(sd, os.path.join(out_dir, f"r{sd}.toml"))
