//! A lookup in flight that other requests of the worker wait for instead of asking again
//! (nginx keeps one node per name with a list of waiting contexts). The first request
//! asks; the others wait on its result. If the asking request goes away before the answer
//! (its client left), the waiters are woken empty-handed and one of them asks.

use std::cell::RefCell;
use std::future::poll_fn;
use std::net::IpAddr;
use std::rc::Rc;
use std::task::{Poll, Waker};

use super::Failure;

pub type Outcome = Result<Rc<[IpAddr]>, Failure>;

#[derive(Default)]
pub struct Pending {
    /// `Some(Some(_))`: answered; `Some(None)`: the asker went away.
    result: RefCell<Option<Option<Outcome>>>,
    waiters: RefCell<Vec<Waker>>,
}

impl Pending {
    /// The result, or `None` when the asker went away.
    pub async fn wait(&self) -> Option<Outcome> {
        poll_fn(|cx| match &*self.result.borrow() {
            Some(r) => Poll::Ready(r.clone()),
            None => {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    fn settle(&self, r: Option<Outcome>) {
        if self.result.borrow().is_some() {
            return;
        }
        *self.result.borrow_mut() = Some(r);
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }
}

/// Held by the asking request: settles the waiters with its result, or empty-handed when
/// dropped first.
pub struct Asker(pub Rc<Pending>);

impl Asker {
    pub fn done(&self, r: &Outcome) {
        self.0.settle(Some(r.clone()));
    }
}

impl Drop for Asker {
    fn drop(&mut self) {
        self.0.settle(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_get_the_result_or_none_when_the_asker_leaves() {
        let rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build();
        let mut rt = rt.expect("runtime");
        rt.block_on(async {
            let p = Rc::new(Pending::default());
            let asker = Asker(p.clone());
            let waiter = monoio::spawn({
                let p = p.clone();
                async move { p.wait().await }
            });
            monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            asker.done(&Err(Failure::Code(3)));
            drop(asker);
            assert_eq!(waiter.await, Some(Err(Failure::Code(3))));
            let p = Rc::new(Pending::default());
            drop(Asker(p.clone()));
            assert_eq!(p.wait().await, None);
        });
    }
}
