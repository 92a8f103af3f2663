#!/usr/bin/env python3
"""How long x264 takes to reach a new bitrate, by its VBV buffer's size.

    /usr/bin/python3 tools/x264_lag.py [--vbv-ms 600 150 ...] [--pattern snow]
        [--start-kbps 600] [--changes 4:200,8:600,12:300]

For each VBV size (x264enc's `vbv-buf-capacity`, ms) it encodes
`videotestsrc` (320x240, 30 frames a second, `tune=zerolatency`, as
`tools/gst_follow_rate.py` runs x264) starting at `--start-kbps`, sets
the bitrate at each of `--changes` (seconds:kbit/s; by default 200 at 4
s, 600 at 8 s and 300 at 12 s), stops 4 s after the last, and prints one
JSON line: for each change, when it was made, the rate over the second
before it, and how long after it the rate over a sliding 200-ms window
(taken at its centre) first came within 15% of the new bitrate (`null`:
not within 2 s), with the rate in the ten 100-ms bins after the change.
The default
pattern, `snow` (noise), is one no encoder can make smaller than its
bitrate, so the encoder's rate control alone sets the rate.

The simulator's encoders lag by `conference.video_lag_ms`
(docs/scenario-format.md); docs/celerity.md, "An encoder that lags",
gives what this printed on this project's machine. Needs Python's GObject
bindings and GStreamer 1.x with x264enc (Debian: python3-gi
gir1.2-gstreamer-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-ugly),
for the system's /usr/bin/python3.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gst_follow_rate import stop_on_error  # noqa: E402  (a script beside this one)

WINDOW_S = 0.2
WITHIN = 0.15


def measure(Gst, GLib, vbv_ms, pattern, start_kbps, changes):
    """The frames x264 made (seconds since the first, bytes) and the
    changes made (seconds, kbit/s), for one VBV size."""
    pipeline = Gst.parse_launch(
        f"videotestsrc is-live=true pattern={pattern} ! "
        "video/x-raw,width=320,height=240,framerate=30/1 ! "
        f"x264enc name=enc tune=zerolatency bitrate={start_kbps} key-int-max=100000 "
        f"vbv-buf-capacity={vbv_ms} ! appsink name=out emit-signals=true sync=false"
    )
    enc = pipeline.get_by_name("enc")
    frames = []
    first = []

    def on_sample(sink):
        buf = sink.emit("pull-sample").get_buffer()
        now = time.monotonic()
        if not first:
            first.append(now)
        frames.append((now - first[0], buf.get_size()))
        return Gst.FlowReturn.OK

    pipeline.get_by_name("out").connect("new-sample", on_sample)
    loop = GLib.MainLoop()
    # (seconds from the first frame, new bitrate); None ends the run.
    pending = list(changes) + [(changes[-1][0] + 4.0, None)]
    made = []

    def tick():
        if not first:
            return True
        t = time.monotonic() - first[0]
        while pending and t >= pending[0][0]:
            _, rate = pending.pop(0)
            if rate is None:
                loop.quit()
                return False
            enc.set_property("bitrate", rate)
            made.append((t, rate))
        return True

    failure = stop_on_error(Gst, pipeline, loop)
    GLib.timeout_add(5, tick)
    pipeline.set_state(Gst.State.PLAYING)
    try:
        loop.run()
    finally:
        pipeline.set_state(Gst.State.NULL)
    if failure:
        sys.exit("GStreamer: " + "; ".join(failure))
    return frames, made


def rate_kbps(frames, a, b):
    """The rate of the frames made in [a, b), kbit/s."""
    return sum(size for t, size in frames if a <= t < b) * 8 / (b - a) / 1000


def reached(frames, at, target):
    """Seconds after `at` at which the sliding window's rate, dated at its
    centre, first comes within WITHIN of `target`; None within 2 s."""
    for k in range(1, 41):
        end = at + 0.05 * k
        if abs(rate_kbps(frames, end - WINDOW_S, end) - target) <= WITHIN * target:
            return round(end - WINDOW_S / 2 - at, 2)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vbv-ms", type=int, nargs="+", default=[600, 300, 150, 100],
                   help="VBV sizes to measure, ms (1-10000; default 600 300 150 100)")
    p.add_argument("--pattern", default="snow", help="videotestsrc's pattern (default snow)")
    p.add_argument("--start-kbps", type=int, default=600,
                   help="the bitrate x264 starts at (default 600)")
    p.add_argument("--changes", default="4:200,8:600,12:300",
                   help="when to set which bitrate, SECONDS:KBPS,... in order "
                   "(default 4:200,8:600,12:300)")
    a = p.parse_args()
    try:
        changes = [(float(t), int(k)) for t, k in
                   (c.split(":") for c in a.changes.split(","))]
    except ValueError:
        p.error(f"--changes {a.changes!r} is not SECONDS:KBPS,...")
    if any(k <= 0 for _, k in changes) or any(
            b[0] <= c[0] for c, b in zip(changes, changes[1:])) or changes[0][0] < 1:
        p.error("--changes needs rising times from 1 s on and bitrates above 0")
    if a.start_kbps <= 0:
        p.error("--start-kbps must be above 0")
    for v in a.vbv_ms:
        if not 1 <= v <= 10000:
            p.error(f"--vbv-ms {v} is not in 1-10000")

    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import GLib, Gst

    Gst.init(None)
    for element in ("videotestsrc", "x264enc", "appsink"):
        if Gst.ElementFactory.find(element) is None:
            sys.exit(f"GStreamer has no {element}")
    for vbv in a.vbv_ms:
        frames, made = measure(Gst, GLib, vbv, a.pattern, a.start_kbps, changes)
        changes = [
            {
                "at_s": round(t, 2),
                "kbps": rate,
                "before_kbps": round(rate_kbps(frames, t - 1.0, t)),
                "reached_s": reached(frames, t, rate),
                "bins_kbps": [round(rate_kbps(frames, t + 0.1 * i, t + 0.1 * (i + 1)))
                              for i in range(10)],
            }
            for t, rate in made
        ]
        print(json.dumps({"vbv_ms": vbv, "pattern": a.pattern, "changes": changes}), flush=True)


if __name__ == "__main__":
    main()
