//! The Celerity peer state machine.

use super::app_lag::RateHistory;
use super::base_delay::{
    BaseDelay, PATH_FALL, PATH_FALL_BOTH, PATH_FALL_WAIT, PATH_MATURE, PATH_STEP, PathWatch, Rebase,
};
use super::dispersion::Dispersion;
use super::recovery::{self, LinkNow, RepairReceiver, RepairSender};
use super::schedule::Schedule;
use super::wire::{self, Control, DataHeader, LinkHeader, MAX_PARTICIPANTS, Packet, TreeEntry};
use meshcast_core::{
    Addr, DropCause, Duration, Endpoint, Event, FlowId, IP_UDP_OVERHEAD, LinkControl, Rate, Time,
    Transmit,
};
use meshcast_plan::{Cut, Model, Packing, SessionGraph, Tree};
use std::collections::VecDeque;
use thiserror::Error;

/// Protocol parameters. Rates inside the controller are kbit/s of media
/// payload; prices are a loss fraction plus a queuing delay in seconds
/// (§4.2), so `β / (R + δ)` is compared with them directly.
#[derive(Clone, Debug, PartialEq)]
pub struct CelerityParams {
    /// End-to-end delay bound `D` for tree packing (§5.1: 200 ms).
    pub delay_bound: Duration,
    /// Utility weight β of `U(z) = β·ln(z + δ)`, z in kbit/s (§5.3). At
    /// equilibrium a critical link's price equals `β / (R + δ)`: 18 puts
    /// about 70 ms of queue on the bottleneck at 240 kbit/s (three full
    /// packets at 480 kbit/s), enough to keep it busy through the loop's
    /// ripple and far enough below the delay bound that few packets come
    /// late.
    pub beta: f64,
    /// Utility offset δ, kbit/s (bounds `U′` at zero rate).
    pub delta_kbps: f64,
    /// The conference's price level: the most the median session's `U′`
    /// may be as the links weigh it, or `None` for the plain `β`. A link's
    /// price is a delay, and at equilibrium it meets `U′ = β / (R + δ)` on
    /// the session's critical links; at slow rates that is far past any
    /// delay the bound can price (a 15-kbit/s session's `U′` is 720 ms),
    /// and the loop settled where loss and late packets made up the
    /// difference: on random underlays with cores of 150–750 kbit/s the
    /// sessions lost 12.7% of their packets on average. So each tail reads
    /// every session's `U′` divided by a level `s` (its gain, the gain
    /// floor's test, rule (10)'s step), as if `β` were `β / s`, while the
    /// session's own rate `β / U′ − δ` and the `U′` its source sends keep
    /// the plain `β`. Outside the quick-start windows, every control
    /// interval each member moves `s` by the factor `(want / s)^(1/50)`,
    /// with `want` the median `U′` over the target, within 1 ..=
    /// [`PRICE_LEVEL_MAX`]; all members see the same sessions' `U′` (every
    /// data packet carries its session's) and so move alike, and the
    /// proportionally fair allocation does not depend on `β`, only the
    /// price level at which the loop finds it. The median is over the
    /// present sessions whose `U′` is known and not zero, this member's
    /// own included (the upper one of an even count). Celerity's own trees
    /// only: the Simulcast and Mutualcast baselines keep the plain `β`.
    /// Default 100 ms, half the default delay bound (docs/celerity.md,
    /// "The conference's price level").
    pub uprime_target: Option<Duration>,
    /// κ, the step of rule (10) relative to the link's rate: each control
    /// interval `c += κ·c·(gain − price)/U′`, i.e. α = κ·c/U′ (a per-link
    /// step size that keeps the paper's equilibrium and scales with the
    /// rate). Changes are held within −30% / +10% (+10%·gain in quick
    /// start). docs/celerity.md derives the default from the loop's phase
    /// margin. In the climb after the quick-start windows (see
    /// [`climb`](Self::climb)) [`settled_step`](Self::settled_step)
    /// replaces it where set.
    pub step: f64,
    /// κ in the climb after the quick-start windows (see
    /// [`climb`](Self::climb)), on Celerity's own trees; 0 leaves
    /// [`step`](Self::step) there too. [`step`](Self::step) holds in every
    /// quick-start window (where the dumbbell's start line was tuned with
    /// it) and after the climb. The Simulcast and Mutualcast baselines keep
    /// [`step`](Self::step) everywhere, as they keep the paper's loop
    /// elsewhere (on their trees too, as it acted until the second session
    /// of 2026-11-29, it put four of Mutualcast's fifteen dumbbell points
    /// outside 10% of 120 kbit/s).
    ///
    /// After the start's window the sessions of a random underlay still
    /// have to move from about equal rates to a split in which a lone
    /// member, or a session crossing one bottleneck where the others cross
    /// two, gets two or three times what the others get, and they do so at
    /// rule (10)'s pace: with κ = 0.015 throughout, 66 of the ninety core
    /// underlays have every session at 0.8 of the coded optimum over
    /// \[40,70\], 79 over \[70,100\] and 85 over \[100,200\]. 0.02 (the
    /// default) after the windows without end gave 71 over \[40,70\] and 87
    /// over \[100,200\], but one of the dumbbell's 240 neighbouring points
    /// then missed a window by 0.64 kbit/s (docs/celerity-log.md, "The
    /// settled step and the drift without end").
    /// The loop's crossover moves from about 1.3 to 1.7 rad/s: the trend
    /// term's lead grows from about 60° to 70° and the measurement delay's
    /// lag from about 25° to 35°, a few degrees of phase margin less ("Step
    /// size" among the decisions in docs/celerity.md).
    pub settled_step: f64,
    /// The drift's gain: a heavy ball for the climb. In the climb after the
    /// quick-start windows (see [`climb`](Self::climb)), on Celerity's own
    /// trees, each session keeps per link its rule (10) gradient smoothed
    /// over about seven seconds ([`DRIFT_SMOOTHING`]), in and out of its
    /// cut: the drift. Where the drift is upward by more than
    /// [`DRIFT_BAND`], the gradient of each interval gains `drift_gain`
    /// times the excess (at most [`DRIFT_CAP`] of it), so a session far
    /// under its optimum on a link climbs up to `1 + drift_gain` times as
    /// fast, while a link about its equilibrium, whose gradient averages
    /// out, steps as before. 0 turns it off.
    ///
    /// Not followed: a downward drift (followed both ways, the default
    /// dumbbell point failed two lines: D under 90% of its optimum at
    /// 237 s, B at 190.0 kbit/s in \[420,500\]), and the drift on a link
    /// where the delay or the age guard charges or [`DRIFT_LATE`] of the
    /// session's packets come late (without that gate `long-11`'s lone
    /// fast session climbed on its link into a far member until its packets
    /// came late there, and the age guard priced the link to rate zero,
    /// where a stale guard keeps it: `long-11` fell from 0.81 to 0.47 of
    /// its optimum with 7.9% loss).
    ///
    /// At 3 (the default) after the windows without end it brought the
    /// first minute forward as far as the settled step (71 of the ninety
    /// core underlays at 0.8 over \[40,70\]), but the settled rates lost a
    /// little: `internet.toml` 0.910 of its optimum over nine points
    /// against 0.923, `wide` 0.827 against 0.838. Likely (not traced)
    /// because a drift followed only upward favours the sessions whose
    /// gradients swing most: their swings above the band count and those
    /// below it do not. Hence the climb, which ends it (docs/celerity.md,
    /// "The drift" and "The climb").
    pub drift_gain: f64,
    /// The climb: how long after a peer's quick-start windows
    /// [`settled_step`](Self::settled_step) and
    /// [`drift_gain`](Self::drift_gain) act; after it rule (10) steps at
    /// [`step`](Self::step) alone until the next window (a join, a leave,
    /// a link that goes down or comes back) opens a new climb after it.
    /// 0 turns both off. The climb is where the sessions of a random
    /// underlay move from the about equal rates the start's window leaves
    /// them at to their optimum's split. Left on past it, the two rules
    /// cost the settled rates: `internet.toml` got 0.896 of its optimum
    /// over its nine points (0.923 with neither), `long` 0.756 and `wide`
    /// 0.820 (0.779 and 0.838). Ended 40 s after the start's window they
    /// cost much less (0.920, 0.778 and 0.829) and the first minute is as
    /// fast: over \[40,70\] 75 of the ninety core underlays have every
    /// session at 0.8 of the coded optimum (66 with neither), over
    /// \[100,200\] 87 (85) (docs/celerity.md, "The climb").
    pub climb: Duration,
    /// Quick start (§5.5): for this long after the peer starts and after
    /// every membership change, a link's step is multiplied by
    /// `quick_start_gain` — until the link first shows congestion (loss
    /// plus queuing delay at half the `U′` of a known session with a rate
    /// on it), where its quick start ends early. A member past its own
    /// start window opens a shorter one when another member joins or
    /// leaves, or a link's route changes
    /// ([`change_quick_start`](Self::change_quick_start)).
    pub quick_start: Duration,
    /// The quick-start window a member past its own start window (see
    /// [`quick_start`](Self::quick_start)) opens when another member joins
    /// or leaves, or a route changes under one of its links
    /// ([`path_changes`](Self::path_changes)), at most `quick_start`;
    /// Celerity's own trees only (the
    /// Simulcast and Mutualcast baselines, and a link going down or coming
    /// back, keep `quick_start`). A newcomer's own start window is
    /// `quick_start` as at the conference's start.
    ///
    /// The window lets the links a change frees or opens ramp at quick
    /// start's pace, but within it the rules that hold a settled split
    /// (the price scale, the steady gain, late packets' charges, the gain
    /// floor, the drift) rest and the balance pulls the sessions towards
    /// equal `U′`; the old members' split, about right before the change,
    /// then had to move back at rule (10)'s pace. At 30 s (`quick_start`,
    /// as until the fortieth session of 2026-12-07) the random core
    /// underlays with a member joining at 100 s and another leaving at 170
    /// s had their worst session at 0.866 of its optimum over \[130,170\]
    /// and 0.897 over \[200,240\]; at 20 s (the default) 0.874 and 0.904
    /// (the held-out set 0.848 → 0.856 and 0.893 → 0.902), with 57% fewer
    /// late drops. 15 s did as well there but cost the `slow` family: on
    /// thin links a join's turbulence outlasts it, and the late charges
    /// measured then held a newcomer's session off its relays
    /// (docs/celerity.md, "A shorter window after a change"). After a
    /// route change the whole window cost late packets: the late charges
    /// rest in it while the longer routes take the packets nearer the
    /// bound (random core underlays whose core link fails at 100 s, seeds
    /// 1–90: 364 late drops over the 30-s window, 161 over the 20-s).
    pub change_quick_start: Duration,
    /// Step multiplier during quick start.
    pub quick_start_gain: f64,
    /// Step multiplier, in the start's quick-start window, of the interval
    /// in which a link's quick start ends (the landing), for the sessions
    /// whose own congestion signal ended it (their cut crosses the link
    /// and its queue, with the loss, has reached half their `U′`); the
    /// link's other sessions step at `quick_start_gain` in that interval,
    /// and every session at 1 after it. That interval sees the
    /// overshoot's queue and its trend at once (a price of about three
    /// times `U′` on the dumbbell), and at ×8 it cut the link's sessions by
    /// 18–24% in one step, which took D's session from 246 to 202 kbit/s
    /// and left two seconds under 90% of its optimum. Landing every
    /// session on the link held joins back (a join at one of nine
    /// neighbouring points never came back to 90% within a minute), as
    /// did landing after a join or a leave, where the congestion that
    /// ends quick start is an overrun that must clear fast (see
    /// [`CelerityParams::resume`]); there the interval keeps
    /// `quick_start_gain` (docs/celerity.md, "The landing").
    pub landing_gain: f64,
    /// The cautious ramp's step multiplier. In a peer's own start window
    /// (the conference's start, or its own start when it joins a running
    /// conference), once quick start ends on one link into this peer (the
    /// tail), its other links still in quick start step at
    /// `cautious_gain·κ` instead of `quick_start_gain·κ` for
    /// [`CAUTIOUS_HOLD`] after the latest such end (each later end renews
    /// it); a link's own congestion still ends its quick start as before.
    /// Equal to `quick_start_gain`, the rule changes nothing. Celerity's
    /// own trees only: the Simulcast and Mutualcast baselines keep quick
    /// start's pace on every link.
    ///
    /// Quick start's signal comes two or three intervals after a link's
    /// traffic passes what its bottleneck carries, and at ×8 the sources
    /// are 10–17% over it by then; the links into a tail that have not
    /// yet shown congestion are often on the same path or relay the same
    /// sessions, and kept at ×8 they carry the overshoot further. On the
    /// dumbbell's thirty neighbouring points (eight shifted copies, 240
    /// points) the seconds under 90% after the first 95% one fell from 451
    /// to 218 and the points meeting all of issue 3's start line rose from
    /// 55 to 96; after a join the newcomer's links no longer overrun the
    /// bottleneck as often (joins past 15 s: 39 → 18 and 34 → 21 of 105
    /// and 96 points). The hold ends the caution for conferences whose fast
    /// sessions climb for tens of seconds: held for the whole window, the
    /// random underlays' fast sessions were left at a fifth of their rate
    /// at 40 s (docs/celerity.md, "The cautious ramp").
    pub cautious_gain: f64,
    /// Step multiplier once the rates have settled. Rule (10)'s relative
    /// gradient `(U′ − price)/U′` for a session whose cut crosses a link is
    /// split in two: its own part `(U′ − Ū′)/U′`, with `Ū′` the mean `U′`
    /// of the sessions whose cuts cross the link, which moves the split
    /// between them, and the common part `(Ū′ − price)/U′`, which moves
    /// them together against the link's queue. Outside the quick-start
    /// window (see [`CelerityParams::quick_start`]), on a link near its
    /// equilibrium (the common part smaller than [`STEADY_BAND`], and the
    /// price at least [`SPARE_PRICE`] of `U′`: a queue stands), the common
    /// part steps at `steady_gain·κ` (for a session outside the cut, its
    /// whole gradient is common). That motion only holds an equilibrium,
    /// and its ripple grows with the step: on the dumbbell the rates swung
    /// over about 4 s and single seconds fell short of their windows'
    /// bounds. The split keeps κ: it settles slowly already (a time
    /// constant of about 14 s), and slowing it kept a member who joined
    /// under 90% of its optimum for minutes. The steady gain also acts in
    /// the start's quick-start window on a link whose quick start has
    /// ended: the first swing after it otherwise took the dumbbell's
    /// sessions 4–5% under their rate for a second (docs/celerity.md,
    /// "The landing"). Within a window opened later (a join, a leave, a
    /// link going down or coming back), and on a link far from equilibrium
    /// (a queue the guards or a loss burst price high, an emptied queue
    /// after a deep cut), the step stays κ, so convergence after a join, a
    /// leave or a failure, the response to congestion and the climb back
    /// after a cut are as fast as before; with it in those windows too, a
    /// joining member's sessions took longer (docs/celerity.md, "The
    /// steady gain").
    pub steady_gain: f64,
    /// Weight of the queuing delay's trend in the price: a link's price is
    /// `loss + max(0, q + damping·dq/dt)`. The loop is an integrator (the
    /// rate) driving another (the queue) behind a feedback delay; without
    /// this lead term it has no phase margin and only oscillates.
    pub damping: Duration,
    /// The standing queue past which the link rate control scales its
    /// price; `None` is the paper's plain price. Default 80 ms, 40% of the
    /// delay bound ([`CelerityParams::with_delay_bound`]): sessions above
    /// about 215 kbit/s (`U′` below 80 ms), as on the dumbbell outside its
    /// cross traffic, keep the paper's price.
    ///
    /// The paper's price is the queuing delay itself, so a link settles
    /// where its queue equals the sessions' `U′ = β/(R + δ)` seconds: 72 ms
    /// at 240 kbit/s, but 190 ms at 85 kbit/s, which with any propagation
    /// delay passes the delay bound. With a ceiling, a link whose largest
    /// `U′` is above it scales its price by `(U′ / ceiling)^e`, `e` the
    /// [`ceiling_exponent`](Self::ceiling_exponent) (smoothed over about
    /// 2 s), so its queue settles at `U′^(1−e)·ceiling^e` (106 ms for 88
    /// kbit/s sessions, against 184 without). A link's queue only
    /// represents its Lagrange multiplier, so representing the multiplier
    /// by a shorter queue leaves the optimum where it was.
    ///
    /// The scale applies to the queue's part of the price only, not to
    /// the delay and age guards ([`late_gain`](Self::late_gain)): they
    /// stand for lateness, not for the multiplier, and scaled by a slow
    /// session's `U′` they charged it more for the same lateness, which
    /// slowed it further (the steady dumbbell with 125 ms of propagation
    /// on its bottleneck fell from 121 kbit/s to nothing). Sources pack
    /// paths up to the whole bound; a reserve of `min(U′, ceiling)` taken
    /// off it did the same to the paths of slow, long-delay sessions.
    ///
    /// Not in the quick-start windows: `U′` there belongs to rates far
    /// from any equilibrium (600 ms at the initial 20 kbit/s, almost four
    /// times the price), and scaling by it moved the dumbbell's approach
    /// (docs/celerity.md, "The queue ceiling"). The windows after the
    /// start (joins, leaves, links going down or coming back) kept the
    /// scale until the fourth session of 2026-11-29
    /// ([`scale_in_windows`](Self::scale_in_windows)).
    pub queue_ceiling: Option<Duration>,
    /// The exponent `e` of the ceiling's price scale `(U′ / ceiling)^e`, in
    /// (0, 1]. With `e = 1` the scale is degenerate for the session with
    /// the link's largest `U′`: its price is `U′·q/ceiling`, rule (10)
    /// settles at `q = ceiling` whatever its rate, and sessions that share
    /// one queue through their own overlay links keep whatever split they
    /// had (Simulcast's dumbbell: 100–131 kbit/s where the optimum is 120
    /// for each). Below 1 a slower session still settles at a longer queue
    /// and the split is restored, at `1 − e` of the plain price's force.
    /// Default 2/3.
    pub ceiling_exponent: f64,
    /// The queue ceiling within the delay budget's slack: a link's ceiling
    /// ([`queue_ceiling`](Self::queue_ceiling)) is at most this fraction
    /// of the slack its data packets have left, the delay bound less the
    /// largest propagation any of them will have had at the farthest
    /// member below the link. Per packet that is its base age over the
    /// link (its session's smallest age there within ten minutes, kept as
    /// [`age_queue`](Self::age_queue)'s is) plus the propagation down the
    /// subtree below this peer (as the late forecast counts it,
    /// [`late_forecast`](Self::late_forecast)); the interval's largest,
    /// averaged over about a second. 0 turns it off; never under 5 ms.
    ///
    /// A link's queue stands for its price, and the ceiling sets how long
    /// a queue stands for a given price. One length for every link
    /// suits members near each other; a member 130 ms away has 70 ms left
    /// for every queue on its path, and the near members' sessions that
    /// share its last link held a queue there that made 40% of its
    /// packets late (`long-23`: 34 of 200 kbit/s). With the ceiling at
    /// 0.6 of the slack that queue is shorter, and the far session gets
    /// 0.72 of its optimum with 1.9% loss (docs/celerity.md, "The ceiling
    /// within the slack"). Default 0.6: every link of the dumbbell keeps
    /// the 80-ms ceiling (0.6 of the slack is at least 80 ms where the
    /// propagation is at most 67 ms, as on Mutualcast's trees that cross
    /// its bottleneck twice); a smaller fraction shortened those too and
    /// moved the baselines' split.
    pub ceiling_slack: f64,
    /// Whether a source sends a packet only down a tree whose every head
    /// has room for it in its bucket for the session (a copy of each
    /// head's bucket, one packet shallower), waiting until one has;
    /// otherwise the trees take turns by weighted round robin alone and
    /// heads drop what exceeds their rates. `None` (the default): paced in
    /// conferences of [`PACE_MEMBERS`] or more.
    ///
    /// The more members, the more trees a session takes turns over and the
    /// thinner each tree's share of a link, so the round robin's bursts
    /// overrun the heads' buckets more often. On two- and three-router
    /// underlays of 8 to 16 members (docs/celerity.md, "Pacing from nine
    /// members") the heads' drops cost the worst session 1.0% of its
    /// packets at 8 members, 1.4% at 10, 2.0% at 12 and 17.3% at 16 (its
    /// rate 0.74 of the optimum); paced, 0.2–0.3% at each, and 0.88 at 16
    /// (2.0% where sixteen share a 4-Mbit/s core, against 17.5%).
    /// Up to eight members pacing stays off: it moved the dumbbell's start
    /// (the first 95% median over fifteen points 21 s against 19, when it
    /// was last measured there) for less there.
    pub pace_to_heads: Option<bool>,
    /// The share guard, in packets (0 turns it off): the source's round
    /// robin over its trees skips a tree while one of its overlay links has
    /// run more than this many packets ahead of the link's packed share
    /// (the credits survive repacks, which trees do not). Without it, on
    /// random underlays whose trees change with nearly every repack, links
    /// ran ahead of their shares for a second at a time and their heads
    /// dropped the excess (docs/celerity.md, "The share guard").
    pub share_guard: f64,
    /// The standing weight's ratio, in [0, 1] (0 turns the weight off):
    /// outside the quick-start windows (see
    /// [`CelerityParams::quick_start`]) a link's queue counts in its price
    /// only as far as it stands. Each interval the tail compares the 25th
    /// percentile of its packets' queuing delays with their mean; the
    /// weight is `min(1, p25 / (ratio·mean))`, smoothed over a few
    /// intervals, and scales the queue's part of the price (not the loss,
    /// not the delay and age guards). A full link's queue stands (its
    /// 25th percentile is a good part of its mean: weight 1, the paper's
    /// price); a link with spare capacity queues only at random, when
    /// packets happen to meet (its 25th percentile is 0: weight 0). The
    /// paper's price charges that random queue too, and on random
    /// underlays it held a fast session (small `U′`) at the point where
    /// the random queues of core links that were not full met its `U′`,
    /// near its 2-hop optimum instead of its coded one (docs/celerity.md,
    /// "The standing weight"). Not in the windows: there the queue that
    /// builds as links fill must slow the climb at once, and weighting it
    /// too slowed joins (but on a link that fell within one, see
    /// [`fall_price`](Self::fall_price)).
    pub standing_ratio: f64,
    /// The gain floor, in packet times (0 turns it off). Outside the
    /// quick-start windows, on Celerity's own trees, a session whose `U′`
    /// is below `gain_floor` times the link's data-packet serialisation
    /// (the tail's measure: the difference of its data and control
    /// packets' base delays, the data packet's extra bytes on every hop of
    /// the path, or the bottleneck's packet time where packet pairs show
    /// it shorter: [`floor_dispersion`](Self::floor_dispersion)) steps on
    /// the link as if its `U′` were that floor: its gain
    /// where its cut crosses the link, and the scale of rule (10)'s step.
    /// The packet time is a full packet's ([`media_bytes`](Self::media_bytes)),
    /// in proportion where the sources' packets are shorter (see
    /// [`size_target`](Self::size_target)): the floor was chosen when
    /// every packet was full, and every rule since was measured while the
    /// tails' data bases kept the full packets' serialisation after the
    /// sources shrank theirs. Once the bases followed the short packets
    /// (see [`SHORT_DATA_RESTART`]), underlay 11's fast P6, whose packets
    /// shrank to 570–860 bytes, got 0.648 of its optimum against 0.879
    /// (docs/celerity.md, "The floor in full packets' times").
    /// The floor is at most [`FLOOR_BUDGET`] of what the delay bound leaves
    /// after the link's fixed delay (propagation plus the data packet's
    /// serialisation).
    /// A delay price cannot resolve less: a link that packets from several
    /// overlay links reach at random queues about a packet time well before
    /// it is full, so a fast session whose `U′` is under that left the
    /// links its cut crosses short of full. Over 242 links the coded
    /// optimum prices on random underlays, those priced under one packet
    /// time ran 81% busy (84% with the floor), those at four or more 99%
    /// (docs/celerity.md, "The optimum's link prices" and "The gain
    /// floor"). The session's own rate `β/U′ − δ`, which caps a link's
    /// growth, keeps its real `U′`. Two or more sessions under the floor on
    /// one link share it in the order of their own `U′` (see
    /// `floor_order`): gaining it alike, their split was left to chance,
    /// and on underlay 54 two fast sessions behind one router settled at
    /// 0.79 and 1.13 of their optimum (0.93 and 0.98 in order;
    /// docs/celerity.md, "The floor's order"); with
    /// [`floor_rivals`](Self::floor_rivals) a session under the floor is
    /// ordered against its rivals above it too. On the dumbbell's scenarios
    /// the floor stays under every session's `U′` (they are
    /// byte-identical); Simulcast and Mutualcast are left as they were
    /// everywhere.
    pub gain_floor: f64,
    /// The gain floor's cut share, in (0, 1] (1 turns it off). Where a
    /// session's critical cut crosses a link in only some intervals (it
    /// alternates between receivers' nearly tied cuts, each link in one of
    /// them), rule (10) settles the link where its price is that share of
    /// the session's gain, so the gain floor held the link at a fraction of
    /// the price it stands for. A session under the floor therefore gains
    /// the floor divided by the share of recent intervals in which its cut
    /// crossed the link (smoothed by [`CUT_SHARE_GAIN`] an interval), that
    /// share taken as at least `floor_share`, and at most
    /// [`FLOOR_SHARE_BUDGET`] times the floor's delay budget: averaged over
    /// the intervals it pushes with the floor. Traced on underlay 11, the
    /// lone fast P6's cut crossed the two overlay links that carried its
    /// session in 32% and 46% of the intervals, they settled at prices
    /// near a third of the floor, and the underlay's links out of its
    /// router ran 82–85% busy. Over the three sets of thirty random
    /// underlays the worst sessions' mean fraction of the coded optimum
    /// went from 0.881 / 0.882 / 0.852 to 0.891 / 0.895 / 0.859 at the same
    /// loss, the four lone fast sessions by 0.12–0.24 (docs/celerity.md,
    /// "The floor's cut share"). Only where the gain floor acts: the
    /// dumbbell's scenarios are unchanged.
    pub floor_share: f64,
    /// The floor's lift (with [`floor_share`](Self::floor_share) under 1):
    /// where two or more sessions under the gain floor cross a link in at
    /// least `floor_share` of the intervals, each of them gains there, where
    /// its cut crosses the link, its own `U′` plus the floor's excess over
    /// it divided by its cut share, not the whole floor divided by the
    /// share. A session alone under the floor keeps the whole floor divided.
    ///
    /// A session whose receivers' cuts alternate crosses each of them in a
    /// share of the intervals, and that is how rule (10) splits its `U′`
    /// among the receivers that hold it back, as the optimum splits a
    /// session's multiplier among its tight cuts. The floor stands for the
    /// least price a delay resolves, not for utility, so only its lift
    /// needs counting whole on every link of the cut. Dividing the whole
    /// floor let a session held back at two receivers behind different
    /// bottlenecks push with the floor at both, as if it had two
    /// utilities: on a held-out underlay (seed 1660,
    /// `scenarios/celerity/random-split.toml`) the two members behind R1,
    /// each crossing the links into R0 and those into R2, got 1.15 of their
    /// coded optimum and the members at R0 and R2, each crossing one of
    /// them, 0.72 and 0.81; with the rule 1.00, 0.91 and 0.93. A lone fast
    /// session, whose alternating cut lies on one bottleneck that it alone
    /// is held back by, needs the whole floor there ("The floor's cut
    /// share"): the lift for every session under the floor cost
    /// `random-lone.toml`'s lone P3 0.895 → 0.828 (0.76–0.83 over nine
    /// neighbouring points, 0.86–0.90 before), so a session alone under
    /// the floor keeps it (0.882; 0.80–0.90 over the nine, where another
    /// session sometimes dips under the floor beside it). Default `true`
    /// (docs/celerity.md, "The floor's lift").
    pub floor_share_lift: bool,
    /// Whether the gain floor's packet time is the least of the path's
    /// summed serialisation and the bottleneck's, as packet pairs show it
    /// (see `dispersion`'s module docs): two data packets that left the
    /// bottleneck back to back arrive one of its packet times apart. The
    /// floor stands for the queue a delay price cannot resolve, about a
    /// packet time where the queue forms, but the summed serialisation
    /// counts every hop of the overlay path: on the held-out underlay 1683
    /// 14.6 ms against the bottleneck's 5.6, and the two sessions that
    /// crossed both its bottlenecks got 0.81 of their optimum while the
    /// two that crossed one got 1.11 (0.93 and 0.99 with the rule). Over
    /// the random sets the rule was within the noise (−0.0007 to +0.0032
    /// on the mean over three seeds a set), but on `internet.toml` (Fig.
    /// 10) the worst session fell from 0.906 to 0.857 of its optimum on
    /// the mean of nine neighbouring points: the pairs show the packet
    /// time of the last busy queue they crossed, which there is the
    /// receiver's downlink (RED's 2.2 ms for HK1's packets, whose uplink
    /// takes 3.7), not the bottleneck's. Default `false`; Celerity's own
    /// trees only, as the floor is (docs/celerity.md, "The floor at the
    /// bottleneck").
    pub floor_dispersion: bool,
    /// The heads' policing slack, in [0, 1]: a head lets a session's data
    /// through a link at up to `1 + police_slack` times the session's rate
    /// on it (its bucket refills that much faster), and drops what exceeds
    /// that. The rate is what the source packs its trees to, so on average
    /// a link carries no more than it did; the slack absorbs the sources'
    /// swings about it. A source's trees change with nearly every repack,
    /// so over a second a link's share swings a few percent about its rate;
    /// a bucket that refills exactly as fast as packets arrive on average
    /// is walked empty by those swings now and then: on random underlays
    /// heads dropped as many packets as came late, each lost to the whole
    /// subtree below. At 0.1 the head drops fall by 81% and the mean
    /// session loss by 41% (docs/celerity.md, "The policing slack"). Paced
    /// sources (`pace_to_heads`) keep their copies of other heads' buckets
    /// at the packed rates: they still send to the rates. Simulcast's and
    /// Mutualcast's heads police with the same slack.
    pub police_slack: f64,
    /// Report every link rate update, per session and interval, as an
    /// [`Event::LinkControl`] (off by default: one event per session,
    /// link and control interval). For tracing the loop
    /// (`meshcast run --trace-control`, docs/report-format.md).
    pub trace_control: bool,
    /// Link rate control interval (§5.1: 200 ms).
    pub control_interval: Duration,
    /// Link-state report and tree packing interval (§5.1: 300 ms).
    pub report_interval: Duration,
    /// Media bytes per data packet (the most: see
    /// [`size_target`](Self::size_target)). A peer carries at most
    /// [`max_media_bytes`] for its conference's size (less than 1400 from
    /// nine members on, so that repairs fit a 1500-byte MTU).
    pub media_bytes: u32,
    /// The longest a data packet may take to serialise along its
    /// session's trees, summed over the hops of the longest path, or
    /// `None` to send every packet at `media_bytes`. Each tail measures
    /// how long its link takes per byte (the difference of its data and
    /// control packets' base delays, over the bytes between them) and
    /// tells its head ([`Control::Serialisation`]), each head tells the
    /// sources ([`Control::Serialisations`]), and each source sizes its
    /// packets so that one crosses its trees' longest path's links in at
    /// most this (the trees with at least [`SIZE_TREE_SHARE`] of its
    /// rate), within [`MIN_PACKET_BYTES`]..=`media_bytes`. The size is
    /// decided every [`SIZE_SETTLE`] from the start and from each
    /// membership change, on the median over that time's packings of their
    /// longest path, and held in between: a size moved at every packing
    /// chased the trees' paths as they came and went, and doubled the late
    /// drops; decided once after each change, it kept for good a size for
    /// trees that went later. On random underlays whose every
    /// overlay hop crosses two 600 kbit/s links a relayed path spends 75 ms
    /// of a 200-ms bound serialising 1400-byte packets; 30 ms let 88 of 90
    /// underlays keep every session's loss at 5% or less (83 with
    /// 1400-byte packets) and cut the late drops by 57% (docs/celerity.md,
    /// "Packet size from the path"). Paths shorter than this (the
    /// dumbbell's: 23 ms) keep `media_bytes`. The built-in source sends at
    /// the size; application media is offered it
    /// ([`CelerityPeer::offered_packet_bytes`]). Celerity's own trees
    /// only: the Simulcast and Mutualcast baselines keep `media_bytes`.
    pub size_target: Option<Duration>,
    /// Count, in [`size_target`](Self::size_target)'s path, the wait of a
    /// packet's copy behind the copies its sender sends before it: a node
    /// hands its children's copies of a packet to its socket back to back,
    /// so the child whose copy leaves third waits for two others on the
    /// links they share. Per hop the path gains, for each copy sent before
    /// its own, the smaller of the two overlay links' serialisation per
    /// byte: the copies share the sender's uplink at least and at most the
    /// faster path's whole serialisation, so this is the most they can
    /// wait. The order is the one the peers send in: a source's copies in
    /// its tree's order, a relay's by member. Where members' uplinks are
    /// the bottlenecks (a relay of 500 kbit/s sending to six members makes
    /// the last wait five packet times) it gave the worst session 0.739 of
    /// the coded optimum against 0.724 on thirty such underlays, and 0.745
    /// against 0.717 where core links take 15–60 ms; the core sets moved
    /// within their noise and the dumbbell's scenarios not at all (with
    /// the paper's 2-hop trees, which relay across its bottleneck and back,
    /// they do: docs/celerity.md, "The fan-out in the packet size").
    /// `false` counts each hop's own serialisation only.
    pub size_fanout: bool,
    /// The share of a path's slack that its packets' serialisation may
    /// take, in [`size_target`](Self::size_target)'s decision (0 turns it
    /// off). A path's slack is the delay bound less its propagation (the
    /// one-way base delays of its links, as for the late forecast); each
    /// path of the counted trees may serialise a packet in at most this
    /// share of it, and in at most `size_target`, and the size is the
    /// largest every path allows. The optimum counts propagation only, so
    /// it uses paths within a few ms of the bound, where a packet's
    /// serialisation alone (20 ms for 1400 bytes over a few hops of
    /// 1–3 Mbit/s) leaves the queues no room: on `long` underlays (core
    /// links of 15–60 ms) the sessions of such members fell to half their
    /// optimum, their far copies late. Half the slack lifted the `long`
    /// family's mean worst fraction from 0.793 to 0.813 over three seeds,
    /// `internet.toml`'s from 0.906 to 0.922 over nine step × β points and
    /// the core underlays' by 0.0004, and left the dumbbell's scenarios as
    /// they were (their paths have slack to spare: docs/celerity.md, "The
    /// slack in the packet size").
    pub size_slack: f64,
    /// Rate updates and link-state reports carry only the rates that
    /// moved: a tail tells its head the sessions whose rate on the link
    /// moved by more than 1% since it last told them, a head tells a
    /// source the links whose rate for the session moved so (or whose
    /// delay changed), and each sends every rate with its heartbeat (2 s,
    /// 3 s), before a source would count a link it has not heard of as
    /// gone (7 s). A message that waits to ride on data takes in the
    /// rates of the one it replaces. The rule of when a message goes is
    /// the one of before: only its length changes. In conferences of
    /// eight behind uploads of 0.5–2 Mbit/s a report carried six links of
    /// which one had moved on the mean, and link-state reports and rate
    /// updates were most of the control bytes (docs/celerity.md, "Only
    /// the rates that moved"). On Celerity's own trees only: the
    /// baselines keep the paper's messages (with it Mutualcast's sessions
    /// on the dumbbell split 107.7–119.4 kbit/s against 111.3–116.4).
    /// `false` sends every rate in every message.
    pub moved_only: bool,
    /// The built-in source's packet sizes, media bytes, taken in turn
    /// (each 16..=1400); empty (the default) sends every packet at
    /// `media_bytes`. Real encoders packetise unevenly (a video frame is
    /// some full packets and a short last one; audio rides in small ones),
    /// and a cycle such as `[1400, 1400, 1400, 300]` makes the simulator's
    /// source do the same (docs/celerity.md, "Packets of mixed sizes").
    /// Application media keeps its own sizes.
    pub media_sizes: Vec<u32>,
    /// How many times the session's rate a source may send application
    /// media at while it has burst credit (>= 1; 1 sends at the rate).
    /// An encoder's keyframe comes as one burst of several frames' bytes;
    /// spread at the rate, its last units wait at the source until they
    /// are stale or arrive late, and the picture breaks until the next
    /// keyframe. The credit is a bucket that refills at `1 + police_slack`
    /// times the session's rate, as a head's does, and holds what a head's
    /// bucket for the session holds (half a second at the rate, at least
    /// three of its largest packets), so a burst stays within what the
    /// heads on its trees pass. The slack also lets a backlog drain: an
    /// encoder that produces exactly the offered rate would otherwise keep
    /// any backlog for good, every unit waiting at the source near the
    /// delay bound. WebRTC's pacer sends at 2.5 times its target rate;
    /// 4 keeps a keyframe of 0.4 s of the rate within a 200-ms bound
    /// (docs/celerity.md, "Keyframes"). The built-in source and padding
    /// always send at the rate.
    pub burst: f64,
    /// A source sends an application's short units together, in one data
    /// packet (a bundle, [`wire::DataHeader::bundle`]), rather than one
    /// packet and one set of headers each. A packet under [`BUNDLE_SHORT`]
    /// bytes and under half the packet size the source offers
    /// ([`CelerityPeer::offered_packet_bytes`]) takes the short units
    /// waiting when it leaves, as far as that size allows, and, while no
    /// other unit waits, waits up to [`CelerityParams::bundle_wait`] from
    /// its first unit for company while the session's rate would not fill
    /// a packet in that time; the packet after it keeps the schedule its
    /// units would have kept singly.
    /// Every packet costs 50–60 bytes of headers on every overlay hop
    /// whatever it carries; a video encoder at 30 frames a second on a
    /// session of 20 kbit/s hands over units of about 80 bytes, 30 packets
    /// a second on each of the session's links, and on slow cores such
    /// sessions fell to nothing (docs/celerity.md, "Bundles"). `false`
    /// sends every unit in its own packet. The built-in source's packets
    /// are never bundled.
    pub bundle: bool,
    /// How long a short unit of application media waits at the source for
    /// others to share its packet (see [`CelerityParams::bundle`]); the
    /// delay bound counts the wait (a bundle's origin is its first unit's
    /// hand-over). 0 bundles only units that wait for the rate anyway.
    pub bundle_wait: Duration,
    /// The application's rate cap (its encoder's maximum), if any.
    pub max_rate: Option<Rate>,
    /// Rate of a link before its tail has said anything, kbit/s.
    pub initial_rate_kbps: f64,
    /// The links with a member that joins a running conference start
    /// every session at `join_rate · initial_rate_kbps`, in both
    /// directions (1: at the initial rate, as at the start). A member
    /// whose own start window is over (see [`CelerityParams::quick_start`])
    /// takes a member it then hears of for a newcomer, and says it is
    /// running in its greeting; a newcomer that hears so within
    /// [`JOIN_NEWS`] of its own start takes the same rate on all its
    /// links (at most what they carry). Celerity's own trees only: the
    /// Simulcast and Mutualcast baselines start every link at the initial
    /// rate.
    ///
    /// Every session's packing uses every link into a newcomer at once,
    /// its own and the ones it would relay, and quick start grows them
    /// all together: at the initial rate a newcomer behind a full
    /// bottleneck from most members overran it, and the members behind it
    /// got only late packets for seconds (docs/celerity.md, "Joins at a
    /// quarter of the initial rate").
    pub join_rate: f64,
    /// A member not heard from for this long has left.
    pub liveness: Duration,
    /// Opportunistic local loss recovery (§5.4): on a link that loses at
    /// least 0.5% of its packets, the repair bytes a head aims for per
    /// byte of data (`4·loss` where that is more, at most 1), in 0..=1;
    /// 0 turns recovery off. The head keeps that share of the link's rate
    /// for repairs and sends them only from what the trees leave unused
    /// (the `recovery` module has the rules, docs/celerity.md the
    /// measurements).
    pub repair_ratio: f64,
    /// The delay guard's margin: a link's price rises steeply once its
    /// queue, averaged over about a second, passes the delay bound less
    /// the link's fixed delay (propagation plus a data packet's
    /// serialisation) less this margin (room for the queue's swings and the
    /// rest of the path). See [`CelerityParams::late_gain`]. Default 40 ms,
    /// 20% of the delay bound ([`CelerityParams::with_delay_bound`]).
    pub late_margin: Duration,
    /// The delay guard's slope: each second of averaged queue past the
    /// knee adds this many seconds to the link's price (on top of the
    /// paper's one per second of queue); 0 turns the guard off. Rule (10)
    /// settles a critical link where its queue equals `U′` seconds, which
    /// for a slow session behind a long path is past the delay bound: its
    /// packets then arrive late while every link looks at equilibrium
    /// (docs/celerity.md, "The delay guard" among the decisions). It is
    /// also the age guard's slope ([`CelerityParams::age_margin`]).
    pub late_gain: f64,
    /// The age guard's margin. A link's price also gains `late_gain` per
    /// second by which the mean age of the data packets arriving over it
    /// (the time since their source sent them: the age that drops a packet
    /// as late), averaged over about a second, passes the delay bound less
    /// this margin. The per-link guard (`late_margin`) sees only its own
    /// link's queue, so a tree whose two hops each stay under their knees
    /// still arrives late; the age counts every hop before this one
    /// (docs/celerity.md, "The age guard"). It relies on the members'
    /// clocks agreeing as well as the late drop itself does; the per-link
    /// guard, which needs no clock, stays as the backstop. Default 80 ms,
    /// 40% of the delay bound ([`CelerityParams::with_delay_bound`]).
    /// With [`age_queue`](Self::age_queue) on, the guard charges no more
    /// than the part of the age that was queued.
    pub age_margin: Duration,
    /// The age guard counts the queued age only. A packet's age is its
    /// path's propagation plus the queues it waited in; the guard's knee
    /// (the bound less [`age_margin`](Self::age_margin), 120 ms) lies under
    /// the propagation alone of a member 130 ms away, and pricing cannot
    /// shorten propagation: such a member's links carried 170–190 ms of
    /// guard over 7–13 ms of queue and its session got a fifth of its
    /// optimum (docs/celerity.md, "The age guard counts the queued age").
    /// So the excess past the knee is charged at most as far as the mean
    /// queued age: each packet's age less the smallest age of its
    /// session's packets over the link within ten minutes (the base, kept
    /// as the one-way delay's is, see the `base_delay` module; its clock
    /// offset cancels too), averaged over about a second. A packet that
    /// waited upstream of the relay still counts: that is what the guard
    /// is for.
    ///
    /// On by default since the fourth session of 2026-11-28. It was added
    /// off by default: on the dumbbell with 125 ms of propagation on its
    /// bottleneck it lifted the worst session from 109–128 to 197–214
    /// kbit/s of a 240 optimum over nine step × β points, but the late
    /// packets of the queue's swings then cost up to 2.75% of a session's
    /// packets where 2% is the line. With the ceiling within the slack
    /// ([`ceiling_slack`](Self::ceiling_slack)) that queue stays short: the
    /// same nine points give 208–220 kbit/s with at most 1.2% loss (88–112
    /// without the rule), the `long` underlays' mean worst fraction rises
    /// from 0.769 to 0.788, the core sets and the other families move by
    /// their noise, and no dumbbell scenario changes (no packet there is
    /// 120 ms old but for its queue). A base from ten minutes of a
    /// session's packets over the link is the shortest of its upstream
    /// paths, so a packet that came a longer way counts the difference as
    /// queued: the rule errs towards the whole excess, never below the
    /// queue (docs/celerity.md, "The age guard counts the queued age").
    /// Since the sixth session of 2026-12-02 the queued age is the hops'
    /// own measure instead ([`hop_queues`](Self::hop_queues)), and the base
    /// is kept only without it.
    pub age_queue: bool,
    /// The late forecast. A data packet that reaches a relay must still
    /// cross the subtree below it; its age there plus the propagation
    /// down that subtree to its farthest member (this peer's own links'
    /// one-way delays for the first hop, the ones its own session's
    /// link-state reports give below) is the age it will at least have
    /// at that member. The fraction of a link's data packets whose
    /// forecast passes the delay bound less
    /// [`late_margin`](Self::late_margin), averaged over about a second,
    /// is charged on the link like a loss rate, but never more than the
    /// link's own queue, averaged alike: a link is charged for lateness
    /// only as far as its queue adds to it. Outside the quick-start
    /// windows only (see [`CelerityParams::quick_start`]).
    ///
    /// The age guard ([`age_margin`](Self::age_margin)) sees a packet's
    /// age only where it arrives: a relay forwarding packets that will
    /// come late two hops on is not charged, nor are the other links
    /// through the queue that made them late. On random underlays that
    /// queue stood where the sessions with short paths through it settled
    /// (about `U′^(1−e)·ceiling^e`, 100 ms), and sessions relayed through
    /// it over deep chains lost up to 38% of their packets
    /// (docs/celerity.md, "The late forecast").
    pub late_forecast: bool,
    /// Late packets as the session's own loss, the weight of their
    /// fraction in seconds of price (0 turns it off). A tail counts, per
    /// session, the data packets arriving over a link whose forecast
    /// (their age plus the propagation down the subtree they still have to
    /// reach, as for [`late_forecast`](Self::late_forecast)) passes the
    /// delay bound itself: at least one member will drop each of them as
    /// late. That fraction, averaged over about a second and times this
    /// weight, is charged to that session alone on that link, as a loss
    /// rate is, outside the quick-start windows and on Celerity's own
    /// trees (the Simulcast and Mutualcast baselines keep the loop they
    /// were measured with: on Mutualcast's dumbbell it moved three more of
    /// fifteen neighbouring points outside 10% of their maximum). The
    /// link's price, which every session on it pays, is left alone. The
    /// link's loss rate does not see these packets (they arrived), and the
    /// forecast's charge on the link stops at the link's own queue, so
    /// without this a session whose packets came late through a queue
    /// others keep (a member far from a bottleneck that near members fill)
    /// kept its rate and lost 30–40% of its packets. On random underlays
    /// it cut the late drops by a factor of 3–13 (docs/celerity.md, "Late
    /// packets are the session's loss").
    pub late_loss: f64,
    /// The balance's step κ_b (0 turns it off). During the quick-start
    /// window (`quick_start` after the start and after every membership
    /// change), after rule (10), a tail moves rate between sessions whose
    /// critical cuts cross its incoming links where those links charge the
    /// same price (within [`BALANCE_TOLERANCE`]), towards equal `U′`: each
    /// pair of such link-session shares trades
    /// `κ_b·w·min(c_i, c_j)·(U′_i − U′_j)/Ū′` per interval (at most 5% of
    /// the smaller rate; `w` falls from 1 at equal prices to 0 at the
    /// tolerance). Links through one queue charge one price, so the trade
    /// leaves the queue's load alone and speeds only the split, which rule
    /// (10) alone settles with a time constant of `T/κ·(R + δ)/R` ≈ 14 s.
    /// Left on for good it also evens out sessions whose links only look
    /// alike, which cost the random underlays 2% of their optimum; within
    /// the window it costs nothing measurable there (docs/celerity.md,
    /// "The balance").
    pub balance: f64,
    /// Lending spare rate. Rule (10) raises a session's rate on a link only
    /// while the session's critical cut crosses the link, so the links it
    /// will need once the cut moves (at the start, each office's LAN links
    /// for relaying; after a join, the LAN link to the newcomer) sit at
    /// `initial_rate_kbps` until then, and meanwhile the trees cross the
    /// bottleneck twice. With `spare`, a calm link (price below
    /// [`SPARE_PRICE`] of the session's `U′`) whose fixed delay
    /// (propagation plus a data packet's serialisation) is short (at most
    /// [`SPARE_PROPAGATION`] of the delay bound) also raises every session
    /// its cut does not cross, at the link's step, up to the session's own
    /// rate `R = β/U′ − δ`. Long links lend nothing: relaying over them
    /// spends delay budget that the queues then overrun (docs/celerity.md,
    /// "Spare lending").
    ///
    /// Within a quick-start window a link is calm by the interval's price.
    /// Outside the windows it must also be calm on its one-second
    /// averages (loss before recovery plus queuing delay): one interval
    /// brings a few packets, and a link that loses 5% at random is calm in
    /// most of them. Lending after the window keeps a calm link's rate up
    /// with its sessions' rates as they grow, where otherwise it stays
    /// where the window left it; without it Mutualcast's sessions, whose
    /// relay trees start on such links, split the dumbbell's bottleneck
    /// unevenly for minutes (docs/celerity.md, "The landing").
    pub spare: bool,
    /// Resuming quick start, as a fraction of where it ended (0 turns it
    /// off). Quick start ends on a link at its first congestion, and after
    /// a join that congestion is usually an overrun: the trees to the
    /// newcomer cross a bottleneck twice until the links that relay
    /// beyond it have grown, the overrun's price cuts every session on
    /// the link by 30% an interval for a second or two, and from there
    /// rule (10)'s own step climbs back at about 7% a second (the
    /// dumbbell's A and B took 18 s from 56 to 216 kbit/s with the
    /// bottleneck idle). With `resume`, within a quick-start window that
    /// opens after the start's (a join, a leave, a link going down or
    /// coming back), a link whose quick start has ended raises a session
    /// at quick start's step again while its price is calm (below
    /// [`SPARE_PRICE`] of the session's `U′`) and the session's rate on it
    /// is below `resume` times the rate it had when quick start ended
    /// there: a rate the link carried moments before, which the overrun's
    /// cut went far below. At the start the fast climb gained nothing and
    /// moved the dumbbell's windows (docs/celerity.md, "Resuming quick
    /// start"); there [`start_resume`](Self::start_resume) acts instead.
    /// Both act on Celerity's own trees only, not on the Simulcast and
    /// Mutualcast baselines (since the sixth session of 2026-11-28).
    pub resume: f64,
    /// Resuming in the start's window, as a fraction of where quick start
    /// ended (0 turns it off): in a peer's own start window (the
    /// conference's start, or its own start when it joins), a link whose
    /// quick start has ended raises a session at [`START_RESUME_GAIN`]
    /// times κ while its price is calm (below [`SPARE_PRICE`] of the
    /// session's `U′`) and the session's rate on it is below this fraction
    /// of the rate it had when quick start ended there. Celerity's own
    /// trees only, as [`resume`](Self::resume).
    ///
    /// Quick start ends a few intervals after a link's traffic passes its
    /// bottleneck, with the sources 10–30% over it. On the dumbbell the
    /// queue then grows to about 150 ms before the cuts catch up, the
    /// drain takes the sessions to 80% of their rate, and once the queue
    /// is empty rule (10) climbs back at 1.5% an interval: the link sat
    /// empty for 1.5 s and the sessions' 1-s bins fell under 90% of their
    /// optimum, the dips of issue 3's start line. Where quick start ended
    /// is an overshoot, so 0.9 of it is about what the link carries; the
    /// doubled step refills the drained link in about a second and stops
    /// there. Over the dumbbell's 240 neighbouring points the seconds
    /// under 90% fell from 250 to 191 and the points meeting the whole
    /// start line rose from 119 to 126; quick start's own step (×8) here
    /// oscillated (docs/celerity.md, "Resuming at the start").
    pub start_resume: f64,
    /// The fresh exit: after a membership change (a join, a leave, a link
    /// going down or coming back) quick start ends only on an interval
    /// measured wholly after it. The interval under way still measures the
    /// old membership's queue, and on a leave that is the queue where the
    /// sessions stood (half their `U′` and more): compared with the same
    /// `U′`, it ended the quick start the change restarts at the first
    /// tick, with the rates of the links that must now carry what the
    /// leaver relayed still low, and those then climbed at rule (10)'s 7%
    /// a second (the dumbbell's A and B from 45 to 224 kbit/s in 23 s).
    /// With it no leave over 201 neighbouring points took more than 9 s,
    /// and joins past 15 s fell from 15 and 17 to 2 and 8 (docs/celerity.md,
    /// "The fresh exit"). `false` turns it off.
    pub fresh_exit: bool,
    /// The rebound, as a fraction of the rate a session fell from (0 turns
    /// it off). Outside the quick-start windows, on Celerity's own trees, a
    /// session whose rate on a link falls under [`REBOUND_FALL`] of its
    /// recent peak there (the largest rate of the last seconds, the peak
    /// decaying by [`REBOUND_PEAK_DECAY`] an interval; a peak of at least
    /// [`REBOUND_SHARE`] of the session's own rate) remembers the peak;
    /// then, while the link is calm (its price below [`SPARE_PRICE`] of the
    /// session's `U′`), fewer than [`DRIFT_LATE`] of the session's packets
    /// there come late, and rule (10) raises the session, it steps at quick
    /// start's gain rather than κ alone, until it is back at `rebound` times
    /// that peak or [`REBOUND_HOLD`] has passed. It is what resuming
    /// ([`resume`](Self::resume)) does within the windows, for congestion
    /// no membership or link change announces: when the dumbbell's cross
    /// traffic starts, the queue on E→F passes the bound within about half a
    /// second, the guards cut A's and B's sessions by 30% an interval until
    /// the rate updates take effect at the sources, and the sessions fell
    /// from 230 to about 90 kbit/s of their new 199 and climbed back at
    /// rule (10)'s 7% a second: every session was back at 90% for ten
    /// seconds in a row 16 s after the cross traffic's start (median over
    /// 240 neighbouring points; worst 19 s), 12 s with the rebound (worst
    /// 14 s). On the random underlays it acts on a handful and leaves their
    /// figures within noise (docs/celerity.md, "The rebound").
    pub rebound: f64,
    /// The rebound on a steady queue: the rebound also counts a link calm
    /// while its queue does not grow (its trend at most 0) and it loses
    /// nothing, and steps at quick start's gain only while the session's
    /// rate there is under [`REBOUND_DELIVERY`] times what the link
    /// delivers of it (smoothed, [`DELIVERY_SMOOTHING`]). `false` keeps
    /// the rebound to a link whose price is under [`SPARE_PRICE`] of
    /// `U′`.
    ///
    /// After a link's capacity falls, its data packets' base delay keeps
    /// the old, shorter serialisation for up to ten minutes (the base is a
    /// windowed minimum, `base_delay.rs`), so the tail reads the
    /// difference as a standing queue that never drains (27 ms after 600
    /// → 250 kbit/s), the price stays above a tenth of `U′`, and the
    /// session that fell climbs back at rule (10)'s few percent a second.
    /// A queue that stays as it is while the rate climbs is no congestion;
    /// the delivery bound keeps the quick steps from carrying the rate far
    /// past what the narrower link carries (docs/celerity.md, "A link that
    /// narrows").
    pub rebound_steady: bool,
    /// Holding while a queue drains: outside the quick-start windows, a
    /// link whose queue (the interval's mean) is at least
    /// [`DRAIN_HOLD_QUEUE`] does not cut a session whose delivery over it
    /// (smoothed, [`DELIVERY_SMOOTHING`]) is above `1 + drain_hold` times
    /// its rate there; 0 turns it off. On every model's trees, the
    /// baselines' too: it mends rule (10), which they share.
    ///
    /// The queue a tail measures is that of packets sent a queue's time
    /// ago. When a link's capacity falls the queue grows for as long as
    /// the cuts take to reach the head and to pass the queue, and rule
    /// (10) cuts 30% an interval all that while: after 600 → 250 kbit/s
    /// the two-member link's queue read 950 ms and its sessions fell to 2
    /// kbit/s, where they stayed for half a minute. A session whose link
    /// delivers well above its rate is already draining the queue: what
    /// arrives was sent before the cuts (docs/celerity.md, "A link that
    /// narrows").
    pub drain_hold: f64,
    /// Releasing a late charge that an overload made: the late packets'
    /// average ([`CelerityParams::late_loss`]) moves only in intervals in
    /// which the session has packets over the link, so a session that
    /// stops sending there keeps its charge for good. With this on, a
    /// charge whose last late packets came after the loop settled (outside
    /// the quick-start windows and the climb after them,
    /// [`CelerityParams::climb`]) through the link's own queue at or past
    /// the delay bound (an overload: the link's capacity fell, or a burst
    /// of cross traffic) fades in each interval without the session's
    /// packets while the link's queue (the interval's mean and its average
    /// over about a second; the control packets still measure it) is under
    /// the bound, as an interval whose packets all came in time would fade
    /// it. Other charges stay: where a session's packets came
    /// late through a long path or through queues elsewhere, an idle link
    /// shows nothing of them, and the start's overloads spill past its
    /// window on the slow cores, whose sessions keep off links by those
    /// charges (releasing every charge of an idle session cost them late
    /// drops, and releasing those of an overload outside the windows alone
    /// took one underlay of the held-out `slow` seeds 1201–1230 from 0.620
    /// to 0.266 of its optimum).
    ///
    /// When the dumbbell's E⇄F fell from 480 to 320 kbit/s, the 650-ms
    /// queue of the old rate made every session's packets late; the
    /// sessions then left the links into the far office's one member
    /// (rate 0 there), whose charges of 177–187 ms, above the `U′` of
    /// about 90 ms, held them at 0 for the rest of the run, and the
    /// sessions came back at 90% of the new optimum only 33–61 s after
    /// the fall (docs/celerity.md, "A link that narrows").
    pub late_release: bool,
    /// Releasing a late charge that the link's own queue made. A session's
    /// charge for its late packets over a link
    /// ([`late_loss`](Self::late_loss)) moves only in intervals in which
    /// it has packets there, so one that leaves the link keeps it for
    /// good; [`late_release`](Self::late_release) fades it only where an
    /// overload made it. With this on, where the link's own queue made at
    /// least [`LATE_FADE_OWN`] of the queued time of the session's last
    /// late packets there (their [`hop_queues`](Self::hop_queues) measure;
    /// all of it without that measure), the charge also fades, by
    /// [`LATE_FADE_STEP`] in each control interval outside the quick-start
    /// windows in which the session has no packets over the link, while
    /// the link's queue (the interval's mean and its one-second average)
    /// is under the queue at which those packets would have come in time
    /// (their queue on the link less what their forecast passed the
    /// delay bound by, on their mean). Charges made by propagation or by
    /// queues elsewhere stay: an idle link shows nothing of those.
    ///
    /// Without it, a session that left a link after its packets came late
    /// there in the climb's queue swings was held off it to the end: on
    /// held-out underlay 1655 its charge of 109 ms, set at 30–38 s, kept
    /// P4's session off the relay link into the far router group's member
    /// while its gain there passed the link's price by 50 ms, and the
    /// session got 0.77 of its optimum (0.92 with the rule); over held-out
    /// seeds 1651–1740 such a charge held the worst session off a link in
    /// its cut for half the window or more in 31 of 90 underlays.
    ///
    /// Off by default (thirty-first session of 2026-12-06): it lifts the
    /// worst session of every core set of random underlays by 0.001–0.006
    /// of its optimum, but costs the slow cores and the large conferences
    /// their mean session (by 0.010 and 0.005) and the slow chain whose
    /// links fall (`slow-chain-fall.toml`) its members between the thin
    /// links, whose sessions come back onto relays that their own return
    /// makes late (docs/celerity.md, "Releasing a late charge its link's
    /// queue made").
    pub late_fade: bool,
    /// Releasing the guards once an overload has drained: on a link whose
    /// queue averaged over about a second (the delay guard's input,
    /// [`CelerityParams::late_gain`]) reached the delay bound after the
    /// loop settled (outside the quick-start windows and the climb after
    /// them, [`CelerityParams::climb`]), the first control interval whose
    /// packets show a mean queue under the guard's knee sets that average,
    /// and the age guard's ([`CelerityParams::age_margin`]) and the late
    /// forecast's ([`CelerityParams::late_forecast`]), to the interval's
    /// own figures. The overload is over, and the averages, which fall by
    /// a fifth an interval, would charge it for seconds more: after the
    /// dumbbell's E⇄F fell from 480 to 200 kbit/s its queue averaged
    /// 2.3 s, which took 13 intervals (5 s) to fall under the knee after
    /// the queue had emptied, with every session held near 0 meanwhile.
    /// Charges of a queue that stands past the knee are untouched: the
    /// average still rises with it (docs/celerity.md, "An overload that
    /// has drained").
    pub drain_release: bool,
    /// Re-learning the data packets' base delay after an overload: when
    /// an overload has drained (as for [`CelerityParams::drain_release`]),
    /// the tail watches the link's two size classes for at least 3 s, and
    /// until it has seen 3 of each (giving up after 15 s): if the control
    /// packets' least queue shows the queue empty (at most 3 ms, or a
    /// fifth of the data packets' least) and the data packets' least is
    /// at least 2 ms above it, the data base rises by the difference
    /// (`base_delay.rs`, `Rebase`). A link whose capacity fell serialises
    /// every data packet for longer than the packets that set the data
    /// base did, and the base is a ten-minute minimum: until it forgot
    /// them, every data packet read the difference as a queue (34 ms
    /// across the dumbbell's E⇄F fallen to 200 kbit/s), which priced the
    /// sessions under the new optimum. A raise where the capacity did not
    /// fall (data packets that all waited behind cross traffic) heals
    /// itself: the base stays a minimum, and the first data packet through
    /// an empty queue lowers it again (docs/celerity.md, "An overload
    /// that has drained").
    pub rebase: bool,
    /// Routes that change under the overlay: the routers route around a
    /// failed link (or back over a mended one) with no news to the
    /// overlay, whose links stay up while their one-way delays change.
    /// The base is a ten-minute minimum, so a longer route's extra delay
    /// read as a queue on every packet for ten minutes (a price no rate
    /// could lower: 17 ms on `random-route.toml`, where R2-R3 fails), and
    /// after the link came back the sessions kept the split made for its
    /// failure.
    /// With this on, a tail past its own start window (within it the bases
    /// are still being found through the start's queues) reads two signs
    /// on a link it has measured for 5 s (`base_delay.rs`):
    /// - a packet that comes after lost packets and reads at least 5 ms
    ///   more queue than the packet before them starts a 5-s watch of the
    ///   control packets' least one-way delay; where that is at least
    ///   2.5 ms over the control base, both bases (and the sessions' age
    ///   bases on the link) rise by it, at most by the step across the
    ///   gap, and the head's round-trip minimum is learnt afresh (a
    ///   queue that overflows drops packets around which it is full; one
    ///   that fills does so over many packets; a standing queue on the new
    ///   route is not taken for route past the step);
    /// - a control packet and a data packet each 3 ms or more under the
    ///   least delay their class ever had on the link, within 5 s of each
    ///   other (or the second class's first packet since the first fell,
    ///   within 30 s: a link whose rates a failure cut carries no data for
    ///   seconds after the mend), came over a shorter route (no queue makes
    ///   a packet faster than that; not the base, which rises as old
    ///   minutes leave its window; either class alone can read under it
    ///   for its size, a control message shorter than any before by its
    ///   serialisation on a thin link). Where a longer route raised that
    ///   least, a packet must be back within 3 ms of the least before the
    ///   raise: the raise may hold a queue that stood through the watch,
    ///   and the queue draining read under the raised least
    ///   (`random-route.toml`, 38 ms raised for a route 17 ms longer).
    ///   A tail asks the head for the control half
    ///   ([`ask_alone`](Self::ask_alone)).
    ///
    /// Either opens the change's quick-start window at that peer
    /// ([`change_quick_start`](Self::change_quick_start), 20 s), as a
    /// join or a leave does, so that the split is found again at quick
    /// start's pace. Off, a route change is seen only as queues
    /// (docs/celerity.md, "Routes that change under the overlay").
    pub path_changes: bool,
    /// News of a route change: on Celerity's own trees, a peer that reads
    /// a route that changed under one of its links
    /// ([`path_changes`](Self::path_changes)) tells every member it hears
    /// directly ([`Control::RouteChanged`]), and a peer that gets the news
    /// with no quick-start window open opens the change's
    /// ([`change_quick_start`](Self::change_quick_start)), as for a join
    /// or a leave. `false` turns it off: only the tails that read the
    /// change open windows.
    ///
    /// A route change under the overlay moves the optimum's split for
    /// every session whose trees cross the links it changed, not only at
    /// the tails that read it, and a tail reads a shorter route only from
    /// a control packet that came alone: over real UDP, on
    /// `random-route.toml` after the mend, P2's links to P3 and P4 carried
    /// none for six seconds (P2 always had data for them, and control
    /// rode on it), so P3 and P4 opened no window and the sessions climbed
    /// back at rule (10)'s pace: the worst 0.53–0.58 of its optimum over
    /// \[200,240\], 0.90 simulated (docs/celerity.md, "Routes that change
    /// under the overlay"). News within a window already open opens none
    /// (a join's turbulence read as a route change must not prolong its
    /// window everywhere).
    pub route_news: bool,
    /// Asking for a control packet alone: a tail that reads a data packet
    /// from a head at least 3 ms under the least delay the link's data
    /// packets ever had (half of the sign of a shorter route, see
    /// [`path_changes`](Self::path_changes)) with no control packet to
    /// match it asks the head for one ([`Control::AskAlone`]), and again
    /// on a data packet a second or more later while the data packet's
    /// fall is at most 5 s old and unmatched; a head asked sends one at
    /// once ([`Control::Alone`], 2 bytes and the headers, at most once
    /// every half second per link, whatever this says), and its one-way
    /// delay is the other half of the sign.
    /// `false` leaves the control half to the control packets that happen
    /// to leave alone.
    ///
    /// A head whose data for the tail never pauses sends no control
    /// alone: control rides on the data. Over real UDP, on
    /// `random-route.toml` after the mend, P2's links to P3 and P4 carried
    /// none for six seconds, and on the held-out failure `fail/r2505` no
    /// tail read the mend at all (docs/celerity.md, "Asking for a control
    /// packet alone").
    pub ask_alone: bool,
    /// Resuming at an overload's delivery (0 turns it off): on a link
    /// that was overloaded (as for [`CelerityParams::drain_release`]), the
    /// tail counts what the link delivered of each session (IP bytes)
    /// from the interval that found the overload until the interval that
    /// finds it drained; in that interval it raises each session's rate
    /// on the link to at least this times that mean delivery, clears the
    /// late charge ([`CelerityParams::late_loss`]) of a session whose last
    /// late packets were the overload's
    /// ([`CelerityParams::late_release`]), and forgets the rate a session
    /// it raises fell from ([`CelerityParams::rebound`]), so that the fall
    /// is judged afresh against the recent peak from the resumed rate: the
    /// rebound's quick steps back towards the old rate overshot the new
    /// capacity. While an overload drains, the link delivers what it can,
    /// shared among the packets queued as they arrived, so each session's
    /// mean delivery is its share of what the link now carries; where
    /// other traffic kept the queue, the overload lasts longer and the
    /// sessions' mean is less. Without it the
    /// sessions, cut deep while the old queue drained, climbed back from
    /// their floor by the rebound's steps, which stop at 1.05 times a
    /// delivery measured an interval late: after the dumbbell's E⇄F fell
    /// from 480 to 320 kbit/s at 100 s the slowest session was back at
    /// 90% of its new rate 19 s after the fall, 7 s with the rule
    /// (docs/celerity.md, "Resuming at an overload's delivery").
    pub overload_resume: f64,
    /// A fall within the climb (0 turns it off): the rules for an
    /// overload ([`CelerityParams::drain_release`],
    /// [`CelerityParams::rebase`], [`CelerityParams::overload_resume`] and
    /// the release of its late charge, [`CelerityParams::late_release`])
    /// wait for the climb's end ([`CelerityParams::climb`]), since the
    /// start's overloads spill past the quick-start windows on slow cores
    /// and are no fall. But a link can fall in the first minute too. So a
    /// tail keeps what the link delivers of all sessions (IP bytes,
    /// averaged over about a second) and the most it delivered so while
    /// its queue (the same average) stayed under the delay guard's knee
    /// and no overload stood; outside the quick-start windows, a link
    /// that delivers less than this fraction of that peak is taken for
    /// one that fell: its overload is judged as after the climb, and once
    /// it is found the link is past the climb until the next window (the
    /// settled step and the drift stop there; with them the sessions
    /// resumed at the overload's delivery overshot the new capacity). The
    /// start's overloads come while the link first fills, when the peak
    /// is what it delivers. Within the windows only a link that was calm
    /// for a while is judged so ([`CelerityParams::fall_calm`]). After
    /// the dumbbell's E⇄F fell from 480 kbit/s at 25–45 s to 400–200
    /// kbit/s (thirty points), the slowest session came back (90% of its
    /// new rate for 5 s running) 18.6 s after the fall on the mean,
    /// against 61.7 s without the rule (docs/celerity.md, "A fall within
    /// the climb").
    pub climb_fall: f64,
    /// A fall within the quick-start windows (zero turns it off): a link
    /// can fall before the start's window ends too, where its quick start
    /// has long ended and the window's cuts of up to 30% an interval
    /// bring its sessions down to a few kbit/s, from which they climb
    /// back at κ's pace. Within a window, once the link's quick start has
    /// ended, a fall ([`CelerityParams::climb_fall`]'s, of the same
    /// fraction) counts where the link had been calm (its queue, averaged
    /// over about a second, under the delay guard's knee, and no overload)
    /// for at least this long before the overload, and the link is then
    /// past the climb until the next window opens (within a window a fall
    /// acts only through the overload it finds). The start's overloads
    /// come on links that fill and drain every few seconds: on the slow
    /// cores the links that delivered under 0.7 of their peak at an
    /// overload in the start's window had been calm 0.4–4.2 s before it,
    /// the dumbbell's links that fell 20 s. After the dumbbell's E⇄F
    /// fell from 480 kbit/s at 10–45 s to 400–200 kbit/s (48 points), the
    /// slowest session came back (90% of its new rate for 5 s running)
    /// 15.3 s after the fall on the mean, against 27.9 s without it
    /// (docs/celerity.md, "A fall within the windows").
    pub fall_calm: Duration,
    /// Whether a link that fell within a quick-start window
    /// ([`CelerityParams::fall_calm`]) prices its queue as after the
    /// windows for the rest of the window: the queue ceiling's price scale
    /// ([`queue_ceiling`](Self::queue_ceiling), which fades in over about
    /// two seconds as it always does) and the standing weight
    /// ([`standing_ratio`](Self::standing_ratio)). Default `true`. The
    /// windows leave both out because the `U′` of sessions that still ramp
    /// is far from any equilibrium and the queue that builds as links fill
    /// must slow the climb at once; a link past the climb has neither. Its
    /// sessions, resumed at what it delivered, have `U′` of 100–150 ms, and
    /// the plain price meets that where the queue is as long: on the
    /// dumbbell whose E⇄F fell at 20 s to 280 kbit/s the queue across it
    /// rose to 150–190 ms by 30.4–31 s, the packets came late and a session's
    /// lowest receiver got nothing at 30 s, once back. After the dumbbell's
    /// E⇄F fell at 10–25 s to 400–200 kbit/s (24 points), one point dips
    /// under 0.7 of its new rate after coming back (four without the
    /// rule) and the slowest session is back (ten 1-s bins at 90%) 16.8 s
    /// after the fall on the mean (20.0 without it; docs/celerity.md, "The
    /// price after a fall within a window").
    pub fall_price: bool,
    /// The share of an overlay path's time that control datagrams sent
    /// alone (with no data packet to ride on) may take, outside the
    /// quick-start windows: each peer keeps a budget per neighbour that
    /// fills at this share of the path's rate (from its serialisation per
    /// byte, [`Control::Serialisation`]) up to 320 bytes, and a waiting
    /// message that would leave alone while the budget holds less than 80
    /// bytes (about one datagram) waits until it does (at most 1 s),
    /// riding on data if some comes meanwhile and leaving in one datagram
    /// with whatever else waits for the same neighbour. Messages that must
    /// not wait (greetings, goodbyes, keyframe requests) leave at once
    /// whatever the budget; a retransmission request waits at most half
    /// the delay bound, and is dropped if nothing takes it by then
    /// ([`CelerityPeer::request_retransmission`]). 0 turns it off; paths
    /// whose serialisation is not measured (the baselines' trees, which do
    /// not size their packets, and any path before its first measure) are
    /// never held.
    ///
    /// A peer sends every neighbour a rate update each control interval
    /// and each session's source a report each report interval when
    /// something moved (and, for a session too sparse to carry them, its
    /// `U′` and cut), and where no data goes to that neighbour each leaves
    /// alone, 45–90 bytes with IP and UDP. That is nothing on the dumbbell
    /// (34 lone datagrams from 200 to 300 s, all links together) but not on
    /// a slow core: on `slow-3` (seed 3 of the `slow` family), whose
    /// 150-kbit/s link into a router with three members is crossed by the
    /// fifteen overlay links from the five members outside, lone control
    /// took 19.7 kbit/s of it; after the core fell to 0.6
    /// (scenarios/celerity/slow-chain-fall.toml: 90 kbit/s) 44.9 kbit/s,
    /// half the link, and the sessions crossing it starved. With 0.01 the
    /// budget holds back nothing on the dumbbell (the same datagrams, the
    /// same figures to the digit), lets a path of 90 kbit/s take a lone
    /// datagram about every 0.7 s once its budget is spent, and took
    /// `slow-3`'s to 9.7 and 12.8 kbit/s (docs/celerity.md, "Control alone
    /// on slow paths").
    pub lone_share: f64,
    /// A lead on the rate offered a lagging application (0 turns it off,
    /// the default): once the source has measured its application to
    /// follow the offer [`APP_LEAD_FROM`] late or more
    /// ([`CelerityPeer::app_lag`]), it offers, at each packing, the
    /// session's rate `R` plus this times how far `R` moved over that lag
    /// (`R − R(now − lag)`), within [`APP_LEAD_CLAMP`] of `R`, so that an
    /// encoder that reaches the offer a lag later reaches what `R` has
    /// become by then along a steady climb or fall; the source still
    /// sends at `R`. A simulated encoder that follows 300 ms late then
    /// gave the core seeds 1–30 0.835 of their worst session's optimum
    /// instead of 0.808, 600 ms late 0.763 instead of 0.711; x264 over a
    /// real link showed no change (docs/celerity.md, "An encoder that
    /// lags"), so it is off by default.
    pub app_lead: f64,
    /// News of a link elsewhere: on Celerity's own trees, a neighbour's
    /// [`Control::Reach`] that no longer lists a member this peer still
    /// hears directly (a link between them went down) opens a quick-start
    /// window here too, as a link of this peer's own going down or coming
    /// back does. `false` turns it off.
    ///
    /// A peer notices only its own links failing. When the dumbbell's A–E
    /// link fails, A, C and D open windows, but the links that must now
    /// carry C's and D's sessions to A are C→B and D→B, whose tail B saw
    /// nothing change. Where those links had carried only a thin part of
    /// the sessions before (20 and 34 kbit/s of C's 233 at one
    /// neighbouring point), rule (10) raised them at its own 7% a second,
    /// and C and D took up to 34 s to come back to 90% of 240 kbit/s. The
    /// neighbours tell each other whom they hear (for relaying control
    /// around links that are down), so B learns of the failure from A's
    /// and C's next [`Control::Reach`], about a second after they notice
    /// it. Over the 240 neighbouring dumbbell points every session is back
    /// at 90% for ten seconds in a row after the failure within 8 s at the
    /// median (9 without the rule) and 20 s at worst, one point past 15 s,
    /// against 34 s and 29 points without it (docs/celerity.md, "News of a
    /// link elsewhere"); 14 s at worst and none past 15 s once the price
    /// scale left the windows ([`scale_in_windows`](Self::scale_in_windows)).
    /// Since rates travel in 16 bits (fifth session of 2026-11-29): 20 s at
    /// worst and two points past 15 s with the rule, 35 s and 51 without it
    /// (docs/celerity.md, "Compact rates in control").
    /// A member that leaves says so and is gone from every peer at once; one
    /// that falls silent drops out of the masks about when this peer stops
    /// hearing it too (a window opened a moment early, before its own
    /// departure's). A member that joins only adds bits. News within a
    /// window already open opens none.
    pub reach_news: bool,
    /// Whether the ceiling's price scale
    /// ([`queue_ceiling`](Self::queue_ceiling)) also acts in the
    /// quick-start windows after the start (joins, leaves, links going
    /// down or coming back), as it did until the fourth session of
    /// 2026-11-29. Default `false`: in no window, as in the start's (but on
    /// a link that fell within one, see [`fall_price`](Self::fall_price)). The
    /// baselines' trees (Simulcast, Mutualcast) keep the scale in the later
    /// windows: without it one of Mutualcast's fifteen neighbouring dumbbell
    /// points fell outside 10% of its 120 kbit/s (107.0).
    ///
    /// After such a change the sessions cut back have `U′` of 400–550 ms
    /// for a few seconds, which scaled the price of the links they cross by
    /// up to four; quick start ends on a link whose scaled loss and queue
    /// reach half a session's `U′`, so a queue of 15 ms, under one packet
    /// on the dumbbell's bottleneck, ended it after the A–E failure at one
    /// neighbouring point, for the thin session on that link too, which then
    /// climbed at rule (10)'s 7% a second (back at 90% after 20 s). Over
    /// the 240 neighbouring dumbbell points the slowest session is back at
    /// 90% after the failure within 14 s at worst, none past 15 s (20 s and
    /// one with the scale); joins past 15 s over the three join families
    /// fall from 7 of 210 points to 4 (docs/celerity.md, "No price scale in
    /// the windows"). Since rates travel in 16 bits (fifth session of
    /// 2026-11-29) that gain is gone: two points past 15 s after the failure
    /// without the scale, one with it, and joins past 15 s 5 of 210 without
    /// it, 1 with it. Over both wire forms the rule is even; it stays the
    /// default on its traced mechanism (docs/celerity.md, "Compact rates in control").
    /// With the burst's wait ([`burst_wait`](Self::burst_wait), sixth
    /// session of 2026-11-29) the failure's slow points are none past 15 s
    /// without the scale (15 s at worst) and one with it (27 s); joins are
    /// as before (docs/celerity.md, "The burst's wait").
    pub scale_in_windows: bool,
    /// Whether a head tells each copy's tail how long the copy waits
    /// behind the copies it sent just before in the same instant
    /// ([`DataHeader::burst_wait_us`]), and the tail takes that off the
    /// queuing delay it measures. Default `true`, on Celerity's own trees
    /// (the Simulcast and Mutualcast baselines keep the paper's measure).
    ///
    /// A head sends a packet's copies to its children back to back, and
    /// each copy waits behind the earlier ones on the head's own uplink.
    /// That wait is the fan-out's, not congestion, but the tail measured it
    /// as queue, the more the slower the uplink: a 500-byte copy takes 8 ms
    /// at 500 kbit/s. Behind uploads of 0.5–2 Mbit/s (the `edge` family)
    /// the slow uploads were priced as congested at 74–85% busy, where the
    /// optimum fills them. The head's estimate of its uplink is the fastest
    /// path per byte its tails report ([`Control::Serialisation`]), an
    /// upper bound on the uplink's own; a copy's wait is that times the
    /// bytes the head sent before it in the instant (data and repairs,
    /// with their IP and UDP headers). The tail keeps learning its base
    /// delay from the packets' real timing and subtracts the wait from the
    /// queue sample only, never below zero. `edge`'s mean worst fraction
    /// rises from 0.749 (7 of 30 at 0.8) to 0.778 (11), the core sets'
    /// count from 86 to 87. Where downloads are as slow as uploads
    /// (`internet.toml`) the fastest path overstates the upload's time per
    /// byte up to twice, and the worst session loses 0.02 over nine
    /// neighbouring points (docs/celerity.md, "The burst's wait").
    pub burst_wait: bool,
    /// Whether a tail counts the queue sample of a packet sent ahead of
    /// its session's rate ([`DataHeader::ahead`]) as no more than the
    /// queue its frame met, where the packet has room for its queue.
    /// Default `false`; on Celerity's own trees only.
    ///
    /// A source sends an application's frame on burst credit
    /// ([`burst`](Self::burst)), faster than its rate, and marks each of
    /// the frame's packets after the first that leaves sooner after the
    /// one before than the rate spaces them (whatever this setting: the
    /// mark costs no byte). Such a packet queues behind its frame's
    /// packets before it, a queue of the session's own making that the
    /// gaps between frames drain. With the rule a tail keeps, per
    /// session, the queue sample of the last packet not marked (the first
    /// of its frame: the queue the frame met), and counts a marked
    /// packet's sample as the lower of its own and that one, where the
    /// packet's forecast (its age and the way below it, as
    /// [`late_forecast`](Self::late_forecast) has it) leaves room for its
    /// queue once more under the forecast's limit (the delay bound less
    /// the delay guard's margin); a burst whose queue eats into the slack
    /// counts as measured. Every packet still leaves one sample, so the
    /// link's mean weighs the sessions by their packets as before, and
    /// the age guard and the hops' queued times count the whole queue.
    ///
    /// Over short, fast paths, where the frame budget lets keyframes be
    /// large and their queues priced the links as busier than they were,
    /// it lifts video's worst session (the `fast` family with x264-like
    /// video from 0.759 to 0.816 of its optimum); elsewhere it is even,
    /// with up to three times the late drops on core sets with the
    /// simulator's default video, so it stays off by default
    /// (docs/celerity.md, "Packets sent ahead").
    pub ahead_at_frame: bool,
    /// Whether the floor's order (see `floor_order` and
    /// [`gain_floor`](Self::gain_floor)) also reaches the rivals of the
    /// sessions under the floor: the sessions above it whose cut crosses
    /// the link as often, at least [`RIVAL_SHARE`] of the largest cut share
    /// among those under it. Default `true`.
    ///
    /// A session under the floor gains the floor over its cut share, which
    /// does not fall as its rate rises; a rival above the floor gains its
    /// own `U′`, which does. Two like sessions behind one router (equal
    /// optima) whose `U′` straddled the floor therefore settled where the
    /// rival's `U′` met the floor's gain, the one under it taking the rest:
    /// underlay 73 1.25 / 0.65 of their optimum, `long-1` 1.27 / 0.59
    /// (P3 and P4; docs/celerity.md, "The floor's rivals"). Ordered with
    /// its rivals, a session under the floor gains the floor times its own
    /// `U′` over their mean `U′`: the faster of them gains less, as rule
    /// (10) has it, and at equal `U′` the gain is the floor's as before.
    /// Sessions whose cut crosses the link much less often than the floored
    /// one's (less than [`RIVAL_SHARE`] of its share) are bottlenecked
    /// elsewhere as much and do not count: with every session of the cut
    /// counted, `internet.toml`'s lone fast Toronto session lost the floor's
    /// push to Hong Kong's and Redmond's sessions that cross its links in
    /// half the intervals (0.900 → 0.874 over nine points).
    pub floor_rivals: bool,
    /// Whether a packet's queued age comes from the hops' own measures
    /// ([`DataHeader::queued_us`]) rather than from its age over a base.
    /// Default `true`, on Celerity's own trees.
    ///
    /// The age guard ([`age_queue`](Self::age_queue)) charges at most the
    /// part of a packet's age that was queued. Measured as the age above
    /// the smallest of the session's packets over the link, that part
    /// counted a longer path's extra propagation as queued: a relay that
    /// gets a session's packets over paths of different lengths passes
    /// them on with ages tens of milliseconds apart though neither queued
    /// (on `long-30` 45–50 ms of guard over 1–4 ms of queue on every link
    /// into the far member, whose links then held a lone session to 0.35
    /// of its optimum). With the rule each copy carries the time it has
    /// queued so far: the source writes what the packet waited after its
    /// origin time, each tail adds the one-way delay its link showed above
    /// the link's base (the sample its queue is measured from, with the
    /// burst's wait in it: that is waiting too), and a relay forwards the
    /// sum. The tail's queued age is that sum; its clock offset cancels as
    /// the link's base delay's does. The late forecast's reach (the
    /// slack's ceiling, [`ceiling_slack`](Self::ceiling_slack)) is the age
    /// less the same sum. A copy that local loss recovery rebuilt carries
    /// no time, as its timing measures nothing.
    ///
    /// With the rule a link that carries no data packet in an interval
    /// lets its one-second queued age move towards the queue its control
    /// packets measure. The age guard's averages are taken over data
    /// packets, so an emptied link kept the charge its last data left: on
    /// `large-7` the start's overshoot (packets 270 ms old, 150 ms of it
    /// queued, which the exact measure now counts) left 603 ms of guard on
    /// links that then never carried data again, and the sessions into
    /// their router crowded onto its other link (docs/celerity.md, "The
    /// hops' queues").
    pub hop_queues: bool,
    /// Whether a source prices its own wait by the slack its farthest
    /// member leaves. Applies to application media only (the built-in
    /// source's packets never wait). Default `true`.
    ///
    /// Two parts, which mend an application that does not follow the
    /// offered rate only together (docs/celerity.md, "A source's slack"):
    /// - a unit the application handed over goes stale at the source once
    ///   it has waited there longer than the farthest member's slack (the
    ///   late forecast's limit, [`delay_bound`](Self::delay_bound) less
    ///   [`late_margin`](Self::late_margin), less the longest propagation
    ///   over the session's trees; never less than
    ///   [`bundle_wait`](Self::bundle_wait), nor more than the bound less
    ///   the nearest member's delay, which is when it goes stale
    ///   without the rule), as it would only come late to that member;
    /// - the queued time the source writes ([`DataHeader::queued_us`]) is
    ///   0: the age guard ([`hop_queues`](Self::hop_queues)) charges the
    ///   hops' queues only, not the source's wait, which the links cannot
    ///   shorten by lowering the rate. The wait stays in the packet's age,
    ///   which the delay bound, the late charge and the late forecast
    ///   count.
    ///
    /// Without it an encoder held at 200 kbit/s on the dumbbell, whose
    /// network carries 230 kbit/s a session, delivered 0.1–5.6 kbit/s: its
    /// units waited at the source from the start's 20 kbit/s on, left old,
    /// and were charged as the network's lateness and queue, so the rate
    /// never climbed.
    pub source_slack: bool,
    /// Whether a source whose application hands over more than it is
    /// offered keeps its wait short. Applies to application media only.
    /// Default `true`.
    ///
    /// Where the application handed over more than [`EXCESS_FACTOR`]
    /// times the bytes the session's rate offered it over each of the last
    /// two [`EXCESS_WINDOW`]s (the rate integrated over the window, so that
    /// an encoder that follows a falling rate is never taken for one that
    /// exceeds it), the source drops the oldest units that have waited
    /// more than [`EXCESS_WAIT`] while another waits behind them, as
    /// stale. Such an application keeps a standing queue at the source
    /// that [`source_slack`](Self::source_slack) only bounds: every unit
    /// that leaves has waited most of its farthest member's slack, the
    /// network's own queues make it late at the far members, and the
    /// links price it. With the rule it leaves fresh: on the dumbbell an
    /// encoder held at 300 kbit/s (the network carries 230 a session)
    /// gets 228.6–229.5 kbit/s from 200 to 300 s and A and B 188.7–189.7
    /// from 420 to 500 s, against 218.3–224.4 and 148.4 without it and 224.6–225.2
    /// and 184.3–184.4 for the same video following the rate
    /// (docs/celerity.md, "An application's excess").
    pub source_excess: bool,
    /// The rivals' cut share (with [`floor_rivals`](Self::floor_rivals)):
    /// where a session under the gain floor is ordered against its rivals,
    /// each rival gains its `U′` divided by its own cut share (taken as at
    /// least [`floor_share`](Self::floor_share)), as the floored session
    /// gains the floor divided by its share. Default `true`.
    ///
    /// A session whose cut alternates between receivers crosses each link
    /// of its cut in only a share of the intervals, so rule (10) pushes it
    /// there with its `U′` times that share on average. The floored session
    /// is exempt (its floor is divided by its share, see
    /// [`floor_share`](Self::floor_share)), and its rivals were not: a rival
    /// slower than it (a larger `U′`) that crossed the link half the time
    /// pushed with half its `U′`, less than the floored session's whole
    /// floor, and lost the link to it. Traced on a held-out underlay
    /// (seed 170): P0, under the floor at 29 ms, got 1.27 of its coded
    /// optimum and P1 and P3 (`U′` 36–37 ms) 0.72–0.73; P1's cut crossed
    /// the links into P0 in 78% of the intervals, so it pushed there with
    /// 29 of its 37 ms (docs/celerity.md, "The rivals' cut share"; 0.78–0.79
    /// with the rule). With the rule both sides push with their
    /// averages undivided, so the floor's order compares like with like.
    /// Sessions that cross much less often than the floored one (not
    /// rivals) keep rule (10)'s gain: they are bottlenecked elsewhere as
    /// much, and lifting them too (a throwaway build) lost `long-1`'s even
    /// split (0.89 → 0.70).
    pub rival_share: bool,
}

