//! Copying bytes both ways between two connected sockets with bounded memory.
//!
//! Each direction owns one fixed-size buffer (`limits.buffer_bytes`) and does `read` then
//! `write_all`: while the writer is blocked (a slow reader downstream), nothing more is read, so
//! the sender's data backs up into the kernel's socket buffers and then into TCP flow control —
//! back-pressure instead of a queue in the proxy. A direction that reads end-of-stream shuts down
//! the other socket's write side (half-close, RFC 9293 §3.6 / RFC 8684 §3.3.3 DATA_FIN) and the
//! other direction carries on. The connection ends when both directions have ended, when either
//! fails (then both sockets are dropped, which resets what is left), or after `idle` with no
//! byte moved in either direction.
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// Byte counters of one relayed connection, read by the metrics endpoint.
#[derive(Debug, Default)]
pub struct Counters {
    /// Client → destination (the router's upload).
    pub up: AtomicU64,
    /// Destination → client.
    pub down: AtomicU64,
}

struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn touch(&self) {
        self.last_ms
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
    fn idle_for(&self) -> Duration {
        let now = self.start.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// Waits for `fut`, but gives up once the whole connection has been idle for `idle`.
async fn guarded<T>(
    act: &Activity,
    idle: Duration,
    fut: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    tokio::pin!(fut);
    loop {
        let left = idle.saturating_sub(act.idle_for());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "idle timeout"));
        }
        match tokio::time::timeout(left, &mut fut).await {
            Ok(r) => return r,
            Err(_) => continue, // re-check: the other direction may have moved bytes meanwhile
        }
    }
}

async fn one_way<R, W>(
    mut r: R,
    mut w: W,
    buf_len: usize,
    count: &AtomicU64,
    act: &Activity,
    idle: Duration,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; buf_len];
    loop {
        let n = guarded(act, idle, r.read(&mut buf)).await?;
        if n == 0 {
            // Half-close: pass the end of stream on, keep the other direction open.
            let _ = w.shutdown().await;
            return Ok(());
        }
        act.touch();
        guarded(act, idle, w.write_all(&buf[..n])).await?;
        count.fetch_add(n as u64, Ordering::Relaxed);
        act.touch();
    }
}

/// Relays between `client` (the side that asked) and `dest` until both directions end.
pub async fn relay<A, B>(client: A, dest: B, buf_len: usize, idle: Duration, counters: Arc<Counters>) -> io::Result<()>
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let act = Activity {
        start: Instant::now(),
        last_ms: AtomicU64::new(0),
    };
    let (cr, cw) = tokio::io::split(client);
    let (dr, dw) = tokio::io::split(dest);
    let up = one_way(cr, dw, buf_len, &counters.up, &act, idle);
    let down = one_way(dr, cw, buf_len, &counters.down, &act, idle);
    // try_join: the first error ends both directions.
    tokio::try_join!(up, down).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn copies_both_ways_and_half_closes() {
        let (mut c, c_proxy) = tokio::io::duplex(64);
        let (d_proxy, mut d) = tokio::io::duplex(64);
        let counters = Arc::new(Counters::default());
        let k = counters.clone();
        let t = tokio::spawn(async move { relay(c_proxy, d_proxy, 16, Duration::from_secs(5), k).await });
        let payload: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let p2 = payload.clone();
        let writer = tokio::spawn(async move {
            c.write_all(&p2).await.unwrap();
            c.shutdown().await.unwrap();
            // Half-closed: the other direction still arrives.
            let mut back = Vec::new();
            c.read_to_end(&mut back).await.unwrap();
            back
        });
        let mut got = Vec::new();
        d.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, payload);
        d.write_all(b"reply after EOF").await.unwrap();
        d.shutdown().await.unwrap();
        assert_eq!(writer.await.unwrap(), b"reply after EOF");
        t.await.unwrap().unwrap();
        assert_eq!(counters.up.load(Ordering::Relaxed), 1000);
        assert_eq!(counters.down.load(Ordering::Relaxed), 15);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connection_times_out() {
        let (_c, c_proxy) = tokio::io::duplex(64);
        let (d_proxy, _d) = tokio::io::duplex(64);
        let r = relay(
            c_proxy,
            d_proxy,
            16,
            Duration::from_secs(30),
            Arc::new(Counters::default()),
        )
        .await;
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn blocked_writer_does_not_read_more() {
        // The destination never reads: the proxy holds at most one buffer, the rest stays with the
        // sender (the duplex pipes stand in for socket buffers of 64 bytes).
        let (mut c, c_proxy) = tokio::io::duplex(64);
        let (d_proxy, _d) = tokio::io::duplex(64);
        let counters = Arc::new(Counters::default());
        let _t = tokio::spawn(relay(c_proxy, d_proxy, 16, Duration::from_secs(3600), counters.clone()));
        let mut sent = 0usize;
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(1), c.write(&[0u8; 64])).await {
            sent += n;
        }
        // 64 in the destination pipe + 16 in the proxy's buffer + 64 in the client pipe.
        assert!(sent <= 64 + 16 + 64, "sender got {sent} bytes in");
        assert_eq!(counters.up.load(Ordering::Relaxed), 64);
    }
}
