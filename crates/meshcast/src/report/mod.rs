//! What a run writes: `summary.json` (schema in docs/report-format.md),
//! `series.csv`, `plots/*.{png,svg}` and `report.html`, plus the results
//! table printed at the end.

pub(crate) mod csv;
mod html;
pub(crate) mod plot;
mod table;

use crate::scenario::Scenario;
use meshcast_core::Time;
use meshcast_core::layered::LayeredFigures;
use meshcast_core::metrics::{Drops, FlowFigures, FlowRecord, Overhead};
use meshcast_core::video::VideoFigures;
use meshcast_sim::{Counters, LinkFigures, LinkRecord, RunStats};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

pub use table::results_table;

/// Version of the `summary.json` schema; bumped only when a field changes
/// meaning (fields are added freely, never renamed or removed).
pub const SCHEMA_VERSION: u32 = 1;

/// `summary.json`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Summary {
    /// Schema version.
    pub schema_version: u32,
    /// Scenario name.
    pub name: String,
    /// Scenario description.
    pub description: Option<String>,
    /// Run seed.
    pub seed: u64,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Wall-clock seconds the simulation took (the only field that differs
    /// between two runs of the same scenario and seed).
    pub wall_s: f64,
    /// Events the simulator processed.
    pub events_processed: u64,
    /// The report windows.
    pub windows: Vec<Window>,
    /// Every measured flow.
    pub flows: Vec<FlowSummary>,
    /// Every link direction.
    pub links: Vec<LinkSummary>,
    /// Run-wide packet counts.
    pub packets: Counters,
    /// Joins and leaves.
    pub membership: Vec<MembershipEntry>,
    /// Protocol overhead of conference participants (absent when no
    /// endpoint accounts its bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overhead: Option<OverheadSummary>,
    /// A conference's central optimum as a step function over the run
    /// (absent without a conference).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optimum: Vec<OptimumStep>,
    /// Why the optimum could not be computed, if it could not (the run's
    /// own figures are still all there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimum_error: Option<String>,
    /// A conference's utility `U(z) = β·ln(z + δ)` (z in bits/s), which the
    /// optimum maximises the sum of (absent without a conference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utility: Option<UtilitySummary>,
    /// How faithful a run on a real network was to its scenario (`meshcast
    /// emu` only; absent from the simulator's runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulation: Option<EmulationSummary>,
}

/// What the machinery of an emulated run did (`meshcast emu`,
/// docs/emu.md).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EmulationSummary {
    /// The user-space delay element that gives every link its
    /// propagation delay and random loss.
    pub delay_element: DelayElementSummary,
    /// The share (0 to 1) of the machine's CPU time that its hypervisor
    /// took during the run (steal, `/proc/stat`; `null` where the kernel
    /// does not count it): while it does, nothing runs, and the links'
    /// delays and the nodes' timers stretch.
    pub stolen_cpu_share: Option<f64>,
    /// The largest such share in any one second of the run.
    pub stolen_cpu_share_max_1s: Option<f64>,
    /// The share (0 to 1) of the machine's CPU time spent running
    /// something during the run (the nodes, the delay element, the
    /// kernel's network stack; `null` where `/proc/stat` is not read): the
    /// nodes share the machine's CPUs, and one that waits for a CPU holds
    /// the packets it relays.
    pub cpu_busy_share: Option<f64>,
    /// The largest of the nodes' 99th percentiles of timer lateness, ms
    /// (`timer_late_ms_p99` in each node's summary, docs/node.md; `null`
    /// when no node handled a timer): an idle machine's nodes are about
    /// 0.25 ms late at the 99th percentile; more is a node that waited for
    /// a CPU and held the packets it relays and paces meanwhile.
    pub node_timer_late_ms_p99: Option<f64>,
    /// The machine's CPU time in each of the scenario's report windows,
    /// in their order (the flows' `windows`): a window's figures were
    /// taken while the hypervisor took this share, so a link that ran
    /// short of full in a window it took much of is the machine's doing.
    pub windows: Vec<EmulationWindow>,
    /// How far the machine's wall clock was set during the run against
    /// its monotonic clock, ms (the largest step seen, read once a
    /// second; positive is forward, about 0 when nothing set it). The run
    /// and its nodes keep time by the monotonic clock, so a step moves
    /// nothing in it; this says one happened.
    pub wall_clock_step_ms: f64,
}

