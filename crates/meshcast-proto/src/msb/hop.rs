//! One hop of an MSB path: the sending end (queues, arbitration, cache,
//! TFRC sender) and the receiving end (TFRC receiver, NACKs).

use super::LayeredConfig;
use super::wire::{Control, MAX_NACK_SEQS, MEDIA_HEADER_LEN, MediaHeader, emit_control};
use crate::transport::wire::{TFRC_DATA_HEADER_LEN, emit_tfrc_data, emit_tfrc_feedback};
use meshcast_control::tfrc::{
    DataInfo, Feedback, Mode, ReceiverConfig, SenderConfig, TfrcReceiver, TfrcSender,
};
use meshcast_core::{Addr, Duration, Event, FlowId, Time, Transmit};
use std::collections::{BTreeMap, VecDeque};

/// A media packet: its MSB header and media bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MediaPkt {
    pub(crate) h: MediaHeader,
    pub(crate) media: Vec<u8>,
}

/// EDF order: deadline, then frame, then layer (importance), then packet.
type Key = (Time, u32, u8, u8);

fn key(h: &MediaHeader) -> Key {
    (h.deadline, h.frame, h.layer, h.index)
}

/// Gain of the moving average `A` of the top layer sent per frame.
const A_GAIN: f64 = 1.0 / 8.0;

/// Most packets one wake-up sends (a guard; pacing sends one).
const MAX_BURST: usize = 1024;

/// Which node a hop's sender runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HopRole {
    /// MmAppSend: chooses each frame's layers; reports first
    /// transmissions as `FlowSent`.
    Source,
    /// MmAppInt: forwards what the previous hop delivered; first
    /// transmissions may use the frame budget that retransmissions left
    /// (module docs).
    Booster,
}

/// What `get_pkt` answered.
enum Pick {
    /// Send this packet (true: a retransmission).
    Send(MediaPkt, bool),
    /// Nothing now, by the frame budget, while the frame had more data.
    Budget,
    /// Nothing to send: the stream is exhausted for now.
    Empty,
}

/// Counters of one hop's sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HopCounters {
    /// First transmissions sent.
    pub sent: u64,
    /// Retransmissions sent.
    pub retransmitted: u64,
    /// Packets dropped unsent: frame over budget or deadline out of reach.
    pub dropped: u64,
    /// NACKed packets that could not be retransmitted (not cached, or too
    /// late).
    pub nack_refused: u64,
}

/// The sending end of a hop.
#[derive(Debug)]
pub(crate) struct HopSender {
    flow: FlowId,
    to: Addr,
    cfg: LayeredConfig,
    tx: TfrcSender,
    xmitq: BTreeMap<Key, MediaPkt>,
    rexmitq: BTreeMap<Key, MediaPkt>,
    /// Cached packets by the hop sequence number they were sent with.
    pktbuf: BTreeMap<u64, MediaPkt>,
    /// The current frame `f` (none before the first packet).
    frame: Option<u32>,
    u_xmit: u64,
    u_rexmit: u64,
    frame_top: u8,
    /// The current frame's budget ran out before its packets did.
    frame_cut: bool,
    /// First-transmission budget the last frame left unused when its
    /// budget cut it (less than one packet): added to this frame's.
    carry: f64,
    avg_top: Option<f64>,
    /// `RTT_{i+1,n}`: round trip from the next node to the receiver.
    downstream_rtt: Duration,
    role: HopRole,
    counters: HopCounters,
}

impl HopSender {
    pub(crate) fn new(
        flow: FlowId,
        to: Addr,
        cfg: LayeredConfig,
        now: Time,
        role: HopRole,
    ) -> HopSender {
        let scfg = SenderConfig {
            segment_bytes: cfg.packet_bytes,
            initial_rtt: None,
        };
        HopSender {
            flow,
            to,
            cfg,
            tx: TfrcSender::new(scfg, now),
            xmitq: BTreeMap::new(),
            rexmitq: BTreeMap::new(),
            pktbuf: BTreeMap::new(),
            frame: None,
            u_xmit: 0,
            u_rexmit: 0,
            frame_top: 0,
            frame_cut: false,
            carry: 0.0,
            avg_top: None,
            downstream_rtt: Duration::ZERO,
            role,
            counters: HopCounters::default(),
        }
    }

