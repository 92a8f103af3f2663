//! The Celerity peer's per-packet work: parsing and emitting a data packet,
//! and whole conferences of peers on an ideal network, where every
//! datagram a peer handles is parsed, measured (loss, one-way delay),
//! delivered or forwarded down its tree, policed by the head's bucket and
//! emitted again, with the control loop, the reports and the repacking
//! running beside it.
//!
//! No public crate speaks Celerity's wire format or forwards along its
//! self-routing trees, so the parse is set against the floor any parser of
//! a datagram stands on: copying it (`memcpy`).
//!
//! - `celerity/parse/n<N>` and `celerity/emit/n<N>`: a data packet of a
//!   conference of N members carrying 1400 bytes of media, its subtree
//!   (the relay and the N − 2 receivers below it) and a rate update riding
//!   along; throughput in packets per second.
//! - `celerity/conference/n<N>`: one simulated second of N peers, every
//!   datagram delivered 1 ms after it leaves, each session capped at
//!   1 Mbit/s, after 20 simulated seconds of warm-up; throughput in
//!   datagrams handled per second of CPU (all peers together).
//!
//! Run with `cargo bench -p meshcast-proto --bench celerity`; the figures
//! are in docs/celerity.md ("Planner speed").

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use meshcast_core::{Addr, Duration, Endpoint, FlowId, NodeId, Rate, Time};
use meshcast_plan::Model;
use meshcast_proto::celerity::wire::{self, Control, DataHeader, LinkHeader, TreeEntry};
use meshcast_proto::celerity::{CelerityConfig, CelerityParams, CelerityPeer};

/// A data packet of session 0 arriving at member 1, which forwards it to
/// every other member.
fn data_packet(n: usize) -> Vec<u8> {
    let all = ((1u32 << n) - 1) as u16;
    let header = DataHeader {
        session: 0,
        media_seq: 12_345,
        origin_ts_us: 1_000_000,
        uprime: 0.07,
        relay_side: all & !1,
        recv_side: all & !1,
        entries: vec![TreeEntry {
            member: 1,
            children: all & !0b11,
        }],
        padding: false,
        burst_wait_us: 0,
        queued_us: 0,
        bundle: false,
        ahead: false,
    };
    let mut control = Vec::new();
    let rates = (0..n as u8).map(|m| (m, 230_000)).collect();
    let update = Control::RateUpdate {
        echo_ts_us: 999_000,
        hold_us: 1_200,
        rates,
    };
    wire::emit_control(&update, &mut control);
    let link = LinkHeader {
        hop_seq: 77,
        hop_ts_us: 1_000_400,
    };
    wire::emit_data_packet(link, &header, &control, &[0x5a; 1400])
}

/// A datagram on its way: (arrival, order sent, from, to, bytes).
type InFlight = (Time, u64, usize, usize, Vec<u8>);

/// N peers on an ideal network: every datagram arrives 1 ms after it
/// leaves.
struct Conference {
    peers: Vec<CelerityPeer>,
    inflight: BinaryHeap<Reverse<InFlight>>,
    sent: u64,
    now: Time,
    handled: u64,
}

impl Conference {
    fn new(n: usize) -> Conference {
        let participants: Vec<Addr> = (0..n).map(|i| Addr::new(NodeId(i as u32), 7)).collect();
        let peers = (0..n)
            .map(|me| {
                let params = CelerityParams {
                    max_rate: Some(Rate::from_kbps_f64(1000.0)),
                    ..CelerityParams::default()
                };
                CelerityPeer::new(CelerityConfig {
                    me,
                    participants: participants.clone(),
                    flows: (0..n).map(|i| FlowId(i as u32)).collect(),
                    model: Model::Deep,
                    params,
                })
                .expect("a valid configuration")
            })
            .collect();
        Conference {
            peers,
            inflight: BinaryHeap::new(),
            sent: 0,
            now: Time::ZERO,
            handled: 0,
        }
    }

    /// Run for `d`, a millisecond at a time.
    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            let now = self.now;
            for (i, p) in self.peers.iter_mut().enumerate() {
                if p.poll_timeout().is_some_and(|t| t <= now) {
                    p.handle_timeout(now);
                }
                while let Some(t) = p.poll_transmit(now) {
                    self.sent += 1;
                    let at = now + Duration::from_millis(1);
                    let to = t.to.node.index();
                    self.inflight
                        .push(Reverse((at, self.sent, i, to, t.payload)));
                }
                while p.poll_event().is_some() {}
            }
            while self.inflight.peek().is_some_and(|x| x.0.0 <= now) {
                let Reverse((_, _, from, to, bytes)) = self.inflight.pop().expect("peeked");
                let from = Addr::new(NodeId(from as u32), 7);
                self.peers[to].handle_datagram(now, from, &bytes);
                self.handled += 1;
            }
            self.now = now + Duration::from_millis(1);
        }
    }
}

fn bench(c: &mut Criterion) {
    for n in [4, 8, 16] {
        let packet = data_packet(n);
        let mut g = c.benchmark_group(format!("celerity/parse/n{n}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("meshcast", |b| {
            b.iter(|| wire::parse(black_box(&packet)).is_ok())
        });
        g.bench_function("memcpy", |b| b.iter(|| black_box(&packet).to_vec()));
        g.finish();

        let wire::Packet::Data {
            link,
            header,
            media,
            ..
        } = wire::parse(&packet).expect("a valid packet")
        else {
            unreachable!("a data packet")
        };
        let mut g = c.benchmark_group(format!("celerity/emit/n{n}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("meshcast", |b| {
            b.iter(|| wire::emit_data_packet(link, black_box(&header), &[], media))
        });
        g.finish();
    }
    for n in [4, 8] {
        let mut conf = Conference::new(n);
        conf.run_for(Duration::from_secs(20));
        let before = conf.handled;
        conf.run_for(Duration::from_secs(1));
        let per_second = conf.handled - before;
        let mut g = c.benchmark_group(format!("celerity/conference/n{n}"));
        g.throughput(Throughput::Elements(per_second));
        g.sample_size(20);
        g.bench_function("one_second", |b| {
            b.iter(|| conf.run_for(Duration::from_secs(1)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
