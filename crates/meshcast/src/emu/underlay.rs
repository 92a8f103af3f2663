//! A scenario's underlay built for real out of network namespaces.
//!
//! Every node (host or router) is a network namespace `mc<PID>.<K>n<I>`
//! (`K` counts the underlays this process built); one more, `mc<PID>.<K>d`,
//! holds the delay element ([`super::delay`]). A
//! declared link `N` between `X` and `Y` is two veth pairs: `l<N>` in X's
//! namespace paired with `a<N>` in the delay namespace, and `l<N>` in Y's
//! paired with `b<N>`. Addresses:
//!
//! - node `I` (declaration order) owns `10.255.H.L/32` on its loopback,
//!   with `H.L` = `I + 1` (so `10.255.0.1` is the first node); meshcast
//!   nodes listen there;
//! - link `N` is the /30 at `10.0.0.0 + 4N`: `.1` at its `from` end, `.2`
//!   at its `to` end.
//!
//! Each outer end shapes its direction: htb at the direction's capacity
//! over a pfifo/bfifo of the scenario's queue limit (with a size table
//! that takes the 14-byte Ethernet header off, so rates and byte limits
//! count IP packets as the simulator does; the delay element serialises
//! each frame at the same rate, [`super::delay`]). Routes are the
//! simulator's own next-hop tables ([`meshcast_sim::routing::Routes`]),
//! one /32 per destination node with this node's address as source; only
//! routers forward. IPv6 is off everywhere so nothing but the experiment's traffic
//! crosses the links.
//!
//! [`Underlay`] removes every namespace it made when dropped (and with
//! them their interfaces); [`remove_stale`] removes those of runs whose
//! process is gone (a run killed with SIGKILL cannot clean up).

use super::delay::{DelayCounters, DelayLine, Hop};
use super::qdisc::QdiscReader;
use crate::build::network;
use crate::scenario::Scenario;
use anyhow::{Context as _, bail};
use meshcast_core::{NodeId, Rate, Time};
use meshcast_sim::network::NodeKind;
use meshcast_sim::routing::Routes;
use meshcast_sim::{LinkId, Network};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

/// The handle of each link direction's drop-tail queue (`10:`, under the
/// htb class that shapes it).
const LEAF_HANDLE: u32 = 0x0010_0000;

/// Namespace names start with this, then the owning process id.
const PREFIX: &str = "mc";

/// Run `program args`, failing with its stderr.
pub(crate) fn run_cmd(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {program} (iproute2 is needed)"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run `ip -n NS -batch -` with `lines` on its input.
fn ip_batch(ns: &str, lines: &[String]) -> anyhow::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run ip (iproute2 is needed)")?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all((lines.join("\n") + "\n").as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "ip -n {ns} -batch failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Set sysctls inside namespace `ns`.
fn sysctls(ns: &str, settings: &[&str]) -> anyhow::Result<()> {
    let mut args = vec!["netns", "exec", ns, "sysctl", "-q", "-w"];
    args.extend_from_slice(settings);
    run_cmd("ip", &args).map(|_| ())
}

/// The address of node `i` (declaration order).
pub fn node_addr(i: usize) -> Ipv4Addr {
    let k = u32::try_from(i + 1).unwrap_or(u32::MAX) & 0xffff;
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 255, 0, 0)) | k)
}

/// The address of link `n`'s `from` end (`to_end` false) or `to` end.
fn link_addr(n: usize, to_end: bool) -> Ipv4Addr {
    let base = u32::from(Ipv4Addr::new(10, 0, 0, 0)) + 4 * u32::try_from(n).unwrap_or(0);
    Ipv4Addr::from(base + 1 + u32::from(to_end))
}

/// Namespace names of underlay `k` of process `pid`: node `i`'s, or
/// (`None`) the delay namespace.
fn ns_name(pid: u32, k: u32, node: Option<usize>) -> String {
    match node {
        Some(i) => format!("{PREFIX}{pid}.{k}n{i}"),
        None => format!("{PREFIX}{pid}.{k}d"),
    }
}