    pub(crate) fn to(&self) -> Addr {
        self.to
    }

    pub(crate) fn sender(&self) -> &TfrcSender {
        &self.tx
    }

    pub(crate) fn counters(&self) -> HopCounters {
        self.counters
    }

    /// `RTT_{i,n}`: this hop's RTT plus the round trip downstream of it.
    pub(crate) fn rtt_to_receiver(&self) -> Duration {
        self.tx.rtt().unwrap_or(Duration::ZERO) + self.downstream_rtt
    }

    /// Eq. (7): when a packet sent at `now` reaches the receiver
    /// (`now + RTT_{i,n}/2`); it is in time if that is before its deadline.
    fn arrival(&self, now: Time) -> Time {
        now + Duration::from_nanos(self.rtt_to_receiver().as_nanos() / 2)
    }

    /// The secure level `S = β·A`.
    fn secure_level(&self) -> f64 {
        self.cfg.beta * self.avg_top.unwrap_or(0.0)
    }

    /// Queue a packet for its first transmission on this hop. A packet of
    /// a frame older than the current one goes to `rexmitq` if an earlier
    /// hop retransmitted it (repair traffic, module docs); a first
    /// transmission of such a frame is dropped, as the paper drops "packets
    /// belonging to the old frames": this hop cut that frame, and the
    /// frame's remaining layers are worthless above the gap.
    pub(crate) fn enqueue(&mut self, pkt: MediaPkt) {
        let old = self.frame.is_some_and(|f| pkt.h.frame < f);
        if !old {
            self.xmitq.insert(key(&pkt.h), pkt);
        } else if self.cfg.retransmit && pkt.h.retx > 0 {
            self.rexmitq.insert(key(&pkt.h), pkt);
        } else {
            self.counters.dropped += 1;
        }
    }

    /// A NACK from the next node: retransmit what is cached and in time.
    pub(crate) fn on_nack(&mut self, now: Time, seqs: &[u64]) {
        for seq in seqs {
            match self.pktbuf.remove(seq) {
                Some(mut p) if self.arrival(now) < p.h.deadline => {
                    p.h.retx = p.h.retx.saturating_add(1);
                    self.rexmitq.insert(key(&p.h), p);
                }
                _ => self.counters.nack_refused += 1,
            }
        }
    }

    /// An ACK relayed from the receiver: the downstream round trip, and
    /// frames whose cached packets are no longer needed.
    pub(crate) fn on_ack(&mut self, frame: u32, rtt_to_receiver: Duration) {
        self.downstream_rtt = rtt_to_receiver;
        self.pktbuf.retain(|_, p| p.h.frame > frame);
    }

    pub(crate) fn on_feedback(&mut self, now: Time, fb: &Feedback) {
        self.tx.on_feedback(now, fb);
    }

    pub(crate) fn handle_timeout(&mut self, now: Time) {
        self.tx.handle_timeout(now);
    }

    pub(crate) fn poll_timeout(&self) -> Time {
        let t = self.tx.next_send();
        self.tx.poll_timeout().map_or(t, |n| n.min(t))
    }

    /// Start frame `f`: fold the last frame's top layer into `A`, reset the
    /// budgets.
    fn begin_frame(&mut self, f: u32) {
        if self.frame_top > 0 {
            let top = f64::from(self.frame_top);
            self.avg_top = Some(match self.avg_top {
                None => top,
                Some(a) => a + A_GAIN * (top - a),
            });
        }
        self.frame = Some(f);
        self.u_xmit = 0;
        self.u_rexmit = 0;
        self.frame_top = 0;
        self.frame_cut = false;
        self.carry = 0.0;
    }

