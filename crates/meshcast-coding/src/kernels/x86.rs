//! x86-64 SIMD paths: `pshufb` split tables (SSSE3, AVX2, AVX-512BW) and GFNI affine
//! multiplication (`vgf2p8affineqb`, 256 and 512 bits).
//!
//! All five share one loop, written once as a macro: for each vector-wide column of the rows,
//! `R ≤ 8` output accumulators stay in registers while every input is loaded once and
//! multiplied into each of them (ISA-L's layout). Inputs are taken in groups of [`GROUP`] so that
//! the per-group coefficient preparation (GFNI matrices, table pointers) stays a small stack array
//! addressed at constant offsets; a second group reloads the accumulators from the outputs.
//!
//! Every function here is `unsafe`: the caller (`kernels::combine`) has checked the CPU features
//! and that every pointer is valid for `vlen` bytes.

use core::arch::x86_64::*;

use super::Src;
use crate::gf::{AFFINE, NIBBLE};

/// Inputs per group (see the module docs).
pub(crate) const GROUP: usize = 32;
/// Most outputs per pass.
pub(crate) const MAX_ROWS: usize = 8;

/// The shared loop. `$prep` turns a coefficient into what `$mul` needs; `$split` prepares an
/// input vector once for all its products.
macro_rules! combine_kernel {
    (
        $name:ident, $row:ident, $feat:literal, $W:literal, $V:ty, $P:ty, $p0:expr,
        prep = |$c:ident| $prep:expr,
        split = |$x:ident| $split:expr,
        mul = |$s:ident, $p:ident| $mul:expr,
        load = |$lp:ident| $load:expr,
        store = |$sp:ident, $sv:ident| $store:expr,
        xor = |$xa:ident, $xb:ident| $xor:expr,
        xor3 = |$ya:ident, $yb:ident, $yc:ident| $xor3:expr,
        zero = $zero:expr $(,)?
    ) => {
        /// `out[r] (^)= Σ_i coefs[r·n + i] · in[i]` over bytes `from..to`, `U` vectors per step
        /// (`to − from` a multiple of `U` vector widths).
        ///
        /// # Safety
        /// The CPU has the enabled features; `coefs` holds `R·n` bytes for `n` inputs and `R`
        /// outputs, each at least `to` bytes long; `PREP == GROUP · R` (the size of the
        /// prepared-coefficient array, a separate parameter only because array lengths cannot
        /// be computed from generic parameters on stable Rust).
        #[target_feature(enable = $feat)]
        pub(crate) unsafe fn $name<const R: usize, const U: usize, const PREP: usize>(
            coefs: &[u8],
            inputs: Src<'_>,
            outputs: &mut [&mut [u8]],
            from: usize,
            to: usize,
            assign: bool,
        ) {
            let n = inputs.count();
            debug_assert!(R <= MAX_ROWS && outputs.len() == R && coefs.len() == R * n);
            debug_assert!(PREP == GROUP * R);
            debug_assert_eq!((to - from) % ($W * U), 0);
            debug_assert!(inputs.row_len() >= to);
            debug_assert!(outputs.iter().all(|o| o.len() >= to));
            let mut outp: [*mut u8; R] = [core::ptr::null_mut(); R];
            for (p, o) in outp.iter_mut().zip(outputs.iter_mut()) {
                *p = o.as_mut_ptr();
            }
            let mut inp: [*const u8; GROUP] = [core::ptr::null(); GROUP];
            let mut prep: [$P; PREP] = [$p0; PREP];
            let mut g0 = 0;
            while g0 < n || (g0 == 0 && assign) {
                let g = (n - g0).min(GROUP);
                for i in 0..g {
                    inp[i] = inputs.ptr(g0 + i);
                    for r in 0..R {
                        let $c = coefs[r * n + g0 + i];
                        prep[i * R + r] = $prep;
                    }
                }
                let fresh = g0 == 0 && assign;
                let mut off = from;
                while off < to {
                    let mut acc: [[$V; R]; U] = [[$zero; R]; U];
                    if !fresh {
                        for u in 0..U {
                            for r in 0..R {
                                // SAFETY: outputs[r] is valid for `to` bytes.
                                let $lp = unsafe { outp[r].add(off + u * $W) } as *const u8;
                                acc[u][r] = $load;
                            }
                        }
                    }
                    // Inputs in pairs: both products go into the accumulator with one
                    // three-way XOR (one instruction with AVX-512's `vpternlog`), which
                    // leaves the vector ports to the multiplications.
                    let mut i = 0;
                    while i + 1 < g {
                        let mut xs: [[_; U]; 2] = [[$zero; U]; 2];
                        for (j, x) in xs.iter_mut().enumerate() {
                            for u in 0..U {
                                // SAFETY: inputs[g0 + i + j] is valid for `to` bytes.
                                let $lp = unsafe { inp[i + j].add(off + u * $W) };
                                x[u] = $load;
                            }
                        }
                        for u in 0..U {
                            let first = {
                                let $x = xs[0][u];
                                $split
                            };
                            let second = {
                                let $x = xs[1][u];
                                $split
                            };
                            for r in 0..R {
                                let ($s, $p) = (first, prep[i * R + r]);
                                let $yb = $mul;
                                let ($s, $p) = (second, prep[(i + 1) * R + r]);
                                let $yc = $mul;
                                let $ya = acc[u][r];
                                acc[u][r] = $xor3;
                            }
                        }
                        i += 2;
                    }
                    if i < g {
                        let mut xs: [_; U] = [$zero; U];
                        for u in 0..U {
                            // SAFETY: inputs[g0 + i] is valid for `to` bytes.
                            let $lp = unsafe { inp[i].add(off + u * $W) };
                            xs[u] = $load;
                        }
                        for u in 0..U {
                            let $x = xs[u];
                            let $s = $split;
                            for r in 0..R {
                                let $p = prep[i * R + r];
                                let $xa = acc[u][r];
                                let $xb = $mul;
                                acc[u][r] = $xor;
                            }
                        }
                    }
                    for u in 0..U {
                        for r in 0..R {
                            // SAFETY: outputs[r] is valid for `to` bytes.
                            let $sp = unsafe { outp[r].add(off + u * $W) };
                            let $sv = acc[u][r];
                            $store;
                        }
                    }
                    off += $W * U;
                }
                if g == 0 {
                    break;
                }
                g0 += g;
            }
        }

        /// `dst (^)= c·src` over the first `vlen` bytes (a multiple of the vector width).
        ///
        /// # Safety
        /// The CPU has the enabled features; both pointers are valid for `vlen` bytes (they may
        /// be equal).
        #[target_feature(enable = $feat)]
        pub(crate) unsafe fn $row(dst: *mut u8, src: *const u8, c: u8, vlen: usize, assign: bool) {
            debug_assert_eq!(vlen % $W, 0);
            let prepared = {
                let $c = c;
                $prep
            };
            let mut off = 0;
            while off < vlen {
                // SAFETY: src is valid for vlen bytes.
                let $lp = unsafe { src.add(off) };
                let $x = $load;
                let $s = $split;
                let $p = prepared;
                let mut v = $mul;
                if !assign {
                    // SAFETY: dst is valid for vlen bytes.
                    let $lp = unsafe { dst.add(off) } as *const u8;
                    let $xa = $load;
                    let $xb = v;
                    v = $xor;
                }
                // SAFETY: dst is valid for vlen bytes.
                let $sp = unsafe { dst.add(off) };
                let $sv = v;
                $store;
                off += $W;
            }
        }
    };
}

