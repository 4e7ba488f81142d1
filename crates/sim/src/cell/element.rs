//! The cell as a network element: per-UE buffers, the TTI loop (uplink reception with BSRs and
//! the uplink congestion policy, downlink transmission, uplink grants, scheduling requests).
//!
//! Per TTI k (time k ms; subframe k mod 10), in this order:
//! 1. what completed in TTI k − 1 leaves the cell (uplink: towards the core; downlink: to the
//!    UE): a transport block is received at the end of its TTI;
//! 2. CQIs from the UEs' traces; GBR token buckets refill; BSRs and SRs whose processing time
//!    is over become usable by the scheduler;
//! 3. uplink subframe (every subframe in FDD): every UE granted this TTI sends the grant's
//!    bytes from its buffer (GBR lane, then ACKs with `ack-prio`, then data; packets segmented
//!    across blocks) and a BSR (2 bytes; always with `bsr.every_tb`, else Regular / Periodic /
//!    Padding as TS 36.321 §5.4.5); the congestion policy acts on the completed packets;
//! 4. downlink-carrying subframe (D, or S at its DwPTS size): GBR first up to its tokens, then
//!    the downlink scheduler over the eNB's exact per-UE queues;
//! 5. grant subframe (TS 36.213 Table 8-2): for each uplink TTI it schedules, GBR first, then the
//!    uplink scheduler over the eNB's estimates: latest usable BSR (upper bound of its range)
//!    minus the bytes granted after it; a UE with a usable SR and no estimate gets `sr.grant_rbs`;
//! 6. uplink subframe: UEs with a pending Regular BSR and no grant send an SR at their
//!    opportunity; it is usable at k + 1 + `enb_processing_ms`.
//!
//! The cell sleeps while every buffer is empty (no timer), and catches up on wake-up (PF
//! averages decay by the skipped TTIs; tokens refill). Cost per TTI: O(UEs) for the buffers and
//! estimates, plus the scheduler (RR O(UEs), PF O(UEs log UEs), bsr-proportional O(K·UEs) in the
//! worst case); per packet O(1).
//!
//! Not modelled: HARQ (no block errors, no retransmission delays: delays are lower bounds),
//! RLC ARQ/status PDUs (segmentation only, in order), PDCP (only `l2_overhead_bytes`), power
//! control and power headroom (every UE can use the whole PUSCH), frequency-selective
//! scheduling (flat channel), PDCCH capacity (`max_ues_per_tti`), DRX, RRC states, handover,
//! MIMO.
use super::bsr;
use super::buffer::{Buffer, Lane, Sent};
use super::config::{dl_bytes, CellSpec};
use super::congestion::{PolicyStats, UlPolicy};
use super::frame::Frame;
use super::phy::{bytes_for, UL_RE_PER_RB};
use super::sched::{Candidate, MacScheduler};
use crate::core::rng::Rng;
use crate::core::time::{Time, NEVER, NS_PER_MS};
use crate::core::RngStreams;
use crate::element::{Element, ElementContext, ElementOut};
use crate::packet::{PacketKind, Pkt};
use rand::Rng as _;
use serde_json::{json, Map, Value};
use std::collections::VecDeque;

/// Bytes of a Short BSR MAC control element with its subheader.
const BSR_CE_BYTES: u64 = 2;
/// retxBSR-Timer (TS 36.321 §5.4.5; its smallest value, sf320): a UE with data and no grant
/// for this long triggers a Regular BSR (and so an SR).
const RETX_BSR_TTIS: u64 = 320;
/// GBR token bucket depth, in seconds of the guaranteed rate (at least one 1500-byte packet).
const GBR_DEPTH_S: f64 = 0.02;

#[derive(Clone, Copy, Debug, Default)]
struct Report {
    tti: u64,
    usable_at: u64,
    gbr: u64,
    ngbr: u64,
}

#[derive(Default)]
struct UeStats {
    ul_bytes: u64,
    dl_bytes: u64,
    ul_packets: u64,
    dl_packets: u64,
    ul_buffer_drops: u64,
    dl_buffer_drops: u64,
    policy_drops: u64,
    ul_ack_delay: (f64, u64),
    ul_data_delay: (f64, u64),
    dl_delay: (f64, u64),
    grants: u64,
    srs: u64,
    max_ul_buffer: u64,
}

