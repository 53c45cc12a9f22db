//! The plug-in's own heap inside opensm, apart from OpenSM's.
//!
//! OpenSM keeps its long-lived objects (nodes, ports, SA records) in glibc's heap. When the
//! plug-in's working memory came from there too, each run's freed memory left holes that OpenSM's
//! next objects filled, so that freed pages stayed resident for a few live bytes each and
//! opensm's RSS crept up from sweep to sweep, though its live heap did not grow. Inside opensm
//! the plug-in's Rust allocations therefore stay out of glibc's heap:
//! - blocks of 64 KiB or more are whole pages mapped for them; the smaller of these are kept for
//!   reuse by size while a run goes on (the routing allocates buffers of the same sizes over and
//!   over), within a budget, and every kept run is unmapped when the run ends ([`trim`]): arrays
//!   that grow with the fabric leave nothing behind;
//! - smaller blocks come from a private dlmalloc heap over `mmap`ed segments of its own, which
//!   the next run, of much the same shape, reuses, and whose free top [`trim`] hands back.
//!
//! Neither heap can reuse what the other frees, so the plug-in hands glibc's free pages back
//! before it allocates after OpenSM's upload (OpenSM has just freed the LFT blocks it queued):
//! else the two heaps' free memory adds up to a new peak (README, "The soak").
//!
//! Both sit behind mutexes: the routing allocates outside its parallel loops, so the locks are
//! rarely contended.
//!
//! Elsewhere (the CLI, tests and benches that link the rlib) every allocation goes to the system
//! allocator. The choice is made once, by an ELF constructor that runs while the library is
//! loaded, before any Rust code of it can allocate, and it never changes, so every block is freed
//! by the allocator that gave it; a block's size (the layout it is freed with) tells which of the
//! two heaps holds it. Memory handed to OpenSM (the hop rows, which OpenSM frees) is allocated
//! with `libc::malloc` explicitly and never comes from here.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

const PAGE: usize = 4096;
/// Runs up to this many pages (256 KiB) are kept for reuse within a run; larger ones are
/// unmapped at once (they are few, and their mapping costs little beside filling them).
const CACHED_PAGES: usize = 64;
/// At most this many pages (4 MiB) are kept in all: beyond that a freed run is unmapped, so that
/// the plug-in's peak stays what its live memory needs (a growing vector would otherwise leave
/// a run of every size it passed through).
const CACHE_BUDGET: usize = 1024;

/// Set by [`choose_heap`] before the library's first allocation, never cleared.
static PRIVATE: AtomicBool = AtomicBool::new(false);

/// dlmalloc holds raw pointers to its segments; SMALL's mutex serialises every use of them.
struct Small(dlmalloc::Dlmalloc);

// SAFETY: the heap is only reached through SMALL's mutex.
unsafe impl Send for Small {}

static SMALL: Mutex<Small> = Mutex::new(Small(dlmalloc::Dlmalloc::new()));

/// Freed page runs, still mapped, kept for reuse by their length in pages (index `pages - 1`).
struct PageCache {
    free: [Vec<usize>; CACHED_PAGES],
    /// Pages in `free`, at most CACHE_BUDGET.
    pages: usize,
}

static PAGES: Mutex<PageCache> = Mutex::new(PageCache {
    free: [const { Vec::new() }; CACHED_PAGES],
    pages: 0,
});

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    // Nothing panics while these locks are held, so they are never poisoned; an allocation must
    // not fail on it either way.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Blocks from this size on are whole pages of their own: rounding up to a page then wastes
/// under 7% (blocks just above a page would waste up to half, and the routing keeps many such
/// rows alive between runs).
const PAGED_MIN: usize = 16 * PAGE;

/// Whether a block of this layout is whole pages of its own.
fn is_paged(size: usize, align: usize) -> bool {
    size >= PAGED_MIN && align <= PAGE
}

fn pages(size: usize) -> usize {
    size.div_ceil(PAGE)
}

