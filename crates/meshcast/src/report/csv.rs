//! `series.csv`: every per-second figure in long ("tidy") form,
//! `t_s,entity,id,metric,value`, ready for pandas, R or a spreadsheet.
//! An empty value means "not defined" (no packet received or sent).
//! Links that never carried or dropped a packet are left out.

use super::{Summary, is_active};
use meshcast_sim::RunStats;
use std::fmt::Write as _;

/// Quote a field if it needs it (RFC 4180).
pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The text of `series.csv`.
pub(super) fn series_csv(summary: &Summary, stats: &RunStats) -> String {
    let mut out = String::from("t_s,entity,id,metric,value\n");
    for f in &summary.flows {
        let id = field(&f.id);
        for s in &f.series {
            let layered = s.layered.as_ref().map(super::layered_metrics);
            for (m, v) in super::flow_metrics(&s.fig)
                .into_iter()
                .chain(layered.into_iter().flatten())
            {
                let _ = writeln!(out, "{},flow,{id},{m},{}", s.t_s, num(v));
            }
        }
    }
    for (l, ls) in stats.links.iter().zip(&summary.links) {
        if !is_active(ls) {
            continue;
        }
        let id = field(&ls.id);
        for (s, p) in l.per_second(stats.end).into_iter().enumerate() {
            for (m, v) in [
                ("utilisation", p.utilisation),
                ("tx_kbps", p.tx_kbps),
                ("queue_pkts_mean", p.queue_pkts_mean),
                ("queue_pkts_max", f64::from(p.queue_pkts_max)),
                ("drops_queue", p.drops_queue as f64),
                ("drops_loss", p.drops_loss as f64),
                ("drops_down", p.drops_down as f64),
            ] {
                let _ = writeln!(out, "{s},link,{id},{m},{}", super::r(v, 6));
            }
        }
    }
    out
}
