//! The source's schedule over its trees: which tree the next packet of the
//! session goes down.
//!
//! The trees take turns by smooth weighted round robin on their rates, and
//! a tree that stays across a repack keeps its credit. That alone holds
//! each *tree* to its rate over a long run, but not each overlay *link*:
//! sources repack every report interval and on random underlays the trees
//! change with nearly every repack (305 distinct trees for 2409 packets of
//! one session over 100 s), every new tree starting the round robin at
//! zero credit, so over spans of a second a link's packets follow the
//! repacking more than its packed share. Its head polices the session to
//! the link's rate and drops the excess, and the packet is lost to the
//! whole subtree below (docs/celerity.md, "The share guard").
//!
//! The share guard keeps a credit per overlay link, in packets (of the
//! usual size: see `Schedule::next`), that survives repacks: every packet
//! sent adds each link's packed share (the rate of the trees through it
//! over the total), the link of every edge of the tree the packet goes down
//! pays one. The round robin picks among the trees whose every link's
//! credit is above `−guard` (a link that ran more than `guard` packets
//! ahead of its share sits out until its share catches up); only if no
//! tree qualifies does it pick as before. Credits
//! are held within `±(guard + 1)`, and a link that no tree uses any more
//! forgets its credit, so neither a long-unused link nor an old debt
//! becomes a burst later.

use meshcast_plan::Tree;

/// See the module's documentation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Schedule {
    /// Members in the conference (links are `u * n + v`).
    n: usize,
    /// The trees and their rates, kbit/s.
    trees: Vec<(Tree, f64)>,
    /// Each tree's round-robin credit, kbit/s.
    credit: Vec<f64>,
    /// Each tree's links (`u * n + v`), in the order of `trees`.
    tree_links: Vec<Vec<usize>>,
    /// The links some tree uses, with their shares: packets on the link
    /// per packet of the session.
    shares: Vec<(usize, f64)>,
    /// Each link's credit, packets.
    link_credit: Vec<f64>,
    /// The guard, packets (0 turns it off).
    guard: f64,
}

impl Schedule {
    /// An empty schedule for a conference of `n` members.
    pub(crate) fn new(n: usize, guard: f64) -> Self {
        Schedule {
            n,
            trees: Vec::new(),
            credit: Vec::new(),
            tree_links: Vec::new(),
            shares: Vec::new(),
            link_credit: vec![0.0; n * n],
            guard: guard.max(0.0),
        }
    }

    /// The trees now, with their rates.
    pub(crate) fn trees(&self) -> &[(Tree, f64)] {
        &self.trees
    }

    /// A repack: the new trees (members as conference indices) and their
    /// rates. A tree that stays keeps its round-robin credit; repacking
    /// happens often, and a reset would favour the largest tree every time.
    pub(crate) fn set_trees(&mut self, trees: Vec<(Tree, f64)>) {
        let old = std::mem::take(&mut self.trees);
        let old_credit = std::mem::take(&mut self.credit);
        self.credit = trees
            .iter()
            .map(|(t, _)| {
                old.iter()
                    .position(|(o, _)| o == t)
                    .map_or(0.0, |i| old_credit[i])
            })
            .collect();
        self.trees = trees;
        let n = self.n;
        self.tree_links = self
            .trees
            .iter()
            .map(|(t, _)| t.edges().map(|(u, v)| u * n + v).collect())
            .collect();
        let total: f64 = self.trees.iter().map(|t| t.1).sum();
        let mut share = vec![0.0; n * n];
        if total > 0.0 {
            for (links, (_, r)) in self.tree_links.iter().zip(&self.trees) {
                for &l in links {
                    share[l] += r / total;
                }
            }
        }
        self.shares = (0..n * n)
            .filter(|&l| share[l] > 0.0)
            .map(|l| (l, share[l]))
            .collect();
        for (c, &s) in self.link_credit.iter_mut().zip(&share) {
            if s <= 0.0 {
                *c = 0.0;
            }
        }
    }

