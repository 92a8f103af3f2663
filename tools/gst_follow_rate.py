#!/usr/bin/env python3
"""An H.264 sender whose encoder follows the rate a meshcast node offers.

GStreamer's x264enc does not read RTCP feedback itself: this drives it.
The node (docs/node.md, "Keyframe requests and the offered rate") sends
the encoder's RTCP port PLIs and FIRs (make a keyframe) and REMBs (the
rate the overlay offers the session); this program listens on that port,
sets x264enc's bitrate to a share (`--headroom`) of the last REMB, within
`--min-kbps` and `--max-kbps`, and has it make a keyframe on a request.
Its RTP goes to the node's `input`, its sender reports (rtpbin's) to the
node's `input_rtcp` if given.

    gst_follow_rate.py --to 127.0.0.1:5004 --rtcp 127.0.0.1:5005 \\
        [--reports 127.0.0.1:5006] [--start-kbps 30] [--seconds 30]

for a node with `input = "127.0.0.1:5004"`, `encoder_rtcp =
"127.0.0.1:5005"` and `input_rtcp = "127.0.0.1:5006"`. It runs until
`--seconds` pass or it gets SIGINT/SIGTERM, then prints one JSON object
on stdout: the REMBs and keyframe requests it took, the packets it could
not read, and every bitrate it set (`[seconds since the start, kbit/s]`).
`--fixed` keeps the start bitrate whatever the REMBs say (keyframe
requests still honoured), for comparison.

x264's rate control reaches a new bitrate about as late as its VBV
buffer is long: 0.4–0.9 s at x264enc's default of 600 ms, 0.15–0.3 s at
150 ms (measured with this machine's GStreamer 1.22). The overlay's
link rate control sees the encoder's traffic, not the offer, so an
encoder that lags lets the offer run past what the links carry while it
climbs (docs/celerity.md, "An encoder that lags"). `--vbv-ms` sets the
buffer: 150 by default, within the frame that arrives in time at the
default delay bound (the offered rate over 200 ms less the delay
guard's 40-ms margin less the path).

Needs Python's GObject bindings and GStreamer 1.x with x264enc, rtpbin
and rtph264pay (Debian: python3-gi gir1.2-gstreamer-1.0
gstreamer1.0-plugins-base gstreamer1.0-plugins-good
gstreamer1.0-plugins-ugly).
"""

import argparse
import json
import signal
import socket
import struct
import sys
import threading
import time

# The RTCP packet types read here (RFC 3550, RFC 4585).
PSFB = 206
FMT_PLI, FMT_FIR, FMT_AFB = 1, 4, 15


def feedback(datagram):
    """The requests in one RTCP datagram, compound or reduced-size:
    ("keyframe", None) for each PLI or FIR, ("rate", bits/s) for each
    REMB (draft-alvestrand-rmcat-remb-03). Raises ValueError on a
    datagram that is not RTCP."""
    out = []
    at = 0
    if len(datagram) < 4:
        raise ValueError("shorter than an RTCP header")
    while at + 4 <= len(datagram):
        first, kind, words = struct.unpack_from("!BBH", datagram, at)
        size = (words + 1) * 4
        if first >> 6 != 2 or not 192 <= kind <= 223 or at + size > len(datagram):
            raise ValueError(f"not RTCP at byte {at}")
        fmt = first & 0x1F
        body = datagram[at : at + size]
        if kind == PSFB and fmt in (FMT_PLI, FMT_FIR):
            out.append(("keyframe", None))
        elif kind == PSFB and fmt == FMT_AFB and size >= 20 and body[12:16] == b"REMB":
            exp = body[17] >> 2
            mantissa = ((body[17] & 0x03) << 16) | (body[18] << 8) | body[19]
            out.append(("rate", mantissa << exp))
        at += size
    if at != len(datagram):
        raise ValueError("trailing bytes after the last RTCP packet")
    return out


def stop_on_error(Gst, pipeline, loop):
    """Quit `loop` on the first error `pipeline`'s bus posts; the list
    returned collects each error's message."""
    failure = []

    def on_message(_bus, msg):
        if msg.type == Gst.MessageType.ERROR:
            err, detail = msg.parse_error()
            failure.append(f"{err.message} ({detail})")
            loop.quit()

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    return failure


