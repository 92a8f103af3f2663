//! Turn a checked [`Scenario`] into a ready-to-run [`Sim`].

use crate::conference::{CONFERENCE_PORT, Conference, presence};
use crate::scenario::{EventKind, Scenario};
use crate::video::{VideoApp, VideoParams};
use meshcast_control::tcp::TcpConfig;
use meshcast_core::{Addr, Duration, Endpoint, FlowId, NodeId, Time};
use meshcast_proto::celerity::{CelerityConfig, CelerityPeer};
use meshcast_proto::transport::tfrc::Supply;
use meshcast_sim::{Action, LinkId, Membership, Network, NetworkError, Sim, SimError};
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
    /// An event names a link index past the declared links.
    #[error("no link [{0}]")]
    UnknownLink(usize),
    /// A peer's configuration was refused.
    #[error("conference: {0}")]
    Conference(String),
}

/// Starts a participant's peer when its node joins.
struct ConferenceHook {
    nodes: Vec<NodeId>,
    configs: Vec<CelerityConfig>,
    video: Option<VideoParams>,
}

impl Membership for ConferenceHook {
    fn join(&mut self, node: NodeId, now: Time) -> Vec<(u16, Box<dyn Endpoint>)> {
        let Some(i) = self.nodes.iter().position(|&n| n == node) else {
            return Vec::new();
        };
        let Ok(peer) = CelerityPeer::new(self.configs[i].clone()) else {
            return Vec::new();
        };
        let endpoint: Box<dyn Endpoint> = match self.video {
            // The encoders start a keyframe interval's i-th share apart,
            // so that the participants' keyframes do not all fall at once.
            Some(v) => {
                let offset = v.keyframe_interval.as_secs_f64() * i as f64 / self.nodes.len() as f64;
                Box::new(VideoApp::new(
                    peer,
                    v,
                    now + Duration::from_secs_f64(offset),
                ))
            }
            None => Box::new(peer),
        };
        vec![(CONFERENCE_PORT, endpoint)]
    }
}

/// Declare the sessions' flows, install the peers' join hook and start
/// every participant present at time zero (through a join at zero, so a
/// later leave closes it like any other).
fn add_conference(sim: &mut Sim, sc: &Scenario, c: &Conference) -> Result<(), BuildError> {
    let nodes: Vec<NodeId> = c
        .participants
        .iter()
        .map(|p| node(sim.network(), p))
        .collect::<Result<_, _>>()?;
    let flows: Vec<FlowId> = nodes
        .iter()
        .enumerate()
        .map(|(i, &src)| {
            let receivers = nodes.iter().copied().filter(|&n| n != src).collect();
            sim.add_flow(c.participants[i].clone(), "session", src, receivers)
        })
        .collect();
    let present = presence(sc, c);
    for (i, &flow) in flows.iter().enumerate() {
        for (j, &r) in nodes.iter().enumerate() {
            if i != j {
                sim.set_presence(flow, r, present[j].clone());
            }
        }
    }
    let configs: Vec<CelerityConfig> = (0..nodes.len())
        .map(|me| CelerityConfig {
            me,
            participants: nodes
                .iter()
                .map(|&n| Addr::new(n, CONFERENCE_PORT))
                .collect(),
            flows: flows.clone(),
            model: c.model(),
            params: c.params.clone(),
        })
        .collect();
    for cfg in &configs {
        CelerityPeer::new(cfg.clone()).map_err(|e| BuildError::Conference(e.to_string()))?;
    }
    sim.set_membership(Box::new(ConferenceHook {
        nodes: nodes.clone(),
        configs,
        video: c.video,
    }));
    let offsets = c.start_offsets(sc.seed);
    for (i, &n) in nodes.iter().enumerate() {
        if let Some(&(Time::ZERO, until)) = present[i].first() {
            // A spread start comes before the member's first leave (at
            // most half-way to it).
            let half = Duration::from_secs_f64(until.as_secs_f64() / 2.0);
            sim.schedule(Time::ZERO + offsets[i].min(half), Action::Join(n))?;
        }
    }
    Ok(())
}

fn at(s: f64) -> Time {
    Time::from_secs_f64(s)
}

fn node(net: &Network, name: &str) -> Result<NodeId, BuildError> {
    net.node_id(name)
        .ok_or_else(|| BuildError::UnknownNode(name.to_owned()))
}

