//! Delay-bounded tree packing (§3, Appendix A), session rates (eqs. 4–5)
//! and critical cuts (§4.3, §5.2, eq. 12) for one session.
//!
//! A session is seen by its source as a complete overlay graph on the
//! conference's present members, each directed overlay link `(u, v)` with
//! the rate `c[u][v]` allocated to this session (bits/s) and a one-way
//! delay. What the source may build from that depends on the [`Model`]:
//!
//! - [`Model::TwoHop`] — the paper: 2-hop trees over the two-layer graph
//!   `D_m` (source, one relay node `r_i` and one receiver node `t_i` per
//!   receiver, `r_i → t_i` of infinite capacity; an edge is left out when
//!   the 1- or 2-hop path through it exceeds the delay bound).
//! - [`Model::Deep`] — past the paper: arborescences of any depth over the
//!   overlay graph. Every member is a receiver (a conference session is a
//!   broadcast), so by Edmonds' theorem the packable rate equals the
//!   minimum over receivers of the max-flow — the network-coding rate —
//!   without coding. The delay bound is enforced on every tree path.
//! - [`Model::Star`] — Simulcast: the 1-hop star only.
//! - [`Model::Mutualcast`] — Mutualcast (Li/Chou/Zhang, Chen et al.): the
//!   1-hop star plus, for every receiver `r`, the depth-2 tree
//!   `s → r → (all others)`.
//!
//! Packing uses Lovász's constructive proof of Edmonds' theorem (the greedy
//! of Appendix A) on integer capacities (bits/s), so it is exact: each tree
//! is grown edge by edge, always taking an edge whose removal (of one unit)
//! keeps the residual graph's multicast capacity at `k − 1`; the finished
//! tree then gets the largest rate `δ` that keeps the residual capacity at
//! `k − δ` (found by Newton's method on the minimum cuts: the residual
//! capacity is concave in `δ`, the least of one line per cut).

use crate::maxflow::{FlowGraph, Flows, INF, Scratch, TreeFlows};
use meshcast_core::Duration;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Which trees a session may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Model {
    /// 2-hop delay-bounded trees over `D_m` (the paper, §3).
    TwoHop,
    /// Delay-bounded arborescences of any depth (past the paper).
    Deep,
    /// The 1-hop star (Simulcast).
    Star,
    /// Star plus one depth-2 tree per relay (Mutualcast).
    Mutualcast,
}

/// One session as its source sees it.
#[derive(Clone, Copy, Debug)]
pub struct SessionGraph<'a> {
    /// Number of present members (indices `0..n`).
    pub n: usize,
    /// The source's index.
    pub source: usize,
    /// `rates[u * n + v]`: the session's rate on overlay link `u → v`,
    /// bits/s (the diagonal is ignored).
    pub rates: &'a [u64],
    /// `delays[u * n + v]`: one-way delay of overlay link `u → v`.
    pub delays: &'a [Duration],
    /// The end-to-end delay bound `D`.
    pub bound: Duration,
}

/// A tree of a session: occurrences of members, each with the occurrence
/// it receives from. Occurrence 0 is the source.
///
/// In a 2-hop tree a member can occur twice: once as a relay fed by the
/// source and once as a receiver fed by another relay (`D_m` models the
/// two roles separately); only the relay occurrence has children.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tree {
    /// `(member, parent occurrence)`; the source's parent is `None`.
    pub occ: Vec<(usize, Option<usize>)>,
}

impl Tree {
    /// The overlay links the tree uses, as `(from member, to member)`.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.occ
            .iter()
            .filter_map(|&(m, p)| p.map(|p| (self.occ[p].0, m)))
    }

    /// Occurrences whose parent is `occ`.
    pub fn children(&self, occ: usize) -> impl Iterator<Item = usize> + '_ {
        self.occ
            .iter()
            .enumerate()
            .filter(move |(_, (_, p))| *p == Some(occ))
            .map(|(i, _)| i)
    }

    /// Depth (in overlay hops) of the deepest occurrence.
    pub fn depth(&self) -> usize {
        (0..self.occ.len())
            .map(|mut i| {
                let mut d = 0;
                while let Some(p) = self.occ[i].1 {
                    d += 1;
                    i = p;
                }
                d
            })
            .max()
            .unwrap_or(0)
    }

    /// Members the tree reaches (the source included).
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.occ.iter().map(|&(m, _)| m)
    }
}

/// A tree and the rate it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedTree {
    /// The tree.
    pub tree: Tree,
    /// Its rate, bits/s.
    pub rate: u64,
}

/// A session's trees.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packing {
    /// The trees, largest rate first.
    pub trees: Vec<WeightedTree>,
    /// Their total rate, bits/s.
    pub rate: u64,
}

impl Packing {
    /// The total rate the trees put on overlay link `u → v`.
    pub fn load(&self, u: usize, v: usize) -> u64 {
        self.trees
            .iter()
            .filter(|t| t.tree.edges().any(|e| e == (u, v)))
            .map(|t| t.rate)
            .sum()
    }
}

/// A critical cut of a session (Definition 2): a cut separating the
/// source from some receiver whose capacity is the session rate.
///
/// It is stored as two member sets so it fits a packet header: overlay link
/// `s → v` crosses iff `v` is not on the relay side, and `u → v` (`u ≠ s`)
/// crosses iff `u` is on the relay side and `v` is not on the receiver
/// side. For the two-layer graph these are the `r_i` and `t_i` nodes on the
/// source side; for the overlay graph both sets are the source side `Z`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The session rate (= the cut's capacity), bits/s.
    pub rate: u64,
    /// The source.
    pub source: usize,
    /// `relay_side[i]`: member `i` relays from the source side.
    pub relay_side: Vec<bool>,
    /// `recv_side[i]`: member `i` receives on the source side.
    pub recv_side: Vec<bool>,
    /// Only links out of the source can cross (Simulcast).
    pub source_links_only: bool,
}

