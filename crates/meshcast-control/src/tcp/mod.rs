//! A TCP NewReno model counted in segments: slow start and congestion
//! avoidance (RFC 5681), fast retransmit and NewReno fast recovery
//! (RFC 6582), and the retransmission timer (RFC 6298).
//!
//! It is a model, not a TCP stack: a bulk sender with an unlimited (or
//! fixed) amount of data in fixed-size segments numbered from 0, a receiver
//! that acknowledges every segment at once (no delayed ACKs, so b = 1 in
//! the throughput models) and buffers out-of-order ones without limit (the
//! receive window never binds). Every segment carries its send time and
//! every ACK echoes the send time of the segment that triggered it, like
//! the timestamp option (RFC 7323), so RTT samples are valid for
//! retransmissions too (no Karn ambiguity). There is no SACK, no
//! handshake and no FIN; `meshcast-proto` puts segments and ACKs on the
//! wire.
//!
//! Decisions: the RTO is `SRTT + max(G, 4·RTTVAR, min_rto)` with `min_rto`
//! = 200 ms, as Linux computes it, rather than RFC 6298's
//! `max(1 s, SRTT + max(G, 4·RTTVAR))`: on a path whose RTT is steady
//! (RTTVAR near zero) and near 200 ms, RFC 6298 with a 200 ms floor puts the
//! RTO within a few ms of the RTT and every queueing hiccup or second loss
//! in a window becomes a timeout, while a 1 s floor makes each real timeout
//! cost seconds at the RTTs simulated here;
//! appropriate byte counting (RFC 3465) with L = 2 in slow start; after a
//! timeout the sender goes back to the first unacknowledged segment
//! (go-back-N) and `recover` is set to the highest segment sent, so the
//! duplicate ACKs from segments already at the receiver do not start a
//! second reduction (RFC 6582 §3.2 step 1).

use meshcast_core::{Duration, Time};
use std::collections::BTreeSet;

/// Model parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpConfig {
    /// Segment size in bytes (the whole datagram payload).
    pub segment_bytes: u32,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout (RFC 6298: at least 60 s).
    pub max_rto: Duration,
    /// Segments to send in all; `None` sends forever (bulk).
    pub total_segments: Option<u64>,
}

impl Default for TcpConfig {
    fn default() -> TcpConfig {
        TcpConfig {
            segment_bytes: 1000,
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            total_segments: None,
        }
    }
}

/// A data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Segment number, from 0.
    pub seq: u64,
    /// The sender's clock when it left.
    pub sent_at: Time,
    /// Whether this number was sent before.
    pub retransmission: bool,
}

/// A cumulative acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The next segment the receiver expects (all below it arrived).
    pub next: u64,
    /// The send time of the segment that triggered this ACK.
    pub echo: Time,
}

/// Counters for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Segments sent, retransmissions included.
    pub sent: u64,
    /// Retransmitted segments.
    pub retransmitted: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

/// The sending side.
#[derive(Clone, Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    /// Congestion window, segments.
    cwnd: f64,
    ssthresh: f64,
    snd_una: u64,
    snd_nxt: u64,
    /// One past the highest segment ever sent.
    high_tx: u64,
    dupacks: u32,
    in_recovery: bool,
    recover: Option<u64>,
    partial_seen: bool,
    retransmit_now: Option<u64>,
    srtt: Option<f64>,
    rttvar: f64,
    rto: f64,
    rto_at: Option<Time>,
    stats: TcpStats,
}

/// Clock granularity `G` of RFC 6298.
const GRANULARITY: f64 = 0.001;

impl TcpSender {
    /// A sender about to start; the initial window is
    /// `min(4·MSS, max(2·MSS, 4380 B))` (RFC 5681 §3.1).
    pub fn new(cfg: TcpConfig) -> TcpSender {
        let mss = f64::from(cfg.segment_bytes.max(1));
        let iw = ((4.0 * mss).min((2.0 * mss).max(4380.0)) / mss)
            .floor()
            .max(1.0);
        TcpSender {
            cfg,
            cwnd: iw,
            ssthresh: f64::INFINITY,
            snd_una: 0,
            snd_nxt: 0,
            high_tx: 0,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            partial_seen: false,
            retransmit_now: None,
            srtt: None,
            rttvar: 0.0,
            rto: 1.0,
            rto_at: None,
            stats: TcpStats::default(),
        }
    }

