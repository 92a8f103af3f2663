#!/bin/bash
# x264 following a node's offered rate across a 600-kbit/s link.
#
#   sudo tools/x264_over_link.sh VBV_MS [SECONDS [DIR]]
#
# Two network namespaces joined by a veth pair whose two ends are shaped
# to 600 kbit/s each way (tbf, a 30-kB queue: 400 ms at the rate), node A
# in one and node B in the other (`meshcast node`, a two-member
# conference), x264 in A's namespace driven by A's REMBs
# (tools/gst_follow_rate.py --vbv-ms VBV_MS, videotestsrc's snow, which no
# encoder makes smaller than its bitrate) and a GStreamer receiver in B's
# writing what it depayloads. It runs SECONDS (default 30), keeps every
# file in DIR (default a new directory under /tmp) and prints what B
# received of A's session each second, the offer's peak in the first 15 s
# and its lowest in the 8 s after, the frames the receiver's stream
# decodes and how late A measured x264 to follow the offer (its summary's
# peer.app_lag_ms). The namespaces are removed on exit, however it ends.
#
# The simulated counterpart is scenarios/celerity/encoder-lag.toml
# (docs/celerity.md, "An encoder that lags"). Needs root, iproute2 with
# tbf, ffprobe, GStreamer with x264enc and rtpbin, Python's GObject
# bindings for /usr/bin/python3, and a release build of meshcast
# (MESHCAST=path overrides target/release/meshcast).
set -euo pipefail
usage() { echo "usage: $0 VBV_MS [SECONDS [DIR]]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 3 ]] || usage
VBV=$1; SECS=${2:-30}; OUT=${3:-$(mktemp -d /tmp/x264-over-link.XXXXXX)}
[[ $VBV =~ ^[0-9]+$ && $SECS =~ ^[0-9]+$ && $SECS -ge 5 ]] || usage
[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (network namespaces)" >&2; exit 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${MESHCAST:-$ROOT/target/release/meshcast}
[[ -x $BIN ]] || { echo "$0: no meshcast at $BIN (cargo build --release)" >&2; exit 1; }
for tool in ip tc gst-launch-1.0 ffprobe /usr/bin/python3; do
  command -v "$tool" > /dev/null || { echo "$0: needs $tool" >&2; exit 1; }
done
A=mcx264a$$; B=mcx264b$$
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -INT "$p" 2> /dev/null || true; done
  ip netns del "$A" 2> /dev/null || true
  ip netns del "$B" 2> /dev/null || true
}
trap cleanup EXIT
mkdir -p "$OUT"
ip netns add "$A"; ip netns add "$B"
ip link add vA$$ type veth peer name vB$$
ip link set vA$$ netns "$A"; ip link set vB$$ netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev vA$$; ip -n "$B" addr add 10.77.0.2/24 dev vB$$
for n in "$A" "$B"; do ip -n "$n" link set lo up; done
ip -n "$A" link set vA$$ up; ip -n "$B" link set vB$$ up
ip netns exec "$A" tc qdisc add dev vA$$ root tbf rate 600kbit burst 1600 limit 30000
ip netns exec "$B" tc qdisc add dev vB$$ root tbf rate 600kbit burst 1600 limit 30000
COMMON="duration_s = $((SECS + 5))
epoch_unix_s = $(date +%s)
[conference]
participants = [\"A\", \"B\"]
[peers]
A = \"10.77.0.1:5001\"
B = \"10.77.0.2:5001\""
printf 'id = "A"\n%s\n[media]\ninput = "127.0.0.1:5004"\nencoder_rtcp = "127.0.0.1:5005"\ninput_rtcp = "127.0.0.1:5006"\n' \
  "$COMMON" > "$OUT/A.toml"
printf 'id = "B"\n%s\n[media]\nrtcp_listen = "127.0.0.1:6010"\n[media.output]\nA = "127.0.0.1:6004"\n[media.output_rtcp]\nA = "127.0.0.1:6005"\n' \
  "$COMMON" > "$OUT/B.toml"
ip netns exec "$B" gst-launch-1.0 -q -e rtpbin name=r rtp-profile=avpf udpsrc port=6004 \
  caps="application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96,rtcp-fb-nack-pli=(boolean)true" \
  ! r.recv_rtp_sink_0 udpsrc port=6005 ! r.recv_rtcp_sink_0 r. ! rtph264depay request-keyframe=true \
  ! video/x-h264,stream-format=byte-stream ! filesink location="$OUT/recv.h264" \
  r.send_rtcp_src_0 ! udpsink host=127.0.0.1 port=6010 sync=false async=false > "$OUT/receiver.log" 2>&1 &
PIDS+=($!)
ip netns exec "$A" "$BIN" node --json --config "$OUT/A.toml" --out "$OUT/out-A" > /dev/null 2> "$OUT/A.log" &
PIDS+=($!)
ip netns exec "$B" "$BIN" node --json --config "$OUT/B.toml" --out "$OUT/out-B" > /dev/null 2> "$OUT/B.log" &
PIDS+=($!)
sleep 1
ip netns exec "$A" /usr/bin/python3 "$ROOT/tools/gst_follow_rate.py" --to 127.0.0.1:5004 \
  --rtcp 127.0.0.1:5005 --reports 127.0.0.1:5006 --pattern snow --seconds "$SECS" \
  --vbv-ms "$VBV" > "$OUT/sender.json" 2> "$OUT/sender.log"
# The nodes first (they write their summaries on SIGINT), the receiver after.
kill -INT "${PIDS[1]}" "${PIDS[2]}"
wait "${PIDS[1]}" "${PIDS[2]}" || true
kill -INT "${PIDS[0]}"
wait "${PIDS[0]}" || true
PIDS=()
FRAMES=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
  -of csv=p=0 "$OUT/recv.h264" 2> /dev/null || echo 0)
/usr/bin/python3 - "$OUT" "$VBV" "${FRAMES:-0}" <<'PY'
import csv, json, sys
out, vbv, frames = sys.argv[1], sys.argv[2], sys.argv[3]
sender = json.load(open(f"{out}/sender.json"))
bitrates = sender["bitrates"]
early = [(t, r) for t, r in bitrates if t < 15]
peak_t, peak = max(early, key=lambda b: b[1])
after = [r for t, r in bitrates if peak_t < t < peak_t + 8]
got = [float(r["value"] or 0) for r in csv.DictReader(open(f"{out}/out-B/series.csv"))
       if r["entity"] == "flow" and r["id"] == "A" and r["metric"] == "recv_kbps_min"]
late = got[10:30]
print(json.dumps({
    "vbv_ms": int(vbv),
    "dir": out,
    "rembs": sender["rembs"],
    "bitrate_peak_kbps": peak, "peak_at_s": peak_t,
    "lowest_after_peak_kbps": min(after) if after else None,
    "b_received_kbps": [round(x) for x in got],
    "b_mean_10_30_kbps": round(sum(late) / len(late), 1) if late else None,
    "frames_decoded": int(frames),
    # How late A measured its encoder to follow the offer (docs/node.md).
    "a_app_lag_ms": json.load(open(f"{out}/out-A/summary.json"))["peer"].get("app_lag_ms"),
}))
PY
