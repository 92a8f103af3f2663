//! Max-flow / min-cut on small dense digraphs with integer capacities.
//!
//! Conference overlays are small (a participant count in the tens at most),
//! so an adjacency matrix and breadth-first augmenting paths
//! (Edmonds–Karp) beat anything cleverer: no allocation after the first
//! call, and every operation is a scan of a contiguous row (8–17 times
//! faster than `pathfinding`'s dense Edmonds–Karp and 1.5–5 times faster
//! than `petgraph`'s Dinic on session graphs; `benches/planning.rs`).
//!
//! The tree packing asks the same graph, a few units lighter, the same
//! question thousands of times; [`Flows`] keeps every receiver's max-flow
//! and answers from it, repairing instead of recomputing, and
//! [`TreeFlows`] follows those flows down each tree as it grows, so that a
//! question repairs one edge rather than the whole tree so far.

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
    /// Per node, while a kept flow is repaired (see [`Flows`]): inflow
    /// beyond outflow, and outflow beyond inflow.
    excess: Vec<u64>,
    deficit: Vec<u64>,
    /// The sinks a [`Flows`] bound could not clear, with their bounds.
    doubtful: Vec<(u64, usize)>,
}

impl Scratch {
    /// Start from the residual graph `resid` (a capacity matrix, or a kept
    /// flow's residual graph).
    fn load(&mut self, resid: &[u64]) {
        self.resid.clear();
        self.resid.extend_from_slice(resid);
    }

    /// After a max-flow from `s` on `n` nodes: the nodes reachable from `s`
    /// in the residual graph — the source side of a minimum cut.
    pub(crate) fn source_side(&mut self, n: usize, s: usize) -> Vec<bool> {
        // A search for no node visits every node reachable from `s`.
        self.path(n, s, |_| false);
        self.prev.iter().map(|&p| p != usize::MAX).collect()
    }

    /// Breadth-first search in the residual graph from `from` to the
    /// nearest node `is_target` accepts (not `from` itself); `prev` then
    /// holds the path. `None` when no such node is reachable.
    fn path(&mut self, n: usize, from: usize, is_target: impl Fn(usize) -> bool) -> Option<usize> {
        self.prev.clear();
        self.prev.resize(n, usize::MAX);
        self.prev[from] = from;
        self.queue.clear();
        self.queue.push(from);
        let mut head = 0;
        while head < self.queue.len() {
            let u = self.queue[head];
            head += 1;
            let row = &self.resid[u * n..(u + 1) * n];
            for (v, &c) in row.iter().enumerate() {
                if c > 0 && self.prev[v] == usize::MAX {
                    self.prev[v] = u;
                    if is_target(v) {
                        return Some(v);
                    }
                    self.queue.push(v);
                }
            }
        }
        None
    }

    /// Push up to `most` units along the path [`Scratch::path`] found from
    /// `from` to `to`; returns the units pushed (the path's bottleneck if
    /// less).
    fn push(&mut self, n: usize, from: usize, to: usize, most: u64) -> u64 {
        let mut amount = most;
        let mut v = to;
        while v != from {
            let u = self.prev[v];
            amount = amount.min(self.resid[u * n + v]);
            v = u;
        }
        let mut v = to;
        while v != from {
            let u = self.prev[v];
            self.resid[u * n + v] -= amount;
            self.resid[v * n + u] = self.resid[v * n + u].saturating_add(amount);
            v = u;
        }
        amount
    }

    /// Augment `s`–`t` paths in the residual graph held here until the
    /// flow, now `total`, reaches `limit` or no path is left; returns the
    /// flow.
    fn augment(&mut self, n: usize, s: usize, t: usize, mut total: u64, limit: u64) -> u64 {
        while total < limit {
            if self.path(n, s, |v| v == t).is_none() {
                break;
            }
            total = total.saturating_add(self.push(n, s, t, u64::MAX)).min(INF);
        }
        total
    }
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
    /// graph, from which [`Scratch::source_side`] reads a minimum cut.
    pub(crate) fn max_flow(&self, s: usize, t: usize, scratch: &mut Scratch) -> u64 {
        self.flow_up_to(s, t, INF, scratch)
    }