impl Cut {
    /// Whether overlay link `u → v` crosses the cut: the subgradient of the
    /// session rate with respect to `c[u][v]` is 1 (eq. 12).
    pub fn crosses(&self, u: usize, v: usize) -> bool {
        crosses(
            self.source,
            u,
            v,
            |i| self.relay_side.get(i).copied().unwrap_or(true),
            |i| self.recv_side.get(i).copied().unwrap_or(true),
            self.source_links_only,
        )
    }
}

/// The crossing rule of [`Cut::crosses`] on any representation of the two
/// sides (the wire format carries them as bit masks).
pub fn crosses(
    source: usize,
    u: usize,
    v: usize,
    relay_side: impl Fn(usize) -> bool,
    recv_side: impl Fn(usize) -> bool,
    source_links_only: bool,
) -> bool {
    if u == v || v == source {
        false
    } else if u == source {
        if source_links_only {
            !recv_side(v)
        } else {
            !relay_side(v)
        }
    } else {
        !source_links_only && relay_side(u) && !recv_side(v)
    }
}

impl SessionGraph<'_> {
    fn rate(&self, u: usize, v: usize) -> u64 {
        self.rates[u * self.n + v]
    }

    fn delay(&self, u: usize, v: usize) -> Duration {
        self.delays[u * self.n + v]
    }

    fn receivers(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.n).filter(move |&i| i != self.source)
    }

    fn check(&self) {
        assert!(self.source < self.n, "source {} of {}", self.source, self.n);
        assert_eq!(self.rates.len(), self.n * self.n, "rate matrix size");
        assert_eq!(self.delays.len(), self.n * self.n, "delay matrix size");
    }
}

/// The session rate `R_m(c_m, D)` the model can carry: eq. (5) for
/// [`Model::TwoHop`], the minimum max-flow for [`Model::Deep`], and the
/// best split over the fixed trees for the baselines.
pub fn session_rate(g: &SessionGraph<'_>, model: Model) -> u64 {
    g.check();
    if g.n < 2 {
        return 0;
    }
    match model {
        Model::TwoHop => two_hop_closed_form(g),
        Model::Deep => {
            let (fg, recv) = deep_graph(g);
            let mut s = Scratch::default();
            fg.min_max_flow(0, &recv, &mut s).map_or(0, |(k, _)| k)
        }
        Model::Star => star(g).map_or(0, |(r, _)| r),
        Model::Mutualcast => mutualcast_split(g).0,
    }
}

/// Eq. (5): `min_j Σ_v min(c[s][v], c[v][j])`, with `c[j][j] = ∞` and the
/// delay-infeasible edges left out.
fn two_hop_closed_form(g: &SessionGraph<'_>) -> u64 {
    let s = g.source;
    g.receivers()
        .map(|j| {
            g.receivers()
                .filter(|&v| g.delay(s, v) <= g.bound)
                .map(|v| {
                    let first = g.rate(s, v);
                    if v == j {
                        first
                    } else if g.delay(s, v) + g.delay(v, j) <= g.bound {
                        first.min(g.rate(v, j))
                    } else {
                        0
                    }
                })
                .sum::<u64>()
        })
        .min()
        .unwrap_or(0)
}

/// The two-layer graph `D_m`: node 0 is the source, `1 + i` the relay
/// node and `n + i` the receiver node of the `i`-th receiver.
fn two_layer_graph(g: &SessionGraph<'_>) -> (FlowGraph, Vec<usize>, Vec<usize>) {
    let recv: Vec<usize> = g.receivers().collect();
    let k = recv.len();
    let mut fg = FlowGraph::new(1 + 2 * k);
    let s = g.source;
    for (i, &ri) in recv.iter().enumerate() {
        if g.delay(s, ri) > g.bound {
            continue;
        }
        fg.set(0, 1 + i, g.rate(s, ri));
        fg.set(1 + i, 1 + k + i, INF);
        for (j, &rj) in recv.iter().enumerate() {
            if i != j && g.delay(s, ri) + g.delay(ri, rj) <= g.bound {
                fg.set(1 + i, 1 + k + j, g.rate(ri, rj));
            }
        }
    }
    let sinks = (0..k).map(|j| 1 + k + j).collect();
    (fg, recv, sinks)
}

/// Shortest overlay delays from the source.
fn delays_from_source(g: &SessionGraph<'_>) -> Vec<Duration> {
    let n = g.n;
    let mut dist = vec![Duration::MAX; n];
    let mut done = vec![false; n];
    dist[g.source] = Duration::ZERO;
    for _ in 0..n {
        let Some(u) = (0..n)
            .filter(|&u| !done[u] && dist[u] < Duration::MAX)
            .min_by_key(|&u| dist[u])
        else {
            break;
        };
        done[u] = true;
        for v in 0..n {
            if v != u {
                let d = dist[u].saturating_add(g.delay(u, v));
                if d < dist[v] {
                    dist[v] = d;
                }
            }
        }
    }
    dist
}

