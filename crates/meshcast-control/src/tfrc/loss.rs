//! The loss interval history and the loss event rate (RFC 5348 §5.4–§5.5).
//!
//! A loss interval is the number of packets from the first lost packet of
//! one loss event to the first lost packet of the next. The history keeps
//! the eight most recent closed intervals `I_1..I_8` and the open one `I_0`
//! (from the most recent loss event to the newest packet).

use std::collections::VecDeque;

/// Weights of the eight most recent intervals, RFC 5348 §5.4.
pub const WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// How many closed intervals the history keeps.
pub const N_INTERVALS: usize = WEIGHTS.len();

/// A closed loss interval and its discount factor `DF_i` (§5.5).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Interval {
    /// Length in packets.
    pub len: f64,
    /// Accumulated history discount, in (0, 1].
    pub df: f64,
}

/// The average loss interval `I_mean` for the open interval `i0` and the
/// closed ones `closed` (most recent first, at most [`N_INTERVALS`] used),
/// RFC 5348 §5.4 with the history discounting of §5.5 when `discounting`
/// is set. Returns the current discount factor too (1 when `i0` is not
/// longer than twice the mean of the closed intervals).
///
/// `closed` must not be empty (with no closed interval there is no loss
/// event rate).
pub fn mean_interval(i0: f64, closed: &[Interval], discounting: bool) -> (f64, f64) {
    let n = closed.len().min(N_INTERVALS);
    debug_assert!(n > 0, "no closed interval");
    // I_tot1 / W_tot1: the closed history alone.
    let (mut tot1, mut w1) = (0.0, 0.0);
    for (i, iv) in closed[..n].iter().enumerate() {
        tot1 += iv.len * WEIGHTS[i] * iv.df;
        w1 += WEIGHTS[i] * iv.df;
    }
    let hist_mean = tot1 / w1;
    let df = if discounting && i0 > 2.0 * hist_mean {
        (2.0 * hist_mean / i0).max(0.5)
    } else {
        1.0
    };
    // I_tot0 / W_tot0: the open interval and the n-1 most recent closed
    // ones, the closed ones discounted by DF.
    let (mut tot0, mut w0) = (i0 * WEIGHTS[0], WEIGHTS[0]);
    for (i, iv) in closed[..n - 1].iter().enumerate() {
        tot0 += iv.len * WEIGHTS[i + 1] * iv.df * df;
        w0 += WEIGHTS[i + 1] * iv.df * df;
    }
    ((tot0 / w0).max(hist_mean), df)
}

/// The history of loss intervals.
#[derive(Clone, Debug)]
pub struct LossHistory {
    closed: VecDeque<Interval>,
    /// Sequence number of the first lost packet of the most recent loss
    /// event (start of `I_0`).
    open_start: Option<u64>,
    discounting: bool,
}

impl LossHistory {
    /// An empty history; `discounting` turns on §5.5.
    pub fn new(discounting: bool) -> LossHistory {
        LossHistory {
            closed: VecDeque::with_capacity(N_INTERVALS + 1),
            open_start: None,
            discounting,
        }
    }

    /// Whether any loss event (or synthetic first interval) is recorded.
    pub fn is_empty(&self) -> bool {
        self.open_start.is_none()
    }

    /// Where the open interval starts.
    pub fn open_start(&self) -> Option<u64> {
        self.open_start
    }

    /// The closed intervals, most recent first.
    pub fn closed(&self) -> impl Iterator<Item = &Interval> {
        self.closed.iter()
    }

    /// Seed an empty history (RFC 5348 §6.3.1): the first loss event at
    /// `seq` closes a synthetic interval of `len` packets, the one that
    /// would give the receive rate seen before the loss.
    pub fn seed(&mut self, seq: u64, len: f64) {
        debug_assert!(self.is_empty());
        self.closed.push_front(Interval {
            len: len.max(1.0),
            df: 1.0,
        });
        self.open_start = Some(seq);
    }

