//! The propagation-delay element of an emulated underlay.
//!
//! The kernel here has no netem, so delay is added in user space. Every
//! emulated link runs through a "delay" network namespace: the link's two
//! ends are veth pairs whose inner halves (`a<N>` and `b<N>`) sit in that
//! namespace with no addresses. One thread holds an `AF_PACKET` socket on
//! each inner half; every Ethernet frame that arrives on one half is held
//! for the direction's delay and then sent out of the other half, frames
//! of one direction in order. It works at layer 2, so ARP and every other
//! protocol pass as on a wire. Each frame travels with its virtio-net
//! header (`PACKET_VNET_HDR`), which keeps the checksum-offload state the
//! veth gave it, so checksums stay right end to end. The drop-tail queue
//! and the rate are the kernel's (htb and a fifo on the outer ends, before
//! the delay), as on a real link: queue, serialisation, propagation.
//!
//! **Serialisation.** htb spaces a backlogged link's frames at its rate,
//! but it lets a frame through at once when its bucket holds the frame's
//! tokens (its burst is one full frame), and a veth sends at once: over an
//! idle 600-kbit/s htb link a 1400-byte datagram took 0.2 ms one way, where
//! a wire of that rate takes 18.7 ms to send it. The simulator's links
//! (and a real wire) take the frame's time on the wire every time, and
//! Celerity reads that time (a tail's `serialisation`, the difference of
//! its data and control packets' base delays, sizes packets and sets the
//! gain floor). So the element serialises each direction itself: a frame
//! is on the wire from when it arrives or the direction's previous frame
//! is done, whichever is later, for its IP packet's bits at the
//! direction's rate ([`Hop::rate_ab`]), and is sent on that long plus the
//! propagation delay later. Since htb already paces a backlogged link at
//! the same rate, the frame htb releases is the one whose turn on the wire
//! it is, and the element's own wait is at most what htb's burst let
//! through early (about one frame); it is the htb fifo that queues and
//! drops, as the simulator's queue does.
//!
//! Frames are stamped when the thread wakes for them and released by a
//! wait's timeout with nanosecond resolution (`epoll_pwait2`, `Waiter`);
//! on an idle machine both are within tens of microseconds (the delay
//! test measures the round trip),
//! and the thread runs at real-time priority ([`realtime_priority`]) so
//! that a loaded machine does not stretch them.
//! A direction may also lose frames at random (the scenario's `loss`),
//! drawn from a generator seeded by the scenario's seed, and every k-th
//! frame from a `drop_every` event on ([`DelayLine::drop_every`]).
//!
//! This module and [`super::qdisc`] (the queue counters over netlink) are
//! the only places in this crate that call the C library directly
//! (sockets of families std does not have, `setns`); each call is
//! wrapped where it is made, with its safety argument.
#![allow(unsafe_code)]

use meshcast_core::metrics::DelayHistogram;
use meshcast_core::rng::{child_seed, rng_from_seed};
use rand::RngExt as _;
use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One emulated link as the delay element sees it.
#[derive(Clone, Debug)]
pub struct Hop {
    /// The inner half facing the link's `from` end.
    pub a: String,
    /// The inner half facing the link's `to` end.
    pub b: String,
    /// Delay from `a` to `b` (`None`: the link does not run that way;
    /// what arrives is dropped).
    pub delay_ab: Option<Duration>,
    /// Delay from `b` to `a` (`None` as for `delay_ab`).
    pub delay_ba: Option<Duration>,
    /// The rate from `a` to `b` in bit/s, at which a frame's IP packet is
    /// serialised (the module's doc; 0: not at all).
    pub rate_ab: u64,
    /// The rate from `b` to `a` (as `rate_ab`).
    pub rate_ba: u64,
    /// Probability that a frame from `a` to `b` is lost.
    pub loss_ab: f64,
    /// Probability that a frame from `b` to `a` is lost.
    pub loss_ba: f64,
}

