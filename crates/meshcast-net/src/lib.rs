//! # meshcast-net: the real UDP runtime
//!
//! The simulator proves the protocols; this crate runs the same sans-IO
//! state machines ([`Endpoint`]) between real processes over real UDP
//! sockets. A [`Node`] owns one endpoint and one socket and is a thin
//! loop around the endpoint's surface, as `meshcast-sim` is:
//!
//! - **The drain rule.** After every input — a datagram
//!   ([`Endpoint::handle_datagram`]) or a due timer
//!   ([`Endpoint::handle_timeout`]) — the node drains
//!   [`Endpoint::poll_transmit`] and [`Endpoint::poll_event`] until both
//!   return `None`, sends what it got, and then waits for the earlier of
//!   [`Endpoint::poll_timeout`] and the next datagram.
//! - **Time.** The protocol's [`Time`] counts nanoseconds from an epoch:
//!   the moment the node was created ([`Node::new`]), or a wall-clock
//!   instant every node of a deployment shares ([`Node::with_epoch`];
//!   [`Node::with_epoch_instant`] for nodes of one process, on the
//!   monotonic clock); from there it advances with the monotonic clock
//!   ([`std::time::Instant`]). Real time is converted here and nowhere
//!   else. Link measurements need no common clock (Celerity measures
//!   queuing delay against a base delay, so offsets cancel), but the
//!   end-to-end delay bound compares a packet's origin timestamp (the
//!   source's clock) with the receiver's: a conference needs a shared
//!   epoch and wall clocks synchronised well within the bound (NTP keeps
//!   them within a few milliseconds). Without it a receiver whose clock
//!   runs behind the source's sees every packet from the future and drops
//!   it as late (found by the loopback test: nodes created a few
//!   milliseconds apart lost whole sessions).
//! - **Addresses.** Endpoints speak [`Addr`] (node, port). An [`AddrBook`]
//!   maps them to socket addresses and back; a datagram from a socket
//!   address the book does not know is dropped and counted
//!   ([`NetCounters::unknown_source`]), as is a transmit to an `Addr` it
//!   does not know.
//! - **Batching.** Sockets go through `quinn-udp`, which receives with
//!   `recvmmsg` and GRO where the kernel has them, and the node sends
//!   consecutive datagrams to one destination of one size as a single GSO
//!   send (`UDP_SEGMENT`; the last may be shorter). `../shared/EVIDENCE.md`
//!   measured GSO and GRO as what moves packet rates on these machines;
//!   batching alone gains about 20%.
//! - **Errors.** UDP is unreliable and the protocols recover; a failed
//!   send (for example "connection refused" while a peer is not up yet)
//!   is counted ([`NetCounters::send_errors`]), never fatal. Only a socket
//!   that cannot be set up or polled at all ends [`Node::run`] with an
//!   error.
//! - **Timers.** The node waits for the endpoint's next timeout on a
//!   timer of the kernel's precision (a `timerfd` on Linux), not on
//!   Tokio's millisecond tick, which handled timers 1.2 ms late at the
//!   median. Each due timer is counted by how long after its time the
//!   node got to it ([`Finished::timer_late`]): a node that waited for a
//!   CPU (nodes sharing a machine, as `meshcast emu`'s do) shows there,
//!   and it holds the packets it relays and paces for as long.
//! - **Keyframe requests.** A node with media ([`Node::set_media`]) reads
//!   RTCP from its receiving applications, on its media output socket
//!   (an application that answers the address its RTP came from) and on
//!   an optional feedback socket: a picture loss indication or full intra
//!   request naming a stream it delivered (by the RTP SSRC it saw) goes to
//!   the endpoint ([`Endpoint::handle_keyframe_request`]). At the source,
//!   the endpoint's [`Event::KeyframeRequested`] becomes a PLI to the
//!   encoder's RTCP address, at most one per [`MediaPorts::request_gap`],
//!   and with [`MediaPorts::rate_feedback`] the rate the endpoint offers
//!   ([`Event::RateOffered`]) goes there as a REMB ([`rtcp`]). Both name
//!   every stream the encoder sent in the last [`STREAM_SILENCE`] (audio
//!   and video, say) and has not said goodbye to.
//! - **Reception reports.** The receiving applications' reception report
//!   blocks (in their RTCP sender and receiver reports: each about one
//!   stream's loss, jitter and last sender report) about a stream the node
//!   delivered go to the stream's source as one receiver report per
//!   session and application ([`Endpoint::handle_reception_report`]), at
//!   most one per [`RECEPTION_REPORT_GAP`] each (one within it waits
//!   for it to pass, and what comes meanwhile joins it); at the source the
//!   endpoint's [`Event::ReceptionReported`] goes to the encoder's RTCP
//!   address as it came, so that the encoder hears its receivers as if
//!   the overlay were one RTP translator (RFC 3550 §7.2).
//! - **Retransmission requests.** The receiving applications' generic
//!   NACKs about a stream the node delivered go to the stream's source the
//!   same way, grouped per session and application into one request each
//!   ([`Endpoint::handle_retransmission_request`]), at once but within a
//!   budget of [`RETRANSMISSION_REQUEST_RATE`] a second (in bursts of
//!   [`RETRANSMISSION_REQUEST_BURST`]) each; the endpoint's
//!   [`Event::RetransmissionRequested`] goes to the encoder's RTCP address
//!   as it came, and an encoder that keeps its recent packets sends them
//!   again.
//! - **Sender reports.** The encoder's own RTCP (its sender reports,
//!   which receivers need to play its streams in sync, and its goodbyes)
//!   travels with its media: on the media input (RTCP multiplexed with
//!   RTP, RFC 5761) or on [`MediaPorts::input_rtcp`]. A receiving node
//!   hands RTCP units to the flow's [`MediaPorts::rtcp_outputs`] address
//!   where there is one (an application with an RTCP port of its own),
//!   else to its media address with the RTP.
//! - **Streams apart.** A receiving application may take a flow's streams
//!   of one RTP payload type (its audio, say) on ports of their own
//!   ([`MediaPorts::type_outputs`]), as a receiver with one port per
//!   stream needs; each stream's RTCP follows its RTP there.
//! - **Leaving.** When the `stop` future given to [`Node::run`] completes
//!   (a deadline, or SIGINT/SIGTERM in `meshcast node`), the node calls
//!   [`Endpoint::handle_close`], sends what that queued (Celerity's Bye)
//!   and returns the endpoint with its counters.

use meshcast_core::metrics::DelayHistogram;
use meshcast_core::{
    Addr, Endpoint, Event, FlowId, MAX_RECEPTION_REPORT, MAX_RETRANSMISSION_REQUEST, Time, Transmit,
};
use std::collections::HashMap;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};
use tokio::io::Interest;
use tokio::net::UdpSocket;

pub mod clock;
pub mod rtcp;
mod timer;

/// Datagrams received per `recvmmsg` call.
const RECV_BATCH: usize = 8;
/// Bytes of one receive buffer: a GRO batch of up to 64 segments of
/// 1024 bytes, or one datagram of the largest UDP payload.
const RECV_BUF: usize = 1 << 16;

/// Why an [`AddrBook`] entry was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BookError {
    /// The endpoint address is already in the book.
    DuplicateAddr(Addr),
    /// The socket address is already in the book (for another `Addr`).
    DuplicateSocket(SocketAddr),
}

impl std::fmt::Display for BookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BookError::DuplicateAddr(a) => write!(f, "{a:?} is listed twice"),
            BookError::DuplicateSocket(s) => write!(f, "socket address {s} is listed twice"),
        }
    }
}

impl std::error::Error for BookError {}

/// Endpoint addresses and the socket addresses they are reached at.
#[derive(Clone, Debug, Default)]
pub struct AddrBook {
    to_socket: HashMap<Addr, SocketAddr>,
    to_addr: HashMap<SocketAddr, Addr>,
}

impl AddrBook {
    /// An empty book.
    pub fn new() -> AddrBook {
        AddrBook::default()
    }

