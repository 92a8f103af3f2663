//! `meshcast node --config NODE.toml`: one participant of a real
//! deployment, over real UDP (`meshcast-net`).
//!
//! The configuration names the participant this process is, where it
//! listens, the conference (the same `[conference]` keys as a scenario's:
//! docs/scenario-format.md) and every participant's socket address
//! (`[peers]`). docs/node.md has the format. The node runs until its
//! `duration_s` is over or it gets SIGINT or SIGTERM, then leaves the
//! conference (a Bye to every peer) and writes what it saw: `summary.json`
//! and `series.csv` with the simulator's per-flow figures, from this
//! node's side (its own session's send rate; every other session's rate,
//! delay and loss as received here). With `metrics_listen` it also serves
//! its running totals in Prometheus text format over HTTP.

use crate::conference::{CONFERENCE_PORT, Conference, RawConference, check};
use crate::report::{FlowSummary, SCHEMA_VERSION, flow_metrics, measured_flow};
use crate::scenario::{Locator, ScenarioError};
use anyhow::Context as _;
use meshcast_core::metrics::FlowRecorder;
use meshcast_core::{Addr, DropCause, Event, FlowId, NodeId, Time};
use meshcast_net::{AddrBook, MediaPorts, Node, TypeOutput};
use meshcast_proto::celerity::{CelerityConfig, CelerityPeer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toml::Spanned;

/// A checked node configuration.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// This participant's name.
    pub id: String,
    /// Its index in the conference's participants.
    pub me: usize,
    /// Where it listens.
    pub listen: SocketAddr,
    /// How long it stays (`None`: until SIGINT or SIGTERM).
    pub duration: Option<Duration>,
    /// The instant protocol time counts from, shared by every node (the
    /// delay bound compares the source's clock with the receiver's).
    pub epoch: Epoch,
    /// The conference.
    pub conference: Conference,
    /// Every participant's socket address, in participant order.
    pub peers: Vec<SocketAddr>,
    /// Where to serve metrics in Prometheus text format over HTTP, if
    /// anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Whether the socket may send GSO batches (default true).
    pub gso: bool,
    /// Whether to keep every media packet sent or received in time, and
    /// every send's byte counts, for `packets.csv` (default false).
    pub record_packets: bool,
    /// Real media over local UDP, if configured (`[media]`).
    pub media: Option<MediaConfig>,
}

/// Where a node's protocol time counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epoch {
    /// An instant of the wall clock (`epoch_unix_s`), which nodes on
    /// different machines share through their time daemons.
    Wall(SystemTime),
    /// An instant of this machine's monotonic clock, in nanoseconds since
    /// boot (`epoch_monotonic_ns`), which the nodes of one machine share
    /// and which setting the wall clock does not move: `meshcast emu`
    /// gives its nodes this one.
    Monotonic(u64),
}

/// `[media]`: the application's media (RTP, say) over local UDP ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaConfig {
    /// Where this participant's own media arrives (from its encoder).
    pub input: Option<SocketAddr>,
    /// Where this participant's encoder sends its own RTCP (sender
    /// reports), if not to `input` (`input_rtcp`): carried to the
    /// receivers with its media.
    pub input_rtcp: Option<SocketAddr>,
    /// Where each other participant's media goes: (participant index,
    /// address).
    pub outputs: Vec<(usize, SocketAddr)>,
    /// Where each other participant's RTCP goes, for the receiving
    /// applications with an RTCP port of their own (`output_rtcp`); the
    /// others get it with the RTP.
    pub rtcp_outputs: Vec<(usize, SocketAddr)>,
    /// Where a participant's streams of one RTP payload type go instead
    /// (`output_types`; the flow is the participant's index).
    pub type_outputs: Vec<TypeOutput>,
    /// The encoder's RTCP address (`encoder_rtcp`): keyframe requests for
    /// this participant's session go there as RTCP PLI, and its offered
    /// rate as REMB.
    pub encoder_rtcp: Option<SocketAddr>,
    /// Where the node also takes the receiving applications' RTCP
    /// (`rtcp_listen`), besides the address it sends their media from.
    pub rtcp_listen: Option<SocketAddr>,
    /// Whether the offered rate goes to `encoder_rtcp` too, as RTCP REMB
    /// (`rate_feedback`, default true).
    pub rate_feedback: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMedia {
    input: Option<Spanned<String>>,
    input_rtcp: Option<Spanned<String>>,
    output: Option<BTreeMap<String, Spanned<String>>>,
    output_rtcp: Option<BTreeMap<String, Spanned<String>>>,
    output_types: Option<BTreeMap<String, BTreeMap<String, RawTypeOutput>>>,
    encoder_rtcp: Option<Spanned<String>>,
    rtcp_listen: Option<Spanned<String>>,
    rate_feedback: Option<Spanned<bool>>,
}

/// `[media.output_types.P]`'s entries: `PT = { rtp = "...", rtcp = "..." }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTypeOutput {
    rtp: Spanned<String>,
    rtcp: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    id: Spanned<String>,
    listen: Option<Spanned<String>>,
    duration_s: Option<Spanned<f64>>,
    epoch_unix_s: Option<Spanned<f64>>,
    epoch_monotonic_ns: Option<Spanned<i64>>,
    metrics_listen: Option<Spanned<String>>,
    gso: Option<bool>,
    record_packets: Option<bool>,
    media: Option<RawMedia>,
    conference: RawConference,
    peers: Spanned<BTreeMap<String, Spanned<String>>>,
}

fn socket_addr(
    text: &Spanned<String>,
    field: &str,
    loc: &Locator<'_>,
) -> Result<SocketAddr, ScenarioError> {
    text.get_ref()
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            loc.err(
                text.span(),
                field,
                format!("{:?} is not a host:port address", text.get_ref()),
            )
        })
}