/// See [`CelerityParams::pace_to_heads`]: from this many members on, sources
/// pace to their heads' buckets unless told otherwise.
pub const PACE_MEMBERS: usize = 9;

/// See [`CelerityParams::rebound`]: a session's rate on a link that falls
/// under this fraction of its recent peak there has fallen far enough to
/// rebound. The loop's own steps outside the windows move a rate by at
/// most 10% an interval up and 30% down, and its ripple by a few percent,
/// so only a run of cuts, as congestion gives, goes this far.
pub const REBOUND_FALL: f64 = 0.6;

/// See [`CelerityParams::rebound`]: only a fall from a peak of at least
/// this share of the session's own rate (`β/U′ − δ`, as it is when the
/// fall is noticed) counts. Most falls are of links that carry a session's
/// thin relay paths at a few kbit/s (380 of the dumbbell's 405 from peaks
/// under 5 kbit/s, 1786 of 1880 on random underlay 74), and raising those
/// at quick start's gain only fed paths whose packets came late (74's
/// worst session 0.67 with 2.2% loss at step 0.0151, 0.85 with a share of
/// 0.1). Shares of 0.1 to 0.2 left the default dumbbell point's B at
/// 189.98 kbit/s in \[420,500\], 0.02 short of issue 3's line there (which
/// sits at 99.2% of the payload ceiling: a fifth of a packet decides it);
/// 0.3 gives A and B 190.40 and the same return after the cross traffic
/// (190.3 and 190.5 with the gate on late packets, [`DRIFT_LATE`];
/// docs/celerity.md, "The rebound").
pub const REBOUND_SHARE: f64 = 0.3;

