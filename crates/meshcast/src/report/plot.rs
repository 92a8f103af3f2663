//! Plots in the style of the papers' figures: time on the x axis, one line
//! per flow (solid: what arrived at the worst receiver; dashed: what the
//! source sent), report windows shaded. Rendered to SVG and PNG with
//! `plotters`; text uses the DejaVu Sans font embedded in the binary, so
//! plots look the same on a machine without fonts.

use super::{FlowSummary, OptimumStep, Summary, UtilitySummary};
use anyhow::{Context as _, anyhow};
use meshcast_core::layered::Frame;
use meshcast_sim::{LinkFigures, RunStats};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

/// Most legend entries a chart shows; further series are drawn unlabelled.
const MAX_LEGEND: usize = 12;
/// Most links a link chart shows (the busiest).
const MAX_LINKS: usize = 8;

/// The optimum's schemes drawn as dashed lines, with their labels.
const OPTIMUM_LINES: [(&str, &str); 4] = [
    ("coded", "optimum"),
    ("twohop", "2-hop optimum"),
    ("simulcast", "Simulcast maximum"),
    ("mutualcast", "Mutualcast maximum"),
];

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

struct Line {
    label: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
    color: usize,
}

/// One chart, ready to render.
pub(crate) struct Chart {
    /// File stem under `plots/`.
    pub file: String,
    /// Title.
    pub title: String,
    x_label: String,
    y_label: &'static str,
    lines: Vec<Line>,
    windows: Vec<(f64, f64)>,
    x_max: f64,
    /// Mark every point (for sweeps, which have few).
    markers: bool,
    /// Fit the y axis to the data instead of starting it at zero (for
    /// figures whose zero means nothing, like a sum of logarithms).
    fit_y: bool,
}

fn series<T>(samples: &[T], f: impl Fn(&T) -> Option<(f64, f64)>) -> Vec<(f64, f64)> {
    samples.iter().filter_map(f).collect()
}

/// Every optimum step with the time it ends (the next step, or the run's end).
fn optimum_spans(summary: &Summary) -> impl Iterator<Item = (&OptimumStep, f64)> {
    let opt = &summary.optimum;
    opt.iter().enumerate().map(move |(k, step)| {
        let end = opt.get(k + 1).map_or(summary.duration_s, |n| n.from_s);
        (step, end)
    })
}

/// Session `id`'s rate under `scheme` as a step line over the run (one
/// line per stretch the participant is present; the first is labelled).
fn steps(summary: &Summary, id: &str, scheme: &str, label: &str, color: usize) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut open = false;
    for (step, end) in optimum_spans(summary) {
        match step.rates.get(scheme).and_then(|r| r.get(id)) {
            Some(&v) => {
                if !open {
                    lines.push(Line {
                        label: if lines.is_empty() {
                            label.to_owned()
                        } else {
                            String::new()
                        },
                        points: Vec::new(),
                        dashed: true,
                        color,
                    });
                    open = true;
                }
                let l = lines.last_mut().expect("a line is open");
                l.points.extend([(step.from_s, v), (end, v)]);
            }
            None => open = false,
        }
    }
    lines
}

/// Points sit at the middle of their second.
fn mid(t: u64) -> f64 {
    t as f64 + 0.5
}

/// A flow's received (worst receiver, solid) and sent (dashed) rate lines,
/// labels starting with `prefix`.
fn rate_lines(f: &FlowSummary, prefix: &str, color: usize) -> [Line; 2] {
    [
        Line {
            label: format!("{prefix}received (worst receiver)"),
            points: series(&f.series, |s| Some((mid(s.t_s), s.fig.recv_kbps_min))),
            dashed: false,
            color,
        },
        Line {
            label: format!("{prefix}sent"),
            points: series(&f.series, |s| Some((mid(s.t_s), s.fig.send_kbps))),
            dashed: true,
            color,
        },
    ]
}

