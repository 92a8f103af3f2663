//! An overlay link's packet time at its bottleneck, from the spacing of
//! data packets that arrive back to back (packet pairs).
//!
//! The tail knows the serialisation of a data packet summed over every
//! hop of the link's path (its data and control packets' base delays
//! differ by that, see `Incoming::serialisation`), but the queue a delay
//! price cannot resolve is about one packet time at the one hop where the
//! queue forms (see `CelerityParams::gain_floor`). Two packets that left
//! that hop back to back arrive one packet time of it apart, whatever
//! faster hops follow. So for every two consecutive data packets of the
//! link (hop sequence numbers one apart, both at least half the longest
//! data packet), where they arrive further apart than they were sent
//! (they queued behind each other somewhere), the arrival gap per byte of
//! the second is a sample. A gap holds more than the bottleneck's packet
//! time when other packets came between the two there, and less where a
//! queue after it let the second catch up with the first: the least
//! sample of each [`BUCKET`] is past the first, and the median of the last
//! [`BUCKETS`] buckets' least samples is past the second where it is rare.
//! Behind a last hop that queues most of the time it is not rare, and the
//! estimate is that hop's packet time (why `floor_dispersion` is off by
//! default; adding the first packet's queueing delay to each gap, which
//! bounds the shortening, also adds the bottleneck's own queue: both in
//! docs/celerity.md, "The floor at the bottleneck").
//! On a path whose packets cross two busy bottlenecks the pairs rarely
//! stay together, and the estimate comes out long; the floor takes the
//! least of it and the summed serialisation.

use meshcast_core::{Duration, Time};
use std::collections::VecDeque;

/// How long each least sample is taken over.
pub(super) const BUCKET: Duration = Duration::from_secs(2);
/// How many buckets the median is taken over (30 s).
pub(super) const BUCKETS: usize = 15;
/// The fewest buckets with a sample before there is an estimate.
pub(super) const LEAST_BUCKETS: usize = 3;
/// How much further apart than sent two packets must arrive to count as
/// having queued behind each other (the timestamps are microseconds).
pub(super) const SPREAD: f64 = 50e-6;

/// The last data packet, for the next one's gap.
#[derive(Clone, Copy, Debug)]
struct Last {
    seq: u16,
    sent_us: u32,
    at: Time,
}

/// The packet-pair estimate of an overlay link's bottleneck packet time
/// (see the module's docs).
#[derive(Clone, Debug, Default)]
pub(super) struct Dispersion {
    last: Option<Last>,
    /// Each full bucket's least sample, seconds per byte, oldest first.
    buckets: VecDeque<f64>,
    /// The current bucket's least sample so far, if any.
    least: Option<f64>,
    /// When the current bucket began.
    since: Option<Time>,
}

impl Dispersion {
    /// A data packet of `bytes` (at least half the link's longest) with
    /// hop sequence number `seq`, sent at `sent_us` on the head's clock,
    /// arrived `now`.
    pub(super) fn note(&mut self, seq: u16, sent_us: u32, now: Time, bytes: usize) {
        if let Some(last) = self.last
            && seq == last.seq.wrapping_add(1)
            && bytes > 0
        {
            let sent = f64::from(sent_us.wrapping_sub(last.sent_us) as i32) / 1e6;
            let arrived = now.saturating_since(last.at).as_secs_f64();
            if sent >= 0.0 && arrived > sent + SPREAD {
                let per_byte = arrived / bytes as f64;
                self.least = Some(self.least.map_or(per_byte, |l| l.min(per_byte)));
            }
        }
        self.last = Some(Last {
            seq,
            sent_us,
            at: now,
        });
        self.roll(now);
    }

    /// A packet that cannot be half of a pair (a short data packet): the
    /// next one's gap is not taken.
    pub(super) fn skip(&mut self) {
        self.last = None;
    }

    /// Close the current bucket if it began [`BUCKET`] or more before
    /// `now` (a link without data for a while closes one bucket with what
    /// it had).
    fn roll(&mut self, now: Time) {
        let since = *self.since.get_or_insert(now);
        if now.saturating_since(since) < BUCKET {
            return;
        }
        if let Some(least) = self.least.take() {
            if self.buckets.len() == BUCKETS {
                self.buckets.pop_front();
            }
            self.buckets.push_back(least);
        }
        self.since = Some(now);
    }

