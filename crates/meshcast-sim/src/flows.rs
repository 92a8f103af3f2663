//! Adding measured flows to a [`Sim`]: cross traffic, TCP and TFRC.

use super::{Sim, SimError, TRAFFIC_BASE_PORT};
use meshcast_control::tcp::TcpConfig;
use meshcast_control::tfrc::ReceiverConfig;
use meshcast_core::rng::child_seed;
use meshcast_core::{Addr, FlowId, NodeId, Rate, Time};
use meshcast_proto::msb::{LayeredConfig, MsbBooster, MsbReceiver, MsbSource, MsbSourceConfig};
use meshcast_proto::traffic::{Pattern, SINK_PORT, SourceConfig, TrafficSink, TrafficSource};
use meshcast_proto::transport::tcp::{TcpSink, TcpSource, TcpSourceConfig};
use meshcast_proto::transport::tfrc::{Supply, TfrcSink, TfrcSource, TfrcSourceConfig};
use meshcast_proto::transport::{TCP_SINK_PORT, TFRC_SINK_PORT};

impl Sim {
    /// Add a cross-traffic flow from `from` to `to`: declares the flow
    /// (named `name`, kind `cbr` or `onoff` after `pattern`), binds a
    /// [`TrafficSource`] to `from` on port `TRAFFIC_BASE_PORT + flow id`
    /// and, unless one is there already, a [`TrafficSink`] to `to` on
    /// [`SINK_PORT`]. The source's random stream is seeded from `seed` and
    /// the flow's name.
    #[allow(clippy::too_many_arguments)]
    pub fn add_traffic(
        &mut self,
        name: &str,
        from: NodeId,
        to: NodeId,
        pattern: Pattern,
        rate: Rate,
        packet_bytes: u32,
        (start, stop): (Time, Time),
        seed: u64,
    ) -> Result<FlowId, SimError> {
        let kind = match pattern {
            Pattern::Cbr | Pattern::Poisson => "cbr",
            Pattern::OnOff { .. } => "onoff",
        };
        let (flow_index, src_addr) = self.next_source(from, to)?;
        let cfg = SourceConfig {
            flow: FlowId(flow_index as u32),
            to: Addr::new(to, SINK_PORT),
            rate,
            packet_bytes,
            start,
            stop,
            pattern,
            seed: child_seed(seed, &format!("flow:{name}")),
            exact_phase: false,
        };
        let source = TrafficSource::new(cfg).map_err(SimError::Traffic)?;
        let flow = self.add_flow(name, kind, from, vec![to]);
        debug_assert_eq!(flow.index(), flow_index);
        if !self.is_bound(Addr::new(to, SINK_PORT)) {
            self.add_endpoint(Addr::new(to, SINK_PORT), Box::new(TrafficSink::new()))?;
        }
        self.add_endpoint(src_addr, Box::new(source))?;
        Ok(flow)
    }

    /// The flow index the next declared flow gets and the address its
    /// source binds (`TRAFFIC_BASE_PORT + index` on `from`), after checking
    /// both nodes exist and the address is free.
    fn next_source(&self, from: NodeId, to: NodeId) -> Result<(usize, Addr), SimError> {
        let n = self.bound.len();
        for node in [from, to] {
            if node.index() >= n {
                return Err(SimError::NoSuchNode(node));
            }
        }
        let flow_index = self.fab.flows.flows().len();
        let port = u16::try_from(flow_index)
            .ok()
            .and_then(|i| TRAFFIC_BASE_PORT.checked_add(i))
            .ok_or(SimError::TooManyFlows)?;
        let src_addr = Addr::new(from, port);
        if self.is_bound(src_addr) {
            return Err(SimError::AddrInUse(src_addr));
        }
        Ok((flow_index, src_addr))
    }