/// The overlay graph for [`Model::Deep`] with node 0 the source (members
/// are renumbered so the source comes first) and every edge that lies on
/// some path within the bound. Returns the graph and its receivers.
fn deep_graph(g: &SessionGraph<'_>) -> (FlowGraph, Vec<usize>) {
    let order = deep_order(g);
    let n = g.n;
    let ds = delays_from_source(g);
    let mut fg = FlowGraph::new(n);
    for (a, &u) in order.iter().enumerate() {
        for (b, &v) in order.iter().enumerate() {
            if a != b && b != 0 && ds[u].saturating_add(g.delay(u, v)) <= g.bound {
                fg.set(a, b, g.rate(u, v));
            }
        }
    }
    (fg, (1..n).collect())
}

/// Members in the order of the deep graph's nodes: source first.
fn deep_order(g: &SessionGraph<'_>) -> Vec<usize> {
    std::iter::once(g.source).chain(g.receivers()).collect()
}

/// Simulcast: the star's rate and the receiver that limits it.
fn star(g: &SessionGraph<'_>) -> Option<(u64, usize)> {
    let s = g.source;
    g.receivers()
        .map(|t| {
            let c = if g.delay(s, t) <= g.bound {
                g.rate(s, t)
            } else {
                0
            };
            (c, t)
        })
        .min()
}

/// Relay `r`'s links to the session's other receivers in its depth-2
/// tree, as `(receiver, rate)`; `None` for a link the delay bound rules out.
fn relay_links<'a>(
    g: &'a SessionGraph<'_>,
    r: usize,
) -> impl Iterator<Item = (usize, Option<u64>)> + 'a {
    let s = g.source;
    g.receivers().filter(move |&t| t != r).map(move |t| {
        let fits = g.delay(s, r) + g.delay(r, t) <= g.bound;
        (t, fits.then(|| g.rate(r, t)))
    })
}

/// What relay `r`'s depth-2 tree can forward to every other receiver.
fn relay_forward(g: &SessionGraph<'_>, r: usize) -> u64 {
    relay_links(g, r)
        .map(|(_, c)| c.unwrap_or(0))
        .min()
        .unwrap_or(INF)
}

/// Mutualcast: the best split `(total, star rate, per-relay rates)` of
/// the source's links between the star and the depth-2 trees.
fn mutualcast_split(g: &SessionGraph<'_>) -> (u64, u64, Vec<(usize, u64)>) {
    let s = g.source;
    let recv: Vec<usize> = g.receivers().collect();
    // m_r: what relay r can forward to every other receiver within the bound.
    let relay: Vec<(usize, u64, u64)> = recv
        .iter()
        .filter(|&&r| g.delay(s, r) <= g.bound)
        .map(|&r| (r, g.rate(s, r), relay_forward(g, r)))
        .collect();
    let star_cap = if relay.len() == recv.len() {
        relay.iter().map(|&(_, c, _)| c).min().unwrap_or(0)
    } else {
        0
    };
    let value = |x0: u64| -> u64 {
        x0 + relay
            .iter()
            .map(|&(_, c, m)| (c - x0.min(c)).min(m))
            .sum::<u64>()
    };
    let mut candidates = vec![0, star_cap];
    candidates.extend(
        relay
            .iter()
            .filter_map(|&(_, c, m)| c.checked_sub(m))
            .filter(|&x| x <= star_cap),
    );
    let x0 = candidates
        .into_iter()
        .max_by_key(|&x| (value(x), std::cmp::Reverse(x)))
        .unwrap_or(0);
    let per_relay = relay
        .iter()
        .map(|&(r, c, m)| (r, (c - x0.min(c)).min(m)))
        .collect();
    (value(x0), x0, per_relay)
}

/// Rates within this fraction of a Mutualcast relay's smallest forwarding
/// rate count as tied for the cut: reported rates move in steps of a few
/// percent, and the relay's links to the other receivers all carry its
/// tree's full rate. When only the smallest got the gain, the others
/// decayed under their prices until one of them was the smallest; with 5%
/// the dumbbell's four Mutualcast sessions settle at 113 kbit/s each, with
/// none (exact ties only) at 109-116. The star (Simulcast) keeps the single
/// smallest link: there the tie let a session push both of its crossing
/// links at once and the standing queue passed the bound (30-50% loss).
const TIE: f64 = 0.05;

/// Mutualcast's critical cut: its rate, and as the cut's sides its
/// subgradient, the links whose rate limits [`mutualcast_split`] at its
/// split. A relay whose tree is held back by its source link (`c[s][r] − x₀ ≤ m_r`)
/// puts `s → r` in the cut (relay side off); one held back by forwarding
/// puts its smallest links `r → t` in (their receivers' side off, which
/// also brings in the same receivers' links from the other relays whose
/// relay side is on: the masks cannot say more). Raising every link in
/// the cut raises every depth-2 tree whose two limits are not tied, at
/// the same split (tested).
///
/// The two-layer graph's minimum cut is the wrong gradient here: it
/// steered gain to links the fixed trees do not bind on while the ones
/// they did bind on (a relay's links back across the bottleneck) only
/// saw prices and shrank.
fn mutualcast_cut(g: &SessionGraph<'_>) -> Cut {
    let (rate, x0, per_relay) = mutualcast_split(g);
    let s = g.source;
    let mut relay_side = vec![true; g.n];
    let mut recv_side = vec![true; g.n];
    for (r, _) in per_relay {
        let m = relay_forward(g, r);
        // At a tie between the two, the masks can only name one (a relay
        // link crosses only from the relay side): the source link.
        if g.rate(s, r).saturating_sub(x0) <= m {
            relay_side[r] = false;
        } else {
            // A link the bound rules out cannot be raised; one at rate 0
            // (never used yet) can and must be.
            let limit = m as f64 * (1.0 + TIE);
            for (t, c) in relay_links(g, r) {
                if c.is_some_and(|c| c as f64 <= limit) {
                    recv_side[t] = false;
                }
            }
        }
    }
    Cut {
        rate,
        source: s,
        relay_side,
        recv_side,
        source_links_only: false,
    }
}

