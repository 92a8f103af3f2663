//! `meshcast emu` for real: network namespaces, shapers, the delay
//! element and node processes. These tests need root (as CI runs); as
//! another user they say so and pass without running.

use meshcast::emu::delay::{enter_netns, realtime_priority};
use meshcast::emu::machine::{CpuTimes, STOLEN_WARNING};
use meshcast::emu::underlay::{Underlay, node_addr};
use meshcast::scenario::Scenario;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The emulation tests run one at a time: each measures real time on a
/// two-core machine, and the delay element's accuracy is one of the
/// figures.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn root() -> bool {
    let root = meshcast::emu::is_root();
    if !root {
        eprintln!("not root: the emulation tests need network namespaces; skipped");
    }
    root
}

/// Namespaces a process with this pid made (`mc<PID>.`).
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("mc{pid}.")))
        .map(str::to_owned)
        .collect()
}

/// Two hosts in a conference capped at 300 kbit/s and a router R, for
/// 12 s; each test adds its links and events.
const HOSTS: &str = r#"
name = "two"
duration_s = 12
[conference]
participants = ["A", "B"]
max_rate_kbps = 300
[[node]]
id = "A"
kind = "host"
[[node]]
id = "B"
kind = "host"
[[node]]
id = "R"
kind = "router"
"#;

/// [`HOSTS`] with A–R (20 ms) and R–B (30 ms).
fn two_hosts() -> String {
    HOSTS.to_owned()
        + r#"[[link]]
from = "A"
to = "R"
capacity_kbps = 10000
delay_ms = 20
queue_bytes = 100000
[[link]]
from = "R"
to = "B"
capacity_kbps = 10000
delay_ms = 30
queue_bytes = 100000
"#
}

/// A UDP echo on `addr` inside `netns`, until `stop` is dropped.
fn echo(netns: PathBuf, addr: SocketAddr) -> std::sync::mpsc::Sender<()> {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let (ready, is_ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        enter_netns(&netns).expect("enter B's namespace");
        realtime_priority().expect("root may run at real-time priority");
        let s = UdpSocket::bind(addr).expect("bind the echo");
        s.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        ready.send(()).expect("test waits");
        let mut buf = [0u8; 2048];
        while let Err(std::sync::mpsc::TryRecvError::Empty) = stopped.try_recv() {
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                let _ = s.send_to(&buf[..n], from);
            }
        }
    });
    is_ready.recv().expect("echo starts");
    stop
}

/// `count` round trips from A's namespace to the echo at `b`, one at a
/// time 20 ms apart (so the links are idle for each), with datagrams of
/// `payload` bytes (at least 4), in milliseconds. The probe runs at
/// real-time priority, like the element.
fn round_trips(a_ns: PathBuf, b: SocketAddr, payload: usize, count: u32) -> Vec<f64> {
    std::thread::spawn(move || {
        enter_netns(&a_ns).expect("enter A's namespace");
        realtime_priority().expect("root may run at real-time priority");
        let s = UdpSocket::bind((node_addr(0), 0)).expect("bind");
        s.set_read_timeout(Some(Duration::from_secs(1)))
            .expect("timeout");
        let mut rtts = Vec::new();
        let mut probe = vec![0u8; payload];
        let mut buf = vec![0u8; payload + 1];
        for i in 0..count {
            probe[..4].copy_from_slice(&i.to_be_bytes());
            let t = Instant::now();
            s.send_to(&probe, b).expect("send");
            let (n, _) = s.recv_from(&mut buf).expect("the echo answers");
            assert_eq!(&buf[..n], &probe[..]);
            rtts.push(t.elapsed().as_secs_f64() * 1e3);
            std::thread::sleep(Duration::from_millis(20));
        }
        rtts
    })
    .join()
    .expect("probe thread")
}

/// How many times a real-time measurement is tried before giving up on
/// one the hypervisor left alone.
const TRIES: usize = 6;

