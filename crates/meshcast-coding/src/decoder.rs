//! The progressive decoder: every symbol is eliminated on arrival, the rank (degrees of
//! freedom, what Airlift §IV-B acknowledges) is known after each one, and every source symbol
//! is handed out the moment it is decodable — a systematic one at once, without a copy.

use crate::bucket::{Bucket, PushError, Pushed, RecodeError};
use crate::kernels::{Backend, Mode};
use crate::rng::SplitMix64;
use crate::rows::Rows;
use crate::symbol::{Params, ParamsError, Symbol};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Missing,
    /// Arrived uncoded: its payload is in this slot.
    InSlot(u16),
    /// Decoded into the output rows.
    Decoded,
}

/// Decodes one generation.
///
/// ```
/// use meshcast_coding::{Decoder, Encoder};
///
/// let mut enc = Encoder::new(7, 4, 16, 42).unwrap();
/// for i in 0..4 {
///     enc.set_source(i, &[i as u8; 16]).unwrap();
/// }
/// let mut dec = Decoder::new(7, 4, 16).unwrap();
/// let mut packet = [0u8; 64];
/// // Source 1 is lost; one repair symbol replaces it.
/// for i in [0, 2, 3] {
///     let len = enc.write_systematic(i, &mut packet).unwrap();
///     dec.push_packet(&packet[..len]).unwrap();
/// }
/// let len = enc.write_repair(0, &mut packet).unwrap();
/// let pushed = dec.push_packet(&packet[..len]).unwrap();
/// assert_eq!((pushed.rank, pushed.newly_decoded), (4, 1));
/// assert_eq!(dec.source(1), Some(&[1u8; 16][..]));
/// ```
#[derive(Clone, Debug)]
pub struct Decoder {
    bucket: Bucket,
    out: Rows,
    state: Vec<Source>,
    decoded: usize,
    newly: Vec<u16>,
    batch: Vec<(u16, u16)>,
    /// Columns without a pivot, for `Bucket::solved`.
    free: Vec<u16>,
    weights: Vec<u8>,
}

impl Decoder {
    /// A decoder for generation `generation` of `n` symbols of `k` bytes, on
    /// [`Backend::active`].
    pub fn new(generation: u32, n: usize, k: usize) -> Result<Decoder, ParamsError> {
        let params = Params::new(n, k)?;
        Ok(Decoder {
            bucket: Bucket::new(generation, params, Backend::active()),
            out: Rows::new(n, k),
            state: vec![Source::Missing; n],
            decoded: 0,
            newly: Vec::with_capacity(n),
            batch: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            weights: Vec::new(),
        })
    }

    /// The same decoder on another kernel backend.
    ///
    /// # Panics
    /// If this CPU cannot run `backend`.
    pub fn with_backend(mut self, backend: Backend) -> Decoder {
        self.bucket.backend = backend.checked();
        self
    }

    /// Empties the decoder for another generation of the same size, keeping its memory.
    pub fn reset(&mut self, generation: u32) {
        // The output rows need no zeroing: a source's row is written whole (with its zero
        // padding) before it is ever handed out.
        self.bucket.reset(generation);
        self.state.fill(Source::Missing);
        self.decoded = 0;
        self.newly.clear();
    }

    /// The generation this decoder holds.
    pub fn generation(&self) -> u32 {
        self.bucket.generation
    }

    /// The generation's parameters.
    pub fn params(&self) -> Params {
        self.bucket.params
    }

    /// Parses a datagram and pushes the symbol in it.
    #[inline]
    pub fn push_packet(&mut self, datagram: &[u8]) -> Result<Pushed, PushError> {
        let s = Symbol::parse(datagram)?;
        self.push(&s)
    }

    /// Eliminates one symbol. A symbol that does not fit this generation is rejected with an
    /// error and changes nothing; a dependent one is reported (`innovative == false`) and
    /// dropped.
    pub fn push(&mut self, symbol: &Symbol<'_>) -> Result<Pushed, PushError> {
        self.newly.clear();
        if let Some(slot) = self.bucket.insert_unit(symbol, true) {
            self.hand_out_unit(slot);
            return Ok(Pushed {
                innovative: true,
                rank: self.bucket.rank,
                newly_decoded: 1,
            });
        }
        let innovative = self.bucket.insert(symbol)?;
        Ok(self.after_insert(innovative))
    }

    /// Hands out what an insertion solved and reports it.
    fn after_insert(&mut self, innovative: bool) -> Pushed {
        if innovative {
            self.collect_solved();
        }
        Pushed {
            innovative,
            rank: self.bucket.rank,
            newly_decoded: self.newly.len(),
        }
    }

