//! Per-flow delivery metrics, bucketed by second.
//!
//! Drivers feed a [`FlowRecorder`] with the [`crate::Event::FlowSent`] and
//! [`crate::Event::FlowReceived`] events their endpoints report. Figures
//! ([`FlowFigures`]) are then computed for any whole-second window; the
//! per-second series is the window `[k, k+1)` for every second `k`.
//!
//! Definitions (docs/report-format.md repeats them for readers):
//!
//! - `send_kbps`: payload bits the source sent in the window / its length.
//! - `recv_kbps_min`: for each declared receiver, payload bits it received
//!   in the window (by arrival time) / its length; the lowest of these
//!   ([`FlowRecord::figures_each`] gives each receiver's too).
//! - `delay_ms_mean`, `delay_ms_p95`: one-way delay of the packets received
//!   in the window, over all receivers. The 95th percentile comes from a
//!   log-linear histogram with 128 bins per octave (error below 0.4%).
//! - `loss`: for each receiver, the fraction of the packets *sent* in the
//!   window that it never received (packets still in flight at the end of
//!   the run count as lost); the highest of these.
//!
//! A receiver with declared presence intervals ([`FlowRecorder::set_presence`],
//! for members that join or leave) only counts in windows it is present
//! for throughout.
//!
//! The recorder also sums the bytes endpoints report sending by purpose
//! ([`crate::Event::BytesSent`]) for [`FlowRecorder::overhead`], and counts
//! the data packets endpoints report dropping ([`crate::Event::FlowDropped`])
//! by cause, per second of sending, for [`FlowRecord::drops`].

use crate::endpoint::DropCause;
use crate::ids::{FlowId, NodeId};
use crate::layered::LayeredRecord;
use crate::time::{Duration, Time};
use crate::video::{VideoFigures, VideoRecord};
use std::collections::BTreeMap;

const NS_PER_S: u64 = 1_000_000_000;

/// What one flow's figures are over a window (serialised as such in
/// `summary.json`).
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct FlowFigures {
    /// Payload kbit/s sent by the source.
    pub send_kbps: f64,
    /// Lowest payload goodput over the receivers, kbit/s.
    pub recv_kbps_min: f64,
    /// Mean one-way delay of received packets, ms (`None`: none received).
    pub delay_ms_mean: Option<f64>,
    /// 95th percentile of one-way delay, ms (`None`: none received).
    pub delay_ms_p95: Option<f64>,
    /// Highest fraction of sent packets a receiver never got (`None`: none
    /// sent).
    pub loss: Option<f64>,
}

/// Protocol overhead: of all bytes endpoints sent (IP/UDP headers not
/// included), the fractions that were data headers, control and coded
/// repairs.
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct Overhead {
    /// All bytes sent.
    pub bytes_sent: u64,
    /// Data packet headers / all bytes.
    pub header_fraction: f64,
    /// Control messages / all bytes.
    pub control_fraction: f64,
    /// Coded repairs (loss recovery) / all bytes.
    pub repair_fraction: f64,
}

/// The data packets of a flow its endpoints dropped, by cause (serialised
/// as such in `summary.json`). Each count is of drops, not of receivers
/// that missed the packet: a packet a relay drops is lost for its whole
/// subtree and counts once.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct Drops {
    /// Arrived past the delay bound, at a relay or a receiver.
    pub late: u64,
    /// No room in the flow's rate on the next overlay link.
    pub policed: u64,
    /// The next overlay link was down.
    pub link_down: u64,
    /// Waited at the source past what the delay bound allows, never sent
    /// (application media only).
    pub stale: u64,
}

impl Drops {
    fn add(&mut self, counts: &[u64; DropCause::ALL.len()]) {
        self.late += counts[DropCause::Late.index()];
        self.policed += counts[DropCause::Policed.index()];
        self.link_down += counts[DropCause::LinkDown.index()];
        self.stale += counts[DropCause::Stale.index()];
    }

    /// All drops, whatever the cause.
    pub fn total(&self) -> u64 {
        self.late + self.policed + self.link_down + self.stale
    }
}

