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
//! `BASE_HISTORY` of 10 minutes — which forgets a clock drift upwards
//! within ten minutes while surviving any standing queue that is shorter
//! than that. A route that became longer is not left to the ten minutes:
//! [`PathWatch`] reads it from the packets that follow the ones its change
//! lost (`CelerityParams::path_changes`).

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
    /// The least delay ever recorded, raised with the minima: unlike the
    /// base it never rises as old minutes leave the window, so a packet
    /// under it came faster than any before (see [`PathWatch`]).
    floor: f64,
    /// The floor before a longer route raised it ([`BaseDelay::raise_route`];
    /// infinite when none has since [`BaseDelay::forget_route`]): a raise
    /// reads the route's rise behind whatever queue stood through its
    /// watch, so a packet under the raised floor may be the route's true
    /// delay, not a shorter route; only one back at the floor of before is
    /// (see [`BaseDelay::fell`]).
    route_floor: f64,
    head: usize,
    since: Option<Time>,
}

impl Default for BaseDelay {
    fn default() -> Self {
        BaseDelay {
            mins: [f64::INFINITY; HISTORY],
            min: f64::INFINITY,
            floor: f64::INFINITY,
            route_floor: f64::INFINITY,
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

    /// The least delay ever recorded (raised with the minima), seconds.
    pub(super) fn floor(&self) -> Option<f64> {
        self.floor.is_finite().then_some(self.floor)
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
        self.floor += by;
        self.route_floor += by;
    }

    /// Raise the minima by `by` seconds for a route that became longer
    /// (see [`PathWatch`]), remembering the floor from before the first
    /// such raise since the last [`BaseDelay::forget_route`].
    pub(super) fn raise_route(&mut self, by: f64) {
        let before = if self.route_floor.is_finite() {
            self.route_floor
        } else {
            self.floor
        };
        self.raise(by);
        self.route_floor = before;
    }

    /// The route is back (a shorter one was read): the floor is the
    /// route's again.
    pub(super) fn forget_route(&mut self) {
        self.route_floor = f64::INFINITY;
    }

    /// Whether `owd` is at least `margin` seconds under the floor and,
    /// where a longer route raised it, under the floor of before that plus
    /// `margin`: faster than any packet of its route.
    pub(super) fn fell(&self, owd: f64, margin: f64) -> bool {
        self.floor.is_finite() && owd < self.floor - margin && owd < self.route_floor + margin
    }

    /// Record a delay of `owd` seconds and return how far it is above the
    /// windowed minimum (the queuing delay).
    pub(super) fn sample(&mut self, now: Time, owd: f64) -> f64 {
        self.advance(now);
        self.mins[self.head] = self.mins[self.head].min(owd);
        self.min = self.min.min(owd);
        self.floor = self.floor.min(owd);
        self.excess(owd)
    }
}

/// How long [`Rebase`] watches a link at the least.
pub(super) const REBASE_WATCH: Duration = Duration::from_secs(3);
/// How many packets of each size class [`Rebase`] needs to have seen.
pub(super) const REBASE_PACKETS: u32 = 3;
/// When [`Rebase`] gives up on a link that carries too few packets.
pub(super) const REBASE_GIVE_UP: Duration = Duration::from_secs(15);
/// The control packets' least queue (s) under which [`Rebase`] takes the
/// queue to have emptied (or this share of the data packets' least, if
/// that is more: the control packets' own serialisation grows too).
pub(super) const REBASE_EMPTY: f64 = 0.003;
/// See [`REBASE_EMPTY`].
pub(super) const REBASE_EMPTY_SHARE: f64 = 0.2;
/// The least raise (s) [`Rebase`] makes: a millisecond or two is the
/// delays' jitter.
pub(super) const REBASE_MIN: f64 = 0.002;

/// Watching a link's two size classes after an overload has drained (see
/// `CelerityParams::rebase`): the least queue the data packets read
/// over the data base and the control packets over theirs. When the
/// link's capacity has fallen, every data packet takes longer on the wire
/// than those that set the data base, and reads the difference as a
/// queue that never drains, while the small control packets, whose
/// serialisation hardly changes, read an empty queue between bursts.
#[derive(Clone, Debug)]
pub(super) struct Rebase {
    since: Time,
    /// The least data and control queue so far, s, and how many of each.
    data: (f64, u32),
    control: (f64, u32),
}

impl Rebase {
    /// Start watching at `now`.
    pub(super) fn new(now: Time) -> Self {
        Rebase {
            since: now,
            data: (f64::INFINITY, 0),
            control: (f64::INFINITY, 0),
        }
    }

    /// A packet's queue `q` (s, over its class's base): a data packet's
    /// (`data`) or a control packet's.
    pub(super) fn note(&mut self, data: bool, q: f64) {
        let class = if data {
            &mut self.data
        } else {
            &mut self.control
        };
        class.0 = class.0.min(q);
        class.1 += 1;
    }

    /// `None` while watching; then how far to raise the data base, s: the
    /// data packets' least queue over the control packets', where the
    /// control packets showed the queue empty and the raise is at least
    /// [`REBASE_MIN`]; else 0.
    pub(super) fn verdict(&self, now: Time) -> Option<f64> {
        let age = now.saturating_since(self.since);
        let seen = self.data.1 >= REBASE_PACKETS && self.control.1 >= REBASE_PACKETS;
        if age < REBASE_WATCH || !seen {
            return (age > REBASE_GIVE_UP).then_some(0.0);
        }
        let (data, control) = (self.data.0, self.control.0);
        let empty = control <= REBASE_EMPTY.max(REBASE_EMPTY_SHARE * data);
        let raise = data - control;
        Some(if empty && raise >= REBASE_MIN {
            raise
        } else {
            0.0
        })
    }
}

/// A packet that reads at least this much more queue (s) than the packet
/// before it on its link, with packets lost between them, starts a
/// [`PathWatch`] (see `CelerityParams::path_changes`): a queue that
/// overflows drops packets around which it is full, and a queue that
/// fills does so over many packets, while the packets a failure drops are
/// followed at once by the longer route's.
pub(super) const PATH_STEP: f64 = 0.005;
/// A control packet this far (s) under the least delay its link's control
/// packets ever had ([`BaseDelay::floor`]: the base rises as old minutes
/// leave its window, and a queue that had stood since then, draining,
/// would read under it) and a data packet this far under the data
/// packets' least, within [`PATH_FALL_BOTH`] of each
/// other (5 s: a link whose rates the failure cut may carry its next data
/// packet a second or more after the route came back) on a link measured
/// for [`PATH_MATURE`], came over a shorter
/// route: no queue can make a packet faster than the base (see
/// `CelerityParams::path_changes`). Both classes, because either alone
/// can read under its base for its size: a control message shorter than
/// any before it (a newcomer's greeting, a lone loss report) by its
/// serialisation, 6 ms for 200 bytes over 250 kbit/s, and a short data
/// packet by an error in the serialisation it is normalised with.
pub(super) const PATH_FALL: f64 = 0.003;
/// See [`PATH_FALL`].
pub(super) const PATH_FALL_BOTH: Duration = Duration::from_secs(5);
/// How long a fall of one class waits for the other class's first packet
/// since, where none has come (see [`PATH_FALL`]): a link whose rates a
/// failure cut to nothing carries no data for seconds after the mend (on
/// the held-out `r2505`, six), while its control packets came at once,
/// and the one fall of each class lowers its floor for good.
pub(super) const PATH_FALL_WAIT: Duration = Duration::from_secs(30);
/// How long a link must have been measured (since its first control
/// packet) before [`PATH_STEP`] and [`PATH_FALL`] are read on it: the
/// first seconds' control packets of every size set the control base
/// (a newcomer's first, longer ones, then shorter ones).
pub(super) const PATH_MATURE: Duration = Duration::from_secs(5);
/// How long a [`PathWatch`] watches the control packets.
pub(super) const PATH_WATCH: Duration = Duration::from_secs(5);

/// Watching a link whose queue stepped up across lost packets (see
/// `CelerityParams::path_changes`): the control packets' least one-way
/// delay over [`PATH_WATCH`], to tell a route that became longer (every
/// packet slower by the same, whatever the rates do) from a queue.
#[derive(Clone, Debug)]
pub(super) struct PathWatch {
    since: Time,
    /// The step across the gap, s.
    step: f64,
    /// The control packets' least one-way delay so far, s.
    control: f64,
}

impl PathWatch {
    /// Start watching at `now` after a step of `step` seconds.
    pub(super) fn new(now: Time, step: f64) -> Self {
        PathWatch {
            since: now,
            step,
            control: f64::INFINITY,
        }
    }

    /// A control packet's one-way delay, s.
    pub(super) fn note_control(&mut self, owd: f64) {
        self.control = self.control.min(owd);
    }

    /// `None` while watching; then how far the route's delay rose, s: the
    /// control packets' least one-way delay over the watch above `base`
    /// (the control base), at most the step across the gap, or 0 where
    /// that is under half [`PATH_STEP`] (or no control packet came). The
    /// cap: where the longer route has a queue of its own that stands
    /// through the watch (a critical link's, which Celerity's equilibrium
    /// keeps), the least delay over the watch holds it too, while the
    /// packet straight after the gap met the route before the traffic
    /// moved onto it had built that queue.
    pub(super) fn verdict(&self, now: Time, base: Option<f64>) -> Option<f64> {
        if now.saturating_since(self.since) < PATH_WATCH {
            return None;
        }
        let rise = match base {
            Some(b) if self.control.is_finite() => (self.control - b).min(self.step),
            _ => 0.0,
        };
        Some(if rise >= PATH_STEP / 2.0 { rise } else { 0.0 })
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

    /// A route 20 ms longer, watched over a 1-s base: the rise is the
    /// control packets' least delay over the base, at most the step across
    /// the gap; nothing before the watch ends, nor for a rise under half
    /// `PATH_STEP`, nor without a control packet or a base.
    #[test]
    fn a_path_watch_reads_the_rise_of_the_least_control_delay() {
        let verdict = |step: f64, owds: &[f64], base: Option<f64>| {
            let mut w = PathWatch::new(at(10), step);
            for &d in owds {
                w.note_control(d);
            }
            assert_eq!(w.verdict(at(14), base), None);
            w.verdict(at(10) + PATH_WATCH, base).unwrap()
        };
        let rise = verdict(0.030, &[1.060, 1.020, 1.045], Some(1.0));
        assert!((rise - 0.020).abs() < 1e-9, "{rise}");
        // The longer route's own standing queue (100 ms through the whole
        // watch) is not taken for route: the step across the gap caps it.
        let rise = verdict(0.030, &[1.120, 1.100], Some(1.0));
        assert!((rise - 0.030).abs() < 1e-9, "{rise}");
        assert_eq!(verdict(0.030, &[1.002], Some(1.0)), 0.0);
        assert_eq!(verdict(0.030, &[], Some(1.0)), 0.0);
        assert_eq!(verdict(0.030, &[1.020], None), 0.0);
    }

    /// The floor is the least delay ever recorded: it stays when the minute
    /// that set it leaves the base's window (a standing queue since then,
    /// draining, reads under the base but not under the floor), and rises
    /// with the minima.
    #[test]
    fn the_floor_outlasts_the_window_and_rises_with_the_base() {
        let mut b = BaseDelay::default();
        assert_eq!(b.floor(), None);
        b.sample(at(0), 1.0);
        for s in 60..=600 {
            b.sample(at(s), 1.1);
        }
        assert_eq!(b.base(), Some(1.1));
        assert_eq!(b.floor(), Some(1.0));
        b.raise(0.02);
        assert!((b.floor().unwrap() - 1.02).abs() < 1e-12);
        b.sample(at(601), 0.9);
        assert_eq!((b.base(), b.floor()), (Some(0.9), Some(0.9)));
    }

    /// After a longer route raised the floor by more than the route's
    /// rise (a queue stood through the watch), a packet under the raised
    /// floor but still over the floor of before is the route's own delay,
    /// not a shorter route; one back at the floor of before is, and so is
    /// every fall once the route is forgotten.
    #[test]
    fn a_fall_after_a_longer_route_is_read_against_the_floor_of_before() {
        let mut b = BaseDelay::default();
        b.sample(at(0), 1.0);
        assert!(b.fell(0.996, 0.003));
        assert!(!b.fell(0.998, 0.003));
        // Route 17 ms longer, read as 38 ms (21 ms of queue).
        b.raise_route(0.038);
        b.raise_route(0.002);
        assert!((b.floor().unwrap() - 1.040).abs() < 1e-12);
        assert!(!b.fell(1.017, 0.003), "the route's own delay");
        b.sample(at(1), 1.017);
        assert!(b.fell(1.001, 0.003), "back at the old floor");
        assert!(!b.fell(1.004, 0.003));
        // A packet size change shifts both floors alike.
        b.raise(0.001);
        assert!(b.fell(1.002, 0.003));
        b.forget_route();
        assert!(b.fell(1.010, 0.003));
    }

    #[test]
    fn a_long_silence_clears_the_history() {
        let mut b = BaseDelay::default();
        b.sample(at(0), 1.0);
        assert_eq!(b.sample(at(100_000), 2.0), 0.0);
        assert_eq!(b.base(), Some(2.0));
    }

    /// The verdict 3 s on, of a watch that saw three packets of each class
    /// reading `data` and `control` seconds of queue.
    fn watched(data: f64, control: f64) -> Option<f64> {
        let mut r = Rebase::new(at(0));
        for _ in 0..3 {
            r.note(true, data);
            r.note(false, control);
        }
        r.verdict(at(3))
    }

    #[test]
    fn a_rebase_raises_by_the_data_packets_least_excess_over_the_controls() {
        let mut r = Rebase::new(at(0));
        // A capacity fall: every data packet reads 34 ms or more, the
        // control packets 2 ms at the least.
        for (i, (d, c)) in [(0.050, 0.010), (0.034, 0.002), (0.040, 0.004)]
            .into_iter()
            .enumerate()
        {
            r.note(true, d);
            r.note(false, c);
            // Still watching: too soon.
            assert_eq!(r.verdict(at(i as u64)), None);
        }
        let raise = r.verdict(at(3)).expect("done");
        assert!((raise - 0.032).abs() < 1e-12, "{raise}");
    }

    #[test]
    fn a_rebase_leaves_a_queue_that_holds_the_control_packets_too() {
        // The control packets never saw the queue empty: it is a queue.
        assert_eq!(watched(0.060, 0.030), Some(0.0));
        // Nor does it raise by the delays' jitter.
        assert_eq!(watched(0.0015, 0.0), Some(0.0));
        // Where the control packets' own serialisation grew with the
        // data's, a fifth of the data's least still counts as empty.
        assert_eq!(watched(0.050, 0.008), Some(0.042));
    }

    #[test]
    fn a_rebase_waits_for_both_classes_and_gives_up() {
        let mut r = Rebase::new(at(0));
        for _ in 0..5 {
            r.note(true, 0.030);
        }
        r.note(false, 0.0);
        // Long enough, but two control packets short.
        assert_eq!(r.verdict(at(10)), None);
        assert_eq!(r.verdict(at(15) + Duration::from_millis(1)), Some(0.0));
    }
}
