//! Celerity's packets (docs/wire-format.md has the byte layout).
//!
//! Every Celerity packet starts with the common header and a 6-byte link
//! header — the per-overlay-link sequence number and send timestamp from
//! which the tail node measures loss and queuing delay (§5.1). A data
//! packet then carries the session's control-plane fields (§5.1,
//! Algorithm 2: utility derivative and critical cut), the self-routing
//! tree entries for the receiving subtree, optional piggybacked control
//! messages and the media payload. A control packet carries only control
//! messages (TLVs).

use half::f16;

use crate::wire::{COMMON_HEADER_LEN, CommonHeader, PacketType, WireError, be_u16, be_u32};

/// Bytes of the link header.
pub const LINK_HEADER_LEN: usize = 6;
/// Bytes of a data header without tree entries, with one-byte member masks
/// (every mask of the packet below 256: conferences of up to 8 members).
pub const DATA_FIXED_LEN: usize = 14;
/// Bytes per tree entry with one-byte masks (a member and its children).
pub const ENTRY_LEN: usize = 2;
/// The most participants a conference can have (cut sides and children
/// travel as 16-bit masks).
pub const MAX_PARTICIPANTS: usize = 16;

/// Per-overlay-link sequence number and send time (§5.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkHeader {
    /// Sequence number of this packet on this overlay link (all
    /// sessions' data, control and repairs share it).
    pub hop_seq: u16,
    /// The head node's clock when it sent the packet, µs (wrapping).
    pub hop_ts_us: u32,
}

/// One internal node of the subtree a data packet still has to reach:
/// the member and the members it forwards to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    /// The member.
    pub member: u8,
    /// Bit `i`: forward to member `i`.
    pub children: u16,
}

/// The fixed part of a data packet after the link header.
#[derive(Clone, Debug, PartialEq)]
pub struct DataHeader {
    /// The session (its source's participant index).
    pub session: u8,
    /// The session's media sequence number.
    pub media_seq: u32,
    /// The source's clock when the media was sent or, for an application's
    /// unit, when the application handed it over, µs (wrapping): the delay
    /// bound counts from it.
    pub origin_ts_us: u32,
    /// `U′(R)` of the session (Algorithm 2 line 10). It travels as an IEEE
    /// half-precision float (0.05% relative precision, saturating at
    /// 65504), so a parsed header holds the value rounded to that.
    pub uprime: f32,
    /// Critical cut, relay side as a member mask (see `meshcast_plan::Cut`).
    pub relay_side: u16,
    /// Critical cut, receiver side as a member mask.
    pub recv_side: u16,
    /// The subtree below the receiving member, internal nodes only.
    pub entries: Vec<TreeEntry>,
    /// The payload is padding, not media: a source carrying application
    /// media sends it to measure its trees before the application's
    /// first media. Relayed like media, never delivered.
    pub padding: bool,
    /// How long this copy waits, by the head's estimate, behind the copies
    /// it sent just before in the same instant (its other children's, of
    /// this packet and of others), µs: the tail takes it off the queuing
    /// delay it measures (docs/celerity.md, "The burst's wait"). It
    /// travels in [`WAIT_UNIT_US`] units (one byte, only when not zero), so
    /// a parsed header holds it rounded to them. Per copy, like `entries`;
    /// local loss recovery's coded data leaves it out.
    pub burst_wait_us: u32,
    /// How long the packet has queued since its source sent it, µs: what
    /// it waited at the source after its origin time, plus each link's
    /// one-way delay above that link's base as the link's tail measured it
    /// (a relay forwards the sum with its own link's part added). The
    /// tails' age guard charges this part of a packet's age, not the
    /// propagation of a longer path above (docs/celerity.md, "The hops'
    /// queues"). It travels in [`WAIT_UNIT_US`] units (one byte, only when
    /// not zero, saturating at 127.5 ms); per copy, and left out of local
    /// loss recovery's coded data like the burst wait.
    pub queued_us: u32,
    /// The media is a bundle of an application's units, each preceded by
    /// its length (a big-endian `u16`; see [`push_bundle_unit`] and
    /// [`bundle_units`]): a source whose units are short for its rate
    /// sends several in one packet rather than one header per unit
    /// (docs/celerity.md, "Bundles"). A parsed packet with the flag has
    /// been checked to hold whole units, at least one, none empty. Not per
    /// copy: relays and local loss recovery carry it as it came.
    pub bundle: bool,
    /// The source sent the packet with its frame's units before it, on
    /// burst credit, sooner after its last packet than the session's rate
    /// spaces them (an application's frame leaving in a burst): what it
    /// queues behind them is the frame's own queue, which tails with
    /// `ahead_at_frame` count as no more than the queue the frame met
    /// (docs/celerity.md, "Packets sent ahead"). Not per copy: relays and
    /// local loss recovery carry it as it came.
    pub ahead: bool,
}

impl DataHeader {
    /// Bytes this header takes on the wire (after common and link header,
    /// before control messages and payload), without the control length
    /// byte a packet that carries control adds.
    pub fn len(&self) -> usize {
        let extra = usize::from(self.wide());
        let wait = usize::from(wait_to_wire(self.burst_wait_us) > 0);
        let queued = usize::from(wait_to_wire(self.queued_us) > 0);
        DATA_FIXED_LEN + 2 * extra + wait + queued + (ENTRY_LEN + extra) * self.entries.len()
    }

    /// Whether some member mask needs two bytes (a member index of 8 or
    /// more in a cut side or among an entry's children).
    fn wide(&self) -> bool {
        self.relay_side > 0xFF
            || self.recv_side > 0xFF
            || self.entries.iter().any(|e| e.children > 0xFF)
    }

    /// Whether the header has no tree entries (the receiver is a leaf).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A control message (§5.1, Algorithms 1 and 2).
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// Tail → head: the new per-session rates of the head's link to the
    /// tail, and an echo of the latest link timestamp for the head's RTT.
    RateUpdate {
        /// The last `hop_ts_us` the tail received from the head.
        echo_ts_us: u32,
        /// How long the tail held it before this message, µs.
        hold_us: u32,
        /// `(session, rate bits/s)`. Rates travel as [`rate_to_wire`]'s
        /// codes, so parsed ones are rounded to them.
        rates: Vec<(u8, u32)>,
    },
    /// Head → source: the session's rates on the head's outgoing links.
    LinkState {
        /// The session.
        session: u8,
        /// `(tail member, rate bits/s, one-way delay in 100 µs)`; rates as
        /// in [`Control::RateUpdate`].
        links: Vec<(u8, u32, u16)>,
    },
    /// Source → members: the session's `U′` and critical cut, for when no
    /// data carries them (the session sends nothing).
    SessionState {
        /// The session.
        session: u8,
        /// `U′(R)`.
        uprime: f32,
        /// Relay side of the critical cut.
        relay_side: u16,
        /// Receiver side of the critical cut.
        recv_side: u16,
    },
    /// "I am here" (sent on start and answered once).
    Hello {
        /// The sender's own start window is over: a member that greets it
        /// soon after starting joined a running conference (see
        /// `CelerityParams::join_rate`). One byte whose lowest bit says
        /// so; a greeting without a body (the form before the flag) is
        /// not running.
        running: bool,
    },
    /// "I am leaving."
    Bye,
    /// "A route under one of my links just changed": the sender read a
    /// route that changed under the overlay (see
    /// `CelerityParams::path_changes`), and tells every member it hears
    /// directly, so that they find the split again too (see
    /// `CelerityParams::route_news`). No body; a body a later version adds
    /// is ignored.
    RouteChanged,
    /// Tail → head: "send me a control packet alone": the tail read a data
    /// packet from the head faster than any before (a route that may have
    /// become shorter, see `CelerityParams::ask_alone`), and a shorter
    /// route is read only from a control packet that came alone too. No
    /// body; a body a later version adds is ignored.
    AskAlone,
    /// Head → tail: the control packet a [`Control::AskAlone`] asked for,
    /// sent alone at once. It says nothing else: its one-way delay is what
    /// the tail measures. No body; a body a later version adds is ignored.
    Alone,
    /// The members whose packets the sender receives directly (bit `i` =
    /// member `i`'s overlay link to the sender is alive). Neighbours use it
    /// to pick a relay for control that cannot go direct.
    Reach {
        /// Bit mask of members heard directly.
        hears: u16,
    },
    /// Tail → head: the loss rate the tail measures on the head's link to
    /// it (before local recovery), so that the head knows whether coded
    /// repairs are worth sending there (§5.4). Sent with rate updates
    /// while recovery is on.
    LinkLoss {
        /// Fraction of the link's packets lost, in units of 1/65535.
        loss: u16,
    },
    /// Tail → head: how long the head's link to the tail takes to
    /// serialise one byte more, summed over the path's hops (the tail
    /// measures it from the difference of its data and control packets'
    /// base delays), so that the sources can size their packets for their
    /// trees' paths (see `CelerityParams::size_target`). Sent with rate
    /// updates when it moved or every [`SERIALISATION_HEARTBEAT`].
    Serialisation {
        /// Seconds per byte, in units of [`SERIALISATION_UNIT`]
        /// (saturating).
        per_byte: u16,
    },
    /// Head → source: [`Control::Serialisation`] of the head's outgoing
    /// links, as their tails last said, for the source's packet size. Sent
    /// with link-state reports when one moved or every
    /// [`SERIALISATION_HEARTBEAT`].
    Serialisations {
        /// `(tail member, seconds per byte in units of
        /// [`SERIALISATION_UNIT`])`.
        links: Vec<(u8, u16)>,
    },
    /// Receiver → source: the receiver's application lost a frame of the
    /// session and can show nothing more until a keyframe (a picture loss
    /// indication); the source hands the request to its application
    /// ([`meshcast_core::Event::KeyframeRequested`]).
    KeyframeRequest {
        /// The session.
        session: u8,
    },
    /// Receiver → source: the receiver's application's report of how it
    /// receives the session's streams (an RTCP receiver report, carried
    /// as its bytes, at most [`MAX_RECEPTION_REPORT`]); the source hands it
    /// to its application ([`meshcast_core::Event::ReceptionReported`]).
    ReceptionReport {
        /// The session.
        session: u8,
        /// The report (at least one byte).
        report: Vec<u8>,
    },
    /// Receiver → source: the receiver's application's request to send
    /// again packets of the session's streams it lost (an RTCP compound
    /// packet of generic NACKs, carried as its bytes, at most
    /// [`MAX_RETRANSMISSION_REQUEST`]); the source hands it to its
    /// application ([`meshcast_core::Event::RetransmissionRequested`]).
    RetransmissionRequest {
        /// The session.
        session: u8,
        /// The request (at least one byte).
        request: Vec<u8>,
    },
    /// Control from `origin` for `dest`, carried by a neighbour because the
    /// overlay link between them is down. The relay forwards it to `dest`
    /// directly (one relay hop; relays are never nested).
    Relay {
        /// The member that wrote the messages.
        origin: u8,
        /// The member they are for.
        dest: u8,
        /// The messages (no `Relay` among them).
        inner: Vec<Control>,
    },
}

