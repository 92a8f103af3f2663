//! meshcast's coder against the strongest public crates, in one run, on the same data:
//! `rlnc` (RLNC: encode, decode, recode), `reed-solomon-simd` and `reed-solomon-erasure`
//! (Reed–Solomon: encode, decode), and a plain AVX-512 XOR of two rows as the memory limit.
//!
//! Shapes (issue 4): n = 16 and 64 source symbols of k = 1024 and 4096 bytes, n/4 repair
//! symbols, decoding with n/4 of the sources lost (the surviving sources plus all repairs).
//! - encode: a generation's repair symbols from its n sources (held by the coder);
//! - decode: every source from the surviving symbols, starting from an empty decoder;
//! - recode: n/4 fresh symbols from the n received ones (RLNC only).
//!
//! Throughput is source data (n·k bytes) per second, in decimal GB/s; ids read
//! `<implementation>/<encode|decode|recode>/n<N>/k<K>`. `MESHCAST_CODING_BACKEND` picks the
//! path meshcast runs on (default: the fastest this CPU has). `benches/table.py` turns a run
//! into the table in docs/coding.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main,
};
use meshcast_coding::rng::SplitMix64;
use meshcast_coding::{Backend, Decoder, Encoder, Recoder};
use rand09::SeedableRng;

const SHAPES: [(usize, usize); 4] = [(16, 1024), (16, 4096), (64, 1024), (64, 4096)];

/// The data every implementation codes: n random sources; sources `lost` are dropped.
struct Case {
    n: usize,
    k: usize,
    r: usize,
    sources: Vec<Vec<u8>>,
    lost: Vec<bool>,
}

impl Case {
    fn new(n: usize, k: usize) -> Case {
        let mut g = SplitMix64::new((n * k) as u64);
        let sources = (0..n)
            .map(|_| {
                let mut v = vec![0u8; k];
                g.fill(&mut v);
                v
            })
            .collect();
        // Every fourth source is lost: spread over the generation, n/4 of them.
        let lost = (0..n).map(|i| i % 4 == 1).collect();
        Case {
            n,
            k,
            r: n / 4,
            sources,
            lost,
        }
    }

    fn id(&self, op: &str) -> String {
        format!("{op}/n{}/k{}", self.n, self.k)
    }

    /// The benchmark group of one implementation, measuring this case's source bytes.
    fn group<'a>(&self, c: &'a mut Criterion, imp: &str) -> BenchmarkGroup<'a, WallTime> {
        let mut g = c.benchmark_group(imp);
        g.throughput(Throughput::BytesDecimal((self.n * self.k) as u64));
        g
    }
}

