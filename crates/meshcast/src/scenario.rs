//! Scenario files: TOML, unknown keys rejected, every error located.
//!
//! `docs/scenario-format.md` documents every field. Parsing happens in two
//! steps: serde (with `deny_unknown_fields` and spans on every field) reads
//! the text, then `Scenario::from_raw` checks meaning (known nodes, sane
//! numbers, events inside the run) and reports the offending field's line.

use crate::overrides::{self, Override};
use meshcast_core::{Duration, Rate};
use meshcast_proto::traffic::{MAX_PACKET_BYTES, Pattern, PeriodDistribution, TRAFFIC_HEADER_LEN};
use meshcast_proto::transport::wire::{TCP_SEGMENT_HEADER_LEN, TFRC_DATA_HEADER_LEN};
use meshcast_sim::{LinkParams, NodeKind, QueueLimit, Red};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// Default drop-tail limit when a link names neither `queue_packets` nor
/// `queue_bytes`.
pub const DEFAULT_QUEUE_PACKETS: u32 = 100;

/// A scenario that cannot be used, located in its file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// 1-based line (0 when the error is not tied to a place in the file).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field (dotted path such as `link[2].capacity_kbps`) or `-`.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// The `--set` override that put the offending value there, if any.
    pub set_by: Option<String>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A place only when the error has one: a `--set` value or an
        // unreadable file has no line, and a whole-file error no field.
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if self.field != "-" {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(s) = &self.set_by {
            write!(f, " (value from --set {s})")?;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    description: Option<String>,
    duration_s: Spanned<f64>,
    seed: Option<Spanned<i64>>,
    #[serde(default)]
    node: Vec<Spanned<RawNode>>,
    #[serde(default)]
    link: Vec<Spanned<RawLink>>,
    #[serde(default)]
    event: Vec<Spanned<RawEvent>>,
    report: Option<RawReport>,
    conference: Option<crate::conference::RawConference>,
    layered: Option<crate::layered::RawLayered>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    id: Spanned<String>,
    kind: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    from: Spanned<String>,
    to: Spanned<String>,
    capacity_kbps: Spanned<f64>,
    delay_ms: Option<Spanned<f64>>,
    queue_packets: Option<Spanned<i64>>,
    queue_bytes: Option<Spanned<i64>>,
    loss: Option<Spanned<f64>>,
    both_ways: Option<bool>,
    red: Option<Spanned<RawRed>>,
}

/// `red = true` (ns-2's defaults), `red = false`, or a table overriding
/// some of the parameters.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawRed {
    On(bool),
    Params(RawRedParams),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRedParams {
    min_th: Option<f64>,
    max_th: Option<f64>,
    max_p: Option<f64>,
    w_q: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    at_s: Spanned<f64>,
    kind: Spanned<String>,
    id: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
    node: Option<Spanned<String>>,
    rate_kbps: Option<Spanned<f64>>,
    packet_bytes: Option<Spanned<i64>>,
    until_s: Option<Spanned<f64>>,
    capacity_kbps: Option<Spanned<f64>>,
    spacing: Option<Spanned<String>>,
    on_ms: Option<Spanned<f64>>,
    off_ms: Option<Spanned<f64>>,
    distribution: Option<Spanned<String>>,
    pareto_shape: Option<Spanned<f64>>,
    count: Option<Spanned<i64>>,
    start_gap_ms: Option<Spanned<f64>>,
    every: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReport {
    #[serde(default)]
    window: Vec<Spanned<RawWindow>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWindow {
    from_s: Spanned<f64>,
    to_s: Spanned<f64>,
}

/// A node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeDecl {
    /// Its id (name).
    pub id: String,
    /// Host or router.
    pub kind: NodeKind,
}

/// A link, as declared (one entry even when it runs both ways).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkDecl {
    /// One end.
    pub from: String,
    /// The other end.
    pub to: String,
    /// Parameters of each direction.
    pub params: LinkParams,
    /// Whether the link also exists from `to` to `from`.
    pub both_ways: bool,
}

/// What an event does.
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// A cross-traffic flow (`cbr` or `onoff`).
    Traffic {
        /// Flow id in reports.
        id: String,
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
        /// Rate (while on).
        rate: Rate,
        /// UDP payload bytes per packet.
        packet_bytes: u32,
        /// Stop time, seconds.
        until_s: f64,
        /// Sending pattern.
        pattern: Pattern,
    },
    /// A TCP NewReno bulk flow (`tcp`).
    Tcp {
        /// Flow id in reports.
        id: String,
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
        /// Segment size (the whole UDP payload), bytes.
        segment_bytes: u32,
        /// Stop time, seconds.
        until_s: f64,
    },
    /// A TFRC flow (`tfrc`): bulk, or an application sending at most `rate`.
    Tfrc {
        /// Flow id in reports.
        id: String,
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
        /// UDP payload bytes per packet.
        packet_bytes: u32,
        /// The application's rate (`None`: as fast as TFRC allows).
        rate: Option<Rate>,
        /// Stop time, seconds.
        until_s: f64,
    },
    /// One direction of a link drops every `every`-th packet from now on
    /// (`None`: stops dropping).
    DropEvery {
        /// Index of the link in [`Scenario::links`].
        link: usize,
        /// Whether the direction is `to -> from` of the declared link.
        reverse: bool,
        /// The period, at least 2.
        every: Option<u32>,
    },
    /// The link goes down (both directions if declared both ways).
    LinkDown {
        /// Index of the link in [`Scenario::links`].
        link: usize,
    },
    /// The link comes back up.
    LinkUp {
        /// Index of the link in [`Scenario::links`].
        link: usize,
    },
    /// The link's capacity changes (both directions if both ways).
    Capacity {
        /// Index of the link in [`Scenario::links`].
        link: usize,
        /// New capacity.
        rate: Rate,
    },
    /// A node joins.
    Join {
        /// The node.
        node: String,
    },
    /// A node leaves.
    Leave {
        /// The node.
        node: String,
    },
}

