//! `meshcast sweep`: one scenario run over a grid of `--set` values, its
//! figures gathered in `sweep.json` and `sweep.csv` and plotted against
//! the first varied key (the papers' parameter figures, e.g. MSB's Figs.
//! 7 and 16: average layers against the booster's position).
//!
//! `--vary KEY=V1,V2,...` takes a key as `--set` does and its values
//! separated by commas (so a value cannot itself contain a comma); several
//! `--vary` span the cartesian product. Every point is checked before any
//! runs. Runs are independent and use every core.

use crate::build::{build, end_of};
use crate::overrides::Override;
use crate::report::csv::field as csv_field;
use crate::report::plot::{render_png, render_svg, xy_chart};
use crate::report::{FlowWindow, LayeredSummary, Summary, flow_metrics, layered_metrics};
use crate::scenario::{Scenario, ScenarioError};
use anyhow::{Context as _, anyhow};
use meshcast_core::metrics::FlowFigures;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Version of the `sweep.json` schema (fields are added, never renamed).
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

/// One `--vary KEY=V1,V2,...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vary {
    /// The key, as for `--set`.
    pub key: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

impl FromStr for Vary {
    type Err = String;

    fn from_str(s: &str) -> Result<Vary, String> {
        let (key, values) = s
            .split_once('=')
            .ok_or_else(|| format!("expected KEY=V1,V2,..., got {s:?}"))?;
        let key = key.trim().to_owned();
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
        if values.iter().any(String::is_empty) {
            return Err(format!("empty value in {s:?}"));
        }
        for v in &values {
            // Check the key's syntax once per value, as `--set` would.
            Override::from_str(&format!("{key}={v}"))?;
        }
        Ok(Vary { key, values })
    }
}

/// One point of the grid: a value per varied key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Index into each [`Vary`]'s values.
    pub index: Vec<usize>,
}

/// Every point, the first key varying fastest.
pub fn grid(vary: &[Vary]) -> Vec<Point> {
    let total: usize = vary.iter().map(|v| v.values.len()).product();
    (0..total)
        .map(|mut n| Point {
            index: vary
                .iter()
                .map(|v| {
                    let i = n % v.values.len();
                    n /= v.values.len();
                    i
                })
                .collect(),
        })
        .collect()
}

/// A point's `--set`s after the common ones.
fn point_sets(common: &[Override], vary: &[Vary], p: &Point) -> Vec<Override> {
    let mut sets = common.to_vec();
    for (v, &i) in vary.iter().zip(&p.index) {
        sets.push(
            format!("{}={}", v.key, v.values[i])
                .parse()
                .expect("checked when --vary was parsed"),
        );
    }
    sets
}

/// A flow's figures at one point.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct SweepFlow {
    /// Flow id.
    pub id: String,
    /// Flow kind.
    pub kind: String,
    /// Whole-run figures.
    pub total: FlowFigures,
    /// Per report window.
    pub windows: Vec<FlowWindow>,
    /// A layered stream's whole-run summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layered: Option<LayeredSummary>,
}

/// One run of the sweep.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The varied keys' values, in `--vary` order.
    pub values: Vec<String>,
    /// The run's seed.
    pub seed: u64,
    /// Wall-clock seconds of the simulation.
    pub wall_s: f64,
    /// Every flow's figures.
    pub flows: Vec<SweepFlow>,
}

/// `sweep.json`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Schema version.
    pub schema_version: u32,
    /// Scenario name.
    pub name: String,
    /// `--set`s applied to every point.
    pub sets: Vec<String>,
    /// The varied keys and their values.
    pub vary: Vec<Vary>,
    /// One per point, the first key varying fastest.
    pub points: Vec<SweepPoint>,
}

/// Check every point of the grid; returns each point's scenario.
pub fn check(
    path: &Path,
    common: &[Override],
    vary: &[Vary],
    seed: Option<u64>,
) -> Result<Vec<Scenario>, ScenarioError> {
    let file = path.display().to_string();
    let text = Scenario::read(path)?;
    grid(vary)
        .iter()
        .map(|p| {
            let mut sc = Scenario::parse(&file, &text, &point_sets(common, vary, p))?;
            if let Some(s) = seed {
                sc.seed = s;
            }
            Ok(sc)
        })
        .collect()
}

fn run_one(sc: &Scenario) -> anyhow::Result<SweepPoint> {
    let mut sim = build(sc).context("cannot build the scenario")?;
    let start = Instant::now();
    sim.run_until(end_of(sc), &mut |_| {});
    let wall_s = start.elapsed().as_secs_f64();
    let summary = Summary::new(sc, &sim.into_stats(), wall_s);
    Ok(SweepPoint {
        values: Vec::new(),
        seed: sc.seed,
        wall_s: summary.wall_s,
        flows: summary
            .flows
            .into_iter()
            .map(|f| SweepFlow {
                id: f.id,
                kind: f.kind,
                total: f.total,
                windows: f.windows,
                layered: f.layered,
            })
            .collect(),
    })
}

