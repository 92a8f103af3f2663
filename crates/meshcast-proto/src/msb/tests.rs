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
fn a_booster_retransmits_a_lost_base_layer_in_time() {
    let stream = LayeredConfig::default();
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
    // Once steady, drop one data packet in 300 (on either hop).
    let ev = run(eps, 12, &|k| k > 1000 && k % 300 == 0);
    let f = frames(&ev);
    assert!(retransmitted(&ev) > 0, "no retransmission");
    // The stream settles at about 13 layers; the layers below the secure
    // level (0.8 · 13 = 10.4) are cached, so a loss among them comes back
    // and no late frame has fewer than 10 complete layers.
    let late = &f[f.len() - 30..];
    assert!(late.iter().all(|&(min, _)| min >= 10), "{late:?}");
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
