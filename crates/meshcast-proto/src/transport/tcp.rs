//! The TCP NewReno model as a bulk source and a sink.

use super::Lifetime;
use super::wire::{emit_tcp_ack, emit_tcp_segment, parse_tcp_ack, parse_tcp_segment};
use meshcast_control::tcp::{TcpConfig, TcpReceiver, TcpSender, TcpStats};
use meshcast_core::{Addr, Endpoint, Event, FlowId, Time, Transmit};
use std::collections::{BTreeMap, VecDeque};

/// Configuration of a [`TcpSource`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSourceConfig {
    /// The flow id on its segments and events.
    pub flow: FlowId,
    /// The sink's address.
    pub to: Addr,
    /// The model's parameters (segment size, RTO bounds, amount of data).
    pub tcp: TcpConfig,
    /// When the first segment leaves.
    pub start: Time,
    /// The flow stops (sends nothing more, retransmissions included) at
    /// this instant.
    pub stop: Time,
}

/// A TCP NewReno bulk sender.
#[derive(Debug)]
pub struct TcpSource {
    cfg: TcpSourceConfig,
    tx: TcpSender,
    life: Lifetime,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl TcpSource {
    /// A source that starts at `cfg.start`.
    pub fn new(cfg: TcpSourceConfig) -> TcpSource {
        TcpSource {
            cfg,
            tx: TcpSender::new(cfg.tcp),
            life: Lifetime::new(cfg.start, cfg.stop),
            out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// The model's counters.
    pub fn stats(&self) -> TcpStats {
        self.tx.stats()
    }

    fn pump(&mut self, now: Time) {
        if !self.life.is_active() {
            return;
        }
        while let Some(seg) = self.tx.poll_segment(now) {
            let payload = emit_tcp_segment(self.cfg.flow, &seg, self.cfg.tcp.segment_bytes);
            if !seg.retransmission {
                self.events.push_back(Event::FlowSent {
                    flow: self.cfg.flow,
                    payload_bytes: payload.len() as u32,
                });
            }
            self.out.push_back(Transmit {
                to: self.cfg.to,
                payload,
            });
        }
    }
}

impl Endpoint for TcpSource {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        if from != self.cfg.to || !self.life.is_live() {
            return;
        }
        if let Ok((flow, ack)) = parse_tcp_ack(payload)
            && flow == self.cfg.flow
        {
            self.tx.on_ack(now, &ack);
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
        self.life.timeout(self.tx.poll_timeout())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// The receiving end of any number of [`TcpSource`] flows.
#[derive(Debug, Default)]
pub struct TcpSink {
    flows: BTreeMap<(Addr, FlowId), TcpReceiver>,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl TcpSink {
    /// A sink with no flows yet.
    pub fn new() -> TcpSink {
        TcpSink::default()
    }
}

impl Endpoint for TcpSink {
    fn handle_datagram(&mut self, _now: Time, from: Addr, payload: &[u8]) {
        let Ok((flow, seg)) = parse_tcp_segment(payload) else {
            return;
        };
        let rx = self.flows.entry((from, flow)).or_default();
        let Some((ack, fresh)) = rx.on_segment(&seg) else {
            return;
        };
        if fresh {
            self.events.push_back(Event::FlowReceived {
                flow,
                payload_bytes: payload.len() as u32,
                sent_at: seg.sent_at,
            });
        }
        self.out.push_back(Transmit {
            to: from,
            payload: emit_tcp_ack(flow, &ack),
        });
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