/// A log-linear histogram of durations (128 bins per power of two), with
/// the largest sample kept exactly.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct DelayHistogram {
    bins: BTreeMap<u16, u64>,
    max_ns: u64,
}

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

impl DelayHistogram {
    fn bin_of(ns: u64) -> u16 {
        if ns < SUB {
            return ns as u16;
        }
        let e = 63 - ns.leading_zeros(); // >= SUB_BITS
        let m = (ns >> (e - SUB_BITS)) & (SUB - 1);
        // (e - SUB_BITS + 1) * 128 + m <= 57 * 128 + 127: fits u16.
        ((u64::from(e - SUB_BITS + 1) << SUB_BITS) + m) as u16
    }

    /// The midpoint of a bin's range.
    fn value_of(bin: u16) -> f64 {
        let bin = u64::from(bin);
        if bin < SUB {
            return bin as f64;
        }
        let e = (bin >> SUB_BITS) + u64::from(SUB_BITS) - 1;
        let m = bin & (SUB - 1);
        let lo = (SUB + m) << (e - u64::from(SUB_BITS));
        let width = 1u64 << (e - u64::from(SUB_BITS));
        lo as f64 + (width as f64 - 1.0) / 2.0
    }

    /// Count one sample.
    pub fn record(&mut self, d: Duration) {
        *self.bins.entry(Self::bin_of(d.as_nanos())).or_insert(0) += 1;
        self.max_ns = self.max_ns.max(d.as_nanos());
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &DelayHistogram) {
        for (&b, &c) in &other.bins {
            *self.bins.entry(b).or_insert(0) += c;
        }
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// The largest sample, exactly (not its bin's midpoint); `None` with
    /// no samples.
    pub fn max(&self) -> Option<Duration> {
        (!self.bins.is_empty()).then_some(Duration::from_nanos(self.max_ns))
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.bins.values().sum()
    }

    /// The `q`-quantile (0..=1), nearest-rank, as the bin's midpoint.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (&b, &c) in &self.bins {
            seen += c;
            if seen >= rank {
                return Some(Duration::from_nanos(Self::value_of(b).round() as u64));
            }
        }
        None
    }
}

#[derive(Clone, Debug, Default)]
struct SendBucket {
    packets: u64,
    bytes: u64,
}

#[derive(Clone, Debug, Default)]
struct RecvBucket {
    /// Payload bytes that arrived in this second.
    bytes: u64,
    /// Packets sent in this second that arrived (whenever they arrived).
    packets_by_send: u64,
}

#[derive(Clone, Debug, Default)]
struct DelayBucket {
    count: u64,
    sum_ns: u128,
    hist: DelayHistogram,
}

/// One flow's record.
#[derive(Clone, Debug)]
pub struct FlowRecord {
    /// Stable name shown in reports.
    pub name: String,
    /// What kind of flow (`cbr`, `onoff`, `session`, ...).
    pub kind: String,
    /// Its source node.
    pub source: NodeId,
    /// Its declared receivers.
    pub receivers: Vec<NodeId>,
    sent: Vec<SendBucket>,
    recv: Vec<Vec<RecvBucket>>,
    delay: Vec<DelayBucket>,
    /// Drops by cause ([`DropCause::index`]), by the second their packets
    /// were sent.
    dropped: Vec<[u64; DropCause::ALL.len()]>,
    /// Received events from nodes that are not declared receivers.
    pub stray_packets: u64,
    /// Per receiver: when it is present (`None`: always).
    presence: Vec<Option<Vec<(Time, Time)>>>,
    /// Frames and packet latencies of a layered stream (empty for other
    /// kinds).
    pub layered: LayeredRecord,
    /// A session's video frames (empty unless its source's application
    /// reports them: [`crate::Event::FrameHanded`]).
    pub video: VideoRecord,
}

fn bucket<T: Default>(v: &mut Vec<T>, t: Time) -> &mut T {
    let k = (t.as_nanos() / NS_PER_S) as usize;
    if v.len() <= k {
        v.resize_with(k + 1, T::default);
    }
    &mut v[k]
}

impl FlowRecord {
    fn window_sent(&self, from: usize, to: usize) -> SendBucket {
        let mut s = SendBucket::default();
        for b in self.sent.iter().take(to).skip(from) {
            s.packets += b.packets;
            s.bytes += b.bytes;
        }
        s
    }