/// Fig. 8e: the conference's total utility each second, from every
/// present session's worst-receiver goodput (solid), against the total
/// utility of the optimum and of the baselines' maxima (dashed steps). A
/// session counts while its participant is in the optimum (present).
fn utility_lines(summary: &Summary, u: UtilitySummary) -> Vec<Line> {
    let sessions: Vec<&FlowSummary> = summary
        .flows
        .iter()
        .filter(|f| f.kind == "session")
        .collect();
    let mut achieved = Vec::new();
    let len = sessions.iter().map(|f| f.series.len()).max().unwrap_or(0);
    for k in 0..len {
        let Some(t) = sessions.iter().find_map(|f| f.series.get(k)).map(|s| s.t_s) else {
            continue;
        };
        let Some(step) = OptimumStep::at(&summary.optimum, mid(t)) else {
            continue;
        };
        let present = step.rates.get("coded");
        let total: f64 = sessions
            .iter()
            .filter(|f| present.is_some_and(|p| p.contains_key(&f.id)))
            .filter_map(|f| f.series.get(k))
            .map(|s| u.of_kbps(s.fig.recv_kbps_min))
            .sum();
        achieved.push((mid(t), total));
    }
    let mut lines = vec![Line {
        label: "achieved (worst receivers)".into(),
        points: achieved,
        dashed: false,
        color: 0,
    }];
    for (c, (scheme, label)) in OPTIMUM_LINES.into_iter().enumerate() {
        let mut points = Vec::new();
        for (step, end) in optimum_spans(summary) {
            if let Some(rates) = step.rates.get(scheme) {
                let v: f64 = rates.values().map(|&r| u.of_kbps(r)).sum();
                points.extend([(step.from_s, v), (end, v)]);
            }
        }
        lines.push(Line {
            label: label.into(),
            points,
            dashed: true,
            color: c + 1,
        });
    }
    lines
}

/// Each frame's value held until the next frame's generation (the last
/// for one frame interval, taken from the previous gap).
fn frame_steps(frames: &[Frame], layer: fn(&Frame) -> u8) -> Vec<(f64, f64)> {
    let t: Vec<f64> = frames
        .iter()
        .map(|f| f.generated_at.as_secs_f64())
        .collect();
    let mut points = Vec::with_capacity(2 * frames.len());
    for (k, f) in frames.iter().enumerate() {
        let gap = match k {
            0 => 0.0,
            _ => t[k] - t[k - 1],
        };
        let end = t.get(k + 1).copied().unwrap_or(t[k] + gap);
        let v = f64::from(layer(f));
        points.extend([(t[k], v), (end, v)]);
    }
    points
}

