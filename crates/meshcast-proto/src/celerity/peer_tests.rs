use super::*;
use meshcast_core::NodeId;

/// (arrival, from, to, bytes)
type InFlight = (Time, usize, usize, Vec<u8>);

fn cfg(n: usize, me: usize) -> CelerityConfig {
    CelerityConfig {
        me,
        participants: (0..n).map(|i| Addr::new(NodeId(i as u32), 7)).collect(),
        flows: (0..n).map(|i| FlowId(i as u32)).collect(),
        model: Model::Deep,
        params: CelerityParams::default(),
    }
}

#[test]
fn bad_configs_are_refused() {
    assert!(CelerityPeer::new(cfg(1, 0)).is_err());
    assert!(CelerityPeer::new(cfg(17, 0)).is_err());
    assert!(CelerityPeer::new(cfg(3, 3)).is_err());
    let mut c = cfg(3, 0);
    c.params.beta = 0.0;
    assert!(CelerityPeer::new(c).is_err());
    for ceiling in [Duration::ZERO, Duration::from_millis(200)] {
        let mut c = cfg(3, 0);
        c.params.queue_ceiling = Some(ceiling);
        assert!(CelerityPeer::new(c).is_err(), "{ceiling:?}");
    }
    let mut c = cfg(3, 0);
    c.params.queue_ceiling = Some(Duration::from_millis(100));
    assert!(CelerityPeer::new(c).is_ok());
    assert!(CelerityPeer::new(cfg(3, 2)).is_ok());
}

#[test]
fn duplicate_window() {
    let mut s = SessionInfo::default();
    assert!(s.first_time(10));
    assert!(!s.first_time(10));
    assert!(s.first_time(12));
    assert!(s.first_time(11));
    assert!(!s.first_time(11));
    assert!(s.first_time(200));
    assert!(!s.first_time(100));
}

#[test]
fn subtrees_route_each_member_once() {
    // s=0 -> 1 -> {2, 3}; 3 -> 4 (a deep tree).
    let tree = Tree {
        occ: vec![
            (0, None),
            (1, Some(0)),
            (2, Some(1)),
            (3, Some(1)),
            (4, Some(3)),
        ],
    };
    let e = subtree_entries(&tree, 1);
    assert_eq!(e.len(), 2);
    assert!(e.contains(&TreeEntry {
        member: 1,
        children: 0b1100
    }));
    assert!(e.contains(&TreeEntry {
        member: 3,
        children: 0b10000
    }));
    assert_eq!(
        relay_subtree(&e, 3),
        vec![TreeEntry {
            member: 3,
            children: 0b10000
        }]
    );
    assert!(relay_subtree(&e, 2).is_empty());
}

/// Four peers on an ideal network (every datagram delivered after 1 ms)
/// reach their direct links' rates and deliver every session to everyone.
#[test]
fn four_peers_on_an_ideal_network_deliver_everything() {
    let n = 4;
    let mut peers: Vec<CelerityPeer> = (0..n)
        .map(|me| {
            let mut c = cfg(n, me);
            c.params.max_rate = Some(Rate::from_kbps_f64(100.0));
            CelerityPeer::new(c).unwrap()
        })
        .collect();
    let mut inflight: std::collections::BinaryHeap<std::cmp::Reverse<InFlight>> =
        Default::default();
    let mut received = vec![0u64; n];
    let mut sent = vec![0u64; n];
    let end = Time::from_secs(20);
    let mut now = Time::ZERO;
    while now < end {
        for (i, p) in peers.iter_mut().enumerate() {
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
            while let Some(t) = p.poll_transmit(now) {
                let to = t.to.node.index();
                inflight.push(std::cmp::Reverse((
                    now + Duration::from_millis(1),
                    i,
                    to,
                    t.payload,
                )));
            }
            while let Some(e) = p.poll_event() {
                match e {
                    Event::FlowSent { flow, .. } if now >= Time::from_secs(10) => {
                        sent[flow.index()] += 1
                    }
                    Event::FlowReceived { flow, sent_at, .. } if sent_at >= Time::from_secs(10) => {
                        received[flow.index()] += 1
                    }
                    _ => {}
                }
            }
        }
        while inflight.peek().is_some_and(|x| x.0.0 <= now) {
            let std::cmp::Reverse((_, from, to, bytes)) = inflight.pop().unwrap();
            let from_addr = peers[from].cfg.participants[from];
            peers[to].handle_datagram(now, from_addr, &bytes);
        }
        now += Duration::from_millis(1);
    }
    for m in 0..n {
        // 100 kbit/s of 1400-byte packets for 10 s: about 89 packets.
        assert!(sent[m] >= 85, "session {m} sent {}", sent[m]);
        // Every packet sent from 10 s on reached the three others (those
        // still in flight at the end aside).
        assert!(
            received[m] + 6 >= 3 * sent[m],
            "session {m}: {} of {}",
            received[m],
            3 * sent[m]
        );
        assert_eq!(peers[m].counters().malformed, 0);
    }
}