/// The machine's CPU time over one report window of an emulated run.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EmulationWindow {
    /// The window's start, s from the epoch.
    pub from_s: u64,
    /// Its end, s (exclusive).
    pub to_s: u64,
    /// The share (0 to 1) of the CPU time the hypervisor took in it
    /// (`null` where the kernel does not count steal).
    pub stolen_cpu_share: Option<f64>,
    /// The share spent running something in it.
    pub cpu_busy_share: Option<f64>,
}

/// The delay element's counters, over every link direction.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DelayElementSummary {
    /// Whether its thread ran at real-time priority (it does as root).
    pub realtime: bool,
    /// Frames it passed on.
    pub frames: u64,
    /// Frames it dropped for the links' `loss` and `drop_every` patterns.
    pub lost: u64,
    /// Frames sent the way a one-way link does not run (dropped).
    pub wrong_way: u64,
    /// Frames the kernel refused to send on (lost, but not by the
    /// scenario).
    pub send_errors: u64,
    /// How long after its due time a frame was sent on, median, 99th
    /// percentile and largest, ms: delay the links gained beyond the
    /// scenario's (`null` with no frames).
    pub late_ms_p50: Option<f64>,
    /// See `late_ms_p50`.
    pub late_ms_p99: Option<f64>,
    /// See `late_ms_p50`.
    pub late_ms_max: Option<f64>,
}

/// The utility parameters of a conference.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct UtilitySummary {
    /// β.
    pub beta: f64,
    /// δ, kbit/s.
    pub delta_kbps: f64,
}

impl UtilitySummary {
    /// `U` of a rate of `kbps` kbit/s.
    pub fn of_kbps(&self, kbps: f64) -> f64 {
        meshcast_plan::optimum::Utility {
            beta: self.beta,
            delta_bps: self.delta_kbps * 1e3,
        }
        .of(kbps * 1e3)
    }
}

/// The central optimum from `from_s` until the next step.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct OptimumStep {
    /// Start, seconds.
    pub from_s: f64,
    /// Per scheme (`coded`, `twohop`, `simulcast`, `mutualcast`):
    /// participant → session rate, kbit/s.
    #[serde(flatten)]
    pub rates: crate::conference::Optima,
}

impl OptimumStep {
    /// The step covering `t`.
    fn at(steps: &[OptimumStep], t: f64) -> Option<&OptimumStep> {
        steps.iter().rev().find(|s| s.from_s <= t)
    }
}

/// Header and control bytes as fractions of all bytes participants sent
/// (IP/UDP headers excluded), over the run and per report window.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct OverheadSummary {
    /// Over the whole run.
    #[serde(flatten)]
    pub total: Overhead,
    /// Per report window.
    pub windows: Vec<OverheadWindow>,
}

/// Figures of some kind over one report window.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct Windowed<T> {
    /// Window start.
    pub from_s: u64,
    /// Window end.
    pub to_s: u64,
    /// The figures.
    #[serde(flatten)]
    pub fig: T,
}

/// `figures(from_s, to_s)` for every report window.
fn per_window<T>(windows: &[Window], figures: impl Fn(u64, u64) -> T) -> Vec<Windowed<T>> {
    windows
        .iter()
        .map(|w| Windowed {
            from_s: w.from_s,
            to_s: w.to_s,
            fig: figures(w.from_s, w.to_s),
        })
        .collect()
}

/// Overhead over one report window.
pub type OverheadWindow = Windowed<Overhead>;

fn rounded_overhead(o: Overhead) -> Overhead {
    Overhead {
        header_fraction: r(o.header_fraction, 5),
        control_fraction: r(o.control_fraction, 5),
        repair_fraction: r(o.repair_fraction, 5),
        ..o
    }
}

fn overhead_summary(stats: &RunStats, windows: &[Window]) -> Option<OverheadSummary> {
    let total = stats.flows.overhead(0, seconds(stats));
    (total.bytes_sent > 0).then(|| OverheadSummary {
        total: rounded_overhead(total),
        windows: per_window(windows, |from, to| {
            rounded_overhead(stats.flows.overhead(from, to))
        }),
    })
}

/// A report window.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start, seconds (inclusive).
    pub from_s: u64,
    /// End, seconds (exclusive).
    pub to_s: u64,
}