/// The charts for a run: rates, delay and loss per flow; queue and
/// utilisation of the busiest links.
pub(super) fn charts(summary: &Summary, stats: &RunStats) -> Vec<Chart> {
    let x_max = summary.duration_s;
    let windows: Vec<(f64, f64)> = summary
        .windows
        .iter()
        .map(|w| (w.from_s as f64, w.to_s as f64))
        .collect();
    let chart = |file: String, title: &str, y_label, lines: Vec<Line>| Chart {
        file,
        title: format!("{}: {title}", summary.name),
        x_label: "time (s)".to_owned(),
        y_label,
        lines,
        windows: windows.clone(),
        x_max,
        markers: false,
        fit_y: false,
    };
    let mut out = Vec::new();
    let flows = &summary.flows;
    if !flows.is_empty() {
        let mut rates = Vec::new();
        let mut delay = Vec::new();
        let mut loss = Vec::new();
        for (i, f) in flows.iter().enumerate() {
            rates.extend(rate_lines(f, &format!("{} ", f.id), i));
            delay.push(Line {
                label: format!("{} mean", f.id),
                points: series(&f.series, |s| s.fig.delay_ms_mean.map(|v| (mid(s.t_s), v))),
                dashed: false,
                color: i,
            });
            delay.push(Line {
                label: format!("{} p95", f.id),
                points: series(&f.series, |s| s.fig.delay_ms_p95.map(|v| (mid(s.t_s), v))),
                dashed: true,
                color: i,
            });
            loss.push(Line {
                label: f.id.clone(),
                points: series(&f.series, |s| s.fig.loss.map(|v| (mid(s.t_s), v * 100.0))),
                dashed: false,
                color: i,
            });
        }
        out.push(chart(
            "rates".into(),
            "rate per flow",
            "kbit/s (payload)",
            rates,
        ));
        for (i, f) in flows.iter().enumerate() {
            if f.kind != "session" || summary.optimum.is_empty() {
                continue;
            }
            let mut lines = Vec::from(rate_lines(f, "", 0));
            for (c, (scheme, label)) in OPTIMUM_LINES.into_iter().enumerate() {
                lines.extend(steps(summary, &f.id, scheme, label, c + 1));
            }
            out.push(chart(
                format!("session-{i}"),
                &format!("session {} against the optimum", f.id),
                "kbit/s (payload)",
                lines,
            ));
        }
        if let Some(u) = summary.utility.filter(|_| !summary.optimum.is_empty()) {
            out.push(Chart {
                fit_y: true,
                ..chart(
                    "utility".into(),
                    "total utility against the optimum",
                    "Σ β·ln(z + δ), z in bit/s",
                    utility_lines(summary, u),
                )
            });
        }
        let mut layers = Vec::new();
        for (i, f) in flows.iter().enumerate() {
            if f.layered.is_none() {
                continue;
            }
            let frames = stats.flows.flows()[i].layered.frames();
            // Solid lines in two colours: a dashed line through hundreds
            // of steep steps reads as noise. The maximum goes underneath.
            // Steps, not lines through the points: a polyline that turns
            // back sharply (13, 0, 13) draws mitre spikes past the chart.
            for (label, layer, color) in [
                (
                    "maximum",
                    (|fr: &Frame| fr.max) as fn(&Frame) -> u8,
                    2 * i + 1,
                ),
                (
                    "minimum (consecutive from the base)",
                    |fr: &Frame| fr.min,
                    2 * i,
                ),
            ] {
                layers.push(Line {
                    label: format!("{} {label}", f.id),
                    points: frame_steps(frames, layer),
                    dashed: false,
                    color,
                });
            }
        }
        if !layers.is_empty() {
            out.push(chart(
                "layers".into(),
                "layers per frame (by generation time)",
                "layers",
                layers,
            ));
        }
        out.push(chart("delay".into(), "one-way delay per flow", "ms", delay));
        out.push(chart(
            "loss".into(),
            "loss per flow (worst receiver)",
            "% of packets sent",
            loss,
        ));
    }
    let mut busy = super::busiest_links(summary);
    busy.truncate(MAX_LINKS);
    if !busy.is_empty() {
        let mut queue = Vec::new();
        let mut util = Vec::new();
        for (c, &i) in busy.iter().enumerate() {
            let id = &summary.links[i].id;
            let per_sec = stats.links[i].per_second(stats.end);
            let points = |g: fn(&LinkFigures) -> f64| -> Vec<(f64, f64)> {
                per_sec
                    .iter()
                    .enumerate()
                    .map(|(s, f)| (mid(s as u64), g(f)))
                    .collect()
            };
            queue.push(Line {
                label: id.clone(),
                points: points(|f| f.queue_pkts_mean),
                dashed: false,
                color: c,
            });
            util.push(Line {
                label: id.clone(),
                points: points(|f| f.utilisation * 100.0),
                dashed: false,
                color: c,
            });
        }
        out.push(chart(
            "queue".into(),
            "mean queue of the busiest links",
            "packets waiting",
            queue,
        ));
        out.push(chart(
            "utilisation".into(),
            "utilisation of the busiest links",
            "% of capacity",
            util,
        ));
    }
    out
}