/// What the delay element did, per direction (`2 * hop` is a to b,
/// `2 * hop + 1` b to a).
#[derive(Clone, Debug, Default)]
pub struct DelayCounters {
    /// Frames passed on.
    pub frames: Vec<u64>,
    /// Frames lost at random or to a drop pattern.
    pub lost: Vec<u64>,
    /// Frames sent the way a one-way link does not run (dropped).
    pub wrong_way: Vec<u64>,
    /// Frames the kernel refused to send on.
    pub send_errors: Vec<u64>,
    /// How long after its due time each frame was sent on, over every
    /// direction: the element's own error, which the link's delay
    /// gained (scheduling; zero on an ideal machine).
    pub late: DelayHistogram,
    /// Whether the element's thread ran at real-time priority
    /// ([`realtime_priority`]).
    pub realtime: bool,
}

/// The running delay element; [`DelayLine::stop`] (or dropping it) ends
/// its thread.
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<DelayCounters>>>,
    /// Changes for the thread to take up.
    changes: std::sync::mpsc::Sender<Change>,
}

/// A change to one direction (`2 * hop` is a to b, `2 * hop + 1` b to a)
/// that the element's thread takes up within a tick.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// Drop every k-th frame from now on (`None`: stop dropping).
    DropEvery(usize, Option<u32>),
    /// Serialise at this many bit/s from now on.
    Rate(usize, u64),
}

