//! The little of RTP and RTCP a node reads and writes for its applications'
//! keyframe requests and streams.
//!
//! A node carries its applications' RTP unchanged and reads none of it
//! but for one field: the synchronisation source (SSRC) of each stream, so
//! that a keyframe request naming a stream reaches its session. The
//! requests are RTCP's payload-specific feedback (RFC 4585 §6.3): a
//! picture loss indication (PLI, format 1, naming the stream in its media
//! source field) or a full intra request (FIR, RFC 5104 §4.3.1, format 4,
//! naming each stream in an entry of its own). A node reads them from any
//! RTCP packet, compound (RFC 3550 §6.1) or reduced-size (RFC 5506), and
//! writes a PLI to an encoder inside a compound packet that starts with an
//! empty receiver report, which every RTP stack accepts.
//!
//! The rate the overlay offers a session goes to its encoder the same way,
//! as a receiver estimated maximum bitrate (REMB,
//! draft-alvestrand-rmcat-remb-03: payload-specific feedback of format 15
//! whose feedback information starts with `REMB`), the message WebRTC
//! receivers tell their senders' encoders their rate with.
//!
//! An encoder may send several streams (audio and video, say) through one
//! node: every PLI and REMB names each of them, and an encoder's goodbye
//! (BYE, RFC 3550 §6.6) ends a stream.
//!
//! A receiving application's reception report blocks (RFC 3550 §6.4.1, in
//! its sender or receiver reports: each about one stream, with the
//! fraction and number of packets lost, the highest sequence number, the
//! jitter and the times of the last sender report, from which the stream's
//! sender reckons the round trip) go to the streams' encoders too: the
//! node reads them, and writes each session's as a receiver report of
//! their own, from the application's SSRC, which the source's node hands
//! to its encoder as it came.
//!
//! So do their requests to send lost packets again: generic NACKs
//! (transport-layer feedback, RFC 4585 §6.2.1: format 1 of packet type
//! 205, naming the stream in its media source field, each entry a lost
//! packet's sequence number and a bitmask of the 16 after it). The node
//! writes each session's as a compound packet of its own, an empty
//! receiver report from the application's SSRC and the NACKs as they came
//! (their entries cut to what the carried size holds), which the source's
//! node hands to its encoder; an encoder that keeps its recent packets
//! (an RTX sender, RFC 4588, or one resending them as they were) sends them
//! again through the overlay like any other.

/// RTCP's packet types occupy RTP's payload types 64–95 with the marker
/// bit set (RFC 5761 §4): a second byte in 192..=223 is RTCP.
const RTCP_TYPES: std::ops::RangeInclusive<u8> = 192..=223;
/// RTCP sender report.
const SR: u8 = 200;
/// RTCP receiver report.
const RR: u8 = 201;
/// The bytes of a reception report block (RFC 3550 §6.4.1).
pub const REPORT_BLOCK_BYTES: usize = 24;
/// A reception report block, as it came.
pub type ReportBlock = [u8; REPORT_BLOCK_BYTES];
/// The most report blocks a report holds: its count has five bits.
pub const MAX_REPORT_BLOCKS: usize = 31;
/// Goodbye: the sources it lists leave.
const BYE: u8 = 203;
/// RTCP transport-layer feedback, and its format of generic NACKs.
const RTPFB: u8 = 205;
const NACK: u8 = 1;
/// The bytes of a generic NACK's entry (its feedback control information).
pub const NACK_ENTRY_BYTES: usize = 4;
/// A generic NACK's entry: a lost packet's sequence number and the bitmask
/// of the 16 packets after it also lost, as it came.
pub type NackEntry = [u8; NACK_ENTRY_BYTES];
/// RTCP payload-specific feedback.
const PSFB: u8 = 206;
/// Its formats: picture loss indication and full intra request.
const PLI: u8 = 1;
const FIR: u8 = 4;
/// Application layer feedback, which REMB is.
const AFB: u8 = 15;
/// The most streams one packet the node writes names (REMB's count is a
/// byte).
pub const MAX_STREAMS: usize = 255;
/// REMB's mantissa has 18 bits.
const REMB_MANTISSA: u64 = (1 << 18) - 1;