/// Whether `a` and `b` are one local UDP port (an unspecified address
/// takes the port on every address).
fn same_port(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

impl NodeConfig {
    /// Read and check the configuration in `path`.
    pub fn load(path: &Path) -> Result<NodeConfig, ScenarioError> {
        let file = path.display().to_string();
        let text = crate::scenario::Scenario::read(path)?;
        NodeConfig::parse(&file, &text)
    }

    /// Check the configuration `text` (from `file`, for messages).
    pub fn parse(file: &str, text: &str) -> Result<NodeConfig, ScenarioError> {
        let loc = Locator::plain(file, text);
        let raw: RawNode = toml::from_str(text).map_err(|e| loc.toml_error(&e))?;
        let peers = raw.peers.get_ref();
        let node_ref = |name: &Spanned<String>, field: &str| -> Result<String, ScenarioError> {
            let n = name.get_ref().trim();
            if peers.contains_key(n) {
                Ok(n.to_owned())
            } else {
                Err(loc.err(
                    name.span(),
                    field,
                    format!("{n:?} has no address in [peers]"),
                ))
            }
        };
        let conference = check(&raw.conference, &loc, &node_ref)?;
        if let Some(span) = raw.conference.video_fps_span() {
            return Err(loc.err(
                span,
                "conference.video_fps",
                "simulates encoders in the simulator only: a node's media are its [media]",
            ));
        }
        if let Some(span) = raw.conference.start_spread_span() {
            return Err(loc.err(
                span,
                "conference.start_spread_ms",
                "spreads the members' starts in the simulator only: a node starts when it is started",
            ));
        }
        for name in peers.keys() {
            if !conference.participants.contains(name) {
                return Err(loc.err(
                    raw.peers.span(),
                    &format!("peers.{name}"),
                    format!("{name:?} is not among conference.participants"),
                ));
            }
        }
        let id = raw.id.get_ref().trim().to_owned();
        let me = conference
            .participants
            .iter()
            .position(|p| *p == id)
            .ok_or_else(|| {
                loc.err(
                    raw.id.span(),
                    "id",
                    format!("{id:?} is not among conference.participants"),
                )
            })?;
        let mut addrs = Vec::new();
        for p in &conference.participants {
            let text = &peers[p];
            let a = socket_addr(text, &format!("peers.{p}"), &loc)?;
            if addrs.contains(&a) {
                return Err(loc.err(
                    text.span(),
                    &format!("peers.{p}"),
                    format!("{a} is listed twice"),
                ));
            }
            addrs.push(a);
        }
        let listen = match &raw.listen {
            Some(l) => socket_addr(l, "listen", &loc)?,
            None => addrs[me],
        };
        let duration = match &raw.duration_s {
            None => None,
            Some(d) if d.get_ref().is_finite() && *d.get_ref() > 0.0 => {
                Some(Duration::from_secs_f64(*d.get_ref()))
            }
            Some(d) => return Err(loc.err(d.span(), "duration_s", "must be a positive number")),
        };
        let epoch = match (&raw.epoch_unix_s, &raw.epoch_monotonic_ns) {
            (Some(_), Some(m)) => {
                return Err(loc.err(
                    m.span(),
                    "epoch_monotonic_ns",
                    "give epoch_unix_s or epoch_monotonic_ns, not both",
                ));
            }
            (None, None) => Epoch::Wall(UNIX_EPOCH),
            (Some(e), None) if e.get_ref().is_finite() && *e.get_ref() >= 0.0 => {
                Epoch::Wall(UNIX_EPOCH + Duration::from_secs_f64(*e.get_ref()))
            }
            (Some(e), None) => {
                return Err(loc.err(e.span(), "epoch_unix_s", "must be a number >= 0"));
            }
            (None, Some(m)) => match u64::try_from(*m.get_ref()) {
                Ok(ns) => Epoch::Monotonic(ns),
                Err(_) => {
                    return Err(loc.err(m.span(), "epoch_monotonic_ns", "must be an integer >= 0"));
                }
            },
        };
        let metrics_listen = match &raw.metrics_listen {
            Some(m) => Some(socket_addr(m, "metrics_listen", &loc)?),
            None => None,
        };
        let media = match &raw.media {
            None => None,
            Some(m) => {
                let input = match &m.input {
                    Some(i) => Some(socket_addr(i, "media.input", &loc)?),
                    None => None,
                };
                let mut outputs = Vec::new();
                for (name, addr) in m.output.iter().flatten() {
                    let field = format!("media.output.{name}");
                    let Some(p) = conference.participants.iter().position(|p| p == name) else {
                        return Err(loc.err(
                            addr.span(),
                            &field,
                            format!("{name:?} is not among conference.participants"),
                        ));
                    };
                    if p == me {
                        return Err(loc.err(
                            addr.span(),
                            &field,
                            "a node does not receive its own session",
                        ));
                    }
                    outputs.push((p, socket_addr(addr, &field, &loc)?));
                }
                // A port for the encoder's RTCP: needs the input, and may
                // not be it.
                let beside_input = |text: &Option<Spanned<String>>,
                                    field: &str,
                                    what: &str,
                                    same: &str|
                 -> Result<Option<SocketAddr>, ScenarioError> {
                    let Some(a) = text else {
                        return Ok(None);
                    };
                    let Some(i) = input else {
                        return Err(loc.err(a.span(), field, format!("{what}: needs media.input")));
                    };
                    let at = socket_addr(a, field, &loc)?;
                    if same_port(i, at) {
                        return Err(loc.err(a.span(), field, format!("is media.input: {same}")));
                    }
                    Ok(Some(at))
                };
                let input_rtcp = beside_input(
                    &m.input_rtcp,
                    "media.input_rtcp",
                    "takes the encoder's RTCP",
                    "RTCP multiplexed with the RTP needs no port of its own",
                )?;
                // A participant this node has a media output for.
                let received = |name: &str| {
                    let p = conference.participants.iter().position(|p| p == name)?;
                    outputs.iter().any(|o| o.0 == p).then_some(p)
                };
                let mut rtcp_outputs = Vec::new();
                for (name, addr) in m.output_rtcp.iter().flatten() {
                    let field = format!("media.output_rtcp.{name}");
                    let Some(p) = received(name) else {
                        return Err(loc.err(
                            addr.span(),
                            &field,
                            format!("{name:?} has no media.output: its RTCP goes with its RTP"),
                        ));
                    };
                    rtcp_outputs.push((p, socket_addr(addr, &field, &loc)?));
                }
                let mut type_outputs = Vec::new();
                for (name, types) in m.output_types.iter().flatten() {
                    for (pt, out) in types {
                        let field = format!("media.output_types.{name}.{pt}");
                        let Some(p) = received(name) else {
                            return Err(loc.err(
                                out.rtp.span(),
                                &field,
                                format!("{name:?} has no media.output: its other streams go there"),
                            ));
                        };
                        let Some(pt) = pt.parse::<u8>().ok().filter(|&t| t < 128) else {
                            return Err(loc.err(
                                out.rtp.span(),
                                &field,
                                format!("{pt:?} is not an RTP payload type (0-127)"),
                            ));
                        };
                        // With the marker bit set, an RTP packet of these
                        // types reads as RTCP (RFC 5761 §4).
                        if (64..96).contains(&pt) {
                            return Err(loc.err(
                                out.rtp.span(),
                                &field,
                                "payload types 64-95 can pass for RTCP (RFC 5761): use 96-127 or a static type",
                            ));
                        }
                        let rtp = socket_addr(&out.rtp, &format!("{field}.rtp"), &loc)?;
                        let rtcp = match &out.rtcp {
                            Some(a) => Some(socket_addr(a, &format!("{field}.rtcp"), &loc)?),
                            None => None,
                        };
                        type_outputs.push(TypeOutput {
                            flow: FlowId(p as u32),
                            payload_type: pt,
                            rtp,
                            rtcp,
                        });
                    }
                }
                // The node's own input would take its requests as media and
                // send them to the receivers.
                let encoder_rtcp = beside_input(
                    &m.encoder_rtcp,
                    "media.encoder_rtcp",
                    "asks this participant's encoder for keyframes",
                    "the encoder's RTCP port must be its own",
                )?;
                // The node would send its keyframe requests to itself and
                // carry them to the receivers as the encoder's reports.
                if let (Some(a), Some(at), Some(to)) = (&m.input_rtcp, input_rtcp, encoder_rtcp)
                    && same_port(at, to)
                {
                    return Err(loc.err(
                        a.span(),
                        "media.input_rtcp",
                        "is media.encoder_rtcp: the node's RTCP port and the encoder's must differ",
                    ));
                }
                let rtcp_listen = match &m.rtcp_listen {
                    Some(a) if outputs.is_empty() => {
                        return Err(loc.err(
                            a.span(),
                            "media.rtcp_listen",
                            "takes the receiving applications' RTCP: needs media.output",
                        ));
                    }
                    Some(a) => Some(socket_addr(a, "media.rtcp_listen", &loc)?),
                    None => None,
                };
                if let Some(f) = &m.rate_feedback
                    && encoder_rtcp.is_none()
                {
                    return Err(loc.err(
                        f.span(),
                        "media.rate_feedback",
                        "tells the encoder its rate at media.encoder_rtcp: needs media.encoder_rtcp",
                    ));
                }
                Some(MediaConfig {
                    input,
                    input_rtcp,
                    outputs,
                    rtcp_outputs,
                    type_outputs,
                    encoder_rtcp,
                    rtcp_listen,
                    rate_feedback: m.rate_feedback.as_ref().is_none_or(|f| *f.get_ref()),
                })
            }
        };
        Ok(NodeConfig {
            id,
            me,
            listen,
            duration,
            epoch,
            conference,
            peers: addrs,
            metrics_listen,
            gso: raw.gso.unwrap_or(true),
            record_packets: raw.record_packets.unwrap_or(false),
            media,
        })
    }
}

/// What a node writes as `summary.json`.
#[derive(Serialize, Debug, Clone)]
pub struct NodeSummary {
    /// Version of the schema (the same numbering as a run's).
    pub schema_version: u32,
    /// The participant.
    pub node: String,
    /// Seconds it ran.
    pub duration_s: f64,
    /// Every session, from this node's side: its own with its send rate,
    /// the others with what arrived here (`receivers` is this node).
    pub flows: Vec<FlowSummary>,
    /// What its socket did.
    pub net: NetSummary,
    /// What its peer counted.
    pub peer: PeerSummary,
    /// With `record_packets`: every media packet and send, in order.
    #[serde(skip)]
    pub packets: Vec<PacketRecord>,
}

/// One line of `packets.csv`; times are protocol time (nanoseconds from
/// the shared epoch), so the records of every node of a deployment line
/// up (`meshcast emu` merges them into one report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketRecord {
    /// This node sent a media packet of its session (`flow` is the
    /// session's participant index).
    Sent {
        /// When.
        t_ns: u64,
        /// The session.
        flow: u32,
        /// Media payload bytes.
        bytes: u32,
    },
    /// A media packet of session `flow` arrived here in time.
    Received {
        /// When.
        t_ns: u64,
        /// The session.
        flow: u32,
        /// Media payload bytes.
        bytes: u32,
        /// When its source sent it.
        sent_ns: u64,
    },
    /// This node dropped a data packet of session `flow` that its source
    /// sent at `sent_ns`, for `cause`.
    Dropped {
        /// When.
        t_ns: u64,
        /// The session.
        flow: u32,
        /// Why.
        cause: DropCause,
        /// When its source sent it.
        sent_ns: u64,
    },
    /// A send: bytes of media, data headers, control and coded repairs.
    Bytes {
        /// When.
        t_ns: u64,
        /// Media bytes.
        media: u32,
        /// Data header bytes.
        header: u32,
        /// Control bytes.
        control: u32,
        /// Repair bytes.
        repair: u32,
    },
}