/// The data header's first byte: the session in the low four bits, and
/// flags.
const SESSION_MASK: u8 = 0x0F;
/// Member masks take two bytes (else one).
const FLAG_WIDE: u8 = 0x10;
/// A control length byte follows the entry count, and that many bytes of
/// control messages follow the entries.
const FLAG_CONTROL: u8 = 0x20;
/// The payload is padding ([`DataHeader::padding`]).
const FLAG_PADDING: u8 = 0x40;
/// A byte with the burst wait ([`DataHeader::burst_wait_us`]) follows the
/// entry count (and the control length byte).
const FLAG_WAIT: u8 = 0x80;

/// The bits of the entry-count byte that count entries (at most 16); the
/// others are flags.
const ENTRIES_MASK: u8 = 0x1F;
/// In the entry-count byte: a byte with the queued time
/// ([`DataHeader::queued_us`]) follows the entry count (and the control
/// length and burst wait bytes).
const ENTRIES_QUEUED: u8 = 0x80;
/// In the entry-count byte: the media is a bundle ([`DataHeader::bundle`]).
const ENTRIES_BUNDLE: u8 = 0x40;
/// In the entry-count byte: the packet was sent ahead of the rate
/// ([`DataHeader::ahead`]).
const ENTRIES_AHEAD: u8 = 0x20;

/// The bytes before each unit of a bundle (its length).
pub const BUNDLE_PREFIX: usize = 2;

/// Append `unit` (1 to 65535 bytes) to a bundle's media in `out`.
pub fn push_bundle_unit(out: &mut Vec<u8>, unit: &[u8]) {
    assert!(
        !unit.is_empty() && unit.len() <= usize::from(u16::MAX),
        "a bundled unit is 1 to 65535 bytes"
    );
    out.extend_from_slice(&(unit.len() as u16).to_be_bytes());
    out.extend_from_slice(unit);
}

/// The units of a bundle's media, in order. Media that is not a whole
/// number of units ends the iteration at the first unit that does not
/// fit; a parsed packet's bundle has been checked ([`DataHeader::bundle`]).
pub fn bundle_units(media: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = media;
    std::iter::from_fn(move || {
        if rest.len() < BUNDLE_PREFIX {
            return None;
        }
        let len = usize::from(be_u16(rest, 0));
        let unit = rest.get(BUNDLE_PREFIX..BUNDLE_PREFIX + len)?;
        rest = &rest[BUNDLE_PREFIX + len..];
        Some(unit)
    })
}

/// How many of an application's units a data packet with `header` and
/// `media` carries: a bundle's count, else one.
pub fn media_units(header: &DataHeader, media: &[u8]) -> usize {
    if header.bundle {
        bundle_units(media).count()
    } else {
        1
    }
}

/// Whether `media` is a well-formed bundle: whole units, at least one,
/// none empty.
fn bundle_is_whole(media: &[u8]) -> bool {
    let mut whole = 0;
    for unit in bundle_units(media) {
        if unit.is_empty() {
            return false;
        }
        whole += BUNDLE_PREFIX + unit.len();
    }
    whole > 0 && whole == media.len()
}

/// The unit a data packet's per-copy times (its burst wait and its queued
/// time) travel in, µs: one byte reaches 127.5 ms, more than the last of
/// seven children's copies of 1400 bytes waits behind the other six at
/// 600 kbit/s (116 ms), and rounding to it is at most 0.25 ms off, a tenth
/// of the queue one 400-byte packet makes at 1.2 Mbit/s.
pub const WAIT_UNIT_US: u32 = 500;

/// A per-copy time in µs as it travels: the nearest [`WAIT_UNIT_US`]
/// units, saturating at 255 (0: no byte).
pub fn wait_to_wire(us: u32) -> u8 {
    ((u64::from(us) + u64::from(WAIT_UNIT_US / 2)) / u64::from(WAIT_UNIT_US)).min(255) as u8
}

const TLV_RATE: u8 = 1;
const TLV_STATE: u8 = 2;
const TLV_HELLO: u8 = 3;
const TLV_BYE: u8 = 4;
const TLV_SESSION: u8 = 5;
const TLV_REACH: u8 = 6;
const TLV_RELAY: u8 = 7;
const TLV_LOSS: u8 = 8;
const TLV_SERIAL: u8 = 9;
const TLV_SERIALS: u8 = 10;
const TLV_KEYFRAME: u8 = 11;
const TLV_RECEPTION: u8 = 12;
const TLV_RETRANSMIT: u8 = 13;
const TLV_ROUTE: u8 = 14;
const TLV_ASK_ALONE: u8 = 15;
const TLV_ALONE: u8 = 16;

/// The most bytes a [`Control::ReceptionReport`] carries: a message body
/// holds 255, one of which names the session (an RTCP receiver report with
/// up to ten report blocks).
pub const MAX_RECEPTION_REPORT: usize = 254;
// Every report the endpoint contract has a peer carry fits.
const _: () = assert!(MAX_RECEPTION_REPORT >= meshcast_core::MAX_RECEPTION_REPORT);
/// The most bytes a [`Control::RetransmissionRequest`] carries, as a
/// reception report.
pub const MAX_RETRANSMISSION_REQUEST: usize = MAX_RECEPTION_REPORT;
const _: () = assert!(MAX_RETRANSMISSION_REQUEST >= meshcast_core::MAX_RETRANSMISSION_REQUEST);

/// A rate update's body: echo and hold (two `u32`), then per session its
/// index and rate code.
const RATE_FIXED: usize = 8;
const RATE_ENTRY: usize = 3;
/// A link state's body: the session, then per link its tail, rate code
/// and delay.
const STATE_FIXED: usize = 1;
const STATE_ENTRY: usize = 5;
/// The most `(session, rate)` pairs one rate update carries (its TLV body
/// holds at most 255 bytes); more are left out.
const MAX_RATES: usize = (255 - RATE_FIXED) / RATE_ENTRY;
/// The most links one link state carries; more are left out.
const MAX_STATE_LINKS: usize = (255 - STATE_FIXED) / STATE_ENTRY;

/// A rate in bit/s as it travels in rate updates and link states: an
/// unsigned 16-bit float with a 5-bit exponent and an 11-bit fraction.
/// Below 2048 bit/s the code is the rate itself; from there on the top
/// twelve significant bits are kept, rounded to the nearest (at most
/// 0.025% off, 1/40 of the 1% by which a rate must move before it is
/// sent again). Every rate a `u32` holds has a code; the largest codes
/// decode past `u32::MAX` and saturate there.
///
/// Four bytes of bit/s each (until the fifth session of 2026-11-29) made
/// rate updates and link states most of the control bytes of conferences
/// of eight members: 5% of all bytes sent behind uploads of 0.5–2 Mbit/s
/// (docs/celerity.md, "Compact rates in control").
pub fn rate_to_wire(bps: u32) -> u16 {
    if bps < 2048 {
        return bps as u16;
    }
    // Keep the top twelve bits, rounded to the nearest.
    let mut shift = 20 - bps.leading_zeros();
    let mut top = ((u64::from(bps) + (1u64 << shift >> 1)) >> shift) as u32;
    if top == 4096 {
        top = 2048;
        shift += 1;
    }
    (((shift + 1) << 11) | (top - 2048)) as u16
}

/// The rate in bit/s a [`rate_to_wire`] code stands for (saturating at
/// `u32::MAX`).
pub fn rate_from_wire(code: u16) -> u32 {
    let (e, m) = (u32::from(code >> 11), u64::from(code & 0x7FF));
    if e == 0 {
        return m as u32;
    }
    ((2048 + m) << (e - 1)).min(u64::from(u32::MAX)) as u32
}

