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

use meshcast_core::{Addr, Event, FlowId, NodeId, Rate};
use meshcast_net::{AddrBook, MediaPorts, NetCounters, Node, rtcp};
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
    let mut p = vec![0x80, 96];
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&u32::from(seq).wrapping_mul(3600).to_be_bytes());
    p.extend_from_slice(&STREAM.to_be_bytes());
    p.resize(500, 0x55);
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

#[tokio::test]
async fn an_applications_keyframe_request_reaches_the_encoder() {
    let peers = [udp(), udp()];
    let addrs: Vec<Addr> = (0..2).map(|i| Addr::new(NodeId(i), 5000)).collect();
    let mut book = AddrBook::new();
    for (a, s) in addrs.iter().zip(&peers) {
        book.insert(*a, local(s)).expect("distinct addresses");
    }
    // The applications' sockets: A's media input, the encoder's RTP and
    // RTCP, the decoder's, and B's RTCP port.
    let (input, encoder, encoder_rtcp, decoder, feedback) = (udp(), udp(), udp(), udp(), udp());
    let (input_at, encoder_rtcp_at, decoder_at, feedback_at) = (
        local(&input),
        local(&encoder_rtcp),
        local(&decoder),
        local(&feedback),
    );
    let epoch = std::time::Instant::now();
    let mut nodes = Vec::new();
    for (me, socket) in peers.into_iter().enumerate() {
        let mut peer = CelerityPeer::new(CelerityConfig {
            me,
            participants: addrs.clone(),
            flows: vec![FlowId(0), FlowId(1)],
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
        node.set_media(if me == 0 {
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
        })
        .expect("media ports");
        nodes.push(tokio::spawn(async move {
            // The last rate the peer offered its application.
            let mut offered = None;
            let done = node
                .run(tokio::time::sleep(RUN), |_, e| {
                    if let Event::RateOffered { rate, .. } = e {
                        offered = Some(rate.as_bps());
                    }
                })
                .await
                .expect("the socket keeps working");
            (done.counters, done.endpoint.counters().clone(), offered)
        }));
    }
    // The encoder: 25 packets a second until the run ends.
    let encoder = UdpSocket::from_std({
        encoder.set_nonblocking(true).expect("nonblocking");
        encoder
    })
    .expect("encoder socket");
    let sending = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(40));
        for seq in 0..(RUN.as_millis() / 40) as u16 {
            tick.tick().await;
            encoder.send_to(&rtp(seq), input_at).await.expect("send");
        }
    });
    // The encoder's RTCP port: every keyframe request it is sent.
    let encoder_rtcp = UdpSocket::from_std({
        encoder_rtcp.set_nonblocking(true).expect("nonblocking");
        encoder_rtcp
    })
    .expect("encoder RTCP socket");
    let listening = tokio::spawn(async move {
        let mut asked = Vec::new();
        let mut buf = [0u8; 1500];
        let until = tokio::time::Instant::now() + RUN + Duration::from_millis(500);
        while let Ok(Ok((n, _))) =
            tokio::time::timeout_at(until, encoder_rtcp.recv_from(&mut buf)).await
        {
            asked.push(buf[..n].to_vec());
        }
        asked
    });
    // The decoder: wait for A's stream, then ask.
    decoder.set_nonblocking(true).expect("nonblocking");
    let decoder = UdpSocket::from_std(decoder).expect("decoder socket");
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
    let pli = rtcp::picture_loss_indication(me, STREAM);
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
        .send_to(&rtcp::picture_loss_indication(me, STREAM + 1), from)
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
