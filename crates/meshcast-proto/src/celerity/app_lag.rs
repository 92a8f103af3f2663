//! How late a source's application follows the rate it is offered.
//!
//! A real encoder reaches a new bitrate some frames after it is set: x264
//! 0.4–0.9 s at its default 600-ms VBV buffer, 0.15–0.3 s at 150 ms
//! (`tools/x264_lag.py`). The overlay's link rate control sees the
//! encoder's traffic, not the offer, and a lag of 300 ms or more costs a
//! conference a good part of its rate (docs/celerity.md, "An encoder that
//! lags"). [`AppLag`] measures it at the source: once a second it fits
//! the rate the application handed over in the last [`WINDOW_BINS`] bins
//! of [`BIN`] (each the mean of [`SMOOTH_BINS`]) as a multiple of the rate
//! it was offered some time before, for every delay up to
//! [`MAX_LAG_BINS`], and takes the delay whose fit leaves the least. A fit
//! counts only when the offer moved enough to tell (by [`MIN_SWING`] of
//! its mean), the application followed it (handed over [`TRACKING`] of
//! what it was offered over the window, not less, as an encoder whose
//! content needs less does) and the fit explains [`MIN_EXPLAINED`] of what
//! it handed over; bins where it handed over outside [`FOLLOWING`] of
//! every offer looked at are left out. The estimate is the median of the
//! last [`FITS_KEPT`] fits that counted.
//!
//! The estimate is a diagnosis (a node reports it, docs/node.md): nothing
//! in the loop acts on it yet. Within about 150 ms: on the dumbbell with
//! simulated encoders that lag 150, 300 and 600 ms the sessions read
//! 136–260, 341–463 and 575–739 ms.

use meshcast_core::{Duration, Time};
use std::collections::VecDeque;

/// The bins the rates are compared in.
pub const BIN: Duration = Duration::from_millis(100);

/// Bins compared: the last twelve seconds.
pub const WINDOW_BINS: usize = 120;

/// Bins of history before a first estimate: six seconds.
pub const MIN_BINS: usize = 60;

/// Each rate is the mean over this many bins (half a second), which
/// spreads a keyframe and the frames' own spacing.
pub const SMOOTH_BINS: usize = 5;

/// The longest lag looked for, in bins: a second and a half.
pub const MAX_LAG_BINS: usize = 15;

/// The offer's least swing (its smoothed maximum less its minimum over
/// the window, against its mean) from which a fit can tell one lag from
/// another.
pub const MIN_SWING: f64 = 0.1;

/// The share of what it was offered an application must hand over over
/// the window, at least and at most, to count as following the offer.
pub const TRACKING: (f64, f64) = (0.7, 1.3);

/// One [`BIN`]'s bytes handed over and its offered bytes (the offered
/// rate integrated over the bin).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bin {
    handed: f64,
    offered: f64,
}

/// See the module's documentation.
#[derive(Clone, Debug)]
pub struct AppLag {
    /// Closed bins, oldest first, at most [`WINDOW_BINS`].
    bins: VecDeque<Bin>,
    /// The open bin, its start, and since when the offer has been
    /// integrated into it.
    open: Bin,
    open_from: Option<Time>,
    offered_to: Time,
    /// The rate offered now, bytes/s.
    rate: f64,
    /// Bins closed since the last fit.
    since_fit: usize,
    /// The last [`FITS_KEPT`] fits that could tell, oldest first.
    fits: VecDeque<Duration>,
}

/// How many of the latest fits (one a second) the estimate is the median
/// of: a real encoder's fits scatter (x264 at a 600-ms VBV buffer: 0.1–0.7
/// s over a run, most of them 0.3–0.5), and its lag changes slowly.
pub const FITS_KEPT: usize = 30;

impl Default for AppLag {
    fn default() -> Self {
        AppLag::new()
    }
}

impl AppLag {
    /// An estimator that has seen nothing.
    pub fn new() -> AppLag {
        AppLag {
            bins: VecDeque::new(),
            open: Bin::default(),
            open_from: None,
            offered_to: Time::ZERO,
            rate: 0.0,
            since_fit: 0,
            fits: VecDeque::new(),
        }
    }

    /// The offered rate is `bits_per_second` from `now` on.
    pub fn offer(&mut self, now: Time, bits_per_second: f64) {
        self.advance(now);
        self.rate = bits_per_second.max(0.0) / 8.0;
    }

    /// The application handed over `bytes` at `now`.
    pub fn handed(&mut self, now: Time, bytes: usize) {
        self.advance(now);
        self.open.handed += bytes as f64;
    }

    /// The lag measured: the median of the latest fits that could tell
    /// (at most [`FITS_KEPT`], one a second); `None` before any could.
    pub fn estimate(&self) -> Option<Duration> {
        let mut fits: Vec<Duration> = self.fits.iter().copied().collect();
        fits.sort();
        fits.get(fits.len() / 2).copied()
    }

