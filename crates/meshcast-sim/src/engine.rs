//! The event loop.

use crate::network::{LinkId, Network};
use crate::routing::Routes;
use crate::stats::{ControlRecord, Counters, LinkRecord, MembershipChange, NS_PER_S, RunStats};
use meshcast_core::metrics::FlowRecorder;
use meshcast_core::rng::{Rng, child_seed, rng_from_seed};
use meshcast_core::{
    Addr, Duration, Endpoint, Event, FlowId, IP_UDP_OVERHEAD, NodeId, Rate, Time, Transmit,
};
use meshcast_proto::traffic::SourceConfigError;
use rand::RngExt as _;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use thiserror::Error;

/// A timed change to the simulated world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// The link stops carrying packets: its queue, the packet being
    /// serialised and packets propagating on it are dropped; routes are
    /// recomputed.
    LinkDown(LinkId),
    /// The link carries packets again; routes are recomputed.
    LinkUp(LinkId),
    /// The link's capacity changes; the packet being serialised finishes at
    /// the old rate.
    SetCapacity(LinkId, Rate),
    /// From now on the link drops every k-th packet it finishes sending
    /// (counting from this action), on top of its random loss; `None` turns
    /// the pattern off. A deterministic loss pattern for responsiveness and
    /// aggressiveness tests (MSB scenario II: every other packet, k = 2).
    DropEvery(LinkId, Option<u32>),
    /// The node joins: the [`Membership`] hook's endpoints start on it.
    Join(NodeId),
    /// The node leaves: the endpoints its join started are closed.
    Leave(NodeId),
}

/// The hook that decides which endpoints a joining node runs.
pub trait Membership {
    /// Endpoints (with the ports they bind) that `node` starts at `now`.
    fn join(&mut self, node: NodeId, now: Time) -> Vec<(u16, Box<dyn Endpoint>)>;
}

/// Why the simulator refused a request.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum SimError {
    /// The address is already bound.
    #[error("address {0} already in use")]
    AddrInUse(Addr),
    /// The node does not exist.
    #[error("no node {0}")]
    NoSuchNode(NodeId),
    /// The link does not exist.
    #[error("no link {0:?}")]
    NoSuchLink(LinkId),
    /// More traffic flows than ports to give their sources.
    #[error("too many traffic flows (ports above {TRAFFIC_BASE_PORT} exhausted)")]
    TooManyFlows,
    /// A traffic source's configuration was rejected.
    #[error("traffic source: {0}")]
    Traffic(SourceConfigError),
    /// A layered (MSB) stream's configuration was rejected.
    #[error("layered stream: {0}")]
    Layered(String),
    /// An action scheduled before the current time.
    #[error("action at {at} is before now ({now})")]
    InThePast {
        /// When it was scheduled.
        at: Time,
        /// The current time.
        now: Time,
    },
}

const NO_LINK: u32 = u32::MAX;

/// Why a packet was dropped on a link.
#[derive(Clone, Copy, Debug)]
enum LinkDrop {
    /// The drop-tail queue was full.
    Queue,
    /// Random loss on the wire.
    Loss,
    /// The link went down under it.
    Down,
}

/// Traffic sources added by [`Sim::add_traffic`] bind port
/// `TRAFFIC_BASE_PORT + flow id` on their node.
pub const TRAFFIC_BASE_PORT: u16 = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    TxDone { link: u32, epoch: u32 },
    Arrive { link: u32, pkt: u32, epoch: u32 },
    Timer { slot: u32, generation: u32 },
    Action { index: u32 },
}

#[derive(Debug, PartialEq, Eq)]
struct Entry {
    time: Time,
    seq: u64,
    ev: Ev,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug)]
struct Packet {
    src: Addr,
    dst: Addr,
    wire: u32,
    payload: Vec<u8>,
}

#[derive(Debug)]
struct LinkState {
    to: u32,
    capacity: Rate,
    delay: Duration,
    limit_packets: u32,
    limit_bytes: u64,
    loss: f64,
    /// Drop every k-th packet sent (0: off) and packets sent since the
    /// pattern was set.
    drop_every: u32,
    since_pattern: u32,
    up: bool,
    epoch: u32,
    queue: VecDeque<u32>,
    queued_bytes: u64,
    in_tx: Option<u32>,
    queue_since: Time,
    rng: Rng,
    rec: LinkRecord,
    red: Option<RedState>,
}

