//! Wire format of the transport packets (docs/wire-format.md, "Transport
//! flows"). After the common header every packet carries the flow id
//! (u32); all integers big-endian.
//!
//! | type | body after `flow` | bytes incl. common header |
//! |---|---|---|
//! | 4 TCP segment | `seq` u64, `sent_ns` u64, then zero padding to the segment size | 24 + padding |
//! | 5 TCP ACK | `next` u64, `echo_ns` u64 | 24 |
//! | 6 TFRC data | `seq` u64, `sent_ns` u64, `rtt_us` u32, `flags` u8 (bit 0: break_ss; others zero), then the application payload | 29 + payload |
//! | 7 TFRC feedback | `echo_ns` u64, `delay_ns` u64, `x_recv_bps` u64, `p` u32 (p · (2³² − 1), rounded), `loss_events` u32 | 40 |

use crate::wire::{COMMON_HEADER_LEN, CommonHeader, PacketType, WireError, be_u32, be_u64};
use meshcast_control::tcp::{Ack, Segment};
use meshcast_control::tfrc::{DataInfo, Feedback};
use meshcast_core::{Duration, FlowId, Rate, Time};

/// Header bytes of a TCP-model segment: the smallest segment size.
pub const TCP_SEGMENT_HEADER_LEN: usize = COMMON_HEADER_LEN + 20;
/// Bytes of a TCP-model ACK.
pub const TCP_ACK_LEN: usize = COMMON_HEADER_LEN + 20;
/// Header bytes of a TFRC data packet (the payload follows).
pub const TFRC_DATA_HEADER_LEN: usize = COMMON_HEADER_LEN + 25;
/// Bytes of a TFRC feedback packet.
pub const TFRC_FEEDBACK_LEN: usize = COMMON_HEADER_LEN + 36;

const FLAG_BREAK_SS: u8 = 1;

/// Check the common header is `ty` and the packet at least `len` bytes.
pub(crate) fn expect(buf: &[u8], ty: PacketType, len: usize) -> Result<FlowId, WireError> {
    let common = CommonHeader::parse(buf)?;
    if common.packet_type != ty {
        return Err(WireError::WrongType {
            expected: ty,
            got: common.packet_type,
        });
    }
    if buf.len() < len {
        return Err(WireError::Truncated {
            needed: len,
            got: buf.len(),
        });
    }
    Ok(FlowId(be_u32(buf, COMMON_HEADER_LEN)))
}

/// A buffer of `len` bytes starting with the common header of `ty` and
/// `flow`; the caller appends the rest.
pub(crate) fn start(ty: PacketType, flow: FlowId, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut common = [0u8; COMMON_HEADER_LEN];
    CommonHeader { packet_type: ty }.emit(&mut common);
    out.extend_from_slice(&common);
    out.extend_from_slice(&flow.0.to_be_bytes());
    out
}

/// Parse a TCP-model segment.
pub fn parse_tcp_segment(buf: &[u8]) -> Result<(FlowId, Segment), WireError> {
    let flow = expect(buf, PacketType::TcpSegment, TCP_SEGMENT_HEADER_LEN)?;
    Ok((
        flow,
        Segment {
            seq: be_u64(buf, 8),
            sent_at: Time::from_nanos(be_u64(buf, 16)),
            retransmission: false,
        },
    ))
}

/// Emit a TCP-model segment padded to `segment_bytes` (at least the
/// header).
pub fn emit_tcp_segment(flow: FlowId, seg: &Segment, segment_bytes: u32) -> Vec<u8> {
    let len = (segment_bytes as usize).max(TCP_SEGMENT_HEADER_LEN);
    let mut out = start(PacketType::TcpSegment, flow, len);
    out.extend_from_slice(&seg.seq.to_be_bytes());
    out.extend_from_slice(&seg.sent_at.as_nanos().to_be_bytes());
    out.resize(len, 0);
    out
}

/// Parse a TCP-model ACK.
pub fn parse_tcp_ack(buf: &[u8]) -> Result<(FlowId, Ack), WireError> {
    let flow = expect(buf, PacketType::TcpAck, TCP_ACK_LEN)?;
    Ok((
        flow,
        Ack {
            next: be_u64(buf, 8),
            echo: Time::from_nanos(be_u64(buf, 16)),
        },
    ))
}

/// Emit a TCP-model ACK.
pub fn emit_tcp_ack(flow: FlowId, ack: &Ack) -> Vec<u8> {
    let mut out = start(PacketType::TcpAck, flow, TCP_ACK_LEN);
    out.extend_from_slice(&ack.next.to_be_bytes());
    out.extend_from_slice(&ack.echo.as_nanos().to_be_bytes());
    out
}

/// Parse a TFRC data packet: its flow, header and application payload.
pub fn parse_tfrc_data(buf: &[u8]) -> Result<(FlowId, DataInfo, &[u8]), WireError> {
    let flow = expect(buf, PacketType::TfrcData, TFRC_DATA_HEADER_LEN)?;
    let flags = buf[28];
    if flags & !FLAG_BREAK_SS != 0 {
        return Err(WireError::Flags(u16::from(flags)));
    }
    let info = DataInfo {
        seq: be_u64(buf, 8),
        sent_at: Time::from_nanos(be_u64(buf, 16)),
        rtt: Duration::from_micros(u64::from(be_u32(buf, 24))),
        break_ss: flags & FLAG_BREAK_SS != 0,
    };
    Ok((flow, info, &buf[TFRC_DATA_HEADER_LEN..]))
}

