//! The scenario's endpoints other than the conference's peers (cross
//! traffic, TCP and TFRC flows, layered streams and their boosters) run
//! over real UDP in the emulated underlay.
//!
//! They are the simulator's own endpoints: the scenario is built as for
//! `meshcast run` and taken apart ([`meshcast_sim::Sim::into_parts`]), and
//! each endpoint gets a real socket at its node's address and its
//! simulated port, in its node's namespace, driven by `meshcast-net`.
//! One thread runs them all (a socket stays in the namespace it was made
//! in, whichever thread then uses it), from the shared epoch until the
//! end of the run; every event they emit is logged with its node and time
//! for the report. Their time runs on the monotonic clock from the
//! epoch's instant, so a step of the wall clock mid-run moves nothing.

use super::delay::enter_netns;
use super::underlay::node_addr;
use crate::build::build;
use crate::scenario::Scenario;
use anyhow::Context as _;
use meshcast_core::{Event, NodeId, Time};
use meshcast_net::{AddrBook, Node};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// An event an endpoint emitted: its node, the protocol time, the event.
pub type Logged = (NodeId, Time, Event);

/// What the endpoints did.
#[derive(Debug, Default)]
pub struct Ran {
    /// Every event, in the order the endpoints emitted them.
    pub events: Vec<Logged>,
    /// Datagrams their sockets sent.
    pub datagrams_out: u64,
    /// Datagrams their sockets received.
    pub datagrams_in: u64,
}

/// The running endpoints; [`Endpoints::finish`] waits for the end of the
/// run and returns their events.
pub struct Endpoints {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<anyhow::Result<Ran>>>,
}

impl Endpoints {
    /// Start `sc`'s endpoints in the namespaces `netns` (one per node, in
    /// declaration order), from the instant `epoch` until `end` (protocol
    /// time). Returns once every socket is bound.
    pub fn start(
        sc: &Scenario,
        netns: Vec<PathBuf>,
        epoch: Instant,
        end: Time,
    ) -> anyhow::Result<Endpoints> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sc = sc.clone();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("meshcast-endpoints".into())
            .spawn(move || run(&sc, &netns, epoch, end, flag, ready_tx))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Endpoints {
                stop,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(anyhow::anyhow!(e))
            }
            Err(_) => match thread.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(anyhow::anyhow!(
                    "the endpoint thread ended before it was ready"
                )),
            },
        }
    }

    /// Wait until the run's end and return what the endpoints did.
    pub fn finish(mut self) -> anyhow::Result<Ran> {
        self.join()
    }

    fn join(&mut self) -> anyhow::Result<Ran> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| anyhow::anyhow!("the endpoint thread panicked"))?,
            None => Ok(Ran::default()),
        }
    }
}

impl Drop for Endpoints {
    /// Stops the endpoints early (an error or interrupt elsewhere).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.join();
    }
}

fn run(
    sc: &Scenario,
    netns: &[PathBuf],
    epoch: Instant,
    end: Time,
    stop: Arc<AtomicBool>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) -> anyhow::Result<Ran> {
    let bound = (|| -> anyhow::Result<_> {
        let (endpoints, _) = build(sc)?.into_parts();
        let mut book = AddrBook::new();
        for (a, _) in &endpoints {
            book.insert(*a, SocketAddr::from((node_addr(a.node.index()), a.port)))?;
        }
        let mut sockets = Vec::with_capacity(endpoints.len());
        for (a, _) in &endpoints {
            let ns = netns
                .get(a.node.index())
                .context("an endpoint on a node with no namespace")?;
            enter_netns(ns)?;
            let at = book
                .socket(*a)
                .context("an endpoint missing from the book")?;
            sockets.push(
                std::net::UdpSocket::bind(at)
                    .with_context(|| format!("cannot bind {at} for {a:?}"))?,
            );
        }
        Ok((endpoints, book, sockets))
    })();
    let (endpoints, book, sockets) = match bound {
        Ok(b) => {
            let _ = ready.send(Ok(()));
            b
        }
        Err(e) => {
            let _ = ready.send(Err(format!("{e:#}")));
            return Err(e);
        }
    };
    if endpoints.is_empty() {
        return Ok(Ran::default());
    }
    // The nodes count protocol time from the epoch: create them there.
    loop {
        let wait = epoch.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(Ran::default());
        }
        std::thread::sleep(wait.min(Duration::from_millis(50)));
    }
    let end_at = epoch + Duration::from_nanos(end.as_nanos());
    let log: Rc<RefCell<Vec<Logged>>> = Rc::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let local = tokio::task::LocalSet::new();
    let (datagrams_out, datagrams_in) = local.block_on(&runtime, async {
        // Every node a task of its own, all on this thread.
        let mut tasks = Vec::new();
        for ((addr, ep), socket) in endpoints.into_iter().zip(sockets) {
            let mut node = Node::with_epoch_instant(ep, socket, book.clone(), epoch)?;
            node.set_gso(false);
            let log = log.clone();
            let stop = stop.clone();
            let until = async move {
                while !stop.load(Ordering::Relaxed) && Instant::now() < end_at {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tasks.push(tokio::task::spawn_local(node.run(until, move |now, ev| {
                log.borrow_mut().push((addr.node, now, ev));
            })));
        }
        let (mut out, mut inn) = (0, 0);
        for t in tasks {
            let done = t.await.context("an endpoint task failed")??;
            out += done.counters.datagrams_out;
            inn += done.counters.datagrams_in;
        }
        anyhow::Ok((out, inn))
    })?;
    Ok(Ran {
        events: Rc::try_unwrap(log)
            .map(RefCell::into_inner)
            .unwrap_or_default(),
        datagrams_out,
        datagrams_in,
    })
}
