"""Score Celerity on a set of underlays against the coded optimum.

    python3 scenarios/celerity/score_underlays.py [--meshcast BIN] [--jobs N]
        [--json FILE] [--set KEY=VALUE ...]
        [--seeds K [--first-seed F] [--spread-ms MS]] SCENARIO...

Runs `meshcast run SCENARIO --json` for every scenario (N at a time,
default 2), and for each one prints the session whose lowest receiver got
the smallest fraction of its coded optimum in the first report window
(`recv_kbps_min / optimum_kbps`), that session's loss, and the worst loss
of any session. The last line is the row docs/celerity.md's "Thirty
underlays" table reports: the mean, median and lowest of the worst
fractions, how many scenarios have every session at 0.8 or more, and how
many have no session losing more than 5%, then the sessions' drops in the
windows by cause (`dropped` in the summary: late, policed at a head, link
down), which say where the loss came from, the mean session's loss and
fraction of its optimum (over every session of every scenario; the status
table's last figure), and the start: the mean
second at which a session is first heard (its lowest receiver's 1-s
goodput at half its optimum; the run's length if never; for a member
that joins later, counted from its join, and where members come and go,
against the optimum at the session's start), the mean of each underlay's
last session's, and the mean number of the first minute's seconds in
which some receiver got nothing of a session. Where members join or leave
after the start (`random_underlay.py --churn`), each underlay also gives
every change's seconds until every present session is back at 90% of its
new coded optimum for ten seconds in a row (issue 3's peer-dynamics line;
"never" if not before the next change or the end), the same against where
each session settles (the lesser of its optimum and its mean over the
second half of the time to the next change), and the session-seconds of
silence: the seconds of the first fifteen in which a session's lowest
receiver (the newcomer too) got nothing, summed over the sessions from
before the change; the last line sums them up for joins and leaves
apart. Where the network under the conference changes after the start (a
core link failing and coming back, `--fail`; a capacity fall, `--fall`),
each such change gets the same figures, named "network", and the last
line sums them up apart too; and where members come and go or the network
changes, a session's start is measured against its optimum at the start,
not its first window's. Where a scenario has more than one report window, each
underlay and the last line also give the later windows' worst sessions.
`--set` is
handed to every run (e.g. `--set conference.pace_to_heads=true`);
`--json` also writes every scenario's figures to FILE, and
`compare_scores.py BEFORE.json AFTER.json` compares two such files
underlay by underlay.

`--seeds K` (K >= 2) scores every scenario as the mean of K runs, with
seeds F..F+K-1 (`--first-seed F`, default 1; another F draws other
samples, which measures how far two such means differ at all) and the
members' starts spread over `--spread-ms` (default 20;
`conference.start_spread_ms`): the simulator is deterministic, so one run
is one sample of the control loops' chaotic path, and a neighbouring
parameter value moves an underlay's worst fraction by a few hundredths
either way. Each underlay's figures are then the runs' means (its worst
fraction the mean of the runs' worst fractions, its count at the line
whether that mean holds it, its drops the mean per run), its worst session
the one with the lowest mean fraction, and its JSON row adds `runs` (each
run's seed, worst fraction and worst session) and `worst_fraction_sd` (the
runs' standard deviation). `compare_scores.py` compares such files as any
others (docs/celerity.md, "Scoring over seeds").

The usual set is the thirty random underlays:

    python3 scenarios/celerity/random_underlay.py 1 31 /tmp/ru
    python3 scenarios/celerity/score_underlays.py /tmp/ru/r*.toml

and `random_underlay.py --family long|wide|fast|edge|large` draws the
families nobody tuned for (docs/celerity.md, "Underlays nobody tuned for";
`large` has 9-16 members, "Large conferences").

BIN defaults to target/release/meshcast under the repository (build it
with `cargo build --release`), else `meshcast` on the PATH.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    tomllib = None


def default_meshcast():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    built = os.path.join(root, "target", "release", "meshcast")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("meshcast")


def sessions(summary):
    """The conference sessions among a run's flows."""
    return [f for f in summary["flows"] if f["kind"] == "session"]


