//! Opportunistic local loss recovery (§5.4), with meshcast's RLNC crate.
//!
//! The head of an overlay link sends, on the part of the sessions' link
//! rates `c_{m,e}` their trees leave unused, *repairs*: random linear
//! combinations over GF(2^8) of the data packets it sent on that link. The
//! tail recovers from them the packets the link lost, with no
//! retransmission and so no round trip.
//!
//! - **What is coded.** A data packet's header and media without its
//!   piggybacked control, preceded by its length
//!   ([`wire::emit_coded_data`](super::wire::emit_coded_data)) and padded
//!   with zeros to the conference's symbol size. A recovered packet is
//!   therefore the packet itself, tree entries included, and a relay
//!   forwards it like any other.
//! - **Generations.** The packet with link sequence number `s` (the link
//!   header's `hop_seq`) is source symbol `s mod 16` of generation
//!   `s / 16`; control packets and repairs take sequence numbers too and
//!   are simply never combined. The paper combines a session's packets;
//!   this combines every session's packets on the link, which for the
//!   same share of repairs sends them several times as often: with about
//!   20 packets a second per session a per-session repair came 250 ms
//!   after the loss it could mend, past the delay bound (measured on the
//!   lossy dumbbell, docs/celerity.md). The tail keeps the last
//!   [`GENERATIONS_KEPT`] generations of each link; a packet recovered
//!   past the delay bound is dropped as late, like any other.
//! - **How many repairs.** A repair is worth sending only where the link
//!   loses packets. The tail tells the head the link's loss rate
//!   (`Control::LinkLoss`, with its rate updates). While the link loses at
//!   least [`MIN_LOSS`], the head sends a repair after every `⌈1/f⌉` data
//!   packets on the link, `f = min(1, max(repair_ratio, 4·loss))`, or
//!   sooner once the oldest unprotected packet is [`REPAIR_WAIT`] old (a
//!   repair that comes late recovers nothing). `f` is not sized by the
//!   loss alone because the delay bound leaves a repair ~100 ms to come:
//!   with `f = 4·loss` (0.2 at 5% loss) a link carrying 20 packets a
//!   second sent a repair every 250 ms, and of 5% loss 2.4-2.7% remained
//!   (lossy dumbbell, worst session: `repair_ratio` 0.25 left 2.4%, 0.5
//!   1.1%, 1 0.8%; docs/celerity.md).
//! - **Room for them.** Under the paper's rule a link with any price
//!   (and loss is part of the price) ends with `c_{m,e}` just what the
//!   trees use: no rate would ever be left for repairs exactly where
//!   packets are lost. So on a link that loses at least [`MIN_LOSS`] the
//!   head keeps the share `f` for repairs and tells the source only
//!   `c_{m,e}/(1 + f)` (what it packs trees on); the tail prices the link
//!   by the loss left after recovery, so a link whose losses repairs make
//!   good is not held back by them.
//! - **Only unused rate.** Repairs draw on their own allowance: a bucket
//!   that fills at `Σ_m c_{m,e}` and that the data packets on the link
//!   drain first, so repairs get only what the trees leave. The
//!   policing bucket cannot tell that: on a critical link the trees use
//!   `c_{m,e}` entirely and its bucket still sits full between packets,
//!   so a repair charged to it would take the tokens of the next tree
//!   packet, which the head would then drop. Repairs count against the link's rate in the tail's
//!   measurements (they are packets on the link), so a link where they
//!   cause congestion is priced, and its `c_{m,e}` falls.

use super::wire::LINK_HEADER_LEN;
use crate::wire::COMMON_HEADER_LEN;
use meshcast_coding::{Coding, Decoder, Recoder, Symbol};
use meshcast_core::{Duration, Time};
use std::collections::VecDeque;

/// Source symbols per generation.
pub(super) const GENERATION: usize = 16;
/// A tail keeps this many generations of a link (the newest and the
/// ones before it).
pub(super) const GENERATIONS_KEPT: usize = 3;
/// A packet this many generations behind the newest comes from a head
/// that started again.
const RESTART: usize = 64;
/// Below this link loss rate no repairs are sent.
pub(super) const MIN_LOSS: f64 = 0.005;
/// A repair follows at the latest when the oldest packet it would protect
/// is this old.
pub(super) const REPAIR_WAIT: Duration = Duration::from_millis(40);
/// Repairs per lost packet aimed for (the `4` of `4·loss`).
const REPAIRS_PER_LOSS: f64 = 4.0;

