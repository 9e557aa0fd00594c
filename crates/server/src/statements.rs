//! Where a connection's statement requests (QUERY, PREPARE, EXECUTE, BATCH)
//! run, and how their answers reach the writer.
//!
//! The reader queues the statements of a burst (the whole frames one socket
//! read brought) and hands them to [`run_burst`]:
//! - a statement that may block (an fsync in batch or group commitlog
//!   modes, schema changes; see [`may_block`]) becomes its own task on the
//!   blocking pool and answers on its own;
//! - the others run without a hand-off: a short burst right in the reader,
//!   whose answers join the reader's batch; a longer one split into up to
//!   one part per runtime worker, each part a task that runs its statements
//!   one after another and sends its answers to the writer as one message.
//!
//! So a burst costs a few task spawns and channel sends, not one per
//! request, and one connection still uses every core when its requests are
//! heavy. Answers may leave out of order, as the protocol allows.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use varve_protocol::{Request, Response};
use varve_query::{ClientState, DeferredWrites, NonBlocking, QueryError};

use crate::dispatch::{self, Executed};
use crate::errors;
use crate::framing::Outgoing;
use crate::Shared;

/// Statements per part when a burst is split across workers: a burst
/// shorter than twice this runs in the reader. Measured with latte at
/// concurrency 64 on 2 cores (docs/benchmarks.md, session 4): parts of 4
/// cost a quarter more CPU per read than no split, for 1.4x the
/// throughput; parts of 32 keep the throughput at the CPU cost of no split.
pub const PART_MIN_STATEMENTS: usize = 32;

/// A statement waiting for its burst to run; holds its in-flight permit.
pub struct Queued {
    pub stream: i16,
    pub request: Request,
    /// The frame asked for tracing (flag 0x02).
    pub tracing: bool,
    pub permit: OwnedSemaphorePermit,
}

/// What a statement needs from its connection.
#[derive(Clone)]
pub struct Context {
    pub shared: Arc<Shared>,
    pub client: Arc<Mutex<ClientState>>,
    pub out: mpsc::Sender<Vec<Outgoing>>,
    pub version: u8,
}

/// How many parts a burst of `n` statements that cannot block is split
/// into, on a runtime of `workers` threads; 1 runs it in the reader.
pub fn parts_for(n: usize, workers: usize) -> usize {
    (n / PART_MIN_STATEMENTS).clamp(1, workers.max(1))
}

/// Runs a burst: blocking statements as their own tasks, the others as
/// [`parts_for`] says. Answers of statements run here go to `pending`.
pub fn run_burst(ctx: &Context, burst: Vec<Queued>, workers: usize, pending: &mut Vec<Outgoing>) {
    let (blocking, quick): (Vec<Queued>, Vec<Queued>) = burst.into_iter().partition(|q| {
        // A traced request also writes its trace, which waits for
        // its fsync in batch and group modes.
        let sync = ctx.shared.writes_wait_for_sync;
        may_block(&q.request, sync) || (q.tracing && sync)
    });
    for q in blocking {
        spawn_blocking_statement(ctx.clone(), q);
    }
    let parts = parts_for(quick.len(), workers);
    if parts <= 1 {
        let (answers, _permits) = run_part(ctx, quick);
        pending.extend(answers);
        return;
    }
    // Every part is a task, the last one too: a task spawned from a worker
    // waits in that worker's slot until the reader yields, where no other
    // worker can take it, so only the earlier ones run in parallel with the
    // reader; spawning them all keeps the reader free to read on.
    let per_part = quick.len().div_ceil(parts);
    let mut quick = quick.into_iter().peekable();
    while quick.peek().is_some() {
        let part: Vec<Queued> = quick.by_ref().take(per_part).collect();
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let (answers, permits) = run_part(&ctx, part);
            let _ = ctx.out.send(answers).await;
            // Only now: shutdown waits for every permit, then stops writing.
            drop(permits);
        });
    }
}

/// Runs statements one after another on this thread, their commitlog
/// entries written together at the end (periodic mode; see
/// [`DeferredWrites`]), and returns their answers with their permits. If
/// those entries cannot be written, no statement of the part is answered
/// with success: each gets the error instead.
fn run_part(ctx: &Context, part: Vec<Queued>) -> (Vec<Outgoing>, Vec<OwnedSemaphorePermit>) {
    let scope = DeferredWrites::begin();
    let (answers, permits): (Vec<Outgoing>, Vec<OwnedSemaphorePermit>) =
        part.into_iter().filter_map(|q| run_here(ctx, q)).unzip();
    let Err(e) = scope.finish() else {
        return (answers, permits);
    };
    tracing::warn!("a burst's commitlog writes failed: {e}");
    let body = errors::query_error(&QueryError::on_write(e));
    let failed = answers
        .into_iter()
        .map(|a| match a {
            Outgoing::Response {
                version, stream, ..
            } => {
                ctx.shared.metrics.error_response();
                Outgoing::Response {
                    version,
                    stream,
                    tracing_id: None,
                    warnings: Vec::new(),
                    response: Box::new(Response::Error(body.clone())),
                }
            }
            other => other,
        })
        .collect();
    (failed, permits)
}