/// Pack the session's trees (Algorithm 2 line 1).
pub fn pack(g: &SessionGraph<'_>, model: Model) -> Packing {
    packed(g, model, false).0
}

/// Pack the session's trees and find its critical cut (Algorithm 2 lines
/// 1–2): [`pack`] and [`critical_cut`] at once, the cut taken from the
/// receivers' max-flows the packing starts from instead of computing them
/// again.
pub fn plan(g: &SessionGraph<'_>, model: Model) -> (Packing, Cut) {
    let (packing, cut) = packed(g, model, true);
    (packing, cut.unwrap_or_else(|| critical_cut(g, model)))
}

/// [`pack`], and with `cut` the critical cut where the packing computes
/// the max-flows it comes from (the tree models of more than one member).
fn packed(g: &SessionGraph<'_>, model: Model, cut: bool) -> (Packing, Option<Cut>) {
    g.check();
    if g.n < 2 {
        return (Packing::default(), None);
    }
    let s = g.source;
    let mut the_cut = None;
    // One set of buffers for the receivers' max-flows, the cut and the
    // packing.
    let mut scratch = Scratch::default();
    let mut trees: Vec<WeightedTree> = match model {
        Model::Star => star(g)
            .filter(|&(r, _)| r > 0)
            .map(|(r, _)| WeightedTree {
                tree: star_tree(g),
                rate: r,
            })
            .into_iter()
            .collect(),
        Model::Mutualcast => {
            let (_, x0, per_relay) = mutualcast_split(g);
            let mut v = Vec::new();
            if x0 > 0 {
                v.push(WeightedTree {
                    tree: star_tree(g),
                    rate: x0,
                });
            }
            for (r, x) in per_relay {
                if x > 0 {
                    let mut occ = vec![(s, None), (r, Some(0))];
                    occ.extend(g.receivers().filter(|&t| t != r).map(|t| (t, Some(1))));
                    v.push(WeightedTree {
                        tree: Tree { occ },
                        rate: x,
                    });
                }
            }
            v
        }
        Model::TwoHop => {
            let (fg, recv, sinks) = two_layer_graph(g);
            let k = recv.len();
            let flows = fg.flows(0, &sinks, &mut scratch);
            if cut {
                the_cut = Some(two_hop_cut(g, &recv, &flows, &mut scratch));
            }
            greedy_arborescences(&fg, &sinks, None, flows, &mut scratch)
                .into_iter()
                .map(|(parent, rate)| {
                    // Fold D_m back onto members: r_i -> occurrence of
                    // member i fed by s; t_j -> occurrence fed by a relay
                    // (or, for t_i under r_i, nothing new).
                    let mut occ = vec![(s, None)];
                    let mut relay_occ = vec![None; k];
                    for i in 0..k {
                        if parent[1 + i] == Some(0) {
                            occ.push((recv[i], Some(0)));
                            relay_occ[i] = Some(occ.len() - 1);
                        }
                    }
                    for j in 0..k {
                        if let Some(p) = parent[1 + k + j] {
                            let i = p - 1;
                            if i != j {
                                let po = relay_occ[i].expect("a receiver's relay is in the tree");
                                occ.push((recv[j], Some(po)));
                            }
                        }
                    }
                    WeightedTree {
                        tree: Tree { occ },
                        rate,
                    }
                })
                .collect()
        }
        Model::Deep => {
            let (fg, recv) = deep_graph(g);
            let order = deep_order(g);
            let flows = fg.flows(0, &recv, &mut scratch);
            if cut {
                the_cut = Some(deep_cut(g, &order, &flows, &mut scratch));
            }
            let delay = |a: usize, b: usize| g.delay(order[a], order[b]);
            greedy_arborescences(&fg, &recv, Some((&delay, g.bound)), flows, &mut scratch)
                .into_iter()
                .map(|(parent, rate)| {
                    // Occurrences in breadth-first order from the source.
                    let mut occ = vec![(order[0], None)];
                    let mut occ_of = vec![None; order.len()];
                    occ_of[0] = Some(0);
                    let mut frontier = vec![0usize];
                    while let Some(u) = frontier.pop() {
                        for v in 0..order.len() {
                            if parent[v] == Some(u) {
                                occ.push((order[v], occ_of[u]));
                                occ_of[v] = Some(occ.len() - 1);
                                frontier.insert(0, v);
                            }
                        }
                    }
                    WeightedTree {
                        tree: Tree { occ },
                        rate,
                    }
                })
                .collect()
        }
    };
    // Merge equal trees, largest rate first, ties by structure.
    trees.sort_by(|a, b| a.tree.cmp(&b.tree));
    let mut merged: Vec<WeightedTree> = Vec::new();
    for t in trees {
        match merged.last_mut() {
            Some(last) if last.tree == t.tree => last.rate += t.rate,
            _ => merged.push(t),
        }
    }
    merged.sort_by(|a, b| b.rate.cmp(&a.rate).then_with(|| a.tree.cmp(&b.tree)));
    let rate = merged.iter().map(|t| t.rate).sum();
    let packing = Packing {
        trees: merged,
        rate,
    };
    (packing, the_cut)
}

fn star_tree(g: &SessionGraph<'_>) -> Tree {
    let mut occ = vec![(g.source, None)];
    occ.extend(g.receivers().map(|t| (t, Some(0))));
    Tree { occ }
}

type DelayFn<'a> = (&'a dyn Fn(usize, usize) -> Duration, Duration);

