//! Properties of the encoder, decoder and recoder, on every kernel backend this CPU has.

use meshcast_coding::rng::SplitMix64;
use meshcast_coding::{
    Backend, Coding, Decoder, Encoder, PushError, Pushed, Recoder, Symbol, fuzz, gf,
};
use proptest::prelude::*;

/// An encoder holding `n` random sources of `k` bytes.
fn encoder(n: usize, k: usize, seed: u64, backend: Backend) -> Encoder {
    let mut e = Encoder::new(3, n, k, seed)
        .expect("valid parameters")
        .with_backend(backend);
    let mut g = SplitMix64::new(seed);
    for i in 0..n {
        g.fill(e.source_mut(i).expect("in range"));
    }
    e
}

fn packet(f: impl FnOnce(&mut [u8]) -> usize) -> Vec<u8> {
    let mut buf = vec![0u8; 70_000];
    let len = f(&mut buf);
    buf.truncate(len);
    buf
}

/// Datagrams for a generation with `lost` of the systematic symbols dropped and `repairs`
/// repair symbols, in a shuffled order.
fn datagrams(e: &Encoder, keep: &[bool], repairs: u32, order_seed: u64) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = (0..e.params().n())
        .filter(|&i| keep[i])
        .map(|i| packet(|b| e.write_systematic(i, b).expect("fits")))
        .collect();
    for j in 0..repairs {
        out.push(packet(|b| e.write_repair(j, b).expect("fits")));
    }
    let mut g = SplitMix64::new(order_seed);
    for i in (1..out.len()).rev() {
        out.swap(i, (g.next() % (i as u64 + 1)) as usize);
    }
    out
}

