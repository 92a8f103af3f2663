//! What a decoder and a recoder both hold for one generation (Airlift §IV-B's "bucket"): the
//! innovative symbols received so far, and their coefficient vectors in reduced row-echelon
//! form, kept incrementally as each symbol arrives.
//!
//! Payload arithmetic is deferred: each RREF row keeps, beside its coefficients, the
//! combination of *received payloads* it stands for (its "transform", over the slots in which
//! the payloads were stored). Eliminating a symbol therefore touches only 2n bytes per row, not
//! k; the payload of a source symbol is computed once, when its row becomes a unit vector, by
//! one multi-row kernel call over the stored payloads. At k = 4 KiB this is 1.2–2.2× faster
//! than eliminating payloads row by row (EVIDENCE.md), and it never inverts a matrix at the end.
//!
//! Systematic symbols get a shortcut: a row that is e_q with transform e_slot ("unit") is
//! eliminated by clearing one coefficient and adding one transform entry, so the 75% of a
//! generation that usually arrives uncoded costs O(rows) byte operations, not O(rows·n).
//! A unit row is never written out: its pivot says all there is to know, every pass over rows
//! walks only the coded ones (`coded`), and its original coefficient vector is written only
//! when a recoder needs it. A systematic symbol thus costs its payload copy and a few stores.

use crate::gf;
use crate::kernels::{Backend, Mode, Src};
use crate::rng::SplitMix64;
use crate::rows::Rows;
use crate::symbol::{Coding, Params, ParseError, Symbol};

const NONE: u16 = u16::MAX;

/// A symbol that cannot enter this generation's bucket.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The datagram is not a valid symbol.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// It belongs to another generation.
    #[error("symbol of generation {got}, this bucket holds generation {expected}")]
    WrongGeneration {
        /// This bucket's generation.
        expected: u32,
        /// The symbol's.
        got: u32,
    },
    /// Its generation size differs from this bucket's.
    #[error("symbol for a generation of {got}, this bucket's has {expected}")]
    WrongGenerationSize {
        /// This bucket's n.
        expected: usize,
        /// The symbol's.
        got: usize,
    },
    /// Its payload length differs from the symbol size.
    #[error("payload of {got} bytes, symbols here have {expected}")]
    WrongPayloadLength {
        /// The symbol size k.
        expected: usize,
        /// The payload's length.
        got: usize,
    },
    /// A hand-built symbol whose dense vector is not n long, or whose index is not below n.
    #[error("coefficient vector does not match a generation of {n}")]
    BadCoding {
        /// The generation size.
        n: usize,
    },
}

/// A recoding request that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecodeError {
    /// Nothing of this generation has been received yet.
    #[error("nothing received yet: no combination to send")]
    Empty,
    /// Output rows of the wrong length or count.
    #[error("{what}: expected {expected} bytes, got {got}")]
    WrongLength {
        /// Which output.
        what: &'static str,
        /// Bytes expected.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// The output buffer is too small for the datagram.
    #[error(transparent)]
    Emit(#[from] crate::symbol::EmitError),
}

/// What one symbol did to the bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// Whether it raised the rank; `false` means linearly dependent (or arriving after the
    /// generation was complete), and the symbol was dropped.
    pub innovative: bool,
    /// Degrees of freedom received: the rank after this symbol.
    pub rank: usize,
    /// Source symbols that became decodable with this symbol (see `Decoder::newly_decoded`).
    pub newly_decoded: usize,
}

#[derive(Clone, Debug)]
pub(crate) struct Bucket {
    pub(crate) params: Params,
    pub(crate) generation: u32,
    pub(crate) backend: Backend,
    /// Received innovative payloads, slot i = the i-th innovative symbol (= RREF row i).
    slots: Rows,
    /// Datagrams handed over whole (`Decoder::push_owned`): slot i's payload is then
    /// `held[i].0[held[i].1..][..k]` and `slots` row i is unused.
    held: Vec<Option<(Vec<u8>, usize)>>,
    /// Handed-over datagrams no longer needed (dependent, rejected, or from a past
    /// generation), for the caller to reuse.
    pub(crate) spare: Vec<Vec<u8>>,
    /// Slot i's coefficient vector as received (n bytes each), for recoding. Written on
    /// insertion for coded symbols only; a unit slot's (e_pivot) is written by `recode_into`.
    orig: Rows,
    /// RREF rows, `width` bytes apart: n coefficients, n transform entries over the slots,
    /// zero padding to a multiple of 64 so that row operations run in whole vectors. Only the
    /// coded rows are kept here; a unit row's bytes are stale.
    rows: Vec<u8>,
    width: usize,
    pivot: Vec<u16>,
    row_at: Vec<u16>,
    unit: Vec<bool>,
    /// The rows that are not unit rows (combinations), ascending: while there are none, a
    /// systematic symbol changes no other row.
    coded: Vec<u16>,
    pub(crate) rank: usize,
    /// Recoded coefficient vectors, padded so that their combination runs in whole vectors.
    vectors: Rows,
    /// Rows modified by the last insertion.
    pub(crate) touched: Vec<u16>,
    received: u64,
    dependent: u64,
}

