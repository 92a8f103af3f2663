use super::*;

/// The Fig. 7 dumbbell: A, B behind router E; C, D behind F; A–B and C–D
/// direct; E⇄F 480 kbit/s; `ef` is E→F's available capacity and
/// `a_e_up` whether A–E works.
fn dumbbell(ef: f64, a_e_up: bool) -> Problem {
    // Links: 0 A->E, 1 E->A, 2 B->E, 3 E->B, 4 C->F, 5 F->C, 6 D->F,
    // 7 F->D, 8 E->F, 9 F->E, 10 A->B, 11 B->A, 12 C->D, 13 D->C.
    let mut capacity_bps = vec![100e6; 14];
    capacity_bps[8] = ef;
    capacity_bps[9] = 480e3;
    let (a, b, c, d) = (0, 1, 2, 3);
    let up = |v: Vec<usize>| {
        if !a_e_up && (v.contains(&0) || v.contains(&1)) {
            None
        } else {
            Some(v)
        }
    };
    let mut routes = vec![None; 16];
    let mut set = |u: usize, v: usize, r: Option<Vec<usize>>| routes[u * 4 + v] = r;
    set(a, b, Some(vec![10]));
    set(b, a, Some(vec![11]));
    set(c, d, Some(vec![12]));
    set(d, c, Some(vec![13]));
    set(a, c, up(vec![0, 8, 5]));
    set(a, d, up(vec![0, 8, 7]));
    set(b, c, Some(vec![2, 8, 5]));
    set(b, d, Some(vec![2, 8, 7]));
    set(c, a, up(vec![4, 9, 1]));
    set(d, a, up(vec![6, 9, 1]));
    set(c, b, Some(vec![4, 9, 3]));
    set(d, b, Some(vec![6, 9, 3]));
    Problem {
        n: 4,
        routes,
        delays: vec![Duration::from_millis(1); 16],
        capacity_bps,
        bound: Duration::from_millis(200),
        utility: Utility {
            beta: 1.0,
            delta_bps: 1.0,
        },
    }
}

fn kbps(o: &Optimum) -> Vec<f64> {
    o.rates_bps
        .iter()
        .map(|r| (r / 1e3 * 10.0).round() / 10.0)
        .collect()
}

#[test]
fn dumbbell_optima_match_the_paper() {
    let p = dumbbell(480e3, true);
    let coded = solve(&p, Scheme::Coded).unwrap();
    assert_eq!(kbps(&coded), vec![240.0; 4]);
    assert!((coded.utility - 4.0 * (240e3f64 + 1.0).ln()).abs() < 1e-4);
    assert_eq!(kbps(&solve(&p, Scheme::TwoHop).unwrap()), vec![240.0; 4]);
    assert_eq!(kbps(&solve(&p, Scheme::Simulcast).unwrap()), vec![120.0; 4]);
    assert_eq!(
        kbps(&solve(&p, Scheme::Mutualcast).unwrap()),
        vec![120.0; 4]
    );
}

#[test]
fn dumbbell_cross_traffic_and_failure() {
    let p = dumbbell(400e3, true);
    let coded = kbps(&solve(&p, Scheme::Coded).unwrap());
    assert_eq!(coded, vec![200.0, 200.0, 240.0, 240.0]);
    let p = dumbbell(480e3, false);
    assert_eq!(kbps(&solve(&p, Scheme::Coded).unwrap()), vec![240.0; 4]);
    let two_hop = kbps(&solve(&p, Scheme::TwoHop).unwrap());
    assert!((two_hop[0] - 120.0).abs() <= 1.0, "{two_hop:?}");
    // Simulcast cannot reach C and D from A at all.
    let sim = kbps(&solve(&p, Scheme::Simulcast).unwrap());
    assert!(sim[0] < 0.01 && sim[2] < 0.01 && sim[3] < 0.01, "{sim:?}");
}

#[test]
fn bad_input_is_rejected() {
    let mut p = dumbbell(480e3, true);
    p.routes[1] = Some(vec![99]);
    assert!(matches!(
        solve(&p, Scheme::Coded),
        Err(OptimumError::Invalid(_))
    ));
    let mut p = dumbbell(480e3, true);
    p.delays.pop();
    assert!(matches!(
        solve(&p, Scheme::TwoHop),
        Err(OptimumError::Invalid(_))
    ));
}

/// The prices are the capacity constraints' multipliers: on the dumbbell
/// only E⇄F is full, and each session pays its `U′` there once (coded and
/// 2-hop trees cross it once per packet, the baselines' stars twice at half
/// the rate: the same price). Under cross traffic E→F's price is A's and
/// B's larger `U′` at 200 kbit/s.
#[test]
fn prices_are_the_marginal_utilities_where_links_are_full() {
    // β = 1, δ = 1 bit/s: U′ in utility per kbit/s is 1000/(R_bps + 1).
    let uprime = |kbps: f64| 1e3 / (kbps * 1e3 + 1.0);
    let close = |a: f64, b: f64| (a - b).abs() <= 2e-3 * b;
    for scheme in [
        Scheme::Coded,
        Scheme::TwoHop,
        Scheme::Simulcast,
        Scheme::Mutualcast,
    ] {
        let o = solve(&dumbbell(480e3, true), scheme).unwrap();
        let full = uprime(240.0);
        assert!(
            close(o.link_prices[8], full),
            "{scheme:?} {:?}",
            o.link_prices
        );
        assert!(
            close(o.link_prices[9], full),
            "{scheme:?} {:?}",
            o.link_prices
        );
        for (l, &price) in o
            .link_prices
            .iter()
            .enumerate()
            .filter(|&(l, _)| l != 8 && l != 9)
        {
            assert!(price < 1e-3 * full, "{scheme:?}: link {l} priced {price}");
        }
    }
    let o = solve(&dumbbell(400e3, true), Scheme::Coded).unwrap();
    assert!(
        close(o.link_prices[8], uprime(200.0)),
        "{:?}",
        o.link_prices
    );
    assert!(
        close(o.link_prices[9], uprime(240.0)),
        "{:?}",
        o.link_prices
    );
    // The multiplier scales with β.
    let mut p = dumbbell(480e3, true);
    p.utility.beta = 18.0;
    let o = solve(&p, Scheme::Coded).unwrap();
    assert!(close(o.link_prices[8], 18.0 * uprime(240.0)));
}