    /// The `s`–`t` flow, augmented only until it reaches `limit`: the
    /// maximum flow when that is less, else at least `limit`.
    fn flow_up_to(&self, s: usize, t: usize, limit: u64, scratch: &mut Scratch) -> u64 {
        scratch.load(&self.cap);
        scratch.augment(self.n, s, t, 0, limit)
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

/// Every sink's maximum flow from one source in one graph, kept so that
/// "does every sink still get `need` once these edges lose `d` units?" —
/// the tree packing's question, asked thousands of times per packing — is
/// answered from them instead of from scratch.
///
/// For each sink, first a bound: a flow of value `v` loses at most
/// `x − (c − d)` units on an edge of capacity `c` that carried `x > c − d`
/// (take the excess off the paths through it), so if `v` less those
/// excesses is still at least `need`, so is the sink's max-flow in the
/// reduced graph. Otherwise the kept flow is repaired rather than
/// recomputed: each overfull edge gives back its excess, which leaves
/// inflow beyond outflow at its tail and the reverse at its head; the
/// excess is rerouted to the deficits through the residual graph where it
/// can be, and the rest returned to the source (a node with excess always
/// has a residual path back to it, as in push–relabel) and taken from the
/// sink, which lowers the flow by that much. The repaired flow is
/// feasible, and augmenting it answers exactly what a max-flow from
/// scratch would.
#[derive(Clone, Debug, Default)]
pub(crate) struct Flows {
    n: usize,
    /// Per sink (in the order given): its max-flow value.
    value: Vec<u64>,
    /// Per sink: the residual capacities its max-flow left, `n * n` each.
    resid: Vec<u64>,
}

/// Route each node's excess to the deficits through `scratch`'s residual
/// graph where it can go, the rest back to `s`, then fill the deficits left
/// from `t`. `None` if a path that must exist was not found.
fn rebalance(
    scratch: &mut Scratch,
    excess: &mut [u64],
    deficit: &mut [u64],
    s: usize,
    t: usize,
) -> Option<()> {
    let n = excess.len();
    for (a, ex) in excess.iter_mut().enumerate() {
        while *ex > 0 {
            // To a deficit (the flow keeps its value), else to the source.
            // A search that finds no deficit has visited every node it
            // reaches, in the order a search for the source alone would,
            // so the source's path is already in its tree.
            let (to, most) = match scratch.path(n, a, |v| deficit[v] > 0) {
                Some(v) => (v, (*ex).min(deficit[v])),
                None if a != s && scratch.prev[s] != usize::MAX => (s, *ex),
                None => return None,
            };
            let moved = scratch.push(n, a, to, most);
            *ex -= moved;
            deficit[to] = deficit[to].saturating_sub(moved);
        }
    }
    for (b, short) in deficit.iter_mut().enumerate() {
        while *short > 0 {
            scratch.path(n, t, |v| v == b)?;
            *short -= scratch.push(n, t, b, *short);
        }
    }
    Some(())
}

/// `g` with each of `edges` `d` units less.
fn reduced(g: &FlowGraph, edges: impl Iterator<Item = (usize, usize)>, d: u64) -> FlowGraph {
    let mut r = g.clone();
    for (a, b) in edges {
        r.set(a, b, g.get(a, b) - d);
    }
    r
}

impl FlowGraph {
    /// Every sink's max-flow from `s`, kept (see [`Flows`]); the least of
    /// them is [`Flows::min`].
    pub(crate) fn flows(&self, s: usize, sinks: &[usize], scratch: &mut Scratch) -> Flows {
        let nn = self.n * self.n;
        let mut f = Flows {
            n: self.n,
            value: Vec::with_capacity(sinks.len()),
            resid: Vec::with_capacity(sinks.len() * nn),
        };
        for &t in sinks {
            f.value.push(self.max_flow(s, t, scratch));
            f.resid.extend_from_slice(&scratch.resid);
        }
        f
    }
}

impl Flows {
    /// The least of the sinks' max-flows (0 without sinks).
    pub(crate) fn min(&self) -> u64 {
        self.value.iter().copied().min().unwrap_or(0)
    }

    /// The least of the sinks' max-flows from `s` and a minimum cut
    /// towards the first sink that has it (the nodes on the source side):
    /// what [`FlowGraph::min_max_flow`] and a max-flow towards that sink
    /// give for the graph these flows were computed in. `None` without
    /// sinks.
    pub(crate) fn least_cut(&self, s: usize, scratch: &mut Scratch) -> Option<(u64, Vec<bool>)> {
        let nn = self.n * self.n;
        let (i, &v) = self
            .value
            .iter()
            .enumerate()
            .min_by_key(|&(i, &v)| (v, i))?;
        scratch.load(&self.resid[i * nn..(i + 1) * nn]);
        Some((v, scratch.source_side(self.n, s)))
    }

    /// Whether every sink's max-flow from `s` is still at least `need` in
    /// `g` (the graph these flows were computed in, for these `sinks`)
    /// once each finite edge of `edges` has lost `d` units (at most its
    /// capacity), as max-flows from scratch in the reduced graph would
    /// answer: `None` if so, else a witness, a minimum cut towards a sink
    /// that falls short in the reduced graph, as its capacity in `g`
    /// (before the loss) and the number of the finite `edges` that cross
    /// it. Such a cut keeps that sink's max-flow at most `capacity −
    /// crossing · δ` for every loss `δ` (Newton's method for a tree's
    /// rate in the packing).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn short_after(
        &self,
        g: &FlowGraph,
        s: usize,
        sinks: &[usize],
        edges: impl Iterator<Item = (usize, usize)> + Clone,
        d: u64,
        need: u64,
        scratch: &mut Scratch,
    ) -> Option<(u64, u64)> {
        let n = self.n;
        let nn = n * n;
        let finite = edges.filter(|&(a, b)| g.get(a, b) < INF);
        let mut doubtful = std::mem::take(&mut scratch.doubtful);
        doubtful.clear();
        for i in 0..sinks.len() {
            // What the sink's flow loses at most: on each edge, what it
            // carried past the `c − d` left.
            let loss = finite
                .clone()
                .map(|(a, b)| d.saturating_sub(self.resid[i * nn + a * n + b]))
                .fold(0u64, u64::saturating_add);
            let bound = self.value[i].saturating_sub(loss);
            if bound < need {
                doubtful.push((bound, i));
            }
        }
        // The sink the bound doubts most first: when the answer is no, it
        // is usually the one that says so, and the others are not needed.
        doubtful.sort_unstable();
        let mut short = None;
        for &(_, i) in &doubtful {
            let reached = match self.repaired(i, g, s, sinks[i], finite.clone(), d, scratch) {
                Some(f) => scratch.augment(n, s, sinks[i], f, need) >= need,
                // The repair found no path where one must exist: answer
                // from scratch (a guard; the tests never reach it).
                None => {
                    let g = reduced(g, finite.clone(), d);
                    g.flow_up_to(s, sinks[i], need, scratch) >= need
                }
            };
            if !reached {
                // The flow is a maximum one (no augmenting path was
                // left), so the nodes its residual graph reaches from
                // `s` are the source side of a minimum cut.
                let side = scratch.source_side(n, s);
                let capacity = (0..n)
                    .filter(|&u| side[u])
                    .flat_map(|u| (0..n).filter(|&v| !side[v]).map(move |v| (u, v)))
                    .map(|(u, v)| g.get(u, v))
                    .fold(0u64, u64::saturating_add);
                let crossing = finite.clone().filter(|&(a, b)| side[a] && !side[b]).count();
                short = Some((capacity, crossing as u64));
                break;
            }
        }
        scratch.doubtful = doubtful;
        short
    }

    /// Keep every sink's max-flow as `g` (the graph they were computed in)
    /// loses `d` units on each finite edge of `edges`: the packing's next
    /// residual graph, whose max-flows are the old ones repaired and
    /// augmented rather than computed afresh.
    pub(crate) fn follow(
        &mut self,
        g: &FlowGraph,
        s: usize,
        sinks: &[usize],
        edges: impl Iterator<Item = (usize, usize)> + Clone,
        d: u64,
        scratch: &mut Scratch,
    ) {
        let n = self.n;
        let nn = n * n;
        let finite = edges.filter(|&(a, b)| g.get(a, b) < INF);
        for (i, &t) in sinks.iter().enumerate() {
            let value = match self.repaired(i, g, s, t, finite.clone(), d, scratch) {
                Some(v) => scratch.augment(n, s, t, v, INF),
                // The guard of `short_after`.
                None => reduced(g, finite.clone(), d).max_flow(s, t, scratch),
            };
            self.value[i] = value;
            self.resid[i * nn..(i + 1) * nn].copy_from_slice(&scratch.resid);
        }
    }

    /// Sink `i`'s kept flow, repaired for `edges` (finite) having lost `d`
    /// units each, into `scratch`'s residual graph; returns its value.
    /// `None` if a path the repair relies on was not found.
    #[allow(clippy::too_many_arguments)]
    fn repaired(
        &self,
        i: usize,
        g: &FlowGraph,
        s: usize,
        t: usize,
        edges: impl Iterator<Item = (usize, usize)> + Clone,
        d: u64,
        scratch: &mut Scratch,
    ) -> Option<u64> {
        let nn = self.n * self.n;
        scratch.load(&self.resid[i * nn..(i + 1) * nn]);
        scratch.cut_back(self.n, s, t, edges.clone(), d)?;
        // The edges into the sink have lost `d` each.
        let into = edges.filter(|&(_, b)| b == t).count() as u64;
        Some(scratch.value_into(g, t, into * d))
    }
}

/// The kept flows followed down one tree of the packing as it grows. Per
/// sink, a flow of at least the need in the graph the tree grows in, less
/// one unit on each finite tree edge so far, held as a flow in a graph
/// less only some of those units and the tree edges it still runs through
/// at full capacity (`pending`): each of them lowers its value by at most
/// the unit, which bounds what the sink keeps as [`Flows`] does. Where
/// the bound doubts, the flow is repaired for its pending edges and the
/// new one and augmented up to the need, and an edge taken then keeps the
/// repaired flow: the next test starts from it instead of from the flows
/// of the graph the tree started in, which needed every tree edge they
/// overfill repaired at every test. An edge given back
/// ([`undo`](Self::undo), when the search backtracks) restores the flows
/// as they were.
#[derive(Clone, Debug, Default)]
pub(crate) struct TreeFlows {
    n: usize,
    s: usize,
    sinks: Vec<usize>,
    need: u64,
    /// Per sink: its flow's value and residual graph (`n * n` each).
    /// The residual graphs are buffers of their own, so that a repaired
    /// flow moves between `found_resid`, `resid` and `saved` without
    /// being copied.
    value: Vec<u64>,
    resid: Vec<Vec<u64>>,
    /// Per sink: the tree edges its flow runs through at full capacity
    /// that have not yet lost their unit in `resid`.
    pending: Vec<Vec<(usize, usize)>>,
    /// Per sink: the finite tree edges into it that have lost their unit
    /// in `resid`.
    lost_into: Vec<u64>,
    /// What the last [`admits`](Self::admits) found: the edge, and per
    /// sink the repaired flow (value and residual graph) if it repaired one.
    tested: Option<(usize, usize)>,
    found: Vec<Option<(u64, u64)>>,
    found_resid: Vec<Vec<u64>>,
    /// The undo log: per taken edge a marker, then what changed for each
    /// sink; replaced flows' residual graphs and pending edges wait on
    /// `saved` and `saved_pending`, in the log's order.
    log: Vec<Undo>,
    saved: Vec<Vec<u64>>,
    saved_pending: Vec<(usize, usize)>,
    /// Buffers of `n * n` no longer in use, for the next repaired flows.
    spare: Vec<Vec<u64>>,
}

#[derive(Clone, Copy, Debug)]
enum Undo {
    /// An edge taken.
    Edge,
    /// The sink's flow kept the unit of slack it had on the edge.
    Slack(usize, (usize, usize)),
    /// The edge joined the sink's pending edges.
    Pending(usize),
    /// The sink's flow was replaced: its old value, edges lost into the
    /// sink and count of pending edges (the residual graph and the pending
    /// edges are on `saved` and `saved_pending`).
    Replaced(usize, u64, u64, usize),
}

impl TreeFlows {
    /// Start a tree from `flows` (the sinks' max-flows from `s` in the
    /// graph the tree grows in): every sink must keep at least `need`.
    pub(crate) fn start(&mut self, flows: &Flows, s: usize, sinks: &[usize], need: u64) {
        let (n, k) = (flows.n, sinks.len());
        self.n = n;
        self.s = s;
        self.sinks.clear();
        self.sinks.extend_from_slice(sinks);
        self.need = need;
        self.value.clear();
        self.value.extend_from_slice(&flows.value);
        let nn = n * n;
        self.spare.append(&mut self.saved);
        self.resid.resize_with(k, Vec::new);
        for (r, kept) in self.resid.iter_mut().zip(flows.resid.chunks_exact(nn)) {
            r.clear();
            r.extend_from_slice(kept);
        }
        self.pending.resize_with(k, Vec::new);
        self.pending.iter_mut().for_each(Vec::clear);
        self.lost_into.clear();
        self.lost_into.resize(k, 0);
        self.tested = None;
        self.found.clear();
        self.found.resize(k, None);
        // Read only where `found` says it was written.
        self.found_resid.resize_with(k, Vec::new);
        self.log.clear();
        self.saved_pending.clear();
    }

