//! meshcast-plan: pure planning algorithms.
//!
//! - [`packing`]: Celerity's delay-bounded tree packing (§3, Appendix A),
//!   session rates (eqs. 4–5), critical cuts (§4.3, §5.2) — for the
//!   paper's 2-hop trees, for deeper trees, and for the Simulcast and
//!   Mutualcast baselines.
//! - [`optimum`]: the central optimum `max Σ U(R_m)` for a known network
//!   state (problem MP, eqs. 2–3), solved with Clarabel.
//!
//! Everything here is a pure function of its inputs: no clock, no I/O, no
//! randomness.

mod maxflow;
pub mod optimum;
pub mod packing;

pub use packing::{
    Cut, Model, Packing, SessionGraph, Tree, WeightedTree, critical_cut, pack, plan, session_rate,
};
