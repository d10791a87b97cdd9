//! The gateway-owned threads that carry provider I/O (HTTP requests and callback providers), so
//! the calling thread can stop waiting at its deadline or on cancellation (an HTTP request is
//! then aborted by shutting its socket down; a callback runs to its end).
//!
//! Threads are started on demand (one per concurrently running job, so never more than the
//! largest `maxConcurrentRequests` in use) and kept; [`IoPool::close`] stops and joins them after
//! their current job. A job never holds the pool's lock while it runs.

use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    idle: usize,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// A pool of I/O threads.
#[derive(Default)]
pub(crate) struct IoPool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for IoPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IoPool")
    }
}

impl IoPool {
    /// Runs `job` on a pool thread, starting one when none is idle.
    pub(crate) fn submit(&self, job: Job) -> Result<()> {
        let spawn = {
            let mut q = self.shared.queue.lock();
            if q.stop {
                return Err(Error::GatewayClosed);
            }
            q.jobs.push_back(job);
            q.idle < q.jobs.len()
        };
        if spawn {
            let shared = Arc::clone(&self.shared);
            let handle = std::thread::Builder::new()
                .name("jevgate-jev-io".into())
                .spawn(move || worker(&shared))
                .map_err(|e| Error::Internal {
                    reason: format!("cannot start an I/O thread: {}", e.kind()),
                })?;
            let mut threads = self.threads.lock();
            threads.retain(|t| !t.is_finished());
            threads.push(handle);
        } else {
            self.shared.ready.notify_one();
        }
        Ok(())
    }

    /// Stops accepting jobs, lets queued and running jobs finish, joins every thread.
    pub(crate) fn close(&self) {
        self.shared.queue.lock().stop = true;
        self.shared.ready.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock());
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

fn worker(shared: &Shared) {
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.stop {
                    return;
                }
                q.idle += 1;
                shared.ready.wait(&mut q);
                q.idle -= 1;
            }
        };
        job();
    }
}
