//! Four real Celerity peers over real UDP sockets on 127.0.0.1 (issue 5's
//! loopback acceptance): each session is capped by its application at
//! 300 kbit/s, loopback has capacity to spare, and after 20 s every
//! session arrives at every receiver at its cap.

use meshcast_core::{Addr, Event, FlowId, NodeId, Rate, Time};
use meshcast_net::{AddrBook, Node};
use meshcast_plan::Model;
use meshcast_proto::celerity::{CelerityConfig, CelerityParams, CelerityPeer};
use std::time::Duration;

const MEMBERS: usize = 4;
const CAP_KBPS: f64 = 300.0;
const RUN: Duration = Duration::from_secs(20);
/// Goodput is measured over the last eight seconds (of the shared
/// clock): quick start reaches the cap within a few seconds.
const WINDOW: (u64, u64) = (12, 20);

#[tokio::test]
async fn four_celerity_peers_over_loopback_reach_their_rate_cap() {
    let sockets: Vec<std::net::UdpSocket> = (0..MEMBERS)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").expect("bind on loopback"))
        .collect();
    let addrs: Vec<Addr> = (0..MEMBERS)
        .map(|i| Addr::new(NodeId(i as u32), 5000))
        .collect();
    let mut book = AddrBook::new();
    for (a, s) in addrs.iter().zip(&sockets) {
        book.insert(*a, s.local_addr().expect("local address"))
            .expect("distinct addresses");
    }
    let params = CelerityParams {
        max_rate: Some(Rate::from_kbps_f64(CAP_KBPS)),
        ..CelerityParams::default()
    };
    // One epoch for all: the delay bound compares the source's clock with
    // the receiver's. The peers share this process, so the epoch is an
    // instant of the monotonic clock, which setting the wall clock while
    // they are created does not move.
    let epoch = std::time::Instant::now();
    let mut tasks = Vec::new();
    for (me, socket) in sockets.into_iter().enumerate() {
        let cfg = CelerityConfig {
            me,
            participants: addrs.clone(),
            flows: (0..MEMBERS).map(|i| FlowId(i as u32)).collect(),
            model: Model::Deep,
            params: params.clone(),
        };
        let peer = CelerityPeer::new(cfg).expect("valid configuration");
        let node =
            Node::with_epoch_instant(peer, socket, book.clone(), epoch).expect("socket set up");
        tasks.push(tokio::spawn(async move {
            let mut got = [0u64; MEMBERS];
            let from = Time::from_secs(WINDOW.0);
            let to = Time::from_secs(WINDOW.1);
            let done = node
                .run(tokio::time::sleep(RUN), |now, event| {
                    if let Event::FlowReceived {
                        flow,
                        payload_bytes,
                        ..
                    } = event
                        && (from..to).contains(&now)
                    {
                        got[flow.0 as usize] += u64::from(payload_bytes);
                    }
                })
                .await
                .expect("the socket keeps working");
            let late = done.endpoint.counters().late;
            (me, got, done.counters, late)
        }));
    }
    let secs = (WINDOW.1 - WINDOW.0) as f64;
    for task in tasks {
        let (me, got, net, late) = task.await.expect("node task");
        // Loopback delays are microseconds: nothing comes late.
        assert_eq!(late, 0, "receiver {me}");
        assert_eq!(net.unknown_source, 0, "{net:?}");
        assert_eq!(net.unknown_destination, 0, "{net:?}");
        for (m, bytes) in got.iter().enumerate().filter(|&(m, _)| m != me) {
            let kbps = *bytes as f64 * 8.0 / 1e3 / secs;
            eprintln!("session {m} at receiver {me}: {kbps:.1} kbit/s");
            assert!(
                (0.95 * CAP_KBPS..=1.05 * CAP_KBPS).contains(&kbps),
                "session {m} at receiver {me}: {kbps:.1} kbit/s ({net:?})"
            );
        }
    }
}
