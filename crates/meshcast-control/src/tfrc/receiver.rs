//! The TFRC receiver (RFC 5348 §5–§6): loss detection, loss events, the
//! loss event rate, the receive rate, and when to send feedback.

use super::equation::loss_rate_for;
use super::loss::LossHistory;
use super::{DataInfo, Feedback};
use meshcast_core::{Duration, Rate, Time};
use std::collections::{BTreeMap, VecDeque};

/// A packet counts as lost once this many packets with higher sequence
/// numbers have arrived (RFC 5348 §5.1, NDUPACK).
pub const NDUPACK: u32 = 3;

/// At most this many missing sequence numbers are tracked at once. A jump
/// larger than this (a long outage, or a forged sequence number) tracks
/// only the newest `MAX_HOLES` missing packets; the older ones are counted
/// neither as received nor as lost.
pub const MAX_HOLES: u64 = 4096;

/// Receiver parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReceiverConfig {
    /// The segment size `s` the sender uses, for the synthetic first loss
    /// interval (§6.3.1).
    pub segment_bytes: u32,
    /// History discounting (§5.5); on by default.
    pub discounting: bool,
}

impl Default for ReceiverConfig {
    fn default() -> ReceiverConfig {
        ReceiverConfig {
            segment_bytes: 1000,
            discounting: true,
        }
    }
}

/// The receiving half of one TFRC connection.
#[derive(Clone, Debug)]
pub struct TfrcReceiver {
    cfg: ReceiverConfig,
    history: LossHistory,
    highest: Option<u64>,
    /// Recently received sequence numbers and their send times, for
    /// interpolating the send time of a lost packet (§5.2).
    sent_times: BTreeMap<u64, Time>,
    /// Missing sequence numbers and how many later packets have arrived.
    holes: BTreeMap<u64, u32>,
    /// Nominal send time of the first loss of the current loss event.
    event_start: Option<Time>,
    rtt: Duration,
    /// `(arrival, sent_at)` of the newest data packet.
    last_data: Option<(Time, Time)>,
    first_arrival: Option<Time>,
    arrivals: VecDeque<(Time, u32)>,
    last_feedback: Option<Time>,
    data_since_feedback: bool,
    expedite: bool,
    loss_events: u32,
    lost_packets: u64,
}

impl TfrcReceiver {
    /// A receiver that has seen nothing.
    pub fn new(cfg: ReceiverConfig) -> TfrcReceiver {
        TfrcReceiver {
            cfg,
            history: LossHistory::new(cfg.discounting),
            highest: None,
            sent_times: BTreeMap::new(),
            holes: BTreeMap::new(),
            event_start: None,
            rtt: Duration::ZERO,
            last_data: None,
            first_arrival: None,
            arrivals: VecDeque::new(),
            last_feedback: None,
            data_since_feedback: false,
            expedite: false,
            loss_events: 0,
            lost_packets: 0,
        }
    }

    /// Loss events detected so far.
    pub fn loss_events(&self) -> u32 {
        self.loss_events
    }

    /// Packets detected as lost so far.
    pub fn lost_packets(&self) -> u64 {
        self.lost_packets
    }

    /// The current loss event rate.
    pub fn loss_event_rate(&mut self) -> f64 {
        match self.highest {
            Some(h) => self.history.loss_event_rate(h),
            None => 0.0,
        }
    }

    /// A data packet of `bytes` bytes with header `info` arrived at `now`.
    /// Returns whether it was new (not a duplicate or too old to place).
    pub fn on_data(&mut self, now: Time, info: &DataInfo, bytes: u32) -> bool {
        let seq = info.seq;
        let fresh = match self.highest {
            None => true,
            Some(h) if seq > h => {
                let first_missing = (h + 1).max(seq.saturating_sub(MAX_HOLES));
                for m in first_missing..seq {
                    self.holes.insert(m, 0);
                }
                true
            }
            Some(_) => self.holes.remove(&seq).is_some(),
        };
        if !fresh {
            return false;
        }
        if info.rtt > Duration::ZERO {
            self.rtt = info.rtt;
        }
        self.first_arrival.get_or_insert(now);
        self.arrivals.push_back((now, bytes));
        self.sent_times.insert(seq, info.sent_at);
        if self.highest.is_none_or(|h| seq > h) {
            self.highest = Some(seq);
            self.last_data = Some((now, info.sent_at));
        }
        // Every hole below `seq` has one more packet after it.
        let mut lost = Vec::new();
        for (&m, n) in self.holes.range_mut(..seq) {
            *n += 1;
            if *n >= NDUPACK {
                lost.push(m);
            }
        }
        for m in lost {
            self.holes.remove(&m);
            self.on_loss(now, m);
        }
        if info.break_ss && self.history.is_empty() && self.rtt > Duration::ZERO {
            // MSB's break_ss: leave slow start as at a first loss event,
            // with the synthetic interval of §6.3.1 but no lost packet.
            let len = self.synthetic_interval(now);
            self.history.seed(seq, len);
            self.expedite = true;
        }
        self.prune();
        self.data_since_feedback = true;
        if self.last_feedback.is_none() || self.rtt == Duration::ZERO {
            self.expedite = true;
        }
        true
    }