fn meshcast(c: &mut Criterion, case: &Case) {
    let mut g = case.group(c, "meshcast");
    let (n, k, r) = (case.n, case.k, case.r);
    let mut enc = Encoder::new(1, n, k, 77).expect("valid shape");
    for (i, s) in case.sources.iter().enumerate() {
        enc.set_source(i, s).expect("fits");
    }
    let mut repairs = vec![vec![0u8; k]; r];
    g.bench_function(case.id("encode"), |b| {
        b.iter(|| {
            let mut out: Vec<&mut [u8]> = repairs.iter_mut().map(|v| v.as_mut_slice()).collect();
            enc.repairs_into(black_box(0), &mut out)
                .expect("shapes match");
        })
    });

    // The surviving datagrams: systematic symbols of the kept sources, then the repairs.
    let mut buf = vec![0u8; k + 64];
    let mut datagrams: Vec<Vec<u8>> = Vec::new();
    for i in (0..n).filter(|&i| !case.lost[i]) {
        let len = enc.write_systematic(i, &mut buf).expect("fits");
        datagrams.push(buf[..len].to_vec());
    }
    for j in 0..r as u32 {
        let len = enc.write_repair(j, &mut buf).expect("fits");
        datagrams.push(buf[..len].to_vec());
    }
    let mut dec = Decoder::new(1, n, k).expect("valid shape");
    for d in &datagrams {
        dec.push_packet(d).expect("valid");
    }
    assert!(dec.is_complete(), "the benchmark's repairs must decode");
    assert!((0..n).all(|i| dec.source(i) == Some(&case.sources[i][..])));
    g.bench_function(case.id("decode"), |b| {
        b.iter(|| {
            dec.reset(1);
            for d in &datagrams {
                dec.push_packet(black_box(d)).expect("valid");
            }
            debug_assert!(dec.is_complete());
        })
    });

    // The zero-copy receive path: the decoder keeps each datagram instead of copying its
    // payload; buffers cycle through a pool as a receive loop's would.
    let mut pool: Vec<Vec<u8>> = datagrams.clone();
    drop(g);
    let mut g = case.group(c, "meshcast-zerocopy");
    g.bench_function(case.id("decode"), |b| {
        b.iter(|| {
            dec.reset(1);
            dec.reclaim(&mut pool);
            for d in pool.drain(..) {
                dec.push_owned(black_box(d)).expect("valid");
            }
            debug_assert!(dec.is_complete());
        })
    });
    drop(g);
    dec.reset(1);
    dec.reclaim(&mut pool);
    let mut g = case.group(c, "meshcast");

    let mut relay = Recoder::new(1, n, k, 5).expect("valid shape");
    for d in &datagrams {
        relay.push_packet(d).expect("valid");
    }
    let mut vectors = vec![vec![0u8; n]; r];
    g.bench_function(case.id("recode"), |b| {
        b.iter(|| {
            let mut v: Vec<&mut [u8]> = vectors.iter_mut().map(|v| v.as_mut_slice()).collect();
            let mut p: Vec<&mut [u8]> = repairs.iter_mut().map(|v| v.as_mut_slice()).collect();
            relay.recode_into(&mut v, &mut p).expect("has symbols");
        })
    });
}

fn rlnc(c: &mut Criterion, case: &Case) {
    let mut g = case.group(c, "rlnc");
    use rlnc::full::{Decoder, Encoder, Recoder};
    let (n, k, r) = (case.n, case.k, case.r);
    let mut rng = rand09::rngs::StdRng::seed_from_u64(1);
    // rlnc appends a one-byte boundary marker before padding: n·k − 1 bytes give pieces of
    // exactly k bytes, the same sources as everyone else's but for the last byte.
    let mut data: Vec<u8> = case.sources.concat();
    data.pop();
    let enc = Encoder::new(data, n).expect("valid shape");
    assert_eq!(enc.get_piece_byte_len(), k);
    let full = enc.get_full_coded_piece_byte_len();
    let mut pieces = vec![vec![0u8; full]; r];
    g.bench_function(case.id("encode"), |b| {
        b.iter(|| {
            for p in pieces.iter_mut() {
                enc.code_with_buf(&mut rng, p).expect("sized");
            }
        })
    });

    // The same survivors as meshcast's: uncoded pieces (unit coding vectors) plus coded ones.
    let mut received: Vec<Vec<u8>> = Vec::new();
    for i in (0..n).filter(|&i| !case.lost[i]) {
        let mut p = vec![0u8; n];
        p[i] = 1;
        let mut src = case.sources[i].clone();
        if i == n - 1 {
            src[k - 1] = 0x81; // the boundary marker rlnc placed there
        }
        p.extend_from_slice(&src);
        received.push(p);
    }
    for _ in 0..r {
        received.push(enc.code(&mut rng));
    }
    let mut check = Decoder::new(k, n).expect("valid shape");
    for p in &received {
        check.decode(p).expect("innovative");
    }
    assert!(
        check.is_already_decoded(),
        "rlnc must decode the same survivors"
    );
    g.bench_function(case.id("decode"), |b| {
        b.iter(|| {
            let mut d = Decoder::new(k, n).expect("valid shape");
            for p in &received {
                let _ = d.decode(black_box(p));
            }
            d
        })
    });

    let mut recoder = Recoder::new(received.concat(), full, n).expect("valid shape");
    g.bench_function(case.id("recode"), |b| {
        b.iter(|| {
            for p in pieces.iter_mut() {
                recoder.recode_with_buf(&mut rng, p).expect("sized");
            }
        })
    });
}