/// A timed event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDecl {
    /// When, seconds from the start.
    pub at_s: f64,
    /// What.
    pub kind: EventKind,
}

/// A checked scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Its name (default output directory `out/<name>/`).
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Length of the run, seconds.
    pub duration_s: f64,
    /// Run seed.
    pub seed: u64,
    /// Nodes in declaration order.
    pub nodes: Vec<NodeDecl>,
    /// Links in declaration order.
    pub links: Vec<LinkDecl>,
    /// Events in declaration order.
    pub events: Vec<EventDecl>,
    /// Report windows `[from_s, to_s)`, whole seconds.
    pub windows: Vec<(u64, u64)>,
    /// The conference running over the underlay, if any.
    pub conference: Option<crate::conference::Conference>,
    /// The layered (MSB) stream, if any.
    pub layered: Option<crate::layered::Layered>,
}

/// Maps byte offsets of the (possibly overridden) text to places in the
/// file, and names the `--set` that produced a line.
pub(crate) struct Locator<'a> {
    file: &'a str,
    text: &'a str,
    /// For each line of `text` (0-based): the 1-based line of the file, or
    /// the override that wrote it.
    lines: Vec<Result<usize, String>>,
}

impl<'a> Locator<'a> {
    /// Places in `text`, the unmodified contents of `file`.
    pub(crate) fn plain(file: &'a str, text: &'a str) -> Locator<'a> {
        Locator {
            file,
            text,
            lines: (1..=text.lines().count()).map(Ok).collect(),
        }
    }

    /// A TOML syntax or shape error, at its place and under the key
    /// written there.
    pub(crate) fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let span = e.span().unwrap_or(0..0);
        let field = self.key_at(span.clone());
        self.err(span, &field, e.message().trim())
    }

    pub(crate) fn err(
        &self,
        span: Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        let before = &self.text[..span.start.min(self.text.len())];
        let line0 = before.matches('\n').count();
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        let (line, set_by) = match self.lines.get(line0) {
            Some(Ok(l)) => (*l, None),
            Some(Err(set)) => (0, Some(set.clone())),
            None => (line0 + 1, None),
        };
        ScenarioError {
            file: self.file.to_owned(),
            line,
            column: if set_by.is_some() { 0 } else { column },
            field: field.to_owned(),
            message: message.into(),
            set_by,
        }
    }

    /// The key written on the line holding `span` (for serde's messages,
    /// which do not name the field).
    fn key_at(&self, span: Range<usize>) -> String {
        let start = self.text[..span.start.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next().unwrap_or("");
        match line.split_once('=') {
            Some((k, _)) => k.trim().to_owned(),
            None => line.trim().to_owned(),
        }
    }
}

