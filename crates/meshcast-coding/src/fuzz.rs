//! The body of the fuzz target (`fuzz/fuzz_targets/decoder.rs`), here so that the ordinary
//! test suite runs it too (on random and adversarial inputs) without a nightly toolchain.

use crate::gf;
use crate::{Coding, Decoder, Recoder, Symbol};

/// Feeds arbitrary bytes to a decoder and a recoder as a stream of datagrams and checks what
/// must hold whatever the input: no panic, the rank never decreases and never exceeds n, the
/// recoder's rank equals the decoder's, and once complete the decoded sources reproduce every
/// innovative symbol that was accepted.
///
/// Layout: byte 0 picks n (1..=16), byte 1 picks k (1..=64), then each datagram is a length
/// byte followed by that many bytes (the last one takes what is left). Bytes that do not parse
/// as symbols are pushed anyway and must be rejected with an error.
///
/// # Panics
/// When an invariant above breaks: that is the finding.
pub fn decode_datagrams(data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let n = usize::from(a % 16) + 1;
    let k = usize::from(b % 64) + 1;
    let generation = 0;
    let mut dec = Decoder::new(generation, n, k).expect("n and k are in range");
    let mut rec = Recoder::new(generation, n, k, 1).expect("n and k are in range");
    let mut accepted: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut rest = rest;
    while let [len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (datagram, after) = tail.split_at(len);
        rest = after;
        let before = dec.rank();
        let pushed = dec.push_packet(datagram);
        let echoed = rec.push_packet(datagram);
        assert_eq!(
            pushed.is_ok(),
            echoed.is_ok(),
            "decoder and recoder disagree"
        );
        assert!(
            dec.rank() >= before && dec.rank() <= n,
            "rank went {before} → {}",
            dec.rank()
        );
        assert_eq!(dec.rank(), rec.rank());
        if let Ok(p) = pushed {
            assert_eq!(p.rank, dec.rank());
            assert_eq!(p.innovative, p.rank == before + 1);
            if p.innovative {
                let s = Symbol::parse(datagram).expect("it was accepted");
                let mut v = vec![0u8; n];
                s.coding.expand(&mut v);
                accepted.push((v, s.payload.to_vec()));
            }
            for &i in dec.newly_decoded() {
                assert!(dec.source(usize::from(i)).is_some());
            }
        }
    }
    if dec.is_complete() {
        for (v, payload) in &accepted {
            let mut want = vec![0u8; k];
            for (i, &c) in v.iter().enumerate() {
                let s = dec.source(i).expect("complete");
                want.iter_mut()
                    .zip(s)
                    .for_each(|(w, &x)| *w ^= gf::mul(c, x));
            }
            assert_eq!(
                &want, payload,
                "decoded sources contradict an accepted symbol"
            );
        }
    }
    // Recoding what was received never fails once something was received.
    let mut buf = vec![0u8; 2048];
    match rec.write_recoded(&mut buf) {
        Ok(len) => {
            let s = Symbol::parse(&buf[..len]).expect("a recoded symbol parses");
            assert!(matches!(s.coding, Coding::Dense(_)));
        }
        Err(e) => assert_eq!(rec.rank(), 0, "{e}"),
    }
}
