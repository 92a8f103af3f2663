//! Celerity (Chen et al., "Celerity: A Low-Delay Multi-Party Conferencing
//! Solution", `papers/celerity.txt`) as a sans-IO peer.
//!
//! One [`CelerityPeer`] runs at every participant. It is at once
//!
//! - the **source** of its own session: every report interval it packs
//!   delay-bounded trees over the link rates the heads report (§3,
//!   Algorithm 2), computes a critical cut and `U′(R)` (§4.3, §5.2) and
//!   sends its media along the trees at their total rate, putting the cut
//!   and `U′` in every data header;
//! - a **relay**: data packets are self-routing — each carries the
//!   subtree it still has to reach — and a peer forwards them to its
//!   children (§5.1), each session within the per-link rate its tail
//!   granted (token bucket at the head);
//! - the **tail** of every overlay link into it: from per-link sequence
//!   numbers and one-way delays it measures loss and queuing delay, and
//!   every control interval updates the per-session rates by the
//!   primal-subgradient-dual rule (10)–(11) (Algorithm 1) and tells the
//!   head;
//! - the **head** of every overlay link out of it: every report interval it
//!   reports each session's rates on its links (and their delays) to the
//!   session's source (§5.1).
//!
//! [`Model`](meshcast_plan::Model) chooses the trees: the paper's 2-hop
//! trees, deeper delay-bounded trees (past the paper), or the Simulcast and
//! Mutualcast baselines driven by the same link rate control.
//!
//! Heads also send coded repairs on the link rate the trees leave unused,
//! from which tails recover what their links lost (§5.4, the `recovery`
//! module, with `meshcast_coding`).

pub mod app_lag;
mod base_delay;
mod dispersion;
mod peer;
mod recovery;
mod schedule;
pub mod wire;

pub use peer::{
    APP_LEAD_CLAMP, APP_LEAD_FROM, APP_LEAD_MEMORY, BALANCE_TOLERANCE, BUNDLE_SHORT,
    BUNDLE_WAIT_MS, CAUTIOUS_HOLD, CUT_SHARE_GAIN, CelerityConfig, CelerityParams, CelerityPeer,
    DEFAULT_DELAY_BOUND, DELIVERY_SMOOTHING, DRAIN_HOLD_QUEUE, DRIFT_BAND, DRIFT_CAP, DRIFT_LATE,
    DRIFT_SMOOTHING, EXCESS_FACTOR, EXCESS_WAIT, EXCESS_WINDOW, FLOOR_BUDGET, FLOOR_SHARE_BUDGET,
    JOIN_NEWS, JOIN_RATE_DEFAULT, LATE_FADE_OWN, LATE_FADE_STEP, MAX_APP_MEDIA, MEDIA_BYTES,
    MIN_PACKET_BYTES, PACE_MEMBERS, PRICE_LEVEL_MAX, PeerCounters, REBOUND_DELIVERY, REBOUND_FALL,
    REBOUND_HOLD, REBOUND_PEAK_DECAY, REBOUND_SHARE, RIVAL_SHARE, SHORT_DATA_RESTART,
    SIZE_HYSTERESIS, SIZE_SETTLE, SIZE_TREE_SHARE, SLACK_CEILING_MIN, SPARE_PRICE,
    SPARE_PROPAGATION, START_RESUME_GAIN, STEADY_BAND, max_media_bytes,
};
