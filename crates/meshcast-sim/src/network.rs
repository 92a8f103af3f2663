//! The underlay a simulation runs on: nodes and directed links.

use meshcast_core::{Duration, NodeId, Rate};
use std::collections::HashMap;
use thiserror::Error;

/// What a node is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NodeKind {
    /// An endpoint: sends and receives, never forwards.
    Host,
    /// Forwards packets; may also send and receive.
    Router,
}

/// A directed link's index in [`Network::links`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LinkId(pub u32);

impl LinkId {
    /// The id as an index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Drop-tail queue limits of a link direction. A packet that would make the
/// waiting queue exceed either limit is dropped; the packet being
/// serialised does not count. Byte limits count wire bytes (payload plus
/// [`meshcast_core::IP_UDP_OVERHEAD`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QueueLimit {
    /// Most packets waiting (`None`: no packet limit).
    pub packets: Option<u32>,
    /// Most wire bytes waiting (`None`: no byte limit).
    pub bytes: Option<u64>,
}

/// One direction of a link.
#[derive(Clone, PartialEq, Debug)]
pub struct LinkParams {
    /// Serialisation rate.
    pub capacity: Rate,
    /// Propagation delay.
    pub delay: Duration,
    /// Drop-tail limits.
    pub queue: QueueLimit,
    /// Probability that a packet is lost on the wire, independently of all
    /// others (0..=1).
    pub loss: f64,
    /// Random early detection in front of the drop-tail limits (`None`:
    /// plain drop-tail).
    pub red: Option<Red>,
}

impl LinkParams {
    /// A plain drop-tail link: `capacity`, `delay`, a queue of `packets`
    /// packets, no wire loss, no RED.
    pub fn drop_tail(capacity: Rate, delay: Duration, packets: u32) -> LinkParams {
        LinkParams {
            capacity,
            delay,
            queue: QueueLimit {
                packets: Some(packets),
                bytes: None,
            },
            loss: 0.0,
            red: None,
        }
    }
}

/// Random Early Detection (Floyd and Jacobson 1993) in its "gentle" form,
/// counted in packets, as ns-2 runs it. On every arrival the average queue
/// `avg` moves by `w_q` towards the waiting queue's length (after an idle
/// period it first decays as if `idle / (1000-byte transmission time)`
/// empty arrivals had been seen). Below `min_th` nothing is dropped; from
/// `min_th` to `max_th` the drop probability rises linearly to `max_p`, and
/// from `max_th` to `2·max_th` on to 1 ("gentle"); above that every arrival
/// is dropped. Drops are spread out with the `count` rule
/// (`p_a = p_b / (1 − count·p_b)`). The drop-tail limits still apply.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Red {
    /// Lower threshold of the average queue, packets.
    pub min_th: f64,
    /// Upper threshold, packets.
    pub max_th: f64,
    /// Drop probability at `max_th`.
    pub max_p: f64,
    /// Weight of the average.
    pub w_q: f64,
}

impl Default for Red {
    /// ns-2's classic defaults: thresholds 5 and 15 packets, `max_p` 0.1,
    /// `w_q` 0.002.
    fn default() -> Red {
        Red {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            w_q: 0.002,
        }
    }
}

impl Red {
    /// Whether the parameters make sense: `0 <= min_th < max_th`,
    /// `0 < max_p <= 1`, `0 < w_q <= 1`.
    pub fn is_valid(&self) -> bool {
        self.min_th >= 0.0
            && self.max_th > self.min_th
            && self.max_p > 0.0
            && self.max_p <= 1.0
            && self.w_q > 0.0
            && self.w_q <= 1.0
    }
}

/// A node as declared.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NodeSpec {
    /// Its unique name.
    pub name: String,
    /// Host or router.
    pub kind: NodeKind,
}

/// A directed link as declared.
#[derive(Clone, PartialEq, Debug)]
pub struct LinkSpec {
    /// Where packets enter it.
    pub from: NodeId,
    /// Where they leave it.
    pub to: NodeId,
    /// Its parameters.
    pub params: LinkParams,
}