    /// Add a TCP NewReno bulk flow (kind `tcp`) from `from` to `to`, active
    /// over `start..stop`: its source binds `TRAFFIC_BASE_PORT + flow id`
    /// on `from`, and a [`TcpSink`] is bound to [`TCP_SINK_PORT`] on `to`
    /// unless one is there.
    pub fn add_tcp(
        &mut self,
        name: &str,
        from: NodeId,
        to: NodeId,
        tcp: TcpConfig,
        (start, stop): (Time, Time),
    ) -> Result<FlowId, SimError> {
        let (flow_index, src_addr) = self.next_source(from, to)?;
        let sink = Addr::new(to, TCP_SINK_PORT);
        let cfg = TcpSourceConfig {
            flow: FlowId(flow_index as u32),
            to: sink,
            tcp,
            start,
            stop,
        };
        let flow = self.add_flow(name, "tcp", from, vec![to]);
        if !self.is_bound(sink) {
            self.add_endpoint(sink, Box::new(TcpSink::new()))?;
        }
        self.add_endpoint(src_addr, Box::new(TcpSource::new(cfg)))?;
        Ok(flow)
    }

    /// Add a TFRC flow (kind `tfrc`) of `packet_bytes` datagrams from
    /// `from` to `to`, active over `start..stop`: its source binds
    /// `TRAFFIC_BASE_PORT + flow id` on `from`, and a [`TfrcSink`] (with
    /// history discounting, segment size `packet_bytes`) is bound to
    /// [`TFRC_SINK_PORT`] on `to` unless one is there.
    pub fn add_tfrc(
        &mut self,
        name: &str,
        from: NodeId,
        to: NodeId,
        supply: Supply,
        packet_bytes: u32,
        (start, stop): (Time, Time),
    ) -> Result<FlowId, SimError> {
        let (flow_index, src_addr) = self.next_source(from, to)?;
        let sink = Addr::new(to, TFRC_SINK_PORT);
        let cfg = TfrcSourceConfig {
            flow: FlowId(flow_index as u32),
            to: sink,
            packet_bytes,
            supply,
            start,
            stop,
        };
        let flow = self.add_flow(name, "tfrc", from, vec![to]);
        if !self.is_bound(sink) {
            let rcfg = ReceiverConfig {
                segment_bytes: packet_bytes,
                discounting: true,
            };
            self.add_endpoint(sink, Box::new(TfrcSink::new(rcfg)))?;
        }
        self.add_endpoint(src_addr, Box::new(TfrcSource::new(cfg)))?;
        Ok(flow)
    }

    /// Add a layered MSB stream (kind `layered`) from `from` to `to`,
    /// through the boosters in `via` (in path order; empty: end to end),
    /// generating frames over `start..stop`. Every role binds
    /// `TRAFFIC_BASE_PORT + flow id` on its node.
    pub fn add_layered(
        &mut self,
        name: &str,
        from: NodeId,
        via: &[NodeId],
        to: NodeId,
        stream: LayeredConfig,
        (start, stop): (Time, Time),
    ) -> Result<FlowId, SimError> {
        let (flow_index, src_addr) = self.next_source(from, to)?;
        let port = src_addr.port;
        let flow = FlowId(flow_index as u32);
        let mut path = vec![src_addr];
        for &n in via.iter().chain([&to]) {
            if n.index() >= self.bound.len() {
                return Err(SimError::NoSuchNode(n));
            }
            let a = Addr::new(n, port);
            if self.is_bound(a) || path.contains(&a) {
                return Err(SimError::AddrInUse(a));
            }
            path.push(a);
        }
        let source = MsbSource::new(MsbSourceConfig {
            flow,
            to: path[1],
            stream,
            start,
            stop,
        })
        .map_err(SimError::Layered)?;
        let receiver =
            MsbReceiver::new(flow, path[path.len() - 2], stream).map_err(SimError::Layered)?;
        let declared = self.add_flow(name, "layered", from, vec![to]);
        debug_assert_eq!(declared, flow);
        self.add_endpoint(src_addr, Box::new(source))?;
        for w in path.windows(3) {
            let b = MsbBooster::new(flow, w[0], w[2], stream, start).map_err(SimError::Layered)?;
            self.add_endpoint(w[1], Box::new(b))?;
        }
        self.add_endpoint(path[path.len() - 1], Box::new(receiver))?;
        Ok(flow)
    }
}