/// `measure` until a try during which the machine's hypervisor took no
/// more than [`STOLEN_WARNING`] of its CPU time (steal, [`CpuTimes`]), at
/// most [`TRIES`] times: every try, and whether the last was such a
/// clean one. While the hypervisor takes CPU time nothing in the machine
/// runs, real-time threads included, so a timing taken meanwhile is the
/// host's and not the code's; steal only ever adds time, so a lower
/// bound holds in every try.
fn until_unstolen<T>(mut measure: impl FnMut() -> T) -> (Vec<T>, bool) {
    let mut tries = Vec::new();
    for k in 1..=TRIES {
        let before = CpuTimes::now();
        tries.push(measure());
        match CpuTimes::between(before, CpuTimes::now()).map(|s| s.stolen) {
            Some(s) if s > STOLEN_WARNING => eprintln!(
                "try {k}: the hypervisor took {:.1}% of the CPU time meanwhile; measuring again",
                s * 100.0
            ),
            _ => return (tries, true),
        }
    }
    eprintln!(
        "the hypervisor took more than {:.0}% of the CPU time in each of {TRIES} tries: \
         only the timings' lower bounds are checked",
        STOLEN_WARNING * 100.0
    );
    (tries, false)
}

/// The element's round trip. It and the test's echo and probe run at
/// real-time priority, so the figures are the element's and not the
/// scheduler's treatment of the test's own threads: eight busy processes
/// on the machine gave median 104.0 and p90 112.0 at normal priority
/// (with the element alone at real-time priority: p90 104.0; all three:
/// 100.3). Nor are they the host's: on the project's virtual machines a
/// hypervisor taking 2.5–5.5% of the CPU time gave p90 106–110 ms (and
/// CI runs failed on 105.3 and 105.4), against 101.6–102.5 while it took
/// under 1%, so the tails are judged on a try it left alone
/// ([`until_unstolen`]).
#[test]
fn the_delay_element_gives_links_their_delay_and_teardown_leaves_nothing() {
    if !root() {
        return;
    }
    let _one = serial();
    let sc = Scenario::parse("two.toml", &two_hosts(), &[]).expect("valid");
    let mut u = Underlay::build(&sc).expect("underlay");
    assert_eq!(namespaces_of(std::process::id()).len(), 4);
    let b = SocketAddr::from((node_addr(1), 7000));
    let echoing = echo(u.netns_path(1), b);
    // Two hops of 20 and 30 ms each way: 100 ms round trip.
    let (tries, clean) = until_unstolen(|| round_trips(u.netns_path(0), b, 4, 40));
    for rtts in &tries {
        let mut sorted = rtts.clone();
        sorted.sort_by(f64::total_cmp);
        let (min, median, p90) = (sorted[0], sorted[20], sorted[36]);
        eprintln!(
            "round trip over 50 ms each way: min {min:.2} median {median:.2} p90 {p90:.2} ms"
        );
        assert!(
            min >= 99.9,
            "a round trip shorter than the delays: {rtts:?}"
        );
    }
    if clean {
        let mut sorted = tries.last().expect("one try at least").clone();
        sorted.sort_by(f64::total_cmp);
        assert!(sorted[20] <= 105.0 && sorted[36] <= 105.0, "{sorted:?}");
    }
    drop(echoing);
    let c = u.teardown().expect("teardown");
    drop(u);
    assert_eq!(namespaces_of(std::process::id()), Vec::<String>::new());
    // Its own record: at real-time priority, every probe and echo passed
    // on (40 of each over two hops), each one's lateness counted.
    assert!(c.realtime);
    let frames: u64 = c.frames.iter().sum();
    assert!(frames >= 160, "{c:?}");
    assert_eq!(c.late.count(), frames, "{c:?}");
    let dropped: u64 = [&c.lost, &c.wrong_way, &c.send_errors]
        .iter()
        .flat_map(|v| v.iter())
        .sum();
    assert_eq!(dropped, 0, "{c:?}");
}

