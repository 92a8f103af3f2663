//! Per-frame figures of layered streams (MSB): what the receiver presented
//! and how late its packets were.
//!
//! Drivers feed a [`LayeredRecord`] (one per flow, inside
//! [`crate::metrics::FlowRecord`]) with [`crate::Event::FramePresented`] and
//! [`crate::Event::MediaReceived`]. Both are bucketed by the frame's
//! *generation* time, so a window holds the frames generated in it.
//!
//! Definitions (docs/report-format.md repeats them):
//!
//! - `layers_min_mean`: mean over the window's frames of the layers
//!   received consecutively from the base layer by the deadline;
//!   `layers_max_mean`: mean of the highest layer received;
//!   `layers_cov`: standard deviation / mean of the minimum layers.
//! - `latency_ms_first` / `latency_ms_retx`: mean time from generation to
//!   arrival of the packets that arrived in time without / with a
//!   retransmission on some hop.
//! - `frames_to_halve(t)`: with `M` the mean top layer of the frames
//!   generated in the 10 s before `t`, the position (1 = the first) among
//!   the frames generated from `t` on of the first whose top layer is at
//!   most `M / 2`. `frames_to_recover(t, L)`: the position of the first
//!   frame from `t` on whose minimum layer reaches `L`, the stream's full
//!   layer count.

use crate::time::{Duration, Time};

/// One presented frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Generation time.
    pub generated_at: Time,
    /// Minimum (consecutive) layers.
    pub min: u8,
    /// Top layer received.
    pub max: u8,
}

/// A layered stream's frames and packet latencies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayeredRecord {
    frames: Vec<Frame>,
    /// (generation time, latency, retransmitted).
    packets: Vec<(Time, Duration, bool)>,
}

/// Figures of a layered stream over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LayeredFigures {
    /// Frames generated in the window that the receiver presented.
    pub frames: u64,
    /// Mean minimum layers (`None`: no frames).
    pub layers_min_mean: Option<f64>,
    /// Mean top layer.
    pub layers_max_mean: Option<f64>,
    /// Coefficient of variation of the minimum layers.
    pub layers_cov: Option<f64>,
    /// Mean latency of packets delivered by their first transmission, ms.
    pub latency_ms_first: Option<f64>,
    /// Mean latency of packets delivered by a retransmission, ms.
    pub latency_ms_retx: Option<f64>,
    /// Packets delivered by a retransmission.
    pub retx_packets: u64,
}

/// Sums behind [`LayeredFigures`].
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    frames: u64,
    min_sum: u64,
    min_sq_sum: u64,
    max_sum: u64,
    /// Latency sums (ns) and counts: first transmission, retransmission.
    lat: [(u128, u64); 2],
}

impl Acc {
    fn frame(&mut self, f: &Frame) {
        self.frames += 1;
        self.min_sum += u64::from(f.min);
        self.min_sq_sum += u64::from(f.min) * u64::from(f.min);
        self.max_sum += u64::from(f.max);
    }

    fn packet(&mut self, latency: Duration, retransmitted: bool) {
        let l = &mut self.lat[usize::from(retransmitted)];
        l.0 += u128::from(latency.as_nanos());
        l.1 += 1;
    }

    fn figures(&self) -> LayeredFigures {
        let n = self.frames as f64;
        let mean = |sum: u64| (self.frames > 0).then(|| sum as f64 / n);
        let min_mean = mean(self.min_sum);
        let cov = min_mean.filter(|&m| m > 0.0).map(|m| {
            // Population variance from integer sums: exact until the
            // final division.
            let var = (self.min_sq_sum as f64 / n - m * m).max(0.0);
            var.sqrt() / m
        });
        let lat = |(sum, count): (u128, u64)| (count > 0).then(|| sum as f64 / count as f64 / 1e6);
        LayeredFigures {
            frames: self.frames,
            layers_min_mean: min_mean,
            layers_max_mean: mean(self.max_sum),
            layers_cov: cov,
            latency_ms_first: lat(self.lat[0]),
            latency_ms_retx: lat(self.lat[1]),
            retx_packets: self.lat[1].1,
        }
    }
}

