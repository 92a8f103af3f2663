//! Keyframe requests between real applications over real UDP (RTCP in,
//! RTCP out): a receiving application's picture loss indication or full
//! intra request reaches the sending node's encoder as a PLI naming its
//! stream.
//!
//! Two Celerity peers on loopback carry an application's RTP: A takes a
//! stand-in encoder's packets (one stream, SSRC `STREAM`) on its media
//! input, B delivers them to a stand-in decoder. The decoder asks for
//! keyframes as a receiver would: a PLI answered to the address its RTP
//! came from, a FIR on B's RTCP port 100 ms after it (one loss, two
//! requests: the encoder gets one), a request for a stream nobody sent,
//! and a PLI 1.6 s later; it also sends RTP back, which is no request.
//! A also tells the encoder the rate it offers A's session (REMB).
//!
//! The encoder's own RTCP travels with its media: an encoder with two
//! streams (video of payload type 96, audio of 97) sends its sender
//! reports and a goodbye to A's RTCP input; B hands them to its decoder's
//! RTCP port, C (which has none) to its RTP port but for the audio's,
//! which C takes on ports of its own with the audio's RTP; and A's
//! keyframe requests and REMBs name every stream the encoder still sends.
//!
//! The receivers' reception reports travel back: the report blocks in a
//! decoder's receiver or sender reports about A's stream reach A's encoder
//! as a receiver report from the decoder's SSRC, at most one per 0.5 s for
//! each session and decoder, ten blocks at most. So do their generic
//! NACKs, at once, as a request of their own per session and decoder (an
//! empty receiver report and the NACKs), within a budget of eight at once
//! and 25 a second.

use meshcast_core::{Addr, Event, FlowId, NodeId, Rate};
use meshcast_net::{AddrBook, MediaPorts, NetCounters, Node, TypeOutput, rtcp};
use meshcast_plan::Model;
use meshcast_proto::celerity::{CelerityConfig, CelerityParams, CelerityPeer, PeerCounters};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::UdpSocket;

/// The encoder's stream.
const STREAM: u32 = 0x00A1_1CE5;
/// The least time between two requests to the encoder (long, so that a
/// loaded machine's stalls cannot stretch the requests meant to fall
/// within it past it).
const GAP: Duration = Duration::from_secs(1);
const RUN: Duration = Duration::from_secs(4);

/// An RTP packet of [`STREAM`] with sequence number `seq`.
fn rtp(seq: u16) -> Vec<u8> {
    rtp_of(STREAM, 96, seq, 500)
}

/// An RTP packet of `len` bytes of stream `ssrc`, payload type `pt`, with
/// sequence number `seq`.
fn rtp_of(ssrc: u32, pt: u8, seq: u16, len: usize) -> Vec<u8> {
    let mut p = vec![0x80, pt];
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&u32::from(seq).wrapping_mul(3600).to_be_bytes());
    p.extend_from_slice(&ssrc.to_be_bytes());
    p.resize(len, 0x55);
    p
}

/// A sender report of stream `ssrc` (RFC 3550 §6.4.1, no report blocks)
/// whose NTP time and packet count are `k`, followed by an SDES packet
/// with its CNAME: the compound packet an RTP stack sends.
fn sender_report(ssrc: u32, k: u32) -> Vec<u8> {
    let mut p = vec![0x80, 200, 0, 6];
    p.extend_from_slice(&ssrc.to_be_bytes());
    for w in [k, 0, k * 3600, k, k * 100] {
        p.extend_from_slice(&w.to_be_bytes());
    }
    // SDES: one chunk, CNAME "enc" (item, length, text, end, padding).
    p.extend_from_slice(&[0x81, 202, 0, 3]);
    p.extend_from_slice(&ssrc.to_be_bytes());
    p.extend_from_slice(&[1, 3, b'e', b'n', b'c', 0, 0, 0]);
    p
}

/// A goodbye for stream `ssrc` (RFC 3550 §6.6).
fn bye(ssrc: u32) -> Vec<u8> {
    let mut p = vec![0x81, 203, 0, 1];
    p.extend_from_slice(&ssrc.to_be_bytes());
    p
}