    /// The congestion window in segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// The slow-start threshold in segments.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// The smoothed RTT, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_secs_f64)
    }

    /// The current retransmission timeout.
    pub fn rto(&self) -> Duration {
        Duration::from_secs_f64(self.rto)
    }

    /// Segments acknowledged so far.
    pub fn acked(&self) -> u64 {
        self.snd_una
    }

    /// Counters.
    pub fn stats(&self) -> TcpStats {
        self.stats
    }

    /// Whether every segment has been acknowledged (never for bulk).
    pub fn is_done(&self) -> bool {
        self.cfg.total_segments.is_some_and(|n| self.snd_una >= n)
    }

    fn flight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// The next segment the window allows at `now`, if any. Call until it
    /// returns `None`.
    pub fn poll_segment(&mut self, now: Time) -> Option<Segment> {
        let seq = if let Some(s) = self.retransmit_now.take() {
            s
        } else {
            let limit = self.cfg.total_segments.unwrap_or(u64::MAX);
            if (self.flight() as f64) >= self.cwnd.floor() || self.snd_nxt >= limit {
                return None;
            }
            self.snd_nxt += 1;
            self.snd_nxt - 1
        };
        let retransmission = seq < self.high_tx;
        self.high_tx = self.high_tx.max(seq + 1);
        self.stats.sent += 1;
        if retransmission {
            self.stats.retransmitted += 1;
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now + Duration::from_secs_f64(self.rto));
        }
        Some(Segment {
            seq,
            sent_at: now,
            retransmission,
        })
    }

    /// An ACK arrived at `now`.
    pub fn on_ack(&mut self, now: Time, ack: &Ack) {
        if ack.next > self.high_tx {
            // Acknowledges what was never sent: not from our receiver.
            return;
        }
        if ack.next > self.snd_una {
            let newly = ack.next - self.snd_una;
            self.snd_una = ack.next;
            self.snd_nxt = self.snd_nxt.max(self.snd_una);
            self.sample_rtt(now.saturating_since(ack.echo).as_secs_f64());
            if self.in_recovery {
                if self.recover.is_some_and(|r| ack.next > r) {
                    // Full acknowledgement (RFC 6582 §3.2 step 3).
                    self.cwnd = self.ssthresh.min(self.flight().max(1) as f64 + 1.0);
                    self.in_recovery = false;
                    self.dupacks = 0;
                } else {
                    // Partial acknowledgement: retransmit the next hole,
                    // deflate by what was acknowledged, add one segment back.
                    self.retransmit_now = Some(self.snd_una);
                    self.cwnd = (self.cwnd - newly as f64 + 1.0).max(1.0);
                    if !self.partial_seen {
                        self.partial_seen = true;
                        self.rto_at = Some(now + Duration::from_secs_f64(self.rto));
                    }
                    return;
                }
            } else {
                self.dupacks = 0;
                if self.cwnd < self.ssthresh {
                    self.cwnd += newly.min(2) as f64;
                } else {
                    self.cwnd += newly as f64 / self.cwnd;
                }
            }
            self.rto_at = (self.snd_una < self.snd_nxt.max(self.high_tx))
                .then(|| now + Duration::from_secs_f64(self.rto));
        } else if ack.next == self.snd_una && self.snd_una < self.high_tx {
            self.dupacks += 1;
            if self.in_recovery {
                self.cwnd += 1.0;
            } else if self.dupacks == 3 && self.recover.is_none_or(|r| self.snd_una > r) {
                // Fast retransmit (RFC 6582 §3.2 step 2).
                self.recover = Some(self.high_tx - 1);
                self.ssthresh = (self.flight() as f64 / 2.0).max(2.0);
                self.cwnd = self.ssthresh + 3.0;
                self.retransmit_now = Some(self.snd_una);
                self.in_recovery = true;
                self.partial_seen = false;
                self.stats.fast_retransmits += 1;
            }
        }
    }

    fn sample_rtt(&mut self, r: f64) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2.0;
            }
            Some(s) => {
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - r).abs();
                self.srtt = Some(0.875 * s + 0.125 * r);
            }
        }
        let s = self.srtt.unwrap_or(r);
        self.rto = (s + GRANULARITY
            .max(4.0 * self.rttvar)
            .max(self.cfg.min_rto.as_secs_f64()))
        .min(self.cfg.max_rto.as_secs_f64());
    }

    /// When the retransmission timer expires, if it runs.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.rto_at
    }

    /// Time passed; acts if the retransmission timer expired (RFC 6298
    /// §5.4–5.7, RFC 5681 §3.1 eq. 4).
    pub fn handle_timeout(&mut self, now: Time) {
        if self.rto_at.is_none_or(|t| now < t) {
            return;
        }
        if self.snd_una >= self.high_tx {
            self.rto_at = None;
            return;
        }
        self.stats.timeouts += 1;
        self.ssthresh = ((self.high_tx - self.snd_una) as f64 / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.rto = (self.rto * 2.0).min(self.cfg.max_rto.as_secs_f64());
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = Some(self.high_tx - 1);
        self.snd_nxt = self.snd_una;
        self.retransmit_now = None;
        self.rto_at = Some(now + Duration::from_secs_f64(self.rto));
    }
}

/// Segments further than this beyond the next expected one are refused
/// (not from our sender, or absurdly far ahead).
pub const MAX_AHEAD: u64 = 1 << 20;

/// The receiving side: cumulative ACK per segment.
#[derive(Clone, Debug, Default)]
pub struct TcpReceiver {
    next: u64,
    out_of_order: BTreeSet<u64>,
}

impl TcpReceiver {
    /// A receiver expecting segment 0.
    pub fn new() -> TcpReceiver {
        TcpReceiver::default()
    }

    /// The next segment expected.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// A segment arrived: the ACK to send, and whether it carried data not
    /// seen before. `None` for a segment too far ahead to buffer.
    pub fn on_segment(&mut self, seg: &Segment) -> Option<(Ack, bool)> {
        let fresh = if seg.seq == self.next {
            self.next += 1;
            while self.out_of_order.remove(&self.next) {
                self.next += 1;
            }
            true
        } else if seg.seq > self.next {
            if seg.seq - self.next > MAX_AHEAD {
                return None;
            }
            self.out_of_order.insert(seg.seq)
        } else {
            false
        };
        Some((
            Ack {
                next: self.next,
                echo: seg.sent_at,
            },
            fresh,
        ))
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