    /// The drops of packets sent in the whole seconds `[from_s, to_s)` (the
    /// seconds [`FlowFigures::loss`] counts packets by).
    pub fn drops(&self, from_s: u64, to_s: u64) -> Drops {
        let mut d = Drops::default();
        for b in self
            .dropped
            .iter()
            .take(to_s as usize)
            .skip(from_s as usize)
        {
            d.add(b);
        }
        d
    }

    /// The receivers (indices among `receivers`) a window over the whole
    /// seconds `[from_s, to_s)` of a run that ended at `end` counts: those
    /// present throughout it, or every one if none is.
    fn counted(&self, from_s: u64, to_s: u64, end: Time) -> Vec<usize> {
        let (w_from, w_to) = (Time::from_secs(from_s), Time::from_secs(to_s).min(end));
        let present: Vec<usize> = (0..self.recv.len())
            .filter(|&r| {
                self.presence
                    .get(r)
                    .and_then(|p| p.as_ref())
                    .is_none_or(|iv| iv.iter().any(|&(a, b)| a <= w_from && w_to <= b))
            })
            .collect();
        if present.is_empty() {
            (0..self.recv.len()).collect()
        } else {
            present
        }
    }

    /// The video's frame figures over the frames generated in the whole
    /// seconds `[from_s, to_s)` of a run that ended at `end`, for the
    /// receivers [`FlowFigures`] counts there; `None` for a flow whose
    /// source reported no frames.
    pub fn video_figures(&self, from_s: u64, to_s: u64, end: Time) -> Option<VideoFigures> {
        (!self.video.is_empty()).then(|| {
            self.video.figures(
                Time::from_secs(from_s),
                Time::from_secs(to_s),
                &self.counted(from_s, to_s, end),
            )
        })
    }

    /// Figures over the whole seconds `[from_s, to_s)`; the last second
    /// may be partial when `end` (the end of the run) falls inside it, and
    /// rates are then over the part that was run.
    pub fn figures(&self, from_s: u64, to_s: u64, end: Time) -> FlowFigures {
        self.figures_each(from_s, to_s, end).0
    }

    /// [`figures`](Self::figures), with each receiver's payload goodput,
    /// kbit/s, in the order of [`receivers`](Self::receivers): the
    /// receivers `recv_kbps_min` is the lowest of (those present
    /// throughout the window, or every one if none is).
    pub fn figures_each(
        &self,
        from_s: u64,
        to_s: u64,
        end: Time,
    ) -> (FlowFigures, Vec<(NodeId, f64)>) {
        let (from, to) = (from_s as usize, to_s as usize);
        let span = Time::from_secs(to_s)
            .min(end)
            .saturating_since(Time::from_secs(from_s));
        let secs = span.as_secs_f64();
        let kbps = |bytes: u64| {
            if secs > 0.0 {
                bytes as f64 * 8.0 / secs / 1e3
            } else {
                0.0
            }
        };

        let sent = self.window_sent(from, to);
        let mut each = Vec::new();
        let mut loss_max: Option<f64> = None;
        for i in self.counted(from_s, to_s, end) {
            let (mut bytes, mut pk) = (0u64, 0u64);
            for b in self.recv[i].iter().take(to).skip(from) {
                bytes += b.bytes;
                pk += b.packets_by_send;
            }
            each.push((self.receivers[i], kbps(bytes)));
            if sent.packets > 0 {
                let lost = 1.0 - (pk.min(sent.packets) as f64 / sent.packets as f64);
                loss_max = Some(loss_max.map_or(lost, |m: f64| m.max(lost)));
            }
        }
        let mut count = 0u64;
        let mut sum = 0u128;
        let mut hist = DelayHistogram::default();
        for b in self.delay.iter().take(to).skip(from) {
            count += b.count;
            sum += b.sum_ns;
            hist.merge(&b.hist);
        }
        let recv_min = each.iter().map(|&(_, r)| r).reduce(f64::min);
        let fig = FlowFigures {
            send_kbps: kbps(sent.bytes),
            recv_kbps_min: recv_min.unwrap_or(0.0),
            delay_ms_mean: (count > 0).then(|| sum as f64 / count as f64 / 1e6),
            delay_ms_p95: hist.quantile(0.95).map(Duration::as_millis_f64),
            loss: loss_max,
        };
        (fig, each)
    }
}

