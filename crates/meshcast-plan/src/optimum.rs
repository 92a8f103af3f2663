//! The central optimum (problem MP, eqs. 2–3): for a known network state,
//! maximise `Σ_m U(R_m)` with `U(z) = β·ln(z + δ)` subject to the physical
//! link capacities, for each way of building sessions:
//!
//! - [`Scheme::Coded`] — the unrestricted model: each session may use every
//!   overlay path within the delay bound, with network coding, so `R_m` is
//!   the minimum over receivers of a max-flow (one conceptual flow per
//!   receiver, each within the session's link rates `c_{m,e}`). An edge
//!   `u → v` carries receiver `j`'s flow only if the shortest delays
//!   `d(s,u) + d(u,v) + d(v,j)` fit the bound. That is exact when every
//!   flow path through such edges fits the bound (always, when delays are
//!   small against the bound, as on a LAN) and otherwise an upper bound.
//! - [`Scheme::TwoHop`] — the paper's model: `R_m` is eq. (5) over `D_m`.
//! - [`Scheme::Simulcast`] and [`Scheme::Mutualcast`] — the baselines'
//!   fixed tree families with a rate per tree.
//!
//! Solved with Clarabel (interior point; the log utility through
//! exponential cones) with rates in Mbit/s so the problem is O(1)-scaled;
//! the answer is checked (status, capacity feasibility, and each `R_m`
//! against a combinatorial recomputation from the returned link rates)
//! before it is returned.
//!
//! With the rates it returns each physical link's *price*: the multiplier
//! of the link's capacity constraint (Clarabel's dual), in utility per
//! kbit/s. That is the unit of Celerity's `U′ = β/(R + δ)` with rates in
//! kbit/s, i.e. seconds: the queuing delay at which the paper's delay
//! price would hold the link's sessions at the optimum. A session's `U′`
//! is what it pays summed over the links its critical cut crosses (on the
//! dumbbell, E→F's price is each session's `U′`, 72 ms at 240 kbit/s).

use crate::packing::{self, Model, SessionGraph};
use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};
use meshcast_core::Duration;
use thiserror::Error;

/// How sessions are built (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Every delay-feasible overlay path, network coded (the unrestricted
    /// model).
    Coded,
    /// 2-hop trees over `D_m` (the paper's MP).
    TwoHop,
    /// The 1-hop star.
    Simulcast,
    /// The star plus one depth-2 tree per relay.
    Mutualcast,
}

/// The utility `U(z) = β·ln(z + δ)` (§5.3), `z` in bits/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Utility {
    /// Weight β.
    pub beta: f64,
    /// Offset δ, bits/s (keeps `U′` bounded at zero rate).
    pub delta_bps: f64,
}

impl Utility {
    /// `U(z)` for a rate of `z_bps` bits/s.
    pub fn of(&self, z_bps: f64) -> f64 {
        self.beta * (z_bps + self.delta_bps).ln()
    }
}

/// A conference over a known underlay.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Number of participants (all of them sources and receivers).
    pub n: usize,
    /// `routes[u * n + v]`: the physical links overlay link `u → v`
    /// crosses, `None` when there is no route.
    pub routes: Vec<Option<Vec<usize>>>,
    /// `delays[u * n + v]`: one-way delay of overlay link `u → v`.
    pub delays: Vec<Duration>,
    /// Available capacity of each physical link, bits/s.
    pub capacity_bps: Vec<f64>,
    /// The delay bound `D`.
    pub bound: Duration,
    /// The utility every session uses.
    pub utility: Utility,
}

/// The optimum.
#[derive(Clone, Debug, PartialEq)]
pub struct Optimum {
    /// Each participant's session rate, bits/s.
    pub rates_bps: Vec<f64>,
    /// `Σ U(R_m)`.
    pub utility: f64,
    /// Per physical link (indexed as [`Problem::capacity_bps`]): the
    /// multiplier of its capacity constraint, utility per kbit/s (seconds
    /// for Celerity's `U′`; see the module docs). 0 for a link no route
    /// crosses; close to 0 (the interior point's residue) for a link with
    /// spare capacity at the optimum.
    pub link_prices: Vec<f64>,
}