    /// Hands out the source of unit row `r`, which arrived uncoded into slot `r`.
    #[inline]
    fn hand_out_unit(&mut self, r: usize) {
        let p = self.bucket.pivot(r);
        debug_assert_eq!(self.state[p], Source::Missing);
        self.state[p] = Source::InSlot(r as u16);
        self.newly.push(p as u16);
        self.decoded += 1;
    }

    /// Hands out the rows the last insertion solved: uncoded ones in place, the others by one
    /// kernel call over the stored payloads.
    fn collect_solved(&mut self) {
        // The common case, a systematic symbol that changed no other row: its source is
        // handed out in place.
        if let [r] = self.bucket.touched[..]
            && self.bucket.is_unit(usize::from(r))
        {
            self.hand_out_unit(usize::from(r));
            return;
        }
        self.batch.clear();
        self.bucket.free_columns(&mut self.free);
        for &r in &self.bucket.touched {
            let r = usize::from(r);
            let p = self.bucket.pivot(r);
            if self.state[p] != Source::Missing || !self.bucket.solved(r, &self.free) {
                continue;
            }
            self.newly.push(p as u16);
            if self.bucket.is_unit(r) {
                self.state[p] = Source::InSlot(r as u16);
            } else {
                self.batch.push((p as u16, r as u16));
            }
        }
        self.newly.sort_unstable();
        self.decoded += self.newly.len();
        if self.batch.is_empty() {
            return;
        }
        self.batch.sort_unstable();
        let rank = self.bucket.rank;
        self.weights.clear();
        for &(_, r) in &self.batch {
            self.weights
                .extend_from_slice(self.bucket.transform(usize::from(r)));
        }
        let k = self.bucket.params.k();
        let (backend, weights, bucket) = (self.bucket.backend, &self.weights, &self.bucket);
        let picks = self.batch.iter().map(|&(p, _)| usize::from(p));
        self.out.with_padded_mut_at(picks, |outputs| {
            bucket.with_slots(rank, true, |inputs, padded| {
                if !padded {
                    // Handed-over datagrams are k bytes long: so are the outputs then.
                    outputs.iter_mut().for_each(|o| {
                        let row = std::mem::take(o);
                        *o = &mut row[..k];
                    });
                }
                backend.combine_src(weights, inputs, outputs, Mode::Assign)
            })
        });
        for &(p, _) in &self.batch {
            self.state[usize::from(p)] = Source::Decoded;
        }
    }

    /// Like [`push_packet`](Decoder::push_packet), but the decoder keeps the datagram instead
    /// of copying its payload (zero-copy receive: a source that arrived uncoded is then read
    /// from the datagram itself). Whatever the outcome, the buffer stays with the decoder until
    /// it is no longer needed; [`reclaim`](Decoder::reclaim) hands such buffers back for the
    /// next receive.
    pub fn push_owned(&mut self, datagram: Vec<u8>) -> Result<Pushed, PushError> {
        self.newly.clear();
        let innovative = self.bucket.insert_owned(datagram)?;
        Ok(self.after_insert(innovative))
    }

    /// Moves the datagrams [`push_owned`](Decoder::push_owned) gave the decoder and that it no
    /// longer needs (dependent or rejected ones, and after [`reset`](Decoder::reset) all of
    /// them) into `into`.
    pub fn reclaim(&mut self, into: &mut Vec<Vec<u8>>) {
        into.append(&mut self.bucket.spare);
    }

    /// Degrees of freedom received: the number of linearly independent symbols.
    pub fn rank(&self) -> usize {
        self.bucket.rank
    }

    /// Whether every source symbol is decoded.
    pub fn is_complete(&self) -> bool {
        self.decoded == self.bucket.params.n()
    }

    /// Source symbols decodable so far.
    pub fn decoded_count(&self) -> usize {
        self.decoded
    }

    /// The source symbols the last [`push`](Decoder::push) made decodable, ascending.
    pub fn newly_decoded(&self) -> &[u16] {
        &self.newly
    }

    /// Source symbol `i`, if it is decodable yet.
    pub fn source(&self, i: usize) -> Option<&[u8]> {
        match self.state.get(i)? {
            Source::Missing => None,
            Source::InSlot(s) => Some(self.bucket.slot(usize::from(*s))),
            Source::Decoded => Some(self.out.row(i)),
        }
    }

    /// Symbols pushed so far, and how many of them were linearly dependent (or late).
    pub fn counts(&self) -> (u64, u64) {
        self.bucket.counts()
    }

    /// Fresh combinations of what this decoder has received, as a relay would send them (see
    /// [`Recoder::recode_into`](crate::Recoder::recode_into)); `rng` draws the weights.
    pub fn recode_into(
        &mut self,
        rng: &mut SplitMix64,
        vectors: &mut [&mut [u8]],
        payloads: &mut [&mut [u8]],
    ) -> Result<(), RecodeError> {
        self.bucket
            .recode_into(rng, &mut self.weights, vectors, payloads)
    }
}
