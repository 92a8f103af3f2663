//! `meshcast emu SCENARIO`: a scenario run for real.
//!
//! The scenario's underlay is built out of network namespaces, veth
//! pairs, kernel shapers and a user-space delay element
//! ([`underlay::Underlay`], [`delay`]); every conference participant is a
//! real `meshcast node` process in its host's namespace, talking UDP over
//! that underlay, and every other endpoint of the scenario (cross
//! traffic, TCP, TFRC, layered streams) is the simulator's own, on a real
//! socket ([`endpoints`]). Events happen at their times (`ip link set`,
//! `tc class change`, drop patterns in the delay element); joins start a
//! node and leaves stop it (SIGTERM: it leaves the conference cleanly).
//! At the end the nodes' packet records (`packets.csv`, protocol time
//! from the shared epoch), the other endpoints' events and the kernel's
//! queue counters (read once a second) become the same report as
//! `meshcast run` writes. Everything made is removed on success, error,
//! Ctrl-C or panic (docs/emu.md).

pub mod delay;
pub mod endpoints;
pub mod machine;
pub mod qdisc;
pub mod underlay;

use crate::build::build;
use crate::conference::{CONFERENCE_PORT, presence};
use crate::node::PacketRecord;
use crate::overrides::Override;
use crate::report::{DelayElementSummary, EmulationSummary, EmulationWindow};
use crate::scenario::{EventKind, Scenario};
use anyhow::{Context as _, bail};
use meshcast_core::{NodeId, Rate, Time};
use meshcast_sim::{Counters, LinkRecord, MembershipChange, RunStats};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use underlay::{QueueStats, Underlay, node_addr};

/// How long before the shared epoch the first nodes are started (they
/// wait for it, so every one begins at the same instant).
const LEAD: Duration = Duration::from_secs(2);

/// How long the nodes get to finish after the end before they are
/// killed.
const GRACE: Duration = Duration::from_secs(15);

/// Whether this process runs as root (namespaces need it).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// The `[conference]` table of the scenario text with `sets` applied, as
/// written (a node's configuration takes the same keys), if it has one.
pub fn conference_table(
    file: &str,
    text: &str,
    sets: &[Override],
) -> anyhow::Result<Option<toml::Table>> {
    let text = if sets.is_empty() {
        text.to_owned()
    } else {
        crate::overrides::apply(file, text, sets)?.0
    };
    let doc: toml::Table = toml::from_str(&text).with_context(|| format!("{file}: not TOML"))?;
    match doc.get("conference") {
        Some(toml::Value::Table(t)) => Ok(Some(t.clone())),
        Some(_) => bail!("{file}: conference is not a table"),
        None => Ok(None),
    }
}

/// One run of one participant's node process.
struct Run {
    participant: usize,
    /// Its output directory.
    dir: PathBuf,
    from: Time,
    to: Time,
    child: Option<Child>,
}