combine_kernel!(
    combine_gfni512,
    row_gfni512,
    "avx512f,avx512bw,gfni",
    64,
    __m512i,
    u64,
    0,
    prep = |c| AFFINE[c as usize],
    split = |x| x,
    mul = |s, p| _mm512_gf2p8affine_epi64_epi8::<0>(s, _mm512_set1_epi64(p as i64)),
    // SAFETY (all loads and stores below): the pointer is valid for 64 bytes (kernel contract).
    load = |p| unsafe { _mm512_loadu_si512(p as *const __m512i) },
    store = |p, v| unsafe { _mm512_storeu_si512(p as *mut __m512i, v) },
    xor = |a, b| _mm512_xor_si512(a, b),
    xor3 = |a, b, c| _mm512_ternarylogic_epi64::<0x96>(a, b, c),
    zero = _mm512_setzero_si512(),
);

combine_kernel!(
    combine_gfni256,
    row_gfni256,
    "avx2,gfni",
    32,
    __m256i,
    u64,
    0,
    prep = |c| AFFINE[c as usize],
    split = |x| x,
    mul = |s, p| _mm256_gf2p8affine_epi64_epi8::<0>(s, _mm256_set1_epi64x(p as i64)),
    load = |p| unsafe { _mm256_loadu_si256(p as *const __m256i) },
    store = |p, v| unsafe { _mm256_storeu_si256(p as *mut __m256i, v) },
    xor = |a, b| _mm256_xor_si256(a, b),
    xor3 = |a, b, c| _mm256_xor_si256(_mm256_xor_si256(a, b), c),
    zero = _mm256_setzero_si256(),
);

combine_kernel!(
    combine_avx512,
    row_avx512,
    "avx512f,avx512bw",
    64,
    __m512i,
    *const u8,
    core::ptr::null(),
    prep = |c| NIBBLE[c as usize].as_ptr(),
    split = |x| {
        let m = _mm512_set1_epi8(0x0f);
        (
            _mm512_and_si512(x, m),
            _mm512_and_si512(_mm512_srli_epi16::<4>(x), m),
        )
    },
    mul = |s, p| {
        // SAFETY: p points at a 32-byte NIBBLE row.
        let lo = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(p as *const __m128i) });
        let hi = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(p.add(16) as *const __m128i) });
        _mm512_xor_si512(_mm512_shuffle_epi8(lo, s.0), _mm512_shuffle_epi8(hi, s.1))
    },
    load = |p| unsafe { _mm512_loadu_si512(p as *const __m512i) },
    store = |p, v| unsafe { _mm512_storeu_si512(p as *mut __m512i, v) },
    xor = |a, b| _mm512_xor_si512(a, b),
    xor3 = |a, b, c| _mm512_ternarylogic_epi64::<0x96>(a, b, c),
    zero = _mm512_setzero_si512(),
);