# The start's figures: a session is heard once its lowest receiver's 1-s
# goodput reaches this share of its optimum, and a second is silent for it
# while some receiver gets nothing of it, counted over `START_SPAN` seconds.
HEARD = 0.5
START_SPAN = 60


def start_figures(f, opt, duration, t0=0.0):
    """A session's start (`f` a session flow of a summary, `opt` its
    optimum, `t0` when its source joined): the seconds from `t0` until its
    lowest receiver got `HEARD` of `opt` (until the run's end if never), and
    how many of the first `START_SPAN` seconds from `t0` some receiver got
    nothing of it."""
    series = [x for x in f.get("series") or [] if x["t_s"] >= t0]
    heard = next((x["t_s"] for x in series if x["recv_kbps_min"] >= HEARD * opt), duration) - t0
    silent = sum(1 for x in series if x["t_s"] < t0 + START_SPAN and x["recv_kbps_min"] == 0)
    return heard, silent


# The members present at the start may join up to this late
# (`conference.start_spread_ms` is at most 1000): later membership events
# are changes to a running conference.
START_SPREAD_S = 1.0


def membership_changes(summary):
    """The membership events of a run after the start's (`START_SPREAD_S`)."""
    return [m for m in summary.get("membership", []) if m["t_s"] >= START_SPREAD_S]


def network_changes(summary):
    """The instants after the start at which the network under the
    conference changed (a link going down or coming back, a capacity
    change: `random_underlay.py --fail` and `--fall`), as `event`
    "network" dicts with no node: the summary's optimum steps after
    `START_SPREAD_S` (one at every event and at the end of every
    cross-traffic flow, docs/report-format.md) other than those of the
    membership changes."""
    members = [m["t_s"] for m in membership_changes(summary)]
    return [{"t_s": s["from_s"], "node": None, "event": "network"}
            for s in summary.get("optimum", [])
            if s["from_s"] >= START_SPREAD_S and all(abs(s["from_s"] - t) >= START_SPREAD_S
                                                      for t in members)]


def joined_at(summary, node):
    """When `node` first joined the conference, 0 for a member from the
    start (one whose first join came within `START_SPREAD_S`)."""
    first = min((m["t_s"] for m in summary.get("membership", [])
                 if m["node"] == node and m["event"] == "join"), default=0.0)
    return first if first >= START_SPREAD_S else 0.0


def recv_series(flow):
    """A session flow's lowest receiver's goodput, one value a second."""
    return [b["recv_kbps_min"] for b in flow["series"]]


def coded_optimum(summary, source, t):
    """The session's coded optimum in the optimum step in force at `t`
    (None where `source` is not a member then)."""
    steps = [s for s in summary["optimum"] if s["from_s"] <= t]
    if not steps:
        raise ValueError(f"no optimum at {t} s")
    return steps[-1]["coded"].get(source)


# Issue 3's peer-dynamics line: after a membership change every session is
# back at `BACK_SHARE` of its new optimum within `BACK_WITHIN_S` seconds;
# "back" is `BACK_RUN_S` 1-s bins in a row at that share.
BACK_SHARE = 0.9
BACK_WITHIN_S = 15
BACK_RUN_S = 10