/// See [`CelerityParams::rebound`]: the recent peak of a session's rate on
/// a link decays by this factor an interval (about 10% a second at the
/// 200-ms interval), so a rate that declines at rule (10)'s own pace does
/// not leave the peak behind.
pub const REBOUND_PEAK_DECAY: f64 = 0.98;

/// See [`CelerityParams::rebound`]: a fall that the link has not made up
/// within this long is forgotten (the session's share there has changed
/// for good).
pub const REBOUND_HOLD: Duration = Duration::from_secs(30);

/// See [`CelerityParams::rebound_steady`]: on a steady queue the rebound
/// steps at quick start's gain only while a session's rate on the link is
/// under this many times the link's smoothed delivery of it. The delivery
/// saturates at what the narrower link carries, so the quick steps stop
/// near it. At 1.3 they ran past it: on the link that fell from 600 to
/// 250 kbit/s the sessions were back at 235–246 at 79 s, then the queue
/// passed the bound again and they fell to 33 at 86 s and took 30 s more
/// (and twice as long to come back from 300 or 350); at 1.05 they stayed
/// at 235–246 from 80 s on.
pub const REBOUND_DELIVERY: f64 = 1.05;

/// See [`CelerityParams::drain_hold`]: the queue (s) from which a link
/// holds a session whose delivery is above its rate. The dumbbell's and
/// the random underlays' links settle at well under it (their queues'
/// swings included), so the hold acts after a fall in capacity, not in
/// an equilibrium's ripples: held at any queue, the core seeds 1–30 lost
/// 0.006 of their worst session's fraction on average.
pub const DRAIN_HOLD_QUEUE: f64 = 0.1;

/// See [`CelerityParams::drain_hold`]: a link's delivery of a session,
/// smoothed by this weight of each interval's.
pub const DELIVERY_SMOOTHING: f64 = 0.5;

/// See [`CelerityParams::spare`]: a link lends spare rate to a session only
/// while its price is below this fraction of the session's `U′`. The same
/// bound says when a link is calm enough for quick start to resume
/// ([`CelerityParams::resume`]).
pub const SPARE_PRICE: f64 = 0.1;

/// The step multiplier of resuming in the start's window (see
/// [`CelerityParams::start_resume`]): twice κ refills a link drained by the
/// start's overshoot within about a second; quick start's ×8 overshot again.
pub const START_RESUME_GAIN: f64 = 2.0;

/// How long the cautious ramp ([`CelerityParams::cautious_gain`]) holds
/// after the latest end of quick start on a link into the tail. Held for
/// the whole start window (30 s), it left the random underlays' fast
/// sessions, which climb for tens of seconds, at a fifth of their rate at
/// 40 s and moved the worst sessions' mean fraction from 0.872 / 0.864 /
/// 0.837 to 0.849 / 0.860 / 0.812 over the three sets of thirty. Over the
/// dumbbell's 150 shifted points the start line held at 39, 45, 46 and 53
/// points with holds of 1, 2, 3 and 4 s and at 56–60 with 5 to 10 s (58
/// held throughout; 33 without the rule): 5 s is the shortest hold with
/// all of the gain (docs/celerity.md, "The cautious ramp").
pub const CAUTIOUS_HOLD: Duration = Duration::from_secs(5);

/// See [`CelerityParams::gain_floor`]: the floor is at most this part of
/// the delay bound less the link's fixed delay. The serialisation the floor
/// counts is summed over the path's hops, and on long paths over slow links
/// an uncapped floor let a lone session stand a queue that made its packets
/// late: `random-late.toml`'s P1 (coded 600 kbit/s, 65 ms from the others)
/// lost 8.5% against 0.1% without the floor. At 30% or 25% the underlays
/// gained a little more, but the floor reached a session of the dumbbell's
/// peer dynamics and slowed the join at the default point (13–14 s against
/// 9); at 20% every dumbbell scenario is byte-identical and the underlays
/// and `internet.toml` keep nearly all of the gain (docs/celerity.md, "The
/// gain floor").
pub const FLOOR_BUDGET: f64 = 0.2;

/// See [`CelerityParams::floor_share`]: the share of intervals in which a
/// session's cut crossed a link is smoothed as `x ← x + 0.1·(crossed − x)`,
/// over about two seconds of 200-ms intervals (0.05 and 0.2 gave the same
/// underlay figures within their noise).
pub const CUT_SHARE_GAIN: f64 = 0.1;

/// See [`CelerityParams::floor_share`]: the floor divided by the cut share
/// is at most this many times the floor's delay budget ([`FLOOR_BUDGET`]
/// of what the bound leaves after the link's fixed delay). Uncapped,
/// `internet.toml`'s fast Toronto session lost 5.8% of its packets late at
/// one of nine neighbouring points (0.1% with the cap, as without the
/// share); at 1 the lone fast sessions kept little of their gain.
///
/// The floor's order (`floor_order`, see [`CelerityParams::gain_floor`])
/// comes after the cap and may scale a capped gain past it, by its own
/// `U′` over the mean of the sessions it orders (at most their number).
/// Capping again after the order acts on 7 of the 90 underlays of the
/// three sets; before quick start ended on any session's signal it moved
/// their worst sessions by −0.031 to +0.020
/// (underlay 65, `random-lone.toml`, 0.845 → 0.814; 73 0.808 → 0.828) and
/// changed none of the sets' counts, so it was not done.
pub const FLOOR_SHARE_BUDGET: f64 = 2.0;

/// See [`CelerityParams::floor_rivals`]: a session above the floor joins
/// the floor's order on a link when its cut share there is at least this
/// fraction of the largest among the sessions under the floor. Underlay
/// 73's like pair cross their links at shares within 0.79 of each other
/// (0.38–0.72), `internet.toml`'s Toronto session crosses the downloads it
/// shares 0.97 of the time and the others 0.46–0.57 (0.47–0.59 of it).
pub const RIVAL_SHARE: f64 = 0.7;

/// See [`CelerityParams::spare`]: a link lends spare rate only if its
/// fixed one-way delay (propagation plus a data packet's serialisation) is
/// at most this fraction of the delay bound.
pub const SPARE_PROPAGATION: f64 = 0.1;

/// See [`CelerityParams::ceiling_slack`]: a link's ceiling is never
/// shorter than this, seconds, however little slack its packets have
/// left: a shorter queue than about one packet's serialisation cannot
/// stand for a price.
pub const SLACK_CEILING_MIN: f64 = 0.005;

/// See [`CelerityParams::steady_gain`]: a link is near its equilibrium for
/// a session while the common part of rule (10)'s relative gradient,
/// `(Ū′ − price)/U′`, is smaller than this in size. Applying the steady
/// gain at any distance (with only calm links exempt) did best on the
/// dumbbell but held back the response to queues that made packets late:
/// `random-core.toml` with the queue ceiling lost up to 4.7% of a
/// session's packets (docs/celerity.md, "The steady gain").
pub const STEADY_BAND: f64 = 0.75;

/// See [`CelerityParams::drift_gain`]: a link's drift for a session is its
/// rule (10) gradient smoothed as `d ← d + 0.03·(g − d)`, over about seven
/// seconds of 200-ms intervals: long enough that a cut flipping among a
/// session's receivers from interval to interval, and the loop's own
/// swings, average out. At 0.1 (about two seconds, a drift followed both
/// ways at gain 1) underlays that had settled by 40 s swung: underlay 90
/// fell from 0.90 to 0.73 of its optimum over \[40,70\], and two underlays
/// lost over 5% of a session's packets.
pub const DRIFT_SMOOTHING: f64 = 0.03;

/// See [`CelerityParams::drift_gain`]: the part of an upward drift that is
/// not followed, so that the smoothed gradient of a link about its
/// equilibrium, which wanders about zero, is not followed.
pub const DRIFT_BAND: f64 = 0.05;

/// See [`CelerityParams::drift_gain`]: the drift is not followed on a link
/// over which this share of the session's packets or more came late (its
/// one-second average), nor where the delay or the age guard charges. The
/// rebound ([`CelerityParams::rebound`]) does not climb there either.
pub const DRIFT_LATE: f64 = 0.01;

/// See [`CelerityParams::drift_gain`]: the most of a drift that counts.
pub const DRIFT_CAP: f64 = 1.0;

/// The default [`CelerityParams::late_loss`]: half a second of price for
/// a session whose every packet over a link comes late. A packet counts
/// as late when its farthest member gets it late, and the members nearer
/// in its subtree may still get it in time; a full second (a loss rate's
/// weight) cut the late drops further but starved more far members
/// behind queues that near ones keep (docs/celerity.md, "Late packets are
/// the session's loss").
const LATE_LOSS_DEFAULT: f64 = 0.5;

/// The share of its late packets' queued time that a link's own queue must
/// have made for a session's charge there to fade once it has left the
/// link ([`CelerityParams::late_fade`]).
pub const LATE_FADE_OWN: f64 = 0.7;

/// The share of such a charge that fades in each idle control interval
/// ([`CelerityParams::late_fade`]): about four seconds to fall by a half.
pub const LATE_FADE_STEP: f64 = 0.05;

/// See [`CelerityParams::balance`]: the relative difference of two links'
/// prices at and beyond which the balance moves nothing between them.
pub const BALANCE_TOLERANCE: f64 = 0.25;

/// The least share of a session's rate a tree must carry for its paths to
/// count in the packet size (see [`CelerityParams::size_target`]). A tree
/// with a sliver of the rate (0.1–1 kbit/s of a session's 100) may cross a
/// link that carried little else since the start, whose tail's measure is
/// the start's queue read as serialisation: on `random-deep.toml`
/// (underlay 74) two such links read 93 and 168 µs a byte where their
/// hops take about 22, and with such slivers every source sent the fewest
/// bytes allowed (350) for the whole run, with 7% of the bytes in
/// meshcast headers (3.5% with this rule). The packets of such a tree may
/// come late; they are a twentieth of the session's at most. Counting
/// every tree with a rate, 81 of 90 random underlays had every session at
/// 0.8 of its optimum or more; at 2% 84, at 5% 84 with fewer sessions
/// losing more than 5% (docs/celerity.md, "Thin trees do not size the
/// packets"). 10% with the size decided once had more late drops
/// ("Packet size from the path").
pub const SIZE_TREE_SHARE: f64 = 0.05;

/// The fewest media bytes [`CelerityParams::size_target`] sizes a packet
/// to (a quarter of a full one: below it the headers' share passes 5%).
pub const MIN_PACKET_BYTES: u32 = 350;

/// How often a source decides its packet size, from the start and from
/// each membership change, on the median of the packings of the time
/// before ([`CelerityParams::size_target`]): the trees settle after a
/// change. A size decided once after 10 or 40 s instead of 20 gave the
/// same figures on the random underlays.
pub const SIZE_SETTLE: Duration = Duration::from_secs(20);

/// A source keeps its packet size when a new decision is within this
/// fraction of it ([`CelerityParams::size_target`]).
pub const SIZE_HYSTERESIS: f64 = 0.1;

/// How long a link's tail goes on measuring its data packets against the
/// longest one's base after the last packet of at least half that length
/// (`CelerityPeer::measure`): past it, with only shorter packets
/// coming, the data base starts afresh at their length. A source whose
/// size decision shrinks its packets ([`CelerityParams::size_target`],
/// first decided after [`SIZE_SETTLE`]) leaves its links holding the base
/// of the packets before, which may have been learnt behind the start's
/// queues: short packets do not lower it, so for the base's ten minutes
/// the start's queue reads as serialisation (the sizes stay at the floor)
/// and a short packet's queue is read low. 2, 5 and 10 s gave alike
/// figures on the slow cores (docs/celerity.md, "The short packets' own
/// base"); a keyframe every 2 s keeps the longest's base. The gain floor
/// stays in full packets' times ([`CelerityParams::gain_floor`]).
pub const SHORT_DATA_RESTART: Duration = Duration::from_secs(5);

/// The delay bound the defaults of [`CelerityParams`] are stated for; the
/// margins that are parts of the bound scale with it
/// ([`CelerityParams::with_delay_bound`]).
pub const DEFAULT_DELAY_BOUND: Duration = Duration::from_millis(200);

impl CelerityParams {
    /// The defaults for a conference with delay bound `bound`: the
    /// defaults' margins that are parts of the delay budget
    /// ([`late_margin`](Self::late_margin),
    /// [`age_margin`](Self::age_margin),
    /// [`queue_ceiling`](Self::queue_ceiling),
    /// [`size_target`](Self::size_target) and
    /// [`uprime_target`](Self::uprime_target)) are the same fractions of
    /// `bound` as of [`DEFAULT_DELAY_BOUND`] (20%, 40%, 40%, 15% and
    /// 50%), so that any bound gets margins below it; the wait for a
    /// bundle ([`bundle_wait`](Self::bundle_wait)) is a quarter of a
    /// shorter bound, and its default under a longer one (it is sized to
    /// the gap between an encoder's frames, not to the bound); every other
    /// default is the same as [`Default::default`]'s.
    pub fn with_delay_bound(bound: Duration) -> Self {
        let d = Self::default();
        let scale = bound.as_secs_f64() / DEFAULT_DELAY_BOUND.as_secs_f64();
        let part = |m: Duration| Duration::from_secs_f64(m.as_secs_f64() * scale);
        CelerityParams {
            delay_bound: bound,
            late_margin: part(d.late_margin),
            age_margin: part(d.age_margin),
            queue_ceiling: d.queue_ceiling.map(part),
            size_target: d.size_target.map(part),
            uprime_target: d.uprime_target.map(part),
            bundle_wait: part(d.bundle_wait).min(d.bundle_wait),
            ..d
        }
    }
}

impl Default for CelerityParams {
    fn default() -> Self {
        CelerityParams {
            delay_bound: DEFAULT_DELAY_BOUND,
            beta: 18.0,
            delta_kbps: 10.0,
            uprime_target: Some(Duration::from_millis(100)),
            step: 0.015,
            settled_step: 0.02,
            drift_gain: 3.0,
            climb: Duration::from_secs(40),
            quick_start: Duration::from_secs(30),
            change_quick_start: Duration::from_secs(20),
            quick_start_gain: 8.0,
            landing_gain: 2.0,
            cautious_gain: 2.8,
            steady_gain: 0.5,
            damping: Duration::from_millis(1500),
            queue_ceiling: Some(Duration::from_millis(80)),
            ceiling_exponent: 2.0 / 3.0,
            ceiling_slack: 0.6,
            pace_to_heads: None,
            share_guard: 3.0,
            standing_ratio: 0.5,
            gain_floor: 2.5,
            floor_share: 0.25,
            floor_share_lift: true,
            floor_dispersion: false,
            police_slack: 0.1,
            trace_control: false,
            control_interval: Duration::from_millis(200),
            report_interval: Duration::from_millis(300),
            media_bytes: 1400,
            size_target: Some(Duration::from_millis(30)),
            size_fanout: true,
            size_slack: 0.5,
            moved_only: true,
            media_sizes: Vec::new(),
            burst: 4.0,
            bundle: true,
            bundle_wait: Duration::from_millis(BUNDLE_WAIT_MS),
            max_rate: None,
            initial_rate_kbps: 20.0,
            join_rate: JOIN_RATE_DEFAULT,
            liveness: Duration::from_secs(3),
            repair_ratio: 0.5,
            late_margin: Duration::from_millis(40),
            late_gain: 4.0,
            age_margin: Duration::from_millis(80),
            age_queue: true,
            late_forecast: true,
            late_loss: LATE_LOSS_DEFAULT,
            balance: 0.03,
            spare: true,
            resume: 0.6,
            start_resume: 0.9,
            fresh_exit: true,
            rebound: 0.8,
            rebound_steady: true,
            drain_hold: 0.3,
            late_release: true,
            late_fade: false,
            drain_release: true,
            rebase: true,
            path_changes: true,
            route_news: true,
            ask_alone: true,
            overload_resume: 0.9,
            climb_fall: 0.7,
            fall_calm: Duration::from_secs(5),
            fall_price: true,
            lone_share: 0.01,
            app_lead: 0.0,
            reach_news: true,
            scale_in_windows: false,
            burst_wait: true,
            ahead_at_frame: false,
            floor_rivals: true,
            hop_queues: true,
            source_slack: true,
            source_excess: true,
            rival_share: true,
        }
    }
}

/// One peer's configuration.
#[derive(Clone, Debug)]
pub struct CelerityConfig {
    /// This peer's index in `participants`.
    pub me: usize,
    /// Every participant's address (index = participant id = session id).
    pub participants: Vec<Addr>,
    /// The measurement flow of each participant's session.
    pub flows: Vec<FlowId>,
    /// Which trees sessions use.
    pub model: Model,
    /// Protocol parameters.
    pub params: CelerityParams,
}

/// Why a configuration was refused.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ConfigError {
    /// Too many or too few participants, or `me` out of range.
    #[error("{0}")]
    Participants(String),
    /// A parameter is out of range.
    #[error("{0}")]
    Param(String),
}

/// What a peer counted (for tests and diagnostics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerCounters {
    /// Datagrams that failed to parse.
    pub malformed: u64,
    /// Datagrams from addresses that are not participants.
    pub strangers: u64,
    /// Data packets older than the delay bound (dropped, not delivered).
    pub late: u64,
    /// Data packets dropped at the head for exceeding the session's link
    /// rate.
    pub shaped: u64,
    /// Duplicate data packets.
    pub duplicates: u64,
    /// Application media dropped at the source: it waited for the
    /// session's rate to let it go until it could no longer reach any
    /// member within the delay bound.
    pub stale_media: u64,
    /// Application media refused: larger than [`MAX_APP_MEDIA`], or handed
    /// over while the peer does not carry application media.
    pub refused_media: u64,
    /// Coded repairs sent (§5.4).
    pub repairs_sent: u64,
    /// Data packets recovered from repairs.
    pub recovered: u64,
    /// Repairs refused as malformed.
    pub bad_repairs: u64,
    /// Units of application media sent in bundles (see
    /// [`CelerityParams::bundle`]).
    pub bundled_units: u64,
    /// Bundles sent (each carries two or more units).
    pub bundles: u64,
    /// Keyframe requests this peer's application sent to other sessions'
    /// sources ([`CelerityPeer::request_keyframe`]).
    pub keyframe_requests_sent: u64,
    /// Keyframe requests that reached this peer's session from its
    /// receivers ([`Event::KeyframeRequested`]).
    pub keyframe_requests_received: u64,
    /// Reception reports this peer's application sent to other sessions'
    /// sources ([`CelerityPeer::report_reception`]).
    pub reception_reports_sent: u64,
    /// Reception reports that reached this peer's session from its
    /// receivers ([`Event::ReceptionReported`]).
    pub reception_reports_received: u64,
    /// Retransmission requests this peer's application sent to other
    /// sessions' sources ([`CelerityPeer::request_retransmission`]).
    pub retransmission_requests_sent: u64,
    /// Retransmission requests that reached this peer's session from its
    /// receivers ([`Event::RetransmissionRequested`]).
    pub retransmission_requests_received: u64,
    /// Retransmission requests this peer's application sent that the
    /// budget for control sent alone held past their life, and that no
    /// datagram took meanwhile: dropped, not sent late (see
    /// [`CelerityPeer::request_retransmission`]).
    pub retransmission_requests_expired: u64,
    /// Times a link into this peer raised its data packets' base delay
    /// after an overload ([`CelerityParams::rebase`]).
    pub rebases: u64,
    /// Times a link into this peer found its route longer and raised its
    /// bases ([`CelerityParams::path_changes`]).
    pub paths_longer: u64,
    /// Times a link into this peer found its route shorter
    /// ([`CelerityParams::path_changes`]).
    pub paths_shorter: u64,
    /// News of a route change from another member
    /// ([`Control::RouteChanged`], [`CelerityParams::route_news`]).
    pub route_news: u64,
    /// Times this peer asked a head for a control packet alone
    /// ([`Control::AskAlone`], [`CelerityParams::ask_alone`]).
    pub alone_asked: u64,
    /// Control packets this peer sent alone because a tail asked
    /// ([`Control::Alone`]).
    pub alone_sent: u64,
    /// Times a link into this peer found an overload drained (see
    /// [`CelerityParams::drain_release`] and
    /// [`CelerityParams::overload_resume`]).
    pub drained_overloads: u64,
    /// Times a link into this peer found an overload within the climb or
    /// a quick-start window because its delivery had fallen (see
    /// [`CelerityParams::climb_fall`] and [`CelerityParams::fall_calm`]).
    pub climb_falls: u64,
}

/// The default [`CelerityParams::bundle_wait`], ms: longer than the time
/// between two frames of an encoder at 20 frames a second or more, so
/// that a slow session's frames go at least two to a packet. A wait
/// shorter than that gap bundles next to nothing: at 30 frames a second
/// (33 ms apart) 20 and 30 ms left 21–23 sessions of the `slow` family's
/// thirty underlays at nothing with video, and 40–55 ms 4–5
/// (docs/celerity.md, "Bundles").
pub const BUNDLE_WAIT_MS: u64 = 50;

/// How much more than the session's rate offered an application must
/// hand over, in each of two [`EXCESS_WINDOW`]s running, for its source to
/// keep its wait short (see [`CelerityParams::source_excess`]). An
/// encoder that follows the rate hands over its keyframe interval's share
/// of it: a keyframe of eight frames' size every 2 s puts 1.105 times the
/// rate in the second that holds it and less in the next, and at 1.1 an
/// encoder that followed a falling rate on one of the core underlays was
/// taken for an excess (`r30` with the default video); at 1.15 and 1.2
/// none was.
pub const EXCESS_FACTOR: f64 = 1.2;

/// The window over which [`EXCESS_FACTOR`] compares an application's
/// bytes with its offered rate's.
pub const EXCESS_WINDOW: Duration = Duration::from_secs(1);

/// How long a unit may wait at the source while its application exceeds
/// its offered rate (see [`CelerityParams::source_excess`]), beyond which
/// the oldest go stale while another waits behind them.
pub const EXCESS_WAIT: Duration = Duration::from_millis(30);

/// The lead's offer at `now` (see [`CelerityParams::app_lead`]) from the
/// packings' rates `rates` (oldest first, the last `now`'s), for an
/// application `lag` late: the latest rate plus `gain` times how far it
/// moved since the latest packing at least `lag` before (the oldest kept,
/// where none is), within [`APP_LEAD_CLAMP`] of it.
fn lead_from(rates: &RateHistory, now: Time, lag: Duration, gain: f64) -> f64 {
    let (Some(rate), Some(then)) = (rates.latest(), rates.before(now, lag)) else {
        return 0.0;
    };
    (rate + gain * (rate - then))
        .clamp((1.0 - APP_LEAD_CLAMP) * rate, (1.0 + APP_LEAD_CLAMP) * rate)
}

/// See [`CelerityParams::app_lead`]: the least lag of an application's at
/// which the source leads its offer. A simulated encoder that follows at
/// once measures 0–100 ms (the estimate's scatter), and lags under 200 ms
/// cost the conference little (docs/celerity.md, "An encoder that lags").
pub const APP_LEAD_FROM: Duration = Duration::from_millis(200);

/// See [`CelerityParams::app_lead`]: the lead's offer stays within this
/// fraction of the session's rate, either way.
pub const APP_LEAD_CLAMP: f64 = 0.5;

/// See [`CelerityParams::app_lead`]: how long the source keeps its
/// packings' rates, past the longest lag [`super::app_lag`] measures (1.5
/// s).
pub const APP_LEAD_MEMORY: Duration = Duration::from_millis(1600);

/// The media bytes under which a packet of application media takes
/// company (see [`CelerityParams::bundle`]): a unit, or the bundle it
/// starts, shorter than this (and than half the offered packet) waits
/// for others and takes the waiting ones that fit. A packet's headers,
/// 50–60 bytes on every hop, are a fifth or more of its bytes below this.
/// Longer units gain little from company, and their wait is delay: on
/// the dumbbell with keyframes of fifteen frames' size every 2 s (frames
/// between of about 580 bytes at 170 kbit/s) a wait for every frame lost
/// 1.8% of the units late and put the worst session at 0.65 of its
/// optimum, against 0.1% and 0.71 without bundles (docs/celerity.md,
/// "Bundles").
pub const BUNDLE_SHORT: usize = 200;

/// How far the conference's price level moves in a control interval, as
/// the exponent of its ratio to the level it wants (see
/// [`CelerityParams::uprime_target`]): 1/50, so that the level closes
/// `1 − 1/e` of its gap in fifty intervals, ten seconds at the default
/// interval, slower than the rates' own settling.
const PRICE_LEVEL_GAIN: f64 = 0.02;

/// The highest price level (see [`CelerityParams::uprime_target`]). The
/// guards and a session's charge for its own late packets are delays that
/// the level does not divide, and a session with no rate has `U′ = β/δ`
/// (1.8 s at the defaults) to push against them: read at a level past
/// four, sessions that a slow link's guards held back fell to nothing
/// while others got twice their optimum (on random underlays with cores
/// of 150–750 kbit/s, five of eight sessions of one underlay at zero).
/// At four the mean session loss there stayed 2.6% and the lowest worst
/// session rose (docs/celerity.md, "The conference's price level").
pub const PRICE_LEVEL_MAX: f64 = 4.0;

/// The largest unit of application media a peer carries, bytes (a data
/// packet then still fits a 1500-byte MTU with its headers).
pub const MAX_APP_MEDIA: usize = 1400;

/// The most media bytes a data packet of the built-in source carries,
/// and the most a peer offers an application
/// ([`CelerityPeer::offered_packet_bytes`]), in a conference of `n`
/// members: [`MAX_APP_MEDIA`] up to eight members, and 1394 down to 1373
/// bytes from nine to sixteen. Every datagram then fits the UDP payload
/// of a 1500-byte IPv4 MTU, repairs included: a repair carries a whole
/// data packet's header and media (local loss recovery's coded form, so
/// that a recovered packet is relayed like any other) behind the coding
/// header, and the two-byte member masks and longer tree entries of
/// nine or more members made one coding a 1400-byte packet up to 1499
/// bytes, which IP fragments. A peer caps
/// [`CelerityParams::media_bytes`] at this; an application's units up to
/// [`MAX_APP_MEDIA`] are still carried, and those past this are not
/// combined into repairs.
pub fn max_media_bytes(n: usize) -> u32 {
    let full = wire::coded_data_len(n, MAX_APP_MEDIA);
    (MAX_APP_MEDIA - full.saturating_sub(repair_symbol_len(n))) as u32
}

