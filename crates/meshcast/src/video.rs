//! A simulated video encoder as a participant's application
//! (`conference.video_fps`): frames at a fixed rate, a keyframe every
//! `keyframe_interval_s` several times the size of the frames between,
//! each frame's bytes sized from the rate the overlay offers at that
//! moment and handed to the peer as application media, packetised as an
//! RTP payloader does (full units of the packet size the peer offers,
//! at most `media_bytes`, then the rest; a frame under the smallest unit
//! a peer takes is skipped and its bytes go to the next: "The encoder's
//! floor" in docs/celerity.md). With `keyframe_budget` its
//! keyframes stay within the largest frame the peer offers
//! ([`CelerityPeer::offered_frame_bytes`]; docs/celerity.md, "The frame
//! budget").
//!
//! The built-in source sends packets evenly at the session's rate; real
//! video comes in frames, and a keyframe is a burst several frames long
//! that must still arrive within the delay bound. This is what
//! [`CelerityParams::burst`](meshcast_proto::celerity::CelerityParams::burst)
//! is measured with (docs/celerity.md, "Keyframes").
//!
//! Each unit begins with its frame's number (8 bytes, little-endian; the
//! smallest unit a peer takes is 16), so that the receivers' encoders
//! report which frame each unit they got belongs to
//! ([`Event::FrameUnitReceived`]), as the source's reports each frame it
//! hands over ([`Event::FrameHanded`]): the report's frame figures
//! ([`meshcast_core::video`]) come from them.

use meshcast_core::{Addr, Duration, Endpoint, Event, FlowId, Time, Transmit};
use meshcast_proto::celerity::{CelerityPeer, MEDIA_BYTES};
use std::collections::VecDeque;

/// The encoder's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VideoParams {
    /// Frames per second (> 0).
    pub fps: f64,
    /// Time between keyframes (at least one frame).
    pub keyframe_interval: Duration,
    /// A keyframe's size over a frame between keyframes' (>= 1).
    pub keyframe_ratio: f64,
    /// Whether the encoder keeps its keyframes within the largest frame
    /// the peer offers ([`CelerityPeer::offered_frame_bytes`]), as a real
    /// encoder's VBV buffer or maximum intra size is set from its
    /// transport's feedback: the keyframe's ratio falls as far as that
    /// needs (not under 1), and the frames between take what it gave up.
    pub keyframe_budget: bool,
    /// A rate the encoder holds whatever the peer offers, bits/s
    /// (`conference.video_kbps`): an application that does not follow the
    /// offered rate, as an encoder set to a fixed bitrate. `None` follows
    /// the offered rate ([`CelerityPeer::offered_rate`]).
    pub fixed_bps: Option<f64>,
}

impl VideoParams {
    /// Whether frame `k` is a keyframe.
    pub fn is_key(&self, k: u64) -> bool {
        k % self.gop() == 0
    }

    /// Frames from one keyframe to the next (at least 1).
    fn gop(&self) -> u64 {
        ((self.keyframe_interval.as_secs_f64() * self.fps).round() as u64).max(1)
    }

    /// The bytes of frame `k` (a keyframe when `k` is a multiple of the
    /// keyframe interval) for an offered rate of `bps`: a keyframe interval
    /// carries the rate's bytes over its length, shared out so that a
    /// keyframe is `keyframe_ratio` times each other frame (an encoder's
    /// rate control spends on the frames between what the keyframe took).
    /// With a `budget` (bytes) the ratio is lowered, not under 1, until a
    /// keyframe fits it; the interval still carries the rate's bytes.
    pub fn frame_bytes(&self, k: u64, bps: f64, budget: Option<usize>) -> usize {
        let gop = self.gop();
        let per_gop = bps / 8.0 * gop as f64 / self.fps;
        let frames = gop as f64 - 1.0;
        let mut ratio = self.keyframe_ratio;
        if let Some(b) = budget.map(|b| b as f64) {
            if b < per_gop {
                ratio = ratio.min(b * frames / (per_gop - b)).max(1.0);
            }
        }
        let share = if gop == 1 {
            1.0
        } else if k % gop == 0 {
            ratio / (frames + ratio)
        } else {
            1.0 / (frames + ratio)
        };
        (per_gop * share).round() as usize
    }
}

