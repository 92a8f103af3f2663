//! The TCP throughput equation of RFC 5348 §3.1 and its inverse.

/// The allowed transmit rate in bytes per second for segment size `s`
/// (bytes), round-trip time `rtt` (seconds) and loss event rate `p`
/// (0 < p ≤ 1), RFC 5348 §3.1 with b = 1 and t_RTO = 4·R:
///
/// ```text
/// X = s / (R·√(2bp/3) + t_RTO·(3·√(3bp/8))·p·(1 + 32p²))
/// ```
///
/// `p ≤ 0` gives infinity (no loss: the equation does not limit the rate).
pub fn throughput(s: f64, rtt: f64, p: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let b = 1.0;
    let t_rto = 4.0 * rtt;
    let denom = rtt * (2.0 * b * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * b * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    s / denom
}

/// The loss event rate at which [`throughput`] gives `x_target` bytes per
/// second (RFC 5348 §6.3.1 uses it to seed the loss history with a
/// synthetic interval). The equation falls strictly with `p`, so this
/// bisects on `log p` over `[1e-10, 1]` to a relative precision far below
/// one packet per interval; the result is clamped to that range.
pub fn loss_rate_for(s: f64, rtt: f64, x_target: f64) -> f64 {
    let (mut lo, mut hi) = (1e-10_f64.ln(), 0.0_f64);
    if x_target.is_nan() || x_target <= 0.0 || rtt <= 0.0 {
        return 1.0;
    }
    if throughput(s, rtt, lo.exp()) <= x_target {
        return lo.exp();
    }
    if throughput(s, rtt, 1.0) >= x_target {
        return 1.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if throughput(s, rtt, mid.exp()) > x_target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_vectors() {
        // ../shared/EVIDENCE.md, computed from RFC 5348 §3.1.
        assert!((throughput(1460.0, 0.1, 0.01) - 164_005.1).abs() < 0.1);
        assert!((throughput(1460.0, 0.1, 0.001) - 560_411.7).abs() < 0.1);
        assert!((throughput(1000.0, 0.05, 0.05) - 73_717.7).abs() < 0.1);
        assert_eq!(throughput(1000.0, 0.1, 0.0), f64::INFINITY);
    }

    #[test]
    fn inverse_round_trips() {
        for &p in &[1e-6, 1e-4, 0.003, 0.01, 0.2, 0.9] {
            let x = throughput(1000.0, 0.08, p);
            let q = loss_rate_for(1000.0, 0.08, x);
            assert!((q - p).abs() / p < 1e-9, "p {p} -> {q}");
        }
        assert_eq!(loss_rate_for(1000.0, 0.1, 0.0), 1.0);
        assert_eq!(loss_rate_for(1000.0, 0.1, 1e-3), 1.0);
        assert!(loss_rate_for(1000.0, 0.1, 1e15) <= 1.01e-10);
    }
}
