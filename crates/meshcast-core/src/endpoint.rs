//! The sans-IO surface every protocol role implements.

use crate::ids::{Addr, FlowId, NodeId};
use crate::time::Time;

/// A datagram an endpoint wants sent.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Transmit {
    /// Where it goes.
    pub to: Addr,
    /// The UDP payload (meshcast header and body). The driver adds nothing
    /// to it; the simulator charges [`crate::IP_UDP_OVERHEAD`] bytes of IP/UDP
    /// header on every link on top of `payload.len()`.
    pub payload: Vec<u8>,
}

/// The most bytes of a reception report ([`Endpoint::handle_reception_report`])
/// every endpoint that carries reports carries: an RTCP receiver report of
/// ten report blocks (8 + 10 × 24).
pub const MAX_RECEPTION_REPORT: usize = 248;
/// The most bytes of a retransmission request
/// ([`Endpoint::handle_retransmission_request`]) every endpoint that
/// carries them carries: as many as a reception report, an RTCP compound
/// packet of an empty receiver report and generic NACKs (RFC 4585
/// §6.2.1), 57 entries of up to 17 packets each for one stream.
pub const MAX_RETRANSMISSION_REQUEST: usize = MAX_RECEPTION_REPORT;

/// Something an endpoint reports to its driver: measurements the driver
/// aggregates into reports, and (later) application-facing notifications.
#[non_exhaustive]
#[derive(Clone, PartialEq, Debug)]
pub enum Event {
    /// The endpoint, as the source of `flow`, handed a packet carrying
    /// `payload_bytes` of application payload to the network.
    FlowSent {
        /// The flow.
        flow: FlowId,
        /// Application payload bytes in the packet (headers excluded).
        payload_bytes: u32,
    },
    /// The endpoint, as a receiver of `flow`, got a packet carrying
    /// `payload_bytes` of application payload that its source sent at
    /// `sent_at` (on the source's clock).
    FlowReceived {
        /// The flow.
        flow: FlowId,
        /// Application payload bytes in the packet (headers excluded).
        payload_bytes: u32,
        /// When the source sent it.
        sent_at: Time,
    },
    /// The endpoint, as the receiver of the layered stream `flow`, got a
    /// media packet in time for its presentation deadline (the first copy;
    /// duplicates and late packets are not reported).
    MediaReceived {
        /// The flow.
        flow: FlowId,
        /// When the source generated the packet's frame (source's clock).
        generated_at: Time,
        /// Whether some hop retransmitted the packet.
        retransmitted: bool,
    },
    /// The endpoint, as the receiver of the layered stream `flow`, presented
    /// a frame at its deadline.
    FramePresented {
        /// The flow.
        flow: FlowId,
        /// When the source generated the frame.
        generated_at: Time,
        /// Layers received consecutively from the base layer (0: the base
        /// layer is incomplete).
        layers_min: u8,
        /// The highest layer of which a packet arrived (0: none).
        layers_max: u8,
    },
    /// The endpoint's application, as the source of `flow`, handed frame
    /// `frame` of its video to the endpoint in `units` units (frames
    /// numbered upwards in the order handed over; a driver counts frames
    /// by the time it reports this: [`crate::video`]).
    FrameHanded {
        /// The flow.
        flow: FlowId,
        /// The frame's number.
        frame: u64,
        /// The units it went out in.
        units: u32,
        /// Whether it is a keyframe (decodable on its own).
        key: bool,
    },
    /// The endpoint's application, as a receiver of `flow`, got a unit of
    /// its video's frame `frame` (each unit once).
    FrameUnitReceived {
        /// The flow.
        flow: FlowId,
        /// The frame's number.
        frame: u64,
    },
    /// The endpoint, as the source of `flow` carrying application media,
    /// was asked by `from`, a receiver whose frames stopped decoding, for
    /// a keyframe (a picture loss indication, RTCP's PLI): its encoder
    /// should make its next frame one.
    KeyframeRequested {
        /// The flow.
        flow: FlowId,
        /// The receiver that asked.
        from: NodeId,
    },
    /// The endpoint, as the source of `flow` carrying application media,
    /// got from `from`, one of its receivers, that receiver's
    /// application's report of how it receives the flow's streams (an
    /// RTCP receiver report, RFC 3550 §6.4.2, as the application wrote its
    /// blocks): for the flow's encoder, which learns its receivers' loss,
    /// jitter and round-trip time from such reports.
    ReceptionReported {
        /// The flow.
        flow: FlowId,
        /// The receiver whose application reports.
        from: NodeId,
        /// The report, whole.
        report: Vec<u8>,
    },
    /// The endpoint, as the source of `flow` carrying application media,
    /// got from `from`, one of its receivers, that receiver's
    /// application's request to send again packets it lost (RTCP generic
    /// NACKs, RFC 4585 §6.2.1, in a compound packet as the node wrote it):
    /// for the flow's encoder, which resends them if it keeps a history.
    RetransmissionRequested {
        /// The flow.
        flow: FlowId,
        /// The receiver whose application asks.
        from: NodeId,
        /// The request, whole.
        request: Vec<u8>,
    },
    /// The endpoint, as the source of `flow` carrying application media,
    /// now offers the application `rate` in packets of at most
    /// `packet_bytes`, and frames of at most `frame_bytes`: what an
    /// encoder should produce, how its payloader should cut it, and how
    /// large its keyframes may be to arrive in time. Reported when any
    /// changes.
    RateOffered {
        /// The flow.
        flow: FlowId,
        /// The rate (media payload).
        rate: crate::units::Rate,
        /// The most media bytes a packet should carry.
        packet_bytes: u32,
        /// The most media bytes a frame (units handed over at once)
        /// should carry to reach every receiver within the delay bound.
        frame_bytes: u32,
    },
    /// The endpoint dropped a data packet of `flow` that its source sent
    /// at `sent_at` (on the source's clock), for `cause`. A relay's drop
    /// loses the packet for every receiver below it; the driver counts the
    /// drops per flow so that a report can say where a flow's loss
    /// happened (docs/report-format.md, `dropped`).
    FlowDropped {
        /// The flow.
        flow: FlowId,
        /// When its source sent the packet.
        sent_at: Time,
        /// Why it was dropped.
        cause: DropCause,
    },
    /// The endpoint sent a datagram: its bytes by purpose, for overhead
    /// accounting (IP/UDP headers not included).
    BytesSent {
        /// Application payload (media).
        media: u32,
        /// Protocol headers of data packets.
        header: u32,
        /// Control messages (standalone packets whole, piggybacked ones
        /// their own bytes).
        control: u32,
        /// Coded repairs for loss recovery (whole packets).
        repair: u32,
    },
    /// The endpoint's link rate control updated one session's rate on the
    /// overlay link into it from `head` (once per control interval and
    /// session; only endpoints asked to trace their control report it).
    LinkControl(LinkControl),
}

