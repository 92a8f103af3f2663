//! Analytical checks of the simulator against closed-form results.

use super::*;
use crate::network::{LinkParams, NodeKind, QueueLimit};
use meshcast_core::metrics::FlowFigures;
use meshcast_proto::traffic::{Pattern, SINK_PORT, SourceConfig, TrafficSink, TrafficSource};

fn params(kbps: u64, delay_ms: u64, queue: u32) -> LinkParams {
    LinkParams::drop_tail(
        Rate::from_kbps(kbps),
        Duration::from_millis(delay_ms),
        queue,
    )
}

/// A — R — B with the given R->B link (the bottleneck), fast access A—R.
fn line(bottleneck: LinkParams) -> (Network, NodeId, NodeId, NodeId) {
    let mut net = Network::new();
    let a = net.add_node("A", NodeKind::Host).unwrap();
    let r = net.add_node("R", NodeKind::Router).unwrap();
    let b = net.add_node("B", NodeKind::Host).unwrap();
    net.add_duplex(a, r, params(100_000, 1, 1000)).unwrap();
    net.add_duplex(r, b, bottleneck).unwrap();
    (net, a, r, b)
}

fn cbr(sim: &mut Sim, name: &str, from: NodeId, to: NodeId, kbps: u64, s: (u64, u64)) -> FlowId {
    traffic(sim, name, from, to, Pattern::Cbr, kbps, s)
}

fn traffic(
    sim: &mut Sim,
    name: &str,
    from: NodeId,
    to: NodeId,
    pattern: Pattern,
    kbps: u64,
    s: (u64, u64),
) -> FlowId {
    sim.add_traffic(
        name,
        from,
        to,
        pattern,
        Rate::from_kbps(kbps),
        1000,
        (Time::from_secs(s.0), Time::from_secs(s.1)),
        1,
    )
    .unwrap()
}

fn run(mut sim: Sim, secs: u64) -> RunStats {
    sim.run_until(Time::from_secs(secs), &mut |_| {});
    sim.into_stats()
}

fn fig(stats: &RunStats, f: FlowId, from: u64, to: u64) -> FlowFigures {
    stats.flows.flows()[f.index()].figures(from, to, stats.end)
}

#[test]
fn below_capacity_arrives_whole_with_exact_delay() {
    let (net, a, _, b) = line(params(1000, 10, 50));
    let mut sim = Sim::new(net, 1);
    let f = cbr(&mut sim, "f", a, b, 500, (0, 20));
    let stats = run(sim, 21);
    let w = fig(&stats, f, 1, 19);
    assert_eq!(w.loss, Some(0.0));
    assert_eq!(w.send_kbps, 500.0);
    assert_eq!(w.recv_kbps_min, 500.0);
    // Two hops: 1 ms + 1028 B at 100 Mbps, then 10 ms + 1028 B at 1 Mbps.
    let expect_ms = 1.0 + 1028.0 * 8.0 / 100e6 * 1e3 + 10.0 + 1028.0 * 8.0 / 1e6 * 1e3;
    let mean = w.delay_ms_mean.unwrap();
    assert!(
        (mean - expect_ms).abs() < 1e-5,
        "mean {mean} vs {expect_ms}"
    );
    assert!((w.delay_ms_p95.unwrap() / expect_ms - 1.0).abs() < 0.004);
    assert_eq!(stats.counters.drops_queue, 0);
    assert_eq!(stats.counters.sent, stats.counters.delivered);
}

#[test]
fn above_capacity_goodput_loss_and_queue_match_closed_form() {
    let (net, a, r, b) = line(params(1000, 5, 50));
    let bottleneck = net.link_id(r, b).unwrap();
    let mut sim = Sim::new(net, 1);
    let f = cbr(&mut sim, "f", a, b, 2000, (0, 60));
    let stats = run(sim, 61);
    let w = fig(&stats, f, 10, 50);
    let share = 1000.0 * 1000.0 / 1028.0;
    assert!(
        (w.recv_kbps_min / share - 1.0).abs() < 0.01,
        "goodput {}",
        w.recv_kbps_min
    );
    let excess = 1.0 - share / 2000.0;
    let loss = w.loss.unwrap();
    assert!(
        (loss / excess - 1.0).abs() < 0.01,
        "loss {loss} vs {excess}"
    );
    let l = stats.links[bottleneck.index()].figures(10, 50, stats.end);
    assert!(l.queue_pkts_mean > 49.0 && l.queue_pkts_max == 50, "{l:?}");
    assert!((l.utilisation - 1.0).abs() < 1e-3, "{l:?}");
    assert!(l.drops_queue > 0);
}

