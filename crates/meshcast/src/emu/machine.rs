//! How much of its CPU time this machine got: a virtual machine's
//! hypervisor can take CPU time from it (the kernel counts it as
//! *steal*), and while it does, nothing in the machine runs, the delay
//! element's real-time thread included, so an emulated link's delay and
//! a node's timers stretch however the code is written. A run (and a
//! test) reads the share taken from `/proc/stat` to tell that apart from
//! its own faults.
//!
//! On this project's machines (two-CPU virtual machines) a round trip
//! over two emulated hops of 50 ms in all measured 101.6–102.5 ms at the
//! 90th percentile in runs during which the hypervisor took under 1% of
//! the CPU time, and 106.0–109.6 ms in runs during which it took 2.5–5.5%
//! (`tests/emu.rs`, ten runs in a row).
//!
//! The same counts say how busy the machine was: the nodes of an
//! emulated conference share its CPUs, and a node that waits for one
//! holds the packets it relays meanwhile, which a deployment (one node a
//! machine) would not.
//!
//! And whether its wall clock held: [`Clocks`].

use std::time::{Instant, SystemTime};

/// The CPU time of all the machine's CPUs together, in the kernel's
/// clock ticks, as `/proc/stat`'s `cpu` line counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// Every state: user, nice, system, idle, iowait, irq, softirq and
    /// steal (guest time is already counted in user and nice).
    total: u64,
    /// Idle, or waiting for I/O with nothing else to run.
    idle: u64,
    /// Taken by the hypervisor (steal).
    stolen: u64,
}

impl CpuTimes {
    /// The counts now; `None` where `/proc/stat` cannot be read or does
    /// not count steal (kernels before 2.6.11).
    pub fn now() -> Option<CpuTimes> {
        CpuTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The counts in the text of `/proc/stat`.
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        (fields.len() == 8).then(|| CpuTimes {
            total: fields.iter().sum(),
            idle: fields[3] + fields[4],
            stolen: fields[7],
        })
    }

    /// How the CPU time since `earlier` was spent; `None` when no tick
    /// has passed between the two.
    pub fn since(&self, earlier: &CpuTimes) -> Option<CpuShares> {
        let total = self.total.checked_sub(earlier.total)?;
        let idle = self.idle.saturating_sub(earlier.idle);
        let stolen = self.stolen.saturating_sub(earlier.stolen);
        let share = |ticks: u64| ticks as f64 / total as f64;
        (total > 0).then(|| CpuShares {
            stolen: share(stolen),
            busy: share(total.saturating_sub(idle + stolen)),
        })
    }

    /// How the CPU time between two readings was spent, if both were
    /// read ([`CpuTimes::now`]).
    pub fn between(earlier: Option<CpuTimes>, later: Option<CpuTimes>) -> Option<CpuShares> {
        later?.since(&earlier?)
    }
}

/// Shares (0 to 1) of the machine's CPU time between two readings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuShares {
    /// Taken by the hypervisor.
    pub stolen: f64,
    /// Spent running something (neither idle nor taken by the
    /// hypervisor).
    pub busy: f64,
}

/// A share of CPU time the hypervisor took that makes a run's (or a
/// measurement's) timing the machine's and not the code's: above it,
/// `meshcast emu` warns, and the real-time tests measure again.
pub const STOLEN_WARNING: f64 = 0.01;

/// The machine's two clocks read together: the wall clock, which nodes
/// on different machines share an epoch on, and the monotonic clock,
/// which an emulated run and its nodes keep time by. Something that
/// sets the machine's time (a time daemon stepping it, a virtual
/// machine's clock resynchronised after a pause) moves the first and not
/// the second. A CI run once lost its cross traffic mid-run exactly as
/// setting the wall clock seconds forward does (`date -s`): the endpoints,
/// then timed by the wall clock, stopped there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clocks {
    /// The wall clock.
    pub wall: SystemTime,
    /// The monotonic clock, at the same instant.
    pub mono: Instant,
}