fn reed_solomon_simd(c: &mut Criterion, case: &Case) {
    let mut g = case.group(c, "reed-solomon-simd");
    use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};
    let (n, k, r) = (case.n, case.k, case.r);
    let mut enc = ReedSolomonEncoder::new(n, r, k).expect("supported shape");
    let mut recovery: Vec<Vec<u8>> = Vec::new();
    g.bench_function(case.id("encode"), |b| {
        b.iter(|| {
            enc.reset(n, r, k).expect("supported shape");
            for s in &case.sources {
                enc.add_original_shard(s).expect("sized");
            }
            let result = enc.encode().expect("all shards added");
            black_box(result.recovery_iter().count())
        })
    });
    {
        enc.reset(n, r, k).expect("supported shape");
        for s in &case.sources {
            enc.add_original_shard(s).expect("sized");
        }
        let result = enc.encode().expect("all shards added");
        recovery.extend(result.recovery_iter().map(|s| s.to_vec()));
    }
    let mut dec = ReedSolomonDecoder::new(n, r, k).expect("supported shape");
    g.bench_function(case.id("decode"), |b| {
        b.iter(|| {
            dec.reset(n, r, k).expect("supported shape");
            for i in (0..n).filter(|&i| !case.lost[i]) {
                dec.add_original_shard(i, &case.sources[i]).expect("sized");
            }
            for (j, s) in recovery.iter().enumerate() {
                dec.add_recovery_shard(j, s).expect("sized");
            }
            let result = dec.decode().expect("enough shards");
            black_box(result.restored_original_iter().count())
        })
    });
}

fn reed_solomon_erasure(c: &mut Criterion, case: &Case) {
    let mut g = case.group(c, "reed-solomon-erasure");
    use reed_solomon_erasure::galois_8::ReedSolomon;
    let (n, k, r) = (case.n, case.k, case.r);
    let rs = ReedSolomon::new(n, r).expect("supported shape");
    let mut shards: Vec<Vec<u8>> = case.sources.clone();
    shards.extend((0..r).map(|_| vec![0u8; k]));
    g.bench_function(case.id("encode"), |b| {
        b.iter(|| rs.encode(&mut shards).expect("sized"))
    });
    let survivors: Vec<Option<Vec<u8>>> = shards
        .iter()
        .enumerate()
        .map(|(i, s)| (i >= n || !case.lost[i]).then(|| s.clone()))
        .collect();
    g.bench_function(case.id("decode"), |b| {
        b.iter_batched_ref(
            || survivors.clone(),
            |s| rs.reconstruct_data(s).expect("enough shards"),
            BatchSize::SmallInput,
        )
    });
}

fn xor(c: &mut Criterion) {
    for k in [1024usize, 4096] {
        let src = vec![0x5Au8; k];
        let mut dst = vec![0xA5u8; k];
        let mut g = c.benchmark_group("xor");
        g.throughput(Throughput::BytesDecimal(k as u64));
        g.bench_function(format!("row/n1/k{k}"), |b| {
            b.iter(|| Backend::xor_row(black_box(&mut dst), black_box(&src)))
        });
        g.finish();
    }
}

fn coding(c: &mut Criterion) {
    eprintln!("meshcast backend: {}", Backend::active());
    xor(c);
    for (n, k) in SHAPES {
        let case = Case::new(n, k);
        meshcast(c, &case);
        rlnc(c, &case);
        reed_solomon_simd(c, &case);
        reed_solomon_erasure(c, &case);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = coding
}
criterion_main!(benches);
