//! Per-frame figures of video carried by a session: how many of the frames
//! an application's encoder handed over arrived whole at each receiver,
//! and how many of those a decoder could show.
//!
//! Goodput counts bytes; a viewer sees frames. A keyframe whose last unit
//! went stale at the source counts 90% of its bytes as received, yet no
//! decoder can show it or, without concealment, any frame after it until
//! the next keyframe. Drivers feed a [`VideoRecord`] (one per flow, inside
//! [`crate::metrics::FlowRecord`]) with [`crate::Event::FrameHanded`] from
//! the source's application and [`crate::Event::FrameUnitReceived`] from
//! each receiver's. Frames are counted by their *generation* time (when
//! the encoder handed them over), so a window holds the frames generated
//! in it, whenever their units arrived.
//!
//! Definitions (docs/report-format.md repeats them):
//!
//! - `frames`: frames the source handed over in the window;
//! - `whole_min`: for each receiver, the fraction of them of which every
//!   unit reached its application (a receiver's peer hands up only units
//!   that arrived within the delay bound); the lowest over the receivers;
//! - `decodable_min`: the same for frames that are whole and whose
//!   references are: a keyframe that is whole, or a whole frame after a
//!   decodable one (every frame between keyframes predicts from the one
//!   before it, as a decoder without concealment or reference selection
//!   has it). Frames still in flight at the end of the run count as not
//!   whole.

use crate::time::Time;

/// A frame as its source handed it over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handed {
    generated_at: Time,
    units: u32,
    key: bool,
}

/// A session's video frames: what its source handed over and what each
/// receiver got of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VideoRecord {
    /// Indexed by frame number (in the source's order; numbers never
    /// handed over hold frames of no units).
    frames: Vec<Handed>,
    /// Per receiver (in the flow's receiver order), per frame number: the
    /// units that arrived.
    got: Vec<Vec<u32>>,
}

/// Frame figures of a session's video over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct VideoFigures {
    /// Frames the source handed over in the window.
    pub frames: u64,
    /// The lowest over the receivers of the fraction of those that
    /// arrived whole (`None`: no frames).
    pub whole_min: Option<f64>,
    /// The lowest over the receivers of the fraction of those a decoder
    /// could show (`None`: no frames).
    pub decodable_min: Option<f64>,
}

