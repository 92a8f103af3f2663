//! Wire format of MSB (docs/wire-format.md, "Type 8 and MSB media").
//!
//! Media travels hop by hop as the payload of TFRC data packets (type 6):
//! each hop's TFRC header, then the MSB media header below, then the media.
//! NACKs (to the previous hop) and ACKs (relayed towards the source) are
//! packet type 8. All integers big-endian.
//!
//! MSB media header (24 bytes, at the start of the TFRC payload):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | `frame`: frame number, from 0 |
//! | 4 | 1 | `layer`: 1 (base) ..= layers |
//! | 5 | 1 | `index`: packet of the layer, from 0 |
//! | 6 | 1 | `retx`: retransmissions of this packet so far, any hop |
//! | 7 | 1 | flags, none defined, must be zero |
//! | 8 | 8 | `generated_ns`: generation time G on the source's clock |
//! | 16 | 8 | `deadline_ns`: presentation deadline D on the source's clock |
//!
//! Type 8, after the common header and the flow id (u32), a `kind` byte:
//!
//! | kind | body | meaning |
//! |---|---|---|
//! | 1 NACK | `count` u16 (1..=[`MAX_NACK_SEQS`]), `count` × hop sequence number u64 | these TFRC sequence numbers of the hop were lost |
//! | 2 ACK | `frame` u32, `rtt_us` u32 | the receiver presented every frame up to `frame`; the sender of this ACK is `rtt_us` of round trip from the receiver |

use crate::transport::wire::{expect, start};
use crate::wire::{COMMON_HEADER_LEN, PacketType, WireError, be_u16, be_u32, be_u64};
use meshcast_core::{Duration, FlowId, Time};

/// Bytes of the MSB media header.
pub const MEDIA_HEADER_LEN: usize = 24;

/// Most sequence numbers one NACK carries.
pub const MAX_NACK_SEQS: usize = 128;

const CONTROL_HEADER_LEN: usize = COMMON_HEADER_LEN + 4 + 1;
const KIND_NACK: u8 = 1;
const KIND_ACK: u8 = 2;
const ACK_LEN: usize = CONTROL_HEADER_LEN + 8;

/// The MSB media header of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaHeader {
    /// Frame number.
    pub frame: u32,
    /// Layer, 1 = base.
    pub layer: u8,
    /// Packet of the layer.
    pub index: u8,
    /// Retransmissions so far (any hop).
    pub retx: u8,
    /// Generation time G.
    pub generated_at: Time,
    /// Presentation deadline D.
    pub deadline: Time,
}

impl MediaHeader {
    /// Append the header to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frame.to_be_bytes());
        out.extend_from_slice(&[self.layer, self.index, self.retx, 0]);
        out.extend_from_slice(&self.generated_at.as_nanos().to_be_bytes());
        out.extend_from_slice(&self.deadline.as_nanos().to_be_bytes());
    }

    /// Parse the header at the start of a TFRC payload; returns it and the
    /// media after it.
    pub fn parse(buf: &[u8]) -> Result<(MediaHeader, &[u8]), WireError> {
        if buf.len() < MEDIA_HEADER_LEN {
            return Err(WireError::Truncated {
                needed: MEDIA_HEADER_LEN,
                got: buf.len(),
            });
        }
        if buf[7] != 0 {
            return Err(WireError::Flags(u16::from(buf[7])));
        }
        if buf[4] == 0 {
            return Err(WireError::Malformed("MSB layer 0 (layers count from 1)"));
        }
        let h = MediaHeader {
            frame: be_u32(buf, 0),
            layer: buf[4],
            index: buf[5],
            retx: buf[6],
            generated_at: Time::from_nanos(be_u64(buf, 8)),
            deadline: Time::from_nanos(be_u64(buf, 16)),
        };
        if h.deadline < h.generated_at {
            return Err(WireError::Malformed("MSB deadline before generation"));
        }
        Ok((h, &buf[MEDIA_HEADER_LEN..]))
    }
}

/// An MSB control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Hop sequence numbers the receiving end of a hop found missing.
    Nack(Vec<u64>),
    /// End-to-end acknowledgement, relayed towards the source.
    Ack {
        /// Every frame up to this one has been presented.
        frame: u32,
        /// Round trip from the ACK's sender to the receiver (zero from the
        /// receiver itself).
        rtt_to_receiver: Duration,
    },
}

