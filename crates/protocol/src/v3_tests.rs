//! Protocol v3: what differs from v4 (docs/format/native-protocol.md,
//! "Protocol v3"), round trips of v3 frames, and malformed v3 frames.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use varve_types::CqlType;

use crate::compress::Compression;
use crate::consistency::Consistency;
use crate::error::ProtocolError;
use crate::error_code::{ErrorBody, ErrorCode, ErrorExtra, Failures};
use crate::frame::{decode_envelope, flags, FrameHeader, MAX_FRAME_BODY_BYTES};
use crate::primitives::{BoundValue, Reader};
use crate::request::{decode_request, encode_request_frame, Request};
use crate::response::{decode_response, encode_frame, Response};
use crate::result::{ColumnSpec, Prepared, PreparedMetadata, ResultBody, ResultMetadata};
use crate::schema_change::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::{Event, QueryParams};

fn frame_of(wire: &[u8]) -> crate::Frame {
    let mut buf = BytesMut::from(wire);
    decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES)
        .expect("a v3 frame is accepted")
        .expect("whole")
}

fn response_round_trip(warnings: &[String], resp: &Response) -> crate::DecodedResponse {
    let wire = encode_frame(3, 7, warnings, resp, Compression::None);
    assert_eq!(wire[0], 0x83);
    decode_response(&frame_of(&wire), Compression::None).expect("decodes")
}

/// Unset values do not exist in v3: they read back as nulls.
fn without_unset(req: &Request) -> Request {
    let fix = |values: &mut Vec<BoundValue>| {
        for v in values.iter_mut() {
            if *v == BoundValue::Unset {
                *v = BoundValue::Null;
            }
        }
    };
    let mut req = req.clone();
    match &mut req {
        Request::Query { params, .. } | Request::Execute { params, .. } => fix(&mut params.values),
        Request::Batch(b) => b.statements.iter_mut().for_each(|s| fix(&mut s.values)),
        _ => {}
    }
    req
}

proptest! {
    #[test]
    fn v3_requests_round_trip(req in crate::request::tests::arb_request(false), lz4 in any::<bool>()) {
        let c = if lz4 { Compression::Lz4 } else { Compression::None };
        let wire = encode_request_frame(3, 5, &req, None, c);
        let decoded = decode_request(&frame_of(&wire), c).expect("decodes");
        prop_assert_eq!(decoded.request, without_unset(&req));
    }

    #[test]
    fn v3_results_round_trip(r in crate::response::tests::arb_result(false)) {
        let mut expected = r.clone();
        if let ResultBody::Prepared(p) = &mut expected {
            p.bind.pk_indices.clear();
        }
        if let ResultBody::SchemaChange(sc) = &mut expected {
            *sc = function_change_seen_by_v3();
        }
        let resp = Response::Result(r);
        prop_assert_eq!(response_round_trip(&[], &resp).response, Response::Result(expected));
    }

    #[test]
    fn truncated_v3_requests_are_errors(req in crate::request::tests::arb_request(false), cut in any::<prop::sample::Index>()) {
        let body = req.encode(3);
        if body.is_empty() { return Ok(()); }
        let body = &body[..cut.index(body.len())];
        let header = FrameHeader { version: 3, is_response: false, flags: 0, stream: 1, opcode: req.opcode(), body_len: body.len() as u32 };
        // Never a panic; a short body is never `Incomplete`.
        if let Err(e) = crate::request::Request::decode(&header, body) {
            prop_assert!(e != ProtocolError::Incomplete);
        }
    }
}

/// What a v3 client is told of a function's creation (see `schema_change`).
fn function_change_seen_by_v3() -> SchemaChange {
    SchemaChange {
        change: SchemaChangeType::Updated,
        target: SchemaChangeTarget::Keyspace("ks".into()),
    }
}

#[test]
fn a_v3_prepared_result_has_no_partition_key_indexes() {
    let prepared = Prepared {
        id: Bytes::from_static(b"\x01\x02"),
        result_metadata_id: Bytes::new(),
        bind: PreparedMetadata {
            columns: vec![ColumnSpec {
                keyspace: "k".into(),
                table: "t".into(),
                name: "c".into(),
                ty: CqlType::Int,
            }],
            pk_indices: vec![0],
            extra_flags: 0,
        },
        result: ResultMetadata::new(Vec::new()),
    };
    let mut out = Vec::new();
    ResultBody::Prepared(prepared).encode(3, &mut out);
    let expected: &[u8] = &[
        0, 0, 0, 4, // kind Prepared
        0, 2, 1, 2, // id
        0, 0, 0, 1, // flags: global table spec
        0, 0, 0, 1, // one bind marker, and no pk count after it
        0, 1, b'k', 0, 1, b't', // the table
        0, 1, b'c', 0, 0x09, // c int
        0, 0, 0, 0, 0, 0, 0, 0, // result metadata: no flags, no columns
    ];
    assert_eq!(out, expected);
}

#[test]
fn warnings_are_not_sent_to_v3_clients() {
    let warnings = vec!["careful".to_string()];
    let wire = encode_frame(3, 1, &warnings, &Response::Ready, Compression::None);
    assert_eq!(wire[1] & flags::WARNING, 0);
    assert_eq!(
        response_round_trip(&warnings, &Response::Ready).warnings,
        Vec::<String>::new()
    );
    let v4 = encode_frame(4, 1, &warnings, &Response::Ready, Compression::None);
    assert_eq!(v4[1] & flags::WARNING, flags::WARNING);
}

