//! Spare memory blocks for a worker's request futures (and its idle connections' posted
//! reads). A request's future (about 10 KiB) is built in a block when the request's first
//! bytes are in and gives the block back when it is answered, so the next request,
//! whichever connection it comes on, works in memory the last one just left: warm in cache,
//! and without a trip through the allocator (mimalloc serves a block this large from its
//! generic path, ~650 instructions with the free, and retires and refreshes the page as the
//! blocks come and go).
//!
//! A block is the allocation `Box<MaybeUninit<F>>` makes; only blocks of the layout the pool
//! first saw are kept, any other is freed as the box would free it.
#![allow(unsafe_code)] // raw blocks that outlive the boxes they were allocated as

use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// A worker's spare blocks (all of one layout).
pub struct Blocks {
    layout: Cell<Option<Layout>>,
    free: RefCell<Vec<NonNull<u8>>>,
    max: usize,
}

impl Blocks {
    /// A pool that keeps at most `max` spare blocks.
    pub fn new(max: usize) -> Self {
        Blocks {
            layout: Cell::new(None),
            free: RefCell::new(Vec::new()),
            max,
        }
    }

    /// The future `make` returns, built in a spare block (or a new one) and pinned there
    /// until it is dropped, when the block comes back.
    pub fn pinned<F: Future>(&self, make: impl FnOnce() -> F) -> InBlock<'_, F> {
        let mut slot = self.take::<F>();
        build_at(&mut slot, make);
        // SAFETY: `build_at` wrote the future into the block.
        let fut = unsafe { slot.assume_init() };
        InBlock {
            fut: NonNull::from(Box::leak(fut)),
            blocks: self,
        }
    }

    fn take<F>(&self) -> Box<MaybeUninit<F>> {
        let layout = Layout::new::<MaybeUninit<F>>();
        if self.layout.get() == Some(layout) {
            if let Some(p) = self.free.borrow_mut().pop() {
                // SAFETY: every block in `free` was allocated by a `Box<MaybeUninit<G>>` of
                // this same layout (checked in `give`) and nothing else refers to it: a box
                // of `MaybeUninit<F>` may own it and free it.
                return unsafe { Box::from_raw(p.as_ptr().cast::<MaybeUninit<F>>()) };
            }
        }
        Box::new_uninit()
    }

    /// Keeps a block of `layout` whose future was dropped, or frees it.
    fn give(&self, p: NonNull<u8>, layout: Layout) {
        if layout.size() == 0 {
            return; // a box of a zero-sized value owns no allocation
        }
        if self.layout.get().is_none() {
            self.layout.set(Some(layout));
        }
        let mut free = self.free.borrow_mut();
        if self.layout.get() == Some(layout) && free.len() < self.max {
            free.push(p);
            return;
        }
        drop(free);
        // SAFETY: `p` was allocated by the global allocator with `layout` (a box of
        // `MaybeUninit<F>`, `Layout::new` of it) and its value was dropped in place.
        unsafe { std::alloc::dealloc(p.as_ptr(), layout) }
    }

    /// Frees the spare blocks beyond `keep` (a quiet worker gives memory back).
    pub fn trim(&self, keep: usize) {
        let Some(layout) = self.layout.get() else {
            return;
        };
        let mut free = self.free.borrow_mut();
        while free.len() > keep {
            if let Some(p) = free.pop() {
                // SAFETY: a spare block of `layout`, unused, allocated as `give` says.
                unsafe { std::alloc::dealloc(p.as_ptr(), layout) }
            }
        }
        free.shrink_to_fit();
    }

    /// Spare blocks held.
    #[cfg(test)]
    pub fn spares(&self) -> usize {
        self.free.borrow().len()
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        self.trim(0);
    }
}

/// Writes `make()` into `slot` by a call of its own, so that the future is built straight
/// into the block (only its arguments written), not on the stack and copied (10 KiB).
#[inline(never)]
fn build_at<F>(slot: &mut MaybeUninit<F>, make: impl FnOnce() -> F) {
    slot.write(make());
}

/// A future pinned in a block of `Blocks`; dropping it drops the future and gives the block
/// back.
pub struct InBlock<'a, F> {
    fut: NonNull<F>,
    blocks: &'a Blocks,
}

impl<F: Future> Future for InBlock<'_, F> {
    type Output = F::Output;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut p = self.fut;
        // SAFETY: the future was written into its block by `pinned`, is only reached
        // through this `InBlock`, and stays where it is until `drop` drops it in place.
        let fut = unsafe { Pin::new_unchecked(p.as_mut()) };
        fut.poll(cx)
    }
}

impl<F> Drop for InBlock<'_, F> {
    fn drop(&mut self) {
        // SAFETY: the future is alive in its block (written by `pinned`, not dropped yet);
        // dropping it in place keeps the pinning promise.
        unsafe { std::ptr::drop_in_place(self.fut.as_ptr()) };
        let layout = Layout::new::<MaybeUninit<F>>();
        self.blocks.give(self.fut.cast::<u8>(), layout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boxed::tests::block_on;

    async fn sum(a: Vec<u32>, bump: std::rc::Rc<Cell<u32>>) -> u32 {
        let big = [1u8; 4096];
        std::future::ready(()).await;
        bump.set(bump.get() + 1);
        a.iter().sum::<u32>() + u32::from(big[4095])
    }

    #[test]
    fn a_finished_futures_block_serves_the_next_one() {
        let blocks = Blocks::new(4);
        let n = std::rc::Rc::new(Cell::new(0));
        let first = blocks.pinned(|| sum(vec![1, 2], n.clone()));
        let at = first.fut.cast::<u8>();
        assert_eq!(block_on(first), 4);
        assert_eq!(blocks.spares(), 1);
        let second = blocks.pinned(|| sum(vec![3], n.clone()));
        assert_eq!(second.fut.cast::<u8>(), at, "the same block, reused");
        assert_eq!(blocks.spares(), 0);
        assert_eq!(block_on(second), 4);
        assert_eq!(n.get(), 2);
    }

    #[test]
    fn a_future_dropped_unfinished_is_dropped_and_its_block_kept() {
        let blocks = Blocks::new(4);
        let held = std::rc::Rc::new(Cell::new(0));
        let f = blocks.pinned(|| sum(vec![1], held.clone()));
        assert_eq!(std::rc::Rc::strong_count(&held), 2);
        drop(f);
        assert_eq!(std::rc::Rc::strong_count(&held), 1, "its captures dropped");
        assert_eq!(blocks.spares(), 1);
    }

    #[test]
    fn spares_are_capped_and_trimmed_and_other_layouts_freed() {
        let blocks = Blocks::new(2);
        let n = std::rc::Rc::new(Cell::new(0));
        let fs: Vec<_> = (0..3)
            .map(|_| blocks.pinned(|| sum(vec![1], n.clone())))
            .collect();
        drop(fs);
        assert_eq!(blocks.spares(), 2);
        // A future of another size: run and freed, not kept.
        assert_eq!(block_on(blocks.pinned(|| async { 7u8 })), 7);
        assert_eq!(blocks.spares(), 2);
        blocks.trim(1);
        assert_eq!(blocks.spares(), 1);
    }
}