impl PacketRecord {
    /// The CSV line (without newline): `sent,T,FLOW,BYTES`,
    /// `received,T,FLOW,BYTES,SENT`, `dropped,T,FLOW,CAUSE,SENT` (CAUSE
    /// `late`, `policed`, `link_down` or `stale`) or
    /// `bytes,T,MEDIA,HEADER,CONTROL,REPAIR`.
    pub fn to_csv(&self) -> String {
        match *self {
            PacketRecord::Sent { t_ns, flow, bytes } => format!("sent,{t_ns},{flow},{bytes}"),
            PacketRecord::Received {
                t_ns,
                flow,
                bytes,
                sent_ns,
            } => format!("received,{t_ns},{flow},{bytes},{sent_ns}"),
            PacketRecord::Dropped {
                t_ns,
                flow,
                cause,
                sent_ns,
            } => format!("dropped,{t_ns},{flow},{},{sent_ns}", cause.name()),
            PacketRecord::Bytes {
                t_ns,
                media,
                header,
                control,
                repair,
            } => format!("bytes,{t_ns},{media},{header},{control},{repair}"),
        }
    }

    /// The event this record keeps, with its time.
    pub fn event(&self) -> (Time, Event) {
        match *self {
            PacketRecord::Sent { t_ns, flow, bytes } => (
                Time::from_nanos(t_ns),
                Event::FlowSent {
                    flow: FlowId(flow),
                    payload_bytes: bytes,
                },
            ),
            PacketRecord::Received {
                t_ns,
                flow,
                bytes,
                sent_ns,
            } => (
                Time::from_nanos(t_ns),
                Event::FlowReceived {
                    flow: FlowId(flow),
                    payload_bytes: bytes,
                    sent_at: Time::from_nanos(sent_ns),
                },
            ),
            PacketRecord::Dropped {
                t_ns,
                flow,
                cause,
                sent_ns,
            } => (
                Time::from_nanos(t_ns),
                Event::FlowDropped {
                    flow: FlowId(flow),
                    sent_at: Time::from_nanos(sent_ns),
                    cause,
                },
            ),
            PacketRecord::Bytes {
                t_ns,
                media,
                header,
                control,
                repair,
            } => (
                Time::from_nanos(t_ns),
                Event::BytesSent {
                    media,
                    header,
                    control,
                    repair,
                },
            ),
        }
    }

    /// Parse a line written by [`PacketRecord::to_csv`].
    pub fn from_csv(line: &str) -> Option<PacketRecord> {
        let mut f = line.trim_end().split(',');
        let kind = f.next()?;
        let num = |field: Option<&str>| field?.parse::<u64>().ok();
        let small = |field: Option<&str>| u32::try_from(num(field)?).ok();
        // Every kind has the time and a number after it (a flow, or the
        // media bytes); the fields after those depend on the kind (they
        // are read in the order written).
        let t_ns = num(f.next())?;
        let a = small(f.next())?;
        let rec = match kind {
            "sent" => PacketRecord::Sent {
                t_ns,
                flow: a,
                bytes: small(f.next())?,
            },
            "received" => PacketRecord::Received {
                t_ns,
                flow: a,
                bytes: small(f.next())?,
                sent_ns: num(f.next())?,
            },
            "dropped" => PacketRecord::Dropped {
                t_ns,
                flow: a,
                cause: DropCause::from_name(f.next()?)?,
                sent_ns: num(f.next())?,
            },
            "bytes" => PacketRecord::Bytes {
                t_ns,
                media: a,
                header: small(f.next())?,
                control: small(f.next())?,
                repair: small(f.next())?,
            },
            _ => return None,
        };
        f.next().is_none().then_some(rec)
    }
}