/// Local loss recovery's symbol size in a conference of `n` members: the
/// coded form of a packet of [`MAX_APP_MEDIA`], at most what a repair
/// within [`MAX_DATAGRAM`] holds (see [`max_media_bytes`]). A data packet
/// whose coded form is longer is sent but never combined.
fn repair_symbol_len(n: usize) -> usize {
    wire::coded_data_len(n, MAX_APP_MEDIA).min(MAX_DATAGRAM - recovery::repair_overhead())
}

/// The media bytes a data packet of the built-in source may carry
/// ([`CelerityParams::media_bytes`], each of
/// [`CelerityParams::media_sizes`]).
pub const MEDIA_BYTES: std::ops::RangeInclusive<u32> = 16..=MAX_APP_MEDIA as u32;

/// Application media: what the source's application handed over and
/// what arrived for the application.
#[derive(Debug, Default)]
struct AppMedia {
    /// How late the application follows the rate it is offered
    /// ([`CelerityPeer::app_lag`]).
    lag: super::app_lag::AppLag,
    /// The session's rates at each packing, as far back as the longest
    /// lag measured needs ([`APP_LEAD_MEMORY`]), and the rate offered the
    /// application (kbit/s).
    rates: RateHistory,
    offer_kbps: Option<f64>,
    /// Units waiting to be sent, with when they were handed over: a
    /// unit's data packet carries that as its origin, so its wait here for
    /// the rate (an encoder's frame comes in a burst the rate spreads out)
    /// counts in the age relays and receivers judge it by. The delay bound
    /// is end to end, from the application's hand-over to delivery.
    queue: VecDeque<(Time, Vec<u8>)>,
    /// Units that arrived, with their session.
    arrived: VecDeque<(usize, Vec<u8>)>,
    /// Whether the application has handed over any media yet (until then
    /// the session sends padding, so that its rate is known before the
    /// application's encoder starts).
    started: bool,
    /// The application's excess over its offered rate (see
    /// [`CelerityParams::source_excess`]): the current window's start,
    /// the bytes handed over and offered in it, when the offered rate was
    /// last integrated, whether the last window was over, and whether the
    /// source now keeps its wait short.
    excess_from: Time,
    handed_bytes: f64,
    offered_bytes: f64,
    offered_at: Time,
    over_before: bool,
    excess: bool,
}

impl AppMedia {
    /// The rate to offer the application at a packing at `now` that gave
    /// the session `rate` (kbit/s), with the lead's gain `gain` (see
    /// [`CelerityParams::app_lead`]); `None` (offer `rate`) while the
    /// application's lag is unknown or under [`APP_LEAD_FROM`]. Keeps the
    /// packings' rates of the last [`APP_LEAD_MEMORY`].
    fn lead_offer(&mut self, now: Time, rate: f64, gain: f64) -> Option<f64> {
        self.rates.push(now, rate);
        let lag = self.lag.estimate().filter(|&l| l >= APP_LEAD_FROM)?;
        Some(lead_from(&self.rates, now, lag, gain))
    }

    /// Counts `bytes` handed over at `now`, offered `rate_kbps` since the
    /// last hand-over, and decides at each window's end whether the
    /// application exceeds what it is offered (see
    /// [`CelerityParams::source_excess`]).
    fn count_handed(&mut self, now: Time, bytes: usize, rate_kbps: f64) {
        self.offered_bytes +=
            rate_kbps * 1e3 / 8.0 * now.saturating_since(self.offered_at).as_secs_f64();
        self.offered_at = now;
        if now.saturating_since(self.excess_from) >= EXCESS_WINDOW {
            let over = self.handed_bytes > EXCESS_FACTOR * self.offered_bytes;
            self.excess = over && self.over_before;
            self.over_before = over;
            self.excess_from = now;
            self.handed_bytes = 0.0;
            self.offered_bytes = 0.0;
        }
        self.handed_bytes += bytes as f64;
    }

    /// How many of the waiting units, from the oldest, go in the next
    /// packet, and its media bytes: while the packet so far is under
    /// [`BUNDLE_SHORT`] bytes, the next unit joins it (a bundle) if it is
    /// itself under [`BUNDLE_SHORT`] bytes and fits in `limit` bytes with
    /// the units' length prefixes; at least one; `(0, 0)` when none
    /// waits. With `bundle` off, one.
    ///
    /// Only short packets take company: a bundle is timed from its first
    /// unit, so a unit that joins an older one arrives as old as that one.
    /// On the dumbbell with keyframes of fifteen frames' size, the frame
    /// after a keyframe joined the keyframe's last, short unit, which had
    /// waited behind the keyframe, and came late with it: 2.9% of the
    /// units lost, the worst session at 0.68 of its optimum (0.1% and 0.71
    /// without bundles). A long unit does not join a short one either: the
    /// packet would take the long unit's time at the rate and more, and
    /// the unit after it waits that much longer. (The real-UDP failure
    /// this was first made against, a keyframe's last unit stale at the
    /// source, was later traced to the stream's first keyframe meeting
    /// the credit padding had spent, bundled or not: docs/celerity.md,
    /// "Bundles", "Taken out and put back".)
    fn next_packet(&self, limit: usize, bundle: bool) -> (usize, usize) {
        let Some((_, first)) = self.queue.front() else {
            return (0, 0);
        };
        let (mut count, mut bytes) = (1, first.len());
        if !bundle {
            return (count, bytes);
        }
        let mut bundled = wire::BUNDLE_PREFIX + first.len();
        for (_, unit) in self.queue.iter().skip(1) {
            if bytes >= BUNDLE_SHORT || unit.len() >= BUNDLE_SHORT {
                break;
            }
            bundled += wire::BUNDLE_PREFIX + unit.len();
            if bundled > limit {
                break;
            }
            count += 1;
            bytes = bundled;
        }
        (count, bytes)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    Send,
    Control,
    Report,
    Flush,
    Liveness,
    Pack,
}
const TIMERS: usize = 6;

/// A tail tells the head, and a head tells the source, when a rate moved
/// by more than this fraction: control crosses the same bottlenecks as the
/// media it steers, so small moves are not worth their bytes. The band is
/// also a dead zone in the loop (heads police, and sources pack, with
/// rates up to this far from the tails' own), and it widens the rate
/// control's ripple. On the dumbbell the sources' rates swing over a cycle
/// of about 4 s: with 2% between 218.7 and 240.8 kbit/s in 1-s means
/// (standard deviation 5.3), and 16 one-second bins fell to 19 packets,
/// under 90% of the optimum, before the cross traffic; with 1% between
/// 224.0 and 237.6 (2.8), and 6 such bins, for control that grows from
/// 0.16% to 0.22% of the bytes sent (docs/celerity.md, "The rate dead
/// band").
const MOVED: f64 = 0.01;

/// The budget for control sent alone to a neighbour
/// ([`CelerityParams::lone_share`]) holds at most this many bytes: four
/// datagrams of [`LONE_TYPICAL`], so that a burst of news after a quiet
/// spell leaves at once.
const LONE_DEPTH: f64 = 320.0;
/// What a lone control datagram is counted as before it is built, bytes
/// with IP and UDP (rate updates and reports among eight members take
/// 45–90).
const LONE_TYPICAL: f64 = 80.0;
/// The longest the budget holds a message back: well within the liveness
/// period (3 s by default), so that a neighbour with nothing else from
/// this peer still hears it.
const LONE_HOLD_MAX: Duration = Duration::from_secs(1);

/// Whether a control message leaves at once, whatever it waits for
/// otherwise: greetings and goodbyes (membership), keyframe requests (a
/// receiver shows nothing until the keyframe), and relays of any of them.
fn urgent(c: &Control) -> bool {
    match c {
        Control::Hello { .. } | Control::Bye | Control::KeyframeRequest { .. } => true,
        Control::Relay { inner, .. } => inner.iter().any(urgent),
        _ => false,
    }
}

/// Whether a control message is a retransmission request (or a relay of
/// nothing else), which the budget for control sent alone may hold only
/// within its life (see [`CelerityPeer::request_retransmission`]).
fn expires(c: &Control) -> bool {
    match c {
        Control::RetransmissionRequest { .. } => true,
        Control::Relay { inner, .. } => !inner.is_empty() && inner.iter().all(expires),
        _ => false,
    }
}

/// How often a tail may ask a head for a control packet alone
/// ([`CelerityParams::ask_alone`]).
const ASK_ALONE_GAP: Duration = Duration::from_secs(1);
/// How often a head answers a tail's asking for a control packet alone
/// (whatever the tail asks: [`CelerityParams::ask_alone`]).
const ALONE_GAP: Duration = Duration::from_millis(500);

/// The most control bytes a data packet carries.
const PIGGYBACK_BYTES: usize = 52;
/// The largest datagram a peer sends with control riding along: the UDP
/// payload of a 1500-byte IPv4 MTU. Taking all the waiting control up to
/// [`PIGGYBACK_BYTES`] made a 1400-byte media packet as large as 1477
/// bytes plus 2 per tree entry, which IP fragments on real links; a data
/// packet now takes the waiting messages that fit (docs/wire-format.md).
const MAX_DATAGRAM: usize = 1472;
/// How long control waits for a data packet to ride on, by kind (see
/// `CelerityPeer::ride_waits`).
#[derive(Clone, Copy, Debug)]
struct RideWaits {
    /// A tail's rate update.
    rates: Duration,
    /// A tail's link loss.
    loss: Duration,
    /// A head's link-state report to a source.
    report: Duration,
}

/// The Simulcast and Mutualcast baselines' waits: Celerity's until the
/// seventh session of 2026-11-26. With Celerity's longer ones, 5 of the
/// fifteen step × β points around Mutualcast's dumbbell defaults had a
/// session more than 10% under its 120 kbit/s (1 with these).
const BASELINE_RIDE_WAITS: RideWaits = RideWaits {
    rates: Duration::from_millis(100),
    loss: Duration::from_millis(100),
    report: Duration::from_millis(40),
};
/// A tail repeats its rates to the head at least this often.
const TAIL_HEARTBEAT: Duration = Duration::from_secs(2);
/// A head repeats its link state to a source at least this often.
const REPORT_HEARTBEAT: Duration = Duration::from_secs(3);
/// A peer repeats whom it hears directly ([`Control::Reach`]) at least
/// this often.
const REACH_HEARTBEAT: Duration = Duration::from_secs(5);

/// Whether a message last sent at `at` (`None`: never) is due again at
/// `now` by its heartbeat `period`.
fn heartbeat_due(at: Option<Time>, now: Time, period: Duration) -> bool {
    at.is_none_or(|t| now.saturating_since(t) >= period)
}

/// In a conference of more than [`SMALL_CONFERENCE`] members, news (a
/// report, a change of the source's own link rates) repacks the trees at
/// most this often, and with more than [`REPACK_GAP_MEMBERS`] members at
/// most this often per that many members ([`repack_gap`]). With eight
/// members reports arrive every few milliseconds, and packing on each
/// (about a millisecond for eight members) cost more than all the rest of
/// the peer; with four, packing costs microseconds and repacking 5 ms
/// after news keeps the loop short.
const REPACK_GAP: Duration = Duration::from_millis(50);
/// See [`REPACK_GAP`].
const SMALL_CONFERENCE: usize = 4;
/// See [`REPACK_GAP`].
const REPACK_GAP_MEMBERS: usize = 8;

/// The least time between two packings prompted by news in a conference
/// of `members` (`None`: none, 5 ms after the news). Past
/// [`REPACK_GAP_MEMBERS`] the gap grows with the members: each source
/// hears from about as many heads, and a packing costs more the more
/// members it spans. Fifteen members repack at most every 94 ms, which
/// took 27–33% off the CPU time of a 15-member run, and the `large`
/// family's rates stayed where they were (docs/celerity.md, "Repacking in
/// large conferences").
fn repack_gap(members: usize) -> Option<Duration> {
    (members > SMALL_CONFERENCE).then(|| {
        let per = members.max(REPACK_GAP_MEMBERS) as u64;
        Duration::from_nanos(REPACK_GAP.as_nanos() * per / REPACK_GAP_MEMBERS as u64)
    })
}
/// A source trusts a link-state report this long (two heartbeats and
/// some).
const REPORT_FRESH: Duration = Duration::from_secs(7);

/// [`CelerityParams::join_rate`]'s default.
pub const JOIN_RATE_DEFAULT: f64 = 0.25;

/// How long after its own start a member that hears it joined a running
/// conference still takes its links to [`CelerityParams::join_rate`]: a
/// running member's greeting answers its own within a round trip, and
/// later its links' rates are its quick start's own.
pub const JOIN_NEWS: Duration = Duration::from_secs(1);

/// Whether `now` differs from `before` by more than [`MOVED`].
fn moved(now: f64, before: f64) -> bool {
    (now - before).abs() > MOVED * before.max(1.0)
}

/// The floor's lift (see [`CelerityParams::floor_share_lift`]): where two
/// or more sessions under the floor (`uprime[m]`, their own weighed `U′`,
/// between 0 and `floor`) cross the link in at least `least` of the
/// intervals (their `share`), each one `floored` marks (its cut crosses the
/// link now) gains its own `U′` plus the floor's excess over it divided by
/// its share (taken as at least `least`), at most `most`, instead of the
/// whole floor divided by its share. A session alone under the floor keeps
/// its gain.
fn lift_floor(
    terms: &mut [(f64, f64)],
    uprime: &[f64],
    floored: &[bool],
    share: &[f64],
    floor: f64,
    least: f64,
    most: f64,
) {
    let under = |m: usize| uprime[m] > 0.0 && uprime[m] < floor && share[m] >= least;
    if (0..floored.len()).filter(|&m| under(m)).count() < 2 {
        return;
    }
    for m in (0..floored.len()).filter(|&m| floored[m]) {
        terms[m].0 = (uprime[m] + (floor - uprime[m]) / share[m].max(least)).min(most);
    }
}

/// The floor's order (see [`CelerityParams::gain_floor`]): the sessions
/// `floored` marks (their cuts cross the link, their `U′` under the floor)
/// gain the floor alike, which would leave the split between them to
/// chance; with two or more, each one's gain (`terms[m].0`) is scaled by
/// its own `U′` (`uprime[m]`) over their mean. Their mean gain stays the
/// floor's, so the motion against the price is as before, and the slower
/// of them (the larger `U′`) gains the more, as rule (10) has it above the
/// floor.
///
/// With `rivals` (the cut shares of the link's sessions, see
/// [`CelerityParams::floor_rivals`]) the mean also takes in the known
/// sessions above the floor whose cut crosses the link (a gain in
/// `terms`, a `U′` in `uprime`) at least [`RIVAL_SHARE`] of the largest
/// floored share; only the floored sessions' gains are scaled, and a
/// single floored session is ordered against its rivals. With `lift` as
/// well (see [`CelerityParams::rival_share`]), each rival then gains its
/// `U′` over its own share, taken as at least `lift`.
fn floor_order(
    terms: &mut [(f64, f64)],
    uprime: &[f64],
    floored: &[bool],
    rivals: Option<&[f64]>,
    lift: Option<f64>,
) {
    debug_assert!(floored.len() <= 64, "the rivals' bit set holds 64 sessions");
    if !floored.contains(&true) {
        return;
    }
    let top_share = rivals.map_or(0.0, |share| {
        (0..floored.len())
            .filter(|&m| floored[m])
            .map(|m| share[m])
            .fold(0.0, f64::max)
    });
    // The rivals, as a bit set, found once from the gains as they came
    // (lifting changes them).
    let rival_set = rivals.map_or(0u64, |share| {
        (0..floored.len())
            .filter(|&m| {
                !floored[m]
                    && terms[m].0 > 0.0
                    && uprime[m] > 0.0
                    && share[m] >= RIVAL_SHARE * top_share
            })
            .fold(0, |set, m| set | 1 << m)
    });
    let rival = |m: usize| rival_set & (1 << m) != 0;
    let (sum, count) = (0..floored.len())
        .filter(|&m| floored[m] || rival(m))
        .fold((0.0, 0u32), |(s, n), m| (s + uprime[m], n + 1));
    if count < 2 || sum <= 0.0 {
        return;
    }
    let mean = sum / f64::from(count);
    for m in (0..floored.len()).filter(|&m| floored[m]) {
        terms[m].0 *= uprime[m] / mean;
    }
    if let (Some(least), Some(share)) = (lift, rivals) {
        for m in (0..floored.len()).filter(|&m| rival(m)) {
            terms[m].0 = uprime[m] / share[m].max(least);
        }
    }
}

/// Where a control interval lies, as the rate rules read it
/// ([`CelerityPeer::phase`]): computed once per control tick, the same for
/// every link into the tail.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Phase {
    /// Quick start's step multiplier on the links still in it: the
    /// quick-start gain, or the cautious gain while the cautious ramp holds
    /// (see [`CelerityParams::cautious_gain`]); 1 outside the windows.
    quick: f64,
    /// Within a quick-start window (the start's, or one a membership or
    /// link change opened).
    window: bool,
    /// Within the start's window.
    start: bool,
    /// Within a window that a membership or link change opened after the
    /// start's had ended (see [`CelerityParams::scale_in_windows`]).
    event: bool,
    /// Resuming may act: within a window, where its fraction is above 0
    /// (see [`CelerityParams::resume`]).
    resumes: bool,
    /// Within a window or the climb after it (see
    /// [`CelerityParams::climb`]).
    climbing: bool,
    /// The control interval, s.
    interval: f64,
}

/// One session's rate on one link into a tail, as the balance sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Share {
    session: usize,
    /// The link's price in the last interval, s.
    price: f64,
    /// The session's `U′`, s.
    uprime: f64,
    /// c_{m,e}, kbit/s.
    rate: f64,
}

/// The balance's rate changes, one per share (see
/// [`CelerityParams::balance`]): every two shares of different sessions
/// whose prices differ by less than [`BALANCE_TOLERANCE`] (relative) trade
/// rate towards the one with the larger `U′`. Trades are pairwise, so the
/// changes sum to zero.
fn balance_moves(shares: &[Share], step: f64) -> Vec<f64> {
    let mut moves = vec![0.0; shares.len()];
    for (i, a) in shares.iter().enumerate() {
        for (j, b) in shares.iter().enumerate().skip(i + 1) {
            if a.session == b.session {
                continue;
            }
            let apart = (a.price - b.price).abs() / a.price.max(b.price);
            let w = 1.0 - apart / BALANCE_TOLERANCE;
            if w <= 0.0 {
                continue;
            }
            let c = a.rate.min(b.rate);
            let trade = (step * w * c * (a.uprime - b.uprime) / (0.5 * (a.uprime + b.uprime)))
                .clamp(-0.05 * c, 0.05 * c);
            moves[i] += trade;
            moves[j] -= trade;
        }
    }
    moves
}

/// How a data packet's queue sample counts in its link's price (see
/// [`CelerityParams::ahead_at_frame`]).
#[derive(Clone, Copy, Debug)]
enum Sample {
    /// As measured: control, repairs, and data with the rule off.
    Plain,
    /// A data packet of this session not sent ahead, the first of its
    /// frame: as measured, and the queue its frame met.
    FrameStart(usize),
    /// A data packet of `session` sent ahead of the rate, whose forecast
    /// leaves `room` (seconds) under its limit: a sample within the room
    /// counts as no more than the queue its frame met.
    Ahead { session: usize, room: f64 },
}

/// The link from another member into this peer (this peer is its tail).
#[derive(Clone, Debug)]
struct Incoming {
    next_seq: Option<u16>,
    received: u32,
    lost: u32,
    /// Separate bases for small (control) and full (data) packets: the
    /// serialisation time differs by size class.
    base: [BaseDelay; 2],
    /// The bottleneck's packet time from packet pairs (see
    /// [`CelerityParams::floor_dispersion`]).
    dispersion: Dispersion,
    /// The largest data packet's media seen on the link within the data
    /// base's window, bytes: shorter data packets' one-way delays are
    /// measured as if they were this long (see [`CelerityPeer::measure`]).
    longest: usize,
    /// When a data packet of at least half [`Incoming::longest`] last came
    /// over the link (see [`SHORT_DATA_RESTART`]).
    long_at: Option<Time>,
    /// The interval's queuing delays, one per packet of either size class:
    /// their mean is the interval's queuing delay, their lower quartile
    /// the standing weight's (see [`CelerityParams::standing_ratio`]).
    qsamples: Vec<f64>,
    /// Each session's last queue sample from a data packet not sent
    /// ahead of its rate over this link: the queue its current frame met
    /// (see [`CelerityParams::ahead_at_frame`]). A session whose frames
    /// are spread over several trees may have sent its current frame's
    /// first packet over another link; the sample is then an earlier
    /// frame's.
    frame_queue: [f64; MAX_PARTICIPANTS],
    /// The standing weight, smoothed.
    standing: f64,
    qdelay: f64,
    /// Smoothed slope of the queuing delay, s/s.
    qtrend: f64,
    /// The queuing delay averaged over about a second (the delay guard's
    /// input, see [`CelerityParams::late_gain`]).
    qslow: f64,
    /// The ages of this interval's data packets, summed, and their count
    /// (see [`CelerityParams::age_margin`]).
    age_sum: f64,
    age_n: u32,
    /// Their mean age averaged over about a second, seconds.
    age_slow: f64,
    /// Per session, the smallest age of its data packets over the link
    /// (see [`CelerityParams::age_queue`]); the interval's ages above
    /// those bases, summed, and their mean averaged over about a second.
    /// The bases are kept with that rule or
    /// [`CelerityParams::ceiling_slack`] on and
    /// [`CelerityParams::hop_queues`] off (whose queued ages the sum then
    /// holds instead), the sum only with the rule (a peer's parameters do
    /// not change while it runs).
    age_base: [BaseDelay; MAX_PARTICIPANTS],
    queued_age_sum: f64,
    queued_age_slow: f64,
    /// The largest propagation forecast of this interval's data packets
    /// (see [`CelerityParams::ceiling_slack`]), and its average over about
    /// a second.
    reach_max: f64,
    reach_slow: f64,
    /// How many of this interval's data packets are forecast late (see
    /// [`CelerityParams::late_forecast`]), and that fraction averaged
    /// over about a second.
    forecast_late: u32,
    forecast_slow: f64,
    /// Per session: this interval's data packets and how many of them are
    /// certain to come late (see [`CelerityParams::late_loss`]), and that
    /// fraction averaged over about a second.
    session_packets: [u32; MAX_PARTICIPANTS],
    /// Each session's IP bytes over the link this control interval.
    session_bytes: [u64; MAX_PARTICIPANTS],
    /// Each session's delivery over the link, kbit/s, smoothed over the
    /// intervals ([`DELIVERY_SMOOTHING`]; see
    /// [`CelerityParams::drain_hold`]).
    delivered: [f64; MAX_PARTICIPANTS],
    session_late: [u32; MAX_PARTICIPANTS],
    /// Per session, the largest queue this link's own queue showed at its
    /// late packets in this interval, seconds (see
    /// [`CelerityParams::late_release`]).
    late_queue: [f64; MAX_PARTICIPANTS],
    late_loss: [f64; MAX_PARTICIPANTS],
    /// Per session: whether the last interval with late packets was an
    /// overload's (after the climb, the link's queue at or past the delay
    /// bound at them; see [`CelerityParams::late_release`]).
    late_overload: [bool; MAX_PARTICIPANTS],
    /// Per session, over this interval's late packets: the sums of the
    /// link's own queue at them, of their queued time since their source
    /// (the link's included), and of the queue at which each would have
    /// come in time (the link's queue less what its forecast passed the
    /// bound by), seconds (see [`CelerityParams::late_fade`]).
    late_own: [f64; MAX_PARTICIPANTS],
    late_hops: [f64; MAX_PARTICIPANTS],
    late_room: [f64; MAX_PARTICIPANTS],
    /// Per session, the queue under which its charge fades while it sends
    /// nothing over the link, from its last interval with late packets
    /// (0 where the link's own queue did not make them late; see
    /// [`CelerityParams::late_fade`]).
    late_fade_queue: [f64; MAX_PARTICIPANTS],
    /// The link's queue has averaged the delay bound after the loop
    /// settled and has not yet been measured under the delay guard's knee
    /// since (see [`CelerityParams::drain_release`]).
    overloaded: bool,
    /// Per session, the IP bytes the link delivered of it since the
    /// overload was found, and the seconds since (see
    /// [`CelerityParams::overload_resume`]).
    overload_bytes: [u64; MAX_PARTICIPANTS],
    overload_s: f64,
    /// What the link delivers of all sessions, kbit/s of IP bytes,
    /// averaged over about a second, and the most it delivered so while
    /// its queue stayed under the delay guard's knee and no overload stood
    /// (see [`CelerityParams::climb_fall`]).
    delivery_slow: f64,
    delivery_peak: f64,
    /// The link fell within the climb or a window: it is past the climb
    /// until the next window opens (see [`CelerityParams::climb_fall`] and
    /// [`CelerityParams::fall_calm`]).
    climb_ended: bool,
    /// Whether the link's last interval was in a quick-start window: a
    /// window opens where this one is and the last was not.
    in_window: bool,
    /// Seconds the link has been calm so far (its averaged queue under
    /// the knee and no overload), and the length of its last calm stretch
    /// before that (see [`CelerityParams::fall_calm`]).
    calm_s: f64,
    calm_before: f64,
    /// An overload has just drained: watch the size classes from the next
    /// packet on (see [`CelerityParams::rebase`]).
    rebase_due: bool,
    rebase: Option<Rebase>,
    /// When the link's first control packet came (see
    /// [`CelerityParams::path_changes`]).
    measured_since: Option<Time>,
    /// The queue the link's last packet read over its class's base, s.
    last_q: f64,
    /// Watching for a longer route, and whether one was found (or a
    /// shorter one) since the last control interval.
    path_watch: Option<PathWatch>,
    path_longer: bool,
    path_shorter: bool,
    /// When a control and a data packet last read at least `PATH_FALL`
    /// under their class's floor.
    fell_at: [Option<Time>; 2],
    /// When this tail last asked the head for a control packet alone, and
    /// whether it is to ask now (see [`CelerityParams::ask_alone`]).
    asked_alone_at: Option<Time>,
    ask_alone_due: bool,
    /// When the last control and data packet that the shorter route's
    /// sign reads came (see [`Incoming::watch_fall`]).
    seen_at: [Option<Time>; 2],
    /// Per session (see [`CelerityParams::rebound`]): the recent peak of
    /// its rate, kbit/s; the peak it fell from (0: none); the intervals
    /// since it fell.
    peak: [f64; MAX_PARTICIPANTS],
    fell_from: [f64; MAX_PARTICIPANTS],
    fell_for: [u32; MAX_PARTICIPANTS],
    /// In quick start (until congestion shows after a membership change).
    ramping: bool,
    /// Each session's rate when quick start last ended on this link (0
    /// until it has since the last membership change): where
    /// [`CelerityParams::resume`] aims.
    ramp_end: [f64; MAX_PARTICIPANTS],
    /// The interval being measured began before quick start last
    /// restarted on this link: its queue and loss belong to the old
    /// membership and do not end quick start (see
    /// [`CelerityParams::fresh_exit`]).
    ramp_stale: bool,
    /// The link's price scale (see [`CelerityParams::queue_ceiling`]).
    price_scale: f64,
    /// The link is down: nothing arrived on it for the liveness period.
    down: bool,
    /// The interval's loss after local recovery: what the price counts.
    loss: f64,
    /// Packets recovered from repairs of this link this interval.
    recovered: u32,
    /// The loss before recovery, smoothed over about a second: what the
    /// head hears ([`Control::LinkLoss`]) to size its repairs.
    raw_loss: f64,
    /// The loss the head was last told (0: below the recovery threshold).
    told_loss: f64,
    /// The serialisation per byte the head was last told
    /// ([`Control::Serialisation`], in its units), and when.
    told_serial: Option<(u16, Time)>,
    /// c_{m,e} per session, kbit/s.
    rates: [f64; MAX_PARTICIPANTS],
    /// The price rule (10) charged in the last interval, and the sessions
    /// whose critical cut crossed the link then: the balance's inputs.
    price: f64,
    in_cut: [bool; MAX_PARTICIPANTS],
    /// Per session, the smoothed share of intervals in which its cut
    /// crossed the link (see [`CelerityParams::floor_share`]); 1 in the
    /// windows.
    cut_share: [f64; MAX_PARTICIPANTS],
    /// Per session, rule (10)'s gradient smoothed outside the windows (see
    /// [`CelerityParams::drift_gain`]); 0 in the windows.
    drift: [f64; MAX_PARTICIPANTS],
    sent_rates: [f64; MAX_PARTICIPANTS],
    sent_at: Option<Time>,
    /// With [`CelerityParams::moved_only`]: when the head was last told
    /// every session's rate.
    full_sent_at: Option<Time>,
    last_ts: Option<(u32, Time)>,
}

/// The link from this peer to another member (this peer is its head).
#[derive(Clone, Debug)]
struct Outgoing {
    seq: u16,
    /// c_{m,e} per session as the tail last said, kbit/s.
    rates: [f64; MAX_PARTICIPANTS],
    /// Minimum RTT over a sliding window: the propagation part, which is
    /// what the delay bound is about (queuing comes and goes).
    rtt_min: BaseDelay,
    /// Token buckets per session.
    bucket: [Bucket; MAX_PARTICIPANTS],
    reported: [f64; MAX_PARTICIPANTS],
    reported_at: [Option<Time>; MAX_PARTICIPANTS],
    /// With [`CelerityParams::moved_only`]: per session, the link's delay
    /// as its source was last told it (`None` before the first report).
    told_delay: [Option<u16>; MAX_PARTICIPANTS],
    /// With [`CelerityParams::moved_only`], of the neighbour's own
    /// session: when its source was last told every link's rate.
    full_report_at: Option<Time>,
    pending: Vec<u8>,
    pending_deadline: Option<Time>,
    /// Retransmission requests (or relays of them) that the budget for
    /// control sent alone would hold past their life: when each stops
    /// being worth sending, and its message (TLV bytes). They wait beside
    /// `pending` for a datagram to the tail to take them and are dropped
    /// at that time (see [`CelerityPeer::request_retransmission`]).
    held_requests: Vec<(Time, Vec<u8>)>,
    /// The budget for control datagrams sent alone to the link's tail
    /// ([`CelerityParams::lone_share`]): bytes (negative after a datagram
    /// larger than what was left) as of the last one, and when that was.
    lone: Option<(f64, Time)>,
    /// When this head last sent a control packet alone because the tail
    /// asked ([`Control::AskAlone`]).
    alone_at: Option<Time>,
    /// The link's loss rate as the tail last reported it.
    loss: f64,
    /// The link's serialisation per byte as the tail last said
    /// ([`Control::Serialisation`]), seconds.
    per_byte: Option<f64>,
    /// What this peer last told the member at the link's tail of its own
    /// links' serialisations ([`Control::Serialisations`]), in units, per
    /// link's tail, and when.
    serials_told: [Option<u16>; MAX_PARTICIPANTS],
    serials_at: Option<Time>,
}

impl Incoming {
    /// Whether the link has been measured for [`PATH_MATURE`] since its
    /// first control packet (see [`CelerityParams::path_changes`]).
    fn measured_long(&self, now: Time) -> bool {
        self.measured_since
            .is_some_and(|t| now.saturating_since(t) >= PATH_MATURE)
    }

    /// Watch for a shorter route (see [`CelerityParams::path_changes`]) on
    /// a packet that learns its class's base, a data packet (`full`) or a
    /// control packet, of one-way delay `owd` (a data packet's normalised
    /// to the longest), before it is learnt: a packet of each class under
    /// its class's floor within [`PATH_FALL_BOTH`] of each other (or the
    /// second class's first packet since the first class fell, within
    /// [`PATH_FALL_WAIT`]), on a link measured long enough, sets
    /// `path_shorter`; only where the signs are read (`read`). Where a
    /// longer route raised the floors,
    /// a packet must be back at the floor of before
    /// ([`BaseDelay::fell`]). The link is timed from its first control
    /// packet whatever `read` says. While a data packet's half stands
    /// alone, with `ask`, a data packet asks the head for a control packet
    /// alone (`ask_alone_due`), at most once every [`ASK_ALONE_GAP`] (see
    /// [`CelerityParams::ask_alone`]).
    fn watch_fall(&mut self, now: Time, full: bool, owd: f64, read: bool, ask: bool) {
        let mature = self.measured_long(now);
        let class = usize::from(full);
        // The last packet of this class before this one.
        let before = self.seen_at[class].replace(now);
        let base = &self.base[class];
        if base.floor().is_none() {
            if !full {
                self.measured_since = Some(now);
            }
            return;
        }
        if !(read && mature) {
            return;
        }
        let recent = |t: Option<Time>| t.is_some_and(|t| now.saturating_since(t) <= PATH_FALL_BOTH);
        // The other class fell within `PATH_FALL_BOTH`, or this is the
        // first packet of this class since it did.
        let other = self.fell_at[1 - class].filter(|&t| {
            recent(Some(t))
                || (now.saturating_since(t) <= PATH_FALL_WAIT && before.is_none_or(|b| b < t))
        });
        if base.fell(owd, PATH_FALL) {
            self.fell_at[class] = Some(now);
            if other.is_some() {
                self.path_shorter = true;
                self.fell_at = [None; 2];
                for base in &mut self.base {
                    base.forget_route();
                }
                return;
            }
        }
        let ask = ask
            && full
            && recent(self.fell_at[1])
            && heartbeat_due(self.asked_alone_at, now, ASK_ALONE_GAP);
        if ask {
            self.asked_alone_at = Some(now);
            self.ask_alone_due = true;
        }
    }

    /// Watch for a longer route (see [`CelerityParams::path_changes`]) on
    /// a packet that read `step` seconds more queue over its class's base
    /// than the packet before it, a data packet (`full`) or a control
    /// packet of one-way delay `owd`, after lost packets (`gapped`). Where
    /// a watch finds the route longer, both bases and the sessions' age
    /// bases on the link rise by the difference, and `path_longer` says
    /// so.
    fn watch_path(&mut self, now: Time, gapped: bool, full: bool, owd: f64, step: f64) {
        if gapped && self.measured_long(now) && self.path_watch.is_none() && step >= PATH_STEP {
            self.path_watch = Some(PathWatch::new(now, step));
        }
        let Some(watch) = &mut self.path_watch else {
            return;
        };
        if !full {
            watch.note_control(owd);
        }
        let Some(rise) = watch.verdict(now, self.base[0].base()) else {
            return;
        };
        self.path_watch = None;
        if rise > 0.0 {
            for base in &mut self.base {
                base.raise_route(rise);
            }
            for base in &mut self.age_base {
                base.raise(rise);
            }
            // The drained overload's watch measured the old route.
            self.rebase = None;
            self.path_longer = true;
        }
    }

    /// The sessions' rates to tell the head at `now`, and whether the
    /// tail's heartbeat ([`TAIL_HEARTBEAT`]) was due; `None` when no rate
    /// moved by more than [`MOVED`] since the head was told it and the
    /// heartbeat is not due. Every present session's (`present`, by
    /// member; not this peer's, `me`), or with `moved_only`
    /// ([`CelerityParams::moved_only`]) those that moved, and every
    /// session's at the heartbeat of the last such full update. Notes what
    /// it returns as told.
    fn rates_to_tell(
        &mut self,
        now: Time,
        me: usize,
        present: &[bool],
        moved_only: bool,
    ) -> Option<(Vec<(u8, u32)>, bool)> {
        let n = present.len();
        // The sessions whose rate moved since the head was told it.
        let moved_since: u16 = (0..n)
            .filter(|&m| moved(self.rates[m], self.sent_rates[m]))
            .fold(0, |mask, m| mask | 1 << m);
        let heartbeat = |at| heartbeat_due(at, now, TAIL_HEARTBEAT);
        let stale = heartbeat(self.sent_at);
        if moved_since == 0 && !stale {
            return None;
        }
        let full = !moved_only || heartbeat(self.full_sent_at);
        let told = if full { u16::MAX } else { moved_since };
        let rates = (0..n)
            .filter(|&m| m != me && present[m] && told & (1 << m) != 0)
            .map(|m| (m as u8, (self.rates[m] * 1e3).round() as u32))
            .collect();
        for m in (0..MAX_PARTICIPANTS).filter(|&m| told & (1 << m) != 0) {
            self.sent_rates[m] = self.rates[m];
        }
        if full {
            self.full_sent_at = Some(now);
        }
        self.sent_at = Some(now);
        Some((rates, stale))
    }

    /// How much longer a data packet takes over this link than a control
    /// packet when no queue holds either: the difference of the two size
    /// classes' base delays (the clock offset cancels), which is the
    /// serialisation of the data packet's extra bytes on every hop of the
    /// path (39 ms over two 600 kbit/s core links, 23 ms across the
    /// dumbbell's 480 kbit/s). 0 until both classes have been seen. If data
    /// first crossed the link behind a standing queue, its base and so this
    /// are too high, which only lowers the delay guard's knee. With data
    /// packets of mixed sizes it is the longest one's (see
    /// [`CelerityPeer::measure`]).
    fn serialisation(&self) -> f64 {
        match (self.base[0].base(), self.base[1].base()) {
            (Some(small), Some(full)) => (full - small).max(0.0),
            _ => 0.0,
        }
    }

    /// How long the link's path takes per byte, seconds: the longest data
    /// packet's serialisation ([`Incoming::serialisation`]) over its
    /// media bytes (the few header bytes it has more than a control packet
    /// make this up to 2% high, which only makes the sources' packets that
    /// much smaller). `None` until both size classes have been seen.
    fn per_byte(&self) -> Option<f64> {
        let known = self.base[0].base().is_some() && self.base[1].base().is_some();
        (known && self.longest > 0).then(|| self.serialisation() / self.longest as f64)
    }

    /// The serialisation of `bytes` of media over the link's path: the
    /// longest data packet's ([`Incoming::serialisation`]) in proportion;
    /// 0 before a data packet has come.
    fn serialisation_of(&self, bytes: usize) -> f64 {
        if self.longest == 0 {
            return 0.0;
        }
        self.serialisation() * bytes as f64 / self.longest as f64
    }
}

impl Outgoing {
    /// The link's propagation delay: half its windowed minimum RTT.
    fn one_way_delay(&self) -> Option<Duration> {
        self.one_way_secs().map(Duration::from_secs_f64)
    }

    /// [`Outgoing::one_way_delay`] in seconds (read per packet by the late
    /// forecast, without the round trip through `Duration`).
    fn one_way_secs(&self) -> Option<f64> {
        self.rtt_min.base().map(|rtt| rtt / 2.0)
    }
}