    /// Integrate the offer up to `now`, closing the bins that ended, and
    /// fit once a second.
    fn advance(&mut self, now: Time) {
        let Some(mut from) = self.open_from else {
            self.open_from = Some(now);
            self.offered_to = now;
            return;
        };
        while now.saturating_since(from) >= BIN {
            let end = from + BIN;
            self.open.offered += self.rate * end.saturating_since(self.offered_to).as_secs_f64();
            self.offered_to = end;
            self.bins.push_back(std::mem::take(&mut self.open));
            if self.bins.len() > WINDOW_BINS {
                self.bins.pop_front();
            }
            self.since_fit += 1;
            from = end;
        }
        self.open_from = Some(from);
        self.open.offered += self.rate * now.saturating_since(self.offered_to).as_secs_f64();
        self.offered_to = now;
        if self.since_fit >= 10 && self.bins.len() >= MIN_BINS {
            self.since_fit = 0;
            if let Some(lag) = self.fit() {
                self.fits.push_back(lag);
                if self.fits.len() > FITS_KEPT {
                    self.fits.pop_front();
                }
            }
        }
    }

    /// The lag that best fits the window, if the window can tell.
    fn fit(&self) -> Option<Duration> {
        let smooth = |f: fn(&Bin) -> f64| -> Vec<f64> {
            let v: Vec<f64> = self.bins.iter().map(f).collect();
            v.windows(SMOOTH_BINS)
                .map(|w| w.iter().sum::<f64>() / SMOOTH_BINS as f64)
                .collect()
        };
        let handed = smooth(|b| b.handed);
        let offered = smooth(|b| b.offered);
        let n = offered.len();
        let mean = offered.iter().sum::<f64>() / n as f64;
        if mean <= 0.0 || n <= MAX_LAG_BINS + 1 {
            return None;
        }
        let share = handed.iter().sum::<f64>() / n as f64 / mean;
        let (lo, hi) = offered
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), &o| {
                (lo.min(o), hi.max(o))
            });
        if !(TRACKING.0..=TRACKING.1).contains(&share) || (hi - lo) / mean < MIN_SWING {
            return None;
        }
        // Every lag is compared over the same bins: those with an offer
        // the longest lag before them. Each fits what was handed over as a
        // multiple of what was offered that lag before, the multiple its
        // own (least squares): an encoder's frames between keyframes hand
        // over a little less than the offer, and its keyframes more, so a
        // distance without the multiple reads that as a lag; a correlation
        // cannot tell the lags of a steady climb apart. The lag is the one
        // whose fit leaves the least (between bins, at the bottom of the
        // parabola through the least and its neighbours).
        //
        // Bins where the application handed over more than twice, or less
        // than half, of what it was offered at every lag looked at are left
        // out of every fit: an encoder at its floor (x264 cannot make noise
        // smaller than about 100 kbit/s at 320x240) or ceiling follows no
        // offer there, and its excess reads as a long lag.
        let kept: Vec<usize> = (MAX_LAG_BINS..n)
            .filter(|&i| {
                (0..=MAX_LAG_BINS).any(|lag| {
                    let o = offered[i - lag];
                    o > 0.0 && (FOLLOWING.0..=FOLLOWING.1).contains(&(handed[i] / o))
                })
            })
            .collect();
        if kept.len() < MIN_BINS / 2 {
            return None;
        }
        let tail: Vec<f64> = kept.iter().map(|&i| handed[i]).collect();
        let spread = {
            let m = tail.iter().sum::<f64>() / tail.len() as f64;
            tail.iter().map(|h| (h - m) * (h - m)).sum::<f64>()
        };
        let left: Vec<f64> = (0..=MAX_LAG_BINS)
            .map(|lag| {
                let then: Vec<f64> = kept.iter().map(|&i| offered[i - lag]).collect();
                residual(&tail, &then)
            })
            .collect();
        let (best, &least) = left
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .expect("lags to fit");
        if spread <= 0.0 || 1.0 - least / spread < MIN_EXPLAINED {
            return None;
        }
        let shift = match (best.checked_sub(1).map(|b| left[b]), left.get(best + 1)) {
            (Some(before), Some(&after)) => {
                let curve = before - 2.0 * least + after;
                if curve > 0.0 {
                    (0.5 * (before - after) / curve).clamp(-0.5, 0.5)
                } else {
                    0.0
                }
            }
            _ => 0.0,
        };
        let bins = (best as f64 + shift).max(0.0);
        Some(Duration::from_secs_f64(bins * BIN.as_secs_f64()))
    }
}

/// What an application hands over in a bin against what it was offered,
/// at the least and the most, where it can be following the offer.
pub const FOLLOWING: (f64, f64) = (0.5, 2.0);

/// The least share of the variation in what the application handed over
/// over the window that the best lag's fit must explain for an estimate:
/// below it the application does not follow the offer closely enough to
/// say.
pub const MIN_EXPLAINED: f64 = 0.5;