/// The unit of [`Control::Serialisation`]: 10 ns per byte (a 600 kbit/s
/// hop is 1333 units; 65535 units is a path of 12.2 kbit/s).
pub const SERIALISATION_UNIT: f64 = 1e-8;

/// How often a tail repeats its link's [`Control::Serialisation`] and a
/// head its links' [`Control::Serialisations`] to a source when nothing
/// moved (a base delay changes over minutes, if at all; the repeats stand
/// for a lost message).
pub const SERIALISATION_HEARTBEAT: meshcast_core::Duration = meshcast_core::Duration::from_secs(10);

/// Why a Celerity packet was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CelerityWireError {
    /// The common header was bad.
    #[error(transparent)]
    Common(#[from] WireError),
    /// A length field points past the end of the packet.
    #[error("{what} runs past the end of the packet")]
    Truncated {
        /// What was being read.
        what: &'static str,
    },
    /// A field holds an impossible value.
    #[error("invalid {0}")]
    Invalid(&'static str),
}

fn need(buf: &[u8], n: usize, what: &'static str) -> Result<(), CelerityWireError> {
    if buf.len() < n {
        Err(CelerityWireError::Truncated { what })
    } else {
        Ok(())
    }
}

/// The byte at `*o` when a flag says it is `present` (moving `*o` past
/// it), 0 when not.
fn optional_byte(
    buf: &[u8],
    o: &mut usize,
    present: bool,
    what: &'static str,
) -> Result<u8, CelerityWireError> {
    if !present {
        return Ok(0);
    }
    need(buf, *o + 1, what)?;
    *o += 1;
    Ok(buf[*o - 1])
}

/// A parsed Celerity packet borrowing its payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Packet<'a> {
    /// Data with piggybacked control and media.
    Data {
        /// Link header.
        link: LinkHeader,
        /// Data header.
        header: DataHeader,
        /// Piggybacked control messages.
        control: Vec<Control>,
        /// Media payload.
        media: &'a [u8],
    },
    /// Control messages only.
    Control {
        /// Link header.
        link: LinkHeader,
        /// The messages.
        control: Vec<Control>,
    },
    /// A coded repair for local loss recovery (§5.4).
    Repair {
        /// Link header.
        link: LinkHeader,
        /// The coded symbol (`meshcast_coding::Symbol` datagram), its
        /// trailing zeros possibly left out.
        symbol: &'a [u8],
    },
}

/// Parse a Celerity packet; every length is checked, nothing panics.
pub fn parse(buf: &[u8]) -> Result<Packet<'_>, CelerityWireError> {
    let common = CommonHeader::parse(buf)?;
    let rest = &buf[COMMON_HEADER_LEN..];
    need(rest, LINK_HEADER_LEN, "link header")?;
    let link = LinkHeader {
        hop_seq: be_u16(rest, 0),
        hop_ts_us: be_u32(rest, 2),
    };
    parse_after_link(common.packet_type, link, &rest[LINK_HEADER_LEN..])
}

/// A Celerity packet's body after its link header.
fn parse_after_link(
    packet_type: PacketType,
    link: LinkHeader,
    rest: &[u8],
) -> Result<Packet<'_>, CelerityWireError> {
    match packet_type {
        PacketType::CelerityRepair => {
            need(rest, 1, "repair")?;
            Ok(Packet::Repair { link, symbol: rest })
        }
        PacketType::CelerityControl => Ok(Packet::Control {
            link,
            control: parse_control(rest)?,
        }),
        PacketType::CelerityData => {
            need(rest, DATA_FIXED_LEN, "data header")?;
            let flags = rest[0];
            // Every bit of the byte has its meaning (no reserved bits left).
            let session = flags & SESSION_MASK;
            let wide = flags & FLAG_WIDE != 0;
            let mask_len = if wide { 2 } else { 1 };
            need(rest, DATA_FIXED_LEN + 2 * (mask_len - 1), "data header")?;
            let mask = |o: usize| {
                if wide {
                    be_u16(rest, o)
                } else {
                    u16::from(rest[o])
                }
            };
            let uprime = f16::from_bits(be_u16(rest, 9)).to_f32();
            if !uprime.is_finite() || uprime < 0.0 {
                return Err(CelerityWireError::Invalid("utility derivative"));
            }
            let relay_side = mask(11);
            let recv_side = mask(11 + mask_len);
            let mut o = 11 + 2 * mask_len;
            let count = rest[o];
            let n_entries = usize::from(count & ENTRIES_MASK);
            o += 1;
            if n_entries > MAX_PARTICIPANTS {
                return Err(CelerityWireError::Invalid("entry count"));
            }
            let mut byte = |present: bool, what| optional_byte(rest, &mut o, present, what);
            let ctl_len = usize::from(byte(flags & FLAG_CONTROL != 0, "control length")?);
            let burst_wait_us =
                u32::from(byte(flags & FLAG_WAIT != 0, "burst wait")?) * WAIT_UNIT_US;
            let queued_us =
                u32::from(byte(count & ENTRIES_QUEUED != 0, "queued time")?) * WAIT_UNIT_US;
            let entry_len = 1 + mask_len;
            need(
                rest,
                o + entry_len * n_entries + ctl_len,
                "tree entries and control",
            )?;
            let mut entries = Vec::with_capacity(n_entries);
            for _ in 0..n_entries {
                let member = rest[o];
                if usize::from(member) >= MAX_PARTICIPANTS {
                    return Err(CelerityWireError::Invalid("tree entry member"));
                }
                entries.push(TreeEntry {
                    member,
                    children: mask(o + 1),
                });
                o += entry_len;
            }
            let header = DataHeader {
                session,
                media_seq: be_u32(rest, 1),
                origin_ts_us: be_u32(rest, 5),
                uprime,
                relay_side,
                recv_side,
                entries,
                padding: flags & FLAG_PADDING != 0,
                burst_wait_us,
                queued_us,
                bundle: count & ENTRIES_BUNDLE != 0,
                ahead: count & ENTRIES_AHEAD != 0,
            };
            let control = parse_control(&rest[o..o + ctl_len])?;
            let media = &rest[o + ctl_len..];
            if header.bundle && !bundle_is_whole(media) {
                return Err(CelerityWireError::Invalid("bundle"));
            }
            Ok(Packet::Data {
                link,
                header,
                control,
                media,
            })
        }
        other => Err(CelerityWireError::Common(WireError::WrongType {
            expected: PacketType::CelerityData,
            got: other,
        })),
    }
}

pub(crate) fn parse_control(buf: &[u8]) -> Result<Vec<Control>, CelerityWireError> {
    parse_tlvs(buf, true)
}

fn parse_tlvs(mut buf: &[u8], outer: bool) -> Result<Vec<Control>, CelerityWireError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        need(buf, 2, "control message header")?;
        let (kind, len) = (buf[0], usize::from(buf[1]));
        need(buf, 2 + len, "control message")?;
        let body = &buf[2..2 + len];
        match kind {
            TLV_RATE => {
                if len < RATE_FIXED || (len - RATE_FIXED) % RATE_ENTRY != 0 {
                    return Err(CelerityWireError::Invalid("rate update length"));
                }
                let rates = (0..(len - RATE_FIXED) / RATE_ENTRY)
                    .map(|i| {
                        let o = RATE_FIXED + RATE_ENTRY * i;
                        (body[o], rate_from_wire(be_u16(body, o + 1)))
                    })
                    .collect();
                out.push(Control::RateUpdate {
                    echo_ts_us: be_u32(body, 0),
                    hold_us: be_u32(body, 4),
                    rates,
                });
            }
            TLV_STATE => {
                if len < STATE_FIXED || (len - STATE_FIXED) % STATE_ENTRY != 0 {
                    return Err(CelerityWireError::Invalid("link state length"));
                }
                let links = (0..(len - STATE_FIXED) / STATE_ENTRY)
                    .map(|i| {
                        let o = STATE_FIXED + STATE_ENTRY * i;
                        (
                            body[o],
                            rate_from_wire(be_u16(body, o + 1)),
                            be_u16(body, o + 3),
                        )
                    })
                    .collect();
                out.push(Control::LinkState {
                    session: body[0],
                    links,
                });
            }
            TLV_SESSION => {
                if len != 9 {
                    return Err(CelerityWireError::Invalid("session state length"));
                }
                let uprime = f32::from_bits(be_u32(body, 1));
                if !uprime.is_finite() || uprime < 0.0 {
                    return Err(CelerityWireError::Invalid("utility derivative"));
                }
                out.push(Control::SessionState {
                    session: body[0],
                    uprime,
                    relay_side: be_u16(body, 5),
                    recv_side: be_u16(body, 7),
                });
            }
            TLV_HELLO => out.push(Control::Hello {
                running: body.first().is_some_and(|b| b & 1 != 0),
            }),
            TLV_BYE => out.push(Control::Bye),
            TLV_ROUTE => out.push(Control::RouteChanged),
            TLV_ASK_ALONE => out.push(Control::AskAlone),
            TLV_ALONE => out.push(Control::Alone),
            TLV_REACH => {
                if len != 2 {
                    return Err(CelerityWireError::Invalid("reach length"));
                }
                out.push(Control::Reach {
                    hears: be_u16(body, 0),
                });
            }
            TLV_LOSS => {
                if len != 2 {
                    return Err(CelerityWireError::Invalid("link loss length"));
                }
                out.push(Control::LinkLoss {
                    loss: be_u16(body, 0),
                });
            }
            TLV_SERIAL => {
                if len != 2 {
                    return Err(CelerityWireError::Invalid("serialisation length"));
                }
                out.push(Control::Serialisation {
                    per_byte: be_u16(body, 0),
                });
            }
            TLV_SERIALS => {
                if len % 3 != 0 {
                    return Err(CelerityWireError::Invalid("serialisations length"));
                }
                let links = (0..len / 3)
                    .map(|i| (body[3 * i], be_u16(body, 3 * i + 1)))
                    .collect();
                out.push(Control::Serialisations { links });
            }
            TLV_KEYFRAME => {
                if len != 1 {
                    return Err(CelerityWireError::Invalid("keyframe request length"));
                }
                out.push(Control::KeyframeRequest { session: body[0] });
            }
            TLV_RECEPTION | TLV_RETRANSMIT => {
                // A session and an application's RTCP, carried as it is.
                if len < 2 {
                    return Err(CelerityWireError::Invalid("carried RTCP length"));
                }
                let (session, rtcp) = (body[0], body[1..].to_vec());
                out.push(if kind == TLV_RECEPTION {
                    Control::ReceptionReport {
                        session,
                        report: rtcp,
                    }
                } else {
                    Control::RetransmissionRequest {
                        session,
                        request: rtcp,
                    }
                });
            }
            TLV_RELAY => {
                if !outer {
                    return Err(CelerityWireError::Invalid("nested relay"));
                }
                if len < 2 {
                    return Err(CelerityWireError::Invalid("relay length"));
                }
                out.push(Control::Relay {
                    origin: body[0],
                    dest: body[1],
                    inner: parse_tlvs(&body[2..], false)?,
                });
            }
            // Unknown messages are skipped: a later version may add some.
            _ => {}
        }
        buf = &buf[2 + len..];
    }
    Ok(out)
}

