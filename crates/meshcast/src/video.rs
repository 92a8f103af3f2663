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
//! Each unit begins with its frame's number, how many units the frame
//! went out in, whether it is a keyframe and when it was handed over
//! ([`UnitHeader`], 15 bytes; the smallest unit a peer takes is 16), so
//! that the receivers' encoders report which frame each unit they got
//! belongs to ([`Event::FrameUnitReceived`]), as the source's reports
//! each frame it hands over ([`Event::FrameHanded`]): the report's frame
//! figures ([`meshcast_core::video`]) come from them.
//!
//! With `keyframe_requests` (the default for encoders that follow the
//! rate) a receiver that loses a frame asks its source for a keyframe
//! ([`CelerityPeer::request_keyframe`], RTCP's picture loss indication),
//! and the source's encoder makes its next frame one, as WebRTC's
//! encoders do: without it a frame lost spoils every frame up to the next
//! regular keyframe (docs/celerity.md, "Frames and keyframes on
//! request").

use meshcast_core::{Addr, Duration, Endpoint, Event, FlowId, Time, Transmit};
use meshcast_proto::celerity::app_lag::RateHistory;
use meshcast_proto::celerity::{CelerityPeer, MEDIA_BYTES};
use std::collections::{BTreeMap, VecDeque};

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
    /// Whether receivers ask for a keyframe when a frame is lost and the
    /// encoder makes its next frame one, between its regular keyframes,
    /// keeping its rate (`conference.keyframe_requests`: the default, but
    /// with `fixed_bps`; see [`KEYFRAME_GAP`] and
    /// [`VideoApp`]'s `frame_size`).
    pub keyframe_requests: bool,
    /// A rate the encoder holds whatever the peer offers, bits/s
    /// (`conference.video_kbps`): an application that does not follow the
    /// offered rate, as an encoder set to a fixed bitrate. `None` follows
    /// the offered rate ([`CelerityPeer::offered_rate`]).
    pub fixed_bps: Option<f64>,
    /// How long the encoder's rate control takes to follow the offered
    /// rate (`conference.video_lag_ms`): each frame is sized at the rate
    /// the peer offered this long before (the first offer until then), as
    /// a real encoder's rate control reaches a new bitrate some frames
    /// after it is set (x264 through GStreamer 0.4–0.9 s at its default
    /// 600-ms VBV buffer, 0.15–0.3 s at 150 ms; docs/celerity.md, "An
    /// encoder that lags"). Zero follows at once.
    /// Not with `fixed_bps`.
    pub lag: Duration,
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

/// How soon after a keyframe the encoder makes another on request: a
/// request for a frame lost before that keyframe is answered by it, and
/// requests that cross it on the way (every receiver asks) are not
/// answered twice. The default delay bound's 200 ms.
pub const KEYFRAME_GAP: Duration = Duration::from_millis(200);

/// What each unit of [`VideoApp`]'s begins with: its frame's number
/// (8 bytes, little-endian), the frame's units (2), whether it is a
/// keyframe (1) and when the encoder handed it over, ms on the source's
/// clock (4, wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitHeader {
    /// The frame's number: upwards in the order handed over, from the
    /// encoder's start's frame slot.
    pub frame: u64,
    /// The units the frame went out in.
    pub units: u16,
    /// Whether the frame is a keyframe.
    pub key: bool,
    /// When it was handed over, ms (wrapping at 2^32).
    pub handed_ms: u32,
}

impl UnitHeader {
    /// Its length: every unit a peer takes (16 bytes or more) holds it.
    pub const LEN: usize = 15;

    /// The header a unit begins with (`None` for a unit too short to
    /// carry one, which no simulated encoder hands over).
    pub fn parse(unit: &[u8]) -> Option<UnitHeader> {
        let b = unit.get(..Self::LEN)?;
        Some(UnitHeader {
            frame: u64::from_le_bytes(b[..8].try_into().ok()?),
            units: u16::from_le_bytes([b[8], b[9]]),
            key: b[10] != 0,
            handed_ms: u32::from_le_bytes(b[11..15].try_into().ok()?),
        })
    }

