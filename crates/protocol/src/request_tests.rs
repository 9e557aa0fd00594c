//! Round-trip and error tests of requests, for v4 and v5.

use super::*;
use crate::frame::{decode_envelope, MAX_FRAME_BODY_BYTES};
use bytes::BytesMut;
use proptest::prelude::*;

fn arb_consistency() -> impl Strategy<Value = Consistency> {
    proptest::sample::select(Consistency::ALL_LEVELS.to_vec())
}

fn arb_bytes() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..20).prop_map(Bytes::from)
}

fn arb_value() -> impl Strategy<Value = BoundValue> {
    prop_oneof![
        Just(BoundValue::Null),
        Just(BoundValue::Unset),
        arb_bytes().prop_map(BoundValue::Value)
    ]
}

fn arb_params(v5: bool) -> impl Strategy<Value = QueryParams> {
    (
        arb_consistency(),
        proptest::collection::vec(arb_value(), 0..4),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(1..10_000i32),
        proptest::option::of(arb_bytes()),
        proptest::option::of(arb_consistency()),
        proptest::option::of(any::<i64>()),
        proptest::option::of("[a-z]{1,8}"),
        proptest::option::of(any::<i32>()),
    )
        .prop_map(
            move |(c, values, named, skip, page, state, serial, ts, ks, now)| {
                let names = (named && !values.is_empty())
                    .then(|| (0..values.len()).map(|i| format!("n{i}")).collect());
                QueryParams {
                    consistency: c,
                    values,
                    names,
                    skip_metadata: skip,
                    page_size: page,
                    paging_state: state,
                    serial_consistency: serial,
                    default_timestamp: ts,
                    keyspace: if v5 { ks } else { None },
                    now_in_seconds: if v5 { now } else { None },
                }
            },
        )
}

pub(crate) fn arb_request(v5: bool) -> impl Strategy<Value = Request> {
    let statement = (
        prop_oneof![
            ".{0,20}".prop_map(QueryOrId::Query),
            arb_bytes().prop_map(QueryOrId::Id)
        ],
        proptest::collection::vec(arb_value(), 0..3),
    )
        .prop_map(|(query_or_id, values)| BatchStatement {
            query_or_id,
            values,
            names: None,
        });
    let batch = (
        0u8..3,
        proptest::collection::vec(statement, 0..4),
        arb_consistency(),
        proptest::option::of(arb_consistency()),
        proptest::option::of(any::<i64>()),
        proptest::option::of("[a-z]{1,8}"),
        proptest::option::of(any::<i32>()),
    )
        .prop_map(
            move |(kind, statements, consistency, serial, ts, ks, now)| {
                Request::Batch(BatchRequest {
                    kind,
                    statements,
                    consistency,
                    serial_consistency: serial,
                    default_timestamp: ts,
                    keyspace: if v5 { ks } else { None },
                    now_in_seconds: if v5 { now } else { None },
                })
            },
        );
    prop_oneof![
        proptest::collection::hash_map("[A-Z_]{1,12}", ".{0,10}", 0..4).prop_map(Request::Startup),
        Just(Request::Options),
        (".{0,40}", arb_params(v5)).prop_map(|(query, params)| Request::Query { query, params }),
        (".{0,40}", proptest::option::of("[a-z]{1,8}")).prop_map(move |(query, ks)| {
            Request::Prepare {
                query,
                keyspace: if v5 { ks } else { None },
            }
        }),
        (arb_bytes(), arb_bytes(), arb_params(v5)).prop_map(move |(id, rid, params)| {
            Request::Execute {
                id,
                result_metadata_id: v5.then_some(rid),
                params,
            }
        }),
        batch,
        proptest::collection::vec("[A-Z_]{1,14}", 0..3).prop_map(Request::Register),
        proptest::option::of(arb_bytes()).prop_map(Request::AuthResponse),
    ]
}

fn round_trip(version: u8, req: &Request, compression: Compression) -> DecodedRequest {
    let wire = encode_request_frame(version, 5, req, None, compression);
    let mut buf = BytesMut::from(wire.as_slice());
    let frame = decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES)
        .expect("valid")
        .expect("whole");
    assert!(buf.is_empty());
    decode_request(&frame, compression).expect("decodes")
}

