//! The kernel's queue counters, read over rtnetlink.
//!
//! `meshcast emu` reads every link direction's queue counters once a
//! second. It did so with one `tc -s -j qdisc show` per namespace: a
//! process started, the kernel asked over netlink, the answer printed as
//! JSON and parsed back. On the two-core machine that took 1.3–3.5 ms a
//! namespace, most of it the process starting, while the node processes
//! wait for the CPUs (docs/emu.md). Here each namespace gets one
//! `NETLINK_ROUTE` socket, opened once from a thread that enters the
//! namespace (a socket keeps the namespace it was made in), and a read is
//! the same dump `tc` asks for (`RTM_GETQDISC`), parsed from its
//! messages: `tcmsg` and its attributes, the counters in `TCA_STATS2`
//! (`gnet_stats_basic` for bytes and packets, `TCA_STATS_PKT64` where
//! the kernel sends it, `gnet_stats_queue` for the queue's length and
//! drops). Interface indexes are named from an `RTM_GETLINK` dump,
//! refreshed when a dump shows an index not yet named.
//!
//! The layouts are the kernel's user API (`linux/netlink.h`,
//! `linux/rtnetlink.h`, `linux/gen_stats.h`), in the host's byte order.
//! Like [`super::delay`], this module calls the C library directly (a
//! netlink socket); each call is wrapped where it is made, with its
//! safety argument.
#![allow(unsafe_code)]

use super::delay::enter_netns;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::Path;

/// `struct nlmsghdr`: length, type, flags, sequence, port.
const NLMSG_HDRLEN: usize = 16;
/// `struct tcmsg`: family, two pad fields, ifindex, handle, parent, info.
const TCMSG_LEN: usize = 20;
/// `struct ifinfomsg`: family, pad, type, index, flags, change.
const IFINFOMSG_LEN: usize = 16;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const NLM_F_REQUEST: u16 = 1;
/// `NLM_F_ROOT | NLM_F_MATCH`.
const NLM_F_DUMP: u16 = 0x300;
const IFLA_IFNAME: u16 = 3;
const TCA_KIND: u16 = 1;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TCA_STATS_PKT64: u16 = 8;
/// An attribute's type without its nested and byte-order flags.
const NLA_TYPE_MASK: u16 = 0x3fff;

/// How long a read waits for the kernel's answer before it fails.
const REPLY_TIMEOUT: libc::time_t = 2;

/// One queueing discipline as a dump reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qdisc {
    /// The interface it is attached to.
    pub ifindex: i32,
    /// Its handle (`10:` is `0x0010_0000`).
    pub handle: u32,
    /// Its kind (`htb`, `pfifo`, `bfifo`, …).
    pub kind: String,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Packets waiting now.
    pub qlen: u32,
}

/// A `NETLINK_ROUTE` socket in one network namespace, and the names of
/// that namespace's interfaces by index.
pub struct QdiscReader {
    fd: OwnedFd,
    seq: u32,
    names: HashMap<i32, String>,
    buf: Vec<u8>,
}

