//! The TCP NewReno model and TFRC in the simulator, against the standard
//! checks: a lone TCP flow fills a bottleneck with a BDP of buffer, ten
//! share it fairly, TCP under random loss follows the Padhye model, and
//! TFRC shares a bottleneck with TCP within a factor of two
//! (RFC 4340 §10.2 / RFC 5348).

use meshcast_control::tcp::TcpConfig;
use meshcast_core::{Duration, FlowId, NodeId, Rate, Time};
use meshcast_proto::transport::tfrc::Supply;
use meshcast_sim::Sim;
use meshcast_sim::network::{LinkParams, Network, NodeKind};
use meshcast_sim::stats::RunStats;

const SEG: u32 = 1000;

fn link(kbps: u64, delay_ms: u64, queue: u32, loss: f64) -> LinkParams {
    LinkParams {
        loss,
        ..LinkParams::drop_tail(
            Rate::from_kbps(kbps),
            Duration::from_millis(delay_ms),
            queue,
        )
    }
}

/// `n` sources S0.. behind router R1, `n` sinks D0.. behind R2; R1 -> R2
/// is the bottleneck (`bottleneck`), R2 -> R1 is fast; access links 1 Gbps,
/// 1 ms. Returns the network, sources, sinks.
fn dumbbell(n: usize, bottleneck: LinkParams) -> (Network, Vec<NodeId>, Vec<NodeId>) {
    let mut net = Network::new();
    let r1 = net.add_node("R1", NodeKind::Router).expect("fresh");
    let r2 = net.add_node("R2", NodeKind::Router).expect("fresh");
    let delay_ms = bottleneck.delay.as_nanos() / 1_000_000;
    net.add_link(r1, r2, bottleneck).expect("fresh");
    net.add_link(r2, r1, link(1_000_000, delay_ms, 10_000, 0.0))
        .expect("fresh");
    let (mut s, mut d) = (Vec::new(), Vec::new());
    for i in 0..n {
        let a = net
            .add_node(&format!("S{i}"), NodeKind::Host)
            .expect("fresh");
        let b = net
            .add_node(&format!("D{i}"), NodeKind::Host)
            .expect("fresh");
        net.add_duplex(a, r1, link(1_000_000, 1, 10_000, 0.0))
            .expect("fresh");
        net.add_duplex(r2, b, link(1_000_000, 1, 10_000, 0.0))
            .expect("fresh");
        s.push(a);
        d.push(b);
    }
    (net, s, d)
}

/// Bottleneck of 10 Mbit/s with 48 ms delay: RTT 100 ms; a bandwidth-delay
/// product of 10 Mbit/s · 100 ms / 1028 wire bytes = 122 packets.
const BDP_PKTS: u32 = 122;

fn run(mut sim: Sim, secs: u64) -> RunStats {
    sim.run_until(Time::from_secs(secs), &mut |_| {});
    sim.into_stats()
}

fn goodput_kbps(stats: &RunStats, flow: FlowId, from: u64, to: u64) -> f64 {
    stats.flows.flows()[flow.index()]
        .figures(from, to, stats.end)
        .recv_kbps_min
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * q)
}

fn tcp_cfg() -> TcpConfig {
    TcpConfig {
        segment_bytes: SEG,
        ..TcpConfig::default()
    }
}

#[test]
fn one_tcp_flow_fills_a_bdp_buffered_bottleneck() {
    let (net, s, d) = dumbbell(1, link(10_000, 48, BDP_PKTS, 0.0));
    let mut sim = Sim::new(net, 1);
    sim.add_tcp(
        "tcp",
        s[0],
        d[0],
        tcp_cfg(),
        (Time::ZERO, Time::from_secs(60)),
    )
    .expect("added");
    let stats = run(sim, 60);
    let u = stats.links[0].figures(10, 60, stats.end).utilisation;
    eprintln!("one TCP flow: bottleneck utilisation {u:.3} over [10, 60] s");
    assert!(u >= 0.90, "utilisation {u:.3}");
}