/// A link's RED state (see [`crate::network::Red`]).
#[derive(Debug)]
struct RedState {
    p: crate::network::Red,
    avg: f64,
    /// Arrivals since the last early drop (-1: since avg fell below min_th).
    count: i64,
    /// When the link last went idle (nothing sent or waiting).
    idle_since: Option<Time>,
}

impl RedState {
    /// An arrival finds `q` packets waiting (`busy`: the link is
    /// sending); true if RED drops it. `pkt_time` is the transmission time
    /// of a typical (1000-byte) packet.
    fn arrival(&mut self, now: Time, q: u32, busy: bool, pkt_time: Duration, u: f64) -> bool {
        let r = self.p;
        if !busy && let Some(since) = self.idle_since.take() {
            let m = now.saturating_since(since).as_secs_f64() / pkt_time.as_secs_f64().max(1e-12);
            self.avg *= (1.0 - r.w_q).powf(m);
        }
        self.avg += r.w_q * (f64::from(q) - self.avg);
        let pb = if self.avg < r.min_th {
            self.count = -1;
            return false;
        } else if self.avg < r.max_th {
            r.max_p * (self.avg - r.min_th) / (r.max_th - r.min_th)
        } else if self.avg < 2.0 * r.max_th {
            r.max_p + (1.0 - r.max_p) * (self.avg - r.max_th) / r.max_th
        } else {
            self.count = 0;
            return true;
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 {
            1.0
        } else {
            (pb / denom).min(1.0)
        };
        if u < pa {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

impl LinkState {
    /// Add the queue-length area since the last change to the per-second
    /// buckets, splitting at second boundaries.
    #[inline]
    fn account_queue(&mut self, now: Time) {
        let q = self.queue.len() as u128;
        if q > 0 {
            let mut t = self.queue_since.as_nanos();
            let end = now.as_nanos();
            while t < end {
                let seg_end = ((t / NS_PER_S + 1) * NS_PER_S).min(end);
                self.rec.bucket(Time::from_nanos(t)).queue_area += q * u128::from(seg_end - t);
                t = seg_end;
            }
        }
        self.queue_since = now;
    }
}

struct Slot {
    addr: Addr,
    ep: Box<dyn Endpoint>,
    timer: Option<Time>,
    generation: u32,
}

/// The network side of the simulator: everything but the endpoints, so the
/// two can be borrowed apart while draining an endpoint.
struct Fabric {
    net: Network,
    now: Time,
    seq: u64,
    heap: BinaryHeap<Entry>,
    links: Vec<LinkState>,
    routes: Routes,
    packets: Vec<Packet>,
    free: Vec<u32>,
    counters: Counters,
    flows: FlowRecorder,
    /// The link rate controls' states the endpoints reported
    /// ([`Event::LinkControl`]), in time order.
    control: Vec<ControlRecord>,
}

impl Fabric {
    #[inline]
    fn push(&mut self, time: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            time,
            seq: self.seq,
            ev,
        });
    }

    fn alloc(&mut self, p: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.packets[i as usize] = p;
                i
            }
            None => {
                self.packets.push(p);
                u32::try_from(self.packets.len() - 1).expect("fewer than 2^32 packets in flight")
            }
        }
    }

    /// Drop `pkt` on link `l`, counting it on the link's current second
    /// and in the run totals under the same cause.
    #[inline]
    fn drop_on_link(&mut self, l: usize, pkt: u32, cause: LinkDrop) {
        let b = self.links[l].rec.bucket(self.now);
        let c = &mut self.counters;
        let (on_link, in_run) = match cause {
            LinkDrop::Queue => (&mut b.drops_queue, &mut c.drops_queue),
            LinkDrop::Loss => (&mut b.drops_loss, &mut c.drops_loss),
            LinkDrop::Down => (&mut b.drops_down, &mut c.drops_down),
        };
        *on_link += 1;
        *in_run += 1;
        self.release(pkt);
    }

    #[inline]
    fn release(&mut self, pkt: u32) {
        self.packets[pkt as usize].payload = Vec::new();
        self.free.push(pkt);
    }

    /// An endpoint at `from` sends `tx`.
    fn send(&mut self, from: Addr, tx: Transmit) {
        self.counters.sent += 1;
        let wire =
            u32::try_from(tx.payload.len()).unwrap_or(u32::MAX - IP_UDP_OVERHEAD) + IP_UDP_OVERHEAD;
        let pkt = self.alloc(Packet {
            src: from,
            dst: tx.to,
            wire,
            payload: tx.payload,
        });
        if tx.to.node == from.node {
            self.push(
                self.now,
                Ev::Arrive {
                    link: NO_LINK,
                    pkt,
                    epoch: 0,
                },
            );
        } else {
            self.forward(from.node, pkt);
        }
    }