/// The node processes; dropping it kills whatever still runs.
struct Nodes(Vec<Run>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for r in &mut self.0 {
            if let Some(mut c) = r.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Send SIGTERM to a child (it leaves the conference and writes its
/// outputs).
fn terminate(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// What [`emulate`] measured.
pub struct Emulated {
    /// The run's record, as the simulator would have produced it.
    pub stats: RunStats,
    /// Seconds of wall clock the run took (from the nodes' start, two
    /// seconds before the epoch, to the end).
    pub wall_s: f64,
    /// The emulation's own record as `summary.json` reports it: the
    /// delay element, the machine's CPU time ([`machine`]) and the nodes'
    /// timers.
    pub emulation: EmulationSummary,
}

/// The delay element's counters, summed over the link directions, with
/// its lateness in ms (rounded as `summary.json` rounds every ms figure).
pub fn delay_element_summary(d: &delay::DelayCounters) -> DelayElementSummary {
    let ms = |v: f64| crate::report::r(v, 4);
    let q = |p: f64| d.late.quantile(p).map(|v| ms(v.as_millis_f64()));
    DelayElementSummary {
        realtime: d.realtime,
        frames: d.frames.iter().sum(),
        lost: d.lost.iter().sum(),
        wrong_way: d.wrong_way.iter().sum(),
        send_errors: d.send_errors.iter().sum(),
        late_ms_p50: q(0.5),
        late_ms_p99: q(0.99),
        late_ms_max: d.late.max().map(|v| ms(v.as_millis_f64())),
    }
}

/// What a user should know about how faithful a run was, one line each
/// (none when nothing is amiss): an element at normal priority, frames
/// the kernel refused, a 99th percentile of lateness past
/// [`LATE_WARNING_MS`], a node whose timers' 99th percentile of
/// lateness passed it too, or a hypervisor that took more than
/// [`machine::STOLEN_WARNING`] of the machine's CPU time over the run or
/// ten times that in some second.
pub fn warnings(s: &EmulationSummary) -> Vec<String> {
    let e = &s.delay_element;
    let mut out = Vec::new();
    if !e.realtime {
        out.push(
            "the delay element ran at normal priority (no real-time privilege): \
             a loaded machine stretches the links' delays"
                .to_owned(),
        );
    }
    if e.send_errors > 0 {
        out.push(format!(
            "the kernel refused {} frames the delay element sent on; they were lost",
            e.send_errors
        ));
    }
    if let Some(p99) = e.late_ms_p99.filter(|&p| p > LATE_WARNING_MS) {
        out.push(format!(
            "1% of frames left the delay element {p99} ms or more past their due time \
             (largest {} ms): the machine was too busy for the links' delays to hold",
            e.late_ms_max.unwrap_or(p99)
        ));
    }
    if let Some(p99) = s.node_timer_late_ms_p99.filter(|&p| p > LATE_WARNING_MS) {
        let busy = s.cpu_busy_share.map_or(String::new(), |b| {
            format!(" (busy {:.0}% of the time)", b * 100.0)
        });
        out.push(format!(
            "a node handled 1% of its timers {p99} ms or more late: the nodes waited for \
             the machine's CPUs{busy} and held the packets they relay and pace meanwhile"
        ));
    }
    let (run, second) = (
        s.stolen_cpu_share.unwrap_or(0.0),
        s.stolen_cpu_share_max_1s.unwrap_or(0.0),
    );
    // Report windows it took more than its share of: their figures are
    // the machine's as much as the scenario's.
    let windows: Vec<String> = s
        .windows
        .iter()
        .filter_map(|w| {
            let v = w
                .stolen_cpu_share
                .filter(|&v| v > machine::STOLEN_WARNING)?;
            Some(format!("{:.1}% in [{}, {}) s", v * 100.0, w.from_s, w.to_s))
        })
        .collect();
    if run > machine::STOLEN_WARNING
        || second > 10.0 * machine::STOLEN_WARNING
        || !windows.is_empty()
    {
        let windows = if windows.is_empty() {
            String::new()
        } else {
            format!("; report windows: {}", windows.join(", "))
        };
        out.push(format!(
            "the machine's hypervisor took {:.1}% of its CPU time during the run \
             ({:.1}% in the worst second{windows}): nothing runs while it does, so \
             links' delays and nodes' timers stretched and busy links carried less",
            run * 100.0,
            second * 100.0
        ));
    }
    out
}

/// A delay element whose 99th percentile of lateness passes this (ms)
/// gets a warning: a millisecond is about what the simulator's links
/// would call a different delay.
pub const LATE_WARNING_MS: f64 = 1.0;

/// Run `sc` over a real underlay. `conference` is its `[conference]`
/// table ([`conference_table`]); node outputs go under `out/nodes/`;
/// `stop` ends the run early (an error); `progress` is told each second
/// of the run as it passes.
pub fn emulate(
    sc: &Scenario,
    conference: Option<&toml::Table>,
    out: &Path,
    stop: &AtomicBool,
    mut progress: impl FnMut(u64),
) -> anyhow::Result<Emulated> {
    if sc.conference.as_ref().is_some_and(|c| c.video.is_some()) {
        bail!(
            "conference.video_fps simulates encoders in the simulator only: emulated nodes send the built-in source's packets"
        );
    }
    if !is_root() {
        bail!("meshcast emu needs root (it creates network namespaces)");
    }
    // The simulator's own flow declarations (sessions with their
    // presence, cross traffic, layered streams), in its order.
    let (_, mut flows) = build(sc)?.into_parts();
    let (names, present) = match &sc.conference {
        Some(c) => (c.participants.clone(), presence(sc, c)),
        None => (Vec::new(), Vec::new()),
    };
    for stale in underlay::remove_stale() {
        eprintln!("meshcast emu: removed namespace {stale} left by a run that was killed");
    }
    let exe = std::env::current_exe().context("cannot find the meshcast executable")?;
    let mut u = Underlay::build(sc).context("cannot build the underlay")?;
    let net = u.network().clone();
    let participants: Vec<usize> = names
        .iter()
        .map(|p| net.node_id(p).map(NodeId::index).context("participant"))
        .collect::<anyhow::Result<_>>()?;
    let peers: toml::Table = names
        .iter()
        .zip(&participants)
        .map(|(p, &i)| {
            (
                p.clone(),
                toml::Value::String(format!("{}:{CONFERENCE_PORT}", node_addr(i))),
            )
        })
        .collect();
    // The run keeps time by the monotonic clock, which setting the wall
    // clock does not move: this process, and the nodes (other processes
    // on this machine) from the same epoch on it. The wall clock is
    // watched for steps.
    let clocks = machine::Clocks::now();
    let epoch_at = clocks.mono + LEAD;
    let epoch_ns = meshcast_net::clock::monotonic_ns(epoch_at);
    let end = Time::from_secs_f64(sc.duration_s);
    let mut runs = Vec::new();
    for (p, intervals) in present.iter().enumerate() {
        for (k, &(from, to)) in intervals.iter().enumerate() {
            let name = &names[p];
            let dir = out.join("nodes").join(if intervals.len() == 1 {
                name.clone()
            } else {
                format!("{name}-{}", k + 1)
            });
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let mut cfg = toml::Table::new();
            cfg.insert("id".into(), name.clone().into());
            cfg.insert("duration_s".into(), (to - from).as_secs_f64().into());
            cfg.insert(
                "epoch_monotonic_ns".into(),
                i64::try_from(epoch_ns)
                    .context("the monotonic clock past 2^63 ns")?
                    .into(),
            );
            cfg.insert("gso".into(), false.into());
            cfg.insert("record_packets".into(), true.into());
            let conference = conference.context("a conference scenario's [conference] table")?;
            cfg.insert("conference".into(), conference.clone().into());
            cfg.insert("peers".into(), peers.clone().into());
            std::fs::write(dir.join("node.toml"), toml::to_string(&cfg)?)
                .with_context(|| format!("cannot write {}", dir.join("node.toml").display()))?;
            runs.push(Run {
                participant: p,
                dir,
                from,
                to,
                child: None,
            });
        }
    }
    let mut nodes = Nodes(runs);
    let spawn = |r: &mut Run, u: &Underlay| -> anyhow::Result<()> {
        let log = std::fs::File::create(r.dir.join("node.log"))?;
        let child = Command::new("ip")
            .args(["netns", "exec", u.netns(participants[r.participant])])
            .arg(&exe)
            .args(["node", "--json", "--config"])
            .arg(r.dir.join("node.toml"))
            .arg("--out")
            .arg(&r.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("cannot start a node")?;
        r.child = Some(child);
        Ok(())
    };
    for r in &mut nodes.0 {
        if r.from == Time::ZERO {
            spawn(r, &u)?;
        }
    }
    let netns = (0..net.nodes().len()).map(|i| u.netns_path(i)).collect();
    let others = endpoints::Endpoints::start(sc, netns, epoch_at, end)
        .context("cannot start the scenario's other endpoints")?;

    // The timeline: link events, joins and leaves, and a queue sample
    // every second.
    let mut events: Vec<(Time, usize)> = sc
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(
                e.kind,
                EventKind::LinkDown { .. }
                    | EventKind::LinkUp { .. }
                    | EventKind::Capacity { .. }
                    | EventKind::DropEvery { .. }
            )
        })
        .map(|(i, e)| (Time::from_secs_f64(e.at_s), i))
        .collect();
    events.sort_by_key(|&(t, i)| (t, i));
    let mut next_event = 0;
    let links = net.links().len();
    let mut records: Vec<LinkRecord> = (0..links)
        .map(|d| LinkRecord {
            id: meshcast_sim::LinkId(d as u32),
            buckets: Vec::new(),
            capacity_log: vec![(Time::ZERO, net.links()[d].params.capacity)],
        })
        .collect();
    let mut last = vec![QueueStats::default(); links];
    let mut link_up = vec![true; sc.links.len()];
    let mut link_rate: Vec<Rate> = sc.links.iter().map(|l| l.params.capacity).collect();
    let mut second = 0u64;
    let since_epoch = || {
        Time::from_nanos(
            u64::try_from(
                Instant::now()
                    .saturating_duration_since(epoch_at)
                    .as_nanos(),
            )
            .unwrap_or(u64::MAX),
        )
    };
    // The wall clock's largest step against the monotonic clock (s).
    let mut wall_step = 0.0f64;
    let mut watch_wall = || {
        let s = machine::Clocks::now().wall_step_since(&clocks);
        if s.abs() > wall_step.abs() {
            wall_step = s;
        }
    };
    let started = Instant::now();
    let cpu_at_start = machine::CpuTimes::now();
    let (mut cpu_last, mut stolen_max_1s) = (cpu_at_start, None::<f64>);
    // The CPU counts at the epoch and at each second's queue reading
    // after it (`cpu_at[k]`: second k), for the report windows' shares.
    let mut cpu_at = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted; nothing written but the nodes' own outputs");
        }
        if cpu_at.is_empty() && Instant::now() >= epoch_at {
            cpu_at.push(machine::CpuTimes::now());
        }
        let now = since_epoch();
        for r in &mut nodes.0 {
            if r.child.is_none() && r.from > Time::ZERO && r.from <= now && r.to > now {
                spawn(r, &u)?;
            }
            if let Some(c) = &mut r.child {
                if r.to < end && r.to <= now {
                    terminate(c);
                    r.child.take().map(|mut c| c.wait());
                } else if let Some(status) = c.try_wait()? {
                    if r.to > now + meshcast_core::Duration::from_secs(1) {
                        bail!(
                            "node {} stopped early ({status}); see {}",
                            names[r.participant],
                            r.dir.join("node.log").display()
                        );
                    }
                }
            }
        }
        while next_event < events.len() && events[next_event].0 <= now {
            let (t, i) = events[next_event];
            next_event += 1;
            let link = match sc.events[i].kind {
                EventKind::LinkDown { link } => {
                    u.set_link(link, false)?;
                    link_up[link] = false;
                    link
                }
                EventKind::LinkUp { link } => {
                    u.set_link(link, true)?;
                    link_up[link] = true;
                    link
                }
                EventKind::Capacity { link, rate } => {
                    u.set_capacity(link, rate)?;
                    link_rate[link] = rate;
                    link
                }
                EventKind::DropEvery {
                    link,
                    reverse,
                    every,
                } => {
                    u.drop_every(link, reverse, every)?;
                    continue;
                }
                _ => continue,
            };
            // Capacity in force, zero while down (as the simulator logs it).
            let rate = if link_up[link] {
                link_rate[link]
            } else {
                Rate::ZERO
            };
            for d in u.directions(link) {
                records[d.index()].capacity_log.push((t, rate));
            }
        }
        if now >= Time::from_secs(second + 1) {
            let stats = u.queue_stats(since_epoch)?;
            for (d, (s, l)) in stats.iter().zip(&mut last).enumerate() {
                // No reading (the namespace showed no such queue): the
                // last one stands, and the next reading counts from it.
                let Some(s) = s else { continue };
                spread(
                    &mut records[d],
                    l.at,
                    s.at,
                    [
                        s.bytes.saturating_sub(l.bytes),
                        s.packets.saturating_sub(l.packets),
                        s.drops.saturating_sub(l.drops),
                    ],
                );
                let b = records[d].bucket(Time::from_secs(second));
                b.queue_max = b.queue_max.max(s.qlen);
                b.queue_area += u128::from(s.qlen) * u128::from(NS_PER_S);
                *l = *s;
            }
            let cpu = machine::CpuTimes::now();
            if let Some(s) = machine::CpuTimes::between(cpu_last, cpu) {
                stolen_max_1s = Some(stolen_max_1s.map_or(s.stolen, |m| m.max(s.stolen)));
            }
            cpu_last = cpu;
            cpu_at.push(cpu);
            watch_wall();
            second += 1;
            progress(second);
        }
        if now >= end {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    // The nodes stop themselves at the end; give them time to write.
    let deadline = Instant::now() + GRACE;
    for r in &mut nodes.0 {
        let Some(c) = &mut r.child else { continue };
        loop {
            if c.try_wait()?.is_some() {
                break;
            }
            if Instant::now() > deadline {
                terminate(c);
                std::thread::sleep(Duration::from_secs(1));
                let _ = c.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        r.child.take().map(|mut c| c.wait());
    }
    let ran = others.finish()?;
    watch_wall();
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_at_end = machine::CpuTimes::now();
    let run_cpu = machine::CpuTimes::between(cpu_at_start, cpu_at_end);
    let delay = u.teardown()?;
    drop(u);

    // One record of the whole run: the nodes' packet records and the
    // other endpoints' events, taken as the simulator takes its
    // endpoints' events.
    let nodes_ids: Vec<NodeId> = participants.iter().map(|&i| NodeId(i as u32)).collect();
    let mut counters = Counters {
        sent: ran.datagrams_out,
        delivered: ran.datagrams_in,
        ..Counters::default()
    };
    for (node, t, ev) in &ran.events {
        flows.record(*node, *t, ev);
    }
    let mut node_timer_late_p99 = None;
    for r in &nodes.0 {
        let me = nodes_ids[r.participant];
        let summary: serde_json::Value = read_json(&r.dir.join("summary.json"))?;
        counters.sent += summary["net"]["datagrams_out"].as_u64().unwrap_or(0);
        if let Some(p99) = summary["net"]["timer_late_ms_p99"].as_f64() {
            node_timer_late_p99 = Some(node_timer_late_p99.map_or(p99, |m: f64| m.max(p99)));
        }
        counters.delivered += summary["net"]["datagrams_in"].as_u64().unwrap_or(0);
        let path = r.dir.join("packets.csv");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        for (n, line) in text.lines().enumerate() {
            let rec = PacketRecord::from_csv(line)
                .with_context(|| format!("{}:{}: not a packet record", path.display(), n + 1))?;
            let (t, ev) = rec.event();
            flows.record(me, t, &ev);
        }
    }
    for rec in &records {
        for b in &rec.buckets {
            counters.hops += b.tx_packets;
            counters.drops_queue += b.drops_queue;
        }
    }
    counters.drops_loss = delay.lost.iter().sum();
    let mut membership = Vec::new();
    for (p, intervals) in present.iter().enumerate() {
        for &(from, to) in intervals {
            membership.push(MembershipChange {
                at: from,
                node: nodes_ids[p],
                joined: true,
            });
            if to < end {
                membership.push(MembershipChange {
                    at: to,
                    node: nodes_ids[p],
                    joined: false,
                });
            }
        }
    }
    membership.sort_by_key(|m| (m.at, !m.joined));
    // Shares rounded as `summary.json` rounds them.
    let share = |v: f64| crate::report::r(v, 4);
    Ok(Emulated {
        stats: RunStats {
            net,
            end,
            events_processed: 0,
            flows,
            links: records,
            counters,
            membership,
            control: Vec::new(),
        },
        wall_s,
        emulation: EmulationSummary {
            delay_element: delay_element_summary(&delay),
            stolen_cpu_share: run_cpu.map(|s| share(s.stolen)),
            stolen_cpu_share_max_1s: stolen_max_1s.map(share),
            cpu_busy_share: run_cpu.map(|s| share(s.busy)),
            node_timer_late_ms_p99: node_timer_late_p99,
            windows: sc
                .windows
                .iter()
                .map(|&(from_s, to_s)| {
                    let at = |k: u64| usize::try_from(k).ok().and_then(|k| cpu_at.get(k).copied());
                    // A window past the last reading ends with the run.
                    let cpu = machine::CpuTimes::between(
                        at(from_s).flatten(),
                        at(to_s).unwrap_or(cpu_at_end),
                    );
                    EmulationWindow {
                        from_s,
                        to_s,
                        stolen_cpu_share: cpu.map(|c| share(c.stolen)),
                        cpu_busy_share: cpu.map(|c| share(c.busy)),
                    }
                })
                .collect(),
            wall_clock_step_ms: crate::report::r(wall_step * 1000.0, 3),
        },
    })
}

const NS_PER_S: u64 = 1_000_000_000;

/// Add what a link direction's counters gained between two readings
/// (`[bytes, packets, drops]`, read at `from` and at `to`) to the seconds
/// the readings span, each second's part in proportion to its time
/// between them, rounded so that the parts sum to the gain.
///
/// The readings come some milliseconds after each second's boundary, a
/// different number each second (the loop polls every 20 ms, and more
/// under load), so counting a reading's gain wholly to the
/// second before it made a saturated link's seconds read 0.971–1.030 of
/// its capacity on the steady dumbbell with both CPUs busy. Spread by
/// the readings' own times they read 0.980–1.016, as the simulator's do
/// (0.977–1.021: a second holds whole packets), to within the stamps'
/// few milliseconds and the rate's variation between two readings.
fn spread(rec: &mut LinkRecord, from: Time, to: Time, gain: [u64; 3]) {
    let (a, b) = (from.as_nanos(), to.as_nanos().max(from.as_nanos()));
    let span = u128::from(b - a);
    let mut given = [0u64; 3];
    // From `start` to `edge`: the part of the span in one second.
    let mut start = a;
    loop {
        let edge = ((start / NS_PER_S + 1) * NS_PER_S).min(b);
        // Two readings at one moment: all of it (`edge` is `b` then).
        let upto = gain.map(|n| {
            (u128::from(n) * u128::from(edge - a))
                .checked_div(span)
                .map_or(n, |m| m as u64)
        });
        let k = rec.bucket(Time::from_nanos(start));
        k.tx_bytes += upto[0] - given[0];
        k.tx_packets += upto[1] - given[1];
        k.drops_queue += upto[2] - given[2];
        given = upto;
        if edge == b {
            break;
        }
        start = edge;
    }
}

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read {} (the node's log is beside it)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An element's record with these frame latenesses (µs) over two
    /// directions.
    fn counters(late_us: &[u64], realtime: bool) -> delay::DelayCounters {
        let mut c = delay::DelayCounters {
            frames: vec![late_us.len() as u64, 0],
            lost: vec![2, 1],
            wrong_way: vec![0, 0],
            send_errors: vec![0, 0],
            realtime,
            ..delay::DelayCounters::default()
        };
        for &us in late_us {
            c.late.record(meshcast_core::Duration::from_micros(us));
        }
        c
    }

    /// A run's record with this element and no CPU time stolen.
    fn run_of(e: &DelayElementSummary) -> EmulationSummary {
        EmulationSummary {
            delay_element: e.clone(),
            stolen_cpu_share: Some(0.0),
            stolen_cpu_share_max_1s: Some(0.0),
            cpu_busy_share: Some(0.5),
            node_timer_late_ms_p99: Some(0.2),
            windows: Vec::new(),
            wall_clock_step_ms: 0.004,
        }
    }

    #[test]
    fn the_delay_elements_record_sums_directions_and_reads_its_lateness() {
        // 98 frames 20 µs late, one 3 ms, one 12 ms.
        let mut late = vec![20; 98];
        late.extend([3_000, 12_000]);
        let e = delay_element_summary(&counters(&late, true));
        assert_eq!((e.frames, e.lost, e.send_errors), (100, 3, 0));
        assert!(e.realtime);
        let p50 = e.late_ms_p50.unwrap();
        assert!((p50 - 0.02).abs() < 0.001, "{e:?}");
        // Nearest rank: the 99th of 100 is the 3-ms frame.
        assert!((e.late_ms_p99.unwrap() - 3.0).abs() < 0.02, "{e:?}");
        assert_eq!(e.late_ms_max, Some(12.0));
        let w = warnings(&run_of(&e));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("past their due time"), "{w:?}");
    }

    #[test]
    fn a_faithful_element_warns_of_nothing_and_an_idle_one_has_no_lateness() {
        let e = delay_element_summary(&counters(&[20; 100], true));
        assert_eq!(warnings(&run_of(&e)), Vec::<String>::new());
        let idle = delay_element_summary(&counters(&[], true));
        assert_eq!(
            (idle.late_ms_p50, idle.late_ms_p99, idle.late_ms_max),
            (None, None, None)
        );
        let mut refused = e.clone();
        refused.send_errors = 4;
        refused.realtime = false;
        let w = warnings(&run_of(&refused));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("normal priority") && w[1].contains("refused 4"));
    }

    #[test]
    fn a_run_whose_nodes_waited_for_cpus_says_so() {
        let e = delay_element_summary(&counters(&[20; 100], true));
        let run = |p99: Option<f64>| EmulationSummary {
            node_timer_late_ms_p99: p99,
            cpu_busy_share: Some(0.87),
            ..run_of(&e)
        };
        assert!(warnings(&run(Some(0.9))).is_empty());
        assert!(warnings(&run(None)).is_empty());
        let w = warnings(&run(Some(24.8)));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("24.8 ms") && w[0].contains("busy 87%"),
            "{w:?}"
        );
    }

    #[test]
    fn a_run_the_hypervisor_took_cpu_time_from_says_so() {
        let e = delay_element_summary(&counters(&[20; 100], true));
        let share = |run: Option<f64>, second: Option<f64>| EmulationSummary {
            stolen_cpu_share: run,
            stolen_cpu_share_max_1s: second,
            ..run_of(&e)
        };
        // Under 1% of the run and under 10% of every second: nothing to say;
        // nor where the kernel does not count it.
        assert!(warnings(&share(Some(0.009), Some(0.09))).is_empty());
        assert!(warnings(&share(None, None)).is_empty());
        for (run, second) in [(0.023, 0.05), (0.004, 0.31)] {
            let w = warnings(&share(Some(run), Some(second)));
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(w[0].contains("hypervisor took"), "{w:?}");
        }
        let w = warnings(&share(Some(0.023), Some(0.31)));
        assert!(w[0].contains("2.3% of its CPU time") && w[0].contains("31.0% in the worst"));
        // A report window it took more than 1% of, in a run it took less
        // of: named, the quiet one not.
        let window = |from_s, to_s, stolen| EmulationWindow {
            from_s,
            to_s,
            stolen_cpu_share: Some(stolen),
            cpu_busy_share: Some(0.03),
        };
        let w = warnings(&EmulationSummary {
            windows: vec![window(20, 60, 0.002), window(120, 200, 0.018)],
            ..share(Some(0.008), Some(0.06))
        });
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("report windows: 1.8% in [120, 200) s"),
            "{w:?}"
        );
        assert!(!w[0].contains("[20, 60)"), "{w:?}");
    }

    fn record() -> LinkRecord {
        LinkRecord {
            id: meshcast_sim::LinkId(0),
            buckets: Vec::new(),
            capacity_log: vec![(Time::ZERO, Rate::from_kbps(480))],
        }
    }

    fn column(rec: &LinkRecord, f: fn(&meshcast_sim::stats::LinkBucket) -> u64) -> Vec<u64> {
        rec.buckets.iter().map(f).collect()
    }

    /// [`spread`] with the readings' moments in milliseconds.
    fn spread_ms(rec: &mut LinkRecord, from_ms: u64, to_ms: u64, gain: [u64; 3]) {
        spread(
            rec,
            Time::from_millis(from_ms),
            Time::from_millis(to_ms),
            gain,
        );
    }

    #[test]
    fn a_readings_gain_goes_to_the_seconds_it_spans() {
        let mut rec = record();
        // 0.5 s, 1 s and 0.25 s of 1.75 s.
        spread_ms(&mut rec, 500, 2250, [1750, 7, 3]);
        assert_eq!(column(&rec, |b| b.tx_bytes), [500, 1000, 250]);
        // Rounded down as they accumulate; nothing lost.
        assert_eq!(column(&rec, |b| b.tx_packets), [2, 4, 1]);
        assert_eq!(column(&rec, |b| b.drops_queue), [0, 2, 1]);
        // A reading on a boundary belongs to the second before it, the
        // next one's gain to the seconds after.
        spread_ms(&mut rec, 2250, 3000, [300, 0, 0]);
        spread_ms(&mut rec, 3000, 3100, [40, 0, 0]);
        assert_eq!(column(&rec, |b| b.tx_bytes), [500, 1000, 550, 40]);
        // Two readings at one moment, or a clock stepped back: the gain
        // goes to the second of the reading it counts from.
        spread_ms(&mut rec, 3100, 3100, [5, 1, 0]);
        spread_ms(&mut rec, 3200, 3150, [5, 0, 0]);
        assert_eq!(column(&rec, |b| b.tx_bytes), [500, 1000, 550, 50]);
        assert_eq!(column(&rec, |b| b.tx_packets), [2, 4, 1, 1]);
    }

    /// A saturated link read late by an amount that changes every second
    /// (as the loop reads): every second holds its capacity, where
    /// counting each reading to the second before it did not.
    #[test]
    fn a_saturated_link_read_at_uneven_moments_reads_its_capacity() {
        let bytes_per_s = 60_000u64; // 480 kbit/s
        let lag_ms = [3u64, 21, 9, 17, 2, 24, 11, 5, 19, 8, 14];
        let mut rec = record();
        let mut last = (Time::ZERO, 0u64);
        for (s, lag) in lag_ms.iter().enumerate() {
            let at = Time::from_millis((s as u64 + 1) * 1000 + lag);
            let total = bytes_per_s * at.as_nanos() / NS_PER_S;
            spread(&mut rec, last.0, at, [total - last.1, 0, 0]);
            last = (at, total);
        }
        let end = Time::from_secs(lag_ms.len() as u64);
        for (s, f) in rec.per_second(end).iter().enumerate() {
            assert!(
                (f.utilisation - 1.0).abs() < 1e-4,
                "second {s}: {}",
                f.utilisation
            );
        }
        assert_eq!(rec.figures(0, 11, end).utilisation, 1.0);
    }
}
