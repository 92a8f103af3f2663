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
        let fr: Vec<&Frame> = self
            .frames
            .iter()
            .filter(|f| from <= f.generated_at && f.generated_at < to)
            .collect();
        let n = fr.len() as f64;
        let mean = |v: &mut dyn Iterator<Item = f64>| (n > 0.0).then(|| v.sum::<f64>() / n);
        let min_mean = mean(&mut fr.iter().map(|f| f64::from(f.min)));
        let max_mean = mean(&mut fr.iter().map(|f| f64::from(f.max)));
        let cov = min_mean.and_then(|m| {
            let var = fr
                .iter()
                .map(|f| (f64::from(f.min) - m).powi(2))
                .sum::<f64>()
                / n;
            (m > 0.0).then(|| var.sqrt() / m)
        });
        let lat = |retx: bool| {
            let (mut sum, mut count) = (0u128, 0u64);
            for &(g, d, r) in &self.packets {
                if r == retx && from <= g && g < to {
                    sum += u128::from(d.as_nanos());
                    count += 1;
                }
            }
            ((count > 0).then(|| sum as f64 / count as f64 / 1e6), count)
        };
        let (first, _) = lat(false);
        let (retx, retx_packets) = lat(true);
        LayeredFigures {
            frames: fr.len() as u64,
            layers_min_mean: min_mean,
            layers_max_mean: max_mean,
            layers_cov: cov,
            latency_ms_first: first,
            latency_ms_retx: retx,
            retx_packets,
        }
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