impl Clocks {
    /// Both clocks now, read together
    /// ([`meshcast_net::clock::read_at_instant`]: a preemption between
    /// the readings does not pass for a step of the wall clock).
    pub fn now() -> Clocks {
        let (wall, mono) = meshcast_net::clock::read_at_instant(SystemTime::now);
        Clocks { wall, mono }
    }

    /// How far the wall clock moved against the monotonic clock from
    /// `earlier` to these readings, in seconds: positive when it was set
    /// forward, about zero when nothing set it (a time daemon's gradual
    /// corrections slew both clocks alike).
    pub fn wall_step_since(&self, earlier: &Clocks) -> f64 {
        let wall = match self.wall.duration_since(earlier.wall) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
        let mono = if self.mono >= earlier.mono {
            (self.mono - earlier.mono).as_secs_f64()
        } else {
            -(earlier.mono - self.mono).as_secs_f64()
        };
        wall - mono
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_step_of_the_wall_clock_is_the_clocks_disagreement() {
        let t0 = Clocks::now();
        // Ten seconds later on both clocks: no step.
        let later = Clocks {
            wall: t0.wall + Duration::from_secs(10),
            mono: t0.mono + Duration::from_secs(10),
        };
        assert!(later.wall_step_since(&t0).abs() < 1e-9);
        // The wall clock set 3 s forward; and one reading 2 s earlier a
        // second later: set 3 s back.
        let ahead = Clocks {
            wall: later.wall + Duration::from_secs(3),
            ..later
        };
        assert!((ahead.wall_step_since(&t0) - 3.0).abs() < 1e-9);
        let behind = Clocks {
            wall: t0.wall - Duration::from_secs(2),
            mono: t0.mono + Duration::from_secs(1),
        };
        assert!((behind.wall_step_since(&t0) + 3.0).abs() < 1e-9);
        // Two readings of this machine's clocks a moment apart agree.
        let now = Clocks::now();
        assert!(now.wall_step_since(&t0).abs() < 0.01);
    }

    const STAT: &str = "cpu  1384473 54273 103909 2217366 4594 0 22388 8504 0 0\n\
                        cpu0 692236 27136 51954 1108683 2297 0 11194 4252 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn reads_the_cpu_line() {
        let t = CpuTimes::parse(STAT).expect("counts");
        assert_eq!(t.stolen, 8504);
        assert_eq!(t.idle, 2217366 + 4594);
        assert_eq!(
            t.total,
            1384473 + 54273 + 103909 + 2217366 + 4594 + 22388 + 8504
        );
        assert_eq!(CpuTimes::parse("cpu  1 2 3 4\n"), None);
        assert_eq!(CpuTimes::parse("intr 1 2\n"), None);
        assert_eq!(CpuTimes::parse("cpu  1 2 x 4 5 6 7 8\n"), None);
    }

    #[test]
    fn the_share_taken_between_two_readings() {
        let a = CpuTimes {
            total: 1000,
            idle: 500,
            stolen: 10,
        };
        let b = CpuTimes {
            total: 1200,
            idle: 545,
            stolen: 15,
        };
        // 200 ticks: 45 idle, 5 stolen, 150 running.
        let shares = CpuShares {
            stolen: 0.025,
            busy: 0.75,
        };
        assert_eq!(b.since(&a), Some(shares));
        assert_eq!(CpuTimes::between(Some(a), Some(b)), Some(shares));
        assert_eq!(CpuTimes::between(None, Some(b)), None);
        assert_eq!(a.since(&a), None);
        assert_eq!(a.since(&b), None);
    }

    #[test]
    fn this_machine_counts_its_cpu_time() {
        if std::path::Path::new("/proc/stat").exists() {
            let t = CpuTimes::now().expect("a Linux /proc/stat counts steal");
            assert!(t.total >= t.stolen);
        }
    }
}
