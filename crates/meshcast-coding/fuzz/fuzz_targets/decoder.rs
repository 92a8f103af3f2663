//! Arbitrary bytes as a stream of datagrams into a decoder and a recoder; see
//! `meshcast_coding::fuzz::decode_datagrams` for the layout and the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    meshcast_coding::fuzz::decode_datagrams(data);
});
