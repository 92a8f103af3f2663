//! The `meshcast` command's library: scenario files, `--set` overrides,
//! building a simulation from a scenario, and the reports a run writes.

pub mod build;
pub mod conference;
pub mod emu;
pub mod layered;
pub mod node;
pub mod overrides;
pub mod report;
pub mod scenario;
pub mod sweep;
pub mod video;
