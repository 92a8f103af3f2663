//! meshcast's pure rate and congestion controllers.
//!
//! Controllers here are plain state machines: no I/O, no clock, no global
//! randomness. They take `now` in every call, sizes in bytes and rates as
//! [`meshcast_core::Rate`] (bits per second) at their public surface, and
//! say when they next need to be called (`poll_timeout`). The wire encoding
//! of what they exchange (TFRC data headers and feedback, TCP segments and
//! acknowledgements) lives in `meshcast-proto`, which wraps them into
//! [`meshcast_core::Endpoint`]s.
//!
//! - [`tfrc`]: TCP-Friendly Rate Control, RFC 5348 — the throughput
//!   equation, the receiver's loss-event history and feedback, and the
//!   sender's rate rules — with the application interface of MSB
//!   (`get_pkt(rate, mode)` / `break_ss`).
//! - [`tcp`]: a TCP NewReno model (RFC 5681, RFC 6582, RFC 6298) counted in
//!   segments, for bulk cross traffic and as TFRC's competitor in
//!   friendliness tests.

pub mod tcp;
pub mod tfrc;