impl DelayLine {
    /// Start the element for `hops`, whose inner halves are in the network
    /// namespace at `netns` (a file under `/run/netns`). Returns once every
    /// socket is open.
    pub fn start(netns: PathBuf, hops: Vec<Hop>, seed: u64) -> io::Result<DelayLine> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let (changes, change_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("meshcast-delay".into())
            .spawn(move || {
                // The element is the emulated network's clock: a frame
                // held past its due time is delay the scenario did not
                // ask for. Real-time priority lets it preempt the node
                // processes and everything else on the machine when a
                // frame falls due (see [`realtime_priority`]).
                let realtime = realtime_priority().is_ok();
                let opened = open_all(&netns, &hops);
                let sockets = match opened {
                    Ok(s) => {
                        let _ = ready_tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                        return Err(e);
                    }
                };
                let mut counters = run(&sockets, &hops, seed, &flag, &change_rx)?;
                counters.realtime = realtime;
                Ok(counters)
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(DelayLine {
                stop,
                thread: Some(thread),
                changes,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(io::Error::other(
                "the delay thread ended before it was ready",
            )),
        }
    }

    /// From now on drop every `every`-th frame of direction `dir` of hop
    /// `hop` (`dir` 0: a to b, 1: b to a; `None`: stop dropping), counting
    /// from this call as the simulator counts from the event. The thread
    /// takes it up within one tick (20 ms).
    pub fn drop_every(&self, hop: usize, dir: usize, every: Option<u32>) -> io::Result<()> {
        self.change(Change::DropEvery(2 * hop + dir, every))
    }

    /// From now on serialise direction `dir` of hop `hop` (as for
    /// [`drop_every`](Self::drop_every)) at `bps` bit/s: a capacity change.
    /// The frame on the wire keeps the rate it started at.
    pub fn set_rate(&self, hop: usize, dir: usize, bps: u64) -> io::Result<()> {
        self.change(Change::Rate(2 * hop + dir, bps))
    }

    fn change(&self, c: Change) -> io::Result<()> {
        self.changes
            .send(c)
            .map_err(|_| io::Error::other("the delay thread has ended"))
    }

    /// Stop the element and return its counters.
    pub fn stop(mut self) -> io::Result<DelayCounters> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<DelayCounters> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the delay thread panicked"))?,
            None => Ok(DelayCounters::default()),
        }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Move the calling thread into the network namespace at `path`.
pub fn enter_netns(path: &std::path::Path) -> io::Result<()> {
    let f = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    // SAFETY: setns takes a file descriptor we own for the duration of the
    // call and a namespace type; it affects only the calling thread.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Priority of the delay thread under `SCHED_FIFO`: above every normal
/// thread, low among real-time ones (kernel threads use 50 and up).
pub const RT_PRIORITY: libc::c_int = 10;

/// Put the calling thread under `SCHED_FIFO` at [`RT_PRIORITY`]. The
/// delay element does this for its own thread; a measurement that must
/// see the element's timing rather than the scheduler's (the emulation
/// tests' probes) can do the same.
///
/// Why: under ordinary scheduling a thread woken by its timer waits for
/// the CPU behind whatever else is runnable. With eight busy processes
/// on this two-core machine the round trip over 2 × 50 ms measured
/// median 104.0 and p90 112.0 ms (100.7 and 100.9 on an idle machine);
/// an emulation runs one node process per participant, so the element
/// would add their load to every link's delay. The thread sleeps in
/// its wait between frames, and the kernel's real-time throttling
/// (`sched_rt_runtime_us`) still leaves the rest of the machine its
/// share should it ever spin. Without the privilege (not root, or a
/// zero `RLIMIT_RTPRIO`) it runs at normal priority, as before.
pub fn realtime_priority() -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: RT_PRIORITY,
    };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &raw const param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The two sockets of one hop: `[a, b]`.
type HopSockets = [OwnedFd; 2];

fn open_all(netns: &std::path::Path, hops: &[Hop]) -> io::Result<Vec<HopSockets>> {
    enter_netns(netns)?;
    hops.iter()
        .map(|h| Ok([packet_socket(&h.a)?, packet_socket(&h.b)?]))
        .collect()
}

/// An `AF_PACKET` raw socket bound to interface `name`, non-blocking.
fn packet_socket(name: &str) -> io::Result<OwnedFd> {
    let cname = CString::new(name).map_err(|_| io::Error::other("interface name has a NUL"))?;
    // SAFETY: if_nametoindex reads the NUL-terminated string we pass.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name} in the delay namespace"),
        ));
    }
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            i32::from(proto),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor nobody else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = i32::try_from(index).map_err(io::Error::other)?;
    // SAFETY: we pass a pointer to a sockaddr_ll and its exact size.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&raw const sll).cast::<libc::sockaddr>(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // Frames carry a virtio-net header: a frame a veth hands over with its
    // checksum still to be filled in (checksum offload) is sent on with
    // that state, so the receiving stack accepts it; without the header
    // it would arrive with a wrong UDP checksum and be dropped.
    set_int_option(&sock, libc::SOL_PACKET, libc::PACKET_VNET_HDR, 1)?;
    // A deep receive buffer: a burst at 100 Mbit/s must not be dropped here
    // (the link's own queue is the only one that should drop).
    // Failure (not root) leaves the default buffer, which is only less
    // deep.
    let _ = set_int_option(&sock, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20);
    Ok(sock)
}