#[test]
fn byte_limited_queue_holds_at_most_its_bytes() {
    let mut p = params(1000, 5, 0);
    p.queue = QueueLimit {
        packets: None,
        bytes: Some(10 * 1028 + 500),
    };
    let (net, a, r, b) = line(p);
    let bottleneck = net.link_id(r, b).unwrap();
    let mut sim = Sim::new(net, 1);
    cbr(&mut sim, "f", a, b, 2000, (0, 20));
    let stats = run(sim, 20);
    let l = stats.links[bottleneck.index()].figures(5, 15, stats.end);
    assert_eq!(l.queue_pkts_max, 10);
}

/// With memoryless arrivals every packet finds the full queue with the
/// same probability, so goodputs split in proportion to offered loads.
#[test]
fn flows_share_a_bottleneck_in_proportion_to_offered_load() {
    let (net, a, _, b) = line(params(1000, 5, 50));
    let mut sim = Sim::new(net, 1);
    let f1 = traffic(&mut sim, "f1", a, b, Pattern::Poisson, 1500, (0, 300));
    let f2 = traffic(&mut sim, "f2", a, b, Pattern::Poisson, 500, (0, 300));
    let stats = run(sim, 300);
    let (g1, g2) = (
        fig(&stats, f1, 10, 290).recv_kbps_min,
        fig(&stats, f2, 10, 290).recv_kbps_min,
    );
    let share = 1000.0 * 1000.0 / 1028.0;
    assert!(((g1 + g2) / share - 1.0).abs() < 0.01, "{g1} + {g2}");
    assert!((g1 / g2 / 3.0 - 1.0).abs() < 0.03, "{g1} / {g2}");
}

/// Strictly periodic flows at a full drop-tail queue: the flow with the
/// shorter gaps wins more than its share (module docs of
/// `meshcast_proto::traffic`), and the link stays full.
#[test]
fn periodic_flows_favour_the_smoother_flow_at_a_full_queue() {
    let (net, a, _, b) = line(params(1000, 5, 50));
    let mut sim = Sim::new(net, 1);
    let f1 = cbr(&mut sim, "f1", a, b, 1500, (0, 100));
    let f2 = cbr(&mut sim, "f2", a, b, 500, (0, 100));
    let stats = run(sim, 100);
    let (g1, g2) = (
        fig(&stats, f1, 10, 90).recv_kbps_min,
        fig(&stats, f2, 10, 90).recv_kbps_min,
    );
    let share = 1000.0 * 1000.0 / 1028.0;
    assert!(((g1 + g2) / share - 1.0).abs() < 0.01, "{g1} + {g2}");
    assert!(g1 / g2 > 3.5, "{g1} / {g2}");
}

/// A and B hosts, routers R1..R3: A-R1-B is short, A-R2-R3-B the detour.
fn mesh() -> (Network, [NodeId; 5]) {
    let mut net = Network::new();
    let a = net.add_node("A", NodeKind::Host).unwrap();
    let b = net.add_node("B", NodeKind::Host).unwrap();
    let r1 = net.add_node("R1", NodeKind::Router).unwrap();
    let r2 = net.add_node("R2", NodeKind::Router).unwrap();
    let r3 = net.add_node("R3", NodeKind::Router).unwrap();
    for (x, y) in [(a, r1), (r1, b), (a, r2), (r2, r3), (r3, b)] {
        net.add_duplex(x, y, params(10_000, 2, 100)).unwrap();
    }
    (net, [a, b, r1, r2, r3])
}