struct Ue {
    name: String,
    cqi: Vec<(Time, u8, u8)>,
    cqi_at: usize,
    dl_cqi: u8,
    ul_cqi: u8,
    ul: Buffer,
    dl: Buffer,
    /// Grants issued: (uplink TTI, bytes), in TTI order; kept until a usable BSR covers them.
    grants: VecDeque<(u64, u64)>,
    /// BSRs received, not yet usable by the scheduler.
    reports: VecDeque<Report>,
    /// The latest usable BSR (scheduler), and the latest received (congestion policy).
    known: Option<Report>,
    latest: Option<Report>,
    regular_pending: bool,
    last_bsr_tti: Option<u64>,
    /// When the retxBSR-Timer expires (data buffered and no grant since).
    retx_deadline: u64,
    /// SR: (sent in TTI, usable from TTI).
    sr: Option<(u64, u64)>,
    sr_offset: u64,
    /// GBR token rate (bytes per ms) and tokens, [dl, ul].
    gbr_rate: f64,
    tokens: [f64; 2],
    pending_drop: bool,
    stats: UeStats,
}

impl Ue {
    /// The eNB's estimate of the UE's uplink buffer: (GBR bytes, total bytes).
    fn estimate(&self) -> (u64, u64) {
        let Some(r) = self.known else { return (0, 0) };
        let after: u64 = self.grants.iter().filter(|g| g.0 > r.tti).map(|g| g.1).sum();
        (r.gbr.saturating_sub(after), (r.gbr + r.ngbr).saturating_sub(after))
    }

    fn ul_cqi(&self, max: u8) -> u8 {
        self.ul_cqi.min(max)
    }
}

/// The LTE cell element (`[[cells]]`).
pub struct Cell {
    spec: CellSpec,
    frame: Frame,
    ues: Vec<Ue>,
    /// Per route id: (UE, uplink) for routes that start at a UE into the cell or end at one.
    routes: Vec<Option<(u32, bool)>>,
    /// Per flow id: whether it uses a GBR bearer.
    gbr_flow: Vec<bool>,
    next_tti: u64,
    /// Sleeping (every buffer empty, nothing in flight): no timer until a packet arrives.
    asleep: bool,
    /// Completed in the TTI just processed; they leave at its end.
    inflight: Vec<Pkt>,
    ul_sched: Box<dyn MacScheduler>,
    dl_sched: Box<dyn MacScheduler>,
    rng: Rng,
    policy_stats: PolicyStats,
    bsr_sum: (f64, u64),
    /// TTIs processed (awake), of each direction, and uplink TTIs in which some UE sent.
    ul_ttis: u64,
    dl_ttis: u64,
    ul_ttis_used: u64,
    ul_rbs_used: u64,
    dl_rbs_used: f64,
    unmapped: u64,
    // scratch
    cands: Vec<Candidate>,
    alloc: Vec<u32>,
    rbs: Vec<u32>,
    gbr_bytes: Vec<u64>,
    served: Vec<u64>,
    done: Vec<Sent>,
    ul_done: Vec<(usize, Sent, bool)>,
    scheduled: Vec<usize>,
    gbr_next: [usize; 2],
}