/// Set the integer socket option `level`/`name` of `sock` to `value`.
fn set_int_option(sock: &OwnedFd, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: setsockopt reads an int of the size we pass.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receive one frame into `buf`: `Ok(Some(len))` for a frame that arrived
/// on the interface (not one this socket or another sent out of it),
/// `Ok(None)` when nothing is waiting.
fn recv_frame(sock: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<Option<usize>>> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: buf and from are valid for writes of the sizes passed.
    let n = unsafe {
        libc::recvfrom(
            sock.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            (&raw mut from).cast::<libc::sockaddr>(),
            &mut len,
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            io::ErrorKind::Interrupted => Ok(Some(None)),
            _ => Err(e),
        };
    }
    let n = n as usize;
    if from.sll_pkttype == libc::PACKET_OUTGOING || n > buf.len() {
        // Our own transmissions, or a frame larger than any MTU here
        // (cannot happen with GSO off; dropping it is what a wire does).
        return Ok(Some(None));
    }
    Ok(Some(Some(n)))
}

fn send_frame(sock: &OwnedFd, frame: &[u8]) -> bool {
    // SAFETY: frame is valid for reads of its length; the socket is bound
    // to its interface, so no address is needed.
    let n = unsafe {
        libc::send(
            sock.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            libc::MSG_DONTWAIT,
        )
    };
    n == frame.len() as isize
}

/// Waits for frames on the directions' sockets, or a timeout, at the
/// timeout's nanosecond precision.
///
/// An `epoll` set holds every socket, and `epoll_pwait2` (Linux 5.11)
/// waits on it with a nanosecond timeout: the cost of a wake does not
/// grow with the number of sockets. `ppoll`, which the element used
/// before, polls every socket at every wake; on `large-33` (sixteen
/// members, 20 links, 40 sockets) that was a quarter of the element's
/// CPU time (`perf`: `sock_poll`, `__pollwait`, `poll_freewait`), and
/// the element took 21% less with `epoll` (docs/emu.md). On a kernel
/// without `epoll_pwait2` the element falls back to `ppoll`.
struct Waiter {
    /// The `epoll` set (each socket's data its direction), or `None`:
    /// `ppoll` on `fds`.
    epoll: Option<OwnedFd>,
    fds: Vec<libc::pollfd>,
    events: Vec<libc::epoll_event>,
}

impl Waiter {
    fn new(sockets: impl Iterator<Item = libc::c_int>) -> io::Result<Waiter> {
        let fds: Vec<libc::pollfd> = sockets
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let events = vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().max(1)];
        let mut w = Waiter {
            epoll: None,
            fds,
            events,
        };
        // SAFETY: no pointers; the result is a new descriptor or -1.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `ep` was just opened and is owned by nothing else.
        let ep = unsafe { OwnedFd::from_raw_fd(ep) };
        for (d, f) in w.fds.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: d as u64,
            };
            // SAFETY: both descriptors are open; ev is a valid event.
            let rc =
                unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, f.fd, &raw mut ev) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        w.epoll = Some(ep);
        // Whether this kernel has `epoll_pwait2`.
        if let Err(e) = w.epoll_wait(Duration::ZERO) {
            if e.raw_os_error() != Some(libc::ENOSYS) {
                return Err(e);
            }
            w.epoll = None;
        }
        Ok(w)
    }

    /// `epoll_pwait2` on the set; the number of events.
    fn epoll_wait(&mut self, timeout: Duration) -> io::Result<usize> {
        let ep = self.epoll.as_ref().expect("an epoll set").as_raw_fd();
        let ts = timespec(timeout);
        // SAFETY: events is valid for writes of its length, ts is a valid
        // timespec, no signal mask is passed (so its size is not read).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                ep,
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                &raw const ts,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        Ok(rc as usize)
    }

    /// Wait until a socket is readable or `timeout` passes; `ready` gets
    /// the readable directions, in order.
    fn wait(&mut self, timeout: Duration, ready: &mut Vec<usize>) -> io::Result<()> {
        ready.clear();
        if self.epoll.is_some() {
            let n = self.epoll_wait(timeout)?;
            ready.extend(self.events[..n].iter().map(|e| e.u64 as usize));
            ready.sort_unstable();
            return Ok(());
        }
        for f in &mut self.fds {
            f.revents = 0;
        }
        let ts = timespec(timeout);
        // SAFETY: fds is a valid slice of pollfd, ts a valid timespec; no
        // signal mask is passed.
        let rc = unsafe {
            libc::ppoll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                &raw const ts,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        ready.extend((0..self.fds.len()).filter(|&d| self.fds[d].revents != 0));
        Ok(())
    }
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
    }
}

/// Longest wait between checks of the stop flag.
const TICK: Duration = Duration::from_millis(20);

/// The virtio-net header in front of every frame (`PACKET_VNET_HDR`:
/// `struct virtio_net_hdr`, 10 bytes).
const VNET_HDR: usize = 10;
/// An Ethernet header (no VLAN tag here).
const ETH_HDR: usize = 14;