/// A fresh mapping of `n` pages (zeroed by the kernel), or null.
fn map(n: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping touches no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

fn unmap(p: *mut u8, n: usize) {
    // SAFETY: `p` is a mapping of `n` pages that this module made and nothing else uses.
    unsafe {
        libc::munmap(p.cast(), n * PAGE);
    }
}

/// `n` pages: a kept run of that length (not zeroed) or a fresh mapping (zeroed).
fn take_pages(n: usize) -> (*mut u8, bool) {
    if n <= CACHED_PAGES {
        let mut cache = lock(&PAGES);
        if let Some(p) = cache.free[n - 1].pop() {
            cache.pages -= n;
            return (p as *mut u8, false);
        }
    }
    (map(n), true)
}

fn give_pages(p: *mut u8, n: usize) {
    if n <= CACHED_PAGES {
        let mut cache = lock(&PAGES);
        let room = cache.pages + n <= CACHE_BUDGET;
        let list = &mut cache.free[n - 1];
        // A push that grows the list allocates while PAGES is held: only from the small heap,
        // so the list's buffer stays below a page (and the page path, which takes PAGES, is
        // never entered from here).
        let fits = list.len() < list.capacity()
            || list.capacity() * std::mem::size_of::<usize>() < PAGE / 2;
        if room && fits {
            list.push(p as usize);
            cache.pages += n;
            return;
        }
    }
    unmap(p, n);
}

/// The global allocator of this library: its own heaps inside opensm, else the system's.
struct PluginAllocator;

// SAFETY: small blocks go to dlmalloc (same size and alignment rules as GlobalAlloc), paged
// blocks are page-aligned runs of at least `size` bytes that only their owner uses until freed;
// PRIVATE, fixed before the first allocation, sends a block's release to the allocator that gave
// it, and a block's size (the layout it is freed with) tells which heap holds it.
unsafe impl GlobalAlloc for PluginAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !PRIVATE.load(Ordering::Relaxed) {
            // SAFETY: the caller's layout, as GlobalAlloc::alloc takes it.
            return unsafe { System.alloc(layout) };
        }
        if is_paged(layout.size(), layout.align()) {
            take_pages(pages(layout.size())).0
        } else {
            // SAFETY: dlmalloc's malloc takes any non-zero size and power-of-two alignment.
            unsafe { lock(&SMALL).0.malloc(layout.size(), layout.align()) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !PRIVATE.load(Ordering::Relaxed) {
            // SAFETY: as in alloc.
            return unsafe { System.alloc_zeroed(layout) };
        }
        if is_paged(layout.size(), layout.align()) {
            let (p, zeroed) = take_pages(pages(layout.size()));
            if !p.is_null() && !zeroed {
                // SAFETY: p is a run of at least layout.size() bytes owned by the caller now.
                unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            }
            p
        } else {
            // SAFETY: as malloc in alloc.
            unsafe { lock(&SMALL).0.calloc(layout.size(), layout.align()) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !PRIVATE.load(Ordering::Relaxed) {
            // SAFETY: the system allocator gave ptr with this layout (PRIVATE never changes).
            return unsafe { System.dealloc(ptr, layout) };
        }
        if is_paged(layout.size(), layout.align()) {
            give_pages(ptr, pages(layout.size()));
        } else {
            // SAFETY: a small layout: the small heap gave ptr with this size and alignment.
            unsafe { lock(&SMALL).0.free(ptr, layout.size(), layout.align()) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !PRIVATE.load(Ordering::Relaxed) {
            // SAFETY: the system allocator gave ptr with this layout (PRIVATE never changes).
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let align = layout.align();
        let (old_paged, new_paged) = (is_paged(layout.size(), align), is_paged(new_size, align));
        match (old_paged, new_paged) {
            // SAFETY: the small heap gave ptr with the old size and this alignment.
            (false, false) => unsafe {
                lock(&SMALL).0.realloc(ptr, layout.size(), align, new_size)
            },
            (true, true) => {
                let (old, new) = (pages(layout.size()), pages(new_size));
                if old == new {
                    return ptr;
                }
                // SAFETY: ptr is a mapping of `old` pages of ours; mremap moves or resizes it
                // whole, keeping its contents.
                let p = unsafe {
                    libc::mremap(ptr.cast(), old * PAGE, new * PAGE, libc::MREMAP_MAYMOVE)
                };
                if p == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    p.cast()
                }
            }
            _ => {
                // Across the two heaps: a new block, the contents, the old block freed.
                // SAFETY: new_size is non-zero and below isize::MAX (GlobalAlloc's contract).
                let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, align) };
                // SAFETY: a non-zero size (new_size is).
                let p = unsafe { self.alloc(new_layout) };
                if !p.is_null() {
                    // SAFETY: both blocks hold at least min(old, new) bytes and do not overlap.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                p
            }
        }
    }
}

#[global_allocator]
static ALLOCATOR: PluginAllocator = PluginAllocator;

/// Runs while the library is loaded: inside opensm (its `osm_log` is in the global scope, as
/// [`super::ffi`] finds it later) the private heaps are chosen. dlsym allocates, if at all, with
/// C's malloc, not through this library.
extern "C" fn choose_heap() {
    // SAFETY: dlsym with RTLD_DEFAULT only searches the loaded objects' symbol tables.
    let in_opensm = !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"osm_log".as_ptr()) }.is_null();
    PRIVATE.store(in_opensm, Ordering::Relaxed);
}

#[used]
#[link_section = ".init_array"]
static CHOOSE_HEAP: extern "C" fn() = choose_heap;

/// Where the plug-in's memory comes from, for the log.
pub(crate) fn which() -> &'static str {
    if PRIVATE.load(Ordering::Relaxed) {
        "its own heap"
    } else {
        "the system allocator"
    }
}

/// After a run: unmaps the kept page runs and hands the small heap's free top back.
pub(crate) fn trim() {
    if !PRIVATE.load(Ordering::Relaxed) {
        return;
    }
    // Taken out whole, so that nothing allocates or frees while PAGES is held (the lists'
    // buffers go back to the small heap when `kept` drops).
    let kept = {
        let mut cache = lock(&PAGES);
        cache.pages = 0;
        std::mem::replace(&mut cache.free, [const { Vec::new() }; CACHED_PAGES])
    };
    for (i, runs) in kept.iter().enumerate() {
        for &p in runs {
            unmap(p as *mut u8, i + 1);
        }
    }
    drop(kept);
    // SAFETY: trim releases only memory the heap holds free.
    unsafe {
        lock(&SMALL).0.trim(0);
    }
}