/// The units a frame of `bytes` goes out in: as many full units of `unit`
/// bytes as fit, then the rest (raised to the smallest unit a peer takes).
pub fn packetise(bytes: usize, unit: usize) -> Vec<usize> {
    let mut out = vec![unit; bytes / unit];
    let rest = bytes % unit;
    if rest > 0 {
        out.push(rest.max(*MEDIA_BYTES.start() as usize));
    }
    out
}

/// The units a frame sized at `bytes` goes out in when the frames the
/// encoder skipped before it left `skipped` bytes unspent: a frame under
/// the smallest unit a peer takes (16 bytes) is skipped and its bytes go
/// to the next frame, which is coded once the bytes come to a unit. A
/// frame of a unit or more goes out as [`packetise`] has it, with what
/// the skipped ones left; where no frame is under a unit, nothing
/// changes. Over any run of frames the units then carry the bytes the
/// frames were sized at, within the raised rests of longer frames.
///
/// Without the skip the encoder handed over at least one smallest unit
/// a frame whatever its rate: 3.84 kbit/s at 30 frames a second. A
/// session whose rate fell under that could never drain its units; they
/// waited at the source until stale or arrived late, and the tails'
/// charges for its late packets held its rate at nothing for the rest of
/// the run (`slow-28` and `slow-10` with x264-like video, a session at 0
/// of its optimum from 40 s on; docs/celerity.md, "The encoder's
/// floor"). An encoder whose target is under a frame's smallest size
/// lowers its frame rate instead, as WebRTC's frame dropper does.
pub fn packetise_skipping(skipped: &mut usize, bytes: usize, unit: usize) -> Vec<usize> {
    let bytes = bytes + *skipped;
    if bytes < *MEDIA_BYTES.start() as usize {
        *skipped = bytes;
        return Vec::new();
    }
    *skipped = 0;
    packetise(bytes, unit)
}

/// The frame number a unit of [`VideoApp`]'s carries (`None` for a unit
/// too short to carry one, which no simulated encoder hands over).
pub fn unit_frame(unit: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(unit.get(..8)?.try_into().ok()?))
}

/// A unit of `len` bytes (at least 8) of frame `frame`.
fn frame_unit(frame: u64, len: usize) -> Vec<u8> {
    let mut unit = vec![0u8; len.max(8)];
    unit[..8].copy_from_slice(&frame.to_le_bytes());
    unit
}

/// A Celerity peer driven by a simulated encoder. Everything the
/// simulator asks of the endpoint goes to the peer; the encoder hands its
/// frames over at their times, and of the media that arrive for it only
/// each unit's frame is reported (the other figures come from the peer's
/// events).
pub struct VideoApp {
    peer: CelerityPeer,
    video: VideoParams,
    next_frame: Time,
    frame: u64,
    closed: bool,
    /// The bytes of the frames skipped since the last one coded
    /// ([`packetise_skipping`]).
    skipped: usize,
    /// Frames handed over so far (the next one's number) and whether a
    /// keyframe was skipped since the last: the next frame coded is then
    /// the keyframe, as an encoder that drops frames keeps its keyframes.
    handed: u64,
    key_pending: bool,
    /// The encoder's own events, reported before the peer's.
    events: VecDeque<Event>,
}