/// A full intra request from `sender` for `stream` (RFC 5104 §4.3.1).
fn fir(sender: u32, stream: u32) -> Vec<u8> {
    let mut p = vec![0x84, 206, 0, 4];
    p.extend_from_slice(&sender.to_be_bytes());
    p.extend_from_slice(&[0; 4]);
    p.extend_from_slice(&stream.to_be_bytes());
    p.extend_from_slice(&[1, 0, 0, 0]);
    p
}

fn udp() -> std::net::UdpSocket {
    std::net::UdpSocket::bind("127.0.0.1:0").expect("bind on loopback")
}

fn local(s: &std::net::UdpSocket) -> SocketAddr {
    s.local_addr().expect("local address")
}

/// What a node's run gave: its socket's counters, its peer's, and the
/// last rate the peer offered its application.
type Ran = (NetCounters, PeerCounters, Option<u64>);

/// Run `n` Celerity peers on loopback for `run`, participant 0 the only
/// source (capped at 300 kbit/s), each with the media ports `ports` gives
/// it.
fn start_peers(
    n: usize,
    run: Duration,
    mut ports: impl FnMut(usize) -> MediaPorts,
) -> Vec<tokio::task::JoinHandle<Ran>> {
    let sockets: Vec<_> = (0..n).map(|_| udp()).collect();
    let addrs: Vec<Addr> = (0..n as u32).map(|i| Addr::new(NodeId(i), 5000)).collect();
    let mut book = AddrBook::new();
    for (a, s) in addrs.iter().zip(&sockets) {
        book.insert(*a, local(s)).expect("distinct addresses");
    }
    let epoch = std::time::Instant::now();
    let mut nodes = Vec::new();
    for (me, socket) in sockets.into_iter().enumerate() {
        let mut peer = CelerityPeer::new(CelerityConfig {
            me,
            participants: addrs.clone(),
            flows: (0..n as u32).map(FlowId).collect(),
            model: Model::Deep,
            params: CelerityParams {
                max_rate: Some(Rate::from_kbps_f64(300.0)),
                ..CelerityParams::default()
            },
        })
        .expect("valid configuration");
        peer.set_app_media(true, me == 0);
        let mut node =
            Node::with_epoch_instant(peer, socket, book.clone(), epoch).expect("socket set up");
        node.set_media(ports(me)).expect("media ports");
        nodes.push(tokio::spawn(async move {
            let mut offered = None;
            let done = node
                .run(tokio::time::sleep(run), |_, e| {
                    if let Event::RateOffered { rate, .. } = e {
                        offered = Some(rate.as_bps());
                    }
                })
                .await
                .expect("the socket keeps working");
            (done.counters, done.endpoint.counters().clone(), offered)
        }));
    }
    nodes
}

/// `socket` for Tokio.
fn tokio_udp(socket: std::net::UdpSocket) -> UdpSocket {
    socket.set_nonblocking(true).expect("nonblocking");
    UdpSocket::from_std(socket).expect("Tokio socket")
}

/// Every datagram `socket` gets until half a second after a run of
/// `run`.
fn collect(socket: std::net::UdpSocket, run: Duration) -> tokio::task::JoinHandle<Vec<Vec<u8>>> {
    let socket = tokio_udp(socket);
    tokio::spawn(async move {
        let mut got = Vec::new();
        let mut buf = [0u8; 1500];
        let until = tokio::time::Instant::now() + run + Duration::from_millis(500);
        while let Ok(Ok((n, _))) = tokio::time::timeout_at(until, socket.recv_from(&mut buf)).await
        {
            got.push(buf[..n].to_vec());
        }
        got
    })
}

/// The encoder: [`STREAM`]'s packets from `encoder` to `input`, 25 a
/// second until [`RUN`] ends.
fn encode(encoder: std::net::UdpSocket, input: SocketAddr) -> tokio::task::JoinHandle<()> {
    let encoder = tokio_udp(encoder);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(40));
        for seq in 0..(RUN.as_millis() / 40) as u16 {
            tick.tick().await;
            encoder.send_to(&rtp(seq), input).await.expect("send");
        }
    })
}

