//! meshcast-sim: a deterministic, packet-level discrete-event simulator of
//! an underlay network that drives sans-IO [`meshcast_core::Endpoint`]s.
//!
//! - Nodes are hosts (endpoints only) or routers (forward, and may also run
//!   endpoints). Endpoints bind to `(node, port)` addresses.
//! - Links are directed, each with a capacity, a propagation delay, a
//!   drop-tail FIFO queue limited in packets and/or bytes, and i.i.d.
//!   random loss. Serialisation takes `(payload + 28) · 8 / capacity`: every
//!   packet carries [`meshcast_core::IP_UDP_OVERHEAD`] bytes of IP/UDP
//!   header on the wire.
//! - Routing is static shortest-path by hop count (ties by node name),
//!   recomputed whenever a link goes down or up; traffic with no route is
//!   dropped and counted.
//! - Timed [`Action`]s change the network (link down/up, capacity) and the
//!   membership of nodes (join/leave hooks through [`Membership`]).
//! - Everything is measured per flow and per link, bucketed by second
//!   ([`stats`]). Flows are cross traffic ([`Sim::add_traffic`]), TCP
//!   NewReno ([`Sim::add_tcp`]), TFRC ([`Sim::add_tfrc`]) or whatever the
//!   protocol endpoints declare.
//!
//! Determinism: events are ordered by (time, insertion sequence), all
//! randomness comes from seeds derived from the run seed with stable
//! labels, and no hash-map iteration order reaches the output. The same
//! network, endpoints and seed replay exactly.
//!
//! The event loop follows the drain rule of `meshcast-core`: after every
//! call into an endpoint the simulator drains its transmits and events and
//! re-arms its single timer from `poll_timeout`.

mod engine;
pub mod network;
pub mod routing;
pub mod stats;

pub use engine::{Action, BoundEndpoints, Membership, Sim, SimError, TRAFFIC_BASE_PORT};
pub use network::{LinkId, LinkParams, Network, NetworkError, NodeKind, QueueLimit, Red};
pub use stats::{ControlRecord, Counters, LinkFigures, LinkRecord, MembershipChange, RunStats};