/// A statement's future, owning what it runs on, that gives its request
/// back with the answer (to run it again on the read stage).
type Running = Pin<Box<dyn Future<Output = (Executed, Request)> + Send>>;

/// The statement `request` as a future that owns its inputs.
fn running(ctx: &Context, request: Request, tracing: bool, started: Option<Instant>) -> Running {
    let processor = Arc::clone(&ctx.shared.processor);
    let client = Arc::clone(&ctx.client);
    Box::pin(async move {
        let executed = dispatch::execute(&processor, &client, &request, tracing, started).await;
        (executed, request)
    })
}

/// Runs one statement on this thread, where it may not wait on the disk:
/// its future is polled once, and on one node it is done then. The answer
/// is framed for the writer and comes with the statement's permit, to drop
/// once it is handed over. A statement that needs the disk goes to the read
/// stage (`None`), and one still waiting for something after the first
/// poll (other nodes) becomes a task; both answer on their own.
fn run_here(ctx: &Context, q: Queued) -> Option<(Outgoing, OwnedSemaphorePermit)> {
    let started = Instant::now();
    let stage = &ctx.shared.read_stage;
    if prepared_id(&q.request).is_some_and(|id| stage.route().skip_event_loop(id)) {
        stage.count_direct();
        to_read_stage(ctx.clone(), q, started);
        return None;
    }
    let Queued {
        stream,
        request,
        tracing,
        permit,
    } = q;
    let mut statement = running(ctx, request, tracing, None);
    let polled = run_inline(|| {
        let _event_loop = NonBlocking::enter();
        varve_query::run::poll_once(statement.as_mut())
    });
    let (executed, request) = match polled {
        Some(Poll::Ready(done)) => done,
        Some(Poll::Pending) => {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let (executed, request) = OnEventLoop(statement).await;
                let q = Queued {
                    stream,
                    request,
                    tracing,
                    permit,
                };
                if let Some((item, permit)) = finish_here(&ctx, executed, q, started) {
                    let _ = ctx.out.send(vec![item]).await;
                    drop(permit);
                }
            });
            return None;
        }
        None => {
            let executed = panicked(stream, &"panic");
            return Some((answer(&ctx.shared, ctx.version, stream, executed), permit));
        }
    };
    let q = Queued {
        stream,
        request,
        tracing,
        permit,
    };
    finish_here(ctx, executed, q, started)
}

/// The answer of a statement run where it may not wait on the disk, or
/// its hand-off to the read stage when it needs the disk.
fn finish_here(
    ctx: &Context,
    executed: Executed,
    q: Queued,
    started: Instant,
) -> Option<(Outgoing, OwnedSemaphorePermit)> {
    if let Some(id) = prepared_id(&q.request) {
        let route = ctx.shared.read_stage.route();
        route.ran_on_event_loop(id, executed.would_block);
    }
    if executed.would_block {
        to_read_stage(ctx.clone(), q, started);
        return None;
    }
    Some((
        answer(&ctx.shared, ctx.version, q.stream, executed),
        q.permit,
    ))
}

/// The id of a prepared statement's EXECUTE: what [`ReadRoute`] keys on.
///
/// [`ReadRoute`]: crate::read_route::ReadRoute
fn prepared_id(request: &Request) -> Option<&[u8]> {
    match request {
        Request::Execute { id, .. } => Some(id),
        _ => None,
    }
}

/// A statement left pending by its first poll, polled on as a task, each
/// poll where it may not wait on the disk, as on the event loop.
struct OnEventLoop(Running);

impl Future for OnEventLoop {
    type Output = (Executed, Request);

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let _event_loop = NonBlocking::enter();
        self.0.as_mut().poll(cx)
    }
}

/// Runs a statement that needs the disk again on the read stage (see
/// [`crate::read_stage`]); `started` is when it first ran. Dropped unrun if
/// its connection closes before a slot is free.
fn to_read_stage(ctx: Context, q: Queued, started: Instant) {
    let Queued {
        stream,
        request,
        tracing,
        permit,
    } = q;
    let statement = running(&ctx, request, tracing, Some(started));
    let out = ctx.out.clone();
    let runtime = tokio::runtime::Handle::current();
    ctx.shared.read_stage.clone().spawn(
        move || runtime.block_on(statement).0,
        move || out.is_closed(),
        move |result| async move {
            let executed = result.unwrap_or_else(|e| panicked(stream, &e));
            let item = answer(&ctx.shared, ctx.version, stream, executed);
            let _ = ctx.out.send(vec![item]).await;
            drop(permit);
        },
    );
}

