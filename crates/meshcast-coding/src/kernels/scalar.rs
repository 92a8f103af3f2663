//! The portable path: one 256-byte product table per coefficient. It is the reference every
//! SIMD path is compared with, and the path a CPU without SIMD runs.

use crate::gf::MUL;

/// `dst ^= c·src` (or `dst = c·src` when `assign`), over `dst.len()` bytes.
pub(crate) fn mul_row(dst: &mut [u8], src: &[u8], c: u8, assign: bool) {
    let src = &src[..dst.len()];
    match (c, assign) {
        (0, true) => dst.fill(0),
        (0, false) => {}
        (1, true) => dst.copy_from_slice(src),
        (1, false) => dst.iter_mut().zip(src).for_each(|(d, s)| *d ^= s),
        (_, true) => {
            let t = &MUL[c as usize];
            dst.iter_mut()
                .zip(src)
                .for_each(|(d, &s)| *d = t[s as usize]);
        }
        (_, false) => {
            let t = &MUL[c as usize];
            dst.iter_mut()
                .zip(src)
                .for_each(|(d, &s)| *d ^= t[s as usize]);
        }
    }
}

/// `row = c·row`.
pub(crate) fn scale(row: &mut [u8], c: u8) {
    match c {
        0 => row.fill(0),
        1 => {}
        _ => {
            let t = &MUL[c as usize];
            row.iter_mut().for_each(|b| *b = t[*b as usize]);
        }
    }
}

/// `out[r][range] (^)= Σ_i coefs[r·n + i] · in[i][range]`, for the byte range `from..to`.
pub(crate) fn combine(
    coefs: &[u8],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    from: usize,
    to: usize,
    assign: bool,
) {
    let n = inputs.len();
    for (r, out) in outputs.iter_mut().enumerate() {
        let out = &mut out[from..to];
        let row = &coefs[r * n..(r + 1) * n];
        if n == 0 && assign {
            out.fill(0);
        }
        for (i, (&c, input)) in row.iter().zip(inputs).enumerate() {
            mul_row(out, &input[from..to], c, assign && i == 0);
        }
    }
}