/// Lovász's greedy (Appendix A) on integer capacities from node 0 to
/// `sinks`. Returns `(parent per node, rate)` per tree. With a delay
/// function, a tree edge is only taken if the path to its head stays
/// within the bound; when that leaves no edge keeping the invariant the
/// best remaining edge is taken and the tree gets its bottleneck rate.
/// Branches that end in no sink are pruned before the rate is set.
fn greedy_arborescences(
    fg: &FlowGraph,
    sinks: &[usize],
    delay: Option<DelayFn<'_>>,
    // Every sink's max-flow in `fg`, kept in the residual graph: most of
    // the invariant tests below are answered from them (see `Flows`).
    mut flows: Flows,
    scratch: &mut Scratch,
) -> Vec<(Vec<Option<usize>>, u64)> {
    let n = fg.n;
    let mut g = fg.clone();
    let mut k = flows.min();
    let mut out = Vec::new();
    let mut is_sink = vec![false; n];
    for &t in sinks {
        is_sink[t] = true;
    }
    let max_trees = 4 * n * n + 64;
    // Once the exact search has failed for one tree it is not tried for
    // the next: it fails the same way (the delay bound admits no tree
    // that keeps the invariant), and every failure spends its whole
    // budget of max-flows — thousands per tree, hundreds of trees.
    let mut try_exact = true;
    let mut tree_flows = TreeFlows::default();
    let mut known = Known::default();
    while k > 0 && out.len() < max_trees {
        let mut st = Grow::new(n, sinks.len());
        tree_flows.start(&flows, 0, sinks, k - 1);
        known.clear();
        let mut search = Search {
            g: &g,
            tree_flows: &mut tree_flows,
            is_sink: &is_sink,
            delay: delay.as_ref(),
            scratch: &mut *scratch,
            budget: 8 * n * n,
            known: &mut known,
        };
        let mut exact = try_exact && search.grow(&mut st, true);
        #[cfg(test)]
        if try_exact {
            tests_only::TRAIL.with_borrow_mut(|t| t.push((exact, search.budget)));
        }
        try_exact = exact;
        if !exact {
            // Out of budget (or, with a delay bound, no invariant-keeping
            // tree exists): grow greedily with the best edges.
            st = Grow::new(n, sinks.len());
            if !search.grow(&mut st, false) {
                return out;
            }
            exact = false;
        }
        let Grow {
            mut parent,
            mut edges,
            ..
        } = st;
        // Prune branches that reach no sink (a relay taken for receivers
        // that were then reached another way).
        loop {
            let before = edges.len();
            let heads: Vec<usize> = edges.iter().map(|&(a, _)| a).collect();
            edges.retain(|&(_, v)| is_sink[v] || heads.contains(&v));
            if edges.len() == before {
                break;
            }
        }
        for (v, p) in parent.iter_mut().enumerate() {
            if p.is_some() && !edges.iter().any(|&(_, b)| b == v) {
                *p = None;
            }
        }
        let bottleneck = edges
            .iter()
            .map(|&(u, v)| g.get(u, v))
            .filter(|&c| c < INF)
            .min()
            .unwrap_or(k)
            .min(k);
        let rate = if exact {
            // Largest δ with capacity(g - δ·1_T) = k - δ (an interval
            // [0, δ*] since capacity(g - δ·1_T) + δ is concave and ≤ k).
            let question = TreeRate {
                g: &g,
                flows: &flows,
                sinks,
                tree: &edges,
                k,
            };
            #[cfg(test)]
            if tests_only::BISECT.get() {
                question.bisected(bottleneck, scratch)
            } else {
                question.newton(bottleneck, scratch)
            }
            #[cfg(not(test))]
            question.newton(bottleneck, scratch)
        } else {
            bottleneck
        };
        flows.follow(&g, 0, sinks, edges.iter().copied(), rate, scratch);
        for &(u, v) in &edges {
            let c = g.get(u, v);
            if c < INF {
                g.set(u, v, c - rate);
            }
        }
        out.push((parent, rate));
        k = flows.min();
    }
    out
}

/// A finished exact tree's rate: the largest `δ` up to its bottleneck with
/// every sink's max-flow still at least `k − δ` once the finite tree edges
/// of `g` (the graph the tree grew in) lose `δ` each.
struct TreeRate<'a> {
    g: &'a FlowGraph,
    /// The sinks' max-flows in `g`.
    flows: &'a Flows,
    sinks: &'a [usize],
    tree: &'a [(usize, usize)],
    k: u64,
}

