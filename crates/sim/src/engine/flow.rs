//! A flow as the engine keeps it: its two endpoints, the application on top (traffic source and
//! the in-order delivery check) and its time series.
use crate::core::time::{Time, NEVER, NS_PER_MS};
use crate::endpoint::{Counters, Endpoint, Sample};
use crate::metrics::Bins;
use crate::scenario::Traffic;

/// Shortest application delivery gap recorded as a stall.
pub(crate) const STALL_MIN: Time = NS_PER_MS;

/// Per-subflow time series (MPTCP).
pub(crate) struct SubflowSeries {
    /// Bytes this subflow had delivered at the last look (for per-bin attribution).
    pub delivered_seen: u64,
    pub goodput: Bins,
    pub sent: Bins,
    pub cwnd: Vec<f64>,
    pub srtt_ms: Vec<f64>,
}

pub(crate) struct Flow {
    pub name: String,
    pub sender: Box<dyn Endpoint>,
    pub receiver: Box<dyn Endpoint>,
    /// (forward, reverse) route per subflow.
    pub routes: Vec<(u16, u16)>,
    /// Per subflow (MPTCP): its name in the results, the path it takes (`a`, `b`; a path listed
    /// twice gets `a#2`).
    pub subflow_names: Vec<String>,
    pub traffic: Traffic,
    pub start: Time,
    pub stop: Time,
    pub mss: u64,
    pub started: bool,
    pub snd_timer_at: Time,
    /// The receiver's timer (see `timer.rs`: its stale events are never queued).
    pub rcv_timer: super::timer::LazyTimer,
    // metrics
    pub goodput: Bins,
    pub sent: Bins,
    pub cwnd: Vec<f64>,
    pub srtt_ms: Vec<f64>,
    pub rto_ms: Vec<f64>,
    pub ofo_bytes: Vec<f64>,
    pub rcvbuf_bytes: Vec<f64>,
    /// ACKs the receiver sent per bin, per second (P3's Fig. 3), and the count at the last bin.
    pub acks_per_s: Vec<f64>,
    acks_seen: u64,
    bin_s: f64,
    pub sub: Vec<SubflowSeries>,
    pub app_next: u64,
    pub delivery_errors: u64,
    pub fct: Option<Time>,
    /// Last in-order delivery to the application, and the gaps between consecutive ones of
    /// at least [`STALL_MIN`] as `[from, to)` (for the per-handover application-level gap).
    pub last_delivery: Option<Time>,
    pub stalls: Vec<(Time, Time)>,
    /// Completion: bytes of the file (at the head of the relay chain).
    pub fct_bytes: Option<u64>,
    /// A relay's output flow: the flow it reads from and its buffer.
    pub relay_from: Option<(u32, u64)>,
    /// A relay's input flow: the flow its receiver feeds.
    pub feeds: Option<u32>,
    /// A relay's output flow: bytes read from the input so far (this flow's application data).
    pub relay_input: u64,
    /// A relay's output flow: bytes read but not yet acknowledged here, per bin.
    pub relay_buffer: Vec<f64>,
    /// A relay's output flow: the sum and count of its per-bin occupancy samples (the summary's
    /// mean, also when the series is not kept).
    pub relay_buffer_sum: f64,
    pub relay_buffer_n: usize,
    pub relay_buffer_max: u64,
    /// Whether this flow's time series are kept (`[output] series`).
    pub keep_series: bool,
    /// CBR traffic: per chunk, delivery of its last byte − when the application wrote it (s),
    /// weighted by bytes (`app_delay_*` in the summary).
    pub app_delay: Option<crate::metrics::hist::WeightedHist>,
}