#[tokio::test]
async fn an_applications_keyframe_request_reaches_the_encoder() {
    // The applications' sockets: A's media input, the encoder's RTP and
    // RTCP, the decoder's, and B's RTCP port.
    let (input, encoder, encoder_rtcp, decoder, feedback) = (udp(), udp(), udp(), udp(), udp());
    let (input_at, encoder_rtcp_at, decoder_at, feedback_at) = (
        local(&input),
        local(&encoder_rtcp),
        local(&decoder),
        local(&feedback),
    );
    let nodes = start_peers(2, RUN, |me| {
        if me == 0 {
            MediaPorts {
                input: Some(input.try_clone().expect("clone")),
                encoder_feedback: Some(encoder_rtcp_at),
                request_gap: GAP,
                rate_feedback: true,
                ..MediaPorts::default()
            }
        } else {
            MediaPorts {
                outputs: vec![(FlowId(0), decoder_at)],
                feedback: Some(feedback.try_clone().expect("clone")),
                request_gap: GAP,
                ..MediaPorts::default()
            }
        }
    });
    let sending = encode(encoder, input_at);
    // The encoder's RTCP port: every keyframe request it is sent.
    let listening = collect(encoder_rtcp, RUN);
    // The decoder: wait for A's stream, then ask.
    let decoder = tokio_udp(decoder);
    let mut buf = [0u8; 1500];
    let (n, from) = tokio::time::timeout(Duration::from_secs(3), decoder.recv_from(&mut buf))
        .await
        .expect("A's stream reaches the decoder")
        .expect("receive");
    assert_eq!(
        rtcp::rtp_ssrc(&buf[..n]),
        Some(STREAM),
        "delivered unchanged"
    );
    let me = 0xD0_u32;
    let pli = rtcp::picture_loss_indication(me, &[STREAM]);
    // One loss, two requests: a PLI answered to the sending address, and
    // a FIR on the RTCP port soon after.
    decoder.send_to(&pli, from).await.expect("send");
    tokio::time::sleep(Duration::from_millis(100)).await;
    decoder
        .send_to(&fir(me, STREAM), feedback_at)
        .await
        .expect("send");
    // RTP is no request; a stream B delivered none of cannot be asked.
    decoder.send_to(&rtp(9), from).await.expect("send");
    decoder
        .send_to(&rtcp::picture_loss_indication(me, &[STREAM + 1]), from)
        .await
        .expect("send");
    tokio::time::sleep(GAP + Duration::from_millis(500)).await;
    decoder.send_to(&pli[8..], feedback_at).await.expect("send");
    sending.await.expect("encoder task");
    let mut counters: Vec<(NetCounters, PeerCounters, Option<u64>)> = Vec::new();
    for n in nodes {
        counters.push(n.await.expect("node task"));
    }
    let got = listening.await.expect("encoder RTCP task");
    let (asked, rates): (Vec<_>, Vec<_>) = got
        .iter()
        .partition(|p| rtcp::estimated_max_bitrate_of(p).is_none());
    let (a, b) = (&counters[0], &counters[1]);
    assert_eq!(
        (b.0.rtcp_in, b.0.keyframe_asks, b.0.keyframe_asks_dropped),
        (4, 3, 1),
        "B: {:?}",
        b.0
    );
    assert_eq!(b.1.keyframe_requests_sent, 3);
    // The two close together become one: at A, which holds the second as
    // within the gap of the first (or in B's control queue, had it not
    // been flushed between them: a request supersedes one for the same
    // session still queued). The one after the gap is its own.
    let received = a.1.keyframe_requests_received;
    assert!((2..=3).contains(&received), "A received {received}");
    assert_eq!(
        (a.0.encoder_requests, a.0.encoder_requests_held),
        (2, received - 2),
        "A: {:?}",
        a.0
    );
    assert_eq!(asked.len(), 2, "{asked:?}");
    for p in &asked {
        assert_eq!(rtcp::keyframe_requests(p), vec![STREAM], "{p:?}");
        // A compound packet, starting with a receiver report from an SSRC
        // other than the stream's.
        assert_eq!(p[1], 201);
        assert_ne!(&p[4..8], &STREAM.to_be_bytes());
    }
    // The offered rate: once a second at least while the encoder sends
    // (about 3.5 s of the run), and at once when it moves by 3%; the last
    // one sent is within 3% of the last offered.
    let rates: Vec<(u64, Vec<u32>)> = rates
        .iter()
        .filter_map(|p| rtcp::estimated_max_bitrate_of(p))
        .collect();
    assert_eq!(rates.len() as u64, a.0.encoder_rate_reports);
    assert!(rates.len() >= 3, "{rates:?}");
    assert!(
        rates
            .iter()
            .all(|(bps, s)| *bps <= 300_000 && s == &[STREAM]),
        "{rates:?}"
    );
    let last = rates.last().expect("a rate").0 as f64;
    let offered = a.2.expect("A offered a rate") as f64;
    assert!(
        (offered - last).abs() <= 0.03 * last + 1.0,
        "told {last}, offered {offered}"
    );
}