/// `per_byte` seconds in [`wire::SERIALISATION_UNIT`]s (saturating).
fn serial_units(per_byte: f64) -> u16 {
    (per_byte / wire::SERIALISATION_UNIT)
        .round()
        .clamp(0.0, f64::from(u16::MAX)) as u16
}

/// Whether a serialisation per byte `now` (in units) moved by more than 5%
/// (and a unit) from `told`.
fn serial_moved(now: u16, told: u16) -> bool {
    now.abs_diff(told) > told / 20 + 1
}

/// `bytes` over `secs` seconds, in kbit/s.
fn kbit_per_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / 1e3 / secs
}

/// A session's token bucket on one overlay link: `(bytes, last refill)`.
/// The head polices with it; the source keeps a copy of every head's
/// bucket for its own session (see [`CelerityPeer::send_tick`]).
type Bucket = (f64, Time);

/// How many bytes a bucket for `rate_kbps` holds: three of the session's
/// largest packets (`largest` bytes of media), or half a second at the
/// rate when that is more.
fn bucket_depth(rate_kbps: f64, largest: f64) -> f64 {
    (3.0 * largest).max(rate_kbps.max(0.0) * 1e3 / 8.0 * 0.5)
}

/// The bytes in `bucket` at `now`, refilled at `rate_kbps` up to `depth`.
fn bucket_level(bucket: Bucket, rate_kbps: f64, depth: f64, now: Time) -> f64 {
    let rate_bytes = rate_kbps.max(0.0) * 1e3 / 8.0;
    (bucket.0 + rate_bytes * now.saturating_since(bucket.1).as_secs_f64()).min(depth)
}

/// The depth of the source's copy of a head's bucket: one (largest)
/// packet less than the head's (see [`CelerityPeer::link_wait`]).
fn mirror_depth(rate_kbps: f64, largest: f64) -> f64 {
    bucket_depth(rate_kbps, largest) - largest
}

/// What this peer knows of another session from its data headers.
#[derive(Clone, Debug, Default)]
struct SessionInfo {
    known: bool,
    uprime: f64,
    relay_side: u16,
    recv_side: u16,
    /// Highest media sequence seen and a bitmap of the sequences seen
    /// (see [`SessionInfo::first_time`]).
    top: Option<u32>,
    window: SeenWindow,
}

/// How many media sequences below the highest a peer tells apart as new
/// or seen again ([`SessionInfo::first_time`]). Packets of one session
/// come over several trees, whose paths and queues differ by up to the
/// delay bound, and an older packet may arrive that many packets after a
/// newer one: 200 ms at 100 Mbit/s in 1400-byte packets is 1800 of them.
/// With 64 (before the twelfth session of 2026-12-04), a session of 33
/// Mbit/s whose trees' queues differed by more than 30 ms lost a tenth
/// of its packets as "duplicates", with no drop reported
/// (docs/celerity.md, "Packets sent ahead").
const SEEN_WINDOW: u32 = 4096;

/// A ring of [`SEEN_WINDOW`] bits, one per media sequence (`seq %
/// SEEN_WINDOW`).
#[derive(Clone, Debug)]
struct SeenWindow(Box<[u64; SEEN_WINDOW as usize / 64]>);

impl Default for SeenWindow {
    fn default() -> Self {
        SeenWindow(Box::new([0; SEEN_WINDOW as usize / 64]))
    }
}

impl SeenWindow {
    fn slot(seq: u32) -> (usize, u64) {
        let i = seq % SEEN_WINDOW;
        ((i / 64) as usize, 1 << (i % 64))
    }

    /// Mark `seq` seen; whether it was not before.
    fn mark(&mut self, seq: u32) -> bool {
        let (word, bit) = Self::slot(seq);
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
    }

    /// Forget `seq`.
    fn clear(&mut self, seq: u32) {
        let (word, bit) = Self::slot(seq);
        self.0[word] &= !bit;
    }

    fn clear_all(&mut self) {
        self.0.fill(0);
    }
}

impl SessionInfo {
    /// Whether `seq` is new (and mark it seen): above the highest seen, or
    /// within [`SEEN_WINDOW`] below it and not seen yet. One further below
    /// counts as seen: it is older than any reordering the trees make.
    fn first_time(&mut self, seq: u32) -> bool {
        let Some(top) = self.top else {
            self.top = Some(seq);
            self.window.clear_all();
            return self.window.mark(seq);
        };
        if seq > top {
            // The sequences the top passes over are not seen yet (their
            // slots held ones a window older).
            if seq - top >= SEEN_WINDOW {
                self.window.clear_all();
            } else {
                for s in top + 1..=seq {
                    self.window.clear(s);
                }
            }
            self.top = Some(seq);
            self.window.mark(seq)
        } else if top - seq >= SEEN_WINDOW {
            false
        } else {
            self.window.mark(seq)
        }
    }
}

/// This peer's own session.
#[derive(Clone, Debug, Default)]
struct Source {
    /// Link-state table: rates[u * n + v] kbit/s, delays, when reported.
    rates: Vec<f64>,
    delays: Vec<Duration>,
    reported_at: Vec<Option<Time>>,
    /// The trees and their turns (see [`Schedule`]).
    schedule: Schedule,
    /// The rate each link `u * n + v` had in the last packing, kbit/s:
    /// what its head polices this session to (kept with `pace_to_heads`).
    packed_rates: Vec<f64>,
    /// The source's copy of every head's bucket for this session, refilled
    /// at `packed_rates`.
    mirror: Vec<Bucket>,
    rate_kbps: f64,
    uprime: f64,
    relay_side: u16,
    recv_side: u16,
    media_seq: u32,
    /// When the last media packet left.
    last_send: Option<Time>,
    /// The next packet has waited for company (see
    /// [`CelerityParams::bundle`]).
    held: bool,
    /// The burst credit for application media (see
    /// [`CelerityParams::burst`]), refilled at `1 + police_slack` times
    /// the session's rate.
    credit: Bucket,
    /// The media bytes of the last packet sent.
    last_bytes: f64,
    /// The last packet's gap at the session's rate, whatever burst credit
    /// made of it.
    rate_gap: Duration,
    /// When the application handed over the last packet's (first) unit.
    last_origin: Option<Time>,
    /// When the trees were last packed.
    last_pack: Option<Time>,
    /// Every link's serialisation per byte (`u * n + v`) as its head last
    /// said ([`Control::Serialisations`]), seconds.
    per_byte: Vec<Option<f64>>,
    /// The packet size decided for the session's paths (see
    /// [`CelerityParams::size_target`]); `None` while `media_bytes`
    /// stands.
    packet_bytes: Option<u32>,
    /// When to decide the packet size next (at the first packing from
    /// then on).
    size_at: Option<Time>,
    /// The longest path's serialisation per byte at each packing of the
    /// last [`SIZE_SETTLE`] since the last membership change (see
    /// [`CelerityParams::size_target`]), with when.
    paths: VecDeque<(Time, f64)>,
    /// The last planning's input and answer (see [`Plan`]).
    plan: Option<Plan>,
}

/// One planning of a session: the graph the source saw (members, and each
/// edge's rate in bit/s and delay, as handed to the planner) with the trees
/// and the critical cut packed for it. About one repacking in six on a
/// random seven-member underlay (seed 11) sees exactly the graph the one
/// before it saw (a tail's heartbeat repeats the rates it last sent); the planner
/// is a pure function, so those reuse this answer rather than recompute
/// it (`docs/celerity.md`, "Planner speed").
#[derive(Clone, Debug)]
struct Plan {
    members: Vec<usize>,
    rates: Vec<u64>,
    delays: Vec<Duration>,
    packing: Packing,
    cut: Cut,
}

impl Source {
    /// The bytes in the source's copy of the bucket of link `i`
    /// (`u * n + v`) at `now`, for a session whose largest packet is
    /// `largest` bytes.
    fn mirror_level(&self, i: usize, largest: f64, now: Time) -> f64 {
        let r = self.packed_rates[i];
        bucket_level(self.mirror[i], r, mirror_depth(r, largest), now)
    }
}

/// A Celerity participant.
pub struct CelerityPeer {
    cfg: CelerityConfig,
    /// The conference's price level `s`: sessions' `U′` are weighed as
    /// `U′ / s` (see [`CelerityParams::uprime_target`]).
    price_level: f64,
    n: usize,
    me: usize,
    present: Vec<bool>,
    /// Whether this peer took its links to the join rate on joining a
    /// running conference (see [`CelerityParams::join_rate`]).
    joined_running: bool,
    /// When each member was last heard from, directly or through relayed
    /// data and control (membership).
    heard: Vec<Option<Time>>,
    /// When a packet last arrived directly from each member (the overlay
    /// link's liveness).
    direct: Vec<Option<Time>>,
    /// When each member said goodbye: relayed traffic still in flight must
    /// not bring it back.
    bye_at: Vec<Option<Time>>,
    /// Each neighbour's last [`Control::Reach`] mask.
    reach: Vec<u16>,
    /// The mask this peer last announced, and when.
    sent_reach: (u16, Option<Time>),
    incoming: Vec<Incoming>,
    outgoing: Vec<Outgoing>,
    sessions: Vec<SessionInfo>,
    src: Source,
    timers: [Option<Time>; TIMERS],
    tx: VecDeque<Transmit>,
    events: VecDeque<Event>,
    quick_until: Time,
    /// When the latest quick-start window opened (or an open one was
    /// extended): one opened at or after the start window's end is a
    /// change's (a join, a leave, a link going down or coming back).
    window_opened: Time,
    /// Until when the cautious ramp holds (see
    /// [`CelerityParams::cautious_gain`]): control intervals that start
    /// by then step at the cautious gain.
    cautious_until: Option<Time>,
    /// The end of the quick-start window that opened at the start
    /// ([`CelerityParams::resume`] acts only in later ones).
    start_window_end: Time,
    started: bool,
    closed: bool,
    counters: PeerCounters,
    media: Vec<u8>,
    /// The largest media payload of each session this peer has sent or
    /// relayed, bytes: a head's bucket holds three of those (see
    /// [`bucket_depth`]), whatever the size of the packet at hand.
    largest: [f64; MAX_PARTICIPANTS],
    /// With application media, what the application hands over and gets.
    app: Option<AppMedia>,
    /// The gap after the last media packet sent (its size at the rate
    /// then).
    last_gap: Option<Duration>,
    /// The rate, packet size and frame budget last reported to the
    /// application.
    last_offered: Option<(Rate, u32, u32)>,
    /// Whether the source paces to its heads' buckets
    /// ([`CelerityParams::pace_to_heads`], resolved for the conference's
    /// size).
    pace: bool,
    /// Local loss recovery: the symbol size, the head's repair state per
    /// outgoing link, the tail's decoders per incoming link, and a buffer
    /// for coded packets.
    repair_k: usize,
    repair_tx: Vec<Option<Box<RepairSender>>>,
    repair_rx: Vec<Option<Box<RepairReceiver>>>,
    coded: Vec<u8>,
    /// The instant of this peer's latest data or repair sends and the
    /// bytes (with IP and UDP headers) sent in it so far: what the next
    /// copy in that instant waits behind (see
    /// [`CelerityParams::burst_wait`]).
    burst: (Time, f64),
}

fn micros(t: Time) -> u32 {
    (t.as_nanos() / 1_000) as u32
}

/// How old a data packet sent at `origin_ts_us` (the source's clock) is at
/// `now`. Over real networks the clocks are synchronised only so well
/// (meshcast-net): a packet that seems to come from a little in the future
/// came from a source whose clock runs ahead, and its age counts as zero,
/// not as the 71 minutes the wrapping difference says (which dropped whole
/// sessions as late on loopback, 10-34 µs apart).
fn age_since(now: Time, origin_ts_us: u32) -> Duration {
    let us = (micros(now).wrapping_sub(origin_ts_us) as i32).max(0);
    Duration::from_micros(us as u64)
}

/// When a packet `age` old at `now` was sent (on this peer's clock).
fn sent_at(now: Time, age: Duration) -> Time {
    Time::from_nanos(now.as_nanos().saturating_sub(age.as_nanos()))
}

