//! meshcast's shared vocabulary and the sans-IO endpoint surface.
//!
//! Every protocol role in meshcast (Celerity peer, Airlift broker, ERMCC
//! source/receiver, MSB booster, multipath relay, cross-traffic generator,
//! TCP model) is a state machine implementing [`Endpoint`]. Drivers — the
//! deterministic simulator (`meshcast-sim`) and the UDP runtime
//! (`meshcast-net`) — are thin loops around that surface.
//!
//! # The drain rule
//!
//! A driver feeds an endpoint with [`Endpoint::handle_datagram`] and
//! [`Endpoint::handle_timeout`], and after **every** feed drains it:
//!
//! 1. call [`Endpoint::poll_transmit`] until it returns `None`, sending each
//!    [`Transmit`];
//! 2. call [`Endpoint::poll_event`] until it returns `None`;
//! 3. read [`Endpoint::poll_timeout`] and arm a single timer for it
//!    (replacing any earlier one). `None` means no timer.
//!
//! When the timer fires (the driver's clock reaches the deadline), the driver
//! calls `handle_timeout(now)` and drains again. An endpoint never sees a
//! clock other than the `now` it is handed, never sleeps, never does I/O and
//! never draws from a global random generator: randomness comes from the
//! [`Rng`] built from a seed in its configuration ([`rng::child_seed`] derives
//! independent streams). Time only moves forward: a driver never hands an
//! endpoint a `now` earlier than one it handed before.
//!
//! Ties between events at the same instant are the driver's business (the
//! simulator breaks them by insertion order so a seed replays byte for byte).

pub mod endpoint;
pub mod ids;
pub mod layered;
pub mod metrics;
pub mod rng;
pub mod time;
pub mod units;
pub mod video;

pub use endpoint::{
    DropCause, Endpoint, Event, LinkControl, MAX_RECEPTION_REPORT, MAX_RETRANSMISSION_REQUEST,
    Transmit,
};
pub use ids::{Addr, FlowId, NodeId};
pub use rng::Rng;
pub use time::{Duration, Time};
pub use units::Rate;

/// Bytes of IPv4 + UDP header that every datagram carries on a real link.
///
/// The simulator charges them on every link; reports count payload only.
pub const IP_UDP_OVERHEAD: u32 = 28;