/// One second of a flow's series.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FlowSample {
    /// Start of the second.
    pub t_s: u64,
    /// The figures over `[t_s, t_s + 1)`.
    #[serde(flatten)]
    pub fig: FlowFigures,
    /// A flow with more than one receiver: each receiver's payload
    /// goodput, kbit/s, by name (the receivers `recv_kbps_min` counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recv_kbps: Option<ReceiverKbps>,
    /// A layered stream's frame figures over frames generated in the
    /// second.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub layered: Option<LayeredFigures>,
    /// A session's video frame figures over frames generated in the
    /// second (simulated encoders only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoFigures>,
}

/// Each receiver's payload goodput, kbit/s, by name.
pub type ReceiverKbps = BTreeMap<String, f64>;

/// A flow's rounded figures over the whole seconds `[from_s, to_s)` of a
/// run that ended at `end` and, for a flow with more than one declared
/// receiver, each receiver that `recv_kbps_min` counts (those present
/// throughout, or all if none is) with its payload goodput, rounded as
/// `recv_kbps_min` is (`None` for a flow with one receiver, whose
/// `recv_kbps_min` says it all).
fn flow_figures(
    f: &FlowRecord,
    from_s: u64,
    to_s: u64,
    end: Time,
    name: impl Fn(meshcast_core::NodeId) -> String,
) -> (FlowFigures, Option<ReceiverKbps>) {
    let (fig, each) = f.figures_each(from_s, to_s, end);
    let each = (f.receivers.len() > 1)
        .then(|| each.into_iter().map(|(n, v)| (name(n), r(v, 3))).collect());
    (rounded_flow(fig), each)
}

/// A flow's figures over a report window. A conference session's also
/// carry the central optimum in the middle of the window.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FlowWindowFigures {
    /// What was measured.
    #[serde(flatten)]
    pub flow: FlowFigures,
    /// A flow with more than one receiver: each receiver's payload
    /// goodput, kbit/s, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recv_kbps: Option<ReceiverKbps>,
    /// The session's rate in the unrestricted (coded) optimum, kbit/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimum_kbps: Option<f64>,
    /// The session's rate in the optimum over the paper's 2-hop trees,
    /// kbit/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimum_twohop_kbps: Option<f64>,
    /// A conference session's packets (sent in the window) that its peers
    /// dropped, by cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Drops>,
    /// A layered stream's frame figures over frames generated in the
    /// window.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub layered: Option<LayeredFigures>,
    /// A session's video frame figures over frames generated in the
    /// window (simulated encoders only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoFigures>,
}

/// A flow's figures over a report window.
pub type FlowWindow = Windowed<FlowWindowFigures>;

/// A flow.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FlowSummary {
    /// Its id.
    pub id: String,
    /// `cbr`, `onoff`, ...
    pub kind: String,
    /// Source node.
    pub source: String,
    /// Receiver nodes.
    pub receivers: Vec<String>,
    /// Figures over the whole run.
    pub total: FlowFigures,
    /// A conference session's packets that its peers dropped over the
    /// whole run, by cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Drops>,
    /// A session's video frame figures over the whole run (simulated
    /// encoders only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoFigures>,
    /// One entry per second.
    pub series: Vec<FlowSample>,
    /// One entry per report window.
    pub windows: Vec<FlowWindow>,
    /// A layered stream's whole-run frame figures and its reaction to the
    /// scenario's `change_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layered: Option<LayeredSummary>,
}

/// A layered stream's summary.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct LayeredSummary {
    /// Frame figures over the whole run.
    #[serde(flatten)]
    pub total: LayeredFigures,
    /// The `[layered] change_s` the next two count from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_s: Option<f64>,
    /// Frames from `change_s` until the first whose top layer is at most
    /// half the mean top layer of the 10 s before it (`null`: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_to_halve: Option<Option<u64>>,
    /// Frames from `change_s` until the first with every layer
    /// (`null`: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_to_recover: Option<Option<u64>>,
}

/// A link direction's figures over a report window.
pub type LinkWindow = Windowed<LinkFigures>;