impl Cell {
    pub fn new(spec: &CellSpec, ctx: &ElementContext) -> Cell {
        let n = spec.ues.len();
        let ack_prio = spec.policy.ack_priority();
        let frame = spec.frame.clone();
        let ue_index = |name: &str| spec.ues.iter().position(|u| u.name == name);
        let routes = ctx
            .routes
            .iter()
            .map(|r| {
                let here: Vec<usize> = r
                    .hops
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| **h == Some(ctx.index))
                    .map(|(i, _)| i)
                    .collect();
                let first = here.first() == Some(&0);
                let last = here.last() == Some(&(r.hops.len() - 1));
                match (
                    first.then(|| ue_index(&r.from)).flatten(),
                    last.then(|| ue_index(&r.to)).flatten(),
                ) {
                    (Some(u), _) => Some((u as u32, true)),
                    (None, Some(u)) => Some((u as u32, false)),
                    _ => None,
                }
            })
            .collect();
        let gbr_flow = ctx
            .flows
            .iter()
            .map(|f| spec.ues.iter().any(|u| u.gbr.iter().any(|g| &g.0 == f)))
            .collect();
        // SR opportunities: uplink subframes; UE i uses the (i mod m)-th distinct offset mod P.
        let p = spec.sr_period_ms as u64;
        let mut offsets: Vec<u64> = (0..10 * p).filter(|&t| frame.is_ul(t)).map(|t| t % p).collect();
        offsets.sort_unstable();
        offsets.dedup();
        let ues = spec
            .ues
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let rate: f64 = u.gbr.iter().map(|g| g.1).sum::<f64>() / 1000.0;
                Ue {
                    name: u.name.clone(),
                    cqi: u.cqi.clone(),
                    cqi_at: 0,
                    dl_cqi: u.cqi[0].1,
                    ul_cqi: u.cqi[0].2,
                    ul: Buffer::new(spec.ul_buf.0, spec.ul_buf.1, spec.l2_overhead, ack_prio),
                    dl: Buffer::new(spec.dl_buf.0, spec.dl_buf.1, spec.l2_overhead, false),
                    grants: VecDeque::new(),
                    reports: VecDeque::new(),
                    known: None,
                    latest: None,
                    regular_pending: false,
                    last_bsr_tti: None,
                    retx_deadline: u64::MAX,
                    sr: None,
                    sr_offset: offsets[i % offsets.len()],
                    gbr_rate: rate,
                    tokens: [gbr_depth(rate); 2],
                    pending_drop: false,
                    stats: UeStats::default(),
                }
            })
            .collect();
        Cell {
            frame,
            ues,
            routes,
            gbr_flow,
            next_tti: 0,
            asleep: true,
            inflight: Vec::new(),
            ul_sched: spec.ul_sched.build(n, spec.pf_window),
            dl_sched: spec.dl_sched.build(n, spec.pf_window),
            rng: RngStreams::new(ctx.seed).stream(&format!("cell/{}/{}", spec.name, spec.policy.name())),
            policy_stats: PolicyStats::default(),
            bsr_sum: (0.0, 0),
            ul_ttis: 0,
            dl_ttis: 0,
            ul_ttis_used: 0,
            ul_rbs_used: 0,
            dl_rbs_used: 0.0,
            unmapped: 0,
            cands: Vec::with_capacity(n),
            alloc: Vec::with_capacity(n),
            rbs: vec![0; n],
            gbr_bytes: vec![0; n],
            served: vec![0; n],
            done: Vec::new(),
            ul_done: Vec::new(),
            scheduled: Vec::with_capacity(n),
            gbr_next: [0; 2],
            spec: spec.clone(),
        }
    }

    fn wake(&mut self, now: Time) {
        if !self.asleep {
            return;
        }
        self.asleep = false;
        let k = now.div_ceil(NS_PER_MS).max(self.next_tti);
        if k > self.next_tti {
            self.ul_sched.idle(self.frame.count_ul(self.next_tti, k));
            self.dl_sched.idle(self.frame.count_dl(self.next_tti, k));
            for u in &mut self.ues {
                u.tokens = [gbr_depth(u.gbr_rate); 2];
            }
            self.next_tti = k;
        }
    }

    fn busy(&self) -> bool {
        !self.inflight.is_empty() || self.ues.iter().any(|u| !u.ul.is_empty() || !u.dl.is_empty())
    }

    /// One TTI (see the module docs).
    fn tti(&mut self, k: u64, out: &mut ElementOut) {
        out.forward.append(&mut self.inflight);
        let now = k * NS_PER_MS;
        for u in &mut self.ues {
            while u.cqi.get(u.cqi_at + 1).is_some_and(|c| c.0 <= now) {
                u.cqi_at += 1;
            }
            (u.dl_cqi, u.ul_cqi) = (u.cqi[u.cqi_at].1, u.cqi[u.cqi_at].2);
            let depth = gbr_depth(u.gbr_rate);
            for t in &mut u.tokens {
                *t = (*t + u.gbr_rate).min(depth);
            }
            while u.reports.front().is_some_and(|r| r.usable_at <= k) {
                let r = u.reports.pop_front().expect("front exists");
                u.known = Some(r);
                while u.grants.front().is_some_and(|g| g.0 <= r.tti) {
                    u.grants.pop_front();
                }
            }
        }
        if self.frame.is_ul(k) {
            self.uplink(k, out);
        }
        let f = self.frame.dl_fraction(k);
        if f > 0.0 {
            self.downlink(k, f);
        }
        let targets: Vec<u64> = self.frame.grant_targets(k).collect();
        for u in targets {
            self.grant(k, u);
        }
        if self.frame.is_ul(k) {
            self.scheduling_requests(k);
        }
    }

    /// Uplink reception in TTI k and the congestion policy.
    fn uplink(&mut self, k: u64, out: &mut ElementOut) {
        self.ul_ttis += 1;
        self.scheduled.clear();
        let end = (k + 1) * NS_PER_MS;
        let proc = self.spec.processing_ttis as u64;
        for (i, u) in self.ues.iter_mut().enumerate() {
            let Some(pos) = u.grants.iter().position(|g| g.0 == k) else {
                continue;
            };
            let bytes = u.grants[pos].1;
            let periodic_due = self.spec.bsr_periodic_ms > 0
                && u.last_bsr_tti.is_none_or(|t| k >= t + self.spec.bsr_periodic_ms as u64);
            let mut with_bsr = self.spec.bsr_every_tb || u.regular_pending || periodic_due;
            let payload = if with_bsr {
                bytes.saturating_sub(BSR_CE_BYTES)
            } else {
                bytes
            };
            self.done.clear();
            let sent = u.ul.send(payload, &mut self.done);
            if !with_bsr && payload - sent >= BSR_CE_BYTES {
                with_bsr = true; // padding BSR
            }
            if with_bsr {
                let gbr = u.ul.lane_bytes(Lane::Gbr);
                let ngbr = u.ul.bytes() - gbr;
                let r = Report {
                    tti: k,
                    usable_at: k + 1 + proc,
                    gbr: bsr::upper_bound(bsr::index(gbr)),
                    ngbr: bsr::upper_bound(bsr::index(ngbr)),
                };
                u.reports.push_back(r);
                u.latest = Some(r);
                u.regular_pending = false;
                u.last_bsr_tti = Some(k);
            }
            u.retx_deadline = if u.ul.is_empty() { u64::MAX } else { k + RETX_BSR_TTIS };
            self.scheduled.push(i);
            for s in self.done.drain(..) {
                let size = s.pkt.wire_bytes() as u64;
                u.stats.ul_bytes += size;
                u.stats.ul_packets += 1;
                let d = (end - s.entered) as f64;
                let acc = if s.pkt.kind == PacketKind::Ack && s.pkt.len == 0 {
                    &mut u.stats.ul_ack_delay
                } else {
                    &mut u.stats.ul_data_delay
                };
                acc.0 += d;
                acc.1 += 1;
                self.ul_done.push((i, s, false));
            }
        }
        if !self.scheduled.is_empty() {
            self.ul_ttis_used += 1;
        }
        self.congestion_policy();
        for (i, s, dropped) in self.ul_done.drain(..) {
            if dropped {
                self.ues[i].stats.policy_drops += 1;
                out.drop.push(s.pkt);
            } else {
                self.inflight.push(s.pkt);
            }
        }
    }

    /// P4's bsr-drop or red-large on this uplink TTI's completed packets (`congestion.rs`).
    fn congestion_policy(&mut self) {
        let Some((p, th)) = self.spec.policy.drop_parameters() else {
            return;
        };
        let st = &mut self.policy_stats;
        st.ttis += 1;
        // Armed drops first: the first large packet of a UE with one pending.
        for (i, s, dropped) in self.ul_done.iter_mut() {
            let u = &mut self.ues[*i];
            if u.pending_drop && s.pkt.wire_bytes() > th {
                u.pending_drop = false;
                *dropped = true;
                st.drops += 1;
            }
        }
        let reported = |u: &Ue| u.latest.map_or(0, |r| r.gbr + r.ngbr);
        let target = match &self.spec.policy {
            UlPolicy::BsrDrop { params, .. } => {
                let sum: u64 = self.ues.iter().map(reported).sum();
                self.bsr_sum.0 += sum as f64;
                self.bsr_sum.1 += 1;
                if sum as f64 <= params.th_cell {
                    return;
                }
                st.congested_ttis += 1;
                let cands: Vec<usize> = self
                    .scheduled
                    .iter()
                    .copied()
                    .filter(|&i| reported(&self.ues[i]) as f64 > params.th_ue)
                    .collect();
                if cands.is_empty() {
                    return;
                }
                st.candidate_ttis += 1;
                cands[self.rng.gen_range(0..cands.len())]
            }
            UlPolicy::RedLarge { .. } => {
                if self.scheduled.is_empty() {
                    return;
                }
                st.candidate_ttis += 1;
                self.scheduled[self.rng.gen_range(0..self.scheduled.len())]
            }
            _ => return,
        };
        if self.rng.gen::<f64>() >= p {
            return;
        }
        st.decisions += 1;
        if let Some(e) = self
            .ul_done
            .iter_mut()
            .find(|(i, s, dropped)| *i == target && !*dropped && s.pkt.wire_bytes() > th)
        {
            e.2 = true;
            st.drops += 1;
        } else if self.ues[target].pending_drop {
            st.decisions_merged += 1;
        } else {
            self.ues[target].pending_drop = true;
        }
    }

    /// GBR first (up to tokens), then the scheduler; fills `self.rbs`. `est(i)` = (GBR bytes,
    /// total bytes, CQI) of UE i, `bytes(rbs, cqi)` the block size, `n_rbs` the band.
    fn allocate(&mut self, dir: usize, n_rbs: u32, est: &[(u64, u64, u8)], bytes: &dyn Fn(u32, u8) -> u64) {
        let n = self.ues.len();
        self.rbs.iter_mut().for_each(|r| *r = 0);
        self.gbr_bytes.iter_mut().for_each(|b| *b = 0);
        // The fewest RBs (up to `max`) whose block carries `b` bytes (blocks grow with RBs).
        let rbs_for_bytes = |b: u64, cqi: u8, max: u32| -> u32 {
            if b == 0 || cqi == 0 {
                return 0;
            }
            let (mut lo, mut hi) = (1u32, max);
            if bytes(hi, cqi) < b {
                return max;
            }
            while lo < hi {
                let mid = (lo + hi) / 2;
                if bytes(mid, cqi) >= b {
                    hi = mid
                } else {
                    lo = mid + 1
                }
            }
            lo
        };
        let mut left = n_rbs;
        // GBR pass, round robin over the UEs with GBR data and tokens.
        let start = self.gbr_next[dir];
        for j in 0..n {
            let i = (start + j) % n;
            let (g, _, cqi) = est[i];
            let tok = self.ues[i].tokens[dir];
            if g == 0 || tok < 1.0 || cqi == 0 || left == 0 {
                continue;
            }
            let want = g.min(tok as u64).max(1);
            let k = rbs_for_bytes(want, cqi, left);
            self.rbs[i] = k;
            self.gbr_bytes[i] = bytes(k, cqi).min(g);
            self.ues[i].tokens[dir] -= self.gbr_bytes[i] as f64;
            left -= k;
            self.gbr_next[dir] = i + 1;
        }
        // Scheduler pass over what the GBR pass left.
        self.cands.clear();
        for (i, &(_, total, cqi)) in est.iter().enumerate() {
            let rest = total.saturating_sub(self.gbr_bytes[i]);
            if cqi == 0 || rest == 0 || left == 0 {
                if total == 0 {
                    if dir == 1 {
                        self.ul_sched.forget(i)
                    } else {
                        self.dl_sched.forget(i)
                    }
                }
                continue;
            }
            // A UE already holding GBR RBs gets more only as one block: its size grows with them.
            let need = rbs_for_bytes(total, cqi, n_rbs).saturating_sub(self.rbs[i]).min(left);
            if need == 0 {
                continue;
            }
            self.cands.push(Candidate {
                ue: i,
                need_rbs: need,
                buffered: rest,
                full_band_bytes: bytes(n_rbs, cqi),
            });
        }
        let max_ues = if dir == 1 {
            self.spec.max_ues_ul
        } else {
            self.spec.max_ues_dl
        } as usize;
        let sched = if dir == 1 {
            &mut self.ul_sched
        } else {
            &mut self.dl_sched
        };
        sched.allocate(&self.cands, left, max_ues, &mut self.alloc);
        for (c, &a) in self.cands.iter().zip(&self.alloc) {
            self.rbs[c.ue] += a;
        }
    }

    fn downlink(&mut self, _k: u64, f: f64) {
        self.dl_ttis += 1;
        let re = self.spec.dl_re;
        let est: Vec<(u64, u64, u8)> = self
            .ues
            .iter()
            .map(|u| (u.dl.lane_bytes(Lane::Gbr), u.dl.bytes(), u.dl_cqi))
            .collect();
        if est.iter().all(|e| e.1 == 0) {
            self.served.iter_mut().for_each(|s| *s = 0);
            self.dl_sched.end_tti(&self.served);
            return;
        }
        self.allocate(0, self.spec.dl_rbs, &est, &|k, cqi| dl_bytes(k, re, cqi, f));
        let end = (_k + 1) * NS_PER_MS;
        let mut used = 0u32;
        for (i, u) in self.ues.iter_mut().enumerate() {
            let k = self.rbs[i];
            self.served[i] = 0;
            if k == 0 {
                continue;
            }
            used += k;
            let b = dl_bytes(k, re, u.dl_cqi, f);
            self.done.clear();
            self.served[i] = u.dl.send(b, &mut self.done);
            for s in self.done.drain(..) {
                u.stats.dl_bytes += s.pkt.wire_bytes() as u64;
                u.stats.dl_packets += 1;
                u.stats.dl_delay.0 += (end - s.entered) as f64;
                u.stats.dl_delay.1 += 1;
                self.inflight.push(s.pkt);
            }
        }
        self.dl_rbs_used += used as f64 / self.spec.dl_rbs as f64;
        self.dl_sched.end_tti(&self.served);
    }

    /// Uplink grants sent in TTI k for uplink TTI `target`.
    fn grant(&mut self, k: u64, target: u64) {
        let max_cqi = self.spec.ul_max_cqi;
        let sr_bytes = |cqi: u8, rbs: u32| bytes_for(rbs, UL_RE_PER_RB, cqi);
        let est: Vec<(u64, u64, u8)> = self
            .ues
            .iter()
            .map(|u| {
                let cqi = u.ul_cqi(max_cqi);
                let (g, t) = u.estimate();
                let sr_usable = u.sr.is_some_and(|(_, at)| at <= k);
                let t = if t == 0 && sr_usable {
                    sr_bytes(cqi, self.spec.sr_grant_rbs)
                } else {
                    t
                };
                (g, t, cqi)
            })
            .collect();
        self.served.iter_mut().for_each(|s| *s = 0);
        if est.iter().any(|e| e.1 > 0) {
            self.allocate(1, self.spec.ul_rbs, &est, &|r, cqi| bytes_for(r, UL_RE_PER_RB, cqi));
            for (i, u) in self.ues.iter_mut().enumerate() {
                let r = self.rbs[i];
                if r == 0 {
                    continue;
                }
                self.ul_rbs_used += r as u64;
                let b = bytes_for(r, UL_RE_PER_RB, u.ul_cqi(max_cqi));
                u.grants.push_back((target, b));
                u.stats.grants += 1;
                self.served[i] = b;
                if u.sr.is_some_and(|(sent, _)| sent < k) {
                    u.sr = None;
                }
            }
        }
        self.ul_sched.end_tti(&self.served);
    }

    /// UEs with a pending Regular BSR and no grant to come send an SR at their opportunity.
    fn scheduling_requests(&mut self, k: u64) {
        let p = self.spec.sr_period_ms as u64;
        let proc = self.spec.processing_ttis as u64;
        for u in &mut self.ues {
            if !u.ul.is_empty() && k >= u.retx_deadline {
                u.regular_pending = true;
                u.retx_deadline = k + RETX_BSR_TTIS;
            }
            if !u.regular_pending || u.ul.is_empty() || k % p != u.sr_offset || u.grants.iter().any(|g| g.0 > k) {
                continue;
            }
            if u.sr.is_none() {
                u.sr = Some((k, k + 1 + proc));
                u.stats.srs += 1;
            }
        }
    }
}