#[test]
fn link_down_reroutes_through_routers_and_back() {
    let (net, [a, b, r1, r2, _]) = mesh();
    let (short, detour) = (net.link_id(r1, b).unwrap(), net.link_id(a, r2).unwrap());
    let mut sim = Sim::new(net, 1);
    let f = cbr(&mut sim, "f", a, b, 1000, (0, 30));
    sim.schedule(Time::from_secs(10), Action::LinkDown(short))
        .unwrap();
    sim.schedule(Time::from_secs(20), Action::LinkUp(short))
        .unwrap();
    let stats = run(sim, 30);
    for (from, to) in [(1, 10), (11, 20), (21, 30)] {
        assert_eq!(
            fig(&stats, f, from, to).recv_kbps_min,
            1000.0,
            "[{from},{to})"
        );
    }
    // The detour carried traffic only while the short link was down.
    let d = &stats.links[detour.index()];
    assert_eq!(d.figures(0, 10, stats.end).tx_kbps, 0.0);
    assert!(d.figures(11, 20, stats.end).tx_kbps > 1000.0);
    assert_eq!(d.figures(21, 30, stats.end).tx_kbps, 0.0);
    // Delay grows by one hop on the detour.
    let (fast, slow) = (
        fig(&stats, f, 1, 10).delay_ms_mean.unwrap(),
        fig(&stats, f, 11, 20).delay_ms_mean.unwrap(),
    );
    assert!(slow > fast + 2.0, "{fast} {slow}");
    // Only a packet already on A->R1 when R1->B failed is lost: R1 has no
    // way on (A is a host, so traffic cannot turn back through it).
    let c = stats.counters;
    assert!(c.drops_unreachable + c.drops_down <= 1, "{c:?}");
    assert_eq!(c.drops_queue + c.drops_loss + c.drops_no_listener, 0);
}

#[test]
fn link_down_without_alternative_drops_and_counts() {
    let (net, [a, b, r1, _, r3]) = mesh();
    let short = net.link_id(r1, b).unwrap();
    let other = net.link_id(r3, b).unwrap();
    let mut sim = Sim::new(net, 1);
    let f = cbr(&mut sim, "f", a, b, 1000, (0, 30));
    sim.schedule(Time::from_secs(10), Action::LinkDown(short))
        .unwrap();
    sim.schedule(Time::from_secs(10), Action::LinkDown(other))
        .unwrap();
    let stats = run(sim, 30);
    assert_eq!(fig(&stats, f, 11, 30).recv_kbps_min, 0.0);
    assert_eq!(fig(&stats, f, 11, 30).loss, Some(1.0));
    // 125 packets/s for 20 s, plus those between A and R1 at 10 s (at most
    // two: 2 ms of propagation at 8 ms spacing).
    let u = stats.counters.drops_unreachable;
    assert!((2500..=2502).contains(&u), "{u}");
}

#[test]
fn capacity_change_applies_and_utilisation_follows_it() {
    let (net, a, r, b) = line(params(1000, 5, 50));
    let bottleneck = net.link_id(r, b).unwrap();
    let mut sim = Sim::new(net, 1);
    let f = cbr(&mut sim, "f", a, b, 3000, (0, 40));
    sim.schedule(
        Time::from_secs(20),
        Action::SetCapacity(bottleneck, Rate::from_kbps(2000)),
    )
    .unwrap();
    let stats = run(sim, 40);
    let g = fig(&stats, f, 25, 40).recv_kbps_min;
    assert!((g / (2000.0 * 1000.0 / 1028.0) - 1.0).abs() < 0.01, "{g}");
    let u = stats.links[bottleneck.index()]
        .figures(5, 40, stats.end)
        .utilisation;
    assert!((u - 1.0).abs() < 2e-3, "{u}");
}