    /// Drop queued packets that can no longer be useful: too late for their
    /// deadline, or (in `xmitq`) of a frame before the current one.
    fn purge(&mut self, now: Time) {
        let before = self.xmitq.len() + self.rexmitq.len();
        let at = self.arrival(now);
        let f = self.frame;
        self.xmitq
            .retain(|_, p| at < p.h.deadline && f.is_none_or(|f| p.h.frame >= f));
        self.rexmitq.retain(|_, p| at < p.h.deadline);
        self.counters.dropped += (before - self.xmitq.len() - self.rexmitq.len()) as u64;
        while let Some(e) = self.pktbuf.first_entry() {
            if at < e.get().h.deadline {
                break;
            }
            e.remove();
        }
    }

    /// Eq. (3) for `B_total = total` and `α`, with a whole-packet floor
    /// while the frame has retransmitted nothing; at a booster, what
    /// retransmissions left of `total`; plus the last frame's remainder
    /// (module docs).
    fn xmit_budget(&self, total: f64, alpha: f64) -> f64 {
        let (s, ur) = (f64::from(self.cfg.packet_bytes), self.u_rexmit as f64);
        self.carry
            + if self.role == HopRole::Booster {
                total - ur
            } else if self.u_rexmit == 0 {
                ((1.0 - alpha) * total).max(s)
            } else {
                total - (alpha * total).max(ur)
            }
    }

    /// MSB's `get_pkt(X, mode)`: the packet to send now, or why none.
    fn get_pkt(&mut self, now: Time) -> Pick {
        let (rate, mode) = (self.tx.rate(), self.tx.mode());
        // Leave slow start once the budget holds the whole stream: the
        // stream's rate plus the retransmission share.
        let full = self.cfg.max_rate().as_bps() as f64 / (1.0 - self.cfg.alpha_max);
        if mode == Mode::SlowStart && rate.as_bps() as f64 >= full {
            self.tx.break_ss();
        }
        self.purge(now);
        let s = u64::from(self.cfg.packet_bytes);
        if mode == Mode::SlowStart {
            // Gain speed first: no budget (§II-B.3).
            if let Some((_, p)) = self.rexmitq.pop_first() {
                return Pick::Send(p, true);
            }
            let Some((_, p)) = self.xmitq.pop_first() else {
                return Pick::Empty;
            };
            if self.frame.is_none_or(|f| p.h.frame > f) {
                self.begin_frame(p.h.frame);
            }
            self.frame_top = self.frame_top.max(p.h.layer);
            return Pick::Send(p, false);
        }
        // Eq. (1), never below one packet: under s·fps TFRC's pacing, not
        // the budget, limits the stream (a budget below one packet would
        // send nothing, get no feedback and never recover).
        let total = (rate.as_bps() as f64 / 8.0 / f64::from(self.cfg.fps)).max(s as f64);
        loop {
            // Eqs. (2)–(5), with whole-packet floors (module docs).
            let (ux, ur) = (self.u_xmit as f64, self.u_rexmit as f64);
            let alpha = self.cfg.alpha_max.min(1.0 - ux / total).max(0.0);
            let b_rexmit = if self.cfg.alpha_max > 0.0 {
                (alpha * total).max(s as f64)
            } else {
                0.0
            };
            let b_xmit = self.xmit_budget(total, alpha);
            if ur + s as f64 <= b_rexmit
                && ux + ur + s as f64 <= total + self.carry
                && let Some((_, p)) = self.rexmitq.pop_first()
            {
                self.u_rexmit += s;
                return Pick::Send(p, true);
            }
            let Some(head) = self.xmitq.first_key_value().map(|(_, p)| p.h.frame) else {
                return if self.frame_cut || !self.rexmitq.is_empty() {
                    Pick::Budget
                } else {
                    Pick::Empty
                };
            };
            match self.frame {
                Some(f) if head == f => {
                    if ux + s as f64 <= b_xmit
                        && let Some((_, p)) = self.xmitq.pop_first()
                    {
                        self.u_xmit += s;
                        self.frame_top = self.frame_top.max(p.h.layer);
                        return Pick::Send(p, false);
                    }
                    // Frame f's budget is spent: the rest of it is dropped,
                    // and until the next frame the hop is budget-limited.
                    // What the budget had left, less than a packet, goes to
                    // the next frame; measured against the budget at α_max,
                    // because once U_xmit passes (1 − α_max)·B_total eq. (5)
                    // grows B_xmit to U_xmit.
                    let left =
                        (self.xmit_budget(total, self.cfg.alpha_max) - ux).clamp(0.0, s as f64);
                    self.begin_frame(f + 1);
                    self.frame_cut = true;
                    self.carry = left;
                    self.purge(now);
                }
                _ => self.begin_frame(head),
            }
        }
    }