impl TreeRate<'_> {
    /// Whether the tree fits at rate `d`: `None` if so, else a cut that
    /// falls short ([`Flows::short_after`]).
    fn short_at(&self, d: u64, scratch: &mut Scratch) -> Option<(u64, u64)> {
        #[cfg(test)]
        tests_only::QUESTIONS.set(tests_only::QUESTIONS.get() + 1);
        let tree = self.tree.iter().copied();
        self.flows
            .short_after(self.g, 0, self.sinks, tree, d, self.k - d, scratch)
    }

    /// The rate, at most `top` (1 if none fits: an exact tree keeps
    /// `k − 1`), by Newton's method: capacity(g − δ·1_T) is the least over
    /// cuts of `capacity − crossing · δ`, so a cut that falls short at `δ`
    /// bounds the answer by `(capacity − k) / (crossing − 1)`, and the next
    /// `δ` is that bound. A cut once used holds at every smaller `δ`, so
    /// each step meets a new cut and it ends in a few steps where the
    /// bisection it replaced took one max-flow question per bit of `top`
    /// (about twenty at rates in bit/s), and at the same `δ`
    /// (`newton_finds_the_bisections_rate`).
    fn newton(&self, top: u64, scratch: &mut Scratch) -> u64 {
        let mut d = top;
        while let Some((capacity, crossing)) = self.short_at(d, scratch) {
            // Short at `d`: capacity − crossing·d < k − d with capacity ≥ k
            // (the cut's capacity before the loss), so at least two tree
            // edges cross it and the bound is below `d`.
            let next = if crossing >= 2 {
                capacity.saturating_sub(self.k) / (crossing - 1)
            } else {
                0
            };
            debug_assert!(next < d, "Newton's step from {d} to {next}");
            if next == 0 {
                return 1;
            }
            d = next.min(d - 1);
        }
        d
    }

    /// [`newton`](Self::newton)'s answer by bisection, as the packing found
    /// it until the first session of 2026-12-03; the tests compare the two.
    #[cfg(test)]
    fn bisected(&self, top: u64, scratch: &mut Scratch) -> u64 {
        let (mut lo, mut hi) = (1u64, top);
        if self.short_at(hi, scratch).is_none() {
            return hi;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.short_at(mid, scratch).is_none() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// A tree being grown.
struct Grow {
    parent: Vec<Option<usize>>,
    in_tree: Vec<bool>,
    depth: Vec<Duration>,
    edges: Vec<(usize, usize)>,
    missing: usize,
}

impl Grow {
    /// A tree of node 0 alone, `missing` sinks to reach (all of the
    /// search's sinks).
    fn new(n: usize, missing: usize) -> Grow {
        let mut in_tree = vec![false; n];
        in_tree[0] = true;
        Grow {
            parent: vec![None; n],
            in_tree,
            depth: vec![Duration::ZERO; n],
            edges: Vec::new(),
            missing,
        }
    }
}

/// Growing one tree of Lovász's greedy, with backtracking: in a two-layer
/// graph (a Steiner problem, not a spanning one) an edge that keeps the
/// invariant now can lead to a state where no edge does, so a dead end
/// undoes the last choice and tries the next candidate.
struct Search<'a> {
    g: &'a FlowGraph,
    /// The sinks' flows in `g` less a unit on each finite edge of the tree
    /// grown so far, each at least the residual capacity `k − 1` (the
    /// exact search's invariant).
    tree_flows: &'a mut TreeFlows,
    is_sink: &'a [bool],
    delay: Option<&'a DelayFn<'a>>,
    scratch: &'a mut Scratch,
    /// Capacity evaluations left before giving up on exactness.
    budget: usize,
    /// What this search has learnt of partial trees it may meet again.
    known: &'a mut Known,
}

/// What one tree's exact search has learnt about partial trees: those the
/// invariant refused, and those it entered and found no tree from, with
/// the capacity evaluations that took.
///
/// The search grows a tree one edge at a time in a fixed order and
/// backtracks on dead ends, so it meets the same partial tree again
/// whenever two edges can be taken in either order: after the subtree
/// under `e₁` fails, the one under `e₂` tries `e₁` again. Over the first
/// 8 s of a 15-member conference (`large-7`) the searches that ran out of
/// budget were 3% of all but spent half of all evaluations (3.2 of 6.1
/// million), much of it on partial trees met before. What the search does
/// with a partial tree depends on that tree alone (whether the invariant
/// admits it is the exact answer of [`TreeFlows::admits`] for its edge
/// set; its candidates and their order come from its nodes and depths),
/// so meeting it again, the search would spend the same evaluations to the
/// same end. It charges the budget those evaluations instead and moves
/// on: the budget runs out exactly where it did, and the packing is the
/// same tree for tree (`known_trees_are_charged_as_if_searched_again`).
///
/// A partial tree is known by its nodes' parents ([`Key`]), which holds
/// graphs of up to [`KEY_NODES`] nodes; larger ones are searched without
/// remembering.
#[derive(Debug, Default)]
struct Known {
    /// Per partial tree entered and failed from: the evaluations its
    /// search spent.
    failed: HashMap<Key, usize, BuildHasherDefault<KeyHasher>>,
    /// The partial trees the invariant refused.
    refused: HashSet<Key, BuildHasherDefault<KeyHasher>>,
}

/// The most nodes a [`Key`] holds: a session of sixteen members, whose
/// two-layer graph has 31 nodes (the peers' member masks are 16 bits).
const KEY_NODES: usize = 32;

/// A partial tree: each node's parent, [`NO_PARENT`] outside the tree.
type Key = [u8; KEY_NODES];

/// A node outside the tree, in a [`Key`].
const NO_PARENT: u8 = u8::MAX;

/// A multiply–rotate hash for [`Key`]s (a search's own keys, not chosen
/// by anyone who could make them collide). With the standard library's
/// keyed hash on boxed keys, the hash alone took 1.5% of a 15-member
/// conference's run (`perf` on `large-7`) and the allocations about two
/// points more; with fixed keys and this hash neither shows.
#[derive(Debug, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The tests' view into the search (per thread, as tests run in threads).
#[cfg(test)]
pub(crate) mod tests_only {
    use std::cell::{Cell, RefCell};
    thread_local! {
        /// Search without [`super::Known`], as before it.
        pub(crate) static FORGET: Cell<bool> = const { Cell::new(false) };
        /// Per exact search tried: whether it found a tree, and the budget left.
        pub(crate) static TRAIL: RefCell<Vec<(bool, usize)>> = const { RefCell::new(Vec::new()) };
        /// Find a tree's rate by bisection, not Newton's method
        /// ([`super::TreeRate`]), and the max-flow questions either asked.
        pub(crate) static BISECT: Cell<bool> = const { Cell::new(false) };
        pub(crate) static QUESTIONS: Cell<usize> = const { Cell::new(0) };
        /// Partial trees met again after their search failed, and after
        /// the invariant refused them.
        pub(crate) static FAILED_AGAIN: Cell<usize> = const { Cell::new(0) };
        pub(crate) static REFUSED_AGAIN: Cell<usize> = const { Cell::new(0) };
    }
}

impl Known {
    fn clear(&mut self) {
        self.failed.clear();
        self.refused.clear();
    }

    /// The key of `st`'s partial tree (of at most [`KEY_NODES`] nodes),
    /// with edge `e` added if given.
    fn key(st: &Grow, e: Option<(usize, usize)>) -> Key {
        // Node indices below `KEY_NODES` fit a byte.
        let mut key = [NO_PARENT; KEY_NODES];
        for (v, p) in st.parent.iter().enumerate() {
            if let Some(p) = *p {
                key[v] = p as u8;
            }
        }
        if let Some((u, v)) = e {
            key[v] = u as u8;
        }
        key
    }

    /// The evaluations a search of `st` with edge `e` added would spend
    /// past the invariant's own, if it is known to find no tree: none if
    /// the invariant refused it, what its search took if it failed.
    fn after(&mut self, st: &Grow, e: (usize, usize)) -> Option<usize> {
        let key = Known::key(st, Some(e));
        if self.refused.contains(&key) {
            #[cfg(test)]
            tests_only::REFUSED_AGAIN.set(tests_only::REFUSED_AGAIN.get() + 1);
            return Some(0);
        }
        let spent = self.failed.get(&key).copied();
        #[cfg(test)]
        if spent.is_some() {
            tests_only::FAILED_AGAIN.set(tests_only::FAILED_AGAIN.get() + 1);
        }
        spent
    }

    /// The invariant refused `st` with `e` added.
    fn refuse(&mut self, st: &Grow, e: (usize, usize)) {
        self.refused.insert(Known::key(st, Some(e)));
    }

    /// The search of `st` found no tree, spending `spent` evaluations.
    fn fail(&mut self, st: &Grow, spent: usize) {
        self.failed.insert(Known::key(st, None), spent);
    }
}

impl Search<'_> {
    /// Whether removing one unit of every tree edge plus `e` keeps the
    /// residual capacity at `k − 1` (condition (ii) of Appendix A).
    fn keeps_invariant(&mut self, edges: &[(usize, usize)], e: (usize, usize)) -> bool {
        if self.g.get(e.0, e.1) >= INF {
            return true;
        }
        self.budget = self.budget.saturating_sub(1);
        self.tree_flows.admits(self.g, edges, e, self.scratch)
    }

    /// Grow `st` until it reaches every sink. With `exact`, only edges
    /// keeping the invariant are taken (backtracking on dead ends while
    /// the budget lasts); without, the first candidate is taken.
    fn grow(&mut self, st: &mut Grow, exact: bool) -> bool {
        let cand = self.candidates(st);
        self.grow_from(st, exact, &cand)
    }

    /// The tree's candidate edges, collected and sorted afresh (see
    /// [`edges_out`](Self::edges_out)).
    fn candidates(&self, st: &Grow) -> Vec<u128> {
        let n = self.g.n;
        debug_assert!(n <= 1 << 16, "a candidate's key holds 16-bit nodes");
        let mut cand = Vec::new();
        for u in (0..n).filter(|&u| st.in_tree[u]) {
            self.edges_out(st, u, &mut cand);
        }
        cand.sort_unstable();
        cand
    }

    /// Appends to `out` the candidate edges out of tree node `u` (to the
    /// nodes outside the tree, with capacity, within the delay bound), as
    /// keys of the search's order: free edges first (r_i -> t_i), then
    /// edges into receivers, then the widest, the edge itself breaking
    /// ties (so the order is total). A key is, from its top bit down: not
    /// free, not into a receiver, the capacity's complement, `u`, `v`
    /// ([`edge`]).
    fn edges_out(&self, st: &Grow, u: usize, out: &mut Vec<u128>) {
        for v in (0..self.g.n).filter(|&v| !st.in_tree[v]) {
            let c = self.g.get(u, v);
            if c == 0 {
                continue;
            }
            if let Some((d, bound)) = self.delay
                && st.depth[u].saturating_add(d(u, v)) > *bound
            {
                continue;
            }
            out.push(
                u128::from(c < INF) << 127
                    | u128::from(!self.is_sink[v]) << 126
                    | u128::from(!c) << 32
                    | (u as u128) << 16
                    | v as u128,
            );
        }
    }

    /// [`grow`](Self::grow) from the tree's candidate edges `cand`, in the
    /// search's order. An exact search that meets a partial tree it knows
    /// to end in no tree charges its budget what that took instead of
    /// searching again ([`Known`]).
    fn grow_from(&mut self, st: &mut Grow, exact: bool, cand: &[u128]) -> bool {
        if st.missing == 0 {
            return true;
        }
        if exact && self.budget == 0 {
            return false;
        }
        let before = self.budget;
        if self.extend(st, exact, cand) {
            return true;
        }
        if exact && self.remember() && self.budget > 0 {
            // `extend` leaves the tree as it found it.
            self.known.fail(st, before - self.budget);
        }
        false
    }

    /// Whether the search keeps what it learns ([`Known`]): on graphs its
    /// keys hold, unless a test compares it with a search that does not.
    fn remember(&self) -> bool {
        #[cfg(test)]
        if tests_only::FORGET.get() {
            return false;
        }
        self.g.n <= KEY_NODES
    }

    /// [`grow_from`](Self::grow_from) past its checks: try each candidate
    /// in turn. When an edge brings node `v` in, the next level's
    /// candidates are these without the edges into `v`, merged with `v`'s
    /// own edges out: the same list, in the same order, as collecting and
    /// sorting them afresh (which took a fifth of the packing's time at
    /// sixteen members), in linear time.
    fn extend(&mut self, st: &mut Grow, exact: bool, cand: &[u128]) -> bool {
        let mut fresh = Vec::new();
        let mut next = Vec::with_capacity(cand.len() + self.g.n);
        for &key in cand {
            let (u, v) = edge(key);
            if exact {
                let known = if self.remember() {
                    self.known.after(st, (u, v))
                } else {
                    None
                };
                if let Some(spent) = known {
                    // The invariant's evaluation, and the subtree's.
                    let asked = usize::from(self.g.get(u, v) < INF);
                    self.budget = self.budget.saturating_sub(asked + spent);
                    if self.budget == 0 {
                        return false;
                    }
                    continue;
                }
                if !self.keeps_invariant(&st.edges, (u, v)) {
                    if self.budget == 0 {
                        return false;
                    }
                    if self.remember() {
                        self.known.refuse(st, (u, v));
                    }
                    continue;
                }
            }
            st.parent[v] = Some(u);
            st.in_tree[v] = true;
            if let Some((d, _)) = self.delay {
                st.depth[v] = st.depth[u].saturating_add(d(u, v));
            }
            if exact {
                self.tree_flows.take(self.g, (u, v));
            }
            st.edges.push((u, v));
            if self.is_sink[v] {
                st.missing -= 1;
            }
            fresh.clear();
            self.edges_out(st, v, &mut fresh);
            fresh.sort_unstable();
            next.clear();
            let mut old = cand.iter().copied().filter(|&k| edge(k).1 != v).peekable();
            let mut new = fresh.iter().copied().peekable();
            while let Some(k) = match (old.peek(), new.peek()) {
                (Some(a), Some(b)) if b < a => new.next(),
                (Some(_), _) => old.next(),
                (None, _) => new.next(),
            } {
                next.push(k);
            }
            // The crate's own tests check every merge against a fresh sort.
            #[cfg(test)]
            assert_eq!(next, self.candidates(st), "candidates after {v}");
            if self.grow_from(st, exact, &next) {
                return true;
            }
            if self.is_sink[v] {
                st.missing += 1;
            }
            st.edges.pop();
            if exact {
                self.tree_flows.undo();
            }
            st.in_tree[v] = false;
            st.parent[v] = None;
            if !exact || self.budget == 0 {
                return false;
            }
        }
        false
    }
}

