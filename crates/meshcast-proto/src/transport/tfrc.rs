//! TFRC flows: a source whose application is bulk or rate-limited, and a
//! sink.

use super::Lifetime;
use super::wire::{
    TFRC_DATA_HEADER_LEN, emit_tfrc_data, emit_tfrc_feedback, parse_tfrc_data, parse_tfrc_feedback,
};
use meshcast_control::tfrc::{Mode, ReceiverConfig, SenderConfig, TfrcReceiver, TfrcSender};
use meshcast_core::{Addr, Endpoint, Event, FlowId, Rate, Time, Transmit};
use std::collections::{BTreeMap, VecDeque};

/// What the application behind a [`TfrcSource`] supplies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Supply {
    /// A packet at every send opportunity.
    Bulk,
    /// Packets at this rate at most (whole datagrams counted), with up to
    /// two packets of unused allowance saved. The application breaks slow
    /// start (MSB `break_ss`) once TFRC allows its rate.
    Rate(Rate),
}

/// Configuration of a [`TfrcSource`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcSourceConfig {
    /// The flow id on its packets and events.
    pub flow: FlowId,
    /// The sink's address.
    pub to: Addr,
    /// Size of every datagram's UDP payload, TFRC header included; also
    /// TFRC's segment size `s`.
    pub packet_bytes: u32,
    /// The application's supply.
    pub supply: Supply,
    /// When the flow starts.
    pub start: Time,
    /// When it stops sending.
    pub stop: Time,
}

/// A TFRC sender with a synthetic application.
#[derive(Debug)]
pub struct TfrcSource {
    cfg: TfrcSourceConfig,
    tx: TfrcSender,
    life: Lifetime,
    credit: f64,
    credit_at: Time,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

/// Most packets one call sends (a guard; pacing normally sends one).
const MAX_BURST: usize = 1024;

impl TfrcSource {
    /// A source that starts at `cfg.start`. `packet_bytes` below the header
    /// size is raised to it.
    pub fn new(mut cfg: TfrcSourceConfig) -> TfrcSource {
        cfg.packet_bytes = cfg.packet_bytes.max(TFRC_DATA_HEADER_LEN as u32);
        let scfg = SenderConfig {
            segment_bytes: cfg.packet_bytes,
            initial_rtt: None,
        };
        TfrcSource {
            tx: TfrcSender::new(scfg, cfg.start),
            cfg,
            life: Lifetime::new(cfg.start, cfg.stop),
            credit: 0.0,
            credit_at: cfg.start,
            out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// The sender's state (rate, RTT, loss event rate).
    pub fn sender(&self) -> &TfrcSender {
        &self.tx
    }

    /// MSB's `get_pkt(rate, mode)` for the synthetic application.
    fn get_pkt(&mut self, now: Time, rate: Rate, mode: Mode) -> bool {
        match self.cfg.supply {
            Supply::Bulk => true,
            Supply::Rate(r) => {
                if mode == Mode::SlowStart && rate >= r {
                    self.tx.break_ss();
                }
                let bytes_per_s = r.as_bps() as f64 / 8.0;
                let s = f64::from(self.cfg.packet_bytes);
                self.credit = (self.credit
                    + bytes_per_s * now.saturating_since(self.credit_at).as_secs_f64())
                .min(2.0 * s);
                self.credit_at = now;
                if self.credit >= s {
                    self.credit -= s;
                    true
                } else {
                    false
                }
            }
        }
    }

    fn pump(&mut self, now: Time) {
        if !self.life.is_active() {
            return;
        }
        for _ in 0..MAX_BURST {
            if self.tx.next_send() > now {
                return;
            }
            if self.get_pkt(now, self.tx.rate(), self.tx.mode()) {
                let n = self.cfg.packet_bytes;
                let info = self.tx.on_sent(now, n);
                // The synthetic application's data is zeros: pad the header
                // in place rather than building a zero body and copying it.
                let mut payload = emit_tfrc_data(self.cfg.flow, &info, &[]);
                payload.resize(n as usize, 0);
                self.events.push_back(Event::FlowSent {
                    flow: self.cfg.flow,
                    payload_bytes: n,
                });
                self.out.push_back(Transmit {
                    to: self.cfg.to,
                    payload,
                });
            } else {
                self.tx.on_declined(now);
            }
        }
    }
}

impl Endpoint for TfrcSource {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        if from != self.cfg.to || !self.life.is_live() {
            return;
        }
        if let Ok((flow, fb)) = parse_tfrc_feedback(payload)
            && flow == self.cfg.flow
        {
            self.tx.on_feedback(now, &fb);
            self.pump(now);
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        if !self.life.tick(now) {
            return;
        }
        self.tx.handle_timeout(now);
        self.pump(now);
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        let t = self.tx.next_send();
        self.life
            .timeout(Some(self.tx.poll_timeout().map_or(t, |n| n.min(t))))
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// The receiving end of any number of [`TfrcSource`] flows.
#[derive(Debug)]
pub struct TfrcSink {
    cfg: ReceiverConfig,
    flows: BTreeMap<(Addr, FlowId), TfrcReceiver>,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl TfrcSink {
    /// A sink whose receivers use `cfg` (its segment size should match the
    /// sources' packet size).
    pub fn new(cfg: ReceiverConfig) -> TfrcSink {
        TfrcSink {
            cfg,
            flows: BTreeMap::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    fn feedback(&mut self, now: Time) {
        for (&(from, flow), rx) in &mut self.flows {
            while let Some(fb) = rx.poll_feedback(now) {
                self.out.push_back(Transmit {
                    to: from,
                    payload: emit_tfrc_feedback(flow, &fb),
                });
            }
        }
    }
}

impl Endpoint for TfrcSink {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        let Ok((flow, info, _body)) = parse_tfrc_data(payload) else {
            return;
        };
        let cfg = self.cfg;
        let rx = self
            .flows
            .entry((from, flow))
            .or_insert_with(|| TfrcReceiver::new(cfg));
        if rx.on_data(now, &info, payload.len() as u32) {
            self.events.push_back(Event::FlowReceived {
                flow,
                payload_bytes: payload.len() as u32,
                sent_at: info.sent_at,
            });
        }
        self.feedback(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.feedback(now);
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.flows.values().filter_map(|r| r.poll_timeout()).min()
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