impl LayeredRecord {
    /// Whether anything was recorded.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty() && self.packets.is_empty()
    }

    /// A frame was presented.
    pub fn frame(&mut self, f: Frame) {
        self.frames.push(f);
    }

    /// A packet generated at `generated_at` arrived at `now`.
    pub fn packet(&mut self, now: Time, generated_at: Time, retransmitted: bool) {
        self.packets.push((
            generated_at,
            now.saturating_since(generated_at),
            retransmitted,
        ));
    }

    /// Every presented frame, in presentation order.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Figures over frames generated in `[from, to)`.
    pub fn figures(&self, from: Time, to: Time) -> LayeredFigures {
        let mut acc = Acc::default();
        let inside = |t: Time| from <= t && t < to;
        for f in self.frames.iter().filter(|f| inside(f.generated_at)) {
            acc.frame(f);
        }
        for &(_, d, r) in self.packets.iter().filter(|p| inside(p.0)) {
            acc.packet(d, r);
        }
        acc.figures()
    }

    /// Figures of every whole second `[s, s + 1)` for `s` in `0..secs`, in
    /// one pass (the same as [`LayeredRecord::figures`] of each second).
    pub fn per_second(&self, secs: u64) -> Vec<LayeredFigures> {
        let mut acc = vec![Acc::default(); usize::try_from(secs).unwrap_or(usize::MAX)];
        let second = |t: Time| usize::try_from(t.as_nanos() / 1_000_000_000).ok();
        for f in &self.frames {
            if let Some(a) = second(f.generated_at).and_then(|s| acc.get_mut(s)) {
                a.frame(f);
            }
        }
        for &(g, d, r) in &self.packets {
            if let Some(a) = second(g).and_then(|s| acc.get_mut(s)) {
                a.packet(d, r);
            }
        }
        acc.iter().map(Acc::figures).collect()
    }

    fn after(&self, t: Time) -> impl Iterator<Item = (usize, &Frame)> {
        self.frames
            .iter()
            .filter(move |f| f.generated_at >= t)
            .enumerate()
            .map(|(i, f)| (i + 1, f))
    }

    /// See the module docs; `None` if no frame before `t` or none halves.
    pub fn frames_to_halve(&self, t: Time) -> Option<u64> {
        let from = Time::from_nanos(t.as_nanos().saturating_sub(10_000_000_000));
        let m = self.figures(from, t).layers_max_mean?;
        self.after(t)
            .find(|(_, f)| f64::from(f.max) <= m / 2.0)
            .map(|(i, _)| i as u64)
    }

    /// See the module docs; `None` if no frame from `t` on reaches `full`.
    pub fn frames_to_recover(&self, t: Time, full: u8) -> Option<u64> {
        self.after(t)
            .find(|(_, f)| f.min >= full)
            .map(|(i, _)| i as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(layers: &[(u8, u8)]) -> LayeredRecord {
        let mut r = LayeredRecord::default();
        for (i, &(min, max)) in layers.iter().enumerate() {
            r.frame(Frame {
                generated_at: Time::from_millis(100 * i as u64),
                min,
                max,
            });
        }
        r
    }

    #[test]
    fn window_figures() {
        let mut r = rec(&[(2, 4), (4, 4), (6, 8)]);
        r.packet(Time::from_millis(150), Time::from_millis(0), false);
        r.packet(Time::from_millis(350), Time::from_millis(100), true);
        let f = r.figures(Time::ZERO, Time::from_secs(1));
        assert_eq!(f.frames, 3);
        assert_eq!(f.layers_min_mean, Some(4.0));
        assert!((f.layers_max_mean.unwrap() - 16.0 / 3.0).abs() < 1e-12);
        let sd = (8.0f64 / 3.0).sqrt();
        assert!((f.layers_cov.unwrap() - sd / 4.0).abs() < 1e-12);
        assert_eq!(f.latency_ms_first, Some(150.0));
        assert_eq!(f.latency_ms_retx, Some(250.0));
        assert_eq!(f.retx_packets, 1);
        let none = r.figures(Time::from_secs(5), Time::from_secs(6));
        assert_eq!(none.frames, 0);
        assert_eq!(none.layers_min_mean, None);
    }

    #[test]
    fn per_second_matches_the_window_figures() {
        let layers: Vec<(u8, u8)> = (0..35).map(|i| ((i * 7 % 17) as u8, 16)).collect();
        let mut r = rec(&layers);
        for i in 0..35u64 {
            let g = Time::from_millis(100 * i);
            r.packet(g + Duration::from_millis(150 + i), g, i % 4 == 0);
        }
        let per = r.per_second(5);
        assert_eq!(per.len(), 5);
        for (s, p) in per.iter().enumerate() {
            let w = r.figures(Time::from_secs(s as u64), Time::from_secs(s as u64 + 1));
            assert_eq!(p.frames, w.frames, "second {s}");
            assert_eq!(p.retx_packets, w.retx_packets);
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                (a, b) => a == b,
            };
            assert!(close(p.layers_min_mean, w.layers_min_mean));
            assert!(close(p.layers_cov, w.layers_cov));
            assert!(close(p.latency_ms_retx, w.latency_ms_retx));
        }
        assert_eq!(per[4].frames, 0);
    }

    #[test]
    fn transitions() {
        // Top layer 12 before 0.5 s, then 10, 8, 6 (halved at the third),
        // minimum 16 at the fifth.
        let r = rec(&[
            (12, 12),
            (12, 12),
            (12, 12),
            (12, 12),
            (12, 12),
            (4, 10),
            (4, 8),
            (3, 6),
            (10, 14),
            (16, 16),
        ]);
        let t = Time::from_millis(500);
        assert_eq!(r.frames_to_halve(t), Some(3));
        assert_eq!(r.frames_to_recover(t, 16), Some(5));
        assert_eq!(r.frames_to_recover(t, 17), None);
        assert_eq!(r.frames_to_halve(Time::ZERO), None);
    }
}