impl VideoApp {
    /// Wrap `peer` (switched to application media, with padding until the
    /// first frame) with an encoder whose first frame, a keyframe, comes
    /// at `start`. Frames go out in packets of what the peer offers
    /// ([`CelerityPeer::offered_packet_bytes`]: at most its
    /// `media_bytes`).
    pub fn new(mut peer: CelerityPeer, video: VideoParams, start: Time) -> VideoApp {
        peer.set_app_media(true, true);
        VideoApp {
            peer,
            video,
            next_frame: start,
            frame: 0,
            closed: false,
            skipped: 0,
            handed: 0,
            key_pending: false,
            events: VecDeque::new(),
        }
    }

    fn frames_due(&mut self, now: Time) {
        let gap = Duration::from_secs_f64(1.0 / self.video.fps);
        while !self.closed && self.next_frame <= now {
            let bps = self
                .video
                .fixed_bps
                .unwrap_or_else(|| self.peer.offered_rate().as_bps() as f64);
            let budget = self
                .video
                .keyframe_budget
                .then(|| self.peer.offered_frame_bytes() as usize);
            let bytes = self.video.frame_bytes(self.frame, bps, budget);
            let unit = self.peer.offered_packet_bytes() as usize;
            let units = packetise_skipping(&mut self.skipped, bytes, unit);
            let key = self.key_pending || self.video.is_key(self.frame);
            if units.is_empty() {
                self.key_pending = key;
            } else {
                self.key_pending = false;
                let frame = self.handed;
                self.handed += 1;
                self.events.push_back(Event::FrameHanded {
                    flow: self.peer.flow(),
                    frame,
                    units: units.len() as u32,
                    key,
                });
                for len in units {
                    self.peer.handle_media(now, &frame_unit(frame, len));
                }
            }
            self.frame += 1;
            self.next_frame += gap;
        }
    }

    /// The simulator has no application to show media: report each
    /// arrived unit's frame.
    fn drain_media(&mut self) {
        while let Some((flow, unit)) = self.peer.poll_media() {
            if let Some(frame) = unit_frame(&unit) {
                self.events
                    .push_back(Event::FrameUnitReceived { flow, frame });
            }
        }
    }
}

