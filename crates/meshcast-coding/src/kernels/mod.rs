//! GF(2^8) row kernels with runtime CPU dispatch.
//!
//! One operation carries all of coding: [`Backend::combine`], `out[r] = Σ_i c[r][i]·in[i]`
//! over whole rows, several outputs per pass with their accumulators in registers. Encoding,
//! recoding and the payload side of decoding are single calls to it; the decoder's
//! coefficient-vector elimination uses the one-row forms [`Backend::mul_row`] and
//! [`Backend::scale`].
//!
//! The path is chosen once per process ([`Backend::active`]): the fastest the CPU has, unless
//! the environment variable `MESHCAST_CODING_BACKEND` names one (`scalar`, `ssse3`, `avx2`,
//! `avx512`, `gfni-avx2`, `gfni-avx512`). Every path is bit-identical to the scalar one (tests
//! compare them on every coefficient); any path can also be used explicitly by calling a
//! [`Backend`]'s methods, which is how the tests and benchmarks compare them.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

mod scalar;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // SIMD intrinsics; every block states why it is sound.
mod x86;

/// The environment variable that forces a kernel path.
pub const BACKEND_ENV: &str = "MESHCAST_CODING_BACKEND";

/// A kernel implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Portable table lookups; runs anywhere.
    Scalar,
    /// 16-byte `pshufb` split tables.
    Ssse3,
    /// 32-byte `pshufb` split tables.
    Avx2,
    /// 64-byte `vpshufb` split tables (AVX-512BW).
    Avx512,
    /// 32-byte GFNI affine multiplication.
    GfniAvx2,
    /// 64-byte GFNI affine multiplication.
    GfniAvx512,
}

/// `MESHCAST_CODING_BACKEND` or [`Backend::from_str`] named no backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown coding backend {0:?}; expected one of scalar, ssse3, avx2, avx512, gfni-avx2, gfni-avx512"
)]
pub struct UnknownBackend(pub String);

impl FromStr for Backend {
    type Err = UnknownBackend;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownBackend(s.to_owned()))
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The rows a kernel reads: a list of slices, or `count` rows `stride` bytes apart in one
/// buffer (the codecs' own storage, which needs no list built per call).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Src<'a> {
    List(&'a [&'a [u8]]),
    Strided {
        buf: &'a [u8],
        stride: usize,
        len: usize,
        count: usize,
    },
}

impl<'a> Src<'a> {
    pub(crate) fn count(&self) -> usize {
        match self {
            Src::List(l) => l.len(),
            Src::Strided { count, .. } => *count,
        }
    }

    /// The length every row has (checked by [`Src::check`]).
    pub(crate) fn row_len(&self) -> usize {
        match self {
            Src::List(l) => l.first().map_or(0, |r| r.len()),
            Src::Strided { len, .. } => *len,
        }
    }

    /// Whether every row has `len` bytes inside its buffer.
    fn check(&self, len: usize) -> bool {
        match *self {
            Src::List(l) => l.iter().all(|r| r.len() == len),
            Src::Strided {
                buf,
                stride,
                len: l,
                count,
            } => l == len && (count == 0 || (count - 1) * stride + len <= buf.len()),
        }
    }

    fn row(&self, i: usize) -> &'a [u8] {
        match *self {
            Src::List(l) => l[i],
            Src::Strided {
                buf, stride, len, ..
            } => &buf[i * stride..i * stride + len],
        }
    }

    /// The start of row `i` (for the kernels; valid for `row_len()` bytes after `check`).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn ptr(&self, i: usize) -> *const u8 {
        match *self {
            Src::List(l) => l[i].as_ptr(),
            Src::Strided { buf, stride, .. } => buf[i * stride..].as_ptr(),
        }
    }
}

/// Whether an output row is overwritten or added to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `out = Σ`.
    Assign,
    /// `out ^= Σ` (addition in GF(2^8) is XOR).
    Accumulate,
}

impl Backend {
    /// Every backend, slowest first.
    pub const ALL: [Backend; 6] = [
        Backend::Scalar,
        Backend::Ssse3,
        Backend::Avx2,
        Backend::Avx512,
        Backend::GfniAvx2,
        Backend::GfniAvx512,
    ];

