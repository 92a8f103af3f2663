//! The `[layered]` section: one MSB layered video stream over the
//! scenario's underlay, end to end or through a booster
//! (docs/transport.md, `../shared/papers/msb.txt`).
//!
//! `[layered.booster]` names the intermediate node. With `at_ms` it also
//! places it: the links listed in `before` get `at_ms` of propagation
//! delay and those in `after` get `path_ms - at_ms`, so one file sweeps
//! the booster's position with `--set layered.booster.at_ms=…`, and
//! `--set layered.booster.enabled=false` runs the same path end to end.

use crate::scenario::{LinkDecl, Locator, NodeRef, ScenarioError};
use meshcast_core::Duration;
use meshcast_proto::msb::LayeredConfig;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use toml::Spanned;

/// A checked `[layered]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct Layered {
    /// Flow id in reports.
    pub id: String,
    /// The source node (MmAppSend).
    pub source: String,
    /// The receiving node (MmAppRecv).
    pub receiver: String,
    /// The booster the stream runs through (MmAppInt), `None`: end to end.
    pub booster: Option<String>,
    /// First frame, seconds.
    pub start_s: f64,
    /// No frame generated from here on, seconds.
    pub until_s: f64,
    /// The stream and MSB's parameters.
    pub stream: LayeredConfig,
    /// The instant the network changes (scenario II: 150 s); the summary
    /// counts the frames the stream needs from it to halve its top layer
    /// and to reach every layer.
    pub change_s: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLayered {
    id: Option<Spanned<String>>,
    source: Spanned<String>,
    receiver: Spanned<String>,
    start_s: Option<Spanned<f64>>,
    until_s: Option<Spanned<f64>>,
    layers: Option<Spanned<i64>>,
    packets_per_layer: Option<Spanned<i64>>,
    fps: Option<Spanned<i64>>,
    packet_bytes: Option<Spanned<i64>>,
    probation_ms: Option<Spanned<f64>>,
    alpha_max: Option<Spanned<f64>>,
    beta: Option<Spanned<f64>>,
    retransmit: Option<bool>,
    change_s: Option<Spanned<f64>>,
    booster: Option<Spanned<RawBooster>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBooster {
    node: Spanned<String>,
    enabled: Option<bool>,
    at_ms: Option<Spanned<f64>>,
    path_ms: Option<Spanned<f64>>,
    #[serde(default)]
    before: Vec<Spanned<Vec<String>>>,
    #[serde(default)]
    after: Vec<Spanned<Vec<String>>>,
}

/// Everything of the scenario the section is checked against.
pub(crate) struct Context<'a, 'l> {
    pub loc: &'a Locator<'l>,
    pub node_ref: &'a NodeRef<'a>,
    pub duration_s: f64,
    /// Directed node pairs → index of the declared link.
    pub directed: &'a BTreeMap<(String, String), usize>,
    /// Flow ids the events already use → the event's index.
    pub flow_ids: &'a HashMap<String, usize>,
}

/// Check the section, setting the delays of the links the booster's
/// `before` and `after` name when it has `at_ms`.
pub(crate) fn check(
    raw: &RawLayered,
    cx: &Context<'_, '_>,
    links: &mut [LinkDecl],
) -> Result<Layered, ScenarioError> {
    let loc = cx.loc;
    let f = |k: &str| format!("layered.{k}");
    let source = (cx.node_ref)(&raw.source, &f("source"))?;
    let receiver = (cx.node_ref)(&raw.receiver, &f("receiver"))?;
    if source == receiver {
        return Err(loc.err(
            raw.receiver.span(),
            &f("receiver"),
            "the receiver must differ from the source",
        ));
    }
    let id = match &raw.id {
        None => "layered".to_owned(),
        Some(s) if s.get_ref().trim().is_empty() => {
            return Err(loc.err(s.span(), &f("id"), "must not be empty"));
        }
        Some(s) => s.get_ref().trim().to_owned(),
    };
    if let Some(j) = cx.flow_ids.get(&id) {
        let span = raw.id.as_ref().map_or(raw.source.span(), Spanned::span);
        return Err(loc.err(
            span,
            &f("id"),
            format!("flow id {id:?} already used by event[{j}]"),
        ));
    }
    let seconds = |v: &Option<Spanned<f64>>, k: &str, default: f64| match v {
        None => Ok(default),
        Some(s) if s.get_ref().is_finite() && (0.0..=cx.duration_s).contains(s.get_ref()) => {
            Ok(*s.get_ref())
        }
        Some(s) => Err(loc.err(
            s.span(),
            &f(k),
            format!("must be within the run (0..={})", cx.duration_s),
        )),
    };
    let start_s = seconds(&raw.start_s, "start_s", 0.0)?;
    let until_s = seconds(&raw.until_s, "until_s", cx.duration_s)?;
    if until_s <= start_s {
        let span = raw
            .until_s
            .as_ref()
            .map_or(raw.source.span(), Spanned::span);
        return Err(loc.err(span, &f("until_s"), "must be after start_s"));
    }

    let change_s = match &raw.change_s {
        None => None,
        Some(s) if s.get_ref().is_finite() && (start_s..until_s).contains(s.get_ref()) => {
            Some(*s.get_ref())
        }
        Some(s) => {
            return Err(loc.err(
                s.span(),
                &f("change_s"),
                format!("must be within the stream's time, [{start_s}, {until_s})"),
            ));
        }
    };

    let d = LayeredConfig::default();
    let int = |v: &Option<Spanned<i64>>, k: &str, max: i64, default: i64| match v {
        None => Ok(default),
        Some(s) if (1..=max).contains(s.get_ref()) => Ok(*s.get_ref()),
        Some(s) => Err(loc.err(s.span(), &f(k), format!("must be within 1..={max}"))),
    };
    let fraction = |v: &Option<Spanned<f64>>, k: &str, default: f64| match v {
        None => Ok(default),
        Some(s) if (0.0..=1.0).contains(s.get_ref()) => Ok(*s.get_ref()),
        Some(s) => Err(loc.err(s.span(), &f(k), "must be within 0..=1")),
    };
    let probation = match &raw.probation_ms {
        None => d.probation,
        Some(s) if s.get_ref().is_finite() && *s.get_ref() > 0.0 => {
            Duration::from_secs_f64(*s.get_ref() / 1e3)
        }
        Some(s) => return Err(loc.err(s.span(), &f("probation_ms"), "must be positive")),
    };
    let stream = LayeredConfig {
        layers: int(&raw.layers, "layers", 255, d.layers.into())? as u8,
        packets_per_layer: int(
            &raw.packets_per_layer,
            "packets_per_layer",
            64,
            d.packets_per_layer.into(),
        )? as u8,
        fps: int(&raw.fps, "fps", 1000, d.fps.into())? as u32,
        packet_bytes: int(
            &raw.packet_bytes,
            "packet_bytes",
            meshcast_proto::traffic::MAX_PACKET_BYTES.into(),
            d.packet_bytes.into(),
        )? as u32,
        probation,
        alpha_max: fraction(&raw.alpha_max, "alpha_max", d.alpha_max)?,
        beta: fraction(&raw.beta, "beta", d.beta)?,
        retransmit: raw.retransmit.unwrap_or(d.retransmit),
    };
    if let Err(why) = stream.validate() {
        let span = raw
            .packet_bytes
            .as_ref()
            .map_or(raw.source.span(), Spanned::span);
        return Err(loc.err(span, "layered", why));
    }

    let booster = match &raw.booster {
        None => None,
        Some(b) => check_booster(b, cx, links, &source, &receiver)?,
    };
    Ok(Layered {
        id,
        source,
        receiver,
        booster,
        start_s,
        until_s,
        stream,
        change_s,
    })
}

/// The booster's node if enabled; places it with `at_ms`.
fn check_booster(
    b: &Spanned<RawBooster>,
    cx: &Context<'_, '_>,
    links: &mut [LinkDecl],
    source: &str,
    receiver: &str,
) -> Result<Option<String>, ScenarioError> {
    let loc = cx.loc;
    let f = |k: &str| format!("layered.booster.{k}");
    let raw = b.get_ref();
    let node = (cx.node_ref)(&raw.node, &f("node"))?;
    if node == source || node == receiver {
        return Err(loc.err(
            raw.node.span(),
            &f("node"),
            "the booster must be neither the source nor the receiver",
        ));
    }
    match (&raw.at_ms, &raw.path_ms) {
        (None, None) if raw.before.is_empty() && raw.after.is_empty() => {}
        (None, _) => {
            return Err(loc.err(
                b.span(),
                &f("at_ms"),
                "path_ms, before and after place the booster and need at_ms",
            ));
        }
        (Some(_), None) => {
            return Err(loc.err(b.span(), &f("path_ms"), "at_ms needs path_ms"));
        }
        (Some(at), Some(path)) => {
            let path_ms = *path.get_ref();
            if !(path_ms.is_finite() && path_ms > 0.0) {
                return Err(loc.err(path.span(), &f("path_ms"), "must be a positive number"));
            }
            let at_ms = *at.get_ref();
            if !(at_ms.is_finite() && (0.0..=path_ms).contains(&at_ms)) {
                return Err(loc.err(
                    at.span(),
                    &f("at_ms"),
                    format!("must be within 0..=path_ms ({path_ms})"),
                ));
            }
            if raw.before.is_empty() && raw.after.is_empty() {
                return Err(loc.err(
                    b.span(),
                    &f("before"),
                    "at_ms needs the links it sets: before and/or after",
                ));
            }
            let mut placed: HashMap<usize, &str> = HashMap::new();
            for (list, k, delay_ms) in [
                (&raw.before, "before", at_ms),
                (&raw.after, "after", path_ms - at_ms),
            ] {
                for (i, pair) in list.iter().enumerate() {
                    let field = format!("layered.booster.{k}[{i}]");
                    let link = match pair.get_ref().as_slice() {
                        [a, z] => cx
                            .directed
                            .get(&(a.trim().to_owned(), z.trim().to_owned()))
                            .copied()
                            .ok_or_else(|| {
                                loc.err(pair.span(), &field, format!("no link {a} -> {z}"))
                            })?,
                        _ => {
                            return Err(loc.err(
                                pair.span(),
                                &field,
                                "must be a link's two ends, [\"FROM\", \"TO\"]",
                            ));
                        }
                    };
                    if let Some(other) = placed.insert(link, k) {
                        return Err(loc.err(
                            pair.span(),
                            &field,
                            format!("link already listed in {other}"),
                        ));
                    }
                    links[link].params.delay = Duration::from_secs_f64(delay_ms / 1e3);
                }
            }
        }
    }
    Ok(raw.enabled.unwrap_or(true).then_some(node))
}
