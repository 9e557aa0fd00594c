//! Runs one statement request (QUERY, PREPARE, EXECUTE, BATCH) against the
//! processor. Asynchronous, but on one node finished on its first poll: the
//! connection polls it once on the event loop (see [`crate::statements`]),
//! or runs it on the blocking pool when it may wait on an fsync or on file
//! work.
//!
//! The connection's [`ClientState`] is shared by its concurrent requests:
//! each request runs on a copy and writes back a keyspace change (USE), so
//! requests never wait on each other's execution.

use std::time::Instant;

use parking_lot::Mutex;
use varve_protocol::{Request, Response, ResultBody, SchemaChange};
use varve_query as query;
use varve_query::{trace, ClientState, Outcome, Processor, QueryResult};

use crate::convert::{self, MetadataRequest};
use crate::errors;

/// The answer to a statement request.
#[derive(Debug)]
pub struct Executed {
    pub response: Response,
    pub warnings: Vec<String>,
    /// A schema change to push to registered connections.
    pub event: Option<SchemaChange>,
    /// The statement needs the disk and ran where it may not wait: it
    /// changed nothing, and `response` is not for the client; run it again
    /// on the read stage.
    pub would_block: bool,
    /// The trace session of a traced request, for the response's frame.
    pub tracing_id: Option<[u8; 16]>,
}

impl Executed {
    fn error(e: &varve_query::QueryError) -> Self {
        Executed {
            response: Response::Error(errors::query_error(e)),
            warnings: Vec::new(),
            event: None,
            would_block: e.would_block(),
            tracing_id: None,
        }
    }
}

/// Executes a statement request; other requests get a ServerError (the
/// connection handles them itself). `started`: when the request first ran,
/// if this is a second run (for its latency). `tracing`: the frame asked
/// for a trace (docs/design/tracing.md).
pub async fn execute(
    processor: &Processor,
    shared: &Mutex<ClientState>,
    request: &Request,
    tracing: bool,
    started: Option<Instant>,
) -> Executed {
    if !tracing {
        return execute_untraced(processor, shared, request, started).await;
    }
    let address = shared.lock().address;
    let session = trace::Session::begin(address, started.unwrap_or_else(Instant::now));
    let run = execute_untraced(processor, shared, request, started);
    let mut executed = trace::run(Some(&session), run).await;
    if executed.would_block {
        // Not answered: it runs again, traced again, on the read stage.
        return executed;
    }
    if let Err(e) = processor.store_trace(&session, &describe(processor, request)) {
        tracing::warn!("could not store trace session: {e}");
    }
    if !matches!(executed.response, Response::Error(_)) {
        executed.tracing_id = Some(session.id());
    }
    executed
}

/// How `system_traces.sessions` describes a statement request.
fn describe(processor: &Processor, request: &Request) -> trace::Request {
    match request {
        Request::Query { query, params } => {
            trace::request::query(query, &convert::query_options(params))
        }
        Request::Execute { id, params, .. } => {
            processor.traced_execute(id, &convert::query_options(params))
        }
        Request::Batch(b) => trace::request::batch(&convert::batch(b).2),
        Request::Prepare { query, .. } => trace::request::prepare(query),
        _ => trace::Request::default(),
    }
}

async fn execute_untraced(
    processor: &Processor,
    shared: &Mutex<ClientState>,
    request: &Request,
    started: Option<Instant>,
) -> Executed {
    let mut state = shared.lock().clone();
    let before = state.keyspace.clone();
    let options = |params| query::QueryOptions {
        started,
        ..convert::query_options(params)
    };
    let executed = match request {
        Request::Query { query, params } => {
            let meta = MetadataRequest {
                skip: params.skip_metadata,
                client_id: None,
            };
            let outcome = processor.query(&mut state, query, &options(params)).await;
            finish(outcome, &meta, &mut state)
        }
        Request::Execute {
            id,
            result_metadata_id,
            params,
        } => {
            let meta = MetadataRequest {
                skip: params.skip_metadata,
                client_id: result_metadata_id.clone(),
            };
            let outcome = processor.execute(&mut state, id, &options(params)).await;
            finish(outcome, &meta, &mut state)
        }
        Request::Batch(b) => {
            let (kind, items, opts) = convert::batch(b);
            let opts = query::QueryOptions { started, ..opts };
            let outcome = processor.batch(&mut state, kind, &items, &opts).await;
            finish(outcome, &MetadataRequest::default(), &mut state)
        }
        Request::Prepare { query, keyspace } => {
            match processor.prepare(&state, query, keyspace.as_deref()) {
                Ok(info) => Executed {
                    response: Response::Result(convert::prepared(info, state.lwt_metadata_mark)),
                    warnings: Vec::new(),
                    event: None,
                    would_block: false,
                    tracing_id: None,
                },
                Err(e) => Executed::error(&e),
            }
        }
        other => Executed {
            response: Response::Error(errors::server_error(format!(
                "opcode 0x{:02x} is not a statement",
                other.opcode()
            ))),
            warnings: Vec::new(),
            event: None,
            would_block: false,
            tracing_id: None,
        },
    };
    if state.keyspace != before {
        shared.lock().keyspace = state.keyspace;
    }
    executed
}

/// Turns an outcome into the answer. A USE result also sets the state's
/// keyspace, should the processor have left that to us.
fn finish(
    outcome: varve_query::Result<Outcome>,
    meta: &MetadataRequest,
    state: &mut ClientState,
) -> Executed {
    match outcome {
        Ok(Outcome { result, warnings }) => {
            if let QueryResult::SetKeyspace(ks) = &result {
                state.keyspace = Some(ks.clone());
            }
            let (body, event): (ResultBody, _) = convert::outcome_result(result, meta);
            Executed {
                response: Response::Result(body),
                warnings,
                event,
                would_block: false,
                tracing_id: None,
            }
        }
        Err(e) => Executed::error(&e),
    }
}
