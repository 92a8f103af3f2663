//! MSB roles driven directly (no simulator): source, booster and receiver
//! joined by fixed-delay pipes, with chosen data packets dropped.

use super::*;
use crate::wire::{CommonHeader, PacketType};
use meshcast_core::{Addr, Endpoint, Event, FlowId, NodeId, Time};
use std::collections::BTreeMap;

const FLOW: FlowId = FlowId(3);

fn addr(n: u32) -> Addr {
    Addr::new(NodeId(n), 100)
}

/// Run endpoints (by address) for `secs`, every datagram taking 50 ms;
/// `drop(k)` drops the k-th data packet sent (from 0, over all hops).
/// Returns the receiver's events.
fn run(
    mut eps: BTreeMap<Addr, Box<dyn Endpoint>>,
    secs: u64,
    drop: &dyn Fn(u64) -> bool,
) -> Vec<Event> {
    let delay = Duration::from_millis(50);
    let mut flight: Vec<(Time, Addr, Addr, Vec<u8>)> = Vec::new();
    let mut events = Vec::new();
    let mut data = 0u64;
    let mut now = Time::ZERO;
    let end = Time::from_secs(secs);
    while now < end {
        for (&a, ep) in eps.iter_mut() {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
            while let Some(t) = ep.poll_transmit(now) {
                let is_data = CommonHeader::parse(&t.payload)
                    .is_ok_and(|h| h.packet_type == PacketType::TfrcData);
                if is_data {
                    data += 1;
                    if drop(data - 1) {
                        continue;
                    }
                }
                flight.push((now + delay, a, t.to, t.payload));
            }
            while let Some(e) = ep.poll_event() {
                if a == addr(2) {
                    events.push(e);
                }
            }
        }
        let (due, rest): (Vec<_>, Vec<_>) = flight.into_iter().partition(|f| f.0 <= now);
        flight = rest;
        for (_, from, to, p) in due {
            if let Some(ep) = eps.get_mut(&to) {
                ep.handle_datagram(now, from, &p);
            }
        }
        now += Duration::from_millis(1);
    }
    events
}

fn frames(ev: &[Event]) -> Vec<(u8, u8)> {
    ev.iter()
        .filter_map(|e| match e {
            Event::FramePresented {
                layers_min,
                layers_max,
                ..
            } => Some((*layers_min, *layers_max)),
            _ => None,
        })
        .collect()
}

fn retransmitted(ev: &[Event]) -> usize {
    ev.iter()
        .filter(|e| {
            matches!(
                e,
                Event::MediaReceived {
                    retransmitted: true,
                    ..
                }
            )
        })
        .count()
}

fn source(to: Addr, stream: LayeredConfig) -> Box<dyn Endpoint> {
    Box::new(
        MsbSource::new(MsbSourceConfig {
            flow: FLOW,
            to,
            stream,
            start: Time::ZERO,
            stop: Time::from_secs(20),
        })
        .expect("valid"),
    )
}

#[test]
fn an_unconstrained_path_delivers_every_layer() {
    let stream = LayeredConfig::default();
    let mut eps: BTreeMap<Addr, Box<dyn Endpoint>> = BTreeMap::new();
    eps.insert(addr(0), source(addr(2), stream));
    eps.insert(
        addr(2),
        Box::new(MsbReceiver::new(FLOW, addr(0), stream).expect("valid")),
    );
    let ev = run(eps, 12, &|_| false);
    let f = frames(&ev);
    // Frames presented up to 11.5 s; after slow start every one is whole.
    assert!(f.len() >= 110, "{}", f.len());
    assert!(f[50..].iter().all(|&l| l == (16, 16)), "{:?}", &f[50..60]);
}

#[test]
fn a_booster_retransmits_lost_layers_in_time() {
    let stream = LayeredConfig::default();
    // Once steady, drop one data packet in `every` (on either hop); several
    // periods, so the drops hit different layers, hops and moments.
    for every in [280, 290, 300, 310, 320, 330] {
        let mut eps: BTreeMap<Addr, Box<dyn Endpoint>> = BTreeMap::new();
        eps.insert(addr(0), source(addr(1), stream));
        eps.insert(
            addr(1),
            Box::new(MsbBooster::new(FLOW, addr(0), addr(2), stream, Time::ZERO).expect("valid")),
        );
        eps.insert(
            addr(2),
            Box::new(MsbReceiver::new(FLOW, addr(1), stream).expect("valid")),
        );
        let ev = run(eps, 12, &|k| k > 1000 && k % every == 0);
        let f = frames(&ev);
        assert!(retransmitted(&ev) > 0, "1 in {every}: no retransmission");
        // The layers below the secure level (0.8 of the average top layer)
        // are cached: every loss among them comes back, so a late frame
        // may have a gap only above 0.8 of its top layer. (A loss also
        // makes TFRC cut the hop's rate, and the next frame may carry fewer
        // layers; that is the stream adapting, not a lost layer.)
        let late = &f[f.len() - 30..];
        assert!(
            late.iter()
                .all(|&(min, max)| f64::from(min) >= (0.8 * f64::from(max)).floor()),
            "1 in {every}: {late:?}"
        );
        let mean = late.iter().map(|&(min, _)| f64::from(min)).sum::<f64>() / 30.0;
        assert!(mean >= 12.0, "1 in {every}: {mean:.2} layers: {late:?}");
    }
}