/// Whether `packet` is RTCP (version 2, a packet type of RTCP's range)
/// rather than RTP.
pub fn is_rtcp(packet: &[u8]) -> bool {
    packet.len() >= 8 && packet[0] >> 6 == 2 && RTCP_TYPES.contains(&packet[1])
}

/// The SSRC of an RTP packet: `None` for anything else (too short, not
/// version 2, or RTCP).
pub fn rtp_ssrc(packet: &[u8]) -> Option<u32> {
    if packet.len() < 12 || packet[0] >> 6 != 2 || is_rtcp(packet) {
        return None;
    }
    Some(word(packet, 8))
}

/// The streams (SSRCs) an RTCP packet asks keyframes of, in order: the
/// media source of each PLI, every entry's SSRC of each FIR. A packet that
/// is not RTCP asks for none; the packets of a compound one are read up to
/// the first that is malformed (a length past the datagram's end, a
/// version other than 2).
pub fn keyframe_requests(packet: &[u8]) -> Vec<u32> {
    let mut asked = Vec::new();
    for p in packets(packet) {
        if p[1] == PSFB && p.len() >= 12 {
            match p[0] & 0x1f {
                PLI => asked.push(word(p, 8)),
                // FCI entries: SSRC, sequence number, 3 reserved bytes.
                FIR => asked.extend(p[12..].chunks_exact(8).map(|e| word(e, 0))),
                _ => {}
            }
        }
    }
    asked
}

/// The reception report blocks of an RTCP datagram's sender and receiver
/// reports, each with the SSRC of the report's sender (the application
/// that reports), in order; read as [`keyframe_requests`] reads. A report
/// whose count of blocks passes its length gives those that fit.
pub fn reception_blocks(packet: &[u8]) -> Vec<(u32, ReportBlock)> {
    let mut blocks = Vec::new();
    for p in packets(packet) {
        // The blocks follow the sender's SSRC, and in a sender report its
        // 20 bytes of sender information.
        let first = match p[1] {
            SR => 28,
            RR => 8,
            _ => continue,
        };
        if p.len() < first {
            continue;
        }
        let count = usize::from(p[0] & 0x1f);
        let reporter = word(p, 4);
        blocks.extend(
            p[first..]
                .chunks_exact(REPORT_BLOCK_BYTES)
                .take(count)
                .map(|b| (reporter, b.try_into().expect("a whole block"))),
        );
    }
    blocks
}

/// The generic NACKs of an RTCP datagram, each as `(sender, stream,
/// entries)`: the SSRC of the application that asks, the stream (SSRC)
/// whose packets it lost and the NACK's entries, in order; read as
/// [`keyframe_requests`] reads. A NACK without entries asks for nothing.
pub fn generic_nacks(packet: &[u8]) -> Vec<(u32, u32, Vec<NackEntry>)> {
    packets(packet)
        .filter(|p| p[1] == RTPFB && p[0] & 0x1f == NACK && p.len() >= 16)
        .map(|p| {
            let entries = p[12..]
                .chunks_exact(NACK_ENTRY_BYTES)
                .map(|e| e.try_into().expect("a whole entry"))
                .collect();
            (word(p, 4), word(p, 8), entries)
        })
        .collect()
}

/// A compound RTCP packet from `sender` asking for lost packets again: an
/// empty receiver report, then a generic NACK for each stream of `nacks`
/// with its entries, no more than `most` bytes in all. Entries that do not
/// fit are left out (the later streams' first); returns the packet and how
/// many entries were left out. A stream left with no entry gets no NACK.
pub fn retransmission_request(
    sender: u32,
    nacks: &[(u32, Vec<NackEntry>)],
    most: usize,
) -> (Vec<u8>, usize) {
    let mut p = compound_from(sender, most.saturating_sub(8));
    let mut left_out = 0;
    for (stream, entries) in nacks {
        // Header, sender and stream: 12 bytes before the entries.
        let room = most.saturating_sub(p.len() + 12) / NACK_ENTRY_BYTES;
        let kept = entries.len().min(room).min(usize::from(u16::MAX) - 2);
        left_out += entries.len() - kept;
        if kept == 0 {
            continue;
        }
        p.extend_from_slice(&[0x80 | NACK, RTPFB]);
        p.extend_from_slice(&((2 + kept) as u16).to_be_bytes());
        p.extend_from_slice(&sender.to_be_bytes());
        p.extend_from_slice(&stream.to_be_bytes());
        for e in &entries[..kept] {
            p.extend_from_slice(e);
        }
    }
    (p, left_out)
}