/// The IP packet's bytes in `frame` (a frame as the element reads it,
/// virtio-net header first): an IPv4 packet's total length, otherwise
/// everything after the Ethernet header. These are the bytes htb counts
/// (its size table takes the Ethernet header off) and the simulator's
/// links carry.
fn ip_bytes(frame: &[u8]) -> usize {
    let rest = frame.len().saturating_sub(VNET_HDR + ETH_HDR);
    // The Ethernet header's type, then the IPv4 header's total length.
    let at = |i: usize| frame.get(VNET_HDR + i).copied();
    match (at(12), at(13), at(ETH_HDR + 2), at(ETH_HDR + 3)) {
        (Some(0x08), Some(0x00), Some(hi), Some(lo)) => {
            usize::from(u16::from_be_bytes([hi, lo])).min(rest)
        }
        _ => rest,
    }
}

/// How long `bytes` take on a wire of `bps` bit/s (nothing at 0).
fn wire_time(bytes: usize, bps: u64) -> Duration {
    if bps == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos((bytes as u64 * 8 * 1_000_000_000).div_ceil(bps))
}

fn run(
    sockets: &[HopSockets],
    hops: &[Hop],
    seed: u64,
    stop: &AtomicBool,
    changes: &std::sync::mpsc::Receiver<Change>,
) -> io::Result<DelayCounters> {
    let dirs = hops.len() * 2;
    // Per direction: drop every k-th frame (0: none), and frames since the
    // pattern was set.
    let mut every = vec![0u32; dirs];
    let mut since = vec![0u32; dirs];
    // Per direction: its rate (bit/s), and when the frame last put on its
    // wire is done.
    let mut rate: Vec<u64> = hops.iter().flat_map(|h| [h.rate_ab, h.rate_ba]).collect();
    let mut wire_free = vec![Instant::now(); dirs];
    let mut rng = rng_from_seed(child_seed(seed, "emu:delay"));
    let mut held: Vec<VecDeque<(Instant, Vec<u8>)>> = vec![VecDeque::new(); dirs];
    let mut counters = DelayCounters {
        frames: vec![0; dirs],
        lost: vec![0; dirs],
        wrong_way: vec![0; dirs],
        send_errors: vec![0; dirs],
        ..DelayCounters::default()
    };
    let delay = |d: usize| {
        let h = &hops[d / 2];
        if d % 2 == 0 { h.delay_ab } else { h.delay_ba }
    };
    let loss = |d: usize| {
        let h = &hops[d / 2];
        if d % 2 == 0 { h.loss_ab } else { h.loss_ba }
    };
    // Direction d reads from socket d (a for even, b for odd) and writes
    // to the other socket of its hop.
    let socket = |d: usize| &sockets[d / 2][d % 2];
    let out = |d: usize| &sockets[d / 2][1 - d % 2];
    let mut waiter = Waiter::new((0..dirs).map(|d| socket(d).as_raw_fd()))?;
    let mut ready = Vec::with_capacity(dirs);
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        while let Ok(c) = changes.try_recv() {
            match c {
                Change::DropEvery(d, k) if d < dirs => {
                    every[d] = k.unwrap_or(0);
                    since[d] = 0;
                }
                Change::Rate(d, bps) if d < dirs => rate[d] = bps,
                _ => {}
            }
        }
        let now = Instant::now();
        let mut next = now + TICK;
        for (d, q) in held.iter_mut().enumerate() {
            while let Some((due, _)) = q.front() {
                if *due > now {
                    next = next.min(*due);
                    break;
                }
                let (due, frame) = q.pop_front().expect("front exists");
                let late = now.saturating_duration_since(due);
                counters
                    .late
                    .record(meshcast_core::Duration::from_nanos(late.as_nanos() as u64));
                if send_frame(out(d), &frame) {
                    counters.frames[d] += 1;
                } else {
                    counters.send_errors[d] += 1;
                }
            }
        }
        waiter.wait(next.saturating_duration_since(Instant::now()), &mut ready)?;
        let arrived = Instant::now();
        for &d in &ready {
            while let Some(got) = recv_frame(socket(d), &mut buf)? {
                let Some(n) = got else { continue };
                let Some(delay) = delay(d) else {
                    counters.wrong_way[d] += 1;
                    continue;
                };
                // On the wire (lost or not) once the previous frame is.
                let done = arrived.max(wire_free[d]) + wire_time(ip_bytes(&buf[..n]), rate[d]);
                wire_free[d] = done;
                let patterned = every[d] > 0 && {
                    since[d] += 1;
                    since[d] % every[d] == 0
                };
                let p = loss(d);
                if patterned || (p > 0.0 && rng.random::<f64>() < p) {
                    counters.lost[d] += 1;
                    continue;
                }
                held[d].push_back((done + delay, buf[..n].to_vec()));
            }
        }
    }
    Ok(counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as the element reads it: virtio-net header, Ethernet header
    /// of `ethertype`, then `payload`.
    fn frame(ethertype: [u8; 2], payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; VNET_HDR + 12];
        f.extend_from_slice(&ethertype);
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn a_frame_counts_its_ip_packet() {
        // An IPv4 packet of 32 bytes padded to Ethernet's 46-byte minimum:
        // the padding is not the packet's.
        let mut ip = vec![0u8; 46];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&32u16.to_be_bytes());
        assert_eq!(ip_bytes(&frame([0x08, 0x00], &ip)), 32);
        // A length past the frame (a truncated read) counts what is there.
        ip[2..4].copy_from_slice(&1400u16.to_be_bytes());
        assert_eq!(ip_bytes(&frame([0x08, 0x00], &ip)), 46);
        // Anything else (ARP) counts everything after the Ethernet header.
        assert_eq!(ip_bytes(&frame([0x08, 0x06], &[0u8; 28])), 28);
        assert_eq!(ip_bytes(&[0u8; 5]), 0);
    }

    #[test]
    fn a_packet_takes_its_bits_at_the_rate() {
        assert_eq!(wire_time(1400, 1_000_000), Duration::from_micros(11_200));
        assert_eq!(wire_time(1400, 480_000), Duration::from_nanos(23_333_334));
        assert_eq!(wire_time(1400, 0), Duration::ZERO);
    }

    /// Both ways of waiting (the `epoll` set, and `ppoll` as on kernels
    /// without `epoll_pwait2`) name the sockets with frames waiting, in
    /// order, and otherwise wait out their timeout.
    #[test]
    fn the_waiter_names_the_ready_sockets_and_keeps_its_timeout() {
        use std::net::UdpSocket;
        let socks: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").expect("bind"))
            .collect();
        for epoll in [true, false] {
            let mut w = Waiter::new(socks.iter().map(|s| s.as_raw_fd())).expect("waiter");
            if epoll && w.epoll.is_none() {
                eprintln!("this kernel has no epoll_pwait2: only the ppoll wait is tested");
                continue;
            }
            if !epoll {
                w.epoll = None;
            }
            let mut ready = Vec::new();
            let started = Instant::now();
            w.wait(Duration::from_millis(3), &mut ready).expect("wait");
            assert!(started.elapsed() >= Duration::from_millis(3));
            assert_eq!(ready, Vec::<usize>::new());
            let from = UdpSocket::bind("127.0.0.1:0").expect("bind");
            for i in [2, 0] {
                from.send_to(b"x", socks[i].local_addr().expect("addr"))
                    .expect("send");
            }
            // Both datagrams are queued before the wait returns for the
            // first of them (loopback delivers within the send).
            w.wait(Duration::from_secs(1), &mut ready).expect("wait");
            assert_eq!(ready, [0, 2], "epoll {epoll}");
            let mut buf = [0u8; 8];
            for i in [0, 2] {
                socks[i].recv(&mut buf).expect("recv");
            }
            let started = Instant::now();
            w.wait(Duration::from_millis(2), &mut ready).expect("wait");
            assert!(started.elapsed() >= Duration::from_millis(2));
            assert_eq!(ready, Vec::<usize>::new(), "epoll {epoll}: drained");
        }
    }
}
