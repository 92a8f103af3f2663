//! `series.csv`: every per-second figure in long ("tidy") form,
//! `t_s,entity,id,metric,value`, ready for pandas, R or a spreadsheet; a
//! flow with more than one receiver adds a metric `recv_kbps.NODE` per
//! receiver.
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
            for (node, v) in s.recv_kbps.iter().flatten() {
                let m = field(&format!("recv_kbps.{node}"));
                let _ = writeln!(out, "{},flow,{id},{m},{v}", s.t_s);
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

/// The text of `control.csv` (`meshcast run --trace-control`): one row per
/// link rate update, per session and control interval, in time order:
/// when, the overlay link (tail and head participants), the session (its
/// flow's name) and the update's inputs and outcome
/// ([`meshcast_core::LinkControl`]; times in milliseconds). Rows are
/// written as the peers reported them; a run without tracing has none.
pub(super) fn control_csv(stats: &RunStats) -> String {
    let mut out = String::from(
        "t_s,tail,head,session,rate_kbps,in_cut,gain_ms,uprime_ms,price_ms,queue_ms,guard_ms,loss,standing,cut_share,floor_ms,late_loss_ms\n",
    );
    let flows = stats.flows.flows();
    let ms = |s: f64| super::r(s * 1e3, 4);
    for c in &stats.control {
        let s = &c.state;
        let session = flows
            .get(s.flow.index())
            .map_or_else(|| s.flow.0.to_string(), |f| field(&f.name));
        let _ = writeln!(
            out,
            "{},{},{},{session},{},{},{},{},{},{},{},{},{},{},{},{}",
            super::r(c.at.as_secs_f64(), 3),
            field(stats.net.name(c.tail)),
            field(stats.net.name(s.head)),
            super::r(s.rate_kbps, 3),
            u8::from(s.in_cut),
            ms(s.gain),
            ms(s.uprime),
            ms(s.price),
            ms(s.queue),
            ms(s.guard),
            super::r(s.loss, 6),
            super::r(s.standing, 4),
            super::r(s.cut_share, 4),
            ms(s.floor),
            ms(s.late_loss),
        );
    }
    out
}