/// A link direction.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LinkSummary {
    /// `"A->E"`.
    pub id: String,
    /// Entry node.
    pub from: String,
    /// Exit node.
    pub to: String,
    /// Capacity at the start, kbit/s.
    pub capacity_kbps: f64,
    /// Propagation delay, ms.
    pub delay_ms: f64,
    /// Queue limit in packets (null: none).
    pub queue_packets: Option<u32>,
    /// Queue limit in bytes (null: none).
    pub queue_bytes: Option<u64>,
    /// Random loss probability.
    pub loss: f64,
    /// Figures over the whole run.
    #[serde(flatten)]
    pub total: LinkFigures,
    /// One entry per report window.
    pub windows: Vec<LinkWindow>,
}

/// A join or leave.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MembershipEntry {
    /// When, seconds.
    pub t_s: f64,
    /// The node.
    pub node: String,
    /// `join` or `leave`.
    pub event: &'static str,
}

/// Round to `d` decimals, so that the JSON stays readable (the figures are
/// computed identically run to run; rounding does not affect determinism).
pub(crate) fn r(x: f64, d: i32) -> f64 {
    let m = 10f64.powi(d);
    let v = (x * m).round() / m;
    if v == 0.0 { 0.0 } else { v }
}

fn rounded_flow(f: FlowFigures) -> FlowFigures {
    FlowFigures {
        send_kbps: r(f.send_kbps, 3),
        recv_kbps_min: r(f.recv_kbps_min, 3),
        delay_ms_mean: f.delay_ms_mean.map(|v| r(v, 4)),
        delay_ms_p95: f.delay_ms_p95.map(|v| r(v, 4)),
        loss: f.loss.map(|v| r(v, 6)),
    }
}