/// A link takes a packet's time on the wire at its rate even when idle, as
/// the simulator's links do: htb alone lets an idle link's frame through
/// at once (its bucket holds a full frame), and the delay element
/// serialises it. Over 1 Mbit/s hops of 20 and 30 ms each way, a datagram
/// of 1400 IP bytes takes 11.2 ms a hop, four hops a round trip: 144.8 ms
/// against 101.0 for one of 32 bytes (0.26 ms a hop).
#[test]
fn links_take_each_packet_its_time_on_the_wire() {
    if !root() {
        return;
    }
    let _one = serial();
    let slow = two_hosts().replace("capacity_kbps = 10000", "capacity_kbps = 1000");
    let sc = Scenario::parse("two.toml", &slow, &[]).expect("valid");
    let u = Underlay::build(&sc).expect("underlay");
    let b = SocketAddr::from((node_addr(1), 7000));
    let echoing = echo(u.netns_path(1), b);
    let stats = |payload: usize| {
        let mut rtts = round_trips(u.netns_path(0), b, payload, 20);
        rtts.sort_by(f64::total_cmp);
        (rtts[0], rtts[10])
    };
    // 28 bytes of IP and UDP headers. The floors hold in every try, the
    // ceilings in one the hypervisor left alone.
    let (tries, clean) = until_unstolen(|| (stats(4), stats(1400 - 28)));
    drop(echoing);
    for &((small_min, small_median), (large_min, large_median)) in &tries {
        eprintln!(
            "round trips over 1 Mbit/s: 32 IP bytes min {small_min:.2} median {small_median:.2} ms, \
             1400 min {large_min:.2} median {large_median:.2} ms"
        );
        assert!(small_min >= 100.9 && large_min >= 144.7, "{tries:?}");
    }
    let ((small_min, small_median), (large_min, large_median)) =
        *tries.last().expect("one try at least");
    if clean {
        assert!(small_min < 106.0 && small_median < 106.0, "{tries:?}");
        assert!(large_min < 150.0 && large_median < 150.0, "{tries:?}");
    }
}

/// The queue counters read over netlink are `tc`'s: after 30 round trips
/// of 1028 IP bytes each way over A–R–B, every link direction's counters
/// read the same both ways, and each direction carried its 30 datagrams.
#[test]
fn queue_counters_over_netlink_are_tcs() {
    if !root() {
        return;
    }
    let _one = serial();
    let sc = Scenario::parse("two.toml", &two_hosts(), &[]).expect("valid");
    let mut u = Underlay::build(&sc).expect("underlay");
    let b = SocketAddr::from((node_addr(1), 7000));
    let echoing = echo(u.netns_path(1), b);
    round_trips(u.netns_path(0), b, 1000, 30);
    drop(echoing);
    let epoch = Instant::now();
    let clock = || meshcast_core::Time::from_nanos(epoch.elapsed().as_nanos() as u64);
    let read = u.queue_stats(clock).expect("netlink");
    let netlink_took = epoch.elapsed();
    // `tc`'s view, by direction: its namespace is the direction's sender.
    let tc_began = Instant::now();
    let mut by_tc = vec![None; read.len()];
    for (n, _) in sc.links.iter().enumerate() {
        for &d in u.directions(n) {
            let from = u.network().links()[d.index()].from.index();
            let out = Command::new("tc")
                .args(["-n", u.netns(from), "-s", "-j", "qdisc", "show", "dev"])
                .arg(format!("l{n}"))
                .output()
                .expect("tc runs");
            let qdiscs: Vec<serde_json::Value> =
                serde_json::from_slice(&out.stdout).expect("tc prints JSON");
            let q = qdiscs
                .iter()
                .find(|q| q["handle"] == "10:")
                .expect("the link's queue");
            let num = |k: &str| q[k].as_u64().expect("a counter");
            by_tc[d.index()] = Some((num("bytes"), num("packets"), num("drops"), num("qlen")));
        }
    }
    // For the record (no bound: timing is the machine's): the first read
    // also asks each namespace for its interfaces' names.
    let again = Instant::now();
    u.queue_stats(clock).expect("netlink");
    eprintln!(
        "counters of 3 namespaces: netlink {:.3} ms (first read, naming the interfaces too: {:.3} ms), \
         tc {:.3} ms (4 calls)",
        again.elapsed().as_secs_f64() * 1e3,
        netlink_took.as_secs_f64() * 1e3,
        tc_began
            .elapsed()
            .saturating_sub(again.elapsed())
            .as_secs_f64()
            * 1e3
    );
    let by_netlink: Vec<_> = read
        .iter()
        .map(|s| s.map(|s| (s.bytes, s.packets, s.drops, u64::from(s.qlen))))
        .collect();
    assert_eq!(by_netlink, by_tc);
    for s in read.iter().flatten() {
        // Each datagram: 1000 bytes and 28 of UDP and IP headers.
        assert!(s.packets >= 30 && s.bytes >= 30 * 1028, "{s:?}");
        assert!(s.at <= clock(), "{s:?}");
    }
    assert_eq!(read.iter().flatten().count(), 4);
}

