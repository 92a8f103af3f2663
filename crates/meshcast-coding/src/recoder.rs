//! The relay's recoder (Airlift §IV-D "merging", Celerity §5.4): it keeps what it received of a
//! generation and sends fresh random combinations of it, without decoding.

use crate::bucket::{Bucket, PushError, Pushed, RecodeError};
use crate::kernels::Backend;
use crate::rng::SplitMix64;
use crate::symbol::{Coding, Params, ParamsError, Symbol, write_header};

/// Recodes one generation.
///
/// It eliminates arriving coefficient vectors like a decoder (to drop dependent symbols and
/// report its rank) but never computes a source payload. Every recoded symbol is a combination
/// with nonzero weights of every innovative symbol it holds, carried with its dense coefficient
/// vector; a receiver can never gain more rank from a recoder than the recoder has.
#[derive(Clone, Debug)]
pub struct Recoder {
    bucket: Bucket,
    rng: SplitMix64,
    weights: Vec<u8>,
    vector: Vec<u8>,
}

impl Recoder {
    /// A recoder for generation `generation` of `n` symbols of `k` bytes; `seed` drives its
    /// weights (give each relay its own).
    pub fn new(generation: u32, n: usize, k: usize, seed: u64) -> Result<Recoder, ParamsError> {
        let params = Params::new(n, k)?;
        Ok(Recoder {
            bucket: Bucket::new(generation, params, Backend::active()),
            rng: SplitMix64::new(seed),
            weights: Vec::new(),
            vector: vec![0; n],
        })
    }

    /// The same recoder on another kernel backend.
    ///
    /// # Panics
    /// If this CPU cannot run `backend`.
    pub fn with_backend(mut self, backend: Backend) -> Recoder {
        self.bucket.backend = backend.checked();
        self
    }

    /// Empties the recoder for another generation of the same size, keeping its memory.
    pub fn reset(&mut self, generation: u32) {
        self.bucket.reset(generation);
    }

    /// The generation's parameters.
    pub fn params(&self) -> Params {
        self.bucket.params
    }

    /// Degrees of freedom held.
    pub fn rank(&self) -> usize {
        self.bucket.rank
    }

    /// Parses a datagram and keeps the symbol in it if it is innovative.
    pub fn push_packet(&mut self, datagram: &[u8]) -> Result<Pushed, PushError> {
        let s = Symbol::parse(datagram)?;
        self.push(&s)
    }

    /// Keeps a symbol if it is innovative.
    pub fn push(&mut self, symbol: &Symbol<'_>) -> Result<Pushed, PushError> {
        let innovative = self.bucket.insert(symbol)?;
        Ok(Pushed {
            innovative,
            rank: self.bucket.rank,
            newly_decoded: 0,
        })
    }

    /// Writes `payloads.len()` fresh combinations: coefficient vectors (`n` bytes each) into
    /// `vectors`, payloads (`k` bytes each) into `payloads`, in one kernel pass.
    pub fn recode_into(
        &mut self,
        vectors: &mut [&mut [u8]],
        payloads: &mut [&mut [u8]],
    ) -> Result<(), RecodeError> {
        self.bucket
            .recode_into(&mut self.rng, &mut self.weights, vectors, payloads)
    }

    /// Writes one recoded symbol as a datagram (dense coding) into `out`; returns its length.
    pub fn write_recoded(&mut self, out: &mut [u8]) -> Result<usize, RecodeError> {
        let (n, k) = (self.bucket.params.n(), self.bucket.params.k());
        let mut vector = std::mem::take(&mut self.vector);
        let h = write_header(
            self.bucket.generation,
            self.bucket.params.n16(),
            &Coding::Dense(&vector),
            k,
            out,
        )?;
        let result = {
            let (head, payload) = out.split_at_mut(h);
            let r = self.recode_into(&mut [&mut vector[..]], &mut [&mut payload[..k]]);
            head[h - n..].copy_from_slice(&vector);
            r
        };
        self.vector = vector;
        result.map(|()| h + k)
    }
}