fn spawn_blocking_statement(ctx: Context, q: Queued) {
    tokio::spawn(async move {
        let Queued {
            stream,
            request,
            tracing,
            permit,
        } = q;
        let statement = running(&ctx, request, tracing, None);
        let runtime = tokio::runtime::Handle::current();
        let executed = run_caught(stream, move || runtime.block_on(statement).0).await;
        let item = answer(&ctx.shared, ctx.version, stream, executed);
        let _ = ctx.out.send(vec![item]).await;
        drop(permit);
    });
}

/// Publishes an executed statement's schema event, counts its error, and
/// frames its answer for the writer.
fn answer(shared: &Shared, version: u8, stream: i16, executed: Executed) -> Outgoing {
    // In a cluster, SCHEMA_CHANGE comes from the metadata log as each
    // node applies the change (this one included), not from the outcome.
    let from_outcome = !shared.processor.schema_events_elsewhere();
    if let (Some(change), true) = (executed.event, from_outcome) {
        // No subscriber is fine: nobody registered.
        let _ = shared
            .events
            .send(varve_protocol::Event::SchemaChange(change));
    }
    if let Response::Error(e) = &executed.response {
        shared.metrics.error_response();
        if e.code == varve_protocol::ErrorCode::SERVER_ERROR {
            shared.metrics.exception();
        }
    }
    Outgoing::Response {
        version,
        stream,
        tracing_id: executed.tracing_id,
        warnings: executed.warnings,
        response: Box::new(executed.response),
    }
}

/// The answer given when executing a request panicked (a bug): logged, and
/// the node keeps serving.
fn panicked(stream: i16, what: &dyn std::fmt::Debug) -> Executed {
    tracing::error!("request on stream {stream} failed: {what:?}");
    Executed {
        response: Response::Error(errors::server_error(
            "Internal error while processing the request (see the server log)",
        )),
        warnings: Vec::new(),
        event: None,
        would_block: false,
        tracing_id: None,
    }
}

/// Runs `work` on the blocking pool, for requests that may wait on an
/// fsync or on long file work; a panic becomes a ServerError answer.
async fn run_caught(stream: i16, work: impl FnOnce() -> Executed + Send + 'static) -> Executed {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| panicked(stream, &e))
}

/// Runs `work` right here on the event loop, for requests that only touch
/// memory and the page cache: no thread hand-off per request. A panic
/// becomes `None` (answer [`panicked`]).
fn run_inline<T>(work: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).ok()
}

/// Statements that change the schema or drop data files, which may wait on
/// flushes, compactions and fsyncs: first word of the query text.
fn is_schema_or_file_statement(query: &str) -> bool {
    let word: String = query
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .take(9)
        .collect();
    ["create", "alter", "drop", "truncate"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k))
}

/// Whether a statement request must run where blocking is allowed.
fn may_block(request: &Request, writes_wait_for_sync: bool) -> bool {
    match request {
        Request::Prepare { .. } => false,
        Request::Query { query, .. } => writes_wait_for_sync || is_schema_or_file_statement(query),
        _ => writes_wait_for_sync,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_request_becomes_server_error() {
        let executed = run_caught(7, || panic!("boom")).await;
        match executed.response {
            Response::Error(e) => assert_eq!(e.code, varve_protocol::ErrorCode::SERVER_ERROR),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn a_panicking_inline_request_becomes_server_error() {
        assert!(run_inline(|| -> u8 { panic!("boom") }).is_none());
        match panicked(3, &"boom").response {
            Response::Error(e) => assert_eq!(e.code, varve_protocol::ErrorCode::SERVER_ERROR),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn bursts_split_only_past_twice_the_part_minimum() {
        let n = PART_MIN_STATEMENTS;
        assert_eq!(parts_for(0, 2), 1);
        assert_eq!(parts_for(2 * n - 1, 2), 1);
        assert_eq!(parts_for(2 * n, 2), 2);
        assert_eq!(parts_for(100 * n, 2), 2);
        assert_eq!(parts_for(100 * n, 1), 1);
        assert_eq!(parts_for(100 * n, 0), 1);
        assert_eq!(parts_for(3 * n, 8), 3);
    }

    #[test]
    fn schema_statements_and_sync_waits_go_to_the_blocking_pool() {
        let query = |q: &str| Request::Query {
            query: q.to_string(),
            params: varve_protocol::QueryParams::new(varve_protocol::Consistency::One),
        };
        assert!(may_block(
            &query("  CREATE TABLE t (k int primary key)"),
            false
        ));
        assert!(may_block(&query("truncate t"), false));
        assert!(may_block(&query("DROP KEYSPACE ks"), false));
        assert!(!may_block(&query("SELECT * FROM t"), false));
        assert!(!may_block(&query("INSERT INTO t (k) VALUES (1)"), false));
        assert!(may_block(&query("INSERT INTO t (k) VALUES (1)"), true));
        assert!(!may_block(
            &Request::Prepare {
                query: "INSERT INTO t (k) VALUES (1)".into(),
                keyspace: None
            },
            true
        ));
    }
}