fn assert_decodes(e: &Encoder, d: &Decoder) {
    assert!(d.is_complete());
    for i in 0..e.params().n() {
        assert_eq!(d.source(i), e.source(i).ok(), "source {i}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any set of symbols of full rank decodes to exactly the sources; the rank never
    /// decreases, rises by one exactly for innovative symbols, and every source is handed out
    /// exactly once.
    #[test]
    fn any_full_rank_set_decodes_exactly(
        n in 1usize..40, k in 1usize..300, seed: u64, order: u64, lost_mask: u64, owned: u64,
    ) {
        for backend in Backend::available() {
            let e = encoder(n, k, seed, backend);
            let keep: Vec<bool> = (0..n).map(|i| lost_mask >> (i % 64) & 1 == 0).collect();
            let lost = keep.iter().filter(|k| !**k).count() as u32;
            // Extra repairs cover the rare dependent one.
            let packets = datagrams(&e, &keep, lost + 4, order);
            let mut d = Decoder::new(3, n, k).expect("valid").with_backend(backend);
            let mut handed = vec![0u32; n];
            for (x, p) in packets.iter().enumerate() {
                let before = d.rank();
                // Some datagrams are handed over whole (zero-copy), the others copied.
                let pushed = if owned >> (x % 64) & 1 == 1 {
                    d.push_owned(p.clone())
                } else {
                    d.push_packet(p)
                };
                let Pushed { innovative, rank, newly_decoded } = pushed.expect("valid");
                prop_assert!(rank >= before);
                prop_assert_eq!(innovative, rank == before + 1);
                prop_assert_eq!(newly_decoded, d.newly_decoded().len());
                for &i in d.newly_decoded() {
                    handed[usize::from(i)] += 1;
                    prop_assert_eq!(d.source(usize::from(i)), e.source(usize::from(i)).ok());
                }
            }
            prop_assert!(d.is_complete(), "{backend}: rank {} of {n}", d.rank());
            assert_decodes(&e, &d);
            prop_assert!(handed.iter().all(|&h| h == 1));
        }
    }

    /// Symbols made only of dense random vectors (no systematic part) decode too.
    #[test]
    fn dense_symbols_decode(n in 1usize..24, k in 1usize..200, seed: u64) {
        let e = encoder(n, k, seed, Backend::active());
        let mut d = Decoder::new(3, n, k).expect("valid");
        let mut g = SplitMix64::new(seed ^ 1);
        let sources: Vec<&[u8]> = (0..n).map(|i| e.source(i).expect("in range")).collect();
        let mut tries = 0;
        while !d.is_complete() {
            tries += 1;
            prop_assert!(tries < n + 20);
            let mut v = vec![0u8; n];
            g.fill(&mut v);
            let mut payload = vec![0u8; k];
            Backend::Scalar.combine(&v, &sources, &mut [&mut payload[..]], meshcast_coding::Mode::Assign);
            let s = Symbol { generation: 3, n: n as u16, coding: Coding::Dense(&v), payload: &payload };
            d.push(&s).expect("valid");
        }
        assert_decodes(&e, &d);
    }

    /// A relay's recoded symbols never give a receiver more rank than the relay holds, and
    /// give it all of that rank.
    #[test]
    fn recoding_never_raises_rank_beyond_the_recoder(
        n in 2usize..32, k in 1usize..128, seed: u64, heard in 1usize..32,
    ) {
        for backend in [Backend::Scalar, Backend::active()] {
            let e = encoder(n, k, seed, backend);
            let mut relay = Recoder::new(3, n, k, seed ^ 7).expect("valid").with_backend(backend);
            let heard = heard.min(n);
            // The relay hears a few sources and a few repairs.
            for i in 0..heard / 2 {
                relay.push_packet(&packet(|b| e.write_systematic(i, b).expect("fits"))).expect("valid");
            }
            for j in 0..(heard - heard / 2) as u32 {
                relay.push_packet(&packet(|b| e.write_repair(j, b).expect("fits"))).expect("valid");
            }
            let mut d = Decoder::new(3, n, k).expect("valid").with_backend(backend);
            for _ in 0..relay.rank() + 16 {
                let p = packet(|b| relay.write_recoded(b).expect("has symbols"));
                d.push_packet(&p).expect("valid");
                prop_assert!(d.rank() <= relay.rank());
            }
            prop_assert_eq!(d.rank(), relay.rank());
            // What the receiver decoded, if anything, is right.
            for i in 0..n {
                if let Some(s) = d.source(i) {
                    prop_assert_eq!(Some(s), e.source(i).ok());
                }
            }
        }
    }

    /// The fuzz target's body on arbitrary bytes.
    #[test]
    fn fuzz_body_survives_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        fuzz::decode_datagrams(&data);
    }
}

#[test]
fn systematic_symbols_are_handed_out_at_once() {
    let e = encoder(6, 50, 1, Backend::active());
    let mut d = Decoder::new(3, 6, 50).expect("valid");
    let p = packet(|b| e.write_systematic(4, b).expect("fits"));
    let pushed = d.push_packet(&p).expect("valid");
    assert_eq!(
        pushed,
        Pushed {
            innovative: true,
            rank: 1,
            newly_decoded: 1
        }
    );
    assert_eq!(d.newly_decoded(), &[4]);
    assert_eq!(d.source(4), e.source(4).ok());
    assert_eq!(d.source(3), None);
}

#[test]
fn dependent_symbols_are_reported() {
    let (n, k) = (5, 40);
    let e = encoder(n, k, 2, Backend::active());
    let mut d = Decoder::new(3, n, k).expect("valid");
    let r0 = packet(|b| e.write_repair(0, b).expect("fits"));
    let r1 = packet(|b| e.write_repair(1, b).expect("fits"));
    assert!(d.push_packet(&r0).expect("valid").innovative);
    // The same symbol again.
    let again = d.push_packet(&r0).expect("valid");
    assert!(!again.innovative);
    assert_eq!(again.rank, 1);
    assert!(d.push_packet(&r1).expect("valid").innovative);
    // A combination of the two received ones: r0 + 3·r1.
    let (s0, s1) = (
        Symbol::parse(&r0).expect("ok"),
        Symbol::parse(&r1).expect("ok"),
    );
    let (mut v0, mut v1) = (vec![0u8; n], vec![0u8; n]);
    s0.coding.expand(&mut v0);
    s1.coding.expand(&mut v1);
    let v: Vec<u8> = v0
        .iter()
        .zip(&v1)
        .map(|(a, b)| a ^ gf::mul(3, *b))
        .collect();
    let pl: Vec<u8> = s0
        .payload
        .iter()
        .zip(s1.payload)
        .map(|(a, b)| a ^ gf::mul(3, *b))
        .collect();
    let combo = Symbol {
        generation: 3,
        n: n as u16,
        coding: Coding::Dense(&v),
        payload: &pl,
    };
    let pushed = d.push(&combo).expect("valid");
    assert!(!pushed.innovative);
    assert_eq!(pushed.rank, 2);
    assert_eq!(d.counts(), (4, 2));
}

#[test]
fn symbols_that_do_not_fit_are_rejected_and_change_nothing() {
    let e = encoder(4, 32, 3, Backend::active());
    let other = Encoder::new(9, 4, 32, 3).expect("valid");
    let bigger = Encoder::new(3, 5, 32, 3).expect("valid");
    let longer = Encoder::new(3, 4, 33, 3).expect("valid");
    let mut d = Decoder::new(3, 4, 32).expect("valid");
    d.push_packet(&packet(|b| e.write_systematic(0, b).expect("fits")))
        .expect("valid");
    let cases = [
        packet(|b| other.write_systematic(1, b).expect("fits")),
        packet(|b| bigger.write_systematic(1, b).expect("fits")),
        packet(|b| longer.write_systematic(1, b).expect("fits")),
        vec![0, 0, 0, 3, 0, 4, 7, 0, 0, 1],
        vec![0, 0, 0],
    ];
    let errors: Vec<PushError> = cases
        .iter()
        .map(|c| d.push_packet(c).expect_err("rejected"))
        .collect();
    assert!(matches!(
        errors[0],
        PushError::WrongGeneration {
            expected: 3,
            got: 9
        }
    ));
    assert!(matches!(
        errors[1],
        PushError::WrongGenerationSize {
            expected: 4,
            got: 5
        }
    ));
    assert!(matches!(
        errors[2],
        PushError::WrongPayloadLength {
            expected: 32,
            got: 33
        }
    ));
    assert!(matches!(errors[3], PushError::Parse(_)));
    assert!(matches!(errors[4], PushError::Parse(_)));
    assert_eq!(d.rank(), 1);
    assert_eq!(d.counts(), (1, 0));
    // A hand-built symbol with a short dense vector.
    let s = Symbol {
        generation: 3,
        n: 4,
        coding: Coding::Dense(&[1, 2]),
        payload: &[0; 32],
    };
    assert!(matches!(d.push(&s), Err(PushError::BadCoding { n: 4 })));
}

#[test]
fn handed_over_datagrams_come_back() {
    let (n, k) = (8, 100);
    let e = encoder(n, k, 6, Backend::active());
    let mut d = Decoder::new(3, n, k).expect("valid");
    let keep: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
    let packets = datagrams(&e, &keep, 5, 2);
    for p in &packets {
        d.push_owned(p.clone()).expect("valid");
    }
    // Garbage is rejected, and its buffer is kept for reuse too.
    assert!(d.push_owned(vec![1, 2, 3]).is_err());
    assert_decodes(&e, &d);
    let mut pool = Vec::new();
    d.reclaim(&mut pool);
    let spare = pool.len();
    assert!(spare >= 1, "the garbage and any dependent symbols");
    d.reset(3);
    d.reclaim(&mut pool);
    assert_eq!(pool.len(), packets.len() + 1);
    // After the reset the decoder works from copies again.
    for p in &packets {
        d.push_packet(p).expect("valid");
    }
    assert_decodes(&e, &d);
}

#[test]
fn large_generations_decode_from_handed_over_datagrams() {
    // More slots than the decoder lists on the stack, and more lost sources than it lists
    // output rows there: both lists then go to the heap.
    let (n, k) = (100, 70);
    let e = encoder(n, k, 9, Backend::active());
    let keep: Vec<bool> = (0..n).map(|i| i % 4 != 0).collect();
    let mut d = Decoder::new(3, n, k).expect("valid");
    let mut most = 0;
    for p in datagrams(&e, &keep, 30, 4) {
        most = most.max(d.push_owned(p).expect("valid").newly_decoded);
    }
    assert!(most > 16, "one symbol solved {most} sources");
    assert_decodes(&e, &d);
}

#[test]
fn late_symbols_after_completion_are_dependent() {
    let e = encoder(3, 8, 4, Backend::active());
    let mut d = Decoder::new(3, 3, 8).expect("valid");
    for i in 0..3 {
        d.push_packet(&packet(|b| e.write_systematic(i, b).expect("fits")))
            .expect("valid");
    }
    assert!(d.is_complete());
    let late = d
        .push_packet(&packet(|b| e.write_repair(0, b).expect("fits")))
        .expect("valid");
    assert_eq!(
        late,
        Pushed {
            innovative: false,
            rank: 3,
            newly_decoded: 0
        }
    );
}

#[test]
fn reset_starts_a_new_generation() {
    let e = encoder(4, 64, 5, Backend::active());
    let mut d = Decoder::new(3, 4, 64).expect("valid");
    for i in 0..4 {
        d.push_packet(&packet(|b| e.write_systematic(i, b).expect("fits")))
            .expect("valid");
    }
    d.reset(3);
    assert_eq!((d.rank(), d.decoded_count(), d.source(0)), (0, 0, None));
    for p in datagrams(&e, &[true, false, false, true], 4, 1) {
        d.push_packet(&p).expect("valid");
    }
    assert_decodes(&e, &d);
}

#[test]
fn fuzz_body_decodes_real_streams() {
    // Well-formed streams reach the target's completion check (random bytes rarely do).
    for seed in 0..20u64 {
        let (n, k) = (1 + (seed % 16) as usize, 1 + (seed * 7 % 64) as usize);
        let mut e = Encoder::new(0, n, k, seed).expect("valid");
        let mut g = SplitMix64::new(seed);
        for i in 0..n {
            g.fill(e.source_mut(i).expect("in range"));
        }
        let mut data = vec![(n - 1) as u8, (k - 1) as u8];
        for p in datagrams(&e, &vec![seed % 2 == 0; n], n as u32 + 2, seed) {
            data.push(p.len() as u8);
            data.extend_from_slice(&p);
        }
        fuzz::decode_datagrams(&data);
    }
}