/// A chart of `y` against a swept parameter: one solid line per
/// `(label, points)`, x from 0 to the largest x.
pub(crate) fn xy_chart(
    file: String,
    title: String,
    x_label: String,
    y_label: &'static str,
    lines: Vec<(String, Vec<(f64, f64)>)>,
) -> Chart {
    let x_max = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    Chart {
        file,
        title,
        x_label,
        y_label,
        lines: lines
            .into_iter()
            .enumerate()
            .map(|(color, (label, points))| Line {
                label,
                points,
                dashed: false,
                color,
            })
            .collect(),
        windows: Vec::new(),
        x_max,
        markers: true,
        fit_y: false,
    }
}

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded DejaVu fonts are valid TrueType: registration cannot
        // fail, and if it did plots would only lose their text.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Chart) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing {}: {e:?}", c.file);
    root.fill(&WHITE).map_err(e)?;
    let ys = || c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (y_min, y_max) = if c.fit_y {
        let lo = ys().fold(f64::INFINITY, f64::min);
        let hi = ys().fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() {
            let pad = ((hi - lo) * 0.1).max(1e-9);
            (lo - pad, hi + pad)
        } else {
            (0.0, 1.0)
        }
    } else {
        (0.0, ys().fold(0.0f64, f64::max).max(1e-9) * 1.1)
    };
    let x_max = c.x_max.max(1.0);
    let mut chart = ChartBuilder::on(root)
        .caption(
            &c.title,
            ("sans-serif", 22).into_font().style(FontStyle::Bold),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, y_min..y_max)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc(&c.x_label)
        .y_desc(c.y_label)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let shade = RGBColor(120, 120, 120).mix(0.12);
    for &(a, b) in &c.windows {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(a, y_min), (b, y_max)],
                shade.filled(),
            )))
            .map_err(e)?;
    }
    for (n, l) in c.lines.iter().enumerate() {
        let color = PALETTE[l.color % PALETTE.len()];
        let style = ShapeStyle::from(&color).stroke_width(2);
        let anno = if l.dashed {
            chart
                .draw_series(DashedLineSeries::new(l.points.iter().copied(), 6, 4, style))
                .map_err(e)?
        } else {
            chart
                .draw_series(
                    LineSeries::new(l.points.iter().copied(), style).point_size(if c.markers {
                        4
                    } else {
                        0
                    }),
                )
                .map_err(e)?
        };
        if n < MAX_LEGEND && !l.label.is_empty() {
            let dashed = l.dashed;
            anno.label(l.label.clone()).legend(move |(x, y)| {
                if dashed {
                    PathElement::new(vec![(x, y), (x + 8, y)], style)
                } else {
                    PathElement::new(vec![(x, y), (x + 20, y)], style)
                }
            });
        }
    }
    if c.lines.len() > MAX_LEGEND {
        // Say how many were left out of the legend.
        let more = c.lines.len() - MAX_LEGEND;
        chart
            .draw_series(std::iter::once(PathElement::new(
                Vec::<(f64, f64)>::new(),
                WHITE,
            )))
            .map_err(e)?
            .label(format!("... and {more} more"))
            .legend(|(x, y)| PathElement::new(vec![(x, y)], WHITE));
    }
    if !c.lines.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 13))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// The chart as SVG text.
pub(crate) fn render_svg(c: &Chart) -> anyhow::Result<String> {
    register_fonts();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (1000, 560)).into_drawing_area();
        draw(&root, c)?;
    }
    Ok(s)
}

/// The chart as a PNG file at `path`.
pub(crate) fn render_png(c: &Chart, path: &Path) -> anyhow::Result<()> {
    register_fonts();
    let root = BitMapBackend::new(path, (1500, 840)).into_drawing_area();
    draw(&root, c).with_context(|| format!("writing {}", path.display()))
}
