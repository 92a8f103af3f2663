//! Identifiers: underlay nodes, endpoint addresses and flows.

use std::fmt;

/// An underlay node (host or router), numbered densely from zero by the
/// driver in the order the scenario declares them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The id as an index into per-node tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// The address of an endpoint: a node and a port on it, as a UDP socket is
/// an IP address and a port. Protocol code names peers by `Addr`; the UDP
/// runtime maps each to a socket address from its configuration.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Addr {
    /// The node the endpoint runs on.
    pub node: NodeId,
    /// The port it is bound to on that node.
    pub port: u16,
}

impl Addr {
    /// The endpoint bound to `port` on `node`.
    pub const fn new(node: NodeId, port: u16) -> Addr {
        Addr { node, port }
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.node, self.port)
    }
}

/// A flow whose delivery the driver measures (a cross-traffic stream, a
/// conference session, ...). Numbered by the driver's configuration; carried
/// in [`crate::Event`]s so that drivers can attribute bytes and delays.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FlowId(pub u32);

impl FlowId {
    /// The id as an index into per-flow tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
