//! Monotonic time that starts at zero, in nanoseconds.
//!
//! [`Time`] is an instant since the start of a run (simulated) or since the
//! runtime started (real; converted from the OS clock in `meshcast-net`
//! only). [`Duration`] is a span between two instants. Both are plain `u64`
//! nanosecond counts: 584 years of range, exact integer arithmetic, and
//! `Ord` so they can key an event queue.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant, in nanoseconds since the start.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

/// A span of time, in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Time {
    /// The start of time.
    pub const ZERO: Time = Time(0);
    /// The largest representable instant ("never").
    pub const MAX: Time = Time(u64::MAX);

    /// An instant `ns` nanoseconds after the start.
    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    /// An instant `us` microseconds after the start.
    pub const fn from_micros(us: u64) -> Time {
        Time(us * 1_000)
    }
    /// An instant `ms` milliseconds after the start.
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    /// An instant `s` seconds after the start.
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    /// An instant `s` (fractional) seconds after the start, rounded to the
    /// nearest nanosecond; negative or non-finite input saturates to zero /
    /// [`Time::MAX`].
    pub fn from_secs_f64(s: f64) -> Time {
        Time(secs_to_nanos(s))
    }
    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the start, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Time::MAX`].
    pub const fn saturating_add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest span (stands for "unreachable" in shortest-delay sums).
    pub const MAX: Duration = Duration(u64::MAX);

    /// `self + other`, saturating at [`Duration::MAX`].
    pub const fn saturating_add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }

    /// A span of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }
    /// A span of `us` microseconds.
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }
    /// A span of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms * 1_000_000)
    }
    /// A span of `s` seconds.
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s * 1_000_000_000)
    }
    /// A span of `s` (fractional) seconds, rounded to the nearest
    /// nanosecond; negative or non-finite input saturates.
    pub fn from_secs_f64(s: f64) -> Duration {
        Duration(secs_to_nanos(s))
    }
    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// The span in seconds, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// The span in milliseconds, as a float.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

fn secs_to_nanos(s: f64) -> u64 {
    if s.is_nan() || s <= 0.0 {
        0
    } else {
        // `as` saturates for values beyond u64::MAX.
        (s * 1e9).round() as u64
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0 + d.0)
    }
}
impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}
impl Sub<Time> for Time {
    type Output = Duration;
    /// The span between two instants; panics in debug builds if `rhs` is
    /// later (use [`Time::saturating_since`] when that can happen).
    fn sub(self, rhs: Time) -> Duration {
        Duration(self.0 - rhs.0)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0 + d.0)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}ms", self.as_millis_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip() {
        assert_eq!(Time::from_secs(2).as_nanos(), 2_000_000_000);
        assert_eq!(Time::from_secs_f64(1.5), Time::from_millis(1500));
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(
            Time::from_millis(5) - Time::from_millis(2),
            Duration::from_millis(3)
        );
        assert_eq!(
            Time::from_millis(2).saturating_since(Time::from_millis(5)),
            Duration::ZERO
        );
        assert_eq!(Time::MAX.saturating_add(Duration::from_secs(1)), Time::MAX);
    }
}
