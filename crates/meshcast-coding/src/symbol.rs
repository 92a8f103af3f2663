//! Coded symbols on the wire: a generation id, the generation size, how the coefficient vector
//! is carried, and the payload.
//!
//! ```text
//! offset size  field
//! 0      4     generation   u32, big-endian
//! 4      2     n            generation size, 1..=MAX_SYMBOLS
//! 6      1     coding       0 = systematic, 1 = seeded, 2 = dense
//! 7      2     index        coding 0: the source symbol this is (0..n)
//!        4     seed         coding 1: coefficients = rng::expand(seed, n)
//!        n     coefficients coding 2: the coefficient vector itself
//! …      k     payload      the rest of the datagram
//! ```
//!
//! Systematic symbols (Airlift §IV-B's systematic code) carry a source symbol unchanged; the
//! encoder's repair symbols carry a 4-byte seed instead of n coefficients; a relay's recoded
//! symbols are arbitrary combinations and carry their vector densely (§IV-D). Parsing checks
//! every field and length and never panics.

use crate::rng;

/// The largest generation size. Decoders keep two n×n byte matrices, so n = 1024 costs 2 MiB.
pub const MAX_SYMBOLS: usize = 1024;
/// The largest payload: what fits in one UDP datagram.
pub const MAX_SYMBOL_BYTES: usize = 65_507;

const CODING_SYSTEMATIC: u8 = 0;
const CODING_SEEDED: u8 = 1;
const CODING_DENSE: u8 = 2;

/// Bytes before the coding-specific field.
const FIXED: usize = 7;

/// How a symbol's coefficient vector travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding<'a> {
    /// Source symbol `index`: the unit vector e_index.
    Systematic(u16),
    /// The vector [`rng::expand`] makes from this seed.
    Seeded(u32),
    /// The vector itself, `n` bytes.
    Dense(&'a [u8]),
}

impl Coding<'_> {
    /// Writes the coefficient vector into `out` (`n` bytes).
    ///
    /// # Panics
    /// If a dense vector's length differs from `out.len()`.
    pub fn expand(&self, out: &mut [u8]) {
        match *self {
            Coding::Systematic(i) => {
                out.fill(0);
                out[usize::from(i)] = 1;
            }
            Coding::Seeded(seed) => rng::expand(seed, out),
            Coding::Dense(v) => out.copy_from_slice(v),
        }
    }

    /// Header bytes for this coding in a generation of `n`.
    pub fn header_len(&self, n: usize) -> usize {
        FIXED
            + match self {
                Coding::Systematic(_) => 2,
                Coding::Seeded(_) => 4,
                Coding::Dense(_) => n,
            }
    }
}

/// A parsed symbol, borrowing the datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// The generation it belongs to.
    pub generation: u32,
    /// The generation size.
    pub n: u16,
    /// Its coefficient vector.
    pub coding: Coding<'a>,
    /// Its payload.
    pub payload: &'a [u8],
}

/// A datagram that is not a valid symbol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Shorter than its header says.
    #[error("symbol truncated: {need} header bytes needed, {have} present")]
    Truncated {
        /// Bytes the header needs.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The generation size is 0 or above [`MAX_SYMBOLS`].
    #[error("generation size {0} outside 1..={MAX_SYMBOLS}")]
    BadGenerationSize(u16),
    /// An unknown coding byte.
    #[error("unknown coding {0}")]
    UnknownCoding(u8),
    /// A systematic index at or past the generation size.
    #[error("systematic index {index} in a generation of {n}")]
    IndexOutOfRange {
        /// The index.
        index: u16,
        /// The generation size.
        n: u16,
    },
    /// No payload, or one larger than [`MAX_SYMBOL_BYTES`].
    #[error("payload of {0} bytes outside 1..={MAX_SYMBOL_BYTES}")]
    BadPayloadLength(usize),
}

/// A symbol could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The buffer is too small.
    #[error("buffer of {have} bytes, symbol needs {need}")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
}

impl<'a> Symbol<'a> {
    /// Parses a datagram.
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Symbol<'a>, ParseError> {
        let truncated = |need| ParseError::Truncated {
            need,
            have: bytes.len(),
        };
        let fixed: &[u8; FIXED] = bytes
            .get(..FIXED)
            .and_then(|b| b.try_into().ok())
            .ok_or(truncated(FIXED))?;
        let generation = u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
        let n = u16::from_be_bytes([fixed[4], fixed[5]]);
        if n == 0 || usize::from(n) > MAX_SYMBOLS {
            return Err(ParseError::BadGenerationSize(n));
        }
        let rest = &bytes[FIXED..];
        let (coding, used) = match fixed[6] {
            CODING_SYSTEMATIC => {
                let b = rest.get(..2).ok_or(truncated(FIXED + 2))?;
                let index = u16::from_be_bytes([b[0], b[1]]);
                if index >= n {
                    return Err(ParseError::IndexOutOfRange { index, n });
                }
                (Coding::Systematic(index), 2)
            }
            CODING_SEEDED => {
                let b = rest.get(..4).ok_or(truncated(FIXED + 4))?;
                (
                    Coding::Seeded(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                    4,
                )
            }
            CODING_DENSE => {
                let nn = usize::from(n);
                let v = rest.get(..nn).ok_or(truncated(FIXED + nn))?;
                (Coding::Dense(v), nn)
            }
            other => return Err(ParseError::UnknownCoding(other)),
        };
        let payload = &rest[used..];
        if payload.is_empty() || payload.len() > MAX_SYMBOL_BYTES {
            return Err(ParseError::BadPayloadLength(payload.len()));
        }
        Ok(Symbol {
            generation,
            n,
            coding,
            payload,
        })
    }

