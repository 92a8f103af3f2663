//! A timer of the kernel's precision for the node's loop.
//!
//! Tokio's timers fire on a millisecond tick: a deadline is rounded up
//! to the next millisecond, and the reactor parks for whole milliseconds.
//! On an idle machine a node's timers (a head's shaping and a source's
//! pacing among them) were handled 1.17 ms after their time at the
//! median and 2.0 ms at the 99th percentile (`meshcast emu`, the steady
//! dumbbell's four nodes, 20 s), where the simulator handles each at its
//! time. On Linux the node waits on a `timerfd` instead (armed relative
//! to the monotonic clock that [`std::time::Instant`] reads), through
//! Tokio's reactor like its socket; elsewhere it falls back to Tokio's
//! timer.
#![allow(unsafe_code)]

use std::io;
use std::time::Instant;

/// One rearmable timer.
pub(crate) struct Timer {
    #[cfg(target_os = "linux")]
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    /// The instant it is armed for, until its expiry is read: the node's
    /// loop asks again for the same deadline after every datagram, and
    /// one that is already armed needs no system call.
    #[cfg(target_os = "linux")]
    armed_for: Option<Instant>,
}

#[cfg(target_os = "linux")]
impl Timer {
    /// A disarmed timer. Must be called within a Tokio runtime.
    pub(crate) fn new() -> io::Result<Timer> {
        use std::os::fd::FromRawFd as _;
        // SAFETY: timerfd_create takes no pointers; a non-negative result
        // is a new descriptor that nothing else owns.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just created and is owned here alone.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // SAFETY: an OwnedFd is open until dropped, and the AsyncFd owns
        // it (and so keeps it open, on the same descriptor) for its whole
        // life.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE)
        }
        .map_err(|e| e.into_parts().1)?;
        Ok(Timer {
            fd,
            armed_for: None,
        })
    }

    /// Arm the timer `wait` from now (disarm it for zero, which the
    /// kernel reads as "off").
    fn arm(&self, wait: std::time::Duration) -> io::Result<()> {
        use std::os::fd::AsRawFd as _;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32),
            },
        };
        // SAFETY: the descriptor is a timerfd owned by self; spec is a
        // valid itimerspec and the old value is not asked for.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                0,
                &raw const spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Consume the timer's expirations, if any: whether it had expired.
    fn expired(&self) -> io::Result<bool> {
        use std::os::fd::AsRawFd as _;
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer from a
        // descriptor owned by self.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
        if n == 8 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        if n < 0 && e.kind() == io::ErrorKind::WouldBlock {
            return Ok(false);
        }
        Err(e)
    }

    /// Wait until `at` (at once for a time already past).
    pub(crate) async fn sleep_until(&mut self, at: Instant) -> io::Result<()> {
        loop {
            let wait = at.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Ok(());
            }
            if self.armed_for != Some(at) {
                self.arm(wait)?;
                self.armed_for = Some(at);
            }
            // An expiry of an earlier arming may still be readable: it is
            // consumed here, and the loop checks the time again.
            let mut ready = self.fd.readable().await?;
            if self.expired()? {
                self.armed_for = None;
            } else {
                ready.clear_ready();
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Timer {
    /// Tokio's own timer, where there is no timerfd.
    pub(crate) fn new() -> io::Result<Timer> {
        Ok(Timer {})
    }

    /// Wait until `at` (at once for a time already past).
    pub(crate) async fn sleep_until(&mut self, at: Instant) -> io::Result<()> {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        Ok(())
    }
}

// The tests reach into the timerfd (`arm`, `armed_for`), which only Linux has.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Run `test` on a fresh timer in a runtime of its own.
    fn with_timer(test: impl AsyncFnOnce(&mut Timer)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(async {
                let mut t = Timer::new().expect("timer");
                test(&mut t).await;
            });
    }

    /// Wait for `at` and check the wait did not end before it.
    async fn sleeps_until(t: &mut Timer, at: Instant) {
        t.sleep_until(at).await.expect("sleeps");
        assert!(Instant::now() >= at, "woke before its time");
    }

    #[test]
    fn fires_at_its_time_not_before() {
        with_timer(async |t| {
            for wait_us in [300u64, 1_500, 4_000] {
                sleeps_until(t, Instant::now() + Duration::from_micros(wait_us)).await;
            }
        });
    }

    #[test]
    fn a_past_time_returns_at_once_and_rearming_forgets_the_old_time() {
        with_timer(async |t| {
            t.sleep_until(Instant::now() - Duration::from_millis(5))
                .await
                .expect("past");
            // Armed for 1 ms and left to expire unread, then asked for 20 ms
            // later: the stale expiry must not end the second wait early.
            t.arm(Duration::from_millis(1)).expect("arm");
            std::thread::sleep(Duration::from_millis(3));
            sleeps_until(t, Instant::now() + Duration::from_millis(20)).await;
        });
    }

    #[test]
    fn a_wait_given_up_and_asked_for_again_still_ends_at_its_time() {
        with_timer(async |t| {
            // The node's loop: a wait for `at` dropped when a datagram
            // comes first, then the same `at` asked for again (the timer
            // stays armed, no new system call), and then an earlier one.
            let at = Instant::now() + Duration::from_millis(30);
            let given_up = tokio::time::timeout(Duration::from_millis(2), t.sleep_until(at)).await;
            assert!(given_up.is_err(), "ended before its time");
            assert_eq!(t.armed_for, Some(at));
            sleeps_until(t, Instant::now() + Duration::from_millis(5)).await;
            sleeps_until(t, at).await;
            assert_eq!(t.armed_for, None);
        });
    }
}