    /// The loss interval that would give the rate received over the last
    /// round trip (§6.3.1).
    fn synthetic_interval(&self, now: Time) -> f64 {
        let x = self.receive_rate(now, self.rtt);
        let p = loss_rate_for(f64::from(self.cfg.segment_bytes), self.rtt.as_secs_f64(), x);
        1.0 / p
    }

    fn on_loss(&mut self, now: Time, m: u64) {
        self.lost_packets += 1;
        let t = self.interpolated_send_time(m);
        let highest = self.highest.unwrap_or(m);
        if self.history.is_empty() {
            let len = if self.rtt > Duration::ZERO {
                self.synthetic_interval(now)
            } else {
                (m + 1) as f64
            };
            self.history.seed(m, len);
        } else if self.event_start.is_none_or(|s| t > s + self.rtt) {
            // §5.2: a loss more than one RTT after the start of the current
            // loss event starts a new one.
            self.history.new_event(m, highest);
        } else {
            return;
        }
        self.event_start = Some(t);
        self.loss_events += 1;
        self.expedite = true;
    }

    /// §5.2: the send time of lost packet `m`, interpolated between the
    /// received packets around it.
    fn interpolated_send_time(&self, m: u64) -> Time {
        let before = self.sent_times.range(..m).next_back();
        let after = self.sent_times.range(m + 1..).next();
        match (before, after) {
            (Some((&sb, &tb)), Some((&sa, &ta))) if ta >= tb => {
                let frac = (m - sb) as f64 / (sa - sb) as f64;
                tb + Duration::from_nanos(((ta - tb).as_nanos() as f64 * frac) as u64)
            }
            (_, Some((_, &ta))) => ta,
            (Some((_, &tb)), None) => tb,
            (None, None) => Time::ZERO,
        }
    }

    fn prune(&mut self) {
        let Some(h) = self.highest else { return };
        let keep_from = self
            .holes
            .keys()
            .next()
            .map_or(h, |&m| m.saturating_sub(1))
            .min(h.saturating_sub(64));
        // Keep the newest packet below `keep_from` too: it interpolates the
        // oldest hole.
        let anchor = self
            .sent_times
            .range(..keep_from)
            .next_back()
            .map(|(&s, _)| s);
        if let Some(a) = anchor {
            self.sent_times = self.sent_times.split_off(&a);
        }
    }

    /// Bytes per second received over the `window` before `now` (at least
    /// since the first arrival).
    fn receive_rate(&self, now: Time, window: Duration) -> f64 {
        let since_first = self
            .first_arrival
            .map_or(Duration::ZERO, |f| now.saturating_since(f));
        let w = if window > Duration::ZERO {
            window
        } else {
            since_first
        };
        let w = if w == Duration::ZERO {
            Duration::from_secs(1)
        } else {
            w
        };
        let from = Time::from_nanos(now.as_nanos().saturating_sub(w.as_nanos()));
        let bytes: u64 = self
            .arrivals
            .iter()
            .rev()
            .take_while(|&&(t, _)| t > from)
            .map(|&(_, b)| u64::from(b))
            .sum();
        bytes as f64 / w.as_secs_f64()
    }

    /// When the receiver next wants [`TfrcReceiver::poll_feedback`] called:
    /// one RTT after its last feedback, if data arrived since (§6.2).
    pub fn poll_timeout(&self) -> Option<Time> {
        if !self.data_since_feedback {
            return None;
        }
        if self.expedite {
            return self.last_data.map(|(t, _)| t);
        }
        self.last_feedback.map(|t| t + self.rtt)
    }

    /// The feedback packet to send now, if one is due: at least once per
    /// RTT while data arrives, at once on the first packet and when a new
    /// loss event is detected.
    pub fn poll_feedback(&mut self, now: Time) -> Option<Feedback> {
        let due = self.poll_timeout()?;
        if now < due {
            return None;
        }
        let (arrived, sent_at) = self.last_data?;
        let window = match self.last_feedback {
            Some(t) => now.saturating_since(t).max(self.rtt),
            None => Duration::ZERO,
        };
        let x_recv = self.receive_rate(now, window);
        let p = self.loss_event_rate();
        // Arrivals older than one RTT are never counted again: the next
        // window is at least one RTT and starts after now - RTT.
        let horizon = Time::from_nanos(now.as_nanos().saturating_sub(self.rtt.as_nanos()));
        while self.arrivals.front().is_some_and(|&(t, _)| t <= horizon) {
            self.arrivals.pop_front();
        }
        self.last_feedback = Some(now);
        self.data_since_feedback = false;
        self.expedite = false;
        Some(Feedback {
            echo_sent_at: sent_at,
            delay: now.saturating_since(arrived),
            x_recv: Rate::from_bps((x_recv * 8.0).round() as u64),
            p,
            loss_events: self.loss_events,
        })
    }
}