    /// Add `addr` at `socket`; each may appear once.
    pub fn insert(&mut self, addr: Addr, socket: SocketAddr) -> Result<(), BookError> {
        if self.to_socket.contains_key(&addr) {
            return Err(BookError::DuplicateAddr(addr));
        }
        if self.to_addr.contains_key(&socket) {
            return Err(BookError::DuplicateSocket(socket));
        }
        self.to_socket.insert(addr, socket);
        self.to_addr.insert(socket, addr);
        Ok(())
    }

    /// Where `addr` is reached.
    pub fn socket(&self, addr: Addr) -> Option<SocketAddr> {
        self.to_socket.get(&addr).copied()
    }

    /// Which endpoint sends from `socket`.
    pub fn addr(&self, socket: SocketAddr) -> Option<Addr> {
        self.to_addr.get(&socket).copied()
    }
}

/// What a node's socket did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetCounters {
    /// Datagrams handed to the endpoint.
    pub datagrams_in: u64,
    /// Their bytes (UDP payload).
    pub bytes_in: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Their bytes (UDP payload).
    pub bytes_out: u64,
    /// Send calls that carried more than one datagram (GSO).
    pub gso_sends: u64,
    /// Datagrams from socket addresses not in the book (dropped).
    pub unknown_source: u64,
    /// Transmits to endpoint addresses not in the book (dropped).
    pub unknown_destination: u64,
    /// Datagrams the kernel refused to send (dropped).
    pub send_errors: u64,
    /// Receive calls that failed with something other than "would block".
    pub recv_errors: u64,
    /// Media units the application sent to the media input, and RTCP
    /// datagrams its encoder sent to [`MediaPorts::input_rtcp`] (carried
    /// as units of its flow).
    pub media_in: u64,
    /// Media units the endpoint refused (too large, say).
    pub media_refused: u64,
    /// Media units delivered to the application's ports.
    pub media_out: u64,
    /// Of those, RTCP units (a source's sender reports) delivered to an
    /// RTCP port: a flow's [`MediaPorts::rtcp_outputs`] address, or a
    /// stream's [`TypeOutput::rtcp`].
    pub rtcp_out: u64,
    /// Media units that arrived for a flow with no port, or that the
    /// kernel refused to send on (dropped).
    pub media_dropped: u64,
    /// RTCP datagrams from the receiving applications (on the media output
    /// or feedback socket).
    pub rtcp_in: u64,
    /// Keyframe requests in them the endpoint passed on to a source.
    pub keyframe_asks: u64,
    /// Keyframe requests in them the node could not pass on: for a stream
    /// (SSRC) it delivered none of, or refused by the endpoint.
    pub keyframe_asks_dropped: u64,
    /// Keyframe requests sent to this node's encoder (RTCP PLI).
    pub encoder_requests: u64,
    /// Keyframe requests for this node's encoder not sent: within
    /// [`MediaPorts::request_gap`] of the last one sent, with no stream of
    /// the encoder's heard within [`STREAM_SILENCE`] (no SSRC to name), or
    /// with no encoder RTCP address.
    pub encoder_requests_held: u64,
    /// The offered rate sent to this node's encoder (RTCP REMB).
    pub encoder_rate_reports: u64,
    /// RTCP datagrams from this node's encoder on
    /// [`MediaPorts::input_rtcp`], carried to the receivers (anything else
    /// arriving there is counted in [`NetCounters::not_rtcp`]).
    pub encoder_reports: u64,
    /// Datagrams on [`MediaPorts::input_rtcp`] that were not RTCP
    /// (dropped).
    pub not_rtcp: u64,
    /// Reception reports (RTCP receiver reports, one per session and
    /// receiving application, built from the report blocks the receiving
    /// applications sent) the endpoint passed on to a source.
    pub reception_reports: u64,
    /// Report blocks from the receiving applications not passed on: about
    /// a stream (SSRC) the node delivered none of, past the ten a report
    /// carries, or refused by the endpoint (a source not present).
    pub reception_blocks_dropped: u64,
    /// Report blocks from the receiving applications that waited for
    /// their report's [`RECEPTION_REPORT_GAP`] and were replaced by a
    /// newer block about the same stream from the same application
    /// before it passed (the newer went on).
    pub reception_blocks_replaced: u64,
    /// Reception reports from the receivers sent to this node's encoder.
    pub encoder_reception_reports: u64,
    /// Reception reports for this node's encoder not sent: with no encoder
    /// RTCP address, or refused by the kernel.
    pub encoder_reception_reports_held: u64,
    /// Retransmission requests (one per session and receiving application
    /// and RTCP datagram, built from the generic NACKs the receiving
    /// applications sent) the endpoint passed on to a source.
    pub retransmission_requests: u64,
    /// Entries of the receiving applications' generic NACKs (each a lost
    /// packet and a mask of 16 more) not passed on: about a stream (SSRC)
    /// the node delivered none of, past the budget of
    /// [`RETRANSMISSION_REQUEST_RATE`], past what a request holds, or
    /// refused by the endpoint (a source not present).
    pub nack_entries_dropped: u64,
    /// Retransmission requests from the receivers sent to this node's
    /// encoder.
    pub encoder_retransmission_requests: u64,
    /// Retransmission requests for this node's encoder not sent: with no
    /// encoder RTCP address, or refused by the kernel.
    pub encoder_retransmission_requests_held: u64,
}

/// The application's media over local UDP ([`Node::set_media`]): units
/// (RTP packets from an encoder, say; one datagram each) that arrive on
/// `input` go to the endpoint as its own flow's media, and units of flow
/// `f` that arrive for the application go to its `outputs` entry.
///
/// Keyframe requests travel as RTCP: the receiving applications' picture
/// loss indications and full intra requests arrive on the socket the
/// outputs are sent from, or on `feedback`; a request the endpoint reports
/// for this node's own flow goes to `encoder_feedback` as a PLI (and, with
/// `rate_feedback`, the rate it offers the flow as a REMB).
///
/// The encoder's own RTCP (sender reports, goodbyes) goes to the receivers
/// as units of its flow: from `input` when it is multiplexed with the RTP,
/// or from `input_rtcp`; a receiving node sends RTCP units of flow `f` to
/// its `rtcp_outputs` entry, or to its `outputs` entry without one.
#[derive(Debug, Default)]
pub struct MediaPorts {
    /// Where the application's own media arrives.
    pub input: Option<std::net::UdpSocket>,
    /// Where its encoder's own RTCP arrives, if not on `input`.
    pub input_rtcp: Option<std::net::UdpSocket>,
    /// Where each other flow's media goes.
    pub outputs: Vec<(FlowId, SocketAddr)>,
    /// Where each other flow's RTCP goes, for the flows whose receiving
    /// application has an RTCP port of its own (the others' RTCP goes to
    /// `outputs` with their RTP).
    pub rtcp_outputs: Vec<(FlowId, SocketAddr)>,
    /// Where a flow's streams of one payload type go instead of its
    /// `outputs` and `rtcp_outputs` entries.
    pub type_outputs: Vec<TypeOutput>,
    /// Where the receiving applications' RTCP also arrives (their RTCP
    /// port), besides the socket the outputs are sent from.
    pub feedback: Option<std::net::UdpSocket>,
    /// The encoder's RTCP address: keyframe requests for this node's own
    /// flow go there.
    pub encoder_feedback: Option<SocketAddr>,
    /// The least time between two keyframe requests sent to the encoder:
    /// requests from several receivers after one loss become one, and a
    /// request within the gap of the last is held (the keyframe asked for
    /// is still on its way). Zero sends every one.
    pub request_gap: Duration,
    /// Whether the rate offered to this node's own flow goes to
    /// `encoder_feedback` too (RTCP REMB): when it moves by
    /// [`RATE_REPORT_CHANGE`] or more from the last sent, and every
    /// [`RATE_REPORT_INTERVAL`] while the encoder sends.
    pub rate_feedback: bool,
}

/// A flow's streams of one RTP payload type, sent to ports of their own
/// ([`MediaPorts::type_outputs`]): their RTP to `rtp`, and the RTCP of
/// each (the RTCP whose first packet speaks for its SSRC) to `rtcp`, or
/// with the RTP without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeOutput {
    /// The flow.
    pub flow: FlowId,
    /// The payload type (0–127).
    pub payload_type: u8,
    /// Where their RTP goes.
    pub rtp: SocketAddr,
    /// Where their RTCP goes, if not to `rtp`.
    pub rtcp: Option<SocketAddr>,
}

