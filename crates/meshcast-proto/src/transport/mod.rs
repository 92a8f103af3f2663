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

use meshcast_core::Time;

/// When a source is active: from `start` (inclusive) to `stop` (exclusive),
/// driven by the source's timer. Shared by the TCP and TFRC sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lifetime {
    start: Time,
    stop: Time,
    started: bool,
    stopped: bool,
}

impl Lifetime {
    fn new(start: Time, stop: Time) -> Lifetime {
        Lifetime {
            start,
            stop,
            started: false,
            stopped: false,
        }
    }

    /// The timer fired at `now`: whether the source is active (started,
    /// not stopped) after it.
    fn tick(&mut self, now: Time) -> bool {
        if now >= self.stop {
            self.stopped = true;
        } else if now >= self.start {
            self.started = true;
        }
        self.is_active()
    }

    fn is_active(&self) -> bool {
        self.started && !self.stopped
    }

    /// Whether datagrams still matter (not stopped).
    fn is_live(&self) -> bool {
        !self.stopped
    }

    /// The source's next deadline: its start, then `active` (the
    /// controller's own deadline) bounded by the stop time; none once
    /// stopped.
    fn timeout(&self, active: Option<Time>) -> Option<Time> {
        if self.stopped {
            None
        } else if !self.started {
            Some(self.start)
        } else {
            Some(active.map_or(self.stop, |t| t.min(self.stop)))
        }
    }
}
