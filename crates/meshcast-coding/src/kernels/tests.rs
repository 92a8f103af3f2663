//! Every SIMD path against the scalar one: every coefficient, every row shape, odd tails.

use super::*;
use crate::gf;
use crate::rng::SplitMix64;

fn random(g: &mut SplitMix64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    g.fill(&mut v);
    v
}

/// Lengths that cover an empty row, tails shorter than each vector width, and whole vectors.
const LENGTHS: [usize; 9] = [0, 1, 15, 17, 63, 64, 100, 257, 4096];

#[test]
fn available_backends_include_scalar_and_best() {
    let a = Backend::available();
    assert_eq!(a[0], Backend::Scalar);
    assert_eq!(*a.last().expect("scalar at least"), Backend::best());
    for b in Backend::ALL {
        assert_eq!(b.name().parse::<Backend>(), Ok(b));
    }
    assert!("avx1024".parse::<Backend>().is_err());
}

#[test]
fn mul_row_and_scale_match_scalar_for_every_coefficient() {
    let mut g = SplitMix64::new(1);
    for b in Backend::available() {
        for len in LENGTHS {
            let src = random(&mut g, len);
            let base = random(&mut g, len);
            for c in 0..=255u8 {
                let expect_assign: Vec<u8> = src.iter().map(|&s| gf::mul(c, s)).collect();
                let expect_acc: Vec<u8> = base
                    .iter()
                    .zip(&src)
                    .map(|(&d, &s)| d ^ gf::mul(c, s))
                    .collect();
                let mut d = base.clone();
                b.mul_row(&mut d, &src, c, Mode::Assign);
                assert_eq!(d, expect_assign, "{b} assign c={c} len={len}");
                let mut d = base.clone();
                b.mul_row(&mut d, &src, c, Mode::Accumulate);
                assert_eq!(d, expect_acc, "{b} accumulate c={c} len={len}");
                let mut d = src.clone();
                b.scale(&mut d, c);
                assert_eq!(d, expect_assign, "{b} scale c={c} len={len}");
            }
        }
    }
}

#[test]
fn combine_matches_scalar_on_every_coefficient() {
    // One output per coefficient value: every multiplier on every path, from a single input
    // (the kernels' lone-input step) and from a pair (their paired step, here with c and
    // 255 − c).
    let mut g = SplitMix64::new(2);
    let single: Vec<u8> = (0..=255u8).collect();
    let paired: Vec<u8> = (0..=255u8).flat_map(|c| [c, 255 - c]).collect();
    for b in Backend::available() {
        let first = random(&mut g, 4096 + 37);
        let second = random(&mut g, first.len());
        for (coefs, inputs) in [
            (&single, vec![&first[..]]),
            (&paired, vec![&first, &second]),
        ] {
            let mut want = vec![vec![0u8; first.len()]; 256];
            let mut got = want.clone();
            let mut w: Vec<&mut [u8]> = want.iter_mut().map(|r| r.as_mut_slice()).collect();
            Backend::Scalar.combine(coefs, &inputs, &mut w, Mode::Assign);
            let mut o: Vec<&mut [u8]> = got.iter_mut().map(|r| r.as_mut_slice()).collect();
            b.combine(coefs, &inputs, &mut o, Mode::Assign);
            assert_eq!(got, want, "{b}, {} input(s)", inputs.len());
        }
    }
}

#[test]
fn combine_matches_scalar_on_random_shapes() {
    let mut g = SplitMix64::new(3);
    for b in Backend::available() {
        for &len in &LENGTHS {
            // Inputs past one group (32) and outputs past one pass (8) exercise the blocking.
            for &(n, rows) in &[(0, 1), (1, 1), (3, 5), (16, 4), (33, 9), (64, 16), (70, 3)] {
                let inputs: Vec<Vec<u8>> = (0..n).map(|_| random(&mut g, len)).collect();
                let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
                let coefs = random(&mut g, n * rows);
                for mode in [Mode::Assign, Mode::Accumulate] {
                    let start: Vec<Vec<u8>> = (0..rows).map(|_| random(&mut g, len)).collect();
                    let mut want = start.clone();
                    let mut got = start.clone();
                    let mut w: Vec<&mut [u8]> = want.iter_mut().map(|r| r.as_mut_slice()).collect();
                    Backend::Scalar.combine(&coefs, &ins, &mut w, mode);
                    let mut o: Vec<&mut [u8]> = got.iter_mut().map(|r| r.as_mut_slice()).collect();
                    b.combine(&coefs, &ins, &mut o, mode);
                    assert_eq!(got, want, "{b} n={n} rows={rows} len={len} {mode:?}");
                }
            }
        }
    }
}

#[test]
fn scalar_combine_is_the_definition() {
    let mut g = SplitMix64::new(4);
    let (n, rows, len) = (5, 3, 29);
    let inputs: Vec<Vec<u8>> = (0..n).map(|_| random(&mut g, len)).collect();
    let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let coefs = random(&mut g, n * rows);
    let mut out = vec![vec![0xAAu8; len]; rows];
    let mut o: Vec<&mut [u8]> = out.iter_mut().map(|r| r.as_mut_slice()).collect();
    Backend::Scalar.combine(&coefs, &ins, &mut o, Mode::Assign);
    for r in 0..rows {
        for x in 0..len {
            let want = (0..n).fold(0u8, |a, i| a ^ gf::mul(coefs[r * n + i], inputs[i][x]));
            assert_eq!(out[r][x], want);
        }
    }
}

#[test]
fn xor_row_is_xor() {
    let mut g = SplitMix64::new(5);
    for len in LENGTHS {
        let a = random(&mut g, len);
        let s = random(&mut g, len);
        let mut d = a.clone();
        Backend::xor_row(&mut d, &s);
        let want: Vec<u8> = a.iter().zip(&s).map(|(x, y)| x ^ y).collect();
        assert_eq!(d, want);
    }
}