    /// The bottleneck's time for a packet of `bytes`, seconds: the median
    /// of the buckets' least samples; `None` until [`LEAST_BUCKETS`]
    /// buckets have one.
    pub(super) fn time_of(&self, bytes: usize) -> Option<f64> {
        if self.buckets.len() < LEAST_BUCKETS {
            return None;
        }
        let mut v: Vec<f64> = self.buckets.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2] * bytes as f64)
    }
}

/// Pairs of 1400-byte packets sent `gap_us` apart, the second arriving
/// `spacing` after the first, one pair every 100 ms for `secs` seconds
/// from `from` (sequence numbers from `seq`): for this module's tests and
/// the peer's.
#[cfg(test)]
pub(super) fn pairs(
    d: &mut Dispersion,
    from: f64,
    secs: f64,
    gap_us: u32,
    spacing: f64,
    seq: &mut u16,
) {
    let mut t = from;
    while t < from + secs {
        let sent = (t * 1e6) as u32;
        d.note(*seq, sent, Time::from_secs_f64(t + 0.010), 1400);
        d.note(
            seq.wrapping_add(1),
            sent + gap_us,
            Time::from_secs_f64(t + 0.010 + spacing),
            1400,
        );
        *seq = seq.wrapping_add(2);
        t += 0.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_pairs_give_the_bottleneck_s_packet_time() {
        let mut d = Dispersion::default();
        let mut seq = 65_530;
        // 1400 bytes in 5.6 ms (2 Mbit/s), sent 1 ms apart.
        pairs(&mut d, 0.0, 5.0, 1_000, 0.0056, &mut seq);
        assert_eq!(d.time_of(1400), None, "two buckets only");
        pairs(&mut d, 5.0, 10.0, 1_000, 0.0056, &mut seq);
        let t = d.time_of(1400).unwrap();
        assert!((t - 0.0056).abs() < 1e-9, "{t}");
        assert!((d.time_of(700).unwrap() - 0.0028).abs() < 1e-9);
    }

    #[test]
    fn pairs_that_did_not_queue_together_give_nothing() {
        let mut d = Dispersion::default();
        let mut seq = 0;
        // Sent 8 ms apart, arriving 8 ms apart: paced, not queued.
        pairs(&mut d, 0.0, 20.0, 8_000, 0.008, &mut seq);
        assert_eq!(d.time_of(1400), None);
    }

    #[test]
    fn a_gap_in_the_sequence_or_a_short_packet_breaks_the_pair() {
        let mut d = Dispersion::default();
        let mut t = 0.0;
        let mut seq: u16 = 0;
        while t < 20.0 {
            let sent = (t * 1e6) as u32;
            d.note(seq, sent, Time::from_secs_f64(t + 0.010), 1400);
            // The next one is two on (one lost), or the very next after a
            // short one: either would have been a pair 5.6 ms apart.
            let next = if seq % 4 == 0 {
                seq + 2
            } else {
                d.skip();
                seq + 1
            };
            d.note(next, sent + 1_000, Time::from_secs_f64(t + 0.0156), 1400);
            seq += 3;
            t += 0.1;
        }
        assert_eq!(d.time_of(1400), None);
    }

    #[test]
    fn the_median_of_the_buckets_outlasts_a_queue_after_the_bottleneck() {
        let mut d = Dispersion::default();
        let mut seq = 0;
        // Other packets between the pair at the bottleneck (spacing two
        // packet times) in most pairs: the least of each bucket is one.
        let mut t: f64 = 0.0;
        while t < 30.0 {
            let spacing = if (t * 10.0).round() as u64 % 5 == 0 {
                0.0056
            } else {
                0.0112
            };
            pairs(&mut d, t, 0.1, 1_000, spacing, &mut seq);
            t += 0.1;
        }
        // A queue after the bottleneck let one pair in each of four
        // buckets catch up (1.2 ms apart): the median holds.
        for k in 0..4 {
            pairs(
                &mut d,
                30.0 + 2.0 * f64::from(k),
                0.1,
                1_000,
                0.0056,
                &mut seq,
            );
            pairs(
                &mut d,
                30.5 + 2.0 * f64::from(k),
                0.1,
                100,
                0.0012,
                &mut seq,
            );
        }
        pairs(&mut d, 38.0, 2.5, 1_000, 0.0056, &mut seq);
        let t = d.time_of(1400).unwrap();
        assert!((t - 0.0056).abs() < 1e-9, "{t}");
    }
}