/// Emit a control packet of `flow`. A NACK with more than
/// [`MAX_NACK_SEQS`] sequence numbers keeps the first ones.
pub fn emit_control(flow: FlowId, c: &Control) -> Vec<u8> {
    match c {
        Control::Nack(seqs) => {
            let n = seqs.len().min(MAX_NACK_SEQS);
            let mut out = start(PacketType::MsbControl, flow, CONTROL_HEADER_LEN + 2 + 8 * n);
            out.push(KIND_NACK);
            out.extend_from_slice(&(n as u16).to_be_bytes());
            for s in &seqs[..n] {
                out.extend_from_slice(&s.to_be_bytes());
            }
            out
        }
        Control::Ack {
            frame,
            rtt_to_receiver,
        } => {
            let mut out = start(PacketType::MsbControl, flow, ACK_LEN);
            out.push(KIND_ACK);
            out.extend_from_slice(&frame.to_be_bytes());
            let us = u32::try_from(rtt_to_receiver.as_nanos() / 1_000).unwrap_or(u32::MAX);
            out.extend_from_slice(&us.to_be_bytes());
            out
        }
    }
}

/// Parse a control packet.
pub fn parse_control(buf: &[u8]) -> Result<(FlowId, Control), WireError> {
    let flow = expect(buf, PacketType::MsbControl, CONTROL_HEADER_LEN)?;
    let body = CONTROL_HEADER_LEN;
    match buf[body - 1] {
        KIND_NACK => {
            if buf.len() < body + 2 {
                return Err(WireError::Truncated {
                    needed: body + 2,
                    got: buf.len(),
                });
            }
            let n = usize::from(be_u16(buf, body));
            if n == 0 || n > MAX_NACK_SEQS {
                return Err(WireError::Malformed("MSB NACK count outside 1..=128"));
            }
            let needed = body + 2 + 8 * n;
            if buf.len() != needed {
                return Err(WireError::Truncated {
                    needed,
                    got: buf.len(),
                });
            }
            let seqs = (0..n).map(|i| be_u64(buf, body + 2 + 8 * i)).collect();
            Ok((flow, Control::Nack(seqs)))
        }
        KIND_ACK => {
            if buf.len() < ACK_LEN {
                return Err(WireError::Truncated {
                    needed: ACK_LEN,
                    got: buf.len(),
                });
            }
            Ok((
                flow,
                Control::Ack {
                    frame: be_u32(buf, body),
                    rtt_to_receiver: Duration::from_micros(u64::from(be_u32(buf, body + 4))),
                },
            ))
        }
        _ => Err(WireError::Malformed("unknown MSB control kind")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips() {
        let h = MediaHeader {
            frame: 70_000,
            layer: 16,
            index: 2,
            retx: 1,
            generated_at: Time::from_millis(7),
            deadline: Time::from_millis(507),
        };
        let mut b = Vec::new();
        h.emit(&mut b);
        b.extend_from_slice(b"video");
        assert_eq!(b.len(), MEDIA_HEADER_LEN + 5);
        assert_eq!(MediaHeader::parse(&b), Ok((h, &b"video"[..])));
        for c in [
            Control::Nack(vec![1, 1 << 40, 3]),
            Control::Ack {
                frame: 9,
                rtt_to_receiver: Duration::from_micros(100_500),
            },
        ] {
            assert_eq!(
                parse_control(&emit_control(FlowId(4), &c)),
                Ok((FlowId(4), c))
            );
        }
        let long = Control::Nack((0..200).collect());
        let (_, got) = parse_control(&emit_control(FlowId(1), &long)).expect("parses");
        assert_eq!(got, Control::Nack((0..128).collect()));
    }

    #[test]
    fn errors() {
        let mut b = Vec::new();
        MediaHeader {
            frame: 0,
            layer: 0,
            index: 0,
            retx: 0,
            generated_at: Time::ZERO,
            deadline: Time::ZERO,
        }
        .emit(&mut b);
        assert!(matches!(
            MediaHeader::parse(&b),
            Err(WireError::Malformed(_))
        ));
        b[4] = 1;
        b[7] = 4;
        assert_eq!(MediaHeader::parse(&b), Err(WireError::Flags(4)));
        let nack = emit_control(FlowId(1), &Control::Nack(vec![5]));
        assert!(matches!(
            parse_control(&nack[..nack.len() - 1]),
            Err(WireError::Truncated { .. })
        ));
        let mut bad = nack.clone();
        bad[CONTROL_HEADER_LEN - 1] = 9;
        assert!(matches!(parse_control(&bad), Err(WireError::Malformed(_))));
        let mut zero = nack;
        zero.truncate(CONTROL_HEADER_LEN);
        zero.extend_from_slice(&[0, 0]);
        assert!(matches!(parse_control(&zero), Err(WireError::Malformed(_))));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = MediaHeader::parse(&bytes);
            let _ = parse_control(&bytes);
        }
    }
}