/// Collects every flow's record.
#[derive(Clone, Debug, Default)]
pub struct FlowRecorder {
    flows: Vec<FlowRecord>,
    /// Per second: bytes sent as media, data headers and control.
    bytes: Vec<[u64; 4]>,
    /// Events naming a flow that was never declared.
    pub unknown_flow_events: u64,
}

impl FlowRecorder {
    /// An empty recorder.
    pub fn new() -> FlowRecorder {
        FlowRecorder::default()
    }

    /// Declare a flow; ids are handed out densely from zero.
    pub fn add_flow(
        &mut self,
        name: impl Into<String>,
        kind: impl Into<String>,
        source: NodeId,
        receivers: Vec<NodeId>,
    ) -> FlowId {
        let id = FlowId(u32::try_from(self.flows.len()).expect("fewer than 2^32 flows"));
        self.flows.push(FlowRecord {
            name: name.into(),
            kind: kind.into(),
            source,
            recv: vec![Vec::new(); receivers.len()],
            receivers,
            sent: Vec::new(),
            delay: Vec::new(),
            dropped: Vec::new(),
            stray_packets: 0,
            presence: Vec::new(),
            layered: LayeredRecord::default(),
            video: VideoRecord::default(),
        });
        id
    }

    /// Record what `event`, emitted by an endpoint on `node` at `now`,
    /// says about the flows (events that say nothing about them are
    /// ignored). The simulator records every endpoint's events this way,
    /// and `meshcast emu` the events of endpoints run over real UDP.
    pub fn record(&mut self, node: NodeId, now: Time, event: &crate::Event) {
        use crate::Event;
        match *event {
            Event::FlowSent {
                flow,
                payload_bytes,
            } => self.sent(flow, now, payload_bytes),
            Event::FlowReceived {
                flow,
                payload_bytes,
                sent_at,
            } => self.received(flow, node, now, payload_bytes, sent_at),
            Event::FlowDropped {
                flow,
                sent_at,
                cause,
            } => self.dropped(flow, sent_at, cause),
            Event::BytesSent {
                media,
                header,
                control,
                repair,
            } => self.bytes_sent(now, [media, header, control, repair]),
            Event::MediaReceived {
                flow,
                generated_at,
                retransmitted,
            } => {
                if let Some(l) = self.layered_mut(flow) {
                    l.packet(now, generated_at, retransmitted);
                }
            }
            Event::FramePresented {
                flow,
                generated_at,
                layers_min,
                layers_max,
            } => {
                if let Some(l) = self.layered_mut(flow) {
                    l.frame(crate::layered::Frame {
                        generated_at,
                        min: layers_min,
                        max: layers_max,
                    });
                }
            }
            Event::FrameHanded {
                flow,
                frame,
                units,
                key,
            } => {
                if let Some(f) = self.flow_mut(flow) {
                    f.video.handed(frame, now, units, key);
                }
            }
            Event::FrameUnitReceived { flow, frame } => {
                if let Some(f) = self.flow_mut(flow) {
                    match f.receivers.iter().position(|&n| n == node) {
                        Some(r) => f.video.unit_received(r, frame),
                        None => f.stray_packets += 1,
                    }
                }
            }
            Event::RateOffered { .. }
            | Event::KeyframeRequested { .. }
            | Event::ReceptionReported { .. }
            | Event::RetransmissionRequested { .. }
            | Event::LinkControl(_) => {}
        }
    }

    /// The source of `flow` sent a packet with `payload_bytes` at `now`.
    pub fn sent(&mut self, flow: FlowId, now: Time, payload_bytes: u32) {
        let Some(f) = self.flows.get_mut(flow.index()) else {
            self.unknown_flow_events += 1;
            return;
        };
        let b = bucket(&mut f.sent, now);
        b.packets += 1;
        b.bytes += u64::from(payload_bytes);
    }

