//! The three MSB roles as [`Endpoint`]s.

use super::LayeredConfig;
use super::hop::{HopCounters, HopReceiver, HopRole, HopSender, MediaPkt};
use super::wire::{Control, MediaHeader, emit_control, parse_control};
use crate::transport::wire::{parse_tfrc_data, parse_tfrc_feedback};
use crate::wire::{CommonHeader, PacketType};
use meshcast_control::tfrc::TfrcSender;
use meshcast_core::{Addr, Duration, Endpoint, Event, FlowId, Time, Transmit};
use std::collections::{BTreeMap, VecDeque};

/// Feedback, NACKs and ACKs that arrive at a hop's sender from the next
/// node. Returns an ACK's contents for the caller to relay.
fn sender_control(
    hop: &mut HopSender,
    flow: FlowId,
    now: Time,
    payload: &[u8],
) -> Option<(u32, Duration)> {
    match CommonHeader::parse(payload).ok()?.packet_type {
        PacketType::TfrcFeedback => {
            let (f, fb) = parse_tfrc_feedback(payload).ok()?;
            if f == flow {
                hop.on_feedback(now, &fb);
            }
            None
        }
        PacketType::MsbControl => match parse_control(payload).ok()? {
            (f, _) if f != flow => None,
            (_, Control::Nack(seqs)) => {
                hop.on_nack(now, &seqs);
                None
            }
            (
                _,
                Control::Ack {
                    frame,
                    rtt_to_receiver,
                },
            ) => {
                hop.on_ack(frame, rtt_to_receiver);
                Some((frame, rtt_to_receiver))
            }
        },
        _ => None,
    }
}

/// A media packet of `flow` from a hop's data packet, after TFRC has seen
/// it; `None` if not ours, malformed or a duplicate on the hop.
fn receive_media(
    hop: &mut HopReceiver,
    flow: FlowId,
    now: Time,
    payload: &[u8],
) -> Option<MediaPkt> {
    let (f, info, body) = parse_tfrc_data(payload).ok()?;
    if f != flow {
        return None;
    }
    let (h, media) = MediaHeader::parse(body).ok()?;
    if !hop.on_data(now, &info, payload.len() as u32) {
        return None;
    }
    Some(MediaPkt {
        h,
        media: media.to_vec(),
    })
}

/// Configuration of an [`MsbSource`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MsbSourceConfig {
    /// The flow id on packets and events.
    pub flow: FlowId,
    /// The first node downstream (a booster or the receiver).
    pub to: Addr,
    /// The stream.
    pub stream: LayeredConfig,
    /// When the first frame is generated.
    pub start: Time,
    /// No frames are generated from here on.
    pub stop: Time,
}

/// MmAppSend: generates the layered stream and sends it on the first hop.
#[derive(Debug)]
pub struct MsbSource {
    cfg: MsbSourceConfig,
    hop: HopSender,
    next_frame: u32,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl MsbSource {
    /// A source; the stream parameters must validate.
    pub fn new(cfg: MsbSourceConfig) -> Result<MsbSource, String> {
        cfg.stream.validate()?;
        Ok(MsbSource {
            hop: HopSender::new(cfg.flow, cfg.to, cfg.stream, cfg.start, HopRole::Source),
            cfg,
            next_frame: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
        })
    }

    /// The first hop's TFRC sender.
    pub fn sender(&self) -> &TfrcSender {
        self.hop.sender()
    }

    /// The first hop's counters.
    pub fn counters(&self) -> HopCounters {
        self.hop.counters()
    }

    fn frame_time(&self, f: u32) -> Time {
        self.cfg.start
            + Duration::from_nanos(self.cfg.stream.frame_interval().as_nanos() * u64::from(f))
    }

    /// Generate every frame due by `now`, base layer first.
    fn generate(&mut self, now: Time) {
        let s = &self.cfg.stream;
        let media = s.packet_bytes as usize - LayeredConfig::MIN_PACKET_BYTES as usize;
        loop {
            let g = self.frame_time(self.next_frame);
            if g > now || g >= self.cfg.stop {
                return;
            }
            for layer in 1..=s.layers {
                for index in 0..s.packets_per_layer {
                    self.hop.enqueue(MediaPkt {
                        h: MediaHeader {
                            frame: self.next_frame,
                            layer,
                            index,
                            retx: 0,
                            generated_at: g,
                            deadline: g + s.probation,
                        },
                        media: vec![0; media],
                    });
                }
            }
            self.next_frame += 1;
        }
    }
}

impl Endpoint for MsbSource {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        if from != self.hop.to() {
            return;
        }
        sender_control(&mut self.hop, self.cfg.flow, now, payload);
        self.hop.pump(now, &mut self.out, &mut self.events);
    }

