//! Every metadata decoder on arbitrary bytes, for the `internode_frame`
//! fuzz target (through `net::fuzz`) and the no-panic property test:
//! whatever a decoder accepts must encode to bytes that decode again to
//! the same value. Any disagreement panics: that is the bug report.

use super::codec::{decode_command, decode_metadata, encode_command, encode_metadata};
use super::raft_glue::codec::fuzz_round_trips;
use super::rpc::{decode_request, decode_response, encode_request, encode_response};

/// Runs the metadata log's decoders on `payload`.
pub fn fuzz_decode(payload: &[u8]) {
    if let Ok(command) = decode_command(payload) {
        assert_eq!(decode_command(&encode_command(&command)), Ok(command));
    }
    if let Ok(metadata) = decode_metadata(payload) {
        assert_eq!(decode_metadata(&encode_metadata(&metadata)), Ok(metadata));
    }
    if let Ok(request) = decode_request(payload) {
        assert_eq!(decode_request(&encode_request(&request)), Ok(request));
    }
    if let Ok(response) = decode_response(payload) {
        assert_eq!(decode_response(&encode_response(&response)), Ok(response));
    }
    fuzz_round_trips(payload);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::metadata::rpc::MetadataRequest;
    use crate::metadata::state::tests::node;

    #[test]
    fn valid_payloads_pass() {
        fuzz_decode(&encode_request(&MetadataRequest::Join(node(1, &[5]))));
        fuzz_decode(&encode_metadata(&Default::default()));
        fuzz_decode(&[]);
    }

    proptest! {
        #[test]
        fn arbitrary_payloads_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            fuzz_decode(&bytes);
        }

        /// Mutations of a valid payload reach deeper than random bytes.
        #[test]
        fn mutated_payloads_never_panic(at in 0usize..200, byte in any::<u8>()) {
            let mut bytes = encode_request(&MetadataRequest::Join(node(2, &[1, 2, 3])));
            let at = at % bytes.len();
            bytes[at] = byte;
            fuzz_decode(&bytes);
        }
    }
}
