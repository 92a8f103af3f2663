//! Flows under congestion control: TFRC (RFC 5348) and the TCP NewReno
//! model, from `meshcast-control`, as [`meshcast_core::Endpoint`]s.
//!
//! A source sends one flow to one sink; a sink serves every flow sent to
//! its port, one receiver state per flow id, and answers each flow's
//! source (feedback or ACKs) at the address the data came from. As with
//! [`crate::traffic`], the whole UDP payload of a data packet, header
//! included, counts as the flow's payload in [`meshcast_core::Event`]s:
//! sources report new data (not retransmissions) as `FlowSent`, sinks
//! report data not seen before as `FlowReceived`.

pub mod tcp;
pub mod tfrc;
pub mod wire;

/// The port drivers bind a [`tcp::TcpSink`] to.
pub const TCP_SINK_PORT: u16 = 11;

/// The port drivers bind a [`tfrc::TfrcSink`] to.
pub const TFRC_SINK_PORT: u16 = 12;