impl CelerityPeer {
    /// A peer; it starts (greets the others, arms its timers) on the first
    /// call it gets.
    pub fn new(mut cfg: CelerityConfig) -> Result<CelerityPeer, ConfigError> {
        let n = cfg.participants.len();
        if !(2..=MAX_PARTICIPANTS).contains(&n) {
            return Err(ConfigError::Participants(format!(
                "a conference has 2 to {MAX_PARTICIPANTS} participants, not {n}"
            )));
        }
        if cfg.me >= n || cfg.flows.len() != n {
            return Err(ConfigError::Participants(
                "`me` and the flow list must match the participants".into(),
            ));
        }
        let p = &cfg.params;
        for (name, v) in [
            ("beta", p.beta),
            ("delta_kbps", p.delta_kbps),
            ("step", p.step),
            ("quick_start_gain", p.quick_start_gain),
            ("landing_gain", p.landing_gain),
            ("cautious_gain", p.cautious_gain),
            ("steady_gain", p.steady_gain),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ConfigError::Param(format!("{name} must be positive")));
            }
        }
        for (name, v) in [
            ("ceiling_exponent", p.ceiling_exponent),
            ("floor_share", p.floor_share),
            ("join_rate", p.join_rate),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(ConfigError::Param(format!("{name} must be in (0, 1]")));
            }
        }
        if !MEDIA_BYTES.contains(&p.media_bytes) {
            return Err(ConfigError::Param("media_bytes must be 16..=1400".into()));
        }
        if p.media_sizes.iter().any(|b| !MEDIA_BYTES.contains(b)) {
            return Err(ConfigError::Param(
                "media_sizes must each be 16..=1400".into(),
            ));
        }
        // The optional parts of the delay budget.
        for (name, part) in [
            ("queue_ceiling", p.queue_ceiling),
            ("uprime_target", p.uprime_target),
            ("size_target", p.size_target),
        ] {
            if part.is_some_and(|t| t == Duration::ZERO || t >= p.delay_bound) {
                return Err(ConfigError::Param(format!(
                    "{name} must be positive and below the delay bound"
                )));
            }
        }
        if p.control_interval == Duration::ZERO || p.report_interval == Duration::ZERO {
            return Err(ConfigError::Param("intervals must be positive".into()));
        }
        for (name, v) in [
            ("repair_ratio", p.repair_ratio),
            ("ceiling_slack", p.ceiling_slack),
            ("resume", p.resume),
            ("start_resume", p.start_resume),
            ("rebound", p.rebound),
            ("overload_resume", p.overload_resume),
            ("climb_fall", p.climb_fall),
            ("standing_ratio", p.standing_ratio),
            ("police_slack", p.police_slack),
            ("lone_share", p.lone_share),
            ("size_slack", p.size_slack),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::Param(format!("{name} must be in 0..=1")));
            }
        }
        for (name, v) in [
            ("settled_step", p.settled_step),
            ("drift_gain", p.drift_gain),
            ("late_gain", p.late_gain),
            ("late_loss", p.late_loss),
            ("balance", p.balance),
            ("share_guard", p.share_guard),
            ("gain_floor", p.gain_floor),
            ("drain_hold", p.drain_hold),
            ("app_lead", p.app_lead),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ConfigError::Param(format!("{name} must be a number >= 0")));
            }
        }
        if !(p.burst.is_finite() && p.burst >= 1.0) {
            return Err(ConfigError::Param("burst must be a number >= 1".into()));
        }
        if p.bundle_wait >= p.delay_bound {
            return Err(ConfigError::Param(
                "bundle_wait must be below the delay bound".into(),
            ));
        }
        for (name, margin) in [("late_margin", p.late_margin), ("age_margin", p.age_margin)] {
            if margin >= p.delay_bound {
                return Err(ConfigError::Param(format!(
                    "{name} must be below the delay bound"
                )));
            }
        }
        let c0 = p.initial_rate_kbps.max(0.0);
        let incoming = Incoming {
            next_seq: None,
            received: 0,
            lost: 0,
            base: Default::default(),
            dispersion: Dispersion::default(),
            longest: 0,
            long_at: None,
            qsamples: Vec::new(),
            frame_queue: [0.0; MAX_PARTICIPANTS],
            standing: 1.0,
            qdelay: 0.0,
            qtrend: 0.0,
            qslow: 0.0,
            age_sum: 0.0,
            age_n: 0,
            age_slow: 0.0,
            age_base: Default::default(),
            queued_age_sum: 0.0,
            queued_age_slow: 0.0,
            reach_max: 0.0,
            reach_slow: 0.0,
            forecast_late: 0,
            session_packets: [0; MAX_PARTICIPANTS],
            session_bytes: [0; MAX_PARTICIPANTS],
            delivered: [0.0; MAX_PARTICIPANTS],
            session_late: [0; MAX_PARTICIPANTS],
            late_loss: [0.0; MAX_PARTICIPANTS],
            late_queue: [0.0; MAX_PARTICIPANTS],
            late_overload: [false; MAX_PARTICIPANTS],
            late_own: [0.0; MAX_PARTICIPANTS],
            late_hops: [0.0; MAX_PARTICIPANTS],
            late_room: [0.0; MAX_PARTICIPANTS],
            late_fade_queue: [0.0; MAX_PARTICIPANTS],
            overloaded: false,
            overload_bytes: [0; MAX_PARTICIPANTS],
            overload_s: 0.0,
            delivery_slow: 0.0,
            delivery_peak: 0.0,
            climb_ended: false,
            in_window: false,
            calm_s: 0.0,
            calm_before: 0.0,
            rebase_due: false,
            measured_since: None,
            last_q: 0.0,
            path_watch: None,
            path_longer: false,
            path_shorter: false,
            fell_at: [None; 2],
            asked_alone_at: None,
            ask_alone_due: false,
            seen_at: [None; 2],
            rebase: None,
            peak: [0.0; MAX_PARTICIPANTS],
            fell_from: [0.0; MAX_PARTICIPANTS],
            fell_for: [0; MAX_PARTICIPANTS],
            forecast_slow: 0.0,
            ramping: true,
            ramp_end: [0.0; MAX_PARTICIPANTS],
            ramp_stale: false,
            price_scale: 1.0,
            down: false,
            loss: 0.0,
            recovered: 0,
            raw_loss: 0.0,
            told_loss: 0.0,
            told_serial: None,
            rates: [c0; MAX_PARTICIPANTS],
            price: 0.0,
            in_cut: [false; MAX_PARTICIPANTS],
            cut_share: [1.0; MAX_PARTICIPANTS],
            drift: [0.0; MAX_PARTICIPANTS],
            sent_rates: [c0; MAX_PARTICIPANTS],
            sent_at: None,
            full_sent_at: None,
            last_ts: None,
        };
        let outgoing = Outgoing {
            seq: 0,
            rates: [c0; MAX_PARTICIPANTS],
            rtt_min: BaseDelay::default(),
            bucket: [(0.0, Time::ZERO); MAX_PARTICIPANTS],
            reported: [-1.0; MAX_PARTICIPANTS],
            reported_at: [None; MAX_PARTICIPANTS],
            told_delay: [None; MAX_PARTICIPANTS],
            full_report_at: None,
            pending: Vec::new(),
            pending_deadline: None,
            held_requests: Vec::new(),
            lone: None,
            alone_at: None,
            loss: 0.0,
            per_byte: None,
            serials_told: [None; MAX_PARTICIPANTS],
            serials_at: None,
        };
        let me = cfg.me;
        let mut present = vec![false; n];
        present[me] = true;
        let repair_k = repair_symbol_len(n);
        // Packets whose repairs fit a datagram (see `max_media_bytes`).
        cfg.params.media_bytes = cfg.params.media_bytes.min(max_media_bytes(n));
        let pace = cfg.params.pace_to_heads.unwrap_or(n >= PACE_MEMBERS);
        Ok(CelerityPeer {
            pace,
            repair_k,
            repair_tx: (0..n).map(|_| None).collect(),
            repair_rx: (0..n).map(|_| None).collect(),
            coded: Vec::new(),
            burst: (Time::ZERO, 0.0),
            media: vec![0u8; cfg.params.media_bytes as usize],
            largest: [0.0; MAX_PARTICIPANTS],
            app: None,
            last_gap: None,
            last_offered: None,
            n,
            me,
            present,
            heard: vec![None; n],
            joined_running: false,
            direct: vec![None; n],
            bye_at: vec![None; n],
            reach: vec![0; n],
            sent_reach: (0, None),
            incoming: vec![incoming; n],
            outgoing: vec![outgoing; n],
            sessions: vec![SessionInfo::default(); n],
            src: Source {
                rates: vec![0.0; n * n],
                delays: vec![Duration::ZERO; n * n],
                reported_at: vec![None; n * n],
                per_byte: vec![None; n * n],
                packed_rates: vec![0.0; n * n],
                mirror: vec![(0.0, Time::ZERO); n * n],
                schedule: Schedule::new(n, cfg.params.share_guard),
                ..Source::default()
            },
            timers: [None; TIMERS],
            tx: VecDeque::new(),
            events: VecDeque::new(),
            quick_until: Time::ZERO,
            window_opened: Time::ZERO,
            cautious_until: None,
            start_window_end: Time::ZERO,
            started: false,
            closed: false,
            counters: PeerCounters::default(),
            price_level: 1.0,
            cfg,
        })
    }

    /// What the peer counted so far.
    pub fn counters(&self) -> &PeerCounters {
        &self.counters
    }

    /// Carry the application's media (`true`) instead of generating the
    /// session's packets (the default, what the simulator measures). With
    /// application media the session sends exactly the units handed to
    /// [`Endpoint::handle_media`], at most at the session's rate (a unit
    /// waits for the rate; one that waits past the delay bound is
    /// dropped), and every unit of another session that arrives in time
    /// is handed back by [`Endpoint::poll_media`]. The session's rate is
    /// what the overlay offers ([`CelerityPeer::offered_rate`]): an
    /// encoder should follow it. With `probe`, the session sends padding
    /// until the application's first media, so that the rate is known
    /// before its encoder starts; without, a session whose application
    /// sends nothing (a participant that only receives) sends nothing.
    pub fn set_app_media(&mut self, on: bool, probe: bool) {
        self.app = on.then(|| AppMedia {
            started: !probe,
            rates: RateHistory::new(APP_LEAD_MEMORY),
            ..AppMedia::default()
        });
    }

    /// The delay bound the conference's sessions deliver within.
    pub fn delay_bound(&self) -> Duration {
        self.cfg.params.delay_bound
    }

    /// This peer's own session's flow.
    pub fn flow(&self) -> FlowId {
        self.cfg.flows[self.me]
    }

    /// Ask the source of `flow`, a session this peer receives, for a
    /// keyframe: this peer's application lost one of its frames and can
    /// show nothing more until the next keyframe (a picture loss
    /// indication, as RTCP's PLI). The request leaves at once, on the
    /// direct overlay link (or through a relay while it is down); the
    /// source hands it to its application as
    /// [`Event::KeyframeRequested`], and an encoder that honours it makes
    /// its next frame a keyframe. When to ask, and how often, is the
    /// application's choice: the peer sends every request it is given.
    /// False (nothing sent) for this peer's own flow, a flow that is no
    /// session of the conference, or a source that is not present.
    pub fn request_keyframe(&mut self, now: Time, flow: FlowId) -> bool {
        let Some(m) = self.received_source(flow) else {
            return false;
        };
        let c = Control::KeyframeRequest { session: m as u8 };
        self.queue_control(m, now, &c, Duration::ZERO);
        self.counters.keyframe_requests_sent += 1;
        true
    }

    /// Where a receiver's message about `session` from neighbour `u` is for
    /// this peer's application: this peer's own session, where an
    /// application sends it; then the session's flow and the receiver's
    /// node, for the event that hands it over.
    fn for_own_application(
        &self,
        session: u8,
        u: usize,
    ) -> Option<(FlowId, meshcast_core::NodeId)> {
        (usize::from(session) == self.me && self.app.is_some())
            .then(|| (self.cfg.flows[self.me], self.cfg.participants[u].node))
    }

    /// The member whose session `flow` is, where this peer receives it and
    /// can tell its source something now: `None` for this peer's own flow,
    /// a flow that is no session of the conference, a source that is not
    /// present, or a peer that has closed.
    fn received_source(&self, flow: FlowId) -> Option<usize> {
        let m = self.cfg.flows.iter().position(|&f| f == flow)?;
        (m != self.me && self.present[m] && !self.closed).then_some(m)
    }

    /// Send the source of `flow`, a session this peer receives, this
    /// peer's application's report of how it receives the session's
    /// streams: `report`, an RTCP receiver report (RFC 3550 §6.4.2) whose
    /// blocks are about those streams, carried as it is. The source hands
    /// it to its application as [`Event::ReceptionReported`], for the
    /// encoder, which learns its receivers' loss, jitter and round-trip
    /// time from such reports. Unlike a keyframe request it is no news to
    /// act on at once: it rides on a data packet when one comes within
    /// the link-state reports' wait, on the direct overlay link (or through
    /// a relay while it is down), and counts as control sent alone within
    /// [`CelerityParams::lone_share`]. Each report is its own (none
    /// supersedes another still waiting: two applications may report on
    /// one session's streams). How often to report is the application's
    /// choice (an RTP stack reports every few seconds). False (nothing
    /// sent) for this peer's own flow, a flow that is no session of the
    /// conference, a source that is not present, an empty report or one
    /// of more than [`wire::MAX_RECEPTION_REPORT`] bytes.
    pub fn report_reception(&mut self, now: Time, flow: FlowId, report: &[u8]) -> bool {
        let wait = self.ride_waits().report;
        let message = |session, report| Control::ReceptionReport { session, report };
        let sent =
            self.carry_to_source(now, flow, report, wire::MAX_RECEPTION_REPORT, message, wait);
        self.counters.reception_reports_sent += u64::from(sent);
        sent
    }

    /// Queue `message` (`rtcp`, an application's RTCP for the source of
    /// `flow`, carried as it is) for that source within `wait`; false
    /// (nothing sent) where [`CelerityPeer::received_source`] finds no
    /// source to tell, or `rtcp` is empty or longer than `most`.
    fn carry_to_source(
        &mut self,
        now: Time,
        flow: FlowId,
        rtcp: &[u8],
        most: usize,
        message: fn(u8, Vec<u8>) -> Control,
        wait: Duration,
    ) -> bool {
        let Some(m) = self.received_source(flow) else {
            return false;
        };
        if !(1..=most).contains(&rtcp.len()) {
            return false;
        }
        self.queue_control(m, now, &message(m as u8, rtcp.to_vec()), wait);
        true
    }

    /// Send the source of `flow`, a session this peer receives, this
    /// peer's application's request to send again packets of the session's
    /// streams it lost: `request`, an RTCP compound packet whose generic
    /// NACKs (RFC 4585 §6.2.1) are about those streams, carried as it is.
    /// The source hands it to its application as
    /// [`Event::RetransmissionRequested`], for an encoder that keeps its
    /// recent packets and resends them. A retransmission is worth something
    /// only while the receiver's jitter buffer still waits for it, so the
    /// request leaves at once, on the direct overlay link (or through a
    /// relay while it is down), riding on a data packet if one leaves
    /// first; unlike a keyframe request it is held to the budget of
    /// control sent alone ([`CelerityParams::lone_share`]), since a lossy
    /// stretch may bring many of them over a thin link. It is held only
    /// within its life, half the delay bound (100 ms by default): a packet
    /// sent again crosses the overlay once more, so a request that left
    /// later would bring it too late for a receiver that plays within
    /// about the bound, and spend the thin path's rate on it. A request
    /// the budget would hold longer waits for a datagram to the link's
    /// tail (a data packet with room for it, or control that leaves
    /// alone) until its life ends, and is then dropped
    /// ([`PeerCounters::retransmission_requests_expired`]). None
    /// supersedes another. How often to ask is the application's choice.
    /// False (nothing sent) as [`CelerityPeer::report_reception`]: for this
    /// peer's own flow, a flow that is no session of the conference, a
    /// source that is not present, an empty request or one of more than
    /// [`wire::MAX_RETRANSMISSION_REQUEST`] bytes.
    pub fn request_retransmission(&mut self, now: Time, flow: FlowId, request: &[u8]) -> bool {
        let most = wire::MAX_RETRANSMISSION_REQUEST;
        let message = |session, request| Control::RetransmissionRequest { session, request };
        let sent = self.carry_to_source(now, flow, request, most, message, Duration::ZERO);
        self.counters.retransmission_requests_sent += u64::from(sent);
        sent
    }

    /// How late this peer's application follows the rate it is offered
    /// ([`CelerityPeer::offered_rate`]), as measured: the median of its
    /// latest fits, each the delay at which what it handed over in the
    /// last twelve seconds best follows the offer (module
    /// [`super::app_lag`]; within about 150 ms). `None` without
    /// application media, before six seconds of it, and until the offer
    /// has moved enough, and the application followed it closely enough,
    /// to tell. A diagnosis: an encoder that follows 300 ms late or more costs
    /// the conference a good part of its rate (docs/celerity.md, "An
    /// encoder that lags").
    pub fn app_lag(&self) -> Option<Duration> {
        self.app.as_ref().and_then(|a| a.lag.estimate())
    }

    /// The rate this peer's session sends at, bits/s (what an encoder
    /// should produce).
    pub fn offered_rate(&self) -> Rate {
        let offer = self.app.as_ref().and_then(|a| a.offer_kbps);
        Rate::from_kbps_f64(offer.unwrap_or(self.src.rate_kbps))
    }

    /// The longest propagation delay from this peer to a member of the
    /// subtree a data packet still has to reach (`entries`, this peer's
    /// own entry among them; none for a leaf), seconds: this peer's own
    /// links' one-way delays for the first hop, the delays its own
    /// session's link-state reports give below (see
    /// [`CelerityParams::late_forecast`]).
    fn delay_below(&self, entries: &[TreeEntry]) -> f64 {
        let n = self.n;
        let children = |m: usize| {
            entries
                .iter()
                .find(|e| usize::from(e.member) == m)
                .map_or(0, |e| e.children)
        };
        let mut longest = 0.0f64;
        // Depth first, each member at most once (a tree reaches each once;
        // a malformed subtree that names a member twice or loops costs no
        // more): at most `n` entries on the stack, `(member, delay from
        // here)`, no allocation on this per-packet path.
        let mut stack = [(0usize, 0.0f64); MAX_PARTICIPANTS];
        stack[0] = (self.me, 0.0);
        let (mut len, mut seen) = (1, 1u32 << self.me);
        while len > 0 {
            len -= 1;
            let (m, d) = stack[len];
            longest = longest.max(d);
            let kids = children(m);
            for c in 0..n {
                if kids & (1 << c) == 0 || seen & (1 << c) != 0 {
                    continue;
                }
                seen |= 1 << c;
                let hop = if m == self.me {
                    self.outgoing[c].one_way_secs().unwrap_or(0.0)
                } else {
                    self.src.delays[m * n + c].as_secs_f64()
                };
                stack[len] = (c, d + hop);
                len += 1;
            }
        }
        longest
    }

    /// The age past which a data packet's forecast counts as late (see
    /// [`CelerityParams::late_forecast`]).
    fn forecast_limit(&self) -> f64 {
        let p = &self.cfg.params;
        p.delay_bound.as_secs_f64() - p.late_margin.as_secs_f64()
    }

    /// Present members other than this peer.
    fn others(&self) -> Vec<usize> {
        (0..self.n)
            .filter(|&u| u != self.me && self.present[u])
            .collect()
    }

    fn set(&mut self, t: Timer, at: Option<Time>) {
        self.timers[t as usize] = at;
    }

    /// The next media packet goes no later than `due` (sooner if it was
    /// due sooner).
    fn send_by(&mut self, due: Time) {
        let timer = &mut self.timers[Timer::Send as usize];
        *timer = Some(timer.map_or(due, |t| t.min(due)));
    }

    fn start(&mut self, now: Time) {
        if self.started {
            return;
        }
        self.started = true;
        self.src.size_at = Some(now + SIZE_SETTLE);
        self.quick_until = now + self.cfg.params.quick_start;
        self.window_opened = now;
        self.start_window_end = self.quick_until;
        self.set(Timer::Control, Some(now + self.cfg.params.control_interval));
        self.set(Timer::Report, Some(now + self.cfg.params.report_interval));
        self.set(Timer::Liveness, Some(now + Duration::from_millis(500)));
        for v in 0..self.n {
            if v != self.me {
                let hello = Control::Hello { running: false };
                self.queue_control(v, now, &hello, Duration::ZERO);
            }
        }
        self.flush(now, true);
    }

    /// Whether this peer's own start window is over: a member it hears of
    /// from now on joins a running conference (see
    /// [`CelerityParams::join_rate`]).
    fn running(&self, now: Time) -> bool {
        self.started && now >= self.start_window_end
    }

    /// A member joining a running conference: the links with `u` carry
    /// every session at the join rate (at most what they carry now).
    /// Celerity's own trees only.
    fn start_at_join_rate(&mut self, u: usize) {
        if !self.celerity_trees() {
            return;
        }
        let p = &self.cfg.params;
        let c = p.initial_rate_kbps.max(0.0) * p.join_rate;
        for r in self.incoming[u]
            .rates
            .iter_mut()
            .chain(self.outgoing[u].rates.iter_mut())
        {
            *r = r.min(c);
        }
        // The head hears every rate of the link next (the rates it holds
        // may be the initial ones).
        self.incoming[u].full_sent_at = None;
    }

    /// A running member greeted this peer: if that is news within
    /// [`JOIN_NEWS`] of its start, it joined a running conference, and
    /// all its links start at the join rate.
    fn joined_running_conference(&mut self, now: Time) {
        // This peer started `quick_start` before its start window ends.
        let late = now + self.cfg.params.quick_start > self.start_window_end + JOIN_NEWS;
        if self.joined_running || !self.started || self.running(now) || late {
            return;
        }
        self.joined_running = true;
        // The members heard of later start so too (`heard_from`).
        for u in self.others() {
            self.start_at_join_rate(u);
        }
        self.repack_soon(now);
    }

    /// A member joined or left, or a route changed under a link into this
    /// peer: the window it opens here (see
    /// [`CelerityParams::change_quick_start`]).
    fn change_window(&mut self, now: Time) {
        let p = &self.cfg.params;
        let window = if self.running(now) && self.celerity_trees() {
            p.change_quick_start.min(p.quick_start)
        } else {
            p.quick_start
        };
        self.open_window(now, window);
    }

    /// A link went down or came back, or news of one elsewhere: a whole
    /// quick-start window.
    fn link_changed(&mut self, now: Time) {
        self.open_window(now, self.cfg.params.quick_start);
    }

    /// Open a quick-start window of `window` from `now` (or extend the
    /// open one to there) and repack.
    fn open_window(&mut self, now: Time, window: Duration) {
        self.quick_until = self.quick_until.max(now + window);
        self.window_opened = now;
        // The trees will change: decide the packet size again once they
        // have settled, on their paths alone, holding the old one until
        // then.
        self.src.size_at = Some(now + SIZE_SETTLE);
        self.src.paths.clear();
        // Every link starts quick start afresh, at its full pace, and ends
        // it only on news (see `CelerityParams::fresh_exit`).
        self.cautious_until = None;
        for inc in &mut self.incoming {
            inc.ramping = true;
            inc.ramp_end = [0.0; MAX_PARTICIPANTS];
            inc.ramp_stale = self.cfg.params.fresh_exit;
        }
        self.pack(now);
    }

    /// Evidence that member `u` is in the conference: a packet from it
    /// (`direct`) or its data or control relayed by another member.
    fn heard_from(&mut self, u: usize, now: Time, direct: bool) {
        if direct {
            self.direct[u] = Some(now);
            self.bye_at[u] = None;
        } else if self.bye_at[u]
            .is_some_and(|t| now.saturating_since(t) <= self.cfg.params.liveness)
        {
            return;
        }
        self.heard[u] = Some(now);
        if !self.present[u] {
            self.present[u] = true;
            let running = self.running(now);
            if running || self.joined_running {
                self.start_at_join_rate(u);
            }
            // Answer so a newcomer learns of us (and that we are running)
            // at once.
            self.queue_control(u, now, &Control::Hello { running }, Duration::ZERO);
            self.change_window(now);
        }
    }

    fn left(&mut self, u: usize, now: Time) {
        if self.present[u] {
            self.present[u] = false;
            self.heard[u] = None;
            self.direct[u] = None;
            self.reach[u] = 0;
            let c0 = self.cfg.params.initial_rate_kbps.max(0.0);
            // A returning member starts afresh.
            self.incoming[u].rates = [c0; MAX_PARTICIPANTS];
            self.incoming[u].next_seq = None;
            self.outgoing[u].rates = [c0; MAX_PARTICIPANTS];
            self.outgoing[u].rtt_min = BaseDelay::default();
            self.outgoing[u].pending.clear();
            self.outgoing[u].pending_deadline = None;
            self.outgoing[u].held_requests.clear();
            // A returning member hears every rate first (`moved_only`).
            self.incoming[u].full_sent_at = None;
            self.outgoing[u].full_report_at = None;
            // Its link sequence numbers start again, and so does recovery
            // on the links with it.
            self.outgoing[u].loss = 0.0;
            self.incoming[u].raw_loss = 0.0;
            self.incoming[u].told_loss = 0.0;
            // Its paths are measured afresh (it may come back elsewhere).
            self.outgoing[u].per_byte = None;
            self.outgoing[u].serials_told = [None; MAX_PARTICIPANTS];
            self.outgoing[u].serials_at = None;
            self.incoming[u].told_serial = None;
            // Its packets' ages start afresh, on its link and, for its
            // session, on every link.
            self.incoming[u].age_base = Default::default();
            for inc in &mut self.incoming {
                inc.age_base[u] = BaseDelay::default();
            }
            self.repair_tx[u] = None;
            self.repair_rx[u] = None;
            self.sessions[u] = SessionInfo::default();
            for v in 0..self.n {
                self.src.reported_at[u * self.n + v] = None;
                self.src.per_byte[u * self.n + v] = None;
                self.src.per_byte[v * self.n + u] = None;
            }
            self.change_window(now);
        }
    }

    /// Whether the overlay link with `u` carries packets: something arrived
    /// from `u` directly within the liveness period. The same evidence
    /// stands for both directions (a tail keeps sending rate updates to
    /// the head of a live link, at least every [`TAIL_HEARTBEAT`]; a tail
    /// that stops receiving says so with zero rates).
    fn link_up(&self, u: usize, now: Time) -> bool {
        self.direct[u].is_some_and(|t| now.saturating_since(t) <= self.cfg.params.liveness)
    }

    /// Session `m`'s rate on this peer's link to `v` for its trees, kbit/s
    /// (0 while the link is down): `c_{m,e}`, less the share a lossy link
    /// keeps for coded repairs (§5.4, the `recovery` module).
    fn out_rate(&self, v: usize, m: usize, now: Time) -> f64 {
        if self.link_up(v, now) {
            let o = &self.outgoing[v];
            o.rates[m].max(0.0) / (1.0 + recovery::share(o.loss, self.cfg.params.repair_ratio))
        } else {
            0.0
        }
    }

    /// The members this peer hears directly, as a bit mask.
    fn hears(&self, now: Time) -> u16 {
        (0..self.n)
            .filter(|&u| u != self.me && self.present[u] && self.link_up(u, now))
            .fold(0, |m, u| m | 1 << u)
    }

    /// Whether neighbour `u`'s reach, which no longer lists the members in
    /// `lost`, tells of a link between `u` and a member this peer still
    /// hears directly going down (see [`CelerityParams::reach_news`]), and
    /// no quick-start window is open here already: a window's ramp is under
    /// way, and news of the same failure from a second neighbour (or a
    /// peer's own link, which fails the same moment) would restart it on
    /// links that have just landed.
    fn lost_a_link_elsewhere(&self, u: usize, lost: u16, now: Time) -> bool {
        self.cfg.params.reach_news
            && self.open_to_news(now)
            && (0..self.n).any(|v| {
                v != self.me
                    && v != u
                    && lost & (1 << v) != 0
                    && self.present[v]
                    && self.link_up(v, now)
            })
    }

    /// Whether news of a change elsewhere (a neighbour's lost link,
    /// [`CelerityParams::reach_news`]; a route another member read,
    /// [`CelerityParams::route_news`]) opens a window here: on Celerity's
    /// own trees, where no quick-start window is open already.
    fn open_to_news(&self, now: Time) -> bool {
        self.celerity_trees() && now >= self.quick_until
    }

    /// Queue `c` for every member in `hears` (the members this peer hears
    /// directly, [`CelerityPeer::hears`]), each to wait up to `wait` for a
    /// data packet to ride on.
    fn queue_to_heard(&mut self, now: Time, hears: u16, c: &Control, wait: Duration) {
        for v in (0..self.n).filter(|&v| hears & (1 << v) != 0) {
            self.queue_direct(v, now, c, wait);
        }
    }

    /// A neighbour that can carry control to `v` (it hears `v` directly,
    /// and this peer hears it).
    fn relay_for(&self, v: usize, now: Time) -> Option<usize> {
        (0..self.n).find(|&w| {
            w != self.me
                && w != v
                && self.present[w]
                && self.link_up(w, now)
                && self.reach[w] & (1 << v) != 0
        })
    }

    fn link_header(&mut self, v: usize, now: Time) -> LinkHeader {
        let o = &mut self.outgoing[v];
        let h = LinkHeader {
            hop_seq: o.seq,
            hop_ts_us: micros(now),
        };
        o.seq = o.seq.wrapping_add(1);
        h
    }

    /// Queue a control message for member `v`: directly while the link to
    /// `v` is up (or `v` is not known yet, or it is a probe), otherwise
    /// wrapped in a [`Control::Relay`] through a neighbour that hears `v`.
    fn queue_control(&mut self, v: usize, now: Time, c: &Control, wait: Duration) {
        let direct = matches!(c, Control::Hello { .. }) || !self.present[v] || self.link_up(v, now);
        match self.relay_for(v, now).filter(|_| !direct) {
            Some(w) => {
                let relayed = Control::Relay {
                    origin: self.me as u8,
                    dest: v as u8,
                    inner: vec![c.clone()],
                };
                self.queue_direct(w, now, &relayed, wait);
            }
            None => self.queue_direct(v, now, c, wait),
        }
    }

    /// Queue a control message for neighbour `v`, to ride on the next data
    /// packet to `v` or leave on its own within `wait`.
    /// A retransmission request that the budget would hold past its life
    /// waits beside the pending control instead, until a datagram takes it
    /// or its life ends.
    fn queue_direct(&mut self, v: usize, now: Time, c: &Control, wait: Duration) {
        let hold = if urgent(c) {
            Duration::ZERO
        } else {
            wait.max(self.lone_hold(v, now))
        };
        let merge = self.moved_only();
        let life = self.request_life();
        let o = &mut self.outgoing[v];
        if expires(c) && hold > life {
            let mut message = Vec::new();
            wire::emit_control(c, &mut message);
            o.held_requests.push((now + life, message));
        } else {
            wire::queue_superseding(c, &mut o.pending, merge);
            let due = now + hold;
            o.pending_deadline = Some(o.pending_deadline.map_or(due, |d| d.min(due)));
        }
        self.arm_flush();
    }

    /// How long a retransmission request may wait for the budget of
    /// control sent alone: half the delay bound (see
    /// [`CelerityPeer::request_retransmission`]).
    fn request_life(&self) -> Duration {
        Duration::from_nanos(self.cfg.params.delay_bound.as_nanos() / 2)
    }

    /// The rate at which the budget for control sent alone to `v` fills,
    /// bytes per second ([`CelerityParams::lone_share`] of the path's
    /// rate), once the path's serialisation is known; `None` without a
    /// budget.
    fn lone_fill(&self, v: usize) -> Option<f64> {
        let share = self.cfg.params.lone_share;
        let per_byte = self.outgoing[v].per_byte.filter(|&b| b > 0.0)?;
        (share > 0.0).then(|| share / per_byte)
    }

    /// [`CelerityPeer::lone_fill`] where the budget holds messages back:
    /// outside the quick-start windows.
    fn lone_rate(&self, v: usize, now: Time) -> Option<f64> {
        self.lone_fill(v).filter(|_| !self.phase(now).window)
    }

    /// A lone datagram of `bytes` to `v` spends the budget (IP and UDP
    /// headers included), whether or not it was held for it: within the
    /// windows too, so that the budget after them is what was left.
    fn spend_lone(&mut self, v: usize, now: Time, bytes: usize) {
        if let Some(rate) = self.lone_fill(v) {
            let left = self.lone_budget(v, now, rate);
            let cost = (bytes + IP_UDP_OVERHEAD as usize) as f64;
            self.outgoing[v].lone = Some(((left - cost).max(-LONE_DEPTH), now));
        }
    }

    /// The budget for control sent alone to `v` at `now`, bytes, filling
    /// at `rate` from the last lone datagram (full before the first).
    fn lone_budget(&self, v: usize, now: Time, rate: f64) -> f64 {
        self.outgoing[v].lone.map_or(LONE_DEPTH, |(bytes, at)| {
            (bytes + rate * now.saturating_since(at).as_secs_f64()).min(LONE_DEPTH)
        })
    }

    /// How long a message for `v` must wait before it may leave alone:
    /// until the budget holds [`LONE_TYPICAL`] bytes, at most
    /// [`LONE_HOLD_MAX`]; zero while it does, or without a budget.
    fn lone_hold(&self, v: usize, now: Time) -> Duration {
        let Some(rate) = self.lone_rate(v, now) else {
            return Duration::ZERO;
        };
        let short = LONE_TYPICAL - self.lone_budget(v, now, rate);
        if short <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(short / rate).min(LONE_HOLD_MAX)
        }
    }

    fn arm_flush(&mut self) {
        let next = self
            .outgoing
            .iter()
            .flat_map(|o| {
                o.pending_deadline
                    .into_iter()
                    .chain(o.held_requests.first().map(|r| r.0))
            })
            .min();
        self.set(Timer::Flush, next);
    }

    /// Send pending control messages whose deadline passed (all with
    /// `all`) as control packets, with the held retransmission requests;
    /// drop those held past their life.
    fn flush(&mut self, now: Time, all: bool) {
        for v in 0..self.n {
            let o = &mut self.outgoing[v];
            if !all {
                let before = o.held_requests.len();
                o.held_requests.retain(|r| r.0 > now);
                self.counters.retransmission_requests_expired +=
                    (before - o.held_requests.len()) as u64;
            }
            let due = o.pending_deadline.is_some_and(|d| all || d <= now);
            if !due || o.pending.is_empty() {
                continue;
            }
            let link = self.link_header(v, now);
            let o = &mut self.outgoing[v];
            let mut ctl = std::mem::take(&mut o.pending);
            for (_, message) in o.held_requests.drain(..) {
                ctl.extend_from_slice(&message);
            }
            o.pending_deadline = None;
            self.send_alone(v, now, link, &ctl);
        }
        self.arm_flush();
    }

    /// Send the control messages `ctl` (TLV bytes) to `v` as a control
    /// packet alone, with `link` as its link header; it spends the budget
    /// for control sent alone.
    fn send_alone(&mut self, v: usize, now: Time, link: LinkHeader, ctl: &[u8]) {
        let bytes = wire::emit_control_packet(link, ctl);
        self.spend_lone(v, now, bytes.len());
        self.events.push_back(Event::BytesSent {
            media: 0,
            header: 0,
            control: bytes.len() as u32,
            repair: 0,
        });
        self.tx.push_back(Transmit {
            to: self.cfg.participants[v],
            payload: bytes,
        });
    }

    /// A tail `v` asked for a control packet alone ([`Control::AskAlone`],
    /// [`CelerityParams::ask_alone`]): send one at once, holding nothing
    /// else, on a live link, at most once every [`ALONE_GAP`].
    fn answer_alone(&mut self, v: usize, now: Time) {
        let due = heartbeat_due(self.outgoing[v].alone_at, now, ALONE_GAP);
        if !due || !self.present[v] || !self.link_up(v, now) {
            return;
        }
        self.outgoing[v].alone_at = Some(now);
        self.counters.alone_sent += 1;
        let link = self.link_header(v, now);
        let mut ctl = Vec::new();
        wire::emit_control(&Control::Alone, &mut ctl);
        self.send_alone(v, now, link, &ctl);
    }

    /// Rule (10) for every session on the live link `u → me`, from what
    /// the last interval measured, in the interval's `phase` (its window,
    /// the start's or not, and the climb). Returns whether the link's quick
    /// start ended in this interval.
    fn update_rates(&mut self, u: usize, phase: Phase) -> bool {
        let Phase {
            quick,
            window,
            start,
            event,
            resumes,
            climbing,
            interval,
        } = phase;
        let (beta, c0, delta) = {
            let p = &self.cfg.params;
            (p.beta, p.initial_rate_kbps, p.delta_kbps)
        };
        // How this tail weighs the sessions' `U′` (see
        // `CelerityParams::uprime_target`).
        let level = self.price_level;
        let damping = self.cfg.params.damping.as_secs_f64();
        // The delay guard's knee: the queue this link can hold before its
        // data packets, with the link's fixed delay and the margin, would
        // pass the delay bound. The fixed delay is the propagation (half
        // the reverse link's minimum RTT, measured with control packets)
        // plus a data packet's extra serialisation on the path.
        let fixed = self.outgoing[u]
            .one_way_delay()
            .map_or(0.0, |d| d.as_secs_f64())
            + self.incoming[u].serialisation();
        let (knee, lends) = {
            let p = &self.cfg.params;
            let bound = p.delay_bound.as_secs_f64();
            (
                (bound - fixed - p.late_margin.as_secs_f64()).max(0.0),
                // Spare lending (see `CelerityParams::spare`): on a short
                // link (a data packet's serialisation counts: it spends
                // delay budget too).
                p.spare && fixed <= SPARE_PROPAGATION * bound,
            )
        };
        let late_gain = self.cfg.params.late_gain;
        let age_knee =
            self.cfg.params.delay_bound.as_secs_f64() - self.cfg.params.age_margin.as_secs_f64();
        let age_queue = self.cfg.params.age_queue;
        // Celerity's own trees (the baselines keep the paper's loop), and
        // those trees outside the quick-start windows: where the gain floor,
        // late packets as the session's loss and the rebound act.
        let celerity = self.celerity_trees();
        let settled_celerity = celerity && !window;
        // A link that fell within the climb or a window is past the climb
        // until the next window opens a new one (see
        // `CelerityParams::climb_fall` and `CelerityParams::fall_calm`).
        let opens = window && !self.incoming[u].in_window;
        self.incoming[u].in_window = window;
        if opens {
            self.incoming[u].climb_ended = false;
        }
        let climbing = climbing && !self.incoming[u].climb_ended;
        // Whether this interval is in a window or the climb after it, on
        // Celerity's own trees: where the settled step and the drift may act
        // (see `CelerityParams::climb`).
        let climbs = climbing && celerity;
        // κ: `step` within the windows, `settled_step` in the climb after
        // them (see `CelerityParams::settled_step`), `step` again after the
        // climb and on the baselines' trees.
        let step_size = match self.cfg.params.settled_step {
            k if k > 0.0 && !window && climbs => k,
            _ => self.cfg.params.step,
        };
        // Resuming (see `CelerityParams::resume` and
        // `CelerityParams::start_resume`): how far, and at what step.
        let resume = self.resume_fraction(start);
        let resume_gain = if start { START_RESUME_GAIN } else { quick };
        let steady_gain = self.cfg.params.steady_gain;
        let landing = self.cfg.params.landing_gain;
        // The gain floor (see `CelerityParams::gain_floor`), within its
        // part of the link's delay budget.
        let budget = FLOOR_BUDGET * (self.cfg.params.delay_bound.as_secs_f64() - fixed).max(0.0);
        let floor = if settled_celerity {
            let full = self.cfg.params.media_bytes as usize;
            let inc = &self.incoming[u];
            let path = inc.serialisation_of(full);
            let packet_time = if self.cfg.params.floor_dispersion {
                inc.dispersion.time_of(full).map_or(path, |d| path.min(d))
            } else {
                path
            };
            (self.cfg.params.gain_floor * packet_time).min(budget)
        } else {
            0.0
        };
        let floor_share = self.cfg.params.floor_share;
        // The most a session under the floor gains over its cut share (see
        // `CelerityParams::floor_share`).
        let share_cap = FLOOR_SHARE_BUDGET * budget;
        // The drift (see `CelerityParams::drift_gain`): within the climb, on
        // Celerity's own trees.
        let drift_gain = if climbs {
            self.cfg.params.drift_gain
        } else {
            0.0
        };
        let forecast_on = self.cfg.params.late_forecast;
        // The rebound (see `CelerityParams::rebound`): outside the windows,
        // on Celerity's own trees; the fall is forgotten after
        // `REBOUND_HOLD`'s intervals.
        let rebound = if settled_celerity {
            self.cfg.params.rebound
        } else {
            0.0
        };
        let rebound_gain = self.cfg.params.quick_start_gain;
        let (rebound_steady, drain_hold) =
            (self.cfg.params.rebound_steady, self.cfg.params.drain_hold);
        let rebound_hold = (REBOUND_HOLD.as_secs_f64() / interval).round() as u32;
        // Late packets as the session's loss (see
        // `CelerityParams::late_loss`): Celerity's own trees only.
        let late_weight = if settled_celerity {
            self.cfg.params.late_loss
        } else {
            0.0
        };
        let hop_queues = self.hop_queues();
        let (late_release, late_fade, bound) = (
            self.cfg.params.late_release,
            self.cfg.params.late_fade,
            self.cfg.params.delay_bound.as_secs_f64(),
        );
        let (drain_release, rebase) = (self.cfg.params.drain_release, self.cfg.params.rebase);
        let (overload_resume, climb_fall) =
            (self.cfg.params.overload_resume, self.cfg.params.climb_fall);
        let (fall_calm, fall_price) = (
            self.cfg.params.fall_calm.as_secs_f64(),
            self.cfg.params.fall_price,
        );
        let inc = &mut self.incoming[u];
        // Quick start ends on a link once it shows congestion (for every
        // session on it, from the next interval on).
        let ramping = inc.ramping;
        let (rates_before, ramp_end) = (inc.rates, inc.ramp_end);
        let total = inc.received + inc.lost;
        let (raw, loss) = if total > 0 {
            let lost = f64::from(inc.lost);
            let recovered = f64::from(inc.recovered.min(inc.lost));
            (
                lost / f64::from(total),
                (lost - recovered) / f64::from(total),
            )
        } else {
            (0.0, 0.0)
        };
        inc.loss = loss;
        inc.raw_loss += 0.2 * (raw - inc.raw_loss);
        let before = inc.qdelay;
        if !inc.qsamples.is_empty() {
            inc.qdelay = inc.qsamples.iter().sum::<f64>() / inc.qsamples.len() as f64;
        } else {
            // Nothing arrived: whatever queue there was drains.
            inc.qdelay *= 0.5;
        }
        let slope = (inc.qdelay - before) / interval;
        inc.qtrend = 0.5 * inc.qtrend + 0.5 * slope;
        // The trend term damps the loop: a growing queue raises the
        // price before it is long, a draining one lowers it.
        // The delay guard (see `CelerityParams::late_gain`) watches the
        // queue averaged over about a second: the dumbbell's queue swings
        // past its knee for single intervals, and charging those moved its
        // windows; a standing queue that makes packets late stays there.
        inc.qslow += 0.2 * (inc.qdelay - inc.qslow);
        // A fall within the climb (see `CelerityParams::climb_fall`): the
        // link delivers well under what it delivered with no queue.
        let delivery = kbit_per_s(inc.session_bytes.iter().sum(), interval);
        inc.delivery_slow += 0.2 * (delivery - inc.delivery_slow);
        if !inc.overloaded && inc.qslow < knee {
            inc.delivery_peak = inc.delivery_peak.max(inc.delivery_slow);
            inc.calm_s += interval;
        } else if inc.calm_s > 0.0 {
            inc.calm_before = inc.calm_s;
            inc.calm_s = 0.0;
        }
        // Within a window only after the link's quick start, on a link that
        // was calm long enough before (see `CelerityParams::fall_calm`).
        let may_fall = if window {
            fall_calm > 0.0 && !inc.ramping && inc.calm_before >= fall_calm
        } else {
            true
        };
        let fell = climb_fall > 0.0
            && climbing
            && may_fall
            && inc.delivery_slow < climb_fall * inc.delivery_peak;
        // Where the overloads' rules act: after the climb, or on a link
        // that fell within it. Within a window only from the overload a
        // fall finds on (the link is past the climb from then on): what a
        // fall marks besides (the late charges of packets that met a queue
        // at the bound) waits for that overload there (see
        // `CelerityParams::fall_calm`).
        let settled_here = !climbing || (fell && !window);
        // An overload after the loop settled, and the first interval whose
        // packets show it drained (see `CelerityParams::drain_release`,
        // `CelerityParams::rebase` and `CelerityParams::overload_resume`).
        let mut released = false;
        // Each session's rate on the link resumes at least here (kbit/s).
        let mut resume_at = [0.0; MAX_PARTICIPANTS];
        if drain_release || rebase || overload_resume > 0.0 {
            if (settled_here || fell) && inc.qslow >= bound && !inc.overloaded {
                self.counters.climb_falls += u64::from(fell);
                inc.climb_ended |= fell;
                inc.overloaded = true;
                inc.overload_bytes = [0; MAX_PARTICIPANTS];
                inc.overload_s = 0.0;
            }
            if inc.overloaded {
                for (sum, bytes) in inc.overload_bytes.iter_mut().zip(inc.session_bytes) {
                    *sum += bytes;
                }
                inc.overload_s += interval;
            }
            if inc.overloaded && !inc.qsamples.is_empty() && inc.qdelay < knee {
                inc.overloaded = false;
                self.counters.drained_overloads += 1;
                inc.rebase_due = rebase;
                if drain_release {
                    inc.qslow = inc.qdelay;
                    released = true;
                }
                if overload_resume > 0.0 {
                    for (m, at) in resume_at.iter_mut().enumerate() {
                        *at = overload_resume * kbit_per_s(inc.overload_bytes[m], inc.overload_s);
                        // The rebound's fall is judged afresh from the
                        // resumed rate (below, against the recent peak).
                        if *at > 0.0 {
                            inc.fell_from[m] = 0.0;
                        }
                        if inc.late_overload[m] {
                            inc.late_loss[m] = 0.0;
                        }
                    }
                }
            }
        }
        // The age guard (see `CelerityParams::age_margin`), on the same
        // one-second average.
        if inc.age_n > 0 {
            inc.reach_slow += 0.2 * (inc.reach_max - inc.reach_slow);
            inc.age_slow += 0.2 * (inc.age_sum / f64::from(inc.age_n) - inc.age_slow);
            let queued = inc.queued_age_sum / f64::from(inc.age_n);
            inc.queued_age_slow += 0.2 * (queued - inc.queued_age_slow);
            let late = f64::from(inc.forecast_late) / f64::from(inc.age_n);
            inc.forecast_slow += 0.2 * (late - inc.forecast_slow);
            if released {
                // The interval's own figures (see
                // `CelerityParams::drain_release`).
                inc.reach_slow = inc.reach_max;
                inc.age_slow = inc.age_sum / f64::from(inc.age_n);
                inc.queued_age_slow = queued;
                inc.forecast_slow = late;
            }
        } else if released {
            // No data this interval: what a data packet would queue here
            // now is the link's own queue, and none is forecast late.
            inc.queued_age_slow = inc.qdelay;
            inc.forecast_slow = 0.0;
        } else if hop_queues {
            // No data: the queued age a packet would bring now is unknown
            // above the link and the link's own queue on it, which the
            // control packets still measure (see
            // `CelerityParams::hop_queues`).
            inc.queued_age_slow += 0.2 * (inc.qslow - inc.queued_age_slow);
        }
        // Late packets as the session's loss, on the same one-second
        // average. An overload's charge fades while the session sends
        // nothing over the link and the queue is back under the bound (see
        // `CelerityParams::late_release`), and one the link's own queue
        // made while that queue is under the one at which its packets
        // would have come in time (see `CelerityParams::late_fade`).
        let queue = inc.qdelay.max(inc.qslow);
        for m in 0..MAX_PARTICIPANTS {
            if inc.session_packets[m] > 0 {
                let late = f64::from(inc.session_late[m]) / f64::from(inc.session_packets[m]);
                inc.late_loss[m] += 0.2 * (late - inc.late_loss[m]);
                if inc.session_late[m] > 0 {
                    inc.late_overload[m] = settled_here && inc.late_queue[m] >= bound;
                    let own = inc.late_own[m] >= LATE_FADE_OWN * inc.late_hops[m];
                    inc.late_fade_queue[m] = if own {
                        inc.late_room[m] / f64::from(inc.session_late[m])
                    } else {
                        0.0
                    };
                }
            } else if late_release && inc.late_overload[m] && queue < bound {
                inc.late_loss[m] -= 0.2 * inc.late_loss[m];
            } else if late_fade && !window && queue < inc.late_fade_queue[m] {
                inc.late_loss[m] -= LATE_FADE_STEP * inc.late_loss[m];
            }
        }
        // The late forecast (see `CelerityParams::late_forecast`): at most
        // the link's own queue, outside the windows.
        let forecast = if forecast_on && !window {
            inc.forecast_slow.min(inc.qslow)
        } else {
            0.0
        };
        // The age guard's excess, at most the queued age (see
        // `CelerityParams::age_queue`).
        let age_excess = if age_queue {
            (inc.age_slow - age_knee).min(inc.queued_age_slow)
        } else {
            inc.age_slow - age_knee
        };
        // The delay and age guards' own charge, without the late forecast.
        let guards = late_gain * (inc.qslow - knee).max(age_excess);
        let guarded = guards > 0.0;
        let guard = guards.max(forecast).max(0.0);
        // The queue's part of the price (the paper's, with its trend); the
        // guards come on top, unscaled (see `CelerityParams::queue_ceiling`).
        // The standing weight (see `CelerityParams::standing_ratio`),
        // measured in every interval, charged outside the windows and, with
        // the price scale below, on a link that fell within one (for the
        // rest of it: see `CelerityParams::fall_price`).
        let fell_here = fall_price && window && inc.climb_ended;
        let ratio = self.cfg.params.standing_ratio;
        if ratio > 0.0 && inc.qdelay > 0.0 && !inc.qsamples.is_empty() {
            // The nearest rank to a quarter of the way up.
            let k = ((inc.qsamples.len() - 1) as f64 * 0.25).round() as usize;
            let (_, &mut p25, _) = inc.qsamples.select_nth_unstable_by(k, f64::total_cmp);
            let w = (p25 / (ratio * inc.qdelay)).clamp(0.0, 1.0);
            inc.standing += 0.5 * (w - inc.standing);
        }
        let standing = if ratio > 0.0 && (!window || fell_here) {
            inc.standing
        } else {
            1.0
        };
        let queue_price = inc.loss + standing * (inc.qdelay + damping * inc.qtrend).max(0.0);
        let mut terms = [(0.0, 0.0); MAX_PARTICIPANTS];
        // The known sessions whose cut crosses the link with their `U′`
        // under the floor, and their own `U′` (see `floor_order`).
        let mut floored = [false; MAX_PARTICIPANTS];
        let mut own_uprime = [0.0; MAX_PARTICIPANTS];
        for m in (0..self.n).filter(|&m| m != self.me && self.present[m]) {
            let s = &self.sessions[m];
            terms[m] = if s.known {
                let crosses = meshcast_plan::packing::crosses(
                    m,
                    u,
                    self.me,
                    |i| s.relay_side & (1 << i) != 0,
                    |i| s.recv_side & (1 << i) != 0,
                    self.cfg.model == Model::Star,
                );
                let weighed = s.uprime / level;
                let uprime = weighed.max(floor);
                // The floor's cut share (see `CelerityParams::floor_share`).
                let share = &mut inc.cut_share[m];
                *share = if window {
                    1.0
                } else {
                    *share + CUT_SHARE_GAIN * (f64::from(u8::from(crosses)) - *share)
                };
                floored[m] = crosses && weighed < floor;
                own_uprime[m] = weighed;
                // Both terms are at least the floor, which is then `uprime`.
                let gain = if weighed < floor {
                    (floor / share.max(floor_share)).min(share_cap)
                } else {
                    uprime
                };
                (if crosses { gain } else { 0.0 }, uprime)
            } else {
                // Before the source has said anything: let its direct
                // link grow.
                let u0 = beta / (c0 + delta) / level;
                (if u == m { u0 } else { 0.0 }, u0)
            };
        }
        if self.cfg.params.floor_share_lift {
            lift_floor(
                &mut terms,
                &own_uprime,
                &floored,
                &inc.cut_share,
                floor,
                floor_share,
                share_cap,
            );
        }
        let rivals = self.cfg.params.floor_rivals.then_some(&inc.cut_share[..]);
        let lift = self.cfg.params.rival_share.then_some(floor_share);
        floor_order(&mut terms, &own_uprime, &floored, rivals, lift);
        // The price is the delay price scaled so that the queue where it
        // meets the largest U′ on this link grows only as U′^(1−e) past
        // `queue_ceiling`: with the paper's plain price a link's standing
        // queue is U′ seconds, and slow sessions (U′ = β/(R + δ) grows as
        // R falls) queued past the delay bound, where every packet came
        // late. Not in the start's window (see
        // `CelerityParams::queue_ceiling`).
        // At most `ceiling_slack` of the slack its packets have left (see
        // `CelerityParams::ceiling_slack`).
        let slack_share = self.cfg.params.ceiling_slack;
        let ceiling = self.cfg.params.queue_ceiling.map(|c| {
            let c = c.as_secs_f64();
            if slack_share > 0.0 {
                let slack = self.cfg.params.delay_bound.as_secs_f64() - inc.reach_slow;
                c.min((slack_share * slack).max(SLACK_CEILING_MIN))
            } else {
                c
            }
        });
        let exponent = self.cfg.params.ceiling_exponent;
        // Known sessions only: an unknown one's placeholder gain (which
        // lets a newcomer's direct link grow) is not a `U′`.
        let top = (0..self.n)
            .filter(|&m| self.sessions[m].known)
            .map(|m| terms[m].0)
            .fold(0.0, f64::max);
        // Not in the start's window, nor in those of later changes (but on
        // the baselines' trees, with `scale_in_windows` and on a link that
        // fell within the window).
        let held = event && celerity && !self.cfg.params.scale_in_windows;
        let scales = !(start || held) || fell_here;
        // Smoothed over about two seconds: the scale follows the
        // sessions' rates, not the ripple of one interval (a dip of one
        // session's rate would otherwise raise every session's price at
        // once and deepen the dip).
        let target = match ceiling {
            Some(c) if scales => (top / c).max(1.0).powf(exponent),
            _ => 1.0,
        };
        inc.price_scale += 0.1 * (target - inc.price_scale);
        let k = inc.price_scale;
        // The mean gain (`U′`) of the known sessions whose cut crosses the
        // link: the steady gain acts on their common motion, the price
        // against it (see `CelerityParams::steady_gain`).
        let (sum, count) = (0..self.n)
            .filter(|&m| self.sessions[m].known && terms[m].0 > 0.0)
            .fold((0.0, 0u32), |(s, n), m| (s + terms[m].0, n + 1));
        let mean_gain = if count > 0 {
            sum / f64::from(count)
        } else {
            0.0
        };
        let price = k * queue_price + guard;
        inc.price = price;
        inc.in_cut = [false; MAX_PARTICIPANTS];
        // Quick start ends in this interval once the queue (with the loss)
        // reaches half the `U′` of a session whose cut crosses the link;
        // in the start's window those sessions land in it (see
        // `CelerityParams::landing_gain`), and every session steps at κ
        // after it. A known session with a rate on the link ends it too
        // when its cut lies elsewhere in the interval: otherwise an
        // overshoot that moves every cut off the link is cut at quick
        // start's step, 30% an interval, for as long as it lasts
        // (docs/celerity.md, "Quick start ends on any session's signal").
        let congestion = k * (inc.loss + inc.qdelay);
        let signals = |(gain, uprime): (f64, f64)| gain > 0.0 && congestion >= 0.5 * uprime;
        let carried = |m: usize| {
            self.sessions[m].known && inc.rates[m] > 0.0 && congestion >= 0.5 * terms[m].1
        };
        let stale = std::mem::take(&mut inc.ramp_stale);
        let ends = ramping
            && !stale
            && (0..self.n)
                .filter(|&m| m != self.me && self.present[m])
                .any(|m| signals(terms[m]) || carried(m));
        if ends {
            inc.ramping = false;
            inc.ramp_end = rates_before;
        }
        // The rebound on a steady queue (see
        // `CelerityParams::rebound_steady`): the link is calm for it while
        // its queue does not grow and nothing is lost.
        let steady = rebound_steady && !window && inc.qtrend <= 0.0 && inc.loss == 0.0;
        let trace = self.cfg.params.trace_control;
        let mut traced = Vec::new();
        for m in (0..self.n).filter(|&m| m != self.me && self.present[m]) {
            let (gain, uprime) = terms[m];
            inc.in_cut[m] = gain > 0.0;
            // Rule (10) with the per-link step α = κ·c/U′: the
            // equilibrium (U′ = price on critical links) is the
            // paper's, and the step scales with the rate so the same
            // κ works at kbit/s and Mbit/s.
            let c = inc.rates[m];
            let arrived = kbit_per_s(inc.session_bytes[m], interval);
            inc.delivered[m] += DELIVERY_SMOOTHING * (arrived - inc.delivered[m]);
            let scale = c.max(c0);
            // The session's own rate R = β/U′ − δ, once it has a U′ (its
            // own, not the gain floor's).
            let real = if self.sessions[m].known {
                self.sessions[m].uprime
            } else {
                uprime * level
            };
            let own = (real > 0.0).then(|| beta / real - delta);
            // Calm for this session: spare lending and resuming act only
            // below this price.
            let calm = price < SPARE_PRICE * uprime;
            // Spare lending: a calm, short link raises a session whose cut
            // does not cross it as far as the session's own rate; outside
            // the windows only if calm on its one-second averages too.
            let settled_calm = window || inc.raw_loss + inc.qslow < SPARE_PRICE * uprime;
            let lend = lends && gain <= 0.0 && calm && settled_calm && own.is_some_and(|r| c < r);
            // The session's own late packets (see
            // `CelerityParams::late_loss`), on top of the link's price.
            let late = late_weight * inc.late_loss[m];
            let rel = if lend {
                1.0
            } else if uprime > 0.0 {
                (gain - price - late) / uprime
            } else if price > 0.0 {
                -1.0
            } else {
                0.0
            };
            // The steady gain (see `CelerityParams::steady_gain`): rule
            // (10)'s gradient is the session's own part (its gain against
            // the link's mean, less its own late packets) plus the common
            // part (the mean against the price); outside the quick-start
            // window the common part of a link near its equilibrium steps
            // gently.
            let known = self.sessions[m].known;
            let (own_part, common) = if known && gain > 0.0 && uprime > 0.0 && !lend {
                (
                    (gain - mean_gain - late) / uprime,
                    (mean_gain - price) / uprime,
                )
            } else {
                (0.0, rel)
            };
            // Within a window the step stays κ, except in the start's once
            // the link's quick start has ended (see
            // `CelerityParams::steady_gain`).
            let unsettled = window && (!start || ramping);
            let settled = if unsettled || calm || common.abs() >= STEADY_BAND {
                1.0
            } else {
                steady_gain
            };
            let mut gradient = own_part + settled * common;
            // The drift (see `CelerityParams::drift_gain`): followed upward
            // outside the windows where neither the delay nor the age guard
            // charges and few of the session's packets come late; cleared
            // within the windows.
            if drift_gain > 0.0 {
                let drift = &mut inc.drift[m];
                if window {
                    *drift = 0.0;
                } else {
                    *drift += DRIFT_SMOOTHING * (gradient - *drift);
                    if !guarded && inc.late_loss[m] < DRIFT_LATE {
                        gradient += drift_gain * (*drift - DRIFT_BAND).clamp(0.0, DRIFT_CAP);
                    }
                }
            }
            // The step's multiplier. The rebound (see
            // `CelerityParams::rebound`; outside the windows only): a calm
            // link raises a session that fell there at quick start's gain.
            // Resuming (see `CelerityParams::resume`): a calm link takes a
            // session back up towards where quick start ended on it.
            // The landing (see `CelerityParams::landing_gain`): in the
            // start's window, the interval that ends the link's quick
            // start, for a session whose own signal ended it.
            // On a steady queue (`steady`, above), at quick steps only up
            // to what the link delivers.
            let delivers = !rebound_steady || c < REBOUND_DELIVERY * inc.delivered[m];
            let q = if rebound > 0.0
                && (calm || steady)
                && delivers
                && inc.late_loss[m] < DRIFT_LATE
                && gradient > 0.0
                && inc.fell_from[m] > 0.0
                && c < rebound * inc.fell_from[m]
            {
                rebound_gain
            } else if ends && start && signals((gain, uprime)) {
                landing
            } else if ramping {
                quick
            } else if resumes && calm && c < resume * ramp_end[m] {
                resume_gain
            } else {
                1.0
            };
            let kappa = step_size * q;
            let mut step = (kappa * scale * gradient).clamp(-0.3 * c, 0.1 * q * scale);
            // No tree uses a link twice, so a session never needs more on
            // a link than its own rate R = β/U′ − δ. A rate far above it
            // is not raised further (as TCP does not grow a window it does
            // not use, RFC 7661): otherwise the link of a session that is
            // held back elsewhere, or whose cut news is late, grows
            // without bound and later has to fall all the way back.
            if step > 0.0 && own.is_some_and(|r| c > 2.0 * r + c0) {
                step = 0.0;
            }
            // Holding while the queue drains (see
            // `CelerityParams::drain_hold`).
            if step < 0.0
                && drain_hold > 0.0
                && !window
                && inc.qdelay >= DRAIN_HOLD_QUEUE
                && inc.delivered[m] > (1.0 + drain_hold) * c
            {
                step = 0.0;
            }
            // Resuming at an overload's delivery (see
            // `CelerityParams::overload_resume`).
            inc.rates[m] = (c + step).max(0.0).max(resume_at[m]);
            // The rebound's memory: the recent peak, the fall from it, and
            // when the fall is made up or forgotten. Cleared within the
            // windows, where resuming acts instead.
            let now_rate = inc.rates[m];
            inc.peak[m] = now_rate.max(REBOUND_PEAK_DECAY * inc.peak[m]);
            if rebound <= 0.0 {
                inc.fell_from[m] = 0.0;
            } else {
                if now_rate < REBOUND_FALL * inc.peak[m]
                    && inc.fell_from[m] < inc.peak[m]
                    && own.is_some_and(|r| inc.peak[m] >= REBOUND_SHARE * r)
                {
                    inc.fell_from[m] = inc.peak[m];
                    inc.fell_for[m] = 0;
                }
                if inc.fell_from[m] > 0.0 {
                    inc.fell_for[m] += 1;
                    if now_rate >= rebound * inc.fell_from[m] || inc.fell_for[m] > rebound_hold {
                        inc.fell_from[m] = 0.0;
                    }
                }
            }
            if trace {
                traced.push(LinkControl {
                    head: self.cfg.participants[u].node,
                    flow: self.cfg.flows[m],
                    rate_kbps: inc.rates[m],
                    in_cut: gain > 0.0,
                    gain,
                    uprime,
                    price,
                    queue: inc.qdelay,
                    guard,
                    loss: inc.loss,
                    late_loss: late,
                    standing,
                    cut_share: inc.cut_share[m],
                    floor,
                });
            }
        }
        self.events
            .extend(traced.into_iter().map(Event::LinkControl));
        ends
    }

    /// The balance (see [`CelerityParams::balance`]) over the links into
    /// this peer, after rule (10) has updated them.
    fn balance(&mut self) {
        let step = self.cfg.params.balance;
        if step <= 0.0 {
            return;
        }
        // The shares, and beside them the link each one is on.
        let (mut shares, mut links) = (Vec::new(), Vec::new());
        for u in self.others() {
            let inc = &self.incoming[u];
            if inc.down || inc.price <= 0.0 {
                continue;
            }
            for m in (0..self.n).filter(|&m| m != self.me && self.present[m]) {
                let uprime = self.sessions[m].uprime;
                // Only links whose price is a fair part of the session's
                // U′ (where rule (10) settles it): the price of a link
                // with hardly any queue says nothing about sharing one.
                if self.sessions[m].known
                    && inc.in_cut[m]
                    && uprime > 0.0
                    && inc.price >= 0.3 * uprime
                {
                    shares.push(Share {
                        session: m,
                        price: inc.price,
                        uprime,
                        rate: inc.rates[m],
                    });
                    links.push(u);
                }
            }
        }
        let moves = balance_moves(&shares, step);
        for ((s, u), d) in shares.iter().zip(links).zip(moves) {
            let r = &mut self.incoming[u].rates[s.session];
            *r = (*r + d).max(0.0);
        }
    }

    /// Where the control interval that starts at `now` lies: the
    /// quick-start window (quick start's step multiplier, the balance,
    /// spare lending and resuming act only within it, resuming in the
    /// start's window by `start_resume`, in later ones by `resume`), and
    /// the climb after it.
    fn phase(&self, now: Time) -> Phase {
        let p = &self.cfg.params;
        let window = now < self.quick_until;
        let start = now < self.start_window_end;
        // The cautious ramp (see `CelerityParams::cautious_gain`) slows
        // quick start's step on the links still in it.
        let cautious = self.cautious_until.is_some_and(|t| now <= t);
        Phase {
            quick: match (window, cautious) {
                (true, false) => p.quick_start_gain,
                (true, true) => p.cautious_gain,
                (false, _) => 1.0,
            },
            window,
            start,
            // A window opened at or after the start's end (a join, a leave,
            // a link going down or coming back); the hellos of the start's
            // first seconds extend the start's own window.
            event: window && self.window_opened >= self.start_window_end,
            resumes: window && self.resume_fraction(start) > 0.0,
            climbing: window || now.saturating_since(self.quick_until) < p.climb,
            interval: p.control_interval.as_secs_f64(),
        }
    }

    /// Move the conference's price level one control interval towards the
    /// median session's `U′` at [`CelerityParams::uprime_target`].
    fn level_prices(&mut self) {
        let Some(target) = self.cfg.params.uprime_target else {
            return;
        };
        if !self.celerity_trees() {
            return;
        }
        let mut uprimes: Vec<f64> = (0..self.n)
            .filter(|&m| m != self.me && self.present[m] && self.sessions[m].known)
            .map(|m| self.sessions[m].uprime)
            .chain(std::iter::once(self.src.uprime))
            .filter(|&u| u > 0.0)
            .collect();
        if uprimes.is_empty() {
            return;
        }
        uprimes.sort_by(f64::total_cmp);
        let median = uprimes[uprimes.len() / 2];
        let want = (median / target.as_secs_f64()).clamp(1.0, PRICE_LEVEL_MAX);
        self.price_level *= (want / self.price_level).powf(PRICE_LEVEL_GAIN);
    }

    /// Algorithm 1: update the rates of every link into this peer.
    fn control_tick(&mut self, now: Time) {
        let c0 = self.cfg.params.initial_rate_kbps;
        let phase = self.phase(now);
        // The price level is held, not moved, in the quick-start windows,
        // where the rates are far from any equilibrium.
        if !phase.window {
            self.level_prices();
        }
        // A route that changed under a link (see
        // `CelerityParams::path_changes`): the head's round-trip minimum was
        // the old route's too, and the rates must find new levels.
        let mut routes_changed = false;
        for u in self.others() {
            let inc = &mut self.incoming[u];
            let (longer, shorter) = (
                std::mem::take(&mut inc.path_longer),
                std::mem::take(&mut inc.path_shorter),
            );
            if longer {
                self.outgoing[u].rtt_min = BaseDelay::default();
            }
            self.counters.paths_longer += u64::from(longer);
            self.counters.paths_shorter += u64::from(shorter);
            routes_changed |= longer || shorter;
        }
        if routes_changed {
            self.change_window(now);
            if self.cfg.params.route_news && self.celerity_trees() {
                let hears = self.hears(now);
                let wait = Duration::from_millis(200);
                self.queue_to_heard(now, hears, &Control::RouteChanged, wait);
            }
        }
        let mut links_changed = false;
        // Whether quick start ended on a link in this interval, in the
        // start window (see `CelerityParams::cautious_gain`).
        let mut ended = false;
        for u in self.others() {
            let up = self.link_up(u, now);
            let inc = &mut self.incoming[u];
            links_changed |= up == inc.down;
            if !up {
                // Nothing arrives: the link is down. Its rates are zero
                // (and the head hears so, through a relay if need be)
                // until packets arrive again; then it starts afresh.
                if !inc.down {
                    inc.down = true;
                    inc.next_seq = None;
                    inc.ramping = true;
                    inc.ramp_end = [0.0; MAX_PARTICIPANTS];
                    inc.qtrend = 0.0;
                    inc.qdelay = 0.0;
                    inc.qslow = 0.0;
                    inc.standing = 1.0;
                    inc.age_slow = 0.0;
                    inc.queued_age_slow = 0.0;
                    inc.reach_slow = 0.0;
                    inc.forecast_slow = 0.0;
                    inc.late_loss = [0.0; MAX_PARTICIPANTS];
                    inc.late_overload = [false; MAX_PARTICIPANTS];
                    inc.late_fade_queue = [0.0; MAX_PARTICIPANTS];
                    inc.overloaded = false;
                    inc.rebase_due = false;
                    inc.rebase = None;
                    inc.peak = [0.0; MAX_PARTICIPANTS];
                    inc.fell_from = [0.0; MAX_PARTICIPANTS];
                    inc.delivered = [0.0; MAX_PARTICIPANTS];
                }
                inc.rates = [0.0; MAX_PARTICIPANTS];
            } else {
                if inc.down {
                    inc.down = false;
                    inc.rates = [c0.max(0.0); MAX_PARTICIPANTS];
                }
                ended |= self.update_rates(u, phase) && phase.start;
            }
        }
        // The cautious ramp: Celerity's own trees only.
        if ended && self.celerity_trees() {
            self.cautious_until = Some(now + CAUTIOUS_HOLD);
        }
        // The balance acts while quick start may: after the start and
        // after membership changes, where the split is far from settled.
        if phase.window {
            self.balance();
        }
        let sizes = self.sizes_packets();
        let moved_only = self.moved_only();
        for u in self.others() {
            let inc = &mut self.incoming[u];
            inc.received = 0;
            inc.lost = 0;
            inc.recovered = 0;
            inc.qsamples.clear();
            inc.age_sum = 0.0;
            inc.queued_age_sum = 0.0;
            inc.reach_max = 0.0;
            inc.forecast_late = 0;
            inc.session_packets = [0; MAX_PARTICIPANTS];
            inc.session_bytes = [0; MAX_PARTICIPANTS];
            inc.session_late = [0; MAX_PARTICIPANTS];
            inc.late_queue = [0.0; MAX_PARTICIPANTS];
            inc.late_own = [0.0; MAX_PARTICIPANTS];
            inc.late_hops = [0.0; MAX_PARTICIPANTS];
            inc.late_room = [0.0; MAX_PARTICIPANTS];
            inc.age_n = 0;
            // Tell the head when something moved, and every heartbeat.
            let present = &self.present[..self.n];
            if let Some((rates, stale)) = inc.rates_to_tell(now, self.me, present, moved_only) {
                let (echo_ts_us, hold_us) = inc.last_ts.map_or((0, u32::MAX), |(ts, at)| {
                    (ts, micros(Time::ZERO + now.saturating_since(at)))
                });
                let msg = Control::RateUpdate {
                    echo_ts_us,
                    hold_us,
                    rates,
                };
                // Wait for a data packet to ride on (see `ride_waits`).
                // The head hears the link's loss with the rates, but only
                // while it matters for recovery: when it moved by a
                // quarter, or crossed the level below which no repairs
                // go, and with the heartbeat while above it. Below that
                // level (the dumbbell's links lose 0.1-0.2%) nothing more
                // crosses the bottleneck than without recovery.
                let raw = inc.raw_loss.clamp(0.0, 1.0);
                let loss = if raw >= recovery::MIN_LOSS { raw } else { 0.0 };
                let told = inc.told_loss;
                let tell = self.cfg.params.repair_ratio > 0.0
                    && (loss != told)
                    && (told == 0.0 || loss == 0.0 || (loss - told).abs() > 0.25 * told || stale);
                if tell {
                    inc.told_loss = loss;
                }
                // The serialisation per byte, while sources size packets
                // by it: when it moved by 5% or with its own heartbeat.
                let serial = inc
                    .per_byte()
                    .filter(|_| sizes)
                    .map(serial_units)
                    .filter(|&s| {
                        inc.told_serial.is_none_or(|(told, at)| {
                            serial_moved(s, told)
                                || now.saturating_since(at) >= wire::SERIALISATION_HEARTBEAT
                        })
                    });
                if let Some(s) = serial {
                    inc.told_serial = Some((s, now));
                }
                let waits = self.ride_waits();
                self.queue_control(u, now, &msg, waits.rates);
                if tell {
                    let loss = (loss * 65535.0).round() as u16;
                    let msg = Control::LinkLoss { loss };
                    self.queue_control(u, now, &msg, waits.loss);
                }
                if let Some(per_byte) = serial {
                    let msg = Control::Serialisation { per_byte };
                    self.queue_control(u, now, &msg, waits.rates);
                }
            }
        }
        if links_changed {
            // A link went down or came back: the rates must find new
            // levels, as after a membership change.
            self.link_changed(now);
        }
    }

    /// §5.1: report every session's rates on this peer's links to the
    /// session's source (see [`CelerityPeer::report`]), then repack this
    /// peer's own session.
    fn report_tick(&mut self, now: Time) {
        for m in self.others() {
            self.report(m, now);
            self.report_serialisations(m, now);
        }
        self.pack(now);
        if self.packet_gap() > self.cfg.params.report_interval {
            // Data is too sparse (or absent) to carry the session's U′ and
            // cut to every tail in time: tell them directly. Without this
            // a session held at a trickle by one link keeps the tails of
            // its other links steering by a stale cut.
            let msg = Control::SessionState {
                session: self.me as u8,
                uprime: self.src.uprime as f32,
                relay_side: self.src.relay_side,
                recv_side: self.src.recv_side,
            };
            for v in self.others() {
                self.queue_control(v, now, &msg, Duration::from_millis(40));
            }
        }
    }

    /// Report session `m`'s rates on this peer's links to its source if
    /// one moved by more than [`MOVED`] or the last report is
    /// [`REPORT_HEARTBEAT`] old: every link's, or with
    /// [`CelerityParams::moved_only`] those that moved or whose delay
    /// changed, and every link's with the heartbeat.
    fn report(&mut self, m: usize, now: Time) {
        let heartbeat = |at| heartbeat_due(at, now, REPORT_HEARTBEAT);
        let full = !self.moved_only() || heartbeat(self.outgoing[m].full_report_at);
        let mut links = Vec::new();
        let mut changed = false;
        for v in (0..self.n).filter(|&v| v != self.me && v != m && self.present[v]) {
            let o = &self.outgoing[v];
            let r = self.out_rate(v, m, now);
            let rate_moved = moved(r, o.reported[m]);
            changed |= rate_moved;
            let d = o
                .one_way_delay()
                .map_or(0, |d| (d.as_nanos() / 100_000).min(65_535) as u16);
            if full || rate_moved || o.told_delay[m] != Some(d) {
                links.push((v as u8, (r * 1e3).round() as u32, d));
            }
        }
        // Stale implies full (its time is never after the last report's),
        // and a moved link is always listed: nothing listed is nothing to
        // say.
        let stale = heartbeat(self.outgoing[m].reported_at[m]);
        if links.is_empty() || !(changed || stale) {
            return;
        }
        for &(v, r, d) in &links {
            let o = &mut self.outgoing[usize::from(v)];
            o.reported[m] = f64::from(r) / 1e3;
            o.told_delay[m] = Some(d);
        }
        self.outgoing[m].reported_at[m] = Some(now);
        if full {
            self.outgoing[m].full_report_at = Some(now);
        }
        let msg = Control::LinkState {
            session: m as u8,
            links,
        };
        let wait = self.ride_waits().report;
        self.queue_control(m, now, &msg, wait);
    }

    /// Tell member `m` the serialisation per byte of this peer's links to
    /// the other members ([`Control::Serialisations`], for `m`'s packet
    /// size) when one moved by 5% since `m` was last told or every
    /// [`wire::SERIALISATION_HEARTBEAT`]; nothing while sources do not size
    /// their packets by it.
    fn report_serialisations(&mut self, m: usize, now: Time) {
        if !self.sizes_packets() {
            return;
        }
        let told = &self.outgoing[m];
        let mut links = Vec::new();
        let mut changed = false;
        for v in (0..self.n).filter(|&v| v != self.me && v != m && self.present[v]) {
            if let Some(s) = self.outgoing[v].per_byte.map(serial_units) {
                changed |= told.serials_told[v].is_none_or(|t| serial_moved(s, t));
                links.push((v as u8, s));
            }
        }
        let stale = heartbeat_due(told.serials_at, now, wire::SERIALISATION_HEARTBEAT);
        if links.is_empty() || !(changed || stale) {
            return;
        }
        let o = &mut self.outgoing[m];
        for &(v, s) in &links {
            o.serials_told[usize::from(v)] = Some(s);
        }
        o.serials_at = Some(now);
        let msg = Control::Serialisations { links };
        let wait = self.ride_waits().report;
        self.queue_control(m, now, &msg, wait);
    }

    /// Whether this peer packs Celerity's own trees (deep, or the paper's
    /// 2-hop ones) rather than a baseline's (Simulcast, Mutualcast): the
    /// cautious ramp and the longer ride waits were tuned on Celerity's
    /// figures and leave the baselines as they were.
    fn celerity_trees(&self) -> bool {
        matches!(self.cfg.model, Model::Deep | Model::TwoHop)
    }

    /// Whether rate updates and link-state reports carry only the rates
    /// that moved (see [`CelerityParams::moved_only`]): on Celerity's own
    /// trees only.
    fn moved_only(&self) -> bool {
        self.cfg.params.moved_only && self.celerity_trees()
    }

    /// Whether copies carry the time they queued (see
    /// [`CelerityParams::hop_queues`]): on Celerity's own trees only.
    fn hop_queues(&self) -> bool {
        self.cfg.params.hop_queues && self.celerity_trees()
    }

    /// How far resuming takes a session back, as a fraction of where quick
    /// start ended: [`CelerityParams::start_resume`] in the start's window
    /// (`start`), [`CelerityParams::resume`] in later ones, and 0 off
    /// Celerity's own trees. The Simulcast and
    /// Mutualcast baselines keep rule (10)'s step after their quick start
    /// ends, as the paper's comparison has them; with resuming their
    /// dumbbell's sessions split the bottleneck less evenly (Mutualcast
    /// 109.4–117.2 kbit/s at the default point against 111.7–115.1, and a
    /// worst session of 107.5 against 108.1 over fifteen neighbouring
    /// points; docs/celerity.md, "Resuming at the start").
    fn resume_fraction(&self, start: bool) -> f64 {
        let p = &self.cfg.params;
        match (self.celerity_trees(), start) {
            (false, _) => 0.0,
            (true, true) => p.start_resume,
            (true, false) => p.resume,
        }
    }

    /// Whether the sources size their packets for their paths (see
    /// [`CelerityParams::size_target`]): Celerity's own trees only. The
    /// Simulcast and Mutualcast baselines keep the paper's fixed packets,
    /// and send nothing for it: their trees cross the dumbbell's
    /// bottleneck twice by design (Mutualcast) or keep a standing queue
    /// there that the tails read as serialisation (Simulcast: 48 ms), and
    /// smaller packets' headers cost them 4 kbit/s a session.
    fn sizes_packets(&self) -> bool {
        self.cfg.params.size_target.is_some() && self.celerity_trees()
    }

    /// How long a tail's rate update and link loss and a head's link-state
    /// report wait for a data packet to the same neighbour to ride on
    /// before they leave on their own (a message alone costs a datagram,
    /// 55–80 bytes on the wire, on the very links the rates steer):
    /// - rate updates one control interval (200 ms by default): a newer one
    ///   replaces a waiting one, so the wait sends no older news than the
    ///   next interval's would bring;
    /// - reports half a report interval (150 ms);
    /// - link loss half a control interval (100 ms; what the head sizes its
    ///   repairs by; a whole interval let random-deep.toml's worst session
    ///   lose 31% of its packets, against 18%).
    ///
    /// With 100 ms for rate updates and 40 ms for reports, the dumbbell's
    /// tails A and B sent 2.3 kbit/s of lone control datagrams across E→F
    /// under the cross traffic (B sends C a data packet only every 190 ms
    /// there), 0.6% of what A's and B's sessions had; now 0.3 kbit/s
    /// (docs/celerity.md, "Control waits longer to ride"). Celerity's own
    /// trees only: the Simulcast and Mutualcast baselines keep
    /// [`BASELINE_RIDE_WAITS`], with which Mutualcast's sessions split the
    /// dumbbell more evenly.
    fn ride_waits(&self) -> RideWaits {
        let p = &self.cfg.params;
        let half = |d: Duration| Duration::from_nanos(d.as_nanos() / 2);
        if self.celerity_trees() {
            RideWaits {
                rates: p.control_interval,
                loss: half(p.control_interval),
                report: half(p.report_interval),
            }
        } else {
            BASELINE_RIDE_WAITS
        }
    }

    /// Repack soon (coalescing news that arrives together).
    fn repack_soon(&mut self, now: Time) {
        if self.timers[Timer::Pack as usize].is_none() {
            let soon = now + Duration::from_millis(5);
            let members = self.present.iter().filter(|&&p| p).count();
            let at = match (self.src.last_pack, repack_gap(members)) {
                (Some(t), Some(gap)) => soon.max(t + gap),
                _ => soon,
            };
            self.set(Timer::Pack, Some(at));
        }
    }

    /// Algorithm 2 lines 1–2: pack trees and compute the critical cut.
    fn pack(&mut self, now: Time) {
        self.src.last_pack = Some(now);
        let n = self.n;
        let me = self.me;
        let members: Vec<usize> = (0..n).filter(|&i| self.present[i]).collect();
        let k = members.len();
        let p = &self.cfg.params;
        let mut rates = vec![0u64; k * k];
        let mut delays = vec![Duration::ZERO; k * k];
        for (a, &u) in members.iter().enumerate() {
            for (b, &v) in members.iter().enumerate() {
                if a == b {
                    continue;
                }
                let (r, d) = if u == me {
                    let o = &self.outgoing[v];
                    (
                        self.out_rate(v, me, now),
                        o.one_way_delay().unwrap_or(Duration::ZERO),
                    )
                } else {
                    let i = u * n + v;
                    match self.src.reported_at[i] {
                        Some(t) if now.saturating_since(t) < REPORT_FRESH => {
                            (self.src.rates[i], self.src.delays[i])
                        }
                        _ => (0.0, Duration::ZERO),
                    }
                };
                rates[a * k + b] = (r.max(0.0) * 1e3) as u64;
                delays[a * k + b] = d;
                if self.pace {
                    // The copy of the head's bucket follows the rate the
                    // packing uses; bring it up to date at the old rate
                    // first.
                    let i = u * n + v;
                    let largest = self.largest[self.me].max(f64::from(p.media_bytes));
                    let level = self.src.mirror_level(i, largest, now);
                    self.src.mirror[i] = (level, now);
                    self.src.packed_rates[i] = r.max(0.0);
                }
            }
        }
        let source = members.iter().position(|&m| m == me).unwrap_or(0);
        // Paths up to the whole bound: the delay and age guards price the
        // links whose queues make packets late (a reserve for the queue
        // taken off the bound here cut long-delay conferences off their
        // only paths; see `CelerityParams::queue_ceiling`).
        let plan = match self.src.plan.take() {
            Some(last)
                if last.members == members && last.rates == rates && last.delays == delays =>
            {
                last
            }
            _ => {
                let g = SessionGraph {
                    n: k,
                    source,
                    rates: &rates,
                    delays: &delays,
                    bound: p.delay_bound,
                };
                let (packing, cut) = meshcast_plan::plan(&g, self.cfg.model);
                Plan {
                    members: members.clone(),
                    rates,
                    delays,
                    packing,
                    cut,
                }
            }
        };
        let (packing, cut) = (&plan.packing, &plan.cut);
        // Bits past the conference's members stay clear: a conference of
        // up to eight members then sends one-byte masks.
        let all = ((1u32 << self.n) - 1) as u16;
        let mut relay_side = all;
        let mut recv_side = all;
        for (a, &m) in members.iter().enumerate() {
            if !cut.relay_side[a] {
                relay_side &= !(1 << m);
            }
            if !cut.recv_side[a] {
                recv_side &= !(1 << m);
            }
        }
        self.src.relay_side = relay_side;
        self.src.recv_side = recv_side;
        let trees = packing
            .trees
            .iter()
            .map(|t| {
                let occ = t
                    .tree
                    .occ
                    .iter()
                    .map(|&(m, par)| (members[m], par))
                    .collect();
                (Tree { occ }, t.rate as f64 / 1e3)
            })
            .collect();
        self.src.schedule.set_trees(trees);
        let packed = packing.rate as f64 / 1e3;
        self.src.plan = Some(plan);
        let cap = p.max_rate.map(|r| r.as_kbps_f64());
        self.src.rate_kbps = cap.map_or(packed, |c| packed.min(c));
        let beta = p.beta;
        // An application that cannot use more asks for nothing more.
        self.src.uprime = match cap {
            Some(c) if packed >= 1.2 * c => 0.0,
            _ => beta / (self.src.rate_kbps + p.delta_kbps),
        };
        if self.src.rate_kbps > 0.0 {
            // The next packet is due one gap (at the new rate) after the
            // last; a slower rate's later deadline must not hold back a
            // faster one.
            let gap = match self.app {
                Some(_) => self.last_gap.unwrap_or(Duration::ZERO),
                None => self.packet_gap(),
            };
            let due = self.src.last_send.map_or(now, |t| (t + gap).max(now));
            self.send_by(due);
        }
        self.decide_size(now);
        let lead = self.cfg.params.app_lead;
        if let Some(app) = &mut self.app {
            app.offer_kbps = (lead > 0.0)
                .then(|| app.lead_offer(now, self.src.rate_kbps, lead))
                .flatten();
        }
        if self.app.is_some() {
            let offer = (
                self.offered_rate(),
                self.offered_packet_bytes(),
                self.offered_frame_bytes(),
            );
            if self.last_offered != Some(offer) {
                self.last_offered = Some(offer);
                if let Some(app) = &mut self.app {
                    app.lag.offer(now, offer.0.as_bps() as f64);
                }
                self.events.push_back(Event::RateOffered {
                    flow: self.cfg.flows[self.me],
                    rate: offer.0,
                    packet_bytes: offer.1,
                    frame_bytes: offer.2,
                });
            }
        }
    }

    /// Note the longest path of the trees just packed and, if it is time
    /// to, decide the session's packet size on the median of the last
    /// [`SIZE_SETTLE`]'s (see [`CelerityParams::size_target`]). Packings
    /// whose trees have a link not yet measured (its serialisation, and
    /// with [`CelerityParams::size_slack`] its delay) are left out; with
    /// none measured the decision waits for a later packing.
    fn decide_size(&mut self, now: Time) {
        let (Some(target), Some(at)) = (self.cfg.params.size_target, self.src.size_at) else {
            return;
        };
        if !self.celerity_trees() {
            return;
        }
        let trees = self.src.schedule.trees();
        if let Some(longest) = self.longest_path_per_byte(trees, target.as_secs_f64()) {
            self.src.paths.push_back((now, longest));
        }
        let paths = &mut self.src.paths;
        while paths
            .front()
            .is_some_and(|&(t, _)| now.saturating_since(t) > SIZE_SETTLE)
        {
            paths.pop_front();
        }
        if now < at || paths.is_empty() {
            return;
        }
        let mut longest: Vec<f64> = paths.iter().map(|&(_, l)| l).collect();
        longest.sort_by(f64::total_cmp);
        let longest = longest[longest.len() / 2];
        self.src.size_at = Some(now + SIZE_SETTLE);
        let most = self.cfg.params.media_bytes;
        let fit = if longest > 0.0 {
            (target.as_secs_f64() / longest)
                .floor()
                .min(f64::from(most)) as u32
        } else {
            most
        };
        let size = fit.max(MIN_PACKET_BYTES.min(most));
        let held = self.offered_packet_bytes();
        if (f64::from(size) - f64::from(held)).abs() > SIZE_HYSTERESIS * f64::from(held) {
            self.src.packet_bytes = Some(size);
        }
    }

    /// The serialisation per byte that sizes this peer's session's
    /// packets to `target` seconds, seconds a byte: over `trees` (those
    /// with at least [`SIZE_TREE_SHARE`] of their summed rate), the
    /// largest over the paths from the source to a member of the sum of
    /// what their links' tails measure, with
    /// [`CelerityParams::size_fanout`] each hop's wait behind its sender's
    /// earlier copies too; with [`CelerityParams::size_slack`] a path whose
    /// share of its slack (the delay bound less its propagation) is under
    /// `target` counts as that much slower, `target` over the share (a
    /// path with no slack asks for the smallest packets). `None` while a
    /// link on them has not been measured.
    fn longest_path_per_byte(&self, trees: &[(Tree, f64)], target: f64) -> Option<f64> {
        let per_byte = |u: usize, v: usize| {
            if u == self.me {
                self.outgoing[v].per_byte
            } else {
                self.src.per_byte[u * self.n + v]
            }
        };
        let fanout = self.cfg.params.size_fanout;
        let share = self.cfg.params.size_slack;
        let bound = self.cfg.params.delay_bound.as_secs_f64();
        let hop = |tree: &Tree, i: usize, u: usize, m: usize| {
            let own = per_byte(u, m)?;
            let mut sum = own;
            if fanout {
                for j in copies_before(tree, i) {
                    sum += per_byte(u, tree.occ[j].0)?.min(own);
                }
            }
            // The slack is not read with the share off.
            let delay = if share > 0.0 {
                self.hop_delay(u, m)?
            } else {
                0.0
            };
            Some([sum, delay])
        };
        self.longest_path(trees, hop, |[per_byte, delay]| {
            if share == 0.0 {
                return per_byte;
            }
            // At least a microsecond, so that a path past the bound asks
            // for the smallest packets rather than dividing by nothing.
            let allowed = (share * (bound - delay)).min(target).max(1e-6);
            per_byte * target / allowed
        })
    }

    /// The longest propagation delay from the source to a member over
    /// `trees` (those with at least [`SIZE_TREE_SHARE`] of their summed
    /// rate), seconds: the sum over a path's links of their one-way base
    /// delays ([`CelerityPeer::hop_delay`]). `None` while a link on them
    /// has not been measured.
    fn longest_path_delay(&self, trees: &[(Tree, f64)]) -> Option<f64> {
        let hop = |_: &Tree, _: usize, u: usize, m: usize| Some([self.hop_delay(u, m)?, 0.0]);
        self.longest_path(trees, hop, |[delay, _]| delay)
    }

    /// The one-way base delay of the link `u → m`, seconds, as this peer
    /// measures its own links and the link-state reports give the others;
    /// `None` while not measured.
    fn hop_delay(&self, u: usize, m: usize) -> Option<f64> {
        if u == self.me {
            self.outgoing[m].one_way_secs()
        } else {
            self.src.reported_at[u * self.n + m]?;
            Some(self.src.delays[u * self.n + m].as_secs_f64())
        }
    }

    /// The largest `value` of a path's sums of `hop(tree, i, u, m)` (two
    /// figures a link) over the links `u → m` of a path from the source to
    /// the member at `tree.occ[i]`, over `trees` (those with at least
    /// [`SIZE_TREE_SHARE`] of their summed rate); `None` if `hop` is `None`
    /// for any link of them.
    fn longest_path(
        &self,
        trees: &[(Tree, f64)],
        hop: impl Fn(&Tree, usize, usize, usize) -> Option<[f64; 2]>,
        value: impl Fn([f64; 2]) -> f64,
    ) -> Option<f64> {
        let mut longest = 0.0f64;
        let least = SIZE_TREE_SHARE * trees.iter().map(|&(_, r)| r).sum::<f64>();
        for (tree, _) in trees.iter().filter(|&&(_, r)| r > 0.0 && r >= least) {
            for start in 0..tree.occ.len() {
                let mut sum = [0.0; 2];
                let mut i = start;
                while let (m, Some(p)) = tree.occ[i] {
                    let [a, b] = hop(tree, i, tree.occ[p].0, m)?;
                    sum = [sum[0] + a, sum[1] + b];
                    i = p;
                }
                longest = longest.max(value(sum));
            }
        }
        Some(longest)
    }

    /// The farthest member's slack, seconds: the late forecast's limit
    /// ([`CelerityParams::delay_bound`] less
    /// [`CelerityParams::late_margin`]) less the longest propagation over
    /// this peer's session's trees. What the frame budget sends in, and
    /// how long a unit may wait at the source with
    /// [`CelerityParams::source_slack`]. `None` while the session has no
    /// trees or a link on them has not been measured.
    fn farthest_slack(&self) -> Option<f64> {
        let trees = self.src.schedule.trees();
        if trees.is_empty() {
            return None;
        }
        Some(self.forecast_limit() - self.longest_path_delay(trees)?)
    }

    /// The largest frame, media bytes handed over at once, that this
    /// peer's session can carry to its farthest member within the delay
    /// bound: what the session's rate sends in the bound less the delay
    /// guard's margin ([`CelerityParams::late_margin`], room for the
    /// queues) less the longest propagation over its trees, at least one
    /// packet of [`CelerityPeer::offered_packet_bytes`]. An encoder that
    /// keeps its keyframes within it (x264's VBV buffer, libvpx's
    /// `max-intra-rate`) has them arrive whole where a larger keyframe's
    /// last units come late: its bytes leave the session's bottleneck no
    /// faster than the session's share of it (docs/celerity.md, "The
    /// frame budget"). Before the trees are measured, the longest of this
    /// peer's own links stands for the path.
    pub fn offered_frame_bytes(&self) -> u32 {
        let packet = self.offered_packet_bytes();
        let slack = self.farthest_slack().unwrap_or_else(|| {
            let longest = self
                .others()
                .into_iter()
                .filter_map(|m| self.outgoing[m].one_way_secs())
                .fold(0.0, f64::max);
            self.forecast_limit() - longest
        });
        let bytes = self.src.rate_kbps.max(0.0) * 1e3 / 8.0 * slack.max(0.0);
        (bytes.min(f64::from(u32::MAX)) as u32).max(packet)
    }

    /// The most media bytes a packet of this peer's session should carry
    /// now: `media_bytes`, or the size decided for its paths, less on long
    /// ones (see [`CelerityParams::size_target`]). The built-in source
    /// sends at it; an application carrying its own media should packetise
    /// to it (an RTP payloader's MTU); larger units are still carried.
    pub fn offered_packet_bytes(&self) -> u32 {
        self.src.packet_bytes.unwrap_or(self.cfg.params.media_bytes)
    }

    /// Seconds until the head of `u → v` has room for one more packet of
    /// this peer's session (0 when it has now). This peer's own buckets
    /// are read refilling at the session's rate, without the policing
    /// slack ([`CelerityParams::police_slack`]), so that a paced source
    /// sends to its rates; another head's is the source's copy, which
    /// holds one packet less than the head's so that the head still has
    /// room when queues upstream bunch packets together.
    fn link_wait(&self, u: usize, v: usize, media: f64, now: Time) -> f64 {
        let largest = self.largest[self.me].max(media);
        let (level, rate) = if u == self.me {
            let o = &self.outgoing[v];
            let r = o.rates[self.me];
            (
                bucket_level(o.bucket[self.me], r, bucket_depth(r, largest), now),
                r,
            )
        } else {
            let i = u * self.n + v;
            (
                self.src.mirror_level(i, largest, now),
                self.src.packed_rates[i],
            )
        };
        if level >= media {
            0.0
        } else if rate > 0.0 {
            (media - level) / (rate * 1e3 / 8.0)
        } else {
            f64::INFINITY
        }
    }

    /// How long an application's unit may wait here for the rate: until
    /// it could reach no member in time, its wait and the shortest one-way
    /// delay to a member passing the delay bound. That delay is the
    /// propagation, measured with control packets; data take longer, so
    /// no unit that could still arrive is dropped.
    ///
    /// With [`CelerityParams::source_slack`] (the default), sooner: once
    /// it could reach the farthest member only past the late forecast's
    /// limit, at the earliest after the bundle's wait. The nearer members
    /// might still have had it in time; sent, it would be charged as late
    /// at the farthest.
    fn stale_after(&self) -> Duration {
        let nearest = self
            .others()
            .into_iter()
            .filter_map(|m| self.outgoing[m].one_way_delay())
            .min()
            .unwrap_or(Duration::ZERO);
        let bound = self.cfg.params.delay_bound.as_nanos();
        let stale = Duration::from_nanos(bound.saturating_sub(nearest.as_nanos()));
        if !self.cfg.params.source_slack {
            return stale;
        }
        match self.farthest_slack() {
            Some(slack) => {
                stale.min(Duration::from_secs_f64(slack.max(0.0)).max(self.cfg.params.bundle_wait))
            }
            None => stale,
        }
    }

    /// The size of the built-in source's next packet (see
    /// [`CelerityParams::media_sizes`]).
    fn synthetic_size(&self) -> u32 {
        let sizes = &self.cfg.params.media_sizes;
        let most = self.offered_packet_bytes();
        if sizes.is_empty() {
            most
        } else {
            sizes[self.src.media_seq as usize % sizes.len()].min(most)
        }
    }

    /// The time between two media packets at the session's rate.
    fn packet_gap(&self) -> Duration {
        self.gap_for(f64::from(self.offered_packet_bytes()))
    }

    /// The time a packet of `bytes` of media takes at the session's rate.
    fn gap_for(&self, bytes: f64) -> Duration {
        Duration::from_secs_f64((bytes * 8.0 / (self.src.rate_kbps * 1e3)).min(3600.0))
    }

    /// Send one media packet of this peer's session.
    fn send_tick(&mut self, now: Time, due: Time) {
        let rate = self.src.rate_kbps;
        if rate <= 0.0 || self.src.schedule.trees().is_empty() {
            self.set(Timer::Send, None);
            return;
        }
        // With application media, the unit waiting longest is next. None
        // waiting before the application's first media: padding, which
        // measures the trees and brings the rate up, so that the rate an
        // encoder is offered is known when it starts. None waiting after
        // that leaves the timer off until a unit is handed over.
        let stale_after = if self.app.is_some() {
            self.stale_after()
        } else {
            Duration::ZERO
        };
        let limit = self.offered_packet_bytes() as usize;
        let next_unit = match &mut self.app {
            Some(app) => {
                // An application that exceeds its offered rate keeps the
                // oldest units' wait short (see
                // `CelerityParams::source_excess`, without which `excess`
                // is never set), as long as another unit waits behind them.
                let excess = app.excess;
                let flow = self.cfg.flows[self.me];
                while let Some(&(handed, _)) = app.queue.front() {
                    let waited = now.saturating_since(handed);
                    let stale = waited > stale_after
                        || (excess && app.queue.len() > 1 && waited > EXCESS_WAIT);
                    if !stale {
                        break;
                    }
                    let Some((handed, unit)) = app.queue.pop_front() else {
                        break;
                    };
                    // The session took it from the application and lost
                    // it: sent and dropped, in its flow's figures.
                    self.counters.stale_media += 1;
                    self.events.push_back(Event::FlowSent {
                        flow,
                        payload_bytes: unit.len() as u32,
                    });
                    self.events.push_back(Event::FlowDropped {
                        flow,
                        sent_at: handed,
                        cause: DropCause::Stale,
                    });
                }
                let bundle = self.cfg.params.bundle;
                let waiting = app.queue.len();
                match (app.queue.front(), app.next_packet(limit, bundle)) {
                    (Some((handed, _)), (count, bytes)) => {
                        // A short unit waits a while for company (see
                        // `CelerityParams::bundle`) where the rate would
                        // not fill a packet in that time, and while
                        // nothing that could not join it waits behind it.
                        let wait = self.cfg.params.bundle_wait;
                        let until = *handed + wait;
                        let slow =
                            self.src.rate_kbps * 1e3 / 8.0 * wait.as_secs_f64() < limit as f64;
                        if bundle
                            && 2 * bytes < limit
                            && bytes < BUNDLE_SHORT
                            && slow
                            && count == waiting
                            && now < until
                        {
                            self.src.held = true;
                            self.set(Timer::Send, Some(until));
                            return;
                        }
                        Some((*handed, bytes, count))
                    }
                    (None, _) if !app.started => None,
                    (None, _) => {
                        self.set(Timer::Send, None);
                        return;
                    }
                }
            }
            None => None,
        };
        // With `pace_to_heads`, a packet goes only down a tree whose every
        // head has room for it in its bucket for this session: a packet a
        // head polices away is lost to the whole subtree below it. The
        // trees' rates fit the links', but the smooth round robin below
        // sends a tree's packets in bursts after a repack (a new tree
        // starts with no credit), and with many small trees those bursts
        // overran the three-packet buckets of slow links (on random
        // 8-member underlays 20-30% of the packets died that way). When
        // no tree has room, the packet waits until one has. Without pacing
        // the share guard (see `Schedule`) keeps each link near its share
        // and never waits.
        let padding = self.app.is_some() && next_unit.is_none();
        let media =
            next_unit.map_or_else(|| f64::from(self.synthetic_size()), |(_, n, _)| n as f64);
        // The delay bound counts from when the application handed the unit
        // over (see `AppMedia::queue`); a bundle's from its first unit's.
        let origin = next_unit.map_or(now, |(handed, _, _)| handed);
        let units = next_unit.map_or(1, |(_, _, count)| count);
        let pace = self.pace;
        // Seconds until each tree has room (empty without pacing: every
        // tree may go).
        let wait: Vec<f64> = if pace {
            self.src
                .schedule
                .trees()
                .iter()
                .map(|(t, _)| {
                    t.edges()
                        .map(|(u, v)| self.link_wait(u, v, media, now))
                        .fold(0.0, f64::max)
                })
                .collect()
        } else {
            Vec::new()
        };
        if pace && wait.iter().all(|&w| w > 0.0) {
            let soonest = wait.iter().copied().fold(f64::INFINITY, f64::min);
            let gap = self.packet_gap().as_secs_f64();
            // At least a millisecond (no busy loop), at most a packet gap
            // (the trees may change meanwhile).
            let at = now + Duration::from_secs_f64(soonest.min(gap).max(1e-3));
            self.set(Timer::Send, Some(at));
            return;
        }
        // Smooth weighted round robin over the trees that have room, with
        // the share guard (see `Schedule`).
        let room = |i: usize| wait.get(i).is_none_or(|&w| w <= 0.0);
        // The round robin and the share guard count bytes, in packets of
        // `media_bytes`: with packets of mixed sizes a count of packets
        // would give a tree (and its links) more bytes than its share
        // whenever the sizes fall in step with the turns.
        let weight = media / f64::from(self.cfg.params.media_bytes);
        let best = self.src.schedule.next(room, weight).unwrap_or(0);
        let tree = self.src.schedule.trees()[best].0.clone();
        let largest = self.largest[self.me].max(media);
        for (u, v) in tree.edges().filter(|&(u, _)| pace && u != self.me) {
            let i = u * self.n + v;
            let level = self.src.mirror_level(i, largest, now);
            self.src.mirror[i] = (level - media, now);
        }
        let ahead = !padding && self.sent_ahead(now, origin);
        self.src.last_origin = Some(origin);
        let header = DataHeader {
            session: self.me as u8,
            media_seq: self.src.media_seq,
            origin_ts_us: micros(origin),
            uprime: self.src.uprime as f32,
            relay_side: self.src.relay_side,
            recv_side: self.src.recv_side,
            entries: Vec::new(),
            padding,
            burst_wait_us: 0,
            // What the unit waited here after its origin time (see
            // `CelerityParams::hop_queues`), unless the source prices its
            // wait by its slack (`CelerityParams::source_slack`).
            queued_us: if self.hop_queues() && !self.cfg.params.source_slack {
                u32::try_from(now.saturating_since(origin).as_nanos() / 1000).unwrap_or(u32::MAX)
            } else {
                0
            },
            bundle: units > 1,
            ahead,
        };
        self.src.media_seq = self.src.media_seq.wrapping_add(1);
        let flow = self.cfg.flows[self.me];
        let payload = match &mut self.app {
            Some(app) if !padding && units > 1 => {
                let mut bundle = Vec::with_capacity(media as usize);
                for (_, unit) in app.queue.drain(..units) {
                    wire::push_bundle_unit(&mut bundle, &unit);
                    self.events.push_back(Event::FlowSent {
                        flow,
                        payload_bytes: unit.len() as u32,
                    });
                }
                self.counters.bundles += 1;
                self.counters.bundled_units += units as u64;
                bundle
            }
            Some(app) if !padding => app.queue.pop_front().map(|(_, u)| u).unwrap_or_default(),
            _ => {
                let mut synthetic = std::mem::take(&mut self.media);
                synthetic.resize(media as usize, 0);
                synthetic
            }
        };
        // A bundle reported each of its units above.
        if !padding && units == 1 {
            self.events.push_back(Event::FlowSent {
                flow,
                payload_bytes: payload.len() as u32,
            });
        }
        // In the tree's order: the packet size counts the wait of each
        // copy behind those before it (`copies_before`).
        for child in tree.children(0) {
            let entries = subtree_entries(&tree, child);
            let v = tree.occ[child].0;
            self.send_data(now, v, &header, entries, &payload);
        }
        if self.app.is_none() || padding {
            self.media = payload;
        }
        // A packet that waited for company (see `CelerityParams::bundle`)
        // was due when its first unit came, or when the last packet's gap
        // allowed if that was later: the sender was idle meanwhile, and
        // its units go on the schedule they would have kept singly. Timed
        // from the send instead, a bundle would put off the packet after
        // it by its first unit's gap (docs/celerity.md, "Bundles").
        let due = if std::mem::take(&mut self.src.held) {
            let ready = match (self.src.last_send, self.last_gap) {
                (Some(t), Some(g)) => t + g,
                _ => origin,
            };
            due.min(origin.max(ready))
        } else {
            due
        };
        self.src.last_send = Some(now);
        // A driver may fire the timer late (a real clock's timer
        // granularity, a busy thread): the next packet keeps the schedule,
        // so lateness of up to one gap does not lower the rate (with
        // Tokio's millisecond timers a 300 kbit/s session sent 290 on
        // loopback). The simulator fires timers on time, where this
        // changes nothing.
        let burst = self.burst_divisor(now, media, padding);
        let gap = self.gap_for(media / burst);
        self.last_gap = Some(gap);
        self.src.rate_gap = if burst > 1.0 {
            self.gap_for(media)
        } else {
            gap
        };
        let late = now.saturating_since(due).as_nanos().min(gap.as_nanos());
        self.set(
            Timer::Send,
            Some(now + Duration::from_nanos(gap.as_nanos() - late)),
        );
    }

    /// Whether application media handed over at `origin` and sent at
    /// `now` leaves ahead of the session's rate ([`DataHeader::ahead`]):
    /// with the last packet's units (one frame), on burst credit, sooner
    /// after it than its gap at the rate. Only on Celerity's own trees,
    /// where the tails read the mark (see
    /// [`CelerityParams::ahead_at_frame`]).
    fn sent_ahead(&self, now: Time, origin: Time) -> bool {
        let rate_gap = self.src.rate_gap;
        self.app.is_some()
            && self.celerity_trees()
            && self.src.last_origin == Some(origin)
            && self.last_gap.is_some_and(|g| g < rate_gap)
            && self
                .src
                .last_send
                .is_some_and(|t| now.saturating_since(t) < rate_gap)
    }

    /// How many times faster than the rate the packet after one of
    /// `media` bytes sent at `now` may follow: [`CelerityParams::burst`]
    /// while the burst credit holds another of the session's largest
    /// packets after this one, else 1. Only application media bursts.
    fn burst_divisor(&mut self, now: Time, media: f64, padding: bool) -> f64 {
        self.src.last_bytes = media;
        let burst = self.cfg.params.burst;
        if self.app.is_none() || burst <= 1.0 {
            return 1.0;
        }
        // Padding spends credit too: it is sent at the rate, and the heads
        // count its bytes.
        let level = self.credit_level(now, media) - media;
        self.src.credit = (level, now);
        if !padding && level >= self.largest[self.me].max(media) {
            burst
        } else {
            1.0
        }
    }

    /// The burst credit at `now` (see [`CelerityParams::burst`]), with
    /// `media` the size of the packet about to use it.
    fn credit_level(&self, now: Time, media: f64) -> f64 {
        let rate = self.src.rate_kbps;
        let largest = self.largest[self.me].max(media);
        let refill = rate * (1.0 + self.cfg.params.police_slack);
        bucket_level(self.src.credit, refill, bucket_depth(rate, largest), now)
    }

    /// Whether the next unit of application media may follow the last
    /// packet at the burst rate.
    fn credit_for_burst(&self, now: Time) -> bool {
        self.cfg.params.burst > 1.0 && self.credit_level(now, 0.0) >= self.largest[self.me]
    }

    /// Report a data packet (`header` and its `media`) dropped at `now`
    /// for `cause`: one drop of its session's flow for each of the
    /// application's units it carries ([`wire::media_units`]), as the
    /// source reported each sent, dated from its origin time.
    fn dropped(&mut self, now: Time, header: &DataHeader, media: &[u8], cause: DropCause) {
        let flow = self.cfg.flows[usize::from(header.session)];
        let sent_at = sent_at(now, age_since(now, header.origin_ts_us));
        for _ in 0..wire::media_units(header, media) {
            self.events.push_back(Event::FlowDropped {
                flow,
                sent_at,
                cause,
            });
        }
    }

    /// Forward/send a data packet of `header.session` to `v` within the
    /// session's rate on `me → v`.
    fn send_data(
        &mut self,
        now: Time,
        v: usize,
        header: &DataHeader,
        entries: Vec<TreeEntry>,
        payload: &[u8],
    ) {
        if !self.present[v] {
            return;
        }
        let m = usize::from(header.session);
        if !self.link_up(v, now) {
            self.counters.shaped += 1;
            self.dropped(now, header, payload, DropCause::LinkDown);
            return;
        }
        let media = payload.len() as f64;
        // Three of the session's largest packets, not of this one: a
        // short packet must not cut the bucket down to three short ones
        // and leave the next full packet without tokens.
        let largest = self.largest[m].max(media);
        self.largest[m] = largest;
        let burst_wait_us = self.burst_wait(now);
        let o = &mut self.outgoing[v];
        let rate = o.rates[m] * (1.0 + self.cfg.params.police_slack);
        let depth = bucket_depth(o.rates[m], largest);
        let tokens = bucket_level(o.bucket[m], rate, depth, now);
        if tokens < media {
            o.bucket[m] = (tokens, now);
            self.counters.shaped += 1;
            self.dropped(now, header, payload, DropCause::Policed);
            return;
        }
        o.bucket[m] = (tokens - media, now);
        let mut header = DataHeader {
            entries,
            burst_wait_us,
            ..header.clone()
        };
        fit_datagram(&mut header, payload.len());
        // Control rides along as far as the packet stays within one
        // datagram of a 1500-byte MTU: the messages that fit go, the
        // others wait for the next data packet or leave on their own.
        let room = PIGGYBACK_BYTES.min(wire::control_room(&header, payload.len(), MAX_DATAGRAM));
        let mut ctl = wire::take_fitting(&mut o.pending, room);
        if o.pending.is_empty() {
            o.pending_deadline = None;
        }
        // Held retransmission requests ride too, where they fit.
        let mut left = room.saturating_sub(ctl.len());
        o.held_requests.retain(|(_, message)| {
            let fits = message.len() <= left;
            if fits {
                ctl.extend_from_slice(message);
                left -= message.len();
            }
            !fits
        });
        let link = self.link_header(v, now);
        let hop_seq = link.hop_seq;
        let bytes = wire::emit_data_packet(link, &header, &ctl, payload);
        // Padding is overhead: it counts with the headers.
        let media = if header.padding { 0 } else { payload.len() };
        self.events.push_back(Event::BytesSent {
            media: media as u32,
            header: (bytes.len() - media - ctl.len()) as u32,
            control: ctl.len() as u32,
            repair: 0,
        });
        let wire_len = bytes.len() - ctl.len();
        self.add_to_burst(bytes.len());
        self.tx.push_back(Transmit {
            to: self.cfg.participants[v],
            payload: bytes,
        });
        if !ctl.is_empty() {
            self.arm_flush();
        }
        self.send_repairs(now, v, hop_seq, &header, payload, wire_len);
    }

    /// How long a data copy sent now waits behind the data and repairs
    /// this peer sent before it in the same instant, µs, by the fastest
    /// path per byte its tails report (see [`CelerityParams::burst_wait`]);
    /// 0 off Celerity's own trees, with the rule off, or before any tail
    /// has reported. A new instant starts an empty burst.
    fn burst_wait(&mut self, now: Time) -> u32 {
        if self.burst.0 != now {
            self.burst = (now, 0.0);
        }
        if !(self.cfg.params.burst_wait && self.celerity_trees()) || self.burst.1 == 0.0 {
            return 0;
        }
        let fastest = (0..self.n)
            .filter(|&v| v != self.me && self.present[v])
            .filter_map(|v| self.outgoing[v].per_byte)
            .fold(f64::INFINITY, f64::min);
        if fastest.is_finite() {
            (self.burst.1 * fastest * 1e6)
                .round()
                .min(f64::from(u32::MAX)) as u32
        } else {
            0
        }
    }

    /// A data packet or repair of `bytes` (UDP payload) leaves in the
    /// current instant's burst, which [`CelerityPeer::burst_wait`] opened.
    fn add_to_burst(&mut self, bytes: usize) {
        self.burst.1 += (bytes + IP_UDP_OVERHEAD as usize) as f64;
    }

    /// §5.4: after data packet `hop_seq` to `v`, the repairs that are due
    /// on that link (see the `recovery` module).
    fn send_repairs(
        &mut self,
        now: Time,
        v: usize,
        hop_seq: u16,
        header: &DataHeader,
        payload: &[u8],
        wire_len: usize,
    ) {
        let ratio = self.cfg.params.repair_ratio;
        if ratio <= 0.0 {
            return;
        }
        let o = &self.outgoing[v];
        let link = LinkNow {
            rate_kbps: (0..self.n)
                .filter(|&m| m != v && self.present[m])
                .map(|m| o.rates[m].max(0.0))
                .sum(),
            loss: o.loss,
            repair_ratio: ratio,
        };
        wire::emit_coded_data(header, payload, &mut self.coded);
        let k = self.repair_k;
        let seed = (self.me * MAX_PARTICIPANTS + v) as u64;
        let sender = self.repair_tx[v].get_or_insert_with(|| Box::new(RepairSender::new(k, seed)));
        let repairs = sender.sent(now, hop_seq, &mut self.coded, wire_len, link);
        for symbol in repairs {
            let link = self.link_header(v, now);
            let bytes = wire::emit_repair_packet(link, &symbol);
            self.counters.repairs_sent += 1;
            self.add_to_burst(bytes.len());
            self.events.push_back(Event::BytesSent {
                media: 0,
                header: 0,
                control: 0,
                repair: bytes.len() as u32,
            });
            self.tx.push_back(Transmit {
                to: self.cfg.participants[v],
                payload: bytes,
            });
        }
    }

    /// Data packet `hop_seq` arrived from `u`: with recovery on, give it
    /// to the link's decoders first and deliver whatever that recovers
    /// too.
    fn on_data_packet(
        &mut self,
        u: usize,
        now: Time,
        hop_seq: u16,
        header: DataHeader,
        media: &[u8],
    ) {
        let more = if self.cfg.params.repair_ratio > 0.0 {
            wire::emit_coded_data(&header, media, &mut self.coded);
            let k = self.repair_k;
            let rx = self.repair_rx[u].get_or_insert_with(|| Box::new(RepairReceiver::new(k)));
            rx.source(hop_seq, &mut self.coded)
        } else {
            Vec::new()
        };
        self.on_data(now, header, media);
        self.on_recovered(u, now, more);
    }

    /// Deliver packets recovered (coded form) from `u`'s repairs.
    fn on_recovered(&mut self, u: usize, now: Time, packets: Vec<Vec<u8>>) {
        for coded in packets {
            match wire::parse_coded_data(&coded) {
                Ok((header, media)) => {
                    self.counters.recovered += 1;
                    self.incoming[u].recovered += 1;
                    self.on_data(now, header, media);
                }
                Err(_) => self.counters.bad_repairs += 1,
            }
        }
    }

    /// A repair arrived from `u`.
    fn on_repair(&mut self, u: usize, now: Time, symbol: &[u8]) {
        if self.cfg.params.repair_ratio <= 0.0 {
            return;
        }
        let k = self.repair_k;
        let rx = self.repair_rx[u].get_or_insert_with(|| Box::new(RepairReceiver::new(k)));
        match rx.repair(symbol) {
            Ok(packets) => self.on_recovered(u, now, packets),
            Err(_) => self.counters.bad_repairs += 1,
        }
    }

    fn liveness_tick(&mut self, now: Time) {
        let limit = self.cfg.params.liveness;
        for u in 0..self.n {
            if u == self.me {
                continue;
            }
            if self.present[u] && self.heard[u].is_some_and(|t| now.saturating_since(t) > limit) {
                self.left(u, now);
            }
            if !self.link_up(u, now) && self.outgoing[u].pending.is_empty() {
                // Keep greeting members we do not hear directly: they may
                // start later, or the link between us may come back.
                let hello = Control::Hello {
                    running: self.running(now),
                };
                self.queue_direct(u, now, &hello, Duration::ZERO);
            }
        }
        // Tell the neighbours whom this peer hears, so they can relay
        // control around links that are down.
        let hears = self.hears(now);
        let (sent, at) = self.sent_reach;
        if hears != sent || heartbeat_due(at, now, REACH_HEARTBEAT) {
            self.sent_reach = (hears, Some(now));
            let wait = Duration::from_millis(200);
            self.queue_to_heard(now, hears, &Control::Reach { hears }, wait);
        }
        self.set(Timer::Liveness, Some(now + Duration::from_secs(1)));
    }

    /// Account a packet that arrived over the link from `u`: its hop
    /// sequence number (loss) and one-way delay (queue). `data` is a data
    /// packet's media length (0 for a repair, `None` for control).
    ///
    /// The base delay of data packets is their minimum one-way delay, and
    /// a queue sample is a packet's delay over it, so with packets of
    /// mixed sizes every packet longer than the shortest would count its
    /// extra serialisation as queue (a whole packet time per hop for full
    /// video packets beside short ones). A data packet shorter than the
    /// link's longest is therefore measured as if it were the longest: its
    /// delay gains the link's data-packet serialisation (see
    /// [`Incoming::serialisation`]) in proportion to the bytes it lacks.
    ///
    /// Only the longest packets set the data base unaided. A packet more
    /// than twice as long as any before starts it afresh: what it held was
    /// much shorter packets' delay, which would read every longer packet's
    /// extra serialisation as queue for the base's ten minutes (the first
    /// data packet on a link is as often a short one as a full one). A
    /// packet longer than any before but at most twice as long raises the
    /// base instead by the serialisation of the bytes it adds (the old
    /// minimum normalised to the new longest, as a packet at least half
    /// the longest is): sizes that creep up would otherwise start the base
    /// afresh again and again, each time reading the queue of the moment
    /// as base. Any packet starts it afresh once the base has left its
    /// window: the longest is the longest of the window (a source that
    /// stops its video keeps measuring its audio). A packet under half
    /// the longest, or any shorter one before a control packet has given
    /// the serialisation, is measured against the base but does not lower
    /// it: its normalisation is mostly the estimate, and an estimate too
    /// low (a control base read behind a queue) would lower the base,
    /// which lowers the estimate again. Packets of at least half the
    /// longest still do, so a source of spread sizes (speech) keeps its
    /// base fresh. Once no packet of at least half the longest has come
    /// for [`SHORT_DATA_RESTART`], the base starts afresh at the short
    /// packets' length: the longest's base may have been learnt behind a
    /// queue (a source's first size decision shrinks its packets 20 s
    /// after the start's queues), and nothing shorter would ever lower it.
    /// With one size, as from the simulator's default source before its
    /// size is decided, nothing changes.
    ///
    /// `burst_wait` (seconds; 0 but for data) is the head's estimate of the
    /// packet's wait behind the copies it sent just before (see
    /// [`CelerityParams::burst_wait`]): the queue sample loses it, the
    /// base does not. `sample` says how a data packet's sample counts
    /// with [`CelerityParams::ahead_at_frame`]; the base learns from every
    /// packet all the same. Returns the packet's one-way delay above the
    /// base, seconds, wait included (what it queued on the link: see
    /// [`CelerityParams::hop_queues`]).
    fn measure(
        &mut self,
        u: usize,
        now: Time,
        link: LinkHeader,
        data: Option<usize>,
        burst_wait: f64,
        sample: Sample,
    ) -> f64 {
        let full = data.is_some();
        // Routes that change under the overlay (see `path_changes`), read
        // once this peer's own start window is over: within it the bases
        // are still being found, through the start's queues. Links are
        // timed from their first control packet all the same.
        let path_changes = self.cfg.params.path_changes;
        let read_paths = path_changes && self.running(now);
        let ask_alone = self.cfg.params.ask_alone;
        // Packet pairs are kept only where the floor reads them (see
        // `CelerityParams::floor_dispersion`).
        let pairs = self.cfg.params.floor_dispersion;
        let inc = &mut self.incoming[u];
        // Packets lost just before this one (see `path_changes`).
        let mut gapped = false;
        match inc.next_seq {
            Some(e) => {
                let gap = link.hop_seq.wrapping_sub(e) as i16;
                gapped = gap > 0;
                if gap >= 0 {
                    inc.lost += gap as u32;
                    inc.received += 1;
                    inc.next_seq = Some(link.hop_seq.wrapping_add(1));
                }
            }
            None => {
                inc.received += 1;
                inc.next_seq = Some(link.hop_seq.wrapping_add(1));
            }
        }
        let mut owd = f64::from(micros(now).wrapping_sub(link.hop_ts_us) as i32) / 1e6;
        let mut learn = true;
        if let Some(len) = data.filter(|&len| len > 0) {
            inc.base[1].advance(now);
            let control_known = inc.base[0].base().is_some();
            // Packets under half the longest, and only those, for
            // `SHORT_DATA_RESTART`.
            let short_only = 2 * len < inc.longest
                && inc
                    .long_at
                    .is_some_and(|t| now.saturating_since(t) > SHORT_DATA_RESTART);
            let known = control_known && inc.base[1].base().is_some();
            if len > inc.longest && len <= 2 * inc.longest && known {
                // The base so far is of packets at least half as long:
                // normalised to the new longest, as they would be now.
                let more = inc.serialisation_of(len - inc.longest);
                inc.base[1].raise(more);
                inc.longest = len;
                // A watch's data figures were over the base before.
                inc.rebase = None;
            } else if len > inc.longest || inc.base[1].base().is_none() || short_only {
                // The data base so far is much shorter packets' delay, has
                // left the window with the packets that set it, or is
                // longer packets' that the short ones coming now for
                // `SHORT_DATA_RESTART` cannot lower.
                inc.base[1] = BaseDelay::default();
                inc.longest = len;
                inc.rebase = None;
            }
            // At least half the longest (the longest itself once it has
            // just been raised or started afresh).
            let long = 2 * len >= inc.longest;
            if long {
                inc.long_at = Some(now);
            }
            match (pairs, long) {
                (true, true) => inc.dispersion.note(link.hop_seq, link.hop_ts_us, now, len),
                (true, false) => inc.dispersion.skip(),
                (false, _) => {}
            }
            if len < inc.longest {
                owd += inc.serialisation_of(inc.longest - len);
                learn = long && control_known;
            }
        }
        if path_changes && learn {
            inc.watch_fall(now, full, owd, read_paths, ask_alone);
        }
        let base = &mut inc.base[usize::from(full)];
        // The base is learnt from the packets' real timing; only the
        // sample loses the burst's wait.
        let q = if learn {
            base.sample(now, owd)
        } else {
            base.excess(owd)
        };
        // After an overload has drained, the size classes' least queues
        // (see `CelerityParams::rebase`): data packets of at least half the
        // longest, as the base learns from.
        if std::mem::take(&mut inc.rebase_due) {
            inc.rebase = Some(Rebase::new(now));
        }
        let mut rebased = false;
        if let Some(watch) = &mut inc.rebase {
            if !full || (learn && data.is_some_and(|len| len > 0)) {
                watch.note(full, q);
            }
            if let Some(raise) = watch.verdict(now) {
                inc.rebase = None;
                if raise > 0.0 {
                    inc.base[1].raise(raise);
                    rebased = true;
                }
            }
        }
        let measured = (q - burst_wait).max(0.0);
        let counted = match sample {
            Sample::Plain => measured,
            Sample::FrameStart(m) => {
                inc.frame_queue[m] = measured;
                measured
            }
            Sample::Ahead { session, room } if measured <= room => {
                measured.min(inc.frame_queue[session])
            }
            Sample::Ahead { .. } => measured,
        };
        inc.qsamples.push(counted);
        inc.last_ts = Some((link.hop_ts_us, now));
        if path_changes {
            let step = q - std::mem::replace(&mut inc.last_q, q);
            if read_paths {
                inc.watch_path(now, gapped, full, owd, step);
            }
        }
        self.counters.rebases += u64::from(rebased);
        if std::mem::take(&mut self.incoming[u].ask_alone_due) {
            self.counters.alone_asked += 1;
            self.queue_direct(u, now, &Control::AskAlone, Duration::ZERO);
        }
        q
    }

    fn on_control(&mut self, u: usize, now: Time, c: Control) {
        match c {
            Control::RateUpdate {
                echo_ts_us,
                hold_us,
                rates,
            } => {
                let o = &mut self.outgoing[u];
                let mut changed = 0u32;
                for (m, r) in rates {
                    if let Some(slot) = o.rates.get_mut(usize::from(m)) {
                        *slot = f64::from(r) / 1e3;
                        changed |= 1 << m;
                    }
                }
                if hold_us != u32::MAX {
                    let rtt = micros(now).wrapping_sub(echo_ts_us).wrapping_sub(hold_us);
                    if rtt < 10_000_000 {
                        o.rtt_min.sample(now, f64::from(rtt) / 1e6);
                    }
                }
                // Pass the news on at once: the source's packing is the
                // slow part of the loop.
                for m in 0..self.n {
                    if changed & (1 << m) == 0 || !self.present[m] {
                        continue;
                    }
                    if m == self.me {
                        self.repack_soon(now);
                    } else {
                        self.report(m, now);
                    }
                }
            }
            Control::LinkState { session, links } => {
                if usize::from(session) != self.me {
                    return;
                }
                for (v, r, d) in links {
                    let v = usize::from(v);
                    if v < self.n && v != u {
                        let i = u * self.n + v;
                        self.src.rates[i] = f64::from(r) / 1e3;
                        self.src.delays[i] = Duration::from_micros(u64::from(d) * 100);
                        self.src.reported_at[i] = Some(now);
                    }
                }
                self.repack_soon(now);
            }
            Control::SessionState {
                session,
                uprime,
                relay_side,
                recv_side,
            } => {
                if let Some(s) = self.sessions.get_mut(usize::from(session))
                    && usize::from(session) == u
                {
                    s.known = true;
                    s.uprime = f64::from(uprime);
                    s.relay_side = relay_side;
                    s.recv_side = recv_side;
                }
            }
            Control::Hello { running } => {
                if running {
                    self.joined_running_conference(now);
                }
            }
            Control::Bye => {
                self.bye_at[u] = Some(now);
                self.left(u, now);
            }
            Control::AskAlone => self.answer_alone(u, now),
            // Measured as every control packet is; nothing else to do.
            Control::Alone => {}
            Control::RouteChanged => {
                self.counters.route_news += 1;
                if self.cfg.params.route_news && self.open_to_news(now) {
                    self.change_window(now);
                }
            }
            Control::Reach { hears } => {
                let old = std::mem::replace(&mut self.reach[u], hears);
                if self.lost_a_link_elsewhere(u, old & !hears, now) {
                    self.link_changed(now);
                }
            }
            Control::LinkLoss { loss } => self.outgoing[u].loss = f64::from(loss) / 65535.0,
            Control::Serialisation { per_byte } => {
                self.outgoing[u].per_byte = Some(f64::from(per_byte) * wire::SERIALISATION_UNIT);
            }
            Control::Serialisations { links } => {
                for (v, s) in links {
                    let v = usize::from(v);
                    if v < self.n && v != u {
                        self.src.per_byte[u * self.n + v] =
                            Some(f64::from(s) * wire::SERIALISATION_UNIT);
                    }
                }
            }
            // Only for this peer's own session, from one of its receivers
            // (`u`), and only where an application sends it.
            Control::ReceptionReport { session, report } => {
                if let Some((flow, from)) = self.for_own_application(session, u) {
                    self.counters.reception_reports_received += 1;
                    let e = Event::ReceptionReported { flow, from, report };
                    self.events.push_back(e);
                }
            }
            Control::RetransmissionRequest { session, request } => {
                if let Some((flow, from)) = self.for_own_application(session, u) {
                    self.counters.retransmission_requests_received += 1;
                    let e = Event::RetransmissionRequested {
                        flow,
                        from,
                        request,
                    };
                    self.events.push_back(e);
                }
            }
            Control::KeyframeRequest { session } => {
                if let Some((flow, from)) = self.for_own_application(session, u) {
                    self.counters.keyframe_requests_received += 1;
                    self.events
                        .push_back(Event::KeyframeRequested { flow, from });
                }
            }
            Control::Relay {
                origin,
                dest,
                inner,
            } => self.on_relay(u, now, usize::from(origin), usize::from(dest), inner),
        }
    }

    /// A [`Control::Relay`] from neighbour `u`: deliver it here or carry
    /// it on to its destination (one relay hop).
    fn on_relay(&mut self, u: usize, now: Time, origin: usize, dest: usize, inner: Vec<Control>) {
        if origin >= self.n || dest >= self.n || origin == dest {
            self.counters.malformed += 1;
            return;
        }
        if dest != self.me {
            if origin != u {
                // Relays do not chain.
                self.counters.malformed += 1;
            } else if self.present[dest] && self.link_up(dest, now) {
                let c = Control::Relay {
                    origin: origin as u8,
                    dest: dest as u8,
                    inner,
                };
                self.queue_direct(dest, now, &c, Duration::from_millis(40));
            }
            return;
        }
        if origin == self.me {
            return;
        }
        if !inner.contains(&Control::Bye) {
            self.heard_from(origin, now, false);
        }
        for mut c in inner {
            if let Control::RateUpdate { hold_us, .. } = &mut c {
                // The echo went the long way round: no RTT sample.
                *hold_us = u32::MAX;
            }
            if !matches!(
                c,
                Control::Relay { .. } | Control::Reach { .. } | Control::Hello { .. }
            ) {
                self.on_control(origin, now, c);
            }
        }
    }

    fn on_data(&mut self, now: Time, header: DataHeader, media: &[u8]) {
        let m = usize::from(header.session);
        if m >= self.n || m == self.me {
            return;
        }
        // Relayed data is evidence its source is still in the conference.
        self.heard_from(m, now, false);
        let s = &mut self.sessions[m];
        s.known = true;
        s.uprime = f64::from(header.uprime);
        s.relay_side = header.relay_side;
        s.recv_side = header.recv_side;
        let age = age_since(now, header.origin_ts_us);
        if age > self.cfg.params.delay_bound {
            self.counters.late += 1;
            self.dropped(now, &header, media, DropCause::Late);
            return;
        }
        if !s.first_time(header.media_seq) {
            self.counters.duplicates += 1;
            return;
        }
        if !header.padding {
            let mut deliver = |unit: &[u8]| {
                if let Some(app) = &mut self.app {
                    app.arrived.push_back((m, unit.to_vec()));
                }
                self.events.push_back(Event::FlowReceived {
                    flow: self.cfg.flows[m],
                    payload_bytes: unit.len() as u32,
                    sent_at: sent_at(now, age),
                });
            };
            if header.bundle {
                wire::bundle_units(media).for_each(&mut deliver);
            } else {
                deliver(media);
            }
        }
        let Some(mine) = header
            .entries
            .iter()
            .find(|e| usize::from(e.member) == self.me)
        else {
            return;
        };
        // By member: the packet size counts the wait of each copy behind
        // those before it (`copies_before`).
        let children = mine.children;
        let children: Vec<usize> = (0..self.n)
            .filter(|&c| children & (1 << c) != 0 && c != self.me)
            .collect();
        for c in children {
            let entries = relay_subtree(&header.entries, c);
            self.send_data(now, c, &header, entries, media);
        }
    }
}

