//! TFRC sender and receiver together, over the test loop of
//! [`super::super::harness`], against RFC 5348's figures.

use super::super::harness::Loop;
use super::super::{DataInfo, Feedback, Mode};
use super::*;
use meshcast_core::{Duration, Rate, Time};

const S: u32 = 1000;
const RTT_MS: u64 = 100;

fn rtt() -> Duration {
    Duration::from_millis(RTT_MS)
}

/// Packets per RTT for `rate`.
fn pkts_per_rtt(rate: Rate) -> f64 {
    rate.as_bps() as f64 / 8.0 * (RTT_MS as f64 / 1000.0) / f64::from(S)
}

fn bulk() -> impl FnMut(Time, Rate, Mode) -> Option<u32> {
    |_, _, _| Some(S)
}

/// Lose every `k`-th packet.
fn every(k: u64) -> impl FnMut(&DataInfo) -> bool {
    move |i| i.seq % k == k - 1
}

#[test]
fn starts_at_one_packet_per_second_then_initial_window() {
    let mut tx = TfrcSender::new(SenderConfig::default(), Time::ZERO);
    assert_eq!(tx.rate(), Rate::from_bps(8000));
    assert_eq!(tx.mode(), Mode::SlowStart);
    let info = tx.on_sent(Time::ZERO, S);
    assert_eq!(info.seq, 0);
    assert_eq!(tx.next_send(), Time::from_secs(1));
    // First feedback: R = 100 ms; X = W_init / R = 4000 B / 0.1 s.
    tx.on_feedback(
        Time::from_millis(100),
        &Feedback {
            echo_sent_at: Time::ZERO,
            delay: Duration::ZERO,
            x_recv: Rate::from_bps(8000),
            p: 0.0,
            loss_events: 0,
        },
    );
    assert_eq!(tx.rtt(), Some(Duration::from_millis(100)));
    assert_eq!(tx.rate(), Rate::from_bps(320_000));
    // The higher rate pulls the next send time in.
    assert_eq!(tx.next_send(), Time::from_millis(100));
    // With a known RTT the sender starts at W_init / R.
    let cfg = SenderConfig {
        segment_bytes: 1460,
        initial_rtt: Some(Duration::from_millis(200)),
    };
    let tx = TfrcSender::new(cfg, Time::ZERO);
    assert_eq!(tx.rate(), Rate::from_bps(4380 * 8 * 5));
}

#[test]
fn slow_start_doubles_per_rtt_within_twice_the_receive_rate() {
    let mut l = Loop::new(S, rtt());
    l.run(Time::from_secs(3), &mut bulk(), &mut |_| false);
    assert!(l.samples.iter().all(|s| s.mode == Mode::SlowStart));
    // Each rate is at most twice the previous feedback's receive rate
    // (and the initial rate floor). For the first two RTTs X_recv_set still
    // holds its initial Infinity (§4.3), so start at the third feedback.
    let initial = Rate::from_bps(4000 * 8 * 10);
    for w in l.feedback_log[2..].windows(2) {
        let (t, _) = w[1];
        let allowed = l.rate_at(t);
        let limit = Rate::from_bps(2 * w[0].1.x_recv.as_bps().max(w[1].1.x_recv.as_bps()));
        assert!(
            allowed <= limit.max(initial),
            "{allowed} > 2 x_recv {limit} at {t}"
        );
    }
    let last = l.samples.last().expect("feedback came").rate;
    assert!(pkts_per_rtt(last) > 1000.0, "slow start got to {last}");
}

/// Steady state with one loss in `k` packets for `secs`, then `then` for the
/// rest; returns the loop.
fn steady_then(k: u64, secs: u64, end: u64, mut then: impl FnMut(&DataInfo) -> bool) -> Loop {
    let mut l = Loop::new(S, rtt());
    let switch = Time::from_secs(secs);
    let mut steady = every(k);
    l.run(Time::from_secs(end), &mut bulk(), &mut |i| {
        if i.sent_at < switch {
            steady(i)
        } else {
            then(i)
        }
    });
    l
}

/// RTTs from `from` until the allowed rate is at most `target`.
fn rtts_until(l: &Loop, from: Time, pred: impl Fn(Rate) -> bool) -> Option<f64> {
    l.samples
        .iter()
        .filter(|s| s.at >= from)
        .find(|s| pred(s.rate))
        .map(|s| s.at.saturating_since(from).as_secs_f64() / (RTT_MS as f64 / 1000.0))
}