    fn forward(&mut self, at: NodeId, pkt: u32) {
        let dst = self.packets[pkt as usize].dst.node;
        match self.routes.next_hop(at.index(), dst.index()) {
            Some(l) => self.enqueue(l.index(), pkt),
            None => {
                self.counters.drops_unreachable += 1;
                self.release(pkt);
            }
        }
    }

    fn enqueue(&mut self, l: usize, pkt: u32) {
        let wire = self.packets[pkt as usize].wire;
        let now = self.now;
        let link = &mut self.links[l];
        if !link.up {
            // Routing avoids down links; kept for safety.
            self.drop_on_link(l, pkt, LinkDrop::Down);
            return;
        }
        if let Some(red) = &mut link.red {
            let busy = link.in_tx.is_some();
            let pkt_time = link
                .capacity
                .transmit_time(1000 + meshcast_core::IP_UDP_OVERHEAD as u64)
                .unwrap_or(Duration::from_secs(1));
            let u = link.rng.random::<f64>();
            if red.arrival(now, link.queue.len() as u32, busy, pkt_time, u) {
                self.drop_on_link(l, pkt, LinkDrop::Queue);
                return;
            }
        }
        if link.in_tx.is_none() {
            self.start_tx(l, pkt);
            return;
        }
        if link.queue.len() as u32 >= link.limit_packets
            || link.queued_bytes + u64::from(wire) > link.limit_bytes
        {
            self.drop_on_link(l, pkt, LinkDrop::Queue);
            return;
        }
        link.account_queue(now);
        link.queue.push_back(pkt);
        link.queued_bytes += u64::from(wire);
        let q = link.queue.len() as u32;
        let b = link.rec.bucket(now);
        b.queue_max = b.queue_max.max(q);
    }

    fn start_tx(&mut self, l: usize, pkt: u32) {
        let wire = self.packets[pkt as usize].wire;
        let link = &mut self.links[l];
        link.in_tx = Some(pkt);
        // Capacity is never zero: checked when the network was built and on
        // every capacity change.
        let t = link
            .capacity
            .transmit_time(u64::from(wire))
            .unwrap_or(Duration::from_secs(1));
        let epoch = link.epoch;
        self.push(
            self.now + t,
            Ev::TxDone {
                link: l as u32,
                epoch,
            },
        );
    }

    fn tx_done(&mut self, l: usize) {
        let now = self.now;
        let link = &mut self.links[l];
        let Some(pkt) = link.in_tx.take() else { return };
        let wire = self.packets[pkt as usize].wire;
        let b = link.rec.bucket(now);
        b.tx_bytes += u64::from(wire);
        b.tx_packets += 1;
        self.counters.hops += 1;
        let patterned = link.drop_every > 0 && {
            link.since_pattern += 1;
            link.since_pattern % link.drop_every == 0
        };
        let lost = patterned || (link.loss > 0.0 && link.rng.random::<f64>() < link.loss);
        let (delay, epoch) = (link.delay, link.epoch);
        if lost {
            self.drop_on_link(l, pkt, LinkDrop::Loss);
        } else {
            self.push(
                now + delay,
                Ev::Arrive {
                    link: l as u32,
                    pkt,
                    epoch,
                },
            );
        }
        let link = &mut self.links[l];
        if !link.queue.is_empty() {
            link.account_queue(now);
            let next = link.queue.pop_front().expect("queue checked non-empty");
            link.queued_bytes -= u64::from(self.packets[next as usize].wire);
            self.start_tx(l, next);
        } else if let Some(red) = &mut link.red {
            red.idle_since = Some(now);
        }
    }

    fn set_link_up(&mut self, l: usize, up: bool) {
        let now = self.now;
        let link = &mut self.links[l];
        if link.up == up {
            return;
        }
        link.up = up;
        link.epoch = link.epoch.wrapping_add(1);
        let cap = if up { link.capacity } else { Rate::ZERO };
        link.rec.capacity_log.push((now, cap));
        if !up {
            link.account_queue(now);
            let mut dropped: Vec<u32> = link.queue.drain(..).collect();
            dropped.extend(link.in_tx.take());
            link.queued_bytes = 0;
            for p in dropped {
                self.drop_on_link(l, p, LinkDrop::Down);
            }
        }
        let up: Vec<bool> = self.links.iter().map(|l| l.up).collect();
        self.routes = Routes::compute(&self.net, &up);
    }