/// [`meshcast_net::NetCounters`] and the timers' lateness for the summary.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct NetSummary {
    /// Datagrams received and handed to the peer.
    pub datagrams_in: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Sends that carried several datagrams (GSO).
    pub gso_sends: u64,
    /// Datagrams from addresses not in `[peers]`.
    pub unknown_source: u64,
    /// Datagrams the kernel refused to send.
    pub send_errors: u64,
    /// Media units that came in on the media input, and RTCP datagrams on
    /// `media.input_rtcp`.
    pub media_in: u64,
    /// Media units delivered to the media outputs.
    pub media_out: u64,
    /// Of those, RTCP units (a source's sender reports) delivered to an
    /// RTCP port: a `media.output_rtcp` address or a type's `rtcp` in
    /// `media.output_types`.
    pub rtcp_out: u64,
    /// Media units refused or dropped (too large; no output for the
    /// session; the kernel refused to send; not RTCP on
    /// `media.input_rtcp`).
    pub media_dropped: u64,
    /// RTCP datagrams from the receiving applications.
    pub rtcp_in: u64,
    /// Keyframe requests in them sent on to the sessions' sources.
    pub keyframe_asks: u64,
    /// Keyframe requests in them for a stream (SSRC) this node delivered
    /// none of, or for a source not present.
    pub keyframe_asks_dropped: u64,
    /// Keyframe requests (RTCP PLI) sent to this node's encoder.
    pub encoder_requests: u64,
    /// Keyframe requests for this node's encoder not sent: within the
    /// delay bound of the last one sent, with no stream of the encoder's
    /// heard in the last 10 s, or with no `media.encoder_rtcp`.
    pub encoder_requests_held: u64,
    /// The offered rate sent to this node's encoder (RTCP REMB).
    pub encoder_rate_reports: u64,
    /// RTCP datagrams from this node's encoder on `media.input_rtcp`,
    /// carried to the receivers.
    pub encoder_reports: u64,
    /// Reception reports (one receiver report per session and receiving
    /// application, of the report blocks in its RTCP) passed on to the
    /// sessions' sources.
    pub reception_reports: u64,
    /// Report blocks from the receiving applications not passed on: about
    /// a stream this node delivered none of, past the ten a report
    /// carries, or for a source not present.
    pub reception_blocks_dropped: u64,
    /// Report blocks that waited for their report's 0.5 s since the last
    /// one of the same session and application and were replaced by a
    /// newer block about the same stream (which went on).
    pub reception_blocks_replaced: u64,
    /// Receivers' reception reports sent to this node's encoder.
    pub encoder_reception_reports: u64,
    /// Receivers' reception reports for this node's encoder not sent
    /// (no `media.encoder_rtcp`).
    pub encoder_reception_reports_held: u64,
    /// Retransmission requests (the generic NACKs of one RTCP datagram of
    /// a receiving application, per session) passed on to the sessions'
    /// sources.
    pub retransmission_requests: u64,
    /// Entries of the receiving applications' generic NACKs not passed on:
    /// about a stream this node delivered none of, past 25 requests a
    /// second (8 at once) of the same session and application, past what a
    /// request holds, or for a source not present.
    pub nack_entries_dropped: u64,
    /// Receivers' retransmission requests sent to this node's encoder.
    pub encoder_retransmission_requests: u64,
    /// Receivers' retransmission requests for this node's encoder not sent
    /// (no `media.encoder_rtcp`).
    pub encoder_retransmission_requests_held: u64,
    /// How long after its due time the node handled a timer, median, 99th
    /// percentile and largest, ms (`null` with no timer): on an idle
    /// machine about 0.1 ms at the median and 0.25 ms at the 99th
    /// percentile; more is a node that waited for a CPU and held its
    /// packets meanwhile.
    pub timer_late_ms_p50: Option<f64>,
    /// See `timer_late_ms_p50`.
    pub timer_late_ms_p99: Option<f64>,
    /// See `timer_late_ms_p50`.
    pub timer_late_ms_max: Option<f64>,
}

/// The peer's counters ([`meshcast_proto::celerity::PeerCounters`]) and
/// its measure of its encoder's lag, for the summary.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct PeerSummary {
    /// Data packets dropped as older than the delay bound.
    pub late: u64,
    /// Packets a head dropped for want of link rate.
    pub shaped: u64,
    /// Duplicate data packets.
    pub duplicates: u64,
    /// Unparsable datagrams.
    pub malformed: u64,
    /// Media units dropped at this source: they waited for the session's
    /// rate until they could no longer reach any member within the delay
    /// bound.
    pub stale_media: u64,
    /// Coded repairs sent (local loss recovery).
    pub repairs_sent: u64,
    /// Data packets recovered from repairs.
    pub recovered: u64,
    /// Repairs refused as malformed.
    pub bad_repairs: u64,
    /// Media units this source sent in bundles, several to a packet
    /// (docs/celerity.md, "Bundles").
    pub bundled_units: u64,
    /// The bundles they went in.
    pub bundles: u64,
    /// Keyframe requests this node sent to sources (its applications').
    pub keyframe_requests_sent: u64,
    /// Keyframe requests receivers sent this node's session.
    pub keyframe_requests_received: u64,
    /// Reception reports this node sent to sources (its applications').
    pub reception_reports_sent: u64,
    /// Reception reports receivers sent this node's session.
    pub reception_reports_received: u64,
    /// Retransmission requests this node sent to sources (its
    /// applications').
    pub retransmission_requests_sent: u64,
    /// Retransmission requests receivers sent this node's session.
    pub retransmission_requests_received: u64,
    /// Retransmission requests this node's applications sent that waited
    /// past their life for a datagram to leave in, dropped (docs/node.md,
    /// "Retransmission requests").
    pub retransmission_requests_expired: u64,
    /// Times a link into this node re-learnt its data packets' base delay
    /// after an overload (docs/celerity.md, "An overload that has
    /// drained").
    pub rebases: u64,
    /// Times a link into this node found its route longer (and raised its
    /// base delays by the difference) or shorter: routes that changed
    /// under the overlay (docs/celerity.md, "Routes that change under the
    /// overlay").
    pub paths_longer: u64,
    /// See [`PeerSummary::paths_longer`].
    pub paths_shorter: u64,
    /// Times another member told this node of a route change it had read
    /// under one of its links (docs/celerity.md, "News of a route
    /// change").
    pub route_news: u64,
    /// Times this node asked a head for a control packet alone, having
    /// read a data packet faster than any before on its link
    /// (`conference.ask_alone`; docs/celerity.md, "Asking for a control
    /// packet alone").
    pub alone_asked: u64,
    /// Control packets this node sent alone because a tail asked.
    pub alone_sent: u64,
    /// Times a link into this node found an overload drained, where its
    /// sessions resumed at what the link delivered of them meanwhile
    /// (docs/celerity.md, "Resuming at an overload's delivery").
    pub drained_overloads: u64,
    /// Times a link into this node found an overload within the climb
    /// (or a quick-start window, after a calm) because it delivered well
    /// under what it had delivered with no queue (docs/celerity.md, "A
    /// fall within the climb", "A fall within the windows").
    pub climb_falls: u64,
    /// How late this node's encoder followed the rate offered it, ms, as
    /// measured at the end ([`CelerityPeer::app_lag`]); `null` if it could
    /// not tell.
    pub app_lag_ms: Option<f64>,
}

impl NetSummary {
    fn of<E>(done: &meshcast_net::Finished<E>) -> NetSummary {
        let c = &done.counters;
        let ms = |d: meshcast_core::Duration| crate::report::r(d.as_millis_f64(), 4);
        let q = |p: f64| done.timer_late.quantile(p).map(ms);
        NetSummary {
            datagrams_in: c.datagrams_in,
            datagrams_out: c.datagrams_out,
            gso_sends: c.gso_sends,
            unknown_source: c.unknown_source,
            send_errors: c.send_errors,
            media_in: c.media_in,
            media_out: c.media_out,
            rtcp_out: c.rtcp_out,
            media_dropped: c.media_refused + c.media_dropped + c.not_rtcp,
            rtcp_in: c.rtcp_in,
            keyframe_asks: c.keyframe_asks,
            keyframe_asks_dropped: c.keyframe_asks_dropped,
            encoder_requests: c.encoder_requests,
            encoder_requests_held: c.encoder_requests_held,
            encoder_rate_reports: c.encoder_rate_reports,
            encoder_reports: c.encoder_reports,
            reception_reports: c.reception_reports,
            reception_blocks_dropped: c.reception_blocks_dropped,
            reception_blocks_replaced: c.reception_blocks_replaced,
            encoder_reception_reports: c.encoder_reception_reports,
            encoder_reception_reports_held: c.encoder_reception_reports_held,
            retransmission_requests: c.retransmission_requests,
            nack_entries_dropped: c.nack_entries_dropped,
            encoder_retransmission_requests: c.encoder_retransmission_requests,
            encoder_retransmission_requests_held: c.encoder_retransmission_requests_held,
            timer_late_ms_p50: q(0.5),
            timer_late_ms_p99: q(0.99),
            timer_late_ms_max: done.timer_late.max().map(ms),
        }
    }
}

