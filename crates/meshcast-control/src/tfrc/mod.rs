//! TCP-Friendly Rate Control, RFC 5348, as two sans-IO halves.
//!
//! [`TfrcSender`] paces packets at the allowed rate `X` and updates `X` from
//! feedback (§4); [`TfrcReceiver`] detects losses, groups them into loss
//! events, keeps the loss interval history and sends feedback about once per
//! round trip (§5–§6). What travels between them is [`DataInfo`] (in every
//! data packet) and [`Feedback`]; `meshcast-proto` puts both on the wire.
//!
//! # Driving a sender
//!
//! A driver asks [`TfrcSender::next_send`] when the next packet may leave.
//! At that time it asks the application for a packet, MSB-style
//! (`get_pkt(rate, mode)`, with [`TfrcSender::rate`] and
//! [`TfrcSender::mode`] as the hints): if the application has one, the
//! driver calls [`TfrcSender::on_sent`] and puts the returned [`DataInfo`]
//! in the packet; if not, it calls [`TfrcSender::on_declined`], which marks
//! the sender data-limited for that interval (§8.2.1) and schedules the
//! next opportunity one packet interval later. An application that cannot
//! fill the rate calls [`TfrcSender::break_ss`] once its own maximum is
//! reached, so TFRC leaves slow start without needing a loss (MSB §II-B.3).
//! Feedback goes to [`TfrcSender::on_feedback`]; the no-feedback timer
//! ([`TfrcSender::poll_timeout`]) to [`TfrcSender::handle_timeout`].
//!
//! # Decisions where RFC 5348 leaves room or where we depart from it
//!
//! - **Data-limited intervals** (§4.3, §8.2.1): the sender records every
//!   send opportunity its application declined; a feedback packet's
//!   interval (from the packet echoed by the previous feedback to the one it
//!   echoes) is data-limited when it holds such an opportunity.
//! - **`Maximize X_recv_set`** keeps the largest receive rate of the last
//!   two round trips *with its own timestamp*; RFC 5348 refreshes that
//!   timestamp, which lets a data-limited sender keep the allowed rate of
//!   its last full-rate period indefinitely and burst at it when the
//!   application suddenly has data. MSB's media sources are data-limited
//!   most of the time and change layers abruptly, so we keep the limit of
//!   twice the *recent* receive rate (the RFC 3448 rule) for them too; the
//!   halving and the 0.85 factor after a loss in a data-limited interval
//!   are as in RFC 5348.
//! - **`break_ss`** (MSB): the sender stops doubling at once, and flags its
//!   data packets until the receiver reports a loss event rate; a receiver
//!   that has no loss history yet seeds it with the synthetic interval of
//!   §6.3.1, exactly as at a first loss, so the equation takes over.
//! - The sender paces at `X_inst`, the oscillation damping of §4.5
//!   ([`TfrcSender::rate`]).
//! - Pacing gives no credit for missed send times: after a packet of `n`
//!   bytes the next may leave `n / X_inst` later, so there are no bursts.
//! - [`TfrcSender::on_skipped`] lets a rate-adaptive application (MSB,
//!   whose per-frame budget is a share of `X`) pass an opportunity without
//!   the interval counting as data-limited.

mod equation;
mod loss;
mod receiver;
mod sender;

pub use equation::{loss_rate_for, throughput};
pub use loss::{Interval, LossHistory, N_INTERVALS, WEIGHTS, mean_interval};
pub use receiver::{MAX_HOLES, NDUPACK, ReceiverConfig, TfrcReceiver};
pub use sender::{SenderConfig, T_MBI, TfrcSender};

use meshcast_core::{Duration, Rate, Time};

/// What a TFRC data packet tells the receiver (RFC 5348 §3.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataInfo {
    /// Sequence number, from 0, one per packet.
    pub seq: u64,
    /// The sender's clock when the packet left.
    pub sent_at: Time,
    /// The sender's current RTT estimate (zero before it has one).
    pub rtt: Duration,
    /// The application asked to leave slow start (MSB `break_ss`) and the
    /// receiver has not reported a loss event rate yet.
    pub break_ss: bool,
}

/// What a TFRC feedback packet tells the sender (RFC 5348 §3.2.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback {
    /// `t_recvdata`: the send time of the newest data packet received.
    pub echo_sent_at: Time,
    /// `t_delay`: how long the receiver held that packet before this
    /// feedback.
    pub delay: Duration,
    /// `X_recv`: the rate received since the last feedback (at least over
    /// the last RTT).
    pub x_recv: Rate,
    /// The loss event rate `p` (0 before the first loss event).
    pub p: f64,
    /// Loss events detected so far (lets the sender tell a new loss event
    /// from a stable `p`).
    pub loss_events: u32,
}

/// The congestion control phase, the `mode` hint of MSB's `get_pkt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No loss event yet: the allowed rate doubles every round trip,
    /// limited to twice the receive rate.
    SlowStart,
    /// The throughput equation sets the rate.
    CongestionAvoidance,
}

#[cfg(test)]
mod harness;