/// The repair bytes per data byte a head aims for on a link that loses
/// `loss` of its packets: `repair_ratio`, or `4·loss` where that is more,
/// at most one; none below [`MIN_LOSS`].
pub(super) fn share(loss: f64, repair_ratio: f64) -> f64 {
    if repair_ratio > 0.0 && loss >= MIN_LOSS {
        (REPAIRS_PER_LOSS * loss).max(repair_ratio).min(1.0)
    } else {
        0.0
    }
}

/// Generations in the link sequence number's range.
const GENERATIONS: u32 = (1 << 16) / GENERATION as u32;

/// The generation and position of link sequence number `seq`.
fn position(seq: u16) -> (u32, usize) {
    (
        u32::from(seq) / GENERATION as u32,
        usize::from(seq) % GENERATION,
    )
}

/// How far generation `a` is ahead of `b` (negative: behind), with the
/// wrap of the sequence numbers.
fn ahead(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) % GENERATIONS;
    if d >= GENERATIONS / 2 {
        d as i32 - GENERATIONS as i32
    } else {
        d as i32
    }
}

/// Pads `symbol` with zeros to `k` bytes, in place; `false` (and `symbol`
/// as it was) when it is longer.
fn pad(symbol: &mut Vec<u8>, k: usize) -> bool {
    let fits = symbol.len() <= k;
    if fits {
        symbol.resize(k, 0);
    }
    fits
}

/// The source symbol of the data packet with link sequence number `seq`
/// (its padded coded form `payload`).
fn source_symbol(seq: u16, payload: &[u8]) -> Symbol<'_> {
    let (generation, pos) = position(seq);
    Symbol {
        generation,
        n: GENERATION as u16,
        coding: Coding::Systematic(pos as u16),
        payload,
    }
}

/// The head's repair state for one overlay link.
pub(super) struct RepairSender {
    recoder: Recoder,
    /// The generation the recoder holds.
    generation: Option<u32>,
    /// Data packets of it sent since the last repair, and when the oldest
    /// of them left.
    unprotected: usize,
    oldest: Option<Time>,
    /// The longest coded packet of the generation: past it every
    /// combination is zero, and a repair leaves those bytes out.
    used: usize,
    /// The repair allowance, bytes, and when it was last refilled: a
    /// bucket filling at `Σ_m c_{m,e}` that the data packets drain too
    /// (down to minus its depth, so a burst of them is paid back before
    /// repairs go again).
    allowance: f64,
    at: Option<Time>,
    k: usize,
}

/// What the head knows of its link when it sends a data packet.
#[derive(Clone, Copy, Debug)]
pub(super) struct LinkNow {
    /// `Σ_m c_{m,e}`, kbit/s.
    pub rate_kbps: f64,
    /// The loss rate the tail last reported.
    pub loss: f64,
    /// [`CelerityParams::repair_ratio`](super::CelerityParams::repair_ratio).
    pub repair_ratio: f64,
}

impl RepairSender {
    /// State for symbols of `k` bytes; `seed` drives the combinations'
    /// weights.
    pub(super) fn new(k: usize, seed: u64) -> RepairSender {
        RepairSender {
            recoder: Recoder::new(0, GENERATION, k, seed).expect("generation parameters are valid"),
            generation: None,
            unprotected: 0,
            oldest: None,
            used: 0,
            allowance: 0.0,
            at: None,
            k,
        }
    }

    /// The head sent the data packet with link sequence number `seq` (its
    /// coded form `coded`, which is padded to the symbol size in place;
    /// `wire` bytes on the link) at `now`. Returns the repairs to send
    /// after it, as coded symbols (`meshcast_coding` datagrams without
    /// trailing zeros): at most one for the generation it closes and one
    /// for its own.
    pub(super) fn sent(
        &mut self,
        now: Time,
        seq: u16,
        coded: &mut Vec<u8>,
        wire: usize,
        link: LinkNow,
    ) -> Vec<Vec<u8>> {
        // The allowance fills at the link rate and pays for the trees'
        // packets first: what is left is what they do not use.
        let dt = self
            .at
            .map_or(0.0, |t| now.saturating_since(t).as_secs_f64());
        self.at = Some(now);
        let cap = 2.0 * (self.k + 32) as f64;
        self.allowance = (self.allowance + link.rate_kbps * 125.0 * dt).min(cap);
        self.allowance = (self.allowance - wire as f64).max(-cap);

        let mut out = Vec::new();
        let want = share(link.loss, link.repair_ratio);
        let lossy = want > 0.0;
        let (generation, _) = position(seq);
        if self.generation != Some(generation) {
            // The generation this packet closes gets its last repair now.
            if lossy && self.unprotected > 0 {
                out.extend(self.repair());
            }
            self.recoder.reset(generation);
            self.generation = Some(generation);
            self.unprotected = 0;
            self.oldest = None;
            self.used = 0;
        }
        let len = coded.len();
        if !pad(coded, self.k) || self.recoder.push(&source_symbol(seq, coded)).is_err() {
            return out;
        }
        self.used = self.used.max(len);
        self.unprotected += 1;
        let oldest = *self.oldest.get_or_insert(now);
        let every = (1.0 / want).ceil().clamp(1.0, GENERATION as f64) as usize;
        if lossy && (self.unprotected >= every || now.saturating_since(oldest) >= REPAIR_WAIT) {
            out.extend(self.repair());
        }
        out
    }