/// How far the offered rate moves, as a fraction of the rate last sent,
/// before the encoder is sent the new one at once (a REMB).
pub const RATE_REPORT_CHANGE: f64 = 0.03;
/// How often the encoder is sent the offered rate while it stays (a REMB
/// each second, as WebRTC receivers send theirs).
pub const RATE_REPORT_INTERVAL: Duration = Duration::from_secs(1);
/// How long a stream of the encoder's may be silent and still be named in
/// its keyframe requests and REMBs (an encoder that restarts with a new
/// SSRC leaves the old one behind). Audio and video packets come many
/// times a second; an encoder's sender reports (RFC 3550's minimum
/// interval is 5 s) do not renew a stream.
pub const STREAM_SILENCE: Duration = Duration::from_secs(10);
/// The least time between two reception reports a node passes on for one
/// session and receiving application: an RTP stack reports every second
/// (WebRTC's video) to every five (RFC 3550's minimum interval), and an
/// application that reports more often is thinned to this, so that its
/// RTCP cannot take the overlay's control bandwidth: a report within the
/// gap waits for it to pass, the newest block about each stream in it.
pub const RECEPTION_REPORT_GAP: Duration = Duration::from_millis(500);
/// How many retransmission requests a node passes on a second for one
/// session and receiving application, at most (and
/// [`RETRANSMISSION_REQUEST_BURST`] at once): RTP stacks send a NACK as
/// they find a packet missing and again about a round trip later while it
/// is, one per video frame or so at 25 frames a second even through a
/// lossy stretch; past this an application's NACKs would take the
/// overlay's control bandwidth (the peer also holds them to its budget of
/// control sent alone).
pub const RETRANSMISSION_REQUEST_RATE: f64 = 25.0;
/// How many retransmission requests a node passes on at once for one
/// session and receiving application (audio's and video's NACKs in
/// datagrams of their own, say), at most.
pub const RETRANSMISSION_REQUEST_BURST: f64 = 8.0;
/// The most report blocks a node passes on in one reception report: as
/// many as a report every endpoint carries holds (ten).
const REPORT_BLOCKS_CARRIED: usize = (MAX_RECEPTION_REPORT - 8) / rtcp::REPORT_BLOCK_BYTES;
/// The most streams of its encoder's a node keeps (and names).
pub const MAX_OWN_STREAMS: usize = 32;
/// The most streams delivered to its applications a node keeps (for
/// their keyframe requests and the routing of their RTCP).
pub const MAX_DELIVERED_STREAMS: usize = 1024;

/// One session's retransmission request as a node gathers it: the session,
/// the asking application's SSRC and the entries of its NACKs for each of
/// the session's streams.
type Nacks = (FlowId, u32, Vec<(u32, Vec<rtcp::NackEntry>)>);

/// Add `item`, from the receiving application `app` (by its SSRC) about
/// session `flow`, to that session's and application's group among
/// `groups[first..]` (one datagram's), or to a new one.
fn group<T>(
    groups: &mut Vec<(FlowId, u32, Vec<T>)>,
    first: usize,
    flow: FlowId,
    app: u32,
    item: T,
) {
    match groups[first..]
        .iter_mut()
        .find(|g| g.0 == flow && g.1 == app)
    {
        Some(g) => g.2.push(item),
        None => groups.push((flow, app, vec![item])),
    }
}

/// What a node may still pass on of each session and receiving
/// application (by its SSRC): a budget that fills at a rate up to a burst
/// (a token bucket), kept while the two are heard within
/// [`STREAM_SILENCE`].
#[derive(Debug, Default)]
struct Budgets(Vec<(FlowId, u32, f64, Instant)>);

impl Budgets {
    /// The budget of `flow` and `app` at `at`: full (`burst`) for a pair
    /// not heard before, else filled at `rate` a second since it was last
    /// counted, up to `burst`. Spending it is the caller's.
    fn at(&mut self, flow: FlowId, app: u32, at: Instant, rate: f64, burst: f64) -> &mut f64 {
        let i = match self.0.iter().position(|b| b.0 == flow && b.1 == app) {
            Some(i) => i,
            None => {
                self.0.push((flow, app, burst, at));
                self.0.len() - 1
            }
        };
        let b = &mut self.0[i];
        let filled = at.duration_since(b.3).as_secs_f64() * rate;
        (b.2, b.3) = ((b.2 + filled).min(burst), at);
        &mut b.2
    }

    /// Forget the pairs not heard within [`STREAM_SILENCE`] of `at`.
    fn forget_silent(&mut self, at: Instant) {
        self.0.retain(|b| at.duration_since(b.3) < STREAM_SILENCE);
    }
}

/// The SSRC a node names itself by in the RTCP it sends an encoder of
/// `streams` (one at least): any other than theirs.
fn feedback_ssrc(streams: &[u32]) -> u32 {
    let mut own = !streams[0];
    while streams.contains(&own) {
        own = own.wrapping_add(1);
    }
    own
}

/// A receiving application's reception report about a session that waits
/// for its [`RECEPTION_REPORT_GAP`] to pass.
struct WaitingReport {
    flow: FlowId,
    /// The application's SSRC.
    reporter: u32,
    /// When its gap has passed (the next time it may go).
    due: Instant,
    /// Its blocks, a newer one replacing a waiting one about the same
    /// stream.
    blocks: Vec<rtcp::ReportBlock>,
}

/// The sockets behind [`MediaPorts`].
struct Media {
    input: Option<UdpSocket>,
    input_rtcp: Option<UdpSocket>,
    output: UdpSocket,
    outputs: HashMap<FlowId, SocketAddr>,
    rtcp_outputs: HashMap<FlowId, SocketAddr>,
    type_outputs: HashMap<(FlowId, u8), TypeOutput>,
    feedback: Option<UdpSocket>,
    encoder_feedback: Option<SocketAddr>,
    request_gap: Duration,
    /// The streams delivered to the application.
    streams: Delivered,
    /// The application's own streams.
    own_streams: OwnStreams,
    /// When the last keyframe request went to the encoder.
    last_request: Option<Instant>,
    /// The reception reports each session and receiving application may
    /// still pass on (one per [`RECEPTION_REPORT_GAP`]).
    reported: Budgets,
    /// The reception reports waiting for their gap to pass (see
    /// [`Media::wait_report`]).
    waiting_reports: Vec<WaitingReport>,
    /// The retransmission requests each session and receiving application
    /// may still pass on (see [`RETRANSMISSION_REQUEST_RATE`]).
    nack_budget: Budgets,
    rate_feedback: bool,
    /// The rate offered to the application's own flow, bits/s.
    offered_bps: Option<u64>,
    /// When the encoder was last sent the offered rate, and which.
    rate_told: Option<(Instant, u64)>,
    /// RTCP units waiting for their stream's first RTP packet (see
    /// [`Media::holds`]): flow, stream, since when, the unit.
    held: Vec<(FlowId, u32, Instant, Vec<u8>)>,
}

/// How long an RTCP unit of a stream not yet delivered waits for the
/// stream's first RTP packet, where its flow has ports by payload type
/// (see [`Media::holds`]), before it goes to the flow's RTCP port.
const RTCP_HOLD: Duration = Duration::from_secs(1);

/// The most RTCP units that wait so at once (the oldest goes on then).
const RTCP_HELD_MAX: usize = 16;

/// When the node wakes, and whether for the endpoint's timer: the sooner
/// of the endpoint's deadline and the media's own (a reception report's
/// gap, a held RTCP unit's hold), the endpoint's on a tie.
fn first_wake(endpoint: Option<Instant>, media: Option<Instant>) -> (Option<Instant>, bool) {
    match (endpoint, media) {
        (Some(e), Some(m)) if m < e => (Some(m), false),
        (Some(e), _) => (Some(e), true),
        (None, m) => (m, false),
    }
}

/// `socket` (if any) as a non-blocking Tokio socket.
fn tokio_socket(socket: Option<std::net::UdpSocket>) -> io::Result<Option<UdpSocket>> {
    socket
        .map(|s| {
            s.set_nonblocking(true)?;
            UdpSocket::from_std(s)
        })
        .transpose()
}