/// Emit a TFRC data packet carrying `payload`.
pub fn emit_tfrc_data(flow: FlowId, info: &DataInfo, payload: &[u8]) -> Vec<u8> {
    let mut out = start(
        PacketType::TfrcData,
        flow,
        TFRC_DATA_HEADER_LEN + payload.len(),
    );
    out.extend_from_slice(&info.seq.to_be_bytes());
    out.extend_from_slice(&info.sent_at.as_nanos().to_be_bytes());
    let rtt_us = u32::try_from(info.rtt.as_nanos() / 1_000).unwrap_or(u32::MAX);
    out.extend_from_slice(&rtt_us.to_be_bytes());
    out.push(if info.break_ss { FLAG_BREAK_SS } else { 0 });
    out.extend_from_slice(payload);
    out
}

/// Parse a TFRC feedback packet.
pub fn parse_tfrc_feedback(buf: &[u8]) -> Result<(FlowId, Feedback), WireError> {
    let flow = expect(buf, PacketType::TfrcFeedback, TFRC_FEEDBACK_LEN)?;
    Ok((
        flow,
        Feedback {
            echo_sent_at: Time::from_nanos(be_u64(buf, 8)),
            delay: Duration::from_nanos(be_u64(buf, 16)),
            x_recv: Rate::from_bps(be_u64(buf, 24)),
            p: f64::from(be_u32(buf, 32)) / f64::from(u32::MAX),
            loss_events: be_u32(buf, 36),
        },
    ))
}

/// Emit a TFRC feedback packet; `p` is clamped to [0, 1] and a positive `p`
/// never rounds to zero.
pub fn emit_tfrc_feedback(flow: FlowId, fb: &Feedback) -> Vec<u8> {
    let mut out = start(PacketType::TfrcFeedback, flow, TFRC_FEEDBACK_LEN);
    out.extend_from_slice(&fb.echo_sent_at.as_nanos().to_be_bytes());
    out.extend_from_slice(&fb.delay.as_nanos().to_be_bytes());
    out.extend_from_slice(&fb.x_recv.as_bps().to_be_bytes());
    let p = (fb.p.clamp(0.0, 1.0) * f64::from(u32::MAX)).round() as u32;
    let p = if fb.p > 0.0 { p.max(1) } else { p };
    out.extend_from_slice(&p.to_be_bytes());
    out.extend_from_slice(&fb.loss_events.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips() {
        let seg = Segment {
            seq: 7,
            sent_at: Time::from_nanos(123),
            retransmission: false,
        };
        let b = emit_tcp_segment(FlowId(3), &seg, 1000);
        assert_eq!(b.len(), 1000);
        assert_eq!(parse_tcp_segment(&b), Ok((FlowId(3), seg)));
        let ack = Ack {
            next: 9,
            echo: Time::from_nanos(5),
        };
        let b = emit_tcp_ack(FlowId(3), &ack);
        assert_eq!(b.len(), TCP_ACK_LEN);
        assert_eq!(parse_tcp_ack(&b), Ok((FlowId(3), ack)));
        let info = DataInfo {
            seq: 1 << 40,
            sent_at: Time::from_millis(5),
            rtt: Duration::from_micros(100_250),
            break_ss: true,
        };
        let b = emit_tfrc_data(FlowId(1), &info, b"media");
        assert_eq!(b.len(), TFRC_DATA_HEADER_LEN + 5);
        assert_eq!(parse_tfrc_data(&b), Ok((FlowId(1), info, &b"media"[..])));
        let fb = Feedback {
            echo_sent_at: Time::from_millis(1),
            delay: Duration::from_micros(3),
            x_recv: Rate::from_kbps(640),
            p: 0.25,
            loss_events: 4,
        };
        let b = emit_tfrc_feedback(FlowId(1), &fb);
        assert_eq!(b.len(), TFRC_FEEDBACK_LEN);
        let (_, got) = parse_tfrc_feedback(&b).expect("parses");
        assert!((got.p - 0.25).abs() < 1e-9);
        assert_eq!(got.x_recv, fb.x_recv);
        // A tiny p stays positive.
        let tiny = Feedback { p: 1e-12, ..fb };
        let (_, got) = parse_tfrc_feedback(&emit_tfrc_feedback(FlowId(1), &tiny)).expect("ok");
        assert!(got.p > 0.0);
    }

    #[test]
    fn errors() {
        let ack = emit_tcp_ack(
            FlowId(1),
            &Ack {
                next: 1,
                echo: Time::ZERO,
            },
        );
        assert!(matches!(
            parse_tcp_segment(&ack),
            Err(WireError::WrongType { .. })
        ));
        assert_eq!(
            parse_tcp_ack(&ack[..10]),
            Err(WireError::Truncated {
                needed: 24,
                got: 10
            })
        );
        let mut d = emit_tfrc_data(
            FlowId(1),
            &DataInfo {
                seq: 0,
                sent_at: Time::ZERO,
                rtt: Duration::ZERO,
                break_ss: false,
            },
            &[],
        );
        d[28] = 0x82;
        assert_eq!(parse_tfrc_data(&d), Err(WireError::Flags(0x82)));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_tcp_segment(&bytes);
            let _ = parse_tcp_ack(&bytes);
            let _ = parse_tfrc_data(&bytes);
            let _ = parse_tfrc_feedback(&bytes);
        }
    }
}