/// The stream (SSRC) a reception report block is about.
pub fn block_source(block: &ReportBlock) -> u32 {
    word(block, 0)
}

/// A receiver report (RFC 3550 §6.4.2) from `reporter` carrying `blocks`,
/// at most [`MAX_REPORT_BLOCKS`] of them.
pub fn receiver_report(reporter: u32, blocks: &[ReportBlock]) -> Vec<u8> {
    let blocks = &blocks[..blocks.len().min(MAX_REPORT_BLOCKS)];
    let words = (1 + 6 * blocks.len()) as u16;
    let mut p = Vec::with_capacity(8 + REPORT_BLOCK_BYTES * blocks.len());
    p.extend_from_slice(&[0x80 | blocks.len() as u8, RR]);
    p.extend_from_slice(&words.to_be_bytes());
    p.extend_from_slice(&reporter.to_be_bytes());
    for b in blocks {
        p.extend_from_slice(b);
    }
    p
}

/// The source an RTCP datagram speaks for: the SSRC of its first packet
/// (a sender report's sender, an SDES packet's first chunk, a goodbye's
/// first source). `None` for anything else.
pub fn rtcp_ssrc(packet: &[u8]) -> Option<u32> {
    packets(packet)
        .next()
        .filter(|p| p.len() >= 8)
        .map(|p| word(p, 4))
}

/// The payload type of an RTP packet (its second byte without the marker
/// bit): `None` for anything else.
pub fn payload_type(packet: &[u8]) -> Option<u8> {
    rtp_ssrc(packet).map(|_| packet[1] & 0x7f)
}