/// The edge `(u, v)` of a candidate's key (see `Search::edges_out`).
fn edge(key: u128) -> (usize, usize) {
    (((key >> 16) & 0xffff) as usize, (key & 0xffff) as usize)
}

/// A critical cut of the session (§5.2): the minimum cut towards the
/// receiver with the smallest max-flow.
pub fn critical_cut(g: &SessionGraph<'_>, model: Model) -> Cut {
    g.check();
    let n = g.n;
    let all = |b: bool| vec![b; n];
    let mut scratch = Scratch::default();
    match model {
        Model::Star => {
            let (rate, t) = star(g).unwrap_or((0, g.source));
            let mut recv_side = all(true);
            recv_side[t] = t == g.source;
            Cut {
                rate,
                source: g.source,
                relay_side: all(true),
                recv_side,
                source_links_only: true,
            }
        }
        Model::Mutualcast => mutualcast_cut(g),
        Model::TwoHop => {
            let (fg, recv, sinks) = two_layer_graph(g);
            let flows = fg.flows(0, &sinks, &mut scratch);
            two_hop_cut(g, &recv, &flows, &mut scratch)
        }
        Model::Deep => {
            let (fg, recv) = deep_graph(g);
            let flows = fg.flows(0, &recv, &mut scratch);
            deep_cut(g, &deep_order(g), &flows, &mut scratch)
        }
    }
}

