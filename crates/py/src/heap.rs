//! Heap accounting for `mobipath bench`: how much memory the simulator itself uses.
//!
//! Why: the benchmark process's peak RSS is mostly the Python interpreter and this module's
//! code pages, the same ~30 MiB for every scenario, so it said nothing about the
//! simulator. This allocator wraps the system allocator for the Rust code of the extension
//! module (Python's own allocations do not go through it) and keeps the bytes currently
//! allocated and their high-water mark; `bench` resets the mark before a run and reads it after.
//! Cost: two relaxed atomic operations per allocation and one per free; the simulator reuses
//! its packet boxes, so it allocates rarely on the hot path.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[inline]
fn grew(size: usize) {
    let now = CURRENT.fetch_add(size, Relaxed) + size;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

/// Bytes the Rust code of this module holds now, and the most it held since the last reset.
pub fn stats() -> (usize, usize) {
    (CURRENT.load(Relaxed), PEAK.load(Relaxed))
}

/// Starts a new high-water mark at the current usage.
pub fn reset_peak() {
    PEAK.store(CURRENT.load(Relaxed), Relaxed);
}