/// The big-endian word at `at` of `b`.
fn word(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The packets of an RTCP datagram, each whole with its header, up to the
/// first malformed one (a length past the datagram's end, a version other
/// than 2); none if it is not RTCP.
fn packets(datagram: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = if is_rtcp(datagram) { datagram } else { &[] };
    std::iter::from_fn(move || {
        if rest.len() < 4 || rest[0] >> 6 != 2 {
            return None;
        }
        let len = (usize::from(u16::from_be_bytes([rest[2], rest[3]])) + 1) * 4;
        if len > rest.len() {
            return None;
        }
        let (p, next) = rest.split_at(len);
        rest = next;
        Some(p)
    })
}

/// The start of a compound RTCP packet from `sender_ssrc`, room left for
/// `more` bytes: a receiver report with no report blocks (length 1: two
/// words), the first packet every RTP stack accepts.
fn compound_from(sender_ssrc: u32, more: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(8 + more);
    p.extend_from_slice(&[0x80, RR, 0, 1]);
    p.extend_from_slice(&sender_ssrc.to_be_bytes());
    p
}

/// A compound RTCP packet asking the encoder of the streams `media` for a
/// keyframe: an empty receiver report from `sender_ssrc`, then a PLI for
/// each stream (a PLI names one media source). At most [`MAX_STREAMS`]
/// streams.
pub fn picture_loss_indication(sender_ssrc: u32, media: &[u32]) -> Vec<u8> {
    let media = &media[..media.len().min(MAX_STREAMS)];
    let mut p = compound_from(sender_ssrc, 12 * media.len());
    for s in media {
        // PLI: length 2 (three words), no feedback control information.
        p.extend_from_slice(&[0x80 | PLI, PSFB, 0, 2]);
        p.extend_from_slice(&sender_ssrc.to_be_bytes());
        p.extend_from_slice(&s.to_be_bytes());
    }
    p
}

/// The streams (SSRCs) an RTCP packet says goodbye for (RFC 3550 §6.6: a
/// BYE lists the sources that leave), in order; read as
/// [`keyframe_requests`] reads.
pub fn goodbyes(packet: &[u8]) -> Vec<u32> {
    let mut gone = Vec::new();
    for p in packets(packet) {
        if p[1] == BYE {
            let count = usize::from(p[0] & 0x1f);
            gone.extend(p[4..].chunks_exact(4).take(count).map(|s| word(s, 0)));
        }
    }
    gone
}

/// A compound RTCP packet telling the encoder of the streams `media` that
/// the path takes `bps` bits per second: an empty receiver report from
/// `sender_ssrc`, then a REMB. The rate is written as an 18-bit mantissa
/// and a power of two, rounded down (never more than `bps`). At most
/// [`MAX_STREAMS`] streams (the count's byte).
pub fn estimated_max_bitrate(sender_ssrc: u32, bps: u64, media: &[u32]) -> Vec<u8> {
    let media = &media[..media.len().min(MAX_STREAMS)];
    let mut exp = 0u32;
    while bps >> exp > REMB_MANTISSA {
        exp += 1;
    }
    let mantissa = (bps >> exp) as u32;
    let words = 4 + media.len() as u16;
    let mut p = compound_from(sender_ssrc, 4 * (usize::from(words) + 1));
    p.extend_from_slice(&[0x80 | AFB, PSFB]);
    p.extend_from_slice(&words.to_be_bytes());
    p.extend_from_slice(&sender_ssrc.to_be_bytes());
    // The media source field is unused: the streams follow.
    p.extend_from_slice(&0u32.to_be_bytes());
    p.extend_from_slice(b"REMB");
    p.push(media.len() as u8);
    p.push((exp << 2) as u8 | (mantissa >> 16) as u8);
    p.extend_from_slice(&(mantissa as u16).to_be_bytes());
    for s in media {
        p.extend_from_slice(&s.to_be_bytes());
    }
    p
}

/// The first REMB in an RTCP packet: its rate (bits/s) and the streams it
/// names. `None` without one, or past the first malformed packet of a
/// compound one.
pub fn estimated_max_bitrate_of(packet: &[u8]) -> Option<(u64, Vec<u32>)> {
    let p = packets(packet)
        .find(|p| p[1] == PSFB && p[0] & 0x1f == AFB && p.len() >= 20 && &p[12..16] == b"REMB")?;
    let count = usize::from(p[16]);
    let exp = p[17] >> 2;
    let mantissa = u64::from(p[17] & 3) << 16 | u64::from(u16::from_be_bytes([p[18], p[19]]));
    let streams: Vec<u32> = p[20..]
        .chunks_exact(4)
        .take(count)
        .map(|s| word(s, 0))
        .collect();
    if streams.len() < count {
        return None;
    }
    Some((mantissa.checked_shl(u32::from(exp))?, streams))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RTP packet of stream `ssrc` (payload type 96, marker clear).
    fn rtp(ssrc: u32) -> Vec<u8> {
        let mut p = vec![0x80, 96, 0, 7, 0, 0, 0, 9];
        p.extend_from_slice(&ssrc.to_be_bytes());
        p.extend_from_slice(b"payload");
        p
    }

    /// A sender report with no report blocks (7 words).
    fn sender_report(ssrc: u32) -> Vec<u8> {
        let mut p = vec![0x80, 200, 0, 6];
        p.extend_from_slice(&ssrc.to_be_bytes());
        p.extend_from_slice(&[0; 20]);
        p
    }

    /// A FIR from `sender` with one entry per stream of `asked`.
    fn fir(sender: u32, asked: &[u32]) -> Vec<u8> {
        let words = 2 + 2 * asked.len() as u16;
        let mut p = vec![0x80 | FIR, PSFB];
        p.extend_from_slice(&words.to_be_bytes());
        p.extend_from_slice(&sender.to_be_bytes());
        p.extend_from_slice(&0u32.to_be_bytes());
        for (i, s) in asked.iter().enumerate() {
            p.extend_from_slice(&s.to_be_bytes());
            p.extend_from_slice(&[i as u8, 0, 0, 0]);
        }
        p
    }

    #[test]
    fn rtp_and_rtcp_are_told_apart() {
        assert_eq!(rtp_ssrc(&rtp(0xdead_beef)), Some(0xdead_beef));
        // The marker bit set on a dynamic payload type is still RTP.
        let mut marked = rtp(5);
        marked[1] = 0x80 | 96;
        assert_eq!(rtp_ssrc(&marked), Some(5));
        assert!(!is_rtcp(&marked));
        assert!(is_rtcp(&sender_report(5)));
        assert_eq!(rtp_ssrc(&sender_report(5)), None);
        assert_eq!(rtp_ssrc(&rtp(5)[..11]), None, "shorter than a header");
        let mut v1 = rtp(5);
        v1[0] = 0x40;
        assert_eq!(rtp_ssrc(&v1), None, "version 1");
    }

    /// A report block about stream `ssrc`, its other words `k`.
    fn block(ssrc: u32, k: u8) -> ReportBlock {
        let mut b = [k; REPORT_BLOCK_BYTES];
        b[..4].copy_from_slice(&ssrc.to_be_bytes());
        b
    }

    #[test]
    fn reception_blocks_are_read_from_sender_and_receiver_reports() {
        let (a, b, c) = (block(11, 1), block(12, 2), block(13, 3));
        // A receiver report round-trips.
        let rr = receiver_report(0xAB, &[a, b]);
        assert_eq!(rr.len(), 8 + 2 * REPORT_BLOCK_BYTES);
        assert_eq!(&rr[..4], &[0x82, 201, 0, 13]);
        assert_eq!(reception_blocks(&rr), vec![(0xAB, a), (0xAB, b)]);
        assert_eq!(block_source(&b), 12);
        assert_eq!(reception_blocks(&receiver_report(5, &[])), vec![]);
        // A sender report's blocks follow its sender information, and a
        // compound packet's reports are read in order; other packets
        // (a PLI) have none.
        let mut sr = sender_report(0xCD);
        sr[0] |= 1;
        sr[3] += 6;
        sr.extend_from_slice(&c);
        let mut compound = sr.clone();
        compound.extend_from_slice(&picture_loss_indication(0xCD, &[11])[8..]);
        compound.extend_from_slice(&rr);
        assert_eq!(
            reception_blocks(&compound),
            vec![(0xCD, c), (0xAB, a), (0xAB, b)]
        );
        // A count past the report's length gives the blocks that fit; a
        // malformed length ends the reading; RTP has none.
        let mut short = rr.clone();
        short[0] = 0x80 | 3;
        assert_eq!(reception_blocks(&short), vec![(0xAB, a), (0xAB, b)]);
        let mut cut = compound.clone();
        cut.truncate(compound.len() - 4);
        assert_eq!(reception_blocks(&cut), vec![(0xCD, c)]);
        assert_eq!(reception_blocks(&rtp(11)), vec![]);
        // At most 31 blocks.
        let many = vec![a; 40];
        assert_eq!(reception_blocks(&receiver_report(1, &many)).len(), 31);
    }

    #[test]
    fn generic_nacks_are_read_and_written() {
        let e = |seq: u8, mask: u8| [0, seq, 0, mask];
        let nacks = vec![(11, vec![e(1, 0), e(20, 3)]), (12, vec![e(5, 1)])];
        let (p, left_out) = retransmission_request(0xAB, &nacks, 248);
        assert_eq!(left_out, 0);
        // An empty receiver report, then NACKs of 4 and 3 words.
        assert_eq!(p.len(), 8 + 20 + 16);
        assert_eq!(&p[..8], &[0x80, 201, 0, 1, 0, 0, 0, 0xAB]);
        assert_eq!(&p[8..12], &[0x81, 205, 0, 4]);
        assert!(is_rtcp(&p));
        let read: Vec<_> = nacks.iter().map(|(s, es)| (0xAB, *s, es.clone())).collect();
        assert_eq!(generic_nacks(&p), read);
        // Reduced-size: the NACKs alone; a compound with other packets
        // (a PLI, a report) gives the NACKs only; they ask for no keyframe
        // and carry no report blocks.
        assert_eq!(generic_nacks(&p[8..]), read);
        let mut c = sender_report(0xAB);
        c.extend_from_slice(&picture_loss_indication(0xAB, &[11])[8..]);
        c.extend_from_slice(&p[8..]);
        assert_eq!(generic_nacks(&c), read);
        assert!(keyframe_requests(&p).is_empty());
        assert!(reception_blocks(&p).is_empty());
        assert!(generic_nacks(&c[..28]).is_empty());
        // What does not fit is left out, the later streams' first; a stream
        // left with none gets no NACK.
        let (p, left_out) = retransmission_request(0xAB, &nacks, 8 + 12 + 4);
        assert_eq!((p.len(), left_out), (24, 2));
        assert_eq!(generic_nacks(&p), vec![(0xAB, 11, vec![e(1, 0)])]);
        let (p, left_out) = retransmission_request(0xAB, &nacks, 8 + 20 + 15);
        assert_eq!((p.len(), left_out), (28, 1));
        let (p, left_out) = retransmission_request(0xAB, &nacks, 0);
        assert_eq!((p.len(), left_out), (8, 3));
        // A NACK with no entry, a NACK's length past the datagram, and
        // another transport feedback format ask for nothing.
        assert!(generic_nacks(&[0x81, 205, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2]).is_empty());
        let mut long = retransmission_request(1, &nacks[..1], 248).0[8..].to_vec();
        long[3] = 9;
        assert!(generic_nacks(&long).is_empty());
        let mut tmmbr = retransmission_request(1, &nacks[..1], 248).0;
        tmmbr[8] = 0x83;
        assert!(generic_nacks(&tmmbr).is_empty());
    }

    #[test]
    fn a_pli_round_trips_and_names_its_stream() {
        let p = picture_loss_indication(1, &[0x1234_5678]);
        assert!(is_rtcp(&p));
        assert_eq!(keyframe_requests(&p), vec![0x1234_5678]);
        // The empty receiver report is a whole packet of two words.
        assert_eq!(&p[..4], &[0x80, 201, 0, 1]);
        // Reduced-size: the PLI alone.
        assert_eq!(keyframe_requests(&p[8..]), vec![0x1234_5678]);
    }

    #[test]
    fn a_pli_names_every_stream_of_its_encoder() {
        let p = picture_loss_indication(1, &[10, 11, 12]);
        assert_eq!(p.len(), 8 + 3 * 12);
        assert_eq!(keyframe_requests(&p), vec![10, 11, 12]);
        // None: the receiver report alone, which asks for nothing.
        assert_eq!(
            picture_loss_indication(1, &[]),
            vec![0x80, 201, 0, 1, 0, 0, 0, 1]
        );
        let many: Vec<u32> = (0..300).collect();
        assert_eq!(
            keyframe_requests(&picture_loss_indication(1, &many)).len(),
            MAX_STREAMS
        );
    }

    #[test]
    fn a_packet_names_its_stream_and_type() {
        assert_eq!(payload_type(&rtp(4)), Some(96));
        let mut marked = rtp(4);
        marked[1] = 0x80 | 97;
        assert_eq!(payload_type(&marked), Some(97));
        assert_eq!(payload_type(&sender_report(4)), None);
        assert_eq!(rtcp_ssrc(&sender_report(4)), Some(4));
        assert_eq!(rtcp_ssrc(&[0x81, 203, 0, 1, 0, 0, 0, 9]), Some(9));
        assert_eq!(rtcp_ssrc(&rtp(4)), None);
        // An empty goodbye has no source; a packet past the end, none.
        assert_eq!(rtcp_ssrc(&[0x80, 203, 0, 0]), None);
        assert_eq!(rtcp_ssrc(&[0x80, 200, 0, 6, 0, 0, 0, 1]), None);
    }

    #[test]
    fn a_bye_names_the_streams_that_leave() {
        // A sender report, then a BYE for two sources with a reason.
        let mut p = sender_report(3);
        p.extend_from_slice(&[0x82, 203, 0, 4, 0, 0, 0, 3, 0, 0, 0, 4, 4, b'd', b'o', b'n']);
        p.extend_from_slice(&[b'e', 0, 0, 0]);
        assert_eq!(goodbyes(&p), vec![3, 4]);
        assert!(keyframe_requests(&p).is_empty());
        // A count past the packet's words names what is there.
        assert_eq!(goodbyes(&[0x83, 203, 0, 1, 0, 0, 0, 9]), vec![9]);
        assert!(goodbyes(&sender_report(3)).is_empty());
        assert!(goodbyes(&rtp(3)).is_empty());
    }

    #[test]
    fn compound_packets_are_read_through() {
        let mut p = sender_report(3);
        p.extend_from_slice(&picture_loss_indication(3, &[10])[8..]);
        p.extend_from_slice(&fir(3, &[11, 12]));
        // A generic NACK (transport feedback) asks for no keyframe.
        p.extend_from_slice(&[0x81, 205, 0, 3, 0, 0, 0, 3, 0, 0, 0, 10, 0, 1, 0, 0]);
        assert_eq!(keyframe_requests(&p), vec![10, 11, 12]);
    }

    #[test]
    fn a_remb_carries_the_rate_rounded_down() {
        for bps in [0, 1, 299_999, 262_143, 262_144, 1_000_000, 2_500_000_000] {
            let p = estimated_max_bitrate(7, bps, &[42]);
            assert!(is_rtcp(&p));
            assert_eq!(p.len(), 8 + 24, "one stream");
            let (got, streams) = estimated_max_bitrate_of(&p).expect("a REMB");
            assert_eq!(streams, vec![42]);
            // Never above the rate, and within the mantissa's precision.
            assert!(got <= bps && bps - got <= bps >> 17, "{bps}: {got}");
            // A REMB asks for no keyframe.
            assert!(keyframe_requests(&p).is_empty());
        }
        // Exact where 18 bits hold the rate.
        assert_eq!(
            estimated_max_bitrate_of(&estimated_max_bitrate(7, 262_143, &[1])),
            Some((262_143, vec![1]))
        );
        // Several streams; none.
        let p = estimated_max_bitrate(7, 500_000, &[1, 2, 3]);
        assert_eq!(
            estimated_max_bitrate_of(&p),
            Some((500_000 >> 1 << 1, vec![1, 2, 3]))
        );
        let p = estimated_max_bitrate(7, 500_000, &[]);
        assert_eq!(estimated_max_bitrate_of(&p).map(|r| r.1), Some(vec![]));
        // Cut short: no REMB.
        let p = estimated_max_bitrate(7, 500_000, &[1, 2]);
        assert_eq!(estimated_max_bitrate_of(&p[..p.len() - 4]), None);
        // A PLI is no REMB.
        assert_eq!(
            estimated_max_bitrate_of(&picture_loss_indication(1, &[2])),
            None
        );
    }

    /// Whatever an application sends, reading it does not panic: random
    /// datagrams, and random bytes behind valid RTCP headers.
    #[test]
    fn any_datagram_is_read_without_panic() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..20_000 {
            let len = (next() % 64) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if len >= 4 && i % 2 == 0 {
                // Version 2, an RTCP type, a short length.
                d[0] = 0x80 | (d[0] & 0x1f);
                d[1] = [200, 201, 203, 205, 206][(i / 2) % 5];
                d[2] = 0;
                d[3] %= 16;
            }
            let _ = (
                keyframe_requests(&d),
                goodbyes(&d),
                rtcp_ssrc(&d),
                payload_type(&d),
                estimated_max_bitrate_of(&d),
                rtp_ssrc(&d),
                reception_blocks(&d),
                generic_nacks(&d),
            );
        }
    }

    #[test]
    fn malformed_packets_ask_for_nothing_past_the_fault() {
        let pli = picture_loss_indication(1, &[42]);
        // A length past the end: the packet is ignored.
        let mut long = pli[8..].to_vec();
        long[3] = 9;
        assert!(keyframe_requests(&long).is_empty());
        // A truncated second packet: the first one still counts.
        let mut cut = pli[8..].to_vec();
        cut.extend_from_slice(&pli[8..16]);
        assert_eq!(keyframe_requests(&cut), vec![42]);
        // A PLI too short for its media source.
        assert!(keyframe_requests(&[0x81, PSFB, 0, 1, 0, 0, 0, 1]).is_empty());
        // RTP carrying the bytes of a PLI in its payload asks for nothing.
        let mut r = rtp(9);
        r.extend_from_slice(&pli);
        assert!(keyframe_requests(&r).is_empty());
        assert!(keyframe_requests(&[]).is_empty());
    }
}
