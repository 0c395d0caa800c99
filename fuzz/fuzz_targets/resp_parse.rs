//! cargo-fuzz entry point; the harness is [`ferrokv_fuzz::resp_parse`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrokv_fuzz::resp_parse(data));