/// Why no optimum was returned.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum OptimumError {
    /// The problem description is inconsistent.
    #[error("invalid problem: {0}")]
    Invalid(String),
    /// The solver did not reach a solution.
    #[error("solver stopped with status {0}")]
    Solver(String),
    /// The solver's answer failed the independent check.
    #[error("solver answer failed verification: {0}")]
    Verification(String),
}

const MBPS: f64 = 1e6;

/// A session's fixed trees (overlay links) with their rate columns.
type Family = Vec<(Vec<(usize, usize)>, usize)>;

/// Sparse rows `Ax + s = b` with their cones, built row by row.
#[derive(Default)]
struct Rows {
    triplets: Vec<(usize, usize, f64)>,
    b: Vec<f64>,
    cones: Vec<SupportedConeT<f64>>,
}

impl Rows {
    fn row(&mut self, coeffs: &[(usize, f64)], b: f64) {
        let r = self.b.len();
        self.triplets.extend(coeffs.iter().map(|&(c, v)| (r, c, v)));
        self.b.push(b);
    }

    fn close(&mut self, cone: impl Fn(usize) -> SupportedConeT<f64>, from: usize) {
        let n = self.b.len() - from;
        if n > 0 {
            self.cones.push(cone(n));
        }
    }

    fn matrix(&self, ncols: usize) -> CscMatrix<f64> {
        let mut t = self.triplets.clone();
        t.sort_by_key(|&(r, c, _)| (c, r));
        // CSC wants one entry per (row, column): sum repeats (a tree whose
        // two branches share a physical link loads it twice).
        t.dedup_by(|later, first| {
            let same = later.0 == first.0 && later.1 == first.1;
            if same {
                first.2 += later.2;
            }
            same
        });
        let mut colptr = vec![0usize; ncols + 1];
        let mut rowval = Vec::with_capacity(t.len());
        let mut nzval = Vec::with_capacity(t.len());
        for &(r, c, v) in &t {
            colptr[c + 1] += 1;
            rowval.push(r);
            nzval.push(v);
        }
        for c in 0..ncols {
            colptr[c + 1] += colptr[c];
        }
        CscMatrix::new(self.b.len(), ncols, colptr, rowval, nzval)
    }
}

impl Problem {
    fn check(&self) -> Result<(), OptimumError> {
        let nn = self.n * self.n;
        if self.routes.len() != nn || self.delays.len() != nn {
            return Err(OptimumError::Invalid(format!(
                "routes/delays must have {nn} entries"
            )));
        }
        for r in self.routes.iter().flatten() {
            if let Some(&l) = r.iter().find(|&&l| l >= self.capacity_bps.len()) {
                return Err(OptimumError::Invalid(format!(
                    "route uses unknown link {l}"
                )));
            }
        }
        if !(self.utility.beta > 0.0 && self.utility.delta_bps > 0.0) {
            return Err(OptimumError::Invalid(
                "utility needs β > 0 and δ > 0".into(),
            ));
        }
        Ok(())
    }

    fn usable(&self, u: usize, v: usize) -> bool {
        u != v && self.routes[u * self.n + v].is_some() && self.delay(u, v) <= self.bound
    }

    fn delay(&self, u: usize, v: usize) -> Duration {
        self.delays[u * self.n + v]
    }

    /// Shortest delays over usable overlay links, all pairs.
    fn shortest(&self) -> Vec<Duration> {
        let n = self.n;
        let mut d = vec![Duration::MAX; n * n];
        for u in 0..n {
            d[u * n + u] = Duration::ZERO;
            for v in 0..n {
                if self.usable(u, v) {
                    d[u * n + v] = self.delay(u, v);
                }
            }
        }
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    let via = d[i * n + k].saturating_add(d[k * n + j]);
                    if via < d[i * n + j] {
                        d[i * n + j] = via;
                    }
                }
            }
        }
        d
    }

    /// The fixed trees of a baseline for source `s`, as overlay link lists.
    fn family(&self, s: usize, scheme: Scheme) -> Vec<Vec<(usize, usize)>> {
        let n = self.n;
        let recv: Vec<usize> = (0..n).filter(|&v| v != s).collect();
        let mut out = Vec::new();
        let star: Vec<(usize, usize)> = recv.iter().map(|&t| (s, t)).collect();
        if star.iter().all(|&(a, b)| self.usable(a, b)) {
            out.push(star);
        }
        if scheme == Scheme::Mutualcast {
            for &r in &recv {
                let mut t = vec![(s, r)];
                t.extend(recv.iter().filter(|&&x| x != r).map(|&x| (r, x)));
                let ok = t.iter().all(|&(a, b)| self.usable(a, b))
                    && recv
                        .iter()
                        .filter(|&&x| x != r)
                        .all(|&x| self.delay(s, r) + self.delay(r, x) <= self.bound);
                if ok {
                    out.push(t);
                }
            }
        }
        out
    }
}