impl QdiscReader {
    /// A reader in the calling thread's namespace.
    pub fn open() -> io::Result<QdiscReader> {
        // SAFETY: plain socket(2); the descriptor is owned right after.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let addr = kernel_addr();
        // SAFETY: `addr` is a valid sockaddr_nl of the size given (port 0:
        // the kernel picks one).
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let timeout = libc::timeval {
            tv_sec: REPLY_TIMEOUT,
            tv_usec: 0,
        };
        // SAFETY: a timeval of the size given, for SO_RCVTIMEO.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw const timeout).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(QdiscReader {
            fd,
            seq: 0,
            names: HashMap::new(),
            buf: vec![0; 64 * 1024],
        })
    }

    /// A reader in the namespace whose file is `netns` (as `ip netns`
    /// keeps them); the calling thread stays where it is.
    pub fn open_in(netns: &Path) -> io::Result<QdiscReader> {
        std::thread::scope(|s| {
            s.spawn(|| {
                enter_netns(netns)?;
                QdiscReader::open()
            })
            .join()
            .map_err(|_| io::Error::other("the thread opening a netlink socket panicked"))?
        })
    }

    /// Every queueing discipline of the namespace, with its counters.
    pub fn qdiscs(&mut self) -> io::Result<Vec<Qdisc>> {
        let mut out = Vec::new();
        self.dump(RTM_GETQDISC, TCMSG_LEN, |ty, body| {
            keep_qdisc(&mut out, ty, body)
        })?;
        Ok(out)
    }

    /// The name of interface `ifindex`, asking the kernel again if it is
    /// not known yet. `None` if the namespace has no such interface.
    pub fn name(&mut self, ifindex: i32) -> io::Result<Option<&str>> {
        if !self.names.contains_key(&ifindex) {
            let mut names = HashMap::new();
            self.dump(RTM_GETLINK, IFINFOMSG_LEN, |ty, body| {
                if ty == RTM_NEWLINK
                    && let Some((index, name)) = parse_link(body)?
                {
                    names.insert(index, name);
                }
                Ok(())
            })?;
            self.names = names;
        }
        Ok(self.names.get(&ifindex).map(String::as_str))
    }

    /// Send a dump request of `ty` (with a zeroed family header of
    /// `header` bytes) and hand each answer's type and body to `each`
    /// until the kernel says it is done.
    fn dump(
        &mut self,
        ty: u16,
        header: usize,
        mut each: impl FnMut(u16, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let request = request(ty, self.seq, header);
        let to = kernel_addr();
        loop {
            // SAFETY: the buffer and address are valid for the sizes given.
            let sent = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    request.as_ptr().cast(),
                    request.len(),
                    0,
                    (&raw const to).cast(),
                    size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            if sent >= 0 {
                break;
            }
            let e = io::Error::last_os_error();
            // A signal (Ctrl-C, whose handler lets the run end cleanly)
            // only interrupts the call.
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        loop {
            // SAFETY: the buffer is valid for its length; MSG_TRUNC makes
            // the call return the datagram's full length.
            let got = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_TRUNC,
                )
            };
            if got < 0 {
                let e = io::Error::last_os_error();
                // As above: interrupted, wait again.
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let got = got as usize;
            if got > self.buf.len() {
                // The kernel sizes a dump's datagrams to at most 32 KiB.
                return Err(bad("a datagram larger than the buffer"));
            }
            if walk(&self.buf[..got], self.seq, &mut each)? {
                return Ok(());
            }
        }
    }
}

/// The kernel's netlink address (port 0).
fn kernel_addr() -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is plain data; all zeroes is a valid value.
    let mut a: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    a.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    a
}

/// A dump request: the netlink header and a zeroed family header of
/// `header` bytes (every interface, every family).
fn request(ty: u16, seq: u32, header: usize) -> Vec<u8> {
    let len = NLMSG_HDRLEN + header;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&ty.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.resize(len, 0);
    m
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("netlink: {what}"))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Netlink's 4-byte alignment.
fn align(len: usize) -> usize {
    len.div_ceil(4) * 4
}

/// Walk the messages of one datagram of a dump with sequence number
/// `seq`, handing each message's type and body (after its netlink header)
/// to `each`; messages of other sequence numbers (the late answer to a
/// read that timed out) are skipped. `Ok(true)` once the dump is done.
fn walk(
    mut b: &[u8],
    seq: u32,
    each: &mut impl FnMut(u16, &[u8]) -> io::Result<()>,
) -> io::Result<bool> {
    while b.len() >= NLMSG_HDRLEN {
        let len = u32_at(b, 0).ok_or_else(|| bad("short header"))? as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(bad("a message's length runs past its datagram"));
        }
        let ty = u16_at(b, 4).ok_or_else(|| bad("short header"))?;
        let body = &b[NLMSG_HDRLEN..len];
        if u32_at(b, 8) == Some(seq) {
            match ty {
                NLMSG_DONE => return Ok(true),
                NLMSG_ERROR => {
                    let code = u32_at(body, 0).ok_or_else(|| bad("short error"))? as i32;
                    if code != 0 {
                        return Err(io::Error::from_raw_os_error(-code));
                    }
                }
                _ => each(ty, body)?,
            }
        }
        b = b.get(align(len)..).unwrap_or(&[]);
    }
    Ok(false)
}

/// The attributes in `b`: type (without flags) and payload.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, 0)?);
        let ty = u16_at(b, 2)? & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = b.get(align(len)..).unwrap_or(&[]);
        Some((ty, payload))
    })
}

