//! Max-flow / min-cut on small dense digraphs with integer capacities.
//!
//! Conference overlays are small (a participant count in the tens at most),
//! so an adjacency matrix and breadth-first augmenting paths
//! (Edmonds–Karp) beat anything cleverer: no allocation after the first
//! call, and every operation is a scan of a contiguous row.

/// A capacity that no finite sum reaches (the relay-to-itself edges of the
/// two-layer graph, §3). Kept far below `u64::MAX` so sums cannot overflow.
pub(crate) const INF: u64 = u64::MAX / 16;

/// A dense digraph with integer capacities (`cap[u * n + v]`).
#[derive(Clone, Debug)]
pub(crate) struct FlowGraph {
    pub(crate) n: usize,
    pub(crate) cap: Vec<u64>,
}

/// Reusable buffers for [`FlowGraph::max_flow`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    resid: Vec<u64>,
    prev: Vec<usize>,
    queue: Vec<usize>,
}

impl FlowGraph {
    /// An edgeless graph on `n` nodes.
    pub(crate) fn new(n: usize) -> FlowGraph {
        FlowGraph {
            n,
            cap: vec![0; n * n],
        }
    }

    pub(crate) fn get(&self, u: usize, v: usize) -> u64 {
        self.cap[u * self.n + v]
    }

    pub(crate) fn set(&mut self, u: usize, v: usize, c: u64) {
        self.cap[u * self.n + v] = c;
    }

    /// The maximum `s`–`t` flow. Afterwards `scratch` holds the residual
    /// graph, from which [`FlowGraph::source_side`] reads a minimum cut.
    pub(crate) fn max_flow(&self, s: usize, t: usize, scratch: &mut Scratch) -> u64 {
        self.flow_up_to(s, t, INF, scratch)
    }

    /// The `s`–`t` flow, augmented only until it reaches `limit`: the
    /// maximum flow when that is less, else at least `limit`.
    fn flow_up_to(&self, s: usize, t: usize, limit: u64, scratch: &mut Scratch) -> u64 {
        let n = self.n;
        scratch.resid.clear();
        scratch.resid.extend_from_slice(&self.cap);
        scratch.prev.resize(n, usize::MAX);
        let mut total: u64 = 0;
        loop {
            scratch.prev.fill(usize::MAX);
            scratch.prev[s] = s;
            scratch.queue.clear();
            scratch.queue.push(s);
            let mut head = 0;
            while head < scratch.queue.len() && scratch.prev[t] == usize::MAX {
                let u = scratch.queue[head];
                head += 1;
                let row = &scratch.resid[u * n..(u + 1) * n];
                for (v, &c) in row.iter().enumerate() {
                    if c > 0 && scratch.prev[v] == usize::MAX {
                        scratch.prev[v] = u;
                        scratch.queue.push(v);
                    }
                }
            }
            if scratch.prev[t] == usize::MAX {
                return total;
            }
            let mut bottleneck = u64::MAX;
            let mut v = t;
            while v != s {
                let u = scratch.prev[v];
                bottleneck = bottleneck.min(scratch.resid[u * n + v]);
                v = u;
            }
            let mut v = t;
            while v != s {
                let u = scratch.prev[v];
                scratch.resid[u * n + v] -= bottleneck;
                scratch.resid[v * n + u] = scratch.resid[v * n + u].saturating_add(bottleneck);
                v = u;
            }
            total = total.saturating_add(bottleneck).min(INF);
            if total >= limit {
                return total;
            }
        }
    }

    /// After [`FlowGraph::max_flow`] from `s`: the nodes reachable from `s`
    /// in the residual graph — the source side of a minimum cut.
    pub(crate) fn source_side(&self, s: usize, scratch: &mut Scratch) -> Vec<bool> {
        let n = self.n;
        let mut seen = vec![false; n];
        seen[s] = true;
        scratch.queue.clear();
        scratch.queue.push(s);
        let mut head = 0;
        while head < scratch.queue.len() {
            let u = scratch.queue[head];
            head += 1;
            for (v, seen_v) in seen.iter_mut().enumerate() {
                if !*seen_v && scratch.resid[u * n + v] > 0 {
                    *seen_v = true;
                    scratch.queue.push(v);
                }
            }
        }
        seen
    }

    /// Whether every receiver's max-flow from `s` is at least `need`.
    /// Cheaper than [`FlowGraph::min_max_flow`]: it stops augmenting a
    /// flow once it reaches `need` and stops at the first receiver short
    /// of it (the tree packing's feasibility tests ask only this).
    pub(crate) fn all_reach(
        &self,
        s: usize,
        receivers: &[usize],
        need: u64,
        scratch: &mut Scratch,
    ) -> bool {
        need == 0
            || receivers
                .iter()
                .all(|&t| self.flow_up_to(s, t, need, scratch) >= need)
    }

    /// The minimum over `receivers` of the max-flow from `s`, and the
    /// receiver attaining it (the first on ties). `None` without receivers.
    pub(crate) fn min_max_flow(
        &self,
        s: usize,
        receivers: &[usize],
        scratch: &mut Scratch,
    ) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for &t in receivers {
            let f = self.max_flow(s, t, scratch);
            if best.is_none_or(|(b, _)| f < b) {
                best = Some((f, t));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_example_and_cut() {
        // s=0, t=3: 0->1 (3), 0->2 (2), 1->2 (1), 1->3 (2), 2->3 (3).
        let mut g = FlowGraph::new(4);
        g.set(0, 1, 3);
        g.set(0, 2, 2);
        g.set(1, 2, 1);
        g.set(1, 3, 2);
        g.set(2, 3, 3);
        let mut s = Scratch::default();
        assert_eq!(g.max_flow(0, 3, &mut s), 5);
        let side = g.source_side(0, &mut s);
        assert!(side[0]);
        assert!(!side[3]);
        let cut: u64 = (0..4)
            .flat_map(|u| (0..4).map(move |v| (u, v)))
            .filter(|&(u, v)| side[u] && !side[v])
            .map(|(u, v)| g.get(u, v))
            .sum();
        assert_eq!(cut, 5);
    }

    /// `all_reach` answers exactly what the full computation answers, at
    /// every threshold around the true minimum max-flow (a deterministic
    /// pseudo-random set of dense graphs, some with infinite edges).
    #[test]
    fn all_reach_agrees_with_the_minimum_max_flow() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut s = Scratch::default();
        for _ in 0..500 {
            let n = 2 + (next() % 7) as usize;
            let mut g = FlowGraph::new(n);
            for u in 0..n {
                for v in (0..n).filter(|&v| v != u) {
                    let c = match next() % 8 {
                        0 | 1 => 0,
                        2 => INF,
                        _ => next() % 2_000_000,
                    };
                    g.set(u, v, c);
                }
            }
            let sinks: Vec<usize> = (1..n).collect();
            let (min, _) = g.min_max_flow(0, &sinks, &mut s).unwrap();
            for need in [0, 1, min.saturating_sub(1), min, min.saturating_add(1), INF] {
                assert_eq!(
                    g.all_reach(0, &sinks, need, &mut s),
                    min >= need,
                    "n {n} need {need} min {min}"
                );
            }
        }
    }

    #[test]
    fn infinite_edges_do_not_overflow() {
        let mut g = FlowGraph::new(3);
        g.set(0, 1, INF);
        g.set(1, 2, INF);
        let mut s = Scratch::default();
        assert_eq!(g.max_flow(0, 2, &mut s), INF);
    }
}
