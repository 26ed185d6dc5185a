//! One work queue for the places that spread independent items over a few threads: the
//! downloads of an apply (`fetch::fetch_wheels`), the files `store verify` and a re-import
//! hash (`store::hash_all`) and the probes of a generation's checks
//! (`generation::profile_check`), and the members of an archive its extraction threads inflate
//! ([`Queue`]). Threads each take the next item not yet taken, so a long item never holds up
//! the short ones queued behind it on another thread: with items taken largest first, the work
//! ends in about max(largest item, total / threads), where buckets fixed up front can leave one
//! core idle while the other still has a queue of its own (docs/performance.md).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `work` on each of `items` on up to `threads` scoped threads (at least one, never
/// more than there are items); each thread first makes its own state with `state` (a
/// progress line, say) and then takes the next item not yet taken. Each result is handed to
/// `on_result`, on the calling thread, in the items' order, as soon as it and every earlier
/// one is there; the results come back in the items' order too.
///
/// A panic in `state` or `work` is raised again here once the other threads end (the
/// results not yet reported are then dropped).
pub fn map_in_order<T: Sync, S, R: Send>(
    items: &[T],
    threads: usize,
    state: &(dyn Fn() -> S + Sync),
    work: &(dyn Fn(&mut S, &T) -> R + Sync),
    on_result: &mut dyn FnMut(&R),
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let mut done: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            let (tx, next) = (tx.clone(), &next);
            s.spawn(move || {
                let mut own = state();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    if tx.send((i, work(&mut own, item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut reported = 0;
        for (i, r) in rx {
            done[i] = Some(r);
            while let Some(Some(r)) = done.get(reported) {
                on_result(r);
                reported += 1;
            }
        }
    });
    done.into_iter().flatten().collect()
}

/// [`map_in_order`] with no state per thread and nothing reported on the way: `work` on each
/// of `items` on up to `threads` threads, the results in the items' order.
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, work: &(dyn Fn(&T) -> R + Sync)) -> Vec<R> {
    map_in_order(items, threads, &|| (), &|_, item| work(item), &mut |_| ())
}

/// Items shared by threads that each take the next one until none is left, largest first
/// ([`Queue::largest_first`]). For workers that keep state of their own between items (an
/// open archive, an inflater, a buffer) and own what they take.
pub struct Queue<T>(Mutex<std::vec::IntoIter<T>>);

impl<T> Queue<T> {
    /// The items of `items`, taken largest `size` first (items of equal size keep their order).
    pub fn largest_first(mut items: Vec<T>, size: impl Fn(&T) -> u64) -> Queue<T> {
        items.sort_by_key(|item| std::cmp::Reverse(size(item)));
        Queue(Mutex::new(items.into_iter()))
    }

    /// The next item not yet taken, or `None` when all were.
    pub fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next()
    }

    /// How many items are not yet taken.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Whether every item was taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How many threads a CPU-bound pass over files uses: one per core this process may run
/// on, at least 1 and at most `cap`.
pub fn cores(cap: usize) -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, cap.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Condvar;
    use std::time::Duration;

    #[test]
    fn items_run_at_once_and_are_reported_in_order() {
        // Item 0 waits (up to 20 s) for item 1 to start: on one thread at a time it would
        // wait the whole 20 s and see nothing, and the test fails.
        let started = (Mutex::new(false), Condvar::new());
        let work = |_: &mut (), i: &usize| {
            if *i == 0 {
                let (lock, cv) = &started;
                let (seen, _) = cv.wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(20), |s| !*s).unwrap();
                (*i, *seen)
            } else {
                let (lock, cv) = &started;
                *lock.lock().unwrap() = true;
                cv.notify_all();
                (*i, true)
            }
        };
        let mut seen = Vec::new();
        let out = map_in_order(&[0usize, 1, 2], 2, &|| (), &work, &mut |r| seen.push(r.0));
        assert_eq!(seen, [0, 1, 2], "reported in the items' order");
        assert_eq!(out, [(0, true), (1, true), (2, true)], "item 0 saw item 1 start while it ran");
    }

    #[test]
    fn each_thread_makes_its_own_state_once() {
        let made = AtomicUsize::new(0);
        let out = map_in_order(
            &[1u32, 2, 3, 4, 5, 6],
            3,
            &|| {
                made.fetch_add(1, Ordering::Relaxed);
                0u32
            },
            &|count, x| {
                *count += 1;
                x * 10
            },
            &mut |_| (),
        );
        assert_eq!(out, [10, 20, 30, 40, 50, 60]);
        let made = made.into_inner();
        assert!((1..=3).contains(&made), "one state per thread, at most 3 threads: {made}");
    }

    #[test]
    fn no_items_no_threads_of_work_and_one_thread_keeps_order() {
        assert!(map(&[] as &[usize], 4, &|i| *i).is_empty());
        assert_eq!(map(&[3usize, 1, 2], 1, &|i| i * 2), [6, 2, 4]);
        assert_eq!(map(&[3usize, 1, 2], 0, &|i| i * 2), [6, 2, 4], "0 threads means 1");
    }

    /// The queue hands out the largest item first, each once, whichever thread asks: two
    /// threads draining it took every item exactly once between them.
    #[test]
    fn a_queue_hands_out_each_item_once_largest_first() {
        let q = Queue::largest_first(vec![("a", 5u64), ("b", 415), ("c", 60), ("d", 200), ("e", 60)], |i| i.1);
        assert_eq!(q.len(), 5);
        assert_eq!(q.take(), Some(("b", 415)));
        let taken = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while let Some(item) = q.take() {
                        taken.lock().unwrap().push(item.0);
                    }
                });
            }
        });
        let mut taken = taken.into_inner().unwrap();
        taken.sort_unstable();
        assert_eq!(taken, ["a", "c", "d", "e"]);
        assert!(q.is_empty());
        // Equal sizes keep their order.
        let q = Queue::largest_first(vec![("x", 1u64), ("y", 1), ("z", 2)], |i| i.1);
        assert_eq!([q.take(), q.take(), q.take(), q.take()], [Some(("z", 2)), Some(("x", 1)), Some(("y", 1)), None]);
    }

    #[test]
    fn a_panic_in_work_is_raised_again() {
        let r = std::panic::catch_unwind(|| map(&[1usize, 2, 3], 2, &|i| if *i == 2 { panic!("item 2") } else { *i }));
        assert!(r.is_err());
    }
}