/// What is left of `handed` once fitted as a multiple of `offered` (least
/// squares): the sum of squared differences.
fn residual(handed: &[f64], offered: &[f64]) -> f64 {
    let (ho, oo, hh) = handed
        .iter()
        .zip(offered)
        .fold((0.0, 0.0, 0.0), |(ho, oo, hh), (h, o)| {
            (ho + h * o, oo + o * o, hh + h * h)
        });
    if oo <= 0.0 { hh } else { hh - ho * ho / oo }
}

/// Rates at times, oldest first, kept as far back as a lookup of `keep`
/// ago needs: the latest at least `keep` old and everything since. The
/// source's lead keeps its packings' rates in one
/// ([`CelerityParams::app_lead`](super::CelerityParams::app_lead)), and
/// the simulator's lagging encoder the rates it was offered.
#[derive(Clone, Debug, Default)]
pub struct RateHistory {
    keep: Duration,
    rates: VecDeque<(Time, f64)>,
}

impl RateHistory {
    /// An empty history that keeps what a lookup of `keep` ago needs.
    pub fn new(keep: Duration) -> RateHistory {
        RateHistory {
            keep,
            rates: VecDeque::new(),
        }
    }

    /// Note `rate` at `now` (times come in order), and forget what no
    /// lookup of `keep` ago needs any more.
    pub fn push(&mut self, now: Time, rate: f64) {
        self.rates.push_back((now, rate));
        while self
            .rates
            .get(1)
            .is_some_and(|&(t, _)| now.saturating_since(t) >= self.keep)
        {
            self.rates.pop_front();
        }
    }

    /// The latest rate noted.
    pub fn latest(&self) -> Option<f64> {
        self.rates.back().map(|&(_, r)| r)
    }

    /// The latest rate noted at least `ago` before `now`, or the oldest
    /// kept where none is so old; `None` while empty.
    pub fn before(&self, now: Time, ago: Duration) -> Option<f64> {
        self.rates
            .iter()
            .rev()
            .find(|&&(t, _)| now.saturating_since(t) >= ago)
            .or(self.rates.front())
            .map(|&(_, r)| r)
    }

    /// How many rates are kept.
    pub fn len(&self) -> usize {
        self.rates.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.rates.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An application at 30 frames a second, a keyframe of four frames'
    /// size every 2 s, each frame sized at what `rate(t)` offered `lag`
    /// before, times `share`; the offer `rate(t)` (bit/s), fed every 50 ms.
    /// The estimates after each second from 6 s to `secs`.
    fn run(lag_ms: u64, share: f64, secs: u64, rate: impl Fn(f64) -> f64) -> Vec<Option<u64>> {
        let mut est = AppLag::new();
        let mut out = Vec::new();
        let mut next_frame = 0u64;
        let mut k = 0u64;
        for ms in (0..secs * 1000).step_by(10) {
            let now = Time::from_millis(ms);
            if ms % 50 == 0 {
                est.offer(now, rate(ms as f64 / 1e3));
            }
            if ms >= next_frame {
                let then = (ms as f64 - lag_ms as f64).max(0.0) / 1e3;
                let per_frame = rate(then) / 8.0 / 30.0 * share;
                let bytes = if k % 60 == 0 { 4.0 } else { 56.0 / 59.0 } * per_frame;
                est.handed(now, bytes as usize);
                k += 1;
                next_frame = (k * 1000) / 30;
            }
            if ms % 1000 == 0 && ms >= 6000 {
                out.push(est.estimate().map(|d| d.as_millis_f64() as u64));
            }
        }
        out
    }

    /// An offer that climbs for 3 s and falls for 2, between 200 and 300
    /// kbit/s, as the loop's cycles do.
    fn cycling(t: f64) -> f64 {
        let p = t % 5.0;
        if p < 3.0 {
            200e3 + 100e3 * p / 3.0
        } else {
            300e3 - 100e3 * (p - 3.0) / 2.0
        }
    }

    #[test]
    fn it_finds_the_lag_of_an_application_that_follows_the_offer() {
        for lag in [0, 300, 600, 900] {
            let got = run(lag, 1.0, 20, cycling);
            let last = got.last().copied().flatten();
            assert!(
                last.is_some_and(|l| l.abs_diff(lag) <= 100),
                "lag {lag}: {got:?}"
            );
        }
    }

    #[test]
    fn it_says_nothing_where_it_cannot_tell() {
        // An offer that does not move.
        assert!(run(400, 1.0, 20, |_| 250e3).iter().all(Option::is_none));
        // An application whose content needs less than it is offered.
        assert!(run(400, 0.3, 20, cycling).iter().all(Option::is_none));
        // Before six seconds of history, nothing at all.
        let mut est = AppLag::new();
        est.offer(Time::ZERO, 100e3);
        est.handed(Time::from_millis(5000), 1000);
        assert_eq!(est.estimate(), None);
    }

    #[test]
    fn it_keeps_its_last_answer_while_the_offer_holds() {
        let got = run(500, 1.0, 40, |t| if t < 20.0 { cycling(t) } else { 250e3 });
        assert!(got[10].is_some_and(|l| l.abs_diff(500) <= 100), "{got:?}");
        assert_eq!(got.last(), got.get(got.len() - 5), "{got:?}");
    }
}
