use super::*;
use meshcast_core::NodeId;
use proptest::prelude::*;

fn cbr(rate_kbps: u64, bytes: u32, start_ms: u64, stop_ms: u64) -> SourceConfig {
    SourceConfig {
        flow: FlowId(3),
        to: Addr::new(NodeId(1), SINK_PORT),
        rate: Rate::from_kbps(rate_kbps),
        packet_bytes: bytes,
        start: Time::from_millis(start_ms),
        stop: Time::from_millis(stop_ms),
        pattern: Pattern::Cbr,
        seed: 1,
        exact_phase: true,
    }
}

/// Drive a source to completion the way a driver does; returns send times.
fn run(src: &mut TrafficSource) -> Vec<Time> {
    let mut times = Vec::new();
    while let Some(t) = src.poll_timeout() {
        src.handle_timeout(t);
        while let Some(tx) = src.poll_transmit(t) {
            let h = TrafficHeader::parse(&tx.payload).unwrap();
            assert_eq!(h.sent_at, t);
            assert_eq!(h.seq as usize, times.len());
            times.push(t);
        }
        while src.poll_event().is_some() {}
    }
    times
}

#[test]
fn cbr_spacing_is_exact() {
    // 500 kbps of 1000-byte packets: one every 16 ms, 10..50 s => 2500.
    let mut src = TrafficSource::new(cbr(500, 1000, 10_000, 50_000)).unwrap();
    let times = run(&mut src);
    assert_eq!(times.len(), 2500);
    assert_eq!(times[0], Time::from_millis(10_000));
    assert_eq!(times[1], Time::from_millis(10_016));
    assert_eq!(*times.last().unwrap(), Time::from_millis(49_984));
}

#[test]
fn random_phase_stays_within_one_interval() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let mut c = cbr(500, 1000, 10_000, 10_100);
        c.exact_phase = false;
        c.seed = seed;
        let times = run(&mut TrafficSource::new(c).unwrap());
        let first = times[0];
        assert!(first >= Time::from_millis(10_000) && first < Time::from_millis(10_016));
        assert_eq!(times[1] - times[0], Duration::from_millis(16));
        seen.insert(first);
    }
    assert!(seen.len() > 15);
}

#[test]
fn poisson_keeps_the_mean_rate_with_exponential_gaps() {
    let mut c = cbr(800, 1000, 0, 1_000_000);
    c.pattern = Pattern::Poisson;
    let times = run(&mut TrafficSource::new(c).unwrap());
    // 100 packets/s for 1000 s.
    let n = times.len() as f64;
    assert!((n / 100_000.0 - 1.0).abs() < 0.01, "{n}");
    // Exponential gaps: the coefficient of variation is 1.
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    assert!((var.sqrt() / mean - 1.0).abs() < 0.02);
}

#[test]
fn config_is_checked() {
    assert_eq!(
        TrafficSource::new(cbr(0, 1000, 0, 1)).unwrap_err(),
        SourceConfigError::ZeroRate
    );
    assert_eq!(
        TrafficSource::new(cbr(1, 10, 0, 1)).unwrap_err(),
        SourceConfigError::PacketSize(10)
    );
    assert_eq!(
        TrafficSource::new(cbr(1, 1000, 5, 5)).unwrap_err(),
        SourceConfigError::EmptyInterval
    );
    let mut c = cbr(1, 1000, 0, 1);
    c.pattern = Pattern::OnOff {
        mean_on: Duration::from_millis(1),
        mean_off: Duration::from_millis(1),
        distribution: PeriodDistribution::Pareto { shape: 1.0 },
    };
    assert_eq!(
        TrafficSource::new(c).unwrap_err(),
        SourceConfigError::ParetoShape(1.0)
    );
}

#[test]
fn onoff_duty_cycle_matches_means() {
    for distribution in [
        PeriodDistribution::Exponential,
        PeriodDistribution::Pareto { shape: 2.5 },
    ] {
        let mut c = cbr(800, 1000, 0, 2_000_000);
        c.pattern = Pattern::OnOff {
            mean_on: Duration::from_millis(500),
            mean_off: Duration::from_millis(1500),
            distribution,
        };
        let mut src = TrafficSource::new(c).unwrap();
        let n = run(&mut src).len() as f64;
        // Always on would be 100 pkt/s for 2000 s; a 25% duty cycle gives ~50k.
        let duty = n / 200_000.0;
        assert!((duty - 0.25).abs() < 0.03, "{distribution:?}: duty {duty}");
    }
}

#[test]
fn sink_reports_and_counts_garbage() {
    let mut sink = TrafficSink::new();
    let mut buf = vec![0u8; 100];
    TrafficHeader {
        flow: FlowId(7),
        seq: 4,
        sent_at: Time::from_millis(3),
    }
    .emit(&mut buf)
    .unwrap();
    let from = Addr::new(NodeId(0), 1);
    sink.handle_datagram(Time::from_millis(9), from, &buf);
    sink.handle_datagram(Time::from_millis(9), from, &buf[..10]);
    sink.handle_datagram(Time::from_millis(9), from, &[]);
    assert_eq!(
        sink.poll_event(),
        Some(Event::FlowReceived {
            flow: FlowId(7),
            payload_bytes: 100,
            sent_at: Time::from_millis(3)
        })
    );
    assert_eq!(sink.poll_event(), None);
    assert_eq!(sink.malformed(), 2);
}

proptest! {
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = TrafficHeader::parse(&bytes);
    }

    #[test]
    fn header_round_trips(flow: u32, seq: u32, ns: u64, pad in 0usize..32) {
        let h = TrafficHeader { flow: FlowId(flow), seq, sent_at: Time::from_nanos(ns) };
        let mut buf = vec![0u8; TRAFFIC_HEADER_LEN + pad];
        h.emit(&mut buf).unwrap();
        prop_assert_eq!(TrafficHeader::parse(&buf), Ok(h));
    }
}
