//! MSB: hop-by-hop TFRC with application-level boosters for layered video
//! (`../shared/papers/msb.txt`).
//!
//! A layered stream runs from an [`MsbSource`] (MmAppSend) through zero or
//! more [`MsbBooster`]s (MmAppInt) to an [`MsbReceiver`] (MmAppRecv). Every
//! hop is its own TFRC connection ([`meshcast_control::tfrc`]); the media
//! header of [`wire`] travels end to end inside each hop's TFRC packets.
//!
//! # What each hop's sender does (§II-C)
//!
//! Packets wait in two earliest-deadline-first queues, `xmitq` (first
//! transmissions) and `rexmitq` (retransmissions), keyed by presentation
//! deadline, then frame, then layer: within a frame the base layer leaves
//! first, so a frame's budget cuts off its least important layers. TFRC
//! asks for a packet at every send opportunity (`get_pkt(X, mode)`); the
//! sender answers by the per-frame budget arbitration of eqs. (1)–(5):
//! `B_total = X / fps`, `α = min(α_max, 1 − U_xmit / B_total)`, a
//! retransmission is sent while `U_rexmit + s ≤ α·B_total`, a first
//! transmission of the current frame while `U_xmit + s ≤ (1 − α)·B_total`;
//! once the budget is spent the current frame ends and its remaining
//! packets are dropped. Every packet must still meet its deadline (eq. 7):
//! `now + RTT_{i,n}/2 < D`, where `RTT_{i,n}` is this hop's TFRC RTT plus
//! the round trip downstream of it, which ACKs relayed from the receiver
//! carry. Packets of layers below the secure level `S = β·A` (eq. 6; `A`
//! the moving average of the highest layer sent per frame) are cached by
//! hop sequence number; a NACK naming a lost sequence number moves the
//! cached packet into `rexmitq` if it can still make its deadline, and the
//! retransmission is cached again under its new sequence number, so a lost
//! retransmission is retransmitted again while eq. (7) allows (that is the
//! `k` of eq. 8). Cache entries go when their deadline can no longer be met
//! or the receiver has acknowledged their frame.
//!
//! In slow start the sender ignores the budget (§II-B.3: gain speed
//! first), and it calls `break_ss` once TFRC allows the stream's full rate
//! over `1 − α_max` — the rate at which a frame's first-transmission budget
//! holds every layer (with `app_max_bw` itself, the budget would hold only
//! 80% of the layers, and leaving slow start there caps the stream at 12
//! of 16 layers until TFRC's slow increase catches up).
//!
//! # Decisions where the paper leaves room
//!
//! - **Budgets compare with `≤`**, not the paper's `<`: with `B = 3000` and
//!   1000-byte packets three packets fit, as the budget's name says.
//! - **Budgets have whole-packet floors.** Taken literally, eqs. (1)–(3)
//!   starve a slow hop: below `s·fps` of allowed rate `B_total` holds no
//!   packet, nothing is sent, no feedback comes and TFRC never recovers;
//!   and below `5·s·fps` (with α = 0.2) `B_rexmit` holds no packet, so a
//!   stream of a few layers can never retransmit. So `B_total` is at least
//!   one packet; retransmissions may use `max(α·B_total, s)` as long as the
//!   frame's whole use stays within `B_total`; first transmissions get
//!   `max((1 − α)·B_total, s)` while the frame has retransmitted nothing,
//!   and `B_total − max(α·B_total, U_rexmit)` once it has. A NACKed packet
//!   that does not fit waits (at the head of `rexmitq`) for the next frame.
//! - **A frame cut by its budget passes the remainder on.** Budgets hold
//!   whole packets, so a frame whose first-transmission budget is
//!   `k + 0.7` packets sends `k`; the unused `0.7·s` (always less than a
//!   packet) is added to the next frame's budget, as in deficit round
//!   robin. Without it the stream's long-run rate is the floor of
//!   `(1 − α)·X/(s·fps)` packets per frame, which at the few layers of a
//!   congested path throws away up to a fifth of the rate TFRC allows (MSB
//!   scenario I end to end: 1.89 minimum layers without, 2.62 with). A
//!   frame that sends all its packets passes nothing on: an idle hop does
//!   not hoard budget.
//! - **A booster's first transmissions may use the retransmission share
//!   that retransmissions left.** Eq. (3) reserves `α·B_total` of every
//!   frame for retransmissions at every hop. The source needs that: it
//!   chooses how many layers a frame has, and the reserve is what its
//!   repairs use. A booster chooses nothing: it receives frames the source
//!   has already cut to `(1 − α)` of `X₁`, and with its own `X₂` about
//!   equal to `X₁` (the paper's equally congested segments), reserving
//!   another `α` of `X₂` drops a share of every frame whenever `X₂` dips,
//!   packets the previous hop already paid for (scenario III: the booster
//!   dropped 14% of what it received). So at a booster `B_xmit = B_total −
//!   U_rexmit`; retransmissions still go first (`rexmitq` is served before
//!   `xmitq` at every send opportunity, within `max(α·B_total, s)`), and
//!   one that no longer fits the frame leads the next one, displacing that
//!   frame's top layers, which is the priority the layers ask for. The
//!   frame's whole use stays within `B_total`.
//! - **Passing for budget is not being data-limited.** When the frame's
//!   budget is spent while it still had packets, the hop passes TFRC's send
//!   opportunities with `TfrcSender::on_skipped`, not `on_declined`: the
//!   stream adapts to `X`, and RFC 5348's data-limited rule (cut `X` to
//!   0.85 of the receive rate at a loss) would otherwise drive a stream
//!   that always uses about 80% of `X` down to the minimum rate. Only a hop
//!   that has sent everything it has declines.
//! - **A retransmitted packet that reaches a booster after the booster's
//!   current frame has moved on** goes to `rexmitq`, not `xmitq`: it is
//!   repair traffic and is paid from the retransmission budget; in `xmitq`
//!   it would be dropped as an old frame. A *first* transmission of such a
//!   frame (one the booster cut by its budget while the previous hop was
//!   still sending it) is dropped, as the paper drops "packets belonging to
//!   the old frames": above the cut its layers are worthless, and sent as
//!   repairs they took the budget of the next frame's lower layers.
//! - **NACKs are sent on the first gap in a hop's sequence numbers**, not
//!   after three later packets (TFRC's `NDUPACK`): a hop never reorders in
//!   the simulator, and waiting three packets at a few hundred kbit/s costs
//!   tens of ms of the retransmission's deadline. Reordering would cause a
//!   spurious retransmission, which the receiver discards as a duplicate.
//! - **`A` moves with gain 1/8 per frame** (the paper gives no constant).
//! - **ACKs** are sent once per presented batch of frames (at most one per
//!   frame interval) and carry the round trip to the receiver, to which
//!   each booster adds its downstream hop's RTT before relaying.
//! - **Clocks**: deadlines are on the source's clock; the receiver compares
//!   them with its own, which is exact in the simulator. Over real networks
//!   the receiver must first map the source's clock (future work).
//! - **Frames the receiver never saw** between frame 0 and the newest frame
//!   it has a packet of are presented with zero layers at their deadlines.

