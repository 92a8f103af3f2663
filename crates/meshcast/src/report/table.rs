//! The results tables: built once as rows, rendered as text (end of a run)
//! or HTML (`report.html`).

use super::Summary;
use meshcast_core::layered::LayeredFigures;
use meshcast_core::metrics::FlowFigures;
use meshcast_sim::LinkFigures;

/// A titled table.
pub(super) struct Table {
    pub title: String,
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
}

fn flow_cells(p: &FlowFigures) -> [String; 5] {
    [
        format!("{:.1}", p.send_kbps),
        format!("{:.1}", p.recv_kbps_min),
        opt(p.delay_ms_mean, 2),
        opt(p.delay_ms_p95, 2),
        opt(p.loss.map(|l| l * 100.0), 2),
    ]
}

fn link_cells(p: &LinkFigures) -> [String; 5] {
    [
        format!("{:.1}", p.utilisation * 100.0),
        format!("{:.1}", p.tx_kbps),
        format!("{:.2}", p.queue_pkts_mean),
        p.queue_pkts_max.to_string(),
        (p.drops_queue + p.drops_loss + p.drops_down).to_string(),
    ]
}

const FLOW_HEADERS: [&str; 7] = [
    "flow",
    "path",
    "send kbps",
    "recv kbps (min)",
    "delay ms",
    "p95 ms",
    "loss %",
];
/// The column of the sessions' drops by cause (`flows[].dropped`).
const DROPS_HEADER: &str = "dropped late/policed/down/stale";

fn layered_cells(p: &LayeredFigures) -> [String; 7] {
    [
        p.frames.to_string(),
        opt(p.layers_min_mean, 2),
        opt(p.layers_max_mean, 2),
        opt(p.layers_cov, 3),
        opt(p.latency_ms_first, 1),
        opt(p.latency_ms_retx, 1),
        p.retx_packets.to_string(),
    ]
}

const LAYERED_HEADERS: [&str; 8] = [
    "stream",
    "frames",
    "layers min",
    "layers max",
    "COV",
    "first ms",
    "retx ms",
    "retx pkts",
];

const LINK_HEADERS: [&str; 6] = ["link", "util %", "tx kbps", "queue", "queue max", "drops"];

/// Most links listed in a table (the busiest).
const MAX_LINK_ROWS: usize = 20;