impl Scenario {
    /// Read and check the scenario in `path`, with `sets` applied.
    pub fn load(path: &Path, sets: &[Override]) -> Result<Scenario, ScenarioError> {
        Scenario::parse(&path.display().to_string(), &Scenario::read(path)?, sets)
    }

    /// The text of the scenario file at `path`.
    pub fn read(path: &Path) -> Result<String, ScenarioError> {
        std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            field: "-".into(),
            message: format!("cannot read: {e}"),
            set_by: None,
        })
    }

    /// Check the scenario `text` (from `file`, for messages) with `sets`
    /// applied.
    pub fn parse(file: &str, text: &str, sets: &[Override]) -> Result<Scenario, ScenarioError> {
        let (text, lines) = if sets.is_empty() {
            (
                text.to_owned(),
                (1..=text.lines().count()).map(Ok).collect(),
            )
        } else {
            overrides::apply(file, text, sets)?
        };
        let loc = Locator {
            file,
            text: &text,
            lines,
        };
        let raw: RawScenario = toml::from_str(&text).map_err(|e| loc.toml_error(&e))?;
        Scenario::from_raw(raw, &loc)
    }

    fn from_raw(raw: RawScenario, loc: &Locator<'_>) -> Result<Scenario, ScenarioError> {
        let name = raw.name.get_ref().trim().to_owned();
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !name.starts_with('.');
        if !valid_name {
            return Err(loc.err(
                raw.name.span(),
                "name",
                "must be non-empty letters, digits, '-', '_' or '.' (it names the output directory)",
            ));
        }
        let duration_s = *raw.duration_s.get_ref();
        if !(duration_s.is_finite() && duration_s > 0.0) {
            return Err(loc.err(
                raw.duration_s.span(),
                "duration_s",
                "must be a positive number",
            ));
        }
        let seed = match raw.seed {
            None => 1,
            Some(s) => u64::try_from(*s.get_ref())
                .map_err(|_| loc.err(s.span(), "seed", "must be a non-negative integer"))?,
        };

        let mut kinds: HashMap<String, NodeKind> = HashMap::new();
        let mut nodes = Vec::new();
        for (i, n) in raw.node.iter().enumerate() {
            let n = n.get_ref();
            let f = |k: &str| format!("node[{i}].{k}");
            let id = n.id.get_ref().trim().to_owned();
            if id.is_empty() {
                return Err(loc.err(n.id.span(), &f("id"), "must not be empty"));
            }
            let kind = match n.kind.get_ref().as_str() {
                "host" => NodeKind::Host,
                "router" => NodeKind::Router,
                other => {
                    return Err(loc.err(
                        n.kind.span(),
                        &f("kind"),
                        format!("unknown node kind {other:?} (expected \"host\" or \"router\")"),
                    ));
                }
            };
            if kinds.insert(id.clone(), kind).is_some() {
                return Err(loc.err(n.id.span(), &f("id"), format!("duplicate node id {id:?}")));
            }
            nodes.push(NodeDecl { id, kind });
        }
        let node_ref = |s: &Spanned<String>, field: &str| -> Result<String, ScenarioError> {
            let id = s.get_ref().trim();
            if kinds.contains_key(id) {
                Ok(id.to_owned())
            } else {
                Err(loc.err(s.span(), field, format!("unknown node {id:?}")))
            }
        };

        // Directed pairs that exist, to check link events and duplicates.
        let mut directed: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut links = Vec::new();
        for (i, l) in raw.link.iter().enumerate() {
            let l = l.get_ref();
            let f = |k: &str| format!("link[{i}].{k}");
            let from = node_ref(&l.from, &f("from"))?;
            let to = node_ref(&l.to, &f("to"))?;
            if from == to {
                return Err(loc.err(
                    l.to.span(),
                    &f("to"),
                    format!("link from {from:?} to itself"),
                ));
            }
            let cap = *l.capacity_kbps.get_ref();
            if !(cap.is_finite() && cap > 0.0) {
                return Err(loc.err(
                    l.capacity_kbps.span(),
                    &f("capacity_kbps"),
                    "must be a positive number",
                ));
            }
            let delay_ms = match &l.delay_ms {
                None => 0.0,
                Some(d) if d.get_ref().is_finite() && *d.get_ref() >= 0.0 => *d.get_ref(),
                Some(d) => {
                    return Err(loc.err(d.span(), &f("delay_ms"), "must be a number >= 0"));
                }
            };
            let loss = match &l.loss {
                None => 0.0,
                Some(p) if (0.0..=1.0).contains(p.get_ref()) => *p.get_ref(),
                Some(p) => return Err(loc.err(p.span(), &f("loss"), "must be within 0..=1")),
            };
            let qp = match &l.queue_packets {
                None => None,
                Some(q) => Some(u32::try_from(*q.get_ref()).map_err(|_| {
                    loc.err(q.span(), &f("queue_packets"), "must be an integer >= 0")
                })?),
            };
            let qb = match &l.queue_bytes {
                None => None,
                Some(q) => Some(u64::try_from(*q.get_ref()).map_err(|_| {
                    loc.err(q.span(), &f("queue_bytes"), "must be an integer >= 0")
                })?),
            };
            let queue = match (qp, qb) {
                (None, None) => QueueLimit {
                    packets: Some(DEFAULT_QUEUE_PACKETS),
                    bytes: None,
                },
                (packets, bytes) => QueueLimit { packets, bytes },
            };
            let red = match &l.red {
                None => None,
                Some(r) => red_params(r, loc, &f("red"))?,
            };
            let both_ways = l.both_ways.unwrap_or(true);
            let mut pairs = vec![(from.clone(), to.clone())];
            if both_ways {
                pairs.push((to.clone(), from.clone()));
            }
            for p in pairs {
                if let Some(j) = directed.insert(p.clone(), i) {
                    return Err(loc.err(
                        l.to.span(),
                        &f("to"),
                        format!("link {} -> {} already declared by link[{j}]", p.0, p.1),
                    ));
                }
            }
            links.push(LinkDecl {
                from,
                to,
                params: LinkParams {
                    capacity: Rate::from_kbps_f64(cap),
                    delay: Duration::from_secs_f64(delay_ms / 1e3),
                    queue,
                    loss,
                    red,
                },
                both_ways,
            });
        }

        let mut events = Vec::new();
        let mut flow_ids: HashMap<String, usize> = HashMap::new();
        for (i, e) in raw.event.iter().enumerate() {
            events.extend(parse_event(
                i,
                e,
                duration_s,
                loc,
                &node_ref,
                &directed,
                &links,
                &mut flow_ids,
            )?);
        }

        let layered = match &raw.layered {
            None => None,
            Some(l) => {
                let cx = crate::layered::Context {
                    loc,
                    node_ref: &node_ref,
                    duration_s,
                    directed: &directed,
                    flow_ids: &flow_ids,
                };
                Some(crate::layered::check(l, &cx, &mut links)?)
            }
        };

        let mut windows = Vec::new();
        for (i, w) in raw.report.iter().flat_map(|r| r.window.iter()).enumerate() {
            let w = w.get_ref();
            let f = |k: &str| format!("report.window[{i}].{k}");
            let whole = |s: &Spanned<f64>, k: &str| -> Result<u64, ScenarioError> {
                let v = *s.get_ref();
                if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= duration_s.ceil() {
                    Ok(v as u64)
                } else {
                    Err(loc.err(
                        s.span(),
                        &f(k),
                        format!(
                            "must be a whole number of seconds within the run (0..={duration_s})"
                        ),
                    ))
                }
            };
            let (a, b) = (whole(&w.from_s, "from_s")?, whole(&w.to_s, "to_s")?);
            if b <= a {
                return Err(loc.err(w.to_s.span(), &f("to_s"), "must be greater than from_s"));
            }
            windows.push((a, b));
        }

        let conference = match &raw.conference {
            Some(c) => Some(crate::conference::check(c, loc, &node_ref)?),
            None => None,
        };

        Ok(Scenario {
            conference,
            layered,
            name,
            description: raw.description,
            duration_s,
            seed,
            nodes,
            links,
            events,
            windows,
        })
    }
}