impl PeerSummary {
    fn of(peer: &CelerityPeer) -> PeerSummary {
        let c = peer.counters();
        PeerSummary {
            late: c.late,
            shaped: c.shaped,
            duplicates: c.duplicates,
            malformed: c.malformed,
            stale_media: c.stale_media,
            repairs_sent: c.repairs_sent,
            recovered: c.recovered,
            bad_repairs: c.bad_repairs,
            bundled_units: c.bundled_units,
            bundles: c.bundles,
            keyframe_requests_sent: c.keyframe_requests_sent,
            keyframe_requests_received: c.keyframe_requests_received,
            reception_reports_sent: c.reception_reports_sent,
            reception_reports_received: c.reception_reports_received,
            retransmission_requests_sent: c.retransmission_requests_sent,
            retransmission_requests_received: c.retransmission_requests_received,
            retransmission_requests_expired: c.retransmission_requests_expired,
            rebases: c.rebases,
            paths_longer: c.paths_longer,
            paths_shorter: c.paths_shorter,
            route_news: c.route_news,
            alone_asked: c.alone_asked,
            alone_sent: c.alone_sent,
            drained_overloads: c.drained_overloads,
            climb_falls: c.climb_falls,
            app_lag_ms: peer
                .app_lag()
                .map(|d| crate::report::r(d.as_millis_f64(), 0)),
        }
    }
}

