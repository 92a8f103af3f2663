//! The `[conference]` section: a multi-party conference over the
//! scenario's underlay, and what it needs from the rest of the scenario —
//! who is present when, and the network state the central optimum is
//! computed for.

use crate::scenario::{EventKind, Locator, Scenario, ScenarioError};
use crate::video::VideoParams;
use meshcast_core::{Duration, NodeId, Rate, Time};
use meshcast_plan::Model;
use meshcast_plan::optimum::{self, OptimumError, Problem, Scheme, Utility};
use meshcast_proto::celerity::{CelerityParams, MEDIA_BYTES};
use meshcast_sim::{LinkId, Network, routing};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// The longest `video_lag_ms` a scenario may ask: ten seconds, far past
/// any encoder's rate control.
const MAX_VIDEO_LAG_MS: f64 = 10_000.0;

/// The widest `start_spread_ms` a scenario may ask: a second, so that
/// every member is up long before the first report window.
const MAX_START_SPREAD_MS: f64 = 1_000.0;

/// The highest `video_fps` a scenario may ask (the simulator runs every
/// frame as an event; no camera is faster).
const MAX_VIDEO_FPS: f64 = 240.0;

/// The port every participant's peer binds.
pub const CONFERENCE_PORT: u16 = 5000;

/// How sessions are delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Celerity: tree packing over link rates from the loss+delay link
    /// rate control.
    Celerity,
    /// One-hop star per session, same link rate control.
    Simulcast,
    /// Star plus one depth-2 tree per relay, same link rate control.
    Mutualcast,
}

/// Celerity's tree model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Delay-bounded trees of any depth (meshcast's default; reaches the
    /// network-coding optimum when delays allow).
    Deep,
    /// The paper's 2-hop trees.
    Paper,
}

/// A checked `[conference]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct Conference {
    /// Delivery protocol.
    pub protocol: Protocol,
    /// Tree model of the Celerity protocol.
    pub variant: Variant,
    /// Participant node names; the index is the participant (and session)
    /// id.
    pub participants: Vec<String>,
    /// Protocol parameters.
    pub params: CelerityParams,
    /// Each participant's application is a simulated video encoder
    /// (`video_fps`; see [`crate::video`]) instead of the built-in source's
    /// even packets.
    pub video: Option<VideoParams>,
    /// In the simulator, the members present at the start join at seeded
    /// times spread over `[0, start_spread)` instead of all at zero (see
    /// [`start_offsets`](Conference::start_offsets)); zero by default.
    pub start_spread: Duration,
}

impl Conference {
    /// Each member's start within `start_spread`, drawn from the run's
    /// `seed` and the member's name (so that the same seed gives the same
    /// starts, and another seed shifts every member's timers by a few
    /// milliseconds against the others'). All zero when `start_spread` is.
    ///
    /// Why: the simulator is deterministic and a run on one underlay is a
    /// single sample of the control loops' path, whose figures move by a
    /// few hundredths between neighbouring parameter values. Seeds with a
    /// spread give independent samples of the same conference, which
    /// `score_underlays.py --seeds` averages (docs/celerity.md, "Scoring
    /// over seeds").
    pub fn start_offsets(&self, seed: u64) -> Vec<Duration> {
        use rand::RngExt as _;
        let spread = self.start_spread.as_secs_f64();
        self.participants
            .iter()
            .map(|p| {
                if spread == 0.0 {
                    return Duration::ZERO;
                }
                let mut rng = meshcast_core::rng::rng_from_seed(meshcast_core::rng::child_seed(
                    seed,
                    &format!("start:{p}"),
                ));
                Duration::from_secs_f64(rng.random_range(0.0..spread))
            })
            .collect()
    }

    /// The tree model peers use.
    pub fn model(&self) -> Model {
        match (self.protocol, self.variant) {
            (Protocol::Celerity, Variant::Deep) => Model::Deep,
            (Protocol::Celerity, Variant::Paper) => Model::TwoHop,
            (Protocol::Simulcast, _) => Model::Star,
            (Protocol::Mutualcast, _) => Model::Mutualcast,
        }
    }