/// The encoder's video and audio streams, and their payload types.
const VIDEO: u32 = 0x0000_0F1D;
const AUDIO: u32 = 0x0000_A0D1;
const VIDEO_PT: u8 = 96;
const AUDIO_PT: u8 = 97;
/// The offered rate at which the encoder below starts its reports: about
/// 2.5 times what it sends, reached about 3.3 s into the run on loopback.
const REPORTS_FROM_BPS: u64 = 200_000;

#[tokio::test]
async fn an_encoders_reports_and_streams_travel_with_its_media() {
    let run = Duration::from_secs(7);
    // A's media input and RTCP input; the encoder's RTP and RTCP sockets;
    // B's decoder's RTP and RTCP ports and B's RTCP input; C's decoder,
    // and its audio decoder's RTP and RTCP ports.
    let (input, input_rtcp, encoder, encoder_rtcp) = (udp(), udp(), udp(), udp());
    let (decoder, decoder_rtcp, feedback, muxed) = (udp(), udp(), udp(), udp());
    let (audio, audio_rtcp) = (udp(), udp());
    let (audio_at, audio_rtcp_at) = (local(&audio), local(&audio_rtcp));
    let (input_at, input_rtcp_at, encoder_rtcp_at, feedback_at) = (
        local(&input),
        local(&input_rtcp),
        local(&encoder_rtcp),
        local(&feedback),
    );
    let (decoder_at, decoder_rtcp_at, muxed_at) =
        (local(&decoder), local(&decoder_rtcp), local(&muxed));
    let nodes = start_peers(3, run, |me| match me {
        0 => MediaPorts {
            input: Some(input.try_clone().expect("clone")),
            input_rtcp: Some(input_rtcp.try_clone().expect("clone")),
            encoder_feedback: Some(encoder_rtcp_at),
            request_gap: GAP,
            rate_feedback: true,
            ..MediaPorts::default()
        },
        1 => MediaPorts {
            outputs: vec![(FlowId(0), decoder_at)],
            rtcp_outputs: vec![(FlowId(0), decoder_rtcp_at)],
            feedback: Some(feedback.try_clone().expect("clone")),
            request_gap: GAP,
            ..MediaPorts::default()
        },
        _ => MediaPorts {
            outputs: vec![(FlowId(0), muxed_at)],
            type_outputs: vec![TypeOutput {
                flow: FlowId(0),
                payload_type: AUDIO_PT,
                rtp: audio_at,
                rtcp: Some(audio_rtcp_at),
            }],
            request_gap: GAP,
            ..MediaPorts::default()
        },
    });
    let (at_decoder, at_decoder_rtcp, at_muxed) = (
        collect(decoder, run),
        collect(decoder_rtcp, run),
        collect(muxed, run),
    );
    let (at_audio, at_audio_rtcp) = (collect(audio, run), collect(audio_rtcp, run));
    // The encoder: video (300 bytes) and audio (80 bytes) every 40 ms,
    // about 76 kbit/s. As a WebRTC sender would, it waits for the node's
    // REMB to offer room before its reports start (units that wait for
    // the rate at the source past the delay bound are dropped there);
    // then a report, a datagram that is not RTCP, a second report, a
    // goodbye to the audio stream (which stops), a last report.
    let (started, mut start) = tokio::sync::watch::channel(None);
    let encoder = tokio_udp(encoder);
    let encoder_rtcp = tokio_udp(encoder_rtcp);
    let encoding = tokio::spawn(async move {
        let (mut reports, mut got) = (Vec::new(), Vec::new());
        let mut tick = tokio::time::interval(Duration::from_millis(40));
        let stop = tokio::time::Instant::now() + run;
        let (mut k, mut from, mut audio) = (0u16, None, true);
        let mut buf = [0u8; 1500];
        loop {
            tokio::select! {
                now = tick.tick() => {
                    if now >= stop {
                        break;
                    }
                    let video = rtp_of(VIDEO, VIDEO_PT, k, 300);
                    encoder.send_to(&video, input_at).await.expect("send");
                    if audio {
                        let audio = rtp_of(AUDIO, AUDIO_PT, k, 80);
                        encoder.send_to(&audio, input_at).await.expect("send");
                    }
                    let since = from.map(|f| k - f);
                    let report = match since {
                        Some(0 | 12 | 40) => Some(sender_report(VIDEO, u32::from(k))),
                        Some(25) => {
                            audio = false;
                            Some([sender_report(AUDIO, u32::from(k)), bye(AUDIO)].concat())
                        }
                        _ => None,
                    };
                    if let Some(r) = report {
                        encoder.send_to(&r, input_rtcp_at).await.expect("send");
                        reports.push(r);
                    }
                    if since == Some(5) {
                        let stray = rtp_of(VIDEO, VIDEO_PT, k, 100);
                        encoder.send_to(&stray, input_rtcp_at).await.expect("send");
                    }
                    k += 1;
                }
                r = encoder_rtcp.recv_from(&mut buf) => {
                    let (n, _) = r.expect("receive");
                    let p = buf[..n].to_vec();
                    if from.is_none()
                        && rtcp::estimated_max_bitrate_of(&p).is_some_and(|r| r.0 >= REPORTS_FROM_BPS)
                    {
                        from = Some(k);
                        started.send_replace(Some(tokio::time::Instant::now()));
                    }
                    got.push(p);
                }
            }
        }
        // What else comes within half a second.
        while let Ok(Ok((n, _))) =
            tokio::time::timeout(Duration::from_millis(500), encoder_rtcp.recv_from(&mut buf)).await
        {
            got.push(buf[..n].to_vec());
        }
        (reports, got)
    });
    // B's decoder asks for a keyframe of the video 0.3 s after the reports
    // start, while the audio plays, and again 1.8 s after, past the audio's
    // goodbye (at 1 s) and the gap.
    let t0 = *start
        .wait_for(Option::is_some)
        .await
        .expect("the offered rate reaches the encoder's start");
    let t0 = t0.expect("started");
    let asker = tokio_udp(udp());
    let pli = rtcp::picture_loss_indication(0xD0, &[VIDEO]);
    for at in [300, 1800] {
        tokio::time::sleep_until(t0 + Duration::from_millis(at)).await;
        asker.send_to(&pli, feedback_at).await.expect("send");
    }
    let (reports, got) = encoding.await.expect("encoder task");
    let mut counters: Vec<Ran> = Vec::new();
    for n in nodes {
        counters.push(n.await.expect("node task"));
    }
    let (a, b, c) = (&counters[0], &counters[1], &counters[2]);
    assert_eq!((a.0.encoder_reports, a.0.not_rtcp), (4, 1), "A: {:?}", a.0);
    // B: the reports, unchanged and in order, on the decoder's RTCP port;
    // only RTP, of both streams, on its RTP port.
    let (rtcp_b, rtp_b) = (
        at_decoder_rtcp.await.expect("task"),
        at_decoder.await.expect("task"),
    );
    assert_eq!(rtcp_b, reports, "A: {:?}", a.1);
    assert_eq!(b.0.rtcp_out, 4, "B: {:?}", b.0);
    assert!(rtp_b.iter().all(|p| !rtcp::is_rtcp(p)));
    for s in [VIDEO, AUDIO] {
        assert!(rtp_b.iter().any(|p| rtcp::rtp_ssrc(p) == Some(s)), "{s:x}");
    }
    // C, with no RTCP port for the flow: the video's reports among the
    // video's RTP; the audio's RTP on its own port, and its report and
    // goodbye on its RTCP port.
    let at_c = at_muxed.await.expect("task");
    let rtcp_c: Vec<_> = at_c.iter().filter(|p| rtcp::is_rtcp(p)).cloned().collect();
    let (audio_reports, video_reports): (Vec<_>, Vec<_>) = reports
        .iter()
        .cloned()
        .partition(|r| rtcp::rtcp_ssrc(r) == Some(AUDIO));
    assert_eq!(rtcp_c, video_reports);
    assert!(
        at_c.iter()
            .filter_map(|p| rtcp::rtp_ssrc(p))
            .all(|s| s == VIDEO)
    );
    let (rtp_audio, rtcp_audio) = (
        at_audio.await.expect("task"),
        at_audio_rtcp.await.expect("task"),
    );
    assert!(!rtp_audio.is_empty());
    assert!(
        rtp_audio
            .iter()
            .all(|p| rtcp::payload_type(p) == Some(AUDIO_PT))
    );
    assert_eq!(rtcp_audio, audio_reports);
    assert_eq!(c.0.rtcp_out, 1, "C: {:?}", c.0);
    let delivered = at_c.len() + rtp_audio.len() + rtcp_audio.len();
    assert_eq!(c.0.media_out, delivered as u64);
    // The encoder: a keyframe request for both streams while both play,
    // for the video alone after the audio's goodbye; the REMBs likewise.
    let asked: Vec<Vec<u32>> = got
        .iter()
        .filter(|p| rtcp::estimated_max_bitrate_of(p).is_none())
        .map(|p| rtcp::keyframe_requests(p))
        .collect();
    assert_eq!(asked, vec![vec![VIDEO, AUDIO], vec![VIDEO]]);
    let named: Vec<Vec<u32>> = got
        .iter()
        .filter_map(|p| rtcp::estimated_max_bitrate_of(p))
        .map(|r| r.1)
        .collect();
    let both = named.iter().take_while(|s| s == &&[VIDEO, AUDIO]).count();
    assert!(both >= 1, "{named:?}");
    assert!(named.len() > both, "{named:?}");
    assert!(named[both..].iter().all(|s| s == &[VIDEO]), "{named:?}");
}