    /// A unit of `len` bytes (at least [`UnitHeader::LEN`]) that begins
    /// with this header.
    fn unit(&self, len: usize) -> Vec<u8> {
        let mut unit = vec![0u8; len.max(Self::LEN)];
        unit[..8].copy_from_slice(&self.frame.to_le_bytes());
        unit[8..10].copy_from_slice(&self.units.to_le_bytes());
        unit[10] = u8::from(self.key);
        unit[11..15].copy_from_slice(&self.handed_ms.to_le_bytes());
        unit
    }
}

/// A time in ms, wrapping as [`UnitHeader::handed_ms`] does.
fn wrapping_ms(t: Time) -> u32 {
    (t.as_nanos() / 1_000_000) as u32
}

/// A frame a receiver has had units of and whose fate is not settled.
#[derive(Clone, Copy, Debug)]
struct Arriving {
    /// When its source handed it over.
    handed: Time,
    units: u16,
    got: u16,
    key: bool,
}

/// What a receiver's decoder knows of one session's frames.
#[derive(Clone, Debug, Default)]
struct Incoming {
    /// Frames with units here whose units may still arrive, by number.
    arriving: BTreeMap<u64, Arriving>,
    /// The next frame number to settle: every frame before it has
    /// arrived whole or never will.
    next: u64,
    /// Whether the frames settled so far can be shown: the last keyframe
    /// and every frame since arrived whole.
    showing: bool,
    /// When this receiver last asked for a keyframe, while it waits for
    /// one.
    asked: Option<Time>,
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
    /// The next frame's number (dense from the start's frame slot) and
    /// whether a keyframe was skipped since the last: the next frame coded
    /// is then the keyframe, as an encoder that drops frames keeps its
    /// keyframes.
    handed: u64,
    key_pending: bool,
    /// The encoder's own events, reported before the peer's.
    events: VecDeque<Event>,
    /// A receiver asked for a keyframe: the next frame is one.
    key_asked: bool,
    /// When the encoder last handed over a keyframe.
    last_key: Option<Time>,
    /// The encoder's rate control for keyframes made on request: the
    /// bytes the frames since the last keyframe were sized at and what the
    /// rate allowed meanwhile, and the bytes the frames still owe (see
    /// [`VideoApp::frame_size`]).
    since_key_bytes: f64,
    since_key_allowed: f64,
    debt: f64,
    /// Per session received, what its frames' decoder knows.
    incoming: BTreeMap<FlowId, Incoming>,
    /// The time of the last feed (the peer's events are read at it).
    now: Time,
    /// The offered rates the encoder's rate control has yet to reach
    /// ([`VideoParams::lag`]).
    lagged: Lagged,
}

/// An encoder's rate control that reaches an offered rate `lag` after it
/// was offered ([`VideoParams::lag`]).
#[derive(Clone, Debug)]
struct Lagged {
    lag: Duration,
    /// The rates offered at the frames, as far back as `lag` needs.
    offers: RateHistory,
}

impl Lagged {
    fn new(lag: Duration) -> Lagged {
        Lagged {
            lag,
            offers: RateHistory::new(lag),
        }
    }