    /// One repair of the current generation, if the allowance has room.
    fn repair(&mut self) -> Option<Vec<u8>> {
        let header = header_len();
        let bytes = header + self.used;
        // What the repair takes on the link: its packet's headers too.
        let wire = (self.used + repair_overhead()) as f64;
        if self.allowance < wire {
            return None;
        }
        let mut buf = vec![0u8; header + self.k];
        let len = self.recoder.write_recoded(&mut buf).ok()?;
        buf.truncate(len.min(bytes));
        self.allowance -= wire;
        self.unprotected = 0;
        self.oldest = None;
        Some(buf)
    }
}

/// The bytes of a repair's coding header (a generation's dense
/// coefficients) before its symbol.
fn header_len() -> usize {
    Coding::Dense(&[0; GENERATION]).header_len(GENERATION)
}

/// The bytes a repair packet has beside its symbol: the common and link
/// headers and the coding header.
pub(super) fn repair_overhead() -> usize {
    COMMON_HEADER_LEN + LINK_HEADER_LEN + header_len()
}

/// A tail's decoders for one overlay link.
pub(super) struct RepairReceiver {
    /// The newest generations, oldest first.
    decoders: VecDeque<Decoder>,
    k: usize,
    /// A repair's payload, padded to the symbol size.
    scratch: Vec<u8>,
}

impl RepairReceiver {
    /// Decoders for symbols of `k` bytes.
    pub(super) fn new(k: usize) -> RepairReceiver {
        RepairReceiver {
            decoders: VecDeque::new(),
            k,
            scratch: Vec::new(),
        }
    }

    /// The decoder of `generation`, opened if it is newer than every one
    /// kept (the oldest then goes); `None` when it is a little older than
    /// those (a straggler). One far behind means the head started its
    /// sequence numbers again (it restarted): every decoder goes.
    fn decoder(&mut self, generation: u32) -> Option<&mut Decoder> {
        let newest = self.decoders.back().map(|d| d.generation());
        match newest.map(|g| ahead(generation, g)) {
            Some(a) if a < -(RESTART as i32) => self.decoders.clear(),
            Some(a) if a <= 0 => {
                let i = self
                    .decoders
                    .iter()
                    .position(|d| d.generation() == generation)?;
                return self.decoders.get_mut(i);
            }
            _ => {}
        }
        let d = if self.decoders.len() >= GENERATIONS_KEPT {
            let mut d = self.decoders.pop_front().expect("at least one decoder");
            d.reset(generation);
            d
        } else {
            Decoder::new(generation, GENERATION, self.k).expect("generation parameters are valid")
        };
        self.decoders.push_back(d);
        self.decoders.back_mut()
    }

    /// A data packet arrived with link sequence number `seq`: `coded` is
    /// its coded form, padded to the symbol size in place. Returns the
    /// packets it completes the recovery of, coded.
    pub(super) fn source(&mut self, seq: u16, coded: &mut Vec<u8>) -> Vec<Vec<u8>> {
        if !pad(coded, self.k) {
            return Vec::new();
        }
        self.push(&source_symbol(seq, coded), Some(position(seq).1))
    }

    /// A repair arrived: `datagram` is its coded symbol. Returns the
    /// packets recovered, coded, or why the repair was refused.
    pub(super) fn repair(&mut self, datagram: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
        let symbol = Symbol::parse(datagram).map_err(|_| "repair symbol")?;
        if usize::from(symbol.n) != GENERATION
            || !matches!(symbol.coding, Coding::Dense(_))
            || symbol.generation >= GENERATIONS
        {
            return Err("repair coding");
        }
        let mut payload = std::mem::take(&mut self.scratch);
        payload.clear();
        payload.extend_from_slice(symbol.payload);
        let out = if pad(&mut payload, self.k) {
            Ok(self.push(
                &Symbol {
                    payload: &payload,
                    ..symbol
                },
                None,
            ))
        } else {
            Err("repair length")
        };
        self.scratch = payload;
        out
    }

