//! meshcast's wire format and its node roles as sans-IO state machines.
//!
//! Every role implements [`meshcast_core::Endpoint`]; see `meshcast-core`
//! for the drain rule drivers follow. Roles so far:
//!
//! - [`traffic`]: cross-traffic generators (constant bit rate and on/off
//!   with exponential or Pareto periods) and the sink that measures them.
//! - [`transport`]: flows under congestion control — TFRC (RFC 5348) and the
//!   TCP NewReno model of `meshcast-control` — as sources and sinks.
//!
//! The wire format ([`wire`]) is one versioned binary format with explicit
//! parse/emit; parsing never panics on input.

pub mod celerity;
pub mod msb;
pub mod traffic;
pub mod transport;
pub mod wire;

pub use meshcast_core as core;
