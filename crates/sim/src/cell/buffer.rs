//! A UE's buffer in one direction (the UE's uplink buffer, or the eNB's downlink buffer for the
//! UE): drop-tail FIFO queues with byte-level segmentation across transport blocks (RLC-like:
//! a packet leaves when its last byte has been sent; segments of one packet are never
//! reordered).
//!
//! Three queues, served in this order: the GBR bearer's, pure ACKs (only with ACK
//! prioritisation, the `ack-prio` policy; otherwise ACKs queue with the data) and data.
use crate::core::time::Time;
use crate::packet::{PacketKind, Pkt};
use std::collections::VecDeque;

/// Which queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    Gbr = 0,
    Ack = 1,
    Data = 2,
}

#[derive(Default)]
struct Queue {
    pkts: VecDeque<(Time, u32, Pkt)>,
    /// Bytes still to send (sizes minus what the head already sent).
    bytes: u64,
    head_sent: u32,
}

/// A packet that left the buffer: when it entered, and the packet.
pub struct Sent {
    pub entered: Time,
    pub pkt: Pkt,
}

pub struct Buffer {
    lanes: [Queue; 3],
    max_packets: u64,
    max_bytes: u64,
    overhead: u32,
    ack_priority: bool,
    packets: u64,
}

impl Buffer {
    pub fn new(max_packets: u64, max_bytes: u64, overhead: u32, ack_priority: bool) -> Self {
        Buffer {
            lanes: Default::default(),
            max_packets,
            max_bytes,
            overhead,
            ack_priority,
            packets: 0,
        }
    }

    /// Size a packet takes in the buffer (IP bytes plus layer-2 overhead).
    pub fn size_of(&self, p: &Pkt) -> u32 {
        p.wire_bytes() + self.overhead
    }

    /// The lane a packet joins.
    pub fn lane_of(&self, p: &Pkt, gbr: bool) -> Lane {
        if gbr {
            Lane::Gbr
        } else if self.ack_priority && p.kind == PacketKind::Ack && p.len == 0 {
            Lane::Ack
        } else {
            Lane::Data
        }
    }

    /// Appends a packet; gives it back if the buffer is full (drop-tail).
    pub fn push(&mut self, now: Time, p: Pkt, lane: Lane) -> Result<(), Pkt> {
        let size = self.size_of(&p);
        if self.packets + 1 > self.max_packets || self.bytes() + size as u64 > self.max_bytes {
            return Err(p);
        }
        let q = &mut self.lanes[lane as usize];
        q.bytes += size as u64;
        q.pkts.push_back((now, size, p));
        self.packets += 1;
        Ok(())
    }

    pub fn bytes(&self) -> u64 {
        self.lanes.iter().map(|q| q.bytes).sum()
    }

    pub fn lane_bytes(&self, lane: Lane) -> u64 {
        self.lanes[lane as usize].bytes
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }

    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Sends up to `budget` bytes, GBR lane first, then ACKs (with priority), then data; appends
    /// the packets whose last byte went to `done`. With `gbr_budget`, at most that many of the
    /// bytes come from the GBR lane. Returns the bytes sent.
    pub fn send(&mut self, mut budget: u64, done: &mut Vec<Sent>) -> u64 {
        let start = budget;
        for q in &mut self.lanes {
            while budget > 0 {
                let Some(&(_, size, _)) = q.pkts.front() else { break };
                let rest = (size - q.head_sent) as u64;
                if rest <= budget {
                    budget -= rest;
                    q.bytes -= rest;
                    q.head_sent = 0;
                    let (entered, _, pkt) = q.pkts.pop_front().expect("front exists");
                    self.packets -= 1;
                    done.push(Sent { entered, pkt });
                } else {
                    q.head_sent += budget as u32;
                    q.bytes -= budget;
                    budget = 0;
                }
            }
        }
        start - budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn data(len: u32) -> Pkt {
        let mut p = Packet::new(PacketKind::Data);
        p.len = len;
        Box::new(p)
    }
    fn ack() -> Pkt {
        Box::new(Packet::new(PacketKind::Ack))
    }

    #[test]
    fn segments_across_transport_blocks_in_order() {
        let mut b = Buffer::new(10, u64::MAX, 0, false);
        b.push(0, data(1460), Lane::Data).unwrap();
        b.push(1, ack(), Lane::Data).unwrap();
        assert_eq!(b.bytes(), 1512 + 52);
        let mut done = Vec::new();
        assert_eq!(b.send(1000, &mut done), 1000);
        assert!(done.is_empty());
        assert_eq!(b.send(600, &mut done), 564);
        assert_eq!(done.len(), 2);
        assert_eq!(done[0].pkt.len, 1460);
        assert!(b.is_empty() && b.bytes() == 0);
    }

    #[test]
    fn ack_priority_and_drop_tail() {
        let mut b = Buffer::new(2, u64::MAX, 2, true);
        let (d, a) = (data(1000), ack());
        let (ld, la) = (b.lane_of(&d, false), b.lane_of(&a, false));
        assert_eq!((ld, la), (Lane::Data, Lane::Ack));
        b.push(0, d, ld).unwrap();
        b.push(0, a, la).unwrap();
        assert!(b.push(0, data(10), Lane::Data).is_err());
        let mut done = Vec::new();
        b.send(54, &mut done);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].pkt.kind, PacketKind::Ack);
        let plain = Buffer::new(2, u64::MAX, 0, false);
        assert_eq!(plain.lane_of(&ack(), false), Lane::Data);
        let mut bytes = Buffer::new(100, 1100, 0, false);
        assert!(bytes.push(0, data(1000), Lane::Data).is_ok());
        assert!(bytes.push(0, data(1000), Lane::Data).is_err());
    }
}