/// The streams (RTP SSRCs) a node delivered to its applications: each
/// one's flow and payload type, and when its last RTP packet went. At most
/// [`MAX_DELIVERED_STREAMS`]: a source that sends ever new SSRCs
/// displaces the longest silent.
#[derive(Debug, Default)]
struct Delivered(HashMap<u32, (FlowId, u8, Instant)>);

impl Delivered {
    fn note(&mut self, ssrc: u32, flow: FlowId, pt: u8, now: Instant) {
        if self.0.len() >= MAX_DELIVERED_STREAMS
            && !self.0.contains_key(&ssrc)
            && let Some(oldest) = self.0.iter().min_by_key(|(_, v)| v.2).map(|(&k, _)| k)
        {
            self.0.remove(&oldest);
        }
        self.0.insert(ssrc, (flow, pt, now));
    }

    /// Stream `ssrc`'s flow and payload type, if it was delivered.
    fn get(&self, ssrc: u32) -> Option<(FlowId, u8)> {
        self.0.get(&ssrc).map(|&(f, pt, _)| (f, pt))
    }
}

/// The encoder's streams (RTP SSRCs), each with when its last RTP packet
/// came, in the order they first came.
#[derive(Debug, Default)]
struct OwnStreams(Vec<(u32, Instant)>);

impl OwnStreams {
    /// Note a unit of the encoder's, at `now`: an RTP packet renews its
    /// stream, a goodbye ends the streams it names.
    fn note(&mut self, unit: &[u8], now: Instant) {
        let streams = &mut self.0;
        let Some(ssrc) = rtcp::rtp_ssrc(unit) else {
            let gone = rtcp::goodbyes(unit);
            streams.retain(|(s, _)| !gone.contains(s));
            return;
        };
        match streams.iter_mut().find(|(s, _)| *s == ssrc) {
            Some(s) => s.1 = now,
            None => {
                // An application sending what only looks like RTP names a
                // new stream with every packet: the longest silent goes.
                if streams.len() >= MAX_OWN_STREAMS
                    && let Some(i) = (0..streams.len()).min_by_key(|&i| streams[i].1)
                {
                    streams.remove(i);
                }
                streams.push((ssrc, now));
            }
        }
    }

    /// The streams heard from within [`STREAM_SILENCE`] of `now` (the
    /// silent ones are forgotten).
    fn live(&mut self, now: Instant) -> Vec<u32> {
        self.0
            .retain(|&(_, seen)| now.saturating_duration_since(seen) < STREAM_SILENCE);
        self.0.iter().map(|&(s, _)| s).collect()
    }
}

impl Media {
    /// The sockets and state of `ports`, nothing delivered or budgeted
    /// yet. Must be called within a Tokio runtime.
    fn new(ports: MediaPorts) -> io::Result<Media> {
        let input = tokio_socket(ports.input)?;
        let any: SocketAddr = match ports.outputs.first() {
            Some((_, a)) if a.is_ipv6() => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
            _ => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        };
        let output = std::net::UdpSocket::bind(any)?;
        output.set_nonblocking(true)?;
        let feedback = tokio_socket(ports.feedback)?;
        Ok(Media {
            input,
            input_rtcp: tokio_socket(ports.input_rtcp)?,
            output: UdpSocket::from_std(output)?,
            outputs: ports.outputs.into_iter().collect(),
            rtcp_outputs: ports.rtcp_outputs.into_iter().collect(),
            type_outputs: ports
                .type_outputs
                .into_iter()
                .map(|t| ((t.flow, t.payload_type), t))
                .collect(),
            feedback,
            encoder_feedback: ports.encoder_feedback,
            request_gap: ports.request_gap,
            streams: Delivered::default(),
            own_streams: OwnStreams::default(),
            last_request: None,
            reported: Budgets::default(),
            waiting_reports: Vec::new(),
            nack_budget: Budgets::default(),
            rate_feedback: ports.rate_feedback,
            offered_bps: None,
            rate_told: None,
            held: Vec::new(),
        })
    }
    /// Whether an RTCP `unit` of `flow` must wait for its stream's first
    /// RTP packet: the flow sends some payload types to ports of their
    /// own, and the unit's stream has not been delivered yet, so its
    /// type, and with it its port, is not known. An encoder sends a
    /// stream's first sender report just before its first packet, and a
    /// receiver that took it on another stream's port would time that
    /// stream by it (ffmpeg then shifted a video stream by the audio's
    /// clock); the report goes right after the packet instead.
    fn holds(&self, flow: FlowId, unit: &[u8]) -> bool {
        rtcp::is_rtcp(unit)
            && self.type_outputs.keys().any(|&(f, _)| f == flow)
            && rtcp::rtcp_ssrc(unit).is_some_and(|s| self.streams.get(s).is_none())
    }

    /// The held units due now, oldest first: those of stream `heard` (its
    /// flow and SSRC; its first RTP packet has just gone) and those held
    /// [`RTCP_HOLD`] or longer.
    fn due(&mut self, heard: Option<(FlowId, u32)>, now: Instant) -> Vec<(FlowId, Vec<u8>)> {
        let mut due = Vec::new();
        self.held.retain_mut(|(flow, ssrc, since, unit)| {
            let go =
                heard == Some((*flow, *ssrc)) || now.saturating_duration_since(*since) >= RTCP_HOLD;
            if go {
                due.push((*flow, std::mem::take(unit)));
            }
            !go
        });
        due
    }

    /// Add a receiving application's `blocks` about session `flow` to the
    /// report of theirs that waits for its [`RECEPTION_REPORT_GAP`] (a new
    /// one, due at once, where none waits), each replacing a waiting block
    /// about the same stream; returns how many it replaced. A newer block
    /// about a stream says what the older said: its loss count, highest
    /// sequence number and jitter are the stream's so far, and its last
    /// sender report is the latest (only its fraction lost covers the
    /// newer interval alone).
    fn wait_report(
        &mut self,
        flow: FlowId,
        reporter: u32,
        blocks: Vec<rtcp::ReportBlock>,
        at: Instant,
    ) -> u64 {
        let waiting = self
            .waiting_reports
            .iter_mut()
            .find(|w| w.flow == flow && w.reporter == reporter);
        let Some(w) = waiting else {
            self.waiting_reports.push(WaitingReport {
                flow,
                reporter,
                due: at,
                blocks,
            });
            return 0;
        };
        let before = w.blocks.len();
        let newer = |old: &rtcp::ReportBlock| {
            let source = rtcp::block_source(old);
            blocks.iter().any(|b| rtcp::block_source(b) == source)
        };
        w.blocks.retain(|old| !newer(old));
        let replaced = before - w.blocks.len();
        w.blocks.extend(blocks);
        replaced as u64
    }

    /// When the first waiting reception report may go.
    fn reports_due(&self) -> Option<Instant> {
        self.waiting_reports.iter().map(|w| w.due).min()
    }

    /// When the first held RTCP unit is due without its stream's packet
    /// ([`RTCP_HOLD`] after it was held; see [`Media::holds`]).
    fn held_due(&self) -> Option<Instant> {
        self.held
            .iter()
            .map(|&(_, _, since, _)| since + RTCP_HOLD)
            .min()
    }

    /// Where a unit of `flow` goes, and whether to an RTCP port: the RTP
    /// of a payload type with ports of its own, and the RTCP of its
    /// streams, go to those; other RTCP to the flow's RTCP port, where
    /// there is one; the rest to the flow's output. Notes each RTP
    /// stream's flow and type.
    fn destination(&mut self, flow: FlowId, unit: &[u8]) -> Option<(SocketAddr, bool)> {
        if let (Some(ssrc), Some(pt)) = (rtcp::rtp_ssrc(unit), rtcp::payload_type(unit)) {
            self.streams.note(ssrc, flow, pt, Instant::now());
            let typed = self.type_outputs.get(&(flow, pt)).map(|t| t.rtp);
            return typed
                .or_else(|| self.outputs.get(&flow).copied())
                .map(|a| (a, false));
        }
        if !rtcp::is_rtcp(unit) {
            return self.outputs.get(&flow).map(|&a| (a, false));
        }
        let typed = rtcp::rtcp_ssrc(unit)
            .and_then(|s| self.streams.get(s))
            .filter(|s| s.0 == flow)
            .and_then(|(_, pt)| self.type_outputs.get(&(flow, pt)));
        match typed {
            Some(t) => Some(t.rtcp.map_or((t.rtp, false), |a| (a, true))),
            None => match self.rtcp_outputs.get(&flow) {
                Some(&a) => Some((a, true)),
                None => self.outputs.get(&flow).map(|&a| (a, false)),
            },
        }
    }
}