#[test]
fn persistent_congestion_halves_the_rate_in_4_to_8_rtts() {
    // RFC 5348 §1 / Floyd et al. 2000: under one loss per RTT the rate
    // halves in four to eight round trips.
    for k in [100, 1000] {
        let mut last: Option<Time> = None;
        let l = steady_then(k, 60, 70, |i| {
            if last.is_none_or(|t| i.sent_at >= t + rtt()) {
                last = Some(i.sent_at);
                true
            } else {
                false
            }
        });
        let switch = Time::from_secs(60);
        let before = l.rate_at(switch);
        let n =
            rtts_until(&l, switch, |r| r.as_bps() * 2 <= before.as_bps()).expect("the rate halved");
        eprintln!("k={k}: {before} halves in {n:.1} RTTs");
        assert!((4.0..=8.0).contains(&n), "k={k}: halved in {n:.1} RTTs");
    }
}

#[test]
fn without_losses_the_rate_rises_at_most_028_packets_per_rtt_per_rtt() {
    let l = steady_then(100, 60, 90, |_| false);
    let switch = Time::from_secs(60);
    // Packets per RTT at every feedback after the losses stopped (one RTT
    // after the switch the last losses are known), as a function of time in
    // RTTs; the steepest rise over any 10-RTT span. (TFRC updates once per
    // RTT; over 10 RTTs the rise while the history discount falls from 1 to
    // 0.5 peaks at 0.27, over 5 RTTs at 0.295, and settles at 0.21 once the
    // discount is 0.5: 0.744 · dI_mean/dI_0 for 1000-byte packets.)
    let pts: Vec<(f64, f64)> = l
        .samples
        .iter()
        .filter(|s| s.at >= switch + rtt() && s.mode == Mode::CongestionAvoidance)
        .map(|s| (s.at.as_secs_f64() * 10.0, pkts_per_rtt(s.rate)))
        .collect();
    let mut steepest = 0.0_f64;
    for (i, &(t0, x0)) in pts.iter().enumerate() {
        if let Some(&(t1, x1)) = pts[i..].iter().find(|&&(t, _)| t >= t0 + 10.0) {
            steepest = steepest.max((x1 - x0) / (t1 - t0));
        }
    }
    let end = pkts_per_rtt(l.samples.last().expect("samples").rate);
    eprintln!("steepest rise {steepest:.3} pkts/RTT/RTT; {end:.1} pkts/RTT after 30 s");
    assert!(steepest <= 0.28, "rose {steepest:.3} packets/RTT/RTT");
    assert!(steepest > 0.05, "the rate must rise at all ({steepest:.3})");
}

#[test]
fn an_app_limited_source_never_bursts_above_twice_its_receive_rate() {
    // Run at full rate with light loss, then supply 30% of the allowed
    // rate for 20 RTTs, then everything it is allowed.
    let mut l = Loop::new(S, rtt());
    let limited_from = Time::from_secs(30);
    let burst_from = limited_from + Duration::from_millis(20 * RTT_MS);
    let mut app_rate: Option<f64> = None;
    let mut credit = 0.0_f64;
    let mut last = Time::ZERO;
    let mut app = |now: Time, rate: Rate, _mode: Mode| -> Option<u32> {
        if now < limited_from || now >= burst_from {
            return Some(S);
        }
        let r = *app_rate.get_or_insert(0.3 * rate.as_bps() as f64 / 8.0);
        credit = (credit + r * now.saturating_since(last.max(limited_from)).as_secs_f64())
            .min(2.0 * f64::from(S));
        last = now;
        if credit >= f64::from(S) {
            credit -= f64::from(S);
            Some(S)
        } else {
            None
        }
    };
    l.run(Time::from_secs(40), &mut app, &mut every(200));
    let allowed_before = l.rate_at(limited_from).as_bps() as f64;
    let app_bps = 0.3 * allowed_before;
    // Sent bytes per RTT window after the burst starts, against twice the
    // largest receive rate reported in the two RTTs before the window.
    let mut t = burst_from;
    let mut checked = 0;
    while t + rtt() <= Time::from_secs(40) {
        let sent: u64 = l
            .sent
            .iter()
            .filter(|p| p.at >= t && p.at < t + rtt())
            .map(|p| u64::from(p.bytes))
            .sum();
        let sent_bps = sent as f64 * 8.0 / 0.1;
        // Feedback up to the window's end counts: a report arriving inside
        // the window may raise the rate for the rest of it.
        let recent = l
            .feedback_log
            .iter()
            .filter(|(at, _)| *at < t + rtt() && *at + Duration::from_millis(2 * RTT_MS) > t)
            .map(|(_, fb)| fb.x_recv.as_bps() as f64)
            .fold(0.0, f64::max);
        // One packet of slack for where a window boundary falls.
        assert!(
            sent_bps <= 2.0 * recent + f64::from(S) * 8.0 / 0.1,
            "at {t}: sent {sent_bps:.0} bit/s, 2 x recent receive rate {:.0}",
            2.0 * recent
        );
        if t == burst_from {
            eprintln!(
                "first burst RTT: {sent_bps:.0} bit/s; app rate {app_bps:.0}; allowed before {allowed_before:.0}"
            );
            assert!(
                sent_bps <= 2.0 * app_bps * 1.1,
                "first burst RTT {sent_bps:.0} bit/s vs app rate {app_bps:.0}"
            );
        }
        checked += 1;
        t += rtt();
    }
    assert!(checked >= 75, "{checked} windows");
}