    /// Send whatever TFRC allows now.
    pub(crate) fn pump(
        &mut self,
        now: Time,
        out: &mut VecDeque<Transmit>,
        ev: &mut VecDeque<Event>,
    ) {
        for _ in 0..MAX_BURST {
            if self.tx.next_send() > now {
                return;
            }
            let (pkt, retx) = match self.get_pkt(now) {
                Pick::Send(p, retx) => (p, retx),
                Pick::Budget => {
                    self.tx.on_skipped(now);
                    continue;
                }
                Pick::Empty => {
                    self.tx.on_declined(now);
                    continue;
                }
            };
            let len = TFRC_DATA_HEADER_LEN + MEDIA_HEADER_LEN + pkt.media.len();
            let info: DataInfo = self.tx.on_sent(now, len as u32);
            // One buffer: the TFRC header, then the MSB header and media.
            let mut payload = emit_tfrc_data(self.flow, &info, &[]);
            payload.reserve_exact(len - payload.len());
            pkt.h.emit(&mut payload);
            payload.extend_from_slice(&pkt.media);
            if retx {
                self.counters.retransmitted += 1;
            } else {
                self.counters.sent += 1;
                if self.role == HopRole::Source {
                    ev.push_back(Event::FlowSent {
                        flow: self.flow,
                        payload_bytes: payload.len() as u32,
                    });
                }
            }
            if self.cfg.retransmit && f64::from(pkt.h.layer) < self.secure_level() {
                self.pktbuf.insert(info.seq, pkt);
            }
            out.push_back(Transmit {
                to: self.to,
                payload,
            });
        }
    }
}

/// The receiving end of a hop: TFRC feedback and NACKs to the previous
/// node.
#[derive(Debug)]
pub(crate) struct HopReceiver {
    flow: FlowId,
    from: Addr,
    rx: TfrcReceiver,
    highest: Option<u64>,
    nack: bool,
    missing: Vec<u64>,
}

impl HopReceiver {
    pub(crate) fn new(flow: FlowId, from: Addr, cfg: &LayeredConfig) -> HopReceiver {
        HopReceiver {
            flow,
            from,
            rx: TfrcReceiver::new(ReceiverConfig {
                segment_bytes: cfg.packet_bytes,
                discounting: true,
            }),
            highest: None,
            nack: cfg.retransmit,
            missing: Vec::new(),
        }
    }

    pub(crate) fn from(&self) -> Addr {
        self.from
    }

    /// A data packet of the hop arrived; false if TFRC had seen it.
    pub(crate) fn on_data(&mut self, now: Time, info: &DataInfo, bytes: u32) -> bool {
        if !self.rx.on_data(now, info, bytes) {
            return false;
        }
        match self.highest {
            Some(h) if info.seq <= h => {}
            Some(h) => {
                if self.nack && info.seq > h + 1 {
                    // At most one NACK's worth: the newest gaps matter most.
                    let lo = (h + 1).max(info.seq.saturating_sub(MAX_NACK_SEQS as u64));
                    self.missing.extend(lo..info.seq);
                }
                self.highest = Some(info.seq);
            }
            None => self.highest = Some(info.seq),
        }
        true
    }

    /// Queue due feedback and NACKs.
    pub(crate) fn poll(&mut self, now: Time, out: &mut VecDeque<Transmit>) {
        while let Some(fb) = self.rx.poll_feedback(now) {
            out.push_back(Transmit {
                to: self.from,
                payload: emit_tfrc_feedback(self.flow, &fb),
            });
        }
        if !self.missing.is_empty() {
            let seqs = std::mem::take(&mut self.missing);
            out.push_back(Transmit {
                to: self.from,
                payload: emit_control(self.flow, &Control::Nack(seqs)),
            });
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Time> {
        self.rx.poll_timeout()
    }
}