impl Flow {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        ends: (Box<dyn Endpoint>, Box<dyn Endpoint>),
        routes: Vec<(u16, u16)>,
        subflow_names: Vec<String>,
        traffic: Traffic,
        start: Time,
        stop: Time,
        mss: u64,
        bin: Time,
        n_bins: usize,
        keep: (bool, bool),
    ) -> Self {
        let (keep_series, keep_goodput) = keep;
        let n_sub = subflow_names.len();
        let cbr = matches!(traffic, Traffic::Cbr { .. });
        let bins = |kept: bool| if kept { Bins::new(bin, n_bins) } else { Bins::off(bin) };
        let cap = if keep_series { n_bins } else { 0 };
        let series = || SubflowSeries {
            delivered_seen: 0,
            goodput: bins(keep_series),
            sent: bins(keep_series),
            cwnd: Vec::new(),
            srtt_ms: Vec::new(),
        };
        Flow {
            name,
            sender: ends.0,
            receiver: ends.1,
            routes,
            subflow_names,
            traffic,
            start,
            stop,
            mss,
            started: false,
            snd_timer_at: NEVER,
            rcv_timer: Default::default(),
            goodput: bins(keep_series || keep_goodput),
            sent: bins(keep_series),
            cwnd: Vec::with_capacity(cap),
            srtt_ms: Vec::with_capacity(cap),
            rto_ms: Vec::with_capacity(cap),
            ofo_bytes: Vec::with_capacity(cap),
            rcvbuf_bytes: Vec::with_capacity(cap),
            acks_per_s: Vec::with_capacity(cap),
            acks_seen: 0,
            bin_s: bin as f64 / 1e9,
            sub: (0..n_sub).map(|_| series()).collect(),
            app_next: 0,
            delivery_errors: 0,
            fct: None,
            last_delivery: None,
            stalls: Vec::new(),
            fct_bytes: None, // set by the build from the plan (the chain's file)
            relay_from: None,
            feeds: None,
            relay_input: 0,
            relay_buffer: Vec::new(),
            relay_buffer_sum: 0.0,
            relay_buffer_n: 0,
            relay_buffer_max: 0,
            keep_series,
            app_delay: cbr.then(|| crate::metrics::hist::WeightedHist::new(1e-6, 1e4)),
        }
    }

    /// The relay buffer's occupancy now: read from the input, not yet acknowledged here.
    pub fn relay_occupancy(&self) -> u64 {
        self.relay_input.saturating_sub(self.sender.acked_bytes())
    }

    /// Bytes the application has written by `now` and when it writes more (NEVER if not).
    pub fn app_bytes(&self, now: Time) -> (u64, Time) {
        if !self.started {
            return (0, NEVER);
        }
        let until = now.min(self.stop);
        match &self.traffic {
            Traffic::Bulk {} => (
                if now < self.stop {
                    u64::MAX
                } else {
                    self.sender.app_position().0
                },
                NEVER,
            ),
            Traffic::File { bytes } => (*bytes, NEVER),
            Traffic::Relay { .. } => (self.relay_input, NEVER),
            Traffic::Cbr { rate_mbps } => {
                let elapsed = until.saturating_sub(self.start) as f64 / 1e9;
                let bytes = rate_mbps * 1e6 / 8.0 * elapsed;
                let chunks = (bytes / self.mss as f64).floor() as u64 + 1; // one chunk at start
                let next = if now >= self.stop {
                    NEVER
                } else {
                    let t = self.start as f64 + chunks as f64 * self.mss as f64 * 8.0 / (rate_mbps * 1e6) * 1e9;
                    (t.ceil() as Time).max(now + 1)
                };
                (chunks * self.mss, next)
            }
        }
    }

    /// Exactly-once, in-order check of what the application receives, and the completion time.
    pub fn note_delivery(&mut self, now: Time, start: u64, end: u64) {
        if start != self.app_next || end <= start {
            self.delivery_errors += 1;
        }
        if let (Some(h), Traffic::Cbr { rate_mbps }) = (self.app_delay.as_mut(), &self.traffic) {
            // Chunk c (bytes [c·mss, (c+1)·mss)) is written at start + c·mss·8/rate (`app_bytes`);
            // the chunks whose last byte arrives now are done.
            let per_chunk_s = self.mss as f64 * 8.0 / (rate_mbps * 1e6);
            let (first, last) = (start / self.mss, end / self.mss);
            for c in first..last {
                if (c + 1) * self.mss > start {
                    let written = self.start as f64 / 1e9 + c as f64 * per_chunk_s;
                    h.add((now as f64 / 1e9 - written).max(0.0), self.mss as f64);
                }
            }
        }
        self.app_next = end;
        if let Some(t) = self.last_delivery.filter(|&t| now >= t + STALL_MIN) {
            self.stalls.push((t, now));
        }
        self.last_delivery = Some(now);
        if let Some(bytes) = self.fct_bytes {
            if end >= bytes && self.fct.is_none() {
                self.fct = Some(now - self.start);
            }
        }
    }

    /// Attributes newly delivered bytes to the subflows they came over (per-bin goodput).
    pub fn attribute_subflow_goodput(&mut self, now: Time) {
        let per = self.receiver.delivered_per_subflow();
        for (k, s) in self.sub.iter_mut().enumerate() {
            let b = per[k];
            if b > s.delivered_seen {
                s.goodput.add(now, (b - s.delivered_seen) as f64);
                s.delivered_seen = b;
            }
        }
    }

    /// One time-series sample per bin (the relay buffer's mean for the summary, and the series
    /// if they are kept).
    pub fn sample(&mut self) {
        if self.relay_from.is_some() {
            let occ = self.relay_occupancy() as f64;
            self.relay_buffer_sum += occ;
            self.relay_buffer_n += 1;
            if self.keep_series {
                self.relay_buffer.push(occ);
            }
        }
        if !self.keep_series {
            return;
        }
        let mut s = Sample::default();
        self.sender.record(&mut s);
        self.receiver.record(&mut s);
        self.cwnd.push(s.cwnd_segments);
        self.srtt_ms.push(s.srtt_ms);
        self.rto_ms.push(s.rto_ms);
        self.ofo_bytes.push(s.ofo_bytes);
        self.rcvbuf_bytes.push(s.rcvbuf_bytes);
        self.acks_per_s
            .push((s.acks_sent - self.acks_seen.min(s.acks_sent)) as f64 / self.bin_s);
        self.acks_seen = s.acks_sent;
        for (k, &(cwnd, srtt)) in s.subflows.iter().enumerate() {
            if let Some(series) = self.sub.get_mut(k) {
                series.cwnd.push(cwnd);
                series.srtt_ms.push(srtt);
            }
        }
    }

    /// Keeps the first `n` bins of every series (a run stopped early).
    pub fn truncate_series(&mut self, n: usize) {
        for b in [&mut self.goodput, &mut self.sent]
            .into_iter()
            .chain(self.sub.iter_mut().flat_map(|s| [&mut s.goodput, &mut s.sent]))
        {
            b.values.truncate(n);
        }
        for v in [
            &mut self.cwnd,
            &mut self.srtt_ms,
            &mut self.rto_ms,
            &mut self.ofo_bytes,
            &mut self.rcvbuf_bytes,
            &mut self.acks_per_s,
            &mut self.relay_buffer,
        ] {
            v.truncate(n);
        }
        for s in &mut self.sub {
            s.cwnd.truncate(n);
            s.srtt_ms.truncate(n);
        }
    }

    /// What the flow has delivered and sent so far (the warm-up snapshot and the end of the
    /// run): the receiver's delivered bytes, the sender's sent bytes, per subflow both.
    pub fn counters(&self) -> Counters {
        let s = self.sender.counters();
        let r = self.receiver.counters();
        let subflows = s
            .subflows
            .iter()
            .enumerate()
            .map(|(k, &(_, sent))| (r.subflows.get(k).map_or(0, |x| x.0), sent))
            .collect();
        Counters {
            delivered: r.delivered,
            sent: s.sent,
            subflows,
        }
    }
}