    /// Whether every sink's max-flow stays at least the need once finite
    /// edge `e` of `g` (the graph the tree grows in) loses one unit beside
    /// the `tree`'s edges: the answer max-flows from scratch in the reduced
    /// graph would give.
    pub(crate) fn admits(
        &mut self,
        g: &FlowGraph,
        tree: &[(usize, usize)],
        e: (usize, usize),
        scratch: &mut Scratch,
    ) -> bool {
        let (n, s, need) = (self.n, self.s, self.need);
        debug_assert!(g.get(e.0, e.1) < INF, "an infinite edge loses nothing");
        self.tested = Some(e);
        for i in 0..self.sinks.len() {
            self.found[i] = None;
            let full = self.resid[i][e.0 * n + e.1] == 0;
            let short = self.pending[i].len() as u64 + u64::from(full);
            if self.value[i].saturating_sub(short) >= need {
                continue;
            }
            let t = self.sinks[i];
            scratch.load(&self.resid[i]);
            let edges = self.pending[i].iter().copied().chain(std::iter::once(e));
            let lost = self.lost_into[i] + edges.clone().filter(|&(_, b)| b == t).count() as u64;
            let value = match scratch.cut_back(n, s, t, edges, 1) {
                Some(()) => {
                    let v = scratch.value_into(g, t, lost);
                    scratch.augment(n, s, t, v, need)
                }
                // The repair found no path where one must exist: answer
                // from scratch (a guard, as in `Flows`).
                None => {
                    let edges = tree.iter().copied().chain(std::iter::once(e));
                    let r = reduced(g, edges.filter(|&(a, b)| g.get(a, b) < INF), 1);
                    r.flow_up_to(s, t, need, scratch)
                }
            };
            if value < need {
                self.tested = None;
                return false;
            }
            self.found[i] = Some((value, lost));
            // The scratch buffer is loaded afresh before every use.
            std::mem::swap(&mut self.found_resid[i], &mut scratch.resid);
        }
        true
    }