#[test]
fn without_retransmission_a_loss_cuts_the_frame() {
    let stream = LayeredConfig {
        retransmit: false,
        ..LayeredConfig::default()
    };
    let mut eps: BTreeMap<Addr, Box<dyn Endpoint>> = BTreeMap::new();
    eps.insert(addr(0), source(addr(2), stream));
    eps.insert(
        addr(2),
        Box::new(MsbReceiver::new(FLOW, addr(0), stream).expect("valid")),
    );
    let ev = run(eps, 12, &|k| k > 1000 && k % 50 == 0);
    assert_eq!(retransmitted(&ev), 0);
    let f = frames(&ev);
    // Some frame lost a middle layer: its minimum is below its maximum.
    assert!(f.iter().any(|&(min, max)| min < max), "no cut frame");
}

#[test]
fn bad_streams_are_refused() {
    for bad in [
        LayeredConfig {
            layers: 0,
            ..LayeredConfig::default()
        },
        LayeredConfig {
            packet_bytes: 20,
            ..LayeredConfig::default()
        },
        LayeredConfig {
            alpha_max: 1.5,
            ..LayeredConfig::default()
        },
    ] {
        assert!(MsbReceiver::new(FLOW, addr(0), bad).is_err());
    }
    assert_eq!(LayeredConfig::default().max_rate().as_bps(), 1_280_000);
}

/// A hop sender of `role` whose TFRC allows `per_frame` packets of the
/// default stream per frame: one feedback at t = 250 ms with the loss event
/// rate at which the equation gives that rate (no further feedback, so the
/// rate holds; the no-feedback timer is never run).
fn hop_at(per_frame: f64, role: hop::HopRole) -> hop::HopSender {
    use meshcast_control::tfrc::{Feedback, loss_rate_for};
    let stream = LayeredConfig::default();
    let s = f64::from(stream.packet_bytes);
    let x = per_frame * s * f64::from(stream.fps);
    let mut h = hop::HopSender::new(FLOW, addr(2), stream, Time::ZERO, role);
    let rtt = Time::from_millis(250);
    h.on_feedback(
        rtt,
        &Feedback {
            echo_sent_at: Time::ZERO,
            delay: Duration::ZERO,
            x_recv: meshcast_core::Rate::from_bps(1_000_000_000),
            p: loss_rate_for(s, 0.25, x),
            loss_events: 1,
        },
    );
    let got = h.sender().rate().as_bps() as f64 / 8.0 / s / f64::from(stream.fps);
    assert!((got - per_frame).abs() < 0.01, "{got} packets per frame");
    h
}

/// Feed `frames` frames of `layers` one-packet layers, one every 100 ms
/// from t = 250 ms, pumping every ms; returns the hop's counters.
fn send_frames(h: &mut hop::HopSender, frames: u32, layers: u8) -> HopCounters {
    let stream = LayeredConfig::default();
    let media = vec![0u8; (stream.packet_bytes - LayeredConfig::MIN_PACKET_BYTES) as usize];
    let (mut out, mut ev) = (
        std::collections::VecDeque::new(),
        std::collections::VecDeque::new(),
    );
    let start = Time::from_millis(250);
    for ms in 0..u64::from(frames) * 100 {
        let now = start + Duration::from_millis(ms);
        if ms % 100 == 0 {
            let frame = (ms / 100) as u32;
            for layer in 1..=layers {
                h.enqueue(hop::MediaPkt {
                    h: wire::MediaHeader {
                        frame,
                        layer,
                        index: 0,
                        retx: 0,
                        generated_at: now,
                        deadline: now + stream.probation,
                    },
                    media: media.clone(),
                });
            }
        }
        h.pump(now, &mut out, &mut ev);
    }
    h.counters()
}

#[test]
fn a_budget_cut_frame_passes_its_remainder_to_the_next() {
    // 4.375 packets per frame allowed; first transmissions get 80%: 3.5.
    // Whole-packet budgets alone would send 3 of every frame's 16 layers;
    // with the remainder carried the frames alternate 3 and 4.
    let mut h = hop_at(4.375, hop::HopRole::Source);
    let c = send_frames(&mut h, 8, 16);
    assert_eq!(c.sent, 28, "{c:?}");
}

#[test]
fn a_booster_forwards_into_the_unused_retransmission_share() {
    // The source cut frames to 4 layers; the booster's own TFRC allows
    // 4.375 packets per frame. Eq. (3) alone would leave it 3.5 for first
    // transmissions and drop a layer of every other frame; with nothing to
    // retransmit it forwards all four.
    let mut h = hop_at(4.375, hop::HopRole::Booster);
    let c = send_frames(&mut h, 8, 4);
    assert_eq!((c.sent, c.dropped), (32, 0), "{c:?}");
    // The source itself keeps the reserve: 3.5 of the 4 on average.
    let mut h = hop_at(4.375, hop::HopRole::Source);
    let c = send_frames(&mut h, 8, 4);
    assert_eq!((c.sent, c.dropped), (28, 4), "{c:?}");
}