    /// `node` received a packet of `flow` at `now` that was sent at
    /// `sent_at`.
    pub fn received(
        &mut self,
        flow: FlowId,
        node: NodeId,
        now: Time,
        payload_bytes: u32,
        sent_at: Time,
    ) {
        let Some(f) = self.flows.get_mut(flow.index()) else {
            self.unknown_flow_events += 1;
            return;
        };
        let Some(r) = f.receivers.iter().position(|&n| n == node) else {
            f.stray_packets += 1;
            return;
        };
        bucket(&mut f.recv[r], now).bytes += u64::from(payload_bytes);
        bucket(&mut f.recv[r], sent_at).packets_by_send += 1;
        let d = now.saturating_since(sent_at);
        let b = bucket(&mut f.delay, now);
        b.count += 1;
        b.sum_ns += u128::from(d.as_nanos());
        b.hist.record(d);
    }

    /// An endpoint dropped a packet of `flow` sent at `sent_at`, for
    /// `cause`.
    pub fn dropped(&mut self, flow: FlowId, sent_at: Time, cause: DropCause) {
        let Some(f) = self.flows.get_mut(flow.index()) else {
            self.unknown_flow_events += 1;
            return;
        };
        bucket(&mut f.dropped, sent_at)[cause.index()] += 1;
    }

    /// The layered record of `flow`, if declared.
    pub fn layered_mut(&mut self, flow: FlowId) -> Option<&mut LayeredRecord> {
        self.flow_mut(flow).map(|f| &mut f.layered)
    }

    /// The record of `flow`, if declared (else counted as unknown).
    fn flow_mut(&mut self, flow: FlowId) -> Option<&mut FlowRecord> {
        let f = self.flows.get_mut(flow.index());
        if f.is_none() {
            self.unknown_flow_events += 1;
        }
        f
    }

    /// Declare when `node`, a receiver of `flow`, is present: it then only
    /// counts in windows inside one of `intervals`.
    pub fn set_presence(&mut self, flow: FlowId, node: NodeId, intervals: Vec<(Time, Time)>) {
        let Some(f) = self.flows.get_mut(flow.index()) else {
            return;
        };
        if let Some(r) = f.receivers.iter().position(|&n| n == node) {
            f.presence.resize(f.receivers.len(), None);
            f.presence[r] = Some(intervals);
        }
    }

    /// An endpoint sent a datagram at `now` with these bytes by purpose:
    /// media, data headers, control, repairs.
    pub fn bytes_sent(&mut self, now: Time, bytes: [u32; 4]) {
        let b = bucket(&mut self.bytes, now);
        for (t, x) in b.iter_mut().zip(bytes) {
            *t += u64::from(x);
        }
    }

    /// Protocol overhead over the whole seconds `[from_s, to_s)`.
    pub fn overhead(&self, from_s: u64, to_s: u64) -> Overhead {
        let mut t = [0u64; 4];
        for b in self.bytes.iter().take(to_s as usize).skip(from_s as usize) {
            for (t, x) in t.iter_mut().zip(b) {
                *t += x;
            }
        }
        let total = t.iter().sum::<u64>();
        let frac = |x: u64| {
            if total > 0 {
                x as f64 / total as f64
            } else {
                0.0
            }
        };
        Overhead {
            bytes_sent: total,
            header_fraction: frac(t[1]),
            control_fraction: frac(t[2]),
            repair_fraction: frac(t[3]),
        }
    }