    /// Take edge `e` of `g` into the tree: `e` must be the edge
    /// [`admits`](Self::admits) last accepted, or infinite.
    pub(crate) fn take(&mut self, g: &FlowGraph, e: (usize, usize)) {
        let n = self.n;
        self.log.push(Undo::Edge);
        if g.get(e.0, e.1) >= INF {
            return;
        }
        assert_eq!(self.tested.take(), Some(e), "an edge taken untested");
        for i in 0..self.sinks.len() {
            let at = e.0 * n + e.1;
            if let Some((v, lost)) = self.found[i] {
                self.log.push(Undo::Replaced(
                    i,
                    self.value[i],
                    self.lost_into[i],
                    self.pending[i].len(),
                ));
                let next = self.spare.pop().unwrap_or_default();
                let found = std::mem::replace(&mut self.found_resid[i], next);
                self.saved
                    .push(std::mem::replace(&mut self.resid[i], found));
                self.saved_pending.append(&mut self.pending[i]);
                self.value[i] = v;
                self.lost_into[i] = lost;
            } else if self.resid[i][at] > 0 {
                self.resid[i][at] -= 1;
                self.log.push(Undo::Slack(i, e));
                self.lost_into[i] += u64::from(e.1 == self.sinks[i]);
            } else {
                self.pending[i].push(e);
                self.log.push(Undo::Pending(i));
            }
        }
    }