/// Wait until `socket` (if any) is readable; forever without one.
async fn readable(socket: Option<&UdpSocket>) -> io::Result<()> {
    match socket {
        Some(s) => s.readable().await,
        None => std::future::pending().await,
    }
}

/// The next datagram waiting on `socket`, into `buf`: its length, or
/// `None` when none waits or the receive failed (counted in `errors`; the
/// socket still works, and its readiness brings the caller back).
fn recv_counted(socket: &UdpSocket, buf: &mut [u8], errors: &mut u64) -> Option<usize> {
    match socket.try_recv(buf) {
        Ok(n) => Some(n),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        Err(_) => {
            *errors += 1;
            None
        }
    }
}

/// What [`Node::run`] hands back.
#[derive(Debug)]
pub struct Finished<E> {
    /// The endpoint, after [`Endpoint::handle_close`].
    pub endpoint: E,
    /// What the socket did.
    pub counters: NetCounters,
    /// How long after its due time each timer was handled.
    pub timer_late: DelayHistogram,
}

/// The protocol time `since` after the epoch (saturating past `u64`
/// nanoseconds).
fn protocol_time(since: Duration) -> Time {
    Time::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

/// One endpoint on one UDP socket.
pub struct Node<E> {
    endpoint: E,
    socket: UdpSocket,
    state: quinn_udp::UdpSocketState,
    book: AddrBook,
    start: Instant,
    /// Protocol time at `start`.
    origin: Duration,
    counters: NetCounters,
    timer_late: DelayHistogram,
    /// Whether several datagrams may leave in one GSO send.
    gso: bool,
    media: Option<Media>,
}

impl<E: Endpoint> Node<E> {
    /// Bind a UDP socket at `listen` and put `endpoint` on it. Must be
    /// called within a Tokio runtime (the socket registers with its
    /// reactor).
    pub fn bind(endpoint: E, listen: SocketAddr, book: AddrBook) -> io::Result<Node<E>> {
        let socket = std::net::UdpSocket::bind(listen)?;
        Node::new(endpoint, socket, book)
    }

    /// Put `endpoint` on an already bound socket (a test binds port 0
    /// first to learn the port), with protocol time starting at zero now.
    /// Must be called within a Tokio runtime.
    pub fn new(endpoint: E, socket: std::net::UdpSocket, book: AddrBook) -> io::Result<Node<E>> {
        Node::with_origin(endpoint, socket, book, Duration::ZERO, Instant::now())
    }

    /// As [`Node::new`], with protocol time counted from `epoch` on the
    /// wall clock, which every node of the deployment shares (a node
    /// created before `epoch` starts at zero).
    pub fn with_epoch(
        endpoint: E,
        socket: std::net::UdpSocket,
        book: AddrBook,
        epoch: SystemTime,
    ) -> io::Result<Node<E>> {
        // Both clocks are read together, before the socket is set up: the
        // protocol clock is `origin` at `start`, and whatever time passed
        // between the two readings (the socket's setup, a preemption on a
        // loaded machine) would put this node's clock behind the others'.
        // An emu run once measured one-way delays about a millisecond off
        // its paths' (tests/emu.rs, one_way_links_and_cross_traffic).
        let start = Instant::now();
        let origin = SystemTime::now()
            .duration_since(epoch)
            .unwrap_or(Duration::ZERO);
        Node::with_origin(endpoint, socket, book, origin, start)
    }

    /// As [`Node::with_epoch`], with the epoch an instant of the monotonic
    /// clock: for nodes that share a process (or that were given the
    /// instant by one), whose protocol time must not move when the wall
    /// clock is set. A `meshcast emu` run in CI once lost its cross
    /// traffic mid-run exactly as setting the wall clock seconds forward
    /// does: the endpoints it timed by the wall clock stopped there while
    /// the nodes ran on.
    pub fn with_epoch_instant(
        endpoint: E,
        socket: std::net::UdpSocket,
        book: AddrBook,
        epoch: Instant,
    ) -> io::Result<Node<E>> {
        let start = Instant::now();
        let origin = start.saturating_duration_since(epoch);
        Node::with_origin(endpoint, socket, book, origin, start)
    }

    /// `origin` is the protocol time at the instant `start`.
    fn with_origin(
        endpoint: E,
        socket: std::net::UdpSocket,
        book: AddrBook,
        origin: Duration,
        start: Instant,
    ) -> io::Result<Node<E>> {
        socket.set_nonblocking(true)?;
        let state = quinn_udp::UdpSocketState::new((&socket).into())?;
        let socket = UdpSocket::from_std(socket)?;
        Ok(Node {
            endpoint,
            socket,
            state,
            book,
            start,
            origin,
            counters: NetCounters::default(),
            timer_late: DelayHistogram::default(),
            gso: true,
            media: None,
        })
    }

    /// Send every datagram on its own (`false`) instead of as GSO
    /// batches where the kernel has them (the default). A shaper that
    /// counts each send as one packet, such as a qdisc on a veth whose
    /// peer keeps GSO packets whole, needs them separate: `meshcast emu`
    /// turns GSO off for that reason.
    pub fn set_gso(&mut self, on: bool) {
        self.gso = on;
    }

    /// Carry the application's media through `ports` (the endpoint must
    /// take media: [`Endpoint::handle_media`]). Must be called within a
    /// Tokio runtime.
    pub fn set_media(&mut self, ports: MediaPorts) -> io::Result<()> {
        self.media = Some(Media::new(ports)?);
        Ok(())
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The protocol time now.
    pub fn now(&self) -> Time {
        protocol_time(self.origin + self.start.elapsed())
    }

    /// The protocol time at which the node started.
    fn born(&self) -> Time {
        protocol_time(self.origin)
    }

    /// The real instant of protocol time `t` (now, for a time already
    /// past).
    fn instant(&self, t: Time) -> Instant {
        let since = Duration::from_nanos(t.as_nanos()).saturating_sub(self.origin);
        self.start + since
    }

    /// Run the endpoint until `stop` completes, reporting every event it
    /// emits to `on_event` with the protocol time it was drained at; then
    /// close it ([`Endpoint::handle_close`]), send its last datagrams and
    /// hand it back.
    pub async fn run<F, H>(mut self, stop: F, mut on_event: H) -> io::Result<Finished<E>>
    where
        F: Future<Output = ()>,
        H: FnMut(Time, Event),
    {
        let mut bufs = vec![vec![0u8; RECV_BUF]; RECV_BATCH];
        let mut meta = vec![quinn_udp::RecvMeta::default(); RECV_BATCH];
        let mut media_buf = vec![0u8; RECV_BUF];
        let mut timer = timer::Timer::new()?;
        tokio::pin!(stop);
        loop {
            self.drain(&mut on_event).await?;
            let deadline = self.endpoint.poll_timeout();
            // The node wakes for the endpoint's timer, or for a reception
            // report whose gap passes first, or for a held RTCP unit whose
            // hold ends first (the loop's turn after the wake sends them).
            let endpoint_at = deadline.map(|t| self.instant(t));
            let media_at = self
                .media
                .as_ref()
                .and_then(|m| m.reports_due().into_iter().chain(m.held_due()).min());
            let (wake, for_endpoint) = first_wake(endpoint_at, media_at);
            let sleep = async {
                match wake {
                    Some(at) => timer.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = &mut stop => break,
                ready = self.socket.readable() => {
                    ready?;
                    self.receive(&mut bufs, &mut meta);
                }
                ready = readable(self.media.as_ref().and_then(|m| m.input.as_ref())) => {
                    ready?;
                    self.receive_media(&mut media_buf, false);
                }
                ready = readable(self.media.as_ref().and_then(|m| m.input_rtcp.as_ref())) => {
                    ready?;
                    self.receive_media(&mut media_buf, true);
                }
                ready = readable(self.media.as_ref().map(|m| &m.output)) => {
                    ready?;
                    self.receive_feedback(&mut media_buf, false);
                }
                ready = readable(self.media.as_ref().and_then(|m| m.feedback.as_ref())) => {
                    ready?;
                    self.receive_feedback(&mut media_buf, true);
                }
                slept = sleep => {
                    slept?;
                    let now = self.now();
                    if let Some(due) = deadline.filter(|_| for_endpoint) {
                        // A timer due before the node started (an
                        // endpoint's first, "at once", at time zero) is
                        // late only by the time since the start: from its
                        // own time a node whose epoch lies years back read
                        // it as years late.
                        self.timer_late.record(now.saturating_since(due.max(self.born())));
                        self.endpoint.handle_timeout(now);
                    }
                    self.send_reception_reports(false);
                }
            }
        }
        // Nothing the receivers said is left behind.
        self.send_reception_reports(true);
        let now = self.now();
        self.endpoint.handle_close(now);
        self.drain(&mut on_event).await?;
        Ok(Finished {
            endpoint: self.endpoint,
            counters: self.counters,
            timer_late: self.timer_late,
        })
    }

    /// Hand every media unit waiting on the media input (`rtcp`: the
    /// encoder's RTCP input, which takes RTCP only) to the endpoint,
    /// noting the encoder's streams.
    fn receive_media(&mut self, buf: &mut [u8], rtcp: bool) {
        let Some(media) = self.media.as_mut() else {
            return;
        };
        let input = if rtcp {
            media.input_rtcp.as_ref()
        } else {
            media.input.as_ref()
        };
        let Some(input) = input else {
            return;
        };
        while let Some(n) = recv_counted(input, buf, &mut self.counters.recv_errors) {
            let unit = &buf[..n];
            if rtcp && !rtcp::is_rtcp(unit) {
                self.counters.not_rtcp += 1;
                continue;
            }
            self.counters.media_in += 1;
            self.counters.encoder_reports += u64::from(rtcp);
            media.own_streams.note(unit, Instant::now());
            let now = protocol_time(self.origin + self.start.elapsed());
            if !self.endpoint.handle_media(now, unit) {
                self.counters.media_refused += 1;
            }
        }
    }

    /// Read every RTCP datagram waiting from the receiving applications
    /// (on the feedback socket, or the output socket) and pass each
    /// keyframe request and reception report in them on to the endpoint.
    fn receive_feedback(&mut self, buf: &mut [u8], feedback: bool) {
        // Each datagram's reception reports: the session, the reporting
        // application and its blocks about the session's streams.
        let mut reports: Vec<(FlowId, u32, Vec<rtcp::ReportBlock>)> = Vec::new();
        // And its retransmission requests: the session, the asking
        // application and its NACKs' entries for each of the session's
        // streams.
        let mut requests: Vec<Nacks> = Vec::new();
        let Some(media) = self.media.as_ref() else {
            return;
        };
        let socket = if feedback {
            media.feedback.as_ref()
        } else {
            Some(&media.output)
        };
        let Some(socket) = socket else {
            return;
        };
        // An error here is an ICMP error for an output nobody listens on,
        // say.
        while let Some(n) = recv_counted(socket, buf, &mut self.counters.recv_errors) {
            if !rtcp::is_rtcp(&buf[..n]) {
                continue;
            }
            self.counters.rtcp_in += 1;
            let now = protocol_time(self.origin + self.start.elapsed());
            for ssrc in rtcp::keyframe_requests(&buf[..n]) {
                let asked = media
                    .streams
                    .get(ssrc)
                    .is_some_and(|(flow, _)| self.endpoint.handle_keyframe_request(now, flow));
                if asked {
                    self.counters.keyframe_asks += 1;
                } else {
                    self.counters.keyframe_asks_dropped += 1;
                }
            }
            let first = reports.len();
            for (reporter, block) in rtcp::reception_blocks(&buf[..n]) {
                let Some(&(flow, _)) = media.streams.get(rtcp::block_source(&block)).as_ref()
                else {
                    self.counters.reception_blocks_dropped += 1;
                    continue;
                };
                group(&mut reports, first, flow, reporter, block);
            }
            let first = requests.len();
            for (asker, stream, entries) in rtcp::generic_nacks(&buf[..n]) {
                let Some(&(flow, _)) = media.streams.get(stream).as_ref() else {
                    self.counters.nack_entries_dropped += entries.len() as u64;
                    continue;
                };
                group(&mut requests, first, flow, asker, (stream, entries));
            }
        }
        self.pass_reception_reports(reports);
        self.pass_retransmission_requests(requests);
    }

    /// Pass each session's retransmission request on to the endpoint, at
    /// once, within the budget of its session and application (see
    /// [`RETRANSMISSION_REQUEST_RATE`]).
    fn pass_retransmission_requests(&mut self, requests: Vec<Nacks>) {
        let Some(media) = self.media.as_mut().filter(|_| !requests.is_empty()) else {
            return;
        };
        let at = Instant::now();
        media.nack_budget.forget_silent(at);
        let now = protocol_time(self.origin + self.start.elapsed());
        for (flow, asker, nacks) in requests {
            let entries: usize = nacks.iter().map(|n| n.1.len()).sum();
            let (rate, burst) = (RETRANSMISSION_REQUEST_RATE, RETRANSMISSION_REQUEST_BURST);
            let left = media.nack_budget.at(flow, asker, at, rate, burst);
            if *left < 1.0 {
                self.counters.nack_entries_dropped += entries as u64;
                continue;
            }
            let (request, left_out) =
                rtcp::retransmission_request(asker, &nacks, MAX_RETRANSMISSION_REQUEST);
            self.counters.nack_entries_dropped += left_out as u64;
            if entries > left_out
                && self
                    .endpoint
                    .handle_retransmission_request(now, flow, &request)
            {
                self.counters.retransmission_requests += 1;
                *left -= 1.0;
            } else {
                self.counters.nack_entries_dropped += (entries - left_out) as u64;
            }
        }
    }

    /// Pass each session's reception report on to the endpoint; one
    /// within [`RECEPTION_REPORT_GAP`] of the last of the same session and
    /// application waits until the gap has passed, and what comes meanwhile
    /// joins it (see [`Media::wait_report`]).
    fn pass_reception_reports(&mut self, reports: Vec<(FlowId, u32, Vec<rtcp::ReportBlock>)>) {
        let Some(media) = self.media.as_mut().filter(|_| !reports.is_empty()) else {
            return;
        };
        let at = Instant::now();
        for (flow, reporter, blocks) in reports {
            self.counters.reception_blocks_replaced +=
                media.wait_report(flow, reporter, blocks, at);
        }
        self.send_reception_reports(false);
    }

    /// Pass on the waiting reception reports whose gap has passed (every
    /// one, when `all`: the node is stopping).
    fn send_reception_reports(&mut self, all: bool) {
        let Some(media) = self
            .media
            .as_mut()
            .filter(|m| !m.waiting_reports.is_empty())
        else {
            return;
        };
        let at = Instant::now();
        media.reported.forget_silent(at);
        let now = protocol_time(self.origin + self.start.elapsed());
        // One report a gap: a budget that fills at one a gap, one at most
        // (less a rounding's worth, so that a report due now goes now).
        let rate = 1.0 / RECEPTION_REPORT_GAP.as_secs_f64();
        let mut i = 0;
        while i < media.waiting_reports.len() {
            let w = &mut media.waiting_reports[i];
            let left = media.reported.at(w.flow, w.reporter, at, rate, 1.0);
            if *left < 1.0 - 1e-9 && !all {
                w.due = at + Duration::from_secs_f64((1.0 - *left) / rate);
                i += 1;
                continue;
            }
            let WaitingReport {
                flow,
                reporter,
                blocks,
                ..
            } = media.waiting_reports.remove(i);
            let kept = blocks.len().min(REPORT_BLOCKS_CARRIED);
            self.counters.reception_blocks_dropped += (blocks.len() - kept) as u64;
            let report = rtcp::receiver_report(reporter, &blocks[..kept]);
            if kept > 0 && self.endpoint.handle_reception_report(now, flow, &report) {
                self.counters.reception_reports += 1;
                *left = (*left - 1.0).max(0.0);
            } else {
                self.counters.reception_blocks_dropped += kept as u64;
            }
        }
    }

    /// Send the encoder a receiver's RTCP as it came (a reception report
    /// or a retransmission request), counting it in the pair of counters
    /// `count` picks: sent, or held (no encoder RTCP address, or refused
    /// by the kernel).
    fn tell_encoder_rtcp(
        &mut self,
        rtcp: &[u8],
        count: fn(&mut NetCounters) -> (&mut u64, &mut u64),
    ) {
        let sent = self.media.as_ref().is_some_and(|m| {
            m.encoder_feedback
                .is_some_and(|to| m.output.try_send_to(rtcp, to).is_ok())
        });
        let (went, held) = count(&mut self.counters);
        *if sent { went } else { held } += 1;
    }

    /// Send the encoder the rate offered to its flow (a REMB) when it moved
    /// by [`RATE_REPORT_CHANGE`] from the last sent, or
    /// [`RATE_REPORT_INTERVAL`] after it.
    fn tell_encoder_rate(&mut self) {
        let Some(media) = self.media.as_mut() else {
            return;
        };
        let (true, Some(to), Some(bps)) = (
            media.rate_feedback,
            media.encoder_feedback,
            media.offered_bps,
        ) else {
            return;
        };
        // Called at every turn of the loop: whether a report is due comes
        // first, the streams to name only then.
        let now = Instant::now();
        let due = media.rate_told.is_none_or(|(t, told)| {
            now.duration_since(t) >= RATE_REPORT_INTERVAL
                || bps.abs_diff(told) as f64 >= RATE_REPORT_CHANGE * told as f64
        });
        if !due {
            return;
        }
        let streams = media.own_streams.live(now);
        if streams.is_empty() {
            return;
        }
        let remb = rtcp::estimated_max_bitrate(feedback_ssrc(&streams), bps, &streams);
        if media.output.try_send_to(&remb, to).is_ok() {
            self.counters.encoder_rate_reports += 1;
        }
        // A failed send (nobody at the port yet) is tried again in a
        // second, not at every turn of the loop.
        media.rate_told = Some((now, bps));
    }

    /// Send the encoder a keyframe request (a PLI), unless one went within
    /// the request gap.
    fn ask_encoder(&mut self) {
        let Some(media) = self.media.as_mut() else {
            return;
        };
        let now = Instant::now();
        let recent = media
            .last_request
            .is_some_and(|t| now.duration_since(t) < media.request_gap);
        let streams = media.own_streams.live(now);
        let sent = match media.encoder_feedback {
            Some(to) if !recent && !streams.is_empty() => {
                let pli = rtcp::picture_loss_indication(feedback_ssrc(&streams), &streams);
                media.output.try_send_to(&pli, to).is_ok()
            }
            _ => false,
        };
        if sent {
            media.last_request = Some(now);
            self.counters.encoder_requests += 1;
        } else {
            self.counters.encoder_requests_held += 1;
        }
    }

    /// Send the media units that arrived for the application to its ports
    /// (a stream of a payload type with ports of its own to those; RTCP
    /// units to the flow's RTCP port, where it has one).
    ///
    /// An RTCP unit of a stream not yet delivered waits, where the flow
    /// has ports by payload type, until the stream's first RTP packet has
    /// gone, for at most [`RTCP_HOLD`] (see [`Media::holds`]).
    fn deliver_media(&mut self) {
        let now = Instant::now();
        while let Some((flow, unit)) = self.endpoint.poll_media() {
            if let Some(m) = self.media.as_mut()
                && m.holds(flow, &unit)
                && let Some(ssrc) = rtcp::rtcp_ssrc(&unit)
            {
                m.held.push((flow, ssrc, now, unit));
                if m.held.len() > RTCP_HELD_MAX {
                    let (f, _, _, oldest) = m.held.remove(0);
                    self.send_unit(f, &oldest);
                }
                continue;
            }
            self.send_unit(flow, &unit);
            if let Some(ssrc) = rtcp::rtp_ssrc(&unit) {
                self.send_held(Some((flow, ssrc)), now);
            }
        }
        self.send_held(None, now);
    }

    /// Send the held RTCP units that are due (see [`Media::due`]).
    fn send_held(&mut self, heard: Option<(FlowId, u32)>, now: Instant) {
        let due = match self.media.as_mut() {
            Some(m) if !m.held.is_empty() => m.due(heard, now),
            _ => return,
        };
        for (flow, unit) in due {
            self.send_unit(flow, &unit);
        }
    }

    /// Send one media unit of `flow` to its port (see
    /// [`Media::destination`]), counting it.
    fn send_unit(&mut self, flow: FlowId, unit: &[u8]) {
        let sent = self.media.as_mut().and_then(|m| {
            let (dest, rtcp) = m.destination(flow, unit)?;
            m.output.try_send_to(unit, dest).ok()?;
            Some(rtcp)
        });
        match sent {
            Some(rtcp) => {
                self.counters.media_out += 1;
                self.counters.rtcp_out += u64::from(rtcp);
            }
            None => self.counters.media_dropped += 1,
        }
    }

    /// Read every datagram waiting on the socket into the endpoint.
    fn receive(&mut self, bufs: &mut [Vec<u8>], meta: &mut [quinn_udp::RecvMeta]) {
        loop {
            let state = &self.state;
            let socket = &self.socket;
            let got = socket.try_io(Interest::READABLE, || {
                let mut iovs: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                state.recv(socket.into(), &mut iovs, meta)
            });
            let n = match got {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // An ICMP error surfacing on the socket, for instance:
                    // nothing to read this time, the socket still works.
                    self.counters.recv_errors += 1;
                    return;
                }
            };
            let now = self.now();
            for (m, buf) in meta.iter().zip(bufs.iter()).take(n) {
                let data = &buf[..m.len.min(buf.len())];
                let Some(from) = self.book.addr(m.addr) else {
                    self.counters.unknown_source += 1;
                    continue;
                };
                // With GRO one buffer holds several datagrams of `stride`
                // bytes (the last may be shorter).
                for datagram in data.chunks(m.stride.max(1)) {
                    self.counters.datagrams_in += 1;
                    self.counters.bytes_in += datagram.len() as u64;
                    self.endpoint.handle_datagram(now, from, datagram);
                }
            }
        }
    }

    /// Drain the endpoint's transmits and events; send the transmits.
    async fn drain<H: FnMut(Time, Event)>(&mut self, on_event: &mut H) -> io::Result<()> {
        let now = self.now();
        let mut out: Vec<Transmit> = Vec::new();
        loop {
            let mut any = false;
            while let Some(t) = self.endpoint.poll_transmit(now) {
                out.push(t);
                any = true;
            }
            while let Some(e) = self.endpoint.poll_event() {
                match e {
                    Event::KeyframeRequested { .. } => self.ask_encoder(),
                    Event::ReceptionReported { ref report, .. } => {
                        self.tell_encoder_rtcp(report, |c| {
                            let n = &mut c.encoder_reception_reports;
                            (n, &mut c.encoder_reception_reports_held)
                        });
                    }
                    Event::RetransmissionRequested { ref request, .. } => {
                        self.tell_encoder_rtcp(request, |c| {
                            let n = &mut c.encoder_retransmission_requests;
                            (n, &mut c.encoder_retransmission_requests_held)
                        });
                    }
                    Event::RateOffered { rate, .. } => {
                        if let Some(m) = self.media.as_mut() {
                            m.offered_bps = Some(rate.as_bps());
                        }
                    }
                    _ => {}
                }
                on_event(now, e);
                any = true;
            }
            if !any {
                break;
            }
        }
        self.deliver_media();
        self.tell_encoder_rate();
        self.send_all(out).await
    }

    /// Send `out` in order, one GSO send per run of datagrams to one
    /// destination with one size (the last of a run may be shorter).
    async fn send_all(&mut self, out: Vec<Transmit>) -> io::Result<()> {
        let max_segments = if self.gso {
            self.state.max_gso_segments().max(1)
        } else {
            1
        };
        let mut i = 0;
        let mut batch = Vec::new();
        while i < out.len() {
            let Some(dest) = self.book.socket(out[i].to) else {
                self.counters.unknown_destination += 1;
                i += 1;
                continue;
            };
            let size = out[i].payload.len();
            let mut j = i + 1;
            while j < out.len()
                && j - i < max_segments
                && out[j].to == out[i].to
                && out[j - 1].payload.len() == size
                && out[j].payload.len() <= size
                && size > 0
            {
                j += 1;
            }
            batch.clear();
            for t in &out[i..j] {
                batch.extend_from_slice(&t.payload);
            }
            let count = j - i;
            self.send_one(dest, &batch, (count > 1).then_some(size))
                .await?;
            if count > 1 {
                self.counters.gso_sends += 1;
            }
            i = j;
        }
        Ok(())
    }

    /// One send call: `contents` to `dest`, as segments of `segment` bytes
    /// when given.
    async fn send_one(
        &mut self,
        dest: SocketAddr,
        contents: &[u8],
        segment: Option<usize>,
    ) -> io::Result<()> {
        let count = segment.map_or(1, |s| contents.len().div_ceil(s)) as u64;
        let transmit = quinn_udp::Transmit {
            destination: dest,
            ecn: None,
            contents,
            segment_size: segment,
            src_ip: None,
        };
        loop {
            let state = &self.state;
            let socket = &self.socket;
            let sent = socket.try_io(Interest::WRITABLE, || {
                state.try_send(socket.into(), &transmit)
            });
            match sent {
                Ok(()) => {
                    self.counters.datagrams_out += count;
                    self.counters.bytes_out += contents.len() as u64;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.socket.writable().await?;
                }
                Err(_) => {
                    self.counters.send_errors += count;
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtp(ssrc: u32) -> Vec<u8> {
        let mut p = vec![0x80, 96, 0, 1, 0, 0, 0, 1];
        p.extend_from_slice(&ssrc.to_be_bytes());
        p
    }

    #[test]
    fn an_encoders_streams_are_kept_while_they_send() {
        let t0 = Instant::now();
        let mut s = OwnStreams::default();
        s.note(&rtp(1), t0);
        s.note(&rtp(2), t0 + Duration::from_secs(1));
        s.note(&rtp(1), t0 + Duration::from_secs(2));
        assert_eq!(s.live(t0 + Duration::from_secs(3)), vec![1, 2]);
        // Silent past STREAM_SILENCE: forgotten; a goodbye ends one at once.
        assert_eq!(
            s.live(t0 + STREAM_SILENCE + Duration::from_millis(1500)),
            vec![1]
        );
        s.note(&rtp(3), t0 + Duration::from_secs(3));
        s.note(&[0x81, 203, 0, 1, 0, 0, 0, 1], t0 + Duration::from_secs(3));
        assert_eq!(s.live(t0 + Duration::from_secs(4)), vec![3]);
        // Garbage that looks like RTP names at most MAX_OWN_STREAMS, the
        // latest.
        for k in 0..1000u32 {
            s.note(
                &rtp(100 + k),
                t0 + Duration::from_millis(4000 + u64::from(k)),
            );
        }
        let live = s.live(t0 + Duration::from_secs(6));
        assert_eq!(live.len(), MAX_OWN_STREAMS);
        assert!(
            live.iter().all(|&x| x >= 1100 - MAX_OWN_STREAMS as u32),
            "{live:?}"
        );
    }

    #[test]
    fn the_delivered_streams_are_bounded() {
        let t0 = Instant::now();
        let mut d = Delivered::default();
        d.note(7, FlowId(1), 96, t0);
        assert_eq!(d.get(7), Some((FlowId(1), 96)));
        assert_eq!(d.get(8), None);
        // Ever new SSRCs displace the longest silent; one that keeps
        // sending stays.
        for k in 0..3000u32 {
            let now = t0 + Duration::from_millis(u64::from(k) + 1);
            d.note(1000 + k, FlowId(2), 97, now);
            d.note(7, FlowId(1), 96, now);
        }
        assert_eq!(d.0.len(), MAX_DELIVERED_STREAMS);
        assert_eq!(d.get(7), Some((FlowId(1), 96)));
        assert_eq!(d.get(3999), Some((FlowId(2), 97)));
        assert_eq!(d.get(1000), None);
    }

    /// A sender report of a stream not delivered yet, on a flow with ports
    /// by payload type, waits for the stream's first RTP packet and then
    /// goes to its type's RTCP port; one that hears none goes to the
    /// flow's RTCP port after `RTCP_HOLD`. A flow without typed ports
    /// holds nothing.
    #[tokio::test]
    async fn a_report_of_a_stream_not_heard_yet_waits_for_its_first_packet() {
        let at = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let (typed, plain) = (FlowId(0), FlowId(1));
        let mut m = Media::new(MediaPorts {
            outputs: vec![(typed, at(5000)), (plain, at(5100))],
            rtcp_outputs: vec![(typed, at(5001)), (plain, at(5101))],
            type_outputs: vec![TypeOutput {
                flow: typed,
                payload_type: 97,
                rtp: at(5002),
                rtcp: Some(at(5003)),
            }],
            ..MediaPorts::default()
        })
        .expect("media");
        let report = |ssrc: u32| {
            let mut p = vec![0x80, 200, 0, 6];
            p.extend_from_slice(&ssrc.to_be_bytes());
            p.extend_from_slice(&[0; 20]);
            p
        };
        let (audio, video) = (0xA0D1, 0x0F1D);
        let mut audio_rtp = rtp(audio);
        audio_rtp[1] = 97;
        audio_rtp.extend_from_slice(&[0; 8]);
        assert!(m.holds(typed, &report(audio)));
        assert!(!m.holds(plain, &report(audio)), "no typed ports");
        assert!(!m.holds(typed, &audio_rtp), "RTP goes at once");
        let t0 = Instant::now();
        m.held.push((typed, audio, t0, report(audio)));
        m.held
            .push((typed, video, t0 + Duration::from_millis(10), report(video)));
        // The node wakes when the first hold ends.
        assert_eq!(m.held_due(), Some(t0 + RTCP_HOLD));
        assert!(m.due(None, t0 + RTCP_HOLD / 2).is_empty());
        // The audio's first packet: its report is due, to the audio's
        // RTCP port; the video's still waits.
        assert_eq!(m.destination(typed, &audio_rtp), Some((at(5002), false)));
        assert!(!m.holds(typed, &report(audio)));
        let due = m.due(Some((typed, audio)), t0 + RTCP_HOLD / 2);
        assert_eq!(due, vec![(typed, report(audio))]);
        assert_eq!(m.destination(typed, &due[0].1), Some((at(5003), true)));
        // The video's, never heard: after RTCP_HOLD, to the flow's RTCP port.
        let video_due = t0 + Duration::from_millis(10) + RTCP_HOLD;
        assert_eq!(m.held_due(), Some(video_due));
        assert_eq!(m.due(Some((typed, audio)), t0 + RTCP_HOLD / 2), vec![]);
        assert_eq!(m.due(None, video_due - Duration::from_millis(1)), vec![]);
        let due = m.due(None, video_due);
        assert_eq!(due, vec![(typed, report(video))]);
        assert_eq!(m.destination(typed, &due[0].1), Some((at(5001), true)));
        assert!(m.held.is_empty());
        assert_eq!(m.held_due(), None);
    }

    /// The node wakes at the sooner of the endpoint's timer and the
    /// media's own deadline, and hands the endpoint its timeout only when
    /// the wake is the endpoint's.
    #[test]
    fn the_node_wakes_for_the_sooner_of_its_timers() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_millis(5);
        assert_eq!(first_wake(None, None), (None, false));
        assert_eq!(first_wake(Some(t0), None), (Some(t0), true));
        assert_eq!(first_wake(None, Some(t0)), (Some(t0), false));
        assert_eq!(first_wake(Some(later), Some(t0)), (Some(t0), false));
        assert_eq!(first_wake(Some(t0), Some(later)), (Some(t0), true));
        assert_eq!(first_wake(Some(t0), Some(t0)), (Some(t0), true));
    }

    #[test]
    fn the_nodes_own_ssrc_is_none_of_its_encoders() {
        assert_eq!(feedback_ssrc(&[5]), !5);
        assert_eq!(feedback_ssrc(&[5, !5, !5 + 1]), !5 + 2);
    }
}
