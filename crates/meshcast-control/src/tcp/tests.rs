use super::*;

fn ms(n: u64) -> Time {
    Time::from_millis(n)
}

fn drain(tx: &mut TcpSender, now: Time) -> Vec<Segment> {
    std::iter::from_fn(|| tx.poll_segment(now)).collect()
}

#[test]
fn slow_start_doubles_each_round_trip() {
    let mut tx = TcpSender::new(TcpConfig::default());
    let mut rx = TcpReceiver::new();
    // IW for 1000-byte segments: min(4000, max(2000, 4380)) / 1000 = 4.
    let mut t = 0;
    let mut burst = drain(&mut tx, ms(t));
    assert_eq!(burst.len(), 4);
    for round in 0..5 {
        t += 100;
        let acks: Vec<Ack> = burst
            .iter()
            .map(|s| rx.on_segment(s).expect("in window").0)
            .collect();
        let mut next = Vec::new();
        for a in acks {
            tx.on_ack(ms(t), &a);
            next.extend(drain(&mut tx, ms(t)));
        }
        assert_eq!(next.len(), 4 << (round + 1), "round {round}");
        burst = next;
    }
    assert_eq!(tx.srtt(), Some(Duration::from_millis(100)));
    assert_eq!(tx.stats().retransmitted, 0);
}

#[test]
fn newreno_recovers_two_losses_in_one_window() {
    let mut tx = TcpSender::new(TcpConfig::default());
    let mut rx = TcpReceiver::new();
    tx.cwnd = 10.0;
    let segs = drain(&mut tx, ms(0));
    assert_eq!(segs.len(), 10);
    // Segments 2 and 5 are lost.
    let mut acks = Vec::new();
    for s in segs.iter().filter(|s| s.seq != 2 && s.seq != 5) {
        acks.push(rx.on_segment(s).expect("ok").0);
    }
    let mut out = Vec::new();
    for a in &acks {
        tx.on_ack(ms(100), a);
        out.extend(drain(&mut tx, ms(100)));
    }
    // Two new ACKs (1, 2), then 6 duplicates of 2: fast retransmit of 2
    // at the third; ssthresh = flight/2.
    assert_eq!(tx.stats().fast_retransmits, 1);
    assert!(out.iter().any(|s| s.seq == 2 && s.retransmission));
    assert_eq!(tx.ssthresh(), 6.0);
    // The retransmitted 2 arrives: partial ACK up to 5, which retransmits 5.
    let re2 = out.iter().find(|s| s.seq == 2).copied().expect("resent");
    let (a, fresh) = rx.on_segment(&re2).expect("ok");
    assert!(fresh);
    assert_eq!(a.next, 5);
    tx.on_ack(ms(200), &a);
    let out2 = drain(&mut tx, ms(200));
    assert_eq!(out2[0].seq, 5);
    assert!(out2[0].retransmission);
    // 5 arrives: everything sent so far is acknowledged: full ACK, cwnd
    // back to at most ssthresh, recovery over.
    for s in out.iter().chain(&out2).filter(|s| s.seq > 9) {
        rx.on_segment(s);
    }
    let (a, _) = rx.on_segment(&out2[0]).expect("ok");
    tx.on_ack(ms(300), &a);
    assert!(!tx.in_recovery);
    assert!(tx.cwnd() <= 6.0);
    assert_eq!(tx.stats().timeouts, 0);
}

#[test]
fn timeout_goes_back_and_backs_off() {
    let mut tx = TcpSender::new(TcpConfig::default());
    let segs = drain(&mut tx, ms(0));
    assert_eq!(segs.len(), 4);
    // Nothing comes back: the timer fires after the initial 1 s.
    assert_eq!(tx.poll_timeout(), Some(ms(1000)));
    tx.handle_timeout(ms(1000));
    assert_eq!(tx.cwnd(), 1.0);
    assert_eq!(tx.ssthresh(), 2.0);
    let again = drain(&mut tx, ms(1000));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].seq, 0);
    assert!(again[0].retransmission);
    assert_eq!(tx.poll_timeout(), Some(ms(3000)));
    tx.handle_timeout(ms(3000));
    assert_eq!(tx.rto(), Duration::from_secs(4));
    assert_eq!(tx.stats().timeouts, 2);
    // A late ACK for everything ends it; the RTT sample (50 ms) resets the
    // RTO to SRTT + max(4·RTTVAR, min_rto) = 50 + max(100, 200) ms.
    tx.on_ack(
        ms(3050),
        &Ack {
            next: 4,
            echo: ms(3000),
        },
    );
    assert_eq!(tx.rto(), Duration::from_millis(250));
    // An ACK for data never sent is ignored.
    tx.on_ack(
        ms(3060),
        &Ack {
            next: 99,
            echo: ms(3000),
        },
    );
    assert_eq!(tx.acked(), 4);
}

#[test]
fn receiver_acks_cumulatively_and_buffers() {
    let mut rx = TcpReceiver::new();
    let seg = |seq| Segment {
        seq,
        sent_at: ms(seq),
        retransmission: false,
    };
    assert_eq!(
        rx.on_segment(&seg(1)).map(|(a, f)| (a.next, f)),
        Some((0, true))
    );
    assert_eq!(
        rx.on_segment(&seg(1)).map(|(a, f)| (a.next, f)),
        Some((0, false))
    );
    assert_eq!(
        rx.on_segment(&seg(0)).map(|(a, f)| (a.next, f)),
        Some((2, true))
    );
    assert_eq!(
        rx.on_segment(&seg(0)).map(|(a, f)| (a.next, f)),
        Some((2, false))
    );
    assert!(rx.on_segment(&seg(2 + MAX_AHEAD + 1)).is_none());
    assert_eq!(rx.next(), 2);
}

#[test]
fn a_finite_transfer_completes() {
    let cfg = TcpConfig {
        total_segments: Some(50),
        ..TcpConfig::default()
    };
    let mut tx = TcpSender::new(cfg);
    let mut rx = TcpReceiver::new();
    let mut t = 0;
    let mut inflight = drain(&mut tx, ms(t));
    while !tx.is_done() {
        t += 50;
        assert!(t < 10_000, "stuck");
        let acks: Vec<Ack> = inflight
            .iter()
            .filter(|s| s.seq % 7 != 3 || s.retransmission)
            .map(|s| rx.on_segment(s).expect("ok").0)
            .collect();
        inflight.clear();
        for a in acks {
            tx.on_ack(ms(t), &a);
            inflight.extend(drain(&mut tx, ms(t)));
        }
        if inflight.is_empty() {
            if let Some(d) = tx.poll_timeout() {
                t = t.max(d.as_nanos() / 1_000_000);
                tx.handle_timeout(ms(t));
                inflight.extend(drain(&mut tx, ms(t)));
            }
        }
    }
    assert_eq!(rx.next(), 50);
    assert!(drain(&mut tx, ms(t + 1)).is_empty());
}