    /// The whole datagram's length.
    pub fn len(&self) -> usize {
        self.coding.header_len(usize::from(self.n)) + self.payload.len()
    }

    /// Never true: a symbol has at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the datagram into `out`; returns its length.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EmitError> {
        let h = write_header(
            self.generation,
            self.n,
            &self.coding,
            self.payload.len(),
            out,
        )?;
        out[h..h + self.payload.len()].copy_from_slice(self.payload);
        Ok(h + self.payload.len())
    }
}

/// Writes a header for a payload of `payload_len` bytes (checking that the whole datagram
/// fits); returns the header length, where the payload starts.
pub(crate) fn write_header(
    generation: u32,
    n: u16,
    coding: &Coding<'_>,
    payload_len: usize,
    out: &mut [u8],
) -> Result<usize, EmitError> {
    let h = coding.header_len(usize::from(n));
    if out.len() < h + payload_len {
        return Err(EmitError::BufferTooSmall {
            need: h + payload_len,
            have: out.len(),
        });
    }
    out[..4].copy_from_slice(&generation.to_be_bytes());
    out[4..6].copy_from_slice(&n.to_be_bytes());
    match *coding {
        Coding::Systematic(i) => {
            out[6] = CODING_SYSTEMATIC;
            out[7..9].copy_from_slice(&i.to_be_bytes());
        }
        Coding::Seeded(s) => {
            out[6] = CODING_SEEDED;
            out[7..11].copy_from_slice(&s.to_be_bytes());
        }
        Coding::Dense(v) => {
            out[6] = CODING_DENSE;
            out[7..7 + v.len()].copy_from_slice(v);
        }
    }
    Ok(h)
}

/// Generation parameters: `n` symbols of `k` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    n: u16,
    k: usize,
}

/// Generation parameters out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// n is 0 or above [`MAX_SYMBOLS`].
    #[error("generation size {0} outside 1..={MAX_SYMBOLS}")]
    GenerationSize(usize),
    /// k is 0 or above [`MAX_SYMBOL_BYTES`].
    #[error("symbol size {0} outside 1..={MAX_SYMBOL_BYTES}")]
    SymbolSize(usize),
}

impl Params {
    /// Checks `n` and `k`.
    pub fn new(n: usize, k: usize) -> Result<Params, ParamsError> {
        if n == 0 || n > MAX_SYMBOLS {
            return Err(ParamsError::GenerationSize(n));
        }
        if k == 0 || k > MAX_SYMBOL_BYTES {
            return Err(ParamsError::SymbolSize(k));
        }
        Ok(Params {
            n: u16::try_from(n).map_err(|_| ParamsError::GenerationSize(n))?,
            k,
        })
    }

    /// Source symbols per generation.
    pub fn n(&self) -> usize {
        usize::from(self.n)
    }

    /// Bytes per symbol.
    pub fn k(&self) -> usize {
        self.k
    }

    pub(crate) fn n16(&self) -> u16 {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_coding() {
        let v = [3u8, 0, 7];
        for coding in [
            Coding::Systematic(2),
            Coding::Seeded(0xDEAD_BEEF),
            Coding::Dense(&v),
        ] {
            let s = Symbol {
                generation: 0x0102_0304,
                n: 3,
                coding,
                payload: b"hello",
            };
            let mut buf = [0u8; 64];
            let len = s.emit(&mut buf).expect("fits");
            assert_eq!(len, s.len());
            assert_eq!(Symbol::parse(&buf[..len]), Ok(s));
            // Every prefix without a payload byte is rejected without a panic; longer ones are
            // symbols with shorter payloads (the decoder rejects those by length).
            let h = coding.header_len(3);
            for cut in 0..len {
                let parsed = Symbol::parse(&buf[..cut]);
                if cut <= h {
                    assert!(parsed.is_err(), "{cut} of {len}");
                } else {
                    assert_eq!(parsed.map(|p| p.payload.len()), Ok(cut - h));
                }
            }
            assert!(matches!(
                s.emit(&mut buf[..len - 1]),
                Err(EmitError::BufferTooSmall { .. })
            ));
        }
    }

    #[test]
    fn rejects_bad_fields() {
        let mut b = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 9];
        assert_eq!(Symbol::parse(&b), Err(ParseError::BadGenerationSize(0)));
        b[5] = 4;
        b[6] = 9;
        assert_eq!(Symbol::parse(&b), Err(ParseError::UnknownCoding(9)));
        b[6] = 0;
        b[8] = 4;
        assert_eq!(
            Symbol::parse(&b),
            Err(ParseError::IndexOutOfRange { index: 4, n: 4 })
        );
        b[8] = 3;
        assert!(Symbol::parse(&b).is_ok());
        assert_eq!(Symbol::parse(&b[..9]), Err(ParseError::BadPayloadLength(0)));
        b[4] = 0x04;
        b[5] = 0x01;
        assert_eq!(Symbol::parse(&b), Err(ParseError::BadGenerationSize(1025)));
    }

    #[test]
    fn params_are_checked() {
        assert!(Params::new(0, 10).is_err());
        assert!(Params::new(MAX_SYMBOLS + 1, 10).is_err());
        assert!(Params::new(4, 0).is_err());
        assert!(Params::new(4, MAX_SYMBOL_BYTES + 1).is_err());
        assert_eq!(
            Params::new(16, 4096).map(|p| (p.n(), p.k())),
            Ok((16, 4096))
        );
    }
}
