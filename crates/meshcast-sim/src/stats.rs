//! What a simulation measured: per-link per-second records and run-wide
//! counters. Per-flow records live in [`meshcast_core::metrics`].

use crate::network::{LinkId, Network};
use meshcast_core::metrics::FlowRecorder;
use meshcast_core::{LinkControl, NodeId, Rate, Time};

pub(crate) const NS_PER_S: u64 = 1_000_000_000;

/// One second of one link direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkBucket {
    /// Wire bytes (payload + IP/UDP header) that finished serialisation.
    pub tx_bytes: u64,
    /// Packets that finished serialisation.
    pub tx_packets: u64,
    /// Integral of the waiting-queue length over time, packet·ns.
    pub queue_area: u128,
    /// Longest waiting queue seen, packets.
    pub queue_max: u32,
    /// Packets dropped because the queue was full.
    pub drops_queue: u64,
    /// Packets lost on the wire (random loss).
    pub drops_loss: u64,
    /// Packets dropped because the link went down under them.
    pub drops_down: u64,
}

/// A link direction's figures over a window (serialised as such in
/// `summary.json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LinkFigures {
    /// Wire bits sent / capacity available while up (0 if never up).
    pub utilisation: f64,
    /// Wire kbit/s sent.
    pub tx_kbps: f64,
    /// Time-average waiting queue, packets.
    pub queue_pkts_mean: f64,
    /// Longest waiting queue, packets.
    pub queue_pkts_max: u32,
    /// Drop-tail drops.
    pub drops_queue: u64,
    /// Random-loss drops.
    pub drops_loss: u64,
    /// Drops because the link went down.
    pub drops_down: u64,
}

/// One link direction's record.
#[derive(Clone, Debug)]
pub struct LinkRecord {
    /// The link.
    pub id: LinkId,
    /// Per-second buckets (index = second).
    pub buckets: Vec<LinkBucket>,
    /// Capacity in force from each instant on; zero while the link is down.
    pub capacity_log: Vec<(Time, Rate)>,
}

impl LinkRecord {
    pub(crate) fn new(id: LinkId, capacity: Rate) -> LinkRecord {
        LinkRecord {
            id,
            buckets: Vec::new(),
            capacity_log: vec![(Time::ZERO, capacity)],
        }
    }

    /// The bucket of the second holding `t`, made (with any before it)
    /// if the record does not reach it yet.
    #[inline]
    pub fn bucket(&mut self, t: Time) -> &mut LinkBucket {
        let k = (t.as_nanos() / NS_PER_S) as usize;
        if self.buckets.len() <= k {
            self.buckets.resize_with(k + 1, LinkBucket::default);
        }
        &mut self.buckets[k]
    }

    /// Capacity-seconds (bits) available in `[from, to)`.
    fn capacity_bits(&self, from: Time, to: Time) -> f64 {
        let mut bits = 0.0;
        for (i, &(t, r)) in self.capacity_log.iter().enumerate() {
            let next = self.capacity_log.get(i + 1).map_or(Time::MAX, |e| e.0);
            let (a, b) = (t.max(from), next.min(to));
            if b > a {
                bits += r.as_bps() as f64 * (b - a).as_secs_f64();
            }
        }
        bits
    }

    /// Figures for every second of a run that ended at `end` (the last
    /// second may be partial).
    pub fn per_second(&self, end: Time) -> Vec<LinkFigures> {
        let secs = end.as_nanos().div_ceil(NS_PER_S);
        (0..secs).map(|s| self.figures(s, s + 1, end)).collect()
    }

    /// Figures over the whole seconds `[from_s, to_s)`, clipped to `end`.
    pub fn figures(&self, from_s: u64, to_s: u64, end: Time) -> LinkFigures {
        let (from, to) = (Time::from_secs(from_s), Time::from_secs(to_s).min(end));
        let secs = to.saturating_since(from).as_secs_f64();
        let mut f = LinkFigures::default();
        let mut tx = 0u64;
        let mut area = 0u128;
        for b in self
            .buckets
            .iter()
            .take(to_s as usize)
            .skip(from_s as usize)
        {
            tx += b.tx_bytes;
            area += b.queue_area;
            f.queue_pkts_max = f.queue_pkts_max.max(b.queue_max);
            f.drops_queue += b.drops_queue;
            f.drops_loss += b.drops_loss;
            f.drops_down += b.drops_down;
        }
        let cap = self.capacity_bits(from, to);
        f.utilisation = if cap > 0.0 {
            tx as f64 * 8.0 / cap
        } else {
            0.0
        };
        if secs > 0.0 {
            f.tx_kbps = tx as f64 * 8.0 / secs / 1e3;
            f.queue_pkts_mean = area as f64 / 1e9 / secs;
        }
        f
    }
}

/// Run-wide packet counters (serialised as such in `summary.json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Datagrams endpoints handed to the network.
    pub sent: u64,
    /// Datagrams delivered to an endpoint.
    pub delivered: u64,
    /// Packet hops: serialisations completed on any link.
    pub hops: u64,
    /// Dropped: queue full.
    pub drops_queue: u64,
    /// Dropped: random loss.
    pub drops_loss: u64,
    /// Dropped: link went down under them.
    pub drops_down: u64,
    /// Dropped: no route to the destination.
    pub drops_unreachable: u64,
    /// Dropped: nothing bound to the destination port.
    pub drops_no_listener: u64,
}

/// A node joining or leaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MembershipChange {
    /// When.
    pub at: Time,
    /// Which node.
    pub node: NodeId,
    /// Joined (true) or left (false).
    pub joined: bool,
}

/// Everything a finished run measured.
#[derive(Debug)]
pub struct RunStats {
    /// The underlay.
    pub net: Network,
    /// When the run ended.
    pub end: Time,
    /// Events taken off the queue and acted on (stale timers excluded).
    pub events_processed: u64,
    /// Per-flow records.
    pub flows: FlowRecorder,
    /// Per-link records, indexed by [`LinkId`].
    pub links: Vec<LinkRecord>,
    /// Run-wide counters.
    pub counters: Counters,
    /// Joins and leaves in time order.
    pub membership: Vec<MembershipChange>,
    /// The link rate controls' states, in time order: empty unless the
    /// endpoints were asked to trace their control
    /// ([`meshcast_core::Event::LinkControl`]).
    pub control: Vec<ControlRecord>,
}

/// One [`meshcast_core::Event::LinkControl`] as the driver recorded it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControlRecord {
    /// When the tail updated the rate.
    pub at: Time,
    /// The node at the link's tail (the endpoint that reported it).
    pub tail: NodeId,
    /// The state.
    pub state: LinkControl,
}