/// Why a topology was rejected.
#[derive(Clone, PartialEq, Debug, Error)]
pub enum NetworkError {
    /// Two nodes share a name.
    #[error("duplicate node name {0:?}")]
    DuplicateNode(String),
    /// A link refers to a node that does not exist.
    #[error("no node {0}")]
    NoSuchNode(NodeId),
    /// A link from a node to itself.
    #[error("link from {0:?} to itself")]
    SelfLink(String),
    /// A second link in the same direction between the same nodes.
    #[error("duplicate link {0:?} -> {1:?}")]
    DuplicateLink(String, String),
    /// Zero capacity.
    #[error("link {0:?} -> {1:?}: capacity must be positive")]
    ZeroCapacity(String, String),
    /// Loss outside 0..=1.
    #[error("link {0:?} -> {1:?}: loss {2} outside 0..=1")]
    Loss(String, String, f64),
    /// RED parameters that make no sense.
    #[error("link {0:?} -> {1:?}: RED needs 0 <= min_th < max_th, 0 < max_p <= 1, 0 < w_q <= 1")]
    Red(String, String),
}

/// An underlay: nodes and directed links.
#[derive(Clone, Debug, Default)]
pub struct Network {
    nodes: Vec<NodeSpec>,
    links: Vec<LinkSpec>,
    by_name: HashMap<String, NodeId>,
    by_ends: HashMap<(NodeId, NodeId), LinkId>,
}

impl Network {
    /// An empty network.
    pub fn new() -> Network {
        Network::default()
    }

    /// Add a node; names must be unique.
    pub fn add_node(&mut self, name: &str, kind: NodeKind) -> Result<NodeId, NetworkError> {
        if self.by_name.contains_key(name) {
            return Err(NetworkError::DuplicateNode(name.to_owned()));
        }
        let id = NodeId(u32::try_from(self.nodes.len()).expect("fewer than 2^32 nodes"));
        self.nodes.push(NodeSpec {
            name: name.to_owned(),
            kind,
        });
        self.by_name.insert(name.to_owned(), id);
        Ok(id)
    }

    /// Add a directed link `from -> to`.
    pub fn add_link(
        &mut self,
        from: NodeId,
        to: NodeId,
        params: LinkParams,
    ) -> Result<LinkId, NetworkError> {
        let name = |n: NodeId| self.nodes.get(n.index()).map(|s| s.name.clone());
        let f = name(from).ok_or(NetworkError::NoSuchNode(from))?;
        let t = name(to).ok_or(NetworkError::NoSuchNode(to))?;
        if from == to {
            return Err(NetworkError::SelfLink(f));
        }
        if self.by_ends.contains_key(&(from, to)) {
            return Err(NetworkError::DuplicateLink(f, t));
        }
        if params.capacity == Rate::ZERO {
            return Err(NetworkError::ZeroCapacity(f, t));
        }
        if !(0.0..=1.0).contains(&params.loss) {
            return Err(NetworkError::Loss(f, t, params.loss));
        }
        if params.red.is_some_and(|r| !r.is_valid()) {
            return Err(NetworkError::Red(f, t));
        }
        let id = LinkId(u32::try_from(self.links.len()).expect("fewer than 2^32 links"));
        self.links.push(LinkSpec { from, to, params });
        self.by_ends.insert((from, to), id);
        Ok(id)
    }

    /// Add a link in both directions with the same parameters; returns
    /// `(from -> to, to -> from)`.
    pub fn add_duplex(
        &mut self,
        a: NodeId,
        b: NodeId,
        params: LinkParams,
    ) -> Result<(LinkId, LinkId), NetworkError> {
        let ab = self.add_link(a, b, params.clone())?;
        let ba = self.add_link(b, a, params)?;
        Ok((ab, ba))
    }

    /// The node called `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// The link `from -> to`.
    pub fn link_id(&self, from: NodeId, to: NodeId) -> Option<LinkId> {
        self.by_ends.get(&(from, to)).copied()
    }

    /// Every node, indexed by [`NodeId`].
    pub fn nodes(&self) -> &[NodeSpec] {
        &self.nodes
    }

    /// Every link, indexed by [`LinkId`].
    pub fn links(&self) -> &[LinkSpec] {
        &self.links
    }

    /// The name of node `n`.
    pub fn name(&self, n: NodeId) -> &str {
        &self.nodes[n.index()].name
    }

    /// `"A->E"` for a link.
    pub fn link_name(&self, l: LinkId) -> String {
        let s = &self.links[l.index()];
        format!("{}->{}", self.name(s.from), self.name(s.to))
    }
}