/// The tables of a run: per report window (or the whole run when there are
/// none), flows then the busiest links.
pub(super) fn tables(s: &Summary) -> Vec<Table> {
    let mut spans: Vec<(String, Option<usize>)> = s
        .windows
        .iter()
        .enumerate()
        .map(|(i, w)| (format!("window [{}, {}) s", w.from_s, w.to_s), Some(i)))
        .collect();
    if spans.is_empty() {
        spans.push(("whole run".to_owned(), None));
    }
    let mut busy = super::busiest_links(s);
    let omitted = busy.len().saturating_sub(MAX_LINK_ROWS);
    busy.truncate(MAX_LINK_ROWS);
    let mut out = Vec::new();
    for (label, w) in spans {
        if !s.flows.is_empty() {
            // Conference sessions say where their loss happened.
            let with_drops = s.flows.iter().any(|f| f.dropped.is_some());
            let rows = s
                .flows
                .iter()
                .map(|f| {
                    let p = w.map_or(&f.total, |i| &f.windows[i].fig.flow);
                    let mut row = vec![
                        f.id.clone(),
                        format!("{} -> {}", f.source, f.receivers.join(",")),
                    ];
                    row.extend(flow_cells(p));
                    if with_drops {
                        let d = w.map_or(f.dropped, |i| f.windows[i].fig.dropped);
                        row.push(d.map_or_else(
                            || "-".to_owned(),
                            |d| format!("{}/{}/{}/{}", d.late, d.policed, d.link_down, d.stale),
                        ));
                    }
                    row
                })
                .collect();
            let mut headers = FLOW_HEADERS.to_vec();
            if with_drops {
                headers.push(DROPS_HEADER);
            }
            out.push(Table {
                title: format!("Flows, {label}"),
                headers,
                rows,
            });
        }
        let layered: Vec<Vec<String>> = s
            .flows
            .iter()
            .filter_map(|f| {
                let p = match w {
                    Some(i) => f.windows[i].fig.layered.as_ref()?,
                    None => &f.layered.as_ref()?.total,
                };
                let mut row = vec![f.id.clone()];
                row.extend(layered_cells(p));
                Some(row)
            })
            .collect();
        if !layered.is_empty() {
            out.push(Table {
                title: format!("Layered streams (frames generated in the {label})"),
                headers: LAYERED_HEADERS.to_vec(),
                rows: layered,
            });
        }
        if !busy.is_empty() {
            let rows = busy
                .iter()
                .map(|&i| {
                    let l = &s.links[i];
                    let p = w.map_or(&l.total, |i| &l.windows[i].fig);
                    let mut row = vec![l.id.clone()];
                    row.extend(link_cells(p));
                    row
                })
                .collect();
            let more = if omitted > 0 {
                format!(" ({omitted} quieter links not shown)")
            } else {
                String::new()
            };
            out.push(Table {
                title: format!("Busiest links, {label}{more}"),
                headers: LINK_HEADERS.to_vec(),
                rows,
            });
        }
    }
    if let Some(e) = &s.emulation {
        let d = &e.delay_element;
        out.push(Table {
            title: "Delay element (the emulated links' propagation delay and loss)".to_owned(),
            headers: vec![
                "priority",
                "frames",
                "lost",
                "wrong way",
                "send errors",
                "late p50 ms",
                "late p99 ms",
                "late max ms",
                "nodes' timers late p99 ms",
                "CPU busy %",
                "CPU stolen %",
                "worst 1 s %",
                "wall clock set ms",
            ],
            rows: vec![vec![
                if d.realtime { "real-time" } else { "normal" }.to_owned(),
                d.frames.to_string(),
                d.lost.to_string(),
                d.wrong_way.to_string(),
                d.send_errors.to_string(),
                opt(d.late_ms_p50, 3),
                opt(d.late_ms_p99, 3),
                opt(d.late_ms_max, 3),
                opt(e.node_timer_late_ms_p99, 3),
                opt(e.cpu_busy_share.map(|v| v * 100.0), 1),
                opt(e.stolen_cpu_share.map(|v| v * 100.0), 2),
                opt(e.stolen_cpu_share_max_1s.map(|v| v * 100.0), 2),
                format!("{:.3}", e.wall_clock_step_ms),
            ]],
        });
        if !e.windows.is_empty() {
            out.push(Table {
                title: "The machine in each report window".to_owned(),
                headers: vec!["window", "CPU busy %", "CPU stolen %"],
                rows: e
                    .windows
                    .iter()
                    .map(|w| {
                        vec![
                            format!("[{}, {}) s", w.from_s, w.to_s),
                            opt(w.cpu_busy_share.map(|v| v * 100.0), 1),
                            opt(w.stolen_cpu_share.map(|v| v * 100.0), 2),
                        ]
                    })
                    .collect(),
            });
        }
    }
    out
}

/// The results as aligned text, for the terminal.
pub fn results_table(s: &Summary) -> String {
    let mut out = String::new();
    for t in tables(s) {
        let mut width: Vec<usize> = t.headers.iter().map(|h| h.len()).collect();
        for r in &t.rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        out.push_str(&t.title);
        out.push('\n');
        let line = |cells: Vec<&str>| -> String {
            let mut l = String::new();
            for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
                let pad = w - c.chars().count();
                // Names left-aligned, numbers right-aligned.
                if i == 0 || (i == 1 && t.headers[1] == "path") {
                    l.push_str(c);
                    l.push_str(&" ".repeat(pad));
                } else {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                }
                l.push_str("  ");
            }
            l.trim_end().to_owned() + "\n"
        };
        out.push_str(&line(t.headers.clone()));
        for r in &t.rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        out.push('\n');
    }
    for f in &s.flows {
        let Some(l) = &f.layered else { continue };
        let (Some(t), Some(h), Some(r)) = (l.change_s, l.frames_to_halve, l.frames_to_recover)
        else {
            continue;
        };
        let n = |v: Option<u64>| v.map_or_else(|| "never".to_owned(), |v| v.to_string());
        out.push_str(&format!(
            "{}, frames from {t} s: {} to halve the top layer, {} to reach every layer\n\n",
            f.id,
            n(h),
            n(r)
        ));
    }
    let p = &s.packets;
    out.push_str(&format!(
        "{} events in {:.2} s wall ({:.2} M events/s); {} packets sent, {} delivered, {} hops; \
         drops: {} queue, {} loss, {} link down, {} unreachable, {} no listener\n",
        s.events_processed,
        s.wall_s,
        if s.wall_s > 0.0 {
            s.events_processed as f64 / s.wall_s / 1e6
        } else {
            0.0
        },
        p.sent,
        p.delivered,
        p.hops,
        p.drops_queue,
        p.drops_loss,
        p.drops_down,
        p.drops_unreachable,
        p.drops_no_listener,
    ));
    out
}