    fn handle_timeout(&mut self, now: Time) {
        if now < self.cfg.start {
            return;
        }
        self.generate(now);
        self.hop.handle_timeout(now);
        self.hop.pump(now, &mut self.out, &mut self.events);
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        let next = self.frame_time(self.next_frame);
        let frames = (next < self.cfg.stop).then_some(next);
        let hop = self.hop.poll_timeout().max(self.cfg.start);
        // After the last frame the hop keeps going until its queues drain
        // (their deadlines bound that); TFRC's timers alone do not matter.
        Some(frames.map_or(hop, |f| f.min(hop)))
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// MmAppInt: receives the stream on one hop and sends it on the next,
/// with its own queues, budget and retransmission cache.
#[derive(Debug)]
pub struct MsbBooster {
    flow: FlowId,
    hop_in: HopReceiver,
    hop_out: HopSender,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl MsbBooster {
    /// A booster between `upstream` and `downstream` for `flow`.
    pub fn new(
        flow: FlowId,
        upstream: Addr,
        downstream: Addr,
        stream: LayeredConfig,
        now: Time,
    ) -> Result<MsbBooster, String> {
        stream.validate()?;
        Ok(MsbBooster {
            flow,
            hop_in: HopReceiver::new(flow, upstream, &stream),
            hop_out: HopSender::new(flow, downstream, stream, now, HopRole::Booster),
            out: VecDeque::new(),
            events: VecDeque::new(),
        })
    }

    /// The outgoing hop's TFRC sender.
    pub fn sender(&self) -> &TfrcSender {
        self.hop_out.sender()
    }

    /// The outgoing hop's counters.
    pub fn counters(&self) -> HopCounters {
        self.hop_out.counters()
    }
}

impl Endpoint for MsbBooster {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        if from == self.hop_in.from() {
            if let Some(p) = receive_media(&mut self.hop_in, self.flow, now, payload) {
                self.hop_out.enqueue(p);
            }
            self.hop_in.poll(now, &mut self.out);
        } else if from == self.hop_out.to() {
            if let Some((frame, _)) = sender_control(&mut self.hop_out, self.flow, now, payload) {
                self.out.push_back(Transmit {
                    to: self.hop_in.from(),
                    payload: emit_control(
                        self.flow,
                        &Control::Ack {
                            frame,
                            rtt_to_receiver: self.hop_out.rtt_to_receiver(),
                        },
                    ),
                });
            }
        } else {
            return;
        }
        self.hop_out.pump(now, &mut self.out, &mut self.events);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.hop_in.poll(now, &mut self.out);
        self.hop_out.handle_timeout(now);
        self.hop_out.pump(now, &mut self.out, &mut self.events);
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        let t = self.hop_out.poll_timeout();
        Some(self.hop_in.poll_timeout().map_or(t, |r| r.min(t)))
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// What arrived of one frame.
#[derive(Debug)]
struct FrameRx {
    /// Per layer: bit `i` set when packet `i` arrived.
    got: Vec<u64>,
}

/// MmAppRecv: receives the stream, presents each frame at its deadline and
/// reports per-frame layers and per-packet latency.
#[derive(Debug)]
pub struct MsbReceiver {
    flow: FlowId,
    stream: LayeredConfig,
    hop: HopReceiver,
    frames: BTreeMap<u32, FrameRx>,
    /// Frame 0's generation time, once a packet told it.
    epoch: Option<Time>,
    /// The next frame to present.
    next: u32,
    /// The newest frame a packet arrived of.
    newest: Option<u32>,
    late: u64,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl MsbReceiver {
    /// A receiver of `flow` from `upstream` (the last booster or the
    /// source).
    pub fn new(flow: FlowId, upstream: Addr, stream: LayeredConfig) -> Result<MsbReceiver, String> {
        stream.validate()?;
        Ok(MsbReceiver {
            flow,
            hop: HopReceiver::new(flow, upstream, &stream),
            stream,
            frames: BTreeMap::new(),
            epoch: None,
            next: 0,
            newest: None,
            late: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
        })
    }

    /// Packets that arrived after their deadline.
    pub fn late(&self) -> u64 {
        self.late
    }

    fn generated(&self, f: u32) -> Option<Time> {
        let step = self.stream.frame_interval().as_nanos();
        self.epoch
            .map(|e| e + Duration::from_nanos(step * u64::from(f)))
    }

    /// Present every frame whose deadline has passed, up to the newest
    /// frame seen, and ACK the last one.
    fn present(&mut self, now: Time) {
        let mut presented = None;
        while self.newest.is_some_and(|n| self.next <= n) {
            let Some(g) = self.generated(self.next) else {
                return;
            };
            if g + self.stream.probation > now {
                break;
            }
            let rx = self.frames.remove(&self.next);
            let full = (1u128 << self.stream.packets_per_layer) - 1;
            let (mut min, mut max) = (0u8, 0u8);
            if let Some(rx) = rx {
                for (i, &bits) in rx.got.iter().enumerate() {
                    let layer = i as u8 + 1;
                    if u128::from(bits) == full && min + 1 == layer {
                        min = layer;
                    }
                    if bits != 0 {
                        max = layer;
                    }
                }
            }
            self.events.push_back(Event::FramePresented {
                flow: self.flow,
                generated_at: g,
                layers_min: min,
                layers_max: max,
            });
            presented = Some(self.next);
            self.next += 1;
        }
        if let Some(frame) = presented {
            self.out.push_back(Transmit {
                to: self.hop.from(),
                payload: emit_control(
                    self.flow,
                    &Control::Ack {
                        frame,
                        rtt_to_receiver: Duration::ZERO,
                    },
                ),
            });
        }
    }
}

impl Endpoint for MsbReceiver {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        if from != self.hop.from() {
            return;
        }
        if let Some(p) = receive_media(&mut self.hop, self.flow, now, payload) {
            let h = p.h;
            let s = &self.stream;
            if self.epoch.is_none() {
                let back = s.frame_interval().as_nanos() * u64::from(h.frame);
                self.epoch = Some(Time::from_nanos(
                    h.generated_at.as_nanos().saturating_sub(back),
                ));
            }
            let valid = h.layer <= s.layers && h.index < s.packets_per_layer;
            if !valid || h.frame < self.next || now >= h.deadline {
                self.late += u64::from(valid);
            } else {
                let layers = usize::from(s.layers);
                let rx = self.frames.entry(h.frame).or_insert_with(|| FrameRx {
                    got: vec![0; layers],
                });
                let bit = 1u64 << h.index;
                let slot = &mut rx.got[usize::from(h.layer - 1)];
                if *slot & bit == 0 {
                    *slot |= bit;
                    self.newest = Some(self.newest.map_or(h.frame, |n| n.max(h.frame)));
                    self.events.push_back(Event::FlowReceived {
                        flow: self.flow,
                        payload_bytes: payload.len() as u32,
                        sent_at: h.generated_at,
                    });
                    self.events.push_back(Event::MediaReceived {
                        flow: self.flow,
                        generated_at: h.generated_at,
                        retransmitted: h.retx > 0,
                    });
                }
            }
        }
        self.hop.poll(now, &mut self.out);
        self.present(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.hop.poll(now, &mut self.out);
        self.present(now);
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        let present = self
            .newest
            .filter(|&n| self.next <= n)
            .and_then(|_| self.generated(self.next))
            .map(|g| g + self.stream.probation);
        match (present, self.hop.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