/// Leaves the queued time ([`DataHeader::queued_us`]) out of a copy with
/// `media` bytes of media that its byte would take past [`MAX_DATAGRAM`]:
/// an application's unit of [`MAX_APP_MEDIA`] (more than
/// [`max_media_bytes`] offers from nine members on) under the widest
/// subtree and a burst wait. That copy's tail counts only its own link's
/// queue; the datagram is never fragmented for the byte.
fn fit_datagram(header: &mut DataHeader, media: usize) {
    if wire::data_packet_len(header, 0, media) > MAX_DATAGRAM {
        header.queued_us = 0;
    }
}

/// Entries (internal occurrences) of the subtree rooted at occurrence
/// `root` of `tree`.
fn subtree_entries(tree: &Tree, root: usize) -> Vec<TreeEntry> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(o) = stack.pop() {
        let mut mask = 0u16;
        for c in tree.children(o) {
            mask |= 1 << tree.occ[c].0;
            stack.push(c);
        }
        if mask != 0 {
            out.push(TreeEntry {
                member: tree.occ[o].0 as u8,
                children: mask,
            });
        }
    }
    out
}

/// The occurrences of `tree` whose copies their common parent sends
/// before occurrence `child`'s: the source sends its children's copies in
/// the tree's order (`send`), a relay its children's by member
/// (`on_data` walks its entry's mask). [`CelerityParams::size_fanout`]
/// counts the wait behind them; a change to either order must change
/// this too.
fn copies_before(tree: &Tree, child: usize) -> impl Iterator<Item = usize> + '_ {
    let parent = tree.occ[child].1;
    let member = tree.occ[child].0;
    parent
        .into_iter()
        .flat_map(move |p| tree.children(p))
        .filter(move |&j| {
            if parent == Some(0) {
                j < child
            } else {
                tree.occ[j].0 < member
            }
        })
}