    /// A new loss event starts at `seq` while the newest packet seen is
    /// `highest`: the open interval closes and becomes `I_1` (§5.3); the
    /// discount in force is folded into the older intervals (§5.5) so an
    /// interval once discounted stays discounted.
    pub fn new_event(&mut self, seq: u64, highest: u64) {
        let Some(start) = self.open_start else {
            return;
        };
        let len = seq.saturating_sub(start).max(1) as f64;
        if self.discounting {
            let (_, df) =
                mean_interval(self.open_len(highest), self.closed.make_contiguous(), true);
            for iv in &mut self.closed {
                iv.df *= df;
            }
        }
        self.closed.push_front(Interval { len, df: 1.0 });
        self.closed.truncate(N_INTERVALS);
        self.open_start = Some(seq);
    }

    /// Length of the open interval when `highest` is the newest packet.
    pub fn open_len(&self, highest: u64) -> f64 {
        self.open_start
            .map_or(0.0, |s| (highest.saturating_sub(s) + 1) as f64)
    }

    /// The loss event rate `p = 1 / I_mean` (§5.4), zero while the history
    /// is empty.
    pub fn loss_event_rate(&mut self, highest: u64) -> f64 {
        if self.closed.is_empty() {
            return 0.0;
        }
        let i0 = self.open_len(highest);
        let (mean, _) = mean_interval(i0, self.closed.make_contiguous(), self.discounting);
        1.0 / mean.max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(lens: &[f64]) -> Vec<Interval> {
        lens.iter().map(|&len| Interval { len, df: 1.0 }).collect()
    }

    #[test]
    fn rfc_vectors() {
        // Eight intervals of 100: p = 0.01 (../shared/EVIDENCE.md).
        let h = flat(&[100.0; 8]);
        assert_eq!(mean_interval(1.0, &h, false).0, 100.0);
        assert_eq!(mean_interval(1.0, &h, true).0, 100.0);
        // An open interval of 400 with seven of 100 in I_tot0: p = 1/150.
        assert!((mean_interval(400.0, &h, false).0 - 150.0).abs() < 1e-9);
        // With discounting the old intervals count half: DF = max(0.5,
        // 200/400) = 0.5, (400 + 0.5·500) / (1 + 0.5·5).
        let (m, df) = mean_interval(400.0, &h, true);
        assert_eq!(df, 0.5);
        assert!((m - 650.0 / 3.5).abs() < 1e-9);
    }

    #[test]
    fn fewer_than_eight_intervals() {
        // k = 2: I_tot1 = (100 + 50) / 2; I_tot0 = (30 + 100) / 2.
        let h = flat(&[100.0, 50.0]);
        assert_eq!(mean_interval(30.0, &h, false).0, 75.0);
        assert_eq!(mean_interval(130.0, &h, false).0, 115.0);
    }

    #[test]
    fn history_shifts_and_discounts() {
        let mut h = LossHistory::new(true);
        assert_eq!(h.loss_event_rate(10), 0.0);
        h.seed(0, 100.0);
        // Open interval 0..=49: p = 1/100.
        assert!((h.loss_event_rate(49) - 0.01).abs() < 1e-12);
        // Event at 1000 with the newest packet 1000: I_0 = 1001 > 2·100,
        // DF = 0.5 folds into the synthetic interval.
        h.new_event(1000, 1000);
        let c: Vec<_> = h.closed().copied().collect();
        assert_eq!(
            c[0],
            Interval {
                len: 1000.0,
                df: 1.0
            }
        );
        assert_eq!(
            c[1],
            Interval {
                len: 100.0,
                df: 0.5
            }
        );
        for i in 0..20 {
            h.new_event(2000 + 100 * i, 2000 + 100 * i);
        }
        assert_eq!(h.closed().count(), N_INTERVALS);
    }
}