    /// Push `symbol` into its generation's decoder; return what it made
    /// decodable, except `own` (a source that arrived itself).
    fn push(&mut self, symbol: &Symbol<'_>, own: Option<usize>) -> Vec<Vec<u8>> {
        let generation = symbol.generation;
        let Some(d) = self.decoder(generation) else {
            return Vec::new();
        };
        if d.push(symbol).is_err() {
            return Vec::new();
        }
        d.newly_decoded()
            .iter()
            .map(|&p| usize::from(p))
            .filter(|&p| Some(p) != own)
            .filter_map(|p| Some(d.source(p)?.to_vec()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coded(seq: u16) -> Vec<u8> {
        let len = 20 + (seq as usize % 7);
        let mut v = vec![0, len as u8];
        v.extend((0..len).map(|i| (seq as usize * 31 + i) as u8 | 1));
        v
    }

    fn lossy() -> LinkNow {
        LinkNow {
            rate_kbps: 10_000.0,
            loss: 0.1,
            repair_ratio: 0.25,
        }
    }

    /// A head sending data on every other link sequence number (control
    /// takes the rest) and a tail that loses some: the repairs give back
    /// every lost packet, and never one the head did not send. The
    /// sequence numbers wrap.
    #[test]
    fn repairs_recover_what_the_link_lost() {
        let mut head = RepairSender::new(64, 7);
        let mut tail = RepairReceiver::new(64);
        let mut now = Time::ZERO;
        let mut recovered = Vec::new();
        let lost = [65502u16, 65508, 65520, 2];
        let mut repairs = 0;
        for seq in (65488..=65535u16).chain(0..12).filter(|s| s % 2 == 0) {
            now += Duration::from_millis(10);
            let c = coded(seq);
            let out = head.sent(now, seq, &mut c.clone(), c.len() + 30, lossy());
            if !lost.contains(&seq) {
                recovered.extend(tail.source(seq, &mut c.clone()));
            }
            for r in out {
                repairs += 1;
                recovered.extend(tail.repair(&r).unwrap());
            }
        }
        // A repair after every third packet (f = 4·10% loss above the
        // ratio of 0.25), and one when a generation closes.
        assert!((10..=12).contains(&repairs), "{repairs} repairs");
        assert_eq!(recovered.len(), lost.len());
        for seq in lost {
            let c = coded(seq);
            let got = recovered.iter().find(|r| r[..c.len()] == c[..]);
            assert!(got.is_some_and(|r| r[c.len()..].iter().all(|&b| b == 0)));
        }
    }

    /// `count` data packets of 100 wire bytes, 10 ms apart: the number of
    /// repairs after them, and their bytes.
    fn drive(head: &mut RepairSender, count: u16, link: LinkNow) -> (usize, usize) {
        let mut now = Time::ZERO;
        let (mut n, mut bytes) = (0, 0);
        for seq in 0..count {
            now += Duration::from_millis(10);
            let out = head.sent(now, seq, &mut coded(seq), 100, link);
            n += out.len();
            bytes += out.iter().map(Vec::len).sum::<usize>();
        }
        (n, bytes)
    }

    /// No loss reported, no repairs; and none beyond the unused rate.
    #[test]
    fn repairs_need_loss_and_unused_rate() {
        let quiet = LinkNow {
            loss: 0.001,
            ..lossy()
        };
        assert_eq!(drive(&mut RepairSender::new(64, 7), 200, quiet).0, 0);
        // 100 wire bytes every 10 ms are 80 kbit/s; at c = 81 kbit/s the
        // allowance fills at 81 − 80 = 1 kbit/s: 125 bytes/s.
        let tight = LinkNow {
            rate_kbps: 81.0,
            ..lossy()
        };
        let (_, bytes) = drive(&mut RepairSender::new(64, 7), 1000, tight);
        assert!(bytes > 0, "some repairs");
        assert!(bytes <= 10 * 125, "{bytes} repair bytes in 10 s");
    }

    /// A corrupt or foreign repair is refused, and an old generation's
    /// packet changes nothing.
    #[test]
    fn bad_repairs_are_refused() {
        let mut tail = RepairReceiver::new(64);
        assert!(tail.repair(&[1, 2, 3]).is_err());
        let c = coded(0);
        for seq in [100u16, 200, 300, 1600] {
            tail.source(seq, &mut c.clone());
        }
        assert!(tail.source(1600, &mut vec![0u8; 65]).is_empty());
        // A straggler from an old generation finds no decoder; one from
        // far behind means the head restarted, and is taken.
        assert!(tail.source(1570, &mut c.clone()).is_empty());
        assert_eq!(tail.decoders.len(), 3);
        tail.source(3, &mut c.clone());
        assert_eq!(tail.decoders.len(), 1);
        assert_eq!(tail.decoders[0].decoded_count(), 1);
    }
}
