//! Cross-traffic generators and the sink that measures them.
//!
//! A [`TrafficSource`] sends datagrams of a fixed size to one destination,
//! either at a constant bit rate ([`Pattern::Cbr`]) or in on/off bursts whose
//! period lengths are drawn from an exponential or Pareto distribution
//! ([`Pattern::OnOff`], as ns-2/ns-3's on/off application). A
//! [`TrafficSink`] receives them and reports each as an
//! [`Event::FlowReceived`], so drivers can measure goodput, loss and one-way
//! delay.
//!
//! # Wire format (packet type 1, [`PacketType::Traffic`])
//!
//! After the common header: `flow` (u32), `seq` (u32, from 0), `sent_ns`
//! (u64, the source's clock at sending). The rest of the datagram up to the
//! configured packet size is zero padding. The whole UDP payload, header
//! included, is the flow's payload: a 1000-byte CBR packet counts 1000
//! payload bytes.
//!
//! # Start phase
//!
//! The first packet leaves at `start + φ` with φ drawn uniformly from
//! `[0, packet interval)` by the source's seeded generator. Strictly
//! periodic sources that start in the same instant lock their phases at a
//! drop-tail queue, and then the queue's tie-breaking, not their offered
//! load, decides who gets through (the "phase effects" of Floyd & Jacobson,
//! 1992). A random phase removes that artefact; [`SourceConfig::exact_phase`]
//! turns it off for tests that need exact send times.
//!
//! Even with random phases, strictly periodic flows that overload a
//! drop-tail queue do not share it in proportion to their offered loads:
//! each departure frees one slot, the first arrival after it takes the
//! slot, and the flow with the shorter gaps is first more often than its
//! share (for two flows with intervals I₁ < I₂ the slower one wins about
//! I₁ / 2I₂ of the slots). That is how a real drop-tail queue treats
//! periodic sources. [`Pattern::Poisson`] gives the memoryless arrivals
//! under which the proportional share holds.

use crate::wire::{COMMON_HEADER_LEN, CommonHeader, PacketType, WireError, be_u32, be_u64};
use meshcast_core::rng::{Rng, rng_from_seed};
use meshcast_core::{Addr, Duration, Endpoint, Event, FlowId, Rate, Time, Transmit};
use rand::RngExt as _;
use rand_distr::{Distribution, Exp, Pareto};
use std::collections::VecDeque;
use thiserror::Error;

/// Bytes of a traffic packet's headers (common header + traffic header):
/// the smallest packet size a source accepts.
pub const TRAFFIC_HEADER_LEN: usize = COMMON_HEADER_LEN + 16;

/// The largest UDP payload over IPv4.
pub const MAX_PACKET_BYTES: u32 = 65_507;

/// The port drivers bind a [`TrafficSink`] to on every node.
pub const SINK_PORT: u16 = 9;

/// A parsed traffic packet header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TrafficHeader {
    /// The flow it belongs to.
    pub flow: FlowId,
    /// Sequence number within the flow, from 0.
    pub seq: u32,
    /// The source's clock when it was sent.
    pub sent_at: Time,
}

impl TrafficHeader {
    /// Parse a traffic packet (common header included).
    pub fn parse(buf: &[u8]) -> Result<TrafficHeader, WireError> {
        let common = CommonHeader::parse(buf)?;
        if common.packet_type != PacketType::Traffic {
            return Err(WireError::WrongType {
                expected: PacketType::Traffic,
                got: common.packet_type,
            });
        }
        if buf.len() < TRAFFIC_HEADER_LEN {
            return Err(WireError::Truncated {
                needed: TRAFFIC_HEADER_LEN,
                got: buf.len(),
            });
        }
        Ok(TrafficHeader {
            flow: FlowId(be_u32(buf, 4)),
            seq: be_u32(buf, 8),
            sent_at: Time::from_nanos(be_u64(buf, 12)),
        })
    }