/// A reception report block about stream `ssrc`, its other words `k`
/// (loss, highest sequence number, jitter, last sender report and the
/// delay since it, as an RTP stack fills them).
fn report_block(ssrc: u32, k: u8) -> rtcp::ReportBlock {
    let mut b = [k; rtcp::REPORT_BLOCK_BYTES];
    b[..4].copy_from_slice(&ssrc.to_be_bytes());
    b
}

/// Three peers on loopback for [`RUN`], A's encoder sending [`STREAM`]
/// to B's and C's decoders, once both decoders got its first packet; B's
/// decoder has a feedback (RTCP) port of its own, C's answers the address
/// its RTP came from.
struct Trio {
    nodes: Vec<tokio::task::JoinHandle<Ran>>,
    sending: tokio::task::JoinHandle<()>,
    /// What A's encoder gets on its RTCP port.
    listening: tokio::task::JoinHandle<Vec<Vec<u8>>>,
    decoder_b: UdpSocket,
    decoder_c: UdpSocket,
    /// B's feedback port.
    feedback_at: SocketAddr,
    /// Where C's RTP came from.
    c_from: SocketAddr,
}

async fn trio() -> Trio {
    // A's media input and the encoder's RTP and RTCP sockets; B's decoder
    // and B's RTCP port; C's decoder.
    let (input, encoder, encoder_rtcp) = (udp(), udp(), udp());
    let (decoder_b, feedback_b, decoder_c) = (udp(), udp(), udp());
    let (input_at, encoder_rtcp_at, feedback_at) =
        (local(&input), local(&encoder_rtcp), local(&feedback_b));
    let (decoder_b_at, decoder_c_at) = (local(&decoder_b), local(&decoder_c));
    let nodes = start_peers(3, RUN, |me| match me {
        0 => MediaPorts {
            input: Some(input.try_clone().expect("clone")),
            encoder_feedback: Some(encoder_rtcp_at),
            request_gap: GAP,
            ..MediaPorts::default()
        },
        1 => MediaPorts {
            outputs: vec![(FlowId(0), decoder_b_at)],
            feedback: Some(feedback_b.try_clone().expect("clone")),
            request_gap: GAP,
            ..MediaPorts::default()
        },
        _ => MediaPorts {
            outputs: vec![(FlowId(0), decoder_c_at)],
            request_gap: GAP,
            ..MediaPorts::default()
        },
    });
    let sending = encode(encoder, input_at);
    let listening = collect(encoder_rtcp, RUN);
    // Both decoders wait for A's stream.
    let (decoder_b, decoder_c) = (tokio_udp(decoder_b), tokio_udp(decoder_c));
    let mut buf = [0u8; 1500];
    let wait = Duration::from_secs(3);
    let _ = tokio::time::timeout(wait, decoder_b.recv_from(&mut buf))
        .await
        .expect("A's stream reaches B's decoder")
        .expect("receive");
    let (_, c_from) = tokio::time::timeout(wait, decoder_c.recv_from(&mut buf))
        .await
        .expect("A's stream reaches C's decoder")
        .expect("receive");
    Trio {
        nodes,
        sending,
        listening,
        decoder_b,
        decoder_c,
        feedback_at,
        c_from,
    }
}

