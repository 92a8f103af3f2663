//! Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D).
//!
//! 0x11D is the polynomial of Intel ISA-L, Jerasure and most Reed–Solomon codes; 2 generates
//! its multiplicative group. Addition is XOR. Every table here is computed at compile time and
//! every SIMD path is checked against [`mul`] on every coefficient (tests in `kernels`).
//!
//! The tables serve three kinds of kernel:
//! - scalar: [`MUL`], one 256-byte row per coefficient;
//! - `pshufb` (SSSE3, AVX2, AVX-512BW): [`NIBBLE`], the products with the 16 low and the 16
//!   high nibbles, so that `c·x = lo[x & 15] ^ hi[x >> 4]`;
//! - GFNI: [`AFFINE`], multiplication by `c` as the 8×8 bit matrix that `vgf2p8affineqb`
//!   applies to every byte. (`vgf2p8mulb` is fixed to the AES polynomial 0x11B, so it cannot
//!   serve this field.)

/// The reduction polynomial, with the x^8 bit.
pub const POLY: u16 = 0x11D;

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        exp[i + 255] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLY;
        }
        i += 1;
    }
    // exp[510], exp[511] are never read by `mul` (log a + log b ≤ 508).
    (exp, log)
}

const EXP_LOG: ([u8; 512], [u8; 256]) = build_exp_log();
/// `EXP[i] = 2^i`, doubled so that `EXP[log a + log b]` needs no reduction.
pub const EXP: [u8; 512] = EXP_LOG.0;
/// `LOG[x]` for `x ≠ 0`; `LOG[0]` is unused.
pub const LOG: [u8; 256] = EXP_LOG.1;

/// The product of two field elements.
#[inline]
pub const fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// The multiplicative inverse; `None` for 0.
#[inline]
pub const fn inv(a: u8) -> Option<u8> {
    if a == 0 {
        None
    } else {
        Some(EXP[255 - LOG[a as usize] as usize])
    }
}

const fn build_mul() -> [[u8; 256]; 256] {
    let mut t = [[0u8; 256]; 256];
    let mut a = 0;
    while a < 256 {
        let mut b = 0;
        while b < 256 {
            t[a][b] = mul(a as u8, b as u8);
            b += 1;
        }
        a += 1;
    }
    t
}

/// `MUL[c][x] = c·x` (64 KiB).
pub static MUL: [[u8; 256]; 256] = build_mul();

const fn build_nibble() -> [[u8; 32]; 256] {
    let mut t = [[0u8; 32]; 256];
    let mut c = 0;
    while c < 256 {
        let mut i = 0;
        while i < 16 {
            t[c][i] = mul(c as u8, i as u8);
            t[c][16 + i] = mul(c as u8, (i << 4) as u8);
            i += 1;
        }
        c += 1;
    }
    t
}

/// `NIBBLE[c][0..16]` = c·(low nibble), `NIBBLE[c][16..32]` = c·(high nibble << 4).
pub static NIBBLE: [[u8; 32]; 256] = build_nibble();

const fn build_affine() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut c = 0;
    while c < 256 {
        // Output bit i of c·x is the parity of x masked by row i, where row i collects the
        // input bits b whose image c·2^b has bit i set. vgf2p8affineqb takes row i from byte
        // 7 − i of the matrix qword.
        let mut m = 0u64;
        let mut i = 0;
        while i < 8 {
            let mut row = 0u8;
            let mut b = 0;
            while b < 8 {
                if (mul(c as u8, 1 << b) >> i) & 1 == 1 {
                    row |= 1 << b;
                }
                b += 1;
            }
            m |= (row as u64) << (8 * (7 - i));
            i += 1;
        }
        t[c] = m;
        c += 1;
    }
    t
}

/// `AFFINE[c]`: multiplication by `c` as a `vgf2p8affineqb` matrix.
pub static AFFINE: [u64; 256] = build_affine();

#[cfg(test)]
mod tests {
    use super::*;

    /// Carry-less multiply and reduce, bit by bit: the definition, independent of the tables.
    fn slow_mul(a: u8, b: u8) -> u8 {
        let mut acc: u16 = 0;
        for i in 0..8 {
            if (b >> i) & 1 == 1 {
                acc ^= (a as u16) << i;
            }
        }
        for bit in (8..16).rev() {
            if (acc >> bit) & 1 == 1 {
                acc ^= POLY << (bit - 8);
            }
        }
        acc as u8
    }

    #[test]
    fn tables_match_the_definition() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), slow_mul(a, b), "{a}·{b}");
                assert_eq!(MUL[a as usize][b as usize], slow_mul(a, b));
                let n = &NIBBLE[a as usize];
                assert_eq!(
                    n[(b & 15) as usize] ^ n[16 + (b >> 4) as usize],
                    slow_mul(a, b)
                );
            }
        }
    }

    #[test]
    fn inverses() {
        assert_eq!(inv(0), None);
        for a in 1..=255u8 {
            let i = inv(a).expect("nonzero");
            assert_eq!(mul(a, i), 1, "{a}");
        }
    }

    #[test]
    fn two_generates_the_group() {
        let mut seen = [false; 256];
        for &e in &EXP[..255] {
            assert!(!seen[e as usize]);
            seen[e as usize] = true;
        }
        assert!(!seen[0]);
    }
}