impl Endpoint for VideoApp {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        self.peer.handle_datagram(now, from, payload);
        self.drain_media();
    }

    fn handle_timeout(&mut self, now: Time) {
        self.frames_due(now);
        if self.peer.poll_timeout().is_some_and(|t| t <= now) {
            self.peer.handle_timeout(now);
        }
        self.drain_media();
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        self.peer.poll_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let frame = (!self.closed).then_some(self.next_frame);
        match (self.peer.poll_timeout(), frame) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front().or_else(|| self.peer.poll_event())
    }

    fn handle_media(&mut self, _now: Time, _payload: &[u8]) -> bool {
        false
    }

    fn poll_media(&mut self) -> Option<(FlowId, Vec<u8>)> {
        None
    }

    fn handle_close(&mut self, now: Time) {
        self.closed = true;
        self.peer.handle_close(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 30 frames a second, a keyframe of eight frames' size every 2 s.
    fn eight_every_two_s(keyframe_budget: bool) -> VideoParams {
        VideoParams {
            fps: 30.0,
            keyframe_interval: Duration::from_secs(2),
            keyframe_ratio: 8.0,
            keyframe_budget,
            fixed_bps: None,
        }
    }

    #[test]
    fn a_keyframe_interval_carries_the_rate_and_its_keyframe_the_ratio() {
        let v = eight_every_two_s(false);
        let bps = 300_000.0;
        let sizes: Vec<usize> = (0..60).map(|k| v.frame_bytes(k, bps, None)).collect();
        let total: usize = sizes.iter().sum();
        // 2 s at 300 kbit/s is 75 000 bytes (rounding per frame).
        assert!((total as i64 - 75_000).abs() <= 60, "{total}");
        assert_eq!(sizes[0], (75_000.0 * 8.0 / 67.0_f64).round() as usize);
        assert!(sizes[1..].iter().all(|&s| s == sizes[1]));
        // Eight times the others, within their rounding.
        assert!(sizes[0].abs_diff(8 * sizes[1]) <= 4, "{sizes:?}");
        assert_eq!(v.frame_bytes(60, bps, None), sizes[0]);
        // One frame a keyframe interval: every frame the rate's share.
        let every = VideoParams {
            keyframe_interval: Duration::from_millis(10),
            ..v
        };
        assert_eq!(every.frame_bytes(7, bps, None), 1250);
    }

    #[test]
    fn a_budget_shrinks_the_keyframe_and_the_interval_keeps_the_rate() {
        let v = eight_every_two_s(true);
        let bps = 300_000.0;
        let free = v.frame_bytes(0, bps, None);
        // A budget above the keyframe changes nothing.
        for k in [0, 1, 59] {
            assert_eq!(
                v.frame_bytes(k, bps, Some(free + 1)),
                v.frame_bytes(k, bps, None)
            );
        }
        let total = |budget| -> usize { (0..60).map(|k| v.frame_bytes(k, bps, budget)).sum() };
        for budget in [6000, 3000] {
            let key = v.frame_bytes(0, bps, Some(budget));
            assert!(key.abs_diff(budget) <= 1, "{budget}: {key}");
            assert!(v.frame_bytes(1, bps, Some(budget)) > v.frame_bytes(1, bps, None));
            assert!(total(Some(budget)).abs_diff(75_000) <= 60, "{budget}");
        }
        // Not under one frame's share: every frame alike.
        let flat = v.frame_bytes(0, bps, Some(100));
        assert_eq!(flat, 1250);
        assert_eq!(v.frame_bytes(1, bps, Some(100)), 1250);
    }

    #[test]
    fn a_unit_carries_its_frames_number() {
        for (frame, len) in [(0, 16), (7, 1400), (u64::MAX, 8)] {
            let unit = frame_unit(frame, len);
            assert_eq!(unit.len(), len);
            assert_eq!(unit_frame(&unit), Some(frame));
        }
        assert_eq!(unit_frame(&[1, 2, 3]), None);
        let v = eight_every_two_s(true);
        assert!(v.is_key(0) && v.is_key(60) && !v.is_key(59));
    }

    #[test]
    fn frames_go_out_in_full_units_and_a_rest() {
        assert_eq!(packetise(3000, 1400), vec![1400, 1400, 200]);
        assert_eq!(packetise(2800, 1400), vec![1400, 1400]);
        assert_eq!(packetise(1405, 1400), vec![1400, 16]);
        assert_eq!(packetise(0, 1400), Vec::<usize>::new());
    }

    #[test]
    fn frames_under_the_smallest_unit_are_skipped_and_the_rate_holds() {
        // 1 kbit/s at 30 frames a second: frames of 4 bytes (rounded), each
        // raised to a unit of 16 without the skip (3.84 kbit/s).
        let mut skipped = 0;
        let handed: Vec<Vec<usize>> = (0..300)
            .map(|_| packetise_skipping(&mut skipped, 4, 1400))
            .collect();
        let total: usize = handed.iter().flatten().sum();
        assert_eq!(total + skipped, 1200);
        // One frame in four goes out, a unit of 16; the others are skipped.
        assert_eq!(handed.iter().filter(|u| !u.is_empty()).count(), 75);
        assert!(handed.iter().flatten().all(|&u| u == 16));
        // A frame of a unit or more takes what the skipped ones left.
        let mut skipped = 0;
        assert!(packetise_skipping(&mut skipped, 10, 1400).is_empty());
        assert_eq!(skipped, 10);
        assert_eq!(packetise_skipping(&mut skipped, 1400, 1400), vec![1400, 16]);
        assert_eq!(skipped, 0);
        // With nothing skipped, frames go out as they always did.
        for bytes in [3000, 2800, 1405, 700, 16, 0] {
            assert_eq!(
                packetise_skipping(&mut skipped, bytes, 1400),
                packetise(bytes, 1400)
            );
            assert_eq!(skipped, 0);
        }
    }
}
