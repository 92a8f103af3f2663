//! The TFRC sender (RFC 5348 §4 and §8.2).

use super::equation::throughput;
use super::{DataInfo, Feedback, Mode};
use meshcast_core::{Duration, Rate, Time};
use std::collections::VecDeque;

/// `t_mbi`: the longest the sender ever waits between packets, 64 s
/// (RFC 5348 §4.3): the allowed rate never drops below `s / t_mbi`.
pub const T_MBI: f64 = 64.0;

/// Weight of the previous estimate in the RTT filter, `q` (§4.3).
const RTT_FILTER_Q: f64 = 0.9;

/// Sender parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderConfig {
    /// The segment size `s` in bytes (the packet size the equation and the
    /// initial window assume).
    pub segment_bytes: u32,
    /// An RTT known before the first feedback (e.g. from a handshake); the
    /// sender then starts at the initial rate `W_init / R` instead of one
    /// packet per second (§4.2).
    pub initial_rtt: Option<Duration>,
}

impl Default for SenderConfig {
    fn default() -> SenderConfig {
        SenderConfig {
            segment_bytes: 1000,
            initial_rtt: None,
        }
    }
}

/// The sending half of one TFRC connection.
#[derive(Clone, Debug)]
pub struct TfrcSender {
    s: f64,
    /// Allowed rate `X`, bytes per second.
    x: f64,
    /// RTT estimate `R`, seconds.
    rtt: Option<f64>,
    /// §4.5: the latest RTT sample's square root and the running mean of
    /// square roots (`R_sqmean`).
    sqrt_sample: f64,
    sqrt_mean: f64,
    p: f64,
    loss_events: u32,
    /// `X_recv_set`: recent receive rates (bytes/s) and when they came.
    x_recv_set: Vec<(f64, Time)>,
    /// `tld`: when the rate last doubled in slow start.
    tld: Option<Time>,
    nofeedback_at: Time,
    /// Whether a packet left since the no-feedback timer was set.
    sent_since_timer: bool,
    next_send: Time,
    last_send: Option<(Time, u32)>,
    seq: u64,
    /// Send opportunities the application declined, oldest first.
    declines: VecDeque<Time>,
    /// The send time echoed by the previous feedback.
    last_echo: Option<Time>,
    break_ss: bool,
    feedback_count: u64,
}

impl TfrcSender {
    /// A sender starting at `now` (§4.2): one packet per second, or
    /// `W_init / R` with a known RTT; the no-feedback timer runs 2 s.
    pub fn new(cfg: SenderConfig, now: Time) -> TfrcSender {
        let s = f64::from(cfg.segment_bytes.max(1));
        let rtt = cfg.initial_rtt.map(|r| r.as_secs_f64().max(1e-6));
        let x = match rtt {
            Some(r) => initial_window(s) / r,
            None => s,
        };
        TfrcSender {
            s,
            x,
            rtt,
            sqrt_sample: 0.0,
            sqrt_mean: 0.0,
            p: 0.0,
            loss_events: 0,
            x_recv_set: vec![(f64::INFINITY, now)],
            tld: None,
            nofeedback_at: now + Duration::from_secs(2),
            sent_since_timer: false,
            next_send: now,
            last_send: None,
            seq: 0,
            declines: VecDeque::new(),
            last_echo: None,
            break_ss: false,
            feedback_count: 0,
        }
    }

    /// The allowed sending rate `X`.
    pub fn allowed_rate(&self) -> Rate {
        Rate::from_bps((self.x * 8.0).round() as u64)
    }

    /// The rate the sender paces at now: `X_inst = X · R_sqmean / √R_sample`
    /// (§4.5), which sends a little slower while the RTT is above its
    /// average (a queue is building) and a little faster while below.
    pub fn rate(&self) -> Rate {
        Rate::from_bps((self.x_inst() * 8.0).round() as u64)
    }

    fn x_inst(&self) -> f64 {
        if self.sqrt_sample > 0.0 {
            self.x * self.sqrt_mean / self.sqrt_sample
        } else {
            self.x
        }
    }

    /// The phase: slow start until the first loss event (or `break_ss`).
    pub fn mode(&self) -> Mode {
        if self.p > 0.0 || self.break_ss {
            Mode::CongestionAvoidance
        } else {
            Mode::SlowStart
        }
    }