    /// Write the headers into the first [`TRAFFIC_HEADER_LEN`] bytes of
    /// `out`; returns `None` if `out` is shorter.
    pub fn emit(&self, out: &mut [u8]) -> Option<()> {
        let h: &mut [u8; TRAFFIC_HEADER_LEN] = out.first_chunk_mut()?;
        let (common, body) = h.split_at_mut(COMMON_HEADER_LEN);
        let common: &mut [u8; COMMON_HEADER_LEN] = common.try_into().ok()?;
        CommonHeader {
            packet_type: PacketType::Traffic,
        }
        .emit(common);
        body[0..4].copy_from_slice(&self.flow.0.to_be_bytes());
        body[4..8].copy_from_slice(&self.seq.to_be_bytes());
        body[8..16].copy_from_slice(&self.sent_at.as_nanos().to_be_bytes());
        Some(())
    }
}

/// How long on and off periods last.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum PeriodDistribution {
    /// Exponentially distributed with the given means.
    Exponential,
    /// Pareto distributed with the given means and this shape (> 1, so that
    /// the mean exists); scale = mean · (shape − 1) / shape.
    Pareto {
        /// The shape parameter α.
        shape: f64,
    },
}

/// When a [`TrafficSource`] sends.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Pattern {
    /// A packet every `packet_bytes · 8 / rate`, from start to stop.
    Cbr,
    /// Packets at `rate` on average with exponentially distributed gaps
    /// (a Poisson process): the arrival model under which flows sharing a
    /// full drop-tail queue get shares in proportion to their offered loads
    /// (arrivals see time averages). Periodic flows do not: see the module
    /// documentation.
    Poisson,
    /// Alternating on periods (sending as [`Pattern::Cbr`]) and silent off
    /// periods, starting with an on period.
    OnOff {
        /// Mean length of an on period.
        mean_on: Duration,
        /// Mean length of an off period.
        mean_off: Duration,
        /// Distribution of both period lengths.
        distribution: PeriodDistribution,
    },
}

/// Configuration of a [`TrafficSource`].
#[derive(Clone, PartialEq, Debug)]
pub struct SourceConfig {
    /// The flow id it stamps on its packets and events.
    pub flow: FlowId,
    /// Where it sends.
    pub to: Addr,
    /// Sending rate (while on), counting the whole UDP payload.
    pub rate: Rate,
    /// Size of every datagram's UDP payload, headers included.
    pub packet_bytes: u32,
    /// When the first packet leaves.
    pub start: Time,
    /// No packet leaves at or after this instant.
    pub stop: Time,
    /// The sending pattern.
    pub pattern: Pattern,
    /// Seed of the source's generator (start phase, on/off periods).
    pub seed: u64,
    /// Send the first packet exactly at `start` rather than at a random
    /// phase within the first packet interval.
    pub exact_phase: bool,
}

/// Why a [`SourceConfig`] was rejected.
#[derive(Clone, PartialEq, Debug, Error)]
pub enum SourceConfigError {
    /// The rate is zero.
    #[error("rate must be positive")]
    ZeroRate,
    /// The packet cannot hold the headers or exceeds a UDP datagram.
    #[error("packet size {0} bytes outside {TRAFFIC_HEADER_LEN}..={MAX_PACKET_BYTES}")]
    PacketSize(u32),
    /// Stop is not after start.
    #[error("stop must be after start")]
    EmptyInterval,
    /// An on/off mean is zero.
    #[error("on and off periods must have positive means")]
    ZeroPeriod,
    /// A Pareto shape of 1 or less (infinite mean) or not finite.
    #[error("Pareto shape must be finite and greater than 1, got {0}")]
    ParetoShape(f64),
}

/// Samples period lengths for an on/off source.
#[derive(Debug)]
struct Periods {
    on: PeriodSampler,
    off: PeriodSampler,
}