impl Bucket {
    pub(crate) fn new(generation: u32, params: Params, backend: Backend) -> Bucket {
        let n = params.n();
        let width = (2 * n).div_ceil(64) * 64;
        Bucket {
            params,
            generation,
            backend,
            slots: Rows::new(n, params.k()),
            held: vec![None; n],
            spare: Vec::new(),
            orig: Rows::new(n, n),
            rows: vec![0; n * width],
            width,
            pivot: vec![NONE; n],
            row_at: vec![NONE; n],
            unit: vec![false; n],
            coded: Vec::with_capacity(n),
            rank: 0,
            vectors: Rows::new(0, n),
            touched: Vec::with_capacity(n),
            received: 0,
            dependent: 0,
        }
    }

    /// Empties the bucket for another generation, keeping its memory. Nothing is zeroed:
    /// `insert` overwrites a slot's k bytes and a row's whole width before reading them, and
    /// the slots' padding is still zero (see `rows.rs`).
    pub(crate) fn reset(&mut self, generation: u32) {
        self.generation = generation;
        for h in &mut self.held {
            if let Some((buf, _)) = h.take() {
                self.spare.push(buf);
            }
        }
        self.pivot.fill(NONE);
        self.row_at.fill(NONE);
        self.unit.fill(false);
        self.coded.clear();
        self.rank = 0;
        self.touched.clear();
        self.received = 0;
        self.dependent = 0;
    }