/// Run the node until its duration is over or SIGINT/SIGTERM arrives;
/// `started` is told the socket's address once it is bound.
pub fn run_node(cfg: &NodeConfig, started: impl FnOnce(SocketAddr)) -> anyhow::Result<NodeSummary> {
    let n = cfg.conference.participants.len();
    let addrs: Vec<Addr> = (0..n)
        .map(|i| Addr::new(NodeId(i as u32), CONFERENCE_PORT))
        .collect();
    let mut book = AddrBook::new();
    for (a, s) in addrs.iter().zip(&cfg.peers) {
        book.insert(*a, *s)?;
    }
    let mut peer = CelerityPeer::new(CelerityConfig {
        me: cfg.me,
        participants: addrs,
        flows: (0..n).map(|i| FlowId(i as u32)).collect(),
        model: cfg.conference.model(),
        params: cfg.conference.params.clone(),
    })?;
    if let Some(m) = &cfg.media {
        // A participant with an encoder probes its rate before the
        // encoder starts; one that only receives sends nothing.
        peer.set_app_media(true, m.input.is_some());
    }
    let mut rec = FlowRecorder::new();
    for (i, name) in cfg.conference.participants.iter().enumerate() {
        let receivers = if i == cfg.me {
            Vec::new()
        } else {
            vec![NodeId(cfg.me as u32)]
        };
        rec.add_flow(name.clone(), "session", NodeId(i as u32), receivers);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let me = NodeId(cfg.me as u32);
    let packets = std::cell::RefCell::new(Vec::new());
    let (done, ran) = runtime.block_on(async {
        let socket = std::net::UdpSocket::bind(cfg.listen)
            .with_context(|| format!("cannot listen on {}", cfg.listen))?;
        // An epoch still ahead is a start time: every node of a deployment
        // begins at the same instant.
        let mut node = match cfg.epoch {
            Epoch::Wall(epoch) => {
                if let Ok(wait) = epoch.duration_since(SystemTime::now()) {
                    tokio::time::sleep(wait).await;
                }
                Node::with_epoch(peer, socket, book, epoch)?
            }
            Epoch::Monotonic(ns) => {
                let epoch = meshcast_net::clock::instant_of_monotonic_ns(ns);
                tokio::time::sleep_until(epoch.into()).await;
                Node::with_epoch_instant(peer, socket, book, epoch)?
            }
        };
        node.set_gso(cfg.gso);
        if let Some(m) = &cfg.media {
            // The node's own local ports, each bound if configured.
            let bind = |at: Option<SocketAddr>, what: &str| {
                at.map(|a| {
                    std::net::UdpSocket::bind(a)
                        .with_context(|| format!("cannot take {what} on {a}"))
                })
                .transpose()
            };
            let input = bind(m.input, "media")?;
            let feedback = bind(m.rtcp_listen, "RTCP")?;
            let input_rtcp = bind(m.input_rtcp, "the encoder's RTCP")?;
            let flows = |v: &[(usize, SocketAddr)]| {
                v.iter()
                    .map(|&(p, a)| (FlowId(p as u32), a))
                    .collect::<Vec<_>>()
            };
            node.set_media(MediaPorts {
                input,
                input_rtcp,
                outputs: flows(&m.outputs),
                rtcp_outputs: flows(&m.rtcp_outputs),
                type_outputs: m.type_outputs.clone(),
                feedback,
                encoder_feedback: m.encoder_rtcp,
                // A keyframe asked for within the delay bound is still on
                // its way to the receivers that ask after it.
                request_gap: std::time::Duration::from_nanos(
                    cfg.conference.params.delay_bound.as_nanos(),
                ),
                rate_feedback: m.rate_feedback,
            })?;
        }
        started(node.local_addr()?);
        // Reports count seconds from this node's start; the protocol's
        // clock counts from the shared epoch.
        let start = node.now();
        let clock = std::time::Instant::now();
        let rel = |t: Time| Time::ZERO + t.saturating_since(start);
        let live = std::cell::RefCell::new(Live::new(&cfg.conference.participants));
        let metrics = match cfg.metrics_listen {
            Some(a) => Some(
                tokio::net::TcpListener::bind(a)
                    .await
                    .with_context(|| format!("cannot serve metrics on {a}"))?,
            ),
            None => None,
        };
        let run = node.run(stop_signal(cfg.duration), |now, event| {
            live.borrow_mut().count(&event);
            if cfg.record_packets {
                if let Some(p) = PacketRecord::of(now, &event) {
                    packets.borrow_mut().push(p);
                }
            }
            // The recorder counts from this node's start too.
            let event = match event {
                Event::FlowReceived {
                    flow,
                    payload_bytes,
                    sent_at,
                } => Event::FlowReceived {
                    flow,
                    payload_bytes,
                    sent_at: rel(sent_at),
                },
                Event::FlowDropped {
                    flow,
                    sent_at,
                    cause,
                } => Event::FlowDropped {
                    flow,
                    sent_at: rel(sent_at),
                    cause,
                },
                e => e,
            };
            rec.record(me, rel(now), &event);
        });
        let done = match metrics {
            Some(listener) => {
                tokio::select! {
                    done = run => done?,
                    () = serve_metrics(listener, &live, clock) => unreachable!("serves forever"),
                }
            }
            None => run.await?,
        };
        anyhow::Ok((done, clock.elapsed()))
    })?;
    // Whole seconds only: the moments between the last full second and
    // the stop would show as a second with nothing received.
    let secs = ran.as_secs();
    let end = Time::from_secs(secs);
    let name = |n: NodeId| cfg.conference.participants[n.index()].clone();
    let flows = rec
        .flows()
        .iter()
        .map(|f| measured_flow(f, secs, end, name, |_| None))
        .collect();
    Ok(NodeSummary {
        schema_version: SCHEMA_VERSION,
        node: cfg.id.clone(),
        duration_s: end.as_secs_f64(),
        flows,
        net: NetSummary::of(&done),
        peer: PeerSummary::of(&done.endpoint),
        packets: packets.into_inner(),
    })
}

impl PacketRecord {
    fn of(now: Time, event: &Event) -> Option<PacketRecord> {
        let t_ns = now.as_nanos();
        Some(match *event {
            Event::FlowSent {
                flow,
                payload_bytes,
            } => PacketRecord::Sent {
                t_ns,
                flow: flow.0,
                bytes: payload_bytes,
            },
            Event::FlowReceived {
                flow,
                payload_bytes,
                sent_at,
            } => PacketRecord::Received {
                t_ns,
                flow: flow.0,
                bytes: payload_bytes,
                sent_ns: sent_at.as_nanos(),
            },
            Event::FlowDropped {
                flow,
                sent_at,
                cause,
            } => PacketRecord::Dropped {
                t_ns,
                flow: flow.0,
                cause,
                sent_ns: sent_at.as_nanos(),
            },
            Event::BytesSent {
                media,
                header,
                control,
                repair,
            } => PacketRecord::Bytes {
                t_ns,
                media,
                header,
                control,
                repair,
            },
            _ => return None,
        })
    }
}

/// Totals for the metrics endpoint, kept as events arrive.
struct Live {
    names: Vec<String>,
    sent: Vec<(u64, u64)>,
    received: Vec<(u64, u64)>,
    /// Per session, data packets this node dropped, by cause
    /// ([`DropCause::index`]).
    dropped: Vec<[u64; DropCause::ALL.len()]>,
    /// Bytes sent as media, data headers, control and repairs.
    bytes: [u64; 4],
    /// The rate (bits/s), packet size and frame size (media bytes) the
    /// overlay last offered this node's application (with `[media]`).
    offered: Option<(u64, u32, u32)>,
}

impl Live {
    fn new(names: &[String]) -> Live {
        Live {
            names: names.to_vec(),
            sent: vec![(0, 0); names.len()],
            received: vec![(0, 0); names.len()],
            dropped: vec![[0; DropCause::ALL.len()]; names.len()],
            bytes: [0; 4],
            offered: None,
        }
    }

    fn count(&mut self, event: &Event) {
        let add = |v: &mut Vec<(u64, u64)>, flow: FlowId, bytes: u32| {
            if let Some(c) = v.get_mut(flow.index()) {
                c.0 += 1;
                c.1 += u64::from(bytes);
            }
        };
        match *event {
            Event::FlowSent {
                flow,
                payload_bytes,
            } => add(&mut self.sent, flow, payload_bytes),
            Event::FlowReceived {
                flow,
                payload_bytes,
                ..
            } => add(&mut self.received, flow, payload_bytes),
            Event::FlowDropped { flow, cause, .. } => {
                if let Some(c) = self.dropped.get_mut(flow.index()) {
                    c[cause.index()] += 1;
                }
            }
            Event::BytesSent {
                media,
                header,
                control,
                repair,
            } => {
                for (t, x) in self.bytes.iter_mut().zip([media, header, control, repair]) {
                    *t += u64::from(x);
                }
            }
            Event::RateOffered {
                rate,
                packet_bytes,
                frame_bytes,
                ..
            } => self.offered = Some((rate.as_bps(), packet_bytes, frame_bytes)),
            _ => {}
        }
    }

    /// The Prometheus text exposition (format 0.0.4).
    fn text(&self, uptime: Duration) -> String {
        let mut t = String::new();
        let mut family = |name: &str, help: &str, rows: &[(String, u64)]| {
            let _ = writeln!(t, "# HELP {name} {help}\n# TYPE {name} counter");
            for (labels, v) in rows {
                let _ = writeln!(t, "{name}{labels} {v}");
            }
        };
        let per_flow = |v: &[(u64, u64)], which: fn(&(u64, u64)) -> u64| -> Vec<(String, u64)> {
            self.names
                .iter()
                .zip(v)
                .map(|(n, c)| (format!("{{session=\"{n}\"}}"), which(c)))
                .collect()
        };
        let sessions = [
            (
                "meshcast_session_sent_packets_total",
                "Media packets this node sent as the session's source (those dropped stale at the source included).",
                per_flow(&self.sent, |c| c.0),
            ),
            (
                "meshcast_session_sent_bytes_total",
                "Media payload bytes this node sent as the session's source (those dropped stale at the source included).",
                per_flow(&self.sent, |c| c.1),
            ),
            (
                "meshcast_session_received_packets_total",
                "Media packets of the session that arrived here in time.",
                per_flow(&self.received, |c| c.0),
            ),
            (
                "meshcast_session_received_bytes_total",
                "Media payload bytes of the session that arrived here in time.",
                per_flow(&self.received, |c| c.1),
            ),
        ];
        for (name, help, rows) in &sessions {
            family(name, help, rows);
        }
        family(
            "meshcast_session_dropped_packets_total",
            "Data packets of the session this node dropped, by cause (late: past the delay bound; policed: over the session's rate on the next link; link_down; stale: the application's unit waited for the rate past the delay bound and was never sent).",
            &self
                .names
                .iter()
                .zip(&self.dropped)
                .flat_map(|(n, c)| {
                    DropCause::ALL.into_iter().map(move |cause| {
                        (
                            format!("{{session=\"{n}\",cause=\"{}\"}}", cause.name()),
                            c[cause.index()],
                        )
                    })
                })
                .collect::<Vec<_>>(),
        );
        family(
            "meshcast_sent_bytes_total",
            "Bytes this node sent, by purpose (IP/UDP headers excluded).",
            &["media", "header", "control", "repair"]
                .iter()
                .zip(self.bytes)
                .map(|(p, v)| (format!("{{purpose=\"{p}\"}}"), v))
                .collect::<Vec<_>>(),
        );
        if let Some((bps, bytes, frame)) = self.offered {
            let _ = writeln!(
                t,
                "# HELP meshcast_offered_rate_bits_per_second The media rate the overlay offers this node's own session now: what its encoder should produce.\n# TYPE meshcast_offered_rate_bits_per_second gauge\nmeshcast_offered_rate_bits_per_second {bps}"
            );
            let _ = writeln!(
                t,
                "# HELP meshcast_offered_packet_bytes The most media bytes a packet of this node's own session should carry now, for its paths: its payloader's size.\n# TYPE meshcast_offered_packet_bytes gauge\nmeshcast_offered_packet_bytes {bytes}"
            );
            let _ = writeln!(
                t,
                "# HELP meshcast_offered_frame_bytes The most media bytes a frame of this node's own session (units handed over at once, a keyframe) should carry to reach every receiver within the delay bound: its encoder's largest frame.\n# TYPE meshcast_offered_frame_bytes gauge\nmeshcast_offered_frame_bytes {frame}"
            );
        }
        let _ = writeln!(
            t,
            "# HELP meshcast_uptime_seconds Seconds since the node started.\n# TYPE meshcast_uptime_seconds gauge\nmeshcast_uptime_seconds {:.3}",
            uptime.as_secs_f64()
        );
        t
    }
}

/// Answer every HTTP request on `listener` with the metrics (whatever the
/// path: a scraper asks for `/metrics`).
async fn serve_metrics(
    listener: tokio::net::TcpListener,
    live: &std::cell::RefCell<Live>,
    clock: std::time::Instant,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            // Out of file descriptors, say: try again a little later.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        // The request itself does not matter; read what has arrived so the
        // client does not see a reset, within a bound.
        let mut buf = [0u8; 2048];
        let _ = tokio::time::timeout(Duration::from_millis(200), conn.read(&mut buf)).await;
        let body = live.borrow().text(clock.elapsed());
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(head.as_bytes()).await;
        let _ = conn.write_all(body.as_bytes()).await;
        let _ = conn.shutdown().await;
    }
}