/// Append `c`'s TLV encoding to `out`.
pub fn emit_control(c: &Control, out: &mut Vec<u8>) {
    match c {
        Control::RateUpdate {
            echo_ts_us,
            hold_us,
            rates,
        } => {
            let rates = &rates[..rates.len().min(MAX_RATES)];
            out.push(TLV_RATE);
            out.push((RATE_FIXED + RATE_ENTRY * rates.len()) as u8);
            out.extend_from_slice(&echo_ts_us.to_be_bytes());
            out.extend_from_slice(&hold_us.to_be_bytes());
            for &(s, r) in rates {
                out.push(s);
                out.extend_from_slice(&rate_to_wire(r).to_be_bytes());
            }
        }
        Control::LinkState { session, links } => {
            let links = &links[..links.len().min(MAX_STATE_LINKS)];
            out.push(TLV_STATE);
            out.push((STATE_FIXED + STATE_ENTRY * links.len()) as u8);
            out.push(*session);
            for &(to, r, d) in links {
                out.push(to);
                out.extend_from_slice(&rate_to_wire(r).to_be_bytes());
                out.extend_from_slice(&d.to_be_bytes());
            }
        }
        Control::SessionState {
            session,
            uprime,
            relay_side,
            recv_side,
        } => {
            out.extend_from_slice(&[TLV_SESSION, 9, *session]);
            out.extend_from_slice(&uprime.to_bits().to_be_bytes());
            out.extend_from_slice(&relay_side.to_be_bytes());
            out.extend_from_slice(&recv_side.to_be_bytes());
        }
        Control::Hello { running: false } => out.extend_from_slice(&[TLV_HELLO, 0]),
        Control::Hello { running: true } => out.extend_from_slice(&[TLV_HELLO, 1, 1]),
        Control::Bye => out.extend_from_slice(&[TLV_BYE, 0]),
        Control::RouteChanged => out.extend_from_slice(&[TLV_ROUTE, 0]),
        Control::AskAlone => out.extend_from_slice(&[TLV_ASK_ALONE, 0]),
        Control::Alone => out.extend_from_slice(&[TLV_ALONE, 0]),
        Control::Reach { hears } => {
            out.extend_from_slice(&[TLV_REACH, 2]);
            out.extend_from_slice(&hears.to_be_bytes());
        }
        Control::LinkLoss { loss } => {
            out.extend_from_slice(&[TLV_LOSS, 2]);
            out.extend_from_slice(&loss.to_be_bytes());
        }
        Control::Serialisation { per_byte } => {
            out.extend_from_slice(&[TLV_SERIAL, 2]);
            out.extend_from_slice(&per_byte.to_be_bytes());
        }
        Control::Serialisations { links } => {
            let links = &links[..links.len().min(85)];
            out.push(TLV_SERIALS);
            out.push((3 * links.len()) as u8);
            for &(to, s) in links {
                out.push(to);
                out.extend_from_slice(&s.to_be_bytes());
            }
        }
        Control::KeyframeRequest { session } => {
            out.extend_from_slice(&[TLV_KEYFRAME, 1, *session]);
        }
        Control::ReceptionReport { session, report } => {
            emit_carried(out, TLV_RECEPTION, *session, report);
        }
        Control::RetransmissionRequest { session, request } => {
            emit_carried(out, TLV_RETRANSMIT, *session, request);
        }
        Control::Relay {
            origin,
            dest,
            inner,
        } => {
            let at = out.len();
            out.extend_from_slice(&[TLV_RELAY, 2, *origin, *dest]);
            for c in inner.iter().filter(|c| !matches!(c, Control::Relay { .. })) {
                let before = out.len();
                emit_control(c, out);
                // A TLV body holds at most 255 bytes: what does not fit is
                // left out whole.
                if out.len() - at - 2 > 255 {
                    out.truncate(before);
                    break;
                }
            }
            out[at + 1] = (out.len() - at - 2) as u8;
        }
    }
}

/// What makes two messages about the same thing: a later one supersedes
/// an earlier one with the same key still waiting to be sent.
/// Append a message of type `tlv` carrying a session's application RTCP
/// as it is. RTCP too large for a message is not sent: the peer refuses it
/// before it is queued.
fn emit_carried(out: &mut Vec<u8>, tlv: u8, session: u8, rtcp: &[u8]) {
    if (1..=MAX_RECEPTION_REPORT).contains(&rtcp.len()) {
        out.extend_from_slice(&[tlv, 1 + rtcp.len() as u8, session]);
        out.extend_from_slice(rtcp);
    }
}

fn supersede_key(tlv: &[u8]) -> Option<(u8, u8)> {
    match tlv.first().copied()? {
        TLV_RATE | TLV_REACH | TLV_LOSS | TLV_SERIAL | TLV_SERIALS | TLV_ROUTE | TLV_ASK_ALONE
        | TLV_ALONE => Some((tlv[0], 0)),
        TLV_STATE | TLV_SESSION | TLV_KEYFRAME => tlv.get(2).map(|&s| (tlv[0], s)),
        _ => None,
    }
}

/// Append `c`'s encoding to `pending` (TLV bytes not sent yet), first
/// removing any message there that `c` supersedes: the newer rate update,
/// link state or session state of the same session says all the older one
/// did. With `merge` (rate updates and link states that carry only the
/// rates that moved, `CelerityParams::moved_only`) a rate update or link
/// state takes in the entries of the one it replaces that it does not
/// carry itself, so that nothing the older said is lost. Returns the
/// bytes saved.
pub fn queue_superseding(c: &Control, pending: &mut Vec<u8>, merge: bool) -> usize {
    let mut fresh = Vec::new();
    emit_control(c, &mut fresh);
    let emitted = fresh.len();
    let key = supersede_key(&fresh);
    let before = pending.len();
    if key.is_some() {
        let mut kept = Vec::with_capacity(pending.len());
        for m in waiting(pending) {
            if supersede_key(m) != key {
                kept.extend_from_slice(m);
            } else if merge {
                merge_entries(m, &mut fresh);
            }
        }
        *pending = kept;
    }
    // What the older messages took, less what the merge took in of them.
    let saved = (before - pending.len()).saturating_sub(fresh.len() - emitted);
    pending.extend_from_slice(&fresh);
    saved
}

/// The fixed bytes after the length byte and the bytes per entry of a
/// message whose entries are keyed by their first byte: a rate update's
/// (the session) and a link state's (the tail).
fn entry_layout(tlv: u8) -> Option<(usize, usize)> {
    match tlv {
        TLV_RATE => Some((RATE_FIXED, RATE_ENTRY)),
        TLV_STATE => Some((STATE_FIXED, STATE_ENTRY)),
        _ => None,
    }
}