    /// Give back the edge [`take`](Self::take) took last.
    pub(crate) fn undo(&mut self) {
        while let Some(u) = self.log.pop() {
            match u {
                Undo::Edge => return,
                Undo::Slack(i, (a, b)) => {
                    self.resid[i][a * self.n + b] += 1;
                    self.lost_into[i] -= u64::from(b == self.sinks[i]);
                }
                Undo::Pending(i) => {
                    self.pending[i].pop();
                }
                Undo::Replaced(i, v, lost, pending) => {
                    self.value[i] = v;
                    self.lost_into[i] = lost;
                    let old = self.saved.pop().expect("a replaced flow was saved");
                    self.spare.push(std::mem::replace(&mut self.resid[i], old));
                    let from = self.saved_pending.len() - pending;
                    self.pending[i].extend(self.saved_pending.drain(from..));
                }
            }
        }
    }
}

impl Scratch {
    /// Take `d` units off each edge of `edges` (finite, distinct) in the
    /// `s`–`t` flow whose residual graph on `n` nodes `resid` holds: each
    /// overfull edge gives back its excess, and [`rebalance`] reroutes it
    /// (see [`Flows`]). `None` if a path that must exist was not found.
    fn cut_back(
        &mut self,
        n: usize,
        s: usize,
        t: usize,
        edges: impl Iterator<Item = (usize, usize)>,
        d: u64,
    ) -> Option<()> {
        let mut excess = std::mem::take(&mut self.excess);
        let mut deficit = std::mem::take(&mut self.deficit);
        excess.clear();
        excess.resize(n, 0);
        deficit.clear();
        deficit.resize(n, 0);
        for (a, b) in edges {
            let r = self.resid[a * n + b];
            if r >= d {
                self.resid[a * n + b] = r - d;
            } else {
                // The edge carried `d − r` more than it now can.
                let over = d - r;
                self.resid[a * n + b] = 0;
                self.resid[b * n + a] -= over;
                excess[a] += over;
                deficit[b] += over;
            }
        }
        // The source and the sink need not balance; a node that lost on an
        // edge in and on an edge out is short only by the difference.
        for v in 0..n {
            let both = if v == s || v == t {
                excess[v].max(deficit[v])
            } else {
                excess[v].min(deficit[v])
            };
            excess[v] -= both.min(excess[v]);
            deficit[v] -= both.min(deficit[v]);
        }
        let balanced = rebalance(self, &mut excess, &mut deficit, s, t);
        self.excess = excess;
        self.deficit = deficit;
        balanced
    }

