//! The base (propagation) one-way delay of an overlay link.
//!
//! Queuing delay is a packet's one-way delay minus the link's base delay.
//! The clocks of the two ends are not synchronised, so the base is not
//! known: it is the smallest one-way delay seen, which includes the clock
//! offset and so cancels it.
//!
//! **How long to remember the minimum.** A link that carries a standing
//! queue (Celerity's equilibrium keeps `β/(R + δ)` seconds of queue on a
//! critical link) never shows its true base again. A short window (the
//! first version kept two rotating 60-s halves) then ratchets: the minimum
//! of a minute with a standing queue becomes the base, the measured
//! queuing delay drops by that much, the rates grow, the queue grows, and
//! the next window's minimum is higher again. On the dumbbell with
//! Simulcast this pushed the bottleneck queue past the 200-ms delay bound
//! within four minutes. So the base is the minimum over
//! [`HISTORY`] one-minute buckets — RFC 6817 (LEDBAT) §4.2's
//! `BASE_HISTORY` of 10 minutes — which forgets a route change (or a clock
//! drift upwards) within ten minutes while surviving any standing queue
//! that is shorter than that.

use meshcast_core::{Duration, Time};

/// Number of one-minute buckets the minimum is taken over.
pub(super) const HISTORY: usize = 10;
/// Length of one bucket.
pub(super) const BUCKET: Duration = Duration::from_secs(60);

/// The minimum one-way delay (or RTT) over the last [`HISTORY`] ×
/// [`BUCKET`].
#[derive(Clone, Debug)]
pub(super) struct BaseDelay {
    mins: [f64; HISTORY],
    /// The minimum of `mins`, kept as they change (read per packet).
    min: f64,
    head: usize,
    since: Option<Time>,
}

impl Default for BaseDelay {
    fn default() -> Self {
        BaseDelay {
            mins: [f64::INFINITY; HISTORY],
            min: f64::INFINITY,
            head: 0,
            since: None,
        }
    }
}

impl BaseDelay {
    /// The windowed minimum so far, seconds.
    pub(super) fn base(&self) -> Option<f64> {
        self.min.is_finite().then_some(self.min)
    }

    /// How far `owd` is above the windowed minimum, without recording it.
    pub(super) fn excess(&self, owd: f64) -> f64 {
        (owd - self.base().unwrap_or(owd)).max(0.0)
    }

    /// Move the window on to `now`: the minutes that have left it are
    /// forgotten, recorded or not (a caller that only compares delays
    /// with [`BaseDelay::excess`] still ages the base).
    pub(super) fn advance(&mut self, now: Time) {
        let since = *self.since.get_or_insert(now);
        let elapsed = now.saturating_since(since).as_nanos() / BUCKET.as_nanos();
        if elapsed > 0 {
            for _ in 0..elapsed.min(HISTORY as u64) {
                self.head = (self.head + 1) % HISTORY;
                self.mins[self.head] = f64::INFINITY;
            }
            self.since = Some(since + Duration::from_nanos(elapsed * BUCKET.as_nanos()));
            self.min = self.mins.iter().copied().fold(f64::INFINITY, f64::min);
        }
    }

    /// Raise every minute's minimum by `by` seconds (the delays were of
    /// shorter packets than the ones to come).
    pub(super) fn raise(&mut self, by: f64) {
        for m in &mut self.mins {
            *m += by;
        }
        self.min += by;
    }

    /// Record a delay of `owd` seconds and return how far it is above the
    /// windowed minimum (the queuing delay).
    pub(super) fn sample(&mut self, now: Time, owd: f64) -> f64 {
        self.advance(now);
        self.mins[self.head] = self.mins[self.head].min(owd);
        self.min = self.min.min(owd);
        self.excess(owd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Time {
        Time::ZERO + Duration::from_secs(s)
    }

    #[test]
    fn queuing_delay_is_measured_above_the_minimum() {
        let mut b = BaseDelay::default();
        assert_eq!(b.base(), None);
        assert_eq!(b.sample(at(0), 5.0), 0.0);
        assert_eq!(b.sample(at(1), 5.2), 0.20000000000000018);
        assert_eq!(b.sample(at(2), 4.9), 0.0);
        assert_eq!(b.base(), Some(4.9));
    }

    #[test]
    fn a_standing_queue_does_not_raise_the_base_for_ten_minutes() {
        let mut b = BaseDelay::default();
        b.sample(at(0), 1.0);
        // A queue of 0.1 s that never drains.
        for s in 1..600 {
            let q = b.sample(at(s), 1.1);
            assert!((q - 0.1).abs() < 1e-9, "at {s}s the queue read {q}");
        }
        // Ten minutes on, the first minute is forgotten.
        assert_eq!(b.sample(at(600), 1.1), 0.0);
        assert_eq!(b.base(), Some(1.1));
    }

    #[test]
    fn a_long_silence_clears_the_history() {
        let mut b = BaseDelay::default();
        b.sample(at(0), 1.0);
        assert_eq!(b.sample(at(100_000), 2.0), 0.0);
        assert_eq!(b.base(), Some(2.0));
    }
}
