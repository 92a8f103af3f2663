//! The systematic encoder (Airlift §IV-B): the n source symbols of a generation pass through
//! unchanged, then any number of repair symbols, each a combination of all n sources with
//! coefficients expanded from a 32-bit seed that travels in its header.

use crate::kernels::{Backend, Mode};
use crate::rng::{self, SplitMix64};
use crate::rows::Rows;
use crate::symbol::{Coding, EmitError, Params, ParamsError, write_header};

/// A request the encoder cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A source index at or past n.
    #[error("source {index} in a generation of {n}")]
    IndexOutOfRange {
        /// The index.
        index: usize,
        /// The generation size.
        n: usize,
    },
    /// Source data longer than the symbol size.
    #[error("source of {len} bytes, symbols hold {k}")]
    SourceTooLong {
        /// Its length.
        len: usize,
        /// The symbol size.
        k: usize,
    },
    /// An output row whose length is not the symbol size.
    #[error("output of {got} bytes, symbols hold {k}")]
    WrongOutputLength {
        /// The symbol size.
        k: usize,
        /// The output's length.
        got: usize,
    },
    /// The datagram does not fit.
    #[error(transparent)]
    Emit(#[from] EmitError),
}

/// Encodes one generation.
#[derive(Clone, Debug)]
pub struct Encoder {
    params: Params,
    generation: u32,
    key: u64,
    backend: Backend,
    sources: Rows,
}

impl Encoder {
    /// An encoder for generation `generation` of `n` zeroed source symbols of `k` bytes.
    /// `key` (per session) and the generation pick the repair seeds, so that two sessions or
    /// two generations never repeat the same coefficients.
    pub fn new(generation: u32, n: usize, k: usize, key: u64) -> Result<Encoder, ParamsError> {
        let params = Params::new(n, k)?;
        Ok(Encoder {
            params,
            generation,
            key,
            backend: Backend::active(),
            sources: Rows::new(n, k),
        })
    }

    /// The same encoder on another kernel backend.
    ///
    /// # Panics
    /// If this CPU cannot run `backend`.
    pub fn with_backend(mut self, backend: Backend) -> Encoder {
        self.backend = backend.checked();
        self
    }

    /// Starts another generation of the same size: sources zeroed, memory kept.
    pub fn reset(&mut self, generation: u32) {
        self.generation = generation;
        self.sources.clear();
    }

    /// The generation this encoder holds.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The generation's parameters.
    pub fn params(&self) -> Params {
        self.params
    }

    fn check_index(&self, i: usize) -> Result<(), EncodeError> {
        if i >= self.params.n() {
            return Err(EncodeError::IndexOutOfRange {
                index: i,
                n: self.params.n(),
            });
        }
        Ok(())
    }

    /// Copies source symbol `i`; shorter data is padded with zeros (framing the media inside
    /// the symbols is the caller's business).
    pub fn set_source(&mut self, i: usize, data: &[u8]) -> Result<(), EncodeError> {
        self.check_index(i)?;
        let k = self.params.k();
        if data.len() > k {
            return Err(EncodeError::SourceTooLong { len: data.len(), k });
        }
        let row = self.sources.row_mut(i);
        row[..data.len()].copy_from_slice(data);
        row[data.len()..].fill(0);
        Ok(())
    }

    /// Source symbol `i`, to fill in place (no copy).
    pub fn source_mut(&mut self, i: usize) -> Result<&mut [u8], EncodeError> {
        self.check_index(i)?;
        Ok(self.sources.row_mut(i))
    }

    /// Source symbol `i`.
    pub fn source(&self, i: usize) -> Result<&[u8], EncodeError> {
        self.check_index(i)?;
        Ok(self.sources.row(i))
    }

    /// The seed of repair symbol `j` of this generation.
    pub fn repair_seed(&self, j: u32) -> u32 {
        let mix = self.key ^ (u64::from(self.generation) << 32) ^ u64::from(j);
        SplitMix64::new(mix).next() as u32
    }

    /// Repair symbols `first, first + 1, …` into `out` (`k` bytes each), all in one kernel pass
    /// over the sources.
    pub fn repairs_into(&self, first: u32, out: &mut [&mut [u8]]) -> Result<(), EncodeError> {
        let (n, k) = (self.params.n(), self.params.k());
        if let Some(o) = out.iter().find(|o| o.len() != k) {
            return Err(EncodeError::WrongOutputLength { k, got: o.len() });
        }
        // Small matrices (up to 16 repairs of 64 sources) stay on the stack.
        let mut stack = [0u8; 1024];
        let mut heap = Vec::new();
        let coefs = if out.len() * n <= stack.len() {
            &mut stack[..out.len() * n]
        } else {
            heap.resize(out.len() * n, 0);
            &mut heap[..]
        };
        for (j, row) in coefs.chunks_exact_mut(n).enumerate() {
            rng::expand(self.repair_seed(first.wrapping_add(j as u32)), row);
        }
        let inputs = self.sources.src(n, false);
        self.backend.combine_src(coefs, inputs, out, Mode::Assign);
        Ok(())
    }

    /// Writes source symbol `i` as a datagram into `out`; returns its length.
    pub fn write_systematic(&self, i: usize, out: &mut [u8]) -> Result<usize, EncodeError> {
        self.check_index(i)?;
        let k = self.params.k();
        let coding = Coding::Systematic(i as u16);
        let h = write_header(self.generation, self.params.n16(), &coding, k, out)?;
        out[h..h + k].copy_from_slice(self.sources.row(i));
        Ok(h + k)
    }

    /// Writes repair symbol `j` as a datagram into `out`; returns its length.
    pub fn write_repair(&self, j: u32, out: &mut [u8]) -> Result<usize, EncodeError> {
        self.write_repairs(j, &mut [out])
    }

    /// Writes repair symbols `first, first + 1, …` as datagrams, one per buffer, in one kernel
    /// pass; returns their common length.
    pub fn write_repairs(&self, first: u32, out: &mut [&mut [u8]]) -> Result<usize, EncodeError> {
        let k = self.params.k();
        let mut h = 0;
        for (j, buf) in out.iter_mut().enumerate() {
            let coding = Coding::Seeded(self.repair_seed(first.wrapping_add(j as u32)));
            h = write_header(self.generation, self.params.n16(), &coding, k, buf)?;
        }
        let mut payloads: Vec<&mut [u8]> = out.iter_mut().map(|b| &mut b[h..h + k]).collect();
        self.repairs_into(first, &mut payloads)?;
        Ok(h + k)
    }
}