fn meshcast() -> Command {
    Command::new(env!("CARGO_BIN_EXE_meshcast"))
}

/// Run `meshcast emu` on `file` into `out`; its summary.
fn emu_summary(file: &Path, out: &Path) -> serde_json::Value {
    command_summary("emu", file, out)
}

/// Run `meshcast run` (the simulator) on `file` into `out`; its summary.
fn sim_summary(file: &Path, out: &Path) -> serde_json::Value {
    command_summary("run", file, out)
}

fn command_summary(command: &str, file: &Path, out: &Path) -> serde_json::Value {
    let st = meshcast()
        .arg(command)
        .arg(file)
        .args(["--json", "--out"])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("meshcast runs");
    assert!(st.success(), "meshcast {command} {}", file.display());
    summary(out)
}

/// A scenario file under `scenarios/celerity/`.
fn celerity_scenario(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/celerity")
        .join(file)
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary"))
        .expect("JSON")
}

#[test]
fn ctrl_c_tears_everything_down() {
    if !root() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("two.toml");
    std::fs::write(
        &file,
        two_hosts().replace("duration_s = 12", "duration_s = 60"),
    )
    .expect("write");
    let mut child = meshcast()
        .arg("emu")
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("out"))
        .spawn()
        .expect("meshcast runs");
    let pid = child.id();
    let t = Instant::now();
    while namespaces_of(pid).len() < 4 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(namespaces_of(pid).len(), 4, "the underlay was built");
    std::thread::sleep(Duration::from_secs(4));
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill");
    let status = child.wait().expect("meshcast ends");
    assert_eq!(status.code(), Some(1), "an interrupted run fails");
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    // No node process is left either.
    let ps = Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .expect("ps");
    let procs = String::from_utf8_lossy(&ps.stdout).into_owned();
    let out = dir.path().join("out").display().to_string();
    assert!(
        !procs.lines().any(|l| l.contains(&out)),
        "a node survived: {procs}"
    );
}

/// Celerity's sources size their packets for their paths for real as in
/// the simulator: the tails measure each link's serialisation (data
/// against control packets' base delays), which the delay element now
/// gives every packet. Over a 250-kbit/s link (32 µs a byte) the 30-ms
/// target makes both sessions' packets about 890 media bytes from the
/// decision at 20 s; their headers then take 2.6% of the bytes where
/// 1400-byte packets give 1.7% (as the element gave before it serialised).
#[test]
fn packets_are_sized_for_their_paths_as_simulated() {
    if !root() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("sized.toml");
    let sc = HOSTS.replace("duration_s = 12", "duration_s = 30")
        + r#"
[[link]]
from = "A"
to = "R"
capacity_kbps = 250
delay_ms = 10
queue_bytes = 30000
[[link]]
from = "R"
to = "B"
capacity_kbps = 10000
delay_ms = 10
queue_bytes = 100000
[[report.window]]
from_s = 22
to_s = 30
"#;
    std::fs::write(&file, sc).expect("write");
    let e = emu_summary(&file, &dir.path().join("emu"));
    let s = sim_summary(&file, &dir.path().join("sim"));
    let headers = |v: &serde_json::Value| {
        v["overhead"]["windows"][0]["header_fraction"]
            .as_f64()
            .expect("header fraction")
    };
    let (real, simulated) = (headers(&e), headers(&s));
    eprintln!("headers' share in [22,30]: emu {real}, sim {simulated}");
    assert!(
        simulated > 0.022,
        "the simulator sized its packets: {simulated}"
    );
    assert!(
        (real - simulated).abs() <= 0.1 * simulated,
        "emu {real} against the simulator's {simulated}"
    );
}