/// Keep the qdisc a dump's message of type `ty` describes, if it is one.
fn keep_qdisc(out: &mut Vec<Qdisc>, ty: u16, body: &[u8]) -> io::Result<()> {
    if ty == RTM_NEWQDISC {
        out.push(parse_qdisc(body)?);
    }
    Ok(())
}

/// A qdisc message's body: `tcmsg`, then its attributes.
fn parse_qdisc(body: &[u8]) -> io::Result<Qdisc> {
    let short = || bad("short tcmsg");
    let mut q = Qdisc {
        ifindex: u32_at(body, 4).ok_or_else(short)? as i32,
        handle: u32_at(body, 8).ok_or_else(short)?,
        ..Qdisc::default()
    };
    let mut packets64 = None;
    for (ty, payload) in attrs(body.get(TCMSG_LEN..).unwrap_or(&[])) {
        match ty {
            TCA_KIND => {
                let name = payload.split(|&c| c == 0).next().unwrap_or(&[]);
                q.kind = String::from_utf8_lossy(name).into_owned();
            }
            TCA_STATS2 => {
                for (ty, s) in attrs(payload) {
                    match ty {
                        // gnet_stats_basic: u64 bytes, u32 packets.
                        TCA_STATS_BASIC => {
                            q.bytes = u64_at(s, 0).ok_or_else(|| bad("short basic stats"))?;
                            q.packets =
                                u64::from(u32_at(s, 8).ok_or_else(|| bad("short basic stats"))?);
                        }
                        // gnet_stats_queue: qlen, backlog, drops, requeues,
                        // overlimits (u32 each).
                        TCA_STATS_QUEUE => {
                            q.qlen = u32_at(s, 0).ok_or_else(|| bad("short queue stats"))?;
                            q.drops =
                                u64::from(u32_at(s, 8).ok_or_else(|| bad("short queue stats"))?);
                        }
                        TCA_STATS_PKT64 => packets64 = u64_at(s, 0),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(p) = packets64 {
        q.packets = p;
    }
    Ok(q)
}

/// A link message's body: `ifinfomsg`, then its attributes; its index and
/// name (`None` without a name).
fn parse_link(body: &[u8]) -> io::Result<Option<(i32, String)>> {
    let index = u32_at(body, 4).ok_or_else(|| bad("short ifinfomsg"))? as i32;
    Ok(attrs(body.get(IFINFOMSG_LEN..).unwrap_or(&[]))
        .find(|&(ty, _)| ty == IFLA_IFNAME)
        .map(|(_, name)| {
            let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
            (index, String::from_utf8_lossy(name).into_owned())
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An attribute of type `ty` around `payload`, padded.
    fn attr(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&ty.to_ne_bytes());
        a.extend_from_slice(payload);
        a.resize(align(a.len()), 0);
        a
    }

    /// A netlink message of type `ty` and sequence `seq` around `body`.
    fn message(ty: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut m = request(ty, seq, 0);
        m[6..8].copy_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        m.extend_from_slice(body);
        let len = m.len() as u32;
        m[0..4].copy_from_slice(&len.to_ne_bytes());
        m.resize(align(m.len()), 0);
        m
    }

    /// A qdisc message's body as the kernel writes it.
    fn qdisc_body(q: &Qdisc, pkt64: bool) -> Vec<u8> {
        let mut b = vec![0u8; TCMSG_LEN];
        b[4..8].copy_from_slice(&q.ifindex.to_ne_bytes());
        b[8..12].copy_from_slice(&q.handle.to_ne_bytes());
        b[12..16].copy_from_slice(&0xffff_ffffu32.to_ne_bytes());
        let mut kind = q.kind.as_bytes().to_vec();
        kind.push(0);
        b.extend(attr(TCA_KIND, &kind));
        b.extend(attr(2, &[9, 9, 9, 9, 9, 9])); // TCA_OPTIONS, unaligned
        let mut basic = q.bytes.to_ne_bytes().to_vec();
        basic.extend_from_slice(&(q.packets as u32).to_ne_bytes());
        basic.extend_from_slice(&[0; 4]); // the struct's padding
        let mut queue = Vec::new();
        for v in [q.qlen, 7000, q.drops as u32, 0, 12] {
            queue.extend_from_slice(&v.to_ne_bytes());
        }
        let mut stats = attr(TCA_STATS_BASIC, &basic);
        stats.extend(attr(2, &[0; 8])); // TCA_STATS_RATE_EST
        stats.extend(attr(TCA_STATS_QUEUE, &queue));
        if pkt64 {
            stats.extend(attr(TCA_STATS_PKT64, &q.packets.to_ne_bytes()));
        }
        // Nested, as the kernel flags it.
        b.extend(attr(TCA_STATS2 | 0x8000, &stats));
        b
    }

    fn read_all(datagrams: &[Vec<u8>], seq: u32) -> io::Result<(Vec<Qdisc>, bool)> {
        let mut out = Vec::new();
        let mut done = false;
        for d in datagrams {
            done = walk(d, seq, &mut |ty, body| keep_qdisc(&mut out, ty, body))?;
            if done {
                break;
            }
        }
        Ok((out, done))
    }

    #[test]
    fn a_dump_over_two_datagrams_reads_back_every_counter() {
        let a = Qdisc {
            ifindex: 3,
            handle: 0x0010_0000,
            kind: "bfifo".into(),
            bytes: 5_000_000_123,
            packets: 3_571_429,
            drops: 17,
            qlen: 4,
        };
        let b = Qdisc {
            ifindex: 4,
            handle: 0x0001_0000,
            kind: "htb".into(),
            // Past a u32: only TCA_STATS_PKT64 holds it.
            packets: 5_000_000_000,
            ..Qdisc::default()
        };
        let mut first = message(RTM_NEWQDISC, 9, &qdisc_body(&a, false));
        // A stale answer to an earlier read is skipped.
        first.extend(message(RTM_NEWQDISC, 8, &qdisc_body(&b, true)));
        let second = [
            message(RTM_NEWQDISC, 9, &qdisc_body(&b, true)),
            message(NLMSG_DONE, 9, &[0; 4]),
        ]
        .concat();
        let (got, done) = read_all(&[first.clone(), second], 9).expect("parses");
        assert!(done);
        assert_eq!(got, vec![a.clone(), b]);
        // Without its last datagram the dump is not done.
        let (got, done) = read_all(&[first], 9).expect("parses");
        assert!(!done);
        assert_eq!(got, vec![a]);
    }

    #[test]
    fn errors_and_broken_messages_are_errors() {
        let mut err = (-libc::EPERM).to_ne_bytes().to_vec();
        err.extend_from_slice(&[0; 16]);
        let e = read_all(&[message(NLMSG_ERROR, 1, &err)], 1).expect_err("an error");
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        // An acknowledgement (error 0) is not an error.
        let ack = message(NLMSG_ERROR, 1, &[0; 20]);
        assert!(read_all(&[ack], 1).is_ok());
        let mut long = message(RTM_NEWQDISC, 1, &[0; TCMSG_LEN]);
        long[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(read_all(&[long], 1).is_err());
        let short = message(RTM_NEWQDISC, 1, &[0; 6]);
        assert!(read_all(&[short], 1).is_err());
    }

    #[test]
    fn link_names_are_read_from_their_attribute() {
        let mut body = vec![0u8; IFINFOMSG_LEN];
        body[4..8].copy_from_slice(&7i32.to_ne_bytes());
        body.extend(attr(4, &1500u32.to_ne_bytes())); // IFLA_MTU
        body.extend(attr(IFLA_IFNAME, b"l12\0"));
        assert_eq!(
            parse_link(&body).expect("parses"),
            Some((7, "l12".to_owned()))
        );
        body.truncate(IFINFOMSG_LEN);
        assert_eq!(parse_link(&body).expect("parses"), None);
    }

    /// In this process's own namespace: the dump answers, and every qdisc
    /// it names sits on an interface the link dump names.
    #[test]
    fn the_kernel_answers_a_dump() {
        let mut r = QdiscReader::open().expect("a netlink socket");
        let qdiscs = r.qdiscs().expect("a dump");
        for q in &qdiscs {
            assert!(r.name(q.ifindex).expect("a link dump").is_some(), "{q:?}");
        }
        // The loopback exists everywhere.
        assert_eq!(r.name(1).expect("a link dump"), Some("lo"));
    }
}