    /// Each link's share now: packets on it per packet of the session.
    #[cfg(test)]
    fn share(&self) -> Vec<f64> {
        let mut share = vec![0.0; self.n * self.n];
        for &(l, s) in &self.shares {
            share[l] = s;
        }
        share
    }

    /// The tree the next packet goes down, among those `room` allows (the
    /// first one if it allows none), and its turn taken; `None` without
    /// trees. `weight` is the packet's size in the session's usual packets
    /// (media bytes over `media_bytes`): the turns and the links' credits
    /// count bytes, so that packets of mixed sizes give each tree and link
    /// its share of the bytes, not only of the packets (with sizes that
    /// fall in step with the turns, a count of packets sends one tree all
    /// the short ones). With one size the weight is 1.
    pub(crate) fn next(&mut self, room: impl Fn(usize) -> bool, weight: f64) -> Option<usize> {
        if self.trees.is_empty() {
            return None;
        }
        let guard = self.guard;
        if guard > 0.0 {
            let cap = guard + 1.0;
            for &(l, s) in &self.shares {
                let c = &mut self.link_credit[l];
                *c = (*c + s * weight).clamp(-cap, cap);
            }
        }
        let mut plain = None;
        let mut guarded = None;
        let mut total = 0.0;
        for (i, (_, r)) in self.trees.iter().enumerate() {
            self.credit[i] += r * weight;
            total += r;
            if !room(i) {
                continue;
            }
            let more = |b: Option<usize>| b.is_none_or(|b| self.credit[i] > self.credit[b]);
            if more(plain) {
                plain = Some(i);
            }
            let within = guard <= 0.0
                || self.tree_links[i]
                    .iter()
                    .all(|&l| self.link_credit[l] > -guard);
            if within && more(guarded) {
                guarded = Some(i);
            }
        }
        let best = guarded.or(plain).unwrap_or(0);
        self.credit[best] -= total * weight;
        if guard > 0.0 {
            for &l in &self.tree_links[best] {
                self.link_credit[l] -= weight;
            }
        }
        Some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-hop tree from member 0: it sends to each of `direct`, and for
    /// each `(relay, leaf)` the relay (a child of the source, added if it
    /// is not one yet) forwards to `leaf`.
    fn tree(direct: &[usize], relayed: &[(usize, usize)]) -> Tree {
        let mut occ = vec![(0, None)];
        for &d in direct {
            occ.push((d, Some(0)));
        }
        for &(r, leaf) in relayed {
            let at = occ.iter().position(|&(m, p)| m == r && p == Some(0));
            let at = at.unwrap_or_else(|| {
                occ.push((r, Some(0)));
                occ.len() - 1
            });
            occ.push((leaf, Some(at)));
        }
        Tree { occ }
    }

    /// Sends `packets` packets over a packing that changes every `every`
    /// packets (cycling through `packings`), and returns the largest excess
    /// of any link's packets over its packed share, counted over every
    /// window of `window` packets.
    fn worst_excess(
        guard: f64,
        packings: &[Vec<(Tree, f64)>],
        every: usize,
        packets: usize,
        window: usize,
    ) -> f64 {
        let n = 4;
        let mut s = Schedule::new(n, guard);
        // Per packet: the links it used and the shares it was sent under.
        let mut log: Vec<(Vec<usize>, Vec<f64>)> = Vec::new();
        for p in 0..packets {
            if p % every == 0 {
                s.set_trees(packings[(p / every) % packings.len()].clone());
            }
            let i = s.next(|_| true, 1.0).unwrap();
            let used = s.trees()[i].0.edges().map(|(u, v)| u * n + v).collect();
            log.push((used, s.share()));
        }
        let mut worst = 0.0f64;
        for start in 0..packets - window {
            for link in 0..n * n {
                let (mut sent, mut due) = (0.0, 0.0);
                for (used, share) in &log[start..start + window] {
                    sent += f64::from(u8::from(used.contains(&link)));
                    due += share[link];
                }
                worst = worst.max(sent - due);
            }
        }
        worst
    }

    /// Two packings with the same links and shares whose trees differ in
    /// shape, as repacks on a busy underlay give: every repack's trees are
    /// new to the round robin and start at zero credit, so the larger
    /// tree goes first every time. Only the larger tree (60 of 100)
    /// crosses 1 → 2.
    fn churning() -> Vec<Vec<(Tree, f64)>> {
        vec![
            vec![
                (tree(&[1], &[(1, 2), (1, 3)]), 60.0),
                (tree(&[2], &[(2, 1), (2, 3)]), 40.0),
            ],
            vec![
                (tree(&[1, 3], &[(1, 2)]), 60.0),
                (tree(&[2, 3], &[(2, 1)]), 40.0),
            ],
        ]
    }

    #[test]
    fn the_guard_holds_every_link_to_its_share_through_repacks() {
        // Repacking before every packet, the plain round robin sends every
        // packet down the larger tree: 1 → 2 carries all of them against
        // a share of 60%. With the guard no link runs more than the guard
        // and one packet ahead over any window, however often the trees
        // change.
        let packings = churning();
        let without = worst_excess(0.0, &packings, 1, 600, 30);
        assert!(without >= 11.9, "{without} without the guard");
        for every in [1, 2, 3, 5] {
            let with = worst_excess(3.0, &packings, every, 600, 30);
            assert!(with <= 4.0 + 1e-9, "every {every}: {with} with the guard");
        }
    }

    #[test]
    fn trees_keep_their_rates_when_nothing_changes() {
        // A steady packing: each tree gets its rate's share of the packets,
        // with the guard as without.
        let trees = vec![
            (tree(&[1, 2, 3], &[]), 300.0),
            (tree(&[1], &[(1, 2), (1, 3)]), 100.0),
        ];
        for guard in [0.0, 3.0] {
            let mut s = Schedule::new(4, guard);
            s.set_trees(trees.clone());
            let mut count = [0usize; 2];
            for _ in 0..400 {
                count[s.next(|_| true, 1.0).unwrap()] += 1;
            }
            assert_eq!(count, [300, 100], "guard {guard}");
        }
    }

    #[test]
    fn room_comes_first_and_no_trees_means_no_packet() {
        let mut s = Schedule::new(4, 3.0);
        assert_eq!(s.next(|_| true, 1.0), None);
        s.set_trees(vec![
            (tree(&[1, 2, 3], &[]), 300.0),
            (tree(&[1], &[(1, 2), (1, 3)]), 100.0),
        ]);
        for _ in 0..10 {
            assert_eq!(s.next(|i| i == 1, 1.0), Some(1));
        }
        // A link no tree uses any more forgets its credit.
        s.set_trees(vec![(tree(&[1, 2, 3], &[]), 300.0)]);
        assert_eq!(s.link_credit[2 * 4 + 3], 0.0);
        assert_eq!(s.next(|_| true, 1.0), Some(0));
    }

    /// With packets of mixed sizes the turns count bytes: two trees of
    /// equal rates whose turns fall in step with a cycle of a full and a
    /// 300-byte packet each carry half of the bytes, where counting
    /// packets would give one tree every full packet.
    #[test]
    fn turns_count_bytes_with_packets_of_mixed_sizes() {
        let bytes = |weighted: bool| {
            let mut s = Schedule::new(4, 2.0);
            s.set_trees(vec![
                (tree(&[1, 2, 3], &[]), 50.0),
                (tree(&[2], &[(2, 1), (2, 3)]), 50.0),
            ]);
            let mut carried = [0.0f64; 2];
            for p in 0..1000 {
                let size = if p % 2 == 0 { 1400.0 } else { 300.0 };
                let weight = if weighted { size / 1400.0 } else { 1.0 };
                carried[s.next(|_| true, weight).unwrap()] += size;
            }
            carried[0] / (carried[0] + carried[1])
        };
        let even = bytes(true);
        assert!((even - 0.5).abs() < 0.01, "{even}");
        // The count of packets alone: one tree takes every full packet.
        let skewed = bytes(false);
        assert!((skewed - 0.5).abs() > 0.3, "{skewed}");
    }
}