#[derive(Debug)]
enum PeriodSampler {
    Exp(Exp<f64>),
    Pareto(Pareto<f64>),
}

impl PeriodSampler {
    fn new(mean: Duration, dist: PeriodDistribution) -> Result<Self, SourceConfigError> {
        let mean_s = mean.as_secs_f64();
        if mean_s <= 0.0 {
            return Err(SourceConfigError::ZeroPeriod);
        }
        match dist {
            PeriodDistribution::Exponential => Exp::new(1.0 / mean_s)
                .map(PeriodSampler::Exp)
                .map_err(|_| SourceConfigError::ZeroPeriod),
            PeriodDistribution::Pareto { shape } => {
                if !(shape.is_finite() && shape > 1.0) {
                    return Err(SourceConfigError::ParetoShape(shape));
                }
                Pareto::new(mean_s * (shape - 1.0) / shape, shape)
                    .map(PeriodSampler::Pareto)
                    .map_err(|_| SourceConfigError::ParetoShape(shape))
            }
        }
    }

    fn sample(&self, rng: &mut Rng) -> Duration {
        let s = match self {
            PeriodSampler::Exp(d) => d.sample(rng),
            PeriodSampler::Pareto(d) => d.sample(rng),
        };
        Duration::from_secs_f64(s)
    }
}

/// A constant-bit-rate or on/off traffic generator.
#[derive(Debug)]
pub struct TrafficSource {
    cfg: SourceConfig,
    /// Start of the current on period (CBR: the start).
    burst_start: Time,
    /// End of the current on period (CBR: the stop).
    burst_end: Time,
    /// Packets sent in the current on period.
    burst_sent: u64,
    /// When the next packet or period change is due.
    next: Option<Time>,
    seq: u32,
    periods: Option<Periods>,
    /// Gap distribution of a Poisson source.
    poisson_gap: Option<Exp<f64>>,
    last_sent: Option<Time>,
    rng: Rng,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl TrafficSource {
    /// A source for `cfg`, validated.
    pub fn new(cfg: SourceConfig) -> Result<TrafficSource, SourceConfigError> {
        if cfg.rate == Rate::ZERO {
            return Err(SourceConfigError::ZeroRate);
        }
        if !(TRAFFIC_HEADER_LEN as u32..=MAX_PACKET_BYTES).contains(&cfg.packet_bytes) {
            return Err(SourceConfigError::PacketSize(cfg.packet_bytes));
        }
        if cfg.stop <= cfg.start {
            return Err(SourceConfigError::EmptyInterval);
        }
        let periods = match cfg.pattern {
            Pattern::Cbr | Pattern::Poisson => None,
            Pattern::OnOff {
                mean_on,
                mean_off,
                distribution,
            } => Some(Periods {
                on: PeriodSampler::new(mean_on, distribution)?,
                off: PeriodSampler::new(mean_off, distribution)?,
            }),
        };
        let mut rng = rng_from_seed(cfg.seed);
        let interval_ns =
            u128::from(cfg.packet_bytes) * 8 * 1_000_000_000 / u128::from(cfg.rate.as_bps());
        let phase = if cfg.exact_phase || interval_ns == 0 {
            Duration::ZERO
        } else {
            let ns = u64::try_from(interval_ns).unwrap_or(u64::MAX);
            Duration::from_nanos(rng.random_range(0..ns))
        };
        let first = cfg.start.saturating_add(phase);
        let poisson_gap = match cfg.pattern {
            Pattern::Poisson => {
                Some(Exp::new(1e9 / interval_ns as f64).map_err(|_| SourceConfigError::ZeroRate)?)
            }
            _ => None,
        };
        let burst_end = match periods.as_ref() {
            None => cfg.stop,
            Some(p) => first.saturating_add(p.on.sample(&mut rng)).min(cfg.stop),
        };
        let mut src = TrafficSource {
            burst_start: first,
            burst_end,
            burst_sent: 0,
            next: None,
            seq: 0,
            periods,
            poisson_gap,
            last_sent: None,
            rng,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            cfg,
        };
        src.schedule();
        Ok(src)
    }

    /// The instant of the `k`-th packet of the current burst: periodic
    /// times are computed from the burst start so that rounding never
    /// accumulates; Poisson times add an exponential gap to the last one.
    fn send_time(&mut self, k: u64) -> Time {
        if k == 0 {
            return self.burst_start;
        }
        if let Some(gap) = &self.poisson_gap {
            let prev = self.last_sent.unwrap_or(self.burst_start);
            return prev.saturating_add(Duration::from_secs_f64(gap.sample(&mut self.rng)));
        }
        let bits = u128::from(k) * u128::from(self.cfg.packet_bytes) * 8;
        let ns = bits * 1_000_000_000 / u128::from(self.cfg.rate.as_bps());
        self.burst_start
            .saturating_add(Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)))
    }

    fn emit_packet(&mut self, at: Time) {
        let mut payload = vec![0u8; self.cfg.packet_bytes as usize];
        let header = TrafficHeader {
            flow: self.cfg.flow,
            seq: self.seq,
            sent_at: at,
        };
        // Cannot fail: packet_bytes >= TRAFFIC_HEADER_LEN was checked in `new`.
        let _ = header.emit(&mut payload);
        self.seq = self.seq.wrapping_add(1);
        self.transmits.push_back(Transmit {
            to: self.cfg.to,
            payload,
        });
        self.events.push_back(Event::FlowSent {
            flow: self.cfg.flow,
            payload_bytes: self.cfg.packet_bytes,
        });
    }

    /// Work out `next` after the current burst's `burst_sent` packets.
    fn schedule(&mut self) {
        loop {
            let t = self.send_time(self.burst_sent);
            if t < self.burst_end {
                self.next = Some(t);
                return;
            }
            // The on period is over: draw an off period, then the next on.
            let Some(p) = self.periods.as_ref() else {
                self.next = None;
                return;
            };
            let on_start = self.burst_end.saturating_add(p.off.sample(&mut self.rng));
            if on_start >= self.cfg.stop {
                self.next = None;
                return;
            }
            let on_end = on_start
                .saturating_add(p.on.sample(&mut self.rng))
                .min(self.cfg.stop);
            self.burst_start = on_start;
            self.burst_end = on_end;
            self.burst_sent = 0;
        }
    }
}