    /// Symbols offered so far, and how many of them were dependent.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.received, self.dependent)
    }

    #[inline]
    fn check(&self, s: &Symbol<'_>) -> Result<(), PushError> {
        let n = self.params.n();
        if s.generation != self.generation {
            return Err(PushError::WrongGeneration {
                expected: self.generation,
                got: s.generation,
            });
        }
        if usize::from(s.n) != n {
            return Err(PushError::WrongGenerationSize {
                expected: n,
                got: usize::from(s.n),
            });
        }
        if s.payload.len() != self.params.k() {
            return Err(PushError::WrongPayloadLength {
                expected: self.params.k(),
                got: s.payload.len(),
            });
        }
        match s.coding {
            Coding::Systematic(i) if usize::from(i) >= n => Err(PushError::BadCoding { n }),
            Coding::Dense(v) if v.len() != n => Err(PushError::BadCoding { n }),
            _ => Ok(()),
        }
    }

    /// The coefficient part of RREF row r (a coded row).
    fn coef(&self, r: usize) -> &[u8] {
        let n = self.params.n();
        &self.rows[r * self.width..r * self.width + n]
    }

    /// Slot i's payload (`k` bytes).
    pub(crate) fn slot(&self, i: usize) -> &[u8] {
        match &self.held[i] {
            Some((buf, off)) => &buf[*off..*off + self.params.k()],
            None => self.slots.row(i),
        }
    }

    /// Slots `0..count` as kernel input, handed to `f` with whether they are padded to whole
    /// vectors: they are when `padded` asks for it and none is a handed-over datagram (those
    /// are exactly k bytes long).
    pub(crate) fn with_slots<T>(
        &self,
        count: usize,
        padded: bool,
        f: impl FnOnce(Src<'_>, bool) -> T,
    ) -> T {
        if self.held[..count].iter().any(Option::is_some) {
            // Up to the usual generation sizes' worth of slots without allocating.
            crate::rows::on_stack::<65, _, _>((0..count).map(|i| self.slot(i)), |list| {
                f(Src::List(list), false)
            })
        } else {
            f(self.slots.src(count, padded), padded)
        }
    }

    /// Like [`Bucket::insert`], keeping the datagram itself instead of a copy of its payload.
    /// Whatever happens, the buffer stays with the bucket (held, or in `spare`).
    pub(crate) fn insert_owned(&mut self, datagram: Vec<u8>) -> Result<bool, PushError> {
        let parsed = Symbol::parse(&datagram).map(|s| {
            let off = s.payload.as_ptr() as usize - datagram.as_ptr() as usize;
            match self.insert_unit(&s, false) {
                Some(_) => (Ok(true), off),
                None => (self.insert_inner(&s, false), off),
            }
        });
        match parsed {
            Ok((Ok(true), off)) => {
                let slot = self.rank - 1;
                self.held[slot] = Some((datagram, off));
                Ok(true)
            }
            Ok((result, _)) => {
                self.spare.push(datagram);
                result
            }
            Err(e) => {
                self.spare.push(datagram);
                Err(e.into())
            }
        }
    }

    /// The transform part of RREF row r, a coded row (entries over slots `0..rank`).
    pub(crate) fn transform(&self, r: usize) -> &[u8] {
        let n = self.params.n();
        &self.rows[r * self.width + n..r * self.width + n + self.rank]
    }

    pub(crate) fn pivot(&self, r: usize) -> usize {
        usize::from(self.pivot[r])
    }

    pub(crate) fn is_unit(&self, r: usize) -> bool {
        self.unit[r]
    }

    /// The columns no row pivots on yet, ascending, into `out`.
    pub(crate) fn free_columns(&self, out: &mut Vec<u16>) {
        out.clear();
        out.extend((0..self.params.n() as u16).filter(|&q| self.row_at[usize::from(q)] == NONE));
    }

    /// Whether row r's coefficients are the unit vector of its pivot: its source is decodable.
    /// `free` is [`Bucket::free_columns`]: an RREF row is zero in every other row's pivot
    /// column, so only those columns can hold another nonzero (none at full rank). Scanning
    /// the whole row instead took a fifth of the n = 64 decode.
    #[inline]
    pub(crate) fn solved(&self, r: usize, free: &[u16]) -> bool {
        self.unit[r] || {
            let c = self.coef(r);
            free.iter().all(|&q| c[usize::from(q)] == 0)
        }
    }

    /// Eliminates one symbol into the bucket. Returns whether it was innovative; the rows it
    /// changed (including the new one) are left in `touched`.
    pub(crate) fn insert(&mut self, s: &Symbol<'_>) -> Result<bool, PushError> {
        self.insert_inner(s, true)
    }

    /// `insert`'s most common case, inlined into the caller: a valid systematic symbol of a
    /// source that has no row yet, while every row is a unit row, so that no other row
    /// changes. Returns the slot it took, or `None`, having changed nothing, when the symbol
    /// needs the general path (which also reports any error). `copy` as for `insert_inner`.
    #[inline]
    pub(crate) fn insert_unit(&mut self, s: &Symbol<'_>, copy: bool) -> Option<usize> {
        let Coding::Systematic(q) = s.coding else {
            return None;
        };
        let (q, new) = (usize::from(q), self.rank);
        let fits = new < self.params.n() && self.check(s).is_ok();
        if !fits || !self.coded.is_empty() || self.row_at[q] != NONE {
            return None;
        }
        self.received += 1;
        self.touched.clear();
        self.place(new, q, true);
        self.admit(new, copy.then_some(s.payload));
        Some(new)
    }

    /// Records row `new` as the one pivoting on column `q`.
    #[inline]
    fn place(&mut self, new: usize, q: usize, unit: bool) {
        self.unit[new] = unit;
        self.pivot[new] = q as u16;
        self.row_at[q] = new as u16;
    }

    /// Completes an innovative insertion into slot `new`, copying `payload` there if given.
    #[inline]
    fn admit(&mut self, new: usize, payload: Option<&[u8]>) {
        self.touched.push(new as u16);
        // Only slots below the rank ever hold a datagram (reset releases them all).
        debug_assert!(self.held[new].is_none());
        if let Some(p) = payload {
            self.backend.copy_row(self.slots.row_mut(new), p);
        }
        self.rank += 1;
    }

    fn insert_inner(&mut self, s: &Symbol<'_>, copy: bool) -> Result<bool, PushError> {
        self.check(s)?;
        self.touched.clear();
        self.received += 1;
        let n = self.params.n();
        let new = self.rank;
        if new == n {
            self.dependent += 1;
            return Ok(false);
        }
        let w = self.width;
        match s.coding {
            Coding::Systematic(q) if self.row_at[usize::from(q)] == NONE => {
                // A new unit row e_q (transform e_new): only rows with a nonzero in column q
                // change, each by one coefficient and one transform entry.
                let q = usize::from(q);
                for &r in &self.coded {
                    let row = &mut self.rows[usize::from(r) * w..][..w];
                    let f = row[q];
                    if f != 0 {
                        row[q] = 0;
                        row[n + new] ^= f;
                        self.touched.push(r);
                    }
                }
                self.place(new, q, true);
            }
            coding => {
                // The new row is built where it will stay: slots fill in order, so every
                // coded row so far lies below it.
                let (above, row) = self.rows.split_at_mut(new * w);
                let row = &mut row[..w];
                let (coef, transform) = row.split_at_mut(n);
                coding.expand(coef);
                self.orig.row_mut(new).copy_from_slice(coef);
                transform.fill(0);
                transform[new] = 1;
                // Forward: clear every pivot column of the new row (RREF rows have zeros in
                // each other's pivot columns, so one pass in any order suffices). Unit rows
                // first: each moves one coefficient into the transform (whose entry there is
                // still 0, so it is a plain store), and none touches another's pivot column.
                let rank = self.rank;
                let pivots = self.pivot[..rank].iter().zip(&self.unit[..rank]);
                for (t, (&p, &unit)) in transform[..rank].iter_mut().zip(pivots) {
                    if unit {
                        let c = &mut coef[usize::from(p)];
                        *t = *c;
                        *c = 0;
                    }
                }
                for &r in &self.coded {
                    let r = usize::from(r);
                    let f = row[usize::from(self.pivot[r])];
                    if f != 0 {
                        let coded = &above[r * w..(r + 1) * w];
                        self.backend.mul_row(row, coded, f, Mode::Accumulate);
                    }
                }
                let Some(q) = row[..n].iter().position(|&b| b != 0) else {
                    self.dependent += 1;
                    return Ok(false);
                };
                let inv = gf::inv(row[q]).expect("the pivot is nonzero");
                self.backend.scale(row, inv);
                // Backward: clear column q from the other rows (unit rows have 0 there).
                for &r in &self.coded {
                    let coded = &mut above[usize::from(r) * w..][..w];
                    let f = coded[q];
                    if f != 0 {
                        self.backend.mul_row(coded, row, f, Mode::Accumulate);
                        self.touched.push(r);
                    }
                }
                self.coded.push(new as u16);
                self.place(new, q, false);
            }
        }
        self.admit(new, copy.then_some(s.payload));
        Ok(true)
    }

    /// Fresh random combinations of the stored symbols: for each output, nonzero random
    /// weights over the slots, applied to the payloads and to their original coefficient
    /// vectors alike, so each output is a valid symbol of the generation (Airlift §IV-D).
    pub(crate) fn recode_into(
        &mut self,
        rng: &mut SplitMix64,
        weights: &mut Vec<u8>,
        vectors: &mut [&mut [u8]],
        payloads: &mut [&mut [u8]],
    ) -> Result<(), RecodeError> {
        let (n, k) = (self.params.n(), self.params.k());
        if self.rank == 0 {
            return Err(RecodeError::Empty);
        }
        if vectors.len() != payloads.len() {
            return Err(RecodeError::WrongLength {
                what: "vector rows for payload rows",
                expected: payloads.len(),
                got: vectors.len(),
            });
        }
        if let Some(v) = vectors.iter().find(|v| v.len() != n) {
            return Err(RecodeError::WrongLength {
                what: "coefficient vector",
                expected: n,
                got: v.len(),
            });
        }
        if let Some(p) = payloads.iter().find(|p| p.len() != k) {
            return Err(RecodeError::WrongLength {
                what: "payload",
                expected: k,
                got: p.len(),
            });
        }
        weights.resize(payloads.len() * self.rank, 0);
        rng.fill(weights);
        for w in weights.iter_mut() {
            // Nonzero weights: a zero combination would be a wasted datagram.
            while *w == 0 {
                *w = rng.next() as u8;
            }
        }
        let b = self.backend;
        self.with_slots(self.rank, false, |src, _| {
            b.combine_src(weights, src, payloads, Mode::Assign)
        });
        for r in (0..self.rank).filter(|&r| self.unit[r]) {
            Coding::Systematic(self.pivot[r]).expand(self.orig.row_mut(r));
        }
        if self.vectors.count() < vectors.len() {
            self.vectors = Rows::new(vectors.len(), n);
        }
        let orig = self.orig.src(self.rank, true);
        self.vectors.with_padded_mut_at(0..vectors.len(), |padded| {
            b.combine_src(weights, orig, padded, Mode::Assign);
            for (v, p) in vectors.iter_mut().zip(padded.iter()) {
                v.copy_from_slice(&p[..n]);
            }
        });
        Ok(())
    }
}
