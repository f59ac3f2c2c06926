//! Bounded concurrent jobs: each job its own task, at most `concurrency` at once, no new one after
//! a stop; after Ctrl-C or SIGTERM the tasks in flight get a grace period, then are dropped.

use super::Shutdown;
use std::future::Future;
use std::time::Duration;
use tokio::task::JoinSet;

/// The runtime that waits on model servers (sampling, the judge, the verifier): one worker thread.
/// The work per request is small beside the network's wait, and a second worker only adds
/// cross-thread wake-ups: with two, `gpassk run` spent about a quarter more CPU per request on a
/// loopback server (the `bench-peers.sh` runner rows). Blocking work (tree searches, the sandbox)
/// goes to the blocking pool as before.
pub fn network_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
}

/// Runs `work` on each of `jobs`, at most `concurrency` at a time, until `stopped()` says so or
/// `shutdown` triggers; then waits for the tasks in flight ([`settle`]).
pub async fn run_bounded<J, F, Fut>(
    jobs: Vec<J>,
    concurrency: usize,
    shutdown: &Shutdown,
    grace: Option<Duration>,
    stopped: impl Fn() -> bool,
    work: F,
) where
    F: Fn(J) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for job in jobs {
        if stopped() || shutdown.is_triggered() {
            break;
        }
        let permit = tokio::select! {
            p = sem.clone().acquire_owned() => p.expect("semaphore is never closed"),
            _ = shutdown.triggered() => break,
        };
        let task = work(job);
        tasks.spawn(async move {
            let _permit = permit;
            task.await;
        });
        while tasks.try_join_next().is_some() {}
    }
    settle(&mut tasks, shutdown, grace).await;
}

/// Waits for every task; after a shutdown, at most `grace` (when given) before the rest are
/// dropped.
pub async fn settle(tasks: &mut JoinSet<()>, shutdown: &Shutdown, grace: Option<Duration>) {
    if let Some(grace) = grace {
        tokio::select! {
            _ = join_all(tasks) => {}
            _ = shutdown.triggered() => {}
        }
        if shutdown.is_triggered() {
            let _ = tokio::time::timeout(grace, join_all(tasks)).await;
            tasks.abort_all();
        }
    }
    join_all(tasks).await;
}

async fn join_all(tasks: &mut JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
}