impl VideoRecord {
    /// Whether any frame was handed over (a session without video has
    /// none, and reports no frame figures).
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The source handed over frame `frame` (numbered upwards in the
    /// order handed over) at `now` in `units` units; `key`: a keyframe.
    /// Frame numbers that skip ahead (a source that left and joined again
    /// goes on from higher numbers) leave frames of no units, which count
    /// as neither whole nor missing: they were never handed over. Returns
    /// false (and records nothing) for a number already recorded.
    pub fn handed(&mut self, frame: u64, now: Time, units: u32, key: bool) -> bool {
        let Ok(i) = usize::try_from(frame) else {
            return false;
        };
        if i < self.frames.len() && self.frames[i].units > 0 {
            return false;
        }
        if self.frames.len() <= i {
            self.frames.resize(
                i + 1,
                Handed {
                    generated_at: now,
                    units: 0,
                    key: false,
                },
            );
        }
        self.frames[i] = Handed {
            generated_at: now,
            units,
            key,
        };
        true
    }

    /// Receiver `r` (its index among the flow's receivers) got a unit of
    /// frame `frame`.
    pub fn unit_received(&mut self, r: usize, frame: u64) {
        let Ok(i) = usize::try_from(frame) else {
            return;
        };
        if self.got.len() <= r {
            self.got.resize_with(r + 1, Vec::new);
        }
        let got = &mut self.got[r];
        if got.len() <= i {
            got.resize(i + 1, 0);
        }
        got[i] = got[i].saturating_add(1);
    }

    /// Figures over the frames generated in `[from, to)`, for the
    /// receivers `counted` (indices among the flow's receivers).
    pub fn figures(&self, from: Time, to: Time, counted: &[usize]) -> VideoFigures {
        let first = self.frames.partition_point(|f| f.generated_at < from);
        let end = self.frames.partition_point(|f| f.generated_at < to);
        let handed = |i: usize| self.frames[i].units > 0;
        let frames = (first..end).filter(|&i| handed(i)).count() as u64;
        if frames == 0 {
            return VideoFigures::default();
        }
        // Decodability runs from the last keyframe at or before the
        // window's first frame.
        let start = (0..first.min(self.frames.len()))
            .rev()
            .find(|&i| handed(i) && self.frames[i].key)
            .unwrap_or(first);
        let (mut whole_min, mut decodable_min) = (f64::INFINITY, f64::INFINITY);
        for &r in counted {
            let got = self.got.get(r).map_or(&[][..], Vec::as_slice);
            let whole_at = |i: usize| got.get(i).copied().unwrap_or(0) >= self.frames[i].units;
            let (mut whole, mut decodable) = (0u64, 0u64);
            let mut chain = false;
            for i in start..end {
                if !handed(i) {
                    continue;
                }
                let w = whole_at(i);
                chain = w && (self.frames[i].key || chain);
                if i >= first {
                    whole += u64::from(w);
                    decodable += u64::from(chain);
                }
            }
            whole_min = whole_min.min(whole as f64 / frames as f64);
            decodable_min = decodable_min.min(decodable as f64 / frames as f64);
        }
        let some = |v: f64| v.is_finite().then_some(v);
        VideoFigures {
            frames,
            whole_min: some(whole_min),
            decodable_min: some(decodable_min),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    /// Ten frames 100 ms apart, a keyframe every five, two units each;
    /// receiver 0 gets all, receiver 1 misses a unit of frame 2 and all
    /// of frame 6.
    fn record() -> VideoRecord {
        let mut v = VideoRecord::default();
        for k in 0..10u64 {
            assert!(v.handed(k, at(k * 100), 2, k % 5 == 0));
            for r in 0..2 {
                let units = match (r, k) {
                    (1, 2) => 1,
                    (1, 6) => 0,
                    _ => 2,
                };
                for _ in 0..units {
                    v.unit_received(r, k);
                }
            }
        }
        v
    }

    #[test]
    fn a_frame_short_of_a_unit_breaks_the_chain_until_the_next_keyframe() {
        let v = record();
        let all = v.figures(at(0), at(1000), &[0, 1]);
        assert_eq!(all.frames, 10);
        // Receiver 1: 8 of 10 whole; decodable 0, 1 then 5 only.
        assert_eq!(all.whole_min, Some(0.8));
        assert_eq!(all.decodable_min, Some(0.3));
        assert_eq!(
            v.figures(at(0), at(1000), &[0]),
            VideoFigures {
                frames: 10,
                whole_min: Some(1.0),
                decodable_min: Some(1.0)
            }
        );
        // A window from frame 3: the chain starts at keyframe 0, broken
        // at 2, so 3 and 4 are whole but not decodable.
        let w = v.figures(at(300), at(500), &[1]);
        assert_eq!(
            (w.frames, w.whole_min, w.decodable_min),
            (2, Some(1.0), Some(0.0))
        );
        // From keyframe 5 on: 5 decodable, 6 missing, 7-9 not decodable.
        let w = v.figures(at(500), at(1000), &[1]);
        assert_eq!((w.whole_min, w.decodable_min), (Some(0.8), Some(0.2)));
    }

    #[test]
    fn windows_without_frames_and_numbers_that_skip() {
        let mut v = record();
        assert_eq!(
            v.figures(at(2000), at(3000), &[0, 1]),
            VideoFigures::default()
        );
        // A frame number handed twice is refused; one that skips leaves
        // frames that were never handed over, which count for nothing.
        assert!(!v.handed(3, at(300), 2, false));
        assert!(v.handed(12, at(1200), 1, false));
        v.unit_received(0, 12);
        let w = v.figures(at(1000), at(1300), &[0, 1]);
        assert_eq!(w.frames, 1);
        // Receiver 1 got nothing of it; receiver 0 got it whole, and its
        // chain from keyframe 5 holds across the numbers never handed.
        assert_eq!((w.whole_min, w.decodable_min), (Some(0.0), Some(0.0)));
        assert_eq!(v.figures(at(1000), at(1300), &[0]).decodable_min, Some(1.0));
    }
}
