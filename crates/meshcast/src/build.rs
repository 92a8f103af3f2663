//! Turn a checked [`Scenario`] into a ready-to-run [`Sim`].

use crate::scenario::{EventKind, Scenario, TrafficShape};
use meshcast_core::{NodeId, Time};
use meshcast_proto::traffic::Pattern;
use meshcast_sim::{Action, LinkId, Network, NetworkError, Sim, SimError};
use thiserror::Error;

/// Why a checked scenario could still not be built (the checks in
/// `scenario` make these unreachable for files; they guard programmatic
/// use).
#[derive(Debug, Error)]
pub enum BuildError {
    /// The topology was rejected.
    #[error("network: {0}")]
    Network(#[from] NetworkError),
    /// The simulator rejected an endpoint or event.
    #[error("simulator: {0}")]
    Sim(#[from] SimError),
    /// A name that is not declared.
    #[error("unknown node {0:?}")]
    UnknownNode(String),
    /// A link that is not declared.
    #[error("no link {0} -> {1}")]
    UnknownLink(String, String),
}

fn at(s: f64) -> Time {
    Time::from_secs_f64(s)
}

/// Build the simulator for `sc` with its seed.
pub fn build(sc: &Scenario) -> Result<Sim, BuildError> {
    let mut net = Network::new();
    for n in &sc.nodes {
        net.add_node(&n.id, n.kind)?;
    }
    let id = |net: &Network, name: &str| {
        net.node_id(name)
            .ok_or_else(|| BuildError::UnknownNode(name.to_owned()))
    };
    for l in &sc.links {
        let (a, b) = (id(&net, &l.from)?, id(&net, &l.to)?);
        if l.both_ways {
            net.add_duplex(a, b, l.params.clone())?;
        } else {
            net.add_link(a, b, l.params.clone())?;
        }
    }
    // The directions an event on the declared link `from`–`to` affects.
    let directions = |net: &Network, from: &str, to: &str| -> Result<Vec<LinkId>, BuildError> {
        let (a, b) = (id(net, from)?, id(net, to)?);
        let decl = sc
            .links
            .iter()
            .find(|l| {
                (l.from == from && l.to == to) || (l.both_ways && l.from == to && l.to == from)
            })
            .ok_or_else(|| BuildError::UnknownLink(from.to_owned(), to.to_owned()))?;
        let mut v = Vec::new();
        v.extend(net.link_id(a, b));
        if decl.both_ways {
            v.extend(net.link_id(b, a));
        }
        Ok(v)
    };
    let mut actions: Vec<(Time, Action)> = Vec::new();
    let mut traffic = Vec::new();
    for e in &sc.events {
        let t = at(e.at_s);
        match &e.kind {
            EventKind::Traffic {
                id: name,
                from,
                to,
                rate,
                packet_bytes,
                until_s,
                shape,
            } => {
                let pattern = match *shape {
                    TrafficShape::Periodic => Pattern::Cbr,
                    TrafficShape::Poisson => Pattern::Poisson,
                    TrafficShape::OnOff {
                        on,
                        off,
                        distribution,
                    } => Pattern::OnOff {
                        mean_on: on,
                        mean_off: off,
                        distribution,
                    },
                };
                let (f, d): (NodeId, NodeId) = (id(&net, from)?, id(&net, to)?);
                traffic.push((
                    name.clone(),
                    f,
                    d,
                    pattern,
                    *rate,
                    *packet_bytes,
                    t,
                    at(*until_s),
                ));
            }
            EventKind::LinkDown { from, to } => {
                for l in directions(&net, from, to)? {
                    actions.push((t, Action::LinkDown(l)));
                }
            }
            EventKind::LinkUp { from, to } => {
                for l in directions(&net, from, to)? {
                    actions.push((t, Action::LinkUp(l)));
                }
            }
            EventKind::Capacity { from, to, rate } => {
                for l in directions(&net, from, to)? {
                    actions.push((t, Action::SetCapacity(l, *rate)));
                }
            }
            EventKind::Join { node } => actions.push((t, Action::Join(id(&net, node)?))),
            EventKind::Leave { node } => actions.push((t, Action::Leave(id(&net, node)?))),
        }
    }
    let mut sim = Sim::new(net, sc.seed);
    for (name, from, to, pattern, rate, bytes, start, stop) in traffic {
        sim.add_traffic(
            &name,
            from,
            to,
            pattern,
            rate,
            bytes,
            (start, stop),
            sc.seed,
        )?;
    }
    for (t, a) in actions {
        sim.schedule(t, a)?;
    }
    Ok(sim)
}

/// The end of the run.
pub fn end_of(sc: &Scenario) -> Time {
    at(sc.duration_s)
}
