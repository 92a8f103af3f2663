//! A node's protocol clock counts from its epoch, on the wall clock
//! ([`Node::with_epoch`]) or on the monotonic one
//! ([`Node::with_epoch_instant`]).

use meshcast_core::Time;
use meshcast_net::{AddrBook, Node};
use meshcast_proto::traffic::TrafficSink;
use std::time::{Duration, Instant, SystemTime};

fn socket() -> std::net::UdpSocket {
    std::net::UdpSocket::bind("127.0.0.1:0").expect("a loopback socket")
}

/// `t` lies in `[from, from + 500 ms)` (the slack is a loaded machine's
/// time between creating the node and reading its clock).
fn near(t: Time, from: Duration) -> bool {
    let t = Duration::from_nanos(t.as_nanos());
    t >= from && t < from + Duration::from_millis(500)
}

#[tokio::test]
async fn a_node_counts_from_its_epoch_on_either_clock() {
    let three_s = Duration::from_secs(3);
    let ten_s = Duration::from_secs(10);
    let mono =
        |epoch| Node::with_epoch_instant(TrafficSink::new(), socket(), AddrBook::new(), epoch);
    let wall = |epoch| Node::with_epoch(TrafficSink::new(), socket(), AddrBook::new(), epoch);
    // An epoch three seconds past: the clock reads three seconds.
    let n = mono(Instant::now() - three_s).expect("node");
    assert!(near(n.now(), three_s), "{:?}", n.now());
    let n = wall(SystemTime::now() - three_s).expect("node");
    assert!(near(n.now(), three_s), "{:?}", n.now());
    // One still ahead: the node starts at zero.
    let n = mono(Instant::now() + ten_s).expect("node");
    assert!(near(n.now(), Duration::ZERO), "{:?}", n.now());
    let n = wall(SystemTime::now() + ten_s).expect("node");
    assert!(near(n.now(), Duration::ZERO), "{:?}", n.now());
}

/// An endpoint whose one timer is due at time zero ("at once").
struct AtOnce(bool);

impl meshcast_core::Endpoint for AtOnce {
    fn handle_datagram(&mut self, _: Time, _: meshcast_core::Addr, _: &[u8]) {}
    fn handle_timeout(&mut self, _: Time) {
        self.0 = true;
    }
    fn poll_transmit(&mut self, _: Time) -> Option<meshcast_core::Transmit> {
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        (!self.0).then_some(Time::ZERO)
    }
    fn poll_event(&mut self) -> Option<meshcast_core::Event> {
        None
    }
}

/// A timer due before the node started counts as late only from the
/// start: with its epoch a year back, a node once reported its first
/// timer as a year late (`timer_late_ms_max` in a node's summary).
#[tokio::test]
async fn a_timer_due_before_the_start_is_late_only_from_the_start() {
    let year = Duration::from_secs(365 * 24 * 3600);
    let node = Node::with_epoch(
        AtOnce(false),
        socket(),
        AddrBook::new(),
        SystemTime::now() - year,
    )
    .expect("node");
    let done = node
        .run(tokio::time::sleep(Duration::from_millis(200)), |_, _| {})
        .await
        .expect("the node runs");
    assert!(done.endpoint.0, "the timer fired");
    let late = done.timer_late.max().expect("one timer");
    assert!(late < meshcast_core::Duration::from_secs(1), "{late:?}");
}
