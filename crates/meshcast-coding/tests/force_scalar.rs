//! `MESHCAST_CODING_BACKEND` forces a kernel path for the whole process. Each test here reruns
//! this test binary as a child with the variable set (the choice is made once per process), so
//! the scalar path is exercised exactly as on a CPU without SIMD.

use meshcast_coding::kernels::BACKEND_ENV;
use meshcast_coding::{Backend, Decoder, Encoder, Recoder};
use std::process::Command;

/// Runs `test` of this binary in a child process with the backend variable set to `value`.
fn child(test: &str, value: &str) -> std::process::Output {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(BACKEND_ENV, value)
        .output()
        .expect("the test binary runs")
}

#[test]
fn scalar_is_forced_by_the_environment() {
    let out = child("scalar_child", "scalar");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("active backend: scalar"));
}

#[test]
fn an_unknown_backend_is_a_clear_error() {
    let out = child("scalar_child", "avx9000");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown coding backend \"avx9000\""), "{err}");
}

/// The child: with the variable set, everything runs on the scalar path and still codes.
#[test]
fn scalar_child() {
    if std::env::var(BACKEND_ENV).is_err() {
        return; // only meaningful as a child of the tests above
    }
    let active = Backend::active();
    println!("active backend: {active}");
    let (n, k) = (16, 1000);
    let mut e = Encoder::new(1, n, k, 5).expect("valid");
    for i in 0..n {
        let data: Vec<u8> = (0..k).map(|x| (x * 31 + i * 7) as u8).collect();
        e.set_source(i, &data).expect("fits");
    }
    let mut relay = Recoder::new(1, n, k, 6).expect("valid");
    let mut d = Decoder::new(1, n, k).expect("valid");
    let mut buf = vec![0u8; 2048];
    for i in (0..n).filter(|i| i % 4 != 0) {
        let len = e.write_systematic(i, &mut buf).expect("fits");
        d.push_packet(&buf[..len]).expect("valid");
        relay.push_packet(&buf[..len]).expect("valid");
    }
    for j in 0..8 {
        let len = e.write_repair(j, &mut buf).expect("fits");
        relay.push_packet(&buf[..len]).expect("valid");
    }
    while !d.is_complete() {
        let len = relay.write_recoded(&mut buf).expect("has symbols");
        d.push_packet(&buf[..len]).expect("valid");
    }
    for i in 0..n {
        assert_eq!(d.source(i), e.source(i).ok());
    }
}