/// A link's `red` field: `None` for drop-tail.
fn red_params(
    r: &Spanned<RawRed>,
    loc: &Locator<'_>,
    field: &str,
) -> Result<Option<Red>, ScenarioError> {
    let d = Red::default();
    let red = match r.get_ref() {
        RawRed::On(false) => return Ok(None),
        RawRed::On(true) => d,
        RawRed::Params(p) => Red {
            min_th: p.min_th.unwrap_or(d.min_th),
            max_th: p.max_th.unwrap_or(d.max_th),
            max_p: p.max_p.unwrap_or(d.max_p),
            w_q: p.w_q.unwrap_or(d.w_q),
        },
    };
    if red.is_valid() {
        Ok(Some(red))
    } else {
        Err(loc.err(
            r.span(),
            field,
            "needs 0 <= min_th < max_th, 0 < max_p <= 1 and 0 < w_q <= 1",
        ))
    }
}

/// Resolves a node name field to a declared node id.
pub(crate) type NodeRef<'a> = dyn Fn(&Spanned<String>, &str) -> Result<String, ScenarioError> + 'a;

/// Fields every flow event takes.
const FLOW_FIELDS: &[&str] = &["id", "from", "to", "packet_bytes", "until_s"];

/// The parts every flow event (`cbr`, `onoff`, `tcp`, `tfrc`) shares.
struct FlowCommon {
    from: String,
    to: String,
    packet_bytes: u32,
    until_s: f64,
    /// One id per flow the event starts (several with `count`).
    ids: Vec<String>,
    /// Start of each flow, seconds.
    starts: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn parse_event(
    i: usize,
    e: &Spanned<RawEvent>,
    duration_s: f64,
    loc: &Locator<'_>,
    node_ref: &NodeRef<'_>,
    directed: &BTreeMap<(String, String), usize>,
    links: &[LinkDecl],
    flow_ids: &mut HashMap<String, usize>,
) -> Result<Vec<EventDecl>, ScenarioError> {
    let ev = e.get_ref();
    let f = |k: &str| format!("event[{i}].{k}");
    let at_s = *ev.at_s.get_ref();
    if !(at_s.is_finite() && (0.0..duration_s).contains(&at_s)) {
        return Err(loc.err(
            ev.at_s.span(),
            &f("at_s"),
            format!("event outside the run: at_s must be within [0, {duration_s})"),
        ));
    }
    let kind = ev.kind.get_ref().as_str();
    // Which optional fields each kind takes.
    let allowed: Vec<&str> = match kind {
        "cbr" => [FLOW_FIELDS, &["rate_kbps", "spacing"]].concat(),
        "onoff" => [
            FLOW_FIELDS,
            &[
                "rate_kbps",
                "on_ms",
                "off_ms",
                "distribution",
                "pareto_shape",
            ],
        ]
        .concat(),
        "tcp" => [FLOW_FIELDS, &["count", "start_gap_ms"]].concat(),
        "tfrc" => [FLOW_FIELDS, &["rate_kbps", "count", "start_gap_ms"]].concat(),
        "drop_every" => vec!["from", "to", "every"],
        "link_down" | "link_up" => vec!["from", "to"],
        "capacity" => vec!["from", "to", "capacity_kbps"],
        "join" | "leave" => vec!["node"],
        other => {
            return Err(loc.err(
                ev.kind.span(),
                &f("kind"),
                format!(
                    "unknown event kind {other:?} (expected cbr, onoff, tcp, tfrc, drop_every, \
                     link_down, link_up, capacity, join or leave)"
                ),
            ));
        }
    };
    let present: [(&str, Option<Range<usize>>); 16] = [
        ("id", ev.id.as_ref().map(Spanned::span)),
        ("from", ev.from.as_ref().map(Spanned::span)),
        ("to", ev.to.as_ref().map(Spanned::span)),
        ("node", ev.node.as_ref().map(Spanned::span)),
        ("rate_kbps", ev.rate_kbps.as_ref().map(Spanned::span)),
        ("packet_bytes", ev.packet_bytes.as_ref().map(Spanned::span)),
        ("until_s", ev.until_s.as_ref().map(Spanned::span)),
        (
            "capacity_kbps",
            ev.capacity_kbps.as_ref().map(Spanned::span),
        ),
        ("spacing", ev.spacing.as_ref().map(Spanned::span)),
        ("on_ms", ev.on_ms.as_ref().map(Spanned::span)),
        ("off_ms", ev.off_ms.as_ref().map(Spanned::span)),
        ("distribution", ev.distribution.as_ref().map(Spanned::span)),
        ("pareto_shape", ev.pareto_shape.as_ref().map(Spanned::span)),
        ("count", ev.count.as_ref().map(Spanned::span)),
        ("start_gap_ms", ev.start_gap_ms.as_ref().map(Spanned::span)),
        ("every", ev.every.as_ref().map(Spanned::span)),
    ];
    for (name, span) in &present {
        if let Some(span) = span
            && !allowed.contains(name)
        {
            return Err(loc.err(
                span.clone(),
                &f(name),
                format!("field {name:?} does not apply to events of kind {kind:?}"),
            ));
        }
    }
    let missing = |k: &str| {
        loc.err(
            e.span(),
            &f(k),
            format!("missing field {k:?} for kind {kind:?}"),
        )
    };
    let required = |v: &Option<Spanned<String>>, k: &str| -> Result<String, ScenarioError> {
        match v {
            Some(s) => node_ref(s, &f(k)),
            None => Err(missing(k)),
        }
    };
    let positive_opt = |v: &Option<Spanned<f64>>, k: &str| -> Result<Option<f64>, ScenarioError> {
        match v {
            Some(s) if s.get_ref().is_finite() && *s.get_ref() > 0.0 => Ok(Some(*s.get_ref())),
            Some(s) => Err(loc.err(s.span(), &f(k), "must be a positive number")),
            None => Ok(None),
        }
    };
    let positive = |v: &Option<Spanned<f64>>, k: &str| -> Result<f64, ScenarioError> {
        positive_opt(v, k)?.ok_or_else(|| missing(k))
    };
    let to_span = || ev.to.as_ref().map_or(e.span(), Spanned::span);
    // The declared link an event names (its index in `Scenario::links`).
    let link_ends = |from: &str, to: &str| -> Result<usize, ScenarioError> {
        directed
            .get(&(from.to_owned(), to.to_owned()))
            .copied()
            .ok_or_else(|| loc.err(to_span(), &f("to"), format!("no link {from} -> {to}")))
    };
    let mut flow_common = |min_bytes: usize| -> Result<FlowCommon, ScenarioError> {
        let from = required(&ev.from, "from")?;
        let to = required(&ev.to, "to")?;
        if from == to {
            return Err(loc.err(to_span(), &f("to"), "traffic from a node to itself"));
        }
        let packet_bytes = match &ev.packet_bytes {
            None => 1000,
            Some(p) => u32::try_from(*p.get_ref())
                .ok()
                .filter(|b| (min_bytes as u32..=MAX_PACKET_BYTES).contains(b))
                .ok_or_else(|| {
                    loc.err(
                        p.span(),
                        &f("packet_bytes"),
                        format!("must be within {min_bytes}..={MAX_PACKET_BYTES}"),
                    )
                })?,
        };
        let until_s = match &ev.until_s {
            None => duration_s,
            Some(u) => {
                let v = *u.get_ref();
                if !(v.is_finite() && v > at_s && v <= duration_s) {
                    return Err(loc.err(
                        u.span(),
                        &f("until_s"),
                        format!("must be after at_s and within the run (<= {duration_s})"),
                    ));
                }
                v
            }
        };
        let count = match &ev.count {
            None => 1,
            Some(c) => usize::try_from(*c.get_ref())
                .ok()
                .filter(|&c| (1..=10_000).contains(&c))
                .ok_or_else(|| loc.err(c.span(), &f("count"), "must be within 1..=10000"))?,
        };
        let gap_s = match &ev.start_gap_ms {
            None => 0.0,
            Some(g) if g.get_ref().is_finite() && *g.get_ref() >= 0.0 => *g.get_ref() / 1e3,
            Some(g) => {
                return Err(loc.err(g.span(), &f("start_gap_ms"), "must be a number >= 0"));
            }
        };
        let starts: Vec<f64> = (0..count).map(|k| at_s + k as f64 * gap_s).collect();
        if starts.last().is_some_and(|&t| t >= until_s) {
            let span = ev.start_gap_ms.as_ref().map_or(e.span(), Spanned::span);
            return Err(loc.err(
                span,
                &f("start_gap_ms"),
                format!("the last of the {count} flows would start after until_s ({until_s})"),
            ));
        }
        let base = match &ev.id {
            Some(s) if !s.get_ref().trim().is_empty() => Some(s.get_ref().trim().to_owned()),
            Some(s) => return Err(loc.err(s.span(), &f("id"), "must not be empty")),
            None => None,
        };
        let ids: Vec<String> = match (base, count) {
            (Some(id), 1) => vec![id],
            (Some(id), n) => (1..=n).map(|k| format!("{id}#{k}")).collect(),
            (None, n) => {
                // `KIND:FROM->TO`, then `#2`, `#3`... on repeats.
                let base = format!("{kind}:{from}->{to}");
                let mut ids = Vec::with_capacity(n);
                let mut k = 1;
                while ids.len() < n {
                    let id = if k == 1 {
                        base.clone()
                    } else {
                        format!("{base}#{k}")
                    };
                    if !flow_ids.contains_key(&id) {
                        ids.push(id);
                    }
                    k += 1;
                }
                ids
            }
        };
        for id in &ids {
            if let Some(j) = flow_ids.insert(id.clone(), i) {
                let span = ev.id.as_ref().map_or(e.span(), Spanned::span);
                return Err(loc.err(
                    span,
                    &f("id"),
                    format!("flow id {id:?} already used by event[{j}]"),
                ));
            }
        }
        Ok(FlowCommon {
            from,
            to,
            packet_bytes,
            until_s,
            ids,
            starts,
        })
    };
    let one = |kind| Ok(vec![EventDecl { at_s, kind }]);
    match kind {
        "cbr" | "onoff" => {
            let c = flow_common(TRAFFIC_HEADER_LEN)?;
            let rate = positive(&ev.rate_kbps, "rate_kbps")?;
            let pattern = if kind == "cbr" {
                match ev
                    .spacing
                    .as_ref()
                    .map(|s| (s.get_ref().as_str(), s.span()))
                {
                    None | Some(("periodic", _)) => Pattern::Cbr,
                    Some(("poisson", _)) => Pattern::Poisson,
                    Some((other, span)) => {
                        return Err(loc.err(
                            span,
                            &f("spacing"),
                            format!("unknown spacing {other:?} (expected periodic or poisson)"),
                        ));
                    }
                }
            } else {
                let on = positive(&ev.on_ms, "on_ms")?;
                let off = positive(&ev.off_ms, "off_ms")?;
                let distribution = match ev
                    .distribution
                    .as_ref()
                    .map(|s| (s.get_ref().as_str(), s.span()))
                {
                    None | Some(("exponential", _)) => PeriodDistribution::Exponential,
                    Some(("pareto", _)) => {
                        let shape = match &ev.pareto_shape {
                            None => 1.5,
                            Some(s) if s.get_ref().is_finite() && *s.get_ref() > 1.0 => {
                                *s.get_ref()
                            }
                            Some(s) => {
                                return Err(loc.err(
                                    s.span(),
                                    &f("pareto_shape"),
                                    "must be greater than 1 (the mean must exist)",
                                ));
                            }
                        };
                        PeriodDistribution::Pareto { shape }
                    }
                    Some((other, span)) => {
                        return Err(loc.err(
                            span,
                            &f("distribution"),
                            format!(
                                "unknown distribution {other:?} (expected exponential or pareto)"
                            ),
                        ));
                    }
                };
                if ev.pareto_shape.is_some()
                    && !matches!(distribution, PeriodDistribution::Pareto { .. })
                {
                    let s = ev.pareto_shape.as_ref().map_or(e.span(), Spanned::span);
                    return Err(loc.err(
                        s,
                        &f("pareto_shape"),
                        "applies only with distribution = \"pareto\"",
                    ));
                }
                Pattern::OnOff {
                    mean_on: Duration::from_secs_f64(on / 1e3),
                    mean_off: Duration::from_secs_f64(off / 1e3),
                    distribution,
                }
            };
            let [id] = <[String; 1]>::try_from(c.ids).expect("one flow without count");
            one(EventKind::Traffic {
                id,
                from: c.from,
                to: c.to,
                rate: Rate::from_kbps_f64(rate),
                packet_bytes: c.packet_bytes,
                until_s: c.until_s,
                pattern,
            })
        }
        "tcp" | "tfrc" => {
            let tcp = kind == "tcp";
            let min = if tcp {
                TCP_SEGMENT_HEADER_LEN
            } else {
                TFRC_DATA_HEADER_LEN
            };
            let c = flow_common(min)?;
            let rate = positive_opt(&ev.rate_kbps, "rate_kbps")?.map(Rate::from_kbps_f64);
            Ok(c.ids
                .into_iter()
                .zip(c.starts)
                .map(|(id, at_s)| {
                    let (from, to, until_s) = (c.from.clone(), c.to.clone(), c.until_s);
                    let kind = if tcp {
                        EventKind::Tcp {
                            id,
                            from,
                            to,
                            segment_bytes: c.packet_bytes,
                            until_s,
                        }
                    } else {
                        EventKind::Tfrc {
                            id,
                            from,
                            to,
                            packet_bytes: c.packet_bytes,
                            rate,
                            until_s,
                        }
                    };
                    EventDecl { at_s, kind }
                })
                .collect())
        }
        "drop_every" => {
            let from = required(&ev.from, "from")?;
            let to = required(&ev.to, "to")?;
            let link = link_ends(&from, &to)?;
            let every = match &ev.every {
                None => return Err(missing("every")),
                Some(k) => match *k.get_ref() {
                    0 => None,
                    k2 @ 2..=0xFFFF_FFFF => Some(k2 as u32),
                    _ => {
                        return Err(loc.err(
                            k.span(),
                            &f("every"),
                            "must be 0 (stop dropping) or an integer >= 2",
                        ));
                    }
                },
            };
            let reverse = links[link].from != from;
            one(EventKind::DropEvery {
                link,
                reverse,
                every,
            })
        }
        "link_down" | "link_up" | "capacity" => {
            let from = required(&ev.from, "from")?;
            let to = required(&ev.to, "to")?;
            let link = link_ends(&from, &to)?;
            one(match kind {
                "link_down" => EventKind::LinkDown { link },
                "link_up" => EventKind::LinkUp { link },
                _ => EventKind::Capacity {
                    rate: Rate::from_kbps_f64(positive(&ev.capacity_kbps, "capacity_kbps")?),
                    link,
                },
            })
        }
        _ => {
            let node = required(&ev.node, "node")?;
            one(if kind == "join" {
                EventKind::Join { node }
            } else {
                EventKind::Leave { node }
            })
        }
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