fn gbr_depth(rate_per_ms: f64) -> f64 {
    if rate_per_ms <= 0.0 {
        0.0
    } else {
        (rate_per_ms * 1000.0 * GBR_DEPTH_S).max(1600.0)
    }
}

fn mean_ms(acc: (f64, u64)) -> Value {
    if acc.1 == 0 {
        Value::Null
    } else {
        json!(crate::metrics::round6(acc.0 / acc.1 as f64 / 1e6))
    }
}

impl Element for Cell {
    fn kind(&self) -> &'static str {
        "lte-cell"
    }

    fn on_packet(&mut self, now: Time, p: Pkt, _reverse: bool, out: &mut ElementOut) {
        let Some(&Some((ue, uplink))) = self.routes.get(p.route as usize) else {
            // Not a route that enters the cell from a UE or ends at one: passes unchanged.
            self.unmapped += 1;
            out.forward.push(p);
            return;
        };
        self.wake(now);
        let gbr = self.gbr_flow.get(p.flow as usize).copied().unwrap_or(false);
        let u = &mut self.ues[ue as usize];
        if uplink {
            let was_empty = u.ul.is_empty();
            let gbr_was_empty = u.ul.lane_bytes(Lane::Gbr) == 0;
            let lane = u.ul.lane_of(&p, gbr);
            match u.ul.push(now, p, lane) {
                Ok(()) => {
                    // TS 36.321 §5.4.5 Regular BSR: data into an empty buffer, or into a
                    // higher-priority group than any with data.
                    if was_empty || (lane == Lane::Gbr && gbr_was_empty) {
                        u.regular_pending = true;
                    }
                    if was_empty {
                        u.retx_deadline = now / NS_PER_MS + RETX_BSR_TTIS;
                    }
                    u.stats.max_ul_buffer = u.stats.max_ul_buffer.max(u.ul.bytes());
                }
                Err(p) => {
                    u.stats.ul_buffer_drops += 1;
                    out.drop.push(p);
                }
            }
        } else {
            let lane = u.dl.lane_of(&p, gbr);
            if let Err(p) = u.dl.push(now, p, lane) {
                u.stats.dl_buffer_drops += 1;
                out.drop.push(p);
            }
        }
    }

    fn on_timer(&mut self, now: Time, out: &mut ElementOut) {
        while !self.asleep && self.next_tti * NS_PER_MS <= now {
            let k = self.next_tti;
            self.tti(k, out);
            self.next_tti = k + 1;
            if !self.busy() {
                self.asleep = true;
            }
        }
    }

    fn next_timer(&self) -> Time {
        if self.asleep {
            NEVER
        } else {
            self.next_tti * NS_PER_MS
        }
    }

    fn summary(&self) -> Value {
        let s = &self.spec;
        let r6 = crate::metrics::round6;
        let mut ues = Map::new();
        for u in &self.ues {
            let st = &u.stats;
            ues.insert(
                u.name.clone(),
                json!({
                    "ul_bytes": st.ul_bytes,
                    "dl_bytes": st.dl_bytes,
                    "ul_packets": st.ul_packets,
                    "dl_packets": st.dl_packets,
                    "ul_buffer_drops": st.ul_buffer_drops,
                    "dl_buffer_drops": st.dl_buffer_drops,
                    "policy_drops": st.policy_drops,
                    "ul_ack_delay_mean_ms": mean_ms(st.ul_ack_delay),
                    "ul_data_delay_mean_ms": mean_ms(st.ul_data_delay),
                    "dl_delay_mean_ms": mean_ms(st.dl_delay),
                    "ul_buffer_max_bytes": st.max_ul_buffer,
                    "grants": st.grants,
                    "scheduling_requests": st.srs,
                }),
            );
        }
        let sum = |f: fn(&UeStats) -> u64| self.ues.iter().map(|u| f(&u.stats)).sum::<u64>();
        let mut policy = json!({ "name": s.policy.name() });
        match &s.policy {
            UlPolicy::BsrDrop { inputs, params } => {
                policy = json!({
                    "name": "bsr-drop",
                    "n": inputs.n_ues,
                    "n_ref": inputs.n_ref,
                    "cw_target": inputs.cw_target,
                    "mss_bytes": inputs.mss,
                    "m": inputs.m,
                    "rtt_target_ms": r6(inputs.rtt_target_s * 1000.0),
                    "t_peak_mbps": r6(inputs.t_peak_bps / 1e6),
                    "t1_mbps": r6(inputs.t1_bps / 1e6),
                    "th_cell_1_bytes": r6(params.th_cell_1),
                    "th_cell_n_ref_bytes": r6(params.th_cell_n_ref),
                    "th_cell_n_bytes": r6(params.th_cell),
                    "th_ue_bytes": r6(params.th_ue),
                    "th_packet_bytes": params.th_packet,
                    "p_paper": r6(params.p_paper),
                    "p_consistent": r6(params.p_consistent),
                    "p": r6(params.p),
                    "bsr_sum_mean_bytes": if self.bsr_sum.1 > 0 { json!(r6(self.bsr_sum.0 / self.bsr_sum.1 as f64)) } else { Value::Null },
                });
            }
            UlPolicy::RedLarge { p, th_packet } => {
                policy = json!({ "name": "red-large", "p": r6(*p), "th_packet_bytes": th_packet });
            }
            _ => {}
        }
        if s.policy.drop_parameters().is_some() {
            let st = &self.policy_stats;
            policy["ul_ttis"] = json!(st.ttis);
            policy["congested_ttis"] = json!(st.congested_ttis);
            policy["candidate_ttis"] = json!(st.candidate_ttis);
            policy["decisions"] = json!(st.decisions);
            policy["decisions_merged"] = json!(st.decisions_merged);
            policy["drops"] = json!(st.drops);
        }
        json!({
            "kind": self.kind(),
            "duplex": if self.frame.is_fdd() { "fdd" } else { "tdd" },
            "tdd_config": self.frame.tdd_config,
            "subframes": self.frame.pattern_string(),
            "special_subframe": s.special_subframe,
            "bandwidth_mhz": s.bandwidth_mhz,
            "dl_rbs": s.dl_rbs,
            "ul_pusch_rbs": s.ul_rbs,
            "ul_ttis_per_s": self.frame.ul_ttis_per_second(),
            "dl_peak_mbps": r6(s.dl_peak_bps() / 1e6),
            "ul_peak_mbps": r6(s.ul_peak_bps() / 1e6),
            "scheduler_dl": s.dl_sched.name(),
            "scheduler_ul": s.ul_sched.name(),
            "ul_congestion": policy,
            // Subframes from t = 0 to the last TTI processed (awake or asleep), and those processed.
            "ul_ttis": self.frame.count_ul(0, self.next_tti),
            "dl_ttis": self.frame.count_dl(0, self.next_tti),
            "ul_ttis_active": self.ul_ttis,
            "dl_ttis_active": self.dl_ttis,
            "ul_ttis_with_pusch": self.ul_ttis_used,
            "ul_rb_utilisation": if self.ul_ttis > 0 { json!(r6(self.ul_rbs_used as f64 / (self.ul_ttis as f64 * s.ul_rbs as f64))) } else { Value::Null },
            "dl_rb_utilisation": if self.dl_ttis > 0 { json!(r6(self.dl_rbs_used / self.dl_ttis as f64)) } else { Value::Null },
            "ul_bytes": sum(|s| s.ul_bytes),
            "dl_bytes": sum(|s| s.dl_bytes),
            "ul_buffer_drops": sum(|s| s.ul_buffer_drops),
            "dl_buffer_drops": sum(|s| s.dl_buffer_drops),
            "policy_drops": sum(|s| s.policy_drops),
            "unmapped_packets": self.unmapped,
            "ues": ues,
        })
    }
}