/// Solve the central optimum for `scheme`.
pub fn solve(p: &Problem, scheme: Scheme) -> Result<Optimum, OptimumError> {
    p.check()?;
    let n = p.n;
    let mut ncols = 0usize;
    let mut var = || {
        ncols += 1;
        ncols - 1
    };
    // Per session: R_m, t_m.
    let r_var: Vec<usize> = (0..n).map(|_| var()).collect();
    let t_var: Vec<usize> = (0..n).map(|_| var()).collect();
    // Load terms per physical link: (column, coefficient).
    let mut load: Vec<Vec<(usize, f64)>> = vec![Vec::new(); p.capacity_bps.len()];
    let mut nonneg: Vec<usize> = r_var.clone();
    let mut le: Vec<(Vec<(usize, f64)>, f64)> = Vec::new();
    // c_{m,e} columns for the flow schemes.
    let mut c_var: Vec<Vec<Option<usize>>> = Vec::new();
    let mut families: Vec<Family> = Vec::new();
    let shortest = p.shortest();
    match scheme {
        Scheme::Coded | Scheme::TwoHop => {
            for s in 0..n {
                let cols: Vec<Option<usize>> = (0..n * n)
                    .map(|i| {
                        let (u, v) = (i / n, i % n);
                        (v != s && p.usable(u, v)).then(&mut var)
                    })
                    .collect();
                for (i, c) in cols.iter().enumerate() {
                    if let Some(c) = *c {
                        nonneg.push(c);
                        if let Some(route) = &p.routes[i] {
                            for &l in route {
                                load[l].push((c, 1.0));
                            }
                        }
                    }
                }
                for j in (0..n).filter(|&j| j != s) {
                    if scheme == Scheme::TwoHop {
                        // w_{i}: flow on s -> i -> j (i = j: direct).
                        let mut sum = vec![(r_var[s], 1.0)];
                        for i in (0..n).filter(|&i| i != s) {
                            let Some(first) = cols[s * n + i] else {
                                continue;
                            };
                            let second = if i == j {
                                None
                            } else {
                                match cols[i * n + j] {
                                    Some(c) if p.delay(s, i) + p.delay(i, j) <= p.bound => Some(c),
                                    _ => continue,
                                }
                            };
                            let w = var();
                            nonneg.push(w);
                            le.push((vec![(w, 1.0), (first, -1.0)], 0.0));
                            if let Some(second) = second {
                                le.push((vec![(w, 1.0), (second, -1.0)], 0.0));
                            }
                            sum.push((w, -1.0));
                        }
                        le.push((sum, 0.0));
                    } else {
                        // Conceptual flow to j over delay-feasible edges.
                        let mut f = vec![None; n * n];
                        for (i, c) in cols.iter().enumerate() {
                            let (u, v) = (i / n, i % n);
                            let Some(c) = *c else { continue };
                            let fits = shortest[s * n + u]
                                .saturating_add(p.delay(u, v))
                                .saturating_add(shortest[v * n + j])
                                <= p.bound;
                            if u != j && fits {
                                let x = var();
                                nonneg.push(x);
                                le.push((vec![(x, 1.0), (c, -1.0)], 0.0));
                                f[i] = Some(x);
                            }
                        }
                        for v in (0..n).filter(|&v| v != s) {
                            let mut terms = Vec::new();
                            for u in 0..n {
                                if let Some(x) = f[u * n + v] {
                                    terms.push((x, 1.0));
                                }
                                if let Some(x) = f[v * n + u] {
                                    terms.push((x, -1.0));
                                }
                            }
                            if v == j {
                                // R_m <= inflow - outflow.
                                let mut t: Vec<(usize, f64)> =
                                    terms.iter().map(|&(x, a)| (x, -a)).collect();
                                t.push((r_var[s], 1.0));
                                le.push((t, 0.0));
                            } else if !terms.is_empty() {
                                // Outflow ≤ inflow: a preflow, whose value at j is
                                // still at most the minimum cut and is always reached
                                // by a real flow. As an inequality rather than
                                // conservation it keeps the problem strictly feasible
                                // where a node's flow variables are all forced to zero.
                                let t: Vec<(usize, f64)> =
                                    terms.iter().map(|&(x, a)| (x, -a)).collect();
                                le.push((t, 0.0));
                            }
                        }
                    }
                }
                c_var.push(cols);
            }
        }
        Scheme::Simulcast | Scheme::Mutualcast => {
            for (s, &r_s) in r_var.iter().enumerate() {
                let fam: Family = p
                    .family(s, scheme)
                    .into_iter()
                    .map(|t| (t, var()))
                    .collect();
                let mut sum = vec![(r_s, 1.0)];
                for (tree, x) in &fam {
                    nonneg.push(*x);
                    sum.push((*x, -1.0));
                    for &(u, v) in tree {
                        if let Some(route) = &p.routes[u * n + v] {
                            for &l in route {
                                load[l].push((*x, 1.0));
                            }
                        }
                    }
                }
                le.push((sum, 0.0));
                families.push(fam);
            }
        }
    }
    // Each loaded link's capacity row, for its price.
    let mut capacity_rows = Vec::new();
    for (l, terms) in load.iter().enumerate() {
        if !terms.is_empty() {
            capacity_rows.push((l, le.len()));
            le.push((terms.clone(), p.capacity_bps[l].max(0.0) / MBPS));
        }
    }
    // Assemble: nonnegative cone, exponential cones.
    let mut rows = Rows::default();
    let from = 0;
    for (terms, b) in &le {
        rows.row(terms, *b);
    }
    for &x in &nonneg {
        rows.row(&[(x, -1.0)], 0.0);
    }
    rows.close(SupportedConeT::NonnegativeConeT, from);
    let delta = p.utility.delta_bps / MBPS;
    for s in 0..n {
        // (t, 1, R + δ) in K_exp:  e^t <= R + δ.
        rows.row(&[(t_var[s], -1.0)], 0.0);
        rows.row(&[], 1.0);
        rows.row(&[(r_var[s], -1.0)], delta);
        rows.cones.push(SupportedConeT::ExponentialConeT());
    }
    let a = rows.matrix(ncols);
    let pm = CscMatrix::<f64>::zeros((ncols, ncols));
    let mut q = vec![0.0; ncols];
    for &t in &t_var {
        q[t] = -1.0;
    }
    let (x, z) = solve_cone(&pm, &q, &a, &rows.b, &rows.cones)?;
    verify(p, scheme, &x, &r_var, &c_var, &families)?;
    let rates_bps: Vec<f64> = r_var.iter().map(|&r| (x[r] * MBPS).max(0.0)).collect();
    let utility = rates_bps.iter().map(|&r| p.utility.of(r)).sum();
    // The objective is Σ ln(R + δ) with rates in Mbit/s (β left out), so
    // a row's dual is ln-utility per Mbit/s: times β, over 1000 for kbit/s.
    let mut link_prices = vec![0.0; p.capacity_bps.len()];
    for (l, row) in capacity_rows {
        link_prices[l] = z[row].max(0.0) * p.utility.beta / 1e3;
    }
    Ok(Optimum {
        rates_bps,
        utility,
        link_prices,
    })
}