    /// The value of the flow into `t` whose residual graph `resid` holds,
    /// in `g` with `lost` units taken off its finite edges into `t`: the
    /// net flow into the sink.
    fn value_into(&self, g: &FlowGraph, t: usize, lost: u64) -> u64 {
        let n = g.n;
        let value: i128 = (0..n)
            .filter(|&u| u != t)
            .map(|u| i128::from(g.get(u, t).min(INF)) - i128::from(self.resid[u * n + t]))
            .sum::<i128>()
            - i128::from(lost);
        value.clamp(0, i128::from(INF)) as u64
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
        let side = s.source_side(4, 0);
        assert!(side[0]);
        assert!(!side[3]);
        let cut: u64 = (0..4)
            .flat_map(|u| (0..4).map(move |v| (u, v)))
            .filter(|&(u, v)| side[u] && !side[v])
            .map(|(u, v)| g.get(u, v))
            .sum();
        assert_eq!(cut, 5);
    }

    /// A xorshift generator from `seed`.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// A random dense graph on 2–9 nodes: a quarter of the edges absent,
    /// an eighth infinite, a quarter of 1–5 units and the rest below
    /// `large`.
    fn random_graph(next: &mut impl FnMut() -> u64, large: u64) -> FlowGraph {
        let n = 2 + (next() % 8) as usize;
        let mut g = FlowGraph::new(n);
        for u in 0..n {
            for v in (0..n).filter(|&v| v != u) {
                let c = match next() % 8 {
                    0 | 1 => 0,
                    2 => INF,
                    3 | 4 => 1 + next() % 5,
                    _ => next() % large,
                };
                g.set(u, v, c);
            }
        }
        g
    }