    fn record(&mut self, node: NodeId, ev: Event) {
        match ev {
            Event::LinkControl(state) => self.control.push(ControlRecord {
                at: self.now,
                tail: node,
                state,
            }),
            ev => self.flows.record(node, self.now, &ev),
        }
    }
}

/// Endpoints with the addresses they are bound to ([`Sim::into_parts`]).
pub type BoundEndpoints = Vec<(Addr, Box<dyn Endpoint>)>;

/// The simulator.
pub struct Sim {
    fab: Fabric,
    slots: Vec<Option<Slot>>,
    free_slots: Vec<u32>,
    /// Per node: bound `(port, slot)` pairs.
    bound: Vec<Vec<(u16, u32)>>,
    /// Per node: slots started by its last join.
    joined: Vec<Vec<u32>>,
    actions: Vec<Action>,
    membership: Option<Box<dyn Membership>>,
    membership_log: Vec<MembershipChange>,
    events_processed: u64,
}

impl Sim {
    /// A simulator of `net` at time zero; `seed` seeds every random element
    /// (each link's loss process gets `child_seed(seed, "link:A->E")`).
    pub fn new(net: Network, seed: u64) -> Sim {
        let links: Vec<LinkState> = net
            .links()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let id = LinkId(i as u32);
                LinkState {
                    to: s.to.0,
                    capacity: s.params.capacity,
                    delay: s.params.delay,
                    limit_packets: s.params.queue.packets.unwrap_or(u32::MAX),
                    limit_bytes: s.params.queue.bytes.unwrap_or(u64::MAX),
                    loss: s.params.loss,
                    drop_every: 0,
                    since_pattern: 0,
                    up: true,
                    epoch: 0,
                    queue: VecDeque::new(),
                    queued_bytes: 0,
                    in_tx: None,
                    queue_since: Time::ZERO,
                    rng: rng_from_seed(child_seed(seed, &format!("link:{}", net.link_name(id)))),
                    rec: LinkRecord::new(id, s.params.capacity),
                    red: s.params.red.map(|p| RedState {
                        p,
                        avg: 0.0,
                        count: -1,
                        idle_since: None,
                    }),
                }
            })
            .collect();
        let up = vec![true; links.len()];
        let routes = Routes::compute(&net, &up);
        let n = net.nodes().len();
        Sim {
            fab: Fabric {
                net,
                now: Time::ZERO,
                seq: 0,
                heap: BinaryHeap::new(),
                links,
                routes,
                packets: Vec::new(),
                free: Vec::new(),
                counters: Counters::default(),
                flows: FlowRecorder::new(),
                control: Vec::new(),
            },
            slots: Vec::new(),
            free_slots: Vec::new(),
            bound: vec![Vec::new(); n],
            joined: vec![Vec::new(); n],
            actions: Vec::new(),
            membership: None,
            membership_log: Vec::new(),
            events_processed: 0,
        }
    }

    /// The underlay.
    pub fn network(&self) -> &Network {
        &self.fab.net
    }

    /// The current simulated time.
    pub fn now(&self) -> Time {
        self.fab.now
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }

    /// Declare a flow to measure (see [`FlowRecorder::add_flow`]).
    pub fn add_flow(
        &mut self,
        name: impl Into<String>,
        kind: impl Into<String>,
        source: NodeId,
        receivers: Vec<NodeId>,
    ) -> FlowId {
        self.fab.flows.add_flow(name, kind, source, receivers)
    }

    /// Declare when `node`, a receiver of `flow`, is present (see
    /// [`FlowRecorder::set_presence`]).
    pub fn set_presence(&mut self, flow: FlowId, node: NodeId, intervals: Vec<(Time, Time)>) {
        self.fab.flows.set_presence(flow, node, intervals);
    }

    /// Install the hook that [`Action::Join`] calls.
    pub fn set_membership(&mut self, hook: Box<dyn Membership>) {
        self.membership = Some(hook);
    }

    /// Bind `ep` to `addr` now and drain it once (so it can arm its timer).
    pub fn add_endpoint(&mut self, addr: Addr, ep: Box<dyn Endpoint>) -> Result<(), SimError> {
        self.bind(addr, ep).map(|_| ())
    }

    /// Whether something is bound to `addr`.
    pub fn is_bound(&self, addr: Addr) -> bool {
        self.bound
            .get(addr.node.index())
            .is_some_and(|b| b.iter().any(|&(p, _)| p == addr.port))
    }

    fn bind(&mut self, addr: Addr, ep: Box<dyn Endpoint>) -> Result<u32, SimError> {
        if addr.node.index() >= self.bound.len() {
            return Err(SimError::NoSuchNode(addr.node));
        }
        if self.is_bound(addr) {
            return Err(SimError::AddrInUse(addr));
        }
        let slot = Slot {
            addr,
            ep,
            timer: None,
            generation: 0,
        };
        let i = match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                (self.slots.len() - 1) as u32
            }
        };
        self.bound[addr.node.index()].push((addr.port, i));
        self.drain(i);
        Ok(i)
    }

    fn unbind(&mut self, i: u32) {
        if let Some(slot) = self.slots[i as usize].take() {
            self.bound[slot.addr.node.index()].retain(|&(_, s)| s != i);
            self.free_slots.push(i);
        }
    }

    /// Schedule `action` at `at`.
    pub fn schedule(&mut self, at: Time, action: Action) -> Result<(), SimError> {
        if at < self.fab.now {
            return Err(SimError::InThePast {
                at,
                now: self.fab.now,
            });
        }
        match action {
            Action::LinkDown(l)
            | Action::LinkUp(l)
            | Action::SetCapacity(l, _)
            | Action::DropEvery(l, _)
                if l.index() >= self.fab.links.len() =>
            {
                return Err(SimError::NoSuchLink(l));
            }
            Action::Join(n) | Action::Leave(n) if n.index() >= self.bound.len() => {
                return Err(SimError::NoSuchNode(n));
            }
            _ => {}
        }
        let index = u32::try_from(self.actions.len()).expect("fewer than 2^32 actions");
        self.actions.push(action);
        self.fab.push(at, Ev::Action { index });
        Ok(())
    }

    /// Drain slot `i` per the drain rule.
    fn drain(&mut self, i: u32) {
        let fab = &mut self.fab;
        let Some(slot) = self.slots[i as usize].as_mut() else {
            return;
        };
        let now = fab.now;
        while let Some(tx) = slot.ep.poll_transmit(now) {
            fab.send(slot.addr, tx);
        }
        while let Some(ev) = slot.ep.poll_event() {
            fab.record(slot.addr.node, ev);
        }
        let t = slot.ep.poll_timeout();
        if t != slot.timer {
            slot.timer = t;
            slot.generation = slot.generation.wrapping_add(1);
            if let Some(t) = t {
                fab.push(
                    t.max(now),
                    Ev::Timer {
                        slot: i,
                        generation: slot.generation,
                    },
                );
            }
        }
    }

    fn deliver(&mut self, node: NodeId, pkt: u32) {
        let p = &mut self.fab.packets[pkt as usize];
        let port = p.dst.port;
        let slot = self.bound[node.index()]
            .iter()
            .find(|&&(q, _)| q == port)
            .map(|&(_, s)| s);
        let Some(i) = slot else {
            self.fab.counters.drops_no_listener += 1;
            self.fab.release(pkt);
            return;
        };
        let (src, payload) = (p.src, std::mem::take(&mut p.payload));
        self.fab.release(pkt);
        self.fab.counters.delivered += 1;
        let now = self.fab.now;
        if let Some(slot) = self.slots[i as usize].as_mut() {
            slot.ep.handle_datagram(now, src, &payload);
        }
        self.drain(i);
    }

    fn arrive(&mut self, link: u32, pkt: u32, epoch: u32) {
        let node = if link == NO_LINK {
            self.fab.packets[pkt as usize].dst.node
        } else {
            let l = &self.fab.links[link as usize];
            if l.epoch != epoch {
                // The link went down while the packet was propagating.
                self.fab.drop_on_link(link as usize, pkt, LinkDrop::Down);
                return;
            }
            NodeId(l.to)
        };
        if self.fab.packets[pkt as usize].dst.node == node {
            self.deliver(node, pkt);
        } else {
            // Routing only ever hands packets to routers or their
            // destination, so `node` is a router here.
            self.fab.forward(node, pkt);
        }
    }

    fn apply(&mut self, action: Action) {
        let now = self.fab.now;
        match action {
            Action::LinkDown(l) => self.fab.set_link_up(l.index(), false),
            Action::LinkUp(l) => self.fab.set_link_up(l.index(), true),
            Action::DropEvery(l, k) => {
                let link = &mut self.fab.links[l.index()];
                link.drop_every = k.unwrap_or(0);
                link.since_pattern = 0;
            }
            Action::SetCapacity(l, rate) => {
                let link = &mut self.fab.links[l.index()];
                if rate != Rate::ZERO {
                    link.capacity = rate;
                    if link.up {
                        link.rec.capacity_log.push((now, rate));
                    }
                }
            }
            Action::Join(node) => {
                self.membership_log.push(MembershipChange {
                    at: now,
                    node,
                    joined: true,
                });
                let eps = match self.membership.as_mut() {
                    Some(hook) => hook.join(node, now),
                    None => Vec::new(),
                };
                for (port, ep) in eps {
                    // A port the node already uses: the hook's endpoint is
                    // not started (the earlier binding wins).
                    if let Ok(i) = self.bind(Addr::new(node, port), ep) {
                        self.joined[node.index()].push(i);
                    }
                }
            }
            Action::Leave(node) => {
                self.membership_log.push(MembershipChange {
                    at: now,
                    node,
                    joined: false,
                });
                for i in std::mem::take(&mut self.joined[node.index()]) {
                    if let Some(slot) = self.slots[i as usize].as_mut() {
                        slot.ep.handle_close(now);
                    }
                    self.drain(i);
                    self.unbind(i);
                }
            }
        }
    }

    /// Process every event before `end`, then set the clock to `end`.
    /// `progress` is called with the current time each time a simulated
    /// second boundary is crossed.
    pub fn run_until(&mut self, end: Time, progress: &mut dyn FnMut(Time)) {
        let mut next_progress = Time::from_secs(self.fab.now.as_nanos() / NS_PER_S + 1);
        while let Some(top) = self.fab.heap.peek() {
            if top.time >= end {
                break;
            }
            let Entry { time, ev, .. } = self.fab.heap.pop().expect("peeked");
            self.fab.now = time;
            if time >= next_progress {
                progress(time);
                next_progress = Time::from_secs(time.as_nanos() / NS_PER_S + 1);
            }
            match ev {
                Ev::TxDone { link, epoch } => {
                    if self.fab.links[link as usize].epoch != epoch {
                        continue;
                    }
                    self.fab.tx_done(link as usize);
                }
                Ev::Arrive { link, pkt, epoch } => self.arrive(link, pkt, epoch),
                Ev::Timer { slot, generation } => {
                    let Some(s) = self.slots[slot as usize].as_mut() else {
                        continue;
                    };
                    if s.generation != generation {
                        continue;
                    }
                    s.timer = None;
                    s.ep.handle_timeout(time);
                    self.drain(slot);
                }
                Ev::Action { index } => self.apply(self.actions[index as usize]),
            }
            self.events_processed += 1;
        }
        self.fab.now = self.fab.now.max(end);
        progress(self.fab.now);
    }

    /// Take the simulation apart before it runs, for a driver that runs
    /// its endpoints elsewhere (`meshcast emu` runs them over real UDP):
    /// every endpoint bound so far with its address (each already drained
    /// once, as binding does), and the flow recorder with every flow
    /// declared. Scheduled actions, joins and the network stay behind.
    pub fn into_parts(self) -> (BoundEndpoints, FlowRecorder) {
        let endpoints = self
            .slots
            .into_iter()
            .flatten()
            .map(|s| (s.addr, s.ep))
            .collect();
        (endpoints, self.fab.flows)
    }

    /// Finish the run and hand over what it measured.
    pub fn into_stats(mut self) -> RunStats {
        let end = self.fab.now;
        let mut links = Vec::with_capacity(self.fab.links.len());
        for mut l in self.fab.links.drain(..) {
            l.account_queue(end);
            // Every link gets a bucket for every second of the run.
            if end > Time::ZERO {
                let last = Time::from_nanos(end.as_nanos() - 1);
                l.rec.bucket(last);
            }
            links.push(l.rec);
        }
        RunStats {
            net: self.fab.net,
            end,
            events_processed: self.events_processed,
            flows: self.fab.flows,
            links,
            counters: self.fab.counters,
            membership: self.membership_log,
            control: self.fab.control,
        }
    }
}

#[path = "flows.rs"]
mod flows;

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