impl Trio {
    /// Wait for the run's end: each node's counters, and what A's encoder
    /// got on its RTCP port.
    async fn end(self) -> (Vec<Ran>, Vec<Vec<u8>>) {
        self.sending.await.expect("encoder task");
        let mut counters: Vec<Ran> = Vec::new();
        for n in self.nodes {
            counters.push(n.await.expect("node task"));
        }
        (counters, self.listening.await.expect("encoder RTCP task"))
    }
}

#[tokio::test]
async fn receivers_reception_reports_reach_the_encoder() {
    let t = trio().await;
    let (decoder_b, decoder_c) = (&t.decoder_b, &t.decoder_c);
    let (feedback_at, c_from) = (t.feedback_at, t.c_from);
    let (b, c) = (0xB0_u32, 0xC0_u32);
    // B's decoder reports on its RTCP port: a block about A's stream and
    // one about a stream B delivered none of (dropped); 100 ms later again
    // (within the gap: it waits for the gap to pass), and 100 ms after
    // that again (it replaces the waiting block, and goes when the gap has
    // passed); 600 ms later a report of twelve blocks (within the gap of
    // the second report: it waits; then ten pass, as a report the overlay
    // carries holds ten).
    let b_first = report_block(STREAM, 1);
    let stray = report_block(STREAM + 1, 2);
    let (b_again, b_newer) = (report_block(STREAM, 3), report_block(STREAM, 5));
    let b_many: Vec<_> = (0..12).map(|k| report_block(STREAM, 10 + k)).collect();
    let reports = [
        (0, vec![b_first, stray]),
        (100, vec![b_again]),
        (100, vec![b_newer]),
        (600, b_many.clone()),
    ];
    for (after_ms, blocks) in reports {
        tokio::time::sleep(Duration::from_millis(after_ms)).await;
        decoder_b
            .send_to(&rtcp::receiver_report(b, &blocks), feedback_at)
            .await
            .expect("send");
    }
    // C's decoder, which also sends (a sender report), answers the
    // address its RTP came from, its block among its own goodbye.
    let c_block = report_block(STREAM, 4);
    let mut sr = vec![0x81, 200, 0, 12];
    sr.extend_from_slice(&c.to_be_bytes());
    sr.extend_from_slice(&[0; 20]);
    sr.extend_from_slice(&c_block);
    sr.extend_from_slice(&bye(c));
    decoder_c.send_to(&sr, c_from).await.expect("send");
    let (counters, got) = t.end().await;
    let (a, b_ran, c_ran) = (&counters[0], &counters[1], &counters[2]);
    assert_eq!(
        (
            b_ran.0.reception_reports,
            b_ran.0.reception_blocks_dropped,
            b_ran.0.reception_blocks_replaced
        ),
        (3, 3, 1),
        "B: {:?}",
        b_ran.0
    );
    assert_eq!(
        (c_ran.0.reception_reports, c_ran.0.reception_blocks_dropped),
        (1, 0),
        "C: {:?}",
        c_ran.0
    );
    assert_eq!(
        (
            b_ran.1.reception_reports_sent,
            c_ran.1.reception_reports_sent
        ),
        (3, 1)
    );
    assert_eq!(a.1.reception_reports_received, 4);
    assert_eq!(
        (
            a.0.encoder_reception_reports,
            a.0.encoder_reception_reports_held
        ),
        (4, 0),
        "A: {:?}",
        a.0
    );
    // The encoder got each as one receiver report from its application,
    // its blocks as they were sent (C's before or after B's second): B's
    // second is its newest block of the three within the gap.
    let mut reports: Vec<Vec<(u32, rtcp::ReportBlock)>> =
        got.iter().map(|p| rtcp::reception_blocks(p)).collect();
    assert!(got.iter().all(|p| p[1] == 201), "{got:?}");
    reports.sort();
    let mut want = vec![
        vec![(b, b_first)],
        vec![(b, b_newer)],
        b_many[..10].iter().map(|&k| (b, k)).collect(),
        vec![(c, c_block)],
    ];
    want.sort();
    assert_eq!(reports, want);
}