/// Runs Clarabel on the assembled problem and returns its primal and dual
/// solutions.
///
/// Clarabel's defaults sometimes stall on these problems (`InsufficientProgress` within the
/// first iterations, the step length falling to zero; among 200 random underlays from
/// `random_underlay.py`, seeds 10 and 193, both eight members with one of them alone behind an
/// 800 kbit/s core link). A stalled solve is retried with the switch to Clarabel's slower,
/// safer step for exponential cones made earlier (`min_switch_step_length`, 0.1 by default),
/// then with shorter interior-point steps as well; each fixed every stall seen. The first
/// answer Clarabel calls solved is returned, and the caller verifies it.
fn solve_cone(
    pm: &CscMatrix<f64>,
    q: &[f64],
    a: &CscMatrix<f64>,
    b: &[f64],
    cones: &[SupportedConeT<f64>],
) -> Result<(Vec<f64>, Vec<f64>), OptimumError> {
    let mut last = None;
    for (max_step_fraction, min_switch_step_length) in [(0.99, 0.1), (0.99, 0.01), (0.9, 0.001)] {
        let settings = DefaultSettings {
            verbose: std::env::var_os("MESHCAST_SOLVER_VERBOSE").is_some(),
            max_step_fraction,
            min_switch_step_length,
            ..DefaultSettings::default()
        };
        let mut solver = DefaultSolver::new(pm, q, a, b, cones, settings)
            .map_err(|e| OptimumError::Invalid(format!("{e:?}")))?;
        solver.solve();
        let status = solver.solution.status;
        match status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => {
                return Ok((solver.solution.x, solver.solution.z));
            }
            SolverStatus::InsufficientProgress
            | SolverStatus::NumericalError
            | SolverStatus::MaxIterations
            | SolverStatus::AlmostPrimalInfeasible
            | SolverStatus::AlmostDualInfeasible => last = Some(status),
            _ => return Err(OptimumError::Solver(format!("{status:?}"))),
        }
    }
    Err(OptimumError::Solver(format!(
        "{:?} (also with Clarabel's safer step settings)",
        last.expect("at least one attempt")
    )))
}