#[test]
fn ten_tcp_flows_share_fairly() {
    let (net, s, d) = dumbbell(10, link(10_000, 48, BDP_PKTS, 0.0));
    let mut sim = Sim::new(net, 7);
    let flows: Vec<FlowId> = (0..10)
        .map(|i| {
            let start = Time::from_millis(137 * i as u64);
            sim.add_tcp(
                &format!("tcp{i}"),
                s[i],
                d[i],
                tcp_cfg(),
                (start, Time::from_secs(200)),
            )
            .expect("added")
        })
        .collect();
    let stats = run(sim, 200);
    let g: Vec<f64> = flows
        .iter()
        .map(|&f| goodput_kbps(&stats, f, 20, 200))
        .collect();
    let j = jain(&g);
    let u = stats.links[0].figures(20, 200, stats.end).utilisation;
    eprintln!("ten TCP flows: Jain {j:.4}, utilisation {u:.3}, goodputs {g:.0?}");
    assert!(j >= 0.95, "Jain {j:.4}: {g:?}");
    assert!(u >= 0.9, "utilisation {u:.3}");
}

/// Padhye et al. 1998, full model with b = 1: packets per second.
fn padhye(rtt: f64, t0: f64, p: f64) -> f64 {
    let b = 1.0;
    1.0 / (rtt * (2.0 * b * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p))
}

#[test]
fn tcp_under_random_loss_follows_the_padhye_model() {
    for &p in &[0.002, 0.01, 0.03] {
        // A 100 Mbit/s path that never queues: only the random loss acts.
        let (net, s, d) = dumbbell(1, link(100_000, 48, 10_000, p));
        let mut sim = Sim::new(net, 11);
        let f = sim
            .add_tcp(
                "tcp",
                s[0],
                d[0],
                tcp_cfg(),
                (Time::ZERO, Time::from_secs(300)),
            )
            .expect("added");
        let stats = run(sim, 300);
        let got = goodput_kbps(&stats, f, 20, 300);
        // RTT: 100 ms of propagation plus serialisation (≈ 0.1 ms); on a
        // path without queueing RTTVAR is near zero, so the model's RTO is
        // SRTT + min_rto = 300 ms.
        let model = padhye(0.1001, 0.3001, p) * f64::from(SEG) * 8.0 / 1e3;
        let ratio = got / model;
        eprintln!("p = {p}: {got:.0} kbit/s, Padhye {model:.0} kbit/s, ratio {ratio:.3}");
        assert!((0.75..=1.25).contains(&ratio), "p = {p}: ratio {ratio:.3}");
    }
}

#[test]
fn tfrc_and_tcp_share_a_bottleneck_within_a_factor_of_two() {
    // 10 Mbit/s, 100 ms RTT, drop-tail buffers of half, one and two BDPs.
    for queue in [BDP_PKTS / 2, BDP_PKTS, 2 * BDP_PKTS] {
        let (net, s, d) = dumbbell(2, link(10_000, 48, queue, 0.0));
        let mut sim = Sim::new(net, 3);
        let end = Time::from_secs(300);
        let tcp = sim
            .add_tcp("tcp", s[0], d[0], tcp_cfg(), (Time::ZERO, end))
            .expect("added");
        let tfrc = sim
            .add_tfrc(
                "tfrc",
                s[1],
                d[1],
                Supply::Bulk,
                SEG,
                (Time::from_millis(50), end),
            )
            .expect("added");
        let stats = run(sim, 300);
        let (a, b) = (
            goodput_kbps(&stats, tfrc, 50, 300),
            goodput_kbps(&stats, tcp, 50, 300),
        );
        let u = stats.links[0].figures(50, 300, stats.end).utilisation;
        eprintln!(
            "queue {queue}: TFRC {a:.0} kbit/s vs TCP {b:.0} kbit/s: ratio {:.3}; utilisation {u:.3}",
            a / b
        );
        assert!(
            (0.5..=2.0).contains(&(a / b)),
            "queue {queue}: TFRC/TCP {:.3}",
            a / b
        );
        assert!(u >= 0.9, "utilisation {u:.3}");
    }
}