#[test]
fn function_changes_are_keyspace_updates_in_v3() {
    for target in ["FUNCTION", "AGGREGATE"] {
        let t = |keyspace: String, name: String, arg_types: Vec<String>| match target {
            "FUNCTION" => SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            },
            _ => SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            },
        };
        let sc = SchemaChange {
            change: SchemaChangeType::Dropped,
            target: t("ks".into(), "f".into(), vec!["int".into()]),
        };
        let event = Response::Event(Event::SchemaChange(sc.clone()));
        assert_eq!(
            response_round_trip(&[], &event).response,
            Response::Event(Event::SchemaChange(function_change_seen_by_v3()))
        );
        let mut out = Vec::new();
        sc.encode(4, &mut out);
        assert_eq!(SchemaChange::decode(&mut Reader::new(&out)), Ok(sc));
    }
    // Tables and types are as in v4.
    let table = SchemaChange {
        change: SchemaChangeType::Created,
        target: SchemaChangeTarget::Table {
            keyspace: "ks".into(),
            name: "t".into(),
        },
    };
    let resp = Response::Result(ResultBody::SchemaChange(table));
    assert_eq!(response_round_trip(&[], &resp).response, resp);
}

fn decoded_in_v3(body: &ErrorBody) -> ErrorBody {
    match response_round_trip(&[], &Response::Error(body.clone())).response {
        Response::Error(e) => e,
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn errors_v3_lacks_become_the_ones_it_has() {
    let read_failure = ErrorBody {
        code: ErrorCode::READ_FAILURE,
        message: "Operation failed".into(),
        extra: ErrorExtra::ReadFailure {
            consistency: Consistency::Quorum,
            received: 1,
            block_for: 2,
            failures: Failures {
                num_failures: 1,
                reasons: Vec::new(),
            },
            data_present: true,
        },
    };
    let got = decoded_in_v3(&read_failure);
    assert_eq!(got.code, ErrorCode::READ_TIMEOUT);
    assert_eq!(got.message, "Operation failed");
    assert_eq!(
        got.extra,
        ErrorExtra::ReadTimeout {
            consistency: Consistency::Quorum,
            received: 1,
            block_for: 2,
            data_present: true
        }
    );
    let write_failure = ErrorBody {
        code: ErrorCode::WRITE_FAILURE,
        message: "Operation failed".into(),
        extra: ErrorExtra::WriteFailure {
            consistency: Consistency::One,
            received: 0,
            block_for: 1,
            failures: Failures {
                num_failures: 1,
                reasons: Vec::new(),
            },
            write_type: "SIMPLE".into(),
        },
    };
    let got = decoded_in_v3(&write_failure);
    assert_eq!(got.code, ErrorCode::WRITE_TIMEOUT);
    assert!(
        matches!(got.extra, ErrorExtra::WriteTimeout { received: 0, block_for: 1, ref write_type, .. } if write_type == "SIMPLE")
    );
    let function_failure = ErrorBody {
        code: ErrorCode::FUNCTION_FAILURE,
        message: "execution of 'system.blobasint[blob]' failed".into(),
        extra: ErrorExtra::FunctionFailure {
            keyspace: "system".into(),
            function: "blobasint".into(),
            arg_types: vec!["blob".into()],
        },
    };
    let got = decoded_in_v3(&function_failure);
    assert_eq!(got.code, ErrorCode::INVALID);
    assert_eq!(
        got.message,
        "ERROR FUNCTION_FAILURE: execution of 'system.blobasint[blob]' failed"
    );
    assert_eq!(got.extra, ErrorExtra::None);
    // v4 keeps all three.
    for body in [read_failure, write_failure, function_failure] {
        let mut out = Vec::new();
        body.encode(4, &mut out);
        assert_eq!(
            ErrorBody::decode(4, &mut Reader::new(&out)).map(|e| e.code),
            Ok(body.code)
        );
    }
}

#[test]
fn a_v3_custom_payload_is_refused_with_cassandras_message() {
    let payload = vec![("k".to_string(), Some(Bytes::from_static(b"v")))];
    let req = Request::Query {
        query: "SELECT 1".into(),
        params: QueryParams::new(Consistency::One),
    };
    let wire = encode_request_frame(3, 9, &req, Some(&payload), Compression::None);
    let err = decode_request(&frame_of(&wire), Compression::None).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4"
    );
    let wire = encode_request_frame(4, 9, &req, Some(&payload), Compression::None);
    assert!(decode_request(&frame_of(&wire), Compression::None).is_ok());
}

#[test]
fn malformed_v3_frames_are_protocol_errors() {
    // A QUERY whose long string claims more bytes than the body holds.
    let mut wire = FrameHeader {
        version: 3,
        is_response: false,
        flags: 0,
        stream: 2,
        opcode: 0x07,
        body_len: 6,
    }
    .encode()
    .to_vec();
    wire.extend_from_slice(&[0, 0, 0, 50, b'S', b'E']);
    assert!(matches!(
        decode_request(&frame_of(&wire), Compression::None),
        Err(ProtocolError::Invalid(_))
    ));
    // A compressed v3 frame on a connection without compression.
    wire[1] = flags::COMPRESSION;
    assert!(decode_request(&frame_of(&wire), Compression::None).is_err());
}