#[test]
fn drop_every_kth_packet_switches_on_and_off() {
    // 500 kbit/s CBR of 1000-byte packets: 62.5 packets/s. Every other
    // packet dropped in [10, 20) s, every fourth in [20, 30), none after.
    let (net, a, r, b) = line(params(1000, 5, 50));
    let l = net.link_id(r, b).unwrap();
    let mut sim = Sim::new(net, 1);
    let f = cbr(&mut sim, "f", a, b, 500, (0, 40));
    sim.schedule(Time::from_secs(10), Action::DropEvery(l, Some(2)))
        .unwrap();
    sim.schedule(Time::from_secs(20), Action::DropEvery(l, Some(4)))
        .unwrap();
    sim.schedule(Time::from_secs(30), Action::DropEvery(l, None))
        .unwrap();
    let stats = run(sim, 41);
    let loss = |from, to| fig(&stats, f, from, to).loss.unwrap();
    assert_eq!(loss(1, 9), 0.0);
    assert!((loss(11, 19) - 0.5).abs() < 0.01, "{}", loss(11, 19));
    assert!((loss(21, 29) - 0.25).abs() < 0.01, "{}", loss(21, 29));
    assert_eq!(loss(31, 39), 0.0);
    let w = stats.links[l.index()].figures(10, 30, stats.end);
    // 625 packets in each 10-s window: 312 and 156 of them dropped.
    assert_eq!(w.drops_loss, 625 / 2 + 625 / 4);
}

fn lossy_run(seed: u64) -> (Vec<FlowFigures>, Counters) {
    let mut p = params(1000, 5, 50);
    p.loss = 0.05;
    let (net, a, _, b) = line(p);
    let mut sim = Sim::new(net, seed);
    let f = sim
        .add_traffic(
            "on",
            a,
            b,
            Pattern::OnOff {
                mean_on: Duration::from_millis(500),
                mean_off: Duration::from_millis(500),
                distribution: meshcast_proto::traffic::PeriodDistribution::Exponential,
            },
            Rate::from_kbps(1500),
            1000,
            (Time::ZERO, Time::from_secs(30)),
            seed,
        )
        .unwrap();
    let stats = run(sim, 30);
    let series = (0..30).map(|s| fig(&stats, f, s, s + 1)).collect();
    (series, stats.counters)
}

#[test]
fn same_seed_replays_other_seed_differs() {
    let (s1, c1) = lossy_run(7);
    let (s2, c2) = lossy_run(7);
    assert_eq!(s1, s2);
    assert_eq!(c1, c2);
    let (s3, c3) = lossy_run(8);
    assert_ne!(s1, s3);
    assert_ne!(c1, c3);
    // Random loss is about 5% of packets that reached the wire.
    let frac = c1.drops_loss as f64 / c1.hops as f64;
    assert!(frac > 0.02 && frac < 0.04, "{frac}"); // 5% of the R->B half of the hops
}

#[test]
fn no_listener_and_scheduling_errors() {
    let (net, a, r, b) = line(params(1000, 5, 50));
    let link = net.link_id(r, b).unwrap();
    let mut sim = Sim::new(net, 1);
    struct Once(Option<Transmit>);
    impl Endpoint for Once {
        fn handle_datagram(&mut self, _: Time, _: Addr, _: &[u8]) {}
        fn handle_timeout(&mut self, _: Time) {}
        fn poll_transmit(&mut self, _: Time) -> Option<Transmit> {
            self.0.take()
        }
        fn poll_timeout(&self) -> Option<Time> {
            None
        }
        fn poll_event(&mut self) -> Option<Event> {
            None
        }
    }
    let tx = Transmit {
        to: Addr::new(b, 4242),
        payload: vec![0; 10],
    };
    sim.add_endpoint(Addr::new(a, 1), Box::new(Once(Some(tx))))
        .unwrap();
    assert_eq!(
        sim.add_endpoint(Addr::new(a, 1), Box::new(Once(None)))
            .unwrap_err(),
        SimError::AddrInUse(Addr::new(a, 1))
    );
    sim.run_until(Time::from_secs(1), &mut |_| {});
    assert_eq!(
        sim.schedule(Time::ZERO, Action::LinkDown(link))
            .unwrap_err(),
        SimError::InThePast {
            at: Time::ZERO,
            now: Time::from_secs(1)
        }
    );
    assert_eq!(
        sim.schedule(Time::from_secs(2), Action::LinkDown(LinkId(99)))
            .unwrap_err(),
        SimError::NoSuchLink(LinkId(99))
    );
    let stats = sim.into_stats();
    assert_eq!(stats.counters.drops_no_listener, 1);
    assert_eq!(stats.counters.hops, 2);
}