/// Underlays built by this process so far.
static BUILT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Remove the namespaces left by runs whose process no longer exists.
/// Returns their names.
pub fn remove_stale() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let Some((digits, tail)) = rest.split_once('.') else {
            continue;
        };
        let tail = tail.trim_start_matches(|c: char| c.is_ascii_digit());
        let ours = digits.parse::<u32>().is_ok()
            && (tail == "d" || (tail.starts_with('n') && tail[1..].parse::<u32>().is_ok()));
        if ours && !std::path::Path::new(&format!("/proc/{digits}")).exists() {
            let _ = run_cmd("ip", &["netns", "del", &name]);
            removed.push(name);
        }
    }
    removed
}

/// Refuse what cannot be built here: RED queues (no `red` qdisc), a
/// queue limited in both packets and bytes (a fifo holds one limit), and
/// more nodes or links than the address plan holds.
pub fn check(sc: &Scenario) -> anyhow::Result<()> {
    // The address plan: a /32 per node in 10.255/16, a /30 per link below it.
    if sc.nodes.len() >= 0xffff {
        bail!(
            "{} nodes: meshcast emu addresses at most 65534",
            sc.nodes.len()
        );
    }
    if sc.links.len() > (0x00fe_ffff / 4) {
        bail!(
            "{} links: meshcast emu addresses at most 4,177,919",
            sc.links.len()
        );
    }
    for (n, l) in sc.links.iter().enumerate() {
        if l.params.red.is_some() {
            bail!(
                "link {n} ({} - {}) has RED, which this kernel lacks",
                l.from,
                l.to
            );
        }
        if l.params.queue.packets.is_some() && l.params.queue.bytes.is_some() {
            bail!(
                "link {n} ({} - {}) limits its queue in packets and in bytes; a kernel fifo holds one limit",
                l.from,
                l.to
            );
        }
    }
    Ok(())
}

/// Counters of one link direction's queue, read from the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Bytes sent (IP bytes: the size table takes the Ethernet header off).
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Packets the drop-tail queue dropped.
    pub drops: u64,
    /// Packets waiting now.
    pub qlen: u32,
    /// When the kernel's counters were read, on the run's clock: the
    /// middle of the netlink dump that read them (tens of microseconds).
    pub at: Time,
}

/// The built underlay.
pub struct Underlay {
    /// Every namespace made, delay namespace last.
    made: Vec<String>,
    /// Namespace of each node.
    node_ns: Vec<String>,
    net: Network,
    /// Directions of each declared link: `from->to`, then `to->from` if
    /// it runs both ways.
    directions: Vec<Vec<LinkId>>,
    /// The two end nodes of each declared link: `[from, to]`.
    ends: Vec<[usize; 2]>,
    /// Which declared links are up.
    up: Vec<bool>,
    /// Installed routes per node: destination node -> declared link.
    routes: Vec<BTreeMap<usize, usize>>,
    delay: Option<DelayLine>,
    /// Per node: a netlink socket in its namespace, for the queue
    /// counters.
    readers: Vec<QdiscReader>,
}

impl Underlay {
    /// Build `sc`'s underlay. Needs root and iproute2. Refuses what it
    /// cannot reproduce (RED queues, a queue limited in both packets and
    /// bytes).
    pub fn build(sc: &Scenario) -> anyhow::Result<Underlay> {
        check(sc)?;
        let (net, directions) = network(sc)?;
        let mut ends = Vec::new();
        for l in &sc.links {
            let at = |name: &str| net.node_id(name).map(NodeId::index).context("a link's end");
            ends.push([at(&l.from)?, at(&l.to)?]);
        }
        let pid = std::process::id();
        let k = BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut u = Underlay {
            made: Vec::new(),
            node_ns: (0..sc.nodes.len())
                .map(|i| ns_name(pid, k, Some(i)))
                .collect(),
            net,
            directions,
            ends,
            up: vec![true; sc.links.len()],
            routes: vec![BTreeMap::new(); sc.nodes.len()],
            delay: None,
            readers: Vec::new(),
        };
        // From here on, dropping `u` removes whatever was made.
        u.make(sc, ns_name(pid, k, None))?;
        Ok(u)
    }