def address(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def positive(text):
    v = float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return v


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--to", type=address, required=True, help="the node's input (RTP)")
    p.add_argument("--rtcp", type=address, required=True,
                   help="where to listen for the node's feedback (its encoder_rtcp)")
    p.add_argument("--reports", type=address, help="the node's input_rtcp (sender reports)")
    p.add_argument("--start-kbps", type=positive, default=30.0,
                   help="the bitrate until the first REMB (default 30: a session "
                   "starts at 20 kbit/s, and what the encoder makes above the "
                   "offer waits at the source and may go stale)")
    p.add_argument("--min-kbps", type=positive, default=20.0)
    p.add_argument("--max-kbps", type=positive, default=5000.0)
    p.add_argument("--headroom", type=positive, default=0.9,
                   help="the share of the offered rate to encode at (default 0.9)")
    p.add_argument("--fixed", action="store_true", help="ignore the REMBs")
    p.add_argument("--seconds", type=positive, help="stop after this long")
    p.add_argument("--size", default="320x240", help="WIDTHxHEIGHT (default 320x240)")
    p.add_argument("--fps", type=int, default=25)
    p.add_argument("--pattern", default="ball", help="videotestsrc's pattern")
    p.add_argument("--vbv-ms", type=int, default=150,
                   help="x264's VBV buffer, ms (1-10000; default 150: x264 then "
                   "reaches a new bitrate in 0.15-0.3 s, at its own default of "
                   "600 in 0.4-0.9 s)")
    a = p.parse_args()
    if not 1 <= a.vbv_ms <= 10000:
        p.error(f"--vbv-ms {a.vbv_ms} is not in 1-10000")
    if a.headroom > 1:
        p.error("--headroom above 1 would encode more than the overlay offers")
    if a.min_kbps > a.max_kbps:
        p.error("--min-kbps is above --max-kbps")
    width, _, height = a.size.partition("x")
    if not (width.isdigit() and height.isdigit()):
        p.error(f"--size {a.size!r} is not WIDTHxHEIGHT")

    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import GLib, Gst

    Gst.init(None)
    for element in ("videotestsrc", "x264enc", "rtph264pay", "rtpbin", "udpsink"):
        if Gst.ElementFactory.find(element) is None:
            sys.exit(f"GStreamer has no {element}")

    def kbps(v):
        return int(min(a.max_kbps, max(a.min_kbps, v)))

    start = kbps(a.start_kbps)
    reports = (
        f"s.send_rtcp_src_0 ! udpsink host={a.reports[0]} port={a.reports[1]} sync=false async=false"
        if a.reports
        else "s.send_rtcp_src_0 ! fakesink sync=false async=false"
    )
    pipeline = Gst.parse_launch(
        f"rtpbin name=s rtp-profile=avpf "
        f"videotestsrc is-live=true pattern={a.pattern} ! "
        f"video/x-raw,width={width},height={height},framerate={a.fps}/1 ! "
        f"x264enc name=enc tune=zerolatency bitrate={start} key-int-max=100000 "
        f"vbv-buf-capacity={a.vbv_ms} ! "
        f"rtph264pay pt=96 config-interval=-1 ! s.send_rtp_sink_0 "
        f"s.send_rtp_src_0 ! udpsink host={a.to[0]} port={a.to[1]} "
        f"{reports}"
    )
    enc = pipeline.get_by_name("enc")
    began = time.monotonic()
    record = {"rembs": 0, "keyframe_requests": 0, "not_rtcp": 0,
              "last_remb_kbps": None, "bitrates": [[0.0, start]]}
    lock = threading.Lock()

    def since():
        return round(time.monotonic() - began, 3)

    sock = socket.socket(socket.AF_INET6 if ":" in a.rtcp[0] else socket.AF_INET,
                         socket.SOCK_DGRAM)
    sock.bind(a.rtcp)
    sock.settimeout(0.2)
    done = threading.Event()

    def listen():
        while not done.is_set():
            try:
                datagram = sock.recv(2048)
            except socket.timeout:
                continue
            try:
                asks = feedback(datagram)
            except ValueError:
                with lock:
                    record["not_rtcp"] += 1
                continue
            for kind, value in asks:
                if kind == "keyframe":
                    with lock:
                        record["keyframe_requests"] += 1
                    s = Gst.Structure.new_from_string("GstForceKeyUnit, all-headers=(boolean)true")
                    enc.get_static_pad("src").send_event(
                        Gst.Event.new_custom(Gst.EventType.CUSTOM_UPSTREAM, s))
                else:
                    with lock:
                        record["rembs"] += 1
                        record["last_remb_kbps"] = round(value / 1000, 1)
                        if a.fixed:
                            continue
                        rate = kbps(a.headroom * value / 1000)
                        if rate != record["bitrates"][-1][1]:
                            enc.set_property("bitrate", rate)
                            record["bitrates"].append([since(), rate])

    loop = GLib.MainLoop()
    failure = stop_on_error(Gst, pipeline, loop)
    for sig in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, lambda *_: loop.quit() or False)
    if a.seconds:
        GLib.timeout_add(int(a.seconds * 1000), lambda: loop.quit() or False)
    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    pipeline.set_state(Gst.State.PLAYING)
    try:
        loop.run()
    finally:
        pipeline.set_state(Gst.State.NULL)
        done.set()
        listener.join()
        sock.close()
    with lock:
        record["seconds"] = since()
        print(json.dumps(record), flush=True)
    if failure:
        sys.exit("GStreamer: " + "; ".join(failure))


if __name__ == "__main__":
    main()