/// One session's link rate control on one overlay link, as the link's
/// tail saw it in one control interval ([`Event::LinkControl`]): the
/// inputs of a primal-dual rate rule (Celerity's rule (10)) and its
/// outcome. Times are seconds, as the rule counts its prices.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct LinkControl {
    /// The node at the link's head.
    pub head: NodeId,
    /// The session's flow.
    pub flow: FlowId,
    /// The session's rate on the link after the update, kbit/s.
    pub rate_kbps: f64,
    /// Whether the session's critical cut crossed the link.
    pub in_cut: bool,
    /// The gain the rule credited where the cut crosses the link, s: the
    /// session's `U′`, or the gain floor's where that acts (0 out of the
    /// cut).
    pub gain: f64,
    /// The session's `U′` as the rule used it, s.
    pub uprime: f64,
    /// The link's price, s: the loss rate plus the weighted queuing delay
    /// and its trend, scaled, plus the guards.
    pub price: f64,
    /// The interval's mean queuing delay on the link, s.
    pub queue: f64,
    /// The guards' part of the price, s.
    pub guard: f64,
    /// The interval's loss rate on the link (after local recovery).
    pub loss: f64,
    /// The session's own late packets on the link as the rule charged
    /// them, s: the weight times the smoothed fraction certain to come
    /// late (0 where not charged).
    pub late_loss: f64,
    /// The weight of the queue in the price (1 where a queue stands).
    pub standing: f64,
    /// The smoothed share of intervals in which the session's cut
    /// crossed the link.
    pub cut_share: f64,
    /// The gain floor on the link, s: it acts for sessions whose `U′` is
    /// under it (0 where it cannot act at all).
    pub floor: f64,
}

/// Why an endpoint dropped a data packet ([`Event::FlowDropped`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum DropCause {
    /// It arrived older than the flow's delay bound (at a relay or a
    /// receiver): what a deadline drops, however the packet got late.
    Late,
    /// A head had no room for it in the flow's rate on the next overlay
    /// link (the per-link policing of Celerity's rule (10)).
    Policed,
    /// The next overlay link was down (its probes unanswered).
    LinkDown,
    /// An application's unit waited at its source for the flow's rate
    /// until it could reach no receiver within the delay bound, and was
    /// never sent (counted as sent when dropped, so a flow's loss includes
    /// it).
    Stale,
}

impl DropCause {
    /// Every cause, in the order reports list them.
    pub const ALL: [DropCause; 4] = [
        DropCause::Late,
        DropCause::Policed,
        DropCause::LinkDown,
        DropCause::Stale,
    ];