/// At a relay: the entries of the subtree below member `c`.
fn relay_subtree(entries: &[TreeEntry], c: usize) -> Vec<TreeEntry> {
    let mut out = Vec::new();
    let mut stack = vec![c];
    while let Some(m) = stack.pop() {
        if out.len() >= MAX_PARTICIPANTS {
            break;
        }
        if let Some(e) = entries.iter().find(|e| usize::from(e.member) == m) {
            if out.iter().any(|x: &TreeEntry| x.member == e.member) {
                continue;
            }
            out.push(*e);
            for i in 0..MAX_PARTICIPANTS {
                if e.children & (1 << i) != 0 {
                    stack.push(i);
                }
            }
        }
    }
    out
}

impl Endpoint for CelerityPeer {
    fn handle_datagram(&mut self, now: Time, from: Addr, payload: &[u8]) {
        self.start(now);
        if self.closed {
            return;
        }
        let Some(u) = self.cfg.participants.iter().position(|&a| a == from) else {
            self.counters.strangers += 1;
            return;
        };
        if u == self.me {
            return;
        }
        let packet = match wire::parse(payload) {
            Ok(p) => p,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        let bye =
            matches!(&packet, Packet::Control { control, .. } if control.contains(&Control::Bye));
        if !bye {
            self.heard_from(u, now, true);
        }
        match packet {
            Packet::Control { link, control } => {
                self.measure(u, now, link, None, 0.0, Sample::Plain);
                for c in control {
                    self.on_control(u, now, c);
                }
            }
            Packet::Data {
                link,
                mut header,
                control,
                media,
            } => {
                let wait = f64::from(header.burst_wait_us) / 1e6;
                let age = age_since(now, header.origin_ts_us).as_secs_f64();
                let (forecast_on, late_loss, age_queue, slack_on) = (
                    self.cfg.params.late_forecast,
                    self.cfg.params.late_loss,
                    self.cfg.params.age_queue,
                    self.cfg.params.ceiling_slack > 0.0,
                );
                let forecast = if forecast_on || late_loss > 0.0 || slack_on {
                    age + self.delay_below(&header.entries)
                } else {
                    age
                };
                let limit = self.forecast_limit();
                let late = forecast_on && forecast > limit;
                // Packets sent ahead (see `CelerityParams::ahead_at_frame`):
                // a frame's first packet sets the queue its frame met; the
                // others count no more than that while their forecast
                // has room for their queue once more.
                let session = usize::from(header.session);
                let sample = match (self.cfg.params.ahead_at_frame, header.ahead) {
                    _ if session >= MAX_PARTICIPANTS => Sample::Plain,
                    (false, _) => Sample::Plain,
                    (true, false) => Sample::FrameStart(session),
                    (true, true) => Sample::Ahead {
                        session,
                        room: limit - forecast,
                    },
                };
                let q = self.measure(u, now, link, Some(media.len()), wait, sample);
                // The hops' queues (see `CelerityParams::hop_queues`): what
                // the copy queued before this link and on it, which a
                // relay passes on.
                let hop_queues = self.hop_queues();
                let hops_queued = f64::from(header.queued_us) / 1e6 + q;
                header.queued_us = if hop_queues {
                    (hops_queued * 1e6).round() as u32
                } else {
                    0
                };
                let bound = self.cfg.params.delay_bound.as_secs_f64();
                let lost = late_loss > 0.0 && forecast > bound;
                let inc = &mut self.incoming[u];
                inc.age_sum += age;
                inc.age_n += 1;
                inc.forecast_late += u32::from(late);
                if session < MAX_PARTICIPANTS {
                    if age_queue || slack_on {
                        let queued = if hop_queues {
                            hops_queued
                        } else {
                            inc.age_base[session].sample(now, age)
                        };
                        if age_queue {
                            inc.queued_age_sum += queued;
                        }
                        // Its age less what it queued, plus the way below.
                        inc.reach_max = inc.reach_max.max(forecast - queued);
                    }
                    inc.session_packets[session] += 1;
                    inc.session_bytes[session] += payload.len() as u64 + u64::from(IP_UDP_OVERHEAD);
                    inc.session_late[session] += u32::from(lost);
                    if lost {
                        inc.late_queue[session] = inc.late_queue[session].max(q);
                        inc.late_own[session] += q;
                        inc.late_hops[session] += hops_queued;
                        inc.late_room[session] += q - (forecast - bound);
                    }
                }
                for c in control {
                    self.on_control(u, now, c);
                }
                self.on_data_packet(u, now, link.hop_seq, header, media);
            }
            Packet::Repair { link, symbol } => {
                self.measure(u, now, link, Some(0), 0.0, Sample::Plain);
                self.on_repair(u, now, symbol);
            }
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.start(now);
        if self.closed {
            return;
        }
        let (control_interval, report_interval) = (
            self.cfg.params.control_interval,
            self.cfg.params.report_interval,
        );
        for t in [
            Timer::Liveness,
            Timer::Control,
            Timer::Report,
            Timer::Send,
            Timer::Flush,
            Timer::Pack,
        ] {
            if self.timers[t as usize].is_none_or(|d| d > now) {
                continue;
            }
            match t {
                Timer::Control => {
                    self.control_tick(now);
                    self.set(t, Some(now + control_interval));
                }
                Timer::Report => {
                    self.report_tick(now);
                    self.set(t, Some(now + report_interval));
                }
                Timer::Send => {
                    let due = self.timers[t as usize].unwrap_or(now);
                    self.send_tick(now, due);
                }
                Timer::Flush => self.flush(now, false),
                Timer::Liveness => self.liveness_tick(now),
                Timer::Pack => {
                    self.set(t, None);
                    self.pack(now);
                }
            }
        }
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit> {
        self.tx.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        if !self.started {
            return Some(Time::ZERO);
        }
        self.timers.iter().flatten().min().copied()
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn handle_media(&mut self, now: Time, payload: &[u8]) -> bool {
        self.start(now);
        let Some(app) = &mut self.app else {
            self.counters.refused_media += 1;
            return false;
        };
        if self.closed || payload.is_empty() || payload.len() > MAX_APP_MEDIA {
            self.counters.refused_media += 1;
            return false;
        }
        app.queue.push_back((now, payload.to_vec()));
        app.started = true;
        app.lag.handed(now, payload.len());
        if self.cfg.params.source_excess {
            app.count_handed(now, payload.len(), self.src.rate_kbps);
        }
        if self.src.rate_kbps <= 0.0 {
            return true;
        }
        // An idle sender starts again, no sooner than the last packet's
        // gap allows; one with burst credit, no sooner than the last
        // packet's gap at the burst rate (padding's gap, or a wait at the
        // rate on credit that has refilled since, does not hold media
        // back).
        let due = match (self.src.last_send, self.last_gap) {
            (Some(t), Some(gap)) => {
                let gap = if self.credit_for_burst(now) {
                    gap.min(self.gap_for(self.src.last_bytes / self.cfg.params.burst))
                } else {
                    gap
                };
                (t + gap).max(now)
            }
            _ => now,
        };
        self.send_by(due);
        true
    }

    fn poll_media(&mut self) -> Option<(FlowId, Vec<u8>)> {
        let (m, unit) = self.app.as_mut()?.arrived.pop_front()?;
        Some((self.cfg.flows[m], unit))
    }

    fn handle_keyframe_request(&mut self, now: Time, flow: FlowId) -> bool {
        self.start(now);
        self.request_keyframe(now, flow)
    }

    fn handle_reception_report(&mut self, now: Time, flow: FlowId, report: &[u8]) -> bool {
        self.start(now);
        self.report_reception(now, flow, report)
    }

    fn handle_retransmission_request(&mut self, now: Time, flow: FlowId, request: &[u8]) -> bool {
        self.start(now);
        self.request_retransmission(now, flow, request)
    }

    fn handle_close(&mut self, now: Time) {
        if self.closed {
            return;
        }
        for v in self.others() {
            self.outgoing[v].pending.clear();
            self.outgoing[v].held_requests.clear();
            self.queue_control(v, now, &Control::Bye, Duration::ZERO);
        }
        self.flush(now, true);
        self.closed = true;
        self.timers = [None; TIMERS];
    }
}

#[cfg(test)]
#[path = "peer_tests.rs"]
mod tests;