    /// The kept flows answer exactly what max-flows from scratch answer on
    /// the reduced graph, and their repair never falls back on its guard:
    /// random dense graphs (some edges infinite, many small so that edges
    /// overflow when they lose), random edge sets losing random amounts.
    #[test]
    fn kept_flows_agree_with_max_flows_from_scratch() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut s = Scratch::default();
        let mut overfull = 0;
        for _ in 0..3000 {
            let g = random_graph(&mut next, 2_000_000);
            let n = g.n;
            let sinks: Vec<usize> = (1..n).collect();
            let flows = g.flows(0, &sinks, &mut s);
            let (min, _) = g.min_max_flow(0, &sinks, &mut s).unwrap();
            assert_eq!(flows.min(), min);
            // Up to four distinct finite edges, each losing `d`.
            let mut edges: Vec<(usize, usize)> = Vec::new();
            for _ in 0..1 + next() % 4 {
                let (a, b) = ((next() % n as u64) as usize, (next() % n as u64) as usize);
                let c = g.get(a, b);
                if a != b && c > 0 && c < INF && !edges.contains(&(a, b)) {
                    edges.push((a, b));
                }
            }
            let Some(most) = edges.iter().map(|&(a, b)| g.get(a, b)).min() else {
                continue;
            };
            let d = 1 + next() % most;
            let reduced = reduced(&g, edges.iter().copied(), d);
            let mut exact_min = INF;
            for (i, &t) in sinks.iter().enumerate() {
                let exact = reduced.max_flow(0, t, &mut s).min(INF);
                exact_min = exact_min.min(exact);
                let kept = flows.repaired(i, &g, 0, t, edges.iter().copied(), d, &mut s);
                let kept = kept.expect("the repair finds the paths it relies on");
                assert!(kept <= exact, "a repaired flow above the max-flow");
                overfull += usize::from(kept < flows.value[i]);
                assert_eq!(s.augment(n, 0, t, kept, INF), exact, "n {n} sink {t}");
            }
            for need in [
                0,
                1,
                exact_min.saturating_sub(1),
                exact_min,
                exact_min + 1,
                INF,
            ] {
                let short =
                    flows.short_after(&g, 0, &sinks, edges.iter().copied(), d, need, &mut s);
                assert_eq!(
                    short.is_none(),
                    exact_min >= need,
                    "n {n} need {need} min {exact_min}"
                );
                // The witness is a minimum cut towards a sink that falls
                // short: under the need, and no less than the least
                // max-flow (short of an infinite need, flows through
                // infinite edges saturate instead).
                if let (Some((capacity, crossing)), true) = (short, need < INF) {
                    let after = capacity - crossing * d;
                    assert!(after < need && after >= exact_min, "cut of {after}");
                }
            }
            // Following the loss, the kept flows are the reduced graph's
            // max-flows, and answer for it as above.
            let mut flows = flows;
            flows.follow(&g, 0, &sinks, edges.iter().copied(), d, &mut s);
            for (i, &t) in sinks.iter().enumerate() {
                assert_eq!(
                    flows.value[i],
                    reduced.max_flow(0, t, &mut s),
                    "followed, sink {t}"
                );
            }
            let (a, b) = edges[0];
            if reduced.get(a, b) > 0 {
                let again = reduced.get(a, b);
                let mut twice = reduced.clone();
                twice.set(a, b, 0);
                let (min, _) = twice.min_max_flow(0, &sinks, &mut s).unwrap();
                let e = std::iter::once((a, b));
                let short = |need, s: &mut Scratch| {
                    flows.short_after(&reduced, 0, &sinks, e.clone(), again, need, s)
                };
                assert!(short(min, &mut s).is_none());
                assert!(short(min + 1, &mut s).is_some());
            }
        }
        // The repair itself was exercised, not only the bound.
        assert!(overfull > 500, "{overfull} repairs lowered a flow");
    }

