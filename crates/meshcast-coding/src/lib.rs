//! Random linear network coding over GF(2^8) for meshcast: SIMD kernels with runtime CPU
//! dispatch, a systematic encoder, a progressive decoder and a recoder for relays.
//!
//! This crate depends on nothing else in meshcast. Airlift (`airlift.txt` §IV) codes each
//! session's media in small *generations* of `n` symbols of `k` bytes; Celerity (§5.4) sends
//! coded symbols on links whose rate the trees do not use, for local loss recovery.
//!
//! - [`Encoder`]: the `n` source symbols pass through ([`Coding::Systematic`]), then repair
//!   symbols, each a combination of all sources whose coefficients expand from a 4-byte seed
//!   ([`Coding::Seeded`]).
//! - [`Decoder`]: eliminates every symbol on arrival into reduced row-echelon form, reports the
//!   rank after each, flags dependent symbols, and hands out each source the moment it is
//!   decodable. Payload arithmetic is deferred to one multi-row kernel call per batch of newly
//!   solved rows (see `bucket.rs`), never a matrix inversion at the end.
//! - [`Recoder`]: fresh combinations of whatever a relay holds, without decoding, with their
//!   coefficient vectors ([`Coding::Dense`]).
//! - [`Symbol`]: the datagram format, parsed with checked lengths and typed errors.
//! - [`Backend`]: the kernels (scalar, SSSE3, AVX2, AVX-512BW `pshufb`, GFNI 256/512), chosen at
//!   run time; `MESHCAST_CODING_BACKEND=scalar` forces the portable path.
//!
//! Everything from the network is checked: a malformed datagram is an error, never a panic
//! (the `fuzz/` target and [`fuzz::decode_datagrams`] exercise that).
//!
//! ```
//! use meshcast_coding::{Decoder, Encoder, Recoder};
//!
//! let (n, k) = (8, 100);
//! let mut enc = Encoder::new(1, n, k, 0xC0FFEE).unwrap();
//! for i in 0..n {
//!     enc.set_source(i, &[i as u8 + 1; 100]).unwrap();
//! }
//! // A relay hears half the sources and two repairs; the receiver hears only the relay.
//! let mut relay = Recoder::new(1, n, k, 9).unwrap();
//! let mut buf = vec![0u8; 2048];
//! for i in 0..4 {
//!     let len = enc.write_systematic(i, &mut buf).unwrap();
//!     relay.push_packet(&buf[..len]).unwrap();
//! }
//! for j in 0..4 {
//!     let len = enc.write_repair(j, &mut buf).unwrap();
//!     relay.push_packet(&buf[..len]).unwrap();
//! }
//! let mut dec = Decoder::new(1, n, k).unwrap();
//! while !dec.is_complete() {
//!     let len = relay.write_recoded(&mut buf).unwrap();
//!     dec.push_packet(&buf[..len]).unwrap();
//! }
//! for i in 0..n {
//!     assert_eq!(dec.source(i).unwrap(), enc.source(i).unwrap());
//! }
//! ```

mod bucket;
mod decoder;
mod encoder;
pub mod fuzz;
pub mod gf;
pub mod kernels;
mod recoder;
pub mod rng;
mod rows;
pub mod symbol;

pub use bucket::{PushError, Pushed, RecodeError};
pub use decoder::Decoder;
pub use encoder::{EncodeError, Encoder};
pub use kernels::{Backend, Mode};
pub use recoder::Recoder;
pub use symbol::{
    Coding, EmitError, MAX_SYMBOL_BYTES, MAX_SYMBOLS, Params, ParamsError, ParseError, Symbol,
};