    /// The cause's name in reports and `packets.csv`.
    pub fn name(self) -> &'static str {
        match self {
            DropCause::Late => "late",
            DropCause::Policed => "policed",
            DropCause::LinkDown => "link_down",
            DropCause::Stale => "stale",
        }
    }

    /// The cause a report name stands for.
    pub fn from_name(name: &str) -> Option<DropCause> {
        DropCause::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its position in [`DropCause::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A protocol role as a sans-IO state machine.
///
/// See the crate documentation for the drain rule drivers follow.
pub trait Endpoint {
    /// A datagram from `from` arrived at time `now`.
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]);

    /// The deadline last returned by [`Endpoint::poll_timeout`] has been
    /// reached (`now` is at or after it). Endpoints must tolerate spurious
    /// calls: check which of their timers are due.
    fn handle_timeout(&mut self, now: Time);

    /// The next datagram to send, if any.
    #[must_use]
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit>;

    /// The earliest instant at which [`Endpoint::handle_timeout`] must be
    /// called, if any.
    #[must_use]
    fn poll_timeout(&self) -> Option<Time>;

    /// The next event to report, if any.
    #[must_use]
    fn poll_event(&mut self) -> Option<Event>;

    /// The application hands the endpoint one unit of media (an RTP
    /// packet, say) to send at `now` as the source of its own flow.
    /// Returns whether the endpoint took it: one that does not carry
    /// application media (the default), or a unit too large for it, is
    /// refused.
    fn handle_media(&mut self, now: Time, payload: &[u8]) -> bool {
        let _ = (now, payload);
        false
    }

    /// The next unit of media that arrived for the application, with its
    /// flow: each unit once, in time for the endpoint's delay bound, in
    /// arrival order. The default has none.
    #[must_use]
    fn poll_media(&mut self) -> Option<(FlowId, Vec<u8>)> {
        None
    }

    /// The application, a receiver of `flow` whose frames stopped
    /// decoding, asks the flow's source for a keyframe at `now` (RTCP's
    /// picture loss indication). Returns whether the endpoint passed the
    /// request on: one that carries no such requests (the default), or a
    /// flow it does not receive, does not.
    fn handle_keyframe_request(&mut self, now: Time, flow: FlowId) -> bool {
        let _ = (now, flow);
        false
    }

    /// The application, a receiver of `flow`, reports at `now` how it
    /// receives the flow's streams, for the flow's source to hand to its
    /// encoder ([`Event::ReceptionReported`]): `report` is an RTCP
    /// receiver report whose blocks are all about the flow's streams. An
    /// endpoint that carries reports carries any of up to
    /// [`MAX_RECEPTION_REPORT`] bytes. Returns whether the endpoint passed
    /// it on: one that carries no such reports (the default), a flow it
    /// does not receive, or a report too large for it, does not.
    fn handle_reception_report(&mut self, now: Time, flow: FlowId, report: &[u8]) -> bool {
        let _ = (now, flow, report);
        false
    }

    /// The application, a receiver of `flow`, asks at `now` for packets it
    /// lost to be sent again, for the flow's source to hand to its encoder
    /// ([`Event::RetransmissionRequested`]): `request` is an RTCP compound
    /// packet whose generic NACKs are all about the flow's streams. It is
    /// news for now (a retransmission is worth something only while the
    /// receiver's jitter buffer waits for it): an endpoint passes it on at
    /// once where it may. An endpoint that carries requests carries any of
    /// up to [`MAX_RETRANSMISSION_REQUEST`] bytes. Returns whether the
    /// endpoint passed it on: one that carries no such requests (the
    /// default), a flow it does not receive, or a request too large for
    /// it, does not.
    fn handle_retransmission_request(&mut self, now: Time, flow: FlowId, request: &[u8]) -> bool {
        let _ = (now, flow, request);
        false
    }

    /// The endpoint's node is leaving at `now`: it may queue last datagrams
    /// (a goodbye) and events, which the driver drains once more before it
    /// drops the endpoint. The default does nothing.
    fn handle_close(&mut self, now: Time) {
        let _ = now;
    }
}

/// A boxed endpoint is an endpoint (drivers that hold endpoints of several
/// kinds, as `Box<dyn Endpoint>`, can hand them to generic code).
impl<E: Endpoint + ?Sized> Endpoint for Box<E> {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        (**self).handle_datagram(now, from, payload);
    }

    fn handle_timeout(&mut self, now: Time) {
        (**self).handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit> {
        (**self).poll_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        (**self).poll_timeout()
    }

    fn poll_event(&mut self) -> Option<Event> {
        (**self).poll_event()
    }

    fn handle_media(&mut self, now: Time, payload: &[u8]) -> bool {
        (**self).handle_media(now, payload)
    }

    fn poll_media(&mut self) -> Option<(FlowId, Vec<u8>)> {
        (**self).poll_media()
    }

    fn handle_keyframe_request(&mut self, now: Time, flow: FlowId) -> bool {
        (**self).handle_keyframe_request(now, flow)
    }

    fn handle_reception_report(&mut self, now: Time, flow: FlowId, report: &[u8]) -> bool {
        (**self).handle_reception_report(now, flow, report)
    }

    fn handle_retransmission_request(&mut self, now: Time, flow: FlowId, request: &[u8]) -> bool {
        (**self).handle_retransmission_request(now, flow, request)
    }

    fn handle_close(&mut self, now: Time) {
        (**self).handle_close(now);
    }
}
