//! `base-station`: the base station that serves the mobile host behind the next radio link,
//! taking part in its handoffs (P3). Between handoffs it forwards everything. It:
//! - consumes a mobile host's Greet (P3 §3: sent to the new base station when a handoff starts)
//!   and, until that handoff ends, answers the fixed host's window probes for that connection
//!   itself with a zero-window ACK of the `rcv_nxt` the Greet carried, so the frozen fixed host
//!   stays in persist mode (the probes would be lost in the handoff otherwise);
//! - with `buffer_freeze` (BUFFER+FREEZE as P3 §2 describes Chan et al.): keeps the latest ACK
//!   it relayed from each mobile host and, when a handoff starts, sends it to the fixed host
//!   again with a zero window, so an unmodified sender stops sending new data. (Its BUFFER half,
//!   holding the packets that arrive during the handoff, is the handoff's `queued = "forward"`.)
//!
//! Both base stations of a handoff are this one element: they share the wired hop and the radio
//! parameters (see `crate::handoff`), so which one answers is bookkeeping, not routing.
use super::{Element, ElementOut};
use crate::core::time::{Time, NEVER};
use crate::packet::{Packet, PacketKind, Pkt};
use std::collections::BTreeMap;

pub struct BaseStation {
    buffer_freeze: bool,
    /// The handoffs of the radio link this base station serves, sorted.
    handoffs: Vec<(Time, Time)>,
    /// Index of the next handoff start not yet reached (BUFFER+FREEZE's timer).
    next_start: usize,
    /// Per flow: (rcv_nxt from the Greet, end of the handoff it announced).
    greeted: BTreeMap<u32, (u64, Time)>,
    /// Per flow: the latest ACK relayed toward the fixed host (BUFFER+FREEZE).
    last_ack: BTreeMap<u32, Packet>,
    greets: u64,
    probes_answered: u64,
    zero_windows_sent: u64,
}

impl BaseStation {
    pub fn new(buffer_freeze: bool, mut handoffs: Vec<(Time, Time)>) -> Self {
        handoffs.sort_unstable();
        BaseStation {
            buffer_freeze,
            handoffs,
            next_start: 0,
            greeted: BTreeMap::new(),
            last_ack: BTreeMap::new(),
            greets: 0,
            probes_answered: 0,
            zero_windows_sent: 0,
        }
    }

    /// The end of the handoff under way at `t` (or the next one, for a Greet sent just before).
    fn handoff_end(&self, t: Time) -> Time {
        let i = self.handoffs.partition_point(|&(_, e)| e <= t);
        self.handoffs.get(i).map_or(t, |&(_, e)| e)
    }
}

impl Element for BaseStation {
    fn kind(&self) -> &'static str {
        "base-station"
    }

    fn on_packet(&mut self, now: Time, p: Pkt, reverse: bool, out: &mut ElementOut) {
        if reverse {
            match p.kind {
                PacketKind::Greet => {
                    self.greets += 1;
                    self.greeted.insert(p.flow, (p.ack, self.handoff_end(now)));
                    out.absorb.push(p);
                    return;
                }
                PacketKind::Ack if self.buffer_freeze => {
                    self.last_ack.insert(p.flow, (*p).clone());
                }
                _ => {}
            }
            out.forward.push(p);
            return;
        }
        if p.kind == PacketKind::WindowProbe {
            if let Some(&(ack, until)) = self.greeted.get(&p.flow).filter(|&&(_, until)| now < until) {
                let _ = until;
                self.probes_answered += 1;
                let mut a = Packet::new(PacketKind::Ack);
                a.flow = p.flow;
                a.subflow = p.subflow;
                a.ack = ack;
                a.rwnd = 0;
                a.ts_ecr = p.ts_val;
                a.route = p.route;
                a.hop = p.hop;
                out.reply.push(Box::new(a));
                out.absorb.push(p);
                return;
            }
        }
        out.forward.push(p);
    }

    fn on_timer(&mut self, now: Time, out: &mut ElementOut) {
        while self.handoffs.get(self.next_start).is_some_and(|&(s, _)| s <= now) {
            self.next_start += 1;
            if self.buffer_freeze {
                for a in self.last_ack.values() {
                    let mut z = a.clone();
                    z.rwnd = 0;
                    self.zero_windows_sent += 1;
                    out.send.push(Box::new(z));
                }
            }
        }
    }

    fn next_timer(&self) -> Time {
        if !self.buffer_freeze {
            return NEVER;
        }
        self.handoffs.get(self.next_start).map_or(NEVER, |&(s, _)| s)
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind(),
            "buffer_freeze": self.buffer_freeze,
            "greets": self.greets,
            "probes_answered": self.probes_answered,
            "zero_windows_sent": self.zero_windows_sent,
        })
    }
}
