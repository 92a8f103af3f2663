//! `report.html`: one self-contained page with the run's facts, the
//! results tables and every plot inline (SVG), so it can be mailed or
//! archived alone.

use super::Summary;
use super::table::tables;
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The text of `report.html`; `svgs` holds (title, SVG text) per plot.
pub(super) fn report_html(s: &Summary, svgs: &[(String, String)]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>meshcast: {name}</title><style>\
         body{{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1060px;color:#222}}\
         table{{border-collapse:collapse;margin:0.5em 0 1.5em}}\
         th,td{{border-bottom:1px solid #ddd;padding:3px 10px;text-align:right}}\
         th:first-child,td:first-child{{text-align:left}}\
         th{{background:#f4f4f4}} figure{{margin:1em 0}} svg{{max-width:100%;height:auto}}\
         .facts td{{text-align:left}}</style></head><body>\n<h1>{name}</h1>\n",
        name = esc(&s.name)
    );
    if let Some(d) = &s.description {
        let _ = writeln!(h, "<p>{}</p>", esc(d));
    }
    let _ = writeln!(
        h,
        "<table class=\"facts\"><tr><td>seed</td><td>{}</td></tr>\
         <tr><td>simulated</td><td>{} s</td></tr>\
         <tr><td>wall clock</td><td>{:.3} s</td></tr>\
         <tr><td>events processed</td><td>{}</td></tr>\
         <tr><td>packets sent / delivered / hops</td><td>{} / {} / {}</td></tr></table>",
        s.seed,
        s.duration_s,
        s.wall_s,
        s.events_processed,
        s.packets.sent,
        s.packets.delivered,
        s.packets.hops
    );
    for t in tables(s) {
        let _ = writeln!(h, "<h2>{}</h2>\n<table><tr>", esc(&t.title));
        for c in &t.headers {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>\n");
        for r in &t.rows {
            h.push_str("<tr>");
            for c in r {
                let _ = write!(h, "<td>{}</td>", esc(c));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    h.push_str(
        "<h2>Plots</h2>\n<p>Shaded: report windows. Solid: received at the worst receiver \
                (rates), mean (delay); dashed: sent (rates), 95th percentile (delay).</p>\n",
    );
    for (title, svg) in svgs {
        // Drop the XML prolog so the SVG can sit inline.
        let body = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
        let _ = writeln!(h, "<figure aria-label=\"{}\">{body}</figure>", esc(title));
    }
    h.push_str("</body></html>\n");
    h
}