    /// The rate a frame at `now` is sized at when `offered` is offered
    /// now: the latest rate offered at least `lag` before (the first
    /// offered while none is so old). Times come in order.
    fn at(&mut self, now: Time, offered: f64) -> f64 {
        if self.lag == Duration::ZERO {
            return offered;
        }
        self.offers.push(now, offered);
        self.offers.before(now, self.lag).unwrap_or(offered)
    }
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
            // Numbered from the frame slot of the start, so that a
            // participant that leaves and joins again goes on with higher
            // numbers than its last life's.
            handed: (start.as_nanos() as f64 / 1e9 * video.fps).round() as u64,
            key_pending: false,
            events: VecDeque::new(),
            key_asked: false,
            last_key: None,
            since_key_bytes: 0.0,
            since_key_allowed: 0.0,
            debt: 0.0,
            incoming: BTreeMap::new(),
            now: Time::ZERO,
            lagged: Lagged::new(video.lag),
        }
    }

    /// The rate the encoder sizes a frame at `now` for, bits/s: the held
    /// rate, else the rate the peer offered [`VideoParams::lag`] before
    /// (the first offer it saw while it has seen none so old).
    fn frame_rate(&mut self, now: Time) -> f64 {
        if let Some(bps) = self.video.fixed_bps {
            return bps;
        }
        let offered = self.peer.offered_rate().as_bps() as f64;
        self.lagged.at(now, offered)
    }

    fn frames_due(&mut self, now: Time) {
        let gap = Duration::from_secs_f64(1.0 / self.video.fps);
        while !self.closed && self.next_frame <= now {
            let bps = self.frame_rate(now);
            let budget = self
                .video
                .keyframe_budget
                .then(|| self.peer.offered_frame_bytes() as usize);
            // A keyframe on request comes between the regular ones and
            // leaves their schedule alone (see `VideoApp::frame_size`).
            let asked = std::mem::take(&mut self.key_asked);
            let bytes = self.frame_size(self.frame, bps, budget, asked);
            let unit = self.peer.offered_packet_bytes() as usize;
            let units = packetise_skipping(&mut self.skipped, bytes, unit);
            let key = self.key_pending || asked || self.video.is_key(self.frame);
            if units.is_empty() {
                self.key_pending = key;
            } else {
                self.key_pending = false;
                if key {
                    self.last_key = Some(now);
                }
                let header = UnitHeader {
                    frame: self.handed,
                    units: units.len().min(usize::from(u16::MAX)) as u16,
                    key,
                    handed_ms: wrapping_ms(now),
                };
                self.handed += 1;
                self.events.push_back(Event::FrameHanded {
                    flow: self.peer.flow(),
                    frame: header.frame,
                    units: units.len() as u32,
                    key,
                });
                for len in units {
                    self.peer.handle_media(now, &header.unit(len));
                }
            }
            self.frame += 1;
            self.next_frame += gap;
        }
    }

    /// The bytes of frame `k` at `bps` (`asked`: a keyframe made on
    /// request, the size of a regular one). Frames are sized so that a
    /// whole keyframe interval carries the rate
    /// ([`VideoParams::frame_bytes`]); a keyframe on request is one more
    /// keyframe than its interval's frames pay for. With
    /// `keyframe_requests` the encoder keeps its rate over them, as an
    /// encoder's rate control does: at every keyframe, what the frames
    /// since the last were sized at beyond what the rate allowed
    /// meanwhile is owed; a keyframe on request is smaller by what is owed
    /// (not under a frame between keyframes), and the frames between
    /// keyframes by up to half their size, until it is paid. Without
    /// requests every frame is [`VideoParams::frame_bytes`]'s.
    ///
    /// A keyframe on request does not restart the keyframe interval. It
    /// did in the first form, as x264's forced keyframes do, and the
    /// encoders whose frames a congested link had cost all restarted at
    /// once; their regular keyframes then fell together for good, into
    /// the same link every interval, and the slow cores lost a second of
    /// packets every 8 s (docs/celerity.md, "Frames and keyframes on
    /// request").
    fn frame_size(&mut self, k: u64, bps: f64, budget: Option<usize>, asked: bool) -> usize {
        let key = asked || self.video.is_key(k);
        let nominal = self
            .video
            .frame_bytes(if asked { 0 } else { k }, bps, budget);
        if !self.video.keyframe_requests {
            return nominal;
        }
        if key {
            self.debt += (self.since_key_bytes - self.since_key_allowed).max(0.0);
            self.since_key_bytes = 0.0;
            self.since_key_allowed = 0.0;
        }
        let room = if !key {
            nominal as f64 / 2.0
        } else if asked {
            nominal.saturating_sub(self.video.frame_bytes(1, bps, budget)) as f64
        } else {
            0.0
        };
        let less = self.debt.min(room).floor();
        self.debt -= less;
        // What the frames were sized at, repayments apart: each interval
        // owes what its own frames spent beyond the rate.
        self.since_key_bytes += nominal as f64;
        self.since_key_allowed += bps / 8.0 / self.video.fps;
        nominal - less as usize
    }

    /// The simulator has no application to show media: report each
    /// arrived unit's frame, and with `keyframe_requests` settle the
    /// frames whose units can no longer arrive and ask for a keyframe
    /// where one was lost.
    fn drain_media(&mut self, now: Time) {
        while let Some((flow, unit)) = self.peer.poll_media() {
            let Some(h) = UnitHeader::parse(&unit) else {
                continue;
            };
            self.events.push_back(Event::FrameUnitReceived {
                flow,
                frame: h.frame,
            });
            if !self.video.keyframe_requests {
                continue;
            }
            let inc = self.incoming.entry(flow).or_default();
            if h.frame < inc.next {
                continue;
            }
            // The handed time travels as wrapping ms: it is the latest
            // such time at or before now.
            let age = wrapping_ms(now).wrapping_sub(h.handed_ms);
            let handed =
                Time::from_nanos(now.as_nanos().saturating_sub(u64::from(age) * 1_000_000));
            let a = inc.arriving.entry(h.frame).or_insert(Arriving {
                handed,
                units: h.units,
                got: 0,
                key: h.key,
            });
            a.got = a.got.saturating_add(1);
        }
        if self.video.keyframe_requests {
            self.settle(now);
        }
    }

    /// Settle every session's frames whose units can no longer arrive
    /// (a peer delivers none older than the delay bound), in order: a
    /// keyframe that arrived whole makes the frames after it showable, a
    /// frame short of a unit or missing altogether (a number skipped)
    /// makes them not, until the next keyframe. While a session's frames
    /// cannot be shown, ask its source for a keyframe, and again after
    /// twice the delay bound while none made since is on its way.
    fn settle(&mut self, now: Time) {
        let bound = self.peer.delay_bound();
        for (&flow, inc) in &mut self.incoming {
            while let Some((&frame, a)) = inc.arriving.first_key_value() {
                // The handed time came in whole ms: a little more.
                if a.handed + bound + Duration::from_millis(2) >= now {
                    break;
                }
                let whole = a.got >= a.units;
                if frame > inc.next {
                    // Frames before it never came at all.
                    inc.showing = false;
                }
                if a.key && whole {
                    inc.showing = true;
                    inc.asked = None;
                } else if !whole {
                    inc.showing = false;
                }
                inc.next = frame + 1;
                inc.arriving.pop_first();
            }
            if inc.showing || inc.next == 0 {
                continue;
            }
            // Asked again only when no keyframe made since the last
            // request is on its way and twice the delay bound has passed.
            let due = inc.asked.is_none_or(|t| {
                now.saturating_since(t) >= bound + bound
                    && !inc.arriving.values().any(|a| a.key && a.handed >= t)
            });
            if due && self.peer.request_keyframe(now, flow) {
                inc.asked = Some(now);
            }
        }
    }

    /// The peer's next event; a keyframe request for this encoder's
    /// session makes its next frame a keyframe, unless it made one within
    /// [`KEYFRAME_GAP`].
    fn next_event(&mut self) -> Option<Event> {
        let e = self.peer.poll_event()?;
        if let Event::KeyframeRequested { .. } = e
            && self.video.keyframe_requests
            && self
                .last_key
                .is_none_or(|k| self.now.saturating_since(k) >= KEYFRAME_GAP)
        {
            self.key_asked = true;
        }
        Some(e)
    }
}