    fn make(&mut self, sc: &Scenario, delay_ns: String) -> anyhow::Result<()> {
        let no_v6 = [
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ];
        for ns in self.node_ns.iter().chain([&delay_ns]) {
            run_cmd("ip", &["netns", "add", ns])?;
            self.made.push(ns.clone());
            sysctls(ns, &no_v6)?;
        }
        for (i, node) in sc.nodes.iter().enumerate() {
            let ns = &self.node_ns[i];
            let forward = if node.kind == NodeKind::Router {
                "1"
            } else {
                "0"
            };
            sysctls(
                ns,
                &[
                    &format!("net.ipv4.ip_forward={forward}"),
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0",
                ],
            )?;
            ip_batch(
                ns,
                &[
                    "link set lo up".to_owned(),
                    format!("addr add {}/32 dev lo", node_addr(i)),
                ],
            )?;
        }
        let mut hops = Vec::new();
        let mut delay_cmds = Vec::new();
        for n in 0..sc.links.len() {
            for (side, node) in self.ends[n].into_iter().enumerate() {
                let inner = format!("{}{n}", if side == 0 { 'a' } else { 'b' });
                let ns = &self.node_ns[node];
                run_cmd(
                    "ip",
                    &[
                        "-n",
                        ns,
                        "link",
                        "add",
                        &format!("l{n}"),
                        "type",
                        "veth",
                        "peer",
                        "name",
                        &inner,
                        "netns",
                        &delay_ns,
                    ],
                )?;
                delay_cmds.push(format!("link set {inner} up"));
                ip_batch(
                    ns,
                    &[
                        format!("addr add {}/30 dev l{n}", link_addr(n, side == 1)),
                        format!("link set l{n} up"),
                    ],
                )?;
                // The end of a one-way link that does not send has no
                // shaper; the delay element drops what it sends.
                if let Some(d) = self.directions[n].get(side) {
                    let dir = &self.net.links()[d.index()].params;
                    self.shape(node, n, dir.capacity, &dir.queue)?;
                }
            }
            let p = |side: usize| {
                self.directions[n]
                    .get(side)
                    .map(|d| &self.net.links()[d.index()].params)
            };
            let delay = |side| p(side).map(|p| std::time::Duration::from_nanos(p.delay.as_nanos()));
            let loss = |side| p(side).map_or(0.0, |p| p.loss);
            let rate = |side| p(side).map_or(0, |p| p.capacity.as_bps());
            hops.push(Hop {
                a: format!("a{n}"),
                b: format!("b{n}"),
                delay_ab: delay(0),
                delay_ba: delay(1),
                rate_ab: rate(0),
                rate_ba: rate(1),
                loss_ab: loss(0),
                loss_ba: loss(1),
            });
        }
        ip_batch(&delay_ns, &delay_cmds)?;
        self.neighbours()?;
        // The counters' readers, now rather than at the first read, so
        // that a failure stops the run before any node starts.
        for i in 0..self.node_ns.len() {
            let r = QdiscReader::open_in(&self.netns_path(i))
                .with_context(|| format!("cannot open a netlink socket in {}", self.node_ns[i]))?;
            self.readers.push(r);
        }
        self.delay = Some(
            DelayLine::start(PathBuf::from(NETNS_DIR).join(&delay_ns), hops, sc.seed)
                .context("cannot start the delay element")?,
        );
        self.route()
    }

    /// Each end of every link knows the other end's hardware address
    /// without asking: a one-way link could not carry an ARP reply back.
    fn neighbours(&self) -> anyhow::Result<()> {
        let mac = |node: usize, n: usize| -> anyhow::Result<String> {
            let text = run_cmd(
                "ip",
                &[
                    "-n",
                    &self.node_ns[node],
                    "-j",
                    "link",
                    "show",
                    &format!("l{n}"),
                ],
            )?;
            let v: serde_json::Value =
                serde_json::from_str(&text).context("ip -j printed something else than JSON")?;
            v[0]["address"]
                .as_str()
                .map(str::to_owned)
                .context("a veth without a hardware address")
        };
        let mut cmds: Vec<Vec<String>> = vec![Vec::new(); self.node_ns.len()];
        for (n, &[a, b]) in self.ends.iter().enumerate() {
            let (mac_a, mac_b) = (mac(a, n)?, mac(b, n)?);
            cmds[a].push(format!(
                "neigh replace {} lladdr {mac_b} dev l{n} nud permanent",
                link_addr(n, true)
            ));
            cmds[b].push(format!(
                "neigh replace {} lladdr {mac_a} dev l{n} nud permanent",
                link_addr(n, false)
            ));
        }
        for (node, c) in cmds.iter().enumerate() {
            ip_batch(&self.node_ns[node], c)?;
        }
        Ok(())
    }