/// Completes when `duration` is over (if given) or SIGINT/SIGTERM arrives.
async fn stop_signal(duration: Option<Duration>) {
    let deadline = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = deadline => {}
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

/// Write `summary.json` and `series.csv` (the simulator's columns:
/// `t_s,entity,id,metric,value`, flow rows only) into `dir`.
pub fn write_node(dir: &Path, s: &NodeSummary) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_string_pretty(s)? + "\n";
    std::fs::write(dir.join("summary.json"), json)
        .with_context(|| format!("cannot write {}", dir.join("summary.json").display()))?;
    let mut csv = String::from("t_s,entity,id,metric,value\n");
    for f in &s.flows {
        for x in &f.series {
            for (metric, v) in flow_metrics(&x.fig) {
                let v = v.map_or(String::new(), |v| format!("{v}"));
                let _ = writeln!(csv, "{},flow,{},{metric},{v}", x.t_s, f.id);
            }
        }
    }
    std::fs::write(dir.join("series.csv"), csv)
        .with_context(|| format!("cannot write {}", dir.join("series.csv").display()))?;
    if !s.packets.is_empty() {
        let mut text = String::new();
        for p in &s.packets {
            text.push_str(&p.to_csv());
            text.push('\n');
        }
        std::fs::write(dir.join("packets.csv"), text)
            .with_context(|| format!("cannot write {}", dir.join("packets.csv").display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
id = "B"
duration_s = 5

[conference]
participants = ["A", "B"]
max_rate_kbps = 300

[peers]
A = "127.0.0.1:7001"
B = "127.0.0.1:7002"
"#;

    fn err(text: &str) -> String {
        let e = NodeConfig::parse("n.toml", text).expect_err("refused");
        format!("{}:{}: {}: {}", e.line, e.column, e.field, e.message)
    }

    #[test]
    fn a_good_configuration_is_read() {
        let c = NodeConfig::parse("n.toml", GOOD).expect("valid");
        assert_eq!((c.id.as_str(), c.me), ("B", 1));
        assert_eq!(c.listen, "127.0.0.1:7002".parse().expect("address"));
        assert_eq!(c.duration, Some(Duration::from_secs(5)));
        assert_eq!(c.epoch, Epoch::Wall(UNIX_EPOCH));
        assert_eq!(c.peers.len(), 2);
    }

    #[test]
    fn the_epoch_is_on_the_wall_clock_or_the_monotonic_one() {
        let with = |keys: &str| GOOD.replace("duration_s = 5", &format!("duration_s = 5\n{keys}"));
        let epoch = |keys: &str| {
            NodeConfig::parse("n.toml", &with(keys))
                .expect("valid")
                .epoch
        };
        assert_eq!(
            epoch("epoch_unix_s = 1.5"),
            Epoch::Wall(UNIX_EPOCH + Duration::from_millis(1500))
        );
        assert_eq!(
            epoch("epoch_monotonic_ns = 123456789"),
            Epoch::Monotonic(123_456_789)
        );
        assert!(
            err(&with("epoch_monotonic_ns = -1"))
                .contains("epoch_monotonic_ns: must be an integer >= 0")
        );
        assert!(err(&with("epoch_monotonic_ns = 1.5")).contains("epoch_monotonic_ns"));
        assert!(
            err(&with("epoch_unix_s = 1\nepoch_monotonic_ns = 1"))
                .contains("give epoch_unix_s or epoch_monotonic_ns, not both")
        );
        assert!(err(&with("epoch_unix_s = -1")).contains("epoch_unix_s: must be a number >= 0"));
    }

    #[test]
    fn packet_records_round_trip_and_bad_lines_are_refused() {
        let recs = [
            PacketRecord::Sent {
                t_ns: 5,
                flow: 1,
                bytes: 1000,
            },
            PacketRecord::Received {
                t_ns: 9,
                flow: 0,
                bytes: 800,
                sent_ns: 3,
            },
            PacketRecord::Bytes {
                t_ns: 10,
                media: 1,
                header: 2,
                control: 3,
                repair: 4,
            },
            PacketRecord::Dropped {
                t_ns: 12,
                flow: 2,
                cause: DropCause::Policed,
                sent_ns: 7,
            },
        ];
        for r in recs {
            assert_eq!(PacketRecord::from_csv(&r.to_csv()), Some(r));
        }
        for bad in [
            "sent,1,2",
            "sent,1,2,3,4",
            "bytes,1,2,3,4",
            "lost,1,2,3",
            "received,x,1,2,3",
            "dropped,1,2,lost,3",
            "dropped,1,2,late",
            "dropped,1,2,late,3,4",
            "dropped,1,2,3,4",
            "",
        ] {
            assert_eq!(PacketRecord::from_csv(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_configurations_name_the_place() {
        assert_eq!(
            err(&GOOD.replace(r#"id = "B""#, r#"id = "Z""#)),
            r#"2:6: id: "Z" is not among conference.participants"#
        );
        assert!(
            err(&GOOD.replace("127.0.0.1:7002", "nonsense"))
                .contains(r#"peers.B: "nonsense" is not a host:port address"#)
        );
        assert!(
            err(&GOOD.replace("127.0.0.1:7002", "127.0.0.1:7001"))
                .contains("peers.B: 127.0.0.1:7001 is listed twice")
        );
        assert!(
            err(&GOOD.replace(r#"B = "127.0.0.1:7002""#, ""))
                .contains(r#"conference.participants[1]: "B" has no address in [peers]"#)
        );
        assert!(
            err(&GOOD.replace("duration_s = 5", "duration_s = -1"))
                .contains("duration_s: must be a positive number")
        );
        assert!(err(&GOOD.replace("duration_s = 5", "speed = 5")).contains("speed"));
        assert_eq!(
            err(&GOOD.replace("max_rate_kbps = 300", "video_fps = 30")),
            "7:13: conference.video_fps: simulates encoders in the simulator only: a node's media are its [media]"
        );
        assert!(
            err(&GOOD.replace("max_rate_kbps = 300", "start_spread_ms = 20")).contains(
                "conference.start_spread_ms: spreads the members' starts in the simulator only"
            )
        );
        assert!(
            err(&GOOD.replace("duration_s = 5", "metrics_listen = \"x\""))
                .contains(r#"metrics_listen: "x" is not a host:port address"#)
        );
        assert!(
            err(&format!("{GOOD}C = \"127.0.0.1:7003\"\n"))
                .contains(r#"peers.C: "C" is not among conference.participants"#)
        );
        let media = |m: &str| format!("{GOOD}\n[media]\n{m}\n");
        let c = NodeConfig::parse(
            "n.toml",
            &media("input = \"127.0.0.1:9000\"\noutput = { A = \"127.0.0.1:9001\" }"),
        )
        .expect("valid media");
        assert_eq!(
            c.media,
            Some(MediaConfig {
                input: Some("127.0.0.1:9000".parse().expect("address")),
                input_rtcp: None,
                outputs: vec![(0, "127.0.0.1:9001".parse().expect("address"))],
                rtcp_outputs: Vec::new(),
                type_outputs: Vec::new(),
                encoder_rtcp: None,
                rtcp_listen: None,
                rate_feedback: true,
            })
        );
        let c = NodeConfig::parse(
            "n.toml",
            &media(
                "input = \"127.0.0.1:9000\"\nencoder_rtcp = \"127.0.0.1:9002\"\nrtcp_listen = \"127.0.0.1:9003\"\noutput = { A = \"127.0.0.1:9001\" }",
            ),
        )
        .expect("valid media with RTCP");
        let m = c.media.expect("media");
        assert!(m.rate_feedback);
        assert_eq!(
            m.encoder_rtcp,
            Some("127.0.0.1:9002".parse().expect("address"))
        );
        assert_eq!(
            m.rtcp_listen,
            Some("127.0.0.1:9003".parse().expect("address"))
        );
        assert!(
            err(&media("encoder_rtcp = \"127.0.0.1:9002\"\noutput = { A = \"127.0.0.1:9001\" }"))
                .contains("media.encoder_rtcp: asks this participant's encoder for keyframes: needs media.input")
        );
        assert!(
            err(&media(
                "input = \"127.0.0.1:9000\"\nrtcp_listen = \"127.0.0.1:9003\""
            ))
            .contains(
                "media.rtcp_listen: takes the receiving applications' RTCP: needs media.output"
            )
        );
        for input in ["127.0.0.1:9000", "0.0.0.0:9000"] {
            assert!(
                err(&media(&format!(
                    "input = \"{input}\"\nencoder_rtcp = \"127.0.0.1:9000\""
                )))
                .contains(
                    "media.encoder_rtcp: is media.input: the encoder's RTCP port must be its own"
                ),
                "{input}"
            );
        }
        // The encoder's RTCP in, the receiving applications' RTCP ports.
        let c = NodeConfig::parse(
            "n.toml",
            &media(
                "input = \"127.0.0.1:9000\"\ninput_rtcp = \"127.0.0.1:9004\"\noutput = { A = \"127.0.0.1:9001\" }\noutput_rtcp = { A = \"127.0.0.1:9005\" }",
            ),
        )
        .expect("valid media with RTCP ports");
        let m = c.media.expect("media");
        assert_eq!(
            m.input_rtcp,
            Some("127.0.0.1:9004".parse().expect("address"))
        );
        assert_eq!(
            m.rtcp_outputs,
            vec![(0, "127.0.0.1:9005".parse().expect("address"))]
        );
        assert!(
            err(&media(
                "input_rtcp = \"127.0.0.1:9004\"\noutput = { A = \"127.0.0.1:9001\" }"
            ))
            .contains("media.input_rtcp: takes the encoder's RTCP: needs media.input")
        );
        for rtcp in ["127.0.0.1:9000", "0.0.0.0:9000"] {
            assert!(
                err(&media(&format!("input = \"127.0.0.1:9000\"\ninput_rtcp = \"{rtcp}\"")))
                    .contains("media.input_rtcp: is media.input: RTCP multiplexed with the RTP needs no port of its own"),
                "{rtcp}"
            );
        }
        assert!(
            err(&media(
                "input = \"127.0.0.1:9000\"\ninput_rtcp = \"127.0.0.1:9004\"\nencoder_rtcp = \"127.0.0.1:9004\""
            ))
            .contains("media.input_rtcp: is media.encoder_rtcp: the node's RTCP port and the encoder's must differ")
        );
        for table in [
            "output = { A = \"127.0.0.1:9001\" }\noutput_rtcp = { B = \"127.0.0.1:9005\" }",
            "output_rtcp = { A = \"127.0.0.1:9005\" }",
            "output = { A = \"127.0.0.1:9001\" }\noutput_rtcp = { Q = \"127.0.0.1:9005\" }",
        ] {
            assert!(
                err(&media(table)).contains("has no media.output: its RTCP goes with its RTP"),
                "{table}"
            );
        }
        // A participant's streams of one payload type apart.
        let c = NodeConfig::parse(
            "n.toml",
            &media(
                "output = { A = \"127.0.0.1:9001\" }\n[media.output_types.A]\n97 = { rtp = \"127.0.0.1:9006\", rtcp = \"127.0.0.1:9007\" }\n0 = { rtp = \"127.0.0.1:9008\" }",
            ),
        )
        .expect("valid media with streams apart");
        let addr = |a: &str| a.parse::<SocketAddr>().expect("address");
        let typed = |payload_type, rtp, rtcp: Option<&str>| TypeOutput {
            flow: FlowId(0),
            payload_type,
            rtp: addr(rtp),
            rtcp: rtcp.map(addr),
        };
        assert_eq!(
            c.media.expect("media").type_outputs,
            vec![
                typed(0, "127.0.0.1:9008", None),
                typed(97, "127.0.0.1:9006", Some("127.0.0.1:9007"))
            ]
        );
        for (table, message) in [
            (
                "[media.output_types.A]\n97 = { rtp = \"127.0.0.1:9006\" }",
                "media.output_types.A.97: \"A\" has no media.output: its other streams go there",
            ),
            (
                "output = { A = \"127.0.0.1:9001\" }\n[media.output_types.A]\n128 = { rtp = \"127.0.0.1:9006\" }",
                "media.output_types.A.128: \"128\" is not an RTP payload type (0-127)",
            ),
            (
                "output = { A = \"127.0.0.1:9001\" }\n[media.output_types.A]\n72 = { rtp = \"127.0.0.1:9006\" }",
                "media.output_types.A.72: payload types 64-95 can pass for RTCP (RFC 5761): use 96-127 or a static type",
            ),
            (
                "output = { A = \"127.0.0.1:9001\" }\n[media.output_types.A]\nvideo = { rtp = \"127.0.0.1:9006\" }",
                "media.output_types.A.video: \"video\" is not an RTP payload type (0-127)",
            ),
            (
                "output = { A = \"127.0.0.1:9001\" }\n[media.output_types.A]\n97 = { rtp = \"127.0.0.1:9006\", rtcp = \"x\" }",
                "media.output_types.A.97.rtcp: \"x\" is not a host:port address",
            ),
        ] {
            assert!(
                err(&media(table)).contains(message),
                "{table}: {}",
                err(&media(table))
            );
        }
        assert!(
            err(&media("output = { A = \"127.0.0.1:9001\" }\n[media.output_types.A]\n97 = { rpt = \"127.0.0.1:9006\" }"))
                .contains("rpt")
        );
        assert!(
            err(&media(
                "output = { A = \"127.0.0.1:9001\" }\noutput_rtcp = { A = \"nowhere\" }"
            ))
            .contains(r#"media.output_rtcp.A: "nowhere" is not a host:port address"#)
        );
        assert!(
            err(&media("input = \"127.0.0.1:9000\"\nrate_feedback = false")).contains(
                "media.rate_feedback: tells the encoder its rate at media.encoder_rtcp: needs media.encoder_rtcp"
            )
        );
        let c = NodeConfig::parse(
            "n.toml",
            &media(
                "input = \"127.0.0.1:9000\"\nencoder_rtcp = \"127.0.0.1:9002\"\nrate_feedback = false",
            ),
        )
        .expect("valid media without rate feedback");
        assert!(!c.media.expect("media").rate_feedback);
        assert!(
            err(&media("input = \"127.0.0.1:9000\"\nencoder_rtcp = \"x\""))
                .contains(r#"media.encoder_rtcp: "x" is not a host:port"#)
        );
        assert!(
            err(&media("output = { B = \"127.0.0.1:9001\" }"))
                .contains("media.output.B: a node does not receive its own session")
        );
        assert!(
            err(&media("output = { Z = \"127.0.0.1:9001\" }"))
                .contains(r#"media.output.Z: "Z" is not among conference.participants"#)
        );
        assert!(
            err(&media("input = \"here\"")).contains(r#"media.input: "here" is not a host:port"#)
        );
        assert!(err(&media("inputs = 1")).contains("inputs"));
    }
}