/// A flow's source and destination nodes.
fn ends(net: &Network, from: &str, to: &str) -> Result<(NodeId, NodeId), BuildError> {
    Ok((node(net, from)?, node(net, to)?))
}

/// The scenario's underlay, and the directions ([`LinkId`]s) of each
/// declared link, which link events act on.
pub fn network(sc: &Scenario) -> Result<(Network, Vec<Vec<LinkId>>), BuildError> {
    let mut net = Network::new();
    for n in &sc.nodes {
        net.add_node(&n.id, n.kind)?;
    }
    let mut directions: Vec<Vec<LinkId>> = Vec::with_capacity(sc.links.len());
    for l in &sc.links {
        let (a, b) = (node(&net, &l.from)?, node(&net, &l.to)?);
        directions.push(if l.both_ways {
            let (ab, ba) = net.add_duplex(a, b, l.params.clone())?;
            vec![ab, ba]
        } else {
            vec![net.add_link(a, b, l.params.clone())?]
        });
    }
    Ok((net, directions))
}

/// Build the simulator for `sc` with its seed.
pub fn build(sc: &Scenario) -> Result<Sim, BuildError> {
    let (net, directions) = network(sc)?;
    let mut sim = Sim::new(net, sc.seed);
    if let Some(c) = &sc.conference {
        add_conference(&mut sim, sc, c)?;
    }
    if let Some(l) = &sc.layered {
        let net = sim.network();
        let (src, dst) = ends(net, &l.source, &l.receiver)?;
        let via = match &l.booster {
            Some(b) => vec![node(net, b)?],
            None => Vec::new(),
        };
        let span = (at(l.start_s), at(l.until_s));
        sim.add_layered(&l.id, src, &via, dst, l.stream, span)?;
    }
    let dirs = |link: usize| directions.get(link).ok_or(BuildError::UnknownLink(link));
    for e in &sc.events {
        let t = at(e.at_s);
        match &e.kind {
            EventKind::Traffic {
                id,
                from,
                to,
                rate,
                packet_bytes,
                until_s,
                pattern,
            } => {
                let (f, d) = ends(sim.network(), from, to)?;
                let span = (t, at(*until_s));
                sim.add_traffic(id, f, d, *pattern, *rate, *packet_bytes, span, sc.seed)?;
            }
            EventKind::Tcp {
                id,
                from,
                to,
                segment_bytes,
                until_s,
            } => {
                let (f, d) = ends(sim.network(), from, to)?;
                let tcp = TcpConfig {
                    segment_bytes: *segment_bytes,
                    ..TcpConfig::default()
                };
                sim.add_tcp(id, f, d, tcp, (t, at(*until_s)))?;
            }
            EventKind::Tfrc {
                id,
                from,
                to,
                packet_bytes,
                rate,
                until_s,
            } => {
                let (f, d) = ends(sim.network(), from, to)?;
                let supply = rate.map_or(Supply::Bulk, Supply::Rate);
                sim.add_tfrc(id, f, d, supply, *packet_bytes, (t, at(*until_s)))?;
            }
            EventKind::DropEvery {
                link,
                reverse,
                every,
            } => {
                let l = dirs(*link)?
                    .get(usize::from(*reverse))
                    .copied()
                    .ok_or(BuildError::UnknownLink(*link))?;
                sim.schedule(t, Action::DropEvery(l, *every))?;
            }
            EventKind::LinkDown { link } => {
                for &l in dirs(*link)? {
                    sim.schedule(t, Action::LinkDown(l))?;
                }
            }
            EventKind::LinkUp { link } => {
                for &l in dirs(*link)? {
                    sim.schedule(t, Action::LinkUp(l))?;
                }
            }
            EventKind::Capacity { link, rate } => {
                for &l in dirs(*link)? {
                    sim.schedule(t, Action::SetCapacity(l, *rate))?;
                }
            }
            EventKind::Join { node: n } => {
                sim.schedule(t, Action::Join(node(sim.network(), n)?))?
            }
            EventKind::Leave { node: n } => {
                sim.schedule(t, Action::Leave(node(sim.network(), n)?))?;
            }
        }
    }
    Ok(sim)
}

/// The end of the run.
pub fn end_of(sc: &Scenario) -> Time {
    at(sc.duration_s)
}