    /// htb at `rate` over the queue `limit` on node `node`'s end of link `n`.
    fn shape(
        &self,
        node: usize,
        n: usize,
        rate: Rate,
        limit: &meshcast_sim::QueueLimit,
    ) -> anyhow::Result<()> {
        let dev = format!("l{n}");
        let ns = &self.node_ns[node];
        let bits = format!("{}bit", rate.as_bps().max(8));
        let fifo: Vec<String> = match (limit.packets, limit.bytes) {
            (Some(p), _) => vec!["pfifo".into(), "limit".into(), p.to_string()],
            (None, Some(b)) => vec!["bfifo".into(), "limit".into(), b.to_string()],
            (None, None) => vec!["pfifo".into(), "limit".into(), "1000000".into()],
        };
        let mut root = vec![
            "-n", ns, "qdisc", "add", "dev", &dev, "root", "handle", "1:",
        ];
        root.extend(["stab", "overhead", "-14", "htb", "default", "1"]);
        run_cmd("tc", &root)?;
        run_cmd(
            "tc",
            &[
                "-n", ns, "class", "add", "dev", &dev, "parent", "1:", "classid", "1:1", "htb",
                "rate", &bits, "ceil", &bits, "quantum", "1514",
            ],
        )?;
        // `10:`: tc writes a handle's major number in hexadecimal.
        let handle = format!("{:x}:", LEAF_HANDLE >> 16);
        let mut leaf = vec![
            "-n", ns, "qdisc", "add", "dev", &dev, "parent", "1:1", "handle", &handle,
        ];
        leaf.extend(fifo.iter().map(String::as_str));
        run_cmd("tc", &leaf).map(|_| ())
    }

    /// Install the simulator's routes for the links now up (replacing
    /// what changed, removing routes to nodes no longer reachable).
    fn route(&mut self) -> anyhow::Result<()> {
        let up: Vec<bool> = (0..self.net.links().len())
            .map(|d| {
                let n = self
                    .directions
                    .iter()
                    .position(|ds| ds.contains(&LinkId(d as u32)))
                    .expect("every direction belongs to a declared link");
                self.up[n]
            })
            .collect();
        let routes = Routes::compute(&self.net, &up);
        let n = self.net.nodes().len();
        for at in 0..n {
            let mut want = BTreeMap::new();
            let mut cmds = Vec::new();
            for dst in 0..n {
                let Some(l) = routes.next(NodeId(at as u32), NodeId(dst as u32)) else {
                    continue;
                };
                let declared = self
                    .directions
                    .iter()
                    .position(|ds| ds.contains(&l))
                    .expect("every direction belongs to a declared link");
                want.insert(dst, declared);
                if self.routes[at].get(&dst) != Some(&declared) {
                    // The next hop is the link's other end.
                    let via_to_end = self.directions[declared][0] == l;
                    cmds.push(format!(
                        "route replace {}/32 via {} dev l{declared} src {}",
                        node_addr(dst),
                        link_addr(declared, via_to_end),
                        node_addr(at)
                    ));
                }
            }
            for dst in self.routes[at].keys() {
                if !want.contains_key(dst) {
                    cmds.push(format!("route del {}/32", node_addr(*dst)));
                }
            }
            ip_batch(&self.node_ns[at], &cmds)?;
            self.routes[at] = want;
        }
        Ok(())
    }

    /// The namespace of node `i`.
    pub fn netns(&self, i: usize) -> &str {
        &self.node_ns[i]
    }

