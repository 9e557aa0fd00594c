//! Helpers for in-process processor tests.

use std::sync::Arc;
use varve_query::*;
use varve_types::{codec, CqlType, Value};

pub struct Db {
    pub p: Arc<Processor>,
    pub state: ClientState,
}

impl Db {
    pub fn new() -> Db {
        Db::with_processor(Processor::new(NodeInfo::single_local()))
    }

    /// A keyspace `ks` (SimpleStrategy, factor 1) in use on `p`.
    pub fn with_processor(p: Arc<Processor>) -> Db {
        let mut db = Db {
            p,
            state: ClientState::default(),
        };
        db.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        db.ok("USE ks");
        db
    }

    pub fn run(&mut self, q: &str) -> Result<Outcome> {
        now(self.p.query(&mut self.state, q, &QueryOptions::default()))
    }

    pub fn ok(&mut self, q: &str) -> Outcome {
        match self.run(q) {
            Ok(o) => o,
            Err(e) => panic!("{q}: {e:?}"),
        }
    }

    #[allow(dead_code)]
    pub fn err(&mut self, q: &str) -> QueryError {
        match self.run(q) {
            Ok(o) => panic!("{q}: expected an error, got {o:?}"),
            Err(e) => e,
        }
    }

    /// Rows rendered as CQL literals, for easy assertions.
    #[allow(dead_code)]
    pub fn rows(&mut self, q: &str) -> Vec<Vec<String>> {
        let out = self.ok(q);
        render(&out)
    }
}

#[allow(dead_code)]
pub fn render(out: &Outcome) -> Vec<Vec<String>> {
    let QueryResult::Rows(r) = &out.result else {
        panic!("not rows: {out:?}")
    };
    r.rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(r.columns.iter())
                .map(|(v, c)| match v {
                    None => "null".to_string(),
                    Some(b) => {
                        varve_types::literal::to_cql_literal(&codec::deserialize(&c.ty, b).unwrap())
                    }
                })
                .collect()
        })
        .collect()
}

#[allow(dead_code)]
pub fn int(v: i32) -> BoundValue {
    BoundValue::Value(codec::serialize(&Value::Int(v)).into())
}

#[allow(dead_code)]
pub fn ty_int() -> CqlType {
    CqlType::Int
}

/// The answer of a statement run on one node, which is ready on the
/// statement's first poll (every answer of the local data path is): a
/// statement left pending there would cost the server a task per request.
pub fn now<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match varve_query::run::poll_once(f.as_mut()) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("a one-node statement was pending after its first poll"),
    }
}