/// The critical cut of the 2-hop model from the receivers' max-flows in
/// the two-layer graph (`recv`: its receivers).
fn two_hop_cut(g: &SessionGraph<'_>, recv: &[usize], flows: &Flows, scratch: &mut Scratch) -> Cut {
    let k = recv.len();
    let (mut relay_side, mut recv_side) = (vec![true; g.n], vec![true; g.n]);
    let mut rate = 0;
    if let Some((r, side)) = flows.least_cut(0, scratch) {
        for (i, &m) in recv.iter().enumerate() {
            relay_side[m] = side[1 + i];
            recv_side[m] = side[1 + k + i];
        }
        rate = r;
    }
    Cut {
        rate,
        source: g.source,
        relay_side,
        recv_side,
        source_links_only: false,
    }
}

/// The critical cut of the deep model from the receivers' max-flows in
/// the overlay graph (`order`: the members in its nodes' order).
fn deep_cut(g: &SessionGraph<'_>, order: &[usize], flows: &Flows, scratch: &mut Scratch) -> Cut {
    let mut sides = vec![true; g.n];
    let mut rate = 0;
    if let Some((r, side)) = flows.least_cut(0, scratch) {
        for (a, &m) in order.iter().enumerate() {
            sides[m] = side[a];
        }
        rate = r;
    }
    Cut {
        rate,
        source: g.source,
        relay_side: sides.clone(),
        recv_side: sides,
        source_links_only: false,
    }
}

#[cfg(test)]
#[path = "packing_tests.rs"]
mod tests;