    /// The RTT estimate, once feedback has given one.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt.map(Duration::from_secs_f64)
    }

    /// The loss event rate the receiver last reported.
    pub fn loss_event_rate(&self) -> f64 {
        self.p
    }

    /// Feedback packets processed.
    pub fn feedback_count(&self) -> u64 {
        self.feedback_count
    }

    /// The earliest time the next packet may leave.
    pub fn next_send(&self) -> Time {
        self.next_send
    }

    /// MSB `break_ss()`: the application cannot use more than it gets now;
    /// leave slow start (see the module docs for how).
    pub fn break_ss(&mut self) {
        self.break_ss = true;
    }

    /// A packet of `bytes` bytes leaves at `now`: returns the header it
    /// carries and schedules the next send time.
    pub fn on_sent(&mut self, now: Time, bytes: u32) -> DataInfo {
        let info = DataInfo {
            seq: self.seq,
            sent_at: now,
            rtt: self.rtt().unwrap_or(Duration::ZERO),
            break_ss: self.break_ss && self.p == 0.0,
        };
        self.seq += 1;
        self.sent_since_timer = true;
        // §4.6: a packet's nominal send time follows the previous packet's
        // nominal time, not the moment it actually left. A driver whose
        // timers fire late (a real clock's millisecond granularity) would
        // otherwise stretch every interval by its lateness: over real UDP
        // a TFRC flow allowed 2.6 Mbit/s sent 1.9. Lateness of up to one
        // interval is absorbed; after a longer gap the schedule restarts
        // from now, so nothing bursts. The simulator fires timers on time,
        // where this changes nothing.
        let interval = self.interval(bytes);
        let nominal = if now >= self.next_send && now - self.next_send <= interval {
            self.next_send
        } else {
            now
        };
        self.last_send = Some((nominal, bytes));
        self.next_send = nominal + interval;
        info
    }

    /// The application had nothing to send at `now`, a send opportunity:
    /// the sender is data-limited (§8.2.1); the next opportunity comes one
    /// packet interval later.
    pub fn on_declined(&mut self, now: Time) {
        if self.declines.back() != Some(&now) {
            self.declines.push_back(now);
        }
        // Far more declines than a round trip can hold are never needed.
        if self.declines.len() > 1 << 16 {
            self.declines.pop_front();
        }
        self.next_send = now + self.interval(self.s as u32);
    }

    /// The application passed the send opportunity at `now` although it
    /// has data, by its own allocation (MSB's per-frame budget, which is a
    /// share of `X`): the next opportunity comes one packet interval later,
    /// and the interval is *not* data-limited. An application whose use is
    /// proportional to `X` is rate-adaptive, not data-limited; counting its
    /// passes as declines would cut `X` to 0.85 of the receive rate at
    /// every loss event, which the application then follows down to the
    /// minimum rate (see docs/transport.md).
    pub fn on_skipped(&mut self, now: Time) {
        self.next_send = now + self.interval(self.s as u32);
    }

    fn interval(&self, bytes: u32) -> Duration {
        Duration::from_secs_f64(f64::from(bytes) / self.x_inst())
    }

    fn min_rate(&self) -> f64 {
        self.s / T_MBI
    }

    fn initial_rate(&self, r: f64) -> f64 {
        initial_window(self.s) / r
    }

    fn x_bps(&self, r: f64) -> f64 {
        throughput(self.s, r, self.p)
    }

    /// A feedback packet arrived at `now` (§4.3).
    pub fn on_feedback(&mut self, now: Time, fb: &Feedback) {
        self.feedback_count += 1;
        // 1–2: RTT sample and estimate.
        let sample = (now.saturating_since(fb.echo_sent_at).as_secs_f64() - fb.delay.as_secs_f64())
            .max(1e-6);
        let r = match self.rtt {
            None => sample,
            Some(r) => RTT_FILTER_Q * r + (1.0 - RTT_FILTER_Q) * sample,
        };
        self.rtt = Some(r);
        self.sqrt_sample = sample.sqrt();
        self.sqrt_mean = if self.sqrt_mean == 0.0 {
            self.sqrt_sample
        } else {
            RTT_FILTER_Q * self.sqrt_mean + (1.0 - RTT_FILTER_Q) * self.sqrt_sample
        };
        // Was the interval this feedback covers data-limited?
        let from = self.last_echo.unwrap_or(Time::ZERO);
        while self.declines.front().is_some_and(|&t| t < from) {
            self.declines.pop_front();
        }
        let data_limited = self.declines.front().is_some_and(|&t| t <= fb.echo_sent_at);
        self.last_echo = Some(fb.echo_sent_at);
        let loss_increased = fb.loss_events > self.loss_events || fb.p > self.p;
        self.loss_events = fb.loss_events;
        self.p = fb.p;
        let x_recv = fb.x_recv.as_bps() as f64 / 8.0;
        // 4: recv_limit.
        let idle = !self.sent_since_timer;
        let skip = idle && x_recv < 4.0 * self.s / r;
        let recv_limit = if data_limited {
            if loss_increased {
                for e in &mut self.x_recv_set {
                    e.0 /= 2.0;
                }
                if !skip {
                    self.maximize(0.85 * x_recv, now, r);
                }
                self.max_x_recv()
            } else {
                if !skip {
                    self.maximize(x_recv, now, r);
                }
                2.0 * self.max_x_recv()
            }
        } else {
            if !skip {
                self.update_set(x_recv, now, r);
            }
            2.0 * self.max_x_recv()
        };
        self.set_rate(now, r, recv_limit);
        // 6: restart the no-feedback timer.
        self.restart_timer(now);
        // A higher rate may let the next packet leave sooner.
        if let Some((t, bytes)) = self.last_send {
            self.next_send = self.next_send.min((t + self.interval(bytes)).max(now));
        }
    }

    /// Step 4 of §4.3 given `recv_limit`.
    fn set_rate(&mut self, now: Time, r: f64, recv_limit: f64) {
        if self.p > 0.0 {
            self.x = self.x_bps(r).min(recv_limit).max(self.min_rate());
        } else if self.break_ss {
            self.x = self.x.min(recv_limit).max(self.initial_rate(r));
        } else if self
            .tld
            .is_none_or(|t| now.saturating_since(t).as_secs_f64() >= r)
        {
            self.x = (2.0 * self.x).min(recv_limit).max(self.initial_rate(r));
            self.tld = Some(now);
        }
    }

    fn max_x_recv(&self) -> f64 {
        self.x_recv_set.iter().map(|e| e.0).fold(0.0, f64::max)
    }

    /// `Update X_recv_set`: add the new rate, forget rates older than two
    /// round trips.
    fn update_set(&mut self, x_recv: f64, now: Time, r: f64) {
        self.x_recv_set.push((x_recv, now));
        let horizon = 2.0 * r;
        self.x_recv_set
            .retain(|&(_, t)| now.saturating_since(t).as_secs_f64() <= horizon);
    }

    /// `Maximize X_recv_set`, keeping the largest rate's own timestamp (see
    /// the module docs).
    fn maximize(&mut self, x_recv: f64, now: Time, r: f64) {
        self.x_recv_set.retain(|e| e.0.is_finite());
        self.update_set(x_recv, now, r);
        let best = self
            .x_recv_set
            .iter()
            .copied()
            .fold((0.0, now), |a, b| if b.0 > a.0 { b } else { a });
        self.x_recv_set.clear();
        self.x_recv_set.push(best);
    }

    fn restart_timer(&mut self, now: Time) {
        let secs = match self.rtt {
            Some(r) => (4.0 * r).max(2.0 * self.s / self.x),
            None => (2.0_f64).max(2.0 * self.s / self.x),
        };
        self.nofeedback_at = now + Duration::from_secs_f64(secs);
        self.sent_since_timer = false;
    }

    /// When the no-feedback timer expires.
    pub fn poll_timeout(&self) -> Option<Time> {
        Some(self.nofeedback_at)
    }

    /// Time passed; acts if the no-feedback timer expired (§4.4).
    pub fn handle_timeout(&mut self, now: Time) {
        if now < self.nofeedback_at {
            return;
        }
        let idle = !self.sent_since_timer;
        match self.rtt {
            None => {
                if !idle {
                    self.x = (self.x / 2.0).max(self.min_rate());
                }
            }
            Some(r) => {
                let recover = self.initial_rate(r);
                let x_recv = self.max_x_recv();
                if idle
                    && ((self.p > 0.0 && x_recv < recover)
                        || (self.p == 0.0 && self.x < 2.0 * recover))
                {
                    // Idle since the timer was set and already slow:
                    // nothing to undo.
                } else if self.p == 0.0 {
                    self.x = (self.x / 2.0).max(self.min_rate());
                } else {
                    let x_bps = self.x_bps(r);
                    let limit = if x_bps > 2.0 * x_recv {
                        x_recv
                    } else {
                        x_bps / 2.0
                    };
                    // update_limits(timer_limit)
                    let limit = limit.max(self.min_rate());
                    self.x_recv_set = vec![(limit / 2.0, now)];
                    self.set_rate(now, r, limit);
                }
            }
        }
        self.restart_timer(now);
    }
}

/// `W_init = min(4s, max(2s, 4380))` bytes (§4.2, RFC 3390).
fn initial_window(s: f64) -> f64 {
    (4.0 * s).min((2.0 * s).max(4380.0))
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
