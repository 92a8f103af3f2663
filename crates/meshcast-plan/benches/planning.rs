//! The planners a Celerity source runs on every repack (many times a second
//! per session: `plan`, which is `pack` and `critical_cut` at once), timed
//! on random session graphs of 4, 8 and 16 members, and the one piece that
//! has public counterparts, the session's deep-tree rate (the minimum over
//! receivers of an `s`–`t` max-flow), against `pathfinding`'s Edmonds–Karp
//! and `petgraph`'s Dinic on the same graphs in the same run.
//!
//! No public crate packs delay-bounded multicast trees or computes
//! Celerity's critical cut, so those are timed alone.
//!
//! Graphs (seeded, the same every run): every overlay link gets a rate
//! uniform in 50 kbit/s..2 Mbit/s and a one-way delay uniform in 5..120 ms;
//! the bound is 200 ms, so longer paths are ruled out as in a real
//! conference. Each benchmark iterates over eight such graphs; throughput
//! is graphs per second. Ids read `plan/<what>/n<N>` with the
//! implementation as the function name.
//!
//! Run with `cargo bench -p meshcast-plan --bench planning`; the figures are
//! in docs/celerity.md ("Planner speed").

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use meshcast_core::Duration;
use meshcast_plan::{Model, SessionGraph, critical_cut, pack, plan, session_rate};

const SIZES: [usize; 3] = [4, 8, 16];
const GRAPHS: usize = 8;
const BOUND_MS: u64 = 200;

/// One random session graph, owned.
struct Case {
    n: usize,
    source: usize,
    rates: Vec<u64>,
    delays: Vec<Duration>,
}

impl Case {
    fn graph(&self) -> SessionGraph<'_> {
        SessionGraph {
            n: self.n,
            source: self.source,
            rates: &self.rates,
            delays: &self.delays,
            bound: Duration::from_millis(BOUND_MS),
        }
    }

    /// The edges of the deep model's flow graph as `(u, v, capacity)`: every
    /// link into a receiver that lies on some path within the bound (the
    /// source's shortest delay to `u` plus the link's), as
    /// `meshcast_plan::packing` builds it.
    fn deep_edges(&self) -> Vec<(usize, usize, u64)> {
        let n = self.n;
        let bound = Duration::from_millis(BOUND_MS);
        let mut dist = vec![Duration::MAX; n];
        let mut done = vec![false; n];
        dist[self.source] = Duration::ZERO;
        while let Some(u) = (0..n)
            .filter(|&u| !done[u] && dist[u] < Duration::MAX)
            .min_by_key(|&u| dist[u])
        {
            done[u] = true;
            for v in (0..n).filter(|&v| v != u) {
                dist[v] = dist[v].min(dist[u].saturating_add(self.delays[u * n + v]));
            }
        }
        let mut edges = Vec::new();
        for (u, &du) in dist.iter().enumerate() {
            for v in (0..n).filter(|&v| v != u && v != self.source) {
                let c = self.rates[u * n + v];
                if c > 0 && du.saturating_add(self.delays[u * n + v]) <= bound {
                    edges.push((u, v, c));
                }
            }
        }
        edges
    }
}

/// SplitMix64: a few lines, no dependency, the same stream on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn cases(n: usize) -> Vec<Case> {
    let mut rng = Rng(0x6d65_7368 ^ n as u64);
    (0..GRAPHS)
        .map(|i| {
            let mut rates = vec![0; n * n];
            let mut delays = vec![Duration::ZERO; n * n];
            for u in 0..n {
                for v in (0..n).filter(|&v| v != u) {
                    rates[u * n + v] = rng.uniform(50_000, 2_000_000);
                    delays[u * n + v] = Duration::from_millis(rng.uniform(5, 120));
                }
            }
            Case {
                n,
                source: i % n,
                rates,
                delays,
            }
        })
        .collect()
}

/// The deep rate with `pathfinding`'s dense Edmonds–Karp: one max-flow per
/// receiver, the least of them.
fn pathfinding_rate(c: &Case) -> u64 {
    use pathfinding::directed::edmonds_karp::edmonds_karp_dense;
    let vertices: Vec<usize> = (0..c.n).collect();
    let caps: Vec<((usize, usize), i64)> = c
        .deep_edges()
        .into_iter()
        .map(|(u, v, w)| ((u, v), w as i64))
        .collect();
    (0..c.n)
        .filter(|&t| t != c.source)
        .map(|t| edmonds_karp_dense(&vertices, &c.source, &t, caps.iter().copied()).1 as u64)
        .min()
        .unwrap_or(0)
}

/// The deep rate with `petgraph`'s Dinic.
fn petgraph_rate(c: &Case) -> u64 {
    use petgraph::graph::{DiGraph, NodeIndex};
    let edges = c.deep_edges();
    let mut g = DiGraph::<(), u64>::with_capacity(c.n, edges.len());
    for _ in 0..c.n {
        g.add_node(());
    }
    for (u, v, w) in edges {
        g.add_edge(NodeIndex::new(u), NodeIndex::new(v), w);
    }
    (0..c.n)
        .filter(|&t| t != c.source)
        .map(|t| petgraph::algo::dinics(&g, NodeIndex::new(c.source), NodeIndex::new(t)).0)
        .min()
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    for n in SIZES {
        let cs = cases(n);
        // The three must agree before their speed means anything.
        for case in &cs {
            let ours = session_rate(&case.graph(), Model::Deep);
            assert_eq!(
                ours,
                pathfinding_rate(case),
                "pathfinding disagrees, n = {n}"
            );
            assert_eq!(ours, petgraph_rate(case), "petgraph disagrees, n = {n}");
        }

        let mut g = c.benchmark_group(format!("plan/deep_rate/n{n}"));
        g.throughput(Throughput::Elements(GRAPHS as u64));
        g.bench_function("meshcast", |b| {
            b.iter(|| {
                cs.iter()
                    .map(|c| session_rate(black_box(&c.graph()), Model::Deep))
                    .sum::<u64>()
            })
        });
        g.bench_function("pathfinding", |b| {
            b.iter(|| {
                cs.iter()
                    .map(|c| pathfinding_rate(black_box(c)))
                    .sum::<u64>()
            })
        });
        g.bench_function("petgraph", |b| {
            b.iter(|| cs.iter().map(|c| petgraph_rate(black_box(c))).sum::<u64>())
        });
        g.finish();

        for (name, model) in [
            ("twohop", Model::TwoHop),
            ("deep", Model::Deep),
            ("mutualcast", Model::Mutualcast),
        ] {
            time_all(c, &format!("plan/pack/n{n}"), name, &cs, |g| {
                pack(g, model).rate
            });
        }
        for (name, model) in [("twohop", Model::TwoHop), ("deep", Model::Deep)] {
            let group = format!("plan/critical_cut/n{n}");
            time_all(c, &group, name, &cs, |g| critical_cut(g, model).rate);
            time_all(c, &format!("plan/plan/n{n}"), name, &cs, |g| {
                let (p, cut) = plan(g, model);
                p.rate + cut.rate
            });
        }
    }
}

/// Time `f` over all of `cs`, as `group/name`.
fn time_all(
    c: &mut Criterion,
    group: &str,
    name: &str,
    cs: &[Case],
    f: impl Fn(&SessionGraph<'_>) -> u64,
) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(cs.len() as u64));
    // Packing 16 members' trees takes milliseconds a graph.
    if cs.first().is_some_and(|c| c.n >= 16) {
        g.sample_size(10);
    }
    g.bench_function(name, |b| {
        b.iter(|| cs.iter().map(|c| f(black_box(&c.graph()))).sum::<u64>())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