/// Add to `fresh` (one rate update or link state) the entries of `older`
/// (one of the same type and key) whose first byte, the session or the
/// tail, `fresh` has none of, and set its length. Malformed or full
/// messages are left as they are.
fn merge_entries(older: &[u8], fresh: &mut Vec<u8>) {
    let Some((fixed, entry)) = entry_layout(fresh[0]) else {
        return;
    };
    let entries = |m: &[u8]| -> Option<Vec<u8>> {
        let body = m.get(2 + fixed..2 + usize::from(*m.get(1)?))?;
        (body.len() % entry == 0).then(|| body.to_vec())
    };
    let (Some(old), Some(new)) = (entries(older), entries(fresh)) else {
        return;
    };
    let has = |k: u8| new.chunks(entry).any(|e| e[0] == k);
    for e in old.chunks(entry).filter(|e| !has(e[0])) {
        if fresh.len() - 2 + entry > usize::from(u8::MAX) {
            break;
        }
        fresh.extend_from_slice(e);
    }
    fresh[1] = (fresh.len() - 2) as u8;
}

/// Take from `pending` (TLV bytes not sent yet) the messages that fit in
/// `budget` bytes together, first fit in their order, and leave the others
/// waiting in theirs: a data packet carries what fits of the control
/// waiting for its neighbour within one datagram.
pub fn take_fitting(pending: &mut Vec<u8>, budget: usize) -> Vec<u8> {
    if pending.len() <= budget {
        return std::mem::take(pending);
    }
    let (mut taken, mut kept) = (Vec::new(), Vec::with_capacity(pending.len()));
    for m in waiting(pending) {
        if taken.len() + m.len() <= budget {
            taken.extend_from_slice(m);
        } else {
            kept.extend_from_slice(m);
        }
    }
    *pending = kept;
    taken
}

/// The messages waiting in `pending` (TLV bytes that [`emit_control`]
/// wrote, so whole messages only), each with its type and length bytes.
fn waiting(pending: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = pending;
    std::iter::from_fn(move || {
        (rest.len() >= 2).then(|| {
            let (m, after) = rest.split_at((2 + usize::from(rest[1])).min(rest.len()));
            rest = after;
            m
        })
    })
}

fn emit_prefix(out: &mut Vec<u8>, t: PacketType, link: LinkHeader) {
    let mut common = [0u8; COMMON_HEADER_LEN];
    CommonHeader { packet_type: t }.emit(&mut common);
    out.extend_from_slice(&common);
    out.extend_from_slice(&link.hop_seq.to_be_bytes());
    out.extend_from_slice(&link.hop_ts_us.to_be_bytes());
}

/// A control packet carrying `control` (TLV bytes from [`emit_control`]).
pub fn emit_control_packet(link: LinkHeader, control: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(COMMON_HEADER_LEN + LINK_HEADER_LEN + control.len());
    emit_prefix(&mut out, PacketType::CelerityControl, link);
    out.extend_from_slice(control);
    out
}

/// A data packet. `control` (TLV bytes) must be at most 255 bytes and
/// `header.entries` at most [`MAX_PARTICIPANTS`] long.
pub fn emit_data_packet(
    link: LinkHeader,
    header: &DataHeader,
    control: &[u8],
    media: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(data_packet_len(header, control.len(), media.len()));
    emit_prefix(&mut out, PacketType::CelerityData, link);
    emit_data_body(header, control, media, true, &mut out);
    out
}

/// The bytes of a data packet with `header`, `control` bytes of control
/// riding along and `media` bytes of media: common and link header, data
/// header, the control length byte when control rides, control, media.
pub fn data_packet_len(header: &DataHeader, control: usize, media: usize) -> usize {
    let control = if control > 0 { 1 + control } else { 0 };
    COMMON_HEADER_LEN + LINK_HEADER_LEN + header.len() + control + media
}

/// The most control bytes a data packet with `header` and `media` bytes of
/// media can carry and stay within `datagram` bytes (its control length
/// byte counted).
pub fn control_room(header: &DataHeader, media: usize, datagram: usize) -> usize {
    datagram.saturating_sub(data_packet_len(header, 0, media) + 1)
}

/// Append a data packet's body (what follows the link header) to `out`;
/// with `per_copy` its burst wait and queued time too.
fn emit_data_body(
    header: &DataHeader,
    control: &[u8],
    media: &[u8],
    per_copy: bool,
    out: &mut Vec<u8>,
) {
    assert!(
        control.len() <= 255,
        "piggybacked control fits its length byte"
    );
    assert!(
        header.entries.len() <= MAX_PARTICIPANTS,
        "tree entries per member"
    );
    let wide = header.wide();
    let mut flags = header.session & SESSION_MASK;
    if wide {
        flags |= FLAG_WIDE;
    }
    if !control.is_empty() {
        flags |= FLAG_CONTROL;
    }
    if header.padding {
        flags |= FLAG_PADDING;
    }
    let (wait, queued) = if per_copy {
        (
            wait_to_wire(header.burst_wait_us),
            wait_to_wire(header.queued_us),
        )
    } else {
        (0, 0)
    };
    if wait > 0 {
        flags |= FLAG_WAIT;
    }
    let mask = |out: &mut Vec<u8>, m: u16| {
        if wide {
            out.extend_from_slice(&m.to_be_bytes());
        } else {
            out.push(m as u8);
        }
    };
    out.push(flags);
    out.extend_from_slice(&header.media_seq.to_be_bytes());
    out.extend_from_slice(&header.origin_ts_us.to_be_bytes());
    // Rounded to half precision; a U′ past its range saturates rather
    // than becoming infinite (which the parser refuses).
    let uprime = f16::from_f32(header.uprime.min(f16::MAX.to_f32()));
    out.extend_from_slice(&uprime.to_bits().to_be_bytes());
    mask(out, header.relay_side);
    mask(out, header.recv_side);
    let mut count = header.entries.len() as u8;
    if queued > 0 {
        count |= ENTRIES_QUEUED;
    }
    if header.bundle {
        count |= ENTRIES_BUNDLE;
    }
    if header.ahead {
        count |= ENTRIES_AHEAD;
    }
    out.push(count);
    if !control.is_empty() {
        out.push(control.len() as u8);
    }
    if wait > 0 {
        out.push(wait);
    }
    if queued > 0 {
        out.push(queued);
    }
    for e in &header.entries {
        out.push(e.member);
        mask(out, e.children);
    }
    out.extend_from_slice(control);
    out.extend_from_slice(media);
}

/// The part of a data packet that local loss recovery codes (§5.4): its
/// data header and media without piggybacked control (control is meant
/// for the link's tail alone and superseded by then) and without the burst
/// wait and queued time (a recovered packet's timing measures nothing, and
/// a relay forwards it as if it had not queued), preceded by its
/// length as a big-endian `u16`, so that a source symbol padded with
/// zeros to the symbol size gives the packet back exactly. `out` is
/// cleared first.
pub fn emit_coded_data(header: &DataHeader, media: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0, 0]);
    emit_data_body(header, &[], media, false, out);
    let len = (out.len() - 2) as u16;
    out[..2].copy_from_slice(&len.to_be_bytes());
}

/// The bytes [`emit_coded_data`] writes at most for a conference of `n`
/// members with `media` bytes of media per packet.
pub fn coded_data_len(n: usize, media: usize) -> usize {
    let wide = usize::from(n > 8);
    2 + DATA_FIXED_LEN + 2 * wide + (ENTRY_LEN + wide) * n + media
}

/// The data header and media of a source symbol written by
/// [`emit_coded_data`] (trailing zero padding allowed). Every length is
/// checked, as for a packet from the network: a symbol decoded from a
/// corrupt repair is an error, never a panic.
pub fn parse_coded_data(symbol: &[u8]) -> Result<(DataHeader, &[u8]), CelerityWireError> {
    need(symbol, 2, "coded data length")?;
    let len = usize::from(be_u16(symbol, 0));
    need(symbol, 2 + len, "coded data")?;
    let body = &symbol[2..2 + len];
    match parse_after_link(PacketType::CelerityData, LinkHeader::default(), body)? {
        Packet::Data { header, media, .. } => Ok((header, media)),
        _ => Err(CelerityWireError::Invalid("coded data")),
    }
}