proptest! {
    #[test]
    fn v4_requests_round_trip(req in arb_request(false), lz4 in any::<bool>()) {
        let c = if lz4 { Compression::Lz4 } else { Compression::None };
        prop_assert_eq!(round_trip(4, &req, c).request, req);
    }

    #[test]
    fn v5_requests_round_trip(req in arb_request(true)) {
        prop_assert_eq!(round_trip(5, &req, Compression::None).request, req);
    }

    #[test]
    fn truncated_requests_are_invalid_never_incomplete(req in arb_request(true), cut in any::<prop::sample::Index>()) {
        let body = req.encode(5);
        if body.is_empty() { return Ok(()); }
        let cut = cut.index(body.len());
        let header = FrameHeader { version: 5, is_response: false, flags: 0, stream: 0, opcode: req.opcode(), body_len: 0 };
        if let Err(e) = Request::decode(&header, &body[..cut]) {
            prop_assert!(e != ProtocolError::Incomplete);
        }
    }
}

#[test]
fn custom_payload_and_tracing_are_reported() {
    let req = Request::Query {
        query: "SELECT 1".into(),
        params: QueryParams::new(Consistency::One),
    };
    let payload = vec![("k".to_string(), Some(Bytes::from_static(b"v")))];
    let mut wire = encode_request_frame(4, 1, &req, Some(&payload), Compression::None);
    wire[1] |= flags::TRACING;
    let frame = decode_envelope(&mut BytesMut::from(wire.as_slice()), MAX_FRAME_BODY_BYTES)
        .expect("ok")
        .expect("frame");
    let d = decode_request(&frame, Compression::None).expect("decodes");
    assert_eq!(d.request, req);
    assert!(d.tracing);
    assert_eq!(d.custom_payload, Some(payload));
}

#[test]
fn startup_is_never_compressed_and_unknown_opcodes_fail() {
    let startup = Request::Startup(
        [("CQL_VERSION".to_string(), "3.0.0".to_string())]
            .into_iter()
            .collect(),
    );
    let wire = encode_request_frame(4, 0, &startup, None, Compression::Lz4);
    assert_eq!(wire[1] & flags::COMPRESSION, 0);
    let header = FrameHeader {
        version: 4,
        is_response: false,
        flags: 0,
        stream: 3,
        opcode: 0x04,
        body_len: 0,
    };
    assert_eq!(
        Request::decode(&header, &[]),
        Err(ProtocolError::UnknownOpcode {
            stream: 3,
            opcode: 0x04
        })
    );
    let mut resp = header;
    resp.is_response = true;
    resp.opcode = opcode::OPTIONS;
    assert!(Request::decode(&resp, &[]).is_err());
}

#[test]
fn compressed_frame_without_negotiation_is_invalid() {
    let req = Request::Register(vec!["STATUS_CHANGE".into()]);
    let wire = encode_request_frame(4, 0, &req, None, Compression::Lz4);
    let frame = decode_envelope(&mut BytesMut::from(wire.as_slice()), MAX_FRAME_BODY_BYTES)
        .expect("ok")
        .expect("frame");
    assert!(decode_request(&frame, Compression::None).is_err());
}

#[test]
fn batch_with_names_flag_is_refused_like_cassandra() {
    let b = BatchRequest {
        kind: batch_kind::UNLOGGED,
        statements: vec![BatchStatement {
            query_or_id: QueryOrId::Query("INSERT".into()),
            values: vec![BoundValue::Null],
            names: Some(vec!["a".into()]),
        }],
        consistency: Consistency::One,
        serial_consistency: None,
        default_timestamp: None,
        keyspace: None,
        now_in_seconds: None,
    };
    let req = Request::Batch(b);
    let header = FrameHeader {
        version: 4,
        is_response: false,
        flags: 0,
        stream: 0,
        opcode: opcode::BATCH,
        body_len: 0,
    };
    assert!(Request::decode(&header, &req.encode(4)).is_err());
}

#[test]
fn page_size_zero_is_rejected() {
    let mut p = QueryParams::new(Consistency::One);
    p.page_size = Some(0);
    let req = Request::Query {
        query: "q".into(),
        params: p,
    };
    let header = FrameHeader {
        version: 4,
        is_response: false,
        flags: 0,
        stream: 0,
        opcode: opcode::QUERY,
        body_len: 0,
    };
    assert!(Request::decode(&header, &req.encode(4)).is_err());
}