impl Endpoint for TrafficSource {
    fn handle_datagram(&mut self, _now: Time, _from: Addr, _payload: &[u8]) {
        // A generator ignores anything sent to it.
    }

    fn handle_timeout(&mut self, now: Time) {
        while let Some(t) = self.next {
            if t > now {
                break;
            }
            if t < self.burst_end {
                self.emit_packet(t);
                self.last_sent = Some(t);
                self.burst_sent += 1;
            }
            self.schedule();
        }
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// Receives traffic packets of any flow and reports each one.
///
/// Datagrams that are not well-formed traffic packets are counted in
/// [`TrafficSink::malformed`] and otherwise ignored.
#[derive(Debug, Default)]
pub struct TrafficSink {
    events: VecDeque<Event>,
    malformed: u64,
}

impl TrafficSink {
    /// A sink.
    pub fn new() -> TrafficSink {
        TrafficSink::default()
    }

    /// Datagrams that failed to parse.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }
}

impl Endpoint for TrafficSink {
    fn handle_datagram(&mut self, _now: Time, _from: Addr, payload: &[u8]) {
        match TrafficHeader::parse(payload) {
            Ok(h) => self.events.push_back(Event::FlowReceived {
                flow: h.flow,
                payload_bytes: u32::try_from(payload.len()).unwrap_or(u32::MAX),
                sent_at: h.sent_at,
            }),
            Err(_) => self.malformed += 1,
        }
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

#[cfg(test)]
#[path = "traffic_tests.rs"]
mod tests;