/// The acceptance run: the steady dumbbell for real (200 s) against the
/// simulator's figures for the same file: every session's rate, and the
/// sessions' mean delay.
#[test]
fn the_steady_dumbbell_for_real_matches_the_simulator() {
    if !root() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = &celerity_scenario("dumbbell-steady.toml");
    let (emu, sim) = (dir.path().join("emu"), dir.path().join("sim"));
    let mut child = meshcast()
        .arg("emu")
        .arg(scenario)
        .args(["--json", "--out"])
        .arg(&emu)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("meshcast emu runs");
    let pid = child.id();
    assert!(child.wait().expect("meshcast emu ends").success());
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    let (e, s) = (summary(&emu), sim_summary(scenario, &sim));
    // The same schema, but for the emulation's own record: the same keys
    // all the way down the flows.
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut top = keys(&e);
    top.retain(|k| k != "emulation");
    assert_eq!(top, keys(&s));
    assert!(s.get("emulation").is_none());
    let d = &e["emulation"]["delay_element"];
    assert_eq!(d["realtime"], true, "{d}");
    assert!(d["frames"].as_u64().expect("frames") > 10_000, "{d}");
    for dropped in ["lost", "wrong_way", "send_errors"] {
        assert_eq!(d[dropped], 0, "{d}");
    }
    assert!(d["late_ms_p99"].is_f64(), "{d}");
    let stolen = |k: &str| e["emulation"][k].as_f64().expect("Linux counts steal");
    for k in [
        "stolen_cpu_share",
        "stolen_cpu_share_max_1s",
        "cpu_busy_share",
    ] {
        assert!((0.0..=1.0).contains(&stolen(k)), "{}", e["emulation"]);
    }
    assert!(e["emulation"]["node_timer_late_ms_p99"].as_f64() >= Some(0.0));
    assert!(
        e["emulation"]["wall_clock_step_ms"].is_f64(),
        "{}",
        e["emulation"]
    );
    assert_eq!(keys(&e["flows"][0]), keys(&s["flows"][0]));
    assert_eq!(
        keys(&e["flows"][0]["windows"][0]),
        keys(&s["flows"][0]["windows"][0])
    );
    let window = |v: &serde_json::Value| -> Vec<(String, f64)> {
        v["flows"]
            .as_array()
            .expect("flows")
            .iter()
            .map(|f| {
                let w = &f["windows"][0];
                assert_eq!(
                    (w["from_s"].as_u64(), w["to_s"].as_u64()),
                    (Some(120), Some(200))
                );
                (
                    f["id"].as_str().expect("id").to_owned(),
                    w["recv_kbps_min"].as_f64().expect("rate"),
                )
            })
            .collect()
    };
    let (real, simulated) = (window(&e), window(&s));
    eprintln!("[120,200] worst receiver, kbit/s: emu {real:?}, sim {simulated:?}");
    // The sessions' mean delay: queue, serialisation and propagation as
    // simulated (before the delay element serialised, the real runs' were
    // 48-57 ms against 65-71 simulated: 24% short).
    let delay = |v: &serde_json::Value| -> f64 {
        let flows = v["flows"].as_array().expect("flows");
        flows
            .iter()
            .map(|f| f["windows"][0]["delay_ms_mean"].as_f64().expect("delay"))
            .sum::<f64>()
            / flows.len() as f64
    };
    // The machine meanwhile: the window's share of CPU time the
    // hypervisor took, and the run's other figures of its faithfulness,
    // shown whatever follows.
    let machine = &e["emulation"];
    eprintln!("the machine during the run: {machine}");
    let window = &machine["windows"];
    assert_eq!(window.as_array().map(Vec::len), Some(1), "{machine}");
    assert_eq!(
        (window[0]["from_s"].as_u64(), window[0]["to_s"].as_u64()),
        (Some(120), Some(200))
    );
    let stolen = window[0]["stolen_cpu_share"].as_f64().unwrap_or(0.0);
    assert!((0.0..=1.0).contains(&stolen), "{machine}");
    // The links' figures: no direction carried more than its capacity
    // (within a packet over the 80 s and the reads' stamps), and the
    // offices' link, which the four sessions share, ran full whenever the
    // machine ran. While the hypervisor has a CPU nothing on it runs, the
    // kernel's shaper included, whose bucket holds one frame (26.7 ms at
    // 480 kbit/s): a longer stop is time the link does not carry. A CI
    // run's E->F read 0.982 (its sessions
    // 224.6-226.7 kbit/s, within 15% as below; what the hypervisor took
    // was not yet shown) where this machine's runs, with nothing stolen,
    // read 0.9998-1.0002 beside one or three busy processes and with a
    // real-time thread taking 3 ms of every 100 on each CPU (its sessions
    // 230.72 in each). The hypervisor's share is of both CPUs' time, so
    // one or the other was held for at most twice it.
    for l in e["links"].as_array().expect("links") {
        let busy = l["windows"][0]["utilisation"]
            .as_f64()
            .expect("utilisation");
        assert!(busy <= 1.002, "{}: {busy}", l["id"]);
        if l["id"] == "E->F" || l["id"] == "F->E" {
            assert!(
                busy >= 0.99 - 2.0 * stolen,
                "{}: {busy}, with {stolen} of the CPU time stolen",
                l["id"]
            );
        }
    }
    let (real_delay, simulated_delay) = (delay(&e), delay(&s));
    eprintln!("[120,200] mean delay: emu {real_delay:.1} ms, sim {simulated_delay:.1} ms");
    assert!(
        (real_delay - simulated_delay).abs() <= 0.15 * simulated_delay,
        "mean delay {real_delay} ms is not within 15% of the simulator's {simulated_delay}"
    );
    for ((id, r), (_, m)) in real.iter().zip(&simulated) {
        assert!(
            (r - 240.0).abs() <= 0.15 * 240.0,
            "session {id}: {r} kbit/s is not within 15% of 240"
        );
        assert!(
            (r - m).abs() <= 0.15 * m,
            "session {id}: {r} kbit/s is not within 15% of the simulator's {m}"
        );
    }
    // `real_vs_sim.py --compare` reads the two reports as this test does.
    let json = dir.path().join("compare.json");
    let st = Command::new("python3")
        .arg(celerity_scenario("real_vs_sim.py"))
        .arg("--compare")
        .args([&emu, &sim])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs");
    assert!(st.success(), "real_vs_sim.py --compare");
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("its JSON")).expect("JSON");
    let flows = c["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), real.len(), "{c}");
    for (f, ((id, r), (_, m))) in flows.iter().zip(real.iter().zip(&simulated)) {
        assert_eq!(f["id"], id.as_str(), "{f}");
        assert_eq!(f["real"]["recv_kbps_min"].as_f64(), Some(*r), "{f}");
        assert_eq!(f["sim"]["recv_kbps_min"].as_f64(), Some(*m), "{f}");
        let optimum = f["optimum_kbps"].as_f64().expect("a session's optimum");
        assert!((optimum - 240.0).abs() < 0.5, "{f}");
        assert_eq!(f["real"]["fraction"].as_f64(), Some(r / optimum), "{f}");
    }
    assert_eq!(c["emulation"], e["emulation"]);
}