/// `k` NACK entries from `first`: a lost packet's sequence number each,
/// its mask of the 16 after it `mask`.
fn nack_entries(first: u16, k: u16, mask: u16) -> Vec<rtcp::NackEntry> {
    (0..k)
        .map(|i| {
            let [a, b] = (first + 20 * i).to_be_bytes();
            let [c, d] = mask.to_be_bytes();
            [a, b, c, d]
        })
        .collect()
}

#[tokio::test]
async fn receivers_retransmission_requests_reach_the_encoder() {
    let t = trio().await;
    let (decoder_b, decoder_c) = (&t.decoder_b, &t.decoder_c);
    let (feedback_at, c_from) = (t.feedback_at, t.c_from);
    let (b, c) = (0xB0_u32, 0xC0_u32);
    let request = |from, nacks: &[(u32, Vec<rtcp::NackEntry>)]| {
        rtcp::retransmission_request(from, nacks, 1500).0
    };
    // B's decoder asks on its RTCP port: in one datagram, for two of A's
    // packets and two of a stream B delivered none of (dropped); then at
    // once in ten datagrams of one entry each (seven pass: a burst is
    // eight); 200 ms later (five more in the budget) for 70 packets (57
    // pass: a request the overlay carries holds 57 entries).
    let first = nack_entries(100, 2, 0x8001);
    decoder_b
        .send_to(
            &request(
                b,
                &[(STREAM, first.clone()), (STREAM + 1, nack_entries(7, 2, 0))],
            ),
            feedback_at,
        )
        .await
        .expect("send");
    let burst: Vec<_> = (0..10).map(|i| nack_entries(200 + i, 1, 0)).collect();
    for e in &burst {
        decoder_b
            .send_to(&request(b, &[(STREAM, e.clone())]), feedback_at)
            .await
            .expect("send");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let many = nack_entries(300, 70, 0xFFFF);
    decoder_b
        .send_to(&request(b, &[(STREAM, many.clone())]), feedback_at)
        .await
        .expect("send");
    // C's decoder answers the address its RTP came from with a NACK alone
    // (reduced-size RTCP).
    let c_entries = nack_entries(400, 1, 0x0002);
    decoder_c
        .send_to(&request(c, &[(STREAM, c_entries.clone())])[8..], c_from)
        .await
        .expect("send");
    let (counters, got) = t.end().await;
    let (a, b_ran, c_ran) = (&counters[0], &counters[1], &counters[2]);
    assert_eq!(
        (
            b_ran.0.retransmission_requests,
            b_ran.0.nack_entries_dropped
        ),
        (9, 2 + 3 + 13),
        "B: {:?}",
        b_ran.0
    );
    assert_eq!(
        (
            c_ran.0.retransmission_requests,
            c_ran.0.nack_entries_dropped
        ),
        (1, 0),
        "C: {:?}",
        c_ran.0
    );
    assert_eq!(
        (
            b_ran.1.retransmission_requests_sent,
            c_ran.1.retransmission_requests_sent,
            a.1.retransmission_requests_received
        ),
        (9, 1, 10)
    );
    assert_eq!(
        (
            a.0.encoder_retransmission_requests,
            a.0.encoder_retransmission_requests_held,
            a.0.encoder_reception_reports
        ),
        (10, 0, 0),
        "A: {:?}",
        a.0
    );
    // The encoder got each as an empty receiver report from its decoder
    // and the NACKs about its stream as they were sent: B's in order
    // (C's anywhere among them).
    assert!(got.iter().all(|p| p[..4] == [0x80, 201, 0, 1]), "{got:?}");
    let asked: Vec<_> = got.iter().map(|p| rtcp::generic_nacks(p)).collect();
    let from_b: Vec<_> = asked.iter().filter(|r| r[0].0 == b).cloned().collect();
    let mut want = vec![vec![(b, STREAM, first)]];
    want.extend(burst[..7].iter().map(|e| vec![(b, STREAM, e.clone())]));
    want.push(vec![(b, STREAM, many[..57].to_vec())]);
    assert_eq!(from_b, want);
    assert!(asked.contains(&vec![(c, STREAM, c_entries)]), "{asked:?}");
}