combine_kernel!(
    combine_avx2,
    row_avx2,
    "avx2",
    32,
    __m256i,
    *const u8,
    core::ptr::null(),
    prep = |c| NIBBLE[c as usize].as_ptr(),
    split = |x| {
        let m = _mm256_set1_epi8(0x0f);
        (
            _mm256_and_si256(x, m),
            _mm256_and_si256(_mm256_srli_epi16::<4>(x), m),
        )
    },
    mul = |s, p| {
        // SAFETY: p points at a 32-byte NIBBLE row.
        let lo = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(p as *const __m128i) });
        let hi =
            _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(p.add(16) as *const __m128i) });
        _mm256_xor_si256(_mm256_shuffle_epi8(lo, s.0), _mm256_shuffle_epi8(hi, s.1))
    },
    load = |p| unsafe { _mm256_loadu_si256(p as *const __m256i) },
    store = |p, v| unsafe { _mm256_storeu_si256(p as *mut __m256i, v) },
    xor = |a, b| _mm256_xor_si256(a, b),
    xor3 = |a, b, c| _mm256_xor_si256(_mm256_xor_si256(a, b), c),
    zero = _mm256_setzero_si256(),
);

combine_kernel!(
    combine_ssse3,
    row_ssse3,
    "ssse3",
    16,
    __m128i,
    *const u8,
    core::ptr::null(),
    prep = |c| NIBBLE[c as usize].as_ptr(),
    split = |x| {
        let m = _mm_set1_epi8(0x0f);
        (
            _mm_and_si128(x, m),
            _mm_and_si128(_mm_srli_epi16::<4>(x), m),
        )
    },
    mul = |s, p| {
        // SAFETY: p points at a 32-byte NIBBLE row.
        let lo = unsafe { _mm_loadu_si128(p as *const __m128i) };
        let hi = unsafe { _mm_loadu_si128(p.add(16) as *const __m128i) };
        _mm_xor_si128(_mm_shuffle_epi8(lo, s.0), _mm_shuffle_epi8(hi, s.1))
    },
    load = |p| unsafe { _mm_loadu_si128(p as *const __m128i) },
    store = |p, v| unsafe { _mm_storeu_si128(p as *mut __m128i, v) },
    xor = |a, b| _mm_xor_si128(a, b),
    xor3 = |a, b, c| _mm_xor_si128(_mm_xor_si128(a, b), c),
    zero = _mm_setzero_si128(),
);

/// `dst ^= src` with AVX-512 over `vlen` bytes (a multiple of 64): the memory-speed reference
/// the benchmarks report beside the coders.
///
/// # Safety
/// AVX-512F is present; both pointers are valid for `vlen` bytes.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn xor_avx512(dst: *mut u8, src: *const u8, vlen: usize) {
    let mut off = 0;
    while off < vlen {
        // SAFETY: both pointers are valid for vlen bytes.
        unsafe {
            let a = _mm512_loadu_si512(dst.add(off) as *const __m512i);
            let b = _mm512_loadu_si512(src.add(off) as *const __m512i);
            _mm512_storeu_si512(dst.add(off) as *mut __m512i, _mm512_xor_si512(a, b));
        }
        off += 64;
    }
}

/// `dst = src` with AVX-512 over `vlen` bytes (a multiple of 64).
///
/// # Safety
/// AVX-512F is present; both pointers are valid for `vlen` bytes and the rows do not overlap.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn copy_avx512(dst: *mut u8, src: *const u8, vlen: usize) {
    let mut off = 0;
    while off + 256 <= vlen {
        // SAFETY: both pointers are valid for vlen bytes.
        unsafe {
            let a = _mm512_loadu_si512(src.add(off) as *const __m512i);
            let b = _mm512_loadu_si512(src.add(off + 64) as *const __m512i);
            let c = _mm512_loadu_si512(src.add(off + 128) as *const __m512i);
            let d = _mm512_loadu_si512(src.add(off + 192) as *const __m512i);
            _mm512_storeu_si512(dst.add(off) as *mut __m512i, a);
            _mm512_storeu_si512(dst.add(off + 64) as *mut __m512i, b);
            _mm512_storeu_si512(dst.add(off + 128) as *mut __m512i, c);
            _mm512_storeu_si512(dst.add(off + 192) as *mut __m512i, d);
        }
        off += 256;
    }
    while off < vlen {
        // SAFETY: both pointers are valid for vlen bytes.
        unsafe {
            let a = _mm512_loadu_si512(src.add(off) as *const __m512i);
            _mm512_storeu_si512(dst.add(off) as *mut __m512i, a);
        }
        off += 64;
    }
}