/// One-way links (a triangle A→R→B, B→A) and cross traffic over real
/// sockets: the conference reaches its cap both ways, the constant-rate
/// flow (the simulator's own source and sink) arrives whole, and the
/// delays are the paths'.
#[test]
fn one_way_links_and_cross_traffic() {
    if !root() {
        return;
    }
    let _one = serial();
    let sc = HOSTS.replace("duration_s = 12", "duration_s = 14")
        + r#"
[[link]]
from = "A"
to = "R"
capacity_kbps = 5000
delay_ms = 10
queue_packets = 100
both_ways = false
[[link]]
from = "R"
to = "B"
capacity_kbps = 5000
delay_ms = 15
queue_packets = 100
both_ways = false
[[link]]
from = "B"
to = "A"
capacity_kbps = 5000
delay_ms = 5
queue_packets = 100
both_ways = false
[[event]]
at_s = 2
kind = "cbr"
id = "cross"
from = "A"
to = "B"
rate_kbps = 1000
packet_bytes = 1000
until_s = 12
[[report.window]]
from_s = 8
to_s = 12
"#;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("triangle.toml");
    std::fs::write(&file, sc).expect("write");
    let out = dir.path().join("out");
    let s = emu_summary(&file, &out);
    let flow = |id: &str| {
        s["flows"]
            .as_array()
            .expect("flows")
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no flow {id}"))["windows"][0]
            .clone()
    };
    let num = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    for (id, path_ms) in [("A", 25.0), ("B", 5.0)] {
        let w = flow(id);
        eprintln!("{id}: {w}");
        assert!(num(&w, "recv_kbps_min") >= 270.0, "{id}: {w}");
        let d = num(&w, "delay_ms_mean");
        assert!((path_ms..path_ms + 10.0).contains(&d), "{id}: {w}");
    }
    let cross = flow("cross");
    assert!(num(&cross, "recv_kbps_min") >= 950.0, "{cross}");
}