def back_after(summary, t0, until=None, settled=False):
    """Seconds after `t0` until the slowest present session has
    `BACK_RUN_S` 1-s bins in a row at `BACK_SHARE` of its coded optimum
    (None: never). With `until` (the next change, or the run's end) the
    run of bins must end by then; with `settled` too, each session's mark
    is `BACK_SHARE` of the lesser of its optimum and where it settled, its
    mean over the second half of [t0, until): how soon the conference
    settles after the change, whatever the level it settles at."""
    worst = 0
    for f in sessions(summary):
        opt = coded_optimum(summary, f["source"], t0 + 0.5)
        if opt is None:
            continue  # not a member after the change
        r = recv_series(f)
        end = len(r) if until is None else min(len(r), int(until))
        mark = opt
        if settled:
            half = r[(int(t0) + end) // 2:end]
            if half:
                mark = min(opt, statistics.mean(half))
        back = next((t for t in range(int(t0), end - BACK_RUN_S + 1)
                     if all(v >= BACK_SHARE * mark for v in r[t:t + BACK_RUN_S])), None)
        if back is None:
            return None
        worst = max(worst, back - int(t0))
    return worst


def changes_figures(summary):
    """Every membership change after the start (`random_underlay.py
    --churn`) and every change of the network under the conference
    (`network_changes`: `--fail`, `--fall`), in time order: its time,
    node (None for the network's) and event, `back_s` (`back_after`, issue 3's
    line, up to the next change), `settled_s` (the same against where the
    sessions settle), `silent_s`, session-seconds of silence: the 1-s
    bins of the first `BACK_WITHIN_S` seconds in which a session's lowest
    receiver (after a join, the newcomer too) got nothing, summed over
    the sessions whose source was a member before and after the change
    (every session, for the network's),
    and `members_silent_s`, the part of them in which a receiver that was
    a member before the change got nothing (`members_silent`; None for a
    summary without each receiver's figures, from before the thirty-ninth
    session): a join's silence that is only the newcomer's wait is not
    the old members'."""
    changes = sorted(membership_changes(summary) + network_changes(summary),
                     key=lambda m: m["t_s"])
    ends = [m["t_s"] for m in changes[1:]] + [summary["duration_s"]]
    out = []
    for m, until in zip(changes, ends):
        t0 = m["t_s"]
        newcomer = m["node"] if m["event"] == "join" else None
        silent = members = 0
        for f in sessions(summary):
            before = coded_optimum(summary, f["source"], t0 - 0.5)
            after = coded_optimum(summary, f["source"], t0 + 0.5)
            if before is None or after is None:
                continue
            bins = f["series"][int(t0):int(t0) + BACK_WITHIN_S]
            silent += sum(1 for b in bins if b["recv_kbps_min"] == 0)
            lost = [members_silent(b, f.get("receivers"), newcomer) for b in bins]
            members = None if members is None or None in lost else members + sum(lost)
        out.append({"t_s": t0, "node": m["node"], "event": m["event"],
                    "back_s": back_after(summary, t0, until),
                    "settled_s": back_after(summary, t0, until, settled=True),
                    "silent_s": silent, "members_silent_s": members})
    return out


def members_silent(sample, receivers, newcomer):
    """Whether, in a session's 1-s `sample`, a receiver other than
    `newcomer` (None: any) got nothing; None where that cannot be told.
    Each receiver's figure is the sample's `recv_kbps`; a session with
    one receiver (`receivers`) has only `recv_kbps_min`, which is that
    receiver's; a summary from before `recv_kbps` tells only that the
    lowest got nothing."""
    if sample["recv_kbps_min"] != 0:
        return False
    each = sample.get("recv_kbps")
    if each is not None:
        return any(v == 0 for node, v in each.items() if node != newcomer)
    if receivers is not None and len(receivers) == 1:
        return receivers[0] != newcomer
    return None


def later_windows(summary):
    """The report windows after the first (`random_underlay.py --churn`
    and `--fall` write two): each one's span and its worst session, the
    one whose lowest receiver got the least of its coded optimum among
    the sessions that have one there."""
    out = []
    flows = sessions(summary)
    for i in range(1, max((len(f["windows"]) for f in flows), default=0)):
        rows = [(f["windows"][i]["recv_kbps_min"] / f["windows"][i]["optimum_kbps"], f["id"],
                 f["windows"][i]) for f in flows
                if len(f["windows"]) > i and f["windows"][i].get("optimum_kbps")]
        if rows:
            fraction, sid, w = min(rows, key=lambda r: r[0])
            out.append({"from_s": w["from_s"], "to_s": w["to_s"],
                        "worst_fraction": fraction, "worst_session": sid})
    return out


def score(summary):
    """The worst session of a run's summary, in its first report window,
    every session's start (`start_figures`), the later windows' worst
    sessions (`later_windows`) and the membership and network changes
    (`changes_figures`), where the run has them."""
    rows = []
    starts = {}
    frames = {}
    changes = changes_figures(summary)
    for f in sessions(summary):
        if not f["windows"]:
            raise ValueError("the scenario has no report window")
        w = f["windows"][0]
        opt = w.get("optimum_kbps")
        if not opt:
            raise ValueError(f"session {f['id']} has no optimum in its first window")
        rows.append((w["recv_kbps_min"] / opt, f["id"], w["recv_kbps_min"], opt, w["loss"] or 0.0,
                     w.get("dropped") or {c: 0 for c in DROP_CAUSES}))
        t0 = joined_at(summary, f["source"])
        # Where members come and go or the network changes, a session's
        # optimum at its start can differ from its window's: a member that
        # joins later adds uploads the others' trees can use, a link that
        # fails before the window takes some away.
        at_start = coded_optimum(summary, f["source"], t0 + 0.5) if changes else opt
        starts[f["id"]] = start_figures(f, at_start, summary["duration_s"], t0)
        if w.get("video"):
            frames[f["id"]] = (w["video"]["whole_min"] or 0.0, w["video"]["decodable_min"] or 0.0)
    if not rows:
        raise ValueError("the scenario has no conference sessions")
    worst = min(rows)
    extra = {}  # only some runs have them: frames, changes, later windows
    if len(frames) == len(rows):
        extra = {"worst_whole": min(w for w, _ in frames.values()),
                 "worst_decodable": min(d for _, d in frames.values())}
    if changes:
        extra["changes"] = changes
    later = later_windows(summary)
    if later:
        extra["later"] = later
    return {**extra,
        "worst_fraction": worst[0],
        "worst_session": worst[1],
        "recv_kbps_min": worst[2],
        "optimum_kbps": worst[3],
        "worst_session_loss": worst[4],
        "worst_loss": max(r[4] for r in rows),
        "sessions": {r[1]: {"fraction": r[0], "optimum_kbps": r[3], "loss": r[4],
                            "dropped": r[5],
                            "heard_s": starts[r[1]][0], "silent_s": starts[r[1]][1],
                            **({"whole": frames[r[1]][0], "decodable": frames[r[1]][1]}
                               if r[1] in frames else {})}
                     for r in rows},
        "heard_s": statistics.mean(h for h, _ in starts.values()),
        "heard_s_last": max(h for h, _ in starts.values()),
        "silent_s": statistics.mean(q for _, q in starts.values()),
        "dropped": {c: sum(r[5][c] for r in rows) for c in DROP_CAUSES},
    }


DROP_CAUSES = ("late", "policed", "link_down")


def mean_score(runs):
    """One scenario's score over several runs (`score`'s dicts of the same
    conference under different seeds, with `seed` added): every figure the
    mean of the runs', the worst session the one with the lowest mean
    fraction, plus `runs` (each run's seed, worst fraction and worst
    session) and `worst_fraction_sd`."""
    def mean(key, rows=runs):
        return statistics.mean(r[key] for r in rows)

    def mean_drops(rows):
        return {c: statistics.mean(r["dropped"][c] for r in rows) for c in DROP_CAUSES}

    ids = list(runs[0]["sessions"])
    if any(list(r["sessions"]) != ids for r in runs):
        raise ValueError("the runs of one scenario have different sessions")
    per = {i: [r["sessions"][i] for r in runs] for i in ids}
    sessions = {}
    for i, rows in per.items():
        sessions[i] = {k: mean(k, rows) for k in rows[0] if k != "dropped"}
        sessions[i]["dropped"] = mean_drops(rows)
    worst = min(ids, key=lambda i: sessions[i]["fraction"])
    fractions = [r["worst_fraction"] for r in runs]
    out = {
        "worst_fraction": statistics.mean(fractions),
        "worst_fraction_sd": statistics.stdev(fractions),
        "worst_session": worst,
        "recv_kbps_min": sessions[worst]["fraction"] * sessions[worst]["optimum_kbps"],
        "optimum_kbps": sessions[worst]["optimum_kbps"],
        "worst_session_loss": sessions[worst]["loss"],
        "worst_loss": mean("worst_loss"),
        "sessions": sessions,
        "dropped": mean_drops(runs),
        "runs": [{"seed": r["seed"], "worst_fraction": r["worst_fraction"],
                  "worst_session": r["worst_session"]} for r in runs],
    }
    for k in ("heard_s", "heard_s_last", "silent_s", "worst_whole", "worst_decodable"):
        if all(k in r for r in runs):
            out[k] = mean(k)
    if all("changes" in r for r in runs):
        out["changes"] = [dict(c, seed=r["seed"]) for r in runs for c in r["changes"]]
    if all("later" in r and len(r["later"]) == len(runs[0]["later"]) for r in runs):
        out["later"] = [{"from_s": w["from_s"], "to_s": w["to_s"],
                         "worst_fraction": statistics.mean(r["later"][i]["worst_fraction"]
                                                           for r in runs),
                         "worst_session": min((r["later"][i] for r in runs),
                                              key=lambda x: x["worst_fraction"])["worst_session"]}
                        for i, w in enumerate(runs[0]["later"])]
    return out


# The line a set's count is taken at: every session at this fraction of its
# coded optimum, and the worst session's loss at most this.
LINE = 0.8
LOSS = 0.05


def set_figures(results):
    """A set's row from its scores (`score`'s dicts): the mean, median and
    lowest worst fraction, how many hold `LINE` and `LOSS`, the drops by
    cause, the mean session's loss and fraction (over every session of
    every underlay), and the means of the start's figures where every
    score has them."""
    fractions = [r["worst_fraction"] for r in results]
    every = [s for r in results for s in r["sessions"].values()]
    figures = {
        "mean": statistics.mean(fractions),
        "median": statistics.median(fractions),
        "lowest": min(fractions),
        "at_line": sum(f >= LINE for f in fractions),
        "within_loss": sum(r["worst_loss"] <= LOSS for r in results),
        "dropped": {c: sum(r["dropped"][c] for r in results) for c in DROP_CAUSES},
        "session_loss": statistics.mean(s["loss"] for s in every),
        "session_fraction": statistics.mean(s["fraction"] for s in every),
    }
    # Scores written before the start was measured have none.
    if all("heard_s" in r for r in results):
        for k in ("heard_s", "heard_s_last", "silent_s"):
            figures[k] = statistics.mean(r[k] for r in results)
    # Only runs with simulated video (`conference.video_fps`) have frames.
    if all("worst_whole" in r for r in results):
        for k in ("worst_whole", "worst_decodable"):
            figures[k] = statistics.mean(r[k] for r in results)
    # Only runs with more than one window (`--churn`, `--fall`), the same
    # windows in every run.
    spans = [[(w["from_s"], w["to_s"]) for w in r.get("later", [])] for r in results]
    if spans[0] and all(x == spans[0] for x in spans):
        figures["later"] = [{"from_s": lo, "to_s": hi,
                             "mean": statistics.mean(r["later"][i]["worst_fraction"]
                                                     for r in results),
                             "at_line": sum(r["later"][i]["worst_fraction"] >= LINE
                                            for r in results)}
                            for i, (lo, hi) in enumerate(spans[0])]
    # Only runs with membership or network changes (`random_underlay.py
    # --churn`, `--fail`, `--fall`).
    if all("changes" in r for r in results):
        figures["changes"] = {e: changes_row([c for r in results for c in r["changes"]
                                              if c["event"] == e])
                              for e in CHANGE_EVENTS}
    return figures


# A set's changes by event, and how its line names each kind.
CHANGE_EVENTS = {"join": "joins", "leave": "leaves", "network": "network changes"}


def changes_row(changes):
    """A set's membership or network changes of one kind (`changes_figures`' dicts):
    how many, how many are back within `BACK_WITHIN_S`, the median and
    worst `back_s` and `settled_s` (None for never, which sorts last) and
    the mean silent seconds, all and, where every change has them (scores
    from before the thirty-ninth session do not), the old members'."""
    def spread(key):
        xs = [c[key] for c in changes if c[key] is not None]
        never = len(changes) - len(xs)
        median = statistics.median(xs + [math.inf] * never) if changes else None
        return {"median": None if median == math.inf else median,
                "worst": max(xs) if xs else None,
                "never": never}
    row = {"count": len(changes),
           "within": sum(c["back_s"] is not None and c["back_s"] <= BACK_WITHIN_S
                         for c in changes),
           "back_s": spread("back_s"),
           "settled_s": spread("settled_s"),
           "silent_s": statistics.mean(c["silent_s"] for c in changes) if changes else 0.0}
    if all(c.get("members_silent_s") is not None for c in changes):
        row["members_silent_s"] = (statistics.mean(c["members_silent_s"] for c in changes)
                                   if changes else 0.0)
    return row


def members_text(figures, digits):
    """` (members' M)` for a change's or a set's row with the old members'
    silent seconds (`changes_figures`), else empty."""
    if figures.get("members_silent_s") is None:
        return ""
    return f" (members' {figures['members_silent_s']:.{digits}f})"


def frames_text(figures):
    """The frame figures of an underlay's score or a set's row, if it
    has them, as `; frames whole W, decodable D` (the worst session's
    lowest receiver's fractions); else empty."""
    if "worst_whole" not in figures:
        return ""
    return (f"; frames whole {figures['worst_whole']:.3f}, "
            f"decodable {figures['worst_decodable']:.3f}")


def later_text(figures, line=False):
    """The later windows of an underlay's score (`; [200,240] worst 0.861
    (P3)`) or of a set's row (`line`: `; [200,240] mean worst 0.861, every
    session >= 0.8 in 80`); empty without them."""
    later = figures.get("later")
    if not later:
        return ""
    if line:
        return "".join(f"; [{w['from_s']:g},{w['to_s']:g}] mean worst {w['mean']:.3f}, "
                       f"every session >= {LINE} in {w['at_line']}" for w in later)
    return "".join(f"; [{w['from_s']:g},{w['to_s']:g}] worst {w['worst_fraction']:.3f} "
                   f"({w['worst_session']})" for w in later)


def changes_text(figures):
    """An underlay's membership and network changes (its score's
    `changes`) as `; join P3 at 100 s: back in 9 s (settled 6 s), 2 silent
    s (members' 1)` (`; network at 100 s: ...` for the network's), or a
    set's (`set_figures`' `changes`) as `; joins: 80 of 90 back
    within 15 s, back median 9 s, worst 40 s, never 3; settled ...; silent
    0.20 s (members' 0.10)`; empty without changes."""
    changes = figures.get("changes")
    if not changes:
        return ""

    def secs(x):
        return "never" if x is None else f"{x:g} s"

    if isinstance(changes, list):
        return "".join(f"; {c['event']}{'' if c['node'] is None else ' ' + c['node']} "
                       f"at {c['t_s']:g} s: back in {secs(c['back_s'])} "
                       f"(settled {secs(c['settled_s'])}), {c['silent_s']} silent s"
                       + members_text(c, 0)
                       for c in changes)

    def spread(name, x):
        return (f"{name} median {secs(x['median'])}, worst {secs(x['worst'])}"
                + (f", never {x['never']}" if x["never"] else ""))

    return "".join(f"; {CHANGE_EVENTS[e]}: {row['within']} of {row['count']} back within "
                   f"{BACK_WITHIN_S} s, "
                   f"{spread('back', row['back_s'])}, {spread('settled', row['settled_s'])}, "
                   f"silent {row['silent_s']:.2f} s" + members_text(row, 2)
                   for e, row in changes.items() if row["count"])


def start_text(figures):
    """The start's figures of an underlay's score or a set's row
    (`heard_s`, `heard_s_last`, `silent_s`) as `heard at H s (last L s), S
    silent s`."""
    return (f"heard at {figures['heard_s']:.1f} s (last {figures['heard_s_last']:.1f} s), "
            f"{figures['silent_s']:.1f} silent s")


def sessions_text(figures):
    """A set's mean session (`set_figures`) as `mean session loss L%,
    fraction F`."""
    return (f"mean session loss {100 * figures['session_loss']:.2f}%, "
            f"fraction {figures['session_fraction']:.3f}")


def count_text(x):
    """A count of packets: whole, or to a tenth where it is a mean over
    seeds (`--seeds`)."""
    return str(x) if isinstance(x, int) or float(x).is_integer() and abs(x) < 2**53 \
        else f"{x:.1f}"


def runs_text(r):
    """A mean score's spread over its runs (`--seeds`) as `; over K seeds
    sd S (LO-HI)`; empty for a single run."""
    if "runs" not in r:
        return ""
    fs = [x["worst_fraction"] for x in r["runs"]]
    return (f"; over {len(fs)} seeds sd {r['worst_fraction_sd']:.3f} "
            f"({min(fs):.3f}-{max(fs):.3f})")


def drops_text(dropped):
    """A `dropped` object as `L late, P policed, D link down`."""
    return ", ".join(f"{count_text(dropped[c])} {c.replace('_', ' ')}" for c in DROP_CAUSES)


def add_run_options(ap):
    """The options every scenario script takes: --meshcast, --jobs, --set
    and --json."""
    ap.add_argument("--meshcast", default=default_meshcast(), metavar="BIN")
    ap.add_argument("--jobs", type=int, default=2, metavar="N")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", metavar="FILE")


def check_run_options(args):
    """Exits with a message if the options of `add_run_options` cannot run."""
    if not args.meshcast:
        sys.exit("no meshcast binary: build it with `cargo build --release` or pass --meshcast")
    if args.jobs < 1:
        sys.exit("--jobs must be at least 1")


def conference_value(scenario, sets, key, default):
    """`conference.KEY` as a run sees it: from the last `--set` naming it
    (meshcast applies them in order), else the scenario file's, else
    `default` (also without tomllib, before Python 3.11)."""
    for s in reversed(sets):
        name, _, value = s.partition("=")
        if name == f"conference.{key}":
            return float(value)
    if tomllib is None:
        return float(default)
    with open(scenario, "rb") as f:
        return float(tomllib.load(f).get("conference", {}).get(key, default))


def run_summary(meshcast, scenario, sets, out_root):
    """`meshcast run SCENARIO --json` with `--set` for each of `sets`, its
    report under a new directory in `out_root`: the summary."""
    return run_report(meshcast, scenario, sets, out_root)[0]


def run_report(meshcast, scenario, sets, out_root, extra=()):
    """As `run_summary`, with `extra` arguments for `meshcast run` (say
    `--trace-control`): the summary and the report's directory."""
    out = tempfile.mkdtemp(dir=out_root)
    cmd = [meshcast, "run", scenario, "--json", "--out", out, *extra]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        what = " ".join([scenario, *sets])
        raise RuntimeError(f"{what}: meshcast failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout), out


def run_optimum(meshcast, scenario, sets, at, prices=False):
    """`meshcast optimum SCENARIO --at AT` (with `--prices` if asked) and
    `--set` for each of `sets`: its JSON answer."""
    cmd = [meshcast, "optimum", scenario, "--at", str(at)]
    if prices:
        cmd.append("--prices")
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{scenario}: meshcast optimum --at {at} failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def scenario_args(description, more=None):
    """The command line of a script that runs a list of scenarios: the
    scenario files and the options of `add_run_options` (and those `more`
    adds to the parser, if given), checked."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_run_options(ap)
    if more:
        more(ap)
    args = ap.parse_args()
    check_run_options(args)
    return args


def run_each(work, args):
    """Runs `work(meshcast, scenario, sets, out_root)` for every scenario of
    `args` (as `scenario_args` reads them), `args.jobs`
    at a time, each run's report under one temporary directory. Yields
    `(i, n, scenario, result)` in the scenarios' order; refuses a missing
    scenario file, and exits with the message of the first run that
    raises RuntimeError or ValueError."""
    for s in args.scenarios:
        if not os.path.isfile(s):
            sys.exit(f"{s}: no such scenario file")
    with tempfile.TemporaryDirectory() as out_root, \
            ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(work, args.meshcast, s, args.set, out_root) for s in args.scenarios]
        for i, (scenario, job) in enumerate(zip(args.scenarios, jobs), 1):
            try:
                result = job.result()
            except (RuntimeError, ValueError) as e:
                for j in jobs:
                    j.cancel()
                sys.exit(str(e))
            yield i, len(jobs), scenario, result


def run(meshcast, scenario, sets, out_root):
    summary = run_summary(meshcast, scenario, sets, out_root)
    result = score(summary)
    result["scenario"] = scenario
    result["wall_s"] = summary["wall_s"]
    return result


def run_seeds(seeds, first, spread_ms):
    """A `run_each` work function that scores a scenario over the `seeds`
    seeds from `first` on, with the members' starts spread over
    `spread_ms` (`mean_score`)."""
    def work(meshcast, scenario, sets, out_root):
        runs = []
        for seed in range(first, first + seeds):
            spread = [f"seed={seed}", f"conference.start_spread_ms={spread_ms}"]
            r = run(meshcast, scenario, [*sets, *spread], out_root)
            r["seed"] = seed
            runs.append(r)
        result = mean_score(runs)
        result["scenario"] = scenario
        result["wall_s"] = sum(r["wall_s"] for r in runs)
        return result
    return work


def seed_options(ap):
    ap.add_argument("--seeds", type=int, default=1, metavar="K",
                    help="score each scenario as the mean of K runs (seeds F..F+K-1, "
                         "starts spread); 1 runs each scenario once as it is")
    ap.add_argument("--first-seed", type=int, default=1, metavar="F",
                    help="with --seeds 2 or more: the first seed (default 1)")
    ap.add_argument("--spread-ms", type=float, default=20.0, metavar="MS",
                    help="with --seeds 2 or more: conference.start_spread_ms (default 20)")


def main():
    args = scenario_args("Score Celerity on underlays against the coded optimum "
                         "(see the module's docstring).", seed_options)
    if args.seeds < 1:
        sys.exit("--seeds must be at least 1")
    if args.first_seed < 0:
        sys.exit("--first-seed must be at least 0")
    if not 0.0 < args.spread_ms <= 1000.0:
        sys.exit("--spread-ms must be in (0, 1000]")
    work = run
    if args.seeds > 1:
        taken = [s for s in args.set
                 if s.partition("=")[0] in ("seed", "conference.start_spread_ms")]
        if taken:
            sys.exit(f"--seeds sets the seed and the start's spread itself: drop --set {taken[0]}")
        work = run_seeds(args.seeds, args.first_seed, args.spread_ms)
    results = []
    for i, n, _, r in run_each(work, args):
        results.append(r)
        print(f"[{i}/{n}] {r['scenario']}: worst {r['worst_fraction']:.3f} "
              f"({r['worst_session']}, {r['recv_kbps_min']:.0f} of {r['optimum_kbps']:.0f} "
              f"kbit/s, loss {100 * r['worst_session_loss']:.1f}%), "
              f"worst loss {100 * r['worst_loss']:.1f}%, drops {drops_text(r['dropped'])}, "
              f"{start_text(r)}{frames_text(r)}{later_text(r)}{changes_text(r)}{runs_text(r)}, "
              f"{r['wall_s']:.1f} s", flush=True)
    figures = set_figures(results)
    print(f"{len(results)} scenarios: mean worst fraction {figures['mean']:.3f}, "
          f"median {figures['median']:.3f}, lowest {figures['lowest']:.3f}; "
          f"every session >= {LINE} in {figures['at_line']}, "
          f"worst loss <= {LOSS:.0%} in {figures['within_loss']}; "
          f"drops {drops_text(figures['dropped'])}; {sessions_text(figures)}; "
          f"start: {start_text(figures)}"
          f"{frames_text(figures)}{later_text(figures, line=True)}{changes_text(figures)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
