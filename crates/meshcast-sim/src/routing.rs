//! Static shortest-path routing.
//!
//! Paths minimise hop count over the links that are up; only routers
//! forward, so a host is never an intermediate hop (it can be the first
//! or the last). Among equally short next hops a node picks the one whose
//! name sorts first. Every node forwards towards a destination along a
//! neighbour one hop closer to it, so the tables are loop-free and
//! consistent hop by hop.

use crate::network::{LinkId, Network, NodeKind};
use meshcast_core::NodeId;
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// Next-hop tables for every (node, destination) pair.
#[derive(Clone, Debug)]
pub struct Routes {
    n: usize,
    /// `next[at * n + dst]`: the link to take at `at` towards `dst`.
    next: Vec<u32>,
}

impl Routes {
    /// Compute the tables for `net` with the links for which `up` is true.
    pub fn compute(net: &Network, up: &[bool]) -> Routes {
        let n = net.nodes().len();
        // Rank of each node by name, for tie-breaking.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| net.nodes()[a].name.cmp(&net.nodes()[b].name));
        let mut rank = vec![0usize; n];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        // Incoming and outgoing up links per node.
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut outgoing: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, l) in net.links().iter().enumerate() {
            if up[i] {
                incoming[l.to.index()].push(i as u32);
                outgoing[l.from.index()].push(i as u32);
            }
        }
        let is_router: Vec<bool> = net
            .nodes()
            .iter()
            .map(|s| s.kind == NodeKind::Router)
            .collect();

        let mut next = vec![NONE; n * n];
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for dst in 0..n {
            // Reverse BFS from dst, expanding only through routers (and dst).
            dist.fill(u32::MAX);
            dist[dst] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(x) = queue.pop_front() {
                for &l in &incoming[x] {
                    let y = net.links()[l as usize].from.index();
                    if dist[y] == u32::MAX {
                        dist[y] = dist[x] + 1;
                        if is_router[y] {
                            queue.push_back(y);
                        }
                    }
                }
            }
            for at in 0..n {
                if at == dst || dist[at] == u32::MAX {
                    continue;
                }
                let mut best: Option<(usize, u32)> = None;
                for &l in &outgoing[at] {
                    let v = net.links()[l as usize].to.index();
                    let via_ok = v == dst || is_router[v];
                    if via_ok && dist[v] != u32::MAX && dist[v] + 1 == dist[at] {
                        let better = match best {
                            None => true,
                            Some((r, _)) => rank[v] < r,
                        };
                        if better {
                            best = Some((rank[v], l));
                        }
                    }
                }
                if let Some((_, l)) = best {
                    next[at * n + dst] = l;
                }
            }
        }
        Routes { n, next }
    }

    /// The link to take at `at` towards `dst`, if `dst` is reachable.
    #[inline]
    pub(crate) fn next_hop(&self, at: usize, dst: usize) -> Option<LinkId> {
        let l = self.next[at * self.n + dst];
        (l != NONE).then_some(LinkId(l))
    }

    /// The link to take at `at` towards `dst`, if `dst` is reachable from
    /// `at` (`None` also for `at == dst`). Real underlays built from a
    /// scenario (`meshcast emu`) install these tables as their routes.
    pub fn next(&self, at: NodeId, dst: NodeId) -> Option<LinkId> {
        if at.index() >= self.n || dst.index() >= self.n {
            return None;
        }
        self.next_hop(at.index(), dst.index())
    }
}

/// The links a packet from `from` to `to` crosses in `net` with the links
/// for which `up` is true, as the simulator routes it (`None`: no route).
pub fn path(net: &Network, up: &[bool], from: NodeId, to: NodeId) -> Option<Vec<LinkId>> {
    let routes = Routes::compute(net, up);
    let mut at = from.index();
    let mut out = Vec::new();
    while at != to.index() {
        let l = routes.next_hop(at, to.index())?;
        out.push(l);
        at = net.links()[l.index()].to.index();
        if out.len() > routes.n {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::LinkParams;
    use meshcast_core::{Duration, Rate};

    fn p() -> LinkParams {
        LinkParams::drop_tail(Rate::from_kbps(1000), Duration::ZERO, 10)
    }

    #[test]
    fn hosts_never_transit_and_ties_go_by_name() {
        // A - B (hosts, direct), A - R2 - C, A - R1 - C (routers R1, R2).
        let mut net = Network::new();
        let a = net.add_node("A", NodeKind::Host).unwrap();
        let b = net.add_node("B", NodeKind::Host).unwrap();
        let c = net.add_node("C", NodeKind::Host).unwrap();
        let r2 = net.add_node("R2", NodeKind::Router).unwrap();
        let r1 = net.add_node("R1", NodeKind::Router).unwrap();
        net.add_duplex(a, b, p()).unwrap();
        net.add_duplex(b, c, p()).unwrap(); // would make A-B-C 2 hops
        net.add_duplex(a, r2, p()).unwrap();
        net.add_duplex(r2, c, p()).unwrap();
        net.add_duplex(a, r1, p()).unwrap();
        net.add_duplex(r1, c, p()).unwrap();
        let up = vec![true; net.links().len()];
        let routes = Routes::compute(&net, &up);
        // A -> C: B is a host, so via a router; R1 sorts before R2.
        assert_eq!(routes.next_hop(a.index(), c.index()), net.link_id(a, r1));
        assert_eq!(routes.next_hop(a.index(), b.index()), net.link_id(a, b));
        // With both routers' links to C down, only B could relay: unreachable.
        let mut up = up;
        up[net.link_id(r1, c).unwrap().index()] = false;
        up[net.link_id(r2, c).unwrap().index()] = false;
        let routes = Routes::compute(&net, &up);
        assert_eq!(routes.next_hop(a.index(), c.index()), None);
        assert_eq!(routes.next_hop(b.index(), c.index()), net.link_id(b, c));
    }
}