    /// The name `MESHCAST_CODING_BACKEND` and [`FromStr`] accept.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Ssse3 => "ssse3",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
            Backend::GfniAvx2 => "gfni-avx2",
            Backend::GfniAvx512 => "gfni-avx512",
        }
    }

    /// Whether this CPU can run the backend (detected once per process).
    pub fn supported(self) -> bool {
        static SUPPORTED: OnceLock<[bool; 6]> = OnceLock::new();
        SUPPORTED.get_or_init(|| Backend::ALL.map(Backend::detect))[self as usize]
    }

    fn detect(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Backend::Scalar => true,
                Backend::Ssse3 => has!("ssse3"),
                Backend::Avx2 => has!("avx2"),
                Backend::Avx512 => has!("avx512f") && has!("avx512bw"),
                Backend::GfniAvx2 => has!("avx2") && has!("gfni"),
                Backend::GfniAvx512 => has!("avx512f") && has!("avx512bw") && has!("gfni"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Backend::Scalar
        }
    }

    /// This backend, after checking that the CPU can run it.
    ///
    /// # Panics
    /// If it cannot.
    pub(crate) fn checked(self) -> Backend {
        assert!(
            self.supported(),
            "coding backend {self} is not supported on this CPU"
        );
        self
    }

    /// Every backend this CPU can run, slowest first.
    pub fn available() -> Vec<Backend> {
        Backend::ALL.into_iter().filter(|b| b.supported()).collect()
    }

    /// The fastest backend this CPU can run.
    pub fn best() -> Backend {
        Backend::ALL
            .into_iter()
            .rev()
            .find(|b| b.supported())
            .unwrap_or(Backend::Scalar)
    }

    /// The backend the encoder, decoder and recoder use unless told otherwise: the one
    /// `MESHCAST_CODING_BACKEND` names, else [`Backend::best`]. Read once per process.
    ///
    /// # Panics
    /// If `MESHCAST_CODING_BACKEND` names no backend, or one this CPU cannot run: forcing a
    /// path is a deliberate choice that must not silently become another.
    pub fn active() -> Backend {
        static ACTIVE: OnceLock<Backend> = OnceLock::new();
        *ACTIVE.get_or_init(|| match std::env::var(BACKEND_ENV) {
            Ok(name) => {
                let b: Backend = name
                    .parse()
                    .unwrap_or_else(|e| panic!("{BACKEND_ENV}: {e}"));
                assert!(
                    b.supported(),
                    "{BACKEND_ENV}={b}: this CPU cannot run it (available: {:?})",
                    Backend::available()
                );
                b
            }
            Err(_) => Backend::best(),
        })
    }

    /// The vector width in bytes (1 for scalar): rows whose length is a multiple of it run
    /// entirely in the vector loop.
    pub const fn width(self) -> usize {
        match self {
            Backend::Scalar => 1,
            Backend::Ssse3 => 16,
            Backend::Avx2 | Backend::GfniAvx2 => 32,
            Backend::Avx512 | Backend::GfniAvx512 => 64,
        }
    }

    /// `out[r] = Σ_i coefs[r·n + i] · inputs[i]` (or `^=` with [`Mode::Accumulate`]) for every
    /// output row `r`, where `n = inputs.len()` and `coefs` is row-major.
    ///
    /// # Panics
    /// If `coefs.len() != outputs.len() · inputs.len()`, if the rows differ in length, or if the
    /// backend is not [supported](Backend::supported).
    pub fn combine(self, coefs: &[u8], inputs: &[&[u8]], outputs: &mut [&mut [u8]], mode: Mode) {
        self.combine_src(coefs, Src::List(inputs), outputs, mode);
    }

    /// [`Backend::combine`] over any [`Src`].
    pub(crate) fn combine_src(
        self,
        coefs: &[u8],
        inputs: Src<'_>,
        outputs: &mut [&mut [u8]],
        mode: Mode,
    ) {
        let n = inputs.count();
        assert_eq!(
            coefs.len(),
            outputs.len() * n,
            "coefficients must be outputs × inputs"
        );
        let Some(len) = outputs.first().map(|o| o.len()) else {
            return;
        };
        assert!(
            outputs.iter().all(|o| o.len() == len) && inputs.check(len),
            "rows must have equal lengths"
        );
        self.checked();
        let assign = mode == Mode::Assign;
        let vlen = self.vector_len(len);
        if vlen > 0 {
            #[cfg(target_arch = "x86_64")]
            for (b, block) in outputs.chunks_mut(x86::MAX_ROWS).enumerate() {
                let rows = block.len();
                let c = &coefs[b * x86::MAX_ROWS * n..][..rows * n];
                // SAFETY: `supported()` checked the CPU features; the lengths were checked above.
                #[allow(unsafe_code)]
                unsafe {
                    self.combine_block(rows, c, inputs, block, vlen, assign)
                };
            }
        }
        if vlen < len {
            let list: Vec<&[u8]> = (0..n).map(|i| inputs.row(i)).collect();
            scalar::combine(coefs, &list, outputs, vlen, len, assign);
        }
    }

    /// # Safety
    /// The backend is supported, `block.len() == rows ≤ MAX_ROWS`, `c.len() == rows ·
    /// inputs.len()`, every row is at least `vlen` bytes long, and `vlen` is a multiple of
    /// the vector width.
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    unsafe fn combine_block(
        self,
        rows: usize,
        c: &[u8],
        inputs: Src<'_>,
        block: &mut [&mut [u8]],
        vlen: usize,
        assign: bool,
    ) {
        // Several vectors per step where registers allow (32 with AVX-512, 16 with AVX2):
        // each prepared coefficient then serves several products, which is what brings the
        // GFNI paths near one multiply per cycle. Measured in benches/coding.rs.
        let unroll = match (self.width(), rows) {
            (64, 1..=4) => 4,
            (64, _) => 2,
            _ => 1,
        };
        let bulk = vlen - vlen % (unroll * self.width());
        macro_rules! by_rows {
            ($f:ident) => {{
                match unroll {
                    4 => by_rows!(@ $f, 4, 0, bulk),
                    2 => by_rows!(@ $f, 2, 0, bulk),
                    _ => {}
                }
                by_rows!(@ $f, 1, if unroll > 1 { bulk } else { 0 }, vlen);
            }};
            (@ $f:ident, $u:literal, $from:expr, $to:expr) => {
                if $from < $to {
                    let (from, to) = ($from, $to);
                    // SAFETY: the caller's contract is the kernel's.
                    unsafe {
                        match rows {
                            1 => x86::$f::<1, $u, 32>(c, inputs, block, from, to, assign),
                            2 => x86::$f::<2, $u, 64>(c, inputs, block, from, to, assign),
                            3 => x86::$f::<3, $u, 96>(c, inputs, block, from, to, assign),
                            4 => x86::$f::<4, $u, 128>(c, inputs, block, from, to, assign),
                            5 => x86::$f::<5, $u, 160>(c, inputs, block, from, to, assign),
                            6 => x86::$f::<6, $u, 192>(c, inputs, block, from, to, assign),
                            7 => x86::$f::<7, $u, 224>(c, inputs, block, from, to, assign),
                            _ => x86::$f::<8, $u, 256>(c, inputs, block, from, to, assign),
                        }
                    }
                }
            };
        }
        match self {
            Backend::Scalar => {}
            Backend::Ssse3 => by_rows!(combine_ssse3),
            Backend::Avx2 => by_rows!(combine_avx2),
            Backend::Avx512 => by_rows!(combine_avx512),
            Backend::GfniAvx2 => by_rows!(combine_gfni256),
            Backend::GfniAvx512 => by_rows!(combine_gfni512),
        }
    }

    /// `dst = c·src` (or `dst ^= c·src` with [`Mode::Accumulate`]).
    ///
    /// # Panics
    /// If the rows differ in length or the backend is not supported.
    #[inline]
    pub fn mul_row(self, dst: &mut [u8], src: &[u8], c: u8, mode: Mode) {
        assert_eq!(dst.len(), src.len(), "rows must have equal lengths");
        // SAFETY: both pointers come from rows of dst.len() bytes.
        #[allow(unsafe_code)]
        unsafe {
            self.row_op(
                dst.as_mut_ptr(),
                src.as_ptr(),
                dst.len(),
                c,
                mode == Mode::Assign,
            )
        };
        let vlen = self.vector_len(dst.len());
        if vlen < dst.len() {
            scalar::mul_row(&mut dst[vlen..], &src[vlen..], c, mode == Mode::Assign);
        }
    }

    /// `row = c·row`.
    ///
    /// # Panics
    /// If the backend is not supported.
    #[inline]
    pub fn scale(self, row: &mut [u8], c: u8) {
        if c == 1 {
            return;
        }
        let p = row.as_mut_ptr();
        // SAFETY: p points at a row of row.len() bytes; the kernels allow dst == src.
        #[allow(unsafe_code)]
        unsafe {
            self.row_op(p, p, row.len(), c, true)
        };
        let vlen = self.vector_len(row.len());
        if vlen < row.len() {
            scalar::scale(&mut row[vlen..], c);
        }
    }

    /// `dst ^= src` at memory speed (AVX-512 when present): the reference the benchmarks
    /// report as the memory limit.
    ///
    /// # Panics
    /// If the rows differ in length.
    pub fn xor_row(dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "rows must have equal lengths");
        let mut vlen = 0;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            vlen = dst.len() - dst.len() % 64;
            #[allow(unsafe_code)]
            // SAFETY: the feature was detected and both rows hold at least vlen bytes.
            unsafe {
                x86::xor_avx512(dst.as_mut_ptr(), src.as_ptr(), vlen)
            };
        }
        dst[vlen..]
            .iter_mut()
            .zip(&src[vlen..])
            .for_each(|(d, s)| *d ^= s);
    }

    /// `dst = src`: a plain copy, with 64-byte vectors on the AVX-512 backends (about 10%
    /// faster than libc's `memmove` for 4 KiB rows on this project's machines, 53 against 48
    /// GB/s; both are bound by the L2 cache).
    ///
    /// # Panics
    /// If the rows differ in length.
    #[inline]
    pub fn copy_row(self, dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "rows must have equal lengths");
        let mut vlen = 0;
        #[cfg(target_arch = "x86_64")]
        if matches!(self, Backend::Avx512 | Backend::GfniAvx512) && self.supported() {
            vlen = dst.len() - dst.len() % 64;
            #[allow(unsafe_code)]
            // SAFETY: the feature was checked, both rows hold at least vlen bytes, and `&mut`
            // and `&` rows cannot overlap.
            unsafe {
                x86::copy_avx512(dst.as_mut_ptr(), src.as_ptr(), vlen)
            };
        }
        if vlen < dst.len() {
            dst[vlen..].copy_from_slice(&src[vlen..]);
        }
    }

    /// The prefix of a `len`-byte row that the vector loop covers.
    fn vector_len(self, len: usize) -> usize {
        if cfg!(target_arch = "x86_64") && self != Backend::Scalar {
            len - len % self.width()
        } else {
            0
        }
    }

    /// The vector part of a one-row operation; `dst` and `src` may be equal.
    ///
    /// # Safety
    /// Both pointers are valid for `len` bytes.
    #[allow(unsafe_code)]
    #[inline]
    unsafe fn row_op(self, dst: *mut u8, src: *const u8, len: usize, c: u8, assign: bool) {
        self.checked();
        let vlen = self.vector_len(len);
        if vlen == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU features were checked; the caller's pointers are valid for `len`
        // bytes, of which the kernel touches the first `vlen`.
        unsafe {
            match self {
                Backend::Scalar => {}
                Backend::Ssse3 => x86::row_ssse3(dst, src, c, vlen, assign),
                Backend::Avx2 => x86::row_avx2(dst, src, c, vlen, assign),
                Backend::Avx512 => x86::row_avx512(dst, src, c, vlen, assign),
                Backend::GfniAvx2 => x86::row_gfni256(dst, src, c, vlen, assign),
                Backend::GfniAvx512 => x86::row_gfni512(dst, src, c, vlen, assign),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (dst, src, c, assign);
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