    /// A tree's flows answer each test exactly as max-flows from scratch
    /// on the reduced graph do, as edges are taken and given back in a
    /// random walk (random dense graphs of small capacities, needs at and
    /// around the least max-flow).
    #[test]
    fn tree_flows_agree_with_max_flows_from_scratch() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut s = Scratch::default();
        let mut tf = TreeFlows::default();
        let (mut yes, mut no, mut undone) = (0, 0, 0);
        for _ in 0..1500 {
            let g = random_graph(&mut next, 20);
            let n = g.n;
            let sinks: Vec<usize> = (1..n).collect();
            let flows = g.flows(0, &sinks, &mut s);
            let need = flows.min().saturating_sub(next() % 3).min(INF - 1);
            tf.start(&flows, 0, &sinks, need);
            // The tree's edges (each finite one has lost a unit).
            let mut tree: Vec<(usize, usize)> = Vec::new();
            for _ in 0..12 {
                if !tree.is_empty() && next() % 4 == 0 {
                    tree.pop();
                    tf.undo();
                    undone += 1;
                    continue;
                }
                let e = ((next() % n as u64) as usize, (next() % n as u64) as usize);
                if e.0 == e.1 || g.get(e.0, e.1) == 0 || tree.contains(&e) {
                    continue;
                }
                if g.get(e.0, e.1) >= INF {
                    tf.take(&g, e);
                    tree.push(e);
                    continue;
                }
                let with_e = tree.iter().copied().chain(std::iter::once(e));
                let finite = with_e.filter(|&(a, b)| g.get(a, b) < INF);
                let r = reduced(&g, finite, 1);
                let exact = sinks.iter().all(|&t| r.max_flow(0, t, &mut s) >= need);
                assert_eq!(
                    tf.admits(&g, &tree, e, &mut s),
                    exact,
                    "n {n} tree {tree:?} e {e:?}"
                );
                if exact {
                    yes += 1;
                    tf.take(&g, e);
                    tree.push(e);
                } else {
                    no += 1;
                }
            }
        }
        assert!(
            yes > 2000 && no > 500 && undone > 1000,
            "{yes} {no} {undone}"
        );
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
