//! A two-node test loop for TFRC: a sender and a receiver joined by a path
//! with a fixed one-way delay, unlimited capacity and a scripted loss
//! pattern (the setting of RFC 5348's responsiveness and aggressiveness
//! figures). Feedback is never lost.

use super::{DataInfo, Feedback, Mode, ReceiverConfig, SenderConfig, TfrcReceiver, TfrcSender};
use meshcast_core::{Duration, Rate, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Ev {
    Data(DataInfoKey),
    Feedback(u64),
    Tick,
}

/// `DataInfo` sorted by sequence number (for the heap).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct DataInfoKey(u64, u64, u64, bool, u32);

/// One sample of the sender's state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub(crate) at: Time,
    pub(crate) rate: Rate,
    pub(crate) mode: Mode,
}

/// A packet the sender sent: when and how big.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sent {
    pub(crate) at: Time,
    pub(crate) bytes: u32,
}

pub(crate) struct Loop {
    pub(crate) sender: TfrcSender,
    pub(crate) receiver: TfrcReceiver,
    one_way: Duration,
    now: Time,
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    n: u64,
    feedback: Vec<Feedback>,
    pub(crate) samples: Vec<Sample>,
    pub(crate) sent: Vec<Sent>,
    pub(crate) feedback_log: Vec<(Time, Feedback)>,
}

impl Loop {
    pub(crate) fn new(segment: u32, rtt: Duration) -> Loop {
        let scfg = SenderConfig {
            segment_bytes: segment,
            initial_rtt: None,
        };
        let rcfg = ReceiverConfig {
            segment_bytes: segment,
            discounting: true,
        };
        Loop {
            sender: TfrcSender::new(scfg, Time::ZERO),
            receiver: TfrcReceiver::new(rcfg),
            one_way: Duration::from_nanos(rtt.as_nanos() / 2),
            now: Time::ZERO,
            heap: BinaryHeap::new(),
            n: 0,
            feedback: Vec::new(),
            samples: Vec::new(),
            sent: Vec::new(),
            feedback_log: Vec::new(),
        }
    }

    fn push(&mut self, at: Time, ev: Ev) {
        self.n += 1;
        self.heap.push(Reverse((at, self.n, ev)));
    }

    /// Run until `end`. `app(now, rate, mode)` is `get_pkt`: the size of the
    /// packet it supplies, or `None`; `lose(info)` decides whether a data
    /// packet is lost on the path.
    pub(crate) fn run(
        &mut self,
        end: Time,
        app: &mut dyn FnMut(Time, Rate, Mode) -> Option<u32>,
        lose: &mut dyn FnMut(&DataInfo) -> bool,
    ) {
        self.push(self.now, Ev::Tick);
        loop {
            // The earliest of: the heap, the next send, the timers.
            let send_at = self.sender.next_send().max(self.now);
            let sender_timer = self.sender.poll_timeout().unwrap_or(Time::MAX);
            let recv_timer = self
                .receiver
                .poll_timeout()
                .unwrap_or(Time::MAX)
                .max(self.now);
            let heap_at = self.heap.peek().map_or(Time::MAX, |Reverse((t, _, _))| *t);
            let t = send_at.min(sender_timer).min(recv_timer).min(heap_at);
            if t >= end {
                self.now = end;
                return;
            }
            self.now = t;
            let now = t;
            if heap_at == t {
                let Reverse((_, _, ev)) = self.heap.pop().expect("peeked");
                match ev {
                    Ev::Data(DataInfoKey(seq, sent, rtt, brk, bytes)) => {
                        let info = DataInfo {
                            seq,
                            sent_at: Time::from_nanos(sent),
                            rtt: Duration::from_nanos(rtt),
                            break_ss: brk,
                        };
                        self.receiver.on_data(now, &info, bytes);
                    }
                    Ev::Feedback(i) => {
                        let fb = self.feedback[i as usize];
                        self.sender.on_feedback(now, &fb);
                        self.feedback_log.push((now, fb));
                        self.samples.push(Sample {
                            at: now,
                            rate: self.sender.rate(),
                            mode: self.sender.mode(),
                        });
                    }
                    Ev::Tick => {}
                }
            } else if sender_timer == t {
                self.sender.handle_timeout(now);
            } else if send_at == t {
                match app(now, self.sender.rate(), self.sender.mode()) {
                    Some(bytes) => {
                        let info = self.sender.on_sent(now, bytes);
                        self.sent.push(Sent { at: now, bytes });
                        if !lose(&info) {
                            let key = DataInfoKey(
                                info.seq,
                                info.sent_at.as_nanos(),
                                info.rtt.as_nanos(),
                                info.break_ss,
                                bytes,
                            );
                            self.push(now + self.one_way, Ev::Data(key));
                        }
                    }
                    None => self.sender.on_declined(now),
                }
            }
            while let Some(fb) = self.receiver.poll_feedback(self.now) {
                self.feedback.push(fb);
                let i = self.feedback.len() as u64 - 1;
                self.push(self.now + self.one_way, Ev::Feedback(i));
            }
        }
    }

    /// The allowed rate at `at` (the last sample before it).
    pub(crate) fn rate_at(&self, at: Time) -> Rate {
        self.samples
            .iter()
            .take_while(|s| s.at <= at)
            .last()
            .map_or(Rate::ZERO, |s| s.rate)
    }
}