impl Endpoint for VideoApp {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        self.now = now;
        self.peer.handle_datagram(now, from, payload);
        self.drain_media(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.now = now;
        self.frames_due(now);
        if self.peer.poll_timeout().is_some_and(|t| t <= now) {
            self.peer.handle_timeout(now);
        }
        self.drain_media(now);
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
        self.events.pop_front().or_else(|| self.next_event())
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
            keyframe_requests: false,
            fixed_bps: None,
            lag: Duration::ZERO,
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
    fn a_lagging_encoder_sizes_frames_at_the_rate_offered_a_lag_before() {
        let ms = Time::from_millis;
        // No lag: the rate offered now.
        let mut now = Lagged::new(Duration::ZERO);
        assert_eq!(now.at(ms(0), 100.0), 100.0);
        assert_eq!(now.at(ms(33), 300.0), 300.0);
        // 100 ms: the first offer until 100 ms have passed, then the
        // latest offer at least 100 ms old (frames every 33 ms: at 132 ms
        // the offer of 0 ms, the one of 33 ms being 99 ms old; at 165 ms
        // that one).
        let mut l = Lagged::new(Duration::from_millis(100));
        let offers = [100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0];
        let sized: Vec<f64> = offers
            .iter()
            .enumerate()
            .map(|(k, &r)| l.at(ms(33 * k as u64), r))
            .collect();
        assert_eq!(sized, [100.0, 100.0, 100.0, 100.0, 100.0, 200.0, 300.0]);
        // It keeps the offers of the last lag and the one before: 66 ms
        // (132 ms old at 198 ms) to 198 ms.
        assert_eq!(l.offers.len(), 5);
        // A rate offered exactly a lag before is reached.
        let mut l = Lagged::new(Duration::from_millis(100));
        l.at(ms(0), 100.0);
        l.at(ms(50), 200.0);
        assert_eq!(l.at(ms(150), 300.0), 200.0);
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

    /// An encoder of `v` on a peer of a two-member conference that has
    /// not started.
    fn app(v: VideoParams) -> VideoApp {
        use meshcast_core::NodeId;
        use meshcast_proto::celerity::{CelerityConfig, CelerityParams};
        let cfg = CelerityConfig {
            me: 0,
            participants: (0..2).map(|i| Addr::new(NodeId(i), 7)).collect(),
            flows: (0..2).map(FlowId).collect(),
            model: meshcast_plan::Model::Deep,
            params: CelerityParams::default(),
        };
        VideoApp::new(CelerityPeer::new(cfg).unwrap(), v, Time::ZERO)
    }

    #[test]
    fn keyframes_on_request_keep_the_encoders_rate() {
        let v = VideoParams {
            keyframe_requests: true,
            ..eight_every_two_s(false)
        };
        let bps = 300_000.0;
        // With no request every frame is `frame_bytes`', with requests on
        // or off.
        for requests in [false, true] {
            let mut a = app(VideoParams {
                keyframe_requests: requests,
                ..v
            });
            for k in 0..120 {
                assert_eq!(
                    a.frame_size(k, bps, None, false),
                    v.frame_bytes(k, bps, None)
                );
            }
        }
        // A keyframe asked for every 15 frames (half a second) between the
        // regular ones: three more keyframes an interval than its frames
        // pay for. Over 20 s the encoder hands over what the rate allows
        // within 2%, where sizing each as a regular keyframe would hand
        // over 1.3 times that.
        let mut a = app(v);
        let (mut paid, mut free) = (0usize, 0usize);
        for k in 0..600u64 {
            let asked = k % 15 == 0 && !v.is_key(k);
            paid += a.frame_size(k, bps, None, asked);
            free += v.frame_bytes(if asked { 0 } else { k }, bps, None);
        }
        let allowed = bps / 8.0 * 20.0;
        assert!(
            (paid as f64 / allowed - 1.0).abs() < 0.02,
            "{paid} of {allowed}"
        );
        assert!(free as f64 > 1.25 * allowed, "{free}");
        // A keyframe on request is not smaller than a frame between.
        assert!(a.frame_size(600, bps, None, true) >= v.frame_bytes(1, bps, None));
        // An encoder that starts later (a participant that joins, or
        // joins again) numbers its frames from its start's frame slot, past
        // any number an earlier life of it could have used.
        let mut later = app(v);
        later = VideoApp::new(later.peer, v, Time::from_secs(10));
        assert_eq!(later.handed, 300);
        // Without requests a keyframe asked for anyway (never, in a run)
        // is a regular keyframe's size.
        let mut a = app(eight_every_two_s(false));
        assert_eq!(
            a.frame_size(7, bps, None, true),
            v.frame_bytes(0, bps, None)
        );
    }

    #[test]
    fn a_unit_carries_its_frames_header() {
        for (frame, units, key, handed_ms, len) in [
            (0, 1, true, 0, 16),
            (7, 3, false, 12_345, 1400),
            (u64::MAX, u16::MAX, true, u32::MAX, UnitHeader::LEN),
        ] {
            let h = UnitHeader {
                frame,
                units,
                key,
                handed_ms,
            };
            let unit = h.unit(len);
            assert_eq!(unit.len(), len);
            assert_eq!(UnitHeader::parse(&unit), Some(h));
        }
        assert_eq!(UnitHeader::parse(&[1, 2, 3]), None);
        assert_eq!(wrapping_ms(Time::from_millis(u64::from(u32::MAX) + 5)), 4);
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