/// A `drop_every` event applies in the delay element: from 6 s every 4th
/// packet A sends to B is dropped (a quarter of A's session at B), none
/// the other way.
#[test]
fn drop_patterns_apply_from_their_event() {
    if !root() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("drop.toml");
    // The pattern itself is what is measured: local loss recovery, which
    // makes good most of what a link drops (25% here: 2.9% remained), is
    // off.
    std::fs::write(
        &file,
        HOSTS.replace(
            "max_rate_kbps = 300",
            "max_rate_kbps = 300\nrepair_ratio = 0",
        ) + r#"[[link]]
from = "A"
to = "B"
capacity_kbps = 10000
delay_ms = 20
queue_bytes = 100000
[[event]]
at_s = 6
kind = "drop_every"
from = "A"
to = "B"
every = 4
[[report.window]]
from_s = 8
to_s = 11
"#,
    )
    .expect("write");
    let out = dir.path().join("out");
    let s = emu_summary(&file, &out);
    let loss = |i: usize| {
        s["flows"][i]["windows"][0]["loss"]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    eprintln!("loss in [8,11): A {} B {}", loss(0), loss(1));
    assert!((0.2..=0.3).contains(&loss(0)), "{}", s["flows"][0]);
    assert!(loss(1) < 0.01, "{}", s["flows"][1]);
}

/// Join and leave events start and stop a node process: C joins at 3 s
/// and leaves at 10 s; the membership log is the simulator's, and in
/// [6,10) every session is within 15% of what the simulator gives.
#[test]
fn joins_and_leaves_start_and_stop_nodes() {
    if !root() {
        return;
    }
    let _one = serial();
    let mut sc = String::from(
        "name = \"join\"\nduration_s = 14\n[conference]\nparticipants = [\"A\", \"B\", \"C\"]\nmax_rate_kbps = 300\n[[node]]\nid = \"R\"\nkind = \"router\"\n",
    );
    for h in ["A", "B", "C"] {
        sc += &format!(
            "[[node]]\nid = \"{h}\"\nkind = \"host\"\n[[link]]\nfrom = \"{h}\"\nto = \"R\"\ncapacity_kbps = 10000\ndelay_ms = 5\nqueue_bytes = 100000\n"
        );
    }
    sc += "[[event]]\nat_s = 3\nkind = \"join\"\nnode = \"C\"\n[[event]]\nat_s = 10\nkind = \"leave\"\nnode = \"C\"\n[[report.window]]\nfrom_s = 6\nto_s = 10\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("join.toml");
    std::fs::write(&file, sc).expect("write");
    let e = emu_summary(&file, &dir.path().join("emu"));
    let s = sim_summary(&file, &dir.path().join("sim"));
    assert_eq!(e["membership"], s["membership"]);
    assert_eq!(e["membership"].as_array().map(Vec::len), Some(4));
    for i in 0..3 {
        let rate = |v: &serde_json::Value| {
            v["flows"][i]["windows"][0]["recv_kbps_min"]
                .as_f64()
                .unwrap_or(f64::NAN)
        };
        let (real, sim) = (rate(&e), rate(&s));
        eprintln!("{}: emu {real} sim {sim}", e["flows"][i]["id"]);
        assert!((real - sim).abs() <= 0.15 * sim, "{}", e["flows"][i]);
    }
}

/// The simulator's TFRC endpoints over real sockets send what they send
/// in the simulator: a bulk flow over 10 Mbit/s, 50 ms of round trip and
/// every 200th packet dropped, within 10% of the simulated rate. (Before
/// the sender kept RFC 5348 §4.6's nominal schedule, Tokio's late timers
/// stretched every interval and it sent 25% less for real.)
#[test]
fn tfrc_for_real_sends_what_it_sends_simulated() {
    if !root() {
        return;
    }
    let _one = serial();
    let sc = "name = \"tf\"\nduration_s = 30\n[[node]]\nid = \"A\"\nkind = \"host\"\n[[node]]\nid = \"B\"\nkind = \"host\"\n[[link]]\nfrom = \"A\"\nto = \"B\"\ncapacity_kbps = 10000\ndelay_ms = 25\nqueue_packets = 1000\n[[event]]\nat_s = 0\nkind = \"drop_every\"\nfrom = \"A\"\nto = \"B\"\nevery = 200\n[[event]]\nat_s = 1\nkind = \"tfrc\"\nid = \"tf\"\nfrom = \"A\"\nto = \"B\"\npacket_bytes = 1000\nuntil_s = 30\n[[report.window]]\nfrom_s = 15\nto_s = 30\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tf.toml");
    std::fs::write(&file, sc).expect("write");
    let rate = |s: &serde_json::Value| {
        s["flows"][0]["windows"][0]["recv_kbps_min"]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    let real = rate(&emu_summary(&file, &dir.path().join("emu")));
    let sim = rate(&sim_summary(&file, &dir.path().join("sim")));
    eprintln!("TFRC in [15,30): emu {real} kbit/s, sim {sim} kbit/s");
    assert!((real - sim).abs() <= 0.1 * sim, "emu {real}, sim {sim}");
}

/// Local loss recovery over real sockets (scenarios/celerity/lossy-lan.toml:
/// the steady dumbbell whose A–B LAN loses 5% in the delay element): the
/// repairs travel, decode and deliver, so every session's worst receiver
/// loses at most 2% and gets at least 180 kbit/s, as in the simulator.
/// Measured for real: 0.4–1.2% loss, 198–240 kbit/s (two runs); without
/// recovery (`repair_ratio = 0`) 2.2–4.2% and C's and D's sessions at
/// 146–147.
#[test]
fn local_loss_recovery_for_real() {
    if !root() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let e = emu_summary(
        &celerity_scenario("lossy-lan.toml"),
        &dir.path().join("emu"),
    );
    for f in e["flows"].as_array().expect("flows") {
        let w = &f["windows"][0];
        let (loss, recv) = (w["loss"].as_f64(), w["recv_kbps_min"].as_f64());
        assert!(loss.is_some_and(|l| l <= 0.02), "{}: {w}", f["id"]);
        assert!(recv.is_some_and(|r| r >= 180.0), "{}: {w}", f["id"]);
    }
    let repair = e["overhead"]["windows"][0]["repair_fraction"].as_f64();
    assert!(repair.is_some_and(|r| r > 0.0), "{}", e["overhead"]);
}