/// A flow's figures by metric name (series.csv, sweep.csv).
pub(crate) fn flow_metrics(f: &FlowFigures) -> [(&'static str, Option<f64>); 5] {
    [
        ("send_kbps", Some(f.send_kbps)),
        ("recv_kbps_min", Some(f.recv_kbps_min)),
        ("delay_ms_mean", f.delay_ms_mean),
        ("delay_ms_p95", f.delay_ms_p95),
        ("loss", f.loss),
    ]
}

/// A layered stream's frame figures by metric name.
pub(crate) fn layered_metrics(l: &LayeredFigures) -> [(&'static str, Option<f64>); 7] {
    [
        ("frames", Some(l.frames as f64)),
        ("layers_min_mean", l.layers_min_mean),
        ("layers_max_mean", l.layers_max_mean),
        ("layers_cov", l.layers_cov),
        ("latency_ms_first", l.latency_ms_first),
        ("latency_ms_retx", l.latency_ms_retx),
        ("retx_packets", Some(l.retx_packets as f64)),
    ]
}

fn rounded_video(f: Option<VideoFigures>) -> Option<VideoFigures> {
    f.map(|f| VideoFigures {
        whole_min: f.whole_min.map(|v| r(v, 6)),
        decodable_min: f.decodable_min.map(|v| r(v, 6)),
        ..f
    })
}

fn rounded_layered(f: LayeredFigures) -> LayeredFigures {
    LayeredFigures {
        layers_min_mean: f.layers_min_mean.map(|v| r(v, 4)),
        layers_max_mean: f.layers_max_mean.map(|v| r(v, 4)),
        layers_cov: f.layers_cov.map(|v| r(v, 6)),
        latency_ms_first: f.latency_ms_first.map(|v| r(v, 4)),
        latency_ms_retx: f.latency_ms_retx.map(|v| r(v, 4)),
        ..f
    }
}

fn rounded_link(f: LinkFigures) -> LinkFigures {
    LinkFigures {
        utilisation: r(f.utilisation, 6),
        tx_kbps: r(f.tx_kbps, 3),
        queue_pkts_mean: r(f.queue_pkts_mean, 4),
        queue_pkts_max: f.queue_pkts_max,
        drops_queue: f.drops_queue,
        drops_loss: f.drops_loss,
        drops_down: f.drops_down,
    }
}

/// Whether a link carried or dropped anything during the run.
fn is_active(l: &LinkSummary) -> bool {
    let t = &l.total;
    t.tx_kbps > 0.0 || t.drops_queue + t.drops_loss + t.drops_down > 0
}

/// Indices of the active links, busiest (highest utilisation over the run)
/// first, ties in declaration order.
fn busiest_links(s: &Summary) -> Vec<usize> {
    let mut busy: Vec<usize> = (0..s.links.len())
        .filter(|&i| is_active(&s.links[i]))
        .collect();
    busy.sort_by(|&a, &b| {
        s.links[b]
            .total
            .utilisation
            .total_cmp(&s.links[a].total.utilisation)
            .then(a.cmp(&b))
    });
    busy
}

/// Whole seconds covered by a run (the last one may be partial).
pub fn seconds(stats: &RunStats) -> u64 {
    stats.end.as_nanos().div_ceil(1_000_000_000)
}

fn flow_summary(
    sc: &Scenario,
    stats: &RunStats,
    f: &FlowRecord,
    windows: &[Window],
    optimum: &[OptimumStep],
) -> FlowSummary {
    let is_layered = f.kind == "layered";
    let layered = |from: u64, to: u64| {
        is_layered.then(|| {
            rounded_layered(
                f.layered
                    .figures(Time::from_secs(from), Time::from_secs(to)),
            )
        })
    };
    // One pass for the series (a window's figures scan the whole record).
    let per_second: Vec<Option<LayeredFigures>> = if is_layered {
        f.layered
            .per_second(seconds(stats))
            .into_iter()
            .map(|l| Some(rounded_layered(l)))
            .collect()
    } else {
        Vec::new()
    };
    let opt = |from: u64, to: u64, scheme: &str| {
        if f.kind != "session" {
            return None;
        }
        let step = OptimumStep::at(optimum, (from + to) as f64 / 2.0)?;
        step.rates.get(scheme)?.get(&f.name).copied()
    };
    let secs = seconds(stats);
    let name = |n: meshcast_core::NodeId| stats.net.name(n).to_owned();
    FlowSummary {
        windows: per_window(windows, |from, to| {
            let (flow, recv_kbps) = flow_figures(f, from, to, stats.end, name);
            FlowWindowFigures {
                flow,
                recv_kbps,
                optimum_kbps: opt(from, to, "coded"),
                optimum_twohop_kbps: opt(from, to, "twohop"),
                dropped: session_drops(f, from, to),
                layered: layered(from, to),
                video: rounded_video(f.video_figures(from, to, stats.end)),
            }
        }),
        layered: is_layered.then(|| layered_summary(sc, f, secs)),
        ..measured_flow(f, secs, stats.end, name, |t| {
            per_second.get(t as usize).copied().flatten()
        })
    }
}

/// A conference session's drops of packets sent in `[from_s, to_s)`
/// (`None` for flows of other kinds, whose endpoints do not report drops).
fn session_drops(f: &FlowRecord, from_s: u64, to_s: u64) -> Option<Drops> {
    (f.kind == "session").then(|| f.drops(from_s, to_s))
}

/// A flow's summary without report windows or a layered summary: its
/// names (`name` names a node), its rounded figures over the first `secs`
/// seconds of a run that ended at `end`, and one sample per second (with
/// `layered`'s frame figures for it). A simulated run and a real node
/// (`meshcast node`) share it.
pub(crate) fn measured_flow(
    f: &FlowRecord,
    secs: u64,
    end: Time,
    name: impl Fn(meshcast_core::NodeId) -> String,
    layered: impl Fn(u64) -> Option<LayeredFigures>,
) -> FlowSummary {
    FlowSummary {
        id: f.name.clone(),
        kind: f.kind.clone(),
        source: name(f.source),
        receivers: f.receivers.iter().map(|&n| name(n)).collect(),
        total: rounded_flow(f.figures(0, secs, end)),
        dropped: session_drops(f, 0, secs),
        video: rounded_video(f.video_figures(0, secs, end)),
        series: (0..secs)
            .map(|t| {
                let (fig, recv_kbps) = flow_figures(f, t, t + 1, end, &name);
                FlowSample {
                    t_s: t,
                    fig,
                    recv_kbps,
                    layered: layered(t),
                    video: rounded_video(f.video_figures(t, t + 1, end)),
                }
            })
            .collect(),
        windows: Vec::new(),
        layered: None,
    }
}

fn layered_summary(sc: &Scenario, f: &FlowRecord, secs: u64) -> LayeredSummary {
    let l = &f.layered;
    let change = sc
        .layered
        .as_ref()
        .filter(|l| l.id == f.name)
        .and_then(|l| Some((l.change_s?, l.stream.layers)));
    let at = |s: f64| Time::from_secs_f64(s);
    LayeredSummary {
        total: rounded_layered(l.figures(Time::ZERO, Time::from_secs(secs))),
        change_s: change.map(|c| c.0),
        frames_to_halve: change.map(|(t, _)| l.frames_to_halve(at(t))),
        frames_to_recover: change.map(|(t, full)| l.frames_to_recover(at(t), full)),
    }
}

fn link_summary(stats: &RunStats, l: &LinkRecord, windows: &[Window]) -> LinkSummary {
    let spec = &stats.net.links()[l.id.index()];
    LinkSummary {
        id: stats.net.link_name(l.id),
        from: stats.net.name(spec.from).to_owned(),
        to: stats.net.name(spec.to).to_owned(),
        capacity_kbps: spec.params.capacity.as_kbps_f64(),
        delay_ms: spec.params.delay.as_millis_f64(),
        queue_packets: spec.params.queue.packets,
        queue_bytes: spec.params.queue.bytes,
        loss: spec.params.loss,
        total: rounded_link(l.figures(0, seconds(stats), stats.end)),
        windows: per_window(windows, |from, to| {
            rounded_link(l.figures(from, to, stats.end))
        }),
    }
}

impl Summary {
    /// Summarise a finished run of `sc`.
    pub fn new(sc: &Scenario, stats: &RunStats, wall_s: f64) -> Summary {
        let windows: Vec<Window> = sc
            .windows
            .iter()
            .map(|&(from_s, to_s)| Window { from_s, to_s })
            .collect();
        let (optimum, optimum_error) = match &sc.conference {
            None => (Vec::new(), None),
            Some(_) => match crate::conference::optimum_steps(sc) {
                Ok(steps) => (
                    steps
                        .into_iter()
                        .map(|(from_s, rates)| OptimumStep { from_s, rates })
                        .collect(),
                    None,
                ),
                Err(e) => (Vec::new(), Some(e.to_string())),
            },
        };
        Summary {
            schema_version: SCHEMA_VERSION,
            name: sc.name.clone(),
            description: sc.description.clone(),
            seed: sc.seed,
            duration_s: sc.duration_s,
            wall_s: r(wall_s, 3),
            events_processed: stats.events_processed,
            flows: stats
                .flows
                .flows()
                .iter()
                .map(|f| flow_summary(sc, stats, f, &windows, &optimum))
                .collect(),
            links: stats
                .links
                .iter()
                .map(|l| link_summary(stats, l, &windows))
                .collect(),
            overhead: overhead_summary(stats, &windows),
            windows,
            optimum,
            optimum_error,
            utility: sc.conference.as_ref().map(|c| UtilitySummary {
                beta: c.params.beta,
                delta_kbps: c.params.delta_kbps,
            }),
            emulation: None,
            packets: stats.counters,
            membership: stats
                .membership
                .iter()
                .map(|m| MembershipEntry {
                    t_s: m.at.as_secs_f64(),
                    node: stats.net.name(m.node).to_owned(),
                    event: if m.joined { "join" } else { "leave" },
                })
                .collect(),
        }
    }

    /// The JSON text of `summary.json`.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        serde_json::to_string_pretty(self).expect("summary serialises") + "\n"
    }
}

/// Write every output of a run into `dir` (created if missing).
pub fn write_all(dir: &Path, summary: &Summary, stats: &RunStats) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("summary.json", &summary.to_json())?;
    write("series.csv", &csv::series_csv(summary, stats))?;
    // A run without tracing leaves no control.csv of an earlier run in the
    // directory, which would pass for this one's.
    let control = dir.join("control.csv");
    if !stats.control.is_empty() {
        write("control.csv", &csv::control_csv(stats))?;
    } else if let Err(e) = std::fs::remove_file(&control)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(e).with_context(|| format!("removing {}", control.display()));
    }
    let charts = plot::charts(summary, stats);
    let mut svgs = Vec::new();
    for c in &charts {
        let svg = plot::render_svg(c)?;
        std::fs::write(plots.join(format!("{}.svg", c.file)), &svg)
            .with_context(|| format!("writing plots/{}.svg", c.file))?;
        plot::render_png(c, &plots.join(format!("{}.png", c.file)))?;
        svgs.push((c.title.clone(), svg));
    }
    write("report.html", &html::report_html(summary, &svgs))?;
    Ok(())
}
