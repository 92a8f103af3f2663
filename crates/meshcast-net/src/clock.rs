//! Clocks read against [`Instant`], the clock a node keeps time by.
//!
//! Processes on one machine can share an epoch on its monotonic clock
//! (`CLOCK_MONOTONIC`, nanoseconds since boot), which nothing sets: a
//! step of the wall clock (a time daemon setting it, a virtual machine's
//! clock resynchronised after a pause) moves an epoch on the wall clock
//! and not this one. `meshcast emu` hands its nodes their epoch this way.

use std::time::{Duration, Instant};

/// The result of `read` and the instant it was read at: the midpoint of
/// two readings of [`Instant`] around it. A reading whose two instants
/// are more than 20 µs apart (the process was preempted between them) is
/// taken again, a few times at most, and the closest kept.
pub fn read_at_instant<T>(mut read: impl FnMut() -> T) -> (T, Instant) {
    let mut best: Option<(Duration, T, Instant)> = None;
    for _ in 0..5 {
        let before = Instant::now();
        let value = read();
        let spread = before.elapsed();
        let at = before + spread / 2;
        if best.as_ref().is_none_or(|(s, ..)| spread < *s) {
            best = Some((spread, value, at));
        }
        if spread <= Duration::from_micros(20) {
            break;
        }
    }
    let (_, value, at) = best.expect("read at least once");
    (value, at)
}

/// The machine's monotonic clock now, in nanoseconds since boot.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn monotonic_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the kernel to write; the
    // monotonic clock always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    assert_eq!(rc, 0, "CLOCK_MONOTONIC cannot be read");
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// `at` on the machine's monotonic clock, in nanoseconds since boot: a
/// number another process on this machine can turn back into its own
/// instant ([`instant_of_monotonic_ns`]).
#[cfg(target_os = "linux")]
pub fn monotonic_ns(at: Instant) -> u64 {
    let (now_ns, now) = read_at_instant(monotonic_now_ns);
    if at >= now {
        now_ns.saturating_add(u64::try_from((at - now).as_nanos()).unwrap_or(u64::MAX))
    } else {
        now_ns.saturating_sub(u64::try_from((now - at).as_nanos()).unwrap_or(u64::MAX))
    }
}

/// The instant of `ns` on the machine's monotonic clock (nanoseconds
/// since boot, as [`monotonic_ns`] gives them).
#[cfg(target_os = "linux")]
pub fn instant_of_monotonic_ns(ns: u64) -> Instant {
    let (now_ns, now) = read_at_instant(monotonic_now_ns);
    if ns >= now_ns {
        now + Duration::from_nanos(ns - now_ns)
    } else {
        // Since boot, as the instant's own clock counts: never before it.
        now.checked_sub(Duration::from_nanos(now_ns - ns))
            .unwrap_or(now)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn instants_go_to_the_monotonic_clock_and_back() {
        let now = Instant::now();
        for at in [
            now,
            now + Duration::from_secs(3),
            now - Duration::from_millis(1500),
        ] {
            let back = instant_of_monotonic_ns(monotonic_ns(at));
            let off = if back > at { back - at } else { at - back };
            // Two readings of two clocks: within a loaded machine's slack.
            assert!(off < Duration::from_millis(5), "{off:?}");
        }
        // Three seconds apart on one clock, three on the other.
        let d = monotonic_ns(now + Duration::from_secs(3)) - monotonic_ns(now);
        assert!(d.abs_diff(3_000_000_000) < 5_000_000, "{d}");
    }

    #[test]
    fn a_reading_is_placed_between_the_instants_around_it() {
        let before = Instant::now();
        let (v, at) = read_at_instant(|| 7);
        assert_eq!(v, 7);
        assert!(at >= before && at <= Instant::now());
    }
}