    /// The utility of the central optimum, in bits/s (the peers' β and δ).
    pub fn utility(&self) -> Utility {
        Utility {
            beta: self.params.beta,
            delta_bps: self.params.delta_kbps * 1e3,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConference {
    protocol: Option<Spanned<String>>,
    variant: Option<Spanned<String>>,
    participants: Spanned<Vec<Spanned<String>>>,
    delay_bound_ms: Option<Spanned<f64>>,
    beta: Option<Spanned<f64>>,
    delta_kbps: Option<Spanned<f64>>,
    uprime_target_ms: Option<Spanned<f64>>,
    step: Option<Spanned<f64>>,
    settled_step: Option<Spanned<f64>>,
    drift_gain: Option<Spanned<f64>>,
    climb_s: Option<Spanned<f64>>,
    damping_ms: Option<Spanned<f64>>,
    quick_start_s: Option<Spanned<f64>>,
    change_quick_start_s: Option<Spanned<f64>>,
    steady_gain: Option<Spanned<f64>>,
    landing_gain: Option<Spanned<f64>>,
    cautious_gain: Option<Spanned<f64>>,
    media_bytes: Option<Spanned<i64>>,
    media_sizes: Option<Spanned<Vec<Spanned<i64>>>>,
    size_target_ms: Option<Spanned<f64>>,
    size_fanout: Option<bool>,
    size_slack: Option<Spanned<f64>>,
    moved_only: Option<bool>,
    max_rate_kbps: Option<Spanned<f64>>,
    queue_ceiling_ms: Option<Spanned<f64>>,
    ceiling_exponent: Option<Spanned<f64>>,
    ceiling_slack: Option<Spanned<f64>>,
    pace_to_heads: Option<bool>,
    share_guard: Option<Spanned<f64>>,
    standing_ratio: Option<Spanned<f64>>,
    gain_floor: Option<Spanned<f64>>,
    floor_share: Option<Spanned<f64>>,
    join_rate: Option<Spanned<f64>>,
    police_slack: Option<Spanned<f64>>,
    repair_ratio: Option<Spanned<f64>>,
    late_margin_ms: Option<Spanned<f64>>,
    age_margin_ms: Option<Spanned<f64>>,
    age_queue: Option<bool>,
    late_forecast: Option<bool>,
    late_loss: Option<Spanned<f64>>,
    late_gain: Option<Spanned<f64>>,
    balance: Option<Spanned<f64>>,
    spare: Option<bool>,
    resume: Option<Spanned<f64>>,
    start_resume: Option<Spanned<f64>>,
    rebound: Option<Spanned<f64>>,
    rebound_steady: Option<bool>,
    drain_hold: Option<Spanned<f64>>,
    app_lead: Option<Spanned<f64>>,
    late_release: Option<bool>,
    late_fade: Option<bool>,
    drain_release: Option<bool>,
    rebase: Option<bool>,
    path_changes: Option<bool>,
    route_news: Option<bool>,
    ask_alone: Option<bool>,
    overload_resume: Option<Spanned<f64>>,
    climb_fall: Option<Spanned<f64>>,
    fall_calm_s: Option<Spanned<f64>>,
    fall_price: Option<bool>,
    lone_share: Option<Spanned<f64>>,
    fresh_exit: Option<bool>,
    reach_news: Option<bool>,
    scale_in_windows: Option<bool>,
    burst_wait: Option<bool>,
    ahead_at_frame: Option<bool>,
    floor_rivals: Option<bool>,
    hop_queues: Option<bool>,
    source_slack: Option<bool>,
    source_excess: Option<bool>,
    rival_share: Option<bool>,
    floor_share_lift: Option<bool>,
    floor_dispersion: Option<bool>,
    burst: Option<Spanned<f64>>,
    bundle: Option<bool>,
    bundle_wait_ms: Option<Spanned<f64>>,
    video_fps: Option<Spanned<f64>>,
    keyframe_interval_s: Option<Spanned<f64>>,
    keyframe_ratio: Option<Spanned<f64>>,
    keyframe_budget: Option<Spanned<bool>>,
    keyframe_requests: Option<Spanned<bool>>,
    video_kbps: Option<Spanned<f64>>,
    video_lag_ms: Option<Spanned<f64>>,
    start_spread_ms: Option<Spanned<f64>>,
}

impl RawConference {
    /// Where `video_fps` is, if given (a node refuses it: its media are
    /// its `[media]`'s).
    pub(crate) fn video_fps_span(&self) -> Option<std::ops::Range<usize>> {
        self.video_fps.as_ref().map(Spanned::span)
    }

    /// Where `start_spread_ms` is, if given (a node refuses it: real
    /// processes start when they are started).
    pub(crate) fn start_spread_span(&self) -> Option<std::ops::Range<usize>> {
        self.start_spread_ms.as_ref().map(Spanned::span)
    }
}

/// One of the named `options` (the first when the field is absent).
fn choice<T: Copy>(
    value: &Option<Spanned<String>>,
    field: &str,
    options: &[(&str, T)],
    loc: &Locator<'_>,
) -> Result<T, ScenarioError> {
    let Some(v) = value else {
        return Ok(options[0].1);
    };
    options
        .iter()
        .find(|(name, _)| *name == v.get_ref().as_str())
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            let names: Vec<String> = options.iter().map(|(n, _)| format!("{n:?}")).collect();
            loc.err(
                v.span(),
                field,
                format!(
                    "unknown value {:?} (expected one of {})",
                    v.get_ref(),
                    names.join(", ")
                ),
            )
        })
}

pub(crate) fn check(
    raw: &RawConference,
    loc: &Locator<'_>,
    node_ref: &crate::scenario::NodeRef<'_>,
) -> Result<Conference, ScenarioError> {
    let protocol = choice(
        &raw.protocol,
        "conference.protocol",
        &[
            ("celerity", Protocol::Celerity),
            ("simulcast", Protocol::Simulcast),
            ("mutualcast", Protocol::Mutualcast),
        ],
        loc,
    )?;
    let variant = choice(
        &raw.variant,
        "conference.variant",
        &[("deep", Variant::Deep), ("paper", Variant::Paper)],
        loc,
    )?;
    let mut participants = Vec::new();
    for (i, p) in raw.participants.get_ref().iter().enumerate() {
        let id = node_ref(p, &format!("conference.participants[{i}]"))?;
        if participants.contains(&id) {
            return Err(loc.err(
                p.span(),
                &format!("conference.participants[{i}]"),
                format!("{id:?} is listed twice"),
            ));
        }
        participants.push(id);
    }
    if !(2..=meshcast_proto::celerity::wire::MAX_PARTICIPANTS).contains(&participants.len()) {
        return Err(loc.err(
            raw.participants.span(),
            "conference.participants",
            "a conference has 2 to 16 participants",
        ));
    }
    // A number field, if present, that must be finite and pass `ok`; `what` is the error.
    let checked = |v: &Option<Spanned<f64>>,
                   field: &str,
                   ok: &dyn Fn(f64) -> bool,
                   what: &str|
     -> Result<Option<f64>, ScenarioError> {
        match v {
            None => Ok(None),
            Some(s) if s.get_ref().is_finite() && ok(*s.get_ref()) => Ok(Some(*s.get_ref())),
            Some(s) => Err(loc.err(s.span(), field, what)),
        }
    };
    let positive = |v: &Option<Spanned<f64>>, field: &str| {
        checked(v, field, &|v| v > 0.0, "must be a positive number")
    };
    let non_negative = |v: &Option<Spanned<f64>>, field: &str| {
        checked(v, field, &|v| v >= 0.0, "must be a number >= 0")
    };
    let at_least_one = |v: &Option<Spanned<f64>>, field: &str| {
        checked(v, field, &|v| v >= 1.0, "must be a number >= 1")
    };
    let fraction = |v: &Option<Spanned<f64>>, field: &str| {
        checked(
            v,
            field,
            &|v| (0.0..=1.0).contains(&v),
            "must be a number in 0..=1",
        )
    };
    let positive_fraction = |v: &Option<Spanned<f64>>, field: &str| {
        checked(
            v,
            field,
            &|v| v > 0.0 && v <= 1.0,
            "must be a number in (0, 1]",
        )
    };
    // The margins that are parts of the delay budget default to the same
    // parts of this bound as of the default one.
    let mut params = match positive(&raw.delay_bound_ms, "conference.delay_bound_ms")? {
        Some(d) => CelerityParams::with_delay_bound(Duration::from_secs_f64(d / 1e3)),
        None => CelerityParams::default(),
    };
    if let Some(b) = positive(&raw.beta, "conference.beta")? {
        params.beta = b;
    }
    if let Some(d) = positive(&raw.delta_kbps, "conference.delta_kbps")? {
        params.delta_kbps = d;
    }
    if let Some(a) = positive(&raw.step, "conference.step")? {
        params.step = a;
    }
    if let Some(a) = non_negative(&raw.settled_step, "conference.settled_step")? {
        params.settled_step = a;
    }
    if let Some(a) = non_negative(&raw.drift_gain, "conference.drift_gain")? {
        params.drift_gain = a;
    }
    if let Some(v) = non_negative(&raw.climb_s, "conference.climb_s")? {
        params.climb = Duration::from_secs_f64(v);
    }
    if let Some(d) = positive(&raw.damping_ms, "conference.damping_ms")? {
        params.damping = Duration::from_secs_f64(d / 1e3);
    }
    if let Some(v) = non_negative(&raw.quick_start_s, "conference.quick_start_s")? {
        params.quick_start = Duration::from_secs_f64(v);
    }
    if let Some(v) = non_negative(&raw.change_quick_start_s, "conference.change_quick_start_s")? {
        params.change_quick_start = Duration::from_secs_f64(v);
    }
    if let Some(v) = positive(&raw.steady_gain, "conference.steady_gain")? {
        params.steady_gain = v;
    }
    if let Some(v) = positive(&raw.landing_gain, "conference.landing_gain")? {
        params.landing_gain = v;
    }
    if let Some(v) = positive(&raw.cautious_gain, "conference.cautious_gain")? {
        params.cautious_gain = v;
    }
    // A packet's media bytes, within `MEDIA_BYTES`.
    let media_size = |b: &Spanned<i64>, key: &str, what: &str| {
        u32::try_from(*b.get_ref())
            .ok()
            .filter(|b| MEDIA_BYTES.contains(b))
            .ok_or_else(|| loc.err(b.span(), key, what))
    };
    if let Some(m) = &raw.media_bytes {
        params.media_bytes = media_size(m, "conference.media_bytes", "must be 16..=1400")?;
    }
    if let Some(sizes) = &raw.media_sizes {
        if sizes.get_ref().is_empty() {
            return Err(loc.err(
                sizes.span(),
                "conference.media_sizes",
                "must list at least one size (leave it out for media_bytes)",
            ));
        }
        params.media_sizes = sizes
            .get_ref()
            .iter()
            .map(|b| media_size(b, "conference.media_sizes", "each must be 16..=1400"))
            .collect::<Result<_, _>>()?;
    }
    if let Some(r) = positive(&raw.max_rate_kbps, "conference.max_rate_kbps")? {
        params.max_rate = Some(Rate::from_kbps_f64(r));
    }
    let bound = params.delay_bound.as_secs_f64() * 1e3;
    // The guards' margins, ms: at least 0 and below the delay bound.
    let below_bound = |v: &Option<Spanned<f64>>, field: &str| {
        checked(
            v,
            field,
            &|v| v >= 0.0 && v < bound,
            "must be a number >= 0 and below delay_bound_ms",
        )
    };
    // 0 turns the ceiling off (the paper's plain price).
    if let Some(v) = below_bound(&raw.queue_ceiling_ms, "conference.queue_ceiling_ms")? {
        params.queue_ceiling = (v > 0.0).then(|| Duration::from_secs_f64(v / 1e3));
    }
    // 0 keeps the plain beta.
    if let Some(v) = below_bound(&raw.uprime_target_ms, "conference.uprime_target_ms")? {
        params.uprime_target = (v > 0.0).then(|| Duration::from_secs_f64(v / 1e3));
    }
    // 0 sends every packet at media_bytes.
    if let Some(v) = below_bound(&raw.size_target_ms, "conference.size_target_ms")? {
        params.size_target = (v > 0.0).then(|| Duration::from_secs_f64(v / 1e3));
    }
    if let Some(v) = raw.size_fanout {
        params.size_fanout = v;
    }
    // 0 sizes by the target alone.
    if let Some(v) = fraction(&raw.size_slack, "conference.size_slack")? {
        params.size_slack = v;
    }
    if let Some(v) = raw.moved_only {
        params.moved_only = v;
    }
    if let Some(v) = positive_fraction(&raw.ceiling_exponent, "conference.ceiling_exponent")? {
        params.ceiling_exponent = v;
    }
    // 0 turns it off (one ceiling for every link).
    if let Some(v) = fraction(&raw.ceiling_slack, "conference.ceiling_slack")? {
        params.ceiling_slack = v;
    }
    if let Some(p) = raw.pace_to_heads {
        params.pace_to_heads = Some(p);
    }
    if let Some(f) = raw.fresh_exit {
        params.fresh_exit = f;
    }
    if let Some(r) = raw.reach_news {
        params.reach_news = r;
    }
    if let Some(w) = raw.scale_in_windows {
        params.scale_in_windows = w;
    }
    if let Some(f) = raw.fall_price {
        params.fall_price = f;
    }
    // 0 turns it off (lone control is never held).
    if let Some(v) = fraction(&raw.lone_share, "conference.lone_share")? {
        params.lone_share = v;
    }
    if let Some(w) = raw.burst_wait {
        params.burst_wait = w;
    }
    if let Some(a) = raw.ahead_at_frame {
        params.ahead_at_frame = a;
    }
    if let Some(r) = raw.floor_rivals {
        params.floor_rivals = r;
    }
    if let Some(h) = raw.hop_queues {
        params.hop_queues = h;
    }
    if let Some(s) = raw.source_slack {
        params.source_slack = s;
    }
    if let Some(e) = raw.source_excess {
        params.source_excess = e;
    }
    if let Some(r) = raw.rival_share {
        params.rival_share = r;
    }
    if let Some(l) = raw.floor_share_lift {
        params.floor_share_lift = l;
    }
    if let Some(d) = raw.floor_dispersion {
        params.floor_dispersion = d;
    }
    if let Some(v) = non_negative(&raw.share_guard, "conference.share_guard")? {
        params.share_guard = v;
    }
    if let Some(v) = fraction(&raw.standing_ratio, "conference.standing_ratio")? {
        params.standing_ratio = v;
    }
    if let Some(v) = non_negative(&raw.gain_floor, "conference.gain_floor")? {
        params.gain_floor = v;
    }
    if let Some(v) = positive_fraction(&raw.floor_share, "conference.floor_share")? {
        params.floor_share = v;
    }
    if let Some(v) = positive_fraction(&raw.join_rate, "conference.join_rate")? {
        params.join_rate = v;
    }
    if let Some(v) = fraction(&raw.police_slack, "conference.police_slack")? {
        params.police_slack = v;
    }
    if let Some(v) = fraction(&raw.repair_ratio, "conference.repair_ratio")? {
        params.repair_ratio = v;
    }
    if let Some(v) = below_bound(&raw.late_margin_ms, "conference.late_margin_ms")? {
        params.late_margin = Duration::from_secs_f64(v / 1e3);
    }
    if let Some(v) = below_bound(&raw.age_margin_ms, "conference.age_margin_ms")? {
        params.age_margin = Duration::from_secs_f64(v / 1e3);
    }
    if let Some(v) = raw.age_queue {
        params.age_queue = v;
    }
    if let Some(v) = raw.late_forecast {
        params.late_forecast = v;
    }
    if let Some(v) = non_negative(&raw.late_loss, "conference.late_loss")? {
        params.late_loss = v;
    }
    if let Some(v) = non_negative(&raw.late_gain, "conference.late_gain")? {
        params.late_gain = v;
    }
    if let Some(v) = non_negative(&raw.balance, "conference.balance")? {
        params.balance = v;
    }
    if let Some(v) = raw.spare {
        params.spare = v;
    }
    if let Some(v) = fraction(&raw.resume, "conference.resume")? {
        params.resume = v;
    }
    if let Some(v) = fraction(&raw.start_resume, "conference.start_resume")? {
        params.start_resume = v;
    }
    if let Some(v) = fraction(&raw.rebound, "conference.rebound")? {
        params.rebound = v;
    }
    if let Some(r) = raw.rebound_steady {
        params.rebound_steady = r;
    }
    if let Some(v) = checked(
        &raw.app_lead,
        "conference.app_lead",
        &|v| (0.0..=2.0).contains(&v),
        "must be a number in 0..=2",
    )? {
        params.app_lead = v;
    }
    if let Some(v) = non_negative(&raw.drain_hold, "conference.drain_hold")? {
        params.drain_hold = v;
    }
    if let Some(r) = raw.late_release {
        params.late_release = r;
    }
    if let Some(r) = raw.late_fade {
        params.late_fade = r;
    }
    if let Some(r) = raw.drain_release {
        params.drain_release = r;
    }
    if let Some(r) = raw.rebase {
        params.rebase = r;
    }
    if let Some(r) = raw.path_changes {
        params.path_changes = r;
    }
    if let Some(r) = raw.route_news {
        params.route_news = r;
    }
    if let Some(r) = raw.ask_alone {
        params.ask_alone = r;
    }
    if let Some(v) = fraction(&raw.overload_resume, "conference.overload_resume")? {
        params.overload_resume = v;
    }
    if let Some(v) = fraction(&raw.climb_fall, "conference.climb_fall")? {
        params.climb_fall = v;
    }
    if let Some(v) = non_negative(&raw.fall_calm_s, "conference.fall_calm_s")? {
        params.fall_calm = Duration::from_secs_f64(v);
    }
    if let Some(v) = at_least_one(&raw.burst, "conference.burst")? {
        params.burst = v;
    }
    if let Some(v) = raw.bundle {
        params.bundle = v;
    }
    if let Some(v) = below_bound(&raw.bundle_wait_ms, "conference.bundle_wait_ms")? {
        params.bundle_wait = Duration::from_secs_f64(v / 1e3);
    }
    let video = match checked(
        &raw.video_fps,
        "conference.video_fps",
        &|v| v > 0.0 && v <= MAX_VIDEO_FPS,
        "must be a number in (0, 240]",
    )? {
        Some(fps) => {
            let interval = positive(&raw.keyframe_interval_s, "conference.keyframe_interval_s")?
                .unwrap_or(2.0);
            let ratio =
                at_least_one(&raw.keyframe_ratio, "conference.keyframe_ratio")?.unwrap_or(8.0);
            let lag_ms = checked(
                &raw.video_lag_ms,
                "conference.video_lag_ms",
                &|v| (0.0..=MAX_VIDEO_LAG_MS).contains(&v),
                "must be a number in 0..=10000",
            )?
            .unwrap_or(0.0);
            if let (Some(lag), Some(_)) = (&raw.video_lag_ms, &raw.video_kbps) {
                return Err(loc.err(
                    lag.span(),
                    "conference.video_lag_ms",
                    "an encoder held at conference.video_kbps follows no offered rate to lag behind",
                ));
            }
            Some(VideoParams {
                fps,
                keyframe_interval: Duration::from_secs_f64(interval),
                keyframe_ratio: ratio,
                keyframe_budget: raw.keyframe_budget.as_ref().is_none_or(|b| *b.get_ref()),
                // An encoder held at a fixed rate stands for an
                // application that follows no feedback (ffmpeg's command
                // line): it honours no requests unless told to.
                keyframe_requests: raw
                    .keyframe_requests
                    .as_ref()
                    .map_or(raw.video_kbps.is_none(), |b| *b.get_ref()),
                fixed_bps: positive(&raw.video_kbps, "conference.video_kbps")?.map(|k| k * 1e3),
                lag: Duration::from_secs_f64(lag_ms / 1e3),
            })
        }
        None => {
            for (v, field) in [
                (&raw.keyframe_interval_s, "conference.keyframe_interval_s"),
                (&raw.keyframe_ratio, "conference.keyframe_ratio"),
                (&raw.video_kbps, "conference.video_kbps"),
                (&raw.video_lag_ms, "conference.video_lag_ms"),
            ] {
                if let Some(v) = v {
                    return Err(loc.err(v.span(), field, "needs conference.video_fps"));
                }
            }
            for (v, field) in [
                (&raw.keyframe_budget, "conference.keyframe_budget"),
                (&raw.keyframe_requests, "conference.keyframe_requests"),
            ] {
                if let Some(v) = v {
                    return Err(loc.err(v.span(), field, "needs conference.video_fps"));
                }
            }
            None
        }
    };
    let start_spread_ms = checked(
        &raw.start_spread_ms,
        "conference.start_spread_ms",
        &|v| (0.0..=MAX_START_SPREAD_MS).contains(&v),
        "must be a number in 0..=1000",
    )?
    .unwrap_or(0.0);
    Ok(Conference {
        protocol,
        variant,
        participants,
        params,
        video,
        start_spread: Duration::from_secs_f64(start_spread_ms / 1e3),
    })
}

/// When each participant is present, from the join/leave events: a
/// participant whose first membership event is a join starts absent.
pub fn presence(sc: &Scenario, c: &Conference) -> Vec<Vec<(Time, Time)>> {
    let end = Time::from_secs_f64(sc.duration_s);
    c.participants
        .iter()
        .map(|p| {
            let mut changes: Vec<(Time, bool)> = sc
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Join { node } if node == p => {
                        Some((Time::from_secs_f64(e.at_s), true))
                    }
                    EventKind::Leave { node } if node == p => {
                        Some((Time::from_secs_f64(e.at_s), false))
                    }
                    _ => None,
                })
                .collect();
            changes.sort_by_key(|&(t, _)| t);
            let mut since = match changes.first() {
                Some(&(_, true)) => None,
                _ => Some(Time::ZERO),
            };
            let mut out = Vec::new();
            for (t, join) in changes {
                match (join, since) {
                    (true, None) => since = Some(t),
                    (false, Some(s)) => {
                        out.push((s, t));
                        since = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = since {
                out.push((s, end));
            }
            out
        })
        .collect()
}

/// The network a conference sees at time `t`: which links are up, their
/// capacities, and the cross traffic then active (its mean rate on the
/// wire taken off the capacity of every link on its route).
fn state_at(sc: &Scenario, net: &Network, dirs: &[Vec<LinkId>], t: f64) -> (Vec<bool>, Vec<f64>) {
    let mut up = vec![true; net.links().len()];
    let mut cap: Vec<f64> = net
        .links()
        .iter()
        .map(|l| l.params.capacity.as_bps() as f64)
        .collect();
    let mut events: Vec<_> = sc.events.iter().filter(|e| e.at_s <= t).collect();
    events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    for e in &events {
        match &e.kind {
            EventKind::LinkDown { link } => dirs[*link].iter().for_each(|d| up[d.index()] = false),
            EventKind::LinkUp { link } => dirs[*link].iter().for_each(|d| up[d.index()] = true),
            EventKind::Capacity { link, rate } => dirs[*link]
                .iter()
                .for_each(|d| cap[d.index()] = rate.as_bps() as f64),
            _ => {}
        }
    }
    for e in &events {
        if let EventKind::Traffic {
            from,
            to,
            rate,
            packet_bytes,
            until_s,
            pattern,
            ..
        } = &e.kind
        {
            if *until_s <= t {
                continue;
            }
            let (Some(a), Some(b)) = (net.node_id(from), net.node_id(to)) else {
                continue;
            };
            let duty = match pattern {
                meshcast_proto::traffic::Pattern::OnOff {
                    mean_on, mean_off, ..
                } => mean_on.as_secs_f64() / (mean_on.as_secs_f64() + mean_off.as_secs_f64()),
                _ => 1.0,
            };
            let wire = rate.as_bps() as f64
                * duty
                * f64::from(packet_bytes + meshcast_core::IP_UDP_OVERHEAD)
                / f64::from(*packet_bytes);
            for l in routing::path(net, &up, a, b).unwrap_or_default() {
                cap[l.index()] = (cap[l.index()] - wire).max(0.0);
            }
        }
    }
    (up, cap)
}

/// The optimum of every scheme (`coded`, `twohop`, `simulcast`,
/// `mutualcast`): participant name → session rate in kbit/s.
pub type Optima = BTreeMap<&'static str, BTreeMap<String, f64>>;

/// Each scheme's link prices at its optimum (`coded`, `twohop`,
/// `simulcast`, `mutualcast`): link id → price in ms (see
/// [`optimum_and_prices_at`]).
pub type LinkPrices = BTreeMap<&'static str, BTreeMap<String, f64>>;

/// When what a conference sees can change: the start, every event, and
/// the end of every cross-traffic flow within the run (sorted, distinct).
pub fn change_times(sc: &Scenario) -> Vec<f64> {
    let mut times = vec![0.0];
    for e in &sc.events {
        times.push(e.at_s);
        if let EventKind::Traffic { until_s, .. } = &e.kind {
            times.push(*until_s);
        }
    }
    times.retain(|&t| t < sc.duration_s);
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
}

/// The central optimum as a step function: `(from_s, optima)` at every
/// [`change_times`] instant, each holding until the next.
pub fn optimum_steps(sc: &Scenario) -> Result<Vec<(f64, Optima)>, OptimumError> {
    change_times(sc)
        .into_iter()
        .map(|t| optimum_at(sc, t).map(|o| (t, o)))
        .collect()
}

/// The central optimum at time `t` for every scheme: participant name →
/// session rate in kbit/s. Participants absent at `t` are left out.
pub fn optimum_at(sc: &Scenario, t: f64) -> Result<Optima, OptimumError> {
    optimum_and_prices_at(sc, t).map(|(optima, _)| optima)
}

/// [`optimum_at`] with each scheme's link prices at its optimum: link id
/// (`from->to`, as `summary.json`'s `links` name them) → the multiplier of
/// the link's capacity, in milliseconds of Celerity's delay price (see
/// [`meshcast_plan::optimum`]), rounded to 0.1 ms. Links whose price
/// rounds to 0 are left out.
pub fn optimum_and_prices_at(sc: &Scenario, t: f64) -> Result<(Optima, LinkPrices), OptimumError> {
    let Some(c) = &sc.conference else {
        return Err(OptimumError::Invalid(
            "the scenario has no [conference]".into(),
        ));
    };
    let (net, dirs) =
        crate::build::network(sc).map_err(|e| OptimumError::Invalid(e.to_string()))?;
    let net = &net;
    let (up, capacity_bps) = state_at(sc, net, &dirs, t);
    let when = Time::from_secs_f64(t);
    let members: Vec<(usize, NodeId)> = presence(sc, c)
        .iter()
        .enumerate()
        .filter(|(_, iv)| iv.iter().any(|&(a, b)| a <= when && when < b))
        .filter_map(|(i, _)| net.node_id(&c.participants[i]).map(|n| (i, n)))
        .collect();
    let n = members.len();
    let mut routes = vec![None; n * n];
    let mut delays = vec![Duration::ZERO; n * n];
    for (a, &(_, u)) in members.iter().enumerate() {
        for (b, &(_, v)) in members.iter().enumerate() {
            if a == b {
                continue;
            }
            if let Some(path) = routing::path(net, &up, u, v) {
                let d = path.iter().fold(Duration::ZERO, |acc, l| {
                    acc + net.links()[l.index()].params.delay
                });
                delays[a * n + b] = d;
                routes[a * n + b] = Some(path.iter().map(|l| l.index()).collect());
            }
        }
    }
    let problem = Problem {
        n,
        routes,
        delays,
        capacity_bps,
        bound: c.params.delay_bound,
        utility: c.utility(),
    };
    let mut out = BTreeMap::new();
    let mut prices = BTreeMap::new();
    for (name, scheme) in [
        ("coded", Scheme::Coded),
        ("twohop", Scheme::TwoHop),
        ("simulcast", Scheme::Simulcast),
        ("mutualcast", Scheme::Mutualcast),
    ] {
        let (rates, link_prices) = if n >= 2 {
            let o = optimum::solve(&problem, scheme)?;
            (o.rates_bps, o.link_prices)
        } else {
            (vec![0.0; n], Vec::new())
        };
        prices.insert(
            name,
            link_prices
                .iter()
                .enumerate()
                .map(|(l, &p)| ((p * 1e4).round() / 10.0, l))
                .filter(|&(ms, _)| ms > 0.0)
                .map(|(ms, l)| (net.link_name(LinkId(l as u32)), ms))
                .collect(),
        );
        out.insert(
            name,
            members
                .iter()
                .zip(rates)
                .map(|(&(i, _), r)| (c.participants[i].clone(), (r / 100.0).round() / 10.0))
                .collect(),
        );
    }
    Ok((out, prices))
}