/// Check the solver's answer: link loads within capacity and every `R_m`
/// carried by the returned per-session link rates (recomputed
/// combinatorially) or tree rates.
fn verify(
    p: &Problem,
    scheme: Scheme,
    x: &[f64],
    r_var: &[usize],
    c_var: &[Vec<Option<usize>>],
    families: &[Family],
) -> Result<(), OptimumError> {
    let n = p.n;
    let tol = 1e-4; // Mbit/s: 100 bit/s
    let mut load = vec![0.0; p.capacity_bps.len()];
    let mut add = |u: usize, v: usize, amount: f64| {
        if let Some(route) = &p.routes[u * n + v] {
            for &l in route {
                load[l] += amount.max(0.0);
            }
        }
    };
    match scheme {
        Scheme::Coded | Scheme::TwoHop => {
            for (s, cols) in c_var.iter().enumerate() {
                let mut rates = vec![0u64; n * n];
                for (i, c) in cols.iter().enumerate() {
                    if let Some(c) = *c {
                        add(i / n, i % n, x[c]);
                        rates[i] = (x[c].max(0.0) * MBPS) as u64;
                    }
                }
                let g = SessionGraph {
                    n,
                    source: s,
                    rates: &rates,
                    delays: &p.delays,
                    bound: p.bound,
                };
                let model = if scheme == Scheme::Coded {
                    Model::Deep
                } else {
                    Model::TwoHop
                };
                let carried = packing::session_rate(&g, model) as f64 / MBPS;
                // Truncation to whole bits/s loses up to one bit per link.
                if x[r_var[s]] > carried + tol + (n * n) as f64 / MBPS {
                    return Err(OptimumError::Verification(format!(
                        "session {s}: rate {:.6} Mbit/s but its link rates carry {carried:.6}",
                        x[r_var[s]]
                    )));
                }
            }
        }
        Scheme::Simulcast | Scheme::Mutualcast => {
            for (s, fam) in families.iter().enumerate() {
                let total: f64 = fam.iter().map(|(_, v)| x[*v].max(0.0)).sum();
                if x[r_var[s]] > total + tol {
                    return Err(OptimumError::Verification(format!(
                        "session {s}: rate above its trees' total"
                    )));
                }
                for (tree, v) in fam {
                    for &(a, b) in tree {
                        add(a, b, x[*v]);
                    }
                }
            }
        }
    }
    for (l, &used) in load.iter().enumerate() {
        let cap = p.capacity_bps[l].max(0.0) / MBPS;
        if used > cap * (1.0 + 1e-6) + tol {
            return Err(OptimumError::Verification(format!(
                "link {l} loaded {used:.6} Mbit/s over its {cap:.6}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "optimum_tests.rs"]
mod tests;