#[test]
fn no_feedback_halves_the_rate() {
    let mut l = Loop::new(S, rtt());
    l.run(Time::from_secs(20), &mut bulk(), &mut every(100));
    let before = l.sender.rate();
    // The receiver goes silent: the timer fires after max(4R, 2s/X).
    let mut tx = l.sender.clone();
    let t0 = Time::from_secs(20);
    let _ = tx.on_sent(t0, S);
    let deadline = tx.poll_timeout().expect("armed");
    tx.handle_timeout(deadline);
    assert!(
        tx.rate().as_bps() * 10 <= before.as_bps() * 6,
        "{} -> {}",
        before,
        tx.rate()
    );
    // Without an RTT sample and not idle, the timer halves X directly.
    let mut tx = TfrcSender::new(SenderConfig::default(), Time::ZERO);
    let _ = tx.on_sent(Time::ZERO, S);
    tx.handle_timeout(Time::from_secs(2));
    assert_eq!(tx.rate(), Rate::from_bps(4000));
    // Idle without an RTT: nothing to halve.
    tx.handle_timeout(Time::from_secs(10));
    assert_eq!(tx.rate(), Rate::from_bps(4000));
}

#[test]
fn break_ss_leaves_slow_start_without_a_loss() {
    // An application capped at 200 packets/s (1.6 Mbit/s) breaks slow
    // start once TFRC allows more; TFRC must then neither stall nor keep
    // doubling.
    let mut l = Loop::new(S, rtt());
    let cap = 200.0 * f64::from(S);
    let mut credit = 0.0_f64;
    let mut last = Time::ZERO;
    let mut broke = false;
    let mut app = |now: Time, rate: Rate, mode: Mode| -> Option<u32> {
        credit = (credit + cap * now.saturating_since(last).as_secs_f64()).min(2.0 * f64::from(S));
        last = now;
        if mode == Mode::SlowStart && rate.as_bps() as f64 / 8.0 >= cap && !broke {
            broke = true;
        }
        if credit >= f64::from(S) {
            credit -= f64::from(S);
            Some(S)
        } else {
            None
        }
    };
    // The loop cannot call back into the sender from the app, so break
    // slow start between two runs.
    l.run(Time::from_secs(2), &mut app, &mut |_| false);
    l.sender.break_ss();
    l.run(Time::from_secs(20), &mut app, &mut |_| false);
    assert_eq!(l.sender.mode(), Mode::CongestionAvoidance);
    let p = l.sender.loss_event_rate();
    assert!(p > 0.0, "the receiver seeded a synthetic interval");
    // The source still gets its 200 packets/s through.
    let late = l
        .sent
        .iter()
        .filter(|s| s.at >= Time::from_secs(10))
        .count();
    assert!((1900..=2010).contains(&late), "{late} packets in 10 s");
    // And the allowed rate stays within twice what it uses.
    let x = l.sender.rate().as_bps() as f64 / 8.0;
    assert!(x <= 2.05 * cap, "allowed {x} B/s for a {cap} B/s source");
}

/// §4.6: a packet sent late (a driver's timer fired after its nominal
/// time) does not push the next one back: the schedule runs from the
/// nominal times, absorbing up to one interval of lateness; after a
/// longer gap it restarts from the send.
#[test]
fn late_sends_keep_the_nominal_schedule() {
    let mut tx = TfrcSender::new(SenderConfig::default(), Time::ZERO);
    // At the initial 1 packet/s: nominal times 0, 1 s, 2 s, ...
    tx.on_sent(Time::ZERO, S);
    assert_eq!(tx.next_send(), Time::from_secs(1));
    // Sent 0.3 s late: the next is still due at 2 s.
    tx.on_sent(Time::from_millis(1300), S);
    assert_eq!(tx.next_send(), Time::from_secs(2));
    // Sent exactly one interval late: still on schedule.
    tx.on_sent(Time::from_secs(3), S);
    assert_eq!(tx.next_send(), Time::from_secs(3));
    tx.on_sent(Time::from_secs(3), S);
    assert_eq!(tx.next_send(), Time::from_secs(4));
    // More than an interval late (the application was idle): restart from
    // the send, no burst to catch up.
    let info = tx.on_sent(Time::from_millis(6500), S);
    assert_eq!(info.sent_at, Time::from_millis(6500));
    assert_eq!(tx.next_send(), Time::from_millis(7500));
}