/// A repair packet: a coded symbol (`meshcast_coding`'s datagram format)
/// combining data packets sent on the link, whose trailing zeros may be
/// left out.
pub fn emit_repair_packet(link: LinkHeader, symbol: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(COMMON_HEADER_LEN + LINK_HEADER_LEN + symbol.len());
    emit_prefix(&mut out, PacketType::CelerityRepair, link);
    out.extend_from_slice(symbol);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A header of session 3 with one tree entry and no flags.
    fn one_entry_header() -> DataHeader {
        DataHeader {
            session: 3,
            media_seq: 7,
            origin_ts_us: 99,
            uprime: 0.0625,
            relay_side: 0b1011,
            recv_side: 0b0011,
            entries: vec![TreeEntry {
                member: 2,
                children: 0b1001,
            }],
            padding: false,
            burst_wait_us: 0,
            queued_us: 0,
            bundle: false,
            ahead: false,
        }
    }

    #[test]
    fn data_round_trip() {
        let link = LinkHeader {
            hop_seq: 65535,
            hop_ts_us: 123_456,
        };
        let header = one_entry_header();
        let mut ctl = Vec::new();
        emit_control(
            &Control::RateUpdate {
                echo_ts_us: 5,
                hold_us: 6,
                rates: vec![(1, 240_000), (2, 7)],
            },
            &mut ctl,
        );
        emit_control(&Control::Hello { running: false }, &mut ctl);
        let bytes = emit_data_packet(link, &header, &ctl, b"media");
        assert_eq!(
            bytes.len(),
            COMMON_HEADER_LEN + LINK_HEADER_LEN + header.len() + 1 + ctl.len() + 5
        );
        let Packet::Data {
            link: l,
            header: h,
            control,
            media,
        } = parse(&bytes).unwrap()
        else {
            panic!("not data")
        };
        assert_eq!(l, link);
        assert_eq!(h, header);
        assert_eq!(media, b"media");
        assert_eq!(control.len(), 2);
        assert_eq!(control[1], Control::Hello { running: false });
    }

    /// A greeting says in one byte whether its sender is running (past
    /// its start window); one without a body, as before the flag, and one
    /// whose lowest bit is clear are not.
    #[test]
    fn hello_says_whether_its_sender_is_running() {
        for (running, bytes) in [(false, vec![TLV_HELLO, 0]), (true, vec![TLV_HELLO, 1, 1])] {
            let mut out = Vec::new();
            emit_control(&Control::Hello { running }, &mut out);
            assert_eq!(out, bytes);
            assert_eq!(
                parse_control(&out).unwrap(),
                vec![Control::Hello { running }]
            );
        }
        assert_eq!(
            parse_control(&[TLV_HELLO, 1, 0xFE]).unwrap(),
            vec![Control::Hello { running: false }]
        );
        assert_eq!(
            parse_control(&[TLV_HELLO, 2, 3, 9, TLV_BYE, 0]).unwrap(),
            vec![Control::Hello { running: true }, Control::Bye]
        );
    }

    /// News of a route change is two bytes with no body, and one with a
    /// body (from a later version) says the same; a newer one waiting to be
    /// sent replaces the older.
    #[test]
    fn route_news_is_a_bare_message() {
        let mut out = Vec::new();
        emit_control(&Control::RouteChanged, &mut out);
        assert_eq!(out, [TLV_ROUTE, 0]);
        assert_eq!(
            parse_control(&[TLV_ROUTE, 2, 7, 7, TLV_BYE, 0]).unwrap(),
            vec![Control::RouteChanged, Control::Bye]
        );
        let mut pending = Vec::new();
        queue_superseding(&Control::RouteChanged, &mut pending, true);
        queue_superseding(&Control::Bye, &mut pending, true);
        queue_superseding(&Control::RouteChanged, &mut pending, true);
        assert_eq!(pending, [TLV_BYE, 0, TLV_ROUTE, 0]);
    }

    /// A request for a control packet alone and its answer are two bytes
    /// each with no body, and ones with a body (from a later version) say
    /// the same; a newer request waiting to be sent replaces the older.
    #[test]
    fn asking_for_a_control_packet_alone_is_a_bare_message() {
        let mut out = Vec::new();
        emit_control(&Control::AskAlone, &mut out);
        emit_control(&Control::Alone, &mut out);
        assert_eq!(out, [TLV_ASK_ALONE, 0, TLV_ALONE, 0]);
        assert_eq!(
            parse_control(&[TLV_ASK_ALONE, 1, 9, TLV_ALONE, 3, 1, 2, 3]).unwrap(),
            vec![Control::AskAlone, Control::Alone]
        );
        let mut pending = Vec::new();
        queue_superseding(&Control::AskAlone, &mut pending, true);
        queue_superseding(&Control::Bye, &mut pending, true);
        queue_superseding(&Control::AskAlone, &mut pending, true);
        assert_eq!(pending, [TLV_BYE, 0, TLV_ASK_ALONE, 0]);
    }

    /// A four-member conference's header: one-byte masks, 24 bytes after
    /// IP/UDP for a leaf (with the common and link headers), 2 more per
    /// tree entry and 1 for the control length when control rides along.
    #[test]
    fn small_conferences_send_narrow_headers() {
        let link = LinkHeader {
            hop_seq: 1,
            hop_ts_us: 2,
        };
        let mut header = DataHeader {
            session: 1,
            media_seq: 1,
            origin_ts_us: 1,
            uprime: 0.07,
            relay_side: 0b1011,
            recv_side: 0b0101,
            entries: Vec::new(),
            padding: false,
            burst_wait_us: 0,
            queued_us: 0,
            bundle: false,
            ahead: false,
        };
        let prefix = COMMON_HEADER_LEN + LINK_HEADER_LEN;
        let len =
            |h: &DataHeader, ctl: &[u8]| emit_data_packet(link, h, ctl, &[7; 100]).len() - 100;
        assert_eq!(len(&header, &[]), 24);
        assert_eq!(header.len(), 24 - prefix);
        header.entries.push(TreeEntry {
            member: 2,
            children: 0b1001,
        });
        assert_eq!(len(&header, &[]), 26);
        assert_eq!(len(&header, &[TLV_HELLO, 0]), 26 + 1 + 2);
        // A member index of 8 or more anywhere makes every mask two bytes.
        header.entries[0].children = 1 << 9;
        assert_eq!(len(&header, &[]), 26 + 2 + 1);
        assert_eq!(header.len(), 29 - prefix);
    }

    #[test]
    fn uprime_travels_at_half_precision_and_saturates() {
        let link = LinkHeader {
            hop_seq: 1,
            hop_ts_us: 2,
        };
        for (sent, want) in [
            (0.0756f32, 0.0756f32),
            (1e9, 65504.0),
            (0.0, 0.0),
            (1.8e-5, 1.8e-5),
        ] {
            let header = DataHeader {
                session: 0,
                media_seq: 0,
                origin_ts_us: 0,
                uprime: sent,
                relay_side: 0,
                recv_side: 0,
                entries: Vec::new(),
                padding: false,
                burst_wait_us: 0,
                queued_us: 0,
                bundle: false,
                ahead: false,
            };
            let bytes = emit_data_packet(link, &header, &[], &[]);
            let Ok(Packet::Data { header: h, .. }) = parse(&bytes) else {
                panic!("not data")
            };
            // 11 significant bits: within 0.05% (0.4% in the subnormal
            // range, below 6.1e-5 s, a session above 290 Mbit/s).
            let tol = if want < 6.1e-5 { 4e-3 } else { 5e-4 };
            assert!(
                (h.uprime - want).abs() <= tol * want,
                "{sent}: {}",
                h.uprime
            );
        }
    }

    /// A copy's burst wait and queued time each take one byte only when
    /// they round to at least one half-millisecond unit; they come back
    /// rounded to the nearest unit, saturate at 127.5 ms, ride after the
    /// control length byte (the wait first), and the coded form of the
    /// packet leaves them out.
    #[test]
    fn per_copy_times_travel_in_half_milliseconds() {
        let link = LinkHeader {
            hop_seq: 1,
            hop_ts_us: 2,
        };
        let header = |burst_wait_us, queued_us| DataHeader {
            session: 1,
            burst_wait_us,
            queued_us,
            ..one_entry_header()
        };
        let hello = [TLV_HELLO, 0];
        let times = [
            (0, 0, 0),
            (249, 0, 0),
            (250, 500, 1),
            (1_249, 1_000, 1),
            (1_250, 1_500, 1),
            (11_600, 11_500, 1),
            (127_500, 127_500, 1),
            (10_000_000, 127_500, 1),
        ];
        for (wait, wait_got, wait_extra) in times {
            for (queued, queued_got, queued_extra) in times {
                let h = header(wait, queued);
                let extra = wait_extra + queued_extra;
                assert_eq!(h.len(), header(0, 0).len() + extra, "{wait} {queued}");
                for ctl in [&[][..], &hello] {
                    let bytes = emit_data_packet(link, &h, ctl, b"media");
                    assert_eq!(bytes.len(), data_packet_len(&h, ctl.len(), 5));
                    let Ok(Packet::Data {
                        header: back,
                        control,
                        media,
                        ..
                    }) = parse(&bytes)
                    else {
                        panic!("not data")
                    };
                    assert_eq!(back, header(wait_got, queued_got), "{wait} {queued}");
                    assert_eq!(control.len(), ctl.len() / 2);
                    assert_eq!(media, b"media");
                }
                let mut coded = Vec::new();
                emit_coded_data(&h, b"media", &mut coded);
                let mut plain = Vec::new();
                emit_coded_data(&header(0, 0), b"media", &mut plain);
                assert_eq!(coded, plain, "{wait} {queued}");
            }
        }
        // The flags and their bytes: the wait's in the first byte, the
        // queued time's in the entry count; the bytes follow the count in
        // that order.
        let bytes = emit_data_packet(link, &header(3_000, 4_500), &[], &[]);
        let body = &bytes[COMMON_HEADER_LEN + LINK_HEADER_LEN..];
        assert_eq!(body[0], 1 | FLAG_WAIT);
        assert_eq!(body[DATA_FIXED_LEN - 1], 1 | ENTRIES_QUEUED);
        assert_eq!(body[DATA_FIXED_LEN..DATA_FIXED_LEN + 2], [6, 9]);
        let bytes = emit_data_packet(link, &header(0, 4_500), &[], &[]);
        let body = &bytes[COMMON_HEADER_LEN + LINK_HEADER_LEN..];
        assert_eq!(body[0], 1);
        assert_eq!(body[DATA_FIXED_LEN], 9);
        // A flag without its byte is a short packet.
        for h in [header(3_000, 0), header(0, 3_000)] {
            let bytes = emit_data_packet(link, &h, &[], &[]);
            let cut = &bytes[..COMMON_HEADER_LEN + LINK_HEADER_LEN + DATA_FIXED_LEN];
            assert!(parse(cut).is_err());
        }
    }

    /// A packet sent ahead of the rate carries the entry count's 0x20 and
    /// no byte of its own; the flag comes back through a parse and local
    /// loss recovery's coded form alike. Every bit of the entry count is
    /// taken, and a count past the members' is refused whatever the flags.
    #[test]
    fn packets_sent_ahead_carry_a_flag() {
        let link = LinkHeader {
            hop_seq: 1,
            hop_ts_us: 2,
        };
        let plain = DataHeader {
            session: 1,
            ..one_entry_header()
        };
        let ahead = DataHeader {
            ahead: true,
            ..plain.clone()
        };
        assert_eq!(ahead.len(), plain.len());
        let bytes = emit_data_packet(link, &ahead, &[], b"media");
        assert_eq!(
            bytes.len(),
            emit_data_packet(link, &plain, &[], b"media").len()
        );
        let body = &bytes[COMMON_HEADER_LEN + LINK_HEADER_LEN..];
        assert_eq!(body[DATA_FIXED_LEN - 1], 1 | ENTRIES_AHEAD);
        assert!(matches!(parse(&bytes), Ok(Packet::Data { header, .. }) if header == ahead));
        let mut coded = Vec::new();
        emit_coded_data(&ahead, b"media", &mut coded);
        assert_eq!(parse_coded_data(&coded).map(|(h, _)| h), Ok(ahead));
        let mut bytes = emit_data_packet(link, &plain, &[], b"media");
        bytes[COMMON_HEADER_LEN + LINK_HEADER_LEN + DATA_FIXED_LEN - 1] = 0x11 | ENTRIES_AHEAD;
        assert!(matches!(parse(&bytes), Err(CelerityWireError::Invalid(_))));
    }

    /// A bundle's units come back whole and in order, through a relay's
    /// parse and local loss recovery's coded form alike; its flag is the
    /// entry count's 0x40; media that is not whole units is refused.
    #[test]
    fn a_bundle_carries_whole_units() {
        let link = LinkHeader {
            hop_seq: 3,
            hop_ts_us: 4,
        };
        let header = DataHeader {
            bundle: true,
            ahead: false,
            ..one_entry_header()
        };
        let units: [&[u8]; 3] = [b"a", &[7; 300], b"frame three"];
        let mut media = Vec::new();
        for u in units {
            push_bundle_unit(&mut media, u);
        }
        assert_eq!(media.len(), 3 * BUNDLE_PREFIX + 1 + 300 + 11);
        let bytes = emit_data_packet(link, &header, &[], &media);
        let body = &bytes[COMMON_HEADER_LEN + LINK_HEADER_LEN..];
        assert_eq!(body[DATA_FIXED_LEN - 1], 1 | ENTRIES_BUNDLE);
        let Ok(Packet::Data {
            header: back,
            media: got,
            ..
        }) = parse(&bytes)
        else {
            panic!("not data")
        };
        assert_eq!(back, header);
        assert_eq!(bundle_units(got).collect::<Vec<_>>(), units);
        assert_eq!(media_units(&back, got), 3);
        let mut coded = Vec::new();
        emit_coded_data(&header, &media, &mut coded);
        let (h, m) = parse_coded_data(&coded).unwrap();
        assert!(h.bundle);
        assert_eq!(bundle_units(m).collect::<Vec<_>>(), units);
        // Without the flag the same bytes are one unit.
        let plain = DataHeader {
            bundle: false,
            ahead: false,
            ..header.clone()
        };
        assert_eq!(media_units(&plain, &media), 1);
        // Cut short, an empty unit, a stray byte, or no unit at all.
        let mut empty_unit = media.clone();
        push_bundle_unit(&mut empty_unit, b"x");
        let n = empty_unit.len();
        empty_unit[n - 3..n - 1].copy_from_slice(&[0, 0]);
        empty_unit.truncate(n - 1);
        let mut stray = media.clone();
        stray.push(0);
        for bad in [&media[..media.len() - 1], &empty_unit, &stray, &[][..]] {
            let bytes = emit_data_packet(link, &header, &[], bad);
            assert!(
                matches!(parse(&bytes), Err(CelerityWireError::Invalid("bundle"))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rates_travel_as_sixteen_bit_floats() {
        // Exact below 2048 bit/s and at every representable value.
        for bps in [0, 1, 7, 2047, 2048, 4095, 240_000, 1 << 20, 3 << 29] {
            assert_eq!(rate_from_wire(rate_to_wire(bps)), bps, "{bps}");
        }
        // Within a half step (1/4096) elsewhere, monotonic, and every code
        // round-trips.
        for i in 0..200_000u64 {
            let bps = ((i * i * 107_374) % (u64::from(u32::MAX) + 1)) as u32;
            let back = rate_from_wire(rate_to_wire(bps));
            let err = (f64::from(back) - f64::from(bps)).abs();
            assert!(err <= f64::from(bps) / 4096.0 + 0.5, "{bps} -> {back}");
        }
        let mut last = 0;
        for code in 0..=u16::MAX {
            let v = rate_from_wire(code);
            assert!(v >= last, "code {code}");
            last = v;
            if v < u32::MAX {
                assert_eq!(rate_to_wire(v), code);
            }
        }
        // The largest rates saturate.
        assert_eq!(rate_from_wire(rate_to_wire(u32::MAX)), u32::MAX);
        // A rate update of seven sessions: 8 bytes of echo and hold plus 3
        // a session, and its TLV header.
        let mut out = Vec::new();
        let rates = (0..7).map(|m| (m, 123_456_789)).collect();
        emit_control(
            &Control::RateUpdate {
                echo_ts_us: 1,
                hold_us: 2,
                rates,
            },
            &mut out,
        );
        assert_eq!(out.len(), 2 + 8 + 3 * 7);
        let Control::RateUpdate { rates, .. } = &parse_control(&out).unwrap()[0] else {
            panic!("not a rate update");
        };
        let r = rates[0].1;
        assert!(
            (f64::from(r) / 123_456_789.0 - 1.0).abs() < 1.0 / 8192.0,
            "{r}"
        );
    }

    #[test]
    fn control_round_trip() {
        let link = LinkHeader {
            hop_seq: 1,
            hop_ts_us: 2,
        };
        let msgs = vec![
            Control::LinkState {
                session: 1,
                links: vec![(2, 1000, 3), (3, 4, 5)],
            },
            Control::SessionState {
                session: 2,
                uprime: 0.5,
                relay_side: 3,
                recv_side: 4,
            },
            Control::Bye,
            Control::RouteChanged,
            Control::AskAlone,
            Control::Alone,
            Control::Reach { hears: 0b1011 },
            Control::LinkLoss { loss: 3277 },
            Control::Serialisation { per_byte: 1333 },
            Control::Serialisations {
                links: vec![(1, 2667), (3, u16::MAX)],
            },
            Control::KeyframeRequest { session: 5 },
            Control::ReceptionReport {
                session: 6,
                report: vec![0x81, 201, 0, 7, 1, 2, 3, 4],
            },
            Control::RetransmissionRequest {
                session: 7,
                request: vec![0x80, 205, 0, 2, 1, 2, 3, 4],
            },
            Control::Relay {
                origin: 3,
                dest: 0,
                inner: vec![
                    Control::LinkState {
                        session: 0,
                        links: vec![(1, 7, 8)],
                    },
                    Control::KeyframeRequest { session: 3 },
                    Control::ReceptionReport {
                        session: 3,
                        report: vec![9; 40],
                    },
                    Control::RetransmissionRequest {
                        session: 3,
                        request: vec![8; 20],
                    },
                    Control::Bye,
                ],
            },
        ];
        let mut ctl = Vec::new();
        for m in &msgs {
            emit_control(m, &mut ctl);
        }
        let bytes = emit_control_packet(link, &ctl);
        assert_eq!(
            parse(&bytes).unwrap(),
            Packet::Control {
                link,
                control: msgs
            }
        );
    }

    /// A repair packet carries its symbol after the link header, whole.
    #[test]
    fn repair_round_trip() {
        let link = LinkHeader {
            hop_seq: 7,
            hop_ts_us: 8,
        };
        let bytes = emit_repair_packet(link, &[1, 2, 3]);
        assert_eq!(bytes.len(), COMMON_HEADER_LEN + LINK_HEADER_LEN + 3);
        assert_eq!(
            parse(&bytes).unwrap(),
            Packet::Repair {
                link,
                symbol: &[1, 2, 3]
            }
        );
        assert!(parse(&bytes[..COMMON_HEADER_LEN + LINK_HEADER_LEN]).is_err());
    }

    #[test]
    fn relays_do_not_nest_and_stay_within_one_tlv() {
        // A nested relay on the wire is refused.
        let body = [TLV_RELAY, 6, 1, 2, TLV_RELAY, 2, 3, 4];
        assert_eq!(
            parse_control(&body),
            Err(CelerityWireError::Invalid("nested relay"))
        );
        // Too much to relay: whole messages that fit are kept.
        let big = Control::LinkState {
            session: 0,
            links: (0..20).map(|i| (i, 1, 1)).collect(),
        };
        let mut out = Vec::new();
        emit_control(
            &Control::Relay {
                origin: 1,
                dest: 2,
                inner: vec![big.clone(), big.clone(), big.clone()],
            },
            &mut out,
        );
        match &parse_control(&out).unwrap()[..] {
            [Control::Relay { inner, .. }] => assert_eq!(inner, &vec![big.clone(), big]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn newer_messages_supersede_older_ones_waiting() {
        let rate = |r| Control::RateUpdate {
            echo_ts_us: 1,
            hold_us: 2,
            rates: vec![(0, r)],
        };
        let state = |s, r| Control::LinkState {
            session: s,
            links: vec![(1, r, 0)],
        };
        let mut pending = Vec::new();
        for c in [
            rate(1),
            state(0, 1),
            state(1, 1),
            Control::Hello { running: false },
        ] {
            queue_superseding(&c, &mut pending, false);
        }
        assert!(queue_superseding(&rate(2), &mut pending, false) > 0);
        assert!(queue_superseding(&state(1, 2), &mut pending, false) > 0);
        assert_eq!(
            queue_superseding(&Control::Hello { running: false }, &mut pending, false),
            0
        );
        assert_eq!(
            parse_control(&pending).unwrap(),
            vec![
                state(0, 1),
                Control::Hello { running: false },
                rate(2),
                state(1, 2),
                Control::Hello { running: false }
            ]
        );
    }

    /// With `merge` (rates that moved only): the newer rate update or
    /// link state takes in the older one's entries it does not carry, its
    /// own values winning, so that nothing the older said is lost; other
    /// sessions' link states and other messages stay as they were.
    #[test]
    fn newer_messages_take_in_what_the_older_said_with_merge() {
        let rate = |echo, rates: &[(u8, u32)]| Control::RateUpdate {
            echo_ts_us: echo,
            hold_us: 2,
            rates: rates.to_vec(),
        };
        let state = |s, links: &[(u8, u32, u16)]| Control::LinkState {
            session: s,
            links: links.to_vec(),
        };
        let mut pending = Vec::new();
        for c in [
            rate(1, &[(0, 100), (1, 200)]),
            state(0, &[(1, 300, 5), (2, 400, 6)]),
            state(1, &[(2, 500, 7)]),
            Control::Hello { running: false },
        ] {
            assert_eq!(queue_superseding(&c, &mut pending, true), 0);
        }
        // Session 1's rate is newer, 2's new; 0's stays.
        queue_superseding(&rate(9, &[(1, 250), (2, 50)]), &mut pending, true);
        // Tail 2's link is newer; tail 1's stays.
        let saved = queue_superseding(&state(0, &[(2, 450, 8)]), &mut pending, true);
        // The older message's header (type, length, session) is saved, its
        // entry for tail 1 taken in.
        assert_eq!(saved, 3 + 5);
        assert_eq!(
            parse_control(&pending).unwrap(),
            vec![
                state(1, &[(2, 500, 7)]),
                Control::Hello { running: false },
                rate(9, &[(1, 250), (2, 50), (0, 100)]),
                state(0, &[(2, 450, 8), (1, 300, 5)]),
            ]
        );
        // Without merge the newer replaces the older whole.
        let mut plain = Vec::new();
        queue_superseding(&rate(1, &[(0, 100)]), &mut plain, false);
        queue_superseding(&rate(9, &[(1, 250)]), &mut plain, false);
        assert_eq!(parse_control(&plain).unwrap(), vec![rate(9, &[(1, 250)])]);
    }

    #[test]
    fn a_data_packet_takes_the_waiting_messages_that_fit() {
        let rate = Control::RateUpdate {
            echo_ts_us: 1,
            hold_us: 2,
            rates: vec![(0, 5), (1, 6), (2, 7)],
        };
        let state = |s| Control::LinkState {
            session: s,
            links: vec![(1, 3, 0), (2, 4, 0)],
        };
        let mut pending = Vec::new();
        for c in [
            state(0),
            rate.clone(),
            state(1),
            Control::Hello { running: false },
        ] {
            emit_control(&c, &mut pending);
        }
        // 13 + 19 + 13 + 2 bytes: the first link state and the rate
        // update take 32 of 34, the second link state does not fit, the
        // hello does.
        let taken = take_fitting(&mut pending, 34);
        assert_eq!(
            parse_control(&taken).unwrap(),
            vec![state(0), rate, Control::Hello { running: false }]
        );
        assert_eq!(parse_control(&pending).unwrap(), vec![state(1)]);
        // All of it when it fits; nothing when nothing does.
        assert_eq!(take_fitting(&mut pending, 10), Vec::<u8>::new());
        assert_eq!(parse_control(&pending).unwrap(), vec![state(1)]);
        let all = take_fitting(&mut pending, 13);
        assert_eq!(parse_control(&all).unwrap(), vec![state(1)]);
        assert!(pending.is_empty());
    }

    #[test]
    fn bad_input_is_rejected() {
        let link = LinkHeader {
            hop_seq: 1,
            hop_ts_us: 2,
        };
        let bytes = emit_control_packet(link, &[TLV_RATE, 3, 0, 0, 0]);
        assert!(parse(&bytes).is_err());
        let bytes = emit_control_packet(link, &[TLV_RATE, 200]);
        assert!(matches!(
            parse(&bytes),
            Err(CelerityWireError::Truncated { .. })
        ));
        assert!(parse(&bytes[..5]).is_err());
        // A serialisation of other than two bytes, serialisations not in
        // threes.
        for bad in [&[TLV_SERIAL, 1, 0][..], &[TLV_SERIALS, 2, 1, 0]] {
            let bytes = emit_control_packet(link, bad);
            assert!(matches!(parse(&bytes), Err(CelerityWireError::Invalid(_))));
        }
    }

    fn arb_header() -> impl Strategy<Value = DataHeader> {
        let entry =
            (0u8..16, any::<u16>()).prop_map(|(member, children)| TreeEntry { member, children });
        (
            0u8..16,
            any::<u32>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u16>(),
            proptest::collection::vec(entry, 0..=MAX_PARTICIPANTS),
            any::<bool>(),
            any::<u8>(),
            any::<u8>(),
            any::<bool>(),
        )
            .prop_map(
                |(
                    session,
                    media_seq,
                    origin_ts_us,
                    u,
                    relay_side,
                    recv_side,
                    entries,
                    padding,
                    wait,
                    queued,
                    ahead,
                )| {
                    // Any finite, non-negative half-precision value.
                    let uprime = f16::from_bits(u & 0x7BFF).to_f32();
                    DataHeader {
                        session,
                        media_seq,
                        origin_ts_us,
                        uprime,
                        relay_side,
                        recv_side,
                        entries,
                        padding,
                        // Any times the wire holds (0: none).
                        burst_wait_us: u32::from(wait) * WAIT_UNIT_US,
                        queued_us: u32::from(queued) * WAIT_UNIT_US,
                        bundle: false,
                        ahead,
                    }
                },
            )
    }

    proptest! {
        /// Every header (narrow or wide masks, with or without control)
        /// comes back as it was sent, and `len` is what it takes.
        #[test]
        fn data_headers_round_trip(header in arb_header(), hello in any::<bool>(), media in proptest::collection::vec(any::<u8>(), 0..40)) {
            let link = LinkHeader { hop_seq: 9, hop_ts_us: 10 };
            let ctl: &[u8] = if hello { &[TLV_HELLO, 0] } else { &[] };
            let bytes = emit_data_packet(link, &header, ctl, &media);
            let ctl_len = if hello { 1 + ctl.len() } else { 0 };
            prop_assert_eq!(bytes.len(), COMMON_HEADER_LEN + LINK_HEADER_LEN + header.len() + ctl_len + media.len());
            prop_assert_eq!(bytes.len(), data_packet_len(&header, ctl.len(), media.len()));
            let Ok(Packet::Data { link: l, header: h, control, media: m }) = parse(&bytes) else {
                panic!("not data")
            };
            prop_assert_eq!(l, link);
            prop_assert_eq!(&h, &header);
            prop_assert_eq!(control.len(), usize::from(hello));
            prop_assert_eq!(m, &media[..]);

            // Its coded form (§5.4), padded with zeros, gives it back,
            // without the copy's burst wait and queued time.
            let mut coded = Vec::new();
            emit_coded_data(&header, &media, &mut coded);
            prop_assert!(coded.len() <= coded_data_len(MAX_PARTICIPANTS, media.len()));
            coded.resize(coded.len() + 17, 0);
            let (h, m) = parse_coded_data(&coded).unwrap();
            prop_assert_eq!(h, DataHeader { burst_wait_us: 0, queued_us: 0, ..header });
            prop_assert_eq!(m, &media[..]);
        }

        /// A coded packet cut short is an error, never a panic or a
        /// packet.
        #[test]
        fn short_coded_data_is_refused(header in arb_header(), cut in 0usize..40) {
            let mut coded = Vec::new();
            emit_coded_data(&header, b"media", &mut coded);
            let cut = cut.min(coded.len() - 1);
            prop_assert!(parse_coded_data(&coded[..cut]).is_err());
        }

        /// No input makes the parser panic.
        #[test]
        fn parse_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..200), t in prop::sample::select(vec![2u8, 3, 9])) {
            if bytes.len() >= 4 {
                bytes[0] = 1;
                bytes[1] = t;
                bytes[2] = 0;
                bytes[3] = 0;
            }
            let _ = parse(&bytes);
        }
    }
}
