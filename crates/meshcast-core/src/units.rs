//! Rates in bits per second; sizes are plain byte counts (`u32`/`u64`).

use crate::time::Duration;
use std::fmt;

/// A data rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(u64);

impl Rate {
    /// Zero bits per second.
    pub const ZERO: Rate = Rate(0);

    /// `bps` bits per second.
    pub const fn from_bps(bps: u64) -> Rate {
        Rate(bps)
    }
    /// `kbps` kilobits (1000 bits) per second.
    pub const fn from_kbps(kbps: u64) -> Rate {
        Rate(kbps * 1_000)
    }
    /// A fractional kilobit-per-second figure, rounded to the nearest bit/s;
    /// negative or non-finite input gives zero.
    pub fn from_kbps_f64(kbps: f64) -> Rate {
        if kbps.is_nan() || kbps <= 0.0 {
            Rate(0)
        } else {
            Rate((kbps * 1e3).round() as u64)
        }
    }
    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Kilobits per second, as a float.
    pub fn as_kbps_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next
    /// nanosecond. `None` at rate zero (the bytes never leave).
    pub fn transmit_time(self, bytes: u64) -> Option<Duration> {
        if self.0 == 0 {
            return None;
        }
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        let ns = bits.div_ceil(u128::from(self.0));
        Some(Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)))
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bps", self.0)
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} kbps", self.as_kbps_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmit_time_rounds_up() {
        // 1028 bytes at 100 Mbps = 82.24 us exactly.
        let r = Rate::from_kbps(100_000);
        assert_eq!(r.transmit_time(1028), Some(Duration::from_nanos(82_240)));
        // 1028 bytes at 480 kbps = 17.1333... ms, rounded up.
        let r = Rate::from_kbps(480);
        assert_eq!(
            r.transmit_time(1028),
            Some(Duration::from_nanos(17_133_334))
        );
        assert_eq!(Rate::ZERO.transmit_time(1), None);
        assert_eq!(Rate::from_kbps_f64(1.5), Rate::from_bps(1500));
        assert_eq!(Rate::from_kbps_f64(-3.0), Rate::ZERO);
    }
}