    /// Every flow, indexed by [`FlowId`].
    pub fn flows(&self) -> &[FlowRecord] {
        &self.flows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_close() {
        let mut h = DelayHistogram::default();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        let p95 = h.quantile(0.95).unwrap().as_nanos() as f64;
        assert!((p95 / 950_000.0 - 1.0).abs() < 0.004, "{p95}");
        let p0 = h.quantile(0.0).unwrap().as_nanos() as f64;
        assert!((p0 / 1_000.0 - 1.0).abs() < 0.004, "{p0}");
        for ns in [0u64, 1, 127, 128, 129, 1 << 40, u64::MAX] {
            let v = DelayHistogram::value_of(DelayHistogram::bin_of(ns));
            assert!(
                (v - ns as f64).abs() <= (ns as f64) / 256.0 + 0.5,
                "{ns} -> {v}"
            );
        }
        assert_eq!(DelayHistogram::default().quantile(0.5), None);
        // The largest sample exactly, also through a merge.
        assert_eq!(h.max(), Some(Duration::from_micros(1000)));
        let mut one = DelayHistogram::default();
        one.record(Duration::from_nanos(1_234_567));
        one.merge(&h);
        assert_eq!(one.max(), Some(Duration::from_nanos(1_234_567)));
        assert_eq!(DelayHistogram::default().max(), None);
    }

    #[test]
    fn drops_count_by_cause_in_the_second_their_packets_were_sent() {
        let mut r = FlowRecorder::new();
        let (a, b) = (NodeId(0), NodeId(1));
        let f = r.add_flow("f", "session", a, vec![b]);
        let at = |ms: u64| Time::from_millis(ms);
        // Reported at 2.1 s of packets sent at 0.9 s and 1.5 s.
        for (sent, cause) in [
            (at(900), DropCause::Late),
            (at(1500), DropCause::Late),
            (at(1500), DropCause::Policed),
            (at(2500), DropCause::LinkDown),
        ] {
            r.record(
                b,
                at(2100),
                &crate::Event::FlowDropped {
                    flow: f,
                    sent_at: sent,
                    cause,
                },
            );
        }
        // A drop of an undeclared flow is counted as such, not filed.
        r.record(
            b,
            at(100),
            &crate::Event::FlowDropped {
                flow: FlowId(7),
                sent_at: at(0),
                cause: DropCause::Late,
            },
        );
        let rec = &r.flows()[0];
        let d = rec.drops(1, 2);
        assert_eq!((d.late, d.policed, d.link_down), (1, 1, 0));
        let all = rec.drops(0, 10);
        assert_eq!(
            (all.late, all.policed, all.link_down, all.total()),
            (2, 1, 1, 4)
        );
        assert_eq!(rec.drops(3, 10), Drops::default());
        assert_eq!(r.unknown_flow_events, 1);
        for c in DropCause::ALL {
            assert_eq!(DropCause::from_name(c.name()), Some(c));
            assert_eq!(DropCause::ALL[c.index()], c);
        }
        assert_eq!(DropCause::from_name("lost"), None);
    }

    #[test]
    fn video_frames_count_per_receiver_and_present_receivers_only() {
        let mut r = FlowRecorder::new();
        let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
        let f = r.add_flow("f", "session", a, vec![b, c]);
        let at = |ms: u64| Time::from_millis(ms);
        // Without frames a session has no frame figures.
        assert_eq!(r.flows()[0].video_figures(0, 1, at(4000)), None);
        // Four frames of two units at 0.5 s, 1.5 s, 2.5 s and 3.5 s, a
        // keyframe first; b gets every unit, c every unit but frame 1's
        // second, and c is present only from 2 s on.
        for k in 0..4u64 {
            let t = at(500 + 1000 * k);
            let handed = crate::Event::FrameHanded {
                flow: f,
                frame: k,
                units: 2,
                key: k == 0,
            };
            r.record(a, t, &handed);
            for (node, units) in [(b, 2), (c, if k == 1 { 1 } else { 2 })] {
                for _ in 0..units {
                    let got = crate::Event::FrameUnitReceived { flow: f, frame: k };
                    r.record(node, t + Duration::from_millis(30), &got);
                }
            }
        }
        r.set_presence(f, c, vec![(at(2000), at(4000))]);
        let rec = &r.flows()[0];
        let end = at(4000);
        // Over the whole run only b counts (c was not there throughout).
        let all = rec.video_figures(0, 4, end).unwrap();
        assert_eq!(
            (all.frames, all.whole_min, all.decodable_min),
            (4, Some(1.0), Some(1.0))
        );
        // From 2 s on c counts too: its frames 2 and 3 are whole but
        // predict from frame 1, which was not.
        let late = rec.video_figures(2, 4, end).unwrap();
        assert_eq!(
            (late.frames, late.whole_min, late.decodable_min),
            (2, Some(1.0), Some(0.0))
        );
        // A unit from a node that is no receiver is a stray; one of an
        // undeclared flow is unknown.
        let stray = crate::Event::FrameUnitReceived { flow: f, frame: 0 };
        r.record(NodeId(7), at(100), &stray);
        let unknown = crate::Event::FrameUnitReceived {
            flow: FlowId(9),
            frame: 0,
        };
        r.record(b, at(100), &unknown);
        assert_eq!(r.flows()[0].stray_packets, 1);
        assert_eq!(r.unknown_flow_events, 1);
    }

    #[test]
    fn each_receiver_counts_where_it_is_present_throughout() {
        let mut r = FlowRecorder::new();
        let (a, b, c, d) = (NodeId(0), NodeId(1), NodeId(2), NodeId(3));
        let f = r.add_flow("s", "session", a, vec![b, c, d]);
        // c joins at 2 s; d is present until 3 s.
        r.set_presence(f, c, vec![(Time::from_secs(2), Time::from_secs(10))]);
        r.set_presence(f, d, vec![(Time::ZERO, Time::from_secs(3))]);
        for s in 0..4u64 {
            let t = Time::from_millis(s * 1000 + 500);
            r.sent(f, t, 2000);
            r.received(f, b, t, 2000, t);
            if s >= 2 {
                r.received(f, c, t, 1000, t);
            }
            if s < 3 {
                r.received(f, d, t, 500, t);
            }
        }
        let rec = &r.flows()[0];
        let end = Time::from_secs(4);
        // Before c joins: b and d, and the lowest is d's.
        assert_eq!(rec.figures_each(0, 2, end).1, vec![(b, 16.0), (d, 4.0)]);
        assert_eq!(rec.figures(0, 2, end).recv_kbps_min, 4.0);
        // All three in second 2.
        assert_eq!(
            rec.figures_each(2, 3, end).1,
            vec![(b, 16.0), (c, 8.0), (d, 4.0)]
        );
        // After d leaves: b and c.
        assert_eq!(rec.figures_each(3, 4, end).1, vec![(b, 16.0), (c, 8.0)]);
        assert_eq!(rec.figures(3, 4, end).recv_kbps_min, 8.0);
        // Over the whole run only b is present throughout.
        assert_eq!(rec.figures_each(0, 4, end).1, vec![(b, 16.0)]);
        // A last, partial second counts over the part that was run.
        let half = Time::from_millis(3500);
        assert_eq!(rec.figures_each(3, 4, half).1, vec![(b, 32.0), (c, 16.0)]);
    }

    #[test]
    fn figures_over_windows() {
        let mut r = FlowRecorder::new();
        let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
        let f = r.add_flow("f", "cbr", a, vec![b, c]);
        // 10 packets of 1000 B per second for 4 s; b gets all after 10 ms,
        // c misses every other one.
        for s in 0..4u64 {
            for i in 0..10u64 {
                let t = Time::from_millis(s * 1000 + i * 100);
                r.sent(f, t, 1000);
                let at = t + Duration::from_millis(10);
                r.received(f, b, at, 1000, t);
                if i % 2 == 0 {
                    r.received(f, c, at, 1000, t);
                }
            }
        }
        let rec = &r.flows()[0];
        let w = rec.figures(1, 3, Time::from_secs(4));
        assert_eq!(w.send_kbps, 80.0);
        assert_eq!(w.recv_kbps_min, 40.0);
        assert_eq!(w.loss, Some(0.5));
        assert_eq!(
            rec.figures_each(1, 3, Time::from_secs(4)).1,
            vec![(b, 80.0), (c, 40.0)]
        );
        assert!((w.delay_ms_mean.unwrap() - 10.0).abs() < 1e-9);
        assert!((w.delay_ms_p95.unwrap() - 10.0).abs() < 0.05);
        // A window past the traffic: nothing sent, nothing lost.
        let w = rec.figures(4, 5, Time::from_secs(5));
        assert_eq!((w.send_kbps, w.loss, w.delay_ms_mean), (0.0, None, None));
        r.received(FlowId(9), b, Time::ZERO, 1, Time::ZERO);
        r.received(f, NodeId(7), Time::ZERO, 1, Time::ZERO);
        assert_eq!(r.unknown_flow_events, 1);
        assert_eq!(r.flows()[0].stray_packets, 1);
    }
}