#[test]
fn join_and_leave_start_and_close_endpoints() {
    let (net, a, _, b) = line(params(1000, 5, 50));
    let mut sim = Sim::new(net, 1);
    struct Hook(NodeId);
    impl Membership for Hook {
        fn join(&mut self, _node: NodeId, now: Time) -> Vec<(u16, Box<dyn Endpoint>)> {
            let cfg = SourceConfig {
                flow: FlowId(0),
                to: Addr::new(self.0, SINK_PORT),
                rate: Rate::from_kbps(80),
                packet_bytes: 1000,
                start: now,
                stop: Time::MAX,
                pattern: Pattern::Cbr,
                seed: 0,
                exact_phase: true,
            };
            vec![(7, Box::new(TrafficSource::new(cfg).unwrap()))]
        }
    }
    sim.set_membership(Box::new(Hook(b)));
    let f = sim.add_flow("joiner", "cbr", a, vec![b]);
    sim.add_endpoint(Addr::new(b, SINK_PORT), Box::new(TrafficSink::new()))
        .unwrap();
    sim.schedule(Time::from_secs(5), Action::Join(a)).unwrap();
    sim.schedule(Time::from_secs(15), Action::Leave(a)).unwrap();
    let stats = run(sim, 20);
    assert_eq!(fig(&stats, f, 0, 5).send_kbps, 0.0);
    assert_eq!(fig(&stats, f, 5, 15).recv_kbps_min, 80.0);
    assert_eq!(fig(&stats, f, 16, 20).send_kbps, 0.0);
    assert_eq!(stats.membership.len(), 2);
    assert!(stats.membership[0].joined && !stats.membership[1].joined);
}

/// RED at twice its capacity of offered load: the average queue rises
/// into the gentle region until half the arrivals are dropped. With the
/// count rule drops are spaced uniformly over 1..1/p_b arrivals, so the
/// drop rate is about 2·p_b: p_b = 1/4, reached at an average of
/// max_th + (1/4 − max_p) / (1 − max_p) · max_th = 17.5 packets with the
/// defaults. The queue stays there, far below the 1000-packet hard limit,
/// and the link stays busy.
#[test]
fn red_keeps_the_queue_near_its_equilibrium() {
    let mut p = params(1000, 5, 1000);
    p.red = Some(crate::network::Red::default());
    let (net, a, r, b) = line(p);
    let bottleneck = net.link_id(r, b).unwrap();
    let mut sim = Sim::new(net, 1);
    cbr(&mut sim, "f", a, b, 2000, (0, 60));
    let stats = run(sim, 60);
    let l = stats.links[bottleneck.index()].figures(20, 60, stats.end);
    assert!(
        (16.0..19.5).contains(&l.queue_pkts_mean),
        "mean queue {:.1}: {l:?}",
        l.queue_pkts_mean
    );
    assert!(l.queue_pkts_max < 40, "{l:?}");
    assert!((l.utilisation - 1.0).abs() < 1e-2, "{l:?}");
    // Drop-tail alone would have filled the 1000-packet queue.
    assert!(l.drops_queue > 0);
}

#[test]
fn bad_red_parameters_are_refused() {
    let mut p = params(1000, 5, 10);
    p.red = Some(crate::network::Red {
        min_th: 10.0,
        max_th: 5.0,
        ..Default::default()
    });
    let mut net = Network::new();
    let a = net.add_node("A", NodeKind::Host).unwrap();
    let b = net.add_node("B", NodeKind::Host).unwrap();
    assert!(matches!(
        net.add_link(a, b, p),
        Err(crate::network::NetworkError::Red(..))
    ));
}