/// Run every point on `threads` threads, calling `progress(done, total,
/// values)` as each finishes.
pub fn run(
    name: &str,
    scenarios: &[Scenario],
    common: &[Override],
    vary: &[Vary],
    threads: usize,
    progress: &(dyn Fn(usize, usize, &[String]) + Sync),
) -> anyhow::Result<Sweep> {
    let points = grid(vary);
    let values = |p: &Point| -> Vec<String> {
        vary.iter()
            .zip(&p.index)
            .map(|(v, &i)| v.values[i].clone())
            .collect()
    };
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<SweepPoint>>>> =
        Mutex::new((0..points.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, points.len().max(1)) {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(sc) = scenarios.get(k) else { break };
                    let vals = values(&points[k]);
                    let r = run_one(sc).map(|mut p| {
                        p.values = vals.clone();
                        p
                    });
                    results.lock().expect("no thread panicked holding it")[k] = Some(r);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(n, points.len(), &vals);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(points.len());
    for (k, r) in results
        .into_inner()
        .expect("no thread panicked holding it")
        .into_iter()
        .enumerate()
    {
        let r = r.ok_or_else(|| anyhow!("point {k} did not run"))?;
        out.push(r.with_context(|| format!("point {:?}", values(&points[k])))?);
    }
    Ok(Sweep {
        schema_version: SWEEP_SCHEMA_VERSION,
        name: name.to_owned(),
        sets: common.iter().map(ToString::to_string).collect(),
        vary: vary.to_vec(),
        points: out,
    })
}

/// The metrics of a flow's window, by name (layered ones only for layered
/// streams).
fn metrics(w: &FlowWindow) -> Vec<(&'static str, Option<f64>)> {
    let layered = w.fig.layered.as_ref().map(layered_metrics);
    flow_metrics(&w.fig.flow)
        .into_iter()
        .chain(layered.into_iter().flatten())
        .collect()
}

/// One metric of a flow's window (`None`: undefined or not measured).
fn metric_of(w: &FlowWindow, name: &str) -> Option<f64> {
    metrics(w).into_iter().find(|(m, _)| *m == name)?.1
}

/// Whether the sweep has layered streams, and the flows its plots and
/// table show: the layered streams if any, every flow otherwise.
fn shown_flows(p: &SweepPoint) -> (bool, Vec<usize>) {
    let layered = p.flows.iter().any(|f| f.layered.is_some());
    let shown = (0..p.flows.len())
        .filter(|&i| !layered || p.flows[i].layered.is_some())
        .collect();
    (layered, shown)
}

/// `sweep.csv`: `point,<varied keys...>,flow,window,metric,value`, one
/// row per point, flow, report window and metric.
pub fn sweep_csv(s: &Sweep) -> String {
    let mut out = String::from("point,");
    for v in &s.vary {
        out.push_str(&csv_field(&v.key));
        out.push(',');
    }
    out.push_str("flow,window,metric,value\n");
    for (k, p) in s.points.iter().enumerate() {
        let values: String = p.values.iter().map(|v| csv_field(v) + ",").collect();
        for f in &p.flows {
            for w in &f.windows {
                for (m, v) in metrics(w) {
                    let _ = writeln!(
                        out,
                        "{k},{values}{},{}-{},{m},{}",
                        csv_field(&f.id),
                        w.from_s,
                        w.to_s,
                        v.map(|x| x.to_string()).unwrap_or_default()
                    );
                }
            }
        }
    }
    out
}

/// The metrics plotted: a layered stream's layers, COV and retransmission
/// latency if the scenario has one, every flow's worst receive rate
/// otherwise.
const LAYERED_PLOTS: [(&str, &str); 4] = [
    ("layers_min_mean", "mean minimum layers"),
    ("layers_max_mean", "mean maximum layers"),
    ("layers_cov", "COV of the minimum layers"),
    ("latency_ms_retx", "retransmission latency (ms)"),
];
const FLOW_PLOTS: [(&str, &str); 2] = [
    ("recv_kbps_min", "kbit/s received (worst receiver)"),
    ("delay_ms_mean", "mean one-way delay (ms)"),
];

/// Plots of the first report window's figures against the first varied
/// key, one line per flow and combination of the other keys. Empty if the
/// first key's values are not all numbers or there is no window.
fn charts(s: &Sweep) -> Vec<crate::report::plot::Chart> {
    let Some(first) = s.vary.first() else {
        return Vec::new();
    };
    let Some(xs) = first
        .values
        .iter()
        .map(|v| v.parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect::<Option<Vec<f64>>>()
    else {
        return Vec::new();
    };
    let Some(p0) = s.points.first() else {
        return Vec::new();
    };
    let (layered, plotted) = shown_flows(p0);
    let table: &[(&str, &str)] = if layered { &LAYERED_PLOTS } else { &FLOW_PLOTS };
    let per_line = first.values.len();
    let mut out = Vec::new();
    for &(metric, y_label) in table {
        let mut lines = Vec::new();
        for group in s.points.chunks(per_line) {
            let others: Vec<String> = s.vary[1..]
                .iter()
                .zip(&group[0].values[1..])
                .map(|(v, val)| format!("{}={val}", short_key(&v.key)))
                .collect();
            for &fi in &plotted {
                let points: Vec<(f64, f64)> = group
                    .iter()
                    .zip(&xs)
                    .filter_map(|(p, &x)| {
                        let w = p.flows.get(fi)?.windows.first()?;
                        Some((x, metric_of(w, metric)?))
                    })
                    .collect();
                let label = std::iter::once(p0.flows[fi].id.clone())
                    .chain(others.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" ");
                lines.push((label, points));
            }
        }
        if lines.iter().all(|l| l.1.is_empty()) {
            continue;
        }
        let window = p0.flows[plotted[0]]
            .windows
            .first()
            .map(|w| format!(" over [{}, {}) s", w.from_s, w.to_s))
            .unwrap_or_default();
        out.push(xy_chart(
            metric.to_owned(),
            format!("{}: {}{window}", s.name, y_label_title(y_label)),
            first.key.clone(),
            y_label,
            lines,
        ));
    }
    out
}

/// A key's last component, for legends (`layered.booster.enabled` →
/// `enabled`).
fn short_key(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

fn y_label_title(l: &str) -> &str {
    l.split(" (").next().unwrap_or(l)
}

/// Write `sweep.json`, `sweep.csv` and `plots/<metric>.{svg,png}` into
/// `dir` (created if missing). Returns how many plots were written.
pub fn write(dir: &Path, s: &Sweep) -> anyhow::Result<usize> {
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
    let json = serde_json::to_string_pretty(s).context("serialising sweep.json")? + "\n";
    std::fs::write(dir.join("sweep.json"), json).context("writing sweep.json")?;
    std::fs::write(dir.join("sweep.csv"), sweep_csv(s)).context("writing sweep.csv")?;
    let charts = charts(s);
    for c in &charts {
        std::fs::write(plots.join(format!("{}.svg", c.file)), render_svg(c)?)
            .with_context(|| format!("writing plots/{}.svg", c.file))?;
        render_png(c, &plots.join(format!("{}.png", c.file)))?;
    }
    Ok(charts.len())
}

/// The sweep as an aligned text table: one row per point, the first
/// window's headline figure of each plotted flow.
pub fn sweep_table(s: &Sweep) -> String {
    let mut header: Vec<String> = s.vary.iter().map(|v| v.key.clone()).collect();
    let Some(p0) = s.points.first() else {
        return String::new();
    };
    let (layered, shown) = shown_flows(p0);
    let headline: &[&str] = if layered {
        &["layers_min_mean", "layers_max_mean", "latency_ms_retx"]
    } else {
        &["recv_kbps_min"]
    };
    let cols: Vec<(usize, &str)> = shown
        .into_iter()
        .flat_map(|i| headline.iter().map(move |&m| (i, m)))
        .collect();
    for &(i, m) in &cols {
        header.push(format!("{} {m}", p0.flows[i].id));
    }
    let mut rows = vec![header];
    for p in &s.points {
        let mut row = p.values.clone();
        for &(i, m) in &cols {
            let v = p
                .flows
                .get(i)
                .and_then(|f| f.windows.first())
                .and_then(|w| metric_of(w, m));
            row.push(v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}")));
        }
        rows.push(row);
    }
    let width: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vary_parses_and_rejects() {
        let v: Vary = "layered.booster.at_ms=10, 50,90".parse().unwrap();
        assert_eq!(v.key, "layered.booster.at_ms");
        assert_eq!(v.values, ["10", "50", "90"]);
        assert!("at_ms".parse::<Vary>().is_err());
        assert!("at_ms=1,,2".parse::<Vary>().is_err());
        assert!("link[x].delay_ms=1".parse::<Vary>().is_err());
    }

    #[test]
    fn grid_is_the_cartesian_product_first_key_fastest() {
        let vary = [
            Vary {
                key: "a".into(),
                values: vec!["1".into(), "2".into(), "3".into()],
            },
            Vary {
                key: "b".into(),
                values: vec!["x".into(), "y".into()],
            },
        ];
        let g = grid(&vary);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0].index, [0, 0]);
        assert_eq!(g[2].index, [2, 0]);
        assert_eq!(g[3].index, [0, 1]);
        assert_eq!(g[5].index, [2, 1]);
        let sets = point_sets(&[], &vary, &g[4]);
        let shown: Vec<String> = sets.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["a=2", "b=y"]);
    }
}