mod hop;
mod roles;
pub mod wire;

#[cfg(test)]
mod tests;

pub use hop::HopCounters;
pub use roles::{MsbBooster, MsbReceiver, MsbSource, MsbSourceConfig};

use meshcast_core::{Duration, Rate};

/// The layered stream and MSB's parameters, shared by all roles of a flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayeredConfig {
    /// Layers per frame (the paper's 16).
    pub layers: u8,
    /// Packets per layer per frame (1: every layer is one packet).
    pub packets_per_layer: u8,
    /// Frames per second.
    pub fps: u32,
    /// Every datagram's UDP payload: TFRC header, MSB media header, media.
    pub packet_bytes: u32,
    /// Probation `P = D − G`: how long after generation a frame is shown.
    pub probation: Duration,
    /// α_max: most of a frame's budget retransmissions may use.
    pub alpha_max: f64,
    /// β: the secure level as a fraction of the average top layer.
    pub beta: f64,
    /// Whether hops cache, NACK and retransmit.
    pub retransmit: bool,
}

impl Default for LayeredConfig {
    /// The paper's parameters: 16 layers of one 1000-byte packet, 10 fps,
    /// 500 ms probation, α_max = 0.2, β = 0.8, retransmission on.
    fn default() -> LayeredConfig {
        LayeredConfig {
            layers: 16,
            packets_per_layer: 1,
            fps: 10,
            packet_bytes: 1000,
            probation: Duration::from_millis(500),
            alpha_max: 0.2,
            beta: 0.8,
            retransmit: true,
        }
    }
}

impl LayeredConfig {
    /// The smallest datagram that fits the headers.
    pub const MIN_PACKET_BYTES: u32 =
        (crate::transport::wire::TFRC_DATA_HEADER_LEN + wire::MEDIA_HEADER_LEN) as u32;

    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.layers == 0 || self.packets_per_layer == 0 || self.packets_per_layer > 64 {
            return Err(
                "layers and packets_per_layer must be positive (packets_per_layer at most 64)"
                    .into(),
            );
        }
        if self.fps == 0 || self.fps > 1000 {
            return Err(format!("fps must be 1..=1000, got {}", self.fps));
        }
        if self.packet_bytes < Self::MIN_PACKET_BYTES || self.packet_bytes > 65_000 {
            return Err(format!(
                "packet_bytes must be {}..=65000, got {}",
                Self::MIN_PACKET_BYTES,
                self.packet_bytes
            ));
        }
        if !(0.0..1.0).contains(&self.alpha_max) || !(0.0..=1.0).contains(&self.beta) {
            return Err("alpha_max must be in [0, 1) and beta in [0, 1]".into());
        }
        if self.probation == Duration::ZERO {
            return Err("probation must be positive".into());
        }
        Ok(())
    }

    /// The time between frames.
    pub fn frame_interval(&self) -> Duration {
        Duration::from_nanos(1_000_000_000 / u64::from(self.fps))
    }

    /// Packets per frame.
    pub fn packets_per_frame(&self) -> u32 {
        u32::from(self.layers) * u32::from(self.packets_per_layer)
    }

    /// The stream's full rate (`app_max_bw`), whole datagrams counted.
    pub fn max_rate(&self) -> Rate {
        Rate::from_bps(
            u64::from(self.packets_per_frame())
                * u64::from(self.packet_bytes)
                * 8
                * u64::from(self.fps),
        )
    }
}