    /// The file of node `i`'s namespace (for `setns`).
    pub fn netns_path(&self, i: usize) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(&self.node_ns[i])
    }

    /// The underlay as the simulator sees it.
    pub fn network(&self) -> &Network {
        &self.net
    }

    /// Directions of declared link `n`: `from->to`, then `to->from` if it
    /// runs both ways.
    pub fn directions(&self, n: usize) -> &[LinkId] {
        &self.directions[n]
    }

    /// Take declared link `n` down or up (both ends), and reroute.
    pub fn set_link(&mut self, n: usize, up: bool) -> anyhow::Result<()> {
        let state = if up { "up" } else { "down" };
        for node in self.ends[n] {
            ip_batch(&self.node_ns[node], &[format!("link set l{n} {state}")])?;
        }
        self.up[n] = up;
        // The kernel flushed the routes over the device when it went down
        // (and does not bring them back with it): forget them, so that
        // routing installs whatever now goes that way.
        for r in &mut self.routes {
            r.retain(|_, l| *l != n);
        }
        self.route()
    }

    /// From now on drop every `every`-th packet of declared link `n`'s
    /// `from -> to` direction (`reverse`: `to -> from`; `None`: stop).
    pub fn drop_every(&self, n: usize, reverse: bool, every: Option<u32>) -> anyhow::Result<()> {
        let delay = self
            .delay
            .as_ref()
            .context("the delay element is not running")?;
        delay.drop_every(n, usize::from(reverse), every)?;
        Ok(())
    }

    /// Change declared link `n`'s capacity (both directions): the htb
    /// shapers and the delay element's serialisation.
    pub fn set_capacity(&self, n: usize, rate: Rate) -> anyhow::Result<()> {
        let bits = format!("{}bit", rate.as_bps().max(8));
        let delay = self
            .delay
            .as_ref()
            .context("the delay element is not running")?;
        for (side, d) in self.directions[n].iter().enumerate() {
            delay.set_rate(n, side, rate.as_bps())?;
            let from = self.net.links()[d.index()].from.index();
            run_cmd(
                "tc",
                &[
                    "-n",
                    &self.node_ns[from],
                    "class",
                    "change",
                    "dev",
                    &format!("l{n}"),
                    "parent",
                    "1:",
                    "classid",
                    "1:1",
                    "htb",
                    "rate",
                    &bits,
                    "ceil",
                    &bits,
                    "quantum",
                    "1514",
                ],
            )?;
        }
        Ok(())
    }

    /// The queue counters of every link direction (indexed by
    /// [`LinkId`]), read from the kernel, each stamped with the moment
    /// `clock` gives for its namespace's read (the middle of one
    /// `RTM_GETQDISC` dump per namespace, tens of microseconds: see
    /// [`super::qdisc`]); `None` for a direction whose queue its namespace
    /// did not list.
    pub fn queue_stats(
        &mut self,
        clock: impl Fn() -> Time,
    ) -> anyhow::Result<Vec<Option<QueueStats>>> {
        let mut out = vec![None; self.net.links().len()];
        for (i, r) in self.readers.iter_mut().enumerate() {
            let before = clock();
            let qdiscs = r
                .qdiscs()
                .with_context(|| format!("cannot read {}'s queues", self.node_ns[i]))?;
            let at = Time::from_nanos(before.as_nanos().midpoint(clock().as_nanos()));
            for q in qdiscs.iter().filter(|q| q.handle == LEAF_HANDLE) {
                let Some(n) = r
                    .name(q.ifindex)?
                    .and_then(|d| d.strip_prefix('l'))
                    .and_then(|d| d.parse::<usize>().ok())
                else {
                    continue;
                };
                let Some(&d) = self.directions.get(n).and_then(|ds| {
                    ds.iter()
                        .find(|d| self.net.links()[d.index()].from.index() == i)
                }) else {
                    continue;
                };
                out[d.index()] = Some(QueueStats {
                    bytes: q.bytes,
                    packets: q.packets,
                    drops: q.drops,
                    qlen: q.qlen,
                    at,
                });
            }
        }
        Ok(out)
    }

    /// Stop the delay element and remove every namespace; returns the
    /// delay element's counters.
    pub fn teardown(&mut self) -> anyhow::Result<DelayCounters> {
        // A socket keeps its namespace alive: close them first.
        self.readers.clear();
        let counters = match self.delay.take() {
            Some(d) => d.stop().context("the delay element failed")?,
            None => DelayCounters::default(),
        };
        let mut failed = Vec::new();
        for ns in self.made.drain(..).rev() {
            if let Err(e) = run_cmd("ip", &["netns", "del", &ns]) {
                failed.push(e.to_string());
            }
        }
        if !failed.is_empty() {
            bail!("cannot remove every namespace: {}", failed.join("; "));
        }
        Ok(counters)
    }
}

impl Drop for Underlay {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("meshcast emu: {e:#}");
        }
    }
}
